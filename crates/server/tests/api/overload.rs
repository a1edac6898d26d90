//! Floods and slow clients (issue 29, points 3 and 4): list answers bounded in bytes, load
//! shed early with 503 while health keeps answering, and connections that stall cut off, all
//! over real sockets on loopback.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sleuth_jobs::Settings;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use sleuth_store::{NewAuditEntry, NewSystemEvent};

use crate::harness::{Backend, TestApp, assert_error};

/// Each listed test with its settings, once per backend.
macro_rules! on_both_backends_with {
    ($($name:ident => $configure:ident),+ $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    let backend = $crate::harness::Backend::Sqlite;
                    if let Some(app) = $crate::harness::TestApp::start_with(backend, super::$configure).await {
                        super::$name(app).await;
                    }
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    let backend = $crate::harness::Backend::Postgres;
                    if let Some(app) = $crate::harness::TestApp::start_with(backend, super::$configure).await {
                        super::$name(app).await;
                    }
                }
            }
        )+
    };
}

on_both_backends_with!(
    a_list_answer_stops_at_its_byte_budget_and_links_to_the_rest => small_answers,
    notes_events_and_audit_entries_keep_to_the_byte_budget_and_page_whole => small_answers,
    a_flood_is_shed_with_503_while_health_answers => one_request_at_a_time,
);

const BUDGET: usize = 64 * 1024;

fn small_answers(settings: &mut Settings) {
    settings.server.max_list_answer_bytes = BUDGET;
}

fn one_request_at_a_time(settings: &mut Settings) {
    settings.server.max_requests_in_flight = 1;
    settings.server.max_ingest_requests_in_flight = 1;
    settings.server.queue_wait_ms = 0;
    settings.server.retry_after_seconds = 3;
}

const QUEUED: &str = "investigation_state=not_asked";

async fn a_list_answer_stops_at_its_byte_budget_and_links_to_the_rest(app: TestApp) {
    let mut created = BTreeSet::new();
    for index in 0..7 {
        let alert = json!({"title": format!("Large alert {index}"), "id": format!("large-{index}"),
            "description": "x".repeat(20_000)});
        created.insert(app.create(&alert).await);
    }
    // Created last, so listed first: larger than the whole budget on its own.
    let huge = app
        .create(&json!({"title": "Huge alert", "id": "huge", "description": "y".repeat(100_000)}))
        .await;
    created.insert(huge);

    // The order of the list, one item per page (each page far under the budget).
    let mut one_by_one = Vec::new();
    for offset in 0..created.len() {
        let page = app
            .get(
                &format!("/app/api/v1/investigation?{QUEUED}&limit=1&offset={offset}"),
                &app.reader_key,
            )
            .await;
        assert_eq!(page.status, 200, "{}", page.text);
        one_by_one.push(page.json["results"][0]["id"].as_i64().expect("an id"));
    }
    assert_eq!(one_by_one[0], huge);

    let mut path = format!("/app/api/v1/investigation?{QUEUED}&limit=100");
    let mut walked = Vec::new();
    let mut pages = 0;
    loop {
        let page = app.get(&path, &app.reader_key).await;
        assert_eq!(page.status, 200, "{}", page.text);
        pages += 1;
        let results = page.json["results"].as_array().expect("results");
        assert!(!results.is_empty(), "every page holds at least one item");
        assert_eq!(page.json["count"], 8, "count is the whole list's");
        if results.len() > 1 {
            assert!(
                page.text.len() <= BUDGET + 2048,
                "a page of {} items is {} bytes",
                results.len(),
                page.text.len()
            );
        }
        if pages == 1 {
            assert_eq!(results.len(), 1, "the huge item alone fills the first page");
        }
        walked.extend(
            results
                .iter()
                .map(|item| item["id"].as_i64().expect("an id")),
        );
        match page.json["next"].as_str() {
            Some(next) => {
                assert!(next.contains("limit=100"), "{next}");
                assert!(
                    next.contains(&format!("offset={}", walked.len())),
                    "next starts after the last item returned: {next}"
                );
                path = next[next.find("/app/").expect("a path")..].to_string();
            }
            None => break,
        }
        assert!(pages < 20, "the walk ends");
    }
    assert!(pages >= 3, "the budget split the list ({pages} pages)");
    assert_eq!(walked, one_by_one, "no item repeated, skipped or reordered");
    assert_eq!(walked.iter().copied().collect::<BTreeSet<_>>(), created);
}

