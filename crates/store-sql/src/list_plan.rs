//! The list's planner: from the query and the kept statistics alone, where its count
//! comes from (`count_from`) and how each state's part of its page is read
//! (`plan_branches`, `split_by_priority`). Pure functions, no I/O, each tested by a table
//! of cases; `list.rs` reads the statistics they weigh and writes the SQL they choose.
//!
//! `Filters::of` is the one place that names every field of the query, without `..`: a
//! new filter does not compile until someone decides here which kind it is, and so how
//! a list filtered by it is counted and paged.

use sleuth_domain::{InvestigationStatus, Priority};
use sleuth_store::{InvestigationQuery, SortKey, search_phrases};

use crate::Dialect;
use crate::kept_counts::KeptCounts;
use crate::list_days::DayPart;
use crate::list_sql::Access;
use crate::rows::priority_rank;

/// Which kinds of filter a query has (`Filters::of`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Filters {
    /// Priorities or stop reasons: columns of every kept count, like the state.
    pub(crate) counted: bool,
    pub(crate) types: bool,
    pub(crate) sources: bool,
    /// The caller's tenant unions, when they are not every union.
    pub(crate) scope: bool,
    /// Tenant names (`alert_tenants`): a tenant label, id or union display name.
    pub(crate) tenant_names: bool,
    /// A tenant id or integration key.
    pub(crate) tenant_columns: bool,
    pub(crate) alert_create: bool,
    /// A time range but the alert-creation one (alert start, completion, feedback).
    pub(crate) other_ranges: bool,
    pub(crate) tags: bool,
    /// A search of at least one word (a search of none filters nothing).
    pub(crate) search: bool,
}

impl Filters {
    /// The kinds of filter `query` has. Every field is named: see the module's doc.
    pub(crate) fn of(query: &InvestigationQuery) -> Filters {
        let InvestigationQuery {
            // Every list filters by state; every kept count is per state.
            states: _,
            priorities,
            stopped_reasons,
            alert_create,
            alert_start,
            investigation_complete,
            feedback_updated,
            alert_tenants,
            alert_types,
            direct_source_labels,
            insight_tag_names,
            search,
            tenant_id,
            tenant_integration_key,
            // The caller's tenant unions: a tenant filter like the others.
            scope,
            // The order and the page filter nothing.
            sort: _,
            direction: _,
            limit: _,
            offset: _,
        } = query;
        Filters {
            counted: !priorities.is_empty() || !stopped_reasons.is_empty(),
            types: !alert_types.is_empty(),
            sources: !direct_source_labels.is_empty(),
            scope: !scope.is_all(),
            tenant_names: !alert_tenants.is_empty(),
            tenant_columns: tenant_id.is_some() || tenant_integration_key.is_some(),
            alert_create: !alert_create.is_open(),
            other_ranges: [alert_start, investigation_complete, feedback_updated]
                .iter()
                .any(|range| !range.is_open()),
            tags: !insight_tag_names.is_empty(),
            search: search
                .as_deref()
                .is_some_and(|text| !search_phrases(text).is_empty()),
        }
    }

    /// Any tenant filter, the caller's tenant unions included.
    pub(crate) fn tenant(self) -> bool {
        self.scope || self.tenant_names || self.tenant_columns
    }

    /// Filters on the columns of the kept counts but the state (`list.rs`, `push_grouped`).
    pub(crate) fn grouped(self) -> bool {
        self.counted || self.types || self.sources || self.tenant()
    }

    pub(crate) fn time_ranges(self) -> bool {
        self.alert_create || self.other_ranges
    }

    /// Filters that only the investigations' own rows answer: time ranges, tags, search.
    pub(crate) fn row_filters(self) -> bool {
        self.time_ranges() || self.tags || self.search
    }

    pub(crate) fn beyond_states(self) -> bool {
        self.row_filters() || self.grouped()
    }
}

/// Where the exact count of a list comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CountFrom<'a> {
    /// One facet of `investigation_facet_counts` (migrations facet_counts and
    /// union_and_type_source_facets): every filter is on the state, stop reason, priority
    /// and the columns of one facet (`Facet::counting`), so the rows summed are those of
    /// the filtered values, whatever the number of others.
    Facet(Facet),
    /// Tenant names (`alert_tenants`), perhaps within the caller's scope, and no other
    /// tenant, type or source filter: each name is a tenant label, a tenant id or a union's
    /// name, so the matches are those of the named unions, from the 'union' facet, and
    /// those outside them whose label or id is named, from the 'tenant' facet's rows of
    /// those labels and ids (`count_tenant_names`). The 'tenant' facet alone would read a
    /// row per tenant id of every union named.
    TenantNames,
    /// `investigation_counts` (migration 0007): every filter is on one of its columns, and
    /// no facet holds them together (a tenant with a type or source).
    Combinations,
    /// The tags of these names (distinct), `count_tag_union`: the largest from
    /// `investigation_tag_counts` (migration 0008), or from its rows inside an
    /// alert-creation range (migration 0011); the rows of the others. No search, and no
    /// time range unless the alert-creation one is among them.
    Tags(Vec<&'a str>),
    /// `investigation_hour_counts` (migration 0016) for the whole hours of the
    /// alert-creation range, the rows of its partial hours at either end (`count_hours`):
    /// the states and that range are the only filters.
    Hours,
    /// A search in one state, with no other filter: on SQLite, the search index's count
    /// of the matches in every state, less the matches in the other states when those
    /// hold few investigations (`list_search`, `subtract_other_states`); otherwise the
    /// rows, like `Rows`.
    Search(InvestigationStatus),
    /// The investigations themselves: other time ranges and search need their rows.
    Rows,
}

/// A facet of `investigation_facet_counts`: which of the type, source and tenant columns
/// its rows hold besides the state, stop reason and priority. The tag counts
/// (`investigation_tag_facet_counts`) keep the first four only (`Facet::of_tag_query`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Facet {
    All,
    Type,
    Source,
    /// The tenant union, id, label and integration key.
    Tenant,
    /// The tenant union alone: a caller's scope.
    Union,
    /// The type and the source together.
    TypeSource,
}

