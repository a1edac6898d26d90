//! Context memory (DESIGN.md §1's paths, and our list): the operator's knowledge in plain
//! words — "198.51.100.9 is the Frankfurt VPN egress" — scoped to every alert, a tenant
//! union or a tenant id. The entities named in the text are extracted
//! (`sleuth_parsers::plain_words`), structured hints name entities with a verdict, and an
//! investigation of an alert that names one of them cites the item as evidence. Writing
//! takes a member; reading, any role. A member changes and deletes only the items they
//! wrote (like notes); an admin, any item. A caller bound to tenant unions reads and writes
//! only items of those unions: another union's item, a global one and one scoped by a
//! tenant id alone answer as missing, and creating one of those is refused (403).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sleuth_domain::{EntityKind, MemoryVerdict, Role};
use sleuth_normalize::entities::normalize;
use sleuth_store::{MemoryHint, MemoryItemRecord, MemoryQuery, MemoryScope, NewMemoryItem};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::audit::AuditNote;
use crate::auth::Caller;
use crate::dto::context_memory::{
    ContextMemoryCreatedDto, ContextMemoryHintDto, ContextMemoryItemDto, ContextMemoryPageDto,
};
use crate::error::{ApiError, ApiResult, ErrorBody, ErrorCode};
use crate::extract::{JsonText, QueryPairs, parse_json, path_id, query_bool, query_integer};
use crate::list_query::{page_parameters, search_parameter};
use crate::state::AppState;

/// The longest item text, in characters.
pub const MAX_TEXT_CHARS: usize = 5000;
/// The longest hint note, in characters.
pub const MAX_NOTE_CHARS: usize = 1000;
/// The most hints one item carries.
pub const MAX_HINTS: usize = 100;
/// The longest tenant id or label, in characters.
pub const MAX_TENANT_CHARS: usize = 255;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_item))
        .routes(routes!(update_item))
        .routes(routes!(delete_item))
        .routes(routes!(list_items))
}

/// An item to create, or the fields of one to change (an update keeps what it leaves
/// out, and clears what it sends as null).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextMemoryRequest {
    /// The operator's words, 1 to 5000 characters. Required on create.
    pub text: Option<String>,
    /// Only alerts of this tenant union (null or absent: any union).
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(value_type = Option<i64>)]
    pub tenant_union_id: Option<Option<i64>>,
    /// Only alerts naming this tenant id, 1 to 255 characters (null or absent: any tenant).
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(value_type = Option<String>)]
    pub tenant_id: Option<Option<String>>,
    /// A label for the tenant id (shown, never matched); needs `tenant_id`.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(value_type = Option<String>)]
    pub tenant_label: Option<Option<String>>,
    /// A hint `{"entity": {"type", "value"}, "verdict": "benign"|"malicious", "note"}` or
    /// an array of at most 100 of them.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(value_type = Option<Vec<ContextMemoryHintDto>>)]
    pub hints: Option<Option<Value>>,
}

impl ContextMemoryRequest {
    fn is_empty(&self) -> bool {
        self.text.is_none()
            && self.tenant_union_id.is_none()
            && self.tenant_id.is_none()
            && self.tenant_label.is_none()
            && self.hints.is_none()
    }
}

fn has_control_characters(text: &str, allow_line_breaks: bool) -> bool {
    text.chars().any(|character| {
        character.is_control() && !(allow_line_breaks && matches!(character, '\n' | '\r' | '\t'))
    })
}

fn validate_text(text: &str) -> ApiResult<String> {
    let text = text.trim();
    let length = text.chars().count();
    if length == 0 || length > MAX_TEXT_CHARS {
        return Err(ApiError::invalid_field(
            "text",
            format!("must be 1 to {MAX_TEXT_CHARS} characters (got {length})"),
        ));
    }
    if has_control_characters(text, true) {
        return Err(ApiError::invalid_field(
            "text",
            "must not contain control characters other than line breaks and tabs",
        ));
    }
    Ok(text.to_string())
}

