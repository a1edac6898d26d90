//! The audit log (ours, admin only): every write through the API and the command line,
//! hash-chained. List it with filters, or export all of it as JSON Lines with the hashes,
//! to keep elsewhere or check with other tools (`sleuth audit verify` checks it in place).
//! An admin bound to tenant unions lists only the entries about investigations in them,
//! and may not export: the export is the whole chain or nothing.

use std::sync::Arc;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use sleuth_domain::Role;
use sleuth_store::{AuditQuery, Store, StoreError};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::dto::audit::{AuditEntryDto, AuditPageDto};
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::QueryPairs;
use crate::links;
use crate::list_budget::{self, PageRequest};
use crate::list_query::{page_parameters, strings, time_range};
use crate::state::AppState;

/// The most entries read from the store at once by the export.
const EXPORT_PAGE: u32 = 1000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_audit_log))
        .routes(routes!(export_audit_log))
}

/// The list's parameters, for the OpenAPI description.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Read by utoipa's derive for the OpenAPI description only.
pub struct AuditLogParameters {
    /// The actor: a user id, or an email address (any case).
    actor: Option<String>,
    /// An action, e.g. `POST /app/api/v1/context-memory/create` or `cli apikey create`.
    /// Repeatable: any of them.
    action: Option<Vec<String>>,
    /// A resource type, e.g. `context-memory`, `investigation`, `api-key`. Repeatable.
    resource_type: Option<Vec<String>>,
    /// At or after (ISO 8601 date or date-time).
    from: Option<String>,
    /// At or before (a date alone means the end of that day).
    until: Option<String>,
    /// Results per page: default 20, at most 1000 (larger values are clamped).
    limit: Option<i64>,
    /// Results to skip.
    offset: Option<i64>,
}

/// List the audit log, newest first (admin).
///
/// A page stops early when its entries reach `server.max_list_answer_bytes` (always holding
/// at least one). While more follow, `Link: <url>; rel="next"` names the page that starts
/// after its last entry (or continue at `offset` plus the entries received).
#[utoipa::path(get, path = "/app/api/v1/audit-log", tag = "audit",
    params(AuditLogParameters),
    responses(
        (status = 200, body = AuditPageDto, headers(
            ("Link" = String, description = "`<url>; rel=\"next\"` while more entries follow (RFC 8288)"),
        )),
        (status = 400, description = "Bad request - invalid input", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn list_audit_log(
    State(state): State<AppState>,
    headers: HeaderMap,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<(HeaderMap, Json<AuditPageDto>)> {
    caller.require_within_scope(Role::Admin)?;
    let actor = query.one("actor").map(str::trim).map(str::to_string);
    if actor
        .as_ref()
        .is_some_and(|actor| actor.is_empty() || actor.chars().count() > 254)
    {
        return Err(ApiError::invalid_field(
            "actor",
            "must be a user id or an email address (at most 254 characters)",
        ));
    }
    let (limit, offset) = page_parameters(&query)?;
    let audit_query = AuditQuery {
        actor,
        actions: strings(&query, "action")?,
        resource_types: strings(&query, "resource_type")?,
        time: time_range(&query, "from", "until")?,
        scope: caller.scope(),
        limit,
        offset,
    };
    let store = state.store()?.as_ref();
    let request = PageRequest::new(
        &state,
        &headers,
        "/app/api/v1/audit-log",
        &query,
        (limit, offset),
    );
    let (page, next) = list_budget::linked_page(
        &request,
        |rows, offset| {
            let read_query = AuditQuery {
                limit: rows,
                offset,
                ..audit_query.clone()
            };
            async move {
                let page = store.list_audit_entries(&read_query).await?;
                Ok((page.total, page.items))
            }
        },
        |entry| entry.seq,
        |entry| AuditEntryDto::from(entry),
    )
    .await?;
    Ok((
        links::paging_headers(next.as_deref(), None),
        Json(AuditPageDto {
            count: page.total,
            results: page.items,
        }),
    ))
}

/// Export the whole audit log as JSON Lines, oldest first, each entry with its hashes
/// (admin).
///
/// The answer streams as the client reads it, in pieces of at most
/// `server.max_list_answer_bytes` (or one entry), so the server never holds more of the log
/// than one piece.
#[utoipa::path(get, path = "/app/api/v1/audit-log/export", tag = "audit",
    responses(
        (status = 200, description = "One AuditLogEntry per line, in chain order", content_type = "application/x-ndjson", body = String),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn export_audit_log(State(state): State<AppState>, caller: Caller) -> ApiResult<Response> {
    caller.require(Role::Admin)?;
    let store = state.store()?.clone();
    let budget = state.settings().server.max_list_answer_bytes;
    // The first piece is read before answering, so that an unreachable database is a 503
    // rather than an empty 200; later pieces stream as the client reads.
    let first = export_piece(store.as_ref(), 0, budget).await?;
    let pieces = futures_util::stream::unfold(
        Some((store, first)),
        move |state: Option<(Arc<dyn Store>, ExportPiece)>| async move {
            let (store, piece) = state?;
            if piece.lines.is_empty() {
                return None;
            }
            let next = if piece.last {
                None
            } else {
                match export_piece(store.as_ref(), piece.last_seq, budget).await {
                    Ok(next) => Some((store, next)),
                    Err(error) => {
                        tracing::error!(%error, "the audit-log export stopped early");
                        return Some((Err(error), None));
                    }
                }
            };
            Some((Ok(Bytes::from(piece.lines)), next))
        },
    );
    let mut response = Body::from_stream(pieces).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"sleuth-audit-log.jsonl\""),
    );
    Ok(response)
}

/// A piece of the export: JSON Lines of the entries after a sequence number.
struct ExportPiece {
    lines: String,
    /// The sequence number of its last entry.
    last_seq: i64,
    /// Whether it ends the log (as the log was when it was read).
    last: bool,
}

/// The entries after `after_seq` as JSON Lines, at most `budget` bytes of them (or one).
async fn export_piece(
    store: &dyn Store,
    after_seq: i64,
    budget: usize,
) -> Result<ExportPiece, StoreError> {
    let mut collector = list_budget::Collector::new(budget);
    let mut last_seq = after_seq;
    let last = loop {
        let rows = collector.rows_to_read(EXPORT_PAGE);
        let entries = store.audit_entries_after(last_seq, rows).await?;
        let mut full = false;
        for entry in &entries {
            if !collector
                .push(&AuditEntryDto::from(entry))
                .map_err(|error| StoreError::internal(error.to_string()))?
            {
                full = true;
                break;
            }
            last_seq = entry.seq;
        }
        if full {
            break false;
        }
        if entries.len() < rows as usize {
            break true;
        }
    };
    let mut lines = String::new();
    for item in collector.into_items() {
        lines.push_str(item.get());
        lines.push('\n');
    }
    Ok(ExportPiece {
        lines,
        last_seq,
        last,
    })
}
