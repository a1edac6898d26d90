//! `sleuth audit verify` on the real binary, on SQLite and PostgreSQL: the command line's
//! own writes are audited (never a secret's value or a key), appends from several
//! processes at once keep one chain, and tampering with a row is named by entry. Also the
//! binding of users and keys to tenant unions from the command line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests of the binary must start the binary.
#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

use sqlx::Connection;

fn sleuth(database: &str, arguments: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sleuth"))
        .args(arguments)
        .args(["--database", database])
        .env("SLEUTH_LOG__LEVEL", "warn")
        .env_remove("SLEUTH_CONFIG")
        // Secrets are sealed with a key kept outside the database; any key will do here.
        .env(
            "SLEUTH_SECRETS__KEY",
            "KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio=",
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sleuth");
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn succeeds(database: &str, arguments: &[&str], stdin: Option<&str>) -> String {
    let output = sleuth(database, arguments, stdin);
    assert!(
        output.status.success(),
        "sleuth {arguments:?} failed: {}",
        text(&output.stderr)
    );
    text(&output.stdout)
}

async fn raw(database: &str, sql: &str) {
    sqlx::any::install_default_drivers();
    let mut connection = sqlx::AnyConnection::connect(database).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
        .execute(&mut connection)
        .await
        .unwrap();
    connection.close().await.unwrap();
}

async fn audit_rows(database: &str) -> String {
    sqlx::any::install_default_drivers();
    let mut connection = sqlx::AnyConnection::connect(database).await.unwrap();
    let rows: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT action, COALESCE(resource_id, ''), detail FROM audit_log ORDER BY seq",
    )
    .fetch_all(&mut connection)
    .await
    .unwrap();
    connection.close().await.unwrap();
    rows.iter()
        .map(|(action, id, detail)| format!("{action} {id} {detail}\n"))
        .collect()
}

async fn verify_flow(database: &str, drop_guards: &str) {
    succeeds(database, &["tenant", "create", "--name", "Acme"], None);
    succeeds(
        database,
        &["secret", "set", "EDR_TOKEN"],
        Some("super-secret-value\n"),
    );
    let key = succeeds(
        database,
        &[
            "apikey",
            "create",
            "--role",
            "member",
            "--email",
            "m@example.com",
        ],
        None,
    );
    let key = key.trim().to_string();
    assert!(key.starts_with("sleuth_"), "{key}");
    succeeds(database, &["secret", "delete", "EDR_TOKEN"], None);
    let verified = succeeds(database, &["audit", "verify"], None);
    assert!(verified.contains("intact: 4 entries"), "{verified}");

    let rows = audit_rows(database).await;
    for action in [
        "cli tenant create",
        "cli secret set EDR_TOKEN",
        "cli apikey create",
        "cli secret delete EDR_TOKEN",
    ] {
        assert!(rows.contains(action), "{action} in {rows}");
    }
    assert!(
        !rows.contains("super-secret-value"),
        "no secret value: {rows}"
    );
    assert!(!rows.contains(&key), "no key: {rows}");
    assert!(!rows.contains(&key[..20]), "no part of the key: {rows}");

    // Several processes appending at once keep one chain.
    let children: Vec<_> = (0..6)
        .map(|index| {
            Command::new(env!("CARGO_BIN_EXE_sleuth"))
                .args(["tenant", "create", "--name", &format!("Tenant {index}")])
                .args(["--database", database])
                .env("SLEUTH_LOG__LEVEL", "warn")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
    }
    let verified = succeeds(database, &["audit", "verify"], None);
    assert!(verified.contains("intact: 10 entries"), "{verified}");

    // An edited row is named, with a non-zero exit.
    raw(database, drop_guards).await;
    raw(
        database,
        "UPDATE audit_log SET resource_id = 'someone else' WHERE seq = 3",
    )
    .await;
    let broken = sleuth(database, &["audit", "verify"], None);
    assert!(!broken.status.success());
    let message = text(&broken.stderr);
    assert!(message.contains("broken at entry 3"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_names_tampering_on_sqlite() {
    let directory = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", directory.path().join("audit.db").display());
    verify_flow(
        &database,
        "DROP TRIGGER audit_log_no_update; DROP TRIGGER audit_log_no_delete;",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_names_tampering_on_postgres() {
    let Some(database) = sleuth_test_support::postgres::fresh_database().await else {
        return;
    };
    verify_flow(
        database.url(),
        "DROP TRIGGER audit_log_no_change ON audit_log;",
    )
    .await;
}

async fn scalar(database: &str, sql: &str) -> Option<String> {
    sqlx::any::install_default_drivers();
    let mut connection = sqlx::AnyConnection::connect(database).await.unwrap();
    let value: Option<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_one(&mut connection)
        .await
        .unwrap();
    connection.close().await.unwrap();
    value
}

/// `sleuth apikey create --tenant-union` binds a new user and their key; a key wider than
/// its user is refused; `sleuth apikey scope` rebinds and unbinds the user; each is audited.
async fn scope_flow(database: &str) {
    succeeds(database, &["tenant", "create", "--name", "Acme"], None);
    succeeds(database, &["tenant", "create", "--name", "Globex"], None);
    let user_scope = "SELECT tenant_union_ids FROM users WHERE email = 'r@example.com'";
    let create = |unions: &'static [&'static str]| {
        let mut arguments = vec![
            "apikey",
            "create",
            "--role",
            "restricted-read-only",
            "--email",
            "r@example.com",
        ];
        for union in unions {
            arguments.extend(["--tenant-union", union]);
        }
        sleuth(database, &arguments, None)
    };
    let created = create(&["2"]);
    assert!(created.status.success(), "{}", text(&created.stderr));
    assert!(
        text(&created.stderr).contains("reaching tenant unions 2"),
        "{}",
        text(&created.stderr)
    );
    assert_eq!(scalar(database, user_scope).await.as_deref(), Some("[2]"));
    let key_scope = "SELECT tenant_union_ids FROM api_keys ORDER BY id DESC LIMIT 1";
    assert_eq!(scalar(database, key_scope).await.as_deref(), Some("[2]"));

    let wider = create(&["2", "3"]);
    assert!(!wider.status.success());
    assert!(
        text(&wider.stderr).contains("at most what its user does"),
        "{}",
        text(&wider.stderr)
    );
    let unknown = sleuth(
        database,
        &[
            "apikey",
            "scope",
            "--email",
            "r@example.com",
            "--tenant-union",
            "99",
        ],
        None,
    );
    assert!(!unknown.status.success());
    assert_eq!(scalar(database, user_scope).await.as_deref(), Some("[2]"));

    let moved = succeeds(
        database,
        &[
            "apikey",
            "scope",
            "--email",
            "r@example.com",
            "--tenant-union",
            "3",
        ],
        None,
    );
    assert!(moved.contains("now reaches tenant unions 3"), "{moved}");
    assert_eq!(scalar(database, user_scope).await.as_deref(), Some("[3]"));
    succeeds(
        database,
        &[
            "apikey",
            "scope",
            "--email",
            "r@example.com",
            "--all-tenant-unions",
        ],
        None,
    );
    assert_eq!(scalar(database, user_scope).await, None);
    let rows = audit_rows(database).await;
    assert_eq!(rows.matches("cli apikey scope").count(), 2, "{rows}");
    let verified = succeeds(database, &["audit", "verify"], None);
    assert!(verified.contains("intact: 5 entries"), "{verified}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_bound_to_tenant_unions_on_sqlite() {
    let directory = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", directory.path().join("scope.db").display());
    scope_flow(&database).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_bound_to_tenant_unions_on_postgres() {
    let Some(database) = sleuth_test_support::postgres::fresh_database().await else {
        return;
    };
    scope_flow(database.url()).await;
}
