//! The durable queue: one `jobs` row per investigation waiting or running, leased to a
//! worker for a while. A worker that dies simply lets its lease expire; the job is then
//! claimed again and its investigation marked retried. Finishing checks the lease, so a
//! worker that lost its job (expiry, cancel) can never overwrite what came after.

use async_trait::async_trait;
use sleuth_domain::{Priority, Timestamp};
use std::collections::{BTreeMap, HashMap};

use sleuth_store::{ClaimedJob, Finished, GuardWindows, JobEnd, JobInput, StoreError, StoreResult};
use sqlx::{AnyConnection, AnyPool};

use crate::builder::SqlBuilder;
use crate::group_commit::BatchWrite;
use crate::rows::micros;
use crate::{DbResultExt, Dialect, investigations};

pub async fn claim_jobs(
    pool: &AnyPool,
    dialect: Dialect,
    worker: &str,
    max: usize,
    lease: chrono::Duration,
    now: Timestamp,
) -> StoreResult<Vec<ClaimedJob>> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    let jobs = claim_in(&mut transaction, dialect, worker, max, lease, now).await?;
    transaction.commit().await.db()?;
    Ok(jobs)
}

/// Leases up to `max` ready jobs to `worker` on an open write transaction (a claim of its
/// own, or a finish batch's: `finish_batch`); their investigations become `loading`.
async fn claim_in(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    worker: &str,
    max: usize,
    lease: chrono::Duration,
    now: Timestamp,
) -> StoreResult<Vec<ClaimedJob>> {
    let lease_token = uuid::Uuid::new_v4().to_string();
    // One UPDATE ... RETURNING picks and leases atomically. On PostgreSQL, SKIP LOCKED
    // lets many processes claim side by side without waiting on each other's rows.
    // The LIMIT is written in, not bound (see `builder::SqlBuilder::limit_offset`).
    let skip_locked = match dialect {
        Dialect::Sqlite => "",
        Dialect::Postgres => " FOR UPDATE SKIP LOCKED",
    };
    let claim_sql = format!(
        "UPDATE jobs SET lease_owner = $1, lease_token = $2, \
         lease_expires_at = $3, attempts = attempts + 1 \
         WHERE investigation_id IN (SELECT investigation_id FROM jobs \
             WHERE (lease_expires_at IS NULL OR lease_expires_at < $4) AND ready_at <= $4 \
             ORDER BY investigation_id LIMIT {}{skip_locked}) \
         RETURNING investigation_id, attempts",
        max.max(1)
    );
    let claimed: Vec<(i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(claim_sql))
        .bind(worker)
        .bind(&lease_token)
        .bind(micros(now + lease))
        .bind(micros(now))
        .fetch_all(&mut *transaction)
        .await
        .db()?;
    if !claimed.is_empty() {
        let mut sql = SqlBuilder::new(
            "UPDATE investigations SET status = 'loading', start_time = COALESCE(start_time, ",
        );
        sql.bind(micros(now))?.push("), updated_at = ");
        sql.bind(micros(now))?.push(" WHERE id IN ");
        let ids: Vec<i64> = claimed
            .iter()
            .map(|(investigation_id, _)| *investigation_id)
            .collect();
        sql.bind_padded_list(&ids)?;
        sql.build().execute(&mut *transaction).await.db()?;
        let retried: Vec<i64> = claimed
            .iter()
            .filter(|(_, attempt)| *attempt > 1)
            .map(|(investigation_id, _)| *investigation_id)
            .collect();
        if !retried.is_empty() {
            let mut sql = SqlBuilder::new("UPDATE investigations SET is_retried = 1 WHERE id IN ");
            sql.bind_list(retried)?;
            sql.build().execute(&mut *transaction).await.db()?;
        }
    }
    let mut jobs: Vec<ClaimedJob> = claimed
        .into_iter()
        .map(|(investigation_id, attempt)| ClaimedJob {
            investigation_id,
            attempt,
            lease_token: lease_token.clone(),
        })
        .collect();
    jobs.sort_by_key(|job| job.investigation_id);
    Ok(jobs)
}

