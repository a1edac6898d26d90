//! Data sources end to end: an investigation asks them (the shipped VirusTotal definition
//! against a loopback server answering in VirusTotal's v3 shapes), cites the answer, shares
//! it through the cache, survives a source that hangs, and the admin API manages and tests
//! them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use crate::harness::{TestApp, assert_error};
use crate::on_both_backends;

on_both_backends!(
    an_investigation_asks_the_sources_cites_them_and_shares_answers,
    a_hanging_source_costs_one_timeout_and_is_said_in_the_findings,
    data_sources_are_managed_and_tested_by_admins,
);

const SOURCES: &str = "/app/api/v1/data-sources";
const API_KEY: &str = "vt-loopback-key-51c9e";
const MALWARE: &str = "8d3f5c2b1a0e9f8d7c6b5a4e3d2c1b0a9f8e7d6c5b4a3e2d1c0b9a8f7e6d5c4b";
const CLEAN: &str = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b";
const HANGS: &str = "ffffeeeeddddccccbbbbaaaa99998888777766665555444433332222111100aa";

/// A loopback VirusTotal: `GET /api/v3/files/{hash}` with the `x-apikey` header, answered
/// as the v3 API documents (a file object's `last_analysis_stats`, 404 `NotFoundError`).
#[derive(Clone, Default)]
struct Virustotal {
    calls: Arc<AtomicUsize>,
    keys_seen: Arc<Mutex<Vec<String>>>,
}

async fn file(
    State(vendor): State<Virustotal>,
    headers: HeaderMap,
    Path(hash): Path<String>,
) -> Response {
    vendor.calls.fetch_add(1, Ordering::SeqCst);
    let key = headers
        .get("x-apikey")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_string();
    vendor.keys_seen.lock().expect("lock").push(key.clone());
    if key != API_KEY {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(
                json!({"error": {"code": "WrongCredentialsError", "message": "Wrong API key"}}),
            ),
        )
            .into_response();
    }
    let stats = |malicious: u64| {
        json!({"data": {"type": "file", "id": hash, "attributes": {
            "last_analysis_stats": {"harmless": 0, "malicious": malicious, "suspicious": 1,
                                    "undetected": 72 - malicious - 1, "timeout": 0},
            "popular_threat_classification": {"suggested_threat_label": "trojan.qakbot/qbot"},
            "first_submission_date": 1_763_500_000,
            "tags": ["peexe"]
        }}})
    };
    match hash.as_str() {
        MALWARE => axum::Json(stats(41)).into_response(),
        CLEAN => axum::Json(stats(0)).into_response(),
        HANGS => {
            tokio::time::sleep(Duration::from_secs(60)).await;
            StatusCode::GATEWAY_TIMEOUT.into_response()
        }
        _ => (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": {"code": "NotFoundError", "message": format!("File \"{hash}\" not found")}})),
        )
            .into_response(),
    }
}

async fn start_virustotal() -> (String, Virustotal) {
    let vendor = Virustotal::default();
    let router = Router::new()
        .route("/api/v3/files/{hash}", get(file))
        .with_state(vendor.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (format!("http://{address}/api/v3"), vendor)
}

async fn store_api_key(app: &TestApp) {
    let answer = app
        .raw(
            "PUT",
            "/app/api/v1/response-actions/secrets/virustotal_api_key",
            Some(&app.admin_key),
            Some("application/json"),
            Some(json!({"value": API_KEY}).to_string().into_bytes()),
        )
        .await;
    assert_eq!(answer.status, 204, "{}", answer.text);
}

async fn create_virustotal(app: &TestApp, base_url: &str, limits: Value) -> i64 {
    let answer = app
        .post(
            SOURCES,
            &app.admin_key,
            &json!({"name": "vt", "shipped": "virustotal", "base_url": base_url, "limits": limits}),
        )
        .await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_eq!(answer.json["source_kind"], "threat_intel");
    answer.json["id"].as_i64().expect("an id")
}

fn process_alert(id: &str, sha256: &str) -> Value {
    json!({
        "title": "New process observed",
        "alert_id": id,
        "created_at": "2026-11-20T09:55:00Z",
        "host": "wks-0412",
        "user": "p.oakes",
        "process_name": "invoice.exe",
        "sha256": sha256,
    })
}

async fn investigation(app: &TestApp, id: i64) -> Value {
    let answer = app
        .get(&format!("/app/api/v1/investigation/{id}"), &app.reader_key)
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.json
}

fn finding<'a>(investigation: &'a Value, headline: &str) -> Option<&'a Value> {
    investigation["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|finding| finding["headline"] == headline)
}

