//! The launch plan: what the parent asks the launcher to apply for one run, sent as a single
//! JSON argument. It holds no secret: secrets travel on stdin, straight to the interpreter.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::egress::EgressPolicy;

/// What to do about one isolation layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum LayerPolicy {
    /// Leave it out.
    Skip,
    /// Apply it if the host allows; otherwise record why not and go on.
    Try,
    /// Apply it or do not run the script at all.
    Require,
}

impl LayerPolicy {
    pub(crate) fn wanted(self) -> bool {
        self != LayerPolicy::Skip
    }
}

/// The policy of every layer of one run, in the order the launcher applies them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LayerPolicies {
    /// Only for a service that is not root: a user namespace grants the rights the other
    /// namespaces need. Root creates them directly and keeps host uids meaningful.
    pub user_namespace: LayerPolicy,
    pub pid_namespace: LayerPolicy,
    pub net_namespace: LayerPolicy,
    pub ipc_namespace: LayerPolicy,
    pub uts_namespace: LayerPolicy,
    pub dedicated_uid: LayerPolicy,
    pub no_new_privs: LayerPolicy,
    pub landlock: LayerPolicy,
    pub seccomp: LayerPolicy,
}

impl LayerPolicies {
    pub(crate) fn all(policy: LayerPolicy) -> LayerPolicies {
        LayerPolicies {
            user_namespace: policy,
            pid_namespace: policy,
            net_namespace: policy,
            ipc_namespace: policy,
            uts_namespace: policy,
            dedicated_uid: policy,
            no_new_privs: policy,
            landlock: policy,
            seccomp: policy,
        }
    }
}

/// The rlimits of every process of the run (the launcher's own included: it is small).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ResourceLimits {
    pub cpu_seconds: u64,
    pub memory_bytes: u64,
    /// `None` leaves RLIMIT_NPROC alone (no dedicated uid to count against).
    pub max_processes: Option<u64>,
    pub file_size_bytes: u64,
    pub open_files: u64,
}

/// What network a run has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum NetworkPlan {
    /// None: a network namespace of its own where the layer applies, and no sockets.
    Off,
    /// Outbound TCP, each connection judged by the egress guard against this policy.
    Guarded(EgressPolicy),
    /// The host's network, unguarded: only where no layer could guard it (mode `none`).
    Unguarded,
}

impl NetworkPlan {
    pub(crate) fn is_off(&self) -> bool {
        matches!(self, NetworkPlan::Off)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LaunchPlan {
    pub python: PathBuf,
    pub work_dir: PathBuf,
    pub read_only_paths: Vec<PathBuf>,
    pub limits: ResourceLimits,
    pub layers: LayerPolicies,
    /// The slot's uid and gid, used when `layers.dedicated_uid` is wanted.
    pub sandbox_uid: u32,
    pub network: NetworkPlan,
    /// If the service dies without killing the run, the launcher still ends it after this
    /// long (SIGALRM), taking the whole run with it.
    pub backstop_seconds: u32,
}

/// The launcher finds its plan after this marker, wherever the caller put it among its own
/// arguments (`sleuth sandbox-exec --plan {...}`).
pub(crate) const PLAN_FLAG: &str = "--plan";

impl LaunchPlan {
    pub(crate) fn to_argument(&self) -> Result<String, String> {
        serde_json::to_string(self).map_err(|error| format!("could not encode the plan: {error}"))
    }

    pub(crate) fn from_arguments(arguments: &[std::ffi::OsString]) -> Result<LaunchPlan, String> {
        let position = arguments
            .iter()
            .position(|argument| argument == PLAN_FLAG)
            .ok_or_else(|| format!("the launcher was started without {PLAN_FLAG}"))?;
        let encoded = arguments
            .get(position + 1)
            .and_then(|argument| argument.to_str())
            .ok_or_else(|| format!("{PLAN_FLAG} must be followed by the plan as UTF-8 JSON"))?;
        serde_json::from_str(encoded)
            .map_err(|error| format!("the launch plan is invalid: {error}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn sample_plan() -> LaunchPlan {
        LaunchPlan {
            python: PathBuf::from("/usr/bin/python3"),
            work_dir: PathBuf::from("/tmp/sleuth-sandbox/run-1"),
            read_only_paths: vec![PathBuf::from("/usr")],
            limits: ResourceLimits {
                cpu_seconds: 1,
                memory_bytes: 1 << 28,
                max_processes: Some(16),
                file_size_bytes: 1 << 20,
                open_files: 64,
            },
            layers: LayerPolicies::all(LayerPolicy::Require),
            sandbox_uid: 2_000_000_001,
            network: NetworkPlan::Guarded(EgressPolicy {
                allowed: Vec::new(),
                resolvers: vec!["10.255.255.53".parse().expect("address")],
                denied: vec!["198.199.0.0/16".parse().expect("network")],
                host_addresses: Vec::new(),
            }),
            backstop_seconds: 10,
        }
    }

    #[test]
    fn a_plan_survives_the_trip_through_the_command_line() {
        let plan = sample_plan();
        let arguments = vec![
            OsString::from("sandbox-exec"),
            OsString::from(PLAN_FLAG),
            OsString::from(plan.to_argument().expect("a plan always encodes")),
        ];
        assert_eq!(LaunchPlan::from_arguments(&arguments), Ok(plan));
    }

    #[test]
    fn a_missing_plan_is_an_error_that_says_so() {
        let error = LaunchPlan::from_arguments(&[OsString::from("sandbox-exec")])
            .expect_err("no plan was given");
        assert!(error.contains("--plan"), "{error}");
    }
}
