//! The analyst's side over HTTP, on both backends: notes (who may write, change and delete
//! them; bounds; search), feedback and review (bounds, roles, only on concluded
//! investigations, the `feedback_updated` filters), feedback that teaches later
//! investigations, and the response actions these events fire.

use std::time::Duration;

use serde_json::{Value, json};
use sleuth_jobs::trigger_catalog::{self, trigger_uuid};

use crate::harness::{Answer, TestApp, assert_error};
use crate::{on_both_backends, shapes};

on_both_backends!(
    notes_are_written_by_members_and_changed_only_by_their_author_or_an_admin,
    notes_refuse_bad_text_and_unknown_ids_and_change_nothing,
    notes_are_found_by_the_list_search,
    feedback_is_read_by_readers_and_given_by_members_once_concluded,
    feedback_refuses_bad_input_and_changes_nothing,
    feedback_updated_filters_find_the_latest_change,
    an_analysts_false_alert_teaches_the_next_alert_of_the_same_detection,
    an_analysts_confirmed_breach_makes_a_related_alert_urgent,
);

/// Defines each listed test once per backend, on an app with a strict sandbox, so that
/// the scripts the events fire really run.
macro_rules! with_sandbox_on_both_backends {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    if let Some(app) = crate::response_actions::start(crate::harness::Backend::Sqlite, |_| {}).await {
                        super::$name(app).await;
                    }
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if let Some(app) = crate::response_actions::start(crate::harness::Backend::Postgres, |_| {}).await {
                        super::$name(app).await;
                    }
                }
            }
        )+
    };
}

pub(crate) use with_sandbox_on_both_backends;

with_sandbox_on_both_backends!(notes_and_feedback_fire_their_triggers);

const NOTES: &str = "/app/api/v1/investigation-user-notes";

fn feedback_path(investigation_id: impl std::fmt::Display) -> String {
    format!("/app/api/v1/investigation/{investigation_id}/feedback")
}

async fn delete(app: &TestApp, path: &str, key: &str) -> Answer {
    app.raw("DELETE", path, Some(key), None, None).await
}

async fn add_note(app: &TestApp, investigation_id: i64, key: &str, text: &str) -> Answer {
    app.post(
        &format!("{NOTES}/{investigation_id}/create"),
        key,
        &json!({"text": text}),
    )
    .await
}

/// A second member, made through the users and keys API; returns their key.
pub(crate) async fn another_member(app: &TestApp, email: &str) -> String {
    let user = app
        .post(
            "/app/api/v1/users",
            &app.admin_key,
            &json!({"email": email, "role": "member", "first_name": "Other", "last_name": "Analyst"}),
        )
        .await;
    assert_eq!(user.status, 201, "{}", user.text);
    let key = app
        .post(
            "/app/api/v1/api-keys",
            &app.admin_key,
            &json!({"user_id": user.json["id"], "name": "second member"}),
        )
        .await;
    assert_eq!(key.status, 201, "{}", key.text);
    key.json["key"].as_str().unwrap().to_string()
}

async fn notes(app: &TestApp, investigation_id: i64) -> Vec<Value> {
    let answer = app
        .get(&format!("{NOTES}/{investigation_id}/list"), &app.reader_key)
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let notes = answer.json.as_array().expect("an array").clone();
    notes.iter().for_each(shapes::assert_note);
    notes
}

