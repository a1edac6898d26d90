//! The response-action endpoints of SPEC (list, create, test-run, triggers, details,
//! archive, update, runs) and ours on the same conventions (manual run, read one run,
//! secrets for scripts). All are admin-only, reads included (DESIGN.md section 1): scripts
//! hold integration logic and their runs hold output. The actions are what every tenant
//! shares, so only an admin bound to no tenant union reaches them; an admin bound to unions
//! reads the runs fired about its unions' investigations (a run no investigation fired is
//! in no union), without the action's code.

use std::sync::Arc;

use axum::Json;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde_json::{Map, Value};
use sleuth_domain::{Role, ScriptRunStatus};
use sleuth_sandbox::ScriptJob;
use sleuth_store::{
    NewScript, RunPage, RunnableScript, ScriptChanges, ScriptRecord, SecretValue, Store,
};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::auth::Caller;
use crate::dto::response_action::{
    CreateResponseScriptRequest, ManualRunRequest, ResponseScriptCounts, ResponseScriptDetails,
    ResponseScriptLatest, ResponseScriptRunDto, ResponseScriptUiDto, ResponseScriptVersionDto,
    RunViewDto, SecretDto, SetSecretRequest, TestRunRequest, TestRunResponse, TriggerDefinitionDto,
    UpdateResponseScriptRequest,
};
use crate::error::{ApiError, ApiResult, ErrorBody, ErrorCode};
use crate::extract::{ApiJson, QueryPairs, path_id, query_bool, query_integer};
use crate::state::AppState;
use sleuth_jobs::firing::{self, Firing, SandboxRefusal};
use sleuth_jobs::script_secrets::{
    self, RunSecrets, RunSecretsError, secret_name_is_valid, secret_value_problem,
};
use sleuth_jobs::trigger_catalog;

/// The largest script accepted, in bytes of UTF-8.
pub const MAX_CODE_BYTES: usize = 256 * 1024;
/// The longest display name, in characters.
pub const MAX_DISPLAY_NAME_CHARS: usize = 255;
/// The most secrets one response action may name.
pub const MAX_SECRET_NAMES: usize = 64;
/// Runs listed per page by default, and at most.
const DEFAULT_RUNS_LIMIT: i64 = 100;
const MAX_RUNS_LIMIT: i64 = 1000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_response_actions, create_response_action))
        .routes(routes!(test_run))
        .routes(routes!(list_triggers))
        .routes(routes!(list_secrets))
        .routes(routes!(set_secret, delete_secret))
        .routes(routes!(
            get_response_action,
            archive_response_action,
            update_response_action
        ))
        .routes(routes!(list_runs))
        .routes(routes!(get_run))
        .routes(routes!(run_response_action))
}

/// An admin caller. As an extractor it refuses others before the body is read, so a
/// member's malformed request is a 403, not a 400.
#[derive(Debug)]
pub struct Admin(pub Caller);

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let caller = Caller::from_request_parts(parts, state).await?;
        caller.require(Role::Admin)?;
        Ok(Admin(caller))
    }
}

/// The store, with the trigger catalog synced into it (once per process).
pub(crate) async fn store(state: &AppState) -> ApiResult<&Arc<dyn Store>> {
    let store = state.store()?;
    firing::ensure_trigger_catalog(state, store).await?;
    Ok(store)
}

/// A 503 for a sandbox that cannot take scripts now.
fn refused(state: &AppState, refusal: &SandboxRefusal) -> ApiError {
    ApiError::not_ready(
        format!("scripts cannot run now: {refusal}"),
        state.settings().server.retry_after_seconds,
    )
}

fn no_nul(field: &str, value: &str) -> ApiResult<()> {
    if value.contains('\0') {
        return Err(ApiError::invalid_field(
            field,
            "must not contain NUL characters",
        ));
    }
    Ok(())
}

fn validate_display_name(name: &str) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty()
        || name.chars().count() > MAX_DISPLAY_NAME_CHARS
        || name.chars().any(char::is_control)
    {
        return Err(ApiError::invalid_field(
            "display_name",
            format!("must be 1 to {MAX_DISPLAY_NAME_CHARS} characters, without control characters"),
        ));
    }
    Ok(name.to_string())
}

