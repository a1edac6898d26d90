//! What the benches share: a keep-alive HTTP/1.1 client on loopback, and percentiles.

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;

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
