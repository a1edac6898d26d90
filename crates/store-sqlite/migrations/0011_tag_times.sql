-- A list filtered by insight tags and an alert-creation time range (DESIGN.md section 1:
-- `count` is the exact total). Append-only, like every migration.
--
-- The kept tag counts (migration 0008) cannot answer a time range, so that list counted
-- every investigation carrying the tag: 140,000 lookups into `investigations` for a tag
-- on one investigation in seven of a million, ~750 ms. Each tag row now carries copies of
-- its investigation's state and alert creation time, so the index below answers the
-- count by itself, reading only the tagged investigations inside the range. The copies
-- are kept equal to the investigation's values by the triggers below, in the same
-- transaction as the change.
ALTER TABLE investigation_tags ADD COLUMN status TEXT;
ALTER TABLE investigation_tags ADD COLUMN alert_create_time INTEGER;

UPDATE investigation_tags SET (status, alert_create_time) =
    (SELECT i.status, i.alert_create_time FROM investigations i
     WHERE i.id = investigation_tags.investigation_id);

CREATE INDEX investigation_tags_by_time
    ON investigation_tags (name, status, alert_create_time, investigation_id);

-- The finish writer writes the copies with the tag (one write per tag); whatever writes a
-- tag without them, or with other values, is corrected here (a second write). The WHEN
-- looks the investigation up once, in a page the same transaction has just written.
CREATE TRIGGER investigation_tags_copy_on_insert AFTER INSERT ON investigation_tags
WHEN NOT EXISTS (SELECT 1 FROM investigations i WHERE i.id = NEW.investigation_id
    AND i.status IS NEW.status AND i.alert_create_time IS NEW.alert_create_time)
BEGIN
    UPDATE investigation_tags SET (status, alert_create_time) =
        (SELECT i.status, i.alert_create_time FROM investigations i
         WHERE i.id = NEW.investigation_id)
    WHERE name = NEW.name AND investigation_id = NEW.investigation_id;
END;

-- Nothing moves a tag or edits its copies today; corrected anyway, so that nothing can
-- leave a copy stale.
CREATE TRIGGER investigation_tags_copy_on_update
AFTER UPDATE OF investigation_id, status, alert_create_time ON investigation_tags
WHEN NOT EXISTS (SELECT 1 FROM investigations i WHERE i.id = NEW.investigation_id
    AND i.status IS NEW.status AND i.alert_create_time IS NEW.alert_create_time)
BEGIN
    UPDATE investigation_tags SET (status, alert_create_time) =
        (SELECT i.status, i.alert_create_time FROM investigations i
         WHERE i.id = NEW.investigation_id)
    WHERE name = NEW.name AND investigation_id = NEW.investigation_id;
END;

-- An investigation whose state or alert time changes carries its tags' copies along. Only
-- concluded investigations have tags, so claims and finishes (which change the state before
-- the tags exist) find none.
CREATE TRIGGER investigation_tags_copy_on_investigation_update
AFTER UPDATE OF status, alert_create_time ON investigations
WHEN OLD.status IS NOT NEW.status OR OLD.alert_create_time IS NOT NEW.alert_create_time
BEGIN
    UPDATE investigation_tags SET status = NEW.status, alert_create_time = NEW.alert_create_time
    WHERE investigation_id = NEW.id;
END;
