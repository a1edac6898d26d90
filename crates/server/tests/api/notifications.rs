//! Notifications end to end: destinations through the admin API (secrets only named,
//! never answered), and the deliverer (`sleuth_jobs::notify_delivery::run`) telling real
//! receivers on loopback of real conclusions: a webhook receiver that checks every
//! signature as a receiver writes it and drops repeated event ids, down for 30 seconds
//! and then back; destinations that are unreachable or answer 500 forever, which end dead
//! with their reason while another keeps delivering; a receiver's 429 with `Retry-After`
//! pausing its destination, and a rate limit spacing the sends; PagerDuty resolving on a
//! close.

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use serde_json::{Value, json};
use sleuth_jobs::Settings;
use sleuth_notify::signature;
use sleuth_store::{DeliveryQuery, DeliveryState};
use tokio::sync::watch;

use crate::harness::{Answer, Backend, TestApp, assert_error, request};
use crate::on_both_backends;

const DESTINATIONS: &str = "/app/api/v1/notifications/destinations";
const SIGNING_KEY: &str = "whsec_0123456789abcdef";

on_both_backends!(destinations_are_managed_and_their_secrets_never_answered);

pub(crate) async fn put_secret(app: &TestApp, name: &str, value: &str) {
    let answer = request(
        &app.address,
        "PUT",
        &format!("/app/api/v1/response-actions/secrets/{name}"),
        Some(&app.admin_key),
        Some("application/json"),
        Some(json!({ "value": value }).to_string().into_bytes()),
    )
    .await;
    assert_eq!(answer.status, 204, "{}", answer.text);
}

/// The first case of every source in the corpus: alerts in each vendor's shape.
fn one_alert_per_source() -> Vec<Value> {
    let root = format!("{}/../../corpus/alerts", env!("CARGO_MANIFEST_DIR"));
    let mut sources: Vec<_> = std::fs::read_dir(&root)
        .expect("the corpus")
        .map(|entry| entry.expect("a corpus entry").path())
        .collect();
    sources.sort();
    sources
        .iter()
        .map(|source| {
            let mut cases: Vec<_> = std::fs::read_dir(source)
                .expect("a corpus source")
                .map(|entry| entry.expect("a corpus case").path())
                .collect();
            cases.sort();
            let text = std::fs::read_to_string(&cases[0]).expect("a corpus case");
            let case: Value = serde_json::from_str(&text).expect("a corpus case is JSON");
            case["alert"].clone()
        })
        .collect()
}

/// A worker hands each conclusion it stores to this process's deliverer, which then does
/// not read it back: what it hands over must be exactly what the store would answer, for
/// every vendor's shape and for an alert coalesced into an earlier one; and it is taken
/// once, by the event of that conclusion only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conclusion_handed_to_the_deliverer_is_what_the_store_reads_back() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(app) = TestApp::start_coalescing(backend).await else {
            continue;
        };
        handed_over_as_read_back(&app).await;
    }
}

