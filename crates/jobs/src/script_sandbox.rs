//! The `[sandbox]` section of the settings, and how it becomes the sandbox crate's
//! configuration.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};
use sleuth_sandbox::{DEFAULT_READ_ONLY_PATHS, Destination, IpNet, SandboxConfig, SandboxMode};

const MIB: u64 = 1024 * 1024;

/// How response scripts run (DESIGN.md section 6). Every key can be set in the file's
/// `[sandbox]` section or as `SLEUTH_SANDBOX__<KEY>`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxSettings {
    /// The interpreter, by absolute path (a `python3` shim on PATH adds a process start).
    pub python: PathBuf,
    /// `strict` (scripts run only fully isolated; otherwise script endpoints answer 503),
    /// `best_effort` (every layer the host offers; each run records which), or `none`
    /// (development only: limits and a private work dir, but the service's own user).
    pub mode: String,
    /// A run is killed after this long.
    pub wall_clock_seconds: u64,
    pub cpu_seconds: u64,
    pub memory_mb: u64,
    /// Processes and threads of one run (under its dedicated uid).
    pub max_processes: u64,
    pub file_size_mb: u64,
    pub open_files: u64,
    /// Output beyond these sizes kills the run.
    pub stdout_cap_bytes: usize,
    pub stderr_cap_bytes: usize,
    /// Slot `n` runs as uid and gid `uid_base + n`, owned by nothing on the host. Two
    /// Sleuth services on one host need bases at least `slots` apart.
    pub uid_base: u32,
    /// How many scripts run at once in this process; more wait for a free slot.
    pub slots: usize,
    /// Where per-run work dirs are made (and removed after each run).
    pub work_root: PathBuf,
    /// How long a fired run may wait for a free slot before it is given up as `error`.
    pub queue_timeout_seconds: u64,
    /// A script allowed the network reaches the public internet only. These destinations
    /// are reachable besides: `10.0.5.20:443`, `[fd00::7]:8089`, `10.20.0.0/16`,
    /// `siem.corp.example:8089` or `siem.corp.example` (host names resolve when a run
    /// starts). A list, or in the environment one comma-separated string.
    #[serde(deserialize_with = "list_or_comma_separated")]
    pub allowed_destinations: Vec<String>,
    /// Public networks that are your own (CIDR), denied to scripts like private ones.
    #[serde(deserialize_with = "list_or_comma_separated")]
    pub denied_networks: Vec<String>,
}

/// A list of strings, or one string of comma-separated items (how an environment variable
/// can give a list).
fn list_or_comma_separated<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ListOrText {
        List(Vec<String>),
        Text(String),
    }
    Ok(match ListOrText::deserialize(deserializer)? {
        ListOrText::List(items) => items,
        ListOrText::Text(text) => text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(str::to_owned)
            .collect(),
    })
}

impl Default for SandboxSettings {
    fn default() -> SandboxSettings {
        let defaults = SandboxConfig::default();
        SandboxSettings {
            python: defaults.python,
            mode: defaults.mode.as_str().to_string(),
            wall_clock_seconds: defaults.wall_clock.as_secs(),
            cpu_seconds: defaults.cpu_seconds,
            memory_mb: defaults.memory_bytes / MIB,
            max_processes: defaults.max_processes,
            file_size_mb: defaults.file_size_bytes / MIB,
            open_files: defaults.open_files,
            stdout_cap_bytes: defaults.stdout_cap,
            stderr_cap_bytes: defaults.stderr_cap,
            uid_base: defaults.uid_base,
            slots: defaults.slots,
            work_root: defaults.work_root,
            queue_timeout_seconds: 300,
            allowed_destinations: Vec::new(),
            denied_networks: Vec::new(),
        }
    }
}

impl SandboxSettings {
    /// Why these settings cannot work, if they cannot.
    pub fn problem(&self) -> Option<String> {
        if SandboxMode::parse(&self.mode).is_none() {
            return Some(format!(
                "sandbox.mode '{}' is not one of strict, best_effort, none",
                self.mode
            ));
        }
        if !self.python.is_absolute() {
            return Some("sandbox.python must be an absolute path".into());
        }
        if self.wall_clock_seconds == 0 || self.cpu_seconds == 0 || self.slots == 0 {
            return Some(
                "sandbox.wall_clock_seconds, sandbox.cpu_seconds and sandbox.slots must be at least 1"
                    .into(),
            );
        }
        if let Err(problem) = self.allowed_destinations() {
            return Some(format!("sandbox.allowed_destinations: {problem}"));
        }
        if let Err(problem) = self.denied_networks() {
            return Some(format!("sandbox.denied_networks: {problem}"));
        }
        None
    }

