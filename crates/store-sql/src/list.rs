//! Listing investigations: every filter of SPEC's list endpoint, a total order (ties are
//! broken by id, so pages never repeat or skip), and the total count.
//!
//! A list never counts a million rows, nor sums a row per distinct type. Triggers keep
//! exact counts in the same transaction as every change, as deltas that are folded in
//! the background (`kept_counts`: on SQLite appended to delta tables that a list reads
//! with the kept rows; on PostgreSQL inserted into the kept tables themselves, so
//! concurrent writers never wait on a counter); a combination that reaches zero is dropped.
//! `investigation_facet_counts` (migration facet_counts) holds them per state, stop reason
//! and priority, alone and with each of type, source and tenant, and with the tenant union
//! alone and type and source together (migration union_and_type_source_facets): a list
//! whose equality filters one facet holds sums the rows of the values it names. Only a
//! list filtering a tenant with a type or a source sums `investigation_counts` (migration
//! 0007), one row per combination of every equality-filtered column. `count_from`
//! (`list_plan`) decides, from the query alone.
//! `investigation_tag_counts` does the same per insight tag (migration 0008): a list
//! filtered by tags sums the largest tag's count and reads only the other tags' rows, so a
//! union costs what its smaller tags cost; under an alert-creation range the tag rows carry
//! copies of their investigation's state and alert time (migration 0011) and an index finds
//! the tagged investigations in the range without reading one. A list filtered by states
//! and an alert-creation range sums `investigation_hour_counts` (per state and UTC hour,
//! migration 0016) for the whole hours inside the range and counts the rows of at most half
//! an hour at each end. Only other time ranges, an alert-creation range with other filters,
//! and search count the matching rows.
//!
//! The page is read per state, each walking its `(status, sort columns, id)` index and
//! stopping after the page; on SQLite, whose planner would rather sort every match of an
//! indexed filter, the filters are made unindexable (`+column`) whenever the walk reads
//! fewer rows than the filter matches. Under an alert-creation range a priority-sorted page
//! is read once per priority rank, each part seeking into
//! `(status, priority_rank, alert_create_time, id)`; pages sorted by another time are read
//! a day at a time (`list_days`). Any other order that cannot seek into a time range reads
//! the range's matches and sorts them, unless a walk past everything outside the range
//! would read fewer rows.
//! On SQLite a search walking one state's sort order tests windows of it against the
//! search index's matches in their span of ids (`list_search::page_in_windows`), not each
//! investigation it passes.

use std::collections::BTreeMap;

use sleuth_domain::{InvestigationStatus, Priority};
use sleuth_store::{
    InvestigationPage, InvestigationQuery, SortDirection, StopReason, StoreResult, search_phrases,
};
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, AnyPool};

use crate::builder::SqlBuilder;
use crate::kept_counts::KeptCounts;
use crate::list_days::{self, DayPart};
use crate::list_plan::{
    Branch, CountFrom, Facet, Filters, KeptSizes, count_from, needs_state_sizes, plan_branches,
    searched_in_windows, split_by_priority, states, tags_in_alert_create_range, window_rows,
};
use crate::list_sql::{Access, column, push_micros_range, push_order, push_range, sort_columns};
use crate::{DbResultExt, Dialect, investigations, list_search, rows, search};

pub(crate) async fn list_investigations(
    pool: &AnyPool,
    dialect: Dialect,
    query: &InvestigationQuery,
) -> StoreResult<InvestigationPage> {
    // One connection for every statement; SQLite's WAL and PostgreSQL's MVCC keep a reader
    // from blocking writers meanwhile.
    let mut connection = pool.acquire().await.db()?;
    let matches = count_by_state(&mut connection, dialect, query).await?;
    let total: u64 = matches.iter().map(|(_, count)| count).sum();
    let page_end = query.offset.saturating_add(u64::from(query.limit));
    if query.offset >= total {
        return Ok(InvestigationPage {
            total,
            items: Vec::new(),
        });
    }
    let (branches, kept) =
        page_branches(&mut connection, dialect, query, &matches, page_end).await?;
    let branches = split_by_priority(query, branches);
    let branches = split_by_day(
        &mut connection,
        dialect,
        query,
        &matches,
        branches,
        page_end,
    )
    .await?;
    let ids = page_ids(
        &mut connection,
        dialect,
        query,
        &matches,
        &kept,
        &branches,
        page_end,
    )
    .await?;
    let items = investigations::fetch_by_ids(&mut connection, &ids).await?;
    Ok(InvestigationPage { total, items })
}

/// The ids of the page, in order: from the branches' statement (`page_query`), or, for a
/// search `searched_in_windows` names, in windows of the sort order.
async fn page_ids(
    connection: &mut AnyConnection,
    dialect: Dialect,
    query: &InvestigationQuery,
    matches: &[(InvestigationStatus, u64)],
    kept: &KeptSizes,
    branches: &[Branch],
    page_end: u64,
) -> StoreResult<Vec<i64>> {
    match searched_in_windows(dialect, query, branches) {
        Some(state) => {
            let matching = matches
                .iter()
                .find(|(counted, _)| *counted == state)
                .map_or(0, |(_, matching)| *matching);
            let in_state = kept.size_of(state);
            let window = window_rows(page_end, in_state, matching);
            list_search::page_in_windows(
                connection, dialect, query, state, in_state, window, page_end,
            )
            .await
        }
        None => {
            let page = page_query(dialect, query, branches, page_end)?;
            page.build_scalar().fetch_all(&mut *connection).await.db()
        }
    }
}

