//! Google Cloud Security Command Center findings (API v1 and v2 share the finding's
//! JSON shape), as:
//! - the notification a notification config publishes to Pub/Sub (the decoded message
//!   data: `{"notificationConfigName", "finding": {...}, "resource": {...}}`);
//! - a ListFindings result (`{"finding": {...}, "resource": {...}}`);
//! - a bare finding object.
//!
//! SCC is detection only: the action is always "observed". A muted finding (`mute:
//! MUTED`, by hand or by a mute rule) is one the organisation has set aside as expected:
//! it reads as a benign verdict. MITRE techniques arrive as SCC's enum names
//! (`VALID_ACCOUNTS`) and are mapped to ATT&CK ids by the table below.

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, CloudSignal, Direction, EntityKind, NetworkSignal, ParsedAlert,
    ProcessSignal, SignInSignal, SourceVerdict,
};

use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::entities::{IpScope, ip_scope, normalize_ip};
use crate::json::{array_at, at, str_at, strings_at, text_at, u64_at};
use crate::registry::Schema;
use crate::time::time_at;

pub(crate) static FINDING: Schema = Schema {
    key: "gcp_scc_finding",
    display_name: "Google Cloud Security Command Center finding",
    source_label: "Google Cloud Security Command Center",
    integration: "gcp_scc",
    sample: include_str!("../../samples/gcp_scc_finding.json"),
    detect,
    parse,
};

/// How many items of any one list are read.
const MAX_ITEMS: usize = 50;

/// The finding, wrapped (notification, ListFindings result) or bare.
fn finding_of(raw: &Value) -> &Value {
    raw.get("finding")
        .filter(|finding| finding.is_object())
        .unwrap_or(raw)
}

/// A finding's resource name: `organizations/1/sources/2/findings/3` (v1) or with a
/// `locations/global/` part (v2), or its project-scoped canonical form.
fn is_finding_name(name: &str) -> bool {
    name.contains("/sources/") && name.contains("/findings/")
}

fn detect(raw: &Value) -> bool {
    let finding = finding_of(raw);
    let named = str_at(finding, "name").is_some_and(is_finding_name)
        || str_at(finding, "canonicalName").is_some_and(is_finding_name);
    let notification = str_at(raw, "notificationConfigName").is_some()
        && raw.get("finding").is_some_and(Value::is_object);
    (named || notification) && str_at(finding, "category").is_some()
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let finding = finding_of(raw);
    let Some(category) = str_at(finding, "category") else {
        return Err(ParseError::DoesNotFit {
            schema_key: FINDING.key,
            reason: "an SCC finding has a `category` (e.g. \"Persistence: IAM Anomalous Grant\")"
                .into(),
        });
    };
    let resource = raw.get("resource").filter(|resource| resource.is_object());
    let name = str_at(finding, "name").or_else(|| str_at(finding, "canonicalName"));
    let event_time = time_at(finding, "eventTime");
    let create_time = time_at(finding, "createTime");

    alert
        .title(Some(category))
        .alert_type(Some(&format!("gcp_scc:{category}")))
        // SCC's createTime is when the finding was created (the alert was raised); its
        // eventTime moves to the latest occurrence when the finding fires again.
        .create_time(create_time)
        .create_time(event_time)
        // A finding that fires again keeps its createTime: the activity began then.
        .start_time(match (event_time, create_time) {
            (Some(event), Some(created)) => Some(event.min(created)),
            (event, created) => event.or(created),
        })
        .severity(str_at(finding, "severity").filter(|word| *word != "SEVERITY_UNSPECIFIED"))
        .description(str_at(finding, "description"))
        .sweep(str_at(finding, "description"))
        .ticket(
            name.map(str::to_string),
            "SCC finding name",
            str_at(finding, "externalUri").map(str::to_string),
        )
        .coalesce_key(
            str_at(finding, "canonicalName")
                .or(name)
                .map(str::to_string),
        );

    let organization = name
        .and_then(|name| name.strip_prefix("organizations/"))
        .and_then(|rest| rest.split('/').next());
    let project = resource
        .and_then(|resource| str_at(resource, "projectDisplayName"))
        .or_else(|| {
            resource.and_then(|resource| str_at(resource, "gcpMetadata.projectDisplayName"))
        })
        .or_else(|| str_at(finding, "sourceProperties.properties.project_id"))
        .or_else(|| str_at(finding, "sourceProperties.ProjectId"));
    alert.tenant(
        organization
            .map(|organization| format!("organizations/{organization}"))
            .or_else(|| project.map(str::to_string)),
        project.map(str::to_string),
    );

    alert.signals.category = Some(AlertCategory::Cloud);
    alert.signals.action = Some(ActionTaken::Observed);
    read_mitre(finding, category, &mut alert);
    for path in ["findingClass", "state", "parentDisplayName"] {
        alert.tag(str_at(finding, path));
    }
    let muted = str_at(finding, "mute") == Some("MUTED");
    if muted {
        alert.tag(Some("muted"));
        alert.tag(str_at(finding, "muteInitiator"));
        alert.signals.source_verdict = Some(SourceVerdict::Benign);
    }
    read_access(finding, &mut alert);
    read_indicators(finding, &mut alert);
    read_process(finding, &mut alert);
    read_cloud(finding, resource, project, category, &mut alert);
    Ok(alert.finish())
}

