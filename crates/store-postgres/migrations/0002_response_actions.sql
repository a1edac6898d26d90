-- Response actions on PostgreSQL: the trigger catalog, scripts with versions, trigger runs and
-- script runs, and the operator's secrets for scripts. Append-only, like every migration.
-- Times are BIGINT microseconds since the Unix epoch (UTC); JSON is TEXT; flags are 0/1.

-- A copy of the built-in catalog (the server syncs it at start-up); uuids are stable.
CREATE TABLE trigger_definitions (
    uuid TEXT PRIMARY KEY,
    fn_name TEXT NOT NULL UNIQUE,
    display_name TEXT NOT NULL,
    parent_uuid TEXT,
    tree_labels TEXT NOT NULL,
    display_index BIGINT NOT NULL,
    is_archived BIGINT NOT NULL DEFAULT 0,
    is_runnable BIGINT NOT NULL,
    is_scriptable BIGINT NOT NULL,
    trigger_arg_names TEXT NOT NULL,
    script_var_names TEXT NOT NULL,
    -- The catalog entry as JSON, so that a sync moves updated_at only when it changed.
    definition TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE response_scripts (
    id BIGSERIAL PRIMARY KEY,
    display_name TEXT NOT NULL,
    trigger_uuid TEXT NOT NULL REFERENCES trigger_definitions(uuid),
    is_enabled BIGINT NOT NULL DEFAULT 1,
    is_archived BIGINT NOT NULL DEFAULT 0,
    allow_network BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX response_scripts_by_trigger ON response_scripts (trigger_uuid, is_archived, is_enabled);

CREATE TABLE response_script_versions (
    id BIGSERIAL PRIMARY KEY,
    script_id BIGINT NOT NULL REFERENCES response_scripts(id),
    v_num BIGINT NOT NULL,
    code TEXT NOT NULL,
    author_id BIGINT NOT NULL REFERENCES users(id),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (script_id, v_num)
);

CREATE TABLE trigger_runs (
    id BIGSERIAL PRIMARY KEY,
    trigger_uuid TEXT NOT NULL REFERENCES trigger_definitions(uuid),
    batch BIGINT,
    trigger_args TEXT NOT NULL,
    investigation_id BIGINT REFERENCES investigations(id),
    entity TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX trigger_runs_by_investigation ON trigger_runs (investigation_id) WHERE investigation_id IS NOT NULL;

CREATE TABLE script_runs (
    id BIGSERIAL PRIMARY KEY,
    script_id BIGINT NOT NULL REFERENCES response_scripts(id),
    script_version_id BIGINT NOT NULL REFERENCES response_script_versions(id),
    trigger_run_id BIGINT NOT NULL REFERENCES trigger_runs(id),
    status TEXT NOT NULL,
    stdout TEXT,
    stderr TEXT,
    syserr TEXT,
    isolation TEXT,
    duration_ms BIGINT,
    -- The process that runs it, and the time by which a live runner has ended it: a
    -- running run whose runner is gone or whose deadline passed was interrupted.
    runner TEXT NOT NULL,
    deadline_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX script_runs_by_script ON script_runs (script_id, id);
CREATE INDEX script_runs_by_version ON script_runs (script_version_id);
CREATE INDEX script_runs_by_trigger_run ON script_runs (trigger_run_id);
CREATE INDEX script_runs_running ON script_runs (deadline_at) WHERE status = 'running';

-- Values for the `secrets` global of scripts. Never returned by the API.
CREATE TABLE script_secrets (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
