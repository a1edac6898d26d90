//! The embedded default store: one SQLite file, in WAL mode with a busy timeout and foreign
//! keys on, created on first start. This crate owns the SQLite migrations and connection
//! set-up; the queries are shared with PostgreSQL in `sleuth-store-sql`.
#![forbid(unsafe_code)]

pub mod backup;

use std::time::Duration;

use sleuth_store::{StoreError, StoreResult};
use sleuth_store_sql::{Dialect, Migration, SqlStore, SqlStoreOptions};
use sqlx::Executor;
use sqlx::any::AnyPoolOptions;

/// Append-only: a released migration is never edited; add a new one.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "initial",
        sql: include_str!("../migrations/0001_initial.sql"),
    },
    Migration {
        version: 2,
        name: "response_actions",
        sql: include_str!("../migrations/0002_response_actions.sql"),
    },
    Migration {
        version: 3,
        name: "context",
        sql: include_str!("../migrations/0003_context.sql"),
    },
    Migration {
        version: 4,
        name: "notes",
        sql: include_str!("../migrations/0004_notes.sql"),
    },
    Migration {
        version: 5,
        name: "memory_events_audit",
        sql: include_str!("../migrations/0005_memory_events_audit.sql"),
    },
    Migration {
        version: 6,
        name: "strategies",
        sql: include_str!("../migrations/0006_strategies.sql"),
    },
    Migration {
        version: 7,
        name: "list_counts",
        sql: include_str!("../migrations/0007_list_counts.sql"),
    },
    Migration {
        version: 8,
        name: "tag_counts",
        sql: include_str!("../migrations/0008_tag_counts.sql"),
    },
    Migration {
        version: 9,
        name: "alert_title",
        sql: include_str!("../migrations/0009_alert_title.sql"),
    },
    Migration {
        version: 10,
        name: "investigation_results",
        sql: include_str!("../migrations/0010_investigation_results.sql"),
    },
    Migration {
        version: 11,
        name: "tag_times",
        sql: include_str!("../migrations/0011_tag_times.sql"),
    },
    Migration {
        version: 12,
        name: "day_counts",
        sql: include_str!("../migrations/0012_day_counts.sql"),
    },
    Migration {
        version: 13,
        name: "jobs_by_token",
        sql: include_str!("../migrations/0013_jobs_by_token.sql"),
    },
    Migration {
        version: 14,
        name: "alert_day_orders",
        sql: include_str!("../migrations/0014_alert_day_orders.sql"),
    },
    Migration {
        version: 15,
        name: "day_orders_hold_the_time",
        sql: include_str!("../migrations/0015_day_orders_hold_the_time.sql"),
    },
    Migration {
        version: 16,
        name: "hour_counts",
        sql: include_str!("../migrations/0016_hour_counts.sql"),
    },
    Migration {
        version: 17,
        name: "entity_index",
        sql: include_str!("../migrations/0017_entity_index.sql"),
    },
    Migration {
        version: 18,
        name: "alert_revisions",
        sql: include_str!("../migrations/0018_alert_revisions.sql"),
    },
    Migration {
        version: 19,
        name: "push_sources",
        sql: include_str!("../migrations/0019_push_sources.sql"),
    },
    Migration {
        version: 20,
        name: "sealed_secrets",
        sql: include_str!("../migrations/0020_sealed_secrets.sql"),
    },
    Migration {
        version: 21,
        name: "data_sources",
        sql: include_str!("../migrations/0021_data_sources.sql"),
    },
    Migration {
        version: 22,
        name: "facet_counts",
        sql: include_str!("../migrations/0022_facet_counts.sql"),
    },
    Migration {
        version: 23,
        name: "source_positions",
        sql: include_str!("../migrations/0023_source_positions.sql"),
    },
    Migration {
        version: 24,
        name: "tenant_scopes",
        sql: include_str!("../migrations/0024_tenant_scopes.sql"),
    },
    Migration {
        version: 25,
        name: "connectors",
        sql: include_str!("../migrations/0025_connectors.sql"),
    },
    Migration {
        version: 26,
        name: "retention",
        sql: include_str!("../migrations/0026_retention.sql"),
    },
    Migration {
        version: 27,
        name: "tag_facet_counts",
        sql: include_str!("../migrations/0027_tag_facet_counts.sql"),
    },
    Migration {
        version: 28,
        name: "audit_entry_unions",
        sql: include_str!("../migrations/0028_audit_entry_unions.sql"),
    },
    Migration {
        version: 29,
        name: "connector_writebacks",
        sql: include_str!("../migrations/0029_connector_writebacks.sql"),
    },
    Migration {
        version: 30,
        name: "console_sign_in",
        sql: include_str!("../migrations/0030_console_sign_in.sql"),
    },
    Migration {
        version: 31,
        name: "notifications",
        sql: include_str!("../migrations/0031_notifications.sql"),
    },
    Migration {
        version: 32,
        name: "entity_index_by_union",
        sql: include_str!("../migrations/0032_entity_index_by_union.sql"),
    },
    Migration {
        version: 33,
        name: "union_and_type_source_facets",
        sql: include_str!("../migrations/0033_union_and_type_source_facets.sql"),
    },
    Migration {
        version: 34,
        name: "notification_retention",
        sql: include_str!("../migrations/0034_notification_retention.sql"),
    },
    Migration {
        version: 35,
        name: "count_deltas",
        sql: include_str!("../migrations/0035_count_deltas.sql"),
    },
    Migration {
        version: 36,
        name: "count_keys_state_last",
        sql: include_str!("../migrations/0036_count_keys_state_last.sql"),
    },
    Migration {
        version: 37,
        name: "same_detection_index",
        sql: include_str!("../migrations/0037_same_detection_index.sql"),
    },
    Migration {
        version: 38,
        name: "search_marks",
        sql: include_str!("../migrations/0038_search_marks.sql"),
    },
];

