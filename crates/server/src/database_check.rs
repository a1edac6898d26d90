//! The database check `/readyz` answers from (`routes::health`), one per process.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sleuth_store::Store;

/// How long a readiness check waits for the database. It runs in the background, so no
/// probe waits for it, on a connection of its own outside the pool (the store's
/// `check_ready`), so a flood that holds every pooled connection does not delay it.
const DATABASE_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// A database check younger than this is answered as it is; an older one is answered too,
/// while a fresh check runs in the background.
const CHECK_FRESH_FOR: Duration = Duration::from_secs(1);

/// A check older than this is not answered: `/readyz` waits for a fresh one.
const CHECK_USABLE_FOR: Duration = Duration::from_secs(10);

/// The last database check of `/readyz`, shared by every probe of the process. A probe never
/// queues behind the API for a pooled connection: at most one check runs at a time, in the
/// background, and probes answer the latest result while it is recent. A database that
/// stops answering shows within `CHECK_FRESH_FOR` plus `DATABASE_CHECK_TIMEOUT`.
#[derive(Default)]
pub struct DatabaseCheck {
    last: std::sync::Mutex<Option<(Instant, Result<(), String>)>>,
    running: Arc<tokio::sync::Mutex<()>>,
}

impl DatabaseCheck {
    fn last_within(&self, age: Duration) -> Option<Result<(), String>> {
        let last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        last.as_ref()
            .filter(|(at, _)| at.elapsed() <= age)
            .map(|(_, result)| result.clone())
    }

    fn record(&self, result: Result<(), String>) {
        *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((Instant::now(), result));
    }

    /// The database's readiness as `/readyz` answers it.
    pub async fn answer(self: &Arc<Self>, store: &Arc<dyn Store>) -> Result<(), String> {
        if let Some(result) = self.last_within(CHECK_FRESH_FOR) {
            return result;
        }
        if let Ok(guard) = Arc::clone(&self.running).try_lock_owned() {
            let (check, store) = (Arc::clone(self), Arc::clone(store));
            tokio::spawn(async move {
                let result = check_database(&store).await;
                check.record(result);
                drop(guard);
            });
        }
        if let Some(result) = self.last_within(CHECK_USABLE_FOR) {
            return result;
        }
        // Nothing recent to answer: wait for the check under way.
        let _finished = self.running.lock().await;
        self.last_within(CHECK_USABLE_FOR)
            .unwrap_or_else(|| Err("the database check did not finish".into()))
    }
}

async fn check_database(store: &Arc<dyn Store>) -> Result<(), String> {
    match tokio::time::timeout(DATABASE_CHECK_TIMEOUT, store.check_ready()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err("the database did not answer within 5 seconds (busy or unreachable)".into()),
    }
}
