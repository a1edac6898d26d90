//! Pull connectors (ours): settings as given (secrets only named), and the state of the
//! connector's polls.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sleuth_store::ConnectorRecord;
use utoipa::ToSchema;

#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = Connector)]
pub struct ConnectorDto {
    pub id: i64,
    pub name: String,
    /// crowdstrike, graph_security, okta, sentinelone, elastic or google_workspace.
    pub kind: String,
    /// As given: the vendor's URL, filters, and the name of the secret signing in.
    #[schema(value_type = Object)]
    pub settings: serde_json::Value,
    pub tenant_union_id: Option<i64>,
    /// false: paused.
    pub enabled: bool,
    pub interval_seconds: i64,
    pub state: ConnectorStateDto,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What the connector's polls did.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ConnectorState)]
pub struct ConnectorStateDto {
    pub last_poll_at: Option<DateTime<Utc>>,
    pub next_poll_at: DateTime<Utc>,
    /// A poller holds it now.
    pub polling: bool,
    /// When a poll last read every page the vendor had.
    pub caught_up_at: Option<DateTime<Utc>>,
    /// Seconds since then: how old the newest alert not yet read may be.
    pub lag_seconds: Option<i64>,
    pub last_error: Option<String>,
    pub last_error_at: Option<DateTime<Utc>>,
    /// Failed polls in a row.
    pub failures: i64,
    pub polls: i64,
    pub pages: i64,
    /// Alerts that made new investigations.
    pub alerts_taken: i64,
    /// Alerts already stored (read again at a window's edge, or sent by another way).
    pub alerts_known: i64,
    /// Alerts no parser could read.
    pub alerts_refused: i64,
    /// Write-back (settings `write_back`): verdicts sent to the vendor's alerts, verdicts
    /// still owed (investigations not concluded yet, or sends to retry), and the last send
    /// that failed.
    pub writebacks_sent: i64,
    pub writebacks_pending: i64,
    pub last_writeback_error: Option<String>,
    pub last_writeback_error_at: Option<DateTime<Utc>>,
    /// Where the next poll starts (`null`: the backfill window).
    #[schema(value_type = Option<Object>)]
    pub cursor: Option<serde_json::Value>,
}

impl ConnectorDto {
    pub fn new(record: &ConnectorRecord, now: DateTime<Utc>) -> ConnectorDto {
        ConnectorDto {
            id: record.id,
            name: record.name.clone(),
            kind: record.kind.clone(),
            settings: record.settings.clone(),
            tenant_union_id: record.tenant_union_id,
            enabled: record.enabled,
            interval_seconds: record.interval_seconds,
            state: ConnectorStateDto {
                last_poll_at: record.last_poll_at,
                next_poll_at: record.next_poll_at,
                polling: record.lease_expires_at.is_some_and(|until| until > now),
                caught_up_at: record.caught_up_at,
                lag_seconds: record
                    .caught_up_at
                    .map(|at| (now - at).num_seconds().max(0)),
                last_error: record.last_error.clone(),
                last_error_at: record.last_error_at,
                failures: record.failures,
                polls: record.polls,
                pages: record.pages,
                alerts_taken: record.alerts_taken,
                alerts_known: record.alerts_known,
                alerts_refused: record.alerts_refused,
                writebacks_sent: record.writebacks_sent,
                writebacks_pending: record.writebacks_pending,
                last_writeback_error: record.last_writeback_error.clone(),
                last_writeback_error_at: record.last_writeback_error_at,
                cursor: record.cursor.clone(),
            },
            created_at: record.created_at,
            updated_at: record.updated_at,
        }
    }
}

/// What a test poll read: one page, parsed, stored nowhere.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ConnectorTest)]
pub struct ConnectorTestDto {
    /// The vendor answered and the page was read.
    pub ok: bool,
    /// Why not, when not (never a credential).
    pub error: Option<String>,
    /// Alerts of the page after the filters, those a parser reads, those filtered out.
    pub alerts: u64,
    pub readable: u64,
    pub filtered: u64,
    /// Why the first unreadable alert was refused.
    pub refusal: Option<String>,
    /// Titles of the first readable alerts.
    pub titles: Vec<String>,
    /// The vendor has further pages.
    pub more_pages: bool,
}
