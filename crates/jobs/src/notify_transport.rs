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
//! - Email goes over SMTP (lettre), one connection per message: STARTTLS required unless
//!   the settings say `tls` (TLS from the first byte) or `none`; a server that does not
//!   offer STARTTLS is not sent the message, let alone the password. A permanent SMTP
//!   answer (5xx: unknown recipient, login refused) is refused for good; a transient one
//!   (4xx) is tried again. The message id is the event's, so a mailbox can drop a repeat.
//! - A connection that fails, times out or fails TLS is tried again; its reason is kept.

use std::time::Duration;

use lettre::message::Mailbox;
use lettre::message::header::ContentType;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use sleuth_notify::destination::{EmailSettings, SmtpSecurity};
use sleuth_notify::render::HttpMessage;
use sleuth_notify::render::email::EmailMessage;
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

/// One email to send: the destination's settings, its password opened, the rendered
/// message and the event's id (the Message-ID's left part).
pub struct Mail<'a> {
    pub settings: &'a EmailSettings,
    pub password: Option<String>,
    pub message: &'a EmailMessage,
    pub event_id: uuid::Uuid,
}

impl Transport {
    /// Sends `mail` over SMTP.
    pub async fn email(&self, mail: Mail<'_>) -> Attempt {
        let message = match build_message(&mail) {
            Ok(message) => message,
            Err(reason) => return Attempt::Refused { reason },
        };
        let transport = match smtp_transport(&mail) {
            Ok(transport) => transport,
            Err(reason) => return Attempt::Refused { reason },
        };
        match transport.send(message).await {
            Ok(response) => Attempt::Delivered {
                detail: format!(
                    "SMTP {}: {}",
                    response.code(),
                    response.message().collect::<Vec<_>>().join(" ")
                ),
            },
            // lettre's errors say their causes themselves.
            Err(error) if error.is_permanent() => Attempt::Refused {
                reason: format!("the SMTP server refused: {error}"),
            },
            Err(error) => Attempt::TryAgain {
                reason: format!(
                    "could not send over SMTP to {}:{}: {error}",
                    mail.settings.server, mail.settings.port,
                ),
                retry_after: None,
            },
        }
    }
}

fn build_message(mail: &Mail<'_>) -> Result<lettre::Message, String> {
    let mailbox = |text: &str| {
        text.parse::<Mailbox>()
            .map_err(|error| format!("the address '{text}' cannot be used: {error}"))
    };
    let mut builder = lettre::Message::builder()
        .from(mailbox(&mail.settings.from)?)
        .subject(mail.message.subject.clone())
        .message_id(Some(format!("<{}@sleuth.notification>", mail.event_id)))
        .header(ContentType::TEXT_PLAIN);
    for recipient in &mail.settings.to {
        builder = builder.to(mailbox(recipient)?);
    }
    builder
        .body(mail.message.text.clone())
        .map_err(|error| format!("the message cannot be built: {error}"))
}

fn smtp_transport(mail: &Mail<'_>) -> Result<AsyncSmtpTransport<Tokio1Executor>, String> {
    let settings = mail.settings;
    let parameters = || {
        let mut builder = TlsParameters::builder(
            settings
                .server
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
        );
        if let Some(pem) = &settings.ca_certificate {
            let certificate = Certificate::from_pem(pem.as_bytes()).map_err(|error| {
                format!("the destination's ca_certificate is unusable: {error}")
            })?;
            builder = builder.add_root_certificate(certificate);
        }
        builder
            .build_rustls()
            .map_err(|error| format!("TLS could not be set up: {}", error_chain(&error)))
    };
    let tls = match settings.security {
        SmtpSecurity::Starttls => Tls::Required(parameters()?),
        SmtpSecurity::Tls => Tls::Wrapper(parameters()?),
        SmtpSecurity::None => Tls::None,
    };
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&settings.server)
        .port(settings.port)
        .timeout(Some(TIMEOUT))
        .tls(tls);
    match (&settings.username, &mail.password) {
        // Checked settings never pair a login with `none`; this holds even if they did.
        (Some(_), _) if settings.security == SmtpSecurity::None => {
            return Err("credentials are never sent without TLS".into());
        }
        (Some(username), Some(password)) => {
            builder = builder.credentials(Credentials::new(username.clone(), password.clone()));
        }
        (Some(_), None) => return Err("the SMTP password's secret is not stored".into()),
        (None, _) => {}
    }
    Ok(builder.build())
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
