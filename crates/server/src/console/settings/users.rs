//! Users and keys in the settings: the users and their API keys, a form to create a user
//! with a role, reaching every tenant union or bound to one or more of them (the API's
//! `tenant_union_ids`), and each user's page to change their role and the unions they
//! reach, deactivate or reactivate them, and set or reset their console password. Every change is the API's
//! (`routes::users::create`, `::update`, `::set_password_of`): its rules (an admin cannot
//! demote or deactivate themselves, the store keeps an active admin, a deactivated user's
//! keys are revoked, a new password ends the user's sessions) and its messages. A password
//! typed here is never shown again, also not after an error.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use sleuth_domain::Role;
use sleuth_store::{TenantUnion, User};

use super::{SignedInAdmin, page, positive_id, problem, problem_status, see_other};
use crate::console::form::{ConsoleForm, FormFields};
use crate::console::pages::{api_error_page, time};
use crate::console::session::SignedIn;
use crate::error::ApiError;
use crate::routes::users::{self, CreateUserRequest, SetPasswordRequest, UpdateUserRequest};
use crate::state::AppState;

/// The new-user form as the page sent it, to show again after a refusal. Which unions the
/// user reaches is a multiple choice (`tenant_union_ids`, sent once per union chosen, or
/// once empty for "every tenant union"), so the form is read as its pairs
/// (`FormFields`), each other field exactly once.
#[derive(Default)]
pub(crate) struct NewUserForm {
    email: String,
    first_name: String,
    last_name: String,
    role: String,
    tenant_union_ids: Vec<String>,
}

/// The new-user form's fields, all of which the page sends every time.
const NEW_USER_FIELDS: [&str; 6] = [
    "csrf",
    "email",
    "first_name",
    "last_name",
    "role",
    "tenant_union_ids",
];

/// What the page offers for "every tenant union" in the unions' choice.
const EVERY_UNION: &str = "";

impl NewUserForm {
    /// The form as sent, whatever is wrong with it, to show again.
    fn as_sent(fields: &FormFields) -> NewUserForm {
        NewUserForm {
            email: fields.first("email").to_string(),
            first_name: fields.first("first_name").to_string(),
            last_name: fields.first("last_name").to_string(),
            role: fields.first("role").to_string(),
            tenant_union_ids: fields
                .all("tenant_union_ids")
                .into_iter()
                .map(str::to_string)
                .collect(),
        }
    }

    /// Whether the unions' choice holds this option.
    fn chose(&self, option: &str) -> bool {
        self.tenant_union_ids.iter().any(|chosen| chosen == option)
    }
}

/// The unions chosen: "every tenant union" alone (`None`), or one or more union ids. The
/// API checks that each exists.
fn unions_chosen(fields: &FormFields) -> Result<Option<Vec<i64>>, ApiError> {
    let chosen = fields.all("tenant_union_ids");
    if chosen.is_empty() {
        return Err(ApiError::invalid_field(
            "tenant_union_ids",
            "choose every tenant union, or one or more unions",
        ));
    }
    if chosen.iter().all(|raw| *raw == EVERY_UNION) {
        return match chosen.len() {
            1 => Ok(None),
            _ => Err(ApiError::invalid_field(
                "tenant_union_ids",
                "is sent more than once",
            )),
        };
    }
    if chosen.contains(&EVERY_UNION) {
        return Err(ApiError::invalid_field(
            "tenant_union_ids",
            "choose either every tenant union or some unions, not both",
        ));
    }
    chosen
        .iter()
        .map(|raw| {
            raw.trim().parse::<i64>().map_err(|_| {
                ApiError::invalid_field(
                    "tenant_union_ids",
                    format!(
                        "'{}' is not a tenant union id",
                        raw.chars().take(60).collect::<String>()
                    ),
                )
            })
        })
        .collect::<Result<Vec<i64>, ApiError>>()
        .map(Some)
}

/// The API's request of a new-user form, or why the form is not the page's.
fn new_user_request(fields: &FormFields) -> Result<CreateUserRequest, ApiError> {
    fields.only(&NEW_USER_FIELDS)?;
    Ok(CreateUserRequest {
        email: Some(fields.one("email")?.to_string()),
        first_name: Some(fields.one("first_name")?.to_string()),
        last_name: Some(fields.one("last_name")?.to_string()),
        role: Some(fields.one("role")?.to_string()),
        oidc_user_id: None,
        tenant_union_ids: unions_chosen(fields)?,
    })
}

/// The role form (`role`) or the access form (`is_active`) of a user's page.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChangeForm {
    #[serde(default)]
    csrf: String,
    role: Option<String>,
    is_active: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PasswordForm {
    #[serde(default)]
    csrf: String,
    password: String,
    /// A checkbox: sent ("on") when checked, absent when not.
    must_change: Option<String>,
}

