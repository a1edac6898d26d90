//! Amazon GuardDuty findings (finding schema 2.0), in two wire shapes:
//! - `aws_guardduty_eventbridge`: the EventBridge event GuardDuty publishes for every new
//!   or updated finding (`"source": "aws.guardduty"`, `"detail-type": "GuardDuty Finding"`,
//!   the finding in `detail`), as delivered to SQS, SNS, Lambda or a webhook.
//! - `aws_guardduty_finding`: the finding as the GuardDuty API returns it: one finding
//!   object, or a GetFindings response (`{"findings": [...]}`, of which the first finding
//!   is read). The REST API writes camelCase keys; the AWS CLI and SDKs PascalCase
//!   (`Service.Action.ActionType`): both are read.
//!
//! Severity is GuardDuty's 0-10 number in its published bands (low below 4, medium below
//! 7, high below 9, critical from 9). `service.archived` means the finding was closed by
//! the account's analysts or a suppression rule, which GuardDuty documents as the way to
//! set aside expected activity: it reads as a benign verdict, unless the analysts marked
//! the finding useful.

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, CloudSignal, Direction, EntityKind, NetworkSignal, ParsedAlert,
    ProcessSignal, SignInSignal, SourceVerdict,
};

use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::entities::normalize_ip;
use crate::json::{self, str_at};
use crate::registry::Schema;
use crate::time::{self, time_at};

pub(crate) static EVENTBRIDGE: Schema = Schema {
    key: "aws_guardduty_eventbridge",
    display_name: "AWS GuardDuty finding (EventBridge event)",
    source_label: "AWS GuardDuty",
    integration: "aws_guardduty",
    sample: include_str!("../../samples/aws_guardduty_eventbridge.json"),
    detect: detect_eventbridge,
    parse: parse_eventbridge,
};

pub(crate) static FINDING: Schema = Schema {
    key: "aws_guardduty_finding",
    display_name: "AWS GuardDuty finding (API / CLI JSON)",
    source_label: "AWS GuardDuty",
    integration: "aws_guardduty",
    sample: include_str!("../../samples/aws_guardduty_finding.json"),
    detect: detect_finding,
    parse: parse_finding,
};

/// A JSON object read in either of AWS's casings: a camelCase path
/// (`service.action.actionType`) also finds the PascalCase spelling
/// (`Service.Action.ActionType`) that the CLI, the SDKs and Security Hub write.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cased<'a>(pub(super) &'a Value);

impl<'a> Cased<'a> {
    pub(super) fn at(self, path: &str) -> Option<&'a Value> {
        json::at(self.0, path).or_else(|| json::at(self.0, &pascal_case(path)))
    }

    pub(super) fn get(self, path: &str) -> Option<Cased<'a>> {
        self.at(path).filter(|value| value.is_object()).map(Cased)
    }

    pub(super) fn str(self, path: &str) -> Option<&'a str> {
        self.at(path).and_then(|value| str_at(value, ""))
    }

    pub(super) fn text(self, path: &str) -> Option<String> {
        self.at(path).and_then(json::scalar_text)
    }

    pub(super) fn f64(self, path: &str) -> Option<f64> {
        self.at(path).and_then(|value| json::f64_at(value, ""))
    }

    pub(super) fn u64(self, path: &str) -> Option<u64> {
        self.at(path).and_then(|value| json::u64_at(value, ""))
    }

    pub(super) fn port(self, path: &str) -> Option<u16> {
        self.u64(path).and_then(|port| u16::try_from(port).ok())
    }

    pub(super) fn bool(self, path: &str) -> Option<bool> {
        self.at(path).and_then(|value| json::bool_at(value, ""))
    }

    pub(super) fn array(self, path: &str) -> impl Iterator<Item = Cased<'a>> {
        self.at(path)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .take(MAX_ITEMS)
            .map(Cased)
    }

    pub(super) fn strings(self, path: &str) -> Vec<&'a str> {
        self.at(path)
            .map(|value| json::strings_at(value, ""))
            .unwrap_or_default()
    }

    pub(super) fn time(self, path: &str) -> Option<sleuth_domain::Timestamp> {
        self.at(path).and_then(time::parse_value)
    }
}

/// How many items of any one list are read: a finding lists a handful, a hostile one
/// may list millions.
const MAX_ITEMS: usize = 50;

