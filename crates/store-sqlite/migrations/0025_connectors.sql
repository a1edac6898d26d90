-- Pull connectors (sleuth_store::ConnectorStore): a vendor's API polled on an interval.
-- `settings` is JSON checked by sleuth-connectors (secrets are only named there, and kept
-- in the secret store). `cursor` moves in the transaction that stores the page before it;
-- the lease (token, expiry) lets one poller at a time read a connector.
CREATE TABLE connectors (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    -- sleuth_connectors::Kind::as_str
    kind TEXT NOT NULL,
    settings TEXT NOT NULL,
    tenant_union_id INTEGER REFERENCES tenant_unions(id),
    enabled INTEGER NOT NULL DEFAULT 1,
    interval_seconds INTEGER NOT NULL,
    cursor TEXT,
    next_poll_at INTEGER NOT NULL,
    lease_token TEXT,
    lease_expires_at INTEGER,
    last_poll_at INTEGER,
    caught_up_at INTEGER,
    last_error TEXT,
    last_error_at INTEGER,
    failures INTEGER NOT NULL DEFAULT 0,
    polls INTEGER NOT NULL DEFAULT 0,
    pages INTEGER NOT NULL DEFAULT 0,
    alerts_taken INTEGER NOT NULL DEFAULT 0,
    alerts_known INTEGER NOT NULL DEFAULT 0,
    alerts_refused INTEGER NOT NULL DEFAULT 0,
    created_by INTEGER REFERENCES users(id),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
