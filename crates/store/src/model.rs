//! The records the store reads and writes. They are storage-shaped, not wire-shaped: the
//! server turns them into SPEC's DTOs.

use serde_json::{Map, Value};

use crate::TenantScope;
use sleuth_domain::{
    Canceled, EmailAddress, Entity, FeedbackStatus, InvestigationResult, InvestigationStatus,
    Outcome, ParsedAlert, Priority, Role, Timestamp,
};

#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub id: i64,
    pub email: String,
    pub first_name: String,
    pub last_name: String,
    pub role: Role,
    pub oidc_user_id: Option<String>,
    /// A deactivated user keeps its history; its keys were revoked when it was deactivated.
    pub is_active: bool,
    /// The tenant unions the user may reach; `All` for users never bound.
    pub tenant_scope: TenantScope,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone)]
pub struct NewUser {
    pub email: EmailAddress,
    pub first_name: String,
    pub last_name: String,
    pub role: Role,
    pub oidc_user_id: Option<String>,
    pub tenant_scope: TenantScope,
}

/// Changes to a user; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct UserChanges {
    pub role: Option<Role>,
    pub first_name: Option<String>,
    pub last_name: Option<String>,
    pub is_active: Option<bool>,
    pub tenant_scope: Option<TenantScope>,
}

/// The SHA-256 of an API key or of a console session's token. Both are 256-bit random
/// values, so a fast hash is enough:
/// nobody can brute-force the preimage, and lookups stay one indexed query.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct KeyHash(pub [u8; 32]);

impl KeyHash {
    pub fn of(key: &str) -> KeyHash {
        use sha2::Digest;
        KeyHash(sha2::Sha256::digest(key.as_bytes()).into())
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The hash `to_hex` wrote, if `text` is one.
    pub fn from_hex(text: &str) -> Option<KeyHash> {
        let mut hash = [0_u8; 32];
        hex::decode_to_slice(text, &mut hash).ok()?;
        Some(KeyHash(hash))
    }
}

impl std::fmt::Debug for KeyHash {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("KeyHash(..)")
    }
}

