//! Pull connectors against loopback vendors that answer in each vendor's documented
//! shapes: paging, sign-in and token expiry, 429 with Retry-After, 5xx; a poll killed
//! mid-page; two pollers at once; the admin API.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use sleuth_connectors::Timing;
use sleuth_jobs::connector_runtime::{self, PollOptions, PollSummary, WritebackSummary};
use sleuth_store::{ConnectorChanges, ConnectorPage, Store, StoreError};
use tokio::sync::watch;

use crate::harness::{TestApp, assert_error};
use crate::on_both_backends;
use crate::vendors::{
    Faults, GOOGLE_KEY_NAME, LoopbackVendor, OTHER_TEST_KEY, SECRET, SECRET_NAME, Vendor,
    google_key_file,
};

on_both_backends!(
    each_vendor_is_drained_through_its_paging_token_expiry_429_and_5xx,
    a_vendor_that_keeps_failing_is_an_error_that_backs_off_and_shows_no_secret,
    a_poll_killed_mid_page_neither_skips_nor_duplicates,
    two_pollers_never_poll_one_connector_at_once,
    connectors_are_managed_and_tested_by_admins_over_the_api,
    a_google_key_google_does_not_know_or_a_wrong_admin_is_refused,
    verdicts_are_written_back_once_concluded_and_retried_when_the_vendor_fails,
);

const CONNECTORS: &str = "/app/api/v1/connectors";

const ALL: [Vendor; 6] = [
    Vendor::Crowdstrike,
    Vendor::Graph,
    Vendor::Okta,
    Vendor::Sentinelone,
    Vendor::Elastic,
    Vendor::Google,
];

fn quick() -> Timing {
    Timing {
        attempts: 4,
        backoff: Duration::from_millis(20),
        max_inline_wait: Duration::from_secs(5),
        request_timeout: Duration::from_secs(10),
    }
}

fn options(lease: chrono::Duration) -> PollOptions {
    PollOptions {
        lease,
        timing: quick(),
    }
}

/// Stores the secrets the loopback vendors accept: the token and the Google key.
async fn store_secret(app: &TestApp) {
    for vendor in [Vendor::Okta, Vendor::Google] {
        let (name, value) = vendor.secret();
        put_secret(app, name, &value).await;
    }
}

async fn put_secret(app: &TestApp, name: &str, value: &str) {
    let answer = app
        .raw(
            "PUT",
            &format!("/app/api/v1/response-actions/secrets/{name}"),
            Some(&app.admin_key),
            Some("application/json"),
            Some(json!({"value": value}).to_string().into_bytes()),
        )
        .await;
    assert_eq!(answer.status, 204, "{}", answer.text);
}

async fn create_connector(
    app: &TestApp,
    name: &str,
    vendor: Vendor,
    address: &str,
    page_size: u32,
) -> i64 {
    let answer = app
        .post(
            CONNECTORS,
            &app.admin_key,
            &json!({"name": name, "kind": vendor.kind(), "interval_seconds": 60,
                    "settings": vendor.settings(address, page_size)}),
        )
        .await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    answer.json["id"].as_i64().unwrap()
}

/// Makes the connector due, leases it and polls it once, as the runtime would.
async fn poll_now(app: &TestApp, connector_id: i64, lease: chrono::Duration) -> PollSummary {
    let (token, connector) = lease_now(app, connector_id, lease).await;
    let (_stop, shutdown) = watch::channel(false);
    connector_runtime::poll(
        &app.state,
        &app.store,
        connector,
        &token,
        &shutdown,
        options(lease),
    )
    .await
}

/// The connector's `state`, as the API shows it.
async fn connector_state(app: &TestApp, connector_id: i64) -> Value {
    let answer = app
        .get(&format!("{CONNECTORS}/{connector_id}"), &app.admin_key)
        .await;
    answer.json["state"].clone()
}

