//! Email notifications against a real SMTP server on loopback (aiosmtpd from Debian's
//! python3-aiosmtpd, run by /usr/bin/python3; `.ci/run` installs it), with certificates
//! made for the test by `openssl`: a conclusion arrives over STARTTLS after a login, its
//! subject and body linking the investigation; a server whose certificate another CA
//! signed, and a server that offers no STARTTLS, end dead with their reason and are never
//! sent the password.
// The test starts its own SMTP server and makes its own certificates.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sleuth_store::DeliveryState;

use crate::harness::TestApp;
use crate::notifications::{
    conclude, create_destination, deliver, deliveries, put_secret, wait_for,
};

const PASSWORD: &str = "smtp-pass-0123456789";

/// A self-signed certificate for 127.0.0.1 in `dir`, as `NAME.pem` and `NAME.key`; the
/// certificate's PEM.
fn certificate(dir: &Path, name: &str) -> String {
    let cert = dir.join(format!("{name}.pem"));
    let status = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", &format!("/CN=Sleuth test {name}")])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        // A server's own certificate, trusted as itself: not a CA (webpki refuses a CA
        // certificate as a server's).
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .args(["-addext", "extendedKeyUsage=serverAuth"])
        .arg("-keyout")
        .arg(dir.join(format!("{name}.key")))
        .arg("-out")
        .arg(&cert)
        .stderr(Stdio::null())
        .status()
        .expect("openssl runs (Debian package openssl)");
    assert!(status.success(), "openssl made the certificate");
    std::fs::read_to_string(cert).unwrap()
}

/// The SMTP server and what it reported.
struct Smtp {
    child: Child,
    port: u16,
    said: Arc<Mutex<Vec<Value>>>,
}

impl Drop for Smtp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Smtp {
    /// Starts the server: with `tls` (the directory and certificate name) STARTTLS is
    /// required; without, none is offered.
    fn start(tls: Option<(&Path, &str)>) -> Smtp {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/api/smtp_receiver.py");
        let mut command = Command::new("/usr/bin/python3");
        command.arg(script);
        match tls {
            Some((dir, name)) => command
                .arg(dir.join(format!("{name}.pem")))
                .arg(dir.join(format!("{name}.key"))),
            None => command.arg("--plain"),
        };
        let mut child = command
            .args(["sleuth", PASSWORD])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 starts (the aiosmtpd server)");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines
            .next()
            .expect("the SMTP server says its port (is python3-aiosmtpd installed?)")
            .unwrap();
        let port = serde_json::from_str::<Value>(&first).unwrap()["port"]
            .as_u64()
            .unwrap();
        let said: Arc<Mutex<Vec<Value>>> = Arc::default();
        let kept = said.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Ok(value) = serde_json::from_str(&line) {
                    kept.lock().unwrap().push(value);
                }
            }
        });
        Smtp {
            child,
            port: u16::try_from(port).unwrap(),
            said,
        }
    }

    fn said(&self, what: &str) -> Vec<Value> {
        self.said
            .lock()
            .unwrap()
            .iter()
            .filter_map(|value| value.get(what).cloned())
            .collect()
    }
}

fn email_destination(name: &str, port: u16, ca_certificate: Option<&str>) -> Value {
    let mut settings = json!({
        "server": "127.0.0.1",
        "port": port,
        "from": "Sleuth <sleuth@example.com>",
        "to": ["soc@example.com", "oncall@example.com"],
        "username": "sleuth",
        "password_secret": "SMTP_PASSWORD",
    });
    if let Some(pem) = ca_certificate {
        settings["ca_certificate"] = json!(pem);
    }
    json!({
        "name": name,
        "kind": "email",
        "settings": settings,
        "rule": {"events": ["investigation.concluded"]},
    })
}

macro_rules! email_tests {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    let app = $crate::harness::TestApp::start_with(
                        $crate::harness::Backend::Sqlite,
                        |settings| $crate::notifications::fast(settings, 200, 3),
                    )
                    .await;
                    if let Some(app) = app {
                        super::$name(app).await;
                    }
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    let app = $crate::harness::TestApp::start_with(
                        $crate::harness::Backend::Postgres,
                        |settings| $crate::notifications::fast(settings, 200, 3),
                    )
                    .await;
                    if let Some(app) = app {
                        super::$name(app).await;
                    }
                }
            }
        )+
    };
}

email_tests!(
    a_conclusion_is_mailed_over_starttls_after_a_login,
    a_certificate_of_another_ca_or_no_starttls_ends_dead_without_the_password,
);

