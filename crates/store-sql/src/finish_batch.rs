//! Storing a batch of finished jobs (see `queue::FinishWriter`) in a handful of statements
//! whatever its size:
//!
//! 1. release the leases still held, in one DELETE … RETURNING: a job whose lease was lost
//!    (canceled, or taken over after a stall) is dropped, what its worker concluded with it;
//! 2. read the notes written while the investigations ran, for their search documents;
//! 3. then, written without reading anything back (`Statements`: on SQLite one query, one
//!    round trip):
//!    - the outcomes, in one UPDATE for the concluded ones (with, on PostgreSQL, their
//!      search vectors and results) and one for the stopped ones, each from a table of
//!      values, and (SQLite) the results of the concluded ones in one INSERT;
//!    - the strategy counters, summed over the batch; the insight tags, in one INSERT;
//!    - (SQLite) the full-text rows of the concluded ones, in one INSERT OR REPLACE;
//!    - the system events of the stored ones, in one INSERT.
//!
//! The claims of the workers' next jobs are written after them, in the same round trip
//! (`queue::write_claim`).
//!
//! Why: the finish writer is the one serial step every investigation passes through, and
//! every statement costs a round trip to the database (for SQLite, two thread wake-ups).
//! Nine statements per investigation held the workers to a few hundred a second; nine
//! statements per batch, each waiting its turn for a core, still made the batch's
//! transaction 7 ms long.

use std::collections::{BTreeMap, HashMap, HashSet};

use sleuth_domain::{Canceled, InvestigationResult, ParsedAlert, Timestamp};
use sleuth_store::{Finish, NewSystemEvent, StoreError, StoreResult};
use sqlx::AnyConnection;

use crate::builder::{SqlBuilder, Statements, padded_length};
use crate::queue::{FinishRequest, priority_rank};
use crate::rows::{self, micros};
use crate::{DbResultExt, Dialect, search};

/// Stores the batch on an open transaction: releases the leases and reads what the
/// writes need, then adds the writes to `writes`, which the caller runs (after adding the
/// claims of the next jobs). Returns, per request in order, whether it is stored (false:
/// its lease was lost). Any error leaves the transaction to be rolled back.
pub async fn write(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    batch: &[FinishRequest],
    writes: &mut Statements,
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
    // Everything else is written without reading anything back.
    store_results(writes, dialect, &kept, &search_texts)?;
    store_stops(writes, dialect, &kept)?;
    crate::strategies::count_effects(
        writes,
        concluded.iter().map(|(_, result)| &result.strategy_effects),
    )?;
    insert_tags(writes, dialect, &concluded)?;
    if dialect == Dialect::Sqlite {
        replace_search_rows(writes, dialect, &search_texts)?;
    }
    // Those of a lost lease are dropped with its result.
    let events: Vec<(&NewSystemEvent, Timestamp)> = kept
        .iter()
        .flat_map(|request| {
            let end = &request.end;
            end.system_events.iter().map(|event| (event, end.at))
        })
        .collect();
    crate::system_events::insert_in(writes, dialect, &events)?;
    Ok(stored)
}