/// The exact number of matching investigations in each listed state that has any. It sums
/// a few rows of the counts the triggers keep exact (see `CountFrom`) whenever the filters
/// allow, and counts the matching investigations themselves otherwise.
async fn count_by_state(
    connection: &mut AnyConnection,
    dialect: Dialect,
    query: &InvestigationQuery,
) -> StoreResult<Vec<(InvestigationStatus, u64)>> {
    let from = count_from(query);
    // Rows of one state are counted without grouping, which would read each match's state
    // again, which costs most over a wide range.
    let by_rows = matches!(
        from,
        CountFrom::Rows | CountFrom::Hours | CountFrom::Search(_)
    );
    let one_state = match states(query)[..] {
        [state] if by_rows => Some(state),
        _ => None,
    };
    let mut count = SqlBuilder::new(&match &from {
        CountFrom::Tags(names) => {
            return count_tag_union(connection, dialect, query, names).await;
        }
        CountFrom::TenantNames => return count_tenant_names(connection, dialect, query).await,
        CountFrom::Hours => {
            if let Some(counts) = count_hours(connection, dialect, query).await? {
                return Ok(counts);
            }
            // A range inside one hour: its rows are counted below.
            rows_count(one_state).to_string()
        }
        CountFrom::Combinations => format!(
            "SELECT i.status AS status, CAST(SUM(i.n) AS BIGINT) AS n FROM {} i WHERE ",
            KeptCounts::Combinations.from(dialect, None)
        ),
        CountFrom::Facet(facet) => facet.sum_by_state(dialect),
        CountFrom::Search(state) => {
            if let Some(counts) =
                list_search::count_in_state(connection, dialect, query, *state).await?
            {
                return Ok(counts);
            }
            // Counted by its rows below.
            rows_count(one_state).to_string()
        }
        CountFrom::Rows => rows_count(one_state).to_string(),
    });
    push_states(&mut count, "i.status", query)?;
    push_grouped(&mut count, dialect, query, Access::Any)?;
    if by_rows {
        push_row_filters(&mut count, dialect, query, Access::Any)?;
    }
    if let Some(state) = one_state {
        return count_of_one_state(connection, count, state).await;
    }
    count.push(" GROUP BY i.status");
    fetch_counts(connection, count).await
}

/// The exact count of a list filtered by tenant names (`CountFrom::TenantNames`): the kept
/// counts of the named unions ('union' facet), plus those of the named labels and ids in
/// other unions ('tenant' facet, found by its label and id indexes, migration
/// union_and_type_source_facets). A name that is both a union's and a label counts each
/// investigation once: the second part leaves out the named unions.
async fn count_tenant_names(
    connection: &mut AnyConnection,
    dialect: Dialect,
    query: &InvestigationQuery,
) -> StoreResult<Vec<(InvestigationStatus, u64)>> {
    let names = &query.alert_tenants;
    let mut count = SqlBuilder::new(&format!(
        "SELECT status, CAST(SUM(n) AS BIGINT) AS n FROM (\
         SELECT i.status AS status, i.n AS n FROM {} i WHERE i.facet = 'union' AND ",
        KeptCounts::Facet(Facet::Union).from(dialect, None)
    ));
    push_states(&mut count, "i.status", query)?;
    push_counted(&mut count, dialect, query, Access::Any)?;
    crate::scope::push_union_filter(&mut count, "i.tenant_union_id", &query.scope)?;
    count.push(" AND i.tenant_union_id IN (SELECT id FROM tenant_unions WHERE display_name IN ");
    count.bind_list(names.iter().cloned())?;
    count.push(")");
    // The named labels, then the named ids whose label is not named: each row once. Two
    // parts, not an OR: SQLite, without statistics, read every 'tenant' row of the state
    // through the facet index rather than join the two indexes (0.8 s at a million
    // stored), and is told which index to use.
    for (column, index) in [
        ("tenant_label", "investigation_facet_counts_by_tenant_label"),
        ("tenant_id", "investigation_facet_counts_by_tenant_id"),
    ] {
        count.push(&format!(
            " UNION ALL SELECT i.status AS status, i.n AS n FROM {} i \
             WHERE i.facet = 'tenant' AND i.{column} IN ",
            KeptCounts::Facet(Facet::Tenant).from(dialect, Some(index))
        ));
        count.bind_list(names.iter().cloned())?;
        if column == "tenant_id" {
            count.push(" AND (i.tenant_label IS NULL OR i.tenant_label NOT IN ");
            count.bind_list(names.iter().cloned())?;
            count.push(")");
        }
        count.push(" AND ");
        push_states(&mut count, "i.status", query)?;
        push_counted(&mut count, dialect, query, Access::Any)?;
        crate::scope::push_union_filter(&mut count, "i.tenant_union_id", &query.scope)?;
        count.push(
            " AND i.tenant_union_id NOT IN (SELECT id FROM tenant_unions WHERE display_name IN ",
        );
        count.bind_list(names.iter().cloned())?;
        count.push(")");
    }
    count.push(") AS parts GROUP BY status");
    fetch_counts(connection, count).await
}

