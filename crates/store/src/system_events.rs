//! System events in storage: one row per trigger firing (every trigger that fired, whether
//! or not a script is tied to it), with the trigger's name, its arguments, the
//! investigation it concerns and the time. Written where the firing happens; read by the
//! system-events list.

use async_trait::async_trait;
use serde_json::{Map, Value};
use sleuth_domain::Timestamp;

use crate::{StoreResult, TenantScope, TimeRange};

/// The system event a response-action run that ended in failure (`failed`, `timed_out`,
/// `error`) leaves, written with the run's end in one transaction. It is no trigger of
/// the catalog: no script can be tied to it, so a failing script cannot fire itself.
/// Its arguments: `script_run_id`, `script_id`, `script_name`, `status`, `detail`.
pub const RESPONSE_ACTION_RUN_FAILED: &str = "response_action_run_failed";

/// One trigger that fired.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSystemEvent {
    /// The trigger's catalog name (`fn_name`), e.g. `investigation_completed`.
    pub trigger_name: String,
    pub trigger_args: Map<String, Value>,
    pub investigation_id: Option<i64>,
    /// What the firing acts on, as `type:value` (`investigation:42`, `user:r.patel`).
    pub entity: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SystemEventRecord {
    pub id: i64,
    pub trigger_name: String,
    pub trigger_args: Map<String, Value>,
    pub investigation_id: Option<i64>,
    pub entity: Option<String>,
    pub created_at: Timestamp,
}

/// Which events to list, newest first. Every filter set must hold.
#[derive(Debug, Clone, Default)]
pub struct SystemEventQuery {
    /// Any of these trigger names; empty means all.
    pub trigger_names: Vec<String>,
    pub time: TimeRange,
    /// Every word must appear (case-insensitively) in the arguments.
    pub search: Option<String>,
    /// The caller's tenant unions. A bound caller sees only the events of investigations in
    /// them; events about no investigation (users, keys) are nobody's tenant's.
    pub scope: TenantScope,
    pub limit: u32,
    pub offset: u64,
}

#[derive(Debug, Clone)]
pub struct SystemEventPage {
    pub total: u64,
    pub items: Vec<SystemEventRecord>,
}

/// The events a stream reads next, oldest first: those with an id after `after_id` and
/// at most `through_id`, narrowed like the list (trigger names, the caller's scope).
#[derive(Debug, Clone, Default)]
pub struct SystemEventsAfter {
    pub after_id: i64,
    pub through_id: i64,
    /// Any of these trigger names; empty means all.
    pub trigger_names: Vec<String>,
    pub scope: TenantScope,
    pub limit: u32,
}

/// System events in storage.
#[async_trait]
pub trait SystemEventStore: Send + Sync {
    /// Records the triggers of one firing, in one transaction.
    async fn record_system_events(
        &self,
        events: &[NewSystemEvent],
        at: Timestamp,
    ) -> StoreResult<()>;
    async fn list_system_events(&self, query: &SystemEventQuery) -> StoreResult<SystemEventPage>;
    /// The newest event's id (0 when there is none): where a new stream starts.
    async fn newest_system_event_id(&self) -> StoreResult<i64>;
    /// The ids after `after_id`, ascending, at most `limit`, whoever's they are. Ids are
    /// taken when a transaction writes and visible when it commits, so on a database with
    /// concurrent writers a smaller id can appear after a larger one: a stream reads only
    /// up to the first gap in these ids until the gap fills or is old enough to be a
    /// rolled-back write.
    async fn system_event_ids_after(&self, after_id: i64, limit: u32) -> StoreResult<Vec<i64>>;
    /// The events `query` names, oldest first.
    async fn system_events_after(
        &self,
        query: &SystemEventsAfter,
    ) -> StoreResult<Vec<SystemEventRecord>>;
}