pub async fn load_job(
    pool: &AnyPool,
    job: &ClaimedJob,
    windows: GuardWindows,
) -> StoreResult<JobInput> {
    let mut connection = pool.acquire().await.db()?;
    let investigation =
        investigations::fetch_without_runs(&mut connection, &[job.investigation_id])
            .await?
            .pop()
            .ok_or_else(|| StoreError::not_found("investigation", job.investigation_id))?;
    let alert = &investigation.alert;
    let tenant_union_id = alert.tenant_union.id;
    let received = micros(alert.created_at);
    let burst_count: i64 = if windows.burst_count_limit == 0 {
        0
    } else {
        sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM (SELECT 1 FROM alerts WHERE direct_source_label = $1 \
             AND tenant_union_id = $2 \
             AND created_at > $3 AND created_at <= $4 AND id <= $5 LIMIT {}) AS window_alerts",
            windows.burst_count_limit
        )))
        .bind(&alert.parsed.direct_source_label)
        .bind(tenant_union_id)
        .bind(received - windows.burst_window.num_microseconds().unwrap_or(0))
        .bind(received)
        .bind(alert.id)
        .fetch_one(&mut *connection)
        .await
        .db()?
    };
    let coalesce_key = alert
        .parsed
        .coalesce_key
        .as_ref()
        .filter(|_| windows.coalesce_window > chrono::Duration::zero());
    let coalesce_first = match coalesce_key {
        None => None,
        Some(coalesce_key) => sqlx::query_scalar::<_, Option<i64>>(
            "SELECT MIN(i.id) FROM investigations i JOIN alerts a ON a.id = i.alert_id \
             WHERE a.coalesce_key = $1 AND a.tenant_union_id = $2 \
             AND a.created_at >= $3 AND a.id <> $4 AND i.id < $5 AND i.ignored_for IS NULL",
        )
        .bind(coalesce_key)
        .bind(tenant_union_id)
        .bind(received - windows.coalesce_window.num_microseconds().unwrap_or(0))
        .bind(alert.id)
        .bind(investigation.id)
        .fetch_one(&mut *connection)
        .await
        .db()?,
    };
    Ok(JobInput {
        investigation,
        burst_count: u64::try_from(burst_count).unwrap_or(0),
        coalesce_first,
    })
}

/// A finished job on its way to the store.
pub struct FinishRequest {
    pub(crate) job: ClaimedJob,
    pub(crate) end: JobEnd,
}

/// The group-commit writer of finished jobs: the results of all the investigations that
/// concluded meanwhile go into one transaction, with the claims of the next jobs their
/// workers asked for. A result is as durable as an alert, so each worker still waits for
/// the commit before it counts the job done.
pub struct FinishWriter {
    pub(crate) pool: AnyPool,
    pub(crate) dialect: Dialect,
}

#[async_trait]
impl BatchWrite for FinishWriter {
    type Request = FinishRequest;
    type Output = Finished;

    async fn write(&self, batch: &[FinishRequest]) -> Vec<StoreResult<Finished>> {
        match finish_batch(&self.pool, self.dialect, batch).await {
            Ok(finished) => finished.into_iter().map(Ok).collect(),
            Err(error) => {
                // Nothing of the batch was committed. Replayed one job per transaction, so
                // that one job that cannot be stored does not keep the others from it.
                tracing::debug!(%error, size = batch.len(), "finish batch failed; replaying one by one");
                let mut results = Vec::with_capacity(batch.len());
                for request in batch {
                    let finished =
                        finish_batch(&self.pool, self.dialect, std::slice::from_ref(request))
                            .await
                            .and_then(|finished| {
                                finished.into_iter().next().ok_or_else(|| {
                                    StoreError::internal("a finished job got no answer")
                                })
                            });
                    results.push(finished);
                }
                results
            }
        }
    }
}

/// Stores the finished jobs and their system events in one transaction (`finish_batch`),
/// then claims in it the next jobs their workers asked for. For each request: whether it
/// was stored (false when its lease was lost) and the job claimed for it.
async fn finish_batch(
    pool: &AnyPool,
    dialect: Dialect,
    batch: &[FinishRequest],
) -> StoreResult<Vec<Finished>> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    let stored = crate::finish_batch::write(&mut transaction, dialect, batch).await?;
    let mut next = claim_next(&mut transaction, dialect, batch).await?;
    transaction.commit().await.db()?;
    Ok(stored
        .into_iter()
        .enumerate()
        .map(|(index, stored)| Finished {
            stored,
            next: next.remove(&index),
        })
        .collect())
}

