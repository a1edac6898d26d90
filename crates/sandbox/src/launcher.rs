//! The launcher: the small single-threaded process the service re-executes for every run. It
//! isolates itself step by step, each step narrowing what the next ones and the script can
//! do, then becomes the interpreter. Three processes take part:
//!
//! - the launcher (the parent's child): new session, rlimits, new namespaces, then waits;
//! - the reaper, its child: pid 1 of the new PID namespace, reaps orphans, and when it exits
//!   the kernel kills every process left in the namespace (detached daemons included); for
//!   a script allowed the network it also runs the egress guard (`egress_guard`);
//! - the script process, the reaper's child: drops to the slot's uid, no_new_privs,
//!   Landlock, seccomp (handing the filter's listener to the reaper when the network is
//!   guarded), then execs Python on the fixed bootstrap.
//!
//! Everything they report goes to the status descriptor (see `status`).

use std::convert::Infallible;
use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use crate::egress::EgressPolicy;
use crate::egress_guard::{self, Guard};
use crate::landlock_layer;
use crate::lifeline::LIFELINE_DESCRIPTOR;
use crate::plan::{LaunchPlan, LayerPolicy, NetworkPlan, ResourceLimits};
use crate::seccomp;
use crate::status::{STATUS_DESCRIPTOR, status_line};

/// The Python code every script runs under.
pub(crate) const BOOTSTRAP: &str = include_str!("bootstrap.py");

/// Exit code of the launcher when it could not set a run up (the reason is on the status
/// descriptor); the parent reads the status, not this code, but a human may see it.
const SETUP_FAILED_EXIT_CODE: i32 = 125;
const EXEC_FAILED_EXIT_CODE: i32 = 127;

/// Writes status lines. Before the plan is known to be sane, a missing status descriptor
/// falls back to stderr so that a human running the launcher by hand sees the error.
#[derive(Clone, Copy)]
struct StatusWriter {
    descriptor: i32,
}

impl StatusWriter {
    fn open() -> StatusWriter {
        // SAFETY: F_GETFD only inspects the descriptor table entry.
        let status_is_open = unsafe { libc::fcntl(STATUS_DESCRIPTOR, libc::F_GETFD) } != -1;
        StatusWriter {
            descriptor: if status_is_open {
                STATUS_DESCRIPTOR
            } else {
                libc::STDERR_FILENO
            },
        }
    }

    fn write(&self, word: &str, message: &str) {
        let _ = write_all(self.descriptor, status_line(word, message).as_bytes());
    }

    fn applied(&self, layer: &str, detail: &str) {
        self.write("applied", &format!("{layer} {detail}"));
    }

