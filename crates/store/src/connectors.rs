//! Pull connectors: a vendor's API polled on an interval (CrowdStrike Falcon, Graph
//! security alerts, Okta's System Log, ...). The store keeps each connector's settings
//! (JSON checked by `sleuth-connectors`; secrets are only named), its durable cursor, the
//! lease that lets one process at a time poll it, and what its polls did.
//!
//! A page of alerts and the cursor past it are written in one transaction
//! ([`ConnectorStore::commit_connector_page`]): a poller stopped mid-page either stored the
//! page and moved the cursor, or did neither, and polls the page again (its alerts dedupe
//! on their identity).

use async_trait::async_trait;
use sleuth_domain::Timestamp;

use crate::{Created, NewAlert, StoreResult};

#[derive(Debug, Clone)]
pub struct NewConnector {
    pub name: String,
    /// The vendor (`sleuth_connectors::Kind::as_str`).
    pub kind: String,
    pub settings: serde_json::Value,
    /// The tenant union its alerts join; `None` decides per alert, as creates do.
    pub tenant_union_id: Option<i64>,
    pub enabled: bool,
    pub interval_seconds: i64,
    pub created_by: Option<i64>,
    pub at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConnectorRecord {
    pub id: i64,
    pub name: String,
    pub kind: String,
    pub settings: serde_json::Value,
    pub tenant_union_id: Option<i64>,
    pub enabled: bool,
    pub interval_seconds: i64,
    /// Where the next poll starts; `None` before the first page (the backfill window).
    pub cursor: Option<serde_json::Value>,
    pub next_poll_at: Timestamp,
    /// Until when a poller holds it (`None`: nobody does).
    pub lease_expires_at: Option<Timestamp>,
    pub last_poll_at: Option<Timestamp>,
    /// The last poll that read every page the vendor had: the connector's lag is counted
    /// from here.
    pub caught_up_at: Option<Timestamp>,
    pub last_error: Option<String>,
    pub last_error_at: Option<Timestamp>,
    /// Polls that failed in a row (reset by one that succeeds).
    pub failures: i64,
    pub polls: i64,
    pub pages: i64,
    /// Alerts that made new investigations, alerts already known, and alerts refused (a
    /// body no parser reads), since the connector was made.
    pub alerts_taken: i64,
    pub alerts_known: i64,
    pub alerts_refused: i64,
    /// Write-back: verdicts sent to the vendor, verdicts still owed (their investigation
    /// not concluded yet, or a send to retry), and the last send that failed.
    pub writebacks_sent: i64,
    pub writebacks_pending: i64,
    pub last_writeback_error: Option<String>,
    pub last_writeback_error_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A change of a connector; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct ConnectorChanges {
    pub settings: Option<serde_json::Value>,
    pub enabled: Option<bool>,
    pub interval_seconds: Option<i64>,
    /// `Some(None)`: decide per alert.
    pub tenant_union_id: Option<Option<i64>>,
    /// Forget the cursor: the next poll starts at the backfill window again.
    pub reset_cursor: bool,
}

/// One page a poller read, to store with the cursor past it.
#[derive(Debug, Clone)]
pub struct ConnectorPage {
    pub connector_id: i64,
    /// The lease the poller holds; the page is refused (`Rejected`) when it is not current.
    pub lease_token: String,
    pub alerts: Vec<NewAlert>,
    /// Alerts of the page no parser could read, and why the first could not.
    pub refused: i64,
    pub refused_reason: Option<String>,
    pub cursor: serde_json::Value,
    /// The page was the vendor's last for now.
    pub caught_up: bool,
    /// Write-back: for each of `alerts`, the vendor's id of it, when the connector writes
    /// verdicts back (empty otherwise). Each new investigation among them owes its verdict
    /// from the same transaction on.
    pub write_back_ids: Vec<Option<String>>,
    /// The lease runs until then (a long drain keeps it).
    pub lease_until: Timestamp,
    pub at: Timestamp,
}

/// How a poll ended, when its lease is given back.
#[derive(Debug, Clone)]
pub struct ConnectorPollEnd {
    pub connector_id: i64,
    pub lease_token: String,
    pub next_poll_at: Timestamp,
    /// `None`: it succeeded (the failure count starts again).
    pub error: Option<String>,
    pub at: Timestamp,
}

/// A verdict owed to a vendor whose investigation has concluded, claimed for one send.
#[derive(Debug, Clone, PartialEq)]
pub struct DueWriteback {
    pub id: i64,
    pub connector_id: i64,
    pub investigation_id: i64,
    /// The vendor's id of the alert.
    pub vendor_alert_id: String,
    /// Sends tried before this one.
    pub attempts: i64,
}

/// How a write-back send ended.
#[derive(Debug, Clone)]
pub enum WritebackResult {
    Sent,
    /// Failed; tried again at `retry_at`.
    Failed {
        error: String,
        retry_at: Timestamp,
    },
}

#[async_trait]
pub trait ConnectorStore {
    /// `Conflict` when the name is taken; `Rejected` when the tenant union does not exist.
    async fn create_connector(&self, connector: &NewConnector) -> StoreResult<ConnectorRecord>;
    /// Every connector, by id.
    async fn list_connectors(&self) -> StoreResult<Vec<ConnectorRecord>>;
    async fn get_connector(&self, connector_id: i64) -> StoreResult<ConnectorRecord>;
    async fn update_connector(
        &self,
        connector_id: i64,
        changes: &ConnectorChanges,
        at: Timestamp,
    ) -> StoreResult<ConnectorRecord>;
    async fn delete_connector(&self, connector_id: i64) -> StoreResult<()>;
    /// Leases the connector to `token` until `until` when it is enabled, due (`next_poll_at`
    /// passed) and nobody holds an unexpired lease: `false` otherwise. Two processes asking
    /// at once get one `true` between them.
    async fn lease_connector(
        &self,
        connector_id: i64,
        token: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool>;
    /// Stores the page's alerts (each as `create_investigation` would, deduped on its
    /// identity) and moves the cursor past them, in one transaction. `Rejected`, with
    /// nothing stored, when the lease is no longer `lease_token`'s.
    async fn commit_connector_page(&self, page: ConnectorPage) -> StoreResult<Vec<Created>>;
    /// Gives the lease back and records how the poll ended. `false` when the lease was no
    /// longer held (nothing recorded).
    async fn end_connector_poll(&self, end: &ConnectorPollEnd) -> StoreResult<bool>;
    /// Write-back: up to `limit` owed verdicts whose investigation concluded and whose time
    /// to send has come, each claimed until `claim_until` (another process does not take it
    /// meanwhile; one that is never recorded is taken again then).
    async fn claim_writebacks(
        &self,
        now: Timestamp,
        claim_until: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<DueWriteback>>;
    /// Records how a send ended, on the owed verdict and its connector's counts.
    async fn record_writeback(
        &self,
        writeback_id: i64,
        result: &WritebackResult,
        at: Timestamp,
    ) -> StoreResult<()>;
}
