//! Console sessions: the cookie, the signed-in user behind it, and the CSRF check of
//! every form.
//!
//! The cookie holds a random 256-bit token; the database holds only its SHA-256. It is
//! `HttpOnly` (no script reads it), `SameSite=Strict` (no other site's page sends it) and
//! `Path=/`. Its name follows one documented rule: with `console.behind_tls` it is
//! `__Host-sleuth_session` and `Secure` (the prefix makes browsers refuse it without
//! `Secure`, a `Domain` or another path); without, `sleuth_session` and not `Secure`, since
//! a browser would not send a `Secure` cookie over plain `http://127.0.0.1:8080/`.
//!
//! Every POST form carries the session's CSRF secret in a hidden field `csrf`, compared
//! in constant time. The sign-in form, which has no session yet, carries the value of a
//! short-lived cookie of its own instead (double submit), so that another site cannot
//! sign a browser in as someone else.

use axum::extract::FromRequestParts;
use axum::http::HeaderMap;
use axum::http::header::COOKIE;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine;
use rand::RngCore;
use sleuth_store::{KeyHash, Principal, Session, TenantScope};

use crate::audit::AuditSlot;
use crate::auth::Caller;
use crate::console::pages::error_page;
use crate::state::AppState;

/// A session is marked used at most this often, so that browsing is not a database
/// write per page.
const TOUCH_RESOLUTION_SECONDS: i64 = 60;
/// How long the sign-in form's own cookie lives.
pub(crate) const SIGN_IN_COOKIE_SECONDS: u64 = 30 * 60;

/// 32 random bytes, URL-safe base64 (43 characters).
pub(crate) fn random_token() -> String {
    let mut bytes = [0_u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The names of the console's cookies, by the rule above.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CookieNames {
    pub session: &'static str,
    pub sign_in: &'static str,
    secure: bool,
}

impl CookieNames {
    pub(crate) fn of(state: &AppState) -> CookieNames {
        if state.settings().console.behind_tls {
            CookieNames {
                session: "__Host-sleuth_session",
                sign_in: "__Host-sleuth_sign_in",
                secure: true,
            }
        } else {
            CookieNames {
                session: "sleuth_session",
                sign_in: "sleuth_sign_in",
                secure: false,
            }
        }
    }

    /// A `Set-Cookie` value; `max_age` None makes a cookie that ends with the browser,
    /// `Some(0)` one that is deleted.
    pub(crate) fn set(&self, name: &str, value: &str, max_age: Option<u64>) -> String {
        let mut cookie = format!("{name}={value}; Path=/; HttpOnly; SameSite=Strict");
        if let Some(seconds) = max_age {
            cookie.push_str(&format!("; Max-Age={seconds}"));
        }
        if self.secure {
            cookie.push_str("; Secure");
        }
        cookie
    }
}

/// The value of the cookie `name`, if the request sent one that could be a token.
pub(crate) fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty() && value.len() <= 128)
}

/// Equal strings, compared in time that does not depend on where they differ.
pub(crate) fn same_secret(sent: &str, expected: &str) -> bool {
    let (sent, expected) = (sent.as_bytes(), expected.as_bytes());
    sent.len() == expected.len()
        && sent
            .iter()
            .zip(expected)
            .fold(0_u8, |differ, (left, right)| differ | (left ^ right))
            == 0
}

/// The signed-in user of a console request, with a password of their own. A request
/// without a live session is sent to the sign-in page; a user who must still change
/// their password, to the password page.
#[derive(Debug, Clone)]
pub(crate) struct SignedIn {
    pub session: Session,
    audit: Option<AuditSlot>,
}

/// Any signed-in user, also one who must still change their password (the password
/// page and sign-out accept them).
#[derive(Debug, Clone)]
pub(crate) struct AnySignedIn(pub SignedIn);

