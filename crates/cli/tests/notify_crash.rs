//! At-least-once notification delivery across `kill -9`: the real `sleuth` binary on a
//! SQLite file tells a slow webhook receiver of every conclusion; it is killed without
//! warning while deliveries are pending, restarted, and every conclusion reaches the
//! receiver (each id at least once; the receiver drops repeats by the idempotency id).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests of the binary must start the binary.
#![allow(clippy::disallowed_methods)]

#[path = "support/sleuth_process.rs"]
mod sleuth_process;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sleuth_process::{Server, free_port, http};

/// Per event id, how many times the receiver was sent it.
type Seen = Arc<Mutex<BTreeMap<String, usize>>>;

/// A webhook receiver that takes `delay` over each request, so deliveries queue up.
fn slow_receiver(delay: Duration) -> (u16, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Seen::default();
    let kept = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let seen = kept.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut event_id = None;
                let mut length = 0_usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':') {
                        match name.trim().to_ascii_lowercase().as_str() {
                            "x-sleuth-event-id" => event_id = Some(value.trim().to_string()),
                            "content-length" => length = value.trim().parse().unwrap_or(0),
                            _ => {}
                        }
                    }
                }
                let mut body = vec![0_u8; length];
                if reader.read_exact(&mut body).is_err() {
                    return;
                }
                std::thread::sleep(delay);
                if let Some(event_id) = event_id {
                    *seen.lock().unwrap().entry(event_id).or_default() += 1;
                }
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
            });
        }
    });
    (port, seen)
}

fn start(database: &str, port: u16) -> (Server, Option<String>) {
    sleuth_process::start(
        database,
        port,
        &[
            ("SLEUTH_WORKERS__LEASE_SECONDS", "2".to_string()),
            ("SLEUTH_WORKERS__POLL_INTERVAL_MS", "100".to_string()),
            ("SLEUTH_LOG__LEVEL", "warn".to_string()),
            // 32 bytes, base64: the key that seals the webhook's secrets.
            (
                "SLEUTH_SECRETS__KEY",
                "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=".to_string(),
            ),
            ("SLEUTH_NOTIFICATIONS__TICK_MS", "50".to_string()),
            ("SLEUTH_NOTIFICATIONS__LEASE_SECONDS", "1".to_string()),
            (
                "SLEUTH_NOTIFICATIONS__RETRY_FIRST_DELAY_MS",
                "50".to_string(),
            ),
            (
                "SLEUTH_NOTIFICATIONS__RETRY_MAX_DELAY_MS",
                "500".to_string(),
            ),
            ("SLEUTH_NOTIFICATIONS__BATCH", "10".to_string()),
        ],
    )
}

fn call(port: u16, method: &str, path: &str, key: &str, body: &str) -> serde_json::Value {
    let (status, text) = http(port, method, path, key, Some(body)).unwrap();
    assert!(
        (200..300).contains(&status),
        "{method} {path}: {status} {text}"
    );
    serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
}

#[test]
fn every_conclusion_is_delivered_across_kill_minus_nine() {
    const ALERTS: usize = 60;
    let directory = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", directory.path().join("notify.db").display());
    let (receiver_port, seen) = slow_receiver(Duration::from_millis(50));
    let port = free_port();
    let (mut server, key) = start(&database, port);
    let key = key.expect("the first start prints the admin key");

    let secrets = "/app/api/v1/response-actions/secrets";
    let url = format!("http://127.0.0.1:{receiver_port}/hooks/sleuth");
    call(
        port,
        "PUT",
        &format!("{secrets}/HOOK_URL"),
        &key,
        &serde_json::json!({"value": url}).to_string(),
    );
    call(
        port,
        "PUT",
        &format!("{secrets}/HOOK_KEY"),
        &key,
        r#"{"value": "whsec_crash_test"}"#,
    );
    let destination = call(
        port,
        "POST",
        "/app/api/v1/notifications/destinations",
        &key,
        r#"{"name": "soc", "kind": "webhook",
            "settings": {"url_secret": "HOOK_URL", "signing_secret": "HOOK_KEY"},
            "rule": {"events": ["investigation.concluded"]}}"#,
    );
    let destination_id = destination["id"].as_i64().unwrap();
    for index in 0..ALERTS {
        let body = format!(
            "{{\"raw_alert_content\": {{\"title\": \"notify crash {index}\", \"id\": \"crash-{index}\"}}}}"
        );
        call(
            port,
            "POST",
            "/app/api/v1/investigation/create",
            &key,
            &body,
        );
    }

    // Kill while the receiver is part-way through.
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.lock().unwrap().len() < 10 {
        assert!(Instant::now() < deadline, "no delivery started");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.child.kill().unwrap(); // SIGKILL
    server.child.wait().unwrap();
    let before = seen.lock().unwrap().len();
    eprintln!("{before} of {ALERTS} events had reached the receiver at kill -9");
    assert!(before < ALERTS, "deliveries were still pending at the kill");

    let (_server, second_key) = start(&database, port);
    assert!(second_key.is_none());
    let deadline = Instant::now() + Duration::from_secs(120);
    while seen.lock().unwrap().len() < ALERTS {
        assert!(
            Instant::now() < deadline,
            "only {} of {ALERTS} events arrived after the restart",
            seen.lock().unwrap().len()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let repeats: usize = seen.lock().unwrap().values().map(|count| count - 1).sum();
    eprintln!("every event arrived; {repeats} repeat(s) dropped by the receiver");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let state = call(
            port,
            "GET",
            &format!("/app/api/v1/notifications/destinations/{destination_id}"),
            &key,
            "",
        );
        assert_eq!(state["state"]["dead"], 0, "{state}");
        if state["state"]["delivered"] == ALERTS && state["state"]["pending"] == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{state}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
