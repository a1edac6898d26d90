//! Creating investigations with group commit: concurrent creates are queued to one writer
//! task, which stores as many as are waiting in one transaction and answers each only
//! after the commit. One commit per batch rather than per request is what lets a single
//! SQLite file take thousands of alerts a second; every answered alert is durable.

use std::sync::Arc;

use async_trait::async_trait;
use sleuth_domain::InvestigationStatus;
use sleuth_store::{Created, StoreError, StoreResult};
use sqlx::AnyConnection;
use tokio::sync::Notify;

use crate::create_request::{CreateRequest, audited};
use crate::group_commit::{BatchWrite, all_failed};
use crate::revisions::{self, Decision};
use crate::rows::micros;
use crate::writer_connection::WriterConnections;
use crate::{DbResultExt, Dialect};

/// The group-commit writer of creates.
pub(crate) struct CreateWriter {
    pub(crate) connections: WriterConnections,
    pub(crate) dialect: Dialect,
    /// Woken after a batch that stored new investigations (their jobs are ready).
    pub(crate) job_wakeups: Arc<Notify>,
}

#[async_trait]
impl BatchWrite for CreateWriter {
    type Request = CreateRequest;
    type Output = Created;

    async fn write(&self, batch: &[CreateRequest]) -> Vec<StoreResult<Created>> {
        let results = write_batch(&self.connections, self.dialect, batch).await;
        if results
            .iter()
            .any(|result| matches!(result, Ok(Created::New(_))))
        {
            self.job_wakeups.notify_waiters();
        }
        results
    }
}

/// Writes a batch in one transaction, each create under its own savepoint so that one
/// refused alert does not undo the others. Returns one result per request, in order.
async fn write_batch(
    connections: &WriterConnections,
    dialect: Dialect,
    batch: &[CreateRequest],
) -> Vec<StoreResult<Created>> {
    let set_based = connections
        .write(async |connection| write_batch_set_based(connection, dialect, batch).await)
        .await;
    match set_based {
        Ok(Some(results)) => return results.into_iter().map(Ok).collect(),
        Ok(None) => {
            // A revision of a known alert: decided one create at a time below.
        }
        Err(error) => {
            // Replayed one create at a time below, where each gets its own answer.
            tracing::debug!(%error, size = batch.len(), "set-based create batch failed; replaying one by one");
        }
    }
    let one_by_one = connections
        .write(async |connection| try_write_batch(connection, dialect, batch).await)
        .await;
    match one_by_one {
        Ok(results) => results,
        Err(error) => all_failed("create batch", batch.len(), &error),
    }
}

/// The fast path (`create_batch`): the whole batch in a few statements, one transaction.
/// `None`, with nothing written, when the batch holds a revision of a known alert.
async fn write_batch_set_based(
    connection: &mut AnyConnection,
    dialect: Dialect,
    batch: &[CreateRequest],
) -> StoreResult<Option<Vec<Created>>> {
    let (_write_turn, mut transaction) = crate::begin_write(connection, dialect).await?;
    let Some(created) = crate::create_batch::write(&mut transaction, dialect, batch).await? else {
        return Ok(None);
    };
    if dialect == Dialect::Postgres
        && created
            .iter()
            .any(|created| matches!(created, Created::New(_)))
    {
        notify_workers(&mut transaction).await?;
    }
    transaction.commit().await.db()?;
    Ok(Some(created))
}

/// The slow path: each create under its own savepoint, so that one refused alert does not
/// undo the others.
async fn try_write_batch(
    connection: &mut AnyConnection,
    dialect: Dialect,
    batch: &[CreateRequest],
) -> StoreResult<Vec<StoreResult<Created>>> {
    let (_write_turn, mut transaction) = crate::begin_write(connection, dialect).await?;
    if batch.len() > 1 {
        // Outside the savepoints, whose rollback would let go of the counters.
        let storing = batch.iter().map(|request| &request.alert);
        crate::source_counters::take_in_key_order(&mut transaction, dialect, storing).await?;
    }
    let mut results = Vec::with_capacity(batch.len());
    let mut any_new = false;
    for request in batch {
        sqlx::query("SAVEPOINT create_one")
            .execute(&mut *transaction)
            .await
            .db()?;
        match create_one(&mut transaction, dialect, request).await {
            Ok(created) => {
                sqlx::query("RELEASE SAVEPOINT create_one")
                    .execute(&mut *transaction)
                    .await
                    .db()?;
                any_new |= matches!(created, Created::New(_));
                results.push(Ok(created));
            }
            Err(error) => {
                sqlx::query("ROLLBACK TO SAVEPOINT create_one")
                    .execute(&mut *transaction)
                    .await
                    .db()?;
                sqlx::query("RELEASE SAVEPOINT create_one")
                    .execute(&mut *transaction)
                    .await
                    .db()?;
                results.push(Err(error));
            }
        }
    }
    let audited = audited(batch, results.iter().map(|result| result.as_ref().ok()));
    crate::audit::append_in(&mut transaction, dialect, &audited).await?;
    if any_new && dialect == Dialect::Postgres {
        notify_workers(&mut transaction).await?;
    }
    transaction.commit().await.db()?;
    Ok(results)
}

