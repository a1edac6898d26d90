//! One investigation: the verdict and priority, summaries, findings with their evidence,
//! entities (each a link to the queue searching for it), related alerts, a timeline, the
//! raw alert pretty-printed as text, response-action runs, notes, and feedback in one
//! click. Read through the same scoped store calls as the API (another tenant union's
//! investigation is a 404); feedback and notes are written by the API's own functions
//! (`routes::feedback::apply`, `routes::notes::add`), so they are validated, stored and
//! fire their triggers exactly as over the API.
//!
//! Everything here came from an alert, which an attacker may have written: every value
//! is an escaped maud splice, the raw alert included.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::http::header::LOCATION;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;
use sleuth_domain::{InvestigationStatus, Outcome, Priority, Role};
use sleuth_store::{InvestigationRecord, NoteRecord, ScriptRunRecord};

use crate::console::form::ConsoleForm;
use crate::console::pages::{
    api_error_page, error_page, html_response, outcome_class, outcome_label, priority_class,
    query_string, shell, time,
};
use crate::console::runs;
use crate::console::session::SignedIn;
use crate::routes::feedback::{self, FeedbackRequest};
use crate::routes::notes::{self, NoteRequest};
use crate::state::AppState;

/// Notes shown on the page (the API pages through more).
const NOTES_SHOWN: u32 = 200;
/// Response-action runs shown on the page, newest first.
const RUNS_SHOWN: u32 = 50;

/// The outcomes an analyst may choose in feedback.
const CHOSEN_OUTCOMES: [Outcome; 4] = [
    Outcome::BreachedConfirmed,
    Outcome::BreachedSuspicious,
    Outcome::FalseAlert,
    Outcome::Incomplete,
];

fn investigation_id(raw: &str) -> Option<i64> {
    raw.parse::<i64>().ok().filter(|id| *id > 0)
}

fn no_such_investigation() -> Response {
    error_page(StatusCode::NOT_FOUND, "There is no such investigation.")
}

pub(crate) async fn page(
    State(state): State<AppState>,
    signed_in: SignedIn,
    Path(raw_id): Path<String>,
) -> Response {
    let Some(investigation_id) = investigation_id(&raw_id) else {
        return no_such_investigation();
    };
    match read(&state, &signed_in, investigation_id).await {
        Ok(read) => {
            let title = format!("#{} {}", read.record.id, read.record.alert.parsed.title);
            html_response(
                StatusCode::OK,
                shell(&title, Some(&signed_in), body(&signed_in, &read)),
            )
        }
        Err(error) => api_error_page(error),
    }
}

/// What the page shows of one investigation.
struct Read {
    record: InvestigationRecord,
    notes: Vec<NoteRecord>,
    runs: Vec<ScriptRunRecord>,
}

async fn read(
    state: &AppState,
    signed_in: &SignedIn,
    investigation_id: i64,
) -> crate::error::ApiResult<Read> {
    let caller = signed_in.caller();
    caller.require(Role::RestrictedReadOnly)?;
    caller.check_investigation(state, investigation_id).await?;
    let store = state.store()?;
    let record = store.get_investigation(investigation_id).await?;
    let notes = store.list_notes(investigation_id, NOTES_SHOWN, 0).await?;
    let runs = store
        .list_investigation_script_runs(investigation_id, RUNS_SHOWN)
        .await?;
    Ok(Read {
        record,
        notes: notes.items,
        runs,
    })
}

