//! What every vendor's API shares: signing in (OAuth2 client credentials, refreshed when
//! the token expires or is refused with 401; or an API token in the vendor's header), and
//! the answers that mean "not now": 429 with `Retry-After`, 5xx and unreachable hosts,
//! retried with backoff. Nothing here is vendor-specific but the header and the token URL.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, HeaderMap, RETRY_AFTER};
use serde_json::Value;

use crate::service_account::{GOOGLE_TOKEN_URL, JWT_BEARER, ServiceAccount};
use crate::{Credentials, Kind, PollError, Settings};

/// The Alert Center's scope (it has no read-only one).
const ALERTS_SCOPE: &str = "https://www.googleapis.com/auth/apps.alerts";

/// The longest pause a 429 may ask for that is still honoured (the poll then ends, and the
/// connector's next poll waits this long).
const MAX_PAUSE: Duration = Duration::from_secs(3600);
/// The longest excerpt of a vendor's error answer kept in an error.
const DETAIL_CHARS: usize = 300;

/// How patient a poll is. The defaults suit the vendors; tests shorten them.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Tries of one request that meets 5xx, 429 or no answer, the first included.
    pub attempts: u32,
    /// The wait after the first 5xx or failed connection; doubled after each further one.
    pub backoff: Duration,
    /// A 429 asking to wait longer than this ends the poll instead of waiting in it.
    pub max_inline_wait: Duration,
    /// The time one request may take.
    pub request_timeout: Duration,
}

impl Default for Timing {
    fn default() -> Timing {
        Timing {
            attempts: 4,
            backoff: Duration::from_secs(1),
            max_inline_wait: Duration::from_secs(30),
            request_timeout: Duration::from_secs(30),
        }
    }
}

