-- The whole SQLite schema after every migration, written by the schema test of this crate
-- (never by hand): `SLEUTH_WRITE_SCHEMA=1 cargo test --test schema` rewrites it. Read it
-- to know the database; the migrations say how it came to be.

CREATE VIRTUAL TABLE alert_entities_by_union USING fts5(
    tokens,
    content = '',
    contentless_delete = 1,
    detail = none
);

CREATE TABLE 'alert_entities_by_union_config'(k PRIMARY KEY, v) WITHOUT ROWID;

CREATE TABLE 'alert_entities_by_union_data'(id INTEGER PRIMARY KEY, block BLOB);

CREATE TABLE 'alert_entities_by_union_docsize'(id INTEGER PRIMARY KEY, sz BLOB, origin INTEGER);

CREATE TABLE 'alert_entities_by_union_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;

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

CREATE TABLE alert_sightings (
    identity TEXT PRIMARY KEY,
    -- Deliveries, the first included.
    seen_count INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    -- The latest distinct content received, which a resend is compared with.
    latest_revision INTEGER NOT NULL,
    latest_content_hash TEXT NOT NULL
);

CREATE TABLE alert_source_counters (
    direct_source_label TEXT NOT NULL,
    tenant_union_id INTEGER NOT NULL,
    last_position INTEGER NOT NULL,
    PRIMARY KEY (direct_source_label, tenant_union_id)
) WITHOUT ROWID;

CREATE TABLE alert_source_positions (
    alert_id INTEGER PRIMARY KEY,
    direct_source_label TEXT NOT NULL,
    tenant_union_id INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    position INTEGER NOT NULL
);

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
, content_hash TEXT, revision INTEGER NOT NULL DEFAULT 1);

CREATE TABLE api_keys (
    id INTEGER PRIMARY KEY,
    user_id INTEGER NOT NULL REFERENCES users(id),
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    key_prefix TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at INTEGER
, tenant_union_ids TEXT);

CREATE TABLE audit_chain_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL
);

CREATE TABLE audit_entry_unions (
    seq INTEGER PRIMARY KEY REFERENCES audit_log(seq),
    tenant_union_id INTEGER NOT NULL
);

CREATE TABLE audit_log (
    seq INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    actor_user_id INTEGER,
    actor_email TEXT,
    action TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id TEXT,
    request_id TEXT,
    detail TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);

CREATE TABLE connector_writebacks (
    id INTEGER PRIMARY KEY,
    connector_id INTEGER NOT NULL REFERENCES connectors(id) ON DELETE CASCADE,
    investigation_id INTEGER NOT NULL REFERENCES investigations(id) ON DELETE CASCADE,
    vendor_alert_id TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL,
    last_error TEXT,
    sent_at INTEGER,
    created_at INTEGER NOT NULL
);

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
, writebacks_sent INTEGER NOT NULL DEFAULT 0, last_writeback_error TEXT, last_writeback_error_at INTEGER);

CREATE TABLE console_sessions (
    id INTEGER PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf_secret TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);

CREATE TABLE context_documents (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    -- The document as TOML text, exactly as validated on the way in.
    document TEXT NOT NULL,
    updated_by INTEGER REFERENCES users(id),
    updated_at INTEGER NOT NULL
);

CREATE TABLE context_memory_entities (
    item_id INTEGER NOT NULL REFERENCES context_memory_items(id) ON DELETE CASCADE,
    match_key TEXT NOT NULL,
    kind TEXT NOT NULL,
    value TEXT NOT NULL,
    -- Set for hinted entities.
    verdict TEXT,
    note TEXT
);