    /// Applies one layer according to its policy: a required layer that fails stops the run;
    /// a tried one is recorded as unavailable.
    fn layer(
        &self,
        policy: LayerPolicy,
        layer: &str,
        apply: impl FnOnce() -> Result<String, String>,
    ) -> Result<bool, String> {
        if !policy.wanted() {
            return Ok(false);
        }
        match apply() {
            Ok(detail) => {
                self.applied(layer, &detail);
                Ok(true)
            }
            Err(reason) if policy == LayerPolicy::Require => {
                Err(format!("required layer {layer} failed: {reason}"))
            }
            Err(reason) => {
                self.write("unavailable", &format!("{layer} {reason}"));
                Ok(false)
            }
        }
    }
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn os_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

/// Entry point of the launcher process (`sleuth sandbox-exec`). Must be called before any
/// thread starts (before an async runtime): it forks, and it restricts only its own thread.
pub fn launcher_main(arguments: Vec<OsString>) -> ! {
    let status = StatusWriter::open();
    let exit_code = match launch(&arguments, &status) {
        Ok(code) => code,
        Err(reason) => {
            status.write("fatal", &reason);
            SETUP_FAILED_EXIT_CODE
        }
    };
    std::process::exit(exit_code)
}

fn launch(arguments: &[OsString], status: &StatusWriter) -> Result<i32, String> {
    let plan = LaunchPlan::from_arguments(arguments)?;
    if status.descriptor != STATUS_DESCRIPTOR {
        return Err("the status descriptor 3 is not open".to_owned());
    }
    ensure_single_threaded()?;
    install_termination_handler();
    close_inherited_descriptors();
    // The parent made us a session leader before exec (so it can kill our group from the
    // first instant); in case it did not, do it here. No controlling terminal either way.
    // SAFETY: setsid takes no arguments; failure (already a leader) is harmless.
    unsafe { libc::setsid() };

    apply_resource_limits(&plan.limits)?;
    status.applied("rlimits", "");
    // SAFETY: alarm only arms a timer. Its default action ends this process, and the
    // reaper's parent-death signal then ends the run: a backstop if the service died.
    unsafe { libc::alarm(plan.backstop_seconds) };

    let in_pid_namespace = enter_namespaces(&plan, status)?;
    let sweeps_uid = plan.layers.dedicated_uid.wanted() && !in_pid_namespace;
    if sweeps_uid {
        // Without a PID namespace, a process a previous run of this slot left behind (it
        // was killed at its deadline) could still be alive under the slot's uid.
        kill_every_process_of(plan.sandbox_uid);
    }

    // SIGTERM stays blocked across fork until the reaper's pid is known to the handler.
    let blocked = block_termination();
    // SAFETY: the launcher is single threaded (checked above), so the child may run
    // arbitrary code after fork.
    match unsafe { libc::fork() } {
        -1 => Err(os_error("fork of the reaper")),
        0 => {
            // SAFETY: the reaper wants the default disposition back: as pid 1 of its
            // namespace that means the script cannot signal it at all. The lifeline is the
            // launcher's to watch.
            unsafe {
                libc::signal(libc::SIGTERM, libc::SIG_DFL);
                libc::close(LIFELINE_DESCRIPTOR);
            }
            restore_signal_mask(&blocked);
            reaper(&plan, status, in_pid_namespace, sweeps_uid)
        }
        reaper_pid => {
            REAPER_PID.store(reaper_pid, Ordering::SeqCst);
            restore_signal_mask(&blocked);
            // Only the script's processes may hold its pipes: the parent reads them to EOF.
            close_standard_streams();
            Ok(wait_for_reaper(reaper_pid, &plan.work_dir))
        }
    }
}

/// The reaper's pid, for the SIGTERM handler; 0 until it exists.
static REAPER_PID: AtomicI32 = AtomicI32::new(0);

/// How the parent stops a run (wall clock, output cap): SIGTERM to the launcher, which kills
/// the reaper and keeps waiting. The reaper's exit, as pid 1 of its namespace, returns only
/// once the kernel has killed and reaped every process in it, so when the launcher exits the
/// run has left nothing behind. (SIGKILL to the launcher would return at once, while the
/// namespace is still being torn down.)
extern "C" fn on_termination_request(_signal: libc::c_int) {
    let reaper_pid = REAPER_PID.load(Ordering::SeqCst);
    // SAFETY: kill and _exit are async-signal-safe.
    unsafe {
        if reaper_pid > 0 {
            libc::kill(reaper_pid, libc::SIGKILL);
        } else {
            libc::_exit(128 + libc::SIGTERM);
        }
    }
}

fn install_termination_handler() {
    let handler: extern "C" fn(libc::c_int) = on_termination_request;
    // SAFETY: the handler only calls async-signal-safe functions.
    unsafe { libc::signal(libc::SIGTERM, handler as libc::sighandler_t) };
}

fn block_termination() -> libc::sigset_t {
    // SAFETY: the sets are plain values initialised by sigemptyset before use.
    unsafe {
        let mut termination: libc::sigset_t = std::mem::zeroed();
        let mut previous: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut termination);
        libc::sigaddset(&mut termination, libc::SIGTERM);
        libc::sigprocmask(libc::SIG_BLOCK, &termination, &mut previous);
        previous
    }
}

fn restore_signal_mask(previous: &libc::sigset_t) {
    // SAFETY: restores a mask sigprocmask returned.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, previous, std::ptr::null_mut()) };
}

/// The launcher forks; with a second thread, the children would inherit locks held by a
/// thread that does not exist in them, and the restrictions would cover one thread only.
fn ensure_single_threaded() -> Result<(), String> {
    let process_status = std::fs::read_to_string("/proc/self/status")
        .map_err(|error| format!("cannot read /proc/self/status: {error}"))?;
    let threads = process_status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .map(str::trim);
    match threads {
        Some("1") => Ok(()),
        Some(count) => Err(format!(
            "the launcher must be single threaded, it has {count} threads"
        )),
        None => Err("cannot count the launcher's threads".to_owned()),
    }
}

