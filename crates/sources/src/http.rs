//! Asking a declared HTTP JSON source about one entity: the request its lookup declares,
//! its authentication (a stored secret in a header or the query, or an OAuth 2.0 token),
//! and the answer read as the vendor documents it: the not-found statuses, 429 with
//! `Retry-After` (or Okta's `X-Rate-Limit-Reset`), the vendor's own error words.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use sleuth_domain::{AnswerResult, Entity};

use crate::definition::{Auth, CompiledHttp, Method};
use crate::secrets::{Scrub, Secrets};
use crate::template::Place;
use crate::{Failure, Lookup};

/// The most of an answer that is read; a larger one is a failure, not a memory problem.
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;
/// The longest pause a vendor's 429 may impose on a source.
const MAX_PAUSE: Duration = Duration::from_secs(3600);

/// The HTTP clients every declared source shares (their connection pools).
#[derive(Debug, Clone)]
pub(crate) struct Clients {
    /// For sources without credentials: follows redirects (RDAP's bootstrap redirects to
    /// the registry that holds the domain).
    following: reqwest::Client,
    /// For sources with credentials: never follows a redirect, which could carry a key
    /// to another host.
    staying: reqwest::Client,
}

impl Clients {
    pub(crate) fn new() -> Result<Clients, String> {
        // rustls needs one crypto provider per process; a second install changes nothing.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let build = |policy| {
            reqwest::Client::builder()
                .redirect(policy)
                .no_proxy()
                .user_agent(concat!("sleuth/", env!("CARGO_PKG_VERSION")))
                .connect_timeout(Duration::from_secs(10))
                .pool_idle_timeout(Duration::from_secs(60))
                .build()
                .map_err(|error| format!("the HTTP client could not start: {error}"))
        };
        Ok(Clients {
            following: build(reqwest::redirect::Policy::limited(5))?,
            staying: build(reqwest::redirect::Policy::none())?,
        })
    }
}

/// A declared source with its OAuth token, when it uses one.
#[derive(Debug)]
pub(crate) struct HttpSource {
    pub definition: CompiledHttp,
    token: tokio::sync::Mutex<Option<(String, Instant)>>,
}

impl HttpSource {
    pub(crate) fn new(definition: CompiledHttp) -> HttpSource {
        HttpSource {
            definition,
            token: tokio::sync::Mutex::new(None),
        }
    }

    /// Asks about one entity; the caller applies the timeout.
    pub(crate) async fn lookup(
        &self,
        clients: &Clients,
        entity: &Entity,
        secrets: &dyn Secrets,
    ) -> Result<Lookup, Failure> {
        let mut scrub = Scrub::default();
        let outcome = self.lookup_once(clients, entity, secrets, &mut scrub).await;
        let outcome = match outcome {
            Err(failure) if failure.token_refused => {
                // The token expired or was revoked before its time: fetch one more.
                *self.token.lock().await = None;
                self.lookup_once(clients, entity, secrets, &mut scrub).await
            }
            other => other,
        };
        outcome.map_err(|failure| Failure {
            reason: scrub.clean(&failure.reason),
            ..failure
        })
    }

