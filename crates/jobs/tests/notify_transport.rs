//! Notifications on the wire, against real receivers on loopback: an HTTP receiver that
//! checks the signature as a receiver would write it, answers as a busy, a gone or a broken
//! destination does; and a real rsyslog (Debian's package; `.ci/run` installs it) that
//! receives the CEF line over TCP and UDP and writes it to a file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::disallowed_methods)] // The test starts its own rsyslogd.

use std::convert::Infallible;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use sleuth_domain::{Outcome, Priority};
use sleuth_jobs::notify_transport::{Attempt, SyslogProtocol, Transport};
use sleuth_notify::render::{syslog, webhook};
use sleuth_notify::{Concluded, Event, EventKind, signature};

fn event() -> Event {
    Event {
        id: uuid::Uuid::new_v4(),
        occurred_at: chrono::Utc::now(),
        tenant: Some("acme".into()),
        tenant_unions: vec![],
        kind: EventKind::InvestigationConcluded(Concluded {
            investigation_id: uuid::Uuid::new_v4(),
            title: "Mimikatz on WKS-0231 | a=b\nnext line".into(),
            outcome: Outcome::BreachedConfirmed,
            priority: Priority::Urgent,
            source: "CrowdStrike Falcon".into(),
            conclusion: "LSASS memory was read".into(),
            mitre_tactic: Some("Credential Access".into()),
            insight_tags: vec![],
            entities: vec!["host WKS-0231".into()],
            link: "http://127.0.0.1/investigations/1".into(),
        }),
    }
}

/// What the receiver saw: each request's signature header and body.
type Seen = Arc<Mutex<Vec<(Option<String>, Bytes)>>>;

/// An HTTP receiver on loopback that answers `status` (with `Retry-After: 7` on 429).
async fn receiver(status: u16) -> (String, Seen) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let kept = seen.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let seen = kept.clone();
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let seen = seen.clone();
                async move {
                    let signature = request
                        .headers()
                        .get(signature::HEADER)
                        .map(|value| value.to_str().unwrap().to_string());
                    let body = request.into_body().collect().await.unwrap().to_bytes();
                    seen.lock().unwrap().push((signature, body));
                    let mut response = Response::builder().status(status);
                    if status == 429 {
                        response = response.header("Retry-After", "7");
                    }
                    Ok::<_, Infallible>(
                        response
                            .body(Full::new(Bytes::from_static(
                                b"{\"error\":\"busy or gone\"}",
                            )))
                            .unwrap(),
                    )
                }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service),
            );
        }
    });
    (format!("http://{address}/hooks/sleuth"), seen)
}

#[tokio::test]
async fn a_signed_webhook_is_delivered_and_verifies_as_a_receiver_checks_it() {
    let (url, seen) = receiver(204).await;
    let event = event();
    let now = chrono::Utc::now().timestamp();
    let message = webhook::render(&event, b"whsec_test", now);
    let attempt = Transport::new().unwrap().post(&url, &message).await;
    assert_eq!(
        attempt,
        Attempt::Delivered {
            detail: "HTTP 204".into()
        }
    );
    let seen = seen.lock().unwrap();
    let (header, body) = &seen[0];
    let header = header.as_deref().expect("a signature header");
    assert_eq!(
        signature::verify(b"whsec_test", header, body, now, 300),
        Ok(())
    );
    assert_eq!(
        signature::verify(b"another secret", header, body, now, 300),
        Err(signature::Refusal::Mismatch)
    );
}

#[tokio::test]
async fn busy_gone_and_broken_destinations_are_told_apart() {
    let transport = Transport::new().unwrap();
    let message = webhook::render(&event(), b"s", 0);
    let (busy, _) = receiver(429).await;
    match transport.post(&busy, &message).await {
        Attempt::TryAgain {
            retry_after,
            reason,
        } => {
            assert_eq!(retry_after, Some(Duration::from_secs(7)));
            assert!(reason.starts_with("HTTP 429: {\"error\""), "{reason}");
        }
        other => panic!("429 is tried again: {other:?}"),
    }
    let (broken, _) = receiver(503).await;
    assert!(matches!(
        transport.post(&broken, &message).await,
        Attempt::TryAgain {
            retry_after: None,
            ..
        }
    ));
    let (gone, _) = receiver(404).await;
    assert!(matches!(
        transport.post(&gone, &message).await,
        Attempt::Refused { .. }
    ));
    // Nothing listens on a port just released.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    match transport.post(&format!("http://{closed}/"), &message).await {
        Attempt::TryAgain { reason, .. } => {
            assert!(reason.to_lowercase().contains("connect"), "{reason}")
        }
        other => panic!("an unreachable destination is tried again: {other:?}"),
    }
    assert!(matches!(
        transport.post("file:///etc/passwd", &message).await,
        Attempt::Refused { .. }
    ));
}

/// A real rsyslogd of its own, listening on TCP and UDP, writing what it receives raw.
struct Rsyslog {
    child: Child,
    port: u16,
    output: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Rsyslog {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_rsyslog() -> Rsyslog {
    let dir = tempfile::tempdir().unwrap();
    // A free port from the kernel, handed to rsyslogd (which cannot take port 0).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let output = dir.path().join("received.log");
    let config = dir.path().join("rsyslog.conf");
    std::fs::write(
        &config,
        format!(
            "global(workDirectory=\"{dir}\")\n\
             module(load=\"imtcp\")\nmodule(load=\"imudp\")\n\
             input(type=\"imtcp\" port=\"{port}\" address=\"127.0.0.1\")\n\
             input(type=\"imudp\" port=\"{port}\" address=\"127.0.0.1\")\n\
             template(name=\"raw\" type=\"string\" string=\"%rawmsg%\\n\")\n\
             *.* action(type=\"omfile\" file=\"{output}\" template=\"raw\")\n",
            dir = dir.path().display(),
            output = output.display(),
        ),
    )
    .unwrap();
    let child = Command::new("/usr/sbin/rsyslogd")
        .args(["-n", "-f"])
        .arg(&config)
        .arg("-i")
        .arg(dir.path().join("rsyslogd.pid"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("rsyslogd starts (Debian package rsyslog; .ci/run installs it)");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "rsyslogd did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Rsyslog {
        child,
        port,
        output,
        _dir: dir,
    }
}

/// The lines rsyslogd wrote, once it wrote `count`.
async fn received(rsyslog: &Rsyslog, count: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(&rsyslog.output).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        if lines.len() >= count {
            return lines;
        }
        assert!(Instant::now() < deadline, "rsyslogd wrote {lines:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn rsyslog_receives_the_cef_line_whole_over_tcp_and_udp() {
    let rsyslog = start_rsyslog();
    let address = format!("127.0.0.1:{}", rsyslog.port);
    let transport = Transport::new().unwrap();
    let line = syslog::render(&event(), syslog::Facility::LOCAL4, "sleuth-test");
    for protocol in [SyslogProtocol::Tcp, SyslogProtocol::Udp] {
        let attempt = transport.syslog(&address, protocol, &line).await;
        assert!(matches!(attempt, Attempt::Delivered { .. }), "{attempt:?}");
    }
    let lines = received(&rsyslog, 2).await;
    // The title's newline and pipe stayed inside their CEF field: one line each, whole.
    assert_eq!(lines, [line.clone(), line], "what rsyslog wrote");
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    assert!(matches!(
        transport
            .syslog(&closed.to_string(), SyslogProtocol::Tcp, "x")
            .await,
        Attempt::TryAgain { .. }
    ));
}
