-- Revisions of an alert: the same source id sent again with other content
-- (sleuth_store::revisions). Only a delivery of a known alert writes here; a new alert
-- writes only its two new columns.

-- sleuth_store::canonical_hash of raw_alert_content. NULL for alerts stored before this
-- migration: the first delivery that meets one computes it and fills it in.
ALTER TABLE alerts ADD COLUMN content_hash TEXT;
-- Which revision of its identity this row holds. A row whose content is superseded by an
-- investigated later revision gives up the identity: it becomes '<identity>#<revision>',
-- so that `identity` always names the row of the latest investigated content.
ALTER TABLE alerts ADD COLUMN revision INTEGER NOT NULL DEFAULT 1;

-- Deliveries of an alert sent more than once; no row for an alert seen once.
CREATE TABLE alert_sightings (
    identity TEXT PRIMARY KEY,
    -- Deliveries, the first included.
    seen_count INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    -- The latest distinct content received, which a resend is compared with.
    latest_revision INTEGER NOT NULL,
    latest_content_hash TEXT NOT NULL
);

-- Every distinct content of an alert that has more than one; revision 1 is the first.
CREATE TABLE alert_revisions (
    id INTEGER PRIMARY KEY,
    identity TEXT NOT NULL,
    revision INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    raw_alert_content TEXT NOT NULL,
    severity TEXT,
    -- JSON (sleuth_store::Changes): the paths that differ from the revision before.
    changes TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    -- Set when this content was investigated.
    investigation_id INTEGER REFERENCES investigations(id),
    UNIQUE (identity, revision)
);
