//! The one error type of the API, and the one table that maps each error code to its HTTP
//! status (DESIGN.md §1). Every error answers JSON: `{"error_msg", "detail", "code"}`, plus
//! `errors` (field -> messages) for validation failures.

use std::collections::BTreeMap;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sleuth_jobs::intake::IntakeError;
use sleuth_store::StoreError;
use utoipa::ToSchema;

/// The stable codes clients may match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    BadRequest,
    Unauthorized,
    AccessDenied,
    NotFound,
    /// The resource is shipped by Sleuth and kept as it is (a protected strategy).
    Protected,
    /// The request names something that must be unique and is taken (a push source's name).
    Conflict,
    MethodNotAllowed,
    /// The client did not send its request's headers or body in time.
    RequestTimeout,
    PayloadTooLarge,
    UriTooLong,
    HeadersTooLarge,
    ScriptExecutionFailed,
    SystemError,
    NotReady,
    /// Too many requests in flight: this one was shed before any work (`admission`).
    Overloaded,
}

impl ErrorCode {
    /// The code for an error status that something other than a handler chose (a
    /// rejection of axum's, the connection layer): the reverse of the table.
    pub fn for_status(status: StatusCode) -> ErrorCode {
        match status {
            StatusCode::UNAUTHORIZED => ErrorCode::Unauthorized,
            StatusCode::FORBIDDEN => ErrorCode::AccessDenied,
            StatusCode::NOT_FOUND => ErrorCode::NotFound,
            StatusCode::CONFLICT => ErrorCode::Conflict,
            StatusCode::METHOD_NOT_ALLOWED => ErrorCode::MethodNotAllowed,
            StatusCode::REQUEST_TIMEOUT => ErrorCode::RequestTimeout,
            StatusCode::PAYLOAD_TOO_LARGE => ErrorCode::PayloadTooLarge,
            StatusCode::URI_TOO_LONG => ErrorCode::UriTooLong,
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => ErrorCode::HeadersTooLarge,
            StatusCode::SERVICE_UNAVAILABLE => ErrorCode::NotReady,
            status if status.is_client_error() => ErrorCode::BadRequest,
            _ => ErrorCode::SystemError,
        }
    }

    /// The table: code -> (HTTP status, wire spelling).
    pub fn status_and_name(self) -> (StatusCode, &'static str) {
        match self {
            ErrorCode::BadRequest => (StatusCode::BAD_REQUEST, "bad_request"),
            ErrorCode::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            ErrorCode::AccessDenied => (StatusCode::FORBIDDEN, "access_denied"),
            ErrorCode::NotFound => (StatusCode::NOT_FOUND, "not_found"),
            ErrorCode::Protected => (StatusCode::CONFLICT, "protected"),
            ErrorCode::Conflict => (StatusCode::CONFLICT, "conflict"),
            ErrorCode::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            ErrorCode::RequestTimeout => (StatusCode::REQUEST_TIMEOUT, "request_timeout"),
            ErrorCode::PayloadTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            ErrorCode::UriTooLong => (StatusCode::URI_TOO_LONG, "uri_too_long"),
            ErrorCode::HeadersTooLarge => (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "headers_too_large",
            ),
            ErrorCode::ScriptExecutionFailed => {
                (StatusCode::INTERNAL_SERVER_ERROR, "script_execution_failed")
            }
            ErrorCode::SystemError => (StatusCode::INTERNAL_SERVER_ERROR, "system_error"),
            ErrorCode::NotReady => (StatusCode::SERVICE_UNAVAILABLE, "not_ready"),
            ErrorCode::Overloaded => (StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
        }
    }
}

/// An error answer. Build it with the constructors; the message is shown to the client, so
/// it says what was wrong and what to do, and never carries internals.
#[derive(Debug)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub field_errors: BTreeMap<String, Vec<String>>,
    pub retry_after_seconds: Option<u64>,
}

