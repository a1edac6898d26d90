//! A real Sleuth on a loopback port for each test: a fresh database (SQLite file or
//! PostgreSQL database), three users (admin, member, restricted-read-only) with keys, and a
//! small HTTP/1.1 client. Workers are off: tests step the queue with `drain` instead of
//! sleeping.

use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::Value;
use sleuth_domain::Role;
use sleuth_jobs::Settings;
use sleuth_server::AppState;
use sleuth_store::{NewApiKey, Store};
use sleuth_test_support::fixtures;
use tokio::sync::oneshot;

#[path = "../common/store.rs"]
mod store;
pub(crate) use store::Backend;

pub(crate) struct TestApp {
    pub address: String,
    pub admin_key: String,
    pub member_key: String,
    pub reader_key: String,
    pub state: AppState,
    pub store: Arc<dyn Store>,
    _shutdown: oneshot::Sender<()>,
    _database: store::Keeper,
}

/// An HTTP answer: status, headers and the body parsed as JSON (Null when empty or not JSON).
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub text: String,
    pub json: Value,
}

impl TestApp {
    /// A running app on `backend`, or None when that backend is not available here.
    pub(crate) async fn start(backend: Backend) -> Option<TestApp> {
        TestApp::start_with(backend, |_| {}).await
    }

    /// An app whose alerts of one story coalesce within an hour.
    pub(crate) async fn start_coalescing(backend: Backend) -> Option<TestApp> {
        TestApp::start_with(backend, |settings| {
            settings.guards.coalesce_window_seconds = 3600;
        })
        .await
    }

    pub(crate) async fn start_with(
        backend: Backend,
        configure: impl FnOnce(&mut Settings),
    ) -> Option<TestApp> {
        // Server logs go to the test's captured output, shown when a test fails.
        let _ = tracing_subscriber::fmt()
            .with_test_writer()
            .with_env_filter("warn")
            .try_init();
        let mut settings = Settings::default();
        settings.workers.enabled = false;
        // A key for script secrets, as an operator would set; a test removes it to see
        // Sleuth without one.
        settings.secrets.key = Some(sleuth_jobs::settings::Redacted::new(
            sleuth_jobs::secret_keys::SecretKey::generate(),
        ));
        configure(&mut settings);
        let (store, database) = store::fresh_store(backend).await?;
        let keyring = sleuth_jobs::secret_keys::Keyring::from_settings(&settings.secrets)
            .expect("the test's secrets key");
        let state = AppState::new(settings, sleuth_engine::Context::empty());
        if let Some(keyring) = keyring {
            state.set_keyring(keyring);
        }
        state.set_store(store.clone());
        let admin_key = add_user(&store, "admin@example.com", Role::Admin).await;
        let member_key = add_user(&store, "member@example.com", Role::Member).await;
        let reader_key = add_user(&store, "reader@example.com", Role::RestrictedReadOnly).await;
        let (address, shutdown) = serve(state.clone()).await;
        Some(TestApp {
            address,
            admin_key,
            member_key,
            reader_key,
            state,
            store,
            _shutdown: shutdown,
            _database: database,
        })
    }

