//! Where the list reads its kept counts, and how SQLite's count deltas are folded in.
//!
//! The kept counts are five tables: the combinations of every equality-filtered column
//! (`investigation_counts`), the same per facet (`investigation_facet_counts`: 'all',
//! 'type', 'source', 'tenant', 'union', 'type_source'), per insight tag and combination or
//! facet (`investigation_tag_counts`, `investigation_tag_facet_counts`), and per state and
//! hour (`investigation_hour_counts`).
//!
//! On PostgreSQL the triggers insert deltas into those tables themselves and
//! `count_folding` sums them now and then; a list reads the tables as they are.
//!
//! On SQLite the triggers append each change to one of three delta tables instead
//! (migration count_deltas): the combinations, the tag combinations and the hours. Changing
//! kept rows in place wrote a scattered page per changed row on every commit, close to
//! half of what a drain wrote; appended deltas share the last page of their table.
//! The writer folds them into the kept counts every `FOLD_EVERY` in one transaction
//! (`fold_sqlite`), where a claim's +1 and its finish's -1 cancel, and the facet rows are
//! projected from the combinations (`Facet::projection`), so the facets need no trigger.
//! A list reads a kept table together with the deltas not folded yet (`KeptCounts::from`):
//! exact at every moment, since a fold moves deltas in one transaction.

use std::time::Duration;

use sleuth_store::StoreResult;
use sqlx::{AnyConnection, AnyPool};

use crate::list_plan::Facet;
use crate::writer_connection::WriterConnections;
use crate::{DbResultExt, Dialect};

/// The columns of a combination, as the kept tables and the deltas name them.
const COMBINATION: &str = "status, canceled, priority, alert_type, direct_source_label, \
     tenant_union_id, tenant_id, tenant_label, tenant_integration_key";

/// The same columns in the order of the kept rows' JSON keys (`group_key`, the tables'
/// primary key, so the order of their rows): what an investigation keeps first, its state
/// last. A job's conclusion takes one from its combination when queued and adds one to its
/// combination when concluded; keyed state first, those two rows sat in far-apart pages
/// and each fold wrote both pages, keyed state last they share a page (migration
/// count_keys_state_last rewrote the keys of the rows kept before).
const KEY_ORDER: &str = "alert_type, direct_source_label, tenant_union_id, tenant_id, \
     tenant_label, tenant_integration_key, priority, canceled, status";

/// How often SQLite's writer folds the deltas. Shorter keeps fewer deltas for the lists to
/// add; longer lets more of them cancel and more of the kept rows' pages be written once
/// for many commits.
const FOLD_EVERY: Duration = Duration::from_millis(250);

/// How often SQLite's folder looks for deltas when no group-commit writer has written.
const LOOK_ANYWAY_EVERY: Duration = Duration::from_secs(10);

/// The facets kept per insight tag.
const TAG_FACETS: [Facet; 4] = [Facet::All, Facet::Type, Facet::Source, Facet::Tenant];

/// Which kept counts a list sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeptCounts {
    /// `investigation_counts`.
    Combinations,
    /// One facet of `investigation_facet_counts`.
    Facet(Facet),
    /// `investigation_tag_counts`.
    TagCombinations,
    /// One facet of `investigation_tag_facet_counts`.
    TagFacet(Facet),
    /// `investigation_hour_counts`.
    Hours,
}

impl KeptCounts {
    /// What a list's `FROM` names to read these counts (alias it `i`): the table on
    /// PostgreSQL; on SQLite the table and the deltas not folded yet, read as one, the
    /// table through `index` when given (SQLite keeps no statistics, so a reader may have
    /// to name it). A facet's rows must still be filtered by `i.facet`.
    pub(crate) fn from(self, dialect: Dialect, index: Option<&str>) -> String {
        let table = self.table();
        if dialect == Dialect::Postgres {
            return table.to_string();
        }
        let indexed = index
            .map(|index| format!(" INDEXED BY {index}"))
            .unwrap_or_default();
        let (kept, deltas) = match self {
            KeptCounts::Combinations => (
                format!("{COMBINATION}, n"),
                format!("SELECT {COMBINATION}, n FROM investigation_count_deltas"),
            ),
            KeptCounts::Facet(facet) => (
                format!("facet, {COMBINATION}, n"),
                format!(
                    "SELECT {}, n FROM investigation_count_deltas",
                    facet.projection()
                ),
            ),
            KeptCounts::TagCombinations => (
                format!("name, {COMBINATION}, n"),
                format!("SELECT name, {COMBINATION}, n FROM investigation_tag_count_deltas"),
            ),
            KeptCounts::TagFacet(facet) => (
                format!("name, facet, {COMBINATION}, n"),
                format!(
                    "SELECT name, {}, n FROM investigation_tag_count_deltas",
                    facet.projection()
                ),
            ),
            KeptCounts::Hours => (
                "status, hour, n".to_string(),
                "SELECT status, hour, n FROM investigation_hour_count_deltas".to_string(),
            ),
        };
        format!("(SELECT {kept} FROM {table}{indexed} UNION ALL {deltas})")
    }

