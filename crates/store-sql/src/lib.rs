//! The one implementation of [`Store`] that both SQL backends share. It speaks to the
//! database through sqlx's `Any` driver with portable SQL (`$n` placeholders, integers,
//! text and nulls only: times are microseconds since the Unix epoch, UTC, and JSON is
//! text). What truly differs between SQLite and PostgreSQL — connection set-up,
//! migrations, full-text search, claiming jobs, waking workers — is chosen by [`Dialect`]
//! here or lives in the backend crates (`sleuth-store-sqlite`, `sleuth-store-postgres`).
#![forbid(unsafe_code)]

mod analyst;
mod audit;
pub mod backup;
mod builder;
mod connectors;
mod context;
mod context_memory;
mod count_folding;
mod create;
mod create_batch;
mod create_request;
mod dashboard;
mod data_sources;
mod entity_index;
mod finish_batch;
mod group_commit;
mod history;
mod investigations;
mod kept_counts;
mod key_cache;
mod list;
mod list_days;
mod list_plan;
mod list_search;
mod list_sql;
pub mod migrate;
mod notifications;
mod push;
mod queue;
mod readiness;
mod response_actions;
mod retention;
mod revisions;
pub mod rows;
mod scope;
mod search;
pub mod search_marks;
mod sign_in;
mod source_counters;
mod strategies;
mod system_events;
mod tenants;
mod users;
mod writer_connection;

use std::sync::Arc;

use async_trait::async_trait;
use sleuth_domain::{History, Timestamp};
use sleuth_store::*;
use sqlx::AnyPool;
use tokio::sync::Notify;

use crate::group_commit::GroupCommit;
use crate::writer_connection::WriterConnections;

pub use connectors::sqlite_due_writebacks_plan;
pub use count_folding::{MIN_DELTAS as FOLD_MIN_DELTAS, fold_counts_now, fold_due_counts};
pub use history::sqlite_earlier_investigations_plan;
pub use migrate::Migration;
pub use queue::sqlite_claim_pick_plan;
pub use system_events::sqlite_system_events_after_plan;

/// The SQL that differs between the two databases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// How a transaction that will write begins. SQLite's default (deferred) transaction
    /// takes its write lock only at the first write, and a reader that then tries to write
    /// after another writer committed fails at once (SQLITE_BUSY_SNAPSHOT) instead of
    /// waiting; IMMEDIATE takes the lock up front, so the busy timeout applies.
    pub fn begin_write(self) -> &'static str {
        match self {
            Dialect::Sqlite => "BEGIN IMMEDIATE",
            Dialect::Postgres => "BEGIN",
        }
    }
}

/// SQLite lets one writer in at a time, and a writer that finds the file locked waits in
/// SQLite's busy handler, which sleeps (1, 2, 5, 10, … ms) instead of waking when the lock
/// frees. Under load (the create writer, the audit writer and the workers all writing) those
/// sleeps, not the work, set the pace. So this process's SQLite writers first take turns on
/// an async lock and meet SQLite's lock free; other processes still meet the busy handler.
/// One lock for the process (not per database file): simpler, and several SQLite stores in
/// one process only happen in tests.
static SQLITE_WRITE_TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A write transaction, after this process's turn to write (SQLite). Keep the returned turn
/// alive until the transaction ends; never begin a second write while holding one.
pub(crate) async fn begin_write(
    connection: &mut sqlx::AnyConnection,
    dialect: Dialect,
) -> StoreResult<(
    Option<tokio::sync::MutexGuard<'static, ()>>,
    sqlx::Transaction<'_, sqlx::Any>,
)> {
    use sqlx::Connection;
    let turn = match dialect {
        Dialect::Sqlite => Some(SQLITE_WRITE_TURN.lock().await),
        Dialect::Postgres => None,
    };
    let transaction = connection.begin_with(dialect.begin_write()).await.db()?;
    Ok((turn, transaction))
}

/// Tuning of the shared store.
#[derive(Debug, Clone)]
pub struct SqlStoreOptions {
    /// How many creates one transaction may carry (group commit).
    pub create_batch_max: usize,
    pub migrations: &'static [Migration],
}

