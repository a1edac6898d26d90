//! Microsoft Defender for Endpoint alerts, in the two shapes the product hands them out:
//!
//! - the alert resource of the Defender for Endpoint API (`GET /api/alerts`, with
//!   `$expand=evidence`): camelCase fields `id` (`da…`), `incidentId`, `title`,
//!   `severity`, `status`, `classification`, `determination`, `category`,
//!   `detectionSource`, `mitreTechniques`, `computerDnsName`, `machineId`,
//!   `alertCreationTime`, `firstEventTime`, `relatedUser`, `loggedOnUsers` and
//!   `evidence[]` (one flat record per `entityType`: File, Process, User, Ip, Url, with
//!   `detectionStatus` and `remediationStatus`);
//! - the SIEM API detection (`wdatp-alertexporter-*/api/alerts`, retired but still
//!   shipped by older connectors): PascalCase `AlertId`, `AlertTitle`, `AlertTime`,
//!   `MachineName`, `ComputerDnsName`, `Sha1`/`Sha256`/`Md5`, `FileName`, `FilePath`,
//!   `CommandLine`, `IpAddress`, `Url`, `UserName`/`UserDomain`, `ThreatName`,
//!   `RemediationAction`, `LinkToMTP`.
//!
//! One alert per object: a list response (`{"value": [...]}`) is split by the caller.
//! The streaming API's advanced-hunting rows (`AlertInfo`, `AlertEvidence`) are not read
//! here: one alert is spread over many rows there.

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, EntityKind, ParsedAlert, ProcessSignal, SourceVerdict,
};

use super::common::{
    self, account_name, add_hash, add_machine, add_user, classified_verdict, file_path, items, text,
};
use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::json::{bool_at, has_key, str_at, strings_at, text_at};
use crate::registry::Schema;
use crate::time::{first_time, time_at};

pub(crate) static ALERT: Schema = Schema {
    key: "microsoft_defender_endpoint_alert",
    display_name: "Microsoft Defender for Endpoint alert (API or SIEM export)",
    source_label: "Microsoft Defender for Endpoint",
    integration: "microsoft_defender_endpoint",
    sample: include_str!("../../../samples/microsoft_defender_endpoint_alert.json"),
    detect,
    parse,
};

/// The portal page of an alert, when the alert does not link itself.
const ALERT_PAGE: &str = "https://security.microsoft.com/alerts/";

fn detect(raw: &Value) -> bool {
    is_api_alert(raw) || is_siem_alert(raw)
}

/// The API resource: the creation time and device fields are its own; the Graph
/// alerts_v2 resource, which looks alike, carries `serviceSource` instead.
fn is_api_alert(raw: &Value) -> bool {
    has_key(raw, "alertCreationTime")
        && (has_key(raw, "machineId") || has_key(raw, "computerDnsName"))
        && (has_key(raw, "title") || has_key(raw, "id"))
        && !has_key(raw, "serviceSource")
}

fn is_siem_alert(raw: &Value) -> bool {
    has_key(raw, "AlertId")
        && has_key(raw, "AlertTitle")
        && [
            "LinkToWDATP",
            "LinkToMTP",
            "MachineName",
            "ComputerDnsName",
            "IocUniqueId",
        ]
        .iter()
        .any(|key| has_key(raw, key))
}

fn parse(raw: &Value, alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    if is_siem_alert(raw) && !is_api_alert(raw) {
        return parse_siem(raw, alert);
    }
    parse_api(raw, alert)
}