impl Facet {
    /// The facet of `investigation_facet_counts` that holds a list's equality filters;
    /// `None` when none holds them together (then only the combinations do). Every kind of
    /// equality filter is named: see the module's doc.
    pub(crate) fn counting(filters: Filters) -> Option<Facet> {
        let Filters {
            types,
            sources,
            scope,
            tenant_names,
            tenant_columns,
            // Every facet holds the state, stop reason and priority.
            counted: _,
            // Not equality filters: `count_from` decides about these first.
            alert_create: _,
            other_ranges: _,
            tags: _,
            search: _,
        } = filters;
        match (types, sources, scope, tenant_names || tenant_columns) {
            (false, false, false, false) => Some(Facet::All),
            (true, false, false, false) => Some(Facet::Type),
            (false, true, false, false) => Some(Facet::Source),
            (true, true, false, false) => Some(Facet::TypeSource),
            (false, false, true, false) => Some(Facet::Union),
            (false, false, _, true) => Some(Facet::Tenant),
            (true, _, true, _) | (true, _, _, true) | (_, true, true, _) | (_, true, _, true) => {
                None
            }
        }
    }

    /// The facet of `investigation_tag_facet_counts` that holds `query`'s equality
    /// filters: it keeps 'all', 'type', 'source' and 'tenant' only; `None` when the filters
    /// name more than one of type, source and tenant.
    pub(crate) fn of_tag_query(query: &InvestigationQuery) -> Option<Facet> {
        let filters = Filters::of(query);
        match (filters.types, filters.sources, filters.tenant()) {
            (false, false, false) => Some(Facet::All),
            (true, false, false) => Some(Facet::Type),
            (false, true, false) => Some(Facet::Source),
            (false, false, true) => Some(Facet::Tenant),
            _ => None,
        }
    }

    /// Every facet of `investigation_facet_counts`.
    pub(crate) const ALL: [Facet; 6] = [
        Facet::All,
        Facet::Type,
        Facet::Source,
        Facet::Tenant,
        Facet::Union,
        Facet::TypeSource,
    ];

    /// The facet's row of a combination (`kept_counts`): its name, the state, stop reason
    /// and priority, the columns it keeps, NULL for the others; in the order of the kept
    /// tables' columns.
    pub(crate) fn projection(self) -> String {
        let kept: &[&str] = match self {
            Facet::All => &[],
            Facet::Type => &["alert_type"],
            Facet::Source => &["direct_source_label"],
            Facet::Tenant => &[
                "tenant_union_id",
                "tenant_id",
                "tenant_label",
                "tenant_integration_key",
            ],
            Facet::Union => &["tenant_union_id"],
            Facet::TypeSource => &["alert_type", "direct_source_label"],
        };
        let columns = [
            "alert_type",
            "direct_source_label",
            "tenant_union_id",
            "tenant_id",
            "tenant_label",
            "tenant_integration_key",
        ]
        .map(|column| match kept.contains(&column) {
            true => column.to_string(),
            false => format!("NULL AS {column}"),
        });
        format!(
            "'{}' AS facet, status, canceled, priority, {}",
            self.name(),
            columns.join(", ")
        )
    }

    /// The facet's name in the counts tables.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Facet::All => "all",
            Facet::Type => "type",
            Facet::Source => "source",
            Facet::Tenant => "tenant",
            Facet::Union => "union",
            Facet::TypeSource => "type_source",
        }
    }

    /// Sums the facet's rows (alias `i`, like the investigations they count) per state;
    /// the filters follow.
    pub(crate) fn sum_by_state(self, dialect: Dialect) -> String {
        format!(
            "SELECT i.status AS status, CAST(SUM(i.n) AS BIGINT) AS n FROM {} i \
             WHERE i.facet = '{}' AND ",
            KeptCounts::Facet(self).from(dialect, None),
            self.name()
        )
    }
}

/// Where the count of `query` comes from: a pure function of the query. Every kind of
/// filter is named, so that a new one does not compile until someone decides how it is
/// counted.
pub(crate) fn count_from(query: &InvestigationQuery) -> CountFrom<'_> {
    let filters = Filters::of(query);
    let Filters {
        // Every kept count is per state, stop reason and priority.
        counted: _,
        // Equality filters: which facet holds them is `Facet::counting`'s decision.
        types: _,
        sources: _,
        scope: _,
        tenant_names,
        tenant_columns,
        alert_create,
        other_ranges,
        tags,
        search,
    } = filters;
    if search {
        let only_search = !filters.grouped() && !tags && !alert_create && !other_ranges;
        return match states(query)[..] {
            [state] if only_search => CountFrom::Search(state),
            _ => CountFrom::Rows,
        };
    }
    if tags && (alert_create || !other_ranges) {
        let mut names: Vec<&str> = query.insight_tag_names.iter().map(String::as_str).collect();
        names.sort_unstable();
        names.dedup();
        return CountFrom::Tags(names);
    }
    if alert_create || other_ranges {
        if !other_ranges && !filters.grouped() {
            return CountFrom::Hours;
        }
        return CountFrom::Rows;
    }
    match Facet::counting(filters) {
        Some(Facet::Tenant) if tenant_names && !tenant_columns => CountFrom::TenantNames,
        Some(facet) => CountFrom::Facet(facet),
        None => CountFrom::Combinations,
    }
}

/// Whether a search in one state is counted as its matches in every state less those in
/// the other states (`list_search`), from the search index's count of the matches in
/// every state and the kept count of the investigations in the other states. Subtracting
/// reads each match once into a list (a fraction of a microsecond) and looks up each
/// investigation of the other states in it; counting the matches in the state by their
/// rows looks up each match's investigation instead (about 2 µs): so subtracting wins
/// whenever the other states hold fewer investigations than there are matches. A pure
/// function, no I/O.
pub(crate) fn subtract_other_states(matches_everywhere: u64, in_other_states: u64) -> bool {
    in_other_states < matches_everywhere
}

/// Whether a search in one state is counted among the state's own investigations, in their
/// span of ids (`list_search::count_in_own_span`), rather than from the matches in every
/// state: when the other states hold more investigations than the state itself (the
/// queue's state, or the concluded ones below a backlog), the matches everywhere, which
/// the other ways read in full, are mostly the other states'. A state with none is not
/// read at all. A pure function, no I/O.
pub(crate) fn count_within_own_span(in_state: u64, in_other_states: u64) -> bool {
    in_other_states > in_state
}

/// The investigations of one other state, as `count_elsewhere` weighs them: how many, and
/// the lowest and highest of their ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StateSpan {
    pub(crate) state: InvestigationStatus,
    pub(crate) investigations: u64,
    pub(crate) low: i64,
    pub(crate) high: i64,
}

