//! The revisions of an investigation's alert (ours): how often the source sent it, and each
//! distinct content it came with.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sleuth_store::{AlertRevision, AlertRevisions};
use utoipa::ToSchema;

#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AlertRevisions)]
pub struct AlertRevisionsDto {
    /// Deliveries of the alert by its source, the first included.
    pub seen_count: i64,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    /// Each distinct content, oldest first.
    pub revisions: Vec<AlertRevisionDto>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AlertRevision)]
pub struct AlertRevisionDto {
    /// 1 for the content first received.
    pub revision: i64,
    pub received_at: DateTime<Utc>,
    /// The source's severity wording in this revision.
    pub severity: Option<String>,
    /// The JSON paths that differ from the revision before (dotted, array elements by index).
    pub changed: Vec<String>,
    /// How many more paths differ than `changed` lists.
    pub changed_more: usize,
    /// The investigation of this content; null when it was recorded without one.
    pub investigation_id: Option<i64>,
}

impl From<&AlertRevisions> for AlertRevisionsDto {
    fn from(record: &AlertRevisions) -> AlertRevisionsDto {
        AlertRevisionsDto {
            seen_count: record.seen_count,
            first_seen: record.first_seen_at,
            last_seen: record.last_seen_at,
            revisions: record
                .revisions
                .iter()
                .map(AlertRevisionDto::from)
                .collect(),
        }
    }
}

impl From<&AlertRevision> for AlertRevisionDto {
    fn from(revision: &AlertRevision) -> AlertRevisionDto {
        AlertRevisionDto {
            revision: revision.revision,
            received_at: revision.received_at,
            severity: revision.severity.clone(),
            changed: revision.changes.paths.clone(),
            changed_more: revision.changes.more,
            investigation_id: revision.investigation_id,
        }
    }
}
