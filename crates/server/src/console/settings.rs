//! The admin's settings (`/settings/...`): the context document, context memory, custom
//! strategies with their backtest, response actions with their versions, test-runs and
//! run history, users and keys, tenant unions, and the audit log with its verification.
//!
//! Each page lets in whom its API routes let in. What every tenant shares (the context
//! document, strategies, response actions, users and keys, changing tenant unions,
//! verifying the whole audit chain) needs an admin bound to no tenant union
//! (`Caller::require(Role::Admin)`, `SignedInAdmin`). Context memory, the tenant unions
//! and the audit log are also an admin's bound to tenant unions (`SignedInScopedAdmin`),
//! as their API routes are: such an admin lists and changes only the memory items of
//! their unions, sees only their unions, and reads only the audit entries concerning
//! them. Anyone else gets a 403 page. Every form calls the function the JSON route calls
//! (`routes::context::replace_document`, `routes::context_memory::create` and `::delete`,
//! `routes::users::create`, `::update` and `::set_password_of`, `routes::tenants::create`
//! and `::update`, `routes::response_actions::create` and `::test`,
//! `routes::strategies::run_backtest`), so validation, storage, reloading and the audit
//! note are the API's, and the API's error message is what the page shows, with its 4xx
//! status. What the pages only read comes from the same store calls the API's list routes
//! make, with the same tenant scope.
//!
//! Every form is read whole or refused whole (`ConsoleForm`): the page sends each of its
//! fields every time (an empty one is a choice, such as "every tenant union"), so a field
//! missing, repeated or unknown, a body over `server.body_limit_bytes` or one that is not
//! a form is refused with a 4xx page before anything is done; a value of the wrong type
//! or one the API does not know is refused by the form's own reading or by the API, and
//! shown above the form.
//!
//! Response-action code, script output, strategy text, memory items, union names and
//! audit details may echo alert text or anything an admin typed: every value is an
//! escaped maud splice.

mod memory;
mod unions;
mod users;

pub(crate) use memory::{memory_add, memory_page, memory_remove};
pub(crate) use unions::{union_create, union_page, union_save, unions};
pub(crate) use users::{user_change, user_create, user_page, user_password, user_unions, users};

use axum::extract::{FromRequestParts, Path, Query, State};
use axum::http::StatusCode;
use axum::http::header::LOCATION;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Map, Value};
use sleuth_domain::Role;
use sleuth_store::{
    AuditQuery, AuditVerdict, RunPage, ScriptRecord, StrategyQuery, StrategyRecord, TenantScope,
};

use crate::console::form::ConsoleForm;
use crate::console::pages::{api_error_page, error_page_for, html_response, shell, time};
use crate::console::runs;
use crate::console::session::SignedIn;
use crate::dto::response_action::{CreateResponseScriptRequest, TestRunRequest, TestRunResponse};
use crate::dto::strategy::BacktestDto;
use crate::error::{ApiError, ApiResult};
use crate::routes::strategies::BacktestRequest;
use crate::routes::{context, response_actions, strategies};
use crate::state::AppState;

/// Rows shown of the long lists (memory items, strategies, runs, audit entries).
const ROWS_SHOWN: u32 = 100;
const RUNS_SHOWN: u32 = 50;
const AUDIT_PAGE: u32 = 50;

/// A signed-in admin bound to no tenant union; anyone else is answered with a 403 page.
pub(crate) struct SignedInAdmin(SignedIn);

/// A signed-in admin, bound to tenant unions or not (`Caller::require_within_scope`), for
/// the pages whose API routes keep to the caller's unions; anyone else is answered with a
/// 403 page.
pub(crate) struct SignedInScopedAdmin(SignedIn);

impl FromRequestParts<AppState> for SignedInScopedAdmin {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let signed_in = SignedIn::from_request_parts(parts, state).await?;
        match signed_in.caller().require_within_scope(Role::Admin) {
            Ok(_) => Ok(SignedInScopedAdmin(signed_in)),
            Err(error) => Err(forbidden(&signed_in, &error)),
        }
    }
}

