//! Notification destinations and their deliveries (ours): settings as given (secrets only
//! named, never their values), the rule, and the delivery log.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sleuth_store::{DeliveryRecord, NotificationDestinationRecord};
use utoipa::ToSchema;

#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = NotificationDestination)]
pub struct NotificationDestinationDto {
    pub id: i64,
    pub name: String,
    /// webhook, slack, teams, pagerduty, syslog or email.
    pub kind: String,
    /// As given: the names of the secrets holding URLs and keys, and the kind's options.
    #[schema(value_type = Object)]
    pub settings: serde_json::Value,
    /// Which events it is told of (docs/notifications.md, "Rules").
    #[schema(value_type = Object)]
    pub rule: serde_json::Value,
    /// Its own headline, with placeholders; `null`: the default headline.
    pub template: Option<String>,
    /// false: disabled, told nothing (events meanwhile are not queued for it later).
    pub enabled: bool,
    pub rate_limit_per_minute: Option<i64>,
    pub state: NotificationStateDto,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What its deliveries did.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = NotificationState)]
pub struct NotificationStateDto {
    /// Deliveries waiting to be sent (or sent again).
    pub pending: i64,
    pub delivered: i64,
    /// Given up; each can be sent again.
    pub dead: i64,
    /// A deliverer holds it now.
    pub delivering: bool,
    /// The destination asked for a pause (429 with Retry-After) until then.
    pub paused_until: Option<DateTime<Utc>>,
    pub last_delivered_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    pub last_error_at: Option<DateTime<Utc>>,
    /// The last system event it has considered.
    pub cursor: i64,
}

impl NotificationDestinationDto {
    pub fn new(record: &NotificationDestinationRecord, now: DateTime<Utc>) -> Self {
        NotificationDestinationDto {
            id: record.id,
            name: record.name.clone(),
            kind: record.kind.clone(),
            settings: record.settings.clone(),
            rule: record.rule.clone(),
            template: record.template.clone(),
            enabled: record.enabled,
            rate_limit_per_minute: record.rate_limit_per_minute,
            state: NotificationStateDto {
                pending: record.pending,
                delivered: record.delivered,
                dead: record.dead,
                delivering: record.lease_expires_at.is_some_and(|until| until > now),
                paused_until: record.paused_until.filter(|until| *until > now),
                last_delivered_at: record.last_delivered_at,
                last_error: record.last_error.clone(),
                last_error_at: record.last_error_at,
                cursor: record.cursor,
            },
            created_at: record.created_at,
            updated_at: record.updated_at,
        }
    }
}

/// One event's delivery to a destination.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = NotificationDelivery)]
pub struct DeliveryDto {
    pub id: i64,
    pub destination_id: i64,
    /// The system event it tells of.
    pub system_event_id: Option<i64>,
    /// The idempotency id the receiver sees (`X-Sleuth-Event-Id`, PagerDuty's event).
    pub event_id: String,
    /// investigation.concluded, investigation.closed or system.event.
    pub event_type: Option<String>,
    /// pending, delivered or dead.
    pub state: String,
    pub attempts: i64,
    /// When it is tried next (pending).
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// Why the last attempt failed: what the receiver answered, or why it could not be
    /// reached.
    pub last_error: Option<String>,
    /// What the receiver said when it took it.
    pub delivered_detail: Option<String>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<&DeliveryRecord> for DeliveryDto {
    fn from(record: &DeliveryRecord) -> Self {
        DeliveryDto {
            id: record.id,
            destination_id: record.destination_id,
            system_event_id: record.system_event_id,
            event_id: record.event_id.clone(),
            event_type: record
                .event
                .get("kind")
                .and_then(|kind| kind.get("type"))
                .and_then(serde_json::Value::as_str)
                .map(event_type),
            state: record.state.as_str().to_string(),
            attempts: record.attempts,
            next_attempt_at: (record.state == sleuth_store::DeliveryState::Pending)
                .then_some(record.next_attempt_at),
            last_error: record.last_error.clone(),
            delivered_detail: record.delivered_detail.clone(),
            delivered_at: record.delivered_at,
            created_at: record.created_at,
            updated_at: record.updated_at,
        }
    }
}

/// The event name rules use, for the stored event's `type` (`sleuth_notify::EventKind`).
fn event_type(stored: &str) -> String {
    match stored {
        "investigation_concluded" => "investigation.concluded".into(),
        "investigation_closed" => "investigation.closed".into(),
        "response_run_failed" => "response_action.run_failed".into(),
        "system_event" => "system.event".into(),
        other => other.into(),
    }
}

/// What a test send came to.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = NotificationTest)]
pub struct NotificationTestDto {
    /// The destination took it.
    pub ok: bool,
    /// delivered, try_again (the receiver is down or busy) or refused.
    pub result: String,
    /// What the receiver said, or why it could not be reached (never a secret).
    pub detail: String,
}
