//! What asking the data sources costs an investigation. One loopback VirusTotal (the
//! shipped definition, v3 answer shapes) is configured; the same backlog of generic EDR
//! alerts (one SHA-256 each, from a pool of 50 files, as a fleet sees the same binaries
//! again and again) is drained by one worker three times on a fresh SQLite store:
//! - with no source;
//! - with the source, every answer already cached (the pool was asked once before);
//! - with the source hanging, after its breaker opened.
//!
//! It prints investigations per second for each, and the p50 and p99 of the gathering
//! step alone with cached answers (the time an investigation waits for its sources).
//!
//! `SLEUTH_BENCH_ALERTS=2000 cargo bench -p sleuth-server --bench data_sources`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // A benchmark fails loudly.
#![allow(clippy::print_stdout)] // A benchmark prints its figures.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, State};
use axum::routing::get;
use serde_json::json;
use sleuth_jobs::Settings;
use sleuth_server::AppState;
use sleuth_store::{NewDataSource, Store};

const SECRET_NAME: &str = "virustotal_api_key";
const FILES: usize = 50;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// A loopback VirusTotal that answers every file, or hangs when told to.
async fn virustotal(hang: Arc<AtomicBool>) -> String {
    async fn file(
        State(hang): State<Arc<AtomicBool>>,
        Path(hash): Path<String>,
    ) -> axum::Json<serde_json::Value> {
        if hang.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        axum::Json(json!({"data": {"type": "file", "id": hash, "attributes": {
            "last_analysis_stats": {"harmless": 0, "malicious": 3, "suspicious": 0, "undetected": 69},
            "tags": ["peexe"]}}}))
    }
    let router = Router::new()
        .route("/api/v3/files/{hash}", get(file))
        .with_state(hang);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{address}/api/v3")
}

/// The SHA-256 of file number `file` (a real-looking digest: a run of zeros reads as a
/// placeholder and is not an entity).
fn sha256(file: usize) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(file.to_le_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// `count` alerts named by `round`, the file of alert `index` being `file(index)`.
async fn backlog(
    store: &Arc<dyn Store>,
    round: &str,
    count: usize,
    file: impl Fn(usize) -> String,
) {
    for index in 0..count {
        let raw = json!({
            "title": format!("Suspicious process on wks-{:04}", index % 700),
            "alert_id": format!("{round}-{index}"),
            "created_at": chrono::Utc::now().to_rfc3339(),
            "host": format!("wks-{:04}", index % 700),
            "user": format!("user{}", index % 900),
            "process_name": "updater.exe",
            "sha256": file(index),
        });
        let parsed = sleuth_parsers::parse_alert(None, &raw, chrono::Utc::now()).unwrap();
        store
            .create_investigation(
                sleuth_test_support::fixtures::new_alert(parsed, raw, None),
                false,
            )
            .await
            .unwrap();
    }
}

/// Drains the backlog; returns investigations per second.
async fn drain(state: &AppState, store: &Arc<dyn Store>, count: usize) -> f64 {
    let started = Instant::now();
    let ran = sleuth_jobs::workers::drain(state, store).await.unwrap();
    assert_eq!(ran, count);
    count as f64 / started.elapsed().as_secs_f64()
}

fn percentile(sorted: &[Duration], fraction: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index].as_secs_f64() * 1000.0
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(run());
}