fn forbidden(signed_in: &SignedIn, error: &ApiError) -> Response {
    error_page_for(
        StatusCode::FORBIDDEN,
        &format!("The settings are for admins. {}", error.message),
        Some(signed_in),
    )
}

impl FromRequestParts<AppState> for SignedInAdmin {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let signed_in = SignedIn::from_request_parts(parts, state).await?;
        match signed_in.caller().require(Role::Admin) {
            Ok(_) => Ok(SignedInAdmin(signed_in)),
            Err(error) => Err(forbidden(&signed_in, &error)),
        }
    }
}

/// The settings' own navigation: each section, and whether an admin bound to tenant
/// unions may open it (its API routes keep to the caller's unions).
const SECTIONS: [(&str, &str, bool); 8] = [
    ("/settings/context", "Context", false),
    ("/settings/memory", "Context memory", true),
    ("/settings/strategies", "Strategies", false),
    ("/settings/actions", "Response actions", false),
    ("/settings/users", "Users and keys", false),
    ("/settings/unions", "Tenant unions", true),
    ("/settings/audit", "Audit log", true),
    ("/settings", "Overview", true),
];

/// The sections this user may open.
fn sections(signed_in: &SignedIn) -> impl Iterator<Item = (&'static str, &'static str)> {
    let bound = !signed_in.caller().scope().is_all();
    SECTIONS
        .into_iter()
        .filter(move |(_, _, open_to_bound)| !bound || *open_to_bound)
        .map(|(href, label, _)| (href, label))
}

fn page(signed_in: &SignedIn, title: &str, status: StatusCode, body: Markup) -> Response {
    let body = html! {
        nav.settings-nav {
            @for (href, label) in sections(signed_in) { a href=(href) { (label) } }
        }
        section.settings { h1 { (title) } (body) }
    };
    html_response(status, shell(title, Some(signed_in), body))
}

fn see_other(to: &str) -> Response {
    (StatusCode::SEE_OTHER, [(LOCATION, to.to_string())]).into_response()
}

/// An API error shown above the form it came from, with its per-field messages.
fn problem(error: &ApiError) -> Markup {
    html! {
        div.problem #settings-problem role="alert" {
            p { (error.message) }
            @if !error.field_errors.is_empty() {
                ul {
                    @for (field, messages) in &error.field_errors {
                        @for message in messages { li { code { (field) } ": " (message) } }
                    }
                }
            }
        }
    }
}

fn problem_status(error: &ApiError) -> StatusCode {
    error.code.status_and_name().0
}

fn json_text(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

// --- Overview -------------------------------------------------------------------------------

pub(crate) async fn overview(
    State(state): State<AppState>,
    SignedInScopedAdmin(signed_in): SignedInScopedAdmin,
) -> Response {
    let caller = signed_in.caller();
    let bound = !caller.scope().is_all();
    let body = html! {
        p { "What Sleuth knows and does beyond the investigations: each section is the API's, for an admin." }
        @if bound {
            p #bound-admin.notice { "You reach " (caller.scope().to_string()) ": you see and change only what concerns them. What every tenant shares needs an admin bound to no tenant union." }
        }
        ul.sections {
            @for (href, label) in sections(&signed_in).filter(|(href, _)| *href != "/settings") { li { a href=(href) { (label) } } }
        }
        @if !bound {
            h2 { "The context in force" }
            (effective_summary(&context::effective(&state)))
        }
    };
    page(&signed_in, "Settings", StatusCode::OK, body)
}

fn effective_summary(effective: &crate::routes::context::EffectiveContextDto) -> Markup {
    html! {
        dl.facts #context-status {
            dt { "Loaded" } dd { (effective.loaded_at.as_ref().map_or("not yet".to_string(), time)) }
            dt { "Files" } dd { @if effective.files.is_empty() { "none (the API document only)" } @else { (effective.files.join(", ")) } }
            dt { "Threat-intel indicators" } dd { (effective.intel_count) }
            @if let Some(error) = &effective.last_error { dt { "Last reload failed" } dd.problem { (error) } }
            @for warning in &effective.warnings { dt { "Warning" } dd { (warning) } }
        }
    }
}