fn parse_api(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let id = text_at(raw, "id");
    let title = str_at(raw, "title");
    if id.is_none() && title.is_none() {
        return Err(ParseError::DoesNotFit {
            schema_key: ALERT.key,
            reason: "a Defender for Endpoint alert has an id or a title".into(),
        });
    }
    alert
        .title(title)
        .title(threat_title(raw).as_deref())
        .alert_type(title.map(|title| format!("mde:{title}")).as_deref())
        .create_time(time_at(raw, "alertCreationTime"))
        .start_time(first_time(raw, &["firstEventTime", "lastEventTime"]))
        .severity(str_at(raw, "severity").filter(|word| !word.eq_ignore_ascii_case("unspecified")))
        .description(str_at(raw, "description"));
    let url = id.as_deref().map(|id| format!("{ALERT_PAGE}{id}"));
    alert.ticket(id.clone(), "Defender for Endpoint alert id", url);
    let incident = text_at(raw, "incidentId");
    let machine = str_at(raw, "machineId");
    alert.coalesce_key(
        incident
            .as_deref()
            .map(|incident| format!("incident:{incident}"))
            .or_else(|| {
                Some(format!(
                    "{}:{}",
                    title.unwrap_or_default(),
                    machine.or(str_at(raw, "computerDnsName"))?
                ))
            }),
    );
    alert.tenant(text_at(raw, "aadTenantId"), None);

    alert.signals.category = Some(AlertCategory::Endpoint);
    alert
        .tactic(str_at(raw, "category"))
        .tactic(common::category_tactic(str_at(raw, "category")));
    for technique in strings_at(raw, "mitreTechniques") {
        alert.technique(Some(technique));
    }
    for tag in [
        "category",
        "threatFamilyName",
        "threatName",
        "detectionSource",
        "determination",
        "investigationState",
    ] {
        alert.tag(str_at(raw, tag));
    }
    let mut verdict =
        classified_verdict(str_at(raw, "classification"), str_at(raw, "determination"));
    // An antivirus detection names the malware: that is Defender's verdict on the file.
    if verdict == SourceVerdict::Suspicious && common::names_malware(str_at(raw, "threatName")) {
        verdict = SourceVerdict::Malicious;
    }
    alert.signals.source_verdict = Some(verdict);

    add_machine(&mut alert, str_at(raw, "computerDnsName"));
    add_user(
        &mut alert,
        account_name(
            str_at(raw, "relatedUser.userName"),
            str_at(raw, "relatedUser.domainName"),
            None,
        )
        .as_deref(),
    );
    for user in items(raw, &["loggedOnUsers"]) {
        add_user(
            &mut alert,
            account_name(
                text(user, &["accountName"]).as_deref(),
                text(user, &["domainName"]).as_deref(),
                None,
            )
            .as_deref(),
        );
    }

    let evidence = items(raw, &["evidence"]);
    let stopped = read_evidence(&mut alert, evidence);
    alert.signals.action = Some(if stopped || common::title_says_stopped(title) {
        ActionTaken::Blocked
    } else {
        ActionTaken::Observed
    });
    Ok(alert.finish())
}

/// A title for an alert that has none: the threat it names.
fn threat_title(raw: &Value) -> Option<String> {
    str_at(raw, "threatName")
        .or(str_at(raw, "threatFamilyName"))
        .map(|threat| format!("Defender for Endpoint detected {threat}"))
}

/// Reads every evidence record; returns whether any says the activity was stopped.
fn read_evidence(alert: &mut AlertBuilder, evidence: &[Value]) -> bool {
    let mut stopped = false;
    let mut process: Option<(u8, ProcessSignal)> = None;
    for record in evidence {
        let kind = text(record, &["entityType"]).unwrap_or_default();
        stopped |= status_says_stopped(record);
        let user = account_name(
            text(record, &["accountName"]).as_deref(),
            text(record, &["domainName"]).as_deref(),
            text(record, &["userPrincipalName"]).as_deref(),
        );
        match kind.to_ascii_lowercase().as_str() {
            "process" => {
                let candidate = process_of(record, user);
                // The process the detection fired on outranks the ones around it.
                let rank = if text(record, &["detectionStatus"]).is_some() {
                    2
                } else {
                    u8::from(candidate.command_line.is_some())
                };
                match &process {
                    Some((best, _)) if *best >= rank => {
                        add_process_entities(alert, &candidate);
                    }
                    _ => {
                        if let Some((_, previous)) = process.take() {
                            add_process_entities(alert, &previous);
                        }
                        process = Some((rank, candidate));
                    }
                }
            }
            "file" => {
                add_hash(alert, text(record, &["sha256"]).as_deref());
                add_hash(alert, text(record, &["sha1"]).as_deref());
                alert.entity(
                    EntityKind::FilePath,
                    file_path(
                        text(record, &["filePath"]).as_deref(),
                        text(record, &["fileName"]).as_deref(),
                    )
                    .as_deref(),
                );
            }
            "user" => add_user(alert, user.as_deref()),
            "ip" => {
                alert.entity(EntityKind::Ip, text(record, &["ipAddress"]).as_deref());
            }
            "url" => {
                let url = text(record, &["url"]);
                if !alert_entity_url(alert, url.as_deref()) {
                    alert.entity(EntityKind::Domain, url.as_deref());
                }
            }
            _ => {
                // Registry and other records: keep what identifies a thing.
                add_hash(alert, text(record, &["sha256"]).as_deref());
                alert.entity(EntityKind::Ip, text(record, &["ipAddress"]).as_deref());
                add_user(alert, user.as_deref());
            }
        }
    }
    if let Some((_, process)) = process {
        alert.signals.process = Some(process);
    }
    stopped
}