/// The next jobs for the requests that asked, by request index: one claim per worker
/// (normally one per process), handed out in batch order until the ready jobs run out.
async fn claim_next(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    batch: &[FinishRequest],
) -> StoreResult<HashMap<usize, ClaimedJob>> {
    let mut askers: BTreeMap<(&str, chrono::Duration), Vec<usize>> = BTreeMap::new();
    for (index, request) in batch.iter().enumerate() {
        if let Some(next) = &request.end.next {
            askers
                .entry((next.worker.as_str(), next.lease))
                .or_default()
                .push(index);
        }
    }
    let mut handed = HashMap::new();
    for ((worker, lease), indexes) in askers {
        // The claim happens as the latest of these jobs finished.
        let Some(now) = indexes.iter().map(|&index| batch[index].end.at).max() else {
            continue;
        };
        let jobs = claim_in(transaction, dialect, worker, indexes.len(), lease, now).await?;
        handed.extend(indexes.into_iter().zip(jobs));
    }
    Ok(handed)
}

/// Sort rank of a priority: none < informational < notable < urgent.
pub fn priority_rank(priority: Option<Priority>) -> i64 {
    match priority {
        None => 0,
        Some(Priority::Informational) => 1,
        Some(Priority::Notable) => 2,
        Some(Priority::Urgent) => 3,
    }
}

pub async fn release_jobs(
    pool: &AnyPool,
    dialect: Dialect,
    jobs: &[ClaimedJob],
) -> StoreResult<()> {
    for job in jobs {
        let mut connection = pool.acquire().await.db()?;
        let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
        let released = sqlx::query(
            "UPDATE jobs SET lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL, \
             attempts = attempts - 1 WHERE investigation_id = $1 AND lease_token = $2",
        )
        .bind(job.investigation_id)
        .bind(&job.lease_token)
        .execute(&mut *transaction)
        .await
        .db()?;
        if released.rows_affected() > 0 {
            sqlx::query(
                "UPDATE investigations SET status = 'not_asked' WHERE id = $1 AND status = 'loading'",
            )
            .bind(job.investigation_id)
            .execute(&mut *transaction)
            .await
            .db()?;
        }
        transaction.commit().await.db()?;
    }
    Ok(())
}

pub async fn pending_jobs(pool: &AnyPool) -> StoreResult<u64> {
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs")
        .fetch_one(pool)
        .await
        .db()?;
    Ok(u64::try_from(count).unwrap_or(0))
}

pub async fn cancel_investigation(
    pool: &AnyPool,
    dialect: Dialect,
    investigation_id: i64,
    at: Timestamp,
) -> StoreResult<()> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    let updated = sqlx::query(
        "UPDATE investigations SET status = 'error', canceled = 'CANCEL_MANUAL', \
         error_msg = 'Canceled by an analyst before it concluded.', updated_at = $2 \
         WHERE id = $1 AND status IN ('not_asked', 'loading')",
    )
    .bind(investigation_id)
    .bind(micros(at))
    .execute(&mut *transaction)
    .await
    .db()?;
    if updated.rows_affected() == 0 {
        let status: Option<String> =
            sqlx::query_scalar("SELECT status FROM investigations WHERE id = $1")
                .bind(investigation_id)
                .fetch_optional(&mut *transaction)
                .await
                .db()?;
        return match status {
            None => Err(StoreError::not_found("investigation", investigation_id)),
            Some(status) => Err(StoreError::Rejected {
                detail: format!(
                    "investigation {investigation_id} already finished (status {status}); only \
                     queued or running investigations can be canceled"
                ),
            }),
        };
    }
    sqlx::query("DELETE FROM jobs WHERE investigation_id = $1")
        .bind(investigation_id)
        .execute(&mut *transaction)
        .await
        .db()?;
    transaction.commit().await.db()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sleuth_domain::{Canceled, InvestigationStatus};

    #[test]
    fn the_sql_spells_states_as_the_enum_does() {
        assert_eq!(InvestigationStatus::NotAsked.as_str(), "not_asked");
        assert_eq!(InvestigationStatus::Loading.as_str(), "loading");
        assert_eq!(InvestigationStatus::Success.as_str(), "success");
        assert_eq!(InvestigationStatus::Error.as_str(), "error");
        assert_eq!(Canceled::Manual.as_str(), "CANCEL_MANUAL");
    }

    #[test]
    fn priority_ranks_order_urgent_highest() {
        assert!(priority_rank(Some(Priority::Urgent)) > priority_rank(Some(Priority::Notable)));
        assert!(priority_rank(Some(Priority::Informational)) > priority_rank(None));
    }
}
