//! Issue 3's figures, over real HTTP on loopback with the load generator in the same
//! process (so on the same 2 cores), for SQLite and PostgreSQL:
//!
//! 1. (`creates`) creates per second: 64 keep-alive connections posting distinct 2 KB
//!    alerts;
//! 2. (`latency`) create -> success latency at a paced 1,000 alerts/s with the workers on;
//! 3. (`drain`) the worker pool alone: investigations concluded per second from a queue
//!    filled beforehand;
//! 4. (`lists`) with BENCH_ROWS (default 1,000,000) concluded investigations stored: list with a
//!    filter + sort + page, and a rare-term search; p50/p99 over repeated requests.
//!
//! `cargo bench -p sleuth-cli --bench api` (BENCH_BACKENDS=sqlite,postgres;
//! SLEUTH_TEST_POSTGRES_URL for PostgreSQL; BENCH_ROWS, BENCH_SECONDS to scale;
//! BENCH_PARTS=creates,latency,drain,lists to run some of them; BENCH_LOG, a tracing
//! filter, to log to stderr; BENCH_LATENCY_RUNS to repeat the latency part on fresh
//! databases and print the median of the runs' p50, since on this shared 2-core machine
//! one run's p50 has read anywhere from 12 to 550 ms for the same build).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

#[path = "support/postgres.rs"]
mod postgres;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sleuth_domain::Role;
use sleuth_jobs::Settings;
use sleuth_server::AppState;
use sleuth_store::{NewApiKey, Store};
use sleuth_store_sql::SqlStore;
use support::{connect, percentile, send};

// The shared support's start-up helpers serve the benches that start the binary.
#[allow(dead_code)]
mod support;

/// As the `sleuth` binary does (crates/cli/src/main.rs), so that the figures are the
/// product's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A realistic 2 KB alert, unique per index.
fn alert(index: u64) -> String {
    let padding = "x".repeat(1500);
    format!(
        r#"{{"raw_alert_content": {{"id": "bench-{index}", "title": "Suspicious PowerShell on WKS-{host}", "severity": "high",
        "host": "WKS-{host}", "user": "user{user}@example.com", "src_ip": "203.0.113.{octet}", "created": "2026-03-01T12:00:00Z",
        "command_line": "powershell -enc {padding}"}}}}"#,
        host = index % 500,
        user = index % 300,
        octet = index % 250,
    )
}

/// CPU time this process has used so far, user and system (from /proc/self/stat, in clock
/// ticks of 10 ms). Throughput on a shared machine moves with its neighbours; the CPU
/// spent per create or per investigation moves only with our code.
fn process_cpu() -> Duration {
    Duration::from_secs_f64(support::proc_stat("self").map_or(0.0, |stat| stat.cpu_seconds))
}

fn micros_each(cpu: Duration, count: u64) -> String {
    format!("{:.0} µs", cpu.as_secs_f64() * 1e6 / count.max(1) as f64)
}

struct Bench {
    address: String,
    key: String,
    state: AppState,
    store: Arc<dyn Store>,
    sql: SqlStore,
    _shutdown: tokio::sync::oneshot::Sender<()>,
}

/// `database` names the PostgreSQL database the run drops and recreates: each part has its
/// own, so that two people benchmarking different parts on one server never drop each
/// other's data.
async fn start(backend: &str, directory: &std::path::Path, workers: bool, database: &str) -> Bench {
    let mut settings = Settings::default();
    settings.workers.enabled = workers;
    settings.guards.burst_threshold = 0;
    let sql = match backend {
        "sqlite" => {
            let url = format!("sqlite://{}", directory.join("bench.db").display());
            sleuth_store_sqlite::open(&url, &Default::default())
                .await
                .expect("sqlite")
        }
        _ => {
            let server = std::env::var("SLEUTH_TEST_POSTGRES_URL")
                .expect("SLEUTH_TEST_POSTGRES_URL for the postgres bench");
            let url = postgres::recreate_postgres_database(&server, database).await;
            sleuth_store_postgres::open(&url, &Default::default())
                .await
                .expect("postgres")
        }
    };
    let store: Arc<dyn Store> = Arc::new(sql.clone());
    let state = AppState::new(settings, sleuth_engine::Context::empty());
    state.set_store(store.clone());
    let user = store.create_user(&sleuth_test_user()).await.expect("user");
    let (key, hash, prefix) = sleuth_server::auth::generate_key();
    store
        .create_api_key(&NewApiKey {
            user_id: user.id,
            name: "bench".into(),
            hash,
            prefix,
            tenant_scope: sleuth_store::TenantScope::All,
        })
        .await
        .expect("key");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
    let router = sleuth_server::build(state.clone());
    let limits = sleuth_server::ConnectionLimits::from(&state.settings().server);
    tokio::spawn(async move {
        let _ = sleuth_server::serve(listener, router, limits, async move {
            let _ = stopped.await;
        })
        .await;
    });
    if workers {
        start_workers(&state, &store);
    }
    Bench {
        address,
        key,
        state,
        store,
        sql,
        _shutdown: shutdown,
    }
}

