//! The start-up probe: runs a trivial script once with every layer tried, and learns from the
//! launcher's own report which layers this host really applies. Asking the kernel feature by
//! feature would miss what only fails in combination (a uid switch inside a namespace, a
//! Landlock ruleset that is accepted but not enforced, an interpreter that cannot start
//! under the restrictions).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::landlock_layer;
use crate::plan::{LayerPolicies, LayerPolicy};
use crate::runner::{RunSettings, execute};
use crate::{SandboxConfig, SandboxMode, ScriptJob};

/// Layer names, as the launcher reports them and `/readyz` shows them.
pub mod layer {
    pub const RLIMITS: &str = "rlimits";
    pub const USER_NAMESPACE: &str = "user-namespace";
    pub const PID_NAMESPACE: &str = "pid-namespace";
    pub const NET_NAMESPACE: &str = "net-namespace";
    pub const IPC_NAMESPACE: &str = "ipc-namespace";
    pub const UTS_NAMESPACE: &str = "uts-namespace";
    pub const DEDICATED_UID: &str = "dedicated-uid";
    pub const NO_NEW_PRIVS: &str = "no-new-privs";
    pub const LANDLOCK: &str = "landlock";
    pub const SECCOMP: &str = "seccomp";
    /// Judges each connection of a script allowed the network (needs seccomp).
    pub const EGRESS_GUARD: &str = "egress-guard";
}

/// One layer as the probe found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerAvailability {
    pub layer: String,
    pub available: bool,
    /// What applied (`abi 7`, a uid) or why it did not.
    pub detail: String,
}

/// What the probe found: shown on `/readyz` and logged at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeReport {
    pub mode: SandboxMode,
    pub interpreter: PathBuf,
    pub layers: Vec<LayerAvailability>,
    /// The interpreter ran a trivial script under every available layer.
    pub interpreter_runs: bool,
    /// The Landlock ABI of the kernel, if Landlock is on.
    pub landlock_abi: Option<i32>,
    /// Why scripts cannot run in this mode; `None` when they can.
    pub not_ready: Option<String>,
}

impl ProbeReport {
    pub fn available(&self, layer: &str) -> bool {
        self.layers
            .iter()
            .any(|availability| availability.layer == layer && availability.available)
    }

    /// The available layers, comma separated.
    pub fn available_layers(&self) -> String {
        let names: Vec<&str> = self
            .layers
            .iter()
            .filter(|availability| availability.available)
            .map(|availability| availability.layer.as_str())
            .collect();
        names.join(", ")
    }
}

impl fmt::Display for ProbeReport {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "sandbox mode {}; layers available: {}",
            self.mode,
            self.available_layers()
        )?;
        let missing: Vec<String> = self
            .layers
            .iter()
            .filter(|availability| !availability.available)
            .map(|availability| format!("{} ({})", availability.layer, availability.detail))
            .collect();
        if !missing.is_empty() {
            write!(formatter, "; unavailable: {}", missing.join(", "))?;
        }
        match &self.not_ready {
            Some(reason) => write!(formatter, "; not ready: {reason}"),
            None => write!(formatter, "; ready"),
        }
    }
}

/// What the probe tries: everything, except the user namespace for root (root creates the
/// other namespaces directly, and keeps a real dedicated uid) and the dedicated uid for
/// anyone else (only root may switch uids).
fn probe_policies(is_root: bool) -> LayerPolicies {
    LayerPolicies {
        user_namespace: if is_root {
            LayerPolicy::Skip
        } else {
            LayerPolicy::Try
        },
        dedicated_uid: if is_root {
            LayerPolicy::Try
        } else {
            LayerPolicy::Skip
        },
        ..LayerPolicies::all(LayerPolicy::Try)
    }
}

