//! The pull connectors' runtime: every process that runs it looks for connectors that are
//! due, leases each (so two processes never poll one connector at once), and drains it
//! page by page. Each page's alerts go through the same `prepare` as every create, and are
//! stored with the cursor past them in one transaction (`commit_connector_page`): a poller
//! stopped mid-page neither skips nor duplicates (the page is read again, and its alerts
//! dedupe on their identity). Credentials come from the sealed secret store, opened for
//! one poll and never logged or answered.
//!
//! Write-back: a connector that writes back owes each new investigation's verdict from
//! the transaction that stored its alert (`connector_writebacks`). Once the investigation
//! concluded, the runtime sends it (`write_back_due`), apart from polling and never in the
//! way of an investigation; a failed send is tried again later, doubling its wait (or as
//! the vendor's 429 said), and shows in the connector's state.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sleuth_connectors::{Conclusion, Credentials, Kind, Poller, Settings, Timing, Verdict};
use sleuth_domain::Outcome;
use sleuth_store::{
    ConnectorPage, ConnectorPollEnd, ConnectorRecord, NewAlert, Store, StoreError, WritebackResult,
};
use tokio::sync::watch;

use crate::intake::{AlertOptions, prepare};
use crate::runtime::Runtime;

/// The longest a failing connector waits between polls.
const MAX_FAILURE_BACKOFF: Duration = Duration::from_secs(3600);
/// The wait after a connector's first failed poll; doubled after each further one.
const FIRST_FAILURE_BACKOFF: Duration = Duration::from_secs(5);
/// Verdicts one write-back round sends at most.
const WRITEBACK_BATCH: u32 = 50;

/// How one poll ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PollSummary {
    pub pages: u64,
    pub taken: u64,
    pub known: u64,
    pub refused: u64,
    pub filtered: u64,
    /// The vendor had no further page.
    pub caught_up: bool,
    pub error: Option<String>,
    /// Another poller holds the connector now (this one's lease ran out).
    pub lease_lost: bool,
}

/// What one test poll read, storing nothing.
#[derive(Debug, Clone, Default)]
pub struct TestSummary {
    /// Alerts in the first page after the filters, those a parser reads, and those the
    /// filters left out.
    pub alerts: u64,
    pub readable: u64,
    pub filtered: u64,
    /// Why the first unreadable alert could not be read.
    pub refusal: Option<String>,
    /// The titles of the first few readable alerts, as investigations would show them.
    pub titles: Vec<String>,
    pub more_pages: bool,
}

/// Polls connectors until `shutdown` turns true; a poll under way stops after its page.
pub async fn run(runtime: Runtime, store: Arc<dyn Store>, mut shutdown: watch::Receiver<bool>) {
    let settings = runtime.settings().connectors.clone();
    let tick = Duration::from_millis(settings.tick_ms.max(10));
    let polling: Arc<Mutex<BTreeSet<i64>>> = Arc::default();
    let writing_back = Arc::new(AtomicBool::new(false));
    let mut tasks = tokio::task::JoinSet::new();
    tracing::info!("connector runtime started");
    while !*shutdown.borrow() {
        // One write-back round at a time, beside the polls.
        if !writing_back.swap(true, Ordering::SeqCst) {
            let (runtime, store, writing_back) =
                (runtime.clone(), store.clone(), writing_back.clone());
            tasks.spawn(async move {
                write_back_due(&runtime, &store, Utc::now(), Timing::default()).await;
                writing_back.store(false, Ordering::SeqCst);
            });
        }
        match store.list_connectors().await {
            Ok(connectors) => {
                for connector in connectors {
                    if !is_due(&connector, Utc::now()) || locked(&polling).contains(&connector.id) {
                        continue;
                    }
                    let token = uuid::Uuid::new_v4().to_string();
                    let now = Utc::now();
                    match store
                        .lease_connector(connector.id, &token, now, now + lease(&runtime))
                        .await
                    {
                        Ok(true) => {}
                        Ok(false) => continue,
                        Err(error) => {
                            tracing::warn!(%error, connector = %connector.name, "could not lease a connector");
                            continue;
                        }
                    }
                    locked(&polling).insert(connector.id);
                    let (runtime, store, polling, shutdown) = (
                        runtime.clone(),
                        store.clone(),
                        polling.clone(),
                        shutdown.clone(),
                    );
                    tasks.spawn(async move {
                        let id = connector.id;
                        let options = PollOptions {
                            lease: lease(&runtime),
                            timing: Timing::default(),
                        };
                        poll(&runtime, &store, connector, &token, &shutdown, options).await;
                        locked(&polling).remove(&id);
                    });
                }
            }
            Err(error) => tracing::warn!(%error, "could not list the connectors"),
        }
        while tasks.try_join_next().is_some() {}
        tokio::select! {
            _ = tokio::time::sleep(tick) => {}
            _ = shutdown.changed() => {}
        }
    }
    while tasks.join_next().await.is_some() {}
    tracing::info!("connector runtime stopped");
}

