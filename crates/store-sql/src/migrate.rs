//! Append-only migrations: each backend lists its own, in order; an applied migration is
//! never edited (its checksum is kept and checked at start-up).

use sleuth_store::{StoreError, StoreResult};
use sqlx::AnyPool;
use sqlx::Executor;

use crate::DbResultExt;
use crate::rows;

#[derive(Debug, Clone, Copy)]
pub struct Migration {
    pub version: i64,
    pub name: &'static str,
    pub sql: &'static str,
}

/// A stable fingerprint of a migration's text (FNV-1a), to detect edited migrations.
fn checksum(sql: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in sql.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

const CREATE_LEDGER: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version BIGINT PRIMARY KEY,
    name TEXT NOT NULL,
    checksum TEXT NOT NULL,
    applied_at BIGINT NOT NULL
)";

/// Applies every migration not yet applied, each in its own write transaction. `lock_sql`,
/// when given, runs first inside each transaction so that two processes never migrate at
/// once.
pub async fn apply(
    pool: &AnyPool,
    dialect: crate::Dialect,
    migrations: &[Migration],
    lock_sql: Option<&'static str>,
) -> StoreResult<Vec<i64>> {
    pool.execute(CREATE_LEDGER).await.db()?;
    let mut applied_now = Vec::new();
    for migration in migrations {
        let mut transaction = pool.begin_with(dialect.begin_write()).await.db()?;
        if let Some(lock) = lock_sql {
            transaction.execute(lock).await.db()?;
        }
        let existing: Option<String> =
            sqlx::query_scalar("SELECT checksum FROM schema_migrations WHERE version = $1")
                .bind(migration.version)
                .fetch_optional(&mut *transaction)
                .await
                .db()?;
        match existing {
            Some(stored) if stored == checksum(migration.sql) => continue,
            Some(_) => {
                return Err(StoreError::internal(format!(
                    "migration {} ({}) was edited after it was applied; migrations are append-only",
                    migration.version, migration.name
                )));
            }
            None => {}
        }
        transaction.execute(migration.sql).await.db()?;
        sqlx::query(
            "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(migration.version)
        .bind(migration.name)
        .bind(checksum(migration.sql))
        .bind(rows::micros(chrono::Utc::now()))
        .execute(&mut *transaction)
        .await
        .db()?;
        transaction.commit().await.db()?;
        applied_now.push(migration.version);
    }
    Ok(applied_now)
}

/// Succeeds when every migration this build knows is applied (on a pool, or on the
/// readiness check's own connection).
pub async fn check<'c, E>(executor: E, migrations: &[Migration]) -> StoreResult<()>
where
    E: sqlx::Executor<'c, Database = sqlx::Any>,
{
    let latest: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM schema_migrations")
        .fetch_one(executor)
        .await
        .db()?;
    let expected = migrations.iter().map(|migration| migration.version).max();
    if latest < expected {
        return Err(StoreError::Unavailable(
            format!("database schema is at {latest:?}, this build needs {expected:?}").into(),
        ));
    }
    Ok(())
}