/// How the matches of a search among one other state's investigations are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ElsewherePart {
    /// The matches whose ids lie from `low` to `high` (the search index reads a range of
    /// its rowids without the rest), each looked up among the state's investigations.
    Range { low: i64, high: i64 },
    /// Each investigation of the state looked up in the search index.
    Probe,
}

/// How `list_search` counts the matches of a search among the investigations of the other
/// states, the number it subtracts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Elsewhere {
    /// Every match read into a list once, and each investigation of the other states
    /// looked up in it.
    EveryMatch,
    /// State by state.
    Parts(Vec<(InvestigationStatus, ElsewherePart)>),
}

/// A lookup of one investigation in the search index, in matches the index reads instead:
/// 45 µs to 400 µs a lookup (the highest rowids cost most) against about 0.4 µs a match read
/// into a list, on SQLite at 26,000 and at 1,000,000 stored.
const PROBE_COST_IN_MATCHES: u128 = 300;

/// How the matches of a search among the other states' investigations are counted, from
/// the matches in every state, the highest id stored and each other state's `StateSpan`: a
/// pure function, no I/O. Reading every match costs as many reads as there are matches,
/// however few investigations the other states hold. But jobs are claimed in id order, so a
/// state's investigations mostly lie together: the queue is the newest ids, what concluded
/// the oldest; its matches are then those in its span of ids, which the search index reads
/// without the others (about `matches * span / last_id` when matches spread evenly over
/// the ids). A state scattered over every id but with few investigations looks each one
/// up instead. Whichever reads least, unless every match is read anyway.
pub(crate) fn count_elsewhere(
    matches_everywhere: u64,
    last_id: i64,
    spans: &[StateSpan],
) -> Elsewhere {
    let Ok(last_id) = u128::try_from(last_id) else {
        return Elsewhere::EveryMatch;
    };
    let everywhere = u128::from(matches_everywhere);
    if last_id == 0 {
        return Elsewhere::EveryMatch;
    }
    let mut cost: u128 = 0;
    let mut parts = Vec::with_capacity(spans.len());
    for span in spans {
        let investigations = u128::from(span.investigations);
        let width = u128::try_from(span.high.saturating_sub(span.low))
            .unwrap_or(0)
            .saturating_add(1);
        let in_range = everywhere.saturating_mul(width.min(last_id)) / last_id + investigations;
        let probed = investigations.saturating_mul(PROBE_COST_IN_MATCHES);
        let (part, part_cost) = if in_range <= probed {
            (
                ElsewherePart::Range {
                    low: span.low,
                    high: span.high,
                },
                in_range,
            )
        } else {
            (ElsewherePart::Probe, probed)
        };
        cost = cost.saturating_add(part_cost);
        parts.push((span.state, part));
    }
    if cost < everywhere {
        Elsewhere::Parts(parts)
    } else {
        Elsewhere::EveryMatch
    }
}

/// States to list: as asked (each once); by default success only, or error only when the
/// caller asks for stop reasons (stopped investigations are never successes).
pub(crate) fn states(query: &InvestigationQuery) -> Vec<InvestigationStatus> {
    let asked = if query.states.is_empty() && !query.stopped_reasons.is_empty() {
        vec![InvestigationStatus::Error]
    } else {
        query.effective_states()
    };
    let mut states = Vec::with_capacity(asked.len());
    for state in asked {
        if !states.contains(&state) {
            states.push(state);
        }
    }
    states
}

/// One state's part of the page: its state and how its rows are read; with a priority
/// rank, only that rank's part of it (`split_by_priority`); with a day, only that day's
/// part of an alert-creation range (`split_by_day`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Branch {
    pub(crate) state: InvestigationStatus,
    pub(crate) access: Access,
    pub(crate) priority_rank: Option<i64>,
    pub(crate) day: Option<DayPart>,
}

/// Every priority rank, lowest first.
pub(crate) fn priority_ranks() -> [i64; 4] {
    [
        priority_rank(None),
        priority_rank(Some(Priority::Informational)),
        priority_rank(Some(Priority::Notable)),
        priority_rank(Some(Priority::Urgent)),
    ]
}

/// Each state's part of a page read once per priority rank, where the index
/// `(status, priority_rank, alert_create_time, id)` seeks straight to it:
/// - under an alert-creation range, a priority-sorted page: within one rank the order is
///   the alert-creation order, into which the index seeks at the range's end. Read whole,
///   a state's part walked the ranks above the range's matches, or read every
///   investigation in the range and sorted it;
/// - without one, a page in the alert-creation order (the default) filtered by priority:
///   each filtered rank's part is read in the index's own order, 20 rows for a page of 20,
///   where a walk of the state's alert-creation order passed every investigation of the
///   other priorities first (at a million stored, 50 ms for the informational ones, which
///   lie mostly behind the newest).
///
/// Branches that read their matches first gain nothing and stay whole.
pub(crate) fn split_by_priority(query: &InvestigationQuery, branches: Vec<Branch>) -> Vec<Branch> {
    let ranks: Vec<i64> = match query.sort {
        SortKey::Priority if !query.alert_create.is_open() => priority_ranks().to_vec(),
        // A search's walk is read in windows of the state whole (`searched_in_windows`).
        SortKey::AlertCreate
            if query.alert_create.is_open()
                && !query.priorities.is_empty()
                && !Filters::of(query).search =>
        {
            priority_ranks()
                .into_iter()
                .filter(|rank| {
                    query
                        .priorities
                        .iter()
                        .any(|priority| priority_rank(*priority) == *rank)
                })
                .collect()
        }
        _ => return branches,
    };
    branches
        .into_iter()
        .flat_map(|branch| match branch.access {
            Access::Matches | Access::TagOrder => vec![branch],
            Access::Any | Access::SortOrder => ranks
                .iter()
                .map(|rank| Branch {
                    priority_rank: Some(*rank),
                    ..branch
                })
                .collect(),
        })
        .collect()
}

/// The kept counts `plan_branches` weighs, per state: every investigation in the state,
/// and those carrying any of the query's tags (an investigation with two counts twice).
#[derive(Debug, Default)]
pub(crate) struct KeptSizes {
    pub(crate) in_state: Vec<(InvestigationStatus, u128)>,
    pub(crate) tagged: Vec<(InvestigationStatus, u128)>,
}

impl KeptSizes {
    /// The kept count of every investigation in `state` (0 when not read).
    pub(crate) fn size_of(&self, state: InvestigationStatus) -> u128 {
        KeptSizes::of(&self.in_state, state)
    }