fn locked(polling: &Mutex<BTreeSet<i64>>) -> std::sync::MutexGuard<'_, BTreeSet<i64>> {
    polling
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn lease(runtime: &Runtime) -> chrono::Duration {
    chrono::Duration::seconds(
        i64::try_from(runtime.settings().connectors.lease_seconds.max(5)).unwrap_or(120),
    )
}

fn is_due(connector: &ConnectorRecord, now: DateTime<Utc>) -> bool {
    connector.enabled
        && connector.next_poll_at <= now
        && connector.lease_expires_at.is_none_or(|until| until <= now)
}

/// The poller of a stored connector, with its credentials opened from the secret store.
pub async fn poller(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    kind: &str,
    settings: &Value,
    timing: Timing,
) -> Result<Poller, String> {
    let kind =
        Kind::parse(kind).ok_or_else(|| format!("the connector kind '{kind}' is unknown"))?;
    let settings =
        Settings::check(kind, settings).map_err(|error| format!("its settings: {error}"))?;
    let secret = open_secret(runtime, store, &settings.secret).await?;
    let credentials = Credentials {
        client_id: settings.client_id.clone(),
        secret,
    };
    Poller::new(kind, settings, credentials, timing)
}

async fn open_secret(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    name: &str,
) -> Result<String, String> {
    let wanted = [name.to_owned()];
    let stored = store
        .script_secrets(&wanted)
        .await
        .map_err(|error| format!("could not read the secret store: {error}"))?;
    let stored = stored
        .get(name)
        .ok_or_else(|| format!("the secret '{name}' is not stored (`sleuth secret set {name}`)"))?;
    crate::secret_keys::open(runtime.keyring(), name, stored)
        .map(|value| value.0)
        .map_err(|error| error.to_string())
}

/// How a poll holds its lease and meets its vendor.
#[derive(Debug, Clone, Copy)]
pub struct PollOptions {
    /// Each stored page renews the lease for this long.
    pub lease: chrono::Duration,
    pub timing: Timing,
}

