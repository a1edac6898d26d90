//! What a hostile week found (issue 29): NUL characters, unbounded error messages, bodies
//! of the wrong shape, keys that outlive a deactivation, error answers that are not JSON.

use serde_json::{Value, json};

use crate::harness::{TestApp, assert_error};
use crate::on_both_backends;

on_both_backends!(
    a_nul_in_a_list_filter_is_a_bad_request,
    a_nul_in_a_search_or_another_lists_filter_is_a_bad_request,
    a_nul_in_an_identifier_of_a_create_is_refused_and_creates_nothing,
    a_nul_in_a_path_is_a_bad_request,
    nul_characters_in_alert_content_are_stored_losslessly,
    nul_characters_in_every_string_of_every_vendor_sample_are_stored_losslessly,
    an_error_quotes_only_the_start_of_a_huge_value,
    a_json_array_is_not_a_context_document,
    reactivating_a_user_does_not_revive_their_keys,
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

async fn a_nul_in_an_identifier_of_a_create_is_refused_and_creates_nothing(app: TestApp) {
    let body = json!({
        "raw_alert_content": {"title": "integration key with a NUL"},
        "tenant_integration_key": "edr\u{0}-east",
    });
    let answer = app
        .post("/app/api/v1/investigation/create", &app.member_key, &body)
        .await;
    assert_error(&answer, 400, "bad_request");
    assert!(answer.json["errors"]["tenant_integration_key"].is_array());
    let answer = app
        .post(
            "/app/api/v1/investigation/create/custom?tenant_integration_key=edr%00-east",
            &app.member_key,
            &json!({"title": "integration key with a NUL, custom"}),
        )
        .await;
    assert_error(&answer, 400, "bad_request");
    let every_state = "/app/api/v1/investigation?investigation_state=not_asked\
                       &investigation_state=loading&investigation_state=success\
                       &investigation_state=error";
    let listed = app.get(every_state, &app.reader_key).await;
    assert_eq!(listed.json["count"], 0, "{}", listed.text);
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

/// A member's POST of JSON text exactly as written.
async fn post_text(app: &TestApp, path: &str, text: String) -> crate::harness::Answer {
    app.raw(
        "POST",
        path,
        Some(&app.member_key),
        Some("application/json"),
        Some(text.into_bytes()),
    )
    .await
}

/// The alert as the API shows it: its raw content, from the single read and the list.
async fn raw_content_read_back(app: &TestApp, investigation_id: i64) -> (String, String) {
    let one = app
        .get(
            &format!("/app/api/v1/investigation/{investigation_id}"),
            &app.reader_key,
        )
        .await;
    assert_eq!(one.status, 200, "{}", one.text);
    let listed = app
        .get(
            "/app/api/v1/investigation?investigation_state=not_asked&investigation_state=loading\
             &investigation_state=success&investigation_state=error&limit=1000",
            &app.reader_key,
        )
        .await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let item = listed.json["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["id"] == investigation_id)
        .unwrap_or_else(|| panic!("investigation {investigation_id} is listed"));
    (
        one.json["alert"]["raw_alert_content"]
            .as_str()
            .unwrap()
            .to_string(),
        item["alert"]["raw_alert_content"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

async fn nul_characters_in_alert_content_are_stored_losslessly(app: TestApp) {
    // Written by hand so that the bytes sent are known: NULs in keys, values, entities,
    // the title, a tenant id and deep inside.
    let texts = [
        r#"{"title":"Mimikatz\u0000 on WKS-0231","host":"WKS\u0000-0231","user":"r.patel\u0000","src_ip":"203.0.113.7\u0000","tenant_id":"acme\u0000","nested":{"k\u0000ey":["\u0000",1,{"\u0000":null}]}}"#,
        "{\"title\" : \"spaced \\u0000 out\" ,\n  \"severity\":\"high\\u0000\" }",
    ];
    let mut ids = Vec::new();
    for text in texts {
        let body = format!("{{\"raw_alert_content\": {text}}}");
        let answer = post_text(&app, "/app/api/v1/investigation/create", body).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        ids.push((answer.json["investigation_id"].as_i64().unwrap(), text));
        // Another alert (the same one would answer the investigation above), and the
        // whitespace around it is part of the bytes kept.
        let custom = format!("{} ", text.replacen('{', "{\"via\":\"custom\",", 1));
        let answer = post_text(
            &app,
            "/app/api/v1/investigation/create/custom",
            custom.clone(),
        )
        .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let id = answer.json["investigation_id"].as_i64().unwrap();
        let (one, listed) = raw_content_read_back(&app, id).await;
        assert_eq!(one, custom, "the custom body comes back byte for byte");
        assert_eq!(listed, custom);
    }
    app.drain().await;
    for (id, text) in ids {
        let (one, listed) = raw_content_read_back(&app, id).await;
        assert_eq!(one, text, "raw_alert_content comes back byte for byte");
        assert_eq!(listed, text);
        let read = app
            .get(&format!("/app/api/v1/investigation/{id}"), &app.reader_key)
            .await;
        assert_eq!(read.json["status"], "success", "{}", read.text);
    }
}

/// Every string (and every key) of a JSON value with a NUL put in its middle.
fn with_nul_everywhere(value: &Value) -> Value {
    match value {
        Value::String(text) => {
            let middle = text.char_indices().nth(text.chars().count() / 2);
            let at = middle.map_or(text.len(), |(index, _)| index);
            Value::String(format!("{}\u{0}{}", &text[..at], &text[at..]))
        }
        Value::Array(items) => Value::Array(items.iter().map(with_nul_everywhere).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, field)| (format!("{key}\u{0}"), with_nul_everywhere(field)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Every string's value only (keys kept, so each vendor's parser still recognises it).
fn with_nul_in_values(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, field)| (key.clone(), with_nul_in_values(field)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(with_nul_in_values).collect()),
        other => with_nul_everywhere(other),
    }
}

async fn nul_characters_in_every_string_of_every_vendor_sample_are_stored_losslessly(app: TestApp) {
    let directory = concat!(env!("CARGO_MANIFEST_DIR"), "/../parsers/samples");
    let mut paths: Vec<_> = std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    assert!(paths.len() >= 20, "the vendor samples are there");
    let mut created = Vec::new();
    for path in paths {
        let sample: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        for alert in [with_nul_in_values(&sample), with_nul_everywhere(&sample)] {
            let text = serde_json::to_string(&alert).unwrap();
            let body = format!("{{\"raw_alert_content\": {text}}}");
            let answer = post_text(&app, "/app/api/v1/investigation/create", body).await;
            assert_eq!(answer.status, 200, "{}: {}", path.display(), answer.text);
            let id = answer.json["investigation_id"].as_i64().unwrap();
            // Both copies may carry the source's own alert id: the second is then the
            // same alert, answered with the first's investigation.
            if !created.iter().any(|(known, _)| *known == id) {
                created.push((id, text));
            }
        }
    }
    app.drain().await;
    for (id, text) in created {
        let (one, listed) = raw_content_read_back(&app, id).await;
        assert_eq!(one, text);
        assert_eq!(listed, text);
    }
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

async fn a_json_array_is_not_a_context_document(app: TestApp) {
    let document = json!({"organization": {"email_domains": ["example.com"]}});
    let put = |body: Vec<u8>| {
        app.raw(
            "PUT",
            "/app/api/v1/context",
            Some(&app.admin_key),
            Some("application/json"),
            Some(body),
        )
    };
    assert_eq!(put(document.to_string().into_bytes()).await.status, 200);
    for body in ["[]", " [ ] ", r#"[["example.com"]]"#] {
        assert_error(&put(body.as_bytes().to_vec()).await, 400, "bad_request");
    }
    let kept = app.get("/app/api/v1/context", &app.admin_key).await;
    assert_eq!(
        kept.json["document"]["organization"]["email_domains"],
        json!(["example.com"]),
        "a refused document changes nothing"
    );
}

async fn new_key(app: &TestApp, user_id: i64, name: &str) -> String {
    let created = app
        .post(
            "/app/api/v1/api-keys",
            &app.admin_key,
            &json!({"user_id": user_id, "name": name}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    created.json["key"].as_str().unwrap().to_string()
}

async fn reactivating_a_user_does_not_revive_their_keys(app: TestApp) {
    let users = app.get("/app/api/v1/users", &app.admin_key).await;
    let member_id = users
        .json
        .as_array()
        .unwrap()
        .iter()
        .find(|user| user["email"] == "member@example.com")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    let bot_key = new_key(&app, member_id, "soc bot").await;
    let path = "/app/api/v1/investigation";
    assert_eq!(app.get(path, &bot_key).await.status, 200);
    let user_path = format!("/app/api/v1/users/{member_id}");
    let deactivated = app
        .patch(&user_path, &app.admin_key, &json!({"is_active": false}))
        .await;
    assert_eq!(deactivated.status, 200, "{}", deactivated.text);
    assert_error(&app.get(path, &bot_key).await, 401, "unauthorized");
    let reactivated = app
        .patch(&user_path, &app.admin_key, &json!({"is_active": true}))
        .await;
    assert_eq!(reactivated.status, 200, "{}", reactivated.text);
    assert_error(&app.get(path, &bot_key).await, 401, "unauthorized");
    assert_error(&app.get(path, &app.member_key).await, 401, "unauthorized");
    let keys = app.get("/app/api/v1/api-keys", &app.admin_key).await;
    for key in keys.json.as_array().unwrap() {
        if key["user"]["id"] == member_id {
            assert!(!key["revoked_at"].is_null(), "{key}");
        }
    }
    let fresh_key = new_key(&app, member_id, "soc bot, again").await;
    assert_eq!(app.get(path, &fresh_key).await.status, 200);
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
