//! A real Sleuth on a loopback port for each console test: a fresh SQLite file (or, for
//! the tests that run on both backends, a fresh PostgreSQL database), three
//! users (admin, member, restricted-read-only) with API keys and console passwords, and
//! a small HTTP/1.1 client for what the tests check beside the browser (the API, headers,
//! hostile requests). Workers are off: tests step the queue with `drain`.

use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::Value;
use sleuth_domain::Role;
use sleuth_jobs::Settings;
use sleuth_server::AppState;
use sleuth_store::{NewApiKey, Store, User};
use sleuth_test_support::fixtures;
use tokio::sync::oneshot;

#[path = "../common/store.rs"]
mod store;
pub(crate) use store::Backend;

/// Every test user's console password.
pub(crate) const PASSWORD: &str = "correct horse battery staple";
pub(crate) const ADMIN: &str = "admin@example.com";
pub(crate) const MEMBER: &str = "member@example.com";
pub(crate) const READER: &str = "reader@example.com";

pub(crate) struct ConsoleApp {
    pub(crate) address: String,
    pub(crate) member_key: String,
    pub(crate) admin_key: String,
    pub(crate) state: AppState,
    pub(crate) store: Arc<dyn Store>,
    _shutdown: oneshot::Sender<()>,
    /// The SQLite file's directory or the PostgreSQL database, removed at the end.
    _database: store::Keeper,
}

#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: hyper::HeaderMap,
    pub(crate) text: String,
    pub(crate) json: Value,
}

impl ConsoleApp {
    pub(crate) async fn start() -> ConsoleApp {
        ConsoleApp::start_with(|_| {}).await
    }

    pub(crate) async fn start_with(configure: impl FnOnce(&mut Settings)) -> ConsoleApp {
        ConsoleApp::start_on(Backend::Sqlite, configure)
            .await
            .expect("SQLite needs no server")
    }

    /// An app on `backend`; `None` (with the reason printed) when it is PostgreSQL and
    /// no server is named (`sleuth_test_support::postgres`).
    pub(crate) async fn start_on(
        backend: Backend,
        configure: impl FnOnce(&mut Settings),
    ) -> Option<ConsoleApp> {
        let _ = tracing_subscriber::fmt()
            .with_test_writer()
            .with_env_filter("warn")
            .try_init();
        let mut settings = Settings::default();
        settings.workers.enabled = false;
        configure(&mut settings);
        let (store, database) = store::fresh_store(backend).await?;
        let state = AppState::new(settings, sleuth_engine::Context::empty());
        state.set_store(store.clone());
        let admin_key = add_user(&store, ADMIN, Role::Admin).await;
        let member_key = add_user(&store, MEMBER, Role::Member).await;
        add_user(&store, READER, Role::RestrictedReadOnly).await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address").to_string();
        let (shutdown, stopped) = oneshot::channel::<()>();
        let limits = sleuth_server::ConnectionLimits::from(&state.settings().server);
        let router = sleuth_server::build(state.clone());
        tokio::spawn(async move {
            let _ = sleuth_server::serve(listener, router, limits, async move {
                let _ = stopped.await;
            })
            .await;
        });
        Some(ConsoleApp {
            address,
            member_key,
            admin_key,
            state,
            store,
            _shutdown: shutdown,
            _database: database,
        })
    }

