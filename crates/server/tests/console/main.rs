//! The analyst console in a real browser: headless Chromium over WebDriver against a real
//! Sleuth on loopback with a real SQLite file; the analyst's journey, the dashboard, the
//! settings with the audit log's verification, the backtest, the response actions,
//! context memory, users and their tenant unions, tenant unions and what an admin bound
//! to one may open also on PostgreSQL (`ConsoleApp::on_postgresql`). Each browser test
//! saves screenshots of its pages under `target/console-screenshots/` for a reviewer.
//! Without Chromium these tests fail, unless `SLEUTH_CONSOLE_TESTS_MAY_SKIP` is set (then
//! they say loudly that they skipped); CI installs Chromium (`.ci/run`), so there they run.
//!
//! Beside the browser, plain HTTP checks what a browser hides: headers, cookies, assets,
//! and requests no page would send.
// Test code: a failed unwrap is a failed test, with its line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod forms;
mod harness;
mod pages;
mod settings;
mod webdriver;

use serde_json::{Value, json};
use sleuth_store::{KeyHash, NewSession};

use harness::{ADMIN, ConsoleApp, MEMBER, PASSWORD, READER};
use webdriver::Browser;

/// A generic alert as a tool would send it.
fn alert(id: &str, title: &str, host: &str, address: &str) -> Value {
    json!({
        "id": id,
        "title": title,
        "severity": "high",
        "source": "Test EDR",
        "host": host,
        "src_ip": address,
        "user": "ana",
        "created_at": "2026-03-01T12:00:00Z",
    })
}

async fn sign_in(browser: &Browser, app: &ConsoleApp, email: &str, password: &str) {
    browser.goto(&app.url("/sign-in")).await;
    browser.type_into("#email", email).await;
    browser.type_into("#password", password).await;
    browser.click_to_load("#sign-in").await;
}

