//! `sleuth investigate FILE`: the engine offline, printing the investigation exactly as
//! `GET /app/api/v1/investigation/{id}` would (id 0, nothing stored, no history).

use std::io::Write as _;
use std::path::Path;

use anyhow::Context as _;
use serde_json::{Map, Value};
use sleuth_domain::{FeedbackStatus, History, InvestigationStatus};
use sleuth_engine::EngineInput;
use sleuth_server::dto::investigation::InvestigationDto;
use sleuth_store::{
    AlertRecord, DEFAULT_TENANT_UNION_ID, FeedbackRecord, InvestigationRecord, TenantUnion,
};

pub(crate) fn run(
    file: &Path,
    schema_key: Option<&str>,
    context_file: Option<&Path>,
) -> anyhow::Result<()> {
    let raw_text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mut raw_value: Value = serde_json::from_str(&raw_text)
        .with_context(|| format!("{} is not JSON", file.display()))?;
    // A corpus case (corpus/README.md) wraps the alert with what it should conclude.
    let is_corpus_case = raw_value.get("expect").is_some_and(Value::is_object)
        && raw_value.get("alert").is_some_and(Value::is_object);
    if is_corpus_case {
        raw_value = raw_value["alert"].take();
    }
    let raw_text = if is_corpus_case {
        raw_value.to_string()
    } else {
        raw_text
    };
    let Value::Object(raw) = &raw_value else {
        anyhow::bail!(
            "{} holds JSON, but not an object: an alert is a JSON object",
            file.display()
        );
    };
    let now = chrono::Utc::now();
    let context = sleuth_jobs::context_source::load(context_file, None, now)
        .map_err(|error| anyhow::anyhow!("the context does not load: {error}"))?
        .context;
    let parsed = sleuth_parsers::parse_alert(schema_key, &raw_value, now)?;
    let history = History::default();
    let result = sleuth_engine::investigate(
        &EngineInput {
            alert: &parsed,
            raw,
            history: &history,
            facts: &sleuth_domain::Facts::default(),
            strategies: &[],
            now,
        },
        &context,
    );
    let tenant_union = TenantUnion {
        id: DEFAULT_TENANT_UNION_ID,
        display_name: "Default".into(),
        lookup_dict: Map::new(),
        last_modified_by: None,
        created_at: now,
        updated_at: now,
    };
    let record = InvestigationRecord {
        id: 0,
        status: InvestigationStatus::Success,
        canceled: None,
        error_msg: None,
        outcome: Some(result.outcome),
        priority: Some(result.priority),
        ignored_for: None,
        is_retried: false,
        start_time: Some(now),
        generated_time: Some(now),
        created_at: now,
        updated_at: now,
        alert: AlertRecord {
            id: 0,
            enrich_result: result.enrich_result.clone(),
            parsed,
            raw_alert_content: raw_text,
            tenant_union,
            tenant_integration_key: None,
            created_at: now,
            updated_at: now,
        },
        feedback: FeedbackRecord {
            id: 0,
            status: FeedbackStatus::InReview,
            outcome: Some(result.outcome),
            priority: Some(result.priority),
            outcome_note: None,
            remediations_done: Map::new(),
            updated_by: None,
            created_at: now,
            updated_at: now,
        },
        remediation_action_runs: Vec::new(),
        result: Some(result),
    };
    let dto = InvestigationDto::new(&record, "http://localhost");
    let text = serde_json::to_string_pretty(&dto)?;
    // A closed pipe (`| head`) is the reader's choice, not an error worth a panic.
    match writeln!(std::io::stdout().lock(), "{text}") {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(anyhow::Error::from),
    }
}
