//! The seccomp layer, as two filters installed one after the other. The kernel runs both on
//! every call and takes the more restrictive answer.
//!
//! - **The policy**, compiled by seccompiler (the filter compiler Firecracker maintains and
//!   audits): what a script may not call, and with which arguments. It closes what the
//!   other layers leave open: sockets (Landlock only knows TCP, and not Unix socket files),
//!   new namespaces (a user namespace would hand the script every capability inside it),
//!   ptrace and cross-process memory access, mounts, io_uring (which bypasses syscall-based
//!   filters), bpf, keyrings, and module or kexec loading. Denied calls fail with EPERM:
//!   the script sees a plain PermissionError.
//! - **The supervisor filter**, a dozen instructions written out here, for what seccompiler
//!   has no words for: handing each `connect` of a script allowed the network to the egress
//!   guard (SECCOMP_RET_USER_NOTIF, with the listener it creates), ENOSYS for clone3 (whose
//!   flags live in memory, so the C library must fall back to clone, whose flags the policy
//!   checks), and the x32 system calls (other numbers on the same architecture, which no
//!   number-based rule would match).

use std::collections::BTreeMap;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use libc::sock_filter;
use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
/// Hands the call to the supervisor holding the filter's listener (the egress guard).
const SECCOMP_RET_USER_NOTIF: u32 = 0x7fc0_0000;

// Classic BPF opcodes (linux/filter.h), for the supervisor filter.
const BPF_LOAD_WORD_ABSOLUTE: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const BPF_JUMP_IF_EQUAL: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const BPF_JUMP_IF_GREATER_OR_EQUAL: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const BPF_RETURN: u16 = 0x06; // BPF_RET | BPF_K

// Offsets in struct seccomp_data.
const OFFSET_SYSCALL_NUMBER: u32 = 0;
const OFFSET_ARCHITECTURE: u32 = 4;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH_NATIVE: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH_NATIVE: u32 = 0xc000_00b7;
#[cfg(target_arch = "x86_64")]
const TARGET_ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const TARGET_ARCH: TargetArch = TargetArch::aarch64;

/// The namespace flags of clone(2). CLONE_NEWTIME shares its bit with the exit signal in
/// clone(2) and is only reachable through clone3 and unshare, which are denied whole.
const CLONE_NAMESPACE_FLAGS: [libc::c_int; 7] = [
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
];

/// The bits of socket(2)'s type argument that hold the type itself (SOCK_NONBLOCK and
/// SOCK_CLOEXEC live above them).
const SOCKET_TYPE_MASK: u64 = 0xf;

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

/// A condition on the low 32 bits of argument `index` (the arguments the policy reads are
/// all ints, or flags whose bits of interest are low).
fn argument(index: u8, operator: SeccompCmpOp, value: u64) -> Result<SeccompCondition, String> {
    SeccompCondition::new(index, SeccompCmpArgLen::Dword, operator, value)
        .map_err(|error| format!("seccomp policy: {error}"))
}

/// A rule that matches when all of `conditions` hold; a call's rules match when any does.
fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, String> {
    SeccompRule::new(conditions).map_err(|error| format!("seccomp policy: {error}"))
}