/// `POST …/{id}/test`: one page read and parsed, nothing stored.
async fn test_now(app: &TestApp, connector_id: i64) -> crate::harness::Answer {
    app.post(
        &format!("{CONNECTORS}/{connector_id}/test"),
        &app.admin_key,
        &json!({}),
    )
    .await
}

async fn lease_now(
    app: &TestApp,
    connector_id: i64,
    lease: chrono::Duration,
) -> (String, sleuth_store::ConnectorRecord) {
    let now = chrono::Utc::now();
    // Resuming an enabled connector makes it due at once.
    app.store
        .update_connector(
            connector_id,
            &ConnectorChanges {
                enabled: Some(true),
                ..ConnectorChanges::default()
            },
            now,
        )
        .await
        .unwrap();
    let token = uuid::Uuid::new_v4().to_string();
    assert!(
        app.store
            .lease_connector(connector_id, &token, now, now + lease)
            .await
            .unwrap(),
        "the connector could not be leased"
    );
    (token, app.store.get_connector(connector_id).await.unwrap())
}

async fn pending(app: &TestApp) -> u64 {
    app.store.pending_jobs().await.unwrap()
}

async fn each_vendor_is_drained_through_its_paging_token_expiry_429_and_5xx(app: TestApp) {
    store_secret(&app).await;
    let mut expected = 0;
    for vendor in ALL {
        // Request 2 is refused for a while (429), request 4 fails (503), and an OAuth2
        // token is good for two requests only.
        let faults = Faults {
            rate_limit_at: Some(2),
            unavailable_at: Some(4),
            token_serves: Some(2),
            ..Faults::default()
        };
        let loopback = LoopbackVendor::start(vendor, 7, faults).await;
        let id = create_connector(&app, vendor.kind(), vendor, &loopback.address, 3).await;
        let summary = poll_now(&app, id, chrono::Duration::seconds(60)).await;
        assert_eq!(summary.error, None, "{vendor:?}");
        assert_eq!(
            (summary.taken, summary.refused),
            (7, 0),
            "{vendor:?}: {summary:?}"
        );
        assert!(summary.caught_up, "{vendor:?}");
        expected += 7;
        assert_eq!(pending(&app).await, expected, "{vendor:?}");

        let seen = loopback.seen();
        let limited = seen
            .iter()
            .position(|seen| seen.status == 429)
            .expect("a 429");
        let waited = seen[limited + 1].at - seen[limited].at;
        assert!(
            waited >= Duration::from_millis(950),
            "{vendor:?}: Retry-After honoured, waited {waited:?}"
        );
        assert!(seen.iter().any(|seen| seen.status == 503), "{vendor:?}");
        let scheme = match vendor {
            Vendor::Crowdstrike | Vendor::Graph | Vendor::Google => "Bearer ",
            Vendor::Okta => "SSWS ",
            Vendor::Sentinelone => "ApiToken ",
            Vendor::Elastic => "ApiKey ",
        };
        assert!(
            seen.iter()
                .filter(|seen| !seen.path.ends_with("/token"))
                .all(|seen| seen
                    .authorization
                    .as_deref()
                    .is_some_and(|value| value.starts_with(scheme))),
            "{vendor:?} signs in as the vendor documents"
        );
        if vendor.oauth() {
            assert!(
                seen.iter().any(|seen| seen.status == 401),
                "{vendor:?}: the token expired mid-drain"
            );
            assert!(
                loopback
                    .shared
                    .sign_ins
                    .load(std::sync::atomic::Ordering::SeqCst)
                    >= 2,
                "{vendor:?}: a fresh token after the 401"
            );
        }

        // Two new alerts: the next poll takes them and nothing else.
        loopback.add_alerts(2);
        let summary = poll_now(&app, id, chrono::Duration::seconds(60)).await;
        assert_eq!(summary.error, None, "{vendor:?}");
        assert_eq!(summary.taken, 2, "{vendor:?}: {summary:?}");
        expected += 2;
        assert_eq!(pending(&app).await, expected, "{vendor:?}");

        let state = app
            .get(&format!("{CONNECTORS}/{id}"), &app.admin_key)
            .await
            .json["state"]
            .clone();
        assert_eq!(state["alerts_taken"], 9, "{vendor:?}: {state}");
        assert_eq!(state["alerts_refused"], 0, "{vendor:?}: {state}");
        assert_eq!(state["last_error"], Value::Null, "{vendor:?}: {state}");
        assert_eq!(state["polls"], 2, "{vendor:?}: {state}");
        assert!(state["caught_up_at"].is_string(), "{vendor:?}: {state}");
        assert!(
            state["lag_seconds"].as_i64().unwrap() <= 5,
            "{vendor:?}: {state}"
        );
    }
    // The investigations are the vendors' alerts, read by their parsers.
    app.drain().await;
    let answer = app
        .get("/app/api/v1/investigation?limit=100", &app.reader_key)
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let mut labels = std::collections::BTreeSet::new();
    collect_labels(&answer.json, &mut labels);
    assert!(labels.len() >= 6, "one source label per vendor: {labels:?}");
    let metrics = app.get("/metrics", &app.reader_key).await.text;
    assert!(
        metrics.contains(
            "sleuth_connector_alerts_total{connector=\"crowdstrike\",outcome=\"taken\"} 9"
        ),
        "{metrics}"
    );
}

