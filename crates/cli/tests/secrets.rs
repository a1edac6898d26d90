//! Script secrets at rest, on the real binary and both backends: a database upgraded from
//! before secrets were sealed keeps its plaintext rows (and its actions keep the secrets
//! they had) until the first start with a key seals them; without a key nothing new is
//! stored; `generate-key` writes a key only its owner reads; `rotate-key` moves every
//! secret to the current key and refuses, naming them, secrets it cannot open.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests of the binary must start the binary.
#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use sleuth_store_sql::Dialect;
use sleuth_store_sql::migrate::{self, Migration};
use sqlx::Connection;

const PLAIN_EDR: &str = "plain-edr-value-5d1e";
const PLAIN_SLACK: &str = "plain-slack-hook-77b0";

fn sleuth(database: &str, arguments: &[&str], environment: &[(&str, &str)], stdin: &str) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sleuth"));
    command
        .args(arguments)
        .args(["--database", database])
        .env("SLEUTH_LOG__LEVEL", "warn")
        .env_remove("SLEUTH_CONFIG")
        .env_remove("SLEUTH_SECRETS__KEY")
        .env_remove("SLEUTH_SECRETS__KEY_FILE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in environment {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("start sleuth");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn succeeds(database: &str, arguments: &[&str], environment: &[(&str, &str)]) -> Output {
    let output = sleuth(database, arguments, environment, "");
    assert!(
        output.status.success(),
        "sleuth {arguments:?} failed: {}",
        text(&output.stderr)
    );
    output
}

/// Every secret row as (name, value, key id).
async fn secret_rows(database: &str) -> Vec<(String, String, Option<String>)> {
    let mut connection = sqlx::AnyConnection::connect(database).await.unwrap();
    let rows = sqlx::query_as("SELECT name, value, key_id FROM script_secrets ORDER BY name")
        .fetch_all(&mut connection)
        .await
        .unwrap();
    connection.close().await.unwrap();
    rows
}

/// A database as an older Sleuth left it: migrated up to just before secrets were sealed,
/// with two plaintext secrets and a response action (whose runs got every secret then).
async fn database_before_sealing(database: &str, migrations: &[Migration], dialect: Dialect) {
    sqlx::any::install_default_drivers();
    let before: Vec<Migration> = migrations
        .iter()
        .take_while(|migration| migration.name != "sealed_secrets")
        .copied()
        .collect();
    assert!(
        before.len() < migrations.len(),
        "the sealed_secrets migration exists"
    );
    let pool = sqlx::AnyPool::connect(database).await.unwrap();
    migrate::apply(&pool, dialect, &before, None).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "INSERT INTO script_secrets (name, value, created_at, updated_at) \
         VALUES ('EDR_TOKEN', '{PLAIN_EDR}', 1, 1), ('SLACK', '{PLAIN_SLACK}', 1, 1); \
         INSERT INTO trigger_definitions (uuid, fn_name, display_name, tree_labels, \
         display_index, is_runnable, is_scriptable, trigger_arg_names, script_var_names, \
         definition, created_at, updated_at) VALUES ('00000000-0000-0000-0000-000000000001', \
         'old_trigger', 'Old', '[]', 0, 0, 1, '[]', '[]', '{{}}', 1, 1); \
         INSERT INTO response_scripts (display_name, trigger_uuid, created_at, updated_at) \
         VALUES ('Old action', '00000000-0000-0000-0000-000000000001', 1, 1);"
    )))
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
}

async fn secret_names_of_the_old_action(database: &str) -> serde_json::Value {
    let mut connection = sqlx::AnyConnection::connect(database).await.unwrap();
    let names: String = sqlx::query_scalar("SELECT secret_names FROM response_scripts")
        .fetch_one(&mut connection)
        .await
        .unwrap();
    connection.close().await.unwrap();
    serde_json::from_str(&names).unwrap()
}

fn key_file(directory: &Path, name: &str) -> String {
    directory.join(name).display().to_string()
}

