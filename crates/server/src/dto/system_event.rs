//! System events (ours, at DESIGN.md §1's path): one per trigger that fired.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use sleuth_store::SystemEventRecord;
use utoipa::ToSchema;

#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = SystemEvent)]
pub struct SystemEventDto {
    pub id: i64,
    /// The trigger's name in the catalog (`fn_name`), e.g. `investigation_completed`.
    pub trigger_name: String,
    /// The trigger's arguments, as response scripts receive them in `trigger_args`.
    #[schema(schema_with = super::schema::free_object)]
    pub trigger_args: Map<String, Value>,
    /// The investigation the firing concerns, if any.
    pub investigation_id: Option<i64>,
    /// What the firing acts on, as `type:value` (`investigation:42`, `api_key:7`).
    pub entity: Option<String>,
    /// When the trigger fired.
    pub created_at: DateTime<Utc>,
}

/// `{count, results}`, newest first. A page stops early when its events reach
/// `server.max_list_answer_bytes` (it always holds one); the answer's `Link` header then
/// names the page that starts after its last one.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SystemEventPage)]
pub struct SystemEventPageDto {
    /// How many events match the filters (all pages).
    pub count: u64,
    /// Each event already serialized, as the byte budget measured it.
    #[schema(value_type = Vec<SystemEventDto>)]
    pub results: Vec<Box<serde_json::value::RawValue>>,
}

impl From<&SystemEventRecord> for SystemEventDto {
    fn from(event: &SystemEventRecord) -> SystemEventDto {
        SystemEventDto {
            id: event.id,
            trigger_name: event.trigger_name.clone(),
            trigger_args: event.trigger_args.clone(),
            investigation_id: event.investigation_id,
            entity: event.entity.clone(),
            created_at: event.created_at,
        }
    }
}
