//! AWS Security Hub findings in the AWS Security Finding Format (ASFF, `SchemaVersion`
//! 2018-10-08), as:
//! - one finding object (BatchImportFindings input, or a finding exported on its own);
//! - a GetFindings answer (`{"Findings": [...]}`): the first finding is read;
//! - the EventBridge event Security Hub publishes (`"source": "aws.securityhub"`,
//!   `"detail-type": "Security Hub Findings - Imported"` or `"... - Custom Action"`),
//!   whose `detail.findings` may hold several findings: **the first finding is read**.
//!   Security Hub sends one finding per Imported event in practice.
//!
//! The OCSF findings of Security Hub's "Findings Imported V2" events are a different
//! format and are not claimed here.
//!
//! Security Hub aggregates other products (GuardDuty, Inspector, Macie, partners): the
//! alert's source is the product that raised the finding, with Security Hub as the proxy.
//! The analysts' closing of a finding is read from `VerificationState`
//! (TRUE_POSITIVE / FALSE_POSITIVE / BENIGN_POSITIVE) and `Workflow.Status` (SUPPRESSED
//! is a benign verdict; RESOLVED only says someone closed it and is kept as a tag).

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, CloudSignal, Direction, EntityKind, NetworkSignal, ParsedAlert,
    ProcessSignal, SourceVerdict,
};

use super::guardduty::{Cased, read_action};
use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::entities::{IpScope, ip_scope, normalize_ip};
use crate::json::str_at;
use crate::registry::Schema;
use crate::time::time_at;

pub(crate) static FINDING: Schema = Schema {
    key: "aws_securityhub_finding",
    display_name: "AWS Security Hub finding (ASFF, single or EventBridge event)",
    source_label: "AWS Security Hub",
    integration: "aws_securityhub",
    sample: include_str!("../../samples/aws_securityhub_finding.json"),
    detect,
    parse,
};

/// Whether the event is one of Security Hub's finding events on EventBridge.
fn is_envelope(raw: &Value) -> bool {
    str_at(raw, "source") == Some("aws.securityhub")
        && str_at(raw, "detail-type").is_some_and(|kind| kind.starts_with("Security Hub Findings"))
}

/// The finding of any accepted shape.
fn finding_of(raw: &Value) -> Option<&Value> {
    if is_envelope(raw) {
        return first_of(crate::json::at(raw, "detail.findings"));
    }
    first_of(raw.get("Findings")).or(Some(raw))
}

fn first_of(list: Option<&Value>) -> Option<&Value> {
    list.and_then(Value::as_array)
        .and_then(|findings| findings.first())
}

