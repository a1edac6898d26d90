//! Context memory in the settings: the items the caller's tenant unions reach, a form to
//! add one (its text, where it applies, and one structured hint), and a button to remove
//! each. Adding and removing are the API's `routes::context_memory::create` and
//! `::delete`, so an admin bound to tenant unions adds only items scoped to one of them,
//! exactly as their key would.

use axum::Extension;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Value, json};
use sleuth_domain::{EntityKind, MemoryVerdict};
use sleuth_store::{MemoryItemRecord, MemoryQuery, TenantUnion};

use super::{
    ROWS_SHOWN, SignedInScopedAdmin, page, positive_id, problem, problem_status, see_other,
};
use crate::console::form::ConsoleForm;
use crate::console::pages::{api_error_page, time};
use crate::console::session::SignedIn;
use crate::error::ApiError;
use crate::routes::context_memory::{self, ContextMemoryRequest};
use crate::state::AppState;

#[derive(Deserialize)]
pub(crate) struct Done {
    added: Option<String>,
    removed: Option<String>,
}

/// The add form as sent; every field a string, read by the API's rules. The page always
/// sends every field (an empty one is a choice of "none"), so one missing is refused.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct MemoryForm {
    #[serde(default)]
    csrf: String,
    text: String,
    tenant_union_id: String,
    tenant_id: String,
    tenant_label: String,
    hint_type: String,
    hint_value: String,
    hint_verdict: String,
    hint_note: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CsrfOnly {
    #[serde(default)]
    csrf: String,
}

fn optional(value: &str) -> Option<Option<String>> {
    let value = value.trim();
    (!value.is_empty()).then(|| Some(value.to_string()))
}

/// The form as the API's request: an empty field is a field not sent.
fn request_of(form: &MemoryForm) -> Result<ContextMemoryRequest, ApiError> {
    let tenant_union_id = match form.tenant_union_id.trim() {
        "" => None,
        raw => Some(Some(raw.parse::<i64>().map_err(|_| {
            ApiError::invalid_field("tenant_union_id", "must be a tenant union id")
        })?)),
    };
    let hint_given = !(form.hint_type.trim().is_empty() && form.hint_value.trim().is_empty());
    let or_null = |text: &str| match text.trim() {
        "" => Value::Null,
        text => json!(text),
    };
    let hints = hint_given.then(|| {
        let (verdict, note) = (or_null(&form.hint_verdict), or_null(&form.hint_note));
        Some(json!({
            "entity": {"type": form.hint_type.trim(), "value": form.hint_value},
            "verdict": verdict,
            "note": note,
        }))
    });
    Ok(ContextMemoryRequest {
        text: Some(form.text.clone()),
        tenant_union_id,
        tenant_id: optional(&form.tenant_id),
        tenant_label: optional(&form.tenant_label),
        hints,
    })
}

