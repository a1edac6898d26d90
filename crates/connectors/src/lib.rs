//! Pull connectors: each vendor's alert API read page by page into alert JSON bodies (each
//! one alert, as the vendor's own API gives it, which the parsers read) and the cursor
//! past them. One module per vendor in `vendors/`; `http.rs` does what every vendor
//! shares: authentication (OAuth2 client credentials or a Google service account's signed
//! JWT, refreshed on expiry and on 401, or an API token in the vendor's header), 429 with
//! `Retry-After`, and backoff on 5xx.
//!
//! The crate stores nothing and reads no secret store: the caller (the server's connector
//! runtime) passes the credentials in, keeps the cursor, and stores the alerts with it in
//! one transaction. Errors never hold a credential (`Scrub`).
#![forbid(unsafe_code)]

mod http;
mod service_account;
mod settings;
mod vendors;
mod write_back;

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

pub use http::Timing;
pub use settings::{Settings, SettingsError, Severity};
pub use write_back::{Conclusion, Verdict, alert_id};

/// A vendor whose alerts a connector polls. Spelled once here (`as_str`, `parse`, `ALL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// CrowdStrike Falcon alerts: `/alerts/queries/alerts/v2`, then
    /// `/alerts/entities/alerts/v2`, with an OAuth2 API client.
    Crowdstrike,
    /// Microsoft Graph security alerts (`/security/alerts_v2`), `@odata.nextLink` paging,
    /// with an app registration's client credentials.
    GraphSecurity,
    /// Okta's System Log (`/api/v1/logs`), `Link: rel="next"` paging, an `SSWS` API token.
    Okta,
    /// SentinelOne threats (`/web/api/v2.1/threats`), `pagination.nextCursor`, an
    /// `ApiToken`.
    Sentinelone,
    /// Elastic Security alerts (the `.alerts-security.alerts-*` indices), `search_after`
    /// paging, an Elasticsearch API key.
    Elastic,
    /// Google Workspace Alert Center (`/v1beta1/alerts`), `nextPageToken` paging, a
    /// service account's signed JWT acting for a Workspace admin.
    GoogleWorkspace,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Crowdstrike,
        Kind::GraphSecurity,
        Kind::Okta,
        Kind::Sentinelone,
        Kind::Elastic,
        Kind::GoogleWorkspace,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Crowdstrike => "crowdstrike",
            Kind::GraphSecurity => "graph_security",
            Kind::Okta => "okta",
            Kind::Sentinelone => "sentinelone",
            Kind::Elastic => "elastic",
            Kind::GoogleWorkspace => "google_workspace",
        }
    }

    pub fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.as_str() == text)
    }

    /// The parser schema key its alerts are read with (`sleuth_parsers`' registry).
    pub fn schema_key(self) -> &'static str {
        match self {
            Kind::Crowdstrike => "crowdstrike_falcon_alert",
            Kind::GraphSecurity => "microsoft_graph_alert_v2",
            Kind::Okta => "okta_system_log_event",
            Kind::Sentinelone => "sentinelone_threat",
            Kind::Elastic => "elastic_security_alert",
            Kind::GoogleWorkspace => "google_workspace_alert",
        }
    }

    /// The vendor's name, for messages.
    pub fn vendor(self) -> &'static str {
        match self {
            Kind::Crowdstrike => "CrowdStrike Falcon",
            Kind::GraphSecurity => "Microsoft Graph",
            Kind::Okta => "Okta",
            Kind::Sentinelone => "SentinelOne",
            Kind::Elastic => "Elasticsearch",
            Kind::GoogleWorkspace => "Google Workspace",
        }
    }

    /// Whether it signs in with OAuth2 client credentials (a `client_id` and a secret)
    /// rather than an API token alone.
    pub fn uses_oauth(self) -> bool {
        matches!(self, Kind::Crowdstrike | Kind::GraphSecurity)
    }
}

/// What a connector signs in with: the values of the secrets its settings name, read by
/// the caller from the sealed secret store. `Debug` never shows the secret.
#[derive(Clone)]
pub struct Credentials {
    /// The OAuth2 client id (not a secret), for vendors that use one.
    pub client_id: Option<String>,
    /// The client secret (OAuth2), the API token, or (Google Workspace) the service
    /// account's JSON key.
    pub secret: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Credentials")
            .field("client_id", &self.client_id)
            .field("secret", &"***")
            .finish()
    }
}

