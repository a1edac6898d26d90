//! Folding PostgreSQL's count deltas. There the list's count triggers only ever insert
//! deltas into `investigation_counts`, `investigation_facet_counts`,
//! `investigation_tag_counts`, `investigation_tag_facet_counts` and
//! `investigation_hour_counts` (one per changed combination and statement, see migrations
//! 0007, facet_counts, 0008, tag_facet_counts and 0016), so that concurrent writers never
//! wait on a shared counter. Folding replaces the deltas of each combination by their sum,
//! which keeps the sums a list reads short.
//!
//! Every process folds in the background, a table at a time, once the deltas inserted
//! since its last fold are at least as many as the rows the fold left: so each delta is
//! folded a bounded number of times, and a table holds at most about twice its
//! combinations. Whether a table has grown so is read from PostgreSQL's own count of the
//! rows inserted into it (`pg_stat_user_tables.n_tup_ins`), which costs the same at any
//! size; counting the table's rows and combinations instead read every row each second,
//! in every process.

use std::collections::HashMap;
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

/// What the folder knows of one table since its last fold (or its first look).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Folded {
    /// The rows the table held then.
    rows: i64,
    /// `n_tup_ins` then, the fold's own inserts included.
    inserted: i64,
}

/// Whether a table whose last fold is `last` (`None`: never looked at) is due, now that
/// `inserted` rows have been inserted into it in all: when the deltas since are at least
/// as many as the rows it held then. A count below the last one (statistics were reset)
/// starts over. A pure function, no I/O.
fn due(last: Option<Folded>, inserted: i64) -> bool {
    match last {
        None => false,
        Some(last) if inserted < last.inserted => false,
        Some(last) => inserted - last.inserted >= last.rows.max(MIN_DELTAS),
    }
}

/// Folds the count deltas in the background until the task is aborted. Every process
/// runs one; two folding at once stay exact (see `fold_table`).
pub(crate) fn spawn_count_folding(pool: AnyPool) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(LOOK_EVERY);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut folded = HashMap::new();
        loop {
            interval.tick().await;
            if let Err(error) = fold_grown(&pool, &mut folded).await {
                tracing::warn!(%error, "cannot fold the list's count deltas; will retry");
            }
        }
    })
}

/// Folds each table that is `due`; a table seen for the first time (or after statistics
/// were reset) is counted once, not folded.
async fn fold_grown(pool: &AnyPool, folded: &mut HashMap<&'static str, Folded>) -> StoreResult<()> {
    let inserted = inserts_so_far(pool).await?;
    for (table, columns) in DELTA_TABLES {
        let now = inserted.get(table).copied().unwrap_or(0);
        let last = folded.get(table).copied();
        if due(last, now) {
            let rows = fold_table(pool, table, columns).await?;
            folded.insert(
                table,
                Folded {
                    rows,
                    inserted: now.saturating_add(rows),
                },
            );
        } else if last.is_none_or(|last| now < last.inserted) {
            let rows: i64 =
                sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
                    .fetch_one(pool)
                    .await
                    .db()?;
            folded.insert(
                table,
                Folded {
                    rows,
                    inserted: now,
                },
            );
        }
    }
    Ok(())
}

/// Rows inserted so far into each table of deltas, as PostgreSQL's statistics count them.
async fn inserts_so_far(pool: &AnyPool) -> StoreResult<HashMap<String, i64>> {
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT relname::TEXT, n_tup_ins FROM pg_stat_user_tables \
         WHERE schemaname = current_schema() AND relname IN ($1, $2, $3, $4, $5)",
    )
    .bind(DELTA_TABLES[0].0)
    .bind(DELTA_TABLES[1].0)
    .bind(DELTA_TABLES[2].0)
    .bind(DELTA_TABLES[3].0)
    .bind(DELTA_TABLES[4].0)
    .fetch_all(pool)
    .await
    .db()?;
    Ok(rows.into_iter().collect())
}

/// Folds every table however few deltas it holds, for a caller that needs one row per
/// combination now (the contract test of folding; the background folder waits until a
/// table has grown, which depends on how writes batched).
pub async fn fold_counts_now(pool: &AnyPool) -> StoreResult<()> {
    for (table, columns) in DELTA_TABLES {
        fold_table(pool, table, columns).await?;
    }
    Ok(())
}

/// Folds one table of deltas (`columns` are its grouping columns, `n` the delta); returns
/// the rows it holds after. One statement, so a reader sees the deltas or their sum, never
/// both; deltas committed meanwhile are not in its snapshot and stay; a second folder
/// waits for the first's row locks and then skips the rows it deleted. Sums of zero are
/// dropped.
async fn fold_table(pool: &AnyPool, table: &str, columns: &str) -> StoreResult<i64> {
    let result = sqlx::query(sqlx::AssertSqlSafe(format!(
        "WITH folded AS (DELETE FROM {table} RETURNING *) \
         INSERT INTO {table} ({columns}, n) SELECT {columns}, SUM(n) FROM folded \
         GROUP BY {columns} HAVING SUM(n) <> 0"
    )))
    .execute(pool)
    .await
    .db()?;
    Ok(i64::try_from(result.rows_affected()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_folded_once_its_deltas_since_outnumber_the_rows_it_held() {
        let last = |rows, inserted| Some(Folded { rows, inserted });
        let cases = [
            // (last fold, inserted now, due)
            (None, 5_000_000, false),
            (last(600_000, 2_000_000), 2_599_999, false),
            (last(600_000, 2_000_000), 2_600_000, true),
            (last(10, 100), 1_099, false),
            (last(10, 100), 1_100, true),
            (last(0, 0), 1_000, true),
            // Statistics reset: counted again, not folded.
            (last(600_000, 2_000_000), 5, false),
        ];
        for (last, inserted, expected) in cases {
            assert_eq!(due(last, inserted), expected, "{last:?}, {inserted}");
        }
    }
}
