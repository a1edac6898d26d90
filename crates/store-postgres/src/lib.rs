//! The scale-out store: PostgreSQL. Several `sleuth serve` and `sleuth worker` processes on
//! different machines share one database: jobs are claimed with `FOR UPDATE SKIP LOCKED`
//! and idle workers are woken by `LISTEN/NOTIFY`. This crate owns the PostgreSQL
//! migrations and connection set-up; the queries are shared in `sleuth-store-sql`.
#![forbid(unsafe_code)]

use std::sync::Arc;
use std::time::Duration;

use sleuth_store::{StoreError, StoreResult};
use sleuth_store_sql::{Dialect, Migration, SqlStore, SqlStoreOptions};
use sqlx::any::AnyPoolOptions;
use sqlx::postgres::PgListener;
use tokio::sync::Notify;

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
        name: "alert_revisions",
        sql: include_str!("../migrations/0017_alert_revisions.sql"),
    },
    Migration {
        version: 18,
        name: "push_sources",
        sql: include_str!("../migrations/0018_push_sources.sql"),
    },
    Migration {
        version: 19,
        name: "sealed_secrets",
        sql: include_str!("../migrations/0019_sealed_secrets.sql"),
    },
    Migration {
        version: 20,
        name: "data_sources",
        sql: include_str!("../migrations/0020_data_sources.sql"),
    },
    Migration {
        version: 21,
        name: "facet_counts",
        sql: include_str!("../migrations/0021_facet_counts.sql"),
    },
    Migration {
        version: 22,
        name: "tenant_scopes",
        sql: include_str!("../migrations/0022_tenant_scopes.sql"),
    },
    Migration {
        version: 23,
        name: "connectors",
        sql: include_str!("../migrations/0023_connectors.sql"),
    },
    Migration {
        version: 24,
        name: "retention",
        sql: include_str!("../migrations/0024_retention.sql"),
    },
    Migration {
        version: 25,
        name: "source_positions",
        sql: include_str!("../migrations/0025_source_positions.sql"),
    },
    Migration {
        version: 26,
        name: "tag_facet_counts",
        sql: include_str!("../migrations/0026_tag_facet_counts.sql"),
    },
    Migration {
        version: 27,
        name: "audit_entry_unions",
        sql: include_str!("../migrations/0027_audit_entry_unions.sql"),
    },
    Migration {
        version: 28,
        name: "connector_writebacks",
        sql: include_str!("../migrations/0028_connector_writebacks.sql"),
    },
    Migration {
        version: 29,
        name: "tag_triggers_after_a_conclusion",
        sql: include_str!("../migrations/0029_tag_triggers_after_a_conclusion.sql"),
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
        name: "coalesce_walk_by_id",
        sql: include_str!("../migrations/0035_coalesce_walk_by_id.sql"),
    },
    Migration {
        version: 36,
        name: "count_folds",
        sql: include_str!("../migrations/0036_count_folds.sql"),
    },
    Migration {
        version: 37,
        name: "fold_deltas_only",
        sql: include_str!("../migrations/0037_fold_deltas_only.sql"),
    },
    Migration {
        version: 38,
        name: "same_detection_index",
        sql: include_str!("../migrations/0038_same_detection_index.sql"),
    },
    Migration {
        version: 39,
        name: "count_updates_by_statement",
        sql: include_str!("../migrations/0039_count_updates_by_statement.sql"),
    },
    Migration {
        version: 40,
        name: "lz4_for_documents",
        sql: include_str!("../migrations/0040_lz4_for_documents.sql"),
    },
];

/// The channel on which creates announce new jobs to every process.
pub const JOBS_CHANNEL: &str = "sleuth_jobs";

#[derive(Debug, Clone)]
pub struct PostgresOptions {
    pub max_connections: u32,
    pub create_batch_max: usize,
}

impl Default for PostgresOptions {
    fn default() -> PostgresOptions {
        PostgresOptions {
            max_connections: 16,
            create_batch_max: 512,
        }
    }
}

/// True for URLs this backend opens.
pub fn handles(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Connects, migrates (one process at a time, under an advisory lock), starts the store
/// and the listener that wakes this process's workers when any process enqueues a job.
pub async fn open(url: &str, options: &PostgresOptions) -> StoreResult<SqlStore> {
    sqlx::any::install_default_drivers();
    let pool = AnyPoolOptions::new()
        .max_connections(options.max_connections.max(2))
        .acquire_timeout(Duration::from_secs(10))
        .connect(url)
        .await
        .map_err(|error| StoreError::Unavailable(Box::new(error)))?;
    sleuth_store_sql::migrate::apply(
        &pool,
        Dialect::Postgres,
        MIGRATIONS,
        Some("SELECT pg_advisory_xact_lock(7469002)"),
    )
    .await?;
    let store = SqlStore::start(
        pool,
        Dialect::Postgres,
        SqlStoreOptions {
            create_batch_max: options.create_batch_max,
            migrations: MIGRATIONS,
        },
    );
    tokio::spawn(listen_for_jobs(url.to_string(), store.job_wakeups()));
    Ok(store)
}

/// Forwards NOTIFYs on the jobs channel to local workers, reconnecting after failures.
/// Workers also poll, so a missed notification only delays a job, never loses it.
async fn listen_for_jobs(url: String, wakeups: Arc<Notify>) {
    let mut backoff = Duration::from_millis(250);
    loop {
        match PgListener::connect(&url).await {
            Ok(mut listener) => match listener.listen(JOBS_CHANNEL).await {
                Ok(()) => {
                    backoff = Duration::from_millis(250);
                    while listener.recv().await.is_ok() {
                        wakeups.notify_waiters();
                    }
                    tracing::warn!("job notification listener lost its connection; reconnecting");
                }
                Err(error) => tracing::warn!(%error, "cannot LISTEN for jobs; retrying"),
            },
            Err(error) => tracing::warn!(%error, "cannot connect the job listener; retrying"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(10));
    }
}

/// What the database at `url` holds (see `sleuth_store_sql::backup`), without migrating it.
pub async fn describe(url: &str) -> StoreResult<sleuth_store_sql::backup::Contents> {
    let pool = connect_once(url).await?;
    let contents = sleuth_store_sql::backup::describe(&pool, MIGRATIONS).await;
    pool.close().await;
    contents
}

/// True when the database at `url` has no table in its schemas: a restore goes only into
/// such a database, never over one that may be in use.
pub async fn is_empty(url: &str) -> StoreResult<bool> {
    let pool = connect_once(url).await?;
    let tables: Result<i64, sqlx::Error> = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.tables \
         WHERE table_schema NOT IN ('pg_catalog', 'information_schema')",
    )
    .fetch_one(&pool)
    .await;
    pool.close().await;
    tables
        .map(|count| count == 0)
        .map_err(|error| StoreError::Unavailable(Box::new(error)))
}

async fn connect_once(url: &str) -> StoreResult<sqlx::AnyPool> {
    sqlx::any::install_default_drivers();
    AnyPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(10))
        .connect(url)
        .await
        .map_err(|error| StoreError::Unavailable(Box::new(error)))
}
