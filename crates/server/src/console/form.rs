//! The console's forms as a browser sends them, read whole or refused whole.
//!
//! `ConsoleForm<T>` is axum's `Form` with the console's answer to a body it cannot read:
//! larger than `server.body_limit_bytes` (413), not a urlencoded form (415), or not the
//! page's form (400: a field missing, sent twice, or unknown to the page where `T` says
//! `deny_unknown_fields`). The answer is an HTML error page saying so, where axum's
//! plain-text rejection would have become the API's JSON error; nothing is changed, as
//! the handler never runs.

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::Response;
use serde::de::DeserializeOwned;

use crate::console::pages::error_page;

/// A form read whole into `T`, or refused with an error page (see the module's doc).
pub(crate) struct ConsoleForm<T>(pub(crate) T);

impl<T, S> FromRequest<S> for ConsoleForm<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        match Form::<T>::from_request(request, state).await {
            Ok(Form(value)) => Ok(ConsoleForm(value)),
            Err(rejection) => Err(refused(&rejection)),
        }
    }
}

/// The error page of a form that could not be read.
fn refused(rejection: &FormRejection) -> Response {
    let status = rejection.status();
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => error_page(
            status,
            "The form is larger than this server takes (server.body_limit_bytes). Nothing was \
             changed.",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => error_page(
            status,
            "This page takes a form (application/x-www-form-urlencoded). Nothing was changed.",
        ),
        // A body cut short (408) and the like keep their own status.
        status if !status.is_client_error() || status == StatusCode::REQUEST_TIMEOUT => error_page(
            status,
            "The form did not arrive whole. Nothing was changed.",
        ),
        // Any other fault is the form's own (a field missing, repeated or not text): bad
        // input, as the API answers it (400).
        _ => error_page(
            StatusCode::BAD_REQUEST,
            &format!(
                "This is not the page's form: {}. Go back, reload the page and send it again; \
                 nothing was changed.",
                rejection.body_text()
            ),
        ),
    }
}