/// One leased poll: pages until the vendor has no further one (or `shutdown`), then the
/// lease is given back with the time of the next poll.
pub async fn poll(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    connector: ConnectorRecord,
    lease_token: &str,
    shutdown: &watch::Receiver<bool>,
    options: PollOptions,
) -> PollSummary {
    let timing = options.timing;
    let metrics = runtime.metrics();
    let started = Utc::now();
    let mut summary = PollSummary::default();
    let mut retry_after = None;
    match poller(runtime, store, &connector.kind, &connector.settings, timing).await {
        Err(error) => summary.error = Some(error),
        Ok(mut poller) => {
            let mut cursor = connector.cursor.clone();
            loop {
                let page = match poller.next_page(cursor.as_ref(), started).await {
                    Ok(page) => page,
                    Err(error) => {
                        retry_after = error.retry_after();
                        summary.error = Some(error.to_string());
                        break;
                    }
                };
                let read = read_alerts(store.as_ref(), &connector, &poller, &page.alerts).await;
                let stored = store
                    .commit_connector_page(ConnectorPage {
                        connector_id: connector.id,
                        lease_token: lease_token.to_owned(),
                        alerts: read.ready,
                        refused: read.refused,
                        refused_reason: read.reason,
                        cursor: page.cursor.clone(),
                        caught_up: page.caught_up,
                        write_back_ids: read.write_back_ids,
                        lease_until: Utc::now() + options.lease,
                        at: Utc::now(),
                    })
                    .await;
                let created = match stored {
                    Ok(created) => created,
                    Err(StoreError::Rejected { detail }) => {
                        tracing::warn!(connector = %connector.name, "{detail}; stopping this poll");
                        summary.lease_lost = true;
                        return summary;
                    }
                    Err(error) => {
                        summary.error = Some(format!("could not store a page: {error}"));
                        break;
                    }
                };
                let taken = created
                    .iter()
                    .filter(|created| matches!(created, sleuth_store::Created::New(_)))
                    .count() as u64;
                let known = created.len() as u64 - taken;
                // Refused before the store (no parser reads it) or by it.
                let refused = (page.alerts.len() as u64).saturating_sub(created.len() as u64);
                summary.pages += 1;
                summary.taken += taken;
                summary.known += known;
                summary.refused += refused;
                summary.filtered += page.filtered as u64;
                for (outcome, count) in [
                    ("taken", taken),
                    ("known", known),
                    ("refused", refused),
                    ("filtered", page.filtered as u64),
                ] {
                    if count > 0 {
                        metrics.connector_alerts(&connector.name, outcome, count);
                    }
                }
                cursor = Some(page.cursor);
                if page.caught_up {
                    summary.caught_up = true;
                    break;
                }
                if *shutdown.borrow() {
                    break;
                }
            }
        }
    }
    let now = Utc::now();
    let next_poll_at = match (&summary.error, summary.caught_up) {
        (Some(_), _) => {
            let wait = retry_after.unwrap_or_else(|| failure_backoff(connector.failures + 1));
            now + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::hours(1))
        }
        (None, true) => now + chrono::Duration::seconds(connector.interval_seconds),
        // Stopped by a shutdown with pages left: whoever runs next goes on at once.
        (None, false) => now,
    };
    if let Some(error) = &summary.error {
        tracing::warn!(connector = %connector.name, %error, "a connector's poll failed");
    }
    metrics.connector_poll(
        &connector.name,
        summary.error.is_none(),
        summary.caught_up.then(|| now.timestamp()),
    );
    let end = ConnectorPollEnd {
        connector_id: connector.id,
        lease_token: lease_token.to_owned(),
        next_poll_at,
        error: summary.error.clone(),
        at: now,
    };
    match store.end_connector_poll(&end).await {
        Ok(true) => {}
        Ok(false) => summary.lease_lost = true,
        Err(error) => {
            tracing::warn!(%error, connector = %connector.name, "could not record a connector's poll");
        }
    }
    summary
}

/// The alerts of a page made ready to store.
struct ReadAlerts {
    ready: Vec<NewAlert>,
    /// For each of `ready`, the vendor's id when the connector writes back (else empty).
    write_back_ids: Vec<Option<String>>,
    /// How many no parser could read, and why the first could not.
    refused: i64,
    reason: Option<String>,
}

async fn read_alerts(
    store: &dyn Store,
    connector: &ConnectorRecord,
    poller: &Poller,
    alerts: &[Value],
) -> ReadAlerts {
    let kind = poller.kind();
    let options = AlertOptions {
        schema_key: Some(kind.schema_key().to_owned()),
        tenant_union_id: connector.tenant_union_id,
        tenant_integration_key: None,
    };
    let mut read = ReadAlerts {
        ready: Vec::with_capacity(alerts.len()),
        write_back_ids: Vec::new(),
        refused: 0,
        reason: None,
    };
    for alert in alerts {
        match prepare(store, alert.to_string(), alert, &options).await {
            Ok(new_alert) => {
                read.ready.push(new_alert);
                if poller.writes_back() {
                    read.write_back_ids
                        .push(sleuth_connectors::alert_id(kind, alert));
                }
            }
            Err(error) => {
                read.refused += 1;
                read.reason
                    .get_or_insert_with(|| format!("an alert of the page was refused: {error}"));
            }
        }
    }
    read
}

/// What one write-back round did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WritebackSummary {
    pub sent: u64,
    pub failed: u64,
}

