//! The overload bench (issue 29, point 3): the real `sleuth` binary as a child process,
//! flooded with lists of large alerts and with creates from many threads at once, while one
//! more thread asks `/readyz` throughout. Prints the process's resident memory before, at
//! its peak and after the flood, how many requests were shed (503), and the readiness
//! latencies during the flood.
//!
//! `cargo bench -p sleuth-cli --bench overload [-- postgres] [-- seconds=N]`; PostgreSQL
//! reads `SLEUTH_TEST_POSTGRES_URL` and makes a database of its own there.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::print_stdout)] // A benchmark prints its figures.
// A bench of the binary must start the binary.
#![allow(clippy::disallowed_methods)]

#[path = "support/postgres.rs"]
mod postgres;

#[path = "../tests/support/sleuth_process.rs"]
mod sleuth_process;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sleuth_process::{free_port, http};

/// Stored alerts, each with this much free text: the lists of the flood carry them.
const LARGE_ALERTS: usize = 100;
const LARGE_ALERT_BYTES: usize = 500 * 1024;
const LIST_THREADS: usize = 64;
const CREATE_THREADS: usize = 32;
const ALL_STATES: &str = "investigation_state=not_asked&investigation_state=loading&investigation_state=success&investigation_state=error";

/// Resident memory of `pid`, in MiB.
fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| {
            value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn milliseconds(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    shed: AtomicU64,
    other: AtomicU64,
    failed: AtomicU64,
}

impl Tally {
    fn count(&self, answer: std::io::Result<(u16, String)>) {
        let counter = match answer {
            Ok((200, _)) => &self.ok,
            Ok((503, _)) => &self.shed,
            Ok(_) => &self.other,
            Err(_) => &self.failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn line(&self, what: &str) -> String {
        let ok = self.ok.load(Ordering::Relaxed);
        let shed = self.shed.load(Ordering::Relaxed);
        let other = self.other.load(Ordering::Relaxed);
        let failed = self.failed.load(Ordering::Relaxed);
        let total = (ok + shed + other + failed).max(1);
        format!(
            "{what:<8} {total:>7} requests: {ok} answered 200, {shed} shed 503 ({:.1}%), {other} other, {failed} connection errors",
            100.0 * shed as f64 / total as f64
        )
    }
}

fn run(backend: &str, seconds: u64) {
    let directory = tempfile::tempdir().expect("temp dir");
    let database = match backend {
        "postgres" => {
            let url = std::env::var("SLEUTH_TEST_POSTGRES_URL")
                .expect("SLEUTH_TEST_POSTGRES_URL for the PostgreSQL run");
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(postgres::recreate_postgres_database(
                &url,
                "sleuth_overload",
            ))
        }
        _ => format!("sqlite://{}", directory.path().join("sleuth.db").display()),
    };
    let port = free_port();
    let (server, key) = sleuth_process::start(
        &database,
        port,
        &[("SLEUTH_LOG__LEVEL", "error".to_string())],
    );
    let key = key.expect("the first admin key");
    let pid = server.child.id();
    let padding = "z".repeat(LARGE_ALERT_BYTES);
    for index in 0..LARGE_ALERTS {
        let body = format!(
            r#"{{"raw_alert_content": {{"id": "large-{index}", "title": "Large alert {index}", "description": "{padding}"}}}}"#
        );
        let (status, _) = http(
            port,
            "POST",
            "/app/api/v1/investigation/create",
            &key,
            Some(&body),
        )
        .expect("create a large alert");
        assert_eq!(status, 200, "create a large alert");
    }
    std::thread::sleep(Duration::from_secs(3));
    let before = rss_mib(pid);
    let (status, body) = http(
        port,
        "GET",
        &format!("/app/api/v1/investigation?{ALL_STATES}&limit=100"),
        &key,
        None,
    )
    .expect("one list");
    println!(
        "{backend}: {LARGE_ALERTS} alerts of {} KiB stored; one list of limit=100 answers {status} with {:.1} MiB",
        LARGE_ALERT_BYTES / 1024,
        body.len() as f64 / 1024.0 / 1024.0
    );

    let stop = Arc::new(AtomicBool::new(false));
    let lists = Arc::new(Tally::default());
    let creates = Arc::new(Tally::default());
    let peak = Arc::new(Mutex::new(before));
    let mut threads = Vec::new();
    for _ in 0..LIST_THREADS {
        let (key, stop, lists) = (key.clone(), stop.clone(), lists.clone());
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                lists.count(http(
                    port,
                    "GET",
                    &format!("/app/api/v1/investigation?{ALL_STATES}&limit=100"),
                    &key,
                    None,
                ));
            }
        }));
    }
    let next_index = Arc::new(AtomicU64::new(0));
    for _ in 0..CREATE_THREADS {
        let (key, stop, creates, next_index) = (
            key.clone(),
            stop.clone(),
            creates.clone(),
            next_index.clone(),
        );
        threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let index = next_index.fetch_add(1, Ordering::Relaxed);
                let body = format!(
                    r#"{{"raw_alert_content": {{"id": "flood-{index}", "title": "Flood alert {index}", "host": "WKS-{}"}}}}"#,
                    index % 500
                );
                creates.count(http(
                    port,
                    "POST",
                    "/app/api/v1/investigation/create",
                    &key,
                    Some(&body),
                ));
            }
        }));
    }
    let readiness = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut latencies = Vec::new();
            let mut not_ok = 0_u64;
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let answer = http(port, "GET", "/readyz", "", None);
                latencies.push(started.elapsed());
                if !matches!(answer, Ok((200, _))) {
                    not_ok += 1;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            (latencies, not_ok)
        })
    };
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let now = rss_mib(pid);
                let mut peak = peak.lock().unwrap();
                *peak = peak.max(now);
                drop(peak);
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread.join().unwrap();
    }
    let (mut latencies, not_ok) = readiness.join().unwrap();
    sampler.join().unwrap();
    let flood_ended = Instant::now();
    let peak = *peak.lock().unwrap();
    latencies.sort();
    println!(
        "{backend}: flood of {seconds} s, {LIST_THREADS} threads listing limit=100, {CREATE_THREADS} threads creating"
    );
    println!("{}", lists.line("lists"));
    println!("{}", creates.line("creates"));
    println!(
        "{backend}: /readyz during the flood: {} asked, {not_ok} not 200; p50 {}, p99 {}, max {}",
        latencies.len(),
        milliseconds(percentile(&latencies, 0.5)),
        milliseconds(percentile(&latencies, 0.99)),
        milliseconds(latencies.last().copied().unwrap_or_default()),
    );
    let mut after = Vec::new();
    for wait in [1, 5, 10] {
        let until = flood_ended + Duration::from_secs(wait);
        std::thread::sleep(until.saturating_duration_since(Instant::now()));
        after.push(format!("{:.0} MiB at {wait} s", rss_mib(pid)));
    }
    println!(
        "{backend}: resident memory: {before:.0} MiB before, {peak:.0} MiB peak, after the flood {}",
        after.join(", ")
    );
}

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let seconds = arguments
        .iter()
        .find_map(|argument| argument.strip_prefix("seconds="))
        .and_then(|value| value.parse().ok())
        .unwrap_or(20);
    let backend = if arguments.iter().any(|argument| argument == "postgres") {
        "postgres"
    } else {
        "sqlite"
    };
    run(backend, seconds);
}