/// `service.action` -> `Service.Action`.
fn pascal_case(path: &str) -> String {
    path.split('.')
        .map(|segment| {
            let mut characters = segment.chars();
            characters.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(characters).collect()
            })
        })
        .collect::<Vec<_>>()
        .join(".")
}

fn detect_eventbridge(raw: &Value) -> bool {
    str_at(raw, "source") == Some("aws.guardduty")
        && str_at(raw, "detail-type") == Some("GuardDuty Finding")
        && raw.get("detail").is_some_and(Value::is_object)
}

fn parse_eventbridge(raw: &Value, alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let Some(detail) = raw.get("detail").filter(|detail| detail.is_object()) else {
        return Err(ParseError::DoesNotFit {
            schema_key: EVENTBRIDGE.key,
            reason: "a GuardDuty EventBridge event carries the finding in `detail`".into(),
        });
    };
    read(Cased(detail), Some(raw), alert, EVENTBRIDGE.key)
}

/// The finding of a raw API answer: the object itself, or the first of a GetFindings list.
fn api_finding(raw: &Value) -> Option<Cased<'_>> {
    let list = Cased(raw)
        .at("findings")
        .and_then(Value::as_array)
        .and_then(|findings| findings.first());
    match list {
        Some(first) if first.is_object() => Some(Cased(first)),
        Some(_) => None,
        None => Some(Cased(raw)),
    }
}

fn detect_finding(raw: &Value) -> bool {
    let Some(finding) = api_finding(raw) else {
        return false;
    };
    let from_guardduty = finding
        .str("arn")
        .is_some_and(|arn| arn.contains(":guardduty:"))
        || finding.str("service.serviceName") == Some("guardduty");
    from_guardduty
        && finding.str("accountId").is_some()
        && finding.str("type").is_some()
        && finding.at("schemaVersion").is_some()
}

fn parse_finding(raw: &Value, alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let finding = api_finding(raw).ok_or_else(|| ParseError::DoesNotFit {
        schema_key: FINDING.key,
        reason: "`findings` holds no finding object".into(),
    })?;
    read(finding, None, alert, FINDING.key)
}

/// What a finding says about the remote party: an address and who owns it.
#[derive(Debug, Default)]
pub(super) struct RemoteIp {
    pub(super) address: Option<String>,
    pub(super) country: Option<String>,
    pub(super) city: Option<String>,
    pub(super) owner: Option<String>,
}

/// Reads a `remoteIpDetails` object (GuardDuty and ASFF share its shape).
pub(super) fn remote_ip(details: Option<Cased<'_>>) -> RemoteIp {
    let Some(details) = details else {
        return RemoteIp::default();
    };
    RemoteIp {
        address: details
            .str("ipAddressV4")
            .or_else(|| details.str("ipAddressV6"))
            .and_then(normalize_ip),
        country: details
            .str("country.countryCode")
            .or_else(|| details.str("country.countryName"))
            .map(str::to_string),
        city: details.str("city.cityName").map(str::to_string),
        owner: details
            .str("organization.asnOrg")
            .or_else(|| details.str("organization.org"))
            .or_else(|| details.str("organization.isp"))
            .map(str::to_string),
    }
}

/// GuardDuty's published severity bands.
pub(super) fn severity_word(score: f64) -> &'static str {
    if score >= 9.0 {
        "critical"
    } else if score >= 7.0 {
        "high"
    } else if score >= 4.0 {
        "medium"
    } else if score > 0.0 {
        "low"
    } else {
        "informational"
    }
}

