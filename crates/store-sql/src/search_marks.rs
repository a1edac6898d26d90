//! The mark of a success in SQLite's search index, so that a search is counted in that state
//! by the index alone.
//!
//! The search index (FTS5, contentless) holds words, not states: counting a search's matches
//! among the successes (the list's default state) looked up each match's investigation for
//! its state, and a common word at a million stored matched over a hundred thousand. An
//! investigation's document is written again when it concludes anyway (its conclusion's
//! words join the alert's), so on SQLite a success's document also carries `SUCCESS_MARK`,
//! a token no search can type: search tokens hold only letters, digits and `_`
//! (`sleuth_store::search_tokens`), and the mark begins with a private-use character. The
//! successes matching a search are then the documents matching the search and the mark,
//! which the index counts by merging two lists of ids. A success never changes state
//! again, and every write of a success's document (its conclusion, a note's) adds the mark.
//!
//! A database from before the mark holds successes without it. Migration search_marks
//! records the highest of their ids in `search_marks.unmarked_through`; `mark_earlier`
//! rewrites their documents from the newest down, a batch at a time (`spawn_marking` on
//! SQLite's start), lowering it. Until it is 0, searches are counted the older way.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use sleuth_domain::{InvestigationResult, ParsedAlert};
use sleuth_store::StoreResult;
use sqlx::{AnyConnection, AnyPool};

use crate::builder::Statements;
use crate::{DbResultExt, Dialect, finish_batch, rows, search};

/// The token a success's search document carries on SQLite.
pub(crate) const SUCCESS_MARK: &str = "\u{E000}success";

/// Documents rewritten per transaction by `mark_earlier`: each batch holds the write turn
/// every other writer waits for, so it is kept short.
const MARK_BATCH: i64 = 200;

/// The search document of a success, as SQLite's index stores it: the mark, then its words.
pub(crate) fn success_document(document: &str) -> String {
    format!("{SUCCESS_MARK} {document}")
}

/// The count of the successes matching the FTS5 `expression`, or `None` while earlier
/// successes are still without the mark (or when the expression is empty). One statement:
/// the check and the count see the same snapshot.
pub(crate) async fn count_successes(
    connection: &mut AnyConnection,
    expression: &str,
) -> StoreResult<Option<u64>> {
    if expression.is_empty() {
        return Ok(None);
    }
    // FTS5 ANDs phrases separated by spaces; the mark is quoted as a phrase of one token.
    let marked = format!("{expression} \"{SUCCESS_MARK}\"");
    let count: Option<i64> = sqlx::query_scalar(
        "SELECT CASE WHEN (SELECT unmarked_through FROM search_marks) = 0 THEN \
         (SELECT COUNT(*) FROM investigation_search WHERE investigation_search MATCH $1) END",
    )
    .bind(marked)
    .fetch_one(&mut *connection)
    .await
    .db()?;
    Ok(count.map(|count| u64::try_from(count).unwrap_or(0)))
}

/// Marks the documents of the next `batch` successes concluded before the mark existed,
/// the newest first. Returns true once none is left.
pub async fn mark_earlier(pool: &AnyPool, batch: i64) -> StoreResult<bool> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) =
        crate::begin_write(&mut connection, Dialect::Sqlite).await?;
    let through: i64 = sqlx::query_scalar("SELECT unmarked_through FROM search_marks")
        .fetch_one(&mut *transaction)
        .await
        .db()?;
    if through == 0 {
        return Ok(true);
    }
    // Down the ids from the last one marked: SQLite, left to choose, read every success
    // from a state index and sorted them all to keep a batch (seconds at a million).
    let found = sqlx::query(
        "SELECT i.id AS id, a.parsed AS parsed, r.result AS result \
         FROM investigations i NOT INDEXED \
         JOIN alerts a ON a.id = i.alert_id \
         LEFT JOIN investigation_results r ON r.investigation_id = i.id \
         WHERE i.id <= $1 AND i.status = 'success' ORDER BY i.id DESC LIMIT $2",
    )
    .bind(through)
    .bind(batch)
    .fetch_all(&mut *transaction)
    .await
    .db()?;
    let mut reads = Statements::new(Dialect::Sqlite);
    let ids: Vec<i64> = found
        .iter()
        .map(|row| rows::int(row, "id"))
        .collect::<StoreResult<_>>()?;
    if !ids.is_empty() {
        finish_batch::read_notes(&mut reads, &ids)?;
    }
    let mut notes_by_id = HashMap::new();
    for row in reads.run(&mut transaction).await? {
        finish_batch::add_note(&row, &mut notes_by_id)?;
    }
    let mut documents = BTreeMap::new();
    for (row, id) in found.iter().zip(&ids) {
        let parsed: ParsedAlert = rows::json(row, "parsed")?;
        let result: Option<InvestigationResult> = rows::opt_json(row, "result")?;
        let mut text = search::investigation_text(&parsed, result.as_ref());
        if let Some(notes) = notes_by_id.get(id) {
            text.push_str(notes);
        }
        documents.insert(*id, search::document(&text));
    }
    let mut writes = Statements::new(Dialect::Sqlite);
    finish_batch::replace_search_rows(&mut writes, Dialect::Sqlite, &documents)?;
    writes.run(&mut transaction).await?;
    // Fewer than a batch: none is left below the lowest one found.
    let remaining = match documents.first_key_value() {
        Some((lowest, _)) if documents.len() == usize::try_from(batch).unwrap_or(usize::MAX) => {
            lowest - 1
        }
        _ => 0,
    };
    sqlx::query("UPDATE search_marks SET unmarked_through = $1")
        .bind(remaining)
        .execute(&mut *transaction)
        .await
        .db()?;
    transaction.commit().await.db()?;
    Ok(remaining == 0)
}

/// Marks every earlier success in the background, in batches with pauses between them so
/// that the writers of new work keep their turns. Ends when none is left, on an error
/// (logged; the next start goes on), or with the pool.
pub(crate) fn spawn_marking(pool: AnyPool) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut announced = false;
        loop {
            if pool.is_closed() {
                return;
            }
            match mark_earlier(&pool, MARK_BATCH).await {
                Ok(true) => {
                    if announced {
                        tracing::info!("every earlier success is marked in the search index");
                    }
                    return;
                }
                Ok(false) => {
                    if !announced {
                        tracing::info!(
                            "marking earlier successes in the search index in the background; \
                             until done, searches are counted the slower way"
                        );
                        announced = true;
                    }
                }
                Err(_) if pool.is_closed() => return,
                Err(error) => {
                    tracing::warn!(%error, "marking earlier successes in the search index stopped; the next start goes on");
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Alert text is written by attackers: none of it may carry the mark into a document
    /// (a queued investigation counted among the successes), and no search may name it.
    #[test]
    fn neither_alert_text_nor_a_search_can_carry_the_mark() {
        let hostile = format!("{SUCCESS_MARK} x{SUCCESS_MARK} \u{E000} beacon");
        let document = search::document(&hostile);
        assert_eq!(document, "success x success beacon");
        assert!(!document.contains('\u{E000}'));
        let phrases = sleuth_store::search_phrases(&hostile);
        assert!(
            phrases
                .iter()
                .flatten()
                .all(|token| !token.contains('\u{E000}')),
            "{phrases:?}"
        );
        assert!(success_document(&document).starts_with(SUCCESS_MARK));
    }
}
