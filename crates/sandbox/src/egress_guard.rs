//! The egress guard: for a script allowed the network, every `connect` it makes stops in
//! the kernel (the seccomp filter returns SECCOMP_RET_USER_NOTIF for it) until the guard,
//! running in the reaper outside the filter, has judged it by the egress policy.
//!
//! The guard never lets the script's own call go ahead after a check (the address lives in
//! the script's memory, and another of its threads could change it between the check and
//! the kernel's read). Instead it copies the address once, judges the copy, takes a
//! duplicate of the script's socket (pidfd_getfd: the same open socket, not a new one) and
//! connects that with the copy. The script's call then returns what that `connect`
//! returned, `EINPROGRESS` for a non-blocking socket included, so the script cannot tell
//! the difference except by being refused: a denied connection fails with EACCES, as a
//! Landlock denial does, and is reported on the status descriptor.
//!
//! Every step that could name the wrong process is checked: the notification's id is
//! confirmed still pending (SECCOMP_IOCTL_NOTIF_ID_VALID) after the pidfd is open and the
//! memory read, so a pid reused by another process is never acted on.

use std::mem::MaybeUninit;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::egress::{Decision, EgressPolicy};

/// Denials reported one line each; past this many a run is only counted (`denied-more`).
pub(crate) const REPORTED_DENIALS: usize = 20;

/// Connections judged at once: a blocking connect holds its thread until it completes.
const GUARD_THREADS: usize = 4;

/// The largest socket address the kernel takes (`sizeof(struct sockaddr_storage)`).
const LARGEST_ADDRESS: usize = std::mem::size_of::<libc::sockaddr_storage>();

/// Where the guard reports a denial: one status line each, written with a single `write`
/// so that lines from several threads never interleave.
pub(crate) type Reporter = Box<dyn Fn(&str) + Send + Sync>;

/// The guard's shared state: the policy and how many connections it refused.
pub(crate) struct Guard {
    listener: OwnedFd,
    policy: EgressPolicy,
    report: Reporter,
    denials: AtomicUsize,
}

impl Guard {
    pub(crate) fn new(listener: OwnedFd, policy: EgressPolicy, report: Reporter) -> Arc<Guard> {
        Arc::new(Guard {
            listener,
            policy,
            report,
            denials: AtomicUsize::new(0),
        })
    }

    /// Starts the threads that answer notifications. They run until the process ends: the
    /// reaper exits as soon as the script has, which ends them with it.
    pub(crate) fn start(guard: &Arc<Guard>) -> Result<(), String> {
        for index in 0..GUARD_THREADS {
            let guard = Arc::clone(guard);
            std::thread::Builder::new()
                .name(format!("egress-guard-{index}"))
                .stack_size(256 * 1024)
                .spawn(move || guard.serve())
                .map_err(|error| format!("cannot start the egress guard: {error}"))?;
        }
        Ok(())
    }

    /// Denials beyond the ones reported line by line.
    pub(crate) fn unreported_denials(&self) -> usize {
        self.denials
            .load(Ordering::SeqCst)
            .saturating_sub(REPORTED_DENIALS)
    }