    async fn lookup_once(
        &self,
        clients: &Clients,
        entity: &Entity,
        secrets: &dyn Secrets,
        scrub: &mut Scrub,
    ) -> Result<Lookup, Failure> {
        let definition = &self.definition;
        let Some(lookup) = definition.lookups.get(&entity.kind) else {
            return Err(Failure::new(format!(
                "this source declares no lookup for {} entities",
                entity.kind
            )));
        };
        let client = match definition.auth {
            Auth::None => &clients.following,
            _ => &clients.staying,
        };
        let value = entity.value.as_str();
        let mut url = definition.base_url.clone();
        let path = format!(
            "{}{}",
            url.path().trim_end_matches('/'),
            lookup.path.fill(value, Place::Path)
        );
        url.set_path(&path);
        // Only when there are pairs: an empty `query_pairs_mut` leaves a bare `?`, which
        // some vendors' routers and request signatures do not take as the same URL.
        if !lookup.query.is_empty() {
            let mut pairs = url.query_pairs_mut();
            for (name, template) in &lookup.query {
                pairs.append_pair(name, &template.fill(value, Place::Other));
            }
        }
        let mut headers = HeaderMap::new();
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        for (name, template) in &lookup.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| Failure::new(format!("'{name}' is not a header name")))?;
            let value = HeaderValue::from_str(&template.fill(value, Place::Other))
                .map_err(|_| Failure::new("the entity's value cannot be sent in a header"))?;
            headers.insert(name, value);
        }
        match &definition.auth {
            Auth::None => {}
            Auth::Header {
                name,
                secret,
                prefix,
            } => {
                let secret = secrets.secret(secret).await.map_err(Failure::new)?;
                scrub.add(&secret);
                let name = HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| Failure::new(format!("'{name}' is not a header name")))?;
                let mut value = HeaderValue::from_str(&format!("{prefix}{}", secret.expose()))
                    .map_err(|_| Failure::new("the stored secret cannot be sent in a header"))?;
                value.set_sensitive(true);
                headers.insert(name, value);
            }
            Auth::Query { name, secret } => {
                let secret = secrets.secret(secret).await.map_err(Failure::new)?;
                scrub.add(&secret);
                url.query_pairs_mut().append_pair(name, secret.expose());
            }
            Auth::Oauth2ClientCredentials { .. } => {
                let token = self.token(clients, secrets, scrub).await?;
                let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
                    .map_err(|_| Failure::new("the vendor's token cannot be sent in a header"))?;
                value.set_sensitive(true);
                headers.insert(reqwest::header::AUTHORIZATION, value);
            }
        }
        let mut request = match lookup.method {
            Method::Get => client.get(url),
            Method::Post => client.post(url),
        }
        .headers(headers);
        if !lookup.form.is_empty() {
            let form: Vec<(String, String)> = lookup
                .form
                .iter()
                .map(|(name, template)| (name.clone(), template.fill(value, Place::Other)))
                .collect();
            request = request.form(&form);
        }
        if let Some(json) = &lookup.json {
            request = request.json(&fill_json(json, value));
        }
        let response = request.send().await.map_err(transport_failure)?;
        let status = response.status();
        let response_headers = response.headers().clone();
        let body = read_body(response).await?;
        let parsed: Option<Value> = serde_json::from_slice(&body).ok();
        if definition.not_found_statuses.contains(&status.as_u16()) {
            return Ok(Lookup {
                result: AnswerResult::NotFound,
                raw: parsed,
            });
        }
        if status == StatusCode::TOO_MANY_REQUESTS {
            let wait = retry_after(&response_headers, chrono::Utc::now());
            return Err(Failure {
                reason: format!(
                    "the vendor is rate limiting Sleuth (429{})",
                    wait.map(|wait| format!(", retry after {} s", wait.as_secs().max(1)))
                        .unwrap_or_default()
                ),
                retry_after: Some(wait.unwrap_or(Duration::from_secs(60)).min(MAX_PAUSE)),
                breaker: false,
                token_refused: false,
            });
        }
        if !status.is_success() {
            let words = self.vendor_words(parsed.as_ref(), &body);
            let what = match status.as_u16() {
                401 | 403 => "refused Sleuth's credentials",
                400..=499 => "refused the request",
                _ => "failed",
            };
            return Err(Failure {
                reason: format!("the vendor {what} (HTTP {}){words}", status.as_u16()),
                retry_after: None,
                breaker: true,
                token_refused: status == StatusCode::UNAUTHORIZED
                    && matches!(definition.auth, Auth::Oauth2ClientCredentials { .. }),
            });
        }
        let Some(parsed) = parsed else {
            return Err(Failure::new(format!(
                "the vendor answered HTTP {} but not with JSON",
                status.as_u16()
            )));
        };
        if let Some((path, values)) = &definition.not_found_when
            && path
                .query(&parsed)
                .first()
                .is_some_and(|found| values.contains(found))
        {
            return Ok(Lookup {
                result: AnswerResult::NotFound,
                raw: Some(parsed),
            });
        }
        let facts = crate::extract::facts(&definition.facts, &parsed, entity.kind);
        Ok(Lookup {
            result: AnswerResult::Found(facts),
            raw: Some(parsed),
        })
    }

    /// The vendor's error message, quoted briefly.
    fn vendor_words(&self, parsed: Option<&Value>, body: &[u8]) -> String {
        let declared = self.definition.error_message.as_ref().and_then(|path| {
            parsed
                .and_then(|parsed| path.query(parsed).first().cloned())
                .map(|value| match value {
                    Value::String(text) => text,
                    other => other.to_string(),
                })
        });
        let words = declared.unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string());
        if words.is_empty() {
            return String::new();
        }
        format!(": {}", words.chars().take(200).collect::<String>())
    }

    async fn token(
        &self,
        clients: &Clients,
        secrets: &dyn Secrets,
        scrub: &mut Scrub,
    ) -> Result<String, Failure> {
        let Auth::Oauth2ClientCredentials {
            token_url,
            client_id,
            client_secret,
            scope,
        } = &self.definition.auth
        else {
            return Err(Failure::new("this source does not use OAuth"));
        };
        let mut kept = self.token.lock().await;
        if let Some((token, expires)) = kept.as_ref()
            && Instant::now() < *expires
        {
            return Ok(token.clone());
        }
        let secret = secrets.secret(client_secret).await.map_err(Failure::new)?;
        scrub.add(&secret);
        let mut form = vec![
            ("grant_type", "client_credentials"),
            ("client_id", client_id.as_str()),
            ("client_secret", secret.expose()),
        ];
        if let Some(scope) = scope {
            form.push(("scope", scope.as_str()));
        }
        let response = clients
            .staying
            .post(token_url)
            .header(reqwest::header::ACCEPT, "application/json")
            .form(&form)
            .send()
            .await
            .map_err(transport_failure)?;
        let status = response.status();
        let body = read_body(response).await?;
        let parsed: Option<Value> = serde_json::from_slice(&body).ok();
        if !status.is_success() {
            let words = parsed
                .as_ref()
                .and_then(|parsed| {
                    parsed
                        .get("error_description")
                        .or_else(|| parsed.get("error"))
                        .and_then(Value::as_str)
                })
                .map(|words| format!(": {}", words.chars().take(200).collect::<String>()))
                .unwrap_or_default();
            return Err(Failure {
                reason: format!(
                    "the vendor's token endpoint refused the client credentials (HTTP {}){words}",
                    status.as_u16()
                ),
                retry_after: None,
                breaker: true,
                token_refused: false,
            });
        }
        let token = parsed
            .as_ref()
            .and_then(|parsed| parsed.get("access_token"))
            .and_then(Value::as_str)
            .ok_or_else(|| Failure::new("the vendor's token endpoint gave no access_token"))?
            .to_string();
        let lifetime = parsed
            .as_ref()
            .and_then(|parsed| parsed.get("expires_in"))
            .and_then(Value::as_u64)
            .unwrap_or(300);
        // Renewed a minute early, so that no call carries a token about to expire.
        let expires = Instant::now() + Duration::from_secs(lifetime.saturating_sub(60).max(1));
        *kept = Some((token.clone(), expires));
        Ok(token)
    }
}

