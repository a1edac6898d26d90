//! What the background work needs, and the HTTP layer shares: the settings, the store (once
//! it is ready), the operator's context for the engine, the sandbox, the secrets keyring, the
//! data sources and the metrics.

use std::sync::{Arc, OnceLock, RwLock};

use sleuth_domain::Strategy;
use sleuth_engine::Context;
use sleuth_store::Store;

use crate::metrics::Metrics;
use crate::script_secrets::RunSecretsError;
use crate::settings::Settings;

/// One per process, cloned cheaply into every worker, watcher and handler.
#[derive(Clone)]
pub struct Runtime(Arc<Shared>);

/// A [`Runtime`] that does not keep it alive.
#[derive(Clone)]
pub struct WeakRuntime(std::sync::Weak<Shared>);

impl WeakRuntime {
    pub fn upgrade(&self) -> Option<Runtime> {
        self.0.upgrade().map(Runtime)
    }
}

struct Shared {
    pub settings: Settings,
    /// Set once the database is reachable and migrated; until then API calls answer 503.
    store: OnceLock<Arc<dyn Store>>,
    /// The operator's context, replaced whole when the context file changes.
    context: RwLock<Arc<Context>>,
    /// What went into the context in force, and the last reload that failed.
    context_status: RwLock<crate::context_status::Status>,
    metrics: Arc<Metrics>,
    /// The script runner, once the start-up probe ran; without it scripts do not run and
    /// script endpoints answer 503.
    sandbox: OnceLock<Arc<sleuth_sandbox::Sandbox>>,
    /// The data sources investigations ask, made on first use (after the sandbox, which
    /// runs enrichment scripts); `Err` when they could not be made (logged once).
    data_sources: OnceLock<Result<Arc<crate::data_sources::DataSources>, String>>,
    /// The keys that seal and open script secrets (`secret_keys`); without them secrets
    /// cannot be set, and sealed ones cannot be handed to scripts.
    keyring: OnceLock<Arc<crate::secret_keys::Keyring>>,
    /// What keeps stored secrets from scripts in this process, as found at start-up
    /// (`script_secrets::prepare`); shown on `/readyz`.
    secrets_problem: RwLock<Option<String>>,
    /// Set once this process has synced the trigger catalog into the store.
    trigger_catalog_synced: tokio::sync::OnceCell<()>,
    /// Set once this process has created the strategies Sleuth ships (see
    /// `builtin_strategies`).
    builtin_strategies_synced: tokio::sync::OnceCell<()>,
    /// The active custom strategies as last read, with the store's strategy generation
    /// then; read again when the generation moved (see `pipeline::strategies_in_force`).
    strategies: std::sync::Mutex<Option<(i64, Arc<Vec<Strategy>>)>>,
    /// Conclusions the workers stored, kept for the deliverer (`notify_conclusions`).
    recent_conclusions: crate::notify_conclusions::RecentConclusions,
}

impl Runtime {
    pub fn new(settings: Settings, context: Context) -> Runtime {
        Runtime(Arc::new(Shared {
            settings,
            store: OnceLock::new(),
            context: RwLock::new(Arc::new(context)),
            context_status: RwLock::new(crate::context_status::Status::default()),
            metrics: Arc::new(Metrics::default()),
            sandbox: OnceLock::new(),
            data_sources: OnceLock::new(),
            keyring: OnceLock::new(),
            secrets_problem: RwLock::new(None),
            trigger_catalog_synced: tokio::sync::OnceCell::new(),
            builtin_strategies_synced: tokio::sync::OnceCell::new(),
            strategies: std::sync::Mutex::new(None),
            recent_conclusions: crate::notify_conclusions::RecentConclusions::default(),
        }))
    }

    /// The conclusions this process's workers stored, while a destination wants them.
    pub fn recent_conclusions(&self) -> &crate::notify_conclusions::RecentConclusions {
        &self.0.recent_conclusions
    }

    pub fn settings(&self) -> &Settings {
        &self.0.settings
    }

    pub fn metrics(&self) -> &Metrics {
        &self.0.metrics
    }

