//! Response actions over HTTP, on both backends, with the real `/usr/bin/python3` in a
//! strict sandbox: every endpoint and every error SPEC names, versions, archiving,
//! test-runs, manual runs, secrets, and scripts fired by a finished investigation.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use sleuth_jobs::Settings;
use sleuth_jobs::trigger_catalog::{self, trigger_uuid};
use sleuth_sandbox::Sandbox;

use crate::harness::{Answer, Backend, TestApp, assert_error};
use crate::shapes;

const ACTIONS: &str = "/app/api/v1/response-actions";

/// Defines each listed test once per backend, on an app whose sandbox is strict with small
/// limits (one second of wall clock and CPU).
macro_rules! with_sandbox_on_both_backends {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    if let Some(app) = super::start(crate::harness::Backend::Sqlite, |_| {}).await {
                        super::$name(app).await;
                    }
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if let Some(app) = super::start(crate::harness::Backend::Postgres, |_| {}).await {
                        super::$name(app).await;
                    }
                }
            }
        )+
    };
}

with_sandbox_on_both_backends!(
    response_actions_are_for_admins_only,
    triggers_form_a_truthful_tree,
    creating_listing_reading_and_updating_make_versions,
    bad_input_is_refused_and_changes_nothing,
    archiving_hides_refuses_updates_and_keeps_what_runs_refer_to,
    test_runs_report_success_failure_and_timeouts,
    a_finished_investigation_fires_its_scripts_once,
    a_bound_admin_reads_the_runs_of_its_unions_investigations_only,
    manual_runs_take_only_runnable_triggers,
    secrets_are_write_only_and_reach_scripts,
    secrets_are_sealed_at_rest_and_reach_only_the_actions_that_name_them,
    without_the_key_secrets_are_not_ready_and_nothing_crashes,
    runs_interrupted_by_a_restart_end_in_error,
    readiness_shows_the_sandbox,
    a_script_allowed_the_network_reaches_none_of_the_hosts_services,
);

crate::on_both_backends!(scripts_answer_503_without_a_sandbox);

static NEXT_UID_RANGE: AtomicU32 = AtomicU32::new(0);

/// An app whose strict sandbox uses its own uids, so tests side by side never share a slot.
pub(crate) async fn start(
    backend: Backend,
    configure: impl FnOnce(&mut Settings),
) -> Option<TestApp> {
    let range = NEXT_UID_RANGE.fetch_add(1, Ordering::Relaxed);
    let app = TestApp::start_with(backend, |settings| {
        let sandbox = &mut settings.sandbox;
        sandbox.wall_clock_seconds = 1;
        sandbox.cpu_seconds = 1;
        sandbox.memory_mb = 256;
        sandbox.max_processes = 32;
        sandbox.slots = 2;
        sandbox.queue_timeout_seconds = 30;
        // Far from the sandbox crate's own test range and from any real user.
        sandbox.uid_base = 2_200_000_000 + (std::process::id() % 100_000) * 1_000 + range * 10;
        sandbox.work_root = std::env::temp_dir().join("sleuth-server-sandbox-tests");
        configure(settings);
    })
    .await?;
    let config = app.state.settings().sandbox.sandbox_config(
        env!("CARGO_BIN_EXE_sleuth-server-sandbox-exec").into(),
        Vec::new(),
    );
    let sandbox = tokio::task::spawn_blocking(move || Sandbox::probe(config))
        .await
        .expect("probe");
    app.state.set_sandbox(sandbox);
    Some(app)
}

fn path(suffix: &str) -> String {
    format!("{ACTIONS}{suffix}")
}

fn uuid_of(fn_name: &str) -> String {
    trigger_uuid(fn_name).to_string()
}

