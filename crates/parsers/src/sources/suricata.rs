//! Suricata EVE JSON alerts (`event_type: "alert"`), as written to eve.json and shipped
//! by Filebeat, Logstash or a syslog forwarder. Severity is the ruleset's priority:
//! 1 high, 2 medium, 3 low (4 informational in some rulesets).
//!
//! Beyond the five-tuple it reads what the alert's app-layer record carries: the TLS SNI,
//! the HTTP host, URL (relative or absolute) and user agent, the DNS query name in both
//! the v2 (`dns.query[]`) and v3 (`dns.queries[]`, Suricata 8) layouts, and the hashes of
//! `files[]` (Suricata 7+). `xff` (the client behind a proxy, with `xff.mode: extra-data`)
//! is an address entity too. Emerging Threats metadata gives ATT&CK ids, the signature
//! severity, the deployment and the rule's confidence (High/Medium/Low).

use serde_json::Value;
use sleuth_domain::{ActionTaken, AlertCategory, Direction, NetworkSignal, ParsedAlert};

use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::entities::{IpScope, ip_scope, normalize_ip};
use crate::json::{array_at, first_str, str_at, strings_at, text_at, u64_at};
use crate::registry::Schema;
use crate::time::time_at;

pub(crate) static EVE: Schema = Schema {
    key: "suricata_eve",
    display_name: "Suricata EVE JSON alert",
    source_label: "Suricata",
    integration: "suricata",
    sample: include_str!("../../samples/suricata_eve.json"),
    detect,
    parse,
};

fn detect(raw: &Value) -> bool {
    str_at(raw, "event_type") == Some("alert")
        && raw.get("alert").is_some_and(Value::is_object)
        && (text_at(raw, "alert.signature_id").is_some()
            || str_at(raw, "alert.signature").is_some())
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let signature = str_at(raw, "alert.signature");
    let signature_id = text_at(raw, "alert.signature_id");
    if signature.is_none() && signature_id.is_none() {
        return Err(ParseError::DoesNotFit {
            schema_key: EVE.key,
            reason: "an EVE alert has alert.signature or alert.signature_id".into(),
        });
    }
    alert
        .title(signature)
        .title(
            signature_id
                .as_deref()
                .map(|sid| format!("Suricata signature {sid}"))
                .as_deref(),
        )
        .alert_type(
            signature_id
                .as_deref()
                .map(|sid| format!("suricata:sid:{sid}"))
                .as_deref(),
        )
        .create_time(time_at(raw, "timestamp"))
        .start_time(time_at(raw, "flow.start"))
        .host(str_at(raw, "host"));

    let severity = u64_at(raw, "alert.severity").map(|priority| match priority {
        1 => "high",
        2 => "medium",
        3 => "low",
        _ => "informational",
    });
    alert.severity(severity);

    let source_ip = str_at(raw, "src_ip").and_then(normalize_ip);
    let destination_ip = str_at(raw, "dest_ip").and_then(normalize_ip);
    alert.signals.category = Some(AlertCategory::Network);
    alert.signals.action = match str_at(raw, "alert.action") {
        Some("blocked") => Some(ActionTaken::Blocked),
        Some("allowed") => Some(ActionTaken::Allowed),
        _ => Some(ActionTaken::Observed),
    };
    alert.signals.network = Some(NetworkSignal {
        direction: direction(source_ip.as_deref(), destination_ip.as_deref()),
        source_port: u64_at(raw, "src_port").and_then(|port| u16::try_from(port).ok()),
        destination_port: u64_at(raw, "dest_port").and_then(|port| u16::try_from(port).ok()),
        source_ip,
        destination_ip,
        protocol: str_at(raw, "proto").map(str::to_ascii_lowercase),
        application_protocol: str_at(raw, "app_proto").map(str::to_ascii_lowercase),
        bytes_out: u64_at(raw, "flow.bytes_toserver"),
        bytes_in: u64_at(raw, "flow.bytes_toclient"),
        signature: signature.map(str::to_string),
        signature_id: signature_id.clone(),
        signature_category: str_at(raw, "alert.category").map(str::to_string),
        hostname: first_str(
            raw,
            &[
                "tls.sni",
                "http.hostname",
                "dns.rrname",
                "dns.query.0.rrname",
                "dns.queries.0.rrname",
            ],
        )
        .map(str::to_string),
    });
    alert.entity(sleuth_domain::EntityKind::Url, http_url(raw).as_deref());
    alert.entity(sleuth_domain::EntityKind::Ip, str_at(raw, "xff"));
    for file in array_at(raw, "files") {
        alert
            .hash(str_at(file, "sha256"))
            .hash(str_at(file, "md5"))
            .hash(str_at(file, "sha1"));
    }

    // Emerging Threats and most rulesets carry ATT&CK ids in the rule metadata.
    for tactic in strings_at(raw, "alert.metadata.mitre_tactic_name")
        .into_iter()
        .chain(strings_at(raw, "alert.metadata.mitre_tactic_id"))
    {
        alert.tactic(Some(tactic));
    }
    for technique in strings_at(raw, "alert.metadata.mitre_technique_id") {
        alert.technique(Some(technique));
    }
    alert.tag(str_at(raw, "alert.category"));
    for key in [
        "signature_severity",
        "deployment",
        "affected_product",
        "attack_target",
        "malware_family",
    ] {
        for value in strings_at(raw, &format!("alert.metadata.{key}")) {
            alert.tag(Some(value));
        }
    }
    alert.tag(str_at(raw, "http.http_user_agent"));
    for vlan in array_at(raw, "vlan").iter().filter_map(Value::as_u64) {
        alert.tag(Some(&format!("vlan {vlan}")));
    }
    // ET rules say how much they trust themselves; that is the source's confidence.
    alert.signals.confidence = strings_at(raw, "alert.metadata.confidence")
        .into_iter()
        .find_map(|word| match word.to_ascii_lowercase().as_str() {
            "high" => Some(90),
            "medium" => Some(60),
            "low" => Some(30),
            _ => None,
        });

    // One story per signature between the same two hosts.
    let coalesce = signature_id.as_deref().map(|sid| {
        format!(
            "{sid}:{}:{}",
            str_at(raw, "src_ip").unwrap_or_default(),
            str_at(raw, "dest_ip").unwrap_or_default()
        )
    });
    alert.coalesce_key(coalesce);
    Ok(alert.finish())
}