fn start_workers(state: &AppState, store: &Arc<dyn Store>) {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    std::mem::forget(stop);
    tokio::spawn(sleuth_jobs::workers::run_pool(
        state.runtime().clone(),
        store.clone(),
        stopped,
    ));
}

/// Investigations concluded per second by the worker pool alone: `count` alerts are
/// queued first (workers off), then the pool drains the queue; and the process CPU spent
/// per investigation.
async fn drain_rate(bench: &Bench, count: u64) -> (f64, String) {
    let mut sender = connect(&bench.address).await;
    for index in 0..count {
        let (status, _) = send(
            &mut sender,
            "POST",
            "/app/api/v1/investigation/create",
            &bench.key,
            Some(alert(20_000_000 + index)),
        )
        .await;
        assert_eq!(status, 200);
    }
    let started = Instant::now();
    let cpu_before = process_cpu();
    start_workers(&bench.state, &bench.store);
    while bench.store.pending_jobs().await.expect("pending") > 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let cpu = process_cpu() - cpu_before;
    (
        count as f64 / started.elapsed().as_secs_f64(),
        micros_each(cpu, count),
    )
}

fn sleuth_test_user() -> sleuth_store::NewUser {
    sleuth_store::NewUser {
        email: sleuth_domain::EmailAddress::parse("bench@example.com").expect("email"),
        first_name: "Bench".into(),
        last_name: "Mark".into(),
        role: Role::Admin,
        oidc_user_id: None,
        tenant_scope: sleuth_store::TenantScope::All,
    }
}

