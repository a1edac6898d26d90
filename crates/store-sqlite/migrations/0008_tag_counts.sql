-- Exact counts for the list's insight-tag filter (DESIGN.md section 1: `count` is the exact
-- total). Append-only, like every migration.
--
-- Counting the investigations that carry a tag means looking each tagged one up in
-- `investigations` for its state: 140,000 lookups for a tag on one investigation in seven
-- of a million, ~600 ms. Like `investigation_counts` (migration 0007), this table keeps
-- the count per tag name and combination of the equality-filtered columns, exact through
-- the triggers below in the same transaction as the change. A list filtered by one tag
-- name sums a few of its rows. Several tag names cannot be summed (an investigation with
-- two of them would count twice), so those still count the rows.
CREATE TABLE investigation_tag_counts (
    -- The tag name and the combination below as a JSON array: tells NULL from any text.
    group_key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    -- The same names as in `investigations`, so that the list's filters apply unchanged.
    status TEXT NOT NULL,
    canceled TEXT,
    priority TEXT,
    alert_type TEXT NOT NULL,
    direct_source_label TEXT NOT NULL,
    tenant_union_id INTEGER NOT NULL,
    tenant_id TEXT,
    tenant_label TEXT,
    tenant_integration_key TEXT,
    n INTEGER NOT NULL
) WITHOUT ROWID;

-- The triggers on `investigations` find an investigation's tags by its id; without this
-- index every change of state would read the whole tag table.
CREATE INDEX investigation_tags_by_investigation ON investigation_tags (investigation_id);
-- A list filtered by one tag reads only that tag's rows.
CREATE INDEX investigation_tag_counts_by_name ON investigation_tag_counts (name, status);

INSERT INTO investigation_tag_counts (group_key, name, status, canceled, priority, alert_type,
    direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key, n)
SELECT json_array(t.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
           i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key),
       t.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
       i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key, COUNT(*)
FROM investigation_tags t JOIN investigations i ON i.id = t.investigation_id
GROUP BY t.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
    i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key;

-- A tag counts under its investigation's columns as they are when the tag is written (the
-- finish writer stores the outcome first). `foreign_keys` is on, so an investigation
-- always exists while it has tags: a tag is deleted before its investigation.
CREATE TRIGGER investigation_tag_counts_on_insert AFTER INSERT ON investigation_tags
BEGIN
    INSERT INTO investigation_tag_counts (group_key, name, status, canceled, priority,
        alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
        tenant_integration_key, n)
    SELECT json_array(NEW.name, i.status, i.canceled, i.priority, i.alert_type,
               i.direct_source_label, i.tenant_union_id, i.tenant_id, i.tenant_label,
               i.tenant_integration_key),
           NEW.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
           i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key, 1
    FROM investigations i WHERE i.id = NEW.investigation_id
    ON CONFLICT (group_key) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER investigation_tag_counts_on_delete AFTER DELETE ON investigation_tags
BEGIN
    UPDATE investigation_tag_counts SET n = n - 1
    WHERE group_key = (SELECT json_array(OLD.name, i.status, i.canceled, i.priority,
        i.alert_type, i.direct_source_label, i.tenant_union_id, i.tenant_id, i.tenant_label,
        i.tenant_integration_key) FROM investigations i WHERE i.id = OLD.investigation_id);
END;

-- Nothing renames a tag or moves it today; counted anyway, so that nothing can forget it.
CREATE TRIGGER investigation_tag_counts_on_update
AFTER UPDATE OF name, investigation_id ON investigation_tags
BEGIN
    UPDATE investigation_tag_counts SET n = n - 1
    WHERE group_key = (SELECT json_array(OLD.name, i.status, i.canceled, i.priority,
        i.alert_type, i.direct_source_label, i.tenant_union_id, i.tenant_id, i.tenant_label,
        i.tenant_integration_key) FROM investigations i WHERE i.id = OLD.investigation_id);
    INSERT INTO investigation_tag_counts (group_key, name, status, canceled, priority,
        alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
        tenant_integration_key, n)
    SELECT json_array(NEW.name, i.status, i.canceled, i.priority, i.alert_type,
               i.direct_source_label, i.tenant_union_id, i.tenant_id, i.tenant_label,
               i.tenant_integration_key),
           NEW.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
           i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key, 1
    FROM investigations i WHERE i.id = NEW.investigation_id
    ON CONFLICT (group_key) DO UPDATE SET n = n + 1;
END;

-- An investigation whose counted columns change moves its tags along. Only concluded
-- investigations have tags, and nothing changes these columns after that today, so this
-- usually finds no tag (claims and finishes fire it before the tags exist).
CREATE TRIGGER investigation_tag_counts_on_investigation_update
AFTER UPDATE OF status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
    tenant_id, tenant_label, tenant_integration_key ON investigations
WHEN OLD.status IS NOT NEW.status OR OLD.canceled IS NOT NEW.canceled
    OR OLD.priority IS NOT NEW.priority OR OLD.alert_type IS NOT NEW.alert_type
    OR OLD.direct_source_label IS NOT NEW.direct_source_label
    OR OLD.tenant_union_id IS NOT NEW.tenant_union_id OR OLD.tenant_id IS NOT NEW.tenant_id
    OR OLD.tenant_label IS NOT NEW.tenant_label
    OR OLD.tenant_integration_key IS NOT NEW.tenant_integration_key
BEGIN
    UPDATE investigation_tag_counts SET n = n - 1
    WHERE group_key IN (SELECT json_array(t.name, OLD.status, OLD.canceled, OLD.priority,
        OLD.alert_type, OLD.direct_source_label, OLD.tenant_union_id, OLD.tenant_id,
        OLD.tenant_label, OLD.tenant_integration_key)
        FROM investigation_tags t WHERE t.investigation_id = OLD.id);
    INSERT INTO investigation_tag_counts (group_key, name, status, canceled, priority,
        alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
        tenant_integration_key, n)
    SELECT json_array(t.name, NEW.status, NEW.canceled, NEW.priority, NEW.alert_type,
               NEW.direct_source_label, NEW.tenant_union_id, NEW.tenant_id, NEW.tenant_label,
               NEW.tenant_integration_key),
           t.name, NEW.status, NEW.canceled, NEW.priority, NEW.alert_type,
           NEW.direct_source_label, NEW.tenant_union_id, NEW.tenant_id, NEW.tenant_label,
           NEW.tenant_integration_key, 1
    FROM investigation_tags t WHERE t.investigation_id = NEW.id
    ON CONFLICT (group_key) DO UPDATE SET n = n + 1;
END;