    /// Runs every ready investigation; returns how many ran.
    pub(crate) async fn drain(&self) -> usize {
        sleuth_jobs::workers::drain(&self.state, &self.store)
            .await
            .expect("drain the queue")
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    pub(crate) async fn get(&self, path: &str, key: &str) -> Answer {
        request(&self.address, "GET", path, Some(key), None, None).await
    }

    pub(crate) async fn post(&self, path: &str, key: &str, body: &Value) -> Answer {
        let text = body.to_string();
        request(
            &self.address,
            "POST",
            path,
            Some(key),
            Some("application/json"),
            Some(text.into_bytes()),
        )
        .await
    }

    pub(crate) async fn patch(&self, path: &str, key: &str, body: &Value) -> Answer {
        let text = body.to_string();
        request(
            &self.address,
            "PATCH",
            path,
            Some(key),
            Some("application/json"),
            Some(text.into_bytes()),
        )
        .await
    }

    /// Any request, for the hostile cases (no key, odd content types, raw bytes).
    pub(crate) async fn raw(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        content_type: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> Answer {
        request(&self.address, method, path, key, content_type, body).await
    }

    /// Creates an investigation for `alert` via the API and returns its id.
    pub(crate) async fn create(&self, alert: &Value) -> i64 {
        let answer = self
            .post(
                "/app/api/v1/investigation/create",
                &self.member_key,
                &serde_json::json!({"raw_alert_content": alert}),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        answer.json["investigation_id"]
            .as_i64()
            .expect("an investigation id")
    }
}

/// Serves an app on an ephemeral loopback port; dropping the sender stops it.
pub(crate) async fn serve(state: AppState) -> (String, oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    let (shutdown, stopped) = oneshot::channel::<()>();
    let limits = sleuth_server::ConnectionLimits::from(&state.settings().server);
    let router = sleuth_server::build(state);
    tokio::spawn(async move {
        let _ = sleuth_server::serve(listener, router, limits, async move {
            let _ = stopped.await;
        })
        .await;
    });
    (address, shutdown)
}

async fn add_user(store: &Arc<dyn Store>, email: &str, role: Role) -> String {
    let user = store
        .create_user(&fixtures::new_user(email, role))
        .await
        .expect("user");
    let (secret, hash, prefix) = sleuth_server::auth::generate_key();
    store
        .create_api_key(&NewApiKey {
            user_id: user.id,
            name: "test".into(),
            hash,
            prefix,
            tenant_scope: sleuth_store::TenantScope::All,
        })
        .await
        .expect("key");
    secret
}

pub(crate) async fn request(
    address: &str,
    method: &str,
    path: &str,
    key: Option<&str>,
    content_type: Option<&str>,
    body: Option<Vec<u8>>,
) -> Answer {
    let headers: Vec<(&str, &str)> = key.map(|key| ("authorization", key)).into_iter().collect();
    request_with_headers(address, method, path, &headers, content_type, body).await
}

/// A request with any headers (a vendor's own: signatures, challenges, basic auth).
pub(crate) async fn request_with_headers(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    content_type: Option<&str>,
    body: Option<Vec<u8>>,
) -> Answer {
    let stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("handshake");
    tokio::spawn(connection);
    let mut builder = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", address);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    if let Some(content_type) = content_type {
        builder = builder.header("content-type", content_type);
    }
    let request = builder
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .expect("request");
    let response = sender.send_request(request).await.expect("response");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    // An event stream never ends: its answer is the status and headers (the events are
    // read by crate::events' own client).
    if headers
        .get("content-type")
        .is_some_and(|value| value == "text/event-stream")
    {
        return Answer {
            status,
            headers,
            text: String::new(),
            json: Value::Null,
        };
    }
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Answer {
        status,
        headers,
        text,
        json,
    }
}

/// Asserts the DESIGN.md error body: error_msg and detail (equal) and the stable code.
pub(crate) fn assert_error(answer: &Answer, status: u16, code: &str) {
    assert_eq!(answer.status, status, "{}", answer.text);
    assert_eq!(answer.json["code"], code, "{}", answer.text);
    let message = answer.json["error_msg"]
        .as_str()
        .expect("error_msg is a string");
    assert!(!message.is_empty());
    assert_eq!(answer.json["detail"].as_str(), Some(message));
}

/// Defines each listed test once per backend: `<name>::sqlite` and `<name>::postgres`.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    if let Some(app) = $crate::harness::TestApp::start($crate::harness::Backend::Sqlite).await {
                        super::$name(app).await;
                    }
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if let Some(app) = $crate::harness::TestApp::start($crate::harness::Backend::Postgres).await {
                        super::$name(app).await;
                    }
                }
            }
        )+
    };
}

/// Sends a request whose body the server may refuse before reading it (413), and reads the
/// answer (`sleuth_test_support::raw_http`).
pub(crate) async fn send_oversized(address: &str, path: &str, key: &str, body: Vec<u8>) -> Answer {
    let answer = sleuth_test_support::raw_http::send_oversized(
        address,
        "POST",
        path,
        &[("authorization", key), ("content-type", "application/json")],
        body,
    )
    .await;
    let json = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    Answer {
        status: answer.status,
        headers: hyper::HeaderMap::new(),
        text: answer.body,
        json,
    }
}
