//! Pull connectors (ours, admin): create, list with state, read, change (pause, resume,
//! settings, start again from the backfill window), test (one page read and parsed,
//! nothing stored), delete. The runtime that polls them is `connector_runtime`.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use sleuth_connectors::{Kind, Settings};
use sleuth_domain::Role;
use sleuth_store::{ConnectorChanges, NewConnector, Store};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::dto::connector::{ConnectorDto, ConnectorTestDto};
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, path_id};
use crate::routes::push_sources::validate_name;
use crate::state::AppState;

/// The shortest and longest time between two polls.
const MIN_INTERVAL_SECONDS: i64 = 1;
const MAX_INTERVAL_SECONDS: i64 = 86_400;
const DEFAULT_INTERVAL_SECONDS: i64 = 300;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_connectors, create_connector))
        .routes(routes!(get_connector, update_connector, delete_connector))
        .routes(routes!(test_connector))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectorRequest {
    /// 1 to 100 characters, unique.
    pub name: Option<String>,
    /// crowdstrike, graph_security, okta, sentinelone, elastic or google_workspace.
    pub kind: Option<String>,
    /// base_url, secret (the name of a stored secret), and per vendor client_id,
    /// tenant_id, token_url, subject, customer_id, backfill_hours, page_size, min_severity,
    /// types, filter, index.
    #[schema(value_type = Object)]
    pub settings: Option<serde_json::Value>,
    /// Seconds between polls (1 to 86400; 300 when not given).
    pub interval_seconds: Option<i64>,
    /// false makes it paused.
    pub enabled: Option<bool>,
    /// The tenant union every alert of this connector joins.
    pub tenant_union_id: Option<i64>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectorUpdate {
    /// Replaces the settings whole.
    #[schema(value_type = Option<Object>)]
    pub settings: Option<serde_json::Value>,
    pub interval_seconds: Option<i64>,
    /// false pauses it; true resumes it (it polls at once).
    pub enabled: Option<bool>,
    /// `null`: each alert decides, as creates do.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<i64>)]
    pub tenant_union_id: Option<Option<i64>>,
    /// true forgets the cursor: the next poll reads the backfill window again (alerts
    /// already stored are not stored twice).
    pub reset_cursor: Option<bool>,
}

/// A field that was sent, `null` included.
pub(crate) fn present<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<i64>>, D::Error> {
    Option::<i64>::deserialize(deserializer).map(Some)
}

fn validate_kind(kind: Option<&str>) -> ApiResult<Kind> {
    let known = || {
        Kind::ALL
            .iter()
            .map(|kind| kind.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let kind = kind.ok_or_else(|| {
        ApiError::invalid_field("kind", format!("is required: one of {}", known()))
    })?;
    Kind::parse(kind).ok_or_else(|| {
        ApiError::invalid_field(
            "kind",
            format!(
                "'{}' is not a connector kind: one of {}",
                kind.chars().take(50).collect::<String>(),
                known()
            ),
        )
    })
}

fn validate_interval(interval: Option<i64>) -> ApiResult<Option<i64>> {
    match interval {
        Some(seconds) if !(MIN_INTERVAL_SECONDS..=MAX_INTERVAL_SECONDS).contains(&seconds) => {
            Err(ApiError::invalid_field(
                "interval_seconds",
                format!("must be between {MIN_INTERVAL_SECONDS} and {MAX_INTERVAL_SECONDS}"),
            ))
        }
        other => Ok(other),
    }
}

/// Checks the settings for `kind`, and that the secret they name is stored.
async fn validate_settings(
    store: &dyn Store,
    kind: Kind,
    settings: &serde_json::Value,
) -> ApiResult<()> {
    let checked = Settings::check(kind, settings).map_err(|error| {
        ApiError::invalid_field(&format!("settings.{}", error.field), error.message)
    })?;
    let known = store.list_script_secrets().await?;
    if !known.iter().any(|stored| stored.name == checked.secret) {
        return Err(ApiError::invalid_field(
            "settings.secret",
            "names no stored secret: store the client secret or API token first \
             (`sleuth secret set NAME`)",
        ));
    }
    Ok(())
}

pub(crate) async fn validate_tenant_union(
    store: &dyn Store,
    tenant_union_id: Option<i64>,
) -> ApiResult<()> {
    let Some(tenant_union_id) = tenant_union_id else {
        return Ok(());
    };
    store
        .get_tenant_union(tenant_union_id)
        .await
        .map(drop)
        .map_err(|error| match error {
            sleuth_store::StoreError::NotFound { .. } => ApiError::invalid_field(
                "tenant_union_id",
                format!("tenant union {tenant_union_id} does not exist"),
            ),
            other => ApiError::from(other),
        })
}

/// List connectors with the state of their polls (admin).
#[utoipa::path(get, path = "/app/api/v1/connectors", tag = "connectors",
    responses((status = 200, body = Vec<ConnectorDto>), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("api_key" = [])))]
async fn list_connectors(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<ConnectorDto>>> {
    caller.require(Role::Admin)?;
    let now = chrono::Utc::now();
    let connectors = state.store()?.list_connectors().await?;
    Ok(Json(
        connectors
            .iter()
            .map(|connector| ConnectorDto::new(connector, now))
            .collect(),
    ))
}

/// Create a connector (admin); it polls at once unless created paused.
#[utoipa::path(post, path = "/app/api/v1/connectors", tag = "connectors", request_body = ConnectorRequest,
    responses((status = 201, body = ConnectorDto), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("api_key" = [])))]
