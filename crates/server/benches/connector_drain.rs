//! A pull connector draining a backlog from its loopback vendor (CrowdStrike's shapes:
//! OAuth2, ids then entities, pages of 1000), stored page by page with the cursor, beside
//! the API's own create rate measured on the same store right after (HTTP on loopback,
//! `SLEUTH_BENCH_CLIENTS` kept-alive connections, one alert per request). Workers are off:
//! both measure getting alerts in, not investigating them.
//!
//! `SLEUTH_BENCH_ALERTS=100000 cargo bench -p sleuth-server --bench connector_drain`
//! (`SLEUTH_BENCH_POSTGRES_URL` also runs it on that PostgreSQL database, which must be
//! empty or throw-away.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // A benchmark fails loudly.
#![allow(clippy::print_stdout)] // A benchmark prints its figures.

#[allow(dead_code)]
#[path = "../tests/api/vendors.rs"]
mod vendors;

use std::sync::Arc;
use std::time::Instant;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use sleuth_domain::Role;
use sleuth_jobs::Settings;
use sleuth_jobs::connector_runtime::{self, PollOptions};
use sleuth_server::AppState;
use sleuth_store::{NewApiKey, NewConnector, Store};
use vendors::{Faults, LoopbackVendor, SECRET, SECRET_NAME, Vendor};

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

async fn state_on(store: Arc<dyn Store>) -> AppState {
    let mut settings = Settings::default();
    settings.workers.enabled = false;
    settings.secrets.key = Some(sleuth_jobs::settings::Redacted::new(
        sleuth_jobs::secret_keys::SecretKey::generate(),
    ));
    let keyring = sleuth_jobs::secret_keys::Keyring::from_settings(&settings.secrets)
        .unwrap()
        .unwrap();
    let sealed = keyring.seal(SECRET_NAME, &sleuth_store::SecretValue(SECRET.to_string()));
    store
        .set_script_secret(SECRET_NAME, &sealed, chrono::Utc::now())
        .await
        .unwrap();
    let state = AppState::new(settings, sleuth_engine::Context::empty());
    state.set_keyring(keyring);
    state.set_store(store);
    state
}

/// Drains `count` alerts; returns alerts per second.
async fn drain(state: &AppState, store: &Arc<dyn Store>, count: usize) -> f64 {
    let loopback = LoopbackVendor::start(Vendor::Crowdstrike, count, Faults::default()).await;
    let now = chrono::Utc::now();
    let connector = store
        .create_connector(&NewConnector {
            name: "bench".into(),
            kind: "crowdstrike".into(),
            settings: Vendor::Crowdstrike.settings(&loopback.address, 1000),
            tenant_union_id: None,
            enabled: true,
            interval_seconds: 300,
            created_by: None,
            at: now,
        })
        .await
        .unwrap();
    assert!(
        store
            .lease_connector(
                connector.id,
                "bench",
                now,
                now + chrono::Duration::minutes(10)
            )
            .await
            .unwrap()
    );
    let (_stop, shutdown) = tokio::sync::watch::channel(false);
    let started = Instant::now();
    let summary = connector_runtime::poll(
        state,
        store,
        connector,
        "bench",
        &shutdown,
        PollOptions {
            lease: chrono::Duration::minutes(10),
            timing: Default::default(),
        },
    )
    .await;
    let elapsed = started.elapsed().as_secs_f64();
    assert_eq!(summary.error, None);
    assert_eq!(summary.taken as usize, count, "{summary:?}");
    println!(
        "  connector: {count} alerts in {} pages, {elapsed:.2} s",
        summary.pages
    );
    count as f64 / elapsed
}

/// Creates `count` alerts over HTTP with `clients` connections; returns creates per second.
async fn creates(state: &AppState, store: &Arc<dyn Store>, count: usize, clients: usize) -> f64 {
    let user = store
        .create_user(&sleuth_test_support::fixtures::new_user(
            "bench@example.com",
            Role::Member,
        ))
        .await
        .unwrap();
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
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let limits = sleuth_server::ConnectionLimits::from(&state.settings().server);
    tokio::spawn(sleuth_server::serve(
        listener,
        sleuth_server::build(state.clone()),
        limits,
        std::future::pending(),
    ));
    // Alerts of the same vendor, distinct from the connector's (a later start time).
    let start = chrono::Utc::now() + chrono::Duration::days(1);
    let bodies: Vec<Bytes> = (0..count)
        .map(|index| {
            let mut alert =
                Vendor::Crowdstrike.alert(index, start + chrono::Duration::seconds(index as i64));
            alert["composite_id"] = serde_json::json!(format!("api:ind:{index:032x}:1"));
            Bytes::from(serde_json::json!({"raw_alert_content": alert}).to_string())
        })
        .collect();
    let bodies = Arc::new(bodies);
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let (address, key, bodies) = (address.clone(), key.clone(), bodies.clone());
            tokio::spawn(async move {
                let stream = tokio::net::TcpStream::connect(&address).await.unwrap();
                stream.set_nodelay(true).unwrap();
                let (mut sender, connection) =
                    hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                        .await
                        .unwrap();
                tokio::spawn(connection);
                for body in bodies.iter().skip(client).step_by(clients) {
                    let request = hyper::Request::builder()
                        .method("POST")
                        .uri("/app/api/v1/investigation/create")
                        .header("host", &address)
                        .header("authorization", &key)
                        .header("content-type", "application/json")
                        .body(Full::new(body.clone()))
                        .unwrap();
                    let response = sender.send_request(request).await.unwrap();
                    let status = response.status();
                    let bytes = response.into_body().collect().await.unwrap().to_bytes();
                    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!("  API create: {count} alerts, {clients} clients, {elapsed:.2} s");
    count as f64 / elapsed
}

async fn run(label: &str, store: Arc<dyn Store>, alerts: usize, api_alerts: usize, clients: usize) {
    println!("{label}:");
    let state = state_on(store.clone()).await;
    let drained = drain(&state, &store, alerts).await;
    let created = creates(&state, &store, api_alerts, clients).await;
    println!("  connector drain {drained:>9.0} alerts/s   API create {created:>9.0} alerts/s");
}

fn main() {
    let alerts = env_number("SLEUTH_BENCH_ALERTS", 100_000);
    let api_alerts = env_number("SLEUTH_BENCH_API_ALERTS", (alerts / 5).max(1));
    let clients = env_number("SLEUTH_BENCH_CLIENTS", 16);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "backlog {alerts} alerts; API creates {api_alerts}; {} cores",
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    let directory = tempfile::tempdir().unwrap();
    runtime.block_on(async {
        let url = format!("sqlite://{}", directory.path().join("bench.db").display());
        let store: Arc<dyn Store> = Arc::new(
            sleuth_store_sqlite::open(&url, &Default::default())
                .await
                .unwrap(),
        );
        run("SQLite", store, alerts, api_alerts, clients).await;
        if let Ok(url) = std::env::var("SLEUTH_BENCH_POSTGRES_URL") {
            let store: Arc<dyn Store> = Arc::new(
                sleuth_store_postgres::open(&url, &Default::default())
                    .await
                    .unwrap(),
            );
            run("PostgreSQL", store, alerts, api_alerts, clients).await;
        }
    });
}
