//! Custom strategies over the shared SQL: `custom_strategies` (standing and totals),
//! `strategy_versions` (one row per change; exactly one `is_latest` per strategy, which a
//! partial unique index holds), immutable rules in one table per kind, and
//! `strategy_version_rules` saying which version holds which rule, in order. Reading a
//! set of versions is always five queries, whatever their number: the versions, the
//! memberships of their strategies, and each kind of rule. `strategy_generation` moves in
//! the transaction of every change the engine would see, so processes can keep the
//! active strategies and read them again only when it moved.

use std::collections::BTreeMap;

use async_trait::async_trait;
use sleuth_domain::{CustomOutcomeValue, Priority, StrategyEffects, Timestamp};
use sleuth_store::*;
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, AnyPool};
use uuid::Uuid;

use crate::builder::{SqlBuilder, Statements};
use crate::rows::{self, micros};
use crate::{DbResultExt, Dialect, SqlStore};

const SELECT_VERSIONS: &str = "SELECT s.id AS strategy_id, s.internal_origin_uuid, \
    s.is_enabled, s.is_archived, s.is_protected, s.total_conclusions_affected, \
    s.total_instructions_used, s.total_priorities_affected, s.created_at, s.updated_at, \
    v.id AS version_id, v.title, v.scenario, v.alert_sources, v.attack_surfaces, \
    v.mitre_tactics, v.is_latest, v.created_at AS version_created_at \
    FROM strategy_versions v JOIN custom_strategies s ON s.id = v.strategy_id";

/// The kinds of rule, as `strategy_version_rules.kind` spells them.
const INSTRUCTION: &str = "instruction";
const OUTCOME: &str = "outcome";
const PRIORITY: &str = "priority";

/// Every rule of some strategies, with the versions that hold each.
#[derive(Default)]
struct Rules {
    instructions: Vec<(i64, InstructionRecord)>,
    outcomes: Vec<(i64, OutcomeRuleRecord)>,
    priorities: Vec<(i64, PriorityRuleRecord)>,
    /// version id -> (kind, rule id), in position order.
    by_version: BTreeMap<i64, Vec<(String, i64)>>,
}

fn uuid(raw: &str) -> StoreResult<Uuid> {
    Uuid::parse_str(raw).map_err(|error| StoreError::internal(format!("stored uuid: {error}")))
}

fn opt_uuid(row: &AnyRow, column: &str) -> StoreResult<Option<Uuid>> {
    rows::opt_text(row, column)?
        .map(|raw| uuid(&raw))
        .transpose()
}

