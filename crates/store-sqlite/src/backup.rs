//! Online backup and restore of the SQLite file.
//!
//! A backup is `VACUUM INTO` a new file: one read transaction, so the copy is the database
//! as of one moment while the server goes on taking alerts (WAL lets the writers continue),
//! compacted, and checked with `PRAGMA integrity_check` before it is called written.
//!
//! A restore never writes over a database: the target file must not exist. An existing
//! database may be in use by a running server, and replacing a file under it (or its
//! `-wal`) corrupts both; so the operator stops Sleuth and moves the old file aside, and the
//! restore places the checked copy under the target's name in one rename, then opens it,
//! which applies the migrations of this build.

use std::path::{Path, PathBuf};

use sleuth_store::{StoreError, StoreResult};
use sleuth_store_sql::backup::{self, Contents};
use sqlx::AnyPool;
use sqlx::any::AnyPoolOptions;

use crate::{MIGRATIONS, SqliteOptions};

/// Writes a consistent copy of the database at `url` to `destination`, which must not
/// exist, while the database stays in use.
pub async fn backup(url: &str, destination: &Path) -> StoreResult<Contents> {
    let source = database_path(url)?;
    if !source.exists() {
        return Err(rejected(format!(
            "there is no database at {}; check --database",
            source.display()
        )));
    }
    let target = destination.to_str().ok_or_else(|| {
        rejected(format!(
            "the backup path {} is not valid UTF-8",
            destination.display()
        ))
    })?;
    // VACUUM INTO writes into an empty file, which keeps the owner-only mode made here.
    backup::create_backup_file(destination)?;
    let pool = match open_read_only(&source).await {
        Ok(pool) => pool,
        Err(error) => {
            let _ = std::fs::remove_file(destination);
            return Err(error);
        }
    };
    sqlx::query("VACUUM INTO $1")
        .bind(target)
        .execute(&pool)
        .await
        .map_err(|error| {
            let _ = std::fs::remove_file(destination);
            rejected(format!(
                "cannot write the backup to {}: {error}",
                destination.display()
            ))
        })?;
    pool.close().await;
    check(destination).await
}

/// Checks the backup at `backup_file` and makes it the database at `url`, which must not
/// exist yet; then opens it once, applying this build's migrations. Answers what the
/// restored database holds.
pub async fn restore(backup_file: &Path, url: &str) -> StoreResult<Contents> {
    let target = database_path(url)?;
    refuse_existing(
        &target,
        "the database to restore into (stop Sleuth and move it aside first)",
    )?;
    check(backup_file).await?;
    let staging = staging_path(&target);
    let _ = std::fs::remove_file(&staging);
    std::fs::copy(backup_file, &staging).map_err(|error| {
        rejected(format!(
            "cannot copy the backup to {}: {error}",
            staging.display()
        ))
    })?;
    std::fs::File::open(&staging)
        .and_then(|file| file.sync_all())
        .map_err(|error| rejected(format!("cannot sync {}: {error}", staging.display())))?;
    // `rename` would silently replace a database created meanwhile; a hard link fails
    // instead, and the staging name is removed after.
    std::fs::hard_link(&staging, &target).map_err(|error| {
        rejected(format!(
            "cannot place the restored database at {}: {error}",
            target.display()
        ))
    })?;
    let _ = std::fs::remove_file(&staging);
    let store = crate::open(url, &SqliteOptions::default()).await?;
    drop(store);
    let pool = open_read_only(&target).await?;
    let contents = backup::describe(&pool, MIGRATIONS).await;
    pool.close().await;
    contents
}

/// Whether the file is an intact Sleuth database this build can open.
pub async fn check(file: &Path) -> StoreResult<Contents> {
    if !file.is_file() {
        return Err(rejected(format!("there is no file at {}", file.display())));
    }
    let pool = open_read_only(file).await?;
    let verdict: Result<String, sqlx::Error> = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_one(&pool)
        .await;
    let contents = match verdict {
        Ok(verdict) if verdict == "ok" => backup::describe(&pool, MIGRATIONS).await,
        Ok(verdict) => Err(rejected(format!(
            "{} is damaged: integrity check says {verdict}",
            file.display()
        ))),
        Err(error) => Err(rejected(format!(
            "{} is not a SQLite database: {error}",
            file.display()
        ))),
    };
    pool.close().await;
    contents
}

/// The file a `sqlite:` URL names.
pub fn database_path(url: &str) -> StoreResult<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .ok_or_else(|| rejected(format!("'{url}' is not a sqlite: URL")))?;
    let path = rest.split('?').next().unwrap_or_default();
    if path.is_empty() {
        return Err(rejected(
            "the sqlite URL names no file; use sqlite://sleuth.db".into(),
        ));
    }
    Ok(PathBuf::from(path))
}

async fn open_read_only(file: &Path) -> StoreResult<AnyPool> {
    sqlx::any::install_default_drivers();
    let shown = file.display().to_string();
    if shown.contains(['?', '#']) {
        return Err(rejected(format!(
            "{shown}: a path with '?' or '#' cannot be named in a sqlite URL; rename it"
        )));
    }
    let url = format!("sqlite://{shown}?mode=ro");
    AnyPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .map_err(|error| rejected(format!("cannot open {}: {error}", file.display())))
}

fn refuse_existing(path: &Path, what: &str) -> StoreResult<()> {
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    if path.exists() || wal.exists() {
        return Err(rejected(format!(
            "{what} {} already exists; nothing was written",
            path.display()
        )));
    }
    Ok(())
}

fn staging_path(target: &Path) -> PathBuf {
    PathBuf::from(format!("{}.restoring", target.display()))
}

fn rejected(detail: String) -> StoreError {
    StoreError::Rejected { detail }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_their_file() {
        assert_eq!(
            database_path("sqlite://data/sleuth.db?mode=rwc").unwrap(),
            PathBuf::from("data/sleuth.db")
        );
        assert_eq!(
            database_path("sqlite:/var/lib/sleuth.db").unwrap(),
            PathBuf::from("/var/lib/sleuth.db")
        );
        assert!(database_path("sqlite://").is_err());
        assert!(database_path("postgres://h/db").is_err());
    }
}
