//! One event in each destination's own wire shape. Every renderer escapes what an alert
//! supplied for its medium (see each module) and cuts long texts to what the receiver
//! accepts, so a hostile title neither breaks the message nor gets it refused.

pub mod email;
pub mod pagerduty;
pub mod slack;
pub mod syslog;
pub mod teams;
pub mod webhook;

use sleuth_domain::Outcome;

use crate::event::{Event, EventKind};

/// An HTTP request body with the headers it needs (the URL is the destination's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpMessage {
    pub body: Vec<u8>,
    pub headers: Vec<(&'static str, String)>,
}

impl HttpMessage {
    fn json(body: &impl serde::Serialize) -> HttpMessage {
        HttpMessage {
            body: serde_json::to_vec(body).unwrap_or_default(),
            headers: vec![("Content-Type", "application/json".to_string())],
        }
    }
}

/// How loud an event is, for destinations with their own scale (PagerDuty, syslog, CEF).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Loudness {
    Info,
    Warning,
    Error,
    Critical,
}

impl Loudness {
    pub fn of(event: &Event) -> Loudness {
        use sleuth_domain::Priority::Urgent;
        match &event.kind {
            EventKind::InvestigationConcluded(concluded) => {
                match (concluded.outcome, concluded.priority) {
                    (Outcome::BreachedConfirmed, Urgent) => Loudness::Critical,
                    (Outcome::BreachedConfirmed, _) | (Outcome::BreachedSuspicious, Urgent) => {
                        Loudness::Error
                    }
                    (Outcome::BreachedSuspicious, _) => Loudness::Warning,
                    _ => Loudness::Info,
                }
            }
            EventKind::InvestigationClosed(_) => Loudness::Info,
            EventKind::ResponseRunFailed(_) => Loudness::Error,
            EventKind::SystemEvent(_) => Loudness::Warning,
        }
    }
}

/// The lines a person reads under the headline: outcome, priority, source, tactic,
/// conclusion, entities (or the failed run's detail, or the system event's message).
fn detail_lines(event: &Event) -> Vec<(&'static str, String)> {
    match &event.kind {
        EventKind::InvestigationConcluded(concluded) => {
            let mut lines = vec![
                (
                    "Outcome",
                    crate::event::outcome_words(concluded.outcome).to_string(),
                ),
                ("Priority", concluded.priority.as_str().to_string()),
                ("Source", concluded.source.clone()),
            ];
            if let Some(tactic) = &concluded.mitre_tactic {
                lines.push(("Tactic", tactic.clone()));
            }
            lines.push(("Conclusion", concluded.conclusion.clone()));
            if !concluded.entities.is_empty() {
                lines.push(("Entities", concluded.entities.join(", ")));
            }
            lines
        }
        EventKind::InvestigationClosed(closed) => vec![("Reason", closed.reason.clone())],
        EventKind::ResponseRunFailed(run) => vec![
            ("Status", run.status.clone()),
            ("Detail", run.detail.clone()),
        ],
        EventKind::SystemEvent(notice) => vec![("Message", notice.message.clone())],
    }
}

#[cfg(test)]
pub(crate) mod samples {
    //! Events whose every alert-supplied field is hostile, for the renderers' tests.
    use sleuth_domain::{Outcome, Priority};
    use uuid::Uuid;

    use crate::event::{Closed, Concluded, Event, EventKind};

    pub(crate) const HOSTILE_TITLE: &str = "<!channel> *Mimikatz* on [WKS-0231](http://evil.example) |x=1\\\r\nBcc: victim@example.com";

    pub(crate) fn concluded() -> Event {
        Event {
            id: Uuid::from_u128(0x1234),
            occurred_at: chrono::DateTime::parse_from_rfc3339("2026-03-01T12:00:00Z")
                .unwrap()
                .with_timezone(&chrono::Utc),
            tenant: Some("acme".into()),
            tenant_unions: vec![],
            kind: EventKind::InvestigationConcluded(Concluded {
                investigation_id: Uuid::from_u128(0xabcd),
                title: HOSTILE_TITLE.into(),
                outcome: Outcome::BreachedConfirmed,
                priority: Priority::Urgent,
                source: "CrowdStrike Falcon".into(),
                conclusion: "LSASS memory was read by <procdump.exe> & dumped".into(),
                mitre_tactic: Some("Credential Access".into()),
                insight_tags: vec![],
                entities: vec!["host WKS-0231".into(), "user j.doe".into()],
                link: "https://sleuth.example/investigations/abcd".into(),
            }),
        }
    }

    pub(crate) fn closed() -> Event {
        Event {
            kind: EventKind::InvestigationClosed(Closed {
                investigation_id: Uuid::from_u128(0xabcd),
                title: HOSTILE_TITLE.into(),
                reason: "marked a false alert by an analyst".into(),
                link: "https://sleuth.example/investigations/abcd".into(),
            }),
            ..concluded()
        }
    }
}