    fn serve(&self) {
        let listener = self.listener.as_raw_fd();
        loop {
            // SAFETY: an all-zero seccomp_notif is valid, and the kernel wants it zeroed.
            let mut request: libc::seccomp_notif = unsafe { std::mem::zeroed() };
            // SAFETY: RECV writes one seccomp_notif into `request`.
            if unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut request) } != 0 {
                match last_errno() {
                    // The caller was interrupted before we got it, or a signal woke us.
                    libc::ENOENT | libc::EINTR => continue,
                    _ => return,
                }
            }
            let Some(answer) = self.judge(&request) else {
                continue;
            };
            let mut response = libc::seccomp_notif_resp {
                id: request.id,
                val: answer.value,
                error: answer.error,
                flags: 0,
            };
            // SAFETY: SEND reads one seccomp_notif_resp. ENOENT (the caller is gone) needs
            // nothing from us.
            unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut response) };
        }
    }

    /// The answer to one call, or `None` when the caller is no longer waiting for one.
    fn judge(&self, request: &libc::seccomp_notif) -> Option<Answer> {
        if i64::from(request.data.nr) != libc::SYS_connect {
            return Some(Answer::error(libc::EPERM));
        }
        let [descriptor, address_pointer, address_length, ..] = request.data.args;
        // connect(2) takes an int descriptor and a socklen_t length; the kernel reads only
        // their low 32 bits, and so do we.
        let descriptor = descriptor as u32 as i32;
        let length = address_length as u32 as usize;
        if length > LARGEST_ADDRESS || length < std::mem::size_of::<libc::sa_family_t>() {
            return Some(Answer::error(libc::EINVAL));
        }
        let caller = match Caller::open(request.pid) {
            Ok(caller) => caller,
            Err(errno) => return self.still_pending(request).then_some(Answer::error(errno)),
        };
        let address = match caller.read_address(address_pointer, length) {
            Ok(address) => address,
            Err(errno) => return self.still_pending(request).then_some(Answer::error(errno)),
        };
        let socket = caller.duplicate(descriptor);
        // From here on the pidfd, the bytes and the socket are known to be the caller's.
        if !self.still_pending(request) {
            return None;
        }
        let socket = match socket {
            Ok(socket) => socket,
            Err(errno) => return Some(Answer::error(errno)),
        };
        Some(self.connect(&socket, &address, length))
    }

    fn connect(&self, socket: &OwnedFd, address: &libc::sockaddr_storage, length: usize) -> Answer {
        let destination = match destination_of(address, length) {
            Destination::Inet(destination) => destination,
            // Dissolving an association reaches nobody.
            Destination::Unspecified => return connect_with(socket, address, length),
            Destination::TooShort => return Answer::error(libc::EINVAL),
            Destination::OtherFamily(family) => {
                self.deny(
                    &format!("an address of family {family}"),
                    "not an IP address",
                );
                return Answer::error(libc::EACCES);
            }
        };
        if !is_tcp(socket) {
            self.deny(&destination.to_string(), "not a TCP socket");
            return Answer::error(libc::EACCES);
        }
        match self.policy.decide(destination) {
            Decision::Allow => connect_with(socket, address, length),
            Decision::Deny(reason) => {
                self.deny(&destination.to_string(), &reason.to_string());
                Answer::error(libc::EACCES)
            }
        }
    }

    fn deny(&self, destination: &str, reason: &str) {
        if self.denials.fetch_add(1, Ordering::SeqCst) < REPORTED_DENIALS {
            (self.report)(&format!("{destination} ({reason})"));
        }
    }

    fn still_pending(&self, request: &libc::seccomp_notif) -> bool {
        let mut id = request.id;
        // SAFETY: ID_VALID reads one u64.
        unsafe {
            libc::ioctl(
                self.listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
                &mut id,
            ) == 0
        }
    }
}

/// What the script's call returns: `val` on success, or `-errno`.
struct Answer {
    value: i64,
    error: i32,
}

impl Answer {
    fn error(errno: i32) -> Answer {
        Answer {
            value: 0,
            error: -errno,
        }
    }
}

/// The process (or thread) that made the call, held by a pidfd so that it cannot be
/// mistaken for another once the notification is confirmed pending.
struct Caller {
    pid: libc::pid_t,
    pidfd: OwnedFd,
}