fn fill_json(value: &Value, entity_value: &str) -> Value {
    match value {
        Value::String(text) => Value::String(
            crate::template::Template::parse(text)
                .map(|template| template.fill(entity_value, Place::Other))
                .unwrap_or_else(|_| text.clone()),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|item| fill_json(item, entity_value))
                .collect(),
        ),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(name, item)| (name.clone(), fill_json(item, entity_value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

async fn read_body(mut response: reqwest::Response) -> Result<Vec<u8>, Failure> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport_failure)? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(Failure::new(format!(
                "the vendor's answer is larger than {} MiB",
                MAX_ANSWER_BYTES / 1024 / 1024
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// What went wrong in words that hold no URL (a query secret would be in it).
fn transport_failure(error: reqwest::Error) -> Failure {
    let what = if error.is_timeout() {
        "the vendor did not answer in time"
    } else if error.is_connect() {
        "the vendor could not be reached (connection failed)"
    } else if error.is_redirect() {
        "the vendor redirected elsewhere, which a source with credentials never follows"
    } else if error.is_body() || error.is_decode() {
        "the vendor's answer broke off"
    } else {
        "the request to the vendor failed"
    };
    let cause = std::error::Error::source(&error.without_url())
        .map(|cause| format!(": {cause}"))
        .unwrap_or_default();
    Failure::new(format!("{what}{cause}"))
}

/// How long a 429 asks Sleuth to wait: `Retry-After` in seconds or as an HTTP date, or the
/// Unix time in `X-Rate-Limit-Reset` (Okta), `X-RateLimit-RetryAfter` (CrowdStrike) or
/// `X-RateLimit-Reset`.
pub fn retry_after(headers: &HeaderMap, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
    };
    if let Some(value) = header("retry-after") {
        if let Ok(seconds) = value.parse::<u64>() {
            return Some(Duration::from_secs(seconds));
        }
        if let Ok(date) = chrono::DateTime::parse_from_rfc2822(value) {
            return Some(
                (date.with_timezone(&chrono::Utc) - now)
                    .to_std()
                    .unwrap_or_default(),
            );
        }
    }
    for name in [
        "x-rate-limit-reset",
        "x-ratelimit-reset",
        "x-ratelimit-retryafter",
    ] {
        if let Some(reset) = header(name).and_then(|value| value.parse::<i64>().ok()) {
            // Some vendors send seconds left rather than a time: a small number is that.
            if reset < 1_000_000_000 {
                return u64::try_from(reset).ok().map(Duration::from_secs);
            }
            return Some(Duration::from_secs(
                u64::try_from(reset - now.timestamp()).unwrap_or(0),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn retry_after_reads_seconds_dates_and_reset_times() {
        let now = chrono::Utc
            .with_ymd_and_hms(2026, 11, 25, 12, 0, 0)
            .unwrap();
        let headers = |name: &'static str, value: &str| {
            let mut map = HeaderMap::new();
            map.insert(name, HeaderValue::from_str(value).unwrap());
            map
        };
        assert_eq!(
            retry_after(&headers("retry-after", "7"), now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(
                &headers("retry-after", "Wed, 25 Nov 2026 12:00:30 GMT"),
                now
            ),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            retry_after(
                &headers("x-rate-limit-reset", &(now.timestamp() + 12).to_string()),
                now
            ),
            Some(Duration::from_secs(12))
        );
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }
}
