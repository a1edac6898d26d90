//! Counting a search in one state without reading each match's investigation, on SQLite.
//!
//! The search index (FTS5, `investigation_search`) counts the matches of a word in every
//! state without reading one investigation; counting only those in a state looks up each
//! match's investigation for its state, which for a common word at a million stored is
//! over thirty times slower. When the other states hold fewer investigations than the word
//! matches (`list_plan::subtract_other_states`; a list shows successes by default, which
//! nearly every investigation ends as), the count is the matches in every state less the
//! matches among the investigations of the other states; when those hold none (the kept
//! counts say so), that second statement is not even run.
//!
//! PostgreSQL keeps each investigation's search vector on its row: counting the matches in
//! every state reads every matching row just as counting those in the state does, so
//! nothing is gained there and its search is counted by its rows.

use sleuth_domain::InvestigationStatus;
use sleuth_store::{InvestigationQuery, StoreResult, search_phrases};
use sqlx::AnyConnection;

use crate::builder::SqlBuilder;
use crate::list_plan::{Facet, subtract_other_states};
use crate::{DbResultExt, Dialect, search};

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
    let others: Vec<String> = InvestigationStatus::ALL
        .iter()
        .filter(|other| **other != state)
        .map(|other| other.as_str().to_string())
        .collect();
    let mut kept = SqlBuilder::new(Facet::All.sum_by_state());
    kept.push("i.status IN ");
    kept.bind_list(others.iter().cloned())?;
    kept.push(" GROUP BY i.status");
    let in_other_states: u64 = crate::list::fetch_counts(connection, kept)
        .await?
        .iter()
        .map(|(_, count)| count)
        .sum();
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
        // The matches read into a list once, then each investigation of the other states
        // looked up in it.
        let mut elsewhere =
            SqlBuilder::new("SELECT COUNT(*) FROM investigations i WHERE i.status IN ");
        elsewhere.bind_list(others)?;
        let parameter = elsewhere.next_parameter();
        elsewhere.push(" AND ");
        elsewhere.push(&search::filter_condition(dialect, parameter, "i.id"));
        elsewhere.bind_only(expression)?;
        let elsewhere: i64 = elsewhere
            .build_scalar()
            .fetch_one(&mut *transaction)
            .await
            .db()?;
        u64::try_from(elsewhere).unwrap_or(0)
    };
    transaction.commit().await.db()?;
    let in_state = everywhere.saturating_sub(elsewhere);
    Ok(Some(if in_state == 0 {
        Vec::new()
    } else {
        vec![(state, in_state)]
    }))
}