fn validate_code(field: &str, code: String) -> ApiResult<String> {
    if code.len() > MAX_CODE_BYTES {
        return Err(ApiError::invalid_field(
            field,
            format!(
                "is {} bytes; at most {MAX_CODE_BYTES} are accepted",
                code.len()
            ),
        ));
    }
    no_nul(field, &code)?;
    Ok(code)
}

fn validate_trigger_uuid(raw: &str) -> ApiResult<Uuid> {
    Uuid::parse_str(raw.trim()).map_err(|_| {
        ApiError::invalid_field(
            "trigger_def_uuid",
            format!(
                "'{}' is not a uuid; pick a trigger from GET /app/api/v1/response-actions/triggers",
                raw.chars().take(60).collect::<String>()
            ),
        )
    })
}

/// The secrets an action's runs get: valid names, each once, at most `MAX_SECRET_NAMES`.
/// They need not be stored yet; a run of an action naming a secret that is not stored ends
/// in error saying so.
fn validate_secret_names(names: Vec<String>) -> ApiResult<Vec<String>> {
    if names.len() > MAX_SECRET_NAMES {
        return Err(ApiError::invalid_field(
            "secret_names",
            format!("at most {MAX_SECRET_NAMES} names are accepted"),
        ));
    }
    if let Some(bad) = names.iter().find(|name| !secret_name_is_valid(name)) {
        return Err(ApiError::invalid_field(
            "secret_names",
            format!(
                "'{}' is not a secret name: 1 to 128 letters, digits and underscores, not \
                 starting with a digit",
                bad.chars().take(60).collect::<String>()
            ),
        ));
    }
    let mut names = names;
    names.sort();
    names.dedup();
    Ok(names)
}

