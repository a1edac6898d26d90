//! The events a destination can be told about. Each carries a stable id: a receiver that
//! sees the same id twice (a redelivery after a lost answer) has seen the same event.

use serde::{Deserialize, Serialize};
use sleuth_domain::{Outcome, Priority, Timestamp};
use uuid::Uuid;

/// One thing worth telling, as it is stored in the outbox and rendered per destination.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The idempotency id: the same for every delivery attempt of this event.
    pub id: Uuid,
    pub occurred_at: Timestamp,
    /// The tenant of the investigation the event is about, if any.
    pub tenant: Option<String>,
    /// The tenant unions that tenant belongs to (rules may filter on them).
    pub tenant_unions: Vec<String>,
    pub kind: EventKind,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    InvestigationConcluded(Concluded),
    /// An investigation stopped needing attention: an analyst's feedback says it was a
    /// false alert, or closed it. Paging destinations resolve what they opened.
    InvestigationClosed(Closed),
    ResponseRunFailed(RunFailed),
    SystemEvent(SystemNotice),
}

/// The event names rules select by, as the API spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EventName {
    #[serde(rename = "investigation.concluded")]
    InvestigationConcluded,
    #[serde(rename = "investigation.closed")]
    InvestigationClosed,
    #[serde(rename = "response_action.run_failed")]
    ResponseRunFailed,
    #[serde(rename = "system.event")]
    SystemEvent,
}

impl EventName {
    pub const ALL: [EventName; 4] = [
        EventName::InvestigationConcluded,
        EventName::InvestigationClosed,
        EventName::ResponseRunFailed,
        EventName::SystemEvent,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventName::InvestigationConcluded => "investigation.concluded",
            EventName::InvestigationClosed => "investigation.closed",
            EventName::ResponseRunFailed => "response_action.run_failed",
            EventName::SystemEvent => "system.event",
        }
    }
}

/// An investigation reached its conclusion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Concluded {
    pub investigation_id: Uuid,
    /// The alert's title (attacker-controlled).
    pub title: String,
    pub outcome: Outcome,
    pub priority: Priority,
    /// The alert's source label ("CrowdStrike Falcon").
    pub source: String,
    /// The one-line conclusion.
    pub conclusion: String,
    pub mitre_tactic: Option<String>,
    /// The insight tags the investigation carries (rules may filter on them).
    pub insight_tags: Vec<String>,
    /// The first few entities, "kind value" each, for a message a human reads.
    pub entities: Vec<String>,
    /// Where a person opens the investigation.
    pub link: String,
}

/// An investigation was closed after it concluded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Closed {
    pub investigation_id: Uuid,
    pub title: String,
    /// Why, in words: "marked a false alert by an analyst".
    pub reason: String,
    pub link: String,
}

/// A response action's run ended in failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFailed {
    pub run_id: Uuid,
    pub action_name: String,
    pub investigation_id: Option<Uuid>,
    /// failed, timed_out or error.
    pub status: String,
    /// The end of the run's output or its error, already cut short.
    pub detail: String,
    pub link: String,
}

/// A system event (a connector paused, a context that failed to load…).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemNotice {
    /// The system event's trigger name ("connector_paused").
    pub name: String,
    pub message: String,
}

impl Event {
    pub fn name(&self) -> EventName {
        match self.kind {
            EventKind::InvestigationConcluded(_) => EventName::InvestigationConcluded,
            EventKind::InvestigationClosed(_) => EventName::InvestigationClosed,
            EventKind::ResponseRunFailed(_) => EventName::ResponseRunFailed,
            EventKind::SystemEvent(_) => EventName::SystemEvent,
        }
    }

    /// A one-line summary a person reads first (a mail subject, a page's summary).
    pub fn headline(&self) -> String {
        match &self.kind {
            EventKind::InvestigationConcluded(concluded) => format!(
                "[{}] {}: {}",
                concluded.priority.as_str(),
                outcome_words(concluded.outcome),
                concluded.title
            ),
            EventKind::InvestigationClosed(closed) => {
                format!("Closed: {} ({})", closed.title, closed.reason)
            }
            EventKind::ResponseRunFailed(run) => {
                format!("Response action '{}' {}", run.action_name, run.status)
            }
            EventKind::SystemEvent(notice) => format!("{}: {}", notice.name, notice.message),
        }
    }

    /// Where a person follows the event up, if anywhere.
    pub fn link(&self) -> Option<&str> {
        match &self.kind {
            EventKind::InvestigationConcluded(concluded) => Some(&concluded.link),
            EventKind::InvestigationClosed(closed) => Some(&closed.link),
            EventKind::ResponseRunFailed(run) => Some(&run.link),
            EventKind::SystemEvent(_) => None,
        }
    }
}

/// An outcome as an analyst says it.
pub fn outcome_words(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::BreachedConfirmed => "confirmed breach",
        Outcome::BreachedSuspicious => "suspicious",
        Outcome::FalseAlert => "false alert",
        Outcome::Incomplete => "incomplete",
        Outcome::Ignored => "ignored",
    }
}
