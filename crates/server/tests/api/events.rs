//! The event stream over HTTP on both backends: server-sent events of committed system
//! events, in id order, resumable with `Last-Event-ID`, scoped by role and tenant union,
//! bounded in number, and ended when the server shuts down.

use std::time::Duration;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{Value, json};

use crate::context_memory::tenant_union;
use crate::harness::{TestApp, assert_error, request_with_headers};
use crate::on_both_backends;
use crate::tenants::bound_key;

on_both_backends!(
    conclusions_stream_in_order_once_and_a_stream_resumes_after_its_last_id,
    members_stream_investigations_admins_also_administration,
    a_bound_key_streams_only_its_unions_events,
    bad_positions_and_triggers_are_refused,
);

/// With room for two streams, on both backends.
mod streams_beyond_the_limit {
    use crate::harness::{Backend, TestApp};

    async fn run(backend: Backend) {
        let app = TestApp::start_with(backend, |settings| settings.server.max_event_streams = 2);
        if let Some(app) = app.await {
            super::streams_beyond_the_limit_are_shed_and_shutdown_ends_them(app).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        run(Backend::Sqlite).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        run(Backend::Postgres).await;
    }
}

const STREAM: &str = "/app/api/v1/events/stream";

/// One server-sent event.
#[derive(Debug, Clone)]
struct Received {
    id: i64,
    event: String,
    data: Value,
}

/// An open stream, read as the events arrive.
struct Stream {
    body: Incoming,
    buffer: String,
}

impl Stream {
    async fn open(app: &TestApp, key: &str, path: &str, headers: &[(&str, &str)]) -> Stream {
        let (status, stream) = try_open(app, key, path, headers).await;
        assert_eq!(status, 200, "{path}");
        stream.unwrap()
    }

