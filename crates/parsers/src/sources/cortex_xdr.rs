//! Palo Alto Networks Cortex XDR, through its public API (v1):
//!
//! - **Alerts**: one item of `reply.alerts` from `get_alerts` (event fields at the top
//!   level) or `get_alerts_multi_events` (event fields in `events[]`, the first event
//!   read): `alert_id`, `name`, `severity`, `source`, `action`/`action_pretty`, the
//!   `actor_process_*`, `causality_actor_*`, `action_process_*`, `action_file_*` and
//!   `action_*_ip` fields, `mitre_*_id_and_name` ("TA0006 - Credential Access"),
//!   `detection_timestamp` (ms), `resolution_status` and `case_id`/`incident_id`.
//! - **Incidents**: one item of `reply.incidents` from `get_incidents`, or the whole
//!   `get_incident_extra_data` reply (`{incident, alerts: {data}, network_artifacts,
//!   file_artifacts}`, with or without its `reply` envelope): `incident_id`,
//!   `description`, `status` (`resolved_false_positive`, ...), `creation_time` (ms),
//!   `hosts` ("name:agent-id"), `users`, `incident_sources`, `xdr_url`.
//!
//! Statuses are read by their words, so the `STATUS_060_RESOLVED_FALSE_POSITIVE` spelling
//! of newer tenants and the `resolved_false_positive` one of the incident API agree.

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, EntityKind, NetworkSignal, ParsedAlert, ProcessSignal,
    SourceVerdict,
};

use super::endpoint_common::{
    action_from_words, all_ips, direction, first_ip, owned, port_at, real_hash, some_network,
    some_process,
};
use crate::ParseError;
use crate::builder::{AlertBuilder, truncate};
use crate::json::{array_at, bool_at, first_str, first_text, str_at, strings_at};
use crate::registry::Schema;
use crate::time::first_time;

pub(crate) static ALERT: Schema = Schema {
    key: "cortex_xdr_alert",
    display_name: "Palo Alto Cortex XDR alert (API get_alerts)",
    source_label: "Cortex XDR",
    integration: "cortex_xdr",
    sample: include_str!("../../samples/cortex_xdr_alert.json"),
    detect: detect_alert,
    parse: parse_alert,
};

pub(crate) static INCIDENT: Schema = Schema {
    key: "cortex_xdr_incident",
    display_name: "Palo Alto Cortex XDR incident (API get_incidents / get_incident_extra_data)",
    source_label: "Cortex XDR",
    integration: "cortex_xdr",
    sample: include_str!("../../samples/cortex_xdr_incident.json"),
    detect: detect_incident,
    parse: parse_incident,
};

/// Alert sources whose alerts are about traffic rather than a host.
const NETWORK_SOURCES: &[&str] = &[
    "ngfw",
    "firewall",
    "network",
    "dns security",
    "url filtering",
];

fn detect_alert(raw: &Value) -> bool {
    first_text(raw, &["alert_id"]).is_some()
        && (raw.get("detection_timestamp").is_some() || raw.get("local_insert_ts").is_some())
        && [
            "action_pretty",
            "source",
            "events",
            "mitre_tactic_id_and_name",
            "host_name",
            "endpoint_id",
            "resolution_status",
        ]
        .iter()
        .any(|key| raw.get(*key).is_some())
}

fn detect_incident(raw: &Value) -> bool {
    incident_of(raw).is_some_and(|incident| {
        first_text(incident, &["incident_id"]).is_some()
            && incident.get("alert_id").is_none()
            && ["xdr_url", "incident_sources", "alert_count", "hosts"]
                .iter()
                .any(|key| incident.get(*key).is_some())
    })
}

/// The incident object: the extra-data reply's `incident`, or the item itself.
fn incident_of(raw: &Value) -> Option<&Value> {
    [
        crate::json::at(raw, "reply.incident"),
        raw.get("incident"),
        Some(raw),
    ]
    .into_iter()
    .flatten()
    .find(|candidate| candidate.is_object() && candidate.get("incident_id").is_some())
}

/// A field of an alert: at its top level (`get_alerts`) or in its first event
/// (`get_alerts_multi_events`).
fn field<'a>(alert: &'a Value, key: &str) -> Option<&'a str> {
    str_at(alert, key).or_else(|| {
        alert
            .get("events")
            .and_then(|events| events.get(0))
            .and_then(|event| str_at(event, key))
    })
}

