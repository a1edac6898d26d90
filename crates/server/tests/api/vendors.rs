//! Loopback vendors for the pull connectors: an axum server per test answering in each
//! vendor's documented shapes (sign-in, paging, errors), holding a backlog of alerts made
//! from the parsers' samples, and misbehaving on cue: a token that stops being accepted,
//! a 429 with `Retry-After`, a 503, a request that never answers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};

/// The secret (client secret or API token) every loopback vendor accepts.
pub(crate) const SECRET: &str = "loopback-vendor-secret-7f3a";
pub(crate) const CLIENT_ID: &str = "sleuth-client";
/// The secret-store names the connectors of these tests read: the secret above, and a
/// Google service account key.
pub(crate) const SECRET_NAME: &str = "VENDOR_TOKEN";
pub(crate) const GOOGLE_KEY_NAME: &str = "GOOGLE_SERVICE_ACCOUNT";
/// The service account the loopback Google knows, and the admin it may act for.
pub(crate) const GOOGLE_ACCOUNT: &str = "sleuth-alerts@sleuth-test.iam.gserviceaccount.com";
pub(crate) const GOOGLE_ADMIN: &str = "secops-admin@example.com";
const GOOGLE_SCOPE: &str = "https://www.googleapis.com/auth/apps.alerts";
/// Test-only RSA keys: the account's own, and one Google does not know.
const GOOGLE_TEST_KEY: &str =
    include_str!("../../../connectors/testdata/service-account-test-key.pem");
pub(crate) const OTHER_TEST_KEY: &str =
    include_str!("../../../connectors/testdata/other-test-key.pem");

/// A service account key file as Google's console gives it, holding `private_key`.
pub(crate) fn google_key_file(private_key: &str) -> String {
    json!({
        "type": "service_account",
        "project_id": "sleuth-test",
        "private_key_id": "3f1c9a0d7e5b2c4a6f8e1d0b9c7a5e3f2d1c0b9a",
        "private_key": private_key,
        "client_email": GOOGLE_ACCOUNT,
        "client_id": "104857600000000000001",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": "https://oauth2.googleapis.com/token",
    })
    .to_string()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Vendor {
    Crowdstrike,
    Graph,
    Okta,
    Sentinelone,
    Elastic,
    Google,
}

impl Vendor {
    pub(crate) fn kind(self) -> &'static str {
        match self {
            Vendor::Crowdstrike => "crowdstrike",
            Vendor::Graph => "graph_security",
            Vendor::Okta => "okta",
            Vendor::Sentinelone => "sentinelone",
            Vendor::Elastic => "elastic",
            Vendor::Google => "google_workspace",
        }
    }

    /// Signs in for a token (OAuth2 client credentials, or Google's signed JWT).
    pub(crate) fn oauth(self) -> bool {
        matches!(self, Vendor::Crowdstrike | Vendor::Graph | Vendor::Google)
    }

    /// The name of the secret its connector reads, and the value stored under it.
    pub(crate) fn secret(self) -> (&'static str, String) {
        match self {
            Vendor::Google => (GOOGLE_KEY_NAME, google_key_file(GOOGLE_TEST_KEY)),
            _ => (SECRET_NAME, SECRET.to_owned()),
        }
    }

    /// The connector settings that point at this loopback vendor.
    pub(crate) fn settings(self, address: &str, page_size: u32) -> Value {
        let base = format!("http://{address}");
        let mut settings = json!({
            "base_url": base,
            "secret": self.secret().0,
            "page_size": page_size,
            "backfill_hours": 48,
        });
        match self {
            Vendor::Crowdstrike => settings["client_id"] = json!(CLIENT_ID),
            Vendor::Graph => {
                settings["client_id"] = json!(CLIENT_ID);
                settings["tenant_id"] = json!("contoso-tenant");
                settings["token_url"] = json!(format!("{base}/contoso-tenant/oauth2/v2.0/token"));
            }
            Vendor::Google => {
                // The key names Google's own token endpoint; the setting takes precedence.
                settings["token_url"] = json!(format!("{base}/token"));
                settings["subject"] = json!(GOOGLE_ADMIN);
            }
            _ => {}
        }
        settings
    }

    /// Alert `index` of the backlog: the vendor's sample with its own id and time.
    pub(crate) fn alert(self, index: usize, at: DateTime<Utc>) -> Value {
        let time = at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        match self {
            Vendor::Crowdstrike => {
                let mut alert = sample("crowdstrike_falcon_alert.json");
                let id = format!("ind:{index:032x}:8590112233-51234-{index}");
                alert["composite_id"] = json!(format!("5f1e2d3c4b5a69788796a5b4c3d2e1f0:{id}"));
                alert["id"] = json!(id);
                alert["created_timestamp"] = json!(time);
                alert
            }
            Vendor::Graph => {
                let mut alert = sample("microsoft_graph_alert_v2.json");
                alert["id"] = json!(format!("da{index:08x}-7d3e-4c58-a1b0-9e8d7c6b5a43"));
                alert["providerAlertId"] = json!(format!("{index:08x}"));
                alert["createdDateTime"] = json!(time);
                alert["lastUpdateDateTime"] = json!(time);
                alert
            }
            Vendor::Okta => {
                let mut event = sample("okta_system_log_event.json");
                event["uuid"] = json!(format!("{index:08x}-16b9-11f1-9d3e-3b5c7a9e2f10"));
                event["published"] = json!(time);
                event
            }
            Vendor::Sentinelone => {
                let mut threat = sample("sentinelone_threat.json");
                threat["id"] = json!(format!("21084559314022{index:05}"));
                threat["threatInfo"]["threatId"] = threat["id"].clone();
                threat["threatInfo"]["createdAt"] = json!(time);
                threat
            }
            Vendor::Elastic => {
                let mut alert = sample("elastic_security_alert.json");
                alert["kibana.alert.uuid"] = json!(format!("{index:032x}"));
                alert["@timestamp"] = json!(time);
                alert
            }
            Vendor::Google => {
                let mut alert = sample("google_workspace_alert.json");
                let id = json!(format!("{index:08x}-41d6-4a8e-b5c0-7e2d1f6a9c84"));
                alert["alertId"] = id.clone();
                alert["metadata"]["alertId"] = id;
                alert["createTime"] = json!(time);
                alert["updateTime"] = json!(time);
                alert["metadata"]["updateTime"] = json!(time);
                alert
            }
        }
    }

    /// The time an alert is paged by.
    fn time_of(self, alert: &Value) -> DateTime<Utc> {
        let text = match self {
            Vendor::Crowdstrike => &alert["created_timestamp"],
            Vendor::Graph => &alert["lastUpdateDateTime"],
            Vendor::Okta => &alert["published"],
            Vendor::Sentinelone => &alert["threatInfo"]["createdAt"],
            Vendor::Elastic => &alert["@timestamp"],
            Vendor::Google => &alert["createTime"],
        };
        DateTime::parse_from_rfc3339(text.as_str().unwrap())
            .unwrap()
            .with_timezone(&Utc)
    }
}

