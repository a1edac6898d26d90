//! CrowdStrike Falcon, in its two alert shapes:
//!
//! - **Alerts API v2** (`POST /alerts/entities/alerts/v2`): one item of `resources`, the
//!   unified alert of every Falcon product (`product`: epp, idp, xdr, overwatch, ...), with
//!   `composite_id`, `aggregate_id`, `device {...}`, `parent_details`, `mitre_attack[]`,
//!   `pattern_disposition_details` and a 0-100 `severity` (bands: 90 critical, 70 high,
//!   50 medium, 20 low, below informational).
//! - **Event Streams** `DetectionSummaryEvent` (and its successor
//!   `EppDetectionSummaryEvent`): `{metadata: {customerIDString, eventType,
//!   eventCreationTime (ms)}, event: {...}}`, PascalCase fields. The legacy event has
//!   `DetectId`/`DetectName`/`ComputerName` and a 1-5 `Severity`; the EPP one has
//!   `CompositeId`/`Name`/`Hostname` and a 0-100 `Severity`. Both are read.
//!
//! Whether Falcon stopped the activity comes from the pattern disposition: the flags
//! object when present, else the `pattern_disposition` bitmask. A kill or block flag
//! with `policy_disabled` set means "would have been blocked": nothing was stopped.

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, EntityKind, NetworkSignal, ParsedAlert, ProcessSignal,
    SourceVerdict,
};

use super::endpoint_common::{
    action_from_words, direction, file_name, owned, port_at, qualified_user, real_hash,
    some_network, some_process,
};
use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::json::{array_at, bool_at, f64_at, first_str, first_text, str_at, strings_at, u64_at};
use crate::registry::Schema;
use crate::time::{first_time, time_at};

pub(crate) static ALERT: Schema = Schema {
    key: "crowdstrike_falcon_alert",
    display_name: "CrowdStrike Falcon alert (Alerts API v2)",
    source_label: "CrowdStrike Falcon",
    integration: "crowdstrike_falcon",
    sample: include_str!("../../samples/crowdstrike_falcon_alert.json"),
    detect: detect_alert,
    parse: parse_alert,
};

pub(crate) static DETECTION_SUMMARY: Schema = Schema {
    key: "crowdstrike_falcon_detection_summary",
    display_name: "CrowdStrike Falcon DetectionSummaryEvent (Event Streams)",
    source_label: "CrowdStrike Falcon",
    integration: "crowdstrike_falcon",
    sample: include_str!("../../samples/crowdstrike_falcon_detection_summary.json"),
    detect: detect_summary,
    parse: parse_summary,
};

/// The pattern-disposition flags that mean Falcon stopped something, by their Alerts API
/// name, their Event Streams name, and their bit in the `pattern_disposition` value.
const STOPPING_FLAGS: &[(&str, &str, u64)] = &[
    ("kill_process", "KillProcess", 16),
    ("kill_subprocess", "KillSubProcess", 32),
    ("quarantine_machine", "QuarantineMachine", 64),
    ("quarantine_file", "QuarantineFile", 128),
    ("kill_parent", "KillParent", 512),
    ("operation_blocked", "OperationBlocked", 1024),
    ("process_blocked", "ProcessBlocked", 2048),
    (
        "registry_operation_blocked",
        "RegistryOperationBlocked",
        4096,
    ),
    ("fs_operation_blocked", "FsOperationBlocked", 32768),
    (
        "handle_operation_downgraded",
        "HandleOperationDowngraded",
        65536,
    ),
    ("suspend_process", "SuspendProcess", 524_288),
    ("suspend_parent", "SuspendParent", 1_048_576),
];
/// Set when the prevention policy was off: the flags say what *would* have happened.
const POLICY_DISABLED: (&str, &str, u64) = ("policy_disabled", "PolicyDisabled", 256);
/// Set when Falcon tried to kill the process and failed.
const KILL_ACTION_FAILED: (&str, &str, u64) = ("kill_action_failed", "KillActionFailed", 131_072);

