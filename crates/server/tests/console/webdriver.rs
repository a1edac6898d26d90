//! A small W3C WebDriver client for the console's browser tests: chromedriver on a
//! loopback port, driving headless Chromium. WebDriver is JSON over HTTP; the dozen
//! commands these tests use are a request each, over the HTTP/1.1 client the tests
//! already have, so no WebDriver crate (and its tree) is built on a 2-core machine.
//! A failed command panics with what the driver said: these are tests.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::{Value, json};

/// W3C's key for an element reference in JSON.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Where Debian's packages put the browser and its driver.
const CHROMIUM: &str = "/usr/lib/chromium/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// Set to let these tests pass without Chromium (a developer's machine without it);
/// CI never sets it, so there they must run.
pub(crate) const MAY_SKIP: &str = "SLEUTH_CONSOLE_TESTS_MAY_SKIP";

/// A running chromedriver and one browser session; both end when it drops.
pub(crate) struct Browser {
    driver: Child,
    address: String,
    session: String,
}

/// Whether the browser is here; `false` (after a loud message) when it is not and
/// `MAY_SKIP` allows that, and a panic when it is not and nothing allows it.
pub(crate) fn available(test: &str) -> bool {
    if Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists() {
        return true;
    }
    if std::env::var_os(MAY_SKIP).is_some() {
        eprintln!(
            "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
             !!! SKIPPED {test}: Chromium is not installed ({CHROMIUM}, {CHROMEDRIVER}),\n\
             !!! and {MAY_SKIP} allows that. Nothing of the console was checked in a\n\
             !!! browser. Install it: apt-get install chromium chromium-driver\n\
             !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n"
        );
        return false;
    }
    panic!(
        "the console's browser tests need Chromium: apt-get install chromium chromium-driver \
         (or set {MAY_SKIP}=1 to skip them, loudly, where there is none)"
    );
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

impl Browser {
    pub(crate) async fn start() -> Browser {
        let port = free_port();
        // Tests may spawn processes (clippy.toml bans it elsewhere): the driver is the
        // browser the console is tested in.
        #[allow(clippy::disallowed_methods)]
        let driver = std::process::Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let address = format!("127.0.0.1:{port}");
        let mut browser = Browser {
            driver,
            address,
            session: String::new(),
        };
        // The driver listens within moments, but a first start on a fresh, busy machine
        // (a cold build just done) once took more than 5 s: up to 30 s is allowed.
        let mut ready = false;
        for _ in 0..1200 {
            if tokio::net::TcpStream::connect(&browser.address)
                .await
                .is_ok()
            {
                ready = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert!(ready, "chromedriver did not listen on {}", browser.address);
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "unhandledPromptBehavior": "ignore",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                // Root in a container has no user namespace sandbox for Chromium.
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,1000"],
            },
        }}});
        let answer = browser
            .command("POST", "/session", Some(capabilities))
            .await;
        browser.session = answer["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        browser
    }

    /// Sends one command; answers its `value`. Panics on an error answer.
    async fn command(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, value) = self.try_command(method, path, body).await;
        assert!(
            status < 300,
            "WebDriver {method} {path} answered {status}: {value}"
        );
        value
    }

    /// Sends one command; answers the status and `value`, errors included.
    async fn try_command(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let stream = tokio::net::TcpStream::connect(&self.address)
            .await
            .expect("connect to chromedriver");
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .expect("handshake");
        tokio::spawn(connection);
        let body = body.map(|body| body.to_string()).unwrap_or_default();
        let request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.address)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .expect("request");
        let response = sender.send_request(request).await.expect("driver answer");
        let status = response.status().as_u16();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        (status, answer["value"].clone())
    }

    fn at(&self, path: &str) -> String {
        format!("/session/{}{path}", self.session)
    }

    pub(crate) async fn goto(&self, url: &str) {
        self.command("POST", &self.at("/url"), Some(json!({"url": url})))
            .await;
    }

    pub(crate) async fn current_url(&self) -> String {
        self.command("GET", &self.at("/url"), None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub(crate) async fn find_all(&self, css: &str) -> Vec<String> {
        let found = self
            .command(
                "POST",
                &self.at("/elements"),
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        found
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter_map(|item| item[ELEMENT].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The one element `css` names; panics naming the page when there is none.
    pub(crate) async fn find(&self, css: &str) -> String {
        match self.find_all(css).await.into_iter().next() {
            Some(element) => element,
            None => panic!(
                "no element {css} on {}:\n{}",
                self.current_url().await,
                self.command("GET", &self.at("/source"), None).await
            ),
        }
    }

    pub(crate) async fn click(&self, css: &str) {
        let element = self.find(css).await;
        self.command(
            "POST",
            &self.at(&format!("/element/{element}/click")),
            Some(json!({})),
        )
        .await;
    }

    /// Marks the page shown now, for `wait_for_new_page`.
    pub(crate) async fn mark_page(&self) {
        self.execute("document.documentElement.setAttribute('data-left', '1');")
            .await;
    }

    /// Waits until a page other than the marked one has loaded: a click or a key press
    /// answers once its event is dispatched, and the navigation it started may still be
    /// under way then.
    pub(crate) async fn wait_for_new_page(&self, what: &str) {
        for _ in 0..400 {
            let (status, loaded) = self
                .try_command(
                    "POST",
                    &self.at("/execute/sync"),
                    Some(
                        json!({"script": "return document.readyState === 'complete' \
                        && !document.documentElement.hasAttribute('data-left');", "args": []}),
                    ),
                )
                .await;
            if status < 300 && loaded == Value::Bool(true) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("{what} loaded no new page");
    }

    /// Clicks what loads another page (a submit button, a link) and waits for it.
    pub(crate) async fn click_to_load(&self, css: &str) {
        self.mark_page().await;
        self.click(css).await;
        self.wait_for_new_page(css).await;
    }

    pub(crate) async fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css).await;
        self.command(
            "POST",
            &self.at(&format!("/element/{element}/clear")),
            Some(json!({})),
        )
        .await;
        self.command(
            "POST",
            &self.at(&format!("/element/{element}/value")),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// Presses keys on the page (not in a field): WebDriver's key actions.
    pub(crate) async fn press(&self, keys: &str) {
        let mut actions = Vec::new();
        for key in keys.chars() {
            actions.push(json!({"type": "keyDown", "value": key.to_string()}));
            actions.push(json!({"type": "keyUp", "value": key.to_string()}));
        }
        self.command(
            "POST",
            &self.at("/actions"),
            Some(json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})),
        )
        .await;
    }

    /// The rendered text of the first element `css` names.
    pub(crate) async fn text(&self, css: &str) -> String {
        let Some(element) = self.find_all(css).await.into_iter().next() else {
            return String::new();
        };
        self.command("GET", &self.at(&format!("/element/{element}/text")), None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Runs a script in the page (WebDriver's, which the page's CSP does not govern).
    pub(crate) async fn execute(&self, script: &str) -> Value {
        self.command(
            "POST",
            &self.at("/execute/sync"),
            Some(json!({"script": script, "args": []})),
        )
        .await
    }

    /// The text of an open alert, confirm or prompt dialog, if one is open.
    pub(crate) async fn open_dialog(&self) -> Option<String> {
        let (status, value) = self.try_command("GET", &self.at("/alert/text"), None).await;
        (status < 300).then(|| value.as_str().unwrap_or_default().to_string())
    }

    pub(crate) async fn add_cookie(&self, name: &str, value: &str) {
        self.command(
            "POST",
            &self.at("/cookie"),
            Some(json!({"cookie": {"name": name, "value": value, "path": "/", "httpOnly": true, "sameSite": "Strict"}})),
        )
        .await;
    }

    /// The page's final state for a reviewer: `target/console-screenshots/NAME.png`.
    pub(crate) async fn screenshot(&self, name: &str) -> PathBuf {
        let encoded = self.command("GET", &self.at("/screenshot"), None).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(encoded.as_str().unwrap_or_default())
            .expect("a base64 PNG");
        let directory = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .expect("the target directory")
            .join("console-screenshots");
        std::fs::create_dir_all(&directory).expect("screenshot directory");
        let path = directory.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("write the screenshot");
        path
    }

    /// Waits until `css` names an element whose text holds `wanted` (for what the page's
    /// script changes after an event); panics after a few seconds.
    pub(crate) async fn wait_for_text(&self, css: &str, wanted: &str) {
        for _ in 0..200 {
            if self.text(css).await.contains(wanted) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "{css} never showed {wanted:?}; it shows {:?}",
            self.text(css).await
        );
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Ending the session closes the browser; killing the driver alone could leave
        // Chromium running. Drop cannot await, so this is a plain blocking request.
        if !self.session.is_empty() {
            use std::io::{Read, Write};
            if let Ok(mut stream) = std::net::TcpStream::connect(&self.address) {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let request = format!(
                    "DELETE /session/{} HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\n\
                     Connection: close\r\n\r\n",
                    self.session, self.address
                );
                if stream.write_all(request.as_bytes()).is_ok() {
                    let mut answer = Vec::new();
                    let _ = stream.read_to_end(&mut answer);
                }
            }
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