CREATE TABLE context_memory_items (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    text TEXT NOT NULL,
    tenant_union_id INTEGER REFERENCES tenant_unions(id),
    tenant_id TEXT,
    tenant_label TEXT,
    -- [{"entity": {"type", "value"}, "verdict", "note"}]
    hints TEXT NOT NULL,
    -- [{"type", "value"}]: the entities found in the text.
    entities TEXT NOT NULL,
    -- The text and entity values in lower case, for the list's free-text filter.
    search_text TEXT NOT NULL,
    created_by INTEGER REFERENCES users(id),
    updated_by INTEGER REFERENCES users(id),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE custom_strategies (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    -- Random for strategies made over the API; a stable v5 uuid for the ones Sleuth ships,
    -- which is how start-up finds out whether they exist yet.
    internal_origin_uuid TEXT NOT NULL UNIQUE,
    is_enabled INTEGER NOT NULL,
    is_archived INTEGER NOT NULL DEFAULT 0,
    -- Sleuth's own: never changed, disabled or archived.
    is_protected INTEGER NOT NULL DEFAULT 0,
    -- Counted when a result is stored, in the same transaction (see store-sql/strategies.rs).
    total_conclusions_affected INTEGER NOT NULL DEFAULT 0,
    total_instructions_used INTEGER NOT NULL DEFAULT 0,
    total_priorities_affected INTEGER NOT NULL DEFAULT 0,
    created_by INTEGER REFERENCES users(id),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE data_sources (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    definition TEXT NOT NULL,
    limits TEXT NOT NULL,
    tenant_union_id INTEGER REFERENCES tenant_unions(id),
    enabled INTEGER NOT NULL DEFAULT 1,
    revision INTEGER NOT NULL DEFAULT 1,
    created_by INTEGER REFERENCES users(id),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE investigation_count_deltas (
    status TEXT NOT NULL,
    canceled TEXT,
    priority TEXT,
    alert_type TEXT NOT NULL,
    direct_source_label TEXT NOT NULL,
    tenant_union_id INTEGER NOT NULL,
    tenant_id TEXT,
    tenant_label TEXT,
    tenant_integration_key TEXT,
    n INTEGER NOT NULL
);

CREATE TABLE investigation_counts (
    -- The combination below as a JSON array: a key that tells NULL from any text.
    group_key TEXT PRIMARY KEY,
    -- The same names as in `investigations`, so that the list's filters apply unchanged.
    status TEXT NOT NULL,
    canceled TEXT,
    priority TEXT,
    alert_type TEXT NOT NULL,
    direct_source_label TEXT NOT NULL,
    tenant_union_id INTEGER NOT NULL,
    tenant_id TEXT,
    tenant_label TEXT,
    tenant_integration_key TEXT,
    n INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE investigation_facet_counts (
    -- The facet and its combination as a JSON array: a key that tells NULL from any text.
    group_key TEXT PRIMARY KEY,
    facet TEXT NOT NULL,
    status TEXT NOT NULL,
    canceled TEXT,
    priority TEXT,
    alert_type TEXT,
    direct_source_label TEXT,
    tenant_union_id INTEGER,
    tenant_id TEXT,
    tenant_label TEXT,
    tenant_integration_key TEXT,
    n INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE investigation_hour_count_deltas (
    status TEXT NOT NULL,
    hour INTEGER NOT NULL,
    n INTEGER NOT NULL
);

CREATE TABLE investigation_hour_counts (
    status TEXT NOT NULL,
    hour INTEGER NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (status, hour)
) WITHOUT ROWID;

CREATE TABLE investigation_notes (
    id INTEGER PRIMARY KEY,
    investigation_id INTEGER NOT NULL REFERENCES investigations(id),
    -- The author: only they, or an admin, may change or delete the note.
    user_id INTEGER NOT NULL REFERENCES users(id),
    text TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE investigation_results (
    investigation_id INTEGER PRIMARY KEY REFERENCES investigations(id),
    result TEXT NOT NULL
);

CREATE VIRTUAL TABLE investigation_search USING fts5(
    body,
    content = '',
    contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE TABLE 'investigation_search_config'(k PRIMARY KEY, v) WITHOUT ROWID;

CREATE TABLE 'investigation_search_data'(id INTEGER PRIMARY KEY, block BLOB);

CREATE TABLE 'investigation_search_docsize'(id INTEGER PRIMARY KEY, sz BLOB, origin INTEGER);

CREATE TABLE 'investigation_search_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;

CREATE TABLE investigation_tag_count_deltas (
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    canceled TEXT,
    priority TEXT,
    alert_type TEXT NOT NULL,
    direct_source_label TEXT NOT NULL,
    tenant_union_id INTEGER NOT NULL,
    tenant_id TEXT,
    tenant_label TEXT,
    tenant_integration_key TEXT,
    n INTEGER NOT NULL
);

CREATE TABLE investigation_tag_counts (
    -- The tag name and the combination below as a JSON array: tells NULL from any text.
    group_key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    -- The same names as in `investigations`, so that the list's filters apply unchanged.
    status TEXT NOT NULL,
    canceled TEXT,
    priority TEXT,
    alert_type TEXT NOT NULL,
    direct_source_label TEXT NOT NULL,
    tenant_union_id INTEGER NOT NULL,
    tenant_id TEXT,
    tenant_label TEXT,
    tenant_integration_key TEXT,
    n INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE investigation_tag_facet_counts (
    -- The tag name, the facet and its combination as a JSON array: tells NULL from text.
    group_key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    facet TEXT NOT NULL,
    status TEXT NOT NULL,
    canceled TEXT,
    priority TEXT,
    alert_type TEXT,
    direct_source_label TEXT,
    tenant_union_id INTEGER,
    tenant_id TEXT,
    tenant_label TEXT,
    tenant_integration_key TEXT,
    n INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE investigation_tags (
    name TEXT NOT NULL,
    investigation_id INTEGER NOT NULL REFERENCES investigations(id), status TEXT, alert_create_time INTEGER,
    PRIMARY KEY (name, investigation_id)
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
, alert_title TEXT);

CREATE TABLE jobs (
    investigation_id INTEGER PRIMARY KEY REFERENCES investigations(id),
    ready_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_token TEXT,
    lease_expires_at INTEGER
);

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

CREATE TABLE response_script_versions (
    id INTEGER PRIMARY KEY,
    script_id INTEGER NOT NULL REFERENCES response_scripts(id),
    v_num INTEGER NOT NULL,
    code TEXT NOT NULL,
    author_id INTEGER NOT NULL REFERENCES users(id),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (script_id, v_num)
);

CREATE TABLE response_scripts (
    id INTEGER PRIMARY KEY,
    display_name TEXT NOT NULL,
    trigger_uuid TEXT NOT NULL REFERENCES trigger_definitions(uuid),
    is_enabled INTEGER NOT NULL DEFAULT 1,
    is_archived INTEGER NOT NULL DEFAULT 0,
    allow_network INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
, secret_names TEXT NOT NULL DEFAULT '[]');

CREATE TABLE schema_migrations (
    version BIGINT PRIMARY KEY,
    name TEXT NOT NULL,
    checksum TEXT NOT NULL,
    applied_at BIGINT NOT NULL
);

CREATE TABLE script_runs (
    id INTEGER PRIMARY KEY,
    script_id INTEGER NOT NULL REFERENCES response_scripts(id),
    script_version_id INTEGER NOT NULL REFERENCES response_script_versions(id),
    trigger_run_id INTEGER NOT NULL REFERENCES trigger_runs(id),
    status TEXT NOT NULL,
    stdout TEXT,
    stderr TEXT,
    syserr TEXT,
    isolation TEXT,
    duration_ms INTEGER,
    -- The process that runs it, and the time by which a live runner has ended it: a
    -- running run whose runner is gone or whose deadline passed was interrupted.
    runner TEXT NOT NULL,
    deadline_at INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE script_secrets (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
, key_id TEXT);

CREATE TABLE search_marks (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    unmarked_through INTEGER NOT NULL
);

CREATE TABLE strategy_generation (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
);

CREATE TABLE strategy_instructions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    strategy_id INTEGER NOT NULL REFERENCES custom_strategies(id),
    content TEXT NOT NULL,
    internal_origin_uuid TEXT,
    usage_count INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);

CREATE TABLE strategy_outcome_rules (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    strategy_id INTEGER NOT NULL REFERENCES custom_strategies(id),
    -- JSON Logic, as JSON text.
    condition_json TEXT NOT NULL,
    outcome TEXT NOT NULL,
    internal_origin_uuid TEXT,
    conclusions_affected INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);

CREATE TABLE strategy_priority_rules (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    strategy_id INTEGER NOT NULL REFERENCES custom_strategies(id),
    priority TEXT NOT NULL,
    ranking INTEGER NOT NULL CHECK (ranking BETWEEN 1 AND 2147483647),
    -- JSON array of outcomes (at least one).
    outcomes TEXT NOT NULL,
    -- JSON Logic object, or NULL.
    insight_tag_rule TEXT,
    internal_origin_uuid TEXT,
    priorities_affected INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);

CREATE TABLE strategy_version_rules (
    version_id INTEGER NOT NULL REFERENCES strategy_versions(id),
    kind TEXT NOT NULL CHECK (kind IN ('instruction', 'outcome', 'priority')),
    rule_id INTEGER NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (version_id, kind, rule_id)
);

CREATE TABLE strategy_versions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    strategy_id INTEGER NOT NULL REFERENCES custom_strategies(id),
    title TEXT NOT NULL,
    scenario TEXT,
    -- JSON arrays of strings.
    alert_sources TEXT NOT NULL,
    attack_surfaces TEXT NOT NULL,
    mitre_tactics TEXT NOT NULL,
    is_latest INTEGER NOT NULL,
    author_id INTEGER REFERENCES users(id),
    created_at INTEGER NOT NULL
);

CREATE TABLE system_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    trigger_name TEXT NOT NULL,
    trigger_args TEXT NOT NULL,
    -- The arguments in lower case, for the free-text filter.
    search_text TEXT NOT NULL,
    investigation_id INTEGER,
    entity TEXT,
    created_at INTEGER NOT NULL
);

CREATE TABLE tenant_unions (
    id INTEGER PRIMARY KEY,
    display_name TEXT NOT NULL UNIQUE,
    lookup_dict TEXT NOT NULL DEFAULT '{}',
    last_modified_by INTEGER REFERENCES users(id),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE trigger_definitions (
    uuid TEXT PRIMARY KEY,
    fn_name TEXT NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    parent_uuid TEXT,
    tree_labels TEXT NOT NULL,
    display_index INTEGER NOT NULL,
    is_archived INTEGER NOT NULL DEFAULT 0,
    is_runnable INTEGER NOT NULL,
    is_scriptable INTEGER NOT NULL,
    trigger_arg_names TEXT NOT NULL,
    script_var_names TEXT NOT NULL,
    -- The catalog entry as JSON, so that a sync moves updated_at only when it changed.
    definition TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE trigger_runs (
    id INTEGER PRIMARY KEY,
    trigger_uuid TEXT NOT NULL REFERENCES trigger_definitions(uuid),
    batch INTEGER,
    trigger_args TEXT NOT NULL,
    investigation_id INTEGER REFERENCES investigations(id),
    entity TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

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
, tenant_union_ids TEXT, password_hash TEXT, password_must_change INTEGER NOT NULL DEFAULT 0, password_changed_at INTEGER);

CREATE INDEX alert_revisions_by_investigation ON alert_revisions (investigation_id)
    WHERE investigation_id IS NOT NULL;

CREATE INDEX alert_source_positions_by_time
    ON alert_source_positions (direct_source_label, tenant_union_id, created_at, position);

CREATE INDEX alerts_by_coalesce_key ON alerts (coalesce_key, created_at) WHERE coalesce_key IS NOT NULL;

CREATE INDEX alerts_by_source ON alerts (direct_source_label, tenant_union_id, created_at);

CREATE INDEX audit_entry_unions_by_union ON audit_entry_unions (tenant_union_id, seq);

CREATE INDEX audit_log_by_actor ON audit_log (actor_user_id);

CREATE INDEX audit_log_by_time ON audit_log (at);

CREATE INDEX connector_writebacks_by_connector ON connector_writebacks (connector_id);

CREATE INDEX connector_writebacks_by_investigation ON connector_writebacks (investigation_id);

CREATE INDEX connector_writebacks_due ON connector_writebacks (next_attempt_at)
    WHERE sent_at IS NULL;

CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at);

CREATE INDEX console_sessions_by_user ON console_sessions (user_id);

CREATE INDEX context_memory_entities_by_item ON context_memory_entities (item_id);

CREATE INDEX context_memory_entities_by_key ON context_memory_entities (match_key, item_id);

CREATE INDEX context_memory_items_by_tenant ON context_memory_items (tenant_id);

CREATE INDEX context_memory_items_by_union ON context_memory_items (tenant_union_id);

CREATE INDEX investigation_facet_counts_by_tenant_id
    ON investigation_facet_counts (tenant_id, status) WHERE facet = 'tenant';

CREATE INDEX investigation_facet_counts_by_tenant_label
    ON investigation_facet_counts (tenant_label, status) WHERE facet = 'tenant';

CREATE INDEX investigation_facet_counts_by_value
    ON investigation_facet_counts (facet, status, alert_type, direct_source_label);

CREATE INDEX investigation_notes_by_investigation ON investigation_notes (investigation_id, id);

CREATE INDEX investigation_tag_counts_by_name ON investigation_tag_counts (name, status);

CREATE INDEX investigation_tag_facet_counts_by_name
    ON investigation_tag_facet_counts (name, facet, status);

CREATE INDEX investigation_tags_by_investigation ON investigation_tags (investigation_id);

CREATE INDEX investigation_tags_by_time
    ON investigation_tags (name, status, alert_create_time, investigation_id);

CREATE INDEX investigations_by_alert ON investigations (alert_id, id);

CREATE INDEX investigations_by_alert_create ON investigations (status, alert_create_time, id);

CREATE INDEX investigations_by_alert_start ON investigations (status, alert_start_time, id);

CREATE INDEX investigations_by_completed ON investigations (status, generated_time, id);

CREATE INDEX investigations_by_created ON investigations (status, created_at, id);

CREATE INDEX investigations_by_day_alert_start
    ON investigations ((alert_create_time / 86400000000), alert_start_time, id, alert_create_time)
    WHERE status = 'success';

CREATE INDEX investigations_by_day_completed
    ON investigations ((alert_create_time / 86400000000), generated_time, id, alert_create_time)
    WHERE status = 'success';

CREATE INDEX investigations_by_day_created
    ON investigations ((alert_create_time / 86400000000), created_at, id, alert_create_time)
    WHERE status = 'success';

CREATE INDEX investigations_by_day_updated
    ON investigations ((alert_create_time / 86400000000), updated_at, id, alert_create_time)
    WHERE status = 'success';

CREATE INDEX investigations_by_feedback ON investigations (status, feedback_updated_at, id);

CREATE INDEX investigations_by_ignored_for ON investigations (ignored_for)
    WHERE ignored_for IS NOT NULL;

CREATE INDEX investigations_by_priority ON investigations (status, priority_rank, alert_create_time, id);

CREATE INDEX investigations_by_source ON investigations (direct_source_label, status, alert_create_time, id);

CREATE INDEX investigations_by_tenant ON investigations (tenant_id, status, alert_create_time, id);

CREATE INDEX investigations_by_type ON investigations (alert_type, status, alert_create_time, id);

CREATE INDEX investigations_by_updated ON investigations (status, updated_at, id);

CREATE INDEX investigations_same_detection
    ON investigations (alert_type, direct_source_label, tenant_union_id, alert_create_time, id)
    WHERE status = 'success' AND ignored_for IS NULL;

CREATE INDEX jobs_by_lease ON jobs (lease_expires_at, ready_at);

CREATE INDEX jobs_by_token ON jobs (lease_token);

CREATE INDEX notification_deliveries_by_state
    ON notification_deliveries (destination_id, state, id);

CREATE INDEX notification_deliveries_delivered
    ON notification_deliveries (delivered_at) WHERE state = 'delivered';

CREATE INDEX notification_deliveries_due
    ON notification_deliveries (destination_id, next_attempt_at) WHERE state = 'pending';

CREATE UNIQUE INDEX notification_deliveries_once
    ON notification_deliveries (destination_id, system_event_id);

CREATE INDEX response_scripts_by_trigger ON response_scripts (trigger_uuid, is_archived, is_enabled);

CREATE INDEX script_runs_by_script ON script_runs (script_id, id);

CREATE INDEX script_runs_by_trigger_run ON script_runs (trigger_run_id);

CREATE INDEX script_runs_by_version ON script_runs (script_version_id);

CREATE INDEX script_runs_running ON script_runs (deadline_at) WHERE status = 'running';

CREATE INDEX strategy_instructions_by_strategy ON strategy_instructions (strategy_id);

CREATE INDEX strategy_outcome_rules_by_strategy ON strategy_outcome_rules (strategy_id);

CREATE INDEX strategy_priority_rules_by_strategy ON strategy_priority_rules (strategy_id);

CREATE INDEX strategy_version_rules_by_rule ON strategy_version_rules (kind, rule_id);

CREATE INDEX strategy_versions_by_strategy ON strategy_versions (strategy_id, id);

CREATE UNIQUE INDEX strategy_versions_one_latest ON strategy_versions (strategy_id)
    WHERE is_latest = 1;

CREATE INDEX system_events_by_time ON system_events (created_at, id);

CREATE INDEX system_events_by_trigger ON system_events (trigger_name, created_at);

CREATE INDEX trigger_runs_by_investigation ON trigger_runs (investigation_id) WHERE investigation_id IS NOT NULL;

CREATE TRIGGER alert_source_positions_on_insert AFTER INSERT ON alerts
BEGIN
    INSERT INTO alert_source_counters (direct_source_label, tenant_union_id, last_position)
    VALUES (NEW.direct_source_label, NEW.tenant_union_id, 1)
    ON CONFLICT (direct_source_label, tenant_union_id)
    DO UPDATE SET last_position = last_position + 1;
    INSERT INTO alert_source_positions (alert_id, direct_source_label, tenant_union_id,
        created_at, position)
    SELECT NEW.id, NEW.direct_source_label, NEW.tenant_union_id, NEW.created_at,
           last_position
    FROM alert_source_counters
    WHERE direct_source_label = NEW.direct_source_label
        AND tenant_union_id = NEW.tenant_union_id;
END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;

CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only');
END;

CREATE TRIGGER investigation_count_deltas_on_delete AFTER DELETE ON investigations
BEGIN
    INSERT INTO investigation_count_deltas (status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    VALUES (OLD.status, OLD.canceled, OLD.priority, OLD.alert_type, OLD.direct_source_label,
        OLD.tenant_union_id, OLD.tenant_id, OLD.tenant_label, OLD.tenant_integration_key, -1);
END;

CREATE TRIGGER investigation_count_deltas_on_insert AFTER INSERT ON investigations
BEGIN
    INSERT INTO investigation_count_deltas (status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    VALUES (NEW.status, NEW.canceled, NEW.priority, NEW.alert_type, NEW.direct_source_label,
        NEW.tenant_union_id, NEW.tenant_id, NEW.tenant_label, NEW.tenant_integration_key, 1);
END;

CREATE TRIGGER investigation_count_deltas_on_update
AFTER UPDATE OF status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
    tenant_id, tenant_label, tenant_integration_key ON investigations
WHEN OLD.status IS NOT NEW.status OR OLD.canceled IS NOT NEW.canceled
    OR OLD.priority IS NOT NEW.priority OR OLD.alert_type IS NOT NEW.alert_type
    OR OLD.direct_source_label IS NOT NEW.direct_source_label
    OR OLD.tenant_union_id IS NOT NEW.tenant_union_id OR OLD.tenant_id IS NOT NEW.tenant_id
    OR OLD.tenant_label IS NOT NEW.tenant_label
    OR OLD.tenant_integration_key IS NOT NEW.tenant_integration_key
BEGIN
    INSERT INTO investigation_count_deltas (status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    VALUES (OLD.status, OLD.canceled, OLD.priority, OLD.alert_type, OLD.direct_source_label,
            OLD.tenant_union_id, OLD.tenant_id, OLD.tenant_label, OLD.tenant_integration_key,
            -1),
        (NEW.status, NEW.canceled, NEW.priority, NEW.alert_type, NEW.direct_source_label,
            NEW.tenant_union_id, NEW.tenant_id, NEW.tenant_label, NEW.tenant_integration_key,
            1);
END;

CREATE TRIGGER investigation_counts_drop_zero AFTER UPDATE OF n ON investigation_counts
WHEN NEW.n = 0
BEGIN
    DELETE FROM investigation_counts WHERE group_key = NEW.group_key;
END;

CREATE TRIGGER investigation_facet_counts_drop_zero AFTER UPDATE OF n
ON investigation_facet_counts WHEN NEW.n = 0
BEGIN
    DELETE FROM investigation_facet_counts WHERE group_key = NEW.group_key;
END;

CREATE TRIGGER investigation_hour_count_deltas_on_delete AFTER DELETE ON investigations
BEGIN
    INSERT INTO investigation_hour_count_deltas (status, hour, n)
    VALUES (OLD.status, (OLD.alert_create_time
        - ((OLD.alert_create_time % 3600000000) + 3600000000) % 3600000000) / 3600000000, -1);
END;

CREATE TRIGGER investigation_hour_count_deltas_on_insert AFTER INSERT ON investigations
BEGIN
    INSERT INTO investigation_hour_count_deltas (status, hour, n)
    VALUES (NEW.status, (NEW.alert_create_time
        - ((NEW.alert_create_time % 3600000000) + 3600000000) % 3600000000) / 3600000000, 1);
END;

CREATE TRIGGER investigation_hour_count_deltas_on_update
AFTER UPDATE OF status, alert_create_time ON investigations
WHEN OLD.status IS NOT NEW.status OR OLD.alert_create_time IS NOT NEW.alert_create_time
BEGIN
    INSERT INTO investigation_hour_count_deltas (status, hour, n)
    VALUES (OLD.status, (OLD.alert_create_time
            - ((OLD.alert_create_time % 3600000000) + 3600000000) % 3600000000) / 3600000000,
            -1),
        (NEW.status, (NEW.alert_create_time
            - ((NEW.alert_create_time % 3600000000) + 3600000000) % 3600000000) / 3600000000,
            1);
END;

CREATE TRIGGER investigation_hour_counts_drop_zero AFTER UPDATE OF n
ON investigation_hour_counts WHEN NEW.n = 0
BEGIN
    DELETE FROM investigation_hour_counts WHERE status = NEW.status AND hour = NEW.hour;
END;

CREATE TRIGGER investigation_tag_count_deltas_on_delete AFTER DELETE ON investigation_tags
BEGIN
    INSERT INTO investigation_tag_count_deltas (name, status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    SELECT OLD.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
           i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key, -1
    FROM investigations i WHERE i.id = OLD.investigation_id;
END;

CREATE TRIGGER investigation_tag_count_deltas_on_insert AFTER INSERT ON investigation_tags
BEGIN
    INSERT INTO investigation_tag_count_deltas (name, status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    SELECT NEW.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
           i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key, 1
    FROM investigations i WHERE i.id = NEW.investigation_id;
END;

CREATE TRIGGER investigation_tag_count_deltas_on_investigation_update
AFTER UPDATE OF status, canceled, priority, alert_type, direct_source_label, tenant_union_id,
    tenant_id, tenant_label, tenant_integration_key ON investigations
WHEN OLD.status IS NOT NEW.status OR OLD.canceled IS NOT NEW.canceled
    OR OLD.priority IS NOT NEW.priority OR OLD.alert_type IS NOT NEW.alert_type
    OR OLD.direct_source_label IS NOT NEW.direct_source_label
    OR OLD.tenant_union_id IS NOT NEW.tenant_union_id OR OLD.tenant_id IS NOT NEW.tenant_id
    OR OLD.tenant_label IS NOT NEW.tenant_label
    OR OLD.tenant_integration_key IS NOT NEW.tenant_integration_key
BEGIN
    INSERT INTO investigation_tag_count_deltas (name, status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    SELECT t.name, OLD.status, OLD.canceled, OLD.priority, OLD.alert_type,
           OLD.direct_source_label, OLD.tenant_union_id, OLD.tenant_id, OLD.tenant_label,
           OLD.tenant_integration_key, -1
    FROM investigation_tags t WHERE t.investigation_id = OLD.id
    UNION ALL
    SELECT t.name, NEW.status, NEW.canceled, NEW.priority, NEW.alert_type,
           NEW.direct_source_label, NEW.tenant_union_id, NEW.tenant_id, NEW.tenant_label,
           NEW.tenant_integration_key, 1
    FROM investigation_tags t WHERE t.investigation_id = NEW.id;
END;

CREATE TRIGGER investigation_tag_count_deltas_on_update
AFTER UPDATE OF name, investigation_id ON investigation_tags
BEGIN
    INSERT INTO investigation_tag_count_deltas (name, status, canceled, priority, alert_type,
        direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key,
        n)
    SELECT OLD.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
           i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key, -1
    FROM investigations i WHERE i.id = OLD.investigation_id
    UNION ALL
    SELECT NEW.name, i.status, i.canceled, i.priority, i.alert_type, i.direct_source_label,
           i.tenant_union_id, i.tenant_id, i.tenant_label, i.tenant_integration_key, 1
    FROM investigations i WHERE i.id = NEW.investigation_id;
END;

CREATE TRIGGER investigation_tag_counts_drop_zero AFTER UPDATE OF n ON investigation_tag_counts
WHEN NEW.n = 0
BEGIN
    DELETE FROM investigation_tag_counts WHERE group_key = NEW.group_key;
END;

CREATE TRIGGER investigation_tag_facet_counts_drop_zero AFTER UPDATE OF n
ON investigation_tag_facet_counts WHEN NEW.n = 0
BEGIN
    DELETE FROM investigation_tag_facet_counts WHERE group_key = NEW.group_key;
END;

CREATE TRIGGER investigation_tags_copy_on_insert AFTER INSERT ON investigation_tags
WHEN NOT EXISTS (SELECT 1 FROM investigations i WHERE i.id = NEW.investigation_id
    AND i.status IS NEW.status AND i.alert_create_time IS NEW.alert_create_time)
BEGIN
    UPDATE investigation_tags SET (status, alert_create_time) =
        (SELECT i.status, i.alert_create_time FROM investigations i
         WHERE i.id = NEW.investigation_id)
    WHERE name = NEW.name AND investigation_id = NEW.investigation_id;
END;

CREATE TRIGGER investigation_tags_copy_on_investigation_update
AFTER UPDATE OF status, alert_create_time ON investigations
WHEN OLD.status IS NOT NEW.status OR OLD.alert_create_time IS NOT NEW.alert_create_time
BEGIN
    UPDATE investigation_tags SET status = NEW.status, alert_create_time = NEW.alert_create_time
    WHERE investigation_id = NEW.id;
END;

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

