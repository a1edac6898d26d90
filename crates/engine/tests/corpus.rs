//! Every case of the alert corpus (`corpus/alerts/**.json`, see `corpus/README.md`) is
//! investigated against the corpus context (`corpus/context/*.toml`, merged) and must reach
//! the outcome, priority floor and MITRE tactic an analyst would. Prints an accuracy table
//! per source (`cargo test -p sleuth-engine --test corpus -- --nocapture`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use sleuth_domain::{History, InvestigationResult, Outcome, Priority};
use sleuth_engine::{Context, ContextDocument, EngineInput};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus")
}

fn files_under(directory: &Path, extension: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![directory.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).expect("corpus directory") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|found| found == extension) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn corpus_context() -> Context {
    let mut merged = ContextDocument::default();
    for path in files_under(&corpus().join("context"), "toml") {
        let text = std::fs::read_to_string(&path).expect("read context");
        let document = ContextDocument::from_toml(&text)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        merged.merge(document);
    }
    Context::build(merged).unwrap_or_else(|error| panic!("corpus context: {error}"))
}

fn investigate(alert: &Value, context: &Context) -> InvestigationResult {
    let parsed = sleuth_parsers::parse_alert(None, alert, chrono::Utc::now()).expect("parses");
    let raw: Map<String, Value> = alert.as_object().cloned().unwrap_or_default();
    sleuth_engine::investigate(
        &EngineInput {
            alert: &parsed,
            raw: &raw,
            history: &History::default(),
            facts: &sleuth_domain::Facts::default(),
            strategies: &[],
            now: chrono::Utc::now(),
        },
        context,
    )
}

/// What a case expects that the investigation got wrong, if anything.
fn check(case: &Value, result: &InvestigationResult) -> Vec<String> {
    let expect = &case["expect"];
    let mut problems = Vec::new();
    let wanted_outcome = expect["outcome"]
        .as_str()
        .and_then(|text| Outcome::parse(text).ok());
    if wanted_outcome != Some(result.outcome) {
        problems.push(format!(
            "outcome {} (expected {})",
            result.outcome, expect["outcome"]
        ));
    }
    let floor = expect["priority_at_least"]
        .as_str()
        .and_then(|text| Priority::parse(text).ok());
    if floor.is_some_and(|floor| result.priority < floor) {
        problems.push(format!(
            "priority {} (expected at least {})",
            result.priority, expect["priority_at_least"]
        ));
    }
    let wanted_tactic = expect["mitre_tactic"].as_str();
    if wanted_tactic != result.mitre_tactic.as_deref() {
        problems.push(format!(
            "tactic {:?} (expected {wanted_tactic:?})",
            result.mitre_tactic
        ));
    }
    // What to do: every step named must be recommended, and no step may say what must never
    // be (asking a service account a question, isolating the target instead of the source).
    let steps = result.recommended_remediations.join("\n");
    for wanted in expect["remediation_mentions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let wanted = wanted.as_str().unwrap_or_default();
        if !steps.contains(wanted) {
            problems.push(format!("no remediation mentions {wanted:?}: {steps}"));
        }
    }
    for never in expect["remediation_never"].as_array().into_iter().flatten() {
        let never = never.as_str().unwrap_or_default();
        if steps.contains(never) {
            problems.push(format!("a remediation says {never:?}: {steps}"));
        }
    }
    let mut seen = std::collections::HashSet::new();
    for step in &result.recommended_remediations {
        if !seen.insert(step.as_str()) {
            problems.push(format!("the remediation {step:?} is repeated"));
        }
    }
    // One fact is one finding, however many of the alert's entities reached it.
    let mut findings = std::collections::HashSet::new();
    for finding in &result.findings {
        if !findings.insert((finding.headline.as_str(), finding.finding.as_str())) {
            problems.push(format!("the finding {:?} is repeated", finding.headline));
        }
    }
    problems
}

#[test]
fn the_engine_concludes_what_an_analyst_would_on_every_corpus_case() {
    let context = corpus_context();
    let mut per_source: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    let cases = files_under(&corpus().join("alerts"), "json");
    for path in &cases {
        let case: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("read case"))
            .expect("case is JSON");
        let result = investigate(&case["alert"], &context);
        let problems = check(&case, &result);
        let source = path
            .parent()
            .and_then(|parent| parent.file_name())
            .map(|name| name.to_string_lossy().to_string())
            .unwrap_or_default();
        let tally = per_source.entry(source).or_default();
        tally.1 += 1;
        if problems.is_empty() {
            tally.0 += 1;
        } else {
            let decisive: Vec<String> = result
                .findings
                .iter()
                .take(4)
                .map(|finding| format!("[{}] {}", finding.outcome, finding.headline))
                .collect();
            failures.push(format!(
                "{}: {}\n      findings: {}",
                path.strip_prefix(corpus()).unwrap_or(path).display(),
                problems.join("; "),
                decisive.join(" | ")
            ));
        }
    }
    println!("\n{:<24} {:>7} {:>7}", "source", "right", "cases");
    let (mut right, mut total) = (0, 0);
    for (source, (passed, count)) in &per_source {
        println!("{source:<24} {passed:>7} {count:>7}");
        right += passed;
        total += count;
    }
    println!("{:<24} {right:>7} {total:>7}\n", "all");
    assert!(!cases.is_empty(), "the corpus is empty");
    assert!(
        failures.is_empty(),
        "{} of {total} cases concluded wrongly:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
