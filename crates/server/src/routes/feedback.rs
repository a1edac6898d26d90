//! Feedback and review of a concluded investigation (our endpoints, SPEC's Investigation
//! feedback shape): an analyst corrects or confirms the outcome and priority with a note,
//! records the remediations done, and marks the review `reviewed` (or reopens it). Every
//! change fires `FEEDBACK_APPLIED`, and a review that completes fires `REVIEW_COMPLETED`.
//!
//! Feedback teaches: the analyst's outcome is what later investigations of the same
//! detection or entities see as the human verdict (`Store::history`, then the engine's
//! history playbook).

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value, json};
use sleuth_domain::{FeedbackStatus, Outcome, Priority, Role};
use sleuth_store::FeedbackChanges;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::dto::investigation::FeedbackDto;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, path_id};
use crate::state::AppState;
use sleuth_jobs::firing;
use sleuth_jobs::trigger_catalog::{FEEDBACK_APPLIED, REVIEW_COMPLETED};

/// The longest `outcome_note`, in characters.
pub const OUTCOME_NOTE_MAX_CHARS: usize = 5_000;
/// The largest `remediations_done`, as JSON text: it travels in every list item.
pub const REMEDIATIONS_DONE_MAX_BYTES: usize = 64 * 1024;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_feedback, update_feedback))
}

/// A field that was sent, even as null; absent fields stay `None`.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// Body of a feedback change: any non-empty subset of the fields.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FeedbackRequest {
    /// The analyst's outcome (SPEC's Outcome).
    #[serde(default, deserialize_with = "present")]
    #[schema(schema_with = crate::dto::schema::outcome)]
    pub outcome: Option<Value>,
    /// The analyst's priority: informational, notable or urgent.
    #[serde(default, deserialize_with = "present")]
    #[schema(schema_with = crate::dto::schema::priority)]
    pub priority: Option<Value>,
    /// Why, in the analyst's words: at most 5000 characters; null clears it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, max_length = 5000)]
    pub outcome_note: Option<Value>,
    /// What was done about it (free object, replaced whole; at most 64 KiB as JSON).
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Object>)]
    pub remediations_done: Option<Value>,
    /// `reviewed` completes the review; `in_review` reopens it.
    #[serde(default, deserialize_with = "present")]
    #[schema(schema_with = crate::dto::schema::feedback_status)]
    pub status: Option<Value>,
}

fn shown(value: &Value) -> String {
    let text = match value {
        Value::String(text) => format!("'{text}'"),
        other => other.to_string(),
    };
    text.chars().take(60).collect()
}

/// One of an enumeration's wire spellings; anything else is a 400 that lists them.
fn one_of<T: Copy>(
    field: &str,
    value: &Value,
    allowed: &[T],
    spell: impl Fn(T) -> &'static str,
) -> ApiResult<T> {
    value
        .as_str()
        .and_then(|text| allowed.iter().copied().find(|item| spell(*item) == text))
        .ok_or_else(|| {
            let names: Vec<&str> = allowed.iter().map(|item| spell(*item)).collect();
            ApiError::invalid_field(
                field,
                format!("{} is not one of: {}", shown(value), names.join(", ")),
            )
        })
}

fn outcome_note(value: Value) -> ApiResult<Option<String>> {
    let note = match value {
        Value::Null => return Ok(None),
        Value::String(note) => note,
        other => {
            return Err(ApiError::invalid_field(
                "outcome_note",
                format!("must be a string or null, not {}", shown(&other)),
            ));
        }
    };
    let length = note.chars().count();
    if length > OUTCOME_NOTE_MAX_CHARS {
        return Err(ApiError::invalid_field(
            "outcome_note",
            format!("must be at most {OUTCOME_NOTE_MAX_CHARS} characters (got {length})"),
        ));
    }
    if note.contains('\0') {
        return Err(ApiError::invalid_field(
            "outcome_note",
            "must not contain NUL characters",
        ));
    }
    Ok(Some(note))
}

fn remediations_done(value: Value) -> ApiResult<Map<String, Value>> {
    let Value::Object(done) = value else {
        return Err(ApiError::invalid_field(
            "remediations_done",
            format!("must be a JSON object, not {}", shown(&value)),
        ));
    };
    let size = serde_json::to_string(&done).map_or(usize::MAX, |text| text.len());
    if size > REMEDIATIONS_DONE_MAX_BYTES {
        return Err(ApiError::invalid_field(
            "remediations_done",
            format!("must be at most {REMEDIATIONS_DONE_MAX_BYTES} bytes as JSON (got {size})"),
        ));
    }
    Ok(done)
}

