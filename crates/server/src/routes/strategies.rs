//! Custom strategies (ours, on DESIGN.md §1's conventions; shapes from SPEC): list,
//! create, read, versions, update (each change a new version), enable, disable, archive,
//! and backtest (the engine re-run over a period with a draft, nothing stored). Admin-only,
//! reads included. Protected strategies (the ones Sleuth ships, `builtin_strategies`)
//! refuse every change with 409 `protected`. docs/strategies.md is the user's guide.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sleuth_domain::{
    CustomOutcomeValue, InvestigationStatus, Outcome, Priority, Role, Strategy,
    StrategyInstruction, StrategyOutcome, StrategyPriority, Timestamp, mitre,
};
use sleuth_engine::strategies::check_condition;
use sleuth_store::{
    DraftInstruction, DraftOutcome, DraftPriority, InvestigationQuery, NewStrategy, SortDirection,
    SortKey, Store, StrategyDraft, StrategyQuery, StrategyRecord, StrategyStanding, TimeRange,
};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::audit::AuditNote;
use crate::auth::Caller;
use crate::dto::strategy::{
    BacktestAffectedDto, BacktestChangeDto, BacktestDto, CustomStrategyDto, CustomStrategyPageDto,
};
use crate::error::{ApiError, ApiResult, ErrorBody, ErrorCode};
use crate::extract::{ApiJson, QueryPairs, path_id, query_bool};
use crate::links;
use crate::list_query::{page_parameters, parse_time};
use crate::routes::response_actions::Admin;
use crate::state::AppState;
use sleuth_jobs::{builtin_strategies, pipeline};

const BASE: &str = "/app/api/v1/custom-strategies";
/// The longest title, in characters.
pub const MAX_TITLE_CHARS: usize = 255;
/// The longest scenario or instruction, in characters.
pub const MAX_TEXT_CHARS: usize = 5000;
/// The most rules of each kind, and scope values of each kind, one version holds.
pub const MAX_ITEMS: usize = 100;
/// The largest condition or insight tag rule, in bytes of JSON.
pub const MAX_RULE_BYTES: usize = 16 * 1024;
/// The most investigations one backtest re-runs, by default and at most.
const DEFAULT_BACKTEST_INVESTIGATIONS: i64 = 500;
const MAX_BACKTEST_INVESTIGATIONS: i64 = 5000;
/// The attack surfaces the engine names (`attack_surface` of an investigation).
const ATTACK_SURFACES: &[&str] = &[
    "Endpoint",
    "Identity",
    "Cloud",
    "Email",
    "Network",
    "Application",
];

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_strategies, create_strategy))
        .routes(routes!(backtest))
        .routes(routes!(get_strategy, update_strategy))
        .routes(routes!(list_versions))
        .routes(routes!(enable_strategy))
        .routes(routes!(disable_strategy))
        .routes(routes!(archive_strategy))
}

/// A strategy to create, or the fields of one to change (PATCH keeps what it leaves out;
/// a rule list sent replaces the version's list of that kind).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomStrategyRequest {
    /// 1 to 255 characters. Required on create.
    pub title: Option<String>,
    /// What the strategy is for, at most 5000 characters; null clears it.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(value_type = Option<String>)]
    pub scenario: Option<Option<String>>,
    /// Alert sources covered: schema keys, integrations or source labels Sleuth reads
    /// (`GET /app/api/v1/schema-keys`); empty covers every source.
    pub alert_sources: Option<Vec<String>>,
    /// Endpoint, Identity, Cloud, Email, Network or Application; empty covers all.
    pub attack_surfaces: Option<Vec<String>>,
    /// MITRE ATT&CK tactics, by name or id (TA0001); stored by canonical name; empty
    /// covers all.
    pub mitre_tactics: Option<Vec<String>>,
    /// Create only (default true); afterwards use `/enable` and `/disable`.
    pub is_enabled: Option<bool>,
    pub instructions: Option<Vec<InstructionRequest>>,
    pub outcomes: Option<Vec<OutcomeRequest>>,
    pub priorities: Option<Vec<PriorityRequest>>,
}

impl CustomStrategyRequest {
    fn is_empty(&self) -> bool {
        self.title.is_none()
            && self.scenario.is_none()
            && self.alert_sources.is_none()
            && self.attack_surfaces.is_none()
            && self.mitre_tactics.is_none()
            && self.is_enabled.is_none()
            && self.instructions.is_none()
            && self.outcomes.is_none()
            && self.priorities.is_none()
    }
}

/// An instruction. `id` keeps an existing rule of the strategy (unchanged); without it, a
/// rule of the latest version with the same content is kept, else a new rule is made.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InstructionRequest {
    pub id: Option<i64>,
    /// 1 to 5000 characters.
    pub content: Option<String>,
}