async fn an_investigation_asks_the_sources_cites_them_and_shares_answers(app: TestApp) {
    let (base_url, vendor) = start_virustotal().await;
    store_api_key(&app).await;
    create_virustotal(&app, &base_url, json!({"timeout_seconds": 2})).await;

    let first = app.create(&process_alert("VT-1", MALWARE)).await;
    assert_eq!(app.drain().await, 1);
    let result = investigation(&app, first).await;
    assert_eq!(
        result["outcome"], "COMPLETED_BREACHED_CONFIRMED",
        "{result}"
    );
    let said = finding(&result, "What the team's systems said").expect("the answers are cited");
    let evidence = &said["evidences"][0]["data"];
    assert_eq!(evidence["source"], "vt");
    assert_eq!(evidence["result"]["found"]["malicious_votes"], 41.0);
    assert!(
        evidence["at"]
            .as_str()
            .is_some_and(|at| at.starts_with("20"))
    );
    assert!(finding(&result, "Many engines call the file malicious").is_some());
    assert_eq!(vendor.calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        vendor.keys_seen.lock().expect("lock").as_slice(),
        [API_KEY.to_string()]
    );

    // A second alert on the same file is answered from the cache: the vendor is asked once.
    let second = app.create(&process_alert("VT-2", MALWARE)).await;
    assert_eq!(app.drain().await, 1);
    assert_eq!(
        investigation(&app, second).await["outcome"],
        "COMPLETED_BREACHED_CONFIRMED"
    );
    assert_eq!(vendor.calls.load(Ordering::SeqCst), 1);

    // A clean file: the answer is cited, and it proves nothing either way.
    let clean = app.create(&process_alert("VT-3", CLEAN)).await;
    assert_eq!(app.drain().await, 1);
    let result = investigation(&app, clean).await;
    assert_ne!(
        result["outcome"], "COMPLETED_BREACHED_CONFIRMED",
        "{result}"
    );
    assert!(finding(&result, "What the team's systems said").is_some());

    let metrics = app.get("/metrics", &app.reader_key).await.text;
    for line in [
        r#"sleuth_data_source_lookups_total{source="vt",origin="called",result="ok"} 2"#,
        r#"sleuth_data_source_lookups_total{source="vt",origin="cache",result="ok"} 1"#,
        r#"sleuth_data_source_breaker_open{source="vt"} 0"#,
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
}

async fn a_hanging_source_costs_one_timeout_and_is_said_in_the_findings(app: TestApp) {
    let (base_url, vendor) = start_virustotal().await;
    store_api_key(&app).await;
    create_virustotal(
        &app,
        &base_url,
        json!({"timeout_seconds": 1, "breaker_failures": 1, "breaker_cooldown_seconds": 600}),
    )
    .await;

    let hanging = app.create(&process_alert("VT-H1", HANGS)).await;
    let started = Instant::now();
    assert_eq!(app.drain().await, 1);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "one investigation waited {:?} for a source with a 1 s timeout",
        started.elapsed()
    );
    let result = investigation(&app, hanging).await;
    let unavailable = finding(&result, "vt unavailable").expect("the failure is a finding");
    assert!(
        unavailable["finding"]
            .as_str()
            .is_some_and(|text| text.contains("no answer within 1 s")),
        "{unavailable}"
    );
    assert!(!result.to_string().contains(API_KEY));

    // The breaker is open: the next investigations do not wait for the dead source.
    let calls = vendor.calls.load(Ordering::SeqCst);
    app.create(&process_alert("VT-H2", HANGS)).await;
    app.create(&process_alert("VT-H3", MALWARE)).await;
    let started = Instant::now();
    assert_eq!(app.drain().await, 2);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(vendor.calls.load(Ordering::SeqCst), calls);
    let listed = app.get(SOURCES, &app.admin_key).await;
    assert_eq!(listed.json[0]["breaker"], "open", "{}", listed.text);
}

