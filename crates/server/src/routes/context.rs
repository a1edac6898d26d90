//! The operator's context over the API (admin; docs/context.md): read and replace the
//! document kept in the database, and see the effective context (file and API document
//! merged) with what went into it. A replaced document is validated by compiling the
//! merged context first, so a bad PUT changes nothing; then this process reloads at once
//! and the others within `engine.context_reload_seconds`.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::header::CONTENT_TYPE;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use sleuth_domain::Role;
use sleuth_engine::ContextDocument;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, ErrorBody, ErrorCode};
use crate::state::AppState;
use sleuth_jobs::context_source;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_context, put_context))
        .routes(routes!(get_effective_context))
}

/// The context document kept through the API.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContextDocumentDto {
    /// The document as JSON (the same structure as the TOML file).
    #[schema(value_type = Object)]
    pub document: Value,
    /// The document as TOML.
    pub toml: String,
    /// When it was last replaced; null when it never was.
    pub updated_at: Option<DateTime<Utc>>,
    /// The user who last replaced it.
    pub updated_by: Option<i64>,
}

/// The context in force: files and API document merged.
#[derive(Debug, Serialize, ToSchema)]
pub struct EffectiveContextDto {
    /// The merged document.
    #[schema(value_type = Object)]
    pub document: Value,
    /// The files it was read from, feeds included.
    pub files: Vec<String>,
    /// How many threat-intel indicators are loaded.
    pub intel_count: usize,
    /// Feed rows skipped while loading, and why.
    pub warnings: Vec<String>,
    /// When the context in force was loaded; null until the first load.
    pub loaded_at: Option<DateTime<Utc>>,
    /// Why the latest reload failed, when it did (the context before it stays in force).
    pub last_error: Option<String>,
}

fn to_json(document: &ContextDocument) -> Value {
    serde_json::to_value(document).unwrap_or(Value::Null)
}

/// Read the context document kept through the API (admin).
#[utoipa::path(get, path = "/app/api/v1/context", tag = "context",
    responses((status = 200, body = ContextDocumentDto), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("api_key" = [])))]
async fn get_context(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<ContextDocumentDto>> {
    Ok(Json(read_document(&state, &caller).await?))
}

/// The context document kept through the API (admin): the route's answer, and the
/// console's settings page.
pub(crate) async fn read_document(
    state: &AppState,
    caller: &Caller,
) -> ApiResult<ContextDocumentDto> {
    caller.require(Role::Admin)?;
    let stored = state.store()?.get_context_document().await?;
    let Some(stored) = stored else {
        return Ok(ContextDocumentDto {
            document: to_json(&ContextDocument::default()),
            toml: String::new(),
            updated_at: None,
            updated_by: None,
        });
    };
    let document = ContextDocument::from_toml(&stored.document).map_err(|error| {
        tracing::error!("the stored context document no longer parses: {error}");
        ApiError::system_error()
    })?;
    Ok(ContextDocumentDto {
        document: to_json(&document),
        toml: stored.document,
        updated_at: Some(stored.updated_at),
        updated_by: stored.updated_by,
    })
}

/// A context document from its text, TOML or JSON, or the 400 that says what is wrong.
pub(crate) fn parse_document(text: &str, toml: bool) -> ApiResult<ContextDocument> {
    if toml {
        ContextDocument::from_toml(text)
    } else {
        ContextDocument::from_json(text)
    }
    .map_err(|error| ApiError::bad_request(format!("the context document is not valid: {error}")))
}

/// A context document in the request body: JSON (`application/json`) or TOML
/// (`application/toml`, `text/x-toml` or `text/plain`).
pub struct ContextBody(ContextDocument);

impl<S: Send + Sync> FromRequest<S> for ContextBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let media_type = request
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.split(';').next())
            .map(|value| value.trim().to_ascii_lowercase())
            .unwrap_or_default();
        let toml = matches!(
            media_type.as_str(),
            "application/toml" | "text/x-toml" | "text/plain"
        );
        if !toml && media_type != "application/json" {
            return Err(ApiError::bad_request(
                "send the context as JSON (Content-Type: application/json) or TOML (Content-Type: application/toml)",
            ));
        }
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        ErrorCode::PayloadTooLarge,
                        "the context document is larger than server.body_limit_bytes",
                    )
                } else {
                    ApiError::bad_request(format!("cannot read the request body: {rejection}"))
                }
            })?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| ApiError::bad_request("the context document is not UTF-8"))?;
        if !toml {
            crate::extract::refuse_json_array(&bytes)?;
        }
        Ok(ContextBody(parse_document(text, toml)?))
    }
}

/// Replace the context document kept through the API (admin). The merged context must
/// compile; then it is in force in this process at once, in the others within
/// `engine.context_reload_seconds`.
#[utoipa::path(put, path = "/app/api/v1/context", tag = "context",
    request_body(content = Object, description = "A context document (docs/context.md), as JSON or TOML"),
    responses((status = 200, body = EffectiveContextDto), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("api_key" = [])))]
async fn put_context(
    State(state): State<AppState>,
    caller: Caller,
    ContextBody(document): ContextBody,
) -> ApiResult<Json<EffectiveContextDto>> {
    Ok(Json(replace_document(&state, &caller, document).await?))
}

/// Replaces the context document (admin) once the merged context compiles, and reloads
/// it: the route's work, and the console's settings form.
pub(crate) async fn replace_document(
    state: &AppState,
    caller: &Caller,
    document: ContextDocument,
) -> ApiResult<EffectiveContextDto> {
    caller.require(Role::Admin)?;
    let store = state.store()?.clone();
    // Compile the merged context before storing anything: a document that would not load
    // must not replace one that does.
    let path = state.settings().engine.context_file.clone();
    let candidate = document.clone();
    let checked = tokio::task::spawn_blocking(move || {
        context_source::load(path.as_deref(), Some(candidate), chrono::Utc::now()).map(|_| ())
    })
    .await
    .map_err(|_| ApiError::system_error())?;
    checked
        .map_err(|error| ApiError::bad_request(format!("the context would not load: {error}")))?;
    let now = chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 6);
    store
        .put_context_document(&document.to_toml(), Some(caller.user_id()), now)
        .await?;
    context_source::reload(state, Some(&store))
        .await
        .map_err(|error| {
            tracing::error!("the context was stored but did not reload: {error}");
            ApiError::system_error()
        })?;
    Ok(effective(state))
}

/// The context in force: the context file and the API document merged (admin).
#[utoipa::path(get, path = "/app/api/v1/context/effective", tag = "context",
    responses((status = 200, body = EffectiveContextDto), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("api_key" = [])))]
async fn get_effective_context(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<EffectiveContextDto>> {
    caller.require(Role::Admin)?;
    Ok(Json(effective(&state)))
}

pub(crate) fn effective(state: &AppState) -> EffectiveContextDto {
    let status = state.context_status();
    EffectiveContextDto {
        document: to_json(&status.document),
        files: status
            .files
            .iter()
            .map(|file| file.display().to_string())
            .collect(),
        intel_count: status.intel_count,
        warnings: status.warnings,
        loaded_at: status.loaded_at,
        last_error: status.last_error,
    }
}