fn body(signed_in: &SignedIn, read: &Read) -> Markup {
    let (record, notes, runs) = (&read.record, read.notes.as_slice(), read.runs.as_slice());
    let alert = &record.alert.parsed;
    let result = record.result.as_ref();
    let may_write = signed_in.session.user.role.allows(Role::Member);
    html! {
        article.investigation data-investigation=(record.id) {
            header.headline {
                p.crumbs { a href="/" { "Queue" } " / #" (record.id) }
                h1 #alert-title { (alert.title) }
                div.verdict {
                    span #verdict class=(outcome_class(record.outcome)) { (record.outcome.map_or("No verdict yet", outcome_label)) }
                    span #priority class=(priority_class(record.priority)) { (record.priority.map_or("no priority", Priority::as_str)) }
                    span.meta { (alert.direct_source_label) " · " (time(&alert.create_time)) " · " (record.alert.tenant_union.display_name) }
                }
                @if let Some(error) = &record.error_msg {
                    p.problem { "Stopped: " (error) }
                }
            }
            @if let Some(result) = result {
                section #summaries {
                    h2 { "Conclusion" }
                    p #conclusion { (result.conclusion) }
                    @if let Some(text) = &result.conclusion_summary { p { (text) } }
                    @if let Some(text) = &result.alert_summary { h3 { "The alert" } p #alert-summary { (text) } }
                    @if let Some(text) = &result.exec_summary { h3 { "For management" } p { (text) } }
                    @if !result.recommended_remediations.is_empty() {
                        h3 { "Recommended" }
                        ul { @for step in &result.recommended_remediations { li { (step) } } }
                    }
                }
            }
            (feedback_section(signed_in, record, may_write))
            @if let Some(result) = result {
                section #findings {
                    h2 { "Findings" }
                    @for finding in &result.findings {
                        div.finding {
                            h3 { (finding.headline) " " span.tag { (finding.outcome.as_str()) } }
                            p { (finding.finding) }
                            @if !finding.evidences.is_empty() {
                                ul.evidence {
                                    @for evidence in &finding.evidences {
                                        li {
                                            span.kind { (evidence.evidence_type) }
                                            @if let Some(tag) = &evidence.tag { " " span.tag { (tag) } }
                                            " " (value_text(&evidence.data))
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            section #entities {
                h2 { "Entities" }
                @if alert.entities.is_empty() { p { "None named." } }
                ul {
                    @for entity in &alert.entities {
                        @let search = format!("\"{}\"", entity.value);
                        li { span.kind { (entity.kind.as_str()) } " " a.entity href=(format!("/?{}", query_string([("search", search.as_str())]))) { (entity.value) } }
                    }
                }
            }
            (related(result.and_then(|result| result.related_alert_hypothesis.as_ref())))
            (timeline(record, notes))
            section #runs {
                h2 { "Response actions" }
                @if runs.is_empty() {
                    p { "None ran for this investigation." }
                } @else {
                    (runs::table(runs, signed_in.session.user.role.allows(Role::Admin)))
                    @if runs.len() >= RUNS_SHOWN as usize { p.meta { "The newest " (RUNS_SHOWN) " runs." } }
                }
            }
            section #notes {
                h2 { "Notes" }
                @if notes.is_empty() { p { "No notes yet." } }
                @for note in notes {
                    div.note {
                        p.meta { (note.author.email) " · " (time(&note.created_at)) }
                        p.note-text { (note.text) }
                    }
                }
                @if may_write {
                    form #note-form method="post" action=(format!("/investigations/{}/notes", record.id)) {
                        input type="hidden" name="csrf" value=(signed_in.csrf());
                        label { "Add a note" textarea #note-text name="text" rows="3" required {} }
                        button #add-note type="submit" { "Add note" }
                    }
                }
            }
            section #raw {
                h2 { "The alert as received" }
                pre #raw-alert { (pretty(&record.alert.raw_alert_content)) }
            }
        }
    }
}

fn feedback_section(signed_in: &SignedIn, record: &InvestigationRecord, may_write: bool) -> Markup {
    let feedback = &record.feedback;
    let concluded = record.status == InvestigationStatus::Success;
    let action = format!("/investigations/{}/feedback", record.id);
    html! {
        section #feedback {
            h2 { "Your verdict" }
            p #feedback-state {
                "Review: " (feedback.status.as_str())
                @if feedback.updated_by.is_some() {
                    " · outcome " (feedback.outcome.map_or("none", outcome_label)) " · " (time(&feedback.updated_at))
                }
            }
            @if may_write && concluded {
                div.feedback-forms {
                    @if let Some(outcome) = record.outcome {
                        form #agree-form method="post" action=(action) {
                            input type="hidden" name="csrf" value=(signed_in.csrf());
                            input type="hidden" name="outcome" value=(outcome.as_str());
                            button #agree type="submit" { "Agree: " (outcome_label(outcome)) }
                        }
                    }
                    form #correct-form method="post" action=(action) {
                        input type="hidden" name="csrf" value=(signed_in.csrf());
                        label { "Or the right outcome "
                            select #outcome name="outcome" {
                                @for outcome in CHOSEN_OUTCOMES {
                                    option value=(outcome.as_str()) selected[Some(outcome) == feedback.outcome] { (outcome_label(outcome)) }
                                }
                            }
                        }
                        button #correct type="submit" { "Set outcome" }
                    }
                }
            } @else if !concluded {
                p { "Feedback opens once the investigation concluded." }
            }
        }
    }
}

