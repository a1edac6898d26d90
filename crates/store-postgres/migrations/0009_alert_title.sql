-- The alert's title on its investigation, beside the alert's type, source and time that
-- migration 0001 already copies there. An investigation's history shows earlier related
-- alerts by title; reading it from each earlier alert's stored JSON (a few KB, parsed once
-- per earlier alert, up to hundreds per new alert) was the largest single cost of an
-- investigation. Append-only, like every migration.
ALTER TABLE investigations ADD COLUMN alert_title TEXT;
UPDATE investigations i SET alert_title = a.parsed::json ->> 'title'
    FROM alerts a WHERE a.id = i.alert_id;
