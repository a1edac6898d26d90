//! The push endpoints: each vendor's own push format, handshake and authentication, played
//! as the vendor documents them, over real HTTP.

use serde_json::{Value, json};

use crate::harness::{Answer, TestApp, assert_error};
use crate::on_both_backends;

on_both_backends!(
    an_okta_event_hook_is_verified_then_every_event_is_investigated,
    a_github_delivery_needs_its_token_and_a_valid_signature,
    graph_validates_its_subscription_and_notifications_carry_the_client_state,
    eventbridge_splunk_and_elastic_deliveries_are_taken_whole_or_not_at_all,
    push_sources_are_for_admins_and_can_be_paused_rotated_and_deleted,
);

const PUSH_SOURCES: &str = "/app/api/v1/push-sources";

/// Creates a push source; returns its id and token.
async fn push_source(app: &TestApp, body: Value) -> (i64, String) {
    let answer = app.post(PUSH_SOURCES, &app.admin_key, &body).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    let id = answer.json["id"].as_i64().unwrap();
    assert!(
        answer.json["push_url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/app/api/v1/push/{id}")),
        "{}",
        answer.text
    );
    (id, answer.json["token"].as_str().unwrap().to_string())
}

/// A push request with any headers, as a vendor sends it.
async fn push(
    app: &TestApp,
    path: &str,
    headers: &[(&str, &str)],
    content_type: &str,
    body: &[u8],
) -> Answer {
    crate::harness::request_with_headers(
        &app.address,
        "POST",
        path,
        headers,
        Some(content_type),
        Some(body.to_vec()),
    )
    .await
}

