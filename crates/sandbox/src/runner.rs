//! The parent side of one run: make the work dir, start the launcher, hand the job to the
//! interpreter on stdin, read its output under caps, enforce the wall clock, clean up, and
//! turn what happened into a status.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::pin::pin;
use std::process::Stdio;
use std::time::Duration;

use sleuth_domain::ScriptRunStatus;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::time::{Instant, sleep_until};

use crate::egress::{self, AllowedNetwork, Destination, EgressPolicy};
use crate::lifeline::{self, LIFELINE_DESCRIPTOR};
use crate::plan::{LaunchPlan, LayerPolicies, NetworkPlan, PLAN_FLAG, ResourceLimits};
use crate::status::{LauncherReport, STATUS_DESCRIPTOR, ScriptExit};
use crate::work_dir;
use crate::{SandboxConfig, ScriptJob, ScriptOutcome};

/// How long to keep reading after the launcher ended. With a PID namespace every writer is
/// gone by then and the pipes are at EOF at once; without one, a process the script left
/// behind may hold them open, and its later output is not the run's.
const DRAIN_GRACE: Duration = Duration::from_millis(200);

/// The launcher's own reports are a few lines; more is not the launcher speaking.
const STATUS_CAP: usize = 64 * 1024;

const READ_CHUNK: usize = 64 * 1024;

/// Why the parent killed a run, first reason wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KillReason {
    WallClock,
    StdoutCap,
    StderrCap,
}

/// What one run produced, before it is turned into an outcome.
#[derive(Debug)]
pub(crate) struct RunRecord {
    pub outcome: ScriptOutcome,
    pub report: LauncherReport,
}

/// Output kept up to a cap; anything past it marks the stream as overflowed.
struct CappedCapture {
    bytes: Vec<u8>,
    cap: usize,
    overflowed: bool,
}

impl CappedCapture {
    fn new(cap: usize) -> CappedCapture {
        CappedCapture {
            bytes: Vec::new(),
            cap,
            overflowed: false,
        }
    }

    /// Appends what fits; returns true when this chunk went past the cap.
    fn push(&mut self, chunk: &[u8]) -> bool {
        let room = self.cap.saturating_sub(self.bytes.len());
        self.bytes
            .extend_from_slice(&chunk[..chunk.len().min(room)]);
        if chunk.len() > room {
            self.overflowed = true;
        }
        self.overflowed
    }

    /// NUL bytes removed (they end strings in the database and in C), invalid UTF-8 replaced.
    fn into_text(self) -> String {
        let without_nul: Vec<u8> = self.bytes.into_iter().filter(|byte| *byte != 0).collect();
        match String::from_utf8(without_nul) {
            Ok(text) => text,
            Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
        }
    }
}

/// One pipe from the run, read into a capped capture until EOF or overflow.
struct PipeReader<Stream> {
    stream: Option<Stream>,
    capture: CappedCapture,
    buffer: Vec<u8>,
    /// Why to kill the run when this pipe overflows; `None` just stops reading it.
    overflow_kills_for: Option<KillReason>,
}

impl<Stream: AsyncRead + Unpin> PipeReader<Stream> {
    fn new(stream: Option<Stream>, cap: usize, overflow_kills_for: Option<KillReason>) -> Self {
        PipeReader {
            stream,
            capture: CappedCapture::new(cap),
            buffer: vec![0u8; READ_CHUNK.min(cap.max(1))],
            overflow_kills_for,
        }
    }

    fn is_open(&self) -> bool {
        self.stream.is_some()
    }

    /// Reads once; pending forever once the pipe is closed, so select! skips it.
    async fn read(&mut self) -> std::io::Result<usize> {
        match &mut self.stream {
            Some(stream) => stream.read(&mut self.buffer).await,
            None => std::future::pending().await,
        }
    }

    /// Keeps what one read returned. Returns the kill reason when the cap was just passed.
    fn absorb(&mut self, read: std::io::Result<usize>) -> Option<KillReason> {
        match read {
            Ok(count) if count > 0 => {
                let chunk = &self.buffer[..count.min(self.buffer.len())];
                if self.capture.push(chunk) {
                    self.stream = None;
                    return self.overflow_kills_for;
                }
                None
            }
            _ => {
                self.stream = None;
                None
            }
        }
    }
}

