//! The durable queue: one `jobs` row per investigation waiting or running, leased to a
//! worker for a while. A worker that dies simply lets its lease expire; the job is then
//! claimed again and its investigation marked retried. Finishing checks the lease, so a
//! worker that lost its job (expiry, cancel) can never overwrite what came after.

use async_trait::async_trait;
use sleuth_domain::Timestamp;
use std::collections::{BTreeMap, HashMap};

use sleuth_store::{ClaimedJob, Finished, GuardWindows, JobInput, StoreError, StoreResult};
use sqlx::AnyPool;
use sqlx::any::AnyRow;

use crate::builder::{SqlBuilder, Statements};
use crate::finish_batch::FinishRequest;
use crate::group_commit::BatchWrite;
use crate::rows::{self, micros};
use crate::writer_connection::WriterConnections;
use crate::{DbResultExt, Dialect, investigations};

pub(crate) async fn claim_jobs(
    connections: &WriterConnections,
    dialect: Dialect,
    worker: &str,
    max: usize,
    lease: chrono::Duration,
    now: Timestamp,
) -> StoreResult<Vec<ClaimedJob>> {
    let mut claim = Statements::new(dialect);
    let token = write_claim(&mut claim, dialect, worker, max, lease, now)?;
    let rows = connections
        .write(async |connection| {
            let (_write_turn, mut transaction) = crate::begin_write(connection, dialect).await?;
            let rows = claim.run(&mut transaction).await?;
            transaction.commit().await.db()?;
            Ok(rows)
        })
        .await?;
    Ok(claimed_jobs(&rows)?.remove(&token).unwrap_or_default())
}

/// Writes the lease of up to `max` ready jobs to `worker` under a new lease token, which
/// it returns, and the marking of their investigations as `loading` (retried, if a worker
/// had them before). Nothing is read back in between: the second statement finds the
/// jobs by their token, so on SQLite both go in one round trip with whatever the
/// transaction writes before them (a finish batch's results: `finish_batch`). The rows of
/// the claimed jobs come back from the run (`claimed_jobs`).
fn write_claim(
    statements: &mut Statements,
    dialect: Dialect,
    worker: &str,
    max: usize,
    lease: chrono::Duration,
    now: Timestamp,
) -> StoreResult<String> {
    let lease_token = uuid::Uuid::new_v4().to_string();
    // One UPDATE ... RETURNING picks and leases atomically.
    let sql = statements.next("UPDATE jobs SET lease_owner = ");
    sql.bind(worker.to_string())?.push(", lease_token = ");
    sql.bind(lease_token.clone())?.push(", lease_expires_at = ");
    sql.bind(micros(now + lease))?
        .push(", attempts = attempts + 1 WHERE investigation_id IN (");
    push_ready_pick(sql, dialect, max, now)?;
    sql.push(") RETURNING investigation_id, attempts, lease_token");
    sql.fixed_text();
    let sql = statements
        .next("UPDATE investigations SET status = 'loading', start_time = COALESCE(start_time, ");
    sql.bind(micros(now))?.push("), updated_at = ");
    sql.bind(micros(now))?.push(
        ", is_retried = CASE WHEN claimed.attempts > 1 THEN 1 ELSE is_retried END \
         FROM jobs AS claimed WHERE claimed.lease_token = ",
    );
    sql.bind(lease_token.clone())?
        .push(" AND investigations.id = claimed.investigation_id")
        .fixed_text();
    Ok(lease_token)
}

/// Writes the SELECT of the (at most `max`) jobs a claim takes: those without a live lease
/// and ready, first in queue order. On PostgreSQL, SKIP LOCKED lets many processes claim
/// side by side without waiting on each other's rows. The LIMIT is written in, not bound
/// (see `builder::SqlBuilder::limit_offset`).
///
/// It walks the jobs in queue order and stops at the first `max` it may take, passing only
/// the few leased now. SQLite, left to choose, reads both halves of the OR from the lease
/// index, where every queued job (no lease) is, and sorts them all to keep `max`: a cost
/// that grows with the queue, paid by every claim inside the write turn every result
/// waits for. NOT INDEXED keeps it to the table's own (investigation id) order.
/// PostgreSQL walks its primary key by itself.
fn push_ready_pick(
    sql: &mut SqlBuilder,
    dialect: Dialect,
    max: usize,
    now: Timestamp,
) -> StoreResult<()> {
    let (jobs, skip_locked) = match dialect {
        Dialect::Sqlite => ("jobs NOT INDEXED", ""),
        Dialect::Postgres => ("jobs", " FOR UPDATE SKIP LOCKED"),
    };
    sql.push(&format!(
        "SELECT investigation_id FROM {jobs} \
         WHERE (lease_expires_at IS NULL OR lease_expires_at < "
    ));
    sql.bind(micros(now))?.push(") AND ready_at <= ");
    sql.bind(micros(now))?.push(&format!(
        " ORDER BY investigation_id LIMIT {}{skip_locked}",
        max.max(1)
    ));
    Ok(())
}