/// The error body, as documented in the OpenAPI description.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong, for people.
    pub error_msg: String,
    /// The same message (clients of the original interface read `detail`).
    pub detail: String,
    /// A stable snake_case code: bad_request, unauthorized, access_denied, not_found,
    /// protected, conflict, method_not_allowed, request_timeout, payload_too_large, uri_too_long,
    /// headers_too_large, script_execution_failed, system_error, not_ready, overloaded.
    pub code: String,
    /// Per-field messages, on validation errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<BTreeMap<String, Vec<String>>>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            field_errors: BTreeMap::new(),
            retry_after_seconds: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::BadRequest, message)
    }

    /// A validation error naming the field at fault.
    pub fn invalid_field(field: &str, message: impl Into<String>) -> ApiError {
        let message = message.into();
        let mut error = ApiError::bad_request(format!("{field}: {message}"));
        error.field_errors.insert(field.to_string(), vec![message]);
        error
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::NotFound, message)
    }

    pub fn not_ready(message: impl Into<String>, retry_after_seconds: u64) -> ApiError {
        let mut error = ApiError::new(ErrorCode::NotReady, message);
        error.retry_after_seconds = Some(retry_after_seconds);
        error
    }

    pub fn system_error() -> ApiError {
        ApiError::new(
            ErrorCode::SystemError,
            "Sleuth hit an unexpected error; it has been logged. Retry, and if it persists tell \
             the operator the time of the request and its x-request-id.",
        )
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        match error {
            StoreError::NotFound { what, id } => {
                ApiError::not_found(format!("{what} {id} not found"))
            }
            StoreError::Conflict { detail } | StoreError::Rejected { detail } => {
                ApiError::bad_request(detail)
            }
            StoreError::Unavailable(cause) => {
                tracing::warn!(error = %cause, "database unavailable");
                ApiError::not_ready("the database is unavailable; retry shortly", 5)
            }
            StoreError::Internal(cause) => {
                tracing::error!(error = %cause, "storage failure");
                ApiError::system_error()
            }
        }
    }
}

impl From<IntakeError> for ApiError {
    fn from(error: IntakeError) -> ApiError {
        match error {
            IntakeError::Unreadable(message) => ApiError::bad_request(message),
            IntakeError::InvalidField { field, message } => ApiError::invalid_field(field, message),
            IntakeError::Store(error) => ApiError::from(error),
        }
    }
}

/// The longest message an error answers with, in characters. Messages quote the values
/// they refuse, and a value may be megabytes long: the answer keeps its start.
pub const MAX_MESSAGE_CHARS: usize = 1000;

/// `text`, cut to [`MAX_MESSAGE_CHARS`] with a note of how much was left out.
pub fn bounded(text: String) -> String {
    let Some((cut_at, _)) = text.char_indices().nth(MAX_MESSAGE_CHARS) else {
        return text;
    };
    let left_out = text[cut_at..].chars().count();
    format!(
        "{}… ({left_out} more characters not shown)",
        &text[..cut_at]
    )
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, name) = self.code.status_and_name();
        let message = bounded(self.message);
        let field_errors: BTreeMap<String, Vec<String>> = self
            .field_errors
            .into_iter()
            .map(|(field, messages)| {
                let field = bounded(field);
                (field, messages.into_iter().map(bounded).collect())
            })
            .collect();
        let body = ErrorBody {
            error_msg: message.clone(),
            detail: message,
            code: name.to_string(),
            errors: (!field_errors.is_empty()).then_some(field_errors),
        };
        let mut response = (status, Json(body)).into_response();
        if let Some(seconds) = self.retry_after_seconds {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_keep_their_start_and_say_what_was_cut() {
        let short = "limit: must be at least 1".to_string();
        assert_eq!(bounded(short.clone()), short);
        let long = format!("'{}' is not a priority", "é".repeat(9 * 1024 * 1024));
        let cut = bounded(long);
        assert!(
            cut.chars().count() < MAX_MESSAGE_CHARS + 60,
            "{}",
            cut.len()
        );
        assert!(cut.starts_with("'éé"));
        assert!(cut.ends_with("more characters not shown)"));
    }

    #[test]
    fn statuses_from_outside_the_handlers_map_back_to_codes() {
        for code in [
            ErrorCode::BadRequest,
            ErrorCode::Unauthorized,
            ErrorCode::NotFound,
            ErrorCode::MethodNotAllowed,
            ErrorCode::RequestTimeout,
            ErrorCode::PayloadTooLarge,
            ErrorCode::UriTooLong,
            ErrorCode::HeadersTooLarge,
            ErrorCode::NotReady,
        ] {
            assert_eq!(ErrorCode::for_status(code.status_and_name().0), code);
        }
        assert_eq!(
            ErrorCode::for_status(StatusCode::UNSUPPORTED_MEDIA_TYPE),
            ErrorCode::BadRequest
        );
        assert_eq!(
            ErrorCode::for_status(StatusCode::BAD_GATEWAY),
            ErrorCode::SystemError
        );
    }
}