fn validate_tenant_text(field: &str, value: &str) -> ApiResult<String> {
    let value = value.trim();
    let length = value.chars().count();
    if length == 0 || length > MAX_TENANT_CHARS || has_control_characters(value, false) {
        return Err(ApiError::invalid_field(
            field,
            format!("must be 1 to {MAX_TENANT_CHARS} characters, without control characters"),
        ));
    }
    Ok(value.to_string())
}

fn hint_error(index: usize, field: &str, message: impl Into<String>) -> ApiError {
    let name = if field.is_empty() {
        format!("hints[{index}]")
    } else {
        format!("hints[{index}].{field}")
    };
    ApiError::invalid_field(&name, message)
}

fn clip(value: &str) -> String {
    value.chars().take(60).collect()
}

/// One hint, or an array of them, into validated hints with normalised entities.
fn parse_hints(value: &Value) -> ApiResult<Vec<MemoryHint>> {
    let items: Vec<&Value> = match value {
        Value::Null => Vec::new(),
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![value],
        _ => {
            return Err(ApiError::invalid_field(
                "hints",
                "must be a hint object or an array of hint objects",
            ));
        }
    };
    if items.len() > MAX_HINTS {
        return Err(ApiError::invalid_field(
            "hints",
            format!("at most {MAX_HINTS} hints"),
        ));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| parse_hint(index, item))
        .collect()
}