/// An outcome rule; `id` as for instructions.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OutcomeRequest {
    pub id: Option<i64>,
    /// JSON Logic over the investigation's facts (docs/strategies.md): a non-empty object.
    #[schema(value_type = Object)]
    pub condition: Option<Value>,
    /// COMPLETED_BREACHED_CONFIRMED, COMPLETED_BREACHED_SUSPICIOUS or COMPLETED_FALSE_ALERT.
    pub outcome: Option<String>,
}

/// A priority rule; `id` as for instructions.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PriorityRequest {
    pub id: Option<i64>,
    /// informational, notable or urgent.
    pub priority: Option<String>,
    /// 1..2147483647; the lowest among the matching rules of every strategy wins.
    pub ranking: Option<i64>,
    /// The investigation outcomes the rule applies to; at least one.
    pub outcomes: Option<Vec<String>>,
    /// JSON Logic that must also hold (a non-empty object), or null.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(value_type = Option<Object>)]
    pub insight_tag_rule: Option<Option<Value>>,
}

fn clip(value: &str) -> String {
    value.chars().take(60).collect()
}

fn text_field(field: &str, value: &str, max: usize, allow_line_breaks: bool) -> ApiResult<String> {
    let value = value.trim();
    let length = value.chars().count();
    let bad_character = value.chars().any(|character| {
        character.is_control() && !(allow_line_breaks && matches!(character, '\n' | '\r' | '\t'))
    });
    if length == 0 || length > max || bad_character {
        return Err(ApiError::invalid_field(
            field,
            format!("must be 1 to {max} characters, without control characters (got {length})"),
        ));
    }
    Ok(value.to_string())
}

fn at_most(field: &str, count: usize) -> ApiResult<()> {
    if count > MAX_ITEMS {
        return Err(ApiError::invalid_field(
            field,
            format!("at most {MAX_ITEMS} items (got {count})"),
        ));
    }
    Ok(())
}

/// Each value as the known spelling `known` finds for it, or a 400 naming the item.
fn known_values(
    field: &str,
    values: &[String],
    known: impl Fn(&str) -> Option<String>,
    allowed: &str,
) -> ApiResult<Vec<String>> {
    at_most(field, values.len())?;
    let mut spelled: Vec<String> = Vec::new();
    for (index, value) in values.iter().enumerate() {
        let canonical = known(value.trim()).ok_or_else(|| {
            ApiError::invalid_field(
                &format!("{field}[{index}]"),
                format!("'{}' is not known; allowed: {allowed}", clip(value)),
            )
        })?;
        if !spelled.contains(&canonical) {
            spelled.push(canonical);
        }
    }
    Ok(spelled)
}

fn alert_sources(values: &[String]) -> ApiResult<Vec<String>> {
    known_values(
        "alert_sources",
        values,
        |value| {
            let known = || {
                sleuth_parsers::registry::all()
                    .iter()
                    .flat_map(|schema| [schema.key, schema.integration, schema.source_label])
            };
            // "Okta" is a source label and "okta" an integration: an exact spelling wins.
            known()
                .find(|known| *known == value)
                .or_else(|| known().find(|known| known.eq_ignore_ascii_case(value)))
                .map(str::to_string)
        },
        "a schema key, integration or source label of GET /app/api/v1/schema-keys",
    )
}

fn attack_surfaces(values: &[String]) -> ApiResult<Vec<String>> {
    known_values(
        "attack_surfaces",
        values,
        |value| {
            ATTACK_SURFACES
                .iter()
                .find(|known| known.eq_ignore_ascii_case(value))
                .map(|known| (*known).to_string())
        },
        &ATTACK_SURFACES.join(", "),
    )
}

fn mitre_tactics(values: &[String]) -> ApiResult<Vec<String>> {
    let allowed = mitre::TACTICS
        .iter()
        .map(|(_, name)| *name)
        .collect::<Vec<_>>()
        .join(", ");
    known_values(
        "mitre_tactics",
        values,
        |value| mitre::canonical_tactic(value).map(str::to_string),
        &format!("a MITRE ATT&CK tactic name or id: {allowed}"),
    )
}

/// A JSON Logic rule: a non-empty object of bounded size that `check_condition` accepts.
fn json_logic(field: &str, value: &Value) -> ApiResult<Map<String, Value>> {
    let Value::Object(map) = value else {
        return Err(ApiError::invalid_field(
            field,
            "must be a JSON Logic object, e.g. {\"==\": [{\"var\": \"alert.source\"}, \"Okta\"]}",
        ));
    };
    if map.is_empty() {
        return Err(ApiError::invalid_field(
            field,
            "must not be empty: {} would match every alert; write the test, e.g. {\"==\": [1, 1]}",
        ));
    }
    if value.to_string().len() > MAX_RULE_BYTES {
        return Err(ApiError::invalid_field(
            field,
            format!("must be at most {MAX_RULE_BYTES} bytes of JSON"),
        ));
    }
    check_condition(value).map_err(|message| ApiError::invalid_field(field, message))?;
    Ok(map.clone())
}

fn required<T>(field: &str, value: Option<T>) -> ApiResult<T> {
    value.ok_or_else(|| ApiError::invalid_field(field, "is required"))
}

