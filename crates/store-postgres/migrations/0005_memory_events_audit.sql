-- Context memory, system events and the audit log on PostgreSQL. Append-only, like every
-- migration. Times are BIGINT microseconds since the Unix epoch (UTC); JSON is TEXT.

-- The operator's knowledge in plain words, scoped to everyone (no tenant union, no tenant
-- id), to a tenant union, to a tenant id, or to both at once.
CREATE TABLE context_memory_items (
    id BIGSERIAL PRIMARY KEY,
    text TEXT NOT NULL,
    tenant_union_id BIGINT REFERENCES tenant_unions(id),
    tenant_id TEXT,
    tenant_label TEXT,
    -- [{"entity": {"type", "value"}, "verdict", "note"}]
    hints TEXT NOT NULL,
    -- [{"type", "value"}]: the entities found in the text.
    entities TEXT NOT NULL,
    -- The text and entity values in lower case, for the list's free-text filter.
    search_text TEXT NOT NULL,
    created_by BIGINT REFERENCES users(id),
    updated_by BIGINT REFERENCES users(id),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX context_memory_items_by_union ON context_memory_items (tenant_union_id);
CREATE INDEX context_memory_items_by_tenant ON context_memory_items (tenant_id);

-- Every entity an item names (from its text and its hints) under the key history looks
-- it up by (see sleuth_store::memory_key).
CREATE TABLE context_memory_entities (
    item_id BIGINT NOT NULL REFERENCES context_memory_items(id) ON DELETE CASCADE,
    match_key TEXT NOT NULL,
    kind TEXT NOT NULL,
    value TEXT NOT NULL,
    -- Set for hinted entities.
    verdict TEXT,
    note TEXT
);
CREATE INDEX context_memory_entities_by_key ON context_memory_entities (match_key, item_id);
CREATE INDEX context_memory_entities_by_item ON context_memory_entities (item_id);

-- One row per trigger that fired, scripts or not.
CREATE TABLE system_events (
    id BIGSERIAL PRIMARY KEY,
    trigger_name TEXT NOT NULL,
    trigger_args TEXT NOT NULL,
    -- The arguments in lower case, for the free-text filter.
    search_text TEXT NOT NULL,
    investigation_id BIGINT,
    entity TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX system_events_by_time ON system_events (created_at, id);
CREATE INDEX system_events_by_trigger ON system_events (trigger_name, created_at);

-- The hash chain: seq counts from 1 without gaps; hash = SHA-256 of the canonical content
-- (prev_hash included). Written only by appends, which lock the chain head.
CREATE TABLE audit_log (
    seq BIGINT PRIMARY KEY,
    at BIGINT NOT NULL,
    actor_user_id BIGINT,
    actor_email TEXT,
    action TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id TEXT,
    request_id TEXT,
    detail TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX audit_log_by_time ON audit_log (at);
CREATE INDEX audit_log_by_actor ON audit_log (actor_user_id);

-- The last entry's sequence number and hash. Appends take this row FOR UPDATE, which
-- serialises them across every process; and a cut-off tail is detectable.
CREATE TABLE audit_chain_head (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO audit_chain_head (id, seq, hash)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

-- The log is append-only for Sleuth and for anyone using the database by mistake; the hash
-- chain is what catches someone who removes these triggers first.
CREATE FUNCTION audit_log_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only';
END;
$$;
CREATE TRIGGER audit_log_no_change BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_is_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_is_append_only();