/// A descriptor the service leaked without close-on-exec must not reach the script. The
/// status pipe (3) and the lifeline (4) stay.
fn close_inherited_descriptors() {
    let first = (LIFELINE_DESCRIPTOR + 1) as libc::c_uint;
    // SAFETY: close_range only closes descriptors; none above 3 is used by this process.
    unsafe { libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0) };
}

fn close_standard_streams() {
    for descriptor in [libc::STDIN_FILENO, libc::STDOUT_FILENO, libc::STDERR_FILENO] {
        // SAFETY: closing a standard stream this process no longer uses.
        unsafe { libc::close(descriptor) };
    }
}

fn set_limit(resource: libc::__rlimit_resource_t, soft: u64, hard: u64) -> Result<(), String> {
    let mut current = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into `current`.
    if unsafe { libc::getrlimit(resource, &mut current) } != 0 {
        return Err(os_error("getrlimit"));
    }
    // Without CAP_SYS_RESOURCE a hard limit can only go down; never ask for more.
    let hard = hard.min(current.rlim_max);
    let wanted = libc::rlimit {
        rlim_cur: soft.min(hard),
        rlim_max: hard,
    };
    // SAFETY: setrlimit reads one rlimit.
    if unsafe { libc::setrlimit(resource, &wanted) } != 0 {
        return Err(os_error(&format!("setrlimit {resource}")));
    }
    Ok(())
}

/// Limits inherited by every process of the run. RLIMIT_NPROC only binds processes that are
/// not root, which is why the dedicated uid matters for fork bombs. The address-space
/// limit is the script process's alone (`script_process`).
fn apply_resource_limits(limits: &ResourceLimits) -> Result<(), String> {
    // SIGXCPU at the soft limit lets the parent tell a CPU-time overrun from a crash; the
    // hard limit a second later is SIGKILL for a script that ignores SIGXCPU.
    set_limit(
        libc::RLIMIT_CPU,
        limits.cpu_seconds,
        limits.cpu_seconds.saturating_add(1),
    )?;
    set_limit(
        libc::RLIMIT_FSIZE,
        limits.file_size_bytes,
        limits.file_size_bytes,
    )?;
    set_limit(libc::RLIMIT_NOFILE, limits.open_files, limits.open_files)?;
    set_limit(libc::RLIMIT_CORE, 0, 0)?;
    if let Some(max_processes) = limits.max_processes {
        set_limit(libc::RLIMIT_NPROC, max_processes, max_processes)?;
    }
    Ok(())
}

fn unshare(flags: libc::c_int, what: &str) -> Result<String, String> {
    // SAFETY: unshare only changes this process's namespace membership.
    if unsafe { libc::unshare(flags) } == 0 {
        Ok(String::new())
    } else {
        Err(os_error(what))
    }
}

/// Creates the namespaces. Returns whether the children live in a new PID namespace.
fn enter_namespaces(plan: &LaunchPlan, status: &StatusWriter) -> Result<bool, String> {
    let layers = &plan.layers;
    status.layer(
        layers.user_namespace,
        "user-namespace",
        enter_user_namespace,
    )?;
    // A PID namespace takes effect for the children: the reaper will be its pid 1, the
    // script cannot see or signal anything outside it, and when the reaper exits the
    // kernel kills whatever is left, setsid daemons included.
    let in_pid_namespace = status.layer(layers.pid_namespace, "pid-namespace", || {
        unshare(libc::CLONE_NEWPID, "unshare(CLONE_NEWPID)")
    })?;
    // A fresh network namespace has only a loopback that is down: no route anywhere, the
    // host's loopback services included. A script allowed the network keeps the host's, and
    // the egress guard decides where it may connect.
    if plan.network.is_off() {
        status.layer(layers.net_namespace, "net-namespace", || {
            unshare(libc::CLONE_NEWNET, "unshare(CLONE_NEWNET)")
        })?;
    }
    // System V IPC and the host name are shared host state a script must not touch.
    status.layer(layers.ipc_namespace, "ipc-namespace", || {
        unshare(libc::CLONE_NEWIPC, "unshare(CLONE_NEWIPC)")
    })?;
    status.layer(layers.uts_namespace, "uts-namespace", || {
        unshare(libc::CLONE_NEWUTS, "unshare(CLONE_NEWUTS)")
    })?;
    Ok(in_pid_namespace)
}

