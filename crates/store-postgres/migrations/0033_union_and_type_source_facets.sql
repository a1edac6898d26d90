-- Two more facets of `investigation_facet_counts` (0021), so that two common lists sum
-- only the rows of the values they name, however many distinct values the data holds.
-- Append-only, like every migration.
--
-- 'union' holds the state, stop reason, priority and the tenant union alone. A caller
-- bound to tenant unions (a scope) filters every list by them; the 'tenant' facet keeps
-- the union together with the tenant id, label and integration key, and vendor tenant ids
-- are many, so a scoped list summed a row per tenant id ever seen.
--
-- 'type_source' holds the alert type and the source label together. A list filtered by
-- both summed `investigation_counts` (0007), one row per combination of every filtered
-- column, tenant ids included, with no index to find the named type's rows.
--
-- The triggers of 0021 write the rows `investigation_facets` returns, so replacing the
-- function is all they need.
CREATE OR REPLACE FUNCTION investigation_facets(changed_status TEXT, changed_canceled TEXT,
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
            changed_union, changed_tenant_id, changed_tenant_label, changed_integration_key),
           ('union', changed_status, changed_canceled, changed_priority, NULL, NULL,
            changed_union, NULL, NULL, NULL),
           ('type_source', changed_status, changed_canceled, changed_priority,
            changed_alert_type, changed_source, NULL, NULL, NULL, NULL)
$$;

-- In the same transaction as the function's change: no delta is written between the
-- backfill and the triggers' first rows of the new facets.
INSERT INTO investigation_facet_counts (facet, status, canceled, priority, alert_type,
    direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key, n)
SELECT 'union', status, canceled, priority, NULL, NULL, tenant_union_id, NULL, NULL, NULL,
       SUM(n)
FROM investigation_counts
GROUP BY status, canceled, priority, tenant_union_id
HAVING SUM(n) <> 0
UNION ALL
SELECT 'type_source', status, canceled, priority, alert_type, direct_source_label, NULL, NULL,
       NULL, NULL, SUM(n)
FROM investigation_counts
GROUP BY status, canceled, priority, alert_type, direct_source_label
HAVING SUM(n) <> 0;

-- A list filtered by tenant names (`alert_tenants`: a tenant label, id or union name) sums
-- the 'union' rows of the named unions, and the 'tenant' rows of the named labels and ids
-- outside those unions: these find the latter without reading a row per tenant id.
CREATE INDEX investigation_facet_counts_by_tenant_label
    ON investigation_facet_counts (tenant_label, status) WHERE facet = 'tenant';
CREATE INDEX investigation_facet_counts_by_tenant_id
    ON investigation_facet_counts (tenant_id, status) WHERE facet = 'tenant';
