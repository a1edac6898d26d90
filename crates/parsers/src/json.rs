//! Reading fields out of hostile, vendor-shaped JSON without ceremony.
//!
//! Paths are dotted (`detail.service.action.actionType`); a numeric segment indexes an
//! array (`Resources.0.Id`). Many tools flatten nested names into keys that contain dots
//! (Elastic's `kibana.alert.rule.name`, Splunk's `result.src_ip`), so at every level the
//! longest key that matches a prefix of the remaining path wins: one path reads both the
//! nested and the flattened form of the same alert.

use serde_json::Value;
pub(crate) use sleuth_normalize::text::is_placeholder;

/// The value at `path`, if every step exists.
pub fn at<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    if path.is_empty() {
        return Some(value);
    }
    match value {
        Value::Object(map) => {
            // The longest key first, so a flattened "a.b.c" beats a nested a -> b -> c
            // only when the alert really spells it that way. Every candidate key is a
            // slice of the path: no allocation on this hot path.
            std::iter::once(path.len())
                .chain(path.rmatch_indices('.').map(|(index, _)| index))
                .find_map(|end| {
                    let child = map.get(&path[..end])?;
                    at(child, path.get(end + 1..).unwrap_or(""))
                })
        }
        Value::Array(items) => {
            let (first, rest) = path.split_once('.').unwrap_or((path, ""));
            let index: usize = first.parse().ok()?;
            at(items.get(index)?, rest)
        }
        _ => None,
    }
}

/// A non-placeholder string at `path`, trimmed.
pub fn str_at<'a>(value: &'a Value, path: &str) -> Option<&'a str> {
    at(value, path)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|text| !is_placeholder(text))
}

/// The first non-placeholder string among `paths`.
pub fn first_str<'a>(value: &'a Value, paths: &[&str]) -> Option<&'a str> {
    paths.iter().find_map(|path| str_at(value, path))
}

/// A string, number or boolean at `path`, as text (ids are numbers in some formats).
pub fn text_at(value: &Value, path: &str) -> Option<String> {
    scalar_text(at(value, path)?)
}

/// The first scalar among `paths`, as text.
pub fn first_text(value: &Value, paths: &[&str]) -> Option<String> {
    paths.iter().find_map(|path| text_at(value, path))
}

/// A scalar value as text; `None` for placeholders, objects and arrays.
pub fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) if !is_placeholder(text) => Some(text.trim().to_string()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

/// A number at `path`, also when written as a string.
pub fn f64_at(value: &Value, path: &str) -> Option<f64> {
    match at(value, path)? {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
    .filter(|number: &f64| number.is_finite())
}

/// A non-negative whole number at `path`, also when written as a string.
pub fn u64_at(value: &Value, path: &str) -> Option<u64> {
    match at(value, path)? {
        Value::Number(number) => number.as_u64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
}

/// A boolean at `path`; also "true"/"false"/"yes"/"no"/1/0 as tools write them.
pub fn bool_at(value: &Value, path: &str) -> Option<bool> {
    match at(value, path)? {
        Value::Bool(flag) => Some(*flag),
        Value::Number(number) => match number.as_i64() {
            Some(0) => Some(false),
            Some(1) => Some(true),
            _ => None,
        },
        Value::String(text) => match text.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => Some(true),
            "false" | "no" | "0" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// The elements of the array at `path`; empty when absent or not an array.
pub fn array_at<'a>(value: &'a Value, path: &str) -> &'a [Value] {
    at(value, path)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The strings at `path`: one string, or every string in an array (non-strings skipped).
pub fn strings_at<'a>(value: &'a Value, path: &str) -> Vec<&'a str> {
    match at(value, path) {
        Some(Value::String(text)) if !is_placeholder(text) => vec![text.trim()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::trim)
            .filter(|text| !is_placeholder(text))
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether the object has a key (exact spelling, no path walking).
pub fn has_key(value: &Value, key: &str) -> bool {
    value.as_object().is_some_and(|map| map.contains_key(key))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn one_path_reads_nested_and_flattened_forms() {
        let nested = json!({"kibana": {"alert": {"rule": {"name": "Nested"}}}});
        let flat = json!({"kibana.alert.rule.name": "Flat"});
        let half = json!({"kibana.alert": {"rule.name": "Half"}});
        assert_eq!(str_at(&nested, "kibana.alert.rule.name"), Some("Nested"));
        assert_eq!(str_at(&flat, "kibana.alert.rule.name"), Some("Flat"));
        assert_eq!(str_at(&half, "kibana.alert.rule.name"), Some("Half"));
    }

    #[test]
    fn numeric_segments_index_arrays() {
        let value = json!({"Resources": [{"Id": "arn:aws:s3:::bucket"}]});
        assert_eq!(
            str_at(&value, "Resources.0.Id"),
            Some("arn:aws:s3:::bucket")
        );
        assert_eq!(str_at(&value, "Resources.1.Id"), None);
        assert_eq!(str_at(&value, "Resources.x.Id"), None);
    }

    #[test]
    fn placeholders_read_as_absent() {
        let value = json!({"a": "N/A", "b": " - ", "c": "real", "d": ""});
        assert_eq!(str_at(&value, "a"), None);
        assert_eq!(str_at(&value, "b"), None);
        assert_eq!(first_str(&value, &["a", "d", "c"]), Some("real"));
    }

    #[test]
    fn numbers_and_flags_read_from_strings_too() {
        let value = json!({"n": "42", "f": "3.5", "b": "yes", "z": 0, "bad": "NaN"});
        assert_eq!(u64_at(&value, "n"), Some(42));
        assert_eq!(f64_at(&value, "f"), Some(3.5));
        assert_eq!(f64_at(&value, "bad"), None);
        assert_eq!(bool_at(&value, "b"), Some(true));
        assert_eq!(bool_at(&value, "z"), Some(false));
        assert_eq!(text_at(&value, "z").as_deref(), Some("0"));
    }
}