/// For a service that is not root: a user namespace in which it may create the others. The
/// service's own uid and gid are mapped to themselves, so files the script writes in its
/// work dir belong to the service and the script is not root inside either.
fn enter_user_namespace() -> Result<String, String> {
    // SAFETY: geteuid and getegid cannot fail.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    if uid == 0 {
        return Err("not needed as root".to_owned());
    }
    unshare(libc::CLONE_NEWUSER, "unshare(CLONE_NEWUSER)")?;
    let write = |path: &str, content: String| {
        std::fs::write(path, content).map_err(|error| format!("{path}: {error}"))
    };
    write("/proc/self/setgroups", "deny".to_owned())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    Ok(String::new())
}

/// Kills every process of `uid`, from a short-lived child that takes that uid: kill(-1)
/// reaches exactly the processes a process may signal, and for a plain uid those are its own.
fn kill_every_process_of(uid: u32) {
    // SAFETY: single threaded; the child only calls async-signal-safe functions.
    match unsafe { libc::fork() } {
        0 => {
            // SAFETY: dropping to `uid` in this child, then signalling; no memory involved.
            unsafe {
                if libc::setresgid(uid, uid, uid) == 0 && libc::setresuid(uid, uid, uid) == 0 {
                    libc::kill(-1, libc::SIGKILL);
                }
                libc::_exit(0)
            }
        }
        -1 => {}
        sweeper_pid => {
            wait_for_exit_code(sweeper_pid);
        }
    }
}