/// Reads one finding; `envelope` is the EventBridge event around it, when there is one.
fn read(
    finding: Cased<'_>,
    envelope: Option<&Value>,
    mut alert: AlertBuilder,
    schema_key: &'static str,
) -> Result<ParsedAlert, ParseError> {
    let Some(finding_type) = finding.str("type") else {
        return Err(ParseError::DoesNotFit {
            schema_key,
            reason: "a GuardDuty finding has a `type` (e.g. UnauthorizedAccess:EC2/SSHBruteForce)"
                .into(),
        });
    };
    let account = finding
        .str("accountId")
        .or_else(|| envelope.and_then(|event| str_at(event, "account")));
    let region = finding
        .str("region")
        .or_else(|| envelope.and_then(|event| str_at(event, "region")));
    let id = finding.text("id");

    alert
        .title(finding.str("title"))
        .title(Some(finding_type))
        .alert_type(Some(&format!("guardduty:{finding_type}")))
        .create_time(finding.time("createdAt"))
        .create_time(finding.time("updatedAt"))
        .create_time(envelope.and_then(|event| time_at(event, "time")))
        .start_time(finding.time("service.eventFirstSeen"))
        .description(finding.str("description"))
        .sweep(finding.str("description"));
    match finding.at("severity") {
        Some(Value::String(word)) if word.trim().parse::<f64>().is_err() => {
            alert.severity(Some(word));
        }
        _ => {
            alert.severity(finding.f64("severity").map(severity_word));
        }
    }
    let url = match (region, id.as_deref()) {
        (Some(region), Some(id)) => Some(format!(
            "https://{region}.console.aws.amazon.com/guardduty/home?region={region}#/findings?macros=current&fId={id}"
        )),
        _ => None,
    };
    alert
        .ticket(id.clone(), "GuardDuty finding ID", url)
        // GuardDuty folds repeats of the same activity into one finding (its `count`
        // grows), so the finding id is the story.
        .coalesce_key(id.map(|id| format!("{}:{id}", account.unwrap_or_default())))
        .tenant(account.map(str::to_string), None);

    alert.signals.category = Some(AlertCategory::Cloud);
    alert.signals.confidence = finding
        .f64("confidence")
        .filter(|confidence| (0.0..=10.0).contains(confidence))
        .map(|confidence| (confidence * 10.0).round() as u8);
    read_tactics(finding_type, &mut alert);
    read_tags(finding, finding_type, &mut alert);
    read_verdict(finding, &mut alert);

    let service = finding.get("service");
    let action = service.and_then(|service| service.get("action"));
    let instance = finding.get("resource.instanceDetails");
    read_action(action, instance, finding_type, &mut alert);
    read_resource(finding, action, account, region, &mut alert);
    read_runtime(service, &mut alert);
    Ok(alert.finish())
}

/// The tactic GuardDuty's threat purpose (the part of the type before the colon) names,
/// and the technique of the best-known finding types.
fn read_tactics(finding_type: &str, alert: &mut AlertBuilder) {
    let (purpose, rest) = finding_type.split_once(':').unwrap_or((finding_type, ""));
    let tactic = match purpose {
        "Backdoor" | "Trojan" => Some("Command and Control"),
        "CryptoCurrency" => Some("Impact"),
        "Stealth" => Some("Defense Evasion"),
        "Recon" if rest.contains("PortProbe") => Some("Reconnaissance"),
        "Recon" => Some("Discovery"),
        "UnauthorizedAccess"
            if rest.contains("BruteForce") || rest.contains("CredentialExfiltration") =>
        {
            Some("Credential Access")
        }
        "UnauthorizedAccess" if rest.contains("TorClient") || rest.contains("TorRelay") => {
            Some("Command and Control")
        }
        "UnauthorizedAccess" => Some("Initial Access"),
        // The anomaly-detection types name an ATT&CK tactic as their purpose
        // ("Discovery:IAMUser/AnomalousBehavior"); Policy, PenTest and Behavior do not.
        other => sleuth_domain::mitre::canonical_tactic(other),
    };
    alert.tactic(tactic);
    let technique = if rest.contains("BruteForce") {
        Some("T1110")
    } else if rest.contains("InstanceCredentialExfiltration") {
        Some("T1552.005")
    } else if purpose == "CryptoCurrency" || rest.contains("CryptoCurrency") {
        Some("T1496")
    } else if rest.contains("ConsoleLogin") || rest.contains("RootCredentialUsage") {
        Some("T1078.004")
    } else if rest.contains("PortProbe") {
        Some("T1595")
    } else if rest.contains("Portscan") {
        Some("T1046")
    } else if rest.contains("Tor") {
        Some("T1090.003")
    } else if purpose == "Backdoor" || purpose == "Trojan" {
        Some("T1071")
    } else {
        None
    };
    alert.technique(technique);
}

