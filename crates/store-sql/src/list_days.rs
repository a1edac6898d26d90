//! A page under an alert-creation range, sorted by another time (investigation creation,
//! update or completion, alert start), read one UTC day of the range at a time.
//!
//! Why: no index is ordered by one time and seeks into a range of another, so such a page
//! read every match of the range and sorted it (a busy day alone holds tens of thousands),
//! or walked the sort order past every investigation outside
//! the range. Migrations 0014 and 0015 index each of these sort orders per alert-creation
//! day, for the successes: `(alert day, sort column, id, alert time)`. Every success of a
//! day wholly inside the range matches, so walking that day in the sort order stops after
//! the page; the page is then the merge of each day's first rows, and costs about the days
//! times the page whatever the range holds. A partial day at either end of the range is walked the same
//! way when it spans at least a quarter of the day (`spans_enough_of_its_day`) or the
//! first rows of its walk show that the walk finds the page soon (`walk_is_short`); its
//! matches are read and sorted otherwise.
//!
//! The day only chooses where a walk starts: each walk still tests the range itself, so
//! the rows listed never depend on how the days were cut. Each index entry carries its
//! alert-creation time (migration 0015), so that test skips an entry outside the range
//! without reading its investigation: a fraction of a microsecond, against about one for
//! each match read and sorted.

use sleuth_domain::InvestigationStatus;
use sleuth_store::{InvestigationQuery, SortKey, StoreResult};
use sqlx::AnyConnection;

use crate::builder::SqlBuilder;
use crate::list_sql::{self, Access};
use crate::{DbResultExt, Dialect, rows};

/// Microseconds in a UTC day: the unit of the alert day that migration 0014 indexes.
const DAY_MICROS: i64 = 86_400_000_000;

/// The first and last microsecond of UTC day `day` (days counted from 1970-01-01, floor
/// division before it). Saturating: no overflow even for the last day a timestamp can name.
fn day_bounds(day: i64) -> (i64, i64) {
    let day_start = day.saturating_mul(DAY_MICROS);
    (day_start, day_start.saturating_add(DAY_MICROS - 1))
}

/// The alert-creation day of an investigation, written exactly as migration 0014 indexes
/// it (both databases use an expression index only for the same expression). Integer
/// division truncates toward zero on both, which equals the UTC day from 1970 on; days
/// before are never split (`day_parts`).
const ALERT_DAY: &str = "(i.alert_create_time / 86400000000)";

/// The one state split by day: the per-day indexes hold successes only (migration 0014),
/// which are what a list shows by default and nearly every investigation ends as. An
/// investigation enters them once, when it concludes, instead of moving in them at its
/// creation, its claim and its end. The other states' matches are read as before.
pub(crate) const SPLIT_STATE: InvestigationStatus = InvestigationStatus::Success;

/// `SPLIT_STATE`, written into the statement: a planner uses a partial index only when the
/// query itself names the index's state, not a parameter bound to it.
const SPLIT_STATE_SQL: &str = "i.status = 'success'";

/// The most branches a page is split into, over all its states: SQLite refuses a compound
/// SELECT of more than 500 terms. Past it (a range of months), the matches are read.
pub(crate) const MAX_DAY_BRANCHES: usize = 400;

/// How one day of the range is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DayPart {
    /// Walk this alert day in the sort order, testing the range on each row.
    Walk(i64),
    /// Read the matches between these alert-creation times (a partial day, in
    /// microseconds) and sort them.
    Read { from: i64, until: i64 },
}

/// Whether migration 0014 indexes this sort order per alert day. A page is split by day
/// only when the states and an alert-creation range are its only filters (`list.rs`,
/// `split_by_day`): every investigation of a whole day then matches.
pub(crate) fn sorted_per_day(sort: SortKey) -> bool {
    matches!(
        sort,
        SortKey::AlertStart
            | SortKey::InvestigationCreate
            | SortKey::InvestigationComplete
            | SortKey::InvestigationUpdate
    )
}

