//! A connector's settings, as an admin gives them (JSON) and as they are stored: checked
//! here, field by field, before anything is stored. Secrets are only named.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Kind;

/// The most alerts one page may ask for (every vendor here takes at least this many).
pub(crate) const MAX_PAGE_SIZE: u32 = 1000;
/// The furthest back a first poll may reach (90 days).
pub(crate) const MAX_BACKFILL_HOURS: u32 = 24 * 90;

/// How severe an alert is, in one scale for every vendor (each vendor's own scale is
/// mapped onto it in `vendors/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Informational,
    Low,
    Medium,
    High,
    Critical,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// The vendor's API root (`https://api.crowdstrike.com`, `https://graph.microsoft.com`,
    /// `https://example.okta.com`, `https://usea1.sentinelone.net`, an Elasticsearch URL,
    /// `https://alertcenter.googleapis.com`).
    pub base_url: String,
    /// The OAuth2 token endpoint, when it is not the vendor's usual one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    /// Microsoft Entra: the directory (tenant) id the app registration lives in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<String>,
    /// The OAuth2 client id (CrowdStrike, Graph).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The name of the secret (the secret store) holding the client secret or API token.
    pub secret: String,
    /// How far back the first poll reaches, in hours.
    #[serde(default = "default_backfill_hours")]
    pub backfill_hours: u32,
    /// How many alerts a page asks for.
    #[serde(default = "default_page_size")]
    pub page_size: u32,
    /// Alerts below this severity are left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_severity: Option<Severity>,
    /// When not empty, only alerts of these types are taken (the vendor's own type field:
    /// see docs/sources.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub types: Vec<String>,
    /// A filter in the vendor's own query language, added to the connector's own: FQL
    /// (CrowdStrike), OData `$filter` (Graph), a System Log `filter` expression (Okta), an
    /// Alert Center query (Google Workspace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// Elastic: the alerts index (pattern) to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    /// Google Workspace: the admin the service account acts for (domain-wide delegation),
    /// the JWT's `sub`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Google Workspace: the customer id (without its leading "C"); Google infers it from
    /// the admin when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customer_id: Option<String>,
    /// Send each concluded investigation's verdict to its alert at the vendor (CrowdStrike,
    /// Graph; the API client needs write access to alerts).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub write_back: bool,
}

fn default_backfill_hours() -> u32 {
    24
}

fn default_page_size() -> u32 {
    500
}

/// A bad setting: which field, and what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct SettingsError {
    pub field: String,
    pub message: String,
}

fn invalid(field: &str, message: impl Into<String>) -> SettingsError {
    SettingsError {
        field: field.into(),
        message: message.into(),
    }
}

impl Settings {
    /// Reads and checks settings for `kind`.
    pub fn check(kind: Kind, value: &Value) -> Result<Settings, SettingsError> {
        let settings: Settings = serde_json::from_value(value.clone()).map_err(|error| {
            let text = error.to_string();
            // serde names an unknown or missing field, but not the field of a bad variant
            // (`min_severity` is the one enumeration here).
            let field = if text.contains("unknown variant") {
                "min_severity"
            } else if text.contains("field `") {
                text.split('`').nth(1).unwrap_or("settings")
            } else {
                "settings"
            };
            invalid(field, text.chars().take(300).collect::<String>())
        })?;
        http_url("base_url", &settings.base_url)?;
        if let Some(token_url) = &settings.token_url {
            http_url("token_url", token_url)?;
        }
        if settings.secret.trim().is_empty() || settings.secret.len() > 200 {
            return Err(invalid(
                "secret",
                "must name a secret of the secret store (1 to 200 characters)",
            ));
        }
        if !(1..=MAX_PAGE_SIZE).contains(&settings.page_size) {
            return Err(invalid(
                "page_size",
                format!("must be between 1 and {MAX_PAGE_SIZE}"),
            ));
        }
        if settings.backfill_hours > MAX_BACKFILL_HOURS {
            return Err(invalid(
                "backfill_hours",
                format!("must be at most {MAX_BACKFILL_HOURS} (90 days)"),
            ));
        }
        if settings.types.iter().any(|kind| kind.trim().is_empty()) {
            return Err(invalid("types", "must not hold an empty type"));
        }
        for (field, text) in [
            ("client_id", &settings.client_id),
            ("tenant_id", &settings.tenant_id),
            ("filter", &settings.filter),
            ("index", &settings.index),
            ("subject", &settings.subject),
            ("customer_id", &settings.customer_id),
        ] {
            if let Some(text) = text
                && (text.trim().is_empty() || text.chars().any(char::is_control))
            {
                return Err(invalid(
                    field,
                    "must not be empty or hold control characters",
                ));
            }
        }
        if kind.uses_oauth() && settings.client_id.is_none() {
            return Err(invalid(
                "client_id",
                format!(
                    "a {} connector signs in with an OAuth2 client id",
                    kind.as_str()
                ),
            ));
        }
        if kind == Kind::GraphSecurity
            && settings.tenant_id.is_none()
            && settings.token_url.is_none()
        {
            return Err(invalid(
                "tenant_id",
                "the Microsoft Entra tenant (directory) id is needed for the token endpoint",
            ));
        }
        if kind == Kind::Elastic
            && let Some(index) = &settings.index
            && (index.contains('/') || index.contains('?') || index.contains('#'))
        {
            return Err(invalid("index", "must be an index name or pattern"));
        }
        if kind != Kind::Elastic && settings.index.is_some() {
            return Err(invalid("index", "only Elastic connectors read an index"));
        }
        if kind == Kind::GoogleWorkspace {
            match &settings.subject {
                Some(subject) if subject.contains('@') && subject.len() <= 254 => {}
                Some(_) => return Err(invalid("subject", "must be an email address")),
                None => {
                    return Err(invalid(
                        "subject",
                        "the Workspace admin the service account acts for is needed \
                         (domain-wide delegation)",
                    ));
                }
            }
        } else {
            for (field, value) in [
                ("subject", &settings.subject),
                ("customer_id", &settings.customer_id),
            ] {
                if value.is_some() {
                    return Err(invalid(
                        field,
                        "only Google Workspace connectors take this setting",
                    ));
                }
            }
        }
        if settings.write_back && !kind.writes_back() {
            return Err(invalid(
                "write_back",
                "only CrowdStrike and Graph connectors write verdicts back",
            ));
        }
        if kind == Kind::Sentinelone && settings.filter.is_some() {
            return Err(invalid(
                "filter",
                "SentinelOne connectors take min_severity and types, not a query",
            ));
        }
        Ok(settings)
    }

