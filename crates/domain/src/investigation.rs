//! What an investigation concludes: the engine's answer for one alert.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{FindingOutcome, Outcome, Priority, StrategyEffects};

/// One thing checked and what it showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// A string, object or array: the observation itself.
    pub data: Value,
    /// What kind of check produced it (`threat_intel_match`, `analyst_feedback`, ...).
    pub evidence_type: String,
    /// `for` or `against` compromise, or another short label; null when neutral.
    pub tag: Option<String>,
}

/// One line of reasoning, with the evidence behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub headline: String,
    pub finding: String,
    pub artifacts: Vec<String>,
    pub evidences: Vec<Evidence>,
    pub outcome: FindingOutcome,
}

/// Everything the engine concludes about one alert. The store keeps it as-is; the server
/// shapes it into SPEC's single-read and list-item forms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvestigationResult {
    pub outcome: Outcome,
    pub priority: Priority,
    pub conclusion: String,
    pub conclusion_summary: Option<String>,
    pub alert_summary: Option<String>,
    pub exec_summary: Option<String>,
    pub attack_surface: Option<String>,
    /// The MITRE ATT&CK tactic name ("Credential Access").
    pub mitre_tactic: Option<String>,
    pub findings: Vec<Finding>,
    pub findings_ranking: Map<String, Value>,
    pub key_findings: Map<String, Value>,
    pub insight_tags: Map<String, Value>,
    pub interview_proposals: Map<String, Value>,
    pub recommended_remediations: Vec<String>,
    pub related_alert_hypothesis: Option<Map<String, Value>>,
    /// What enrichment looked up, for the alert's `enrich_result`.
    pub enrich_result: Option<Map<String, Value>>,
    /// Set when a custom strategy's outcome rule overrode the engine's own outcome:
    /// which rule, and what the engine would have said.
    pub custom_outcome: Option<Map<String, Value>>,
    pub strategy_effects: StrategyEffects,
}
