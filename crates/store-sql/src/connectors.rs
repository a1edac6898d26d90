//! Pull connectors (`sleuth_store::ConnectorStore`): settings, the lease a poller holds,
//! and a page of alerts stored with the cursor past it in one transaction.

use async_trait::async_trait;
use sleuth_domain::Timestamp;
use sleuth_store::{
    ConnectorChanges, ConnectorPage, ConnectorPollEnd, ConnectorRecord, ConnectorStore, Created,
    DueWriteback, NewConnector, StoreError, StoreResult, WritebackResult,
};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use crate::create::{create_one, notify_workers};
use crate::create_request::CreateRequest;
use crate::rows::{self, micros};
use crate::{DbResultExt, Dialect, SqlStore};

macro_rules! columns {
    () => {
        "id, name, kind, settings, tenant_union_id, enabled, interval_seconds, cursor, \
         next_poll_at, lease_expires_at, last_poll_at, caught_up_at, last_error, \
         last_error_at, failures, polls, pages, alerts_taken, alerts_known, alerts_refused, \
         writebacks_sent, last_writeback_error, last_writeback_error_at, \
         (SELECT COUNT(*) FROM connector_writebacks w WHERE w.connector_id = connectors.id \
          AND w.sent_at IS NULL) AS writebacks_pending, \
         created_at, updated_at"
    };
}

fn read(row: &AnyRow) -> StoreResult<ConnectorRecord> {
    Ok(ConnectorRecord {
        id: rows::int(row, "id")?,
        name: rows::text(row, "name")?,
        kind: rows::text(row, "kind")?,
        settings: rows::json(row, "settings")?,
        tenant_union_id: rows::opt_int(row, "tenant_union_id")?,
        enabled: rows::flag(row, "enabled")?,
        interval_seconds: rows::int(row, "interval_seconds")?,
        cursor: rows::opt_json(row, "cursor")?,
        next_poll_at: rows::time(row, "next_poll_at")?,
        lease_expires_at: rows::opt_time(row, "lease_expires_at")?,
        last_poll_at: rows::opt_time(row, "last_poll_at")?,
        caught_up_at: rows::opt_time(row, "caught_up_at")?,
        last_error: rows::opt_text(row, "last_error")?,
        last_error_at: rows::opt_time(row, "last_error_at")?,
        failures: rows::int(row, "failures")?,
        polls: rows::int(row, "polls")?,
        pages: rows::int(row, "pages")?,
        alerts_taken: rows::int(row, "alerts_taken")?,
        alerts_known: rows::int(row, "alerts_known")?,
        alerts_refused: rows::int(row, "alerts_refused")?,
        writebacks_sent: rows::int(row, "writebacks_sent")?,
        writebacks_pending: rows::int(row, "writebacks_pending")?,
        last_writeback_error: rows::opt_text(row, "last_writeback_error")?,
        last_writeback_error_at: rows::opt_time(row, "last_writeback_error_at")?,
        created_at: rows::time(row, "created_at")?,
        updated_at: rows::time(row, "updated_at")?,
    })
}

fn refusal(error: sqlx::Error, name: &str) -> StoreError {
    crate::named_record_error(error, "connector", name)
}

fn lease_lost(connector_id: i64) -> StoreError {
    StoreError::Rejected {
        detail: format!("the lease on connector {connector_id} is held by another poller"),
    }
}

#[async_trait]
impl ConnectorStore for SqlStore {
    async fn create_connector(&self, connector: &NewConnector) -> StoreResult<ConnectorRecord> {
        let row = sqlx::query(concat!(
            "INSERT INTO connectors (name, kind, settings, tenant_union_id, enabled, \
             interval_seconds, next_poll_at, created_by, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $7, $7) RETURNING ",
            columns!()
        ))
        .bind(&connector.name)
        .bind(&connector.kind)
        .bind(connector.settings.to_string())
        .bind(connector.tenant_union_id)
        .bind(i64::from(connector.enabled))
        .bind(connector.interval_seconds)
        .bind(micros(connector.at))
        .bind(connector.created_by)
        .fetch_one(&self.pool)
        .await
        .map_err(|error| refusal(error, &connector.name))?;
        read(&row)
    }

    async fn list_connectors(&self) -> StoreResult<Vec<ConnectorRecord>> {
        sqlx::query(concat!(
            "SELECT ",
            columns!(),
            " FROM connectors ORDER BY id"
        ))
        .fetch_all(&self.pool)
        .await
        .db()?
        .iter()
        .map(read)
        .collect()
    }

    async fn get_connector(&self, connector_id: i64) -> StoreResult<ConnectorRecord> {
        let row = sqlx::query(concat!(
            "SELECT ",
            columns!(),
            " FROM connectors WHERE id = $1"
        ))
        .bind(connector_id)
        .fetch_optional(&self.pool)
        .await
        .db()?
        .ok_or_else(|| StoreError::not_found("connector", connector_id))?;
        read(&row)
    }

