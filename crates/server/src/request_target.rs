//! Every request's URL and header section, checked once before routing, so that no handler
//! sees what none of them accepts:
//!
//! - a NUL character (`%00`) anywhere in the path or the query is a 400: no identifier or
//!   filter of Sleuth holds one, and PostgreSQL cannot store or compare one in text, so
//!   this is what keeps both backends answering the same (DESIGN.md §1);
//! - a path that is not UTF-8 once percent-decoded (`%ff`) names no resource: 404;
//! - a URL longer than `server.max_uri_bytes` is a 414, a header section larger than
//!   `server.max_header_bytes` or with more than [`MAX_HEADERS`] fields a 431.
//!
//! hyper refuses a head it cannot parse, or one larger than its buffer, before any of this
//! runs; `connection.rs` answers those on a connection's first request.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;

/// The most header fields a request may carry.
pub const MAX_HEADERS: usize = 100;

/// The limits this module enforces.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_uri_bytes: usize,
    pub max_header_bytes: usize,
}

impl Limits {
    pub fn of(settings: &sleuth_jobs::settings::ServerSettings) -> Limits {
        Limits {
            max_uri_bytes: settings.max_uri_bytes,
            max_header_bytes: settings.max_header_bytes,
        }
    }
}

pub async fn check(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let limits = Limits::of(&state.settings().server);
    match check_head(request.uri(), request.headers(), limits) {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    }
}

/// What this module refuses, for a request head that hyper parsed.
pub fn check_head(uri: &Uri, headers: &HeaderMap, limits: Limits) -> Result<(), ApiError> {
    let target_bytes = uri
        .path_and_query()
        .map_or(0, |target| target.as_str().len());
    if target_bytes > limits.max_uri_bytes {
        return Err(uri_too_long(target_bytes, limits));
    }
    let header_bytes: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if header_bytes > limits.max_header_bytes || headers.len() > MAX_HEADERS {
        return Err(headers_too_large(limits));
    }
    check_path(uri.path())?;
    check_query(uri.query().unwrap_or(""))
}

pub fn uri_too_long(target_bytes: usize, limits: Limits) -> ApiError {
    ApiError::new(
        ErrorCode::UriTooLong,
        format!(
            "the URL is {target_bytes} bytes; Sleuth takes at most {} (server.max_uri_bytes): \
             send fewer or shorter filter values",
            limits.max_uri_bytes
        ),
    )
}

pub fn headers_too_large(limits: Limits) -> ApiError {
    ApiError::new(
        ErrorCode::HeadersTooLarge,
        format!(
            "the request's headers are larger than Sleuth takes: at most {MAX_HEADERS} fields \
             and {} bytes in all (server.max_header_bytes)",
            limits.max_header_bytes
        ),
    )
}

fn check_path(path: &str) -> Result<(), ApiError> {
    let decoded: Vec<u8> = percent_encoding::percent_decode_str(path).collect();
    if decoded.contains(&0) {
        return Err(ApiError::bad_request(
            "the path contains a NUL character (%00); no identifier of Sleuth holds one",
        ));
    }
    if std::str::from_utf8(&decoded).is_err() {
        return Err(ApiError::not_found(
            "no such resource: the path is not UTF-8 once percent-decoded",
        ));
    }
    Ok(())
}

fn check_query(query: &str) -> Result<(), ApiError> {
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        if name.contains('\0') {
            return Err(ApiError::bad_request(
                "a query parameter's name contains a NUL character (%00)",
            ));
        }
        if value.contains('\0') {
            return Err(ApiError::invalid_field(
                &name,
                "must not contain a NUL character (%00): no identifier or filter of Sleuth holds one",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_uri_bytes: 200,
        max_header_bytes: 300,
    };

    fn check(target: &str) -> Result<(), ApiError> {
        check_head(&target.parse().unwrap(), &HeaderMap::new(), LIMITS)
    }

    fn code(target: &str) -> ErrorCode {
        check(target).unwrap_err().code
    }

    #[test]
    fn a_nul_anywhere_in_the_url_is_a_bad_request_naming_its_parameter() {
        let error = check("/app/api/v1/investigation?alert_types=a&tenant_id=%00").unwrap_err();
        assert_eq!(error.code, ErrorCode::BadRequest);
        assert!(error.field_errors.contains_key("tenant_id"));
        assert_eq!(code("/x?search=a%00b"), ErrorCode::BadRequest);
        assert_eq!(code("/x?a%00=1"), ErrorCode::BadRequest);
        assert_eq!(code("/app/api/v1/secrets/a%00b"), ErrorCode::BadRequest);
        // An encoded percent sign followed by zeros is text, not a NUL.
        assert!(check("/x?search=100%2500").is_ok());
        assert!(check("/x?search=%E2%82%AC+%2B").is_ok());
    }

    #[test]
    fn a_path_that_is_not_utf8_names_nothing() {
        assert_eq!(code("/app/api/v1/investigation/%ff"), ErrorCode::NotFound);
        assert_eq!(
            code("/app/api/v1/investigation/%c3%28"),
            ErrorCode::NotFound
        );
        assert!(check("/app/api/v1/tenant-unions/%C3%A9").is_ok());
    }

    #[test]
    fn long_urls_and_large_header_sections_are_refused() {
        assert!(check(&format!("/x?search={}", "a".repeat(180))).is_ok());
        assert_eq!(
            code(&format!("/x?search={}", "a".repeat(200))),
            ErrorCode::UriTooLong
        );
        let mut headers = HeaderMap::new();
        headers.insert("x-big", "a".repeat(300).parse().unwrap());
        let error = check_head(&"/x".parse().unwrap(), &headers, LIMITS).unwrap_err();
        assert_eq!(error.code, ErrorCode::HeadersTooLarge);
        let mut many = HeaderMap::new();
        for index in 0..=MAX_HEADERS {
            many.append("x-many", index.to_string().parse().unwrap());
        }
        let roomy = Limits {
            max_header_bytes: 1 << 20,
            ..LIMITS
        };
        let error = check_head(&"/x".parse().unwrap(), &many, roomy).unwrap_err();
        assert_eq!(error.code, ErrorCode::HeadersTooLarge);
    }
}