fn instructions(requests: &[InstructionRequest]) -> ApiResult<Vec<DraftInstruction>> {
    at_most("instructions", requests.len())?;
    requests
        .iter()
        .enumerate()
        .map(|(index, request)| {
            let field = format!("instructions[{index}].content");
            Ok(DraftInstruction {
                id: request.id,
                content: text_field(
                    &field,
                    required(&field, request.content.as_deref())?,
                    MAX_TEXT_CHARS,
                    true,
                )?,
                internal_origin_uuid: None,
            })
        })
        .collect()
}

fn outcomes(requests: &[OutcomeRequest]) -> ApiResult<Vec<DraftOutcome>> {
    at_most("outcomes", requests.len())?;
    requests
        .iter()
        .enumerate()
        .map(|(index, request)| {
            let field = format!("outcomes[{index}].condition");
            let condition = json_logic(&field, required(&field, request.condition.as_ref())?)?;
            let field = format!("outcomes[{index}].outcome");
            let outcome = CustomOutcomeValue::parse(required(&field, request.outcome.as_deref())?)
                .map_err(|error| ApiError::invalid_field(&field, error.to_string()))?;
            Ok(DraftOutcome {
                id: request.id,
                condition: Value::Object(condition),
                outcome,
                internal_origin_uuid: None,
            })
        })
        .collect()
}

fn priorities(requests: &[PriorityRequest]) -> ApiResult<Vec<DraftPriority>> {
    at_most("priorities", requests.len())?;
    requests
        .iter()
        .enumerate()
        .map(|(index, request)| {
            let field = format!("priorities[{index}].priority");
            let priority = Priority::parse(required(&field, request.priority.as_deref())?)
                .map_err(|error| ApiError::invalid_field(&field, error.to_string()))?;
            let field = format!("priorities[{index}].ranking");
            let ranking = required(&field, request.ranking)?;
            if !(1..=i64::from(i32::MAX)).contains(&ranking) {
                return Err(ApiError::invalid_field(
                    &field,
                    format!("must be 1 to 2147483647 (got {ranking})"),
                ));
            }
            let field = format!("priorities[{index}].outcomes");
            let names = required(&field, request.outcomes.as_ref())?;
            if names.is_empty() || names.len() > Outcome::ALL.len() {
                return Err(ApiError::invalid_field(
                    &field,
                    format!("must list 1 to {} outcomes", Outcome::ALL.len()),
                ));
            }
            let mut outcomes = Vec::new();
            for (item, name) in names.iter().enumerate() {
                let outcome = Outcome::parse(name).map_err(|error| {
                    ApiError::invalid_field(&format!("{field}[{item}]"), error.to_string())
                })?;
                if !outcomes.contains(&outcome) {
                    outcomes.push(outcome);
                }
            }
            let field = format!("priorities[{index}].insight_tag_rule");
            let insight_tag_rule = match &request.insight_tag_rule {
                None | Some(None) => None,
                Some(Some(rule)) => Some(json_logic(&field, rule)?),
            };
            Ok(DraftPriority {
                id: request.id,
                priority,
                ranking,
                outcomes,
                insight_tag_rule,
                internal_origin_uuid: None,
            })
        })
        .collect()
}

/// The version a request describes: the request applied over the current version (none
/// on create), validated whole.
fn build_draft(
    request: &CustomStrategyRequest,
    current: Option<&StrategyRecord>,
) -> ApiResult<StrategyDraft> {
    let mut draft = current.map(StrategyRecord::to_draft).unwrap_or_default();
    match (&request.title, current) {
        (Some(title), _) => draft.title = text_field("title", title, MAX_TITLE_CHARS, false)?,
        (None, Some(_)) => {}
        (None, None) => return Err(ApiError::invalid_field("title", "is required")),
    }
    if let Some(scenario) = &request.scenario {
        draft.scenario = match scenario.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(text) => Some(text_field("scenario", text, MAX_TEXT_CHARS, true)?),
        };
    }
    if let Some(values) = &request.alert_sources {
        draft.alert_sources = alert_sources(values)?;
    }
    if let Some(values) = &request.attack_surfaces {
        draft.attack_surfaces = attack_surfaces(values)?;
    }
    if let Some(values) = &request.mitre_tactics {
        draft.mitre_tactics = mitre_tactics(values)?;
    }
    if let Some(requests) = &request.instructions {
        draft.instructions = instructions(requests)?;
    }
    if let Some(requests) = &request.outcomes {
        draft.outcomes = outcomes(requests)?;
    }
    if let Some(requests) = &request.priorities {
        draft.priorities = priorities(requests)?;
    }
    Ok(draft)
}

fn now() -> Timestamp {
    chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 6)
}

/// The store, with the shipped strategies created (once per process).
pub(crate) async fn store(state: &AppState) -> ApiResult<&Arc<dyn Store>> {
    let store = state.store()?;
    builtin_strategies::ensure(state, store).await?;
    Ok(store)
}