/// A field that may be one string or a list of strings, from the alert or its event.
fn fields<'a>(alert: &'a Value, key: &str) -> Vec<&'a str> {
    let top = strings_at(alert, key);
    if !top.is_empty() {
        return top;
    }
    alert
        .get("events")
        .and_then(|events| events.get(0))
        .map(|event| strings_at(event, key))
        .unwrap_or_default()
}

fn parse_alert(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let alert_id = first_text(raw, &["alert_id"]);
    let name = str_at(raw, "name");
    if alert_id.is_none() && name.is_none() {
        return Err(ParseError::DoesNotFit {
            schema_key: ALERT.key,
            reason: "a Cortex XDR alert has an alert_id or a name".into(),
        });
    }
    alert
        .title(name)
        .title(str_at(raw, "description"))
        .alert_type(name.map(|name| format!("cortex_xdr:{name}")).as_deref())
        .create_time(first_time(
            raw,
            &[
                "detection_timestamp",
                "local_insert_ts",
                "events.0.event_timestamp",
            ],
        ))
        .start_time(first_time(
            raw,
            &["event_timestamp", "events.0.event_timestamp"],
        ))
        .severity(str_at(raw, "severity").map(severity_word))
        .ticket(alert_id, "alert_id", None)
        .description(str_at(raw, "description"));
    let host = field(raw, "host_name");
    let coalesce = first_text(raw, &["case_id", "incident_id"])
        .map(|incident| format!("incident:{incident}"))
        .or_else(|| name.map(|name| format!("{name}:{}", host.unwrap_or_default())));
    alert.coalesce_key(coalesce);

    let source = str_at(raw, "source");
    alert.signals.category = Some(category(source.into_iter(), str_at(raw, "category")));
    alert.signals.source_verdict =
        first_str(raw, &["resolution_status", "status"]).and_then(status_verdict);
    mitre(&mut alert, raw);
    alert.tag(str_at(raw, "category")).tag(source);
    if bool_at(raw, "starred") == Some(true) {
        alert.tag(Some("starred"));
    }
    for tag in strings_at(raw, "tags") {
        alert.tag(Some(tag));
    }
    let read = read_alert(&mut alert, raw);
    alert.signals.action = Some(read.action);
    alert.signals.process = read.process;
    alert.signals.network = read.network;
    Ok(alert.finish())
}

