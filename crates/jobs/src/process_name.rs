//! How this process names itself where operators see it: as the holder of a job's lease
//! and as the runner of the script runs it starts.

/// A name that tells operators which process holds a lease.
pub fn worker_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    // The start time tells this process from a later one that reuses its pid.
    let start = sleuth_sandbox::process::own_start_time().unwrap_or(0);
    format!(
        "{}:{}:{start}:{}",
        host.trim(),
        std::process::id(),
        &uuid::Uuid::new_v4().to_string()[..8]
    )
}
