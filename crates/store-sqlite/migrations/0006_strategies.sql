-- Custom strategies on SQLite (docs/strategies.md). Append-only, like every migration.
-- Times are INTEGER microseconds since the Unix epoch (UTC); JSON is TEXT; flags are 0/1.

-- A strategy: what does not change between its versions, its standing and its totals.
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

-- Every change of a strategy is a new version; exactly one is the latest.
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
CREATE INDEX strategy_versions_by_strategy ON strategy_versions (strategy_id, id);
CREATE UNIQUE INDEX strategy_versions_one_latest ON strategy_versions (strategy_id)
    WHERE is_latest = 1;

-- Rules are immutable and belong to one strategy; versions hold them through
-- strategy_version_rules, so an unchanged rule is shared by the versions that kept it.
CREATE TABLE strategy_instructions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    strategy_id INTEGER NOT NULL REFERENCES custom_strategies(id),
    content TEXT NOT NULL,
    internal_origin_uuid TEXT,
    usage_count INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
);
CREATE INDEX strategy_instructions_by_strategy ON strategy_instructions (strategy_id);

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
CREATE INDEX strategy_outcome_rules_by_strategy ON strategy_outcome_rules (strategy_id);

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
CREATE INDEX strategy_priority_rules_by_strategy ON strategy_priority_rules (strategy_id);

-- Which rules a version holds, in order. kind: instruction, outcome or priority.
CREATE TABLE strategy_version_rules (
    version_id INTEGER NOT NULL REFERENCES strategy_versions(id),
    kind TEXT NOT NULL CHECK (kind IN ('instruction', 'outcome', 'priority')),
    rule_id INTEGER NOT NULL,
    position INTEGER NOT NULL,
    PRIMARY KEY (version_id, kind, rule_id)
);
CREATE INDEX strategy_version_rules_by_rule ON strategy_version_rules (kind, rule_id);

-- Moves on every change the engine would see (a strategy created, a new version, enabled,
-- disabled, archived; not counters), so each process can keep the active strategies and
-- re-read them only when this moved: one small read per investigation.
CREATE TABLE strategy_generation (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
);
INSERT INTO strategy_generation (id, generation) VALUES (1, 0);
