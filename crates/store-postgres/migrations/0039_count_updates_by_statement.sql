-- The count deltas of an UPDATE of investigations are written once per statement, grouped,
-- instead of once per row. Append-only, like every migration.
--
-- A claim moves a batch of investigations from `not_asked` to `loading`, and a finish batch
-- moves them on to a conclusion: both are one UPDATE of many rows. The row-level triggers
-- of 0007, 0016 and 0021 ran three PL/pgSQL calls for every row, each inserting that row's
-- deltas (-1 and +1) into `investigation_counts`, `investigation_hour_counts` and, one per
-- facet, `investigation_facet_counts`: sixteen rows per investigation and state change,
-- which the folds (store-sql's count_folding.rs) then read back and delete. Grouped per
-- statement, the rows of a batch that share a combination become one delta (a claim's
-- fifty investigations leave `not_asked` as one row of the 'all' facet, not fifty), and a
-- combination whose deltas cancel out writes nothing. The sums the list reads are the same.
--
-- One statement-level trigger writes all three tables from the statement's old and new
-- rows, paired by id, keeping the pairs whose counted columns changed; an UPDATE that
-- changes none (feedback, search text) pairs its rows and writes nothing.
DROP TRIGGER investigation_counts_on_update ON investigations;
DROP TRIGGER investigation_facet_counts_on_update ON investigations;
DROP TRIGGER investigation_hour_counts_on_update ON investigations;
DROP FUNCTION investigation_counts_on_update();
DROP FUNCTION investigation_facet_counts_on_update();
DROP FUNCTION investigation_hour_counts_on_update();

CREATE FUNCTION investigation_counts_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH pairs AS (
        SELECT o.status, o.canceled, o.priority, o.alert_type, o.direct_source_label,
               o.tenant_union_id, o.tenant_id, o.tenant_label, o.tenant_integration_key,
               o.alert_create_time,
               a.status AS new_status, a.canceled AS new_canceled,
               a.priority AS new_priority, a.alert_type AS new_alert_type,
               a.direct_source_label AS new_direct_source_label,
               a.tenant_union_id AS new_tenant_union_id, a.tenant_id AS new_tenant_id,
               a.tenant_label AS new_tenant_label,
               a.tenant_integration_key AS new_tenant_integration_key,
               a.alert_create_time AS new_alert_create_time,
               -- The columns of the list's counts, and those of the hour counts.
               (o.status, o.canceled, o.priority, o.alert_type, o.direct_source_label,
                o.tenant_union_id, o.tenant_id, o.tenant_label, o.tenant_integration_key)
                   IS DISTINCT FROM
               (a.status, a.canceled, a.priority, a.alert_type, a.direct_source_label,
                a.tenant_union_id, a.tenant_id, a.tenant_label, a.tenant_integration_key)
                   AS counted,
               (o.status, o.alert_create_time) IS DISTINCT FROM (a.status, a.alert_create_time)
                   AS timed
        FROM old_rows o JOIN new_rows a ON a.id = o.id
    ),
    moves AS (
        SELECT -1 AS n, status, canceled, priority, alert_type, direct_source_label,
               tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
               alert_create_time, counted, timed
        FROM pairs WHERE counted OR timed
        UNION ALL
        SELECT 1, new_status, new_canceled, new_priority, new_alert_type,
               new_direct_source_label, new_tenant_union_id, new_tenant_id, new_tenant_label,
               new_tenant_integration_key, new_alert_create_time, counted, timed
        FROM pairs WHERE counted OR timed
    ),
    combinations AS (
        INSERT INTO investigation_counts (status, canceled, priority, alert_type,
            direct_source_label, tenant_union_id, tenant_id, tenant_label,
            tenant_integration_key, n)
        SELECT status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
               tenant_id, tenant_label, tenant_integration_key, SUM(n)
        FROM moves WHERE counted
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9
        HAVING SUM(n) <> 0
    ),
    facets AS (
        INSERT INTO investigation_facet_counts (facet, status, canceled, priority, alert_type,
            direct_source_label, tenant_union_id, tenant_id, tenant_label,
            tenant_integration_key, n)
        SELECT f.facet, f.status, f.canceled, f.priority, f.alert_type, f.direct_source_label,
               f.tenant_union_id, f.tenant_id, f.tenant_label, f.tenant_integration_key,
               SUM(m.n)
        FROM moves m
        CROSS JOIN LATERAL investigation_facets(m.status, m.canceled, m.priority,
            m.alert_type, m.direct_source_label, m.tenant_union_id, m.tenant_id,
            m.tenant_label, m.tenant_integration_key) f
        WHERE m.counted
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
        HAVING SUM(m.n) <> 0
    )
    INSERT INTO investigation_hour_counts (status, hour, n)
    SELECT status, alert_hour(alert_create_time), SUM(n)
    FROM moves WHERE timed
    GROUP BY 1, 2
    HAVING SUM(n) <> 0;
    RETURN NULL;
END $$;
CREATE TRIGGER investigation_counts_on_update AFTER UPDATE ON investigations
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION investigation_counts_on_update();
