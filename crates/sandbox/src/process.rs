//! Whether a process still lives, told from /proc: the sandbox's sweep of run dirs left
//! behind, and the service's sweep of script runs whose process is gone, both ask.

/// This process's start time, in clock ticks since boot (field 22 of /proc/self/stat): with
/// the pid, it names this process for good, since a reused pid starts later.
pub fn own_start_time() -> Option<u64> {
    stat_of("self").map(|stat| stat.start_time)
}

/// The start time of process `pid`, as `own_start_time` gives it, if it exists.
pub fn start_time_of(pid: u32) -> Option<u64> {
    stat_of(&pid.to_string()).map(|stat| stat.start_time)
}

/// Whether `pid` is a live process, and, when `started_at` is given, the same process that
/// started then (not a later one that reuses the pid). A zombie (killed, not yet reaped by
/// its parent) is not alive: it will run nothing more.
pub fn is_alive(pid: u32, started_at: Option<u64>) -> bool {
    match stat_of(&pid.to_string()) {
        Some(stat) => stat.state != 'Z' && started_at.is_none_or(|start| start == stat.start_time),
        None => false,
    }
}

struct Stat {
    state: char,
    start_time: u64,
}

fn stat_of(pid: &str) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces and parentheses
    // itself; the fields after the last ')' are plain.
    let after_name = &text[text.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Field 3 is the state; the start time is field 22, 19 fields further on.
    let start_time = fields.nth(18)?.parse().ok()?;
    Some(Stat { state, start_time })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_named_by_its_start_time() {
        let start = own_start_time().expect("a start time");
        assert!(is_alive(std::process::id(), None));
        assert!(is_alive(std::process::id(), Some(start)));
        assert!(!is_alive(std::process::id(), Some(start + 1)));
        assert!(!is_alive(4_194_305, None));
    }

    #[test]
    fn a_killed_child_that_is_not_yet_reaped_is_not_alive() {
        #[allow(clippy::disallowed_methods)] // A test of process life needs a process.
        let mut child = std::process::Command::new("/bin/sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        assert!(is_alive(child.id(), None));
        child.kill().expect("kill");
        // Not reaped yet: a zombie until wait().
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while is_alive(child.id(), None) {
            assert!(std::time::Instant::now() < deadline, "still alive");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(std::path::Path::new(&format!("/proc/{}", child.id())).exists());
        child.wait().expect("reap");
    }
}