/// Loads every rule and membership of these strategies.
async fn load_rules(connection: &mut AnyConnection, strategy_ids: &[i64]) -> StoreResult<Rules> {
    let mut rules = Rules::default();
    if strategy_ids.is_empty() {
        return Ok(rules);
    }
    let mut memberships = SqlBuilder::new(
        "SELECT m.version_id, m.kind, m.rule_id FROM strategy_version_rules m \
         JOIN strategy_versions v ON v.id = m.version_id WHERE v.strategy_id IN ",
    );
    memberships.bind_list(strategy_ids.to_vec())?;
    memberships.push(" ORDER BY m.version_id, m.position");
    let mut versions_of: BTreeMap<(String, i64), Vec<i64>> = BTreeMap::new();
    for row in memberships.build().fetch_all(&mut *connection).await.db()? {
        let version_id = rows::int(&row, "version_id")?;
        let kind = rows::text(&row, "kind")?;
        let rule_id = rows::int(&row, "rule_id")?;
        versions_of
            .entry((kind.clone(), rule_id))
            .or_default()
            .push(version_id);
        rules
            .by_version
            .entry(version_id)
            .or_default()
            .push((kind, rule_id));
    }
    let mut versions = |kind: &str, rule_id: i64| {
        let mut list = versions_of
            .remove(&(kind.to_string(), rule_id))
            .unwrap_or_default();
        list.sort_unstable();
        list
    };

    let mut query = SqlBuilder::new(
        "SELECT id, strategy_id, content, internal_origin_uuid, usage_count, created_at \
         FROM strategy_instructions WHERE strategy_id IN ",
    );
    query.bind_list(strategy_ids.to_vec())?;
    query.push(" ORDER BY id");
    for row in query.build().fetch_all(&mut *connection).await.db()? {
        let id = rows::int(&row, "id")?;
        rules.instructions.push((
            rows::int(&row, "strategy_id")?,
            InstructionRecord {
                id,
                content: rows::text(&row, "content")?,
                internal_origin_uuid: opt_uuid(&row, "internal_origin_uuid")?,
                strategy_versions: versions(INSTRUCTION, id),
                usage_count: rows::int(&row, "usage_count")?,
                created_at: rows::time(&row, "created_at")?,
            },
        ));
    }

    let mut query = SqlBuilder::new(
        "SELECT id, strategy_id, condition_json, outcome, internal_origin_uuid, \
         conclusions_affected, created_at FROM strategy_outcome_rules WHERE strategy_id IN ",
    );
    query.bind_list(strategy_ids.to_vec())?;
    query.push(" ORDER BY id");
    for row in query.build().fetch_all(&mut *connection).await.db()? {
        let id = rows::int(&row, "id")?;
        rules.outcomes.push((
            rows::int(&row, "strategy_id")?,
            OutcomeRuleRecord {
                id,
                condition: rows::json(&row, "condition_json")?,
                outcome: rows::parsed(&row, "outcome", CustomOutcomeValue::parse)?,
                internal_origin_uuid: opt_uuid(&row, "internal_origin_uuid")?,
                strategy_versions: versions(OUTCOME, id),
                conclusions_affected: rows::int(&row, "conclusions_affected")?,
                created_at: rows::time(&row, "created_at")?,
            },
        ));
    }

    let mut query = SqlBuilder::new(
        "SELECT id, strategy_id, priority, ranking, outcomes, insight_tag_rule, \
         internal_origin_uuid, priorities_affected, created_at \
         FROM strategy_priority_rules WHERE strategy_id IN ",
    );
    query.bind_list(strategy_ids.to_vec())?;
    query.push(" ORDER BY id");
    for row in query.build().fetch_all(&mut *connection).await.db()? {
        let id = rows::int(&row, "id")?;
        rules.priorities.push((
            rows::int(&row, "strategy_id")?,
            PriorityRuleRecord {
                id,
                priority: rows::parsed(&row, "priority", Priority::parse)?,
                ranking: rows::int(&row, "ranking")?,
                outcomes: rows::json(&row, "outcomes")?,
                insight_tag_rule: rows::opt_json(&row, "insight_tag_rule")?,
                internal_origin_uuid: opt_uuid(&row, "internal_origin_uuid")?,
                strategy_versions: versions(PRIORITY, id),
                priorities_affected: rows::int(&row, "priorities_affected")?,
                created_at: rows::time(&row, "created_at")?,
            },
        ));
    }
    Ok(rules)
}

/// The rules a version holds, in its order.
fn held<'a, R: Clone + 'a>(
    rules: impl Iterator<Item = &'a (i64, R)>,
    id_of: impl Fn(&R) -> i64,
    members: &[(String, i64)],
    kind: &str,
) -> Vec<R> {
    let by_id: BTreeMap<i64, &R> = rules.map(|(_, rule)| (id_of(rule), rule)).collect();
    members
        .iter()
        .filter(|(member_kind, _)| member_kind == kind)
        .filter_map(|(_, rule_id)| by_id.get(rule_id).map(|rule| (*rule).clone()))
        .collect()
}

