//! The console's pages beyond the analyst's journey: the 404 page, the response-action
//! runs of an investigation, the dashboard and the admin's settings.

use serde_json::json;

use crate::harness::{ADMIN, ConsoleApp, MEMBER, PASSWORD, READER};
use crate::webdriver::Browser;
use crate::{IMG, nothing_injected, sign_in};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_console_path_is_an_html_404_and_the_api_keeps_its_json_404() {
    let app = ConsoleApp::start().await;
    // What a browser sends when it follows a link.
    let browser = [("accept", "text/html,application/xhtml+xml,*/*;q=0.8")];
    let page = app.request("GET", "/no/such/page", &browser, None).await;
    assert_eq!(page.status, 404);
    let content_type = page.headers["content-type"].to_str().unwrap();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    assert!(page.text.contains("There is no page at /no/such/page."));
    assert!(page.headers.contains_key("content-security-policy"));
    let wrong_method = app.request("DELETE", "/sign-in", &browser, None).await;
    assert_eq!(wrong_method.status, 405);
    assert!(
        wrong_method.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );

    // A client that does not ask for HTML (a script at a wrong path) reads JSON it can parse.
    let script = app.request("GET", "/no/such/page", &[], None).await;
    assert_eq!(script.status, 404);
    assert_eq!(script.json["code"], "not_found", "{}", script.text);
    let api = app
        .request("GET", "/app/api/v1/no-such-endpoint", &browser, None)
        .await;
    assert_eq!(api.status, 404);
    assert!(
        api.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    assert_eq!(api.json["code"], "not_found", "{}", api.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_in_user_meets_the_404_page_with_the_navigation_and_hostile_paths_as_text() {
    if !crate::webdriver::available("the 404 page") {
        return;
    }
    let app = ConsoleApp::start().await;
    let browser = Browser::start().await;
    sign_in(&browser, &app, MEMBER, PASSWORD).await;
    browser
        .goto(&app.url(&format!(
            "/investigations/1/{}",
            IMG.replace(' ', "%20")
                .replace('<', "%3C")
                .replace('>', "%3E")
        )))
        .await;
    assert!(browser.text("h1").await.starts_with("404"));
    let message = browser.text("#error-message").await;
    assert!(message.contains(IMG), "{message}");
    assert_eq!(browser.find_all("#sign-out").await.len(), 1);
    nothing_injected(&browser, "the 404 page").await;
    browser.screenshot("not-found").await;
}

/// Records a run of a script named `name` about `investigation_id`, ended with `stdout`.
async fn record_run(app: &ConsoleApp, investigation_id: i64, name: &str, stdout: &str) {
    use sleuth_jobs::trigger_catalog;
    use sleuth_store::{NewScript, NewScriptRun, NewTriggerRun, ScriptRunEnd};
    let now = chrono::Utc::now();
    app.store
        .sync_trigger_catalog(&trigger_catalog::catalog(), now)
        .await
        .unwrap();
    let admin = app.user(ADMIN).await;
    let trigger_uuid = trigger_catalog::trigger_uuid(trigger_catalog::INVESTIGATION_COMPLETED);
    let script = app
        .store
        .create_script(
            &NewScript {
                display_name: name.into(),
                trigger_uuid,
                code: "print('done')".into(),
                is_enabled: true,
                allow_network: false,
                secret_names: Vec::new(),
                author_id: admin.id,
            },
            now,
        )
        .await
        .unwrap();
    let version = app.store.list_script_versions(script.id).await.unwrap();
    let fired = app
        .store
        .record_trigger_runs(
            &[NewTriggerRun {
                trigger_uuid,
                trigger_args: serde_json::Map::new(),
                investigation_id: Some(investigation_id),
                entity: Some(format!("investigation:{investigation_id}")),
            }],
            now,
        )
        .await
        .unwrap();
    let run_id = app
        .store
        .start_script_run(
            &NewScriptRun {
                script_id: script.id,
                script_version_id: version[0].id,
                trigger_run_id: fired[0].id,
                runner: "test".into(),
                deadline_at: now + chrono::Duration::minutes(5),
            },
            now,
        )
        .await
        .unwrap();
    let end = ScriptRunEnd {
        status: sleuth_domain::ScriptRunStatus::Success,
        stdout: stdout.into(),
        stderr: String::new(),
        syserr: None,
        isolation: "strict".into(),
        duration_ms: 42,
    };
    assert!(
        app.store
            .finish_script_run(run_id, &end, now)
            .await
            .unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_investigation_shows_its_response_action_runs_and_admins_see_their_output() {
    if !crate::webdriver::available("the investigation's runs") {
        return;
    }
    let app = ConsoleApp::start().await;
    let ours = app
        .create(&crate::alert(
            "ra-1",
            "Ransomware note on FS-2",
            "FS-2",
            "203.0.113.70",
        ))
        .await;
    let theirs = app
        .create(&crate::alert("ra-2", "Port scan", "FW-2", "203.0.113.71"))
        .await;
    app.drain().await;
    let hostile_name = format!("Isolate {IMG}");
    record_run(
        &app,
        ours,
        &hostile_name,
        &format!("isolated FS-2 {}", crate::SCRIPT_END),
    )
    .await;
    record_run(&app, theirs, "Open a ticket", "ticket 77").await;

    let browser = Browser::start().await;
    sign_in(&browser, &app, ADMIN, PASSWORD).await;
    browser
        .goto(&app.url(&format!("/investigations/{ours}")))
        .await;
    let runs = browser.text("#runs").await;
    assert!(runs.contains(&hostile_name), "{runs}");
    assert!(runs.contains("success") && runs.contains("42 ms"), "{runs}");
    assert!(
        !runs.contains("Open a ticket"),
        "another investigation's run: {runs}"
    );
    let output = browser.text("#runs pre.output-text").await;
    assert_eq!(output, format!("isolated FS-2 {}", crate::SCRIPT_END));
    nothing_injected(&browser, "the investigation's runs").await;
    browser.screenshot("investigation-runs").await;

    // A member sees which action ran and how it ended, not what it printed.
    drop(browser);
    let browser = Browser::start().await;
    sign_in(&browser, &app, MEMBER, PASSWORD).await;
    browser
        .goto(&app.url(&format!("/investigations/{ours}")))
        .await;
    assert!(browser.text("#runs").await.contains(&hostile_name));
    assert!(browser.find_all("#runs pre.output-text").await.is_empty());
    browser
        .goto(&app.url(&format!("/investigations/{theirs}")))
        .await;
    assert!(browser.text("#runs").await.contains("Open a ticket"));
}

/// Sets a field's value in the page (long or multi-line text, dates whatever the locale).
async fn set_value(browser: &Browser, css: &str, text: &str) {
    browser
        .execute(&format!(
            "document.querySelector({}).value = {};",
            json!(css),
            json!(text)
        ))
        .await;
}

/// The context document as the API reads it, as the admin.
async fn stored_context(app: &ConsoleApp) -> crate::harness::Answer {
    app.request(
        "GET",
        "/app/api/v1/context",
        &[("authorization", &app.admin_key)],
        None,
    )
    .await
}

/// An alert from a hostile source naming a host, a user and an address.
fn hostile_alert(id: &str, title: &str) -> serde_json::Value {
    json!({
        "id": id,
        "title": title,
        "severity": "high",
        "source": format!("EDR {IMG}"),
        "host": "wks-0231",
        "src_ip": "203.0.113.66",
        "user": IMG,
        "created_at": "2026-03-01T12:00:00Z",
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_counts_the_window_and_shows_hostile_labels_as_text() {
    if !crate::webdriver::available("the dashboard") {
        return;
    }
    dashboard_journey(ConsoleApp::start().await, "").await;
}

/// The same dashboard on PostgreSQL (skipped, saying so, without a server named by
/// `SLEUTH_TEST_POSTGRES_URL`): its per-day, queue and agreement figures come from the
/// other backend's count deltas and statements. Its screenshot is named `postgres-…`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_on_postgresql() {
    ConsoleApp::on_postgresql("the dashboard on PostgreSQL", dashboard_journey).await;
}

/// Three alerts concluded (one agreed with, one corrected), one queued; a reader reads the
/// dashboard and narrows its window; the screenshot named with `shots` first.
async fn dashboard_journey(app: ConsoleApp, shots: &str) {
    // The day the alerts arrive; a run across midnight (UTC) counts them on either day.
    let first_day = chrono::Utc::now().date_naive();
    let mut concluded = Vec::new();
    for (id, title) in [("d-1", "Mimikatz"), ("d-2", "Beacon"), ("d-3", "Port scan")] {
        concluded.push(app.create(&hostile_alert(id, title)).await);
    }
    assert_eq!(app.drain().await, 3);
    // One analyst agrees with the verdict, one corrects it; one alert waits in the queue.
    let verdict = app
        .api(&format!("/app/api/v1/investigation/{}", concluded[0]))
        .await["outcome"]
        .as_str()
        .unwrap()
        .to_string();
    let other = if verdict == "COMPLETED_FALSE_ALERT" {
        "COMPLETED_BREACHED_CONFIRMED"
    } else {
        "COMPLETED_FALSE_ALERT"
    };
    for (investigation_id, outcome) in [(concluded[0], verdict.as_str()), (concluded[1], other)] {
        let answer = app
            .request(
                "PATCH",
                &format!("/app/api/v1/investigation/{investigation_id}/feedback"),
                &[("authorization", &app.member_key)],
                Some((
                    "application/json",
                    json!({"outcome": outcome, "status": "reviewed"})
                        .to_string()
                        .into_bytes(),
                )),
            )
            .await;
        assert_eq!(answer.status, 200, "{}", answer.text);
    }
    app.create(&hostile_alert("d-4", "Still waiting")).await;

    let browser = Browser::start().await;
    sign_in(&browser, &app, READER, PASSWORD).await;
    browser
        .click_to_load("header.top a[href='/dashboard']")
        .await;
    assert_eq!(browser.current_url().await, app.url("/dashboard"));
    let totals = browser
        .execute(
            "return Array.from(document.querySelectorAll('#per-day g.day'))\
             .map(g => Number(g.getAttribute('data-total')));",
        )
        .await;
    let totals: Vec<u64> = totals
        .as_array()
        .unwrap()
        .iter()
        .map(|total| total.as_u64().unwrap())
        .collect();
    assert_eq!(totals.len(), 14, "the default window");
    if chrono::Utc::now().date_naive() == first_day {
        assert_eq!(totals.last(), Some(&4), "today: {totals:?}");
    } else {
        assert_eq!(
            totals[12] + totals[13],
            4,
            "yesterday and today: {totals:?}"
        );
    }
    assert_eq!(totals.iter().sum::<u64>(), 4);
    assert_eq!(browser.text("#queued").await, "1");
    assert_eq!(browser.text("#agreement-share").await, "50 %");
    assert!(
        browser.text("#corrections").await.contains("False alert")
            || other != "COMPLETED_FALSE_ALERT"
    );
    assert!(
        browser
            .text("#time-to-conclusion")
            .await
            .contains("From its receipt")
    );
    let sources = browser.text("#top-sources").await;
    assert!(sources.contains(&format!("EDR {IMG}")), "{sources}");
    let entities = browser.text("#top-entities").await;
    assert!(entities.contains(IMG), "{entities}");
    assert!(
        browser
            .text("#top-assets")
            .await
            .to_lowercase()
            .contains("wks-0231")
    );
    assert!(browser.find_all("#per-day rect").await.len() >= 2);
    nothing_injected(&browser, "the dashboard").await;
    browser.screenshot(&format!("{shots}dashboard")).await;

    browser
        .click_to_load("a.window[href='/dashboard?days=7']")
        .await;
    let days = browser
        .execute("return document.querySelectorAll('#per-day g.day').length;")
        .await;
    assert_eq!(days, 7);
    // A reader sees no settings.
    assert!(browser.find_all("#settings-link").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_fixes_an_invalid_context_reads_the_settings_and_signs_out() {
    if !crate::webdriver::available("the settings") {
        return;
    }
    settings_journey(ConsoleApp::start().await, "").await;
}

/// The same on PostgreSQL (skipped, saying so, without a server named by
/// `SLEUTH_TEST_POSTGRES_URL`): the context document, the settings' lists and the audit
/// log with its chain's verification are the other backend's rows. Its screenshots are
/// named `postgres-…`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_fixes_an_invalid_context_and_verifies_the_audit_log_on_postgresql() {
    ConsoleApp::on_postgresql("the settings on PostgreSQL", settings_journey).await;
}

/// A member is refused the settings; an admin fixes an invalid context, reads context
/// memory, users, tenant unions and the audit log, verifies its chain and signs out;
/// screenshots named with `shots` first.
async fn settings_journey(app: ConsoleApp, shots: &str) {
    // Hostile text where the settings show it: a memory item and a tenant union's name.
    let memory = app
        .admin_post(
            "/app/api/v1/context-memory/create",
            &json!({"text": format!("{IMG} is the scanner at 198.51.100.9")}),
        )
        .await;
    assert!(memory.status < 300, "{}", memory.text);
    let union = app
        .admin_post(
            "/app/api/v1/tenant-unions",
            &json!({"display_name": format!("Acme {IMG}"), "lookup_dict": {"tenant_ids": [IMG]}}),
        )
        .await;
    assert!(union.status < 300, "{}", union.text);

    // Not an admin: a 403 page, and no link to it.
    let browser = Browser::start().await;
    sign_in(&browser, &app, MEMBER, PASSWORD).await;
    assert!(browser.find_all("#settings-link").await.is_empty());
    browser.goto(&app.url("/settings/context")).await;
    assert!(browser.text("h1").await.starts_with("403"));
    browser
        .screenshot(&format!("{shots}settings-forbidden"))
        .await;
    drop(browser);

    let browser = Browser::start().await;
    sign_in(&browser, &app, ADMIN, PASSWORD).await;
    browser.click_to_load("#settings-link").await;
    browser
        .click_to_load("nav.settings-nav a[href='/settings/context']")
        .await;
    let invalid =
        "[organization]\nname = \"Example Corp\"\nusual_countries = [\"United Kingdom\"]\n";
    set_value(&browser, "#context-toml", invalid).await;
    browser.click_to_load("#save-context").await;
    let problem = browser.text("#settings-problem").await;
    assert!(problem.contains("United Kingdom"), "{problem}");
    let kept = browser
        .execute("return document.getElementById('context-toml').value;")
        .await;
    assert_eq!(kept, invalid, "the text stays to be fixed");
    browser
        .screenshot(&format!("{shots}settings-context-invalid"))
        .await;
    let stored = stored_context(&app).await;
    assert_eq!(
        stored.json["toml"], "",
        "nothing was stored: {}",
        stored.text
    );

    set_value(
        &browser,
        "#context-toml",
        &invalid.replace("United Kingdom", "GB"),
    )
    .await;
    browser.click_to_load("#save-context").await;
    assert!(browser.text("#context-saved").await.starts_with("Saved"));
    let stored = stored_context(&app).await;
    assert_eq!(
        stored.json["document"]["organization"]["usual_countries"],
        json!(["GB"])
    );
    assert!(
        browser
            .execute("return document.getElementById('context-toml').value;")
            .await
            .as_str()
            .unwrap()
            .contains("GB")
    );
    browser
        .screenshot(&format!("{shots}settings-context-saved"))
        .await;

    browser
        .click_to_load("nav.settings-nav a[href='/settings/memory']")
        .await;
    assert!(browser.text("#memory-table").await.contains(IMG));
    nothing_injected(&browser, "context memory").await;
    browser.screenshot(&format!("{shots}settings-memory")).await;
    browser
        .click_to_load("nav.settings-nav a[href='/settings/users']")
        .await;
    let users = browser.text("#users-table").await;
    assert!(users.contains(ADMIN) && users.contains(READER), "{users}");
    let keys = browser.text("#keys-table").await;
    assert!(!keys.contains(&app.admin_key), "a key in the clear");
    browser.screenshot(&format!("{shots}settings-users")).await;
    browser
        .click_to_load("nav.settings-nav a[href='/settings/unions']")
        .await;
    assert!(
        browser
            .text("#unions-table")
            .await
            .contains(&format!("Acme {IMG}"))
    );
    nothing_injected(&browser, "tenant unions").await;
    browser.screenshot(&format!("{shots}settings-unions")).await;
    browser
        .click_to_load("nav.settings-nav a[href='/settings/audit']")
        .await;
    assert!(
        browser
            .text("#audit-table")
            .await
            .contains("PUT /settings/context")
            || browser
                .text("#audit-table")
                .await
                .contains("/settings/context")
    );
    browser.click_to_load("#verify-chain").await;
    let verdict = browser.text("#audit-verdict").await;
    assert!(verdict.starts_with("Intact"), "{verdict}");
    nothing_injected(&browser, "the audit log").await;
    browser.screenshot(&format!("{shots}settings-audit")).await;

    browser.click_to_load("#sign-out").await;
    assert!(
        browser
            .current_url()
            .await
            .starts_with(&app.url("/sign-in"))
    );
    browser.goto(&app.url("/settings")).await;
    assert!(browser.current_url().await.contains("/sign-in"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_backtests_a_strategy_from_its_page() {
    if !crate::webdriver::available("the backtest") {
        return;
    }
    backtest_journey(ConsoleApp::start().await, "").await;
}

/// The same backtest on PostgreSQL (skipped, saying so, without a server named by
/// `SLEUTH_TEST_POSTGRES_URL`): the strategy and the re-run investigations are read by
/// the other backend's statements. Its screenshot is named `postgres-…`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_backtests_a_strategy_on_postgresql() {
    ConsoleApp::on_postgresql("the backtest on PostgreSQL", backtest_journey).await;
}

/// Two alerts concluded, a strategy created over the API; an admin backtests it from its
/// page, first over a period the wrong way round; the screenshot named with `shots` first.
async fn backtest_journey(app: ConsoleApp, shots: &str) {
    for (id, title) in [("b-1", "Mimikatz on WKS-1"), ("b-2", "Beacon from WKS-2")] {
        app.create(&crate::alert(id, title, "WKS-1", "203.0.113.80"))
            .await;
    }
    assert_eq!(app.drain().await, 2);
    let created = app
        .admin_post(
            "/app/api/v1/custom-strategies",
            &json!({
                "title": format!("Lab hosts {IMG}"),
                "is_enabled": false,
                "outcomes": [
                    {"condition": {"==": [1, 1]}, "outcome": "COMPLETED_FALSE_ALERT"}
                ],
            }),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let strategy_id = created.json["id"].as_i64().unwrap();

    let browser = Browser::start().await;
    sign_in(&browser, &app, ADMIN, PASSWORD).await;
    browser.goto(&app.url("/settings/strategies")).await;
    browser
        .click_to_load(&format!(
            "#strategies-table a[href='/settings/strategies/{strategy_id}']"
        ))
        .await;
    assert_eq!(
        browser.text("#strategy-title").await,
        format!("Lab hosts {IMG}")
    );
    // A period the wrong way round is the API's 400, shown on the page.
    set_value(&browser, "#backtest-from", "2026-03-02").await;
    set_value(&browser, "#backtest-until", "2026-03-01").await;
    browser.click_to_load("#run-backtest").await;
    assert!(
        browser
            .text("#settings-problem")
            .await
            .contains("must not be before from")
    );
    set_value(&browser, "#backtest-from", "2026-03-01").await;
    set_value(&browser, "#backtest-until", "2026-03-01").await;
    browser.click_to_load("#run-backtest").await;
    let summary = browser.text("#backtest-summary").await;
    assert!(summary.starts_with("2 investigations re-run"), "{summary}");
    let api = app
        .admin_post(
            "/app/api/v1/custom-strategies/backtest",
            &json!({"strategy_id": strategy_id, "from": "2026-03-01", "until": "2026-03-01"}),
        )
        .await;
    assert_eq!(api.status, 200, "{}", api.text);
    let affected = api.json["affected"].as_array().unwrap().len();
    assert!(
        summary.contains(&format!("{affected} would change")),
        "{summary} vs {}",
        api.text
    );
    assert_eq!(
        browser.find_all("#backtest-affected tbody tr").await.len(),
        affected
    );
    nothing_injected(&browser, "the backtest").await;
    browser
        .screenshot(&format!("{shots}settings-backtest"))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_creates_and_test_runs_a_response_action_and_sees_its_runs() {
    if !crate::webdriver::available("the response actions") {
        return;
    }
    response_action_journey(ConsoleApp::start_with_sandbox().await, "").await;
}

/// The same response actions on PostgreSQL (skipped, saying so, without a server named by
/// `SLEUTH_TEST_POSTGRES_URL`): versions, test runs and run history are the other
/// backend's rows. Its screenshots are named `postgres-…`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_creates_and_test_runs_a_response_action_on_postgresql() {
    ConsoleApp::on_postgresql_started(
        "the response actions on PostgreSQL",
        ConsoleApp::start_with_sandbox_on,
        response_action_journey,
    )
    .await;
}

/// An admin creates a response action (first refused for a blank name), test-runs it in
/// the sandbox, sees its runs and the run an investigation fired; screenshots named with
/// `shots` first.
async fn response_action_journey(app: ConsoleApp, shots: &str) {
    let browser = Browser::start().await;
    sign_in(&browser, &app, ADMIN, PASSWORD).await;
    browser.goto(&app.url("/settings/actions")).await;
    // Refused by the API's validation (a name of blanks): its message shows.
    browser.type_into("#action-name", "   ").await;
    browser.click_to_load("#create-action").await;
    assert!(
        browser
            .text("#settings-problem")
            .await
            .contains("display_name")
    );
    let name = format!("Ticket {IMG}");
    browser.type_into("#action-name", &name).await;
    let completed = sleuth_jobs::trigger_catalog::trigger_uuid(
        sleuth_jobs::trigger_catalog::INVESTIGATION_COMPLETED,
    );
    browser
        .click(&format!("#action-trigger option[value='{completed}']"))
        .await;
    set_value(
        &browser,
        "#action-code",
        "print('ticket for', trigger_args.get('investigation_id'), trigger_args.get('who'))",
    )
    .await;
    browser.click_to_load("#create-action").await;
    let action_page = browser.current_url().await;
    assert!(action_page.contains("/settings/actions/"), "{action_page}");
    assert_eq!(browser.text("#action-title").await, name);
    assert_eq!(browser.text("#no-runs").await, "It has not run yet.");

    set_value(&browser, "#test-args", &json!({"who": IMG}).to_string()).await;
    browser.click_to_load("#run-test").await;
    assert_eq!(
        browser.text("#test-status").await,
        "success",
        "{}",
        browser.text("main").await
    );
    assert_eq!(
        browser.text("#test-stdout").await,
        format!("ticket for None {IMG}")
    );
    nothing_injected(&browser, "a test-run").await;
    browser
        .screenshot(&format!("{shots}settings-action-test"))
        .await;
    set_value(&browser, "#test-code", "raise ValueError('boom')").await;
    browser.click_to_load("#run-test").await;
    assert_eq!(browser.text("#test-status").await, "failed");
    assert!(
        browser
            .text("#test-stderr")
            .await
            .contains("ValueError: boom")
    );
    set_value(&browser, "#test-args", "[1, 2").await;
    browser.click_to_load("#run-test").await;
    assert!(
        browser
            .text("#settings-problem")
            .await
            .contains("trigger_args")
    );

    // A concluded investigation fires it; the run shows in its history and on the
    // investigation's page.
    let investigation_id = app
        .create(&crate::alert(
            "ra-9",
            "Ransomware on FS-9",
            "FS-9",
            "203.0.113.90",
        ))
        .await;
    assert_eq!(app.drain().await, 1);
    let mut history = String::new();
    for _ in 0..200 {
        browser.goto(&action_page).await;
        history = browser.text("table.runs").await;
        if history.contains("success") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        history.contains("success"),
        "{history}: {}",
        browser.text("main").await
    );
    assert!(
        history.contains(&format!("investigation:{investigation_id}")),
        "{history}"
    );
    assert_eq!(
        browser.text("table.runs pre.output-text").await,
        format!("ticket for {investigation_id} None")
    );
    browser
        .screenshot(&format!("{shots}settings-action-runs"))
        .await;
    browser
        .goto(&app.url(&format!("/investigations/{investigation_id}")))
        .await;
    assert!(browser.text("#runs").await.contains(&name));
    browser
        .screenshot(&format!("{shots}investigation-fired-run"))
        .await;
}
