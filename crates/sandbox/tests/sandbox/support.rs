//! Shared helpers: a sandbox with small limits pointed at this crate's launcher binary, one
//! range of uids per test so that tests running side by side never share a slot uid.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use sleuth_sandbox::{Sandbox, SandboxConfig, SandboxMode, ScriptJob, ScriptOutcome};

/// Small limits keep the suite fast: one second of wall clock and of CPU.
pub(crate) const WALL_CLOCK: Duration = Duration::from_secs(1);
pub(crate) const SLOTS: usize = 2;
/// How long past its wall clock a killed run may take to be torn down, its whole PID
/// namespace reaped. It bounds a hang, not a speed: on a loaded machine (CI shares its
/// cores with builds) a fork bomb's hundreds of processes take over half a second.
pub(crate) const TEARDOWN_BOUND: Duration = Duration::from_secs(3);

static NEXT_UID_RANGE: AtomicU32 = AtomicU32::new(0);

pub(crate) fn config(mode: SandboxMode) -> SandboxConfig {
    // Far from any real user, distinct per test binary run and per test.
    let range = NEXT_UID_RANGE.fetch_add(1, Ordering::Relaxed);
    let uid_base = 2_100_000_000 + (std::process::id() % 100_000) * 1_000 + range * 10;
    SandboxConfig {
        launcher: PathBuf::from(env!("CARGO_BIN_EXE_sleuth-sandbox-exec")),
        launcher_args: Vec::new(),
        mode,
        wall_clock: WALL_CLOCK,
        cpu_seconds: 1,
        memory_bytes: 256 * 1024 * 1024,
        max_processes: 32,
        file_size_bytes: 1024 * 1024,
        uid_base,
        slots: SLOTS,
        // Shared by every test: run dirs have unique names and are removed after each run.
        work_root: std::env::temp_dir().join("sleuth-sandbox-tests"),
        ..SandboxConfig::default()
    }
}

pub(crate) fn strict() -> Sandbox {
    strict_with_slot_uids().0
}

/// A strict sandbox and the uids its slots run under.
pub(crate) fn strict_with_slot_uids() -> (Sandbox, std::ops::Range<u32>) {
    let config = config(SandboxMode::Strict);
    let slot_uids = config.uid_base..config.uid_base + SLOTS as u32;
    let sandbox = Sandbox::probe(config);
    if let Err(not_ready) = sandbox.ready() {
        panic!("{not_ready}; {}", sandbox.report());
    }
    (sandbox, slot_uids)
}

pub(crate) fn job(code: &str) -> ScriptJob {
    ScriptJob {
        code: code.to_owned(),
        ..ScriptJob::default()
    }
}

pub(crate) fn job_with_args(code: &str, trigger_args: serde_json::Value) -> ScriptJob {
    ScriptJob {
        trigger_args,
        ..job(code)
    }
}

pub(crate) async fn run(sandbox: &Sandbox, code: &str) -> ScriptOutcome {
    sandbox.run(job(code)).await
}

/// Host pids of every process whose real uid is in `uids`.
pub(crate) fn processes_of(uids: std::ops::Range<u32>) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().next()?.parse::<u32>().ok())
                .is_some_and(|uid| uids.contains(&uid))
        })
        .collect()
}

/// A directory of the test's own, outside every work dir, removed on drop.
pub(crate) struct TestDir {
    pub path: PathBuf,
}

impl TestDir {
    pub(crate) fn new(name: &str, mode: u32) -> TestDir {
        use std::os::unix::fs::PermissionsExt;
        let range = NEXT_UID_RANGE.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "sleuth-sandbox-{name}-{}-{range}",
            std::process::id()
        ));
        std::fs::create_dir_all(&path).expect("create the test dir");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .expect("set the test dir's mode");
        TestDir { path }
    }

    pub(crate) fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

pub(crate) fn path_text(path: &Path) -> String {
    path.to_str().expect("test paths are UTF-8").to_owned()
}

/// Lines the attack scripts print: `blocked <what>: <error>` or `escaped <what>: <detail>`.
pub(crate) fn assert_all_blocked(outcome: &ScriptOutcome, attempts: usize) {
    let blocked = outcome
        .stdout
        .lines()
        .filter(|line| line.starts_with("blocked "))
        .count();
    assert!(
        !outcome.stdout.contains("escaped "),
        "an attack got through:\n{}\nstderr:\n{}",
        outcome.stdout,
        outcome.stderr
    );
    assert_eq!(
        blocked, attempts,
        "every attempt must report itself blocked:\n{}\nstderr:\n{}",
        outcome.stdout, outcome.stderr
    );
}

/// A Python helper every attack script starts with.
pub(crate) const ATTEMPT_HELPER: &str = r#"
def attempt(what, action):
    try:
        detail = action()
    except BaseException as error:
        print(f"blocked {what}: {type(error).__name__}: {error}", flush=True)
    else:
        print(f"escaped {what}: {detail!r}"[:300], flush=True)
"#;