async fn create_connector(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<ConnectorRequest>,
) -> ApiResult<(StatusCode, Json<ConnectorDto>)> {
    caller.require(Role::Admin)?;
    let name = validate_name(request.name.as_deref())?;
    let kind = validate_kind(request.kind.as_deref())?;
    let interval_seconds =
        validate_interval(request.interval_seconds)?.unwrap_or(DEFAULT_INTERVAL_SECONDS);
    let settings = request
        .settings
        .ok_or_else(|| ApiError::invalid_field("settings", "is required"))?;
    let store = state.store()?;
    validate_settings(store.as_ref(), kind, &settings).await?;
    validate_tenant_union(store.as_ref(), request.tenant_union_id).await?;
    let now = chrono::Utc::now();
    let connector = store
        .create_connector(&NewConnector {
            name,
            kind: kind.as_str().to_owned(),
            settings,
            tenant_union_id: request.tenant_union_id,
            enabled: request.enabled.unwrap_or(true),
            interval_seconds,
            created_by: Some(caller.user_id()),
            at: now,
        })
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(ConnectorDto::new(&connector, now)),
    ))
}

/// Read a connector and the state of its polls (admin).
#[utoipa::path(get, path = "/app/api/v1/connectors/{connector_id}", tag = "connectors",
    params(("connector_id" = String, Path)),
    responses((status = 200, body = ConnectorDto), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn get_connector(
    State(state): State<AppState>,
    caller: Caller,
    Path(connector_id): Path<String>,
) -> ApiResult<Json<ConnectorDto>> {
    caller.require(Role::Admin)?;
    let connector_id = path_id(&connector_id, "connector")?;
    let connector = state.store()?.get_connector(connector_id).await?;
    Ok(Json(ConnectorDto::new(&connector, chrono::Utc::now())))
}

/// Change a connector (admin): pause or resume it, replace its settings, change its
/// interval or tenant union, or make it read its backfill window again.
#[utoipa::path(patch, path = "/app/api/v1/connectors/{connector_id}", tag = "connectors",
    params(("connector_id" = String, Path)), request_body = ConnectorUpdate,
    responses((status = 200, body = ConnectorDto), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn update_connector(
    State(state): State<AppState>,
    caller: Caller,
    Path(connector_id): Path<String>,
    ApiJson(request): ApiJson<ConnectorUpdate>,
) -> ApiResult<Json<ConnectorDto>> {
    caller.require(Role::Admin)?;
    let connector_id = path_id(&connector_id, "connector")?;
    if request.settings.is_none()
        && request.interval_seconds.is_none()
        && request.enabled.is_none()
        && request.tenant_union_id.is_none()
        && request.reset_cursor.is_none()
    {
        return Err(ApiError::bad_request(
            "nothing to change: send settings, interval_seconds, enabled, tenant_union_id \
             and/or reset_cursor",
        ));
    }
    let interval_seconds = validate_interval(request.interval_seconds)?;
    let store = state.store()?;
    let current = store.get_connector(connector_id).await?;
    if let Some(settings) = &request.settings {
        let kind = Kind::parse(&current.kind).ok_or_else(|| {
            ApiError::bad_request(format!(
                "this connector's kind '{}' is not one this Sleuth knows",
                current.kind
            ))
        })?;
        validate_settings(store.as_ref(), kind, settings).await?;
    }
    if let Some(tenant_union_id) = request.tenant_union_id {
        validate_tenant_union(store.as_ref(), tenant_union_id).await?;
    }
    let now = chrono::Utc::now();
    let connector = store
        .update_connector(
            connector_id,
            &ConnectorChanges {
                settings: request.settings,
                enabled: request.enabled,
                interval_seconds,
                tenant_union_id: request.tenant_union_id,
                reset_cursor: request.reset_cursor.unwrap_or(false),
            },
            now,
        )
        .await?;
    Ok(Json(ConnectorDto::new(&connector, now)))
}

/// Delete a connector (admin); the investigations it made stay.
#[utoipa::path(delete, path = "/app/api/v1/connectors/{connector_id}", tag = "connectors",
    params(("connector_id" = String, Path)),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn delete_connector(
    State(state): State<AppState>,
    caller: Caller,
    Path(connector_id): Path<String>,
) -> ApiResult<StatusCode> {
    caller.require(Role::Admin)?;
    let connector_id = path_id(&connector_id, "connector")?;
    state.store()?.delete_connector(connector_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Test a connector (admin): sign in, read one page from where its next poll would start,
/// parse it, store nothing. A vendor that refuses or fails is an answer (`ok: false`).
#[utoipa::path(post, path = "/app/api/v1/connectors/{connector_id}/test", tag = "connectors",
    params(("connector_id" = String, Path)),
    responses((status = 200, body = ConnectorTestDto), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn test_connector(
    State(state): State<AppState>,
    caller: Caller,
    Path(connector_id): Path<String>,
) -> ApiResult<Json<ConnectorTestDto>> {
    caller.require(Role::Admin)?;
    let connector_id = path_id(&connector_id, "connector")?;
    let store = state.store()?;
    let connector = store.get_connector(connector_id).await?;
    let answer = match sleuth_jobs::connector_runtime::test_poll(&state, store, &connector).await {
        Ok(summary) => ConnectorTestDto {
            ok: true,
            error: None,
            alerts: summary.alerts,
            readable: summary.readable,
            filtered: summary.filtered,
            refusal: summary.refusal,
            titles: summary.titles,
            more_pages: summary.more_pages,
        },
        Err(error) => ConnectorTestDto {
            ok: false,
            error: Some(error),
            alerts: 0,
            readable: 0,
            filtered: 0,
            refusal: None,
            titles: Vec::new(),
            more_pages: false,
        },
    };
    Ok(Json(answer))
}
