//! The queue: the investigation list with the API's filters, sorts, search and paging,
//! read with the same parser (`list_query::parse`) and the same scoped store query as
//! `GET /app/api/v1/investigation`, so the page shows exactly what the user's key would
//! list. The form offers the common filters; every other API parameter in the URL
//! (`alert_create_from`, `tenant_id`, `insight_tag_names`, ...) applies as well and is
//! kept by the paging links. Rows are links; the embedded script adds j/k/Enter and a
//! notice when investigations conclude (server-sent events, `events.rs`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use sleuth_domain::{InvestigationStatus, Priority, Role};
use sleuth_store::{InvestigationQuery, InvestigationRecord, SortKey};

use crate::console::pages::{
    api_error_page, html_response, outcome_class, outcome_label, priority_class, query_string,
    shell, time,
};
use crate::console::session::SignedIn;
use crate::extract::QueryPairs;
use crate::list_query;
use crate::state::AppState;

/// The queue's filter form: which values each checkbox group offers.
const STATES: [(&str, &str); 4] = [
    ("success", "Concluded"),
    ("loading", "Running"),
    ("not_asked", "Queued"),
    ("error", "Stopped"),
];
const PRIORITIES: [(&str, &str); 4] = [
    ("urgent", "Urgent"),
    ("notable", "Notable"),
    ("informational", "Informational"),
    ("none", "None"),
];
const SORTS: [(&str, &str); 6] = [
    ("alert_create", "Alert time"),
    ("alert_start", "Activity start"),
    ("inv_create", "Received"),
    ("inv_complete", "Concluded"),
    ("inv_update", "Updated"),
    ("priority", "Priority"),
];

pub(crate) async fn page(
    State(state): State<AppState>,
    signed_in: SignedIn,
    pairs: QueryPairs,
) -> Response {
    // An empty form field means "no filter", as it does for the API's single values.
    let pairs = QueryPairs(
        pairs
            .0
            .into_iter()
            .filter(|(_, value)| !value.is_empty())
            .collect(),
    );
    let caller = signed_in.caller();
    if let Err(error) = caller.require(Role::RestrictedReadOnly) {
        return api_error_page(error);
    }
    let (listed, problem) = match list_query::parse(&pairs) {
        Ok(mut query) => {
            query.scope = caller.scope();
            match state.store() {
                Ok(store) => match store.list_investigations(&query).await {
                    Ok(page) => (Some((query, page)), None),
                    Err(error) => return api_error_page(error.into()),
                },
                Err(error) => return api_error_page(error),
            }
        }
        Err(error) => (None, Some(error.message)),
    };
    let status = if problem.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    let body = html! {
        section.queue {
            h1 { "Queue" }
            (filter_form(&pairs))
            p #live.live hidden data-stream="/console/events" {
                span #live-count { "0" } " new investigations concluded. "
                a href="" #live-refresh { "Refresh" }
            }
            @if let Some(problem) = &problem {
                p.problem #queue-problem role="alert" { (problem) }
            }
            @if let Some((query, page)) = &listed {
                (table(&page.items))
                (pager(&pairs, query, page.total, page.items.len()))
            }
        }
    };
    html_response(status, shell("Queue", Some(&signed_in), body))
}

fn checked(pairs: &QueryPairs, name: &str, value: &str) -> bool {
    pairs.all(name).any(|sent| sent == value)
}