fn protected(strategy_id: i64) -> ApiError {
    ApiError::new(
        ErrorCode::Protected,
        format!(
            "custom strategy {strategy_id} is protected: Sleuth ships it and keeps it in force; \
             it cannot be changed, enabled, disabled or archived"
        ),
    )
}

/// The latest version of a strategy that may be changed: 404 when unknown, 409 when
/// protected.
async fn changeable(store: &Arc<dyn Store>, strategy_id: &str) -> ApiResult<StrategyRecord> {
    let strategy_id = path_id(strategy_id, "custom strategy")?;
    let current = store.get_strategy(strategy_id).await?;
    if current.is_protected {
        return Err(protected(strategy_id));
    }
    Ok(current)
}

/// The list's parameters, for the OpenAPI description.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Read by utoipa's derive for the OpenAPI description only.
pub struct CustomStrategyListParameters {
    /// List archived strategies instead (default false).
    is_archived: Option<bool>,
    /// Only enabled (true) or disabled (false) strategies.
    is_enabled: Option<bool>,
    /// Results per page: default 20, at most 1000 (larger values are clamped).
    limit: Option<i64>,
    /// Results to skip.
    offset: Option<i64>,
}

/// List custom strategies (their latest versions), by id.
#[utoipa::path(get, path = "/app/api/v1/custom-strategies", tag = "custom-strategies",
    params(CustomStrategyListParameters),
    responses(
        (status = 200, body = CustomStrategyPageDto),
        (status = 400, description = "Bad request - invalid input", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn list_strategies(
    State(state): State<AppState>,
    _admin: Admin,
    headers: HeaderMap,
    query: QueryPairs,
) -> ApiResult<Json<CustomStrategyPageDto>> {
    let (limit, offset) = page_parameters(&query)?;
    let strategy_query = StrategyQuery {
        is_archived: query_bool(&query, "is_archived")?.unwrap_or(false),
        is_enabled: query_bool(&query, "is_enabled")?,
        limit,
        offset,
    };
    let page = store(&state)
        .await?
        .list_strategies(&strategy_query)
        .await?;
    let base_url = links::base_url(&state, &headers);
    let (next, previous) = links::page_links_at(&base_url, BASE, &query, limit, offset, page.total);
    Ok(Json(CustomStrategyPageDto {
        count: page.total,
        next,
        previous,
        results: page.items.iter().map(CustomStrategyDto::from).collect(),
    }))
}

/// Create a custom strategy; answers 201 with its first version.
#[utoipa::path(post, path = "/app/api/v1/custom-strategies", tag = "custom-strategies",
    request_body = CustomStrategyRequest,
    responses(
        (status = 201, body = CustomStrategyDto),
        (status = 400, description = "Bad request - invalid input", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn create_strategy(
    State(state): State<AppState>,
    Admin(caller): Admin,
    ApiJson(request): ApiJson<CustomStrategyRequest>,
) -> ApiResult<(StatusCode, Extension<AuditNote>, Json<CustomStrategyDto>)> {
    let draft = build_draft(&request, None)?;
    let strategy = NewStrategy {
        draft,
        internal_origin_uuid: uuid::Uuid::new_v4(),
        is_enabled: request.is_enabled.unwrap_or(true),
        is_protected: false,
        author_id: Some(caller.user_id()),
    };
    let created = store(&state)
        .await?
        .create_strategy(&strategy, now())
        .await?;
    let note = AuditNote {
        resource_id: Some(created.id.to_string()),
        detail: audit_detail(&created),
    };
    Ok((
        StatusCode::CREATED,
        Extension(note),
        Json(CustomStrategyDto::from(&created)),
    ))
}

/// Read a custom strategy: its latest version.
#[utoipa::path(get, path = "/app/api/v1/custom-strategies/{strategy_id}", tag = "custom-strategies",
    params(("strategy_id" = String, Path)),
    responses(
        (status = 200, body = CustomStrategyDto),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 404, description = "Resource not found", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn get_strategy(
    State(state): State<AppState>,
    _admin: Admin,
    Path(strategy_id): Path<String>,
) -> ApiResult<Json<CustomStrategyDto>> {
    let strategy_id = path_id(&strategy_id, "custom strategy")?;
    let strategy = store(&state).await?.get_strategy(strategy_id).await?;
    Ok(Json(CustomStrategyDto::from(&strategy)))
}

/// Every version of a custom strategy, newest first (`is_latest` on the first).
#[utoipa::path(get, path = "/app/api/v1/custom-strategies/{strategy_id}/versions", tag = "custom-strategies",
    params(("strategy_id" = String, Path)),
    responses(
        (status = 200, body = Vec<CustomStrategyDto>),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 404, description = "Resource not found", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn list_versions(
    State(state): State<AppState>,
    _admin: Admin,
    Path(strategy_id): Path<String>,
) -> ApiResult<Json<Vec<CustomStrategyDto>>> {
    let strategy_id = path_id(&strategy_id, "custom strategy")?;
    let versions = store(&state)
        .await?
        .list_strategy_versions(strategy_id)
        .await?;
    Ok(Json(versions.iter().map(CustomStrategyDto::from).collect()))
}

/// Change a custom strategy: any of title, scenario, alert_sources, attack_surfaces,
/// mitre_tactics, instructions, outcomes, priorities. A change makes a new version (the
/// previous one stays readable, `is_latest: false`); a body that changes nothing answers
/// the latest version as it is.
#[utoipa::path(patch, path = "/app/api/v1/custom-strategies/{strategy_id}", tag = "custom-strategies",
    params(("strategy_id" = String, Path)),
    request_body = CustomStrategyRequest,
    responses(
        (status = 200, description = "The latest version", body = CustomStrategyDto),
        (status = 400, description = "Bad request - invalid input (also an empty body, or an archived strategy)", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 404, description = "Resource not found", body = ErrorBody),
        (status = 409, description = "The strategy is protected (code protected)", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn update_strategy(
    State(state): State<AppState>,
    Admin(caller): Admin,
    Path(strategy_id): Path<String>,
    ApiJson(request): ApiJson<CustomStrategyRequest>,
) -> ApiResult<(Extension<AuditNote>, Json<CustomStrategyDto>)> {
    let store = store(&state).await?;
    let current = changeable(store, &strategy_id).await?;
    if request.is_empty() {
        return Err(ApiError::bad_request(
            "nothing to change: send any of title, scenario, alert_sources, attack_surfaces, \
             mitre_tactics, instructions, outcomes, priorities",
        ));
    }
    if request.is_enabled.is_some() {
        return Err(ApiError::invalid_field(
            "is_enabled",
            format!(
                "is not changed by PATCH; POST {BASE}/{}/enable or /disable",
                current.id
            ),
        ));
    }
    if current.is_archived {
        return Err(ApiError::bad_request(format!(
            "custom strategy {} is archived and cannot be changed",
            current.id
        )));
    }
    let draft = build_draft(&request, Some(&current))?;
    let updated = store
        .update_strategy(current.id, &draft, Some(caller.user_id()), now())
        .await?;
    let record = updated.record();
    Ok((
        Extension(AuditNote {
            resource_id: None,
            detail: audit_detail(record),
        }),
        Json(CustomStrategyDto::from(record)),
    ))
}

async fn set_standing(
    state: &AppState,
    strategy_id: &str,
    standing: StrategyStanding,
) -> ApiResult<StatusCode> {
    let store = store(state).await?;
    let current = changeable(store, strategy_id).await?;
    store
        .set_strategy_standing(current.id, standing, now())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Enable a custom strategy: from the next investigation on, it applies. 400 when archived.
#[utoipa::path(post, path = "/app/api/v1/custom-strategies/{strategy_id}/enable", tag = "custom-strategies",
    params(("strategy_id" = String, Path)),
    responses(
        (status = 204, description = "Enabled"),
        (status = 400, description = "Bad request (the strategy is archived)", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 404, description = "Resource not found", body = ErrorBody),
        (status = 409, description = "The strategy is protected (code protected)", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn enable_strategy(
    State(state): State<AppState>,
    _admin: Admin,
    Path(strategy_id): Path<String>,
) -> ApiResult<StatusCode> {
    set_standing(&state, &strategy_id, StrategyStanding::Enabled).await
}

/// Disable a custom strategy: from the next investigation on, it does not apply.
#[utoipa::path(post, path = "/app/api/v1/custom-strategies/{strategy_id}/disable", tag = "custom-strategies",
    params(("strategy_id" = String, Path)),
    responses(
        (status = 204, description = "Disabled"),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 404, description = "Resource not found", body = ErrorBody),
        (status = 409, description = "The strategy is protected (code protected)", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn disable_strategy(
    State(state): State<AppState>,
    _admin: Admin,
    Path(strategy_id): Path<String>,
) -> ApiResult<StatusCode> {
    set_standing(&state, &strategy_id, StrategyStanding::Disabled).await
}

/// Archive a custom strategy: it never applies again and cannot be changed or enabled; it
/// keeps its versions and counters (list them with `is_archived=true`).
#[utoipa::path(post, path = "/app/api/v1/custom-strategies/{strategy_id}/archive", tag = "custom-strategies",
    params(("strategy_id" = String, Path)),
    responses(
        (status = 204, description = "Archived"),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 404, description = "Resource not found", body = ErrorBody),
        (status = 409, description = "The strategy is protected (code protected)", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn archive_strategy(
    State(state): State<AppState>,
    _admin: Admin,
    Path(strategy_id): Path<String>,
) -> ApiResult<StatusCode> {
    set_standing(&state, &strategy_id, StrategyStanding::Archived).await
}

/// A backtest: a draft (a new strategy, or an edit of one) and a period.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BacktestRequest {
    /// A new strategy, as the create body. Either this or `strategy_id`.
    pub strategy: Option<CustomStrategyRequest>,
    /// An existing strategy, tested as if enabled, with `changes` (a PATCH body) applied.
    pub strategy_id: Option<i64>,
    pub changes: Option<CustomStrategyRequest>,
    /// The period: investigations whose alert was created from `from` until `until`
    /// (ISO 8601 date or date-time; a date alone in `until` means its whole day).
    pub from: Option<String>,
    pub until: Option<String>,
    /// Only alerts of this tenant id.
    pub tenant_id: Option<String>,
    /// How many investigations to re-run at most (default 500, at most 5000); the oldest
    /// first, and `truncated` says when the period held more.
    pub max_investigations: Option<i64>,
}

/// Synthetic rule ids of a draft's new rules: above any stored id, as creating them would
/// make them, so the engine orders and breaks ties as it would after the change.
const DRAFT_RULE_IDS: i64 = i64::MAX / 2;

/// A draft as the engine applies it.
fn draft_strategy(draft: &StrategyDraft, strategy_id: i64, version_id: i64) -> Strategy {
    let rule_id = |id: Option<i64>, index: usize| {
        id.unwrap_or(DRAFT_RULE_IDS + i64::try_from(index).unwrap_or(0))
    };
    Strategy {
        strategy_id,
        version_id,
        title: draft.title.clone(),
        scenario: draft.scenario.clone(),
        alert_sources: draft.alert_sources.clone(),
        attack_surfaces: draft.attack_surfaces.clone(),
        mitre_tactics: draft.mitre_tactics.clone(),
        instructions: draft
            .instructions
            .iter()
            .enumerate()
            .map(|(index, rule)| StrategyInstruction {
                id: rule_id(rule.id, index),
                content: rule.content.clone(),
            })
            .collect(),
        outcomes: draft
            .outcomes
            .iter()
            .enumerate()
            .map(|(index, rule)| StrategyOutcome {
                id: rule_id(rule.id, index),
                condition: rule.condition.clone(),
                outcome: rule.outcome,
            })
            .collect(),
        priorities: draft
            .priorities
            .iter()
            .enumerate()
            .map(|(index, rule)| StrategyPriority {
                id: rule_id(rule.id, index),
                priority: rule.priority,
                ranking: rule.ranking,
                outcomes: rule.outcomes.clone(),
                insight_tag_rule: rule.insight_tag_rule.clone(),
            })
            .collect(),
    }
}

/// The strategies in force, and the same with the draft in place of (or beside) its
/// strategy.
async fn backtest_sets(
    state: &AppState,
    store: &Arc<dyn Store>,
    request: &BacktestRequest,
) -> ApiResult<(Vec<Strategy>, Vec<Strategy>)> {
    let baseline = pipeline::strategies_in_force(state, store).await?.to_vec();
    let (draft, replaces) = match (&request.strategy, request.strategy_id) {
        (Some(_), Some(_)) | (None, None) => {
            return Err(ApiError::bad_request(
                "send either strategy (a new strategy, as the create body) or strategy_id (an \
                 existing one, with optional changes)",
            ));
        }
        (Some(new), None) => {
            if request.changes.is_some() {
                return Err(ApiError::invalid_field(
                    "changes",
                    "goes with strategy_id; put a new strategy's fields in strategy",
                ));
            }
            (draft_strategy(&build_draft(new, None)?, i64::MAX, 0), None)
        }
        (None, Some(strategy_id)) => {
            let current = changeable(store, &strategy_id.to_string()).await?;
            if current.is_archived {
                return Err(ApiError::bad_request(format!(
                    "custom strategy {strategy_id} is archived and cannot be changed"
                )));
            }
            let draft = match &request.changes {
                Some(changes) => build_draft(changes, Some(&current))?,
                None => current.to_draft(),
            };
            (
                draft_strategy(&draft, current.id, current.version_id),
                Some(current.id),
            )
        }
    };
    let mut with_draft: Vec<Strategy> = baseline
        .iter()
        .filter(|strategy| Some(strategy.strategy_id) != replaces)
        .cloned()
        .collect();
    with_draft.push(draft);
    Ok((baseline, with_draft))
}

fn backtest_period(request: &BacktestRequest) -> ApiResult<TimeRange> {
    let time = |field: &str, raw: Option<&String>, end_of_day: bool| {
        let raw = required(field, raw)?;
        parse_time(raw, end_of_day).ok_or_else(|| {
            ApiError::invalid_field(
                field,
                format!("'{}' is not an ISO 8601 date or date-time", clip(raw)),
            )
        })
    };
    let from = time("from", request.from.as_ref(), false)?;
    let until = time("until", request.until.as_ref(), true)?;
    if until < from {
        return Err(ApiError::invalid_field("until", "must not be before from"));
    }
    Ok(TimeRange {
        from: Some(from),
        until: Some(until),
    })
}

fn counted(changes: BTreeMap<(String, String), u64>) -> Vec<BacktestChangeDto> {
    changes
        .into_iter()
        .map(|((from, to), count)| BacktestChangeDto { from, to, count })
        .collect()
}

/// Backtest a draft strategy over a period, changing nothing.
///
/// The engine re-runs over the concluded investigations whose alert was created in the
/// period, each with its history and the operator's context as a worker reads them, twice:
/// with the strategies in force (the baseline) and with the draft added (a new strategy)
/// or in place of its strategy (an edit). The answer counts the outcome and priority
/// changes from baseline to draft and lists the investigations they touch. Nothing is
/// stored: no investigation, counter or version changes.
#[utoipa::path(post, path = "/app/api/v1/custom-strategies/backtest", tag = "custom-strategies",
    request_body = BacktestRequest,
    responses(
        (status = 200, body = BacktestDto),
        (status = 400, description = "Bad request - invalid input", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 404, description = "Resource not found (strategy_id)", body = ErrorBody),
        (status = 409, description = "The strategy is protected (code protected)", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn backtest(
    State(state): State<AppState>,
    Admin(caller): Admin,
    ApiJson(request): ApiJson<BacktestRequest>,
) -> ApiResult<Json<BacktestDto>> {
    Ok(Json(run_backtest(&state, &caller, &request).await?))
}

/// Runs a backtest (admin), changing nothing: the route's work, and the console's
/// settings form.
pub(crate) async fn run_backtest(
    state: &AppState,
    caller: &Caller,
    request: &BacktestRequest,
) -> ApiResult<BacktestDto> {
    caller.require(Role::Admin)?;
    let period = backtest_period(request)?;
    let max = request
        .max_investigations
        .unwrap_or(DEFAULT_BACKTEST_INVESTIGATIONS);
    if !(1..=MAX_BACKTEST_INVESTIGATIONS).contains(&max) {
        return Err(ApiError::invalid_field(
            "max_investigations",
            format!("must be 1 to {MAX_BACKTEST_INVESTIGATIONS}"),
        ));
    }
    let tenant_id = request
        .tenant_id
        .as_deref()
        .map(|value| text_field("tenant_id", value, MAX_TITLE_CHARS, false))
        .transpose()?;
    let store = store(state).await?;
    let (baseline, with_draft) = backtest_sets(state, store, request).await?;
    let page = store
        .list_investigations(&InvestigationQuery {
            states: vec![InvestigationStatus::Success],
            alert_create: period,
            tenant_id,
            sort: SortKey::AlertCreate,
            direction: SortDirection::Ascending,
            limit: u32::try_from(max).unwrap_or(u32::MAX),
            offset: 0,
            ..InvestigationQuery::default()
        })
        .await?;
    let strategy_sets = Arc::new((baseline, with_draft));
    let mut outcome_changes: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut priority_changes: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut affected = Vec::new();
    let mut failed = Vec::new();
    let mut considered: u64 = 0;
    for record in page.items {
        // Coalesced investigations never ran the engine; they have nothing to compare.
        if record.ignored_for.is_some() {
            continue;
        }
        considered += 1;
        let gathered = pipeline::gather(state, store, &record).await?;
        let (task_state, sets) = (state.clone(), strategy_sets.clone());
        let ran = tokio::task::spawn_blocking(move || {
            let now = record.generated_time.unwrap_or_else(chrono::Utc::now);
            let baseline = pipeline::run_engine(&task_state, &record, &gathered, &sets.0, now);
            let draft = pipeline::run_engine(&task_state, &record, &gathered, &sets.1, now);
            (record.id, baseline.zip(draft))
        })
        .await
        .map_err(|error| {
            tracing::error!(%error, "a backtest task failed");
            ApiError::system_error()
        })?;
        let (investigation_id, Some((baseline, draft))) = ran else {
            failed.push(ran.0);
            continue;
        };
        if baseline.outcome != draft.outcome {
            *outcome_changes
                .entry((baseline.outcome.to_string(), draft.outcome.to_string()))
                .or_default() += 1;
        }
        if baseline.priority != draft.priority {
            *priority_changes
                .entry((baseline.priority.to_string(), draft.priority.to_string()))
                .or_default() += 1;
        }
        if baseline.outcome != draft.outcome || baseline.priority != draft.priority {
            affected.push(BacktestAffectedDto {
                investigation_id,
                baseline_outcome: baseline.outcome,
                draft_outcome: draft.outcome,
                baseline_priority: baseline.priority,
                draft_priority: draft.priority,
            });
        }
    }
    Ok(BacktestDto {
        from: period.from.unwrap_or_default(),
        until: period.until.unwrap_or_default(),
        investigations_considered: considered,
        truncated: page.total > u64::try_from(max).unwrap_or(u64::MAX),
        outcome_changes: counted(outcome_changes),
        priority_changes: counted(priority_changes),
        affected_investigation_ids: affected.iter().map(|item| item.investigation_id).collect(),
        affected,
        failed_investigation_ids: failed,
    })
}

/// What the audit log keeps of a strategy: its version and the size of its rule lists.
fn audit_detail(strategy: &StrategyRecord) -> Map<String, Value> {
    match json!({
        "version_id": strategy.version_id,
        "instructions": strategy.instructions.len(),
        "outcomes": strategy.outcomes.len(),
        "priorities": strategy.priorities.len(),
    }) {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(value: Value) -> CustomStrategyRequest {
        serde_json::from_value(value).unwrap()
    }

    fn field_of(error: &ApiError) -> Vec<String> {
        error.field_errors.keys().cloned().collect()
    }

    #[test]
    fn scope_values_are_checked_and_spelled_as_sleuth_spells_them() {
        let draft = build_draft(
            &request(json!({
                "title": " VPN ",
                "alert_sources": ["OKTA_SYSTEM_LOG_EVENT", "okta"],
                "attack_surfaces": ["identity"],
                "mitre_tactics": ["TA0001", "initial access"],
            })),
            None,
        )
        .unwrap();
        assert_eq!(draft.title, "VPN");
        assert_eq!(draft.alert_sources, ["okta_system_log_event", "okta"]);
        assert_eq!(draft.attack_surfaces, ["Identity"]);
        assert_eq!(draft.mitre_tactics, ["Initial Access"]);
        for (body, field) in [
            (
                json!({"title": "x", "alert_sources": ["nope"]}),
                "alert_sources[0]",
            ),
            (
                json!({"title": "x", "attack_surfaces": ["Moon"]}),
                "attack_surfaces[0]",
            ),
            (
                json!({"title": "x", "mitre_tactics": ["TA9999"]}),
                "mitre_tactics[0]",
            ),
            (json!({"title": ""}), "title"),
            (json!({}), "title"),
        ] {
            let error = build_draft(&request(body.clone()), None).unwrap_err();
            assert_eq!(field_of(&error), [field], "{body}");
        }
    }

    #[test]
    fn rules_are_validated_field_by_field() {
        for (body, field) in [
            (
                json!({"outcomes": [{"outcome": "COMPLETED_FALSE_ALERT"}]}),
                "outcomes[0].condition",
            ),
            (
                json!({"outcomes": [{"condition": [1], "outcome": "COMPLETED_FALSE_ALERT"}]}),
                "outcomes[0].condition",
            ),
            (
                json!({"outcomes": [{"condition": {}, "outcome": "COMPLETED_FALSE_ALERT"}]}),
                "outcomes[0].condition",
            ),
            (
                json!({"outcomes": [{"condition": {"no_such_op": [1]}, "outcome": "COMPLETED_FALSE_ALERT"}]}),
                "outcomes[0].condition",
            ),
            (
                json!({"outcomes": [{"condition": {"==": [1, 1]}, "outcome": "INCOMPLETE"}]}),
                "outcomes[0].outcome",
            ),
            (
                json!({"priorities": [{"priority": "urgent", "ranking": 0, "outcomes": ["INCOMPLETE"]}]}),
                "priorities[0].ranking",
            ),
            (
                json!({"priorities": [{"priority": "urgent", "ranking": 2_147_483_648_i64, "outcomes": ["INCOMPLETE"]}]}),
                "priorities[0].ranking",
            ),
            (
                json!({"priorities": [{"priority": "urgent", "ranking": 1, "outcomes": []}]}),
                "priorities[0].outcomes",
            ),
            (
                json!({"priorities": [{"priority": "urgent", "ranking": 1, "outcomes": ["LOST"]}]}),
                "priorities[0].outcomes[0]",
            ),
            (
                json!({"priorities": [{"priority": "critical", "ranking": 1, "outcomes": ["INCOMPLETE"]}]}),
                "priorities[0].priority",
            ),
            (
                json!({"priorities": [{"priority": "urgent", "ranking": 1, "outcomes": ["INCOMPLETE"], "insight_tag_rule": "vip"}]}),
                "priorities[0].insight_tag_rule",
            ),
            (
                json!({"instructions": [{"content": "  "}]}),
                "instructions[0].content",
            ),
        ] {
            let mut body = body.clone();
            body["title"] = json!("x");
            let error = build_draft(&request(body.clone()), None).unwrap_err();
            assert_eq!(field_of(&error), [field], "{body}");
        }
        let fine = build_draft(
            &request(json!({"title": "x", "priorities": [{"priority": "urgent", "ranking": 2147483647, "outcomes": ["INCOMPLETE", "INCOMPLETE"], "insight_tag_rule": null}]})),
            None,
        )
        .unwrap();
        assert_eq!(fine.priorities[0].outcomes, [Outcome::Incomplete]);
        assert_eq!(fine.priorities[0].ranking, 2_147_483_647);
    }

    #[test]
    fn a_draft_rule_without_id_sorts_after_every_stored_rule() {
        let draft = build_draft(
            &request(json!({"title": "x", "instructions": [{"content": "a"}, {"id": 7, "content": "b"}]})),
            None,
        )
        .unwrap();
        let strategy = draft_strategy(&draft, 1, 1);
        assert_eq!(strategy.instructions[1].id, 7);
        assert!(strategy.instructions[0].id > 1_000_000_000_000);
    }
}