    /// The next `count` events; fails the test if they do not come within 20 s.
    async fn take(&mut self, count: usize) -> Vec<Received> {
        let mut events = Vec::new();
        tokio::time::timeout(Duration::from_secs(20), async {
            while events.len() < count {
                if let Some(event) = self.parse_one() {
                    events.push(event);
                    continue;
                }
                let frame = self
                    .body
                    .frame()
                    .await
                    .expect("the stream is open")
                    .unwrap();
                if let Some(data) = frame.data_ref() {
                    self.buffer.push_str(&String::from_utf8_lossy(data));
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("only {} of {count} events came: {events:?}", events.len()));
        events
    }

    /// Whether the server ends the stream within `wait`.
    async fn ends_within(&mut self, wait: Duration) -> bool {
        tokio::time::timeout(wait, async {
            loop {
                match self.body.frame().await {
                    None | Some(Err(_)) => return,
                    Some(Ok(_)) => {}
                }
            }
        })
        .await
        .is_ok()
    }

    /// One whole event from the buffer (comments skipped), if one is there.
    fn parse_one(&mut self) -> Option<Received> {
        loop {
            let end = self.buffer.find("\n\n")?;
            let block: String = self.buffer.drain(..end + 2).collect();
            let mut id = None;
            let mut event = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("id: ") {
                    id = value.parse().ok();
                } else if let Some(value) = line.strip_prefix("event: ") {
                    event = Some(value.to_string());
                } else if let Some(value) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(value).ok();
                }
            }
            if let (Some(id), Some(event), Some(data)) = (id, event, data) {
                return Some(Received { id, event, data });
            }
        }
    }
}

/// Opens a stream; the status, and the stream when it is 200.
async fn try_open(
    app: &TestApp,
    key: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, Option<Stream>) {
    let stream = tokio::net::TcpStream::connect(&app.address).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    let mut builder = hyper::Request::builder()
        .uri(path)
        .header("host", &app.address)
        .header("authorization", key);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let request = builder
        .body(http_body_util::Full::new(hyper::body::Bytes::new()))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    if status != 200 {
        return (status, None);
    }
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream",
        "an event stream"
    );
    let body = response.into_body();
    (
        status,
        Some(Stream {
            body,
            buffer: String::new(),
        }),
    )
}

fn alert(word: &str) -> Value {
    json!({"title": format!("Suspicious sign-in {word}"), "id": word, "source_ip": "198.51.100.9"})
}

async fn conclusions_stream_in_order_once_and_a_stream_resumes_after_its_last_id(app: TestApp) {
    let path = format!("{STREAM}?trigger_name=investigation_completed");
    let mut stream = Stream::open(&app, &app.member_key, &path, &[]).await;
    let first = app.create(&alert("one")).await;
    let second = app.create(&alert("two")).await;
    assert_eq!(app.drain().await, 2);
    let events = stream.take(2).await;
    assert_eq!(events[0].event, "investigation_completed");
    assert!(events[0].id < events[1].id, "{events:?}");
    let concluded: Vec<i64> = events
        .iter()
        .map(|event| event.data["investigation_id"].as_i64().unwrap())
        .collect();
    assert_eq!(concluded, [first, second]);
    // The data is the system event's list shape.
    assert_eq!(events[0].data["id"], events[0].id);
    assert_eq!(events[0].data["trigger_name"], "investigation_completed");

    // A client that lost the connection after the first resumes with the second.
    let third = app.create(&alert("three")).await;
    assert_eq!(app.drain().await, 1);
    let resume_at = events[0].id.to_string();
    let mut resumed = Stream::open(
        &app,
        &app.member_key,
        &path,
        &[("Last-Event-ID", &resume_at)],
    )
    .await;
    let again = resumed.take(2).await;
    assert_eq!(again[0].id, events[1].id);
    assert_eq!(again[1].data["investigation_id"], third);
    // `after` does the same for a client that cannot send the header.
    let mut after = Stream::open(
        &app,
        &app.member_key,
        &format!("{path}&after={}", events[1].id),
        &[],
    )
    .await;
    assert_eq!(after.take(1).await[0].data["investigation_id"], third);
}

async fn members_stream_investigations_admins_also_administration(app: TestApp) {
    let mut member = Stream::open(&app, &app.member_key, STREAM, &[]).await;
    let mut admin = Stream::open(&app, &app.admin_key, STREAM, &[]).await;
    let created = app
        .post(
            "/app/api/v1/users",
            &app.admin_key,
            &json!({"email": "new.analyst@example.com", "role": "member"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let investigation = app.create(&alert("member")).await;
    assert_eq!(app.drain().await, 1);
    // The admin sees the user created first; the member's first event is the conclusion.
    let admin_events = admin.take(1).await;
    assert_eq!(admin_events[0].event, "user_created");
    let member_events = member.take(1).await;
    assert!(
        member_events[0].event.starts_with("investigation_"),
        "{member_events:?}"
    );
    assert_eq!(member_events[0].data["investigation_id"], investigation);
    // Asking for an administration event is refused to a member, named to an admin.
    let refused = request_with_headers(
        &app.address,
        "GET",
        &format!("{STREAM}?trigger_name=user_created"),
        &[("authorization", &app.member_key)],
        None,
        None,
    )
    .await;
    assert_error(&refused, 403, "access_denied");
    let (status, _) = try_open(
        &app,
        &app.reader_key,
        &format!("{STREAM}?trigger_name=investigation_completed"),
        &[],
    )
    .await;
    assert_eq!(status, 200, "a reader streams investigation events");
}

async fn a_bound_key_streams_only_its_unions_events(app: TestApp) {
    let acme = tenant_union(&app, "Acme").await;
    let globex = tenant_union(&app, "Globex").await;
    let acme_reader = bound_key(&app, "acme.reader@example.com", "member", &[acme]).await;
    let path = format!("{STREAM}?trigger_name=investigation_completed");
    let mut stream = Stream::open(&app, &acme_reader, &path, &[]).await;
    let create_in = async |union: i64, word: &str| {
        let answer = app
            .post(
                "/app/api/v1/investigation/create",
                &app.member_key,
                &json!({"raw_alert_content": alert(word), "tenant_union_id": union}),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        answer.json["investigation_id"].as_i64().unwrap()
    };
    let theirs = create_in(globex, "globex").await;
    let ours = create_in(acme, "acme").await;
    assert_eq!(app.drain().await, 2);
    let events = stream.take(1).await;
    assert_eq!(events[0].data["investigation_id"], ours);
    assert_ne!(ours, theirs);
    // Globex's conclusion came first and was never sent: a later one of Acme's is next.
    let later = create_in(acme, "acme-later").await;
    assert_eq!(app.drain().await, 1);
    assert_eq!(stream.take(1).await[0].data["investigation_id"], later);
}

async fn bad_positions_and_triggers_are_refused(app: TestApp) {
    let get = async |path: &str, headers: &[(&str, &str)]| {
        let mut all = vec![("authorization", app.member_key.as_str())];
        all.extend_from_slice(headers);
        request_with_headers(&app.address, "GET", path, &all, None, None).await
    };
    assert_error(
        &get(STREAM, &[("Last-Event-ID", "abc")]).await,
        400,
        "bad_request",
    );
    assert_error(
        &get(STREAM, &[("Last-Event-ID", "-4")]).await,
        400,
        "bad_request",
    );
    assert_error(
        &get(&format!("{STREAM}?after=x"), &[]).await,
        400,
        "bad_request",
    );
    let named = get(STREAM, &[("Last-Event-ID", "abc")]).await;
    assert!(
        named.json["errors"]["Last-Event-ID"].is_array(),
        "{}",
        named.text
    );
    let unknown = get(&format!("{STREAM}?trigger_name=no_such_trigger"), &[]).await;
    assert_error(&unknown, 400, "bad_request");
    assert!(
        unknown.text.contains("investigation_completed"),
        "{}",
        unknown.text
    );
    let anonymous = request_with_headers(&app.address, "GET", STREAM, &[], None, None).await;
    assert_eq!(anonymous.status, 401, "{}", anonymous.text);
}

async fn streams_beyond_the_limit_are_shed_and_shutdown_ends_them(app: TestApp) {
    let limit = app.state.settings().server.max_event_streams;
    assert_eq!(limit, 2);
    let mut open = Vec::new();
    for _ in 0..limit {
        open.push(Stream::open(&app, &app.member_key, STREAM, &[]).await);
    }
    let shed = request_with_headers(
        &app.address,
        "GET",
        STREAM,
        &[("authorization", &app.member_key)],
        None,
        None,
    )
    .await;
    assert_error(&shed, 503, "overloaded");
    assert!(
        shed.text.contains("server.max_event_streams"),
        "{}",
        shed.text
    );
    app.state.event_streams().close_all();
    for stream in &mut open {
        assert!(
            stream.ends_within(Duration::from_secs(5)).await,
            "a stream outlived shutdown"
        );
    }
}