/// Wakes other processes' workers (PostgreSQL); delivered only if the commit succeeds.
pub(crate) async fn notify_workers(transaction: &mut AnyConnection) -> StoreResult<()> {
    sqlx::query("SELECT pg_notify('sleuth_jobs', '')")
        .execute(&mut *transaction)
        .await
        .db()?;
    Ok(())
}

pub(crate) async fn create_one(
    connection: &mut AnyConnection,
    dialect: Dialect,
    request: &CreateRequest,
) -> StoreResult<Created> {
    let alert = &request.alert;
    let Some(known) = revisions::find(connection, &alert.identity).await? else {
        let alert_id = insert_alert(connection, dialect, request, 1).await?;
        let investigation_id = insert_investigation(connection, dialect, alert_id, request).await?;
        return Ok(Created::New(investigation_id));
    };
    let alert_id = match revisions::meet(connection, request, &known).await? {
        Decision::AnswerExisting => {
            if let Some(investigation_id) =
                latest_investigation_of(connection, known.alert_id).await?
            {
                return Ok(Created::Existing(investigation_id));
            }
            known.alert_id
        }
        Decision::InvestigateStored => known.alert_id,
        Decision::InvestigateRevision { revision } => {
            revisions::supersede(connection, &known).await?;
            let alert_id = insert_alert(connection, dialect, request, revision).await?;
            let investigation_id =
                insert_investigation(connection, dialect, alert_id, request).await?;
            revisions::mark_investigated(connection, &alert.identity, revision, investigation_id)
                .await?;
            return Ok(Created::New(investigation_id));
        }
    };
    let investigation_id = insert_investigation(connection, dialect, alert_id, request).await?;
    Ok(Created::New(investigation_id))
}

async fn latest_investigation_of(
    connection: &mut AnyConnection,
    alert_id: i64,
) -> StoreResult<Option<i64>> {
    sqlx::query_scalar("SELECT MAX(id) FROM investigations WHERE alert_id = $1")
        .bind(alert_id)
        .fetch_one(&mut *connection)
        .await
        .db()
}

/// Stores the request's alert as `revision` of its identity.
async fn insert_alert(
    connection: &mut AnyConnection,
    dialect: Dialect,
    request: &CreateRequest,
    revision: i64,
) -> StoreResult<i64> {
    let alert = &request.alert;
    let now = micros(alert.received_at);
    let parsed = &alert.parsed;
    let alert_id: i64 = sqlx::query_scalar(
        "INSERT INTO alerts (identity, tenant_union_id, tenant_integration_key, parsed, \
         raw_alert_content, direct_source_label, coalesce_key, created_at, updated_at, \
         content_hash, revision) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, $10) RETURNING id",
    )
    .bind(&alert.identity)
    .bind(alert.tenant_union_id)
    .bind(alert.tenant_integration_key.as_deref())
    .bind(&request.parsed_json)
    .bind(&alert.raw_alert_content)
    .bind(&parsed.direct_source_label)
    .bind(parsed.coalesce_key.as_deref())
    .bind(now)
    .bind(&alert.content_hash)
    .bind(revision)
    .fetch_one(&mut *connection)
    .await
    .map_err(|error| match crate::store_error(error) {
        StoreError::Conflict { .. } => StoreError::Conflict {
            detail: "the alert was stored concurrently; retry to get its investigation".into(),
        },
        other => other,
    })?;
    let mut entities = crate::builder::Statements::new(dialect);
    let indexed = crate::entity_index::IndexedAlert {
        alert_id,
        tenant_union_id: alert.tenant_union_id,
        entities: &parsed.entities,
    };
    crate::entity_index::write(&mut entities, dialect, &[indexed])?;
    entities.run(connection).await?;
    Ok(alert_id)
}

async fn insert_investigation(
    connection: &mut AnyConnection,
    dialect: Dialect,
    alert_id: i64,
    request: &CreateRequest,
) -> StoreResult<i64> {
    let alert = &request.alert;
    let now = micros(alert.received_at);
    let parsed = &alert.parsed;
    let investigation_id: i64 = sqlx::query_scalar(
        "INSERT INTO investigations (alert_id, status, created_at, updated_at, \
         alert_create_time, alert_start_time, alert_type, alert_title, direct_source_label, \
         tenant_union_id, tenant_id, tenant_label, tenant_integration_key, feedback_created_at, \
         feedback_updated_at) \
         VALUES ($1, $2, $3, $3, $4, $5, $6, $12, $7, $8, $9, $10, $11, $3, $3) RETURNING id",
    )
    .bind(alert_id)
    .bind(InvestigationStatus::NotAsked.as_str())
    .bind(now)
    .bind(micros(parsed.create_time))
    .bind(parsed.start_time.map(micros))
    .bind(&parsed.alert_type)
    .bind(&parsed.direct_source_label)
    .bind(alert.tenant_union_id)
    .bind(parsed.tenant_id.as_deref())
    .bind(parsed.tenant_label.as_deref())
    .bind(alert.tenant_integration_key.as_deref())
    .bind(&parsed.title)
    .fetch_one(&mut *connection)
    .await
    .db()?;
    sqlx::query("INSERT INTO jobs (investigation_id, ready_at, attempts) VALUES ($1, $2, 0)")
        .bind(investigation_id)
        .bind(now)
        .execute(&mut *connection)
        .await
        .db()?;
    crate::search::index_document(
        connection,
        dialect,
        investigation_id,
        request.search_document.clone(),
    )
    .await?;
    Ok(investigation_id)
}