/// Adds a URL entity; false when the text is a bare domain, as Defender often writes.
fn alert_entity_url(alert: &mut AlertBuilder, url: Option<&str>) -> bool {
    match url {
        Some(url) if url.contains("://") => {
            alert.entity(EntityKind::Url, Some(url));
            true
        }
        _ => false,
    }
}

fn process_of(record: &Value, user: Option<String>) -> ProcessSignal {
    let name = text(record, &["fileName"]);
    ProcessSignal {
        path: file_path(text(record, &["filePath"]).as_deref(), name.as_deref()),
        name,
        command_line: text(record, &["processCommandLine"]),
        decoded_command: None,
        parent_name: text(record, &["parentProcessFileName"]),
        parent_command_line: None,
        user,
        sha256: text(record, &["sha256"]),
        sha1: text(record, &["sha1"]),
        md5: None,
        signer: None,
    }
}

/// The entities of a process that is not the alert's main one.
fn add_process_entities(alert: &mut AlertBuilder, process: &ProcessSignal) {
    alert.entity(EntityKind::Process, process.name.as_deref());
    alert.entity(EntityKind::FilePath, process.path.as_deref());
    add_hash(alert, process.sha256.as_deref());
    add_hash(alert, process.sha1.as_deref());
    add_user(alert, process.user.as_deref());
    alert.sweep(process.command_line.as_deref());
}

fn status_says_stopped(record: &Value) -> bool {
    ["detectionStatus", "remediationStatus"].iter().any(|key| {
        text(record, &[key]).is_some_and(|status| {
            matches!(
                common::squeeze(&status).as_str(),
                "prevented" | "blocked" | "remediated" | "quarantined" | "removed"
            )
        })
    })
}