/// The policy's rules: a call with no rules is denied whatever its arguments; a call with
/// rules is denied when one of them matches.
fn policy_rules(allow_network: bool) -> Result<BTreeMap<i64, Vec<SeccompRule>>, String> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = denied_system_calls()
        .into_iter()
        .map(|number| (number, Vec::new()))
        .collect();
    let mut clone_rules = Vec::new();
    for flag in CLONE_NAMESPACE_FLAGS {
        let flag = u64::from(flag as u32);
        clone_rules.push(rule(vec![argument(
            0,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )?])?);
    }
    rules.insert(libc::SYS_clone, clone_rules);
    // Both ways: socketpair stays (asyncio and subprocess helpers use it). What could reach
    // a socket file through a socketpair, or an address the egress guard never judged, is a
    // datagram by address, or a TCP Fast Open send (which connects to its own address): so
    // sendmsg and sendmmsg (whose addresses the filter cannot see) go, and sendto with an
    // address or MSG_FASTOPEN. send() is sendto with neither.
    rules.insert(libc::SYS_sendmsg, Vec::new());
    rules.insert(libc::SYS_sendmmsg, Vec::new());
    let fast_open = libc::MSG_FASTOPEN as u64;
    rules.insert(
        libc::SYS_sendto,
        vec![
            rule(vec![argument(5, SeccompCmpOp::Ne, 0)?])?,
            rule(vec![argument(
                3,
                SeccompCmpOp::MaskedEq(fast_open),
                fast_open,
            )?])?,
        ],
    );
    if allow_network {
        rules.insert(libc::SYS_socket, network_socket_rules()?);
        // A script is a client: a listening socket would take connections from anywhere.
        rules.insert(libc::SYS_bind, Vec::new());
        rules.insert(libc::SYS_listen, Vec::new());
        // connect stays open here: the supervisor filter hands it to the egress guard.
    } else {
        // No socket at all: UDP is beyond Landlock, and Unix sockets beyond it too: a
        // reconnected datagram socketpair could reach a socket file, so connect goes as well.
        rules.insert(libc::SYS_socket, Vec::new());
        rules.insert(libc::SYS_connect, Vec::new());
    }
    Ok(rules)
}

/// What a script allowed the network may open: TCP client sockets over IPv4 or IPv6, and
/// nothing else. UDP, raw, SCTP and multipath TCP sockets could carry packets to addresses
/// the egress guard never saw (datagrams by address; SCTP associations and MPTCP subflows
/// to addresses a peer announces), and Unix sockets reach socket files.
fn network_socket_rules() -> Result<Vec<SeccompRule>, String> {
    let domain_is_not_ip = rule(vec![
        argument(0, SeccompCmpOp::Ne, libc::AF_INET as u64)?,
        argument(0, SeccompCmpOp::Ne, libc::AF_INET6 as u64)?,
    ])?;
    let protocol_is_not_tcp = rule(vec![
        argument(2, SeccompCmpOp::Ne, 0)?,
        argument(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP as u64)?,
    ])?;
    let mut rules = vec![domain_is_not_ip, protocol_is_not_tcp];
    // The policy can only compare masked bits for equality: every type but SOCK_STREAM.
    for kind in (0..=SOCKET_TYPE_MASK).filter(|kind| *kind != libc::SOCK_STREAM as u64) {
        rules.push(rule(vec![argument(
            1,
            SeccompCmpOp::MaskedEq(SOCKET_TYPE_MASK),
            kind,
        )?])?);
    }
    Ok(rules)
}

/// The two programs of one run, in the order they are installed.
pub(crate) struct Filters {
    policy: Vec<sock_filter>,
    supervisor: Vec<sock_filter>,
}

/// Builds both filters. `allow_network` lets TCP client sockets through, each connection
/// judged by the egress guard.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) fn build_filters(allow_network: bool) -> Result<Filters, String> {
    let compiled: seccompiler::BpfProgram = SeccompFilter::new(
        policy_rules(allow_network)?,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        TARGET_ARCH,
    )
    .and_then(TryInto::try_into)
    .map_err(|error| format!("seccomp policy: {error}"))?;
    let policy = compiled
        .into_iter()
        .map(|instruction| sock_filter {
            code: instruction.code,
            jt: instruction.jt,
            jf: instruction.jf,
            k: instruction.k,
        })
        .collect();
    Ok(Filters {
        policy,
        supervisor: supervisor_filter(allow_network)?,
    })
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) fn build_filters(_allow_network: bool) -> Result<Filters, String> {
    Err("the seccomp filters are written for x86_64 and aarch64 only".to_owned())
}