fn read_tags(finding: Cased<'_>, finding_type: &str, alert: &mut AlertBuilder) {
    alert
        .tag(Some(finding_type))
        .tag(finding.str("resource.resourceType"))
        .tag(finding.str("service.featureName"));
    // ACTOR: the resource did it (an instance scanning out); TARGET: it was done to it.
    if let Some(role) = finding.str("service.resourceRole") {
        alert.tag(Some(&format!(
            "resource_role:{}",
            role.to_ascii_lowercase()
        )));
    }
    for detail in finding.array("service.evidence.threatIntelligenceDetails") {
        alert.tag(detail.str("threatListName"));
        for name in detail.strings("threatNames") {
            alert.tag(Some(name));
        }
    }
    let additional = additional_info(finding);
    for info in [
        finding.get("service.additionalInfo"),
        additional.as_ref().map(Cased),
    ]
    .into_iter()
    .flatten()
    {
        alert
            .tag(info.str("threatListName"))
            .tag(info.str("threatName"));
    }
    if let Some(count) = finding.u64("service.count").filter(|count| *count > 1) {
        alert.tag(Some(&format!("occurrences:{count}")));
    }
}

/// `service.additionalInfo.value`: GuardDuty writes the finding's extra facts (threat
/// list, threat name, `sample`) as a JSON document inside a string.
fn additional_info(finding: Cased<'_>) -> Option<Value> {
    finding
        .str("service.additionalInfo.value")
        .filter(|text| text.len() <= 65_536)
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .filter(Value::is_object)
}

/// Archived findings are set aside as benign by the account itself; the analysts'
/// feedback, when given, says more. A sample finding is GuardDuty's generated example: that
/// says what the finding is, not that the activity it describes is benign.
fn read_verdict(finding: Cased<'_>, alert: &mut AlertBuilder) {
    let archived = finding.bool("service.archived") == Some(true);
    let sample = finding.bool("service.additionalInfo.sample") == Some(true)
        || additional_info(finding).is_some_and(|info| Cased(&info).bool("sample") == Some(true));
    if archived {
        alert.tag(Some("archived"));
    }
    if sample {
        alert.tag(Some("sample finding"));
        alert.signals.generated_sample = true;
    }
    alert.signals.source_verdict = match finding.str("service.userFeedback") {
        Some(feedback) if feedback.eq_ignore_ascii_case("USEFUL") => Some(SourceVerdict::Malicious),
        Some(feedback) if feedback.eq_ignore_ascii_case("NOT_USEFUL") => {
            Some(SourceVerdict::Benign)
        }
        _ if archived => Some(SourceVerdict::Benign),
        _ => None,
    };
}

/// The network, API-call and sign-in facts of `service.action`, by its kind.
pub(super) fn read_action(
    action: Option<Cased<'_>>,
    instance: Option<Cased<'_>>,
    finding_type: &str,
    alert: &mut AlertBuilder,
) {
    let local_ip = instance.and_then(|instance| {
        instance
            .str("networkInterfaces.0.privateIpAddress")
            .and_then(normalize_ip)
    });
    let Some(action) = action else {
        alert.signals.action = Some(ActionTaken::Observed);
        return;
    };
    let blocked = [
        "networkConnectionAction.blocked",
        "portProbeAction.blocked",
        "dnsRequestAction.blocked",
    ]
    .into_iter()
    .any(|path| action.bool(path) == Some(true));
    alert.signals.action = Some(if blocked {
        ActionTaken::Blocked
    } else {
        ActionTaken::Observed
    });

    if let Some(connection) = action.get("networkConnectionAction") {
        let remote = remote_ip(connection.get("remoteIpDetails"));
        let local = connection
            .str("localIpDetails.ipAddressV4")
            .and_then(normalize_ip)
            .or(local_ip);
        let local_port = connection.port("localPortDetails.port");
        let remote_port = connection.port("remotePortDetails.port");
        let inbound = connection
            .str("connectionDirection")
            .is_some_and(|direction| direction.eq_ignore_ascii_case("INBOUND"));
        let outbound = connection
            .str("connectionDirection")
            .is_some_and(|direction| direction.eq_ignore_ascii_case("OUTBOUND"));
        let protocol = connection.str("protocol").map(str::to_ascii_lowercase);
        alert.signals.network = Some(if inbound {
            NetworkSignal {
                source_ip: remote.address,
                source_port: remote_port,
                destination_ip: local,
                destination_port: local_port,
                protocol,
                direction: Some(Direction::Inbound),
                ..NetworkSignal::default()
            }
        } else {
            NetworkSignal {
                source_ip: local,
                source_port: local_port,
                destination_ip: remote.address,
                destination_port: remote_port,
                protocol,
                direction: outbound.then_some(Direction::Outbound),
                ..NetworkSignal::default()
            }
        });
        alert.tag(remote.owner.as_deref());
    } else if let Some(probe) = action.array("portProbeAction.portProbeDetails").next() {
        let remote = remote_ip(probe.get("remoteIpDetails"));
        alert.signals.network = Some(NetworkSignal {
            source_ip: remote.address,
            destination_ip: probe
                .str("localIpDetails.ipAddressV4")
                .and_then(normalize_ip)
                .or(local_ip),
            destination_port: probe.port("localPortDetails.port"),
            direction: Some(Direction::Inbound),
            ..NetworkSignal::default()
        });
        alert.tag(remote.owner.as_deref());
        // Every prober is worth an entity, not only the first.
        for other in action.array("portProbeAction.portProbeDetails").skip(1) {
            alert.entity(EntityKind::Ip, other.str("remoteIpDetails.ipAddressV4"));
        }
    } else if let Some(dns) = action.get("dnsRequestAction") {
        alert.signals.network = Some(NetworkSignal {
            source_ip: local_ip,
            protocol: dns.str("protocol").map(str::to_ascii_lowercase),
            application_protocol: Some("dns".into()),
            direction: Some(Direction::Outbound),
            hostname: dns.str("domain").map(str::to_string),
            ..NetworkSignal::default()
        });
    } else if let Some(call) = action.get("awsApiCallAction") {
        read_api_call(call, finding_type, alert);
    } else if let Some(call) = action.get("kubernetesApiCallAction") {
        let remote = remote_ip(call.get("remoteIpDetails"));
        for address in call.strings("sourceIps") {
            alert.entity(EntityKind::Ip, Some(address));
        }
        alert.entity(EntityKind::Ip, remote.address.as_deref());
        alert.tag(remote.owner.as_deref());
        let cloud = alert.signals.cloud.get_or_insert_with(CloudSignal::default);
        cloud.operation = call.str("verb").map(|verb| match call.str("requestUri") {
            Some(uri) => format!("{verb} {uri}"),
            None => verb.to_string(),
        });
        cloud.service = Some("kubernetes".into());
    }
}

