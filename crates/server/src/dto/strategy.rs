//! SPEC's Custom strategy (combined strategy and one version) with its Custom instruction,
//! Custom outcome and Custom priority; our list page; and the backtest answer. The request
//! bodies live with their routes (`routes::strategies`), where they are validated.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use sleuth_domain::{CustomOutcomeValue, Outcome, Priority};
use sleuth_store::{InstructionRecord, OutcomeRuleRecord, PriorityRuleRecord, StrategyRecord};
use utoipa::ToSchema;
use uuid::Uuid;

/// SPEC's Custom instruction: free text in force for the alerts the strategy covers.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = CustomInstruction)]
pub struct CustomInstructionDto {
    pub id: i64,
    pub content: String,
    pub created_at: DateTime<Utc>,
    /// Set for the rules Sleuth ships.
    pub internal_origin_uuid: Option<Uuid>,
    /// The versions (`version_id`) of its strategy that hold this rule.
    pub strategy_versions: Vec<i64>,
    /// Investigations this instruction was in force for.
    pub usage_count: i64,
}

impl From<&InstructionRecord> for CustomInstructionDto {
    fn from(rule: &InstructionRecord) -> CustomInstructionDto {
        CustomInstructionDto {
            id: rule.id,
            content: rule.content.clone(),
            created_at: rule.created_at,
            internal_origin_uuid: rule.internal_origin_uuid,
            strategy_versions: rule.strategy_versions.clone(),
            usage_count: rule.usage_count,
        }
    }
}

/// SPEC's Custom outcome: when `condition` (JSON Logic over the investigation's facts)
/// holds, the investigation's outcome is `outcome`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = CustomOutcome)]
pub struct CustomOutcomeDto {
    pub id: i64,
    #[schema(schema_with = super::schema::free_object)]
    pub condition: Value,
    #[schema(schema_with = super::schema::custom_outcome)]
    pub outcome: CustomOutcomeValue,
    /// Investigations whose outcome this rule set.
    pub conclusions_affected: i64,
    pub created_at: DateTime<Utc>,
    pub internal_origin_uuid: Option<Uuid>,
    pub strategy_versions: Vec<i64>,
}

impl From<&OutcomeRuleRecord> for CustomOutcomeDto {
    fn from(rule: &OutcomeRuleRecord) -> CustomOutcomeDto {
        CustomOutcomeDto {
            id: rule.id,
            condition: rule.condition.clone(),
            outcome: rule.outcome,
            conclusions_affected: rule.conclusions_affected,
            created_at: rule.created_at,
            internal_origin_uuid: rule.internal_origin_uuid,
            strategy_versions: rule.strategy_versions.clone(),
        }
    }
}

/// SPEC's Custom priority: for investigations whose outcome is one of `outcomes` (and
/// whose facts satisfy `insight_tag_rule`, when set), the priority is `priority`; the
/// lowest `ranking` among the matching rules of every strategy wins.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = CustomPriority)]
pub struct CustomPriorityDto {
    pub id: i64,
    #[schema(schema_with = super::schema::priority)]
    pub priority: Priority,
    /// 1..2147483647; lower wins.
    #[schema(minimum = 1, maximum = 2147483647)]
    pub ranking: i64,
    #[schema(schema_with = super::schema::outcome_list)]
    pub outcomes: Vec<Outcome>,
    /// JSON Logic over the investigation's facts, or null (the outcomes alone decide).
    #[schema(schema_with = super::schema::free_object_nullable)]
    pub insight_tag_rule: Option<Map<String, Value>>,
    /// Investigations whose priority this rule decided.
    pub priorities_affected: i64,
    pub created_at: DateTime<Utc>,
    pub internal_origin_uuid: Option<Uuid>,
    pub strategy_versions: Vec<i64>,
}

impl From<&PriorityRuleRecord> for CustomPriorityDto {
    fn from(rule: &PriorityRuleRecord) -> CustomPriorityDto {
        CustomPriorityDto {
            id: rule.id,
            priority: rule.priority,
            ranking: rule.ranking,
            outcomes: rule.outcomes.clone(),
            insight_tag_rule: rule.insight_tag_rule.clone(),
            priorities_affected: rule.priorities_affected,
            created_at: rule.created_at,
            internal_origin_uuid: rule.internal_origin_uuid,
            strategy_versions: rule.strategy_versions.clone(),
        }
    }
}