/// The counts by state of a statement answering rows of (status, n).
pub(crate) async fn fetch_counts(
    connection: &mut AnyConnection,
    statement: SqlBuilder,
) -> StoreResult<Vec<(InvestigationStatus, u64)>> {
    let mut counts = Vec::new();
    for row in &statement.build().fetch_all(&mut *connection).await.db()? {
        add_count(&mut counts, row)?;
    }
    Ok(counts)
}

/// The start of a statement counting the matching investigations themselves: grouped by
/// state, unless there is `one_state`.
fn rows_count(one_state: Option<InvestigationStatus>) -> &'static str {
    match one_state {
        Some(_) => "SELECT COUNT(*) AS n FROM investigations i WHERE ",
        None => "SELECT i.status AS status, COUNT(*) AS n FROM investigations i WHERE ",
    }
}

/// Microseconds in an hour: the unit of `investigation_hour_counts.hour` (migration 0016).
const HOUR_MICROS: i64 = 3_600_000_000;

/// The exact count of a list filtered by states and an alert-creation range only
/// (`CountFrom::Hours`): the kept counts of the whole hours inside the range, plus the
/// investigations of the partial hours at its ends (or, for a partial hour of more than
/// half an hour, its kept count less the rest of the hour: `rest_of_hour`), in one
/// statement. So the rows read stay under an hour's worth, however the range is cut.
/// `None` when the range lies inside one hour, which is counted by its rows.
async fn count_hours(
    connection: &mut AnyConnection,
    dialect: Dialect,
    query: &InvestigationQuery,
) -> StoreResult<Option<Vec<(InvestigationStatus, u64)>>> {
    let from = query.alert_create.from.map(rows::micros);
    let until = query.alert_create.until.map(rows::micros);
    // The whole hours: each hour h with from <= h * HOUR and (h + 1) * HOUR - 1 <= until.
    let first_hour = from
        .map(|from| from.div_euclid(HOUR_MICROS) + i64::from(from.rem_euclid(HOUR_MICROS) != 0));
    let last_hour = until.map(|until| until.saturating_add(1).div_euclid(HOUR_MICROS) - 1);
    // Inside one hour, the two partial hours below would be the same hour. Across one
    // hour's end (first == last + 1) they are the hours on either side, and none is whole.
    if let (Some(first), Some(last)) = (first_hour, last_hour)
        && first > last + 1
    {
        return Ok(None);
    }
    let hours = KeptCounts::Hours.from(dialect, None);
    let mut count = SqlBuilder::new(&format!(
        "SELECT status, CAST(SUM(n) AS BIGINT) AS n FROM (\
         SELECT i.status AS status, i.n AS n FROM {hours} i WHERE "
    ));
    push_states(&mut count, "i.status", query)?;
    if let Some(first) = first_hour {
        count.push(" AND i.hour >= ");
        count.bind(first)?;
    }
    if let Some(last) = last_hour {
        count.push(" AND i.hour <= ");
        count.bind(last)?;
    }
    // The partial hours: from `from` to the first whole hour, and after the last one.
    let edges = [
        from.zip(first_hour)
            .map(|(from, first)| (from, first * HOUR_MICROS - 1)),
        until
            .zip(last_hour)
            .map(|(until, last)| ((last + 1) * HOUR_MICROS, until)),
    ];
    for (start, end) in edges
        .into_iter()
        .flatten()
        .filter(|(start, end)| start <= end)
    {
        match rest_of_hour(start, end) {
            // Most of the hour: its kept count, less the rows of the rest of it.
            Some((rest_start, rest_end)) => {
                count.push(&format!(
                    " UNION ALL SELECT i.status AS status, i.n AS n FROM {hours} i WHERE "
                ));
                push_states(&mut count, "i.status", query)?;
                count.push(" AND i.hour = ");
                count.bind(start.div_euclid(HOUR_MICROS))?;
                push_rows_count(&mut count, query, "-COUNT(*)", rest_start, rest_end)?;
            }
            None => push_rows_count(&mut count, query, "COUNT(*)", start, end)?,
        }
    }
    count.push(") AS parts GROUP BY status");
    Ok(Some(fetch_counts(connection, count).await?))
}

/// A branch of `count_hours` counting, per state, the matches created from `start` to
/// `end` (microseconds, inclusive) as `counted` (`COUNT(*)` or its negation).
fn push_rows_count(
    count: &mut SqlBuilder,
    query: &InvestigationQuery,
    counted: &str,
    start: i64,
    end: i64,
) -> StoreResult<()> {
    count.push(&format!(
        " UNION ALL SELECT i.status AS status, {counted} AS n FROM investigations i WHERE "
    ));
    push_states(count, "i.status", query)?;
    push_micros_range(count, "i.alert_create_time", Some(start), Some(end))?;
    count.push(" GROUP BY i.status");
    Ok(())
}