/// SCC's `Technique` enum names and their ATT&CK ids, as Google documents them.
const TECHNIQUES: &[(&str, &str)] = &[
    ("ABUSE_ELEVATION_CONTROL_MECHANISM", "T1548"),
    ("ACCESS_TOKEN_MANIPULATION", "T1134"),
    ("ACCOUNT_MANIPULATION", "T1098"),
    ("ACTIVE_SCANNING", "T1595"),
    ("APPLICATION_LAYER_PROTOCOL", "T1071"),
    ("BRUTE_FORCE", "T1110"),
    ("CLOUD_ACCOUNTS", "T1078.004"),
    ("CLOUD_GROUPS", "T1069.003"),
    ("COMMAND_AND_SCRIPTING_INTERPRETER", "T1059"),
    ("CREATE_OR_MODIFY_SYSTEM_PROCESS", "T1543"),
    ("DATA_DESTRUCTION", "T1485"),
    ("DEFAULT_ACCOUNTS", "T1078.001"),
    ("DOMAIN_POLICY_MODIFICATION", "T1484"),
    ("DYNAMIC_RESOLUTION", "T1568"),
    ("ENCRYPTED_CHANNEL", "T1573"),
    ("ESCAPE_TO_HOST", "T1611"),
    ("EXFILTRATION_OVER_WEB_SERVICE", "T1567"),
    ("EXFILTRATION_TO_CLOUD_STORAGE", "T1567.002"),
    ("EXPLOIT_PUBLIC_FACING_APPLICATION", "T1190"),
    ("EXTERNAL_PROXY", "T1090.002"),
    ("IMPAIR_DEFENSES", "T1562"),
    ("INGRESS_TOOL_TRANSFER", "T1105"),
    ("LOCAL_ACCOUNTS", "T1078.003"),
    ("MODIFY_AUTHENTICATION_PROCESS", "T1556"),
    ("MODIFY_CLOUD_COMPUTE_INFRASTRUCTURE", "T1578"),
    ("MULTI_HOP_PROXY", "T1090.003"),
    ("NATIVE_API", "T1106"),
    ("NETWORK_DENIAL_OF_SERVICE", "T1498"),
    ("NETWORK_SERVICE_DISCOVERY", "T1046"),
    ("OBTAIN_CAPABILITIES", "T1588"),
    ("PERMISSION_GROUPS_DISCOVERY", "T1069"),
    ("PROXY", "T1090"),
    ("RESOURCE_HIJACKING", "T1496"),
    ("SCANNING_IP_BLOCKS", "T1595.001"),
    ("SHARED_MODULES", "T1129"),
    ("SSH_AUTHORIZED_KEYS", "T1098.004"),
    ("STEAL_WEB_SESSION_COOKIE", "T1539"),
    ("UNIX_SHELL", "T1059.004"),
    ("UNSECURED_CREDENTIALS", "T1552"),
    ("USER_EXECUTION", "T1204"),
    ("VALID_ACCOUNTS", "T1078"),
];