// --- Context document -----------------------------------------------------------------------

#[derive(Deserialize)]
pub(crate) struct SavedQuery {
    saved: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContextForm {
    #[serde(default)]
    csrf: String,
    toml: String,
}

fn context_page(
    state: &AppState,
    signed_in: &SignedIn,
    text: &str,
    outcome: Result<bool, &ApiError>,
) -> Response {
    let status = match outcome {
        Err(error) => problem_status(error),
        Ok(_) => StatusCode::OK,
    };
    let body = html! {
        p { "The context document kept in the database, merged with the context file (docs/context.md). It must load before it replaces the one in force." }
        @match outcome {
            Err(error) => { (problem(error)) }
            Ok(true) => { p.notice #context-saved { "Saved: the context is in force in this process now, in the others within the reload interval." } }
            Ok(false) => {}
        }
        form #context-form method="post" action="/settings/context" {
            input type="hidden" name="csrf" value=(signed_in.csrf());
            label { "The document (TOML)"
                textarea #context-toml.code name="toml" rows="18" spellcheck="false" { (text) }
            }
            button #save-context type="submit" { "Check and save" }
        }
        h2 { "In force" }
        (effective_summary(&context::effective(state)))
    };
    page(signed_in, "Context", status, body)
}

pub(crate) async fn context_show(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
    Query(query): Query<SavedQuery>,
) -> Response {
    match context::read_document(&state, &signed_in.caller()).await {
        Ok(document) => context_page(
            &state,
            &signed_in,
            &document.toml,
            Ok(query.saved.is_some()),
        ),
        Err(error) => api_error_page(error),
    }
}

pub(crate) async fn context_save(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
    ConsoleForm(form): ConsoleForm<ContextForm>,
) -> Response {
    if let Some(refused) = signed_in.refuses_csrf(&form.csrf) {
        return refused;
    }
    let caller = signed_in.caller();
    let saved = match context::parse_document(&form.toml, true) {
        Ok(document) => context::replace_document(&state, &caller, document).await,
        Err(error) => Err(error),
    };
    match saved {
        Ok(_) => see_other("/settings/context?saved=1"),
        Err(error) if error.code.status_and_name().0.is_client_error() => {
            context_page(&state, &signed_in, &form.toml, Err(&error))
        }
        Err(error) => api_error_page(error),
    }
}

// --- Strategies and their backtest ----------------------------------------------------------

pub(crate) async fn strategies_list(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
) -> Response {
    let listed = async {
        let store = strategies::store(&state).await?;
        Ok::<_, ApiError>(
            store
                .list_strategies(&StrategyQuery {
                    is_archived: false,
                    is_enabled: None,
                    limit: ROWS_SHOWN,
                    offset: 0,
                })
                .await?,
        )
    }
    .await;
    let listed = match listed {
        Ok(listed) => listed,
        Err(error) => return api_error_page(error),
    };
    let body = html! {
        p { "The custom strategies in force and disabled (docs/strategies.md). Open one to backtest it over a period." }
        table.settings #strategies-table {
            thead { tr { th { "#" } th { "Title" } th { "Enabled" } th { "Rules" } th { "Updated" } } }
            tbody {
                @for strategy in &listed.items {
                    tr {
                        td { (strategy.id) }
                        td { a href=(format!("/settings/strategies/{}", strategy.id)) { (strategy.title) } @if strategy.is_protected { " " span.tag { "built in" } } }
                        td { (if strategy.is_enabled { "yes" } else { "no" }) }
                        td { (strategy.instructions.len()) " instructions, " (strategy.outcomes.len()) " outcome, " (strategy.priorities.len()) " priority" }
                        td { (time(&strategy.updated_at)) }
                    }
                }
            }
        }
    };
    page(&signed_in, "Strategies", StatusCode::OK, body)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BacktestForm {
    #[serde(default)]
    csrf: String,
    from: String,
    until: String,
    max_investigations: String,
}

async fn strategy_and_versions(
    state: &AppState,
    strategy_id: i64,
) -> ApiResult<(StrategyRecord, Vec<StrategyRecord>)> {
    let store = strategies::store(state).await?;
    let strategy = store.get_strategy(strategy_id).await?;
    let versions = store.list_strategy_versions(strategy_id).await?;
    Ok((strategy, versions))
}

fn strategy_page(
    signed_in: &SignedIn,
    strategy: &StrategyRecord,
    versions: &[StrategyRecord],
    form: Option<&BacktestForm>,
    backtest: Option<Result<&BacktestDto, &ApiError>>,
) -> Response {
    let status = match backtest {
        Some(Err(error)) => problem_status(error),
        _ => StatusCode::OK,
    };
    let body = html! {
        p.crumbs { a href="/settings/strategies" { "Strategies" } " / #" (strategy.id) }
        h2 #strategy-title { (strategy.title) }
        @if let Some(scenario) = &strategy.scenario { p { (scenario) } }
        dl.facts {
            dt { "Enabled" } dd { (if strategy.is_enabled { "yes" } else { "no" }) }
            dt { "Alert sources" } dd { @if strategy.alert_sources.is_empty() { "all" } @else { (strategy.alert_sources.join(", ")) } }
            dt { "Conclusions it changed" } dd { (strategy.total_conclusions_affected) }
        }
        @if !strategy.instructions.is_empty() {
            h3 { "Instructions" }
            ul { @for rule in &strategy.instructions { li { (rule.content) } } }
        }
        @if !strategy.outcomes.is_empty() {
            h3 { "Outcome rules" }
            ul { @for rule in &strategy.outcomes { li { code { (rule.condition.to_string()) } " → " (rule.outcome.as_str()) } } }
        }
        @if !strategy.priorities.is_empty() {
            h3 { "Priority rules" }
            ul { @for rule in &strategy.priorities { li { (rule.priority.as_str()) " (ranking " (rule.ranking) ")" } } }
        }
        h3 { "Versions" }
        table.settings #versions-table {
            thead { tr { th { "Version" } th { "Title" } th { "Made" } } }
            tbody { @for version in versions { tr { td { (version.version_id) } td { (version.title) } td { (time(&version.updated_at)) } } } }
        }
        h2 { "Backtest" }
        p { "Re-runs the engine over the concluded investigations whose alert was created in the period, with the strategies in force and with this one as if enabled; nothing is stored." }
        form #backtest-form method="post" action=(format!("/settings/strategies/{}/backtest", strategy.id)) {
            input type="hidden" name="csrf" value=(signed_in.csrf());
            label { "From" input #backtest-from type="date" name="from" required value=(form.map_or("", |form| form.from.as_str())); }
            label { "Until" input #backtest-until type="date" name="until" required value=(form.map_or("", |form| form.until.as_str())); }
            label { "At most" input #backtest-max type="text" inputmode="numeric" name="max_investigations" value=(form.map_or("500", |form| form.max_investigations.as_str())); }
            button #run-backtest type="submit" { "Run the backtest" }
        }
        @match backtest {
            Some(Err(error)) => { (problem(error)) }
            Some(Ok(result)) => { (backtest_table(result)) }
            None => {}
        }
    };
    page(signed_in, "Strategy", status, body)
}

fn backtest_table(result: &BacktestDto) -> Markup {
    html! {
        div #backtest-result {
            p #backtest-summary {
                (result.investigations_considered) " investigations re-run, "
                (result.affected.len()) " would change"
                @if result.truncated { " (the period held more; the oldest were run)" }
                "."
            }
            @if !result.outcome_changes.is_empty() || !result.priority_changes.is_empty() {
                table.settings #backtest-changes {
                    thead { tr { th { "Change" } th { "From" } th { "To" } th { "How many" } } }
                    tbody {
                        @for change in &result.outcome_changes { tr { td { "outcome" } td { (change.from) } td { (change.to) } td { (change.count) } } }
                        @for change in &result.priority_changes { tr { td { "priority" } td { (change.from) } td { (change.to) } td { (change.count) } } }
                    }
                }
            }
            @if !result.affected.is_empty() {
                table.settings #backtest-affected {
                    thead { tr { th { "Investigation" } th { "Outcome now" } th { "With it" } th { "Priority now" } th { "With it" } } }
                    tbody {
                        @for item in &result.affected {
                            tr {
                                td { a href=(format!("/investigations/{}", item.investigation_id)) { "#" (item.investigation_id) } }
                                td { (item.baseline_outcome.as_str()) } td { (item.draft_outcome.as_str()) }
                                td { (item.baseline_priority.as_str()) } td { (item.draft_priority.as_str()) }
                            }
                        }
                    }
                }
            }
            @if !result.failed_investigation_ids.is_empty() {
                p.problem { "The engine failed on " (result.failed_investigation_ids.len()) " investigations; they were skipped (see the log)." }
            }
        }
    }
}

