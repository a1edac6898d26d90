//! Which events a destination is told about.
//!
//! A rule lists the event names it wants and, for concluded investigations, narrows them:
//! outcomes, a priority floor, sources, insight tags. A list left empty does not narrow.
//! The tenant-union filter applies to every event that belongs to a tenant. Filters that
//! need a conclusion (outcome, priority, source, tags) do not apply to the other events:
//! a close is sent to the destinations that were told of the conclusion (the caller knows
//! which), a failed run or a system event to every destination that asks for it.

use serde::{Deserialize, Serialize};
use sleuth_domain::{Outcome, Priority};

use crate::event::{Event, EventKind, EventName};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The events this destination wants; at least one.
    pub events: Vec<EventName>,
    /// Concluded investigations with one of these outcomes (any when empty).
    #[serde(default)]
    pub outcomes: Vec<Outcome>,
    /// Concluded investigations of at least this priority.
    #[serde(default)]
    pub priority_at_least: Option<Priority>,
    /// Concluded investigations from one of these sources, compared without case.
    #[serde(default)]
    pub sources: Vec<String>,
    /// Events of a tenant in one of these tenant unions.
    #[serde(default)]
    pub tenant_unions: Vec<String>,
    /// Concluded investigations carrying at least one of these insight tags.
    #[serde(default)]
    pub insight_tags: Vec<String>,
}

impl Rule {
    /// What is wrong with the rule, every problem named; empty when it is usable.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.events.is_empty() {
            let names: Vec<&str> = EventName::ALL.iter().map(|name| name.as_str()).collect();
            problems.push(format!("events: name at least one of {}", names.join(", ")));
        }
        for (field, values) in [
            ("sources", &self.sources),
            ("tenant_unions", &self.tenant_unions),
            ("insight_tags", &self.insight_tags),
        ] {
            if values.iter().any(|value| value.trim().is_empty()) {
                problems.push(format!("{field}: an entry is empty"));
            }
        }
        problems
    }

    /// Whether `event` goes to a destination with this rule.
    pub fn matches(&self, event: &Event) -> bool {
        if !self.events.contains(&event.name()) {
            return false;
        }
        if !self.tenant_unions.is_empty()
            && !event
                .tenant_unions
                .iter()
                .any(|union| self.tenant_unions.contains(union))
        {
            return false;
        }
        let EventKind::InvestigationConcluded(concluded) = &event.kind else {
            return true;
        };
        (self.outcomes.is_empty() || self.outcomes.contains(&concluded.outcome))
            && self
                .priority_at_least
                .is_none_or(|floor| concluded.priority >= floor)
            && (self.sources.is_empty()
                || self
                    .sources
                    .iter()
                    .any(|source| source.eq_ignore_ascii_case(&concluded.source)))
            && (self.insight_tags.is_empty()
                || concluded
                    .insight_tags
                    .iter()
                    .any(|tag| self.insight_tags.contains(tag)))
    }
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;
    use crate::event::{Concluded, SystemNotice};

    fn concluded(outcome: Outcome, priority: Priority) -> Event {
        Event {
            id: Uuid::nil(),
            occurred_at: chrono::Utc::now(),
            tenant: Some("acme".into()),
            tenant_unions: vec!["emea".into()],
            kind: EventKind::InvestigationConcluded(Concluded {
                investigation_id: Uuid::nil(),
                title: "Mimikatz on WKS-0231".into(),
                outcome,
                priority,
                source: "CrowdStrike Falcon".into(),
                conclusion: "LSASS memory was read".into(),
                mitre_tactic: Some("Credential Access".into()),
                insight_tags: vec!["credential_dumping".into()],
                entities: vec![],
                link: "http://sleuth.example/i/1".into(),
            }),
        }
    }

    fn rule(events: &[EventName]) -> Rule {
        Rule {
            events: events.to_vec(),
            outcomes: vec![],
            priority_at_least: None,
            sources: vec![],
            tenant_unions: vec![],
            insight_tags: vec![],
        }
    }

    #[test]
    fn a_paging_rule_takes_urgent_breaches_only() {
        let mut paging = rule(&[EventName::InvestigationConcluded]);
        paging.outcomes = vec![Outcome::BreachedConfirmed];
        paging.priority_at_least = Some(Priority::Urgent);
        assert!(paging.matches(&concluded(Outcome::BreachedConfirmed, Priority::Urgent)));
        assert!(!paging.matches(&concluded(Outcome::BreachedConfirmed, Priority::Notable)));
        assert!(!paging.matches(&concluded(Outcome::BreachedSuspicious, Priority::Urgent)));
    }

    #[test]
    fn sources_tags_and_unions_narrow() {
        let event = concluded(Outcome::BreachedSuspicious, Priority::Notable);
        let mut narrowed = rule(&[EventName::InvestigationConcluded]);
        narrowed.sources = vec!["crowdstrike falcon".into()];
        assert!(narrowed.matches(&event));
        narrowed.insight_tags = vec!["phishing".into()];
        assert!(!narrowed.matches(&event));
        narrowed.insight_tags = vec!["credential_dumping".into()];
        narrowed.tenant_unions = vec!["apac".into()];
        assert!(!narrowed.matches(&event));
        narrowed.tenant_unions = vec!["emea".into()];
        assert!(narrowed.matches(&event));
    }

    #[test]
    fn events_not_asked_for_never_match_and_conclusion_filters_skip_others() {
        let system = Event {
            kind: EventKind::SystemEvent(SystemNotice {
                name: "connector_paused".into(),
                message: "Falcon answered 401".into(),
            }),
            ..concluded(Outcome::FalseAlert, Priority::Informational)
        };
        let mut concluded_only = rule(&[EventName::InvestigationConcluded]);
        assert!(!concluded_only.matches(&system));
        concluded_only.events.push(EventName::SystemEvent);
        concluded_only.outcomes = vec![Outcome::BreachedConfirmed];
        assert!(concluded_only.matches(&system));
    }

    #[test]
    fn problems_are_named() {
        let mut bad = rule(&[]);
        bad.sources = vec![" ".into()];
        let problems = bad.problems();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("investigation.concluded"));
        assert!(rule(&[EventName::SystemEvent]).problems().is_empty());
        let unknown =
            serde_json::from_str::<Rule>(r#"{"events": ["investigation.concluded"], "colour": 1}"#);
        assert!(unknown.is_err());
    }
}
