//! The analyst's side over the shared SQL: notes on investigations and feedback on
//! concluded ones. A note's words join its investigation's free-text search document, so
//! every note write re-indexes that one investigation (and `finish_batch` includes
//! the notes when the conclusion replaces the document).
//!
//! Writes that read before they write lock the investigation's row first (PostgreSQL:
//! `FOR UPDATE`; SQLite: the write transaction is `BEGIN IMMEDIATE`), so two notes written
//! at once cannot leave a search document without one of them, and two feedback changes
//! cannot both see the review as still open.

use async_trait::async_trait;
use sleuth_domain::{FeedbackStatus, InvestigationStatus, Outcome, Priority, Timestamp};
use sleuth_store::*;
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, AnyPool};

use crate::rows::{self, micros};
use crate::users::{read_user, user_columns};
use crate::{DbResultExt, Dialect, SqlStore, investigations, search};

macro_rules! select_notes {
    () => {
        concat!(
            "SELECT n.id AS note_id, n.investigation_id AS note_investigation_id, \
             n.text AS note_text, n.created_at AS note_created_at, \
             n.updated_at AS note_updated_at, ",
            user_columns!(),
            " FROM investigation_notes n JOIN users u ON u.id = n.user_id"
        )
    };
}

fn read_note(row: &AnyRow) -> StoreResult<NoteRecord> {
    Ok(NoteRecord {
        id: rows::int(row, "note_id")?,
        investigation_id: rows::int(row, "note_investigation_id")?,
        text: rows::text(row, "note_text")?,
        author: read_user(row)?,
        created_at: rows::time(row, "note_created_at")?,
        updated_at: rows::time(row, "note_updated_at")?,
    })
}

/// How a statement that must hold the investigation's row until commit ends.
fn row_lock(dialect: Dialect) -> &'static str {
    match dialect {
        // The write transaction already holds the database's one write lock.
        Dialect::Sqlite => "",
        Dialect::Postgres => " FOR UPDATE",
    }
}

/// The investigation's status, its row locked until the transaction ends; `NotFound` when
/// there is no such investigation.
async fn lock_investigation(
    connection: &mut AnyConnection,
    dialect: Dialect,
    investigation_id: i64,
) -> StoreResult<(InvestigationStatus, FeedbackStatus)> {
    let sql = format!(
        "SELECT status, feedback_status FROM investigations WHERE id = $1{}",
        row_lock(dialect)
    );
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(investigation_id)
        .fetch_optional(&mut *connection)
        .await
        .db()?
        .ok_or_else(|| StoreError::not_found("investigation", investigation_id))?;
    Ok((
        rows::parsed(&row, "status", InvestigationStatus::parse)?,
        rows::parsed(&row, "feedback_status", FeedbackStatus::parse)?,
    ))
}

async fn fetch_note(connection: &mut AnyConnection, note_id: i64) -> StoreResult<NoteRecord> {
    let row = sqlx::query(concat!(select_notes!(), " WHERE n.id = $1"))
        .bind(note_id)
        .fetch_optional(&mut *connection)
        .await
        .db()?;
    row.as_ref()
        .map(read_note)
        .transpose()?
        .ok_or_else(|| StoreError::not_found("note", note_id))
}

/// The words of an investigation's notes, for its search document.
pub(crate) async fn notes_search_text(
    connection: &mut AnyConnection,
    investigation_id: i64,
) -> StoreResult<String> {
    let texts: Vec<String> = sqlx::query_scalar(
        "SELECT text FROM investigation_notes WHERE investigation_id = $1 ORDER BY id",
    )
    .bind(investigation_id)
    .fetch_all(&mut *connection)
    .await
    .db()?;
    Ok(texts.iter().fold(String::new(), |mut text, note| {
        text.push(' ');
        text.push_str(note);
        text
    }))
}

/// Rebuilds one investigation's search document: the alert's words, the conclusion's once
/// there is one, and the notes'; on SQLite a success's with its mark (`search_marks`).
async fn reindex(
    connection: &mut AnyConnection,
    dialect: Dialect,
    investigation_id: i64,
) -> StoreResult<()> {
    let row = sqlx::query(
        "SELECT i.status, a.parsed, r.result FROM investigations i \
         JOIN alerts a ON a.id = i.alert_id \
         LEFT JOIN investigation_results r ON r.investigation_id = i.id WHERE i.id = $1",
    )
    .bind(investigation_id)
    .fetch_one(&mut *connection)
    .await
    .db()?;
    let parsed: sleuth_domain::ParsedAlert = rows::json(&row, "parsed")?;
    let result: Option<sleuth_domain::InvestigationResult> = rows::opt_json(&row, "result")?;
    let mut text = search::investigation_text(&parsed, result.as_ref());
    text.push_str(&notes_search_text(connection, investigation_id).await?);
    let mut document = search::document(&text);
    let status = rows::parsed(&row, "status", InvestigationStatus::parse)?;
    if dialect == Dialect::Sqlite && status == InvestigationStatus::Success {
        document = crate::search_marks::success_document(&document);
    }
    search::index_document(connection, dialect, investigation_id, document).await
}

