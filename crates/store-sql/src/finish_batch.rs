//! Storing a batch of finished jobs (see `queue::FinishWriter`) in a handful of statements
//! whatever its size, except one UPDATE per investigation (each result differs):
//!
//! 1. release the leases still held, in one DELETE … RETURNING: a job whose lease was lost
//!    (canceled, or taken over after a stall) is dropped, what its worker concluded with it;
//! 2. per investigation, its outcome (and on PostgreSQL its search vector);
//! 3. the strategy counters, summed over the batch; the insight tags, in one INSERT;
//! 4. (SQLite) the full-text rows of the concluded ones, in one DELETE and one INSERT;
//! 5. the system events of the stored ones, in one INSERT.
//!
//! The claims of the workers' next jobs follow in the same transaction (`queue`).
//!
//! Why: the finish writer is the one serial step every investigation passes through, and
//! every statement costs a round trip to the database (for SQLite, two thread wake-ups).
//! Nine statements per investigation held the workers to a few hundred a second.

use std::collections::{BTreeMap, HashMap, HashSet};

use sleuth_domain::{Canceled, InvestigationResult, ParsedAlert, Timestamp};
use sleuth_store::{Finish, NewSystemEvent, StoreError, StoreResult};
use sqlx::AnyConnection;

use crate::builder::SqlBuilder;
use crate::queue::{FinishRequest, priority_rank};
use crate::rows::{self, micros};
use crate::{DbResultExt, Dialect, search};

/// Stores the batch on an open transaction. Returns, per request in order, whether it was
/// stored (false: its lease was lost). Any error leaves the transaction to be rolled back.
pub async fn write(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    batch: &[FinishRequest],
) -> StoreResult<Vec<bool>> {
    let released = release_leases(transaction, dialect, batch).await?;
    let stored: Vec<bool> = batch
        .iter()
        .map(|request| {
            released.contains(&(
                request.job.investigation_id,
                request.job.lease_token.clone(),
            ))
        })
        .collect();
    let kept: Vec<&FinishRequest> = batch
        .iter()
        .zip(&stored)
        .filter_map(|(request, stored)| stored.then_some(request))
        .collect();
    let concluded: Vec<(i64, &InvestigationResult)> = kept
        .iter()
        .filter_map(|request| match &request.end.finish {
            Finish::Completed { result, .. } => Some((request.job.investigation_id, &**result)),
            Finish::Stopped { .. } => None,
        })
        .collect();
    let given_alerts: HashMap<i64, &ParsedAlert> = kept
        .iter()
        .filter_map(|request| Some((request.job.investigation_id, &**request.end.alert.as_ref()?)))
        .collect();
    let search_texts = search_texts(transaction, dialect, &concluded, &given_alerts).await?;
    for request in &kept {
        let search_text = search_texts.get(&request.job.investigation_id);
        store_outcome(transaction, dialect, request, search_text).await?;
    }
    crate::strategies::count_effects(
        transaction,
        concluded.iter().map(|(_, result)| &result.strategy_effects),
    )
    .await?;
    insert_tags(transaction, dialect, &concluded).await?;
    if dialect == Dialect::Sqlite {
        replace_search_rows(transaction, dialect, &search_texts).await?;
    }
    // Those of a lost lease are dropped with its result.
    let events: Vec<(&NewSystemEvent, Timestamp)> = kept
        .iter()
        .flat_map(|request| {
            let end = &request.end;
            end.system_events.iter().map(|event| (event, end.at))
        })
        .collect();
    crate::system_events::insert_in(transaction, dialect, &events).await?;
    Ok(stored)
}

/// Deletes the jobs whose lease the request still holds; returns (investigation, token)
/// of each one deleted.
async fn release_leases(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    batch: &[FinishRequest],
) -> StoreResult<HashSet<(i64, String)>> {
    let mut sql = SqlBuilder::many(dialect, "DELETE FROM jobs WHERE ");
    for (position, request) in batch.iter().enumerate() {
        sql.push(if position == 0 { "(" } else { " OR (" });
        sql.push("investigation_id = ")
            .bind(request.job.investigation_id)?;
        sql.push(" AND lease_token = ")
            .bind(request.job.lease_token.clone())?;
        sql.push(")");
    }
    sql.push(" RETURNING investigation_id, lease_token");
    let released = sql.build().fetch_all(&mut *transaction).await.db()?;
    released
        .iter()
        .map(|row| {
            Ok((
                rows::int(row, "investigation_id")?,
                rows::text(row, "lease_token")?,
            ))
        })
        .collect()
}

