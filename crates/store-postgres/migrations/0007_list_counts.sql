-- Exact counts for the investigation list (DESIGN.md section 1: `count` is the exact total).
-- Append-only, like every migration.
--
-- Counting a million index entries takes ~250 ms on PostgreSQL, so the list reads its
-- `count` from this table whenever every filter of the request is on one of its columns
-- (states, stop reasons, priorities, types, sources and the tenant filters): it sums the
-- matching rows. The triggers below keep it exact in the same transaction as the change,
-- so no code path that writes investigations can forget it.
--
-- The rows are deltas, only ever inserted by the triggers: several processes write
-- investigations at once here, and counters updated in place would make every create and
-- every finished investigation of one combination wait for each other's commit on one row
-- (and deadlock when two batches meet their rows in opposite orders). The store folds the
-- deltas into one row per combination in the background (`compact_list_counts` in
-- store-sql), which changes no sum.
CREATE TABLE investigation_counts (
    -- The same names as in `investigations`, so that the list's filters apply unchanged.
    status TEXT NOT NULL,
    canceled TEXT,
    priority TEXT,
    alert_type TEXT NOT NULL,
    direct_source_label TEXT NOT NULL,
    tenant_union_id BIGINT NOT NULL,
    tenant_id TEXT,
    tenant_label TEXT,
    tenant_integration_key TEXT,
    n BIGINT NOT NULL
);

INSERT INTO investigation_counts (status, canceled, priority, alert_type, direct_source_label,
    tenant_union_id, tenant_id, tenant_label, tenant_integration_key, n)
SELECT status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
       tenant_id, tenant_label, tenant_integration_key, COUNT(*)
FROM investigations
GROUP BY status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
    tenant_id, tenant_label, tenant_integration_key;

-- Inserts and deletes come in batches: one statement-level trigger writes one delta per
-- combination in the batch. Both name their transition table `changed`.
CREATE FUNCTION investigation_counts_on_insert_or_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO investigation_counts (status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key, n)
    SELECT status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
           tenant_id, tenant_label, tenant_integration_key,
           CASE TG_OP WHEN 'DELETE' THEN -COUNT(*) ELSE COUNT(*) END
    FROM changed
    GROUP BY status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
        tenant_id, tenant_label, tenant_integration_key;
    RETURN NULL;
END $$;
CREATE TRIGGER investigation_counts_on_insert AFTER INSERT ON investigations
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION investigation_counts_on_insert_or_delete();
CREATE TRIGGER investigation_counts_on_delete AFTER DELETE ON investigations
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION investigation_counts_on_insert_or_delete();

-- Updates are row by row with a WHEN condition, so that the many updates which change no
-- counted column (results, feedback, search text, times) cost nothing here.
CREATE FUNCTION investigation_counts_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO investigation_counts (status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key, n)
    VALUES (OLD.status, OLD.canceled, OLD.priority, OLD.alert_type, OLD.direct_source_label,
            OLD.tenant_union_id, OLD.tenant_id, OLD.tenant_label, OLD.tenant_integration_key, -1),
           (NEW.status, NEW.canceled, NEW.priority, NEW.alert_type, NEW.direct_source_label,
            NEW.tenant_union_id, NEW.tenant_id, NEW.tenant_label, NEW.tenant_integration_key, 1);
    RETURN NULL;
END $$;
CREATE TRIGGER investigation_counts_on_update AFTER UPDATE ON investigations
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.canceled IS DISTINCT FROM NEW.canceled
        OR OLD.priority IS DISTINCT FROM NEW.priority
        OR OLD.alert_type IS DISTINCT FROM NEW.alert_type
        OR OLD.direct_source_label IS DISTINCT FROM NEW.direct_source_label
        OR OLD.tenant_union_id IS DISTINCT FROM NEW.tenant_union_id
        OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id
        OR OLD.tenant_label IS DISTINCT FROM NEW.tenant_label
        OR OLD.tenant_integration_key IS DISTINCT FROM NEW.tenant_integration_key)
    EXECUTE FUNCTION investigation_counts_on_update();
