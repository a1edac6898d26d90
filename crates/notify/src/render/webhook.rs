//! The generic webhook: the event as JSON, signed (see [`crate::signature`]).
//!
//! ```json
//! {"id": "…", "type": "investigation.concluded", "occurred_at": "…", "tenant": "acme",
//!  "data": {"investigation_id": "…", "title": "…", "outcome": "COMPLETED_BREACHED_CONFIRMED", …}}
//! ```
//! JSON needs no escaping beyond its own; the receiver decides how to show the strings.

use serde::Serialize;
use uuid::Uuid;

use super::HttpMessage;
use crate::event::{Closed, Concluded, Event, EventKind, RunFailed, SystemNotice};
use crate::signature;

/// The body, in the order its fields are written. Serialized straight to bytes: a
/// conclusion is told to every destination that wants it, one render each.
#[derive(Serialize)]
struct Body<'a> {
    id: &'a Uuid,
    #[serde(rename = "type")]
    name: &'a str,
    occurred_at: String,
    tenant: &'a Option<String>,
    data: Data<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Data<'a> {
    Concluded(&'a Concluded),
    Closed(&'a Closed),
    RunFailed(&'a RunFailed),
    Notice(&'a SystemNotice),
}

/// The body and headers for `event`, signed with `secret` at `timestamp` (unix seconds).
pub fn render(event: &Event, secret: &[u8], timestamp: i64) -> HttpMessage {
    let data = match &event.kind {
        EventKind::InvestigationConcluded(concluded) => Data::Concluded(concluded),
        EventKind::InvestigationClosed(closed) => Data::Closed(closed),
        EventKind::ResponseRunFailed(run) => Data::RunFailed(run),
        EventKind::SystemEvent(notice) => Data::Notice(notice),
    };
    let body = Body {
        id: &event.id,
        name: event.name().as_str(),
        occurred_at: event.occurred_at.to_rfc3339(),
        tenant: &event.tenant,
        data,
    };
    let mut message = HttpMessage::json(&body);
    message.headers.push((
        signature::HEADER,
        signature::sign(secret, timestamp, &message.body),
    ));
    message
        .headers
        .push(("X-Sleuth-Event-Id", event.id.to_string()));
    message
        .headers
        .push(("X-Sleuth-Event", event.name().as_str().to_string()));
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::samples;

    #[test]
    fn the_body_names_the_event_and_verifies_as_a_receiver_checks_it() {
        let event = samples::concluded();
        let message = render(&event, b"secret", 1_772_366_400);
        let body: serde_json::Value = serde_json::from_slice(&message.body).unwrap();
        assert_eq!(body["type"], "investigation.concluded");
        assert_eq!(body["id"], event.id.to_string());
        assert_eq!(body["data"]["title"], samples::HOSTILE_TITLE);
        assert_eq!(body["data"]["outcome"], "COMPLETED_BREACHED_CONFIRMED");
        let header = |name: &str| {
            message
                .headers
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| value.clone())
                .unwrap()
        };
        assert_eq!(header("X-Sleuth-Event-Id"), event.id.to_string());
        let signed = header(signature::HEADER);
        assert_eq!(
            signature::verify(b"secret", &signed, &message.body, 1_772_366_400, 300),
            Ok(())
        );
    }

    #[test]
    fn the_body_holds_the_event_fields_in_order_and_its_data_whole() {
        let notice = Event {
            kind: EventKind::SystemEvent(SystemNotice {
                name: "api_key_created".into(),
                message: "API key 'ci' made".into(),
            }),
            ..samples::concluded()
        };
        for event in [samples::concluded(), samples::closed(), notice] {
            let message = render(&event, b"secret", 1_772_366_400);
            let text = String::from_utf8(message.body).unwrap();
            let at = |key: &str| text.find(&format!("\"{key}\":")).unwrap();
            assert!(
                at("id") < at("type") && at("type") < at("occurred_at"),
                "{text}"
            );
            assert!(
                at("occurred_at") < at("tenant") && at("tenant") < at("data"),
                "{text}"
            );
            let body: serde_json::Value = serde_json::from_str(&text).unwrap();
            let data = match &event.kind {
                EventKind::InvestigationConcluded(concluded) => serde_json::to_value(concluded),
                EventKind::InvestigationClosed(closed) => serde_json::to_value(closed),
                EventKind::ResponseRunFailed(run) => serde_json::to_value(run),
                EventKind::SystemEvent(notice) => serde_json::to_value(notice),
            }
            .unwrap();
            assert_eq!(body["data"], data);
            assert_eq!(body["tenant"], serde_json::to_value(&event.tenant).unwrap());
            assert_eq!(body["occurred_at"], event.occurred_at.to_rfc3339());
        }
    }
}