/// The search document of each concluded investigation: its alert's words, the
/// conclusion's, and those of notes written while it ran. The alerts its worker passed
/// along (`given`) are not read back.
async fn search_texts(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    concluded: &[(i64, &InvestigationResult)],
    given: &HashMap<i64, &ParsedAlert>,
) -> StoreResult<BTreeMap<i64, String>> {
    if concluded.is_empty() {
        return Ok(BTreeMap::new());
    }
    let ids = || {
        concluded
            .iter()
            .map(|(investigation_id, _)| *investigation_id)
    };
    let missing: Vec<i64> = ids().filter(|id| !given.contains_key(id)).collect();
    let mut read: HashMap<i64, ParsedAlert> = HashMap::new();
    if !missing.is_empty() {
        let mut sql = SqlBuilder::many(
            dialect,
            "SELECT i.id, a.parsed FROM investigations i JOIN alerts a ON a.id = i.alert_id \
             WHERE i.id IN ",
        );
        sql.bind_list(missing)?;
        for row in sql.build().fetch_all(&mut *transaction).await.db()? {
            read.insert(rows::int(&row, "id")?, rows::json(&row, "parsed")?);
        }
    }
    let mut sql = SqlBuilder::many(
        dialect,
        "SELECT investigation_id, text FROM investigation_notes WHERE investigation_id IN ",
    );
    sql.bind_list(ids())?;
    sql.push(" ORDER BY id");
    let mut notes_by_id: HashMap<i64, String> = HashMap::new();
    for row in sql.build().fetch_all(&mut *transaction).await.db()? {
        let notes = notes_by_id
            .entry(rows::int(&row, "investigation_id")?)
            .or_default();
        notes.push(' ');
        notes.push_str(&rows::text(&row, "text")?);
    }
    concluded
        .iter()
        .map(|(investigation_id, result)| {
            let parsed = given
                .get(investigation_id)
                .copied()
                .or_else(|| read.get(investigation_id))
                .ok_or_else(|| {
                    StoreError::internal(format!(
                        "investigation {investigation_id} has no alert to index"
                    ))
                })?;
            let mut text = search::result_text(parsed, result);
            if let Some(notes) = notes_by_id.get(investigation_id) {
                text.push_str(notes);
            }
            Ok((*investigation_id, search::document(&text)))
        })
        .collect()
}

/// The investigation's new state: its result (`search_document` on PostgreSQL, where the
/// search vector is a column), or why it stopped.
async fn store_outcome(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    request: &FinishRequest,
    search_document: Option<&String>,
) -> StoreResult<()> {
    let investigation_id = request.job.investigation_id;
    let at = micros(request.end.at);
    match &request.end.finish {
        Finish::Completed {
            result,
            ignored_for,
        } => {
            let search_vector = match dialect {
                Dialect::Postgres => ", search_vector = to_tsvector('simple', $8)",
                Dialect::Sqlite => "",
            };
            let sql = format!(
                "UPDATE investigations SET status = 'success', outcome = $2, priority = $3, \
                 priority_rank = $4, result = $5, ignored_for = $6, generated_time = $7, \
                 updated_at = $7, error_msg = NULL, feedback_created_at = $7, \
                 feedback_updated_at = $7{search_vector} WHERE id = $1"
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(investigation_id)
                .bind(result.outcome.as_str())
                .bind(result.priority.as_str())
                .bind(priority_rank(Some(result.priority)))
                .bind(rows::to_json(result)?)
                .bind(*ignored_for)
                .bind(at);
            if dialect == Dialect::Postgres {
                query = query.bind(search_document.cloned().unwrap_or_default());
            }
            query.execute(&mut *transaction).await.db()?;
        }
        Finish::Stopped {
            canceled,
            error_msg,
        } => {
            sqlx::query(
                "UPDATE investigations SET status = 'error', canceled = $2, error_msg = $3, \
                 updated_at = $4 WHERE id = $1",
            )
            .bind(investigation_id)
            .bind(canceled.map(Canceled::as_str))
            .bind(error_msg.clone())
            .bind(at)
            .execute(&mut *transaction)
            .await
            .db()?;
        }
    }
    Ok(())
}

/// The insight tags of the concluded investigations, for the list's tag filter.
async fn insert_tags(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    concluded: &[(i64, &InvestigationResult)],
) -> StoreResult<()> {
    let tags: Vec<(i64, &String)> = concluded
        .iter()
        .flat_map(|(investigation_id, result)| {
            result
                .insight_tags
                .keys()
                .map(move |name| (*investigation_id, name))
        })
        .collect();
    if tags.is_empty() {
        return Ok(());
    }
    let mut sql = SqlBuilder::many(
        dialect,
        "INSERT INTO investigation_tags (name, investigation_id) VALUES ",
    );
    for (position, (investigation_id, name)) in tags.iter().enumerate() {
        sql.push(if position == 0 { "(" } else { ", (" });
        sql.bind((*name).clone())?.push(", ");
        sql.bind(*investigation_id)?.push(")");
    }
    sql.push(" ON CONFLICT DO NOTHING");
    sql.build().execute(&mut *transaction).await.db()?;
    Ok(())
}

/// Replaces the full-text rows (SQLite's FTS5 table) of the concluded investigations, in
/// one statement: FTS5 writes its pending terms out as a new segment at every statement
/// savepoint, so a DELETE followed by an INSERT wrote two segments per batch (and merged
/// them later) where one suffices.
async fn replace_search_rows(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    documents: &BTreeMap<i64, String>,
) -> StoreResult<()> {
    if documents.is_empty() {
        return Ok(());
    }
    let mut sql = SqlBuilder::many(
        dialect,
        "INSERT OR REPLACE INTO investigation_search (rowid, body) VALUES ",
    );
    for (position, (investigation_id, document)) in documents.iter().enumerate() {
        sql.push(if position == 0 { "(" } else { ", (" });
        sql.bind(*investigation_id)?.push(", ");
        sql.bind(document.clone())?.push(")");
    }
    sql.build().execute(&mut *transaction).await.db()?;
    Ok(())
}
