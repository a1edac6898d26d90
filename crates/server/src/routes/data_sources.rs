//! Data sources (ours, admin): the team's systems that investigations ask about an
//! alert's entities (docs/data-sources.md). Create one from a definition or from a
//! definition Sleuth ships, list them with their breaker state, change, delete, and test
//! one with one entity (the raw answer and the facts taken from it). A definition is
//! checked whole when it is written, and the secrets it names must be stored.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use sleuth_domain::{AnswerResult, Entity, EntityKind, Role};
use sleuth_sources::{Definition, Limits};
use sleuth_store::{DataSourceChanges, DataSourceRecord, NewDataSource, Store};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::dto::data_source::{DataSourceDto, DataSourceTestDto, ShippedDataSourceDto};
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, path_id};
use crate::routes::connectors::validate_tenant_union;
use crate::routes::push_sources::validate_name;
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_data_sources, create_data_source))
        .routes(routes!(list_shipped))
        .routes(routes!(
            get_data_source,
            update_data_source,
            delete_data_source
        ))
        .routes(routes!(test_data_source))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DataSourceRequest {
    /// 1 to 100 characters, unique; findings cite the source by it.
    pub name: Option<String>,
    /// The definition: `type` http_json, directory or script, and its fields. Give this or
    /// `shipped`.
    #[schema(value_type = Option<Object>)]
    pub definition: Option<serde_json::Value>,
    /// The name of a definition Sleuth ships (`GET /app/api/v1/data-sources/shipped`).
    pub shipped: Option<String>,
    /// With `shipped`: the vendor's URL for this customer (Okta, CrowdStrike, Graph), in
    /// place of the shipped one.
    pub base_url: Option<String>,
    /// timeout_seconds, cache_ttl_seconds, rate_limit_per_minute, breaker_failures,
    /// breaker_cooldown_seconds, max_entities_per_alert; the shipped or default ones when
    /// not given.
    #[schema(value_type = Option<Object>)]
    pub limits: Option<serde_json::Value>,
    /// The tenant union whose alerts it answers for; every union's when not given.
    pub tenant_union_id: Option<i64>,
    /// false creates it disabled.
    pub enabled: Option<bool>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DataSourceUpdate {
    /// Replaces the definition whole.
    #[schema(value_type = Option<Object>)]
    pub definition: Option<serde_json::Value>,
    /// Replaces the limits whole.
    #[schema(value_type = Option<Object>)]
    pub limits: Option<serde_json::Value>,
    pub enabled: Option<bool>,
    /// `null`: every union's alerts.
    #[serde(default, deserialize_with = "crate::routes::connectors::present")]
    #[schema(value_type = Option<i64>)]
    pub tenant_union_id: Option<Option<i64>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DataSourceTestRequest {
    /// The entity kind: ip, domain, url, email, user, host, hash_sha256, ...
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub value: Option<String>,
}

/// Checks what a create or change asks for; the error names the field.
async fn checked(
    store: &dyn Store,
    definition: serde_json::Value,
    limits: serde_json::Value,
) -> ApiResult<(Definition, Limits)> {
    sleuth_jobs::data_sources::check(store, definition, limits)
        .await?
        .map_err(refused)
}

fn refused(refusal: sleuth_jobs::data_sources::Refusal) -> ApiError {
    ApiError::invalid_field(refusal.field, refusal.message)
}

fn to_stored<T: serde::Serialize>(value: &T) -> ApiResult<serde_json::Value> {
    sleuth_jobs::data_sources::to_json(value).map_err(|refusal| {
        tracing::error!("a data source part did not turn into JSON: {refusal}");
        ApiError::system_error()
    })
}

/// The definition and limits a create asks for: given, or shipped (with its URL replaced).
fn requested_definition(
    request: &DataSourceRequest,
) -> ApiResult<(serde_json::Value, serde_json::Value)> {
    match (&request.definition, &request.shipped) {
        (Some(_), Some(_)) => Err(ApiError::bad_request(
            "give either definition or shipped, not both",
        )),
        (None, None) => Err(ApiError::invalid_field(
            "definition",
            "is required (or name a shipped definition in `shipped`)",
        )),
        (Some(definition), None) => {
            if request.base_url.is_some() {
                return Err(ApiError::invalid_field(
                    "base_url",
                    "goes with `shipped`; put the URL in the definition itself",
                ));
            }
            Ok((
                definition.clone(),
                request
                    .limits
                    .clone()
                    .unwrap_or_else(|| serde_json::json!({})),
            ))
        }
        (None, Some(name)) => {
            let (definition, limits) =
                sleuth_jobs::data_sources::shipped(name, request.base_url.as_deref())
                    .map_err(refused)?;
            Ok((definition, request.limits.clone().unwrap_or(limits)))
        }
    }
}

fn dto(state: &AppState, record: &DataSourceRecord) -> DataSourceDto {
    let breaker = state.data_sources().and_then(|sources| {
        sources
            .sources()
            .breaker_states()
            .into_iter()
            .find(|(name, _)| *name == record.name)
            .map(|(_, breaker)| breaker)
    });
    DataSourceDto::new(record, breaker)
}

/// Tells this process's sources to read the stored ones again before the next use.
async fn changed(state: &AppState) {
    if let Some(sources) = state.data_sources() {
        sources.changed().await;
    }
}

/// List data sources (admin).
#[utoipa::path(get, path = "/app/api/v1/data-sources", tag = "data-sources",
    responses((status = 200, body = Vec<DataSourceDto>), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("api_key" = [])))]
