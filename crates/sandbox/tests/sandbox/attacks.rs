//! One test per attack of DESIGN.md section 6, in strict mode: each asserts that the attack
//! failed and that the run was still recorded with a status.

use std::io::ErrorKind;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixDatagram, UnixListener};

use serde_json::json;
use sleuth_domain::ScriptRunStatus;

use crate::support::{
    ATTEMPT_HELPER, TEARDOWN_BOUND, TestDir, WALL_CLOCK, assert_all_blocked, job_with_args,
    path_text, processes_of, run, strict, strict_with_slot_uids,
};

fn attack(body: &str) -> String {
    format!("{ATTEMPT_HELPER}\n{body}")
}

#[tokio::test]
async fn root_only_files_cannot_be_read() {
    let outcome = run(
        &strict(),
        &attack(
            "attempt('/etc/shadow', lambda: open('/etc/shadow').read())\n\
             attempt('/root', lambda: __import__('os').listdir('/root'))\n\
             attempt('/proc/1/environ', lambda: open('/proc/1/environ').read())",
        ),
    )
    .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert_all_blocked(&outcome, 3);
}

#[tokio::test]
async fn the_services_own_files_cannot_be_read_even_when_world_readable() {
    // The "database": world-readable on purpose, so only the sandbox stands in the way.
    let service_dir = TestDir::new("service-data", 0o755);
    let database = service_dir.join("sleuth.db");
    std::fs::write(&database, "TOP-SECRET-ROW api_key_hash=abc").expect("write the database");
    std::fs::set_permissions(&database, std::fs::Permissions::from_mode(0o644))
        .expect("make it world-readable");
    let outcome = strict()
        .run(job_with_args(
            &attack(
                "import os\n\
                 attempt('read the database', lambda: open(trigger_args['database']).read())\n\
                 attempt('list its dir', lambda: os.listdir(trigger_args['dir']))\n\
                 attempt('list the work root', lambda: os.listdir(os.path.dirname(os.getcwd())))\n\
                 attempt('read /etc/passwd', lambda: open('/etc/passwd').read())",
            ),
            json!({"database": path_text(&database), "dir": path_text(&service_dir.path)}),
        ))
        .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert_all_blocked(&outcome, 4);
    assert!(!outcome.stdout.contains("TOP-SECRET-ROW"));
}

#[tokio::test]
async fn writes_outside_the_work_dir_fail() {
    // World-writable on purpose, so only the sandbox stands in the way.
    let open_dir = TestDir::new("world-writable", 0o777);
    let target = open_dir.join("dropped.txt");
    let outcome = strict()
        .run(job_with_args(
            &attack(
                "import os\n\
                 attempt('world-writable dir', lambda: open(trigger_args['target'], 'w').write('x'))\n\
                 attempt('/tmp', lambda: open('/tmp/sleuth-sandbox-escape', 'w').write('x'))\n\
                 attempt('the work root', lambda: open(os.path.join(os.path.dirname(os.getcwd()), 'x'), 'w'))\n\
                 attempt('/dev/shm', lambda: open('/dev/shm/sleuth-sandbox-escape', 'w').write('x'))\n\
                 attempt('mkdir in /var/tmp', lambda: os.mkdir('/var/tmp/sleuth-sandbox-escape'))",
            ),
            json!({"target": path_text(&target)}),
        ))
        .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert_all_blocked(&outcome, 5);
    assert!(!target.exists());
    assert!(!std::path::Path::new("/tmp/sleuth-sandbox-escape").exists());
    assert!(!std::path::Path::new("/var/tmp/sleuth-sandbox-escape").exists());
}

struct LoopbackListeners {
    tcp: TcpListener,
    udp: UdpSocket,
}

impl LoopbackListeners {
    fn new() -> LoopbackListeners {
        let tcp = TcpListener::bind("127.0.0.1:0").expect("bind a TCP listener");
        tcp.set_nonblocking(true).expect("nonblocking");
        let udp = UdpSocket::bind("127.0.0.1:0").expect("bind a UDP socket");
        udp.set_nonblocking(true).expect("nonblocking");
        LoopbackListeners { tcp, udp }
    }

    fn ports(&self) -> serde_json::Value {
        json!({
            "tcp": self.tcp.local_addr().expect("address").port(),
            "udp": self.udp.local_addr().expect("address").port(),
        })
    }

    /// What reached the listeners; the run is over, so anything sent is already queued.
    fn received_anything(&self) -> (bool, bool) {
        let tcp = !matches!(self.tcp.accept(), Err(error) if error.kind() == ErrorKind::WouldBlock);
        let mut buffer = [0u8; 64];
        let udp = !matches!(self.udp.recv(&mut buffer), Err(error) if error.kind() == ErrorKind::WouldBlock);
        (tcp, udp)
    }
}

