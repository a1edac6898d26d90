//! Signing in, signing out and changing one's password.
//!
//! A sign-in checks the attempt limits first (`throttle.rs`), then the password against
//! its argon2id hash; an unknown email, an inactive user and a user without a password
//! are answered exactly like a wrong password, after the same work. A success starts a
//! session (`session.rs`) and sends the user where they were going, or to the password
//! page when they must choose their own. Changing the password ends every session of the
//! user (the store does) and starts a fresh one for this browser.

use std::time::Instant;

use axum::Extension;
use axum::extract::{FromRequestParts, Query, State};
use axum::http::header::{LOCATION, SET_COOKIE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;
use sleuth_store::{KeyHash, NewSession, User};

use crate::audit::AuditSlot;
use crate::connections::PeerAddress;
use crate::console::form::ConsoleForm;
use crate::console::pages::{api_error_page, error_page, html_response, shell};
use crate::console::session::{
    self, AnySignedIn, CookieNames, SIGN_IN_COOKIE_SECONDS, cookie, random_token, same_secret,
};
use crate::passwords;
use crate::state::AppState;

/// The client's address, as the sign-in limit counts it.
pub(crate) struct ClientAddress(String);

impl FromRequestParts<AppState> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Self::Rejection> {
        let address = parts
            .extensions
            .get::<PeerAddress>()
            .map_or_else(|| "unknown".to_string(), |peer| peer.0.ip().to_string());
        Ok(ClientAddress(address))
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct NextQuery {
    next: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SignInForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    next: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PasswordForm {
    #[serde(default)]
    current: String,
    #[serde(default)]
    new: String,
    #[serde(default)]
    repeat: String,
    #[serde(default)]
    csrf: String,
}

/// A local path to go to after signing in; anything else is the queue.
fn local_next(next: Option<&str>) -> String {
    match next {
        Some(path)
            if path.starts_with('/')
                && !path.starts_with("//")
                && !path.starts_with("/\\")
                && !path.chars().any(char::is_control) =>
        {
            path.to_string()
        }
        _ => "/".to_string(),
    }
}

fn sign_in_form(csrf: &str, next: &str, email: &str, problem: Option<&str>) -> Markup {
    html! {
        section.sign-in {
            h1 { "Sign in" }
            @if let Some(problem) = problem {
                p.problem #sign-in-problem role="alert" { (problem) }
            }
            form method="post" action="/sign-in" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="next" value=(next);
                label { "Email" input #email type="email" name="email" value=(email) autocomplete="username" required autofocus; }
                label { "Password" input #password type="password" name="password" autocomplete="current-password" required; }
                button #sign-in type="submit" { "Sign in" }
            }
        }
    }
}

/// The sign-in form; sets the form's own CSRF cookie.
pub(crate) async fn page(
    State(state): State<AppState>,
    Query(query): Query<NextQuery>,
    request: axum::extract::Request,
) -> Response {
    let (parts, _) = request.into_parts();
    let next = local_next(query.next.as_deref());
    if session::optional(&parts, &state).await.is_some() {
        return Redirect::to(&next).into_response();
    }
    render_sign_in(&state, &next, "", None, StatusCode::OK)
}

fn render_sign_in(
    state: &AppState,
    next: &str,
    email: &str,
    problem: Option<&str>,
    status: StatusCode,
) -> Response {
    let names = CookieNames::of(state);
    let csrf = random_token();
    let mut response = html_response(
        status,
        shell("Sign in", None, sign_in_form(&csrf, next, email, problem)),
    );
    if let Ok(value) = names
        .set(names.sign_in, &csrf, Some(SIGN_IN_COOKIE_SECONDS))
        .parse()
    {
        response.headers_mut().append(SET_COOKIE, value);
    }
    response
}

/// Starts a session for `user` and answers 303 to `to`, with the session cookie. The
/// audit entry of the request names the new session.
async fn start_session(
    state: &AppState,
    audit: Option<&AuditSlot>,
    user: &User,
    to: &str,
) -> Response {
    let store = match state.store() {
        Ok(store) => store,
        Err(error) => return api_error_page(error),
    };
    let settings = &state.settings().console;
    let now = chrono::Utc::now();
    let idle =
        chrono::Duration::minutes(i64::try_from(settings.session_idle_minutes).unwrap_or(60));
    // Ended sessions are swept here, at each sign-in: there is nothing else to sweep them.
    if let Err(error) = store.delete_ended_sessions(now, now - idle).await {
        tracing::warn!(%error, "could not delete ended console sessions");
    }
    let token = random_token();
    let absolute =
        chrono::Duration::hours(i64::try_from(settings.session_absolute_hours).unwrap_or(12));
    let created = store
        .create_session(&NewSession {
            token_hash: KeyHash::of(&token),
            user_id: user.id,
            csrf_secret: random_token(),
            created_at: now,
            expires_at: now + absolute,
        })
        .await;
    let session_id = match created {
        Ok(session_id) => session_id,
        Err(error) => return api_error_page(error.into()),
    };
    if let Some(slot) = audit {
        slot.fill_session(user, session_id);
    }
    let names = CookieNames::of(state);
    let mut response = (StatusCode::SEE_OTHER, [(LOCATION, to.to_string())]).into_response();
    // The session cookie ends with the browser; the server's limits end it sooner.
    for cookie in [
        names.set(names.session, &token, None),
        names.set(names.sign_in, "", Some(0)),
    ] {
        if let Ok(value) = cookie.parse() {
            response.headers_mut().append(SET_COOKIE, value);
        }
    }
    response
}

pub(crate) async fn submit(
    State(state): State<AppState>,
    ClientAddress(address): ClientAddress,
    audit: Option<Extension<AuditSlot>>,
    headers: HeaderMap,
    ConsoleForm(form): ConsoleForm<SignInForm>,
) -> Response {
    let names = CookieNames::of(&state);
    let next = local_next(Some(&form.next));
    let form_cookie = cookie(&headers, names.sign_in).unwrap_or("");
    if form_cookie.is_empty() || !same_secret(&form.csrf, form_cookie) {
        return error_page(
            StatusCode::FORBIDDEN,
            "This sign-in form is stale or came from another site. Open the sign-in page again.",
        );
    }
    let email = form.email.trim().chars().take(254).collect::<String>();
    let throttle = state.sign_in_throttle();
    if !throttle.allows(&email, &address, Instant::now()) {
        let minutes = state.settings().console.sign_in_window_minutes;
        return render_sign_in(
            &state,
            &next,
            &email,
            Some(&format!(
                "Too many failed sign-ins for this email or from this address. Wait {minutes} \
                 minutes and try again, or ask an admin to reset your password."
            )),
            StatusCode::TOO_MANY_REQUESTS,
        );
    }
    let store = match state.store() {
        Ok(store) => store,
        Err(error) => return api_error_page(error),
    };
    let record = match store.sign_in_record(&email).await {
        Ok(record) => record,
        Err(error) => return api_error_page(error.into()),
    };
    let (user, hash, must_change) = match record {
        Some(record) if record.user.is_active => (
            Some(record.user),
            record.password_hash,
            record.must_change_password,
        ),
        _ => (None, None, false),
    };
    let password = form
        .password
        .chars()
        .take(passwords::MAX_CHARS + 1)
        .collect();
    let matches = passwords::verify_blocking(password, hash).await;
    let Some(user) = user.filter(|_| matches) else {
        throttle.failed(&email, &address, Instant::now());
        return render_sign_in(
            &state,
            &next,
            &email,
            Some("Wrong email or password."),
            StatusCode::UNAUTHORIZED,
        );
    };
    throttle.succeeded(&email, &address);
    let to = if must_change {
        "/password"
    } else {
        next.as_str()
    };
    start_session(&state, audit.as_deref(), &user, to).await
}

pub(crate) async fn sign_out(
    State(state): State<AppState>,
    AnySignedIn(signed_in): AnySignedIn,
    headers: HeaderMap,
    ConsoleForm(form): ConsoleForm<CsrfForm>,
) -> Response {
    if let Some(refused) = signed_in.refuses_csrf(&form.csrf) {
        return refused;
    }
    let names = CookieNames::of(&state);
    if let (Some(token), Ok(store)) = (cookie(&headers, names.session), state.store())
        && let Err(error) = store.delete_session(&KeyHash::of(token)).await
    {
        return api_error_page(error.into());
    }
    let mut response =
        (StatusCode::SEE_OTHER, [(LOCATION, "/sign-in".to_string())]).into_response();
    if let Ok(value) = names.set(names.session, "", Some(0)).parse() {
        response.headers_mut().append(SET_COOKIE, value);
    }
    response
}

fn password_form(signed_in: &session::SignedIn, problem: Option<&str>) -> Markup {
    html! {
        section.password {
            h1 { "Change your password" }
            @if signed_in.session.must_change_password {
                p.notice #must-change { "Choose your own password before you go on: the one you signed in with was set for you." }
            }
            @if let Some(problem) = problem {
                p.problem #password-problem role="alert" { (problem) }
            }
            form method="post" action="/password" {
                input type="hidden" name="csrf" value=(signed_in.csrf());
                label { "Current password" input #current type="password" name="current" autocomplete="current-password" required; }
                label { "New password (at least " (passwords::MIN_CHARS) " characters)" input #new type="password" name="new" autocomplete="new-password" required; }
                label { "New password again" input #repeat type="password" name="repeat" autocomplete="new-password" required; }
                button #change-password type="submit" { "Change password" }
            }
        }
    }
}

pub(crate) async fn password_page(AnySignedIn(signed_in): AnySignedIn) -> Response {
    html_response(
        StatusCode::OK,
        shell(
            "Change password",
            Some(&signed_in),
            password_form(&signed_in, None),
        ),
    )
}

pub(crate) async fn change_password(
    State(state): State<AppState>,
    AnySignedIn(signed_in): AnySignedIn,
    ClientAddress(address): ClientAddress,
    audit: Option<Extension<AuditSlot>>,
    ConsoleForm(form): ConsoleForm<PasswordForm>,
) -> Response {
    if let Some(refused) = signed_in.refuses_csrf(&form.csrf) {
        return refused;
    }
    let user = signed_in.session.user.clone();
    let again = |problem: &str, status: StatusCode| {
        html_response(
            status,
            shell(
                "Change password",
                Some(&signed_in),
                password_form(&signed_in, Some(problem)),
            ),
        )
    };
    // Guessing the current password through this form counts like signing in.
    let throttle = state.sign_in_throttle();
    if !throttle.allows(&user.email, &address, Instant::now()) {
        return again(
            "Too many wrong passwords; wait and try again.",
            StatusCode::TOO_MANY_REQUESTS,
        );
    }
    let store = match state.store() {
        Ok(store) => store,
        Err(error) => return api_error_page(error),
    };
    let hash = match store.sign_in_record(&user.email).await {
        Ok(record) => record.and_then(|record| record.password_hash),
        Err(error) => return api_error_page(error.into()),
    };
    let current = form
        .current
        .chars()
        .take(passwords::MAX_CHARS + 1)
        .collect();
    if !passwords::verify_blocking(current, hash).await {
        throttle.failed(&user.email, &address, Instant::now());
        return again("The current password is wrong.", StatusCode::BAD_REQUEST);
    }
    if form.new != form.repeat {
        return again("The two new passwords differ.", StatusCode::BAD_REQUEST);
    }
    if form.new == form.current {
        return again(
            "Choose a password other than the current one.",
            StatusCode::BAD_REQUEST,
        );
    }
    if let Err(problem) = passwords::check_new(&form.new, &user.email) {
        return again(&problem, StatusCode::BAD_REQUEST);
    }
    let hash = passwords::hash_blocking(form.new).await;
    if let Err(error) = store
        .set_password(user.id, &hash, false, chrono::Utc::now())
        .await
    {
        return api_error_page(error.into());
    }
    start_session(&state, audit.as_deref(), &user, "/").await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_paths_are_followed_after_sign_in() {
        assert_eq!(
            local_next(Some("/investigations/4?x=1")),
            "/investigations/4?x=1"
        );
        assert_eq!(local_next(Some("//evil.example/")), "/");
        assert_eq!(local_next(Some("/\\evil.example/")), "/");
        assert_eq!(local_next(Some("https://evil.example/")), "/");
        assert_eq!(local_next(Some("/\nx")), "/");
        assert_eq!(local_next(None), "/");
    }
}