fn detect(raw: &Value) -> bool {
    finding_of(raw).is_some_and(|finding| {
        str_at(finding, "ProductArn").is_some()
            && finding.get("AwsAccountId").is_some()
            && (finding.get("SchemaVersion").is_some() || finding.get("Types").is_some())
    })
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let Some(finding) = finding_of(raw).filter(|finding| finding.is_object()) else {
        return Err(ParseError::DoesNotFit {
            schema_key: FINDING.key,
            reason: "the event's `detail.findings` holds no finding".into(),
        });
    };
    let finding = Cased(finding);
    let title = finding.str("Title");
    let generator = finding.str("GeneratorId");
    let mut types = finding.strings("Types");
    if types.is_empty() {
        types = finding.strings("FindingProviderFields.Types");
    }
    if title.is_none() && generator.is_none() && types.is_empty() {
        return Err(ParseError::DoesNotFit {
            schema_key: FINDING.key,
            reason: "an ASFF finding has a Title, a GeneratorId or Types".into(),
        });
    }
    let envelope = is_envelope(raw).then_some(raw);
    let account = finding
        .text("AwsAccountId")
        .or_else(|| envelope.and_then(|event| str_at(event, "account").map(str::to_string)));
    let id = finding.text("Id");

    // GuardDuty findings carry the detector as their generator; their type is the
    // stable name of the detection, in the last segment of `Types`.
    let detection = match generator {
        Some(generator) if !generator.contains("detector/") => Some(generator),
        _ => types
            .first()
            .map(|kind| kind.rsplit('/').next().unwrap_or(kind)),
    };
    alert
        .title(title)
        .title(detection)
        .alert_type(
            detection
                .map(|detection| format!("securityhub:{detection}"))
                .as_deref(),
        )
        .create_time(finding.time("CreatedAt"))
        .create_time(envelope.and_then(|event| time_at(event, "time")))
        .create_time(finding.time("UpdatedAt"))
        .start_time(finding.time("FirstObservedAt"))
        .description(finding.str("Description"))
        .sweep(finding.str("Description"))
        .severity(finding.str("Severity.Label"))
        .severity(finding.str("FindingProviderFields.Severity.Label"))
        .severity_score(finding.f64("Severity.Normalized"), 100.0)
        .ticket(
            id.clone(),
            "Security Hub finding ID",
            finding.text("SourceUrl"),
        )
        .coalesce_key(id)
        .tenant(account.clone(), finding.text("AwsAccountName"));

    let product = finding
        .str("ProductName")
        .or_else(|| finding.str("ProductFields.aws/securityhub/ProductName"));
    let company = finding
        .str("CompanyName")
        .or_else(|| finding.str("ProductFields.aws/securityhub/CompanyName"));
    // Findings an account imports itself are "Default" by "Personal": no product to name.
    let own_import = product == Some("Default") && company == Some("Personal");
    if let Some(product) = product
        .filter(|product| !product.eq_ignore_ascii_case("Security Hub"))
        .filter(|_| !own_import)
    {
        let label = match company {
            Some(company) if company == "AWS" || company == "Amazon" => format!("AWS {product}"),
            Some(company) if !product.starts_with(company) => format!("{company} {product}"),
            _ => product.to_string(),
        };
        alert
            .source_label(Some(&label))
            .proxy_source_label("AWS Security Hub");
    }

    for kind in &types {
        alert.tag(Some(kind));
        read_type(kind, &mut alert);
    }
    alert.tag(product);
    alert.signals.confidence = finding
        .u64("Confidence")
        .or_else(|| finding.u64("FindingProviderFields.Confidence"))
        .and_then(|confidence| u8::try_from(confidence.min(100)).ok());
    read_verdict(finding, &mut alert);

    let action = finding.get("Action");
    read_action(action, None, detection.unwrap_or_default(), &mut alert);
    read_network(finding, &mut alert);
    let malware_seen = read_malware(finding, &mut alert);
    read_process(finding, &mut alert);
    read_indicators(finding, &mut alert);
    let resource_type = read_resources(finding, account, &mut alert, &types);
    alert.signals.category = Some(
        if resource_type == Some("AwsEc2Instance")
            && (malware_seen || alert.signals.process.is_some())
        {
            AlertCategory::Endpoint
        } else {
            AlertCategory::Cloud
        },
    );
    Ok(alert.finish())
}

/// ASFF's `Types` are `namespace/category/classifier`; the TTPs namespace uses ATT&CK
/// tactic names as categories, and the Effects namespace names outcomes.
fn read_type(kind: &str, alert: &mut AlertBuilder) {
    let mut parts = kind.split('/');
    let namespace = parts.next().unwrap_or_default();
    let category = parts.next().unwrap_or_default();
    match namespace {
        "TTPs" => {
            alert.tactic(Some(category));
        }
        "Effects" => {
            alert.tactic(match category {
                "Data Exfiltration" => Some("Exfiltration"),
                "Data Destruction" | "Resource Consumption" | "Denial of Service" => Some("Impact"),
                _ => None,
            });
        }
        _ => {}
    }
}

fn read_verdict(finding: Cased<'_>, alert: &mut AlertBuilder) {
    let workflow = finding
        .str("Workflow.Status")
        .or_else(|| finding.str("WorkflowState"));
    if let Some(status) = workflow {
        alert.tag(Some(&format!("workflow:{}", status.to_ascii_lowercase())));
    }
    if let Some(state) = finding.str("RecordState") {
        alert.tag(Some(&format!("record:{}", state.to_ascii_lowercase())));
    }
    if let Some(status) = finding.str("Compliance.Status") {
        alert.tag(Some(&format!("compliance:{}", status.to_ascii_lowercase())));
    }
    let sample = finding.bool("Sample") == Some(true);
    if sample {
        alert.tag(Some("sample finding"));
        // A generated example says what the finding is, not that the activity is benign.
        alert.signals.generated_sample = true;
    }
    let guardduty_archived =
        finding.bool("ProductFields.aws/guardduty/service/archived") == Some(true);
    alert.signals.source_verdict = match finding.str("VerificationState") {
        Some("TRUE_POSITIVE") => Some(SourceVerdict::Malicious),
        Some("FALSE_POSITIVE" | "BENIGN_POSITIVE") => Some(SourceVerdict::Benign),
        _ if guardduty_archived => Some(SourceVerdict::Benign),
        _ if workflow.is_some_and(|status| status.eq_ignore_ascii_case("SUPPRESSED")) => {
            Some(SourceVerdict::Benign)
        }
        _ => None,
    };
}