async fn notes_are_written_by_members_and_changed_only_by_their_author_or_an_admin(app: TestApp) {
    let investigation_id = app.create(&json!({"title": "Notes please"})).await;
    let other_key = another_member(&app, "other@example.com").await;

    assert_error(
        &add_note(&app, investigation_id, &app.reader_key, "readers only read").await,
        403,
        "access_denied",
    );
    let created = add_note(&app, investigation_id, &app.member_key, "Called r.patel").await;
    assert_eq!(created.status, 200, "{}", created.text);
    shapes::assert_note(&created.json);
    assert_eq!(created.json["investigation"], investigation_id);
    assert_eq!(created.json["text"], "Called r.patel");
    assert_eq!(created.json["user"]["email"], "member@example.com");
    assert_eq!(created.json["user"]["role"], "member");
    let member_note = created.json["id"].as_i64().unwrap();
    let by_admin = add_note(&app, investigation_id, &app.admin_key, "Escalated").await;
    assert_eq!(by_admin.status, 200, "{}", by_admin.text);
    let admin_note = by_admin.json["id"].as_i64().unwrap();

    // Readers list them, oldest first; listing with no key is refused.
    let listed = notes(&app, investigation_id).await;
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0], created.json);
    assert_eq!(listed[1]["id"], admin_note);
    let anonymous = app
        .raw(
            "GET",
            &format!("{NOTES}/{investigation_id}/list"),
            None,
            None,
            None,
        )
        .await;
    assert_error(&anonymous, 401, "unauthorized");

    // Changing: the author or an admin; another member or a reader may not.
    let update = |note_id: i64| format!("{NOTES}/{note_id}/update");
    let body = json!({"text": "Called r.patel: it was him"});
    assert_error(
        &app.patch(&update(member_note), &other_key, &body).await,
        403,
        "access_denied",
    );
    assert_error(
        &app.patch(&update(member_note), &app.reader_key, &body)
            .await,
        403,
        "access_denied",
    );
    assert_error(
        &app.patch(&update(admin_note), &app.member_key, &body).await,
        403,
        "access_denied",
    );
    let changed = app
        .patch(&update(member_note), &app.member_key, &body)
        .await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    shapes::assert_note(&changed.json);
    assert_eq!(changed.json["text"], "Called r.patel: it was him");
    assert_eq!(changed.json["created_at"], created.json["created_at"]);
    assert_eq!(
        changed.json["user"]["email"], "member@example.com",
        "the author stays"
    );
    let by_admin = app
        .patch(
            &update(member_note),
            &app.admin_key,
            &json!({"text": "Edited by admin"}),
        )
        .await;
    assert_eq!(by_admin.status, 200, "{}", by_admin.text);
    assert_eq!(by_admin.json["user"]["email"], "member@example.com");

    // Deleting: the same people; 200 with no body; gone afterwards.
    let remove = |note_id: i64| format!("{NOTES}/{note_id}/delete");
    assert_error(
        &delete(&app, &remove(member_note), &other_key).await,
        403,
        "access_denied",
    );
    assert_error(
        &delete(&app, &remove(member_note), &app.reader_key).await,
        403,
        "access_denied",
    );
    let deleted = delete(&app, &remove(member_note), &app.member_key).await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    assert!(deleted.text.is_empty(), "no body: {}", deleted.text);
    assert_error(
        &delete(&app, &remove(member_note), &app.member_key).await,
        404,
        "not_found",
    );
    let other_note = add_note(&app, investigation_id, &other_key, "mine").await;
    let other_note = other_note.json["id"].as_i64().unwrap();
    let deleted = delete(&app, &remove(other_note), &app.admin_key).await;
    assert_eq!(deleted.status, 200, "an admin deletes anyone's note");
    let left: Vec<i64> = notes(&app, investigation_id)
        .await
        .iter()
        .map(|note| note["id"].as_i64().unwrap())
        .collect();
    assert_eq!(left, [admin_note]);
}

async fn notes_refuse_bad_text_and_unknown_ids_and_change_nothing(app: TestApp) {
    let investigation_id = app.create(&json!({"title": "Bounds"})).await;
    let create = format!("{NOTES}/{investigation_id}/create");
    let at_limit = "é".repeat(10_000);
    let created = app
        .post(&create, &app.member_key, &json!({"text": at_limit}))
        .await;
    assert_eq!(created.status, 200, "10000 characters is the limit");
    assert_eq!(
        created.json["text"].as_str().unwrap().chars().count(),
        10_000
    );
    let note_id = created.json["id"].as_i64().unwrap();
    let update = format!("{NOTES}/{note_id}/update");

    let over = "a".repeat(10_001);
    for (body, field) in [
        (json!({"text": over}), Some("text")),
        (json!({"text": ""}), Some("text")),
        (json!({"text": "  \n "}), Some("text")),
        (json!({"text": "nul \u{0} inside"}), Some("text")),
        (json!({}), Some("text")),
        (json!({"text": null}), Some("text")),
        (json!({"text": 5}), None),
        (json!({"text": "x", "author": 1}), None),
        (json!(["text"]), None),
    ] {
        for (method, path) in [("POST", &create), ("PATCH", &update)] {
            let answer = app
                .raw(
                    method,
                    path,
                    Some(&app.member_key),
                    Some("application/json"),
                    Some(body.to_string().into_bytes()),
                )
                .await;
            assert_error(&answer, 400, "bad_request");
            if let Some(field) = field {
                assert!(answer.json["errors"][field].is_array(), "{}", answer.text);
            }
        }
    }
    let malformed = app
        .raw(
            "POST",
            &create,
            Some(&app.member_key),
            Some("application/json"),
            Some(b"{\"text\": ".to_vec()),
        )
        .await;
    assert_error(&malformed, 400, "bad_request");
    let listed = notes(&app, investigation_id).await;
    assert_eq!(listed.len(), 1, "nothing refused was stored");
    assert_eq!(listed[0]["text"].as_str().unwrap().chars().count(), 10_000);

    // Unknown and non-numeric ids are 404s, for every endpoint.
    let body = json!({"text": "x"});
    for id in ["999999", "abc", "0", "-1", "1.5"] {
        assert_error(
            &app.post(&format!("{NOTES}/{id}/create"), &app.member_key, &body)
                .await,
            404,
            "not_found",
        );
        assert_error(
            &app.get(&format!("{NOTES}/{id}/list"), &app.reader_key)
                .await,
            404,
            "not_found",
        );
        assert_error(
            &app.patch(&format!("{NOTES}/{id}/update"), &app.member_key, &body)
                .await,
            404,
            "not_found",
        );
        assert_error(
            &delete(&app, &format!("{NOTES}/{id}/delete"), &app.member_key).await,
            404,
            "not_found",
        );
    }
}

