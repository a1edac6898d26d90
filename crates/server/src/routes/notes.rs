//! Notes on investigations (DESIGN.md section 1 paths, SPEC's Investigation note shape):
//! anyone who may read an investigation reads its notes; members write them; only a note's
//! author or an admin changes or deletes it. A note's words are found by the list's
//! free-text `search`, and a new note fires `NOTE_ADDED`.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;
use sleuth_domain::Role;
use sleuth_store::{NoteRecord, Store};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::dto::note::NoteDto;
use crate::error::{ApiError, ApiResult, ErrorBody, ErrorCode};
use crate::extract::{ApiJson, QueryPairs, path_id};
use crate::links;
use crate::list_budget::{self, PageRequest};
use crate::list_query::{MAX_LIMIT, page_parameters_or};
use crate::state::AppState;
use sleuth_jobs::firing;
use sleuth_jobs::trigger_catalog::NOTE_ADDED;

/// The longest note, in characters.
pub const NOTE_MAX_CHARS: usize = 10_000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_note))
        .routes(routes!(list_notes))
        .routes(routes!(update_note))
        .routes(routes!(delete_note))
}

/// Body of a note create or update.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteRequest {
    /// 1 to 10000 characters, not blank, without NUL.
    #[schema(min_length = 1, max_length = 10000)]
    pub text: Option<String>,
}

fn note_text(request: NoteRequest) -> ApiResult<String> {
    let text = request
        .text
        .ok_or_else(|| ApiError::invalid_field("text", "is required: the note, as a string"))?;
    if text.trim().is_empty() {
        return Err(ApiError::invalid_field("text", "must not be blank"));
    }
    let length = text.chars().count();
    if length > NOTE_MAX_CHARS {
        return Err(ApiError::invalid_field(
            "text",
            format!("must be at most {NOTE_MAX_CHARS} characters (got {length})"),
        ));
    }
    if text.contains('\0') {
        return Err(ApiError::invalid_field(
            "text",
            "must not contain NUL characters",
        ));
    }
    Ok(text)
}

/// The note, if its investigation is within the caller's tenant unions; as missing
/// otherwise.
async fn visible_note(state: &AppState, caller: &Caller, note_id: i64) -> ApiResult<NoteRecord> {
    let note = state.store()?.get_note(note_id).await?;
    caller
        .check_investigation(state, note.investigation_id)
        .await
        .map_err(|_| ApiError::not_found(format!("note {note_id} not found")))?;
    Ok(note)
}

/// Refuses unless the caller wrote the note or is an admin.
fn require_author_or_admin(caller: &Caller, note: &NoteRecord, doing: &str) -> ApiResult<()> {
    if note.author.id == caller.user_id() || caller.0.user.role == Role::Admin {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::AccessDenied,
        format!(
            "only the note's author ({}) or an admin may {doing} note {}",
            note.author.email, note.id
        ),
    ))
}

/// Fires `NOTE_ADDED` in the background with the investigation as it is now.
fn note_added(state: &AppState, store: &Arc<dyn Store>, note: &NoteRecord) {
    let trigger_args = json!({
        "investigation_id": note.investigation_id,
        "note_id": note.id,
        "text": note.text,
        "user_id": note.author.id,
    });
    let (state, store) = (state.clone(), store.clone());
    let investigation_id = note.investigation_id;
    tokio::spawn(async move {
        let fired = async {
            let record = store.get_investigation(investigation_id).await?;
            let firing = firing::investigation_event_firing(&state, &record, trigger_args);
            firing::fire(&state, &store, &[NOTE_ADDED], &firing).await
        };
        if let Err(error) = fired.await {
            tracing::error!(investigation_id, %error, "could not fire the response actions of a new note");
        }
    });
}

