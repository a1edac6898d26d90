//! The pieces of SQL that every statement of the investigation list writes (`list`, and
//! `list_days` for its parts of a day): which index a statement may use and how a filter's
//! column is written for it, time ranges, and the sort order.

use sleuth_store::{InvestigationQuery, SortDirection, SortKey, StoreResult, TimeRange};

use crate::builder::SqlBuilder;
use crate::{Dialect, rows};

/// Which indexes the page's statement may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Whatever the planner picks.
    Any,
    /// Walk the index of the sort order (`status` then the sort columns) and stop after
    /// the page, testing each investigation against the filters. On SQLite the filters
    /// are made unindexable for it: SQLite otherwise prefers a filter's own index whenever
    /// one exists and then sorts every match (every investigation of a common source).
    SortOrder,
    /// Read the matches through the filters' indexes, then sort them: the sort columns
    /// are made unindexable (`+ 0`). PostgreSQL otherwise walks the sort order whenever it
    /// underestimates how rare a match is (a search word with a handful of matches).
    Matches,
    /// Walk the index of the query's one insight tag, `(name, status, alert_create_time,
    /// investigation)` (migration 0011), in the alert-creation order and stop after the
    /// page, testing each tagged investigation against the other filters. A tag is not
    /// spread evenly in time (a campaign, a noisy rule): walking the state's own order
    /// passes every untagged investigation newer than the tagged ones first, where this
    /// reads only tagged ones.
    TagOrder,
}

/// A column in a filter. Under `Access::SortOrder` (and `Access::TagOrder`) on SQLite, the
/// unary `+` makes the term unusable by an index without changing its value, which leaves
/// the walked index as the only way in. PostgreSQL's planner walks the sort order on its own when a filter
/// is common (its estimates of equality filters are good).
pub(crate) fn column(dialect: Dialect, access: Access, name: &str) -> String {
    if dialect == Dialect::Sqlite && matches!(access, Access::SortOrder | Access::TagOrder) {
        format!("+i.{name}")
    } else {
        format!("i.{name}")
    }
}

pub(crate) fn push_range(
    builder: &mut SqlBuilder,
    column: &str,
    range: TimeRange,
) -> StoreResult<()> {
    push_micros_range(
        builder,
        column,
        range.from.map(rows::micros),
        range.until.map(rows::micros),
    )
}

/// `push_range` for bounds already in microseconds (inclusive; `None` is open).
pub(crate) fn push_micros_range(
    builder: &mut SqlBuilder,
    column: &str,
    from: Option<i64>,
    until: Option<i64>,
) -> StoreResult<()> {
    for (bound, comparison) in [(from, ">="), (until, "<=")] {
        if let Some(bound) = bound {
            builder.push(&format!(" AND {column} {comparison} "));
            builder.bind(bound)?;
        }
    }
    Ok(())
}

/// The columns of a sort order, before the id that breaks ties.
pub(crate) fn sort_columns(key: SortKey) -> &'static [&'static str] {
    match key {
        SortKey::AlertCreate => &["alert_create_time"],
        SortKey::AlertStart => &["alert_start_time"],
        SortKey::InvestigationCreate => &["created_at"],
        SortKey::InvestigationComplete => &["generated_time"],
        SortKey::InvestigationUpdate => &["updated_at"],
        SortKey::Priority => &["priority_rank", "alert_create_time"],
    }
}

/// ORDER BY the query's sort order, walkable by its index, on the investigations (`i`).
pub(crate) fn push_sort_order(
    builder: &mut SqlBuilder,
    dialect: Dialect,
    query: &InvestigationQuery,
) {
    push_order(
        builder,
        dialect,
        "i.",
        sort_columns(query.sort),
        query.direction,
        Access::SortOrder,
    );
}

/// The sort columns that may hold NULL (no start time, not yet complete).
const NULLABLE_SORT_COLUMNS: &[&str] = &["alert_start_time", "generated_time"];

/// ORDER BY the sort columns (each prefixed with `prefix`), then the id. Nulls sort as the
/// smallest value on both databases, as SQLite does natively. PostgreSQL is told so only
/// for the columns that may hold NULL: an explicit `DESC NULLS LAST` on a NOT NULL column
/// changes nothing but stops PostgreSQL from reading its ascending index backwards, and
/// it then sorts every match, even for the default list. Under `Access::Matches` every
/// column is written `column + 0`, the same order that no index provides.
pub(crate) fn push_order(
    builder: &mut SqlBuilder,
    dialect: Dialect,
    prefix: &str,
    columns: &[&str],
    direction: SortDirection,
    access: Access,
) {
    let (word, nulls) = match direction {
        SortDirection::Ascending => ("ASC", " NULLS FIRST"),
        SortDirection::Descending => ("DESC", " NULLS LAST"),
    };
    let unindexed = if access == Access::Matches {
        " + 0"
    } else {
        ""
    };
    builder.push(" ORDER BY ");
    for column in columns {
        let nulls = if dialect == Dialect::Postgres && NULLABLE_SORT_COLUMNS.contains(column) {
            nulls
        } else {
            ""
        };
        builder.push(&format!("{prefix}{column}{unindexed} {word}{nulls}, "));
    }
    builder.push(&format!("{prefix}id{unindexed} {word}"));
}
