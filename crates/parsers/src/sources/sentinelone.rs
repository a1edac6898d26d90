//! SentinelOne threats, as the Management API returns them (`GET /web/api/v2.1/threats`,
//! one item of `data`) and as integrations and syslog/webhook forwarders pass that item on:
//! `id`, `threatInfo {...}`, `agentRealtimeInfo {...}`, `agentDetectionInfo {...}`,
//! `indicators[]` (with MITRE tactics and techniques) and the `mitigationStatus[]` actions.
//! The flat item of API v2.0 (`threatName`, `classification`, `agentComputerName`,
//! `fileContentHash`, `mitigationStatus` as a word) is read too.
//!
//! A threat has no severity of its own: the console ranks it by `confidenceLevel`, so
//! "malicious" reads as high and "suspicious" as medium (confidence 90 and 50). The
//! analyst's verdict (`analystVerdict`, or `mitigationStatus: marked_as_benign`)
//! outranks the engine's classification.

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, EntityKind, ParsedAlert, ProcessSignal, SourceVerdict,
};

use super::endpoint_common::{all_ips, file_name, owned, qualified_user, real_hash, some_process};
use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::json::{array_at, bool_at, first_str, first_text, str_at, strings_at};
use crate::registry::Schema;
use crate::time::first_time;

pub(crate) static THREAT: Schema = Schema {
    key: "sentinelone_threat",
    display_name: "SentinelOne threat (Management API v2.1)",
    source_label: "SentinelOne",
    integration: "sentinelone",
    sample: include_str!("../../samples/sentinelone_threat.json"),
    detect,
    parse,
};

/// What a successful mitigation action is called in `mitigationStatus[]`.
const STOPPING_ACTIONS: &[&str] = &[
    "kill",
    "quarantine",
    "remediate",
    "rollback",
    "network_quarantine",
];

fn detect(raw: &Value) -> bool {
    let current = raw.get("threatInfo").is_some_and(Value::is_object)
        && (raw.get("agentRealtimeInfo").is_some_and(Value::is_object)
            || raw.get("agentDetectionInfo").is_some_and(Value::is_object));
    let legacy = str_at(raw, "threatName").is_some()
        && str_at(raw, "agentComputerName").is_some()
        && (str_at(raw, "fileContentHash").is_some() || str_at(raw, "classification").is_some());
    current || legacy
}

/// A threat field: under `threatInfo` in API v2.1, at the top level in v2.0.
fn threat<'a>(raw: &'a Value, key: &str) -> Option<&'a str> {
    raw.get("threatInfo")
        .and_then(|info| str_at(info, key))
        .or_else(|| str_at(raw, key))
}

