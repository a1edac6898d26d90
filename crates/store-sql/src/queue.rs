//! The durable queue: one `jobs` row per investigation waiting or running, leased to a
//! worker for a while. A worker that dies simply lets its lease expire; the job is then
//! claimed again and its investigation marked retried. Finishing checks the lease, so a
//! worker that lost its job (expiry, cancel) can never overwrite what came after.

use sleuth_domain::{Canceled, Priority, Timestamp};
use sleuth_store::{ClaimedJob, Finish, GuardWindows, JobInput, StoreError, StoreResult};
use sqlx::{AnyConnection, AnyPool};

use crate::rows::{self, micros};
use crate::{DbResultExt, Dialect, investigations, search};

pub async fn claim_jobs(
    pool: &AnyPool,
    dialect: Dialect,
    worker: &str,
    max: usize,
    lease: chrono::Duration,
    now: Timestamp,
) -> StoreResult<Vec<ClaimedJob>> {
    let lease_token = uuid::Uuid::new_v4().to_string();
    // One UPDATE ... RETURNING picks and leases atomically. On PostgreSQL, SKIP LOCKED
    // lets many processes claim side by side without waiting on each other's rows.
    let claim_sql = match dialect {
        Dialect::Sqlite => CLAIM_SQL_SQLITE,
        Dialect::Postgres => CLAIM_SQL_POSTGRES,
    };
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    let claimed: Vec<(i64, i64)> = sqlx::query_as(claim_sql)
        .bind(worker)
        .bind(&lease_token)
        .bind(micros(now + lease))
        .bind(micros(now))
        .bind(i64::try_from(max).unwrap_or(1))
        .fetch_all(&mut *transaction)
        .await
        .db()?;
    let mut jobs = Vec::with_capacity(claimed.len());
    for (investigation_id, attempt) in claimed {
        sqlx::query(
            "UPDATE investigations SET status = 'loading', start_time = COALESCE(start_time, $2), \
             is_retried = CASE WHEN $3 > 1 THEN 1 ELSE is_retried END, updated_at = $2 \
             WHERE id = $1",
        )
        .bind(investigation_id)
        .bind(micros(now))
        .bind(attempt)
        .execute(&mut *transaction)
        .await
        .db()?;
        jobs.push(ClaimedJob {
            investigation_id,
            attempt,
            lease_token: lease_token.clone(),
        });
    }
    transaction.commit().await.db()?;
    jobs.sort_by_key(|job| job.investigation_id);
    Ok(jobs)
}

const CLAIM_SQL_SQLITE: &str = "UPDATE jobs SET lease_owner = $1, lease_token = $2, \
    lease_expires_at = $3, attempts = attempts + 1 \
    WHERE investigation_id IN (SELECT investigation_id FROM jobs \
        WHERE (lease_expires_at IS NULL OR lease_expires_at < $4) AND ready_at <= $4 \
        ORDER BY investigation_id LIMIT $5) \
    RETURNING investigation_id, attempts";

const CLAIM_SQL_POSTGRES: &str = "UPDATE jobs SET lease_owner = $1, lease_token = $2, \
    lease_expires_at = $3, attempts = attempts + 1 \
    WHERE investigation_id IN (SELECT investigation_id FROM jobs \
        WHERE (lease_expires_at IS NULL OR lease_expires_at < $4) AND ready_at <= $4 \
        ORDER BY investigation_id LIMIT $5 FOR UPDATE SKIP LOCKED) \
    RETURNING investigation_id, attempts";

