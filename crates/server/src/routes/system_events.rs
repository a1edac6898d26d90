//! System events (DESIGN.md §1's path): every trigger firing, newest first, with filters by
//! trigger name, time and free text over the arguments. Admin only: the arguments carry
//! what admin-only resources hold — API key names and prefixes, users' emails and roles,
//! and whatever an admin passed to a manual response-action run — so a reader who may not
//! see keys, users or response actions may not see their events either. An admin bound to
//! tenant unions sees only the events of investigations in them.

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use sleuth_domain::Role;
use sleuth_store::SystemEventQuery;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::dto::system_event::{SystemEventDto, SystemEventPageDto};
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::QueryPairs;
use crate::links;
use crate::list_budget::{self, PageRequest};
use crate::list_query::{page_parameters, search_parameter, strings, time_range};
use crate::state::AppState;
use sleuth_jobs::trigger_catalog;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_system_events))
}

/// The list's parameters, for the OpenAPI description.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Read by utoipa's derive for the OpenAPI description only.
pub struct SystemEventListParameters {
    /// A trigger name from the catalog (`GET /app/api/v1/response-actions/triggers`, its
    /// `fn_name`), e.g. `investigation_completed`. Repeatable: any of them.
    trigger_name: Option<Vec<String>>,
    /// Fired at or after (ISO 8601 date or date-time).
    from: Option<String>,
    /// Fired at or before (a date alone means the end of that day).
    until: Option<String>,
    /// Free text: every word must appear in the trigger's arguments (any case).
    search: Option<String>,
    /// Results per page: default 20, at most 1000 (larger values are clamped).
    limit: Option<i64>,
    /// Results to skip.
    offset: Option<i64>,
}

/// List system events: every trigger that fired, scripts or not (admin).
///
/// A page stops early when its events reach `server.max_list_answer_bytes` (always holding
/// at least one). While more follow, `Link: <url>; rel="next"` names the page that starts
/// after its last event (or continue at `offset` plus the events received).
#[utoipa::path(get, path = "/app/api/v1/system-events/list", tag = "system-events",
    params(SystemEventListParameters),
    responses(
        (status = 200, body = SystemEventPageDto, headers(
            ("Link" = String, description = "`<url>; rel=\"next\"` while more events follow (RFC 8288)"),
        )),
        (status = 400, description = "Bad request - invalid input", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn list_system_events(
    State(state): State<AppState>,
    headers: HeaderMap,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<(HeaderMap, Json<SystemEventPageDto>)> {
    caller.require_within_scope(Role::Admin)?;
    // Groups of the catalog tree never fire; only its leaves are triggers. A failed
    // response-action run is an event of its own, outside the catalog.
    let known: Vec<String> = trigger_catalog::catalog()
        .into_iter()
        .filter(|entry| entry.is_scriptable)
        .map(|entry| entry.fn_name)
        .chain([sleuth_store::RESPONSE_ACTION_RUN_FAILED.to_string()])
        .collect();
    let trigger_names = strings(&query, "trigger_name")?;
    if let Some(unknown) = trigger_names.iter().find(|name| !known.contains(name)) {
        return Err(ApiError::invalid_field(
            "trigger_name",
            format!(
                "'{}' is not a trigger; allowed: {}",
                unknown.chars().take(60).collect::<String>(),
                known.join(", ")
            ),
        ));
    }
    let (limit, offset) = page_parameters(&query)?;
    let events_query = SystemEventQuery {
        trigger_names,
        time: time_range(&query, "from", "until")?,
        search: search_parameter(&query)?,
        scope: caller.scope(),
        limit,
        offset,
    };
    let store = state.store()?.as_ref();
    let path = "/app/api/v1/system-events/list";
    let request = PageRequest::new(&state, &headers, path, &query, (limit, offset));
    let (page, next) = list_budget::linked_page(
        &request,
        |rows, offset| {
            let read_query = SystemEventQuery {
                limit: rows,
                offset,
                ..events_query.clone()
            };
            async move {
                let page = store.list_system_events(&read_query).await?;
                Ok((page.total, page.items))
            }
        },
        |event| event.id,
        |event| SystemEventDto::from(event),
    )
    .await?;
    Ok((
        links::paging_headers(next.as_deref(), None),
        Json(SystemEventPageDto {
            count: page.total,
            results: page.items,
        }),
    ))
}