fn parse_incident(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let Some(incident) = incident_of(raw) else {
        return Err(ParseError::DoesNotFit {
            schema_key: INCIDENT.key,
            reason: "a Cortex XDR incident has an incident_id".into(),
        });
    };
    let incident_id = first_text(incident, &["incident_id"]);
    let alerts: &[Value] = {
        let nested = array_at(raw, "reply.alerts.data");
        if nested.is_empty() {
            let data = array_at(raw, "alerts.data");
            if data.is_empty() {
                array_at(raw, "alerts")
            } else {
                data
            }
        } else {
            nested
        }
    };
    let description = first_str(incident, &["manual_description", "description"]);
    let first_alert_name = alerts.iter().find_map(|item| str_at(item, "name"));
    alert
        .title(str_at(incident, "incident_name"))
        .title(description)
        .alert_type(
            first_alert_name
                .or_else(|| description.and_then(quoted_alert_name))
                .map(|name| format!("cortex_xdr:incident:{name}"))
                .as_deref(),
        )
        .alert_type(Some("cortex_xdr:incident"))
        .create_time(first_time(incident, &["creation_time", "detection_time"]))
        .start_time(first_time(incident, &["detection_time"]))
        .severity(first_str(incident, &["manual_severity", "severity"]).map(severity_word))
        .ticket(
            incident_id.clone(),
            "incident_id",
            str_at(incident, "xdr_url").map(str::to_string),
        )
        .coalesce_key(incident_id)
        .description(description);

    let sources = strings_at(incident, "incident_sources");
    alert.signals.category = Some(category(sources.iter().copied(), None));
    for list in [
        "mitre_tactics_ids_and_names",
        "mitre_techniques_ids_and_names",
    ] {
        // Some tenants swap the two lists; each entry is tried as both.
        for entry in strings_at(incident, list) {
            let (id, name) = split_id_and_name(entry);
            alert.tactic(Some(id)).tactic(name).technique(Some(id));
        }
    }
    for tag in sources
        .iter()
        .chain(strings_at(incident, "alert_categories").iter())
    {
        alert.tag(Some(tag));
    }
    if bool_at(incident, "starred") == Some(true) {
        alert.tag(Some("starred"));
    }
    if let Some(comment) = str_at(incident, "resolve_comment") {
        alert.tag(Some(&truncate(&format!("resolve_comment: {comment}"), 200)));
    }
    for host in strings_at(incident, "hosts") {
        // "wks-0231:8e2f0c..." is the host name and its agent id.
        alert.host(host.split(':').next());
    }
    for user in strings_at(incident, "users") {
        alert.entity(EntityKind::User, Some(user));
    }
    // The incident's owner: whom to ask about it, and part of what it names.
    if let Some(owner) = str_at(incident, "assigned_user_mail") {
        alert.entity(EntityKind::Email, Some(owner));
        alert.signals.handlers.push(owner.to_lowercase());
    }

    let mut actions = Vec::new();
    for item in alerts.iter().take(50) {
        mitre(&mut alert, item);
        let read = read_alert(&mut alert, item);
        actions.push(read.action);
        if alert.signals.process.is_none() {
            alert.signals.process = read.process;
        }
        if alert.signals.network.is_none() {
            alert.signals.network = read.network;
        }
    }
    alert.signals.action = Some(
        if !actions.is_empty() && actions.iter().all(|action| *action == ActionTaken::Blocked) {
            ActionTaken::Blocked
        } else {
            ActionTaken::Observed
        },
    );

    let mut wildfire_malware = false;
    for artifact in artifacts(raw, "file_artifacts") {
        let kind = if bool_at(artifact, "is_process") == Some(true) {
            EntityKind::Process
        } else {
            EntityKind::FilePath
        };
        alert
            .hash(real_hash(str_at(artifact, "file_sha256")).as_deref())
            .entity(kind, str_at(artifact, "file_name"));
        wildfire_malware |= str_at(artifact, "file_wildfire_verdict")
            .is_some_and(|verdict| verdict.eq_ignore_ascii_case("malware"));
    }
    for artifact in artifacts(raw, "network_artifacts") {
        alert
            .entity(EntityKind::Ip, str_at(artifact, "network_remote_ip"))
            .entity(EntityKind::Domain, str_at(artifact, "network_domain"));
    }
    alert.signals.source_verdict = str_at(incident, "status")
        .and_then(status_verdict)
        .or(wildfire_malware.then_some(SourceVerdict::Malicious));
    Ok(alert.finish())
}

/// What one alert says about the process, the traffic and the action; its hosts, users,
/// files and hashes go straight into the alert's entities.
struct AlertRead {
    process: Option<ProcessSignal>,
    network: Option<NetworkSignal>,
    action: ActionTaken,
}

