//! A short, seeded fuzz run of the whole HTTP API, as CI can afford it: every path and
//! method the served OpenAPI document lists, with hostile path parameters, query strings
//! and bodies, as each role and as nobody. Whatever arrives, the server answers below 500,
//! every refusal is a JSON error with a code, and the server still answers afterwards.
//!
//! Seeded so that a failure repeats: the seed and the request are in the panic message.
//! `SLEUTH_FUZZ_REQUESTS` raises the number of requests for a longer run.

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};

use crate::harness::TestApp;
use crate::on_both_backends;

on_both_backends!(hostile_requests_to_every_route_never_answer_5xx_or_plain_text);

/// One endpoint of the OpenAPI document.
struct Route {
    method: String,
    path: String,
    query_names: Vec<String>,
}

async fn hostile_requests_to_every_route_never_answer_5xx_or_plain_text(app: TestApp) {
    let seed: u64 = std::env::var("SLEUTH_FUZZ_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or(29);
    let requests: usize = std::env::var("SLEUTH_FUZZ_REQUESTS")
        .ok()
        .and_then(|count| count.parse().ok())
        .unwrap_or(1_500);
    let routes = routes(&app).await;
    assert!(routes.len() > 40, "the document lists every route");
    // Some real ids, so that requests reach past the not-found check too.
    let existing = app.create(&json!({"title": "fuzz target on WKS-1"})).await;
    let mut rng = StdRng::seed_from_u64(seed);
    for index in 0..requests {
        let route = routes.choose(&mut rng).unwrap();
        let path = hostile_path(&mut rng, route, existing);
        let key = match rng.random_range(0..10) {
            0 => None,
            1 => Some("sleuth_not_a_real_key"),
            2 => Some(app.reader_key.as_str()),
            3 => Some(app.member_key.as_str()),
            _ => Some(app.admin_key.as_str()),
        };
        let (content_type, body) = hostile_body(&mut rng);
        let answer = app
            .raw(&route.method, &path, key, content_type, body.clone())
            .await;
        let shown = || {
            format!(
                "request {index} of seed {seed}: {} {path} with {:?}: {} {}",
                route.method,
                body.as_deref().map(String::from_utf8_lossy),
                answer.status,
                answer.text.chars().take(300).collect::<String>()
            )
        };
        assert!(answer.status < 500 || answer.status == 503, "{}", shown());
        if answer.status >= 400 {
            assert!(
                answer.json["code"].is_string() && answer.json["error_msg"].is_string(),
                "a refusal is a JSON error: {}",
                shown()
            );
        }
    }
    let ready = app.raw("GET", "/readyz", None, None, None).await;
    assert_eq!(
        ready.status, 200,
        "the server still answers: {}",
        ready.text
    );
    let list = app
        .get("/app/api/v1/investigation?limit=5", &app.reader_key)
        .await;
    assert_eq!(list.status, 200, "{}", list.text);
}

/// Every operation of the served OpenAPI document, with its query parameter names.
async fn routes(app: &TestApp) -> Vec<Route> {
    let document = app.get("/app/api/v1/schema", &app.reader_key).await;
    assert_eq!(document.status, 200, "{}", document.text);
    let mut routes = Vec::new();
    for (path, operations) in document.json["paths"].as_object().unwrap() {
        for (method, operation) in operations.as_object().unwrap() {
            if !["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                continue;
            }
            // Revoking keys and changing users would lock the fuzzer's own keys out for
            // the rest of the run; the users tests cover what those refuse.
            if path.ends_with("/revoke") || (path.contains("/users/") && method == "patch") {
                continue;
            }
            let query_names = operation["parameters"]
                .as_array()
                .map(|parameters| {
                    parameters
                        .iter()
                        .filter(|parameter| parameter["in"] == "query")
                        .filter_map(|parameter| parameter["name"].as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            routes.push(Route {
                method: method.to_uppercase(),
                path: path.clone(),
                query_names,
            });
        }
    }
    routes
}

/// Values that have broken servers: edge numbers, encodings, NUL, long and odd text. All
/// are valid in a URI (percent-encoded where needed), so the request itself is well formed.
const HOSTILE_VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "1e309",
    "NaN",
    "true",
    "null",
    "%00",
    "a%00b",
    "%ff",
    "%c3%28",
    "%e2%80%ae",
    "%20",
    "..%2f..%2fetc%2fpasswd",
    "%27%20OR%201%3d1--",
    "%3cscript%3e",
    "[]",
    "{}",
    "%5B%5D",
    "2026-13-45T99:99:99Z",
    "1970-01-01T00:00:00Z",
    "urgent",
    "success",
    "desc",
];

fn hostile_value(rng: &mut StdRng, existing: i64) -> String {
    match rng.random_range(0..12) {
        0 => existing.to_string(),
        1 => "x".repeat(rng.random_range(1..5_000)),
        2 => (0..rng.random_range(1..40))
            .map(|_| format!("%{:02x}", rng.random::<u8>()))
            .collect(),
        _ => (*HOSTILE_VALUES.choose(rng).unwrap()).to_string(),
    }
}

fn hostile_path(rng: &mut StdRng, route: &Route, existing: i64) -> String {
    let mut path = String::new();
    let mut rest = route.path.as_str();
    while let Some(open) = rest.find('{') {
        path.push_str(&rest[..open]);
        let close = rest[open..]
            .find('}')
            .map_or(rest.len(), |close| open + close + 1);
        path.push_str(&hostile_value(rng, existing));
        rest = &rest[close..];
    }
    path.push_str(rest);
    let mut pairs = Vec::new();
    for name in &route.query_names {
        if rng.random_bool(0.4) {
            pairs.push(format!("{name}={}", hostile_value(rng, existing)));
        }
    }
    if rng.random_bool(0.2) {
        pairs.push(format!(
            "unknown_{}={}",
            rng.random::<u16>(),
            hostile_value(rng, existing)
        ));
    }
    if !pairs.is_empty() {
        path.push('?');
        path.push_str(&pairs.join("&"));
    }
    path
}

fn hostile_body(rng: &mut StdRng) -> (Option<&'static str>, Option<Vec<u8>>) {
    match rng.random_range(0..8) {
        0 => (None, None),
        1 => (
            Some("application/json"),
            Some(b"{\"unterminated\": ".to_vec()),
        ),
        2 => (
            Some("application/json"),
            Some(
                (0..rng.random_range(1..200))
                    .map(|_| rng.random::<u8>())
                    .collect(),
            ),
        ),
        3 => (Some("text/plain"), Some(b"{}".to_vec())),
        _ => (
            Some("application/json"),
            Some(random_json(rng, 0).to_string().into_bytes()),
        ),
    }
}

/// A JSON value of the kinds the API's bodies hold, with field names the API uses, so that
/// a good share of bodies get past the shape check into the handlers.
fn random_json(rng: &mut StdRng, depth: usize) -> Value {
    const NAMES: &[&str] = &[
        "raw_alert_content",
        "title",
        "name",
        "code",
        "script_code",
        "trigger_id",
        "is_enabled",
        "allow_network",
        "secret_names",
        "outcome",
        "priority",
        "text",
        "email",
        "role",
        "is_active",
        "tenant_id",
        "tenant_integration_key",
        "rules",
        "condition",
        "entities",
        "kind",
        "value",
        "document",
        "status",
        "description",
        "first_name",
        "last_name",
        "alert_tenants",
        "instructions",
        "note",
    ];
    let leaf = |rng: &mut StdRng| -> Value {
        match rng.random_range(0..9) {
            0 => Value::Null,
            1 => json!(rng.random::<bool>()),
            2 => json!(rng.random::<i64>()),
            3 => json!(rng.random::<f64>() * 1e300),
            4 => json!("\u{0}\u{202e}<img src=x onerror=alert(1)>"),
            5 => json!("x".repeat(rng.random_range(0..3_000))),
            6 => json!(["a", 1, null]),
            _ => json!(*HOSTILE_VALUES.choose(rng).unwrap()),
        }
    };
    if depth >= 4 || rng.random_bool(0.3) {
        return leaf(rng);
    }
    if rng.random_bool(0.2) {
        return Value::Array(
            (0..rng.random_range(0..5))
                .map(|_| random_json(rng, depth + 1))
                .collect(),
        );
    }
    let mut object = Map::new();
    for _ in 0..rng.random_range(0..8) {
        let name = (*NAMES.choose(rng).unwrap()).to_string();
        object.insert(name, random_json(rng, depth + 1));
    }
    Value::Object(object)
}