fn filter_form(pairs: &QueryPairs) -> Markup {
    let sort = pairs.one("sort_type").unwrap_or("alert_create");
    let ascending = pairs.one("sort_dir") == Some("asc");
    html! {
        form #filters.filters method="get" action="/" {
            label.search { "Search"
                input #search type="search" name="search" value=(pairs.one("search").unwrap_or("")) placeholder="Words, an address, a host, a user";
            }
            fieldset { legend { "State" }
                @for (value, label) in STATES {
                    label { input type="checkbox" name="investigation_state" value=(value) checked[checked(pairs, "investigation_state", value)]; (label) }
                }
            }
            fieldset { legend { "Priority" }
                @for (value, label) in PRIORITIES {
                    label { input type="checkbox" name="priority_statuses" value=(value) checked[checked(pairs, "priority_statuses", value)]; (label) }
                }
            }
            label { "Source" input #source type="text" name="direct_source_labels" value=(pairs.one("direct_source_labels").unwrap_or("")); }
            label { "Alert type" input type="text" name="alert_types" value=(pairs.one("alert_types").unwrap_or("")); }
            label { "From" input type="date" name="alert_create_from" value=(pairs.one("alert_create_from").unwrap_or("")); }
            label { "Until" input type="date" name="alert_create_until" value=(pairs.one("alert_create_until").unwrap_or("")); }
            label { "Sort"
                select #sort name="sort_type" {
                    @for (value, label) in SORTS {
                        option value=(value) selected[sort == value] { (label) }
                    }
                }
            }
            label { "Order"
                select #sort-dir name="sort_dir" {
                    option value="desc" selected[!ascending] { "Newest / highest first" }
                    option value="asc" selected[ascending] { "Oldest / lowest first" }
                }
            }
            button #apply type="submit" { "Apply" }
            a href="/" { "Clear" }
        }
    }
}

fn status_label(record: &InvestigationRecord) -> &'static str {
    match record.status {
        InvestigationStatus::Success => "Concluded",
        InvestigationStatus::Loading => "Running",
        InvestigationStatus::NotAsked => "Queued",
        InvestigationStatus::Error => "Stopped",
    }
}

fn table(items: &[InvestigationRecord]) -> Markup {
    html! {
        @if items.is_empty() {
            p #empty { "No investigation matches." }
        } @else {
            table #queue-table.queue-table {
                thead { tr { th { "#" } th { "Alert" } th { "Verdict" } th { "Priority" } th { "Source" } th { "Alert time" } th { "State" } } }
                tbody {
                    @for record in items {
                        @let href = format!("/investigations/{}", record.id);
                        tr.row data-href=(href) {
                            td { (record.id) }
                            td.title { a href=(href) { (record.alert.parsed.title) } }
                            td { span class=(outcome_class(record.outcome)) { (record.outcome.map_or("—", outcome_label)) } }
                            td { span class=(priority_class(record.priority)) { (record.priority.map_or("—", Priority::as_str)) } }
                            td { (record.alert.parsed.direct_source_label) }
                            td { (time(&record.alert.parsed.create_time)) }
                            td { (status_label(record)) }
                        }
                    }
                }
            }
        }
    }
}

/// The link to the same list at another offset.
fn at_offset(pairs: &QueryPairs, offset: u64) -> String {
    let offset = offset.to_string();
    let kept = pairs
        .0
        .iter()
        .filter(|(name, _)| name != "offset")
        .map(|(name, value)| (name.as_str(), value.as_str()));
    format!(
        "/?{}",
        query_string(kept.chain([("offset", offset.as_str())]))
    )
}

fn pager(pairs: &QueryPairs, query: &InvestigationQuery, total: u64, shown: usize) -> Markup {
    let first = query.offset + 1;
    let last = query.offset + shown as u64;
    let limit = u64::from(query.limit);
    let sorted_by = SORTS
        .iter()
        .find(|(value, _)| SortKey::parse(value) == Some(query.sort))
        .map_or("", |(_, label)| label);
    html! {
        nav.pager {
            span #count { @if shown > 0 { (first) "–" (last) " of " } (total) " · sorted by " (sorted_by) }
            @if query.offset > 0 {
                a #previous rel="prev" href=(at_offset(pairs, query.offset.saturating_sub(limit))) { "← Previous" }
            }
            @if last < total {
                a #next rel="next" href=(at_offset(pairs, last)) { "Next →" }
            }
        }
    }
}