async fn notes_are_found_by_the_list_search(app: TestApp) {
    let noted = app.create(&json!({"title": "Beacon to rare domain"})).await;
    let other = app.create(&json!({"title": "Beacon elsewhere"})).await;
    let search = |words: &str| {
        format!("/app/api/v1/investigation?search={words}&investigation_state=success")
    };
    let found = |answer: &Answer| -> Vec<i64> {
        assert_eq!(answer.status, 200, "{}", answer.text);
        answer.json["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| item["id"].as_i64().unwrap())
            .collect()
    };
    // Written while queued, the note stays searchable once the conclusion is indexed.
    let note = add_note(
        &app,
        noted,
        &app.member_key,
        "Checked with the Zanzibar office",
    )
    .await;
    assert_eq!(app.drain().await, 2);
    assert_eq!(
        found(&app.get(&search("zanzibar"), &app.reader_key).await),
        [noted]
    );
    assert_eq!(
        found(&app.get(&search("beacon"), &app.reader_key).await).len(),
        2
    );
    let note_id = note.json["id"].as_i64().unwrap();
    let changed = app
        .patch(
            &format!("{NOTES}/{note_id}/update"),
            &app.member_key,
            &json!({"text": "Checked with the Timbuktu office"}),
        )
        .await;
    assert_eq!(changed.status, 200);
    assert!(
        found(&app.get(&search("zanzibar"), &app.reader_key).await).is_empty(),
        "the old words are gone"
    );
    assert_eq!(
        found(&app.get(&search("timbuktu"), &app.reader_key).await),
        [noted]
    );
    let deleted = delete(&app, &format!("{NOTES}/{note_id}/delete"), &app.member_key).await;
    assert_eq!(deleted.status, 200);
    assert!(found(&app.get(&search("timbuktu"), &app.reader_key).await).is_empty());
    assert_eq!(
        found(&app.get(&search("beacon"), &app.reader_key).await).len(),
        2,
        "{other} and the alert's own words stay"
    );
}

async fn feedback_is_read_by_readers_and_given_by_members_once_concluded(app: TestApp) {
    let investigation_id = app
        .create(&json!({"title": "Review me", "host": "WKS-0231"}))
        .await;
    let path = feedback_path(investigation_id);
    let change = json!({"outcome": "COMPLETED_FALSE_ALERT"});

    // Before the conclusion: readable, but there is nothing to give feedback on.
    let early = app.get(&path, &app.reader_key).await;
    assert_eq!(early.status, 200, "{}", early.text);
    shapes::assert_feedback(&early.json);
    assert_eq!(early.json["status"], "in_review");
    let refused = app.patch(&path, &app.member_key, &change).await;
    assert_error(&refused, 400, "bad_request");
    assert!(
        refused.json["error_msg"]
            .as_str()
            .unwrap()
            .contains("not concluded"),
        "{}",
        refused.text
    );

    assert_eq!(app.drain().await, 1);
    let concluded = app.get(&path, &app.reader_key).await;
    assert_eq!(concluded.status, 200);
    shapes::assert_feedback(&concluded.json);
    assert_eq!(concluded.json["id"], investigation_id);
    assert_eq!(concluded.json["status"], "in_review");
    let engine = app
        .get(
            &format!("/app/api/v1/investigation/{investigation_id}"),
            &app.reader_key,
        )
        .await;
    assert_eq!(
        concluded.json["outcome"], engine.json["outcome"],
        "Sleuth's verdict until an analyst speaks"
    );

    // Roles: readers read, members and admins write.
    assert_error(
        &app.patch(&path, &app.reader_key, &change).await,
        403,
        "access_denied",
    );
    assert_error(
        &app.raw(
            "PATCH",
            &path,
            None,
            Some("application/json"),
            Some(b"{}".to_vec()),
        )
        .await,
        401,
        "unauthorized",
    );
    let body = json!({
        "outcome": "COMPLETED_FALSE_ALERT",
        "priority": "informational",
        "outcome_note": "The admin's own scheduled task.",
        "remediations_done": {"ticket": "SOC-1", "steps": ["closed"]},
        "status": "reviewed",
    });
    let given = app.patch(&path, &app.member_key, &body).await;
    assert_eq!(given.status, 200, "{}", given.text);
    shapes::assert_feedback(&given.json);
    for field in [
        "outcome",
        "priority",
        "outcome_note",
        "remediations_done",
        "status",
    ] {
        assert_eq!(given.json[field], body[field], "{field}");
    }
    assert_eq!(given.json["created_at"], concluded.json["created_at"]);
    assert_ne!(given.json["updated_at"], concluded.json["updated_at"]);
    assert_eq!(given.json["conclusion"], concluded.json["conclusion"]);
    assert_eq!(app.get(&path, &app.reader_key).await.json, given.json);

    // The list item carries the same feedback; Sleuth's own verdict is unchanged.
    let page = app.get("/app/api/v1/investigation", &app.reader_key).await;
    shapes::assert_page(&page.json);
    assert_eq!(page.json["results"][0]["feedback"], given.json);
    assert_eq!(page.json["results"][0]["outcome"], engine.json["outcome"]);

    // A subset changes only itself; null clears the note; the review can be reopened, by
    // an admin too.
    let reopened = app
        .patch(
            &path,
            &app.admin_key,
            &json!({"status": "in_review", "outcome_note": null}),
        )
        .await;
    assert_eq!(reopened.status, 200, "{}", reopened.text);
    assert_eq!(reopened.json["status"], "in_review");
    assert_eq!(reopened.json["outcome_note"], Value::Null);
    assert_eq!(reopened.json["outcome"], "COMPLETED_FALSE_ALERT");
    assert_eq!(
        reopened.json["remediations_done"],
        body["remediations_done"]
    );

    // A stopped investigation has no verdict either.
    let stopped = app.create(&json!({"title": "Stop me"})).await;
    let cancel = app
        .post(
            &format!("/app/api/v1/investigation/{stopped}/cancel"),
            &app.member_key,
            &json!({}),
        )
        .await;
    assert_eq!(cancel.status, 200, "{}", cancel.text);
    let refused = app
        .patch(&feedback_path(stopped), &app.member_key, &change)
        .await;
    assert_error(&refused, 400, "bad_request");
    assert!(
        refused.json["error_msg"]
            .as_str()
            .unwrap()
            .contains("stopped without a conclusion"),
        "{}",
        refused.text
    );
}

async fn feedback_refuses_bad_input_and_changes_nothing(app: TestApp) {
    let investigation_id = app.create(&json!({"title": "Bounds of feedback"})).await;
    app.drain().await;
    let path = feedback_path(investigation_id);
    let before = app.get(&path, &app.reader_key).await.json;

    let too_long = "n".repeat(5_001);
    let too_big = json!({"log": "x".repeat(70_000)});
    for (body, field, mentions) in [
        (json!({}), None, "nothing to change"),
        (json!({"verdict": "benign"}), None, "unknown field"),
        (
            json!({"outcome": "BENIGN"}),
            Some("outcome"),
            "COMPLETED_FALSE_ALERT",
        ),
        (
            json!({"outcome": null}),
            Some("outcome"),
            "COMPLETED_BREACHED_CONFIRMED",
        ),
        (json!({"outcome": 3}), Some("outcome"), "IGNORED"),
        (
            json!({"priority": "high"}),
            Some("priority"),
            "informational, notable, urgent",
        ),
        (
            json!({"status": "done"}),
            Some("status"),
            "in_review, reviewed",
        ),
        (
            json!({"outcome_note": too_long}),
            Some("outcome_note"),
            "5000",
        ),
        (json!({"outcome_note": 7}), Some("outcome_note"), "string"),
        (
            json!({"outcome_note": "a\u{0}b"}),
            Some("outcome_note"),
            "NUL",
        ),
        (
            json!({"remediations_done": ["isolated"]}),
            Some("remediations_done"),
            "object",
        ),
        (
            json!({"remediations_done": too_big}),
            Some("remediations_done"),
            "65536",
        ),
        // One bad field refuses the whole change.
        (
            json!({"outcome": "COMPLETED_FALSE_ALERT", "priority": "urgentest"}),
            Some("priority"),
            "urgent",
        ),
    ] {
        let answer = app.patch(&path, &app.member_key, &body).await;
        assert_error(&answer, 400, "bad_request");
        let message = answer.json["error_msg"].as_str().unwrap();
        assert!(message.contains(mentions), "{body}: {message}");
        if let Some(field) = field {
            assert!(answer.json["errors"][field].is_array(), "{}", answer.text);
        }
    }
    assert_eq!(
        app.get(&path, &app.reader_key).await.json,
        before,
        "nothing changed"
    );

    let at_limit = "n".repeat(5_000);
    let answer = app
        .patch(&path, &app.member_key, &json!({"outcome_note": at_limit}))
        .await;
    assert_eq!(answer.status, 200, "5000 characters is the limit");
    assert_eq!(answer.json["outcome_note"].as_str().unwrap().len(), 5_000);

    for id in ["999999", "abc", "0"] {
        assert_error(
            &app.get(&feedback_path(id), &app.reader_key).await,
            404,
            "not_found",
        );
        assert_error(
            &app.patch(
                &feedback_path(id),
                &app.member_key,
                &json!({"status": "reviewed"}),
            )
            .await,
            404,
            "not_found",
        );
    }
}

async fn feedback_updated_filters_find_the_latest_change(app: TestApp) {
    let reviewed = app.create(&json!({"title": "Reviewed one"})).await;
    let untouched = app.create(&json!({"title": "Untouched one"})).await;
    assert_eq!(app.drain().await, 2);
    let given = app
        .patch(
            &feedback_path(reviewed),
            &app.member_key,
            &json!({"status": "reviewed"}),
        )
        .await;
    assert_eq!(given.status, 200, "{}", given.text);
    let updated_at: chrono::DateTime<chrono::Utc> =
        given.json["updated_at"].as_str().unwrap().parse().unwrap();
    let at = |time: chrono::DateTime<chrono::Utc>| {
        time.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
    };
    let listed = |query: String| {
        let app = &app;
        async move {
            let answer = app
                .get(
                    &format!("/app/api/v1/investigation?{query}"),
                    &app.reader_key,
                )
                .await;
            assert_eq!(answer.status, 200, "{}", answer.text);
            answer.json["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|item| item["id"].as_i64().unwrap())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        listed(format!("feedback_updated_from={}", at(updated_at))).await,
        [reviewed]
    );
    assert_eq!(
        listed(format!(
            "feedback_updated_until={}",
            at(updated_at - chrono::Duration::microseconds(1))
        ))
        .await,
        [untouched],
        "the untouched feedback dates from its conclusion, before the review"
    );
    assert_eq!(
        listed(format!(
            "feedback_updated_from={}&feedback_updated_until={}",
            at(updated_at),
            at(updated_at)
        ))
        .await,
        [reviewed],
        "both ends are inclusive"
    );
    assert_error(
        &app.get(
            "/app/api/v1/investigation?feedback_updated_from=yesterday",
            &app.reader_key,
        )
        .await,
        400,
        "bad_request",
    );
}

/// The investigation once concluded (single-read shape).
async fn read(app: &TestApp, investigation_id: i64) -> Value {
    let answer = app
        .get(
            &format!("/app/api/v1/investigation/{investigation_id}"),
            &app.reader_key,
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json["status"], "success", "{}", answer.text);
    answer.json
}

/// The `analyst_feedback` evidence citing `cited`, if a finding carries one.
fn feedback_evidence(investigation: &Value, cited: i64) -> Option<Value> {
    investigation["findings"]
        .as_array()?
        .iter()
        .flat_map(|finding| finding["evidences"].as_array().cloned().unwrap_or_default())
        .find(|evidence| {
            evidence["evidence_type"] == "analyst_feedback"
                && evidence["data"]["investigation_id"] == cited
        })
}

async fn an_analysts_false_alert_teaches_the_next_alert_of_the_same_detection(app: TestApp) {
    let alert = |alert_id: &str| {
        json!({
            "title": "Encoded PowerShell command line",
            "alert_id": alert_id,
            "severity": "high",
            "host": "WKS-0231",
            "user": "r.patel",
            "process": "powershell.exe",
            "command_line": "powershell.exe -enc SQBFAFgAIAAoAE4AZQB3AC0ATwBiAGoAZQBjAHQAIABOAGUAdAAuAFcAZQBiAEMAbABpAGUAbgB0ACkA",
        })
    };
    let first = app.create(&alert("A-1")).await;
    assert_eq!(app.drain().await, 1);
    let first_verdict = read(&app, first).await;
    assert_ne!(
        first_verdict["outcome"], "COMPLETED_FALSE_ALERT",
        "Sleuth alone does not dismiss it: {}",
        first_verdict["conclusion"]
    );
    let given = app
        .patch(
            &feedback_path(first),
            &app.member_key,
            &json!({
                "outcome": "COMPLETED_FALSE_ALERT",
                "status": "reviewed",
                "outcome_note": "IT's inventory script; approved in CHG-1042.",
            }),
        )
        .await;
    assert_eq!(given.status, 200, "{}", given.text);

    // The same detection on the same entities again: a new alert, not a duplicate.
    let second = app.create(&alert("A-2")).await;
    assert_ne!(second, first);
    assert_eq!(app.drain().await, 1);
    let second_verdict = read(&app, second).await;
    assert_eq!(
        second_verdict["outcome"], "COMPLETED_FALSE_ALERT",
        "{}",
        second_verdict["conclusion"]
    );
    let evidence = feedback_evidence(&second_verdict, first)
        .unwrap_or_else(|| panic!("a finding cites investigation {first}: {second_verdict}"));
    assert_eq!(evidence["data"]["analyst_outcome"], "COMPLETED_FALSE_ALERT");
    assert_eq!(evidence["data"]["reviewed"], true);
    assert_eq!(
        evidence["data"]["note"],
        "IT's inventory script; approved in CHG-1042."
    );
    assert_eq!(evidence["data"]["likeness"], "same_detection_same_entities");
}

async fn an_analysts_confirmed_breach_makes_a_related_alert_urgent(app: TestApp) {
    let first = app
        .create(&json!({
            "title": "Unusual sign-in location",
            "alert_id": "B-1",
            "user": "r.patel",
            "src_ip": "198.51.100.23",
        }))
        .await;
    assert_eq!(app.drain().await, 1);
    let given = app
        .patch(
            &feedback_path(first),
            &app.member_key,
            &json!({"outcome": "COMPLETED_BREACHED_CONFIRMED", "priority": "urgent", "status": "reviewed"}),
        )
        .await;
    assert_eq!(given.status, 200, "{}", given.text);

    // Another detection, later, on the same user.
    let second = app
        .create(&json!({
            "title": "New inbox forwarding rule",
            "alert_id": "B-2",
            "user": "r.patel",
            "severity": "low",
        }))
        .await;
    assert_eq!(app.drain().await, 1);
    let verdict = read(&app, second).await;
    assert!(
        verdict["outcome"] == "COMPLETED_BREACHED_SUSPICIOUS"
            || verdict["outcome"] == "COMPLETED_BREACHED_CONFIRMED",
        "{}",
        verdict["conclusion"]
    );
    assert_eq!(verdict["priority"], "urgent", "{}", verdict["conclusion"]);
    let evidence = feedback_evidence(&verdict, first)
        .unwrap_or_else(|| panic!("a finding cites investigation {first}: {verdict}"));
    assert_eq!(
        evidence["data"]["analyst_outcome"],
        "COMPLETED_BREACHED_CONFIRMED"
    );
    assert_eq!(evidence["data"]["likeness"], "shared_entities");
}

/// Creates a script tied to `trigger` whose output shows what it was given.
async fn script_on(app: &TestApp, trigger: &str, code: &str) -> i64 {
    let body = json!({
        "display_name": format!("on {trigger}"),
        "trigger_def_uuid": trigger_uuid(trigger).to_string(),
        "code": code,
    });
    let answer = app
        .post("/app/api/v1/response-actions", &app.admin_key, &body)
        .await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    answer.json["id"].as_i64().unwrap()
}

/// The script's runs once `count` have ended. Firing is asynchronous by design (it never
/// delays the request), so this polls, boundedly.
pub(crate) async fn ended_runs(app: &TestApp, script_id: i64, count: usize) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let answer = app
            .get(
                &format!("/app/api/v1/response-actions/{script_id}/runs"),
                &app.admin_key,
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        let runs = answer.json.as_array().unwrap().clone();
        if runs.len() >= count && runs.iter().all(|run| run["status"] != "running") {
            assert_eq!(runs.len(), count, "exactly {count} runs: {runs:?}");
            return runs;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "runs did not end in 30 s: {runs:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn notes_and_feedback_fire_their_triggers(app: TestApp) {
    let code = "print(investigation['id'], alert['title'], sorted(trigger_args))";
    let on_note = script_on(&app, trigger_catalog::NOTE_ADDED, code).await;
    let on_feedback = script_on(&app, trigger_catalog::FEEDBACK_APPLIED, code).await;
    let on_review = script_on(&app, trigger_catalog::REVIEW_COMPLETED, code).await;

    let investigation_id = app.create(&json!({"title": "Fire on review"})).await;
    assert_eq!(app.drain().await, 1);
    let note = add_note(&app, investigation_id, &app.member_key, "first look").await;
    assert_eq!(note.status, 200);
    let runs = ended_runs(&app, on_note, 1).await;
    assert_eq!(runs[0]["status"], "success", "{}", runs[0]);
    assert_eq!(
        runs[0]["stdout"],
        format!(
            "{investigation_id} Fire on review ['investigation_id', 'note_id', 'text', 'user_id']\n"
        )
    );
    let args = &runs[0]["trigger_run"]["trigger_args"];
    assert_eq!(args["note_id"], note.json["id"]);
    assert_eq!(args["text"], "first look");
    assert_eq!(args["user_id"], note.json["user"]["id"]);

    // Feedback fires on every change; the review completes once, when it becomes reviewed.
    let path = feedback_path(investigation_id);
    for body in [
        json!({"priority": "notable"}),
        json!({"status": "reviewed", "outcome": "COMPLETED_FALSE_ALERT", "outcome_note": "known"}),
        json!({"remediations_done": {"ticket": "SOC-2"}}),
    ] {
        let answer = app.patch(&path, &app.member_key, &body).await;
        assert_eq!(answer.status, 200, "{}", answer.text);
    }
    let feedback_runs = ended_runs(&app, on_feedback, 3).await;
    assert!(feedback_runs.iter().all(|run| run["status"] == "success"));
    let review_runs = ended_runs(&app, on_review, 1).await;
    assert_eq!(
        review_runs[0]["stdout"],
        format!(
            "{investigation_id} Fire on review ['investigation_id', 'outcome', 'outcome_note', 'priority', 'user_id']\n"
        )
    );
    let args = &review_runs[0]["trigger_run"]["trigger_args"];
    assert_eq!(args["investigation_id"], investigation_id);
    assert_eq!(args["outcome"], "COMPLETED_FALSE_ALERT");
    assert_eq!(args["priority"], "notable");
    assert_eq!(args["outcome_note"], "known");

    // Reopening and reviewing again completes another review; notes still fire.
    for status in ["in_review", "reviewed"] {
        let answer = app
            .patch(&path, &app.member_key, &json!({"status": status}))
            .await;
        assert_eq!(answer.status, 200);
    }
    ended_runs(&app, on_review, 2).await;
    ended_runs(&app, on_feedback, 5).await;
    // The runs show on the investigation's list item.
    let page = app.get("/app/api/v1/investigation", &app.reader_key).await;
    let names: Vec<&str> = page.json["results"][0]["remediation_action_runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["remediation_action"]["name"].as_str().unwrap())
        .collect();
    for trigger in ["note_added", "feedback_applied", "review_completed"] {
        assert!(
            names.contains(&format!("on {trigger}").as_str()),
            "{names:?}"
        );
    }
}