async fn show(
    state: &AppState,
    signed_in: &SignedIn,
    done: Option<&Done>,
    form: Option<&MemoryForm>,
    error: Option<&ApiError>,
) -> Response {
    let caller = signed_in.caller();
    let scope = caller.scope();
    let read = async {
        let store = state.store()?;
        let items = store
            .list_memory_items(&MemoryQuery {
                scope: scope.clone(),
                limit: ROWS_SHOWN,
                ..MemoryQuery::default()
            })
            .await?;
        let unions: Vec<TenantUnion> = store
            .list_tenant_unions()
            .await?
            .into_iter()
            .filter(|union| scope.allows(union.id))
            .collect();
        Ok::<_, ApiError>((items, unions))
    }
    .await;
    let (items, unions) = match read {
        Ok(read) => read,
        Err(error) => return api_error_page(error),
    };
    let empty = MemoryForm::default();
    let form = form.unwrap_or(&empty);
    let union_name = |id: i64| {
        unions
            .iter()
            .find(|union| union.id == id)
            .map_or_else(|| format!("union {id}"), |union| union.display_name.clone())
    };
    let body = html! {
        p { "What the operator told Sleuth in plain words; investigations cite the items naming their entities (the API's " code { "/app/api/v1/context-memory" } ")." }
        @if let Some(done) = done {
            @if let Some(id) = &done.added { p.notice #memory-saved { "Added item " (id) "." } }
            @if let Some(id) = &done.removed { p.notice #memory-saved { "Removed item " (id) "." } }
        }
        p.meta { (items.total) " items; the newest " (ROWS_SHOWN) " shown." }
        table.settings #memory-table {
            thead { tr { th { "#" } th { "Text" } th { "Applies to" } th { "Entities" } th { "Updated" } th {} } }
            tbody {
                @for item in &items.items { (row(signed_in, item, &union_name)) }
            }
        }
        h2 { "Add an item" }
        @if let Some(error) = error { (problem(error)) }
        form #memory-form method="post" action="/settings/memory" {
            input type="hidden" name="csrf" value=(signed_in.csrf());
            label { "What Sleuth should know (plain words; the entities named are found in them)"
                textarea #memory-text name="text" rows="3" { (form.text) }
            }
            label { "Applies to"
                select #memory-union name="tenant_union_id" {
                    @if scope.is_all() { option value="" { "every alert" } }
                    @for union in &unions {
                        @let id = union.id.to_string();
                        option value=(id) selected[form.tenant_union_id == id] { "tenant union: " (union.display_name) }
                    }
                }
            }
            label { "Only the tenant id (optional)" input #memory-tenant type="text" name="tenant_id" value=(form.tenant_id); }
            label { "Its label (optional)" input #memory-tenant-label type="text" name="tenant_label" value=(form.tenant_label); }
            fieldset { legend { "A hint: an entity and what it is (optional)" }
                label { "Entity type"
                    select #hint-type name="hint_type" {
                        option value="" { "none" }
                        @for kind in EntityKind::ALL {
                            option value=(kind.as_str()) selected[form.hint_type == kind.as_str()] { (kind.as_str()) }
                        }
                    }
                }
                label { "Value" input #hint-value type="text" name="hint_value" value=(form.hint_value); }
                label { "Verdict"
                    select #hint-verdict name="hint_verdict" {
                        option value="" { "none" }
                        option value="benign" selected[form.hint_verdict == "benign"] { "benign" }
                        option value="malicious" selected[form.hint_verdict == "malicious"] { "malicious" }
                    }
                }
                label { "Note" input #hint-note type="text" name="hint_note" value=(form.hint_note); }
            }
            button #add-memory type="submit" { "Add" }
        }
    };
    let status = error.map_or(StatusCode::OK, problem_status);
    page(signed_in, "Context memory", status, body)
}

fn row(
    signed_in: &SignedIn,
    item: &MemoryItemRecord,
    union_name: &dyn Fn(i64) -> String,
) -> Markup {
    html! {
        tr data-item=(item.id) {
            td { (item.id) }
            td.text { (item.text) }
            td {
                @if item.scope.is_global() { "every alert" }
                @if let Some(union) = item.scope.tenant_union_id { "tenant union: " (union_name(union)) " " }
                @if let Some(tenant) = &item.scope.tenant_id {
                    "tenant " (tenant)
                    @if let Some(label) = &item.scope.tenant_label { " (" (label) ")" }
                }
            }
            td {
                @for hint in &item.hints {
                    span.kind { (hint.entity.kind.as_str()) } " " (hint.entity.value)
                    @if let Some(verdict) = hint.verdict {
                        " (" (match verdict { MemoryVerdict::Benign => "benign", MemoryVerdict::Malicious => "malicious" }) ")"
                    }
                    @if let Some(note) = &hint.note { " — " (note) }
                    br;
                }
                @for entity in &item.entities { span.kind { (entity.kind.as_str()) } " " (entity.value) br; }
            }
            td { (time(&item.updated_at)) }
            td {
                form.inline method="post" action=(format!("/settings/memory/{}/delete", item.id)) {
                    input type="hidden" name="csrf" value=(signed_in.csrf());
                    button.remove id=(format!("remove-memory-{}", item.id)) type="submit" { "Remove" }
                }
            }
        }
    }
}

pub(crate) async fn memory_page(
    State(state): State<AppState>,
    SignedInScopedAdmin(signed_in): SignedInScopedAdmin,
    Query(done): Query<Done>,
) -> Response {
    show(&state, &signed_in, Some(&done), None, None).await
}

pub(crate) async fn memory_add(
    State(state): State<AppState>,
    SignedInScopedAdmin(signed_in): SignedInScopedAdmin,
    ConsoleForm(form): ConsoleForm<MemoryForm>,
) -> Response {
    if let Some(refused) = signed_in.refuses_csrf(&form.csrf) {
        return refused;
    }
    let created = match request_of(&form) {
        Ok(request) => context_memory::create(&state, &signed_in.caller(), request).await,
        Err(error) => Err(error),
    };
    match created {
        // The audit entry carries what the API's does: the item's id, scope and size.
        Ok((item, note)) => (
            Extension(note),
            see_other(&format!("/settings/memory?added={}", item.id)),
        )
            .into_response(),
        Err(error) if problem_status(&error).is_client_error() => {
            show(&state, &signed_in, None, Some(&form), Some(&error)).await
        }
        Err(error) => api_error_page(error),
    }
}

pub(crate) async fn memory_remove(
    State(state): State<AppState>,
    SignedInScopedAdmin(signed_in): SignedInScopedAdmin,
    axum::extract::Path(raw_id): axum::extract::Path<String>,
    ConsoleForm(form): ConsoleForm<CsrfOnly>,
) -> Response {
    if let Some(refused) = signed_in.refuses_csrf(&form.csrf) {
        return refused;
    }
    let removed = match positive_id(&raw_id) {
        Some(item_id) => context_memory::delete(&state, &signed_in.caller(), item_id)
            .await
            .map(|()| item_id),
        None => Err(ApiError::not_found("there is no such context memory item")),
    };
    match removed {
        Ok(item_id) => see_other(&format!("/settings/memory?removed={item_id}")),
        Err(error) if problem_status(&error).is_client_error() => {
            show(&state, &signed_in, None, None, Some(&error)).await
        }
        Err(error) => api_error_page(error),
    }
}
