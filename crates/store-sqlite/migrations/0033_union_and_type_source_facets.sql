-- Two more facets of `investigation_facet_counts` (0022), so that two common lists sum
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
INSERT INTO investigation_facet_counts (group_key, facet, status, canceled, priority,
    alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
    tenant_integration_key, n)
SELECT json_array(facet, status, canceled, priority, alert_type, direct_source_label,
           tenant_union_id, NULL, NULL, NULL),
       facet, status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
       NULL, NULL, NULL, SUM(n)
FROM (
    SELECT 'union' AS facet, status, canceled, priority, NULL AS alert_type,
           NULL AS direct_source_label, tenant_union_id, n
    FROM investigation_counts
    UNION ALL
    SELECT 'type_source', status, canceled, priority, alert_type, direct_source_label, NULL,
           n
    FROM investigation_counts
)
GROUP BY facet, status, canceled, priority, alert_type, direct_source_label, tenant_union_id
HAVING SUM(n) <> 0;

DROP TRIGGER investigation_facet_counts_on_insert;
DROP TRIGGER investigation_facet_counts_on_delete;
DROP TRIGGER investigation_facet_counts_on_update;

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
        UNION ALL SELECT 'union', NULL, NULL, NEW.tenant_union_id, NULL, NULL, NULL
        UNION ALL SELECT 'type_source', NEW.alert_type, NEW.direct_source_label, NULL, NULL,
               NULL, NULL
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
            OLD.tenant_union_id, OLD.tenant_id, OLD.tenant_label, OLD.tenant_integration_key),
        json_array('union', OLD.status, OLD.canceled, OLD.priority, NULL, NULL,
            OLD.tenant_union_id, NULL, NULL, NULL),
        json_array('type_source', OLD.status, OLD.canceled, OLD.priority, OLD.alert_type,
            OLD.direct_source_label, NULL, NULL, NULL, NULL));
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
            OLD.tenant_union_id, OLD.tenant_id, OLD.tenant_label, OLD.tenant_integration_key),
        json_array('union', OLD.status, OLD.canceled, OLD.priority, NULL, NULL,
            OLD.tenant_union_id, NULL, NULL, NULL),
        json_array('type_source', OLD.status, OLD.canceled, OLD.priority, OLD.alert_type,
            OLD.direct_source_label, NULL, NULL, NULL, NULL));
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
        UNION ALL SELECT 'union', NULL, NULL, NEW.tenant_union_id, NULL, NULL, NULL
        UNION ALL SELECT 'type_source', NEW.alert_type, NEW.direct_source_label, NULL, NULL,
               NULL, NULL
    ) WHERE true
    ON CONFLICT (group_key) DO UPDATE SET n = n + 1;
END;

-- A list filtered by tenant names (`alert_tenants`: a tenant label, id or union name) sums
-- the 'union' rows of the named unions, and the 'tenant' rows of the named labels and ids
-- outside those unions: these find the latter without reading a row per tenant id.
CREATE INDEX investigation_facet_counts_by_tenant_label
    ON investigation_facet_counts (tenant_label, status) WHERE facet = 'tenant';
CREATE INDEX investigation_facet_counts_by_tenant_id
    ON investigation_facet_counts (tenant_id, status) WHERE facet = 'tenant';