/// The policies of every run in `mode`, given what the probe found.
pub(crate) fn run_policies(mode: SandboxMode, report: &ProbeReport) -> LayerPolicies {
    let when_available = |layer: &str, policy: LayerPolicy| {
        if report.available(layer) {
            policy
        } else {
            LayerPolicy::Skip
        }
    };
    let policy = match mode {
        SandboxMode::Strict => LayerPolicy::Require,
        SandboxMode::BestEffort => LayerPolicy::Try,
        SandboxMode::None => return LayerPolicies::all(LayerPolicy::Skip),
    };
    LayerPolicies {
        user_namespace: when_available(layer::USER_NAMESPACE, policy),
        pid_namespace: when_available(layer::PID_NAMESPACE, policy),
        net_namespace: when_available(layer::NET_NAMESPACE, policy),
        ipc_namespace: when_available(layer::IPC_NAMESPACE, policy),
        uts_namespace: when_available(layer::UTS_NAMESPACE, policy),
        dedicated_uid: when_available(layer::DEDICATED_UID, policy),
        no_new_privs: when_available(layer::NO_NEW_PRIVS, policy),
        landlock: when_available(layer::LANDLOCK, policy),
        seccomp: when_available(layer::SECCOMP, policy),
    }
}

/// Why `mode` cannot run scripts on a host with these layers, if it cannot.
fn readiness_problem(
    mode: SandboxMode,
    layers: &[LayerAvailability],
    interpreter_problem: Option<String>,
) -> Option<String> {
    if let Some(problem) = interpreter_problem {
        return Some(problem);
    }
    if mode != SandboxMode::Strict {
        return None;
    }
    let available = |name: &str| {
        layers
            .iter()
            .any(|availability| availability.layer == name && availability.available)
    };
    let mut missing = Vec::new();
    if !available(layer::LANDLOCK) {
        missing.push("Landlock");
    }
    if !available(layer::SECCOMP) {
        missing.push("seccomp");
    }
    if !available(layer::PID_NAMESPACE) && !available(layer::DEDICATED_UID) {
        missing.push("a PID namespace or a dedicated uid");
    }
    (!missing.is_empty()).then(|| {
        format!(
            "strict mode needs {}, which this host does not offer",
            missing.join(" and ")
        )
    })
}

/// Runs the probe. Blocking: it starts its own small runtime on its own thread, so it can be
/// called from synchronous start-up code and from inside an async runtime alike.
pub(crate) fn probe_host(config: &SandboxConfig) -> ProbeReport {
    // SAFETY: geteuid cannot fail.
    let is_root = unsafe { libc::geteuid() } == 0;
    let policies = probe_policies(is_root);
    let probe_config = SandboxConfig {
        // A slow first start (cold page cache) must not read as a broken interpreter.
        wall_clock: config.wall_clock.max(Duration::from_secs(10)),
        cpu_seconds: config.cpu_seconds.max(10),
        ..config.clone()
    };
    let job = ScriptJob {
        code: "pass".to_owned(),
        ..ScriptJob::default()
    };
    let probe_run = run_blocking(&probe_config, policies, &job);
    let mut layers = Vec::new();
    let interpreter_problem = match probe_run {
        Ok(record) => {
            for event in &record.report.applied {
                layers.push(LayerAvailability {
                    layer: event.layer.clone(),
                    available: true,
                    detail: event.detail.clone(),
                });
            }
            for event in &record.report.unavailable {
                layers.push(LayerAvailability {
                    layer: event.layer.clone(),
                    available: false,
                    detail: event.detail.clone(),
                });
            }
            let skipped = if is_root {
                (
                    layer::USER_NAMESPACE,
                    "not needed: root creates namespaces directly",
                )
            } else {
                (layer::DEDICATED_UID, "only root can switch to another uid")
            };
            layers.push(LayerAvailability {
                layer: skipped.0.to_owned(),
                available: false,
                detail: skipped.1.to_owned(),
            });
            let outcome = record.outcome;
            (outcome.status != sleuth_domain::ScriptRunStatus::Success).then(|| {
                let reason = outcome
                    .syserr
                    .unwrap_or_else(|| outcome.stderr.chars().take(500).collect());
                format!(
                    "the interpreter {} did not run under the sandbox: {reason}",
                    config.python.display()
                )
            })
        }
        Err(reason) => Some(reason),
    };
    if layers
        .iter()
        .any(|availability| availability.layer == layer::SECCOMP && availability.available)
    {
        layers.push(probe_egress_guard(&probe_config, policies));
    }
    ProbeReport {
        mode: config.mode,
        interpreter: config.python.clone(),
        interpreter_runs: interpreter_problem.is_none(),
        not_ready: readiness_problem(config.mode, &layers, interpreter_problem),
        landlock_abi: landlock_layer::kernel_abi(),
        layers,
    }
}