fn positive_id(raw: &str) -> Option<i64> {
    raw.parse::<i64>().ok().filter(|id| *id > 0)
}

fn no_such(signed_in: &SignedIn, what: &str) -> Response {
    error_page_for(
        StatusCode::NOT_FOUND,
        &format!("There is no such {what}."),
        Some(signed_in),
    )
}

pub(crate) async fn strategy_show(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
    Path(raw_id): Path<String>,
) -> Response {
    let Some(strategy_id) = positive_id(&raw_id) else {
        return no_such(&signed_in, "strategy");
    };
    match strategy_and_versions(&state, strategy_id).await {
        Ok((strategy, versions)) => strategy_page(&signed_in, &strategy, &versions, None, None),
        Err(error) => api_error_page(error),
    }
}

pub(crate) async fn strategy_backtest(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
    Path(raw_id): Path<String>,
    ConsoleForm(form): ConsoleForm<BacktestForm>,
) -> Response {
    if let Some(refused) = signed_in.refuses_csrf(&form.csrf) {
        return refused;
    }
    let Some(strategy_id) = positive_id(&raw_id) else {
        return no_such(&signed_in, "strategy");
    };
    let (strategy, versions) = match strategy_and_versions(&state, strategy_id).await {
        Ok(found) => found,
        Err(error) => return api_error_page(error),
    };
    let max_investigations = match form.max_investigations.trim() {
        "" => Ok(None),
        raw => raw
            .parse::<i64>()
            .map(Some)
            .map_err(|_| ApiError::invalid_field("max_investigations", "must be a whole number")),
    };
    let result = match max_investigations {
        Ok(max_investigations) => {
            let request = BacktestRequest {
                strategy: None,
                strategy_id: Some(strategy_id),
                changes: None,
                from: Some(form.from.clone()),
                until: Some(form.until.clone()),
                tenant_id: None,
                max_investigations,
            };
            strategies::run_backtest(&state, &signed_in.caller(), &request).await
        }
        Err(error) => Err(error),
    };
    let server_side = result
        .as_ref()
        .err()
        .is_some_and(|error| !problem_status(error).is_client_error());
    if server_side {
        return api_error_page(result.err().unwrap_or_else(ApiError::system_error));
    }
    strategy_page(
        &signed_in,
        &strategy,
        &versions,
        Some(&form),
        Some(result.as_ref()),
    )
}

