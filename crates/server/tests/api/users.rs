//! Users and API keys over HTTP, on both backends: admins only; SPEC's User bounds; no
//! duplicate emails; an admin cannot demote or deactivate themselves; keys shown once,
//! listed without their secret, revoked at once; a deactivated user's keys stop at once;
//! and the triggers these fire.

use serde_json::{Value, json};
use sleuth_jobs::trigger_catalog;

use crate::analyst::{ended_runs, with_sandbox_on_both_backends};
use crate::harness::{Answer, TestApp, assert_error};
use crate::{on_both_backends, shapes};

on_both_backends!(
    users_and_keys_are_for_admins_only,
    users_are_created_within_specs_bounds_and_once_per_email,
    users_are_changed_deactivated_and_reactivated_but_never_the_last_admin,
    keys_are_shown_once_listed_without_secrets_and_revoked_at_once,
    a_deactivated_users_keys_stop_working_at_once,
);

with_sandbox_on_both_backends!(users_and_keys_fire_their_triggers);

const USERS: &str = "/app/api/v1/users";
const KEYS: &str = "/app/api/v1/api-keys";

async fn create_user(app: &TestApp, body: &Value) -> Answer {
    app.post(USERS, &app.admin_key, body).await
}

/// Creates a user and a key for them; returns (user id, key id, secret).
async fn user_with_key(app: &TestApp, email: &str, role: &str) -> (i64, i64, String) {
    let user = create_user(app, &json!({"email": email, "role": role})).await;
    assert_eq!(user.status, 201, "{}", user.text);
    let user_id = user.json["id"].as_i64().unwrap();
    let key = app
        .post(
            KEYS,
            &app.admin_key,
            &json!({"user_id": user_id, "name": "laptop"}),
        )
        .await;
    assert_eq!(key.status, 201, "{}", key.text);
    (
        user_id,
        key.json["id"].as_i64().unwrap(),
        key.json["key"].as_str().unwrap().to_string(),
    )
}

async fn user_ids(app: &TestApp, query: &str) -> Vec<i64> {
    let answer = app.get(&format!("{USERS}{query}"), &app.admin_key).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let users = answer.json.as_array().unwrap();
    users.iter().for_each(shapes::assert_managed_user);
    users
        .iter()
        .map(|user| user["id"].as_i64().unwrap())
        .collect()
}

/// A read any active key may do.
async fn works(app: &TestApp, key: &str) -> u16 {
    app.get("/app/api/v1/investigation", key).await.status
}

/// SPEC's User plus the key's own fields: the listed form of a key.
fn assert_key(value: &Value) {
    let object = value.as_object().expect("a key object");
    let mut fields: Vec<&str> = object.keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "created_at",
            "id",
            "last_used_at",
            "name",
            "prefix",
            "revoked_at",
            "tenant_union_ids",
            "user"
        ]
    );
    shapes::assert_user(&value["user"]);
}

async fn users_and_keys_are_for_admins_only(app: TestApp) {
    let body = json!({"email": "new@example.com", "role": "member"});
    for key in [&app.member_key, &app.reader_key] {
        assert_error(&app.get(USERS, key).await, 403, "access_denied");
        assert_error(&app.post(USERS, key, &body).await, 403, "access_denied");
        assert_error(
            &app.patch(&format!("{USERS}/1"), key, &json!({"first_name": "X"}))
                .await,
            403,
            "access_denied",
        );
        assert_error(&app.get(KEYS, key).await, 403, "access_denied");
        assert_error(
            &app.post(KEYS, key, &json!({"user_id": 1, "name": "x"}))
                .await,
            403,
            "access_denied",
        );
        assert_error(
            &app.post(&format!("{KEYS}/1/revoke"), key, &json!({})).await,
            403,
            "access_denied",
        );
    }
    for (method, path) in [
        ("GET", USERS.to_string()),
        ("POST", USERS.to_string()),
        ("GET", KEYS.to_string()),
        ("POST", format!("{KEYS}/1/revoke")),
    ] {
        let answer = app.raw(method, &path, None, None, None).await;
        assert_error(&answer, 401, "unauthorized");
    }
    assert_eq!(user_ids(&app, "").await.len(), 3, "nothing was created");
}

