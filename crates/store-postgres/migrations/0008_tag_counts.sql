-- Exact counts for the list's insight-tag filter (DESIGN.md section 1: `count` is the exact
-- total). Append-only, like every migration.
--
-- Counting the investigations that carry a tag means joining the tagged ones to
-- `investigations` for their state: for a tag on one investigation in seven of a million,
-- ~250 ms. Like `investigation_counts` (migration 0007), this table keeps the count per tag
-- name and combination of the equality-filtered columns, exact through the triggers below
-- in the same transaction as the change. A list filtered by one tag name sums its rows.
-- Several tag names cannot be summed (an investigation with two of them would count
-- twice), so those still count the rows.
--
-- As in 0007, the rows are deltas that the triggers only ever insert, so that concurrent
-- writers never wait on a shared counter; the store folds them in the background
-- (`fold_counts` in store-sql), which changes no sum.
CREATE TABLE investigation_tag_counts (
    name TEXT NOT NULL,
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
-- A list filtered by one tag reads only that tag's rows.
CREATE INDEX investigation_tag_counts_by_name ON investigation_tag_counts (name, status);

-- The trigger on `investigations` finds an investigation's tags by its id; without this
-- index every change of state would read the whole tag table (and so would the foreign
-- key's check when an investigation is deleted).
CREATE INDEX investigation_tags_by_investigation ON investigation_tags (investigation_id);

INSERT INTO investigation_tag_counts (name, status, canceled, priority, alert_type,
    direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key, n)
SELECT t.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
       i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key, COUNT(*)
FROM investigation_tags t JOIN investigations i ON i.id = t.investigation_id
GROUP BY t.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
    i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key;

-- Tags come in batches (one INSERT per finished batch): one statement-level trigger writes
-- one delta per combination in the batch, counted under the investigation's columns as
-- they are when the tag is written (the finish writer stores the outcome first). The
-- foreign key keeps an investigation in place while it has tags. Every trigger names its
-- transition tables `removed` and `added`.
CREATE FUNCTION investigation_tag_counts_on_tag_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO investigation_tag_counts (name, status, canceled, priority, alert_type,
            direct_source_label, tenant_union_id, tenant_id, tenant_label,
            tenant_integration_key, n)
        SELECT t.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
               i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key,
               -COUNT(*)
        FROM removed t JOIN investigations i ON i.id = t.investigation_id
        GROUP BY t.name, i.status, i.canceled, i.priority, i.alert_type,
            i.direct_source_label, i.tenant_union_id, i.tenant_id, i.tenant_label,
            i.tenant_integration_key;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO investigation_tag_counts (name, status, canceled, priority, alert_type,
            direct_source_label, tenant_union_id, tenant_id, tenant_label,
            tenant_integration_key, n)
        SELECT t.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
               i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key,
               COUNT(*)
        FROM added t JOIN investigations i ON i.id = t.investigation_id
        GROUP BY t.name, i.status, i.canceled, i.priority, i.alert_type,
            i.direct_source_label, i.tenant_union_id, i.tenant_id, i.tenant_label,
            i.tenant_integration_key;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER investigation_tag_counts_on_insert AFTER INSERT ON investigation_tags
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION investigation_tag_counts_on_tag_change();
CREATE TRIGGER investigation_tag_counts_on_delete AFTER DELETE ON investigation_tags
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION investigation_tag_counts_on_tag_change();
-- Nothing renames a tag or moves it today; counted anyway, so that nothing can forget it.
CREATE TRIGGER investigation_tag_counts_on_update AFTER UPDATE ON investigation_tags
    REFERENCING OLD TABLE AS removed NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION investigation_tag_counts_on_tag_change();

-- An investigation whose counted columns change moves its tags along. Only concluded
-- investigations have tags, and nothing changes these columns after that today, so this
-- usually finds no tag (claims and finishes fire it before the tags exist). Row by row
-- with a WHEN condition, as in 0007, so that updates of other columns cost nothing here.
CREATE FUNCTION investigation_tag_counts_on_investigation_update() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO investigation_tag_counts (name, status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key, n)
    SELECT t.name, OLD.status, OLD.canceled, OLD.priority, OLD.alert_type,
           OLD.direct_source_label, OLD.tenant_union_id, OLD.tenant_id, OLD.tenant_label,
           OLD.tenant_integration_key, -1
    FROM investigation_tags t WHERE t.investigation_id = OLD.id
    UNION ALL
    SELECT t.name, NEW.status, NEW.canceled, NEW.priority, NEW.alert_type,
           NEW.direct_source_label, NEW.tenant_union_id, NEW.tenant_id, NEW.tenant_label,
           NEW.tenant_integration_key, 1
    FROM investigation_tags t WHERE t.investigation_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER investigation_tag_counts_on_investigation_update AFTER UPDATE ON investigations
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.canceled IS DISTINCT FROM NEW.canceled
        OR OLD.priority IS DISTINCT FROM NEW.priority
        OR OLD.alert_type IS DISTINCT FROM NEW.alert_type
        OR OLD.direct_source_label IS DISTINCT FROM NEW.direct_source_label
        OR OLD.tenant_union_id IS DISTINCT FROM NEW.tenant_union_id
        OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id
        OR OLD.tenant_label IS DISTINCT FROM NEW.tenant_label
        OR OLD.tenant_integration_key IS DISTINCT FROM NEW.tenant_integration_key)
    EXECUTE FUNCTION investigation_tag_counts_on_investigation_update();