/// The `Network` block, when the product fills it rather than `Action`.
fn read_network(finding: Cased<'_>, alert: &mut AlertBuilder) {
    let Some(network) = finding.get("Network") else {
        return;
    };
    let address = |v4: &str, v6: &str| {
        network
            .str(v4)
            .or_else(|| network.str(v6))
            .and_then(normalize_ip)
    };
    let source_ip = address("SourceIpV4", "SourceIpV6");
    let destination_ip = address("DestinationIpV4", "DestinationIpV6");
    let direction = match network.str("Direction") {
        Some("IN") => Some(Direction::Inbound),
        Some("OUT") => Some(Direction::Outbound),
        _ => {
            let inside = |ip: &Option<String>| {
                ip.as_deref()
                    .and_then(ip_scope)
                    .map(|scope| scope != IpScope::Public)
            };
            match (inside(&source_ip), inside(&destination_ip)) {
                (Some(true), Some(true)) => Some(Direction::Internal),
                _ => None,
            }
        }
    };
    let hostname = network
        .str("DestinationDomain")
        .or_else(|| network.str("SourceDomain"))
        .map(str::to_string);
    let read = NetworkSignal {
        source_ip,
        source_port: network.port("SourcePort"),
        destination_ip,
        destination_port: network.port("DestinationPort"),
        protocol: network.str("Protocol").map(str::to_ascii_lowercase),
        direction,
        hostname,
        ..NetworkSignal::default()
    };
    // `Action` says more when both are there (ports, blocking); fill only its gaps.
    let signal = alert
        .signals
        .network
        .get_or_insert_with(NetworkSignal::default);
    signal.source_ip = signal.source_ip.take().or(read.source_ip);
    signal.source_port = signal.source_port.or(read.source_port);
    signal.destination_ip = signal.destination_ip.take().or(read.destination_ip);
    signal.destination_port = signal.destination_port.or(read.destination_port);
    signal.protocol = signal.protocol.take().or(read.protocol);
    signal.direction = signal.direction.or(read.direction);
    signal.hostname = signal.hostname.take().or(read.hostname);
}

/// Malware and threats the product named; whether there were any.
fn read_malware(finding: Cased<'_>, alert: &mut AlertBuilder) -> bool {
    let mut seen = false;
    let mut removed = false;
    for malware in finding.array("Malware") {
        seen = true;
        alert.tag(malware.str("Name")).tag(malware.str("Type"));
        alert.entity(EntityKind::FilePath, malware.str("Path"));
        removed |= malware.str("State") == Some("REMOVED");
    }
    for threat in finding.array("Threats") {
        seen = true;
        alert.tag(threat.str("Name"));
        for file in threat.array("FilePaths") {
            alert.entity(EntityKind::FilePath, file.str("FilePath"));
            alert.hash(file.str("Hash"));
        }
    }
    if removed {
        alert.signals.action = Some(ActionTaken::Blocked);
    }
    if seen && alert.signals.source_verdict.is_none() {
        // The product identified the file as malware: its own verdict.
        alert.signals.source_verdict = Some(SourceVerdict::Malicious);
    }
    seen
}

fn read_process(finding: Cased<'_>, alert: &mut AlertBuilder) {
    let Some(process) = finding.get("Process") else {
        return;
    };
    let path = process.str("Path");
    alert.signals.process = Some(ProcessSignal {
        name: process
            .str("Name")
            .or_else(|| path.and_then(|path| path.rsplit(['/', '\\']).next()))
            .map(str::to_string),
        path: path.map(str::to_string),
        ..ProcessSignal::default()
    });
}

fn read_indicators(finding: Cased<'_>, alert: &mut AlertBuilder) {
    for indicator in finding.array("ThreatIntelIndicators") {
        let value = indicator.str("Value");
        alert.tag(indicator.str("Category"));
        match indicator.str("Type").unwrap_or_default() {
            "IPV4_ADDRESS" | "IPV6_ADDRESS" => {
                alert.entity(EntityKind::Ip, value);
            }
            "DOMAIN" => {
                alert.entity(EntityKind::Domain, value);
            }
            "URL" => {
                alert.entity(EntityKind::Url, value);
            }
            "EMAIL_ADDRESS" => {
                alert.entity(EntityKind::Email, value);
            }
            "HASH_MD5" | "HASH_SHA1" | "HASH_SHA256" | "HASH_SHA512" => {
                alert.hash(value);
            }
            "PROCESS" => {
                alert.entity(EntityKind::Process, value);
            }
            _ => {}
        }
    }
}

