//! The foundation: authentication and roles, the error model, limits, fallbacks,
//! readiness, the OpenAPI description and metrics.

use serde_json::json;

use crate::harness::{Answer, Backend, TestApp, assert_error, request, send_oversized};
use crate::on_both_backends;

on_both_backends!(
    no_key_or_a_bad_key_is_unauthorized,
    roles_limit_what_a_key_may_do,
    malformed_bodies_are_bad_requests_and_change_nothing,
    a_twenty_megabyte_body_is_too_large,
    unknown_routes_and_methods_answer_json,
    the_schema_is_openapi_generated_from_the_handlers,
    health_readiness_and_metrics_answer,
    tenant_unions_are_managed_by_admins,
);

async fn no_key_or_a_bad_key_is_unauthorized(app: TestApp) {
    let path = "/app/api/v1/investigation";
    let answer = app.raw("GET", path, None, None, None).await;
    assert_error(&answer, 401, "unauthorized");
    assert_error(
        &app.get(path, "sleuth_not-a-real-key").await,
        401,
        "unauthorized",
    );
    assert_error(&app.get(path, "").await, 401, "unauthorized");
    assert_error(&app.get(path, &"x".repeat(5000)).await, 401, "unauthorized");
    for prefix in ["Bearer ", "Token ", "Api-Key "] {
        let answer = app.get(path, &format!("{prefix}{}", app.reader_key)).await;
        assert_eq!(answer.status, 200, "prefix {prefix:?}: {}", answer.text);
    }
    // A revoked key stops working at once.
    let keys = app.store.list_api_keys().await.unwrap();
    let reader_key = keys
        .iter()
        .find(|key| key.user_email == "reader@example.com")
        .unwrap();
    app.store
        .revoke_api_key(reader_key.id, chrono::Utc::now())
        .await
        .unwrap();
    assert_error(&app.get(path, &app.reader_key).await, 401, "unauthorized");
}

async fn roles_limit_what_a_key_may_do(app: TestApp) {
    let alert = json!({"raw_alert_content": {"title": "role check"}});
    let answer = app
        .post("/app/api/v1/investigation/create", &app.reader_key, &alert)
        .await;
    assert_error(&answer, 403, "access_denied");
    assert!(
        answer.json["detail"].as_str().unwrap().contains("member"),
        "403 says which role is needed"
    );
    let union = json!({"display_name": "Acme"});
    assert_error(
        &app.post("/app/api/v1/tenant-unions", &app.reader_key, &union)
            .await,
        403,
        "access_denied",
    );
    assert_error(
        &app.post("/app/api/v1/tenant-unions", &app.member_key, &union)
            .await,
        403,
        "access_denied",
    );
    assert_eq!(
        app.post("/app/api/v1/tenant-unions", &app.admin_key, &union)
            .await
            .status,
        201
    );
    assert_eq!(
        app.post("/app/api/v1/investigation/create", &app.member_key, &alert)
            .await
            .status,
        200
    );
    assert_eq!(
        app.get("/app/api/v1/investigation", &app.reader_key)
            .await
            .status,
        200
    );
    let page = app
        .get(
            "/app/api/v1/investigation?investigation_state=not_asked",
            &app.reader_key,
        )
        .await;
    assert_eq!(
        page.json["count"], 1,
        "the reader's 403 changed nothing; the member's create stored one"
    );
}