fn detect_alert(raw: &Value) -> bool {
    str_at(raw, "composite_id").is_some()
        && (raw.get("device").is_some_and(Value::is_object)
            || str_at(raw, "falcon_host_link").is_some()
            || str_at(raw, "aggregate_id").is_some()
            || raw.get("pattern_disposition_details").is_some())
}

fn detect_summary(raw: &Value) -> bool {
    str_at(raw, "metadata.eventType").is_some_and(|event_type| {
        event_type.eq_ignore_ascii_case("DetectionSummaryEvent")
            || event_type.eq_ignore_ascii_case("EppDetectionSummaryEvent")
    }) && raw.get("event").is_some_and(Value::is_object)
}

fn parse_alert(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let composite_id = first_text(raw, &["composite_id", "id"]);
    let name = first_str(raw, &["name", "display_name"]);
    if composite_id.is_none() && name.is_none() {
        return Err(ParseError::DoesNotFit {
            schema_key: ALERT.key,
            reason: "a Falcon alert has a composite_id or a name".into(),
        });
    }
    alert
        .title(first_str(raw, &["display_name", "name", "description"]))
        .alert_type(
            first_text(raw, &["pattern_id"])
                .map(|pattern| format!("crowdstrike:pattern:{pattern}"))
                .as_deref(),
        )
        .alert_type(name.map(|name| format!("crowdstrike:{name}")).as_deref())
        .create_time(first_time(
            raw,
            &["created_timestamp", "timestamp", "crawled_timestamp"],
        ))
        .start_time(first_time(
            raw,
            &["timestamp", "context_timestamp", "incident.start"],
        ))
        .severity(str_at(raw, "severity_name"))
        .severity(f64_at(raw, "severity").map(falcon_score_word))
        .ticket(
            composite_id.clone(),
            "composite_id",
            str_at(raw, "falcon_host_link").and_then(link),
        )
        .coalesce_key(first_text(raw, &["aggregate_id", "incident.id"]).or(composite_id))
        .tenant(first_text(raw, &["cid", "device.cid"]), None)
        .description(str_at(raw, "description"));

    let product = str_at(raw, "product").map(str::to_ascii_lowercase);
    alert.source_label(product.as_deref().and_then(product_label));
    alert.signals.category = Some(match product.as_deref() {
        Some("idp") => AlertCategory::Identity,
        Some("cwpp" | "cspm" | "cloud") => AlertCategory::Cloud,
        _ => AlertCategory::Endpoint,
    });

    mitre(
        &mut alert,
        raw,
        ["tactic", "tactic_id", "technique", "technique_id"],
    );
    for entry in array_at(raw, "mitre_attack") {
        mitre(
            &mut alert,
            entry,
            ["tactic", "tactic_id", "technique", "technique_id"],
        );
    }
    for tag in ["scenario", "objective", "product", "type"] {
        alert.tag(str_at(raw, tag));
    }
    for tag in strings_at(raw, "tags") {
        alert.tag(Some(tag));
    }

    alert.signals.action = Some(disposition(
        raw.get("pattern_disposition_details"),
        u64_at(raw, "pattern_disposition"),
        str_at(raw, "pattern_disposition_description"),
        0,
    ));
    alert.signals.source_verdict = falcon_verdict(raw);
    alert.signals.confidence =
        u64_at(raw, "confidence").and_then(|confidence| u8::try_from(confidence.min(100)).ok());

    let path = str_at(raw, "filepath");
    alert.signals.process = some_process(ProcessSignal {
        name: owned(str_at(raw, "filename").or_else(|| path.and_then(file_name))),
        path: owned(path),
        command_line: owned(str_at(raw, "cmdline")),
        decoded_command: None,
        parent_name: owned(
            str_at(raw, "parent_details.filename")
                .or_else(|| str_at(raw, "parent_details.filepath").and_then(file_name)),
        ),
        parent_command_line: owned(first_str(
            raw,
            &["parent_details.cmdline", "parent_details.parent_cmdline"],
        )),
        user: qualified_user(str_at(raw, "logon_domain"), str_at(raw, "user_name")),
        sha256: real_hash(str_at(raw, "sha256")),
        sha1: real_hash(str_at(raw, "sha1")),
        md5: real_hash(str_at(raw, "md5")),
        signer: None,
    });
    alert.signals.network = network_accesses(
        raw,
        "network_accesses",
        [
            "local_address",
            "local_port",
            "remote_address",
            "remote_port",
            "protocol",
        ],
    );

    // Identity Protection alerts name the account and both endpoints of the attempt.
    let identity_user = first_str(
        raw,
        &["source_account_upn", "source_account_sam_account_name"],
    );
    // The account as Falcon writes it (`user_name`), beside the domain-qualified form the
    // process signal carries: an analyst searches for the name the console shows.
    alert
        .entity(EntityKind::User, str_at(raw, "user_name"))
        .entity(EntityKind::User, identity_user)
        .host(str_at(raw, "source_endpoint_host_name"))
        .host(str_at(raw, "target_endpoint_host_name"))
        .entity(
            EntityKind::Ip,
            first_str(
                raw,
                &["source_endpoint_ip_address", "source_endpoint_address_ip4"],
            ),
        );
    alert
        .host(str_at(raw, "device.hostname"))
        .entity(EntityKind::Ip, str_at(raw, "device.local_ip"))
        .entity(EntityKind::Ip, str_at(raw, "device.external_ip"))
        .hash(real_hash(str_at(raw, "parent_details.sha256")).as_deref())
        .entity(
            EntityKind::Process,
            str_at(raw, "grandparent_details.filename"),
        )
        .sweep(str_at(raw, "grandparent_details.cmdline"));
    indicator(
        &mut alert,
        str_at(raw, "ioc_type"),
        str_at(raw, "ioc_value"),
    );
    for written in array_at(raw, "files_written").iter().take(10) {
        let directory = str_at(written, "filepath").unwrap_or_default();
        if let Some(name) = str_at(written, "filename") {
            alert.entity(EntityKind::FilePath, Some(&format!("{directory}{name}")));
        }
    }
    Ok(alert.finish())
}

