//! The real `sleuth` binary as a child process, for the tests and benches that need it:
//! start it on a port, read the first admin key it prints, and talk plain HTTP/1.1 to it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub(crate) struct Server {
    pub child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `sleuth serve` on `port` with `environment`; returns it, once ready, and on a
/// fresh database the first admin key it printed.
pub(crate) fn start(
    database: &str,
    port: u16,
    environment: &[(&str, String)],
) -> (Server, Option<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sleuth"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--database",
            database,
        ])
        .envs(environment.iter().map(|(name, value)| (name, value)))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start sleuth");
    let stdout = child.stdout.take().unwrap();
    let key = Arc::new(Mutex::new(None));
    let found = key.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
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
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok((200, _)) = http(port, "GET", "/readyz", "", None) {
            std::thread::sleep(Duration::from_millis(100));
            return (Server { child }, key.lock().unwrap().clone());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("sleuth did not become ready");
}

/// One request on a connection of its own: the status and the body.
pub(crate) fn http(
    port: u16,
    method: &str,
    path: &str,
    key: &str,
    body: Option<&str>,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let body = body.unwrap_or("");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: {key}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default();
    Ok((status, body))
}
