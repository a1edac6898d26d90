-- Counts for the investigation list whose cost does not grow with how many distinct types,
-- sources and tenants there are. Append-only, like every migration.
--
-- `investigation_counts` (0007) keeps one row per combination of every equality-filtered
-- column, so a list in one state summed a row for every type, source and tenant ever seen
-- together in that state, rows at zero included. This table keeps the same counts per
-- facet instead: 'all' (state, stop reason, priority only), 'type' (those and the alert
-- type), 'source' (and the source label) and 'tenant' (and the four tenant columns). A
-- list whose equality filters name at most one of type, source and tenant sums the rows
-- of that facet, for the filtered values only. The columns a facet does not hold are NULL,
-- and carry the names of `investigations`, so the list's filters apply unchanged.
CREATE TABLE investigation_facet_counts (
    -- The facet and its combination as a JSON array: a key that tells NULL from any text.
    group_key TEXT PRIMARY KEY,
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
CREATE INDEX investigation_facet_counts_by_value
    ON investigation_facet_counts (facet, status, alert_type, direct_source_label);

INSERT INTO investigation_facet_counts (group_key, facet, status, canceled, priority,
    alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
    tenant_integration_key, n)
SELECT json_array(facet, status, canceled, priority, alert_type, direct_source_label,
           tenant_union_id, tenant_id, tenant_label, tenant_integration_key),
       facet, status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
       tenant_id, tenant_label, tenant_integration_key, SUM(n)
FROM (
    SELECT 'all' AS facet, status, canceled, priority, NULL AS alert_type,
           NULL AS direct_source_label, NULL AS tenant_union_id, NULL AS tenant_id,
           NULL AS tenant_label, NULL AS tenant_integration_key, n
    FROM investigation_counts
    UNION ALL
    SELECT 'type', status, canceled, priority, alert_type, NULL, NULL, NULL, NULL, NULL, n
    FROM investigation_counts
    UNION ALL
    SELECT 'source', status, canceled, priority, NULL, direct_source_label, NULL, NULL, NULL,
           NULL, n
    FROM investigation_counts
    UNION ALL
    SELECT 'tenant', status, canceled, priority, NULL, NULL, tenant_union_id, tenant_id,
           tenant_label, tenant_integration_key, n
    FROM investigation_counts
)
GROUP BY facet, status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
    tenant_id, tenant_label, tenant_integration_key
HAVING SUM(n) <> 0;

CREATE TRIGGER investigation_facet_counts_on_insert AFTER INSERT ON investigations
BEGIN
    INSERT INTO investigation_facet_counts (group_key, facet, status, canceled, priority,
        alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
        tenant_integration_key, n)
    SELECT json_array(facet, NEW.status, NEW.canceled, NEW.priority, alert_type,
               direct_source_label, tenant_union_id, tenant_id, tenant_label,
               tenant_integration_key),
           facet, NEW.status, NEW.canceled, NEW.priority, alert_type, direct_source_label,
           tenant_union_id, tenant_id, tenant_label, tenant_integration_key, 1
    FROM (
        SELECT 'all' AS facet, NULL AS alert_type, NULL AS direct_source_label,
               NULL AS tenant_union_id, NULL AS tenant_id, NULL AS tenant_label,
               NULL AS tenant_integration_key
        UNION ALL SELECT 'type', NEW.alert_type, NULL, NULL, NULL, NULL, NULL
        UNION ALL SELECT 'source', NULL, NEW.direct_source_label, NULL, NULL, NULL, NULL
        UNION ALL SELECT 'tenant', NULL, NULL, NEW.tenant_union_id, NEW.tenant_id,
               NEW.tenant_label, NEW.tenant_integration_key
    ) WHERE true
    ON CONFLICT (group_key) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER investigation_facet_counts_on_delete AFTER DELETE ON investigations
BEGIN
    UPDATE investigation_facet_counts SET n = n - 1
    WHERE group_key IN (
        json_array('all', OLD.status, OLD.canceled, OLD.priority, NULL, NULL, NULL, NULL,
            NULL, NULL),
        json_array('type', OLD.status, OLD.canceled, OLD.priority, OLD.alert_type, NULL, NULL,
            NULL, NULL, NULL),
        json_array('source', OLD.status, OLD.canceled, OLD.priority, NULL,
            OLD.direct_source_label, NULL, NULL, NULL, NULL),
        json_array('tenant', OLD.status, OLD.canceled, OLD.priority, NULL, NULL,
            OLD.tenant_union_id, OLD.tenant_id, OLD.tenant_label, OLD.tenant_integration_key));
END;

CREATE TRIGGER investigation_facet_counts_on_update
AFTER UPDATE OF status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
    tenant_id, tenant_label, tenant_integration_key ON investigations
WHEN OLD.status IS NOT NEW.status OR OLD.canceled IS NOT NEW.canceled
    OR OLD.priority IS NOT NEW.priority OR OLD.alert_type IS NOT NEW.alert_type
    OR OLD.direct_source_label IS NOT NEW.direct_source_label
    OR OLD.tenant_union_id IS NOT NEW.tenant_union_id OR OLD.tenant_id IS NOT NEW.tenant_id
    OR OLD.tenant_label IS NOT NEW.tenant_label
    OR OLD.tenant_integration_key IS NOT NEW.tenant_integration_key
BEGIN
    UPDATE investigation_facet_counts SET n = n - 1
    WHERE group_key IN (
        json_array('all', OLD.status, OLD.canceled, OLD.priority, NULL, NULL, NULL, NULL,
            NULL, NULL),
        json_array('type', OLD.status, OLD.canceled, OLD.priority, OLD.alert_type, NULL, NULL,
            NULL, NULL, NULL),
        json_array('source', OLD.status, OLD.canceled, OLD.priority, NULL,
            OLD.direct_source_label, NULL, NULL, NULL, NULL),
        json_array('tenant', OLD.status, OLD.canceled, OLD.priority, NULL, NULL,
            OLD.tenant_union_id, OLD.tenant_id, OLD.tenant_label, OLD.tenant_integration_key));
    INSERT INTO investigation_facet_counts (group_key, facet, status, canceled, priority,
        alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
        tenant_integration_key, n)
    SELECT json_array(facet, NEW.status, NEW.canceled, NEW.priority, alert_type,
               direct_source_label, tenant_union_id, tenant_id, tenant_label,
               tenant_integration_key),
           facet, NEW.status, NEW.canceled, NEW.priority, alert_type, direct_source_label,
           tenant_union_id, tenant_id, tenant_label, tenant_integration_key, 1
    FROM (
        SELECT 'all' AS facet, NULL AS alert_type, NULL AS direct_source_label,
               NULL AS tenant_union_id, NULL AS tenant_id, NULL AS tenant_label,
               NULL AS tenant_integration_key
        UNION ALL SELECT 'type', NEW.alert_type, NULL, NULL, NULL, NULL, NULL
        UNION ALL SELECT 'source', NULL, NEW.direct_source_label, NULL, NULL, NULL, NULL
        UNION ALL SELECT 'tenant', NULL, NULL, NEW.tenant_union_id, NEW.tenant_id,
               NEW.tenant_label, NEW.tenant_integration_key
    ) WHERE true
    ON CONFLICT (group_key) DO UPDATE SET n = n + 1;
END;

-- A combination that no investigation holds any more is not kept: every list would read
-- it. Each counts table drops a row when its count reaches zero.
DELETE FROM investigation_counts WHERE n = 0;
DELETE FROM investigation_tag_counts WHERE n = 0;
DELETE FROM investigation_hour_counts WHERE n = 0;
CREATE TRIGGER investigation_facet_counts_drop_zero AFTER UPDATE OF n
ON investigation_facet_counts WHEN NEW.n = 0
BEGIN
    DELETE FROM investigation_facet_counts WHERE group_key = NEW.group_key;
END;
CREATE TRIGGER investigation_counts_drop_zero AFTER UPDATE OF n ON investigation_counts
WHEN NEW.n = 0
BEGIN
    DELETE FROM investigation_counts WHERE group_key = NEW.group_key;
END;
CREATE TRIGGER investigation_tag_counts_drop_zero AFTER UPDATE OF n ON investigation_tag_counts
WHEN NEW.n = 0
BEGIN
    DELETE FROM investigation_tag_counts WHERE group_key = NEW.group_key;
END;
CREATE TRIGGER investigation_hour_counts_drop_zero AFTER UPDATE OF n
ON investigation_hour_counts WHEN NEW.n = 0
BEGIN
    DELETE FROM investigation_hour_counts WHERE status = NEW.status AND hour = NEW.hour;
END;
