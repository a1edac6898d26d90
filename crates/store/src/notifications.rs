//! Notification destinations and their deliveries: where Sleuth tells people and systems
//! what happened (a webhook, Slack, Teams, PagerDuty, syslog, email), which events each
//! wants (a rule, JSON checked by `sleuth-notify`), and the log of every event sent to it.
//!
//! The outbox is the system events table: an investigation's conclusion and its system
//! events commit together. Each destination keeps a cursor into it; the deliverer holding
//! the destination's lease turns the events past the cursor into delivery rows and moves
//! the cursor in one transaction ([`NotificationStore::queue_notification_deliveries`]),
//! so an event is queued for a destination exactly once and never skipped. A new event is
//! usually sent before its row is written, the row then written with what came of that
//! first attempt (a process killed in between leaves the cursor where it was: the event
//! is sent again). A delivery is retried until the destination takes it or the schedule
//! runs out (then it is `dead`, with its reason, and can be sent again by hand).
//!
//! Secrets (URLs with tokens, routing keys, passwords, signing keys) are never stored
//! here: the settings name secrets of the sealed secret store.

use async_trait::async_trait;
use sleuth_domain::{Entity, Outcome, Priority, Timestamp};

use crate::StoreResult;

#[derive(Debug, Clone)]
pub struct NewNotificationDestination {
    pub name: String,
    /// `sleuth_notify::destination::Kind::as_str`.
    pub kind: String,
    /// Kind-specific settings; secrets are only named.
    pub settings: serde_json::Value,
    /// `sleuth_notify::Rule` as JSON.
    pub rule: serde_json::Value,
    /// The headline template, if the destination has its own.
    pub template: Option<String>,
    pub enabled: bool,
    /// At most this many sends a minute; `None`: no limit of ours.
    pub rate_limit_per_minute: Option<i64>,
    pub created_by: Option<i64>,
    pub at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NotificationDestinationRecord {
    pub id: i64,
    pub name: String,
    pub kind: String,
    pub settings: serde_json::Value,
    pub rule: serde_json::Value,
    pub template: Option<String>,
    pub enabled: bool,
    pub rate_limit_per_minute: Option<i64>,
    /// The last system event this destination has considered (queued or not): a new
    /// destination starts at the newest event when it is made, not at the beginning.
    pub cursor: i64,
    /// The destination asked to be left alone (429 with `Retry-After`) until then.
    pub paused_until: Option<Timestamp>,
    /// Until when a deliverer holds it (`None`: nobody does).
    pub lease_expires_at: Option<Timestamp>,
    pub last_error: Option<String>,
    pub last_error_at: Option<Timestamp>,
    pub last_delivered_at: Option<Timestamp>,
    /// Deliveries by state, counted when read.
    pub pending: i64,
    pub delivered: i64,
    pub dead: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A change of a destination; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct NotificationDestinationChanges {
    pub name: Option<String>,
    pub settings: Option<serde_json::Value>,
    pub rule: Option<serde_json::Value>,
    /// `Some(None)` removes the template (the default headline again).
    pub template: Option<Option<String>>,
    pub enabled: Option<bool>,
    /// `Some(None)` removes the limit.
    pub rate_limit_per_minute: Option<Option<i64>>,
}

/// Where a delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeliveryState {
    /// Not yet taken by the destination; tried (again) at `next_attempt_at`.
    Pending,
    Delivered,
    /// Given up after the schedule's attempts, or refused for good; `last_error` says why.
    Dead,
}

impl DeliveryState {
    pub const ALL: [DeliveryState; 3] = [
        DeliveryState::Pending,
        DeliveryState::Delivered,
        DeliveryState::Dead,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Delivered => "delivered",
            DeliveryState::Dead => "dead",
        }
    }

    pub fn parse(text: &str) -> Option<DeliveryState> {
        DeliveryState::ALL
            .into_iter()
            .find(|state| state.as_str() == text)
    }
}

