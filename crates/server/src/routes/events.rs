//! The event stream: `GET /app/api/v1/events/stream`, server-sent events of every trigger
//! that fires (the system events), as they are committed, for the console and for
//! scripts that react without polling.
//!
//! - Each event is `id: <system event id>`, `event: <trigger name>`, and `data:` the
//!   System event shape the list answers. A client that reconnects with `Last-Event-ID`
//!   (browsers' EventSource does so by itself) resumes after that event; without it the
//!   stream starts with the next event. Events arrive in id order and none is skipped
//!   (`event_stream::Horizon`).
//! - Who sees what: every role sees the investigation and review events of the tenant
//!   unions it reaches; administration and manual-run events carry what only admins may
//!   read (keys, users, a run's arguments), so only admins stream them, as the system
//!   events list. `trigger_name` narrows the stream.
//! - At most `server.max_event_streams` streams are open at once (503 `overloaded`
//!   beyond); a comment every 15 s keeps proxies from closing a quiet stream, and the
//!   stream ends when Sleuth shuts down or the database fails (the client resumes).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use sleuth_domain::Role;
use sleuth_jobs::trigger_catalog;
use sleuth_store::{Store, SystemEventRecord, SystemEventsAfter, TenantScope};
use tokio::sync::{OwnedSemaphorePermit, watch};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::dto::system_event::SystemEventDto;
use crate::error::{ApiError, ApiResult, ErrorBody, ErrorCode};
use crate::event_stream::{GAP_PATIENCE, Horizon};
use crate::extract::QueryPairs;
use crate::list_query::strings;
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(stream_events))
}

/// How often an idle stream asks the database for new events.
const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// Events read per query.
const BATCH: u32 = 200;

/// The stream's parameters, for the OpenAPI description.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Read by utoipa's derive for the OpenAPI description only.
pub struct EventStreamParameters {
    /// A trigger name (`GET /app/api/v1/response-actions/triggers`, its `fn_name`).
    /// Repeatable: any of them. Default: every event the caller may see.
    trigger_name: Option<Vec<String>>,
    /// Resume after this event id, for clients that cannot send `Last-Event-ID`.
    after: Option<i64>,
}

