//! The generic webhook: the event as JSON, signed (see [`crate::signature`]).
//!
//! ```json
//! {"id": "…", "type": "investigation.concluded", "occurred_at": "…", "tenant": "acme",
//!  "data": {"investigation_id": "…", "title": "…", "outcome": "COMPLETED_BREACHED_CONFIRMED", …}}
//! ```
//! JSON needs no escaping beyond its own; the receiver decides how to show the strings.

use serde_json::json;

use super::HttpMessage;
use crate::event::{Event, EventKind};
use crate::signature;

/// The body and headers for `event`, signed with `secret` at `timestamp` (unix seconds).
pub fn render(event: &Event, secret: &[u8], timestamp: i64) -> HttpMessage {
    let data = match &event.kind {
        EventKind::InvestigationConcluded(concluded) => serde_json::to_value(concluded),
        EventKind::InvestigationClosed(closed) => serde_json::to_value(closed),
        EventKind::ResponseRunFailed(run) => serde_json::to_value(run),
        EventKind::SystemEvent(notice) => serde_json::to_value(notice),
    }
    .unwrap_or_default();
    let body = json!({
        "id": event.id,
        "type": event.name().as_str(),
        "occurred_at": event.occurred_at.to_rfc3339(),
        "tenant": event.tenant,
        "data": data,
    });
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
}