async fn list_data_sources(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<DataSourceDto>>> {
    caller.require(Role::Admin)?;
    let records = state.store()?.list_data_sources().await?;
    Ok(Json(
        records.iter().map(|record| dto(&state, record)).collect(),
    ))
}

/// The definitions Sleuth ships (admin): VirusTotal, AbuseIPDB, GreyNoise, URLhaus,
/// ThreatFox, RDAP, Okta users, Microsoft Graph users and sign-ins, CrowdStrike hosts.
#[utoipa::path(get, path = "/app/api/v1/data-sources/shipped", tag = "data-sources",
    responses((status = 200, body = Vec<ShippedDataSourceDto>), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("api_key" = [])))]
async fn list_shipped(caller: Caller) -> ApiResult<Json<Vec<ShippedDataSourceDto>>> {
    caller.require(Role::Admin)?;
    let shipped = sleuth_sources::shipped::all()
        .into_iter()
        .map(|shipped| {
            Ok(ShippedDataSourceDto {
                definition: to_stored(&shipped.definition)?,
                limits: to_stored(&shipped.limits)?,
                name: shipped.name,
                description: shipped.description,
                documentation: shipped.documentation,
            })
        })
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(Json(shipped))
}

/// Create a data source (admin); investigations ask it from their next job on.
#[utoipa::path(post, path = "/app/api/v1/data-sources", tag = "data-sources", request_body = DataSourceRequest,
    responses((status = 201, body = DataSourceDto), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("api_key" = [])))]
async fn create_data_source(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<DataSourceRequest>,
) -> ApiResult<(StatusCode, Json<DataSourceDto>)> {
    caller.require(Role::Admin)?;
    let name = validate_name(request.name.as_deref())?;
    let (definition, limits) = requested_definition(&request)?;
    let store = state.store()?;
    let (checked_definition, checked_limits) = checked(store.as_ref(), definition, limits).await?;
    validate_tenant_union(store.as_ref(), request.tenant_union_id).await?;
    let record = store
        .create_data_source(&NewDataSource {
            name,
            // Stored as read back, so defaults are spelled out for the next reader.
            definition: to_stored(&checked_definition)?,
            limits: to_stored(&checked_limits)?,
            tenant_union_id: request.tenant_union_id,
            enabled: request.enabled.unwrap_or(true),
            created_by: Some(caller.user_id()),
            at: chrono::Utc::now(),
        })
        .await?;
    changed(&state).await;
    Ok((StatusCode::CREATED, Json(dto(&state, &record))))
}