pub(crate) fn sample(name: &str) -> Value {
    let path = format!("{}/../parsers/samples/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// When the vendor misbehaves, counted in API requests (sign-ins not counted), from 1.
#[derive(Debug, Clone, Default)]
pub(crate) struct Faults {
    /// This request answers 429 with `Retry-After: 1`.
    pub rate_limit_at: Option<usize>,
    /// This request answers 503, once.
    pub unavailable_at: Option<usize>,
    /// A token is refused with 401 after serving this many requests (OAuth2 vendors).
    pub token_serves: Option<usize>,
    /// This request never answers.
    pub hang_at: Option<usize>,
    /// Every request answers this status (a vendor down, or refusing the credentials).
    pub always: Option<u16>,
}

/// One request the vendor answered.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub path: String,
    pub authorization: Option<String>,
    pub status: u16,
    pub at: Instant,
}

pub(crate) struct LoopbackVendor {
    pub address: String,
    pub shared: Arc<Shared>,
    _server: tokio::task::JoinHandle<()>,
}

pub(crate) struct Shared {
    vendor: Vendor,
    pub alerts: Mutex<Vec<Value>>,
    pub faults: Mutex<Faults>,
    api_requests: AtomicUsize,
    pub sign_ins: AtomicUsize,
    in_flight: AtomicUsize,
    pub max_in_flight: AtomicUsize,
    tokens: Mutex<HashMap<String, usize>>,
    /// CrowdStrike: where each composite id is in `alerts`.
    by_id: Mutex<HashMap<String, usize>>,
    pub seen: Mutex<Vec<Seen>>,
    /// Write-back requests taken: method, path and body.
    pub updates: Mutex<Vec<(String, String, Value)>>,
    address: Mutex<String>,
}

impl LoopbackVendor {
    /// A vendor holding `count` alerts, one a second from two hours ago.
    pub(crate) async fn start(vendor: Vendor, count: usize, faults: Faults) -> LoopbackVendor {
        let start = Utc::now() - Duration::hours(2);
        let alerts = (0..count)
            .map(|index| vendor.alert(index, start + Duration::milliseconds(index as i64 * 1000)))
            .collect();
        let shared = Arc::new(Shared {
            vendor,
            alerts: Mutex::new(alerts),
            faults: Mutex::new(faults),
            api_requests: AtomicUsize::new(0),
            sign_ins: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            tokens: Mutex::new(HashMap::new()),
            by_id: Mutex::new(HashMap::new()),
            seen: Mutex::new(Vec::new()),
            updates: Mutex::new(Vec::new()),
            address: Mutex::new(String::new()),
        });
        let router = match vendor {
            Vendor::Crowdstrike => Router::new()
                .route("/oauth2/token", post(crowdstrike_token))
                .route("/alerts/queries/alerts/v2", get(crowdstrike_query))
                .route("/alerts/entities/alerts/v2", post(crowdstrike_entities))
                .route("/alerts/entities/alerts/v3", patch(crowdstrike_update)),
            Vendor::Graph => Router::new()
                .route("/{tenant}/oauth2/v2.0/token", post(graph_token))
                .route("/v1.0/security/alerts_v2", get(graph_alerts))
                .route("/v1.0/security/alerts_v2/{id}", patch(graph_update))
                .route(
                    "/v1.0/security/alerts_v2/{id}/comments",
                    post(graph_comment),
                ),
            Vendor::Okta => Router::new().route("/api/v1/logs", get(okta_logs)),
            Vendor::Sentinelone => Router::new().route("/web/api/v2.1/threats", get(s1_threats)),
            Vendor::Elastic => Router::new().route(
                "/.alerts-security.alerts-default/_search",
                post(elastic_search),
            ),
            Vendor::Google => Router::new()
                .route("/token", post(google_token))
                .route("/v1beta1/alerts", get(google_alerts)),
        }
        .layer(axum::middleware::from_fn_with_state(shared.clone(), gate))
        .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        *shared.address.lock().unwrap() = address.clone();
        let server = tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        LoopbackVendor {
            address,
            shared,
            _server: server,
        }
    }

    pub(crate) fn api_requests(&self) -> usize {
        self.shared.api_requests.load(Ordering::SeqCst)
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// Adds alerts after the backlog, newer than any in it.
    pub(crate) fn add_alerts(&self, count: usize) {
        let mut alerts = self.shared.alerts.lock().unwrap();
        let newest = alerts
            .iter()
            .map(|alert| self.shared.vendor.time_of(alert))
            .max()
            .unwrap_or_else(Utc::now);
        let first = alerts.len();
        for offset in 0..count {
            let at = newest + Duration::milliseconds(1000 * (offset as i64 + 1));
            alerts.push(self.shared.vendor.alert(first + offset, at));
        }
    }
}

fn is_sign_in(path: &str) -> bool {
    path.ends_with("/token")
}

/// Every request passes here: faults, credentials, the log, and concurrency.
async fn gate(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    let authorization = request
        .headers()
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let response = answer(&shared, &path, authorization.as_deref(), request, next).await;
    shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    shared.seen.lock().unwrap().push(Seen {
        path,
        authorization,
        status: response.status().as_u16(),
        at: Instant::now(),
    });
    response
}

async fn answer(
    shared: &Shared,
    path: &str,
    authorization: Option<&str>,
    request: Request,
    next: Next,
) -> Response {
    let faults = shared.faults.lock().unwrap().clone();
    if let Some(status) = faults.always {
        return (
            StatusCode::from_u16(status).unwrap(),
            axum::Json(json!({"errors": [{"code": status, "message": format!("failing; the token sent was {}", authorization.unwrap_or(""))}]})),
        )
            .into_response();
    }
    if is_sign_in(path) {
        shared.sign_ins.fetch_add(1, Ordering::SeqCst);
        return next.run(request).await;
    }
    let number = shared.api_requests.fetch_add(1, Ordering::SeqCst) + 1;
    if faults.hang_at == Some(number) {
        std::future::pending::<()>().await;
    }
    if faults.rate_limit_at == Some(number) {
        let mut response = (
            StatusCode::TOO_MANY_REQUESTS,
            axum::Json(json!({"errors": [{"code": 429, "message": "API rate limit exceeded"}]})),
        )
            .into_response();
        response
            .headers_mut()
            .insert("retry-after", HeaderValue::from_static("1"));
        return response;
    }
    if faults.unavailable_at == Some(number) {
        return (StatusCode::SERVICE_UNAVAILABLE, "upstream unavailable").into_response();
    }
    if !authorized(shared, authorization, faults.token_serves) {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"errors": [{"code": 401, "message": "access denied, authorization failed"}]})),
        )
            .into_response();
    }
    next.run(request).await
}

