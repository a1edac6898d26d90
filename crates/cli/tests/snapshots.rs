//! Whole investigations, snapshotted: `sleuth investigate CASE --context corpus/context`
//! for a few corpus cases (one per kind of conclusion) must print exactly the JSON stored
//! under `tests/snapshots/`, with the moment of the run redacted to `<now>`.
//!
//! The corpus test checks outcome, priority, tactic and entities of every case; these
//! snapshots catch everything else changing unnoticed: the wording of conclusions and
//! summaries, findings and their evidences, remediations, interview questions, the shape
//! of the API output. When a change is intended, regenerate and review the diff:
//! `SLEUTH_UPDATE_SNAPSHOTS=1 cargo test -p sleuth-cli --test snapshots`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The test runs the real binary, as an operator would.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// One case per kind of conclusion an analyst reads.
const CASES: &[&str] = &[
    // Confirmed breach, urgent: credential dumping on a VIP's laptop.
    "crowdstrike/lsass_dump_via_comsvcs_on_cfo_laptop",
    // Confirmed breach that was blocked: a password spray Okta stopped.
    "okta/threatinsight_password_spray_blocked",
    // False alert with positive evidence: the organisation's own phishing simulation.
    "proofpoint_tap/phishing_simulation_flagged_as_phish",
    // Suspicion a human must resolve: a shell in a production container.
    "falco/interactive_shell_in_payments_container",
    // Incomplete: the finding names nothing to investigate.
    "aws_securityhub/partner_finding_naming_nothing",
];

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn investigate(case: &str) -> Value {
    let root = repository();
    let output = Command::new(env!("CARGO_BIN_EXE_sleuth"))
        .arg("investigate")
        .arg(root.join("corpus/alerts").join(format!("{case}.json")))
        .arg("--context")
        .arg(root.join("corpus/context"))
        .env_remove("SLEUTH_CONFIG")
        .output()
        .expect("run sleuth investigate");
    assert!(
        output.status.success(),
        "sleuth investigate {case} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("sleuth investigate prints JSON")
}

/// Every timestamp equal to the moment of the run (the investigation's `created_at`)
/// becomes `<now>`; times that come from the alert stay.
fn redact_now(value: &mut Value, now: &str) {
    match value {
        Value::String(text) if text == now => *text = "<now>".to_owned(),
        Value::Array(items) => items.iter_mut().for_each(|item| redact_now(item, now)),
        Value::Object(fields) => fields.values_mut().for_each(|field| redact_now(field, now)),
        _ => {}
    }
}

/// The first place where two JSON values differ, as a path, for a readable failure.
fn first_difference(expected: &Value, actual: &Value, path: &str) -> Option<String> {
    match (expected, actual) {
        (Value::Object(left), Value::Object(right)) => {
            for key in left.keys().chain(right.keys()) {
                let (left, right) = (left.get(key), right.get(key));
                let here = format!("{path}.{key}");
                match (left, right) {
                    (Some(left), Some(right)) => {
                        if let Some(found) = first_difference(left, right, &here) {
                            return Some(found);
                        }
                    }
                    _ => return Some(format!("{here}: expected {left:?}, got {right:?}")),
                }
            }
            None
        }
        (Value::Array(left), Value::Array(right)) if left.len() == right.len() => left
            .iter()
            .zip(right)
            .enumerate()
            .find_map(|(index, (left, right))| {
                first_difference(left, right, &format!("{path}[{index}]"))
            }),
        _ if expected == actual => None,
        _ => Some(format!("{path}: expected {expected}, got {actual}")),
    }
}

#[test]
fn whole_investigations_match_their_snapshots() {
    let update = std::env::var_os("SLEUTH_UPDATE_SNAPSHOTS").is_some();
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    let mut failures = Vec::new();
    for case in CASES {
        let mut actual = investigate(case);
        let now = actual["created_at"]
            .as_str()
            .expect("the investigation has created_at")
            .to_owned();
        redact_now(&mut actual, &now);
        let file = directory.join(format!("{}.json", case.replace('/', "__")));
        let pretty = serde_json::to_string_pretty(&actual).expect("serialise") + "\n";
        if update {
            std::fs::create_dir_all(&directory).expect("create the snapshot directory");
            std::fs::write(&file, pretty).expect("write the snapshot");
            continue;
        }
        let stored = std::fs::read_to_string(&file).unwrap_or_else(|error| {
            panic!(
                "{}: {error}; create it with SLEUTH_UPDATE_SNAPSHOTS=1",
                file.display()
            )
        });
        let expected: Value = serde_json::from_str(&stored).expect("the snapshot is JSON");
        if let Some(difference) = first_difference(&expected, &actual, "") {
            failures.push(format!("{case}: {difference}"));
        }
    }
    assert!(
        failures.is_empty(),
        "investigations differ from their snapshots (if intended, regenerate with \
         SLEUTH_UPDATE_SNAPSHOTS=1 and review the diff):\n{}",
        failures.join("\n")
    );
}

#[test]
fn a_changed_investigation_is_reported_with_its_path() {
    let expected = serde_json::json!({"findings": [{"headline": "LSASS memory was read"}]});
    let actual = serde_json::json!({"findings": [{"headline": "Something else"}]});
    let difference = first_difference(&expected, &actual, "").expect("they differ");
    assert!(
        difference.starts_with(".findings[0].headline"),
        "{difference}"
    );
    assert_eq!(first_difference(&expected, &expected, ""), None);
}