async fn malformed_bodies_are_bad_requests_and_change_nothing(app: TestApp) {
    let path = "/app/api/v1/investigation/create";
    let cases: Vec<(Option<&str>, Vec<u8>)> = vec![
        (Some("application/json"), b"{not json".to_vec()),
        (Some("application/json"), b"".to_vec()),
        (Some("application/json"), b"[1, 2]".to_vec()),
        (
            Some("application/json"),
            br#"{"raw_alert_content": "a string"}"#.to_vec(),
        ),
        (
            Some("application/json"),
            br#"{"raw_alert_content": [1]}"#.to_vec(),
        ),
        (
            Some("application/json"),
            br#"{"raw_alert_content": {"a": 1}, "force_reinvestigation": "yes"}"#.to_vec(),
        ),
        (
            Some("application/json"),
            br#"{"raw_alert_content": {"a": 1}, "tenant_union_id": "one"}"#.to_vec(),
        ),
        (
            Some("application/json"),
            br#"{"raw_alert_content": {"a": 1}, "tenant_union_id": 1.5}"#.to_vec(),
        ),
        (
            Some("application/json"),
            br#"{"raw_alert_content": {"a": 1}, "tenant_union_id": 999}"#.to_vec(),
        ),
        (
            Some("application/json"),
            br#"{"raw_alert_content": {"a": 1}, "schema_key": "no_such_format"}"#.to_vec(),
        ),
        (Some("application/json"), br#"{}"#.to_vec()),
        (Some("application/json"), vec![0xff, 0xfe, 0x00]),
        (
            Some("text/plain"),
            br#"{"raw_alert_content": {"a": 1}}"#.to_vec(),
        ),
        (None, br#"{"raw_alert_content": {"a": 1}}"#.to_vec()),
        (
            Some("application/json"),
            format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes(),
        ),
    ];
    for (content_type, body) in cases {
        let shown = String::from_utf8_lossy(&body)
            .chars()
            .take(80)
            .collect::<String>();
        let answer = app
            .raw(
                "POST",
                path,
                Some(&app.member_key),
                content_type,
                Some(body),
            )
            .await;
        assert_error(&answer, 400, "bad_request");
        assert!(
            !answer.text.contains("sqlx") && !answer.text.contains("panicked"),
            "{shown}: {}",
            answer.text
        );
    }
    let unknown_key = app
        .post(
            path,
            &app.member_key,
            &json!({"raw_alert_content": {"a": 1}, "schema_key": "nope"}),
        )
        .await;
    assert!(
        unknown_key.json["error_msg"]
            .as_str()
            .unwrap()
            .contains("generic"),
        "the message lists the known keys"
    );
    let custom = "/app/api/v1/investigation/create/custom";
    for body in [&b"[]"[..], b"\"text\"", b"42", b"null", b"{bad"] {
        let answer = app
            .raw(
                "POST",
                custom,
                Some(&app.member_key),
                Some("application/json"),
                Some(body.to_vec()),
            )
            .await;
        assert_error(&answer, 400, "bad_request");
    }
    for query in [
        "?force_reinvestigation=maybe",
        "?tenant_union_id=abc",
        "?tenant_union_id=-3",
        "?tenant_union_id=424242",
    ] {
        let answer = app
            .raw(
                "POST",
                &format!("{custom}{query}"),
                Some(&app.member_key),
                Some("application/json"),
                Some(b"{\"a\":1}".to_vec()),
            )
            .await;
        assert_error(&answer, 400, "bad_request");
    }
    let everything = "/app/api/v1/investigation?investigation_state=not_asked&investigation_state=loading&investigation_state=success&investigation_state=error";
    assert_eq!(
        app.get(everything, &app.reader_key).await.json["count"],
        0,
        "nothing was stored"
    );
}

async fn a_twenty_megabyte_body_is_too_large(app: TestApp) {
    let padding = "x".repeat(20 * 1024 * 1024);
    let body =
        format!("{{\"raw_alert_content\": {{\"title\": \"big\", \"padding\": \"{padding}\"}}}}")
            .into_bytes();
    let answer = send_oversized(
        &app.address,
        "/app/api/v1/investigation/create",
        &app.member_key,
        body.clone(),
    )
    .await;
    assert_error(&answer, 413, "payload_too_large");
    let custom = send_oversized(
        &app.address,
        "/app/api/v1/investigation/create/custom",
        &app.member_key,
        body,
    )
    .await;
    assert_error(&custom, 413, "payload_too_large");
    let everything =
        "/app/api/v1/investigation?investigation_state=not_asked&investigation_state=success";
    assert_eq!(
        app.get(everything, &app.reader_key).await.json["count"],
        0,
        "nothing was stored"
    );
}

async fn unknown_routes_and_methods_answer_json(app: TestApp) {
    assert_error(
        &app.get("/no/such/path", &app.admin_key).await,
        404,
        "not_found",
    );
    assert_error(
        &app.raw("GET", "/app/api/v1/nothing-here", None, None, None)
            .await,
        404,
        "not_found",
    );
    let answer = app
        .raw(
            "DELETE",
            "/app/api/v1/investigation",
            Some(&app.admin_key),
            None,
            None,
        )
        .await;
    assert_error(&answer, 405, "method_not_allowed");
    assert!(
        answer.headers.get("x-request-id").is_some(),
        "every answer carries a request id"
    );
}

async fn the_schema_is_openapi_generated_from_the_handlers(app: TestApp) {
    let answer = app.get("/app/api/v1/schema", &app.admin_key).await;
    assert_eq!(answer.status, 200);
    let document = &answer.json;
    assert!(
        document["openapi"].as_str().unwrap().starts_with("3."),
        "OpenAPI 3"
    );
    assert_eq!(document["info"]["version"], "0.1.0");
    let paths = document["paths"].as_object().unwrap();
    for (path, method) in [
        ("/app/api/v1/investigation", "get"),
        ("/app/api/v1/investigation/create", "post"),
        ("/app/api/v1/investigation/create/custom", "post"),
        ("/app/api/v1/investigation/{investigation_id}", "get"),
    ] {
        assert!(
            paths.get(path).and_then(|item| item.get(method)).is_some(),
            "{method} {path} is described"
        );
    }
    for schema in [
        "Investigation",
        "InvestigationListItem",
        "Alert",
        "AlertListItem",
        "InvestigationFeedback",
        "TenantUnion",
        "User",
        "ErrorBody",
    ] {
        assert!(
            document["components"]["schemas"].get(schema).is_some(),
            "schema {schema}"
        );
    }
    let outcome =
        &document["components"]["schemas"]["Investigation"]["properties"]["outcome"]["enum"];
    assert!(
        outcome
            .as_array()
            .unwrap()
            .contains(&json!("COMPLETED_FALSE_ALERT")),
        "enums come from the domain: {outcome}"
    );
    let page = app
        .raw("GET", "/app/api/v1/schema/docs/", None, None, None)
        .await;
    assert_eq!(page.status, 200);
    assert!(page.text.contains("swagger"), "a browsable page");
    assert!(
        !page.text.contains("cdn") && !page.text.contains("unpkg"),
        "served locally, no CDN"
    );
}

async fn health_readiness_and_metrics_answer(app: TestApp) {
    assert_eq!(
        app.raw("GET", "/healthz", None, None, None).await.status,
        200
    );
    let ready = app.raw("GET", "/readyz", None, None, None).await;
    assert_eq!(ready.status, 200, "{}", ready.text);
    assert_eq!(ready.json["status"], "ready");
    app.get("/app/api/v1/investigation", &app.reader_key).await;
    let metrics = app.raw("GET", "/metrics", None, None, None).await;
    assert_eq!(metrics.status, 200);
    assert!(metrics.text.contains("sleuth_http_requests_total{route=\"/app/api/v1/investigation\",method=\"GET\",status=\"200\"}"), "{}", metrics.text);
    assert!(
        metrics
            .text
            .contains("sleuth_http_request_duration_seconds_bucket")
    );
    assert!(metrics.text.contains("sleuth_jobs_pending"));
}

async fn tenant_unions_are_managed_by_admins(app: TestApp) {
    let created = app.post("/app/api/v1/tenant-unions", &app.admin_key, &json!({"display_name": "Acme", "lookup_dict": {"tenant_ids": ["acme-1"], "tenant_integration_keys": ["acme-int"]}})).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let id = created.json["id"].as_i64().unwrap();
    assert_eq!(
        created.json["last_modified_by"]["email"],
        "admin@example.com"
    );
    assert_error(
        &app.post(
            "/app/api/v1/tenant-unions",
            &app.admin_key,
            &json!({"display_name": "Acme"}),
        )
        .await,
        400,
        "bad_request",
    );
    for bad in [
        json!({}),
        json!({"display_name": ""}),
        json!({"display_name": "x".repeat(151)}),
        json!({"display_name": "ok", "lookup_dict": {"tenant_ids": "acme"}}),
        json!({"display_name": "ok", "extra": 1}),
    ] {
        assert_error(
            &app.post("/app/api/v1/tenant-unions", &app.admin_key, &bad)
                .await,
            400,
            "bad_request",
        );
    }
    let renamed = app
        .patch(
            &format!("/app/api/v1/tenant-unions/{id}"),
            &app.admin_key,
            &json!({"display_name": "Acme EU"}),
        )
        .await;
    assert_eq!(renamed.json["display_name"], "Acme EU");
    assert_eq!(
        renamed.json["lookup_dict"]["tenant_ids"],
        json!(["acme-1"]),
        "an absent field stays"
    );
    assert_error(
        &app.patch(
            &format!("/app/api/v1/tenant-unions/{id}"),
            &app.admin_key,
            &json!({}),
        )
        .await,
        400,
        "bad_request",
    );
    assert_error(
        &app.get("/app/api/v1/tenant-unions/999", &app.reader_key)
            .await,
        404,
        "not_found",
    );
    assert_error(
        &app.get("/app/api/v1/tenant-unions/abc", &app.reader_key)
            .await,
        404,
        "not_found",
    );
    let listed = app.get("/app/api/v1/tenant-unions", &app.reader_key).await;
    assert_eq!(
        listed.json.as_array().unwrap().len(),
        2,
        "Default and Acme EU"
    );
    // An alert arriving through a listed integration joins the union by itself.
    let answer = app
        .post(
            "/app/api/v1/investigation/create/custom?tenant_integration_key=acme-int",
            &app.member_key,
            &json!({"title": "t"}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let id = answer.json["investigation_id"].as_i64().unwrap();
    let read = app
        .get(&format!("/app/api/v1/investigation/{id}"), &app.reader_key)
        .await;
    assert_eq!(
        read.json["alert"]["tenant_union"]["display_name"],
        "Acme EU"
    );
    assert_eq!(read.json["alert"]["tenant_integration_key"], "acme-int");
}

#[tokio::test]
async fn api_calls_wait_with_503_until_the_database_is_ready() {
    let state = sleuth_server::AppState::new(
        sleuth_jobs::Settings::default(),
        sleuth_engine::Context::empty(),
    );
    let (address, _shutdown) = crate::harness::serve(state).await;
    let answer: Answer = request(
        &address,
        "GET",
        "/app/api/v1/investigation",
        Some("any"),
        None,
        None,
    )
    .await;
    assert_error(&answer, 503, "not_ready");
    assert_eq!(
        answer
            .headers
            .get("retry-after")
            .and_then(|value| value.to_str().ok()),
        Some("5")
    );
    let ready = request(&address, "GET", "/readyz", None, None, None).await;
    assert_eq!(ready.status, 503);
    assert_eq!(
        request(&address, "GET", "/healthz", None, None, None)
            .await
            .status,
        200,
        "alive while not ready"
    );
    let _ = Backend::Sqlite;
}