/// A store over one connection pool. Cheap to clone.
#[derive(Clone)]
pub struct SqlStore {
    pool: AnyPool,
    dialect: Dialect,
    migrations: &'static [Migration],
    /// What the group-commit writers and the workers' claims write on.
    writers: WriterConnections,
    creates: GroupCommit<create::CreateWriter>,
    finishes: GroupCommit<queue::FinishWriter>,
    /// Woken whenever a job may be ready: after a create commits here, or (PostgreSQL)
    /// when another process announces one.
    job_wakeups: Arc<Notify>,
    /// The one task of this process that appends to the audit log (see `audit`).
    audit: GroupCommit<audit::AuditWriter>,
    /// The one task of this process that records system events.
    system_events: GroupCommit<system_events::SystemEventWriter>,
    /// Recently authenticated keys (see `key_cache` for how stale an answer may be).
    keys: Arc<key_cache::KeyCache>,
    /// The readiness check's own connection, outside the pool (see `readiness`).
    readiness: Arc<readiness::ReadinessConnection>,
    /// The background tasks, stopped when the last clone of the store is dropped: the one
    /// folding the list's count deltas (`count_folding` on PostgreSQL, `kept_counts` on
    /// SQLite) and, on SQLite, the one marking earlier successes (`search_marks`).
    _background: Arc<Vec<AbortOnDrop>>,
}

/// Aborts a background task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl std::fmt::Debug for SqlStore {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SqlStore")
            .field("dialect", &self.dialect)
            .finish_non_exhaustive()
    }
}

impl SqlStore {
    /// Wraps a migrated pool and starts the group-commit writer. Must run inside a tokio
    /// runtime.
    pub fn start(pool: AnyPool, dialect: Dialect, options: SqlStoreOptions) -> SqlStore {
        let job_wakeups = Arc::new(Notify::new());
        let writers = WriterConnections::new(pool.clone(), dialect);
        let creates = GroupCommit::spawn(
            create::CreateWriter {
                connections: writers.clone(),
                dialect,
                job_wakeups: job_wakeups.clone(),
            },
            options.create_batch_max,
        );
        let finishes = GroupCommit::spawn(
            queue::FinishWriter {
                connections: writers.clone(),
                dialect,
            },
            group_commit::BATCH_MAX,
        );
        let audit = GroupCommit::spawn(
            audit::AuditWriter {
                connections: writers.clone(),
                dialect,
            },
            group_commit::BATCH_MAX,
        );
        let system_events = GroupCommit::spawn(
            system_events::SystemEventWriter {
                connections: writers.clone(),
                dialect,
            },
            group_commit::BATCH_MAX,
        );
        let background = match dialect {
            Dialect::Postgres => vec![count_folding::spawn_count_folding(pool.clone())],
            Dialect::Sqlite => vec![
                kept_counts::spawn_sqlite_folding(pool.clone(), writers.clone()),
                search_marks::spawn_marking(pool.clone()),
            ],
        };
        SqlStore {
            readiness: Arc::new(readiness::ReadinessConnection::new(pool.clone())),
            pool,
            dialect,
            migrations: options.migrations,
            writers,
            creates,
            finishes,
            job_wakeups,
            audit,
            system_events,
            keys: Arc::default(),
            _background: Arc::new(background.into_iter().map(AbortOnDrop).collect()),
        }
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Notified when a job may be ready. Backends that learn of jobs from elsewhere
    /// (PostgreSQL's LISTEN) call `notify_waiters` on it too.
    pub fn job_wakeups(&self) -> Arc<Notify> {
        self.job_wakeups.clone()
    }
}

/// Turns sqlx errors into store errors, so that `?` stays short at every call site.
pub(crate) trait DbResultExt<T> {
    fn db(self) -> StoreResult<T>;
}

impl<T> DbResultExt<T> for Result<T, sqlx::Error> {
    fn db(self) -> StoreResult<T> {
        self.map_err(store_error)
    }
}

/// The error of a write of a named record that belongs to a tenant union (a connector, a
/// data source): an unknown union is a rejection, a taken name a conflict naming it.
pub(crate) fn named_record_error(error: sqlx::Error, what: &str, name: &str) -> StoreError {
    if let sqlx::Error::Database(database_error) = &error
        && database_error.is_foreign_key_violation()
    {
        return StoreError::Rejected {
            detail: "the tenant union does not exist".into(),
        };
    }
    match store_error(error) {
        StoreError::Conflict { .. } => StoreError::Conflict {
            detail: format!("a {what} named '{name}' exists"),
        },
        other => other,
    }
}

pub(crate) fn store_error(error: sqlx::Error) -> StoreError {
    match &error {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed => StoreError::Unavailable(Box::new(error)),
        sqlx::Error::Database(database_error) if database_error.is_unique_violation() => {
            StoreError::Conflict {
                detail: "a record with the same unique value exists".into(),
            }
        }
        // PostgreSQL's "character not in repertoire": a NUL in text. The API refuses NUL in
        // what it stores as text before it gets here; should one slip through, the caller
        // hears what to change, not that Sleuth failed.
        sqlx::Error::Database(database_error)
            if database_error.code().as_deref() == Some("22021") =>
        {
            StoreError::Rejected {
                detail: "a text value holds a NUL character (\\u0000), which is not stored; \
                         remove it"
                    .into(),
            }
        }
        _ => StoreError::Internal(Box::new(error)),
    }
}

#[async_trait]
impl Store for SqlStore {
    fn backend(&self) -> Backend {
        match self.dialect {
            Dialect::Sqlite => Backend::Sqlite,
            Dialect::Postgres => Backend::Postgres,
        }
    }

