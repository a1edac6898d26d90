//! Retention: investigations that concluded (or stopped) before a cut-off are deleted with
//! everything that belongs only to them — result, notes, insight tags, search document —
//! and an alert goes with its last investigation, with its entity index entries, its
//! revisions and its sightings. A later delivery of the same alert is then a new alert.
//!
//! What stays: investigations still waiting or running (whatever their age), the audit
//! log (its hash chain must stay verifiable, so no entry is ever removed; entries name
//! ids that may no longer exist), response-action runs (their link to a purged
//! investigation is cleared), and a kept investigation coalesced into a purged one (its
//! `ignored_for` is cleared). System events older than the cut-off are deleted too.
//!
//! The list's counts follow by the triggers that keep them on every delete. Each batch is
//! one short write transaction, so a purge of a large backlog never holds the write turn
//! that creates and workers wait for for long.

use sleuth_domain::{Entity, ParsedAlert, Timestamp};
use sleuth_store::{PurgeReport, StoreError, StoreResult};
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, AnyPool, Row};

use crate::builder::SqlBuilder;
use crate::entity_index::{self, RemovedAlert};
use crate::{DbResultExt, Dialect, rows};

/// Investigations deleted per transaction.
const BATCH: i64 = 200;

/// Deletes up to `max_investigations` investigations that ended before `cutoff`, oldest
/// first, and the system events older than it.
pub(crate) async fn purge_before(
    pool: &AnyPool,
    dialect: Dialect,
    cutoff: Timestamp,
    max_investigations: u64,
) -> StoreResult<PurgeReport> {
    let cutoff = rows::micros(cutoff);
    let mut report = PurgeReport::default();
    while report.investigations < max_investigations {
        let room = i64::try_from(max_investigations - report.investigations).unwrap_or(BATCH);
        let mut connection = pool.acquire().await.db()?;
        let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
        let batch = purge_batch(&mut transaction, dialect, cutoff, room.min(BATCH)).await?;
        transaction.commit().await.db()?;
        report.investigations += batch.investigations;
        report.alerts += batch.alerts;
        if batch.investigations < room.min(BATCH).unsigned_abs() {
            break;
        }
    }
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    let events = sqlx::query("DELETE FROM system_events WHERE created_at < $1")
        .bind(cutoff)
        .execute(&mut *transaction)
        .await
        .db()?;
    transaction.commit().await.db()?;
    report.system_events = events.rows_affected();
    Ok(report)
}