fn parse_summary(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let event = raw.get("event").unwrap_or(&Value::Null);
    let detect_id = first_text(event, &["CompositeId", "DetectId"]);
    let name = first_str(event, &["DetectName", "Name"]);
    if detect_id.is_none() && name.is_none() {
        return Err(ParseError::DoesNotFit {
            schema_key: DETECTION_SUMMARY.key,
            reason: "a detection summary event has event.DetectId, event.CompositeId or a \
                     detection name"
                .into(),
        });
    }
    let id_label = if str_at(event, "CompositeId").is_some() {
        "CompositeId"
    } else {
        "DetectId"
    };
    alert
        .title(name)
        .title(first_str(event, &["DetectDescription", "Description"]))
        .alert_type(
            first_text(event, &["PatternId"])
                .map(|pattern| format!("crowdstrike:pattern:{pattern}"))
                .as_deref(),
        )
        .alert_type(name.map(|name| format!("crowdstrike:{name}")).as_deref())
        .create_time(time_at(raw, "metadata.eventCreationTime"))
        .start_time(time_at(event, "ProcessStartTime"))
        .severity(str_at(event, "SeverityName"))
        .severity(f64_at(event, "Severity").map(|severity| {
            // The legacy event counts 1 (informational) to 5 (critical); the EPP one
            // uses the Alerts API's 0-100 scale.
            if severity <= 5.0 {
                legacy_severity_word(severity)
            } else {
                falcon_score_word(severity)
            }
        }))
        .ticket(
            detect_id.clone(),
            id_label,
            str_at(event, "FalconHostLink").and_then(link),
        )
        .coalesce_key(first_text(event, &["AggregateId"]).or(detect_id))
        .tenant(first_text(raw, &["metadata.customerIDString"]), None)
        .description(first_str(event, &["DetectDescription", "Description"]));
    alert.signals.category = Some(AlertCategory::Endpoint);

    mitre(
        &mut alert,
        event,
        ["Tactic", "TacticId", "Technique", "TechniqueId"],
    );
    for entry in array_at(event, "MitreAttack") {
        mitre(
            &mut alert,
            entry,
            ["Tactic", "TacticID", "Technique", "TechniqueID"],
        );
        mitre(
            &mut alert,
            entry,
            ["Tactic", "TacticId", "Technique", "TechniqueId"],
        );
    }
    for tag in ["Objective", "Type", "SourceProducts"] {
        alert.tag(str_at(event, tag));
    }

    alert.signals.action = Some(disposition(
        event.get("PatternDispositionFlags"),
        u64_at(event, "PatternDispositionValue"),
        str_at(event, "PatternDispositionDescription"),
        1,
    ));

    let file_name_field = str_at(event, "FileName");
    alert.signals.process = some_process(ProcessSignal {
        name: owned(file_name_field.or_else(|| str_at(event, "FilePath").and_then(file_name))),
        path: owned(full_path(str_at(event, "FilePath"), file_name_field).as_deref()),
        command_line: owned(str_at(event, "CommandLine")),
        decoded_command: None,
        parent_name: owned(str_at(event, "ParentImageFileName").and_then(file_name)),
        parent_command_line: owned(str_at(event, "ParentCommandLine")),
        user: qualified_user(str_at(event, "LogonDomain"), str_at(event, "UserName")),
        sha256: real_hash(str_at(event, "SHA256String")),
        sha1: real_hash(str_at(event, "SHA1String")),
        md5: real_hash(str_at(event, "MD5String")),
        signer: None,
    });
    alert.signals.network = network_accesses(
        event,
        "NetworkAccesses",
        [
            "LocalAddress",
            "LocalPort",
            "RemoteAddress",
            "RemotePort",
            "Protocol",
        ],
    );

    alert
        .host(first_str(event, &["ComputerName", "Hostname"]))
        .entity(EntityKind::Ip, str_at(event, "LocalIP"))
        .entity(
            EntityKind::Process,
            first_str(
                event,
                &["GrandparentImageFileName", "GrandParentImageFileName"],
            )
            .and_then(file_name),
        )
        .sweep(first_str(
            event,
            &["GrandparentCommandLine", "GrandParentCommandLine"],
        ))
        .entity(EntityKind::FilePath, str_at(event, "AssociatedFile"));
    indicator(
        &mut alert,
        str_at(event, "IOCType"),
        str_at(event, "IOCValue"),
    );
    for written in array_at(event, "FilesWritten").iter().take(10) {
        let directory = str_at(written, "FilePath").unwrap_or_default();
        if let Some(name) = str_at(written, "FileName") {
            alert.entity(EntityKind::FilePath, Some(&format!("{directory}{name}")));
        }
    }
    Ok(alert.finish())
}

