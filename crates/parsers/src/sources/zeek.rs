//! Zeek notices: one entry of `notice.log` as Zeek's JSON writer prints it (`LogAscii::use_json`),
//! one object per line, with the connection id flattened into dotted keys (`id.orig_h`) and
//! `remote_location` either flattened the same way or nested. `ts` is an epoch float by
//! default, or ISO 8601 with `LogAscii::json_timestamps = JSON::TS_ISO8601`. Shippers add
//! `_path: "notice"` and `_system_name` (zeek-kafka and Corelight), or wrap the entry in
//! `{"notice": {...}}` keyed by the log's path (zeek-kafka's default): both are read.
//!
//! Zeek gives notices no severity; the level here is what the notice type means by the
//! notice framework's own documentation (a successful login by a password guesser is worse
//! than a port scan, capture loss is sensor health). Scans and password guessing carry the
//! scanner in `src` and the target in `dst`; connection-based notices carry both in `id`.

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, Direction, EntityKind, NetworkSignal, ParsedAlert, SeverityLevel,
    SignInSignal,
};

use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::entities::{IpScope, hash_kind, ip_scope, normalize_domain, normalize_ip};
use crate::json::{first_str, first_text, str_at, strings_at, u64_at};
use crate::registry::Schema;
use crate::sources::suricata::direction;
use crate::time::time_at;

pub(crate) static NOTICE: Schema = Schema {
    key: "zeek_notice",
    display_name: "Zeek notice (notice.log, JSON)",
    source_label: "Zeek",
    integration: "zeek",
    sample: include_str!("../../samples/zeek_notice.json"),
    detect,
    parse,
};

/// The notice itself: the entry, or the entry inside zeek-kafka's `{"notice": {...}}`.
fn entry(raw: &Value) -> &Value {
    match raw.get("notice") {
        Some(inner) if inner.is_object() && raw.as_object().is_some_and(|map| map.len() == 1) => {
            inner
        }
        _ => raw,
    }
}

