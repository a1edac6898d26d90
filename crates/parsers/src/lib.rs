//! Reads the raw JSON of security tools' alerts into Sleuth's [`ParsedAlert`]: one parser per
//! wire format (`sources/`), format detection for `create/custom`, a generic reader for
//! anything else, and the entities each names (normalised by `sleuth-normalize`). Pure: no I/O, no clock (the receive time
//! is passed in), and no input makes it panic.
#![forbid(unsafe_code)]

mod alert_type;
pub mod builder;
pub mod decode;
pub mod envelopes;
pub mod json;
pub mod plain_words;
pub mod registry;
mod sources;
pub mod time;

use std::borrow::Cow;

// Every vendor parser names entities through `crate::entities`; the module is the pure
// normalisation crate's.
use sleuth_normalize::entities;

use serde_json::Value;
use sleuth_domain::{ParsedAlert, Timestamp};

pub use builder::AlertBuilder;
pub use registry::Schema;

/// Why an alert could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("unknown schema_key '{key}'; known keys: {}", known.join(", "))]
    UnknownSchemaKey {
        key: String,
        known: Vec<&'static str>,
    },
    #[error("the alert must be a JSON object")]
    NotAnObject,
    #[error("the alert does not fit schema '{schema_key}': {reason}")]
    DoesNotFit {
        schema_key: &'static str,
        reason: String,
    },
}

/// Every supported format, in detection order, the generic one last.
pub fn schemas() -> &'static [&'static Schema] {
    registry::all()
}

/// The format of a raw alert, as `create/custom` detects it.
pub fn detect(raw: &Value) -> &'static Schema {
    registry::detect(raw)
}

/// Reads `raw` with the parser named by `schema_key`, or with the detected one when absent.
///
/// A NUL character in any string or key reads as U+FFFD: no field Sleuth derives from an
/// alert holds one (PostgreSQL cannot keep one in text, and SQLite must store the same),
/// while the raw alert, stored as it was received, keeps every one.
pub fn parse_alert(
    schema_key: Option<&str>,
    raw: &Value,
    received_at: Timestamp,
) -> Result<ParsedAlert, ParseError> {
    if !raw.is_object() {
        return Err(ParseError::NotAnObject);
    }
    let raw = without_nul(raw);
    let raw = raw.as_ref();
    let schema = match schema_key {
        Some(key) => registry::find(key).ok_or_else(|| ParseError::UnknownSchemaKey {
            key: key.chars().take(100).collect(),
            known: schemas().iter().map(|schema| schema.key).collect(),
        })?,
        None => detect(raw),
    };
    (schema.parse)(raw, AlertBuilder::new(schema.labels(), received_at))
}

/// `value`, with every NUL of its strings and keys replaced; borrowed when it has none.
fn without_nul(value: &Value) -> Cow<'_, Value> {
    if holds_nul(value) {
        Cow::Owned(replace_nul(value))
    } else {
        Cow::Borrowed(value)
    }
}

fn holds_nul(value: &Value) -> bool {
    match value {
        Value::String(text) => text.contains('\0'),
        Value::Array(items) => items.iter().any(holds_nul),
        Value::Object(fields) => fields
            .iter()
            .any(|(key, field)| key.contains('\0') || holds_nul(field)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

fn replace_nul(value: &Value) -> Value {
    let replaced = |text: &str| text.replace('\0', "\u{FFFD}");
    match value {
        Value::String(text) => Value::String(replaced(text)),
        Value::Array(items) => Value::Array(items.iter().map(replace_nul).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, field)| (replaced(key), replace_nul(field)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_field_read_from_an_alert_holds_a_nul() {
        let raw = serde_json::json!({
            "title": "Mimikatz\u{0} on WKS-0231",
            "alert_type": "cred\u{0}dump",
            "severity": "hi\u{0}gh",
            "tenant_id": "acme\u{0}",
            "host": "WKS-0231",
            "de\u{0}tail": {"user": ["r.patel\u{0}"]},
        });
        let parsed = parse_alert(None, &raw, chrono::Utc::now()).expect("parses");
        let everything = serde_json::to_string(&parsed).expect("serialises");
        assert!(!everything.contains("\\u0000"), "{everything}");
        assert!(everything.contains('\u{FFFD}'), "{everything}");
        assert_eq!(parsed.severity.as_deref(), Some("hi\u{FFFD}gh"));
    }

    #[test]
    fn every_sample_is_detected_as_its_own_format_and_parses() {
        for schema in schemas() {
            let raw: Value = serde_json::from_str(schema.sample)
                .unwrap_or_else(|error| panic!("{}: sample is not JSON: {error}", schema.key));
            assert_eq!(
                detect(&raw).key,
                schema.key,
                "detection of {}'s sample",
                schema.key
            );
            let parsed = parse_alert(Some(schema.key), &raw, chrono::Utc::now())
                .unwrap_or_else(|error| panic!("{}: {error}", schema.key));
            assert_eq!(parsed.schema_key, schema.key);
            assert!(!parsed.title.is_empty(), "{}", schema.key);
        }
    }

    #[test]
    fn keys_are_unique_and_generic_is_last() {
        let keys: Vec<&str> = schemas().iter().map(|schema| schema.key).collect();
        let mut unique = keys.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), keys.len(), "{keys:?}");
        assert_eq!(keys.last(), Some(&"generic"));
    }

    #[test]
    fn an_unknown_schema_key_lists_the_known_ones() {
        let error = parse_alert(Some("nope"), &serde_json::json!({}), chrono::Utc::now())
            .expect_err("unknown key");
        let message = error.to_string();
        assert!(
            message.contains("'nope'") && message.contains("generic"),
            "{message}"
        );
    }

    #[test]
    fn only_objects_are_alerts() {
        for raw in [
            serde_json::json!([]),
            serde_json::json!("x"),
            serde_json::json!(null),
        ] {
            assert_eq!(
                parse_alert(None, &raw, chrono::Utc::now()),
                Err(ParseError::NotAnObject)
            );
        }
    }
}
