//! The settings an admin changes in the console: context memory, users and tenant unions,
//! each in the browser and checked through the API and the audit log; and what an admin
//! bound to a tenant union may open, side by side with what the API lets their key do.

use serde_json::{Value, json};
use sleuth_domain::Role;
use sleuth_store::{AuditQuery, TenantScope};

use crate::forms::memory_fields;
use crate::harness::{ADMIN, Backend, ConsoleApp, MEMBER, PASSWORD};
use crate::webdriver::Browser;
use crate::{IMG, nothing_injected, sign_in};

/// The HTTP status of the page the browser shows (Chromium keeps it in the navigation
/// timing entry).
async fn page_status(browser: &Browser) -> u64 {
    browser
        .execute("return performance.getEntriesByType('navigation')[0].responseStatus;")
        .await
        .as_u64()
        .expect("a status")
}

async fn api_as(
    app: &ConsoleApp,
    key: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> crate::harness::Answer {
    app.request(
        method,
        path,
        &[("authorization", key)],
        body.map(|body| ("application/json", body.to_string().into_bytes())),
    )
    .await
}

/// The console's audit entries (not the API's), newest first.
async fn console_audit(app: &ConsoleApp) -> Vec<sleuth_store::AuditEntry> {
    app.store
        .list_audit_entries(&AuditQuery {
            limit: 1000,
            ..AuditQuery::default()
        })
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|entry| !entry.action.contains("/app/api/"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_adds_context_memory_sees_its_validation_error_and_removes_it() {
    if !crate::webdriver::available("the context memory form") {
        return;
    }
    context_memory_journey(ConsoleApp::start().await, "").await;
}

/// The same on PostgreSQL (skipped, saying so, without a server named by
/// `SLEUTH_TEST_POSTGRES_URL`); its screenshots are named `postgres-…`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_adds_context_memory_on_postgresql() {
    ConsoleApp::on_postgresql(
        "the context memory form on PostgreSQL",
        context_memory_journey,
    )
    .await;
}

/// An admin adds context memory for a tenant union, sees the validation error of a bad one,
/// and removes it; screenshots named with `shots` first.
async fn context_memory_journey(app: ConsoleApp, shots: &str) {
    let union = app
        .admin_post(
            "/app/api/v1/tenant-unions",
            &json!({"display_name": "Acme"}),
        )
        .await;
    let union_id = union.json["id"].as_i64().expect("a union id");
    let browser = Browser::start().await;
    sign_in(&browser, &app, ADMIN, PASSWORD).await;
    browser.goto(&app.url("/settings/memory")).await;

    // The API's validation, shown above the form with its 400, the form kept.
    let text = format!("{IMG} 198.51.100.9 is the Frankfurt VPN egress");
    browser.type_into("#memory-text", &text).await;
    browser.click("#hint-type option[value=ip]").await;
    browser.type_into("#hint-value", "not-an-address").await;
    browser.click_to_load("#add-memory").await;
    assert_eq!(page_status(&browser).await, 400);
    let problem = browser.text("#settings-problem").await;
    assert!(
        problem.contains("hints[0].entity.value") && problem.contains("is not a valid ip"),
        "{problem}"
    );
    let kept = browser
        .execute("return document.getElementById('memory-text').value;")
        .await;
    assert_eq!(kept, json!(text), "the text stays to be fixed");
    nothing_injected(&browser, "the memory form with its error").await;
    browser
        .screenshot(&format!("{shots}settings-memory-invalid"))
        .await;
    let listed = api_as(
        &app,
        &app.admin_key,
        "GET",
        "/app/api/v1/context-memory/list",
        None,
    )
    .await;
    assert_eq!(
        listed.json["count"], 0,
        "nothing was stored: {}",
        listed.text
    );

    // Fixed: stored as the API lists it, scoped to the union chosen, with its hint.
    browser.type_into("#hint-value", "198.51.100.9").await;
    browser.click("#hint-verdict option[value=benign]").await;
    browser
        .click(&format!("#memory-union option[value='{union_id}']"))
        .await;
    browser.click_to_load("#add-memory").await;
    assert_eq!(page_status(&browser).await, 200);
    assert!(
        browser
            .text("#memory-saved")
            .await
            .starts_with("Added item")
    );
    let listed = api_as(
        &app,
        &app.admin_key,
        "GET",
        "/app/api/v1/context-memory/list",
        None,
    )
    .await;
    assert_eq!(listed.json["count"], 1, "{}", listed.text);
    let item = &listed.json["results"][0];
    assert_eq!(item["text"], json!(text));
    assert_eq!(item["tenant_union_id"], union_id, "{item}");
    let item_id = item["item_id"].as_i64().expect("an id");
    let table = browser.text("#memory-table").await;
    assert!(
        table.contains(IMG) && table.contains("tenant union: Acme"),
        "{table}"
    );
    nothing_injected(&browser, "context memory").await;
    browser
        .screenshot(&format!("{shots}settings-memory-added"))
        .await;

    // Removed with its button.
    browser
        .click_to_load(&format!("#remove-memory-{item_id}"))
        .await;
    assert!(
        browser
            .text("#memory-saved")
            .await
            .starts_with("Removed item")
    );
    let listed = api_as(
        &app,
        &app.admin_key,
        "GET",
        "/app/api/v1/context-memory/list",
        None,
    )
    .await;
    assert_eq!(listed.json["count"], 0, "{}", listed.text);

    // Audited as the API audits them: the created item's id, scope and size, the union
    // it concerns; the removal names the item.
    let audit = console_audit(&app).await;
    let added = audit
        .iter()
        .find(|entry| entry.action == "POST /settings/memory")
        .expect("the add's entry");
    assert_eq!(
        added.resource_id.as_deref(),
        Some(item_id.to_string().as_str())
    );
    assert_eq!(added.detail["hints"], 1, "{:?}", added.detail);
    assert_eq!(added.detail["tenant_union_id"], union_id);
    assert!(
        added.detail.get("console_session_id").is_some(),
        "{:?}",
        added.detail
    );
    let removed = audit
        .iter()
        .find(|entry| entry.action == "POST /settings/memory/{item_id}/delete")
        .expect("the removal's entry");
    assert_eq!(
        removed.resource_id.as_deref(),
        Some(item_id.to_string().as_str())
    );
    assert_eq!(
        audit
            .iter()
            .filter(|entry| entry.action.starts_with("POST /settings/memory"))
            .count(),
        2,
        "the refused add wrote nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_creates_a_user_changes_the_role_sets_a_password_and_deactivates_them() {
    if !crate::webdriver::available("the users form") {
        return;
    }
    users_journey(ConsoleApp::start().await, "").await;
}

/// The same on PostgreSQL (skipped, saying so, without a server named by
/// `SLEUTH_TEST_POSTGRES_URL`); its screenshots are named `postgres-…`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_manages_a_user_on_postgresql() {
    ConsoleApp::on_postgresql("the users form on PostgreSQL", users_journey).await;
}

/// An admin creates a user, changes the role, sets a password and deactivates them;
/// screenshots named with `shots` first.
async fn users_journey(app: ConsoleApp, shots: &str) {
    let browser = Browser::start().await;
    sign_in(&browser, &app, ADMIN, PASSWORD).await;
    browser.goto(&app.url("/settings/users")).await;

    // A duplicate email: the API's refusal, with its 4xx.
    browser.type_into("#user-email", MEMBER).await;
    browser.click_to_load("#create-user").await;
    assert!(page_status(&browser).await >= 400);
    assert!(!browser.text("#settings-problem").await.is_empty());

    let email = "new.analyst@example.com";
    browser.type_into("#user-email", email).await;
    browser.type_into("#user-first", "Nia").await;
    browser.type_into("#user-last", IMG).await;
    browser.click("#user-role option[value=member]").await;
    browser.click_to_load("#create-user").await;
    assert!(browser.text("#user-done").await.starts_with("Created"));
    assert_eq!(browser.text("#user-role-now").await, "member");
    nothing_injected(&browser, "a user's page").await;
    let user = app.user(email).await;
    assert_eq!(user.role, Role::Member);
    assert_eq!(user.last_name, IMG);

    browser
        .click("#role option[value=restricted-read-only]")
        .await;
    browser.click_to_load("#change-role").await;
    assert_eq!(browser.text("#user-role-now").await, "restricted-read-only");
    let listed = app.api_user(email).await;
    assert_eq!(listed["role"], "restricted-read-only", "{listed}");

    // A password the API refuses, then one it takes; the user signs in with it.
    browser.type_into("#user-password", "short").await;
    browser.click_to_load("#set-password").await;
    assert_eq!(page_status(&browser).await, 400);
    assert!(
        browser
            .text("#settings-problem")
            .await
            .contains("at least 12")
    );
    assert_eq!(
        browser
            .execute("return document.getElementById('user-password').value;")
            .await,
        json!(""),
        "a password is never shown again"
    );
    browser.type_into("#user-password", PASSWORD).await;
    browser.click("#must-change").await;
    browser.click_to_load("#set-password").await;
    assert!(browser.text("#user-done").await.contains("password is set"));
    let record = app.store.sign_in_record(email).await.unwrap().unwrap();
    assert!(!record.must_change_password, "unchecked: they keep it");
    let session = app.sign_in_http(email).await;
    assert_eq!(
        app.page(&session, "/").await.status,
        200,
        "they sign in with it"
    );
    browser.screenshot(&format!("{shots}settings-user")).await;

    browser.click_to_load("#deactivate").await;
    assert_eq!(browser.text("#user-active-now").await, "no");
    assert!(!app.user(email).await.is_active);
    assert_eq!(browser.find_all("#reactivate").await.len(), 1);

    // The API's own rule: an admin cannot demote themselves.
    let admin = app.user(ADMIN).await;
    browser
        .goto(&app.url(&format!("/settings/users/{}", admin.id)))
        .await;
    browser.click("#role option[value=member]").await;
    browser.click_to_load("#change-role").await;
    assert_eq!(page_status(&browser).await, 400);
    assert!(
        browser
            .text("#settings-problem")
            .await
            .contains("cannot demote")
    );
    assert_eq!(app.user(ADMIN).await.role, Role::Admin);

    let actions: Vec<String> = console_audit(&app)
        .await
        .into_iter()
        .map(|entry| entry.action)
        .collect();
    for wanted in [
        "POST /settings/users",
        "POST /settings/users/{user_id}",
        "POST /settings/users/{user_id}/password",
    ] {
        assert!(
            actions.iter().any(|action| action == wanted),
            "{wanted}: {actions:?}"
        );
    }
}

/// The unions chosen in a unions' multiple choice (`select`: its id), as the page holds
/// them.
async fn unions_chosen(browser: &Browser, select: &str) -> Value {
    browser
        .execute(&format!(
            "return Array.from(document.querySelectorAll('#{select} option:checked')).map(o => o.value);"
        ))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_binds_a_user_to_two_tenant_unions_then_changes_them() {
    if !crate::webdriver::available("the users form's unions") {
        return;
    }
    user_unions_journey(ConsoleApp::start().await, "").await;
}

/// The same on PostgreSQL (skipped, saying so, without a server named by
/// `SLEUTH_TEST_POSTGRES_URL`); its screenshots are named `postgres-…`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_binds_a_user_to_two_tenant_unions_on_postgresql() {
    ConsoleApp::on_postgresql("the users form's unions on PostgreSQL", user_unions_journey).await;
}

/// An admin binds a new user to two tenant unions (first refused for "every tenant union"
/// and a union at once), then changes them on the user's page; screenshots named with
/// `shots` first.
async fn user_unions_journey(app: ConsoleApp, shots: &str) {
    let unions = app.add_unions(&["Acme", "Globex", "Initech"]).await;
    let (acme, globex, initech) = (unions[0], unions[1], unions[2]);
    let browser = Browser::start().await;
    sign_in(&browser, &app, ADMIN, PASSWORD).await;
    browser.goto(&app.url("/settings/users")).await;
    assert_eq!(
        unions_chosen(&browser, "user-unions").await,
        json!([""]),
        "every union at first"
    );

    // Both "every tenant union" and a union: refused, the choice kept to be fixed.
    let refused_email = "refused@example.com";
    browser.type_into("#user-email", refused_email).await;
    browser
        .click(&format!("#user-unions option[value='{acme}']"))
        .await;
    browser.click_to_load("#create-user").await;
    assert_eq!(page_status(&browser).await, 400);
    assert!(
        browser.text("#settings-problem").await.contains("not both"),
        "{}",
        browser.text("#settings-problem").await
    );
    assert_eq!(
        unions_chosen(&browser, "user-unions").await,
        json!(["", acme.to_string()])
    );
    assert!(
        app.store
            .find_user_by_email(refused_email)
            .await
            .unwrap()
            .is_none()
    );
    browser
        .screenshot(&format!("{shots}settings-user-unions-refused"))
        .await;

    let email = "two.unions@example.com";
    browser.type_into("#user-email", email).await;
    browser.click("#user-unions option[value='']").await;
    browser
        .click(&format!("#user-unions option[value='{globex}']"))
        .await;
    assert_eq!(
        unions_chosen(&browser, "user-unions").await,
        json!([acme.to_string(), globex.to_string()])
    );
    browser.click_to_load("#create-user").await;
    assert!(browser.text("#user-done").await.starts_with("Created"));
    let facts = browser.text("#user-facts").await;
    assert!(
        facts.contains("Acme, Globex") && !facts.contains("Initech"),
        "{facts}"
    );
    assert_eq!(
        app.user(email).await.tenant_scope,
        TenantScope::unions([acme, globex])
    );
    browser
        .screenshot(&format!("{shots}settings-user-two-unions"))
        .await;

    // On their page, what they reach changes: Acme out, Initech in.
    assert_eq!(
        unions_chosen(&browser, "user-unions-now").await,
        json!([acme.to_string(), globex.to_string()])
    );
    browser
        .click(&format!("#user-unions-now option[value='{acme}']"))
        .await;
    browser
        .click(&format!("#user-unions-now option[value='{initech}']"))
        .await;
    browser.click_to_load("#change-unions").await;
    assert!(
        browser
            .text("#user-done")
            .await
            .contains("reach is changed"),
        "{}",
        browser.text("#user-done").await
    );
    let facts = browser.text("#user-facts").await;
    assert!(
        facts.contains("Globex, Initech") && !facts.contains("Acme"),
        "{facts}"
    );
    assert_eq!(
        unions_chosen(&browser, "user-unions-now").await,
        json!([globex.to_string(), initech.to_string()])
    );
    assert_eq!(
        app.user(email).await.tenant_scope,
        TenantScope::unions([globex, initech])
    );
    browser
        .screenshot(&format!("{shots}settings-user-unions-changed"))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_creates_a_tenant_union_and_edits_its_members() {
    if !crate::webdriver::available("the tenant unions form") {
        return;
    }
    tenant_union_journey(ConsoleApp::start().await, "").await;
}

/// The same on PostgreSQL (skipped, saying so, without a server named by
/// `SLEUTH_TEST_POSTGRES_URL`); its screenshots are named `postgres-…`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_edits_a_tenant_union_on_postgresql() {
    ConsoleApp::on_postgresql("the tenant unions form on PostgreSQL", tenant_union_journey).await;
}

/// An admin creates a tenant union and edits its members; screenshots named with `shots`
/// first.
async fn tenant_union_journey(app: ConsoleApp, shots: &str) {
    let browser = Browser::start().await;
    sign_in(&browser, &app, ADMIN, PASSWORD).await;
    browser.goto(&app.url("/settings/unions")).await;

    browser.type_into("#union-name", "   ").await;
    browser.type_into("#union-tenants", "acme").await;
    browser.click_to_load("#create-union").await;
    assert_eq!(page_status(&browser).await, 400);
    assert!(
        browser
            .text("#settings-problem")
            .await
            .contains("display_name")
    );

    let name = format!("Acme {IMG}");
    browser.type_into("#union-name", &name).await;
    browser
        .execute("document.getElementById('union-tenants').value = 'acme-eu\\nacme-us\\nacme-eu';")
        .await;
    browser.click_to_load("#create-union").await;
    assert_eq!(browser.text("#union-saved").await, "Saved.");
    assert_eq!(browser.text("#union-title").await, name);
    nothing_injected(&browser, "a tenant union's page").await;
    let union_path = browser
        .current_url()
        .await
        .trim_start_matches(&app.url(""))
        .split('?')
        .next()
        .unwrap()
        .to_string();
    let union_id = union_path.rsplit('/').next().unwrap().to_string();
    let read = api_as(
        &app,
        &app.admin_key,
        "GET",
        &format!("/app/api/v1/tenant-unions/{union_id}"),
        None,
    )
    .await;
    assert_eq!(read.json["display_name"], json!(name));
    assert_eq!(
        read.json["lookup_dict"],
        json!({"tenant_ids": ["acme-eu", "acme-us"]})
    );

    // What an operator keeps in the lookup beside the members stays.
    let patched = api_as(
        &app,
        &app.admin_key,
        "PATCH",
        &format!("/app/api/v1/tenant-unions/{union_id}"),
        Some(json!({"lookup_dict": {"tenant_ids": ["acme-eu", "acme-us"], "region": "eu"}})),
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.text);
    browser.goto(&app.url(&union_path)).await;
    browser
        .execute("document.getElementById('union-tenants').value = 'acme-us\\nacme-apac';")
        .await;
    browser.type_into("#union-keys", "key-1").await;
    browser.type_into("#union-name", "Acme group").await;
    browser.click_to_load("#save-union").await;
    assert_eq!(browser.text("#union-saved").await, "Saved.");
    let read = api_as(
        &app,
        &app.admin_key,
        "GET",
        &format!("/app/api/v1/tenant-unions/{union_id}"),
        None,
    )
    .await;
    assert_eq!(read.json["display_name"], "Acme group");
    assert_eq!(
        read.json["lookup_dict"],
        json!({"tenant_ids": ["acme-us", "acme-apac"], "region": "eu", "tenant_integration_keys": ["key-1"]})
    );
    browser.screenshot(&format!("{shots}settings-union")).await;
    browser.goto(&app.url("/settings/unions")).await;
    assert!(browser.text("#unions-table").await.contains("Acme group"));

    let actions: Vec<String> = console_audit(&app)
        .await
        .into_iter()
        .map(|entry| entry.action)
        .collect();
    assert!(
        actions
            .iter()
            .any(|action| action == "POST /settings/unions"),
        "{actions:?}"
    );
    assert!(
        actions
            .iter()
            .any(|action| action == "POST /settings/unions/{tenant_union_id}")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_bound_to_a_tenant_union_gets_in_the_console_what_the_api_allows() {
    bound_admin_journey(ConsoleApp::start().await).await;
}

/// The same on PostgreSQL (skipped, saying so, without a server named by
/// `SLEUTH_TEST_POSTGRES_URL`): the scoped reads of memory, unions and the audit log are
/// the other backend's statements. Plain HTTP, as on SQLite: it needs no browser.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_bound_to_a_tenant_union_on_postgresql() {
    if let Some(app) = ConsoleApp::start_on(Backend::Postgres, |_| {}).await {
        bound_admin_journey(app).await;
    }
}

/// What an admin bound to a tenant union may open in the console is what their key may do
/// over the API: what every tenant shares is refused on both; context memory, the unions
/// they reach and the audit log keep to their union on both.
async fn bound_admin_journey(app: ConsoleApp) {
    let ours = app
        .admin_post(
            "/app/api/v1/tenant-unions",
            &json!({"display_name": "Ours"}),
        )
        .await
        .json["id"]
        .as_i64()
        .unwrap();
    let theirs = app
        .admin_post(
            "/app/api/v1/tenant-unions",
            &json!({"display_name": "Theirs"}),
        )
        .await
        .json["id"]
        .as_i64()
        .unwrap();
    for (union, text) in [
        (ours, "ours: 198.51.100.1 is our VPN"),
        (theirs, "theirs: 198.51.100.2 is their VPN"),
    ] {
        let created = app
            .admin_post(
                "/app/api/v1/context-memory/create",
                &json!({"text": text, "tenant_union_id": union}),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.text);
    }
    let bound_email = "bound.admin@example.com";
    let key = app
        .add_user(bound_email, Role::Admin, TenantScope::unions([ours]))
        .await;
    let cookie = app.sign_in_http(bound_email).await;

    // Refused on both: what every tenant shares.
    for (console, api) in [
        ("/settings/context", "/app/api/v1/context"),
        ("/settings/strategies", "/app/api/v1/custom-strategies"),
        ("/settings/actions", "/app/api/v1/response-actions"),
        ("/settings/users", "/app/api/v1/users"),
        ("/settings/audit?verify=1", "/app/api/v1/audit-log/export"),
    ] {
        let page = app.page(&cookie, console).await;
        let answer = api_as(&app, &key, "GET", api, None).await;
        assert_eq!(
            (page.status, answer.status),
            (403, 403),
            "{console} / {api}: {}",
            page.text
        );
        assert!(page.text.contains("bound to no tenant union"), "{console}");
    }
    let refused = app
        .post_form(&cookie, "/settings/unions", &[("display_name", "Mine")])
        .await;
    let api_refused = api_as(
        &app,
        &key,
        "POST",
        "/app/api/v1/tenant-unions",
        Some(json!({"display_name": "Mine"})),
    )
    .await;
    assert_eq!((refused.status, api_refused.status), (403, 403));
    let refused = app
        .post_form(
            &cookie,
            &format!("/settings/unions/{ours}"),
            &[("display_name", "Renamed")],
        )
        .await;
    assert_eq!(refused.status, 403);

    // Open on both, within their union.
    let overview = app.page(&cookie, "/settings").await;
    assert_eq!(overview.status, 200);
    assert!(overview.text.contains("id=\"bound-admin\""));
    assert!(
        !overview.text.contains("href=\"/settings/context\""),
        "no link to a 403"
    );

    let memory = app.page(&cookie, "/settings/memory").await;
    let api_memory = api_as(&app, &key, "GET", "/app/api/v1/context-memory/list", None).await;
    assert_eq!((memory.status, api_memory.status), (200, 200));
    assert!(memory.text.contains("ours: 198.51.100.1") && !memory.text.contains("theirs:"));
    assert_eq!(api_memory.json["count"], 1);
    assert!(
        !memory.text.contains("every alert</option>"),
        "only their union to choose"
    );
    // An item for every alert is refused (403) as over the API; one of their union is made.
    // The whole form as a page sends it (`ConsoleForm` refuses a partial one), with no
    // union chosen: the option only an unbound admin's page has.
    let global = app
        .post_form(
            &cookie,
            "/settings/memory",
            &memory_fields(&[("text", "global: 192.0.2.1 is a scanner")]),
        )
        .await;
    let api_global = api_as(
        &app,
        &key,
        "POST",
        "/app/api/v1/context-memory/create",
        Some(json!({"text": "global: 192.0.2.1 is a scanner"})),
    )
    .await;
    assert_eq!(
        (global.status, api_global.status),
        (403, 403),
        "{}",
        global.text
    );
    assert!(global.text.contains("id=\"settings-problem\""));
    let ours_text = ours.to_string();
    let made = app
        .post_form(
            &cookie,
            "/settings/memory",
            &memory_fields(&[
                ("text", "ours: 192.0.2.7 is our scanner"),
                ("tenant_union_id", &ours_text),
            ]),
        )
        .await;
    assert_eq!(made.status, 303, "{}", made.text);
    // Their union's item is as missing as over the API.
    let theirs_item = app
        .store
        .list_memory_items(&sleuth_store::MemoryQuery {
            search: Some("theirs".into()),
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap()
        .items[0]
        .id;
    let removal = app
        .post_form(
            &cookie,
            &format!("/settings/memory/{theirs_item}/delete"),
            &[],
        )
        .await;
    let api_removal = api_as(
        &app,
        &key,
        "DELETE",
        &format!("/app/api/v1/context-memory/delete/{theirs_item}"),
        None,
    )
    .await;
    assert_eq!(
        (removal.status, api_removal.status),
        (404, 404),
        "{}",
        removal.text
    );

    let unions = app.page(&cookie, "/settings/unions").await;
    let api_unions = api_as(&app, &key, "GET", "/app/api/v1/tenant-unions", None).await;
    assert_eq!((unions.status, api_unions.status), (200, 200));
    assert!(unions.text.contains("Ours") && !unions.text.contains("Theirs"));
    assert_eq!(api_unions.json.as_array().unwrap().len(), 1);
    assert!(
        !unions.text.contains("id=\"union-form\""),
        "no form it cannot send"
    );

    let audit = app.page(&cookie, "/settings/audit").await;
    let api_audit = api_as(&app, &key, "GET", "/app/api/v1/audit-log", None).await;
    assert_eq!((audit.status, api_audit.status), (200, 200));
    assert!(!audit.text.contains("id=\"verify-chain\""));
    // Their entries only: their union's memory item is in, the other union's creation not.
    assert!(
        audit.text.contains("POST /settings/memory"),
        "{}",
        audit.text
    );
    assert!(!audit.text.contains("POST /app/api/v1/tenant-unions"));
}