/// Turns the request into validated changes; nothing is stored unless all of it is valid.
fn changes(request: FeedbackRequest) -> ApiResult<FeedbackChanges> {
    let changes = FeedbackChanges {
        outcome: request
            .outcome
            .map(|value| one_of("outcome", &value, Outcome::ALL, Outcome::as_str))
            .transpose()?,
        priority: request
            .priority
            .map(|value| one_of("priority", &value, Priority::ALL, Priority::as_str))
            .transpose()?,
        outcome_note: request.outcome_note.map(outcome_note).transpose()?,
        remediations_done: request
            .remediations_done
            .map(remediations_done)
            .transpose()?,
        status: request
            .status
            .map(|value| {
                one_of(
                    "status",
                    &value,
                    FeedbackStatus::ALL,
                    FeedbackStatus::as_str,
                )
            })
            .transpose()?,
    };
    if changes.is_empty() {
        return Err(ApiError::bad_request(
            "nothing to change: send at least one of outcome, priority, outcome_note, \
             remediations_done, status",
        ));
    }
    Ok(changes)
}

/// Read an investigation's feedback.
#[utoipa::path(get, path = "/app/api/v1/investigation/{investigation_id}/feedback", tag = "feedback",
    params(("investigation_id" = String, Path)),
    responses((status = 200, body = FeedbackDto), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn get_feedback(
    State(state): State<AppState>,
    caller: Caller,
    Path(investigation_id): Path<String>,
) -> ApiResult<Json<FeedbackDto>> {
    caller.require(Role::RestrictedReadOnly)?;
    let investigation_id = path_id(&investigation_id, "investigation")?;
    caller.check_investigation(&state, investigation_id).await?;
    let record = state.store()?.get_investigation(investigation_id).await?;
    Ok(Json(FeedbackDto::new(&record, &record.feedback)))
}

/// Give feedback on a concluded investigation (member): any subset of outcome, priority,
/// outcome_note, remediations_done and status. Later investigations of the same detection
/// or entities cite the analyst's outcome as evidence.
#[utoipa::path(patch, path = "/app/api/v1/investigation/{investigation_id}/feedback", tag = "feedback",
    params(("investigation_id" = String, Path)), request_body = FeedbackRequest,
    responses((status = 200, body = FeedbackDto),
        (status = 400, description = "Invalid input, an empty body, or an investigation that has not concluded", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn update_feedback(
    State(state): State<AppState>,
    caller: Caller,
    Path(investigation_id): Path<String>,
    ApiJson(request): ApiJson<FeedbackRequest>,
) -> ApiResult<Json<FeedbackDto>> {
    let investigation_id = path_id(&investigation_id, "investigation")?;
    let record = apply(&state, &caller, investigation_id, request).await?;
    Ok(Json(FeedbackDto::new(&record, &record.feedback)))
}

/// Applies feedback as `caller` (member), as the API and the console do: validated,
/// stored, and `FEEDBACK_APPLIED` (and `REVIEW_COMPLETED`) fired. Answers the
/// investigation as it is now.
pub(crate) async fn apply(
    state: &AppState,
    caller: &Caller,
    investigation_id: i64,
    request: FeedbackRequest,
) -> ApiResult<sleuth_store::InvestigationRecord> {
    caller.require(Role::Member)?;
    let changes = changes(request)?;
    caller.check_investigation(state, investigation_id).await?;
    let store = state.store()?;
    let applied = store
        .apply_feedback(
            investigation_id,
            &changes,
            caller.user_id(),
            chrono::Utc::now(),
        )
        .await?;
    let record = applied.investigation;
    let feedback = &record.feedback;
    let mut triggers = vec![FEEDBACK_APPLIED];
    if feedback.status == FeedbackStatus::Reviewed
        && applied.previous_status != FeedbackStatus::Reviewed
    {
        triggers.push(REVIEW_COMPLETED);
    }
    let trigger_args = json!({
        "investigation_id": record.id,
        "outcome": feedback.outcome,
        "priority": feedback.priority,
        "outcome_note": feedback.outcome_note,
        "user_id": caller.user_id(),
    });
    let firing = firing::investigation_event_firing(state, &record, trigger_args);
    firing::fire_detached(state, store, triggers, firing);
    Ok(record)
}
