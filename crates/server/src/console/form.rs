//! The console's forms as a browser sends them, read whole or refused whole.
//!
//! `ConsoleForm<T>` is axum's `Form` with the console's answer to a body it cannot read:
//! larger than `server.body_limit_bytes` (413), not a urlencoded form (415), or not the
//! page's form (400: a field missing, sent twice, or unknown to the page where `T` says
//! `deny_unknown_fields`). The answer is an HTML error page saying so, where axum's
//! plain-text rejection would have become the API's JSON error; nothing is changed, as
//! the handler never runs.
//!
//! `FormFields` is a form read as its pairs, for a form that sends a field several times
//! (a multiple choice), which serde's urlencoded reader cannot take as a list: each single
//! field must come exactly once, and a field the page does not have is refused, as
//! `deny_unknown_fields` does for the others.

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::Response;
use serde::de::DeserializeOwned;

use crate::console::pages::error_page;
use crate::error::ApiError;

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

/// A form as its name and value pairs, in the order sent.
pub(crate) struct FormFields(pub(crate) Vec<(String, String)>);

impl FormFields {
    /// The CSRF field, or nothing when it is missing or repeated (which the check refuses).
    pub(crate) fn csrf(&self) -> &str {
        self.one("csrf").unwrap_or("")
    }

    /// Every value sent for `name`.
    pub(crate) fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(field, _)| field == name)
            .map(|(_, value)| value.as_str())
            .collect()
    }

    /// The first value sent for `name`, or "" (to show a refused form again as it was).
    pub(crate) fn first(&self, name: &str) -> &str {
        self.all(name).first().copied().unwrap_or("")
    }

    /// The one value of `name`: missing or sent more than once is not the page's form.
    pub(crate) fn one(&self, name: &str) -> Result<&str, ApiError> {
        match self.all(name).as_slice() {
            [value] => Ok(*value),
            [] => Err(ApiError::invalid_field(name, "is missing from the form")),
            _ => Err(ApiError::invalid_field(name, "is sent more than once")),
        }
    }

    /// Refuses a field the page does not have.
    pub(crate) fn only(&self, known: &[&str]) -> Result<(), ApiError> {
        match self
            .0
            .iter()
            .find(|(name, _)| !known.contains(&name.as_str()))
        {
            Some((name, _)) => Err(ApiError::invalid_field(
                &name.chars().take(60).collect::<String>(),
                "is not a field of this form",
            )),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> FormFields {
        FormFields(
            pairs
                .iter()
                .map(|(name, value)| ((*name).to_string(), (*value).to_string()))
                .collect(),
        )
    }

    #[test]
    fn a_single_field_comes_exactly_once() {
        let form = fields(&[("role", "member"), ("unions", "1"), ("unions", "2")]);
        assert_eq!(form.one("role").unwrap(), "member");
        assert!(form.one("email").is_err(), "missing");
        assert!(form.one("unions").is_err(), "repeated");
        assert_eq!(form.all("unions"), vec!["1", "2"]);
        assert_eq!(form.first("unions"), "1");
        assert_eq!(form.first("email"), "");
    }

    #[test]
    fn a_field_the_page_does_not_have_is_refused() {
        let form = fields(&[("role", "member"), ("is_admin", "yes")]);
        assert!(form.only(&["role", "is_admin"]).is_ok());
        let refused = form.only(&["role"]).unwrap_err();
        assert!(refused.field_errors.contains_key("is_admin"), "{refused:?}");
    }

    #[test]
    fn a_repeated_csrf_field_is_no_csrf_field() {
        assert_eq!(fields(&[("csrf", "a"), ("csrf", "b")]).csrf(), "");
        assert_eq!(fields(&[("csrf", "a")]).csrf(), "a");
    }
}
