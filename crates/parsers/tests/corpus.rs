//! Every case of the alert corpus (`corpus/alerts/**.json`, see `corpus/README.md`) is
//! detected as its format and read to the title, times, severity and entities it expects.

use std::path::{Path, PathBuf};

use serde_json::Value;
use sleuth_domain::{EntityKind, ParsedAlert};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus/alerts")
}

fn cases() -> Vec<(PathBuf, Value)> {
    let mut cases = Vec::new();
    let mut directories = vec![corpus_dir()];
    while let Some(directory) = directories.pop() {
        for entry in std::fs::read_dir(&directory).expect("corpus directory") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                directories.push(path);
            } else if path
                .extension()
                .is_some_and(|extension| extension == "json")
            {
                let text = std::fs::read_to_string(&path).expect("read case");
                let case: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
                cases.push((path, case));
            }
        }
    }
    cases.sort_by(|left, right| left.0.cmp(&right.0));
    cases
}

/// What one case expects of the parser that the parser got wrong, if anything.
fn check(case: &Value) -> Result<(), String> {
    let expect = &case["expect"];
    let alert = &case["alert"];
    let wanted_schema = case["schema_key"]
        .as_str()
        .ok_or("the case names no schema_key")?;
    let detected = sleuth_parsers::detect(alert).key;
    if detected != wanted_schema {
        return Err(format!("detected as {detected}, expected {wanted_schema}"));
    }
    let parsed: ParsedAlert = sleuth_parsers::parse_alert(None, alert, chrono::Utc::now())
        .map_err(|error| error.to_string())?;
    let mut problems = Vec::new();
    let mut compare = |field: &str, actual: Option<String>| {
        if let Some(wanted) = expect.get(field).and_then(Value::as_str)
            && actual.as_deref() != Some(wanted)
        {
            problems.push(format!("{field}: got {actual:?}, expected {wanted:?}"));
        }
    };
    compare("title", Some(parsed.title.clone()));
    compare("alert_type", Some(parsed.alert_type.clone()));
    compare("severity", parsed.severity.clone());
    let wanted_time = expect["create_time"]
        .as_str()
        .ok_or("the case expects no create_time")?;
    let wanted_time = chrono::DateTime::parse_from_rfc3339(wanted_time)
        .map_err(|error| format!("expect.create_time: {error}"))?;
    if parsed.create_time != wanted_time {
        problems.push(format!(
            "create_time: got {}, expected {wanted_time}",
            parsed.create_time
        ));
    }
    for entity in expect["entities"].as_array().into_iter().flatten() {
        let kind = entity["type"]
            .as_str()
            .and_then(EntityKind::parse)
            .ok_or_else(|| format!("unknown entity type in {entity}"))?;
        let value = entity["value"].as_str().unwrap_or_default();
        if !parsed
            .entities
            .iter()
            .any(|found| found.kind == kind && found.value == value)
        {
            problems.push(format!("missing entity {kind} {value}"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}\n    entities found: {:?}",
            problems.join("\n    "),
            parsed
                .entities
                .iter()
                .map(|entity| format!("{}={}", entity.kind, entity.value))
                .collect::<Vec<_>>()
        ))
    }
}

#[test]
fn every_corpus_alert_is_detected_and_read_as_expected() {
    let cases = cases();
    assert!(!cases.is_empty(), "the corpus is empty");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(path, case)| {
            check(case)
                .err()
                .map(|problem| format!("{}:\n    {problem}", path.display()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} corpus cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_source_has_four_cases_and_every_format_two() {
    let mut per_schema = std::collections::BTreeMap::<String, usize>::new();
    for (_, case) in cases() {
        *per_schema
            .entry(case["schema_key"].as_str().unwrap_or_default().to_string())
            .or_default() += 1;
    }
    let count = |key: &str| per_schema.get(key).copied().unwrap_or_default();
    let mut per_source = std::collections::BTreeMap::<&str, usize>::new();
    let mut thin_formats = Vec::new();
    for schema in sleuth_parsers::schemas()
        .iter()
        .filter(|schema| schema.key != "generic")
    {
        *per_source.entry(schema.source_label).or_default() += count(schema.key);
        if count(schema.key) < 2 {
            thin_formats.push(format!("{} ({})", schema.key, count(schema.key)));
        }
    }
    let thin_sources: Vec<String> = per_source
        .iter()
        .filter(|(_, cases)| **cases < 4)
        .map(|(source, cases)| format!("{source} ({cases})"))
        .collect();
    assert!(
        thin_sources.is_empty(),
        "sources with fewer than 4 corpus cases: {thin_sources:?}"
    );
    assert!(
        thin_formats.is_empty(),
        "formats with fewer than 2 corpus cases: {thin_formats:?}"
    );
}
