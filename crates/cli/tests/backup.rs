//! `sleuth backup` and `sleuth restore` on both backends, the way an operator runs them:
//! the real binary serving and taking alerts while it is backed up, the copy restored into
//! a new database, and a server on that database answering for every alert acknowledged
//! before the backup began, with its audit log intact.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests of the binary must start the binary.
#![allow(clippy::disallowed_methods)]

#[path = "support/sleuth_process.rs"]
mod sleuth_process;

use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use sleuth_process::{Server, free_port, http};

fn start(database: &str, port: u16) -> (Server, Option<String>) {
    sleuth_process::start(database, port, &[("SLEUTH_LOG__LEVEL", "warn".into())])
}

fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|error| panic!("{error}: {body}"))
}

fn sleuth(database: &str, arguments: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sleuth"))
        .args(arguments)
        .args(["--database", database])
        .env("SLEUTH_LOG__LEVEL", "warn")
        .env_remove("SLEUTH_CONFIG")
        .output()
        .expect("run sleuth")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn create(port: u16, key: &str, title: &str) -> Option<i64> {
    let body = format!("{{\"raw_alert_content\": {{\"title\": \"{title}\"}}}}");
    match http(
        port,
        "POST",
        "/app/api/v1/investigation/create",
        key,
        Some(&body),
    ) {
        Ok((200, answer)) => json(&answer)["investigation_id"].as_i64(),
        _ => None,
    }
}

/// Backs up `source` while alerts keep arriving, restores into `target`, and checks the
/// restored database from a server started on it.
fn backup_while_serving_then_restore(source: &str, target: &str, backup_file: &str) {
    let port = free_port();
    let (server, key) = start(source, port);
    let key = key.expect("the first start prints the admin key");
    let before: Vec<i64> = (0..25)
        .map(|index| create(port, &key, &format!("before the backup {index}")).unwrap())
        .collect();

    // Alerts keep arriving during the backup: it is online.
    let stop = Arc::new(AtomicBool::new(false));
    let during = Arc::new(Mutex::new(0_usize));
    let writer = {
        let (stop, during, key) = (stop.clone(), during.clone(), key.clone());
        std::thread::spawn(move || {
            let mut index = 0;
            while !stop.load(Ordering::Relaxed) {
                if create(port, &key, &format!("during the backup {index}")).is_some() {
                    *during.lock().unwrap() += 1;
                }
                index += 1;
            }
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    let output = sleuth(source, &["backup", "--to", backup_file]);
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert!(output.status.success(), "backup failed: {}", text(&output));
    assert!(
        text(&output).contains("backup written to"),
        "the backup says what it wrote: {}",
        text(&output)
    );
    assert!(
        *during.lock().unwrap() > 0,
        "alerts were taken while the backup ran"
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(backup_file).unwrap().permissions(),
    );
    assert_eq!(
        mode & 0o777,
        0o600,
        "a backup is readable by its owner only"
    );

    // A second backup to the same file writes nothing over it.
    let again = sleuth(source, &["backup", "--to", backup_file]);
    assert!(!again.status.success(), "{}", text(&again));
    assert!(text(&again).contains("already exists"), "{}", text(&again));
    drop(server);

    let restored = sleuth(target, &["restore", "--from", backup_file]);
    assert!(
        restored.status.success(),
        "restore failed: {}",
        text(&restored)
    );
    assert!(
        text(&restored).contains("audit log intact"),
        "{}",
        text(&restored)
    );

    // A restore never writes over a database.
    let over = sleuth(target, &["restore", "--from", backup_file]);
    assert!(!over.status.success(), "{}", text(&over));

    let port = free_port();
    let (_server, second_key) = start(target, port);
    assert!(second_key.is_none(), "the restored database has its admin");
    for id in &before {
        let (status, body) = http(
            port,
            "GET",
            &format!("/app/api/v1/investigation/{id}"),
            &key,
            None,
        )
        .unwrap();
        assert_eq!(status, 200, "investigation {id} was restored: {body}");
    }
    let verified = sleuth(target, &["audit", "verify"]);
    assert!(verified.status.success(), "{}", text(&verified));
}

#[test]
fn a_sqlite_database_is_backed_up_online_and_restored_into_a_new_file() {
    let directory = tempfile::tempdir().unwrap();
    let source = format!("sqlite://{}", directory.path().join("live.db").display());
    let target = format!(
        "sqlite://{}",
        directory.path().join("restored.db").display()
    );
    let backup_file = directory.path().join("sleuth.backup");
    backup_while_serving_then_restore(&source, &target, backup_file.to_str().unwrap());

    let damaged = directory.path().join("damaged.backup");
    std::fs::write(&damaged, b"not a database").unwrap();
    let elsewhere = format!("sqlite://{}", directory.path().join("other.db").display());
    let refused = sleuth(
        &elsewhere,
        &["restore", "--from", damaged.to_str().unwrap()],
    );
    assert!(!refused.status.success(), "{}", text(&refused));
    assert!(
        !directory.path().join("other.db").exists(),
        "a refused restore leaves no database behind"
    );
}

#[test]
fn a_postgres_database_is_backed_up_online_and_restored_into_an_empty_one() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let Some(source) = runtime.block_on(sleuth_test_support::postgres::fresh_database()) else {
        return;
    };
    let target = runtime
        .block_on(sleuth_test_support::postgres::fresh_database())
        .unwrap();
    let directory = tempfile::tempdir().unwrap();
    let backup_file = directory.path().join("sleuth.dump");
    backup_while_serving_then_restore(source.url(), target.url(), backup_file.to_str().unwrap());
}
