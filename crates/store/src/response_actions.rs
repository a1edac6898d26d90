//! Response actions in storage: the trigger catalog, scripts and their versions, trigger
//! runs and script runs, and the operator's secrets for scripts. A separate trait from
//! [`crate::Store`] (which requires it) so that this part of the storage boundary reads on
//! its own; its methods name intent, and no SQL lives here.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{Map, Value};
use sleuth_domain::{ScriptRunStatus, Timestamp};
use uuid::Uuid;

use crate::{StoreResult, TenantScope, User};

/// One trigger of the built-in catalog, as the server defines it. The catalog lives in
/// code; the store keeps a copy so that scripts and runs can refer to triggers by uuid
/// and triggers keep their creation time across restarts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerCatalogEntry {
    /// Stable across releases: a v5 uuid derived from `fn_name`.
    pub uuid: Uuid,
    pub fn_name: String,
    pub display_name: String,
    pub parent: Option<Uuid>,
    pub tree_labels: Vec<String>,
    pub display_index: i32,
    pub is_runnable: bool,
    pub is_scriptable: bool,
    pub trigger_arg_names: Vec<String>,
    pub script_var_names: Vec<String>,
}

/// A trigger as stored: its catalog entry, and whether it is still in the catalog.
/// Triggers that left the catalog stay (runs refer to them) but are archived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerDefinition {
    pub entry: TriggerCatalogEntry,
    pub is_archived: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A response script (the response action), with its trigger.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptRecord {
    pub id: i64,
    pub display_name: String,
    pub trigger_def: TriggerDefinition,
    pub is_enabled: bool,
    /// Archived scripts never run and cannot be changed; they keep their runs.
    pub is_archived: bool,
    /// Outbound network for this script's runs; off unless the operator allows it.
    pub allow_network: bool,
    /// The secrets its runs get (sorted, no duplicates): a run is handed these and no
    /// others.
    pub secret_names: Vec<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A script to create, with the code of its first version.
#[derive(Debug, Clone)]
pub struct NewScript {
    pub display_name: String,
    pub trigger_uuid: Uuid,
    pub code: String,
    pub is_enabled: bool,
    pub allow_network: bool,
    /// The secrets its runs get (the caller validated the names).
    pub secret_names: Vec<String>,
    pub author_id: i64,
}

/// Changes to a script; `None` leaves a field as it is. A `code` that differs from the
/// latest version's makes a new version authored by `author_id`.
#[derive(Debug, Clone, Default)]
pub struct ScriptChanges {
    pub display_name: Option<String>,
    pub is_enabled: Option<bool>,
    pub trigger_uuid: Option<Uuid>,
    pub allow_network: Option<bool>,
    /// Replaces the names of the secrets its runs get.
    pub secret_names: Option<Vec<String>>,
    pub code: Option<String>,
    pub author_id: i64,
}

impl ScriptChanges {
    pub fn is_empty(&self) -> bool {
        self.display_name.is_none()
            && self.is_enabled.is_none()
            && self.trigger_uuid.is_none()
            && self.allow_network.is_none()
            && self.secret_names.is_none()
            && self.code.is_none()
    }
}

/// One version of a script's code. Versions are immutable; `v_num` counts from 1 per script.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptVersionRecord {
    pub id: i64,
    pub script_id: i64,
    pub v_num: i32,
    pub code: String,
    pub author: User,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// One firing of a trigger: what happened and with which arguments. Each script that ran
/// for it has its own script run.
#[derive(Debug, Clone, PartialEq)]
pub struct TriggerRunRecord {
    pub id: i64,
    /// The trigger runs fired by one event share a batch (the id of the first of them).
    pub batch: Option<i64>,
    pub trigger_args: Map<String, Value>,
    pub trigger_def: TriggerDefinition,
    /// The investigation the firing concerns, if any: its runs show on its list item.
    pub investigation_id: Option<i64>,
    /// What the runs act on, as `type:value` (`investigation:42`, `user:r.patel`).
    pub entity: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A trigger run to record.
#[derive(Debug, Clone)]
pub struct NewTriggerRun {
    pub trigger_uuid: Uuid,
    pub trigger_args: Map<String, Value>,
    pub investigation_id: Option<i64>,
    pub entity: Option<String>,
}

/// One run of one script version for one trigger run.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptRunRecord {
    pub id: i64,
    pub script: ScriptRecord,
    pub script_version: ScriptVersionRecord,
    pub trigger_run: TriggerRunRecord,
    pub status: ScriptRunStatus,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    /// The runner's own word: why it could not run the script, or why it stopped it.
    pub syserr: Option<String>,
    /// The sandbox mode and the layers that applied.
    pub isolation: Option<String>,
    pub duration_ms: Option<i64>,
    /// Which process runs it (see `fail_interrupted_script_runs`).
    pub runner: String,
    /// A live runner always finishes a run before this time; a `running` run past it was
    /// interrupted.
    pub deadline_at: Timestamp,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A script run to record as `running`, just before it is handed to the sandbox.
#[derive(Debug, Clone)]
pub struct NewScriptRun {
    pub script_id: i64,
    pub script_version_id: i64,
    pub trigger_run_id: i64,
    pub runner: String,
    pub deadline_at: Timestamp,
}

/// How a script run ended.
#[derive(Debug, Clone)]
pub struct ScriptRunEnd {
    pub status: ScriptRunStatus,
    pub stdout: String,
    pub stderr: String,
    pub syserr: Option<String>,
    pub isolation: String,
    pub duration_ms: i64,
}

/// An enabled, unarchived script whose trigger fired, with the version to run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunnableScript {
    pub script: ScriptRecord,
    /// The latest version; a script always has one while it is not archived.
    pub version: ScriptVersionRecord,
}

/// What the details endpoint shows about one script.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptSummary {
    pub run_count: u64,
    pub version_count: u64,
    pub latest_run: Option<ScriptRunRecord>,
    pub latest_version: Option<ScriptVersionRecord>,
}