/// An agent field: in the real-time or detection-time agent block, or at the top level.
fn agent<'a>(raw: &'a Value, key: &str) -> Option<&'a str> {
    first_str(
        raw,
        &[
            &format!("agentRealtimeInfo.{key}"),
            &format!("agentDetectionInfo.{key}"),
            key,
        ],
    )
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let id = first_text(raw, &["id", "threatInfo.threatId"]);
    let name = threat(raw, "threatName");
    if id.is_none() && name.is_none() {
        return Err(ParseError::DoesNotFit {
            schema_key: THREAT.key,
            reason: "a SentinelOne threat has an id or threatInfo.threatName".into(),
        });
    }
    let classification = threat(raw, "classification");
    let detection_type = threat(raw, "detectionType");
    let confidence_level = threat(raw, "confidenceLevel").map(str::to_ascii_lowercase);
    alert
        .title(name)
        .title(classification)
        .alert_type(
            classification
                .map(|classification| match detection_type {
                    Some(kind) => format!("sentinelone:{classification}:{kind}"),
                    None => format!("sentinelone:{classification}"),
                })
                .as_deref(),
        )
        .create_time(first_time(
            raw,
            &[
                "threatInfo.createdAt",
                "createdAt",
                "threatInfo.identifiedAt",
                "createdDate",
            ],
        ))
        .start_time(first_time(raw, &["threatInfo.identifiedAt", "createdDate"]))
        .severity(match confidence_level.as_deref() {
            Some("malicious") => Some("high"),
            Some("suspicious") => Some("medium"),
            _ => None,
        })
        .severity_score(crate::json::f64_at(raw, "rank"), 10.0)
        .ticket(id.clone(), "threat id", None)
        .tenant(
            agent(raw, "accountId").map(str::to_string),
            agent(raw, "accountName").map(str::to_string),
        );

    let agent_id = agent(raw, "agentId");
    let digest = threat(raw, "sha256")
        .or_else(|| threat(raw, "sha1"))
        .or_else(|| threat(raw, "fileContentHash"));
    let coalesce = threat(raw, "storyline")
        .map(str::to_string)
        .or_else(|| digest.map(|digest| format!("{digest}:{}", agent_id.unwrap_or_default())))
        .or(id);
    alert.coalesce_key(coalesce);

    alert.signals.category = Some(AlertCategory::Endpoint);
    alert.signals.confidence = match confidence_level.as_deref() {
        Some("malicious") => Some(90),
        Some("suspicious") => Some(50),
        _ => None,
    };
    alert.signals.source_verdict = verdict(raw, confidence_level.as_deref());
    alert.signals.action = Some(action(raw));

    let mut descriptions = Vec::new();
    for indicator in array_at(raw, "indicators").iter().take(30) {
        let category = str_at(indicator, "category");
        alert.tag(category).tactic(category);
        if let Some(description) = str_at(indicator, "description")
            && descriptions.len() < 5
        {
            descriptions.push(description);
        }
        for tactic in array_at(indicator, "tactics").iter().take(20) {
            alert.tactic(str_at(tactic, "name"));
            for technique in array_at(tactic, "techniques").iter().take(20) {
                alert.technique(str_at(technique, "name")).technique(
                    str_at(technique, "link")
                        .and_then(technique_from_link)
                        .as_deref(),
                );
            }
        }
    }
    alert
        .description(Some(&descriptions.join("; ")))
        .description(str_at(raw, "description"));
    alert
        .tag(classification)
        .tag(detection_type)
        .tag(threat(raw, "classificationSource"));
    for engine in strings_at(raw, "threatInfo.engines")
        .into_iter()
        .chain(strings_at(raw, "engines"))
    {
        alert.tag(Some(engine));
    }

    let path = threat(raw, "filePath");
    alert.signals.process = some_process(ProcessSignal {
        name: owned(
            path.and_then(file_name)
                .or(threat(raw, "fileDisplayName"))
                .or(name),
        ),
        path: owned(path),
        command_line: owned(threat(raw, "maliciousProcessArguments")),
        decoded_command: None,
        parent_name: owned(threat(raw, "originatorProcess")),
        parent_command_line: None,
        user: owned(threat(raw, "processUser").or_else(|| str_at(raw, "username"))),
        sha256: real_hash(threat(raw, "sha256").or_else(|| threat(raw, "fileSha256"))),
        sha1: real_hash(threat(raw, "sha1").or_else(|| threat(raw, "fileContentHash"))),
        md5: real_hash(threat(raw, "md5")),
        signer: owned(threat(raw, "publisherName")),
    });

    let domain =
        agent(raw, "agentDomain").filter(|domain| !domain.eq_ignore_ascii_case("WORKGROUP"));
    alert
        .host(agent(raw, "agentComputerName"))
        .entity(
            EntityKind::User,
            qualified_user(domain, agent(raw, "agentLastLoggedInUserName")).as_deref(),
        )
        .entity(EntityKind::Ip, agent(raw, "externalIp"));
    for address in [agent(raw, "agentIpV4"), agent(raw, "agentIp")]
        .into_iter()
        .flatten()
    {
        for address in all_ips(address) {
            alert.entity(EntityKind::Ip, Some(&address));
        }
    }
    Ok(alert.finish())
}

/// The analyst's verdict first, then the engine's confidence.
fn verdict(raw: &Value, confidence_level: Option<&str>) -> Option<SourceVerdict> {
    let analyst = threat(raw, "analystVerdict").map(str::to_ascii_lowercase);
    match analyst.as_deref() {
        Some("true_positive") => return Some(SourceVerdict::Malicious),
        Some("false_positive") => return Some(SourceVerdict::Benign),
        Some("suspicious") => return Some(SourceVerdict::Suspicious),
        _ => {}
    }
    if threat(raw, "mitigationStatus")
        .is_some_and(|status| status.eq_ignore_ascii_case("marked_as_benign"))
    {
        return Some(SourceVerdict::Benign);
    }
    match confidence_level {
        Some("malicious") => Some(SourceVerdict::Malicious),
        Some("suspicious") => Some(SourceVerdict::Suspicious),
        _ => None,
    }
}

