//! Listing investigations: every filter of SPEC's list endpoint, a total order (ties are
//! broken by id, so pages never repeat or skip), and the total count.

use sleuth_domain::{InvestigationStatus, Priority};
use sleuth_store::{
    InvestigationPage, InvestigationQuery, SortDirection, SortKey, StopReason, StoreResult,
    TimeRange, search_phrases,
};
use sqlx::AnyPool;

use crate::builder::SqlBuilder;
use crate::rows::micros;
use crate::{DbResultExt, Dialect, investigations, search};

pub async fn list_investigations(
    pool: &AnyPool,
    dialect: Dialect,
    query: &InvestigationQuery,
) -> StoreResult<InvestigationPage> {
    let mut count = SqlBuilder::new("SELECT COUNT(*) FROM investigations i WHERE ");
    push_filters(&mut count, dialect, query)?;
    let mut page = SqlBuilder::new("SELECT i.id FROM investigations i WHERE ");
    push_filters(&mut page, dialect, query)?;
    push_order(&mut page, dialect, query.sort, query.direction);
    page.limit_offset(query.limit, query.offset);

    // One connection for the three statements; SQLite's WAL and PostgreSQL's MVCC keep a
    // reader from blocking writers meanwhile.
    let mut connection = pool.acquire().await.db()?;
    let total: i64 = count
        .build_scalar()
        .fetch_one(&mut *connection)
        .await
        .db()?;
    let ids: Vec<i64> = page.build_scalar().fetch_all(&mut *connection).await.db()?;
    let items = investigations::fetch_by_ids(&mut connection, &ids).await?;
    Ok(InvestigationPage {
        total: u64::try_from(total).unwrap_or(0),
        items,
    })
}

/// States to list: as asked; by default success only, or error only when the caller asks
/// for stop reasons (stopped investigations are never successes).
fn states(query: &InvestigationQuery) -> Vec<InvestigationStatus> {
    if query.states.is_empty() && !query.stopped_reasons.is_empty() {
        vec![InvestigationStatus::Error]
    } else {
        query.effective_states()
    }
}

fn push_filters(
    builder: &mut SqlBuilder,
    dialect: Dialect,
    query: &InvestigationQuery,
) -> StoreResult<()> {
    builder.push("i.status IN ");
    builder.bind_list(
        states(query)
            .into_iter()
            .map(|state| state.as_str().to_string()),
    )?;
    push_range(builder, "i.alert_create_time", query.alert_create)?;
    push_range(builder, "i.alert_start_time", query.alert_start)?;
    push_range(builder, "i.generated_time", query.investigation_complete)?;
    push_range(builder, "i.feedback_updated_at", query.feedback_updated)?;
    if !query.alert_tenants.is_empty() {
        let tenants = &query.alert_tenants;
        builder.push(" AND (i.tenant_label IN ");
        builder.bind_list(tenants.iter().cloned())?;
        builder.push(" OR i.tenant_id IN ");
        builder.bind_list(tenants.iter().cloned())?;
        builder
            .push(" OR i.tenant_union_id IN (SELECT id FROM tenant_unions WHERE display_name IN ");
        builder.bind_list(tenants.iter().cloned())?;
        builder.push("))");
    }
    push_any_of(builder, "i.alert_type", &query.alert_types)?;
    push_any_of(
        builder,
        "i.direct_source_label",
        &query.direct_source_labels,
    )?;
    if !query.insight_tag_names.is_empty() {
        builder
            .push(" AND i.id IN (SELECT investigation_id FROM investigation_tags WHERE name IN ");
        builder.bind_list(query.insight_tag_names.iter().cloned())?;
        builder.push(")");
    }
    if !query.priorities.is_empty() {
        let named: Vec<&'static str> = query
            .priorities
            .iter()
            .flatten()
            .map(|priority| Priority::as_str(*priority))
            .collect();
        builder.push(" AND (");
        if named.is_empty() {
            builder.push("1 = 0");
        } else {
            builder.push("i.priority IN ");
            builder.bind_list(named.into_iter().map(str::to_string))?;
        }
        if query.priorities.contains(&None) {
            builder.push(" OR i.priority IS NULL");
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
        builder.push(" AND (");
        if canceled.is_empty() {
            builder.push("1 = 0");
        } else {
            builder.push("i.canceled IN ");
            builder.bind_list(canceled.into_iter().map(str::to_string))?;
        }
        if query.stopped_reasons.contains(&StopReason::Error) {
            builder.push(" OR (i.status = 'error' AND i.canceled IS NULL)");
        }
        builder.push(")");
    }
    if let Some(text) = &query.search {
        let phrases = search_phrases(text);
        if !phrases.is_empty() {
            let parameter = builder.next_parameter();
            builder.push(" AND ");
            builder.push(&search::filter_condition(dialect, parameter));
            builder.bind_only(search::match_expression(dialect, &phrases))?;
        }
    }
    if let Some(tenant_id) = &query.tenant_id {
        builder.push(" AND i.tenant_id = ");
        builder.bind(tenant_id.clone())?;
    }
    if let Some(key) = &query.tenant_integration_key {
        builder.push(" AND i.tenant_integration_key = ");
        builder.bind(key.clone())?;
    }
    Ok(())
}

fn push_range(builder: &mut SqlBuilder, column: &str, range: TimeRange) -> StoreResult<()> {
    if let Some(from) = range.from {
        builder.push(&format!(" AND {column} >= "));
        builder.bind(micros(from))?;
    }
    if let Some(until) = range.until {
        builder.push(&format!(" AND {column} <= "));
        builder.bind(micros(until))?;
    }
    Ok(())
}

fn push_any_of(builder: &mut SqlBuilder, column: &str, values: &[String]) -> StoreResult<()> {
    if !values.is_empty() {
        builder.push(&format!(" AND {column} IN "));
        builder.bind_list(values.iter().cloned())?;
    }
    Ok(())
}

/// ORDER BY for a sort key. Nulls (no start time, not yet complete) sort as the smallest
/// value on both databases, as SQLite does natively.
fn push_order(builder: &mut SqlBuilder, dialect: Dialect, key: SortKey, direction: SortDirection) {
    let columns: &[&str] = match key {
        SortKey::AlertCreate => &["i.alert_create_time"],
        SortKey::AlertStart => &["i.alert_start_time"],
        SortKey::InvestigationCreate => &["i.created_at"],
        SortKey::InvestigationComplete => &["i.generated_time"],
        SortKey::InvestigationUpdate => &["i.updated_at"],
        SortKey::Priority => &["i.priority_rank", "i.alert_create_time"],
    };
    let (word, nulls) = match direction {
        SortDirection::Ascending => ("ASC", " NULLS FIRST"),
        SortDirection::Descending => ("DESC", " NULLS LAST"),
    };
    let nulls = if dialect == Dialect::Postgres {
        nulls
    } else {
        ""
    };
    builder.push(" ORDER BY ");
    for column in columns {
        builder.push(&format!("{column} {word}{nulls}, "));
    }
    builder.push(&format!("i.id {word}"));
}
