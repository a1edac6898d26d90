//! `sleuth backup` and `sleuth restore`: an online copy of the database, and putting one
//! back, on either backend (docs/operations.md).
//!
//! SQLite is copied by SQLite itself (`sleuth_store_sqlite::backup`). PostgreSQL is copied
//! by PostgreSQL's own tools, `pg_dump` in its custom format and `pg_restore`, which a DBA
//! already knows and trusts; they must be on the PATH, in the server's major version or
//! newer. They are the only programs Sleuth runs outside the script sandbox, and they get
//! the password through `PGPASSWORD`, never on their command line where `ps` would show it.
//!
//! Neither restore writes over a database: the target must not exist (SQLite) or hold no
//! table (PostgreSQL), so a restore can never pull a database from under a running server.

use std::path::Path;

use anyhow::Context as _;
use serde_json::json;
use sleuth_jobs::Settings;

use crate::audit;
use crate::open::open_store;

/// `sleuth backup --to FILE`.
pub(crate) async fn backup(settings: &Settings, destination: &Path) -> anyhow::Result<()> {
    let url = &settings.database.url;
    let contents = if sleuth_store_sqlite::handles(url) {
        sleuth_store_sqlite::backup::backup(url, destination).await?
    } else if sleuth_store_postgres::handles(url) {
        let contents = sleuth_store_postgres::describe(url).await?;
        // pg_dump writes into the file made here, which keeps its owner-only mode.
        sleuth_store_sql::backup::create_backup_file(destination)?;
        let mut arguments = vec![
            "--format=custom".to_string(),
            "--no-owner".to_string(),
            "--no-privileges".to_string(),
            "--file".to_string(),
            destination.display().to_string(),
        ];
        let connection = Connection::from_url(url)?;
        arguments.extend(["--dbname".to_string(), connection.url_without_password]);
        if let Err(error) = run_postgres_tool("pg_dump", arguments, connection.password).await {
            let _ = std::fs::remove_file(destination);
            return Err(error);
        }
        contents
    } else {
        anyhow::bail!("backup needs a sqlite:// or postgres:// database URL");
    };
    let store = open_store(settings).await?;
    audit::record(
        &store,
        "backup",
        "database",
        None,
        json!({ "to": destination.display().to_string() }),
    )
    .await?;
    println!("backup written to {}: {contents}", destination.display());
    Ok(())
}

/// `sleuth restore --from FILE`, into the configured database.
pub(crate) async fn restore(settings: &Settings, backup_file: &Path) -> anyhow::Result<()> {
    let url = &settings.database.url;
    let shown = sleuth_jobs::settings::redact_url_password(url);
    let contents = if sleuth_store_sqlite::handles(url) {
        sleuth_store_sqlite::backup::restore(backup_file, url).await?
    } else if sleuth_store_postgres::handles(url) {
        if !backup_file.is_file() {
            anyhow::bail!("there is no backup file at {}", backup_file.display());
        }
        if !sleuth_store_postgres::is_empty(url).await? {
            anyhow::bail!(
                "the database {shown} already holds tables; restore only into an empty \
                 database (createdb a new one, or stop Sleuth and drop this one first)"
            );
        }
        let connection = Connection::from_url(url)?;
        let arguments = vec![
            "--no-owner".to_string(),
            "--no-privileges".to_string(),
            "--exit-on-error".to_string(),
            "--single-transaction".to_string(),
            "--dbname".to_string(),
            connection.url_without_password,
            backup_file.display().to_string(),
        ];
        run_postgres_tool("pg_restore", arguments, connection.password).await?;
        // Opening applies the migrations this build has and the backup did not.
        drop(open_store(settings).await?);
        sleuth_store_postgres::describe(url).await?
    } else {
        anyhow::bail!("restore needs a sqlite:// or postgres:// database URL");
    };
    let store = open_store(settings).await?;
    let chain = store.verify_audit_chain().await?;
    audit::record(
        &store,
        "restore",
        "database",
        None,
        json!({ "from": backup_file.display().to_string() }),
    )
    .await?;
    println!(
        "restored {} into {shown}: {contents}",
        backup_file.display()
    );
    match chain {
        sleuth_store::AuditVerdict::Intact { count, head_hash } => {
            println!("audit log intact: {count} entries; head hash {head_hash}");
            Ok(())
        }
        sleuth_store::AuditVerdict::Broken { seq, reason } => {
            anyhow::bail!("the restored audit log is broken at entry {seq}: {reason}")
        }
    }
}

/// A PostgreSQL URL split so that its password never reaches a command line.
struct Connection {
    url_without_password: String,
    password: Option<String>,
}

impl Connection {
    fn from_url(url: &str) -> anyhow::Result<Connection> {
        let mut parsed = url::Url::parse(url).context("the database URL does not parse")?;
        let password = parsed.password().map(|encoded| {
            percent_encoding::percent_decode_str(encoded)
                .decode_utf8_lossy()
                .into_owned()
        });
        if password.is_some() {
            parsed
                .set_password(None)
                .map_err(|()| anyhow::anyhow!("the database URL cannot carry a password"))?;
        }
        Ok(Connection {
            url_without_password: parsed.to_string(),
            password,
        })
    }
}

/// Runs `pg_dump` or `pg_restore` and fails with what it printed.
async fn run_postgres_tool(
    program: &'static str,
    arguments: Vec<String>,
    password: Option<String>,
) -> anyhow::Result<()> {
    let output = tokio::task::spawn_blocking(move || {
        // The one process Sleuth starts outside the sandbox: PostgreSQL's own client tool,
        // on the operator's command (see the module documentation).
        #[allow(clippy::disallowed_methods)]
        let mut command = std::process::Command::new(program);
        command.args(&arguments);
        if let Some(password) = password {
            command.env("PGPASSWORD", password);
        }
        command.output()
    })
    .await
    .context("the backup task stopped")?;
    let output = match output {
        Ok(output) => output,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => anyhow::bail!(
            "{program} is not on the PATH; install PostgreSQL's client tools \
             (Debian: postgresql-client) in the server's major version or newer"
        ),
        Err(error) => return Err(error).with_context(|| format!("cannot run {program}")),
    };
    if !output.status.success() {
        anyhow::bail!(
            "{program} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_leaves_the_url_and_is_decoded() {
        let connection =
            Connection::from_url("postgres://sleuth:p%40ss@db.internal:5432/sleuth").unwrap();
        assert_eq!(
            connection.url_without_password,
            "postgres://sleuth@db.internal:5432/sleuth"
        );
        assert_eq!(connection.password.as_deref(), Some("p@ss"));
        let without = Connection::from_url("postgres://postgres@127.0.0.1/test").unwrap();
        assert_eq!(without.password, None);
        assert_eq!(
            without.url_without_password,
            "postgres://postgres@127.0.0.1/test"
        );
    }
}