/// One event to deliver to a destination.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDelivery {
    pub system_event_id: i64,
    /// The event's idempotency id, the same on every attempt.
    pub event_id: String,
    /// `sleuth_notify::Event` as JSON text: what is rendered on every attempt.
    pub event: String,
    /// Its first attempt, when the deliverer made it before writing the delivery; `None`
    /// writes the delivery pending and untried.
    pub first_attempt: Option<FirstAttempt>,
}

/// What came of a new delivery's first attempt, made before its row was written.
#[derive(Debug, Clone, PartialEq)]
pub struct FirstAttempt {
    pub result: AttemptResult,
    /// The destination asked for a pause (429 and `Retry-After`).
    pub pause_destination_until: Option<Timestamp>,
    pub at: Timestamp,
}

/// The events a deliverer found past a destination's cursor, with the cursor past them.
#[derive(Debug, Clone)]
pub struct DeliveryBatch {
    pub destination_id: i64,
    /// The lease the deliverer holds; the batch is refused (`Rejected`) when it is not
    /// current, with nothing written.
    pub lease_token: String,
    /// The last system event considered, queued or not.
    pub cursor: i64,
    /// The events the destination's rule matched, a delivery each.
    pub deliveries: Vec<NewDelivery>,
    pub at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryRecord {
    pub id: i64,
    pub destination_id: i64,
    pub system_event_id: Option<i64>,
    pub event_id: String,
    pub event: serde_json::Value,
    pub state: DeliveryState,
    /// Attempts made so far.
    pub attempts: i64,
    pub next_attempt_at: Timestamp,
    /// The reason of the last failed attempt (what the receiver answered; never a secret).
    pub last_error: Option<String>,
    /// What the receiver said when it took the delivery.
    pub delivered_detail: Option<String>,
    pub delivered_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// How one attempt of a delivery ended.
#[derive(Debug, Clone, PartialEq)]
pub enum AttemptResult {
    Delivered {
        detail: String,
    },
    /// Failed; tried again at `retry_at`.
    Retry {
        error: String,
        retry_at: Timestamp,
    },
    /// Failed for good.
    Dead {
        error: String,
    },
}

/// One attempt to record.
#[derive(Debug, Clone)]
pub struct DeliveryAttempt {
    pub delivery_id: i64,
    pub result: AttemptResult,
    /// The destination asked for a pause (429 and `Retry-After`): nothing is sent to it
    /// before then.
    pub pause_destination_until: Option<Timestamp>,
    pub at: Timestamp,
}

/// What destinations are told of a concluded investigation, and nothing more: its alert's
/// title, tenant, source and entities, and the conclusion's outcome, priority, words,
/// tactic and insight tags.
///
/// Why not the whole record: every conclusion is read for the deliverer, and the whole
/// record carries the raw alert, the full result (findings, evidence) and more, whose
/// reading cost the pipeline as much as the deliveries themselves.
#[derive(Debug, Clone, PartialEq)]
pub struct InvestigationToTell {
    pub investigation_id: i64,
    /// The engine's outcome and priority (an analyst's feedback is told as a close).
    pub outcome: Outcome,
    pub priority: Priority,
    pub title: String,
    pub tenant_id: Option<String>,
    /// The display name of the alert's tenant union.
    pub tenant_union: String,
    /// The alert's source label.
    pub source: String,
    pub entities: Vec<Entity>,
    pub conclusion: String,
    pub mitre_tactic: Option<String>,
    pub insight_tags: Vec<String>,
}

/// Which deliveries of a destination to list, newest first.
#[derive(Debug, Clone)]
pub struct DeliveryQuery {
    pub destination_id: i64,
    pub state: Option<DeliveryState>,
    /// Only deliveries with a smaller id (the next page).
    pub before_id: Option<i64>,
    pub limit: u32,
}

#[async_trait]
pub trait NotificationStore {
    /// `Conflict` when the name is taken. The cursor starts at the newest system event.
    async fn create_notification_destination(
        &self,
        destination: &NewNotificationDestination,
    ) -> StoreResult<NotificationDestinationRecord>;
    /// Every destination, by id.
    async fn list_notification_destinations(
        &self,
    ) -> StoreResult<Vec<NotificationDestinationRecord>>;
    /// Every destination, by id, as the deliverer reads it on each tick: without the
    /// counts of its deliveries (`pending`, `delivered` and `dead` are 0), which grow
    /// with the log and which it does not need.
    async fn notification_destinations_to_deliver(
        &self,
    ) -> StoreResult<Vec<NotificationDestinationRecord>>;
    async fn get_notification_destination(
        &self,
        destination_id: i64,
    ) -> StoreResult<NotificationDestinationRecord>;
    /// One destination as the deliverer reads it between rounds: without the counts of
    /// its deliveries (as `notification_destinations_to_deliver`). `NotFound` when gone.
    async fn notification_destination_to_deliver(
        &self,
        destination_id: i64,
    ) -> StoreResult<NotificationDestinationRecord>;
    /// `Conflict` when a new name is taken.
    async fn update_notification_destination(
        &self,
        destination_id: i64,
        changes: &NotificationDestinationChanges,
        at: Timestamp,
    ) -> StoreResult<NotificationDestinationRecord>;
    /// The concluded investigations among `investigation_ids` as destinations are told of
    /// them, in no particular order; one gone, or without a conclusion, is left out.
    async fn investigations_to_tell(
        &self,
        investigation_ids: &[i64],
    ) -> StoreResult<Vec<InvestigationToTell>>;
    /// Leases the destination to `token` until `until` when it is enabled and nobody holds
    /// an unexpired lease: `false` otherwise. Two processes asking at once get one `true`
    /// between them; the holder may ask again to extend its own lease.
    async fn lease_notification_destination(
        &self,
        destination_id: i64,
        token: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool>;
    /// Gives the lease back, if `token` still holds it.
    async fn release_notification_destination(
        &self,
        destination_id: i64,
        token: &str,
    ) -> StoreResult<()>;
    /// Inserts the batch's deliveries (an event already queued for the destination is not
    /// queued twice), each in the state its first attempt left it (pending when untried),
    /// records those attempts on the destination as `record_notification_attempts` does,
    /// and moves the cursor, in one transaction. `Rejected`, with nothing
    /// written, when the lease is no longer `lease_token`'s.
    async fn queue_notification_deliveries(&self, batch: &DeliveryBatch) -> StoreResult<()>;
    /// Up to `limit` pending deliveries of the destination whose time has come, the
    /// earliest due first.
    async fn due_notification_deliveries(
        &self,
        destination_id: i64,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<DeliveryRecord>>;
    /// Records attempts on their deliveries and destinations (last error, last delivery,
    /// pause), in one transaction, as if recorded one by one in their order. An attempt on
    /// a delivery that is no longer pending changes nothing. At most one attempt per
    /// delivery.
    ///
    /// Why a batch: a deliverer sends a destination's due deliveries one after the other
    /// and records them together, so that a busy destination costs the database one write
    /// transaction a batch, not one a delivery, beside the pipeline's own writes. A
    /// process killed before the record leaves the batch pending: it is sent again (at
    /// least once).
    async fn record_notification_attempts(&self, attempts: &[DeliveryAttempt]) -> StoreResult<()>;
    /// One attempt: `record_notification_attempts` of one.
    async fn record_notification_attempt(&self, attempt: &DeliveryAttempt) -> StoreResult<()> {
        self.record_notification_attempts(std::slice::from_ref(attempt))
            .await
    }
    async fn list_notification_deliveries(
        &self,
        query: &DeliveryQuery,
    ) -> StoreResult<Vec<DeliveryRecord>>;
    /// Deletes up to `limit` delivered deliveries (of any destination) delivered before
    /// `before`, oldest first; pending and dead ones stay whatever their age. How many.
    async fn purge_delivered_notifications(
        &self,
        before: Timestamp,
        limit: u32,
    ) -> StoreResult<u64>;
    /// Makes a dead delivery of the destination pending again, due at `at`, its attempts
    /// counted from zero. `NotFound` when it is not the destination's; `Conflict` when it
    /// is not dead.
    async fn redeliver_notification(
        &self,
        destination_id: i64,
        delivery_id: i64,
        at: Timestamp,
    ) -> StoreResult<DeliveryRecord>;
}