/// An AWS API call signed with the finding's credentials: where it came from and what
/// it did. A call is an authentication with an access key, so it also fills `sign_in`.
fn read_api_call(call: Cased<'_>, finding_type: &str, alert: &mut AlertBuilder) {
    let remote = remote_ip(call.get("remoteIpDetails"));
    let api = call.str("api");
    let cloud = alert.signals.cloud.get_or_insert_with(CloudSignal::default);
    cloud.operation = api.map(str::to_string);
    cloud.service = call.str("serviceName").map(str::to_string);
    alert.entity(EntityKind::Domain, call.str("domainDetails.domain"));
    alert.entity(
        EntityKind::CloudAccount,
        call.str("remoteAccountDetails.accountId"),
    );
    if remote.address.is_none() {
        return;
    }
    let console = api == Some("ConsoleLogin") || finding_type.contains("ConsoleLogin");
    alert.signals.sign_in = Some(SignInSignal {
        source_ip: remote.address,
        country: remote.country,
        city: remote.city,
        network_owner: remote.owner,
        user_agent: call
            .str("userAgent")
            .or_else(|| call.str("userAgent.fullUserAgent"))
            .map(str::to_string),
        application: Some(if console {
            "AWS Management Console".to_string()
        } else {
            call.str("serviceName").unwrap_or("AWS API").to_string()
        }),
        succeeded: Some(call.str("errorCode").is_none()),
        ..SignInSignal::default()
    });
}

