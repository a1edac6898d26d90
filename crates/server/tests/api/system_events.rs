//! System events over HTTP: every trigger firing is recorded (scripts or not), and the list
//! answers `{count, results}` with its filters, for admins only.

use serde_json::{Value, json};
use sleuth_jobs::firing::{self, Firing};
use sleuth_jobs::trigger_catalog::{API_KEY_CREATED, INVESTIGATION_COMPLETED, USER_CREATED};

use crate::harness::{TestApp, assert_error};
use crate::on_both_backends;

on_both_backends!(
    every_firing_is_recorded_without_any_script,
    a_finished_investigation_records_its_triggers,
    the_list_filters_pages_and_refuses_bad_parameters,
    only_admins_read_system_events,
);

const LIST: &str = "/app/api/v1/system-events/list";

async fn list(app: &TestApp, query: &str) -> Value {
    let answer = app.get(&format!("{LIST}{query}"), &app.admin_key).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let object = answer.json.as_object().unwrap();
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["count", "results"]);
    answer.json
}

fn names(page: &Value) -> Vec<String> {
    page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|event| event["trigger_name"].as_str().unwrap().to_string())
        .collect()
}

fn arguments(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().unwrap()
}

async fn fire(app: &TestApp, trigger: &str, trigger_args: Value, entity: &str) {
    let firing = Firing {
        trigger_args: arguments(trigger_args),
        variables: serde_json::Map::new(),
        investigation_id: None,
        entity: Some(entity.into()),
    };
    let started = firing::fire(&app.state, &app.store, &[trigger], &firing)
        .await
        .unwrap();
    assert!(started.is_empty(), "no script is tied to {trigger}");
}

async fn every_firing_is_recorded_without_any_script(app: TestApp) {
    fire(
        &app,
        USER_CREATED,
        json!({"user_id": 9, "email": "r.patel@example.com", "role": "member"}),
        "user:r.patel@example.com",
    )
    .await;
    let page = list(&app, "").await;
    assert_eq!(page["count"], 1);
    let event = &page["results"][0];
    let mut keys: Vec<&str> = event
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
            "entity",
            "id",
            "investigation_id",
            "trigger_args",
            "trigger_name"
        ]
    );
    assert_eq!(event["trigger_name"], USER_CREATED);
    assert_eq!(event["trigger_args"]["email"], "r.patel@example.com");
    assert_eq!(event["entity"], "user:r.patel@example.com");
    assert_eq!(event["investigation_id"], Value::Null);
    assert!(event["created_at"].as_str().unwrap().ends_with('Z'));

    // An investigation's firing: one event per trigger, each with the investigation.
    let investigation_id = app
        .create(&json!({"title": "Events", "id": "events-1"}))
        .await;
    assert_eq!(app.drain().await, 1);
    let started = firing::fire_for_investigation(
        &app.state,
        &app.store,
        investigation_id,
        vec![INVESTIGATION_COMPLETED, "investigation_priority_urgent"],
    )
    .await
    .unwrap();
    assert!(started.is_empty());
    let page = list(
        &app,
        &format!("?trigger_name={INVESTIGATION_COMPLETED}&trigger_name=investigation_priority_urgent&search=events-1-never-there"),
    )
    .await;
    assert_eq!(page["count"], 0, "search narrows");
    let page = list(
        &app,
        "?trigger_name=investigation_completed&trigger_name=investigation_priority_urgent",
    )
    .await;
    // The pipeline's own firing (spawned) may have landed too; the direct one surely did.
    let direct: Vec<&Value> = page["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["investigation_id"] == investigation_id)
        .collect();
    assert!(direct.len() >= 2, "{page}");
    for event in direct {
        assert_eq!(event["trigger_args"]["investigation_id"], investigation_id);
        assert!(event["trigger_args"]["outcome"].is_string());
        assert_eq!(event["entity"], format!("investigation:{investigation_id}"));
    }
}

