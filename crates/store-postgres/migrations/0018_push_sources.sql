-- Push sources: one URL per sending tool (sleuth_store::PushStore). The token is kept
-- only as its SHA-256 (hex); a signing secret is named, and kept in the secret store.
CREATE TABLE push_sources (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    -- sleuth_store::PushKind::as_str
    kind TEXT NOT NULL,
    token_hash TEXT NOT NULL,
    signing_secret TEXT,
    tenant_union_id BIGINT REFERENCES tenant_unions(id),
    enabled BIGINT NOT NULL DEFAULT 1,
    deliveries BIGINT NOT NULL DEFAULT 0,
    alerts_received BIGINT NOT NULL DEFAULT 0,
    last_delivery_at BIGINT,
    created_by BIGINT REFERENCES users(id),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
