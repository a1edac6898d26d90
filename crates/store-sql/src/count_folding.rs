//! Folding PostgreSQL's count deltas. There the list's count triggers only ever insert
//! deltas into `investigation_counts`, `investigation_facet_counts`,
//! `investigation_tag_counts`, `investigation_tag_facet_counts` and
//! `investigation_hour_counts` (one per changed combination and statement, see migrations
//! 0007, facet_counts, 0008, tag_facet_counts and 0016), so that concurrent writers never
//! wait on a shared counter. Folding replaces the deltas of each combination by their sum,
//! which keeps the sums a list reads short.
//!
//! Every process folds in the background, a table at a time, once 20,000 deltas or
//! more were inserted since the table's last fold. A fold reads and writes only those
//! deltas: it deletes the rows not yet `folded` and adds their sums into the table's
//! folded rows, one per combination (PostgreSQL migration fold_deltas_only), so its cost
//! is the deltas', whatever the table's size. The last fold, by whichever process, is
//! kept in the database (`count_folds`), and one process at a time looks at a table.
//! Whether deltas came is read from PostgreSQL's own count of the rows inserted into the
//! table (`pg_stat_user_tables.n_tup_ins`), which costs the same at any size.

use std::collections::HashMap;
use std::time::Duration;

use sqlx::AnyPool;

use crate::DbResultExt;
use crate::builder::SqlBuilder;
use crate::rows;
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

/// A table is folded once this many deltas came since its last fold. A fold's cost is
/// mostly per delta, but each also rewrites the folded row of every combination its deltas
/// touch, and a drain touches the same combinations second after second: folding every
/// 20,000 deltas instead of every 1,000 rewrites them less often. Lists read the deltas
/// not yet folded through the same indexes as the folded rows.
pub const MIN_DELTAS: i64 = 20_000;

/// A table's last fold, by whichever process (a row of `count_folds`), or its first look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Folded {
    /// `n_tup_ins` read just before it.
    inserted_before: i64,
    /// The rows it inserted (combinations new since the fold before), which come after.
    rows_inserted: i64,
}

/// What one process does with a table, given its last fold (`None`: never looked at) and
/// `inserted`, the rows inserted into it in all. A pure function, no I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    /// At least `MIN_DELTAS` deltas since the last fold, its own inserts not counted.
    Fold,
    /// Never looked at, or a count below the last one (statistics were reset): the deltas
    /// are measured from here on.
    Start,
    Wait,
}