/// Deletes the jobs whose lease the request still holds; returns (investigation, token)
/// of each one deleted.
async fn release_leases(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    batch: &[FinishRequest],
) -> StoreResult<HashSet<(i64, String)>> {
    // Padded to a power of two by repeating the last request (the same condition again),
    // so that a few statement texts cover every batch size and each stays prepared.
    let mut sql = SqlBuilder::many(dialect, "DELETE FROM jobs WHERE ");
    let last = batch
        .last()
        .ok_or_else(|| StoreError::internal("an empty batch of finished jobs"))?;
    let padding = std::iter::repeat_n(last, padded_length(batch.len()) - batch.len());
    for (position, request) in batch.iter().chain(padding).enumerate() {
        sql.push(if position == 0 { "(" } else { " OR (" });
        sql.push("investigation_id = ")
            .bind(request.job.investigation_id)?;
        sql.push(" AND lease_token = ")
            .bind(request.job.lease_token.clone())?;
        sql.push(")");
    }
    sql.push(" RETURNING investigation_id, lease_token");
    let released = sql
        .build()
        .persistent(true)
        .fetch_all(&mut *transaction)
        .await
        .db()?;
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
    sql.bind_padded_list(&ids().collect::<Vec<i64>>())?;
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

/// The concluded investigations' results, in one UPDATE from a table of values (on
/// PostgreSQL with their search vectors, from `search_documents`). One statement rather
/// than one per investigation: each is a round trip inside the write turn that every
/// worker's next result waits for, and they were half of it.
fn store_results(
    writes: &mut Statements,
    dialect: Dialect,
    kept: &[&FinishRequest],
    search_documents: &BTreeMap<i64, String>,
) -> StoreResult<()> {
    let concluded: Vec<(i64, &InvestigationResult, Option<i64>, Timestamp)> = kept
        .iter()
        .filter_map(|request| match &request.end.finish {
            Finish::Completed {
                result,
                ignored_for,
            } => Some((
                request.job.investigation_id,
                &**result,
                *ignored_for,
                request.end.at,
            )),
            Finish::Stopped { .. } => None,
        })
        .collect();
    if concluded.is_empty() {
        return Ok(());
    }
    // The results themselves live apart from the rows every list and history reads
    // (migration 0010). PostgreSQL stores them from the same table of values, in the same
    // statement (a data-modifying WITH); SQLite has none, and takes one INSERT more.
    let (width, extra_columns, store_results, search_vector) = match dialect {
        Dialect::Sqlite => (6, "", "", ""),
        Dialect::Postgres => (
            8,
            ", result, document",
            ", stored_results AS (INSERT INTO investigation_results (investigation_id, result) \
             SELECT id, result FROM concluded ON CONFLICT (investigation_id) \
             DO UPDATE SET result = excluded.result)",
            ", search_vector = to_tsvector('simple', concluded.document)",
        ),
    };
    let sql = writes.next(&format!(
        "WITH concluded (id, outcome, priority, priority_rank, ignored_for, at\
         {extra_columns}) AS ("
    ));
    sql.value_rows(dialect, width, concluded.len(), |sql, index| {
        let (investigation_id, result, ignored_for, at) = concluded[index];
        sql.bind(investigation_id)?.push(", ");
        sql.bind(result.outcome.as_str().to_string())?.push(", ");
        sql.bind(result.priority.as_str().to_string())?.push(", ");
        sql.bind(priority_rank(Some(result.priority)))?.push(", ");
        sql.bind(ignored_for)?.push(", ");
        sql.bind(micros(at))?;
        if dialect == Dialect::Postgres {
            sql.push(", ").bind(rows::to_json(result)?)?;
            let document = search_documents.get(&investigation_id).cloned();
            sql.push(", ").bind(document.unwrap_or_default())?;
        }
        Ok(())
    })?;
    sql.push(&format!(
        "){store_results} UPDATE investigations SET status = 'success', \
         outcome = concluded.outcome, priority = concluded.priority, \
         priority_rank = concluded.priority_rank, ignored_for = concluded.ignored_for, \
         generated_time = concluded.at, updated_at = concluded.at, error_msg = NULL, \
         feedback_created_at = concluded.at, feedback_updated_at = concluded.at\
         {search_vector} FROM concluded WHERE investigations.id = concluded.id"
    ));
    if dialect == Dialect::Postgres {
        return Ok(());
    }

    let sql = writes.next("INSERT INTO investigation_results (investigation_id, result)");
    sql.value_rows(dialect, 2, concluded.len(), |sql, index| {
        let (investigation_id, result, _, _) = concluded[index];
        sql.bind(investigation_id)?.push(", ");
        sql.bind(rows::to_json(result)?)?;
        Ok(())
    })?;
    sql.push(" ON CONFLICT (investigation_id) DO UPDATE SET result = excluded.result");
    Ok(())
}

/// The stopped investigations (error, with why), in one UPDATE from a table of values.
fn store_stops(
    writes: &mut Statements,
    dialect: Dialect,
    kept: &[&FinishRequest],
) -> StoreResult<()> {
    let stopped: Vec<(i64, Option<Canceled>, &String, Timestamp)> = kept
        .iter()
        .filter_map(|request| match &request.end.finish {
            Finish::Stopped {
                canceled,
                error_msg,
            } => Some((
                request.job.investigation_id,
                *canceled,
                error_msg,
                request.end.at,
            )),
            Finish::Completed { .. } => None,
        })
        .collect();
    if stopped.is_empty() {
        return Ok(());
    }
    let sql = writes.next("WITH stopped (id, canceled, error_msg, at) AS (");
    sql.value_rows(dialect, 4, stopped.len(), |sql, index| {
        let (investigation_id, canceled, error_msg, at) = stopped[index];
        sql.bind(investigation_id)?.push(", ");
        sql.bind(canceled.map(|canceled| canceled.as_str().to_string()))?
            .push(", ");
        sql.bind(error_msg.clone())?.push(", ");
        sql.bind(micros(at))?;
        Ok(())
    })?;
    sql.push(
        ") UPDATE investigations SET status = 'error', canceled = stopped.canceled, \
         error_msg = stopped.error_msg, updated_at = stopped.at \
         FROM stopped WHERE investigations.id = stopped.id",
    );
    Ok(())
}

/// The insight tags of the concluded investigations, for the list's tag filter.
fn insert_tags(
    writes: &mut Statements,
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
    // Each tag carries copies of its investigation's state and alert time (migration
    // 0011), read here from the row the outcome was just stored in. SQLite's trigger would
    // otherwise write every tag a second time to add them; PostgreSQL's sets them anyway.
    let sql = writes.next(
        "INSERT INTO investigation_tags (name, investigation_id, status, alert_create_time) \
         SELECT tag.column1, tag.column2, i.status, i.alert_create_time FROM (",
    );
    sql.value_rows(dialect, 2, tags.len(), |sql, index| {
        let (investigation_id, name) = tags[index];
        sql.bind(name.clone())?.push(", ");
        sql.bind(investigation_id)?;
        Ok(())
    })?;
    // The WHERE keeps SQLite from reading ON CONFLICT as part of the join.
    sql.push(
        ") AS tag JOIN investigations i ON i.id = tag.column2 WHERE true ON CONFLICT DO NOTHING",
    );
    Ok(())
}

/// Replaces the full-text rows (SQLite's FTS5 table) of the concluded investigations, in
/// one statement: FTS5 writes its pending terms out as a new segment at every statement
/// savepoint, so a DELETE followed by an INSERT wrote two segments per batch (and merged
/// them later) where one suffices.
fn replace_search_rows(
    writes: &mut Statements,
    dialect: Dialect,
    documents: &BTreeMap<i64, String>,
) -> StoreResult<()> {
    if documents.is_empty() {
        return Ok(());
    }
    let sql = writes.next("INSERT OR REPLACE INTO investigation_search (rowid, body)");
    let documents: Vec<(&i64, &String)> = documents.iter().collect();
    sql.value_rows(dialect, 2, documents.len(), |sql, index| {
        let (investigation_id, document) = documents[index];
        sql.bind(*investigation_id)?.push(", ");
        sql.bind(document.clone())?;
        Ok(())
    })?;
    Ok(())
}