/// Every `direct_source_label` in an answer.
fn collect_labels(value: &Value, labels: &mut std::collections::BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("direct_source_label", Value::String(label)) => {
                        labels.insert(label.clone());
                    }
                    _ => collect_labels(value, labels),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_labels(item, labels)),
        _ => {}
    }
}

async fn a_vendor_that_keeps_failing_is_an_error_that_backs_off_and_shows_no_secret(app: TestApp) {
    store_secret(&app).await;
    let loopback = LoopbackVendor::start(
        Vendor::Okta,
        3,
        Faults {
            always: Some(503),
            ..Faults::default()
        },
    )
    .await;
    let id = create_connector(&app, "okta", Vendor::Okta, &loopback.address, 3).await;
    let before = chrono::Utc::now();
    let summary = poll_now(&app, id, chrono::Duration::seconds(60)).await;
    let error = summary.error.expect("the poll failed");
    assert!(error.contains("503"), "{error}");
    assert_eq!(
        loopback.seen().len(),
        4,
        "every attempt of the request was made"
    );
    let connector = app.store.get_connector(id).await.unwrap();
    assert_eq!(connector.failures, 1);
    assert_eq!(connector.cursor, None, "nothing read, the cursor stays");
    assert!(
        connector.next_poll_at >= before + chrono::Duration::seconds(4),
        "backs off"
    );
    assert_eq!(pending(&app).await, 0);

    // The vendor echoes the credentials in its refusal: they are masked everywhere.
    *loopback.shared.faults.lock().unwrap() = Faults {
        always: Some(401),
        ..Faults::default()
    };
    let summary = poll_now(&app, id, chrono::Duration::seconds(60)).await;
    let error = summary.error.expect("refused");
    assert!(error.contains("401") && error.contains("***"), "{error}");
    assert!(!error.contains(SECRET), "{error}");
    let connector = app.store.get_connector(id).await.unwrap();
    assert_eq!(connector.failures, 2);
    assert!(connector.next_poll_at >= chrono::Utc::now() + chrono::Duration::seconds(8));
    for answer in [
        app.get(&format!("{CONNECTORS}/{id}"), &app.admin_key).await,
        app.get(CONNECTORS, &app.admin_key).await,
        test_now(&app, id).await,
    ] {
        assert_eq!(answer.status, 200, "{}", answer.text);
        assert!(!answer.text.contains(SECRET), "{}", answer.text);
    }
    // A working vendor again: the failures end.
    *loopback.shared.faults.lock().unwrap() = Faults::default();
    let summary = poll_now(&app, id, chrono::Duration::seconds(60)).await;
    assert_eq!((summary.error, summary.taken), (None, 3));
    assert_eq!(app.store.get_connector(id).await.unwrap().failures, 0);
}

