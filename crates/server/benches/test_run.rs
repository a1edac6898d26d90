//! What a test-run costs a client: p50 and p99 of `POST /app/api/v1/response-actions/test`
//! with `pass`, over HTTP on loopback (one kept-alive connection, a real server, a SQLite
//! store, a strict sandbox), against a bare `/usr/bin/python3 -c pass` measured in the same
//! run, interleaved. The difference is the price of the API, the store and the isolation
//! together. Target: at most 15 ms over bare.
//!
//! `cargo bench -p sleuth-server --bench test_run [-- --runs N]`
#![allow(clippy::print_stdout)] // A benchmark prints its figures.
#![allow(clippy::unwrap_used, clippy::expect_used)] // A benchmark fails loudly.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use sleuth_domain::Role;
use sleuth_jobs::Settings;
use sleuth_sandbox::Sandbox;
use sleuth_server::AppState;
use sleuth_store::{NewApiKey, Store};

const PYTHON: &str = "/usr/bin/python3";

fn percentile(samples: &[Duration], fraction: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}

fn milliseconds(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[allow(clippy::disallowed_methods)] // The baseline: a bare interpreter start, no sandbox.
fn bare_python() -> Duration {
    let started = Instant::now();
    let status = std::process::Command::new(PYTHON)
        .args(["-c", "pass"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("the interpreter starts");
    assert!(status.success());
    started.elapsed()
}

/// A server on loopback with an admin key; returns its address and the key.
async fn start_server(directory: &std::path::Path) -> (String, String) {
    let url = format!("sqlite://{}", directory.join("bench.db").display());
    let store: Arc<dyn Store> = Arc::new(
        sleuth_store_sqlite::open(&url, &Default::default())
            .await
            .expect("sqlite"),
    );
    let mut settings = Settings::default();
    settings.workers.enabled = false;
    settings.sandbox.uid_base = 2_150_000_000;
    settings.sandbox.work_root = std::env::temp_dir().join("sleuth-server-bench");
    let config = settings.sandbox.sandbox_config(
        env!("CARGO_BIN_EXE_sleuth-server-sandbox-exec").into(),
        Vec::new(),
    );
    let sandbox = tokio::task::spawn_blocking(move || Sandbox::probe(config))
        .await
        .expect("probe");
    sandbox.ready().expect("the sandbox is ready on this host");
    println!("{}", sandbox.report());
    let state = AppState::new(settings, sleuth_engine::Context::empty());
    state.set_store(store.clone());
    state.set_sandbox(sandbox);
    let user = store
        .create_user(&sleuth_test_support::fixtures::new_user(
            "bench@example.com",
            Role::Admin,
        ))
        .await
        .expect("user");
    let (secret, hash, prefix) = sleuth_server::auth::generate_key();
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
    let limits = sleuth_server::ConnectionLimits::from(&state.settings().server);
    tokio::spawn(sleuth_server::serve(
        listener,
        sleuth_server::build(state),
        limits,
        std::future::pending(),
    ));
    (address, secret)
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

async fn connect(address: &str) -> Sender {
    let stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let (sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("handshake");
    tokio::spawn(connection);
    sender
}

async fn test_run(sender: &mut Sender, address: &str, key: &str) -> Duration {
    let body = br#"{"script_code": "pass", "trigger_args": {}}"#;
    let request = hyper::Request::builder()
        .method("POST")
        .uri("/app/api/v1/response-actions/test")
        .header("host", address)
        .header("authorization", key)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(body)))
        .expect("request");
    let started = Instant::now();
    let response = sender.send_request(request).await.expect("response");
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let elapsed = started.elapsed();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    assert!(bytes.starts_with(br#"{"status":"success""#));
    elapsed
}

fn main() {
    let arguments: Vec<String> = std::env::args().collect();
    let runs = arguments
        .iter()
        .position(|argument| argument == "--runs")
        .and_then(|position| arguments.get(position + 1)?.parse().ok())
        .unwrap_or(200usize);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let directory = tempfile::tempdir().expect("temp dir");
    let (address, key) = runtime.block_on(start_server(directory.path()));
    let mut sender = runtime.block_on(connect(&address));

    // Warm the page cache, the binaries and the connection before anything is measured.
    for _ in 0..10 {
        bare_python();
        runtime.block_on(test_run(&mut sender, &address, &key));
    }
    let mut bare = Vec::with_capacity(runs);
    let mut over_http = Vec::with_capacity(runs);
    // Interleaved, so that whatever else the machine does weighs on both alike.
    for _ in 0..runs {
        bare.push(bare_python());
        over_http.push(runtime.block_on(test_run(&mut sender, &address, &key)));
    }

    println!(
        "{runs} runs each, interleaved, on {} cores",
        std::thread::available_parallelism().map_or(0, usize::from)
    );
    println!("{:>9} {:>9}  what", "p50 ms", "p99 ms");
    for (label, samples) in [
        (format!("bare {PYTHON} -c pass"), &bare),
        (
            "POST /response-actions/test (pass), HTTP round trip, strict sandbox".to_string(),
            &over_http,
        ),
    ] {
        println!(
            "{:>9.2} {:>9.2}  {label}",
            milliseconds(percentile(samples, 0.5)),
            milliseconds(percentile(samples, 0.99)),
        );
    }
    println!(
        "overhead over bare `python3 -c pass`: p50 {:+.2} ms, p99 {:+.2} ms (target: at most 15 ms)",
        milliseconds(percentile(&over_http, 0.5)) - milliseconds(percentile(&bare, 0.5)),
        milliseconds(percentile(&over_http, 0.99)) - milliseconds(percentile(&bare, 0.99)),
    );
}
