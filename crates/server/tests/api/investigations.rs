//! The investigation endpoints of SPEC, end to end: create, dedupe, the queue, read, list.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::harness::{Backend, TestApp, assert_error};
use crate::on_both_backends;
use crate::shapes;

on_both_backends!(
    a_created_investigation_is_queued_then_concluded_in_spec_shape,
    the_same_alert_answers_the_same_investigation_unless_forced,
    fifty_concurrent_identical_creates_make_one_investigation,
    custom_creates_take_any_object_and_query_options,
    unknown_and_malformed_ids_are_not_found,
    the_list_defaults_to_successes_and_validates_its_parameters,
    pages_link_forwards_and_backwards_without_repeats,
    search_handles_unicode_and_injection,
    canceling_stops_an_investigation_for_good,
);

fn all_states() -> &'static str {
    "investigation_state=not_asked&investigation_state=loading&investigation_state=success&investigation_state=error"
}

async fn a_created_investigation_is_queued_then_concluded_in_spec_shape(app: TestApp) {
    let alert =
        json!({"title": "Mimikatz on WKS-0231", "id": "det-1", "nested": {"ip": "203.0.113.5"}});
    let id = app.create(&alert).await;
    let queued = app
        .get(&format!("/app/api/v1/investigation/{id}"), &app.reader_key)
        .await;
    assert_eq!(queued.status, 200);
    shapes::assert_single_read(&queued.json);
    assert_eq!(queued.json["status"], "not_asked");
    assert_eq!(queued.json["ready"], false);
    assert_eq!(
        queued.json["alert"]["raw_alert_content"],
        alert.to_string(),
        "the exact text received"
    );
    assert!(
        queued.json["inv_url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/app/api/v1/investigation/{id}"))
    );

    assert_eq!(app.drain().await, 1);
    let done = app
        .get(&format!("/app/api/v1/investigation/{id}"), &app.reader_key)
        .await;
    shapes::assert_single_read(&done.json);
    assert_eq!(done.json["status"], "success");
    assert_eq!(done.json["ready"], true);
    assert!(done.json["generated_time"].is_string() && done.json["start_time"].is_string());
    assert!(done.json["outcome"].is_string() && done.json["priority"].is_string());
    assert_eq!(done.json["is_retried"], false);

    let page = app.get("/app/api/v1/investigation", &app.reader_key).await;
    shapes::assert_page(&page.json);
    assert_eq!(page.json["count"], 1);
    let item = &page.json["results"][0];
    assert_eq!(item["id"], id);
    assert_eq!(item["feedback"]["status"], "in_review");
    assert_eq!(item["feedback"]["outcome"], done.json["outcome"]);
    assert_eq!(item["alert"]["tenant_union"]["display_name"], "Default");
}