/// The days of one state's `matching` investigations under the query's alert-creation
/// range, each with how to read it; `None` when reading the matches and sorting them is
/// cheaper (fewer matches than the days' walks would read) or the range is not
/// splittable (before 1970, or more days than `max_days`).
pub(crate) async fn day_parts(
    connection: &mut AnyConnection,
    dialect: Dialect,
    query: &InvestigationQuery,
    matching: u64,
    page_end: u64,
    max_days: usize,
) -> StoreResult<Option<Vec<DayPart>>> {
    let from = query.alert_create.from.map(rows::micros);
    let until = query.alert_create.until.map(rows::micros);
    // The first and last match, so that an open end or a range wider than the data splits
    // into the days that hold matches only.
    let mut extent =
        SqlBuilder::new("SELECT (SELECT MIN(i.alert_create_time) FROM investigations i WHERE ");
    push_state_and_range(&mut extent, from, until)?;
    extent.push(") AS low, (SELECT MAX(i.alert_create_time) FROM investigations i WHERE ");
    push_state_and_range(&mut extent, from, until)?;
    extent.push(") AS high");
    let row = extent.build().fetch_one(&mut *connection).await.db()?;
    let (Some(low), Some(high)) = (rows::opt_int(&row, "low")?, rows::opt_int(&row, "high")?)
    else {
        return Ok(None);
    };
    if low < 0 {
        return Ok(None);
    }
    let (first_day, last_day) = (low / DAY_MICROS, high / DAY_MICROS);
    let days = u64::try_from(last_day - first_day + 1).unwrap_or(u64::MAX);
    if days > max_days as u64 || days.saturating_mul(page_end) >= matching {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for day in first_day..=last_day {
        let (day_start, day_end) = day_bounds(day);
        let whole =
            from.is_none_or(|from| from <= day_start) && until.is_none_or(|until| day_end <= until);
        let part_from = from.map_or(day_start, |from| from.max(day_start));
        let part_until = until.map_or(day_end, |until| until.min(day_end));
        let probe = Probe {
            day,
            from: part_from,
            until: part_until,
            rows: page_end.saturating_mul(PROBE_PAGES),
        };
        parts.push(
            if whole
                || spans_enough_of_its_day(part_from, part_until)
                || walk_is_short(connection, dialect, query, probe, page_end).await?
            {
                DayPart::Walk(day)
            } else {
                DayPart::Read {
                    from: part_from,
                    until: part_until,
                }
            },
        );
    }
    // One partial day, read, is the plain read with more statements.
    if let [DayPart::Read { .. }] = parts[..] {
        return Ok(None);
    }
    Ok(Some(parts))
}

/// Whether a partial day (`from`..=`until`, microseconds, inside one day) is walked
/// without probing. Its walk skips at most the day's entries outside it, each tested on the
/// index alone (migration 0015); reading its matches looks up and sorts each of them, about
/// four times the cost per row, as the api bench's lists under a range measure. So when
/// the part spans a quarter
/// of the day or more, the walk costs no more than the read would if the day's
/// investigations were spread evenly, and far less when the page comes early.
fn spans_enough_of_its_day(from: i64, until: i64) -> bool {
    until.saturating_sub(from).saturating_add(1) >= DAY_MICROS / 4
}

/// How many pages' worth of a partial day's walk `walk_is_short` reads at most: 80 rows
/// for a first page of 20. The walk is then chosen whenever a quarter of those rows are in
/// the range, as they are when the sort order follows alert creation.
const PROBE_PAGES: u64 = 4;

/// The first rows of a partial day's walk, tested against the part of the range inside it.
#[derive(Debug, Clone, Copy)]
struct Probe {
    day: i64,
    from: i64,
    until: i64,
    rows: u64,
}

/// Whether walking a partial day in the sort order finds the page within its first
/// `probe.rows` rows (or the day holds no more). When alert-creation times follow the sort
/// order, as creation and update times do, the part of the day inside the range comes
/// first in one direction, and is then found at once however many rows the day holds.
async fn walk_is_short(
    connection: &mut AnyConnection,
    dialect: Dialect,
    query: &InvestigationQuery,
    probe: Probe,
    page_end: u64,
) -> StoreResult<bool> {
    let mut first_rows = SqlBuilder::new(
        "SELECT COUNT(*) AS walked, COALESCE(SUM(CASE WHEN first_rows.alert_create_time >= ",
    );
    first_rows.bind(probe.from)?;
    first_rows.push(" AND first_rows.alert_create_time <= ");
    first_rows.bind(probe.until)?;
    first_rows.push(&format!(
        " THEN 1 ELSE 0 END), 0) AS matching FROM (SELECT i.alert_create_time \
         FROM investigations i WHERE {SPLIT_STATE_SQL}"
    ));
    first_rows.push(&format!(" AND {ALERT_DAY} = "));
    first_rows.bind(probe.day)?;
    list_sql::push_sort_order(&mut first_rows, dialect, query);
    first_rows.push(&format!(
        " LIMIT {}) AS first_rows",
        i64::try_from(probe.rows).unwrap_or(i64::MAX)
    ));
    let row = first_rows.build().fetch_one(&mut *connection).await.db()?;
    let walked = u64::try_from(rows::int(&row, "walked")?).unwrap_or(0);
    let matching = u64::try_from(rows::int(&row, "matching")?).unwrap_or(0);
    Ok(walked < probe.rows || matching >= page_end)
}

/// `SPLIT_STATE` inside the range, on the investigations (`i`).
fn push_state_and_range(
    builder: &mut SqlBuilder,
    from: Option<i64>,
    until: Option<i64>,
) -> StoreResult<()> {
    builder.push(SPLIT_STATE_SQL);
    list_sql::push_micros_range(builder, "i.alert_create_time", from, until)
}

/// A day part's conditions: its state, then the rest (the query's only filters besides
/// the state, see `sorted_per_day`). A walk names its day, which the index of the sort
/// order seeks into, and tests the range on each row, written as the walk of a sort order
/// writes its filters (`list_sql::column`: unindexable on SQLite, which leaves that index as
/// the only way in). A read is its part of the range.
pub(crate) fn push_day_part(
    builder: &mut SqlBuilder,
    dialect: Dialect,
    query: &InvestigationQuery,
    part: DayPart,
) -> StoreResult<()> {
    match part {
        DayPart::Walk(day) => {
            builder.push(&format!("{SPLIT_STATE_SQL} AND {ALERT_DAY} = "));
            builder.bind(day)?;
            let column = list_sql::column(dialect, Access::SortOrder, "alert_create_time");
            list_sql::push_range(builder, &column, query.alert_create)
        }
        DayPart::Read { from, until } => push_state_and_range(builder, Some(from), Some(until)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_day_is_walked_unprobed_from_a_quarter_of_the_day() {
        let hour = DAY_MICROS / 24;
        let noon = 12 * hour;
        assert!(spans_enough_of_its_day(noon, DAY_MICROS - 1));
        assert!(spans_enough_of_its_day(noon, noon + 6 * hour - 1));
        assert!(!spans_enough_of_its_day(noon, noon + 6 * hour - 2));
        assert!(!spans_enough_of_its_day(DAY_MICROS - hour, DAY_MICROS - 1));
        assert!(!spans_enough_of_its_day(noon, noon));
    }

    #[test]
    fn the_written_state_is_the_split_state() {
        assert_eq!(
            SPLIT_STATE_SQL,
            format!("i.status = '{}'", SPLIT_STATE.as_str())
        );
    }
}