fn read_mitre(finding: &Value, category: &str, alert: &mut AlertBuilder) {
    alert.tactic(str_at(finding, "mitreAttack.primaryTactic"));
    for tactic in strings_at(finding, "mitreAttack.additionalTactics") {
        alert.tactic(Some(tactic));
    }
    // Threat categories lead with their tactic: "Persistence: IAM Anomalous Grant".
    if let Some((prefix, _)) = category.split_once(':') {
        alert.tactic(Some(prefix));
    }
    for technique in strings_at(finding, "mitreAttack.primaryTechniques")
        .into_iter()
        .chain(strings_at(finding, "mitreAttack.additionalTechniques"))
    {
        let id = TECHNIQUES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(technique))
            .map_or(technique, |(_, id)| id);
        alert.technique(Some(id));
    }
}

/// Who called which API from where (Event Threat Detection's `access`). An API call is
/// an authenticated action, so it also fills `sign_in`.
fn read_access(finding: &Value, alert: &mut AlertBuilder) {
    let principal = str_at(finding, "access.principalEmail")
        .or_else(|| str_at(finding, "access.principalSubject"));
    let caller_ip = str_at(finding, "access.callerIp").and_then(normalize_ip);
    alert.entity(
        EntityKind::CloudResource,
        str_at(finding, "access.serviceAccountKeyName"),
    );
    for delegate in array_at(finding, "access.serviceAccountDelegationInfo")
        .iter()
        .take(MAX_ITEMS)
    {
        alert.entity(EntityKind::User, str_at(delegate, "principalEmail"));
    }
    if caller_ip.is_none() && principal.is_none() {
        return;
    }
    alert.signals.sign_in = Some(SignInSignal {
        user: principal.map(str::to_string),
        source_ip: caller_ip,
        country: str_at(finding, "access.callerIpGeo.regionCode").map(str::to_string),
        user_agent: str_at(finding, "access.userAgent")
            .or_else(|| str_at(finding, "access.userAgentFamily"))
            .map(str::to_string),
        application: str_at(finding, "access.serviceName").map(str::to_string),
        ..SignInSignal::default()
    });
}

/// Indicators, connections, files and IAM bindings.
fn read_indicators(finding: &Value, alert: &mut AlertBuilder) {
    for address in strings_at(finding, "indicator.ipAddresses") {
        alert.entity(EntityKind::Ip, Some(address));
    }
    for domain in strings_at(finding, "indicator.domains") {
        alert.entity(EntityKind::Domain, Some(domain));
    }
    for uri in strings_at(finding, "indicator.uris") {
        alert.entity(EntityKind::Url, Some(uri));
    }
    for signature in array_at(finding, "indicator.signatures")
        .iter()
        .take(MAX_ITEMS)
    {
        alert.tag(str_at(signature, "memoryHashSignature.binaryFamily"));
        alert.tag(str_at(signature, "yaraRuleSignature.yaraRule"));
    }
    for file in array_at(finding, "files").iter().take(MAX_ITEMS) {
        alert.entity(EntityKind::FilePath, str_at(file, "path"));
        alert.hash(str_at(file, "sha256"));
    }
    let members = array_at(finding, "iamBindings")
        .iter()
        .take(MAX_ITEMS)
        .filter_map(|binding| {
            alert.tag(str_at(binding, "role"));
            str_at(binding, "member")
        })
        .chain(strings_at(
            finding,
            "sourceProperties.sensitiveRoleGrant.members",
        ))
        .collect::<Vec<_>>();
    for member in members {
        // Members are written "user:name@example.com", "serviceAccount:...": an account,
        // and the address that names it (an outside address is the finding's point).
        let name = member.split_once(':').map_or(member, |(_, name)| name);
        alert.entity(EntityKind::User, Some(name));
        alert.entity(EntityKind::Email, Some(name));
    }
    // Where data went (Exfiltration findings): the resources, and the projects that own
    // them, so an outside project is named and checked against the organisation's.
    for path in [
        "exfiltration.sources",
        "exfiltration.targets",
        "sourceProperties.exfiltration.sources",
        "sourceProperties.exfiltration.targets",
    ] {
        for end in array_at(finding, path).iter().take(MAX_ITEMS) {
            let resource = str_at(end, "name");
            alert.entity(EntityKind::CloudResource, resource);
            alert.entity(EntityKind::CloudAccount, resource.and_then(project_of));
        }
    }
    if let Some(connection) = array_at(finding, "connections").first() {
        let source_ip = str_at(connection, "sourceIp").and_then(normalize_ip);
        let destination_ip = str_at(connection, "destinationIp").and_then(normalize_ip);
        let port = |path: &str| u64_at(connection, path).and_then(|port| u16::try_from(port).ok());
        let inside = |ip: &Option<String>| {
            ip.as_deref()
                .and_then(ip_scope)
                .map(|scope| scope != IpScope::Public)
        };
        let direction = match (inside(&source_ip), inside(&destination_ip)) {
            (Some(true), Some(true)) => Some(Direction::Internal),
            (Some(true), Some(false)) => Some(Direction::Outbound),
            (Some(false), Some(true)) => Some(Direction::Inbound),
            _ => None,
        };
        alert.signals.network = Some(NetworkSignal {
            source_port: port("sourcePort"),
            destination_port: port("destinationPort"),
            protocol: str_at(connection, "protocol")
                .filter(|protocol| *protocol != "PROTOCOL_UNSPECIFIED")
                .map(str::to_ascii_lowercase),
            direction,
            source_ip,
            destination_ip,
            hostname: strings_at(finding, "indicator.domains")
                .first()
                .map(|domain| (*domain).to_string()),
            ..NetworkSignal::default()
        });
        for other in array_at(finding, "connections")
            .iter()
            .skip(1)
            .take(MAX_ITEMS)
        {
            alert.entity(EntityKind::Ip, str_at(other, "destinationIp"));
        }
    } else if let Some(domain) = strings_at(finding, "indicator.domains").first() {
        alert.signals.network = Some(NetworkSignal {
            hostname: Some((*domain).to_string()),
            application_protocol: Some("dns".into()),
            ..NetworkSignal::default()
        });
    }
}