/// For a partial hour at an end of a range (`start` to `end`, inclusive, within one hour
/// and reaching one of its ends) that spans more than half the hour: the rest of that
/// hour. Counting the rest and subtracting it from the hour's kept count reads at most
/// half an hour's rows, where counting the part itself read up to all of them.
fn rest_of_hour(start: i64, end: i64) -> Option<(i64, i64)> {
    let hour_start = start.div_euclid(HOUR_MICROS).saturating_mul(HOUR_MICROS);
    let hour_end = hour_start.saturating_add(HOUR_MICROS - 1);
    if end.saturating_sub(start) < HOUR_MICROS / 2 {
        return None;
    }
    if start == hour_start && end < hour_end {
        Some((end + 1, hour_end))
    } else if end == hour_end && start > hour_start {
        Some((hour_start, start - 1))
    } else {
        None
    }
}

/// The counts by state of a `SELECT COUNT(*)` over one `state`'s matches.
async fn count_of_one_state(
    connection: &mut AnyConnection,
    count: SqlBuilder,
    state: InvestigationStatus,
) -> StoreResult<Vec<(InvestigationStatus, u64)>> {
    let matching: i64 = count
        .build_scalar()
        .fetch_one(&mut *connection)
        .await
        .db()?;
    let matching = u64::try_from(matching).unwrap_or(0);
    Ok(if matching == 0 {
        Vec::new()
    } else {
        vec![(state, matching)]
    })
}

/// Adds a row of (status, n) to the counts by state.
fn add_count(counts: &mut Vec<(InvestigationStatus, u64)>, row: &AnyRow) -> StoreResult<()> {
    let state = rows::parsed(row, "status", InvestigationStatus::parse)?;
    let matching = u64::try_from(rows::int(row, "n")?).unwrap_or(0);
    if matching == 0 {
        return Ok(());
    }
    match counts.iter_mut().find(|(counted, _)| *counted == state) {
        Some((_, count)) => *count += matching,
        None => counts.push((state, matching)),
    }
    Ok(())
}

/// The investigations carrying any of the tag `names` (distinct, at least one), counted
/// without reading the largest tag's rows: its count comes from `investigation_tag_counts`,
/// and only the other tags' rows are read, each counted once and only when it does not
/// carry the largest tag. The cost follows the smaller tags: a common tag with a rare one
/// reads the rare one's few rows, where counting the union's rows read every common one's.
/// Under an alert-creation range the kept counts cannot answer, so each tag's size is
/// counted from its rows inside the range instead (`push_tag_rows`).
async fn count_tag_union(
    connection: &mut AnyConnection,
    dialect: Dialect,
    query: &InvestigationQuery,
    names: &[&str],
) -> StoreResult<Vec<(InvestigationStatus, u64)>> {
    if let ([name], [state], false) = (names, &states(query)[..], query.alert_create.is_open()) {
        // One tag in one state: its rows in the range, counted without grouping
        // (grouping would read each row's state again).
        let mut count = SqlBuilder::new("SELECT COUNT(*) ");
        push_tag_rows(&mut count, dialect, query, &[name])?;
        return count_of_one_state(connection, count, *state).await;
    }
    let sizes = if query.alert_create.is_open() {
        let mut kept = SqlBuilder::new(
            "SELECT i.name AS name, i.status AS status, CAST(SUM(i.n) AS BIGINT) AS n ",
        );
        push_kept_tag_counts(&mut kept, dialect, query, names)?;
        kept.push(" GROUP BY i.name, i.status");
        kept
    } else {
        let mut in_range =
            SqlBuilder::new("SELECT t.name AS name, t.status AS status, COUNT(*) AS n ");
        push_tag_rows(&mut in_range, dialect, query, names)?;
        in_range.push(" GROUP BY t.name, t.status");
        in_range
    };
    let sizes = sizes.build().fetch_all(&mut *connection).await.db()?;
    let mut size_by_name: BTreeMap<String, u64> = BTreeMap::new();
    for row in &sizes {
        let size = u64::try_from(rows::int(row, "n")?).unwrap_or(0);
        *size_by_name.entry(rows::text(row, "name")?).or_default() += size;
    }
    // Ties go to the first name, so that the same query always reads the same rows.
    let Some(largest) = names.iter().copied().max_by_key(|name| {
        (
            size_by_name.get(*name).copied().unwrap_or(0),
            std::cmp::Reverse(*name),
        )
    }) else {
        return Ok(Vec::new());
    };
    let mut counts = Vec::new();
    for row in sizes
        .iter()
        .filter(|row| rows::text(row, "name").is_ok_and(|name| name == largest))
    {
        add_count(&mut counts, row)?;
    }
    let others: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| *name != largest && size_by_name.get(*name).is_some_and(|size| *size > 0))
        .collect();
    if others.is_empty() {
        return Ok(counts);
    }
    let mut rest =
        SqlBuilder::new("SELECT t.status AS status, COUNT(DISTINCT t.investigation_id) AS n ");
    push_tag_rows(&mut rest, dialect, query, &others)?;
    rest.push(
        " AND NOT EXISTS (SELECT 1 FROM investigation_tags largest \
         WHERE largest.investigation_id = t.investigation_id AND largest.name = ",
    );
    rest.bind(largest.to_string())?;
    rest.push(") GROUP BY t.status");
    for row in &rest.build().fetch_all(&mut *connection).await.db()? {
        add_count(&mut counts, row)?;
    }
    Ok(counts)
}