fn detect(raw: &Value) -> bool {
    let notice = entry(raw);
    // Every notice type is a namespaced enum ("Scan::Port_Scan"); the framework's own
    // fields or the shipper's `_path` tell notice.log from other logs that say "note".
    let namespaced = str_at(notice, "note").is_some_and(|note| note.contains("::"));
    let from_notice_log = str_at(notice, "_path") == Some("notice")
        || (notice.get("ts").is_some()
            && (notice.get("actions").is_some_and(Value::is_array)
                || notice.get("suppress_for").is_some()
                || notice.get("peer_descr").is_some()
                || str_at(notice, "msg").is_some()));
    namespaced && from_notice_log
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let notice = entry(raw);
    let Some(note) = str_at(notice, "note") else {
        return Err(ParseError::DoesNotFit {
            schema_key: NOTICE.key,
            reason: "a Zeek notice has a `note` (its type, e.g. Scan::Port_Scan)".into(),
        });
    };
    let message = str_at(notice, "msg");
    let sub = str_at(notice, "sub");
    let title = match message {
        Some(message) => format!("{note}: {message}"),
        None => note.to_string(),
    };
    alert
        .title(Some(&title))
        .alert_type(Some(&format!("zeek:{note}")))
        .create_time(time_at(notice, "ts"))
        .description(message);
    let kind = NoticeKind::of(note);
    alert.signals.category = Some(AlertCategory::Network);
    alert.signals.severity_level = Some(kind.severity());

    // Scans and guessing name the actor in `src` and the target in `dst`; notices raised on
    // one connection name both ends in `id` as well. `src` wins: it is who the notice is about.
    let source_ip = first_str(notice, &["src", "id.orig_h"]).and_then(normalize_ip);
    let destination_ip = first_str(notice, &["dst", "id.resp_h"]).and_then(normalize_ip);
    let destination_port = u64_at(notice, "p")
        .or_else(|| port_of(notice, "p"))
        .or_else(|| u64_at(notice, "id.resp_p"))
        .and_then(|port| u16::try_from(port).ok());
    let source_port = u64_at(notice, "id.orig_p").and_then(|port| u16::try_from(port).ok());
    let direction = direction(source_ip.as_deref(), destination_ip.as_deref());
    let hostname = sub
        .filter(|_| note == "Intel::Notice")
        .and_then(normalize_domain);
    alert.signals.network = Some(NetworkSignal {
        source_ip: source_ip.clone(),
        source_port,
        destination_ip,
        destination_port,
        protocol: str_at(notice, "proto").map(str::to_ascii_lowercase),
        application_protocol: kind.application_protocol().map(str::to_string),
        direction,
        signature: Some(note.to_string()),
        hostname,
        ..NetworkSignal::default()
    });

    let actions = strings_at(notice, "actions");
    alert.signals.action = Some(
        if actions
            .iter()
            .any(|action| action.contains("DROP") || action.contains("SHUNT"))
        {
            ActionTaken::Blocked
        } else {
            ActionTaken::Observed
        },
    );
    for action in &actions {
        alert.tag(Some(action));
    }
    alert.tag(Some(note));

    // Address scans name no target, so the scanner's own address decides.
    let source_inside = matches!(direction, Some(Direction::Internal | Direction::Outbound))
        || source_ip
            .as_deref()
            .and_then(ip_scope)
            .is_some_and(|scope| scope == IpScope::Private);
    kind.mitre(&mut alert, source_inside);
    if kind.is_ssh_guessing() {
        alert.signals.sign_in = Some(SignInSignal {
            source_ip,
            country: first_str(notice, &["remote_location.country_code"]).map(str::to_string),
            city: first_str(notice, &["remote_location.city"]).map(str::to_string),
            application: Some("ssh".into()),
            succeeded: (note == "SSH::Login_By_Password_Guesser").then_some(true),
            failure_count: u64_at(notice, "n").and_then(|count| u32::try_from(count).ok()),
            ..SignInSignal::default()
        });
    }

    // The sub-message holds what the message summarises: sampled targets, an intel
    // indicator, a hash lookup URL. Its addresses and URLs are entities.
    for text in [sub, message].into_iter().flatten() {
        alert.sweep(Some(text));
    }
    for digest in hex_tokens(sub) {
        alert.hash(Some(digest));
    }
    alert.entity(EntityKind::FilePath, str_at(notice, "file_desc"));
    // The sensor and cluster node that raised it are labels, not entities: the notice is
    // not about them, and a sensor-health notice must not look like one about a host.
    for sensor in [str_at(notice, "_system_name"), str_at(notice, "peer_descr")]
        .into_iter()
        .flatten()
    {
        alert.tag(Some(&format!("sensor {sensor}")));
    }
    if let Some(mime) = str_at(notice, "file_mime_type") {
        alert.tag(Some(mime));
    }

    // The connection when the notice is about one; otherwise the file it is about.
    alert.ticket(
        first_text(notice, &["uid", "fuid"]),
        if str_at(notice, "uid").is_some() {
            "connection uid"
        } else {
            "file id"
        },
        None,
    );
    // Zeek suppresses repeats of a notice per identifier; here the notice type and the actor
    // (or the connection when there is no actor) play that role.
    let actor = first_text(notice, &["src", "id.orig_h", "uid", "fuid"]);
    alert.coalesce_key(Some(match actor {
        Some(actor) => format!("{note}:{actor}"),
        None => note.to_string(),
    }));
    Ok(alert.finish())
}

/// A port written as Zeek's `port` type sometimes is: "443/tcp".
fn port_of(notice: &Value, path: &str) -> Option<u64> {
    str_at(notice, path)?.split('/').next()?.trim().parse().ok()
}

/// Hex digests inside free text ("…/search/?query=5d41…"), which the sweep leaves inside URLs.
fn hex_tokens(text: Option<&str>) -> Vec<&str> {
    text.map(|text| {
        text.split(|character: char| !character.is_ascii_hexdigit())
            .filter(|token| hash_kind(token).is_some())
            .take(10)
            .collect()
    })
    .unwrap_or_default()
}

/// What a notice type means, by its namespace and name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NoticeKind {
    Scan,
    PasswordGuessing,
    GuesserLoggedIn,
    Exploit,
    MalwareHash,
    Intel,
    Certificate,
    SensorHealth,
    Other,
}