async fn delete(app: &TestApp, path: &str, key: &str) -> Answer {
    app.raw("DELETE", path, Some(key), None, None).await
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

/// Creates a script via the API and returns its id.
async fn create_script(app: &TestApp, name: &str, trigger: &str, code: &str) -> i64 {
    let body = json!({"display_name": name, "trigger_def_uuid": uuid_of(trigger), "code": code});
    let answer = app.post(ACTIONS, &app.admin_key, &body).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    answer.json["id"].as_i64().expect("an id")
}

async fn details(app: &TestApp, script_id: i64) -> Value {
    let answer = app
        .get(&path(&format!("/{script_id}")), &app.admin_key)
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_details(&answer.json);
    answer.json
}

async fn runs(app: &TestApp, script_id: i64) -> Vec<Value> {
    let answer = app
        .get(&path(&format!("/{script_id}/runs")), &app.admin_key)
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let runs = answer.json.as_array().expect("an array").clone();
    runs.iter().for_each(assert_run);
    runs
}

/// Waits until the script has `count` runs and none is still running. Firing is
/// asynchronous by design (runs never delay an investigation), so this polls, boundedly.
async fn ended_runs(app: &TestApp, script_id: i64, count: usize) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let runs = runs(app, script_id).await;
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

async fn test_run(app: &TestApp, code: &str, trigger_args: Value) -> Answer {
    let body = json!({"script_code": code, "trigger_args": trigger_args});
    app.post(&path("/test"), &app.admin_key, &body).await
}

// --- Shapes: exactly SPEC's fields -------------------------------------------------------

fn keys(value: &Value, expected: &[&str], context: &str) {
    let object = value
        .as_object()
        .unwrap_or_else(|| panic!("{context}: not an object: {value}"));
    let mut actual: Vec<&str> = object.keys().map(String::as_str).collect();
    actual.sort_unstable();
    let mut expected = expected.to_vec();
    expected.sort_unstable();
    assert_eq!(
        actual, expected,
        "{context}: the fields must be exactly SPEC's"
    );
    for time in ["created_at", "updated_at"] {
        if let Some(text) = object.get(time) {
            let text = text.as_str().unwrap_or_default();
            assert!(
                chrono::DateTime::parse_from_rfc3339(text).is_ok(),
                "{context}.{time}: {text}"
            );
        }
    }
}

fn assert_trigger(value: &Value) {
    keys(
        value,
        &[
            "uuid",
            "created_at",
            "updated_at",
            "display_index",
            "is_archived",
            "is_runnable",
            "is_scriptable",
            "parent",
            "script_var_names",
            "trigger_arg_names",
            "trigger_display_name",
            "trigger_fn_name",
            "trigger_tree_labels",
        ],
        "trigger definition",
    );
    assert!(uuid::Uuid::parse_str(value["uuid"].as_str().unwrap()).is_ok());
    assert!(value["parent"].is_null() || value["parent"].is_string());
    assert!(value["display_index"].is_i64());
    for list in [
        "script_var_names",
        "trigger_arg_names",
        "trigger_tree_labels",
    ] {
        assert!(value[list].as_array().unwrap().iter().all(Value::is_string));
    }
}

const SCRIPT_FIELDS: &[&str] = &[
    "id",
    "display_name",
    "is_archived",
    "is_enabled",
    "created_at",
    "updated_at",
    "trigger_def",
];

fn assert_script_ui(value: &Value) {
    keys(value, SCRIPT_FIELDS, "response script (UI form)");
    assert_trigger(&value["trigger_def"]);
}

fn assert_script_plain(value: &Value) {
    keys(value, SCRIPT_FIELDS, "response script (plain form)");
    assert!(uuid::Uuid::parse_str(value["trigger_def"].as_str().unwrap()).is_ok());
}

fn assert_version(value: &Value) {
    keys(
        value,
        &[
            "id",
            "script",
            "v_num",
            "code",
            "author",
            "created_at",
            "updated_at",
        ],
        "script version",
    );
    assert!(value["v_num"].is_i64() && value["script"].is_i64());
    keys(
        &value["author"],
        &[
            "id",
            "email",
            "first_name",
            "last_name",
            "oidc_user_id",
            "role",
        ],
        "author",
    );
}

fn assert_run(value: &Value) {
    keys(
        value,
        &[
            "id",
            "script",
            "script_version",
            "status",
            "stdout",
            "stderr",
            "syserr",
            "trigger_run",
            "created_at",
            "updated_at",
        ],
        "script run",
    );
    assert_script_plain(&value["script"]);
    assert_version(&value["script_version"]);
    let status = value["status"].as_str().unwrap();
    assert!(
        ["running", "success", "failed", "timed_out", "error"].contains(&status),
        "{status}"
    );
    let trigger_run = &value["trigger_run"];
    keys(
        trigger_run,
        &[
            "id",
            "batch",
            "trigger_args",
            "trigger_def",
            "created_at",
            "updated_at",
        ],
        "trigger run",
    );
    assert!(trigger_run["trigger_args"].is_object());
    assert_trigger(&trigger_run["trigger_def"]);
}

fn assert_details(value: &Value) {
    keys(value, &["counts", "latest"], "details");
    keys(&value["counts"], &["run", "version"], "counts");
    keys(&value["latest"], &["run", "version"], "latest");
    // SPEC types both as objects: absent is `{}`, never null.
    for (name, item) in [
        ("run", &value["latest"]["run"]),
        ("version", &value["latest"]["version"]),
    ] {
        let object = item
            .as_object()
            .unwrap_or_else(|| panic!("latest.{name} must be an object: {value}"));
        if !object.is_empty() {
            match name {
                "run" => assert_run(item),
                _ => assert_version(item),
            }
        }
    }
}

// --- The tests ---------------------------------------------------------------------------

async fn response_actions_are_for_admins_only(app: TestApp) {
    let script_id = create_script(&app, "Mine", trigger_catalog::INVESTIGATION_COMPLETED, "").await;
    let create = json!({"display_name": "x", "trigger_def_uuid": uuid_of(trigger_catalog::INVESTIGATION_COMPLETED)});
    let calls: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", path(""), None),
        ("POST", path(""), Some(create)),
        (
            "POST",
            path("/test"),
            Some(json!({"script_code": "print(1)"})),
        ),
        ("GET", path("/triggers"), None),
        ("GET", path(&format!("/{script_id}")), None),
        (
            "PATCH",
            path(&format!("/{script_id}")),
            Some(json!({"display_name": "theirs"})),
        ),
        ("DELETE", path(&format!("/{script_id}")), None),
        ("GET", path(&format!("/{script_id}/runs")), None),
        ("GET", path("/runs/1"), None),
        (
            "POST",
            path(&format!("/{script_id}/run")),
            Some(json!({"trigger_args": {}})),
        ),
        ("GET", path("/secrets"), None),
        ("PUT", path("/secrets/TOKEN"), Some(json!({"value": "v"}))),
        ("DELETE", path("/secrets/TOKEN"), None),
    ];
    for (method, path, body) in &calls {
        let body_bytes = body.as_ref().map(|body| body.to_string().into_bytes());
        let content_type = body.as_ref().map(|_| "application/json");
        let answer = app
            .raw(method, path, None, content_type, body_bytes.clone())
            .await;
        assert_error(&answer, 401, "unauthorized");
        let answer = app
            .raw(
                method,
                path,
                Some("sleuth_unknown"),
                content_type,
                body_bytes.clone(),
            )
            .await;
        assert_error(&answer, 401, "unauthorized");
        for key in [&app.member_key, &app.reader_key] {
            let answer = app
                .raw(method, path, Some(key), content_type, body_bytes.clone())
                .await;
            assert_error(&answer, 403, "access_denied");
            assert!(answer.json["detail"].as_str().unwrap().contains("admin"));
        }
        // A member's malformed body is still a 403: the role is checked first.
        if body.is_some() {
            let answer = app
                .raw(
                    method,
                    path,
                    Some(&app.member_key),
                    Some("application/json"),
                    Some(b"{".to_vec()),
                )
                .await;
            assert_error(&answer, 403, "access_denied");
        }
    }
    // Nothing the refused calls asked for happened.
    let listed = app.get(ACTIONS, &app.admin_key).await;
    assert_eq!(listed.json.as_array().unwrap().len(), 1);
    assert_eq!(listed.json[0]["display_name"], "Mine");
    assert_eq!(details(&app, script_id).await["counts"]["run"], 0);
}

async fn triggers_form_a_truthful_tree(app: TestApp) {
    let answer = app.get(&path("/triggers"), &app.admin_key).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let triggers = answer.json.as_array().unwrap();
    triggers.iter().for_each(assert_trigger);
    assert_eq!(triggers.len(), trigger_catalog::catalog().len());
    let by_name = |fn_name: &str| {
        triggers
            .iter()
            .find(|trigger| trigger["trigger_fn_name"] == fn_name)
            .unwrap_or_else(|| panic!("no trigger {fn_name}"))
            .clone()
    };
    let completed = by_name(trigger_catalog::INVESTIGATION_COMPLETED);
    assert_eq!(
        completed["uuid"],
        uuid_of(trigger_catalog::INVESTIGATION_COMPLETED),
        "stable uuids"
    );
    assert_eq!(completed["is_scriptable"], true);
    assert_eq!(
        completed["is_runnable"], false,
        "it fires on its event, not on request"
    );
    assert_eq!(
        completed["script_var_names"],
        json!(["investigation", "alert"])
    );
    assert_eq!(
        completed["trigger_arg_names"],
        json!(["investigation_id", "outcome", "priority", "entities"])
    );
    let group = triggers
        .iter()
        .find(|trigger| trigger["uuid"] == completed["parent"])
        .expect("the parent is listed");
    assert_eq!(group["is_scriptable"], false, "groups take no scripts");
    assert_eq!(
        completed["trigger_tree_labels"],
        json!(["Investigation", "Completed", "Any outcome"])
    );
    let host = by_name(trigger_catalog::MANUAL_ENTITY_HOST);
    assert_eq!(
        (host["is_runnable"].clone(), host["is_scriptable"].clone()),
        (json!(true), json!(true))
    );
    for fn_name in [
        "investigation_completed_confirmed",
        "investigation_completed_suspicious",
        "investigation_completed_false_alert",
        "investigation_completed_incomplete",
        "investigation_stopped_error",
        "investigation_stopped_threshold",
        "investigation_stopped_manual_cancel",
        "investigation_priority_urgent",
        "feedback_applied",
        "review_completed",
        "note_added",
        "manual_investigation",
        "manual_entity_user",
        "manual_entity_ip",
        "manual_entity_email",
        "manual_entity_hash",
        "api_key_created",
        "api_key_revoked",
        "user_created",
    ] {
        assert_eq!(by_name(fn_name)["is_archived"], false);
    }
    // The same catalog on a second request: created_at does not move.
    let again = app.get(&path("/triggers"), &app.admin_key).await;
    assert_eq!(again.json, answer.json);
}

