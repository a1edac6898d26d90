//! What the operator can tune about the sandbox, with defaults that suit a small server.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use ipnet::IpNet;

use crate::egress::Destination;

/// How much isolation a run must have before a script may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Scripts run only with Landlock, seccomp, and a PID namespace or a dedicated uid;
    /// without them the sandbox is not ready and no script runs.
    #[default]
    Strict,
    /// Every layer the host offers is applied, and each run records which ones did.
    BestEffort,
    /// Development only: rlimits, the wall clock, output caps, a clean environment and a
    /// private work dir, but the script runs as the service's own user.
    None,
}

impl SandboxMode {
    pub const ALL: &'static [SandboxMode] = &[
        SandboxMode::Strict,
        SandboxMode::BestEffort,
        SandboxMode::None,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::Strict => "strict",
            SandboxMode::BestEffort => "best_effort",
            SandboxMode::None => "none",
        }
    }

    /// Parses the spelling used in configuration files and on `/readyz`.
    pub fn parse(value: &str) -> Option<SandboxMode> {
        SandboxMode::ALL
            .iter()
            .copied()
            .find(|mode| mode.as_str() == value)
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// Everything the sandbox needs to know, loaded once by the caller.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// The interpreter, by absolute path: a `python3` found on PATH may be a slow shim.
    pub python: PathBuf,
    /// The program that runs the launcher: the `sleuth` binary re-executes itself.
    pub launcher: PathBuf,
    /// Arguments placed before the launch plan, e.g. `["sandbox-exec"]`.
    pub launcher_args: Vec<OsString>,
    pub mode: SandboxMode,
    /// Time a run may take from spawn to exit before the whole run is killed.
    pub wall_clock: Duration,
    /// RLIMIT_CPU of the interpreter: SIGXCPU at this many seconds, SIGKILL a second later.
    pub cpu_seconds: u64,
    /// RLIMIT_AS of every process of the run.
    pub memory_bytes: u64,
    /// RLIMIT_NPROC of the dedicated uid (threads count too). Without a dedicated uid it is
    /// not set: it would count the service's own threads, and root ignores it anyway.
    pub max_processes: u64,
    /// RLIMIT_FSIZE: the largest file a script may write.
    pub file_size_bytes: u64,
    /// RLIMIT_NOFILE: open descriptors per process.
    pub open_files: u64,
    /// Bytes of stdout kept; a script that writes more is killed.
    pub stdout_cap: usize,
    /// Bytes of stderr kept; a script that writes more is killed.
    pub stderr_cap: usize,
    /// Each slot runs under its own uid and gid, `uid_base + slot`, owned by nothing on
    /// the host. Two services on one host need distinct bases.
    pub uid_base: u32,
    /// How many scripts may run at once; more wait for a free slot.
    pub slots: usize,
    /// Per-run work dirs are created under it (the script's cwd, HOME and TMPDIR, the only
    /// place it may write) and removed after the run. Must be traversable by the slot uids.
    pub work_root: PathBuf,
    /// Files and directories the script may read (and execute) besides its work dir. The
    /// interpreter's own prefix is added automatically. Paths that do not exist are skipped.
    pub read_only_paths: Vec<PathBuf>,
    /// Where a script allowed the network may connect beyond the public internet: the
    /// operator's named destinations (an address, a network or a host name, each with an
    /// optional port). Everything else that is not public stays out of reach (`egress`).
    pub allowed_destinations: Vec<Destination>,
    /// Public networks that are the operator's own, denied to scripts like private ones.
    pub denied_networks: Vec<IpNet>,
    /// The resolver configuration whose nameservers a script allowed the network may ask
    /// (on port 53, over TCP).
    pub resolv_conf: PathBuf,
}

/// System directories an isolated CPython needs, plus the few files of /etc that name
/// resolution and TLS read when a script is allowed the network. Deliberately not all of
/// /etc: it holds the service's and other programs' configuration.
pub const DEFAULT_READ_ONLY_PATHS: &[&str] = &[
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/libx32",
    "/bin",
    "/sbin",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/protocols",
    "/etc/services",
    "/etc/mime.types",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
];

const MIB: u64 = 1024 * 1024;

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            python: PathBuf::from("/usr/bin/python3"),
            // The kernel resolves /proc/self/exe in the child before exec, which is still the
            // service's own binary: the same program as current_exe(), without a fallible call.
            launcher: PathBuf::from("/proc/self/exe"),
            launcher_args: vec![OsString::from("sandbox-exec")],
            mode: SandboxMode::Strict,
            wall_clock: Duration::from_secs(30),
            cpu_seconds: 30,
            memory_bytes: 1024 * MIB,
            max_processes: 64,
            file_size_bytes: 16 * MIB,
            open_files: 128,
            stdout_cap: 1024 * 1024,
            stderr_cap: 256 * 1024,
            uid_base: 2_000_000_000,
            slots: 2,
            work_root: std::env::temp_dir().join("sleuth-sandbox"),
            read_only_paths: DEFAULT_READ_ONLY_PATHS.iter().map(PathBuf::from).collect(),
            allowed_destinations: Vec::new(),
            denied_networks: Vec::new(),
            resolv_conf: PathBuf::from("/etc/resolv.conf"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_round_trips_through_its_spelling() {
        for mode in SandboxMode::ALL {
            assert_eq!(SandboxMode::parse(mode.as_str()), Some(*mode));
        }
        assert_eq!(SandboxMode::parse("lenient"), None);
    }

    #[test]
    fn the_default_is_strict_with_the_system_interpreter() {
        let config = SandboxConfig::default();
        assert_eq!(config.mode, SandboxMode::Strict);
        assert_eq!(config.python, PathBuf::from("/usr/bin/python3"));
        assert_eq!(config.stdout_cap, 1024 * 1024);
        assert_eq!(config.stderr_cap, 256 * 1024);
    }
}