async fn a_poll_killed_mid_page_neither_skips_nor_duplicates(app: TestApp) {
    store_secret(&app).await;
    // Falcon: requests 1 (query) and 2 (entities) are page one, 3 queries page two, and 4,
    // its entities, never answers. Google: request 1 is page one, 2 never answers. The
    // poller is killed there.
    let mut stored = 0;
    for (vendor, hang_at) in [(Vendor::Crowdstrike, 4), (Vendor::Google, 2)] {
        let loopback = LoopbackVendor::start(
            vendor,
            9,
            Faults {
                hang_at: Some(hang_at),
                ..Faults::default()
            },
        )
        .await;
        let id = create_connector(&app, vendor.kind(), vendor, &loopback.address, 3).await;
        let lease = chrono::Duration::seconds(1);
        let (stale_token, connector) = lease_now(&app, id, lease).await;
        let (state, store) = (app.state.clone(), app.store.clone());
        let token = stale_token.clone();
        let poller = tokio::spawn(async move {
            let (_stop, shutdown) = watch::channel(false);
            connector_runtime::poll(&state, &store, connector, &token, &shutdown, options(lease))
                .await
        });
        while loopback.api_requests() < hang_at {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        poller.abort();
        let _ = poller.await;
        let connector = app.store.get_connector(id).await.unwrap();
        assert_eq!(
            connector.alerts_taken, 3,
            "{vendor:?}: page one was stored with its cursor"
        );
        assert_eq!(pending(&app).await, stored + 3, "{vendor:?}");
        let cursor_after_page_one = connector.cursor.clone().expect("a cursor");

        // The dead poller's lease runs out; another takes the connector and goes on from
        // the cursor: pages two and three, nothing twice.
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let summary = poll_now(&app, id, chrono::Duration::seconds(60)).await;
        assert_eq!(summary.error, None, "{vendor:?}");
        assert_eq!(
            (summary.taken, summary.known),
            (6, 0),
            "{vendor:?}: {summary:?}"
        );
        stored += 9;
        assert_eq!(pending(&app).await, stored, "{vendor:?}");
        if vendor != Vendor::Crowdstrike {
            continue;
        }

        // Should the dead poller's page still arrive, it is refused whole.
        let alert = loopback.shared.alerts.lock().unwrap()[4].clone();
        let new_alert = stale_alert(&alert);
        let refused = app
            .store
            .commit_connector_page(ConnectorPage {
                connector_id: id,
                lease_token: stale_token,
                alerts: vec![new_alert],
                refused: 0,
                refused_reason: None,
                cursor: cursor_after_page_one,
                caught_up: false,
                write_back_ids: Vec::new(),
                lease_until: chrono::Utc::now() + chrono::Duration::seconds(60),
                at: chrono::Utc::now(),
            })
            .await;
        assert!(
            matches!(refused, Err(StoreError::Rejected { .. })),
            "{refused:?}"
        );
        assert_eq!(pending(&app).await, stored);
        assert_eq!(app.store.get_connector(id).await.unwrap().alerts_taken, 9);
    }
}

/// An alert made ready to store, as a connector's page carries it (a changed copy, so
/// that storing it would show).
fn stale_alert(alert: &Value) -> sleuth_store::NewAlert {
    let mut alert = alert.clone();
    alert["composite_id"] = json!("stale:ind:ffff:1");
    let now = chrono::Utc::now();
    let parsed =
        sleuth_parsers::parse_alert(Some("crowdstrike_falcon_alert"), &alert, now).unwrap();
    let content_hash = sleuth_store::canonical_hash(&alert);
    sleuth_store::NewAlert {
        identity: sleuth_store::alert_identity(&parsed, &content_hash, 1, None),
        parsed,
        raw_alert_content: alert.to_string(),
        content_hash,
        tenant_union_id: 1,
        tenant_integration_key: None,
        received_at: now,
    }
}

async fn two_pollers_never_poll_one_connector_at_once(app: TestApp) {
    store_secret(&app).await;
    let loopback = LoopbackVendor::start(Vendor::Sentinelone, 20, Faults::default()).await;
    let id = create_connector(&app, "s1", Vendor::Sentinelone, &loopback.address, 2).await;

    // Eight processes asking at once: one lease.
    let now = chrono::Utc::now();
    let attempts = (0..8).map(|attempt| {
        let store: Arc<dyn Store> = app.store.clone();
        tokio::spawn(async move {
            store
                .lease_connector(
                    id,
                    &format!("token-{attempt}"),
                    now,
                    now + chrono::Duration::seconds(1),
                )
                .await
                .unwrap()
        })
    });
    let mut won = 0;
    for attempt in attempts {
        won += usize::from(attempt.await.unwrap());
    }
    assert_eq!(won, 1);
    tokio::time::sleep(Duration::from_millis(1100)).await;

    // Two runtimes (as two processes would run) drain it together: one at a time.
    let (stop, shutdown) = watch::channel(false);
    let runtimes: Vec<_> = (0..2)
        .map(|_| {
            tokio::spawn(connector_runtime::run(
                app.state.runtime().clone(),
                app.store.clone(),
                shutdown.clone(),
            ))
        })
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let connector = app.store.get_connector(id).await.unwrap();
        if connector.caught_up_at.is_some() && connector.lease_expires_at.is_none() {
            assert_eq!(connector.alerts_taken, 20);
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not drained: {connector:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.send(true).unwrap();
    for runtime in runtimes {
        runtime.await.unwrap();
    }
    assert_eq!(
        loopback
            .shared
            .max_in_flight
            .load(std::sync::atomic::Ordering::SeqCst),
        1,
        "one poller at a time"
    );
    assert_eq!(pending(&app).await, 20);
}

async fn connectors_are_managed_and_tested_by_admins_over_the_api(app: TestApp) {
    let loopback = LoopbackVendor::start(Vendor::Crowdstrike, 4, Faults::default()).await;
    let settings = Vendor::Crowdstrike.settings(&loopback.address, 3);
    let body = json!({"name": "falcon", "kind": "crowdstrike", "settings": settings});
    // The secret must be stored first.
    let answer = app.post(CONNECTORS, &app.admin_key, &body).await;
    assert_error(&answer, 400, "bad_request");
    assert!(answer.text.contains("settings.secret"), "{}", answer.text);
    store_secret(&app).await;

    for (bad, field) in [
        (
            json!({"name": "x", "kind": "qradar", "settings": settings}),
            "kind",
        ),
        (
            json!({"name": "", "kind": "crowdstrike", "settings": settings}),
            "name",
        ),
        (json!({"name": "x", "kind": "crowdstrike"}), "settings"),
        (
            json!({"name": "x", "kind": "crowdstrike", "settings": settings, "interval_seconds": 0}),
            "interval_seconds",
        ),
        (
            json!({"name": "x", "kind": "crowdstrike", "settings": {"base_url": "http://127.0.0.1:1", "secret": SECRET_NAME}}),
            "settings.client_id",
        ),
        (
            json!({"name": "x", "kind": "crowdstrike", "settings": {"base_url": "file:///etc/passwd", "secret": SECRET_NAME, "client_id": "c"}}),
            "settings.base_url",
        ),
        (
            json!({"name": "x", "kind": "crowdstrike", "settings": settings, "tenant_union_id": 999}),
            "tenant_union_id",
        ),
    ] {
        let answer = app.post(CONNECTORS, &app.admin_key, &bad).await;
        assert_error(&answer, 400, "bad_request");
        assert!(answer.text.contains(field), "{field}: {}", answer.text);
    }
    let answer = app.post(CONNECTORS, &app.member_key, &body).await;
    assert_eq!(answer.status, 403, "{}", answer.text);
    assert!(
        app.store.list_connectors().await.unwrap().is_empty(),
        "nothing stored"
    );

    let answer = app.post(CONNECTORS, &app.admin_key, &body).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    let id = answer.json["id"].as_i64().unwrap();
    assert_eq!(answer.json["interval_seconds"], 300);
    assert_eq!(answer.json["state"]["cursor"], Value::Null);
    let answer = app.post(CONNECTORS, &app.admin_key, &body).await;
    assert_error(&answer, 400, "bad_request");
    assert!(
        answer.text.contains("a connector named 'falcon' exists"),
        "{}",
        answer.text
    );

    // A test reads one page, parses it, and stores nothing.
    let answer = test_now(&app, id).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json["ok"], true, "{}", answer.text);
    assert_eq!(
        (
            answer.json["alerts"].as_u64(),
            answer.json["readable"].as_u64()
        ),
        (Some(3), Some(3))
    );
    assert_eq!(answer.json["more_pages"], true);
    assert!(!answer.json["titles"][0].as_str().unwrap().is_empty());
    assert_eq!(pending(&app).await, 0);
    assert_eq!(app.store.get_connector(id).await.unwrap().cursor, None);

    // Paused, the runtime does not take it; resumed, it is due at once.
    let answer = app
        .patch(
            &format!("{CONNECTORS}/{id}"),
            &app.admin_key,
            &json!({"enabled": false}),
        )
        .await;
    assert_eq!(
        (answer.status, answer.json["enabled"].clone()),
        (200, json!(false)),
        "{}",
        answer.text
    );
    let now = chrono::Utc::now();
    assert!(
        !app.store
            .lease_connector(id, "t", now, now + chrono::Duration::seconds(5))
            .await
            .unwrap()
    );
    let answer = app
        .patch(&format!("{CONNECTORS}/{id}"), &app.admin_key, &json!({}))
        .await;
    assert_error(&answer, 400, "bad_request");
    let answer = app
        .patch(
            &format!("{CONNECTORS}/{id}"),
            &app.admin_key,
            &json!({"settings": {"base_url": "x"}}),
        )
        .await;
    assert_error(&answer, 400, "bad_request");
    let summary = poll_now(&app, id, chrono::Duration::seconds(60)).await;
    assert_eq!((summary.error, summary.taken), (None, 4));

    // Starting again from the backfill window stores nothing twice.
    let answer = app
        .patch(
            &format!("{CONNECTORS}/{id}"),
            &app.admin_key,
            &json!({"reset_cursor": true}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json["state"]["cursor"], Value::Null);
    let summary = poll_now(&app, id, chrono::Duration::seconds(60)).await;
    assert_eq!((summary.taken, summary.known), (0, 4), "{summary:?}");
    assert_eq!(pending(&app).await, 4);

    let answer = app.get(CONNECTORS, &app.admin_key).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json[0]["state"]["alerts_taken"], 4);
    assert_eq!(answer.json[0]["state"]["alerts_known"], 4);
    assert_eq!(app.get(CONNECTORS, &app.member_key).await.status, 403);

    let answer = app
        .raw(
            "DELETE",
            &format!("{CONNECTORS}/{id}"),
            Some(&app.admin_key),
            None,
            None,
        )
        .await;
    assert_eq!(answer.status, 204, "{}", answer.text);
    let answer = app.get(&format!("{CONNECTORS}/{id}"), &app.admin_key).await;
    assert_eq!(answer.status, 404, "{}", answer.text);
    let answer = app.get(&format!("{CONNECTORS}/abc"), &app.admin_key).await;
    assert_eq!(answer.status, 404, "{}", answer.text);
}

async fn a_google_key_google_does_not_know_or_a_wrong_admin_is_refused(app: TestApp) {
    store_secret(&app).await;
    let loopback = LoopbackVendor::start(Vendor::Google, 3, Faults::default()).await;
    let id = create_connector(&app, "workspace", Vendor::Google, &loopback.address, 2).await;

    // The account's email with another private key: the signature does not verify.
    let other_key = google_key_file(OTHER_TEST_KEY);
    put_secret(&app, GOOGLE_KEY_NAME, &other_key).await;
    let summary = poll_now(&app, id, chrono::Duration::seconds(60)).await;
    let error = summary.error.expect("refused");
    assert!(
        error.contains("400") && error.contains("Invalid JWT Signature"),
        "{error}"
    );
    assert!(!error.contains("PRIVATE KEY"), "{error}");
    assert_eq!(loopback.api_requests(), 0, "no token, no alert request");

    // The right key, acting for an admin the account is not delegated for.
    store_secret(&app).await;
    let mut settings = Vendor::Google.settings(&loopback.address, 2);
    settings["subject"] = json!("intern@example.com");
    let answer = app
        .patch(
            &format!("{CONNECTORS}/{id}"),
            &app.admin_key,
            &json!({"settings": settings}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let summary = poll_now(&app, id, chrono::Duration::seconds(60)).await;
    assert!(
        summary
            .error
            .as_deref()
            .is_some_and(|error| error.contains("unauthorized")),
        "{summary:?}"
    );

    // A secret that is no service account key: the test says so and quotes nothing of it.
    put_secret(
        &app,
        GOOGLE_KEY_NAME,
        "{\"client_email\": \"x@y\", \"private_key\": \"hunter2-hunter2\"}",
    )
    .await;
    let answer = test_now(&app, id).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json["ok"], false, "{}", answer.text);
    assert!(answer.text.contains("PKCS#8"), "{}", answer.text);
    assert!(!answer.text.contains("hunter2"), "{}", answer.text);

    // Mended: the three alerts, two pages, read by the Google Workspace parser.
    store_secret(&app).await;
    let answer = app
        .patch(
            &format!("{CONNECTORS}/{id}"),
            &app.admin_key,
            &json!({"settings": Vendor::Google.settings(&loopback.address, 2)}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let summary = poll_now(&app, id, chrono::Duration::seconds(60)).await;
    assert_eq!(summary.error, None);
    assert_eq!((summary.taken, summary.pages), (3, 2), "{summary:?}");
    app.drain().await;
    let answer = app
        .get("/app/api/v1/investigation?limit=10", &app.reader_key)
        .await;
    let mut labels = std::collections::BTreeSet::new();
    collect_labels(&answer.json, &mut labels);
    assert!(labels.contains("Google Workspace"), "{labels:?}");
}

async fn verdicts_are_written_back_once_concluded_and_retried_when_the_vendor_fails(app: TestApp) {
    store_secret(&app).await;
    for vendor in [Vendor::Crowdstrike, Vendor::Graph] {
        let loopback = LoopbackVendor::start(vendor, 3, Faults::default()).await;
        let mut settings = vendor.settings(&loopback.address, 3);
        settings["write_back"] = json!(true);
        let answer = app
            .post(
                CONNECTORS,
                &app.admin_key,
                &json!({"name": vendor.kind(), "kind": vendor.kind(), "settings": settings}),
            )
            .await;
        assert_eq!(answer.status, 201, "{}", answer.text);
        let id = answer.json["id"].as_i64().unwrap();
        let summary = poll_now(&app, id, chrono::Duration::seconds(60)).await;
        assert_eq!((summary.error, summary.taken), (None, 3), "{vendor:?}");
        assert_eq!(
            connector_state(&app, id).await["writebacks_pending"],
            3,
            "{vendor:?}"
        );

        // Nothing is sent before an investigation concludes.
        let now = chrono::Utc::now();
        let round = connector_runtime::write_back_due(&app.state, &app.store, now, quick()).await;
        assert_eq!(round, WritebackSummary::default(), "{vendor:?}");
        app.drain().await;

        // The vendor's first answer is a 429: honoured, and the update sent again.
        let next = loopback.api_requests() + 1;
        loopback.shared.faults.lock().unwrap().rate_limit_at = Some(next);
        let round = connector_runtime::write_back_due(&app.state, &app.store, now, quick()).await;
        assert_eq!((round.sent, round.failed), (3, 0), "{vendor:?}");
        assert!(loopback.seen().iter().any(|seen| seen.status == 429));
        let updates = loopback.shared.updates.lock().unwrap().clone();
        let alerts = loopback.shared.alerts.lock().unwrap().clone();
        match vendor {
            Vendor::Crowdstrike => {
                assert_eq!(updates.len(), 3, "{updates:?}");
                for (alert, (_, path, body)) in alerts.iter().zip(&updates) {
                    assert_eq!(path, "/alerts/entities/alerts/v3");
                    assert_eq!(body["composite_ids"], json!([alert["composite_id"]]));
                    let comment = &body["action_parameters"][0];
                    assert_eq!(comment["name"], "append_comment");
                    assert!(
                        comment["value"]
                            .as_str()
                            .unwrap()
                            .starts_with("Sleuth investigation "),
                        "{body}"
                    );
                }
            }
            _ => {
                let comments: Vec<_> = updates
                    .iter()
                    .filter(|(method, _, _)| method == "POST")
                    .collect();
                assert_eq!(comments.len(), 3, "{updates:?}");
                for alert in &alerts {
                    let path = format!(
                        "/v1.0/security/alerts_v2/{}/comments",
                        alert["id"].as_str().unwrap()
                    );
                    assert!(comments.iter().any(|(_, seen, _)| *seen == path), "{path}");
                }
                for (_, _, body) in updates.iter().filter(|(method, _, _)| method == "PATCH") {
                    assert!(
                        ["truePositive", "falsePositive"]
                            .contains(&body["classification"].as_str().unwrap()),
                        "{body}"
                    );
                }
            }
        }
        let shown = connector_state(&app, id).await;
        assert_eq!(
            (
                shown["writebacks_sent"].clone(),
                shown["writebacks_pending"].clone()
            ),
            (json!(3), json!(0)),
            "{vendor:?}: {shown}"
        );
        let round = connector_runtime::write_back_due(&app.state, &app.store, now, quick()).await;
        assert_eq!(
            round,
            WritebackSummary::default(),
            "each verdict is sent once"
        );

        // A vendor that keeps failing: recorded, shown, retried later, then sent.
        loopback.add_alerts(1);
        let summary = poll_now(&app, id, chrono::Duration::seconds(60)).await;
        assert_eq!(summary.taken, 1, "{vendor:?}: {summary:?}");
        app.drain().await;
        loopback.shared.faults.lock().unwrap().always = Some(503);
        let now = chrono::Utc::now();
        let round = connector_runtime::write_back_due(&app.state, &app.store, now, quick()).await;
        assert_eq!((round.sent, round.failed), (0, 1), "{vendor:?}");
        let shown = connector_state(&app, id).await;
        assert_eq!(shown["writebacks_pending"], 1, "{shown}");
        assert!(
            shown["last_writeback_error"]
                .as_str()
                .is_some_and(|error| error.contains("503") && !error.contains(SECRET)),
            "{shown}"
        );
        loopback.shared.faults.lock().unwrap().always = None;
        let round = connector_runtime::write_back_due(&app.state, &app.store, now, quick()).await;
        assert_eq!(
            round,
            WritebackSummary::default(),
            "{vendor:?}: it waits its backoff"
        );
        let later = now + chrono::Duration::minutes(5);
        let round = connector_runtime::write_back_due(&app.state, &app.store, later, quick()).await;
        assert_eq!((round.sent, round.failed), (1, 0), "{vendor:?}");
        assert_eq!(connector_state(&app, id).await["writebacks_pending"], 0);
    }
    // A vendor whose alerts take no update is told so.
    let loopback = LoopbackVendor::start(Vendor::Okta, 1, Faults::default()).await;
    let mut settings = Vendor::Okta.settings(&loopback.address, 3);
    settings["write_back"] = json!(true);
    let answer = app
        .post(
            CONNECTORS,
            &app.admin_key,
            &json!({"name": "okta", "kind": "okta", "settings": settings}),
        )
        .await;
    assert_error(&answer, 400, "bad_request");
    assert!(
        answer.text.contains("settings.write_back"),
        "{}",
        answer.text
    );
}