async fn creating_listing_reading_and_updating_make_versions(app: TestApp) {
    let body = json!({
        "display_name": "  Isolate host  ",
        "trigger_def_uuid": uuid_of(trigger_catalog::INVESTIGATION_COMPLETED_CONFIRMED),
        "code": "print('v1')",
    });
    let created = app.post(ACTIONS, &app.admin_key, &body).await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_script_ui(&created.json);
    assert_eq!(created.json["display_name"], "Isolate host");
    assert_eq!(
        (
            created.json["is_enabled"].clone(),
            created.json["is_archived"].clone()
        ),
        (json!(true), json!(false))
    );
    assert_eq!(
        created.json["trigger_def"]["trigger_fn_name"],
        "investigation_completed_confirmed"
    );
    let script_id = created.json["id"].as_i64().unwrap();

    // `code` is optional: an empty script.
    let empty =
        json!({"display_name": "Empty", "trigger_def_uuid": uuid_of(trigger_catalog::NOTE_ADDED)});
    let answer = app.post(ACTIONS, &app.admin_key, &empty).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    let empty_id = answer.json["id"].as_i64().unwrap();

    let listed = app.get(ACTIONS, &app.admin_key).await;
    assert_eq!(listed.status, 200);
    let listed = listed.json.as_array().unwrap().clone();
    listed.iter().for_each(assert_script_ui);
    let ids: Vec<i64> = listed
        .iter()
        .map(|script| script["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [script_id, empty_id]);
    assert_eq!(
        listed[0], created.json,
        "list and create answer the same form"
    );

    let first = details(&app, script_id).await;
    assert_eq!(first["counts"], json!({"run": 0, "version": 1}));
    assert_eq!(first["latest"]["run"], json!({}), "never ran");
    let version = &first["latest"]["version"];
    assert_eq!(
        (version["v_num"].clone(), version["code"].clone()),
        (json!(1), json!("print('v1')"))
    );
    assert_eq!(version["script"], script_id);
    assert_eq!(version["author"]["email"], "admin@example.com");
    assert_eq!(
        details(&app, empty_id).await["latest"]["version"]["code"],
        ""
    );

    // Properties alone make no version; a code change does; the same code again does not.
    let patch_path = path(&format!("/{script_id}"));
    let renamed = app
        .patch(
            &patch_path,
            &app.admin_key,
            &json!({"display_name": "Isolate the host", "is_enabled": false}),
        )
        .await;
    assert_eq!((renamed.status, renamed.text.as_str()), (204, ""));
    assert_eq!(details(&app, script_id).await["counts"]["version"], 1);
    for _ in 0..2 {
        let answer = app
            .patch(&patch_path, &app.admin_key, &json!({"code": "print('v2')"}))
            .await;
        assert_eq!(answer.status, 204, "{}", answer.text);
    }
    let second = details(&app, script_id).await;
    assert_eq!(second["counts"]["version"], 2);
    assert_eq!(second["latest"]["version"]["v_num"], 2);
    assert_eq!(second["latest"]["version"]["code"], "print('v2')");
    let moved = app
        .patch(
            &patch_path,
            &app.admin_key,
            &json!({"trigger_def_uuid": uuid_of(trigger_catalog::INVESTIGATION_STOPPED)}),
        )
        .await;
    assert_eq!(moved.status, 204, "{}", moved.text);
    let listed = app.get(ACTIONS, &app.admin_key).await;
    let script = &listed.json[0];
    assert_eq!(script["display_name"], "Isolate the host");
    assert_eq!(script["is_enabled"], false);
    assert_eq!(
        script["trigger_def"]["trigger_fn_name"],
        "investigation_stopped"
    );
    assert_ne!(script["updated_at"], created.json["updated_at"]);
    assert_eq!(script["created_at"], created.json["created_at"]);
}

async fn bad_input_is_refused_and_changes_nothing(app: TestApp) {
    let script_id = create_script(
        &app,
        "Keep me",
        trigger_catalog::INVESTIGATION_COMPLETED,
        "print(1)",
    )
    .await;
    let before = app.get(ACTIONS, &app.admin_key).await.json;
    let completed = uuid_of(trigger_catalog::INVESTIGATION_COMPLETED);
    let group = trigger_catalog::catalog()
        .into_iter()
        .find(|entry| !entry.is_scriptable)
        .unwrap()
        .uuid
        .to_string();
    let too_long = "x".repeat(256 * 1024 + 1);
    let bad_creates = [
        json!({"trigger_def_uuid": completed}),
        json!({"display_name": "x"}),
        json!({"display_name": 5, "trigger_def_uuid": completed}),
        json!({"display_name": "", "trigger_def_uuid": completed}),
        json!({"display_name": "x".repeat(256), "trigger_def_uuid": completed}),
        json!({"display_name": "a\u{0}b", "trigger_def_uuid": completed}),
        json!({"display_name": "x", "trigger_def_uuid": "not-a-uuid"}),
        json!({"display_name": "x", "trigger_def_uuid": 42}),
        json!({"display_name": "x", "trigger_def_uuid": uuid::Uuid::new_v4().to_string()}),
        json!({"display_name": "x", "trigger_def_uuid": group}),
        json!({"display_name": "x", "trigger_def_uuid": completed, "code": 7}),
        json!({"display_name": "x", "trigger_def_uuid": completed, "code": too_long}),
        json!({"display_name": "x", "trigger_def_uuid": completed, "code": "a\u{0}"}),
        json!({"display_name": "x", "trigger_def_uuid": completed, "surprise": true}),
        json!(["display_name"]),
        json!(null),
    ];
    for body in &bad_creates {
        let answer = app.post(ACTIONS, &app.admin_key, body).await;
        assert_error(&answer, 400, "bad_request");
    }
    for raw in [&b"{"[..], b"", b"\xff\xfe", b"{\"display_name\": \"x\",}"] {
        let answer = app
            .raw(
                "POST",
                ACTIONS,
                Some(&app.admin_key),
                Some("application/json"),
                Some(raw.to_vec()),
            )
            .await;
        assert_error(&answer, 400, "bad_request");
    }
    let answer = app
        .raw(
            "POST",
            ACTIONS,
            Some(&app.admin_key),
            Some("text/plain"),
            Some(b"{}".to_vec()),
        )
        .await;
    assert_error(&answer, 400, "bad_request");

    let script_path = path(&format!("/{script_id}"));
    let bad_patches = [
        json!({}),
        json!({"is_enabled": "yes"}),
        json!({"display_name": null, "is_enabled": null}),
        json!({"display_name": ""}),
        json!({"trigger_def_uuid": uuid::Uuid::new_v4().to_string()}),
        json!({"trigger_def_uuid": group}),
        json!({"code": ["print(1)"]}),
        json!({"unknown": 1}),
    ];
    for body in &bad_patches {
        let answer = app.patch(&script_path, &app.admin_key, body).await;
        assert_error(&answer, 400, "bad_request");
    }
    let answer = app.get(&path("?is_archived=maybe"), &app.admin_key).await;
    assert_error(&answer, 400, "bad_request");
    for query in ["?limit=0", "?limit=x", "?offset=-1"] {
        let answer = app
            .get(&path(&format!("/{script_id}/runs{query}")), &app.admin_key)
            .await;
        assert_error(&answer, 400, "bad_request");
    }

    // Unknown and non-numeric ids are not found, on every route that takes one.
    for id in [
        (script_id + 1000).to_string(),
        "abc".into(),
        "-1".into(),
        "0".into(),
        "1.5".into(),
        "99999999999999999999".into(),
    ] {
        let one = path(&format!("/{id}"));
        assert_error(&app.get(&one, &app.admin_key).await, 404, "not_found");
        assert_error(&delete(&app, &one, &app.admin_key).await, 404, "not_found");
        let patch = app
            .patch(&one, &app.admin_key, &json!({"display_name": "x"}))
            .await;
        assert_error(&patch, 404, "not_found");
        let runs = app.get(&path(&format!("/{id}/runs")), &app.admin_key).await;
        assert_error(&runs, 404, "not_found");
        let run = app
            .post(
                &path(&format!("/{id}/run")),
                &app.admin_key,
                &json!({"trigger_args": {}}),
            )
            .await;
        assert_error(&run, 404, "not_found");
    }
    assert_eq!(
        app.get(ACTIONS, &app.admin_key).await.json,
        before,
        "nothing changed"
    );
    assert_eq!(
        details(&app, script_id).await["counts"],
        json!({"run": 0, "version": 1})
    );
}

async fn archiving_hides_refuses_updates_and_keeps_what_runs_refer_to(app: TestApp) {
    let script_id = create_script(
        &app,
        "On a host",
        trigger_catalog::MANUAL_ENTITY_HOST,
        "print('v1')",
    )
    .await;
    let run = app
        .post(
            &path(&format!("/{script_id}/run")),
            &app.admin_key,
            &json!({"trigger_args": {"entity_value": "WKS-1"}}),
        )
        .await;
    assert_eq!(run.status, 202, "{}", run.text);
    ended_runs(&app, script_id, 1).await;
    for code in ["print('v2')", "print('v3')"] {
        let answer = app
            .patch(
                &path(&format!("/{script_id}")),
                &app.admin_key,
                &json!({"code": code}),
            )
            .await;
        assert_eq!(answer.status, 204);
    }
    assert_eq!(
        details(&app, script_id).await["counts"],
        json!({"run": 1, "version": 3})
    );

    let archived = delete(&app, &path(&format!("/{script_id}")), &app.admin_key).await;
    assert_eq!((archived.status, archived.text.as_str()), (204, ""));
    let after = details(&app, script_id).await;
    assert_eq!(
        after["counts"],
        json!({"run": 1, "version": 1}),
        "unreferenced versions are gone"
    );
    assert_eq!(
        after["latest"]["version"]["v_num"], 1,
        "the version the run used stays"
    );
    assert_eq!(after["latest"]["run"]["script"]["is_archived"], true);

    assert_eq!(app.get(ACTIONS, &app.admin_key).await.json, json!([]));
    let archived_list = app.get(&path("?is_archived=true"), &app.admin_key).await;
    assert_eq!(archived_list.json.as_array().unwrap().len(), 1);
    assert_eq!(archived_list.json[0]["is_archived"], true);
    assert_script_ui(&archived_list.json[0]);

    let refused = app
        .patch(
            &path(&format!("/{script_id}")),
            &app.admin_key,
            &json!({"display_name": "again"}),
        )
        .await;
    assert_error(&refused, 400, "bad_request");
    assert!(
        refused.json["error_msg"]
            .as_str()
            .unwrap()
            .contains("archived")
    );
    let refused_run = app
        .post(
            &path(&format!("/{script_id}/run")),
            &app.admin_key,
            &json!({"trigger_args": {"entity_value": "x"}}),
        )
        .await;
    assert_error(&refused_run, 400, "bad_request");
    let again = delete(&app, &path(&format!("/{script_id}")), &app.admin_key).await;
    assert_eq!(again.status, 204, "archiving twice is harmless");
    assert_eq!(runs(&app, script_id).await.len(), 1, "runs stay");

    // An archived script that never ran keeps no version at all.
    let never_ran = create_script(&app, "Never ran", trigger_catalog::NOTE_ADDED, "print(1)").await;
    delete(&app, &path(&format!("/{never_ran}")), &app.admin_key).await;
    let empty = details(&app, never_ran).await;
    assert_eq!(empty["counts"], json!({"run": 0, "version": 0}));
    assert_eq!(empty["latest"]["version"], json!({}), "no version left");
}

async fn test_runs_report_success_failure_and_timeouts(app: TestApp) {
    let code = "print(trigger_args['who'], investigation['id'] if investigation else None, alert)";
    let answer = test_run(
        &app,
        code,
        json!({"who": "ana", "investigation": {"id": 7}}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    keys(
        &answer.json,
        &["status", "stdout", "stderr"],
        "test-run answer",
    );
    assert_eq!(answer.json["status"], "success");
    assert_eq!(answer.json["stdout"], "ana 7 None\n");

    let answer = test_run(&app, "x = 1\nraise ValueError('no such host')", json!({})).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json["status"], "failed");
    let stderr = answer.json["stderr"].as_str().unwrap();
    assert!(
        stderr.contains("script.py")
            && stderr.contains("line 2")
            && stderr.contains("ValueError: no such host"),
        "the traceback names the script's line: {stderr}"
    );

    let started = std::time::Instant::now();
    let answer = test_run(
        &app,
        "print('spinning', flush=True)\nwhile True:\n    pass",
        json!({}),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json["status"], "timed_out");
    assert_eq!(
        answer.json["stdout"], "spinning\n",
        "what it printed before is kept"
    );
    assert!(started.elapsed() < Duration::from_secs(10));

    // Nothing is saved.
    assert_eq!(app.get(ACTIONS, &app.admin_key).await.json, json!([]));

    for body in [
        json!({}),
        json!({"script_code": 1}),
        json!({"script_code": "print(1)", "trigger_args": [1]}),
        json!({"script_code": "print(1)", "trigger_args": "x"}),
        json!({"script_code": "x".repeat(256 * 1024 + 1)}),
        json!({"script_code": "print(1)", "other": 1}),
    ] {
        let answer = app.post(&path("/test"), &app.admin_key, &body).await;
        assert_error(&answer, 400, "bad_request");
    }
}

async fn scripts_answer_503_without_a_sandbox(app: TestApp) {
    // The plain app has no sandbox: scripts cannot run, but everything else works.
    let answer = test_run(&app, "print(1)", json!({})).await;
    assert_error(&answer, 503, "not_ready");
    assert!(answer.headers.contains_key("retry-after"));
    let script_id = create_script(&app, "x", trigger_catalog::MANUAL_INVESTIGATION, "").await;
    let investigation_id = app.create(&json!({"title": "for a manual run"})).await;
    let answer = app
        .post(
            &path(&format!("/{script_id}/run")),
            &app.admin_key,
            &json!({"trigger_args": {"investigation_id": investigation_id}}),
        )
        .await;
    assert_error(&answer, 503, "not_ready");
    assert_eq!(
        details(&app, script_id).await["counts"]["run"],
        0,
        "nothing recorded"
    );
}

async fn readiness_shows_the_sandbox(app: TestApp) {
    let answer = app.raw("GET", "/readyz", None, None, None).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let sandbox = &answer.json["sandbox"];
    assert_eq!(sandbox["mode"], "strict");
    assert_eq!(sandbox["ready"], true, "{sandbox}");
    let layers: Vec<&str> = sandbox["layers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|layer| layer["available"] == true)
        .map(|layer| layer["layer"].as_str().unwrap())
        .collect();
    for layer in ["rlimits", "pid-namespace", "landlock", "seccomp"] {
        assert!(layers.contains(&layer), "{layer} in {layers:?}");
    }

    // A sandbox whose interpreter cannot start is not ready: scripts answer 503, while
    // Sleuth itself stays ready.
    let broken = start(Backend::Sqlite, |settings| {
        settings.sandbox.python = "/nonexistent/python3".into();
    })
    .await
    .expect("sqlite is always available");
    let answer = broken.raw("GET", "/readyz", None, None, None).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json["sandbox"]["ready"], false);
    assert!(answer.json["sandbox"]["reason"].is_string());
    assert_error(
        &test_run(&broken, "print(1)", json!({})).await,
        503,
        "not_ready",
    );

    // A sandbox that was ready but then cannot run a script at all: 500.
    let work_root = tempfile::tempdir().unwrap();
    let blocked = work_root.path().join("not-a-directory");
    let failing = start(Backend::Sqlite, |settings| {
        settings.sandbox.work_root = blocked.clone();
    })
    .await
    .expect("sqlite is always available");
    std::fs::remove_dir_all(&blocked).ok();
    std::fs::write(&blocked, "a file where the work dirs should go").unwrap();
    let answer = test_run(&failing, "print(1)", json!({})).await;
    assert_error(&answer, 500, "script_execution_failed");
    assert!(
        answer.json["error_msg"]
            .as_str()
            .unwrap()
            .contains("work dir"),
        "{}",
        answer.text
    );
}

async fn a_finished_investigation_fires_its_scripts_once(app: TestApp) {
    let code = "print(trigger_args['investigation_id'], trigger_args['outcome'] is not None, \
                investigation['id'], alert['title'], sorted(e['type'] for e in trigger_args['entities']))";
    let fired = create_script(
        &app,
        "Open a ticket",
        trigger_catalog::INVESTIGATION_COMPLETED,
        code,
    )
    .await;
    let stopped = create_script(
        &app,
        "On stop",
        trigger_catalog::INVESTIGATION_STOPPED,
        "print('no')",
    )
    .await;
    let disabled = create_script(
        &app,
        "Disabled",
        trigger_catalog::INVESTIGATION_COMPLETED,
        "print('no')",
    )
    .await;
    let answer = app
        .patch(
            &path(&format!("/{disabled}")),
            &app.admin_key,
            &json!({"is_enabled": false}),
        )
        .await;
    assert_eq!(answer.status, 204);

    let alert = json!({"title": "Mimikatz on WKS-0231", "host": "WKS-0231", "user": "r.patel", "src_ip": "203.0.113.5"});
    let investigation_id = app.create(&alert).await;
    assert_eq!(app.drain().await, 1);

    let runs = ended_runs(&app, fired, 1).await;
    let run = &runs[0];
    assert_eq!(run["status"], "success", "{run}");
    let trigger_run = &run["trigger_run"];
    assert_eq!(
        trigger_run["trigger_def"]["trigger_fn_name"],
        "investigation_completed"
    );
    let args = &trigger_run["trigger_args"];
    assert_eq!(args["investigation_id"], investigation_id);
    let investigation = app
        .get(
            &format!("/app/api/v1/investigation/{investigation_id}"),
            &app.admin_key,
        )
        .await;
    assert_eq!(args["outcome"], investigation.json["outcome"]);
    assert_eq!(args["priority"], investigation.json["priority"]);
    let stdout = run["stdout"].as_str().unwrap();
    assert!(
        stdout.starts_with(&format!(
            "{investigation_id} True {investigation_id} Mimikatz on WKS-0231 ["
        )),
        "{stdout}"
    );
    assert_eq!(
        args["entities"], investigation.json["alert"]["entities"],
        "the alert's entities, as {{type, value}}"
    );
    assert_eq!(run["script_version"]["v_num"], 1);
    assert_eq!(run["script"]["id"], fired);

    // Only matching, enabled scripts ran, and nothing runs twice.
    assert!(self::runs(&app, stopped).await.is_empty());
    assert!(self::runs(&app, disabled).await.is_empty());
    assert_eq!(app.drain().await, 0);
    assert_eq!(ended_runs(&app, fired, 1).await.len(), 1);

    // The investigation's list item shows the run.
    let page = app.get("/app/api/v1/investigation", &app.reader_key).await;
    shapes::assert_page(&page.json);
    let item = &page.json["results"][0];
    assert_eq!(item["id"], investigation_id);
    assert_eq!(
        item["remediation_action_runs"],
        json!([{"entity": format!("investigation:{investigation_id}"), "remediation_action": {"name": "Open a ticket"}}])
    );
    assert_eq!(details(&app, fired).await["counts"]["run"], 1);
}

/// A run belongs to the tenant union of the investigation that fired it. An admin bound to
/// Acme lists and reads Acme's runs, without the action's code; Globex's run and a manual
/// run of no investigation answer 404 to it; the actions themselves stay refused.
async fn a_bound_admin_reads_the_runs_of_its_unions_investigations_only(app: TestApp) {
    let fired = create_script(
        &app,
        "Open a ticket",
        trigger_catalog::INVESTIGATION_COMPLETED,
        "print(trigger_args['investigation_id'])",
    )
    .await;
    let on_host = create_script(
        &app,
        "Isolate",
        trigger_catalog::MANUAL_ENTITY_HOST,
        "print(entity['value'])",
    )
    .await;
    let manual = app
        .post(
            &path(&format!("/{on_host}/run")),
            &app.admin_key,
            &json!({"trigger_args": {"entity_value": "WKS-0231"}}),
        )
        .await;
    assert_eq!(manual.status, 202, "{}", manual.text);
    let manual = manual.json["id"].as_i64().unwrap();
    let acme = crate::context_memory::tenant_union(&app, "Acme").await;
    let globex = crate::context_memory::tenant_union(&app, "Globex").await;
    let mut investigations = Vec::new();
    for (union, title) in [(acme, "Beacon at Acme"), (globex, "Beacon at Globex")] {
        let answer = app
            .post(
                "/app/api/v1/investigation/create",
                &app.member_key,
                &json!({"raw_alert_content": {"title": title, "host": "WKS-1"}, "tenant_union_id": union}),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
        investigations.push(answer.json["investigation_id"].as_i64().unwrap());
    }
    assert_eq!(app.drain().await, 2);
    let all = ended_runs(&app, fired, 2).await;
    let run_of = |investigation: i64| {
        all.iter()
            .find(|run| run["trigger_run"]["trigger_args"]["investigation_id"] == investigation)
            .and_then(|run| run["id"].as_i64())
            .unwrap_or_else(|| panic!("a run for {investigation}: {all:?}"))
    };
    let (ours, theirs) = (run_of(investigations[0]), run_of(investigations[1]));
    ended_runs(&app, on_host, 1).await;

    let admin = crate::tenants::bound_key(&app, "acme-admin@example.com", "admin", &[acme]).await;
    let listed = app.get(&path(&format!("/{fired}/runs")), &admin).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let listed = listed.json.as_array().unwrap().clone();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["id"], ours);
    assert_eq!(listed[0]["stdout"], format!("{}\n", investigations[0]));
    assert_eq!(listed[0]["script"]["id"], fired);
    assert_eq!(
        listed[0]["script_version"],
        json!({"id": listed[0]["script_version"]["id"], "script": fired, "v_num": 1}),
        "which version ran, not its code"
    );
    assert!(!listed[0].to_string().contains("print("), "{}", listed[0]);
    let one = app.get(&path(&format!("/runs/{ours}")), &admin).await;
    assert_eq!(one.status, 200, "{}", one.text);
    assert_eq!(one.json, listed[0]);
    let manual_runs = app.get(&path(&format!("/{on_host}/runs")), &admin).await;
    assert_eq!(manual_runs.status, 200, "{}", manual_runs.text);
    assert_eq!(manual_runs.json, json!([]), "a manual run is in no union");
    for missing in [theirs, manual, theirs + manual + 100] {
        assert_error(
            &app.get(&path(&format!("/runs/{missing}")), &admin).await,
            404,
            "not_found",
        );
    }
    // An unbound admin reads every run whole.
    for run in [ours, theirs, manual] {
        let whole = app
            .get(&path(&format!("/runs/{run}")), &app.admin_key)
            .await;
        assert_eq!(whole.status, 200, "{}", whole.text);
        assert_run(&whole.json);
    }
    // The actions themselves, their versions and secrets stay an unbound admin's.
    for path in [
        path(""),
        path(&format!("/{fired}")),
        path("/triggers"),
        path("/secrets"),
    ] {
        assert_error(&app.get(&path, &admin).await, 403, "access_denied");
    }
    assert_error(
        &app.post(
            &path(&format!("/{on_host}/run")),
            &admin,
            &json!({"trigger_args": {"entity_value": "WKS-1"}}),
        )
        .await,
        403,
        "access_denied",
    );
}

async fn manual_runs_take_only_runnable_triggers(app: TestApp) {
    let code = "print(entity['type'], entity['value'], trigger_args['entity_value'], investigation is None)";
    let on_host = create_script(&app, "Isolate", trigger_catalog::MANUAL_ENTITY_HOST, code).await;
    let run_path = path(&format!("/{on_host}/run"));
    let started = app
        .post(
            &run_path,
            &app.admin_key,
            &json!({"trigger_args": {"entity_value": "WKS-0231"}}),
        )
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    assert_run(&started.json);
    let runs = ended_runs(&app, on_host, 1).await;
    assert_eq!(runs[0]["id"], started.json["id"]);
    assert_eq!(runs[0]["status"], "success", "{}", runs[0]);
    assert_eq!(runs[0]["stdout"], "host WKS-0231 WKS-0231 True\n");
    assert_eq!(
        runs[0]["trigger_run"]["trigger_def"]["trigger_fn_name"],
        "manual_entity_host"
    );

    // With an investigation, the run shows on its list item.
    let investigation_id = app
        .create(&json!({"title": "manual", "host": "WKS-9"}))
        .await;
    app.drain().await;
    let with_investigation = app
        .post(
            &run_path,
            &app.admin_key,
            &json!({"trigger_args": {"entity_value": "WKS-9", "investigation_id": investigation_id}}),
        )
        .await;
    assert_eq!(
        with_investigation.status, 202,
        "{}",
        with_investigation.text
    );
    let runs = ended_runs(&app, on_host, 2).await;
    assert_eq!(runs[0]["stdout"], "host WKS-9 WKS-9 False\n");
    let page = app.get("/app/api/v1/investigation", &app.reader_key).await;
    assert_eq!(
        page.json["results"][0]["remediation_action_runs"],
        json!([{"entity": "host:WKS-9", "remediation_action": {"name": "Isolate"}}])
    );

    let on_investigation = create_script(
        &app,
        "Summarise",
        trigger_catalog::MANUAL_INVESTIGATION,
        "print(investigation['id'])",
    )
    .await;
    let answer = app
        .post(
            &path(&format!("/{on_investigation}/run")),
            &app.admin_key,
            &json!({"trigger_args": {"investigation_id": investigation_id}}),
        )
        .await;
    assert_eq!(answer.status, 202, "{}", answer.text);
    assert_eq!(
        ended_runs(&app, on_investigation, 1).await[0]["stdout"],
        format!("{investigation_id}\n")
    );

    let not_runnable = create_script(
        &app,
        "Automatic",
        trigger_catalog::INVESTIGATION_COMPLETED,
        "",
    )
    .await;
    let bad_runs = [
        (on_host, json!({"trigger_args": {}})),
        (on_host, json!({"trigger_args": {"entity_value": ""}})),
        (on_host, json!({"trigger_args": {"entity_value": 5}})),
        (
            on_host,
            json!({"trigger_args": {"entity_value": "x", "investigation_id": 999_999}}),
        ),
        (
            on_host,
            json!({"trigger_args": {"entity_value": "x", "investigation_id": "one"}}),
        ),
        (on_host, json!({"trigger_args": [1]})),
        (on_host, json!({"other": 1})),
        (on_investigation, json!({"trigger_args": {}})),
        (
            not_runnable,
            json!({"trigger_args": {"investigation_id": investigation_id}}),
        ),
    ];
    for (script_id, body) in &bad_runs {
        let answer = app
            .post(&path(&format!("/{script_id}/run")), &app.admin_key, body)
            .await;
        assert_error(&answer, 400, "bad_request");
    }
    assert!(self::runs(&app, not_runnable).await.is_empty());
    assert_eq!(
        self::runs(&app, on_host).await.len(),
        2,
        "refused runs record nothing"
    );
}

async fn secrets_are_write_only_and_reach_scripts(app: TestApp) {
    let secret_value = "s3cr3t-value-never-shown";
    let answer = put(
        &app,
        &path("/secrets/EDR_TOKEN"),
        &app.admin_key,
        &json!({"value": secret_value}),
    )
    .await;
    assert_eq!((answer.status, answer.text.as_str()), (204, ""));
    let answer = put(
        &app,
        &path("/secrets/SLACK"),
        &app.admin_key,
        &json!({"value": "hook"}),
    )
    .await;
    assert_eq!(answer.status, 204);

    let listed = app.get(&path("/secrets"), &app.admin_key).await;
    assert_eq!(listed.status, 200);
    let names: Vec<&str> = listed
        .json
        .as_array()
        .unwrap()
        .iter()
        .map(|secret| secret["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["EDR_TOKEN", "SLACK"]);
    assert!(!listed.text.contains(secret_value) && !listed.text.contains("hook"));
    keys(
        &listed.json[0],
        &[
            "name",
            "key_id",
            "response_action_ids",
            "created_at",
            "updated_at",
        ],
        "secret",
    );

    // Replacing keeps one secret; deleting removes it; a second delete finds nothing.
    put(
        &app,
        &path("/secrets/EDR_TOKEN"),
        &app.admin_key,
        &json!({"value": "new"}),
    )
    .await;
    assert_eq!(
        app.get(&path("/secrets"), &app.admin_key)
            .await
            .json
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let answer = delete(&app, &path("/secrets/SLACK"), &app.admin_key).await;
    assert_eq!(answer.status, 204);
    assert_error(
        &delete(&app, &path("/secrets/SLACK"), &app.admin_key).await,
        404,
        "not_found",
    );
    assert_error(
        &delete(&app, &path("/secrets/no%20such"), &app.admin_key).await,
        404,
        "not_found",
    );

    for (name, body) in [
        ("1ABC", json!({"value": "v"})),
        ("A-B", json!({"value": "v"})),
        ("%27%3B%20DROP", json!({"value": "v"})),
        ("OK", json!({})),
        ("OK", json!({"value": 5})),
        ("OK", json!({"value": "a\u{0}b"})),
        ("OK", json!({"value": "x".repeat(64 * 1024 + 1)})),
    ] {
        let answer = put(
            &app,
            &path(&format!("/secrets/{name}")),
            &app.admin_key,
            &body,
        )
        .await;
        assert_error(&answer, 400, "bad_request");
    }
    let names = app.get(&path("/secrets"), &app.admin_key).await.json;
    assert_eq!(
        names.as_array().unwrap().len(),
        1,
        "nothing refused was stored"
    );
}

/// Sets a secret through the API.
async fn set_secret(app: &TestApp, name: &str, value: &str) {
    let answer = put(
        app,
        &path(&format!("/secrets/{name}")),
        &app.admin_key,
        &json!({"value": value}),
    )
    .await;
    assert_eq!(answer.status, 204, "{}", answer.text);
}

/// Creates a script naming `secret_names` and returns its id.
async fn create_script_with_secrets(
    app: &TestApp,
    trigger: &str,
    code: &str,
    secret_names: &[&str],
) -> i64 {
    let body = json!({"display_name": "With secrets", "trigger_def_uuid": uuid_of(trigger),
        "code": code, "secret_names": secret_names});
    let answer = app.post(ACTIONS, &app.admin_key, &body).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    answer.json["id"].as_i64().expect("an id")
}

async fn secrets_are_sealed_at_rest_and_reach_only_the_actions_that_name_them(app: TestApp) {
    let edr_value = "edr-token-3f9a1c";
    let slack_value = "https://hooks.example.com/T0/B0/xyz";
    set_secret(&app, "EDR_TOKEN", edr_value).await;
    set_secret(&app, "SLACK", slack_value).await;

    // At rest: sealed with the configured key, the value nowhere in the row.
    let key_id = app.state.keyring().expect("a key").current_id().to_string();
    let stored = app
        .store
        .script_secrets(&["EDR_TOKEN".into(), "SLACK".into()])
        .await
        .unwrap();
    for (name, row) in &stored {
        let sleuth_store::StoredSecret::Sealed(sealed) = row else {
            panic!("{name} is stored in plaintext");
        };
        assert_eq!(sealed.key_id, key_id);
        assert!(!sealed.ciphertext.contains("edr-token") && !sealed.ciphertext.contains("hooks"));
    }

    // A test-run of bare code gets no secret at all.
    let bare = test_run(&app, "print(sorted(secrets))", json!({})).await;
    assert_eq!(bare.json["stdout"], "[]\n", "{}", bare.text);

    // An action gets exactly the secrets it names, in runs and in its test-runs, and what
    // it prints of them is masked.
    let code = "print(sorted(secrets)); print(secrets['EDR_TOKEN']); \
                print(secrets['EDR_TOKEN'] == 'edr-token-3f9a1c')";
    let script_id = create_script_with_secrets(
        &app,
        trigger_catalog::MANUAL_ENTITY_HOST,
        code,
        &["EDR_TOKEN"],
    )
    .await;
    let answer = app
        .post(
            &path("/test"),
            &app.admin_key,
            &json!({"script_code": "print(sorted(secrets)); print(secrets['EDR_TOKEN'])",
                "script_id": script_id}),
        )
        .await;
    assert_eq!(
        answer.json["stdout"], "['EDR_TOKEN']\n***\n",
        "{}",
        answer.text
    );
    let unknown = app
        .post(
            &path("/test"),
            &app.admin_key,
            &json!({"script_code": "print(1)", "script_id": script_id + 1000}),
        )
        .await;
    assert_error(&unknown, 400, "bad_request");

    let started = app
        .post(
            &path(&format!("/{script_id}/run")),
            &app.admin_key,
            &json!({"trigger_args": {"entity_value": "WKS-1"}}),
        )
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    let runs = ended_runs(&app, script_id, 1).await;
    assert_eq!(runs[0]["status"], "success", "{}", runs[0]);
    assert_eq!(
        runs[0]["stdout"], "['EDR_TOKEN']\n***\nTrue\n",
        "{}",
        runs[0]
    );

    let listed = app.get(&path("/secrets"), &app.admin_key).await;
    for secret in listed.json.as_array().unwrap() {
        assert_eq!(secret["key_id"], key_id.as_str());
        let expected = if secret["name"] == "EDR_TOKEN" {
            json!([script_id])
        } else {
            json!([])
        };
        assert_eq!(secret["response_action_ids"], expected, "{secret}");
    }

    // Narrowed to SLACK, the action no longer gets EDR_TOKEN.
    let answer = app
        .patch(
            &path(&format!("/{script_id}")),
            &app.admin_key,
            &json!({"secret_names": ["SLACK"], "code": "print(sorted(secrets))"}),
        )
        .await;
    assert_eq!(answer.status, 204, "{}", answer.text);
    app.post(
        &path(&format!("/{script_id}/run")),
        &app.admin_key,
        &json!({"trigger_args": {"entity_value": "WKS-1"}}),
    )
    .await;
    let runs = ended_runs(&app, script_id, 2).await;
    assert_eq!(runs[0]["stdout"], "['SLACK']\n", "{}", runs[0]);

    // Naming a secret that is not stored: a manual run is refused, a fired run ends in
    // error naming it, and bad names are refused.
    let missing = create_script_with_secrets(
        &app,
        trigger_catalog::MANUAL_ENTITY_HOST,
        "print(1)",
        &["NOT_STORED"],
    )
    .await;
    let refused = app
        .post(
            &path(&format!("/{missing}/run")),
            &app.admin_key,
            &json!({"trigger_args": {"entity_value": "WKS-1"}}),
        )
        .await;
    assert_error(&refused, 400, "bad_request");
    assert!(refused.text.contains("NOT_STORED"), "{}", refused.text);
    let fired = create_script_with_secrets(
        &app,
        trigger_catalog::INVESTIGATION_COMPLETED,
        "print(1)",
        &["NOT_STORED"],
    )
    .await;
    app.create(&json!({"title": "Secrets fired", "host": "WKS-9"}))
        .await;
    app.drain().await;
    let runs = ended_runs(&app, fired, 1).await;
    assert_eq!(runs[0]["status"], "error", "{}", runs[0]);
    assert!(
        runs[0]["syserr"].as_str().unwrap().contains("NOT_STORED"),
        "{}",
        runs[0]
    );
    for names in [json!(["1BAD"]), json!(["A-B"]), json!("EDR"), json!([5])] {
        let body = json!({"display_name": "Bad", "trigger_def_uuid":
            uuid_of(trigger_catalog::MANUAL_ENTITY_HOST), "secret_names": names});
        assert_error(
            &app.post(ACTIONS, &app.admin_key, &body).await,
            400,
            "bad_request",
        );
    }
}

/// A process without the key that sealed the secrets: it says so on /readyz and answers
/// 503 where a script would need them; everything else works.
async fn without_the_key_secrets_are_not_ready_and_nothing_crashes(app: TestApp) {
    set_secret(&app, "EDR_TOKEN", "edr-token-3f9a1c").await;
    let script_id = create_script_with_secrets(
        &app,
        trigger_catalog::MANUAL_ENTITY_HOST,
        "print(1)",
        &["EDR_TOKEN"],
    )
    .await;

    let mut settings = app.state.settings().clone();
    settings.secrets = Default::default();
    let keyless = sleuth_server::AppState::new(settings, sleuth_engine::Context::empty());
    keyless.set_store(app.store.clone());
    keyless.prepare_secrets(&app.store).await;
    let (address, _shutdown) = crate::harness::serve(keyless).await;
    let call = |method: &'static str, path: String, body: Option<Value>| {
        let address = address.clone();
        let key = app.admin_key.clone();
        async move {
            crate::harness::request(
                &address,
                method,
                &path,
                Some(&key),
                body.as_ref().map(|_| "application/json"),
                body.map(|body| body.to_string().into_bytes()),
            )
            .await
        }
    };

    let ready = crate::harness::request(&address, "GET", "/readyz", None, None, None).await;
    assert_eq!(ready.status, 200, "{}", ready.text);
    assert!(ready.json["secrets"]["key_id"].is_null(), "{}", ready.text);
    let problem = ready.json["secrets"]["problem"]
        .as_str()
        .unwrap_or_default();
    assert!(
        problem.contains("EDR_TOKEN") && problem.contains("secrets.key_file"),
        "{problem}"
    );

    let refused = call("PUT", path("/secrets/OTHER"), Some(json!({"value": "v"}))).await;
    assert_error(&refused, 503, "not_ready");
    assert!(
        refused.text.contains("secrets.key_file"),
        "{}",
        refused.text
    );
    let test = call(
        "POST",
        path("/test"),
        Some(json!({"script_code": "print(1)", "script_id": script_id})),
    )
    .await;
    assert_error(&test, 503, "not_ready");
    let run = call(
        "POST",
        path(&format!("/{script_id}/run")),
        Some(json!({"trigger_args": {"entity_value": "WKS-1"}})),
    )
    .await;
    assert_error(&run, 503, "not_ready");
    for answer in [&refused, &test, &run] {
        assert!(!answer.text.contains("edr-token"), "{}", answer.text);
    }
    // The rest of Sleuth answers as ever.
    assert_eq!(call("GET", path("/secrets"), None).await.status, 200);
    assert_eq!(
        call("GET", "/app/api/v1/investigation".into(), None)
            .await
            .status,
        200
    );
    assert!(
        runs(&app, script_id).await.is_empty(),
        "refused runs record nothing"
    );
}

async fn runs_interrupted_by_a_restart_end_in_error(app: TestApp) {
    let script_id =
        create_script(&app, "Long", trigger_catalog::MANUAL_ENTITY_IP, "print(1)").await;
    sleuth_jobs::firing::ensure_trigger_catalog(&app.state, &app.store)
        .await
        .unwrap();
    let version = app
        .store
        .list_script_versions(script_id)
        .await
        .unwrap()
        .remove(0);
    let trigger_runs = app
        .store
        .record_trigger_runs(
            &[sleuth_store::NewTriggerRun {
                trigger_uuid: trigger_uuid(trigger_catalog::MANUAL_ENTITY_IP),
                trigger_args: serde_json::Map::new(),
                investigation_id: None,
                entity: Some("ip:203.0.113.5".into()),
            }],
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    // A run an earlier life of this process started (same host, same pid, another id),
    // whose deadline is far away: only knowing its process is gone ends it.
    let runner_id = sleuth_jobs::firing::runner_id();
    let host = runner_id.split(':').next().unwrap();
    let earlier_life = format!("{host}:{}:earlier", std::process::id());
    app.store
        .start_script_run(
            &sleuth_store::NewScriptRun {
                script_id,
                script_version_id: version.id,
                trigger_run_id: trigger_runs[0].id,
                runner: earlier_life,
                deadline_at: chrono::Utc::now() + chrono::Duration::hours(1),
            },
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    assert_eq!(runs(&app, script_id).await[0]["status"], "running");

    let failed = sleuth_jobs::firing::fail_interrupted_runs(&app.store)
        .await
        .unwrap();
    assert_eq!(failed, 1);
    let run = &runs(&app, script_id).await[0];
    assert_eq!(run["status"], "error");
    assert!(
        run["syserr"].as_str().unwrap().contains("interrupted"),
        "{run}"
    );
}

/// A script with `allow_network` gets the outside world, not the host: the database (the
/// PostgreSQL this very test may run on), Redis, Sleuth's own API and the cloud metadata
/// address are refused by the egress guard, and the run records each refusal.
async fn a_script_allowed_the_network_reaches_none_of_the_hosts_services(app: TestApp) {
    let api_port = app
        .url("")
        .rsplit(':')
        .next()
        .and_then(|port| port.trim_end_matches('/').parse::<u16>().ok())
        .expect("the app's port");
    let code = format!(
        "import socket\n\
         for name, host, port in [('postgres', '127.0.0.1', 5432), ('redis', '127.0.0.1', 6379), \
         ('the api', '127.0.0.1', {api_port}), ('metadata', '169.254.169.254', 80)]:\n    \
             try:\n        \
                 socket.create_connection((host, port), timeout=0.5).close()\n        \
                 print('reached', name)\n    \
             except OSError as error:\n        \
                 print('refused', name, error.errno)"
    );
    let body = json!({
        "display_name": "Look around",
        "trigger_def_uuid": uuid_of(trigger_catalog::MANUAL_ENTITY_HOST),
        "code": code,
        "allow_network": true,
    });
    let created = app.post(ACTIONS, &app.admin_key, &body).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let script_id = created.json["id"].as_i64().expect("an id");
    let started = app
        .post(
            &path(&format!("/{script_id}/run")),
            &app.admin_key,
            &json!({"trigger_args": {"entity_value": "WKS-0231"}}),
        )
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    let run = &ended_runs(&app, script_id, 1).await[0];
    assert_eq!(run["status"], "success", "{run}");
    assert_eq!(
        run["stdout"],
        "refused postgres 13\nrefused redis 13\nrefused the api 13\nrefused metadata 13\n",
        "{run}"
    );
    let syserr = run["syserr"].as_str().unwrap_or_default();
    assert!(
        syserr.contains("the sandbox refused 4 connections")
            && syserr.contains("127.0.0.1:5432 (a loopback address)")
            && syserr.contains(&format!("127.0.0.1:{api_port} (a loopback address)")),
        "{syserr}"
    );
}