    fn of(sizes: &[(InvestigationStatus, u128)], state: InvestigationStatus) -> u128 {
        sizes
            .iter()
            .find(|(sized, _)| *sized == state)
            .map_or(0, |(_, size)| *size)
    }
}

/// Whether `plan_branches` weighs the states' sizes: only when some filter narrows a state,
/// the sort order does not seek into a time range asked for, and the page is not read from
/// one tag's rows (`walks_one_tag`), which reads the page whatever the sizes.
pub(crate) fn needs_state_sizes(query: &InvestigationQuery) -> bool {
    let filters = Filters::of(query);
    let ranged = filters.time_ranges() && !tags_in_alert_create_range(query);
    let seeks_into_range = ranged && sort_seeks_into_range(query);
    !(walks_one_tag(query) || seeks_into_range) && filters.beyond_states()
}

/// How each state's part of the page is read, from the query, the exact `matches` per
/// state and the kept sizes alone: a pure function, no I/O.
pub(crate) fn plan_branches(
    query: &InvestigationQuery,
    matches: &[(InvestigationStatus, u64)],
    kept: &KeptSizes,
    page_end: u64,
) -> Vec<Branch> {
    let tags_in_range = tags_in_alert_create_range(query);
    let tag_walk = walks_one_tag(query);
    let ranged = Filters::of(query).time_ranges() && !tags_in_range;
    let unseekable_range = ranged && !sort_seeks_into_range(query);
    let weighed = needs_state_sizes(query);
    // The filter's own index walks in the sort order: the planner, left free, takes it.
    let own_index = filter_index_is_sort_order(query);
    // A search with a type, source or tenant: their matches need not spread evenly in
    // time (vendor alerts carry their own, older times), so a walk may pass everything
    // newer first, looking each one up in the search index (3.6 s at a million stored for
    // a common word from one source). Their matches are read instead: the search index
    // narrowed to the source's documents (`match_expression_from_sources`), then sorted.
    let filters = Filters::of(query);
    let clustered_search = filters.search && (filters.types || filters.sources || filters.tenant());
    matches
        .iter()
        .map(|(state, matching)| {
            let in_state = KeptSizes::of(&kept.in_state, *state);
            let matching = u128::from(*matching);
            let access = if tag_walk {
                // Every tag row it reads from the range's end is a match: the page and
                // nothing more, where reading the matches reads every one of them.
                Access::TagOrder
            } else if own_index || !weighed {
                Access::Any
            } else if unseekable_range {
                // The worst walk passes every investigation outside the range first.
                let worst_walk = in_state.saturating_sub(matching)
                    + u128::from(page_end) * in_state / matching.max(1);
                if worst_walk < matching {
                    Access::Any
                } else {
                    Access::Matches
                }
            } else if tags_in_range {
                // Only the alert-creation order seeks into the range, once, or once per
                // priority rank (`split_by_priority`). Each walk reads about
                // page_end * in_range / matching rows; with the tags spread evenly in
                // time, in_range / matching is about in_state / tagged.
                let walks = match query.sort {
                    SortKey::AlertCreate => Some(1),
                    SortKey::Priority => Some(priority_ranks().len() as u128),
                    _ => None,
                };
                let tagged = KeptSizes::of(&kept.tagged, *state);
                if walks.is_some_and(|walks| {
                    walks * u128::from(page_end) * in_state < matching * tagged
                }) {
                    Access::SortOrder
                } else {
                    Access::Matches
                }
            } else if clustered_search {
                Access::Matches
            // page_end * in_state / matching < matching, without dividing.
            } else if u128::from(page_end) * in_state < matching * matching {
                Access::SortOrder
            } else {
                Access::Matches
            };
            Branch {
                state: *state,
                access,
                priority_rank: None,
                day: None,
            }
        })
        .collect()
}

/// The state of a search's page that `list_search::page_in_windows` reads: on SQLite, a
/// search in one state whose page walks the sort order (`Access::SortOrder`), whole (not
/// per priority rank or day). Walking it looks each investigation passed up in the search
/// index, 45 µs to 1.5 ms a lookup on SQLite (220 ms for a page of a word in a sixth of
/// 100,000 documents); a window of the sort order is tested against the matches in its span
/// of ids, read once (1.6 ms). A pure function, no I/O.
pub(crate) fn searched_in_windows(
    dialect: Dialect,
    query: &InvestigationQuery,
    branches: &[Branch],
) -> Option<InvestigationStatus> {
    match branches {
        [branch]
            if dialect == Dialect::Sqlite
                && Filters::of(query).search
                && branch.access == Access::SortOrder
                && branch.priority_rank.is_none()
                && branch.day.is_none() =>
        {
            Some(branch.state)
        }
        _ => None,
    }
}

/// The first window of `searched_in_windows`: twice the rows a walk is expected to pass
/// before `page_end` matches when they spread evenly (`page_end * in_state / matching`),
/// and the page itself; `None` (the whole state) when that reaches every investigation in
/// it. A pure function, no I/O.
pub(crate) fn window_rows(page_end: u64, in_state: u128, matching: u64) -> Option<u64> {
    let expected = u128::from(page_end).saturating_mul(in_state) / u128::from(matching.max(1));
    let rows = expected
        .saturating_mul(2)
        .saturating_add(u128::from(page_end));
    whole_state_from(rows, in_state)
}

/// The window after one of `rows` that held fewer than the page's matches: four times as
/// many rows, so that the rows read again stay under a third of the last window; `None`
/// (the whole state) once that reaches every investigation in it.
pub(crate) fn next_window(rows: u64, in_state: u128) -> Option<u64> {
    whole_state_from(u128::from(rows).saturating_mul(4), in_state)
}

fn whole_state_from(rows: u128, in_state: u128) -> Option<u64> {
    if rows >= in_state {
        None
    } else {
        u64::try_from(rows).ok()
    }
}

