-- Notifications (sleuth_store::NotificationStore): destinations and the log of what was
-- delivered to each. The outbox is system_events, written with the investigation's
-- conclusion; a destination's `cursor` is the last system event it has considered, moved
-- in the transaction that queues the deliveries of the events before it. Settings name
-- secrets of the secret store, never hold them. The lease (token, expiry) lets one
-- deliverer at a time send to a destination.
CREATE TABLE notification_destinations (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    -- sleuth_notify::destination::Kind::as_str
    kind TEXT NOT NULL,
    settings TEXT NOT NULL,
    rule TEXT NOT NULL,
    template TEXT,
    enabled INTEGER NOT NULL DEFAULT 1,
    rate_limit_per_minute INTEGER,
    cursor INTEGER NOT NULL,
    paused_until INTEGER,
    lease_token TEXT,
    lease_expires_at INTEGER,
    last_error TEXT,
    last_error_at INTEGER,
    last_delivered_at INTEGER,
    created_by INTEGER REFERENCES users(id),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

-- One row per event per destination. `system_event_id` is no foreign key: retention may
-- delete the event, and the row keeps what was sent (`event`, the rendered input).
CREATE TABLE notification_deliveries (
    id INTEGER PRIMARY KEY,
    destination_id INTEGER NOT NULL REFERENCES notification_destinations(id) ON DELETE CASCADE,
    system_event_id INTEGER,
    event_id TEXT NOT NULL,
    event TEXT NOT NULL,
    -- pending, delivered or dead
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    last_error TEXT,
    delivered_detail TEXT,
    delivered_at INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX notification_deliveries_once
    ON notification_deliveries (destination_id, system_event_id);
CREATE INDEX notification_deliveries_due
    ON notification_deliveries (destination_id, next_attempt_at) WHERE state = 'pending';
CREATE INDEX notification_deliveries_by_state
    ON notification_deliveries (destination_id, state, id);
