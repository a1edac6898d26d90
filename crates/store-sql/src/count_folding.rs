//! Folding PostgreSQL's count deltas. There the list's count triggers only ever insert
//! deltas into `investigation_counts`, `investigation_facet_counts`,
//! `investigation_tag_counts`, `investigation_tag_facet_counts` and
//! `investigation_hour_counts` (one per changed combination and statement, see migrations
//! 0007, facet_counts, 0008, tag_facet_counts and 0016), so that concurrent writers never
//! wait on a shared counter. Folding replaces the deltas of each combination by their sum,
//! which keeps the sums a list reads short.
//!
//! Every process folds in the background, a table at a time, once the deltas inserted
//! since the table's last fold are at least as many as the rows that fold left: so each
//! delta is folded a bounded number of times, and a table holds at most about twice its
//! combinations. The last fold, by whichever process, is kept in the database
//! (`count_folds`), and one process at a time looks at a table. Whether a table has grown
//! so is read from PostgreSQL's own count of the rows inserted into it
//! (`pg_stat_user_tables.n_tup_ins`), which costs the same at any size; counting the
//! table's rows and combinations instead read every row each second, in every process.

use std::time::Duration;

use sqlx::AnyPool;

use crate::DbResultExt;
use sleuth_store::StoreResult;

/// The columns of `investigation_counts` that the counts are grouped by.
macro_rules! count_columns {
    () => {
        "status, canceled, priority, alert_type, direct_source_label, tenant_union_id, \
         tenant_id, tenant_label, tenant_integration_key"
    };
}

/// Each table of deltas with its grouping columns (the delta is `n`).
const DELTA_TABLES: [(&str, &str); 5] = [
    ("investigation_counts", count_columns!()),
    (
        "investigation_facet_counts",
        concat!("facet, ", count_columns!()),
    ),
    (
        "investigation_tag_counts",
        concat!("name, ", count_columns!()),
    ),
    (
        "investigation_tag_facet_counts",
        concat!("name, facet, ", count_columns!()),
    ),
    ("investigation_hour_counts", "status, hour"),
];

/// How often the background folder looks at the tables.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// A table is folded only once this many deltas came since its last fold, however few
/// rows that fold left: folding a handful of rows each second gains nothing.
const MIN_DELTAS: i64 = 1_000;

/// A table's last fold, by whichever process (a row of `count_folds`, migration
/// count_folds), or its first count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Folded {
    /// The rows the table held after it.
    rows: i64,
    /// `n_tup_ins` read just before it: the fold's own inserts (`rows` of them) come after.
    inserted_before: i64,
}

/// What one process does with a table, given its last fold (`None`: never folded nor
/// counted) and `inserted`, the rows inserted into it in all. A pure function, no I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    /// The deltas since the last fold, its own inserts not counted, are at least as many
    /// as the rows it left.
    Fold,
    /// Never seen, or a count below the last one (statistics were reset): counted, so
    /// that the deltas from now on are measured from here.
    Count,
    Wait,
}

fn decide(last: Option<Folded>, inserted: i64) -> Decision {
    let Some(last) = last else {
        return Decision::Count;
    };
    if inserted < last.inserted_before {
        return Decision::Count;
    }
    // Negative while the fold's own inserts are not yet in the statistics (each backend
    // reports them within about a second).
    let deltas_since = inserted - last.inserted_before - last.rows;
    if deltas_since >= last.rows.max(MIN_DELTAS) {
        Decision::Fold
    } else {
        Decision::Wait
    }
}

/// Folds the count deltas in the background until the task is aborted. Every process
/// runs one; they share what was last folded (`fold_due_counts`).
pub(crate) fn spawn_count_folding(pool: AnyPool) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(LOOK_EVERY);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            interval.tick().await;
            if let Err(error) = fold_due_counts(&pool).await {
                tracing::warn!(%error, "cannot fold the list's count deltas; will retry");
            }
        }
    })
}

/// Folds each table of deltas that is due (`decide`), as one process among several: a
/// table is looked at by one process at a time (an advisory lock held by the look's
/// transaction; a process that finds it taken skips the table this time), and its last
/// fold, by any process, is read from and written to `count_folds` in that transaction.
/// Returns the tables folded.
pub async fn fold_due_counts(pool: &AnyPool) -> StoreResult<Vec<&'static str>> {
    let mut folded = Vec::new();
    for (lock, (table, columns)) in (FOLD_LOCK_BASE..).zip(DELTA_TABLES) {
        if fold_if_due(pool, lock, table, columns).await? {
            folded.push(table);
        }
    }
    Ok(folded)
}