/// Adds the tactic and technique an object names, by the given field names: ATT&CK ones
/// become MITRE signals, Falcon's own ("Malware", "Machine Learning", "Falcon Overwatch")
/// become tags, since they still say what kind of detection it is.
fn mitre(
    alert: &mut AlertBuilder,
    object: &Value,
    [tactic, tactic_id, technique, technique_id]: [&str; 4],
) {
    let tactic_name = str_at(object, tactic);
    let before = alert.signals.mitre_tactics.len();
    alert
        .tactic(str_at(object, tactic_id))
        .tactic(tactic_name)
        .technique(str_at(object, technique_id));
    let is_attack = alert.signals.mitre_tactics.len() > before
        || tactic_name.is_some_and(|name| sleuth_domain::mitre::canonical_tactic(name).is_some());
    if !is_attack && let Some(tactic_name) = tactic_name {
        let tag = match str_at(object, technique) {
            Some(technique) => format!("{tactic_name}: {technique}"),
            None => tactic_name.to_string(),
        };
        alert.tag(Some(&tag));
    }
}

/// What Falcon did, from the disposition flags (`flag_style` 0: snake_case names, 1:
/// PascalCase), the bitmask, or, failing both, the disposition's description.
fn disposition(
    flags: Option<&Value>,
    value: Option<u64>,
    description: Option<&str>,
    flag_style: usize,
) -> ActionTaken {
    let flags = flags.filter(|flags| flags.is_object());
    if flags.is_none() && value.is_none() {
        return description.map_or(ActionTaken::Observed, action_from_words);
    }
    let is_set = |(snake, pascal, bit): (&str, &str, u64)| {
        let name = if flag_style == 0 { snake } else { pascal };
        flags
            .and_then(|flags| bool_at(flags, name))
            .unwrap_or(false)
            || value.is_some_and(|value| value & bit != 0)
    };
    let stopped = STOPPING_FLAGS.iter().copied().any(is_set);
    if stopped && !is_set(POLICY_DISABLED) && !is_set(KILL_ACTION_FAILED) {
        ActionTaken::Blocked
    } else {
        ActionTaken::Observed
    }
}

