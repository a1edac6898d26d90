//! Storing a batch of finished jobs (see `queue::FinishWriter`) in a handful of statements
//! whatever its size:
//!
//! 1. release the leases still held, in one DELETE … RETURNING: a job whose lease was lost
//!    (canceled, or taken over after a stall) is dropped, what its worker concluded with it;
//! 2. with it (on SQLite in the same round trip), read the notes written while the
//!    investigations ran, for their search documents;
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
//! transaction long.

use std::collections::{BTreeMap, HashMap, HashSet};

use sleuth_domain::{Canceled, InvestigationResult, ParsedAlert, Timestamp};
use sleuth_store::{ClaimedJob, Finish, JobEnd, NewSystemEvent, StoreError, StoreResult};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use crate::builder::{Statements, padded_length};
use crate::rows::{self, micros, priority_rank};
use crate::{Dialect, search};

/// A finished job on its way to the store (`queue::FinishWriter`).
pub(crate) struct FinishRequest {
    pub(crate) job: ClaimedJob,
    pub(crate) end: JobEnd,
}

/// Stores the batch on an open transaction: releases the leases and reads what the
/// writes need (one round trip on SQLite), then adds the writes to `writes`, which the
/// caller runs (after adding the claims of the next jobs and, last of all,
/// `count_strategy_effects`). Returns, per request in order,
/// whether it is stored (false: its lease was lost). Any error leaves the transaction to
/// be rolled back.
pub(crate) async fn write(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    batch: &[FinishRequest],
    writes: &mut Statements,
) -> StoreResult<Vec<bool>> {
    // What the search documents need is read for every concluded one, before knowing
    // which leases are still held: a lost lease is rare, and reading its notes for nothing
    // costs less than a round trip of its own.
    let completed: Vec<&FinishRequest> = batch
        .iter()
        .filter(|request| matches!(request.end.finish, Finish::Completed { .. }))
        .collect();
    let mut reads = Statements::new(dialect);
    release_leases(&mut reads, batch)?;
    read_search_inputs(&mut reads, &completed)?;
    let read = reads.run(&mut *transaction).await?;
    let released = released_leases(&read)?;
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
    let search_texts = search_texts(&read, &concluded, &kept)?;
    // Everything else is written without reading anything back.
    store_results(writes, dialect, &kept, &search_texts)?;
    store_stops(writes, dialect, &kept)?;
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

/// Adds the counting of what the strategies did for the results of `batch` that are
/// `stored` (`strategies::count_effects`). The caller adds it last, just before the
/// commit: each counter is one row updated in place, locked until the commit, and every
/// process's finishes count the same few rules, so the shorter the lock is held the less
/// the processes' finish transactions wait for each other.
pub(crate) fn count_strategy_effects(
    writes: &mut Statements,
    batch: &[FinishRequest],
    stored: &[bool],
) -> StoreResult<()> {
    let effects = batch
        .iter()
        .zip(stored)
        .filter(|(_, stored)| **stored)
        .filter_map(|(request, _)| match &request.end.finish {
            Finish::Completed { result, .. } => Some(&result.strategy_effects),
            Finish::Stopped { .. } => None,
        });
    crate::strategies::count_effects(writes, effects)
}

/// Adds the delete of the jobs whose lease the request still holds, which returns
/// (investigation, token) of each one deleted (`released_leases` reads them).
fn release_leases(reads: &mut Statements, batch: &[FinishRequest]) -> StoreResult<()> {
    // Padded to a power of two by repeating the last request (the same condition again),
    // so that a few statement texts cover every batch size and each stays prepared.
    let sql = reads.next("DELETE FROM jobs WHERE ");
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
    sql.push(" RETURNING investigation_id AS released_id, lease_token AS released_token")
        .fixed_text();
    Ok(())
}

/// (investigation, token) of each job deleted, among the rows of a run of
/// `release_leases` with other reads.
fn released_leases(rows: &[AnyRow]) -> StoreResult<HashSet<(i64, String)>> {
    rows.iter()
        .filter(|row| rows::has_column(row, "released_id"))
        .map(|row| {
            Ok((
                rows::int(row, "released_id")?,
                rows::text(row, "released_token")?,
            ))
        })
        .collect()
}

/// Adds the reads of what the search documents of these concluded investigations need
/// besides their results: the notes written while they ran and, for any whose worker did
/// not pass its alert along, the alert (`search_texts` reads the rows).
fn read_search_inputs(reads: &mut Statements, completed: &[&FinishRequest]) -> StoreResult<()> {
    if completed.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = completed
        .iter()
        .map(|request| request.job.investigation_id)
        .collect();
    read_notes(reads, &ids)?;
    let missing: Vec<i64> = completed
        .iter()
        .filter(|request| request.end.alert.is_none())
        .map(|request| request.job.investigation_id)
        .collect();
    if !missing.is_empty() {
        reads
            .next(
                "SELECT i.id AS parsed_alert_of, a.parsed AS parsed_alert FROM investigations i \
                 JOIN alerts a ON a.id = i.alert_id WHERE i.id IN ",
            )
            .bind_list(missing)?;
    }
    Ok(())
}

/// Adds the read of the notes of `ids`, oldest first, as rows (`noted_id`, `note_text`)
/// that `add_note` takes.
pub(crate) fn read_notes(reads: &mut Statements, ids: &[i64]) -> StoreResult<()> {
    reads
        .next(
            "SELECT investigation_id AS noted_id, text AS note_text FROM investigation_notes \
             WHERE investigation_id IN ",
        )
        .bind_padded_list(ids)?
        .push(" ORDER BY id");
    Ok(())
}

/// Adds the words of a note row of `read_notes` to its investigation's in `notes_by_id`;
/// false for a row of another read.
pub(crate) fn add_note(row: &AnyRow, notes_by_id: &mut HashMap<i64, String>) -> StoreResult<bool> {
    if !rows::has_column(row, "note_text") {
        return Ok(false);
    }
    let notes = notes_by_id.entry(rows::int(row, "noted_id")?).or_default();
    notes.push(' ');
    notes.push_str(&rows::text(row, "note_text")?);
    Ok(true)
}

/// The search document of each concluded investigation: its alert's words, the
/// conclusion's, and those of notes written while it ran, from the rows of
/// `read_search_inputs`. The alerts their workers passed along are not read back.
fn search_texts(
    rows: &[AnyRow],
    concluded: &[(i64, &InvestigationResult)],
    kept: &[&FinishRequest],
) -> StoreResult<BTreeMap<i64, String>> {
    let mut parsed_alerts: HashMap<i64, ParsedAlert> = HashMap::new();
    let mut notes_by_id: HashMap<i64, String> = HashMap::new();
    for row in rows {
        if add_note(row, &mut notes_by_id)? {
            continue;
        }
        if rows::has_column(row, "parsed_alert") {
            parsed_alerts.insert(
                rows::int(row, "parsed_alert_of")?,
                rows::json(row, "parsed_alert")?,
            );
        }
    }
    let given: HashMap<i64, &ParsedAlert> = kept
        .iter()
        .filter_map(|request| Some((request.job.investigation_id, &**request.end.alert.as_ref()?)))
        .collect();
    concluded
        .iter()
        .map(|(investigation_id, result)| {
            let parsed = given
                .get(investigation_id)
                .copied()
                .or_else(|| parsed_alerts.get(investigation_id))
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

/// Replaces the full-text rows (SQLite's FTS5 table) of the concluded investigations, each
/// with the mark of a success (`search_marks`), in one statement: FTS5 writes its pending
/// terms out as a new segment at every statement savepoint, so a DELETE followed by an
/// INSERT wrote two segments per batch (and merged them later) where one suffices.
pub(crate) fn replace_search_rows(
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
        sql.bind(crate::search_marks::success_document(document))?;
        Ok(())
    })?;
    Ok(())
}