/// Asks the launcher to end the run: it kills the reaper and waits until the kernel has
/// torn the PID namespace down, so the run has left nothing behind once the launcher exits.
fn stop_run(launcher_pid: Option<u32>) {
    if let Some(pid) = launcher_pid.and_then(|pid| libc::pid_t::try_from(pid).ok()) {
        // SAFETY: kill takes integers; the pid is our own unreaped child.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
}

/// The fallback when the launcher does not end after `stop_run`: kill its process group
/// (the launcher and the reaper, whose death still takes the namespace with it). Only called
/// while the launcher is unreaped, so its pid, the group id, cannot belong to anyone else.
fn kill_run(launcher_pid: Option<u32>) {
    if let Some(pid) = launcher_pid.and_then(|pid| libc::pid_t::try_from(pid).ok()) {
        // SAFETY: kill takes integers; the pid is our own unreaped child.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// How long the launcher gets to tear a stopped run down before it is killed outright.
const STOP_GRACE: Duration = Duration::from_secs(2);

fn status_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut descriptors: [RawFd; 2] = [-1, -1];
    // SAFETY: pipe2 writes two descriptors into the array; close-on-exec keeps them out of
    // every other process the service starts, and the launcher gets its end by dup2 only.
    if unsafe { libc::pipe2(descriptors.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    use std::os::fd::FromRawFd;
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe {
        (
            OwnedFd::from_raw_fd(descriptors[0]),
            OwnedFd::from_raw_fd(descriptors[1]),
        )
    })
}

/// Runs in the forked child before exec: a session of its own (so one kill reaches the
/// launcher and the reaper), the status pipe on descriptor 3 and the service's lifeline on
/// descriptor 4 (which is never 3: `lifeline` keeps it high).
fn prepare_launcher_process(status_write: RawFd, lifeline: RawFd) -> std::io::Result<()> {
    // SAFETY: setsid, dup2 and fcntl are async-signal-safe and touch no memory.
    unsafe {
        if libc::setsid() == -1 {
            return Err(std::io::Error::last_os_error());
        }
        for (descriptor, wanted) in [
            (status_write, STATUS_DESCRIPTOR),
            (lifeline, LIFELINE_DESCRIPTOR),
        ] {
            if descriptor == wanted {
                // dup2 onto itself would keep close-on-exec.
                libc::fcntl(descriptor, libc::F_SETFD, 0);
            } else if libc::dup2(descriptor, wanted) == -1 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// The job as the bootstrap reads it on stdin.
fn encode_job(job: &ScriptJob) -> Result<Vec<u8>, String> {
    let document = serde_json::json!({
        "code": job.code,
        "trigger_args": job.trigger_args,
        "variables": job.variables,
        "secrets": job.secrets,
    });
    // The message never carries serde's detail: it could quote a secret.
    serde_json::to_vec(&document).map_err(|_| "the job could not be encoded as JSON".to_owned())
}

/// Everything one run needs from the sandbox.
pub(crate) struct RunSettings<'a> {
    pub config: &'a SandboxConfig,
    pub layers: LayerPolicies,
    pub slot: usize,
    /// The mode's name, prefixed to the isolation record.
    pub mode_label: &'a str,
}

pub(crate) async fn execute(settings: &RunSettings<'_>, job: &ScriptJob) -> RunRecord {
    let config = settings.config;
    let sandbox_uid = config
        .uid_base
        .saturating_add(u32::try_from(settings.slot).unwrap_or(u32::MAX));
    let runs_as_sandbox_uid = settings.layers.dedicated_uid.wanted();
    let work_dir = match work_dir::create(config, runs_as_sandbox_uid.then_some(sandbox_uid)) {
        Ok(work_dir) => work_dir,
        Err(reason) => return runner_error(settings, reason),
    };
    let record = execute_in(settings, job, sandbox_uid, &work_dir).await;
    // Whatever the script did to it (read-only dirs, mode 000 files), off the runtime.
    let _ = tokio::task::spawn_blocking(move || work_dir::remove(&work_dir)).await;
    record
}

fn runner_error(settings: &RunSettings<'_>, reason: String) -> RunRecord {
    RunRecord {
        outcome: ScriptOutcome::runner_error(reason, format!("{}: none", settings.mode_label)),
        report: LauncherReport::default(),
    }
}

async fn execute_in(
    settings: &RunSettings<'_>,
    job: &ScriptJob,
    sandbox_uid: u32,
    work_dir: &Path,
) -> RunRecord {
    let config = settings.config;
    let (network, network_note) = network_plan(settings, job).await;
    let plan = LaunchPlan {
        python: config.python.clone(),
        work_dir: work_dir.to_path_buf(),
        read_only_paths: config.read_only_paths.clone(),
        limits: ResourceLimits {
            cpu_seconds: config.cpu_seconds,
            memory_bytes: config.memory_bytes,
            max_processes: settings
                .layers
                .dedicated_uid
                .wanted()
                .then_some(config.max_processes),
            file_size_bytes: config.file_size_bytes,
            open_files: config.open_files,
        },
        layers: settings.layers,
        sandbox_uid,
        network,
        backstop_seconds: u32::try_from(
            config
                .wall_clock
                .as_secs()
                .saturating_mul(2)
                .saturating_add(10),
        )
        .unwrap_or(u32::MAX),
    };
    let prepared = plan.to_argument().and_then(|argument| {
        let job_bytes = encode_job(job)?;
        let (status_read, status_write) =
            status_pipe().map_err(|error| format!("cannot create the status pipe: {error}"))?;
        Ok((argument, job_bytes, status_read, status_write))
    });
    let (plan_argument, job_bytes, status_read, status_write) = match prepared {
        Ok(prepared) => prepared,
        Err(reason) => return runner_error(settings, reason),
    };

    #[allow(clippy::disallowed_methods)] // The sandbox is the only place that spawns.
    let mut command = tokio::process::Command::new(&config.launcher);
    command
        .args(&config.launcher_args)
        .arg(PLAN_FLAG)
        .arg(plan_argument)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // If this future is dropped, the launcher dies, and with it the whole run.
        .kill_on_drop(true);
    let status_write_descriptor = status_write.as_raw_fd();
    let lifeline = match lifeline::read_end() {
        Ok(lifeline) => lifeline,
        Err(reason) => return runner_error(settings, reason),
    };
    // SAFETY: the closure only calls async-signal-safe functions (see above).
    unsafe {
        command.pre_exec(move || prepare_launcher_process(status_write_descriptor, lifeline));
    }
    let started_at = Instant::now();
    let spawned = command.spawn();
    // Our copy of the write end must go, or the status pipe would never reach EOF.
    drop(status_write);
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) => {
            return runner_error(
                settings,
                format!(
                    "cannot start the launcher {}: {error}",
                    config.launcher.display()
                ),
            );
        }
    };
    let launcher_pid = child.id();
    let status_stream = tokio::net::unix::pipe::Receiver::from_owned_fd(status_read);

    let mut stdout = PipeReader::new(
        child.stdout.take(),
        config.stdout_cap,
        Some(KillReason::StdoutCap),
    );
    let mut stderr = PipeReader::new(
        child.stderr.take(),
        config.stderr_cap,
        Some(KillReason::StderrCap),
    );
    let mut status = PipeReader::new(status_stream.ok(), STATUS_CAP, None);
    let stdin = child.stdin.take();
    let mut stdin_writer = pin!(async move {
        if let Some(mut stdin) = stdin {
            // A script that exits without reading makes this fail with EPIPE: nothing to do.
            let _ = stdin.write_all(&job_bytes).await;
        }
    });

    let deadline = started_at + config.wall_clock;
    let mut stdin_done = false;
    let mut launcher_end: Option<std::io::Result<std::process::ExitStatus>> = None;
    let mut ended_at = started_at;
    let mut kill_reason: Option<KillReason> = None;
    let mut stop_requested = false;
    // When to kill the launcher outright if it has not ended after the stop request.
    let mut kill_at: Option<Instant> = None;
    let mut output_left_open = false;

    loop {
        if launcher_end.is_some() && !stdout.is_open() && !stderr.is_open() && !status.is_open() {
            break;
        }
        if kill_reason.is_some() && !stop_requested && launcher_end.is_none() {
            stop_requested = true;
            stop_run(launcher_pid);
            kill_at = Some(Instant::now() + STOP_GRACE);
        }
        let kill_deadline = kill_at.unwrap_or(deadline);
        tokio::select! {
            read = stdout.read() => if let Some(reason) = stdout.absorb(read) {
                kill_reason.get_or_insert(reason);
            },
            read = stderr.read() => if let Some(reason) = stderr.absorb(read) {
                kill_reason.get_or_insert(reason);
            },
            read = status.read() => {
                status.absorb(read);
            }
            () = &mut stdin_writer, if !stdin_done => stdin_done = true,
            end = child.wait(), if launcher_end.is_none() => {
                ended_at = Instant::now();
                launcher_end = Some(end);
            }
            () = sleep_until(deadline), if launcher_end.is_none() && kill_reason.is_none() => {
                kill_reason = Some(KillReason::WallClock);
            }
            () = sleep_until(kill_deadline), if launcher_end.is_none() && kill_at.is_some() => {
                kill_run(launcher_pid);
                kill_at = None;
            }
            () = sleep_until(ended_at + DRAIN_GRACE), if launcher_end.is_some() => {
                output_left_open = true;
                break;
            }
        }
    }
    let duration = ended_at.duration_since(started_at);
    let report = LauncherReport::parse(&status.capture.into_text());
    let launcher_exit = launcher_end.and_then(Result::ok);
    let verdict = Verdict::of(
        kill_reason,
        &report,
        launcher_exit.map(|status| status.to_string()),
        config,
    );
    let mut syserr = verdict.syserr;
    let mut add_note = |note: &str| {
        syserr = Some(match syserr.take() {
            Some(reason) => format!("{reason}; {note}"),
            None => note.to_owned(),
        });
    };
    if output_left_open {
        add_note(
            "a process the script left behind kept its output open; output written after \
             the script ended was not kept",
        );
    }
    if let Some(note) = network_note {
        add_note(&note);
    }
    if let Some(note) = denial_note(&report) {
        add_note(&note);
    }
    let applied = report.applied_summary();
    RunRecord {
        outcome: ScriptOutcome {
            status: verdict.status,
            stdout: stdout.capture.into_text(),
            stderr: stderr.capture.into_text(),
            syserr,
            duration,
            isolation: format!(
                "{}: {}",
                settings.mode_label,
                if applied.is_empty() { "none" } else { &applied }
            ),
            denied_connections: report.denied_connections.clone(),
        },
        report,
    }
}

/// The network a run gets, and a note for `syserr` when the script asked for more than it
/// gets. Only the egress guard gives a network: where seccomp is not applied the script is
/// kept off the network if a network namespace can do it, and only where neither applies
/// (mode `none`, development) does it keep the host's network unguarded.
async fn network_plan(
    settings: &RunSettings<'_>,
    job: &ScriptJob,
) -> (NetworkPlan, Option<String>) {
    if !job.allow_network {
        return (NetworkPlan::Off, None);
    }
    if settings.layers.seccomp.wanted() {
        let (policy, unresolved) = egress_policy(settings.config).await;
        return (NetworkPlan::Guarded(policy), unresolved);
    }
    if settings.layers.net_namespace.wanted() {
        return (
            NetworkPlan::Off,
            Some(
                "the network was withheld: this host cannot guard a script's connections \
                 (the egress guard needs seccomp)"
                    .to_owned(),
            ),
        );
    }
    (NetworkPlan::Unguarded, None)
}

/// How long a named destination may take to resolve when a run starts.
const DESTINATION_LOOKUP_LIMIT: Duration = Duration::from_secs(2);

/// The policy of one guarded run: the operator's destinations with their names resolved
/// now, and the system's resolvers. Returns a note naming destinations that did not resolve.
async fn egress_policy(config: &SandboxConfig) -> (EgressPolicy, Option<String>) {
    let mut allowed = Vec::new();
    let mut unresolved = Vec::new();
    for destination in &config.allowed_destinations {
        match destination {
            Destination::Network(network) => allowed.push(*network),
            Destination::Host { name, port } => {
                let lookup = tokio::net::lookup_host((name.as_str(), port.unwrap_or(0)));
                match tokio::time::timeout(DESTINATION_LOOKUP_LIMIT, lookup).await {
                    Ok(Ok(addresses)) => allowed.extend(addresses.map(|address| AllowedNetwork {
                        network: address.ip().into(),
                        port: *port,
                    })),
                    Ok(Err(_)) | Err(_) => unresolved.push(name.clone()),
                }
            }
        }
    }
    // A few hundred bytes of /etc: not worth a blocking-pool round trip.
    let resolvers = std::fs::read_to_string(&config.resolv_conf)
        .map(|text| egress::resolvers_of(&text))
        .unwrap_or_default();
    let policy = EgressPolicy {
        allowed,
        resolvers,
        denied: config.denied_networks.clone(),
        host_addresses: Vec::new(),
    };
    let note = (!unresolved.is_empty()).then(|| {
        format!(
            "allowed destinations that did not resolve for this run: {}",
            unresolved.join(", ")
        )
    });
    (policy, note)
}

/// The egress guard's refusals, summed up for `syserr`.
fn denial_note(report: &LauncherReport) -> Option<String> {
    if report.denied_connections.is_empty() {
        return None;
    }
    let total = report.denied_connections.len() + report.denied_unreported;
    let mut note = format!(
        "the sandbox refused {total} connection{}: {}",
        if total == 1 { "" } else { "s" },
        report.denied_connections.join("; ")
    );
    if report.denied_unreported > 0 {
        note.push_str(&format!(" (and {} more)", report.denied_unreported));
    }
    Some(note)
}

/// The status of a run and, when the runner has something to say, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub status: ScriptRunStatus,
    pub syserr: Option<String>,
}

impl Verdict {
    fn of(
        kill_reason: Option<KillReason>,
        report: &LauncherReport,
        launcher_exit: Option<String>,
        config: &SandboxConfig,
    ) -> Verdict {
        let verdict = |status, syserr: Option<String>| Verdict { status, syserr };
        if let Some(fatal) = &report.fatal {
            return verdict(
                ScriptRunStatus::Error,
                Some(format!("the sandbox could not start the script: {fatal}")),
            );
        }
        match kill_reason {
            Some(KillReason::WallClock) => {
                return verdict(
                    ScriptRunStatus::TimedOut,
                    Some(format!(
                        "the script ran past its time limit of {} and was killed",
                        format_duration(config.wall_clock)
                    )),
                );
            }
            Some(KillReason::StdoutCap) => {
                return verdict(
                    ScriptRunStatus::Failed,
                    Some(format!(
                        "the script wrote more than {} bytes to stdout and was killed",
                        config.stdout_cap
                    )),
                );
            }
            Some(KillReason::StderrCap) => {
                return verdict(
                    ScriptRunStatus::Failed,
                    Some(format!(
                        "the script wrote more than {} bytes to stderr and was killed",
                        config.stderr_cap
                    )),
                );
            }
            None => {}
        }
        let launcher_exit = launcher_exit.unwrap_or_else(|| "unknown".to_owned());
        if !report.interpreter_started {
            return verdict(
                ScriptRunStatus::Error,
                Some(format!(
                    "the launcher ended before starting the interpreter ({launcher_exit})"
                )),
            );
        }
        match report.script_exit {
            Some(ScriptExit::Exited(0)) => verdict(ScriptRunStatus::Success, None),
            Some(ScriptExit::Exited(_)) => verdict(ScriptRunStatus::Failed, None),
            Some(ScriptExit::Signaled(libc::SIGXCPU)) => verdict(
                ScriptRunStatus::TimedOut,
                Some(format!(
                    "the script used up its CPU time limit of {} s and was killed",
                    config.cpu_seconds
                )),
            ),
            Some(ScriptExit::Signaled(signal)) => verdict(
                ScriptRunStatus::Failed,
                Some(format!("the script was killed by signal {signal}")),
            ),
            None => verdict(
                ScriptRunStatus::Error,
                Some(format!(
                    "the launcher ended without reporting how the script ended ({launcher_exit})"
                )),
            ),
        }
    }
}

fn format_duration(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::status_line;

    fn report(lines: &[(&str, &str)]) -> LauncherReport {
        let text: String = lines
            .iter()
            .map(|(word, message)| status_line(word, message))
            .collect();
        LauncherReport::parse(&text)
    }

    fn check(kill_reason: Option<KillReason>, lines: &[(&str, &str)], expected: ScriptRunStatus) {
        let verdict = Verdict::of(
            kill_reason,
            &report(lines),
            Some("exit status: 0".to_owned()),
            &SandboxConfig::default(),
        );
        assert_eq!(verdict.status, expected, "{kill_reason:?} {lines:?}");
    }

    #[test]
    fn each_way_a_run_ends_maps_to_its_status() {
        use ScriptRunStatus::*;
        let started = ("exec", "");
        check(None, &[started, ("exit", "0")], Success);
        check(None, &[started, ("exit", "1")], Failed);
        check(None, &[started, ("signal", "9")], Failed);
        check(None, &[started, ("signal", "24")], TimedOut);
        check(Some(KillReason::WallClock), &[started], TimedOut);
        check(
            Some(KillReason::StdoutCap),
            &[started, ("exit", "0")],
            Failed,
        );
        check(Some(KillReason::StderrCap), &[started], Failed);
        check(None, &[("fatal", "landlock: not enforced")], Error);
        check(None, &[("applied", "rlimits")], Error);
        check(None, &[started], Error);
    }

    #[test]
    fn a_capture_keeps_exactly_its_cap_and_notes_the_overflow() {
        let mut capture = CappedCapture::new(4);
        assert!(!capture.push(b"ab"));
        assert!(!capture.push(b"cd"));
        assert!(capture.push(b"e"));
        assert_eq!(capture.into_text(), "abcd");
    }

    #[test]
    fn output_loses_nul_bytes_and_invalid_utf8() {
        let mut capture = CappedCapture::new(100);
        capture.push(b"a\0b\xffc");
        assert_eq!(capture.into_text(), "ab\u{fffd}c");
    }
}