fn parse_hint(index: usize, item: &Value) -> ApiResult<MemoryHint> {
    let Value::Object(fields) = item else {
        return Err(hint_error(
            index,
            "",
            "must be an object: {\"entity\": {\"type\", \"value\"}, \"verdict\", \"note\"}",
        ));
    };
    if let Some(unknown) = fields
        .keys()
        .find(|key| !matches!(key.as_str(), "entity" | "verdict" | "note"))
    {
        return Err(hint_error(
            index,
            "",
            format!(
                "unknown field '{}'; a hint has entity, verdict and note",
                clip(unknown)
            ),
        ));
    }
    let entity = fields
        .get("entity")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            hint_error(
                index,
                "entity",
                "is required: {\"type\": \"ip\", \"value\": \"198.51.100.9\"}",
            )
        })?;
    let kind_name = entity
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| hint_error(index, "entity.type", "is required and must be a string"))?;
    let kind = EntityKind::parse(kind_name).ok_or_else(|| {
        hint_error(
            index,
            "entity.type",
            format!(
                "'{}' is not an entity type; allowed: {}",
                clip(kind_name),
                EntityKind::ALL
                    .iter()
                    .map(|kind| kind.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    let raw_value = entity
        .get("value")
        .and_then(Value::as_str)
        .ok_or_else(|| hint_error(index, "entity.value", "is required and must be a string"))?;
    let value = normalize(kind, raw_value).ok_or_else(|| {
        hint_error(
            index,
            "entity.value",
            format!("'{}' is not a valid {kind}", clip(raw_value)),
        )
    })?;
    let verdict = match fields.get("verdict") {
        None | Some(Value::Null) => None,
        Some(Value::String(verdict)) if verdict == "benign" => Some(MemoryVerdict::Benign),
        Some(Value::String(verdict)) if verdict == "malicious" => Some(MemoryVerdict::Malicious),
        Some(_) => {
            return Err(hint_error(
                index,
                "verdict",
                "must be benign, malicious or null",
            ));
        }
    };
    let note = match fields.get("note") {
        None | Some(Value::Null) => None,
        Some(Value::String(note)) => {
            let note = note.trim();
            if note.chars().count() > MAX_NOTE_CHARS || has_control_characters(note, true) {
                return Err(hint_error(
                    index,
                    "note",
                    format!(
                        "must be at most {MAX_NOTE_CHARS} characters, without control characters"
                    ),
                ));
            }
            (!note.is_empty()).then(|| note.to_string())
        }
        Some(_) => return Err(hint_error(index, "note", "must be a string or null")),
    };
    Ok(MemoryHint {
        entity: sleuth_domain::Entity::new(kind, value),
        verdict,
        note,
    })
}

/// The body as a request. Only a JSON object is one: serde would also read a struct from
/// an array (`["text"]`), which is not a shape this endpoint documents.
fn parse_request(body: &[u8]) -> ApiResult<ContextMemoryRequest> {
    let value: Value = parse_json(body)?;
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "the body must be a JSON object: {\"text\": ..., \"hints\": ...}",
        ));
    }
    serde_json::from_value(value).map_err(|error| {
        ApiError::bad_request(format!(
            "the JSON does not have the expected shape: {error}"
        ))
    })
}

/// The item as it will be stored: the request applied over the current item (none on
/// create), validated whole.
fn build_item(
    request: ContextMemoryRequest,
    current: Option<&MemoryItemRecord>,
    author_id: i64,
) -> ApiResult<NewMemoryItem> {
    let text = match (&request.text, current) {
        (Some(text), _) => validate_text(text)?,
        (None, Some(current)) => current.text.clone(),
        (None, None) => return Err(ApiError::invalid_field("text", "is required")),
    };
    let mut scope = current
        .map(|current| current.scope.clone())
        .unwrap_or_default();
    if let Some(tenant_union_id) = request.tenant_union_id {
        if tenant_union_id.is_some_and(|id| id < 1) {
            return Err(ApiError::invalid_field(
                "tenant_union_id",
                "must be a tenant union id (a positive integer) or null",
            ));
        }
        scope.tenant_union_id = tenant_union_id;
    }
    if let Some(tenant_id) = request.tenant_id {
        scope.tenant_id = tenant_id
            .map(|value| validate_tenant_text("tenant_id", &value))
            .transpose()?;
        if scope.tenant_id.is_none() {
            // A label without its tenant means nothing.
            scope.tenant_label = None;
        }
    }
    if let Some(tenant_label) = request.tenant_label {
        scope.tenant_label = tenant_label
            .map(|value| validate_tenant_text("tenant_label", &value))
            .transpose()?;
    }
    if scope.tenant_label.is_some() && scope.tenant_id.is_none() {
        return Err(ApiError::invalid_field(
            "tenant_label",
            "labels a tenant id: send tenant_id with it",
        ));
    }
    let hints = match request.hints {
        Some(Some(value)) => parse_hints(&value)?,
        Some(None) => Vec::new(),
        None => current
            .map(|current| current.hints.clone())
            .unwrap_or_default(),
    };
    let entities = sleuth_parsers::plain_words::entities_in_plain_words(&text)
        .into_iter()
        .filter(|entity| !hints.iter().any(|hint| &hint.entity == entity))
        .collect();
    Ok(NewMemoryItem {
        text,
        scope,
        hints,
        entities,
        author_id: Some(author_id),
    })
}

/// Create a context memory item (member). Answers 201 with `{"item_id"}`.
#[utoipa::path(post, path = "/app/api/v1/context-memory/create", tag = "context-memory",
    request_body = ContextMemoryRequest,
    responses(
        (status = 201, body = ContextMemoryCreatedDto),
        (status = 400, description = "Bad request - invalid input", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (member or admin)", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn create_item(
    State(state): State<AppState>,
    caller: Caller,
    JsonText(body): JsonText,
) -> ApiResult<(
    StatusCode,
    Extension<AuditNote>,
    Json<ContextMemoryCreatedDto>,
)> {
    caller.require(Role::Member)?;
    let request = parse_request(&body)?;
    let (created, note) = create(&state, &caller, request).await?;
    Ok((
        StatusCode::CREATED,
        Extension(note),
        Json(ContextMemoryCreatedDto {
            item_id: created.id,
        }),
    ))
}

/// Creates an item as `caller` (the route's work, also the console's): validated whole,
/// within the caller's tenant unions. Answers it with the audit note its request's entry
/// carries.
pub(crate) async fn create(
    state: &AppState,
    caller: &Caller,
    request: ContextMemoryRequest,
) -> ApiResult<(MemoryItemRecord, AuditNote)> {
    caller.require(Role::Member)?;
    let item = build_item(request, None, caller.user_id())?;
    require_writable_scope(caller, &item.scope)?;
    let created = state.store()?.create_memory_item(&item, now()).await?;
    concerns(caller, &created.scope);
    let note = AuditNote {
        resource_id: Some(created.id.to_string()),
        detail: audit_detail(&created),
    };
    Ok((created, note))
}

/// Change a context memory item (member): any of its fields; those left out are kept,
/// those sent as null are cleared.
#[utoipa::path(put, path = "/app/api/v1/context-memory/update/{item_id}", tag = "context-memory",
    params(("item_id" = String, Path)),
    request_body = ContextMemoryRequest,
    responses(
        (status = 200, body = ContextMemoryItemDto),
        (status = 400, description = "Bad request - invalid input", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (member or admin)", body = ErrorBody),
        (status = 404, description = "Resource not found", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn update_item(
    State(state): State<AppState>,
    caller: Caller,
    Path(item_id): Path<String>,
    JsonText(body): JsonText,
) -> ApiResult<(Extension<AuditNote>, Json<ContextMemoryItemDto>)> {
    caller.require(Role::Member)?;
    let item_id = path_id(&item_id, "context memory item")?;
    let store = state.store()?;
    let current = visible_item(&caller, store.get_memory_item(item_id).await?)?;
    require_author_or_admin(&caller, &current, "change")?;
    let request = parse_request(&body)?;
    if request.is_empty() {
        return Err(ApiError::bad_request(
            "nothing to change: send any of text, tenant_union_id, tenant_id, tenant_label, hints",
        ));
    }
    let item = build_item(request, Some(&current), caller.user_id())?;
    require_writable_scope(&caller, &item.scope)?;
    let updated = store.update_memory_item(item_id, &item, now()).await?;
    concerns(&caller, &updated.scope);
    let note = AuditNote {
        resource_id: None,
        detail: audit_detail(&updated),
    };
    Ok((Extension(note), Json(ContextMemoryItemDto::from(&updated))))
}

/// Delete a context memory item (member). Answers 200 with no body.
#[utoipa::path(delete, path = "/app/api/v1/context-memory/delete/{item_id}", tag = "context-memory",
    params(("item_id" = String, Path)),
    responses(
        (status = 200, description = "Deleted"),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 403, description = "Access denied (member or admin)", body = ErrorBody),
        (status = 404, description = "Resource not found", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn delete_item(
    State(state): State<AppState>,
    caller: Caller,
    Path(item_id): Path<String>,
) -> ApiResult<StatusCode> {
    caller.require(Role::Member)?;
    let item_id = path_id(&item_id, "context memory item")?;
    delete(&state, &caller, item_id).await?;
    Ok(StatusCode::OK)
}

/// Deletes an item as `caller` (the route's work, also the console's): only one the
/// caller's tenant unions reach (another answers as missing) and the caller wrote, unless
/// an admin.
pub(crate) async fn delete(state: &AppState, caller: &Caller, item_id: i64) -> ApiResult<()> {
    caller.require(Role::Member)?;
    let store = state.store()?;
    let current = visible_item(caller, store.get_memory_item(item_id).await?)?;
    require_author_or_admin(caller, &current, "delete")?;
    concerns(caller, &current.scope);
    store.delete_memory_item(item_id).await?;
    Ok(())
}

/// The list's parameters, for the OpenAPI description.
#[derive(Debug, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // Read by utoipa's derive for the OpenAPI description only.
pub struct ContextMemoryListParameters {
    /// Only items that apply to every alert (no tenant union, no tenant id).
    global: Option<bool>,
    /// Only items scoped to this tenant union.
    tenant_union_id: Option<i64>,
    /// Only items scoped to this tenant id.
    tenant_id: Option<String>,
    /// Free text: every word must appear in the text, the entities or the hints' notes.
    search: Option<String>,
    /// Results per page: default 20, at most 1000 (larger values are clamped).
    limit: Option<i64>,
    /// Results to skip.
    offset: Option<i64>,
}

/// List context memory items, newest first (any role).
#[utoipa::path(get, path = "/app/api/v1/context-memory/list", tag = "context-memory",
    params(ContextMemoryListParameters),
    responses(
        (status = 200, body = ContextMemoryPageDto),
        (status = 400, description = "Bad request - invalid input", body = ErrorBody),
        (status = 401, description = "Unauthorized", body = ErrorBody),
        (status = 500, description = "System error", body = ErrorBody),
        (status = 503, description = "System not ready for requests", body = ErrorBody),
    ),
    security(("api_key" = [])))]
async fn list_items(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<Json<ContextMemoryPageDto>> {
    caller.require(Role::RestrictedReadOnly)?;
    let (limit, offset) = page_parameters(&query)?;
    let tenant_union_id = query_integer(&query, "tenant_union_id")?;
    if tenant_union_id.is_some_and(|id| id < 1) {
        return Err(ApiError::invalid_field(
            "tenant_union_id",
            "must be a positive integer",
        ));
    }
    let tenant_id = query
        .one("tenant_id")
        .map(|value| validate_tenant_text("tenant_id", value))
        .transpose()?;
    let memory_query = MemoryQuery {
        global_only: query_bool(&query, "global")?.unwrap_or(false),
        tenant_union_id,
        tenant_id,
        scope: caller.scope(),
        search: search_parameter(&query)?,
        limit,
        offset,
    };
    let page = state.store()?.list_memory_items(&memory_query).await?;
    Ok(Json(ContextMemoryPageDto {
        count: page.total,
        results: page.items.iter().map(ContextMemoryItemDto::from).collect(),
    }))
}

/// The item, if the caller's tenant unions reach it; as missing otherwise.
fn visible_item(caller: &Caller, item: MemoryItemRecord) -> ApiResult<MemoryItemRecord> {
    let scope = caller.scope();
    let visible = scope.is_all()
        || item
            .scope
            .tenant_union_id
            .is_some_and(|union| scope.allows(union));
    if visible {
        Ok(item)
    } else {
        Err(ApiError::not_found(format!(
            "context memory item {} not found",
            item.id
        )))
    }
}

/// Says which tenant union an item of this scope lies in, for the audit entry of the change.
fn concerns(caller: &Caller, scope: &MemoryScope) {
    if let Some(union) = scope.tenant_union_id {
        caller.concerns_union(union);
    }
}

/// 403 unless a caller bound to tenant unions scopes the item to one of them.
fn require_writable_scope(caller: &Caller, scope: &MemoryScope) -> ApiResult<()> {
    if caller.scope().is_all() {
        return Ok(());
    }
    match scope.tenant_union_id {
        Some(union) => caller.require_union(union),
        None => Err(ApiError::new(
            ErrorCode::AccessDenied,
            format!(
                "your key reaches {}: scope the item to one of them with tenant_union_id",
                caller.scope()
            ),
        )),
    }
}

/// Refuses unless the caller wrote the item or is an admin, as for notes: what an admin
/// (or another member) told Sleuth is not a member's to rewrite.
fn require_author_or_admin(caller: &Caller, item: &MemoryItemRecord, doing: &str) -> ApiResult<()> {
    let author = item.created_by.as_ref();
    if author.is_some_and(|author| author.id == caller.user_id())
        || caller.0.user.role == Role::Admin
    {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::AccessDenied,
        format!(
            "only the item's author ({}) or an admin may {doing} context memory item {}",
            author.map_or("someone else", |author| author.email.as_str()),
            item.id
        ),
    ))
}

fn now() -> sleuth_domain::Timestamp {
    chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 6)
}

/// What the audit log keeps of an item: its scope and size, not its words.
fn audit_detail(item: &MemoryItemRecord) -> Map<String, Value> {
    let detail = json!({
        "tenant_union_id": item.scope.tenant_union_id,
        "tenant_id": item.scope.tenant_id,
        "hints": item.hints.len(),
        "entities": item.entities.len(),
    });
    match detail {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(value: Value) -> ContextMemoryRequest {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn null_clears_and_absence_keeps() {
        let cleared = request(json!({"tenant_id": null}));
        assert_eq!(cleared.tenant_id, Some(None));
        let kept = request(json!({"text": "x"}));
        assert_eq!(kept.tenant_id, None);
        assert!(request(json!({})).is_empty());
    }

    #[test]
    fn hints_may_be_one_or_many_and_are_normalised() {
        let one = parse_hints(
            &json!({"entity": {"type": "ip", "value": " 198.51.100[.]9 "}, "verdict": "benign"}),
        )
        .unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].entity.value, "198.51.100.9");
        assert_eq!(one[0].verdict, Some(MemoryVerdict::Benign));
        let many = parse_hints(&json!([
            {"entity": {"type": "user", "value": "CORP\\Svc-Backup"}, "note": "backup job"},
            {"entity": {"type": "domain", "value": "Evil.Example.COM"}, "verdict": "malicious"}
        ]))
        .unwrap();
        assert_eq!(many[0].entity.value, "corp\\svc-backup");
        assert_eq!(many[0].note.as_deref(), Some("backup job"));
        assert_eq!(many[1].entity.value, "evil.example.com");
    }

    #[test]
    fn bad_hints_name_the_field_at_fault() {
        for (hint, field) in [
            (json!("198.51.100.9"), "hints"),
            (json!([1]), "hints[0]"),
            (
                json!({"entity": {"type": "ip", "value": "198.51.100.9"}, "extra": 1}),
                "hints[0]",
            ),
            (json!({"verdict": "benign"}), "hints[0].entity"),
            (
                json!({"entity": {"type": "planet", "value": "x"}}),
                "hints[0].entity.type",
            ),
            (
                json!({"entity": {"type": "ip", "value": "999.1.1.1"}}),
                "hints[0].entity.value",
            ),
            (
                json!({"entity": {"type": "ip", "value": 5}}),
                "hints[0].entity.value",
            ),
            (
                json!({"entity": {"type": "ip", "value": "198.51.100.9"}, "verdict": "fine"}),
                "hints[0].verdict",
            ),
            (
                json!({"entity": {"type": "ip", "value": "198.51.100.9"}, "note": "x".repeat(1001)}),
                "hints[0].note",
            ),
        ] {
            let error = parse_hints(&hint).unwrap_err();
            assert!(
                error.field_errors.contains_key(field),
                "{hint}: {:?}",
                error.field_errors
            );
        }
        let too_many: Vec<Value> = (0..=MAX_HINTS)
            .map(|_| json!({"entity": {"type": "ip", "value": "198.51.100.9"}}))
            .collect();
        assert!(parse_hints(&Value::Array(too_many)).is_err());
    }

    #[test]
    fn text_entities_leave_out_what_hints_name() {
        let item = build_item(
            request(json!({
                "text": "198.51.100.9 and wks-0231 belong to the SOC",
                "hints": {"entity": {"type": "ip", "value": "198.51.100.9"}, "verdict": "benign"}
            })),
            None,
            1,
        )
        .unwrap();
        assert_eq!(item.hints.len(), 1);
        let values: Vec<&str> = item
            .entities
            .iter()
            .map(|entity| entity.value.as_str())
            .collect();
        assert_eq!(values, ["wks-0231"]);
    }

    #[test]
    fn a_label_needs_its_tenant_and_clearing_the_tenant_clears_the_label() {
        assert!(
            build_item(
                request(json!({"text": "x", "tenant_label": "Acme"})),
                None,
                1
            )
            .is_err()
        );
        let item = build_item(
            request(json!({"text": "x", "tenant_id": "acme", "tenant_label": "Acme"})),
            None,
            1,
        )
        .unwrap();
        assert_eq!(item.scope.tenant_label.as_deref(), Some("Acme"));
        let record = MemoryItemRecord {
            id: 1,
            text: item.text.clone(),
            scope: item.scope.clone(),
            hints: Vec::new(),
            entities: Vec::new(),
            created_by: None,
            last_modified_by: None,
            created_at: chrono::Utc::now(),
            updated_at: chrono::Utc::now(),
        };
        let global = build_item(request(json!({"tenant_id": null})), Some(&record), 1).unwrap();
        assert!(global.scope.is_global() && global.scope.tenant_label.is_none());
    }
}