// --- Response actions -----------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ActionForm {
    #[serde(default)]
    csrf: String,
    display_name: String,
    trigger_def_uuid: String,
    code: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TestForm {
    #[serde(default)]
    csrf: String,
    code: String,
    trigger_args: String,
}

async fn actions_page(
    state: &AppState,
    signed_in: &SignedIn,
    form: Option<&ActionForm>,
    error: Option<&ApiError>,
) -> Response {
    let read = async {
        let store = response_actions::store(state).await?;
        let scripts = store.list_scripts(false).await?;
        let triggers = store.list_trigger_definitions().await?;
        Ok::<_, ApiError>((scripts, triggers))
    }
    .await;
    let (scripts, triggers) = match read {
        Ok(read) => read,
        Err(error) => return api_error_page(error),
    };
    let chosen = form.map_or("", |form| form.trigger_def_uuid.as_str());
    let body = html! {
        p { "Python scripts Sleuth runs in its sandbox when a trigger fires (docs/response-actions.md)." }
        table.settings #actions-table {
            thead { tr { th { "#" } th { "Name" } th { "Trigger" } th { "Enabled" } th { "Updated" } } }
            tbody {
                @for script in &scripts {
                    tr {
                        td { (script.id) }
                        td { a href=(format!("/settings/actions/{}", script.id)) { (script.display_name) } }
                        td { (script.trigger_def.entry.display_name) }
                        td { (if script.is_enabled { "yes" } else { "no" }) }
                        td { (time(&script.updated_at)) }
                    }
                }
            }
        }
        h2 { "New response action" }
        @if let Some(error) = error { (problem(error)) }
        form #action-form method="post" action="/settings/actions" {
            input type="hidden" name="csrf" value=(signed_in.csrf());
            label { "Name" input #action-name type="text" name="display_name" required value=(form.map_or("", |form| form.display_name.as_str())); }
            label { "Trigger"
                select #action-trigger name="trigger_def_uuid" {
                    @for trigger in triggers.iter().filter(|trigger| trigger.entry.is_scriptable && !trigger.is_archived) {
                        @let uuid = trigger.entry.uuid.to_string();
                        option value=(uuid) selected[uuid == chosen] { (trigger.entry.tree_labels.join(" › ")) }
                    }
                }
            }
            label { "Code (Python 3)" textarea #action-code.code name="code" rows="8" spellcheck="false" { (form.map_or("", |form| form.code.as_str())) } }
            button #create-action type="submit" { "Create" }
        }
    };
    let status = error.map_or(StatusCode::OK, problem_status);
    page(signed_in, "Response actions", status, body)
}