/// Whether the query's one filter is a single type, source or tenant id and the order is
/// the alert-creation one: that filter's own index, `(column, status, alert_create_time,
/// id)`, is then the sort order of its matches, and the planner, left free, walks it and
/// stops after the page. Walking the state's index instead assumes the matches spread
/// evenly in time; a source whose alerts carry their own, older times (or that stopped
/// sending a month ago) is met only after everything newer: 1.1 s on SQLite at 909,039
/// stored, against 0.1 ms in the source's index.
fn filter_index_is_sort_order(query: &InvestigationQuery) -> bool {
    let Filters {
        counted,
        types,
        sources,
        scope,
        tenant_names,
        tenant_columns,
        alert_create,
        other_ranges,
        tags,
        search,
    } = Filters::of(query);
    let tenant = scope || tenant_names || tenant_columns;
    let single_tenant_id = query.tenant_id.is_some()
        && query.alert_tenants.is_empty()
        && query.tenant_integration_key.is_none()
        && query.scope.is_all();
    let one_indexed_value = match (types, sources, tenant) {
        (true, false, false) => query.alert_types.len() == 1,
        (false, true, false) => query.direct_source_labels.len() == 1,
        (false, false, true) => single_tenant_id,
        _ => false,
    };
    query.sort == SortKey::AlertCreate
        && one_indexed_value
        && !(counted || alert_create || other_ranges || tags || search)
}

/// Whether the sort order's index seeks into the query's time range: its first sort column
/// is the column of a range asked for (the priority order per rank, `split_by_priority`).
fn sort_seeks_into_range(query: &InvestigationQuery) -> bool {
    match query.sort {
        SortKey::AlertCreate | SortKey::Priority => !query.alert_create.is_open(),
        SortKey::AlertStart => !query.alert_start.is_open(),
        SortKey::InvestigationComplete => !query.investigation_complete.is_open(),
        SortKey::InvestigationCreate | SortKey::InvestigationUpdate => false,
    }
}

/// One insight tag (however often named) in the alert-creation order, filtered by nothing
/// else but the states and an alert-creation range: the tag's own index, `(name, status,
/// alert_create_time, investigation)` (migration 0011), holds exactly the matches in that
/// order, so the page is read from the tag's rows (`Access::TagOrder`) whatever the tag's
/// spread in time. With another filter, the tagged investigations that pass it may lie
/// anywhere among the tag's rows (a tag of one source's storm): the usual weighing
/// decides.
pub(crate) fn walks_one_tag(query: &InvestigationQuery) -> bool {
    let filters = Filters::of(query);
    let mut names = query.insight_tag_names.iter();
    let one_name = names
        .next()
        .is_some_and(|first| names.all(|name| name == first));
    one_name
        && query.sort == SortKey::AlertCreate
        && !filters.grouped()
        && !filters.other_ranges
        && !filters.search
}

/// Insight tags with an alert-creation range as the only time range, and no search: the
/// tag rows' copies (migration 0011) find the matches without the investigations.
pub(crate) fn tags_in_alert_create_range(query: &InvestigationQuery) -> bool {
    let filters = Filters::of(query);
    filters.tags && filters.alert_create && !filters.other_ranges && !filters.search
}

#[cfg(test)]
mod tests {
    use super::*;
    use sleuth_store::{StopReason, TimeRange};

    #[test]
    fn a_page_is_read_per_priority_rank_where_the_priority_index_seeks_to_it() {
        let day = TimeRange {
            from: Some(chrono::DateTime::from_timestamp(86_400, 0).unwrap()),
            until: None,
        };
        let walked = |access| {
            vec![Branch {
                state: InvestigationStatus::Success,
                access,
                priority_rank: None,
                day: None,
            }]
        };
        let informational = vec![Some(Priority::Informational)];
        let cases = [
            // (name, query, the branch's access, the ranks read, or None: whole)
            (
                "default order, one priority",
                InvestigationQuery {
                    priorities: informational.clone(),
                    ..InvestigationQuery::default()
                },
                Access::SortOrder,
                Some(vec![1]),
            ),
            (
                "default order, none and urgent",
                InvestigationQuery {
                    priorities: vec![Some(Priority::Urgent), None],
                    ..InvestigationQuery::default()
                },
                Access::Any,
                Some(vec![0, 3]),
            ),
            (
                "default order, no priority filter",
                InvestigationQuery::default(),
                Access::SortOrder,
                None,
            ),
            (
                "default order, one priority, matches read first",
                InvestigationQuery {
                    priorities: informational.clone(),
                    ..InvestigationQuery::default()
                },
                Access::Matches,
                None,
            ),
            (
                "default order, one priority, in a range (its days)",
                InvestigationQuery {
                    priorities: informational.clone(),
                    alert_create: day,
                    ..InvestigationQuery::default()
                },
                Access::SortOrder,
                None,
            ),
            (
                "default order, one priority, a search",
                InvestigationQuery {
                    priorities: informational.clone(),
                    search: Some("beacon".into()),
                    ..InvestigationQuery::default()
                },
                Access::SortOrder,
                None,
            ),
            (
                "another order, one priority",
                InvestigationQuery {
                    priorities: informational.clone(),
                    sort: SortKey::InvestigationUpdate,
                    ..InvestigationQuery::default()
                },
                Access::SortOrder,
                None,
            ),
            (
                "priority order in a range",
                InvestigationQuery {
                    sort: SortKey::Priority,
                    alert_create: day,
                    ..InvestigationQuery::default()
                },
                Access::SortOrder,
                Some(vec![0, 1, 2, 3]),
            ),
            (
                "priority order, no range",
                InvestigationQuery {
                    sort: SortKey::Priority,
                    priorities: informational,
                    ..InvestigationQuery::default()
                },
                Access::SortOrder,
                None,
            ),
        ];
        for (name, query, access, expected) in cases {
            let split = split_by_priority(&query, walked(access));
            let ranks: Vec<Option<i64>> = split.iter().map(|branch| branch.priority_rank).collect();
            let expected: Vec<Option<i64>> = match expected {
                Some(ranks) => ranks.into_iter().map(Some).collect(),
                None => vec![None],
            };
            assert_eq!(ranks, expected, "{name}");
        }
    }