/// Strategy records from `SELECT_VERSIONS` rows, with their rules.
async fn read_versions(
    connection: &mut AnyConnection,
    found: &[AnyRow],
) -> StoreResult<Vec<StrategyRecord>> {
    let mut strategy_ids: Vec<i64> = Vec::new();
    for row in found {
        let strategy_id = rows::int(row, "strategy_id")?;
        if !strategy_ids.contains(&strategy_id) {
            strategy_ids.push(strategy_id);
        }
    }
    let rules = load_rules(connection, &strategy_ids).await?;
    let empty = Vec::new();
    found
        .iter()
        .map(|row| {
            let strategy_id = rows::int(row, "strategy_id")?;
            let version_id = rows::int(row, "version_id")?;
            let is_latest = rows::flag(row, "is_latest")?;
            let members = rules.by_version.get(&version_id).unwrap_or(&empty);
            let of_strategy = |owner: &i64| *owner == strategy_id;
            Ok(StrategyRecord {
                id: strategy_id,
                version_id,
                internal_origin_uuid: uuid(&rows::text(row, "internal_origin_uuid")?)?,
                title: rows::text(row, "title")?,
                scenario: rows::opt_text(row, "scenario")?,
                alert_sources: rows::json(row, "alert_sources")?,
                attack_surfaces: rows::json(row, "attack_surfaces")?,
                mitre_tactics: rows::json(row, "mitre_tactics")?,
                is_archived: rows::flag(row, "is_archived")?,
                is_enabled: rows::flag(row, "is_enabled")?,
                is_latest,
                is_protected: rows::flag(row, "is_protected")?,
                instructions: held(
                    rules
                        .instructions
                        .iter()
                        .filter(|(owner, _)| of_strategy(owner)),
                    |rule: &InstructionRecord| rule.id,
                    members,
                    INSTRUCTION,
                ),
                outcomes: held(
                    rules
                        .outcomes
                        .iter()
                        .filter(|(owner, _)| of_strategy(owner)),
                    |rule: &OutcomeRuleRecord| rule.id,
                    members,
                    OUTCOME,
                ),
                priorities: held(
                    rules
                        .priorities
                        .iter()
                        .filter(|(owner, _)| of_strategy(owner)),
                    |rule: &PriorityRuleRecord| rule.id,
                    members,
                    PRIORITY,
                ),
                total_conclusions_affected: rows::int(row, "total_conclusions_affected")?,
                total_instructions_used: rows::int(row, "total_instructions_used")?,
                total_priorities_affected: rows::int(row, "total_priorities_affected")?,
                created_at: rows::time(row, "created_at")?,
                updated_at: if is_latest {
                    rows::time(row, "updated_at")?
                } else {
                    rows::time(row, "version_created_at")?
                },
            })
        })
        .collect()
}

async fn latest_version(
    connection: &mut AnyConnection,
    strategy_id: i64,
) -> StoreResult<StrategyRecord> {
    let found = sqlx::query(sqlx::AssertSqlSafe(format!(
        "{SELECT_VERSIONS} WHERE v.strategy_id = $1 AND v.is_latest = 1"
    )))
    .bind(strategy_id)
    .fetch_all(&mut *connection)
    .await
    .db()?;
    read_versions(connection, &found)
        .await?
        .pop()
        .ok_or_else(|| StoreError::not_found("custom strategy", strategy_id))
}

/// Which existing rule a draft rule keeps, if any: the one its id names when that one is
/// equal to it; without an id, an equal rule of the latest version not kept already.
/// `Rejected` when the id names no rule of this strategy of this kind.
fn kept_rule(
    field: &str,
    draft_id: Option<i64>,
    known_ids: &[i64],
    equal_ids: &[i64],
    latest_ids: &[i64],
    kept: &[i64],
) -> StoreResult<Option<i64>> {
    match draft_id {
        Some(id) if !known_ids.contains(&id) => Err(StoreError::Rejected {
            detail: format!(
                "{field}.id: {id} is not one of this strategy's {} rules; leave id out to add a rule",
                field.split('[').next().unwrap_or(field)
            ),
        }),
        Some(id) => Ok(equal_ids.contains(&id).then_some(id)),
        None => Ok(equal_ids
            .iter()
            .copied()
            .find(|id| latest_ids.contains(id) && !kept.contains(id))),
    }
}

/// The rule ids of a version to write, per kind, in order; new rules are inserted here.
#[derive(Debug, PartialEq, Eq)]
struct VersionRules {
    instructions: Vec<i64>,
    outcomes: Vec<i64>,
    priorities: Vec<i64>,
}

/// For each draft rule of one kind, the existing rule it keeps (see [`kept_rule`]), or
/// `None` when it is a new rule.
fn kept_rules<D, R>(
    kind: &str,
    drafts: &[D],
    existing: &[(i64, R)],
    latest_ids: &[i64],
    draft_id: impl Fn(&D) -> Option<i64>,
    rule_id: impl Fn(&R) -> i64,
    same: impl Fn(&D, &R) -> bool,
) -> StoreResult<Vec<Option<i64>>> {
    let known: Vec<i64> = existing.iter().map(|(_, rule)| rule_id(rule)).collect();
    let mut kept: Vec<i64> = Vec::new();
    let mut decided = Vec::with_capacity(drafts.len());
    for (index, draft) in drafts.iter().enumerate() {
        let equal: Vec<i64> = existing
            .iter()
            .filter(|(_, rule)| same(draft, rule))
            .map(|(_, rule)| rule_id(rule))
            .collect();
        let field = format!("{kind}[{index}]");
        let keep = kept_rule(&field, draft_id(draft), &known, &equal, latest_ids, &kept)?;
        kept.extend(keep);
        decided.push(keep);
    }
    Ok(decided)
}