async fn sealing_flow(database: &str, migrations: &[Migration], dialect: Dialect) {
    database_before_sealing(database, migrations, dialect).await;
    let keys = tempfile::tempdir().unwrap();

    // Upgraded without a key: migrated, the plaintext rows stay readable as they were, the
    // old action keeps the secrets it had, and nothing new can be stored.
    succeeds(database, &["migrate"], &[]);
    let rows = secret_rows(database).await;
    assert_eq!(rows[0], ("EDR_TOKEN".into(), PLAIN_EDR.into(), None));
    assert_eq!(
        secret_names_of_the_old_action(database).await,
        serde_json::json!(["EDR_TOKEN", "SLACK"])
    );
    let listed = text(&succeeds(database, &["secret", "list"], &[]).stdout);
    assert!(listed.contains("(plaintext)"), "{listed}");
    let refused = sleuth(database, &["secret", "set", "NEW"], &[], "value\n");
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("sleuth secret generate-key"),
        "{}",
        text(&refused.stderr)
    );
    assert_eq!(secret_rows(database).await.len(), 2, "nothing was stored");

    // A key file only its owner reads, never overwritten.
    let first = key_file(keys.path(), "first.key");
    succeeds(database, &["secret", "generate-key", "--out", &first], &[]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&first).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    let again = sleuth(
        database,
        &["secret", "generate-key", "--out", &first],
        &[],
        "",
    );
    assert!(!again.status.success(), "an existing key file is kept");

    // The first start with the key seals the plaintext rows.
    let with_first = [("SLEUTH_SECRETS__KEY_FILE", first.as_str())];
    succeeds(database, &["migrate"], &with_first);
    let rows = secret_rows(database).await;
    let first_id = rows[0].2.clone().expect("sealed");
    for (name, value, key_id) in &rows {
        assert_eq!(key_id.as_deref(), Some(first_id.as_str()), "{name}");
        assert!(!value.contains("plain-"), "{name} is sealed: {value}");
    }
    succeeds(database, &["secret", "set", "NEW"], &with_first);

    // Rotation: the new key seals, the previous one opens; then the previous one alone
    // cannot open what the new one sealed, and says which secrets.
    let second = key_file(keys.path(), "second.key");
    succeeds(database, &["secret", "generate-key", "--out", &second], &[]);
    let rotating = [
        ("SLEUTH_SECRETS__KEY_FILE", second.as_str()),
        ("SLEUTH_SECRETS__PREVIOUS_KEY_FILE", first.as_str()),
    ];
    succeeds(database, &["secret", "rotate-key"], &rotating);
    let rows = secret_rows(database).await;
    assert_eq!(rows.len(), 3);
    let second_id = rows[0].2.clone().expect("sealed");
    assert_ne!(second_id, first_id);
    assert!(
        rows.iter()
            .all(|row| row.2.as_deref() == Some(second_id.as_str()))
    );
    let stale = sleuth(database, &["secret", "rotate-key"], &with_first, "");
    assert!(!stale.status.success());
    let message = text(&stale.stderr);
    assert!(
        message.contains("EDR_TOKEN") && message.contains(&second_id),
        "{message}"
    );

    // The key is never printed by `sleuth config`.
    let inline = std::fs::read_to_string(&second).unwrap();
    let config = succeeds(
        database,
        &["config"],
        &[("SLEUTH_SECRETS__KEY", inline.trim())],
    );
    let shown = text(&config.stdout);
    assert!(
        !shown.contains(inline.trim()) && shown.contains("***"),
        "{shown}"
    );
    for (_, value, _) in secret_rows(database).await {
        assert!(!value.contains(PLAIN_EDR) && !value.contains(PLAIN_SLACK));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_secrets_are_sealed_by_the_first_start_with_a_key_on_sqlite() {
    let directory = tempfile::tempdir().unwrap();
    let database = format!(
        "sqlite://{}?mode=rwc",
        directory.path().join("sleuth.db").display()
    );
    sealing_flow(&database, sleuth_store_sqlite::MIGRATIONS, Dialect::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_secrets_are_sealed_by_the_first_start_with_a_key_on_postgres() {
    let Some(database) = sleuth_test_support::postgres::fresh_database().await else {
        return;
    };
    sealing_flow(
        database.url(),
        sleuth_store_postgres::MIGRATIONS,
        Dialect::Postgres,
    )
    .await;
}