impl SignedIn {
    /// The same `Caller` an API key of this user would be, without a key's narrowing: so
    /// roles and tenant unions apply exactly as for the API.
    pub(crate) fn caller(&self) -> Caller {
        let principal = Principal {
            user: self.session.user.clone(),
            // A session has no key; nothing reads the id of a console caller's key (the
            // audit entry names the session instead, `AuditSlot::fill_session`).
            api_key_id: 0,
            key_last_used_at: None,
            key_scope: TenantScope::All,
        };
        Caller(principal, self.audit.clone())
    }

    /// The refusal of a form that does not carry this session's CSRF secret; `None`
    /// when it does.
    pub(crate) fn refuses_csrf(&self, sent: &str) -> Option<Response> {
        (!same_secret(sent, &self.session.csrf_secret)).then(|| {
            error_page(
                axum::http::StatusCode::FORBIDDEN,
                "This form is stale or came from another site. Go back, reload the page and \
                 send it again.",
            )
        })
    }

    pub(crate) fn csrf(&self) -> &str {
        &self.session.csrf_secret
    }
}

/// Where a page that needs a session sends a request without one.
fn to_sign_in(parts: &Parts) -> Response {
    let wanted = parts.uri.path_and_query().map_or("/", |path| path.as_str());
    // Only a local path comes back through `next`, never another site.
    let next = if wanted.starts_with('/') && !wanted.starts_with("//") {
        wanted
    } else {
        "/"
    };
    let query: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("next", next)
        .finish();
    Redirect::to(&format!("/sign-in?{query}")).into_response()
}

async fn find(parts: &Parts, state: &AppState) -> Result<Option<SignedIn>, Response> {
    let names = CookieNames::of(state);
    let Some(token) = cookie(&parts.headers, names.session) else {
        return Ok(None);
    };
    let store = state.store().map_err(IntoResponse::into_response)?;
    let now = chrono::Utc::now();
    let settings = &state.settings().console;
    let idle = chrono::Duration::minutes(
        i64::try_from(settings.session_idle_minutes).unwrap_or(i64::MAX / 60_000_000),
    );
    let session = store
        .find_session(&KeyHash::of(token), now, now - idle)
        .await
        .map_err(|error| crate::error::ApiError::from(error).into_response())?;
    let Some(session) = session else {
        return Ok(None);
    };
    if (now - session.last_seen_at).num_seconds() >= TOUCH_RESOLUTION_SECONDS {
        let store = store.clone();
        let session_id = session.id;
        tokio::spawn(async move {
            if let Err(error) = store.touch_session(session_id, now).await {
                tracing::debug!(%error, "could not record session use");
            }
        });
    }
    let audit = parts.extensions.get::<AuditSlot>().cloned();
    if let Some(slot) = &audit {
        slot.fill_session(&session.user, session.id);
    }
    Ok(Some(SignedIn { session, audit }))
}

impl FromRequestParts<AppState> for AnySignedIn {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        match find(parts, state).await? {
            Some(signed_in) => Ok(AnySignedIn(signed_in)),
            None => Err(to_sign_in(parts)),
        }
    }
}

impl FromRequestParts<AppState> for SignedIn {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let AnySignedIn(signed_in) = AnySignedIn::from_request_parts(parts, state).await?;
        if signed_in.session.must_change_password {
            return Err(Redirect::to("/password").into_response());
        }
        Ok(signed_in)
    }
}

/// The session of a request, if it has a live one (the sign-in page asks).
pub(crate) async fn optional(parts: &Parts, state: &AppState) -> Option<SignedIn> {
    find(parts, state).await.ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cookie_is_found_among_others_and_odd_ones_are_ignored() {
        let mut headers = HeaderMap::new();
        headers.append(COOKIE, "theme=dark; sleuth_session=abc".parse().unwrap());
        headers.append(COOKIE, "other=1".parse().unwrap());
        assert_eq!(cookie(&headers, "sleuth_session"), Some("abc"));
        assert_eq!(cookie(&headers, "missing"), None);
        let mut headers = HeaderMap::new();
        headers.append(COOKIE, "sleuth_session=".parse().unwrap());
        assert_eq!(cookie(&headers, "sleuth_session"), None);
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abd", "abc"));
        assert!(!same_secret("ab", "abc"));
        assert!(!same_secret("", "abc"));
    }
}