async fn handed_over_as_read_back(app: &TestApp) {
    let recent = app.state.runtime().recent_conclusions();
    recent.set_wanted(true);
    // Two alerts of one story (a Falcon aggregate): the second is coalesced into the first.
    let falcon = |index: usize| {
        json!({
            "composite_id": format!("cid:ind:story-{index}"),
            "aggregate_id": "story",
            "name": "CredentialDumping",
            "display_name": format!("Credential dumping {index}"),
            "device": {"hostname": format!("WKS-{index:04}")},
        })
    };
    let mut ids = vec![app.create(&falcon(0)).await];
    assert_eq!(app.drain().await, 1);
    ids.push(app.create(&falcon(1)).await);
    for alert in one_alert_per_source() {
        ids.push(app.create(&alert).await);
    }
    assert_eq!(app.drain().await, ids.len() - 1);
    let mut outcomes = Vec::new();
    for &id in &ids {
        let investigation = app.store.get_investigation(id).await.unwrap();
        let at = investigation.generated_time.expect("concluded");
        let read = app.store.investigations_to_tell(&[id]).await.unwrap();
        assert_eq!(read.len(), 1, "investigation {id} is told of");
        let earlier = at - chrono::Duration::microseconds(1);
        assert_eq!(recent.take(id, earlier), None, "another conclusion's time");
        let handed = recent.take(id, at).expect("the worker handed it over");
        assert_eq!(handed, read[0], "investigation {id}");
        assert_eq!(recent.take(id, at), None, "taken once");
        outcomes.push(handed.outcome);
    }
    assert_eq!(outcomes[1], sleuth_domain::Outcome::Ignored, "{outcomes:?}");
    // Nothing is kept once no destination wants it.
    let id = app
        .create(&json!({"title": "Unwanted", "id": "unwanted", "source_ip": "198.51.100.8"}))
        .await;
    recent.set_wanted(false);
    assert_eq!(app.drain().await, 1);
    let at = app
        .store
        .get_investigation(id)
        .await
        .unwrap()
        .generated_time;
    assert_eq!(recent.take(id, at.expect("concluded")), None);
}

fn webhook(name: &str) -> Value {
    json!({
        "name": name,
        "kind": "webhook",
        "settings": {"url_secret": "HOOK_URL", "signing_secret": "HOOK_KEY"},
        "rule": {"events": ["investigation.concluded"]},
    })
}

