-- The list's kept counts take their changes as appended deltas, folded in by the writer a
-- few times a second. Append-only, like every migration.
--
-- Until now every change of an investigation's counted columns updated its rows in place:
-- two rows of `investigation_counts`, twelve of `investigation_facet_counts`, the hour
-- counts, and per tag two of `investigation_tag_counts` and eight of
-- `investigation_tag_facet_counts`, each a row found by its JSON key, plus the rows of
-- their secondary indexes whenever a combination appeared or reached zero (a claim's
-- 'loading' rows did both, for every job). Those rows sit on pages scattered across the
-- tables, so each commit of a drain wrote a page per changed row: the count tables and
-- their indexes were 45 % of the pages a drain wrote to the WAL.
--
-- Now the triggers append one row per change to three delta tables (rowid order: the end
-- of the table, a page shared by the whole commit). The writer folds them into the kept
-- counts (store-sql's kept_counts.rs) in one transaction: the combinations are summed, a
-- claim's +1 and its finish's -1 cancel, and the facets are projected from the
-- combinations there, so the facet tables have no triggers any more. A list reads a kept
-- count and the unfolded deltas together, so it stays exact at every moment.

CREATE TABLE investigation_count_deltas (
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
);

CREATE TABLE investigation_tag_count_deltas (
    name TEXT NOT NULL,
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
);

CREATE TABLE investigation_hour_count_deltas (
    status TEXT NOT NULL,
    hour INTEGER NOT NULL,
    n INTEGER NOT NULL
);

DROP TRIGGER investigation_counts_on_insert;
DROP TRIGGER investigation_counts_on_delete;
DROP TRIGGER investigation_counts_on_update;
DROP TRIGGER investigation_facet_counts_on_insert;
DROP TRIGGER investigation_facet_counts_on_delete;
DROP TRIGGER investigation_facet_counts_on_update;
DROP TRIGGER investigation_hour_counts_on_insert;
DROP TRIGGER investigation_hour_counts_on_delete;
DROP TRIGGER investigation_hour_counts_on_update;
DROP TRIGGER investigation_tag_counts_on_insert;
DROP TRIGGER investigation_tag_counts_on_delete;
DROP TRIGGER investigation_tag_counts_on_update;
DROP TRIGGER investigation_tag_counts_on_investigation_update;
DROP TRIGGER investigation_tag_facet_counts_on_insert;
DROP TRIGGER investigation_tag_facet_counts_on_delete;
DROP TRIGGER investigation_tag_facet_counts_on_update;
DROP TRIGGER investigation_tag_facet_counts_on_investigation_update;

CREATE TRIGGER investigation_count_deltas_on_insert AFTER INSERT ON investigations
BEGIN
    INSERT INTO investigation_count_deltas (status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    VALUES (NEW.status, NEW.canceled, NEW.priority, NEW.alert_type, NEW.direct_source_label,
        NEW.tenant_union_id, NEW.tenant_id, NEW.tenant_label, NEW.tenant_integration_key, 1);
END;

CREATE TRIGGER investigation_count_deltas_on_delete AFTER DELETE ON investigations
BEGIN
    INSERT INTO investigation_count_deltas (status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    VALUES (OLD.status, OLD.canceled, OLD.priority, OLD.alert_type, OLD.direct_source_label,
        OLD.tenant_union_id, OLD.tenant_id, OLD.tenant_label, OLD.tenant_integration_key, -1);
END;

-- Only changes of a counted column move an investigation between combinations; feedback,
-- results and times do not fire this trigger at all.
CREATE TRIGGER investigation_count_deltas_on_update
AFTER UPDATE OF status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
    tenant_id, tenant_label, tenant_integration_key ON investigations
WHEN OLD.status IS NOT NEW.status OR OLD.canceled IS NOT NEW.canceled
    OR OLD.priority IS NOT NEW.priority OR OLD.alert_type IS NOT NEW.alert_type
    OR OLD.direct_source_label IS NOT NEW.direct_source_label
    OR OLD.tenant_union_id IS NOT NEW.tenant_union_id OR OLD.tenant_id IS NOT NEW.tenant_id
    OR OLD.tenant_label IS NOT NEW.tenant_label
    OR OLD.tenant_integration_key IS NOT NEW.tenant_integration_key
BEGIN
    INSERT INTO investigation_count_deltas (status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    VALUES (OLD.status, OLD.canceled, OLD.priority, OLD.alert_type, OLD.direct_source_label,
            OLD.tenant_union_id, OLD.tenant_id, OLD.tenant_label, OLD.tenant_integration_key,
            -1),
        (NEW.status, NEW.canceled, NEW.priority, NEW.alert_type, NEW.direct_source_label,
            NEW.tenant_union_id, NEW.tenant_id, NEW.tenant_label, NEW.tenant_integration_key,
            1);
END;

-- An hour is the UTC hour of the alert's creation, as whole hours since 1970 (floor
-- division, as in 0016).
CREATE TRIGGER investigation_hour_count_deltas_on_insert AFTER INSERT ON investigations
BEGIN
    INSERT INTO investigation_hour_count_deltas (status, hour, n)
    VALUES (NEW.status, (NEW.alert_create_time
        - ((NEW.alert_create_time % 3600000000) + 3600000000) % 3600000000) / 3600000000, 1);
END;

CREATE TRIGGER investigation_hour_count_deltas_on_delete AFTER DELETE ON investigations
BEGIN
    INSERT INTO investigation_hour_count_deltas (status, hour, n)
    VALUES (OLD.status, (OLD.alert_create_time
        - ((OLD.alert_create_time % 3600000000) + 3600000000) % 3600000000) / 3600000000, -1);
END;

CREATE TRIGGER investigation_hour_count_deltas_on_update
AFTER UPDATE OF status, alert_create_time ON investigations
WHEN OLD.status IS NOT NEW.status OR OLD.alert_create_time IS NOT NEW.alert_create_time
BEGIN
    INSERT INTO investigation_hour_count_deltas (status, hour, n)
    VALUES (OLD.status, (OLD.alert_create_time
            - ((OLD.alert_create_time % 3600000000) + 3600000000) % 3600000000) / 3600000000,
            -1),
        (NEW.status, (NEW.alert_create_time
            - ((NEW.alert_create_time % 3600000000) + 3600000000) % 3600000000) / 3600000000,
            1);
END;

-- A tag counts under its investigation's columns as they are when the tag is written (the
-- finish writer stores the outcome first). `foreign_keys` is on, so an investigation
-- always exists while it has tags: a tag is deleted before its investigation.
CREATE TRIGGER investigation_tag_count_deltas_on_insert AFTER INSERT ON investigation_tags
BEGIN
    INSERT INTO investigation_tag_count_deltas (name, status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    SELECT NEW.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
           i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key, 1
    FROM investigations i WHERE i.id = NEW.investigation_id;
END;

CREATE TRIGGER investigation_tag_count_deltas_on_delete AFTER DELETE ON investigation_tags
BEGIN
    INSERT INTO investigation_tag_count_deltas (name, status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    SELECT OLD.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
           i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key, -1
    FROM investigations i WHERE i.id = OLD.investigation_id;
END;

-- Nothing renames a tag or moves it today; counted anyway, so that nothing can forget it.
CREATE TRIGGER investigation_tag_count_deltas_on_update
AFTER UPDATE OF name, investigation_id ON investigation_tags
BEGIN
    INSERT INTO investigation_tag_count_deltas (name, status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    SELECT OLD.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
           i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key, -1
    FROM investigations i WHERE i.id = OLD.investigation_id
    UNION ALL
    SELECT NEW.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
           i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key, 1
    FROM investigations i WHERE i.id = NEW.investigation_id;
END;

-- An investigation whose counted columns change moves its tags along. Only concluded
-- investigations have tags, so claims and finishes (which change these columns before the
-- tags exist) find none.
CREATE TRIGGER investigation_tag_count_deltas_on_investigation_update
AFTER UPDATE OF status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
    tenant_id, tenant_label, tenant_integration_key ON investigations
WHEN OLD.status IS NOT NEW.status OR OLD.canceled IS NOT NEW.canceled
    OR OLD.priority IS NOT NEW.priority OR OLD.alert_type IS NOT NEW.alert_type
    OR OLD.direct_source_label IS NOT NEW.direct_source_label
    OR OLD.tenant_union_id IS NOT NEW.tenant_union_id OR OLD.tenant_id IS NOT NEW.tenant_id
    OR OLD.tenant_label IS NOT NEW.tenant_label
    OR OLD.tenant_integration_key IS NOT NEW.tenant_integration_key
BEGIN
    INSERT INTO investigation_tag_count_deltas (name, status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    SELECT t.name, OLD.status, OLD.canceled, OLD.priority, OLD.alert_type,
           OLD.direct_source_label, OLD.tenant_union_id, OLD.tenant_id, OLD.tenant_label,
           OLD.tenant_integration_key, -1
    FROM investigation_tags t WHERE t.investigation_id = OLD.id
    UNION ALL
    SELECT t.name, NEW.status, NEW.canceled, NEW.priority, NEW.alert_type,
           NEW.direct_source_label, NEW.tenant_union_id, NEW.tenant_id, NEW.tenant_label,
           NEW.tenant_integration_key, 1
    FROM investigation_tags t WHERE t.investigation_id = NEW.id;
END;
