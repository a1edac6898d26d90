//! A script allowed the network, in strict mode: it reaches what the operator named and the
//! outside world, and nothing of the host or its networks, in any spelling, by any call,
//! from any thread; every refusal is recorded with the run.

use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;
use sleuth_domain::ScriptRunStatus;
use sleuth_sandbox::{Destination, Sandbox, SandboxConfig, SandboxMode, ScriptJob};

use crate::support::{ATTEMPT_HELPER, TestDir, assert_all_blocked, config};

/// The attempt helper, and `tcp(address, family)`: one connection with a timeout, so that a
/// refusal that came late would show as a slow test rather than hang it.
fn attack(body: &str) -> String {
    format!("{ATTEMPT_HELPER}\n{TCP_HELPER}\n{body}")
}

const TCP_HELPER: &str = r#"
import socket
def tcp(address, family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(address)
    return 'connected'
"#;

fn network_job(code: &str, trigger_args: serde_json::Value) -> ScriptJob {
    ScriptJob {
        code: code.to_owned(),
        trigger_args,
        allow_network: true,
        ..ScriptJob::default()
    }
}

/// A strict sandbox whose operator named these destinations, with a longer wall clock than
/// the other tests: a refused connection must be refused at once, never time out, and the
/// extra time would show as a slow test, not a pass.
fn guarded(allowed: &[&str], resolv_conf: Option<PathBuf>) -> Sandbox {
    let mut config: SandboxConfig = config(SandboxMode::Strict);
    config.wall_clock = Duration::from_secs(5);
    config.cpu_seconds = 5;
    config.allowed_destinations = allowed
        .iter()
        .map(|text| Destination::parse(text).expect("a destination"))
        .collect();
    if let Some(resolv_conf) = resolv_conf {
        config.resolv_conf = resolv_conf;
    }
    let sandbox = Sandbox::probe(config);
    if let Err(not_ready) = sandbox.ready() {
        panic!("{not_ready}; {}", sandbox.report());
    }
    sandbox
}

/// A TCP listener that remembers whether anything connected.
struct Listener {
    socket: TcpListener,
}

impl Listener {
    fn on(address: &str) -> Listener {
        let socket = TcpListener::bind(address).expect("bind a listener");
        socket.set_nonblocking(true).expect("nonblocking");
        Listener { socket }
    }

    fn port(&self) -> u16 {
        self.socket.local_addr().expect("address").port()
    }

    /// Whether a connection is waiting; the run is over, so any that was made is queued.
    fn was_reached(&self) -> bool {
        !matches!(self.socket.accept(), Err(error) if error.kind() == ErrorKind::WouldBlock)
    }
}

/// The host's address on its default route: a service bound to every interface answers on
/// it, so it must be as unreachable as loopback.
fn host_address() -> Ipv4Addr {
    let probe = UdpSocket::bind("0.0.0.0:0").expect("bind");
    // A UDP connect sends nothing; it only picks the route and so the source address.
    probe.connect("192.0.2.1:9").expect("a default route");
    match probe.local_addr().expect("address") {
        SocketAddr::V4(address) => *address.ip(),
        SocketAddr::V6(_) => panic!("an IPv4 route was asked for"),
    }
}

#[tokio::test]
async fn no_spelling_of_the_hosts_own_services_is_reachable() {
    let v4 = Listener::on("127.0.0.1:0");
    let v6 = Listener::on("[::1]:0");
    let everywhere = Listener::on("0.0.0.0:0");
    let host = host_address();
    assert!(!host.is_loopback(), "the test needs a non-loopback address");
    let outcome = guarded(&[], None)
        .run(network_job(
            &attack(
                "a = trigger_args\n\
                 attempt('loopback', lambda: tcp(('127.0.0.1', a['v4'])))\n\
                 attempt('another loopback address', lambda: tcp(('127.0.0.2', a['v4'])))\n\
                 attempt('this network', lambda: tcp(('0.0.0.0', a['v4'])))\n\
                 attempt('ipv6 loopback', lambda: tcp(('::1', a['v6']), socket.AF_INET6))\n\
                 attempt('ipv6 unspecified', lambda: tcp(('::', a['v6']), socket.AF_INET6))\n\
                 attempt('ipv4-mapped loopback', lambda: tcp(('::ffff:127.0.0.1', a['v4']), socket.AF_INET6))\n\
                 attempt('nat64 loopback', lambda: tcp(('64:ff9b::7f00:1', a['v4']), socket.AF_INET6))\n\
                 attempt('the host by its own address', lambda: tcp((a['host'], a['everywhere'])))\n\
                 attempt('blocking connect', lambda: socket.socket().connect(('127.0.0.1', a['v4'])))\n\
                 attempt('unix socket', lambda: socket.socket(socket.AF_UNIX).connect('/run/postgresql/.s.PGSQL.5432'))",
            ),
            json!({
                "v4": v4.port(),
                "v6": v6.port(),
                "everywhere": everywhere.port(),
                "host": host.to_string(),
            }),
        ))
        .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert_all_blocked(&outcome, 10);
    // Refused by the guard (EACCES, at once), not merely unanswered.
    assert_eq!(
        outcome.stdout.matches("Errno 13").count(),
        9,
        "{}",
        outcome.stdout
    );
    assert!(!v4.was_reached() && !v6.was_reached() && !everywhere.was_reached());
    assert!(
        outcome
            .denied_connections
            .contains(&format!("127.0.0.1:{} (a loopback address)", v4.port())),
        "{:?}",
        outcome.denied_connections
    );
    // Refused whatever the range of the host's address (on some hosts it is private or a
    // documentation range, and that rule answers first; the host rule is unit-tested).
    let host_target = format!("{host}:{} (", everywhere.port());
    assert!(
        outcome
            .denied_connections
            .iter()
            .any(|denied| denied.starts_with(&host_target)),
        "{:?}",
        outcome.denied_connections
    );
    let syserr = outcome.syserr.unwrap_or_default();
    assert!(
        syserr.contains("the sandbox refused 9 connections"),
        "{syserr}"
    );
    assert!(
        outcome.isolation.contains("egress-guard"),
        "{}",
        outcome.isolation
    );
}

#[tokio::test]
async fn private_link_local_and_metadata_addresses_are_refused_at_once() {
    let outcome = guarded(&[], None)
        .run(network_job(
            &attack(
                "import time\n\
                 start = time.monotonic()\n\
                 attempt('cloud metadata', lambda: tcp(('169.254.169.254', 80)))\n\
                 attempt('mapped metadata', lambda: tcp(('::ffff:169.254.169.254', 80), socket.AF_INET6))\n\
                 attempt('aws ipv6 metadata', lambda: tcp(('fd00:ec2::254', 80), socket.AF_INET6))\n\
                 attempt('alibaba metadata', lambda: tcp(('100.100.100.200', 80)))\n\
                 attempt('private 10/8', lambda: tcp(('10.1.2.3', 5432)))\n\
                 attempt('private 172.16/12', lambda: tcp(('172.20.0.5', 6379)))\n\
                 attempt('private 192.168/16', lambda: tcp(('192.168.1.1', 80)))\n\
                 attempt('ipv6 link-local', lambda: tcp(('fe80::1', 80, 0, 1), socket.AF_INET6))\n\
                 print('refused before any timeout:', time.monotonic() - start < 2)",
            ),
            json!({}),
        ))
        .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert_all_blocked(&outcome, 8);
    assert_eq!(
        outcome.stdout.matches("Errno 13").count(),
        8,
        "{}",
        outcome.stdout
    );
    // Each attempt would wait 3 s for an answer that never comes: refused at once, not
    // left unanswered.
    assert!(
        outcome.stdout.contains("refused before any timeout: True"),
        "{}",
        outcome.stdout
    );
    assert!(
        outcome.denied_connections.contains(
            &"169.254.169.254:80 (a link-local address (cloud instance metadata lives here))"
                .to_owned()
        ),
        "{:?}",
        outcome.denied_connections
    );
}

#[tokio::test]
async fn nothing_but_a_guarded_tcp_connect_can_carry_an_address() {
    let tcp = Listener::on("127.0.0.1:0");
    let udp = UdpSocket::bind("127.0.0.1:0").expect("bind");
    udp.set_nonblocking(true).expect("nonblocking");
    let outcome = guarded(&[], None)
        .run(network_job(
            &attack(
                "import socket\n\
                 a = trigger_args\n\
                 def udp():\n    \
                     return socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', a['udp']))\n\
                 def fast_open():\n    \
                     s = socket.socket()\n    \
                     return s.sendto(b'x', socket.MSG_FASTOPEN, ('127.0.0.1', a['tcp']))\n\
                 def sendto_address():\n    \
                     s = socket.socket()\n    \
                     return s.sendto(b'x', ('127.0.0.1', a['tcp']))\n\
                 def sendmsg_address():\n    \
                     x, y = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)\n    \
                     return x.sendmsg([b'x'], [], 0, '/dev/log')\n\
                 def listen():\n    \
                     s = socket.socket()\n    \
                     s.listen()\n    \
                     return s.getsockname()\n\
                 def bind():\n    \
                     return socket.socket().bind(('0.0.0.0', 0))\n\
                 attempt('udp', udp)\n\
                 attempt('tcp fast open', fast_open)\n\
                 attempt('sendto with an address', sendto_address)\n\
                 attempt('sendmsg with an address', sendmsg_address)\n\
                 attempt('raw socket', lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))\n\
                 attempt('sctp', lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132))\n\
                 attempt('multipath tcp', lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262))\n\
                 attempt('listen', listen)\n\
                 attempt('bind', bind)\n\
                 attempt('netlink', lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))",
            ),
            json!({"tcp": tcp.port(), "udp": udp.local_addr().expect("address").port()}),
        ))
        .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert_all_blocked(&outcome, 10);
    assert!(!tcp.was_reached());
    let mut buffer = [0u8; 8];
    assert!(matches!(udp.recv(&mut buffer), Err(error) if error.kind() == ErrorKind::WouldBlock));
}

#[tokio::test]
async fn a_destination_the_operator_named_is_reachable_and_nothing_beside_it() {
    let named = Listener::on("127.0.0.1:0");
    let by_name = Listener::on("127.0.0.1:0");
    let neighbour = Listener::on("127.0.0.1:0");
    let allowed = [
        format!("127.0.0.1:{}", named.port()),
        format!("localhost:{}", by_name.port()),
    ];
    let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
    let outcome = guarded(&allowed, None)
        .run(network_job(
            &attack(
                "import socket, threading\n\
                 a = trigger_args\n\
                 def blocking():\n    \
                     with socket.create_connection(('127.0.0.1', a['named'])) as s:\n        \
                         s.sendall(b'blocking')\n    \
                     return 'sent'\n\
                 def nonblocking():\n    \
                     with socket.create_connection(('127.0.0.1', a['named']), timeout=2) as s:\n        \
                         s.sendall(b'nonblocking')\n    \
                     return 'sent'\n\
                 def from_a_thread():\n    \
                     result = []\n    \
                     worker = threading.Thread(target=lambda: result.append(blocking()))\n    \
                     worker.start()\n    \
                     worker.join()\n    \
                     return result[0]\n\
                 def by_name():\n    \
                     with socket.create_connection(('127.0.0.1', a['by_name']), timeout=2):\n        \
                         return 'sent'\n\
                 attempt('named, blocking', blocking)\n\
                 attempt('named, with a timeout', nonblocking)\n\
                 attempt('named, from a thread', from_a_thread)\n\
                 attempt('named by host name', by_name)\n\
                 attempt('the port beside it', lambda: socket.create_connection(('127.0.0.1', a['neighbour']), timeout=2))\n\
                 def denied_from_a_thread():\n    \
                     errors = []\n    \
                     def connect():\n        \
                         try:\n            \
                             socket.create_connection(('127.0.0.1', a['neighbour']), timeout=2)\n        \
                         except OSError as error:\n            \
                             errors.append(error)\n    \
                     worker = threading.Thread(target=connect)\n    \
                     worker.start()\n    \
                     worker.join()\n    \
                     raise errors[0]\n\
                 attempt('the port beside it, from a thread', denied_from_a_thread)",
            ),
            json!({"named": named.port(), "by_name": by_name.port(), "neighbour": neighbour.port()}),
        ))
        .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    for allowed in [
        "named, blocking",
        "named, with a timeout",
        "named, from a thread",
        "named by host name",
    ] {
        assert!(
            outcome
                .stdout
                .contains(&format!("escaped {allowed}: 'sent'")),
            "{allowed}: {}",
            outcome.stdout
        );
    }
    assert_eq!(
        outcome.stdout.matches("blocked ").count(),
        2,
        "{}",
        outcome.stdout
    );
    assert_eq!(outcome.stdout.matches("Errno 13").count(), 2);
    let mut received = Vec::new();
    for _ in 0..3 {
        let (mut stream, _) = named
            .socket
            .accept()
            .expect("a connection per allowed attempt");
        stream.set_nonblocking(false).expect("blocking");
        let mut text = String::new();
        stream.read_to_string(&mut text).expect("read");
        received.push(text);
    }
    received.sort();
    assert_eq!(received, ["blocking", "blocking", "nonblocking"]);
    assert!(by_name.was_reached());
    assert!(!neighbour.was_reached());
}

#[tokio::test]
async fn an_address_changed_while_the_guard_judges_it_never_reaches_the_denied_port() {
    // The script races the guard: one thread connects (without blocking, so that a full
    // backlog cannot stall it) again and again from a buffer that
    // another thread flips between the named port and a denied one. A guard that let the
    // script's own call go ahead after checking would sometimes connect to what it never
    // judged; this guard connects with its own copy of what it judged.
    let named = Listener::on("127.0.0.1:0");
    let denied = Listener::on("127.0.0.1:0");
    let allowed = format!("127.0.0.1:{}", named.port());
    let outcome = guarded(&[&allowed], None)
        .run(network_job(
            "import ctypes, socket, struct, threading, time\n\
             libc = ctypes.CDLL(None, use_errno=True)\n\
             def sockaddr(port):\n    \
                 return struct.pack('=H', socket.AF_INET) + struct.pack('!H', port) + socket.inet_aton('127.0.0.1') + bytes(8)\n\
             good = sockaddr(trigger_args['named'])\n\
             bad = sockaddr(trigger_args['denied'])\n\
             buffer = ctypes.create_string_buffer(good, 16)\n\
             stop = False\n\
             def flip():\n    \
                 while not stop:\n        \
                     ctypes.memmove(buffer, bad, 16)\n        \
                     ctypes.memmove(buffer, good, 16)\n\
             flipper = threading.Thread(target=flip)\n\
             flipper.start()\n\
             connected = refused = 0\n\
             deadline = time.monotonic() + 1.0\n\
             while time.monotonic() < deadline:\n    \
                 s = socket.socket()\n    \
                 s.setblocking(False)\n    \
                 result = libc.connect(s.fileno(), buffer, 16)\n    \
                 error = ctypes.get_errno()\n    \
                 if result == 0 or error == 115:\n        \
                     connected += 1\n    \
                 elif error == 13:\n        \
                     refused += 1\n    \
                 else:\n        \
                     print('unexpected errno', error)\n    \
                 s.close()\n\
             stop = True\n\
             flipper.join()\n\
             print('connected', connected, 'refused', refused)",
            json!({"named": named.port(), "denied": denied.port()}),
        ))
        .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    let counts: Vec<u64> = outcome
        .stdout
        .split_whitespace()
        .filter_map(|word| word.parse().ok())
        .collect();
    assert_eq!(counts.len(), 2, "{}", outcome.stdout);
    // Both outcomes happened, so the race was really run both ways.
    assert!(counts[0] > 0 && counts[1] > 0, "{}", outcome.stdout);
    assert!(named.was_reached());
    assert!(
        !denied.was_reached(),
        "a connection reached the denied port"
    );
}

#[tokio::test]
async fn many_refusals_are_listed_up_to_a_bound_and_counted_beyond_it() {
    let outcome = guarded(&[], None)
        .run(network_job(
            "import socket\n\
             for port in range(50):\n    \
                 try:\n        \
                     socket.create_connection(('127.0.0.1', 10000 + port), timeout=1)\n    \
                 except PermissionError:\n        \
                     pass\n\
             print('done')",
            json!({}),
        ))
        .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert_eq!(outcome.denied_connections.len(), 20);
    let syserr = outcome.syserr.unwrap_or_default();
    assert!(
        syserr.contains("the sandbox refused 50 connections") && syserr.contains("(and 30 more)"),
        "{syserr}"
    );
}

/// A DNS server over TCP on a loopback address of its own, answering every A query with
/// `answer` and every other query with no records, until dropped.
struct DnsServer {
    address: Ipv4Addr,
    stop: Arc<AtomicBool>,
}

impl DnsServer {
    fn start(answer: Ipv4Addr) -> DnsServer {
        // DNS is port 53 wherever it is; a loopback address of this test's own keeps it
        // apart from any resolver the host runs.
        let [high, low] = u16::try_from(std::process::id() % 60_000)
            .unwrap_or(1)
            .to_be_bytes();
        let address = Ipv4Addr::new(127, 53, high, low.max(1));
        let listener =
            TcpListener::bind((address, 53)).expect("bind port 53 (the tests run as root)");
        listener.set_nonblocking(true).expect("nonblocking");
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stopped.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => answer_queries(stream, answer),
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        DnsServer { address, stop }
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn answer_queries(mut stream: TcpStream, answer: Ipv4Addr) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    loop {
        let mut length = [0u8; 2];
        if stream.read_exact(&mut length).is_err() {
            return;
        }
        let mut query = vec![0u8; usize::from(u16::from_be_bytes(length))];
        if query.len() < 12 || stream.read_exact(&mut query).is_err() {
            return;
        }
        // The question ends after its name's labels, then type and class.
        let mut end = 12;
        while end < query.len() && query[end] != 0 {
            end += 1 + usize::from(query[end]);
        }
        let question_end = (end + 5).min(query.len());
        let is_a = query.get(end + 1..end + 3) == Some(&[0, 1]);
        let mut response = query[..question_end].to_vec();
        response[2] = 0x81; // a response, recursion desired
        response[3] = 0x80; // recursion available, no error
        response[6..8].copy_from_slice(&u16::from(is_a).to_be_bytes());
        response[8..12].fill(0);
        if is_a {
            response.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]);
            response.extend_from_slice(&answer.octets());
        }
        let mut framed = u16::try_from(response.len())
            .unwrap_or(0)
            .to_be_bytes()
            .to_vec();
        framed.extend_from_slice(&response);
        if stream.write_all(&framed).is_err() {
            return;
        }
    }
}

