//! The seccomp layer: a small deny-list BPF filter, written out here rather than pulled from a
//! crate because it is a hundred instructions. It closes what the other layers leave open:
//! sockets (Landlock only knows TCP, and not Unix socket files), new namespaces (a user
//! namespace would hand the script every capability inside it), ptrace and cross-process
//! memory access, mounts, io_uring (which bypasses syscall-based filters), bpf, keyrings,
//! and module or kexec loading. Denied calls fail with EPERM: the script sees a plain
//! PermissionError.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use libc::sock_filter;

const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
/// Hands the call to the supervisor holding the filter's listener (the egress guard).
const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;

// Classic BPF opcodes (linux/filter.h).
const BPF_LOAD_WORD_ABSOLUTE: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const BPF_JUMP_IF_EQUAL: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_JUMP_IF_GREATER_OR_EQUAL: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const BPF_JUMP_IF_ANY_BIT: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
const BPF_RETURN: u16 = 0x06; // BPF_RET | BPF_K
const BPF_AND: u16 = 0x54; // BPF_ALU | BPF_AND | BPF_K

/// The bits of socket(2)'s type argument that hold the type itself.
const SOCKET_TYPE_MASK: u32 = 0xf;

// Offsets in struct seccomp_data; both supported architectures are little endian, so the
// low half of the first argument is at 16.
const OFFSET_SYSCALL_NUMBER: u32 = 0;
const OFFSET_ARCHITECTURE: u32 = 4;
const OFFSET_FIRST_ARGUMENT_LOW: u32 = 16;
const OFFSET_SECOND_ARGUMENT_LOW: u32 = 16 + 8;
const OFFSET_THIRD_ARGUMENT_LOW: u32 = 16 + 2 * 8;
const OFFSET_FOURTH_ARGUMENT_LOW: u32 = 16 + 3 * 8;
const OFFSET_SIXTH_ARGUMENT_LOW: u32 = 16 + 5 * 8;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH_NATIVE: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH_NATIVE: u32 = 0xc000_00b7;

/// The namespace flags of clone(2). CLONE_NEWTIME shares its bit with the exit signal in
/// clone(2) and is only reachable through clone3 and unshare, which are denied whole.
const CLONE_NAMESPACE_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u32;

/// System calls a response script has no use for and that reach past the other layers.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn denied_system_calls() -> Vec<libc::c_long> {
    let mut denied = vec![
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_process_madvise,
        libc::SYS_pidfd_getfd,
        libc::SYS_kcmp,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_reboot,
        libc::SYS_acct,
        libc::SYS_quotactl,
        libc::SYS_syslog,
        libc::SYS_sethostname,
        libc::SYS_setdomainname,
        libc::SYS_settimeofday,
        libc::SYS_clock_settime,
        libc::SYS_clock_adjtime,
    ];
    #[cfg(target_arch = "x86_64")]
    denied.extend([libc::SYS_iopl, libc::SYS_ioperm]);
    denied
}

fn statement(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jump_if_true: u8, jump_if_false: u8) -> sock_filter {
    sock_filter {
        code,
        jt: jump_if_true,
        jf: jump_if_false,
        k,
    }
}

fn deny_with(errno: i32) -> sock_filter {
    statement(BPF_RETURN, SECCOMP_RET_ERRNO | (errno as u32 & 0xffff))
}

fn allow() -> sock_filter {
    statement(BPF_RETURN, SECCOMP_RET_ALLOW)
}

fn syscall_number(number: libc::c_long) -> Result<u32, String> {
    u32::try_from(number).map_err(|_| format!("system call number {number} out of range"))
}

fn short_jump(distance: usize) -> Result<u8, String> {
    u8::try_from(distance).map_err(|_| "seccomp filter block too long for a jump".to_owned())
}

/// Appends a block that, for one system call, inspects the low half of its first argument
/// and ends the evaluation either way; the block is skipped for every other call, so the
/// accumulator still holds the system call number after it.
fn append_argument_block(
    program: &mut Vec<sock_filter>,
    number: libc::c_long,
    block: Vec<sock_filter>,
) -> Result<(), String> {
    program.push(jump(
        BPF_JUMP_IF_EQUAL,
        syscall_number(number)?,
        0,
        short_jump(block.len())?,
    ));
    program.extend(block);
    Ok(())
}

