//! The audit log over HTTP: every successful write is recorded under the caller who made it
//! (reads and refused writes are not), the list filters, the export chains, and only
//! admins see any of it.

use serde_json::{Value, json};
use sleuth_store::AuditVerdict;

use crate::harness::{TestApp, assert_error};
use crate::on_both_backends;

on_both_backends!(
    writes_are_recorded_with_their_actor_and_reads_are_not,
    the_list_filters_and_validates,
    the_export_is_the_whole_chain_as_json_lines,
    only_admins_read_the_audit_log,
    creates_are_audited_with_the_investigation_they_answered,
);

const LOG: &str = "/app/api/v1/audit-log";
const EXPORT: &str = "/app/api/v1/audit-log/export";

async fn entries(app: &TestApp, query: &str) -> Value {
    let answer = app.get(&format!("{LOG}{query}"), &app.admin_key).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.json
}

async fn count(app: &TestApp) -> i64 {
    entries(app, "").await["count"].as_i64().unwrap()
}

/// Some writes by each role, some refused, some reads.
async fn activity(app: &TestApp) -> (i64, i64) {
    let created = app
        .post(
            "/app/api/v1/context-memory/create",
            &app.member_key,
            &json!({"text": "198.51.100.9 is the VPN egress"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let item_id = created.json["item_id"].as_i64().unwrap();
    let updated = app
        .raw(
            "PUT",
            &format!("/app/api/v1/context-memory/update/{item_id}"),
            Some(&app.admin_key),
            Some("application/json"),
            Some(br#"{"text": "198.51.100.9 is the Frankfurt VPN egress"}"#.to_vec()),
        )
        .await;
    assert_eq!(updated.status, 200, "{}", updated.text);
    let union = app
        .post(
            "/app/api/v1/tenant-unions",
            &app.admin_key,
            &json!({"display_name": "Acme"}),
        )
        .await;
    assert_eq!(union.status, 201);
    let investigation_id = app
        .create(&json!({"title": "Audited", "id": "audit-1"}))
        .await;
    // Refused writes leave no entry: wrong role, bad input, unknown id.
    assert_eq!(
        app.post(
            "/app/api/v1/context-memory/create",
            &app.reader_key,
            &json!({"text": "x"})
        )
        .await
        .status,
        403
    );
    assert_eq!(
        app.post(
            "/app/api/v1/context-memory/create",
            &app.member_key,
            &json!({})
        )
        .await
        .status,
        400
    );
    assert_eq!(
        app.raw(
            "DELETE",
            "/app/api/v1/context-memory/delete/424242",
            Some(&app.member_key),
            None,
            None
        )
        .await
        .status,
        404
    );
    (item_id, investigation_id)
}

async fn writes_are_recorded_with_their_actor_and_reads_are_not(app: TestApp) {
    assert_eq!(count(&app).await, 0);
    let (item_id, _) = activity(&app).await;
    let page = entries(&app, "").await;
    assert_eq!(page["count"], 4, "{page}");
    let results = page["results"].as_array().unwrap();
    // Newest first.
    let seqs: Vec<i64> = results
        .iter()
        .map(|entry| entry["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [4, 3, 2, 1]);
    let oldest_first: Vec<&Value> = results.iter().rev().collect();

    let created = oldest_first[0];
    let mut keys: Vec<&str> = created
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "action",
            "actor_email",
            "actor_user_id",
            "at",
            "detail",
            "hash",
            "prev_hash",
            "request_id",
            "resource_id",
            "resource_type",
            "seq"
        ]
    );
    assert_eq!(created["action"], "POST /app/api/v1/context-memory/create");
    assert_eq!(created["actor_email"], "member@example.com");
    assert!(created["actor_user_id"].is_i64());
    assert_eq!(created["resource_type"], "context-memory");
    assert_eq!(
        created["resource_id"],
        item_id.to_string(),
        "the created id"
    );
    assert_eq!(created["detail"]["status"], 201);
    assert_eq!(created["detail"]["method"], "POST");
    assert!(created["detail"]["api_key_id"].is_i64());
    assert!(
        created["request_id"]
            .as_str()
            .is_some_and(|id| id.len() >= 32)
    );
    assert_eq!(created["prev_hash"], "0".repeat(64));
    assert!(
        !created.to_string().contains("VPN egress"),
        "bodies are not recorded"
    );

    let updated = oldest_first[1];
    assert_eq!(
        updated["action"],
        "PUT /app/api/v1/context-memory/update/{item_id}"
    );
    assert_eq!(updated["actor_email"], "admin@example.com");
    assert_eq!(
        updated["resource_id"],
        item_id.to_string(),
        "the id in the path"
    );
    assert_eq!(updated["prev_hash"], created["hash"]);

    assert_eq!(oldest_first[2]["action"], "POST /app/api/v1/tenant-unions");
    assert_eq!(oldest_first[2]["resource_type"], "tenant-unions");
    assert_eq!(
        oldest_first[3]["action"],
        "POST /app/api/v1/investigation/create"
    );
    assert_eq!(oldest_first[3]["actor_email"], "member@example.com");
    assert_eq!(oldest_first[3]["resource_type"], "investigation");

    // Reads of every kind leave the log as it was.
    for path in [
        "/app/api/v1/context-memory/list",
        "/app/api/v1/investigation",
        "/app/api/v1/tenant-unions",
        LOG,
        EXPORT,
        "/app/api/v1/system-events/list",
        "/healthz",
    ] {
        let _ = app.get(path, &app.admin_key).await;
        let _ = app.get(path, &app.reader_key).await;
    }
    let _ = app
        .raw(
            "HEAD",
            "/app/api/v1/investigation",
            Some(&app.admin_key),
            None,
            None,
        )
        .await;
    assert_eq!(count(&app).await, 4);
    assert!(matches!(
        app.store.verify_audit_chain().await.unwrap(),
        AuditVerdict::Intact { count: 4, .. }
    ));
}

async fn the_list_filters_and_validates(app: TestApp) {
    activity(&app).await;
    let member_id = entries(&app, "?actor=member@example.com").await["results"][0]["actor_user_id"]
        .as_i64()
        .unwrap();
    assert_eq!(entries(&app, "?actor=member@example.com").await["count"], 2);
    assert_eq!(entries(&app, "?actor=MEMBER@example.com").await["count"], 2);
    assert_eq!(
        entries(&app, &format!("?actor={member_id}")).await["count"],
        2
    );
    assert_eq!(entries(&app, "?actor=nobody@example.com").await["count"], 0);
    assert_eq!(
        entries(&app, "?action=POST%20/app/api/v1/tenant-unions").await["count"],
        1
    );
    assert_eq!(
        entries(
            &app,
            "?action=POST%20/app/api/v1/tenant-unions&action=POST%20/app/api/v1/investigation/create"
        )
        .await["count"],
        2
    );
    assert_eq!(
        entries(&app, "?resource_type=context-memory").await["count"],
        2
    );
    assert_eq!(
        entries(
            &app,
            "?resource_type=context-memory&actor=admin@example.com"
        )
        .await["count"],
        1
    );
    assert_eq!(
        entries(&app, "?from=2000-01-01&until=2999-01-01").await["count"],
        4
    );
    assert_eq!(entries(&app, "?from=2999-01-01").await["count"], 0);
    let page = entries(&app, "?limit=2&offset=1").await;
    assert_eq!(page["count"], 4);
    let seqs: Vec<i64> = page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, [3, 2]);
    let long_actor = format!("?actor={}", "a".repeat(255));
    for bad in [
        "?limit=0",
        "?limit=x",
        "?offset=-1",
        "?from=soon",
        "?until=2026-02-30",
        "?from=2026-03-02&until=2026-03-01",
        long_actor.as_str(),
    ] {
        let answer = app.get(&format!("{LOG}{bad}"), &app.admin_key).await;
        assert_error(&answer, 400, "bad_request");
    }
}

async fn the_export_is_the_whole_chain_as_json_lines(app: TestApp) {
    let empty = app.get(EXPORT, &app.admin_key).await;
    assert_eq!(empty.status, 200);
    assert!(empty.text.is_empty());
    activity(&app).await;
    let export = app.get(EXPORT, &app.admin_key).await;
    assert_eq!(export.status, 200, "{}", export.text);
    assert_eq!(
        export.headers["content-type"].to_str().unwrap(),
        "application/x-ndjson"
    );
    let lines: Vec<Value> = export
        .text
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    let mut previous = "0".repeat(64);
    for (index, line) in lines.iter().enumerate() {
        assert_eq!(line["seq"], index as i64 + 1);
        assert_eq!(line["prev_hash"], previous);
        previous = line["hash"].as_str().unwrap().to_string();
    }
    // The same entries the list shows.
    let listed = entries(&app, "").await;
    let mut newest_first = lines.clone();
    newest_first.reverse();
    assert_eq!(listed["results"], json!(newest_first));
}

async fn only_admins_read_the_audit_log(app: TestApp) {
    for path in [LOG, EXPORT] {
        assert_error(&app.get(path, &app.member_key).await, 403, "access_denied");
        assert_error(&app.get(path, &app.reader_key).await, 403, "access_denied");
        assert_error(
            &app.raw("GET", path, None, None, None).await,
            401,
            "unauthorized",
        );
    }
    assert_error(
        &app.raw("DELETE", LOG, Some(&app.admin_key), None, None)
            .await,
        405,
        "method_not_allowed",
    );
    assert_eq!(count(&app).await, 0);
}

/// Creates write their audit entry in their own transaction (not through the layer), so
/// this checks what the layer would otherwise guarantee: one entry per successful create,
/// none for a refused one, in the chain, plus the investigation each create answered with.
async fn creates_are_audited_with_the_investigation_they_answered(app: TestApp) {
    let alert = json!({"title": "Audited create", "id": "audit-create-1"});
    let first = app.create(&alert).await;
    let again = app.create(&alert).await;
    assert_eq!(
        again, first,
        "the same alert again answers the same investigation"
    );
    let custom = app
        .post(
            "/app/api/v1/investigation/create/custom?force_reinvestigation=true",
            &app.member_key,
            &alert,
        )
        .await;
    assert_eq!(custom.status, 200, "{}", custom.text);
    let forced = custom.json["investigation_id"].as_i64().unwrap();
    assert_ne!(forced, first);
    let refused = app
        .post(
            "/app/api/v1/investigation/create",
            &app.member_key,
            &json!({"raw_alert_content": "not an object"}),
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text);

    let page = entries(&app, "").await;
    assert_eq!(page["count"], 3, "one entry per successful create: {page}");
    let oldest_first: Vec<&Value> = page["results"].as_array().unwrap().iter().rev().collect();
    let expected = [
        ("POST /app/api/v1/investigation/create", first, "new"),
        ("POST /app/api/v1/investigation/create", first, "existing"),
        (
            "POST /app/api/v1/investigation/create/custom",
            forced,
            "new",
        ),
    ];
    for (entry, (action, investigation_id, answered)) in oldest_first.iter().zip(expected) {
        assert_eq!(entry["action"], action, "{entry}");
        assert_eq!(entry["actor_email"], "member@example.com");
        assert_eq!(entry["resource_type"], "investigation");
        assert_eq!(entry["resource_id"], investigation_id.to_string());
        assert_eq!(entry["detail"]["investigation"], answered);
        assert_eq!(entry["detail"]["status"], 200);
        assert!(entry["detail"]["api_key_id"].is_i64());
    }
    assert_eq!(oldest_first[1]["prev_hash"], oldest_first[0]["hash"]);
    assert_eq!(oldest_first[2]["prev_hash"], oldest_first[1]["hash"]);
    assert!(
        !page.to_string().contains("Audited create"),
        "alert bodies are not recorded"
    );
    assert!(matches!(
        app.store.verify_audit_chain().await.unwrap(),
        AuditVerdict::Intact { count: 3, .. }
    ));
}
