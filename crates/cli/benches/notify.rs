//! Issue 25's figure: what notifications cost the investigation pipeline. The real
//! `sleuth` binary on a SQLite file (or PostgreSQL, below), driven over HTTP on loopback
//! from this process:
//!
//! 1. idle: `sleuth serve` with two webhook destinations and nothing to tell, its SQL
//!    statements counted for BENCH_IDLE_SECONDS (default 60) from its own statement log
//!    (`sqlx::query` at debug): what an idle deliverer costs the database a minute;
//! 2. the drain, twice on fresh databases: BENCH_ALERTS (default 20,000) workload alerts
//!    created with the workers off, then the server restarted (SIGTERM, as a restart
//!    stops it: it gives its destinations' leases back) with its workers on, first
//!    with no destination, then with two webhook destinations (each its own loopback
//!    receiver, answering 200) that want every conclusion. Measured: the CPU time of
//!    Sleuth's process (/proc utime + stime) per concluded investigation, from the
//!    restart until the queue is empty and, with destinations, every conclusion was
//!    delivered to both; and the rate the drain reached. Printed: both CPU figures, their
//!    ratio, and both rates. CPU time, not rates, is the comparison: the generator, the
//!    receivers and other work share this machine's cores. Both drains run the same
//!    alerts (the workload is seeded) on the same binary; the receivers run in this
//!    process, so their CPU is not counted as Sleuth's;
//! 3. statements: the drain twice more, BENCH_STATEMENT_ALERTS alerts (default 2,000; 0
//!    skips it), the process's SQL statements counted from its log, without and with the
//!    two destinations: the statements a delivery costs. A separate pass, because logging
//!    every statement costs CPU the timed drains must not pay.
//!
//! Step 2 runs BENCH_REPEATS pairs (default 3), alternated, and prints each pair's ratio,
//! the ratio of the summed CPU and the median pair: one pair moves by more than the bound.
//!
//! With BENCH_BACKEND=postgres (and SLEUTH_TEST_POSTGRES_URL), steps 2 and 3 run on a
//! fresh PostgreSQL database each, and the CPU compared is Sleuth's process's and the
//! PostgreSQL server's together (on this machine: every `postgres` process); the idle count
//! stays on SQLite.
//!
//! `cargo bench -p sleuth-cli --bench notify` (BENCH_ALERTS; BENCH_SEED; BENCH_IDLE_SECONDS,
//! 0 skips the idle count; BENCH_STATEMENT_ALERTS; BENCH_BACKEND; BENCH_SLEUTH_BIN runs
//! another build of the binary, e.g. an older one to compare with).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]
// A bench of the binary must start the binary.
#![allow(clippy::disallowed_methods)]

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sleuth_workload::{Settings as WorkloadSettings, Workload};
use support::{connect, env_number, load_average, send};

// The shared support's percentiles are not used here.
#[allow(dead_code)]
mod support;

/// 32 bytes, base64: the key that seals the destinations' secrets.
const SECRETS_KEY: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";