/// What a script allowed the network may do with sockets: TCP clients only, and every
/// `connect` goes to the egress guard, which judges the address the script passed and
/// makes the connection itself (`egress_guard`). Everything else that could carry a packet
/// to an address of the script's choosing is closed:
/// - no UDP, raw, SCTP or multipath TCP socket (SCTP and multipath TCP open associations or
///   subflows to addresses the guard never saw), and no Unix socket;
/// - no sendto with an address, nor with MSG_FASTOPEN, nor sendmsg (`build_filter`, for
///   every run);
/// - no bind or listen: a script is a client, and a listening socket would take connections
///   from anywhere.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn append_network_rules(program: &mut Vec<sock_filter>) -> Result<(), String> {
    // socket(domain, type, protocol): the block ends at index 9 (deny) or 10 (allow).
    append_argument_block(
        program,
        libc::SYS_socket,
        vec![
            statement(BPF_LOAD_WORD_ABSOLUTE, OFFSET_FIRST_ARGUMENT_LOW),
            jump(BPF_JUMP_IF_EQUAL, libc::AF_INET as u32, 1, 0),
            jump(BPF_JUMP_IF_EQUAL, libc::AF_INET6 as u32, 0, 6),
            statement(BPF_LOAD_WORD_ABSOLUTE, OFFSET_SECOND_ARGUMENT_LOW),
            // The low bits are the type; SOCK_NONBLOCK and SOCK_CLOEXEC live above them.
            statement(BPF_AND, SOCKET_TYPE_MASK),
            jump(BPF_JUMP_IF_EQUAL, libc::SOCK_STREAM as u32, 0, 3),
            statement(BPF_LOAD_WORD_ABSOLUTE, OFFSET_THIRD_ARGUMENT_LOW),
            jump(BPF_JUMP_IF_EQUAL, 0, 2, 0),
            jump(BPF_JUMP_IF_EQUAL, libc::IPPROTO_TCP as u32, 1, 0),
            deny_with(libc::EPERM),
            allow(),
        ],
    )?;
    program.push(jump(
        BPF_JUMP_IF_EQUAL,
        syscall_number(libc::SYS_connect)?,
        0,
        1,
    ));
    program.push(statement(BPF_RETURN, SECCOMP_RET_USER_NOTIF));
    deny_calls(program, &[libc::SYS_bind, libc::SYS_listen])
}

/// Appends a denial with EPERM of each of these calls, whatever their arguments.
fn deny_calls(program: &mut Vec<sock_filter>, numbers: &[libc::c_long]) -> Result<(), String> {
    for number in numbers {
        program.push(jump(BPF_JUMP_IF_EQUAL, syscall_number(*number)?, 0, 1));
        program.push(deny_with(libc::EPERM));
    }
    Ok(())
}

