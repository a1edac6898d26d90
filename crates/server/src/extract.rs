//! Request extractors whose failures are API errors (JSON bodies, the right codes): a JSON
//! body (400 for malformed JSON, wrong types or a missing/wrong content type; 413 when too
//! large), a numeric path id (404 otherwise), and the raw query pairs.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

use crate::error::{ApiError, ErrorCode};

/// A JSON request body, deserialised into `T`.
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

/// A JSON request body kept as the exact text received (validated as JSON syntax by the
/// handler that parses it).
#[derive(Debug)]
pub struct JsonText(pub Bytes);

fn require_json_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    let media_type = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if media_type == "application/json"
        || (media_type.starts_with("application/") && media_type.ends_with("+json"))
    {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "the body must be JSON with Content-Type: application/json (got '{}')",
            content_type.chars().take(100).collect::<String>()
        )))
    }
}

pub(crate) async fn read_body<S: Send + Sync>(
    request: Request,
    state: &S,
) -> Result<Bytes, ApiError> {
    Bytes::from_request(request, state)
        .await
        .map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    ErrorCode::PayloadTooLarge,
                    "the request body is larger than this server accepts (server.body_limit_bytes)",
                )
            } else {
                ApiError::bad_request(format!("cannot read the request body: {rejection}"))
            }
        })
}

/// Distinguishes a field sent as `null` (`Some(None)`: clear it) from one left out
/// (`None`: keep it), for updates: `#[serde(default, deserialize_with = "present")]`.
pub fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// Every request body of the API is an object. serde would also read a struct from an
/// array of its fields in order (`["text"]`, or `[]` for a struct whose fields all have
/// defaults), which no client means: call this before deserialising a struct.
pub fn refuse_json_array(bytes: &[u8]) -> Result<(), ApiError> {
    let first = bytes.iter().find(|byte| !byte.is_ascii_whitespace());
    if first.is_some_and(|byte| *byte == b'[') {
        return Err(ApiError::bad_request(
            "the body must be a JSON object ({...}), not an array",
        ));
    }
    Ok(())
}

/// Deserialises JSON with a message that names the line, column and what was expected.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(bytes).map_err(|error| {
        let kind = match error.classify() {
            serde_json::error::Category::Data => "the JSON does not have the expected shape",
            _ => "the body is not valid JSON",
        };
        ApiError::bad_request(format!("{kind}: {}", cut_middle(&error.to_string())))
    })
}

/// serde quotes the value it refused in the middle of its message ("invalid type: string
/// "...", expected u64 at line 1 column 9"); a long value is cut there, so that what was
/// expected and where stay in the answer.
fn cut_middle(message: &str) -> String {
    const KEEP: usize = 200;
    let length = message.chars().count();
    if length <= 2 * KEEP + 50 {
        return message.to_string();
    }
    let start: String = message.chars().take(KEEP).collect();
    let end: String = message.chars().skip(length - KEEP).collect();
    format!(
        "{start}… ({} characters not shown) …{end}",
        length - 2 * KEEP
    )
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        require_json_content_type(request.headers())?;
        let bytes = read_body(request, state).await?;
        refuse_json_array(&bytes)?;
        parse_json(&bytes).map(ApiJson)
    }
}

impl<S: Send + Sync> FromRequest<S> for JsonText {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        require_json_content_type(request.headers())?;
        read_body(request, state).await.map(JsonText)
    }
}

/// Parses a path id; anything but a positive integer is a 404, as an unknown id is.
pub fn path_id(raw: &str, what: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
        ApiError::not_found(format!(
            "{what} {} not found",
            raw.chars().take(40).collect::<String>()
        ))
    })
}

/// The query string as ordered (name, value) pairs, repeated names kept.
#[derive(Debug, Default, Clone)]
pub struct QueryPairs(pub Vec<(String, String)>);

impl QueryPairs {
    pub fn all(&self, name: &str) -> impl Iterator<Item = &str> {
        // `name[]=x` is accepted as a repetition of `name` (some clients add brackets).
        self.0.iter().filter_map(move |(key, value)| {
            let key = key.strip_suffix("[]").unwrap_or(key);
            (key == name).then_some(value.as_str())
        })
    }

    /// The last value of a single-valued parameter; empty values count as absent.
    pub fn one(&self, name: &str) -> Option<&str> {
        self.all(name).filter(|value| !value.is_empty()).last()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for QueryPairs {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        Ok(QueryPairs(
            form_urlencoded::parse(query.as_bytes())
                .into_owned()
                .collect(),
        ))
    }
}

/// Reads a boolean query parameter (`true`/`false`/`1`/`0`).
pub fn query_bool(pairs: &QueryPairs, name: &str) -> Result<Option<bool>, ApiError> {
    match pairs.one(name) {
        None => Ok(None),
        Some("true" | "True" | "1") => Ok(Some(true)),
        Some("false" | "False" | "0") => Ok(Some(false)),
        Some(other) => Err(ApiError::invalid_field(
            name,
            format!(
                "'{}' is not a boolean (true or false)",
                other.chars().take(40).collect::<String>()
            ),
        )),
    }
}

/// Reads an integer query parameter.
pub fn query_integer(pairs: &QueryPairs, name: &str) -> Result<Option<i64>, ApiError> {
    pairs
        .one(name)
        .map(|raw| {
            raw.parse::<i64>().map_err(|_| {
                ApiError::invalid_field(
                    name,
                    format!(
                        "'{}' is not an integer",
                        raw.chars().take(40).collect::<String>()
                    ),
                )
            })
        })
        .transpose()
}