/// The verdict an analyst recorded on the alert: the legacy Detects API statuses
/// (`true_positive`, `false_positive`, `ignored`) or a tag saying so.
fn falcon_verdict(raw: &Value) -> Option<SourceVerdict> {
    let mut words: Vec<String> = strings_at(raw, "tags")
        .into_iter()
        .map(str::to_ascii_lowercase)
        .collect();
    if let Some(status) = str_at(raw, "status") {
        words.push(status.to_ascii_lowercase());
    }
    let said = |needle: &str| {
        words
            .iter()
            .any(|word| word.replace([' ', '-'], "_").contains(needle))
    };
    if said("false_positive") || said("benign") || words.iter().any(|word| word == "ignored") {
        Some(SourceVerdict::Benign)
    } else if said("true_positive") {
        Some(SourceVerdict::Malicious)
    } else {
        None
    }
}

/// The first remote connection the detection recorded, and every remote address as an
/// entity.
fn network_accesses(
    object: &Value,
    path: &str,
    [local, local_port, remote, remote_port, protocol]: [&str; 5],
) -> Option<NetworkSignal> {
    let access = array_at(object, path)
        .iter()
        .find(|access| str_at(access, remote).is_some())?;
    let source_ip = str_at(access, local).and_then(crate::entities::normalize_ip);
    let destination_ip = str_at(access, remote).and_then(crate::entities::normalize_ip);
    some_network(NetworkSignal {
        direction: direction(source_ip.as_deref(), destination_ip.as_deref()),
        source_port: port_at(access, local_port),
        destination_port: port_at(access, remote_port),
        protocol: str_at(access, protocol).map(str::to_ascii_lowercase),
        source_ip,
        destination_ip,
        ..NetworkSignal::default()
    })
}

/// The indicator Falcon matched, as the entity its type says.
fn indicator(alert: &mut AlertBuilder, kind: Option<&str>, value: Option<&str>) {
    let Some(value) = value else { return };
    match kind.map(str::to_ascii_lowercase).as_deref() {
        Some(kind) if kind.starts_with("hash") => {
            alert.hash(real_hash(Some(value)).as_deref());
        }
        Some("domain") => {
            alert.entity(EntityKind::Domain, Some(value));
        }
        Some("ipv4" | "ipv6" | "ip") => {
            alert.entity(EntityKind::Ip, Some(value));
        }
        Some("url") => {
            alert.entity(EntityKind::Url, Some(value));
        }
        Some("filename") => {
            alert.entity(EntityKind::FilePath, Some(value));
        }
        _ => {
            alert.sweep(Some(value));
        }
    }
}