fn statement(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

/// `if accumulator == k { return answer }`, in two instructions.
fn return_if_equal(k: u32, answer: u32) -> [sock_filter; 2] {
    [
        sock_filter {
            code: BPF_JUMP_IF_EQUAL,
            jt: 0,
            jf: 1,
            k,
        },
        statement(BPF_RETURN, answer),
    ]
}

fn error_answer(errno: i32) -> u32 {
    SECCOMP_RET_ERRNO | (errno as u32 & 0xffff)
}

fn syscall_number(number: libc::c_long) -> Result<u32, String> {
    u32::try_from(number).map_err(|_| format!("system call number {number} out of range"))
}

/// The supervisor filter: the parts of the policy seccompiler cannot express.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn supervisor_filter(allow_network: bool) -> Result<Vec<sock_filter>, String> {
    let mut program = vec![statement(BPF_LOAD_WORD_ABSOLUTE, OFFSET_ARCHITECTURE)];
    // A call through another ABI (i386 int 0x80 on x86_64) would be matched against the
    // wrong numbers: end the process instead.
    program.push(sock_filter {
        code: BPF_JUMP_IF_EQUAL,
        jt: 1,
        jf: 0,
        k: AUDIT_ARCH_NATIVE,
    });
    program.push(statement(BPF_RETURN, SECCOMP_RET_KILL_PROCESS));
    program.push(statement(BPF_LOAD_WORD_ABSOLUTE, OFFSET_SYSCALL_NUMBER));
    #[cfg(target_arch = "x86_64")]
    {
        // x32 system calls carry this bit on the x86_64 architecture value.
        const X32_SYSCALL_BIT: u32 = 0x4000_0000;
        program.push(sock_filter {
            code: BPF_JUMP_IF_GREATER_OR_EQUAL,
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        });
        program.push(statement(BPF_RETURN, error_answer(libc::EPERM)));
    }
    program.extend(return_if_equal(
        syscall_number(libc::SYS_clone3)?,
        error_answer(libc::ENOSYS),
    ));
    if allow_network {
        program.extend(return_if_equal(
            syscall_number(libc::SYS_connect)?,
            SECCOMP_RET_USER_NOTIF,
        ));
    }
    program.push(statement(BPF_RETURN, SECCOMP_RET_ALLOW));
    Ok(program)
}

/// Installs both filters on the calling thread (the launcher is single threaded). Needs
/// no_new_privs first, or CAP_SYS_ADMIN. With `listener`, the kernel also returns the
/// descriptor on which the calls the supervisor filter hands over (`connect`) arrive, for
/// the egress guard; it is close-on-exec, so the interpreter never holds it.
pub(crate) fn install_filters(
    filters: &Filters,
    listener: bool,
) -> Result<Option<OwnedFd>, String> {
    install(&filters.policy, 0)?;
    if !listener {
        install(&filters.supervisor, 0)?;
        return Ok(None);
    }
    // Killable waiting (Linux 5.19): once the guard has taken a call, a signal to the script
    // does not interrupt it, so a connection the guard made is never made twice.
    let descriptor = install(
        &filters.supervisor,
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
    )
    .or_else(|_| install(&filters.supervisor, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER))?;
    let descriptor = RawFd::try_from(descriptor)
        .ok()
        .filter(|descriptor| *descriptor >= 0)
        .ok_or_else(|| "seccomp returned no listener".to_owned())?;
    // SAFETY: the kernel just created this descriptor for us; nothing else owns it.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(descriptor) }))
}