fn authorized(shared: &Shared, authorization: Option<&str>, token_serves: Option<usize>) -> bool {
    let Some(authorization) = authorization else {
        return false;
    };
    let scheme = match shared.vendor {
        Vendor::Okta => "SSWS",
        Vendor::Sentinelone => "ApiToken",
        Vendor::Elastic => "ApiKey",
        Vendor::Crowdstrike | Vendor::Graph | Vendor::Google => "Bearer",
    };
    let Some(credential) = authorization.strip_prefix(&format!("{scheme} ")) else {
        return false;
    };
    if !shared.vendor.oauth() {
        return credential == SECRET;
    }
    let mut tokens = shared.tokens.lock().unwrap();
    let Some(served) = tokens.get_mut(credential) else {
        return false;
    };
    *served += 1;
    token_serves.is_none_or(|limit| *served <= limit)
}

fn issue_token(shared: &Shared, form: &str) -> Option<String> {
    let fields: HashMap<String, String> = form_urlencoded::parse(form.as_bytes())
        .into_owned()
        .collect();
    let valid = fields.get("client_id").map(String::as_str) == Some(CLIENT_ID)
        && fields.get("client_secret").map(String::as_str) == Some(SECRET)
        && fields.get("grant_type").map(String::as_str) == Some("client_credentials");
    if !valid {
        return None;
    }
    Some(new_token(shared))
}