    fn job_wakeups(&self) -> Arc<Notify> {
        self.job_wakeups.clone()
    }

    async fn check_ready(&self) -> StoreResult<()> {
        self.readiness.check(self.migrations).await
    }

    async fn count_users(&self) -> StoreResult<u64> {
        users::count_users(&self.pool).await
    }

    async fn create_user(&self, user: &NewUser) -> StoreResult<User> {
        users::create_user(&self.pool, user).await
    }

    async fn bootstrap_admin(&self, user: &NewUser, key: &NewApiKey) -> StoreResult<Option<User>> {
        users::bootstrap_admin(&self.pool, self.dialect, user, key).await
    }

    async fn get_user(&self, user_id: i64) -> StoreResult<User> {
        users::get_user(&self.pool, user_id).await
    }

    async fn find_user_by_email(&self, email: &str) -> StoreResult<Option<User>> {
        users::find_user_by_email(&self.pool, email).await
    }

    async fn list_users(&self) -> StoreResult<Vec<User>> {
        users::list_users(&self.pool).await
    }

    async fn update_user(&self, user_id: i64, changes: &UserChanges) -> StoreResult<User> {
        let updated = users::update_user(&self.pool, self.dialect, user_id, changes).await;
        // A role or active flag changed: keys of that user answer anew from now on.
        self.keys.invalidate();
        updated
    }

    async fn create_api_key(&self, key: &NewApiKey) -> StoreResult<ApiKey> {
        users::create_api_key(&self.pool, key).await
    }

    async fn list_api_keys(&self) -> StoreResult<Vec<ApiKey>> {
        users::list_api_keys(&self.pool).await
    }

    async fn revoke_api_key(&self, api_key_id: i64, at: Timestamp) -> StoreResult<ApiKey> {
        let revoked = users::revoke_api_key(&self.pool, api_key_id, at).await;
        self.keys.invalidate();
        revoked
    }

    async fn authenticate(&self, hash: &KeyHash) -> StoreResult<Option<Principal>> {
        let began = match self.keys.get(hash, std::time::Instant::now()) {
            Ok(cached) => return Ok(Some(cached)),
            Err(began) => began,
        };
        let found = users::authenticate(&self.pool, hash).await?;
        if let Some(principal) = &found {
            self.keys
                .keep(hash, principal, began, std::time::Instant::now());
        }
        Ok(found)
    }

    async fn record_key_use(&self, api_key_id: i64, at: Timestamp) -> StoreResult<()> {
        // Noted first, so that the requests arriving while this writes do not write too.
        self.keys.note_use(api_key_id, at);
        users::record_key_use(&self.pool, api_key_id, at).await
    }

