//! The engine behind the API: the formats Sleuth reads, the operator's context over the
//! API and from a watched file, and investigations that change their verdict with it.

use serde_json::{Value, json};

use crate::harness::{Answer, TestApp, assert_error, request};
use crate::on_both_backends;

on_both_backends!(
    schema_keys_list_every_format_with_a_sample,
    the_context_api_is_for_admins_and_refuses_bad_documents_without_changing_anything,
    intel_put_through_the_api_turns_a_suspicion_into_a_confirmed_breach,
    the_context_file_reloads_when_it_changes,
);

/// The alert of a corpus case.
fn corpus_alert(path: &str) -> Value {
    let text = std::fs::read_to_string(format!(
        "{}/../../corpus/alerts/{path}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("corpus case");
    let case: Value = serde_json::from_str(&text).expect("corpus case is JSON");
    case["alert"].clone()
}

async fn put_context(app: &TestApp, key: &str, content_type: &str, body: &str) -> Answer {
    request(
        &app.address,
        "PUT",
        "/app/api/v1/context",
        Some(key),
        Some(content_type),
        Some(body.as_bytes().to_vec()),
    )
    .await
}

const C2_INTEL: &str = r#"
[[intel]]
kind = "ip"
value = "203.0.113.50"
category = "c2"
description = "Cobalt Strike team server"
confidence = 95
"#;

async fn schema_keys_list_every_format_with_a_sample(app: TestApp) {
    let answer = app.get("/app/api/v1/schema-keys", &app.reader_key).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let keys: Vec<&str> = answer
        .json
        .as_array()
        .unwrap()
        .iter()
        .map(|schema| schema["schema_key"].as_str().unwrap())
        .collect();
    for expected in [
        "aws_guardduty_eventbridge",
        "crowdstrike_falcon_alert",
        "microsoft_graph_alert_v2",
        "okta_system_log_event",
        "suricata_eve",
    ] {
        assert!(keys.contains(&expected), "{expected} in {keys:?}");
    }
    assert_eq!(keys.last(), Some(&"generic"));
    assert!(
        answer
            .json
            .as_array()
            .unwrap()
            .iter()
            .all(|schema| schema["sample"].is_object()
                && schema["display_name"]
                    .as_str()
                    .is_some_and(|name| !name.is_empty())),
        "every format has a display name and a sample object"
    );
    assert_error(
        &app.raw("GET", "/app/api/v1/schema-keys", None, None, None)
            .await,
        401,
        "unauthorized",
    );
}

async fn the_context_api_is_for_admins_and_refuses_bad_documents_without_changing_anything(
    app: TestApp,
) {
    assert_error(
        &app.get("/app/api/v1/context", &app.member_key).await,
        403,
        "access_denied",
    );
    assert_error(
        &put_context(&app, &app.member_key, "application/toml", C2_INTEL).await,
        403,
        "access_denied",
    );
    let empty = app.get("/app/api/v1/context", &app.admin_key).await;
    assert_eq!(empty.status, 200, "{}", empty.text);
    assert_eq!(empty.json["updated_at"], Value::Null);

    let stored = put_context(&app, &app.admin_key, "application/toml", C2_INTEL).await;
    assert_eq!(stored.status, 200, "{}", stored.text);
    assert_eq!(stored.json["intel_count"], 1);

    // Each of these is refused with a reason, and the stored document stays as it was.
    for (content_type, body, reason) in [
        ("application/toml", "[[intel]\nvalue = ", "not valid"),
        (
            "application/toml",
            "[organisation]\nname = \"typo\"\n",
            "organisation",
        ),
        (
            "application/toml",
            "[network]\ninternal = [\"10.0.0.300/8\"]\n",
            "10.0.0.300/8",
        ),
        ("application/json", "[1, 2]", "object"),
        ("text/html", "<p>hi</p>", "TOML"),
        (
            "application/toml",
            "[[intel]]\nkind = \"ip\"\nvalue = \"1.2.3\"\n",
            "1.2.3",
        ),
    ] {
        let answer = put_context(&app, &app.admin_key, content_type, body).await;
        assert_error(&answer, 400, "bad_request");
        assert!(answer.text.contains(reason), "{body:?}: {}", answer.text);
    }
    let kept = app.get("/app/api/v1/context", &app.admin_key).await;
    assert_eq!(kept.json["document"]["intel"][0]["value"], "203.0.113.50");
    assert!(kept.json["toml"].as_str().unwrap().contains("203.0.113.50"));
    assert!(kept.json["updated_at"].is_string());

    // JSON works as well as TOML, and replaces the document whole.
    let as_json = json!({"scanners": [{"name": "Nessus", "ips": ["10.9.9.10"]}]}).to_string();
    let replaced = put_context(&app, &app.admin_key, "application/json", &as_json).await;
    assert_eq!(replaced.status, 200, "{}", replaced.text);
    let effective = app
        .get("/app/api/v1/context/effective", &app.admin_key)
        .await;
    assert_eq!(effective.status, 200);
    assert_eq!(
        effective.json["intel_count"], 0,
        "the intel went with the old document"
    );
    assert_eq!(effective.json["document"]["scanners"][0]["name"], "Nessus");
    assert!(effective.json["loaded_at"].is_string());
}

async fn intel_put_through_the_api_turns_a_suspicion_into_a_confirmed_breach(app: TestApp) {
    let alert = corpus_alert("suricata/c2_beacon_to_known_server.json");
    let before = app.create(&alert).await;
    app.drain().await;
    let first = app
        .get(
            &format!("/app/api/v1/investigation/{before}"),
            &app.reader_key,
        )
        .await;
    assert_eq!(first.json["status"], "success", "{}", first.text);
    assert_eq!(
        first.json["outcome"], "COMPLETED_BREACHED_SUSPICIOUS",
        "a signature alone is a suspicion"
    );

    assert_eq!(
        put_context(&app, &app.admin_key, "application/toml", C2_INTEL)
            .await
            .status,
        200
    );
    let again = app
        .post(
            "/app/api/v1/investigation/create",
            &app.member_key,
            &json!({"raw_alert_content": alert, "force_reinvestigation": true}),
        )
        .await;
    let after = again.json["investigation_id"].as_i64().unwrap();
    assert_ne!(after, before);
    app.drain().await;
    let second = app
        .get(
            &format!("/app/api/v1/investigation/{after}"),
            &app.reader_key,
        )
        .await;
    assert_eq!(
        second.json["outcome"], "COMPLETED_BREACHED_CONFIRMED",
        "{}",
        second.text
    );
    assert_eq!(second.json["mitre_tactic"], "Command and Control");
    let findings = second.json["findings"].as_array().unwrap();
    assert!(
        findings.iter().any(|finding| finding["evidences"]
            .as_array()
            .unwrap()
            .iter()
            .any(|evidence| evidence["evidence_type"] == "threat_intel_match"
                && evidence["data"]["indicator"] == "203.0.113.50")),
        "the intel match is cited as evidence: {findings:?}"
    );
    assert_eq!(second.json["alert"]["schema_key"], "suricata_eve");
}

async fn the_context_file_reloads_when_it_changes(app: TestApp) {
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("context.toml");
    std::fs::write(&file, "[organization]\nname = \"Before\"\n").unwrap();
    // A second app on the same store, configured with the watched file.
    let mut settings = app.state.settings().clone();
    settings.engine.context_file = Some(file.clone());
    settings.engine.context_reload_seconds = 1;
    let state = sleuth_server::AppState::new(settings, sleuth_engine::Context::empty());
    sleuth_jobs::context_source::reload(&state, Some(&app.store))
        .await
        .unwrap();
    assert_eq!(
        state.context_status().document.organization.name.as_deref(),
        Some("Before")
    );
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let watcher = tokio::spawn(sleuth_jobs::context_source::watch(
        state.runtime().clone(),
        Some(app.store.clone()),
        stopped,
    ));

    // A broken edit is refused and the context in force stays.
    std::fs::write(&file, "[organization\nname = ").unwrap();
    wait_until(|| state.context_status().last_error.is_some()).await;
    assert_eq!(
        state.context_status().document.organization.name.as_deref(),
        Some("Before")
    );

    // A good edit takes over, with no restart.
    std::fs::write(&file, "[organization]\nname = \"After\"\n").unwrap();
    wait_until(|| state.context_status().document.organization.name.as_deref() == Some("After"))
        .await;
    assert_eq!(state.context_status().last_error, None);
    let _ = stop.send(true);
    watcher.await.unwrap();
}

/// Waits for a condition the watcher brings about on its own schedule (it checks every
/// second), failing after ten seconds.
async fn wait_until(condition: impl Fn() -> bool) {
    for _ in 0..100 {
        if condition() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the condition did not hold within ten seconds");
}
