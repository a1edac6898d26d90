//! PagerDuty Events API v2: a concluded investigation triggers an alert whose `dedup_key`
//! is the investigation's, so a re-sent event updates it rather than paging twice; a
//! closed investigation resolves it with the same key. JSON needs no escaping; the
//! summary is cut to PagerDuty's 1,024 characters and the key to its 255.

use serde_json::{Value, json};
use sleuth_normalize::text::truncate;

use super::{HttpMessage, Loudness, detail_lines};
use crate::event::{Event, EventKind};
use crate::template::{Template, headline};

/// PagerDuty's limit on `payload.summary`.
const SUMMARY_CHARS: usize = 1024;

/// The Events API v2 body for `event`, routed by the integration's `routing_key`.
pub fn render(event: &Event, routing_key: &str, template: Option<&Template>) -> HttpMessage {
    let dedup_key = dedup_key(event);
    if let EventKind::InvestigationClosed(_) = event.kind {
        return HttpMessage::json(&json!({
            "routing_key": routing_key,
            "event_action": "resolve",
            "dedup_key": dedup_key,
        }));
    }
    let severity = match Loudness::of(event) {
        Loudness::Critical => "critical",
        Loudness::Error => "error",
        Loudness::Warning => "warning",
        Loudness::Info => "info",
    };
    let details: serde_json::Map<String, Value> = detail_lines(event)
        .into_iter()
        .map(|(label, value)| (label.to_lowercase(), Value::String(value)))
        .collect();
    let source = match &event.kind {
        EventKind::InvestigationConcluded(concluded) => concluded
            .entities
            .first()
            .cloned()
            .unwrap_or_else(|| concluded.source.clone()),
        _ => "sleuth".to_string(),
    };
    let mut body = json!({
        "routing_key": routing_key,
        "event_action": "trigger",
        "dedup_key": dedup_key,
        "payload": {
            "summary": truncate(&headline(event, template), SUMMARY_CHARS),
            "source": truncate(&source, 255),
            "severity": severity,
            "timestamp": event.occurred_at.to_rfc3339(),
            "component": "sleuth",
            "group": event.tenant,
            "class": event.name().as_str(),
            "custom_details": details,
        },
        "client": "Sleuth",
    });
    if let Some(link) = event.link() {
        body["client_url"] = json!(link);
        body["links"] = json!([{"href": link, "text": "Open in Sleuth"}]);
    }
    HttpMessage::json(&body)
}

/// One key per investigation (or per run, or per system event): what PagerDuty groups by.
fn dedup_key(event: &Event) -> String {
    match &event.kind {
        EventKind::InvestigationConcluded(concluded) => {
            format!("sleuth-investigation-{}", concluded.investigation_id)
        }
        EventKind::InvestigationClosed(closed) => {
            format!("sleuth-investigation-{}", closed.investigation_id)
        }
        EventKind::ResponseRunFailed(run) => format!("sleuth-run-{}", run.run_id),
        EventKind::SystemEvent(_) => format!("sleuth-event-{}", event.id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::samples;

    #[test]
    fn a_conclusion_triggers_and_its_close_resolves_the_same_alert() {
        let trigger: Value =
            serde_json::from_slice(&render(&samples::concluded(), "R0UTING", None).body).unwrap();
        assert_eq!(trigger["event_action"], "trigger");
        assert_eq!(trigger["routing_key"], "R0UTING");
        assert_eq!(trigger["payload"]["severity"], "critical");
        assert_eq!(trigger["payload"]["source"], "host WKS-0231");
        assert_eq!(
            trigger["payload"]["custom_details"]["outcome"],
            "confirmed breach"
        );
        assert_eq!(
            trigger["links"][0]["href"],
            "https://sleuth.example/investigations/abcd"
        );
        let resolve: Value =
            serde_json::from_slice(&render(&samples::closed(), "R0UTING", None).body).unwrap();
        assert_eq!(resolve["event_action"], "resolve");
        assert_eq!(resolve["dedup_key"], trigger["dedup_key"]);
        assert!(resolve.get("payload").is_none());
    }

    #[test]
    fn the_summary_fits_pagerdutys_limit() {
        let mut event = samples::concluded();
        if let EventKind::InvestigationConcluded(concluded) = &mut event.kind {
            concluded.title = "x".repeat(5000);
        }
        let body: Value = serde_json::from_slice(&render(&event, "k", None).body).unwrap();
        let summary = body["payload"]["summary"].as_str().unwrap();
        assert_eq!(summary.chars().count(), SUMMARY_CHARS);
    }
}