    /// Runs `journey` on a fresh app on PostgreSQL, its screenshots named `postgres-…`;
    /// without Chromium, or without a server named by `SLEUTH_TEST_POSTGRES_URL`, it says
    /// so and runs nothing (`what` names the journey).
    pub(crate) async fn on_postgresql<F: std::future::Future<Output = ()>>(
        what: &str,
        journey: impl FnOnce(ConsoleApp, &'static str) -> F,
    ) {
        ConsoleApp::on_postgresql_started(
            what,
            |backend| ConsoleApp::start_on(backend, |_| {}),
            journey,
        )
        .await;
    }

    /// `on_postgresql` with the app that `start` starts on PostgreSQL.
    pub(crate) async fn on_postgresql_started<S, F>(
        what: &str,
        start: impl FnOnce(Backend) -> S,
        journey: impl FnOnce(ConsoleApp, &'static str) -> F,
    ) where
        S: std::future::Future<Output = Option<ConsoleApp>>,
        F: std::future::Future<Output = ()>,
    {
        if !crate::webdriver::available(what) {
            return;
        }
        if let Some(app) = start(Backend::Postgres).await {
            journey(app, "postgres-").await;
        }
    }

    /// An app whose response actions run in a real sandbox, with uids of its own so that
    /// tests side by side never share a slot.
    pub(crate) async fn start_with_sandbox() -> ConsoleApp {
        ConsoleApp::start_with_sandbox_on(Backend::Sqlite)
            .await
            .expect("SQLite needs no server")
    }

    /// `start_with_sandbox` on `backend`; `None` as for `start_on`.
    pub(crate) async fn start_with_sandbox_on(backend: Backend) -> Option<ConsoleApp> {
        static NEXT_UID_RANGE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let range = NEXT_UID_RANGE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let app = ConsoleApp::start_on(backend, |settings| {
            let sandbox = &mut settings.sandbox;
            sandbox.wall_clock_seconds = 5;
            sandbox.cpu_seconds = 5;
            sandbox.memory_mb = 256;
            sandbox.max_processes = 32;
            sandbox.slots = 2;
            sandbox.queue_timeout_seconds = 30;
            // Apart from the API tests' range, the sandbox crate's and any real user.
            sandbox.uid_base = 2_300_000_000 + (std::process::id() % 100_000) * 1_000 + range * 10;
            sandbox.work_root = std::env::temp_dir().join("sleuth-console-sandbox-tests");
        })
        .await?;
        let config = app.state.settings().sandbox.sandbox_config(
            env!("CARGO_BIN_EXE_sleuth-server-sandbox-exec").into(),
            Vec::new(),
        );
        let sandbox = tokio::task::spawn_blocking(move || sleuth_sandbox::Sandbox::probe(config))
            .await
            .expect("probe the sandbox");
        app.state.set_sandbox(sandbox);
        Some(app)
    }

    /// A POST of JSON to the API as the admin.
    pub(crate) async fn admin_post(&self, path: &str, body: &Value) -> Answer {
        self.request(
            "POST",
            path,
            &[("authorization", &self.admin_key)],
            Some(("application/json", body.to_string().into_bytes())),
        )
        .await
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.address)
    }

    pub(crate) async fn user(&self, email: &str) -> User {
        self.store
            .find_user_by_email(email)
            .await
            .expect("read user")
            .expect("the user exists")
    }

    /// Tenant unions of these names, made over the API as the admin; answers their ids.
    pub(crate) async fn add_unions(&self, names: &[&str]) -> Vec<i64> {
        let mut ids = Vec::new();
        for name in names {
            let union = self
                .admin_post(
                    "/app/api/v1/tenant-unions",
                    &serde_json::json!({"display_name": name}),
                )
                .await;
            assert_eq!(union.status, 201, "{}", union.text);
            ids.push(union.json["id"].as_i64().expect("a union id"));
        }
        ids
    }

    /// A user as the API lists them (`GET /app/api/v1/users`, as the admin).
    pub(crate) async fn api_user(&self, email: &str) -> Value {
        let users = self
            .request(
                "GET",
                "/app/api/v1/users",
                &[("authorization", &self.admin_key)],
                None,
            )
            .await;
        users
            .json
            .as_array()
            .expect("a list of users")
            .iter()
            .find(|listed| listed["email"] == email)
            .cloned()
            .expect("listed")
    }

    /// Submits `alert` through the API (as the member) and answers the investigation id.
    pub(crate) async fn create(&self, alert: &Value) -> i64 {
        let body = serde_json::json!({ "raw_alert_content": alert }).to_string();
        let answer = self
            .request(
                "POST",
                "/app/api/v1/investigation/create",
                &[("authorization", &self.member_key)],
                Some(("application/json", body.into_bytes())),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        answer.json["investigation_id"].as_i64().expect("an id")
    }

    /// Runs every queued investigation.
    pub(crate) async fn drain(&self) -> usize {
        sleuth_jobs::workers::drain(&self.state, &self.store)
            .await
            .expect("drain the queue")
    }

    /// A GET of the API as the member.
    pub(crate) async fn api(&self, path: &str) -> Value {
        let answer = self
            .request("GET", path, &[("authorization", &self.member_key)], None)
            .await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.text);
        answer.json
    }

    pub(crate) async fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<(&str, Vec<u8>)>,
    ) -> Answer {
        let stream = tokio::net::TcpStream::connect(&self.address)
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
            .header("host", &self.address);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let bytes = match body {
            Some((content_type, bytes)) => {
                builder = builder.header("content-type", content_type);
                bytes
            }
            None => Vec::new(),
        };
        let response = sender
            .send_request(
                builder
                    .body(Full::new(Bytes::from(bytes)))
                    .expect("request"),
            )
            .await
            .expect("response");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
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
}

impl ConsoleApp {
    /// Another user, bound to `scope`, with an API key (answered) of the same scope and
    /// the console password `PASSWORD`.
    pub(crate) async fn add_user(
        &self,
        email: &str,
        role: Role,
        scope: sleuth_store::TenantScope,
    ) -> String {
        add_scoped_user(&self.store, email, role, scope).await
    }

