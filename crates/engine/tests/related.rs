//! The related-alert hypothesis lists what the analyst needs of each related alert, the
//! twenty most related at most, in the order history gave them.

use chrono::TimeZone;
use serde_json::{Map, Value, json};
use sleuth_domain::{Entity, EntityKind, History, Outcome, Priority, RelatedAlert};
use sleuth_engine::{Context, ContextDocument, EngineInput};

#[test]
fn the_hypothesis_lists_the_first_twenty_related_alerts_with_their_verdicts() {
    let alert = json!({
        "id": "related-1",
        "title": "Suspicious PowerShell on WKS-9",
        "severity": "high",
        "host": "WKS-9",
        "user": "bob@example.com",
        "created": "2026-03-01T12:00:00Z",
        "command_line": "powershell -enc AAAA",
    });
    let parsed = sleuth_parsers::parse_alert(None, &alert, chrono::Utc::now()).expect("parses");
    let host = Entity::new(EntityKind::Host, "wks-9");
    let first_time = chrono::Utc.with_ymd_and_hms(2026, 3, 1, 11, 0, 0).unwrap();
    let history = History {
        related_alerts: (0..25)
            .map(|index| RelatedAlert {
                investigation_id: 100 + index,
                title: format!("Earlier alert {index}"),
                alert_type: "generic".into(),
                direct_source_label: if index % 2 == 0 { "EDR" } else { "SIEM" }.into(),
                create_time: first_time - chrono::Duration::minutes(index),
                outcome: (index == 0).then_some(Outcome::BreachedConfirmed),
                priority: (index == 0).then_some(Priority::Urgent),
                shared_entities: vec![host.clone()],
            })
            .collect(),
        ..History::default()
    };
    let context = Context::build(ContextDocument::default()).expect("empty context");
    let result = sleuth_engine::investigate(
        &EngineInput {
            alert: &parsed,
            raw: &Map::new(),
            history: &history,
            facts: &sleuth_domain::Facts::default(),
            strategies: &[],
            now: chrono::Utc::now(),
        },
        &context,
    );
    let hypothesis = result
        .related_alert_hypothesis
        .expect("related alerts make a hypothesis");
    let related = hypothesis["related"].as_array().expect("an array");
    assert_eq!(related.len(), 20);
    assert_eq!(
        related[0],
        json!({
            "investigation_id": 100,
            "title": "Earlier alert 0",
            "alert_type": "generic",
            "source": "EDR",
            "create_time": "2026-03-01T11:00:00Z",
            "outcome": "COMPLETED_BREACHED_CONFIRMED",
            "priority": "urgent",
            "shared_entities": [{"type": "host", "value": "wks-9"}],
        })
    );
    let ids: Vec<i64> = related
        .iter()
        .map(|entry| entry["investigation_id"].as_i64().unwrap_or(0))
        .collect();
    assert_eq!(ids, (100..120).collect::<Vec<_>>());
    assert_eq!(related[19]["outcome"], Value::Null);
}