    fn table(self) -> &'static str {
        match self {
            KeptCounts::Combinations => "investigation_counts",
            KeptCounts::Facet(_) => "investigation_facet_counts",
            KeptCounts::TagCombinations => "investigation_tag_counts",
            KeptCounts::TagFacet(_) => "investigation_tag_facet_counts",
            KeptCounts::Hours => "investigation_hour_counts",
        }
    }
}

/// SQLite: folds the count deltas every `FOLD_EVERY` on the writers' connection, until the
/// task is aborted. It looks for deltas only after the group-commit writers wrote, or
/// every `LOOK_ANYWAY_EVERY` (for the few writes that take a pooled connection: a cancel,
/// retention), so an idle database is not polled a few times a second.
pub(crate) fn spawn_sqlite_folding(
    pool: AnyPool,
    writers: WriterConnections,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(FOLD_EVERY);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_look = tokio::time::Instant::now();
        loop {
            interval.tick().await;
            if !writers.take_wrote() && last_look.elapsed() < LOOK_ANYWAY_EVERY {
                continue;
            }
            last_look = tokio::time::Instant::now();
            if let Err(error) = fold_if_any(&pool, &writers).await {
                tracing::warn!(%error, "cannot fold the list's count deltas; will retry");
            }
        }
    })
}

async fn fold_if_any(pool: &AnyPool, writers: &WriterConnections) -> StoreResult<()> {
    // An integer, not a bool: the Any driver hands SQLite's truth values over as BIGINT.
    let any: i64 = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM investigation_count_deltas) \
         OR EXISTS (SELECT 1 FROM investigation_tag_count_deltas) \
         OR EXISTS (SELECT 1 FROM investigation_hour_count_deltas)",
    )
    .fetch_one(pool)
    .await
    .db()?;
    if any != 0 {
        writers.write(fold_sqlite).await?;
    }
    Ok(())
}

/// Folds every SQLite count delta into the kept counts, in one write transaction: each
/// combination's deltas summed and added to its kept row (a row reaching zero is dropped
/// by the drop_zero triggers of migration facet_counts), the facets projected from the
/// combinations, then the deltas deleted. Readers see the deltas or their sum, never both.
pub(crate) async fn fold_sqlite(connection: &mut AnyConnection) -> StoreResult<()> {
    let (_turn, mut transaction) = crate::begin_write(connection, Dialect::Sqlite).await?;
    for statement in fold_statements() {
        sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&mut *transaction)
            .await
            .db()?;
    }
    transaction.commit().await.db()
}

/// The statements of one fold, in order.
fn fold_statements() -> Vec<String> {
    let facets = |facets: &[Facet], name: &str, deltas: &str| {
        facets
            .iter()
            .map(|facet| format!("SELECT {name}{}, n FROM {deltas}", facet.projection()))
            .collect::<Vec<_>>()
            .join(" UNION ALL ")
    };
    vec![
        add_sums("investigation_counts", "", "investigation_count_deltas"),
        add_sums(
            "investigation_facet_counts",
            "facet, ",
            &format!(
                "({})",
                facets(&Facet::ALL, "", "investigation_count_deltas")
            ),
        ),
        add_sums(
            "investigation_tag_counts",
            "name, ",
            "investigation_tag_count_deltas",
        ),
        add_sums(
            "investigation_tag_facet_counts",
            "name, facet, ",
            &format!(
                "({})",
                facets(&TAG_FACETS, "name, ", "investigation_tag_count_deltas")
            ),
        ),
        // Keyed by its columns, not by a JSON key.
        "INSERT INTO investigation_hour_counts (status, hour, n) \
         SELECT status, hour, SUM(n) FROM investigation_hour_count_deltas WHERE true \
         GROUP BY status, hour HAVING SUM(n) <> 0 \
         ON CONFLICT (status, hour) DO UPDATE SET n = n + excluded.n"
            .to_string(),
        "DELETE FROM investigation_count_deltas".to_string(),
        "DELETE FROM investigation_tag_count_deltas".to_string(),
        "DELETE FROM investigation_hour_count_deltas".to_string(),
    ]
}

/// Adds the sums of `deltas` (rows of `prefix` columns, the combination and `n`) to
/// `table`, keyed by the JSON array of the `prefix` columns and the combination in
/// `KEY_ORDER`, as the kept tables are (a JSON array tells NULL from any text).
fn add_sums(table: &str, prefix: &str, deltas: &str) -> String {
    format!(
        "INSERT INTO {table} (group_key, {prefix}{COMBINATION}, n) \
         SELECT json_array({prefix}{KEY_ORDER}), {prefix}{COMBINATION}, SUM(n) \
         FROM {deltas} WHERE true GROUP BY {prefix}{COMBINATION} HAVING SUM(n) <> 0 \
         ON CONFLICT (group_key) DO UPDATE SET n = n + excluded.n"
    )
}
