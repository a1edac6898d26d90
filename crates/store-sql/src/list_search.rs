//! Counting a search in one state without reading each match's investigation, on SQLite.
//!
//! Among the successes (the list's default state) a search is counted by the search index
//! alone, as the documents that match it and carry a success's mark (`search_marks`). In
//! the other states, and while a database from before the mark is still being marked, it
//! is counted as follows.
//!
//! The search index (FTS5, `investigation_search`) counts the matches of a word in every
//! state without reading one investigation; counting only those in a state looks up each
//! match's investigation for its state, which for a common word at a million stored is
//! over thirty times slower. When the other states hold fewer investigations than the word
//! matches (`list_plan::subtract_other_states`; a list shows successes by default, which
//! nearly every investigation ends as), the count is the matches in every state less the
//! matches among the investigations of the other states; when those hold none (the kept
//! counts say so), that second statement is not even run. That second count reads, state by
//! state, only the matches in the state's span of ids (`count_elsewhere`, planned by
//! `list_plan::count_elsewhere`): jobs are claimed in id order, so the queue is the newest
//! ids and what concluded the oldest, and the search index reads the matches in a range of
//! rowids without the rest, where reading every match of the word into a list grew with
//! the word's matches in the whole store. When the other states hold more investigations
//! than the state itself (`list_plan::count_within_own_span`: the queue's state, or what
//! concluded below a backlog), the matches are counted in the state's own span of ids
//! instead, and the matches in every state are not read at all.
//!
//! PostgreSQL keeps each investigation's search vector on its row: counting the matches in
//! every state reads every matching row just as counting those in the state does, so
//! nothing is gained there and its search is counted by its rows.

use sleuth_domain::InvestigationStatus;
use sleuth_store::{InvestigationQuery, StoreResult, search_phrases};
use sqlx::AnyConnection;

use crate::builder::SqlBuilder;
use crate::list_plan::{
    Elsewhere, ElsewherePart, Facet, StateSpan, count_elsewhere as plan_elsewhere,
    count_within_own_span, next_window, subtract_other_states,
};
use crate::list_sql::{Access, push_order, sort_columns};
use crate::{DbResultExt, Dialect, rows, search, search_marks};

/// The exact count of a search in `state` with no other filter (`CountFrom::Search`), or
/// `None` when it is better counted by its rows.
pub(crate) async fn count_in_state(
    connection: &mut AnyConnection,
    dialect: Dialect,
    query: &InvestigationQuery,
    state: InvestigationStatus,
) -> StoreResult<Option<Vec<(InvestigationStatus, u64)>>> {
    if dialect != Dialect::Sqlite {
        return Ok(None);
    }
    let phrases = search_phrases(query.search.as_deref().unwrap_or_default());
    let expression = search::match_expression(dialect, &phrases);
    if state == InvestigationStatus::Success
        && let Some(in_state) = search_marks::count_successes(connection, &expression).await?
    {
        return Ok(Some(if in_state == 0 {
            Vec::new()
        } else {
            vec![(state, in_state)]
        }));
    }
    let others: Vec<String> = InvestigationStatus::ALL
        .iter()
        .filter(|other| **other != state)
        .map(|other| other.as_str().to_string())
        .collect();
    let mut kept = SqlBuilder::new(&Facet::All.sum_by_state(dialect));
    kept.push("i.status IN ");
    kept.bind_list(
        InvestigationStatus::ALL
            .iter()
            .map(|any| any.as_str().to_string()),
    )?;
    kept.push(" GROUP BY i.status");
    let kept = crate::list::fetch_counts(connection, kept).await?;
    let in_state_total: u64 = kept
        .iter()
        .filter(|(counted, _)| *counted == state)
        .map(|(_, count)| count)
        .sum();
    let in_other_states: u64 = kept
        .iter()
        .filter(|(counted, _)| *counted != state)
        .map(|(_, count)| count)
        .sum();
    if in_state_total == 0 {
        return Ok(Some(Vec::new()));
    }
    if count_within_own_span(in_state_total, in_other_states) {
        let in_state = count_in_own_span(connection, state, &expression).await?;
        return Ok(Some(if in_state == 0 {
            Vec::new()
        } else {
            vec![(state, in_state)]
        }));
    }
    // One read transaction: both counts see the same investigations, so one concluding
    // meanwhile is never counted in neither or both.
    let mut transaction = sqlx::Connection::begin(&mut *connection).await.db()?;
    let everywhere: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM investigation_search WHERE investigation_search MATCH $1",
    )
    .bind(expression.clone())
    .fetch_one(&mut *transaction)
    .await
    .db()?;
    let everywhere = u64::try_from(everywhere).unwrap_or(0);
    if !subtract_other_states(everywhere, in_other_states) {
        return Ok(None);
    }
    let elsewhere = if in_other_states == 0 {
        0
    } else {
        count_elsewhere(&mut transaction, dialect, &others, &expression, everywhere).await?
    };
    transaction.commit().await.db()?;
    let in_state = everywhere.saturating_sub(elsewhere);
    Ok(Some(if in_state == 0 {
        Vec::new()
    } else {
        vec![(state, in_state)]
    }))
}