/// Whether the agent stopped the threat: the overall status when given, else a
/// successful kill, quarantine, remediation or rollback.
fn action(raw: &Value) -> ActionTaken {
    if let Some(status) = threat(raw, "mitigationStatus") {
        return match status.to_ascii_lowercase().as_str() {
            "mitigated" => ActionTaken::Blocked,
            _ => ActionTaken::Observed,
        };
    }
    let stopped = array_at(raw, "mitigationStatus").iter().any(|step| {
        str_at(step, "action")
            .is_some_and(|action| STOPPING_ACTIONS.contains(&action.to_ascii_lowercase().as_str()))
            && str_at(step, "status").is_some_and(|status| status.eq_ignore_ascii_case("success"))
    });
    if stopped || bool_at(raw, "threatInfo.mitigatedPreemptively") == Some(true) {
        ActionTaken::Blocked
    } else {
        ActionTaken::Observed
    }
}

/// "T1003.001" out of "https://attack.mitre.org/techniques/T1003/001/".
fn technique_from_link(link: &str) -> Option<String> {
    let rest = link.split("/techniques/").nth(1)?;
    let mut parts = rest.split('/').filter(|part| !part.is_empty());
    let main = parts.next()?;
    Some(match parts.next() {
        Some(sub) if sub.len() == 3 => format!("{main}.{sub}"),
        _ => main.to_string(),
    })
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
        let raw: Value = serde_json::from_str(THREAT.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "sentinelone_threat");
        assert_eq!(parsed.title, "mimikatz.exe");
        assert_eq!(parsed.alert_type, "sentinelone:Malware:dynamic");
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        assert_eq!(
            parsed.create_time.to_rfc3339(),
            "2026-03-03T14:22:09.511204+00:00"
        );
        assert_eq!(
            parsed.origin_ticket_id.as_deref(),
            Some("2108455931402241077")
        );
        assert_eq!(parsed.tenant_label.as_deref(), Some("Example Corp"));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Blocked));
        assert_eq!(
            parsed.signals.source_verdict,
            Some(SourceVerdict::Malicious)
        );
        assert_eq!(parsed.signals.confidence, Some(90));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Credential Access"]);
        assert_eq!(parsed.signals.mitre_techniques, vec!["T1003.001"]);
        let process = parsed.signals.process.as_ref().unwrap();
        assert_eq!(process.name.as_deref(), Some("mimikatz.exe"));
        assert_eq!(process.parent_name.as_deref(), Some("powershell.exe"));
        assert_eq!(process.user.as_deref(), Some("CORP\\m.garcia"));
        assert!(has(&parsed, EntityKind::Host, "wks-0388"));
        assert!(has(&parsed, EntityKind::Ip, "10.20.31.88"));
        assert!(has(&parsed, EntityKind::User, "corp\\m.garcia"));
    }

    #[test]
    fn the_analyst_verdict_outranks_the_engine() {
        let cases = [
            (
                json!({"analystVerdict": "false_positive", "confidenceLevel": "malicious"}),
                Some(SourceVerdict::Benign),
            ),
            (
                json!({"analystVerdict": "true_positive", "confidenceLevel": "suspicious"}),
                Some(SourceVerdict::Malicious),
            ),
            (
                json!({"analystVerdict": "undefined", "confidenceLevel": "suspicious"}),
                Some(SourceVerdict::Suspicious),
            ),
            (
                json!({"analystVerdict": "undefined", "mitigationStatus": "marked_as_benign", "confidenceLevel": "malicious"}),
                Some(SourceVerdict::Benign),
            ),
            (json!({"analystVerdict": "undefined"}), None),
        ];
        for (info, expected) in cases {
            let raw = json!({"id": "1", "threatInfo": info, "agentRealtimeInfo": {}});
            let level = threat(&raw, "confidenceLevel").map(str::to_ascii_lowercase);
            assert_eq!(verdict(&raw, level.as_deref()), expected, "{raw}");
        }
    }

    #[test]
    fn mitigation_says_whether_the_threat_was_stopped() {
        let cases = [
            (
                json!({"threatInfo": {"mitigationStatus": "mitigated"}}),
                ActionTaken::Blocked,
            ),
            (
                json!({"threatInfo": {"mitigationStatus": "not_mitigated"}}),
                ActionTaken::Observed,
            ),
            (
                json!({"threatInfo": {"mitigationStatus": "marked_as_benign"}}),
                ActionTaken::Observed,
            ),
            (
                json!({"threatInfo": {}, "mitigationStatus": [{"action": "kill", "status": "success"}]}),
                ActionTaken::Blocked,
            ),
            (
                json!({"threatInfo": {}, "mitigationStatus": [{"action": "kill", "status": "failed"}]}),
                ActionTaken::Observed,
            ),
            (
                json!({"threatInfo": {"mitigatedPreemptively": true}}),
                ActionTaken::Blocked,
            ),
        ];
        for (raw, expected) in cases {
            assert_eq!(action(&raw), expected, "{raw}");
        }
    }

    #[test]
    fn the_flat_v2_0_item_reads_too() {
        let parsed = read(&json!({
            "id": "736969199273531999", "threatName": "invoice_viewer.exe", "classification": "Trojan",
            "agentComputerName": "WKS-0519", "agentIp": "10.20.45.19", "agentDomain": "CORP",
            "fileContentHash": "3395856ce81f2b7382dee72602f798b642f14140", "mitigationStatus": "mitigated",
            "filePath": "\\Device\\HarddiskVolume3\\Users\\l.brown\\Downloads\\invoice_viewer.exe",
            "createdAt": "2026-03-05T10:00:00.000000Z", "username": "CORP\\l.brown", "rank": 7
        }));
        assert_eq!(parsed.schema_key, "sentinelone_threat");
        assert_eq!(parsed.title, "invoice_viewer.exe");
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Blocked));
        assert!(has(
            &parsed,
            EntityKind::HashSha1,
            "3395856ce81f2b7382dee72602f798b642f14140"
        ));
        assert!(has(&parsed, EntityKind::Ip, "10.20.45.19"));
        assert!(has(&parsed, EntityKind::User, "corp\\l.brown"));
    }

    #[test]
    fn technique_ids_come_out_of_attack_links() {
        assert_eq!(
            technique_from_link("https://attack.mitre.org/techniques/T1003/001/").as_deref(),
            Some("T1003.001")
        );
        assert_eq!(
            technique_from_link("https://attack.mitre.org/techniques/T1059/").as_deref(),
            Some("T1059")
        );
        assert_eq!(technique_from_link("nonsense"), None);
    }

    #[test]
    fn other_shapes_are_not_sentinelone_threats() {
        assert!(!detect(&json!({"threatInfo": {"threatName": "x"}})));
        assert!(!detect(
            &json!({"threatName": "x", "agentComputerName": "y"})
        ));
        assert!(!detect(&json!({"agentRealtimeInfo": {}})));
    }

    #[test]
    fn hostile_input_never_panics() {
        // Unicode starts after eight ASCII bytes; see the note in crowdstrike.rs.
        let huge = format!("unicode:{}", "é".repeat(100_000));
        let hostile = [
            json!({"threatInfo": [], "agentRealtimeInfo": "x", "id": {"a": 1}}),
            json!({
                "id": huge.clone(),
                "threatInfo": {"threatName": huge.clone(), "filePath": huge.clone(), "sha1": 5,
                               "confidenceLevel": ["malicious"], "engines": [1, {}], "createdAt": huge.clone()},
                "agentRealtimeInfo": {"agentComputerName": huge.clone(), "agentDomain": 3},
                "agentDetectionInfo": {"agentIpV4": "unicode:🦀,🦀,10.0.0.1,,,", "externalIp": huge.clone()},
                "indicators": [null, {"tactics": "x"}, {"tactics": [{"techniques": [{"link": "/techniques/"}]}]}],
                "mitigationStatus": [1, "x", {"action": ["kill"]}]
            }),
            json!({"threatName": "unicode:日本語", "agentComputerName": "unicode:日本語", "classification": 1,
                   "fileContentHash": "unicode:日本語", "rank": "NaN"}),
        ];
        for raw in hostile {
            let _ = crate::parse_alert(None, &raw, chrono::Utc::now());
            let _ = crate::parse_alert(Some(THREAT.key), &raw, chrono::Utc::now());
        }
    }
}
