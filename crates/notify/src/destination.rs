//! A destination's kind and its settings, checked at the edge (API and CLI) and read again
//! by the deliverer. Secrets (a webhook's URL, which carries its token; a PagerDuty routing
//! key; a signing key; an SMTP password) are never settings: the settings name secrets of
//! the sealed secret store, which the deliverer opens for each round.

use serde::Deserialize;
use serde_json::Value;

/// Where a destination's messages go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Webhook,
    Slack,
    Teams,
    PagerDuty,
    Syslog,
    Email,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Webhook,
        Kind::Slack,
        Kind::Teams,
        Kind::PagerDuty,
        Kind::Syslog,
        Kind::Email,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Webhook => "webhook",
            Kind::Slack => "slack",
            Kind::Teams => "teams",
            Kind::PagerDuty => "pagerduty",
            Kind::Syslog => "syslog",
            Kind::Email => "email",
        }
    }

    pub fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.as_str() == text)
    }

    /// Every kind, as a sentence lists them.
    pub fn known() -> String {
        Kind::ALL.map(Kind::as_str).join(", ")
    }
}

/// PagerDuty's Events API v2 endpoint, unless the settings name another.
pub const PAGERDUTY_EVENTS_URL: &str = "https://events.pagerduty.com/v2/enqueue";

/// How syslog lines travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyslogProtocol {
    Tcp,
    Udp,
}

/// How an SMTP connection is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmtpSecurity {
    /// Plain connection upgraded with STARTTLS before anything else is said; a server that
    /// does not offer it is not sent the message. The default.
    Starttls,
    /// TLS from the first byte (SMTPS, usually port 465).
    Tls,
    /// No TLS at all: only for a relay on a trusted network, and never with credentials.
    None,
}

impl SmtpSecurity {
    /// The port each usually listens on.
    pub fn default_port(self) -> u16 {
        match self {
            SmtpSecurity::Starttls => 587,
            SmtpSecurity::Tls => 465,
            SmtpSecurity::None => 25,
        }
    }
}

/// An email destination's checked settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailSettings {
    /// The SMTP server's host name or IP address (also the name its certificate must carry).
    pub server: String,
    pub port: u16,
    pub security: SmtpSecurity,
    /// The sender, `sleuth@example.com` or `Sleuth <sleuth@example.com>`.
    pub from: String,
    /// The recipients, at least one.
    pub to: Vec<String>,
    /// The SMTP login, with the secret holding its password; both or neither.
    pub username: Option<String>,
    pub password_secret: Option<String>,
    /// A PEM certificate trusted besides the system's roots (a private CA, or the relay's
    /// own self-signed certificate).
    pub ca_certificate: Option<String>,
}

/// A destination's checked settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settings {
    /// The generic webhook: the URL and the HMAC key are both secrets.
    Webhook {
        url_secret: String,
        signing_secret: String,
    },
    /// A Slack incoming webhook or a Teams workflow webhook: the URL is the secret.
    Slack {
        url_secret: String,
    },
    Teams {
        url_secret: String,
    },
    PagerDuty {
        routing_key_secret: String,
        events_url: String,
    },
    Syslog {
        /// `host:port`.
        address: String,
        protocol: SyslogProtocol,
        facility: u8,
        /// The HOSTNAME field of each line.
        hostname: String,
    },
    Email(EmailSettings),
}

