//! The settings forms refuse what their page would never send, whole: a field missing,
//! repeated or unknown, a value of the wrong type, a value the API does not know, a body
//! larger than the server takes, and a body that is not a form. Each is answered with an
//! error (the page with its message, or the console's error page) and a 4xx, and the
//! store is read before and after: users and their passwords, keys, tenant unions, context
//! memory, the context document, response actions and their versions, strategies, and the
//! audit log (every console write that succeeds adds an entry) must all be as they were.
//! Plain HTTP over loopback: no browser is needed to send what no browser would. Each
//! test runs on SQLite and on PostgreSQL.

use serde_json::json;
use sleuth_store::{AuditQuery, MemoryQuery, StrategyQuery, TenantScope};

use crate::harness::{ADMIN, Answer, Backend, ConsoleApp, MEMBER, PASSWORD};

/// A context document that loads.
const CONTEXT: &str = "[organization]\nname = \"Example Corp\"\nusual_countries = [\"GB\"]\n";

/// Each test on SQLite and on PostgreSQL (skipped, saying so, without a server named by
/// `SLEUTH_TEST_POSTGRES_URL`): the forms call the same store functions, whose writes
/// differ by backend.
macro_rules! on_both_backends {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    super::$name(crate::harness::ConsoleApp::start().await).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if let Some(app) = crate::harness::ConsoleApp::start_on(super::Backend::Postgres, |_| {}).await {
                        super::$name(app).await;
                    }
                }
            }
        )+
    };
}

on_both_backends!(
    every_settings_form_refuses_bad_input_whole_and_changes_nothing,
    a_settings_form_larger_than_the_body_limit_or_not_a_form_is_refused,
    the_forms_outside_settings_refuse_a_body_past_the_limit_with_a_page,
    the_forms_outside_settings_refuse_a_field_their_page_does_not_have,
    a_new_user_is_bound_to_every_union_chosen_and_their_key_to_those_only,
    an_existing_users_unions_change_from_their_page,
);

