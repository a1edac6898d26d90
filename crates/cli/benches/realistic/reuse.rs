//! Lists and search on a database seeded once (BENCH_REUSE_DATABASE): seeding a million
//! investigations through the binary takes the better part of an hour, measuring them a
//! minute, so the two are apart. The database is a SQLite file (a path, or a sqlite://
//! URL) or a PostgreSQL database (a postgres:// URL of a database that exists).
//!
//! Each run mints an admin key with `sleuth apikey create` (so no key is kept anywhere),
//! then, with BENCH_SEED_ALERTS, creates that many more alerts of the workload with the
//! workers off, skipping the first BENCH_SEED_SKIP of the stream (what earlier runs
//! sent, so a seeding resumed continues the stream instead of repeating it); on
//! PostgreSQL runs `VACUUM (ANALYZE)`, which autovacuum does on its own but may be off (as
//! on the machine these figures were first printed on), printing whether it is; then
//! drains whatever is queued (PostgreSQL: BENCH_WORKER_PROCESSES `sleuth worker`
//! processes, default 2); on PostgreSQL analyzes again; and measures the lists
//! (`measure_lists`) with nothing left to conclude (BENCH_NO_DRAIN=1 leaves the queue as
//! it is; BENCH_DRAIN_SECONDS drains only that long, printing the rate at the size
//! stored, then measures the lists on a server restarted with its workers off, so that
//! on SQLite the drain does not go on under them).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use sleuth_workload::{Settings as WorkloadSettings, Workload};

use super::{Server, count, create, drain, env_number, load_average, measure_lists};

/// Every state: the count of this list is everything stored.
const EVERY_STATE: &str = "investigation_state=not_asked&investigation_state=loading\
                           &investigation_state=success&investigation_state=error";

/// How many alerts a seeding run creates between two progress lines.
const CHUNK: u64 = 50_000;

pub(crate) async fn run(database: &str) {
    let (backend, url) = if database.starts_with("postgres://") {
        ("postgres", database.to_string())
    } else {
        let path = database.strip_prefix("sqlite://").unwrap_or(database);
        if let Some(parent) = std::path::Path::new(path).parent() {
            std::fs::create_dir_all(parent).expect("the database's directory");
        }
        ("sqlite", format!("sqlite://{path}"))
    };
    let key = mint_key(&url);
    let (server, _) = Server::start(&url, false).await;
    let stored = count(&server, &key, EVERY_STATE).await;
    println!(
        "\n== {backend}, reused: {stored} stored, load {}",
        load_average()
    );

    let seeding = env_number("BENCH_SEED_ALERTS", 0);
    if seeding > 0 {
        seed(&server, &key, seeding).await;
    }
    drop(server);

    let processes = if backend == "postgres" {
        env_number("BENCH_WORKER_PROCESSES", 2)
    } else {
        0
    };
    // Before the drain too: a seeding stores in minutes what autovacuum would have
    // analyzed along the way, and without statistics PostgreSQL's plans for the workers'
    // statements are guesses (a drain of 6 investigations/s instead of 156 at 1M).
    if backend == "postgres" {
        analyze_and_say(&url, "before the drain").await;
    }
    // BENCH_NO_DRAIN=1: measure what is stored as it is, queued investigations and all
    // (with BENCH_LIST_STATE=not_asked, the lists of a seeding not drained yet).
    let draining = env_number("BENCH_NO_DRAIN", 0) == 0;
    let (server, workers) = if draining {
        super::start_with_workers(&url, processes).await
    } else {
        (Server::start(&url, false).await.0, Vec::new())
    };
    let queued = count(
        &server,
        &key,
        "investigation_state=not_asked&investigation_state=loading",
    )
    .await;
    let drain_seconds = env_number("BENCH_DRAIN_SECONDS", 0);
    if queued > 0 && draining && drain_seconds > 0 {
        drain_for(&server, &key, &workers, queued, drain_seconds).await;
    } else if queued > 0 && draining {
        let rate = drain(&server, &key, queued).await;
        println!("drain of {queued} queued: {rate:.0} investigations/s");
    }
    drop(workers);
    // The lists run with nothing else running, as on a fresh run: on SQLite the workers
    // are the server's own, and would go on draining under the lists.
    let server = if draining && processes == 0 {
        drop(server);
        Server::start(&url, false).await.0
    } else {
        server
    };
    if backend == "postgres" {
        analyze_and_say(&url, "after the drain, for the lists").await;
    }
    let stored = count(&server, &key, EVERY_STATE).await;
    let repeats = env_number("BENCH_REPEATS", 50).max(1);
    println!(
        "lists on {backend} at {stored} stored, {repeats} requests each, load {}",
        load_average()
    );
    measure_lists(&server, &key, repeats).await;
    println!("load after the lists: {}", load_average());
}