async fn destinations_are_managed_and_their_secrets_never_answered(app: TestApp) {
    // A port nobody listens on, with the hook's token in its path.
    let closed_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let answers: Mutex<Vec<String>> = Mutex::default();
    let keep = |answer: Answer| {
        answers.lock().unwrap().push(answer.text.clone());
        answer
    };
    let missing = keep(
        app.post(DESTINATIONS, &app.admin_key, &webhook("soc"))
            .await,
    );
    assert_error(&missing, 400, "bad_request");
    assert!(missing.text.contains("HOOK_URL"), "{}", missing.text);

    put_secret(
        &app,
        "HOOK_URL",
        &format!("http://127.0.0.1:{closed_port}/hooks/T0SECRETTOKEN"),
    )
    .await;
    put_secret(&app, "HOOK_KEY", SIGNING_KEY).await;
    let mut inline = webhook("soc");
    inline["settings"]["url_secret"] = json!("https://hooks.example/T0SECRETTOKEN");
    let inline = keep(app.post(DESTINATIONS, &app.admin_key, &inline).await);
    assert_error(&inline, 400, "bad_request");
    assert!(
        inline.json["errors"]["settings.url_secret"].is_array(),
        "{}",
        inline.text
    );
    let mut bad_rule = webhook("soc");
    bad_rule["rule"] = json!({"events": []});
    assert_error(
        &keep(app.post(DESTINATIONS, &app.admin_key, &bad_rule).await),
        400,
        "bad_request",
    );
    let mut bad_kind = webhook("soc");
    bad_kind["kind"] = json!("carrier-pigeon");
    assert_error(
        &keep(app.post(DESTINATIONS, &app.admin_key, &bad_kind).await),
        400,
        "bad_request",
    );
    assert_error(
        &app.post(DESTINATIONS, &app.member_key, &webhook("soc"))
            .await,
        403,
        "access_denied",
    );

    let created = keep(
        app.post(DESTINATIONS, &app.admin_key, &webhook("soc"))
            .await,
    );
    assert_eq!(created.status, 201, "{}", created.text);
    let id = created.json["id"].as_i64().unwrap();
    assert_eq!(created.json["settings"]["url_secret"], "HOOK_URL");
    assert_eq!(created.json["state"]["pending"], 0);
    let path = format!("{DESTINATIONS}/{id}");
    let duplicate = app
        .post(DESTINATIONS, &app.admin_key, &webhook("soc"))
        .await;
    assert_error(&duplicate, 400, "bad_request");
    assert!(
        duplicate.text.contains("named 'soc' exists"),
        "{}",
        duplicate.text
    );

    let read = keep(app.get(&path, &app.admin_key).await);
    assert_eq!(read.json["name"], "soc");
    let listed = keep(app.get(DESTINATIONS, &app.admin_key).await);
    assert_eq!(listed.json.as_array().unwrap().len(), 1);
    assert_error(
        &app.patch(&path, &app.admin_key, &json!({})).await,
        400,
        "bad_request",
    );
    assert_error(
        &app.patch(&path, &app.admin_key, &json!({"template": "{colour}"}))
            .await,
        400,
        "bad_request",
    );
    let changed = keep(
        app.patch(
            &path,
            &app.admin_key,
            &json!({"template": "{priority}: {title}", "rate_limit_per_minute": 600}),
        )
        .await,
    );
    assert_eq!(changed.status, 200, "{}", changed.text);
    assert_eq!(changed.json["template"], "{priority}: {title}");
    assert_eq!(changed.json["rate_limit_per_minute"], 600);

    // The receiver is unreachable: the answer says so, without the URL's token.
    let tested = keep(
        app.post(&format!("{path}/test"), &app.admin_key, &json!({}))
            .await,
    );
    assert_eq!(tested.status, 200, "{}", tested.text);
    assert_eq!(tested.json["ok"], false);
    assert_eq!(tested.json["result"], "try_again");

    let deliveries = keep(app.get(&format!("{path}/deliveries"), &app.admin_key).await);
    assert_eq!(deliveries.json, json!([]));
    assert_error(
        &app.get(&format!("{path}/deliveries?state=lost"), &app.admin_key)
            .await,
        400,
        "bad_request",
    );
    assert_error(
        &app.post(
            &format!("{path}/deliveries/12345/redeliver"),
            &app.admin_key,
            &json!({}),
        )
        .await,
        404,
        "not_found",
    );
    assert_error(
        &app.get(&format!("{DESTINATIONS}/999999"), &app.admin_key)
            .await,
        404,
        "not_found",
    );

    let disabled = keep(
        app.post(&format!("{path}/disable"), &app.admin_key, &json!({}))
            .await,
    );
    assert_eq!(disabled.json["enabled"], false);

    let schema = app.get("/app/api/v1/schema", &app.admin_key).await;
    assert!(
        schema
            .text
            .contains("/app/api/v1/notifications/destinations/{destination_id}/test"),
        "the API is described"
    );
    for text in answers.lock().unwrap().iter() {
        assert!(
            !text.contains("SECRETTOKEN"),
            "a URL's token answered: {text}"
        );
        assert!(
            !text.contains(SIGNING_KEY),
            "a signing key answered: {text}"
        );
    }
}

/// What a receiver saw: per event id, how many times, and whether every signature held.
#[derive(Debug, Default)]
struct Received {
    by_event: BTreeMap<String, usize>,
    bad_signatures: usize,
    /// Signed webhook bodies, in order.
    webhook_bodies: Vec<Value>,
    /// PagerDuty bodies, in order.
    bodies: Vec<Value>,
}

type Seen = Arc<Mutex<Received>>;

/// A receiver on `listener` that answers `status`; a webhook's signature is checked as a
/// receiver would (its clock, a five-minute window), and repeated event ids are counted,
/// not processed twice.
fn receive(listener: tokio::net::TcpListener, status: u16, seen: Seen) {
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let seen = seen.clone();
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let seen = seen.clone();
                async move {
                    let header = |name: &str| {
                        request
                            .headers()
                            .get(name)
                            .and_then(|value| value.to_str().ok())
                            .map(str::to_string)
                    };
                    let signed = header(signature::HEADER);
                    let event_id = header("X-Sleuth-Event-Id");
                    let body = request.into_body().collect().await.unwrap().to_bytes();
                    let mut received = seen.lock().unwrap();
                    if let Some(event_id) = event_id {
                        let now = chrono::Utc::now().timestamp();
                        let verified = signed.is_some_and(|signed| {
                            signature::verify(SIGNING_KEY.as_bytes(), &signed, &body, now, 300)
                                .is_ok()
                        });
                        if !verified {
                            received.bad_signatures += 1;
                        }
                        *received.by_event.entry(event_id).or_default() += 1;
                        if let Ok(value) = serde_json::from_slice::<Value>(&body) {
                            received.webhook_bodies.push(value);
                        }
                    } else if let Ok(value) = serde_json::from_slice::<Value>(&body) {
                        received.bodies.push(value);
                    }
                    drop(received);
                    Ok::<_, Infallible>(
                        Response::builder()
                            .status(status)
                            .body(Full::new(Bytes::from_static(b"{\"status\":\"seen\"}")))
                            .unwrap(),
                    )
                }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
            );
        }
    });
}

