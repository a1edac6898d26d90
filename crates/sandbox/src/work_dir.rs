//! Run directories: each run's private work dir (its cwd, HOME and TMPDIR, the only place it
//! may write), made before the launcher starts and removed after the run, and the sweep at
//! start-up of dirs that a process which died mid-run left behind.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::SandboxConfig;

static RUN_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Every run dir's name starts with this and the pid of the process that made it.
const RUN_PREFIX: &str = "run-";

/// Creates the run's private directory: mode 0700, owned by the slot uid when the script
/// will run as it.
pub(crate) fn create(config: &SandboxConfig, owner: Option<u32>) -> Result<PathBuf, String> {
    if !config.work_root.exists() {
        std::fs::create_dir_all(&config.work_root)
            .map_err(|error| format!("cannot create the work root: {error}"))?;
        // Traversable but not listable: a slot uid reaches its own dir and sees no other.
        std::fs::set_permissions(&config.work_root, std::fs::Permissions::from_mode(0o711))
            .map_err(|error| format!("cannot set the work root's mode: {error}"))?;
    }
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or(0);
    let name = format!(
        "{RUN_PREFIX}{}-{}-{nanos}",
        std::process::id(),
        RUN_COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let work_dir = config.work_root.join(name);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&work_dir)
        .map_err(|error| format!("cannot create the work dir: {error}"))?;
    if let Some(uid) = owner {
        std::os::unix::fs::chown(&work_dir, Some(uid), Some(uid))
            .map_err(|error| format!("cannot hand the work dir to uid {uid}: {error}"))?;
    }
    Ok(work_dir)
}

/// Removes a run dir whatever the script did to it (read-only dirs, mode 000 files).
/// Blocking.
pub(crate) fn remove(work_dir: &Path) {
    if std::fs::remove_dir_all(work_dir).is_ok() || !work_dir.exists() {
        return;
    }
    make_writable(work_dir);
    let _ = std::fs::remove_dir_all(work_dir);
}

fn make_writable(directory: &Path) {
    let _ = std::fs::set_permissions(directory, std::fs::Permissions::from_mode(0o700));
    let Ok(entries) = std::fs::read_dir(directory) else {
        return;
    };
    for entry in entries.flatten() {
        // file_type does not follow symlinks: never walk into a link the script planted.
        if entry.file_type().is_ok_and(|file_type| file_type.is_dir()) {
            make_writable(&entry.path());
        }
    }
}

/// Removes the run dirs under `work_root` whose making process is gone (killed mid-run,
/// so nothing removed them). Dirs of live processes, other services sharing the root
/// among them, are left alone. Blocking; returns how many were removed.
pub(crate) fn sweep_stale(work_root: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(work_root) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(RUN_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let is_dir = entry.file_type().is_ok_and(|file_type| file_type.is_dir());
        if is_dir && pid != std::process::id() && !crate::process::is_alive(pid, None) {
            remove(&entry.path());
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_removes_only_the_dirs_of_processes_that_are_gone() {
        let root = std::env::temp_dir().join(format!("sleuth-sweep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("root");
        // No process has pid 4194304 or more (the kernel's largest pid_max is 2^22).
        let dead = root.join("run-4194305-0-1");
        let mine = root.join(format!("run-{}-0-1", std::process::id()));
        let other = root.join("not-a-run");
        for dir in [&dead, &mine, &other] {
            std::fs::create_dir_all(dir.join("nested")).expect("dir");
        }
        // A read-only dir inside, as a script may leave.
        std::fs::set_permissions(dead.join("nested"), std::fs::Permissions::from_mode(0o500))
            .expect("mode");
        assert_eq!(sweep_stale(&root), 1);
        assert!(!dead.exists() && mine.exists() && other.exists());
        let _ = std::fs::remove_dir_all(&root);
    }
}
