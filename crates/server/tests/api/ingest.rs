//! Getting alerts in the way the tools send them: bodies that hold several alerts, and an
//! alert sent again with changed content (revisions).

use serde_json::{Value, json};

use crate::harness::{TestApp, assert_error};
use crate::on_both_backends;

on_both_backends!(
    an_okta_event_hook_with_two_events_is_refused_with_how_to_send_it,
    a_finding_resent_with_changed_content_and_force_is_investigated_on_the_new_content,
    a_changed_finding_without_force_is_recorded_as_a_revision_of_the_existing_investigation,
    a_revision_that_raises_severity_is_investigated_without_force,
    repeats_are_counted_as_sightings_in_one_batch_and_across_batches,
);

fn okta_event(uuid: &str, user: &str, ip: &str) -> Value {
    let mut event: Value = serde_json::from_str(include_str!(
        "../../../parsers/samples/okta_system_log_event.json"
    ))
    .unwrap();
    event["uuid"] = json!(uuid);
    event["actor"]["alternateId"] = json!(user);
    event["client"]["ipAddress"] = json!(ip);
    event
}

/// An Okta event hook delivery as Okta documents it (CloudEvents 0.1 envelope).
fn okta_hook(events: Vec<Value>) -> Value {
    json!({
        "eventType": "com.okta.event_hook",
        "eventTypeVersion": "1.0",
        "cloudEventsVersion": "0.1",
        "source": "https://example.okta.com/api/v1/eventHooks/whoql0HfiLGPWc8Jx0g3",
        "eventId": "b5a188b9-5ece-4636-b041-482ffda96311",
        "data": {"events": events},
        "eventTime": "2026-03-02T21:14:08.000Z",
        "contentType": "application/json"
    })
}

fn guardduty_finding() -> Value {
    serde_json::from_str(include_str!(
        "../../../parsers/samples/aws_guardduty_finding.json"
    ))
    .unwrap()
}

async fn an_okta_event_hook_with_two_events_is_refused_with_how_to_send_it(app: TestApp) {
    let hook = okta_hook(vec![
        okta_event(
            "0b7e0c1a-0001-11f1-9d3e-3b5c7a9e2f10",
            "m.garcia@example.com",
            "203.0.113.66",
        ),
        okta_event(
            "0b7e0c1a-0002-11f1-9d3e-3b5c7a9e2f10",
            "j.smith@example.com",
            "198.51.100.7",
        ),
    ]);
    for (path, body) in [
        ("/app/api/v1/investigation/create/custom", hook.clone()),
        (
            "/app/api/v1/investigation/create",
            json!({"raw_alert_content": hook.clone()}),
        ),
    ] {
        let answer = app.post(path, &app.member_key, &body).await;
        assert_error(&answer, 400, "bad_request");
        let message = answer.json["error_msg"].as_str().unwrap();
        assert!(
            message.contains("Okta event hook")
                && message.contains("2 alerts")
                && message.contains("/app/api/v1/push/"),
            "{message}"
        );
    }
    // Nothing was half taken.
    let listed = app
        .get(
            "/app/api/v1/investigation?investigation_state=not_asked",
            &app.reader_key,
        )
        .await;
    assert_eq!(listed.json["count"], 0, "{}", listed.text);
    // One event in the envelope is still one alert, as before.
    let single = okta_hook(vec![okta_event(
        "0b7e0c1a-0003-11f1-9d3e-3b5c7a9e2f10",
        "m.garcia@example.com",
        "203.0.113.66",
    )]);
    app.create(&single).await;
}

