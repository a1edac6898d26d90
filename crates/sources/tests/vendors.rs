//! Every shipped definition against a loopback server that answers in that vendor's
//! documented shapes (found answers, not-found answers, errors, 429 with the vendor's own
//! rate-limit headers, hangs), and the failure behaviour around every source: timeout,
//! budget, breaker, shared cache, secrets kept out of every reason.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // A test says what failed by failing.

mod common;

use common::{ask, fact};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Form, Json, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use sleuth_domain::{AnswerResult, Entity, EntityKind, FactKind, FactValue, ParsedAlert};
use sleuth_sources::definition::Auth;
use sleuth_sources::{Definition, Limits, SourceConfig, Sources, StaticSecrets, shipped};

const KEY: &str = "loopback-secret-key-7f3a";

/// What the vendor does with the next requests.
#[derive(Clone, Debug, PartialEq)]
enum Mode {
    Normal,
    /// 429 with the vendor's rate-limit headers asking for this many seconds.
    RateLimited(u64),
    /// Never answers.
    Hang,
    /// 500.
    Broken,
}

#[derive(Clone)]
struct Vendor {
    mode: Arc<Mutex<Mode>>,
    calls: Arc<AtomicUsize>,
    token_calls: Arc<AtomicUsize>,
    /// A 429 is answered only this many times, then the mode returns to normal.
    limited_left: Arc<AtomicUsize>,
    base: Arc<Mutex<String>>,
}

impl Vendor {
    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// The mode's answer, when it is not the normal one.
    async fn misbehave(&self, rate_headers: &[&'static str]) -> Option<Response> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mode = self.mode.lock().unwrap().clone();
        match mode {
            Mode::Normal => None,
            Mode::RateLimited(seconds) => {
                if self.limited_left.load(Ordering::SeqCst) == 0 {
                    return None;
                }
                self.limited_left.fetch_sub(1, Ordering::SeqCst);
                let mut headers = HeaderMap::new();
                for name in rate_headers {
                    let value = if name.ends_with("reset") || name.ends_with("retryafter") {
                        (chrono::Utc::now().timestamp() + seconds as i64).to_string()
                    } else {
                        seconds.to_string()
                    };
                    headers.insert(*name, value.parse().unwrap());
                }
                Some(
                    (
                        StatusCode::TOO_MANY_REQUESTS,
                        headers,
                        Json(json!({"error": {"code": "QuotaExceededError", "message": "Quota exceeded"}})),
                    )
                        .into_response(),
                )
            }
            Mode::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                None
            }
            Mode::Broken => Some(
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    Json(
                        json!({"error": {"code": "InternalError", "message": "upstream exploded"}}),
                    ),
                )
                    .into_response(),
            ),
        }
    }
}

fn key_from(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string)
}