fn read_alert(alert: &mut AlertBuilder, item: &Value) -> AlertRead {
    let user = first_str_of(
        item,
        &[
            "user_name",
            "actor_effective_username",
            "os_actor_effective_username",
        ],
    );
    let actor = |key: &str| field(item, &format!("actor_process_{key}"));
    let child = |key: &str| field(item, &format!("action_process_{key}"));
    let causality = |key: &str| field(item, &format!("causality_actor_process_{key}"));
    let process = if let Some(child_name) = child("image_name") {
        // A process-execution alert: the new process is what it is about, the actor
        // launched it.
        ProcessSignal {
            name: owned(Some(child_name)),
            path: owned(child("image_path")),
            command_line: owned(child("image_command_line")),
            decoded_command: None,
            parent_name: owned(actor("image_name")),
            parent_command_line: owned(actor("command_line")),
            user: owned(user),
            sha256: real_hash(child("image_sha256")),
            sha1: None,
            md5: real_hash(child("image_md5")),
            signer: owned(child("signature_vendor")),
        }
    } else {
        let parent = causality("image_name").filter(|parent| Some(*parent) != actor("image_name"));
        ProcessSignal {
            name: owned(actor("image_name")),
            path: owned(actor("image_path")),
            command_line: owned(actor("command_line")),
            decoded_command: None,
            parent_name: owned(parent),
            parent_command_line: owned(parent.and(causality("command_line"))),
            user: owned(user),
            sha256: real_hash(actor("image_sha256")),
            sha1: None,
            md5: real_hash(actor("image_md5")),
            signer: owned(actor("signature_vendor")),
        }
    };
    alert.host(field(item, "host_name"));
    for address in fields(item, "host_ip") {
        for address in all_ips(address) {
            alert.entity(EntityKind::Ip, Some(&address));
        }
    }
    alert
        .entity(EntityKind::User, user)
        .entity(EntityKind::Process, causality("image_name"))
        .sweep(causality("command_line"))
        .hash(real_hash(causality("image_sha256")).as_deref())
        .hash(real_hash(actor("image_sha256")).as_deref())
        .entity(EntityKind::FilePath, field(item, "action_file_path"))
        .entity(EntityKind::Domain, field(item, "dns_query_name"))
        .entity(EntityKind::Domain, field(item, "action_external_hostname"))
        .hash(real_hash(field(item, "action_file_sha256")).as_deref())
        .hash(real_hash(field(item, "action_file_md5")).as_deref());

    let source_ip = fields(item, "action_local_ip")
        .into_iter()
        .find_map(|ip| first_ip(Some(ip)));
    let destination_ip = fields(item, "action_remote_ip")
        .into_iter()
        .find_map(|ip| first_ip(Some(ip)));
    let events = item
        .get("events")
        .and_then(|events| events.get(0))
        .unwrap_or(&Value::Null);
    let network = some_network(NetworkSignal {
        direction: direction(source_ip.as_deref(), destination_ip.as_deref()),
        source_port: port_at(item, "action_local_port")
            .or_else(|| port_at(events, "action_local_port")),
        destination_port: port_at(item, "action_remote_port")
            .or_else(|| port_at(events, "action_remote_port")),
        source_ip,
        destination_ip,
        hostname: owned(first_str_of(
            item,
            &[
                "action_external_hostname",
                "dns_query_name",
                "dst_action_external_hostname",
                "fw_url_domain",
            ],
        )),
        application_protocol: owned(field(item, "fw_app_id")).map(|app| app.to_ascii_lowercase()),
        ..NetworkSignal::default()
    });
    let action = first_str_of(item, &["action", "action_pretty"])
        .map_or(ActionTaken::Observed, action_from_words);
    AlertRead {
        process: some_process(process),
        network,
        action,
    }
}

/// The first of several alert fields that is present.
fn first_str_of<'a>(item: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|key| field(item, key))
}

/// The `data` rows of an extra-data artifact list, with or without the `reply` envelope.
fn artifacts<'a>(raw: &'a Value, name: &str) -> impl Iterator<Item = &'a Value> {
    let nested = array_at(raw, &format!("reply.{name}.data"));
    let rows = if nested.is_empty() {
        array_at(raw, &format!("{name}.data"))
    } else {
        nested
    };
    rows.iter().take(50)
}

/// ATT&CK tactics and techniques of an alert, written "TA0006 - Credential Access".
fn mitre(alert: &mut AlertBuilder, item: &Value) {
    for entry in fields(item, "mitre_tactic_id_and_name") {
        let (id, name) = split_id_and_name(entry);
        alert.tactic(Some(id)).tactic(name);
    }
    for entry in fields(item, "mitre_technique_id_and_name") {
        alert.technique(Some(split_id_and_name(entry).0));
    }
}

/// "T1003.001 - OS Credential Dumping: LSASS Memory" as its id and its name.
fn split_id_and_name(entry: &str) -> (&str, Option<&str>) {
    match entry.split_once(" - ") {
        Some((id, name)) => (id.trim(), Some(name.trim())),
        None => (entry.trim(), None),
    }
}

/// The alert name Cortex quotes in an incident's generated description
/// ("'Credential Dumping' generated by XDR Agent detected on host ...").
fn quoted_alert_name(description: &str) -> Option<&str> {
    let rest = description.strip_prefix('\'')?;
    let (name, _) = rest.split_once('\'')?;
    (!name.trim().is_empty()).then_some(name.trim())
}

/// The severity word without the `SEV_040_` prefix newer tenants write.
fn severity_word(text: &str) -> &str {
    text.rsplit('_').next().unwrap_or(text)
}

/// What the analysts' resolution says about the alert or incident.
fn status_verdict(status: &str) -> Option<SourceVerdict> {
    let status = status.to_ascii_uppercase();
    if status.contains("FALSE_POSITIVE")
        || status.contains("SECURITY_TESTING")
        || status.contains("KNOWN_ISSUE")
    {
        Some(SourceVerdict::Benign)
    } else if status.contains("TRUE_POSITIVE") || status.contains("THREAT_HANDLED") {
        Some(SourceVerdict::Malicious)
    } else {
        None
    }
}