fn related(hypothesis: Option<&serde_json::Map<String, Value>>) -> Markup {
    let Some(hypothesis) = hypothesis else {
        return html! { section #related { h2 { "Related alerts" } p { "None within the correlation window." } } };
    };
    let related: Vec<&Value> = hypothesis
        .get("related")
        .and_then(Value::as_array)
        .map(|items| items.iter().collect())
        .unwrap_or_default();
    html! {
        section #related {
            h2 { "Related alerts" }
            @if let Some(text) = hypothesis.get("hypothesis").and_then(Value::as_str) { p { (text) } }
            ul {
                @for item in related {
                    @let title = item.get("title").and_then(Value::as_str).unwrap_or("(untitled)");
                    li {
                        @if let Some(id) = item.get("investigation_id").and_then(Value::as_i64) {
                            a href=(format!("/investigations/{id}")) { "#" (id) " " (title) }
                        } @else {
                            (title)
                        }
                    }
                }
            }
        }
    }
}

fn timeline(record: &InvestigationRecord, notes: &[NoteRecord]) -> Markup {
    let alert = &record.alert.parsed;
    let mut events: Vec<(sleuth_domain::Timestamp, String)> = Vec::new();
    if let Some(start) = alert.start_time {
        events.push((start, "Activity began (as the source says)".into()));
    }
    events.push((
        alert.create_time,
        format!("{} raised the alert", alert.direct_source_label),
    ));
    events.push((record.created_at, "Sleuth received it".into()));
    if let Some(start) = record.start_time {
        events.push((start, "Investigation started".into()));
    }
    if let Some(done) = record.generated_time {
        let verdict = record.outcome.map_or("no verdict", outcome_label);
        events.push((done, format!("Concluded: {verdict}")));
    }
    if record.feedback.updated_by.is_some() {
        events.push((
            record.feedback.updated_at,
            "An analyst gave feedback".into(),
        ));
    }
    for note in notes {
        events.push((note.created_at, format!("Note by {}", note.author.email)));
    }
    events.sort_by_key(|(at, _)| *at);
    html! {
        section #timeline {
            h2 { "Timeline" }
            ol { @for (at, what) in &events { li { span.time { (time(at)) } " " (what) } } }
        }
    }
}

/// A value as text: strings as they are, anything else as JSON.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The raw alert, indented when it is JSON (it always is, as stored), else as it came.
fn pretty(raw: &str) -> String {
    serde_json::from_str::<Value>(raw)
        .ok()
        .and_then(|value| serde_json::to_string_pretty(&value).ok())
        .unwrap_or_else(|| raw.to_string())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FeedbackForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    outcome: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoteForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    text: String,
}

fn back_to(investigation_id: i64, anchor: &str) -> Response {
    (
        StatusCode::SEE_OTHER,
        [(
            LOCATION,
            format!("/investigations/{investigation_id}#{anchor}"),
        )],
    )
        .into_response()
}

/// Feedback in one click: the outcome (the verdict itself, to agree) and the review
/// completed.
pub(crate) async fn feedback(
    State(state): State<AppState>,
    signed_in: SignedIn,
    Path(raw_id): Path<String>,
    ConsoleForm(form): ConsoleForm<FeedbackForm>,
) -> Response {
    if let Some(refused) = signed_in.refuses_csrf(&form.csrf) {
        return refused;
    }
    let Some(investigation_id) = investigation_id(&raw_id) else {
        return no_such_investigation();
    };
    let request = FeedbackRequest {
        outcome: Some(Value::String(form.outcome)),
        priority: None,
        outcome_note: None,
        remediations_done: None,
        status: Some(Value::String("reviewed".into())),
    };
    match feedback::apply(&state, &signed_in.caller(), investigation_id, request).await {
        Ok(_) => back_to(investigation_id, "feedback"),
        Err(error) => api_error_page(error),
    }
}

pub(crate) async fn add_note(
    State(state): State<AppState>,
    signed_in: SignedIn,
    Path(raw_id): Path<String>,
    ConsoleForm(form): ConsoleForm<NoteForm>,
) -> Response {
    if let Some(refused) = signed_in.refuses_csrf(&form.csrf) {
        return refused;
    }
    let Some(investigation_id) = investigation_id(&raw_id) else {
        return no_such_investigation();
    };
    let request = NoteRequest {
        text: Some(form.text),
    };
    match notes::add(&state, &signed_in.caller(), investigation_id, request).await {
        Ok(_) => back_to(investigation_id, "notes"),
        Err(error) => api_error_page(error),
    }
}