async fn serve(router: Router<Vendor>) -> Vendor {
    let vendor = Vendor {
        mode: Arc::new(Mutex::new(Mode::Normal)),
        calls: Arc::new(AtomicUsize::new(0)),
        token_calls: Arc::new(AtomicUsize::new(0)),
        limited_left: Arc::new(AtomicUsize::new(usize::MAX)),
        base: Arc::new(Mutex::new(String::new())),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    *vendor.base.lock().unwrap() = format!("http://{address}");
    let app = router.with_state(vendor.clone());
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    vendor
}

/// A shipped definition pointed at the loopback vendor.
fn source(name: &str, vendor: &Vendor, path_prefix: &str) -> SourceConfig {
    let shipped = shipped::find(name).unwrap();
    let base = vendor.base.lock().unwrap().clone();
    let Definition::HttpJson(mut http) = shipped.definition else {
        panic!("{name} is an HTTP source");
    };
    http.base_url = format!("{base}{path_prefix}");
    if let Auth::Oauth2ClientCredentials { token_url, .. } = &mut http.auth {
        *token_url = format!("{base}/oauth2/token");
    }
    SourceConfig {
        id: 1,
        name: name.to_string(),
        version: 1,
        tenant_union_id: None,
        enabled: true,
        definition: Definition::HttpJson(http),
        limits: Limits {
            timeout_seconds: 2.0,
            ..shipped.limits
        },
    }
}

fn sources(secret_names: &[&str]) -> Sources {
    let secrets = StaticSecrets(
        secret_names
            .iter()
            .map(|name| (name.to_string(), sleuth_sources::Secret::new(KEY)))
            .collect(),
    );
    Sources::new(Arc::new(secrets), None).unwrap()
}

fn reason(result: &AnswerResult) -> String {
    match result {
        AnswerResult::Failed { reason } => reason.clone(),
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn alert_naming(entities: &[Entity]) -> ParsedAlert {
    let mut alert: ParsedAlert = serde_json::from_value(json!({
        "schema_key": "generic", "handler_version": "v1", "alert_type": "t", "title": "t",
        "original_title": "t", "create_time": "2026-11-25T10:00:00Z", "start_time": null,
        "severity": null, "direct_source_label": "test", "proxy_source_label": null,
        "origin_integration": null, "origin_integration_display_name": "test",
        "origin_ticket_id": null, "origin_ticket_id_label": null, "origin_ticket_url": null,
        "entities": [], "assets": {}, "coalesce_key": null, "tenant_id": null, "tenant_label": null
    }))
    .unwrap();
    alert.entities = entities.to_vec();
    alert
}

// --- VirusTotal ----------------------------------------------------------------------------

fn virustotal() -> Router<Vendor> {
    async fn object(vendor: Vendor, headers: HeaderMap, kind: &str, id: String) -> Response {
        if let Some(response) = vendor.misbehave(&["retry-after"]).await {
            return response;
        }
        if key_from(&headers, "x-apikey").as_deref() != Some(KEY) {
            return (
                StatusCode::UNAUTHORIZED,
                Json(
                    json!({"error": {"code": "WrongCredentialsError", "message": "Wrong API key"}}),
                ),
            )
                .into_response();
        }
        if id.starts_with("0000") {
            return (
                StatusCode::NOT_FOUND,
                Json(json!({"error": {"code": "NotFoundError", "message": format!("{kind} \"{id}\" not found")}})),
            )
                .into_response();
        }
        let mut attributes = json!({
            "last_analysis_stats": {"harmless": 8, "malicious": 55, "suspicious": 2, "undetected": 5, "timeout": 0, "type-unsupported": 4},
            "reputation": -80,
            "tags": ["peexe", "signed"],
            "popular_threat_classification": {"suggested_threat_label": "trojan.emotet/heodo"},
            "first_submission_date": 1700000000
        });
        if kind == "domain" {
            attributes["creation_date"] = json!(chrono::Utc::now().timestamp() - 3 * 86_400);
        }
        if kind == "url" {
            attributes["url"] = json!(id);
        }
        Json(json!({"data": {"id": id, "type": kind, "attributes": attributes}})).into_response()
    }
    Router::new()
        .route(
            "/api/v3/files/{id}",
            get(|State(vendor): State<Vendor>, headers: HeaderMap, Path(id): Path<String>| object(vendor, headers, "file", id)),
        )
        .route(
            "/api/v3/ip_addresses/{id}",
            get(|State(vendor): State<Vendor>, headers: HeaderMap, Path(id): Path<String>| object(vendor, headers, "ip_address", id)),
        )
        .route(
            "/api/v3/domains/{id}",
            get(|State(vendor): State<Vendor>, headers: HeaderMap, Path(id): Path<String>| object(vendor, headers, "domain", id)),
        )
        .route(
            "/api/v3/urls/{id}",
            get(|State(vendor): State<Vendor>, headers: HeaderMap, Path(id): Path<String>| async move {
                // VirusTotal's URL identifier is the URL in unpadded base64url.
                use base64::Engine as _;
                let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&id).unwrap();
                object(vendor, headers, "url", String::from_utf8(decoded).unwrap()).await
            }),
        )
}

#[tokio::test]
async fn virustotal_counts_engines_reads_creation_dates_and_says_what_it_does_not_know() {
    let vendor = serve(virustotal()).await;
    let config = source("virustotal", &vendor, "/api/v3");
    let sources = sources(&["virustotal_api_key"]);
    let hash = "44d88612fea8a8f36de82e1278abb02f44d88612fea8a8f36de82e1278abb02f";
    let found = ask(&sources, &config, EntityKind::HashSha256, hash).await;
    assert_eq!(
        fact(&found, FactKind::MaliciousVotes),
        Some(FactValue::Number(55.0))
    );
    assert_eq!(
        fact(&found, FactKind::TotalVotes),
        Some(FactValue::Number(70.0))
    );
    assert_eq!(
        fact(&found, FactKind::Labels),
        Some(FactValue::List(vec!["trojan.emotet/heodo".into()]))
    );
    let domain = ask(&sources, &config, EntityKind::Domain, "fresh-login.example").await;
    let registered = fact(&domain, FactKind::RegisteredAt)
        .and_then(|value| value.as_date())
        .unwrap();
    assert!(chrono::Utc::now() - registered < chrono::Duration::days(4));
    let url = ask(
        &sources,
        &config,
        EntityKind::Url,
        "http://evil.example/a?b=c",
    )
    .await;
    assert!(matches!(url, AnswerResult::Found(_)), "{url:?}");
    let unknown = ask(&sources, &config, EntityKind::HashSha256, &"0".repeat(64)).await;
    assert_eq!(unknown, AnswerResult::NotFound);
}

#[tokio::test]
async fn wrong_credentials_quote_the_vendor_and_never_the_key() {
    let vendor = serve(virustotal()).await;
    let config = source("virustotal", &vendor, "/api/v3");
    let wrong = Sources::new(
        Arc::new(StaticSecrets(vec![(
            "virustotal_api_key".into(),
            sleuth_sources::Secret::new("not-the-key-but-secret-too"),
        )])),
        None,
    )
    .unwrap();
    let failed = ask(
        &wrong,
        &config,
        EntityKind::HashMd5,
        "44d88612fea8a8f36de82e1278abb02f",
    )
    .await;
    let reason = reason(&failed);
    assert!(
        reason.contains("HTTP 401") && reason.contains("Wrong API key"),
        "{reason}"
    );
    assert!(!reason.contains("not-the-key-but-secret-too"));
    let missing = sources(&[]);
    let failed = ask(
        &missing,
        &config,
        EntityKind::HashMd5,
        "44d88612fea8a8f36de82e1278abb02f",
    )
    .await;
    assert!(reason_of(&failed).contains("sleuth secret set virustotal_api_key"));
}

fn reason_of(result: &AnswerResult) -> String {
    reason(result)
}

// --- AbuseIPDB -----------------------------------------------------------------------------

fn abuseipdb() -> Router<Vendor> {
    Router::new().route(
        "/api/v2/check",
        get(
            |State(vendor): State<Vendor>, headers: HeaderMap, Query(query): Query<Vec<(String, String)>>| async move {
                if let Some(response) = vendor
                    .misbehave(&["retry-after", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"])
                    .await
                {
                    return response;
                }
                if key_from(&headers, "key").as_deref() != Some(KEY) {
                    return (
                        StatusCode::UNAUTHORIZED,
                        Json(json!({"errors": [{"detail": "Authentication failed. Your API key is either missing, incorrect, or revoked.", "status": 401}]})),
                    )
                        .into_response();
                }
                let address = query
                    .iter()
                    .find(|(name, _)| name == "ipAddress")
                    .map(|(_, value)| value.clone())
                    .unwrap_or_default();
                if address.parse::<std::net::IpAddr>().is_err() {
                    return (
                        StatusCode::UNPROCESSABLE_ENTITY,
                        Json(json!({"errors": [{"detail": "The ip address must be a valid IPv4 or IPv6 address (e.g. 8.8.8.8 or 2001:4860:4860::8888).", "source": {"parameter": "ipAddress"}, "status": 422}]})),
                    )
                        .into_response();
                }
                Json(json!({"data": {
                    "ipAddress": address, "isPublic": true, "ipVersion": 4, "isWhitelisted": false,
                    "abuseConfidenceScore": 100, "countryCode": "RU", "usageType": "Data Center/Web Hosting/Transit",
                    "isp": "Example Hosting", "domain": "example.net", "hostnames": [], "isTor": false,
                    "totalReports": 1290, "numDistinctUsers": 312, "lastReportedAt": "2026-11-24T18:20:01+00:00"
                }}))
                .into_response()
            },
        ),
    )
}

#[tokio::test]
async fn abuseipdb_scores_an_address_and_a_short_429_is_waited_out_once() {
    let vendor = serve(abuseipdb()).await;
    let config = source("abuseipdb", &vendor, "/api/v2");
    let sources = sources(&["abuseipdb_api_key"]);
    sources.replace(vec![config.clone()]);
    vendor.set(Mode::RateLimited(1));
    vendor.limited_left.store(1, Ordering::SeqCst);
    let alert = alert_naming(&[Entity::new(EntityKind::Ip, "198.51.100.23")]);
    let gathered = sources.gather(&alert, 1, Duration::from_secs(10)).await;
    let answer = &gathered.facts.answers[0];
    assert_eq!(
        answer.fact(FactKind::AbuseScore),
        Some(&FactValue::Number(100.0))
    );
    assert_eq!(
        vendor.calls(),
        2,
        "one 429, then one call after Retry-After"
    );
}

#[tokio::test]
async fn a_long_429_pauses_the_source_instead_of_asking_again() {
    let vendor = serve(abuseipdb()).await;
    let config = source("abuseipdb", &vendor, "/api/v2");
    let sources = sources(&["abuseipdb_api_key"]);
    sources.replace(vec![config]);
    vendor.set(Mode::RateLimited(120));
    let first = sources
        .gather(
            &alert_naming(&[Entity::new(EntityKind::Ip, "198.51.100.23")]),
            1,
            Duration::from_secs(10),
        )
        .await;
    assert!(reason(&first.facts.answers[0].result).contains("429"));
    let second = sources
        .gather(
            &alert_naming(&[Entity::new(EntityKind::Ip, "198.51.100.24")]),
            1,
            Duration::from_secs(10),
        )
        .await;
    let said = reason(&second.facts.answers[0].result);
    assert!(said.contains("pause"), "{said}");
    assert_eq!(vendor.calls(), 1, "the paused source was not asked again");
}

#[tokio::test]
async fn abuseipdb_refusals_are_quoted() {
    let vendor = serve(abuseipdb()).await;
    let config = source("abuseipdb", &vendor, "/api/v2");
    let sources = sources(&["abuseipdb_api_key"]);
    // An IP entity that the vendor refuses (the parsers would not make one; the source
    // must still say what the vendor said).
    let failed = ask(&sources, &config, EntityKind::Ip, "not-an-address").await;
    assert!(
        reason(&failed).contains("must be a valid IPv4"),
        "{failed:?}"
    );
}

// --- GreyNoise -----------------------------------------------------------------------------

fn greynoise() -> Router<Vendor> {
    Router::new().route(
        "/v3/community/{ip}",
        get(|State(vendor): State<Vendor>, headers: HeaderMap, Path(ip): Path<String>| async move {
            if let Some(response) = vendor.misbehave(&["retry-after"]).await {
                return response;
            }
            if key_from(&headers, "key").as_deref() != Some(KEY) {
                return (StatusCode::UNAUTHORIZED, Json(json!({"message": "Authentication required"}))).into_response();
            }
            match ip.as_str() {
                "8.8.8.8" => Json(json!({"ip": ip, "noise": false, "riot": true, "classification": "benign", "name": "Google Public DNS", "link": "https://viz.greynoise.io/riot/8.8.8.8", "last_seen": "2026-11-24", "message": "Success"})).into_response(),
                "45.83.64.1" => Json(json!({"ip": ip, "noise": true, "riot": false, "classification": "malicious", "name": "unknown", "link": "https://viz.greynoise.io/ip/45.83.64.1", "last_seen": "2026-11-25", "message": "Success"})).into_response(),
                _ => (StatusCode::NOT_FOUND, Json(json!({"ip": ip, "noise": false, "riot": false, "message": "IP not observed scanning the internet or contained in RIOT data set."}))).into_response(),
            }
        }),
    )
}

#[tokio::test]
async fn greynoise_classifies_scanners_and_business_services() {
    let vendor = serve(greynoise()).await;
    let config = source("greynoise", &vendor, "/v3");
    let sources = sources(&["greynoise_api_key"]);
    let scanner = ask(&sources, &config, EntityKind::Ip, "45.83.64.1").await;
    assert_eq!(
        fact(&scanner, FactKind::Verdict),
        Some(FactValue::Text("malicious".into()))
    );
    assert_eq!(
        fact(&scanner, FactKind::Labels),
        Some(FactValue::List(vec!["internet background scanner".into()]))
    );
    let resolver = ask(&sources, &config, EntityKind::Ip, "8.8.8.8").await;
    assert_eq!(
        fact(&resolver, FactKind::Verdict),
        Some(FactValue::Text("benign".into()))
    );
    let AnswerResult::Found(facts) = &resolver else {
        panic!()
    };
    let labels: Vec<String> = facts
        .iter()
        .filter(|fact| fact.kind == FactKind::Labels)
        .flat_map(|fact| fact.value.as_list().to_vec())
        .collect();
    assert_eq!(
        labels,
        ["Google Public DNS", "known business service (RIOT)"]
    );
    assert_eq!(
        ask(&sources, &config, EntityKind::Ip, "192.0.2.44").await,
        AnswerResult::NotFound
    );
}

// --- abuse.ch: URLhaus and ThreatFox ---------------------------------------------------------

fn abuse_ch() -> Router<Vendor> {
    fn refused() -> Response {
        Json(json!({"query_status": "unknown_auth_key"})).into_response()
    }
    Router::new()
        .route(
            "/urlhaus/v1/url/",
            post(|State(vendor): State<Vendor>, headers: HeaderMap, Form(form): Form<Vec<(String, String)>>| async move {
                if let Some(response) = vendor.misbehave(&["retry-after"]).await {
                    return response;
                }
                if key_from(&headers, "auth-key").as_deref() != Some(KEY) {
                    return refused();
                }
                let url = form.iter().find(|(name, _)| name == "url").map(|(_, value)| value.clone()).unwrap_or_default();
                if url.contains("clean") {
                    return Json(json!({"query_status": "no_results"})).into_response();
                }
                Json(json!({"query_status": "ok", "id": "105821", "urlhaus_reference": "https://urlhaus.abuse.ch/url/105821/", "url": url, "url_status": "online", "host": "evil.example", "date_added": "2026-11-20 01:33:26 UTC", "threat": "malware_download", "blacklists": {"spamhaus_dbl": "abused_legit_malware", "surbl": "not listed"}, "reporter": "abuse_ch", "larted": "true", "takedown_time_seconds": null, "tags": ["elf", "mozi"], "payloads": []})).into_response()
            }),
        )
        .route(
            "/urlhaus/v1/host/",
            post(|State(vendor): State<Vendor>, Form(form): Form<Vec<(String, String)>>| async move {
                if let Some(response) = vendor.misbehave(&["retry-after"]).await {
                    return response;
                }
                let host = form.iter().find(|(name, _)| name == "host").map(|(_, value)| value.clone()).unwrap_or_default();
                Json(json!({"query_status": "ok", "urlhaus_reference": format!("https://urlhaus.abuse.ch/host/{host}/"), "host": host, "firstseen": "2026-10-01 07:12:44 UTC", "url_count": "12", "blacklists": {}, "urls": []})).into_response()
            }),
        )
        .route(
            "/threatfox/api/v1/",
            post(|State(vendor): State<Vendor>, headers: HeaderMap, Json(body): Json<Value>| async move {
                if let Some(response) = vendor.misbehave(&["retry-after"]).await {
                    return response;
                }
                if key_from(&headers, "auth-key").as_deref() != Some(KEY) {
                    return refused();
                }
                let term = body.get("search_term").or(body.get("hash")).and_then(Value::as_str).unwrap_or_default().to_string();
                if body["query"] == "search_ioc" && term == "cobalt.example" {
                    return Json(json!({"query_status": "ok", "data": [{"id": "41", "ioc": term, "threat_type": "botnet_cc", "threat_type_desc": "Indicator that identifies a botnet command&control server (C&C)", "ioc_type": "domain", "malware": "win.cobalt_strike", "malware_printable": "Cobalt Strike", "confidence_level": 75, "first_seen": "2026-11-01 08:00:01 UTC", "last_seen": null, "reporter": "abuse_ch", "tags": ["CobaltStrike"]}]})).into_response();
                }
                Json(json!({"query_status": "no_result", "data": "Your search did not yield any results"})).into_response()
            }),
        )
}

#[tokio::test]
async fn urlhaus_and_threatfox_say_listed_or_not_listed() {
    let vendor = serve(abuse_ch()).await;
    let urlhaus = source("urlhaus", &vendor, "/urlhaus/v1");
    let threatfox = source("threatfox", &vendor, "/threatfox/api/v1");
    let sources = sources(&["abusech_auth_key"]);
    let listed = ask(
        &sources,
        &urlhaus,
        EntityKind::Url,
        "http://evil.example/bins/mozi.m",
    )
    .await;
    assert_eq!(
        fact(&listed, FactKind::Verdict),
        Some(FactValue::Text("malicious".into()))
    );
    assert_eq!(
        fact(&listed, FactKind::FirstSeen).map(|value| value.to_string()),
        Some("2026-11-20T01:33:26+00:00".into())
    );
    let host = ask(&sources, &urlhaus, EntityKind::Domain, "evil.example").await;
    assert_eq!(
        fact(&host, FactKind::Verdict),
        Some(FactValue::Text("suspicious".into()))
    );
    assert_eq!(
        fact(&host, FactKind::MaliciousVotes),
        Some(FactValue::Number(12.0))
    );
    assert_eq!(
        ask(&sources, &urlhaus, EntityKind::Url, "http://clean.example/").await,
        AnswerResult::NotFound
    );
    let c2 = ask(&sources, &threatfox, EntityKind::Domain, "cobalt.example").await;
    assert_eq!(
        fact(&c2, FactKind::Verdict),
        Some(FactValue::Text("malicious".into()))
    );
    assert_eq!(
        fact(&c2, FactKind::AbuseScore),
        Some(FactValue::Number(75.0))
    );
    assert_eq!(
        fact(&c2, FactKind::Labels),
        Some(FactValue::List(vec!["Cobalt Strike".into()]))
    );
    assert_eq!(
        ask(
            &sources,
            &threatfox,
            EntityKind::HashMd5,
            "44d88612fea8a8f36de82e1278abb02f"
        )
        .await,
        AnswerResult::NotFound
    );
}

// --- RDAP ------------------------------------------------------------------------------------

fn rdap() -> Router<Vendor> {
    Router::new()
        .route(
            "/bootstrap/domain/{name}",
            get(|State(vendor): State<Vendor>, Path(name): Path<String>| async move {
                vendor.calls.fetch_add(1, Ordering::SeqCst);
                // rdap.org answers with a redirect to the registry that holds the domain.
                let base = vendor.base.lock().unwrap().clone();
                (StatusCode::FOUND, [("location", format!("{base}/registry/domain/{name}"))]).into_response()
            }),
        )
        .route(
            "/registry/domain/{name}",
            get(|Path(name): Path<String>| async move {
                if name.starts_with("unregistered") {
                    return (StatusCode::NOT_FOUND, [("content-type", "application/rdap+json")], Json(json!({"errorCode": 404, "title": "Not Found", "description": ["The domain was not found"]}))).into_response();
                }
                let registered = (chrono::Utc::now() - chrono::Duration::days(2)).to_rfc3339();
                (
                    [("content-type", "application/rdap+json")],
                    Json(json!({
                        "objectClassName": "domain", "ldhName": name.to_uppercase(), "rdapConformance": ["rdap_level_0"],
                        "status": ["client transfer prohibited"],
                        "events": [
                            {"eventAction": "registration", "eventDate": registered},
                            {"eventAction": "expiration", "eventDate": "2027-11-23T10:00:00Z"},
                            {"eventAction": "last update of RDAP database", "eventDate": "2026-11-25T09:00:00Z"}
                        ]
                    })),
                )
                    .into_response()
            }),
        )
}

#[tokio::test]
async fn rdap_follows_the_bootstrap_redirect_to_the_registration_date() {
    let vendor = serve(rdap()).await;
    let config = source("rdap", &vendor, "/bootstrap");
    let sources = sources(&[]);
    let answer = ask(
        &sources,
        &config,
        EntityKind::Domain,
        "paypa1-login.example",
    )
    .await;
    let registered = fact(&answer, FactKind::RegisteredAt)
        .and_then(|value| value.as_date())
        .unwrap();
    assert!(chrono::Utc::now() - registered < chrono::Duration::days(3));
    assert_eq!(
        ask(
            &sources,
            &config,
            EntityKind::Domain,
            "unregistered.example"
        )
        .await,
        AnswerResult::NotFound
    );
}

// --- Okta ------------------------------------------------------------------------------------

fn okta() -> Router<Vendor> {
    Router::new().route(
        "/api/v1/users/{login}",
        get(|State(vendor): State<Vendor>, headers: HeaderMap, Path(login): Path<String>| async move {
            if let Some(response) = vendor
                .misbehave(&["x-rate-limit-limit", "x-rate-limit-remaining", "x-rate-limit-reset"])
                .await
            {
                return response;
            }
            if key_from(&headers, "authorization") != Some(format!("SSWS {KEY}")) {
                return (StatusCode::UNAUTHORIZED, Json(json!({"errorCode": "E0000011", "errorSummary": "Invalid token provided", "errorLink": "E0000011", "errorId": "oaeH", "errorCauses": []}))).into_response();
            }
            let status = match login.as_str() {
                "former.contractor@corp.example" => "DEPROVISIONED",
                "dana@corp.example" => "ACTIVE",
                _ => {
                    return (StatusCode::NOT_FOUND, Json(json!({"errorCode": "E0000007", "errorSummary": format!("Not found: Resource not found: {login} (User)"), "errorLink": "E0000007", "errorId": "oaeX", "errorCauses": []}))).into_response();
                }
            };
            Json(json!({
                "id": "00ub0oNGTSWTBKOLGLNR", "status": status, "created": "2024-01-10T16:24:12.000Z",
                "activated": null, "statusChanged": "2026-10-01T10:00:00.000Z", "lastLogin": "2026-11-24T08:12:00.000Z",
                "lastUpdated": "2026-10-01T10:00:00.000Z", "passwordChanged": "2026-03-01T09:00:00.000Z",
                "profile": {"firstName": "Dana", "lastName": "Lee", "email": login, "login": login, "title": "Contractor", "department": "Finance", "manager": "Sam Ortiz", "mobilePhone": null},
                "credentials": {"provider": {"type": "OKTA", "name": "OKTA"}}
            }))
            .into_response()
        }),
    )
}

#[tokio::test]
async fn okta_says_a_deprovisioned_account_is_disabled_and_its_rate_limit_reset_is_honoured() {
    let vendor = serve(okta()).await;
    let config = source("okta_users", &vendor, "/api/v1");
    let sources = sources(&["okta_api_token"]);
    let gone = ask(
        &sources,
        &config,
        EntityKind::Email,
        "former.contractor@corp.example",
    )
    .await;
    assert_eq!(
        fact(&gone, FactKind::AccountEnabled),
        Some(FactValue::Flag(false))
    );
    assert_eq!(
        fact(&gone, FactKind::Department),
        Some(FactValue::Text("Finance".into()))
    );
    let active = ask(&sources, &config, EntityKind::Email, "dana@corp.example").await;
    assert_eq!(
        fact(&active, FactKind::AccountEnabled),
        Some(FactValue::Flag(true))
    );
    assert_eq!(
        ask(&sources, &config, EntityKind::User, "nobody").await,
        AnswerResult::NotFound
    );
    // Okta says when its limit resets in X-Rate-Limit-Reset (Unix seconds), not Retry-After.
    vendor.set(Mode::RateLimited(600));
    let limited = ask(&sources, &config, EntityKind::Email, "dana@corp.example").await;
    assert!(reason(&limited).contains("retry after"), "{limited:?}");
}

// --- Microsoft Graph and CrowdStrike (OAuth 2.0 client credentials) -----------------------

fn oauth_vendor() -> Router<Vendor> {
    fn bearer_ok(headers: &HeaderMap) -> bool {
        key_from(headers, "authorization").is_some_and(|value| value.starts_with("Bearer token-"))
    }
    Router::new()
        .route(
            "/oauth2/token",
            post(|State(vendor): State<Vendor>, Form(form): Form<Vec<(String, String)>>| async move {
                let field = |name: &str| form.iter().find(|(key, _)| key == name).map(|(_, value)| value.clone());
                if field("grant_type").as_deref() != Some("client_credentials") || field("client_secret").as_deref() != Some(KEY) {
                    return (StatusCode::UNAUTHORIZED, Json(json!({"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided."}))).into_response();
                }
                let number = vendor.token_calls.fetch_add(1, Ordering::SeqCst) + 1;
                Json(json!({"token_type": "Bearer", "expires_in": 3599, "access_token": format!("token-{number}")})).into_response()
            }),
        )
        .route(
            "/graph/users/{id}",
            get(|State(vendor): State<Vendor>, headers: HeaderMap, Path(id): Path<String>| async move {
                if let Some(response) = vendor.misbehave(&["retry-after"]).await {
                    return response;
                }
                if !bearer_ok(&headers) {
                    return (StatusCode::UNAUTHORIZED, Json(json!({"error": {"code": "InvalidAuthenticationToken", "message": "Access token has expired or is not yet valid."}}))).into_response();
                }
                if id != "kim@corp.example" {
                    return (StatusCode::NOT_FOUND, Json(json!({"error": {"code": "Request_ResourceNotFound", "message": format!("Resource '{id}' does not exist or one of its queried reference-property objects are not present.")}}))).into_response();
                }
                Json(json!({"@odata.context": "https://graph.microsoft.com/v1.0/$metadata#users(displayName,jobTitle)/$entity", "displayName": "Kim Park", "jobTitle": "Payroll Specialist", "department": "Finance", "accountEnabled": false, "userPrincipalName": id, "lastPasswordChangeDateTime": "2026-06-01T12:00:00Z", "signInActivity": {"lastSignInDateTime": "2026-11-25T07:58:00Z", "lastNonInteractiveSignInDateTime": null}})).into_response()
            }),
        )
        .route(
            "/graph/auditLogs/signIns",
            get(|State(vendor): State<Vendor>, headers: HeaderMap, Query(query): Query<Vec<(String, String)>>| async move {
                if let Some(response) = vendor.misbehave(&["retry-after"]).await {
                    return response;
                }
                if !bearer_ok(&headers) {
                    return (StatusCode::UNAUTHORIZED, Json(json!({"error": {"code": "InvalidAuthenticationToken", "message": "Access token is empty."}}))).into_response();
                }
                let filter = query.iter().find(|(name, _)| name == "$filter").map(|(_, value)| value.clone()).unwrap_or_default();
                if filter.contains("neil") {
                    // An apostrophe is doubled inside an OData string.
                    assert_eq!(filter, "userPrincipalName eq 'o''neil@corp.example' and status/errorCode eq 0");
                }
                Json(json!({"@odata.context": "https://graph.microsoft.com/v1.0/$metadata#auditLogs/signIns", "value": [
                    {"id": "1", "createdDateTime": "2026-11-25T07:58:00Z", "userPrincipalName": "o'neil@corp.example", "appDisplayName": "Office 365 Exchange Online", "ipAddress": "203.0.113.7", "status": {"errorCode": 0}, "location": {"city": "Lagos", "countryOrRegion": "NG"}},
                    {"id": "2", "createdDateTime": "2026-11-24T17:00:00Z", "userPrincipalName": "o'neil@corp.example", "appDisplayName": "Azure Portal", "ipAddress": "198.51.100.2", "status": {"errorCode": 0}, "location": {"city": "Oslo", "countryOrRegion": "NO"}}
                ]})).into_response()
            }),
        )
        .route(
            "/falcon/devices/combined/devices/v1",
            get(|State(vendor): State<Vendor>, headers: HeaderMap, Query(query): Query<Vec<(String, String)>>| async move {
                if let Some(response) = vendor.misbehave(&["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-retryafter"]).await {
                    return response;
                }
                if !bearer_ok(&headers) {
                    return (StatusCode::UNAUTHORIZED, Json(json!({"meta": {"query_time": 0.0, "powered_by": "crowdstrike-api-gateway"}, "errors": [{"code": 401, "message": "access denied, invalid bearer token"}], "resources": []}))).into_response();
                }
                let filter = query.iter().find(|(name, _)| name == "filter").map(|(_, value)| value.clone()).unwrap_or_default();
                let resources = if filter == "hostname:'SRV-PAY-01'" {
                    json!([{"device_id": "5f1e", "hostname": "SRV-PAY-01", "platform_name": "Windows", "os_version": "Windows Server 2022", "product_type_desc": "Server", "ou": ["Servers", "Payments"], "last_seen": "2026-11-25T09:59:00Z", "tags": ["SensorGroupingTags/payments"]}])
                } else {
                    json!([])
                };
                Json(json!({"meta": {"query_time": 0.01, "pagination": {"offset": 0, "limit": 1, "total": resources.as_array().unwrap().len()}, "powered_by": "device-api", "trace_id": "x"}, "resources": resources, "errors": []})).into_response()
            }),
        )
}

#[tokio::test]
async fn graph_users_and_sign_ins_fetch_one_token_and_read_the_account() {
    let vendor = serve(oauth_vendor()).await;
    let users = source("graph_users", &vendor, "/graph");
    let sign_ins = source("graph_sign_ins", &vendor, "/graph");
    let sources = sources(&["graph_client_secret"]);
    sources.replace(vec![
        users.clone(),
        SourceConfig {
            id: 2,
            ..sign_ins.clone()
        },
    ]);
    let alert = alert_naming(&[Entity::new(EntityKind::Email, "kim@corp.example")]);
    let gathered = sources.gather(&alert, 1, Duration::from_secs(10)).await;
    let user = gathered
        .facts
        .answers
        .iter()
        .find(|answer| answer.source == "graph_users")
        .unwrap();
    assert_eq!(
        user.fact(FactKind::AccountEnabled),
        Some(&FactValue::Flag(false))
    );
    assert_eq!(
        user.fact(FactKind::Title),
        Some(&FactValue::Text("Payroll Specialist".into()))
    );
    let again = alert_naming(&[Entity::new(EntityKind::Email, "ghost@corp.example")]);
    sources.gather(&again, 1, Duration::from_secs(10)).await;
    assert_eq!(
        vendor.token_calls.load(Ordering::SeqCst),
        2,
        "one token per source in force, kept for the next lookups"
    );
    let logins = ask(
        &sources,
        &sign_ins,
        EntityKind::Email,
        "o'neil@corp.example",
    )
    .await;
    assert_eq!(
        fact(&logins, FactKind::RecentSignIns),
        Some(FactValue::Number(2.0))
    );
    assert_eq!(
        fact(&logins, FactKind::Country),
        Some(FactValue::Text("NG".into()))
    );
    assert_eq!(
        ask(&sources, &users, EntityKind::Email, "ghost@corp.example").await,
        AnswerResult::NotFound
    );
}

#[tokio::test]
async fn a_refused_client_secret_is_reported_without_the_secret() {
    let vendor = serve(oauth_vendor()).await;
    let config = source("graph_users", &vendor, "/graph");
    let wrong = Sources::new(
        Arc::new(StaticSecrets(vec![(
            "graph_client_secret".into(),
            sleuth_sources::Secret::new("wrong-client-secret-value"),
        )])),
        None,
    )
    .unwrap();
    let failed = ask(&wrong, &config, EntityKind::Email, "kim@corp.example").await;
    let said = reason(&failed);
    assert!(said.contains("AADSTS7000215"), "{said}");
    assert!(!said.contains("wrong-client-secret-value"));
}

#[tokio::test]
async fn crowdstrike_says_a_host_is_a_server_and_what_it_does_not_know() {
    let vendor = serve(oauth_vendor()).await;
    let config = source("crowdstrike_hosts", &vendor, "/falcon");
    let sources = sources(&["crowdstrike_client_secret"]);
    let host = ask(&sources, &config, EntityKind::Host, "SRV-PAY-01").await;
    assert_eq!(
        fact(&host, FactKind::HostRole),
        Some(FactValue::Text("server".into()))
    );
    assert_eq!(
        fact(&host, FactKind::OrganizationalUnit),
        Some(FactValue::Text("Servers".into()))
    );
    assert_eq!(
        ask(&sources, &config, EntityKind::Host, "LAPTOP-UNKNOWN").await,
        AnswerResult::NotFound
    );
    // CrowdStrike gives the time to retry in X-RateLimit-RetryAfter (Unix seconds).
    vendor.set(Mode::RateLimited(300));
    let limited = ask(&sources, &config, EntityKind::Host, "SRV-PAY-01").await;
    assert!(reason(&limited).contains("retry after"), "{limited:?}");
}

// --- Failure behaviour ---------------------------------------------------------------------

#[tokio::test]
async fn a_hanging_source_costs_its_timeout_then_the_breaker_stops_asking() {
    let vendor = serve(virustotal()).await;
    let mut config = source("virustotal", &vendor, "/api/v3");
    config.limits.timeout_seconds = 0.3;
    config.limits.breaker_failures = 2;
    let sources = sources(&["virustotal_api_key"]);
    sources.replace(vec![config]);
    vendor.set(Mode::Hang);
    for (round, hash) in ["a", "b"].iter().enumerate() {
        let alert = alert_naming(&[Entity::new(EntityKind::HashMd5, hash.repeat(32))]);
        let started = Instant::now();
        let gathered = sources.gather(&alert, 1, Duration::from_secs(10)).await;
        let elapsed = started.elapsed();
        assert!(reason(&gathered.facts.answers[0].result).contains("no answer within 0.3 s"));
        assert!(
            elapsed >= Duration::from_millis(290) && elapsed < Duration::from_secs(2),
            "round {round}: {elapsed:?}"
        );
    }
    let started = Instant::now();
    let alert = alert_naming(&[Entity::new(EntityKind::HashMd5, "c".repeat(32))]);
    let gathered = sources.gather(&alert, 1, Duration::from_secs(10)).await;
    assert!(
        started.elapsed() < Duration::from_millis(100),
        "{:?}",
        started.elapsed()
    );
    assert!(reason(&gathered.facts.answers[0].result).contains("not asked"));
    assert_eq!(vendor.calls(), 2);
    assert_eq!(
        sources.breaker_states(),
        vec![("virustotal".to_string(), sleuth_sources::BreakerState::Open)]
    );
}

#[tokio::test]
async fn the_budget_cuts_every_source_off_together() {
    let hanging = serve(virustotal()).await;
    let answering = serve(greynoise()).await;
    hanging.set(Mode::Hang);
    let sources = sources(&["virustotal_api_key", "greynoise_api_key"]);
    sources.replace(vec![
        source("virustotal", &hanging, "/api/v3"),
        SourceConfig {
            id: 2,
            ..source("greynoise", &answering, "/v3")
        },
    ]);
    let alert = alert_naming(&[
        Entity::new(EntityKind::Ip, "45.83.64.1"),
        Entity::new(EntityKind::Domain, "slow.example"),
    ]);
    let started = Instant::now();
    let gathered = sources.gather(&alert, 1, Duration::from_millis(400)).await;
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    let by_source = |name: &str| {
        gathered
            .facts
            .answers
            .iter()
            .filter(|answer| answer.source == name)
            .collect::<Vec<_>>()
    };
    assert!(
        by_source("greynoise")
            .iter()
            .all(|answer| matches!(answer.result, AnswerResult::Found(_)))
    );
    let slow = by_source("virustotal");
    assert_eq!(
        slow.len(),
        2,
        "virustotal answers for the address and the domain"
    );
    assert!(
        slow.iter()
            .all(|answer| reason(&answer.result).contains("budget"))
    );
}

#[tokio::test]
async fn a_burst_of_a_thousand_alerts_on_one_hash_asks_once() {
    let vendor = serve(virustotal()).await;
    let sources = Arc::new(sources(&["virustotal_api_key"]));
    sources.replace(vec![source("virustotal", &vendor, "/api/v3")]);
    let alert = Arc::new(alert_naming(&[Entity::new(
        EntityKind::HashSha256,
        "e".repeat(64),
    )]));
    let mut tasks = Vec::new();
    for _ in 0..1000 {
        let (sources, alert) = (sources.clone(), alert.clone());
        tasks.push(tokio::spawn(async move {
            sources.gather(&alert, 1, Duration::from_secs(10)).await
        }));
    }
    for task in tasks {
        let gathered = task.await.unwrap();
        assert_eq!(
            gathered.facts.answers[0].fact(FactKind::MaliciousVotes),
            Some(&FactValue::Number(55.0))
        );
    }
    assert_eq!(vendor.calls(), 1);
}

#[tokio::test]
async fn a_source_answers_only_for_its_tenant_union() {
    let vendor = serve(greynoise()).await;
    let sources = sources(&["greynoise_api_key"]);
    sources.replace(vec![SourceConfig {
        tenant_union_id: Some(7),
        ..source("greynoise", &vendor, "/v3")
    }]);
    let alert = alert_naming(&[Entity::new(EntityKind::Ip, "45.83.64.1")]);
    assert!(
        sources
            .gather(&alert, 1, Duration::from_secs(5))
            .await
            .facts
            .is_empty()
    );
    assert_eq!(
        sources
            .gather(&alert, 7, Duration::from_secs(5))
            .await
            .facts
            .answers
            .len(),
        1
    );
}

#[tokio::test]
async fn a_broken_vendor_becomes_a_failed_answer_with_its_words() {
    let vendor = serve(virustotal()).await;
    let sources = sources(&["virustotal_api_key"]);
    sources.replace(vec![source("virustotal", &vendor, "/api/v3")]);
    vendor.set(Mode::Broken);
    let alert = alert_naming(&[Entity::new(EntityKind::HashMd5, "d".repeat(32))]);
    let gathered = sources.gather(&alert, 1, Duration::from_secs(5)).await;
    let said = reason(&gathered.facts.answers[0].result);
    assert!(
        said.contains("HTTP 500") && said.contains("upstream exploded"),
        "{said}"
    );
    assert!(gathered.calls[0].failed);
}

#[tokio::test]
async fn a_query_secret_never_reaches_a_reason() {
    // A vendor that echoes the request, key and all, in its error.
    let router = Router::new().route(
        "/echo",
        get(|Query(query): Query<Vec<(String, String)>>| async move {
            (StatusCode::BAD_REQUEST, format!("bad request: {query:?}")).into_response()
        }),
    );
    let vendor = serve(router).await;
    let base = vendor.base.lock().unwrap().clone();
    let definition: Definition = serde_json::from_value(json!({
        "type": "http_json", "source_kind": "threat_intel", "base_url": base,
        "auth": {"type": "query", "name": "apikey", "secret": "echo_key"},
        "lookups": {"ip": {"path": "/echo", "query": {"ip": "{value}"}}},
        "facts": [{"fact": "abuse_score", "path": "$.score"}]
    }))
    .unwrap();
    let config = SourceConfig {
        id: 1,
        name: "echo".into(),
        version: 1,
        tenant_union_id: None,
        enabled: true,
        definition,
        limits: Limits::default(),
    };
    let sources = sources(&["echo_key"]);
    let failed = ask(&sources, &config, EntityKind::Ip, "192.0.2.1").await;
    let said = reason(&failed);
    assert!(said.contains("HTTP 400") && said.contains("***"), "{said}");
    assert!(!said.contains(KEY), "{said}");
}