/// The account, the resource and the identity the finding is about.
fn read_resource(
    finding: Cased<'_>,
    action: Option<Cased<'_>>,
    account: Option<&str>,
    region: Option<&str>,
    alert: &mut AlertBuilder,
) {
    let resource_type = finding.str("resource.resourceType");
    let key = finding.get("resource.accessKeyDetails");
    let principal = key
        .and_then(|key| key.str("userName"))
        .or_else(|| finding.str("resource.kubernetesDetails.kubernetesUserDetails.username"));
    // The access key id is what a canary key or a leaked key is listed by.
    alert.entity(
        EntityKind::CloudResource,
        key.and_then(|key| key.str("accessKeyId"))
            .filter(|id| !id.starts_with("GeneratedFinding")),
    );

    let instance = finding.get("resource.instanceDetails");
    let mut resource = None;
    let mut publicly_exposed = None;
    if let Some(instance) = instance {
        resource = instance.str("instanceId");
        alert.entity(
            EntityKind::CloudResource,
            instance.str("iamInstanceProfile.arn"),
        );
        for interface in instance.array("networkInterfaces") {
            alert.entity(EntityKind::Ip, interface.str("privateIpAddress"));
            let public = interface.str("publicIp").and_then(normalize_ip);
            if public.is_some() {
                publicly_exposed = Some(true);
            }
            alert.entity(EntityKind::Ip, public.as_deref());
        }
        // The Name tag is how the organisation knows the machine ("build-01").
        for tag in instance.array("tags") {
            if tag
                .str("key")
                .is_some_and(|key| key.eq_ignore_ascii_case("Name"))
            {
                alert.host(tag.str("value"));
            }
        }
    }
    for bucket in finding.array("resource.s3BucketDetails") {
        let arn = bucket.str("arn").map(str::to_string).or_else(|| {
            bucket
                .str("name")
                .map(|name| format!("arn:aws:s3:::{name}"))
        });
        alert.entity(EntityKind::CloudResource, arn.as_deref());
        if resource.is_none() {
            resource = bucket.str("arn").or_else(|| bucket.str("name"));
        }
        if bucket
            .str("publicAccess.effectivePermission")
            .is_some_and(|permission| permission.eq_ignore_ascii_case("PUBLIC"))
        {
            publicly_exposed = Some(true);
        } else if bucket.str("publicAccess.effectivePermission").is_some() {
            publicly_exposed.get_or_insert(false);
        }
    }
    if let Some(cluster) = finding.get("resource.eksClusterDetails") {
        alert.entity(EntityKind::CloudResource, cluster.str("arn"));
        resource = resource.or_else(|| cluster.str("name"));
        // The cluster and namespace by name, as Falco's and GKE's are: what a scanner
        // declared by cluster or namespace (docs/context.md) is matched against.
        if let Some(name) = cluster.str("name") {
            alert.tag(Some(&format!("cluster:{name}")));
        }
        if let Some(namespace) =
            finding.str("resource.kubernetesDetails.kubernetesWorkloadDetails.namespace")
        {
            alert.tag(Some(&format!("namespace:{namespace}")));
        }
        for container in
            finding.array("resource.kubernetesDetails.kubernetesWorkloadDetails.containers")
        {
            alert.tag(container.str("image"));
        }
    }
    let resource = resource.or_else(|| key.and_then(|key| key.str("accessKeyId")));
    let service = action
        .and_then(|action| action.str("awsApiCallAction.serviceName"))
        .map(str::to_string);
    let cloud = alert.signals.cloud.get_or_insert_with(CloudSignal::default);
    cloud.provider = Some("aws".into());
    cloud.account = account.map(str::to_string);
    cloud.region = region.map(str::to_string);
    cloud.service = cloud.service.take().or(service);
    cloud.principal = principal.map(str::to_string);
    cloud.resource = resource.map(str::to_string);
    cloud.resource_type = resource_type.map(str::to_string);
    cloud.publicly_exposed = publicly_exposed;
    if let Some(sign_in) = alert.signals.sign_in.as_mut() {
        sign_in.user = principal.map(str::to_string);
    }
}

