//! Notification destinations (ours, admin): create, list with state, read, change, disable,
//! test (a test event sent now, answering what the receiver said), the delivery log of a
//! destination, and sending a dead delivery again. The deliverer is
//! `sleuth_jobs::notify_delivery`; docs/notifications.md. Secrets are only named here:
//! no answer ever holds a URL's token, a key or a password.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use sleuth_domain::Role;
use sleuth_jobs::notify_destination::{self as check, Problem};
use sleuth_jobs::notify_transport::Attempt;
use sleuth_store::{
    DeliveryQuery, DeliveryState, NewNotificationDestination, NotificationDestinationChanges,
};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::dto::notification::{DeliveryDto, NotificationDestinationDto, NotificationTestDto};
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, QueryPairs, path_id};
use crate::routes::push_sources::validate_name;
use crate::state::AppState;

/// Deliveries per page: default and most.
const DEFAULT_DELIVERIES: u32 = 50;
const MAX_DELIVERIES: u32 = 1000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_destinations, create_destination))
        .routes(routes!(get_destination, update_destination))
        .routes(routes!(disable_destination))
        .routes(routes!(test_destination))
        .routes(routes!(list_deliveries))
        .routes(routes!(redeliver))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DestinationRequest {
    /// 1 to 100 characters, unique.
    pub name: Option<String>,
    /// webhook, slack, teams, pagerduty, syslog or email.
    pub kind: Option<String>,
    /// Per kind (docs/notifications.md): webhook `url_secret`, `signing_secret`; slack and
    /// teams `url_secret`; pagerduty `routing_key_secret`, `events_url`; syslog `address`,
    /// `protocol` (tcp, udp), `facility`, `hostname`. `*_secret` fields name stored secrets.
    #[schema(value_type = Object)]
    pub settings: Option<serde_json::Value>,
    /// `events` (investigation.concluded, investigation.closed, system.event) and the
    /// filters `outcomes`, `priority_at_least`, `sources`, `tenant_unions`, `insight_tags`.
    #[schema(value_type = Object)]
    pub rule: Option<serde_json::Value>,
    /// The headline, with placeholders such as `{priority}`, `{title}`, `{link}`.
    pub template: Option<String>,
    /// false makes it disabled.
    pub enabled: Option<bool>,
    /// At most this many sends a minute (1 to 60000).
    pub rate_limit_per_minute: Option<i64>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DestinationUpdate {
    pub name: Option<String>,
    /// Replaces the settings whole.
    #[schema(value_type = Option<Object>)]
    pub settings: Option<serde_json::Value>,
    /// Replaces the rule whole.
    #[schema(value_type = Option<Object>)]
    pub rule: Option<serde_json::Value>,
    /// `null`: the default headline again.
    #[serde(default, deserialize_with = "present_text")]
    #[schema(value_type = Option<String>)]
    pub template: Option<Option<String>>,
    /// false disables it; true enables it again (from the events after now).
    pub enabled: Option<bool>,
    /// `null`: no limit.
    #[serde(default, deserialize_with = "crate::routes::connectors::present")]
    #[schema(value_type = Option<i64>)]
    pub rate_limit_per_minute: Option<Option<i64>>,
}

/// A field that was sent, `null` included.
fn present_text<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(deserializer).map(Some)
}

impl From<Problem> for ApiError {
    fn from(problem: Problem) -> ApiError {
        match problem {
            Problem::Field { field, message } => ApiError::invalid_field(&field, message),
            Problem::Store(error) => ApiError::from(error),
        }
    }
}

/// The deliveries list's parameters, for the OpenAPI description.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Read by utoipa's derive for the OpenAPI description only.
pub struct DeliveryParameters {
    /// pending, delivered or dead.
    state: Option<String>,
    /// Deliveries older than this one (the next page: the last id received).
    before_id: Option<i64>,
    /// Results per page: default 50, at most 1000 (larger values are clamped).
    limit: Option<i64>,
}

/// List notification destinations with the state of their deliveries (admin).
#[utoipa::path(get, path = "/app/api/v1/notifications/destinations", tag = "notifications",
    responses((status = 200, body = Vec<NotificationDestinationDto>), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("api_key" = [])))]
async fn list_destinations(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<NotificationDestinationDto>>> {
    caller.require(Role::Admin)?;
    let now = chrono::Utc::now();
    let destinations = state.store()?.list_notification_destinations().await?;
    Ok(Json(
        destinations
            .iter()
            .map(|destination| NotificationDestinationDto::new(destination, now))
            .collect(),
    ))
}

/// Create a notification destination (admin); it is told of the events from now on.
#[utoipa::path(post, path = "/app/api/v1/notifications/destinations", tag = "notifications",
    request_body = DestinationRequest,
    responses((status = 201, body = NotificationDestinationDto), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("api_key" = [])))]
