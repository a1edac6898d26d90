//! Tenant unions in the settings: the unions the caller reaches, a form to create one,
//! and each union's page to rename it and edit its members (the tenant ids and
//! integration keys its `lookup_dict` lists; whatever else an operator keeps there is
//! left as it is). Creating and changing are the API's `routes::tenants::create` and
//! `::update`, which need an admin bound to no union; an admin bound to unions sees
//! theirs, without the forms, as the API lists them.
//!
//! Deleting a union is not offered: the API has no way to (`routes/tenants.rs`), and a
//! union is referred to by its investigations, users, keys, memory items and the kept
//! counts, so a delete needs the store's own rule first.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sleuth_domain::Role;
use sleuth_store::TenantUnion;

use super::{
    SignedInAdmin, SignedInScopedAdmin, json_text, page, positive_id, problem, problem_status,
    see_other,
};
use crate::console::form::ConsoleForm;
use crate::console::pages::{api_error_page, time};
use crate::console::session::SignedIn;
use crate::error::ApiError;
use crate::routes::tenants::{self, TenantUnionRequest};
use crate::state::AppState;

/// The members a union's lookup lists, each kind under its own key.
const TENANT_IDS: &str = "tenant_ids";
const INTEGRATION_KEYS: &str = "tenant_integration_keys";

/// The form as the page sends it: every field, always. One missing would read as "no
/// members" and empty the union's list, so it is refused (`ConsoleForm`).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct UnionForm {
    #[serde(default)]
    csrf: String,
    display_name: String,
    /// One member a line.
    tenant_ids: String,
    tenant_integration_keys: String,
}

#[derive(Deserialize)]
pub(crate) struct Done {
    saved: Option<String>,
}

/// The lines of a textarea, trimmed, blank ones and repeats left out.
fn members(text: &str) -> Vec<String> {
    let mut members: Vec<String> = Vec::new();
    for line in text.lines().map(str::trim).filter(|line| !line.is_empty()) {
        if !members.iter().any(|member| member == line) {
            members.push(line.to_string());
        }
    }
    members
}

/// The lookup with the form's members in place of the union's, its other keys kept.
fn lookup_of(form: &UnionForm, current: Option<&Map<String, Value>>) -> Map<String, Value> {
    let mut lookup = current.cloned().unwrap_or_default();
    for (key, text) in [
        (TENANT_IDS, &form.tenant_ids),
        (INTEGRATION_KEYS, &form.tenant_integration_keys),
    ] {
        let listed = members(text);
        if listed.is_empty() && !lookup.contains_key(key) {
            continue;
        }
        lookup.insert(key.to_string(), json!(listed));
    }
    lookup
}