fn ids(answer: &Answer) -> Vec<i64> {
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.json["investigation_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_i64().unwrap())
        .collect()
}

async fn raw_alert_of(app: &TestApp, investigation_id: i64) -> Value {
    let answer = app
        .get(
            &format!("/app/api/v1/investigation/{investigation_id}"),
            &app.reader_key,
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    serde_json::from_str(answer.json["alert"]["raw_alert_content"].as_str().unwrap()).unwrap()
}

fn sample(name: &str) -> Value {
    let path = format!("{}/../parsers/samples/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn okta_event(uuid: &str, user: &str) -> Value {
    let mut event = sample("okta_system_log_event.json");
    event["uuid"] = json!(uuid);
    event["actor"]["alternateId"] = json!(user);
    event
}

async fn an_okta_event_hook_is_verified_then_every_event_is_investigated(app: TestApp) {
    let (id, token) = push_source(&app, json!({"name": "Okta prod", "kind": "okta"})).await;
    let path = format!("/app/api/v1/push/{id}");
    // Okta's one-time verification: a GET with the challenge and the configured header.
    let verification = request_get(
        &app,
        &path,
        &[
            ("authorization", &token),
            (
                "x-okta-verification-challenge",
                "We_are_verifying_the_endpoint",
            ),
        ],
    )
    .await;
    assert_eq!(verification.status, 200, "{}", verification.text);
    assert_eq!(
        verification.json,
        json!({"verification": "We_are_verifying_the_endpoint"})
    );
    let unauthenticated = request_get(&app, &path, &[("x-okta-verification-challenge", "x")]).await;
    assert_error(&unauthenticated, 401, "unauthorized");

    let hook = json!({
        "eventType": "com.okta.event_hook",
        "eventTypeVersion": "1.0",
        "cloudEventsVersion": "0.1",
        "source": "https://example.okta.com/api/v1/eventHooks/whoql0HfiLGPWc8Jx0g3",
        "eventId": "b5a188b9-5ece-4636-b041-482ffda96311",
        "eventTime": "2026-03-02T21:14:08.000Z",
        "contentType": "application/json",
        "data": {"events": [
            okta_event("1b7e0c1a-0001-11f1-9d3e-3b5c7a9e2f10", "m.garcia@example.com"),
            okta_event("1b7e0c1a-0002-11f1-9d3e-3b5c7a9e2f10", "j.smith@example.com"),
            okta_event("1b7e0c1a-0003-11f1-9d3e-3b5c7a9e2f10", "a.chen@example.com"),
        ]}
    });
    let body = hook.to_string();
    let headers = [("authorization", token.as_str())];
    let first = ids(&push(&app, &path, &headers, "application/json", body.as_bytes()).await);
    assert_eq!(first.len(), 3);
    let mut unique = first.clone();
    unique.dedup();
    assert_eq!(unique.len(), 3, "one investigation per event: {first:?}");
    for (index, investigation_id) in first.iter().enumerate() {
        assert_eq!(
            raw_alert_of(&app, *investigation_id).await,
            hook["data"]["events"][index],
            "each investigation holds its own event"
        );
    }
    // Okta retries a delivery it did not see answered: the same ids, nothing new.
    let again = ids(&push(&app, &path, &headers, "application/json", body.as_bytes()).await);
    assert_eq!(again, first);
    let wrong = push(
        &app,
        &path,
        &[("authorization", "sleuth_push_wrong")],
        "application/json",
        body.as_bytes(),
    )
    .await;
    assert_error(&wrong, 401, "unauthorized");
    assert_eq!(app.drain().await, 3);
    let source = app
        .get(&format!("{PUSH_SOURCES}/{id}"), &app.admin_key)
        .await;
    assert_eq!(source.json["deliveries"], 2, "{}", source.text);
    assert_eq!(source.json["alerts_received"], 6);
    assert!(
        source.json.get("token").is_none(),
        "the token is shown once"
    );
}

async fn request_get(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> Answer {
    crate::harness::request_with_headers(&app.address, "GET", path, headers, None, None).await
}

fn github_signature(secret: &str, body: &[u8]) -> String {
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

async fn a_github_delivery_needs_its_token_and_a_valid_signature(app: TestApp) {
    let secret = "It's a Secret to Everybody";
    let stored = app
        .raw(
            "PUT",
            "/app/api/v1/response-actions/secrets/GITHUB_WEBHOOK",
            Some(&app.admin_key),
            Some("application/json"),
            Some(json!({"value": secret}).to_string().into_bytes()),
        )
        .await;
    assert_eq!(stored.status, 204, "{}", stored.text);
    let unsigned = app
        .post(
            PUSH_SOURCES,
            &app.admin_key,
            &json!({"name": "GitHub org", "kind": "github"}),
        )
        .await;
    assert_error(&unsigned, 400, "bad_request");
    let (id, token) = push_source(
        &app,
        json!({"name": "GitHub org", "kind": "github", "signing_secret_name": "GITHUB_WEBHOOK"}),
    )
    .await;
    let path = format!("/app/api/v1/push/{id}?token={token}");
    let ping = json!({"zen": "Keep it logically awesome.", "hook_id": 1}).to_string();
    let answer = push(
        &app,
        &path,
        &[
            ("x-github-event", "ping"),
            (
                "x-hub-signature-256",
                &github_signature(secret, ping.as_bytes()),
            ),
        ],
        "application/json",
        ping.as_bytes(),
    )
    .await;
    assert_eq!(ids(&answer), Vec::<i64>::new());

    let alert = sample("github_secret_scanning.json").to_string();
    let forged = push(
        &app,
        &path,
        &[
            ("x-github-event", "secret_scanning_alert"),
            (
                "x-hub-signature-256",
                &github_signature("guess", alert.as_bytes()),
            ),
        ],
        "application/json",
        alert.as_bytes(),
    )
    .await;
    assert_error(&forged, 401, "unauthorized");
    let listed = app
        .get(
            "/app/api/v1/investigation?investigation_state=not_asked",
            &app.reader_key,
        )
        .await;
    assert_eq!(listed.json["count"], 0, "a forged delivery stores nothing");

    let signed = push(
        &app,
        &path,
        &[
            ("x-github-event", "secret_scanning_alert"),
            (
                "x-hub-signature-256",
                &github_signature(secret, alert.as_bytes()),
            ),
        ],
        "application/json",
        alert.as_bytes(),
    )
    .await;
    let created = ids(&signed);
    assert_eq!(created.len(), 1);
    // GitHub's form-encoded content type: the JSON is the `payload` field, signed as sent.
    let mut changed = sample("github_secret_scanning.json");
    changed["action"] = json!("reopened");
    let form = format!(
        "payload={}",
        form_urlencoded::byte_serialize(changed.to_string().as_bytes()).collect::<String>()
    );
    let answer = push(
        &app,
        &path,
        &[
            ("x-github-event", "secret_scanning_alert"),
            (
                "x-hub-signature-256",
                &github_signature(secret, form.as_bytes()),
            ),
        ],
        "application/x-www-form-urlencoded",
        form.as_bytes(),
    )
    .await;
    assert_eq!(
        ids(&answer),
        created,
        "the same alert, reopened: a revision of it"
    );
    let revisions = app
        .get(
            &format!("/app/api/v1/investigation/{}/revisions", created[0]),
            &app.reader_key,
        )
        .await;
    assert_eq!(
        revisions.json["revisions"][1]["changed"],
        json!(["action"]),
        "{}",
        revisions.text
    );
}

async fn graph_validates_its_subscription_and_notifications_carry_the_client_state(app: TestApp) {
    let (id, token) = push_source(&app, json!({"name": "Graph", "kind": "graph"})).await;
    let validation = push(
        &app,
        &format!("/app/api/v1/push/{id}?token={token}&validationToken=Validation%3A%20Testing%20client%20application%20reachability"),
        &[],
        "text/plain",
        b"",
    )
    .await;
    assert_eq!(validation.status, 200, "{}", validation.text);
    assert_eq!(
        validation.text,
        "Validation: Testing client application reachability"
    );
    assert_eq!(
        validation
            .headers
            .get("content-type")
            .and_then(|value| value.to_str().ok()),
        Some("text/plain; charset=utf-8")
    );

    let alert = sample("microsoft_graph_alert_v2.json");
    let notification = |client_state: &str, resource_data: Value| {
        json!({
            "subscriptionId": "7f105c7d-2dc5-4530-97cd-4e7ae6534c07",
            "subscriptionExpirationDateTime": "2026-03-20T11:00:00.0000000Z",
            "changeType": "created",
            "resource": "security/alerts_v2/fa6c1f9a2b-7d3e-4c58-a1b0-9e8d7c6b5a43",
            "resourceData": resource_data,
            "clientState": client_state,
            "tenantId": "84bd8158-6d4d-4958-8b9f-9d6445542f95"
        })
    };
    let path = format!("/app/api/v1/push/{id}?token={token}");
    let rich = json!({"value": [notification(&token, alert.clone())]}).to_string();
    let created = ids(&push(&app, &path, &[], "application/json", rich.as_bytes()).await);
    assert_eq!(created.len(), 1);
    assert_eq!(raw_alert_of(&app, created[0]).await, alert);

    let forged = json!({"value": [notification("not-the-token", alert.clone())]}).to_string();
    assert_error(
        &push(&app, &path, &[], "application/json", forged.as_bytes()).await,
        401,
        "unauthorized",
    );
    let bare = json!({"value": [notification(&token, json!({"@odata.type": "#Microsoft.Graph.security.alert", "id": "x"}))]}).to_string();
    let refused = push(&app, &path, &[], "application/json", bare.as_bytes()).await;
    assert_error(&refused, 400, "bad_request");
    assert!(refused.text.contains("connector"), "{}", refused.text);
}

async fn eventbridge_splunk_and_elastic_deliveries_are_taken_whole_or_not_at_all(app: TestApp) {
    // EventBridge API destination, basic auth: a Security Hub event with two findings.
    let (eventbridge, token) =
        push_source(&app, json!({"name": "EventBridge", "kind": "eventbridge"})).await;
    let mut event = sample("aws_securityhub_finding.json");
    let mut second = event["detail"]["findings"][0].clone();
    second["Id"] = json!("arn:aws:securityhub:eu-west-2:111122223333:finding/second");
    second["Title"] = json!("A second finding of the same event");
    event["detail"]["findings"]
        .as_array_mut()
        .unwrap()
        .push(second);
    let basic = format!(
        "Basic {}",
        base64::Engine::encode(
            &base64::engine::general_purpose::STANDARD,
            format!("sleuth:{token}")
        )
    );
    let answer = push(
        &app,
        &format!("/app/api/v1/push/{eventbridge}"),
        &[("authorization", &basic)],
        "application/json",
        event.to_string().as_bytes(),
    )
    .await;
    let created = ids(&answer);
    assert_eq!(created.len(), 2);
    assert_ne!(created[0], created[1]);
    assert_eq!(
        raw_alert_of(&app, created[1]).await["detail"]["findings"][0]["Title"],
        "A second finding of the same event"
    );

    // Splunk's webhook alert action can set only a URL.
    let (splunk, token) = push_source(&app, json!({"name": "Splunk", "kind": "splunk"})).await;
    let webhook = sample("splunk_alert_webhook.json").to_string();
    let answer = push(
        &app,
        &format!("/app/api/v1/push/{splunk}?token={token}"),
        &[],
        "application/json",
        webhook.as_bytes(),
    )
    .await;
    assert_eq!(ids(&answer).len(), 1);

    // Elastic's Webhook connector with `{{context.alerts}}`: a JSON array, bearer token.
    let (elastic, token) = push_source(&app, json!({"name": "Elastic", "kind": "elastic"})).await;
    let path = format!("/app/api/v1/push/{elastic}");
    let bearer = format!("Bearer {token}");
    let mut first = sample("elastic_security_alert.json");
    let mut other = first.clone();
    first["kibana.alert.uuid"] = json!("elastic-uuid-one");
    other["kibana.alert.uuid"] = json!("elastic-uuid-two");
    let both = json!([first, other]).to_string();
    let answer = push(
        &app,
        &path,
        &[("authorization", &bearer)],
        "application/json",
        both.as_bytes(),
    )
    .await;
    assert_eq!(ids(&answer).len(), 2);
    // Nothing is half taken: an element that is no alert refuses the whole delivery.
    let before = app
        .get(
            "/app/api/v1/investigation?investigation_state=not_asked",
            &app.reader_key,
        )
        .await
        .json["count"]
        .clone();
    let mut third = sample("elastic_security_alert.json");
    third["kibana.alert.uuid"] = json!("elastic-uuid-three");
    let mixed = json!([third, "not an alert"]).to_string();
    let refused = push(
        &app,
        &path,
        &[("authorization", &bearer)],
        "application/json",
        mixed.as_bytes(),
    )
    .await;
    assert_error(&refused, 400, "bad_request");
    let empty = push(
        &app,
        &path,
        &[("authorization", &bearer)],
        "application/json",
        b"[]",
    )
    .await;
    assert_error(&empty, 400, "bad_request");
    let after = app
        .get(
            "/app/api/v1/investigation?investigation_state=not_asked",
            &app.reader_key,
        )
        .await
        .json["count"]
        .clone();
    assert_eq!(before, after, "refused deliveries store nothing");
}

async fn push_sources_are_for_admins_and_can_be_paused_rotated_and_deleted(app: TestApp) {
    let refused = app
        .post(
            PUSH_SOURCES,
            &app.member_key,
            &json!({"name": "x", "kind": "generic"}),
        )
        .await;
    assert_error(&refused, 403, "access_denied");
    let unknown = app
        .post(
            PUSH_SOURCES,
            &app.admin_key,
            &json!({"name": "x", "kind": "smoke-signals"}),
        )
        .await;
    assert_error(&unknown, 400, "bad_request");
    let (id, token) = push_source(&app, json!({"name": "Generic", "kind": "generic"})).await;
    let duplicate = app
        .post(
            PUSH_SOURCES,
            &app.admin_key,
            &json!({"name": "Generic", "kind": "generic"}),
        )
        .await;
    assert_error(&duplicate, 409, "conflict");
    let path = format!("/app/api/v1/push/{id}");
    let alert = json!({"title": "Beacon to 203.0.113.9", "host": "WKS-2"}).to_string();
    let send = |token: String| {
        let app = &app;
        let path = path.clone();
        let alert = alert.clone();
        async move {
            push(
                app,
                &path,
                &[("authorization", &token)],
                "application/json",
                alert.as_bytes(),
            )
            .await
        }
    };
    assert_eq!(ids(&send(token.clone()).await).len(), 1);

    let paused = app
        .patch(
            &format!("{PUSH_SOURCES}/{id}"),
            &app.admin_key,
            &json!({"enabled": false}),
        )
        .await;
    assert_eq!(paused.status, 200, "{}", paused.text);
    assert_error(&send(token.clone()).await, 403, "access_denied");
    let rotated = app
        .patch(
            &format!("{PUSH_SOURCES}/{id}"),
            &app.admin_key,
            &json!({"enabled": true, "rotate_token": true}),
        )
        .await;
    let new_token = rotated.json["token"].as_str().unwrap().to_string();
    assert_ne!(new_token, token);
    assert_error(&send(token).await, 401, "unauthorized");
    assert_eq!(ids(&send(new_token.clone()).await).len(), 1);
    let listed = app.get(PUSH_SOURCES, &app.admin_key).await;
    assert_eq!(listed.json.as_array().unwrap().len(), 1);
    assert!(!listed.text.contains(&new_token), "tokens are never listed");
    let deleted = app
        .raw(
            "DELETE",
            &format!("{PUSH_SOURCES}/{id}"),
            Some(&app.admin_key),
            None,
            None,
        )
        .await;
    assert_eq!(deleted.status, 204);
    assert_error(&send(new_token).await, 404, "not_found");
}