/// Read a data source (admin).
#[utoipa::path(get, path = "/app/api/v1/data-sources/{data_source_id}", tag = "data-sources",
    params(("data_source_id" = String, Path)),
    responses((status = 200, body = DataSourceDto), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn get_data_source(
    State(state): State<AppState>,
    caller: Caller,
    Path(data_source_id): Path<String>,
) -> ApiResult<Json<DataSourceDto>> {
    caller.require(Role::Admin)?;
    let data_source_id = path_id(&data_source_id, "data source")?;
    let record = state.store()?.get_data_source(data_source_id).await?;
    Ok(Json(dto(&state, &record)))
}

/// Change a data source (admin): its definition or limits (each replaced whole), enable
/// or disable it, or change its tenant union. Its cached answers are dropped.
#[utoipa::path(patch, path = "/app/api/v1/data-sources/{data_source_id}", tag = "data-sources",
    params(("data_source_id" = String, Path)), request_body = DataSourceUpdate,
    responses((status = 200, body = DataSourceDto), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn update_data_source(
    State(state): State<AppState>,
    caller: Caller,
    Path(data_source_id): Path<String>,
    ApiJson(request): ApiJson<DataSourceUpdate>,
) -> ApiResult<Json<DataSourceDto>> {
    caller.require(Role::Admin)?;
    let data_source_id = path_id(&data_source_id, "data source")?;
    if request.definition.is_none()
        && request.limits.is_none()
        && request.enabled.is_none()
        && request.tenant_union_id.is_none()
    {
        return Err(ApiError::bad_request(
            "nothing to change: send definition, limits, enabled and/or tenant_union_id",
        ));
    }
    let store = state.store()?;
    let current = store.get_data_source(data_source_id).await?;
    let (definition, limits) = checked(
        store.as_ref(),
        request
            .definition
            .clone()
            .unwrap_or_else(|| current.definition.clone()),
        request
            .limits
            .clone()
            .unwrap_or_else(|| current.limits.clone()),
    )
    .await?;
    if let Some(tenant_union_id) = request.tenant_union_id {
        validate_tenant_union(store.as_ref(), tenant_union_id).await?;
    }
    let record = store
        .update_data_source(
            data_source_id,
            &DataSourceChanges {
                definition: request
                    .definition
                    .is_some()
                    .then(|| to_stored(&definition))
                    .transpose()?,
                limits: request
                    .limits
                    .is_some()
                    .then(|| to_stored(&limits))
                    .transpose()?,
                enabled: request.enabled,
                tenant_union_id: request.tenant_union_id,
            },
            chrono::Utc::now(),
        )
        .await?;
    changed(&state).await;
    Ok(Json(dto(&state, &record)))
}

/// Delete a data source (admin); the findings that cite it stay.
#[utoipa::path(delete, path = "/app/api/v1/data-sources/{data_source_id}", tag = "data-sources",
    params(("data_source_id" = String, Path)),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn delete_data_source(
    State(state): State<AppState>,
    caller: Caller,
    Path(data_source_id): Path<String>,
) -> ApiResult<StatusCode> {
    caller.require(Role::Admin)?;
    let data_source_id = path_id(&data_source_id, "data source")?;
    state.store()?.delete_data_source(data_source_id).await?;
    changed(&state).await;
    Ok(StatusCode::NO_CONTENT)
}

/// Test a data source with one entity (admin): the source is asked now, past its cache,
/// breaker and rate limit, and the answer is shown raw and as facts. A source that fails
/// is an answer (`result: failed`, with a reason that holds no secret).
#[utoipa::path(post, path = "/app/api/v1/data-sources/{data_source_id}/test", tag = "data-sources",
    params(("data_source_id" = String, Path)), request_body = DataSourceTestRequest,
    responses((status = 200, body = DataSourceTestDto), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)),
    security(("api_key" = [])))]
async fn test_data_source(
    State(state): State<AppState>,
    caller: Caller,
    Path(data_source_id): Path<String>,
    ApiJson(request): ApiJson<DataSourceTestRequest>,
) -> ApiResult<Json<DataSourceTestDto>> {
    caller.require(Role::Admin)?;
    let data_source_id = path_id(&data_source_id, "data source")?;
    let kind_text = request
        .kind
        .as_deref()
        .ok_or_else(|| ApiError::invalid_field("type", "is required: the entity kind"))?;
    let kind = EntityKind::parse(kind_text).ok_or_else(|| {
        ApiError::invalid_field(
            "type",
            format!(
                "'{}' is not an entity kind",
                kind_text.chars().take(60).collect::<String>()
            ),
        )
    })?;
    let value = request
        .value
        .as_deref()
        .map(str::trim)
        .filter(|value| !value.is_empty() && value.len() <= 2048)
        .ok_or_else(|| ApiError::invalid_field("value", "is required: 1 to 2048 bytes"))?;
    let record = state.store()?.get_data_source(data_source_id).await?;
    let config = sleuth_jobs::data_sources::config_of(&record).ok_or_else(|| {
        ApiError::bad_request("this source's stored definition no longer reads; replace it")
    })?;
    let sources = state.data_sources().ok_or_else(|| {
        ApiError::not_ready("data sources cannot run in this process (see its log)", 5)
    })?;
    let tested = sources
        .sources()
        .test(config, &Entity::new(kind, value))
        .await
        .map_err(|error| ApiError::invalid_field("type", error))?;
    let (result, facts, reason) = match tested.result {
        AnswerResult::Found(facts) => (
            "found",
            facts
                .iter()
                .map(|fact| {
                    (
                        fact.kind.as_str().to_string(),
                        serde_json::to_value(&fact.value).unwrap_or_default(),
                    )
                })
                .collect(),
            None,
        ),
        AnswerResult::NotFound => ("not_found", serde_json::Map::new(), None),
        AnswerResult::Failed { reason } => ("failed", serde_json::Map::new(), Some(reason)),
    };
    Ok(Json(DataSourceTestDto {
        result: result.to_string(),
        facts,
        reason,
        raw: tested.raw,
        elapsed_ms: u64::try_from(tested.elapsed.as_millis()).unwrap_or(u64::MAX),
    }))
}
