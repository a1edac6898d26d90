//! The only code in Sleuth that spawns processes: it runs operators' Python response scripts,
//! treated as hostile, under layered isolation (DESIGN.md section 6), and reports how each
//! run ended in the terms of the script contract (DESIGN.md section 1).
//!
//! The service calls [`Sandbox::probe`] once at start-up, shows [`Sandbox::report`] on
//! `/readyz`, refuses script endpoints while [`Sandbox::ready`] fails, and awaits
//! [`Sandbox::run`] per script. Its binary must dispatch `sandbox-exec` to
//! [`launcher_main`] before it starts any thread.
// Unsafe is confined to system calls the standard library does not offer (fork, unshare,
// credentials, prctl, rlimits, seccomp, execve); each block says why it is sound.
#![allow(unsafe_code)]

mod config;
mod egress;
mod egress_guard;
mod landlock_layer;
mod launcher;
mod lifeline;
mod plan;
mod probe;
pub mod process;
mod runner;
mod seccomp;
mod status;
mod work_dir;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use sleuth_domain::ScriptRunStatus;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub use config::{DEFAULT_READ_ONLY_PATHS, SandboxConfig, SandboxMode};
pub use egress::{AllowedNetwork, Destination};
/// The network type of `SandboxConfig::denied_networks`, re-exported so that callers need
/// no dependency of their own to fill it.
pub use ipnet::IpNet;
pub use launcher::launcher_main;
pub use probe::{LayerAvailability, ProbeReport, layer};

use plan::LayerPolicies;
use runner::RunSettings;

/// One script to run. `Debug` names the secrets but never shows their values.
#[derive(Clone, Default)]
pub struct ScriptJob {
    pub code: String,
    /// Bound as the global `trigger_args`.
    pub trigger_args: serde_json::Value,
    /// Each entry is bound as a global of that name (`investigation`, `alert`, ...).
    pub variables: serde_json::Map<String, serde_json::Value>,
    /// Bound as the global `secrets`; handed to the interpreter on stdin only.
    pub secrets: BTreeMap<String, String>,
    /// Outbound network for this script (off by default): TCP to the public internet and to
    /// the operator's named destinations, each connection judged by the egress guard.
    pub allow_network: bool,
}

impl std::fmt::Debug for ScriptJob {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ScriptJob")
            .field("code_bytes", &self.code.len())
            .field("trigger_args", &self.trigger_args)
            .field("variables", &self.variables.keys().collect::<Vec<_>>())
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .field("allow_network", &self.allow_network)
            .finish()
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptOutcome {
    pub status: ScriptRunStatus,
    /// At most `stdout_cap` bytes, NUL bytes removed, invalid UTF-8 replaced.
    pub stdout: String,
    pub stderr: String,
    /// Set when the runner has something to say: why it could not run the script (status
    /// error), or why it killed it (time limit, output cap). Never holds a secret.
    pub syserr: Option<String>,
    /// From the launcher's start to its end; waiting for a slot is not counted.
    pub duration: Duration,
    /// The mode and the layers that applied, e.g. `strict: rlimits, pid-namespace, ...`.
    pub isolation: String,
    /// Connections the egress guard refused, `destination (reason)`, the first few; also
    /// summed up in `syserr`.
    pub denied_connections: Vec<String>,
}

impl ScriptOutcome {
    fn runner_error(reason: String, isolation: String) -> ScriptOutcome {
        ScriptOutcome {
            status: ScriptRunStatus::Error,
            stdout: String::new(),
            stderr: String::new(),
            syserr: Some(reason),
            duration: Duration::ZERO,
            isolation,
            denied_connections: Vec::new(),
        }
    }
}

/// Scripts cannot run: the mode needs layers the host lacks, or the interpreter fails.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the script sandbox is not ready: {0}")]
pub struct NotReady(pub String);

/// The script runner. Cheap to clone; clones share the slots.
#[derive(Clone)]
pub struct Sandbox {
    inner: Arc<SandboxInner>,
}

struct SandboxInner {
    config: SandboxConfig,
    report: ProbeReport,
    layers: LayerPolicies,
    permits: Arc<Semaphore>,
    /// Slot numbers not in use; a run holds a permit and takes one, so it is never empty then.
    free_slots: Mutex<Vec<usize>>,
}

/// A slot held by one run: its number picks the run's uid, so two runs never share one.
struct SlotLease<'a> {
    free_slots: &'a Mutex<Vec<usize>>,
    slot: usize,
    _permit: OwnedSemaphorePermit,
}