enum Auth {
    /// An OAuth2 access token got with `grant`; held with the instant it stops being used.
    OAuth {
        token_url: String,
        grant: Grant,
        token: Option<(String, Instant)>,
    },
    /// An API token sent as `Authorization: <scheme> <token>`.
    Token { scheme: &'static str },
}

/// How an OAuth2 access token is asked for.
enum Grant {
    /// Client credentials (RFC 6749 §4.4): the client id and secret.
    ClientCredentials { scope: Option<String> },
    /// A JWT signed by a Google service account (RFC 7523), for `scope`, acting for
    /// `subject` (domain-wide delegation).
    JwtBearer {
        account: Box<ServiceAccount>,
        scope: &'static str,
        subject: Option<String>,
    },
}

/// An answer with a success status.
pub(crate) struct Answer {
    pub headers: HeaderMap,
    pub body: Value,
}

pub(crate) struct Http {
    client: reqwest::Client,
    kind: Kind,
    credentials: Credentials,
    auth: Auth,
    timing: Timing,
}

impl Http {
    pub(crate) fn new(
        kind: Kind,
        settings: &Settings,
        credentials: Credentials,
        timing: Timing,
    ) -> Result<Http, String> {
        // rustls needs one crypto provider per process; a second install changes nothing.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            // A redirect could carry the token to another host.
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .user_agent(concat!("sleuth/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|error| format!("the HTTP client could not start: {error}"))?;
        let auth = match kind {
            Kind::Crowdstrike => Auth::OAuth {
                token_url: settings
                    .token_url
                    .clone()
                    .unwrap_or_else(|| format!("{}/oauth2/token", settings.base())),
                grant: Grant::ClientCredentials { scope: None },
                token: None,
            },
            Kind::GraphSecurity => Auth::OAuth {
                token_url: settings.token_url.clone().unwrap_or_else(|| {
                    format!(
                        "https://login.microsoftonline.com/{}/oauth2/v2.0/token",
                        settings.tenant_id.as_deref().unwrap_or("common")
                    )
                }),
                grant: Grant::ClientCredentials {
                    scope: Some(format!("{}/.default", settings.base())),
                },
                token: None,
            },
            Kind::GoogleWorkspace => {
                let account = ServiceAccount::from_json(&credentials.secret)?;
                let token_url = settings
                    .token_url
                    .clone()
                    .or_else(|| account.token_uri().map(str::to_owned))
                    .unwrap_or_else(|| GOOGLE_TOKEN_URL.to_owned());
                Auth::OAuth {
                    token_url,
                    grant: Grant::JwtBearer {
                        account: Box::new(account),
                        scope: ALERTS_SCOPE,
                        subject: settings.subject.clone(),
                    },
                    token: None,
                }
            }
            Kind::Okta => Auth::Token { scheme: "SSWS" },
            Kind::Sentinelone => Auth::Token { scheme: "ApiToken" },
            Kind::Elastic => Auth::Token { scheme: "ApiKey" },
        };
        Ok(Http {
            client,
            kind,
            credentials,
            auth,
            timing,
        })
    }

    pub(crate) fn vendor(&self) -> &'static str {
        self.kind.vendor()
    }

    pub(crate) async fn get(
        &mut self,
        url: &str,
        query: &[(&str, String)],
    ) -> Result<Answer, PollError> {
        self.authorized(|client| client.get(url).query(query)).await
    }

    pub(crate) async fn post_json(&mut self, url: &str, body: &Value) -> Result<Answer, PollError> {
        self.authorized(|client| client.post(url).json(body)).await
    }

    pub(crate) async fn patch_json(
        &mut self,
        url: &str,
        body: &Value,
    ) -> Result<Answer, PollError> {
        self.authorized(|client| client.patch(url).json(body)).await
    }

    /// Sends with the credentials; a 401 with an OAuth2 token gets one fresh token and one
    /// more try (the token expired or was revoked early).
    async fn authorized(
        &mut self,
        request: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<Answer, PollError> {
        let mut refreshed = false;
        loop {
            let authorization = self.authorization().await?;
            let (status, headers, text) = self
                .exchange(|client| request(client).header(AUTHORIZATION, &authorization))
                .await?;
            if status.is_success() {
                // An update may answer 204 No Content.
                let body = if text.trim().is_empty() {
                    Value::Null
                } else {
                    self.json(&text)?
                };
                return Ok(Answer { body, headers });
            }
            if status == StatusCode::UNAUTHORIZED
                && !refreshed
                && let Auth::OAuth { token, .. } = &mut self.auth
            {
                *token = None;
                refreshed = true;
                continue;
            }
            let detail = self.scrub(&text);
            return Err(if matches!(status.as_u16(), 401 | 403) {
                PollError::Unauthorized {
                    vendor: self.vendor(),
                    status: status.as_u16(),
                    detail,
                }
            } else {
                PollError::Vendor {
                    vendor: self.vendor(),
                    status: status.as_u16(),
                    detail,
                }
            });
        }
    }

    /// The `Authorization` value, signing in first when the token is missing or expired.
    async fn authorization(&mut self) -> Result<String, PollError> {
        match &self.auth {
            Auth::Token { scheme } => Ok(format!("{scheme} {}", self.credentials.secret)),
            Auth::OAuth {
                token: Some((token, until)),
                ..
            } if Instant::now() < *until => Ok(format!("Bearer {token}")),
            Auth::OAuth { token_url, .. } => {
                let token_url = token_url.clone();
                let (token, until) = self.sign_in(&token_url).await?;
                if let Auth::OAuth { token: held, .. } = &mut self.auth {
                    *held = Some((token.clone(), until));
                }
                Ok(format!("Bearer {token}"))
            }
        }
    }

    /// Asks the token endpoint for an access token: the token and when to stop using it.
    async fn sign_in(&self, token_url: &str) -> Result<(String, Instant), PollError> {
        let form = self.grant_form(token_url)?;
        let (status, _, text) = self
            .exchange(|client| client.post(token_url).form(&form))
            .await?;
        if !status.is_success() {
            return Err(PollError::Unauthorized {
                vendor: self.vendor(),
                status: status.as_u16(),
                detail: format!("the token endpoint refused: {}", self.scrub(&text)),
            });
        }
        let body = self.json(&text)?;
        let token = body
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|token| !token.is_empty())
            .ok_or_else(|| self.shape("the token answer has no access_token"))?;
        let lifetime = body
            .get("expires_in")
            .and_then(|value| {
                value
                    .as_u64()
                    .or_else(|| value.as_str().and_then(|text| text.parse().ok()))
            })
            .unwrap_or(300);
        // Renewed a little before the vendor says it ends, so no request carries it late.
        let margin = (lifetime / 10).min(60);
        let until = Instant::now() + Duration::from_secs(lifetime.saturating_sub(margin));
        Ok((token.to_owned(), until))
    }

    /// The form of a token request, as the grant asks for it.
    fn grant_form(&self, token_url: &str) -> Result<Vec<(&'static str, String)>, PollError> {
        let Auth::OAuth { grant, .. } = &self.auth else {
            return Ok(Vec::new());
        };
        Ok(match grant {
            Grant::ClientCredentials { scope } => {
                let mut form = vec![
                    ("grant_type", "client_credentials".to_owned()),
                    (
                        "client_id",
                        self.credentials.client_id.clone().unwrap_or_default(),
                    ),
                    ("client_secret", self.credentials.secret.clone()),
                ];
                if let Some(scope) = scope {
                    form.push(("scope", scope.clone()));
                }
                form
            }
            Grant::JwtBearer {
                account,
                scope,
                subject,
            } => {
                // The audience is the endpoint the assertion is sent to, so it is good there
                // only.
                let assertion = account
                    .assertion(
                        scope,
                        token_url,
                        subject.as_deref(),
                        chrono::Utc::now().timestamp(),
                    )
                    .map_err(|detail| PollError::Credentials {
                        vendor: self.vendor(),
                        detail,
                    })?;
                vec![
                    ("grant_type", JWT_BEARER.to_owned()),
                    ("assertion", assertion),
                ]
            }
        })
    }

    /// One request, tried again on 5xx, 429 (waiting as `Retry-After` says, when that is
    /// short) and transport failures. Answers any other status as it came.
    async fn exchange(
        &self,
        request: impl Fn(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<(StatusCode, HeaderMap, String), PollError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let last = attempt >= self.timing.attempts;
            let backoff = self.timing.backoff * 2u32.saturating_pow(attempt - 1);
            let response = request(&self.client)
                .timeout(self.timing.request_timeout)
                .send()
                .await;
            let response = match response {
                Ok(response) => response,
                Err(error) if last => {
                    return Err(PollError::Transport {
                        vendor: self.vendor(),
                        detail: self.scrub(&without_url(&error)),
                    });
                }
                Err(_) => {
                    tokio::time::sleep(backoff).await;
                    continue;
                }
            };
            let status = response.status();
            let headers = response.headers().clone();
            let text = response.text().await.unwrap_or_default();
            if status == StatusCode::TOO_MANY_REQUESTS {
                let wait = retry_after(&headers).unwrap_or(backoff);
                if last || wait > self.timing.max_inline_wait {
                    return Err(PollError::RateLimited {
                        vendor: self.vendor(),
                        retry_after: wait,
                    });
                }
                tokio::time::sleep(wait).await;
                continue;
            }
            if status.is_server_error() && !last {
                let wait = retry_after(&headers)
                    .filter(|wait| *wait <= self.timing.max_inline_wait)
                    .unwrap_or(backoff);
                tokio::time::sleep(wait).await;
                continue;
            }
            return Ok((status, headers, text));
        }
    }

    fn json(&self, text: &str) -> Result<Value, PollError> {
        serde_json::from_str(text).map_err(|error| self.shape(&format!("not JSON: {error}")))
    }

    pub(crate) fn shape(&self, detail: &str) -> PollError {
        PollError::Shape {
            vendor: self.vendor(),
            detail: detail.to_owned(),
        }
    }

    /// `text` cut short, with the secret and the token masked wherever the vendor echoed
    /// them.
    fn scrub(&self, text: &str) -> String {
        let mut text: String = text.chars().take(DETAIL_CHARS).collect();
        let mut hidden = vec![self.credentials.secret.as_str()];
        if let Auth::OAuth {
            token: Some((token, _)),
            ..
        } = &self.auth
        {
            hidden.push(token);
        }
        for value in hidden.into_iter().filter(|value| value.len() >= 4) {
            text = text.replace(value, "***");
        }
        text
    }
}

/// A transport error without the URL (which, for some vendors, holds query values).
fn without_url(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "connection failed"
    } else {
        "request failed"
    };
    let mut detail = kind.to_owned();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        detail = format!("{detail}: {cause}");
        source = cause.source();
    }
    detail
}

/// `Retry-After` in seconds or as an HTTP date, at most `MAX_PAUSE`.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    let wait = match text.parse::<u64>() {
        Ok(seconds) => Duration::from_secs(seconds),
        Err(_) => {
            let at = chrono::DateTime::parse_from_rfc2822(text).ok()?;
            (at.with_timezone(&chrono::Utc) - chrono::Utc::now())
                .to_std()
                .unwrap_or_default()
        }
    };
    Some(wait.min(MAX_PAUSE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates_and_is_capped() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, "7".parse().expect("header"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(7)));
        headers.insert(RETRY_AFTER, "999999".parse().expect("header"));
        assert_eq!(retry_after(&headers), Some(MAX_PAUSE));
        let soon = (chrono::Utc::now() + chrono::Duration::seconds(120)).to_rfc2822();
        headers.insert(RETRY_AFTER, soon.parse().expect("header"));
        let wait = retry_after(&headers).expect("a date");
        assert!(wait > Duration::from_secs(100) && wait <= Duration::from_secs(120));
        headers.insert(RETRY_AFTER, "soon".parse().expect("header"));
        assert_eq!(retry_after(&headers), None);
    }
}