/// A lookup's members of one kind, a line each, for the form.
fn member_lines(lookup: &Map<String, Value>, key: &str) -> String {
    lookup
        .get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The lookup's keys other than the members, as JSON, when there are any.
fn other_keys(lookup: &Map<String, Value>) -> Option<String> {
    let others: Map<String, Value> = lookup
        .iter()
        .filter(|(key, _)| key.as_str() != TENANT_IDS && key.as_str() != INTEGRATION_KEYS)
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    (!others.is_empty()).then(|| json_text(&Value::Object(others)))
}

fn fields(signed_in: &SignedIn, form: &UnionForm, action: &str, button: Markup) -> Markup {
    html! {
        form #union-form method="post" action=(action) {
            input type="hidden" name="csrf" value=(signed_in.csrf());
            label { "Name" input #union-name type="text" name="display_name" required value=(form.display_name); }
            label { "Tenant ids (one a line): alerts naming one join the union"
                textarea #union-tenants.code name="tenant_ids" rows="4" spellcheck="false" { (form.tenant_ids) }
            }
            label { "Integration keys (one a line)"
                textarea #union-keys.code name="tenant_integration_keys" rows="3" spellcheck="false" { (form.tenant_integration_keys) }
            }
            (button)
        }
    }
}

async fn list(
    state: &AppState,
    signed_in: &SignedIn,
    form: Option<&UnionForm>,
    error: Option<&ApiError>,
) -> Response {
    let caller = signed_in.caller();
    let scope = caller.scope();
    let may_change = caller.require(Role::Admin).is_ok();
    let listed = match state.store() {
        Ok(store) => store.list_tenant_unions().await.map_err(ApiError::from),
        Err(error) => Err(error),
    };
    let unions: Vec<TenantUnion> = match listed {
        Ok(unions) => unions
            .into_iter()
            .filter(|union| scope.allows(union.id))
            .collect(),
        Err(error) => return api_error_page(error),
    };
    let empty = UnionForm::default();
    let body = html! {
        p { "Which tenants belong together (the API's " code { "/app/api/v1/tenant-unions" } "). A user or key bound to unions sees only their alerts." }
        table.settings #unions-table {
            thead { tr { th { "#" } th { "Name" } th { "Tenant ids" } th { "Integration keys" } th { "Changed by" } th { "Updated" } } }
            tbody {
                @for union in &unions {
                    tr {
                        td { (union.id) }
                        td {
                            @if may_change { a href=(format!("/settings/unions/{}", union.id)) { (union.display_name) } }
                            @else { (union.display_name) }
                        }
                        td { pre.inline-json { (member_lines(&union.lookup_dict, TENANT_IDS)) } }
                        td { pre.inline-json { (member_lines(&union.lookup_dict, INTEGRATION_KEYS)) } }
                        td { (union.last_modified_by.as_ref().map_or("—", |user| user.email.as_str())) }
                        td { (time(&union.updated_at)) }
                    }
                }
            }
        }
        @if may_change {
            h2 { "New tenant union" }
            @if let Some(error) = error { (problem(error)) }
            (fields(signed_in, form.unwrap_or(&empty), "/settings/unions", html! { button #create-union type="submit" { "Create" } }))
        } @else {
            p.meta #unions-scoped { "You reach " (scope.to_string()) ". Creating and changing unions needs an admin bound to no tenant union." }
        }
    };
    let status = error.map_or(StatusCode::OK, problem_status);
    page(signed_in, "Tenant unions", status, body)
}

pub(crate) async fn unions(
    State(state): State<AppState>,
    SignedInScopedAdmin(signed_in): SignedInScopedAdmin,
) -> Response {
    list(&state, &signed_in, None, None).await
}

pub(crate) async fn union_create(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
    ConsoleForm(form): ConsoleForm<UnionForm>,
) -> Response {
    if let Some(refused) = signed_in.refuses_csrf(&form.csrf) {
        return refused;
    }
    let request = TenantUnionRequest {
        display_name: Some(form.display_name.clone()),
        lookup_dict: Some(lookup_of(&form, None)),
    };
    match tenants::create(&state, &signed_in.caller(), request).await {
        Ok(union) => see_other(&format!("/settings/unions/{}?saved=1", union.id)),
        Err(error) if problem_status(&error).is_client_error() => {
            list(&state, &signed_in, Some(&form), Some(&error)).await
        }
        Err(error) => api_error_page(error),
    }
}

async fn show(
    state: &AppState,
    signed_in: &SignedIn,
    union_id: i64,
    saved: bool,
    form: Option<&UnionForm>,
    error: Option<&ApiError>,
) -> Response {
    let read = match state.store() {
        Ok(store) => store
            .get_tenant_union(union_id)
            .await
            .map_err(ApiError::from),
        Err(error) => Err(error),
    };
    let union = match read {
        Ok(union) => union,
        Err(error) => return api_error_page(error),
    };
    let current = UnionForm {
        csrf: String::new(),
        display_name: union.display_name.clone(),
        tenant_ids: member_lines(&union.lookup_dict, TENANT_IDS),
        tenant_integration_keys: member_lines(&union.lookup_dict, INTEGRATION_KEYS),
    };
    let body = html! {
        p.crumbs { a href="/settings/unions" { "Tenant unions" } " / #" (union.id) }
        h2 #union-title { (union.display_name) }
        @if saved { p.notice #union-saved { "Saved." } }
        @if let Some(error) = error { (problem(error)) }
        (fields(signed_in, form.unwrap_or(&current), &format!("/settings/unions/{}", union.id), html! { button #save-union type="submit" { "Save" } }))
        @if let Some(others) = other_keys(&union.lookup_dict) {
            p.meta { "Kept as they are in its lookup:" }
            pre.inline-json #union-other-keys { (others) }
        }
        p.meta { "Changed by " (union.last_modified_by.as_ref().map_or("—", |user| user.email.as_str())) ", " (time(&union.updated_at)) "." }
    };
    let status = error.map_or(StatusCode::OK, problem_status);
    page(signed_in, "Tenant union", status, body)
}

pub(crate) async fn union_page(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
    Path(raw_id): Path<String>,
    Query(done): Query<Done>,
) -> Response {
    let Some(union_id) = positive_id(&raw_id) else {
        return api_error_page(ApiError::not_found("there is no such tenant union"));
    };
    show(
        &state,
        &signed_in,
        union_id,
        done.saved.is_some(),
        None,
        None,
    )
    .await
}

pub(crate) async fn union_save(
    State(state): State<AppState>,
    SignedInAdmin(signed_in): SignedInAdmin,
    Path(raw_id): Path<String>,
    ConsoleForm(form): ConsoleForm<UnionForm>,
) -> Response {
    if let Some(refused) = signed_in.refuses_csrf(&form.csrf) {
        return refused;
    }
    let Some(union_id) = positive_id(&raw_id) else {
        return api_error_page(ApiError::not_found("there is no such tenant union"));
    };
    let current = match state.store() {
        Ok(store) => store
            .get_tenant_union(union_id)
            .await
            .map_err(ApiError::from),
        Err(error) => Err(error),
    };
    let current = match current {
        Ok(current) => current,
        Err(error) => return api_error_page(error),
    };
    let request = TenantUnionRequest {
        display_name: Some(form.display_name.clone()),
        lookup_dict: Some(lookup_of(&form, Some(&current.lookup_dict))),
    };
    match tenants::update(&state, &signed_in.caller(), union_id, request).await {
        Ok(union) => see_other(&format!("/settings/unions/{}?saved=1", union.id)),
        Err(error) if problem_status(&error).is_client_error() => {
            show(
                &state,
                &signed_in,
                union_id,
                false,
                Some(&form),
                Some(&error),
            )
            .await
        }
        Err(error) => api_error_page(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(tenant_ids: &str, keys: &str) -> UnionForm {
        UnionForm {
            tenant_ids: tenant_ids.into(),
            tenant_integration_keys: keys.into(),
            ..UnionForm::default()
        }
    }

    #[test]
    fn members_are_lines_trimmed_without_blanks_or_repeats() {
        assert_eq!(
            members(" acme \n\n globex\nacme\r\n"),
            vec!["acme", "globex"]
        );
        assert!(members("\n  \n").is_empty());
    }

    #[test]
    fn an_edit_replaces_the_members_and_keeps_the_other_keys() {
        let current =
            json!({"tenant_ids": ["old"], "region": "eu", "tenant_integration_keys": ["k"]});
        let current = current.as_object().unwrap();
        let lookup = lookup_of(&form("new\nnewer", ""), Some(current));
        assert_eq!(
            Value::Object(lookup),
            json!({"tenant_ids": ["new", "newer"], "region": "eu", "tenant_integration_keys": []})
        );
        // A kind never listed is not added empty.
        assert_eq!(
            Value::Object(lookup_of(&form("a", ""), None)),
            json!({"tenant_ids": ["a"]})
        );
    }
}
