//! What the Microsoft formats share: strings that hold JSON, keys whose capitals differ
//! between the REST, Graph and Log Analytics spellings of one field, the classification
//! vocabulary of Defender and Sentinel, and account and host names as Windows writes them.

use std::borrow::Cow;

use serde_json::Value;
use sleuth_domain::{EntityKind, SourceVerdict};

use crate::builder::AlertBuilder;
use crate::entities::{IpScope, ip_scope, normalize_ip};
use crate::json::{is_placeholder, scalar_text};

/// The longest embedded JSON string parsed. Real `Entities`, `ExtendedProperties` and
/// `Data` blobs are a few kilobytes; anything far larger is not worth the time.
const MAX_EMBEDDED_CHARS: usize = 512 * 1024;

/// The most list items (evidence, entities, recipients) read from one alert.
pub(super) const MAX_ITEMS: usize = 100;

/// A field that may hold JSON either as a value or as a string of JSON text (Sentinel's
/// `Entities`, Entra's `additionalInfo`, the Management API's `Data`). Text that is not
/// JSON, or is too long to be worth parsing, reads as absent.
///
/// A value is borrowed, never copied: a clone recurses once per level of nesting, and an
/// alert built in memory (not read by serde_json, whose recursion limit bounds parsed
/// text) may be nested deeper than any stack.
pub(super) fn embedded(value: Option<&Value>) -> Option<Cow<'_, Value>> {
    match value? {
        Value::String(text) => {
            let text = text.trim();
            if text.is_empty() || text.len() > MAX_EMBEDDED_CHARS {
                return None;
            }
            // serde_json's recursion limit keeps deeply nested text from overflowing.
            serde_json::from_str::<Value>(text)
                .ok()
                .filter(|parsed| parsed.is_object() || parsed.is_array())
                .map(Cow::Owned)
        }
        value @ (Value::Object(_) | Value::Array(_)) => Some(Cow::Borrowed(value)),
        _ => None,
    }
}

/// The items of an embedded list; a single object reads as a list of one.
pub(super) fn embedded_list(value: Option<&Value>) -> Cow<'_, [Value]> {
    match embedded(value) {
        Some(Cow::Borrowed(Value::Array(list))) => Cow::Borrowed(list.as_slice()),
        Some(Cow::Borrowed(single @ Value::Object(_))) => {
            Cow::Borrowed(std::slice::from_ref(single))
        }
        Some(Cow::Owned(Value::Array(list))) => Cow::Owned(list),
        Some(Cow::Owned(single @ Value::Object(_))) => Cow::Owned(vec![single]),
        _ => Cow::Borrowed(&[]),
    }
}

/// The value of `key` in an object, matching the key's capitals exactly first and then
/// ignoring them: `Entities` in Log Analytics is `entities` in a REST export.
pub(super) fn field<'a>(object: &'a Value, key: &str) -> Option<&'a Value> {
    let map = object.as_object()?;
    map.get(key).or_else(|| {
        map.iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(key))
            .map(|(_, value)| value)
    })
}

/// A non-placeholder string (or number, as text) under the first of `keys` present.
pub(super) fn text(object: &Value, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|key| field(object, key).and_then(scalar_text))
        .filter(|text| !is_placeholder(text))
}

/// The array under the first of `keys` present; empty otherwise. Capped at [`MAX_ITEMS`].
pub(super) fn items<'a>(object: &'a Value, keys: &[&str]) -> &'a [Value] {
    let all = keys
        .iter()
        .find_map(|key| field(object, key).and_then(Value::as_array))
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    all.get(..MAX_ITEMS).unwrap_or(all)
}

/// The strings of a list that may be an array, a JSON string holding an array, or one
/// string separated by commas or semicolons (Sentinel writes all three).
pub(super) fn string_list(value: Option<&Value>) -> Vec<String> {
    let Some(value) = value else {
        return Vec::new();
    };
    let from_array = |items: &[Value]| -> Vec<String> {
        items
            .iter()
            .take(MAX_ITEMS)
            .filter_map(scalar_text)
            .filter(|text| !is_placeholder(text))
            .collect()
    };
    match value {
        Value::Array(items) => from_array(items),
        Value::String(text) => {
            if let Some(Value::Array(items)) = embedded(Some(value)).as_deref() {
                return from_array(items);
            }
            text.split([',', ';'])
                .map(str::trim)
                .filter(|part| !is_placeholder(part))
                .take(MAX_ITEMS)
                .map(str::to_string)
                .collect()
        }
        other => scalar_text(other).into_iter().collect(),
    }
}