    #[test]
    fn pages_walk_the_sort_order_or_read_the_matches_whichever_reads_fewer() {
        use InvestigationStatus::{Error, Success};
        let day = TimeRange {
            from: Some(chrono::DateTime::from_timestamp(86_400, 0).unwrap()),
            until: Some(chrono::DateTime::from_timestamp(2 * 86_400, 0).unwrap()),
        };
        let one_type = || InvestigationQuery {
            alert_types: vec!["a".into()],
            states: vec![Success, Error],
            ..InvestigationQuery::default()
        };
        let million = vec![(Success, 1_000_000), (Error, 1_000)];
        let kept = |tagged: u128| KeptSizes {
            in_state: million.clone(),
            tagged: vec![(Success, tagged)],
        };
        type Case = (
            &'static str,
            InvestigationQuery,
            Vec<(InvestigationStatus, u64)>,
            u128,
            Vec<Access>,
        );
        let cases: Vec<Case> = vec![
            (
                "states only: the sort order",
                InvestigationQuery::default(),
                vec![(Success, 10)],
                0,
                vec![Access::Any],
            ),
            (
                "a rare type reads its matches; a common one walks",
                InvestigationQuery {
                    sort: SortKey::InvestigationCreate,
                    ..one_type()
                },
                vec![(Success, 10), (Error, 900)],
                0,
                vec![Access::Matches, Access::SortOrder],
            ),
            (
                "one type in the alert-creation order walks the type's own index",
                one_type(),
                vec![(Success, 10), (Error, 900)],
                0,
                vec![Access::Any, Access::Any],
            ),
            (
                "two types do not: their index is in order per type",
                InvestigationQuery {
                    alert_types: vec!["a".into(), "b".into()],
                    ..one_type()
                },
                vec![(Success, 10), (Error, 900)],
                0,
                vec![Access::Matches, Access::SortOrder],
            ),
            (
                "one source and a priority do not: the index does not hold the priority",
                InvestigationQuery {
                    direct_source_labels: vec!["s".into()],
                    priorities: vec![None],
                    states: vec![Success],
                    ..InvestigationQuery::default()
                },
                vec![(Success, 10)],
                0,
                vec![Access::Matches],
            ),
            (
                "a range the sort order seeks into keeps the planner's choice",
                InvestigationQuery {
                    alert_create: day,
                    ..one_type()
                },
                vec![(Success, 10)],
                0,
                vec![Access::Any],
            ),
            (
                "a range it cannot seek into walks only if even the worst walk is shorter",
                InvestigationQuery {
                    feedback_updated: day,
                    ..one_type()
                },
                vec![(Success, 1_000), (Error, 1_000)],
                0,
                vec![Access::Matches, Access::Any],
            ),
            (
                "a common word alone walks the sort order",
                InvestigationQuery {
                    search: Some("powershell".into()),
                    states: vec![Success],
                    sort: SortKey::InvestigationCreate,
                    ..InvestigationQuery::default()
                },
                vec![(Success, 200_000)],
                0,
                vec![Access::SortOrder],
            ),
            (
                "a common word from one source reads its matches",
                InvestigationQuery {
                    search: Some("powershell".into()),
                    direct_source_labels: vec!["s".into()],
                    states: vec![Success],
                    ..InvestigationQuery::default()
                },
                vec![(Success, 200_000)],
                0,
                vec![Access::Matches],
            ),
            (
                "a tag and a source, rare together, read their matches",
                InvestigationQuery {
                    insight_tag_names: vec!["t".into()],
                    direct_source_labels: vec!["s".into()],
                    ..InvestigationQuery::default()
                },
                vec![(Success, 48)],
                100_000,
                vec![Access::Matches],
            ),
            (
                "a tag and a source, common together, walk the sort order",
                InvestigationQuery {
                    insight_tag_names: vec!["t".into()],
                    direct_source_labels: vec!["s".into()],
                    ..InvestigationQuery::default()
                },
                vec![(Success, 20_000)],
                100_000,
                vec![Access::SortOrder],
            ),
            (
                "a tag and a priority are weighed too",
                InvestigationQuery {
                    insight_tag_names: vec!["t".into()],
                    priorities: vec![Some(Priority::Urgent)],
                    ..InvestigationQuery::default()
                },
                vec![(Success, 40)],
                100_000,
                vec![Access::Matches],
            ),
            (
                "one tag alone walks its own rows: the page, nothing more",
                InvestigationQuery {
                    insight_tag_names: vec!["t".into()],
                    ..InvestigationQuery::default()
                },
                vec![(Success, 32_729)],
                32_729,
                vec![Access::TagOrder],
            ),
            (
                "a tag named twice is one tag",
                InvestigationQuery {
                    insight_tag_names: vec!["t".into(), "t".into()],
                    ..InvestigationQuery::default()
                },
                vec![(Success, 30)],
                30,
                vec![Access::TagOrder],
            ),
            (
                "two tags walk the sort order when common",
                InvestigationQuery {
                    insight_tag_names: vec!["t".into(), "u".into()],
                    ..InvestigationQuery::default()
                },
                vec![(Success, 200_000)],
                200_000,
                vec![Access::SortOrder],
            ),
            (
                "a tag in an alert-creation range walks its rows from the range's end",
                InvestigationQuery {
                    insight_tag_names: vec!["t".into()],
                    alert_create: day,
                    ..InvestigationQuery::default()
                },
                vec![(Success, 100)],
                900_000,
                vec![Access::TagOrder],
            ),
            (
                "a tag in it with a rare source reads the matches",
                InvestigationQuery {
                    insight_tag_names: vec!["t".into()],
                    direct_source_labels: vec!["s".into()],
                    alert_create: day,
                    ..InvestigationQuery::default()
                },
                vec![(Success, 10)],
                1_000,
                vec![Access::Matches],
            ),
            (
                "two tags in it walk the alert-creation order when common",
                InvestigationQuery {
                    insight_tag_names: vec!["t".into(), "u".into()],
                    alert_create: day,
                    ..InvestigationQuery::default()
                },
                vec![(Success, 100)],
                900_000,
                vec![Access::SortOrder],
            ),
            (
                "and read their matches when rare",
                InvestigationQuery {
                    insight_tag_names: vec!["t".into(), "u".into()],
                    alert_create: day,
                    ..InvestigationQuery::default()
                },
                vec![(Success, 100)],
                1_000,
                vec![Access::Matches],
            ),
            (
                "tags in a range under an order that cannot seek read their matches",
                InvestigationQuery {
                    insight_tag_names: vec!["t".into()],
                    alert_create: day,
                    sort: SortKey::InvestigationCreate,
                    ..InvestigationQuery::default()
                },
                vec![(Success, 100)],
                900_000,
                vec![Access::Matches],
            ),
        ];
        for (name, query, matches, tagged, expected) in cases {
            let planned: Vec<Access> = plan_branches(&query, &matches, &kept(tagged), 50)
                .iter()
                .map(|branch| branch.access)
                .collect();
            assert_eq!(planned, expected, "{name}");
        }
    }