async fn resolve_rules(
    connection: &mut AnyConnection,
    strategy_id: i64,
    draft: &StrategyDraft,
    latest: Option<&StrategyRecord>,
    at: Timestamp,
) -> StoreResult<VersionRules> {
    let existing = load_rules(connection, &[strategy_id]).await?;
    let latest_ids = |ids: fn(&StrategyRecord) -> Vec<i64>| latest.map(ids).unwrap_or_default();
    let mut resolved = VersionRules {
        instructions: Vec::new(),
        outcomes: Vec::new(),
        priorities: Vec::new(),
    };

    let kept = kept_rules(
        "instructions",
        &draft.instructions,
        &existing.instructions,
        &latest_ids(|latest| latest.instructions.iter().map(|rule| rule.id).collect()),
        |rule| rule.id,
        |rule| rule.id,
        |rule, stored| stored.content == rule.content,
    )?;
    for (rule, kept) in draft.instructions.iter().zip(kept) {
        let id = match kept {
            Some(id) => id,
            None => sqlx::query_scalar(
                "INSERT INTO strategy_instructions (strategy_id, content, internal_origin_uuid, \
                 created_at) VALUES ($1, $2, $3, $4) RETURNING id",
            )
            .bind(strategy_id)
            .bind(&rule.content)
            .bind(rule.internal_origin_uuid.map(|uuid| uuid.to_string()))
            .bind(micros(at))
            .fetch_one(&mut *connection)
            .await
            .db()?,
        };
        resolved.instructions.push(id);
    }

    let kept = kept_rules(
        "outcomes",
        &draft.outcomes,
        &existing.outcomes,
        &latest_ids(|latest| latest.outcomes.iter().map(|rule| rule.id).collect()),
        |rule| rule.id,
        |rule| rule.id,
        |rule, stored| stored.condition == rule.condition && stored.outcome == rule.outcome,
    )?;
    for (rule, kept) in draft.outcomes.iter().zip(kept) {
        let id = match kept {
            Some(id) => id,
            None => sqlx::query_scalar(
                "INSERT INTO strategy_outcome_rules (strategy_id, condition_json, outcome, \
                 internal_origin_uuid, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id",
            )
            .bind(strategy_id)
            .bind(rows::to_json(&rule.condition)?)
            .bind(rule.outcome.as_str())
            .bind(rule.internal_origin_uuid.map(|uuid| uuid.to_string()))
            .bind(micros(at))
            .fetch_one(&mut *connection)
            .await
            .db()?,
        };
        resolved.outcomes.push(id);
    }

    let kept = kept_rules(
        "priorities",
        &draft.priorities,
        &existing.priorities,
        &latest_ids(|latest| latest.priorities.iter().map(|rule| rule.id).collect()),
        |rule| rule.id,
        |rule| rule.id,
        |rule, stored| {
            stored.priority == rule.priority
                && stored.ranking == rule.ranking
                && stored.outcomes == rule.outcomes
                && stored.insight_tag_rule == rule.insight_tag_rule
        },
    )?;
    for (rule, kept) in draft.priorities.iter().zip(kept) {
        let id = match kept {
            Some(id) => id,
            None => sqlx::query_scalar(
                "INSERT INTO strategy_priority_rules (strategy_id, priority, ranking, outcomes, \
                 insight_tag_rule, internal_origin_uuid, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
            )
            .bind(strategy_id)
            .bind(rule.priority.as_str())
            .bind(rule.ranking)
            .bind(rows::to_json(&rule.outcomes)?)
            .bind(
                rule.insight_tag_rule
                    .as_ref()
                    .map(rows::to_json)
                    .transpose()?,
            )
            .bind(rule.internal_origin_uuid.map(|uuid| uuid.to_string()))
            .bind(micros(at))
            .fetch_one(&mut *connection)
            .await
            .db()?,
        };
        resolved.priorities.push(id);
    }
    Ok(resolved)
}