/// What is wrong with a setting, for a 400 that names the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}: {}", self.field, self.message)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookFields {
    url_secret: String,
    signing_secret: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UrlFields {
    url_secret: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PagerDutyFields {
    routing_key_secret: String,
    events_url: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SyslogFields {
    address: String,
    protocol: Option<SyslogProtocol>,
    facility: Option<u8>,
    hostname: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EmailFields {
    server: String,
    port: Option<u16>,
    security: Option<SmtpSecurity>,
    from: String,
    to: Vec<String>,
    username: Option<String>,
    password_secret: Option<String>,
    ca_certificate: Option<String>,
}

/// The most recipients one destination sends to (a list belongs in a mailing list).
const MAX_RECIPIENTS: usize = 50;

/// The `local4` facility (20): a SIEM's usual choice for an application's security events.
const DEFAULT_FACILITY: u8 = 20;

fn fields<T: serde::de::DeserializeOwned>(settings: &Value) -> Result<T, FieldError> {
    serde_json::from_value(settings.clone()).map_err(|error| FieldError {
        field: "settings".into(),
        message: error.to_string(),
    })
}

fn secret_name(field: &str, name: String) -> Result<String, FieldError> {
    let well_formed = name
        .chars()
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && name.len() <= 128
        && name
            .chars()
            .all(|character| character.is_ascii_alphanumeric() || character == '_');
    if well_formed {
        Ok(name)
    } else {
        Err(FieldError {
            field: format!("settings.{field}"),
            message: "must name a stored secret (letters, digits and _), not hold a value: \
                      store the value with `sleuth secret set NAME` first"
                .into(),
        })
    }
}

impl Settings {
    /// Reads `settings` for `kind`, every field checked; unknown fields are refused.
    pub fn check(kind: Kind, settings: &Value) -> Result<Settings, FieldError> {
        Ok(match kind {
            Kind::Webhook => {
                let fields: WebhookFields = fields(settings)?;
                Settings::Webhook {
                    url_secret: secret_name("url_secret", fields.url_secret)?,
                    signing_secret: secret_name("signing_secret", fields.signing_secret)?,
                }
            }
            Kind::Slack => Settings::Slack {
                url_secret: secret_name("url_secret", fields::<UrlFields>(settings)?.url_secret)?,
            },
            Kind::Teams => Settings::Teams {
                url_secret: secret_name("url_secret", fields::<UrlFields>(settings)?.url_secret)?,
            },
            Kind::PagerDuty => {
                let fields: PagerDutyFields = fields(settings)?;
                let events_url = fields
                    .events_url
                    .unwrap_or_else(|| PAGERDUTY_EVENTS_URL.to_string());
                if !(events_url.starts_with("https://") || events_url.starts_with("http://")) {
                    return Err(FieldError {
                        field: "settings.events_url".into(),
                        message: "must start with https:// or http://".into(),
                    });
                }
                Settings::PagerDuty {
                    routing_key_secret: secret_name(
                        "routing_key_secret",
                        fields.routing_key_secret,
                    )?,
                    events_url,
                }
            }
            Kind::Syslog => {
                let fields: SyslogFields = fields(settings)?;
                let port_ok = fields
                    .address
                    .rsplit_once(':')
                    .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
                if !port_ok {
                    return Err(FieldError {
                        field: "settings.address".into(),
                        message: "must be host:port, e.g. siem.example.com:6514".into(),
                    });
                }
                let facility = fields.facility.unwrap_or(DEFAULT_FACILITY);
                if crate::render::syslog::Facility::new(facility).is_none() {
                    return Err(FieldError {
                        field: "settings.facility".into(),
                        message: "must be a syslog facility number, 0 to 23".into(),
                    });
                }
                let hostname = fields.hostname.unwrap_or_else(|| "sleuth".into());
                if hostname.is_empty()
                    || hostname.len() > 255
                    || !hostname.chars().all(|c| c.is_ascii_graphic())
                {
                    return Err(FieldError {
                        field: "settings.hostname".into(),
                        message: "must be 1 to 255 printable ASCII characters without spaces"
                            .into(),
                    });
                }
                Settings::Syslog {
                    address: fields.address,
                    protocol: fields.protocol.unwrap_or(SyslogProtocol::Tcp),
                    facility,
                    hostname,
                }
            }
            Kind::Email => Settings::Email(email_settings(fields(settings)?)?),
        })
    }

    /// The secrets these settings name, each once.
    pub fn secret_names(&self) -> Vec<&str> {
        match self {
            Settings::Webhook {
                url_secret,
                signing_secret,
            } => {
                let mut names = vec![url_secret.as_str(), signing_secret.as_str()];
                names.dedup();
                names
            }
            Settings::Slack { url_secret } | Settings::Teams { url_secret } => vec![url_secret],
            Settings::PagerDuty {
                routing_key_secret, ..
            } => vec![routing_key_secret],
            Settings::Syslog { .. } => Vec::new(),
            Settings::Email(email) => email.password_secret.iter().map(String::as_str).collect(),
        }
    }
}

fn problem(field: &str, message: impl Into<String>) -> FieldError {
    FieldError {
        field: format!("settings.{field}"),
        message: message.into(),
    }
}

/// An address as a mail header carries it: `name@example.com`, or `Display <name@example.com>`.
/// Line breaks and angle brackets outside the one pair are refused: they would start a
/// header or a second address.
fn mailbox(field: &str, text: &str) -> Result<(), FieldError> {
    let address = match text.rsplit_once('<') {
        Some((display, rest)) => {
            let Some(address) = rest.strip_suffix('>') else {
                return Err(problem(field, "an address in <> must end with >"));
            };
            if display.contains(['<', '>', '"', '\\']) {
                return Err(problem(
                    field,
                    "a display name cannot hold <, >, quotes or backslashes",
                ));
            }
            address
        }
        None => text,
    };
    let printable = text.chars().all(|character| !character.is_control());
    if printable && text.len() <= 320 && email_address::EmailAddress::is_valid(address) {
        Ok(())
    } else {
        Err(problem(
            field,
            "must be an email address, e.g. soc@example.com or SOC <soc@example.com>",
        ))
    }
}

fn email_settings(fields: EmailFields) -> Result<EmailSettings, FieldError> {
    let server = fields.server.trim().to_string();
    let host_ok = !server.is_empty()
        && server.len() <= 253
        && server
            .chars()
            .all(|character| character.is_ascii_alphanumeric() || "-.:[]".contains(character));
    if !host_ok {
        return Err(problem(
            "server",
            "must be a host name or IP address, e.g. smtp.example.com",
        ));
    }
    let security = fields.security.unwrap_or(SmtpSecurity::Starttls);
    let port = fields.port.unwrap_or(security.default_port());
    if port == 0 {
        return Err(problem("port", "must be 1 to 65535"));
    }
    mailbox("from", &fields.from)?;
    if fields.to.is_empty() || fields.to.len() > MAX_RECIPIENTS {
        return Err(problem(
            "to",
            format!("must list 1 to {MAX_RECIPIENTS} recipients"),
        ));
    }
    for recipient in &fields.to {
        mailbox("to", recipient)?;
    }
    let (username, password_secret) = match (fields.username, fields.password_secret) {
        (None, None) => (None, None),
        (Some(username), Some(password)) => {
            if username.is_empty() || username.len() > 256 || username.chars().any(char::is_control)
            {
                return Err(problem(
                    "username",
                    "must be 1 to 256 characters without control characters",
                ));
            }
            (
                Some(username),
                Some(secret_name("password_secret", password)?),
            )
        }
        _ => {
            return Err(problem(
                "password_secret",
                "username and password_secret go together: give both or neither",
            ));
        }
    };
    if security == SmtpSecurity::None && username.is_some() {
        return Err(problem(
            "security",
            "credentials are never sent without TLS: use starttls or tls, or no login",
        ));
    }
    if let Some(pem) = &fields.ca_certificate
        && (!pem.contains("-----BEGIN CERTIFICATE-----") || pem.len() > 64 * 1024)
    {
        return Err(problem(
            "ca_certificate",
            "must be a PEM certificate (-----BEGIN CERTIFICATE-----), at most 64 KiB",
        ));
    }
    Ok(EmailSettings {
        server,
        port,
        security,
        from: fields.from,
        to: fields.to,
        username,
        password_secret,
        ca_certificate: fields.ca_certificate,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_kind_reads_its_settings_and_names_its_secrets() {
        let webhook = Settings::check(
            Kind::Webhook,
            &json!({"url_secret": "HOOK_URL", "signing_secret": "HOOK_KEY"}),
        )
        .unwrap();
        assert_eq!(webhook.secret_names(), ["HOOK_URL", "HOOK_KEY"]);
        let pagerduty =
            Settings::check(Kind::PagerDuty, &json!({"routing_key_secret": "PD_KEY"})).unwrap();
        assert_eq!(
            pagerduty,
            Settings::PagerDuty {
                routing_key_secret: "PD_KEY".into(),
                events_url: PAGERDUTY_EVENTS_URL.into()
            }
        );
        let syslog = Settings::check(
            Kind::Syslog,
            &json!({"address": "127.0.0.1:514", "protocol": "udp"}),
        )
        .unwrap();
        assert!(syslog.secret_names().is_empty());
        assert!(matches!(
            syslog,
            Settings::Syslog {
                protocol: SyslogProtocol::Udp,
                facility: 20,
                ..
            }
        ));
    }

    #[test]
    fn a_secret_value_where_a_name_belongs_is_refused_without_repeating_it() {
        let error = Settings::check(
            Kind::Slack,
            &json!({"url_secret": "https://hooks.slack.com/services/T0/B0/XYZ"}),
        )
        .unwrap_err();
        assert_eq!(error.field, "settings.url_secret");
        assert!(!error.message.contains("hooks.slack.com"), "{error}");
    }

    #[test]
    fn unknown_fields_and_bad_addresses_are_named() {
        let unknown =
            Settings::check(Kind::Teams, &json!({"url_secret": "T", "url": "x"})).unwrap_err();
        assert!(unknown.message.contains("unknown field"), "{unknown}");
        let address =
            Settings::check(Kind::Syslog, &json!({"address": "siem.example"})).unwrap_err();
        assert_eq!(address.field, "settings.address");
        let facility = Settings::check(
            Kind::Syslog,
            &json!({"address": "siem.example:514", "facility": 40}),
        )
        .unwrap_err();
        assert_eq!(facility.field, "settings.facility");
        assert_eq!(Kind::parse("pagerduty"), Some(Kind::PagerDuty));
        assert_eq!(Kind::parse("email"), Some(Kind::Email));
        assert_eq!(Kind::parse("fax"), None);
    }

    fn email(settings: Value) -> Result<Settings, FieldError> {
        Settings::check(Kind::Email, &settings)
    }

    #[test]
    fn email_requires_starttls_by_default_and_names_its_password_secret() {
        let checked = email(json!({
            "server": "smtp.example.com",
            "from": "Sleuth <sleuth@example.com>",
            "to": ["soc@example.com"],
            "username": "sleuth",
            "password_secret": "SMTP_PASSWORD",
        }))
        .unwrap();
        assert_eq!(checked.secret_names(), ["SMTP_PASSWORD"]);
        let Settings::Email(settings) = checked else {
            panic!("{checked:?}");
        };
        assert_eq!(settings.security, SmtpSecurity::Starttls);
        assert_eq!(settings.port, 587);
        let relay = email(json!({
            "server": "10.0.0.5", "port": 25, "security": "none",
            "from": "sleuth@example.com", "to": ["soc@example.com"],
        }))
        .unwrap();
        assert!(relay.secret_names().is_empty());
    }

    #[test]
    fn email_settings_refuse_credentials_without_tls_and_bad_addresses() {
        let cases = [
            (
                json!({"server": "smtp.example.com", "security": "none", "from": "a@example.com",
                       "to": ["b@example.com"], "username": "u", "password_secret": "P"}),
                "settings.security",
            ),
            (
                json!({"server": "smtp.example.com", "from": "a@example.com",
                       "to": ["b@example.com"], "username": "u"}),
                "settings.password_secret",
            ),
            (
                json!({"server": "smtp.example.com", "from": "a@example.com",
                       "to": ["b@example.com\r\nBcc: victim@example.com"]}),
                "settings.to",
            ),
            (
                json!({"server": "smtp.example.com", "from": "a@example.com", "to": []}),
                "settings.to",
            ),
            (
                json!({"server": "smtp.example.com", "from": "Evil <x> <a@example.com>",
                       "to": ["b@example.com"]}),
                "settings.from",
            ),
            (
                json!({"server": "smtp example", "from": "a@example.com", "to": ["b@example.com"]}),
                "settings.server",
            ),
            (
                json!({"server": "smtp.example.com", "from": "a@example.com",
                       "to": ["b@example.com"], "password_secret": "hunter2!", "username": "u"}),
                "settings.password_secret",
            ),
            (
                json!({"server": "smtp.example.com", "from": "a@example.com",
                       "to": ["b@example.com"], "ca_certificate": "not a pem"}),
                "settings.ca_certificate",
            ),
        ];
        for (settings, field) in cases {
            let error = email(settings.clone()).unwrap_err();
            assert_eq!(error.field, field, "{settings}: {error}");
        }
    }
}