#[derive(Debug, Clone)]
pub struct NewApiKey {
    pub user_id: i64,
    pub name: String,
    pub hash: KeyHash,
    /// The first characters of the key, kept so an operator can tell keys apart.
    pub prefix: String,
    /// At most the user's scope.
    pub tenant_scope: TenantScope,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApiKey {
    pub id: i64,
    pub user_id: i64,
    pub user_email: String,
    pub name: String,
    pub prefix: String,
    pub created_at: Timestamp,
    pub last_used_at: Option<Timestamp>,
    /// Set once; a revoked key never authenticates again.
    pub revoked_at: Option<Timestamp>,
    /// The key's own binding; what it reaches is also bounded by its user's.
    pub tenant_scope: TenantScope,
}

/// Who is calling: the user behind a valid key.
#[derive(Debug, Clone)]
pub struct Principal {
    pub user: User,
    pub api_key_id: i64,
    pub key_last_used_at: Option<Timestamp>,
    /// The key's own binding (see `scope`).
    pub key_scope: TenantScope,
}

impl Principal {
    /// The tenant unions this request may reach: what both the user and the key allow, so
    /// narrowing a user narrows every key they hold at once.
    pub fn scope(&self) -> TenantScope {
        self.user.tenant_scope.narrowed(&self.key_scope)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TenantUnion {
    pub id: i64,
    pub display_name: String,
    /// Which tenants belong to the union: `{"tenant_ids": [...], "tenant_integration_keys": [...]}`
    /// plus anything the operator keeps there. Alerts naming a listed tenant join the union.
    pub lookup_dict: Map<String, Value>,
    pub last_modified_by: Option<User>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// The operator's context document as kept through the API (TOML text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredContext {
    pub document: String,
    pub updated_by: Option<i64>,
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone)]
pub struct TenantUnionInput {
    pub display_name: String,
    pub lookup_dict: Map<String, Value>,
    pub modified_by: Option<i64>,
}

/// An alert ready to be stored with its first investigation.
#[derive(Debug, Clone)]
pub struct NewAlert {
    pub parsed: ParsedAlert,
    /// The exact JSON text received (SPEC: raw_alert_content is a string).
    pub raw_alert_content: String,
    /// The dedupe identity, already scoped by tenant (see `alert_identity`).
    pub identity: String,
    /// `canonical_hash` of the raw alert: tells a new revision of a known alert (same
    /// identity, other content) from the same alert sent again.
    pub content_hash: String,
    pub tenant_union_id: i64,
    pub tenant_integration_key: Option<String>,
    pub received_at: Timestamp,
}

/// The answer to a create: a new investigation, or the one that already covers the alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    New(i64),
    Existing(i64),
}

impl Created {
    pub fn investigation_id(self) -> i64 {
        match self {
            Created::New(id) | Created::Existing(id) => id,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AlertRecord {
    pub id: i64,
    pub parsed: ParsedAlert,
    pub raw_alert_content: String,
    pub tenant_union: TenantUnion,
    pub tenant_integration_key: Option<String>,
    pub enrich_result: Option<Map<String, Value>>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FeedbackRecord {
    /// Feedback is one-to-one with its investigation and shares its id.
    pub id: i64,
    pub status: FeedbackStatus,
    /// The analyst's outcome when set, else the investigation's.
    pub outcome: Option<Outcome>,
    pub priority: Option<Priority>,
    pub outcome_note: Option<String>,
    pub remediations_done: Map<String, Value>,
    /// The analyst who last changed the feedback; None while only Sleuth has spoken.
    pub updated_by: Option<i64>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A script run fired for an investigation, as the list item shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct RemediationRun {
    pub entity: String,
    pub action_name: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct InvestigationRecord {
    pub id: i64,
    pub status: InvestigationStatus,
    pub canceled: Option<Canceled>,
    pub error_msg: Option<String>,
    pub outcome: Option<Outcome>,
    pub priority: Option<Priority>,
    /// Present once the engine concluded (status success).
    pub result: Option<InvestigationResult>,
    /// The first investigation of the same story, when this one was coalesced into it.
    pub ignored_for: Option<i64>,
    /// True once a worker lost this investigation (crash, lease expiry) and another took it up.
    pub is_retried: bool,
    pub start_time: Option<Timestamp>,
    pub generated_time: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub alert: AlertRecord,
    pub feedback: FeedbackRecord,
    pub remediation_action_runs: Vec<RemediationRun>,
}

/// A job a worker holds under lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedJob {
    pub investigation_id: i64,
    /// 1 for the first try; more when a worker died holding it.
    pub attempt: i64,
    /// Proves the lease is still ours when we finish; a stale worker cannot overwrite.
    pub lease_token: String,
}

/// A claim made together with a finish (`Store::finish_job_and_claim`): the next ready job
/// for this worker, leased for this long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextClaim {
    pub worker: String,
    pub lease: chrono::Duration,
}

/// How a worker ends a job (`Store::finish_job_and_claim`): all of it is written in one
/// transaction.
#[derive(Debug, Clone)]
pub struct JobEnd {
    pub finish: Finish,
    pub at: Timestamp,
    /// The system events of the triggers this end fires: stored with the result, and
    /// dropped with it when the lease was lost.
    pub system_events: Vec<crate::NewSystemEvent>,
    /// The next job to claim for this worker, if it wants one.
    pub next: Option<NextClaim>,
    /// The investigation's parsed alert, when the worker read it: the search document of
    /// the result is built from it instead of reading it back.
    pub alert: Option<std::sync::Arc<ParsedAlert>>,
}

/// What finishing a job did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// False when the lease was lost meanwhile: the result was dropped.
    pub stored: bool,
    /// The job claimed in the same transaction, when one was asked for and was ready.
    pub next: Option<ClaimedJob>,
}

/// How a worker ends a job.
#[derive(Debug, Clone)]
pub enum Finish {
    /// Concluded. `ignored_for` names the first investigation of the same story when this
    /// one was coalesced into it (the result's outcome is then IGNORED).
    Completed {
        result: Box<InvestigationResult>,
        ignored_for: Option<i64>,
    },
    /// Stopped without a conclusion: a failure (canceled None) or a guard.
    Stopped {
        canceled: Option<Canceled>,
        error_msg: String,
    },
}

/// What the guards need to know about the alert behind a claimed job.
#[derive(Debug, Clone)]
pub struct JobInput {
    pub investigation: InvestigationRecord,
    /// Alerts from the same source and tenant received in the burst window up to this one,
    /// counted up to `GuardWindows::burst_count_limit`.
    pub burst_count: u64,
    /// The earliest other investigation with the same coalesce key inside the window.
    pub coalesce_first: Option<i64>,
}

/// The guard windows a worker applies when loading a job.
#[derive(Debug, Clone, Copy)]
pub struct GuardWindows {
    pub burst_window: chrono::Duration,
    /// Counting stops at this many alerts (0: the burst guard is off and nothing is
    /// counted). The guard only asks whether its threshold is crossed; an unbounded count
    /// would make every job of a busy source read every alert of the window.
    pub burst_count_limit: u64,
    /// Zero: the coalescing guard is off and nothing is looked up.
    pub coalesce_window: chrono::Duration,
}

/// Entities that connect a new alert to what came before, for `History`.
#[derive(Debug, Clone)]
pub struct HistoryQuery {
    pub alert_id: i64,
    pub investigation_id: i64,
    pub entities: Vec<Entity>,
    pub alert_type: String,
    pub direct_source_label: String,
    pub since: Timestamp,
    pub limit: usize,
    /// The alert's scope: context memory of other tenant unions and tenant ids never
    /// applies to it.
    pub tenant_union_id: i64,
    pub tenant_id: Option<String>,
}
