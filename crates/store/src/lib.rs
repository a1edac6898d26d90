//! The storage boundary of Sleuth: one narrow trait whose methods name intent, the records
//! they carry, and the errors they return. No SQL lives here; `sleuth-store-sqlite` and
//! `sleuth-store-postgres` each implement the trait with their own SQL and migrations, and
//! one contract suite (in `sleuth-test-support`) holds them to the same behaviour.
#![forbid(unsafe_code)]

mod analyst;
mod audit;
mod connectors;
mod context_memory;
mod data_sources;
mod error;
mod identity;
mod model;
mod notifications;
mod push;
mod query;
mod response_actions;
mod revisions;
mod sign_in;
mod strategies;
mod system_events;
mod tenant_scope;

use async_trait::async_trait;
use sleuth_domain::{History, Timestamp};

pub use analyst::*;
pub use audit::*;
pub use connectors::*;
pub use context_memory::*;
pub use data_sources::*;
pub use error::{StoreError, StoreResult};
pub use identity::{alert_identity, canonical_hash};
pub use model::*;
pub use notifications::*;
pub use push::*;
pub use query::*;
pub use response_actions::*;
pub use revisions::*;
pub use sign_in::*;
pub use strategies::*;
pub use system_events::*;
pub use tenant_scope::TenantScope;

/// Every alert belongs to a tenant union; alerts that name none join this one. Each
/// backend's first migration creates it.
pub const DEFAULT_TENANT_UNION_ID: i64 = 1;

/// The longest a key revoked, or a user changed, by another process may still authenticate
/// in this one (see [`Store::authenticate`]).
pub const KEY_CACHE_TTL: std::time::Duration = std::time::Duration::from_secs(2);

/// Which database a store speaks to; shown on `/readyz` and in logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// One page of investigations and the total that matched.
#[derive(Debug, Clone)]
pub struct InvestigationPage {
    pub total: u64,
    pub items: Vec<InvestigationRecord>,
}