/// SQLite's plan for the pick of a claim of up to `max` jobs (`push_ready_pick`), one
/// line per step of `EXPLAIN QUERY PLAN`: the backend's tests check that a claim never
/// reads the whole queue, whatever its size.
pub async fn sqlite_claim_pick_plan(pool: &AnyPool, max: usize) -> StoreResult<Vec<String>> {
    crate::builder::sqlite_plan(pool, |sql| {
        push_ready_pick(sql, Dialect::Sqlite, max, chrono::Utc::now())
    })
    .await
}

/// The jobs claimed by `write_claim`s, by lease token, each claim's in investigation
/// order, from the rows of their run (the other statements written with them return
/// none).
fn claimed_jobs(rows: &[AnyRow]) -> StoreResult<HashMap<String, Vec<ClaimedJob>>> {
    let mut claimed: HashMap<String, Vec<ClaimedJob>> = HashMap::new();
    for row in rows {
        let lease_token = rows::text(row, "lease_token")?;
        claimed
            .entry(lease_token.clone())
            .or_default()
            .push(ClaimedJob {
                investigation_id: rows::int(row, "investigation_id")?,
                attempt: rows::int(row, "attempts")?,
                lease_token,
            });
    }
    for jobs in claimed.values_mut() {
        jobs.sort_by_key(|job| job.investigation_id);
    }
    Ok(claimed)
}

pub(crate) async fn load_job(
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
    let window_start = received - windows.burst_window.num_microseconds().unwrap_or(0);
    let burst_count: i64 = if windows.burst_count_limit == 0 {
        0
    } else {
        match burst_by_positions(&mut connection, alert, window_start, windows).await? {
            Some(count) => count,
            None => sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT COUNT(*) FROM (SELECT 1 FROM alerts WHERE direct_source_label = $1 \
                 AND tenant_union_id = $2 \
                 AND created_at > $3 AND created_at <= $4 AND id <= $5 LIMIT {}) AS window_alerts",
                windows.burst_count_limit
            )))
            .bind(&alert.parsed.direct_source_label)
            .bind(tenant_union_id)
            .bind(window_start)
            .bind(received)
            .bind(alert.id)
            .fetch_one(&mut *connection)
            .await
            .db()?,
        }
    };
    let coalesce_key = alert
        .parsed
        .coalesce_key
        .as_ref()
        .filter(|_| windows.coalesce_window > chrono::Duration::zero());
    let coalesce_first = match coalesce_key {
        None => None,
        // The earliest first, in the order of the coalesce-key index, so that the walk ends
        // at the first alert of the story not coalesced itself: while a story runs, that is
        // the first alert of the window, however many the story has. A MIN() over the
        // window read every alert of the key first, thousands in a storm. The order is the
        // index's own, (created_at, id), so that nothing is sorted: ordering the joined rows
        // by the investigation's id too made PostgreSQL read past the first alert that
        // qualified for the next one, every alert of the key in the window when none did.
        // The window ends at this alert: a story is ignored in favour of its first alert,
        // never of a later one, and without the bound the first alert of a story drained
        // from a backlog walked every later alert of its key before finding none.
        Some(coalesce_key) => sqlx::query_scalar::<_, i64>(
            "SELECT (SELECT MIN(i.id) FROM investigations i WHERE i.alert_id = a.id \
             AND i.id < $5 AND i.ignored_for IS NULL) AS first_investigation_id \
             FROM alerts a WHERE a.coalesce_key = $1 AND a.tenant_union_id = $2 \
             AND a.created_at >= $3 AND a.created_at <= $6 AND a.id <> $4 \
             AND EXISTS (SELECT 1 FROM investigations i \
             WHERE i.alert_id = a.id AND i.id < $5 AND i.ignored_for IS NULL) \
             ORDER BY a.created_at, a.id LIMIT 1",
        )
        .bind(coalesce_key)
        .bind(tenant_union_id)
        .bind(received - windows.coalesce_window.num_microseconds().unwrap_or(0))
        .bind(alert.id)
        .bind(investigation.id)
        .bind(received)
        .fetch_optional(&mut *connection)
        .await
        .db()?,
    };
    Ok(JobInput {
        investigation,
        burst_count: u64::try_from(burst_count).unwrap_or(0),
        coalesce_first,
    })
}

/// The burst guard's count, from the positions that migration source_positions keeps: the
/// alert's position among its source's alerts less that of the first alert of the window,
/// plus one, capped at the limit. Two index seeks, whatever the threshold. `None` when the
/// alert has no position (then its alerts are counted).
async fn burst_by_positions(
    connection: &mut sqlx::AnyConnection,
    alert: &sleuth_store::AlertRecord,
    window_start: i64,
    windows: GuardWindows,
) -> StoreResult<Option<i64>> {
    let count: Option<i64> = sqlx::query_scalar(
        "SELECT here.position - (SELECT first.position FROM alert_source_positions first \
         WHERE first.direct_source_label = here.direct_source_label \
         AND first.tenant_union_id = here.tenant_union_id AND first.created_at > $1 \
         ORDER BY first.created_at, first.position LIMIT 1) + 1 \
         FROM alert_source_positions here WHERE here.alert_id = $2",
    )
    .bind(window_start)
    .bind(alert.id)
    .fetch_optional(&mut *connection)
    .await
    .db()?
    .flatten();
    let limit = i64::try_from(windows.burst_count_limit).unwrap_or(i64::MAX);
    Ok(count.map(|count| count.clamp(0, limit)))
}

