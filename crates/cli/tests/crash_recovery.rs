//! The promise behind a 200: an acknowledged alert survives `kill -9`. This runs the real
//! `sleuth` binary on a SQLite file, creates alerts from several threads, kills the
//! process without warning mid-stream, restarts it, and checks that every acknowledged
//! alert ends in success or error and none is stuck. And the other side of a crash: a
//! response script dies with the process that started it, and its run is ended at once
//! by the next start.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests of the binary must start the binary.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

struct Server {
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `sleuth serve`; returns it and, on a fresh database, the first admin key.
fn start(database: &str, port: u16) -> (Server, Option<String>) {
    start_with(database, port, &[])
}

/// `start`, with more settings in the environment.
fn start_with(
    database: &str,
    port: u16,
    environment: &[(&str, String)],
) -> (Server, Option<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sleuth"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--database",
            database,
        ])
        .env("SLEUTH_WORKERS__LEASE_SECONDS", "2")
        .env("SLEUTH_WORKERS__POLL_INTERVAL_MS", "100")
        .env("SLEUTH_LOG__LEVEL", "warn")
        .envs(environment.iter().map(|(name, value)| (name, value)))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start sleuth");
    let stdout = child.stdout.take().unwrap();
    let key = Arc::new(Mutex::new(None));
    let found = key.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(start) = line.find("sleuth_") {
                let candidate: String = line[start..]
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '"')
                    .collect();
                if candidate.len() == 50 {
                    *found.lock().unwrap() = Some(candidate);
                }
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok((200, _)) = http(port, "GET", "/readyz", "", None) {
            std::thread::sleep(Duration::from_millis(100));
            return (Server { child }, key.lock().unwrap().clone());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("sleuth did not become ready");
}

fn http(
    port: u16,
    method: &str,
    path: &str,
    key: &str,
    body: Option<&str>,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: {key}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default();
    Ok((status, body))
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