impl NoticeKind {
    fn of(note: &str) -> NoticeKind {
        let (namespace, name) = note.split_once("::").unwrap_or(("", note));
        match (namespace, name) {
            ("Scan", _) => NoticeKind::Scan,
            ("SSH", "Password_Guessing") | ("FTP", "Bruteforcing") => NoticeKind::PasswordGuessing,
            ("SSH", "Login_By_Password_Guesser") => NoticeKind::GuesserLoggedIn,
            ("HTTP", "SQL_Injection_Attacker" | "SQL_Injection_Victim")
            | ("Heartbleed", _)
            | ("FTP", "Site_Exec_Success") => NoticeKind::Exploit,
            ("TeamCymruMalwareHashRegistry", _) => NoticeKind::MalwareHash,
            ("Intel", _) => NoticeKind::Intel,
            ("SSL", _) => NoticeKind::Certificate,
            ("CaptureLoss" | "PacketFilter" | "Weird" | "Reporter" | "Notice", _) => {
                NoticeKind::SensorHealth
            }
            _ => NoticeKind::Other,
        }
    }

    fn severity(self) -> SeverityLevel {
        match self {
            NoticeKind::GuesserLoggedIn | NoticeKind::MalwareHash | NoticeKind::Intel => {
                SeverityLevel::High
            }
            NoticeKind::Exploit | NoticeKind::PasswordGuessing | NoticeKind::Scan => {
                SeverityLevel::Medium
            }
            NoticeKind::Certificate | NoticeKind::Other => SeverityLevel::Low,
            NoticeKind::SensorHealth => SeverityLevel::Informational,
        }
    }

    fn is_ssh_guessing(self) -> bool {
        matches!(
            self,
            NoticeKind::PasswordGuessing | NoticeKind::GuesserLoggedIn
        )
    }

