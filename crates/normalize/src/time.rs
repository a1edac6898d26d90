//! Times as security tools and intel feeds write them: RFC 3339, RFC 2822, ISO 8601
//! without a zone (read as UTC), "2026-03-01 12:00:00", and epoch numbers in seconds,
//! milliseconds, microseconds or nanoseconds (told apart by magnitude). A time outside
//! 1990..=2100 is a unit mistake or garbage and reads as none.

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};
use sleuth_domain::Timestamp;

/// The earliest and latest times believed: anything else is a unit mistake or garbage,
/// and the alert falls back to the time Sleuth received it.
const EARLIEST_YEAR: i32 = 1990;
const LATEST_YEAR: i32 = 2100;

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
    use super::*;

    fn rfc3339(time: Option<Timestamp>) -> Option<String> {
        time.map(|time| time.to_rfc3339())
    }

    #[test]
    fn text_forms_and_epoch_units_read_as_the_same_time() {
        let noon = rfc3339(parse_text("2026-03-01T12:00:00Z"));
        assert!(noon.is_some());
        for text in [
            "2026-03-01T13:00:00+01:00",
            "2026-03-01T13:00:00+0100",
            "2026-03-01 12:00:00Z",
            "2026/03/01 12:00:00",
            "Sun, 01 Mar 2026 12:00:00 +0000",
            "1772366400",
        ] {
            assert_eq!(rfc3339(parse_text(text)), noon, "{text}");
        }
        for number in [
            1.772_366_4e9,
            1.772_366_4e12,
            1.772_366_4e15,
            1.772_366_4e18,
        ] {
            assert_eq!(rfc3339(from_epoch(number)), noon, "{number}");
        }
    }

    #[test]
    fn garbage_and_unbelievable_times_read_as_none() {
        for text in ["yesterday", "", "9999-01-01T00:00:00Z", &"1".repeat(200)] {
            assert_eq!(parse_text(text), None, "{text}");
        }
        for number in [-5.0, 0.0, 12.0, f64::MAX, f64::NAN] {
            assert_eq!(from_epoch(number), None, "{number}");
        }
    }
}
