-- Exact counts for the investigation list (DESIGN.md section 1: `count` is the exact total).
-- Append-only, like every migration.
--
-- Counting a million index entries takes ~80 ms on SQLite, so the list reads its `count`
-- from this table whenever every filter of the request is on one of its columns (states,
-- stop reasons, priorities, types, sources and the tenant filters): it sums a few rows.
-- One row per distinct combination of those columns, kept exact by the triggers below in
-- the same transaction as the change, so no code path that writes investigations can
-- forget it. SQLite has one writer at a time, so the counters are updated in place.
CREATE TABLE investigation_counts (
    -- The combination below as a JSON array: a key that tells NULL from any text.
    group_key TEXT PRIMARY KEY,
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

INSERT INTO investigation_counts (group_key, status, canceled, priority, alert_type,
    direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key, n)
SELECT json_array(status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
           tenant_id, tenant_label, tenant_integration_key),
       status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
       tenant_id, tenant_label, tenant_integration_key, COUNT(*)
FROM investigations
GROUP BY status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
    tenant_id, tenant_label, tenant_integration_key;

CREATE TRIGGER investigation_counts_on_insert AFTER INSERT ON investigations
BEGIN
    INSERT INTO investigation_counts (group_key, status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key, n)
    VALUES (json_array(NEW.status, NEW.canceled, NEW.priority, NEW.alert_type,
                NEW.direct_source_label, NEW.tenant_union_id, NEW.tenant_id, NEW.tenant_label,
                NEW.tenant_integration_key),
            NEW.status, NEW.canceled, NEW.priority, NEW.alert_type, NEW.direct_source_label,
            NEW.tenant_union_id, NEW.tenant_id, NEW.tenant_label, NEW.tenant_integration_key, 1)
    ON CONFLICT (group_key) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER investigation_counts_on_delete AFTER DELETE ON investigations
BEGIN
    UPDATE investigation_counts SET n = n - 1
    WHERE group_key = json_array(OLD.status, OLD.canceled, OLD.priority, OLD.alert_type,
        OLD.direct_source_label, OLD.tenant_union_id, OLD.tenant_id, OLD.tenant_label,
        OLD.tenant_integration_key);
END;

-- Only changes of a counted column move an investigation between rows; feedback, results
-- and times do not fire this trigger at all.
CREATE TRIGGER investigation_counts_on_update
AFTER UPDATE OF status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
    tenant_id, tenant_label, tenant_integration_key ON investigations
WHEN OLD.status IS NOT NEW.status OR OLD.canceled IS NOT NEW.canceled
    OR OLD.priority IS NOT NEW.priority OR OLD.alert_type IS NOT NEW.alert_type
    OR OLD.direct_source_label IS NOT NEW.direct_source_label
    OR OLD.tenant_union_id IS NOT NEW.tenant_union_id OR OLD.tenant_id IS NOT NEW.tenant_id
    OR OLD.tenant_label IS NOT NEW.tenant_label
    OR OLD.tenant_integration_key IS NOT NEW.tenant_integration_key
BEGIN
    UPDATE investigation_counts SET n = n - 1
    WHERE group_key = json_array(OLD.status, OLD.canceled, OLD.priority, OLD.alert_type,
        OLD.direct_source_label, OLD.tenant_union_id, OLD.tenant_id, OLD.tenant_label,
        OLD.tenant_integration_key);
    INSERT INTO investigation_counts (group_key, status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key, n)
    VALUES (json_array(NEW.status, NEW.canceled, NEW.priority, NEW.alert_type,
                NEW.direct_source_label, NEW.tenant_union_id, NEW.tenant_id, NEW.tenant_label,
                NEW.tenant_integration_key),
            NEW.status, NEW.canceled, NEW.priority, NEW.alert_type, NEW.direct_source_label,
            NEW.tenant_union_id, NEW.tenant_id, NEW.tenant_label, NEW.tenant_integration_key, 1)
    ON CONFLICT (group_key) DO UPDATE SET n = n + 1;
END;