/// Inserts a version (the latest) and its memberships.
async fn insert_version(
    connection: &mut AnyConnection,
    strategy_id: i64,
    draft: &StrategyDraft,
    rules: &VersionRules,
    author_id: Option<i64>,
    at: Timestamp,
) -> StoreResult<i64> {
    let version_id: i64 = sqlx::query_scalar(
        "INSERT INTO strategy_versions (strategy_id, title, scenario, alert_sources, \
         attack_surfaces, mitre_tactics, is_latest, author_id, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8) RETURNING id",
    )
    .bind(strategy_id)
    .bind(&draft.title)
    .bind(draft.scenario.as_deref())
    .bind(rows::to_json(&draft.alert_sources)?)
    .bind(rows::to_json(&draft.attack_surfaces)?)
    .bind(rows::to_json(&draft.mitre_tactics)?)
    .bind(author_id)
    .bind(micros(at))
    .fetch_one(&mut *connection)
    .await
    .db()?;
    for (kind, ids) in [
        (INSTRUCTION, &rules.instructions),
        (OUTCOME, &rules.outcomes),
        (PRIORITY, &rules.priorities),
    ] {
        for (position, rule_id) in ids.iter().enumerate() {
            sqlx::query(
                "INSERT INTO strategy_version_rules (version_id, kind, rule_id, position) \
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(version_id)
            .bind(kind)
            .bind(*rule_id)
            .bind(i64::try_from(position).unwrap_or(i64::MAX))
            .execute(&mut *connection)
            .await
            .db()?;
        }
    }
    Ok(version_id)
}

/// Creates a strategy inside the caller's transaction; returns its id.
async fn insert_strategy(
    connection: &mut AnyConnection,
    strategy: &NewStrategy,
    at: Timestamp,
) -> StoreResult<i64> {
    let strategy_id: i64 = sqlx::query_scalar(
        "INSERT INTO custom_strategies (internal_origin_uuid, is_enabled, is_protected, \
         created_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5) RETURNING id",
    )
    .bind(strategy.internal_origin_uuid.to_string())
    .bind(i64::from(strategy.is_enabled))
    .bind(i64::from(strategy.is_protected))
    .bind(strategy.author_id)
    .bind(micros(at))
    .fetch_one(&mut *connection)
    .await
    .db()?;
    let rules = resolve_rules(connection, strategy_id, &strategy.draft, None, at).await?;
    insert_version(
        connection,
        strategy_id,
        &strategy.draft,
        &rules,
        strategy.author_id,
        at,
    )
    .await?;
    bump_generation(connection).await?;
    Ok(strategy_id)
}

/// Moves the generation, inside the transaction of the change.
async fn bump_generation(connection: &mut AnyConnection) -> StoreResult<()> {
    sqlx::query("UPDATE strategy_generation SET generation = generation + 1 WHERE id = 1")
        .execute(&mut *connection)
        .await
        .db()?;
    Ok(())
}

async fn read_generation(connection: &mut AnyConnection) -> StoreResult<i64> {
    sqlx::query_scalar("SELECT generation FROM strategy_generation WHERE id = 1")
        .fetch_one(&mut *connection)
        .await
        .db()
}

pub(crate) async fn create_strategy(
    pool: &AnyPool,
    dialect: Dialect,
    strategy: &NewStrategy,
    at: Timestamp,
) -> StoreResult<StrategyRecord> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    let strategy_id = insert_strategy(&mut transaction, strategy, at).await?;
    let record = latest_version(&mut transaction, strategy_id).await?;
    transaction.commit().await.db()?;
    Ok(record)
}

pub(crate) async fn get_strategy(pool: &AnyPool, strategy_id: i64) -> StoreResult<StrategyRecord> {
    let mut connection = pool.acquire().await.db()?;
    latest_version(&mut connection, strategy_id).await
}