/// `FROM ... WHERE ...` over the kept counts of the tag `names` (alias `i` like the
/// investigations it counts) under the query's states and equality filters; they hold no
/// time. The facet of the filters in `investigation_tag_facet_counts` (migration
/// tag_facet_counts), so that only the filtered values' rows are summed; the combinations
/// of `investigation_tag_counts` (migration 0008) when the filters name more than one of
/// type, source and tenant.
fn push_kept_tag_counts(
    builder: &mut SqlBuilder,
    dialect: Dialect,
    query: &InvestigationQuery,
    names: &[&str],
) -> StoreResult<()> {
    match Facet::of_tag_query(query) {
        Some(facet) => builder.push(&format!(
            "FROM {} i WHERE i.facet = '{}' AND i.name IN ",
            KeptCounts::TagFacet(facet).from(dialect, None),
            facet.name()
        )),
        None => builder.push(&format!(
            "FROM {} i WHERE i.name IN ",
            KeptCounts::TagCombinations.from(dialect, None)
        )),
    };
    builder.bind_list(names.iter().map(|name| name.to_string()))?;
    builder.push(" AND ");
    push_states(builder, "i.status", query)?;
    push_grouped(builder, dialect, query, Access::Any)
}

/// `FROM ... WHERE ...` over the tag rows (alias `t`) of `names` that match the query, all
/// but search (which `count_from` leaves to the rows). A tag row carries copies of its
/// investigation's state and alert creation time (migration 0011), so the index
/// `(name, status, alert_create_time)` finds these rows by itself; the investigations are
/// joined only for the other filters.
fn push_tag_rows(
    builder: &mut SqlBuilder,
    dialect: Dialect,
    query: &InvestigationQuery,
    names: &[&str],
) -> StoreResult<()> {
    let filters = Filters::of(query);
    let joined = filters.grouped() || filters.other_ranges;
    builder.push("FROM investigation_tags t");
    if joined {
        builder.push(" JOIN investigations i ON i.id = t.investigation_id");
    }
    builder.push(" WHERE t.name IN ");
    builder.bind_list(names.iter().map(|name| name.to_string()))?;
    builder.push(" AND ");
    push_states(builder, "t.status", query)?;
    push_range(builder, "t.alert_create_time", query.alert_create)?;
    if joined {
        push_grouped(builder, dialect, query, Access::Any)?;
        push_other_ranges(builder, query)?;
    }
    Ok(())
}

/// Under an alert-creation range that the sort order cannot seek into, the successes, if
/// their matches would be read and sorted, are read one alert day at a time instead
/// (`list_days`), while the page stays within `MAX_DAY_BRANCHES` branches.
async fn split_by_day(
    connection: &mut AnyConnection,
    dialect: Dialect,
    query: &InvestigationQuery,
    matches: &[(InvestigationStatus, u64)],
    branches: Vec<Branch>,
    page_end: u64,
) -> StoreResult<Vec<Branch>> {
    // Only the states and the range filter: every investigation of a whole day matches.
    if !list_days::sorted_per_day(query.sort) || count_from(query) != CountFrom::Hours {
        return Ok(branches);
    }
    let mut split = Vec::with_capacity(branches.len());
    let mut not_yet_split = branches.len();
    for branch in branches {
        not_yet_split -= 1;
        let matching = matches
            .iter()
            .find(|(state, _)| *state == branch.state)
            .map_or(0, |(_, matching)| *matching);
        let room = list_days::MAX_DAY_BRANCHES.saturating_sub(split.len() + not_yet_split);
        let parts = if branch.access == Access::Matches && branch.state == list_days::SPLIT_STATE {
            list_days::day_parts(connection, dialect, query, matching, page_end, room).await?
        } else {
            None
        };
        let Some(parts) = parts else {
            split.push(branch);
            continue;
        };
        split.extend(parts.into_iter().map(|part| Branch {
            access: match part {
                DayPart::Walk(_) => Access::SortOrder,
                DayPart::Read { .. } => Access::Matches,
            },
            day: Some(part),
            ..branch
        }));
    }
    Ok(split)
}

