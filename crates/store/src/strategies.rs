//! Custom strategies in storage: each strategy is a list of versions, and each version a
//! set of rules (instructions, outcome rules, priority rules). Rules are immutable and
//! shared: a new version keeps the rules it did not change (the same rows, so their
//! counters go on counting), and an edited rule is a new rule, the old one staying with
//! the versions that had it. A separate trait from [`crate::Store`] (which requires it);
//! its methods name intent, and no SQL lives here.
//!
//! The server validates every value (JSON Logic, enumerations, bounds) before it gets here.

use async_trait::async_trait;
use serde_json::{Map, Value};
use sleuth_domain::{
    CustomOutcomeValue, Outcome, Priority, Strategy, StrategyInstruction, StrategyOutcome,
    StrategyPriority, Timestamp,
};
use uuid::Uuid;

use crate::StoreResult;

/// An instruction of a draft. `id` names a rule of the same strategy to keep; without it,
/// a rule of the latest version with the same content is kept; otherwise a new rule is made.
#[derive(Debug, Clone, PartialEq)]
pub struct DraftInstruction {
    pub id: Option<i64>,
    pub content: String,
    /// Set for the rules Sleuth ships (see `sync_builtin_strategies`).
    pub internal_origin_uuid: Option<Uuid>,
}

/// An outcome rule of a draft; `id` as for [`DraftInstruction`].
#[derive(Debug, Clone, PartialEq)]
pub struct DraftOutcome {
    pub id: Option<i64>,
    /// Valid JSON Logic (checked by the server).
    pub condition: Value,
    pub outcome: CustomOutcomeValue,
    pub internal_origin_uuid: Option<Uuid>,
}

/// A priority rule of a draft; `id` as for [`DraftInstruction`].
#[derive(Debug, Clone, PartialEq)]
pub struct DraftPriority {
    pub id: Option<i64>,
    pub priority: Priority,
    /// 1..=2147483647; lower wins among the rules that match.
    pub ranking: i64,
    /// At least one.
    pub outcomes: Vec<Outcome>,
    pub insight_tag_rule: Option<Map<String, Value>>,
    pub internal_origin_uuid: Option<Uuid>,
}

/// Everything one version of a strategy says, as written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StrategyDraft {
    pub title: String,
    pub scenario: Option<String>,
    pub alert_sources: Vec<String>,
    pub attack_surfaces: Vec<String>,
    pub mitre_tactics: Vec<String>,
    pub instructions: Vec<DraftInstruction>,
    pub outcomes: Vec<DraftOutcome>,
    pub priorities: Vec<DraftPriority>,
}

/// A strategy to create, with its first version.
#[derive(Debug, Clone, PartialEq)]
pub struct NewStrategy {
    pub draft: StrategyDraft,
    /// A random v4 for strategies made over the API; a stable v5 for the ones Sleuth ships.
    pub internal_origin_uuid: Uuid,
    pub is_enabled: bool,
    /// Protected strategies cannot be changed, enabled, disabled or archived.
    pub is_protected: bool,
    pub author_id: Option<i64>,
}

