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
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Webhook,
        Kind::Slack,
        Kind::Teams,
        Kind::PagerDuty,
        Kind::Syslog,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Webhook => "webhook",
            Kind::Slack => "slack",
            Kind::Teams => "teams",
            Kind::PagerDuty => "pagerduty",
            Kind::Syslog => "syslog",
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
        }
    }
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
        assert_eq!(Kind::parse("email"), None);
    }
}
