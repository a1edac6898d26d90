//! Context memory over HTTP: create, update, delete, list, every error, and the point of
//! it all: an investigation of an alert naming a remembered entity cites the item, and
//! never another tenant union's.

use serde_json::{Value, json};

use crate::harness::{Answer, TestApp, assert_error};
use crate::on_both_backends;

on_both_backends!(
    an_investigation_cites_memory_of_its_scope_and_not_another_unions,
    items_are_created_updated_listed_and_deleted,
    creating_validates_every_field,
    updating_and_deleting_need_a_member_and_a_known_item,
    the_list_filters_by_scope_and_words_and_pages,
    a_member_changes_only_their_own_items_and_an_admin_any,
);

const CREATE: &str = "/app/api/v1/context-memory/create";
const LIST: &str = "/app/api/v1/context-memory/list";

fn update_path(item_id: impl std::fmt::Display) -> String {
    format!("/app/api/v1/context-memory/update/{item_id}")
}

fn delete_path(item_id: impl std::fmt::Display) -> String {
    format!("/app/api/v1/context-memory/delete/{item_id}")
}

async fn put(app: &TestApp, path: &str, key: &str, body: &Value) -> Answer {
    app.raw(
        "PUT",
        path,
        Some(key),
        Some("application/json"),
        Some(body.to_string().into_bytes()),
    )
    .await
}

async fn delete(app: &TestApp, path: &str, key: &str) -> Answer {
    app.raw("DELETE", path, Some(key), None, None).await
}

async fn create(app: &TestApp, body: &Value) -> i64 {
    let answer = app.post(CREATE, &app.member_key, body).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_eq!(
        answer.json.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["item_id"]
    );
    answer.json["item_id"].as_i64().unwrap()
}

/// Creates a tenant union `name` with the admin key; answers its id.
pub(crate) async fn tenant_union(app: &TestApp, name: &str) -> i64 {
    let answer = app
        .post(
            "/app/api/v1/tenant-unions",
            &app.admin_key,
            &json!({"display_name": name}),
        )
        .await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    answer.json["id"].as_i64().unwrap()
}

async fn list(app: &TestApp, query: &str) -> Value {
    let answer = app.get(&format!("{LIST}{query}"), &app.reader_key).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.json
}

fn ids(page: &Value) -> Vec<i64> {
    page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["item_id"].as_i64().unwrap())
        .collect()
}

/// The evidence of every finding, as `(evidence_type, data)`.
fn evidences(investigation: &Value) -> Vec<(String, Value)> {
    investigation["findings"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|finding| finding["evidences"].as_array().unwrap().clone())
        .map(|evidence| {
            (
                evidence["evidence_type"].as_str().unwrap().to_string(),
                evidence["data"].clone(),
            )
        })
        .collect()
}

