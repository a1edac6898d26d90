//! The promise behind a 200: an acknowledged alert survives `kill -9`. This runs the real
//! `sleuth` binary on a SQLite file, creates alerts from several threads, kills the
//! process without warning mid-stream, restarts it, and checks that every acknowledged
//! alert ends in success or error and none is stuck.
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