fn new_token(shared: &Shared) -> String {
    let token = format!("token-{}", uuid::Uuid::new_v4());
    shared.tokens.lock().unwrap().insert(token.clone(), 0);
    token
}

async fn crowdstrike_token(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    match issue_token(&shared, std::str::from_utf8(&body).unwrap_or("")) {
        // CrowdStrike answers 201 Created.
        Some(token) => (
            StatusCode::CREATED,
            axum::Json(json!({"access_token": token, "token_type": "bearer", "expires_in": 1799})),
        )
            .into_response(),
        None => (
            StatusCode::FORBIDDEN,
            axum::Json(json!({"errors": [{"code": 403, "message": "Failed to issue access token - Not Authorized"}]})),
        )
            .into_response(),
    }
}

async fn graph_token(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let form = std::str::from_utf8(&body).unwrap_or("");
    let scope_ok = form.contains("scope=");
    match issue_token(&shared, form).filter(|_| scope_ok) {
        Some(token) => axum::Json(json!({"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": token})).into_response(),
        None => (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided."})),
        )
            .into_response(),
    }
}

/// Where the alerts at or after `since` begin: the backlog is kept in time order (made so,
/// and `add_alerts` appends newer ones), so a vendor of any size answers each page quickly.
fn start_of(shared: &Shared, alerts: &[Value], since: Option<DateTime<Utc>>) -> usize {
    since.map_or(0, |since| {
        alerts.partition_point(|alert| shared.vendor.time_of(alert) < since)
    })
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|time| time.with_timezone(&Utc))
}