/// seccomp(SET_MODE_FILTER) with `flags`; returns what the call returned (a listener's
/// descriptor with NEW_LISTENER, else 0).
fn install(program: &[sock_filter], flags: libc::c_ulong) -> Result<libc::c_long, String> {
    let length = u16::try_from(program.len()).map_err(|_| "seccomp filter too long".to_owned())?;
    let program_header = libc::sock_fprog {
        len: length,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: seccomp(SET_MODE_FILTER) reads `length` instructions from `program`, which
    // outlives the call; the kernel copies the program and keeps no pointer to it.
    let result = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &program_header as *const libc::sock_fprog,
        )
    };
    if result < 0 {
        return Err(format!(
            "seccomp filter refused: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BPF_JUMP_ALWAYS: u16 = 0x05; // BPF_JMP | BPF_JA
    const BPF_JUMP_IF_GREATER: u16 = 0x25; // BPF_JMP | BPF_JGT | BPF_K
    const BPF_JUMP_IF_ANY_BIT: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
    const BPF_AND: u16 = 0x54; // BPF_ALU | BPF_AND | BPF_K

    fn every_jump_lands_inside(program: &[sock_filter]) -> bool {
        program.iter().enumerate().all(|(index, instruction)| {
            let is_jump = instruction.code & 0x07 == 0x05;
            let farthest = if instruction.code == BPF_JUMP_ALWAYS {
                instruction.k as usize
            } else {
                usize::from(instruction.jt.max(instruction.jf))
            };
            !is_jump || index + 1 + farthest < program.len()
        })
    }

    #[test]
    fn the_filters_are_well_formed_with_and_without_network() {
        for allow_network in [false, true] {
            let filters = build_filters(allow_network).expect("the filters build");
            for program in [&filters.policy, &filters.supervisor] {
                assert!(program.len() < 1000, "{} instructions", program.len());
                assert!(every_jump_lands_inside(program));
            }
        }
    }

    /// Runs one program the way the kernel would, for the instructions it uses.
    fn run(program: &[sock_filter], data: &[u8; 64]) -> u32 {
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
                BPF_JUMP_ALWAYS => 1 + instruction.k as usize,
                BPF_JUMP_IF_EQUAL => taken(accumulator == instruction.k),
                BPF_JUMP_IF_GREATER => taken(accumulator > instruction.k),
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

    /// Runs both filters and answers as the kernel does: the most restrictive action wins
    /// (actions compare as signed numbers, so KILL_PROCESS, 0x80000000, is the strongest).
    fn decide(filters: &Filters, number: libc::c_long, arguments: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        let number = u32::try_from(number).expect("small number");
        data[0..4].copy_from_slice(&number.to_le_bytes());
        data[4..8].copy_from_slice(&AUDIT_ARCH_NATIVE.to_le_bytes());
        for (index, argument) in arguments.iter().enumerate() {
            let offset = 16 + index * 8;
            data[offset..offset + 8].copy_from_slice(&argument.to_le_bytes());
        }
        [&filters.supervisor, &filters.policy]
            .into_iter()
            .map(|program| run(program, &data))
            .min_by_key(|answer| (answer & 0xffff_0000) as i32)
            .expect("two filters")
    }

    const DENIED: u32 = SECCOMP_RET_ERRNO | libc::EPERM as u32;

    #[test]
    fn dangerous_calls_are_denied_and_ordinary_ones_allowed() {
        let program = build_filters(false).expect("builds");
        assert_eq!(decide(&program, libc::SYS_ptrace, [0; 6]), DENIED);
        assert_eq!(decide(&program, libc::SYS_unshare, [0; 6]), DENIED);
        assert_eq!(decide(&program, libc::SYS_io_uring_setup, [0; 6]), DENIED);
        assert_eq!(
            decide(&program, libc::SYS_clone3, [0; 6]),
            SECCOMP_RET_ERRNO | libc::ENOSYS as u32
        );
        #[cfg(target_arch = "x86_64")]
        assert_eq!(
            decide(&program, libc::SYS_read | 0x4000_0000, [0; 6]),
            DENIED,
            "an x32 call"
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
        let program = build_filters(false).expect("builds");
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
        let program = build_filters(true).expect("builds");
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
        let program = build_filters(true).expect("builds");
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