async fn create_destination(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<DestinationRequest>,
) -> ApiResult<(StatusCode, Json<NotificationDestinationDto>)> {
    caller.require(Role::Admin)?;
    let name = validate_name(request.name.as_deref())?;
    let kind = check::kind(request.kind.as_deref())?;
    let settings = request
        .settings
        .ok_or_else(|| ApiError::invalid_field("settings", "is required"))?;
    let rule = request
        .rule
        .ok_or_else(|| ApiError::invalid_field("rule", "is required"))?;
    check::rule(&rule)?;
    if let Some(template) = &request.template {
        check::template(template)?;
    }
    let rate_limit = request
        .rate_limit_per_minute
        .map(check::rate_limit)
        .transpose()?;
    let store = state.store()?;
    check::settings(store, kind, &settings).await?;
    let now = chrono::Utc::now();
    let destination = store
        .create_notification_destination(&NewNotificationDestination {
            name,
            kind: kind.as_str().to_owned(),
            settings,
            rule,
            template: request.template,
            enabled: request.enabled.unwrap_or(true),
            rate_limit_per_minute: rate_limit,
            created_by: Some(caller.user_id()),
            at: now,
        })
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(NotificationDestinationDto::new(&destination, now)),
    ))
}

/// Read a notification destination and the state of its deliveries (admin).
#[utoipa::path(get, path = "/app/api/v1/notifications/destinations/{destination_id}", tag = "notifications",
    params(("destination_id" = String, Path)),
    responses((status = 200, body = NotificationDestinationDto), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn get_destination(
    State(state): State<AppState>,
    caller: Caller,
    Path(destination_id): Path<String>,
) -> ApiResult<Json<NotificationDestinationDto>> {
    caller.require(Role::Admin)?;
    let destination_id = path_id(&destination_id, "notification destination")?;
    let destination = state
        .store()?
        .get_notification_destination(destination_id)
        .await?;
    Ok(Json(NotificationDestinationDto::new(
        &destination,
        chrono::Utc::now(),
    )))
}

/// Change a notification destination (admin): its name, settings, rule, template, rate
/// limit, or enable or disable it.
#[utoipa::path(patch, path = "/app/api/v1/notifications/destinations/{destination_id}", tag = "notifications",
    params(("destination_id" = String, Path)), request_body = DestinationUpdate,
    responses((status = 200, body = NotificationDestinationDto), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn update_destination(
    State(state): State<AppState>,
    caller: Caller,
    Path(destination_id): Path<String>,
    ApiJson(request): ApiJson<DestinationUpdate>,
) -> ApiResult<Json<NotificationDestinationDto>> {
    caller.require(Role::Admin)?;
    let destination_id = path_id(&destination_id, "notification destination")?;
    if request.name.is_none()
        && request.settings.is_none()
        && request.rule.is_none()
        && request.template.is_none()
        && request.enabled.is_none()
        && request.rate_limit_per_minute.is_none()
    {
        return Err(ApiError::bad_request(
            "nothing to change: send name, settings, rule, template, enabled and/or \
             rate_limit_per_minute",
        ));
    }
    let name = request
        .name
        .as_deref()
        .map(|name| validate_name(Some(name)))
        .transpose()?;
    if let Some(rule) = &request.rule {
        check::rule(rule)?;
    }
    if let Some(Some(template)) = &request.template {
        check::template(template)?;
    }
    let rate_limit = match request.rate_limit_per_minute {
        Some(Some(limit)) => Some(Some(check::rate_limit(limit)?)),
        other => other,
    };
    let store = state.store()?;
    let current = store.get_notification_destination(destination_id).await?;
    if let Some(settings) = &request.settings {
        let kind = check::kind(Some(&current.kind))?;
        check::settings(store, kind, settings).await?;
    }
    let now = chrono::Utc::now();
    let destination = store
        .update_notification_destination(
            destination_id,
            &NotificationDestinationChanges {
                name,
                settings: request.settings,
                rule: request.rule,
                template: request.template,
                enabled: request.enabled,
                rate_limit_per_minute: rate_limit,
            },
            now,
        )
        .await?;
    Ok(Json(NotificationDestinationDto::new(&destination, now)))
}

/// Disable a notification destination (admin): it is told nothing until enabled again.
/// Its pending deliveries wait; its log stays.
#[utoipa::path(post, path = "/app/api/v1/notifications/destinations/{destination_id}/disable", tag = "notifications",
    params(("destination_id" = String, Path)),
    responses((status = 200, body = NotificationDestinationDto), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn disable_destination(
    State(state): State<AppState>,
    caller: Caller,
    Path(destination_id): Path<String>,
) -> ApiResult<Json<NotificationDestinationDto>> {
    caller.require(Role::Admin)?;
    let destination_id = path_id(&destination_id, "notification destination")?;
    let now = chrono::Utc::now();
    let destination = state
        .store()?
        .update_notification_destination(
            destination_id,
            &NotificationDestinationChanges {
                enabled: Some(false),
                ..NotificationDestinationChanges::default()
            },
            now,
        )
        .await?;
    Ok(Json(NotificationDestinationDto::new(&destination, now)))
}

/// Send a test event to a notification destination now (admin), outside its delivery log,
/// and answer what the receiver said. A receiver that refuses or is down is an answer
/// (`ok: false`).
#[utoipa::path(post, path = "/app/api/v1/notifications/destinations/{destination_id}/test", tag = "notifications",
    params(("destination_id" = String, Path)),
    responses((status = 200, body = NotificationTestDto), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn test_destination(
    State(state): State<AppState>,
    caller: Caller,
    Path(destination_id): Path<String>,
) -> ApiResult<Json<NotificationTestDto>> {
    caller.require(Role::Admin)?;
    let destination_id = path_id(&destination_id, "notification destination")?;
    let store = state.store()?;
    let destination = store.get_notification_destination(destination_id).await?;
    let answer = match sleuth_jobs::notify_delivery::send_test(&state, store, &destination).await {
        Attempt::Delivered { detail } => NotificationTestDto {
            ok: true,
            result: "delivered".into(),
            detail,
        },
        Attempt::TryAgain { reason, .. } => NotificationTestDto {
            ok: false,
            result: "try_again".into(),
            detail: reason,
        },
        Attempt::Refused { reason } => NotificationTestDto {
            ok: false,
            result: "refused".into(),
            detail: reason,
        },
    };
    Ok(Json(answer))
}

/// List a destination's deliveries, newest first, optionally in one state (admin).
#[utoipa::path(get, path = "/app/api/v1/notifications/destinations/{destination_id}/deliveries", tag = "notifications",
    params(("destination_id" = String, Path), DeliveryParameters),
    responses((status = 200, body = Vec<DeliveryDto>), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn list_deliveries(
    State(state): State<AppState>,
    caller: Caller,
    Path(destination_id): Path<String>,
    query: QueryPairs,
) -> ApiResult<Json<Vec<DeliveryDto>>> {
    caller.require(Role::Admin)?;
    let destination_id = path_id(&destination_id, "notification destination")?;
    let state_filter = query
        .one("state")
        .map(|text| {
            DeliveryState::parse(text).ok_or_else(|| {
                ApiError::invalid_field("state", "must be pending, delivered or dead")
            })
        })
        .transpose()?;
    let before_id = query
        .one("before_id")
        .map(|text| {
            text.parse::<i64>()
                .map_err(|_| ApiError::invalid_field("before_id", "must be a delivery id"))
        })
        .transpose()?;
    let limit = match query.one("limit") {
        None => DEFAULT_DELIVERIES,
        Some(text) => match text.parse::<i64>() {
            Ok(limit) if limit >= 1 => {
                u32::try_from(limit.min(i64::from(MAX_DELIVERIES))).unwrap_or(MAX_DELIVERIES)
            }
            _ => {
                return Err(ApiError::invalid_field(
                    "limit",
                    "must be a positive number",
                ));
            }
        },
    };
    let store = state.store()?;
    store.get_notification_destination(destination_id).await?;
    let deliveries = store
        .list_notification_deliveries(&DeliveryQuery {
            destination_id,
            state: state_filter,
            before_id,
            limit,
        })
        .await?;
    Ok(Json(deliveries.iter().map(DeliveryDto::from).collect()))
}

/// Send a dead delivery again (admin): it is pending at once, its attempts counted anew.
/// 400 when it is not dead.
#[utoipa::path(post, path = "/app/api/v1/notifications/destinations/{destination_id}/deliveries/{delivery_id}/redeliver", tag = "notifications",
    params(("destination_id" = String, Path), ("delivery_id" = String, Path)),
    responses((status = 200, body = DeliveryDto), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn redeliver(
    State(state): State<AppState>,
    caller: Caller,
    Path((destination_id, delivery_id)): Path<(String, String)>,
) -> ApiResult<Json<DeliveryDto>> {
    caller.require(Role::Admin)?;
    let destination_id = path_id(&destination_id, "notification destination")?;
    let delivery_id = path_id(&delivery_id, "notification delivery")?;
    let delivery = state
        .store()?
        .redeliver_notification(destination_id, delivery_id, chrono::Utc::now())
        .await?;
    Ok(Json(DeliveryDto::from(&delivery)))
}