/// A port on loopback with nobody listening (yet).
async fn closed_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

async fn receiver(status: u16) -> (u16, Seen) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Seen::default();
    receive(listener, status, seen.clone());
    (port, seen)
}

/// Fast delivery for tests: rounds every 20 ms, retries from 50 ms, waits capped at
/// `max_delay_ms`, dead after `attempts`.
pub(crate) fn fast(settings: &mut Settings, max_delay_ms: u64, attempts: u32) {
    settings.notifications.tick_ms = 20;
    settings.notifications.retry_first_delay_ms = 50;
    settings.notifications.retry_max_delay_ms = max_delay_ms;
    settings.notifications.retry_max_attempts = attempts;
}

/// Runs the deliverer until the returned sender is dropped or sent `true`.
pub(crate) fn deliver(app: &TestApp) -> watch::Sender<bool> {
    let (stop, stopped) = watch::channel(false);
    tokio::spawn(sleuth_jobs::notify_delivery::run(
        app.state.runtime().clone(),
        app.store.clone(),
        stopped,
    ));
    stop
}

pub(crate) async fn create_destination(app: &TestApp, body: Value) -> i64 {
    let created = app.post(DESTINATIONS, &app.admin_key, &body).await;
    assert_eq!(created.status, 201, "{}", created.text);
    created.json["id"].as_i64().unwrap()
}

/// A signed webhook to `port`, its URL and key stored as secrets named after it.
async fn webhook_to(app: &TestApp, name: &str, port: u16) -> i64 {
    let upper = name.to_uppercase();
    put_secret(
        app,
        &format!("{upper}_URL"),
        &format!("http://127.0.0.1:{port}/hooks/{name}"),
    )
    .await;
    put_secret(app, &format!("{upper}_KEY"), SIGNING_KEY).await;
    create_destination(
        app,
        json!({
            "name": name,
            "kind": "webhook",
            "settings": {"url_secret": format!("{upper}_URL"), "signing_secret": format!("{upper}_KEY")},
            "rule": {"events": ["investigation.concluded"]},
        }),
    )
    .await
}

/// Creates and concludes `count` investigations; their ids.
pub(crate) async fn conclude(app: &TestApp, prefix: &str, count: usize) -> Vec<i64> {
    let mut ids = Vec::with_capacity(count);
    for index in 0..count {
        ids.push(
            app.create(&json!({
                "title": format!("Suspicious sign-in {prefix} {index}"),
                "id": format!("{prefix}-{index}"),
                "source_ip": "198.51.100.9",
            }))
            .await,
        );
    }
    assert_eq!(app.drain().await, count);
    ids
}