/// A running `sleuth serve`, killed when dropped.
struct Server {
    child: Child,
    address: String,
    /// Lines of its log naming a SQL statement, counted when asked for.
    statements: Arc<AtomicU64>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    async fn start(
        database: &str,
        workers: bool,
        count_statements: bool,
    ) -> (Server, Option<String>) {
        let address = support::free_loopback_address();
        let level = if count_statements {
            "warn,sqlx::query=debug"
        } else {
            "warn"
        };
        let mut child = Command::new(support::sleuth_binary())
            .args(["serve", "--listen", &address, "--database", database])
            .env(
                "SLEUTH_WORKERS__ENABLED",
                if workers { "true" } else { "false" },
            )
            .env("SLEUTH_LOG__LEVEL", level)
            .env("SLEUTH_SECRETS__KEY", SECRETS_KEY)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sleuth");
        let key = support::watch_for_first_key(child.stdout.take().unwrap());
        let statements = Arc::new(AtomicU64::new(0));
        let counted = statements.clone();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("sqlx::query") {
                    counted.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        let server = Server {
            child,
            address,
            statements,
        };
        support::wait_until_ready(&server.address).await;
        let key = key.lock().unwrap().clone();
        (server, key)
    }

    /// Stops the server as a restart does (SIGTERM, then waits for it to exit), so that
    /// it gives its destinations' leases back. Dropped instead (SIGKILL), it would keep
    /// them until they expire, and the next server would deliver nothing until then.
    fn stop(mut self) {
        let stopped = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(stopped.success(), "kill -TERM failed");
        let status = self.child.wait().expect("wait for sleuth");
        assert!(status.success(), "sleuth did not stop cleanly: {status}");
    }

    /// CPU time the process has used so far (user and system, all its threads), in
    /// seconds.
    fn cpu_seconds(&self) -> f64 {
        support::proc_stat(&self.child.id().to_string()).map_or(0.0, |stat| stat.cpu_seconds)
    }

    async fn call(
        &self,
        method: &str,
        path: &str,
        key: &str,
        body: Option<String>,
    ) -> serde_json::Value {
        let mut sender = connect(&self.address).await;
        let (status, answer) = send(&mut sender, method, path, key, body).await;
        assert!(
            (200..300).contains(&status),
            "{method} {path}: {status} {}",
            String::from_utf8_lossy(&answer)
        );
        serde_json::from_slice(&answer).unwrap_or(serde_json::Value::Null)
    }
}

/// A webhook receiver on loopback answering 200 to every POST; counts the distinct event
/// ids it was sent (a redelivery counts once, as a receiver deduplicates).
async fn receiver() -> (u16, Arc<Mutex<HashSet<String>>>) {
    use axum::http::HeaderMap;
    let seen: Arc<Mutex<HashSet<String>>> = Arc::default();
    let kept = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap| {
            let kept = kept.clone();
            async move {
                if let Some(id) = headers
                    .get("x-sleuth-event-id")
                    .and_then(|value| value.to_str().ok())
                {
                    kept.lock().unwrap().insert(id.to_string());
                }
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, seen)
}

/// Two webhook destinations wanting every conclusion, each to its own receiver.
async fn two_destinations(server: &Server, key: &str) -> Vec<Arc<Mutex<HashSet<String>>>> {
    let mut receivers = Vec::new();
    for name in ["first", "second"] {
        let (port, seen) = receiver().await;
        let upper = name.to_uppercase();
        for (secret, value) in [
            (
                format!("{upper}_URL"),
                format!("http://127.0.0.1:{port}/hook"),
            ),
            (format!("{upper}_KEY"), format!("whsec_bench_{name}")),
        ] {
            server
                .call(
                    "PUT",
                    &format!("/app/api/v1/response-actions/secrets/{secret}"),
                    key,
                    Some(serde_json::json!({ "value": value }).to_string()),
                )
                .await;
        }
        server
            .call(
                "POST",
                "/app/api/v1/notifications/destinations",
                key,
                Some(
                    serde_json::json!({
                        "name": name,
                        "kind": "webhook",
                        "settings": {"url_secret": format!("{upper}_URL"), "signing_secret": format!("{upper}_KEY")},
                        "rule": {"events": ["investigation.concluded"]},
                    })
                    .to_string(),
                ),
            )
            .await;
        receivers.push(seen);
    }
    receivers
}

/// Posts `count` workload alerts over 16 connections, the workers off.
async fn create(server: &Server, key: &str, workload: &Arc<Mutex<Workload>>, count: u64) {
    let remaining = Arc::new(AtomicU64::new(count));
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (address, key) = (server.address.clone(), key.to_string());
        let (workload, remaining) = (workload.clone(), remaining.clone());
        tasks.push(tokio::spawn(async move {
            let mut sender = connect(&address).await;
            while remaining
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                    left.checked_sub(1)
                })
                .is_ok()
            {
                let alert = workload.lock().unwrap().next().unwrap();
                let mut body = serde_json::json!({ "raw_alert_content": alert.body });
                if let Some(schema_key) = alert.schema_key {
                    body["schema_key"] = schema_key.into();
                }
                let (status, answer) = send(
                    &mut sender,
                    "POST",
                    "/app/api/v1/investigation/create",
                    &key,
                    Some(body.to_string()),
                )
                .await;
                // A delivery of several alerts (an Okta event hook) is refused by design.
                assert!(
                    status == 200 || status == 400,
                    "create: {status} {}",
                    String::from_utf8_lossy(&answer)
                );
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

/// How many investigations of a state filter there are.
async fn count(server: &Server, key: &str, query: &str) -> u64 {
    let page = server
        .call(
            "GET",
            &format!("/app/api/v1/investigation?{query}&limit=1"),
            key,
            None,
        )
        .await;
    page["count"].as_u64().unwrap()
}

/// How many conclusions were recorded (the events the destinations are told of).
async fn conclusions(server: &Server, key: &str) -> u64 {
    let page = server
        .call(
            "GET",
            "/app/api/v1/system-events/list?trigger_name=investigation_completed&limit=1",
            key,
            None,
        )
        .await;
    page["count"].as_u64().unwrap()
}

/// A fresh database of the backend BENCH_BACKEND names (`sqlite`, the default, or
/// `postgres` at SLEUTH_TEST_POSTGRES_URL), gone when dropped.
enum Database {
    Sqlite {
        url: String,
        _directory: tempfile::TempDir,
    },
    Postgres(sleuth_test_support::postgres::TestDatabase),
}

impl Database {
    async fn fresh() -> Database {
        if backend() == "postgres" {
            let database = sleuth_test_support::postgres::fresh_database()
                .await
                .expect("BENCH_BACKEND=postgres wants SLEUTH_TEST_POSTGRES_URL");
            return Database::Postgres(database);
        }
        let directory = tempfile::tempdir().unwrap();
        Database::Sqlite {
            url: format!("sqlite://{}", directory.path().join("bench.db").display()),
            _directory: directory,
        }
    }

    fn url(&self) -> &str {
        match self {
            Database::Sqlite { url, .. } => url,
            Database::Postgres(database) => database.url(),
        }
    }

    /// CPU time of the database server's processes so far, in seconds: none for SQLite,
    /// which runs inside Sleuth's process; for PostgreSQL (on this machine), every
    /// `postgres` process's, and what its exited backends used (the postmaster's waited-for
    /// children). Nothing else uses this PostgreSQL while the bench runs.
    fn server_cpu_seconds(&self) -> f64 {
        if matches!(self, Database::Sqlite { .. }) {
            return 0.0;
        }
        let mut seconds = 0.0;
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(stat) = support::proc_stat(&entry.file_name().to_string_lossy()) else {
                continue;
            };
            if stat.name != "postgres" {
                continue;
            }
            seconds += stat.cpu_seconds;
            let parent_is_postgres =
                support::proc_stat(&stat.parent).is_some_and(|parent| parent.name == "postgres");
            if !parent_is_postgres {
                seconds += stat.children_cpu_seconds;
            }
        }
        seconds
    }
}

/// The backend the drains run on: BENCH_BACKEND, `sqlite` by default.
fn backend() -> String {
    std::env::var("BENCH_BACKEND").unwrap_or_else(|_| "sqlite".into())
}

/// One drain's figures.
struct Drained {
    concluded: u64,
    drain_seconds: f64,
    /// CPU of Sleuth's process from the restart to the empty queue.
    drain_cpu: f64,
    /// CPU of Sleuth's process from the restart until every conclusion was delivered to
    /// every destination (the drain's when there is none).
    total_cpu: f64,
    total_seconds: f64,
    /// SQL statements from the restart until every conclusion was delivered, when they
    /// were counted.
    statements: u64,
}

async fn drain_once(
    with_destinations: bool,
    alerts: u64,
    seed: u64,
    count_statements: bool,
) -> Drained {
    let database = Database::fresh().await;
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus/alerts");
    let workload = Arc::new(Mutex::new(
        Workload::new(
            &corpus,
            WorkloadSettings {
                seed,
                ..WorkloadSettings::default()
            },
        )
        .expect("workload"),
    ));
    let (server, key) = Server::start(database.url(), false, false).await;
    let key = key.expect("the first start prints an admin key");
    let receivers = if with_destinations {
        two_destinations(&server, &key).await
    } else {
        Vec::new()
    };
    create(&server, &key, &workload, alerts).await;
    server.stop();

    let (server, _) = Server::start(database.url(), true, count_statements).await;
    let started = Instant::now();
    let cpu_at_start = server.cpu_seconds() + database.server_cpu_seconds();
    let statements_at_start = server.statements.load(Ordering::Relaxed);
    loop {
        let left = count(
            &server,
            &key,
            "investigation_state=not_asked&investigation_state=loading",
        )
        .await;
        if left == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(3600),
            "the drain did not end"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let drain_seconds = started.elapsed().as_secs_f64();
    let drain_cpu = server.cpu_seconds() + database.server_cpu_seconds() - cpu_at_start;
    let concluded = conclusions(&server, &key).await;
    for seen in &receivers {
        while (seen.lock().unwrap().len() as u64) < concluded {
            assert!(
                started.elapsed() < Duration::from_secs(3600),
                "deliveries did not end: {} of {concluded}",
                seen.lock().unwrap().len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    Drained {
        concluded,
        drain_seconds,
        drain_cpu,
        total_cpu: server.cpu_seconds() + database.server_cpu_seconds() - cpu_at_start,
        total_seconds: started.elapsed().as_secs_f64(),
        statements: server.statements.load(Ordering::Relaxed) - statements_at_start,
    }
}

/// Statements an idle server with two destinations runs in `seconds`, from its own log.
async fn idle_statements(seconds: u64) -> u64 {
    let directory = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", directory.path().join("idle.db").display());
    let (server, key) = Server::start(&database, true, false).await;
    let key = key.expect("the first start prints an admin key");
    let _receivers = two_destinations(&server, &key).await;
    server.stop();
    let (server, _) = Server::start(&database, true, true).await;
    // The first seconds are start-up's (migrations checked, catalog synced).
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = server.statements.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    server.statements.load(Ordering::Relaxed) - before
}

fn per_investigation_ms(cpu: f64, concluded: u64) -> f64 {
    cpu * 1000.0 / concluded.max(1) as f64
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let alerts = env_number("BENCH_ALERTS", 20_000);
    let seed = env_number("BENCH_SEED", 25);
    let idle_seconds = env_number("BENCH_IDLE_SECONDS", 60);
    let statement_alerts = env_number("BENCH_STATEMENT_ALERTS", 2_000);
    // One pair's ratio moves by ±0.15 on this machine: the bound wants several.
    let repeats = env_number("BENCH_REPEATS", 3).max(1);
    println!(
        "notify bench: {} on {} over HTTP on loopback, {} cores, load {}",
        support::sleuth_binary().display(),
        backend(),
        std::thread::available_parallelism().map_or(0, usize::from),
        load_average()
    );
    runtime.block_on(async {
        if idle_seconds > 0 {
            let statements = idle_statements(idle_seconds).await;
            println!(
                "idle, two destinations: {statements} SQL statements in {idle_seconds} s \
                 ({:.0} a minute), all of the process's work",
                statements as f64 * 60.0 / idle_seconds as f64
            );
        }
        if statement_alerts > 0 {
            let without = drain_once(false, statement_alerts, seed, true).await;
            let with = drain_once(true, statement_alerts, seed, true).await;
            let deliveries = 2 * with.concluded;
            println!(
                "statements, {statement_alerts} alerts (a separate pass, every statement logged): \
                 {:.2} per investigation without destinations, {:.2} with two; \
                 {:.3} per delivery ({} more for {deliveries} deliveries)",
                without.statements as f64 / without.concluded.max(1) as f64,
                with.statements as f64 / with.concluded.max(1) as f64,
                (with.statements as f64 - without.statements as f64) / deliveries.max(1) as f64,
                with.statements as i64 - without.statements as i64,
            );
        }
        if alerts == 0 {
            return;
        }
        let mut ratios = Vec::new();
        let (mut cpu_without, mut cpu_with) = (0.0, 0.0);
        let mut slowest_without = f64::MAX;
        for pair in 1..=repeats {
            let without = drain_once(false, alerts, seed, false).await;
            println!(
                "[{pair}/{repeats}] no destination: {} concluded in {:.1} s ({:.0}/s), CPU {:.3} ms per investigation, load {}",
                without.concluded,
                without.drain_seconds,
                without.concluded as f64 / without.drain_seconds,
                per_investigation_ms(without.drain_cpu, without.concluded),
                load_average()
            );
            let with = drain_once(true, alerts, seed, false).await;
            println!(
                "[{pair}/{repeats}] two destinations: {} concluded in {:.1} s ({:.0}/s), every one delivered to both after {:.1} s; \
                 CPU {:.3} ms per investigation to the empty queue, {:.3} ms with every delivery, load {}",
                with.concluded,
                with.drain_seconds,
                with.concluded as f64 / with.drain_seconds,
                with.total_seconds,
                per_investigation_ms(with.drain_cpu, with.concluded),
                per_investigation_ms(with.total_cpu, with.concluded),
                load_average()
            );
            let base = per_investigation_ms(without.total_cpu, without.concluded);
            let told = per_investigation_ms(with.total_cpu, with.concluded);
            println!(
                "[{pair}/{repeats}] CPU per investigation, with / without destinations: \
                 {told:.3} / {base:.3} ms = {:.3}",
                told / base
            );
            ratios.push(told / base);
            cpu_without += base;
            cpu_with += told;
            slowest_without =
                slowest_without.min(without.concluded as f64 / without.drain_seconds);
        }
        ratios.sort_by(f64::total_cmp);
        println!(
            "CPU per investigation, with / without two destinations, {repeats} alternated \
             pair(s): summed {:.3}, median pair {:.3}, pairs {:.3}..{:.3} (the issue's bound: 1.10)",
            cpu_with / cpu_without,
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1]
        );
        if slowest_without < 1000.0 {
            println!(
                "this machine drains below 1,000 investigations a second: the figures are at \
                 the rate it reached"
            );
        }
    });
}