const NETWORK_ATTACK: &str = "import socket\n\
    def tcp():\n    with socket.create_connection(('127.0.0.1', trigger_args['tcp']), timeout=0.3) as s:\n        s.sendall(b'hello')\n    return 'connected'\n\
    def udp():\n    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:\n        return s.sendto(b'hello', ('127.0.0.1', trigger_args['udp']))\n\
    def udp6():\n    with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as s:\n        return s.sendto(b'hello', ('::1', trigger_args['udp']))\n\
    def raw():\n    return socket.socket(socket.AF_PACKET, socket.SOCK_RAW)\n\
    def netlink():\n    return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)\n\
    attempt('tcp to loopback', tcp)\n\
    attempt('udp to loopback', udp)\n\
    attempt('udp to ipv6 loopback', udp6)\n\
    attempt('packet socket', raw)\n\
    attempt('netlink socket', netlink)\n";

#[tokio::test]
async fn tcp_and_udp_to_loopback_reach_nothing() {
    let listeners = LoopbackListeners::new();
    let outcome = strict()
        .run(job_with_args(&attack(NETWORK_ATTACK), listeners.ports()))
        .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert_all_blocked(&outcome, 5);
    assert_eq!(listeners.received_anything(), (false, false));
}

#[tokio::test]
async fn world_writable_unix_socket_files_reach_nothing() {
    // Like a local PostgreSQL socket: any uid may connect, so only the sandbox stands in the way.
    let socket_dir = TestDir::new("unix-sockets", 0o777);
    let stream_path = socket_dir.join("stream.sock");
    let datagram_path = socket_dir.join("datagram.sock");
    let stream_listener = UnixListener::bind(&stream_path).expect("bind a stream socket");
    stream_listener.set_nonblocking(true).expect("nonblocking");
    let datagram_listener = UnixDatagram::bind(&datagram_path).expect("bind a datagram socket");
    datagram_listener
        .set_nonblocking(true)
        .expect("nonblocking");
    for path in [&stream_path, &datagram_path] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777))
            .expect("open the socket to everyone");
    }
    let outcome = strict()
        .run(job_with_args(
            &attack(
                "import socket\n\
                 def stream():\n    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n    s.connect(trigger_args['stream'])\n    return s.send(b'hello')\n\
                 def datagram_by_address():\n    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n    return a.sendto(b'hello', trigger_args['datagram'])\n\
                 def reconnected_datagram():\n    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n    a.connect(trigger_args['datagram'])\n    return a.send(b'hello')\n\
                 attempt('unix stream socket', stream)\n\
                 attempt('datagram by address', datagram_by_address)\n\
                 attempt('reconnected datagram', reconnected_datagram)\n\
                 a, b = socket.socketpair()\n\
                 a.send(b'ping')\n\
                 print('socketpair still works:', b.recv(4))",
            ),
            json!({"stream": path_text(&stream_path), "datagram": path_text(&datagram_path)}),
        ))
        .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert_all_blocked(&outcome, 3);
    assert!(
        outcome.stdout.contains("socketpair still works: b'ping'"),
        "{}",
        outcome.stdout
    );
    assert!(
        matches!(stream_listener.accept(), Err(error) if error.kind() == ErrorKind::WouldBlock)
    );
    let mut buffer = [0u8; 16];
    assert!(
        matches!(datagram_listener.recv(&mut buffer), Err(error) if error.kind() == ErrorKind::WouldBlock)
    );
}

#[tokio::test]
async fn signals_to_the_parent_and_to_everyone_reach_nobody_outside() {
    let sandbox = strict();
    let outcome = sandbox
        .run(job_with_args(
            &attack(
                "import os, signal\n\
                 attempt('kill the parent', lambda: os.kill(os.getppid(), signal.SIGKILL))\n\
                 attempt('kill pid 1', lambda: os.kill(1, signal.SIGKILL))\n\
                 attempt('kill the service by host pid', lambda: os.kill(trigger_args['service_pid'], signal.SIGKILL))\n\
                 attempt('kill everyone', lambda: os.kill(-1, signal.SIGKILL))\n\
                 print('the script itself survived')",
            ),
            json!({"service_pid": std::process::id()}),
        ))
        .await;
    // This test process is the service: it is still here to read the outcome.
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert_all_blocked(&outcome, 4);
    assert!(
        outcome.stdout.contains("the script itself survived"),
        "{}",
        outcome.stdout
    );
    // The sandbox itself is unharmed.
    assert_eq!(
        run(&sandbox, "print('still here')").await.stdout,
        "still here\n"
    );
}