    /// The metrics on their own, for the request-counting layer.
    pub fn shared_metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.0.metrics)
    }

    /// Makes the store available; later calls are ignored (the first store stays).
    pub fn set_store(&self, store: Arc<dyn Store>) {
        let _ = self.0.store.set(store);
    }

    pub fn store_if_ready(&self) -> Option<&Arc<dyn Store>> {
        self.0.store.get()
    }

    /// Makes the sandbox available; later calls are ignored (the first sandbox stays).
    pub fn set_sandbox(&self, sandbox: sleuth_sandbox::Sandbox) {
        let _ = self.0.sandbox.set(Arc::new(sandbox));
    }

    pub fn sandbox_if_set(&self) -> Option<&sleuth_sandbox::Sandbox> {
        self.0.sandbox.get().map(Arc::as_ref)
    }

    /// The sandbox for holders that outlive a borrow (the data sources' scripts).
    pub fn sandbox_shared(&self) -> Option<Arc<sleuth_sandbox::Sandbox>> {
        self.0.sandbox.get().cloned()
    }

    /// The data sources of this process, made on first use; `None` when they could not be
    /// made (no HTTP client: logged once, and investigations go on without sources).
    pub fn data_sources(&self) -> Option<&Arc<crate::data_sources::DataSources>> {
        self.0
            .data_sources
            .get_or_init(|| {
                let secrets = Arc::new(StoredSecrets(self.downgrade()));
                crate::data_sources::DataSources::new(secrets, self.sandbox_shared())
                    .map(Arc::new)
                    .inspect_err(|error| {
                        tracing::error!("the data sources cannot run: {error}");
                    })
            })
            .as_ref()
            .ok()
    }

    /// A handle that does not keep the runtime alive (for what the runtime itself holds).
    pub fn downgrade(&self) -> WeakRuntime {
        WeakRuntime(Arc::downgrade(&self.0))
    }

    /// Makes the secrets keyring available; later calls are ignored (the first stays).
    pub fn set_keyring(&self, keyring: crate::secret_keys::Keyring) {
        let _ = self.0.keyring.set(Arc::new(keyring));
    }

    pub fn keyring(&self) -> Option<&crate::secret_keys::Keyring> {
        self.0.keyring.get().map(Arc::as_ref)
    }

    /// At start-up: seals what needs sealing and records what still keeps secrets from
    /// scripts in this process (`script_secrets::prepare`), for `/readyz`.
    pub async fn prepare_secrets(&self, store: &Arc<dyn Store>) {
        match crate::script_secrets::prepare(self.keyring(), store).await {
            Ok(found) => self.set_secrets_problem(found),
            Err(error) => tracing::warn!(%error, "could not check the stored script secrets"),
        }
    }

    pub fn set_secrets_problem(&self, problem: Option<String>) {
        *write(&self.0.secrets_problem) = problem;
    }

    pub fn secrets_problem(&self) -> Option<String> {
        match self.0.secrets_problem.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Initialised by the first caller that syncs the trigger catalog (see `firing`).
    pub fn trigger_catalog_synced(&self) -> &tokio::sync::OnceCell<()> {
        &self.0.trigger_catalog_synced
    }

    /// Initialised by the first caller that creates the shipped strategies.
    pub fn builtin_strategies_synced(&self) -> &tokio::sync::OnceCell<()> {
        &self.0.builtin_strategies_synced
    }

    /// The active strategies kept for this generation, if the kept ones are of it.
    pub fn strategies_at(&self, generation: i64) -> Option<Arc<Vec<Strategy>>> {
        let kept = match self.0.strategies.lock() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        kept.filter(|(kept_generation, _)| *kept_generation == generation)
            .map(|(_, strategies)| strategies)
    }

    /// Keeps the active strategies read at this generation.
    pub fn keep_strategies(&self, generation: i64, strategies: Arc<Vec<Strategy>>) {
        let kept = Some((generation, strategies));
        match self.0.strategies.lock() {
            Ok(mut guard) => *guard = kept,
            Err(poisoned) => *poisoned.into_inner() = kept,
        }
    }

    pub fn context(&self) -> Arc<Context> {
        match self.0.context.read() {
            Ok(guard) => guard.clone(),
            // A writer panicked mid-swap; the Arc inside is still whole.
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Puts a freshly loaded context in force, with what went into it.
    pub fn put_context(
        &self,
        loaded: crate::context_status::Loaded,
        api_updated_at: Option<sleuth_domain::Timestamp>,
        at: sleuth_domain::Timestamp,
    ) {
        let status = crate::context_status::Status {
            document: loaded.document,
            files: loaded.files,
            warnings: loaded.warnings,
            intel_count: loaded.intel_count,
            fingerprint: loaded.fingerprint,
            loaded_at: Some(at),
            last_error: None,
            api_updated_at,
        };
        *write(&self.0.context) = Arc::new(loaded.context);
        *write(&self.0.context_status) = status;
    }

    /// Records a reload that failed; the context in force stays.
    pub fn context_failed(&self, error: String) {
        write(&self.0.context_status).last_error = Some(error);
    }

    pub fn context_status(&self) -> crate::context_status::Status {
        match self.0.context_status.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

/// A data source's secrets, opened from the sealed secret store at the moment of the call.
struct StoredSecrets(WeakRuntime);

#[async_trait::async_trait]
impl sleuth_sources::Secrets for StoredSecrets {
    async fn secret(&self, name: &str) -> Result<sleuth_sources::Secret, String> {
        let runtime = self
            .0
            .upgrade()
            .ok_or_else(|| "Sleuth is stopping".to_string())?;
        let store = runtime
            .store_if_ready()
            .ok_or_else(|| "the database is not ready".to_string())?;
        let not_stored = || {
            format!("the secret '{name}' is not stored; store it with `sleuth secret set {name}`")
        };
        let wanted = [name.to_string()];
        let opened = crate::script_secrets::for_run(store, runtime.keyring(), &wanted)
            .await
            .map_err(|error| match error {
                RunSecretsError::Missing(_) => not_stored(),
                RunSecretsError::Unopenable(error) => error.to_string(),
                RunSecretsError::Store(error) => {
                    tracing::error!("could not read the secret store for a data source: {error}");
                    "the secret store could not be read (logged for the operator)".to_string()
                }
            })?;
        opened
            .values()
            .remove(name)
            .map(sleuth_sources::Secret::new)
            .ok_or_else(not_stored)
    }
}

/// A write guard even after a panicking writer: the values swapped here are always whole.
fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    match lock.write() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
