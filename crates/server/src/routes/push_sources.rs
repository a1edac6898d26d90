//! Push sources (ours, admin): create, list, read, pause or rotate, delete. A push source
//! is one URL (`POST /app/api/v1/push/{push_source_id}`, `routes::push`) that takes a tool's
//! own push format; its token is shown once and stored as a hash.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use sleuth_domain::Role;
use sleuth_store::{NewPushSource, PushKind, PushSourceChanges};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::dto::push_source::{PushSourceDto, PushSourceWithTokenDto};
use crate::error::{ApiError, ApiResult, ErrorBody, ErrorCode};
use crate::extract::{ApiJson, path_id};
use crate::links;
use crate::push_auth::generate_push_token;
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_push_sources, create_push_source))
        .routes(routes!(
            get_push_source,
            update_push_source,
            delete_push_source
        ))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PushSourceRequest {
    /// 1 to 100 characters, unique.
    pub name: Option<String>,
    /// okta, github, graph, eventbridge, splunk, elastic or generic.
    pub kind: Option<String>,
    /// The secret (`sleuth secret set NAME`) that signs the requests; required for github.
    pub signing_secret_name: Option<String>,
    /// The tenant union every alert of this source joins.
    pub tenant_union_id: Option<i64>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PushSourceUpdate {
    /// false pauses the source: its requests answer 403 until it is enabled again.
    pub enabled: Option<bool>,
    /// true replaces the token; the answer shows the new one, once.
    pub rotate_token: Option<bool>,
}

/// A name of 1 to 100 characters without control characters (push sources, connectors).
pub(crate) fn validate_name(name: Option<&str>) -> ApiResult<String> {
    let name = name
        .ok_or_else(|| ApiError::invalid_field("name", "is required"))?
        .trim();
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(ApiError::invalid_field(
            "name",
            "must be 1 to 100 characters, without control characters",
        ));
    }
    Ok(name.to_string())
}

fn validate_kind(kind: Option<&str>) -> ApiResult<PushKind> {
    let known = || {
        PushKind::ALL
            .iter()
            .map(|kind| kind.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let kind = kind.ok_or_else(|| {
        ApiError::invalid_field("kind", format!("is required: one of {}", known()))
    })?;
    PushKind::parse(kind).ok_or_else(|| {
        ApiError::invalid_field(
            "kind",
            format!(
                "'{}' is not a push kind: one of {}",
                kind.chars().take(50).collect::<String>(),
                known()
            ),
        )
    })
}

/// List push sources (admin).
#[utoipa::path(get, path = "/app/api/v1/push-sources", tag = "push",
    responses((status = 200, body = Vec<PushSourceDto>), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("api_key" = [])))]
async fn list_push_sources(
    State(state): State<AppState>,
    headers: HeaderMap,
    caller: Caller,
) -> ApiResult<Json<Vec<PushSourceDto>>> {
    caller.require(Role::Admin)?;
    let base_url = links::base_url(&state, &headers);
    let sources = state.store()?.list_push_sources().await?;
    Ok(Json(
        sources
            .iter()
            .map(|source| PushSourceDto::new(source, &base_url))
            .collect(),
    ))
}

/// Create a push source (admin); the answer holds its token, shown this once.
#[utoipa::path(post, path = "/app/api/v1/push-sources", tag = "push", request_body = PushSourceRequest,
    responses((status = 201, body = PushSourceWithTokenDto), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 409, description = "A push source of that name exists (code conflict)", body = ErrorBody)),
    security(("api_key" = [])))]
