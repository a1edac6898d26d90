-- Push sources: one URL per sending tool (sleuth_store::PushStore). The token is kept
-- only as its SHA-256 (hex); a signing secret is named, and kept in the secret store.
CREATE TABLE push_sources (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    -- sleuth_store::PushKind::as_str
    kind TEXT NOT NULL,
    token_hash TEXT NOT NULL,
    signing_secret TEXT,
    tenant_union_id INTEGER REFERENCES tenant_unions(id),
    enabled INTEGER NOT NULL DEFAULT 1,
    deliveries INTEGER NOT NULL DEFAULT 0,
    alerts_received INTEGER NOT NULL DEFAULT 0,
    last_delivery_at INTEGER,
    created_by INTEGER REFERENCES users(id),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
