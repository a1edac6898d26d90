//! `sleuth eval`, run as an operator would: the held-out corpus (its first user) and a
//! team's own directory of raw alerts with a labels.toml.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The test runs the real binary.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn eval(arguments: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sleuth"))
        .arg("eval")
        .args(arguments)
        .env_remove("SLEUTH_CONFIG")
        .output()
        .expect("run sleuth eval")
}

fn json_files(directory: &Path) -> usize {
    std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .map(|path| {
            if path.is_dir() {
                json_files(&path)
            } else {
                usize::from(
                    path.extension()
                        .is_some_and(|extension| extension == "json"),
                )
            }
        })
        .sum()
}

#[test]
fn the_held_out_corpus_is_evaluated_whole_and_its_figures_printed() {
    let holdout = repository().join("corpus/holdout");
    let output = eval(&[holdout.as_os_str(), "--json".as_ref()]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(cases.len(), json_files(&holdout.join("alerts")));
    assert!(
        cases.len() >= 60,
        "the held-out set holds at least 60 alerts"
    );
    assert!(
        report["per_source"].as_object().unwrap().len() >= 24,
        "every source is held out"
    );
    let figures = &report["figures"];
    for figure in ["outcome", "priority_floor", "tactic", "entity_recall"] {
        let right = figures[figure]["right"].as_u64().unwrap();
        let of = figures[figure]["of"].as_u64().unwrap();
        assert!(right <= of && of > 0, "{figure}: {right}/{of}");
    }
    // Every conclusion names the claim it addressed.
    for case in cases {
        assert!(case["claim"].is_string(), "no claim in {}", case["name"]);
    }
    // The text report, for the log: the held-out figures are reported, never asserted whole.
    let text = eval(&[holdout.as_os_str()]);
    println!("{}", String::from_utf8_lossy(&text.stdout));
}

#[test]
fn a_teams_own_alerts_are_measured_against_its_label_file() {
    let directory = tempfile::tempdir().unwrap();
    let corpus = repository().join("corpus/alerts");
    // Raw alerts as the tools sent them: the corpus cases' `alert` objects.
    for (case, file) in [
        (
            "okta/threatinsight_password_spray_blocked.json",
            "spray.json",
        ),
        (
            "suricata/nessus_scanner_trips_exploit_signatures.json",
            "scan.json",
        ),
        ("zeek/capture_loss_on_sensor.json", "unlabelled.json"),
    ] {
        let case: Value =
            serde_json::from_str(&std::fs::read_to_string(corpus.join(case)).unwrap()).unwrap();
        std::fs::write(directory.path().join(file), case["alert"].to_string()).unwrap();
    }
    // The spray is labelled as the engine concludes it; the scan deliberately not.
    std::fs::write(
        directory.path().join("labels.toml"),
        "[[alert]]\nfile = \"spray.json\"\noutcome = \"confirmed\"\npriority_at_least = \"notable\"\n\
         [[alert]]\nfile = \"scan.json\"\noutcome = \"suspicious\"\nnote = \"labelled wrong on purpose\"\n\
         [[alert]]\nfile = \"gone.json\"\noutcome = \"confirmed\"\n",
    )
    .unwrap();
    let context = repository().join("corpus/context");
    let output = eval(&[
        directory.path().as_os_str(),
        "--context".as_ref(),
        context.as_os_str(),
        "--json".as_ref(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["figures"]["outcome"]["right"], 1);
    assert_eq!(report["figures"]["outcome"]["of"], 2);
    assert_eq!(
        report["figures"]["breach_or_suspicion_called_false"]["right"],
        1
    );
    assert_eq!(report["unlabelled"], serde_json::json!(["unlabelled.json"]));
    assert_eq!(
        report["labels_without_a_file"],
        serde_json::json!(["gone.json"])
    );
    let scan = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|case| case["name"] == "scan.json")
        .unwrap();
    assert_eq!(scan["outcome"], "COMPLETED_FALSE_ALERT");
    assert!(
        scan["decided_by"][0]["evidence"][0]["type"] == "authorised_scanner",
        "{scan}"
    );
    let text = String::from_utf8(
        eval(&[
            directory.path().as_os_str(),
            "--context".as_ref(),
            context.as_os_str(),
        ])
        .stdout,
    )
    .unwrap();
    assert!(
        text.contains("breach or suspicion called false   1/2"),
        "{text}"
    );
    assert!(
        text.contains("- scan.json: outcome COMPLETED_FALSE_ALERT"),
        "{text}"
    );
}

#[test]
fn a_bad_label_file_is_refused_with_every_bad_entry_named() {
    let directory = tempfile::tempdir().unwrap();
    std::fs::write(directory.path().join("a.json"), "{\"title\": \"x\"}").unwrap();
    std::fs::write(
        directory.path().join("labels.toml"),
        "[[alert]]\nfile = \"a.json\"\noutcome = \"probably\"\n[[alert]]\nfile = \"b.json\"\noutcome = \"confirmed\"\npriority_at_least = \"asap\"\n",
    )
    .unwrap();
    let output = eval(&[directory.path().as_os_str()]);
    assert!(!output.status.success());
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(
        error.contains("a.json") && error.contains("b.json") && error.contains("labels.toml"),
        "{error}"
    );
}