    async fn update_connector(
        &self,
        connector_id: i64,
        changes: &ConnectorChanges,
        at: Timestamp,
    ) -> StoreResult<ConnectorRecord> {
        let current = self.get_connector(connector_id).await?;
        let tenant_union_id = changes.tenant_union_id.unwrap_or(current.tenant_union_id);
        // Resumed, or polled at another interval: due at once rather than at the old time.
        let poll_now = changes.enabled == Some(true)
            || changes.interval_seconds.is_some()
            || changes.reset_cursor;
        let row = sqlx::query(concat!(
            "UPDATE connectors SET settings = COALESCE($1, settings), \
             enabled = COALESCE($2, enabled), interval_seconds = COALESCE($3, interval_seconds), \
             tenant_union_id = $4, \
             cursor = CASE WHEN $5 = 1 THEN NULL ELSE cursor END, \
             next_poll_at = CASE WHEN $6 = 1 THEN $7 ELSE next_poll_at END, \
             updated_at = $7 WHERE id = $8 RETURNING ",
            columns!()
        ))
        .bind(changes.settings.as_ref().map(ToString::to_string))
        .bind(changes.enabled.map(i64::from))
        .bind(changes.interval_seconds)
        .bind(tenant_union_id)
        .bind(i64::from(changes.reset_cursor))
        .bind(i64::from(poll_now))
        .bind(micros(at))
        .bind(connector_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(|error| refusal(error, &current.name))?
        .ok_or_else(|| StoreError::not_found("connector", connector_id))?;
        read(&row)
    }

    async fn delete_connector(&self, connector_id: i64) -> StoreResult<()> {
        let deleted = sqlx::query("DELETE FROM connectors WHERE id = $1")
            .bind(connector_id)
            .execute(&self.pool)
            .await
            .db()?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::not_found("connector", connector_id));
        }
        Ok(())
    }

    async fn lease_connector(
        &self,
        connector_id: i64,
        token: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        // One statement: the database lets one of two racing updates see the row as free.
        let leased = sqlx::query(
            "UPDATE connectors SET lease_token = $1, lease_expires_at = $2 \
             WHERE id = $3 AND enabled = 1 AND next_poll_at <= $4 \
             AND (lease_expires_at IS NULL OR lease_expires_at <= $4)",
        )
        .bind(token)
        .bind(micros(until))
        .bind(connector_id)
        .bind(micros(now))
        .execute(&self.pool)
        .await
        .db()?;
        Ok(leased.rows_affected() == 1)
    }

    async fn commit_connector_page(&self, page: ConnectorPage) -> StoreResult<Vec<Created>> {
        let dialect = self.dialect;
        let requests = page
            .alerts
            .iter()
            .map(|alert| CreateRequest::new(alert.clone(), false, None))
            .collect::<StoreResult<Vec<_>>>()?;
        let page = &page;
        let requests = &requests[..];
        let set_based = self
            .writers
            .write(async |connection| {
                write_page(connection, dialect, page, requests, Creates::SetBased).await
            })
            .await;
        let created = match set_based {
            Ok(PageWrite::Stored(created)) => created,
            Ok(PageWrite::LeaseLost) => return Err(lease_lost(page.connector_id)),
            Err(error @ StoreError::Unavailable(_)) => return Err(error),
            Ok(PageWrite::NotSetBased) | Err(_) => {
                // A revision of a known alert, or a batch the set-based path could not
                // take: one create at a time, each under its own savepoint, where an
                // alert the store refuses is counted as refused.
                match self
                    .writers
                    .write(async |connection| {
                        write_page(connection, dialect, page, requests, Creates::OneByOne).await
                    })
                    .await?
                {
                    PageWrite::Stored(created) => created,
                    PageWrite::LeaseLost => return Err(lease_lost(page.connector_id)),
                    PageWrite::NotSetBased => {
                        return Err(StoreError::internal("one-by-one creates answered nothing"));
                    }
                }
            }
        };
        if created
            .iter()
            .any(|created| matches!(created, Created::New(_)))
        {
            self.job_wakeups.notify_waiters();
        }
        Ok(created)
    }

    async fn end_connector_poll(&self, end: &ConnectorPollEnd) -> StoreResult<bool> {
        let at = micros(end.at);
        let ended = sqlx::query(
            "UPDATE connectors SET lease_token = NULL, lease_expires_at = NULL, \
             next_poll_at = $1, polls = polls + 1, last_poll_at = $2, \
             last_error = COALESCE($3, last_error), \
             last_error_at = CASE WHEN $3 IS NULL THEN last_error_at ELSE $2 END, \
             failures = CASE WHEN $3 IS NULL THEN 0 ELSE failures + 1 END \
             WHERE id = $4 AND lease_token = $5",
        )
        .bind(micros(end.next_poll_at))
        .bind(at)
        .bind(end.error.as_deref())
        .bind(end.connector_id)
        .bind(&end.lease_token)
        .execute(&self.pool)
        .await
        .db()?;
        Ok(ended.rows_affected() == 1)
    }

    async fn claim_writebacks(
        &self,
        now: Timestamp,
        claim_until: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<DueWriteback>> {
        let candidates = sqlx::query(DUE_WRITEBACKS)
            .bind(micros(now))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .db()?;
        let mut claimed = Vec::with_capacity(candidates.len());
        for row in &candidates {
            let id = rows::int(row, "id")?;
            // One statement: of two processes claiming at once, one moves the time.
            let taken = sqlx::query(
                "UPDATE connector_writebacks SET next_attempt_at = $1 \
                 WHERE id = $2 AND sent_at IS NULL AND next_attempt_at <= $3",
            )
            .bind(micros(claim_until))
            .bind(id)
            .bind(micros(now))
            .execute(&self.pool)
            .await
            .db()?;
            if taken.rows_affected() == 1 {
                claimed.push(DueWriteback {
                    id,
                    connector_id: rows::int(row, "connector_id")?,
                    investigation_id: rows::int(row, "investigation_id")?,
                    vendor_alert_id: rows::text(row, "vendor_alert_id")?,
                    attempts: rows::int(row, "attempts")?,
                });
            }
        }
        Ok(claimed)
    }

    async fn record_writeback(
        &self,
        writeback_id: i64,
        result: &WritebackResult,
        at: Timestamp,
    ) -> StoreResult<()> {
        let at = micros(at);
        let (error, retry_at) = match result {
            WritebackResult::Sent => (None, None),
            WritebackResult::Failed { error, retry_at } => {
                (Some(error.as_str()), Some(micros(*retry_at)))
            }
        };
        self.writers
            .write(async |connection| {
                let (_write_turn, mut transaction) =
                    crate::begin_write(connection, self.dialect).await?;
                let row = sqlx::query(
                    "UPDATE connector_writebacks SET attempts = attempts + 1, \
                     sent_at = CASE WHEN $1 IS NULL THEN $2 ELSE NULL END, \
                     last_error = $1, next_attempt_at = COALESCE($3, next_attempt_at) \
                     WHERE id = $4 AND sent_at IS NULL RETURNING connector_id",
                )
                .bind(error)
                .bind(at)
                .bind(retry_at)
                .bind(writeback_id)
                .fetch_optional(&mut *transaction)
                .await
                .db()?;
                // Already recorded as sent (by whoever claimed it after a long stall).
                let Some(row) = row else {
                    return Ok(());
                };
                let connector_id = rows::int(&row, "connector_id")?;
                sqlx::query(
                    "UPDATE connectors SET \
                     writebacks_sent = writebacks_sent + CASE WHEN $1 IS NULL THEN 1 ELSE 0 END, \
                     last_writeback_error = COALESCE($1, last_writeback_error), \
                     last_writeback_error_at = CASE WHEN $1 IS NULL \
                       THEN last_writeback_error_at ELSE $2 END \
                     WHERE id = $3",
                )
                .bind(error)
                .bind(at)
                .bind(connector_id)
                .execute(&mut *transaction)
                .await
                .db()?;
                transaction.commit().await.db()?;
                Ok(())
            })
            .await
    }
}