async fn create_push_source(
    State(state): State<AppState>,
    headers: HeaderMap,
    caller: Caller,
    ApiJson(request): ApiJson<PushSourceRequest>,
) -> ApiResult<(StatusCode, Json<PushSourceWithTokenDto>)> {
    caller.require(Role::Admin)?;
    let name = validate_name(request.name.as_deref())?;
    let kind = validate_kind(request.kind.as_deref())?;
    let store = state.store()?;
    if let Some(secret) = &request.signing_secret_name {
        let known = store.list_script_secrets().await?;
        if !known.iter().any(|stored| &stored.name == secret) {
            return Err(ApiError::invalid_field(
                "signing_secret_name",
                "names no stored secret: store it first (`sleuth secret set NAME`)",
            ));
        }
    } else if kind == PushKind::Github {
        return Err(ApiError::invalid_field(
            "signing_secret_name",
            "is required for github: GitHub signs every delivery with the webhook's secret \
             (X-Hub-Signature-256); store the same secret with `sleuth secret set NAME`",
        ));
    }
    if let Some(tenant_union_id) = request.tenant_union_id {
        store
            .get_tenant_union(tenant_union_id)
            .await
            .map_err(|error| match error {
                sleuth_store::StoreError::NotFound { .. } => ApiError::invalid_field(
                    "tenant_union_id",
                    format!("tenant union {tenant_union_id} does not exist"),
                ),
                other => ApiError::from(other),
            })?;
    }
    let (token, token_hash) = generate_push_token();
    let source = store
        .create_push_source(&NewPushSource {
            name,
            kind,
            token_hash,
            signing_secret: request.signing_secret_name,
            tenant_union_id: request.tenant_union_id,
            created_by: Some(caller.user_id()),
            at: chrono::Utc::now(),
        })
        .await
        .map_err(|error| match error {
            // The name is the client's to change, not a malformed request.
            sleuth_store::StoreError::Conflict { detail } => {
                ApiError::new(ErrorCode::Conflict, detail)
            }
            other => ApiError::from(other),
        })?;
    let base_url = links::base_url(&state, &headers);
    Ok((
        StatusCode::CREATED,
        Json(PushSourceWithTokenDto {
            source: PushSourceDto::new(&source, &base_url),
            token: Some(token),
        }),
    ))
}

/// Read a push source (admin).
#[utoipa::path(get, path = "/app/api/v1/push-sources/{push_source_id}", tag = "push",
    params(("push_source_id" = String, Path)),
    responses((status = 200, body = PushSourceDto), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn get_push_source(
    State(state): State<AppState>,
    headers: HeaderMap,
    caller: Caller,
    Path(push_source_id): Path<String>,
) -> ApiResult<Json<PushSourceDto>> {
    caller.require(Role::Admin)?;
    let push_source_id = path_id(&push_source_id, "push source")?;
    let source = state.store()?.get_push_source(push_source_id).await?;
    Ok(Json(PushSourceDto::new(
        &source,
        &links::base_url(&state, &headers),
    )))
}

/// Pause or resume a push source, or rotate its token (admin). The answer carries `token`
/// only when it was rotated.
#[utoipa::path(patch, path = "/app/api/v1/push-sources/{push_source_id}", tag = "push",
    params(("push_source_id" = String, Path)), request_body = PushSourceUpdate,
    responses((status = 200, body = PushSourceWithTokenDto), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn update_push_source(
    State(state): State<AppState>,
    headers: HeaderMap,
    caller: Caller,
    Path(push_source_id): Path<String>,
    ApiJson(request): ApiJson<PushSourceUpdate>,
) -> ApiResult<Json<PushSourceWithTokenDto>> {
    caller.require(Role::Admin)?;
    let push_source_id = path_id(&push_source_id, "push source")?;
    if request.enabled.is_none() && request.rotate_token.is_none() {
        return Err(ApiError::bad_request(
            "nothing to change: send enabled and/or rotate_token",
        ));
    }
    let token = request
        .rotate_token
        .unwrap_or(false)
        .then(generate_push_token);
    let changes = PushSourceChanges {
        enabled: request.enabled,
        token_hash: token.as_ref().map(|(_, hash)| hash.clone()),
    };
    let source = state
        .store()?
        .update_push_source(push_source_id, &changes, chrono::Utc::now())
        .await?;
    Ok(Json(PushSourceWithTokenDto {
        source: PushSourceDto::new(&source, &links::base_url(&state, &headers)),
        token: token.map(|(token, _)| token),
    }))
}

/// Delete a push source (admin): its URL stops answering at once.
#[utoipa::path(delete, path = "/app/api/v1/push-sources/{push_source_id}", tag = "push",
    params(("push_source_id" = String, Path)),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn delete_push_source(
    State(state): State<AppState>,
    caller: Caller,
    Path(push_source_id): Path<String>,
) -> ApiResult<StatusCode> {
    caller.require(Role::Admin)?;
    let push_source_id = path_id(&push_source_id, "push source")?;
    state.store()?.delete_push_source(push_source_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
