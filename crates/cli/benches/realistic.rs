//! Issue 28's figures: the real `sleuth` binary, started as a child process, driven over
//! HTTP on loopback with the realistic workload (`sleuth-workload`), per backend:
//!
//! 1. creates with the workers off (BENCH_CONNECTIONS keep-alive connections): creates/s
//!    and each create's p50/p99;
//! 2. the drain: the same server restarted with its workers on (PostgreSQL: with its
//!    workers off and BENCH_WORKER_PROCESSES `sleuth worker` processes, default 2),
//!    investigations concluded per second until none is left queued or loading;
//!    Beside them, the same alerts over the same connections to a bare axum + SQLite
//!    program that only parses, dedupes, stores and enqueues with group commit
//!    (`realistic/bare.rs`): the ratio prices what Sleuth adds to a create;
//! 3. creates with the workers on, then their drain; then creates paced at BENCH_RATE
//!    (default 500) a second for BENCH_LATENCY_SECONDS (default 20), each one's create ->
//!    success latency read from its conclusion time; with BENCH_SOAK_SECONDS (1200 for the
//!    issue's 20 minutes), a soak at BENCH_SOAK_RATE (default 200) a second printing the
//!    server's resident memory over time;
//! 4. lists and a search over everything stored, p50/p99 over BENCH_REPEATS requests each
//!    (on PostgreSQL after `VACUUM (ANALYZE)`, which autovacuum would have done);
//! 5. the server's resident memory and the database's bytes per stored investigation.
//!
//! `cargo bench -p sleuth-cli --bench realistic` (BENCH_ALERTS, default 20,000;
//! BENCH_SLEUTH_BIN runs another build of the binary;
//! BENCH_BACKENDS=sqlite,postgres with SLEUTH_TEST_POSTGRES_URL; BENCH_SEED; BENCH_CONNECTIONS,
//! default 32; BENCH_REPEATS, default 50; BENCH_KEEP_DIR keeps SQLite's database file there
//! for a look afterwards, and keeps PostgreSQL's database, printing its URL;
//! BENCH_REUSE_DATABASE seeds a database once and measures only the lists on it,
//! `realistic/reuse.rs`). The generator runs in this process, on the same cores as the
//! server: its figures are those of the whole machine, printed with its load.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]
// A bench of the binary must start the binary.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sleuth_workload::{Settings as WorkloadSettings, Workload};
use support::{connect, env_number, load_average, percentile, send};

// The baseline lives beside this bench alone, not in the benches' shared support.
#[path = "realistic/bare.rs"]
mod bare;
#[path = "realistic/reuse.rs"]
mod reuse;
// Of the shared `/proc` reading, this bench wants only a process's CPU.
#[allow(dead_code)]
mod support;

/// A running `sleuth serve`, killed when dropped.
struct Server {
    child: Child,
    address: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts the binary on `database` with its workers on or off; returns it and, on a
    /// fresh database, the first admin key it prints.
    async fn start(database: &str, workers: bool) -> (Server, Option<String>) {
        let address = support::free_loopback_address();
        let mut child = Command::new(support::sleuth_binary())
            .args(["serve", "--listen", &address, "--database", database])
            .env(
                "SLEUTH_WORKERS__ENABLED",
                if workers { "true" } else { "false" },
            )
            .env("SLEUTH_LOG__LEVEL", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start sleuth");
        let key = support::watch_for_first_key(child.stdout.take().unwrap());
        let server = Server { child, address };
        support::wait_until_ready(&server.address).await;
        let key = key.lock().unwrap().clone();
        (server, key)
    }

    /// Resident memory of the server process, in MB.
    fn resident_mb(&self) -> f64 {
        resident_mb(&self.child)
    }
}

/// Resident memory of a child process, in MB.
fn resident_mb(child: &Child) -> f64 {
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// CPU time a process has used so far (user and system, all its threads), in seconds:
/// what a drain costs, whatever else the machine is doing meanwhile.
fn cpu_seconds(child: &Child) -> f64 {
    support::proc_stat(&child.id().to_string()).map_or(0.0, |stat| stat.cpu_seconds)
}

/// Bytes a process has caused to be written to storage so far (`write_bytes` of
/// /proc/PID/io): for SQLite, its WAL and the checkpoints into the database file. At a
/// million stored the drain is bound by these writes on this machine's disk, not by the
/// CPU, so a drain prints them beside its CPU.
fn written_bytes(child: &Child) -> u64 {
    std::fs::read_to_string(format!("/proc/{}/io", child.id()))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("write_bytes:"))
        .and_then(|bytes| bytes.trim().parse().ok())
        .unwrap_or(0)
}

/// What Sleuth's processes (the server and the worker processes) have spent so far: CPU
/// seconds and bytes written. PostgreSQL's own are not counted.
#[derive(Debug, Clone, Copy)]
struct Spent {
    cpu_seconds: f64,
    written_bytes: u64,
}

impl Spent {
    fn now(server: &Server, workers: &[WorkerProcess]) -> Spent {
        let children = std::iter::once(&server.child).chain(workers.iter().map(|w| &w.child));
        children.fold(
            Spent {
                cpu_seconds: 0.0,
                written_bytes: 0,
            },
            |spent, child| Spent {
                cpu_seconds: spent.cpu_seconds + cpu_seconds(child),
                written_bytes: spent.written_bytes + written_bytes(child),
            },
        )
    }