#[tokio::test]
async fn nested_namespaces_cannot_be_created() {
    let outcome = run(
        &strict(),
        &attack(
            "import ctypes, os, subprocess\n\
             libc = ctypes.CDLL(None, use_errno=True)\n\
             def unshare(flag):\n    if libc.unshare(flag) != 0:\n        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))\n    return 'unshared'\n\
             def unshare_command():\n    result = subprocess.run(['/usr/bin/unshare', '--user', '--map-root-user', 'id'], capture_output=True)\n    if result.returncode != 0:\n        raise OSError(result.stderr.decode().strip())\n    return result.stdout\n\
             attempt('unshare user', lambda: unshare(0x10000000))\n\
             attempt('unshare mount', lambda: unshare(0x00020000))\n\
             attempt('unshare net', lambda: unshare(0x40000000))\n\
             attempt('unshare command', unshare_command)",
        ),
    )
    .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert_all_blocked(&outcome, 4);
}

#[tokio::test]
async fn an_endless_loop_is_timed_out() {
    let outcome = run(&strict(), "while True:\n    pass").await;
    assert_eq!(outcome.status, ScriptRunStatus::TimedOut, "{outcome:?}");
    assert!(
        outcome.duration < WALL_CLOCK + TEARDOWN_BOUND,
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_four_gib_allocation_fails_with_memory_error() {
    let outcome = run(
        &strict(),
        "data = bytearray(4 * 1024 ** 3)\nprint('allocated')",
    )
    .await;
    assert_eq!(outcome.status, ScriptRunStatus::Failed, "{outcome:?}");
    assert!(outcome.stderr.contains("MemoryError"), "{}", outcome.stderr);
    assert!(!outcome.stdout.contains("allocated"));
}

#[tokio::test]
async fn a_fork_bomb_is_contained_and_leaves_nothing_behind() {
    let (sandbox, slot_uids) = strict_with_slot_uids();
    let outcome = run(
        &sandbox,
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
    )
    .await;
    assert_eq!(outcome.status, ScriptRunStatus::TimedOut, "{outcome:?}");
    assert!(
        outcome.duration < WALL_CLOCK + TEARDOWN_BOUND,
        "{outcome:?}"
    );
    assert_eq!(processes_of(slot_uids), Vec::<u32>::new());
    // The host still has room for the next run.
    assert_eq!(run(&sandbox, "print('fine')").await.stdout, "fine\n");
}

#[tokio::test]
async fn a_hundred_mib_of_output_is_cut_at_the_cap_and_the_run_killed() {
    let outcome = run(
        &strict(),
        "import sys\nchunk = 'x' * (1024 * 1024)\nfor _ in range(100):\n    sys.stdout.write(chunk)\nprint('done', file=sys.stderr)",
    )
    .await;
    assert_eq!(outcome.status, ScriptRunStatus::Failed, "{outcome:?}");
    assert_eq!(outcome.stdout.len(), 1024 * 1024);
    assert!(!outcome.stderr.contains("done"));
    let syserr = outcome.syserr.expect("the overflow is recorded");
    assert!(syserr.contains("stdout"), "{syserr}");
}

#[tokio::test]
async fn a_flood_on_stderr_is_cut_at_its_own_cap() {
    let outcome = run(
        &strict(),
        "import sys\nwhile True:\n    sys.stderr.write('e' * 4096)",
    )
    .await;
    assert_eq!(outcome.status, ScriptRunStatus::Failed, "{outcome:?}");
    assert_eq!(outcome.stderr.len(), 256 * 1024);
    assert!(
        outcome
            .syserr
            .is_some_and(|reason| reason.contains("stderr"))
    );
}

#[tokio::test]
async fn a_detached_daemon_is_gone_when_the_run_ends() {
    let (sandbox, slot_uids) = strict_with_slot_uids();
    let outcome = run(
        &sandbox,
        "import os, subprocess, time\n\
         first = os.fork()\n\
         if first == 0:\n    os.setsid()\n    if os.fork() == 0:\n        while True:\n            open('heartbeat', 'a').write('.')\n            time.sleep(0.05)\n    os._exit(0)\n\
         os.waitpid(first, 0)\n\
         subprocess.Popen(['/bin/sleep', '30'], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n\
         time.sleep(0.2)\n\
         print('heartbeat seen', os.path.getsize('heartbeat') > 0)",
    )
    .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert_eq!(
        outcome.stdout, "heartbeat seen True\n",
        "the daemon ran during the run"
    );
    assert!(
        outcome.syserr.is_none(),
        "no process kept the output open: {outcome:?}"
    );
    assert_eq!(
        processes_of(slot_uids),
        Vec::<u32>::new(),
        "neither the double-forked daemon nor the setsid sleep survived the run"
    );
}
