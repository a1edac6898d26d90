//! Cases whose verdict depends on what Sleuth already knows (`corpus/history/*.json`, see
//! `corpus/README.md`): each carries the alert, the history the store would hand the engine
//! (related alerts, analysts' earlier verdicts) and what an analyst would conclude, and is
//! investigated against the corpus context. `expect.cites` names an investigation id the
//! decisive findings must cite; `expect.not_cited` one they must not lean on.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use sleuth_domain::{FindingOutcome, History, Outcome, Priority};
use sleuth_engine::{Context, ContextDocument, EngineInput};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

fn files_in(directory: &Path, extension: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(directory)
        .expect("corpus directory")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|found| found == extension))
        .collect();
    found.sort();
    found
}

fn corpus_context() -> Context {
    let mut merged = ContextDocument::default();
    for path in files_in(&corpus().join("context"), "toml") {
        let text = std::fs::read_to_string(&path).expect("read context");
        merged.merge(ContextDocument::from_toml(&text).expect("context parses"));
    }
    Context::build(merged).expect("corpus context")
}

#[test]
fn what_sleuth_already_knows_weighs_as_an_analyst_would() {
    let context = corpus_context();
    let cases = files_in(&corpus().join("history"), "json");
    assert!(cases.len() >= 6, "the history cases are there");
    let mut failures = Vec::new();
    for path in &cases {
        let case: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON");
        let history: History =
            serde_json::from_value(case["history"].clone()).expect("history parses");
        let alert = &case["alert"];
        let parsed =
            sleuth_parsers::parse_alert(None, alert, chrono::Utc::now()).expect("alert parses");
        let raw: Map<String, Value> = alert.as_object().cloned().unwrap_or_default();
        let result = sleuth_engine::investigate(
            &EngineInput {
                alert: &parsed,
                raw: &raw,
                history: &history,
                facts: &sleuth_domain::Facts::default(),
                strategies: &[],
                now: chrono::Utc::now(),
            },
            &context,
        );
        let expect = &case["expect"];
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let wanted = Outcome::parse(expect["outcome"].as_str().expect("outcome")).expect("known");
        if result.outcome != wanted {
            failures.push(format!(
                "{name}: outcome {} (expected {wanted})",
                result.outcome
            ));
        }
        if let Some(floor) = expect["priority_at_least"].as_str() {
            let floor = Priority::parse(floor).expect("known priority");
            if result.priority < floor {
                failures.push(format!(
                    "{name}: priority {} (expected at least {floor})",
                    result.priority
                ));
            }
        }
        // What decided: the findings of the outcome's own kind, as the narrative shows them.
        let deciding = match result.outcome {
            Outcome::FalseAlert => FindingOutcome::FalseAlert,
            Outcome::BreachedConfirmed => FindingOutcome::BreachedConfirmed,
            _ => FindingOutcome::BreachedSuspicious,
        };
        let decisive: String = result
            .findings
            .iter()
            .filter(|finding| finding.outcome == deciding)
            .map(|finding| format!("{} {}", finding.headline, finding.finding))
            .collect::<Vec<_>>()
            .join("\n");
        if let Some(id) = expect["cites"].as_i64()
            && !(decisive.contains(&id.to_string()) && result.conclusion.contains(&id.to_string()))
        {
            failures.push(format!(
                "{name}: investigation {id} decided but is not cited"
            ));
        }
        if let Some(id) = expect["not_cited"].as_i64()
            && decisive.contains(&format!("investigation {id}"))
        {
            failures.push(format!(
                "{name}: investigation {id} decided though it is out of scope"
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for finding in &result.findings {
            if !seen.insert((finding.headline.as_str(), finding.finding.as_str())) {
                failures.push(format!(
                    "{name}: the finding {:?} is repeated",
                    finding.headline
                ));
            }
        }
        println!(
            "{name} ({}): {} {} — {}",
            parsed.alert_type, result.outcome, result.priority, result.conclusion
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