/// One page a poll read.
#[derive(Debug, Clone)]
pub struct Page {
    /// Each one alert, as the vendor's API gave it.
    pub alerts: Vec<Value>,
    /// Alerts the vendor gave that the connector's severity and type filters left out.
    pub filtered: usize,
    /// Where the next page starts; store it with the alerts.
    pub cursor: Value,
    /// This was the vendor's last page for now: poll again at the next interval.
    pub caught_up: bool,
}

/// Why a poll stopped. The text never holds a credential.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PollError {
    /// The vendor asked to wait (429, `Retry-After`) longer than a poll waits in place.
    #[error("{vendor} answered 429 Too Many Requests; asked to wait {}s", .retry_after.as_secs())]
    RateLimited {
        vendor: &'static str,
        retry_after: Duration,
    },
    /// The credentials were refused (also after a fresh token).
    #[error("{vendor} refused the credentials ({status}): {detail}")]
    Unauthorized {
        vendor: &'static str,
        status: u16,
        detail: String,
    },
    /// The credentials could not be used to sign in (a key that cannot sign).
    #[error("{vendor}: the credentials cannot be used: {detail}")]
    Credentials {
        vendor: &'static str,
        detail: String,
    },
    /// Any other error answer, after the retries 5xx are given.
    #[error("{vendor} answered {status}: {detail}")]
    Vendor {
        vendor: &'static str,
        status: u16,
        detail: String,
    },
    /// The vendor could not be reached (after retries).
    #[error("{vendor} could not be reached: {detail}")]
    Transport {
        vendor: &'static str,
        detail: String,
    },
    /// The answer was not in the documented shape.
    #[error("{vendor} answered in an unexpected shape: {detail}")]
    Shape {
        vendor: &'static str,
        detail: String,
    },
}

impl PollError {
    /// How long to wait before polling again, when the vendor said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            PollError::RateLimited { retry_after, .. } => Some(*retry_after),
            _ => None,
        }
    }
}

/// A connector ready to poll: its vendor, settings and credentials, with an HTTP client
/// and the OAuth2 token it holds between pages.
pub struct Poller {
    kind: Kind,
    settings: Settings,
    http: http::Http,
}

impl std::fmt::Debug for Poller {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Poller")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl Poller {
    pub fn new(
        kind: Kind,
        settings: Settings,
        credentials: Credentials,
        timing: Timing,
    ) -> Result<Poller, String> {
        let http = http::Http::new(kind, &settings, credentials, timing)?;
        Ok(Poller {
            kind,
            settings,
            http,
        })
    }

    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Whether its connector sends verdicts back to the vendor.
    pub fn writes_back(&self) -> bool {
        self.settings.write_back && self.kind.writes_back()
    }

    /// Sends `verdict` to the vendor's alert `alert_id` (see `write_back.rs`).
    pub async fn write_back(&mut self, alert_id: &str, verdict: &Verdict) -> Result<(), PollError> {
        write_back::write(&mut self.http, self.kind, &self.settings, alert_id, verdict).await
    }

    /// Reads the page after `cursor` (`None`: the first, at the start of the backfill
    /// window before `now`).
    pub async fn next_page(
        &mut self,
        cursor: Option<&Value>,
        now: DateTime<Utc>,
    ) -> Result<Page, PollError> {
        let start = now - chrono::Duration::hours(i64::from(self.settings.backfill_hours));
        let cursor = vendors::Cursor::read(cursor, start);
        let mut page = match self.kind {
            Kind::Crowdstrike => {
                vendors::crowdstrike::page(&mut self.http, &self.settings, cursor).await?
            }
            Kind::GraphSecurity => {
                vendors::graph::page(&mut self.http, &self.settings, cursor).await?
            }
            Kind::Okta => vendors::okta::page(&mut self.http, &self.settings, cursor).await?,
            Kind::Sentinelone => {
                vendors::sentinelone::page(&mut self.http, &self.settings, cursor).await?
            }
            Kind::Elastic => vendors::elastic::page(&mut self.http, &self.settings, cursor).await?,
            Kind::GoogleWorkspace => {
                vendors::google_workspace::page(&mut self.http, &self.settings, cursor).await?
            }
        };
        let before = page.alerts.len();
        page.alerts
            .retain(|alert| self.settings.keeps(self.kind, alert));
        page.filtered = before - page.alerts.len();
        Ok(page)
    }
}