/// The access form's `is_active`: "true" or "false", nothing else (a value the page never
/// sends must not deactivate anyone).
fn is_active_of(raw: Option<&str>) -> Result<Option<bool>, ApiError> {
    match raw {
        None => Ok(None),
        Some("true") => Ok(Some(true)),
        Some("false") => Ok(Some(false)),
        Some(_) => Err(ApiError::invalid_field(
            "is_active",
            "must be true or false",
        )),
    }
}

/// The checkbox's `must_change`: "on" when checked (what a browser sends), absent when
/// not.
fn must_change_of(raw: Option<&str>) -> Result<bool, ApiError> {
    match raw {
        None => Ok(false),
        Some("on") => Ok(true),
        Some(_) => Err(ApiError::invalid_field(
            "must_change",
            "is a checkbox: \"on\" or absent",
        )),
    }
}

#[derive(Deserialize)]
pub(crate) struct Done {
    done: Option<String>,
}

/// The unions' multiple choice (`tenant_union_ids`): "every tenant union", then each
/// union; `chosen` says which options are selected.
fn unions_choice(id: &str, unions: &[TenantUnion], chosen: impl Fn(&str) -> bool) -> Markup {
    html! {
        select id=(id) name="tenant_union_ids" multiple size=(unions.len().clamp(1, 7) + 1) {
            option value=(EVERY_UNION) selected[chosen(EVERY_UNION)] { "every tenant union" }
            @for union in unions {
                @let option = union.id.to_string();
                option value=(option) selected[chosen(&option)] { "only " (union.display_name) }
            }
        }
    }
}

/// Whether `option` of the unions' choice is what `user` reaches now.
fn reaches(user: &User, option: &str) -> bool {
    match user.tenant_scope.union_ids() {
        None => option == EVERY_UNION,
        Some(ids) => ids.iter().any(|id| id.to_string() == option),
    }
}

fn role_options(chosen: &str) -> Markup {
    html! {
        @for role in Role::ALL {
            option value=(role.as_str()) selected[role.as_str() == chosen] { (role.as_str()) }
        }
    }
}

async fn list(
    state: &AppState,
    signed_in: &SignedIn,
    form: Option<&NewUserForm>,
    error: Option<&ApiError>,
) -> Response {
    let read = async {
        let store = state.store()?;
        Ok::<_, ApiError>((
            store.list_users().await?,
            store.list_api_keys().await?,
            store.list_tenant_unions().await?,
        ))
    }
    .await;
    let (users, keys, unions) = match read {
        Ok(read) => read,
        Err(error) => return api_error_page(error),
    };
    let empty = NewUserForm::default();
    let form = form.unwrap_or(&empty);
    let chosen_role = if form.role.is_empty() {
        Role::Member.as_str()
    } else {
        form.role.as_str()
    };
    let body = html! {
        p { "People and their keys (the API's " code { "/app/api/v1/users" } " and " code { "/app/api/v1/api-keys" } "). Open a user to change their role, deactivate them or set their console password. Keys are made and revoked over the API or with " code { "sleuth apikey" } "." }
        table.settings #users-table {
            thead { tr { th { "#" } th { "Email" } th { "Name" } th { "Role" } th { "Reaches" } th { "Active" } } }
            tbody {
                @for user in &users {
                    tr {
                        td { (user.id) }
                        td { a href=(format!("/settings/users/{}", user.id)) { (user.email) } }
                        td { (user.first_name) " " (user.last_name) }
                        td { (user.role.as_str()) } td { (user.tenant_scope.to_string()) }
                        td { (if user.is_active { "yes" } else { "no" }) }
                    }
                }
            }
        }
        h2 { "New user" }
        @if let Some(error) = error { (problem(error)) }
        form #user-form method="post" action="/settings/users" {
            input type="hidden" name="csrf" value=(signed_in.csrf());
            label { "Email" input #user-email type="email" name="email" required value=(form.email); }
            label { "First name" input #user-first type="text" name="first_name" value=(form.first_name); }
            label { "Last name" input #user-last type="text" name="last_name" value=(form.last_name); }
            label { "Role" select #user-role name="role" { (role_options(chosen_role)) } }
            label { "Reaches (choose several with Ctrl or ⌘)"
                (unions_choice("user-unions", &unions, |option| {
                    form.chose(option) || (option == EVERY_UNION && form.tenant_union_ids.is_empty())
                }))
            }
            button #create-user type="submit" { "Create" }
        }
        h2 { "API keys" }
        p.meta { "Only each key's first characters are kept in the clear." }
        table.settings #keys-table {
            thead { tr { th { "#" } th { "Name" } th { "Prefix" } th { "User" } th { "Reaches" } th { "Last used" } th { "Revoked" } } }
            tbody {
                @for key in &keys {
                    tr {
                        td { (key.id) } td { (key.name) } td { code { (key.prefix) "…" } } td { (key.user_email) }
                        td { (key.tenant_scope.to_string()) }
                        td { (key.last_used_at.as_ref().map_or("never".to_string(), time)) }
                        td { (key.revoked_at.as_ref().map_or("—".to_string(), time)) }
                    }
                }
            }
        }
    };
    let status = error.map_or(StatusCode::OK, problem_status);
    page(signed_in, "Users and keys", status, body)
}

pub(crate) async fn users(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
) -> Response {
    list(&state, &signed_in, None, None).await
}

pub(crate) async fn user_create(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
    ConsoleForm(pairs): ConsoleForm<Vec<(String, String)>>,
) -> Response {
    let fields = FormFields(pairs);
    if let Some(refused) = signed_in.refuses_csrf(fields.csrf()) {
        return refused;
    }
    let created = match new_user_request(&fields) {
        Ok(request) => users::create(&state, &signed_in.caller(), request).await,
        Err(error) => Err(error),
    };
    match created {
        Ok(user) => see_other(&format!("/settings/users/{}?done=created", user.id)),
        Err(error) if problem_status(&error).is_client_error() => {
            let form = NewUserForm::as_sent(&fields);
            list(&state, &signed_in, Some(&form), Some(&error)).await
        }
        Err(error) => api_error_page(error),
    }
}

/// What a change on the user's page came to, for its notice.
fn done_notice(done: &str) -> Option<&'static str> {
    match done {
        "created" => {
            Some("Created. Set their console password below, or give them a key over the API.")
        }
        "role" => Some("Their role is changed."),
        "deactivated" => Some("Deactivated: their keys are revoked and they cannot sign in."),
        "reactivated" => Some("Reactivated, without keys: make them new ones."),
        "password" => Some("Their console password is set; their sessions ended."),
        "unions" => Some("What they reach is changed, and their keys with it."),
        _ => None,
    }
}