    fn allowed_destinations(&self) -> Result<Vec<Destination>, String> {
        self.allowed_destinations
            .iter()
            .map(|text| Destination::parse(text))
            .collect()
    }

    fn denied_networks(&self) -> Result<Vec<IpNet>, String> {
        self.denied_networks
            .iter()
            .map(|text| {
                text.trim().parse::<IpNet>().map_err(|_| {
                    format!(
                        "'{}' is not a network in CIDR form (e.g. 203.0.113.0/24)",
                        text.chars().take(100).collect::<String>()
                    )
                })
            })
            .collect()
    }

    pub fn mode(&self) -> SandboxMode {
        SandboxMode::parse(&self.mode).unwrap_or_default()
    }

    pub fn wall_clock(&self) -> Duration {
        Duration::from_secs(self.wall_clock_seconds)
    }

    /// The sandbox configuration, with the program that runs the launcher: the `sleuth`
    /// binary re-executes itself as `sleuth sandbox-exec`.
    pub fn sandbox_config(&self, launcher: PathBuf, launcher_args: Vec<OsString>) -> SandboxConfig {
        SandboxConfig {
            python: self.python.clone(),
            launcher,
            launcher_args,
            mode: self.mode(),
            wall_clock: self.wall_clock(),
            cpu_seconds: self.cpu_seconds,
            memory_bytes: self.memory_mb.saturating_mul(MIB),
            max_processes: self.max_processes,
            file_size_bytes: self.file_size_mb.saturating_mul(MIB),
            open_files: self.open_files,
            stdout_cap: self.stdout_cap_bytes,
            stderr_cap: self.stderr_cap_bytes,
            uid_base: self.uid_base,
            slots: self.slots,
            work_root: self.work_root.clone(),
            read_only_paths: DEFAULT_READ_ONLY_PATHS.iter().map(PathBuf::from).collect(),
            // Validated when the settings load (`problem`); nothing invalid gets here.
            allowed_destinations: self.allowed_destinations().unwrap_or_default(),
            denied_networks: self.denied_networks().unwrap_or_default(),
            ..SandboxConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Settings;

    #[test]
    fn the_defaults_are_the_sandbox_crates_and_valid() {
        let settings = SandboxSettings::default();
        assert_eq!(settings.problem(), None);
        let config = settings.sandbox_config(PathBuf::from("/bin/sleuth"), Vec::new());
        let defaults = SandboxConfig::default();
        assert_eq!(config.mode, SandboxMode::Strict);
        assert_eq!(config.memory_bytes, defaults.memory_bytes);
        assert_eq!(config.wall_clock, defaults.wall_clock);
        assert_eq!(config.stdout_cap, defaults.stdout_cap);
    }

    #[test]
    fn destinations_are_read_from_a_list_or_a_comma_separated_variable() {
        let settings = Settings::load(
            Some((
                "sleuth.toml",
                "[sandbox]\nallowed_destinations = [\"10.0.5.20:443\", \"siem.corp.example\"]",
            )),
            vec![(
                "SLEUTH_SANDBOX__DENIED_NETWORKS".to_owned(),
                "198.199.0.0/16, 2001:4860::/32".to_owned(),
            )],
        )
        .expect("valid settings");
        let config = settings
            .sandbox
            .sandbox_config(PathBuf::from("/bin/sleuth"), Vec::new());
        assert_eq!(config.allowed_destinations.len(), 2);
        assert_eq!(config.denied_networks.len(), 2);
        let bad = Settings::load(
            Some((
                "sleuth.toml",
                "[sandbox]\nallowed_destinations = [\"http://x\"]",
            )),
            Vec::new(),
        )
        .expect_err("not a destination");
        assert!(
            bad.to_string().contains("sandbox.allowed_destinations"),
            "{bad}"
        );
        let bad = Settings::load(
            None,
            vec![(
                "SLEUTH_SANDBOX__DENIED_NETWORKS".to_owned(),
                "10.0.0.0/33".to_owned(),
            )],
        )
        .expect_err("not a network");
        assert!(bad.to_string().contains("CIDR"), "{bad}");
    }

    #[test]
    fn unknown_modes_and_relative_interpreters_are_refused() {
        let settings = SandboxSettings {
            mode: "lenient".into(),
            ..SandboxSettings::default()
        };
        assert!(
            settings
                .problem()
                .is_some_and(|problem| problem.contains("lenient"))
        );
        let settings = SandboxSettings {
            python: PathBuf::from("python3"),
            ..SandboxSettings::default()
        };
        assert!(settings.problem().is_some());
    }
}
