-- A list filtered by insight tags and an alert-creation time range (DESIGN.md section 1:
-- `count` is the exact total). Append-only, like every migration.
--
-- The kept tag counts (migration 0008) cannot answer a time range, so that list joined
-- every investigation carrying the tag to `investigations`: 140,000 rows for a tag on one
-- investigation in seven of a million. Each tag row now carries copies of its
-- investigation's state and alert creation time, so the index below answers the count by
-- itself, reading only the tagged investigations inside the range. The copies are kept
-- equal to the investigation's values by the triggers below, in the same transaction as
-- the change.
ALTER TABLE investigation_tags ADD COLUMN status TEXT, ADD COLUMN alert_create_time BIGINT;

UPDATE investigation_tags t SET status = i.status, alert_create_time = i.alert_create_time
FROM investigations i WHERE i.id = t.investigation_id;

CREATE INDEX investigation_tags_by_time
    ON investigation_tags (name, status, alert_create_time, investigation_id);

-- Whatever writes a tag, the copies are the investigation's. The foreign key keeps the
-- investigation in place while it has tags.
CREATE FUNCTION investigation_tags_copy() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    SELECT i.status, i.alert_create_time INTO NEW.status, NEW.alert_create_time
    FROM investigations i WHERE i.id = NEW.investigation_id;
    RETURN NEW;
END $$;
CREATE TRIGGER investigation_tags_copy BEFORE INSERT OR UPDATE ON investigation_tags
    FOR EACH ROW EXECUTE FUNCTION investigation_tags_copy();

-- An investigation whose state or alert time changes carries its tags' copies along. Only
-- concluded investigations have tags, so claims and finishes (which change the state before
-- the tags exist) stop at the EXISTS.
CREATE FUNCTION investigation_tags_follow_investigation() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM investigation_tags t WHERE t.investigation_id = NEW.id) THEN
        UPDATE investigation_tags
        SET status = NEW.status, alert_create_time = NEW.alert_create_time
        WHERE investigation_id = NEW.id;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER investigation_tags_follow_investigation AFTER UPDATE ON investigations
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status
        OR OLD.alert_create_time IS DISTINCT FROM NEW.alert_create_time)
    EXECUTE FUNCTION investigation_tags_follow_investigation();