/// Network alerts come from the firewall and DNS products; identity analytics from the
/// identity modules; everything else is about an endpoint.
fn category<'a>(
    sources: impl Iterator<Item = &'a str>,
    alert_category: Option<&str>,
) -> AlertCategory {
    let sources: Vec<String> = sources.map(str::to_ascii_lowercase).collect();
    let is = |words: &[&str]| {
        !sources.is_empty()
            && sources
                .iter()
                .all(|source| words.iter().any(|word| source.contains(word)))
    };
    if is(NETWORK_SOURCES) {
        AlertCategory::Network
    } else if is(&["identity"])
        || alert_category.is_some_and(|category| category.to_ascii_lowercase().contains("identity"))
    {
        AlertCategory::Identity
    } else {
        AlertCategory::Endpoint
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
    fn the_alert_sample_reads_completely() {
        let raw: Value = serde_json::from_str(ALERT.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "cortex_xdr_alert");
        assert_eq!(parsed.title, "Certutil downloads a file from the internet");
        assert_eq!(
            parsed.alert_type,
            "cortex_xdr:Certutil downloads a file from the internet"
        );
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        assert_eq!(
            parsed.create_time.to_rfc3339(),
            "2026-03-04T16:41:07.312+00:00"
        );
        assert_eq!(
            parsed.coalesce_key.as_deref(),
            Some("cortex_xdr_alert:incident:4127")
        );
        assert_eq!(parsed.signals.action, Some(ActionTaken::Observed));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Command and Control"]);
        assert_eq!(parsed.signals.mitre_techniques, vec!["T1105"]);
        let process = parsed.signals.process.as_ref().unwrap();
        assert_eq!(process.name.as_deref(), Some("certutil.exe"));
        assert_eq!(process.parent_name.as_deref(), Some("cmd.exe"));
        assert_eq!(process.user.as_deref(), Some("CORP\\m.garcia"));
        let network = parsed.signals.network.as_ref().unwrap();
        assert_eq!(network.hostname.as_deref(), Some("cdn.update-check.net"));
        assert_eq!(network.destination_port, Some(80));
        assert!(has(&parsed, EntityKind::Host, "wks-0388"));
        assert!(has(&parsed, EntityKind::Domain, "cdn.update-check.net"));
        assert!(has(&parsed, EntityKind::Ip, "203.0.113.50"));
    }

    #[test]
    fn the_incident_sample_reads_completely() {
        let raw: Value = serde_json::from_str(INCIDENT.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "cortex_xdr_incident");
        assert_eq!(
            parsed.alert_type,
            "cortex_xdr:incident:Memory dumping with ProcDump"
        );
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        assert_eq!(parsed.origin_ticket_id.as_deref(), Some("4133"));
        assert_eq!(
            parsed.origin_ticket_url.as_deref(),
            Some("https://example-corp.xdr.eu.paloaltonetworks.com/incident-view?caseId=4133")
        );
        assert_eq!(parsed.signals.action, Some(ActionTaken::Blocked));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Credential Access"]);
        let process = parsed.signals.process.as_ref().unwrap();
        assert_eq!(process.name.as_deref(), Some("procdump64.exe"));
        assert!(has(&parsed, EntityKind::Host, "fs-01"));
        assert!(has(&parsed, EntityKind::User, "corp\\m.garcia"));
    }

    #[test]
    fn an_incident_without_extra_data_still_reads_and_names_its_alert() {
        let parsed = read(&json!({
            "incident_id": "88", "incident_name": null, "creation_time": 1772600000000_u64,
            "status": "resolved_false_positive", "severity": "medium",
            "description": "'Suspicious PowerShell Command Line' generated by XDR BIOC detected on host wks-0519 involving user corp\\l.brown",
            "hosts": ["wks-0519:0f3c9a2e1b7d4c58a6e9f1b3d5c7a9e2"], "users": ["corp\\l.brown"],
            "incident_sources": ["XDR BIOC"], "alert_count": 1,
            "mitre_tactics_ids_and_names": ["TA0002 - Execution"]
        }));
        assert_eq!(
            parsed.alert_type,
            "cortex_xdr:incident:Suspicious PowerShell Command Line"
        );
        assert_eq!(parsed.signals.source_verdict, Some(SourceVerdict::Benign));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Execution"]);
        assert!(has(&parsed, EntityKind::Host, "wks-0519"));
        assert!(has(&parsed, EntityKind::User, "corp\\l.brown"));
    }

    #[test]
    fn the_single_event_shape_and_newer_spellings_read_too() {
        let parsed = read(&json!({
            "alert_id": "9001", "name": "Behavioral Threat", "severity": "SEV_040_HIGH",
            "detection_timestamp": 1772600000000_u64, "source": "XDR Agent",
            "action": "BLOCKED", "action_pretty": "Prevented (Blocked)",
            "host_name": "wks-0519", "host_ip": "10.20.45.19",
            "actor_process_image_name": "wscript.exe", "actor_process_command_line": "wscript.exe invoice.js",
            "causality_actor_process_image_name": "outlook.exe",
            "resolution_status": "STATUS_060_RESOLVED_FALSE_POSITIVE"
        }));
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Blocked));
        assert_eq!(parsed.signals.source_verdict, Some(SourceVerdict::Benign));
        let process = parsed.signals.process.clone().unwrap();
        assert_eq!(process.name.as_deref(), Some("wscript.exe"));
        assert_eq!(process.parent_name.as_deref(), Some("outlook.exe"));
        assert!(has(&parsed, EntityKind::Ip, "10.20.45.19"));
    }

    #[test]
    fn statuses_read_the_same_in_both_spellings() {
        let cases = [
            ("resolved_false_positive", Some(SourceVerdict::Benign)),
            (
                "STATUS_060_RESOLVED_FALSE_POSITIVE",
                Some(SourceVerdict::Benign),
            ),
            ("resolved_security_testing", Some(SourceVerdict::Benign)),
            ("resolved_true_positive", Some(SourceVerdict::Malicious)),
            (
                "STATUS_090_RESOLVED_TRUE_POSITIVE",
                Some(SourceVerdict::Malicious),
            ),
            ("under_investigation", None),
            ("new", None),
        ];
        for (status, expected) in cases {
            assert_eq!(status_verdict(status), expected, "{status}");
        }
    }

    #[test]
    fn network_product_alerts_are_network_alerts() {
        assert_eq!(
            category(["PAN NGFW"].into_iter(), None),
            AlertCategory::Network
        );
        assert_eq!(
            category(["PAN NGFW", "XDR Agent"].into_iter(), None),
            AlertCategory::Endpoint
        );
        assert_eq!(category(std::iter::empty(), None), AlertCategory::Endpoint);
    }

    #[test]
    fn other_shapes_are_not_cortex_alerts_or_incidents() {
        assert!(!detect_alert(&json!({"alert_id": "1"})));
        assert!(!detect_alert(&json!({"alert_id": "1", "source": "x"})));
        assert!(!detect_incident(&json!({"incident_id": "1"})));
        assert!(!detect_incident(
            &json!({"incident_id": "1", "alert_id": "2", "hosts": ["a"]})
        ));
        assert!(detect_incident(
            &json!({"reply": {"incident": {"incident_id": "1", "xdr_url": "https://x"}}})
        ));
    }

    #[test]
    fn hostile_input_never_panics() {
        // Unicode starts after eight ASCII bytes; see the note in crowdstrike.rs.
        let huge = format!("unicode:{}", "é".repeat(100_000));
        let hostile = [
            json!({"alert_id": [], "detection_timestamp": "x", "source": {}, "events": "x", "host_ip": [1, null],
                   "mitre_tactic_id_and_name": [null, 3], "action_remote_port": 99999999, "severity": "_"}),
            json!({"alert_id": huge.clone(), "name": huge.clone(), "detection_timestamp": huge.clone(), "source": huge.clone(),
                   "events": [{"actor_process_image_name": huge.clone(), "action_remote_ip": huge.clone(),
                               "action_process_image_name": "unicode:日本語"}],
                   "mitre_tactic_id_and_name": huge.clone(), "severity": huge.clone()}),
            json!({"reply": {"incident": {"incident_id": huge.clone(), "hosts": [huge.clone(), ":", ""], "users": "x",
                                          "xdr_url": huge.clone(), "description": "'", "alert_count": "🦀"},
                             "alerts": {"data": [null, 1, {"events": [null]}]},
                             "file_artifacts": {"data": "x"}, "network_artifacts": [1]}}),
        ];
        for raw in hostile {
            let _ = crate::parse_alert(None, &raw, chrono::Utc::now());
            for key in [ALERT.key, INCIDENT.key] {
                let _ = crate::parse_alert(Some(key), &raw, chrono::Utc::now());
            }
        }
    }
}
