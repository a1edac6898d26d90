//! The worker pool: claims jobs from the durable queue and runs at most
//! `workers.concurrency` investigations at once. Idle workers sleep until a create wakes
//! them (or the poll interval passes). On shutdown, running investigations get a grace
//! period to finish; whatever is still running is released back to the queue.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sleuth_domain::Strategy;
use sleuth_store::{ClaimedJob, NextClaim, Store, StoreResult};
use tokio::sync::{Semaphore, watch};

use crate::pipeline;
use crate::runtime::Runtime;

/// What one step of the queue did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Ran(i64),
    Idle,
}

fn lease(runtime: &Runtime) -> chrono::Duration {
    chrono::Duration::seconds(
        i64::try_from(runtime.settings().workers.lease_seconds).unwrap_or(300),
    )
}

/// Claims and runs one job inline. Tests step the queue with this instead of sleeping.
pub async fn run_next(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    worker: &str,
) -> StoreResult<Step> {
    let mut jobs = store
        .claim_jobs(worker, 1, lease(runtime), chrono::Utc::now())
        .await?;
    let Some(job) = jobs.pop() else {
        return Ok(Step::Idle);
    };
    let strategies = pipeline::strategies_in_force(runtime, store).await?;
    pipeline::run_job(runtime, store, &job, &strategies, None).await?;
    Ok(Step::Ran(job.investigation_id))
}

/// Runs jobs until the queue has none ready; returns how many ran.
pub async fn drain(runtime: &Runtime, store: &Arc<dyn Store>) -> StoreResult<usize> {
    let mut ran = 0;
    while let Step::Ran(_) = run_next(runtime, store, "drain").await? {
        ran += 1;
    }
    Ok(ran)
}

/// Runs the pool until `shutdown` turns true.
pub async fn run_pool(
    runtime: Runtime,
    store: Arc<dyn Store>,
    mut shutdown: watch::Receiver<bool>,
) {
    let settings = runtime.settings().workers.clone();
    let worker = crate::process_name::worker_name();
    let slots = Arc::new(Semaphore::new(settings.concurrency));
    let running: Arc<Mutex<BTreeMap<i64, ClaimedJob>>> = Arc::default();
    let wakeups = store.job_wakeups();
    let poll_interval = Duration::from_millis(settings.poll_interval_ms.max(10));
    tracing::info!(%worker, concurrency = settings.concurrency, "workers started");
    while !*shutdown.borrow() {
        // Enabled before claiming, so a create committed meanwhile still wakes us.
        let woken = wakeups.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let free = slots.available_permits();
        if free == 0 {
            tokio::select! {
                permit = slots.clone().acquire_owned() => drop(permit),
                _ = shutdown.changed() => {}
            }
            continue;
        }
        let claimed = store
            .claim_jobs(&worker, free, lease(&runtime), chrono::Utc::now())
            .await;
        let jobs = match claimed {
            Ok(jobs) => jobs,
            Err(error) => {
                tracing::warn!(%error, "cannot claim jobs; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(poll_interval) => {}
                    _ = shutdown.changed() => {}
                }
                continue;
            }
        };
        if jobs.is_empty() {
            tokio::select! {
                _ = &mut woken => {}
                _ = tokio::time::sleep(poll_interval) => {}
                _ = shutdown.changed() => {}
            }
            continue;
        }
        // Read once for the whole claim: what applies to the next jobs claimed.
        let strategies = match pipeline::strategies_in_force(&runtime, &store).await {
            Ok(strategies) => strategies,
            Err(error) => {
                tracing::warn!(%error, "cannot read the strategies in force; releasing the jobs");
                release(&store, &jobs).await;
                tokio::select! {
                    _ = tokio::time::sleep(poll_interval) => {}
                    _ = shutdown.changed() => {}
                }
                continue;
            }
        };
        for job in jobs {
            let Ok(permit) = slots.clone().acquire_owned().await else {
                break;
            };
            let slot = Slot {
                runtime: runtime.clone(),
                store: store.clone(),
                running: running.clone(),
                worker: worker.clone(),
                shutdown: shutdown.clone(),
            };
            slot.track(&job);
            let strategies = strategies.clone();
            tokio::spawn(async move {
                slot.run(job, strategies).await;
                drop(permit);
            });
        }
    }
    finish_or_release(
        &store,
        &slots,
        &running,
        settings.concurrency,
        Duration::from_secs(settings.shutdown_grace_seconds),
    )
    .await;
    tracing::info!(%worker, "workers stopped");
}