async fn an_investigation_cites_memory_of_its_scope_and_not_another_unions(app: TestApp) {
    let other_union = tenant_union(&app, "Globex").await;
    let ours = create(
        &app,
        &json!({
            "text": "198.51.100.9 is the Frankfurt VPN egress",
            "hints": {"entity": {"type": "ip", "value": "198.51.100.9"}, "verdict": "benign", "note": "all staff VPN"}
        }),
    )
    .await;
    let theirs = create(
        &app,
        &json!({
            "text": "198.51.100.9 is an attacker's relay",
            "tenant_union_id": other_union,
            "hints": [{"entity": {"type": "ip", "value": "198.51.100.9"}, "verdict": "malicious"}]
        }),
    )
    .await;
    let unrelated = create(&app, &json!({"text": "203.0.113.77 is the office printer"})).await;

    let alert = json!({
        "title": "Impossible travel sign-in from 198.51.100.9",
        "id": "memory-1",
        "source_ip": "198.51.100.9",
    });
    let investigation_id = app.create(&alert).await;
    assert_eq!(app.drain().await, 1);
    let investigation = app
        .get(
            &format!("/app/api/v1/investigation/{investigation_id}"),
            &app.reader_key,
        )
        .await
        .json;
    assert_eq!(investigation["status"], "success", "{investigation}");
    let cited: Vec<Value> = evidences(&investigation)
        .into_iter()
        .filter(|(evidence_type, _)| evidence_type == "context_memory")
        .map(|(_, data)| data)
        .collect();
    assert_eq!(cited.len(), 1, "only our item is cited: {cited:?}");
    assert_eq!(cited[0]["item_id"], ours);
    assert_eq!(cited[0]["verdict"], "benign");
    assert_eq!(cited[0]["entities"], json!(["198.51.100.9"]));
    assert!(
        cited[0]["text"]
            .as_str()
            .unwrap()
            .contains("Frankfurt VPN egress"),
        "{}",
        cited[0]
    );
    let text = investigation.to_string();
    assert!(
        !text.contains("attacker's relay"),
        "item {theirs} is Globex's"
    );
    assert!(
        !text.contains("office printer"),
        "item {unrelated} names another IP"
    );

    // The same alert in the other union cites that union's item, and the global one.
    let elsewhere = app
        .post(
            "/app/api/v1/investigation/create",
            &app.member_key,
            &json!({"raw_alert_content": alert, "tenant_union_id": other_union}),
        )
        .await;
    assert_eq!(elsewhere.status, 200, "{}", elsewhere.text);
    let elsewhere_id = elsewhere.json["investigation_id"].as_i64().unwrap();
    assert_eq!(app.drain().await, 1);
    let investigation = app
        .get(
            &format!("/app/api/v1/investigation/{elsewhere_id}"),
            &app.reader_key,
        )
        .await
        .json;
    let mut cited: Vec<i64> = evidences(&investigation)
        .into_iter()
        .filter(|(evidence_type, _)| evidence_type == "context_memory")
        .map(|(_, data)| data["item_id"].as_i64().unwrap())
        .collect();
    cited.sort_unstable();
    assert_eq!(cited, [ours, theirs]);
}

async fn items_are_created_updated_listed_and_deleted(app: TestApp) {
    let union = tenant_union(&app, "Acme").await;
    let item_id = create(
        &app,
        &json!({
            "text": "  svc-backup never logs on interactively; CORP\\J.Smith runs it from WKS-0231  ",
            "tenant_union_id": union,
            "tenant_id": "acme-eu",
            "tenant_label": "Acme EU",
        }),
    )
    .await;
    let page = list(&app, "").await;
    assert_eq!(page["count"], 1);
    let item = &page["results"][0];
    let mut keys: Vec<&str> = item
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "created_at",
            "created_by",
            "entities",
            "hints",
            "is_global",
            "item_id",
            "last_modified_by",
            "tenant_id",
            "tenant_label",
            "tenant_union_id",
            "text",
            "updated_at"
        ]
    );
    assert_eq!(
        item["text"], "svc-backup never logs on interactively; CORP\\J.Smith runs it from WKS-0231",
        "trimmed, otherwise as written"
    );
    assert_eq!(
        item["entities"],
        json!([
            {"type": "user", "value": "svc-backup"},
            {"type": "user", "value": "corp\\j.smith"},
            {"type": "host", "value": "wks-0231"},
        ])
    );
    assert_eq!(item["tenant_union_id"], union);
    assert_eq!(item["tenant_id"], "acme-eu");
    assert_eq!(item["tenant_label"], "Acme EU");
    assert_eq!(item["is_global"], false);
    assert_eq!(item["hints"], json!([]));
    assert_eq!(item["created_by"]["email"], "member@example.com");
    assert_eq!(item["last_modified_by"]["email"], "member@example.com");

    // Sending null clears a field; leaving one out keeps it.
    let updated = put(
        &app,
        &update_path(item_id),
        &app.admin_key,
        &json!({
            "tenant_union_id": null,
            "tenant_id": null,
            "hints": [{"entity": {"type": "user", "value": "svc-backup"}, "verdict": "benign"}]
        }),
    )
    .await;
    assert_eq!(updated.status, 200, "{}", updated.text);
    assert_eq!(updated.json["item_id"], item_id);
    assert_eq!(updated.json["is_global"], true);
    assert_eq!(
        updated.json["tenant_label"],
        Value::Null,
        "the label went with its tenant"
    );
    assert_eq!(updated.json["text"], item["text"]);
    assert_eq!(
        updated.json["hints"],
        json!([{"entity": {"type": "user", "value": "svc-backup"}, "verdict": "benign", "note": null}])
    );
    assert_eq!(
        updated.json["entities"],
        json!([
            {"type": "user", "value": "corp\\j.smith"},
            {"type": "host", "value": "wks-0231"},
        ]),
        "a hinted entity is not repeated"
    );
    assert_eq!(updated.json["created_by"]["email"], "member@example.com");
    assert_eq!(
        updated.json["last_modified_by"]["email"],
        "admin@example.com"
    );
    assert_eq!(updated.json["created_at"], item["created_at"]);

    let retexted = put(
        &app,
        &update_path(item_id),
        &app.member_key,
        &json!({"text": "198.51.100.9 is the VPN"}),
    )
    .await;
    assert_eq!(retexted.status, 200, "{}", retexted.text);
    assert_eq!(
        retexted.json["entities"],
        json!([{"type": "ip", "value": "198.51.100.9"}])
    );
    assert_eq!(retexted.json["hints"], updated.json["hints"], "hints kept");

    let deleted = delete(&app, &delete_path(item_id), &app.member_key).await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    assert!(deleted.text.is_empty(), "no body: {}", deleted.text);
    assert_eq!(list(&app, "").await["count"], 0);
    assert_error(
        &delete(&app, &delete_path(item_id), &app.member_key).await,
        404,
        "not_found",
    );
}

