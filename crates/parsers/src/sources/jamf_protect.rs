//! Jamf Protect (macOS) alerts as Jamf Protect forwards them to an HTTP endpoint, a SIEM
//! or cloud storage: `{"caid", "certid", "input": {"eventType", "host", "match",
//! "related"}}`. The bare `input` object (as some collectors store it) is read too.
//!
//! `input.match.facts` are the analytics that fired (the first names the alert);
//! `input.related` holds the processes, binaries, files and users involved. Severity is
//! Jamf's 0-3 (informational, low, medium, high). A `Prevented` action (Threat
//! Prevention blocked and quarantined the executable) reads as blocked, and a Threat
//! Prevention signature match is Jamf's own malicious verdict.

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, EntityKind, ParsedAlert, ProcessSignal, SourceVerdict,
};

use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::json::{array_at, bool_at, str_at, strings_at, text_at, u64_at};
use crate::registry::Schema;
use crate::time::time_at;

pub(crate) static ALERT: Schema = Schema {
    key: "jamf_protect_alert",
    display_name: "Jamf Protect alert",
    source_label: "Jamf Protect",
    integration: "jamf_protect",
    sample: include_str!("../../samples/jamf_protect_alert.json"),
    detect,
    parse,
};

/// How many items of any one list are read.
const MAX_ITEMS: usize = 50;

/// The alert body: `input`, or the object itself when it is unwrapped.
fn body(raw: &Value) -> &Value {
    raw.get("input")
        .filter(|input| input.is_object())
        .unwrap_or(raw)
}

fn detect(raw: &Value) -> bool {
    let input = body(raw);
    str_at(input, "eventType").is_some()
        && input.get("host").is_some_and(Value::is_object)
        && input
            .get("match")
            .is_some_and(|found| found.get("facts").is_some_and(Value::is_array))
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let input = body(raw);
    let facts = array_at(input, "match.facts");
    let event_type = str_at(input, "eventType");
    let first_fact = facts.iter().find_map(|fact| str_at(fact, "name"));
    if first_fact.is_none() && event_type.is_none() {
        return Err(ParseError::DoesNotFit {
            schema_key: ALERT.key,
            reason:
                "a Jamf Protect alert names its analytic (input.match.facts[].name) or eventType"
                    .into(),
        });
    }
    let severity = u64_at(input, "match.severity").map(|level| match level {
        0 => "informational",
        1 => "low",
        2 => "medium",
        _ => "high",
    });
    let serial = str_at(input, "host.serial");
    alert
        .title(first_fact)
        .title(event_type)
        .alert_type(
            first_fact
                .or(event_type)
                .map(|name| format!("jamf_protect:{name}"))
                .as_deref(),
        )
        .create_time(time_at(input, "match.event.timestamp"))
        .severity(severity)
        .ticket(
            str_at(input, "match.uuid")
                .or_else(|| str_at(raw, "caid"))
                .map(str::to_string),
            "Jamf Protect alert UUID",
            None,
        )
        .coalesce_key(first_fact.or(event_type).map(|name| {
            format!(
                "{name}:{}",
                serial
                    .or_else(|| str_at(input, "host.hostname"))
                    .unwrap_or_default()
            )
        }))
        .host(str_at(input, "host.hostname"));
    for address in strings_at(input, "host.ips") {
        alert.entity(EntityKind::Ip, Some(address));
    }
    let descriptions: Vec<&str> = facts
        .iter()
        .take(MAX_ITEMS)
        .filter_map(|fact| str_at(fact, "human"))
        .collect();
    alert.description(Some(&descriptions.join(" ")));

    alert.signals.category = Some(AlertCategory::Endpoint);
    alert.tag(event_type);
    alert.tag(serial.map(|serial| format!("serial:{serial}")).as_deref());
    let tags = strings_at(input, "match.tags").into_iter().chain(
        facts
            .iter()
            .take(MAX_ITEMS)
            .flat_map(|fact| strings_at(fact, "tags")),
    );
    for tag in tags {
        alert.tag(Some(tag));
        // Analytics tag ATT&CK as "T1548.004" and "PrivilegeEscalation".
        alert.technique(Some(tag)).tactic(Some(tag));
    }
    let match_type = str_at(input, "match.event.matchType");
    alert
        .tag(match_type)
        .tag(str_at(input, "match.event.matchValue"));

    let actions = array_at(input, "match.actions")
        .iter()
        .chain(facts.iter().flat_map(|fact| array_at(fact, "actions")))
        .take(MAX_ITEMS)
        .filter_map(|action| str_at(action, "name"))
        .collect::<Vec<_>>();
    let prevented =
        actions.contains(&"Prevented") || bool_at(input, "match.event.blocked") == Some(true);
    alert.signals.action = Some(if prevented {
        ActionTaken::Blocked
    } else {
        ActionTaken::Observed
    });
    let threat_match = match_type.is_some_and(|kind| kind.eq_ignore_ascii_case("Threat Signature"))
        || event_type == Some("GPThreatMatchExecEvent");
    if threat_match {
        alert.signals.source_verdict = Some(SourceVerdict::Malicious);
    }

    read_related(input, &mut alert);
    Ok(alert.finish())
}