pub async fn load_job(
    pool: &AnyPool,
    job: &ClaimedJob,
    windows: GuardWindows,
) -> StoreResult<JobInput> {
    let mut connection = pool.acquire().await.db()?;
    let investigation = investigations::fetch_by_ids(&mut connection, &[job.investigation_id])
        .await?
        .pop()
        .ok_or_else(|| StoreError::not_found("investigation", job.investigation_id))?;
    let alert = &investigation.alert;
    let tenant_union_id = alert.tenant_union.id;
    let received = micros(alert.created_at);
    let burst_count: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM alerts WHERE direct_source_label = $1 \
         AND tenant_union_id = $2 \
         AND created_at > $3 AND created_at <= $4 AND id <= $5",
    )
    .bind(&alert.parsed.direct_source_label)
    .bind(tenant_union_id)
    .bind(received - windows.burst_window.num_microseconds().unwrap_or(0))
    .bind(received)
    .bind(alert.id)
    .fetch_one(&mut *connection)
    .await
    .db()?;
    let coalesce_first = match &alert.parsed.coalesce_key {
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

pub async fn finish_job(
    pool: &AnyPool,
    dialect: Dialect,
    job: &ClaimedJob,
    finish: &Finish,
    at: Timestamp,
) -> StoreResult<bool> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    let released = sqlx::query("DELETE FROM jobs WHERE investigation_id = $1 AND lease_token = $2")
        .bind(job.investigation_id)
        .bind(&job.lease_token)
        .execute(&mut *transaction)
        .await
        .db()?;
    if released.rows_affected() == 0 {
        // Another worker holds it now, or it was canceled: what we concluded is dropped.
        return Ok(false);
    }
    match finish {
        Finish::Completed {
            result,
            ignored_for,
        } => {
            write_result(
                &mut transaction,
                dialect,
                job.investigation_id,
                result,
                *ignored_for,
                at,
            )
            .await?;
        }
        Finish::Stopped {
            canceled,
            error_msg,
        } => {
            sqlx::query(
                "UPDATE investigations SET status = 'error', canceled = $2, error_msg = $3, \
                 updated_at = $4 WHERE id = $1",
            )
            .bind(job.investigation_id)
            .bind(canceled.map(Canceled::as_str))
            .bind(error_msg)
            .bind(micros(at))
            .execute(&mut *transaction)
            .await
            .db()?;
        }
    }
    transaction.commit().await.db()?;
    Ok(true)
}

async fn write_result(
    connection: &mut AnyConnection,
    dialect: Dialect,
    investigation_id: i64,
    result: &sleuth_domain::InvestigationResult,
    ignored_for: Option<i64>,
    at: Timestamp,
) -> StoreResult<()> {
    sqlx::query(
        "UPDATE investigations SET status = 'success', outcome = $2, priority = $3, \
         priority_rank = $4, result = $5, ignored_for = $6, generated_time = $7, updated_at = $7, \
         error_msg = NULL, feedback_created_at = $7, feedback_updated_at = $7 WHERE id = $1",
    )
    .bind(investigation_id)
    .bind(result.outcome.as_str())
    .bind(result.priority.as_str())
    .bind(priority_rank(Some(result.priority)))
    .bind(rows::to_json(result)?)
    .bind(ignored_for)
    .bind(micros(at))
    .execute(&mut *connection)
    .await
    .db()?;
    crate::strategies::count_effects(connection, &result.strategy_effects).await?;
    for tag_name in result.insight_tags.keys() {
        sqlx::query(
            "INSERT INTO investigation_tags (name, investigation_id) VALUES ($1, $2) \
             ON CONFLICT DO NOTHING",
        )
        .bind(tag_name)
        .bind(investigation_id)
        .execute(&mut *connection)
        .await
        .db()?;
    }
    let parsed_json: String = sqlx::query_scalar(
        "SELECT a.parsed FROM alerts a JOIN investigations i ON i.alert_id = a.id WHERE i.id = $1",
    )
    .bind(investigation_id)
    .fetch_one(&mut *connection)
    .await
    .db()?;
    let parsed: sleuth_domain::ParsedAlert = serde_json::from_str(&parsed_json)
        .map_err(|error| StoreError::internal(format!("stored alert is bad JSON: {error}")))?;
    // Notes written while the investigation ran stay searchable once it concludes.
    let mut text = search::result_text(&parsed, result);
    text.push_str(&crate::analyst::notes_search_text(connection, investigation_id).await?);
    search::index(connection, dialect, investigation_id, &text).await
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
    use sleuth_domain::InvestigationStatus;

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