/// Everything a settings form could change, as text to compare.
async fn snapshot(app: &ConsoleApp) -> String {
    let store = &app.store;
    let mut parts = Vec::new();
    for user in store.list_users().await.unwrap() {
        let record = store
            .sign_in_record(user.email.as_str())
            .await
            .unwrap()
            .unwrap();
        parts.push(format!(
            "{user:?} password {:?} must change {}",
            record.password_hash.map(|hash| hash.0),
            record.must_change_password
        ));
    }
    for key in store.list_api_keys().await.unwrap() {
        // Not its last use: a key used by the set-up may still be noted as used.
        parts.push(format!(
            "key {} {} {} {:?} {:?}",
            key.id, key.name, key.user_email, key.tenant_scope, key.revoked_at
        ));
    }
    parts.push(format!("{:?}", store.list_tenant_unions().await.unwrap()));
    let memory = store
        .list_memory_items(&MemoryQuery {
            limit: 1000,
            ..MemoryQuery::default()
        })
        .await
        .unwrap();
    parts.push(format!("{memory:?}"));
    parts.push(format!("{:?}", store.get_context_document().await.unwrap()));
    for archived in [false, true] {
        for script in store.list_scripts(archived).await.unwrap() {
            let versions = store.list_script_versions(script.id).await.unwrap();
            parts.push(format!("{script:?} {versions:?}"));
        }
    }
    let strategies = store
        .list_strategies(&StrategyQuery {
            is_archived: false,
            is_enabled: None,
            limit: 1000,
            offset: 0,
        })
        .await
        .unwrap();
    parts.push(format!("{strategies:?}"));
    let audit = store
        .list_audit_entries(&AuditQuery {
            limit: 1,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    parts.push(format!("audit entries: {}", audit.total));
    parts.join("\n")
}

/// What the set-up made, for the forms' paths and fields.
struct Made {
    union_id: i64,
    member_id: i64,
    script_id: i64,
    strategy_id: i64,
}

async fn set_up(app: &ConsoleApp) -> Made {
    let union = app
        .admin_post(
            "/app/api/v1/tenant-unions",
            &json!({"display_name": "Acme", "lookup_dict": {"tenant_ids": ["acme-eu"], "tenant_integration_keys": ["key-1"]}}),
        )
        .await;
    assert_eq!(union.status, 201, "{}", union.text);
    let context = app
        .request(
            "PUT",
            "/app/api/v1/context",
            &[("authorization", &app.admin_key)],
            Some(("application/toml", CONTEXT.as_bytes().to_vec())),
        )
        .await;
    assert_eq!(context.status, 200, "{}", context.text);
    let memory = app
        .admin_post(
            "/app/api/v1/context-memory/create",
            &json!({"text": "198.51.100.9 is the Frankfurt VPN egress"}),
        )
        .await;
    assert_eq!(memory.status, 201, "{}", memory.text);
    let completed = sleuth_jobs::trigger_catalog::trigger_uuid(
        sleuth_jobs::trigger_catalog::INVESTIGATION_COMPLETED,
    );
    let script = app
        .admin_post(
            "/app/api/v1/response-actions",
            &json!({"display_name": "Ticket", "trigger_def_uuid": completed.to_string(), "code": "print(1)"}),
        )
        .await;
    assert_eq!(script.status, 201, "{}", script.text);
    let strategy = app
        .admin_post(
            "/app/api/v1/custom-strategies",
            &json!({
                "title": "Lab hosts",
                "is_enabled": false,
                "outcomes": [{"condition": {"==": [1, 1]}, "outcome": "COMPLETED_FALSE_ALERT"}],
            }),
        )
        .await;
    assert_eq!(strategy.status, 201, "{}", strategy.text);
    Made {
        union_id: union.json["id"].as_i64().unwrap(),
        member_id: app.user(MEMBER).await.id,
        script_id: script.json["id"].as_i64().unwrap(),
        strategy_id: strategy.json["id"].as_i64().unwrap(),
    }
}

/// One refused form: where it goes, what it sends (beside its CSRF field), the status it
/// must get and a word its message must hold.
struct Refused {
    what: &'static str,
    path: String,
    fields: Vec<(&'static str, String)>,
    status: u16,
    says: &'static str,
}

fn refused(
    what: &'static str,
    path: &str,
    fields: &[(&'static str, &str)],
    status: u16,
    says: &'static str,
) -> Refused {
    Refused {
        what,
        path: path.to_string(),
        fields: fields
            .iter()
            .map(|(name, value)| (*name, (*value).to_string()))
            .collect(),
        status,
        says,
    }
}

/// The context memory form as its page sends it, with `changes` made.
pub(crate) fn memory_fields<'a>(
    changes: &[(&'static str, &'a str)],
) -> Vec<(&'static str, &'a str)> {
    let mut fields = vec![
        ("text", "203.0.113.5 is the office printer"),
        ("tenant_union_id", ""),
        ("tenant_id", ""),
        ("tenant_label", ""),
        ("hint_type", ""),
        ("hint_value", ""),
        ("hint_verdict", ""),
        ("hint_note", ""),
    ];
    for (name, value) in changes {
        match fields.iter_mut().find(|(field, _)| field == name) {
            Some(field) => field.1 = value,
            None => fields.push((name, value)),
        }
    }
    fields
}

/// The new-user form as its page sends it, with the unions chosen ("" is "every tenant
/// union").
pub(crate) fn new_user_fields<'a>(
    email: &'a str,
    role: &'a str,
    tenant_union_ids: &[&'a str],
) -> Vec<(&'static str, &'a str)> {
    let mut fields = vec![
        ("email", email),
        ("first_name", "Nia"),
        ("last_name", "Okafor"),
        ("role", role),
    ];
    fields.extend(tenant_union_ids.iter().map(|id| ("tenant_union_ids", *id)));
    fields
}

fn action_fields(trigger: &str) -> Vec<(&'static str, &str)> {
    vec![
        ("display_name", "Block"),
        ("trigger_def_uuid", trigger),
        ("code", "print(2)"),
    ]
}

/// The forms' fields as their pages send them, with one thing wrong in each.
fn refused_forms(made: &Made) -> Vec<Refused> {
    let union = format!("/settings/unions/{}", made.union_id);
    let user = format!("/settings/users/{}", made.member_id);
    let password = format!("{user}/password");
    let unions_of_user = format!("{user}/unions");
    let test_run = format!("/settings/actions/{}/test", made.script_id);
    let backtest = format!("/settings/strategies/{}/backtest", made.strategy_id);
    let email = "nia@example.com";
    let union_id = made.union_id.to_string();
    let completed = sleuth_jobs::trigger_catalog::trigger_uuid(
        sleuth_jobs::trigger_catalog::INVESTIGATION_COMPLETED,
    )
    .to_string();
    let mut text_twice = memory_fields(&[]);
    text_twice.push(("text", "twice"));
    let too_long = "A".repeat(151);
    vec![
        // The context document.
        refused(
            "context: no document",
            "/settings/context",
            &[],
            400,
            "toml",
        ),
        refused(
            "context: the document twice",
            "/settings/context",
            &[("toml", CONTEXT), ("toml", "")],
            400,
            "duplicate field",
        ),
        refused(
            "context: a field the page does not have",
            "/settings/context",
            &[("toml", CONTEXT), ("replace", "all")],
            400,
            "unknown field",
        ),
        refused(
            "context: a name that is a number",
            "/settings/context",
            &[("toml", "[organization]\nname = 42\n")],
            400,
            "not valid",
        ),
        refused(
            "context: a country that does not exist",
            "/settings/context",
            &[(
                "toml",
                "[organization]\nname = \"Example Corp\"\nusual_countries = [\"Atlantis\"]\n",
            )],
            400,
            "Atlantis",
        ),
        // Context memory.
        refused(
            "memory: no tenant union field",
            "/settings/memory",
            &[("text", "203.0.113.5 is the office printer")],
            400,
            "tenant_union_id",
        ),
        refused(
            "memory: a union id that is a word",
            "/settings/memory",
            &memory_fields(&[("tenant_union_id", "acme")]),
            400,
            "tenant_union_id",
        ),
        refused(
            "memory: a union that does not exist",
            "/settings/memory",
            &memory_fields(&[("tenant_union_id", "999999")]),
            400,
            "999999",
        ),
        refused(
            "memory: an entity type that does not exist",
            "/settings/memory",
            &memory_fields(&[("hint_type", "planet"), ("hint_value", "Mars")]),
            400,
            "planet",
        ),
        refused(
            "memory: a verdict that does not exist",
            "/settings/memory",
            &memory_fields(&[
                ("hint_type", "ip"),
                ("hint_value", "203.0.113.5"),
                ("hint_verdict", "harmless-ish"),
            ]),
            400,
            "verdict",
        ),
        refused(
            "memory: the text twice",
            "/settings/memory",
            &text_twice,
            400,
            "duplicate field",
        ),
        refused(
            "memory: removing an item whose id is a word",
            "/settings/memory/first/delete",
            &[],
            404,
            "no such context memory item",
        ),
        refused(
            "memory: removing an item that does not exist",
            "/settings/memory/999999/delete",
            &[],
            404,
            "not found",
        ),
        // Tenant unions.
        refused(
            "unions: a new union without its integration keys field",
            "/settings/unions",
            &[("display_name", "Globex"), ("tenant_ids", "globex")],
            400,
            "tenant_integration_keys",
        ),
        refused(
            "unions: a new union named as another",
            "/settings/unions",
            &[
                ("display_name", "Acme"),
                ("tenant_ids", ""),
                ("tenant_integration_keys", ""),
            ],
            400,
            "already exists",
        ),
        refused(
            "unions: a change without the integration keys field",
            &union,
            &[("display_name", "Acme"), ("tenant_ids", "acme-eu")],
            400,
            "tenant_integration_keys",
        ),
        refused(
            "unions: a name too long",
            &union,
            &[
                ("display_name", &too_long),
                ("tenant_ids", "acme-eu"),
                ("tenant_integration_keys", "key-1"),
            ],
            400,
            "display_name",
        ),
        refused(
            "unions: a union whose id is a word",
            "/settings/unions/acme",
            &[
                ("display_name", "Acme"),
                ("tenant_ids", "acme-eu"),
                ("tenant_integration_keys", "key-1"),
            ],
            404,
            "no such tenant union",
        ),
        // Users: a new one.
        refused(
            "users: a role that does not exist",
            "/settings/users",
            &new_user_fields(email, "superuser", &[""]),
            400,
            "superuser",
        ),
        refused(
            "users: a union id that is a word",
            "/settings/users",
            &new_user_fields(email, "member", &["acme"]),
            400,
            "not a tenant union id",
        ),
        refused(
            "users: a union that does not exist",
            "/settings/users",
            &new_user_fields(email, "member", &[&union_id, "999999"]),
            400,
            "999999",
        ),
        refused(
            "users: no union chosen (which would read as every union)",
            "/settings/users",
            &new_user_fields(email, "member", &[]),
            400,
            "choose every tenant union",
        ),
        refused(
            "users: every union and one union",
            "/settings/users",
            &new_user_fields(email, "member", &["", &union_id]),
            400,
            "not both",
        ),
        refused(
            "users: the email twice",
            "/settings/users",
            &[
                new_user_fields(email, "member", &[""]),
                vec![("email", "other@example.com")],
            ]
            .concat(),
            400,
            "more than once",
        ),
        refused(
            "users: a field the page does not have",
            "/settings/users",
            &[
                new_user_fields(email, "member", &[""]),
                vec![("is_admin", "on")],
            ]
            .concat(),
            400,
            "not a field",
        ),
        refused(
            "users: an email that is not one",
            "/settings/users",
            &new_user_fields("nia-at-example", "member", &[""]),
            400,
            "email",
        ),
        // Users: a change.
        refused(
            "user: is_active neither true nor false",
            &user,
            &[("is_active", "maybe")],
            400,
            "is_active",
        ),
        refused(
            "user: a role that does not exist",
            &user,
            &[("role", "superuser")],
            400,
            "superuser",
        ),
        refused(
            "user: nothing to change",
            &user,
            &[],
            400,
            "nothing to change",
        ),
        refused(
            "user: the role twice",
            &user,
            &[("role", "admin"), ("role", "member")],
            400,
            "duplicate field",
        ),
        refused(
            "user: a user whose id is a word",
            "/settings/users/member",
            &[("role", "admin")],
            404,
            "no such user",
        ),
        refused(
            "user unions: none chosen",
            &unions_of_user,
            &[],
            400,
            "tenant_union_ids",
        ),
        refused(
            "user unions: every union and one union together",
            &unions_of_user,
            &[("tenant_union_ids", ""), ("tenant_union_ids", &union_id)],
            400,
            "not both",
        ),
        refused(
            "user unions: a union id that is a word",
            &unions_of_user,
            &[("tenant_union_ids", "acme")],
            400,
            "not a tenant union id",
        ),
        refused(
            "user unions: a union that does not exist",
            &unions_of_user,
            &[("tenant_union_ids", "987654")],
            400,
            "987654",
        ),
        refused(
            "user unions: a field the form does not have",
            &unions_of_user,
            &[("tenant_union_ids", &union_id), ("role", "admin")],
            400,
            "is not a field of this form",
        ),
        refused(
            "password: must_change neither checked nor unchecked",
            &password,
            &[
                ("password", "a perfectly long passphrase"),
                ("must_change", "maybe"),
            ],
            400,
            "must_change",
        ),
        refused(
            "password: no password field",
            &password,
            &[("must_change", "on")],
            400,
            "password",
        ),
        refused(
            "password: too short",
            &password,
            &[("password", "short")],
            400,
            "at least 12",
        ),
        // Response actions.
        refused(
            "actions: a trigger that does not exist",
            "/settings/actions",
            &action_fields("9b2f4a8e-0000-4000-8000-000000000000"),
            400,
            "no trigger",
        ),
        refused(
            "actions: a trigger that is not a uuid",
            "/settings/actions",
            &action_fields("investigation-completed"),
            400,
            "trigger_def_uuid",
        ),
        refused(
            "actions: no code field",
            "/settings/actions",
            &action_fields(&completed)[..2],
            400,
            "code",
        ),
        refused(
            "test-run: trigger arguments that are a list",
            &test_run,
            &[("code", "print(3)"), ("trigger_args", "[1]")],
            400,
            "trigger_args",
        ),
        refused(
            "test-run: no trigger arguments field",
            &test_run,
            &[("code", "print(3)")],
            400,
            "trigger_args",
        ),
        // Strategies: the backtest stores nothing, and must not start on bad input.
        refused(
            "backtest: at most a word",
            &backtest,
            &[
                ("from", "2026-03-01"),
                ("until", "2026-03-02"),
                ("max_investigations", "many"),
            ],
            400,
            "max_investigations",
        ),
        refused(
            "backtest: from a word",
            &backtest,
            &[
                ("from", "yesterday"),
                ("until", "2026-03-02"),
                ("max_investigations", "10"),
            ],
            400,
            "from",
        ),
        refused(
            "backtest: no until field",
            &backtest,
            &[("from", "2026-03-01"), ("max_investigations", "10")],
            400,
            "until",
        ),
    ]
}

/// The message of a refused form: the problem shown above the page's form, or the error
/// page's.
fn problem_text(page: &str) -> Option<&str> {
    [
        ("id=\"settings-problem\"", "</div>"),
        ("id=\"error-message\"", "</p>"),
    ]
    .into_iter()
    .find_map(|(start, end)| {
        let from = page.find(start)?;
        let rest = &page[from..];
        Some(&rest[..rest.find(end).unwrap_or(rest.len())])
    })
}

fn is_html(answer: &Answer) -> bool {
    answer
        .headers
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/html"))
}

async fn every_settings_form_refuses_bad_input_whole_and_changes_nothing(app: ConsoleApp) {
    let made = set_up(&app).await;
    let cookie = app.sign_in_http(ADMIN).await;
    let mut before = snapshot(&app).await;
    let mut failures = Vec::new();
    for case in refused_forms(&made) {
        let fields: Vec<(&str, &str)> = case
            .fields
            .iter()
            .map(|(name, value)| (*name, value.as_str()))
            .collect();
        let answer = app.post_form(&cookie, &case.path, &fields).await;
        // What the page says: its problem, else its main part.
        let said = problem_text(&answer.text)
            .or_else(|| answer.text.split("<main>").nth(1))
            .unwrap_or(&answer.text);
        let start: String = said.chars().take(1500).collect();
        if answer.status != case.status {
            failures.push(format!(
                "{}: {} instead of {}: {start}",
                case.what, answer.status, case.status
            ));
        } else if !is_html(&answer)
            || !problem_text(&answer.text).is_some_and(|problem| problem.contains(case.says))
        {
            failures.push(format!(
                "{}: not a page saying {:?}: {start}",
                case.what, case.says
            ));
        }
        let after = snapshot(&app).await;
        if after != before {
            let changed: Vec<&str> = after
                .lines()
                .filter(|line| !before.lines().any(|was| was == *line))
                .collect();
            failures.push(format!(
                "{}: the store changed, now:\n{}",
                case.what,
                changed.join("\n")
            ));
            // The next cases are judged against the store as it is now.
            before = after;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));

    // The same forms, sent right, do change the store: the snapshot sees it.
    let saved = app
        .post_form(
            &cookie,
            &format!("/settings/unions/{}", made.union_id),
            &[
                ("display_name", "Acme group"),
                ("tenant_ids", "acme-eu"),
                ("tenant_integration_keys", "key-1"),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.text);
    assert_ne!(snapshot(&app).await, before, "the snapshot sees a change");
}

type OversizedForm = (String, &'static str, Vec<(&'static str, &'static str)>);

/// Sends each form with its padded field past the body limit, as the session of `cookie`,
/// and asserts the console's 413 page and a store unchanged from `before`.
async fn refuse_oversized(
    app: &ConsoleApp,
    cookie: &str,
    csrf: &str,
    forms: &[OversizedForm],
    before: &str,
) {
    let padding = "x".repeat(app.state.settings().server.body_limit_bytes * 2);
    for (path, padded, fields) in forms {
        let mut body = form_urlencoded::Serializer::new(String::new());
        body.append_pair("csrf", csrf);
        for (name, value) in fields {
            body.append_pair(name, value);
        }
        body.append_pair(padded, &padding);
        let answer = app
            .post_oversized(
                cookie,
                path,
                "application/x-www-form-urlencoded",
                body.finish().into_bytes(),
            )
            .await;
        let start: String = answer.text.chars().take(2000).collect();
        assert_eq!(answer.status, 413, "{path}: {start}");
        assert!(
            start
                .to_ascii_lowercase()
                .contains("content-type: text/html")
                && start.contains("larger than this server takes"),
            "{path}: {start}"
        );
        assert_eq!(snapshot(app).await, before, "{path} changed the store");
    }
}

async fn a_settings_form_larger_than_the_body_limit_or_not_a_form_is_refused(app: ConsoleApp) {
    let made = set_up(&app).await;
    let cookie = app.sign_in_http(ADMIN).await;
    let csrf = app.csrf(&cookie).await;
    let before = snapshot(&app).await;
    // Each form: its path, the field padded past the limit, and its other fields.
    let forms: Vec<OversizedForm> = vec![
        ("/settings/context".into(), "toml", vec![]),
        (
            "/settings/memory".into(),
            "text",
            vec![("tenant_union_id", ""), ("hint_type", "")],
        ),
        ("/settings/memory/1/delete".into(), "padding", vec![]),
        (
            "/settings/unions".into(),
            "tenant_ids",
            vec![("display_name", "Big"), ("tenant_integration_keys", "")],
        ),
        (
            format!("/settings/unions/{}", made.union_id),
            "tenant_ids",
            vec![("display_name", "Acme"), ("tenant_integration_keys", "")],
        ),
        (
            "/settings/users".into(),
            "last_name",
            vec![
                ("email", "big@example.com"),
                ("first_name", ""),
                ("role", "member"),
                ("tenant_union_ids", ""),
            ],
        ),
        (
            format!("/settings/users/{}", made.member_id),
            "role",
            vec![],
        ),
        (
            format!("/settings/users/{}/password", made.member_id),
            "password",
            vec![],
        ),
        (
            format!("/settings/users/{}/unions", made.member_id),
            "tenant_union_ids",
            vec![],
        ),
        (
            "/settings/actions".into(),
            "code",
            vec![("display_name", "Big")],
        ),
        (
            format!("/settings/actions/{}/test", made.script_id),
            "code",
            vec![("trigger_args", "{}")],
        ),
        (
            format!("/settings/strategies/{}/backtest", made.strategy_id),
            "from",
            vec![("until", "2026-03-02")],
        ),
    ];
    refuse_oversized(&app, &cookie, &csrf, &forms, &before).await;

    // A body that is not a form at all: JSON, as the API takes.
    let json_body = json!({"csrf": csrf, "email": "json@example.com", "first_name": "", "last_name": "", "role": "admin", "tenant_union_ids": [""]});
    let answer = app
        .request(
            "POST",
            "/settings/users",
            &[("cookie", &cookie), ("accept", "text/html")],
            Some(("application/json", json_body.to_string().into_bytes())),
        )
        .await;
    assert_eq!(answer.status, 415, "{}", answer.text);
    assert!(
        is_html(&answer) && answer.text.contains("takes a form"),
        "{}",
        answer.text
    );
    assert_eq!(
        snapshot(&app).await,
        before,
        "the JSON body changed the store"
    );
}

/// Sign-in, sign-out, the password change, feedback and notes take the same care as the
/// settings forms: a body past the limit is answered with the console's 413 page (not the
/// API's JSON error), and nothing changes: no password, session, note or feedback.
async fn the_forms_outside_settings_refuse_a_body_past_the_limit_with_a_page(app: ConsoleApp) {
    let id = app
        .create(&json!({"title": "Mimikatz on WKS-0231", "severity": "high"}))
        .await;
    app.drain().await;
    let cookie = app.sign_in_http(ADMIN).await;
    let csrf = app.csrf(&cookie).await;
    let before = snapshot(&app).await;
    let forms: Vec<OversizedForm> = vec![
        (
            "/sign-in".into(),
            "password",
            vec![("email", ADMIN), ("next", "/")],
        ),
        (
            "/password".into(),
            "new",
            vec![("current", "whatever"), ("repeat", "x")],
        ),
        (format!("/investigations/{id}/feedback"), "outcome", vec![]),
        (format!("/investigations/{id}/notes"), "text", vec![]),
        ("/sign-out".into(), "padding", vec![]),
    ];
    refuse_oversized(&app, &cookie, &csrf, &forms, &before).await;
    let record = app.store.get_investigation(id).await.unwrap();
    assert_eq!(record.feedback.updated_by, None, "{:?}", record.feedback);
    let notes = app.store.list_notes(id, 10, 0).await.unwrap();
    assert_eq!(notes.total, 0, "{notes:?}");
    // The refused sign-out left the session signed in.
    assert_eq!(app.page(&cookie, "/").await.status, 200);
}

/// Sign-in, the password change, feedback, notes and sign-out refuse a field their page
/// does not have (400, an HTML page naming it), even with every field of the page right:
/// no session is opened, no password, feedback or note changes, the session stays.
async fn the_forms_outside_settings_refuse_a_field_their_page_does_not_have(app: ConsoleApp) {
    let id = app
        .create(&json!({"title": "Mimikatz on WKS-0231", "severity": "high"}))
        .await;
    app.drain().await;
    let cookie = app.sign_in_http(ADMIN).await;
    let before = snapshot(&app).await;

    // Sign-in, with the sign-in page's own cookie and token and the right password.
    let signing_in = app.post_sign_in(ADMIN, &[("remember", "forever")]).await;
    assert_unknown_field_refused(&signing_in, "/sign-in");
    assert!(
        !signing_in.headers.contains_key("set-cookie"),
        "{:?}",
        signing_in.headers
    );

    let feedback = format!("/investigations/{id}/feedback");
    let notes = format!("/investigations/{id}/notes");
    let forms: [(&str, Vec<(&str, &str)>); 4] = [
        (
            "/password",
            vec![
                ("current", PASSWORD),
                ("new", "a much longer new passphrase"),
                ("repeat", "a much longer new passphrase"),
                ("also_reset", "member@example.com"),
            ],
        ),
        (
            &feedback,
            vec![
                ("outcome", "COMPLETED_FALSE_POSITIVE"),
                ("priority", "urgent"),
            ],
        ),
        (&notes, vec![("text", "seen before"), ("pinned", "yes")]),
        ("/sign-out", vec![("everywhere", "yes")]),
    ];
    for (path, fields) in &forms {
        let answer = app.post_form(&cookie, path, fields).await;
        assert_unknown_field_refused(&answer, path);
        assert_eq!(snapshot(&app).await, before, "{path} changed the store");
    }
    let record = app.store.get_investigation(id).await.unwrap();
    assert_eq!(record.feedback.updated_by, None, "{:?}", record.feedback);
    assert_eq!(app.store.list_notes(id, 10, 0).await.unwrap().total, 0);
    assert_eq!(app.page(&cookie, "/").await.status, 200, "still signed in");
}

/// A 400 HTML page that names the unknown field.
fn assert_unknown_field_refused(answer: &Answer, path: &str) {
    let start: String = answer.text.chars().take(3000).collect();
    assert_eq!(answer.status, 400, "{path}: {start}");
    assert!(start.contains("unknown field"), "{path}: {start}");
    assert!(
        answer.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"),
        "{path}: {:?}",
        answer.headers
    );
}

/// The new-user form binds a user to every union chosen (the API's `tenant_union_ids`),
/// and a key made for them without a binding of its own reaches those unions only.
async fn a_new_user_is_bound_to_every_union_chosen_and_their_key_to_those_only(app: ConsoleApp) {
    let unions = app.add_unions(&["Acme", "Globex", "Initech"]).await;
    let [acme, globex, initech] = unions[..] else {
        unreachable!("three unions")
    };
    let cookie = app.sign_in_http(ADMIN).await;
    let (acme_id, globex_id) = (acme.to_string(), globex.to_string());
    let email = "two.unions@example.com";
    let created = app
        .post_form(
            &cookie,
            "/settings/users",
            &new_user_fields(email, "member", &[&acme_id, &globex_id]),
        )
        .await;
    assert_eq!(created.status, 303, "{}", created.text);
    let user = app.user(email).await;
    assert_eq!(user.tenant_scope, TenantScope::unions([acme, globex]));

    // As the API lists them, and as their page names them.
    let listed = app.api_user(email).await;
    assert_eq!(
        listed["tenant_union_ids"],
        json!([acme, globex]),
        "{listed}"
    );
    let page = app
        .page(&cookie, &format!("/settings/users/{}", user.id))
        .await;
    let facts = page
        .text
        .split("id=\"user-facts\"")
        .nth(1)
        .and_then(|rest| rest.split("</dl>").next())
        .expect("the user's facts");
    assert!(
        facts.contains("Acme, Globex") && !facts.contains("Initech"),
        "{facts}"
    );

    // A key made for them without a binding takes theirs: it lists the investigations of
    // both unions and not the third's.
    let key = key_of(&app, user.id).await;
    one_investigation_per_union(&app, [acme, globex, initech]).await;
    assert_eq!(
        titles_reached(&app, &key).await,
        ["Beacon at Globex", "Mimikatz at Acme"]
    );

    // "Every tenant union" alone binds to none.
    let every = app
        .post_form(
            &cookie,
            "/settings/users",
            &new_user_fields("every.union@example.com", "member", &[""]),
        )
        .await;
    assert_eq!(every.status, 303, "{}", every.text);
    assert_eq!(
        app.user("every.union@example.com").await.tenant_scope,
        TenantScope::All
    );
}

/// An existing user's unions change on their page (the API's PATCH `tenant_union_ids`):
/// from every union to two, which the page then shows chosen, and back to every union;
/// their key follows at once.
async fn an_existing_users_unions_change_from_their_page(app: ConsoleApp) {
    let unions = app.add_unions(&["Acme", "Globex", "Initech"]).await;
    let [acme, globex, initech] = unions[..] else {
        unreachable!("three unions")
    };
    let cookie = app.sign_in_http(ADMIN).await;
    let email = "moving@example.com";
    let created = app
        .post_form(
            &cookie,
            "/settings/users",
            &new_user_fields(email, "member", &[""]),
        )
        .await;
    assert_eq!(created.status, 303, "{}", created.text);
    let user = app.user(email).await;
    assert_eq!(user.tenant_scope, TenantScope::All);
    let key = key_of(&app, user.id).await;
    one_investigation_per_union(&app, [acme, globex, initech]).await;
    assert_eq!(titles_reached(&app, &key).await.len(), 3);

    let path = format!("/settings/users/{}/unions", user.id);
    let (acme_id, initech_id) = (acme.to_string(), initech.to_string());
    let changed = app
        .post_form(
            &cookie,
            &path,
            &[
                ("tenant_union_ids", &acme_id),
                ("tenant_union_ids", &initech_id),
            ],
        )
        .await;
    assert_eq!(changed.status, 303, "{}", changed.text);
    assert_eq!(
        app.user(email).await.tenant_scope,
        TenantScope::unions([acme, initech])
    );
    assert_eq!(
        titles_reached(&app, &key).await,
        ["Mimikatz at Acme", "Phish at Initech"]
    );
    let page = app
        .page(&cookie, &format!("/settings/users/{}?done=unions", user.id))
        .await;
    let form = page
        .text
        .split("id=\"unions-form\"")
        .nth(1)
        .and_then(|rest| rest.split("</form>").next())
        .expect("the unions form");
    for (id, selected) in [
        (&acme_id, true),
        (&globex.to_string(), false),
        (&initech_id, true),
    ] {
        let option = format!("<option value=\"{id}\" selected>");
        assert_eq!(form.contains(&option), selected, "{id}: {form}");
    }
    assert!(
        page.text.contains("What they reach is changed"),
        "{}",
        page.text
    );

    let every = app
        .post_form(&cookie, &path, &[("tenant_union_ids", "")])
        .await;
    assert_eq!(every.status, 303, "{}", every.text);
    assert_eq!(app.user(email).await.tenant_scope, TenantScope::All);
    assert_eq!(titles_reached(&app, &key).await.len(), 3);
}

/// A new key of the user `user_id`, made without a binding of its own.
async fn key_of(app: &ConsoleApp, user_id: i64) -> String {
    let key = app
        .admin_post(
            "/app/api/v1/api-keys",
            &json!({"user_id": user_id, "name": "the user's key"}),
        )
        .await;
    assert_eq!(key.status, 201, "{}", key.text);
    key.json["key"].as_str().unwrap().to_string()
}

/// One concluded investigation in each of the three unions, in order: "Mimikatz at Acme",
/// "Beacon at Globex", "Phish at Initech".
async fn one_investigation_per_union(app: &ConsoleApp, unions: [i64; 3]) {
    let titles = ["Mimikatz at Acme", "Beacon at Globex", "Phish at Initech"];
    for (union, title) in unions.into_iter().zip(titles) {
        let answer = app
            .admin_post(
                "/app/api/v1/investigation/create",
                &json!({"raw_alert_content": crate::alert(title, title, "WKS-1", "203.0.113.7"), "tenant_union_id": union}),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
    }
    assert_eq!(app.drain().await, 3);
}

/// The titles of the investigations `key` lists, sorted.
async fn titles_reached(app: &ConsoleApp, key: &str) -> Vec<String> {
    let reached = app
        .request(
            "GET",
            "/app/api/v1/investigation",
            &[("authorization", key)],
            None,
        )
        .await;
    assert_eq!(reached.status, 200, "{}", reached.text);
    let mut titles: Vec<String> = reached.json["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|investigation| investigation["alert"]["title"].as_str())
        .map(str::to_string)
        .collect();
    titles.sort_unstable();
    titles
}