    #[test]
    fn counts_come_from_the_fewest_kept_rows_the_filters_allow() {
        let day = TimeRange {
            from: Some(chrono::DateTime::from_timestamp(86_400, 0).unwrap()),
            until: Some(chrono::DateTime::from_timestamp(2 * 86_400, 0).unwrap()),
        };
        let text = |values: &[&str]| values.iter().map(|v| v.to_string()).collect::<Vec<_>>();
        let base = InvestigationQuery::default;
        let cases: Vec<(&str, InvestigationQuery, CountFrom<'static>)> = vec![
            ("default", base(), CountFrom::Facet(Facet::All)),
            (
                "states, priorities and stop reasons",
                InvestigationQuery {
                    states: vec![InvestigationStatus::Error, InvestigationStatus::Success],
                    priorities: vec![Some(Priority::Urgent), None],
                    stopped_reasons: vec![StopReason::Error],
                    ..base()
                },
                CountFrom::Facet(Facet::All),
            ),
            (
                "types",
                InvestigationQuery {
                    alert_types: text(&["a", "b"]),
                    priorities: vec![None],
                    ..base()
                },
                CountFrom::Facet(Facet::Type),
            ),
            (
                "sources",
                InvestigationQuery {
                    direct_source_labels: text(&["EDR"]),
                    ..base()
                },
                CountFrom::Facet(Facet::Source),
            ),
            (
                "every tenant filter",
                InvestigationQuery {
                    alert_tenants: text(&["acme"]),
                    tenant_id: Some("t".into()),
                    tenant_integration_key: Some("k".into()),
                    ..base()
                },
                CountFrom::Facet(Facet::Tenant),
            ),
            (
                "tenant names: their unions, and their labels and ids outside those",
                InvestigationQuery {
                    alert_tenants: text(&["acme", "Default"]),
                    priorities: vec![None],
                    ..base()
                },
                CountFrom::TenantNames,
            ),
            (
                "tenant names within a scope",
                InvestigationQuery {
                    alert_tenants: text(&["acme"]),
                    scope: sleuth_store::TenantScope::unions([2]),
                    ..base()
                },
                CountFrom::TenantNames,
            ),
            (
                "tenant names and a tenant id",
                InvestigationQuery {
                    alert_tenants: text(&["acme"]),
                    tenant_id: Some("t".into()),
                    ..base()
                },
                CountFrom::Facet(Facet::Tenant),
            ),
            (
                "tenant names and a type",
                InvestigationQuery {
                    alert_tenants: text(&["acme"]),
                    alert_types: text(&["a"]),
                    ..base()
                },
                CountFrom::Combinations,
            ),
            (
                "a tenant scope: the unions alone",
                InvestigationQuery {
                    scope: sleuth_store::TenantScope::unions([2]),
                    ..base()
                },
                CountFrom::Facet(Facet::Union),
            ),
            (
                "a tenant scope and a tenant id",
                InvestigationQuery {
                    scope: sleuth_store::TenantScope::unions([2]),
                    tenant_id: Some("t".into()),
                    ..base()
                },
                CountFrom::Facet(Facet::Tenant),
            ),
            (
                "a tenant scope and a source",
                InvestigationQuery {
                    scope: sleuth_store::TenantScope::unions([2]),
                    direct_source_labels: text(&["EDR"]),
                    ..base()
                },
                CountFrom::Combinations,
            ),
            (
                "a tenant scope and a type",
                InvestigationQuery {
                    scope: sleuth_store::TenantScope::unions([2]),
                    alert_types: text(&["a"]),
                    ..base()
                },
                CountFrom::Combinations,
            ),
            (
                "types and sources",
                InvestigationQuery {
                    alert_types: text(&["a", "b"]),
                    direct_source_labels: text(&["EDR"]),
                    priorities: vec![None],
                    ..base()
                },
                CountFrom::Facet(Facet::TypeSource),
            ),
            (
                "type, source and tenant",
                InvestigationQuery {
                    alert_types: text(&["a"]),
                    direct_source_labels: text(&["EDR"]),
                    alert_tenants: text(&["acme"]),
                    ..base()
                },
                CountFrom::Combinations,
            ),
            (
                "type and tenant",
                InvestigationQuery {
                    alert_types: text(&["a"]),
                    tenant_id: Some("t".into()),
                    ..base()
                },
                CountFrom::Combinations,
            ),
            (
                "alert-creation range",
                InvestigationQuery {
                    alert_create: day,
                    ..base()
                },
                CountFrom::Hours,
            ),
            (
                "alert-creation range and a type",
                InvestigationQuery {
                    alert_create: day,
                    alert_types: text(&["a"]),
                    ..base()
                },
                CountFrom::Rows,
            ),
            (
                "another range",
                InvestigationQuery {
                    feedback_updated: day,
                    ..base()
                },
                CountFrom::Rows,
            ),
            (
                "tags, repeated",
                InvestigationQuery {
                    insight_tag_names: text(&["b", "a", "b"]),
                    alert_types: text(&["a"]),
                    ..base()
                },
                CountFrom::Tags(vec!["a", "b"]),
            ),
            (
                "tags under an alert-creation range",
                InvestigationQuery {
                    insight_tag_names: text(&["a"]),
                    alert_create: day,
                    ..base()
                },
                CountFrom::Tags(vec!["a"]),
            ),
            (
                "tags under another range",
                InvestigationQuery {
                    insight_tag_names: text(&["a"]),
                    alert_start: day,
                    ..base()
                },
                CountFrom::Rows,
            ),
            (
                "search",
                InvestigationQuery {
                    search: Some("mimikatz".into()),
                    ..base()
                },
                CountFrom::Search(InvestigationStatus::Success),
            ),
            (
                "search in one state, named twice",
                InvestigationQuery {
                    search: Some("mimikatz".into()),
                    states: vec![InvestigationStatus::Error, InvestigationStatus::Error],
                    ..base()
                },
                CountFrom::Search(InvestigationStatus::Error),
            ),
            (
                "search in two states",
                InvestigationQuery {
                    search: Some("mimikatz".into()),
                    states: vec![InvestigationStatus::Error, InvestigationStatus::Success],
                    ..base()
                },
                CountFrom::Rows,
            ),
            (
                "search and a priority",
                InvestigationQuery {
                    search: Some("mimikatz".into()),
                    priorities: vec![None],
                    ..base()
                },
                CountFrom::Rows,
            ),
            (
                "search and tags",
                InvestigationQuery {
                    search: Some("mimikatz".into()),
                    insight_tag_names: text(&["a"]),
                    ..base()
                },
                CountFrom::Rows,
            ),
            (
                "search of no words",
                InvestigationQuery {
                    search: Some(" !! ".into()),
                    alert_types: text(&["a"]),
                    ..base()
                },
                CountFrom::Facet(Facet::Type),
            ),
        ];
        for (name, query, expected) in &cases {
            assert_eq!(&count_from(query), expected, "{name}");
        }
    }

