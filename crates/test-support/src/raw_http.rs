//! A request written by hand on a loopback socket, for a body a server may refuse before
//! reading it (413): an HTTP client stops at the reset the server's early close causes,
//! and never shows the answer that came before it.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the server answered: its status (0 when it sent nothing readable), its head and
/// its body, as text.
pub struct RawAnswer {
    pub status: u16,
    pub head: String,
    pub body: String,
}

/// Sends `method path` with `headers` (each `name: value`) and `body`, writing in the
/// background and ignoring a reset once the server answered, and reads the answer to its
/// end (the request asks to close the connection).
pub async fn send_oversized(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> RawAnswer {
    let stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    let (mut reader, mut writer) = stream.into_split();
    let mut head = format!("{method} {path} HTTP/1.1\r\nhost: {address}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    ));
    let writing = tokio::spawn(async move {
        let _ = writer.write_all(head.as_bytes()).await;
        let _ = writer.write_all(&body).await;
    });
    let mut received = Vec::new();
    let _ = reader.read_to_end(&mut received).await;
    writing.abort();
    let text = String::from_utf8_lossy(&received).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text.as_str(), ""));
    RawAnswer {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}
