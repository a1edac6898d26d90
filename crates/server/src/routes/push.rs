//! The push endpoints (ours, beside SPEC's create): one URL per push source,
//! `/app/api/v1/push/{push_source_id}`, that takes a tool's own push format and handshake
//! and answers every investigation the delivery made or found.
//!
//! - Okta event hooks: the one-time verification is a GET carrying
//!   `X-Okta-Verification-Challenge`, answered `{"verification": <value>}`; deliveries are
//!   event hook envelopes whose `data.events` are each an alert.
//! - GitHub webhooks: `X-Hub-Signature-256` must be the HMAC-SHA256 of the body under the
//!   source's signing secret; `ping` answers with no investigation.
//! - Microsoft Graph change notifications: a POST with `validationToken` is answered with
//!   the token as text/plain; every notification's `clientState` must be the source's token.
//! - EventBridge API destinations, Splunk alert actions, Elastic connectors, generic: the
//!   body is one alert or a body `envelopes` recognises.
//!
//! A delivery is never half taken: every alert is read before any is stored, and one that
//! cannot be read refuses the whole delivery with a 400 naming it. Storing is idempotent
//! (alert identities), so a vendor that retries after an error gets the same answer.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Extension, FromRequest, Path, Request, State};
use axum::http::header::{CONTENT_TYPE, HeaderValue};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use sleuth_parsers::envelopes;
use sleuth_store::{PushKind, PushSource};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::audit::AuditSlot;
use crate::dto::push_source::PushAnswerDto;
use crate::error::{ApiError, ApiResult, ErrorBody, ErrorCode};
use crate::extract::{QueryPairs, parse_json, path_id, read_body};
use crate::push_auth::{github_signature_is_valid, presented_token, token_matches};
use crate::state::AppState;
use sleuth_jobs::intake::{AlertOptions, prepare};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(verify_push_source, push_alerts))
}

/// The request body as received, whatever its content type (vendors differ).
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        Ok(RawBody(read_body(request, state).await?))
    }
}

/// Okta's one-time verification of an event hook.
///
/// Okta sends a GET with `X-Okta-Verification-Challenge` (and the authorization header
/// configured on the hook) and expects the challenge back as `{"verification": ...}`.
#[utoipa::path(
    get,
    path = "/app/api/v1/push/{push_source_id}",
    tag = "push",
    params(("push_source_id" = String, Path, description = "The push source id")),
    responses(
        (status = 200, description = "`{\"verification\": <the challenge>}`"),
        (status = 400, description = "Not a verification request", body = ErrorBody),
        (status = 401, description = "No or wrong token", body = ErrorBody),
        (status = 403, description = "The push source is paused", body = ErrorBody),
        (status = 404, description = "No such push source", body = ErrorBody),
    )
)]
async fn verify_push_source(
    State(state): State<AppState>,
    Path(push_source_id): Path<String>,
    headers: HeaderMap,
    query: QueryPairs,
) -> ApiResult<Json<Value>> {
    authenticate(&state, &push_source_id, &headers, &query).await?;
    let challenge = headers
        .get("x-okta-verification-challenge")
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| {
            ApiError::bad_request(
                "a GET on a push URL is Okta's event hook verification and needs the \
                 X-Okta-Verification-Challenge header; tools deliver alerts with POST",
            )
        })?;
    Ok(Json(json!({ "verification": challenge })))
}