/// The advisory lock of the first table of deltas; the others follow in `DELTA_TABLES`'
/// order. Beside the migrations' 7469002.
const FOLD_LOCK_BASE: i64 = 7_469_100;

async fn fold_if_due(pool: &AnyPool, lock: i64, table: &str, columns: &str) -> StoreResult<bool> {
    let mut transaction = pool.begin().await.db()?;
    let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)")
        .bind(lock)
        .fetch_one(&mut *transaction)
        .await
        .db()?;
    if !locked {
        return Ok(false);
    }
    let inserted: i64 = sqlx::query_scalar(
        "SELECT COALESCE(MAX(n_tup_ins), 0) FROM pg_stat_user_tables \
         WHERE schemaname = current_schema() AND relname = $1",
    )
    .bind(table)
    .fetch_one(&mut *transaction)
    .await
    .db()?;
    let last: Option<(i64, i64)> =
        sqlx::query_as("SELECT rows_left, inserted_before FROM count_folds WHERE table_name = $1")
            .bind(table)
            .fetch_optional(&mut *transaction)
            .await
            .db()?;
    let last = last.map(|(rows, inserted_before)| Folded {
        rows,
        inserted_before,
    });
    let (rows, fold) = match decide(last, inserted) {
        Decision::Wait => return Ok(false),
        Decision::Fold => (fold_table(&mut transaction, table, columns).await?, true),
        Decision::Count => {
            let rows: i64 =
                sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
                    .fetch_one(&mut *transaction)
                    .await
                    .db()?;
            // Counted, not folded: every row is already in `inserted`.
            (rows, false)
        }
    };
    let inserted_before = if fold { inserted } else { inserted - rows };
    sqlx::query(
        "INSERT INTO count_folds (table_name, rows_left, inserted_before) VALUES ($1, $2, $3) \
         ON CONFLICT (table_name) DO UPDATE SET rows_left = excluded.rows_left, \
         inserted_before = excluded.inserted_before",
    )
    .bind(table)
    .bind(rows)
    .bind(inserted_before)
    .execute(&mut *transaction)
    .await
    .db()?;
    transaction.commit().await.db()?;
    Ok(fold)
}

/// Folds every table however few deltas it holds, for a caller that needs one row per
/// combination now (the contract test of folding; the background folder waits until a
/// table has grown, which depends on how writes batched).
pub async fn fold_counts_now(pool: &AnyPool) -> StoreResult<()> {
    let mut connection = pool.acquire().await.db()?;
    for (table, columns) in DELTA_TABLES {
        fold_table(&mut connection, table, columns).await?;
    }
    Ok(())
}

/// Folds one table of deltas (`columns` are its grouping columns, `n` the delta); returns
/// the rows it holds after. One statement, so a reader sees the deltas or their sum, never
/// both; deltas committed meanwhile are not in its snapshot and stay; a second folder
/// waits for the first's row locks and then skips the rows it deleted. Sums of zero are
/// dropped.
async fn fold_table(
    connection: &mut sqlx::AnyConnection,
    table: &str,
    columns: &str,
) -> StoreResult<i64> {
    let result = sqlx::query(sqlx::AssertSqlSafe(format!(
        "WITH folded AS (DELETE FROM {table} RETURNING *) \
         INSERT INTO {table} ({columns}, n) SELECT {columns}, SUM(n) FROM folded \
         GROUP BY {columns} HAVING SUM(n) <> 0"
    )))
    .execute(&mut *connection)
    .await
    .db()?;
    Ok(i64::try_from(result.rows_affected()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_folded_once_its_deltas_since_its_last_fold_outnumber_the_rows_it_left() {
        let last = |rows, inserted_before| {
            Some(Folded {
                rows,
                inserted_before,
            })
        };
        use Decision::{Count, Fold, Wait};
        let cases = [
            // (last fold, inserted now, decision)
            (None, 5_000_000, Count),
            // The fold left 600,000 rows, inserted after the 2,000,000 read before it.
            (last(600_000, 2_000_000), 2_600_000, Wait),
            (last(600_000, 2_000_000), 3_199_999, Wait),
            (last(600_000, 2_000_000), 3_200_000, Fold),
            // Its own inserts not yet in the statistics: nothing new.
            (last(600_000, 2_000_000), 2_000_000, Wait),
            (last(10, 100), 1_109, Wait),
            (last(10, 100), 1_110, Fold),
            (last(0, 0), 1_000, Fold),
            // Statistics reset: counted again, not folded.
            (last(600_000, 2_000_000), 5, Count),
        ];
        for (last, inserted, expected) in cases {
            assert_eq!(decide(last, inserted), expected, "{last:?}, {inserted}");
        }
    }
}