/// Runtime Monitoring findings name the process on the instance or container.
fn read_runtime(service: Option<Cased<'_>>, alert: &mut AlertBuilder) {
    let Some(process) = service.and_then(|service| service.get("runtimeDetails.process")) else {
        return;
    };
    let path = process.str("executablePath");
    alert.signals.process = Some(ProcessSignal {
        name: process
            .str("name")
            .or_else(|| path.and_then(|path| path.rsplit('/').next()))
            .map(str::to_string),
        path: path.map(str::to_string),
        user: process.str("user").map(str::to_string),
        sha256: process.str("executableSha256").map(str::to_string),
        parent_name: process
            .array("lineage")
            .next()
            .and_then(|parent| parent.str("name"))
            .map(str::to_string),
        ..ProcessSignal::default()
    });
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
    fn an_eks_finding_names_its_cluster_and_namespace() {
        let raw = json!({"schemaVersion": "2.0", "accountId": "111122223333", "region": "eu-west-2",
            "id": "f1", "arn": "arn:aws:guardduty:eu-west-2:111122223333:detector/d/finding/f1",
            "type": "Discovery:Kubernetes/SuccessfulAnonymousAccess", "severity": 5,
            "createdAt": "2026-03-10T09:00:00.000Z", "updatedAt": "2026-03-10T09:00:00.000Z",
            "title": "t", "description": "d",
            "resource": {"resourceType": "EKSCluster",
                "eksClusterDetails": {"name": "prod-eks-1", "arn": "arn:aws:eks:eu-west-2:111122223333:cluster/prod-eks-1"},
                "kubernetesDetails": {"kubernetesWorkloadDetails": {"name": "scan", "type": "jobs", "namespace": "sec-scanning"}}},
            "service": {"serviceName": "guardduty", "count": 1}});
        let tags = read(&raw).signals.tags;
        for wanted in ["cluster:prod-eks-1", "namespace:sec-scanning"] {
            assert!(tags.iter().any(|tag| tag == wanted), "{wanted}: {tags:?}");
        }
    }

    #[test]
    fn the_eventbridge_sample_reads_completely() {
        let raw: Value = serde_json::from_str(EVENTBRIDGE.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "aws_guardduty_eventbridge");
        assert_eq!(
            parsed.alert_type,
            "guardduty:UnauthorizedAccess:EC2/SSHBruteForce"
        );
        assert_eq!(parsed.severity.as_deref(), Some("medium"));
        assert_eq!(parsed.direct_source_label, "AWS GuardDuty");
        assert_eq!(parsed.tenant_id.as_deref(), Some("111122223333"));
        assert!(
            parsed
                .origin_ticket_url
                .as_deref()
                .is_some_and(|url| url.contains("fId=") && url.contains("eu-west-2")),
            "{:?}",
            parsed.origin_ticket_url
        );
        let network = parsed.signals.network.as_ref().unwrap();
        assert_eq!(network.direction, Some(Direction::Inbound));
        assert_eq!(network.destination_port, Some(22));
        assert_eq!(parsed.signals.mitre_tactics[0], "Credential Access");
        assert!(
            has(&parsed, EntityKind::Ip, "203.0.113.77"),
            "{:?}",
            parsed.entities
        );
        assert!(has(
            &parsed,
            EntityKind::CloudResource,
            "i-0b7e1c2d3a4f56789"
        ));
        assert!(has(&parsed, EntityKind::CloudAccount, "111122223333"));
        assert!(has(&parsed, EntityKind::Host, "bastion-01"));
    }

    #[test]
    fn the_api_sample_reads_completely() {
        let raw: Value = serde_json::from_str(FINDING.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "aws_guardduty_finding");
        assert_eq!(
            parsed.alert_type,
            "guardduty:UnauthorizedAccess:IAMUser/InstanceCredentialExfiltration.OutsideAWS"
        );
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        let sign_in = parsed.signals.sign_in.as_ref().unwrap();
        assert_eq!(sign_in.source_ip.as_deref(), Some("198.51.100.23"));
        assert_eq!(sign_in.succeeded, Some(true));
        let cloud = parsed.signals.cloud.as_ref().unwrap();
        assert_eq!(cloud.operation.as_deref(), Some("ListBuckets"));
        assert_eq!(cloud.service.as_deref(), Some("s3.amazonaws.com"));
        assert_eq!(cloud.principal.as_deref(), Some("build-runner-role"));
    }

    #[test]
    fn cli_output_in_pascal_case_reads_like_the_api() {
        let raw = json!({"Findings": [{
            "SchemaVersion": "2.0", "AccountId": "444455556666", "Region": "us-east-1",
            "Id": "a1b2", "Arn": "arn:aws:guardduty:us-east-1:444455556666:detector/d1/finding/a1b2",
            "Type": "Backdoor:EC2/C&CActivity.B", "Severity": 8,
            "CreatedAt": "2026-03-02T10:00:00.000Z",
            "Resource": {"ResourceType": "Instance", "InstanceDetails": {"InstanceId": "i-0aaa"}},
            "Service": {"ServiceName": "guardduty", "Archived": false, "Action": {
                "ActionType": "NETWORK_CONNECTION",
                "NetworkConnectionAction": {"ConnectionDirection": "OUTBOUND", "Blocked": false,
                    "RemoteIpDetails": {"IpAddressV4": "203.0.113.50"},
                    "RemotePortDetails": {"Port": 443}, "Protocol": "TCP"}}}
        }]});
        assert_eq!(crate::detect(&raw).key, "aws_guardduty_finding");
        let parsed = read(&raw);
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        assert_eq!(parsed.signals.mitre_tactics[0], "Command and Control");
        let network = parsed.signals.network.unwrap();
        assert_eq!(network.destination_ip.as_deref(), Some("203.0.113.50"));
        assert_eq!(network.direction, Some(Direction::Outbound));
        assert_eq!(parsed.create_time.to_rfc3339(), "2026-03-02T10:00:00+00:00");
    }

    #[test]
    fn archived_findings_read_as_benign_unless_marked_useful_and_samples_as_samples() {
        let cases = [
            (json!({"archived": true}), Some(SourceVerdict::Benign)),
            (
                json!({"archived": true, "userFeedback": "USEFUL"}),
                Some(SourceVerdict::Malicious),
            ),
            (json!({"additionalInfo": {"sample": true}}), None),
            (
                json!({"additionalInfo": {"value": "{\"sample\":true}", "type": "default"}}),
                None,
            ),
            (json!({"archived": false}), None),
        ];
        for (service, expected) in cases {
            let raw = json!({"schemaVersion": "2.0", "accountId": "111122223333",
                "arn": "arn:aws:guardduty:eu-west-2:111122223333:detector/d/finding/f",
                "id": "f", "type": "Policy:IAMUser/RootCredentialUsage", "severity": 2,
                "service": service.clone()});
            let parsed = read(&raw);
            assert_eq!(parsed.signals.source_verdict, expected, "{raw}");
            assert_eq!(
                parsed.signals.generated_sample,
                service.to_string().contains("sample"),
                "{raw}"
            );
        }
    }

    #[test]
    fn severity_follows_guardduty_bands() {
        for (score, word) in [
            (1.0, "low"),
            (3.9, "low"),
            (4.0, "medium"),
            (6.9, "medium"),
            (7.0, "high"),
            (8.9, "high"),
            (9.0, "critical"),
        ] {
            assert_eq!(severity_word(score), word, "{score}");
        }
    }

    #[test]
    fn other_events_are_not_guardduty_findings() {
        assert!(!detect_eventbridge(&json!({"source": "aws.guardduty",
            "detail-type": "GuardDuty Runtime Protection Healthy", "detail": {}})));
        assert!(!detect_finding(&json!({"SchemaVersion": "2018-10-08",
            "AwsAccountId": "111122223333", "Types": ["TTPs"], "ProductArn": "x"})));
        assert!(!detect_finding(&json!({"type": "x", "accountId": "1"})));
    }

    #[test]
    fn a_finding_without_a_type_does_not_fit() {
        let raw = json!({"source": "aws.guardduty", "detail-type": "GuardDuty Finding",
            "detail": {"accountId": "111122223333"}});
        let error = parse_alert(Some("aws_guardduty_eventbridge"), &raw, chrono::Utc::now())
            .expect_err("no type");
        assert!(error.to_string().contains("type"), "{error}");
    }

    #[test]
    fn hostile_input_never_panics() {
        let huge = "x".repeat(100_000);
        let shapes = [
            json!({"source": "aws.guardduty", "detail-type": "GuardDuty Finding", "detail": {
                "type": huge, "severity": "NaN", "id": [1], "region": {"a": 1},
                "service": {"action": {"networkConnectionAction": {"localPortDetails": {"port": 99_999_999},
                    "remoteIpDetails": {"ipAddressV4": 7}}, "portProbeAction": "no"},
                    "count": -1, "archived": "maybe", "evidence": {"threatIntelligenceDetails": "x"}},
                "resource": {"instanceDetails": {"networkInterfaces": [null, 1, {"publicIp": "🦀"}],
                    "tags": [{"key": "Name", "value": "é".repeat(3000)}]},
                    "s3BucketDetails": [{"arn": 5}, "x"]}}}),
            json!({"findings": [], "schemaVersion": 2}),
            json!({"findings": ["not an object"]}),
            json!({"Findings": [{"SchemaVersion": "2.0", "AccountId": "1", "Type": "🦀:🦀/🦀",
                "Arn": "arn:aws:guardduty:x", "Severity": 1e308,
                "Service": {"Action": {"AwsApiCallAction": {"RemoteIpDetails": {"IpAddressV4": "1.2.3.4"}}},
                    "RuntimeDetails": {"Process": {"Lineage": [{}]}}}}]}),
        ];
        for raw in shapes {
            for schema in [&EVENTBRIDGE, &FINDING] {
                let _ = parse_alert(Some(schema.key), &raw, chrono::Utc::now());
            }
            let _ = crate::detect(&raw);
        }
    }
}
