//! Audit log entries (ours): who did what to which resource, when, and the hashes that
//! chain each entry to the one before it.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sleuth_store::AuditEntry;
use utoipa::ToSchema;

#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AuditLogEntry)]
pub struct AuditEntryDto {
    /// The position in the chain: 1, 2, 3, ... without gaps.
    pub seq: i64,
    pub at: DateTime<Utc>,
    /// The user who did it; null for the command line.
    pub actor_user_id: Option<i64>,
    pub actor_email: Option<String>,
    /// `METHOD /route` for API requests (`POST /app/api/v1/context-memory/create`), or
    /// `cli <command>` for the command line.
    pub action: String,
    /// The kind of resource, e.g. `context-memory`, `investigation`, `api-key`, `secret`.
    pub resource_type: String,
    pub resource_id: Option<String>,
    /// The request's `x-request-id`.
    pub request_id: Option<String>,
    /// A small description of the change (never secrets).
    #[schema(value_type = Object)]
    pub detail: Value,
    /// SHA-256 (hex) of the entry before this one; 64 zeros for the first.
    pub prev_hash: String,
    /// SHA-256 (hex) of this entry's canonical content, `prev_hash` included.
    pub hash: String,
}

/// `{count, results}`, newest first. A page stops early when its entries reach
/// `server.max_list_answer_bytes` (it always holds one); the answer's `Link` header then
/// names the page that starts after its last one.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AuditLogPage)]
pub struct AuditPageDto {
    /// How many entries match the filters (all pages).
    pub count: u64,
    /// Each entry already serialized, as the byte budget measured it.
    #[schema(value_type = Vec<AuditEntryDto>)]
    pub results: Vec<Box<serde_json::value::RawValue>>,
}

impl From<&AuditEntry> for AuditEntryDto {
    fn from(entry: &AuditEntry) -> AuditEntryDto {
        AuditEntryDto {
            seq: entry.seq,
            at: entry.at,
            actor_user_id: entry.actor_user_id,
            actor_email: entry.actor_email.clone(),
            action: entry.action.clone(),
            resource_type: entry.resource_type.clone(),
            resource_id: entry.resource_id.clone(),
            request_id: entry.request_id.clone(),
            detail: entry.detail.clone(),
            prev_hash: entry.prev_hash.clone(),
            hash: entry.hash.clone(),
        }
    }
}