fn parse_siem(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let id = text_at(raw, "AlertId");
    let title = str_at(raw, "AlertTitle");
    if id.is_none() && title.is_none() {
        return Err(ParseError::DoesNotFit {
            schema_key: ALERT.key,
            reason: "a Defender for Endpoint SIEM detection has AlertId or AlertTitle".into(),
        });
    }
    alert
        .title(title)
        .alert_type(title.map(|title| format!("mde:{title}")).as_deref())
        .create_time(first_time(raw, &["AlertTime", "LastProcessedTimeUtc"]))
        .start_time(first_time(raw, &["FirstEventTime", "EventTime"]))
        .severity(str_at(raw, "Severity").filter(|word| !word.eq_ignore_ascii_case("unspecified")))
        .description(str_at(raw, "Description"));
    let link = str_at(raw, "LinkToMTP")
        .or(str_at(raw, "LinkToWDATP"))
        .map(str::to_string)
        .or_else(|| id.as_deref().map(|id| format!("{ALERT_PAGE}{id}")));
    alert.ticket(id.clone(), "Defender for Endpoint alert id", link);
    let machine = str_at(raw, "ComputerDnsName").or(str_at(raw, "MachineName"));
    alert.coalesce_key(
        id.as_deref()
            .map(|id| format!("alert:{id}"))
            .or_else(|| Some(format!("{}:{}", title?, machine?))),
    );

    alert.signals.category = Some(AlertCategory::Endpoint);
    alert
        .tactic(str_at(raw, "Category"))
        .tactic(common::category_tactic(str_at(raw, "Category")));
    if common::names_malware(str_at(raw, "ThreatName")) {
        alert.signals.source_verdict = Some(SourceVerdict::Malicious);
    }
    for tag in [
        "Category",
        "ThreatCategory",
        "ThreatFamily",
        "ThreatName",
        "Source",
        "IocName",
        "MachineGroup",
    ] {
        alert.tag(str_at(raw, tag));
    }

    add_machine(&mut alert, machine);
    if let Some(short) = str_at(raw, "MachineName") {
        add_machine(&mut alert, Some(short));
    }
    for address in str_at(raw, "InternalIPv4List")
        .unwrap_or_default()
        .split([';', ','])
        .take(common::MAX_ITEMS)
    {
        alert.entity(EntityKind::Ip, Some(address));
    }
    let user = account_name(str_at(raw, "UserName"), str_at(raw, "UserDomain"), None);
    for logged_on in str_at(raw, "LogOnUsers")
        .unwrap_or_default()
        .split([';', ','])
        .take(common::MAX_ITEMS)
    {
        add_user(&mut alert, Some(logged_on));
    }
    alert.entity(EntityKind::Ip, str_at(raw, "IpAddress"));
    let url = str_at(raw, "Url");
    if !alert_entity_url(&mut alert, url) {
        alert.entity(EntityKind::Domain, url);
    }

    let name = str_at(raw, "FileName").map(str::to_string);
    let has_file =
        name.is_some() || str_at(raw, "Sha1").is_some() || str_at(raw, "Sha256").is_some();
    if has_file || str_at(raw, "CommandLine").is_some() {
        alert.signals.process = Some(ProcessSignal {
            path: file_path(str_at(raw, "FilePath"), name.as_deref()),
            name,
            command_line: str_at(raw, "CommandLine").map(str::to_string),
            user,
            sha256: str_at(raw, "Sha256").map(str::to_string),
            sha1: str_at(raw, "Sha1").map(str::to_string),
            md5: str_at(raw, "Md5").map(str::to_string),
            ..ProcessSignal::default()
        });
    } else {
        add_user(&mut alert, user.as_deref());
    }

    // A remediation that succeeded stopped the threat; the title says so for prevention.
    let remediated = str_at(raw, "RemediationAction").is_some()
        && bool_at(raw, "RemediationIsSuccess") == Some(true);
    alert.signals.action = Some(if remediated || common::title_says_stopped(title) {
        ActionTaken::Blocked
    } else {
        ActionTaken::Observed
    });
    Ok(alert.finish())
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
        assert_eq!(parsed.schema_key, ALERT.key);
        assert_eq!(
            parsed.direct_source_label,
            "Microsoft Defender for Endpoint"
        );
        assert!(parsed.alert_type.starts_with("mde:"));
        assert!(parsed.origin_ticket_url.is_some());
        assert_eq!(parsed.signals.category, Some(AlertCategory::Endpoint));
        let process = parsed.signals.process.as_ref().expect("a process");
        assert!(process.command_line.is_some());
        assert!(has(&parsed, EntityKind::Host, "wks-0231"));
    }

    #[test]
    fn the_process_the_detection_fired_on_is_the_main_one() {
        let parsed = read(&json!({
            "id": "da638700000000000000_1", "title": "Suspicious process", "alertCreationTime": "2026-03-02T10:00:00Z",
            "machineId": "abc", "computerDnsName": "wks-0231.corp.example.com",
            "evidence": [
                {"entityType": "Process", "fileName": "cmd.exe", "filePath": "C:\\Windows\\System32", "processCommandLine": "cmd.exe /c run.bat"},
                {"entityType": "Process", "fileName": "rundll32.exe", "filePath": "C:\\Windows\\System32", "processCommandLine": "rundll32.exe comsvcs.dll, MiniDump 640 C:\\temp\\l.dmp full", "detectionStatus": "Detected"},
                {"entityType": "Ip", "ipAddress": "203.0.113.50"}
            ]
        }));
        let process = parsed.signals.process.as_ref().unwrap();
        assert_eq!(process.name.as_deref(), Some("rundll32.exe"));
        assert!(has(&parsed, EntityKind::Process, "cmd.exe"));
        assert!(has(&parsed, EntityKind::Ip, "203.0.113.50"));
        assert!(has(&parsed, EntityKind::Host, "wks-0231.corp.example.com"));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Observed));
        assert_eq!(
            parsed.signals.source_verdict,
            Some(SourceVerdict::Suspicious)
        );
    }

    #[test]
    fn prevention_and_classification_are_read() {
        let cases = [
            (
                json!({"detectionStatus": "Prevented"}),
                None,
                ActionTaken::Blocked,
            ),
            (
                json!({"remediationStatus": "Remediated"}),
                None,
                ActionTaken::Blocked,
            ),
            (
                json!({"detectionStatus": "Detected"}),
                Some("TruePositive"),
                ActionTaken::Observed,
            ),
        ];
        for (status, classification, expected) in cases {
            let mut evidence = json!({"entityType": "File", "fileName": "x.exe"});
            if let (Some(target), Some(source)) = (evidence.as_object_mut(), status.as_object()) {
                target.extend(source.clone());
            }
            let parsed = read(&json!({
                "id": "da1", "title": "Malware detected", "alertCreationTime": "2026-03-02T10:00:00Z",
                "machineId": "abc", "classification": classification, "evidence": [evidence]
            }));
            assert_eq!(parsed.signals.action, Some(expected), "{status}");
        }
    }

    #[test]
    fn the_siem_shape_reads_too() {
        let parsed = read(&json!({
            "AlertTime": "2026-03-02T10:00:00.1234567Z", "ComputerDnsName": "wks-0415.corp.example.com",
            "AlertTitle": "'Mimikatz' hacktool was prevented", "Category": "CredentialAccess", "Severity": "High",
            "AlertId": "da638700000000000000_2", "LinkToMTP": "https://security.microsoft.com/alert/da638700000000000000_2",
            "Sha256": "AB".repeat(32), "FileName": "mimi.exe", "FilePath": "C:\\Users\\x\\Downloads",
            "UserName": "m.garcia", "UserDomain": "CORP", "MachineName": "wks-0415",
            "ThreatName": "HackTool:Win32/Mimikatz.D"
        }));
        assert_eq!(
            parsed.signals.source_verdict,
            Some(SourceVerdict::Malicious)
        );
        assert_eq!(parsed.title, "'Mimikatz' hacktool was prevented");
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Blocked));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Credential Access"]);
        assert!(has(&parsed, EntityKind::HashSha256, &"ab".repeat(32)));
        assert!(has(&parsed, EntityKind::User, "corp\\m.garcia"));
        assert!(has(&parsed, EntityKind::Host, "wks-0415"));
        assert_eq!(
            parsed.origin_ticket_url.as_deref(),
            Some("https://security.microsoft.com/alert/da638700000000000000_2")
        );
    }

    #[test]
    fn other_microsoft_shapes_are_not_claimed() {
        assert!(!detect(&json!({
            "id": "da1", "title": "x", "createdDateTime": "2026-03-02T10:00:00Z",
            "serviceSource": "microsoftDefenderForEndpoint", "alertCreationTime": "x", "machineId": "y"
        })));
        assert!(!detect(
            &json!({"AlertId": "x", "Name": "y", "Workload": "SecurityComplianceCenter"})
        ));
        assert!(!detect(&json!({"title": "x"})));
    }

    #[test]
    fn hostile_input_never_panics() {
        let huge = "\u{1F980}".repeat(100_000);
        for raw in [
            json!({"alertCreationTime": 5, "machineId": [], "title": {}, "id": null, "evidence": "x"}),
            json!({"alertCreationTime": "x", "computerDnsName": huge, "id": 1, "evidence": [1, "a", null, {"entityType": 5}]}),
            json!({"alertCreationTime": "x", "machineId": "m", "title": huge, "mitreTechniques": [1, {}], "relatedUser": "x",
                   "evidence": [{"entityType": "Process", "fileName": {}, "processCommandLine": huge}]}),
            json!({"AlertId": [], "AlertTitle": 3, "MachineName": {}, "InternalIPv4List": huge, "LogOnUsers": ";;;"}),
            json!({"id": "da2", "title": "x", "alertCreationTime": "2026-03-02T10:00:00Z", "machineId": "m",
                   "evidence": [{"entityType": "Process", "fileName": "Программа.exe", "processCommandLine": "Программа.exe -x"},
                                {"entityType": "Process", "processCommandLine": "Программа.exe -y"},
                                {"entityType": "Url", "url": "ЖЖЖЖЖЖЖЖ://x"}, {"entityType": "Ip", "ipAddress": "Ж\u{1F980}\u{1F980}"},
                                {"entityType": "Registry", "ipAddress": "ЖЖЖЖЖЖ"}]}),
            json!({"AlertId": "x", "AlertTitle": "y", "MachineName": "z", "CommandLine": "Программа.exe", "Url": "ЖЖЖЖЖЖЖЖЖ",
                   "IpAddress": "ЖЖЖЖЖЖЖЖЖ", "InternalIPv4List": "ЖЖЖЖЖЖЖЖЖ;ЖЖЖЖЖЖЖЖЖ", "FileName": "a"}),
        ] {
            let _ = parse_alert(Some(ALERT.key), &raw, chrono::Utc::now());
        }
        assert!(
            parse_alert(
                Some(ALERT.key),
                &json!({"machineId": "x"}),
                chrono::Utc::now()
            )
            .is_err()
        );
    }
}
