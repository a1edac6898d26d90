//! What Sleuth already knows when a new alert arrives: earlier alerts and verdicts on the
//! same things, and what the operator wrote down. The store gathers it; the engine reads it.

use serde::{Deserialize, Serialize};

use crate::{Entity, Outcome, Priority, Timestamp};

/// Everything from the past that may bear on one new alert.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// Recent alerts (inside the correlation window) that share entities with this one.
    pub related_alerts: Vec<RelatedAlert>,
    /// Concluded investigations on the same entities, detection or source, newest first,
    /// with the analyst's verdict where one was given.
    pub prior_verdicts: Vec<PriorVerdict>,
    /// Operator knowledge ("context memory") whose entities this alert touches.
    pub memory: Vec<MemoryItem>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelatedAlert {
    pub investigation_id: i64,
    pub title: String,
    pub alert_type: String,
    pub direct_source_label: String,
    pub create_time: Timestamp,
    pub outcome: Option<Outcome>,
    pub priority: Option<Priority>,
    pub shared_entities: Vec<Entity>,
}

/// How an earlier investigation relates to the new alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Likeness {
    /// The same detection (alert_type) from the same source on the same entities.
    SameDetectionSameEntities,
    /// The same detection from the same source, other entities.
    SameDetection,
    /// Another detection that shares entities.
    SharedEntities,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriorVerdict {
    pub investigation_id: i64,
    pub title: String,
    pub alert_type: String,
    pub direct_source_label: String,
    pub likeness: Likeness,
    pub shared_entities: Vec<Entity>,
    /// What Sleuth concluded then.
    pub engine_outcome: Option<Outcome>,
    /// What an analyst set in feedback, when they corrected or confirmed it.
    pub analyst_outcome: Option<Outcome>,
    pub analyst_priority: Option<Priority>,
    pub analyst_note: Option<String>,
    /// True once the analyst marked the feedback reviewed.
    pub reviewed: bool,
    pub decided_at: Timestamp,
}

/// What the operator says about an entity in context memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryVerdict {
    Benign,
    Malicious,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryItem {
    pub item_id: i64,
    /// The operator's words, cited as evidence.
    pub text: String,
    pub entities: Vec<Entity>,
    /// Set for structured hints; free text carries no verdict of its own.
    pub verdict: Option<MemoryVerdict>,
}