/// The group-commit writer of finished jobs: the results of all the investigations that
/// concluded meanwhile go into one transaction, with the claims of the next jobs their
/// workers asked for. A result is as durable as an alert, so each worker still waits for
/// the commit before it counts the job done.
pub(crate) struct FinishWriter {
    pub(crate) connections: WriterConnections,
    pub(crate) dialect: Dialect,
}

#[async_trait]
impl BatchWrite for FinishWriter {
    type Request = FinishRequest;
    type Output = Finished;

    async fn write(&self, batch: &[FinishRequest]) -> Vec<StoreResult<Finished>> {
        match finish_batch(&self.connections, self.dialect, batch).await {
            Ok(finished) => finished.into_iter().map(Ok).collect(),
            Err(error) => {
                // Nothing of the batch was committed. Replayed one job per transaction, so
                // that one job that cannot be stored does not keep the others from it.
                tracing::debug!(%error, size = batch.len(), "finish batch failed; replaying one by one");
                let mut results = Vec::with_capacity(batch.len());
                for request in batch {
                    let finished = finish_batch(
                        &self.connections,
                        self.dialect,
                        std::slice::from_ref(request),
                    )
                    .await
                    .and_then(|finished| {
                        finished
                            .into_iter()
                            .next()
                            .ok_or_else(|| StoreError::internal("a finished job got no answer"))
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
    connections: &WriterConnections,
    dialect: Dialect,
    batch: &[FinishRequest],
) -> StoreResult<Vec<Finished>> {
    let (stored, claims, mut claimed) = connections
        .write(async |connection| {
            let (_write_turn, mut transaction) = crate::begin_write(connection, dialect).await?;
            let mut writes = Statements::new(dialect);
            let stored =
                crate::finish_batch::write(&mut transaction, dialect, batch, &mut writes).await?;
            let claims = write_next_claims(&mut writes, dialect, batch)?;
            crate::finish_batch::count_strategy_effects(&mut writes, batch, &stored)?;
            let claimed = claimed_jobs(&writes.run(&mut transaction).await?)?;
            transaction.commit().await.db()?;
            Ok((stored, claims, claimed))
        })
        .await?;
    let mut next: HashMap<usize, ClaimedJob> = HashMap::new();
    for (token, indexes) in claims {
        let jobs = claimed.remove(&token).unwrap_or_default();
        next.extend(indexes.into_iter().zip(jobs));
    }
    Ok(stored
        .into_iter()
        .enumerate()
        .map(|(index, stored)| Finished {
            stored,
            next: next.remove(&index),
        })
        .collect())
}

/// Writes the claims of the next jobs for the requests that asked: one claim per worker
/// (normally one per process), whose jobs are handed out in batch order until they run
/// out. Returns each claim's lease token with the indexes of the requests it serves.
fn write_next_claims(
    writes: &mut Statements,
    dialect: Dialect,
    batch: &[FinishRequest],
) -> StoreResult<Vec<(String, Vec<usize>)>> {
    let mut askers: BTreeMap<(&str, chrono::Duration), Vec<usize>> = BTreeMap::new();
    for (index, request) in batch.iter().enumerate() {
        if let Some(next) = &request.end.next {
            askers
                .entry((next.worker.as_str(), next.lease))
                .or_default()
                .push(index);
        }
    }
    let mut claims = Vec::new();
    for ((worker, lease), indexes) in askers {
        // The claim happens as the latest of these jobs finished.
        let Some(now) = indexes.iter().map(|&index| batch[index].end.at).max() else {
            continue;
        };
        let token = write_claim(writes, dialect, worker, indexes.len(), lease, now)?;
        claims.push((token, indexes));
    }
    Ok(claims)
}

pub(crate) async fn release_jobs(
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

pub(crate) async fn pending_jobs(pool: &AnyPool) -> StoreResult<u64> {
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs")
        .fetch_one(pool)
        .await
        .db()?;
    Ok(u64::try_from(count).unwrap_or(0))
}

pub(crate) async fn cancel_investigation(
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
    use sleuth_domain::{Canceled, InvestigationStatus};

    #[test]
    fn the_sql_spells_states_as_the_enum_does() {
        assert_eq!(InvestigationStatus::NotAsked.as_str(), "not_asked");
        assert_eq!(InvestigationStatus::Loading.as_str(), "loading");
        assert_eq!(InvestigationStatus::Success.as_str(), "success");
        assert_eq!(InvestigationStatus::Error.as_str(), "error");
        assert_eq!(Canceled::Manual.as_str(), "CANCEL_MANUAL");
    }
}
