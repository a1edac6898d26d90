//! From a source's JSON answer to facts: each declared fact's JSONPath, combined, mapped
//! and converted to the type its kind holds. A value that does not convert is left out
//! (the answer's other facts stand); nothing here can fail the lookup.

use std::collections::BTreeMap;

use chrono::{NaiveDate, NaiveDateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sleuth_domain::{EntityKind, Fact, FactKind, FactType, FactValue, Timestamp};

/// Verdict words a source may give (after its map).
pub(crate) const VERDICTS: [&str; 4] = ["malicious", "suspicious", "benign", "unknown"];

/// How the values a fact's path finds become one fact: the first, all of them (a list),
/// their sum, or how many there are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Combine {
    #[default]
    First,
    All,
    Sum,
    Count,
}

/// A declared fact, compiled.
#[derive(Debug, Clone)]
pub struct FactRule {
    pub kind: FactKind,
    pub path: serde_json_path::JsonPath,
    pub combine: Combine,
    pub map: BTreeMap<String, Value>,
    /// What an unmapped value becomes (`Null`: it is left out).
    pub otherwise: Option<Value>,
    pub for_kinds: Vec<EntityKind>,
}

/// The facts `rules` find in `answer` about an entity of `kind`.
pub(crate) fn facts(rules: &[FactRule], answer: &Value, kind: EntityKind) -> Vec<Fact> {
    rules
        .iter()
        .filter(|rule| rule.for_kinds.is_empty() || rule.for_kinds.contains(&kind))
        .filter_map(|rule| {
            fact(rule, answer).map(|value| Fact {
                kind: rule.kind,
                value,
            })
        })
        .collect()
}

fn fact(rule: &FactRule, answer: &Value) -> Option<FactValue> {
    let found = rule.path.query(answer).all();
    let mapped: Vec<Value> = found
        .into_iter()
        .map(|value| map(rule, value))
        .filter(|value| !value.is_null())
        .collect();
    match rule.combine {
        Combine::First => mapped.first().and_then(|value| convert(rule.kind, value)),
        Combine::All => {
            let mut items = Vec::new();
            for value in &mapped {
                match value {
                    Value::Array(inner) => items.extend(inner.iter().filter_map(text)),
                    other => items.extend(text(other)),
                }
            }
            (!items.is_empty()).then_some(FactValue::List(items))
        }
        Combine::Sum => {
            let numbers: Vec<f64> = mapped.iter().filter_map(number).collect();
            (!numbers.is_empty()).then(|| FactValue::Number(numbers.iter().sum()))
        }
        Combine::Count => {
            // A count of matches; zero is an answer too (no sign-ins recorded).
            let count = mapped
                .iter()
                .map(|value| match value {
                    Value::Array(items) => items.len(),
                    Value::Null => 0,
                    _ => 1,
                })
                .sum::<usize>();
            Some(FactValue::Number(count as f64))
        }
    }
}

fn map(rule: &FactRule, value: &Value) -> Value {
    if rule.map.is_empty() && rule.otherwise.is_none() {
        return value.clone();
    }
    let key = match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    rule.map
        .get(&key)
        .or_else(|| {
            // Keys are matched in any case: vendors are not consistent ("Server", "server").
            rule.map
                .iter()
                .find(|(candidate, _)| candidate.eq_ignore_ascii_case(&key))
                .map(|(_, mapped)| mapped)
        })
        .or(rule.otherwise.as_ref())
        .cloned()
        .unwrap_or_else(|| value.clone())
}

fn convert(kind: FactKind, value: &Value) -> Option<FactValue> {
    match kind.value_type() {
        FactType::Flag => match value {
            Value::Bool(flag) => Some(FactValue::Flag(*flag)),
            Value::String(text) if text.eq_ignore_ascii_case("true") => Some(FactValue::Flag(true)),
            Value::String(text) if text.eq_ignore_ascii_case("false") => {
                Some(FactValue::Flag(false))
            }
            Value::Number(number) => number.as_i64().map(|number| FactValue::Flag(number != 0)),
            _ => None,
        },
        FactType::Number => number(value).map(FactValue::Number),
        FactType::Date => date(value).map(FactValue::Date),
        FactType::Text => {
            let text = text(value)?;
            if kind == FactKind::Verdict {
                let lower = text.to_ascii_lowercase();
                return VERDICTS
                    .contains(&lower.as_str())
                    .then_some(FactValue::Text(lower));
            }
            (!text.is_empty()).then_some(FactValue::Text(text))
        }
        FactType::List => match value {
            Value::Array(items) => {
                let items: Vec<String> = items.iter().filter_map(text).collect();
                (!items.is_empty()).then_some(FactValue::List(items))
            }
            other => text(other).map(|item| FactValue::List(vec![item])),
        },
    }
}

fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.chars().take(500).collect()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text.trim().parse::<f64>().ok().filter(|n| n.is_finite()),
        _ => None,
    }
}

/// A date as vendors write them: RFC 3339, `2024-01-19 01:33:26 UTC` (abuse.ch), a plain
/// date, or Unix seconds (VirusTotal; milliseconds when the number is that large).
pub(crate) fn date(value: &Value) -> Option<Timestamp> {
    match value {
        Value::Number(number) => {
            let seconds = number.as_i64()?;
            if seconds.abs() > 100_000_000_000 {
                Utc.timestamp_millis_opt(seconds).single()
            } else {
                Utc.timestamp_opt(seconds, 0).single()
            }
        }
        Value::String(text) => {
            let text = text.trim();
            if let Ok(date) = chrono::DateTime::parse_from_rfc3339(text) {
                return Some(date.with_timezone(&Utc));
            }
            let bare = text.strip_suffix(" UTC").unwrap_or(text);
            for format in [
                "%Y-%m-%d %H:%M:%S",
                "%Y-%m-%dT%H:%M:%S%.f",
                "%Y-%m-%dT%H:%M:%S",
            ] {
                if let Ok(date) = NaiveDateTime::parse_from_str(bare, format) {
                    return Some(Utc.from_utc_datetime(&date));
                }
            }
            NaiveDate::parse_from_str(bare, "%Y-%m-%d")
                .ok()
                .and_then(|date| date.and_hms_opt(0, 0, 0))
                .map(|date| Utc.from_utc_datetime(&date))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::definition::FactDeclaration;

    fn rule(fact: &str, path: &str, combine: Combine, map: Value) -> FactRule {
        let declaration: FactDeclaration = serde_json::from_value(json!({
            "fact": fact, "path": path, "combine": combine, "map": map,
        }))
        .unwrap();
        crate::definition::compile_fact_for_tests(&declaration).unwrap()
    }

    #[test]
    fn paths_combine_map_and_convert() {
        let answer = json!({
            "stats": {"malicious": 40, "suspicious": 2, "undetected": 20, "harmless": 8},
            "status": "SUSPENDED",
            "events": [
                {"eventAction": "registration", "eventDate": "2026-11-20T10:00:00Z"},
                {"eventAction": "expiration", "eventDate": "2027-11-20T10:00:00Z"}
            ],
            "tags": ["trojan", "emotet"],
            "added": "2024-01-19 01:33:26 UTC",
            "created": 1700000000
        });
        let rules = [
            rule(
                "malicious_votes",
                "$.stats.malicious",
                Combine::First,
                json!({}),
            ),
            rule("total_votes", "$.stats.*", Combine::Sum, json!({})),
            rule(
                "account_enabled",
                "$.status",
                Combine::First,
                json!({"ACTIVE": true, "SUSPENDED": false}),
            ),
            rule(
                "registered_at",
                "$.events[?@.eventAction == 'registration'].eventDate",
                Combine::First,
                json!({}),
            ),
            rule("labels", "$.tags", Combine::All, json!({})),
            rule("first_seen", "$.added", Combine::First, json!({})),
            rule("last_seen", "$.created", Combine::First, json!({})),
            rule("abuse_score", "$.nothing", Combine::First, json!({})),
        ];
        let found = facts(&rules, &answer, EntityKind::Domain);
        let value = |kind: FactKind| {
            found
                .iter()
                .find(|fact| fact.kind == kind)
                .map(|fact| fact.value.to_string())
        };
        assert_eq!(value(FactKind::MaliciousVotes).as_deref(), Some("40"));
        assert_eq!(value(FactKind::TotalVotes).as_deref(), Some("70"));
        assert_eq!(value(FactKind::AccountEnabled).as_deref(), Some("false"));
        assert_eq!(
            value(FactKind::RegisteredAt).as_deref(),
            Some("2026-11-20T10:00:00+00:00")
        );
        assert_eq!(value(FactKind::Labels).as_deref(), Some("trojan, emotet"));
        assert_eq!(
            value(FactKind::FirstSeen).as_deref(),
            Some("2024-01-19T01:33:26+00:00")
        );
        assert_eq!(
            value(FactKind::LastSeen).as_deref(),
            Some("2023-11-14T22:13:20+00:00")
        );
        assert_eq!(value(FactKind::AbuseScore), None);
    }

    #[test]
    fn a_verdict_must_be_one_of_the_known_words() {
        let rules = [rule(
            "verdict",
            "$.classification",
            Combine::First,
            json!({}),
        )];
        let malicious = facts(
            &rules,
            &json!({"classification": "Malicious"}),
            EntityKind::Ip,
        );
        assert_eq!(malicious[0].value, FactValue::Text("malicious".into()));
        assert!(facts(&rules, &json!({"classification": "evil"}), EntityKind::Ip).is_empty());
    }
}