async fn the_same_alert_answers_the_same_investigation_unless_forced(app: TestApp) {
    let alert = json!({"title": "Same alert", "detail": [1, 2, 3]});
    let first = app.create(&alert).await;
    // The same content in another key order is the same alert.
    let reordered: Value =
        serde_json::from_str(r#"{"detail": [1, 2, 3], "title": "Same alert"}"#).unwrap();
    assert_eq!(app.create(&reordered).await, first);
    let forced = app
        .post(
            "/app/api/v1/investigation/create",
            &app.member_key,
            &json!({"raw_alert_content": alert, "force_reinvestigation": true}),
        )
        .await;
    let forced = forced.json["investigation_id"].as_i64().unwrap();
    assert_ne!(forced, first);
    let first_alert = app
        .get(
            &format!("/app/api/v1/investigation/{first}"),
            &app.reader_key,
        )
        .await
        .json["alert"]["id"]
        .clone();
    let forced_alert = app
        .get(
            &format!("/app/api/v1/investigation/{forced}"),
            &app.reader_key,
        )
        .await
        .json["alert"]["id"]
        .clone();
    assert_eq!(first_alert, forced_alert, "one alert, investigated twice");
    // A different tenant union is a different alert.
    let union = app
        .post(
            "/app/api/v1/tenant-unions",
            &app.admin_key,
            &json!({"display_name": "Other"}),
        )
        .await
        .json["id"]
        .clone();
    let other = app
        .post(
            "/app/api/v1/investigation/create",
            &app.member_key,
            &json!({"raw_alert_content": alert, "tenant_union_id": union}),
        )
        .await;
    assert_ne!(other.json["investigation_id"].as_i64().unwrap(), forced);
    let queued = app
        .get(
            &format!("/app/api/v1/investigation?{}", all_states()),
            &app.reader_key,
        )
        .await;
    assert_eq!(queued.json["count"], 3);
}

async fn fifty_concurrent_identical_creates_make_one_investigation(app: TestApp) {
    let body = json!({"raw_alert_content": {"title": "storm", "id": "storm-1"}});
    let address = app.address.clone();
    let key = app.member_key.clone();
    let requests = (0..50).map(|_| {
        let (address, key, body) = (address.clone(), key.clone(), body.to_string());
        tokio::spawn(async move {
            crate::harness::request(
                &address,
                "POST",
                "/app/api/v1/investigation/create",
                Some(&key),
                Some("application/json"),
                Some(body.into_bytes()),
            )
            .await
        })
    });
    let answers = futures_util::future::join_all(requests).await;
    let ids: BTreeSet<i64> = answers
        .into_iter()
        .map(|answer| {
            let answer = answer.unwrap();
            assert_eq!(answer.status, 200, "{}", answer.text);
            answer.json["investigation_id"].as_i64().unwrap()
        })
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(app.drain().await, 1, "one job for fifty requests");
}

async fn custom_creates_take_any_object_and_query_options(app: TestApp) {
    let path = "/app/api/v1/investigation/create/custom";
    let alert = json!({"anything": {"deeply": {"nested": ["ok"]}}, "when": 1767225600});
    let first = app.post(path, &app.member_key, &alert).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let id = first.json["investigation_id"].as_i64().unwrap();
    assert_eq!(
        app.post(path, &app.member_key, &alert).await.json["investigation_id"],
        id
    );
    let forced = app
        .post(
            &format!("{path}?force_reinvestigation=true"),
            &app.member_key,
            &alert,
        )
        .await;
    assert_ne!(forced.json["investigation_id"].as_i64().unwrap(), id);
    let union = app
        .post(
            "/app/api/v1/tenant-unions",
            &app.admin_key,
            &json!({"display_name": "Q"}),
        )
        .await
        .json["id"]
        .as_i64()
        .unwrap();
    let scoped = app
        .post(
            &format!("{path}?tenant_union_id={union}"),
            &app.member_key,
            &alert,
        )
        .await;
    let scoped_id = scoped.json["investigation_id"].as_i64().unwrap();
    let read = app
        .get(
            &format!("/app/api/v1/investigation/{scoped_id}"),
            &app.reader_key,
        )
        .await;
    assert_eq!(read.json["alert"]["tenant_union"]["id"], union);
    assert_eq!(read.json["alert"]["raw_alert_content"], alert.to_string());
}

async fn unknown_and_malformed_ids_are_not_found(app: TestApp) {
    for id in [
        "999999",
        "abc",
        "0",
        "-1",
        "1.5",
        "%27%20OR%201%3D1",
        "99999999999999999999999",
    ] {
        assert_error(
            &app.get(&format!("/app/api/v1/investigation/{id}"), &app.reader_key)
                .await,
            404,
            "not_found",
        );
    }
}

async fn the_list_defaults_to_successes_and_validates_its_parameters(app: TestApp) {
    let done = app.create(&json!({"title": "concluded"})).await;
    app.drain().await;
    let queued = app.create(&json!({"title": "waiting"})).await;
    let default = app.get("/app/api/v1/investigation", &app.reader_key).await;
    let ids: Vec<i64> = default.json["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, vec![done]);
    let waiting = app
        .get(
            "/app/api/v1/investigation?investigation_state=not_asked",
            &app.reader_key,
        )
        .await;
    assert_eq!(waiting.json["results"][0]["id"], queued);
    shapes::assert_page(&waiting.json);
    for bad in [
        "investigation_state=finished",
        "priority_statuses=high",
        "sort_type=alphabetical",
        "sort_dir=sideways",
        "stopped_reasons=OOPS",
        "limit=abc",
        "offset=-5",
        "alert_create_from=last-tuesday",
        "limit=0",
    ] {
        let answer = app
            .get(&format!("/app/api/v1/investigation?{bad}"), &app.reader_key)
            .await;
        assert_error(&answer, 400, "bad_request");
        assert!(answer.json["errors"].is_object(), "{bad}: names the field");
    }
    let clamped = app
        .get("/app/api/v1/investigation?limit=100000", &app.reader_key)
        .await;
    assert_eq!(clamped.status, 200);
    for sort in [
        "alert_create",
        "alert_start",
        "inv_create",
        "inv_complete",
        "inv_update",
        "priority",
    ] {
        for direction in ["asc", "desc"] {
            let answer = app
                .get(
                    &format!(
                        "/app/api/v1/investigation?sort_type={sort}&sort_dir={direction}&{}",
                        all_states()
                    ),
                    &app.reader_key,
                )
                .await;
            assert_eq!(answer.json["count"], 2, "{sort} {direction}");
        }
    }
    let by_source = app
        .get(
            "/app/api/v1/investigation?direct_source_labels=Nope&direct_source_labels=Generic",
            &app.reader_key,
        )
        .await;
    assert_eq!(by_source.json["count"], 1);
    let future = app
        .get(
            "/app/api/v1/investigation?alert_create_from=2999-01-01",
            &app.reader_key,
        )
        .await;
    assert_eq!(future.json["count"], 0);
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let by_day = app
        .get(
            &format!(
                "/app/api/v1/investigation?inv_complete_from={today}&inv_complete_until={today}"
            ),
            &app.reader_key,
        )
        .await;
    assert_eq!(by_day.json["count"], 1, "a date alone covers the whole day");
}

async fn pages_link_forwards_and_backwards_without_repeats(app: TestApp) {
    for index in 0..23 {
        app.create(&json!({"title": format!("alert {index}"), "n": index}))
            .await;
    }
    app.drain().await;
    let mut seen = Vec::new();
    let mut url = Some(app.url("/app/api/v1/investigation?limit=5&sort_dir=desc"));
    let mut last_page = None;
    while let Some(current) = url {
        let path = current
            .strip_prefix(&format!("http://{}", app.address))
            .expect("absolute link to this server")
            .to_string();
        let page = app.get(&path, &app.reader_key).await;
        assert_eq!(page.json["count"], 23);
        assert!(
            page.json["next"]
                .as_str()
                .is_none_or(|next| next.contains("sort_dir=desc")),
            "links keep the other parameters"
        );
        seen.extend(
            page.json["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|item| item["id"].as_i64().unwrap()),
        );
        url = page.json["next"].as_str().map(str::to_string);
        last_page = Some(path);
    }
    assert_eq!(seen.len(), 23);
    assert_eq!(seen.iter().collect::<BTreeSet<_>>().len(), 23, "no repeats");
    let mut backwards = Vec::new();
    let mut url = last_page;
    while let Some(path) = url {
        let page = app.get(&path, &app.reader_key).await;
        let mut ids: Vec<i64> = page.json["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["id"].as_i64().unwrap())
            .collect();
        ids.reverse();
        backwards.extend(ids);
        url = page.json["previous"].as_str().map(|link| {
            link.strip_prefix(&format!("http://{}", app.address))
                .unwrap()
                .to_string()
        });
    }
    backwards.reverse();
    assert_eq!(
        backwards, seen,
        "walking back sees the same items in the same order"
    );
}

async fn search_handles_unicode_and_injection(app: TestApp) {
    let mimikatz = app
        .create(&json!({"title": "Mimikatz dumped credentials on WKS-0231"}))
        .await;
    let zurich = app
        .create(&json!({"title": "Anmeldung aus Zürich – 東京 ünïcödé"}))
        .await;
    app.drain().await;
    let search = |text: &str| {
        let encoded: String = form_urlencoded::byte_serialize(text.as_bytes()).collect();
        format!("/app/api/v1/investigation?search={encoded}")
    };
    let ids = |answer: &crate::harness::Answer| -> Vec<i64> {
        answer.json["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["id"].as_i64().unwrap())
            .collect()
    };
    assert_eq!(
        ids(&app.get(&search("mimikatz"), &app.reader_key).await),
        vec![mimikatz]
    );
    assert_eq!(
        ids(&app.get(&search("wks-0231"), &app.reader_key).await),
        vec![mimikatz]
    );
    assert_eq!(
        ids(&app.get(&search("zürich 東京"), &app.reader_key).await),
        vec![zurich]
    );
    for hostile in [
        "' OR '1'='1",
        "\"; DROP TABLE investigations; --",
        "mimikatz\" OR \"",
        "*",
        "NEAR(",
        "^$",
        "\\",
        "%",
        "()",
        "a:b",
        "🙂",
    ] {
        let answer = app.get(&search(hostile), &app.reader_key).await;
        assert_eq!(answer.status, 200, "{hostile:?}: {}", answer.text);
    }
    assert_error(
        &app.get(&search(&"a ".repeat(400)), &app.reader_key).await,
        400,
        "bad_request",
    );
    assert_eq!(
        app.get("/app/api/v1/investigation", &app.reader_key)
            .await
            .json["count"],
        2,
        "still there"
    );
}

async fn canceling_stops_an_investigation_for_good(app: TestApp) {
    let id = app.create(&json!({"title": "cancel me"})).await;
    let path = format!("/app/api/v1/investigation/{id}/cancel");
    assert_error(
        &app.post(&path, &app.reader_key, &json!({})).await,
        403,
        "access_denied",
    );
    let canceled = app.post(&path, &app.member_key, &json!({})).await;
    assert_eq!(canceled.status, 200, "{}", canceled.text);
    shapes::assert_single_read(&canceled.json);
    assert_eq!(canceled.json["status"], "error");
    assert_eq!(canceled.json["canceled"], "CANCEL_MANUAL");
    assert_eq!(app.drain().await, 0, "nothing left to run");
    assert_error(
        &app.post(&path, &app.member_key, &json!({})).await,
        400,
        "bad_request",
    );
    assert_error(
        &app.post(
            "/app/api/v1/investigation/4242/cancel",
            &app.member_key,
            &json!({}),
        )
        .await,
        404,
        "not_found",
    );
    let stopped = app
        .get(
            "/app/api/v1/investigation?stopped_reasons=CANCEL_MANUAL",
            &app.reader_key,
        )
        .await;
    assert_eq!(stopped.json["count"], 1);
    shapes::assert_page(&stopped.json);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bursts_above_the_threshold_are_stopped_and_stories_coalesce() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(app) = TestApp::start_with(backend, |settings| {
            settings.guards.burst_threshold = 3;
            settings.guards.coalesce_window_seconds = 3600;
        })
        .await
        else {
            continue;
        };
        let mut ids = Vec::new();
        for index in 0..5 {
            ids.push(
                app.create(&json!({"title": format!("flood {index}")}))
                    .await,
            );
        }
        app.drain().await;
        let stopped = app
            .get(
                "/app/api/v1/investigation?stopped_reasons=CANCEL_THRESHOLD",
                &app.reader_key,
            )
            .await;
        let stopped_ids: Vec<i64> = stopped.json["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["id"].as_i64().unwrap())
            .collect();
        assert_eq!(
            stopped_ids,
            vec![ids[4], ids[3]],
            "{backend:?}: the 4th and 5th alert exceed 3"
        );
        let read = app
            .get(
                &format!("/app/api/v1/investigation/{}", ids[4]),
                &app.reader_key,
            )
            .await;
        assert_eq!(read.json["status"], "error");
        assert!(
            read.json["error_msg"]
                .as_str()
                .unwrap()
                .contains("burst threshold")
        );
        let succeeded = app.get("/app/api/v1/investigation", &app.reader_key).await;
        assert_eq!(succeeded.json["count"], 3);
    }
}

/// A story (alerts sharing a coalesce key, here a Falcon aggregate id) is investigated
/// once: every later alert of it inside the window is coalesced into its first
/// investigation, also after other alerts of the story were coalesced already, and an
/// alert of another story is investigated on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn later_alerts_of_a_story_coalesce_into_its_first_investigation() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let Some(app) = TestApp::start_coalescing(backend).await else {
            continue;
        };
        let falcon = |index: usize, story: &str| {
            json!({
                "composite_id": format!("cid:ind:{story}-{index}"),
                "aggregate_id": story,
                "name": "CredentialDumping",
                "display_name": format!("Credential dumping {index}"),
                "device": {"hostname": format!("WKS-{index:04}")},
            })
        };
        let first = app.create(&falcon(0, "story-a")).await;
        app.drain().await;
        let mut later = Vec::new();
        for index in 1..4 {
            later.push(app.create(&falcon(index, "story-a")).await);
        }
        app.drain().await;
        // After the others were coalesced: still into the first, not into one of them.
        later.push(app.create(&falcon(4, "story-a")).await);
        let other_story = app.create(&falcon(5, "story-b")).await;
        app.drain().await;

        let read = |id: i64| {
            let app = &app;
            async move {
                app.get(&format!("/app/api/v1/investigation/{id}"), &app.reader_key)
                    .await
                    .json
            }
        };
        assert_ne!(read(first).await["outcome"], "IGNORED", "{backend:?}");
        assert_ne!(read(other_story).await["outcome"], "IGNORED", "{backend:?}");
        for id in later {
            let investigation = read(id).await;
            assert_eq!(
                investigation["outcome"], "IGNORED",
                "{backend:?}: {investigation}"
            );
            assert!(
                investigation
                    .to_string()
                    .contains(&format!("\"first_investigation_id\":{first}")),
                "{backend:?}: {id} names {first} as the story's first: {investigation}"
            );
        }
    }
}