/// Deliver alerts in a tool's own push format.
///
/// Authenticate with the source's token (`Authorization: <token>`, `Bearer <token>`, basic
/// auth's password, or `?token=`). The body is one alert, or a body holding several (an
/// Okta event hook delivery, a Graph list, a Security Hub event with several findings, a
/// JSON array, ...): every alert is investigated, and the answer lists every
/// investigation id in delivery order (an alert seen before answers its investigation).
#[utoipa::path(
    post,
    path = "/app/api/v1/push/{push_source_id}",
    tag = "push",
    params(
        ("push_source_id" = String, Path, description = "The push source id"),
        ("token" = Option<String>, Query, description = "The source's token, for tools that can only set a URL"),
        ("validationToken" = Option<String>, Query, description = "Graph's subscription validation: echoed as text/plain"),
    ),
    request_body(content = Object, description = "The tool's push body"),
    responses(
        (status = 200, description = "Every investigation of the delivery", body = PushAnswerDto),
        (status = 400, description = "An alert of the delivery cannot be read (nothing was stored)", body = ErrorBody),
        (status = 401, description = "No or wrong token, or a bad signature", body = ErrorBody),
        (status = 403, description = "The push source is paused", body = ErrorBody),
        (status = 404, description = "No such push source", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    )
)]
async fn push_alerts(
    State(state): State<AppState>,
    Path(push_source_id): Path<String>,
    headers: HeaderMap,
    query: QueryPairs,
    audit: Option<Extension<AuditSlot>>,
    RawBody(body): RawBody,
) -> ApiResult<Response> {
    let source = authenticate(&state, &push_source_id, &headers, &query).await?;
    if source.kind == PushKind::Graph
        && let Some(validation_token) = query.one("validationToken")
    {
        return Ok(graph_validation(validation_token));
    }
    let body = match source.kind {
        PushKind::Github => github_body(&state, &source, &headers, &body).await?,
        _ => body,
    };
    if source.kind == PushKind::Github
        && headers
            .get("x-github-event")
            .is_some_and(|event| event == "ping")
    {
        return Ok(Json(PushAnswerDto {
            investigation_ids: Vec::new(),
        })
        .into_response());
    }
    let raw: Value = parse_json(&body)?;
    let alerts = alerts_of(&source, raw)?;
    let investigation_ids = investigate_all(&state, &source, alerts, audit).await?;
    if let Err(error) = state
        .store()?
        .record_push_delivery(
            source.id,
            i64::try_from(investigation_ids.len()).unwrap_or(i64::MAX),
            chrono::Utc::now(),
        )
        .await
    {
        // The alerts are stored; a lost count is not worth failing the delivery for.
        tracing::warn!(%error, push_source_id = source.id, "could not count a push delivery");
    }
    Ok(Json(PushAnswerDto { investigation_ids }).into_response())
}

/// The push source named by the path, if the request presents its token and it is enabled.
async fn authenticate(
    state: &AppState,
    push_source_id: &str,
    headers: &HeaderMap,
    query: &QueryPairs,
) -> ApiResult<PushSource> {
    let push_source_id = path_id(push_source_id, "push source")?;
    let store = state.store()?;
    let source = store.get_push_source(push_source_id).await?;
    let token = presented_token(headers, query).ok_or_else(|| {
        ApiError::new(
            ErrorCode::Unauthorized,
            "this push URL needs its source's token: `Authorization: <token>`, basic auth with \
             the token as password, or `?token=<token>` on the URL",
        )
    })?;
    if !token_matches(&token, &source.token_hash) {
        return Err(ApiError::new(
            ErrorCode::Unauthorized,
            "the token is not this push source's (an admin can rotate it: PATCH \
             /app/api/v1/push-sources/{push_source_id} with rotate_token)",
        ));
    }
    if !source.enabled {
        return Err(ApiError::new(
            ErrorCode::AccessDenied,
            "this push source is paused; an admin can enable it again",
        ));
    }
    Ok(source)
}

