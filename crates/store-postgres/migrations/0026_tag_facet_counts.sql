-- Counts for the list's insight-tag filter whose cost does not grow with how many distinct
-- types, sources and tenants there are. Append-only, like every migration.
--
-- `investigation_tag_counts` (0008) keeps one row per tag name and combination of every
-- equality-filtered column, so a list filtered by a tag summed a row for every type,
-- source and tenant ever seen with it. This table keeps the same counts per tag and facet,
-- as `investigation_facet_counts` (0021) does without tags, with its facets
-- (`investigation_facets`): a list filtered by tags whose equality filters name at most
-- one of type, source and tenant sums the rows of that facet.
--
-- As in 0008, the rows are deltas that the triggers only ever insert, so that concurrent
-- writers never wait on a shared counter; the store folds them in the background
-- (`fold_counts` in store-sql), which drops the combinations whose sum is zero.
CREATE TABLE investigation_tag_facet_counts (
    name TEXT NOT NULL,
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
-- A list filtered by tags reads only those tags' rows of one facet.
CREATE INDEX investigation_tag_facet_counts_by_name
    ON investigation_tag_facet_counts (name, facet, status);

INSERT INTO investigation_tag_facet_counts (name, facet, status, canceled, priority,
    alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
    tenant_integration_key, n)
SELECT c.name, f.facet, f.status, f.canceled, f.priority, f.alert_type,
       f.direct_source_label, f.tenant_union_id, f.tenant_id, f.tenant_label,
       f.tenant_integration_key, SUM(c.n)
FROM investigation_tag_counts c
CROSS JOIN LATERAL investigation_facets(c.status, c.canceled, c.priority, c.alert_type,
    c.direct_source_label, c.tenant_union_id, c.tenant_id, c.tenant_label,
    c.tenant_integration_key) f
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
HAVING SUM(c.n) <> 0;

-- Tags come in batches (one INSERT per finished batch): one statement-level trigger writes
-- one delta per combination in the batch, counted under the investigation's columns as
-- they are when the tag is written, as in 0008. Every trigger names its transition tables
-- `removed` and `added`.
CREATE FUNCTION investigation_tag_facet_counts_on_tag_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO investigation_tag_facet_counts (name, facet, status, canceled, priority,
            alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
            tenant_integration_key, n)
        SELECT t.name, f.facet, f.status, f.canceled, f.priority, f.alert_type,
               f.direct_source_label, f.tenant_union_id, f.tenant_id, f.tenant_label,
               f.tenant_integration_key, -COUNT(*)
        FROM removed t JOIN investigations i ON i.id = t.investigation_id
        CROSS JOIN LATERAL investigation_facets(i.status, i.canceled, i.priority,
            i.alert_type, i.direct_source_label, i.tenant_union_id, i.tenant_id,
            i.tenant_label, i.tenant_integration_key) f
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO investigation_tag_facet_counts (name, facet, status, canceled, priority,
            alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
            tenant_integration_key, n)
        SELECT t.name, f.facet, f.status, f.canceled, f.priority, f.alert_type,
               f.direct_source_label, f.tenant_union_id, f.tenant_id, f.tenant_label,
               f.tenant_integration_key, COUNT(*)
        FROM added t JOIN investigations i ON i.id = t.investigation_id
        CROSS JOIN LATERAL investigation_facets(i.status, i.canceled, i.priority,
            i.alert_type, i.direct_source_label, i.tenant_union_id, i.tenant_id,
            i.tenant_label, i.tenant_integration_key) f
        GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER investigation_tag_facet_counts_on_insert AFTER INSERT ON investigation_tags
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION investigation_tag_facet_counts_on_tag_change();
CREATE TRIGGER investigation_tag_facet_counts_on_delete AFTER DELETE ON investigation_tags
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION investigation_tag_facet_counts_on_tag_change();
-- Nothing renames a tag or moves it today; counted anyway, so that nothing can forget it.
CREATE TRIGGER investigation_tag_facet_counts_on_update AFTER UPDATE ON investigation_tags
    REFERENCING OLD TABLE AS removed NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION investigation_tag_facet_counts_on_tag_change();

-- An investigation whose counted columns change moves its tags along. Only concluded
-- investigations have tags, so claims and finishes find none. Row by row with a WHEN
-- condition, as in 0008, so that updates of other columns cost nothing here.
CREATE FUNCTION investigation_tag_facet_counts_on_investigation_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO investigation_tag_facet_counts (name, facet, status, canceled, priority,
        alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label,
        tenant_integration_key, n)
    SELECT t.name, f.facet, f.status, f.canceled, f.priority, f.alert_type,
           f.direct_source_label, f.tenant_union_id, f.tenant_id, f.tenant_label,
           f.tenant_integration_key, -1
    FROM investigation_tags t
    CROSS JOIN LATERAL investigation_facets(OLD.status, OLD.canceled, OLD.priority,
        OLD.alert_type, OLD.direct_source_label, OLD.tenant_union_id, OLD.tenant_id,
        OLD.tenant_label, OLD.tenant_integration_key) f
    WHERE t.investigation_id = OLD.id
    UNION ALL
    SELECT t.name, f.facet, f.status, f.canceled, f.priority, f.alert_type,
           f.direct_source_label, f.tenant_union_id, f.tenant_id, f.tenant_label,
           f.tenant_integration_key, 1
    FROM investigation_tags t
    CROSS JOIN LATERAL investigation_facets(NEW.status, NEW.canceled, NEW.priority,
        NEW.alert_type, NEW.direct_source_label, NEW.tenant_union_id, NEW.tenant_id,
        NEW.tenant_label, NEW.tenant_integration_key) f
    WHERE t.investigation_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER investigation_tag_facet_counts_on_investigation_update
    AFTER UPDATE ON investigations
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.canceled IS DISTINCT FROM NEW.canceled
        OR OLD.priority IS DISTINCT FROM NEW.priority
        OR OLD.alert_type IS DISTINCT FROM NEW.alert_type
        OR OLD.direct_source_label IS DISTINCT FROM NEW.direct_source_label
        OR OLD.tenant_union_id IS DISTINCT FROM NEW.tenant_union_id
        OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id
        OR OLD.tenant_label IS DISTINCT FROM NEW.tenant_label
        OR OLD.tenant_integration_key IS DISTINCT FROM NEW.tenant_integration_key)
    EXECUTE FUNCTION investigation_tag_facet_counts_on_investigation_update();