fn union_names(user: &User, unions: &[TenantUnion]) -> String {
    match user.tenant_scope.union_ids() {
        None => "every tenant union".to_string(),
        Some(ids) => ids
            .iter()
            .map(|id| {
                unions
                    .iter()
                    .find(|union| union.id == *id)
                    .map_or_else(|| format!("union {id}"), |union| union.display_name.clone())
            })
            .collect::<Vec<_>>()
            .join(", "),
    }
}

async fn show(
    state: &AppState,
    signed_in: &SignedIn,
    user_id: i64,
    done: Option<&str>,
    error: Option<&ApiError>,
) -> Response {
    let read = async {
        let store = state.store()?;
        Ok::<_, ApiError>((
            store.get_user(user_id).await?,
            store.list_tenant_unions().await?,
        ))
    }
    .await;
    let (user, unions) = match read {
        Ok(read) => read,
        Err(error) => return api_error_page(error),
    };
    let action = format!("/settings/users/{}", user.id);
    let body = html! {
        p.crumbs { a href="/settings/users" { "Users and keys" } " / #" (user.id) }
        h2 #user-title { (user.email) }
        @if let Some(notice) = done.and_then(done_notice) { p.notice #user-done { (notice) } }
        @if let Some(error) = error { (problem(error)) }
        dl.facts #user-facts {
            dt { "Name" } dd { (user.first_name) " " (user.last_name) }
            dt { "Role" } dd #user-role-now { (user.role.as_str()) }
            dt { "Reaches" } dd { (union_names(&user, &unions)) }
            dt { "Active" } dd #user-active-now { (if user.is_active { "yes" } else { "no" }) }
            dt { "Since" } dd { (time(&user.created_at)) }
        }
        h3 { "Role" }
        form #role-form method="post" action=(action) {
            input type="hidden" name="csrf" value=(signed_in.csrf());
            label { "Role" select #role name="role" { (role_options(user.role.as_str())) } }
            button #change-role type="submit" { "Change the role" }
        }
        h3 { "Reaches" }
        form #unions-form method="post" action=(format!("{action}/unions")) {
            input type="hidden" name="csrf" value=(signed_in.csrf());
            label { "Tenant unions (choose several with Ctrl or ⌘); their keys are narrowed at once"
                (unions_choice("user-unions-now", &unions, |option| reaches(&user, option)))
            }
            button #change-unions type="submit" { "Change what they reach" }
        }
        h3 { "Access" }
        form #active-form method="post" action=(action) {
            input type="hidden" name="csrf" value=(signed_in.csrf());
            @if user.is_active {
                input type="hidden" name="is_active" value="false";
                button #deactivate type="submit" { "Deactivate (revokes their keys)" }
            } @else {
                input type="hidden" name="is_active" value="true";
                button #reactivate type="submit" { "Reactivate" }
            }
        }
        h3 { "Console password" }
        form #password-form method="post" action=(format!("{action}/password")) {
            input type="hidden" name="csrf" value=(signed_in.csrf());
            label { "New password (at least 12 characters)" input #user-password type="password" name="password" autocomplete="new-password"; }
            label.check { input #must-change type="checkbox" name="must_change" checked; "They must choose their own at their next sign-in" }
            button #set-password type="submit" { "Set the password" }
        }
    };
    let status = error.map_or(StatusCode::OK, problem_status);
    page(signed_in, "User", status, body)
}

