-- Pull connectors (sleuth_store::ConnectorStore): a vendor's API polled on an interval.
-- `settings` is JSON checked by sleuth-connectors (secrets are only named there, and kept
-- in the secret store). `cursor` moves in the transaction that stores the page before it;
-- the lease (token, expiry) lets one poller at a time read a connector.
CREATE TABLE connectors (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    -- sleuth_connectors::Kind::as_str
    kind TEXT NOT NULL,
    settings TEXT NOT NULL,
    tenant_union_id BIGINT REFERENCES tenant_unions(id),
    enabled BIGINT NOT NULL DEFAULT 1,
    interval_seconds BIGINT NOT NULL,
    cursor TEXT,
    next_poll_at BIGINT NOT NULL,
    lease_token TEXT,
    lease_expires_at BIGINT,
    last_poll_at BIGINT,
    caught_up_at BIGINT,
    last_error TEXT,
    last_error_at BIGINT,
    failures BIGINT NOT NULL DEFAULT 0,
    polls BIGINT NOT NULL DEFAULT 0,
    pages BIGINT NOT NULL DEFAULT 0,
    alerts_taken BIGINT NOT NULL DEFAULT 0,
    alerts_known BIGINT NOT NULL DEFAULT 0,
    alerts_refused BIGINT NOT NULL DEFAULT 0,
    created_by BIGINT REFERENCES users(id),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
