//! `sleuth data-source` on the real binary: a shipped RDAP definition pointed at a
//! loopback RDAP server (RFC 9083 answers) is added, listed, tested with a domain, disabled
//! and removed; what cannot be stored is refused with the field and nothing is stored.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests of the binary must start the binary.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Command, Output};

fn sleuth(database: &str, arguments: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sleuth"))
        .args(arguments)
        .args(["--database", database])
        .env("SLEUTH_LOG__LEVEL", "warn")
        .env_remove("SLEUTH_CONFIG")
        .env_remove("SLEUTH_SECRETS__KEY")
        .env_remove("SLEUTH_SECRETS__KEY_FILE")
        .output()
        .expect("start sleuth")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Answers every request on a loopback port with the RDAP domain object of RFC 9083 §5.3
/// (a registration event), and sends back each request line it read.
fn rdap_server() -> (String, std::sync::mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap() == 0 || header == "\r\n" {
                    break;
                }
            }
            let _ = sender.send(request_line.trim().to_string());
            let body = serde_json::json!({
                "objectClassName": "domain",
                "ldhName": "INVOICE-PORTAL-LOGIN.NET",
                "status": ["client transfer prohibited"],
                "events": [
                    {"eventAction": "registration", "eventDate": "2026-11-14T08:12:40Z"},
                    {"eventAction": "expiration", "eventDate": "2027-11-14T08:12:40Z"}
                ]
            })
            .to_string();
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/rdap+json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (address, receiver)
}

#[test]
fn data_sources_are_added_tested_and_removed_from_the_shell() {
    let directory = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", directory.path().join("sleuth.db").display());
    let migrated = sleuth(&database, &["migrate"]);
    assert!(migrated.status.success(), "{}", text(&migrated.stderr));

    let shipped = sleuth(&database, &["data-source", "shipped"]);
    assert!(text(&shipped.stdout).contains("virustotal"));

    // A secret the definition names must be stored first; nothing is stored meanwhile.
    let refused = sleuth(
        &database,
        &[
            "data-source",
            "add",
            "--name",
            "vt",
            "--shipped",
            "virustotal",
        ],
    );
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("virustotal_api_key"),
        "{}",
        text(&refused.stderr)
    );
    let bad = sleuth(
        &database,
        &[
            "data-source",
            "add",
            "--name",
            "x",
            "--definition",
            r#"{"type": "directory", "url": "http://dc", "base_dn": "dc=x"}"#,
        ],
    );
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("definition"),
        "{}",
        text(&bad.stderr)
    );
    assert_eq!(
        text(&sleuth(&database, &["data-source", "list"]).stdout),
        ""
    );

    let (address, requests) = rdap_server();
    let base_url = format!("http://{address}");
    let added = sleuth(
        &database,
        &[
            "data-source",
            "add",
            "--name",
            "registry",
            "--shipped",
            "rdap",
            "--base-url",
            &base_url,
        ],
    );
    assert!(added.status.success(), "{}", text(&added.stderr));
    let listed = text(&sleuth(&database, &["data-source", "list"]).stdout);
    assert!(
        listed.contains("registry") && listed.contains("enabled"),
        "{listed}"
    );
    let id = listed.split_whitespace().next().unwrap().to_string();

    let tested = sleuth(
        &database,
        &[
            "data-source",
            "test",
            &id,
            "domain",
            "invoice-portal-login.net",
        ],
    );
    assert!(tested.status.success(), "{}", text(&tested.stderr));
    let output = text(&tested.stdout);
    assert!(output.starts_with("found"), "{output}");
    assert!(
        output.contains("registered_at") && output.contains("2026-11-14"),
        "{output}"
    );
    assert_eq!(
        requests.recv().unwrap(),
        "GET /domain/invoice-portal-login.net HTTP/1.1"
    );

    let disabled = sleuth(&database, &["data-source", "disable", &id]);
    assert!(
        text(&disabled.stdout).contains("disabled"),
        "{}",
        text(&disabled.stderr)
    );
    let removed = sleuth(&database, &["data-source", "remove", &id]);
    assert!(removed.status.success(), "{}", text(&removed.stderr));
    assert_eq!(
        text(&sleuth(&database, &["data-source", "list"]).stdout),
        ""
    );
}