/// A page of a script's runs, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunPage {
    pub limit: u32,
    pub offset: u64,
}

/// A secret's value. `Debug` never shows it, so a record logged by mistake leaks nothing.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue(pub String);

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("SecretValue(..)")
    }
}

/// A secret's value encrypted by the server's key (see the server's `secret_keys`): the
/// store keeps it and never sees the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealedSecret {
    /// Which key sealed it (a fingerprint of the key, never the key).
    pub key_id: String,
    /// The nonce and the ciphertext with its tag, as base64 text.
    pub ciphertext: String,
}

/// A secret as a row holds it: sealed, or in plaintext as Sleuth stored it before it
/// encrypted secrets (sealed on the first start with a key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredSecret {
    Plaintext(SecretValue),
    Sealed(SealedSecret),
}

impl StoredSecret {
    /// The key that sealed it; None for plaintext.
    pub fn key_id(&self) -> Option<&str> {
        match self {
            StoredSecret::Plaintext(_) => None,
            StoredSecret::Sealed(sealed) => Some(&sealed.key_id),
        }
    }
}

/// What may be shown about a stored secret: everything but its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretInfo {
    pub name: String,
    /// The key that sealed it; None while it is still in plaintext.
    pub key_id: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Response actions in storage.
#[async_trait]
pub trait ResponseActionStore: Send + Sync {
    // --- The trigger catalog -------------------------------------------------------------

    /// Makes the stored triggers match the catalog: inserts new ones, updates changed ones
    /// (their `updated_at` moves only when something changed), and archives stored
    /// triggers the catalog no longer has. Safe to run by several processes at once.
    async fn sync_trigger_catalog(
        &self,
        catalog: &[TriggerCatalogEntry],
        at: Timestamp,
    ) -> StoreResult<()>;
    /// Every trigger, archived ones included, in tree order (display index, then name).
    async fn list_trigger_definitions(&self) -> StoreResult<Vec<TriggerDefinition>>;
    async fn get_trigger_definition(&self, uuid: Uuid) -> StoreResult<TriggerDefinition>;

    // --- Scripts and versions ------------------------------------------------------------