async fn data_sources_are_managed_and_tested_by_admins(app: TestApp) {
    let (base_url, _vendor) = start_virustotal().await;
    let shipped = app.get(&format!("{SOURCES}/shipped"), &app.admin_key).await;
    assert_eq!(shipped.status, 200, "{}", shipped.text);
    assert!(
        shipped
            .json
            .as_array()
            .is_some_and(|all| all.iter().any(|one| one["name"] == "virustotal"))
    );

    // The secret it names must be stored first.
    let request = json!({"name": "vt", "shipped": "virustotal", "base_url": base_url});
    let refused = app.post(SOURCES, &app.admin_key, &request).await;
    assert_error(&refused, 400, "bad_request");
    assert!(
        refused.text.contains("virustotal_api_key"),
        "{}",
        refused.text
    );
    assert_eq!(app.get(SOURCES, &app.admin_key).await.json, json!([]));

    store_api_key(&app).await;
    let member = app.post(SOURCES, &app.member_key, &request).await;
    assert_eq!(member.status, 403, "{}", member.text);
    for (bad, field) in [
        (
            json!({"name": "x", "definition": {"type": "gopher"}}),
            "definition",
        ),
        (
            json!({"name": "x", "definition": {"type": "directory", "url": "http://dc", "base_dn": "dc=x"}}),
            "definition",
        ),
        (
            json!({"name": "x", "shipped": "virustotal", "limits": {"timeout_seconds": 0}}),
            "limits",
        ),
        (json!({"name": "x", "shipped": "nosuch"}), "shipped"),
        (
            json!({"name": "x", "shipped": "virustotal", "tenant_union_id": 999}),
            "tenant_union_id",
        ),
    ] {
        let answer = app.post(SOURCES, &app.admin_key, &bad).await;
        assert_error(&answer, 400, "bad_request");
        assert!(answer.text.contains(field), "{bad}: {}", answer.text);
    }

    let created = app.post(SOURCES, &app.admin_key, &request).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let id = created.json["id"].as_i64().expect("an id");
    assert_eq!(created.json["definition"]["base_url"], base_url.as_str());
    assert!(!created.text.contains(API_KEY));
    let again = app.post(SOURCES, &app.admin_key, &request).await;
    assert_eq!(again.status / 100, 4, "{}", again.text);

    let test = |kind: &str, value: &str| {
        let path = format!("{SOURCES}/{id}/test");
        let body = json!({"type": kind, "value": value});
        let app = &app;
        async move { app.post(&path, &app.admin_key, &body).await }
    };
    let found = test("hash_sha256", MALWARE).await;
    assert_eq!(found.status, 200, "{}", found.text);
    assert_eq!(found.json["result"], "found");
    assert_eq!(found.json["facts"]["malicious_votes"], 41.0);
    assert_eq!(
        found.json["raw"]["data"]["attributes"]["last_analysis_stats"]["malicious"],
        41
    );
    let unknown = test("hash_sha256", &"0".repeat(64)).await;
    assert_eq!(unknown.json["result"], "not_found", "{}", unknown.text);
    let wrong_kind = test("user", "alice").await;
    assert_error(&wrong_kind, 400, "bad_request");
    let not_a_kind = test("shoe", "x").await;
    assert_error(&not_a_kind, 400, "bad_request");

    // A secret deleted after the source was made: the look-up fails and says which secret
    // to store, in a source's words.
    let deleted = app
        .raw(
            "DELETE",
            "/app/api/v1/response-actions/secrets/virustotal_api_key",
            Some(&app.admin_key),
            None,
            None,
        )
        .await;
    assert_eq!(deleted.status, 204, "{}", deleted.text);
    let without_secret = test("hash_sha256", CLEAN).await;
    assert_eq!(
        without_secret.json["result"], "failed",
        "{}",
        without_secret.text
    );
    let reason = without_secret.json["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("'virustotal_api_key' is not stored")
            && !reason.contains("response action"),
        "{reason}"
    );
    store_api_key(&app).await;

    // Disabled, it is not asked; deleted, it is gone.
    let disabled = app
        .patch(
            &format!("{SOURCES}/{id}"),
            &app.admin_key,
            &json!({"enabled": false}),
        )
        .await;
    assert_eq!(disabled.status, 200, "{}", disabled.text);
    assert_eq!(disabled.json["enabled"], false);
    assert!(disabled.json["revision"].as_i64() > created.json["revision"].as_i64());
    let quiet = app.create(&process_alert("VT-D1", MALWARE)).await;
    assert_eq!(app.drain().await, 1);
    assert!(
        finding(
            &investigation(&app, quiet).await,
            "What the team's systems said"
        )
        .is_none()
    );
    let nothing = app
        .patch(&format!("{SOURCES}/{id}"), &app.admin_key, &json!({}))
        .await;
    assert_error(&nothing, 400, "bad_request");

    let deleted = app
        .raw(
            "DELETE",
            &format!("{SOURCES}/{id}"),
            Some(&app.admin_key),
            None,
            None,
        )
        .await;
    assert_eq!(deleted.status, 204, "{}", deleted.text);
    let gone = app.get(&format!("{SOURCES}/{id}"), &app.admin_key).await;
    assert_error(&gone, 404, "not_found");
}