/// SPEC's Custom strategy: the strategy with one of its versions.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = CustomStrategy)]
pub struct CustomStrategyDto {
    pub id: i64,
    /// This version's id; every change of the strategy makes a new one.
    pub version_id: i64,
    pub internal_origin_uuid: Uuid,
    pub title: String,
    pub scenario: Option<String>,
    /// Alert sources it covers (schema key, integration or source label); empty: all.
    pub alert_sources: Vec<String>,
    /// Attack surfaces it covers (Endpoint, Identity, Cloud, Email, Network, Application);
    /// empty: all.
    pub attack_surfaces: Vec<String>,
    /// MITRE ATT&CK tactics it covers (canonical names); empty: all.
    pub mitre_tactics: Vec<String>,
    pub is_archived: bool,
    pub is_enabled: bool,
    /// Whether this is the strategy's current version.
    pub is_latest: bool,
    /// Shipped by Sleuth: cannot be changed, enabled, disabled or archived.
    pub is_protected: bool,
    pub instructions: Vec<CustomInstructionDto>,
    pub outcomes: Vec<CustomOutcomeDto>,
    pub priorities: Vec<CustomPriorityDto>,
    pub total_conclusions_affected: i64,
    pub total_instructions_used: i64,
    pub total_priorities_affected: i64,
    /// When the strategy was created.
    pub created_at: DateTime<Utc>,
    /// When this version was made; on the latest version, the strategy's last change.
    pub updated_at: DateTime<Utc>,
}

impl From<&StrategyRecord> for CustomStrategyDto {
    fn from(strategy: &StrategyRecord) -> CustomStrategyDto {
        CustomStrategyDto {
            id: strategy.id,
            version_id: strategy.version_id,
            internal_origin_uuid: strategy.internal_origin_uuid,
            title: strategy.title.clone(),
            scenario: strategy.scenario.clone(),
            alert_sources: strategy.alert_sources.clone(),
            attack_surfaces: strategy.attack_surfaces.clone(),
            mitre_tactics: strategy.mitre_tactics.clone(),
            is_archived: strategy.is_archived,
            is_enabled: strategy.is_enabled,
            is_latest: strategy.is_latest,
            is_protected: strategy.is_protected,
            instructions: strategy
                .instructions
                .iter()
                .map(CustomInstructionDto::from)
                .collect(),
            outcomes: strategy
                .outcomes
                .iter()
                .map(CustomOutcomeDto::from)
                .collect(),
            priorities: strategy
                .priorities
                .iter()
                .map(CustomPriorityDto::from)
                .collect(),
            total_conclusions_affected: strategy.total_conclusions_affected,
            total_instructions_used: strategy.total_instructions_used,
            total_priorities_affected: strategy.total_priorities_affected,
            created_at: strategy.created_at,
            updated_at: strategy.updated_at,
        }
    }
}

/// A page of custom strategies (latest versions), by id.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = CustomStrategyPage)]
pub struct CustomStrategyPageDto {
    /// How many strategies match the filters (all pages).
    pub count: u64,
    pub next: Option<String>,
    pub previous: Option<String>,
    pub results: Vec<CustomStrategyDto>,
}

/// How many investigations went from one value to another.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq, PartialOrd, Ord)]
#[schema(as = BacktestChange)]
pub struct BacktestChangeDto {
    pub from: String,
    pub to: String,
    pub count: u64,
}

/// What one investigation would become with the draft.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = BacktestAffected)]
pub struct BacktestAffectedDto {
    pub investigation_id: i64,
    #[schema(schema_with = super::schema::outcome)]
    pub baseline_outcome: Outcome,
    #[schema(schema_with = super::schema::outcome)]
    pub draft_outcome: Outcome,
    #[schema(schema_with = super::schema::priority)]
    pub baseline_priority: Priority,
    #[schema(schema_with = super::schema::priority)]
    pub draft_priority: Priority,
}

/// The answer of a backtest: the engine re-ran over the period's investigations with the
/// strategies in force (baseline) and with the draft; nothing was stored.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = BacktestResult)]
pub struct BacktestDto {
    pub from: DateTime<Utc>,
    pub until: DateTime<Utc>,
    /// Investigations re-run (concluded ones whose alert was created in the period,
    /// oldest first; coalesced ones are left out: the engine never ran for them).
    pub investigations_considered: u64,
    /// True when the period held more than `max_investigations`: only the oldest were run.
    pub truncated: bool,
    /// How many investigations would change outcome, by (from, to).
    pub outcome_changes: Vec<BacktestChangeDto>,
    /// How many investigations would change priority, by (from, to).
    pub priority_changes: Vec<BacktestChangeDto>,
    /// Every investigation whose outcome or priority would change.
    pub affected_investigation_ids: Vec<i64>,
    pub affected: Vec<BacktestAffectedDto>,
    /// Investigations the engine failed on (skipped; logged for the operator).
    pub failed_investigation_ids: Vec<i64>,
}
