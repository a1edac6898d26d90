//! Sending one rendered notification (`sleuth_notify::render`) and saying what came of it,
//! in the terms the retry schedule and the delivery log use.
//!
//! - HTTP destinations (the generic webhook, Slack, Teams, PagerDuty) get a POST with the
//!   rendered body and headers. Redirects are not followed: a destination URL can carry a
//!   token, and a redirect would hand the signed body to another host. 2xx is delivered;
//!   408, 425, 429 and 5xx are tried again (honouring `Retry-After`); any other status is
//!   refused for good, and so is a URL that is not http(s).
//! - Syslog gets one RFC 5424 line, over TCP framed by octet counting (RFC 6587) or as
//!   one UDP datagram. UDP cannot say whether anyone received it: "sent" is all it knows.
//! - A connection that fails, times out or fails TLS is tried again; its reason is kept.

use std::time::Duration;

use sleuth_notify::render::HttpMessage;
use sleuth_notify::render::syslog::frame_for_tcp;
use sleuth_notify::retry::{Answer, classify, parse_retry_after};
use tokio::io::AsyncWriteExt;

/// How long one delivery may take, connection included.
const TIMEOUT: Duration = Duration::from_secs(10);
/// How much of a refusing answer's body the reason quotes.
const QUOTED_BYTES: usize = 300;

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// The destination took it (HTTP 2xx, or a syslog line written).
    Delivered { detail: String },
    /// Worth trying again; `retry_after` is the destination's own ask.
    TryAgain {
        reason: String,
        retry_after: Option<Duration>,
    },
    /// Trying again will not help.
    Refused { reason: String },
}

/// How syslog lines travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyslogProtocol {
    Tcp,
    Udp,
}

/// The senders of one process.
#[derive(Debug, Clone)]
pub struct Transport {
    client: reqwest::Client,
}

impl Transport {
    pub fn new() -> Result<Transport, String> {
        // rustls needs one crypto provider per process; a second install changes nothing.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(concat!("sleuth/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(TIMEOUT)
            .timeout(TIMEOUT)
            .build()
            .map_err(|error| format!("the HTTP client could not start: {error}"))?;
        Ok(Transport { client })
    }

    /// POSTs `message` to `url`.
    pub async fn post(&self, url: &str, message: &HttpMessage) -> Attempt {
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Attempt::Refused {
                reason: "the destination URL must start with https:// or http://".into(),
            };
        }
        let mut request = self.client.post(url).body(message.body.clone());
        for (name, value) in &message.headers {
            request = request.header(*name, value);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(error) => {
                // The URL is left out: a webhook's URL carries its token.
                return Attempt::TryAgain {
                    reason: format!("could not deliver: {}", error_chain(&error.without_url())),
                    retry_after: None,
                };
            }
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| parse_retry_after(value, chrono::Utc::now()));
        let body = response.bytes().await.unwrap_or_default();
        let quoted = String::from_utf8_lossy(&body[..body.len().min(QUOTED_BYTES)]).into_owned();
        match classify(status) {
            Answer::Delivered => Attempt::Delivered {
                detail: format!("HTTP {status}"),
            },
            Answer::TryAgain => Attempt::TryAgain {
                reason: format!("HTTP {status}: {quoted}"),
                retry_after,
            },
            Answer::Refused => Attempt::Refused {
                reason: format!("HTTP {status}: {quoted}"),
            },
        }
    }

    /// Sends one syslog `line` to `address` (`host:port`).
    pub async fn syslog(&self, address: &str, protocol: SyslogProtocol, line: &str) -> Attempt {
        let sent = tokio::time::timeout(TIMEOUT, async {
            match protocol {
                SyslogProtocol::Tcp => {
                    let mut stream = tokio::net::TcpStream::connect(address).await?;
                    stream.write_all(&frame_for_tcp(line)).await?;
                    stream.shutdown().await
                }
                SyslogProtocol::Udp => {
                    let socket = tokio::net::UdpSocket::bind(if address.starts_with('[') {
                        "[::]:0"
                    } else {
                        "0.0.0.0:0"
                    })
                    .await?;
                    socket.send_to(line.as_bytes(), address).await.map(|_| ())
                }
            }
        })
        .await;
        match sent {
            Ok(Ok(())) => Attempt::Delivered {
                detail: match protocol {
                    SyslogProtocol::Tcp => "written over TCP".into(),
                    SyslogProtocol::Udp => "sent over UDP (no receipt exists)".into(),
                },
            },
            Ok(Err(error)) => Attempt::TryAgain {
                reason: format!("could not send to syslog at {address}: {error}"),
                retry_after: None,
            },
            Err(_) => Attempt::TryAgain {
                reason: format!("syslog at {address} did not take the line within {TIMEOUT:?}"),
                retry_after: None,
            },
        }
    }
}

/// An error with its causes ("error sending request: connection refused"), which is what
/// tells an operator a refused port from a TLS failure.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