/// One of the pool's `concurrency` places: runs a claimed job, and while the pool runs and
/// jobs are ready, the next one claimed with its result (`Store::finish_job_and_claim`),
/// so that a busy worker takes one write turn per investigation.
struct Slot {
    runtime: Runtime,
    store: Arc<dyn Store>,
    running: Arc<Mutex<BTreeMap<i64, ClaimedJob>>>,
    worker: String,
    shutdown: watch::Receiver<bool>,
}

impl Slot {
    async fn run(&self, mut job: ClaimedJob, mut strategies: Arc<Vec<Strategy>>) {
        let metrics = self.runtime.metrics();
        metrics.investigations_running.inc();
        loop {
            let next = (!*self.shutdown.borrow()).then(|| NextClaim {
                worker: self.worker.clone(),
                lease: lease(&self.runtime),
            });
            let finished =
                pipeline::run_job(&self.runtime, &self.store, &job, &strategies, next).await;
            self.untrack(&job);
            let next_job = match finished {
                Ok(finished) => finished.next,
                Err(error) => {
                    // The lease will expire and another worker will retry the job.
                    tracing::error!(investigation_id = job.investigation_id, %error, "investigation failed to run");
                    None
                }
            };
            let Some(next_job) = next_job else {
                break;
            };
            self.track(&next_job);
            // What applies to each job claimed, as for the pool's own claims.
            strategies = match pipeline::strategies_in_force(&self.runtime, &self.store).await {
                Ok(strategies) => strategies,
                Err(error) => {
                    tracing::warn!(%error, "cannot read the strategies in force; releasing the job");
                    release(&self.store, std::slice::from_ref(&next_job)).await;
                    self.untrack(&next_job);
                    break;
                }
            };
            job = next_job;
        }
        metrics.investigations_running.dec();
    }

    /// Records the job as running here: the shutdown releases what is still running.
    fn track(&self, job: &ClaimedJob) {
        if let Ok(mut running) = self.running.lock() {
            running.insert(job.investigation_id, job.clone());
        }
    }

    fn untrack(&self, job: &ClaimedJob) {
        if let Ok(mut running) = self.running.lock() {
            running.remove(&job.investigation_id);
        }
    }
}

async fn finish_or_release(
    store: &Arc<dyn Store>,
    slots: &Arc<Semaphore>,
    running: &Arc<Mutex<BTreeMap<i64, ClaimedJob>>>,
    concurrency: usize,
    grace: Duration,
) {
    let all_slots = u32::try_from(concurrency).unwrap_or(u32::MAX);
    let finished = tokio::time::timeout(grace, slots.acquire_many(all_slots)).await;
    if finished.is_ok() {
        return;
    }
    let unfinished: Vec<ClaimedJob> = running
        .lock()
        .map(|running| running.values().cloned().collect())
        .unwrap_or_default();
    tracing::warn!(
        count = unfinished.len(),
        "releasing investigations still running at shutdown"
    );
    release(store, &unfinished).await;
}

/// Gives jobs back to the queue; if that fails, their leases expire instead (logged).
async fn release(store: &Arc<dyn Store>, jobs: &[ClaimedJob]) {
    if let Err(error) = store.release_jobs(jobs).await {
        tracing::error!(%error, "could not release jobs; their leases will expire instead");
    }
}