/// Runs `VACUUM (ANALYZE)` on the PostgreSQL database and prints how long it took, and
/// whether autovacuum, which would do it on its own, is on.
pub(crate) async fn analyze_and_say(url: &str, when: &str) {
    let started = Instant::now();
    analyze(url).await;
    println!(
        "VACUUM (ANALYZE) {when}: {:.1} s (autovacuum, which would on its own, is {})",
        started.elapsed().as_secs_f64(),
        autovacuum(url).await
    );
}

/// BENCH_DRAIN_SECONDS: the drain's rate at this many stored without waiting for a
/// million queued investigations to conclude: the workers run for that long, then the
/// investigations concluded meanwhile are counted, with the CPU Sleuth's processes spent.
async fn drain_for(
    server: &Server,
    key: &str,
    workers: &[super::WorkerProcess],
    queued: u64,
    seconds: u64,
) {
    // Stopped ones count as concluded but were not investigated: a seeding sends alerts
    // far faster than real time, so with the default burst guard most of a storm's alerts
    // are stopped (SLEUTH_GUARDS__BURST_THRESHOLD lifts it for the server started here).
    let stopped_before = count(server, key, "investigation_state=error").await;
    let before = super::Spent::now(server, workers);
    let started = Instant::now();
    tokio::time::sleep(std::time::Duration::from_secs(seconds)).await;
    let left = count(
        server,
        key,
        "investigation_state=not_asked&investigation_state=loading",
    )
    .await;
    let elapsed = started.elapsed().as_secs_f64();
    let concluded = queued.saturating_sub(left).max(1);
    let spent = super::Spent::now(server, workers).each_since(before, concluded);
    let stopped = count(server, key, "investigation_state=error")
        .await
        .saturating_sub(stopped_before);
    println!(
        "drain for {elapsed:.0} s of {queued} queued: {concluded} concluded ({stopped} of \
         them stopped, not investigated), {:.0} investigations/s, {spent} in Sleuth's \
         processes, load {}",
        concluded as f64 / elapsed,
        load_average()
    );
}

/// Creates `alerts` alerts of the workload with the workers off, printing progress.
async fn seed(server: &Server, key: &str, alerts: u64) {
    let skip = env_number("BENCH_SEED_SKIP", 0);
    let seed = env_number("BENCH_SEED", 28);
    let connections = env_number("BENCH_CONNECTIONS", 32).max(1);
    let corpus = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../corpus/alerts");
    let mut workload = Workload::new(
        &corpus,
        WorkloadSettings {
            seed,
            ..WorkloadSettings::default()
        },
    )
    .expect("workload");
    for _ in 0..skip {
        workload.next();
    }
    let workload = Arc::new(Mutex::new(workload));
    let started = Instant::now();
    let mut sent = 0;
    while sent < alerts {
        let chunk = CHUNK.min(alerts - sent);
        let (rate, _) = create(&server.address, key, &workload, chunk, connections).await;
        sent += chunk;
        println!(
            "seeded {} of the stream ({sent} this run) in {:.0} s; last {chunk} at {rate:.0}/s, \
             load {}",
            skip + sent,
            started.elapsed().as_secs_f64(),
            load_average()
        );
    }
}

/// A new admin key from `sleuth apikey create`, which prints it alone on its last line.
fn mint_key(url: &str) -> String {
    let output = std::process::Command::new(super::support::sleuth_binary())
        .args([
            "apikey",
            "create",
            "--role",
            "admin",
            "--email",
            "bench@example.com",
            "--name",
            "realistic bench",
            "--database",
            url,
        ])
        .env("SLEUTH_LOG__LEVEL", "warn")
        .output()
        .expect("sleuth apikey create");
    assert!(
        output.status.success(),
        "sleuth apikey create: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .last()
        .expect("a key on the last line")
        .trim()
        .to_string()
}

/// What autovacuum would have done by the time a million investigations are stored: the
/// planner's statistics, and the visibility map that lets an index-only scan skip the
/// table.
async fn analyze(url: &str) {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let mut connection = sqlx::AnyConnection::connect(url).await.expect("postgres");
    sqlx::raw_sql("VACUUM (ANALYZE)")
        .execute(&mut connection)
        .await
        .expect("VACUUM (ANALYZE)");
}

async fn autovacuum(url: &str) -> String {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let mut connection = sqlx::AnyConnection::connect(url).await.expect("postgres");
    sqlx::query_scalar("SELECT setting FROM pg_settings WHERE name = 'autovacuum'")
        .fetch_one(&mut connection)
        .await
        .unwrap_or_else(|_| "unknown".into())
}