/// Add a note to an investigation (member).
#[utoipa::path(post, path = "/app/api/v1/investigation-user-notes/{investigation_id}/create", tag = "notes",
    params(("investigation_id" = String, Path)), request_body = NoteRequest,
    responses((status = 200, body = NoteDto), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn create_note(
    State(state): State<AppState>,
    caller: Caller,
    Path(investigation_id): Path<String>,
    ApiJson(request): ApiJson<NoteRequest>,
) -> ApiResult<Json<NoteDto>> {
    let investigation_id = path_id(&investigation_id, "investigation")?;
    let note = add(&state, &caller, investigation_id, request).await?;
    Ok(Json(NoteDto::from(&note)))
}

/// Adds a note as `caller` (member), as the API and the console do: checked, stored, and
/// `NOTE_ADDED` fired.
pub(crate) async fn add(
    state: &AppState,
    caller: &Caller,
    investigation_id: i64,
    request: NoteRequest,
) -> ApiResult<sleuth_store::NoteRecord> {
    caller.require(Role::Member)?;
    let text = note_text(request)?;
    caller.check_investigation(state, investigation_id).await?;
    let store = state.store()?.clone();
    let note = store
        .create_note(
            investigation_id,
            caller.user_id(),
            &text,
            chrono::Utc::now(),
        )
        .await?;
    note_added(state, &store, &note);
    Ok(note)
}

/// List an investigation's notes, oldest first.
///
/// The answer is an array of at most `limit` notes (default and most 1000) from `offset`,
/// and stops early when its notes reach `server.max_list_answer_bytes` (always holding at
/// least one). `X-Total-Count` says how many notes the investigation has; while more
/// follow, `Link: <url>; rel="next"` names the page that starts after the last note sent.
#[utoipa::path(get, path = "/app/api/v1/investigation-user-notes/{investigation_id}/list", tag = "notes",
    params(
        ("investigation_id" = String, Path),
        ("limit" = Option<i64>, Query, description = "Notes per page (default 1000, at most 1000)"),
        ("offset" = Option<i64>, Query, description = "Notes to skip"),
    ),
    responses(
        (status = 200, body = Vec<NoteDto>, headers(
            ("X-Total-Count" = u64, description = "How many notes the investigation has"),
            ("Link" = String, description = "`<url>; rel=\"next\"` while more notes follow (RFC 8288)"),
        )),
        (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn list_notes(
    State(state): State<AppState>,
    headers: HeaderMap,
    caller: Caller,
    Path(investigation_id): Path<String>,
    query: QueryPairs,
) -> ApiResult<(HeaderMap, Json<Vec<Box<RawValue>>>)> {
    caller.require(Role::RestrictedReadOnly)?;
    let investigation_id = path_id(&investigation_id, "investigation")?;
    let (limit, offset) = page_parameters_or(&query, MAX_LIMIT)?;
    caller.check_investigation(&state, investigation_id).await?;
    let store = state.store()?.as_ref();
    let path = format!("/app/api/v1/investigation-user-notes/{investigation_id}/list");
    let request = PageRequest::new(&state, &headers, &path, &query, (limit, offset));
    let (page, next) = list_budget::linked_page(
        &request,
        |rows, offset| async move {
            let page = store.list_notes(investigation_id, rows, offset).await?;
            Ok((page.total, page.items))
        },
        |note| note.id,
        |note| NoteDto::from(note),
    )
    .await?;
    Ok((
        links::paging_headers(next.as_deref(), Some(page.total)),
        Json(page.items),
    ))
}

/// Change a note's text (its author or an admin; member role at least).
#[utoipa::path(patch, path = "/app/api/v1/investigation-user-notes/{note_id}/update", tag = "notes",
    params(("note_id" = String, Path)), request_body = NoteRequest,
    responses((status = 200, body = NoteDto), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn update_note(
    State(state): State<AppState>,
    caller: Caller,
    Path(note_id): Path<String>,
    ApiJson(request): ApiJson<NoteRequest>,
) -> ApiResult<Json<NoteDto>> {
    caller.require(Role::Member)?;
    let note_id = path_id(&note_id, "note")?;
    let text = note_text(request)?;
    let store = state.store()?;
    let note = visible_note(&state, &caller, note_id).await?;
    require_author_or_admin(&caller, &note, "change")?;
    let note = store
        .update_note(note_id, &text, chrono::Utc::now())
        .await?;
    Ok(Json(NoteDto::from(&note)))
}

/// Delete a note (its author or an admin; member role at least). Answers 200 with no body.
#[utoipa::path(delete, path = "/app/api/v1/investigation-user-notes/{note_id}/delete", tag = "notes",
    params(("note_id" = String, Path)),
    responses((status = 200, description = "Deleted; no body"), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn delete_note(
    State(state): State<AppState>,
    caller: Caller,
    Path(note_id): Path<String>,
) -> ApiResult<StatusCode> {
    caller.require(Role::Member)?;
    let note_id = path_id(&note_id, "note")?;
    let store = state.store()?;
    let note = visible_note(&state, &caller, note_id).await?;
    require_author_or_admin(&caller, &note, "delete")?;
    store.delete_note(note_id).await?;
    Ok(StatusCode::OK)
}
