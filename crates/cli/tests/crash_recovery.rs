//! The promise behind a 200: an acknowledged alert survives `kill -9`. This runs the real
//! `sleuth` binary on a SQLite file, creates alerts from several threads, kills the
//! process without warning mid-stream, restarts it, and checks that every acknowledged
//! alert ends in success or error and none is stuck. And the other side of a crash: a
//! response script dies with the process that started it, and its run is ended at once
//! by the next start.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests of the binary must start the binary.
#![allow(clippy::disallowed_methods)]

#[path = "support/sleuth_process.rs"]
mod sleuth_process;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sleuth_process::{Server, free_port, http};

/// Starts `sleuth serve` with short leases, so a killed worker's jobs come back quickly;
/// returns it and, on a fresh database, the first admin key.
fn start(database: &str, port: u16) -> (Server, Option<String>) {
    start_with(database, port, &[])
}

/// `start`, with more settings in the environment.
fn start_with(
    database: &str,
    port: u16,
    environment: &[(&str, String)],
) -> (Server, Option<String>) {
    let mut settings = vec![
        ("SLEUTH_WORKERS__LEASE_SECONDS", "2".to_string()),
        ("SLEUTH_WORKERS__POLL_INTERVAL_MS", "100".to_string()),
        ("SLEUTH_LOG__LEVEL", "warn".to_string()),
    ];
    settings.extend(environment.iter().cloned());
    sleuth_process::start(database, port, &settings)
}

#[test]
fn every_acknowledged_alert_survives_kill_minus_nine() {
    let directory = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", directory.path().join("crash.db").display());
    let port = free_port();
    let (mut server, key) = start(&database, port);
    let key = key.expect("the first start prints the admin key");

    let acknowledged = Arc::new(Mutex::new(Vec::<i64>::new()));
    let senders: Vec<_> = (0..4)
        .map(|thread| {
            let (key, acknowledged) = (key.clone(), acknowledged.clone());
            std::thread::spawn(move || {
                for index in 0..10_000 {
                    let body = format!(
                        "{{\"raw_alert_content\": {{\"title\": \"crash test {thread}-{index}\"}}}}"
                    );
                    match http(
                        port,
                        "POST",
                        "/app/api/v1/investigation/create",
                        &key,
                        Some(&body),
                    ) {
                        Ok((200, answer)) => {
                            let value: serde_json::Value = serde_json::from_str(&answer).unwrap();
                            acknowledged
                                .lock()
                                .unwrap()
                                .push(value["investigation_id"].as_i64().unwrap());
                        }
                        // The server died under us: whatever was not answered 200 makes no promise.
                        _ => return,
                    }
                }
            })
        })
        .collect();
    // Let creates and investigations run, then kill without warning.
    std::thread::sleep(Duration::from_millis(1500));
    server.child.kill().unwrap(); // SIGKILL
    server.child.wait().unwrap();
    for sender in senders {
        sender.join().unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(
        acknowledged.len() > 20,
        "the load reached the server ({} creates)",
        acknowledged.len()
    );

    let (_server, second_key) = start(&database, port);
    assert!(
        second_key.is_none(),
        "a restart does not create another admin"
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut unfinished = acknowledged.clone();
    eprintln!(
        "{} creates were acknowledged before kill -9",
        acknowledged.len()
    );
    while !unfinished.is_empty() {
        assert!(
            Instant::now() < deadline,
            "{} investigations still unfinished: {:?}",
            unfinished.len(),
            &unfinished[..unfinished.len().min(10)]
        );
        unfinished.retain(|id| {
            let (status, body) = http(
                port,
                "GET",
                &format!("/app/api/v1/investigation/{id}"),
                &key,
                None,
            )
            .unwrap();
            assert_eq!(
                status, 200,
                "acknowledged investigation {id} must exist: {body}"
            );
            let value: serde_json::Value = serde_json::from_str(&body).unwrap();
            !matches!(value["status"].as_str(), Some("success" | "error"))
        });
        if !unfinished.is_empty() {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// Pids of the processes whose real uid is `uid`.
fn processes_of(uid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/status"))
                .unwrap_or_default()
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().next()?.parse::<u32>().ok())
                == Some(uid)
        })
        .collect()
}

fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|error| panic!("{error}: {body}"))
}

#[test]
fn a_script_dies_with_its_server_and_its_run_ends_at_the_next_start() {
    let directory = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", directory.path().join("scripts.db").display());
    let work_root = directory.path().join("runs");
    // A slot uid of this test's own, far from any user and from other tests' ranges.
    let uid_base = 2_300_000_000 + (std::process::id() % 100_000) * 10;
    let environment = [
        ("SLEUTH_SANDBOX__WORK_ROOT", work_root.display().to_string()),
        ("SLEUTH_SANDBOX__UID_BASE", uid_base.to_string()),
        ("SLEUTH_SANDBOX__SLOTS", "1".to_string()),
    ];
    let port = free_port();
    let (mut server, key) = start_with(&database, port, &environment);
    let key = key.expect("the first start prints the admin key");

    let (_, triggers) = http(
        port,
        "GET",
        "/app/api/v1/response-actions/triggers",
        &key,
        None,
    )
    .unwrap();
    let trigger = json(&triggers)
        .as_array()
        .unwrap()
        .iter()
        .find(|trigger| trigger["trigger_fn_name"] == "manual_entity_host")
        .unwrap()["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let body = serde_json::json!({
        "display_name": "Sleeps through a crash",
        "trigger_def_uuid": trigger,
        "code": "import time\nprint('started', flush=True)\ntime.sleep(25)",
    });
    let (status, created) = http(
        port,
        "POST",
        "/app/api/v1/response-actions",
        &key,
        Some(&body.to_string()),
    )
    .unwrap();
    assert_eq!(status, 201, "{created}");
    let script_id = json(&created)["id"].as_i64().unwrap();
    let runs_path = format!("/app/api/v1/response-actions/{script_id}/runs");
    let (status, started) = http(
        port,
        "POST",
        &format!("/app/api/v1/response-actions/{script_id}/run"),
        &key,
        Some(r#"{"trigger_args": {"entity_value": "WKS-0231"}}"#),
    )
    .unwrap();
    assert_eq!(status, 202, "{started}");

    // The script is running under its slot's uid, in a run dir of its own.
    let deadline = Instant::now() + Duration::from_secs(20);
    while processes_of(uid_base).is_empty() {
        assert!(Instant::now() < deadline, "the script never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(std::fs::read_dir(&work_root).unwrap().count(), 1);

    // kill -9, and leave the dead server unreaped (a zombie), as a supervisor that has not
    // looked yet would: its pid still shows in /proc.
    server.child.kill().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_of(uid_base).is_empty() || std::fs::read_dir(&work_root).unwrap().count() > 0 {
        assert!(
            Instant::now() < deadline,
            "the script outlived its server: {:?}",
            processes_of(uid_base)
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let (second, _) = start_with(&database, port, &environment);
    let (status, runs) = http(port, "GET", &runs_path, &key, None).unwrap();
    assert_eq!(status, 200, "{runs}");
    let run = &json(&runs)[0];
    assert_eq!(run["status"], "error", "ended by the start itself: {run}");
    assert!(
        run["syserr"]
            .as_str()
            .unwrap_or_default()
            .contains("interrupted"),
        "{run}"
    );
    drop(second);
    server.child.wait().unwrap();
}
