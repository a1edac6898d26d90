//! What every console page shares: the page shell (head, navigation, who is signed
//! in, sign-out), the error page, and how values are worded. Everything shown goes
//! through maud's escaping; nothing here builds HTML from strings.

use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};
use sleuth_domain::{Outcome, Priority, Role, Timestamp};

use crate::console::assets;
use crate::console::session::SignedIn;

/// A whole page. `signed_in` adds the navigation and the sign-out form.
pub(crate) fn shell(title: &str, signed_in: Option<&SignedIn>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Sleuth" }
                link rel="stylesheet" href=(assets::url("console.css"));
                script src=(assets::url("console.js")) defer {}
            }
            body {
                header.top {
                    a.brand href="/" { "Sleuth" }
                    @if let Some(signed_in) = signed_in {
                        nav {
                            a href="/" { "Queue" }
                            a href="/dashboard" { "Dashboard" }
                            @if signed_in.session.user.role.allows(Role::Admin) {
                                a href="/settings" #settings-link { "Settings" }
                            }
                        }
                        div.who {
                            span.user { (signed_in.session.user.email) " · " (signed_in.session.user.role.as_str()) }
                            a href="/password" { "Change password" }
                            form.inline method="post" action="/sign-out" {
                                input type="hidden" name="csrf" value=(signed_in.csrf());
                                button type="submit" id="sign-out" { "Sign out" }
                            }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// An HTML answer with its status.
pub(crate) fn html_response(status: StatusCode, markup: Markup) -> Response {
    (
        status,
        [(CONTENT_TYPE, "text/html; charset=utf-8")],
        markup.into_string(),
    )
        .into_response()
}

/// An error page: what went wrong and what to do, never internals.
pub(crate) fn error_page(status: StatusCode, message: &str) -> Response {
    error_page_for(status, message, None)
}

/// An error page with the navigation of the user who is signed in, when one is.
pub(crate) fn error_page_for(
    status: StatusCode,
    message: &str,
    signed_in: Option<&SignedIn>,
) -> Response {
    let body = html! {
        section.error {
            h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("Error")) }
            p #error-message { (message) }
            p { a href="/" { "Back to the queue" } }
        }
    };
    html_response(status, shell("Error", signed_in, body))
}

/// An API error as a console error page (the same message the API would send).
pub(crate) fn api_error_page(error: crate::error::ApiError) -> Response {
    let (status, _) = error.code.status_and_name();
    let message = if status.is_server_error() && status != StatusCode::SERVICE_UNAVAILABLE {
        "Something went wrong on the server; it was logged. Try again in a moment.".to_string()
    } else {
        error.message
    };
    error_page(status, &message)
}

pub(crate) fn time(at: &Timestamp) -> String {
    at.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

pub(crate) fn outcome_label(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::BreachedConfirmed => "Breach confirmed",
        Outcome::BreachedSuspicious => "Suspicious",
        Outcome::FalseAlert => "False alert",
        Outcome::Incomplete => "Incomplete",
        Outcome::Ignored => "Ignored",
    }
}

/// A CSS class per outcome, for its colour.
pub(crate) fn outcome_class(outcome: Option<Outcome>) -> &'static str {
    match outcome {
        Some(Outcome::BreachedConfirmed) => "outcome confirmed",
        Some(Outcome::BreachedSuspicious) => "outcome suspicious",
        Some(Outcome::FalseAlert) => "outcome false-alert",
        Some(Outcome::Incomplete) => "outcome incomplete",
        Some(Outcome::Ignored) | None => "outcome none",
    }
}

pub(crate) fn priority_class(priority: Option<Priority>) -> &'static str {
    match priority {
        Some(Priority::Urgent) => "priority urgent",
        Some(Priority::Notable) => "priority notable",
        Some(Priority::Informational) => "priority informational",
        None => "priority none",
    }
}

/// A query string of these pairs, encoded.
pub(crate) fn query_string<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut serializer = form_urlencoded::Serializer::new(String::new());
    for (name, value) in pairs {
        serializer.append_pair(name, value);
    }
    serializer.finish()
}