async fn a_finished_investigation_records_its_triggers(app: TestApp) {
    let investigation_id = app
        .create(&json!({"title": "Finished", "id": "finished-1", "host": "WKS-7"}))
        .await;
    assert_eq!(app.drain().await, 1);
    // The events are stored with the result, in its transaction: no wait.
    let page = list(
        &app,
        &format!("?search=investigation_id%20{investigation_id}"),
    )
    .await;
    let record = app
        .get(
            &format!("/app/api/v1/investigation/{investigation_id}"),
            &app.reader_key,
        )
        .await
        .json;
    let events = page["results"].as_array().unwrap();
    assert!(
        record["alert"]["entities"]
            .as_array()
            .is_some_and(|entities| !entities.is_empty()),
        "{record}"
    );
    assert!(
        names(&page).contains(&INVESTIGATION_COMPLETED.to_string()),
        "{page}"
    );
    for event in events {
        assert_eq!(event["investigation_id"], investigation_id);
        assert_eq!(event["entity"], format!("investigation:{investigation_id}"));
        assert_eq!(event["trigger_args"]["outcome"], record["outcome"]);
        assert_eq!(event["trigger_args"]["priority"], record["priority"]);
        assert_eq!(
            event["trigger_args"]["entities"], record["alert"]["entities"],
            "the alert's entities, as the API shows them"
        );
    }
    // The same arguments as a firing built from the stored investigation.
    firing::fire_for_investigation(
        &app.state,
        &app.store,
        investigation_id,
        vec![INVESTIGATION_COMPLETED],
    )
    .await
    .unwrap();
    let page = list(&app, &format!("?trigger_name={INVESTIGATION_COMPLETED}")).await;
    let both: Vec<&Value> = page["results"].as_array().unwrap().iter().collect();
    assert_eq!(both.len(), 2, "{page}");
    assert_eq!(both[0]["trigger_args"], both[1]["trigger_args"]);
}

async fn the_list_filters_pages_and_refuses_bad_parameters(app: TestApp) {
    fire(
        &app,
        API_KEY_CREATED,
        json!({"api_key_id": 1, "name": "SOAR key", "user_email": "soar@example.com"}),
        "api_key:1",
    )
    .await;
    fire(
        &app,
        USER_CREATED,
        json!({"user_id": 2, "email": "Ünïcödé@example.com"}),
        "user:2",
    )
    .await;
    fire(
        &app,
        API_KEY_CREATED,
        json!({"api_key_id": 3, "name": "'; DROP TABLE system_events; --"}),
        "api_key:3",
    )
    .await;

    let all = list(&app, "").await;
    assert_eq!(all["count"], 3);
    assert_eq!(
        names(&all),
        [API_KEY_CREATED, USER_CREATED, API_KEY_CREATED],
        "newest first"
    );
    assert_eq!(
        list(&app, &format!("?trigger_name={API_KEY_CREATED}")).await["count"],
        2
    );
    assert_eq!(
        list(
            &app,
            &format!("?trigger_name={API_KEY_CREATED}&trigger_name={USER_CREATED}")
        )
        .await["count"],
        3
    );
    assert_eq!(
        names(&list(&app, "?search=soar%20KEY").await),
        [API_KEY_CREATED]
    );
    assert_eq!(
        names(&list(&app, "?search=%C3%BCn%C3%AFc%C3%B6d%C3%A9").await),
        [USER_CREATED]
    );
    assert_eq!(list(&app, "?search=drop%20table").await["count"], 1);
    assert_eq!(list(&app, "?search=nothing-like-this").await["count"], 0);

    let first_time = all["results"][2]["created_at"]
        .as_str()
        .unwrap()
        .to_string();
    let encoded = first_time.replace('+', "%2B");
    assert_eq!(list(&app, &format!("?from={encoded}")).await["count"], 3);
    assert_eq!(list(&app, "?from=2999-01-01").await["count"], 0);
    assert_eq!(list(&app, "?until=2000-01-01").await["count"], 0);
    assert_eq!(
        list(&app, "?from=2000-01-01&until=2999-12-31").await["count"],
        3
    );

    let page = list(&app, "?limit=1&offset=1").await;
    assert_eq!(page["count"], 3);
    assert_eq!(names(&page), [USER_CREATED]);
    assert_eq!(
        list(&app, "?limit=100000").await["results"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    for bad in [
        "?trigger_name=no_such_trigger",
        "?trigger_name=investigation_completion",
        "?from=yesterday",
        "?until=2026-13-01",
        "?from=2026-03-02&until=2026-03-01",
        "?limit=0",
        "?limit=-5",
        "?offset=-1",
        "?offset=many",
    ] {
        let answer = app.get(&format!("{LIST}{bad}"), &app.admin_key).await;
        assert_error(&answer, 400, "bad_request");
        assert!(answer.json["errors"].is_object(), "{bad}: {}", answer.text);
    }
    let long = format!("{LIST}?search={}", "x".repeat(501));
    assert_error(&app.get(&long, &app.admin_key).await, 400, "bad_request");
}

async fn only_admins_read_system_events(app: TestApp) {
    assert_error(&app.get(LIST, &app.member_key).await, 403, "access_denied");
    assert_error(&app.get(LIST, &app.reader_key).await, 403, "access_denied");
    assert_error(
        &app.raw("GET", LIST, None, None, None).await,
        401,
        "unauthorized",
    );
    assert_error(
        &app.raw(
            "POST",
            LIST,
            Some(&app.admin_key),
            Some("application/json"),
            Some(b"{}".to_vec()),
        )
        .await,
        405,
        "method_not_allowed",
    );
    assert_eq!(list(&app, "").await["count"], 0);
}