/// Waits (bounded) until `done` holds for the destination's deliveries by state.
pub(crate) async fn wait_for(
    app: &TestApp,
    destination_id: i64,
    within: Duration,
    done: impl Fn(&BTreeMap<&'static str, usize>) -> bool,
) -> BTreeMap<&'static str, usize> {
    let deadline = Instant::now() + within;
    loop {
        let deliveries = deliveries(app, destination_id, None).await;
        let mut counts = BTreeMap::new();
        for delivery in &deliveries {
            *counts.entry(delivery.state.as_str()).or_default() += 1;
        }
        if done(&counts) {
            return counts;
        }
        assert!(
            Instant::now() < deadline,
            "destination {destination_id} stands at {counts:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

macro_rules! with_fast_delivery {
    ($name:ident, $max_delay_ms:expr, $attempts:expr) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let app = $crate::harness::TestApp::start_with(
                    $crate::harness::Backend::Sqlite,
                    |settings| super::fast(settings, $max_delay_ms, $attempts),
                )
                .await;
                if let Some(app) = app {
                    super::$name(app).await;
                }
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let app = $crate::harness::TestApp::start_with(
                    $crate::harness::Backend::Postgres,
                    |settings| super::fast(settings, $max_delay_ms, $attempts),
                )
                .await;
                if let Some(app) = app {
                    super::$name(app).await;
                }
            }
        }
    };
}

// Waits between attempts capped at one second, and enough attempts to outlast the outage.
with_fast_delivery!(
    every_conclusion_reaches_a_receiver_that_was_down_for_30_seconds,
    1000,
    100
);
// Three attempts, then dead.
with_fast_delivery!(
    bad_destinations_end_dead_with_their_reason_while_a_good_one_delivers,
    200,
    3
);
// Waits capped at two seconds: above the receiver's one-second `Retry-After`.
with_fast_delivery!(
    a_429_pauses_the_destination_and_its_rate_limit_spaces_the_sends,
    2000,
    5
);
with_fast_delivery!(
    pagerduty_is_paged_on_a_conclusion_and_resolved_when_marked_a_false_alert,
    200,
    3
);
with_fast_delivery!(
    a_failed_response_action_run_is_told_to_the_destinations_that_want_it,
    200,
    3
);

/// How long the receiver is down.
const OUTAGE: Duration = Duration::from_secs(30);

async fn every_conclusion_reaches_a_receiver_that_was_down_for_30_seconds(app: TestApp) {
    let port = closed_port().await;
    let destination = webhook_to(&app, "soc", port).await;
    let _deliverer = deliver(&app);
    conclude(&app, "outage", 20).await;
    let down_since = Instant::now();
    // While it is down, every delivery waits; none is given up.
    let counts = wait_for(&app, destination, Duration::from_secs(20), |counts| {
        counts.get("pending") == Some(&20)
    })
    .await;
    assert_eq!(counts.get("dead"), None);
    tokio::time::sleep(OUTAGE.saturating_sub(down_since.elapsed())).await;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("the receiver's port is free again");
    let seen = Seen::default();
    receive(listener, 200, seen.clone());
    // Events that happen after the outage go out too.
    conclude(&app, "after", 5).await;
    wait_for(&app, destination, Duration::from_secs(30), |counts| {
        counts.get("delivered") == Some(&25)
    })
    .await;

    let stored: BTreeSet<String> = event_ids(&app, destination).await;
    let (delivered, bad_signatures) = {
        let received = seen.lock().unwrap();
        let delivered: BTreeSet<String> = received.by_event.keys().cloned().collect();
        (delivered, received.bad_signatures)
    };
    assert_eq!(
        delivered, stored,
        "every event arrived, each id once after dedupe"
    );
    assert_eq!(delivered.len(), 25);
    assert_eq!(bad_signatures, 0, "every signature verifies");
    let destination = app
        .store
        .get_notification_destination(destination)
        .await
        .unwrap();
    assert!(
        destination
            .last_error
            .as_deref()
            .is_some_and(|error| error.contains("could not deliver") && !error.contains("/hooks/")),
        "the outage's reason is kept, without the URL: {:?}",
        destination.last_error
    );
}

/// The sends a receiver took, in order: when, and which event.
type Arrivals = Arc<Mutex<Vec<(Instant, String)>>>;