/// The requested URL of an HTTP alert, rebuilt from host and path (a proxy request
/// already carries the absolute URL).
fn http_url(raw: &Value) -> Option<String> {
    let path = str_at(raw, "http.url").unwrap_or("/");
    if path.contains("://") {
        return Some(path.to_string());
    }
    let host = str_at(raw, "http.hostname")?;
    let scheme = if u64_at(raw, "dest_port") == Some(443) {
        "https"
    } else {
        "http"
    };
    let port = u64_at(raw, "http.http_port")
        .filter(|port| *port != 80 && *port != 443)
        .map(|port| format!(":{port}"))
        .unwrap_or_default();
    Some(format!("{scheme}://{host}{port}{path}"))
}

/// Which way the traffic crossed the organisation's edge, by address scope alone (the
/// engine refines it with the operator's own ranges).
pub(crate) fn direction(source: Option<&str>, destination: Option<&str>) -> Option<Direction> {
    let inside = |address: Option<&str>| {
        address
            .and_then(ip_scope)
            .map(|scope| scope != IpScope::Public)
    };
    match (inside(source)?, inside(destination)?) {
        (true, true) => Some(Direction::Internal),
        (true, false) => Some(Direction::Outbound),
        (false, true) => Some(Direction::Inbound),
        (false, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sleuth_domain::EntityKind;

    use super::*;
    use crate::parse_alert;

    fn read(raw: &Value) -> ParsedAlert {
        parse_alert(None, raw, chrono::Utc::now()).expect("parses")
    }

    #[test]
    fn the_sample_reads_completely() {
        let raw: Value = serde_json::from_str(EVE.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "suricata_eve");
        assert_eq!(parsed.title, "ET MALWARE Cobalt Strike Beacon Observed");
        assert_eq!(parsed.alert_type, "suricata:sid:2027865");
        assert_eq!(
            parsed.create_time.to_rfc3339(),
            "2026-03-01T12:00:00.123456+00:00"
        );
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        assert_eq!(parsed.direct_source_label, "Suricata");
        let network = parsed.signals.network.as_ref().unwrap();
        assert_eq!(network.direction, Some(Direction::Outbound));
        assert_eq!(network.destination_port, Some(443));
        assert_eq!(network.hostname.as_deref(), Some("cdn.update-check.net"));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Command and Control"]);
        assert_eq!(parsed.signals.action, Some(ActionTaken::Allowed));
        for (kind, value) in [
            (EntityKind::Ip, "10.20.30.40"),
            (EntityKind::Ip, "203.0.113.50"),
            (EntityKind::Domain, "cdn.update-check.net"),
            (EntityKind::Host, "ids-edge-01"),
        ] {
            assert!(
                parsed
                    .entities
                    .iter()
                    .any(|entity| entity.kind == kind && entity.value == value),
                "{kind} {value} in {:?}",
                parsed.entities
            );
        }
    }

    #[test]
    fn other_event_types_are_not_alerts_of_this_format() {
        assert!(!detect(
            &json!({"event_type": "flow", "alert": {"signature_id": 1}})
        ));
        assert!(!detect(&json!({"event_type": "alert"})));
    }

    #[test]
    fn app_layer_details_become_entities_and_tags() {
        let parsed = read(&json!({
            "event_type": "alert", "timestamp": "2026-03-03T09:00:00+0000",
            "src_ip": "10.20.12.55", "dest_ip": "198.51.100.37", "dest_port": 8080,
            "proto": "TCP", "app_proto": "http", "xff": "10.20.12.99", "vlan": [120],
            "alert": {"signature_id": 2013028, "signature": "ET POLICY curl User-Agent Outbound",
                      "severity": 3, "metadata": {"confidence": ["Medium"], "deployment": ["Perimeter"]}},
            "http": {"hostname": "files.example.net", "http_port": 8080, "url": "/drop/a.sh",
                     "http_user_agent": "curl/8.5.0"},
            "files": [{"filename": "a.sh", "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}],
            "dns": {"queries": [{"rrname": "ignored.example.net"}]}
        }));
        let has = |kind: EntityKind, value: &str| {
            parsed
                .entities
                .iter()
                .any(|entity| entity.kind == kind && entity.value == value)
        };
        assert!(has(
            EntityKind::Url,
            "http://files.example.net:8080/drop/a.sh"
        ));
        assert!(has(EntityKind::Ip, "10.20.12.99"));
        assert!(has(
            EntityKind::HashSha256,
            "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        ));
        assert_eq!(parsed.signals.confidence, Some(60));
        for tag in ["curl/8.5.0", "vlan 120", "Perimeter"] {
            assert!(
                parsed.signals.tags.iter().any(|known| known == tag),
                "{tag}"
            );
        }
    }

    #[test]
    fn hostile_input_does_not_panic() {
        let huge = "Ω".repeat(100_000);
        for raw in [
            json!({"event_type": "alert", "alert": {"signature": huge, "signature_id": [1],
                   "severity": "x", "metadata": {"confidence": 5, "mitre_technique_id": {"a": 1}}},
                   "src_ip": 5, "dest_ip": "ΩΩΩΩ", "tls": {"sni": "ΩΩΩΩΩΩΩΩΩΩ.example.com"},
                   "http": {"hostname": "ΩΩΩΩΩΩΩΩ", "url": huge}, "xff": "ΩΩΩΩΩΩΩΩΩ",
                   "files": [{"sha256": huge}, 7], "vlan": "x", "timestamp": huge}),
            json!({"event_type": "alert", "alert": {"signature_id": u64::MAX},
                   "src_port": -1, "dest_port": 70000, "flow": {"start": []}}),
        ] {
            let _ = parse_alert(Some("suricata_eve"), &raw, chrono::Utc::now());
        }
        assert!(
            parse_alert(
                Some("suricata_eve"),
                &json!({"alert": {}}),
                chrono::Utc::now()
            )
            .is_err()
        );
    }

    #[test]
    fn a_blocked_inbound_alert_says_so() {
        let parsed = read(&json!({
            "event_type": "alert", "timestamp": "2026-03-01T12:00:00+0000",
            "src_ip": "198.51.100.77", "dest_ip": "10.0.0.5", "proto": "TCP",
            "alert": {"action": "blocked", "signature_id": 2100498, "signature": "GPL ATTACK_RESPONSE id check returned root", "severity": 2}
        }));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Blocked));
        assert_eq!(parsed.severity.as_deref(), Some("medium"));
        assert_eq!(
            parsed.signals.network.unwrap().direction,
            Some(Direction::Inbound)
        );
    }
}