fn number(query: &HashMap<String, String>, key: &str, default: usize) -> usize {
    query
        .get(key)
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

async fn crowdstrike_query(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let filter = query.get("filter").cloned().unwrap_or_default();
    let since = filter
        .strip_prefix("created_timestamp:>='")
        .and_then(|rest| rest.split('\'').next())
        .and_then(parse_time);
    let Some(since) = since else {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"errors": [{"code": 400, "message": "invalid filter"}]})),
        )
            .into_response();
    };
    let limit = number(&query, "limit", 100);
    let offset: usize = query
        .get("after")
        .and_then(|after| after.strip_prefix("o:"))
        .and_then(|offset| offset.parse().ok())
        .unwrap_or(0);
    let alerts = shared.alerts.lock().unwrap();
    let first = start_of(&shared, &alerts, Some(since));
    let total = alerts.len() - first;
    let ids: Vec<Value> = alerts[first..]
        .iter()
        .skip(offset)
        .take(limit)
        .map(|alert| alert["composite_id"].clone())
        .collect();
    let more = offset + ids.len() < total;
    axum::Json(json!({
        "meta": {"query_time": 0.01, "pagination": {"offset": offset, "limit": limit, "total": total,
                 "after": if more { format!("o:{}", offset + ids.len()) } else { String::new() }},
                 "powered_by": "detectsapi", "trace_id": "trace"},
        "resources": ids,
        "errors": [],
    }))
    .into_response()
}

async fn crowdstrike_entities(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let Some(ids) = request["composite_ids"].as_array() else {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"errors": [{"code": 400, "message": "composite_ids is required"}]})),
        )
            .into_response();
    };
    let alerts = shared.alerts.lock().unwrap();
    let mut index = shared.by_id.lock().unwrap();
    if index.len() != alerts.len() {
        *index = alerts
            .iter()
            .enumerate()
            .map(|(position, alert)| {
                (
                    alert["composite_id"].as_str().unwrap_or("").to_owned(),
                    position,
                )
            })
            .collect();
    }
    let resources: Vec<Value> = ids
        .iter()
        .filter_map(|id| {
            index
                .get(id.as_str()?)
                .map(|position| alerts[*position].clone())
        })
        .collect();
    axum::Json(json!({"meta": {"query_time": 0.01}, "resources": resources, "errors": []}))
        .into_response()
}

async fn graph_alerts(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let filter = query.get("$filter").cloned().unwrap_or_default();
    let since = filter
        .strip_prefix("lastUpdateDateTime ge ")
        .map(|rest| rest.split(' ').next().unwrap_or(""))
        .and_then(parse_time);
    let top = number(&query, "$top", 100);
    let skip = number(&query, "$skiptoken", 0);
    let all = shared.alerts.lock().unwrap();
    let alerts = &all[start_of(&shared, &all, since)..];
    let value: Vec<Value> = alerts.iter().skip(skip).take(top).cloned().collect();
    let mut body = json!({
        "@odata.context": "https://graph.microsoft.com/v1.0/$metadata#security/alerts_v2",
        "value": value,
    });
    if skip + top < alerts.len() {
        let address = shared.address.lock().unwrap().clone();
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("$filter", &filter)
            .append_pair("$top", &top.to_string())
            .append_pair("$skiptoken", &(skip + top).to_string())
            .finish();
        body["@odata.nextLink"] =
            json!(format!("http://{address}/v1.0/security/alerts_v2?{query}"));
    }
    axum::Json(body).into_response()
}

async fn okta_logs(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let limit = number(&query, "limit", 100);
    let alerts = shared.alerts.lock().unwrap();
    // `after` is Okta's opaque place in the log; here, a position.
    let start = match query.get("after") {
        Some(after) => after.parse().unwrap_or(0),
        None => {
            let since = query.get("since").and_then(|since| parse_time(since));
            start_of(&shared, &alerts, since)
        }
    };
    let events: Vec<Value> = alerts.iter().skip(start).take(limit).cloned().collect();
    let address = shared.address.lock().unwrap().clone();
    let mut headers = HeaderMap::new();
    headers.append(
        "link",
        HeaderValue::from_str(&format!(
            "<http://{address}/api/v1/logs?limit={limit}&after={start}>; rel=\"self\""
        ))
        .unwrap(),
    );
    // Polling mode: the next link is always there.
    headers.append(
        "link",
        HeaderValue::from_str(&format!(
            "<http://{address}/api/v1/logs?limit={limit}&after={}>; rel=\"next\"",
            start + events.len()
        ))
        .unwrap(),
    );
    (headers, axum::Json(Value::Array(events))).into_response()
}