async fn creating_validates_every_field(app: TestApp) {
    // Roles and authentication first: a reader's malformed request is still a 403.
    assert_error(
        &app.post(CREATE, &app.reader_key, &json!({"text": "x"}))
            .await,
        403,
        "access_denied",
    );
    assert_error(
        &app.raw(
            "POST",
            CREATE,
            Some(&app.reader_key),
            Some("application/json"),
            Some(b"{".to_vec()),
        )
        .await,
        403,
        "access_denied",
    );
    assert_error(
        &app.raw(
            "POST",
            CREATE,
            None,
            Some("application/json"),
            Some(b"{}".to_vec()),
        )
        .await,
        401,
        "unauthorized",
    );
    assert_error(
        &app.raw(
            "POST",
            CREATE,
            Some("sleuth_nope"),
            Some("application/json"),
            Some(b"{}".to_vec()),
        )
        .await,
        401,
        "unauthorized",
    );

    let union = tenant_union(&app, "Acme").await;
    let field_error = |answer: &Answer, field: &str| {
        assert_error(answer, 400, "bad_request");
        assert!(
            answer.json["errors"][field].is_array(),
            "errors name {field}: {}",
            answer.text
        );
    };
    let post = |body: Value| {
        let app = &app;
        async move { app.post(CREATE, &app.member_key, &body).await }
    };
    field_error(&post(json!({})).await, "text");
    field_error(&post(json!({"text": "   "})).await, "text");
    field_error(&post(json!({"text": "x".repeat(5001)})).await, "text");
    field_error(&post(json!({"text": "nul \u{0000} inside"})).await, "text");
    field_error(
        &post(json!({"text": "x", "tenant_union_id": 0})).await,
        "tenant_union_id",
    );
    field_error(
        &post(json!({"text": "x", "tenant_id": ""})).await,
        "tenant_id",
    );
    field_error(
        &post(json!({"text": "x", "tenant_id": "t".repeat(256)})).await,
        "tenant_id",
    );
    field_error(
        &post(json!({"text": "x", "tenant_label": "Acme"})).await,
        "tenant_label",
    );
    field_error(
        &post(json!({"text": "x", "hints": {"entity": {"type": "ip", "value": "not an ip"}}}))
            .await,
        "hints[0].entity.value",
    );
    field_error(
        &post(json!({"text": "x", "hints": [{"entity": {"type": "ip", "value": "198.51.100.9"}, "verdict": "maybe"}]}))
            .await,
        "hints[0].verdict",
    );
    field_error(
        &post(json!({"text": "x", "hints": "198.51.100.9"})).await,
        "hints",
    );
    // An unknown tenant union, unknown fields, wrong types and broken JSON are 400s too.
    let unknown_union = post(json!({"text": "x", "tenant_union_id": 999_999})).await;
    assert_error(&unknown_union, 400, "bad_request");
    assert!(
        unknown_union.text.contains("999999"),
        "{}",
        unknown_union.text
    );
    for body in [
        json!({"text": "x", "scope": "global"}),
        json!({"text": 5}),
        json!({"text": "x", "tenant_union_id": "one"}),
        json!(["text"]),
        json!(null),
        json!("text"),
    ] {
        assert_error(&post(body).await, 400, "bad_request");
    }
    assert_error(
        &app.raw(
            "POST",
            CREATE,
            Some(&app.member_key),
            Some("application/json"),
            Some(b"{\"text\": ".to_vec()),
        )
        .await,
        400,
        "bad_request",
    );
    assert_error(
        &app.raw(
            "POST",
            CREATE,
            Some(&app.member_key),
            Some("text/plain"),
            Some(b"{\"text\": \"x\"}".to_vec()),
        )
        .await,
        400,
        "bad_request",
    );
    assert_eq!(list(&app, "").await["count"], 0, "nothing was stored");

    // The bounds themselves are accepted; hostile text is only data.
    create(&app, &json!({"text": "é".repeat(5000)})).await;
    create(
        &app,
        &json!({"text": "'; DROP TABLE context_memory_items; -- <script>", "tenant_union_id": union, "tenant_id": "t".repeat(255), "tenant_label": "Ünïcödé"}),
    )
    .await;
    assert_eq!(list(&app, "").await["count"], 2);
}

