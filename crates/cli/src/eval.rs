//! `sleuth eval DIR`: investigates every alert under DIR exactly as the API would (no
//! history), compares each conclusion with the team's label, and reports the figures, the
//! confusion matrix and every disagreement with the evidence that decided it (text, or JSON
//! with `--json`). docs/eval.md documents the label file.
//!
//! An alert is labelled either by a corpus case file (`{"alert": …, "expect": …}`,
//! corpus/README.md) or by an entry of `labels.toml` at the top of DIR.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::{Map, Value};
use sleuth_domain::History;
use sleuth_engine::EngineInput;
use sleuth_engine::scoring::{self, Label, Report, Scored};

/// The label file a team writes beside its alerts.
pub(crate) const LABEL_FILE: &str = "labels.toml";

pub(crate) fn run(
    directory: &Path,
    context: Option<&Path>,
    configured_context: Option<&Path>,
    json: bool,
) -> anyhow::Result<()> {
    if !directory.is_dir() {
        anyhow::bail!("{} is not a directory of alerts", directory.display());
    }
    // A directory that carries its own context (corpus/holdout/context) is evaluated with it.
    let own_context = directory.join("context");
    let context_path = context
        .map(Path::to_path_buf)
        .or_else(|| own_context.is_dir().then_some(own_context))
        .or_else(|| configured_context.map(Path::to_path_buf));
    let now = chrono::Utc::now();
    let context = sleuth_jobs::context_source::load(context_path.as_deref(), None, now)
        .map_err(|error| anyhow::anyhow!("the context does not load: {error}"))?
        .context;
    let mut labels: BTreeMap<String, Label> = BTreeMap::new();
    let label_path = directory.join(LABEL_FILE);
    if label_path.is_file() {
        let text = std::fs::read_to_string(&label_path)
            .with_context(|| format!("cannot read {}", label_path.display()))?;
        for (file, label) in scoring::read_label_file(&text)
            .map_err(|error| anyhow::anyhow!("{} is not valid: {error}", label_path.display()))?
        {
            labels.insert(file, label);
        }
    }
    let mut scored = Vec::new();
    let mut unlabelled = Vec::new();
    let history = History::default();
    for path in alert_files(directory, context_path.as_deref())? {
        let name = path
            .strip_prefix(directory)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let value: Value =
            serde_json::from_str(&text).with_context(|| format!("{name} is not JSON"))?;
        let (raw, label) = match (value.get("alert"), value.get("expect")) {
            (Some(alert), Some(expect)) if alert.is_object() && expect.is_object() => (
                alert.clone(),
                Label::from_expect(expect).map_err(|error| anyhow::anyhow!("{name}: {error}"))?,
            ),
            _ => match labels.remove(&name) {
                Some(label) => (value, label),
                None => {
                    unlabelled.push(name);
                    continue;
                }
            },
        };
        let parsed = sleuth_parsers::parse_alert(None, &raw, now)
            .map_err(|error| anyhow::anyhow!("{name} is not an alert Sleuth reads: {error}"))?;
        let raw_map: Map<String, Value> = raw.as_object().cloned().unwrap_or_default();
        let result = sleuth_engine::investigate(
            &EngineInput {
                alert: &parsed,
                raw: &raw_map,
                history: &history,
                facts: &sleuth_domain::Facts::default(),
                strategies: &[],
                now,
            },
            &context,
        );
        // The directory an alert sits in names its group (corpus/holdout/alerts/okta/…),
        // else the format it was read as.
        let source = match name.rsplit_once('/') {
            Some((group, _)) => group.rsplit('/').next().unwrap_or(group).to_string(),
            None => parsed.schema_key.clone(),
        };
        scored.push(Scored::new(name, source, label, &parsed, &result));
    }
    if scored.is_empty() {
        anyhow::bail!(
            "no labelled alert under {}: add corpus case files or a {LABEL_FILE} (docs/eval.md)",
            directory.display()
        );
    }
    let report = Report::new(scored);
    let mut output = if json {
        let mut value = serde_json::to_value(&report)?;
        value["unlabelled"] = serde_json::json!(unlabelled);
        value["labels_without_a_file"] = serde_json::json!(labels.keys().collect::<Vec<_>>());
        serde_json::to_string_pretty(&value)?
    } else {
        let mut text = report.to_text();
        if !unlabelled.is_empty() {
            text.push_str(&format!(
                "\n{} alert file(s) have no label and were skipped: {}\n",
                unlabelled.len(),
                unlabelled.join(", ")
            ));
        }
        if !labels.is_empty() {
            text.push_str(&format!(
                "\n{} label(s) name no alert file: {}\n",
                labels.len(),
                labels.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        text
    };
    output.push('\n');
    // A closed pipe (`| head`) is the reader's choice, not an error.
    match std::io::stdout().lock().write_all(output.as_bytes()) {
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(anyhow::Error::from),
    }
}

/// Every `*.json` under `directory`, sorted, leaving out the context directory.
fn alert_files(directory: &Path, context: Option<&Path>) -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut pending = vec![directory.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current)
            .with_context(|| format!("cannot list {}", current.display()))?
        {
            let path = entry?.path();
            if context.is_some_and(|context| path == context) {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else if path
                .extension()
                .is_some_and(|extension| extension == "json")
            {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}