async fn a_conclusion_is_mailed_over_starttls_after_a_login(app: TestApp) {
    let dir = tempfile::tempdir().unwrap();
    let pem = certificate(dir.path(), "relay");
    let smtp = Smtp::start(Some((dir.path(), "relay")));
    put_secret(&app, "SMTP_PASSWORD", PASSWORD).await;
    let destination =
        create_destination(&app, email_destination("mail", smtp.port, Some(&pem))).await;
    let _deliverer = deliver(&app);
    let investigations = conclude(&app, "mail", 2).await;
    let counts = wait_for(&app, destination, Duration::from_secs(30), |counts| {
        counts.get("delivered") == Some(&2) || counts.contains_key("dead")
    })
    .await;
    let reasons: Vec<Option<String>> = deliveries(&app, destination, None)
        .await
        .into_iter()
        .map(|delivery| delivery.last_error)
        .collect();
    assert_eq!(counts.get("delivered"), Some(&2), "{reasons:?}");

    let mails = smtp.said("mail");
    assert_eq!(mails.len(), 2, "{mails:?}");
    let stored = deliveries(&app, destination, Some(DeliveryState::Delivered)).await;
    for investigation_id in investigations {
        let link = format!("/app/api/v1/investigation/{investigation_id}");
        let mail = mails
            .iter()
            .find(|mail| mail["body"].as_str().unwrap().contains(&link))
            .unwrap_or_else(|| panic!("no mail links {link}: {mails:?}"));
        assert_eq!(mail["tls"], true, "STARTTLS before the message");
        assert_eq!(mail["authenticated"], true);
        assert_eq!(mail["mail_from"], "sleuth@example.com");
        assert_eq!(
            mail["rcpt_tos"],
            json!(["soc@example.com", "oncall@example.com"])
        );
        let subject = mail["subject"].as_str().unwrap();
        assert!(
            subject.starts_with("Sleuth: [") && subject.contains("Suspicious sign-in mail"),
            "{subject}"
        );
        let body = mail["body"].as_str().unwrap();
        assert!(body.contains("Outcome: "), "{body}");
        assert!(body.contains("Open in Sleuth: http"), "{body}");
        // The Message-ID carries the event's idempotency id: a repeat is recognisable.
        let message_id = mail["message_id"].as_str().unwrap();
        assert!(
            stored
                .iter()
                .any(|delivery| message_id.contains(&delivery.event_id)),
            "{message_id}"
        );
    }
    for delivery in &stored {
        assert!(
            delivery
                .delivered_detail
                .as_deref()
                .is_some_and(|detail| detail.starts_with("SMTP 250")),
            "{:?}",
            delivery.delivered_detail
        );
    }
    let logins = smtp.said("auth");
    assert!(!logins.is_empty(), "the relay was logged in to");
}

async fn a_certificate_of_another_ca_or_no_starttls_ends_dead_without_the_password(app: TestApp) {
    let dir = tempfile::tempdir().unwrap();
    certificate(dir.path(), "relay");
    let other_ca = certificate(dir.path(), "other");
    let impostor = Smtp::start(Some((dir.path(), "relay")));
    let plain = Smtp::start(None);
    put_secret(&app, "SMTP_PASSWORD", PASSWORD).await;
    let wrong_ca = create_destination(
        &app,
        email_destination("wrong-ca", impostor.port, Some(&other_ca)),
    )
    .await;
    let no_starttls =
        create_destination(&app, email_destination("no-starttls", plain.port, None)).await;
    let _deliverer = deliver(&app);
    conclude(&app, "refused", 1).await;

    let deadline = Instant::now() + Duration::from_secs(60);
    for (destination, reason) in [(wrong_ca, "certificate"), (no_starttls, "STARTTLS")] {
        wait_for(
            &app,
            destination,
            deadline.saturating_duration_since(Instant::now()),
            |counts| counts.get("dead") == Some(&1),
        )
        .await;
        let dead = deliveries(&app, destination, Some(DeliveryState::Dead)).await;
        let error = dead[0].last_error.as_deref().unwrap_or_default();
        assert!(
            error.starts_with("gave up after 3 attempts") && error.contains(reason),
            "{error}"
        );
        assert!(!error.contains(PASSWORD), "{error}");
    }
    for smtp in [&impostor, &plain] {
        assert!(smtp.said("mail").is_empty(), "nothing was taken");
        assert!(
            smtp.said("auth").is_empty(),
            "the password was never sent: {:?}",
            smtp.said("auth")
        );
    }
}
