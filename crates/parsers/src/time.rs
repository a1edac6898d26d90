//! Times as security tools write them: RFC 3339, ISO 8601 without a zone (read as UTC),
//! "2026-03-01 12:00:00", and epoch numbers in seconds, milliseconds, microseconds or
//! nanoseconds (told apart by magnitude), as numbers or as strings.

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};
use serde_json::Value;
use sleuth_domain::Timestamp;

use crate::json;

/// The earliest and latest times believed: anything else is a unit mistake or garbage,
/// and the alert falls back to the time Sleuth received it.
const EARLIEST_YEAR: i32 = 1990;
const LATEST_YEAR: i32 = 2100;

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

/// A string as a time.
pub fn parse_text(text: &str) -> Option<Timestamp> {
    let text = text.trim();
    if text.is_empty() || text.len() > 64 {
        return None;
    }
    if text
        .bytes()
        .all(|byte| byte.is_ascii_digit() || byte == b'.')
    {
        return text.parse::<f64>().ok().and_then(from_epoch);
    }
    if let Ok(time) = DateTime::parse_from_rfc3339(text) {
        return believable(time.with_timezone(&Utc));
    }
    // "+0000" offsets without a colon, and a space instead of the T.
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f%z",
        "%Y-%m-%d %H:%M:%S%.f%z",
        "%Y-%m-%d %H:%M:%S%.f %z",
    ] {
        if let Ok(time) = DateTime::parse_from_str(text, format) {
            return believable(time.with_timezone(&Utc));
        }
    }
    // "Z" after a space-separated time ("2026-03-01 12:00:00Z") and zone-less forms: UTC.
    let zoneless = text.strip_suffix('Z').unwrap_or(text);
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y/%m/%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(time) = NaiveDateTime::parse_from_str(zoneless, format) {
            return believable(Utc.from_utc_datetime(&time));
        }
    }
    // RFC 2822 ("Sun, 01 Mar 2026 12:00:00 +0000"), as mail tools write.
    if let Ok(time) = DateTime::parse_from_rfc2822(text) {
        return believable(time.with_timezone(&Utc));
    }
    if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return believable(Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0)?));
    }
    None
}

/// An epoch number, its unit told by magnitude.
pub fn from_epoch(number: f64) -> Option<Timestamp> {
    if !number.is_finite() || number <= 0.0 {
        return None;
    }
    let seconds = if number < 1e11 {
        number
    } else if number < 1e14 {
        number / 1e3
    } else if number < 1e17 {
        number / 1e6
    } else {
        number / 1e9
    };
    // Whole microseconds: finer is noise, and this keeps the arithmetic exact enough.
    let micros = (seconds * 1e6).round();
    if !(0.0..9.0e15).contains(&micros) {
        return None;
    }
    #[allow(clippy::cast_possible_truncation)] // Bounded just above.
    let micros = micros as i64;
    believable(DateTime::from_timestamp_micros(micros)?)
}

fn believable(time: Timestamp) -> Option<Timestamp> {
    use chrono::Datelike;
    (EARLIEST_YEAR..=LATEST_YEAR)
        .contains(&time.year())
        .then_some(time)
}

#[cfg(test)]
mod tests {
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