/// The project of a full resource name: "//bigquery.googleapis.com/projects/p-1/datasets/d"
/// is in project "p-1".
/// The GKE cluster a resource name is, or lies in.
fn cluster_of(resource: &str) -> Option<&str> {
    resource
        .strip_prefix("//container.googleapis.com/")?
        .split_once("/clusters/")
        .and_then(|(_, rest)| rest.split('/').next())
        .filter(|cluster| !cluster.is_empty())
}

fn project_of(resource: &str) -> Option<&str> {
    resource
        .split_once("/projects/")
        .and_then(|(_, rest)| rest.split('/').next())
        .filter(|project| !project.is_empty())
}

/// The first process of `processes` (Container and VM Threat Detection list the one
/// that fired first), with its parent when the list holds it.
fn read_process(finding: &Value, alert: &mut AlertBuilder) {
    let processes = array_at(finding, "processes");
    let Some(process) = processes.first() else {
        return;
    };
    let path = str_at(process, "binary.path");
    let command_line = strings_at(process, "args").join(" ");
    let parent = text_at(process, "parentPid").and_then(|parent_pid| {
        processes
            .iter()
            .take(MAX_ITEMS)
            .find(|candidate| text_at(candidate, "pid").as_deref() == Some(parent_pid.as_str()))
    });
    let parent_path = parent.and_then(|parent| str_at(parent, "binary.path"));
    alert.signals.process = Some(ProcessSignal {
        name: str_at(process, "name")
            .or_else(|| path.and_then(|path| path.rsplit('/').next()))
            .map(str::to_string),
        path: path.map(str::to_string),
        command_line: (!command_line.is_empty()).then_some(command_line),
        parent_name: parent
            .and_then(|parent| str_at(parent, "name"))
            .or_else(|| parent_path.and_then(|path| path.rsplit('/').next()))
            .map(str::to_string),
        parent_command_line: parent
            .map(|parent| strings_at(parent, "args").join(" "))
            .filter(|line| !line.is_empty()),
        sha256: str_at(process, "binary.sha256").map(str::to_string),
        ..ProcessSignal::default()
    });
    for library in array_at(process, "libraries").iter().take(MAX_ITEMS) {
        alert.entity(EntityKind::FilePath, str_at(library, "path"));
        alert.hash(str_at(library, "sha256"));
    }
    alert.entity(EntityKind::FilePath, str_at(process, "script.path"));
    alert.hash(str_at(process, "script.sha256"));
}