pub(crate) async fn list_strategies(
    pool: &AnyPool,
    query: &StrategyQuery,
) -> StoreResult<StrategyPage> {
    let filters = |builder: &mut SqlBuilder| -> StoreResult<()> {
        builder.push(" AND s.is_archived = ");
        builder.bind(i64::from(query.is_archived))?;
        if let Some(enabled) = query.is_enabled {
            builder.push(" AND s.is_enabled = ");
            builder.bind(i64::from(enabled))?;
        }
        Ok(())
    };
    let mut count = SqlBuilder::new("SELECT COUNT(*) FROM custom_strategies s WHERE 1 = 1");
    filters(&mut count)?;
    let mut page = SqlBuilder::new(&format!("{SELECT_VERSIONS} WHERE v.is_latest = 1"));
    filters(&mut page)?;
    page.push(" ORDER BY s.id");
    page.limit_offset(query.limit, query.offset);
    let mut connection = pool.acquire().await.db()?;
    let total: i64 = count
        .build_scalar()
        .fetch_one(&mut *connection)
        .await
        .db()?;
    let found = page.build().fetch_all(&mut *connection).await.db()?;
    Ok(StrategyPage {
        total: u64::try_from(total).unwrap_or(0),
        items: read_versions(&mut connection, &found).await?,
    })
}

pub(crate) async fn list_strategy_versions(
    pool: &AnyPool,
    strategy_id: i64,
) -> StoreResult<Vec<StrategyRecord>> {
    let mut connection = pool.acquire().await.db()?;
    let found = sqlx::query(sqlx::AssertSqlSafe(format!(
        "{SELECT_VERSIONS} WHERE v.strategy_id = $1 ORDER BY v.id DESC"
    )))
    .bind(strategy_id)
    .fetch_all(&mut *connection)
    .await
    .db()?;
    if found.is_empty() {
        return Err(StoreError::not_found("custom strategy", strategy_id));
    }
    read_versions(&mut connection, &found).await
}

/// Takes the strategy's row lock (PostgreSQL; SQLite's write transaction holds the whole
/// database) and reads its standing: (is_archived, is_protected).
async fn lock_strategy(
    connection: &mut AnyConnection,
    strategy_id: i64,
) -> StoreResult<(bool, bool)> {
    let locked = sqlx::query("UPDATE custom_strategies SET updated_at = updated_at WHERE id = $1")
        .bind(strategy_id)
        .execute(&mut *connection)
        .await
        .db()?;
    if locked.rows_affected() == 0 {
        return Err(StoreError::not_found("custom strategy", strategy_id));
    }
    let row = sqlx::query("SELECT is_archived, is_protected FROM custom_strategies WHERE id = $1")
        .bind(strategy_id)
        .fetch_one(&mut *connection)
        .await
        .db()?;
    Ok((
        rows::flag(&row, "is_archived")?,
        rows::flag(&row, "is_protected")?,
    ))
}

fn protected(strategy_id: i64) -> StoreError {
    StoreError::Rejected {
        detail: format!(
            "custom strategy {strategy_id} is protected: Sleuth ships it and keeps it in force; \
             it cannot be changed, enabled, disabled or archived"
        ),
    }
}

pub(crate) async fn update_strategy(
    pool: &AnyPool,
    dialect: Dialect,
    strategy_id: i64,
    draft: &StrategyDraft,
    author_id: Option<i64>,
    at: Timestamp,
) -> StoreResult<StrategyUpdate> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    let (is_archived, is_protected) = lock_strategy(&mut transaction, strategy_id).await?;
    if is_protected {
        return Err(protected(strategy_id));
    }
    if is_archived {
        return Err(StoreError::Rejected {
            detail: format!("custom strategy {strategy_id} is archived and cannot be changed"),
        });
    }
    let latest = latest_version(&mut transaction, strategy_id).await?;
    let rules = resolve_rules(&mut transaction, strategy_id, draft, Some(&latest), at).await?;
    let latest_rules = VersionRules {
        instructions: latest.instructions.iter().map(|rule| rule.id).collect(),
        outcomes: latest.outcomes.iter().map(|rule| rule.id).collect(),
        priorities: latest.priorities.iter().map(|rule| rule.id).collect(),
    };
    let unchanged = rules == latest_rules
        && draft.title == latest.title
        && draft.scenario == latest.scenario
        && draft.alert_sources == latest.alert_sources
        && draft.attack_surfaces == latest.attack_surfaces
        && draft.mitre_tactics == latest.mitre_tactics;
    if unchanged {
        // Nothing was inserted: every rule was kept.
        transaction.rollback().await.db()?;
        return Ok(StrategyUpdate::Unchanged(latest));
    }
    sqlx::query(
        "UPDATE strategy_versions SET is_latest = 0 WHERE strategy_id = $1 AND is_latest = 1",
    )
    .bind(strategy_id)
    .execute(&mut *transaction)
    .await
    .db()?;
    insert_version(&mut transaction, strategy_id, draft, &rules, author_id, at).await?;
    bump_generation(&mut transaction).await?;
    sqlx::query("UPDATE custom_strategies SET updated_at = $2 WHERE id = $1")
        .bind(strategy_id)
        .bind(micros(at))
        .execute(&mut *transaction)
        .await
        .db()?;
    let record = latest_version(&mut transaction, strategy_id).await?;
    transaction.commit().await.db()?;
    Ok(StrategyUpdate::NewVersion(record))
}

