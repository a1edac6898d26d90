//! The analyst console: server-rendered HTML pages at `/` beside the API (which stays
//! under `/app/api/v1`), signed in with a password and a session cookie
//! (`session.rs`), for the same users, roles and tenant unions as the API: a page acts as
//! the `Caller` the user's API key would be and reads through the same store queries.
//!
//! Templates are `maud`: HTML written as Rust macros, checked when the crate compiles
//! (an unclosed element or a misspelt variable does not build), with every `(value)`
//! escaped unless wrapped in `PreEscaped`, which this module never does with anything
//! that came from outside. Alerts are written by attackers; escaping by default is what
//! keeps a title like `<img src=x onerror=alert(1)>` text. maud has no runtime, no
//! template files to ship and only a proc-macro crate besides (askama, the other
//! candidate, parses template files at compile time through a larger parser tree).
//!
//! What a page loads is embedded in the binary (`assets.rs`: one CSS and one JS file,
//! served by content hash). No inline script or style: the Content-Security-Policy every
//! console answer carries (`security_headers`) forbids them.
//!
//! Pages: sign-in, sign-out and change password (`sign_in.rs`); the queue (`queue.rs`);
//! an investigation, its feedback, notes and response-action runs (`investigation.rs`,
//! `runs.rs`); the live events of the queue (`events.rs`, the API's stream for a
//! session); the dashboard (`dashboard.rs`); the admin's settings (`settings.rs`, whose
//! forms are read whole or refused whole, `form.rs`); and the 404 page of any other
//! console path (`unknown_page`).

mod assets;
mod dashboard;
mod events;
mod form;
mod investigation;
pub(crate) mod pages;
mod queue;
mod runs;
mod session;
mod settings;
mod sign_in;
pub mod throttle;

use axum::Router;
use axum::extract::Request;
use axum::http::HeaderValue;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
    X_FRAME_OPTIONS,
};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::{get, post};

use crate::state::AppState;

/// The policy of every console answer: only this origin's script, style and images (and
/// `data:` images), never inline, never framed, forms posting only here.
pub const CONTENT_SECURITY_POLICY_VALUE: &str = "default-src 'self'; script-src 'self'; \
    style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; \
    base-uri 'none'";

/// The console's routes, for `crate::build` to merge beside the API's.
pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(queue::page))
        .route("/dashboard", get(dashboard::page))
        .route("/sign-in", get(sign_in::page).post(sign_in::submit))
        .route("/sign-out", post(sign_in::sign_out))
        .route(
            "/password",
            get(sign_in::password_page).post(sign_in::change_password),
        )
        .route(
            "/investigations/{investigation_id}",
            get(investigation::page),
        )
        .route(
            "/investigations/{investigation_id}/feedback",
            post(investigation::feedback),
        )
        .route(
            "/investigations/{investigation_id}/notes",
            post(investigation::add_note),
        )
        .route("/settings", get(settings::overview))
        .route(
            "/settings/context",
            get(settings::context_show).post(settings::context_save),
        )
        .route(
            "/settings/memory",
            get(settings::memory_page).post(settings::memory_add),
        )
        .route(
            "/settings/memory/{item_id}/delete",
            post(settings::memory_remove),
        )
        .route("/settings/strategies", get(settings::strategies_list))
        .route(
            "/settings/strategies/{strategy_id}",
            get(settings::strategy_show),
        )
        .route(
            "/settings/strategies/{strategy_id}/backtest",
            post(settings::strategy_backtest),
        )
        .route(
            "/settings/actions",
            get(settings::actions_list).post(settings::action_create),
        )
        .route("/settings/actions/{script_id}", get(settings::action_show))
        .route(
            "/settings/actions/{script_id}/test",
            post(settings::action_test),
        )
        .route(
            "/settings/users",
            get(settings::users).post(settings::user_create),
        )
        .route(
            "/settings/users/{user_id}",
            get(settings::user_page).post(settings::user_change),
        )
        .route(
            "/settings/users/{user_id}/password",
            post(settings::user_password),
        )
        .route(
            "/settings/users/{user_id}/unions",
            post(settings::user_unions),
        )
        .route(
            "/settings/unions",
            get(settings::unions).post(settings::union_create),
        )
        .route(
            "/settings/unions/{tenant_union_id}",
            get(settings::union_page).post(settings::union_save),
        )
        .route("/settings/audit", get(settings::audit))
        .route("/console/events", get(events::stream))
        .route("/console/assets/{name}", get(assets::serve))
}

/// The 404 page of a console path no route has. It names the path (as text: a link
/// someone sent may hold anything) and, for a signed-in user, keeps the navigation.
pub(crate) async fn unknown_page(state: &AppState, request: Request) -> Response {
    let (parts, _) = request.into_parts();
    let signed_in = session::optional(&parts, state)
        .await
        .filter(|signed_in| !signed_in.session.must_change_password);
    let path: String = parts.uri.path().chars().take(200).collect();
    let path = percent_encoding::percent_decode_str(&path).decode_utf8_lossy();
    pages::error_page_for(
        axum::http::StatusCode::NOT_FOUND,
        &format!("There is no page at {path}."),
        signed_in.as_ref(),
    )
}

/// Whether a path is the console's (not the API's): its answers are HTML, not JSON.
pub(crate) fn is_console_path(path: &str) -> bool {
    !path.starts_with("/app/") && !matches!(path, "/healthz" | "/readyz" | "/metrics")
}

/// Whether a request for a path no route has should get the console's HTML error page:
/// a console path asked for by a browser (its `Accept` names `text/html`). A script or an
/// API client asking for anything else at a wrong path gets the API's JSON error, which
/// it can read.
pub(crate) fn wants_error_page(request: &Request) -> bool {
    is_console_path(request.uri().path())
        && request
            .headers()
            .get_all(axum::http::header::ACCEPT)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .any(|accept| accept.to_ascii_lowercase().contains("text/html"))
}

/// The headers every console answer carries. Pages are never cached (they show what one
/// user may see); assets set their own caching.
pub(crate) async fn security_headers(request: Request, next: Next) -> Response {
    let console = is_console_path(request.uri().path());
    let mut response = next.run(request).await;
    if !console {
        return response;
    }
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY_VALUE),
    );
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if !headers.contains_key(CACHE_CONTROL) {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}