/// Lower-case letters and digits only: "TruePositive", "true_positive" and
/// "truePositive" all read "truepositive".
pub(super) fn squeeze(text: &str) -> String {
    text.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|character| character.to_ascii_lowercase())
        .collect()
}

/// The verdict of a classified alert or incident (Defender's classification and
/// determination, Sentinel's classification); `Suspicious` while nobody has classified
/// it yet, which is what an unset or `unknown` classification means.
pub(super) fn classified_verdict(
    classification: Option<&str>,
    determination: Option<&str>,
) -> SourceVerdict {
    let by_classification = classification
        .map(squeeze)
        .and_then(|word| match word.as_str() {
            "truepositive" => Some(SourceVerdict::Malicious),
            "falsepositive" | "benignpositive" | "informationalexpectedactivity" => {
                Some(SourceVerdict::Benign)
            }
            _ => None,
        });
    let by_determination = determination
        .map(squeeze)
        .and_then(|word| match word.as_str() {
            "apt"
            | "malware"
            | "phishing"
            | "multistagedattack"
            | "multistagedattacks"
            | "compromisedaccount"
            | "compromiseduser"
            | "malicioususeractivity"
            | "unwantedsoftware" => Some(SourceVerdict::Malicious),
            "securitytesting"
            | "securitypersonnel"
            | "lineofbusinessapplication"
            | "confirmedactivity"
            | "confirmeduseractivity"
            | "notmalicious"
            | "clean" => Some(SourceVerdict::Benign),
            _ => None,
        });
    by_classification
        .or(by_determination)
        .unwrap_or(SourceVerdict::Suspicious)
}

/// Whether a threat name is the vendor calling something malicious. Potentially
/// unwanted applications are named too, but are not malware.
pub(super) fn names_malware(threat: Option<&str>) -> bool {
    threat.is_some_and(|threat| {
        let lowered = threat.trim().to_ascii_lowercase();
        !lowered.is_empty() && !lowered.starts_with("pua:") && !lowered.contains("unwanted")
    })
}

/// The ATT&CK tactic of a Defender category that is not named after one.
pub(super) fn category_tactic(category: Option<&str>) -> Option<&'static str> {
    match squeeze(category?).as_str() {
        "ransomware" => Some("Impact"),
        "credentialtheft" => Some("Credential Access"),
        _ => None,
    }
}

/// The account as one name: the UPN when known (it matches identities directly), else
/// `DOMAIN\name`, else the bare name.
pub(super) fn account_name(
    name: Option<&str>,
    domain: Option<&str>,
    upn: Option<&str>,
) -> Option<String> {
    fn clean(text: Option<&str>) -> Option<&str> {
        text.map(str::trim).filter(|text| !is_placeholder(text))
    }
    if let Some(upn) = clean(upn).filter(|upn| upn.contains('@')) {
        return Some(upn.to_string());
    }
    let name = clean(name)?;
    if name.contains('\\') || name.contains('@') {
        return Some(name.to_string());
    }
    Some(match clean(domain) {
        Some(domain) => format!("{domain}\\{name}"),
        None => name.to_string(),
    })
}

/// Adds a machine by its DNS name and, when that is qualified, by its short name too:
/// context lists hosts as `wks-0231`, Defender names them `wks-0231.corp.example.com`.
pub(super) fn add_machine(alert: &mut AlertBuilder, name: Option<&str>) {
    let Some(name) = name.map(str::trim).filter(|name| !is_placeholder(name)) else {
        return;
    };
    alert.host(Some(name));
    if normalize_ip(name).is_none()
        && let Some((short, _)) = name.split_once('.')
        && !short.is_empty()
    {
        alert.host(Some(short));
    }
}

/// A file's full path from a directory and a name, as Windows writes it.
pub(super) fn file_path(directory: Option<&str>, name: Option<&str>) -> Option<String> {
    let name = name.map(str::trim).filter(|name| !is_placeholder(name));
    let directory = directory
        .map(str::trim)
        .filter(|directory| !is_placeholder(directory));
    match (directory, name) {
        (Some(directory), Some(name)) => {
            let separator = if directory.contains('/') { '/' } else { '\\' };
            if directory.ends_with(['\\', '/']) {
                Some(format!("{directory}{name}"))
            } else {
                Some(format!("{directory}{separator}{name}"))
            }
        }
        (Some(directory), None) => Some(directory.to_string()),
        (None, name) => name.map(str::to_string),
    }
}

/// The address of a sender, without the BATV prefix Exchange adds to envelope senders
/// (`prvs=0123456789=alice@example.net`).
pub(super) fn sender_address(text: &str) -> String {
    let trimmed = text.trim().trim_start_matches('<').trim_end_matches('>');
    if let Some(rest) = trimmed.strip_prefix("prvs=")
        && let Some((_, address)) = rest.split_once('=')
        && address.contains('@')
    {
        return address.to_string();
    }
    trimmed.to_string()
}