    /// Creates the script and its version 1 in one transaction.
    async fn create_script(&self, script: &NewScript, at: Timestamp) -> StoreResult<ScriptRecord>;
    async fn list_scripts(&self, archived: bool) -> StoreResult<Vec<ScriptRecord>>;
    async fn get_script(&self, script_id: i64) -> StoreResult<ScriptRecord>;
    /// Applies the changes; a changed code makes the next version. `Rejected` when the
    /// script is archived or its versions ran out of numbers.
    async fn update_script(
        &self,
        script_id: i64,
        changes: &ScriptChanges,
        at: Timestamp,
    ) -> StoreResult<ScriptRecord>;
    /// Archives the script (it never runs again) and deletes its versions that no run
    /// refers to. Archiving twice is harmless.
    async fn archive_script(&self, script_id: i64, at: Timestamp) -> StoreResult<()>;
    /// The script's versions, newest first.
    async fn list_script_versions(&self, script_id: i64) -> StoreResult<Vec<ScriptVersionRecord>>;
    async fn script_summary(&self, script_id: i64) -> StoreResult<ScriptSummary>;
    /// The enabled, unarchived scripts on these triggers, each with its latest version.
    async fn scripts_to_run(&self, trigger_uuids: &[Uuid]) -> StoreResult<Vec<RunnableScript>>;

    // --- Runs ----------------------------------------------------------------------------

    /// Records the trigger runs of one event in one transaction; they share a batch.
    async fn record_trigger_runs(
        &self,
        runs: &[NewTriggerRun],
        at: Timestamp,
    ) -> StoreResult<Vec<TriggerRunRecord>>;
    /// Records a script run as `running`.
    async fn start_script_run(&self, run: &NewScriptRun, at: Timestamp) -> StoreResult<i64>;
    /// Ends a `running` run; `false` when it had already ended (marked interrupted by
    /// another process meanwhile), in which case nothing changes. A run that ends in
    /// failure leaves a [`crate::RESPONSE_ACTION_RUN_FAILED`] system event in the same
    /// transaction.
    async fn finish_script_run(
        &self,
        script_run_id: i64,
        end: &ScriptRunEnd,
        at: Timestamp,
    ) -> StoreResult<bool>;
    async fn get_script_run(&self, script_run_id: i64) -> StoreResult<ScriptRunRecord>;
    /// The script's runs, newest first; of a bound `scope`, only the runs fired about an
    /// investigation of its tenant unions (a run about no investigation, such as a manual
    /// one, belongs to no union). `NotFound` when there is no such script.
    async fn list_script_runs(
        &self,
        script_id: i64,
        page: RunPage,
        scope: &TenantScope,
    ) -> StoreResult<Vec<ScriptRunRecord>>;
    /// The script runs fired about this investigation (their trigger run names it), newest
    /// first, at most `limit`. The caller checked that the investigation is in its scope;
    /// an investigation nothing ran for, or that does not exist, has none.
    async fn list_investigation_script_runs(
        &self,
        investigation_id: i64,
        limit: u32,
    ) -> StoreResult<Vec<ScriptRunRecord>>;
    /// The runners that have `running` runs, so a starting process can tell which are gone.
    async fn running_script_runners(&self) -> StoreResult<Vec<String>>;
    /// Ends as `error` (with `reason` in syserr) every `running` run whose runner is listed
    /// or whose deadline is before `at`, each with its failure's system event. Returns how
    /// many.
    async fn fail_interrupted_script_runs(
        &self,
        dead_runners: &[String],
        reason: &str,
        at: Timestamp,
    ) -> StoreResult<u64>;

    // --- Secrets for scripts -------------------------------------------------------------

    /// Creates or replaces the secret `name`. Only sealed values are stored.
    async fn set_script_secret(
        &self,
        name: &str,
        value: &SealedSecret,
        at: Timestamp,
    ) -> StoreResult<()>;
    async fn list_script_secrets(&self) -> StoreResult<Vec<SecretInfo>>;
    /// `NotFound` when there is no such secret.
    async fn delete_script_secret(&self, name: &str) -> StoreResult<()>;
    /// The stored secrets among `names` (names not stored are left out), for a script run.
    async fn script_secrets(&self, names: &[String])
    -> StoreResult<BTreeMap<String, StoredSecret>>;
    /// Replaces the stored form of `name` with `sealed` (the same value under another key,
    /// or newly sealed) when the row still holds `expected`; `false` when it changed
    /// meanwhile or is gone. Its `updated_at` stays: the value did not change.
    async fn reseal_script_secret(
        &self,
        name: &str,
        expected: &StoredSecret,
        sealed: &SealedSecret,
    ) -> StoreResult<bool>;
}