async fn purge_batch(
    connection: &mut AnyConnection,
    dialect: Dialect,
    cutoff: i64,
    limit: i64,
) -> StoreResult<PurgeReport> {
    // One walk of `(status, updated_at, id)` per ended status, oldest first.
    let mut doomed: Vec<(i64, i64)> = Vec::new();
    for status in ["success", "error"] {
        let room = limit - doomed.len() as i64;
        if room <= 0 {
            break;
        }
        let found: Vec<(i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT id, alert_id FROM investigations \
             WHERE status = $1 AND updated_at < $2 \
               AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.investigation_id = investigations.id) \
             ORDER BY updated_at, id LIMIT {room}"
        )))
        .bind(status)
        .bind(cutoff)
        .fetch_all(&mut *connection)
        .await
        .db()?;
        doomed.extend(found);
    }
    if doomed.is_empty() {
        return Ok(PurgeReport::default());
    }
    let investigations: Vec<i64> = doomed.iter().map(|(id, _)| *id).collect();
    let mut alerts: Vec<i64> = doomed.iter().map(|(_, alert)| *alert).collect();
    alerts.sort_unstable();
    alerts.dedup();

    for statement in [
        "UPDATE investigations SET ignored_for = NULL WHERE ignored_for IN ",
        "UPDATE trigger_runs SET investigation_id = NULL WHERE investigation_id IN ",
        "UPDATE alert_revisions SET investigation_id = NULL WHERE investigation_id IN ",
        "DELETE FROM investigation_tags WHERE investigation_id IN ",
        "DELETE FROM investigation_notes WHERE investigation_id IN ",
        "DELETE FROM investigation_results WHERE investigation_id IN ",
    ] {
        run_with_ids(connection, statement, &investigations).await?;
    }
    if dialect == Dialect::Sqlite {
        run_with_ids(
            connection,
            "DELETE FROM investigation_search WHERE rowid IN ",
            &investigations,
        )
        .await?;
    }
    run_with_ids(
        connection,
        "DELETE FROM investigations WHERE id IN ",
        &investigations,
    )
    .await?;

    // The alerts left without an investigation go too.
    let mut orphans =
        SqlBuilder::new("SELECT id, identity, tenant_union_id, parsed FROM alerts WHERE id IN ");
    orphans.bind_padded_list(&alerts)?;
    orphans.push(
        " AND NOT EXISTS (SELECT 1 FROM investigations WHERE investigations.alert_id = alerts.id)",
    );
    let orphans: Vec<Orphan> = orphans
        .build()
        .fetch_all(&mut *connection)
        .await
        .db()?
        .iter()
        .map(Orphan::from_row)
        .collect::<StoreResult<_>>()?;
    let mut ids_len = 0;
    if !orphans.is_empty() {
        let ids: Vec<i64> = orphans.iter().map(|orphan| orphan.id).collect();
        // A superseded revision's row is named `<identity>#<revision>`; its sightings and
        // revisions are kept under the plain identity, which goes with the latest row.
        let identities: Vec<String> = orphans
            .iter()
            .filter(|orphan| !orphan.identity.contains('#'))
            .map(|orphan| orphan.identity.clone())
            .collect();
        let indexed: Vec<RemovedAlert> = orphans
            .into_iter()
            .map(|orphan| RemovedAlert {
                alert_id: orphan.id,
                tenant_union_id: orphan.tenant_union_id,
                entities: orphan.entities,
            })
            .collect();
        entity_index::remove(connection, dialect, &indexed).await?;
        // The burst guard's positions (migration source_positions); the alerts are far
        // older than any burst window.
        run_with_ids(
            connection,
            "DELETE FROM alert_source_positions WHERE alert_id IN ",
            &ids,
        )
        .await?;
        if !identities.is_empty() {
            for statement in [
                "DELETE FROM alert_revisions WHERE identity IN ",
                "DELETE FROM alert_sightings WHERE identity IN ",
            ] {
                let mut builder = SqlBuilder::new(statement);
                builder.bind_padded_list(&identities)?;
                builder.build().execute(&mut *connection).await.db()?;
            }
        }
        run_with_ids(connection, "DELETE FROM alerts WHERE id IN ", &ids).await?;
        ids_len = ids.len() as u64;
    }
    Ok(PurgeReport {
        investigations: investigations.len() as u64,
        alerts: ids_len,
        system_events: 0,
    })
}

/// An alert left without an investigation.
struct Orphan {
    id: i64,
    identity: String,
    tenant_union_id: i64,
    /// The entities its index entries were written with.
    entities: Vec<Entity>,
}

impl Orphan {
    fn from_row(row: &AnyRow) -> StoreResult<Orphan> {
        let parsed: String = row.try_get("parsed").db()?;
        let parsed: ParsedAlert = serde_json::from_str(&parsed).map_err(|error| {
            StoreError::internal(format!("a stored alert does not parse: {error}"))
        })?;
        Ok(Orphan {
            id: row.try_get("id").db()?,
            identity: row.try_get("identity").db()?,
            tenant_union_id: row.try_get("tenant_union_id").db()?,
            entities: parsed.entities,
        })
    }
}

async fn run_with_ids(
    connection: &mut AnyConnection,
    statement: &str,
    ids: &[i64],
) -> StoreResult<()> {
    let mut builder = SqlBuilder::new(statement);
    builder.bind_padded_list(ids)?;
    builder.build().execute(&mut *connection).await.db()?;
    Ok(())
}