async fn run() {
    let count = env_number("SLEUTH_BENCH_ALERTS", 2000);
    let directory = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", directory.path().join("bench.db").display());
    let store: Arc<dyn Store> = Arc::new(
        sleuth_store_sqlite::open(&url, &Default::default())
            .await
            .unwrap(),
    );
    let mut settings = Settings::default();
    settings.workers.enabled = false;
    // Every alert is investigated: the storm guards are not what this measures.
    settings.guards.burst_threshold = 0;
    settings.guards.coalesce_window_seconds = 0;
    settings.secrets.key = Some(sleuth_jobs::settings::Redacted::new(
        sleuth_jobs::secret_keys::SecretKey::generate(),
    ));
    let keyring = sleuth_jobs::secret_keys::Keyring::from_settings(&settings.secrets)
        .unwrap()
        .unwrap();
    let sealed = keyring.seal(SECRET_NAME, &sleuth_store::SecretValue("bench-key".into()));
    store
        .set_script_secret(SECRET_NAME, &sealed, chrono::Utc::now())
        .await
        .unwrap();
    let state = AppState::new(settings, sleuth_engine::Context::empty());
    state.set_keyring(keyring);
    state.set_store(store.clone());

    println!(
        "data sources bench: {count} alerts a round, {FILES} distinct files, SQLite, one worker"
    );
    let pooled = |index: usize| sha256(index % FILES);
    // The first investigations of a process set things up (the shipped strategies).
    backlog(&store, "prime", FILES, pooled).await;
    drain(&state, &store, FILES).await;
    backlog(&store, "none", count, pooled).await;
    let none = drain(&state, &store, count).await;
    println!("  no source:                 {none:>8.1} investigations/s");

    let hang = Arc::new(AtomicBool::new(false));
    let base_url = virustotal(hang.clone()).await;
    let (definition, _) =
        sleuth_jobs::data_sources::shipped("virustotal", Some(&base_url)).unwrap();
    store
        .create_data_source(&NewDataSource {
            name: "vt".into(),
            definition,
            limits: json!({"timeout_seconds": 1, "cache_ttl_seconds": 86400,
                           "breaker_failures": 3, "breaker_cooldown_seconds": 3600}),
            tenant_union_id: None,
            enabled: true,
            created_by: None,
            at: chrono::Utc::now(),
        })
        .await
        .unwrap();
    // Every file asked once, so the next round is answered from the cache.
    backlog(&store, "warm", FILES, pooled).await;
    drain(&state, &store, FILES).await;

    backlog(&store, "cached", count, pooled).await;
    let cached = drain(&state, &store, count).await;
    println!(
        "  one source, all cached:    {cached:>8.1} investigations/s ({:.0} % of no source)",
        cached / none * 100.0
    );
    let sources = state.data_sources().unwrap();
    let mut waits = Vec::with_capacity(count);
    for index in 0..count {
        let raw = json!({"title": "Suspicious process on wks-0001", "host": "wks-0001",
                         "process_name": "updater.exe", "sha256": sha256(index % FILES)});
        let parsed = sleuth_parsers::parse_alert(None, &raw, chrono::Utc::now()).unwrap();
        let started = Instant::now();
        let facts = sources
            .gather(
                &state.settings().data_sources,
                state.metrics(),
                &store,
                &parsed,
                1,
            )
            .await;
        waits.push(started.elapsed());
        assert_eq!(facts.answers.len(), 1);
    }
    waits.sort();
    println!(
        "  gathering, all cached:     p50 {:.3} ms, p99 {:.3} ms",
        percentile(&waits, 0.5),
        percentile(&waits, 0.99)
    );

    // The source hangs: the first investigations each wait for a timeout until the breaker
    // opens; then the round is measured.
    hang.store(true, Ordering::SeqCst);
    let unseen = |index: usize| sha256(FILES + index);
    for index in 0..3 {
        let raw = json!({"title": "Suspicious process on wks-0001", "alert_id": format!("open-{index}"),
                         "host": "wks-0001", "process_name": "updater.exe", "sha256": unseen(index)});
        let parsed = sleuth_parsers::parse_alert(None, &raw, chrono::Utc::now()).unwrap();
        store
            .create_investigation(
                sleuth_test_support::fixtures::new_alert(parsed, raw, None),
                false,
            )
            .await
            .unwrap();
    }
    let opening = Instant::now();
    drain(&state, &store, 3).await;
    println!(
        "  breaker opening:           3 investigations in {:.2} s (1 s timeout each)",
        opening.elapsed().as_secs_f64()
    );
    backlog(&store, "hang", count, |index| unseen(3 + index)).await;
    let hanging = drain(&state, &store, count).await;
    println!(
        "  one source hanging, open:  {hanging:>8.1} investigations/s ({:.0} % of no source)",
        hanging / none * 100.0
    );
}