    fn application_protocol(self) -> Option<&'static str> {
        match self {
            NoticeKind::PasswordGuessing | NoticeKind::GuesserLoggedIn => Some("ssh"),
            NoticeKind::Certificate => Some("tls"),
            _ => None,
        }
    }

    /// The ATT&CK reading of the notice type. A scan from inside is discovery of the
    /// network; from outside it is reconnaissance of the organisation.
    fn mitre(self, alert: &mut AlertBuilder, source_inside: bool) {
        let technique = match self {
            NoticeKind::Scan if source_inside => "T1046",
            NoticeKind::Scan => "T1595",
            NoticeKind::PasswordGuessing => "T1110",
            NoticeKind::GuesserLoggedIn => "T1078",
            NoticeKind::Exploit => "T1190",
            NoticeKind::MalwareHash => "T1105",
            _ => return,
        };
        alert.technique(Some(technique));
        if self == NoticeKind::GuesserLoggedIn {
            alert.technique(Some("T1110"));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::parse_alert;

    fn read(raw: &Value) -> ParsedAlert {
        parse_alert(None, raw, chrono::Utc::now()).expect("parses")
    }

    fn has(parsed: &ParsedAlert, kind: EntityKind, value: &str) -> bool {
        parsed
            .entities
            .iter()
            .any(|entity| entity.kind == kind && entity.value == value)
    }

    #[test]
    fn the_sample_reads_completely() {
        let raw: Value = serde_json::from_str(NOTICE.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "zeek_notice");
        assert_eq!(parsed.alert_type, "zeek:SSH::Password_Guessing");
        assert!(
            parsed
                .title
                .starts_with("SSH::Password_Guessing: 203.0.113.77")
        );
        let sign_in = parsed.signals.sign_in.as_ref().unwrap();
        assert_eq!(sign_in.failure_count, Some(30));
        assert_eq!(sign_in.country.as_deref(), Some("NL"));
        assert_eq!(
            parsed.signals.mitre_tactics,
            vec!["Credential Access".to_string()]
        );
        assert!(has(&parsed, EntityKind::Ip, "203.0.113.77"));
        assert!(has(&parsed, EntityKind::Ip, "192.0.2.9"));
    }

    #[test]
    fn times_read_as_epoch_floats_and_as_iso_strings() {
        for ts in [
            json!(1_772_500_000.25),
            json!("2026-03-03T01:06:40.250000Z"),
        ] {
            let parsed = read(&json!({
                "ts": ts, "note": "Scan::Port_Scan", "msg": "m", "actions": ["Notice::ACTION_LOG"]
            }));
            assert_eq!(
                parsed.create_time.to_rfc3339(),
                "2026-03-03T01:06:40.250+00:00"
            );
        }
    }

    #[test]
    fn scans_are_reconnaissance_from_outside_and_discovery_from_inside() {
        let cases = [
            ("198.51.100.250", "Reconnaissance"),
            ("10.20.30.77", "Discovery"),
        ];
        for (source, tactic) in cases {
            let parsed = read(&json!({
                "ts": 1_772_500_000.0, "note": "Scan::Address_Scan", "_path": "notice",
                "msg": format!("{source} scanned at least 25 unique hosts on port 445/tcp"),
                "src": source, "p": 445, "sub": "local"
            }));
            assert_eq!(
                parsed.signals.mitre_tactics,
                vec![tactic.to_string()],
                "{source}"
            );
            let network = parsed.signals.network.unwrap();
            assert_eq!(network.destination_port, Some(445));
        }
    }

    #[test]
    fn the_kafka_envelope_is_unwrapped() {
        let raw = json!({"notice": {
            "ts": 1_772_500_000.0, "note": "SSH::Password_Guessing",
            "msg": "203.0.113.77 appears to be guessing SSH passwords (seen in 30 connections).",
            "src": "203.0.113.77", "actions": ["Notice::ACTION_LOG"], "suppress_for": 3600.0
        }});
        assert!(detect(&raw));
        assert_eq!(read(&raw).schema_key, "zeek_notice");
    }

    #[test]
    fn a_malware_hash_notice_names_the_file_hash() {
        let parsed = read(&json!({
            "ts": 1_772_500_000.0, "note": "TeamCymruMalwareHashRegistry::Match",
            "msg": "Malware Hash Registry Detection rate: 62%  Last seen: 2026-02-27 10:11:12",
            "sub": "https://www.virustotal.com/gui/search/?query=3f786850e387550fdab836ed7e6dc881de23001b",
            "fuid": "FhX0kq3tBqTj1yX9Ja", "file_mime_type": "application/x-dosexec",
            "id.orig_h": "198.51.100.31", "id.resp_h": "10.20.30.40", "actions": ["Notice::ACTION_LOG"]
        }));
        assert!(has(
            &parsed,
            EntityKind::HashSha1,
            "3f786850e387550fdab836ed7e6dc881de23001b"
        ));
        assert_eq!(
            parsed.origin_ticket_id.as_deref(),
            Some("FhX0kq3tBqTj1yX9Ja")
        );
        assert_eq!(parsed.signals.severity_level, Some(SeverityLevel::High));
    }

    #[test]
    fn other_logs_with_a_note_field_are_not_notices() {
        for raw in [
            json!({"note": "remember the milk", "ts": 1, "msg": "x"}),
            json!({"note": "Scan::Port_Scan"}),
            json!({"_path": "conn", "note": "Scan::Port_Scan", "uid": "C1"}),
        ] {
            assert!(!detect(&raw), "{raw}");
        }
    }

    #[test]
    fn hostile_input_does_not_panic() {
        let huge = "Ω".repeat(100_000);
        for raw in [
            json!({"_path": "notice", "note": "Scan::x", "ts": "never", "src": 5, "dst": [1],
                   "p": "99999/tcp", "n": -3, "actions": "Notice::ACTION_DROP", "sub": huge,
                   "remote_location": "nowhere", "id.orig_p": {"a": 1}}),
            json!({"_path": "notice", "note": "::", "msg": null, "id": {"orig_h": true}}),
            json!({"notice": {"note": format!("{huge}::{huge}"), "ts": 1e300, "msg": huge}}),
        ] {
            let _ = parse_alert(Some("zeek_notice"), &raw, chrono::Utc::now());
        }
        assert!(parse_alert(Some("zeek_notice"), &json!({"ts": 1}), chrono::Utc::now()).is_err());
    }
}