/// Sends the verdicts owed whose investigations concluded and whose time has come (`now`),
/// each recorded as sent, or as failed with when to try again.
pub async fn write_back_due(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    now: DateTime<Utc>,
    timing: Timing,
) -> WritebackSummary {
    let mut summary = WritebackSummary::default();
    // Claimed for as long as a round may take; a process that dies meanwhile leaves them
    // to be taken again then.
    let claim_until = now + chrono::Duration::minutes(10);
    let due = match store
        .claim_writebacks(now, claim_until, WRITEBACK_BATCH)
        .await
    {
        Ok(due) => due,
        Err(error) => {
            tracing::warn!(%error, "could not read the verdicts owed to vendors");
            return summary;
        }
    };
    let mut pollers: BTreeMap<i64, Result<Poller, String>> = BTreeMap::new();
    for owed in due {
        if let std::collections::btree_map::Entry::Vacant(slot) = pollers.entry(owed.connector_id) {
            let opened = match store.get_connector(owed.connector_id).await {
                Ok(connector) => {
                    poller(runtime, store, &connector.kind, &connector.settings, timing).await
                }
                Err(error) => Err(error.to_string()),
            };
            slot.insert(opened);
        }
        let sent = match (
            pollers.get_mut(&owed.connector_id),
            store.get_investigation(owed.investigation_id).await,
        ) {
            (Some(Ok(poller)), Ok(record)) => match verdict(&record) {
                Some(verdict) => poller
                    .write_back(&owed.vendor_alert_id, &verdict)
                    .await
                    .map_err(|error| (error.to_string(), error.retry_after())),
                None => Ok(()),
            },
            (Some(Err(error)), _) => Err((error.clone(), None)),
            (_, Err(error)) => Err((error.to_string(), None)),
            (None, _) => Err(("the connector could not be opened".to_owned(), None)),
        };
        let result = match sent {
            Ok(()) => {
                summary.sent += 1;
                WritebackResult::Sent
            }
            Err((error, retry_after)) => {
                summary.failed += 1;
                let wait = retry_after.unwrap_or_else(|| failure_backoff(owed.attempts + 1));
                WritebackResult::Failed {
                    error,
                    retry_at: Utc::now()
                        + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::hours(1)),
                }
            }
        };
        if let Err(error) = store.record_writeback(owed.id, &result, Utc::now()).await {
            tracing::warn!(%error, writeback = owed.id, "could not record a write-back");
        }
    }
    summary
}

/// The verdict of a concluded investigation, as a vendor's alert update takes it.
fn verdict(record: &sleuth_store::InvestigationRecord) -> Option<Verdict> {
    let result = record.result.as_ref()?;
    let conclusion = match result.outcome {
        Outcome::BreachedConfirmed | Outcome::BreachedSuspicious => Conclusion::Malicious,
        Outcome::FalseAlert => Conclusion::Benign,
        Outcome::Incomplete | Outcome::Ignored => Conclusion::Undetermined,
    };
    let summary = result
        .conclusion_summary
        .as_deref()
        .unwrap_or(&result.conclusion);
    Some(Verdict {
        conclusion,
        comment: format!(
            "Sleuth investigation {}: {} (priority {}). {summary}",
            record.id,
            result.outcome.as_str(),
            result.priority.as_str()
        ),
    })
}

/// The wait after `failures` failed polls in a row.
fn failure_backoff(failures: i64) -> Duration {
    let doublings = u32::try_from(failures.clamp(1, 20) - 1).unwrap_or(0);
    FIRST_FAILURE_BACKOFF
        .saturating_mul(2u32.saturating_pow(doublings))
        .min(MAX_FAILURE_BACKOFF)
}

/// One page read as a poll would read it (from the connector's cursor, or its backfill
/// window), parsed, and stored nowhere: the cursor stays.
pub async fn test_poll(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    connector: &ConnectorRecord,
) -> Result<TestSummary, String> {
    let mut poller = poller(
        runtime,
        store,
        &connector.kind,
        &connector.settings,
        Timing::default(),
    )
    .await?;
    let page = poller
        .next_page(connector.cursor.as_ref(), Utc::now())
        .await
        .map_err(|error| error.to_string())?;
    let mut summary = TestSummary {
        alerts: page.alerts.len() as u64,
        filtered: page.filtered as u64,
        more_pages: !page.caught_up,
        ..TestSummary::default()
    };
    let read = read_alerts(store.as_ref(), connector, &poller, &page.alerts).await;
    summary.readable = read.ready.len() as u64;
    summary.refusal = read.reason;
    summary.titles = read
        .ready
        .iter()
        .take(5)
        .map(|alert| alert.parsed.title.clone())
        .collect();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_back_off_by_doubling_up_to_an_hour() {
        assert_eq!(failure_backoff(1), Duration::from_secs(5));
        assert_eq!(failure_backoff(2), Duration::from_secs(10));
        assert_eq!(failure_backoff(4), Duration::from_secs(40));
        assert_eq!(failure_backoff(50), MAX_FAILURE_BACKOFF);
    }
}