/// Builds the filter. `allow_network` lets TCP client sockets through, their connections
/// judged by the egress guard (`append_network_rules`).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) fn build_filter(allow_network: bool) -> Result<Vec<sock_filter>, String> {
    let mut program = vec![
        statement(BPF_LOAD_WORD_ABSOLUTE, OFFSET_ARCHITECTURE),
        // A call through another ABI (i386 int 0x80 on x86_64) would be matched against the
        // wrong numbers: end the process instead.
        jump(BPF_JUMP_IF_EQUAL, AUDIT_ARCH_NATIVE, 1, 0),
        statement(BPF_RETURN, SECCOMP_RET_KILL_PROCESS),
        statement(BPF_LOAD_WORD_ABSOLUTE, OFFSET_SYSCALL_NUMBER),
    ];
    #[cfg(target_arch = "x86_64")]
    {
        // x32 system calls carry this bit on the x86_64 architecture value.
        const X32_SYSCALL_BIT: u32 = 0x4000_0000;
        program.push(jump(BPF_JUMP_IF_GREATER_OR_EQUAL, X32_SYSCALL_BIT, 0, 1));
        program.push(deny_with(libc::EPERM));
    }
    deny_calls(&mut program, &denied_system_calls())?;
    // clone3 passes its flags in memory, out of the filter's reach: ENOSYS makes the C library
    // fall back to clone, whose flags are checked below.
    program.push(jump(
        BPF_JUMP_IF_EQUAL,
        syscall_number(libc::SYS_clone3)?,
        0,
        1,
    ));
    program.push(deny_with(libc::ENOSYS));
    append_argument_block(
        &mut program,
        libc::SYS_clone,
        vec![
            statement(BPF_LOAD_WORD_ABSOLUTE, OFFSET_FIRST_ARGUMENT_LOW),
            jump(BPF_JUMP_IF_ANY_BIT, CLONE_NAMESPACE_FLAGS, 0, 1),
            deny_with(libc::EPERM),
            allow(),
        ],
    )?;
    // Both ways: socketpair stays (asyncio and subprocess helpers use it). What could reach
    // a socket file through a socketpair, or an address the egress guard never judged, is a
    // datagram by address, or a TCP Fast Open send (which connects to its own address): so
    // sendmsg and sendmmsg (whose addresses the filter cannot see) go, and sendto with an
    // address or MSG_FASTOPEN. send() is sendto with neither.
    deny_calls(&mut program, &[libc::SYS_sendmsg, libc::SYS_sendmmsg])?;
    append_argument_block(
        &mut program,
        libc::SYS_sendto,
        vec![
            statement(BPF_LOAD_WORD_ABSOLUTE, OFFSET_SIXTH_ARGUMENT_LOW),
            jump(BPF_JUMP_IF_EQUAL, 0, 1, 0),
            deny_with(libc::EPERM),
            statement(BPF_LOAD_WORD_ABSOLUTE, OFFSET_FOURTH_ARGUMENT_LOW),
            jump(BPF_JUMP_IF_ANY_BIT, libc::MSG_FASTOPEN as u32, 0, 1),
            deny_with(libc::EPERM),
            allow(),
        ],
    )?;
    if allow_network {
        append_network_rules(&mut program)?;
    } else {
        // No socket at all: UDP is beyond Landlock, and Unix sockets beyond it too: a
        // reconnected datagram socketpair could reach a socket file, so connect goes as well.
        deny_calls(&mut program, &[libc::SYS_socket, libc::SYS_connect])?;
    }
    program.push(allow());
    Ok(program)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) fn build_filter(_allow_network: bool) -> Result<Vec<sock_filter>, String> {
    Err("the seccomp filter is written for x86_64 and aarch64 only".to_owned())
}