/// How often the background checkpointer copies the WAL back into the database file.
/// Under a full create load the WAL grows by about 20,000 pages a second; checkpointing
/// once a second let it cross the writers' own threshold (below) between two rounds, and
/// then every commit checkpointed inline and synced the file. A round with nothing to copy
/// costs microseconds.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);
/// WAL pages (4 KiB) after which a committing writer checkpoints by itself: only when the
/// background checkpointer has fallen far behind (or stopped), since that writer holds the
/// write lock meanwhile.
const WAL_AUTOCHECKPOINT_PAGES: u32 = 25_000;

/// Checkpoints the WAL in the background. SQLite's own checkpoint runs in whichever commit
/// crosses the threshold, and with `synchronous = NORMAL` it syncs the file twice, all
/// while that writer holds the write lock every other writer waits for. A PASSIVE
/// checkpoint takes no write lock: writers carry on meanwhile. Ends with the pool.
fn spawn_checkpointer(pool: sqlx::AnyPool) {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(CHECKPOINT_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if pool.is_closed() {
                return;
            }
            if let Err(error) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                .execute(&pool)
                .await
            {
                tracing::warn!(%error, "background WAL checkpoint failed; writers will checkpoint instead");
            }
        }
    });
}

/// How to open the database.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    pub max_connections: u32,
    /// How long a writer waits for the lock before failing.
    pub busy_timeout: Duration,
    pub create_batch_max: usize,
}

impl Default for SqliteOptions {
    fn default() -> SqliteOptions {
        SqliteOptions {
            max_connections: 8,
            busy_timeout: Duration::from_secs(10),
            create_batch_max: 512,
        }
    }
}

/// True for URLs this backend opens (`sqlite:` or `sqlite://`).
pub fn handles(url: &str) -> bool {
    url.starts_with("sqlite:")
}