async fn a_finding_resent_with_changed_content_and_force_is_investigated_on_the_new_content(
    app: TestApp,
) {
    let first = guardduty_finding();
    let first_id = app.create(&first).await;
    let mut updated = first.clone();
    updated["service"]["count"] = json!(42);
    updated["updatedAt"] = json!("2026-03-03T09:00:00.000Z");
    let answer = app
        .post(
            "/app/api/v1/investigation/create",
            &app.member_key,
            &json!({"raw_alert_content": updated, "force_reinvestigation": true}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let forced_id = answer.json["investigation_id"].as_i64().unwrap();
    assert_ne!(forced_id, first_id);
    let read = |id: i64| {
        let app = &app;
        async move {
            let answer = app
                .get(&format!("/app/api/v1/investigation/{id}"), &app.reader_key)
                .await;
            assert_eq!(answer.status, 200, "{}", answer.text);
            let raw: Value =
                serde_json::from_str(answer.json["alert"]["raw_alert_content"].as_str().unwrap())
                    .unwrap();
            raw
        }
    };
    assert_eq!(
        read(forced_id).await["service"]["count"],
        42,
        "the new content is investigated"
    );
    assert_eq!(
        read(first_id).await,
        first,
        "the first investigation keeps what it investigated"
    );
    assert_eq!(app.drain().await, 2);
}

async fn revisions_of(app: &TestApp, investigation_id: i64) -> Value {
    let answer = app
        .get(
            &format!("/app/api/v1/investigation/{investigation_id}/revisions"),
            &app.reader_key,
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.json
}

async fn create_answer(app: &TestApp, alert: &Value, force: bool) -> i64 {
    let answer = app
        .post(
            "/app/api/v1/investigation/create",
            &app.member_key,
            &json!({"raw_alert_content": alert, "force_reinvestigation": force}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.json["investigation_id"].as_i64().unwrap()
}

async fn a_changed_finding_without_force_is_recorded_as_a_revision_of_the_existing_investigation(
    app: TestApp,
) {
    let first = guardduty_finding();
    let first_id = app.create(&first).await;
    let fresh = revisions_of(&app, first_id).await;
    assert_eq!(fresh["seen_count"], 1);
    assert_eq!(fresh["revisions"].as_array().unwrap().len(), 1);
    assert_eq!(fresh["revisions"][0]["investigation_id"], first_id);

    let mut updated = first.clone();
    updated["service"]["count"] = json!(9);
    updated["updatedAt"] = json!("2026-03-05T10:00:00.000Z");
    assert_eq!(create_answer(&app, &updated, false).await, first_id);
    // The same update again is a sighting, not another revision.
    assert_eq!(create_answer(&app, &updated, false).await, first_id);

    let revisions = revisions_of(&app, first_id).await;
    assert_eq!(revisions["seen_count"], 3, "{revisions}");
    let listed = revisions["revisions"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{revisions}");
    assert_eq!(listed[0]["revision"], 1);
    assert_eq!(listed[0]["investigation_id"], first_id);
    assert_eq!(listed[1]["revision"], 2);
    assert_eq!(
        listed[1]["investigation_id"],
        Value::Null,
        "recorded, not investigated"
    );
    assert_eq!(listed[1]["changed"], json!(["service.count", "updatedAt"]));
    assert_ne!(revisions["first_seen"], revisions["last_seen"]);

    // Forcing now investigates the latest revision, which was only recorded so far.
    let forced = create_answer(&app, &updated, true).await;
    assert_ne!(forced, first_id);
    let read = app
        .get(
            &format!("/app/api/v1/investigation/{forced}"),
            &app.reader_key,
        )
        .await;
    let raw: Value =
        serde_json::from_str(read.json["alert"]["raw_alert_content"].as_str().unwrap()).unwrap();
    assert_eq!(raw, updated);
    // Both investigations tell the same story of the alert.
    let after = revisions_of(&app, forced).await;
    assert_eq!(after, revisions_of(&app, first_id).await);
    assert_eq!(after["seen_count"], 4);
    assert_eq!(after["revisions"][1]["investigation_id"], forced);
    // A repeat of the investigated revision answers the newest investigation.
    assert_eq!(create_answer(&app, &updated, false).await, forced);
    assert_eq!(app.drain().await, 2);
}

async fn a_revision_that_raises_severity_is_investigated_without_force(app: TestApp) {
    let mut first = guardduty_finding();
    first["severity"] = json!(2); // low
    let first_id = app.create(&first).await;
    let mut same_band = first.clone();
    same_band["severity"] = json!(2.5);
    assert_eq!(
        create_answer(&app, &same_band, false).await,
        first_id,
        "still low"
    );
    let mut raised = first.clone();
    raised["severity"] = json!(8); // high
    let raised_id = create_answer(&app, &raised, false).await;
    assert_ne!(raised_id, first_id, "a rise in severity is investigated");
    let revisions = revisions_of(&app, raised_id).await;
    let listed = revisions["revisions"].as_array().unwrap();
    assert_eq!(listed.len(), 3, "{revisions}");
    assert_eq!(listed[2]["investigation_id"], raised_id);
    assert_eq!(listed[2]["changed"], json!(["severity"]));
    // Falling back is recorded, not investigated.
    assert_eq!(create_answer(&app, &first, false).await, raised_id);
}

async fn repeats_are_counted_as_sightings_in_one_batch_and_across_batches(app: TestApp) {
    let alert = json!({"title": "Beacon to 203.0.113.9", "id": "det-77", "host": "WKS-1"});
    let concurrent =
        futures_util::future::join_all((0..8).map(|_| create_answer(&app, &alert, false))).await;
    let id = concurrent[0];
    assert!(
        concurrent.iter().all(|other| *other == id),
        "{concurrent:?}"
    );
    assert_eq!(create_answer(&app, &alert, false).await, id);
    let revisions = revisions_of(&app, id).await;
    assert_eq!(revisions["seen_count"], 9, "{revisions}");
    assert_eq!(revisions["revisions"].as_array().unwrap().len(), 1);
}