/// Installs the filter on the calling thread (the launcher is single threaded). Needs
/// no_new_privs first, or CAP_SYS_ADMIN. With `listener`, the kernel also returns the
/// descriptor on which the calls the filter hands over (`connect`) arrive, for the egress
/// guard; it is close-on-exec, so the interpreter never holds it.
pub(crate) fn install_filter(
    program: &[sock_filter],
    listener: bool,
) -> Result<Option<OwnedFd>, String> {
    let length = u16::try_from(program.len()).map_err(|_| "seccomp filter too long".to_owned())?;
    let program_header = libc::sock_fprog {
        len: length,
        filter: program.as_ptr().cast_mut(),
    };
    let install = |flags: libc::c_ulong| {
        // SAFETY: seccomp(SET_MODE_FILTER) reads `length` instructions from `program`, which
        // outlives the call; the kernel copies the program and keeps no pointer to it.
        unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                flags,
                &program_header as *const libc::sock_fprog,
            )
        }
    };
    let refused = || {
        format!(
            "seccomp filter refused: {}",
            std::io::Error::last_os_error()
        )
    };
    if !listener {
        return match install(0) {
            0 => Ok(None),
            _ => Err(refused()),
        };
    }
    // Killable waiting (Linux 5.19): once the guard has taken a call, a signal to the script
    // does not interrupt it, so a connection the guard made is never made twice.
    let mut result = install(
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
    );
    if result < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        result = install(libc::SECCOMP_FILTER_FLAG_NEW_LISTENER);
    }
    let descriptor = RawFd::try_from(result).map_err(|_| refused())?;
    if descriptor < 0 {
        return Err(refused());
    }
    // SAFETY: the kernel just created this descriptor for us; nothing else owns it.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(descriptor) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_jump_lands_inside(program: &[sock_filter]) -> bool {
        program.iter().enumerate().all(|(index, instruction)| {
            let is_conditional_jump = instruction.code & 0x07 == 0x05;
            !is_conditional_jump
                || (index + 1 + usize::from(instruction.jt.max(instruction.jf)) < program.len())
        })
    }

    #[test]
    fn the_filter_is_well_formed_with_and_without_network() {
        for allow_network in [false, true] {
            let program = build_filter(allow_network).expect("the filter builds");
            assert!(program.len() < 200, "{} instructions", program.len());
            assert!(every_jump_lands_inside(&program));
            let last = program.last().expect("not empty");
            assert_eq!((last.code, last.k), (BPF_RETURN, SECCOMP_RET_ALLOW));
        }
    }

    /// Runs the filter the way the kernel would, for the instructions it uses.
    fn decide(program: &[sock_filter], number: libc::c_long, arguments: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        let number = u32::try_from(number).expect("small number");
        data[0..4].copy_from_slice(&number.to_le_bytes());
        data[4..8].copy_from_slice(&AUDIT_ARCH_NATIVE.to_le_bytes());
        for (index, argument) in arguments.iter().enumerate() {
            let offset = 16 + index * 8;
            data[offset..offset + 8].copy_from_slice(&argument.to_le_bytes());
        }
        let mut accumulator = 0u32;
        let mut counter = 0usize;
        loop {
            let instruction = program[counter];
            let taken = |condition: bool| {
                1 + usize::from(if condition {
                    instruction.jt
                } else {
                    instruction.jf
                })
            };
            counter += match instruction.code {
                BPF_LOAD_WORD_ABSOLUTE => {
                    let offset = instruction.k as usize;
                    let word = data[offset..offset + 4].try_into().expect("4 bytes");
                    accumulator = u32::from_le_bytes(word);
                    1
                }
                BPF_JUMP_IF_EQUAL => taken(accumulator == instruction.k),
                BPF_JUMP_IF_GREATER_OR_EQUAL => taken(accumulator >= instruction.k),
                BPF_JUMP_IF_ANY_BIT => taken(accumulator & instruction.k != 0),
                BPF_AND => {
                    accumulator &= instruction.k;
                    1
                }
                BPF_RETURN => return instruction.k,
                other => panic!("unexpected opcode {other:#x}"),
            };
        }
    }

    const DENIED: u32 = SECCOMP_RET_ERRNO | libc::EPERM as u32;

    #[test]
    fn dangerous_calls_are_denied_and_ordinary_ones_allowed() {
        let program = build_filter(false).expect("builds");
        assert_eq!(decide(&program, libc::SYS_ptrace, [0; 6]), DENIED);
        assert_eq!(decide(&program, libc::SYS_unshare, [0; 6]), DENIED);
        assert_eq!(decide(&program, libc::SYS_io_uring_setup, [0; 6]), DENIED);
        assert_eq!(
            decide(&program, libc::SYS_clone3, [0; 6]),
            SECCOMP_RET_ERRNO | libc::ENOSYS as u32
        );
        let fork_flags = (libc::CLONE_CHILD_SETTID | libc::SIGCHLD) as u64;
        assert_eq!(
            decide(&program, libc::SYS_clone, [fork_flags, 0, 0, 0, 0, 0]),
            SECCOMP_RET_ALLOW
        );
        let new_user = fork_flags | libc::CLONE_NEWUSER as u64;
        assert_eq!(
            decide(&program, libc::SYS_clone, [new_user, 0, 0, 0, 0, 0]),
            DENIED
        );
        for ordinary in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_openat,
            libc::SYS_execve,
        ] {
            assert_eq!(decide(&program, ordinary, [0; 6]), SECCOMP_RET_ALLOW);
        }
    }

    #[test]
    fn without_network_no_socket_can_be_made_or_aimed() {
        let program = build_filter(false).expect("builds");
        for family in [
            libc::AF_UNIX,
            libc::AF_INET,
            libc::AF_INET6,
            libc::AF_NETLINK,
        ] {
            assert_eq!(
                decide(&program, libc::SYS_socket, [family as u64, 0, 0, 0, 0, 0]),
                DENIED
            );
        }
        assert_eq!(
            decide(
                &program,
                libc::SYS_socketpair,
                [libc::AF_UNIX as u64, 0, 0, 0, 0, 0]
            ),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(
            decide(&program, libc::SYS_connect, [3, 0, 0, 0, 0, 0]),
            DENIED
        );
        assert_eq!(
            decide(&program, libc::SYS_sendmsg, [3, 0, 0, 0, 0, 0]),
            DENIED
        );
        assert_eq!(
            decide(&program, libc::SYS_sendto, [3, 1, 1, 0, 0, 0]),
            SECCOMP_RET_ALLOW,
            "send()"
        );
        assert_eq!(
            decide(&program, libc::SYS_sendto, [3, 1, 1, 0, 99, 110]),
            DENIED,
            "sendto(address)"
        );
    }

    #[test]
    fn with_network_only_tcp_client_sockets_can_be_made() {
        let program = build_filter(true).expect("builds");
        let socket = |family: i32, kind: i32, protocol: i32| {
            decide(
                &program,
                libc::SYS_socket,
                [family as u64, kind as u64, protocol as u64, 0, 0, 0],
            )
        };
        let flags = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
        for family in [libc::AF_INET, libc::AF_INET6] {
            assert_eq!(socket(family, libc::SOCK_STREAM, 0), SECCOMP_RET_ALLOW);
            assert_eq!(
                socket(family, libc::SOCK_STREAM | flags, libc::IPPROTO_TCP),
                SECCOMP_RET_ALLOW
            );
            assert_eq!(socket(family, libc::SOCK_DGRAM, 0), DENIED, "UDP");
            assert_eq!(socket(family, libc::SOCK_RAW, 1), DENIED, "raw");
            assert_eq!(
                socket(family, libc::SOCK_STREAM, libc::IPPROTO_SCTP),
                DENIED,
                "SCTP"
            );
            assert_eq!(socket(family, libc::SOCK_STREAM, 262), DENIED, "MPTCP");
        }
        for family in [libc::AF_UNIX, libc::AF_NETLINK, libc::AF_PACKET] {
            assert_eq!(socket(family, libc::SOCK_STREAM, 0), DENIED);
        }
    }

    #[test]
    fn with_network_every_connect_goes_to_the_guard_and_nothing_else_carries_an_address() {
        let program = build_filter(true).expect("builds");
        assert_eq!(
            decide(&program, libc::SYS_connect, [3, 0, 16, 0, 0, 0]),
            SECCOMP_RET_USER_NOTIF
        );
        assert_eq!(
            decide(&program, libc::SYS_sendto, [3, 1, 1, 0, 0, 0]),
            SECCOMP_RET_ALLOW,
            "send()"
        );
        assert_eq!(
            decide(&program, libc::SYS_sendto, [3, 1, 1, 0, 99, 16]),
            DENIED,
            "sendto(address)"
        );
        let fast_open = libc::MSG_FASTOPEN as u64;
        assert_eq!(
            decide(&program, libc::SYS_sendto, [3, 1, 1, fast_open, 0, 0]),
            DENIED,
            "TCP Fast Open"
        );
        for number in [
            libc::SYS_sendmsg,
            libc::SYS_sendmmsg,
            libc::SYS_bind,
            libc::SYS_listen,
        ] {
            assert_eq!(decide(&program, number, [3, 0, 0, 0, 0, 0]), DENIED);
        }
        assert_eq!(
            decide(&program, libc::SYS_recvfrom, [3, 0, 0, 0, 0, 0]),
            SECCOMP_RET_ALLOW
        );
    }
}