/// The process the alert is about (the one the matched event names, else the first
/// related one), its parent, binary and user, and every related file.
fn read_related(input: &Value, alert: &mut AlertBuilder) {
    let processes = array_at(input, "related.processes");
    let binaries = array_at(input, "related.binaries");
    let users = array_at(input, "related.users");
    let event_pid =
        text_at(input, "match.event.process.pid").or_else(|| text_at(input, "match.event.pid"));
    let process = input
        .get("match")
        .and_then(|found| found.get("event"))
        .and_then(|event| event.get("process"))
        .filter(|process| process.is_object())
        .or_else(|| {
            processes
                .iter()
                .take(MAX_ITEMS)
                .find(|candidate| event_pid.is_some() && text_at(candidate, "pid") == event_pid)
        })
        .or_else(|| processes.first());
    if let Some(process) = process {
        let path = str_at(process, "path");
        let parent = text_at(process, "ppid").and_then(|ppid| {
            processes
                .iter()
                .take(MAX_ITEMS)
                .find(|candidate| text_at(candidate, "pid").as_deref() == Some(ppid.as_str()))
        });
        let binary = binaries
            .iter()
            .take(MAX_ITEMS)
            .find(|binary| path.is_some() && str_at(binary, "path") == path);
        let user = text_at(process, "uid").and_then(|uid| {
            users
                .iter()
                .take(MAX_ITEMS)
                .find(|user| text_at(user, "uid").as_deref() == Some(uid.as_str()))
                .and_then(|user| str_at(user, "name"))
        });
        // The parent is often the real culprit (a dropper running a system tool): its
        // path and hash are entities too.
        let parent_path = parent.and_then(|parent| str_at(parent, "path"));
        alert.entity(EntityKind::FilePath, parent_path);
        alert.hash(
            binaries
                .iter()
                .take(MAX_ITEMS)
                .find(|binary| parent_path.is_some() && str_at(binary, "path") == parent_path)
                .and_then(|binary| str_at(binary, "sha256hex")),
        );
        let command_line = strings_at(process, "args").join(" ");
        let signing = process
            .get("signingInfo")
            .or_else(|| binary.and_then(|binary| binary.get("signingInfo")));
        alert.signals.process = Some(ProcessSignal {
            name: str_at(process, "name").map(str::to_string),
            path: path.map(str::to_string),
            command_line: (!command_line.is_empty()).then_some(command_line),
            decoded_command: None,
            parent_name: parent
                .and_then(|parent| str_at(parent, "name"))
                .map(str::to_string),
            parent_command_line: parent
                .map(|parent| strings_at(parent, "args").join(" "))
                .filter(|line| !line.is_empty()),
            user: user.map(str::to_string),
            sha256: binary
                .and_then(|binary| str_at(binary, "sha256hex"))
                .map(str::to_string),
            sha1: binary
                .and_then(|binary| str_at(binary, "sha1hex"))
                .map(str::to_string),
            md5: None,
            // The leaf certificate's subject, or the team id, of a signature that checked
            // out (status 0, errSecSuccess): unsigned code has neither, and a broken
            // signature names nobody who vouches for the code.
            signer: signing
                .filter(|signing| {
                    signing
                        .get("status")
                        .and_then(Value::as_i64)
                        .is_none_or(|status| status == 0)
                })
                .and_then(|signing| {
                    strings_at(signing, "authorities")
                        .first()
                        .copied()
                        .or_else(|| str_at(signing, "teamid"))
                })
                .map(str::to_string),
        });
    }
    for file in array_at(input, "related.files").iter().take(MAX_ITEMS) {
        alert.entity(EntityKind::FilePath, str_at(file, "path"));
        alert.hash(str_at(file, "sha256hex"));
    }
    alert.entity(EntityKind::FilePath, str_at(input, "match.event.path"));
    // Persistence analytics name the program an item launches ("ItemBinary"): it is
    // what the alert is really about, with its hash when Jamf collected the binary.
    for context in array_at(input, "match.context").iter().take(MAX_ITEMS) {
        if str_at(context, "valueType") != Some("Binary") {
            continue;
        }
        let path = str_at(context, "value");
        alert.entity(EntityKind::FilePath, path);
        let collected = binaries
            .iter()
            .take(MAX_ITEMS)
            .find(|binary| path.is_some() && str_at(binary, "path") == path);
        alert.hash(collected.and_then(|binary| str_at(binary, "sha256hex")));
    }
    for user in users.iter().take(MAX_ITEMS) {
        alert.entity(EntityKind::User, str_at(user, "name"));
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

    #[test]
    fn the_sample_reads_completely() {
        let raw: Value = serde_json::from_str(ALERT.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "jamf_protect_alert");
        assert_eq!(parsed.title, "ThreatMatchExecEvent");
        assert_eq!(parsed.alert_type, "jamf_protect:ThreatMatchExecEvent");
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Blocked));
        assert_eq!(
            parsed.signals.source_verdict,
            Some(SourceVerdict::Malicious)
        );
        let process = parsed.signals.process.as_ref().unwrap();
        assert_eq!(process.name.as_deref(), Some("UpdateHelper"));
        assert_eq!(process.user.as_deref(), Some("l.brown"));
        assert!(
            parsed
                .entities
                .iter()
                .any(|entity| entity.kind == EntityKind::Host && entity.value == "mac-0417")
        );
        assert!(
            parsed
                .signals
                .tags
                .iter()
                .any(|tag| tag == "macos_gimmick_b")
        );
    }

    #[test]
    fn an_analytic_alert_reads_its_mitre_tags_and_process_tree() {
        let raw = json!({"caid": "c1", "certid": "k1", "input": {
            "eventType": "GPProcessEvent",
            "host": {"hostname": "wks-0231", "serial": "C02XYZ", "ips": ["10.20.30.40"]},
            "match": {"uuid": "u-1", "severity": 2, "tags": ["MITREattack", "CredentialAccess", "T1555.001"],
                "event": {"pid": 812, "timestamp": 1773100000.25},
                "facts": [{"name": "KeychainDump", "human": "Keychain contents dumped", "tags": ["T1555.001"], "actions": [{"name": "Report"}]}],
                "actions": [{"name": "Report"}]},
            "related": {
                "users": [{"uid": 501, "name": "r.patel"}],
                "processes": [
                    {"pid": 812, "ppid": 640, "uid": 501, "name": "security", "path": "/usr/bin/security",
                     "args": ["security", "dump-keychain", "-d"], "signingInfo": {"authorities": ["Software Signing"]}},
                    {"pid": 640, "uid": 501, "name": "svc_update", "path": "/private/tmp/svc_update", "args": ["/private/tmp/svc_update"]}
                ],
                "binaries": [{"path": "/usr/bin/security", "sha256hex": "b".repeat(64)}]}}});
        let parsed = read(&raw);
        assert_eq!(parsed.severity.as_deref(), Some("medium"));
        assert_eq!(parsed.signals.mitre_tactics[0], "Credential Access");
        assert_eq!(parsed.signals.mitre_techniques, vec!["T1555.001"]);
        assert_eq!(parsed.signals.action, Some(ActionTaken::Observed));
        assert_eq!(parsed.signals.source_verdict, None);
        let process = parsed.signals.process.unwrap();
        assert_eq!(process.parent_name.as_deref(), Some("svc_update"));
        assert_eq!(
            process.command_line.as_deref(),
            Some("security dump-keychain -d")
        );
        assert_eq!(process.user.as_deref(), Some("r.patel"));
        assert_eq!(process.signer.as_deref(), Some("Software Signing"));
        assert_eq!(process.sha256.as_deref(), Some("b".repeat(64).as_str()));
        assert_eq!(
            parsed.create_time.to_rfc3339(),
            "2026-03-09T23:46:40.250+00:00"
        );
    }

    #[test]
    fn only_a_signature_that_checked_out_names_a_signer() {
        let signed = |status: i64| {
            let raw = json!({"caid": "c1", "certid": "k1", "input": {
                "eventType": "GPFSEvent",
                "host": {"hostname": "wks-0231"},
                "match": {"uuid": "u-1", "severity": 0, "event": {"pid": 9, "timestamp": 1773100000.0},
                    "facts": [{"name": "F", "human": "f"}]},
                "related": {"processes": [{"pid": 9, "name": "helper", "path": "/tmp/helper",
                    "signingInfo": {"status": status, "teamid": "UBF8T346G9",
                        "authorities": ["Developer ID Application: Example Vendor (UBF8T346G9)"]}}]}}});
            read(&raw)
                .signals
                .process
                .and_then(|process| process.signer)
        };
        assert_eq!(
            signed(0).as_deref(),
            Some("Developer ID Application: Example Vendor (UBF8T346G9)")
        );
        // errSecCSSignatureFailed: the code was changed after it was signed.
        assert_eq!(signed(-67061), None);
    }

    #[test]
    fn other_alerts_with_a_host_are_not_jamf_protect() {
        assert!(!detect(&json!({"host": {"hostname": "x"}, "match": {}})));
        assert!(!detect(&json!({"input": {"eventType": "x", "host": {}}})));
    }

    #[test]
    fn hostile_input_never_panics() {
        let huge = "j".repeat(100_000);
        for raw in [
            json!({"input": {"eventType": huge, "host": {"ips": "x"}, "match": {"facts": [1, {"name": 2}], "severity": "high",
                "event": {"process": [], "timestamp": "soon"}}, "related": {"processes": [{"ppid": {"a": 1}}, null]}}}),
            json!({"eventType": "GPFSEvent", "host": {}, "match": {"facts": [], "actions": [{"name": ["Prevented"]}]},
                "related": {"users": "root", "binaries": [{"path": []}]}}),
            json!({"input": {"eventType": "🦀", "host": {"hostname": "é é"}, "match": {"facts": [{"tags": [7, "T9"]}]}}}),
        ] {
            let _ = parse_alert(Some(ALERT.key), &raw, chrono::Utc::now());
            let _ = crate::detect(&raw);
        }
    }
}