    /// The API root without a trailing slash.
    pub(crate) fn base(&self) -> &str {
        self.base_url.trim_end_matches('/')
    }

    /// Whether the filters keep `alert`.
    pub(crate) fn keeps(&self, kind: Kind, alert: &Value) -> bool {
        if let Some(minimum) = self.min_severity {
            match crate::vendors::severity(kind, alert) {
                Some(severity) if severity >= minimum => {}
                // An alert whose severity cannot be read is kept: better looked at once.
                None => {}
                Some(_) => return false,
            }
        }
        if !self.types.is_empty() {
            let alert_type = crate::vendors::alert_type(kind, alert);
            return alert_type.is_some_and(|alert_type| {
                self.types
                    .iter()
                    .any(|wanted| wanted.eq_ignore_ascii_case(&alert_type))
            });
        }
        true
    }
}

fn http_url(field: &str, text: &str) -> Result<(), SettingsError> {
    let url =
        url::Url::parse(text).map_err(|error| invalid(field, format!("is not a URL: {error}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(invalid(field, "must be an http or https URL with a host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            field,
            "must not hold credentials; name a secret in `secret`",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_are_checked_field_by_field() {
        let good = json!({"base_url": "https://api.crowdstrike.com", "client_id": "abc", "secret": "falcon"});
        let settings = Settings::check(Kind::Crowdstrike, &good).expect("valid");
        assert_eq!(settings.page_size, 500);
        assert_eq!(settings.backfill_hours, 24);
        let field =
            |kind, value: Value| Settings::check(kind, &value).err().map(|error| error.field);
        assert_eq!(
            field(
                Kind::Crowdstrike,
                json!({"base_url": "https://x", "secret": "s"})
            )
            .as_deref(),
            Some("client_id")
        );
        assert_eq!(
            field(Kind::Okta, json!({"base_url": "ftp://x", "secret": "s"})).as_deref(),
            Some("base_url")
        );
        assert_eq!(
            field(
                Kind::Okta,
                json!({"base_url": "https://u:p@x", "secret": "s"})
            )
            .as_deref(),
            Some("base_url")
        );
        assert_eq!(
            field(
                Kind::Okta,
                json!({"base_url": "https://x", "secret": "s", "page_size": 0})
            )
            .as_deref(),
            Some("page_size")
        );
        assert_eq!(
            field(
                Kind::Okta,
                json!({"base_url": "https://x", "secret": "s", "colour": 1})
            )
            .as_deref(),
            Some("colour")
        );
        assert_eq!(
            field(
                Kind::GraphSecurity,
                json!({"base_url": "https://x", "secret": "s", "client_id": "c"})
            )
            .as_deref(),
            Some("tenant_id")
        );
        assert_eq!(
            field(
                Kind::Okta,
                json!({"base_url": "https://x", "secret": "s", "min_severity": "severe"})
            )
            .as_deref(),
            Some("min_severity")
        );
        let google = json!({"base_url": "https://alertcenter.googleapis.com", "secret": "key",
                            "subject": "admin@example.com", "customer_id": "03az79cb"});
        assert!(Settings::check(Kind::GoogleWorkspace, &google).is_ok());
        let mut no_subject = google.clone();
        no_subject
            .as_object_mut()
            .expect("object")
            .remove("subject");
        assert_eq!(
            field(Kind::GoogleWorkspace, no_subject).as_deref(),
            Some("subject")
        );
        let mut bad_subject = google.clone();
        bad_subject["subject"] = json!("admin");
        assert_eq!(
            field(Kind::GoogleWorkspace, bad_subject).as_deref(),
            Some("subject")
        );
        assert_eq!(
            field(
                Kind::Okta,
                json!({"base_url": "https://x", "secret": "s", "customer_id": "03az79cb"})
            )
            .as_deref(),
            Some("customer_id")
        );
    }
}