/// Everything Sleuth keeps. Implementations are cheap to clone behind an `Arc` and safe to
/// share between the HTTP handlers and the workers.
#[async_trait]
pub trait Store:
    ResponseActionStore
    + AnalystStore
    + ContextMemoryStore
    + SystemEventStore
    + AuditStore
    + StrategyStore
    + PushStore
    + DataSourceStore
    + ConnectorStore
    + SignInStore
    + NotificationStore
    + Send
    + Sync
    + 'static
{
    fn backend(&self) -> Backend;

    /// Notified whenever a job may have become ready, so idle workers need not poll fast.
    fn job_wakeups(&self) -> std::sync::Arc<tokio::sync::Notify>;

    /// Succeeds when the database answers and every migration this build knows is applied.
    async fn check_ready(&self) -> StoreResult<()>;

    // --- Users and API keys -------------------------------------------------------------

    async fn count_users(&self) -> StoreResult<u64>;
    /// Fails with `Conflict` when a user with this email exists.
    async fn create_user(&self, user: &NewUser) -> StoreResult<User>;
    /// Creates the first admin and its key only when there is no user at all, atomically,
    /// so two processes starting at once cannot both create one. `None` when users exist.
    async fn bootstrap_admin(&self, user: &NewUser, key: &NewApiKey) -> StoreResult<Option<User>>;
    async fn get_user(&self, user_id: i64) -> StoreResult<User>;
    async fn find_user_by_email(&self, email: &str) -> StoreResult<Option<User>>;
    async fn list_users(&self) -> StoreResult<Vec<User>>;
    /// `Rejected` when the change would leave no active admin (demoting or deactivating
    /// the last one), so that someone can always manage users and keys. Deactivating a
    /// user revokes their keys: reactivated, they need new ones.
    async fn update_user(&self, user_id: i64, changes: &UserChanges) -> StoreResult<User>;

    /// `Rejected` when the key's scope is wider than its user's, or names a union that
    /// does not exist.
    async fn create_api_key(&self, key: &NewApiKey) -> StoreResult<ApiKey>;
    async fn list_api_keys(&self) -> StoreResult<Vec<ApiKey>>;
    /// Revoking twice is harmless: the first revocation time stays.
    async fn revoke_api_key(&self, api_key_id: i64, at: Timestamp) -> StoreResult<ApiKey>;
    /// The active user behind an unrevoked key with this hash, if any. The answer may come
    /// from a cache: a change to keys or users made through this store shows at once, one
    /// made by another process (the `sleuth apikey` CLI beside a running server) within
    /// [`KEY_CACHE_TTL`].
    async fn authenticate(&self, hash: &KeyHash) -> StoreResult<Option<Principal>>;
    async fn record_key_use(&self, api_key_id: i64, at: Timestamp) -> StoreResult<()>;

    // --- Tenant unions --------------------------------------------------------------------

    async fn create_tenant_union(&self, input: &TenantUnionInput) -> StoreResult<TenantUnion>;
    async fn update_tenant_union(
        &self,
        tenant_union_id: i64,
        input: &TenantUnionInput,
    ) -> StoreResult<TenantUnion>;
    async fn get_tenant_union(&self, tenant_union_id: i64) -> StoreResult<TenantUnion>;
    async fn list_tenant_unions(&self) -> StoreResult<Vec<TenantUnion>>;

    // --- The operator's context ------------------------------------------------------------

    /// The context document kept through the API, if one was ever set.
    async fn get_context_document(&self) -> StoreResult<Option<StoredContext>>;
    /// Replaces the context document whole (the caller validated it).
    async fn put_context_document(
        &self,
        document: &str,
        updated_by: Option<i64>,
        at: Timestamp,
    ) -> StoreResult<StoredContext>;

    // --- Investigations -------------------------------------------------------------------

    /// Stores the alert, its investigation (`not_asked`) and its job in one transaction, or
    /// answers the existing investigation of the same alert. With `force`, a new
    /// investigation of the existing alert is made. Durable once it returns.
    ///
    /// The same alert with other content (the same identity, another `content_hash`) is a
    /// new revision, recorded with what changed (`alert_revisions`). It is investigated on
    /// its own content when forced, or when its severity is above that of the content last
    /// investigated; otherwise the answer is the existing investigation. Every delivery of
    /// a known alert counts as a sighting.
    async fn create_investigation(&self, alert: NewAlert, force: bool) -> StoreResult<Created> {
        self.create_investigation_audited(alert, force, None).await
    }
    /// `create_investigation`, and `audit` appended to the audit log in the same
    /// transaction, naming the investigation (new or existing) as its resource: the alert
    /// and the record of who submitted it are stored together or not at all.
    async fn create_investigation_audited(
        &self,
        alert: NewAlert,
        force: bool,
        audit: Option<NewAuditEntry>,
    ) -> StoreResult<Created>;
    async fn get_investigation(&self, investigation_id: i64) -> StoreResult<InvestigationRecord>;
    /// The investigation's tenant union; `NotFound` unless the investigation exists and its
    /// tenant union is in `scope`: what a request reads and writes about one investigation
    /// passes here first, so another tenant's investigation answers as missing.
    async fn check_investigation_scope(
        &self,
        investigation_id: i64,
        scope: &TenantScope,
    ) -> StoreResult<i64>;
    /// How often the alert of an investigation was delivered, and every distinct content it
    /// came with (`revisions`). `NotFound` when there is no such investigation.
    async fn alert_revisions(&self, investigation_id: i64) -> StoreResult<AlertRevisions>;
    async fn list_investigations(
        &self,
        query: &InvestigationQuery,
    ) -> StoreResult<InvestigationPage>;
    /// Stops a queued or running investigation with CANCEL_MANUAL. `Rejected` when it
    /// already finished.
    async fn cancel_investigation(&self, investigation_id: i64, at: Timestamp) -> StoreResult<()>;

    // --- The queue ------------------------------------------------------------------------

    /// Leases up to `max` ready jobs to `worker`: their investigations become `loading`.
    /// Jobs whose lease expired (their worker died) are ready again, and marked retried.
    async fn claim_jobs(
        &self,
        worker: &str,
        max: usize,
        lease: chrono::Duration,
        now: Timestamp,
    ) -> StoreResult<Vec<ClaimedJob>>;
    /// Everything a worker needs to run a claimed job, guards included.
    async fn load_job(&self, job: &ClaimedJob, windows: GuardWindows) -> StoreResult<JobInput>;
    /// The past that bears on an alert: related alerts, earlier verdicts, operator memory.
    async fn history(&self, query: &HistoryQuery) -> StoreResult<History>;
    /// Ends a job. `false` when the lease was lost (another worker took over, or the
    /// investigation was canceled meanwhile): the result is then dropped.
    async fn finish_job(
        &self,
        job: &ClaimedJob,
        finish: &Finish,
        at: Timestamp,
    ) -> StoreResult<bool> {
        let end = JobEnd {
            finish: finish.clone(),
            at,
            system_events: Vec::new(),
            next: None,
            alert: None,
        };
        Ok(self.finish_job_and_claim(job, end).await?.stored)
    }
    /// Ends a job as `end` says, in one transaction: the result (unless the lease was
    /// lost), its system events, and a claim of the next ready job (as `claim_jobs` would
    /// lease it) when asked. A busy worker thus takes one write turn per investigation,
    /// and the number running never grows meanwhile.
    async fn finish_job_and_claim(&self, job: &ClaimedJob, end: JobEnd) -> StoreResult<Finished>;
    /// Gives claimed jobs back to the queue untouched (graceful shutdown).
    async fn release_jobs(&self, jobs: &[ClaimedJob]) -> StoreResult<()>;
    /// How many jobs are waiting or running; for metrics and tests that drain the queue.
    async fn pending_jobs(&self) -> StoreResult<u64>;
    /// Retention: deletes up to `max_investigations` investigations that ended (success or
    /// error) and were last changed before `cutoff`, oldest first, with what belongs only
    /// to them (an alert goes with its last investigation), and the system events older
    /// than `cutoff`. The audit log is never touched. Waiting and running work never goes.
    async fn purge_before(
        &self,
        cutoff: Timestamp,
        max_investigations: u64,
    ) -> StoreResult<PurgeReport>;
}

/// What one retention pass deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PurgeReport {
    pub investigations: u64,
    pub alerts: u64,
    pub system_events: u64,
}