pub(crate) async fn set_strategy_standing(
    pool: &AnyPool,
    dialect: Dialect,
    strategy_id: i64,
    standing: StrategyStanding,
    at: Timestamp,
) -> StoreResult<()> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    let (is_archived, is_protected) = lock_strategy(&mut transaction, strategy_id).await?;
    if is_protected {
        return Err(protected(strategy_id));
    }
    let change = match standing {
        StrategyStanding::Enabled if is_archived => {
            return Err(StoreError::Rejected {
                detail: format!("custom strategy {strategy_id} is archived and cannot be enabled"),
            });
        }
        StrategyStanding::Enabled => "is_enabled = 1",
        StrategyStanding::Disabled => "is_enabled = 0",
        StrategyStanding::Archived => "is_archived = 1",
    };
    // Doing what is already so keeps updated_at (and the generation) as they were.
    let changed = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE custom_strategies SET {change}, updated_at = $2 WHERE id = $1 AND NOT ({change})"
    )))
    .bind(strategy_id)
    .bind(micros(at))
    .execute(&mut *transaction)
    .await
    .db()?;
    if changed.rows_affected() > 0 {
        bump_generation(&mut transaction).await?;
    }
    transaction.commit().await.db()
}

pub(crate) async fn strategy_generation(pool: &AnyPool) -> StoreResult<i64> {
    let mut connection = pool.acquire().await.db()?;
    read_generation(&mut connection).await
}

pub(crate) async fn active_strategies(pool: &AnyPool) -> StoreResult<ActiveStrategies> {
    let mut connection = pool.acquire().await.db()?;
    let generation = read_generation(&mut connection).await?;
    let found = sqlx::query(sqlx::AssertSqlSafe(format!(
        "{SELECT_VERSIONS} WHERE v.is_latest = 1 AND s.is_enabled = 1 AND s.is_archived = 0 \
         ORDER BY s.id"
    )))
    .fetch_all(&mut *connection)
    .await
    .db()?;
    let strategies = read_versions(&mut connection, &found)
        .await?
        .iter()
        .map(StrategyRecord::to_engine)
        .collect();
    Ok(ActiveStrategies {
        generation,
        strategies,
    })
}