/// Graph's validation of a new subscription: the token back, as text/plain, at once.
fn graph_validation(validation_token: &str) -> Response {
    let mut response = (StatusCode::OK, validation_token.to_string()).into_response();
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response.headers_mut().insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// A GitHub delivery's JSON, once its signature is checked. GitHub sends the JSON as the
/// body, or (content type `application/x-www-form-urlencoded`) in the form field `payload`;
/// the signature is over the body as sent either way.
async fn github_body(
    state: &AppState,
    source: &PushSource,
    headers: &HeaderMap,
    body: &Bytes,
) -> ApiResult<Bytes> {
    let secret_name = source.signing_secret.as_deref().ok_or_else(|| {
        ApiError::new(
            ErrorCode::Unauthorized,
            "this GitHub push source has no signing secret; an admin must recreate it with one",
        )
    })?;
    let stored = state
        .store()?
        .script_secrets(&[secret_name.to_string()])
        .await?;
    let row = stored.get(secret_name).ok_or_else(|| {
        ApiError::new(
            ErrorCode::Unauthorized,
            format!(
                "the signing secret '{secret_name}' of this push source is not stored; an \
                 admin must store it (`sleuth secret set {secret_name}`)"
            ),
        )
    })?;
    let secret =
        sleuth_jobs::secret_keys::open(state.keyring(), secret_name, row).map_err(|error| {
            // The reason names the key setting; the sender only needs to know to retry.
            tracing::error!(push_source_id = source.id, "{error}");
            ApiError::not_ready(
                "this push source's signing secret cannot be opened by Sleuth now; its operator \
             is told why in the log",
                state.settings().server.retry_after_seconds,
            )
        })?;
    if !github_signature_is_valid(headers, body, &secret.0) {
        return Err(ApiError::new(
            ErrorCode::Unauthorized,
            "X-Hub-Signature-256 is missing or is not the HMAC-SHA256 of the body under this \
             source's webhook secret",
        ));
    }
    let form = headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/x-www-form-urlencoded"));
    if !form {
        return Ok(body.clone());
    }
    form_urlencoded::parse(body)
        .find(|(name, _)| name == "payload")
        .map(|(_, payload)| Bytes::from(payload.into_owned()))
        .ok_or_else(|| ApiError::bad_request("a form-encoded GitHub delivery has no `payload`"))
}

/// The alerts of a delivery, each as its parser reads it on its own.
fn alerts_of(source: &PushSource, raw: Value) -> ApiResult<Vec<Value>> {
    if source.kind == PushKind::Graph {
        return graph_alerts(source, &raw);
    }
    let alerts = match envelopes::split(&raw) {
        Some(envelope) => envelope.items,
        None => vec![raw],
    };
    if alerts.is_empty() {
        return Err(ApiError::bad_request(
            "the delivery holds no alert (an empty list); nothing was stored",
        ));
    }
    if alerts.len() > envelopes::MAX_ITEMS {
        return Err(ApiError::bad_request(format!(
            "the delivery holds {} alerts; send at most {} per request",
            alerts.len(),
            envelopes::MAX_ITEMS
        )));
    }
    Ok(alerts)
}

/// Graph change notifications: each must carry the source's token as its `clientState`
/// (set when the subscription was made), and the alert itself as `resourceData`. A
/// notification that names only the alert's id cannot be investigated from here.
fn graph_alerts(source: &PushSource, raw: &Value) -> ApiResult<Vec<Value>> {
    let Some(notifications) = envelopes::change_notifications(raw) else {
        // Not notifications: a Graph alert, or a list of them, sent by another tool.
        return Ok(match envelopes::split(raw) {
            Some(envelope) => envelope.items,
            None => vec![raw.clone()],
        });
    };
    let mut alerts = Vec::with_capacity(notifications.len());
    for (index, notification) in notifications.iter().enumerate() {
        let client_state = notification.get("clientState").and_then(Value::as_str);
        if !client_state.is_some_and(|state| token_matches(state, &source.token_hash)) {
            return Err(ApiError::new(
                ErrorCode::Unauthorized,
                format!(
                    "notification {index}: clientState is not this push source's token (set \
                     clientState to the token when creating the Graph subscription)"
                ),
            ));
        }
        let resource = notification
            .get("resourceData")
            .filter(|data| carries_the_alert(data))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "notification {index} names its alert ({}) without its content; Graph sends \
                     alert content only in rich notifications, so poll security alerts with a \
                     Graph connector instead (docs/sources.md)",
                    notification
                        .get("resource")
                        .and_then(Value::as_str)
                        .unwrap_or("no resource")
                        .chars()
                        .take(200)
                        .collect::<String>()
                ))
            })?;
        alerts.push(resource.clone());
    }
    Ok(alerts)
}

/// Whether a notification's `resourceData` is the alert itself, not only its type and id
/// (what Graph sends unless the subscription asked for rich notifications).
fn carries_the_alert(resource_data: &Value) -> bool {
    resource_data.as_object().is_some_and(|fields| {
        fields.keys().any(|key| {
            !matches!(
                key.as_str(),
                "@odata.type" | "@odata.id" | "@odata.etag" | "id"
            )
        })
    }) && sleuth_parsers::detect(resource_data).key != "generic"
}

/// Reads every alert first (all or nothing), then stores them together; their ids in order.
async fn investigate_all(
    state: &AppState,
    source: &PushSource,
    alerts: Vec<Value>,
    audit: Option<Extension<AuditSlot>>,
) -> ApiResult<Vec<i64>> {
    let store = state.store()?;
    let options = AlertOptions {
        schema_key: None,
        tenant_union_id: source.tenant_union_id,
        tenant_integration_key: None,
    };
    let mut prepared = Vec::with_capacity(alerts.len());
    let count = alerts.len();
    for (index, alert) in alerts.into_iter().enumerate() {
        let text = alert.to_string();
        let new_alert = prepare(store.as_ref(), text, &alert, &options)
            .await
            .map_err(|error| {
                let error = ApiError::from(error);
                if count == 1 {
                    error
                } else {
                    ApiError::bad_request(format!(
                        "alert {index} of {count} cannot be read, so none was stored: {}",
                        error.message
                    ))
                }
            })?;
        prepared.push(new_alert);
    }
    let entry = audit.map(|Extension(slot)| {
        let mut entry = slot.take_entry();
        entry
            .detail
            .insert("push_source_id".into(), json!(source.id));
        entry
    });
    // Submitted together, so that group commit stores them in as few batches as it can.
    let creates = prepared.into_iter().map(|alert| {
        let store = store.clone();
        let entry = entry.clone();
        async move {
            store
                .create_investigation_audited(alert, false, entry)
                .await
        }
    });
    let created = futures_util::future::join_all(creates).await;
    created
        .into_iter()
        .map(|created| {
            created
                .map(|created| created.investigation_id())
                .map_err(ApiError::from)
        })
        .collect()
}