/// List response actions (UI form). `is_archived=true` lists the archived ones instead.
#[utoipa::path(get, path = "/app/api/v1/response-actions", tag = "response-actions",
    params(("is_archived" = Option<bool>, Query, description = "List archived actions instead (default false)")),
    responses(
        (status = 200, body = Vec<ResponseScriptUiDto>),
        (status = 400, description = "Bad request", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn list_response_actions(
    State(state): State<AppState>,
    _admin: Admin,
    query: QueryPairs,
) -> ApiResult<Json<Vec<ResponseScriptUiDto>>> {
    let archived = query_bool(&query, "is_archived")?.unwrap_or(false);
    let scripts = store(&state).await?.list_scripts(archived).await?;
    Ok(Json(
        scripts.iter().map(ResponseScriptUiDto::from).collect(),
    ))
}

/// Create a response action; its code becomes version 1.
#[utoipa::path(post, path = "/app/api/v1/response-actions", tag = "response-actions",
    request_body = CreateResponseScriptRequest,
    responses(
        (status = 201, description = "Created (UI form)", body = ResponseScriptUiDto),
        (status = 400, description = "Bad request - invalid input (also an unknown or unscriptable trigger)", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn create_response_action(
    State(state): State<AppState>,
    Admin(caller): Admin,
    ApiJson(request): ApiJson<CreateResponseScriptRequest>,
) -> ApiResult<(StatusCode, Json<ResponseScriptUiDto>)> {
    let created = create(&state, &caller, request).await?;
    Ok((
        StatusCode::CREATED,
        Json(ResponseScriptUiDto::from(&created)),
    ))
}

/// Validates and creates a response action (admin), its code version 1: the route's work,
/// and the console's settings form.
pub(crate) async fn create(
    state: &AppState,
    caller: &Caller,
    request: CreateResponseScriptRequest,
) -> ApiResult<ScriptRecord> {
    caller.require(Role::Admin)?;
    let display_name = validate_display_name(
        request
            .display_name
            .as_deref()
            .ok_or_else(|| ApiError::invalid_field("display_name", "is required"))?,
    )?;
    let trigger_uuid = validate_trigger_uuid(
        request
            .trigger_def_uuid
            .as_deref()
            .ok_or_else(|| ApiError::invalid_field("trigger_def_uuid", "is required"))?,
    )?;
    let code = validate_code("code", request.code.unwrap_or_default())?;
    let script = NewScript {
        display_name,
        trigger_uuid,
        code,
        is_enabled: request.is_enabled.unwrap_or(true),
        allow_network: request.allow_network.unwrap_or(false),
        secret_names: validate_secret_names(request.secret_names.unwrap_or_default())?,
        author_id: caller.user_id(),
    };
    Ok(store(state)
        .await?
        .create_script(&script, chrono::Utc::now())
        .await?)
}

/// The globals of a test-run: every global any trigger gives, from `trigger_args` under its
/// name, else None; a script written for a trigger runs the same way here.
fn test_variables(trigger_args: &Map<String, Value>) -> Map<String, Value> {
    trigger_catalog::all_script_var_names()
        .into_iter()
        .map(|name| {
            (
                name.to_string(),
                trigger_args.get(name).cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}

/// The secrets a run of `script` gets: a 400 when it names one that is not stored, a 503
/// when this process cannot open one (no key, or not the key that sealed it).
async fn secrets_for(
    state: &AppState,
    store: &Arc<dyn Store>,
    script: &ScriptRecord,
) -> ApiResult<RunSecrets> {
    script_secrets::for_run(store, state.keyring(), &script.secret_names)
        .await
        .map_err(|error| match error {
            RunSecretsError::Missing(_) => {
                ApiError::bad_request(format!("response action {}: {error}", script.id))
            }
            RunSecretsError::Unopenable(_) => ApiError::not_ready(
                format!("scripts cannot have their secrets now: {error}"),
                state.settings().server.retry_after_seconds,
            ),
            RunSecretsError::Store(error) => error.into(),
        })
}

/// Test-run a script without saving anything.
///
/// A script that raises answers 200 with status `failed` (the traceback in stderr); one
/// that runs too long answers 200 with `timed_out`. The script gets `trigger_args`, each
/// trigger global (`investigation`, `alert`, `entity`, `user`, `api_key`) from the key of
/// that name in `trigger_args`, else None, and `secrets`: empty, unless `script_id` names a
/// response action, whose named secrets it then gets (and no others). Their values are
/// masked (`***`) in stdout and stderr.
#[utoipa::path(post, path = "/app/api/v1/response-actions/test", tag = "response-actions",
    request_body = TestRunRequest,
    responses(
        (status = 200, description = "The script ran (status success, failed or timed_out)", body = TestRunResponse),
        (status = 400, description = "Bad request - invalid input", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 500, description = "Script execution failed (the sandbox could not run it), or system error", body = ErrorBody),
        (status = 503, description = "System not ready for requests (also: the sandbox cannot isolate scripts on this host)", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn test_run(
    State(state): State<AppState>,
    Admin(caller): Admin,
    ApiJson(request): ApiJson<TestRunRequest>,
) -> ApiResult<Json<TestRunResponse>> {
    Ok(Json(test(&state, &caller, request).await?))
}

/// Test-runs a script without saving anything (admin): the route's work, and the
/// console's settings form.
pub(crate) async fn test(
    state: &AppState,
    caller: &Caller,
    request: TestRunRequest,
) -> ApiResult<TestRunResponse> {
    caller.require(Role::Admin)?;
    let code = validate_code(
        "script_code",
        request
            .script_code
            .ok_or_else(|| ApiError::invalid_field("script_code", "is required"))?,
    )?;
    let trigger_args = request.trigger_args.unwrap_or_default();
    let store = state.store()?;
    let secrets = match request.script_id {
        None => RunSecrets::default(),
        Some(script_id) => {
            let script = match store.get_script(script_id).await {
                Ok(script) => script,
                Err(sleuth_store::StoreError::NotFound { .. }) => {
                    return Err(ApiError::invalid_field(
                        "script_id",
                        format!("there is no response action {script_id}"),
                    ));
                }
                Err(other) => return Err(other.into()),
            };
            secrets_for(state, store, &script).await?
        }
    };
    let job = ScriptJob {
        code,
        variables: test_variables(&trigger_args),
        trigger_args: Value::Object(trigger_args),
        secrets: secrets.values(),
        allow_network: false,
    };
    let outcome = firing::run_in_sandbox(state, job)
        .await
        .map_err(|refusal| refused(state, &refusal))?;
    if outcome.status == ScriptRunStatus::Error {
        let reason = secrets.mask(
            outcome
                .syserr
                .unwrap_or_else(|| "the runner gave no reason".into()),
        );
        tracing::warn!(%reason, "a test-run could not be run");
        return Err(ApiError::new(
            ErrorCode::ScriptExecutionFailed,
            format!("the script could not be run: {reason}"),
        ));
    }
    // Why the runner stopped the script (time limit, output cap) is worth showing; the
    // answer has no field of its own for it, so it closes stderr.
    let mut stderr = secrets.mask(outcome.stderr);
    if let Some(syserr) = outcome.syserr {
        let syserr = secrets.mask(syserr);
        if !stderr.is_empty() && !stderr.ends_with('\n') {
            stderr.push('\n');
        }
        stderr.push_str("sleuth: ");
        stderr.push_str(&syserr);
    }
    Ok(TestRunResponse {
        status: outcome.status.as_str().to_string(),
        stderr,
        stdout: secrets.mask(outcome.stdout),
    })
}

/// List the triggers scripts can be tied to, as a tree (`parent`, `trigger_tree_labels`).
#[utoipa::path(get, path = "/app/api/v1/response-actions/triggers", tag = "response-actions",
    responses(
        (status = 200, body = Vec<TriggerDefinitionDto>),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn list_triggers(
    State(state): State<AppState>,
    _admin: Admin,
) -> ApiResult<Json<Vec<TriggerDefinitionDto>>> {
    let triggers = store(&state).await?.list_trigger_definitions().await?;
    Ok(Json(
        triggers.iter().map(TriggerDefinitionDto::from).collect(),
    ))
}

/// A response action's counts of runs and versions, and its latest run and version.
#[utoipa::path(get, path = "/app/api/v1/response-actions/{script_id}", tag = "response-actions",
    params(("script_id" = String, Path)),
    responses(
        (status = 200, body = ResponseScriptDetails),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 404, description = "Resource not found", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn get_response_action(
    State(state): State<AppState>,
    _admin: Admin,
    Path(script_id): Path<String>,
) -> ApiResult<Json<ResponseScriptDetails>> {
    let script_id = path_id(&script_id, "response action")?;
    let summary = store(&state).await?.script_summary(script_id).await?;
    Ok(Json(ResponseScriptDetails {
        counts: ResponseScriptCounts {
            run: summary.run_count,
            version: summary.version_count,
        },
        latest: ResponseScriptLatest {
            run: summary.latest_run.as_ref().map(ResponseScriptRunDto::from),
            version: summary
                .latest_version
                .as_ref()
                .map(ResponseScriptVersionDto::from),
        },
    }))
}

/// Archive a response action (soft delete): it never runs again, keeps its runs, and its
/// versions that no run refers to are deleted.
#[utoipa::path(delete, path = "/app/api/v1/response-actions/{script_id}", tag = "response-actions",
    params(("script_id" = String, Path)),
    responses(
        (status = 204, description = "Archived"),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 404, description = "Resource not found", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn archive_response_action(
    State(state): State<AppState>,
    _admin: Admin,
    Path(script_id): Path<String>,
) -> ApiResult<StatusCode> {
    let script_id = path_id(&script_id, "response action")?;
    store(&state)
        .await?
        .archive_script(script_id, chrono::Utc::now())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Update a response action: any subset of `display_name`, `is_enabled`,
/// `trigger_def_uuid` (and ours: `code`, which makes the next version, and
/// `allow_network`). An empty body, or an archived action, is a 400.
#[utoipa::path(patch, path = "/app/api/v1/response-actions/{script_id}", tag = "response-actions",
    params(("script_id" = String, Path)),
    request_body = UpdateResponseScriptRequest,
    responses(
        (status = 204, description = "Updated"),
        (status = 400, description = "Bad request - invalid input, nothing to change, or the action is archived", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 404, description = "Resource not found", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn update_response_action(
    State(state): State<AppState>,
    Admin(caller): Admin,
    Path(script_id): Path<String>,
    ApiJson(request): ApiJson<UpdateResponseScriptRequest>,
) -> ApiResult<StatusCode> {
    let script_id = path_id(&script_id, "response action")?;
    let changes = ScriptChanges {
        display_name: request
            .display_name
            .as_deref()
            .map(validate_display_name)
            .transpose()?,
        is_enabled: request.is_enabled,
        trigger_uuid: request
            .trigger_def_uuid
            .as_deref()
            .map(validate_trigger_uuid)
            .transpose()?,
        allow_network: request.allow_network,
        secret_names: request
            .secret_names
            .map(validate_secret_names)
            .transpose()?,
        code: request
            .code
            .map(|code| validate_code("code", code))
            .transpose()?,
        author_id: caller.user_id(),
    };
    if changes.is_empty() {
        return Err(ApiError::bad_request(
            "nothing to change: send any of display_name, is_enabled, trigger_def_uuid, code, \
             allow_network, secret_names",
        ));
    }
    store(&state)
        .await?
        .update_script(script_id, &changes, chrono::Utc::now())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A response action's runs, newest first. Paged by `limit` (default 100, at most 1000)
/// and `offset`. An admin bound to tenant unions gets only the runs fired about its unions'
/// investigations, each without the action's code (`ResponseScriptRunInScope`).
#[utoipa::path(get, path = "/app/api/v1/response-actions/{script_id}/runs", tag = "response-actions",
    params(
        ("script_id" = String, Path),
        ("limit" = Option<i64>, Query, description = "Runs per page (default 100, at most 1000)"),
        ("offset" = Option<i64>, Query, description = "Runs to skip"),
    ),
    responses(
        (status = 200, body = Vec<RunViewDto>),
        (status = 400, description = "Bad request", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 404, description = "Resource not found", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn list_runs(
    State(state): State<AppState>,
    caller: Caller,
    Path(script_id): Path<String>,
    query: QueryPairs,
) -> ApiResult<Json<Vec<RunViewDto>>> {
    caller.require_within_scope(Role::Admin)?;
    let script_id = path_id(&script_id, "response action")?;
    let limit = query_integer(&query, "limit")?.unwrap_or(DEFAULT_RUNS_LIMIT);
    let offset = query_integer(&query, "offset")?.unwrap_or(0);
    if limit < 1 {
        return Err(ApiError::invalid_field("limit", "must be at least 1"));
    }
    if offset < 0 {
        return Err(ApiError::invalid_field("offset", "must not be negative"));
    }
    let page = RunPage {
        limit: u32::try_from(limit.min(MAX_RUNS_LIMIT)).unwrap_or(1000),
        offset: u64::try_from(offset).unwrap_or(0),
    };
    let scope = caller.scope();
    let runs = store(&state)
        .await?
        .list_script_runs(script_id, page, &scope)
        .await?;
    Ok(Json(
        runs.iter()
            .map(|run| RunViewDto::new(run, scope.is_all()))
            .collect(),
    ))
}

/// Read one run of a response action. An admin bound to tenant unions reads only a run
/// fired about its unions' investigations, without the action's code
/// (`ResponseScriptRunInScope`); any other run answers 404 to it.
#[utoipa::path(get, path = "/app/api/v1/response-actions/runs/{script_run_id}", tag = "response-actions",
    params(("script_run_id" = String, Path)),
    responses(
        (status = 200, body = RunViewDto),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 404, description = "Resource not found", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn get_run(
    State(state): State<AppState>,
    caller: Caller,
    Path(script_run_id): Path<String>,
) -> ApiResult<Json<RunViewDto>> {
    caller.require_within_scope(Role::Admin)?;
    let script_run_id = path_id(&script_run_id, "script run")?;
    let run = store(&state).await?.get_script_run(script_run_id).await?;
    let scope = caller.scope();
    if !scope.is_all() {
        let missing = || ApiError::not_found(format!("script run {script_run_id} not found"));
        let investigation_id = run.trigger_run.investigation_id.ok_or_else(missing)?;
        caller
            .check_investigation(&state, investigation_id)
            .await
            .map_err(|error| match error.code {
                ErrorCode::NotFound => missing(),
                _ => error,
            })?;
    }
    Ok(Json(RunViewDto::new(&run, scope.is_all())))
}

/// The firing of a manual trigger, from the caller's `trigger_args`.
async fn manual_firing(
    state: &AppState,
    store: &Arc<dyn Store>,
    script: &ScriptRecord,
    trigger_args: Map<String, Value>,
) -> ApiResult<Firing> {
    let fn_name = script.trigger_def.entry.fn_name.as_str();
    let investigation_id = match trigger_args.get("investigation_id") {
        None | Some(Value::Null) => None,
        Some(value) => Some(value.as_i64().filter(|id| *id > 0).ok_or_else(|| {
            ApiError::invalid_field(
                "trigger_args.investigation_id",
                "must be an investigation id",
            )
        })?),
    };
    let mut variables = Map::new();
    if let Some(investigation_id) = investigation_id {
        let record = match store.get_investigation(investigation_id).await {
            Ok(record) => record,
            Err(sleuth_store::StoreError::NotFound { .. }) => {
                return Err(ApiError::invalid_field(
                    "trigger_args.investigation_id",
                    format!("there is no investigation {investigation_id}"),
                ));
            }
            Err(other) => return Err(other.into()),
        };
        variables = firing::investigation_variables(state, &record);
    } else {
        variables.insert("investigation".into(), Value::Null);
        variables.insert("alert".into(), Value::Null);
    }
    if fn_name == trigger_catalog::MANUAL_INVESTIGATION {
        let investigation_id = investigation_id.ok_or_else(|| {
            ApiError::invalid_field(
                "trigger_args.investigation_id",
                "is required for this trigger",
            )
        })?;
        return Ok(Firing {
            trigger_args,
            variables,
            investigation_id: Some(investigation_id),
            entity: Some(format!("investigation:{investigation_id}")),
        });
    }
    let kind = trigger_catalog::manual_entity_kind(fn_name).ok_or_else(|| {
        ApiError::bad_request(format!(
            "response action {} is tied to trigger {fn_name}, which is not runnable; only \
             manual triggers (is_runnable true) run on request",
            script.id
        ))
    })?;
    let value = trigger_args
        .get("entity_value")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|value| !value.is_empty() && value.chars().count() <= 1024)
        .ok_or_else(|| {
            ApiError::invalid_field(
                "trigger_args.entity_value",
                "is required: the entity, as a string of at most 1024 characters",
            )
        })?
        .to_string();
    no_nul("trigger_args.entity_value", &value)?;
    variables.insert(
        "entity".into(),
        serde_json::json!({"type": kind, "value": value}),
    );
    Ok(Firing {
        trigger_args,
        variables,
        investigation_id,
        entity: Some(format!("{kind}:{value}")),
    })
}

/// Run a response action now, on a manual trigger (ours). Answers 202 with the run in
/// `running`; read its end from `GET .../runs/{script_run_id}`.
#[utoipa::path(post, path = "/app/api/v1/response-actions/{script_id}/run", tag = "response-actions",
    params(("script_id" = String, Path)),
    request_body = ManualRunRequest,
    responses(
        (status = 202, description = "The run, recorded and started", body = ResponseScriptRunDto),
        (status = 400, description = "Bad request - invalid trigger_args, or the action is archived, disabled or not on a runnable trigger", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 404, description = "Resource not found", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests (also: the sandbox cannot isolate scripts on this host)", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn run_response_action(
    State(state): State<AppState>,
    _admin: Admin,
    Path(script_id): Path<String>,
    ApiJson(request): ApiJson<ManualRunRequest>,
) -> ApiResult<(StatusCode, Json<ResponseScriptRunDto>)> {
    let script_id = path_id(&script_id, "response action")?;
    let store = store(&state).await?;
    let script = store.get_script(script_id).await?;
    if script.is_archived || !script.is_enabled {
        return Err(ApiError::bad_request(format!(
            "response action {script_id} is {}; only enabled, unarchived actions run",
            if script.is_archived {
                "archived"
            } else {
                "disabled"
            }
        )));
    }
    if !script.trigger_def.entry.is_runnable {
        return Err(ApiError::bad_request(format!(
            "response action {script_id} is tied to trigger {}, which is not runnable; only \
             manual triggers (is_runnable true) run on request",
            script.trigger_def.entry.fn_name
        )));
    }
    let firing = manual_firing(
        &state,
        store,
        &script,
        request.trigger_args.unwrap_or_default(),
    )
    .await?;
    // Refuse now rather than record a run that can only end in error.
    secrets_for(&state, store, &script).await?;
    match state.sandbox_if_set() {
        None => return Err(refused(&state, &SandboxRefusal::Absent)),
        Some(sandbox) => sandbox
            .ready()
            .map_err(|not_ready| refused(&state, &SandboxRefusal::NotReady(not_ready.0)))?,
    }
    let version = store
        .list_script_versions(script_id)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| ApiError::bad_request(format!("response action {script_id} has no code")))?;
    let trigger_name = script.trigger_def.entry.fn_name.clone();
    firing::record_system_events(store, &[trigger_name.as_str()], &firing).await;
    let started = firing::start_runs(
        &state,
        store,
        vec![RunnableScript { script, version }],
        &firing,
    )
    .await?;
    let script_run_id = started
        .first()
        .map(|run| run.script_run_id)
        .ok_or_else(ApiError::system_error)?;
    let run = store.get_script_run(script_run_id).await?;
    Ok((StatusCode::ACCEPTED, Json(ResponseScriptRunDto::from(&run))))
}

fn validate_secret_name(name: &str) -> ApiResult<&str> {
    if !secret_name_is_valid(name) {
        return Err(ApiError::invalid_field(
            "name",
            "a secret's name is 1 to 128 letters, digits and underscores, not starting with a digit",
        ));
    }
    Ok(name)
}

/// List the secrets scripts get: names, times, the key that sealed each, and the response
/// actions that name it; never values.
#[utoipa::path(get, path = "/app/api/v1/response-actions/secrets", tag = "response-actions",
    responses(
        (status = 200, body = Vec<SecretDto>),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn list_secrets(
    State(state): State<AppState>,
    _admin: Admin,
) -> ApiResult<Json<Vec<SecretDto>>> {
    let store = store(&state).await?;
    let secrets = store.list_script_secrets().await?;
    let scripts = store.list_scripts(false).await?;
    Ok(Json(
        secrets
            .iter()
            .map(|secret| SecretDto::new(secret, &scripts))
            .collect(),
    ))
}

/// Create or replace a secret; the runs of actions that name it read it as
/// `secrets["NAME"]`. It is stored encrypted with the key of `secrets.key_file`; without
/// a key it is refused (503). The value is never returned and never logged.
#[utoipa::path(put, path = "/app/api/v1/response-actions/secrets/{name}", tag = "response-actions",
    params(("name" = String, Path, description = "Letters, digits and underscores")),
    request_body = SetSecretRequest,
    responses(
        (status = 204, description = "Stored"),
        (status = 400, description = "Bad request - invalid name or value", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 503, description = "System not ready for requests (also: no key to encrypt secrets is configured)", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn set_secret(
    State(state): State<AppState>,
    _admin: Admin,
    Path(name): Path<String>,
    ApiJson(request): ApiJson<SetSecretRequest>,
) -> ApiResult<StatusCode> {
    let name = validate_secret_name(&name)?;
    let value = request
        .value
        .ok_or_else(|| ApiError::invalid_field("value", "is required"))?;
    if let Some(problem) = secret_value_problem(&value) {
        return Err(ApiError::invalid_field("value", problem));
    }
    let store = state.store()?;
    let keyring = state.keyring().ok_or_else(|| {
        ApiError::not_ready(
            "secrets cannot be stored: this Sleuth has no key to encrypt them; make one with \
             `sleuth secret generate-key`, set secrets.key_file (or SLEUTH_SECRETS__KEY) and \
             restart (docs/secrets.md)",
            state.settings().server.retry_after_seconds,
        )
    })?;
    let sealed = keyring.seal(name, &SecretValue(value));
    store
        .set_script_secret(name, &sealed, chrono::Utc::now())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Delete a secret.
#[utoipa::path(delete, path = "/app/api/v1/response-actions/secrets/{name}", tag = "response-actions",
    params(("name" = String, Path)),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (admin only)", body = ErrorBody),
        (status = 404, description = "Resource not found", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn delete_secret(
    State(state): State<AppState>,
    _admin: Admin,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    // A name that could never be stored is simply not found.
    let name = validate_secret_name(&name).map_err(|_| ApiError::not_found("no such secret"))?;
    state.store()?.delete_script_secret(name).await?;
    Ok(StatusCode::NO_CONTENT)
}
