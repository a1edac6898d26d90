//! Tenant unions (our endpoints, on SPEC's shape): named groups of tenants. Alerts join a
//! union by `tenant_union_id` on create, or by their tenant id / integration key being
//! listed in a union's `lookup_dict`; otherwise they join the Default union.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Map, Value};
use sleuth_domain::Role;
use sleuth_store::{TenantUnion, TenantUnionInput};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::dto::tenant::TenantUnionDto;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, path_id};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_tenant_unions, create_tenant_union))
        .routes(routes!(get_tenant_union, update_tenant_union))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantUnionRequest {
    /// 1 to 150 characters, unique.
    pub display_name: Option<String>,
    /// `{"tenant_ids": [...], "tenant_integration_keys": [...]}` plus anything you keep there.
    #[schema(value_type = Option<Object>)]
    pub lookup_dict: Option<Map<String, Value>>,
}

fn validate_name(name: &str) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 150 || name.chars().any(char::is_control) {
        return Err(ApiError::invalid_field(
            "display_name",
            "must be 1 to 150 characters, without control characters",
        ));
    }
    Ok(name.to_string())
}

fn validate_lookup(lookup: Map<String, Value>) -> ApiResult<Map<String, Value>> {
    for key in ["tenant_ids", "tenant_integration_keys"] {
        if let Some(value) = lookup.get(key) {
            let all_strings = value
                .as_array()
                .is_some_and(|items| items.iter().all(Value::is_string));
            if !all_strings {
                return Err(ApiError::invalid_field(
                    "lookup_dict",
                    format!("{key} must be an array of strings"),
                ));
            }
        }
    }
    Ok(lookup)
}

/// List tenant unions: those the caller's key reaches (every one for an unbound key).
#[utoipa::path(get, path = "/app/api/v1/tenant-unions", tag = "tenants",
    responses((status = 200, body = Vec<TenantUnionDto>), (status = 401, body = ErrorBody)),
    security(("api_key" = [])))]
async fn list_tenant_unions(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<TenantUnionDto>>> {
    caller.require(Role::RestrictedReadOnly)?;
    let unions = state.store()?.list_tenant_unions().await?;
    // Unions are few and listed whole, without pages: dropping the ones out of reach
    // leaves no count or page wrong.
    let scope = caller.scope();
    Ok(Json(
        unions
            .iter()
            .filter(|union| scope.allows(union.id))
            .map(TenantUnionDto::from)
            .collect(),
    ))
}

/// Create a tenant union (admin).
#[utoipa::path(post, path = "/app/api/v1/tenant-unions", tag = "tenants", request_body = TenantUnionRequest,
    responses((status = 201, body = TenantUnionDto), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("api_key" = [])))]
async fn create_tenant_union(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<TenantUnionRequest>,
) -> ApiResult<(StatusCode, Json<TenantUnionDto>)> {
    let union = create(&state, &caller, request).await?;
    Ok((StatusCode::CREATED, Json(TenantUnionDto::from(&union))))
}

/// Creates a tenant union as `caller` (the route's work, also the console's).
pub(crate) async fn create(
    state: &AppState,
    caller: &Caller,
    request: TenantUnionRequest,
) -> ApiResult<TenantUnion> {
    caller.require(Role::Admin)?;
    let display_name = validate_name(
        request
            .display_name
            .as_deref()
            .ok_or_else(|| ApiError::invalid_field("display_name", "is required"))?,
    )?;
    let input = TenantUnionInput {
        display_name,
        lookup_dict: validate_lookup(request.lookup_dict.unwrap_or_default())?,
        modified_by: Some(caller.user_id()),
    };
    Ok(state.store()?.create_tenant_union(&input).await?)
}

/// Read a tenant union.
#[utoipa::path(get, path = "/app/api/v1/tenant-unions/{tenant_union_id}", tag = "tenants",
    params(("tenant_union_id" = String, Path)),
    responses((status = 200, body = TenantUnionDto), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn get_tenant_union(
    State(state): State<AppState>,
    caller: Caller,
    Path(tenant_union_id): Path<String>,
) -> ApiResult<Json<TenantUnionDto>> {
    caller.require(Role::RestrictedReadOnly)?;
    let tenant_union_id = path_id(&tenant_union_id, "tenant union")?;
    if !caller.scope().allows(tenant_union_id) {
        return Err(ApiError::not_found(format!(
            "tenant union {tenant_union_id} not found"
        )));
    }
    let union = state.store()?.get_tenant_union(tenant_union_id).await?;
    Ok(Json(TenantUnionDto::from(&union)))
}

/// Rename a tenant union or change its lookup (admin).
#[utoipa::path(patch, path = "/app/api/v1/tenant-unions/{tenant_union_id}", tag = "tenants",
    params(("tenant_union_id" = String, Path)), request_body = TenantUnionRequest,
    responses((status = 200, body = TenantUnionDto), (status = 400, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn update_tenant_union(
    State(state): State<AppState>,
    caller: Caller,
    Path(tenant_union_id): Path<String>,
    ApiJson(request): ApiJson<TenantUnionRequest>,
) -> ApiResult<Json<TenantUnionDto>> {
    caller.require(Role::Admin)?;
    let tenant_union_id = path_id(&tenant_union_id, "tenant union")?;
    let union = update(&state, &caller, tenant_union_id, request).await?;
    Ok(Json(TenantUnionDto::from(&union)))
}

/// Renames a tenant union or changes its lookup as `caller` (the route's work, also the
/// console's).
pub(crate) async fn update(
    state: &AppState,
    caller: &Caller,
    tenant_union_id: i64,
    request: TenantUnionRequest,
) -> ApiResult<TenantUnion> {
    caller.require(Role::Admin)?;
    if request.display_name.is_none() && request.lookup_dict.is_none() {
        return Err(ApiError::bad_request(
            "nothing to change: send display_name and/or lookup_dict",
        ));
    }
    let store = state.store()?;
    let current = store.get_tenant_union(tenant_union_id).await?;
    let input = TenantUnionInput {
        display_name: match request.display_name {
            Some(name) => validate_name(&name)?,
            None => current.display_name,
        },
        lookup_dict: match request.lookup_dict {
            Some(lookup) => validate_lookup(lookup)?,
            None => current.lookup_dict,
        },
        modified_by: Some(caller.user_id()),
    };
    Ok(store.update_tenant_union(tenant_union_id, &input).await?)
}