fn decide(last: Option<Folded>, inserted: i64) -> Decision {
    let Some(last) = last else {
        return Decision::Start;
    };
    if inserted < last.inserted_before {
        return Decision::Start;
    }
    // Negative while the fold's own inserts are not yet in the statistics (each backend
    // reports them within about a second).
    let deltas_since = inserted - last.inserted_before - last.rows_inserted;
    if deltas_since >= MIN_DELTAS {
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
/// One read of every table's state comes first, without a transaction: most looks find
/// nothing due, and an idle process then costs one statement a second. Returns the tables
/// folded.
pub async fn fold_due_counts(pool: &AnyPool) -> StoreResult<Vec<&'static str>> {
    let mut connection = pool.acquire().await.db()?;
    let seen = looks(&mut connection, &DELTA_TABLES.map(|(table, _)| table)).await?;
    drop(connection);
    let mut folded = Vec::new();
    for (lock, (table, columns)) in (FOLD_LOCK_BASE..).zip(DELTA_TABLES) {
        let (inserted, last) = seen.get(table).copied().unwrap_or_default();
        if decide(last, inserted) == Decision::Wait {
            continue;
        }
        if fold_if_due(pool, lock, table, columns).await? {
            folded.push(table);
        }
    }
    Ok(folded)
}

/// Of each of `tables`: the rows inserted into it so far, as PostgreSQL's statistics count
/// them, and its last fold.
async fn looks(
    connection: &mut sqlx::AnyConnection,
    tables: &[&str],
) -> StoreResult<HashMap<String, (i64, Option<Folded>)>> {
    let mut sql = SqlBuilder::new(
        "SELECT t.relname::TEXT AS table_name, t.n_tup_ins, f.inserted_before, \
         f.rows_inserted FROM pg_stat_user_tables t \
         LEFT JOIN count_folds f ON f.table_name = t.relname \
         WHERE t.schemaname = current_schema() AND t.relname IN ",
    );
    sql.bind_list(tables.iter().map(|table| table.to_string()))?;
    let mut seen = HashMap::new();
    for row in &sql.build().fetch_all(&mut *connection).await.db()? {
        let last = rows::opt_int(row, "inserted_before")?
            .zip(rows::opt_int(row, "rows_inserted")?)
            .map(|(inserted_before, rows_inserted)| Folded {
                inserted_before,
                rows_inserted,
            });
        seen.insert(
            rows::text(row, "table_name")?,
            (rows::int(row, "n_tup_ins")?, last),
        );
    }
    Ok(seen)
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
    let (inserted, last) = looks(&mut transaction, &[table])
        .await?
        .remove(table)
        .unwrap_or_default();
    let (rows_inserted, fold) = match decide(last, inserted) {
        Decision::Wait => return Ok(false),
        Decision::Fold => (fold_table(&mut transaction, table, columns).await?, true),
        Decision::Start => (0, false),
    };
    sqlx::query(
        "INSERT INTO count_folds (table_name, inserted_before, rows_inserted) \
         VALUES ($1, $2, $3) ON CONFLICT (table_name) DO UPDATE SET \
         inserted_before = excluded.inserted_before, rows_inserted = excluded.rows_inserted",
    )
    .bind(table)
    .bind(inserted)
    .bind(rows_inserted)
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

/// Folds one table's deltas (`columns` are its grouping columns, `n` the delta) into its
/// folded rows; returns how many folded rows it inserted (combinations new since the last
/// fold). One statement, so a reader sees the deltas or their sums, never both; deltas
/// committed meanwhile are not in its snapshot and stay for the next fold. Folded rows
/// whose sum came to zero are deleted after it.
async fn fold_table(
    connection: &mut sqlx::AnyConnection,
    table: &str,
    columns: &str,
) -> StoreResult<i64> {
    let inserted: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "WITH deltas AS (DELETE FROM {table} WHERE NOT folded RETURNING {columns}, n), \
         upserted AS (INSERT INTO {table} ({columns}, n, folded) \
         SELECT {columns}, SUM(n), true FROM deltas GROUP BY {columns} HAVING SUM(n) <> 0 \
         ON CONFLICT ({columns}) WHERE folded DO UPDATE SET n = {table}.n + excluded.n \
         RETURNING xmax = 0 AS new_row) \
         SELECT COUNT(*) FILTER (WHERE new_row) FROM upserted"
    )))
    .fetch_one(&mut *connection)
    .await
    .db()?;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DELETE FROM {table} WHERE folded AND n = 0"
    )))
    .execute(&mut *connection)
    .await
    .db()?;
    Ok(inserted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_folded_once_enough_deltas_came_since_its_last_fold() {
        let last = |inserted_before, rows_inserted| {
            Some(Folded {
                inserted_before,
                rows_inserted,
            })
        };
        use Decision::{Fold, Start, Wait};
        let cases = [
            // (last fold, inserted now, decision)
            (None, 5_000_000, Start),
            // The fold, after 2,000,000 inserted, inserted 600 new combinations.
            (last(2_000_000, 600), 2_000_600, Wait),
            (last(2_000_000, 600), 2_020_599, Wait),
            (last(2_000_000, 600), 2_020_600, Fold),
            // Its own inserts not yet in the statistics: nothing new.
            (last(2_000_000, 600), 2_000_000, Wait),
            // However many rows the table holds, 20,000 deltas are folded.
            (last(10, 0), 20_010, Fold),
            // Statistics reset: started again, not folded.
            (last(2_000_000, 600), 5, Start),
        ];
        for (last, inserted, expected) in cases {
            assert_eq!(decide(last, inserted), expected, "{last:?}, {inserted}");
        }
    }
}