pub(crate) async fn sync_builtin_strategies(
    pool: &AnyPool,
    dialect: Dialect,
    builtins: &[NewStrategy],
    at: Timestamp,
) -> StoreResult<()> {
    for builtin in builtins {
        let mut connection = pool.acquire().await.db()?;
        let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
        let existing: Option<i64> =
            sqlx::query_scalar("SELECT id FROM custom_strategies WHERE internal_origin_uuid = $1")
                .bind(builtin.internal_origin_uuid.to_string())
                .fetch_optional(&mut *transaction)
                .await
                .db()?;
        if existing.is_some() {
            continue;
        }
        match insert_strategy(&mut transaction, builtin, at).await {
            Ok(_) => transaction.commit().await.db()?,
            // Another process created it meanwhile (PostgreSQL): it exists, which is the point.
            Err(StoreError::Conflict { .. }) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Counts what the strategies did for stored results, inside the transaction that stores
/// them: each rule's counter and its strategy's total, summed first so that a batch of
/// results costs two statements per rule involved, not per result.
pub(crate) fn count_effects<'a>(
    statements: &mut Statements,
    effects: impl IntoIterator<Item = &'a StrategyEffects>,
) -> StoreResult<()> {
    // (table, counter column, strategy total column, rule id) -> how many
    let mut counted: BTreeMap<(&str, &str, &str, i64), i64> = BTreeMap::new();
    for effects in effects {
        if let Some(rule_id) = effects.custom_outcome_id {
            *counted
                .entry((
                    "strategy_outcome_rules",
                    "conclusions_affected",
                    "total_conclusions_affected",
                    rule_id,
                ))
                .or_default() += 1;
        }
        if let Some(rule_id) = effects.custom_priority_id {
            *counted
                .entry((
                    "strategy_priority_rules",
                    "priorities_affected",
                    "total_priorities_affected",
                    rule_id,
                ))
                .or_default() += 1;
        }
        for rule_id in &effects.instruction_ids {
            *counted
                .entry((
                    "strategy_instructions",
                    "usage_count",
                    "total_instructions_used",
                    *rule_id,
                ))
                .or_default() += 1;
        }
    }
    for ((table, counter, total, rule_id), count) in counted {
        statements
            .next(&format!("UPDATE {table} SET {counter} = {counter} + "))
            .bind(count)?
            .push(" WHERE id = ")
            .bind(rule_id)?
            .fixed_text();
        statements
            .next(&format!(
                "UPDATE custom_strategies SET {total} = {total} + "
            ))
            .bind(count)?
            .push(&format!(
                " WHERE id = (SELECT strategy_id FROM {table} WHERE id = "
            ))
            .bind(rule_id)?
            .push(")")
            .fixed_text();
    }
    Ok(())
}

#[async_trait]
impl StrategyStore for SqlStore {
    async fn create_strategy(
        &self,
        strategy: &NewStrategy,
        at: Timestamp,
    ) -> StoreResult<StrategyRecord> {
        create_strategy(&self.pool, self.dialect, strategy, at).await
    }

    async fn get_strategy(&self, strategy_id: i64) -> StoreResult<StrategyRecord> {
        get_strategy(&self.pool, strategy_id).await
    }

    async fn list_strategies(&self, query: &StrategyQuery) -> StoreResult<StrategyPage> {
        list_strategies(&self.pool, query).await
    }

    async fn list_strategy_versions(&self, strategy_id: i64) -> StoreResult<Vec<StrategyRecord>> {
        list_strategy_versions(&self.pool, strategy_id).await
    }

    async fn update_strategy(
        &self,
        strategy_id: i64,
        draft: &StrategyDraft,
        author_id: Option<i64>,
        at: Timestamp,
    ) -> StoreResult<StrategyUpdate> {
        update_strategy(&self.pool, self.dialect, strategy_id, draft, author_id, at).await
    }

    async fn set_strategy_standing(
        &self,
        strategy_id: i64,
        standing: StrategyStanding,
        at: Timestamp,
    ) -> StoreResult<()> {
        set_strategy_standing(&self.pool, self.dialect, strategy_id, standing, at).await
    }

    async fn strategy_generation(&self) -> StoreResult<i64> {
        strategy_generation(&self.pool).await
    }

    async fn active_strategies(&self) -> StoreResult<ActiveStrategies> {
        active_strategies(&self.pool).await
    }

    async fn sync_builtin_strategies(
        &self,
        builtins: &[NewStrategy],
        at: Timestamp,
    ) -> StoreResult<()> {
        sync_builtin_strategies(&self.pool, self.dialect, builtins, at).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_is_kept_by_id_only_when_unchanged_and_by_content_only_from_the_latest() {
        // By id: kept when equal, new when edited, refused when unknown.
        assert_eq!(
            kept_rule("outcomes[0]", Some(3), &[3, 4], &[3], &[], &[]).unwrap(),
            Some(3)
        );
        assert_eq!(
            kept_rule("outcomes[0]", Some(3), &[3, 4], &[], &[3], &[]).unwrap(),
            None
        );
        assert!(kept_rule("outcomes[0]", Some(9), &[3, 4], &[], &[], &[]).is_err());
        // By content: an equal rule of the latest version, each kept once.
        assert_eq!(
            kept_rule("outcomes[0]", None, &[3, 4], &[3, 4], &[4], &[]).unwrap(),
            Some(4)
        );
        assert_eq!(
            kept_rule("outcomes[1]", None, &[3, 4], &[3, 4], &[4], &[4]).unwrap(),
            None
        );
    }
}