/// The product name when the alert comes from a Falcon module other than endpoint
/// protection.
fn product_label(product: &str) -> Option<&'static str> {
    Some(match product {
        "idp" => "CrowdStrike Falcon Identity Protection",
        "overwatch" => "CrowdStrike Falcon OverWatch",
        "xdr" | "ngsiem" => "CrowdStrike Falcon Next-Gen SIEM",
        "mobile" => "CrowdStrike Falcon for Mobile",
        "cwpp" | "cspm" | "cloud" => "CrowdStrike Falcon Cloud Security",
        "thirdparty" => "CrowdStrike Falcon (third-party detection)",
        _ => return None,
    })
}

/// The word for a 0-100 Falcon severity, by the bands the Falcon console uses.
fn falcon_score_word(score: f64) -> &'static str {
    if score >= 90.0 {
        "critical"
    } else if score >= 70.0 {
        "high"
    } else if score >= 50.0 {
        "medium"
    } else if score >= 20.0 {
        "low"
    } else {
        "informational"
    }
}

/// The word for the legacy 1-5 Falcon severity.
fn legacy_severity_word(severity: f64) -> &'static str {
    if severity >= 5.0 {
        "critical"
    } else if severity >= 4.0 {
        "high"
    } else if severity >= 3.0 {
        "medium"
    } else if severity >= 2.0 {
        "low"
    } else {
        "informational"
    }
}

/// The console link, also when the SIEM connector wrapped it in an HTML anchor.
fn link(text: &str) -> Option<String> {
    let start = text.find("https://").or_else(|| text.find("http://"))?;
    let url = text
        .get(start..)?
        .split(['"', '\'', '<', '>', ' '])
        .next()?;
    (url.len() > "https://".len()).then(|| url.to_string())
}