    /// Posts the sign-in form over plain HTTP as a browser would, after reading its page
    /// (for the page's cookie and CSRF field): `email`, the test password, then `extra`.
    pub(crate) async fn post_sign_in(&self, email: &str, extra: &[(&str, &str)]) -> Answer {
        let form = self.request("GET", "/sign-in", &[], None).await;
        let form_cookie = form.headers["set-cookie"]
            .to_str()
            .expect("a cookie")
            .split(';')
            .next()
            .expect("a pair")
            .to_string();
        let csrf = form_cookie
            .trim_start_matches("sleuth_sign_in=")
            .to_string();
        let mut body = form_urlencoded::Serializer::new(String::new());
        body.append_pair("email", email)
            .append_pair("password", PASSWORD)
            .append_pair("csrf", &csrf)
            .append_pair("next", "/");
        for (name, value) in extra {
            body.append_pair(name, value);
        }
        self.request(
            "POST",
            "/sign-in",
            &[("cookie", &form_cookie)],
            Some((
                "application/x-www-form-urlencoded",
                body.finish().into_bytes(),
            )),
        )
        .await
    }

    /// Signs `email` in over plain HTTP as a browser would (the form's cookie and CSRF
    /// field); answers the session's `Cookie` header value.
    pub(crate) async fn sign_in_http(&self, email: &str) -> String {
        let signed_in = self.post_sign_in(email, &[]).await;
        assert_eq!(signed_in.status, 303, "{}", signed_in.text);
        signed_in
            .headers
            .get_all("set-cookie")
            .iter()
            .filter_map(|value| value.to_str().ok())
            .find(|value| value.starts_with("sleuth_session="))
            .and_then(|value| value.split(';').next())
            .expect("a session cookie")
            .to_string()
    }

    /// A console page, as the session of `cookie`.
    pub(crate) async fn page(&self, cookie: &str, path: &str) -> Answer {
        self.request(
            "GET",
            path,
            &[("cookie", cookie), ("accept", "text/html")],
            None,
        )
        .await
    }

    /// A console form, sent as the session of `cookie` with its CSRF secret (read from
    /// the queue's sign-out form: every page's shell has one).
    pub(crate) async fn post_form(
        &self,
        cookie: &str,
        path: &str,
        fields: &[(&str, &str)],
    ) -> Answer {
        let csrf = self.csrf(cookie).await;
        let mut body = form_urlencoded::Serializer::new(String::new());
        body.append_pair("csrf", &csrf);
        for (name, value) in fields {
            body.append_pair(name, value);
        }
        self.request(
            "POST",
            path,
            &[("cookie", cookie), ("accept", "text/html")],
            Some((
                "application/x-www-form-urlencoded",
                body.finish().into_bytes(),
            )),
        )
        .await
    }
}

impl ConsoleApp {
    /// The CSRF secret of the session of `cookie`, read from the queue's sign-out form
    /// (every page's shell has one).
    pub(crate) async fn csrf(&self, cookie: &str) -> String {
        let any_page = self.page(cookie, "/").await;
        any_page
            .text
            .split("name=\"csrf\" value=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("a CSRF field")
            .to_string()
    }

    /// A form body larger than the server takes, sent as the session of `cookie` with
    /// `content_type` (`sleuth_test_support::raw_http`: the server may answer before
    /// reading it).
    pub(crate) async fn post_oversized(
        &self,
        cookie: &str,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> Answer {
        let answer = sleuth_test_support::raw_http::send_oversized(
            &self.address,
            "POST",
            path,
            &[
                ("cookie", cookie),
                ("accept", "text/html"),
                ("content-type", content_type),
            ],
            body,
        )
        .await;
        Answer {
            status: answer.status,
            headers: hyper::HeaderMap::new(),
            json: serde_json::from_str(&answer.body).unwrap_or(Value::Null),
            text: format!("{}\r\n\r\n{}", answer.head, answer.body),
        }
    }
}

/// A user with an API key and the console password `PASSWORD` (theirs to keep).
async fn add_user(store: &Arc<dyn Store>, email: &str, role: Role) -> String {
    add_scoped_user(store, email, role, sleuth_store::TenantScope::All).await
}

async fn add_scoped_user(
    store: &Arc<dyn Store>,
    email: &str,
    role: Role,
    scope: sleuth_store::TenantScope,
) -> String {
    let mut new_user = fixtures::new_user(email, role);
    new_user.tenant_scope = scope.clone();
    let user = store.create_user(&new_user).await.expect("user");
    store
        .set_password(
            user.id,
            &sleuth_server::passwords::hash(PASSWORD),
            false,
            chrono::Utc::now(),
        )
        .await
        .expect("password");
    let (secret, hash, prefix) = sleuth_server::auth::generate_key();
    store
        .create_api_key(&NewApiKey {
            user_id: user.id,
            name: "test".into(),
            hash,
            prefix,
            tenant_scope: scope,
        })
        .await
        .expect("key");
    secret
}
