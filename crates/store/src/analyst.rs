//! The analyst's side in storage: notes on investigations, and the feedback an analyst
//! gives on a concluded one (their outcome and priority, a note, remediations done, and
//! the review status). A separate trait from [`crate::Store`] (which requires it), like
//! [`crate::ResponseActionStore`]; its methods name intent, and no SQL lives here.
//!
//! Feedback is what later investigations learn from: `Store::history` hands an analyst's
//! outcome to the engine as a prior verdict.
//!
//! The console's dashboard reads here too (`dashboard_sample`): the analyst's view of what
//! the investigations and their feedback came to, read within fixed bounds.

use async_trait::async_trait;
use serde_json::{Map, Value};
use sleuth_domain::{Entity, FeedbackStatus, InvestigationStatus, Outcome, Priority, Timestamp};

use crate::{InvestigationRecord, StoreResult, TenantScope, User};

/// What the dashboard reads: a bounded sample of the recent investigations of one tenant
/// scope. Every part has its own bound, so a view costs the same however many
/// investigations the database holds.
#[derive(Debug, Clone)]
pub struct DashboardQuery {
    pub scope: TenantScope,
    /// Investigations received at or after this time are sampled.
    pub since: Timestamp,
    /// The most investigations read per state, newest received first.
    pub per_state_limit: u32,
    /// The most alerts whose entities are read: those of the newest concluded
    /// investigations in the window.
    pub entity_alert_limit: u32,
    /// Queued and running investigations are counted up to this many each.
    pub queue_count_limit: u32,
}

/// One sampled investigation: what the dashboard's figures need of it.
#[derive(Debug, Clone, PartialEq)]
pub struct DashboardItem {
    pub status: InvestigationStatus,
    /// The engine's verdict and priority (set once concluded).
    pub outcome: Option<Outcome>,
    pub priority: Option<Priority>,
    /// When Sleuth received the alert.
    pub received_at: Timestamp,
    /// When the source says it raised the alert.
    pub alert_time: Timestamp,
    /// When the investigation concluded (or stopped).
    pub concluded_at: Option<Timestamp>,
    /// Set when an analyst gave feedback: the outcome they chose, if they chose one.
    pub feedback: Option<Option<Outcome>>,
    pub direct_source_label: String,
}

/// The dashboard's sample (see [`DashboardQuery`] for its bounds).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DashboardSample {
    /// Investigations received in the window, newest first within each state.
    pub items: Vec<DashboardItem>,
    /// Whether some state had more investigations in the window than were read.
    pub truncated: bool,
    /// The distinct entities of each sampled alert, one entry per alert and entity.
    pub entities: Vec<Entity>,
    /// How many alerts the entities were read from.
    pub entity_alerts: u64,
    /// Queued and running investigations now (any time), each at most the limit.
    pub queued: u64,
    pub running: u64,
}

/// A page of an investigation's notes.
#[derive(Debug, Clone, PartialEq)]
pub struct NotePage {
    /// How many notes the investigation has.
    pub total: u64,
    pub items: Vec<NoteRecord>,
}

/// A note an analyst wrote on an investigation.
#[derive(Debug, Clone, PartialEq)]
pub struct NoteRecord {
    pub id: i64,
    pub investigation_id: i64,
    pub text: String,
    /// Who wrote it; only they (or an admin) may change or delete it.
    pub author: User,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Changes to an investigation's feedback; `None` leaves a field as it is. The caller has
/// validated every value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FeedbackChanges {
    /// The analyst's outcome; from then on it is the feedback's outcome and what later
    /// investigations see as the human verdict.
    pub outcome: Option<Outcome>,
    pub priority: Option<Priority>,
    /// `Some(None)` clears the note.
    pub outcome_note: Option<Option<String>>,
    /// Replaces the whole object.
    pub remediations_done: Option<Map<String, Value>>,
    /// `reviewed` completes the review; `in_review` reopens it.
    pub status: Option<FeedbackStatus>,
}

impl FeedbackChanges {
    pub fn is_empty(&self) -> bool {
        self == &FeedbackChanges::default()
    }
}

/// An applied feedback change: the investigation as it is now, and the review status it
/// had before (so the caller can tell a review that just completed).
#[derive(Debug, Clone)]
pub struct FeedbackApplied {
    pub previous_status: FeedbackStatus,
    pub investigation: InvestigationRecord,
}

#[async_trait]
pub trait AnalystStore: Send + Sync {
    // --- Notes ------------------------------------------------------------------------------

    /// Adds a note; the investigation's free-text search then finds its words too.
    /// `NotFound` when the investigation does not exist.
    async fn create_note(
        &self,
        investigation_id: i64,
        author_id: i64,
        text: &str,
        at: Timestamp,
    ) -> StoreResult<NoteRecord>;
    /// A page of the notes of an investigation, oldest first: up to `limit` from `offset`,
    /// and how many it has. `NotFound` when the investigation does not exist (an
    /// investigation without notes answers an empty page).
    async fn list_notes(
        &self,
        investigation_id: i64,
        limit: u32,
        offset: u64,
    ) -> StoreResult<NotePage>;
    async fn get_note(&self, note_id: i64) -> StoreResult<NoteRecord>;
    async fn update_note(&self, note_id: i64, text: &str, at: Timestamp)
    -> StoreResult<NoteRecord>;
    async fn delete_note(&self, note_id: i64) -> StoreResult<()>;

    // --- Feedback ---------------------------------------------------------------------------

    /// Applies an analyst's feedback and records who gave it and when (so the
    /// `feedback_updated` list filter finds it). `NotFound` for an unknown investigation;
    /// `Rejected` unless it concluded (status success): there is no verdict to correct.
    async fn apply_feedback(
        &self,
        investigation_id: i64,
        changes: &FeedbackChanges,
        analyst_id: i64,
        at: Timestamp,
    ) -> StoreResult<FeedbackApplied>;

    // --- The dashboard ----------------------------------------------------------------------

    /// The dashboard's bounded sample of the scope's recent investigations.
    async fn dashboard_sample(&self, query: &DashboardQuery) -> StoreResult<DashboardSample>;
}