/// Waits for the reaper, and ends the run at once if the service dies meanwhile: the
/// lifeline reads end of file, the reaper is killed (and with it, as pid 1, everything in
/// its namespace), and the work dir, which the service would have removed, goes too.
fn wait_for_reaper(reaper_pid: libc::pid_t, work_dir: &Path) -> i32 {
    // SAFETY: F_GETFD only inspects the descriptor table entry.
    let has_lifeline = unsafe { libc::fcntl(LIFELINE_DESCRIPTOR, libc::F_GETFD) } != -1;
    // SAFETY: pidfd_open takes integers and returns a new descriptor.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, reaper_pid, 0) };
    let Ok(pidfd) = RawFd::try_from(pidfd) else {
        return wait_for_exit_code(reaper_pid);
    };
    if pidfd < 0 || !has_lifeline {
        return wait_for_exit_code(reaper_pid);
    }
    loop {
        let mut watched = [
            libc::pollfd {
                fd: pidfd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: LIFELINE_DESCRIPTOR,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: poll reads and writes the two pollfd entries of the array.
        let ready = unsafe { libc::poll(watched.as_mut_ptr(), 2, -1) };
        if ready < 0 {
            if last_errno() == libc::EINTR {
                continue;
            }
            return wait_for_exit_code(reaper_pid);
        }
        if watched[1].revents != 0 {
            // Nobody ever writes to the lifeline: anything on it means the service is gone.
            // SAFETY: kill takes integers; the reaper is our own unreaped child.
            unsafe { libc::kill(reaper_pid, libc::SIGKILL) };
            let code = wait_for_exit_code(reaper_pid);
            crate::work_dir::remove(work_dir);
            return code;
        }
        if watched[0].revents != 0 {
            return wait_for_exit_code(reaper_pid);
        }
    }
}

/// Waits for one child and turns its end into an exit code, shell style.
fn wait_for_exit_code(pid: libc::pid_t) -> i32 {
    loop {
        let mut wait_status = 0;
        // SAFETY: waitpid writes the status of our own child into `wait_status`.
        let result = unsafe { libc::waitpid(pid, &mut wait_status, 0) };
        if result == pid {
            return if libc::WIFEXITED(wait_status) {
                libc::WEXITSTATUS(wait_status)
            } else {
                128 + libc::WTERMSIG(wait_status)
            };
        }
        if result == -1 && last_errno() != libc::EINTR {
            return SETUP_FAILED_EXIT_CODE;
        }
    }
}

/// The reaper: pid 1 of the run's PID namespace (or a subreaper without one), and the
/// egress guard's home when the script is allowed the network.
fn reaper(plan: &LaunchPlan, status: &StatusWriter, in_pid_namespace: bool, sweeps_uid: bool) -> ! {
    // SAFETY: prctl with integer arguments only. If the launcher is killed (wall clock,
    // output cap), the reaper dies with it, and with the reaper the whole namespace.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if !in_pid_namespace {
            // Orphans of the script become our children instead of the host init's.
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
        }
    }
    let handoff = match &plan.network {
        NetworkPlan::Guarded(_) => match ListenerHandoff::new() {
            Ok(handoff) => Some(handoff),
            Err(reason) => {
                status.write("fatal", &reason);
                // SAFETY: ending this forked child without running the parent's exit handlers.
                unsafe { libc::_exit(SETUP_FAILED_EXIT_CODE) }
            }
        },
        NetworkPlan::Off | NetworkPlan::Unguarded => None,
    };
    // SAFETY: still single threaded after fork (the guard's threads start after this).
    let script_pid = match unsafe { libc::fork() } {
        -1 => {
            status.write("fatal", &os_error("fork of the script process"));
            // SAFETY: ending this forked child without running the parent's exit handlers.
            unsafe { libc::_exit(SETUP_FAILED_EXIT_CODE) }
        }
        0 => script_process(plan, status, handoff.map(ListenerHandoff::script_side)),
        script_pid => script_pid,
    };
    // The script gets a process group of its own, so that its background children can be
    // killed together with it below (set from both sides: whichever runs first wins).
    // SAFETY: setpgid on our own child.
    unsafe { libc::setpgid(script_pid, script_pid) };
    close_standard_streams();
    let guard = match (handoff, &plan.network) {
        (Some(handoff), NetworkPlan::Guarded(policy)) => {
            start_guard(handoff.reaper_side(), script_pid, policy, status)
        }
        _ => None,
    };
    let script_end = reap_until(script_pid);
    match script_end {
        Some(end) if libc::WIFEXITED(end) => {
            status.write("exit", &libc::WEXITSTATUS(end).to_string());
        }
        Some(end) => status.write("signal", &libc::WTERMSIG(end).to_string()),
        None => status.write("fatal", "lost track of the script process"),
    }
    if let Some(guard) = guard {
        let unreported = guard.unreported_denials();
        if unreported > 0 {
            status.write("denied-more", &unreported.to_string());
        }
    }
    if sweeps_uid {
        kill_every_process_of(plan.sandbox_uid);
    }
    // SAFETY: ending the forked reaper. In a PID namespace this kills every process left,
    // and with the reaper go the guard's threads.
    unsafe { libc::_exit(0) }
}

/// Takes the seccomp listener from the script process and starts the egress guard on it.
/// On failure the script process finds the handoff closed and stops before exec.
fn start_guard(
    handoff: ReaperSide,
    script_pid: libc::pid_t,
    policy: &EgressPolicy,
    status: &StatusWriter,
) -> Option<Arc<Guard>> {
    // The script process sends the listener's number once its filter is in place; nothing
    // (end of file) means it stopped before that and reports why itself.
    let listener_number = handoff.receive_listener_number()?;
    let listener = match take_descriptor(script_pid, listener_number) {
        Ok(listener) => listener,
        Err(reason) => {
            status.write("fatal", &format!("egress guard: {reason}"));
            return None;
        }
    };
    let mut policy = policy.clone();
    policy.host_addresses.extend(egress_guard::host_addresses());
    let writer = *status;
    let guard = Guard::new(
        listener,
        policy,
        Box::new(move |denial| writer.write("denied", denial)),
    );
    if let Err(reason) = Guard::start(&guard) {
        status.write("fatal", &reason);
        return None;
    }
    status.applied("egress-guard", "");
    handoff.release_script();
    Some(guard)
}

