//! The audit log (ours, admin only): every write through the API and the command line,
//! hash-chained. List it with filters, or export all of it as JSON Lines with the hashes,
//! to keep elsewhere or check with other tools (`sleuth audit verify` checks it in place).
//! An admin bound to tenant unions lists only the entries about investigations in them,
//! and may not export: the export is the whole chain or nothing.

use std::sync::Arc;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, header};
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
use crate::list_query::{page_parameters, strings, time_range};
use crate::state::AppState;

/// Entries read from the store per page of the export.
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
#[utoipa::path(get, path = "/app/api/v1/audit-log", tag = "audit",
    params(AuditLogParameters),
    responses(
        (status = 200, body = AuditPageDto),
        (status = 400, description = "Bad request - invalid input", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn list_audit_log(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<Json<AuditPageDto>> {
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
    let page = state.store()?.list_audit_entries(&audit_query).await?;
    Ok(Json(AuditPageDto {
        count: page.total,
        results: page.items.iter().map(AuditEntryDto::from).collect(),
    }))
}

/// Export the whole audit log as JSON Lines, oldest first, each entry with its hashes
/// (admin).
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
    // The first page is read before answering, so that an unreachable database is a 503
    // rather than an empty 200; later pages stream as the client reads.
    let first = store.audit_entries_after(0, EXPORT_PAGE).await?;
    let pages = futures_util::stream::unfold(
        Some((store, first)),
        |state: Option<(Arc<dyn Store>, Vec<sleuth_store::AuditEntry>)>| async move {
            let (store, entries) = state?;
            let last_seq = entries.last()?.seq;
            let mut chunk = String::new();
            for entry in &entries {
                match serde_json::to_string(&AuditEntryDto::from(entry)) {
                    Ok(line) => {
                        chunk.push_str(&line);
                        chunk.push('\n');
                    }
                    Err(error) => {
                        return Some((Err(StoreError::internal(error.to_string())), None));
                    }
                }
            }
            let next = if entries.len() < EXPORT_PAGE as usize {
                Some((store, Vec::new()))
            } else {
                match store.audit_entries_after(last_seq, EXPORT_PAGE).await {
                    Ok(next) => Some((store, next)),
                    Err(error) => {
                        tracing::error!(%error, "the audit-log export stopped early");
                        return Some((Err(error), None));
                    }
                }
            };
            Some((Ok(Bytes::from(chunk)), next))
        },
    );
    let mut response = Body::from_stream(pages).into_response();
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