/// Adds a hash entity of whichever kind its length says; Defender writes hashes in
/// upper case and sometimes as the empty string.
pub(super) fn add_hash(alert: &mut AlertBuilder, hash: Option<&str>) {
    alert.hash(hash.map(str::trim).filter(|hash| !hash.is_empty()));
}

/// The first public address among `candidates`, else the first valid one.
pub(super) fn best_ip<'a>(candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let valid: Vec<String> = candidates.into_iter().filter_map(normalize_ip).collect();
    valid
        .iter()
        .find(|ip| ip_scope(ip) == Some(IpScope::Public))
        .or_else(|| valid.first())
        .cloned()
}

/// Adds a user entity for an account written any of the ways Microsoft writes them.
pub(super) fn add_user(alert: &mut AlertBuilder, user: Option<&str>) {
    alert.entity(EntityKind::User, user);
}

/// The pairs of a list like Entra's `additionalInfo` (`Key`/`Value` objects), or the
/// entries of an object. Values stay JSON (some are lists), borrowed from the alert or
/// moved out of the text they were embedded in: never copied (see [`embedded`]).
pub(super) struct KeyValues<'a> {
    pairs: Vec<(String, Cow<'a, Value>)>,
}

impl KeyValues<'_> {
    /// The value of `key`; the last pair wins when a list names a key twice.
    pub(super) fn get(&self, key: &str) -> Option<&Value> {
        self.pairs
            .iter()
            .rev()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.as_ref())
    }
}

const PAIR_KEYS: &[&str] = &["Key", "key", "Name", "name"];

pub(super) fn key_values(value: Option<&Value>) -> KeyValues<'_> {
    fn pair_value(pair: &Value) -> Option<&Value> {
        field(pair, "Value").or_else(|| field(pair, "value"))
    }
    let pairs = match embedded(value) {
        Some(Cow::Borrowed(Value::Array(pairs))) => pairs
            .iter()
            .take(MAX_ITEMS)
            .filter_map(|pair| Some((text(pair, PAIR_KEYS)?, Cow::Borrowed(pair_value(pair)?))))
            .collect(),
        Some(Cow::Owned(Value::Array(pairs))) => pairs
            .into_iter()
            .take(MAX_ITEMS)
            .filter_map(|mut pair| {
                let key = text(&pair, PAIR_KEYS)?;
                // The value moves out under the name `pair_value` would read.
                let map = pair.as_object_mut()?;
                let name = if map.contains_key("Value") {
                    "Value".to_string()
                } else {
                    map.keys()
                        .find(|name| name.eq_ignore_ascii_case("value"))?
                        .clone()
                };
                Some((key, Cow::Owned(map.get_mut(&name)?.take())))
            })
            .collect(),
        Some(Cow::Borrowed(Value::Object(object))) => object
            .iter()
            .map(|(key, value)| (key.clone(), Cow::Borrowed(value)))
            .collect(),
        Some(Cow::Owned(Value::Object(object))) => object
            .into_iter()
            .map(|(key, value)| (key, Cow::Owned(value)))
            .collect(),
        _ => Vec::new(),
    };
    KeyValues { pairs }
}