async fn updating_and_deleting_need_a_member_and_a_known_item(app: TestApp) {
    let item_id = create(&app, &json!({"text": "wks-0231 is the jump host"})).await;
    for bad in ["abc", "0", "-1", "1.5", "99999999999999999999"] {
        assert_error(
            &put(
                &app,
                &update_path(bad),
                &app.member_key,
                &json!({"text": "x"}),
            )
            .await,
            404,
            "not_found",
        );
        assert_error(
            &delete(&app, &delete_path(bad), &app.member_key).await,
            404,
            "not_found",
        );
    }
    assert_error(
        &put(
            &app,
            &update_path(item_id + 100),
            &app.member_key,
            &json!({"text": "x"}),
        )
        .await,
        404,
        "not_found",
    );
    assert_error(
        &delete(&app, &delete_path(item_id + 100), &app.member_key).await,
        404,
        "not_found",
    );
    assert_error(
        &put(
            &app,
            &update_path(item_id),
            &app.reader_key,
            &json!({"text": "x"}),
        )
        .await,
        403,
        "access_denied",
    );
    assert_error(
        &delete(&app, &delete_path(item_id), &app.reader_key).await,
        403,
        "access_denied",
    );
    assert_error(
        &put(&app, &update_path(item_id), &app.member_key, &json!({})).await,
        400,
        "bad_request",
    );
    assert_error(
        &put(
            &app,
            &update_path(item_id),
            &app.member_key,
            &json!({"text": ""}),
        )
        .await,
        400,
        "bad_request",
    );
    assert_error(
        &put(
            &app,
            &update_path(item_id),
            &app.member_key,
            &json!({"tenant_union_id": 424_242}),
        )
        .await,
        400,
        "bad_request",
    );
    assert_error(
        &app.raw(
            "PATCH",
            &update_path(item_id),
            Some(&app.member_key),
            Some("application/json"),
            Some(b"{}".to_vec()),
        )
        .await,
        405,
        "method_not_allowed",
    );
    // Nothing changed.
    let page = list(&app, "").await;
    assert_eq!(page["results"][0]["text"], "wks-0231 is the jump host");
    assert_eq!(page["results"][0]["is_global"], true);
}