/// A receiver that answers its fourth request 429 with `Retry-After: 1`, the others 200.
async fn busy_once_receiver() -> (u16, Arrivals) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let arrivals = Arrivals::default();
    let seen = arrivals.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let seen = seen.clone();
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let seen = seen.clone();
                async move {
                    let event_id = request
                        .headers()
                        .get("X-Sleuth-Event-Id")
                        .and_then(|value| value.to_str().ok())
                        .unwrap_or_default()
                        .to_string();
                    let fourth = {
                        let mut arrivals = seen.lock().unwrap();
                        arrivals.push((Instant::now(), event_id));
                        arrivals.len() == 4
                    };
                    let answer = if fourth {
                        Response::builder()
                            .status(429)
                            .header("Retry-After", "1")
                            .body(Full::new(Bytes::from_static(b"{\"error\":\"slow down\"}")))
                    } else {
                        Response::builder()
                            .status(200)
                            .body(Full::new(Bytes::new()))
                    };
                    Ok::<_, Infallible>(answer.unwrap())
                }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
            );
        }
    });
    (port, arrivals)
}

/// Six events concluded before the deliverer starts: the fourth send is answered 429,
/// which pauses the destination for the second it asks (the rest of the round waits,
/// queued); then everything goes out. No two sends, new or queued, come closer than the
/// destination's rate limit.
async fn a_429_pauses_the_destination_and_its_rate_limit_spaces_the_sends(app: TestApp) {
    let (port, arrivals) = busy_once_receiver().await;
    let destination = webhook_to(&app, "paced", port).await;
    let path = format!("{DESTINATIONS}/{destination}");
    // 1,200 a minute: one send every 50 ms at most.
    let changed = app
        .patch(
            &path,
            &app.admin_key,
            &json!({"rate_limit_per_minute": 1200}),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    conclude(&app, "paced", 6).await;
    let _deliverer = deliver(&app);
    wait_for(&app, destination, Duration::from_secs(20), |counts| {
        counts.get("delivered") == Some(&6)
    })
    .await;

    let arrivals = arrivals.lock().unwrap().clone();
    assert_eq!(
        arrivals.len(),
        7,
        "six events, one sent twice: {arrivals:?}"
    );
    let (refused_at, refused_event) = arrivals[3].clone();
    assert!(
        arrivals[4].0 - refused_at >= Duration::from_millis(950),
        "nothing is sent during the pause the receiver asked for: {:?}",
        arrivals[4].0 - refused_at
    );
    for pair in arrivals.windows(2) {
        assert!(
            pair[1].0 - pair[0].0 >= Duration::from_millis(45),
            "sends closer than the rate limit: {:?}",
            pair[1].0 - pair[0].0
        );
    }
    let delivered = deliveries(&app, destination, None).await;
    let ids: BTreeSet<&str> = arrivals.iter().map(|(_, id)| id.as_str()).collect();
    assert_eq!(ids.len(), 6);
    for delivery in &delivered {
        let expected = if delivery.event_id == refused_event {
            2
        } else {
            1
        };
        assert_eq!(
            (delivery.state, delivery.attempts),
            (DeliveryState::Delivered, expected),
            "{delivery:?}"
        );
    }
    let destination = app
        .store
        .get_notification_destination(destination)
        .await
        .unwrap();
    assert!(
        destination
            .last_error
            .as_deref()
            .is_some_and(|error| error.starts_with("HTTP 429")),
        "{:?}",
        destination.last_error
    );
    assert!(destination.paused_until.is_some());
}

/// The idempotency ids of a destination's deliveries.
async fn event_ids(app: &TestApp, destination_id: i64) -> BTreeSet<String> {
    deliveries(app, destination_id, None)
        .await
        .into_iter()
        .map(|delivery| delivery.event_id)
        .collect()
}

/// A destination's deliveries (at most 1000), newest first, in `state` if given.
pub(crate) async fn deliveries(
    app: &TestApp,
    destination_id: i64,
    state: Option<DeliveryState>,
) -> Vec<sleuth_store::DeliveryRecord> {
    app.store
        .list_notification_deliveries(&DeliveryQuery {
            destination_id,
            state,
            before_id: None,
            limit: 1000,
        })
        .await
        .unwrap()
}

async fn bad_destinations_end_dead_with_their_reason_while_a_good_one_delivers(app: TestApp) {
    let unreachable = webhook_to(&app, "unreachable", closed_port().await).await;
    let (broken_port, _) = receiver(500).await;
    let broken = webhook_to(&app, "broken", broken_port).await;
    let (good_port, good_seen) = receiver(204).await;
    let good = webhook_to(&app, "good", good_port).await;
    let _deliverer = deliver(&app);
    conclude(&app, "mixed", 6).await;

    wait_for(&app, good, Duration::from_secs(30), |counts| {
        counts.get("delivered") == Some(&6)
    })
    .await;
    assert_eq!(good_seen.lock().unwrap().by_event.len(), 6);
    for (destination, reason) in [(unreachable, "could not deliver"), (broken, "HTTP 500")] {
        wait_for(&app, destination, Duration::from_secs(60), |counts| {
            counts.get("dead") == Some(&6)
        })
        .await;
        let dead = deliveries(&app, destination, Some(DeliveryState::Dead)).await;
        for delivery in &dead {
            let error = delivery.last_error.as_deref().unwrap_or_default();
            assert!(
                error.starts_with("gave up after 3 attempts") && error.contains(reason),
                "{error}"
            );
            assert_eq!(delivery.attempts, 3);
        }
        // A dead delivery is sent again on request, its attempts counted anew (the
        // destination disabled first, so that the deliverer leaves it pending).
        let disabled = app
            .post(
                &format!("{DESTINATIONS}/{destination}/disable"),
                &app.admin_key,
                &json!({}),
            )
            .await;
        assert_eq!(disabled.status, 200, "{}", disabled.text);
        let path = format!(
            "{DESTINATIONS}/{destination}/deliveries/{}/redeliver",
            dead[0].id
        );
        let again = app.post(&path, &app.admin_key, &json!({})).await;
        assert_eq!(again.status, 200, "{}", again.text);
        assert_eq!(again.json["state"], "pending");
        assert_eq!(again.json["attempts"], 0);
        let listed = app
            .get(
                &format!("{DESTINATIONS}/{destination}/deliveries?state=dead"),
                &app.admin_key,
            )
            .await;
        assert_eq!(listed.json.as_array().unwrap().len(), 5, "{}", listed.text);
    }
}

async fn pagerduty_is_paged_on_a_conclusion_and_resolved_when_marked_a_false_alert(app: TestApp) {
    let (port, seen) = receiver(202).await;
    put_secret(&app, "PD_ROUTING_KEY", "R0UTINGKEY0123456789").await;
    let destination = create_destination(
        &app,
        json!({
            "name": "pager",
            "kind": "pagerduty",
            "settings": {
                "routing_key_secret": "PD_ROUTING_KEY",
                "events_url": format!("http://127.0.0.1:{port}/v2/enqueue"),
            },
            "rule": {"events": ["investigation.concluded", "investigation.closed"]},
        }),
    )
    .await;
    let _deliverer = deliver(&app);
    let investigation_id = conclude(&app, "page", 1).await[0];
    wait_for(&app, destination, Duration::from_secs(30), |counts| {
        counts.get("delivered") == Some(&1)
    })
    .await;
    let feedback = app
        .patch(
            &format!("/app/api/v1/investigation/{investigation_id}/feedback"),
            &app.member_key,
            &json!({"outcome": "COMPLETED_FALSE_ALERT", "outcome_note": "a test login"}),
        )
        .await;
    assert_eq!(feedback.status, 200, "{}", feedback.text);
    wait_for(&app, destination, Duration::from_secs(30), |counts| {
        counts.get("delivered") == Some(&2)
    })
    .await;
    let received = seen.lock().unwrap();
    let actions: Vec<&str> = received
        .bodies
        .iter()
        .map(|body| body["event_action"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(actions, ["trigger", "resolve"]);
    assert_eq!(
        received.bodies[0]["dedup_key"], received.bodies[1]["dedup_key"],
        "the resolve closes what the trigger opened"
    );
    assert_eq!(received.bodies[0]["routing_key"], "R0UTINGKEY0123456789");
}

async fn a_failed_response_action_run_is_told_to_the_destinations_that_want_it(app: TestApp) {
    let (port, seen) = receiver(200).await;
    let failures = webhook_to(&app, "failures", port).await;
    let changed = app
        .patch(
            &format!("{DESTINATIONS}/{failures}"),
            &app.admin_key,
            &json!({"rule": {"events": ["response_action.run_failed"]}}),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    // Told of conclusions only: a failed run is not its business.
    let (other_port, other_seen) = receiver(200).await;
    let conclusions = webhook_to(&app, "conclusions", other_port).await;
    let script = app
        .post(
            "/app/api/v1/response-actions",
            &app.admin_key,
            &json!({
                "display_name": "Isolate the host",
                "trigger_def_uuid": sleuth_jobs::trigger_catalog::trigger_uuid("investigation_completed").to_string(),
                "code": "raise RuntimeError('EDR answered 403 to the isolation')",
            }),
        )
        .await;
    assert_eq!(script.status, 201, "{}", script.text);
    let _deliverer = deliver(&app);
    let investigation_id = conclude(&app, "isolate", 1).await[0];
    wait_for(&app, failures, Duration::from_secs(60), |counts| {
        counts.get("delivered") == Some(&1)
    })
    .await;
    wait_for(&app, conclusions, Duration::from_secs(30), |counts| {
        counts.get("delivered") == Some(&1)
    })
    .await;

    let (told, bad_signatures) = {
        let received = seen.lock().unwrap();
        assert_eq!(
            received.webhook_bodies.len(),
            1,
            "{:?}",
            received.webhook_bodies
        );
        (received.webhook_bodies[0].clone(), received.bad_signatures)
    };
    assert_eq!(told["type"], "response_action.run_failed", "{told}");
    assert_eq!(told["data"]["action_name"], "Isolate the host");
    // The test app sets up no sandbox: the run ends in `error`, with the runner's word.
    let run_path = told["data"]["link"]
        .as_str()
        .and_then(|link| link.find("/app/api/").map(|at| link[at..].to_string()))
        .unwrap_or_default();
    let run = app.get(&run_path, &app.admin_key).await;
    assert_eq!(run.status, 200, "{}", run.text);
    assert_eq!(told["data"]["status"], run.json["status"], "{told}");
    assert!(
        ["failed", "error", "timed_out"].contains(&run.json["status"].as_str().unwrap_or("")),
        "{}",
        run.text
    );
    let output = run.json["syserr"]
        .as_str()
        .filter(|syserr| !syserr.trim().is_empty())
        .or(run.json["stderr"].as_str())
        .unwrap_or_default();
    let detail = told["data"]["detail"].as_str().unwrap_or_default();
    assert!(
        !detail.is_empty() && output.trim().ends_with(detail.trim_start_matches('…')),
        "the detail is the end of the run's error: {told} / {output}"
    );
    assert!(
        told["data"]["link"]
            .as_str()
            .is_some_and(|link| link.contains("/app/api/v1/response-actions/runs/")),
        "{told}"
    );
    assert_eq!(bad_signatures, 0);
    {
        let other = other_seen.lock().unwrap();
        assert_eq!(other.webhook_bodies.len(), 1);
        assert_eq!(other.webhook_bodies[0]["type"], "investigation.concluded");
    }
    // The failure is a system event of its own, listed and filtered like the triggers.
    let listed = app
        .get(
            "/app/api/v1/system-events/list?trigger_name=response_action_run_failed",
            &app.admin_key,
        )
        .await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(listed.json["count"], 1, "{}", listed.text);
    assert_eq!(
        listed.json["results"][0]["trigger_args"]["investigation_id"],
        investigation_id
    );
}
