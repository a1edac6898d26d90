-- Counts for the investigation list whose cost does not grow with how many distinct types,
-- sources and tenants there are. Append-only, like every migration.
--
-- `investigation_counts` (0007) keeps one row per combination of every equality-filtered
-- column, so a list in one state summed a row for every type, source and tenant ever seen
-- together in that state. This table keeps the same counts per facet instead: 'all'
-- (state, stop reason, priority only), 'type' (those and the alert type), 'source' (and the
-- source label) and 'tenant' (and the four tenant columns). A list whose equality filters
-- name at most one of type, source and tenant sums the rows of that facet, for the
-- filtered values only. The columns a facet does not hold are NULL, and carry the names of
-- `investigations`, so the list's filters apply unchanged.
--
-- As in 0007, the rows are deltas that the triggers only ever insert, so that concurrent
-- writers never wait on a shared counter; the store folds them in the background
-- (`fold_counts` in store-sql), which drops the combinations whose sum is zero.
CREATE TABLE investigation_facet_counts (
    facet TEXT NOT NULL,
    status TEXT NOT NULL,
    canceled TEXT,
    priority TEXT,
    alert_type TEXT,
    direct_source_label TEXT,
    tenant_union_id BIGINT,
    tenant_id TEXT,
    tenant_label TEXT,
    tenant_integration_key TEXT,
    n BIGINT NOT NULL
);
CREATE INDEX investigation_facet_counts_by_value
    ON investigation_facet_counts (facet, status, alert_type, direct_source_label);

-- One investigation's (or one batch's) rows in every facet.
CREATE FUNCTION investigation_facets(changed_status TEXT, changed_canceled TEXT,
    changed_priority TEXT, changed_alert_type TEXT, changed_source TEXT,
    changed_union BIGINT, changed_tenant_id TEXT, changed_tenant_label TEXT,
    changed_integration_key TEXT)
RETURNS TABLE (facet TEXT, status TEXT, canceled TEXT, priority TEXT, alert_type TEXT,
    direct_source_label TEXT, tenant_union_id BIGINT, tenant_id TEXT, tenant_label TEXT,
    tenant_integration_key TEXT)
LANGUAGE sql IMMUTABLE AS $$
    VALUES ('all', changed_status, changed_canceled, changed_priority, NULL::TEXT, NULL::TEXT,
            NULL::BIGINT, NULL::TEXT, NULL::TEXT, NULL::TEXT),
           ('type', changed_status, changed_canceled, changed_priority, changed_alert_type,
            NULL, NULL, NULL, NULL, NULL),
           ('source', changed_status, changed_canceled, changed_priority, NULL,
            changed_source, NULL, NULL, NULL, NULL),
           ('tenant', changed_status, changed_canceled, changed_priority, NULL, NULL,
            changed_union, changed_tenant_id, changed_tenant_label, changed_integration_key)
$$;

INSERT INTO investigation_facet_counts (facet, status, canceled, priority, alert_type,
    direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key, n)
SELECT f.facet, f.status, f.canceled, f.priority, f.alert_type, f.direct_source_label,
       f.tenant_union_id, f.tenant_id, f.tenant_label, f.tenant_integration_key, SUM(c.n)
FROM investigation_counts c
CROSS JOIN LATERAL investigation_facets(c.status, c.canceled, c.priority, c.alert_type,
    c.direct_source_label, c.tenant_union_id, c.tenant_id, c.tenant_label,
    c.tenant_integration_key) f
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
HAVING SUM(c.n) <> 0;

-- Inserts and deletes come in batches: one statement-level trigger writes one delta per
-- facet row in the batch. Both name their transition table `changed`.
CREATE FUNCTION investigation_facet_counts_on_insert_or_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO investigation_facet_counts (facet, status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    SELECT f.facet, f.status, f.canceled, f.priority, f.alert_type, f.direct_source_label,
           f.tenant_union_id, f.tenant_id, f.tenant_label, f.tenant_integration_key,
           CASE TG_OP WHEN 'DELETE' THEN -COUNT(*) ELSE COUNT(*) END
    FROM changed c
    CROSS JOIN LATERAL investigation_facets(c.status, c.canceled, c.priority, c.alert_type,
        c.direct_source_label, c.tenant_union_id, c.tenant_id, c.tenant_label,
        c.tenant_integration_key) f
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10;
    RETURN NULL;
END $$;
CREATE TRIGGER investigation_facet_counts_on_insert AFTER INSERT ON investigations
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION investigation_facet_counts_on_insert_or_delete();
CREATE TRIGGER investigation_facet_counts_on_delete AFTER DELETE ON investigations
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION investigation_facet_counts_on_insert_or_delete();

-- Updates are row by row with a WHEN condition, so that the many updates which change no
-- counted column (results, feedback, search text, times) cost nothing here.
CREATE FUNCTION investigation_facet_counts_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO investigation_facet_counts (facet, status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    SELECT f.facet, f.status, f.canceled, f.priority, f.alert_type, f.direct_source_label,
           f.tenant_union_id, f.tenant_id, f.tenant_label, f.tenant_integration_key, -1
    FROM investigation_facets(OLD.status, OLD.canceled, OLD.priority, OLD.alert_type,
        OLD.direct_source_label, OLD.tenant_union_id, OLD.tenant_id, OLD.tenant_label,
        OLD.tenant_integration_key) f
    UNION ALL
    SELECT f.facet, f.status, f.canceled, f.priority, f.alert_type, f.direct_source_label,
           f.tenant_union_id, f.tenant_id, f.tenant_label, f.tenant_integration_key, 1
    FROM investigation_facets(NEW.status, NEW.canceled, NEW.priority, NEW.alert_type,
        NEW.direct_source_label, NEW.tenant_union_id, NEW.tenant_id, NEW.tenant_label,
        NEW.tenant_integration_key) f;
    RETURN NULL;
END $$;
CREATE TRIGGER investigation_facet_counts_on_update AFTER UPDATE ON investigations
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.canceled IS DISTINCT FROM NEW.canceled
        OR OLD.priority IS DISTINCT FROM NEW.priority
        OR OLD.alert_type IS DISTINCT FROM NEW.alert_type
        OR OLD.direct_source_label IS DISTINCT FROM NEW.direct_source_label
        OR OLD.tenant_union_id IS DISTINCT FROM NEW.tenant_union_id
        OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id
        OR OLD.tenant_label IS DISTINCT FROM NEW.tenant_label
        OR OLD.tenant_integration_key IS DISTINCT FROM NEW.tenant_integration_key)
    EXECUTE FUNCTION investigation_facet_counts_on_update();
