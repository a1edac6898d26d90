//! The Landlock layer: the script may read (and execute) the system directories Python needs,
//! read and write its own work dir, and nothing else on the filesystem; it may not bind a
//! TCP port, nor connect one unless the operator allowed the network (the egress guard
//! judges those connections; Landlock knows ports, not addresses); and it may not signal or
//! reach abstract Unix sockets of processes outside its own domain (the launcher, the
//! service). Landlock fails open: the status must be checked, and NotEnforced is an error.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

/// The newest ABI whose rights this code was written and tested against; the crate's
/// best-effort mode downgrades on older kernels and reports it as partial enforcement.
const TARGET_ABI: ABI = ABI::V7;

/// Devices a script may write to besides its work dir.
const WRITABLE_DEVICES: &[&str] = &["/dev/null"];

/// The Landlock ABI the running kernel offers, or `None` when Landlock is absent or off.
pub(crate) fn kernel_abi() -> Option<i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag, the call only
    // returns a number; it reads and writes no memory.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(version).ok().filter(|version| *version > 0)
}

/// The prefix of the interpreter's installation (`/usr` for `/usr/bin/python3`), which must be
/// readable for the standard library to load.
pub(crate) fn interpreter_prefix(python: &Path) -> Option<PathBuf> {
    let resolved = std::fs::canonicalize(python).ok()?;
    let prefix = resolved.parent()?.parent()?;
    (prefix != Path::new("/")).then(|| prefix.to_path_buf())
}

/// Restricts the calling thread and its future children. Returns a short description of
/// what is enforced, for the run's isolation record.
pub(crate) fn restrict_self(
    read_only_paths: &[PathBuf],
    work_dir: &Path,
    allow_connect: bool,
) -> Result<String, String> {
    let failed = |error: landlock::RulesetError| format!("landlock: {error}");
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(TARGET_ABI))
        .map_err(failed)?
        .scope(Scope::from_all(TARGET_ABI))
        .map_err(failed)?;
    // Handled rights with no rule granting them are denied.
    let denied_network = if allow_connect {
        AccessNet::BindTcp.into()
    } else {
        AccessNet::from_all(TARGET_ABI)
    };
    ruleset = ruleset.handle_access(denied_network).map_err(failed)?;
    let work_dir_rule = PathBeneath::new(
        PathFd::new(work_dir).map_err(|error| format!("landlock: work dir: {error}"))?,
        AccessFs::from_all(TARGET_ABI),
    );
    let status = ruleset
        .create()
        .map_err(failed)?
        // path_beneath_rules skips paths that do not exist and narrows rights on files.
        .add_rules(path_beneath_rules(
            read_only_paths,
            AccessFs::from_read(TARGET_ABI),
        ))
        .map_err(failed)?
        .add_rules(path_beneath_rules(
            WRITABLE_DEVICES,
            AccessFs::from_read(TARGET_ABI) | AccessFs::from_write(TARGET_ABI),
        ))
        .map_err(failed)?
        .add_rule(work_dir_rule)
        .map_err(failed)?
        .restrict_self()
        .map_err(failed)?;
    let abi = kernel_abi().unwrap_or(0);
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(format!("abi {abi}")),
        RulesetStatus::PartiallyEnforced => Ok(format!("abi {abi} partial")),
        RulesetStatus::NotEnforced => {
            Err("landlock: the kernel does not enforce the ruleset".to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_interpreter_lives_under_usr() {
        if Path::new("/usr/bin/python3").exists() {
            assert_eq!(
                interpreter_prefix(Path::new("/usr/bin/python3")),
                Some(PathBuf::from("/usr"))
            );
        }
        assert_eq!(interpreter_prefix(Path::new("/no/such/python")), None);
    }
}