async fn users_are_created_within_specs_bounds_and_once_per_email(app: TestApp) {
    let created = create_user(
        &app,
        &json!({"email": "R.Patel@Example.com", "first_name": "Rohan", "last_name": "Patel", "role": "member", "oidc_user_id": "okta|00u1"}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.text);
    shapes::assert_managed_user(&created.json);
    assert_eq!(
        created.json["email"], "r.patel@example.com",
        "stored lower-cased"
    );
    assert_eq!(created.json["first_name"], "Rohan");
    assert_eq!(created.json["role"], "member");
    assert_eq!(created.json["oidc_user_id"], "okta|00u1");
    assert!(
        user_ids(&app, "")
            .await
            .contains(&created.json["id"].as_i64().unwrap())
    );

    let duplicate = create_user(
        &app,
        &json!({"email": "r.patel@EXAMPLE.com", "role": "admin"}),
    )
    .await;
    assert_error(&duplicate, 400, "bad_request");
    assert!(
        duplicate.json["error_msg"]
            .as_str()
            .unwrap()
            .contains("already exists"),
        "{}",
        duplicate.text
    );

    // SPEC's bounds: email at most 254 characters, names at most 150.
    // A local part may have 64 characters; the domain takes the rest.
    let domain = format!(
        "{}.{}.{}.example.com",
        "d".repeat(63),
        "e".repeat(63),
        "f".repeat(49)
    );
    let longest = format!("{}@{domain}", "l".repeat(64));
    assert_eq!(longest.len(), 254);
    let answer = create_user(&app, &json!({"email": longest, "role": "restricted-read-only", "first_name": "é".repeat(150), "last_name": "ü".repeat(150)})).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_eq!(
        answer.json["first_name"].as_str().unwrap().chars().count(),
        150
    );

    let too_long = format!("l{longest}");
    for (body, field, mentions) in [
        (json!({"email": too_long, "role": "member"}), "email", "254"),
        (
            json!({"email": "not-an-address", "role": "member"}),
            "email",
            "not an email",
        ),
        (
            json!({"email": "a@b", "role": "member"}),
            "email",
            "not an email",
        ),
        (json!({"role": "member"}), "email", "required"),
        (json!({"email": "x@example.com"}), "role", "required"),
        (
            json!({"email": "x@example.com", "role": "owner"}),
            "role",
            "restricted-read-only, member, admin",
        ),
        (
            json!({"email": "x@example.com", "role": "member", "first_name": "a".repeat(151)}),
            "first_name",
            "150",
        ),
        (
            json!({"email": "x@example.com", "role": "member", "last_name": "b".repeat(151)}),
            "last_name",
            "150",
        ),
        (
            json!({"email": "x@example.com", "role": "member", "first_name": "a\u{0}b"}),
            "first_name",
            "control",
        ),
        (
            json!({"email": "x@example.com", "role": "member", "oidc_user_id": " "}),
            "oidc_user_id",
            "150",
        ),
    ] {
        let answer = create_user(&app, &body).await;
        assert_error(&answer, 400, "bad_request");
        assert!(answer.json["errors"][field].is_array(), "{}", answer.text);
        assert!(
            answer.json["error_msg"]
                .as_str()
                .unwrap()
                .contains(mentions),
            "{body}: {}",
            answer.text
        );
    }
    for body in [
        json!({"email": "x@example.com", "role": "member", "is_admin": true}),
        json!({"email": 5, "role": "member"}),
        json!("x@example.com"),
    ] {
        assert_error(&create_user(&app, &body).await, 400, "bad_request");
    }
    assert_eq!(
        user_ids(&app, "").await.len(),
        5,
        "the three, r.patel, the longest"
    );
}

async fn users_are_changed_deactivated_and_reactivated_but_never_the_last_admin(app: TestApp) {
    let created = create_user(
        &app,
        &json!({"email": "ana@example.com", "role": "restricted-read-only"}),
    )
    .await;
    let user_id = created.json["id"].as_i64().unwrap();
    let path = format!("{USERS}/{user_id}");

    let changed = app
        .patch(
            &path,
            &app.admin_key,
            &json!({"role": "member", "first_name": "Ana", "last_name": "Lima"}),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    shapes::assert_managed_user(&changed.json);
    assert_eq!(
        (
            &changed.json["role"],
            &changed.json["first_name"],
            &changed.json["last_name"]
        ),
        (&json!("member"), &json!("Ana"), &json!("Lima"))
    );
    assert_eq!(changed.json["email"], "ana@example.com");

    // Deactivated users leave the default list and show with is_active=false.
    let deactivated = app
        .patch(&path, &app.admin_key, &json!({"is_active": false}))
        .await;
    assert_eq!(deactivated.status, 200, "{}", deactivated.text);
    assert!(!user_ids(&app, "").await.contains(&user_id));
    assert_eq!(user_ids(&app, "?is_active=false").await, [user_id]);
    let reactivated = app
        .patch(&path, &app.admin_key, &json!({"is_active": true}))
        .await;
    assert_eq!(reactivated.status, 200);
    assert!(user_ids(&app, "?is_active=true").await.contains(&user_id));
    assert!(user_ids(&app, "?is_active=false").await.is_empty());
    assert_error(
        &app.get(&format!("{USERS}?is_active=maybe"), &app.admin_key)
            .await,
        400,
        "bad_request",
    );

    // An admin cannot demote or deactivate themselves.
    let me = app.get(USERS, &app.admin_key).await.json[0].clone();
    assert_eq!(me["role"], "admin");
    let my_path = format!("{USERS}/{}", me["id"]);
    for body in [json!({"role": "member"}), json!({"is_active": false})] {
        let answer = app.patch(&my_path, &app.admin_key, &body).await;
        assert_error(&answer, 400, "bad_request");
        assert!(
            answer.json["error_msg"]
                .as_str()
                .unwrap()
                .contains("cannot demote or deactivate yourself"),
            "{}",
            answer.text
        );
    }
    let renamed = app
        .patch(&my_path, &app.admin_key, &json!({"first_name": "Root"}))
        .await;
    assert_eq!(renamed.status, 200, "an admin may rename themselves");
    assert_eq!(renamed.json["role"], "admin");

    // Another admin may demote this one, but not the last one left.
    let (second_id, _, second_key) = user_with_key(&app, "second@example.com", "admin").await;
    let demoted = app
        .patch(&my_path, &second_key, &json!({"role": "member"}))
        .await;
    assert_eq!(demoted.status, 200, "{}", demoted.text);
    assert_error(
        &app.patch(
            &format!("{USERS}/{second_id}"),
            &second_key,
            &json!({"role": "member"}),
        )
        .await,
        400,
        "bad_request",
    );

    for (body, field) in [
        (json!({"role": "superuser"}), Some("role")),
        (json!({"first_name": "x".repeat(151)}), Some("first_name")),
        (json!({"email": "new@example.com"}), None),
        (json!({"is_active": "no"}), None),
        (json!({}), None),
    ] {
        let answer = app.patch(&path, &second_key, &body).await;
        assert_error(&answer, 400, "bad_request");
        if let Some(field) = field {
            assert!(answer.json["errors"][field].is_array(), "{}", answer.text);
        }
    }
    for id in ["999999", "abc", "0"] {
        assert_error(
            &app.patch(
                &format!("{USERS}/{id}"),
                &second_key,
                &json!({"first_name": "X"}),
            )
            .await,
            404,
            "not_found",
        );
    }
}

async fn keys_are_shown_once_listed_without_secrets_and_revoked_at_once(app: TestApp) {
    let user = create_user(&app, &json!({"email": "bot@example.com", "role": "member"})).await;
    let user_id = user.json["id"].as_i64().unwrap();
    let created = app
        .post(
            KEYS,
            &app.admin_key,
            &json!({"user_id": user_id, "name": "SOAR integration"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let secret = created.json["key"].as_str().unwrap().to_string();
    assert!(
        secret.starts_with("sleuth_") && secret.len() >= 50,
        "{secret}"
    );
    let mut listed_form = created.json.clone();
    listed_form.as_object_mut().unwrap().remove("key");
    assert_key(&listed_form);
    assert_eq!(created.json["name"], "SOAR integration");
    assert_eq!(created.json["user"]["email"], "bot@example.com");
    assert!(secret.starts_with(created.json["prefix"].as_str().unwrap()));
    assert_eq!(created.json["revoked_at"], Value::Null);
    assert_eq!(created.json["last_used_at"], Value::Null);

    assert_eq!(works(&app, &secret).await, 200, "the new key works at once");
    let key_id = created.json["id"].as_i64().unwrap();
    let listed = app.get(KEYS, &app.admin_key).await;
    assert_eq!(listed.status, 200);
    assert!(!listed.text.contains(&secret), "the secret is never listed");
    let keys = listed.json.as_array().unwrap();
    keys.iter().for_each(assert_key);
    assert_eq!(keys.len(), 4, "the three test keys and this one");
    let ours = keys.iter().find(|key| key["id"] == key_id).unwrap();
    assert_eq!(ours["prefix"], created.json["prefix"]);

    // Revoking stops it at once; revoking again changes nothing.
    let revoke = format!("{KEYS}/{key_id}/revoke");
    let revoked = app.post(&revoke, &app.admin_key, &json!({})).await;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    assert_key(&revoked.json);
    assert!(revoked.json["revoked_at"].is_string());
    assert_error(
        &app.get("/app/api/v1/investigation", &secret).await,
        401,
        "unauthorized",
    );
    let again = app.post(&revoke, &app.admin_key, &json!({})).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.json["revoked_at"], revoked.json["revoked_at"]);
    let listed = app.get(KEYS, &app.admin_key).await;
    let ours = listed
        .json
        .as_array()
        .unwrap()
        .iter()
        .find(|key| key["id"] == key_id)
        .unwrap()
        .clone();
    assert_eq!(
        ours["revoked_at"], revoked.json["revoked_at"],
        "revoked keys stay listed"
    );

    for id in ["999999", "abc", "0"] {
        assert_error(
            &app.post(&format!("{KEYS}/{id}/revoke"), &app.admin_key, &json!({}))
                .await,
            404,
            "not_found",
        );
    }
    // Bad input: unknown or deactivated users, names out of bounds.
    let deactivated = create_user(
        &app,
        &json!({"email": "gone@example.com", "role": "member"}),
    )
    .await;
    let gone_id = deactivated.json["id"].as_i64().unwrap();
    let answer = app
        .patch(
            &format!("{USERS}/{gone_id}"),
            &app.admin_key,
            &json!({"is_active": false}),
        )
        .await;
    assert_eq!(answer.status, 200);
    for (body, field, mentions) in [
        (
            json!({"user_id": 999_999, "name": "x"}),
            Some("user_id"),
            "no user 999999",
        ),
        (
            json!({"user_id": gone_id, "name": "x"}),
            Some("user_id"),
            "deactivated",
        ),
        (json!({"name": "x"}), Some("user_id"), "required"),
        (json!({"user_id": user_id}), Some("name"), "required"),
        (
            json!({"user_id": user_id, "name": "  "}),
            Some("name"),
            "150",
        ),
        (
            json!({"user_id": user_id, "name": "n".repeat(151)}),
            Some("name"),
            "150",
        ),
        (
            json!({"user_id": user_id, "name": "tab\there"}),
            Some("name"),
            "control",
        ),
        (json!({"user_id": "1", "name": "x"}), None, "expected"),
        (
            json!({"user_id": user_id, "name": "x", "role": "admin"}),
            None,
            "unknown field",
        ),
    ] {
        let answer = app.post(KEYS, &app.admin_key, &body).await;
        assert_error(&answer, 400, "bad_request");
        assert!(
            answer.json["error_msg"]
                .as_str()
                .unwrap()
                .contains(mentions),
            "{body}: {}",
            answer.text
        );
        if let Some(field) = field {
            assert!(answer.json["errors"][field].is_array(), "{}", answer.text);
        }
    }
    let at_limit = app
        .post(
            KEYS,
            &app.admin_key,
            &json!({"user_id": user_id, "name": "n".repeat(150)}),
        )
        .await;
    assert_eq!(at_limit.status, 201, "150 characters is the limit");
    assert_eq!(
        app.get(KEYS, &app.admin_key)
            .await
            .json
            .as_array()
            .unwrap()
            .len(),
        5,
        "nothing refused was created"
    );
}

async fn a_deactivated_users_keys_stop_working_at_once(app: TestApp) {
    let (user_id, _, secret) = user_with_key(&app, "leaver@example.com", "member").await;
    assert_eq!(works(&app, &secret).await, 200);
    let path = format!("{USERS}/{user_id}");
    let answer = app
        .patch(&path, &app.admin_key, &json!({"is_active": false}))
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_error(
        &app.get("/app/api/v1/investigation", &secret).await,
        401,
        "unauthorized",
    );
    assert_error(
        &app.post(
            "/app/api/v1/investigation/create",
            &secret,
            &json!({"raw_alert_content": {"title": "from a leaver"}}),
        )
        .await,
        401,
        "unauthorized",
    );
    let answer = app
        .patch(&path, &app.admin_key, &json!({"is_active": true}))
        .await;
    assert_eq!(answer.status, 200);
    assert_eq!(
        works(&app, &secret).await,
        401,
        "deactivation revoked the key: reactivated, the user needs a new one"
    );
}

async fn users_and_keys_fire_their_triggers(app: TestApp) {
    let code = "print(sorted(trigger_args), user['email'])";
    let mut scripts = Vec::new();
    for trigger in [
        trigger_catalog::USER_CREATED,
        trigger_catalog::API_KEY_CREATED,
        trigger_catalog::API_KEY_REVOKED,
    ] {
        let body = json!({
            "display_name": format!("on {trigger}"),
            "trigger_def_uuid": trigger_catalog::trigger_uuid(trigger).to_string(),
            "code": code,
        });
        let answer = app
            .post("/app/api/v1/response-actions", &app.admin_key, &body)
            .await;
        assert_eq!(answer.status, 201, "{}", answer.text);
        scripts.push(answer.json["id"].as_i64().unwrap());
    }
    let (user_id, key_id, _) = user_with_key(&app, "fired@example.com", "member").await;
    let revoke = format!("{KEYS}/{key_id}/revoke");
    assert_eq!(
        app.post(&revoke, &app.admin_key, &json!({})).await.status,
        200
    );
    assert_eq!(
        app.post(&revoke, &app.admin_key, &json!({})).await.status,
        200,
        "revoking again fires nothing"
    );

    let user_runs = ended_runs(&app, scripts[0], 1).await;
    assert_eq!(
        user_runs[0]["stdout"], "['email', 'role', 'user_id'] fired@example.com\n",
        "{}",
        user_runs[0]
    );
    assert_eq!(
        user_runs[0]["trigger_run"]["trigger_args"]["user_id"],
        user_id
    );
    let key_args =
        "['api_key_id', 'name', 'prefix', 'role', 'user_email', 'user_id'] fired@example.com\n";
    for script in &scripts[1..] {
        let runs = ended_runs(&app, *script, 1).await;
        assert_eq!(runs[0]["stdout"], key_args, "{}", runs[0]);
        assert_eq!(runs[0]["trigger_run"]["trigger_args"]["api_key_id"], key_id);
    }
}
