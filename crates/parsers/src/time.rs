//! Times as security tools write them: RFC 3339, ISO 8601 without a zone (read as UTC),
//! "2026-03-01 12:00:00", and epoch numbers in seconds, milliseconds, microseconds or
//! nanoseconds (told apart by magnitude), as numbers or as strings, read at a JSON path.
//! The forms themselves are `sleuth_normalize::time`'s.

use serde_json::Value;
use sleuth_domain::Timestamp;
use sleuth_normalize::time::from_epoch;
pub(crate) use sleuth_normalize::time::parse_text;

use crate::json;

/// A time at `path`, in any of the accepted forms.
pub fn time_at(value: &Value, path: &str) -> Option<Timestamp> {
    parse_value(json::at(value, path)?)
}

/// The first readable time among `paths`.
pub fn first_time(value: &Value, paths: &[&str]) -> Option<Timestamp> {
    paths.iter().find_map(|path| time_at(value, path))
}

/// A JSON value as a time: a string in any accepted form, or an epoch number.
pub fn parse_value(value: &Value) -> Option<Timestamp> {
    match value {
        Value::String(text) => parse_text(text),
        Value::Number(number) => number.as_f64().and_then(from_epoch),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use serde_json::json;

    use super::*;

    fn check(value: Value, expected: Option<&str>) {
        let parsed = parse_value(&value).map(|time| time.to_rfc3339());
        let expected = expected.map(|text| {
            DateTime::parse_from_rfc3339(text)
                .unwrap()
                .with_timezone(&Utc)
                .to_rfc3339()
        });
        assert_eq!(parsed, expected, "{value}");
    }

    #[test]
    fn every_common_time_form_reads() {
        let noon = Some("2026-03-01T12:00:00Z");
        check(json!("2026-03-01T12:00:00Z"), noon);
        check(json!("2026-03-01T13:00:00+01:00"), noon);
        check(json!("2026-03-01T13:00:00+0100"), noon);
        check(json!("2026-03-01 12:00:00"), noon);
        check(json!("2026-03-01 12:00:00Z"), noon);
        check(json!("2026-03-01T12:00:00"), noon);
        check(json!("2026/03/01 12:00:00"), noon);
        check(json!("Sun, 01 Mar 2026 12:00:00 +0000"), noon);
        check(json!(1_772_366_400), noon);
        check(json!(1_772_366_400_000_u64), noon);
        check(json!(1_772_366_400_000_000_u64), noon);
        check(json!(1_772_366_400_000_000_000_u64), noon);
        check(json!("1772366400"), noon);
        check(json!(1_772_366_400.25), Some("2026-03-01T12:00:00.25Z"));
        check(
            json!("2026-03-01T12:00:00.123456Z"),
            Some("2026-03-01T12:00:00.123456Z"),
        );
        check(json!("2026-03-01"), Some("2026-03-01T00:00:00Z"));
    }

    #[test]
    fn garbage_and_unbelievable_times_are_refused() {
        check(json!("yesterday"), None);
        check(json!(""), None);
        check(json!(-5), None);
        check(json!(0), None);
        check(json!(12), None);
        check(json!("9999-01-01T00:00:00Z"), None);
        check(json!(true), None);
        check(json!(f64::MAX), None);
        check(json!("1".repeat(200)), None);
    }
}