/// The affected resources; returns the first resource's type.
fn read_resources<'a>(
    finding: Cased<'a>,
    account: Option<String>,
    alert: &mut AlertBuilder,
    types: &[&str],
) -> Option<&'a str> {
    let mut principal = None;
    for resource in finding.array("Resources") {
        let id = resource.str("Id");
        alert.entity(EntityKind::CloudResource, id);
        // "AWS::IAM::AccessKey:AKIA..." names the key itself, which is what a leaked or
        // canary key is listed by.
        if let Some(key_id) = id.and_then(|id| id.strip_prefix("AWS::IAM::AccessKey:")) {
            alert.entity(EntityKind::CloudResource, Some(key_id));
        }
        principal = principal
            .or_else(|| resource.str("Details.AwsIamAccessKey.PrincipalName"))
            .or_else(|| resource.str("Details.AwsIamAccessKey.UserName"))
            .or_else(|| resource.str("Details.AwsIamUser.UserName"))
            .or_else(|| resource.str("Details.AwsIamRole.RoleName"));
        for address in resource.strings("Details.AwsEc2Instance.IpV4Addresses") {
            alert.entity(EntityKind::Ip, Some(address));
        }
        // The Name tag is how the organisation knows the machine.
        alert.host(
            resource
                .str("Tags.Name")
                .filter(|_| resource.str("Type") == Some("AwsEc2Instance")),
        );
    }
    let first = finding.array("Resources").next();
    let resource_type = first.and_then(|resource| resource.str("Type"));
    let exposed = types
        .iter()
        .any(|kind| kind.starts_with("Effects/Data Exposure"));
    let cloud = alert.signals.cloud.get_or_insert_with(CloudSignal::default);
    cloud.provider = Some("aws".into());
    cloud.account = account;
    cloud.region = finding
        .str("Region")
        .or_else(|| first.and_then(|resource| resource.str("Region")))
        .map(str::to_string);
    cloud.principal = principal.map(str::to_string);
    cloud.resource = first
        .and_then(|resource| resource.str("Id"))
        .map(str::to_string);
    cloud.resource_type = resource_type.map(str::to_string);
    cloud.publicly_exposed = exposed.then_some(true);
    if let Some(sign_in) = alert.signals.sign_in.as_mut() {
        sign_in.user = principal.map(str::to_string);
    }
    resource_type
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
        let raw: Value = serde_json::from_str(FINDING.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "aws_securityhub_finding");
        assert_eq!(parsed.direct_source_label, "AWS GuardDuty");
        assert_eq!(
            parsed.proxy_source_label.as_deref(),
            Some("AWS Security Hub")
        );
        assert_eq!(
            parsed.alert_type,
            "securityhub:UnauthorizedAccess:IAMUser-TorIPCaller"
        );
        assert_eq!(parsed.severity.as_deref(), Some("medium"));
        assert_eq!(parsed.signals.mitre_tactics[0], "Initial Access");
        let sign_in = parsed.signals.sign_in.as_ref().unwrap();
        assert_eq!(sign_in.source_ip.as_deref(), Some("203.0.113.66"));
        assert_eq!(sign_in.user.as_deref(), Some("l.brown"));
        assert!(parsed.entities.iter().any(|entity| {
            entity.kind == EntityKind::CloudResource && entity.value == "AKIAEXAMPLELBROWN001"
        }));
        assert_eq!(parsed.tenant_id.as_deref(), Some("111122223333"));
    }

    #[test]
    fn verdicts_come_from_verification_state_and_workflow() {
        let cases = [
            (
                json!({"VerificationState": "TRUE_POSITIVE"}),
                Some(SourceVerdict::Malicious),
            ),
            (
                json!({"VerificationState": "BENIGN_POSITIVE"}),
                Some(SourceVerdict::Benign),
            ),
            (
                json!({"Workflow": {"Status": "SUPPRESSED"}}),
                Some(SourceVerdict::Benign),
            ),
            (json!({"Workflow": {"Status": "RESOLVED"}}), None),
            (json!({"Workflow": {"Status": "NEW"}}), None),
            (json!({"Sample": true}), None),
        ];
        for (extra, expected) in cases {
            let mut raw = json!({"SchemaVersion": "2018-10-08", "Id": "f-1",
                "ProductArn": "arn:aws:securityhub:eu-west-2::product/aws/securityhub",
                "GeneratorId": "security-control/S3.8", "AwsAccountId": "111122223333",
                "Types": ["Software and Configuration Checks/Industry and Regulatory Standards"],
                "Title": "S3 general purpose buckets should block public access"});
            if let (Some(target), Some(extra)) = (raw.as_object_mut(), extra.as_object()) {
                target.extend(extra.clone());
            }
            let parsed = read(&raw);
            assert_eq!(parsed.signals.source_verdict, expected, "{raw}");
            assert_eq!(parsed.alert_type, "securityhub:security-control/S3.8");
            assert_eq!(parsed.direct_source_label, "AWS Security Hub");
        }
    }

    #[test]
    fn the_first_finding_of_an_eventbridge_event_is_read() {
        let raw = json!({"version": "0", "source": "aws.securityhub",
        "detail-type": "Security Hub Findings - Imported", "account": "444455556666",
        "time": "2026-03-05T10:00:00Z",
        "detail": {"findings": [
            {"SchemaVersion": "2018-10-08", "Id": "first", "ProductArn": "arn:aws:securityhub:us-east-1::product/aws/inspector",
             "ProductName": "Inspector", "CompanyName": "Amazon", "AwsAccountId": "444455556666",
             "GeneratorId": "AWSInspectorFindingGenerator", "Title": "CVE-2026-0001 - openssl",
             "Severity": {"Label": "HIGH", "Normalized": 70}, "Types": ["Software and Configuration Checks/Vulnerabilities/CVE"]},
            {"SchemaVersion": "2018-10-08", "Id": "second", "ProductArn": "x", "AwsAccountId": "1", "Title": "Second"}
        ]}});
        assert_eq!(crate::detect(&raw).key, "aws_securityhub_finding");
        let parsed = read(&raw);
        assert_eq!(parsed.title, "CVE-2026-0001 - openssl");
        assert_eq!(parsed.origin_ticket_id.as_deref(), Some("first"));
        assert_eq!(parsed.direct_source_label, "AWS Inspector");
        assert_eq!(parsed.create_time.to_rfc3339(), "2026-03-05T10:00:00+00:00");
    }

    #[test]
    fn guardduty_and_ocsf_events_are_not_asff() {
        assert!(!detect(
            &json!({"source": "aws.guardduty", "detail-type": "GuardDuty Finding",
            "detail": {"schemaVersion": "2.0", "accountId": "1", "type": "x"}})
        ));
        assert!(!detect(
            &json!({"source": "aws.securityhub", "detail-type": "Findings Imported V2",
            "detail": {"findings": [{"metadata": {"product": {"name": "GuardDuty"}}}]}})
        ));
    }

    #[test]
    fn hostile_input_never_panics() {
        let huge = "y".repeat(100_000);
        let shapes = [
            json!({"source": "aws.securityhub", "detail-type": "Security Hub Findings - Imported",
                "detail": {"findings": "not a list"}}),
            json!({"source": "aws.securityhub", "detail-type": "Security Hub Findings - Imported",
                "detail": {"findings": [7]}}),
            json!({"SchemaVersion": 1, "ProductArn": huge, "AwsAccountId": [], "Types": [1, null, "TTPs/🦀/x"],
                "Title": {"x": 1}, "Severity": {"Normalized": "lots"}, "Confidence": -4,
                "Resources": [{"Id": 5, "Tags": "x"}, null], "Malware": [{"State": 1}],
                "Threats": [{"FilePaths": [{"Hash": "zz"}]}], "Network": {"SourcePort": 70_000},
                "ThreatIntelIndicators": [{"Type": "URL", "Value": "javascript:alert(1)"}],
                "Action": {"PortProbeAction": {"PortProbeDetails": [{}]}}}),
            json!({"Findings": [], "ProductArn": "x", "AwsAccountId": "1", "Types": []}),
        ];
        for raw in shapes {
            let _ = parse_alert(Some(FINDING.key), &raw, chrono::Utc::now());
            let _ = crate::detect(&raw);
        }
    }
}
