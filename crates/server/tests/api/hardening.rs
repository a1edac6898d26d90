//! What a hostile week found (issue 29): NUL characters, unbounded error messages, bodies
//! of the wrong shape, keys that outlive a deactivation, error answers that are not JSON.

use serde_json::json;

use crate::harness::{TestApp, assert_error};
use crate::on_both_backends;

on_both_backends!(
    a_nul_in_a_list_filter_is_a_bad_request,
    a_nul_in_a_search_or_another_lists_filter_is_a_bad_request,
    a_nul_in_a_path_is_a_bad_request,
    an_error_quotes_only_the_start_of_a_huge_value,
    every_refusal_before_a_handler_answers_json,
);

const NUL: &str = "%00";

async fn a_nul_in_a_list_filter_is_a_bad_request(app: TestApp) {
    for filter in [
        "alert_tenants",
        "alert_types",
        "direct_source_labels",
        "insight_tag_names",
        "tenant_id",
        "tenant_integration_key",
        "search",
    ] {
        for value in [NUL.to_string(), format!("acme{NUL}corp")] {
            let path = format!("/app/api/v1/investigation?limit=5&{filter}={value}");
            let answer = app.get(&path, &app.reader_key).await;
            assert_error(&answer, 400, "bad_request");
            assert!(
                answer.json["errors"][filter].is_array(),
                "{path} names its parameter: {}",
                answer.text
            );
        }
    }
}

async fn a_nul_in_a_search_or_another_lists_filter_is_a_bad_request(app: TestApp) {
    for path in [
        "/app/api/v1/context-memory/list?search=scanner%00",
        "/app/api/v1/context-memory/list?tenant_id=%00",
        "/app/api/v1/system-events/list?search=%00",
        "/app/api/v1/system-events/list?trigger_name=a%00",
        "/app/api/v1/audit-log?actor=%00",
        "/app/api/v1/audit-log?action=POST%00",
        "/app/api/v1/audit-log?resource_type=%00user",
        "/app/api/v1/custom-strategies?is_archived=%00",
        "/app/api/v1/response-actions/1/runs?limit=%00",
    ] {
        assert_error(&app.get(path, &app.admin_key).await, 400, "bad_request");
    }
}

async fn a_nul_in_a_path_is_a_bad_request(app: TestApp) {
    for path in [
        "/app/api/v1/investigation/1%00",
        "/app/api/v1/investigation/%00/cancel",
        "/app/api/v1/tenant-unions/1%00",
    ] {
        assert_error(&app.get(path, &app.admin_key).await, 400, "bad_request");
    }
    let answer = app
        .raw(
            "DELETE",
            "/app/api/v1/response-actions/secrets/api%00key",
            Some(&app.admin_key),
            None,
            None,
        )
        .await;
    assert_error(&answer, 400, "bad_request");
}

async fn an_error_quotes_only_the_start_of_a_huge_value(app: TestApp) {
    let huge = "A".repeat(9 * 1024 * 1024);
    for body in [
        json!({"raw_alert_content": {"title": "x"}, "schema_key": huge}),
        json!({"raw_alert_content": {"title": "x"}, "tenant_union_id": huge}),
        json!({"raw_alert_content": {"title": "x"}, "force_reinvestigation": huge}),
    ] {
        let answer = app
            .post("/app/api/v1/investigation/create", &app.member_key, &body)
            .await;
        assert_error(&answer, 400, "bad_request");
        assert!(
            answer.text.len() < 8192,
            "a {} byte answer",
            answer.text.len()
        );
        assert!(answer.json["error_msg"].as_str().unwrap().contains("AAAA"));
    }
    let answer = app
        .post(
            "/app/api/v1/context-memory/create",
            &app.member_key,
            &json!({"text": huge}),
        )
        .await;
    assert_error(&answer, 400, "bad_request");
    assert!(
        answer.text.len() < 8192,
        "a {} byte answer",
        answer.text.len()
    );
    let long_filter = format!(
        "/app/api/v1/investigation?priority_statuses={}",
        "u".repeat(12_000)
    );
    let answer = app.get(&long_filter, &app.reader_key).await;
    assert_error(&answer, 400, "bad_request");
    assert!(
        answer.text.len() < 8192,
        "a {} byte answer",
        answer.text.len()
    );
}

async fn every_refusal_before_a_handler_answers_json(app: TestApp) {
    for path in [
        "/app/api/v1/investigation/%ff",
        "/app/api/v1/custom-strategies/%C3%28/versions",
        "/app/api/v1/nothing-here",
    ] {
        assert_error(&app.get(path, &app.reader_key).await, 404, "not_found");
    }
    let answer = app.raw("PUT", "/healthz", None, None, None).await;
    assert_error(&answer, 405, "method_not_allowed");
    let long = format!("/app/api/v1/investigation?search={}", "a".repeat(20_000));
    assert_error(&app.get(&long, &app.reader_key).await, 414, "uri_too_long");
    let answer = app
        .raw(
            "GET",
            "/app/api/v1/investigation",
            Some(&format!("{} {}", app.reader_key, "x".repeat(40_000))),
            None,
            None,
        )
        .await;
    assert_error(&answer, 431, "headers_too_large");
}
