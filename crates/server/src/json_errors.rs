//! Every error answer is JSON (DESIGN.md §1), also the ones no handler wrote: a rejection
//! of one of axum's extractors, a layer's refusal. This layer rewrites an error response
//! whose body is not JSON into the standard body, keeping its status and headers and
//! quoting the start of what it said (never for a 5xx, which could name internals). The
//! console's own error pages (`text/html`) are left as they are.

use axum::body::Body;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};

use crate::error::{ApiError, ErrorCode};

/// How much of a plain-text error body is read to be quoted.
const QUOTED_BYTES: usize = 2048;

pub(crate) async fn ensure_json(response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error())
        || is_json(response.headers())
        || is_html(response.headers())
    {
        return response;
    }
    let (parts, body) = response.into_parts();
    let code = ErrorCode::for_status(status);
    let error = if status.is_server_error() && code != ErrorCode::NotReady {
        ApiError::system_error()
    } else {
        let reason = status.canonical_reason().unwrap_or("error");
        match said(body).await {
            Some(text) => ApiError::new(code, format!("{reason}: {text}")),
            None => ApiError::new(code, reason),
        }
    };
    let mut rewritten = error.into_response();
    *rewritten.status_mut() = status;
    for (name, value) in &parts.headers {
        if name != CONTENT_TYPE && name != CONTENT_LENGTH {
            rewritten.headers_mut().append(name, value.clone());
        }
    }
    rewritten
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value: &HeaderValue| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("application/json"))
}

fn is_html(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|value: &HeaderValue| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("text/html"))
}

/// The body's text, when it is short text.
async fn said(body: Body) -> Option<String> {
    let bytes = axum::body::to_bytes(body, QUOTED_BYTES).await.ok()?;
    let text = String::from_utf8(bytes.to_vec()).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use axum::http::header::{ALLOW, RETRY_AFTER};

    use super::*;

    async fn rewrite(response: Response) -> (StatusCode, HeaderMap, serde_json::Value) {
        let response = ensure_json(response).await;
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, headers, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn a_plain_text_rejection_becomes_the_json_error_body() {
        let plain = (
            StatusCode::METHOD_NOT_ALLOWED,
            [(ALLOW, "GET")],
            "Invalid URL: something",
        )
            .into_response();
        let (status, headers, body) = rewrite(plain).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(headers[ALLOW], "GET");
        assert_eq!(body["code"], "method_not_allowed");
        assert_eq!(
            body["error_msg"],
            "Method Not Allowed: Invalid URL: something"
        );
        assert_eq!(body["detail"], body["error_msg"]);
    }

    #[tokio::test]
    async fn an_empty_error_says_its_reason_and_a_5xx_says_nothing_internal() {
        let (status, _, body) = rewrite(StatusCode::UNSUPPORTED_MEDIA_TYPE.into_response()).await;
        assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(body["error_msg"], "Unsupported Media Type");
        let internal = (StatusCode::BAD_GATEWAY, "upstream at 10.0.0.7 refused").into_response();
        let (status, _, body) = rewrite(internal).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY);
        assert_eq!(body["code"], "system_error");
        assert!(!body.to_string().contains("10.0.0.7"));
        let busy = (StatusCode::SERVICE_UNAVAILABLE, [(RETRY_AFTER, "1")]).into_response();
        let (_, headers, body) = rewrite(busy).await;
        assert_eq!(body["code"], "not_ready");
        assert_eq!(headers[RETRY_AFTER], "1");
    }

    #[tokio::test]
    async fn json_answers_and_successes_are_left_alone() {
        let ok = (StatusCode::OK, "plain metrics").into_response();
        let response = ensure_json(ok).await;
        let bytes = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        assert_eq!(&bytes[..], b"plain metrics");
        let json_error = ApiError::bad_request("limit: must be at least 1").into_response();
        let (_, _, body) = rewrite(json_error).await;
        assert_eq!(body["error_msg"], "limit: must be at least 1");
    }
}
