//! What a database holds, told the same way on both backends: its schema version and how
//! many investigations, alerts and audit entries it keeps. Backups print it when written
//! and check it before they are restored, so that an operator sees what a file holds and a
//! backup from a newer Sleuth is never put under an older one.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use sleuth_store::{StoreError, StoreResult};
use sqlx::AnyPool;

use crate::{DbResultExt, Migration};

/// A database's contents in a few figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contents {
    /// The highest migration applied.
    pub schema_version: i64,
    pub investigations: i64,
    pub alerts: i64,
    pub audit_entries: i64,
}

impl std::fmt::Display for Contents {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{} investigations, {} alerts, {} audit entries, schema version {}",
            self.investigations, self.alerts, self.audit_entries, self.schema_version
        )
    }
}

/// Counts what the database holds. Refused when it is not a Sleuth database, or when it
/// has migrations this build does not know (it was written by a newer Sleuth).
pub async fn describe(pool: &AnyPool, known: &[Migration]) -> StoreResult<Contents> {
    let applied: Vec<i64> = sqlx::query_scalar("SELECT version FROM schema_migrations")
        .fetch_all(pool)
        .await
        .map_err(|error| StoreError::Rejected {
            detail: format!("this is not a Sleuth database (no migration ledger: {error})"),
        })?;
    let unknown: Vec<i64> = applied
        .iter()
        .copied()
        .filter(|version| !known.iter().any(|migration| migration.version == *version))
        .collect();
    if !unknown.is_empty() {
        return Err(StoreError::Rejected {
            detail: format!(
                "the database has migrations {unknown:?} that this build does not know: \
                 it was written by a newer Sleuth; use that version or newer"
            ),
        });
    }
    let count = |table: &'static str| async move {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql))
            .fetch_one(pool)
            .await
            .db()
    };
    Ok(Contents {
        schema_version: applied.iter().copied().max().unwrap_or(0),
        investigations: count("investigations").await?,
        alerts: count("alerts").await?,
        audit_entries: count("audit_log").await?,
    })
}

/// Creates the empty file a backup is written into, readable and writable by its owner
/// only: a backup holds every alert, the users and the hashes of their keys. Refused when
/// the file exists, so a backup never writes over anything.
pub fn create_backup_file(path: &Path) -> StoreResult<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map(drop)
        .map_err(|error| StoreError::Rejected {
            detail: if error.kind() == std::io::ErrorKind::AlreadyExists {
                format!(
                    "the backup file {} already exists; nothing was written",
                    path.display()
                )
            } else {
                format!("cannot create the backup file {}: {error}", path.display())
            },
        })
}