/// Waits until the queue's live stream is connected (the page's script marks it).
async fn stream_open(browser: &Browser) {
    for _ in 0..200 {
        let state = browser
            .execute("return document.getElementById('live').getAttribute('data-state');")
            .await;
        if state == "open" {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the queue's event stream never opened");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_analyst_signs_in_filters_opens_gives_feedback_adds_a_note_and_signs_out() {
    if !webdriver::available("the analyst's journey") {
        return;
    }
    analysts_journey(ConsoleApp::start().await, "").await;
}

/// The same journey on PostgreSQL (skipped, saying so, without a server named by
/// `SLEUTH_TEST_POSTGRES_URL`): the queue, its counts and search, feedback and notes run
/// on the other backend's statements. Its screenshots are named `postgres-…`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_analysts_journey_on_postgresql() {
    ConsoleApp::on_postgresql("the analyst's journey on PostgreSQL", analysts_journey).await;
}

/// Sign in, filter and search the queue, open an investigation, give feedback and see it
/// through the API, add a note, sign out; screenshots named with `shots` first.
async fn analysts_journey(app: ConsoleApp, shots: &str) {
    let mimikatz = app
        .create(&alert(
            "a-1",
            "Mimikatz on WKS-0231",
            "WKS-0231",
            "203.0.113.9",
        ))
        .await;
    app.create(&alert(
        "a-2",
        "Impossible travel for ana",
        "VPN-1",
        "198.51.100.7",
    ))
    .await;
    app.create(&alert(
        "a-3",
        "Port scan from a scanner",
        "FW-1",
        "192.0.2.44",
    ))
    .await;
    assert_eq!(app.drain().await, 3);

    let browser = Browser::start().await;
    browser.goto(&app.url("/")).await;
    assert!(
        browser.current_url().await.contains("/sign-in?next=%2F"),
        "the queue needs a session"
    );
    sign_in(&browser, &app, MEMBER, PASSWORD).await;
    assert_eq!(browser.current_url().await, app.url("/"));
    assert_eq!(browser.find_all("#queue-table tr.row").await.len(), 3);
    assert!(browser.text("#count").await.starts_with("1–3 of 3"));

    // Live: a new conclusion shows while the page is open.
    stream_open(&browser).await;
    app.create(&alert(
        "a-4",
        "Suspicious PowerShell on WKS-7",
        "WKS-7",
        "203.0.113.10",
    ))
    .await;
    assert_eq!(app.drain().await, 1);
    browser
        .wait_for_text("#live", "1 new investigations concluded")
        .await;
    browser.click_to_load("#live-refresh").await;
    assert_eq!(browser.find_all("#queue-table tr.row").await.len(), 4);
    browser.screenshot(&format!("{shots}queue")).await;

    // Search and filter with the API's parameters.
    browser.type_into("#search", "Mimikatz").await;
    browser.click_to_load("#apply").await;
    assert!(browser.current_url().await.contains("search=Mimikatz"));
    let rows = browser.find_all("#queue-table tr.row").await;
    assert_eq!(rows.len(), 1, "{}", browser.text("main").await);
    assert!(
        browser
            .text("#queue-table")
            .await
            .contains("Mimikatz on WKS-0231")
    );
    browser
        .goto(&app.url("/?investigation_state=loading&investigation_state=not_asked"))
        .await;
    assert_eq!(browser.text("#empty").await, "No investigation matches.");
    browser.goto(&app.url("/?sort_type=nonsense")).await;
    assert!(
        browser
            .text("#queue-problem")
            .await
            .contains("is not a sort")
    );
    browser.goto(&app.url("/?search=Mimikatz")).await;
    browser.screenshot(&format!("{shots}queue-search")).await;

    // j selects the first row, Enter opens it.
    browser.press("j").await;
    browser.mark_page().await;
    browser.press("\u{E007}").await;
    browser.wait_for_new_page("Enter on the selected row").await;
    assert_eq!(
        browser.current_url().await,
        app.url(&format!("/investigations/{mimikatz}"))
    );
    assert_eq!(browser.text("#alert-title").await, "Mimikatz on WKS-0231");
    let verdict = app
        .api(&format!("/app/api/v1/investigation/{mimikatz}"))
        .await;
    assert!(
        browser
            .text("#raw-alert")
            .await
            .contains("\"title\": \"Mimikatz on WKS-0231\"")
    );

    // Feedback in one click: agree with the verdict; it is stored as the API shows it.
    browser.click_to_load("#agree").await;
    assert!(browser.text("#feedback-state").await.contains("reviewed"));
    let feedback = app
        .api(&format!("/app/api/v1/investigation/{mimikatz}/feedback"))
        .await;
    assert_eq!(feedback["status"], "reviewed");
    assert_eq!(feedback["outcome"], verdict["outcome"], "{feedback}");
    // Or choose the right outcome.
    browser
        .click("#outcome option[value=COMPLETED_FALSE_ALERT]")
        .await;
    browser.click_to_load("#correct").await;
    let feedback = app
        .api(&format!("/app/api/v1/investigation/{mimikatz}/feedback"))
        .await;
    assert_eq!(feedback["outcome"], "COMPLETED_FALSE_ALERT");

    // A note, stored as the API lists it.
    browser
        .type_into(
            "#note-text",
            "Checked with the host owner: a red-team exercise.",
        )
        .await;
    browser.click_to_load("#add-note").await;
    assert!(browser.text("#notes").await.contains("a red-team exercise"));
    let notes = app
        .api(&format!(
            "/app/api/v1/investigation-user-notes/{mimikatz}/list"
        ))
        .await;
    assert_eq!(
        notes[0]["text"],
        "Checked with the host owner: a red-team exercise."
    );
    assert_eq!(notes[0]["user"]["email"], MEMBER);
    // Entities link to the queue searching for them.
    let entity = browser.text("#entities a.entity").await;
    browser.click_to_load("#entities a.entity").await;
    assert!(
        browser.current_url().await.contains("search=%22"),
        "{entity}"
    );
    assert!(
        browser
            .text("#queue-table")
            .await
            .contains("Mimikatz on WKS-0231")
    );
    browser
        .goto(&app.url(&format!("/investigations/{mimikatz}")))
        .await;
    browser.screenshot(&format!("{shots}investigation")).await;

    // Every form was audited under the member's session.
    let audit = app
        .store
        .list_audit_entries(&sleuth_store::AuditQuery {
            limit: 1000,
            ..Default::default()
        })
        .await
        .expect("audit");
    let console_actions: Vec<&str> = audit
        .items
        .iter()
        .map(|entry| entry.action.as_str())
        .filter(|action| !action.contains("/app/api/"))
        .collect();
    assert!(
        console_actions.contains(&"POST /investigations/{investigation_id}/feedback"),
        "{console_actions:?}"
    );
    assert!(console_actions.contains(&"POST /investigations/{investigation_id}/notes"));
    assert!(console_actions.contains(&"POST /sign-in"));

    // Sign out: the session ends, the queue asks for a sign-in again.
    browser.click_to_load("#sign-out").await;
    assert!(
        browser
            .current_url()
            .await
            .starts_with(&app.url("/sign-in"))
    );
    browser.goto(&app.url("/")).await;
    assert!(browser.current_url().await.contains("/sign-in"));
    browser.screenshot(&format!("{shots}signed-out")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_sees_the_queue_but_no_forms_that_write() {
    if !webdriver::available("a reader's view") {
        return;
    }
    let app = ConsoleApp::start().await;
    let id = app
        .create(&alert(
            "r-1",
            "Beaconing from WKS-9",
            "WKS-9",
            "203.0.113.20",
        ))
        .await;
    app.drain().await;
    let browser = Browser::start().await;
    sign_in(&browser, &app, READER, PASSWORD).await;
    browser
        .goto(&app.url(&format!("/investigations/{id}")))
        .await;
    assert_eq!(browser.text("#alert-title").await, "Beaconing from WKS-9");
    assert!(browser.find_all("#agree-form").await.is_empty());
    assert!(browser.find_all("#note-form").await.is_empty());
    browser.screenshot("reader-investigation").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_password_must_be_changed_before_anything_else() {
    if !webdriver::available("the forced password change") {
        return;
    }
    let app = ConsoleApp::start().await;
    let admin = app.user(ADMIN).await;
    let generated = sleuth_server::passwords::generate();
    app.store
        .set_password(
            admin.id,
            &sleuth_server::passwords::hash(&generated),
            true,
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    let browser = Browser::start().await;
    sign_in(&browser, &app, ADMIN, &generated).await;
    assert_eq!(browser.current_url().await, app.url("/password"));
    assert!(
        browser
            .text("#must-change")
            .await
            .contains("Choose your own password")
    );
    browser.goto(&app.url("/")).await;
    assert_eq!(
        browser.current_url().await,
        app.url("/password"),
        "nothing else first"
    );

    browser.type_into("#current", "not the password").await;
    browser.type_into("#new", "my own long passphrase").await;
    browser.type_into("#repeat", "my own long passphrase").await;
    browser.click_to_load("#change-password").await;
    assert!(
        browser
            .text("#password-problem")
            .await
            .contains("current password is wrong")
    );
    browser.type_into("#current", &generated).await;
    browser.type_into("#new", "short").await;
    browser.type_into("#repeat", "short").await;
    browser.click_to_load("#change-password").await;
    assert!(
        browser
            .text("#password-problem")
            .await
            .contains("at least 12 characters")
    );
    browser.screenshot("password-problem").await;
    browser.type_into("#current", &generated).await;
    browser.type_into("#new", "my own long passphrase").await;
    browser.type_into("#repeat", "my own long passphrase").await;
    browser.click_to_load("#change-password").await;
    assert_eq!(browser.current_url().await, app.url("/"));
    assert!(browser.find_all("#filters").await.len() == 1);
    let record = app.store.sign_in_record(ADMIN).await.unwrap().unwrap();
    assert!(!record.must_change_password);
    assert!(sleuth_server::passwords::verify(
        "my own long passphrase",
        &record.password_hash.unwrap()
    ));
    browser.screenshot("password-changed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_without_its_csrf_token_is_refused() {
    if !webdriver::available("the CSRF check") {
        return;
    }
    let app = ConsoleApp::start().await;
    let id = app
        .create(&alert(
            "c-1",
            "Credential dumping on DC-1",
            "DC-1",
            "203.0.113.30",
        ))
        .await;
    app.drain().await;
    let browser = Browser::start().await;
    sign_in(&browser, &app, MEMBER, PASSWORD).await;
    browser
        .goto(&app.url(&format!("/investigations/{id}")))
        .await;
    browser.type_into("#note-text", "forged").await;
    browser
        .execute("document.querySelector('#note-form input[name=csrf]').value = 'forged';")
        .await;
    browser.click_to_load("#add-note").await;
    assert!(browser.text("h1").await.starts_with("403"));
    assert!(
        browser
            .text("#error-message")
            .await
            .contains("stale or came from another site")
    );
    browser
        .goto(&app.url(&format!("/investigations/{id}")))
        .await;
    browser
        .execute("document.querySelector('#agree-form input[name=csrf]').remove();")
        .await;
    browser.click_to_load("#agree").await;
    assert!(browser.text("h1").await.starts_with("403"));
    browser.screenshot("csrf-refused").await;
    let notes = app
        .api(&format!("/app/api/v1/investigation-user-notes/{id}/list"))
        .await;
    assert_eq!(notes, json!([]), "nothing was written");
    let feedback = app
        .api(&format!("/app/api/v1/investigation/{id}/feedback"))
        .await;
    assert_eq!(feedback["status"], "in_review");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_is_refused() {
    if !webdriver::available("the session limits") {
        return;
    }
    let app = ConsoleApp::start().await;
    let member = app.user(MEMBER).await;
    let now = chrono::Utc::now();
    // One past its absolute end, one idle longer than the limit (60 minutes).
    for (token, created, expires) in [
        (
            "expired-token",
            now - chrono::Duration::hours(13),
            now - chrono::Duration::hours(1),
        ),
        (
            "idle-token",
            now - chrono::Duration::hours(2),
            now + chrono::Duration::hours(10),
        ),
    ] {
        app.store
            .create_session(&NewSession {
                token_hash: KeyHash::of(token),
                user_id: member.id,
                csrf_secret: "secret".into(),
                created_at: created,
                expires_at: expires,
            })
            .await
            .unwrap();
    }
    let browser = Browser::start().await;
    browser.goto(&app.url("/sign-in")).await;
    for token in ["expired-token", "idle-token"] {
        browser.add_cookie("sleuth_session", token).await;
        browser.goto(&app.url("/")).await;
        assert!(
            browser.current_url().await.contains("/sign-in"),
            "{token} opened the queue"
        );
    }
    browser.screenshot("session-expired").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_attempts_are_rate_limited() {
    if !webdriver::available("the sign-in limit") {
        return;
    }
    let app = ConsoleApp::start_with(|settings| {
        settings.console.sign_in_failures_per_email = 3;
    })
    .await;
    let browser = Browser::start().await;
    for _ in 0..3 {
        sign_in(&browser, &app, MEMBER, "a wrong password").await;
        assert_eq!(
            browser.text("#sign-in-problem").await,
            "Wrong email or password."
        );
    }
    // Past the limit even the right password is not tried.
    sign_in(&browser, &app, MEMBER, PASSWORD).await;
    assert!(
        browser
            .text("#sign-in-problem")
            .await
            .contains("Too many failed sign-ins"),
        "{}",
        browser.text("main").await
    );
    assert!(browser.current_url().await.contains("/sign-in"));
    browser.screenshot("sign-in-limited").await;
    // Another user from another browser is not affected by the email's limit.
    sign_in(&browser, &app, READER, PASSWORD).await;
    assert_eq!(browser.current_url().await, app.url("/"));
}

/// What an attacker writes into an alert.
const IMG: &str = "<img src=x onerror=alert(1)>";
const SCRIPT_END: &str = "</script><script>alert(2)</script>";

/// Asserts a page shows the hostile strings as text and runs none of them.
async fn nothing_injected(browser: &Browser, page: &str) {
    assert_eq!(
        browser.open_dialog().await,
        None,
        "a dialog opened on {page}"
    );
    assert!(
        browser.find_all("img").await.is_empty(),
        "an injected image on {page}"
    );
    let scripts = browser
        .execute("return Array.from(document.scripts).map(s => s.src);")
        .await;
    let scripts = scripts.as_array().expect("an array");
    assert_eq!(scripts.len(), 1, "{page}: {scripts:?}");
    assert!(
        scripts[0]
            .as_str()
            .unwrap()
            .contains("/console/assets/console.js")
    );
    let handlers = browser
        .execute("return document.querySelectorAll('[onerror],[onload],[onclick]').length;")
        .await;
    assert_eq!(handlers, 0, "{page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_alert_text_shows_as_text_on_every_page() {
    if !webdriver::available("the XSS test") {
        return;
    }
    let app = ConsoleApp::start().await;
    let hostile = |id: &str| {
        json!({
            "id": id,
            "title": format!("{IMG} {SCRIPT_END}"),
            "severity": "high",
            "source": format!("EDR {IMG}"),
            "host": "wks-0231",
            "src_ip": "203.0.113.66",
            "user": IMG,
            "domain": "evil.example.com",
            "description": SCRIPT_END,
            "created_at": "2026-03-01T12:00:00Z",
        })
    };
    let first = app.create(&hostile("x-1")).await;
    app.drain().await;
    let second = app.create(&hostile("x-2")).await;
    app.drain().await;
    let title = format!("{IMG} {SCRIPT_END}");

    let browser = Browser::start().await;
    sign_in(&browser, &app, MEMBER, PASSWORD).await;
    assert!(browser.text("#queue-table").await.contains(&title));
    nothing_injected(&browser, "the queue").await;
    browser.screenshot("xss-queue").await;

    browser
        .goto(&app.url(&format!("/investigations/{second}")))
        .await;
    assert_eq!(browser.text("#alert-title").await, title);
    let raw = browser.text("#raw-alert").await;
    assert!(raw.contains(SCRIPT_END) && raw.contains(IMG), "{raw}");
    // The related alert (the first, sharing entities) shows its hostile title as text.
    let related = browser.text("#related").await;
    assert!(related.contains(&format!("#{first}")), "{related}");
    assert!(related.contains(&title), "{related}");
    nothing_injected(&browser, "the investigation").await;
    browser.screenshot("xss-investigation").await;

    // A note holding the same is text too, and searching for it finds it.
    browser.type_into("#note-text", IMG).await;
    browser.click_to_load("#add-note").await;
    assert!(browser.text("#notes").await.contains(IMG));
    nothing_injected(&browser, "the investigation with a note").await;
    browser.goto(&app.url("/?search=onerror")).await;
    nothing_injected(&browser, "a search").await;
    let value = browser
        .execute("return document.getElementById('search').value;")
        .await;
    assert_eq!(value, "onerror");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_answers_carry_the_security_headers_and_cookie_rules() {
    let app = ConsoleApp::start().await;
    let sign_in_page = app.request("GET", "/sign-in", &[], None).await;
    assert_eq!(sign_in_page.status, 200);
    let headers = &sign_in_page.headers;
    assert_eq!(
        headers["content-security-policy"],
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    );
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "same-origin");
    assert_eq!(headers["cache-control"], "no-store");
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(!sign_in_page.text.contains("<script>"), "no inline script");
    assert!(!sign_in_page.text.contains("<style"), "no inline style");
    assert!(!sign_in_page.text.contains(" style="), "no inline style");
    let form_cookie = headers["set-cookie"].to_str().unwrap().to_string();
    assert!(form_cookie.starts_with("sleuth_sign_in="), "{form_cookie}");
    assert!(form_cookie.contains("HttpOnly") && form_cookie.contains("SameSite=Strict"));
    assert!(
        !form_cookie.contains("Secure"),
        "plain loopback HTTP: {form_cookie}"
    );

    // Sign in over HTTP and look at the session cookie.
    let csrf = form_cookie
        .split(';')
        .next()
        .unwrap()
        .trim_start_matches("sleuth_sign_in=")
        .to_string();
    let body = format!(
        "email={}&password={}&csrf={csrf}&next=%2F",
        form_urlencoded::byte_serialize(MEMBER.as_bytes()).collect::<String>(),
        form_urlencoded::byte_serialize(PASSWORD.as_bytes()).collect::<String>(),
    );
    let cookie_header = format!("sleuth_sign_in={csrf}");
    let signed_in = app
        .request(
            "POST",
            "/sign-in",
            &[("cookie", &cookie_header)],
            Some((
                "application/x-www-form-urlencoded",
                body.clone().into_bytes(),
            )),
        )
        .await;
    assert_eq!(signed_in.status, 303, "{}", signed_in.text);
    assert_eq!(signed_in.headers["location"], "/");
    let session_cookie = signed_in
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|value| value.to_str().unwrap().to_string())
        .find(|value| value.starts_with("sleuth_session="))
        .expect("a session cookie");
    assert!(
        session_cookie.contains("HttpOnly; SameSite=Strict"),
        "{session_cookie}"
    );
    assert!(session_cookie.contains("Path=/"));
    let token = session_cookie.split(';').next().unwrap().to_string();
    let queue = app.request("GET", "/", &[("cookie", &token)], None).await;
    assert_eq!(queue.status, 200);
    assert_eq!(queue.headers["cache-control"], "no-store");

    // A form POST without the CSRF field is refused, and so is a sign-in without its own.
    let refused = app
        .request(
            "POST",
            "/sign-out",
            &[("cookie", &token)],
            Some(("application/x-www-form-urlencoded", Vec::new())),
        )
        .await;
    assert_eq!(refused.status, 403);
    assert!(
        refused.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let no_form_cookie = app
        .request(
            "POST",
            "/sign-in",
            &[],
            Some(("application/x-www-form-urlencoded", body.into_bytes())),
        )
        .await;
    assert_eq!(no_form_cookie.status, 403);

    // The session cookie does not open the API: keys only.
    let api = app
        .request(
            "GET",
            "/app/api/v1/investigation",
            &[("cookie", &token)],
            None,
        )
        .await;
    assert_eq!(api.status, 401);

    // Assets: by hash, cached, revalidated with their ETag.
    let link = queue
        .text
        .split('"')
        .find(|part| part.starts_with("/console/assets/console.css?v="))
        .expect("the stylesheet link")
        .to_string();
    let css = app.request("GET", &link, &[], None).await;
    assert_eq!(css.status, 200);
    assert!(
        css.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/css")
    );
    assert!(
        css.headers["cache-control"]
            .to_str()
            .unwrap()
            .contains("immutable")
    );
    let etag = css.headers["etag"].to_str().unwrap().to_string();
    assert!(link.ends_with(etag.trim_matches('"')));
    let again = app
        .request("GET", &link, &[("if-none-match", &etag)], None)
        .await;
    assert_eq!(again.status, 304);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_tls_the_session_cookie_is_host_prefixed_and_secure() {
    let app = ConsoleApp::start_with(|settings| settings.console.behind_tls = true).await;
    let page = app.request("GET", "/sign-in", &[], None).await;
    let cookie = page.headers["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with("__Host-sleuth_sign_in="), "{cookie}");
    assert!(
        cookie.contains("; Path=/") && cookie.contains("; Secure"),
        "{cookie}"
    );
    assert!(!cookie.contains("Domain"), "{cookie}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_sets_a_password_over_the_api_and_it_must_be_changed() {
    let app = ConsoleApp::start().await;
    let admin_key = {
        let admin = app.user(ADMIN).await;
        let (secret, hash, prefix) = sleuth_server::auth::generate_key();
        app.store
            .create_api_key(&sleuth_store::NewApiKey {
                user_id: admin.id,
                name: "admin".into(),
                hash,
                prefix,
                tenant_scope: sleuth_store::TenantScope::All,
            })
            .await
            .unwrap();
        secret
    };
    let member = app.user(MEMBER).await;
    let path = format!("/app/api/v1/users/{}/password", member.id);
    let put = |key: String, body: Value| {
        let path = path.clone();
        let app = &app;
        async move {
            app.request(
                "PUT",
                &path,
                &[("authorization", &key)],
                Some(("application/json", body.to_string().into_bytes())),
            )
            .await
        }
    };
    let denied = put(
        app.member_key.clone(),
        json!({"password": "a new long password"}),
    )
    .await;
    assert_eq!(denied.status, 403, "{}", denied.text);
    let short = put(admin_key.clone(), json!({"password": "short"})).await;
    assert_eq!(short.status, 400);
    assert!(
        short.json["errors"]["password"][0]
            .as_str()
            .unwrap()
            .contains("at least 12")
    );
    let set = put(
        admin_key.clone(),
        json!({"password": "a new long password"}),
    )
    .await;
    assert_eq!(set.status, 204, "{}", set.text);
    let record = app.store.sign_in_record(MEMBER).await.unwrap().unwrap();
    assert!(record.must_change_password, "must_change defaults to true");
    assert!(sleuth_server::passwords::verify(
        "a new long password",
        &record.password_hash.unwrap()
    ));
    let unknown = app
        .request(
            "PUT",
            "/app/api/v1/users/999/password",
            &[("authorization", &admin_key)],
            Some((
                "application/json",
                json!({"password": "a new long password"})
                    .to_string()
                    .into_bytes(),
            )),
        )
        .await;
    assert_eq!(unknown.status, 404);
}
