-- Counts for the list's insight-tag filter whose cost does not grow with how many distinct
-- types, sources and tenants there are. Append-only, like every migration.
--
-- `investigation_tag_counts` (0008) keeps one row per tag name and combination of every
-- equality-filtered column, so a list filtered by a tag summed a row for every type,
-- source and tenant ever seen with it. This table keeps the same counts per tag and facet,
-- as `investigation_facet_counts` (0022) does without tags: 'all' (state, stop reason,
-- priority only), 'type', 'source' and 'tenant'. A list filtered by tags whose equality
-- filters name at most one of type, source and tenant sums the rows of that facet.
CREATE TABLE investigation_tag_facet_counts (
    -- The tag name, the facet and its combination as a JSON array: tells NULL from text.
    group_key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    facet TEXT NOT NULL,
    status TEXT NOT NULL,
    canceled TEXT,
    priority TEXT,
    alert_type TEXT,
    direct_source_label TEXT,
    tenant_union_id INTEGER,
    tenant_id TEXT,
    tenant_label TEXT,
    tenant_integration_key TEXT,
    n INTEGER NOT NULL
) WITHOUT ROWID;
-- A list filtered by tags reads only those tags' rows of one facet.
CREATE INDEX investigation_tag_facet_counts_by_name
    ON investigation_tag_facet_counts (name, facet, status);

INSERT INTO investigation_tag_facet_counts (group_key, name, facet, status, canceled,
    priority, alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
    tenant_integration_key, n)
SELECT json_array(name, facet, status, canceled, priority, alert_type, direct_source_label,
           tenant_union_id, tenant_id, tenant_label, tenant_integration_key),
       name, facet, status, canceled, priority, alert_type, direct_source_label,
       tenant_union_id, tenant_id, tenant_label, tenant_integration_key, SUM(n)
FROM (
    SELECT name, 'all' AS facet, status, canceled, priority, NULL AS alert_type,
           NULL AS direct_source_label, NULL AS tenant_union_id, NULL AS tenant_id,
           NULL AS tenant_label, NULL AS tenant_integration_key, n
    FROM investigation_tag_counts
    UNION ALL
    SELECT name, 'type', status, canceled, priority, alert_type, NULL, NULL, NULL, NULL,
           NULL, n
    FROM investigation_tag_counts
    UNION ALL
    SELECT name, 'source', status, canceled, priority, NULL, direct_source_label, NULL, NULL,
           NULL, NULL, n
    FROM investigation_tag_counts
    UNION ALL
    SELECT name, 'tenant', status, canceled, priority, NULL, NULL, tenant_union_id,
           tenant_id, tenant_label, tenant_integration_key, n
    FROM investigation_tag_counts
)
GROUP BY name, facet, status, canceled, priority, alert_type, direct_source_label,
    tenant_union_id, tenant_id, tenant_label, tenant_integration_key
HAVING SUM(n) <> 0;

-- The rows of each facet come from one cross join with the four facet names, each holding
-- only its own columns. As in 0008, a tag counts under its investigation's columns as they
-- are when the tag is written; `foreign_keys` is on, so the investigation exists while it
-- has tags.
CREATE TRIGGER investigation_tag_facet_counts_on_insert AFTER INSERT ON investigation_tags
BEGIN
    INSERT INTO investigation_tag_facet_counts (group_key, name, facet, status, canceled,
        priority, alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
        tenant_integration_key, n)
    SELECT json_array(NEW.name, f.facet, i.status, i.canceled, i.priority,
           CASE f.facet WHEN 'type' THEN i.alert_type END,
           CASE f.facet WHEN 'source' THEN i.direct_source_label END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_union_id END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_id END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_label END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_integration_key END),
           NEW.name, f.facet, i.status, i.canceled, i.priority,
           CASE f.facet WHEN 'type' THEN i.alert_type END,
           CASE f.facet WHEN 'source' THEN i.direct_source_label END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_union_id END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_id END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_label END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_integration_key END, 1
    FROM investigations i, (SELECT 'all' AS facet UNION ALL SELECT 'type'
        UNION ALL SELECT 'source' UNION ALL SELECT 'tenant') f
    WHERE i.id = NEW.investigation_id
    ON CONFLICT (group_key) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER investigation_tag_facet_counts_on_delete AFTER DELETE ON investigation_tags
BEGIN
    UPDATE investigation_tag_facet_counts SET n = n - 1
    WHERE group_key IN (
        SELECT json_array(OLD.name, f.facet, i.status, i.canceled, i.priority,
           CASE f.facet WHEN 'type' THEN i.alert_type END,
           CASE f.facet WHEN 'source' THEN i.direct_source_label END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_union_id END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_id END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_label END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_integration_key END)
        FROM investigations i, (SELECT 'all' AS facet UNION ALL SELECT 'type'
        UNION ALL SELECT 'source' UNION ALL SELECT 'tenant') f
        WHERE i.id = OLD.investigation_id);
END;