pub(crate) async fn create_note(
    pool: &AnyPool,
    dialect: Dialect,
    investigation_id: i64,
    author_id: i64,
    text: &str,
    at: Timestamp,
) -> StoreResult<NoteRecord> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    lock_investigation(&mut transaction, dialect, investigation_id).await?;
    let note_id: i64 = sqlx::query_scalar(
        "INSERT INTO investigation_notes (investigation_id, user_id, text, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $4) RETURNING id",
    )
    .bind(investigation_id)
    .bind(author_id)
    .bind(text)
    .bind(micros(at))
    .fetch_one(&mut *transaction)
    .await
    .db()?;
    reindex(&mut transaction, dialect, investigation_id).await?;
    let note = fetch_note(&mut transaction, note_id).await?;
    transaction.commit().await.db()?;
    Ok(note)
}

pub(crate) async fn list_notes(
    pool: &AnyPool,
    investigation_id: i64,
    limit: u32,
    offset: u64,
) -> StoreResult<NotePage> {
    let mut connection = pool.acquire().await.db()?;
    let exists: Option<i64> = sqlx::query_scalar("SELECT id FROM investigations WHERE id = $1")
        .bind(investigation_id)
        .fetch_optional(&mut *connection)
        .await
        .db()?;
    if exists.is_none() {
        return Err(StoreError::not_found("investigation", investigation_id));
    }
    let total: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM investigation_notes WHERE investigation_id = $1")
            .bind(investigation_id)
            .fetch_one(&mut *connection)
            .await
            .db()?;
    let found = sqlx::query(concat!(
        select_notes!(),
        " WHERE n.investigation_id = $1 ORDER BY n.id LIMIT $2 OFFSET $3"
    ))
    .bind(investigation_id)
    .bind(i64::from(limit))
    .bind(i64::try_from(offset).unwrap_or(i64::MAX))
    .fetch_all(&mut *connection)
    .await
    .db()?;
    Ok(NotePage {
        total: u64::try_from(total).unwrap_or(0),
        items: found.iter().map(read_note).collect::<StoreResult<_>>()?,
    })
}

pub(crate) async fn get_note(pool: &AnyPool, note_id: i64) -> StoreResult<NoteRecord> {
    let mut connection = pool.acquire().await.db()?;
    fetch_note(&mut connection, note_id).await
}

/// The investigation a note belongs to; `NotFound` for an unknown note.
async fn note_investigation(connection: &mut AnyConnection, note_id: i64) -> StoreResult<i64> {
    sqlx::query_scalar("SELECT investigation_id FROM investigation_notes WHERE id = $1")
        .bind(note_id)
        .fetch_optional(&mut *connection)
        .await
        .db()?
        .ok_or_else(|| StoreError::not_found("note", note_id))
}

pub(crate) async fn update_note(
    pool: &AnyPool,
    dialect: Dialect,
    note_id: i64,
    text: &str,
    at: Timestamp,
) -> StoreResult<NoteRecord> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    let investigation_id = note_investigation(&mut transaction, note_id).await?;
    lock_investigation(&mut transaction, dialect, investigation_id).await?;
    let updated =
        sqlx::query("UPDATE investigation_notes SET text = $2, updated_at = $3 WHERE id = $1")
            .bind(note_id)
            .bind(text)
            .bind(micros(at))
            .execute(&mut *transaction)
            .await
            .db()?;
    if updated.rows_affected() == 0 {
        // Deleted between the two statements (PostgreSQL).
        return Err(StoreError::not_found("note", note_id));
    }
    reindex(&mut transaction, dialect, investigation_id).await?;
    let note = fetch_note(&mut transaction, note_id).await?;
    transaction.commit().await.db()?;
    Ok(note)
}