/// A duplicate of another process's descriptor (pidfd_getfd). The reaper is that process's
/// parent, which is what ptrace's access rules (and Yama's) ask of the caller.
fn take_descriptor(pid: libc::pid_t, descriptor: RawFd) -> Result<OwnedFd, String> {
    // SAFETY: pidfd_open takes integers and returns a new descriptor.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let pidfd = RawFd::try_from(pidfd)
        .ok()
        .filter(|fd| *fd >= 0)
        .ok_or_else(|| os_error("pidfd_open"))?;
    // SAFETY: the descriptor was just created for us.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    // SAFETY: pidfd_getfd takes integers and returns a new close-on-exec descriptor.
    let duplicate =
        unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), descriptor, 0) };
    let duplicate = RawFd::try_from(duplicate)
        .ok()
        .filter(|fd| *fd >= 0)
        .ok_or_else(|| os_error("pidfd_getfd"))?;
    // SAFETY: the descriptor was just created for us.
    Ok(unsafe { OwnedFd::from_raw_fd(duplicate) })
}

/// Two pipes between the reaper and the script process, made before the fork: the script
/// process sends the number of its seccomp listener, and waits for the reaper to say it has
/// taken it before it becomes the interpreter (the listener is close-on-exec: once exec has
/// closed the script's copy, a listener nobody holds fails every `connect` with ENOSYS).
struct ListenerHandoff {
    number_read: OwnedFd,
    number_write: OwnedFd,
    taken_read: OwnedFd,
    taken_write: OwnedFd,
}

/// The script process's ends of the handoff.
struct ScriptSide {
    number_write: OwnedFd,
    taken_read: OwnedFd,
}

/// The reaper's ends of the handoff.
struct ReaperSide {
    number_read: OwnedFd,
    taken_write: OwnedFd,
}

impl ListenerHandoff {
    fn new() -> Result<ListenerHandoff, String> {
        let (number_read, number_write) = pipe()?;
        let (taken_read, taken_write) = pipe()?;
        Ok(ListenerHandoff {
            number_read,
            number_write,
            taken_read,
            taken_write,
        })
    }

    /// Called in the script process: the reaper's ends close here.
    fn script_side(self) -> ScriptSide {
        ScriptSide {
            number_write: self.number_write,
            taken_read: self.taken_read,
        }
    }

    /// Called in the reaper: the script's ends close here, so that a script process that
    /// stops early is seen as end of file.
    fn reaper_side(self) -> ReaperSide {
        ReaperSide {
            number_read: self.number_read,
            taken_write: self.taken_write,
        }
    }
}

impl ScriptSide {
    fn hand_over(self, listener: &OwnedFd) -> Result<(), String> {
        let number = listener.as_raw_fd().to_le_bytes();
        if write_all(self.number_write.as_raw_fd(), &number).is_err() {
            return Err("egress guard: cannot hand the listener to the reaper".to_owned());
        }
        drop(self.number_write);
        let mut taken = [0u8; 1];
        match read_exact(&self.taken_read, &mut taken) {
            Ok(()) => Ok(()),
            Err(()) => Err("egress guard: the reaper did not take the listener".to_owned()),
        }
    }
}

impl ReaperSide {
    fn receive_listener_number(&self) -> Option<RawFd> {
        let mut number = [0u8; 4];
        read_exact(&self.number_read, &mut number).ok()?;
        Some(RawFd::from_le_bytes(number))
    }

    fn release_script(self) {
        let _ = write_all(self.taken_write.as_raw_fd(), &[1]);
    }
}

fn pipe() -> Result<(OwnedFd, OwnedFd), String> {
    let mut descriptors: [RawFd; 2] = [-1, -1];
    // SAFETY: pipe2 writes two descriptors into the array; close-on-exec keeps them from
    // the interpreter.
    if unsafe { libc::pipe2(descriptors.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os_error("pipe2"));
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe {
        (
            OwnedFd::from_raw_fd(descriptors[0]),
            OwnedFd::from_raw_fd(descriptors[1]),
        )
    })
}

/// Writes all of `bytes`, in one `write` when the descriptor takes it whole (a pipe does,
/// up to PIPE_BUF bytes: so status lines from several threads never interleave).
fn write_all(descriptor: RawFd, mut bytes: &[u8]) -> Result<(), ()> {
    while !bytes.is_empty() {
        // SAFETY: writes from a live byte slice of the given length.
        let written = unsafe {
            libc::write(
                descriptor,
                bytes.as_ptr().cast::<libc::c_void>(),
                bytes.len(),
            )
        };
        match usize::try_from(written) {
            Ok(count) if count > 0 => bytes = &bytes[count.min(bytes.len())..],
            _ if last_errno() == libc::EINTR => {}
            _ => return Err(()),
        }
    }
    Ok(())
}