    async fn create_tenant_union(&self, input: &TenantUnionInput) -> StoreResult<TenantUnion> {
        tenants::create_tenant_union(&self.pool, input).await
    }

    async fn update_tenant_union(
        &self,
        tenant_union_id: i64,
        input: &TenantUnionInput,
    ) -> StoreResult<TenantUnion> {
        tenants::update_tenant_union(&self.pool, tenant_union_id, input).await
    }

    async fn get_tenant_union(&self, tenant_union_id: i64) -> StoreResult<TenantUnion> {
        tenants::get_tenant_union(&self.pool, tenant_union_id).await
    }

    async fn list_tenant_unions(&self) -> StoreResult<Vec<TenantUnion>> {
        tenants::list_tenant_unions(&self.pool).await
    }

    async fn get_context_document(&self) -> StoreResult<Option<StoredContext>> {
        context::get_context_document(&self.pool).await
    }

    async fn put_context_document(
        &self,
        document: &str,
        updated_by: Option<i64>,
        at: Timestamp,
    ) -> StoreResult<StoredContext> {
        context::put_context_document(&self.pool, document, updated_by, at).await
    }

    async fn create_investigation_audited(
        &self,
        alert: NewAlert,
        force: bool,
        audit: Option<NewAuditEntry>,
    ) -> StoreResult<Created> {
        self.creates
            .submit(create_request::CreateRequest::new(alert, force, audit)?)
            .await
    }

    async fn get_investigation(&self, investigation_id: i64) -> StoreResult<InvestigationRecord> {
        investigations::get_investigation(&self.pool, investigation_id).await
    }

    async fn check_investigation_scope(
        &self,
        investigation_id: i64,
        scope: &sleuth_store::TenantScope,
    ) -> StoreResult<i64> {
        let mut connection = self.pool.acquire().await.db()?;
        scope::check_investigation(&mut connection, investigation_id, scope).await
    }

    async fn alert_revisions(
        &self,
        investigation_id: i64,
    ) -> StoreResult<sleuth_store::AlertRevisions> {
        revisions::of_investigation(&self.pool, investigation_id).await
    }

    async fn list_investigations(
        &self,
        query: &InvestigationQuery,
    ) -> StoreResult<InvestigationPage> {
        list::list_investigations(&self.pool, self.dialect, query).await
    }

    async fn cancel_investigation(&self, investigation_id: i64, at: Timestamp) -> StoreResult<()> {
        queue::cancel_investigation(&self.pool, self.dialect, investigation_id, at).await
    }

    async fn claim_jobs(
        &self,
        worker: &str,
        max: usize,
        lease: chrono::Duration,
        now: Timestamp,
    ) -> StoreResult<Vec<ClaimedJob>> {
        queue::claim_jobs(&self.writers, self.dialect, worker, max, lease, now).await
    }

    async fn load_job(&self, job: &ClaimedJob, windows: GuardWindows) -> StoreResult<JobInput> {
        queue::load_job(&self.pool, job, windows).await
    }

    async fn history(&self, query: &HistoryQuery) -> StoreResult<History> {
        history::history(&self.pool, self.dialect, query).await
    }

    async fn finish_job_and_claim(&self, job: &ClaimedJob, end: JobEnd) -> StoreResult<Finished> {
        self.finishes
            .submit(finish_batch::FinishRequest {
                job: job.clone(),
                end,
            })
            .await
    }

    async fn release_jobs(&self, jobs: &[ClaimedJob]) -> StoreResult<()> {
        queue::release_jobs(&self.pool, self.dialect, jobs).await?;
        self.job_wakeups.notify_waiters();
        Ok(())
    }

    async fn pending_jobs(&self) -> StoreResult<u64> {
        queue::pending_jobs(&self.pool).await
    }

    async fn purge_before(
        &self,
        cutoff: Timestamp,
        max_investigations: u64,
    ) -> StoreResult<PurgeReport> {
        retention::purge_before(&self.pool, self.dialect, cutoff, max_investigations).await
    }
}