/// The states with matches, each with how its part of the page is read: walking the sort
/// order reads about `page_end * in_state / matches` rows when matches are spread evenly,
/// reading the matches first reads `matches`; whichever is fewer wins. The counts are
/// exact, so this beats both planners' guesses. Time ranges keep the planner's choice
/// when the sort order seeks into them (`sort_seeks_into_range`): matches cluster in time,
/// so they are not spread evenly along any time order. Under a range the sort order cannot
/// seek into, a walk may first pass every investigation outside the range (SQLite walked
/// 800,000 for a two-day range sorted by creation: 1.2 s), so the matches are read first
/// unless even that worst case reads fewer rows. Insight tags inside an alert-creation
/// range (the tag rows find those matches by themselves): the alert-creation order walks
/// from the range's end when the tags are common, and every other case reads the matches.
async fn page_branches(
    connection: &mut AnyConnection,
    dialect: Dialect,
    query: &InvestigationQuery,
    matches: &[(InvestigationStatus, u64)],
    page_end: u64,
) -> StoreResult<(Vec<Branch>, KeptSizes)> {
    let mut kept = KeptSizes::default();
    if needs_state_sizes(query) {
        let mut in_states = SqlBuilder::new(&Facet::All.sum_by_state(dialect));
        push_states(&mut in_states, "i.status", query)?;
        in_states.push(" GROUP BY i.status");
        kept.in_state = sizes_by_state(connection, in_states).await?;
        if tags_in_alert_create_range(query) {
            kept.tagged = tagged_by_state(connection, dialect, query).await?;
        }
    }
    let branches = plan_branches(query, matches, &kept, page_end);
    Ok((branches, kept))
}

/// How many investigations in each state carry any of the query's tags, over all time
/// (an investigation with two of them counts twice: an estimate for `page_branches`).
async fn tagged_by_state(
    connection: &mut AnyConnection,
    dialect: Dialect,
    query: &InvestigationQuery,
) -> StoreResult<Vec<(InvestigationStatus, u128)>> {
    let names: Vec<&str> = query.insight_tag_names.iter().map(String::as_str).collect();
    let mut tagged = SqlBuilder::new("SELECT i.status AS status, CAST(SUM(i.n) AS BIGINT) AS n ");
    push_kept_tag_counts(&mut tagged, dialect, query, &names)?;
    tagged.push(" GROUP BY i.status");
    sizes_by_state(connection, tagged).await
}

/// The (status, n) rows of `statement`, one per state, widened for the page-cost
/// arithmetic (a state without rows has size 0 either way).
async fn sizes_by_state(
    connection: &mut AnyConnection,
    statement: SqlBuilder,
) -> StoreResult<Vec<(InvestigationStatus, u128)>> {
    let counts = fetch_counts(connection, statement).await?;
    Ok(counts
        .into_iter()
        .map(|(state, n)| (state, u128::from(n)))
        .collect())
}

/// The ids of one page, in order. Several states are read as one ordered branch per
/// state, merged: every sort index starts with `status`, so a single statement over
/// `status IN (a, b)` could only sort every match, while each branch walks its index and
/// stops after `page_end` rows.
fn page_query(
    dialect: Dialect,
    query: &InvestigationQuery,
    branches: &[Branch],
    page_end: u64,
) -> StoreResult<SqlBuilder> {
    let columns = sort_columns(query.sort);
    if let [branch] = branches {
        let mut page = SqlBuilder::new("SELECT i.id FROM ");
        push_branch(&mut page, dialect, query, branch)?;
        page.limit_offset(query.limit, query.offset);
        return Ok(page);
    }
    let selected: String = columns
        .iter()
        .map(|column| format!(", i.{column}"))
        .collect();
    let mut page = SqlBuilder::new("SELECT id FROM (");
    for (index, branch) in branches.iter().enumerate() {
        if index > 0 {
            page.push(" UNION ALL ");
        }
        page.push(&format!("SELECT * FROM (SELECT i.id{selected} FROM "));
        push_branch(&mut page, dialect, query, branch)?;
        // Written in, not bound (see `SqlBuilder::limit_offset`).
        page.push(&format!(
            " LIMIT {}) AS state_{index}",
            i64::try_from(page_end).unwrap_or(i64::MAX)
        ));
    }
    page.push(") AS merged");
    push_order(
        &mut page,
        dialect,
        "",
        columns,
        query.direction,
        Access::Any,
    );
    page.limit_offset(query.limit, query.offset);
    Ok(page)
}

/// One state's matches in the sort order: what its rows are read from, its WHERE
/// conditions and ORDER BY.
fn push_branch(
    page: &mut SqlBuilder,
    dialect: Dialect,
    query: &InvestigationQuery,
    branch: &Branch,
) -> StoreResult<()> {
    if branch.access == Access::TagOrder {
        return push_tag_order_branch(page, dialect, query, branch);
    }
    page.push("investigations i WHERE ");
    if let Some(part) = branch.day {
        list_days::push_day_part(page, dialect, query, part)?;
    } else {
        page.push("i.status = ");
        page.bind(branch.state.as_str().to_string())?;
        if let Some(rank) = branch.priority_rank {
            // Always indexable: it is the sort index's second column.
            page.push(" AND i.priority_rank = ");
            page.bind(rank)?;
        }
        push_other_filters(page, dialect, query, branch.access)?;
    }
    let columns = sort_columns(query.sort);
    push_order(page, dialect, "i.", columns, query.direction, branch.access);
    Ok(())
}