/// An instruction as stored, with the versions that hold it.
#[derive(Debug, Clone, PartialEq)]
pub struct InstructionRecord {
    pub id: i64,
    pub content: String,
    pub internal_origin_uuid: Option<Uuid>,
    /// Ids of the versions (of its strategy) that hold this rule, oldest first.
    pub strategy_versions: Vec<i64>,
    /// Investigations this instruction was in force for.
    pub usage_count: i64,
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeRuleRecord {
    pub id: i64,
    pub condition: Value,
    pub outcome: CustomOutcomeValue,
    pub internal_origin_uuid: Option<Uuid>,
    pub strategy_versions: Vec<i64>,
    /// Investigations whose outcome this rule set.
    pub conclusions_affected: i64,
    pub created_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PriorityRuleRecord {
    pub id: i64,
    pub priority: Priority,
    pub ranking: i64,
    pub outcomes: Vec<Outcome>,
    pub insight_tag_rule: Option<Map<String, Value>>,
    pub internal_origin_uuid: Option<Uuid>,
    pub strategy_versions: Vec<i64>,
    /// Investigations whose priority this rule decided.
    pub priorities_affected: i64,
    pub created_at: Timestamp,
}

/// A strategy as of one of its versions (SPEC's "combined strategy and one version").
#[derive(Debug, Clone, PartialEq)]
pub struct StrategyRecord {
    pub id: i64,
    pub version_id: i64,
    pub internal_origin_uuid: Uuid,
    pub title: String,
    pub scenario: Option<String>,
    pub alert_sources: Vec<String>,
    pub attack_surfaces: Vec<String>,
    pub mitre_tactics: Vec<String>,
    pub is_archived: bool,
    pub is_enabled: bool,
    pub is_latest: bool,
    pub is_protected: bool,
    pub instructions: Vec<InstructionRecord>,
    pub outcomes: Vec<OutcomeRuleRecord>,
    pub priorities: Vec<PriorityRuleRecord>,
    pub total_conclusions_affected: i64,
    pub total_instructions_used: i64,
    pub total_priorities_affected: i64,
    /// When the strategy was created.
    pub created_at: Timestamp,
    /// When this version was made; for the latest version, the last change of the strategy
    /// (a new version, or enabling, disabling, archiving).
    pub updated_at: Timestamp,
}

impl StrategyRecord {
    /// The version as a draft, every rule kept by id: the base an update is applied to.
    pub fn to_draft(&self) -> StrategyDraft {
        StrategyDraft {
            title: self.title.clone(),
            scenario: self.scenario.clone(),
            alert_sources: self.alert_sources.clone(),
            attack_surfaces: self.attack_surfaces.clone(),
            mitre_tactics: self.mitre_tactics.clone(),
            instructions: self
                .instructions
                .iter()
                .map(|rule| DraftInstruction {
                    id: Some(rule.id),
                    content: rule.content.clone(),
                    internal_origin_uuid: rule.internal_origin_uuid,
                })
                .collect(),
            outcomes: self
                .outcomes
                .iter()
                .map(|rule| DraftOutcome {
                    id: Some(rule.id),
                    condition: rule.condition.clone(),
                    outcome: rule.outcome,
                    internal_origin_uuid: rule.internal_origin_uuid,
                })
                .collect(),
            priorities: self
                .priorities
                .iter()
                .map(|rule| DraftPriority {
                    id: Some(rule.id),
                    priority: rule.priority,
                    ranking: rule.ranking,
                    outcomes: rule.outcomes.clone(),
                    insight_tag_rule: rule.insight_tag_rule.clone(),
                    internal_origin_uuid: rule.internal_origin_uuid,
                })
                .collect(),
        }
    }

    /// The version as the engine applies it.
    pub fn to_engine(&self) -> Strategy {
        Strategy {
            strategy_id: self.id,
            version_id: self.version_id,
            title: self.title.clone(),
            scenario: self.scenario.clone(),
            alert_sources: self.alert_sources.clone(),
            attack_surfaces: self.attack_surfaces.clone(),
            mitre_tactics: self.mitre_tactics.clone(),
            instructions: self
                .instructions
                .iter()
                .map(|rule| StrategyInstruction {
                    id: rule.id,
                    content: rule.content.clone(),
                })
                .collect(),
            outcomes: self
                .outcomes
                .iter()
                .map(|rule| StrategyOutcome {
                    id: rule.id,
                    condition: rule.condition.clone(),
                    outcome: rule.outcome,
                })
                .collect(),
            priorities: self
                .priorities
                .iter()
                .map(|rule| StrategyPriority {
                    id: rule.id,
                    priority: rule.priority,
                    ranking: rule.ranking,
                    outcomes: rule.outcomes.clone(),
                    insight_tag_rule: rule.insight_tag_rule.clone(),
                })
                .collect(),
        }
    }
}

/// Which strategies to list (latest versions), by id.
#[derive(Debug, Clone, Default)]
pub struct StrategyQuery {
    pub is_archived: bool,
    pub is_enabled: Option<bool>,
    pub limit: u32,
    pub offset: u64,
}

#[derive(Debug, Clone)]
pub struct StrategyPage {
    pub total: u64,
    pub items: Vec<StrategyRecord>,
}

/// The strategies in force and the generation they were read at.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveStrategies {
    pub generation: i64,
    pub strategies: Vec<Strategy>,
}

/// What an update did.
#[derive(Debug, Clone, PartialEq)]
pub enum StrategyUpdate {
    /// A new version, now the latest.
    NewVersion(StrategyRecord),
    /// The draft said what the latest version says: no version was made.
    Unchanged(StrategyRecord),
}

impl StrategyUpdate {
    pub fn record(&self) -> &StrategyRecord {
        match self {
            StrategyUpdate::NewVersion(record) | StrategyUpdate::Unchanged(record) => record,
        }
    }
}

/// A change of a strategy's standing (not versioned).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrategyStanding {
    Enabled,
    Disabled,
    Archived,
}

#[async_trait]
pub trait StrategyStore: Send + Sync {
    /// Creates the strategy and its first version in one transaction.
    async fn create_strategy(
        &self,
        strategy: &NewStrategy,
        at: Timestamp,
    ) -> StoreResult<StrategyRecord>;
    /// The latest version. `NotFound` for an unknown id.
    async fn get_strategy(&self, strategy_id: i64) -> StoreResult<StrategyRecord>;
    /// Latest versions, by strategy id.
    async fn list_strategies(&self, query: &StrategyQuery) -> StoreResult<StrategyPage>;
    /// Every version of the strategy, newest first. `NotFound` for an unknown id.
    async fn list_strategy_versions(&self, strategy_id: i64) -> StoreResult<Vec<StrategyRecord>>;
    /// Makes the draft the new latest version, unless it says what the latest says.
    /// `NotFound` for an unknown id; `Rejected` when the strategy is archived or protected,
    /// or a rule id names no rule of this strategy of that kind.
    async fn update_strategy(
        &self,
        strategy_id: i64,
        draft: &StrategyDraft,
        author_id: Option<i64>,
        at: Timestamp,
    ) -> StoreResult<StrategyUpdate>;
    /// Enables, disables or archives. Archiving is final: an archived strategy never
    /// applies and cannot be changed or enabled. Doing what is already so is harmless. `NotFound` for an unknown id; `Rejected` when the strategy is
    /// protected, or when enabling an archived one.
    async fn set_strategy_standing(
        &self,
        strategy_id: i64,
        standing: StrategyStanding,
        at: Timestamp,
    ) -> StoreResult<()>;
    /// A number that moves on every change the engine would see (a strategy created, a
    /// new version, a change of standing) and on nothing else (not counters). A process
    /// keeps the active strategies and reads them again only when this moved.
    async fn strategy_generation(&self) -> StoreResult<i64>;
    /// The latest versions of the enabled, unarchived strategies, as the engine applies
    /// them, with the generation they are at (read first, so a change that commits
    /// meanwhile is read again next time rather than missed).
    async fn active_strategies(&self) -> StoreResult<ActiveStrategies>;
    /// Creates each of the strategies Sleuth ships that the store does not have yet (by
    /// `internal_origin_uuid`). Safe to run by several processes at once.
    async fn sync_builtin_strategies(
        &self,
        builtins: &[NewStrategy],
        at: Timestamp,
    ) -> StoreResult<()>;
}
