//! Custom strategies as the engine applies them: scope, outcome rules, priority rules and
//! free-text instructions, one version of one strategy.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{CustomOutcomeValue, Outcome, Priority};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Strategy {
    pub strategy_id: i64,
    pub version_id: i64,
    pub title: String,
    pub scenario: Option<String>,
    /// Empty means every source; otherwise the alert's direct_source_label must be listed.
    pub alert_sources: Vec<String>,
    pub attack_surfaces: Vec<String>,
    pub mitre_tactics: Vec<String>,
    pub instructions: Vec<StrategyInstruction>,
    pub outcomes: Vec<StrategyOutcome>,
    pub priorities: Vec<StrategyPriority>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyInstruction {
    pub id: i64,
    pub content: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyOutcome {
    pub id: i64,
    /// JSON Logic over the investigation's facts.
    pub condition: Value,
    pub outcome: CustomOutcomeValue,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyPriority {
    pub id: i64,
    pub priority: Priority,
    /// Lower wins among the rules that match.
    pub ranking: i64,
    pub outcomes: Vec<Outcome>,
    pub insight_tag_rule: Option<Map<String, Value>>,
}

/// Which strategy rules shaped one investigation, so their counters can count.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StrategyEffects {
    pub strategy_version_ids: Vec<i64>,
    pub custom_outcome_id: Option<i64>,
    pub custom_priority_id: Option<i64>,
    pub instruction_ids: Vec<i64>,
}
