//! The investigation endpoints of SPEC: create, create from arbitrary JSON, read one, list;
//! and our cancel endpoint.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::{Extension, Json};
use serde_json::Value;
use sleuth_domain::{InvestigationStatus, Role};
use sleuth_jobs::intake::{AlertOptions, prepare};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::audit::AuditSlot;
use crate::auth::Caller;
use crate::dto::investigation::{
    CreateInvestigationRequest, CreateInvestigationResponse, InvestigationDto,
    InvestigationListItemDto, PaginatedInvestigationList, PaginatedInvestigationListBody,
};
use crate::dto::revision::AlertRevisionsDto;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{
    ApiJson, JsonText, QueryPairs, parse_json, path_id, query_bool, query_integer,
};
use crate::links;
use crate::list_budget;
use crate::list_query;
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_investigations))
        .routes(routes!(create_investigation))
        .routes(routes!(create_custom_investigation))
        .routes(routes!(get_investigation))
        .routes(routes!(get_alert_revisions))
        .routes(routes!(cancel_investigation))
}

/// Create an investigation for an alert.
///
/// The alert is stored with its investigation before the answer is sent. The same alert
/// again answers the existing investigation's id, unless `force_reinvestigation` is true.
#[utoipa::path(
    post,
    path = "/app/api/v1/investigation/create",
    tag = "investigations",
    request_body = CreateInvestigationRequest,
    responses(
        (status = 200, description = "The investigation (new or existing)", body = CreateInvestigationResponse),
        (status = 400, description = "Bad request: not an object, unknown schema_key or tenant_union_id", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (member role needed)", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
async fn create_investigation(
    State(state): State<AppState>,
    caller: Caller,
    audit: Option<Extension<AuditSlot>>,
    ApiJson(request): ApiJson<CreateInvestigationRequest>,
) -> ApiResult<Json<CreateInvestigationResponse>> {
    caller.require(Role::Member)?;
    let raw = request.raw_alert_content.ok_or_else(|| {
        ApiError::invalid_field(
            "raw_alert_content",
            "is required: the alert, as a JSON object",
        )
    })?;
    let tenant_union_id = request
        .tenant_union_id
        .map(|number| {
            number.as_i64().filter(|id| *id > 0).ok_or_else(|| {
                ApiError::invalid_field(
                    "tenant_union_id",
                    format!("{number} is not a tenant union id"),
                )
            })
        })
        .transpose()?;
    let submission = Submission {
        raw_text: raw.get().to_string(),
        force: request.force_reinvestigation.unwrap_or(false),
        options: AlertOptions {
            schema_key: request.schema_key,
            tenant_union_id,
            tenant_integration_key: request.tenant_integration_key,
        },
    };
    submit(&state, &caller, submission, audit).await.map(Json)
}

/// Create an investigation from any JSON object.
///
/// The body is the alert itself; its format is detected (the generic parser reads anything
/// else). Query: `force_reinvestigation`, `tenant_union_id`.
#[utoipa::path(
    post,
    path = "/app/api/v1/investigation/create/custom",
    tag = "investigations",
    request_body(content = Object, description = "The alert: any JSON object"),
    params(
        ("force_reinvestigation" = Option<bool>, Query, description = "Make a new investigation even for a known alert"),
        ("tenant_union_id" = Option<i64>, Query, description = "The tenant union the alert belongs to"),
        ("tenant_integration_key" = Option<String>, Query, description = "The integration the alert came through"),
    ),
    responses(
        (status = 200, description = "The investigation (new or existing)", body = CreateInvestigationResponse),
        (status = 400, description = "Bad request (error_msg says why)", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (member role needed)", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
async fn create_custom_investigation(
    State(state): State<AppState>,
    caller: Caller,
    audit: Option<Extension<AuditSlot>>,
    query: QueryPairs,
    JsonText(body): JsonText,
) -> ApiResult<Json<CreateInvestigationResponse>> {
    caller.require(Role::Member)?;
    let tenant_union_id = query_integer(&query, "tenant_union_id")?;
    if tenant_union_id.is_some_and(|id| id <= 0) {
        return Err(ApiError::invalid_field(
            "tenant_union_id",
            "must be a positive integer",
        ));
    }
    let submission = Submission {
        raw_text: String::from_utf8(body.to_vec())
            .map_err(|_| ApiError::bad_request("the body is not valid UTF-8 JSON"))?,
        force: query_bool(&query, "force_reinvestigation")?.unwrap_or(false),
        options: AlertOptions {
            schema_key: None,
            tenant_union_id,
            tenant_integration_key: query.one("tenant_integration_key").map(str::to_string),
        },
    };
    submit(&state, &caller, submission, audit).await.map(Json)
}

/// An alert as received, before it is parsed.
struct Submission {
    raw_text: String,
    force: bool,
    options: AlertOptions,
}

/// The one path of every alert into Sleuth: parse, find its identity, store once. A caller
/// bound to tenant unions may only put alerts into them (403 otherwise, before anything is
/// read, so the answer tells nothing of other unions).
async fn submit(
    state: &AppState,
    caller: &Caller,
    submission: Submission,
    audit: Option<Extension<AuditSlot>>,
) -> ApiResult<CreateInvestigationResponse> {
    let store = state.store()?;
    if let Some(id) = submission.options.tenant_union_id {
        caller.require_union(id)?;
    }
    let raw: Value = parse_json(submission.raw_text.as_bytes())?;
    refuse_several_alerts(&raw)?;
    let alert = prepare(
        store.as_ref(),
        submission.raw_text,
        &raw,
        &submission.options,
    )
    .await?;
    caller.require_union(alert.tenant_union_id).map_err(|_| {
        ApiError::new(
            crate::error::ErrorCode::AccessDenied,
            format!(
                "this alert belongs to tenant union {}, which your key does not reach ({}); \
                 name one of yours in tenant_union_id",
                alert.tenant_union_id,
                caller.scope()
            ),
        )
    })?;
    // The alert and the audit record of its submission commit together.
    let audit = audit.map(|Extension(slot)| slot.take_entry());
    let created = store
        .create_investigation_audited(alert, submission.force, audit)
        .await?;
    Ok(CreateInvestigationResponse {
        investigation_id: created.investigation_id(),
    })
}

/// Refuses a body that holds several alerts (or none) in a vendor's envelope: SPEC's create
/// answers one investigation id, and taking only the first alert would drop the others
/// without a word. The push endpoints take such bodies whole.
fn refuse_several_alerts(raw: &Value) -> ApiResult<()> {
    let Some(envelope) = sleuth_parsers::envelopes::split(raw) else {
        return Ok(());
    };
    if raw.is_object() && envelope.items.len() == 1 {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "the body is {}; this endpoint takes one alert per request. Send each alert on its \
         own, or send the body as it is to a push source (`POST /app/api/v1/push/{{source_id}}`, \
         kind `{}`; docs/sources.md), which investigates every alert it holds",
        sleuth_parsers::envelopes::describe_count(&envelope),
        envelope.kind.push_source,
    )))
}

/// Read one investigation.
///
/// `status` shows progress (`not_asked` queued, `loading` running, `success`, `error`);
/// `ready` is true once it concluded.
#[utoipa::path(
    get,
    path = "/app/api/v1/investigation/{investigation_id}",
    tag = "investigations",
    params(("investigation_id" = String, Path, description = "The investigation id")),
    responses(
        (status = 200, description = "The investigation", body = InvestigationDto),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 404, description = "No such investigation", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
async fn get_investigation(
    State(state): State<AppState>,
    headers: HeaderMap,
    caller: Caller,
    Path(investigation_id): Path<String>,
) -> ApiResult<Json<InvestigationDto>> {
    caller.require(Role::RestrictedReadOnly)?;
    let investigation_id = path_id(&investigation_id, "investigation")?;
    caller.check_investigation(&state, investigation_id).await?;
    let record = state.store()?.get_investigation(investigation_id).await?;
    Ok(Json(InvestigationDto::new(
        &record,
        &links::base_url(&state, &headers),
    )))
}

/// How often the alert of an investigation was sent, and each content it came with.
///
/// A source that sends an alert again under the same id with other content (an updated
/// finding) makes a new revision: recorded with the paths that changed, and investigated
/// when forced or when its severity rose.
#[utoipa::path(
    get,
    path = "/app/api/v1/investigation/{investigation_id}/revisions",
    tag = "investigations",
    params(("investigation_id" = String, Path, description = "The investigation id")),
    responses(
        (status = 200, description = "The alert's sightings and revisions", body = AlertRevisionsDto),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 404, description = "No such investigation", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
async fn get_alert_revisions(
    State(state): State<AppState>,
    caller: Caller,
    Path(investigation_id): Path<String>,
) -> ApiResult<Json<AlertRevisionsDto>> {
    caller.require(Role::RestrictedReadOnly)?;
    let investigation_id = path_id(&investigation_id, "investigation")?;
    caller.check_investigation(&state, investigation_id).await?;
    let revisions = state.store()?.alert_revisions(investigation_id).await?;
    Ok(Json(AlertRevisionsDto::from(&revisions)))
}

/// List investigations.
///
/// By default only completed ones (state success), newest alert first. Repeatable filters
/// match any of their values. `next`/`previous` are absolute URLs keeping every other
/// parameter. A page stops early when its items reach `server.max_list_answer_bytes`
/// (always holding at least one): `next` then starts after its last item.
#[utoipa::path(
    get,
    path = "/app/api/v1/investigation",
    tag = "investigations",
    params(list_query::ListParameters),
    responses(
        (status = 200, description = "One page of investigations", body = PaginatedInvestigationList),
        (status = 400, description = "A parameter has a wrong type or an unknown value", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
async fn list_investigations(
    State(state): State<AppState>,
    headers: HeaderMap,
    caller: Caller,
    pairs: QueryPairs,
) -> ApiResult<Json<PaginatedInvestigationListBody>> {
    caller.require(Role::RestrictedReadOnly)?;
    let mut query = list_query::parse(&pairs)?;
    query.scope = caller.scope();
    let base_url = links::base_url(&state, &headers);
    let page = list_budget::investigations(
        state.store()?.as_ref(),
        &query,
        state.settings().server.max_list_answer_bytes,
        |record| InvestigationListItemDto::new(record, &base_url),
    )
    .await?;
    let (next, previous) = links::page_links_after(
        &base_url,
        "/app/api/v1/investigation",
        &pairs,
        query.limit,
        query.offset,
        page.read,
        page.total,
    );
    Ok(Json(PaginatedInvestigationListBody {
        count: page.total,
        next,
        previous,
        results: page.items,
    }))
}

/// Cancel a queued or running investigation (CANCEL_MANUAL).
#[utoipa::path(
    post,
    path = "/app/api/v1/investigation/{investigation_id}/cancel",
    tag = "investigations",
    params(("investigation_id" = String, Path, description = "The investigation id")),
    responses(
        (status = 200, description = "The investigation, now stopped", body = InvestigationDto),
        (status = 400, description = "It already finished", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (member role needed)", body = ErrorBody),
        (status = 404, description = "No such investigation", body = ErrorBody),
    ),
    security(("api_key" = []))
)]
async fn cancel_investigation(
    State(state): State<AppState>,
    headers: HeaderMap,
    caller: Caller,
    Path(investigation_id): Path<String>,
) -> ApiResult<Json<InvestigationDto>> {
    caller.require(Role::Member)?;
    let investigation_id = path_id(&investigation_id, "investigation")?;
    caller.check_investigation(&state, investigation_id).await?;
    let store = state.store()?;
    store
        .cancel_investigation(investigation_id, chrono::Utc::now())
        .await?;
    let record = store.get_investigation(investigation_id).await?;
    debug_assert_eq!(record.status, InvestigationStatus::Error);
    Ok(Json(InvestigationDto::new(
        &record,
        &links::base_url(&state, &headers),
    )))
}