async fn s1_threats(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let since = query
        .get("createdAt__gte")
        .and_then(|since| parse_time(since));
    let limit = number(&query, "limit", 10);
    let offset = query
        .get("cursor")
        .and_then(|cursor| cursor.strip_prefix("c-"))
        .and_then(|offset| offset.parse().ok())
        .unwrap_or(0);
    let all = shared.alerts.lock().unwrap();
    let alerts = &all[start_of(&shared, &all, since)..];
    let data: Vec<Value> = alerts.iter().skip(offset).take(limit).cloned().collect();
    let next = (offset + data.len() < alerts.len()).then(|| format!("c-{}", offset + data.len()));
    axum::Json(
        json!({"data": data, "pagination": {"nextCursor": next, "totalItems": alerts.len()}}),
    )
    .into_response()
}

async fn elastic_search(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let size = request["size"].as_u64().unwrap_or(10) as usize;
    let since = request
        .pointer("/query/bool/filter/0/range/@timestamp/gte")
        .and_then(Value::as_str)
        .and_then(parse_time);
    let key = |alert: &Value| {
        (
            shared.vendor.time_of(alert).timestamp_millis(),
            alert["kibana.alert.uuid"].as_str().unwrap_or("").to_owned(),
        )
    };
    let after = request["search_after"].as_array().map(|after| {
        (
            after[0].as_i64().unwrap_or(0),
            after[1].as_str().unwrap_or("").to_owned(),
        )
    });
    let all = shared.alerts.lock().unwrap();
    let alerts = &all[start_of(&shared, &all, since)..];
    // In time order, and each alert at its own instant: in (time, uuid) order too.
    let first = after.as_ref().map_or(0, |after| {
        alerts.partition_point(|alert| key(alert) <= *after)
    });
    let hits: Vec<Value> = alerts[first..]
        .iter()
        .take(size)
        .map(|alert| {
            let (millis, uuid) = key(alert);
            json!({"_index": ".internal.alerts-security.alerts-default-000001", "_id": uuid,
                   "_score": null, "_source": alert, "sort": [millis, uuid]})
        })
        .collect();
    axum::Json(json!({"took": 3, "timed_out": false,
        "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
        "hits": {"total": {"value": alerts.len(), "relation": "eq"}, "max_score": null, "hits": hits}}))
    .into_response()
}

/// Google's token endpoint for a service account (RFC 7523): the assertion must be an
/// RS256 JWT that the account's public key verifies, from the account, for the Alert
/// Center scope, addressed to this endpoint, acting for the admin, and at most an hour
/// long. Google answers a bad one 400 `invalid_grant`.
async fn google_token(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let fields: HashMap<String, String> = form_urlencoded::parse(&body).into_owned().collect();
    let address = shared.address.lock().unwrap().clone();
    let audience = format!("http://{address}/token");
    let verdict = if fields.get("grant_type").map(String::as_str)
        != Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    {
        Err("unsupported_grant_type")
    } else {
        fields
            .get("assertion")
            .ok_or("invalid_request")
            .and_then(|jwt| check_google_jwt(jwt, &audience))
    };
    match verdict {
        Ok(()) => axum::Json(
            json!({"access_token": new_token(&shared), "expires_in": 3599, "token_type": "Bearer"}),
        )
        .into_response(),
        Err(why) => (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_grant", "error_description": why})),
        )
            .into_response(),
    }
}

fn check_google_jwt(jwt: &str, audience: &str) -> Result<(), &'static str> {
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    let (signed, signature) = jwt.rsplit_once('.').ok_or("Invalid JWT.")?;
    let part = |text: &str| -> Result<Value, &'static str> {
        let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| "Invalid JWT.")?;
        serde_json::from_slice(&bytes).map_err(|_| "Invalid JWT.")
    };
    let (header, claims) = signed.split_once('.').ok_or("Invalid JWT.")?;
    let (header, claims) = (part(header)?, part(claims)?);
    if header["alg"] != "RS256" {
        return Err("Invalid JWT: the algorithm must be RS256.");
    }
    let pem: String = GOOGLE_TEST_KEY
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    let pkcs8 = STANDARD.decode(pem).unwrap();
    let key = ring::signature::RsaKeyPair::from_pkcs8(&pkcs8).unwrap();
    let public = ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        key.public().as_ref(),
    );
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| "Invalid JWT Signature.")?;
    public
        .verify(signed.as_bytes(), &signature)
        .map_err(|_| "Invalid JWT Signature.")?;
    let now = Utc::now().timestamp();
    let (iat, exp) = (
        claims["iat"].as_i64().unwrap_or(0),
        claims["exp"].as_i64().unwrap_or(0),
    );
    if claims["iss"] != GOOGLE_ACCOUNT
        || claims["aud"] != audience
        || claims["scope"] != GOOGLE_SCOPE
    {
        return Err("Invalid JWT: iss, aud or scope.");
    }
    if (iat - now).abs() > 60 || exp <= now || exp - iat > 3600 {
        return Err(
            "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.",
        );
    }
    if claims["sub"] != GOOGLE_ADMIN {
        return Err(
            "Client is unauthorized to retrieve access tokens using this method, or client not authorized for any of the scopes requested.",
        );
    }
    Ok(())
}