/// Opens (creating if needed) and migrates the database at `url`, then starts the store.
pub async fn open(url: &str, options: &SqliteOptions) -> StoreResult<SqlStore> {
    sqlx::any::install_default_drivers();
    let url = with_create_mode(url)?;
    let busy_timeout_ms = options.busy_timeout.as_millis();
    let pool = AnyPoolOptions::new()
        .max_connections(options.max_connections.max(2))
        .acquire_timeout(Duration::from_secs(30))
        // A connection to a local file cannot go stale; testing each one before use would
        // cost a round trip to its thread on every acquire.
        .test_before_acquire(false)
        .after_connect(move |connection, _| {
            Box::pin(async move {
                // WAL lets readers proceed while one writer commits; NORMAL syncs the WAL at
                // checkpoints rather than every commit: a process crash loses nothing that
                // was committed, which is the promise made when an alert is answered 200.
                connection
                    .execute(sqlx::AssertSqlSafe(format!(
                        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                         PRAGMA foreign_keys = ON; PRAGMA busy_timeout = {busy_timeout_ms}; \
                         PRAGMA temp_store = MEMORY; PRAGMA cache_size = -32000; \
                         PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES};"
                    )))
                    .await?;
                Ok(())
            })
        })
        .connect(&url)
        .await
        .map_err(|error| StoreError::Unavailable(Box::new(error)))?;
    sleuth_store_sql::migrate::apply(&pool, Dialect::Sqlite, MIGRATIONS, None).await?;
    spawn_checkpointer(pool.clone());
    Ok(SqlStore::start(
        pool,
        Dialect::Sqlite,
        SqlStoreOptions {
            create_batch_max: options.create_batch_max,
            migrations: MIGRATIONS,
        },
    ))
}

/// Adds `mode=rwc` so that the file is created on first start.
fn with_create_mode(url: &str) -> StoreResult<String> {
    let path_part = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .ok_or_else(|| StoreError::Rejected {
            detail: format!("'{url}' is not a sqlite: URL"),
        })?;
    if path_part.is_empty() {
        return Err(StoreError::Rejected {
            detail: "the sqlite URL names no file; use sqlite://sleuth.db".into(),
        });
    }
    if path_part.contains("mode=") {
        return Ok(url.to_string());
    }
    let separator = if path_part.contains('?') { '&' } else { '?' };
    Ok(format!("sqlite://{path_part}{separator}mode=rwc"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_gain_the_create_mode() {
        assert_eq!(
            with_create_mode("sqlite://sleuth.db").unwrap(),
            "sqlite://sleuth.db?mode=rwc"
        );
        assert_eq!(
            with_create_mode("sqlite:data/s.db").unwrap(),
            "sqlite://data/s.db?mode=rwc"
        );
        assert_eq!(
            with_create_mode("sqlite:///var/lib/sleuth.db").unwrap(),
            "sqlite:///var/lib/sleuth.db?mode=rwc"
        );
        assert!(with_create_mode("sqlite://").is_err());
        assert!(with_create_mode("postgres://x").is_err());
    }

    /// Under a flood every pooled connection is held by requests; readiness must still
    /// answer, and answer that the database is there.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn readiness_answers_while_every_pooled_connection_is_taken() {
        use sleuth_store::Store;
        let directory = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", directory.path().join("ready.db").display());
        let options = SqliteOptions {
            max_connections: 2,
            ..SqliteOptions::default()
        };
        let store = open(&url, &options).await.unwrap();
        let mut held = Vec::new();
        while let Ok(Ok(connection)) =
            tokio::time::timeout(Duration::from_millis(300), store.pool().acquire()).await
        {
            held.push(connection);
        }
        let answer = tokio::time::timeout(Duration::from_secs(3), store.check_ready()).await;
        assert!(
            matches!(answer, Ok(Ok(()))),
            "readiness with {} connections held: {answer:?}",
            held.len()
        );
    }
}
