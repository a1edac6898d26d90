-- Sleuth's first schema on SQLite. Append-only: never edit once released; add a new file.
-- Times are INTEGER microseconds since the Unix epoch (UTC); JSON is TEXT; flags are 0/1.

CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    first_name TEXT NOT NULL DEFAULT '',
    last_name TEXT NOT NULL DEFAULT '',
    role TEXT NOT NULL,
    oidc_user_id TEXT,
    is_active INTEGER NOT NULL DEFAULT 1,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE api_keys (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    key_prefix TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at INTEGER
);

CREATE TABLE tenant_unions (
    id INTEGER PRIMARY KEY,
    display_name TEXT NOT NULL UNIQUE,
    lookup_dict TEXT NOT NULL DEFAULT '{}',
    last_modified_by INTEGER REFERENCES users(id),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
-- Every alert belongs to a tenant union; alerts that name none join this one, id 1.
INSERT INTO tenant_unions (id, display_name, lookup_dict, created_at, updated_at)
VALUES (1, 'Default', '{}', CAST(strftime('%s', 'now') AS INTEGER) * 1000000, CAST(strftime('%s', 'now') AS INTEGER) * 1000000);

CREATE TABLE alerts (
    id INTEGER PRIMARY KEY,
    -- The dedupe identity (sleuth_store::alert_identity): one row per alert per tenant.
    identity TEXT NOT NULL UNIQUE,
    tenant_union_id INTEGER NOT NULL REFERENCES tenant_unions(id),
    tenant_integration_key TEXT,
    -- The parser's reading of the alert (sleuth_domain::ParsedAlert as JSON).
    parsed TEXT NOT NULL,
    -- Exactly the JSON text received.
    raw_alert_content TEXT NOT NULL,
    enrich_result TEXT,
    direct_source_label TEXT NOT NULL,
    coalesce_key TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX alerts_by_source ON alerts (direct_source_label, tenant_union_id, created_at);
CREATE INDEX alerts_by_coalesce_key ON alerts (coalesce_key, created_at) WHERE coalesce_key IS NOT NULL;

-- Entities per alert, for correlation ("which earlier alerts named this IP?").
CREATE TABLE alert_entities (
    kind TEXT NOT NULL,
    value TEXT NOT NULL,
    alert_id INTEGER NOT NULL REFERENCES alerts(id),
    PRIMARY KEY (kind, value, alert_id)
) WITHOUT ROWID;

CREATE TABLE investigations (
    id INTEGER PRIMARY KEY,
    alert_id INTEGER NOT NULL REFERENCES alerts(id),
    status TEXT NOT NULL,
    canceled TEXT,
    outcome TEXT,
    priority TEXT,
    -- 0 none, 1 informational, 2 notable, 3 urgent: sorts by priority.
    priority_rank INTEGER NOT NULL DEFAULT 0,
    error_msg TEXT,
    -- The engine's conclusion (sleuth_domain::InvestigationResult as JSON) once success.
    result TEXT,
    ignored_for INTEGER REFERENCES investigations(id),
    is_retried INTEGER NOT NULL DEFAULT 0,
    start_time INTEGER,
    generated_time INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    -- Copies of the alert's filter and sort keys, so that listing never joins to filter.
    alert_create_time INTEGER NOT NULL,
    alert_start_time INTEGER,
    alert_type TEXT NOT NULL,
    direct_source_label TEXT NOT NULL,
    tenant_union_id INTEGER NOT NULL,
    tenant_id TEXT,
    tenant_label TEXT,
    tenant_integration_key TEXT,
    -- The investigation's feedback, one-to-one (its id is the investigation's id).
    feedback_status TEXT NOT NULL DEFAULT 'in_review',
    feedback_outcome TEXT,
    feedback_priority TEXT,
    feedback_outcome_note TEXT,
    feedback_remediations_done TEXT NOT NULL DEFAULT '{}',
    feedback_updated_by INTEGER REFERENCES users(id),
    feedback_created_at INTEGER NOT NULL,
    feedback_updated_at INTEGER NOT NULL
);
CREATE INDEX investigations_by_alert ON investigations (alert_id, id);
CREATE INDEX investigations_by_alert_create ON investigations (status, alert_create_time, id);
CREATE INDEX investigations_by_alert_start ON investigations (status, alert_start_time, id);
CREATE INDEX investigations_by_created ON investigations (status, created_at, id);
CREATE INDEX investigations_by_completed ON investigations (status, generated_time, id);
CREATE INDEX investigations_by_updated ON investigations (status, updated_at, id);
CREATE INDEX investigations_by_priority ON investigations (status, priority_rank, alert_create_time, id);
CREATE INDEX investigations_by_source ON investigations (direct_source_label, status, alert_create_time, id);
CREATE INDEX investigations_by_type ON investigations (alert_type, status, alert_create_time, id);
CREATE INDEX investigations_by_tenant ON investigations (tenant_id, status, alert_create_time, id);
CREATE INDEX investigations_by_feedback ON investigations (status, feedback_updated_at, id);

CREATE TABLE investigation_tags (
    name TEXT NOT NULL,
    investigation_id INTEGER NOT NULL REFERENCES investigations(id),
    PRIMARY KEY (name, investigation_id)
) WITHOUT ROWID;

-- The queue: one row per investigation waiting or running. A row whose lease expired
-- belongs to a dead worker and is claimed again.
CREATE TABLE jobs (
    investigation_id INTEGER PRIMARY KEY REFERENCES investigations(id),
    ready_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_token TEXT,
    lease_expires_at INTEGER
);
CREATE INDEX jobs_by_lease ON jobs (lease_expires_at, ready_at);

-- Free-text search over each investigation; rowid is the investigation id.
CREATE VIRTUAL TABLE investigation_search USING fts5(
    body,
    content = '',
    contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2'
);