    #[test]
    fn a_search_subtracts_the_other_states_only_when_they_hold_few_investigations() {
        let cases = [
            // (matches in every state, investigations in the other states, subtract)
            (170_000, 500, true),
            (170_000, 169_999, true),
            (170_000, 170_000, false),
            (10, 0, true),
            (0, 0, false),
            (1_000, 5_000, false),
            (u64::MAX, u64::MAX, false),
        ];
        for (matches, others, expected) in cases {
            assert_eq!(
                subtract_other_states(matches, others),
                expected,
                "{matches} matches, {others} in the other states"
            );
        }
    }

    #[test]
    fn a_search_is_counted_in_its_own_state_when_the_others_hold_more() {
        let cases = [
            // (investigations in the state, in the other states, within its own span)
            // The concluded below a backlog of a million.
            (114_000, 882_000, true),
            // The queue of a store nearly all concluded.
            (300, 999_700, true),
            // Successes, nearly everything.
            (999_700, 300, false),
            (500, 500, false),
            (0, 0, false),
        ];
        for (in_state, others, expected) in cases {
            assert_eq!(
                count_within_own_span(in_state, others),
                expected,
                "{in_state} in the state, {others} in the other states"
            );
        }
    }

    #[test]
    fn the_other_states_matches_are_read_by_their_spans_of_ids_or_every_match() {
        use InvestigationStatus::{Error, Loading, NotAsked, Success};
        let span = |state, investigations, low, high| StateSpan {
            state,
            investigations,
            low,
            high,
        };
        let range = |low, high| ElsewherePart::Range { low, high };
        let cases = vec![
            (
                "a queue of a million, its oldest concluded: their spans",
                205_000,
                1_000_000,
                vec![
                    span(Success, 5_400, 1, 5_400),
                    span(Error, 100, 5_401, 5_500),
                ],
                Elsewhere::Parts(vec![
                    (Success, range(1, 5_400)),
                    (Error, range(5_401, 5_500)),
                ]),
            ),
            (
                "drained: the queue's span, and a few scattered errors looked up",
                200_000,
                1_000_000,
                vec![
                    span(NotAsked, 2_000, 998_001, 1_000_000),
                    span(Loading, 16, 997_990, 998_005),
                    span(Error, 50, 120, 999_000),
                ],
                Elsewhere::Parts(vec![
                    (NotAsked, range(998_001, 1_000_000)),
                    (Loading, range(997_990, 998_005)),
                    (Error, ElsewherePart::Probe),
                ]),
            ),
            (
                "many errors over every id: every match",
                200_000,
                1_000_000,
                vec![
                    span(NotAsked, 2_000, 998_001, 1_000_000),
                    span(Error, 10_000, 1, 999_000),
                ],
                Elsewhere::EveryMatch,
            ),
            (
                "a few matches, and a state over every id: every match",
                30,
                1_000_000,
                vec![span(Error, 2, 1, 1_000_000)],
                Elsewhere::EveryMatch,
            ),
            (
                "a small store: the span",
                26,
                28,
                vec![span(NotAsked, 2, 27, 28)],
                Elsewhere::Parts(vec![(NotAsked, range(27, 28))]),
            ),
            ("nothing stored", 10, 0, vec![], Elsewhere::EveryMatch),
            (
                "no other state: nothing to count",
                10,
                100,
                vec![],
                Elsewhere::Parts(vec![]),
            ),
        ];
        for (name, everywhere, last_id, spans, expected) in cases {
            assert_eq!(
                count_elsewhere(everywhere, last_id, &spans),
                expected,
                "{name}"
            );
        }
    }

    #[test]
    fn a_searched_page_is_read_in_windows_that_grow_fourfold_up_to_the_whole_state() {
        let cases = [
            // (page end, in the state, matching, first window)
            (20, 1_000_000, 200_000, Some(220)),
            (20, 1_000_000, 20_000, Some(2_020)),
            (20, 100, 90, Some(64)),
            (20, 50, 45, None),
            (20, 0, 10, None),
            (10_020, 1_000_000, 200_000, Some(110_220)),
            (20, 1_000_000, 0, None),
        ];
        for (page_end, in_state, matching, expected) in cases {
            assert_eq!(
                window_rows(page_end, in_state, matching),
                expected,
                "{page_end} {in_state} {matching}"
            );
        }
        assert_eq!(next_window(220, 1_000_000), Some(880));
        assert_eq!(next_window(300_000, 1_000_000), None);
        assert_eq!(next_window(250_000, 1_000_000), None);
        assert_eq!(next_window(249_999, 1_000_000), Some(999_996));
    }

    #[test]
    fn only_a_sqlite_search_walking_one_state_whole_is_read_in_windows() {
        use InvestigationStatus::{Error, Success};
        let search = InvestigationQuery {
            search: Some("powershell".into()),
            ..InvestigationQuery::default()
        };
        let branch = |state, access, priority_rank| Branch {
            state,
            access,
            priority_rank,
            day: None,
        };
        let walk = branch(Success, Access::SortOrder, None);
        let cases = [
            (
                "one walked state",
                Dialect::Sqlite,
                search.clone(),
                vec![walk],
                Some(Success),
            ),
            (
                "PostgreSQL",
                Dialect::Postgres,
                search.clone(),
                vec![walk],
                None,
            ),
            (
                "no search",
                Dialect::Sqlite,
                InvestigationQuery::default(),
                vec![walk],
                None,
            ),
            (
                "its matches read",
                Dialect::Sqlite,
                search.clone(),
                vec![branch(Success, Access::Matches, None)],
                None,
            ),
            (
                "two states",
                Dialect::Sqlite,
                search.clone(),
                vec![walk, branch(Error, Access::SortOrder, None)],
                None,
            ),
            (
                "one priority rank",
                Dialect::Sqlite,
                search.clone(),
                vec![branch(Success, Access::SortOrder, Some(1))],
                None,
            ),
        ];
        for (name, dialect, query, branches, expected) in cases {
            assert_eq!(
                searched_in_windows(dialect, &query, &branches),
                expected,
                "{name}"
            );
        }
    }
}