/// Large notes, system events and audit entries, each list walked from its first page by
/// the `Link` header with the largest `limit`: every page of several items stays within
/// the budget, the budget splits each list, and the walk returns every item once, in the
/// order the list has one item at a time. The audit export, streamed in budgeted pieces,
/// holds every entry once, in chain order.
async fn notes_events_and_audit_entries_keep_to_the_byte_budget_and_page_whole(app: TestApp) {
    let investigation_id = app
        .create(&json!({"title": "Noted alert", "id": "noted-1"}))
        .await;
    // Each far under the budget, together far over it.
    for index in 0..16 {
        let answer = app
            .post(
                &format!("/app/api/v1/investigation-user-notes/{investigation_id}/create"),
                &app.member_key,
                &json!({"text": format!("{index} {}", "n".repeat(9_000))}),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
    }
    let large = |index: usize| {
        let mut args = serde_json::Map::new();
        args.insert("investigation_id".into(), json!(investigation_id));
        args.insert(
            "text".into(),
            json!(format!("{index} {}", "e".repeat(9_000))),
        );
        args
    };
    let events: Vec<NewSystemEvent> = (0..16)
        .map(|index| NewSystemEvent {
            trigger_name: "note_added".into(),
            trigger_args: large(index),
            investigation_id: Some(investigation_id),
            entity: None,
        })
        .collect();
    app.store
        .record_system_events(&events, chrono::Utc::now())
        .await
        .unwrap();
    for index in 0..16 {
        app.store
            .append_audit_entry(&NewAuditEntry {
                actor_user_id: None,
                actor_email: None,
                action: "cli test".into(),
                resource_type: "test".into(),
                resource_id: Some(index.to_string()),
                request_id: None,
                detail: large(index),
                tenant_union_id: None,
            })
            .await
            .unwrap();
    }

    let notes = format!("/app/api/v1/investigation-user-notes/{investigation_id}/list");
    let walked = walk_by_link(&app, &notes, |page| page.json.clone(), "id").await;
    assert_eq!(walked.len(), 16);
    // Each note created over the API also fires its own event, in the background: the list
    // must be still while it is walked.
    let events = "/app/api/v1/system-events/list?trigger_name=note_added";
    let first_event = format!("{events}&limit=1");
    let all_fired = eventually(
        || app.get(&first_event, &app.admin_key),
        |answer| answer.json["count"] == 32,
    )
    .await;
    assert_eq!(all_fired.json["count"], 32, "{}", all_fired.text);
    let walked = walk_by_link(&app, events, |page| page.json["results"].clone(), "id").await;
    assert_eq!(walked.len(), 32);
    let walked = walk_by_link(
        &app,
        "/app/api/v1/audit-log?resource_type=test",
        |page| page.json["results"].clone(),
        "seq",
    )
    .await;
    assert_eq!(walked.len(), 16);

    let export = app
        .get("/app/api/v1/audit-log/export", &app.admin_key)
        .await;
    assert_eq!(export.status, 200);
    let seqs: Vec<i64> = export
        .text
        .lines()
        .map(|line| {
            serde_json::from_str::<Value>(line).expect("a JSON line")["seq"]
                .as_i64()
                .expect("a seq")
        })
        .collect();
    let all = app
        .get("/app/api/v1/audit-log?limit=1", &app.admin_key)
        .await;
    let count = all.json["count"].as_i64().unwrap();
    assert!(count > 16, "{count}");
    assert_eq!(
        seqs,
        (1..=count).collect::<Vec<_>>(),
        "every entry once, in order"
    );
}

/// Walks a list from `first` (asked with the largest limit) by its `Link` headers, checking
/// each page against the budget and the walk against the list read one item at a time;
/// answers the ids (`key`) walked.
async fn walk_by_link(
    app: &TestApp,
    first: &str,
    items: impl Fn(&crate::harness::Answer) -> Value,
    key: &str,
) -> Vec<i64> {
    let separator = if first.contains('?') { '&' } else { '?' };
    let ids = |page: &crate::harness::Answer| -> Vec<i64> {
        items(page)
            .as_array()
            .unwrap_or_else(|| panic!("a list: {}", page.text))
            .iter()
            .map(|item| item[key].as_i64().expect("an id"))
            .collect()
    };
    let mut one_by_one = Vec::new();
    loop {
        let offset = one_by_one.len();
        let page = app
            .get(
                &format!("{first}{separator}limit=1&offset={offset}"),
                &app.admin_key,
            )
            .await;
        assert_eq!(page.status, 200, "{}", page.text);
        let got = ids(&page);
        if got.is_empty() {
            break;
        }
        one_by_one.extend(got);
        assert!(one_by_one.len() < 1000, "the list ends");
    }
    let mut path = format!("{first}{separator}limit=1000");
    let mut walked = Vec::new();
    let mut pages = 0;
    loop {
        let page = app.get(&path, &app.admin_key).await;
        assert_eq!(page.status, 200, "{}", page.text);
        pages += 1;
        let got = ids(&page);
        assert!(!got.is_empty(), "every page holds at least one item");
        if got.len() > 1 {
            assert!(
                page.text.len() <= BUDGET + 2048,
                "{first}: a page of {} items is {} bytes",
                got.len(),
                page.text.len()
            );
        }
        walked.extend(got);
        let link = page
            .headers
            .get("link")
            .map(|value| value.to_str().expect("a text header").to_string());
        match link {
            Some(link) => {
                assert!(link.ends_with(">; rel=\"next\""), "{link}");
                assert!(link.contains("limit=1000"), "{link}");
                assert!(
                    link.contains(&format!("offset={}", walked.len())),
                    "next starts after the last item returned: {link}"
                );
                let url = link
                    .trim_start_matches('<')
                    .trim_end_matches(">; rel=\"next\"");
                path = url[url.find("/app/").expect("a path")..].to_string();
            }
            None => break,
        }
        assert!(pages < 50, "the walk ends");
    }
    assert!(
        pages >= 2,
        "{first}: the budget split the list ({pages} pages)"
    );
    assert_eq!(
        walked, one_by_one,
        "{first}: no item repeated, skipped or reordered"
    );
    walked
}

/// Opens a POST to `path` whose body never completes: it holds a slot of the path's class
/// until the socket closes.
async fn hold_a_slot(app: &TestApp, path: &str) -> TcpStream {
    let mut stream = TcpStream::connect(&app.address).await.expect("connect");
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {}\r\nauthorization: {}\r\n\
         content-type: application/json\r\ncontent-length: 1000\r\n\r\n{{\"raw_alert",
        app.address, app.member_key
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    stream
}

/// Waits until the held request has its slot of `class` (the metrics say so; they answer
/// from the health pool). Without this, a request sent right after could take the one slot
/// first and the held one be shed instead, and nothing would be held.
async fn slot_is_held(app: &TestApp, class: &str) {
    let prefix = format!("sleuth_http_requests_in_flight{{class=\"{class}\"}} ");
    let metrics = eventually(
        || app.raw("GET", "/metrics", None, None, None),
        |answer| metric(&answer.text, &prefix) == Some(1),
    )
    .await;
    assert_eq!(
        metric(&metrics.text, &prefix),
        Some(1),
        "the held request never got its {class} slot: {}",
        metrics.text
    );
}

/// The number in a line of the metrics exposition that starts with `prefix`.
fn metric(text: &str, prefix: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix(prefix))
        .and_then(|value| value.trim().parse().ok())
}

async fn a_flood_is_shed_with_503_while_health_answers(app: TestApp) {
    let list = "/app/api/v1/investigation";
    let create = "/app/api/v1/investigation/create";
    assert_eq!(app.get(list, &app.reader_key).await.status, 200);

    // Reads hold every API slot: reads are shed, alerts still come in.
    let held_api = hold_a_slot(&app, "/app/api/v1/context-memory/create").await;
    slot_is_held(&app, "api").await;
    let shed = eventually(
        || app.get(list, &app.reader_key),
        |answer| answer.status == 503,
    )
    .await;
    assert_error(&shed, 503, "overloaded");
    assert_eq!(
        shed.headers
            .get("retry-after")
            .and_then(|value| value.to_str().ok()),
        Some("3")
    );
    let taken = app
        .post(
            create,
            &app.member_key,
            &json!({"raw_alert_content": {"title": "taken", "id": "taken-1"}}),
        )
        .await;
    assert_eq!(
        taken.status, 200,
        "a create has slots of its own: {}",
        taken.text
    );

    // Creates hold every ingest slot: the next create is shed and stores nothing.
    let held_ingest = hold_a_slot(&app, create).await;
    slot_is_held(&app, "ingest").await;
    let shed_alert = json!({"raw_alert_content": {"title": "shed", "id": "shed-1"}});
    let refused = eventually(
        || app.post(create, &app.member_key, &shed_alert),
        |answer| answer.status == 503,
    )
    .await;
    assert_error(&refused, 503, "overloaded");

    for path in ["/healthz", "/readyz"] {
        let answer = app.raw("GET", path, None, None, None).await;
        assert_eq!(
            answer.status, 200,
            "{path} answers under load: {}",
            answer.text
        );
    }
    let metrics = app.raw("GET", "/metrics", None, None, None).await;
    assert_eq!(metrics.status, 200);
    let text = &metrics.text;
    let shed_of = |class: &str| {
        metric(
            text,
            &format!("sleuth_http_requests_shed_total{{class=\"{class}\"}} "),
        )
    };
    assert!(shed_of("api") >= Some(1), "{text}");
    assert!(shed_of("ingest") >= Some(1), "{text}");
    for class in ["api", "ingest"] {
        assert_eq!(
            metric(
                text,
                &format!("sleuth_http_requests_in_flight{{class=\"{class}\"}} ")
            ),
            Some(1),
            "{text}"
        );
    }

    // Once the slots are free, requests are worked on again; the shed create stored nothing.
    drop(held_api);
    drop(held_ingest);
    let after = eventually(
        || app.get(list, &app.reader_key),
        |answer| answer.status == 200,
    )
    .await;
    assert_eq!(after.status, 200);
    let all = app.get(&format!("{list}?{QUEUED}"), &app.reader_key).await;
    assert_eq!(all.json["count"], 1, "only the taken alert: {}", all.text);
}

/// Asks again until `done` holds, for at most ten seconds.
async fn eventually<F, Fut>(
    mut ask: F,
    done: impl Fn(&crate::harness::Answer) -> bool,
) -> crate::harness::Answer
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = crate::harness::Answer>,
{
    let started = Instant::now();
    loop {
        let answer = ask().await;
        if done(&answer) || started.elapsed() > Duration::from_secs(10) {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// Slow clients. The connection layer does not depend on the database: one backend.

async fn app_with(configure: impl FnOnce(&mut Settings)) -> TestApp {
    TestApp::start_with(Backend::Sqlite, configure)
        .await
        .expect("SQLite is always available")
}

/// Reads one HTTP/1.1 answer (head and a Content-Length body): status and body.
async fn read_answer(stream: &mut TcpStream) -> Option<(u16, String)> {
    let mut received = Vec::new();
    let mut chunk = [0_u8; 4096];
    loop {
        if let Some(end) = find(&received, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&received[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse().ok())
                .unwrap_or(0);
            if received.len() >= end + 4 + length {
                let status = head.split_whitespace().nth(1)?.parse().ok()?;
                let body = String::from_utf8_lossy(&received[end + 4..end + 4 + length]);
                return Some((status, body.into_owned()));
            }
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(read) => received.extend_from_slice(&chunk[..read]),
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// Waits for the server to close `stream`; returns how long that took, or None when it
/// stayed open for `patience`.
async fn closed_within(stream: &mut TcpStream, patience: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut chunk = [0_u8; 1024];
    loop {
        match tokio::time::timeout(
            patience.saturating_sub(started.elapsed()),
            stream.read(&mut chunk),
        )
        .await
        {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => {}
        }
    }
}

fn health_request(address: &str) -> String {
    format!("GET /healthz HTTP/1.1\r\nhost: {address}\r\n\r\n")
}

/// Asks `/healthz` on `stream` (kept alive): the answer's status.
async fn ask_health(stream: &mut TcpStream, address: &str) -> Option<u16> {
    stream
        .write_all(health_request(address).as_bytes())
        .await
        .ok()?;
    read_answer(stream).await.map(|answer| answer.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_finishes_its_headers_is_cut_after_the_timeout() {
    let app = app_with(|settings| settings.server.header_read_timeout_seconds = 1).await;
    let mut silent = TcpStream::connect(&app.address).await.expect("connect");
    let mut slow = TcpStream::connect(&app.address).await.expect("connect");
    slow.write_all(format!("GET /healthz HTTP/1.1\r\nhost: {}\r\n", app.address).as_bytes())
        .await
        .expect("write");
    let started = Instant::now();
    for stream in [&mut silent, &mut slow] {
        closed_within(stream, Duration::from_secs(10))
            .await
            .expect("the connection is closed");
        let closed = started.elapsed();
        assert!(
            closed >= Duration::from_millis(800),
            "not before the timeout: {closed:?}"
        );
    }
    // A client that sends its request in time is answered as usual.
    let mut prompt = TcpStream::connect(&app.address).await.expect("connect");
    assert_eq!(ask_health(&mut prompt, &app.address).await, Some(200));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_kept_alive_connection_is_closed_and_a_busy_one_is_kept() {
    let app = app_with(|settings| {
        settings.server.keep_alive_idle_seconds = 1;
        settings.server.header_read_timeout_seconds = 30;
    })
    .await;
    let mut stream = TcpStream::connect(&app.address).await.expect("connect");
    for _ in 0..3 {
        assert_eq!(ask_health(&mut stream, &app.address).await, Some(200));
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let closed = closed_within(&mut stream, Duration::from_secs(10))
        .await
        .expect("the idle connection is closed");
    assert!(closed >= Duration::from_millis(500), "{closed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stops_arriving_is_answered_408() {
    let app = app_with(|settings| settings.server.body_read_timeout_seconds = 1).await;
    let mut stream = hold_a_slot(&app, "/app/api/v1/investigation/create").await;
    let started = Instant::now();
    let (status, body) = tokio::time::timeout(Duration::from_secs(10), read_answer(&mut stream))
        .await
        .expect("an answer in time")
        .expect("an answer");
    assert!(started.elapsed() >= Duration::from_millis(800));
    assert_eq!(status, 408, "{body}");
    let body: Value = serde_json::from_str(&body).expect("a JSON error");
    assert_eq!(body["code"], "request_timeout");
    let count = app
        .get(
            &format!("/app/api/v1/investigation?{QUEUED}"),
            &app.reader_key,
        )
        .await;
    assert_eq!(count.json["count"], 0, "nothing was created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_limit_wait_until_one_closes() {
    let app = app_with(|settings| settings.server.max_connections = 2).await;
    let mut open = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(&app.address).await.expect("connect");
        assert_eq!(ask_health(&mut stream, &app.address).await, Some(200));
        open.push(stream);
    }
    let mut waiting = TcpStream::connect(&app.address)
        .await
        .expect("the OS queues it");
    waiting
        .write_all(health_request(&app.address).as_bytes())
        .await
        .expect("write");
    let early = tokio::time::timeout(Duration::from_millis(500), read_answer(&mut waiting)).await;
    assert!(
        early.is_err(),
        "not served while two connections are open: {early:?}"
    );
    drop(open.remove(0));
    let answer = tokio::time::timeout(Duration::from_secs(10), read_answer(&mut waiting))
        .await
        .expect("served once a connection closed");
    assert_eq!(answer.map(|answer| answer.0), Some(200));
}