/// Creates per second with 64 connections for `seconds`, and the process CPU (server and
/// load generator) spent per create.
async fn creates_per_second(bench: &Bench, seconds: u64) -> (f64, String) {
    let counter = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let next_index = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..64 {
        let (address, key, counter, stop, next_index) = (
            bench.address.clone(),
            bench.key.clone(),
            counter.clone(),
            stop.clone(),
            next_index.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut sender = connect(&address).await;
            while !stop.load(Ordering::Relaxed) {
                let index = next_index.fetch_add(1, Ordering::Relaxed);
                let (status, body) = send(
                    &mut sender,
                    "POST",
                    "/app/api/v1/investigation/create",
                    &key,
                    Some(alert(index)),
                )
                .await;
                assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
                counter.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(1)).await; // warm-up
    let start_count = counter.load(Ordering::Relaxed);
    let started = Instant::now();
    let cpu_before = process_cpu();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let done = counter.load(Ordering::Relaxed) - start_count;
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = process_cpu() - cpu_before;
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        let _ = task.await;
    }
    (done as f64 / elapsed, micros_each(cpu, done))
}

/// Paced creates at `rate`/s for `seconds`; returns create->success latencies (the
/// create's round trip plus the time until the investigation is stored as success).
async fn create_to_success(bench: &Bench, rate: u64, seconds: u64) -> Vec<Duration> {
    let total = rate * seconds;
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    let mut senders = Vec::new();
    for _ in 0..16 {
        senders.push(Arc::new(tokio::sync::Mutex::new(
            connect(&bench.address).await,
        )));
    }
    let submitted = Arc::new(tokio::sync::Mutex::new(Vec::<(i64, Instant)>::new()));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for index in 0..total {
        let due = started + interval * u32::try_from(index).expect("small");
        tokio::time::sleep_until(tokio::time::Instant::from_std(due)).await;
        let sender = senders[(index % 16) as usize].clone();
        let (key, submitted) = (bench.key.clone(), submitted.clone());
        tasks.push(tokio::spawn(async move {
            let sent = Instant::now();
            let (status, body) = send(
                &mut *sender.lock().await,
                "POST",
                "/app/api/v1/investigation/create",
                &key,
                Some(alert(10_000_000 + index)),
            )
            .await;
            assert_eq!(status, 200);
            let value: serde_json::Value = serde_json::from_slice(&body).expect("json");
            submitted
                .lock()
                .await
                .push((value["investigation_id"].as_i64().expect("id"), sent));
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    // Wait for the queue to drain, then read each investigation's completion time.
    let deadline = Instant::now() + Duration::from_secs(120);
    while bench.store.pending_jobs().await.expect("pending") > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let submitted = submitted.lock().await.clone();
    let mut latencies = Vec::with_capacity(submitted.len());
    let wall_offset =
        chrono::Utc::now() - chrono::Duration::from_std(started.elapsed()).expect("small");
    for (id, sent) in submitted {
        let record = bench
            .store
            .get_investigation(id)
            .await
            .expect("investigation");
        let generated = record.generated_time.expect("concluded");
        let sent_wall = wall_offset + chrono::Duration::from_std(sent - started).expect("small");
        latencies.push((generated - sent_wall).to_std().unwrap_or(Duration::ZERO));
    }
    latencies.sort();
    latencies
}

/// Fills the database with `rows` concluded investigations, in bulk SQL (test data only).
async fn fill(bench: &Bench, backend: &str, rows: u64) {
    let pool = bench.sql.pool();
    let started = Instant::now();
    let sources = "'CrowdStrike Falcon','AWS GuardDuty','Okta','Microsoft Defender for Endpoint','Splunk','Wazuh','Suricata','Proofpoint TAP'";
    let parsed = r#"{"schema_key":"generic","handler_version":"v2","alert_type":"generic","title":"Suspicious activity @N@","original_title":"Suspicious activity @N@","create_time":"2026-01-01T00:00:00Z","start_time":null,"severity":"high","direct_source_label":"Generic","proxy_source_label":null,"origin_integration":null,"origin_integration_display_name":"Generic","origin_ticket_id":null,"origin_ticket_id_label":null,"origin_ticket_url":null,"entities":[{"type":"host","value":"wks-@N@"}],"assets":{},"coalesce_key":null,"tenant_id":null,"tenant_label":null}"#;
    let result = r#"{"outcome":"COMPLETED_FALSE_ALERT","priority":"informational","conclusion":"Benign administrative activity.","conclusion_summary":null,"alert_summary":null,"exec_summary":null,"attack_surface":null,"mitre_tactic":null,"findings":[],"findings_ranking":{},"key_findings":{},"insight_tags":{},"interview_proposals":{},"recommended_remediations":[],"related_alert_hypothesis":null,"enrich_result":null,"custom_outcome":null,"strategy_effects":{"strategy_version_ids":[],"custom_outcome_id":null,"custom_priority_id":null,"instruction_ids":[]}}"#;
    let base_micros: i64 = 1_767_225_600_000_000; // 2026-01-01
    let numbers = match backend {
        "sqlite" => format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {rows})"
        ),
        // bigint: i * 1000000 (microseconds) overflows int4 past 2,147 rows.
        _ => format!("WITH n(i) AS (SELECT generate_series(1::bigint, {rows}))"),
    };
    // A CASE, not a correlated subquery: SQLite refuses column references in OFFSET.
    let source = format!(
        "CASE i % 8 {} END",
        sources
            .split(',')
            .enumerate()
            .map(|(index, label)| format!("WHEN {index} THEN {label}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let concat = |parts: &[&str]| -> String { parts.join(" || ") };
    let statements = vec![
        format!(
            "{numbers} INSERT INTO alerts (id, identity, tenant_union_id, parsed, raw_alert_content, direct_source_label, created_at, updated_at) \
             SELECT i + 1000000000, {identity}, 1, replace('{parsed}', '@N@', CAST(i AS TEXT)), '{{}}', {source}, {base_micros} + i * 1000000, {base_micros} + i * 1000000 FROM n",
            identity = concat(&["'bench-'", "CAST(i AS TEXT)"]),
        ),
        format!(
            "{numbers} INSERT INTO investigations (id, alert_id, status, outcome, priority, priority_rank, created_at, updated_at, generated_time, start_time, \
             alert_create_time, alert_start_time, alert_type, alert_title, direct_source_label, tenant_union_id, tenant_id, feedback_created_at, feedback_updated_at) \
             SELECT i + 1000000000, i + 1000000000, CASE WHEN i % 50 = 0 THEN 'error' ELSE 'success' END, 'COMPLETED_FALSE_ALERT', \
             CASE i % 3 WHEN 0 THEN 'urgent' WHEN 1 THEN 'notable' ELSE 'informational' END, 3 - (i % 3), \
             {base_micros} + i * 1000000, {base_micros} + i * 1000000, {base_micros} + i * 1000000 + 5000, {base_micros} + i * 1000000, \
             {base_micros} + i * 1000000, {base_micros} + i * 1000000 - 60000000, 'type-' || CAST(i % 40 AS TEXT), \
             'Suspicious activity ' || CAST(i AS TEXT), {source}, 1, \
             'tenant-' || CAST(i % 20 AS TEXT), \
             {base_micros} + i * 1000000, {base_micros} + i * 1000000 FROM n"
        ),
        format!(
            "{numbers} INSERT INTO investigation_results (investigation_id, result) \
             SELECT i + 1000000000, '{result}' FROM n"
        ),
        // One investigation in seven carries an insight tag, for the tag filter; ten carry a
        // rare one as well.
        format!(
            "{numbers} INSERT INTO investigation_tags (name, investigation_id) \
             SELECT 'credential_access', i + 1000000000 FROM n WHERE i % 7 = 0 \
             UNION ALL SELECT 'rare_tag', i + 1000000000 FROM n WHERE i % 100000 = 7007"
        ),
    ];
    for statement in statements {
        sqlx::raw_sql(sqlx::AssertSqlSafe(statement))
            .execute(pool)
            .await
            .expect("bulk insert");
    }
    let search = match backend {
        "sqlite" => format!(
            "{numbers} INSERT INTO investigation_search (rowid, body) SELECT i + 1000000000, \
             'suspicious activity ' || CAST(i AS TEXT) || ' wks ' || CAST(i AS TEXT) || ' benign administrative activity' \
             || CASE WHEN i % 100000 = 7 THEN ' rarezebra' ELSE '' END FROM n"
        ),
        // The same text as SQLite's: the row number is the id less 1,000,000,000.
        _ => "UPDATE investigations SET search_vector = to_tsvector('simple', 'suspicious activity ' || (id - 1000000000) || ' wks ' || (id - 1000000000) \
              || ' benign administrative activity' || CASE WHEN id % 100000 = 7 THEN ' rarezebra' ELSE '' END) WHERE id > 1000000000".to_string(),
    };
    sqlx::raw_sql(sqlx::AssertSqlSafe(search))
        .execute(pool)
        .await
        .expect("search index");
    let analyze = if backend == "sqlite" {
        "ANALYZE"
    } else {
        "VACUUM ANALYZE"
    };
    sqlx::raw_sql(analyze).execute(pool).await.expect("analyze");
    println!(
        "  filled {rows} investigations in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

async fn list_latencies(bench: &Bench, path: &str, repeats: usize) -> (Vec<Duration>, u64) {
    let mut sender = connect(&bench.address).await;
    let mut latencies = Vec::with_capacity(repeats);
    let mut count = 0;
    for _ in 0..repeats {
        let started = Instant::now();
        let (status, body) = send(&mut sender, "GET", path, &bench.key, None).await;
        latencies.push(started.elapsed());
        assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
        let value: serde_json::Value = serde_json::from_slice(&body).expect("json");
        count = value["count"].as_u64().unwrap_or(0);
    }
    latencies.sort();
    (latencies, count)
}

fn milliseconds(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}

async fn run(backend: &str) {
    let seconds: u64 = std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(5);
    let rows: u64 = std::env::var("BENCH_ROWS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1_000_000);
    let parts =
        std::env::var("BENCH_PARTS").unwrap_or_else(|_| "creates,latency,drain,lists".into());
    let part = |name: &str| parts.split(',').any(|wanted| wanted.trim() == name);
    println!("== {backend}");
    if part("creates") {
        let directory = tempfile::tempdir().expect("temp dir");
        let bench = start(backend, directory.path(), false, "sleuth_bench").await;
        let (rate, cpu) = creates_per_second(&bench, seconds).await;
        println!(
            "  creates: {rate:.0}/s, CPU {cpu} each (64 connections, 2 KB alerts, {seconds} s; target >= 10,000/s on SQLite)"
        );
    }
    if part("drain") {
        let directory = tempfile::tempdir().expect("temp dir");
        let bench = start(backend, directory.path(), false, "sleuth_bench").await;
        let count = 1000 * seconds;
        let (rate, cpu) = drain_rate(&bench, count).await;
        println!(
            "  workers alone: {rate:.0} investigations/s, CPU {cpu} each ({count} queued, default 10 at once)"
        );
    }
    if part("latency") {
        let runs: usize = std::env::var("BENCH_LATENCY_RUNS")
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(1)
            .max(1);
        let mut medians = Vec::with_capacity(runs);
        for _ in 0..runs {
            let directory = tempfile::tempdir().expect("temp dir");
            let bench = start(backend, directory.path(), true, "sleuth_bench").await;
            let latencies = create_to_success(&bench, 1000, seconds).await;
            let median = percentile(&latencies, 0.5);
            println!(
                "  create -> success at 1,000/s: p50 {} p99 {} ({} alerts; target p50 <= 50 ms)",
                milliseconds(median),
                milliseconds(percentile(&latencies, 0.99)),
                latencies.len()
            );
            medians.push(median);
        }
        if runs > 1 {
            medians.sort();
            println!(
                "  create -> success, median of {runs} runs' p50: {}",
                milliseconds(percentile(&medians, 0.5))
            );
        }
    }
    if part("lists") {
        let directory = tempfile::tempdir().expect("temp dir");
        let bench = start(backend, directory.path(), false, "sleuth_bench_lists").await;
        fill(&bench, backend, rows).await;
        let queries = [
            (
                "default list (success, newest first)",
                "/app/api/v1/investigation",
            ),
            (
                "filter source + sort priority + page 3",
                "/app/api/v1/investigation?direct_source_labels=Okta&sort_type=priority&limit=20&offset=40",
            ),
            (
                "filter priority + type, sort inv_complete asc",
                "/app/api/v1/investigation?priority_statuses=urgent&alert_types=type-7&sort_type=inv_complete&sort_dir=asc",
            ),
            (
                "time range + stopped reasons",
                "/app/api/v1/investigation?stopped_reasons=ERROR&alert_create_from=2026-01-05&alert_create_until=2026-01-06",
            ),
            (
                "time range, sort priority",
                "/app/api/v1/investigation?alert_create_from=2026-01-05&alert_create_until=2026-01-06&sort_type=priority",
            ),
            (
                "time range, sort inv_create",
                "/app/api/v1/investigation?alert_create_from=2026-01-05&alert_create_until=2026-01-06&sort_type=inv_create",
            ),
            (
                "time range, sort inv_update",
                "/app/api/v1/investigation?alert_create_from=2026-01-05&alert_create_until=2026-01-06&sort_type=inv_update",
            ),
            (
                "time range, every state, sort inv_complete",
                "/app/api/v1/investigation?alert_create_from=2026-01-05&alert_create_until=2026-01-06&investigation_state=success&investigation_state=error&sort_type=inv_complete",
            ),
            (
                "time range, sort alert_start asc, page 3",
                "/app/api/v1/investigation?alert_create_from=2026-01-05&alert_create_until=2026-01-06&sort_type=alert_start&sort_dir=asc&offset=40",
            ),
            (
                "time range noon to noon (partial days), sort inv_create",
                "/app/api/v1/investigation?alert_create_from=2026-01-05T12:00:00Z&alert_create_until=2026-01-07T12:00:00Z&sort_type=inv_create",
            ),
            (
                "time range noon to noon (partial days), sort inv_create asc",
                "/app/api/v1/investigation?alert_create_from=2026-01-05T12:00:00Z&alert_create_until=2026-01-07T12:00:00Z&sort_type=inv_create&sort_dir=asc",
            ),
            (
                "time range noon to noon (partial days), sort inv_update, page 3",
                "/app/api/v1/investigation?alert_create_from=2026-01-05T12:00:00Z&alert_create_until=2026-01-07T12:00:00Z&sort_type=inv_update&offset=40",
            ),
            (
                "time range 01:00 to 23:00 two days on (partial days of 23 hours)",
                "/app/api/v1/investigation?alert_create_from=2026-01-05T01:00:00Z&alert_create_until=2026-01-07T23:00:00Z",
            ),
            (
                "filter tenant_id, sort inv_update",
                "/app/api/v1/investigation?tenant_id=tenant-3&sort_type=inv_update",
            ),
            (
                "filter insight tag, sort alert_start asc",
                "/app/api/v1/investigation?insight_tag_names=credential_access&sort_type=alert_start&sort_dir=asc",
            ),
            (
                "filter insight tag, newest first",
                "/app/api/v1/investigation?insight_tag_names=credential_access",
            ),
            (
                "filter insight tag + source, sort priority + page 3",
                "/app/api/v1/investigation?insight_tag_names=credential_access&direct_source_labels=Okta&sort_type=priority&offset=40",
            ),
            (
                "filter insight tag, every state, sort inv_complete",
                "/app/api/v1/investigation?insight_tag_names=credential_access&investigation_state=success&investigation_state=error&sort_type=inv_complete",
            ),
            (
                "filter rare insight tag, sort priority",
                "/app/api/v1/investigation?insight_tag_names=rare_tag&sort_type=priority",
            ),
            (
                "filter insight tag + time range",
                "/app/api/v1/investigation?insight_tag_names=credential_access&alert_create_from=2026-01-05&alert_create_until=2026-01-06",
            ),
            (
                "filter insight tag + time range, sort priority",
                "/app/api/v1/investigation?insight_tag_names=credential_access&alert_create_from=2026-01-05&alert_create_until=2026-01-06&sort_type=priority",
            ),
            (
                "filter rare insight tag + time range",
                "/app/api/v1/investigation?insight_tag_names=rare_tag&alert_create_from=2026-01-01&alert_create_until=2026-01-08",
            ),
            (
                "filter two insight tags, a common and a rare one",
                "/app/api/v1/investigation?insight_tag_names=credential_access&insight_tag_names=rare_tag",
            ),
            (
                "filter priority urgent+notable, sort priority",
                "/app/api/v1/investigation?priority_statuses=urgent&priority_statuses=notable&sort_type=priority",
            ),
            (
                "filter alert tenant, every state, sort inv_create",
                "/app/api/v1/investigation?alert_tenants=tenant-5&investigation_state=success&investigation_state=error&sort_type=inv_create",
            ),
            (
                "rare-term search",
                "/app/api/v1/investigation?search=rarezebra",
            ),
            (
                "search an entity",
                "/app/api/v1/investigation?search=wks%20123457",
            ),
        ];
        for (name, path) in queries {
            let (latencies, count) = list_latencies(&bench, path, 200).await;
            println!(
                "  list, {name}: p50 {} p99 {} (count {count}; target p99 <= 20 ms)",
                milliseconds(percentile(&latencies, 0.5)),
                milliseconds(percentile(&latencies, 0.99))
            );
        }
    }
}

fn main() {
    // BENCH_LOG=sqlx::query=debug prints every statement with its time, to stderr.
    if let Ok(filter) = std::env::var("BENCH_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .init();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let backends = std::env::var("BENCH_BACKENDS").unwrap_or_else(|_| "sqlite,postgres".into());
    runtime.block_on(async {
        for backend in backends.split(',') {
            if backend == "postgres" && std::env::var("SLEUTH_TEST_POSTGRES_URL").is_err() {
                println!("== postgres: skipped (set SLEUTH_TEST_POSTGRES_URL)");
                continue;
            }
            run(backend).await;
        }
    });
}