fn read_cloud(
    finding: &Value,
    resource: Option<&Value>,
    project: Option<&str>,
    category: &str,
    alert: &mut AlertBuilder,
) {
    let resource_name = str_at(finding, "resourceName")
        .or_else(|| resource.and_then(|resource| str_at(resource, "name")));
    for container in array_at(finding, "containers").iter().take(MAX_ITEMS) {
        alert.tag(str_at(container, "uri"));
    }
    for pod in array_at(finding, "kubernetes.pods").iter().take(MAX_ITEMS) {
        if let (Some(namespace), Some(name)) = (str_at(pod, "ns"), str_at(pod, "name")) {
            alert.tag(Some(&format!("pod:{namespace}/{name}")));
            alert.tag(Some(&format!("namespace:{namespace}")));
        }
    }
    // GKE findings name the cluster as their resource:
    // `//container.googleapis.com/projects/P/locations/L/clusters/NAME`.
    if let Some(cluster) = resource_name.and_then(cluster_of) {
        alert.tag(Some(&format!("cluster:{cluster}")));
    }
    // Security Health Analytics names exposure by category ("PUBLIC_BUCKET_ACL",
    // "OPEN_FIREWALL", "PUBLIC_IP_ADDRESS").
    let exposed = category.starts_with("PUBLIC_") || category.starts_with("OPEN_");
    let principal = str_at(finding, "access.principalEmail");
    alert.signals.cloud = Some(CloudSignal {
        provider: Some("gcp".into()),
        account: project.map(str::to_string),
        region: resource
            .and_then(|resource| str_at(resource, "location"))
            .map(str::to_string),
        service: str_at(finding, "access.serviceName")
            .or_else(|| resource.and_then(|resource| str_at(resource, "service")))
            .map(str::to_string),
        operation: str_at(finding, "access.methodName").map(str::to_string),
        principal: principal.map(str::to_string),
        resource: resource_name.map(str::to_string),
        resource_type: resource
            .and_then(|resource| str_at(resource, "type"))
            .map(str::to_string),
        publicly_exposed: exposed.then_some(true),
    });
    // The resource's full name, and the instance or bucket inside it.
    if let Some(name) = resource_name {
        alert.entity(EntityKind::CloudResource, Some(name));
    }
    // A VM's display name is its host name; other resources are named for what they are.
    let display_name = resource.and_then(|resource| str_at(resource, "displayName"));
    if resource.and_then(|resource| str_at(resource, "type")) == Some("google.compute.Instance") {
        alert.host(display_name);
    } else {
        alert.entity(EntityKind::CloudResource, display_name);
    }
    for node in array_at(finding, "kubernetes.nodes").iter().take(MAX_ITEMS) {
        alert.host(str_at(node, "name"));
    }
    alert.entity(
        EntityKind::CloudResource,
        at(finding, "sourceProperties.properties.instanceDetails").and_then(Value::as_str),
    );
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
        assert_eq!(parsed.schema_key, "gcp_scc_finding");
        assert_eq!(parsed.title, "Persistence: IAM Anomalous Grant");
        assert_eq!(
            parsed.alert_type,
            "gcp_scc:Persistence: IAM Anomalous Grant"
        );
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        assert_eq!(parsed.signals.mitre_tactics[0], "Persistence");
        assert!(
            parsed
                .signals
                .mitre_techniques
                .contains(&"T1098".to_string())
        );
        let sign_in = parsed.signals.sign_in.as_ref().unwrap();
        assert_eq!(sign_in.user.as_deref(), Some("m.garcia@example.com"));
        let cloud = parsed.signals.cloud.as_ref().unwrap();
        assert_eq!(cloud.account.as_deref(), Some("example-prod-3141"));
        assert_eq!(cloud.operation.as_deref(), Some("SetIamPolicy"));
        assert!(parsed.entities.iter().any(|entity| {
            entity.kind == EntityKind::User && entity.value == "ops.helper.7731@gmail.com"
        }));
        assert_eq!(parsed.tenant_label.as_deref(), Some("example-prod-3141"));
    }

    #[test]
    fn a_gke_finding_names_its_cluster_and_its_pods_namespaces() {
        let raw = json!({
            "name": "organizations/1/sources/2/findings/abc", "category": "Execution: Added Binary Executed",
            "state": "ACTIVE", "severity": "HIGH", "findingClass": "THREAT",
            "eventTime": "2026-03-01T10:00:00Z", "createTime": "2026-03-01T10:00:05Z",
            "resourceName": "//container.googleapis.com/projects/p-1/locations/europe-west2/clusters/sec-tools-gke",
            "kubernetes": {"pods": [{"ns": "scanners", "name": "trivy-7f9c"}]}
        });
        let tags = read(&raw).signals.tags;
        for wanted in ["cluster:sec-tools-gke", "namespace:scanners"] {
            assert!(tags.iter().any(|tag| tag == wanted), "{wanted}: {tags:?}");
        }
        assert_eq!(
            cluster_of("//compute.googleapis.com/projects/p/clusters/x"),
            None
        );
    }

    #[test]
    fn a_bare_muted_finding_reads_as_benign() {
        let raw = json!({
            "name": "organizations/1/sources/2/findings/abc", "category": "OPEN_FIREWALL",
            "state": "ACTIVE", "severity": "MEDIUM", "findingClass": "MISCONFIGURATION",
            "mute": "MUTED", "eventTime": "2026-03-01T10:00:00Z", "createTime": "2026-02-01T10:00:00Z",
            "resourceName": "//compute.googleapis.com/projects/example-prod-3141/global/firewalls/123"
        });
        assert_eq!(crate::detect(&raw).key, "gcp_scc_finding");
        let parsed = read(&raw);
        assert_eq!(parsed.signals.source_verdict, Some(SourceVerdict::Benign));
        assert_eq!(
            parsed.start_time.map(|time| time.to_rfc3339()).as_deref(),
            Some("2026-02-01T10:00:00+00:00")
        );
        assert_eq!(parsed.signals.cloud.unwrap().publicly_exposed, Some(true));
    }

    #[test]
    fn processes_name_their_parent() {
        let raw = json!({"finding": {
        "name": "projects/9/sources/2/locations/global/findings/p1",
        "category": "Execution: Added Binary Executed", "severity": "CRITICAL",
        "processes": [
            {"name": "xmr", "pid": "40", "parentPid": "12", "args": ["/tmp/xmr", "-o", "pool:443"],
             "binary": {"path": "/tmp/xmr", "sha256": "a".repeat(64)}},
            {"name": "bash", "pid": "12", "args": ["bash"]}
        ]}});
        let parsed = read(&raw);
        let process = parsed.signals.process.unwrap();
        assert_eq!(process.parent_name.as_deref(), Some("bash"));
        assert_eq!(
            process.command_line.as_deref(),
            Some("/tmp/xmr -o pool:443")
        );
        assert_eq!(parsed.severity.as_deref(), Some("critical"));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Execution"]);
    }

    #[test]
    fn other_pubsub_messages_are_not_scc_findings() {
        assert!(!detect(&json!({"finding": {"category": "x"}})));
        assert!(!detect(
            &json!({"name": "projects/p/topics/t", "category": "x"})
        ));
        assert!(!detect(
            &json!({"notificationConfigName": "n", "finding": "x"})
        ));
    }

    #[test]
    fn hostile_input_never_panics() {
        let huge = "z".repeat(100_000);
        let shapes = [
            json!({"notificationConfigName": "n", "finding": {"category": huge, "processes": [{"parentPid": [1]}, 3],
                "connections": [{"destinationPort": -1, "sourceIp": {"a": 1}}], "mitreAttack": {"primaryTechniques": "🦀"},
                "iamBindings": [{"member": ":"}], "eventTime": 1e300, "access": {"callerIp": 5}}, "resource": 7}),
            json!({"name": "organizations/1/sources/2/findings/3", "category": "é:ü", "severity": []}),
            json!({"notificationConfigName": "n", "finding": {}}),
        ];
        for raw in shapes {
            let _ = parse_alert(Some(FINDING.key), &raw, chrono::Utc::now());
            let _ = crate::detect(&raw);
        }
    }
}