/// What writing a page did.
enum PageWrite {
    Stored(Vec<Created>),
    /// Nothing written: the set-based path cannot take the page.
    NotSetBased,
    /// Nothing written: another poller holds the lease.
    LeaseLost,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Creates {
    SetBased,
    OneByOne,
}

/// The page's creates and its cursor in one transaction, or nothing.
async fn write_page(
    connection: &mut AnyConnection,
    dialect: Dialect,
    page: &ConnectorPage,
    requests: &[CreateRequest],
    creates: Creates,
) -> StoreResult<PageWrite> {
    let (_write_turn, mut transaction) = crate::begin_write(connection, dialect).await?;
    let mut refused = page.refused;
    let mut refused_reason = page.refused_reason.clone();
    let created = match creates {
        Creates::SetBased if requests.is_empty() => Vec::new(),
        Creates::SetBased => {
            // One answer per request, in order.
            match crate::create_batch::write(&mut transaction, dialect, requests).await? {
                Some(created) => created.into_iter().enumerate().collect(),
                None => return Ok(PageWrite::NotSetBased),
            }
        }
        Creates::OneByOne => {
            if requests.len() > 1 {
                // Outside the savepoints, whose rollback would let go of the counters.
                let storing = requests.iter().map(|request| &request.alert);
                crate::source_counters::take_in_key_order(&mut transaction, dialect, storing)
                    .await?;
            }
            let mut created = Vec::with_capacity(requests.len());
            for (index, request) in requests.iter().enumerate() {
                sqlx::query("SAVEPOINT connector_create")
                    .execute(&mut *transaction)
                    .await
                    .db()?;
                match create_one(&mut transaction, dialect, request).await {
                    Ok(one) => {
                        sqlx::query("RELEASE SAVEPOINT connector_create")
                            .execute(&mut *transaction)
                            .await
                            .db()?;
                        created.push((index, one));
                    }
                    Err(error) => {
                        sqlx::query("ROLLBACK TO SAVEPOINT connector_create")
                            .execute(&mut *transaction)
                            .await
                            .db()?;
                        sqlx::query("RELEASE SAVEPOINT connector_create")
                            .execute(&mut *transaction)
                            .await
                            .db()?;
                        refused += 1;
                        refused_reason.get_or_insert_with(|| error.to_string());
                    }
                }
            }
            created
        }
    };
    for (index, created) in &created {
        if let (Created::New(_), Some(Some(vendor_id))) = (created, page.write_back_ids.get(*index))
        {
            sqlx::query(
                "INSERT INTO connector_writebacks (connector_id, investigation_id, \
                 vendor_alert_id, next_attempt_at, created_at) VALUES ($1, $2, $3, $4, $4)",
            )
            .bind(page.connector_id)
            .bind(created.investigation_id())
            .bind(vendor_id)
            .bind(micros(page.at))
            .execute(&mut *transaction)
            .await
            .db()?;
        }
    }
    let created: Vec<Created> = created.into_iter().map(|(_, created)| created).collect();
    let taken = created
        .iter()
        .filter(|created| matches!(created, Created::New(_)))
        .count();
    let known = created.len() - taken;
    let at = micros(page.at);
    let moved = sqlx::query(
        "UPDATE connectors SET cursor = $1, lease_expires_at = $2, pages = pages + 1, \
         alerts_taken = alerts_taken + $3, alerts_known = alerts_known + $4, \
         alerts_refused = alerts_refused + $5, \
         caught_up_at = CASE WHEN $6 = 1 THEN $7 ELSE caught_up_at END, \
         last_error = COALESCE($8, last_error), \
         last_error_at = CASE WHEN $8 IS NULL THEN last_error_at ELSE $7 END \
         WHERE id = $9 AND lease_token = $10",
    )
    .bind(page.cursor.to_string())
    .bind(micros(page.lease_until))
    .bind(i64::try_from(taken).unwrap_or(i64::MAX))
    .bind(i64::try_from(known).unwrap_or(i64::MAX))
    .bind(refused)
    .bind(i64::from(page.caught_up))
    .bind(at)
    .bind(refused_reason.as_deref())
    .bind(page.connector_id)
    .bind(&page.lease_token)
    .execute(&mut *transaction)
    .await
    .db()?;
    if moved.rows_affected() != 1 {
        // Dropping the transaction rolls the creates back: the lease holder polls them.
        return Ok(PageWrite::LeaseLost);
    }
    if taken > 0 && dialect == Dialect::Postgres {
        notify_workers(&mut transaction).await?;
    }
    transaction.commit().await.db()?;
    Ok(PageWrite::Stored(created))
}

/// The writebacks due by `$1`, oldest first, at most `$2`, whose investigation concluded
/// (only a concluded investigation has a verdict to send). Read from the due writebacks
/// (a partial index) in their order, each looked up for its investigation's state: CROSS
/// JOIN keeps SQLite from starting at the investigations, where it walked every concluded
/// one (with no connector at all) to find their writebacks, a cost that grew with the
/// store and was paid on every poll. What a poll reads now is the due writebacks it passes
/// before `$2` concluded ones: those of investigations still queued (a connector's
/// backlog, which drains), never the store. PostgreSQL plans the join itself.
const DUE_WRITEBACKS: &str = "SELECT w.id, w.connector_id, w.investigation_id, w.vendor_alert_id, w.attempts \
     FROM connector_writebacks w CROSS JOIN investigations i \
     WHERE i.id = w.investigation_id AND w.sent_at IS NULL AND w.next_attempt_at <= $1 \
     AND i.status = 'success' ORDER BY w.next_attempt_at, w.id LIMIT $2";

/// SQLite's plan for the read of due writebacks (`DUE_WRITEBACKS`), one line per step of
/// `EXPLAIN QUERY PLAN`: the backend's tests check that it never walks the investigations.
pub async fn sqlite_due_writebacks_plan(pool: &sqlx::AnyPool) -> StoreResult<Vec<String>> {
    crate::builder::sqlite_plan(pool, |sql| {
        sql.push(DUE_WRITEBACKS);
        Ok(())
    })
    .await
}
