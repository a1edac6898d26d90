//! The retention task: with `retention.days` set, every `retention.interval_minutes` it
//! deletes what ended longer ago than that (`Store::purge_before`: investigations, their
//! alerts, system events; never the audit log), and logs what went.

use std::sync::Arc;
use std::time::Duration;

use sleuth_store::Store;
use tokio::sync::watch;

use crate::settings::RetentionSettings;

/// Investigations deleted per pass at most, so that one pass over a large backlog ends
/// and the next goes on.
const MAX_PER_PASS: u64 = 100_000;

/// Runs until `stop` turns true. Does nothing when retention is off.
pub async fn run(
    store: Arc<dyn Store>,
    settings: RetentionSettings,
    mut stop: watch::Receiver<bool>,
) {
    if settings.days == 0 {
        return;
    }
    let interval = Duration::from_secs(settings.interval_minutes.saturating_mul(60));
    loop {
        purge_once(store.as_ref(), settings.days).await;
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
    }
}

/// One pass: deletes what ended more than `days` days ago.
pub async fn purge_once(store: &dyn Store, days: u32) {
    let cutoff = chrono::Utc::now() - chrono::Duration::days(i64::from(days));
    match store.purge_before(cutoff, MAX_PER_PASS).await {
        Ok(report) if report == sleuth_store::PurgeReport::default() => {}
        Ok(report) => tracing::info!(
            investigations = report.investigations,
            alerts = report.alerts,
            system_events = report.system_events,
            older_than_days = days,
            "retention deleted what ended before the cut-off"
        ),
        Err(error) => tracing::warn!(%error, "retention pass failed; it runs again next interval"),
    }
}
