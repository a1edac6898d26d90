//! What the benches share: a keep-alive HTTP/1.1 client on loopback, and percentiles.

use std::path::PathBuf;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;

/// The `sleuth` binary a bench drives: this build's, or BENCH_SLEUTH_BIN (another build,
/// to compare two binaries on the same workload without rebuilding the bench).
pub(crate) fn sleuth_binary() -> PathBuf {
    std::env::var_os("BENCH_SLEUTH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_sleuth")))
}

/// A loopback address with a port free now, for a child server to listen on.
pub(crate) fn free_loopback_address() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port();
    format!("127.0.0.1:{port}")
}

/// A number from the environment (`1_000_000` reads as a million), or the default.
pub(crate) fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// The machine's load averages (1, 5, 15 minutes), printed beside every figure: the
/// benches share two cores with whatever else runs.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

pub(crate) type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

pub(crate) async fn connect(address: &str) -> Sender {
    let stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let (sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("handshake");
    tokio::spawn(connection);
    sender
}

pub(crate) async fn send(
    sender: &mut Sender,
    method: &str,
    path: &str,
    key: &str,
    body: Option<String>,
) -> (u16, Bytes) {
    sender.ready().await.expect("connection ready");
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "bench")
        .header("authorization", key);
    if body.is_some() {
        request = request.header("content-type", "application/json");
    }
    let request = request
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .expect("request");
    let response = sender.send_request(request).await.expect("response");
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (status, bytes)
}

/// The value at `fraction` (0 to 1) of `sorted`.
pub(crate) fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

/// Reads a started `sleuth serve`'s standard output on a thread of its own and keeps the
/// first admin API key it prints (a fresh database prints one, shown once).
pub(crate) fn watch_for_first_key(
    stdout: std::process::ChildStdout,
) -> std::sync::Arc<std::sync::Mutex<Option<String>>> {
    use std::io::BufRead;
    let key = std::sync::Arc::new(std::sync::Mutex::new(None));
    let found = key.clone();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(start) = line.find("sleuth_") {
                let candidate: String = line[start..]
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '"')
                    .collect();
                if candidate.len() == 50 {
                    *found.lock().unwrap() = Some(candidate);
                }
            }
        }
    });
    key
}

/// Waits (up to a minute) until the server at `address` answers /readyz with 200.
pub(crate) async fn wait_until_ready(address: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        if tokio::net::TcpStream::connect(address).await.is_ok() {
            let mut sender = connect(address).await;
            let (status, _) = send(&mut sender, "GET", "/readyz", "", None).await;
            if status == 200 {
                tokio::time::sleep(Duration::from_millis(200)).await;
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("sleuth did not become ready");
}

/// A process's line of `/proc/<pid>/stat`: its command name, parent and CPU times.
pub(crate) struct ProcStat {
    pub(crate) name: String,
    pub(crate) parent: String,
    /// utime + stime, in seconds (all its threads).
    pub(crate) cpu_seconds: f64,
    /// cutime + cstime, in seconds: what its exited children it waited for used.
    pub(crate) children_cpu_seconds: f64,
}

/// `/proc/<process>/stat` read (`process`: a pid, or `self`); `None` when it is gone.
pub(crate) fn proc_stat(process: &str) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{process}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces and parentheses itself.
    let (head, rest) = stat.rsplit_once(')')?;
    let (_, name) = head.split_once('(')?;
    // After the name: state, ppid, nine more fields, then utime, stime, cutime, cstime,
    // in USER_HZ ticks (a hundredth of a second on Linux).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |index: usize| {
        fields
            .get(index)
            .and_then(|field| field.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    Some(ProcStat {
        name: name.to_string(),
        parent: fields.get(1).copied().unwrap_or_default().to_string(),
        cpu_seconds: (ticks(11) + ticks(12)) / 100.0,
        children_cpu_seconds: (ticks(13) + ticks(14)) / 100.0,
    })
}