impl Drop for SlotLease<'_> {
    fn drop(&mut self) {
        // The slot goes back before the permit (dropped after this body) lets a run in.
        self.free_slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(self.slot);
    }
}

impl Sandbox {
    /// Finds which layers the host offers by running a trivial script once (blocking, tens
    /// of milliseconds), and fixes the layers every run will get in the configured mode.
    pub fn probe(config: SandboxConfig) -> Sandbox {
        let config = SandboxConfig {
            slots: config.slots.max(1),
            // The launcher and the interpreter see the work dir from elsewhere: no relative
            // path may survive (it would also become HOME).
            work_root: std::path::absolute(&config.work_root).unwrap_or(config.work_root),
            ..config
        };
        // Runs a process killed before it could clean up left their dirs behind; their
        // scripts died with it (each launcher watches the service's lifeline).
        work_dir::sweep_stale(&config.work_root);
        let report = probe::probe_host(&config);
        let layers = probe::run_policies(config.mode, &report);
        Sandbox {
            inner: Arc::new(SandboxInner {
                permits: Arc::new(Semaphore::new(config.slots)),
                free_slots: Mutex::new((0..config.slots).rev().collect()),
                config,
                report,
                layers,
            }),
        }
    }

    pub fn report(&self) -> ProbeReport {
        self.inner.report.clone()
    }

    pub fn ready(&self) -> Result<(), NotReady> {
        match &self.inner.report.not_ready {
            Some(reason) => Err(NotReady(reason.clone())),
            None => Ok(()),
        }
    }

    /// Runs one script; waits for a free slot first. Never panics: a failure of the runner
    /// itself is status error with the reason in `syserr`. If the caller stops waiting, the
    /// run still ends within its limits and cleans up after itself.
    pub async fn run(&self, job: ScriptJob) -> ScriptOutcome {
        let inner = Arc::clone(&self.inner);
        let isolation = format!("{}: none", inner.config.mode);
        match tokio::spawn(async move { inner.run(job).await }).await {
            Ok(outcome) => outcome,
            Err(_) => ScriptOutcome::runner_error(
                "the script runner stopped unexpectedly".to_owned(),
                isolation,
            ),
        }
    }
}

impl SandboxInner {
    async fn run(&self, job: ScriptJob) -> ScriptOutcome {
        let mode_label = self.config.mode.as_str();
        if let Some(reason) = &self.report.not_ready {
            return ScriptOutcome::runner_error(
                format!("the script sandbox is not ready: {reason}"),
                format!("{mode_label}: none"),
            );
        }
        let lease = match self.lease_slot().await {
            Some(lease) => lease,
            None => {
                return ScriptOutcome::runner_error(
                    "the script sandbox is shutting down".to_owned(),
                    format!("{mode_label}: none"),
                );
            }
        };
        let settings = RunSettings {
            config: &self.config,
            layers: self.layers,
            slot: lease.slot,
            mode_label,
        };
        runner::execute(&settings, &job).await.outcome
    }

    async fn lease_slot(&self) -> Option<SlotLease<'_>> {
        let permit = Arc::clone(&self.permits).acquire_owned().await.ok()?;
        let slot = self
            .free_slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()?;
        Some(SlotLease {
            free_slots: &self.free_slots,
            slot,
            _permit: permit,
        })
    }
}