-- Nothing renames a tag or moves it today; counted anyway, so that nothing can forget it.
CREATE TRIGGER investigation_tag_facet_counts_on_update
AFTER UPDATE OF name, investigation_id ON investigation_tags
BEGIN
    UPDATE investigation_tag_facet_counts SET n = n - 1
    WHERE group_key IN (
        SELECT json_array(OLD.name, f.facet, i.status, i.canceled, i.priority,
           CASE f.facet WHEN 'type' THEN i.alert_type END,
           CASE f.facet WHEN 'source' THEN i.direct_source_label END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_union_id END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_id END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_label END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_integration_key END)
        FROM investigations i, (SELECT 'all' AS facet UNION ALL SELECT 'type'
        UNION ALL SELECT 'source' UNION ALL SELECT 'tenant') f
        WHERE i.id = OLD.investigation_id);
    INSERT INTO investigation_tag_facet_counts (group_key, name, facet, status, canceled,
        priority, alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
        tenant_integration_key, n)
    SELECT json_array(NEW.name, f.facet, i.status, i.canceled, i.priority,
           CASE f.facet WHEN 'type' THEN i.alert_type END,
           CASE f.facet WHEN 'source' THEN i.direct_source_label END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_union_id END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_id END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_label END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_integration_key END),
           NEW.name, f.facet, i.status, i.canceled, i.priority,
           CASE f.facet WHEN 'type' THEN i.alert_type END,
           CASE f.facet WHEN 'source' THEN i.direct_source_label END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_union_id END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_id END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_label END,
           CASE f.facet WHEN 'tenant' THEN i.tenant_integration_key END, 1
    FROM investigations i, (SELECT 'all' AS facet UNION ALL SELECT 'type'
        UNION ALL SELECT 'source' UNION ALL SELECT 'tenant') f
    WHERE i.id = NEW.investigation_id
    ON CONFLICT (group_key) DO UPDATE SET n = n + 1;
END;

-- An investigation whose counted columns change moves its tags along; only concluded
-- investigations have tags, so claims and finishes find none.
CREATE TRIGGER investigation_tag_facet_counts_on_investigation_update
AFTER UPDATE OF status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
    tenant_id, tenant_label, tenant_integration_key ON investigations
WHEN OLD.status IS NOT NEW.status OR OLD.canceled IS NOT NEW.canceled
    OR OLD.priority IS NOT NEW.priority OR OLD.alert_type IS NOT NEW.alert_type
    OR OLD.direct_source_label IS NOT NEW.direct_source_label
    OR OLD.tenant_union_id IS NOT NEW.tenant_union_id OR OLD.tenant_id IS NOT NEW.tenant_id
    OR OLD.tenant_label IS NOT NEW.tenant_label
    OR OLD.tenant_integration_key IS NOT NEW.tenant_integration_key
BEGIN
    UPDATE investigation_tag_facet_counts SET n = n - 1
    WHERE group_key IN (
        SELECT json_array(t.name, f.facet, OLD.status, OLD.canceled, OLD.priority,
           CASE f.facet WHEN 'type' THEN OLD.alert_type END,
           CASE f.facet WHEN 'source' THEN OLD.direct_source_label END,
           CASE f.facet WHEN 'tenant' THEN OLD.tenant_union_id END,
           CASE f.facet WHEN 'tenant' THEN OLD.tenant_id END,
           CASE f.facet WHEN 'tenant' THEN OLD.tenant_label END,
           CASE f.facet WHEN 'tenant' THEN OLD.tenant_integration_key END)
        FROM investigation_tags t, (SELECT 'all' AS facet UNION ALL SELECT 'type'
        UNION ALL SELECT 'source' UNION ALL SELECT 'tenant') f
        WHERE t.investigation_id = OLD.id);
    INSERT INTO investigation_tag_facet_counts (group_key, name, facet, status, canceled,
        priority, alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
        tenant_integration_key, n)
    SELECT json_array(t.name, f.facet, NEW.status, NEW.canceled, NEW.priority,
           CASE f.facet WHEN 'type' THEN NEW.alert_type END,
           CASE f.facet WHEN 'source' THEN NEW.direct_source_label END,
           CASE f.facet WHEN 'tenant' THEN NEW.tenant_union_id END,
           CASE f.facet WHEN 'tenant' THEN NEW.tenant_id END,
           CASE f.facet WHEN 'tenant' THEN NEW.tenant_label END,
           CASE f.facet WHEN 'tenant' THEN NEW.tenant_integration_key END),
           t.name, f.facet, NEW.status, NEW.canceled, NEW.priority,
           CASE f.facet WHEN 'type' THEN NEW.alert_type END,
           CASE f.facet WHEN 'source' THEN NEW.direct_source_label END,
           CASE f.facet WHEN 'tenant' THEN NEW.tenant_union_id END,
           CASE f.facet WHEN 'tenant' THEN NEW.tenant_id END,
           CASE f.facet WHEN 'tenant' THEN NEW.tenant_label END,
           CASE f.facet WHEN 'tenant' THEN NEW.tenant_integration_key END, 1
    FROM investigation_tags t, (SELECT 'all' AS facet UNION ALL SELECT 'type'
        UNION ALL SELECT 'source' UNION ALL SELECT 'tenant') f
    WHERE t.investigation_id = NEW.id
    ON CONFLICT (group_key) DO UPDATE SET n = n + 1;
END;

-- A combination that no investigation holds any more is not kept: every list would read it.
CREATE TRIGGER investigation_tag_facet_counts_drop_zero AFTER UPDATE OF n
ON investigation_tag_facet_counts WHEN NEW.n = 0
BEGIN
    DELETE FROM investigation_tag_facet_counts WHERE group_key = NEW.group_key;
END;