impl Caller {
    fn open(pid: u32) -> Result<Caller, i32> {
        let pid = libc::pid_t::try_from(pid).map_err(|_| libc::ESRCH)?;
        // A thread of the script is not a thread-group leader: PIDFD_THREAD (Linux 6.9,
        // spelled O_EXCL) opens it; its descriptor table is its process's.
        let pidfd = [0, libc::O_EXCL]
            .into_iter()
            .find_map(|flags| {
                // SAFETY: pidfd_open takes two integers and returns a new descriptor.
                let descriptor = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, flags) };
                RawFd::try_from(descriptor).ok().filter(|fd| *fd >= 0)
            })
            .ok_or(libc::EACCES)?;
        // SAFETY: the descriptor was just created for us.
        let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
        Ok(Caller { pid, pidfd })
    }

    fn read_address(&self, pointer: u64, length: usize) -> Result<libc::sockaddr_storage, i32> {
        let mut address = MaybeUninit::<libc::sockaddr_storage>::zeroed();
        let local = libc::iovec {
            iov_base: address.as_mut_ptr().cast::<libc::c_void>(),
            iov_len: length,
        };
        let remote = libc::iovec {
            iov_base: pointer as usize as *mut libc::c_void,
            iov_len: length,
        };
        // SAFETY: process_vm_readv writes at most `length` bytes, no more than the storage
        // holds (checked by the caller), into `address`; the remote side is only read.
        let read = unsafe { libc::process_vm_readv(self.pid, &local, 1, &remote, 1, 0) };
        if usize::try_from(read).ok() != Some(length) {
            return Err(libc::EFAULT);
        }
        // SAFETY: zeroed storage is a valid sockaddr_storage, and the bytes read are too.
        Ok(unsafe { address.assume_init() })
    }

    fn duplicate(&self, descriptor: i32) -> Result<OwnedFd, i32> {
        // SAFETY: pidfd_getfd takes integers and returns a new close-on-exec descriptor.
        let duplicate =
            unsafe { libc::syscall(libc::SYS_pidfd_getfd, self.pidfd.as_raw_fd(), descriptor, 0) };
        let duplicate = RawFd::try_from(duplicate)
            .ok()
            .filter(|fd| *fd >= 0)
            .ok_or_else(|| match last_errno() {
                libc::EBADF => libc::EBADF,
                _ => libc::EACCES,
            })?;
        // SAFETY: the descriptor was just created for us.
        Ok(unsafe { OwnedFd::from_raw_fd(duplicate) })
    }
}

enum Destination {
    Inet(SocketAddr),
    Unspecified,
    TooShort,
    OtherFamily(i32),
}

/// Reads the address as the kernel will: by its family, with that family's minimum length.
fn destination_of(address: &libc::sockaddr_storage, length: usize) -> Destination {
    match i32::from(address.ss_family) {
        libc::AF_UNSPEC => Destination::Unspecified,
        libc::AF_INET => {
            if length < std::mem::size_of::<libc::sockaddr_in>() {
                return Destination::TooShort;
            }
            // SAFETY: sockaddr_storage is large and aligned enough for any sockaddr.
            let v4 =
                unsafe { &*(address as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Destination::Inet(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr)),
                u16::from_be(v4.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // The kernel takes the older, 24-byte form without the scope id.
            const RFC_2133_LENGTH: usize = 24;
            if length < RFC_2133_LENGTH {
                return Destination::TooShort;
            }
            // SAFETY: as above.
            let v6 = unsafe {
                &*(address as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
            };
            Destination::Inet(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(v6.sin6_addr.s6_addr),
                u16::from_be(v6.sin6_port),
                0,
                0,
            )))
        }
        family => Destination::OtherFamily(family),
    }
}

fn is_tcp(socket: &OwnedFd) -> bool {
    let mut protocol: libc::c_int = 0;
    let mut length = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes one int into `protocol`.
    let result = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PROTOCOL,
            (&mut protocol as *mut libc::c_int).cast::<libc::c_void>(),
            &mut length,
        )
    };
    result == 0 && protocol == libc::IPPROTO_TCP
}

fn connect_with(socket: &OwnedFd, address: &libc::sockaddr_storage, length: usize) -> Answer {
    let length = libc::socklen_t::try_from(length).unwrap_or(libc::socklen_t::MAX);
    loop {
        // SAFETY: connect reads `length` bytes of the address, which the storage holds.
        let result = unsafe {
            libc::connect(
                socket.as_raw_fd(),
                (address as *const libc::sockaddr_storage).cast::<libc::sockaddr>(),
                length,
            )
        };
        if result == 0 {
            return Answer { value: 0, error: 0 };
        }
        match last_errno() {
            libc::EINTR => continue,
            errno => return Answer::error(errno),
        }
    }
}