/// Runs one probe job on a small runtime of its own thread, so that the caller may be
/// synchronous start-up code or already inside a runtime.
fn run_blocking(
    config: &SandboxConfig,
    policies: LayerPolicies,
    job: &ScriptJob,
) -> Result<crate::runner::RunRecord, String> {
    let settings = RunSettings {
        config,
        layers: policies,
        slot: 0,
        mode_label: "probe",
    };
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|error| format!("cannot start the probe's runtime: {error}"))?;
                Ok(runtime.block_on(execute(&settings, job)))
            })
            .join()
            .unwrap_or_else(|_| Err("the probe stopped unexpectedly".to_owned()))
    })
}

/// The egress guard, end to end: a script allowed the network tries the host's own
/// loopback and must be refused by the guard (EACCES), not by anything else.
fn probe_egress_guard(config: &SandboxConfig, policies: LayerPolicies) -> LayerAvailability {
    let job = ScriptJob {
        code: "import errno, socket\n\
               try:\n    socket.create_connection(('127.0.0.1', 9), timeout=5).close()\n    print('connected')\n\
               except OSError as error:\n    print(errno.errorcode.get(error.errno, error.errno))"
            .to_owned(),
        allow_network: true,
        ..ScriptJob::default()
    };
    let (available, detail) = match run_blocking(config, policies, &job) {
        Ok(record) => {
            let applied = record
                .report
                .applied
                .iter()
                .any(|event| event.layer == layer::EGRESS_GUARD);
            let answer = record.outcome.stdout.trim().to_owned();
            match (applied, answer.as_str()) {
                (true, "EACCES") => (true, String::new()),
                _ => (
                    false,
                    record
                        .outcome
                        .syserr
                        .unwrap_or_else(|| format!("a loopback connection gave {answer:?}")),
                ),
            }
        }
        Err(reason) => (false, reason),
    };
    LayerAvailability {
        layer: layer::EGRESS_GUARD.to_owned(),
        available,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn availability(layer: &str, available: bool) -> LayerAvailability {
        LayerAvailability {
            layer: layer.to_owned(),
            available,
            detail: String::new(),
        }
    }

    #[test]
    fn strict_needs_landlock_seccomp_and_a_pid_namespace_or_a_uid() {
        let full = [
            availability(layer::LANDLOCK, true),
            availability(layer::SECCOMP, true),
            availability(layer::DEDICATED_UID, true),
        ];
        assert_eq!(readiness_problem(SandboxMode::Strict, &full, None), None);
        let without_landlock = [
            availability(layer::LANDLOCK, false),
            availability(layer::SECCOMP, true),
            availability(layer::PID_NAMESPACE, true),
        ];
        let problem = readiness_problem(SandboxMode::Strict, &without_landlock, None)
            .expect("landlock is missing");
        assert!(problem.contains("Landlock"), "{problem}");
        assert_eq!(
            readiness_problem(SandboxMode::BestEffort, &without_landlock, None),
            None
        );
    }

    #[test]
    fn no_mode_is_ready_without_a_working_interpreter() {
        for mode in SandboxMode::ALL {
            assert!(readiness_problem(*mode, &[], Some("no python".to_owned())).is_some());
        }
    }

    #[test]
    fn none_mode_applies_no_isolation_layer_even_when_offered() {
        let report = ProbeReport {
            mode: SandboxMode::None,
            interpreter: PathBuf::from("/usr/bin/python3"),
            layers: vec![availability(layer::LANDLOCK, true)],
            interpreter_runs: true,
            landlock_abi: Some(7),
            not_ready: None,
        };
        assert_eq!(
            run_policies(SandboxMode::None, &report),
            LayerPolicies::all(LayerPolicy::Skip)
        );
        let strict = run_policies(SandboxMode::Strict, &report);
        assert_eq!(strict.landlock, LayerPolicy::Require);
        assert_eq!(strict.seccomp, LayerPolicy::Skip);
    }
}