/// What a form of a user's page answers: back to the page with the notice of `done`, or
/// the page again with the API's message when the change was refused as bad input.
async fn answer_change(
    state: &AppState,
    signed_in: &SignedIn,
    user_id: i64,
    done: &str,
    changed: Result<(), ApiError>,
) -> Response {
    match changed {
        Ok(()) => see_other(&format!("/settings/users/{user_id}?done={done}")),
        Err(error) if problem_status(&error).is_client_error() => {
            show(state, signed_in, user_id, None, Some(&error)).await
        }
        Err(error) => api_error_page(error),
    }
}

fn no_such_user() -> ApiError {
    ApiError::not_found("there is no such user")
}

pub(crate) async fn user_page(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
    Path(raw_id): Path<String>,
    Query(done): Query<Done>,
) -> Response {
    let Some(user_id) = positive_id(&raw_id) else {
        return api_error_page(no_such_user());
    };
    show(&state, &signed_in, user_id, done.done.as_deref(), None).await
}

pub(crate) async fn user_change(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
    Path(raw_id): Path<String>,
    ConsoleForm(form): ConsoleForm<ChangeForm>,
) -> Response {
    if let Some(refused) = signed_in.refuses_csrf(&form.csrf) {
        return refused;
    }
    let Some(user_id) = positive_id(&raw_id) else {
        return api_error_page(no_such_user());
    };
    let changed = match is_active_of(form.is_active.as_deref()) {
        Ok(is_active) => {
            let request = UpdateUserRequest {
                role: form.role.clone(),
                first_name: None,
                last_name: None,
                is_active,
                tenant_union_ids: None,
            };
            users::update(&state, &signed_in.caller(), user_id, request).await
        }
        Err(error) => Err(error),
    };
    let done = match (&form.role, form.is_active.as_deref()) {
        (Some(_), _) => "role",
        (None, Some("true")) => "reactivated",
        (None, _) => "deactivated",
    };
    answer_change(&state, &signed_in, user_id, done, changed.map(drop)).await
}

pub(crate) async fn user_password(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
    Path(raw_id): Path<String>,
    ConsoleForm(form): ConsoleForm<PasswordForm>,
) -> Response {
    if let Some(refused) = signed_in.refuses_csrf(&form.csrf) {
        return refused;
    }
    let Some(user_id) = positive_id(&raw_id) else {
        return api_error_page(no_such_user());
    };
    let set = match must_change_of(form.must_change.as_deref()) {
        Ok(must_change) => {
            let request = SetPasswordRequest {
                password: Some(form.password),
                must_change: Some(must_change),
            };
            users::set_password_of(&state, &signed_in.caller(), user_id, request).await
        }
        Err(error) => Err(error),
    };
    answer_change(&state, &signed_in, user_id, "password", set).await
}

/// The unions form of a user's page: "every tenant union" alone, or one or more unions
/// (the API's `tenant_union_ids`, null for every union).
pub(crate) async fn user_unions(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
    Path(raw_id): Path<String>,
    ConsoleForm(pairs): ConsoleForm<Vec<(String, String)>>,
) -> Response {
    let fields = FormFields(pairs);
    if let Some(refused) = signed_in.refuses_csrf(fields.csrf()) {
        return refused;
    }
    let Some(user_id) = positive_id(&raw_id) else {
        return api_error_page(no_such_user());
    };
    let chosen = fields
        .only(&["csrf", "tenant_union_ids"])
        .and_then(|()| unions_chosen(&fields));
    let changed = match chosen {
        Ok(tenant_union_ids) => {
            let request = UpdateUserRequest {
                role: None,
                first_name: None,
                last_name: None,
                is_active: None,
                tenant_union_ids: Some(tenant_union_ids),
            };
            users::update(&state, &signed_in.caller(), user_id, request).await
        }
        Err(error) => Err(error),
    };
    answer_change(&state, &signed_in, user_id, "unions", changed.map(drop)).await
}
