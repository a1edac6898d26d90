//! Keeping SQLite's search index in few pieces, so that a search reads few of them.
//!
//! FTS5 writes each transaction's new words as a new piece of the index (a segment) and
//! merges pieces of a similar size as they accumulate (its `automerge`): at a million
//! stored the index lay in about fifteen, and every search term is read from each of them
//! in turn. Counting a common word there took four to five times as long as in the same
//! index merged into one. This task merges the pieces back together once they are
//! `FROM_SEGMENTS` or more, in steps of `PAGES_PER_STEP` pages (FTS5's `merge` with a
//! negative budget: every piece takes part, whatever its size) with a pause between
//! steps, until one is left. Each step holds the write turn every other writer waits for,
//! so the steps are short, and their pace bounds what the upkeep writes.

use std::time::Duration;

use sleuth_store::StoreResult;
use sqlx::AnyPool;

use crate::{DbResultExt, Dialect};

/// Pieces at which a merge begins. FTS5's own merging keeps fewer than four of a size, so
/// a store that writes rarely stays below this for long, and merges rarely.
pub const FROM_SEGMENTS: i64 = 8;
/// Index pages (about 4 KB each) one step merges at most: tens of milliseconds.
const PAGES_PER_STEP: i64 = 500;
/// The pause after a step.
const STEP_EVERY: Duration = Duration::from_secs(1);

/// How many pieces the search index is in.
pub async fn segments(pool: &AnyPool) -> StoreResult<i64> {
    sqlx::query_scalar("SELECT COUNT(DISTINCT segid) FROM investigation_search_idx")
        .fetch_one(pool)
        .await
        .db()
}

/// One step of merging every piece of the search index together, in a write turn of its
/// own.
pub async fn merge_step(pool: &AnyPool) -> StoreResult<()> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) =
        crate::begin_write(&mut connection, Dialect::Sqlite).await?;
    sqlx::query(
        "INSERT INTO investigation_search (investigation_search, rank) VALUES ('merge', $1)",
    )
    .bind(-PAGES_PER_STEP)
    .execute(&mut *transaction)
    .await
    .db()?;
    transaction.commit().await.db()
}

/// One look at the index: whether a merge goes on (it was going on, or the index is in
/// `FROM_SEGMENTS` pieces or more) and, if so, its next step.
pub async fn look(pool: &AnyPool, merging: bool) -> StoreResult<bool> {
    let pieces = segments(pool).await?;
    let merging = if merging {
        pieces > 1
    } else {
        pieces >= FROM_SEGMENTS
    };
    if merging {
        merge_step(pool).await?;
    }
    Ok(merging)
}

/// Looks at the index every `STEP_EVERY` (`look`). Ends with the pool; after an error
/// (logged) it looks again later.
pub(crate) fn spawn_upkeep(pool: AnyPool) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut merging = false;
        loop {
            tokio::time::sleep(STEP_EVERY).await;
            if pool.is_closed() {
                return;
            }
            merging = match look(&pool, merging).await {
                Ok(merging) => merging,
                Err(_) if pool.is_closed() => return,
                Err(error) => {
                    tracing::warn!(%error, "merging the search index failed; it is tried again later");
                    false
                }
            };
        }
    })
}
