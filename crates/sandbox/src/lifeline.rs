//! The service's lifeline: a pipe whose write end only the service process holds, and which
//! it never writes to. Every launcher gets the read end as descriptor 4, and sees end of
//! file the moment the service is gone, however it died (`kill -9` included: the kernel
//! closes a dead process's descriptors). The launcher then ends its run at once, so no
//! script outlives the service that started it.

use std::os::fd::RawFd;
use std::sync::OnceLock;

/// Where the launcher finds the lifeline.
pub(crate) const LIFELINE_DESCRIPTOR: i32 = 4;

/// Above the descriptors the runner places in the launcher (3 and 4), so that moving one
/// into place never closes the other.
const LOWEST_DESCRIPTOR: i32 = 10;

/// The read end, made once per process. The write end is kept open on purpose for as
/// long as the process lives, and is close-on-exec: no child ever holds it.
pub(crate) fn read_end() -> Result<RawFd, String> {
    static LIFELINE: OnceLock<Result<RawFd, String>> = OnceLock::new();
    LIFELINE.get_or_init(make).clone()
}

fn make() -> Result<RawFd, String> {
    let failed = |what: &str| {
        format!(
            "cannot make the sandbox's lifeline: {what}: {}",
            std::io::Error::last_os_error()
        )
    };
    let mut descriptors: [RawFd; 2] = [-1, -1];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(descriptors.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(failed("pipe2"));
    }
    // SAFETY: F_DUPFD_CLOEXEC duplicates a descriptor we own to one at or above the bound;
    // close releases the original.
    let read_end = unsafe {
        let high = libc::fcntl(descriptors[0], libc::F_DUPFD_CLOEXEC, LOWEST_DESCRIPTOR);
        libc::close(descriptors[0]);
        high
    };
    if read_end < 0 {
        return Err(failed("fcntl"));
    }
    // descriptors[1], the write end, is never closed: it lives as long as the process.
    Ok(read_end)
}