/// The addresses of this host's interfaces: connecting to any of them reaches the host.
pub(crate) fn host_addresses() -> Vec<IpAddr> {
    let mut addresses = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs allocates a list we free below; nothing else holds it.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return addresses;
    }
    let mut entry = list;
    while !entry.is_null() {
        // SAFETY: `entry` is a node of the list getifaddrs returned, not yet freed.
        let node = unsafe { &*entry };
        if !node.ifa_addr.is_null() {
            // SAFETY: ifa_addr points at a sockaddr of the family it names.
            let family = i32::from(unsafe { (*node.ifa_addr).sa_family });
            match family {
                libc::AF_INET => {
                    // SAFETY: an AF_INET ifa_addr is a sockaddr_in.
                    let v4 = unsafe { &*node.ifa_addr.cast::<libc::sockaddr_in>() };
                    addresses.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(v4.sin_addr.s_addr))));
                }
                libc::AF_INET6 => {
                    // SAFETY: an AF_INET6 ifa_addr is a sockaddr_in6.
                    let v6 = unsafe { &*node.ifa_addr.cast::<libc::sockaddr_in6>() };
                    addresses.push(IpAddr::V6(Ipv6Addr::from(v6.sin6_addr.s6_addr)));
                }
                _ => {}
            }
        }
        entry = node.ifa_next;
    }
    // SAFETY: frees the list getifaddrs allocated, once.
    unsafe { libc::freeifaddrs(list) };
    addresses
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn storage_of(address: SocketAddr) -> (libc::sockaddr_storage, usize) {
        // SAFETY: an all-zero sockaddr_storage is valid.
        let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let length = match address {
            SocketAddr::V4(v4) => {
                // SAFETY: the storage is large and aligned enough for a sockaddr_in.
                let target = unsafe {
                    &mut *(&mut storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>()
                };
                target.sin_family = libc::AF_INET as libc::sa_family_t;
                target.sin_port = v4.port().to_be();
                target.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
                std::mem::size_of::<libc::sockaddr_in>()
            }
            SocketAddr::V6(v6) => {
                // SAFETY: as above, for a sockaddr_in6.
                let target = unsafe {
                    &mut *(&mut storage as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>()
                };
                target.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                target.sin6_port = v6.port().to_be();
                target.sin6_addr.s6_addr = v6.ip().octets();
                std::mem::size_of::<libc::sockaddr_in6>()
            }
        };
        (storage, length)
    }

    #[test]
    fn addresses_are_read_in_network_byte_order_as_the_kernel_reads_them() {
        for text in [
            "127.0.0.1:5432",
            "[::ffff:169.254.169.254]:80",
            "[2606:4700::1111]:443",
        ] {
            let address: SocketAddr = text.parse().expect("address");
            let (storage, length) = storage_of(address);
            match destination_of(&storage, length) {
                Destination::Inet(read) => assert_eq!(read, address),
                _ => panic!("{text} was not read as an IP address"),
            }
        }
    }

    #[test]
    fn short_addresses_and_other_families_are_not_read_as_ip_addresses() {
        let (storage, _) = storage_of("127.0.0.1:5432".parse().expect("address"));
        assert!(matches!(destination_of(&storage, 8), Destination::TooShort));
        let (storage, _) = storage_of("[::1]:5432".parse().expect("address"));
        assert!(matches!(
            destination_of(&storage, 20),
            Destination::TooShort
        ));
        // SAFETY: an all-zero sockaddr_storage is valid.
        let mut unix: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        unix.ss_family = libc::AF_UNIX as libc::sa_family_t;
        assert!(matches!(
            destination_of(&unix, 110),
            Destination::OtherFamily(libc::AF_UNIX)
        ));
        unix.ss_family = libc::AF_UNSPEC as libc::sa_family_t;
        assert!(matches!(
            destination_of(&unix, 16),
            Destination::Unspecified
        ));
    }

    #[test]
    fn this_hosts_loopback_is_among_its_own_addresses() {
        assert!(host_addresses().contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)));
    }
}