pub(crate) async fn actions_list(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
) -> Response {
    actions_page(&state, &signed_in, None, None).await
}

pub(crate) async fn action_create(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
    ConsoleForm(form): ConsoleForm<ActionForm>,
) -> Response {
    if let Some(refused) = signed_in.refuses_csrf(&form.csrf) {
        return refused;
    }
    let request = CreateResponseScriptRequest {
        code: Some(form.code.clone()),
        display_name: Some(form.display_name.clone()),
        trigger_def_uuid: Some(form.trigger_def_uuid.clone()),
        is_enabled: None,
        allow_network: None,
        secret_names: None,
    };
    match response_actions::create(&state, &signed_in.caller(), request).await {
        Ok(created) => see_other(&format!("/settings/actions/{}", created.id)),
        Err(error) if problem_status(&error).is_client_error() => {
            actions_page(&state, &signed_in, Some(&form), Some(&error)).await
        }
        Err(error) => api_error_page(error),
    }
}

/// What a test-run came to: its answer, or the API's refusal.
type Tested = Result<TestRunResponse, ApiError>;

async fn action_page(
    state: &AppState,
    signed_in: &SignedIn,
    script_id: i64,
    form: Option<&TestForm>,
    tested: Option<&Tested>,
) -> Response {
    let read = async {
        let store = response_actions::store(state).await?;
        let script = store.get_script(script_id).await?;
        let versions = store.list_script_versions(script_id).await?;
        let runs = store
            .list_script_runs(
                script_id,
                RunPage {
                    limit: RUNS_SHOWN,
                    offset: 0,
                },
                &TenantScope::All,
            )
            .await?;
        Ok::<_, ApiError>((script, versions, runs))
    }
    .await;
    let (script, versions, runs) = match read {
        Ok(read) => read,
        Err(error) => return api_error_page(error),
    };
    let latest_code = versions.first().map_or("", |version| version.code.as_str());
    let status = match tested {
        Some(Err(error)) => problem_status(error),
        _ => StatusCode::OK,
    };
    let body = html! {
        p.crumbs { a href="/settings/actions" { "Response actions" } " / #" (script.id) }
        h2 #action-title { (script.display_name) }
        (action_facts(&script))
        h3 { "Versions" }
        @for version in &versions {
            details.version open[version.v_num == versions.first().map_or(0, |latest| latest.v_num)] {
                summary { "v" (version.v_num) " · " (version.author.email) " · " (time(&version.created_at)) }
                pre.code { (version.code) }
            }
        }
        h2 { "Test-run" }
        p { "Runs the code in the sandbox with these trigger arguments (JSON) and this action's secrets; nothing is stored." }
        form #test-form method="post" action=(format!("/settings/actions/{}/test", script.id)) {
            input type="hidden" name="csrf" value=(signed_in.csrf());
            label { "Code" textarea #test-code.code name="code" rows="8" spellcheck="false" { (form.map_or(latest_code, |form| form.code.as_str())) } }
            label { "Trigger arguments (JSON object)" textarea #test-args.code name="trigger_args" rows="3" spellcheck="false" { (form.map_or("{}", |form| form.trigger_args.as_str())) } }
            button #run-test type="submit" { "Test-run" }
        }
        @match tested {
            Some(Ok(answer)) => {
                div #test-output {
                    p { "Status: " span #test-status class=(format!("run {}", if answer.status == "success" { "success" } else { "failed" })) { (answer.status) } }
                    h3 { "stdout" } pre.output-text #test-stdout { (answer.stdout) }
                    @if !answer.stderr.is_empty() { h3 { "stderr" } pre.output-text #test-stderr { (answer.stderr) } }
                }
            }
            Some(Err(error)) => { (problem(error)) }
            None => {}
        }
        h2 { "Run history" }
        @if runs.is_empty() { p #no-runs { "It has not run yet." } } @else { (runs::table(&runs, true)) }
    };
    page(signed_in, "Response action", status, body)
}

fn action_facts(script: &ScriptRecord) -> Markup {
    html! {
        dl.facts {
            dt { "Trigger" } dd { (script.trigger_def.entry.tree_labels.join(" › ")) }
            dt { "Enabled" } dd { (if script.is_enabled { "yes" } else { "no" }) }
            dt { "Network" } dd { (if script.allow_network { "allowed" } else { "none" }) }
            dt { "Secrets" } dd { @if script.secret_names.is_empty() { "none" } @else { (script.secret_names.join(", ")) } }
        }
    }
}

pub(crate) async fn action_show(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
    Path(raw_id): Path<String>,
) -> Response {
    let Some(script_id) = positive_id(&raw_id) else {
        return no_such(&signed_in, "response action");
    };
    action_page(&state, &signed_in, script_id, None, None).await
}

pub(crate) async fn action_test(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
    Path(raw_id): Path<String>,
    ConsoleForm(form): ConsoleForm<TestForm>,
) -> Response {
    if let Some(refused) = signed_in.refuses_csrf(&form.csrf) {
        return refused;
    }
    let Some(script_id) = positive_id(&raw_id) else {
        return no_such(&signed_in, "response action");
    };
    let trigger_args = match form.trigger_args.trim() {
        "" => Ok(Map::new()),
        text => serde_json::from_str::<Map<String, Value>>(text).map_err(|error| {
            ApiError::invalid_field("trigger_args", format!("is not a JSON object: {error}"))
        }),
    };
    let tested = match trigger_args {
        Ok(trigger_args) => {
            let request = TestRunRequest {
                script_code: Some(form.code.clone()),
                trigger_args: Some(trigger_args),
                script_id: Some(script_id),
            };
            response_actions::test(&state, &signed_in.caller(), request).await
        }
        Err(error) => Err(error),
    };
    action_page(&state, &signed_in, script_id, Some(&form), Some(&tested)).await
}

// --- The audit log --------------------------------------------------------------------------

#[derive(Deserialize)]
pub(crate) struct AuditParams {
    offset: Option<u64>,
    verify: Option<String>,
}

pub(crate) async fn audit(
    State(state): State<AppState>,
    SignedInScopedAdmin(signed_in): SignedInScopedAdmin,
    Query(params): Query<AuditParams>,
) -> Response {
    let offset = params.offset.unwrap_or(0);
    let caller = signed_in.caller();
    // Verifying walks every entry, every tenant's: as the API's export, an admin bound to
    // no union only. Listing keeps to the caller's unions, as the API's list.
    let may_verify = caller.require(Role::Admin).is_ok();
    if params.verify.is_some()
        && let Err(error) = caller.require(Role::Admin)
    {
        return forbidden(&signed_in, &error);
    }
    let read = async {
        let store = state.store()?;
        let page = store
            .list_audit_entries(&AuditQuery {
                scope: caller.scope(),
                limit: AUDIT_PAGE,
                offset,
                ..AuditQuery::default()
            })
            .await?;
        // Walking the chain reads every entry: only when asked.
        let verdict = match params.verify {
            Some(_) => Some(store.verify_audit_chain().await?),
            None => None,
        };
        Ok::<_, ApiError>((page, verdict))
    }
    .await;
    let (entries, verdict) = match read {
        Ok(read) => read,
        Err(error) => return api_error_page(error),
    };
    let body = html! {
        p { "Every write through the API, the console and the command line, hash-chained: an entry edited, deleted or inserted outside Sleuth breaks the chain." }
        @if may_verify {
            form #verify-form method="get" action="/settings/audit" {
                input type="hidden" name="verify" value="1";
                button #verify-chain type="submit" { "Verify the chain" }
            }
        } @else {
            p.meta #audit-scoped { "The entries concerning " (caller.scope().to_string()) ". Verifying the whole chain needs an admin bound to no tenant union." }
        }
        @match &verdict {
            Some(AuditVerdict::Intact { count, head_hash }) => {
                p.notice #audit-verdict { "Intact: " (count) " entries; head hash " code { (head_hash) } " (keep it elsewhere to detect a rewritten log)." }
            }
            Some(AuditVerdict::Broken { seq, reason }) => {
                p.problem #audit-verdict { "Broken at entry " (seq) ": " (reason) }
            }
            None => {}
        }
        p.meta { (entries.total) " entries, newest first." }
        table.settings #audit-table {
            thead { tr { th { "#" } th { "When" } th { "Who" } th { "Action" } th { "Resource" } th { "Detail" } } }
            tbody {
                @for entry in &entries.items {
                    tr {
                        td { (entry.seq) } td { (time(&entry.at)) }
                        td { (entry.actor_email.as_deref().unwrap_or("—")) }
                        td { (entry.action) }
                        td { (entry.resource_type) @if let Some(id) = &entry.resource_id { " " (id) } }
                        td { code { (entry.detail.to_string()) } }
                    }
                }
            }
        }
        nav.pager {
            @if offset > 0 { a #audit-newer href=(format!("/settings/audit?offset={}", offset.saturating_sub(u64::from(AUDIT_PAGE)))) { "← Newer" } }
            @if offset + (entries.items.len() as u64) < entries.total { a #audit-older href=(format!("/settings/audit?offset={}", offset + u64::from(AUDIT_PAGE))) { "Older →" } }
        }
    };
    page(&signed_in, "Audit log", StatusCode::OK, body)
}