    /// "N ms of CPU and M KB written each", for the `concluded` since `before`.
    fn each_since(self, before: Spent, concluded: u64) -> String {
        let concluded = concluded.max(1) as f64;
        format!(
            "{:.2} ms of CPU and {:.0} KB written each",
            (self.cpu_seconds - before.cpu_seconds) * 1000.0 / concluded,
            self.written_bytes.saturating_sub(before.written_bytes) as f64 / 1024.0 / concluded
        )
    }
}

/// A running `sleuth worker` (workers only, no HTTP), killed when dropped.
struct WorkerProcess {
    child: Child,
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl WorkerProcess {
    fn start(database: &str) -> WorkerProcess {
        let child = Command::new(support::sleuth_binary())
            .args(["worker", "--database", database])
            .env("SLEUTH_LOG__LEVEL", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start sleuth worker");
        WorkerProcess { child }
    }
}

/// The server that concludes investigations: on SQLite the one process with its workers
/// on; on PostgreSQL the server with its workers off and `processes` worker processes.
async fn start_with_workers(database: &str, processes: u64) -> (Server, Vec<WorkerProcess>) {
    if processes == 0 {
        let (server, _) = Server::start(database, true).await;
        return (server, Vec::new());
    }
    let (server, _) = Server::start(database, false).await;
    let workers = (0..processes)
        .map(|_| WorkerProcess::start(database))
        .collect();
    (server, workers)
}

/// The database's size on PostgreSQL, in bytes.
async fn postgres_bytes(database: &str) -> u64 {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let mut connection = sqlx::AnyConnection::connect(database)
        .await
        .expect("postgres");
    let bytes: i64 = sqlx::query_scalar("SELECT pg_database_size(current_database())")
        .fetch_one(&mut connection)
        .await
        .expect("database size");
    u64::try_from(bytes).unwrap_or(0)
}

/// Posts `count` alerts of the workload over `connections` connections; returns the
/// creates per second and each create's latency, sorted.
async fn create(
    address: &str,
    key: &str,
    workload: &Arc<Mutex<Workload>>,
    count: u64,
    connections: u64,
) -> (f64, Vec<Duration>) {
    let remaining = Arc::new(std::sync::atomic::AtomicU64::new(count));
    let refused = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (address, key) = (address.to_string(), key.to_string());
        let (workload, remaining) = (workload.clone(), remaining.clone());
        let refused = refused.clone();
        tasks.push(tokio::spawn(async move {
            let mut sender = connect(&address).await;
            let mut latencies = Vec::new();
            loop {
                let taken = remaining.fetch_update(
                    std::sync::atomic::Ordering::Relaxed,
                    std::sync::atomic::Ordering::Relaxed,
                    |left| left.checked_sub(1),
                );
                if taken.is_err() {
                    return latencies;
                }
                let alert = workload.lock().unwrap().next().unwrap();
                let mut body = serde_json::json!({ "raw_alert_content": alert.body });
                if let Some(schema_key) = alert.schema_key {
                    body["schema_key"] = schema_key.into();
                }
                let body = body.to_string();
                let sent = Instant::now();
                let (status, answer) = send(
                    &mut sender,
                    "POST",
                    "/app/api/v1/investigation/create",
                    &key,
                    Some(body),
                )
                .await;
                latencies.push(sent.elapsed());
                // A template that is a delivery of several alerts (an Okta event hook) is
                // refused here by design: counted, and printed with the rate.
                if status == 400 && String::from_utf8_lossy(&answer).contains("one alert per") {
                    refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    continue;
                }
                assert_eq!(
                    status,
                    200,
                    "create of {} #{}: {}",
                    alert.source,
                    alert.sequence,
                    String::from_utf8_lossy(&answer)
                );
            }
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.unwrap());
    }
    let seconds = started.elapsed().as_secs_f64();
    latencies.sort();
    let refused = refused.load(std::sync::atomic::Ordering::Relaxed);
    println!("  ({refused} of {count} refused as deliveries of several alerts)");
    (count as f64 / seconds, latencies)
}

/// Workload creates paced at `rate` a second for `seconds` over 16 connections, calling
/// `tick` with the whole seconds elapsed each time one passes; the accepted creates'
/// investigation ids, each with the wall time it was sent.
async fn paced_creates(
    server: &Server,
    key: &str,
    workload: &Arc<Mutex<Workload>>,
    rate: u64,
    seconds: u64,
    mut tick: impl FnMut(u64),
) -> Vec<(i64, chrono::DateTime<chrono::Utc>)> {
    const CONNECTIONS: usize = 16;
    let mut senders = Vec::new();
    for _ in 0..CONNECTIONS {
        senders.push(Arc::new(tokio::sync::Mutex::new(
            connect(&server.address).await,
        )));
    }
    let total = rate * seconds;
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    let started = tokio::time::Instant::now();
    let mut ticked = 0;
    let mut tasks = Vec::new();
    for index in 0..total {
        tokio::time::sleep_until(started + interval * u32::try_from(index).unwrap()).await;
        let elapsed = started.elapsed().as_secs();
        if elapsed > ticked {
            ticked = elapsed;
            tick(elapsed);
        }
        let alert = workload.lock().unwrap().next().unwrap();
        let mut body = serde_json::json!({ "raw_alert_content": alert.body });
        if let Some(schema_key) = alert.schema_key {
            body["schema_key"] = schema_key.into();
        }
        let sender = senders[index as usize % CONNECTIONS].clone();
        let key = key.to_string();
        tasks.push(tokio::spawn(async move {
            let mut sender = sender.lock().await;
            let sent = chrono::Utc::now();
            let (status, answer) = send(
                &mut sender,
                "POST",
                "/app/api/v1/investigation/create",
                &key,
                Some(body.to_string()),
            )
            .await;
            let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap_or_default();
            (status == 200)
                .then(|| answer["investigation_id"].as_i64())
                .flatten()
                .map(|id| (id, sent))
        }));
    }
    let mut submitted = Vec::new();
    for task in tasks {
        submitted.extend(task.await.unwrap());
    }
    submitted
}

/// Paced creates with the workers on, then, once the queue drained, each investigation's
/// conclusion time as the API reports it (the server's clock, which is this machine's):
/// create -> success latencies, sorted, and how many creates were coalesced into an
/// investigation that concluded before they were sent.
async fn create_to_success(
    server: &Server,
    key: &str,
    workload: &Arc<Mutex<Workload>>,
    rate: u64,
    seconds: u64,
) -> (Vec<Duration>, u64) {
    let submitted = paced_creates(server, key, workload, rate, seconds, |_| {}).await;
    drain(server, key, submitted.len() as u64).await;
    let mut sender = connect(&server.address).await;
    let mut latencies = Vec::new();
    let mut coalesced = 0;
    for (id, sent) in submitted {
        let path = format!("/app/api/v1/investigation/{id}");
        let (status, body) = send(&mut sender, "GET", &path, key, None).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let investigation: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let Some(concluded) = investigation["generated_time"]
            .as_str()
            .and_then(|time| chrono::DateTime::parse_from_rfc3339(time).ok())
        else {
            continue;
        };
        match (concluded.with_timezone(&chrono::Utc) - sent).to_std() {
            Ok(latency) => latencies.push(latency),
            Err(_) => coalesced += 1,
        }
    }
    latencies.sort();
    (latencies, coalesced)
}

/// The soak: paced creates with the workers on for `seconds`, the server's resident memory
/// sampled every `seconds / 10`; prints the samples and the growth after the first tenth
/// (the warm-up: caches and pools filling), which should stay near zero.
async fn soak(
    server: &Server,
    key: &str,
    workload: &Arc<Mutex<Workload>>,
    rate: u64,
    seconds: u64,
) {
    let every = (seconds / 10).max(1);
    let mut samples = vec![(0, server.resident_mb())];
    let submitted = paced_creates(server, key, workload, rate, seconds, |elapsed| {
        if elapsed % every == 0 {
            samples.push((elapsed, server.resident_mb()));
        }
    })
    .await;
    drain(server, key, submitted.len() as u64).await;
    samples.push((seconds, server.resident_mb()));
    let shown: Vec<String> = samples
        .iter()
        .map(|(at, mb)| format!("{at}s {mb:.0}"))
        .collect();
    let warm = samples.get(1).map_or(0.0, |(_, mb)| *mb);
    let last = samples.last().map_or(0.0, |(_, mb)| *mb);
    println!(
        "soak at {rate}/s for {seconds} s, workers on ({} creates): resident MB {}; \
         growth after the first tenth {:+.0} MB",
        submitted.len(),
        shown.join(", "),
        last - warm
    );
}

/// The list's `count` for `query`.
async fn count(server: &Server, key: &str, query: &str) -> u64 {
    let mut sender = connect(&server.address).await;
    let path = format!("/app/api/v1/investigation?{query}&limit=1");
    let (status, body) = send(&mut sender, "GET", &path, key, None).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let page: serde_json::Value = serde_json::from_slice(&body).unwrap();
    page["count"].as_u64().unwrap()
}

/// Waits until nothing is queued or loading; returns investigations per second. A long
/// drain prints what is left every minute.
async fn drain(server: &Server, key: &str, queued: u64) -> f64 {
    let started = Instant::now();
    let mut reported = 0;
    loop {
        let left = count(
            server,
            key,
            "investigation_state=not_asked&investigation_state=loading",
        )
        .await;
        if left == 0 {
            return queued as f64 / started.elapsed().as_secs_f64();
        }
        let minutes = started.elapsed().as_secs() / 60;
        if minutes > reported {
            reported = minutes;
            println!(
                "  drain: {left} left after {minutes} min, load {}",
                load_average()
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(3_600),
            "the drain did not end"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every list and search shape of the table, `repeats` requests each, over one connection:
/// p50 and p99 of each, with the count it answered. BENCH_LISTS (words, comma-separated)
/// measures only the shapes whose name holds one of them; BENCH_LIST_STATE lists that state
/// in every shape that names none.
async fn measure_lists(server: &Server, key: &str, repeats: u64) {
    // Generic alerts carry no time of their own: they were created when they were received.
    let since = |hours: i64| {
        (chrono::Utc::now() - chrono::Duration::hours(hours))
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            .replace('+', "%2B")
    };
    let (hour, day) = (since(1), since(24));
    let queries: Vec<(&str, String)> = vec![
        ("default", String::new()),
        ("a state with no rows", "investigation_state=loading".into()),
        (
            "every state",
            "investigation_state=not_asked&investigation_state=loading&investigation_state=success&investigation_state=error".into(),
        ),
        (
            "priority filter, priority sort",
            "priority_statuses=urgent&priority_statuses=notable&sort_type=priority".into(),
        ),
        (
            "one generic type",
            "alert_types=generic:Suspicious%20PowerShell%20download%20on%20%7Bhost%7D".into(),
        ),
        ("one source", "direct_source_labels=CrowdStrike%20Falcon".into()),
        ("the default tenant union", "alert_tenants=Default".into()),
        (
            "one type, one source",
            "alert_types=generic:Suspicious%20PowerShell%20download%20on%20%7Bhost%7D\
             &direct_source_labels=CrowdStrike%20Falcon"
                .into(),
        ),
        ("page 10", "offset=200&limit=20".into()),
        ("page 500", "offset=10000&limit=20".into()),
        ("sort by completion, ascending", "sort_type=inv_complete&sort_dir=asc".into()),
        ("sort by update", "sort_type=inv_update".into()),
        ("sort by alert start", "sort_type=alert_start".into()),
        ("created in the last hour", format!("alert_create_from={hour}")),
        (
            "last day, priority sort",
            format!("alert_create_from={day}&sort_type=priority"),
        ),
        (
            "last day, one source",
            format!("alert_create_from={day}&direct_source_labels=CrowdStrike%20Falcon"),
        ),
        (
            "completed in the last hour",
            format!("inv_complete_from={hour}&sort_type=inv_complete"),
        ),
        (
            "stopped with an error",
            "investigation_state=error&stopped_reasons=ERROR".into(),
        ),
        ("one insight tag", "insight_tag_names=blocked_by_source".into()),
        (
            "one insight tag, one source",
            "insight_tag_names=blocked_by_source&direct_source_labels=CrowdStrike%20Falcon".into(),
        ),
        (
            "one insight tag, last day",
            format!("insight_tag_names=blocked_by_source&alert_create_from={day}"),
        ),
        ("search, rare word", "search=variant".into()),
        ("search, common word", "search=powershell".into()),
        (
            "search, common word, one source",
            "search=powershell&direct_source_labels=CrowdStrike%20Falcon".into(),
        ),
    ];
    let only: Vec<String> = std::env::var("BENCH_LISTS")
        .map(|words| {
            words
                .split(',')
                .map(|word| word.trim().to_string())
                .collect()
        })
        .unwrap_or_default();
    let state = std::env::var("BENCH_LIST_STATE").ok();
    for (name, mut query) in queries {
        if !only.is_empty() && !only.iter().any(|word| name.contains(word.as_str())) {
            continue;
        }
        if let Some(state) = state.as_deref()
            && !query.contains("investigation_state=")
        {
            let separator = if query.is_empty() { "" } else { "&" };
            query.push_str(&format!("{separator}investigation_state={state}"));
        }
        let mut sender = connect(&server.address).await;
        let mut times = Vec::new();
        let mut total = 0;
        for _ in 0..repeats {
            let path = format!("/app/api/v1/investigation?{query}");
            let sent = Instant::now();
            let (status, body) = send(&mut sender, "GET", &path, key, None).await;
            times.push(sent.elapsed());
            assert_eq!(status, 200, "{name}: {}", String::from_utf8_lossy(&body));
            let page: serde_json::Value = serde_json::from_slice(&body).unwrap();
            total = page["count"].as_u64().unwrap_or(0);
        }
        times.sort();
        println!(
            "list {name:<32} p50 {:>6.1} ms  p99 {:>6.1} ms  (count {total})",
            millis(percentile(&times, 0.5)),
            millis(percentile(&times, 0.99))
        );
    }
}

/// Size of the database's files, for SQLite.
fn database_bytes(path: &std::path::Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            std::fs::metadata(PathBuf::from(name)).ok()
        })
        .map(|metadata| metadata.len())
        .sum()
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

async fn bench(backend: &str, database: &str, file: Option<&std::path::Path>) {
    let alerts = env_number("BENCH_ALERTS", 20_000);
    let connections = env_number("BENCH_CONNECTIONS", 32).max(1);
    let repeats = env_number("BENCH_REPEATS", 50).max(1);
    let seed = env_number("BENCH_SEED", 28);
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus/alerts");
    let new_workload = || {
        Arc::new(Mutex::new(
            Workload::new(
                &corpus,
                WorkloadSettings {
                    seed,
                    ..WorkloadSettings::default()
                },
            )
            .expect("workload"),
        ))
    };
    let workload = new_workload();
    println!(
        "\n== {backend}: {alerts} alerts (seed {seed}), {connections} connections, load {}",
        load_average()
    );

    let (server, key) = Server::start(database, false).await;
    let key = key.expect("the first start prints an admin key");
    let (rate, latencies) = create(&server.address, &key, &workload, alerts, connections).await;
    println!(
        "creates, workers off: {rate:.0}/s, p50 {:.1} ms, p99 {:.1} ms",
        millis(percentile(&latencies, 0.5)),
        millis(percentile(&latencies, 0.99))
    );
    drop(server);
    // The same alerts, the same connections, to the bare program.
    let bare_directory = tempfile::tempdir().unwrap();
    let bare = bare::start(&bare_directory.path().join("bare.db")).await;
    let (bare_rate, bare_latencies) = create(&bare, "", &new_workload(), alerts, connections).await;
    println!(
        "bare axum + SQLite creates: {bare_rate:.0}/s, p50 {:.1} ms, p99 {:.1} ms; \
         Sleuth / bare = {:.2} (target >= 0.5)",
        millis(percentile(&bare_latencies, 0.5)),
        millis(percentile(&bare_latencies, 0.99)),
        rate / bare_rate
    );

    let processes = if backend == "postgres" {
        env_number("BENCH_WORKER_PROCESSES", 2)
    } else {
        0
    };
    let (server, workers) = start_with_workers(database, processes).await;
    let before = Spent::now(&server, &workers);
    let rate = drain(&server, &key, alerts).await;
    let spent = Spent::now(&server, &workers).each_since(before, alerts);
    // Stopped ones (the burst guard's share of each storm) conclude without an
    // investigation, and cost far less: the figure says how many there were.
    let stopped = count(&server, &key, "investigation_state=error").await;
    println!(
        "drain of {alerts} queued ({stopped} of them stopped, not investigated): {rate:.0} \
         investigations/s, {spent} in Sleuth's processes ({})",
        if workers.is_empty() {
            "the server's workers".to_string()
        } else {
            format!(
                "{} worker processes, the server's workers off",
                workers.len()
            )
        }
    );

    let more = (alerts / 4).max(1);
    let (rate, latencies) = create(&server.address, &key, &workload, more, connections).await;
    println!(
        "creates, workers on: {rate:.0}/s, p50 {:.1} ms, p99 {:.1} ms ({more} alerts)",
        millis(percentile(&latencies, 0.5)),
        millis(percentile(&latencies, 0.99))
    );
    let rate = drain(&server, &key, more).await;
    println!("drain after them: {rate:.0} investigations/s (from the last create)");

    let paced_rate = env_number("BENCH_RATE", 500).max(1);
    let paced_seconds = env_number("BENCH_LATENCY_SECONDS", 20).max(1);
    let (latencies, coalesced) =
        create_to_success(&server, &key, &workload, paced_rate, paced_seconds).await;
    println!(
        "create -> success at {paced_rate}/s for {paced_seconds} s, workers on: p50 {:.1} ms, \
         p99 {:.1} ms ({} investigations; {coalesced} coalesced into earlier ones left out; \
         target p50 <= 50 ms at 500/s)",
        millis(percentile(&latencies, 0.5)),
        millis(percentile(&latencies, 0.99)),
        latencies.len()
    );

    let soak_seconds = env_number("BENCH_SOAK_SECONDS", 0);
    let soak_rate = env_number("BENCH_SOAK_RATE", 200).max(1);
    if soak_seconds > 0 {
        soak(&server, &key, &workload, soak_rate, soak_seconds).await;
    }

    let stored = alerts + more + paced_rate * paced_seconds + soak_rate * soak_seconds;
    if backend == "postgres" {
        // What autovacuum would have done by now, were it on: lists planned without
        // statistics measure a PostgreSQL nobody runs.
        reuse::analyze_and_say(database, "before the lists").await;
    }
    measure_lists(&server, &key, repeats).await;
    let resident = server.resident_mb();
    println!("server resident memory: {resident:.0} MB for {stored} stored");
    for (index, worker) in workers.iter().enumerate() {
        let resident = resident_mb(&worker.child);
        println!("worker process {index} resident memory: {resident:.0} MB");
    }
    let bytes = match file {
        Some(file) => database_bytes(file),
        None => postgres_bytes(database).await,
    };
    println!(
        "database: {:.1} MB, {:.0} bytes per stored investigation",
        bytes as f64 / 1e6,
        bytes as f64 / stored as f64
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let backends = std::env::var("BENCH_BACKENDS").unwrap_or_else(|_| "sqlite".into());
    println!(
        "realistic bench: the sleuth binary over HTTP on loopback, {} cores, the generator in \
         this process",
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    runtime.block_on(async {
        if let Ok(database) = std::env::var("BENCH_REUSE_DATABASE") {
            reuse::run(&database).await;
            return;
        }
        for backend in backends.split(',').map(str::trim) {
            match backend {
                "sqlite" => {
                    let directory = tempfile::tempdir().unwrap();
                    let file = match std::env::var("BENCH_KEEP_DIR") {
                        Ok(kept) => {
                            let file = PathBuf::from(kept).join("realistic-bench.db");
                            for suffix in ["", "-wal", "-shm"] {
                                let mut name = file.as_os_str().to_owned();
                                name.push(suffix);
                                let _ = std::fs::remove_file(PathBuf::from(name));
                            }
                            file
                        }
                        Err(_) => directory.path().join("bench.db"),
                    };
                    let url = format!("sqlite://{}", file.display());
                    bench("sqlite", &url, Some(&file)).await;
                }
                "postgres" => {
                    let Some(database) = sleuth_test_support::postgres::fresh_database().await
                    else {
                        println!("postgres: SLEUTH_TEST_POSTGRES_URL is not set; skipped");
                        continue;
                    };
                    bench("postgres", database.url(), None).await;
                    if std::env::var("BENCH_KEEP_DIR").is_ok() {
                        println!("postgres database kept: {}", database.url());
                        // Not dropped, so not dropped from the server either.
                        std::mem::forget(database);
                    }
                }
                other => println!("unknown backend {other}; skipped"),
            }
        }
    });
}