/// A branch read from the rows of the query's one insight tag (`Access::TagOrder`): the
/// tag's index walked from the state (and the alert-creation range's end) in the
/// alert-creation order, each row's investigation tested against the other filters. The
/// tag rows drive the join (CROSS JOIN fixes SQLite's order; PostgreSQL plans it itself),
/// and the order is the tag rows' own copies of the alert time, then the id.
fn push_tag_order_branch(
    page: &mut SqlBuilder,
    dialect: Dialect,
    query: &InvestigationQuery,
    branch: &Branch,
) -> StoreResult<()> {
    // `walks_one_tag`: one name, however often repeated.
    let Some(name) = query.insight_tag_names.first() else {
        return Err(sleuth_store::StoreError::internal(
            "a tag-order page needs an insight tag",
        ));
    };
    page.push(
        "investigation_tags t CROSS JOIN investigations i \
         WHERE i.id = t.investigation_id AND t.name = ",
    );
    page.bind(name.clone())?.push(" AND t.status = ");
    page.bind(branch.state.as_str().to_string())?;
    push_range(page, "t.alert_create_time", query.alert_create)?;
    page.push(" AND i.status = ");
    page.bind(branch.state.as_str().to_string())?;
    push_other_filters(page, dialect, query, branch.access)?;
    let direction = match query.direction {
        SortDirection::Ascending => "ASC",
        SortDirection::Descending => "DESC",
    };
    page.push(&format!(
        " ORDER BY t.alert_create_time {direction}, t.investigation_id {direction}"
    ));
    Ok(())
}

/// Every filter but the states, each as ` AND ...`.
pub(crate) fn push_other_filters(
    builder: &mut SqlBuilder,
    dialect: Dialect,
    query: &InvestigationQuery,
    access: Access,
) -> StoreResult<()> {
    push_grouped(builder, dialect, query, access)?;
    push_row_filters(builder, dialect, query, access)
}

/// `column IN (...)` for the listed states (`column` is `i.status` but for tag rows):
/// always usable by an index, since every sort index starts with it.
fn push_states(
    builder: &mut SqlBuilder,
    column: &str,
    query: &InvestigationQuery,
) -> StoreResult<()> {
    builder.push(&format!("{column} IN "));
    builder.bind_list(
        states(query)
            .into_iter()
            .map(|state| state.as_str().to_string()),
    )?;
    Ok(())
}

/// Filters on the columns of `investigation_counts`, each as ` AND ...`.
fn push_grouped(
    builder: &mut SqlBuilder,
    dialect: Dialect,
    query: &InvestigationQuery,
    access: Access,
) -> StoreResult<()> {
    if !query.alert_tenants.is_empty() {
        let tenants = &query.alert_tenants;
        builder.push(&format!(
            " AND ({} IN ",
            column(dialect, access, "tenant_label")
        ));
        builder.bind_list(tenants.iter().cloned())?;
        builder.push(&format!(" OR {} IN ", column(dialect, access, "tenant_id")));
        builder.bind_list(tenants.iter().cloned())?;
        builder.push(&format!(
            " OR {} IN (SELECT id FROM tenant_unions WHERE display_name IN ",
            column(dialect, access, "tenant_union_id")
        ));
        builder.bind_list(tenants.iter().cloned())?;
        builder.push("))");
    }
    push_any_of(
        builder,
        &column(dialect, access, "alert_type"),
        &query.alert_types,
    )?;
    push_any_of(
        builder,
        &column(dialect, access, "direct_source_label"),
        &query.direct_source_labels,
    )?;
    push_counted(builder, dialect, query, access)?;
    if let Some(tenant_id) = &query.tenant_id {
        builder.push(&format!(" AND {} = ", column(dialect, access, "tenant_id")));
        builder.bind(tenant_id.clone())?;
    }
    if let Some(key) = &query.tenant_integration_key {
        builder.push(&format!(
            " AND {} = ",
            column(dialect, access, "tenant_integration_key")
        ));
        builder.bind(key.clone())?;
    }
    // The caller's tenant unions: a column of the kept counts too, so every way of
    // counting applies it.
    crate::scope::push_union_filter(
        builder,
        &column(dialect, access, "tenant_union_id"),
        &query.scope,
    )
}

/// The priorities and stop reasons, each as ` AND ...`: columns of every kept count.
fn push_counted(
    builder: &mut SqlBuilder,
    dialect: Dialect,
    query: &InvestigationQuery,
    access: Access,
) -> StoreResult<()> {
    if !query.priorities.is_empty() {
        let named: Vec<&'static str> = query
            .priorities
            .iter()
            .flatten()
            .map(|priority| Priority::as_str(*priority))
            .collect();
        let priority = column(dialect, access, "priority");
        builder.push(" AND (");
        if named.is_empty() {
            builder.push("1 = 0");
        } else {
            builder.push(&format!("{priority} IN "));
            builder.bind_list(named.into_iter().map(str::to_string))?;
        }
        if query.priorities.contains(&None) {
            builder.push(&format!(" OR {priority} IS NULL"));
        }
        builder.push(")");
    }
    if !query.stopped_reasons.is_empty() {
        let canceled: Vec<&'static str> = query
            .stopped_reasons
            .iter()
            .filter_map(|reason| match reason {
                StopReason::Canceled(canceled) => Some(canceled.as_str()),
                StopReason::Error => None,
            })
            .collect();
        let canceled_column = column(dialect, access, "canceled");
        builder.push(" AND (");
        if canceled.is_empty() {
            builder.push("1 = 0");
        } else {
            builder.push(&format!("{canceled_column} IN "));
            builder.bind_list(canceled.into_iter().map(str::to_string))?;
        }
        if query.stopped_reasons.contains(&StopReason::Error) {
            builder.push(&format!(
                " OR (i.status = 'error' AND {canceled_column} IS NULL)"
            ));
        }
        builder.push(")");
    }
    Ok(())
}