/// The image's full path: the legacy event writes the directory in `FilePath` and the
/// name in `FileName`; the EPP event writes the full path in `FilePath`.
fn full_path(path: Option<&str>, name: Option<&str>) -> Option<String> {
    let path = path?;
    match name {
        Some(name) if !path.to_lowercase().ends_with(&name.to_lowercase()) => {
            let separator = if path.contains('/') { '/' } else { '\\' };
            Some(format!(
                "{}{separator}{name}",
                path.trim_end_matches(['\\', '/'])
            ))
        }
        _ => Some(path.to_string()),
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
    fn the_alerts_api_sample_reads_completely() {
        let raw: Value = serde_json::from_str(ALERT.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "crowdstrike_falcon_alert");
        assert_eq!(parsed.title, "CredentialDumpingViaComsvcs");
        assert_eq!(parsed.alert_type, "crowdstrike:pattern:51234");
        assert_eq!(parsed.severity.as_deref(), Some("critical"));
        assert_eq!(
            parsed.create_time.to_rfc3339(),
            "2026-03-02T09:14:31.402+00:00"
        );
        assert_eq!(
            parsed.origin_ticket_id_label.as_deref(),
            Some("composite_id")
        );
        assert!(
            parsed
                .origin_ticket_url
                .as_deref()
                .is_some_and(|url| url.starts_with("https://falcon.eu-1.crowdstrike.com/"))
        );
        assert_eq!(
            parsed.coalesce_key.as_deref(),
            Some("crowdstrike_falcon_alert:aggind:7d2c0a9b3e6f4c1d8a5b2e9f0c3d6a71:8589934612")
        );
        assert_eq!(
            parsed.tenant_id.as_deref(),
            Some("5f1e2d3c4b5a69788796a5b4c3d2e1f0")
        );
        assert_eq!(parsed.signals.category, Some(AlertCategory::Endpoint));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Observed));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Credential Access"]);
        assert_eq!(parsed.signals.mitre_techniques, vec!["T1003.001"]);
        assert_eq!(parsed.signals.confidence, Some(100));
        let process = parsed.signals.process.as_ref().unwrap();
        assert_eq!(process.name.as_deref(), Some("rundll32.exe"));
        assert_eq!(process.parent_name.as_deref(), Some("powershell.exe"));
        assert_eq!(process.user.as_deref(), Some("CORP\\r.patel"));
        assert!(process.sha1.is_none(), "zero digests are placeholders");
        assert!(has(&parsed, EntityKind::Host, "wks-0231"));
        assert!(has(&parsed, EntityKind::Ip, "10.20.30.40"));
        assert!(has(&parsed, EntityKind::User, "corp\\r.patel"));
    }

    #[test]
    fn the_detection_summary_sample_reads_completely() {
        let raw: Value = serde_json::from_str(DETECTION_SUMMARY.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "crowdstrike_falcon_detection_summary");
        assert_eq!(parsed.title, "Ransomware");
        assert_eq!(parsed.severity.as_deref(), Some("critical"));
        assert_eq!(
            parsed.origin_ticket_id_label.as_deref(),
            Some("CompositeId")
        );
        assert_eq!(parsed.signals.action, Some(ActionTaken::Blocked));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Impact"]);
        let process = parsed.signals.process.as_ref().unwrap();
        assert_eq!(
            process.path.as_deref(),
            Some("\\Device\\HarddiskVolume3\\Users\\Public\\Libraries\\svcupd.exe")
        );
        assert_eq!(process.parent_name.as_deref(), Some("cmd.exe"));
        assert!(has(&parsed, EntityKind::Host, "wks-0412"));
        assert!(has(
            &parsed,
            EntityKind::HashSha256,
            "2b1e2c7a8f6d4e3b9a0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f60718293a4b5c6"
        ));
    }

    #[test]
    fn the_disposition_says_whether_falcon_stopped_it() {
        let cases = [
            (json!({"process_blocked": true}), None, ActionTaken::Blocked),
            (
                json!({"kill_process": true, "policy_disabled": true}),
                None,
                ActionTaken::Observed,
            ),
            (json!({"kill_process": "true"}), None, ActionTaken::Blocked),
            (json!({"detect": true}), None, ActionTaken::Observed),
            (json!(null), Some(2048), ActionTaken::Blocked),
            (json!(null), Some(2304), ActionTaken::Observed),
            (json!(null), Some(272), ActionTaken::Observed),
            (json!(null), Some(144), ActionTaken::Blocked),
            (json!(null), Some(0), ActionTaken::Observed),
        ];
        for (flags, value, expected) in cases {
            assert_eq!(
                disposition(Some(&flags), value, None, 0),
                expected,
                "{flags} {value:?}"
            );
        }
        assert_eq!(
            disposition(None, None, Some("Prevention, process killed."), 0),
            ActionTaken::Blocked
        );
    }

    #[test]
    fn the_legacy_detection_summary_reads_its_one_to_five_severity_and_directory_paths() {
        let parsed = read(&json!({
            "metadata": {"customerIDString": "abc", "offset": 7, "eventType": "DetectionSummaryEvent", "eventCreationTime": 1772442000000_u64},
            "event": {
                "DetectId": "ldt:abc:123", "DetectName": "Suspicious Activity", "Severity": 2,
                "ComputerName": "WKS-0101", "UserName": "l.brown", "FileName": "choice.exe",
                "FilePath": "\\Device\\HarddiskVolume1\\Windows\\System32",
                "ParentImageFileName": "\\Device\\HarddiskVolume1\\Windows\\System32\\cmd.exe",
                "FalconHostLink": "<a href=\"https://falcon.crowdstrike.com/activity/detections/detail/abc/123\">link</a>",
                "PatternDispositionValue": 0, "Tactic": "Falcon Overwatch", "Technique": "Malicious Activity"
            }
        }));
        assert_eq!(parsed.severity.as_deref(), Some("low"));
        assert_eq!(parsed.origin_ticket_id.as_deref(), Some("ldt:abc:123"));
        assert_eq!(
            parsed.origin_ticket_url.as_deref(),
            Some("https://falcon.crowdstrike.com/activity/detections/detail/abc/123")
        );
        let process = parsed.signals.process.unwrap();
        assert_eq!(
            process.path.as_deref(),
            Some("\\Device\\HarddiskVolume1\\Windows\\System32\\choice.exe")
        );
        assert_eq!(process.parent_name.as_deref(), Some("cmd.exe"));
        assert!(parsed.signals.mitre_tactics.is_empty());
        assert!(
            parsed
                .signals
                .tags
                .contains(&"Falcon Overwatch: Malicious Activity".to_string())
        );
    }

    #[test]
    fn identity_protection_alerts_are_identity_alerts_of_their_own_product() {
        let parsed = read(&json!({
            "composite_id": "cid1:ind:x:1", "aggregate_id": "agg:1", "product": "idp",
            "name": "PassTheTicket", "severity": 70, "created_timestamp": "2026-03-01T10:00:00Z"
        }));
        assert_eq!(parsed.signals.category, Some(AlertCategory::Identity));
        assert_eq!(
            parsed.direct_source_label,
            "CrowdStrike Falcon Identity Protection"
        );
        assert_eq!(parsed.severity.as_deref(), Some("high"));
    }

    #[test]
    fn other_shapes_are_not_falcon_alerts() {
        assert!(!detect_alert(&json!({"composite_id": "x"})));
        assert!(!detect_alert(&json!({"device": {}, "aggregate_id": "y"})));
        assert!(!detect_summary(
            &json!({"metadata": {"eventType": "AuthActivityAuditEvent"}, "event": {}})
        ));
        assert!(!detect_summary(
            &json!({"metadata": {"eventType": "DetectionSummaryEvent"}, "event": "x"})
        ));
    }

    #[test]
    fn an_alert_without_an_id_or_a_name_does_not_fit() {
        let result = crate::parse_alert(
            Some("crowdstrike_falcon_alert"),
            &json!({"device": {"hostname": "x"}}),
            chrono::Utc::now(),
        );
        assert!(matches!(result, Err(ParseError::DoesNotFit { .. })));
        let result = crate::parse_alert(
            Some("crowdstrike_falcon_detection_summary"),
            &json!({"metadata": {}, "event": {}}),
            chrono::Utc::now(),
        );
        assert!(matches!(result, Err(ParseError::DoesNotFit { .. })));
    }

    #[test]
    fn hostile_input_never_panics() {
        // Unicode starts after eight ASCII bytes: `entities::refang` slices the first eight
        // bytes of any text it refangs and panics inside a multi-byte character (a
        // framework bug, reported; not worked around here).
        let huge = format!("unicode:{}", "é".repeat(100_000));
        let hostile = [
            json!({
                "composite_id": ["not", "a", "string"], "name": {"x": 1}, "severity": "NaN",
                "device": [], "parent_details": "x", "mitre_attack": {"tactic": 1},
                "pattern_disposition": -1, "pattern_disposition_details": [true],
                "network_accesses": [{"remote_address": 7}], "files_written": "x",
                "falcon_host_link": "http", "confidence": 1e300, "tags": [1, null]
            }),
            json!({
                "composite_id": huge.clone(), "name": huge.clone(), "cmdline": huge.clone(),
                "falcon_host_link": format!("https://{huge}"), "device": {"hostname": huge.clone()},
                "severity": 1e308, "created_timestamp": huge.clone(), "ioc_type": "hash_sha256",
                "ioc_value": huge.clone(), "tags": [huge.clone()]
            }),
            json!({
                "metadata": {"eventType": "DetectionSummaryEvent", "eventCreationTime": "🦀"},
                "event": {"DetectId": "\u{0}\u{7}", "Severity": -3, "FilePath": "\\", "FileName": "unicode:日本語.exe",
                          "PatternDispositionFlags": "x", "NetworkAccesses": [{"RemoteAddress": "::::"}],
                          "FalconHostLink": "<a href=\"http", "MitreAttack": [null, 1, "x"]}
            }),
        ];
        for raw in hostile {
            let _ = crate::parse_alert(None, &raw, chrono::Utc::now());
            for key in [ALERT.key, DETECTION_SUMMARY.key] {
                let _ = crate::parse_alert(Some(key), &raw, chrono::Utc::now());
            }
        }
    }
}