async fn google_alerts(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let bad = |message: &str| {
        (
            StatusCode::BAD_REQUEST,
            axum::Json(
                json!({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}),
            ),
        )
            .into_response()
    };
    let since = query
        .get("filter")
        .and_then(|filter| filter.strip_prefix("createTime >= \""))
        .and_then(|rest| rest.split('"').next())
        .and_then(parse_time);
    let Some(since) = since else {
        return bad("Request contains an invalid argument: filter");
    };
    if query.get("orderBy").map(String::as_str) != Some("create_time asc") {
        return bad("Request contains an invalid argument: orderBy");
    }
    let size = number(&query, "pageSize", 20);
    let offset: usize = match query.get("pageToken") {
        Some(token) => match token
            .strip_prefix("p-")
            .and_then(|offset| offset.parse().ok())
        {
            Some(offset) => offset,
            None => return bad("Request contains an invalid argument: pageToken"),
        },
        None => 0,
    };
    let all = shared.alerts.lock().unwrap();
    let alerts = &all[start_of(&shared, &all, Some(since))..];
    let page: Vec<Value> = alerts.iter().skip(offset).take(size).cloned().collect();
    // proto3 JSON: an empty list and an empty token are left out.
    let mut body = json!({});
    if !page.is_empty() {
        body["alerts"] = Value::Array(page.clone());
    }
    if offset + page.len() < alerts.len() {
        body["nextPageToken"] = json!(format!("p-{}", offset + page.len()));
    }
    axum::Json(body).into_response()
}

/// Falcon's alert update: `composite_ids` and `action_parameters`; an unknown id is named
/// in `errors`.
async fn crowdstrike_update(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let known = {
        let alerts = shared.alerts.lock().unwrap();
        request["composite_ids"].as_array().is_some_and(|ids| {
            ids.iter()
                .all(|id| alerts.iter().any(|alert| alert["composite_id"] == *id))
        })
    };
    if !known || !request["action_parameters"].is_array() {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"meta": {}, "errors": [{"code": 400, "message": "invalid composite_ids or action_parameters"}]})),
        )
            .into_response();
    }
    shared.updates.lock().unwrap().push((
        "PATCH".into(),
        "/alerts/entities/alerts/v3".into(),
        request,
    ));
    axum::Json(
        json!({"meta": {"query_time": 0.01, "writes": {"resources_affected": 1}}, "errors": []}),
    )
    .into_response()
}

/// Graph's alert update: the alert as changed.
async fn graph_update(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut alert = {
        let alerts = shared.alerts.lock().unwrap();
        match alerts.iter().find(|alert| alert["id"] == id.as_str()) {
            Some(alert) => alert.clone(),
            None => return StatusCode::NOT_FOUND.into_response(),
        }
    };
    for field in ["status", "classification", "determination"] {
        if let Some(value) = request.get(field) {
            alert[field] = value.clone();
        }
    }
    shared.updates.lock().unwrap().push((
        "PATCH".into(),
        format!("/v1.0/security/alerts_v2/{id}"),
        request,
    ));
    axum::Json(alert).into_response()
}

/// Graph's new alert comment: the alert's comments, the new one last.
async fn graph_comment(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if request["@odata.type"] != "microsoft.graph.security.alertComment"
        || !request["comment"].is_string()
    {
        return StatusCode::BAD_REQUEST.into_response();
    }
    shared.updates.lock().unwrap().push((
        "POST".into(),
        format!("/v1.0/security/alerts_v2/{id}/comments"),
        request.clone(),
    ));
    (
        StatusCode::CREATED,
        axum::Json(json!({"@odata.context": "https://graph.microsoft.com/v1.0/$metadata#Collection(microsoft.graph.security.alertComment)",
            "value": [{"comment": request["comment"], "createdByDisplayName": "Sleuth"}]})),
    )
        .into_response()
}