async fn the_list_filters_by_scope_and_words_and_pages(app: TestApp) {
    let acme = tenant_union(&app, "Acme").await;
    let global = create(
        &app,
        &json!({"text": "198.51.100.9 is the Frankfurt VPN egress"}),
    )
    .await;
    let acme_item = create(
        &app,
        &json!({"text": "wks-0231 is Acme's jump host", "tenant_union_id": acme}),
    )
    .await;
    let tenant_item = create(
        &app,
        &json!({"text": "svc-backup runs at night", "tenant_id": "eu", "hints": {"entity": {"type": "user", "value": "svc-backup"}, "note": "Nightly Veeam"}}),
    )
    .await;
    assert_eq!(ids(&list(&app, "").await), [tenant_item, acme_item, global]);
    assert_eq!(ids(&list(&app, "?global=true").await), [global]);
    assert_eq!(
        ids(&list(&app, &format!("?tenant_union_id={acme}")).await),
        [acme_item]
    );
    assert_eq!(ids(&list(&app, "?tenant_id=eu").await), [tenant_item]);
    assert_eq!(
        ids(&list(&app, "?search=frankfurt%20EGRESS").await),
        [global]
    );
    assert_eq!(
        ids(&list(&app, "?search=veeam").await),
        [tenant_item],
        "hint notes are searched"
    );
    assert_eq!(ids(&list(&app, "?search=WKS-0231").await), [acme_item]);
    assert!(ids(&list(&app, "?search=%25").await).is_empty());
    let page = list(&app, "?limit=1&offset=1").await;
    assert_eq!(page["count"], 3);
    assert_eq!(ids(&page), [acme_item]);
    assert_eq!(
        ids(&list(&app, "?limit=5000").await).len(),
        3,
        "clamped, not refused"
    );
    for bad in [
        "?limit=0",
        "?limit=ten",
        "?offset=-1",
        "?global=maybe",
        "?tenant_union_id=abc",
        "?tenant_union_id=0",
    ] {
        let answer = app.get(&format!("{LIST}{bad}"), &app.reader_key).await;
        assert_error(&answer, 400, "bad_request");
    }
    let long_search = format!("{LIST}?search={}", "a".repeat(501));
    assert_error(
        &app.get(&long_search, &app.reader_key).await,
        400,
        "bad_request",
    );
    assert_error(
        &app.raw("GET", LIST, None, None, None).await,
        401,
        "unauthorized",
    );
}

async fn a_member_changes_only_their_own_items_and_an_admin_any(app: TestApp) {
    let admins = app
        .post(
            CREATE,
            &app.admin_key,
            &json!({"text": "198.51.100.9 is the Frankfurt VPN egress"}),
        )
        .await;
    assert_eq!(admins.status, 201, "{}", admins.text);
    let admins = admins.json["item_id"].as_i64().unwrap();
    let members = create(&app, &json!({"text": "wks-0231 is the jump host"})).await;

    let refused = put(
        &app,
        &update_path(admins),
        &app.member_key,
        &json!({"text": "198.51.100.9 is harmless"}),
    )
    .await;
    assert_error(&refused, 403, "access_denied");
    assert!(
        refused.json["detail"]
            .as_str()
            .unwrap()
            .contains("admin@example.com"),
        "{}",
        refused.text
    );
    assert_error(
        &delete(&app, &delete_path(admins), &app.member_key).await,
        403,
        "access_denied",
    );
    let page = list(&app, "").await;
    assert_eq!(page["count"], 2, "nothing was deleted");
    assert!(
        page.to_string().contains("Frankfurt VPN egress"),
        "nothing was changed: {page}"
    );

    // Their own item, the member changes and deletes; an admin changes anyone's.
    let own = put(
        &app,
        &update_path(members),
        &app.member_key,
        &json!({"text": "wks-0231 is the new jump host"}),
    )
    .await;
    assert_eq!(own.status, 200, "{}", own.text);
    let by_admin = put(
        &app,
        &update_path(members),
        &app.admin_key,
        &json!({"text": "wks-0231 is the old jump host"}),
    )
    .await;
    assert_eq!(by_admin.status, 200, "{}", by_admin.text);
    assert_eq!(by_admin.json["text"], "wks-0231 is the old jump host");
    assert_eq!(
        delete(&app, &delete_path(members), &app.member_key)
            .await
            .status,
        200
    );
    assert_eq!(
        delete(&app, &delete_path(admins), &app.admin_key)
            .await
            .status,
        200
    );
    assert_eq!(list(&app, "").await["count"], 0);
}