#[tokio::test]
async fn the_systems_resolvers_answer_over_tcp_on_port_53_and_nothing_else_of_theirs() {
    // glibc in the script reads the host's own /etc/resolv.conf, which a test cannot
    // change; so the script speaks DNS over TCP itself, the way glibc does with use-vc, to
    // the resolver the sandbox was told of.
    let dns = DnsServer::start(Ipv4Addr::new(93, 184, 216, 34));
    let resolv_dir = TestDir::new("resolv", 0o755);
    let resolv_conf = resolv_dir.join("resolv.conf");
    std::fs::write(&resolv_conf, format!("nameserver {}\n", dns.address))
        .expect("write resolv.conf");
    let outcome = guarded(&[], Some(resolv_conf))
        .run(network_job(
            &attack(
                "import os, socket, struct\n\
                 print('RES_OPTIONS', os.environ.get('RES_OPTIONS'))\n\
                 def query():\n    \
                     name = b''.join(bytes([len(label)]) + label for label in b'intel-feed.example'.split(b'.')) + b'\\0'\n    \
                     message = struct.pack('!HHHHHH', 7, 0x0100, 1, 0, 0, 0) + name + struct.pack('!HH', 1, 1)\n    \
                     with socket.create_connection((trigger_args['resolver'], 53), timeout=2) as s:\n        \
                         s.sendall(struct.pack('!H', len(message)) + message)\n        \
                         length = struct.unpack('!H', s.recv(2))[0]\n        \
                         answer = b''\n        \
                         while len(answer) < length:\n            \
                             answer += s.recv(length - len(answer))\n    \
                     return socket.inet_ntoa(answer[-4:])\n\
                 attempt('a query to the resolver', query)\n\
                 attempt('the resolver on another port', lambda: socket.create_connection((trigger_args['resolver'], 80), timeout=2))",
            ),
            json!({"resolver": dns.address.to_string()}),
        ))
        .await;
    assert_eq!(outcome.status, ScriptRunStatus::Success, "{outcome:?}");
    assert!(
        outcome.stdout.contains("RES_OPTIONS use-vc"),
        "{}",
        outcome.stdout
    );
    assert!(
        outcome
            .stdout
            .contains("escaped a query to the resolver: '93.184.216.34'"),
        "{}",
        outcome.stdout
    );
    assert!(
        outcome
            .stdout
            .contains("blocked the resolver on another port: PermissionError"),
        "{}",
        outcome.stdout
    );
}