/// The matches of the search `expression` among the investigations of `state`, read from
/// the search index only within the state's span of ids, each looked up for its state: one
/// statement, so one snapshot. Its cost is the state's investigations (their lowest and
/// highest id, from an index) and the word's matches in their span, never the word's
/// matches in the whole store.
async fn count_in_own_span(
    connection: &mut AnyConnection,
    state: InvestigationStatus,
    expression: &str,
) -> StoreResult<u64> {
    let count: i64 = sqlx::query_scalar(
        "WITH span AS (SELECT MIN(id) AS low, MAX(id) AS high FROM investigations \
         WHERE status = $1) \
         SELECT COUNT(*) FROM investigations i WHERE i.status = $1 \
         AND i.id BETWEEN (SELECT low FROM span) AND (SELECT high FROM span) \
         AND i.id IN (SELECT rowid FROM investigation_search \
         WHERE investigation_search MATCH $2 \
         AND rowid BETWEEN (SELECT low FROM span) AND (SELECT high FROM span))",
    )
    .bind(state.as_str())
    .bind(expression)
    .fetch_one(&mut *connection)
    .await
    .db()?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// The matches of the search `expression` among the investigations of the `others` states,
/// read as `list_plan::count_elsewhere` plans from each state's span of ids: the matches
/// in a state's span (the search index reads a range of rowids alone), each state's
/// investigations looked up one by one, or every match read into a list once.
async fn count_elsewhere(
    connection: &mut AnyConnection,
    dialect: Dialect,
    others: &[String],
    expression: &str,
    everywhere: u64,
) -> StoreResult<u64> {
    let mut bounds = SqlBuilder::new(
        "SELECT i.status AS status, COUNT(*) AS n, MIN(i.id) AS low, MAX(i.id) AS high, \
         (SELECT MAX(id) FROM investigations) AS last_id \
         FROM investigations i WHERE i.status IN ",
    );
    bounds.bind_list(others.iter().cloned())?;
    bounds.push(" GROUP BY i.status");
    let mut spans = Vec::new();
    let mut last_id = 0;
    for row in &bounds.build().fetch_all(&mut *connection).await.db()? {
        last_id = rows::int(row, "last_id")?;
        spans.push(StateSpan {
            state: rows::parsed(row, "status", InvestigationStatus::parse)?,
            investigations: u64::try_from(rows::int(row, "n")?).unwrap_or(0),
            low: rows::int(row, "low")?,
            high: rows::int(row, "high")?,
        });
    }
    let count = match plan_elsewhere(everywhere, last_id, &spans) {
        Elsewhere::EveryMatch => {
            let mut count =
                SqlBuilder::new("SELECT COUNT(*) FROM investigations i WHERE i.status IN ");
            count.bind_list(others.iter().cloned())?;
            let parameter = count.next_parameter();
            count.push(" AND ");
            count.push(&search::filter_condition(dialect, parameter, "i.id"));
            count.bind_only(expression.to_string())?;
            count
        }
        Elsewhere::Parts(parts) if parts.is_empty() => return Ok(0),
        Elsewhere::Parts(parts) => {
            let mut count = SqlBuilder::new("SELECT 0");
            let parameter = count.next_parameter();
            count.bind_only(expression.to_string())?;
            for (state, part) in parts {
                count.push(" + (SELECT COUNT(*) FROM investigations i WHERE i.status = ");
                count.bind(state.as_str().to_string())?;
                match part {
                    ElsewherePart::Range { low, high } => {
                        count.push(" AND i.id BETWEEN ");
                        count.bind(low)?;
                        count.push(" AND ");
                        count.bind(high)?;
                        count.push(&format!(
                            " AND i.id IN (SELECT rowid FROM investigation_search \
                             WHERE investigation_search MATCH ${parameter} AND rowid BETWEEN "
                        ));
                        count.bind(low)?;
                        count.push(" AND ");
                        count.bind(high)?;
                        count.push("))");
                    }
                    ElsewherePart::Probe => {
                        count.push(" AND ");
                        count.push(&search::walked_filter_condition(dialect, parameter));
                        count.push(")");
                    }
                }
            }
            count
        }
    };
    let elsewhere: i64 = count
        .build_scalar()
        .fetch_one(&mut *connection)
        .await
        .db()?;
    Ok(u64::try_from(elsewhere).unwrap_or(0))
}

/// The ids of one page (from `query.offset`, up to `page_end`) of a search in `state` that
/// `list_plan::searched_in_windows` reads in windows, on SQLite: the first `window` rows of
/// the state in the sort order (`None`: all of them), under every filter but the search,
/// are tested against the matches between the lowest and the highest id among them, read
/// once from the search index (a range of rowids: no lookup per investigation). Both
/// bounds matter: with only the lowest, an old window (an ascending sort, or the
/// concluded investigations below a queue of newer ids) read every later match of the
/// word in the store. A window holding fewer than `page_end` matches is followed by one
/// four times as large (`next_window`), up to the whole state: the matches of a window are
/// those of the list up to its last row, so the page is exact however the matches lie in
/// the sort order.
pub(crate) async fn page_in_windows(
    connection: &mut AnyConnection,
    dialect: Dialect,
    query: &InvestigationQuery,
    state: InvestigationStatus,
    in_state: u128,
    mut window: Option<u64>,
    page_end: u64,
) -> StoreResult<Vec<i64>> {
    let phrases = search_phrases(query.search.as_deref().unwrap_or_default());
    let expression =
        search::match_expression_from_sources(dialect, &phrases, &query.direct_source_labels);
    let unsearched = InvestigationQuery {
        search: None,
        ..query.clone()
    };
    let columns = sort_columns(query.sort);
    let written = |rows: u64| i64::try_from(rows).unwrap_or(i64::MAX);
    loop {
        let mut page = SqlBuilder::new("WITH w AS (SELECT i.id AS id");
        for column in columns {
            page.push(&format!(", i.{column} AS {column}"));
        }
        page.push(" FROM investigations i WHERE i.status = ");
        page.bind(state.as_str().to_string())?;
        crate::list::push_other_filters(&mut page, dialect, &unsearched, Access::SortOrder)?;
        push_order(
            &mut page,
            dialect,
            "i.",
            columns,
            query.direction,
            Access::SortOrder,
        );
        if let Some(rows) = window {
            // Written in, not bound (see `SqlBuilder::limit_offset`).
            page.push(&format!(" LIMIT {}", written(rows)));
        }
        page.push(
            ") SELECT w.id FROM w WHERE w.id IN (SELECT rowid FROM investigation_search \
             WHERE investigation_search MATCH ",
        );
        page.bind(expression.clone())?;
        page.push(" AND rowid BETWEEN (SELECT MIN(id) FROM w) AND (SELECT MAX(id) FROM w))");
        push_order(
            &mut page,
            dialect,
            "w.",
            columns,
            query.direction,
            Access::Any,
        );
        page.push(&format!(" LIMIT {}", written(page_end)));
        let ids: Vec<i64> = page.build_scalar().fetch_all(&mut *connection).await.db()?;
        let complete = u64::try_from(ids.len()).unwrap_or(u64::MAX) >= page_end;
        match window {
            Some(rows) if !complete => window = next_window(rows, in_state),
            _ => {
                let offset = usize::try_from(query.offset).unwrap_or(usize::MAX);
                return Ok(ids.into_iter().skip(offset).collect());
            }
        }
    }
}