fn read_exact(descriptor: &OwnedFd, buffer: &mut [u8]) -> Result<(), ()> {
    let mut filled = 0;
    while filled < buffer.len() {
        let rest = &mut buffer[filled..];
        // SAFETY: reads into a live byte slice of the given length.
        let read = unsafe {
            libc::read(
                descriptor.as_raw_fd(),
                rest.as_mut_ptr().cast::<libc::c_void>(),
                rest.len(),
            )
        };
        match usize::try_from(read) {
            Ok(count) if count > 0 => filled += count,
            _ if read < 0 && last_errno() == libc::EINTR => {}
            _ => return Err(()),
        }
    }
    Ok(())
}

/// Reaps every child until the script process has ended. The script's process group is
/// killed while its leader is still a zombie, so the group id cannot have been reused.
fn reap_until(script_pid: libc::pid_t) -> Option<libc::c_int> {
    loop {
        // SAFETY: a zeroed siginfo_t is a valid value for waitid to fill.
        let mut information: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid writes into `information`; WNOWAIT leaves the child unreaped.
        let result = unsafe {
            libc::waitid(
                libc::P_ALL,
                0,
                &mut information,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if result == -1 {
            if last_errno() == libc::EINTR {
                continue;
            }
            return None;
        }
        // SAFETY: waitid filled a child-exit siginfo, whose si_pid is valid.
        let ended_pid = unsafe { information.si_pid() };
        if ended_pid == script_pid {
            // SAFETY: signalling the script's own group, whose leader is an unreaped zombie.
            unsafe { libc::kill(-script_pid, libc::SIGKILL) };
        }
        let mut wait_status = 0;
        // SAFETY: reaping the child waitid reported.
        unsafe { libc::waitpid(ended_pid, &mut wait_status, 0) };
        if ended_pid == script_pid {
            return Some(wait_status);
        }
    }
}

/// The script process: never returns; it becomes the interpreter or reports why not.
fn script_process(plan: &LaunchPlan, status: &StatusWriter, handoff: Option<ScriptSide>) -> ! {
    // The address-space limit goes on here, first, rather than in the launcher with the
    // others: the reaper must still start the egress guard's threads, and under the limit
    // their stacks could not be mapped when the launcher is the `sleuth` binary, whose
    // allocator reserves its arenas' address space up front (the guard then never started,
    // and no script allowed the network could run). Everything this process and the
    // script start inherits it.
    let limited = set_limit(
        libc::RLIMIT_AS,
        plan.limits.memory_bytes,
        plan.limits.memory_bytes,
    );
    let error = match limited.and_then(|()| isolate_and_exec(plan, status, handoff)) {
        Ok(never) => match never {},
        Err(error) => error,
    };
    status.write("fatal", &error);
    // SAFETY: ending the forked child without running the parent's exit handlers.
    unsafe { libc::_exit(EXEC_FAILED_EXIT_CODE) }
}

fn c_string(bytes: &[u8]) -> Result<CString, String> {
    CString::new(bytes).map_err(|_| "an argument holds a NUL byte".to_owned())
}

fn isolate_and_exec(
    plan: &LaunchPlan,
    status: &StatusWriter,
    handoff: Option<ScriptSide>,
) -> Result<Infallible, String> {
    let layers = &plan.layers;
    // SAFETY: integer prctl and setpgid on ourselves. PDEATHSIG: if the reaper dies, so does
    // the script, even without a PID namespace to take it down.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        libc::setpgid(0, 0);
        // The status descriptor stays open for the reports below and closes at exec: the
        // interpreter never holds it.
        libc::fcntl(STATUS_DESCRIPTOR, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    std::env::set_current_dir(&plan.work_dir)
        .map_err(|error| format!("cannot enter the work dir: {error}"))?;

    // Everything exec needs is allocated before the filters go on.
    let python = c_string(plan.python.as_os_str().as_bytes())?;
    let arguments = [
        c_string(b"python3")?,
        // Isolated mode: no PYTHON* variables, no user site, no script dir on sys.path;
        // no site module (saves startup and imports nothing the operator did not ask for);
        // no .pyc writes.
        c_string(b"-I")?,
        c_string(b"-S")?,
        c_string(b"-B")?,
        c_string(b"-c")?,
        c_string(BOOTSTRAP.as_bytes())?,
    ];
    let work_dir = plan.work_dir.as_os_str().as_bytes();
    let mut environment = vec![
        c_string(b"PATH=/usr/local/bin:/usr/bin:/bin")?,
        c_string(&[b"HOME=", work_dir].concat())?,
        c_string(&[b"TMPDIR=", work_dir].concat())?,
        c_string(b"LANG=C.UTF-8")?,
        c_string(b"LC_ALL=C.UTF-8")?,
    ];
    let guarded = matches!(plan.network, NetworkPlan::Guarded(_));
    if guarded {
        // A guarded script may only make TCP sockets: glibc's resolver must ask over TCP.
        environment.push(c_string(b"RES_OPTIONS=use-vc")?);
    }
    let mut read_only_paths = plan.read_only_paths.clone();
    read_only_paths.extend(landlock_layer::interpreter_prefix(&plan.python));

    // A uid of its own: not root (so RLIMIT_NPROC binds and no capability remains), and
    // unable to signal, ptrace or read the files of the service or of another slot.
    status.layer(layers.dedicated_uid, "dedicated-uid", || {
        switch_to_uid(plan.sandbox_uid)
    })?;
    // no_new_privs: no set-uid binary can give privileges back; Landlock and seccomp need it.
    status.layer(layers.no_new_privs, "no-new-privs", || {
        // SAFETY: integer prctl.
        match unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } {
            0 => Ok(String::new()),
            _ => Err(os_error("PR_SET_NO_NEW_PRIVS")),
        }
    })?;
    status.layer(layers.landlock, "landlock", || {
        landlock_layer::restrict_self(&read_only_paths, &plan.work_dir, !plan.network.is_off())
    })?;
    // seccomp last: the steps above use calls it denies. A guarded network has no other
    // guard: without the filter the script does not run, whatever the layer's policy.
    let seccomp_policy = if guarded {
        LayerPolicy::Require
    } else {
        layers.seccomp
    };
    let mut listener = None;
    status.layer(seccomp_policy, "seccomp", || {
        let filters = seccomp::build_filters(!plan.network.is_off())?;
        listener = seccomp::install_filters(&filters, guarded)?;
        Ok(String::new())
    })?;
    match (handoff, listener) {
        (Some(handoff), Some(listener)) => handoff.hand_over(&listener)?,
        (None, None) => {}
        _ => return Err("egress guard: the seccomp listener and the handoff disagree".to_owned()),
    }

    status.write("exec", "");
    let mut argument_pointers: Vec<*const libc::c_char> =
        arguments.iter().map(|argument| argument.as_ptr()).collect();
    argument_pointers.push(std::ptr::null());
    let mut environment_pointers: Vec<*const libc::c_char> = environment
        .iter()
        .map(|variable| variable.as_ptr())
        .collect();
    environment_pointers.push(std::ptr::null());
    // SAFETY: both arrays are null-terminated and point into CStrings alive across the call.
    unsafe {
        libc::execve(
            python.as_ptr(),
            argument_pointers.as_ptr(),
            environment_pointers.as_ptr(),
        )
    };
    Err(os_error(&format!(
        "cannot execute {}",
        Path::new(plan.python.as_os_str()).display()
    )))
}

fn switch_to_uid(uid: u32) -> Result<String, String> {
    // SAFETY: plain credential calls with integer arguments; setgroups with an empty list.
    unsafe {
        if libc::setgroups(0, std::ptr::null()) != 0 {
            return Err(os_error("setgroups"));
        }
        if libc::setresgid(uid, uid, uid) != 0 {
            return Err(os_error("setresgid"));
        }
        if libc::setresuid(uid, uid, uid) != 0 {
            return Err(os_error("setresuid"));
        }
        // Paranoia: a process that can become root again has not dropped anything.
        if libc::setresuid(0, 0, 0) == 0 || libc::geteuid() != uid {
            return Err("the uid switch did not stick".to_owned());
        }
    }
    Ok(uid.to_string())
}