pub(crate) async fn delete_note(pool: &AnyPool, dialect: Dialect, note_id: i64) -> StoreResult<()> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    let investigation_id = note_investigation(&mut transaction, note_id).await?;
    lock_investigation(&mut transaction, dialect, investigation_id).await?;
    let deleted = sqlx::query("DELETE FROM investigation_notes WHERE id = $1")
        .bind(note_id)
        .execute(&mut *transaction)
        .await
        .db()?;
    if deleted.rows_affected() == 0 {
        return Err(StoreError::not_found("note", note_id));
    }
    reindex(&mut transaction, dialect, investigation_id).await?;
    transaction.commit().await.db()?;
    Ok(())
}

pub(crate) async fn apply_feedback(
    pool: &AnyPool,
    dialect: Dialect,
    investigation_id: i64,
    changes: &FeedbackChanges,
    analyst_id: i64,
    at: Timestamp,
) -> StoreResult<FeedbackApplied> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    let (status, previous_status) =
        lock_investigation(&mut transaction, dialect, investigation_id).await?;
    if status != InvestigationStatus::Success {
        let why = match status {
            InvestigationStatus::Error => "it stopped without a conclusion (status error)",
            _ => {
                "it has not concluded yet (status not_asked or loading); wait until its status is success"
            }
        };
        return Err(StoreError::Rejected {
            detail: format!(
                "investigation {investigation_id} has no verdict to give feedback on: {why}"
            ),
        });
    }
    let (note_changed, note) = match &changes.outcome_note {
        None => (0_i64, None),
        Some(note) => (1, note.as_deref()),
    };
    let remediations_done = changes
        .remediations_done
        .as_ref()
        .map(rows::to_json)
        .transpose()?;
    // COALESCE keeps a column whose change is absent; the note may be cleared, so it has
    // its own flag.
    sqlx::query(
        "UPDATE investigations SET feedback_outcome = COALESCE($2, feedback_outcome), \
         feedback_priority = COALESCE($3, feedback_priority), \
         feedback_outcome_note = CASE WHEN $4 = 1 THEN $5 ELSE feedback_outcome_note END, \
         feedback_remediations_done = COALESCE($6, feedback_remediations_done), \
         feedback_status = COALESCE($7, feedback_status), \
         feedback_updated_by = $8, feedback_updated_at = $9 WHERE id = $1",
    )
    .bind(investigation_id)
    .bind(changes.outcome.map(Outcome::as_str))
    .bind(changes.priority.map(Priority::as_str))
    .bind(note_changed)
    .bind(note)
    .bind(remediations_done)
    .bind(changes.status.map(FeedbackStatus::as_str))
    .bind(analyst_id)
    .bind(micros(at))
    .execute(&mut *transaction)
    .await
    .db()?;
    let investigation = investigations::fetch_by_ids(&mut transaction, &[investigation_id])
        .await?
        .pop()
        .ok_or_else(|| StoreError::not_found("investigation", investigation_id))?;
    transaction.commit().await.db()?;
    Ok(FeedbackApplied {
        previous_status,
        investigation,
    })
}

#[async_trait]
impl AnalystStore for SqlStore {
    async fn create_note(
        &self,
        investigation_id: i64,
        author_id: i64,
        text: &str,
        at: Timestamp,
    ) -> StoreResult<NoteRecord> {
        create_note(
            &self.pool,
            self.dialect,
            investigation_id,
            author_id,
            text,
            at,
        )
        .await
    }

    async fn list_notes(
        &self,
        investigation_id: i64,
        limit: u32,
        offset: u64,
    ) -> StoreResult<NotePage> {
        list_notes(&self.pool, investigation_id, limit, offset).await
    }

    async fn get_note(&self, note_id: i64) -> StoreResult<NoteRecord> {
        get_note(&self.pool, note_id).await
    }

    async fn update_note(
        &self,
        note_id: i64,
        text: &str,
        at: Timestamp,
    ) -> StoreResult<NoteRecord> {
        update_note(&self.pool, self.dialect, note_id, text, at).await
    }

    async fn delete_note(&self, note_id: i64) -> StoreResult<()> {
        delete_note(&self.pool, self.dialect, note_id).await
    }

    async fn apply_feedback(
        &self,
        investigation_id: i64,
        changes: &FeedbackChanges,
        analyst_id: i64,
        at: Timestamp,
    ) -> StoreResult<FeedbackApplied> {
        apply_feedback(
            &self.pool,
            self.dialect,
            investigation_id,
            changes,
            analyst_id,
            at,
        )
        .await
    }

    async fn dashboard_sample(
        &self,
        query: &sleuth_store::DashboardQuery,
    ) -> StoreResult<sleuth_store::DashboardSample> {
        crate::dashboard::sample(&self.pool, query).await
    }
}