/// Whether a title says the product stopped the activity ("'Emotet' malware was
/// prevented", "Blocked credential theft").
pub(super) fn title_says_stopped(title: Option<&str>) -> bool {
    title.is_some_and(|title| {
        let lowered = title.to_lowercase();
        [
            "prevented",
            "was blocked",
            "blocked ",
            "quarantined",
            "was removed",
        ]
        .iter()
        .any(|word| lowered.contains(word))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_held_in_strings_is_read_and_garbage_is_not() {
        assert_eq!(
            embedded(Some(&json!("[{\"a\":1}]"))).as_deref(),
            Some(&json!([{"a": 1}]))
        );
        assert_eq!(
            embedded(Some(&json!({"a": 1}))).as_deref(),
            Some(&json!({"a": 1}))
        );
        assert_eq!(embedded(Some(&json!("not json"))), None);
        assert_eq!(embedded(Some(&json!("42"))), None);
        assert_eq!(embedded(Some(&json!(7))), None);
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        assert_eq!(embedded(Some(&json!(deep))), None);
    }

    #[test]
    fn keys_match_whatever_their_capitals() {
        let value = json!({"Entities": 1, "hostname": "x"});
        assert_eq!(field(&value, "entities"), Some(&json!(1)));
        assert_eq!(text(&value, &["HostName"]).as_deref(), Some("x"));
    }

    #[test]
    fn lists_read_from_arrays_json_strings_and_separated_text() {
        assert_eq!(string_list(Some(&json!(["a", "b"]))), vec!["a", "b"]);
        assert_eq!(
            string_list(Some(&json!("[\"T1003\",\"T1059\"]"))),
            vec!["T1003", "T1059"]
        );
        assert_eq!(
            string_list(Some(&json!("InitialAccess, Persistence"))),
            vec!["InitialAccess", "Persistence"]
        );
        assert!(string_list(Some(&json!(null))).is_empty());
    }

    #[test]
    fn classifications_map_to_verdicts() {
        let cases = [
            (Some("TruePositive"), None, SourceVerdict::Malicious),
            (Some("falsePositive"), None, SourceVerdict::Benign),
            (Some("BenignPositive"), None, SourceVerdict::Benign),
            (
                Some("InformationalExpectedActivity"),
                Some("SecurityTesting"),
                SourceVerdict::Benign,
            ),
            (None, Some("malware"), SourceVerdict::Malicious),
            (Some("unknown"), Some("unknown"), SourceVerdict::Suspicious),
            (None, None, SourceVerdict::Suspicious),
        ];
        for (classification, determination, expected) in cases {
            assert_eq!(
                classified_verdict(classification, determination),
                expected,
                "{classification:?} {determination:?}"
            );
        }
    }

    #[test]
    fn accounts_prefer_the_upn_then_domain_and_name() {
        assert_eq!(
            account_name(Some("r.patel"), Some("CORP"), Some("r.patel@example.com")).as_deref(),
            Some("r.patel@example.com")
        );
        assert_eq!(
            account_name(Some("r.patel"), Some("CORP"), None).as_deref(),
            Some("CORP\\r.patel")
        );
        assert_eq!(account_name(None, Some("CORP"), None), None);
    }

    #[test]
    fn envelope_senders_lose_their_batv_prefix() {
        assert_eq!(
            sender_address("prvs=0a1b2c3d4e=billing@evil.example"),
            "billing@evil.example"
        );
        assert_eq!(sender_address("<a@b.example>"), "a@b.example");
    }

    #[test]
    fn paths_join_with_the_separator_of_their_directory() {
        assert_eq!(
            file_path(Some("C:\\Windows\\System32"), Some("cmd.exe")).as_deref(),
            Some("C:\\Windows\\System32\\cmd.exe")
        );
        assert_eq!(
            file_path(Some("/tmp/"), Some("x")).as_deref(),
            Some("/tmp/x")
        );
        assert_eq!(file_path(None, Some("x")).as_deref(), Some("x"));
    }

    #[test]
    fn named_threats_are_malware_unless_merely_unwanted() {
        assert!(names_malware(Some("Ransom:Win32/LockBit.SB")));
        assert!(names_malware(Some("HackTool:Win32/Mimikatz.D")));
        assert!(!names_malware(Some("PUA:Win32/Softonic")));
        assert!(!names_malware(Some("  ")));
        assert!(!names_malware(None));
        assert_eq!(category_tactic(Some("Ransomware")), Some("Impact"));
        assert_eq!(category_tactic(Some("SuspiciousActivity")), None);
    }

    #[test]
    fn deep_values_are_borrowed_not_copied() {
        // serde_json's clone recurses once per level; 50,000 levels overflow any test
        // thread's stack, so this passes only while nothing copies the tree.
        let mut deep = json!("bottom");
        for _ in 0..50_000 {
            deep = Value::Array(vec![deep]);
        }
        let mut alert = json!({"Entities": [], "additionalInfo": {"k": []}});
        alert["Entities"] = Value::Array(vec![deep]);
        assert_eq!(embedded_list(field(&alert, "Entities")).len(), 1);
        assert!(embedded(field(&alert, "Entities")).is_some());
        let pairs = json!([{"Key": "k", "Value": "v"}]);
        assert_eq!(key_values(Some(&pairs)).get("k"), Some(&json!("v")));
        assert!(
            key_values(field(&alert, "additionalInfo"))
                .get("k")
                .is_some()
        );
        // Taken apart by hand: dropping it whole would recurse as deep as a clone.
        let mut node = alert["Entities"].take();
        while let Value::Array(mut items) = node {
            node = items.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn key_value_lists_become_maps() {
        let text = json!(
            "[{\"Key\":\"userAgent\",\"Value\":\"curl/8\"},{\"key\":\"riskReasons\",\"value\":[\"suspiciousIP\"]}]"
        );
        let map = key_values(Some(&text));
        assert_eq!(map.get("userAgent"), Some(&json!("curl/8")));
        assert_eq!(map.get("riskReasons"), Some(&json!(["suspiciousIP"])));
    }
}