/// Stream events (server-sent events): every trigger that fires, as it is committed.
///
/// Resumable: send `Last-Event-ID` (or `after`) with the last id received. Members and
/// readers receive investigation and review events of their tenant unions; admins also
/// receive administration and manual-run events.
#[utoipa::path(get, path = "/app/api/v1/events/stream", tag = "system-events",
    params(EventStreamParameters,
        ("Last-Event-ID" = Option<i64>, Header, description = "Resume after this event id")),
    responses(
        (status = 200, content_type = "text/event-stream",
            description = "`id:` the event id, `event:` the trigger name, `data:` a System event"),
        (status = 400, description = "Bad request - invalid input", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (a trigger only admins stream)", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready, or too many streams open", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn stream_events(
    State(state): State<AppState>,
    headers: HeaderMap,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<Response> {
    open(&state, &headers, &caller, &query).await
}

/// Opens a stream for `caller`, as the API's route and the console's twin
/// (`console::events`) do.
pub(crate) async fn open(
    state: &AppState,
    headers: &HeaderMap,
    caller: &Caller,
    query: &QueryPairs,
) -> ApiResult<Response> {
    caller.require_within_scope(Role::RestrictedReadOnly)?;
    let is_admin = caller.require_within_scope(Role::Admin).is_ok();
    let trigger_names = streamed_triggers(is_admin, strings(query, "trigger_name")?)?;
    let resume_after = resume_position(headers, query)?;
    let store = Arc::clone(state.store()?);
    let position = match resume_after {
        Some(position) => position,
        None => store.newest_system_event_id().await?,
    };
    let Some(permit) = state.event_streams().open() else {
        return Err(ApiError::new(
            ErrorCode::Overloaded,
            format!(
                "{} event streams are open, the most this server keeps \
                 (server.max_event_streams); retry later",
                state.settings().server.max_event_streams
            ),
        ));
    };
    let reader = Reader {
        store,
        horizon: Horizon::new(position, GAP_PATIENCE),
        trigger_names,
        scope: caller.scope(),
        pending: VecDeque::new(),
        closing: state.event_streams().closing(),
        _permit: permit,
    };
    let stream = futures_util::stream::unfold(reader, |mut reader| async move {
        let event = reader.next().await?;
        Some((Ok::<Event, Infallible>(event), reader))
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

/// The trigger names the stream carries: those asked for (each checked), or every event
/// the caller may see. Empty means every trigger (an admin asking for none).
fn streamed_triggers(is_admin: bool, asked: Vec<String>) -> ApiResult<Vec<String>> {
    let catalog = trigger_catalog::catalog();
    let known: Vec<&str> = catalog
        .iter()
        .filter(|entry| entry.is_scriptable)
        .map(|entry| entry.fn_name.as_str())
        .collect();
    // Investigation and review events: what every role reads through the API anyway.
    let for_everyone: Vec<String> = catalog
        .iter()
        .filter(|entry| entry.is_scriptable && !entry.is_runnable)
        .filter(|entry| {
            matches!(
                entry.tree_labels.first().map(String::as_str),
                Some("Investigation" | "Review")
            )
        })
        .map(|entry| entry.fn_name.clone())
        .collect();
    for name in &asked {
        if !known.contains(&name.as_str()) {
            return Err(ApiError::invalid_field(
                "trigger_name",
                format!(
                    "'{}' is not a trigger; allowed: {}",
                    name.chars().take(60).collect::<String>(),
                    known.join(", ")
                ),
            ));
        }
        if !is_admin && !for_everyone.contains(name) {
            return Err(ApiError::new(
                ErrorCode::AccessDenied,
                format!("only admins stream '{name}' events: they carry what only admins read"),
            ));
        }
    }
    Ok(match (asked.is_empty(), is_admin) {
        (false, _) => asked,
        (true, true) => Vec::new(),
        (true, false) => for_everyone,
    })
}

/// Where a resuming client left off: `Last-Event-ID`, else `after`.
fn resume_position(headers: &HeaderMap, query: &QueryPairs) -> ApiResult<Option<i64>> {
    let (field, text) = if let Some(value) = headers.get("last-event-id") {
        let text = value.to_str().map_err(|_| {
            ApiError::invalid_field("Last-Event-ID", "must be an event id (a number)")
        })?;
        ("Last-Event-ID", text.to_string())
    } else if let Some(text) = query.one("after") {
        ("after", text.to_string())
    } else {
        return Ok(None);
    };
    match text.trim().parse::<i64>() {
        Ok(id) if id >= 0 => Ok(Some(id)),
        _ => Err(ApiError::invalid_field(
            field,
            "must be an event id (a number of at least 0) from an earlier stream",
        )),
    }
}

/// One open stream: its position, the events read and not sent yet, its slot.
struct Reader {
    store: Arc<dyn Store>,
    horizon: Horizon,
    trigger_names: Vec<String>,
    scope: TenantScope,
    pending: VecDeque<SystemEventRecord>,
    closing: watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
}

impl Reader {
    /// The next event to send, waiting for one; None ends the stream.
    async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(record) = self.pending.pop_front() {
                return Some(sse_event(&record));
            }
            if *self.closing.borrow() {
                return None;
            }
            match self.read().await {
                Ok(true) => continue,
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(%error, "an event stream ended: the database failed");
                    return None;
                }
            }
            tokio::select! {
                () = tokio::time::sleep(POLL_INTERVAL) => {}
                changed = self.closing.changed() => {
                    // The server that opened the stream is gone.
                    if changed.is_err() {
                        return None;
                    }
                }
            }
        }
    }

    /// Reads what may be read now into `pending`; whether the position moved.
    async fn read(&mut self) -> sleuth_store::StoreResult<bool> {
        let position = self.horizon.position();
        let ids = self.store.system_event_ids_after(position, BATCH).await?;
        let through = self.horizon.through(&ids, Instant::now());
        if through == position {
            return Ok(false);
        }
        let events = self
            .store
            .system_events_after(&SystemEventsAfter {
                after_id: position,
                through_id: through,
                trigger_names: self.trigger_names.clone(),
                scope: self.scope.clone(),
                limit: BATCH,
            })
            .await?;
        // A full batch may stop short of `through`: resume after its last event.
        let read_to = match events.last() {
            Some(last) if events.len() == BATCH as usize => last.id,
            _ => through,
        };
        self.horizon.advance(read_to);
        self.pending.extend(events);
        Ok(true)
    }
}

fn sse_event(record: &SystemEventRecord) -> Event {
    let data = serde_json::to_string(&SystemEventDto::from(record)).unwrap_or_default();
    Event::default()
        .id(record.id.to_string())
        .event(record.trigger_name.as_str())
        .data(data)
}