/// Filters that need the investigations' own rows: time ranges, insight tags, search.
fn push_row_filters(
    builder: &mut SqlBuilder,
    dialect: Dialect,
    query: &InvestigationQuery,
    access: Access,
) -> StoreResult<()> {
    push_range(builder, "i.alert_create_time", query.alert_create)?;
    push_other_ranges(builder, query)?;
    if !query.insight_tag_names.is_empty() && access != Access::TagOrder {
        // Under `Access::TagOrder` the page is read from the tag's own rows (`push_branch`).
        // Walking the sort order probes the tag table's key (name, investigation) once per
        // investigation walked; otherwise the tagged investigations are read first. Before
        // walking at all, SQLite would read every investigation carrying the tag into a
        // temporary index for an uncorrelated `IN`, and into a Bloom filter for a plain
        // `EXISTS`, which it turns into a join; the `LIMIT 1`
        // keeps the subquery correlated. PostgreSQL ignores it and plans a semi-join.
        if access == Access::SortOrder {
            builder.push(
                " AND EXISTS (SELECT 1 FROM investigation_tags t \
                 WHERE t.investigation_id = i.id AND t.name IN ",
            );
            builder.bind_list(query.insight_tag_names.iter().cloned())?;
            builder.push(" LIMIT 1)");
        } else if query.alert_create.is_open() {
            // Only the name, so that the one index that serves each investigation's check is
            // the key (name, investigation). With the state as well, PostgreSQL without
            // statistics (a database nothing has analysed yet) took the state index for
            // the inner side of a nested loop and read every tagged investigation in the
            // state again for each investigation of the other filters. The state is
            // filtered on the investigation itself.
            builder.push(
                " AND i.id IN (SELECT investigation_id FROM investigation_tags WHERE name IN ",
            );
            builder.bind_list(query.insight_tag_names.iter().cloned())?;
            builder.push(")");
        } else {
            // The tag rows' copies of the state and alert time (migration 0011) narrow
            // the tagged investigations in the range down in the index before any is
            // looked up.
            builder.push(
                " AND i.id IN (SELECT investigation_id FROM investigation_tags WHERE name IN ",
            );
            builder.bind_list(query.insight_tag_names.iter().cloned())?;
            builder.push(" AND ");
            push_states(builder, "status", query)?;
            push_range(builder, "alert_create_time", query.alert_create)?;
            builder.push(")");
        }
    }
    if let Some(text) = &query.search {
        let phrases = search_phrases(text);
        if !phrases.is_empty() {
            let parameter = builder.next_parameter();
            builder.push(" AND ");
            builder.push(&if access == Access::SortOrder {
                search::walked_filter_condition(dialect, parameter)
            } else {
                search::filter_condition(dialect, parameter, &column(dialect, access, "id"))
            });
            builder.bind_only(search::match_expression_from_sources(
                dialect,
                &phrases,
                &query.direct_source_labels,
            ))?;
        }
    }
    Ok(())
}

/// The time ranges but the alert-creation one, on the investigations' columns.
fn push_other_ranges(builder: &mut SqlBuilder, query: &InvestigationQuery) -> StoreResult<()> {
    push_range(builder, "i.alert_start_time", query.alert_start)?;
    push_range(builder, "i.generated_time", query.investigation_complete)?;
    push_range(builder, "i.feedback_updated_at", query.feedback_updated)
}

fn push_any_of(builder: &mut SqlBuilder, column: &str, values: &[String]) -> StoreResult<()> {
    if !values.is_empty() {
        builder.push(&format!(" AND {column} IN "));
        builder.bind_list(values.iter().cloned())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rest_of_an_hour_is_counted_for_a_partial_hour_of_more_than_half() {
        let minute = HOUR_MICROS / 60;
        let hour = 491_040 * HOUR_MICROS;
        let end = hour + HOUR_MICROS - 1;
        // From :10 to the hour's end, and from its start to :50.
        assert_eq!(
            rest_of_hour(hour + 10 * minute, end),
            Some((hour, hour + 10 * minute - 1))
        );
        assert_eq!(
            rest_of_hour(hour, hour + 50 * minute - 1),
            Some((hour + 50 * minute, end))
        );
        // Half an hour or less is counted by its own rows.
        assert_eq!(rest_of_hour(hour + 30 * minute, end), None);
        assert_eq!(rest_of_hour(hour + 45 * minute, end), None);
        // Before 1970, hours are cut by floor division as well.
        let ancient = -3 * HOUR_MICROS;
        assert_eq!(
            rest_of_hour(ancient + minute, ancient + HOUR_MICROS - 1),
            Some((ancient, ancient + minute - 1))
        );
    }
}
