//! Falco alerts in Falco's JSON output (`json_output: true`; Falco 0.31 and later add
//! `hostname`, `source` and `tags`), as written to stdout, a file, Falco's HTTP output,
//! or forwarded by Falcosidekick (the same body, plus the `uuid` it assigns).
//!
//! `output_fields` keys are Falco field names with dots (`proc.cmdline`); they are read
//! as flattened keys. The event source picks the category: `syscall` is a host or
//! container (endpoint); `k8s_audit` and the cloud plugins (`aws_cloudtrail`, `gcp_auditlog`)
//! are the cloud control plane. Falco only detects: the action is always "observed".
//! Severity is Falco's priority: Emergency/Alert/Critical, Error (high), Warning (medium),
//! Notice (low), Informational/Debug.

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, CloudSignal, Direction, EntityKind, NetworkSignal, ParsedAlert,
    ProcessSignal, SeverityLevel,
};

use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::entities::{IpScope, ip_scope, normalize_ip};
use crate::json::{str_at, strings_at, u64_at};
use crate::registry::Schema;
use crate::time::time_at;

pub(crate) static EVENT: Schema = Schema {
    key: "falco_event",
    display_name: "Falco alert (JSON output or Falcosidekick)",
    source_label: "Falco",
    integration: "falco",
    sample: include_str!("../../samples/falco_event.json"),
    detect,
    parse,
};

/// Falco's priorities, and the level each stands for.
fn priority_level(priority: &str) -> Option<SeverityLevel> {
    Some(match priority.to_ascii_lowercase().as_str() {
        "emergency" | "alert" | "critical" => SeverityLevel::Critical,
        "error" => SeverityLevel::High,
        "warning" => SeverityLevel::Medium,
        "notice" => SeverityLevel::Low,
        "informational" | "info" | "debug" => SeverityLevel::Informational,
        _ => return None,
    })
}

fn detect(raw: &Value) -> bool {
    str_at(raw, "rule").is_some()
        && str_at(raw, "output").is_some()
        && str_at(raw, "priority").is_some_and(|priority| priority_level(priority).is_some())
        && (raw.get("output_fields").is_some_and(Value::is_object) || raw.get("time").is_some())
}

/// A Falco field out of `output_fields`.
fn field<'a>(raw: &'a Value, name: &str) -> Option<&'a str> {
    raw.get("output_fields")
        .and_then(|fields| fields.get(name))
        .and_then(|value| str_at(value, ""))
        .filter(|text| *text != "<NA>")
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let Some(rule) = str_at(raw, "rule") else {
        return Err(ParseError::DoesNotFit {
            schema_key: EVENT.key,
            reason: "a Falco alert names its `rule`".into(),
        });
    };
    let source = str_at(raw, "source").unwrap_or("syscall");
    let hostname = str_at(raw, "hostname");
    let priority = str_at(raw, "priority");
    alert.signals.severity_level = priority.and_then(priority_level);
    let output = str_at(raw, "output");
    alert
        .title(Some(rule))
        .alert_type(Some(&format!("falco:{rule}")))
        .create_time(time_at(raw, "time"))
        .create_time(
            raw.get("output_fields")
                .and_then(|fields| fields.get("evt.time"))
                .and_then(crate::time::parse_value),
        )
        .severity(priority)
        .description(output)
        .sweep(output)
        .ticket(
            str_at(raw, "uuid").map(str::to_string),
            "Falcosidekick event UUID",
            None,
        );
    let syscall = matches!(source, "syscall" | "syscalls");
    // For syscalls the hostname is the machine the event happened on; for audit and
    // cloud sources it is only where Falco runs.
    if syscall {
        alert.host(hostname);
    }
    // One story per rule on one workload: the container, else the pod, else the host;
    // for audit events, one actor on one object.
    let workload = if syscall {
        field(raw, "container.id")
            .filter(|id| *id != "host")
            .or_else(|| field(raw, "k8s.pod.name"))
            .or(hostname)
            .map(str::to_string)
    } else {
        Some(format!(
            "{}:{}/{}",
            field(raw, "ka.user.name").unwrap_or_default(),
            field(raw, "ka.target.namespace").unwrap_or_default(),
            field(raw, "ka.target.name").unwrap_or_default()
        ))
    };
    alert.coalesce_key(Some(format!("{rule}:{}", workload.unwrap_or_default())));

    alert.signals.category = Some(match source {
        _ if syscall => AlertCategory::Endpoint,
        "okta" => AlertCategory::Identity,
        "github" => AlertCategory::Application,
        _ => AlertCategory::Cloud,
    });
    alert.signals.action = Some(ActionTaken::Observed);
    for tag in strings_at(raw, "tags") {
        alert.tag(Some(tag));
        // Falco's rules tag ATT&CK as "mitre_credential_access" and "T1003.008".
        if let Some(tactic) = tag.strip_prefix("mitre_") {
            alert.tactic(Some(tactic));
        }
        alert.technique(Some(tag));
    }
    alert.tag(Some(&format!("source:{source}")));
    for (name, prefix) in [
        ("k8s.ns.name", "namespace"),
        ("k8s.pod.name", "pod"),
        ("container.name", "container"),
    ] {
        if let Some(value) = field(raw, name) {
            alert.tag(Some(&format!("{prefix}:{value}")));
        }
    }
    // The image a container runs is the workload's identity across restarts.
    alert.entity(
        EntityKind::CloudResource,
        field(raw, "container.image.repository"),
    );

    if source.starts_with("k8s") {
        read_audit(raw, &mut alert);
    } else {
        read_process(raw, &mut alert);
        read_network(raw, &mut alert);
    }
    Ok(alert.finish())
}

fn read_process(raw: &Value, alert: &mut AlertBuilder) {
    let name = field(raw, "proc.name");
    let command_line = field(raw, "proc.cmdline");
    if name.is_none() && command_line.is_none() {
        return;
    }
    alert.signals.process = Some(ProcessSignal {
        name: name.map(str::to_string),
        path: field(raw, "proc.exepath")
            .or_else(|| field(raw, "proc.exe").filter(|exe| exe.starts_with('/')))
            .map(str::to_string),
        command_line: command_line.map(str::to_string),
        parent_name: field(raw, "proc.pname").map(str::to_string),
        parent_command_line: field(raw, "proc.pcmdline").map(str::to_string),
        user: field(raw, "user.name").map(str::to_string),
        ..ProcessSignal::default()
    });
    // Behind `sudo`, the login name is the person; `user.name` is root.
    alert.entity(EntityKind::User, field(raw, "user.loginname"));
    // A file descriptor is a path for files, "client->server" for sockets.
    alert.entity(
        EntityKind::FilePath,
        field(raw, "fd.name").filter(|descriptor| descriptor.starts_with('/')),
    );
    for path in [
        "fs.path.name",
        "fs.path.target",
        "evt.arg.path",
        "evt.arg.filename",
    ] {
        alert.entity(
            EntityKind::FilePath,
            field(raw, path).filter(|path| path.starts_with('/')),
        );
    }
}

/// The connection of a socket alert: Falco's `fd.*` fields, or its `fd.name`
/// ("10.0.0.5:43512->203.0.113.50:4444").
fn read_network(raw: &Value, alert: &mut AlertBuilder) {
    let port = |name: &str| {
        raw.get("output_fields")
            .and_then(|fields| fields.get(name))
            .and_then(|value| u64_at(value, ""))
            .and_then(|port| u16::try_from(port).ok())
    };
    let (mut client, mut server) = (
        field(raw, "fd.cip").and_then(normalize_ip),
        field(raw, "fd.sip").and_then(normalize_ip),
    );
    let (mut client_port, mut server_port) = (port("fd.cport"), port("fd.sport"));
    if let Some((left, right)) = field(raw, "fd.name").and_then(|name| name.split_once("->")) {
        let split = |end: &str| {
            let (host, port) = end.rsplit_once(':')?;
            Some((normalize_ip(host)?, port.parse::<u16>().ok()))
        };
        if let (Some((left_ip, left_port)), Some((right_ip, right_port))) =
            (split(left), split(right))
        {
            client = client.or(Some(left_ip));
            server = server.or(Some(right_ip));
            client_port = client_port.or(left_port);
            server_port = server_port.or(right_port);
        }
    }
    if client.is_none() && server.is_none() {
        return;
    }
    let inside = |ip: &Option<String>| {
        ip.as_deref()
            .and_then(ip_scope)
            .map(|scope| scope != IpScope::Public)
    };
    let direction = match (inside(&client), inside(&server)) {
        (Some(true), Some(true)) => Some(Direction::Internal),
        (Some(true), Some(false)) => Some(Direction::Outbound),
        (Some(false), Some(true)) => Some(Direction::Inbound),
        _ => None,
    };
    alert.signals.network = Some(NetworkSignal {
        source_ip: client,
        source_port: client_port,
        destination_ip: server,
        destination_port: server_port,
        protocol: field(raw, "fd.l4proto").map(str::to_ascii_lowercase),
        direction,
        ..NetworkSignal::default()
    });
}

/// A Kubernetes audit event: who did what to which object, from where.
fn read_audit(raw: &Value, alert: &mut AlertBuilder) {
    let user = field(raw, "ka.user.name");
    let verb = field(raw, "ka.verb");
    let target = field(raw, "ka.target.resource");
    let name = field(raw, "ka.target.name");
    let namespace = field(raw, "ka.target.namespace");
    // `ka.sourceips` is a list written as "[203.0.113.9 10.0.0.1]" in the output fields.
    if let Some(addresses) = field(raw, "ka.sourceips") {
        for address in addresses
            .trim_matches(|character| character == '[' || character == ']')
            .split([' ', ','])
        {
            alert.entity(EntityKind::Ip, Some(address));
        }
    }
    alert.tag(field(raw, "ka.useragent"));
    for image in strings_at(raw, "output_fields.ka.req.pod.containers.image") {
        alert.tag(Some(image));
    }
    alert.entity(
        EntityKind::CloudResource,
        field(raw, "ka.req.pod.containers.image"),
    );
    alert.signals.cloud = Some(CloudSignal {
        provider: Some("kubernetes".into()),
        service: Some("kube-apiserver".into()),
        operation: verb.map(|verb| match field(raw, "ka.target.subresource") {
            Some(subresource) => format!("{verb} {subresource}"),
            None => verb.to_string(),
        }),
        principal: user.map(str::to_string),
        resource: match (namespace, target, name) {
            (Some(namespace), Some(target), Some(name)) => {
                Some(format!("{namespace}/{target}/{name}"))
            }
            (None, Some(target), Some(name)) => Some(format!("{target}/{name}")),
            _ => name.map(str::to_string),
        },
        resource_type: target.map(str::to_string),
        ..CloudSignal::default()
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

    #[test]
    fn the_sample_reads_completely() {
        let raw: Value = serde_json::from_str(EVENT.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "falco_event");
        assert_eq!(parsed.title, "Terminal shell in container");
        assert_eq!(parsed.alert_type, "falco:Terminal shell in container");
        assert_eq!(parsed.severity.as_deref(), Some("notice"));
        assert_eq!(parsed.signals.severity_level, Some(SeverityLevel::Low));
        assert_eq!(parsed.signals.category, Some(AlertCategory::Endpoint));
        assert_eq!(parsed.signals.mitre_tactics[0], "Execution");
        let process = parsed.signals.process.as_ref().unwrap();
        assert_eq!(process.name.as_deref(), Some("bash"));
        assert_eq!(process.parent_name.as_deref(), Some("runc"));
        assert!(parsed.entities.iter().any(|entity| entity.kind == EntityKind::Host
            && entity.value == "k8s-prod-node-07"));
        assert_eq!(
            parsed.create_time.to_rfc3339(),
            "2026-03-09T11:02:17.482913007+00:00"
        );
    }

    #[test]
    fn priorities_map_to_levels_and_keep_falcos_word() {
        for (priority, level) in [
            ("Emergency", SeverityLevel::Critical),
            ("Critical", SeverityLevel::Critical),
            ("Error", SeverityLevel::High),
            ("Warning", SeverityLevel::Medium),
            ("Notice", SeverityLevel::Low),
            ("Informational", SeverityLevel::Informational),
            ("Debug", SeverityLevel::Informational),
        ] {
            let parsed = read(&json!({"rule": "r", "priority": priority, "output": "o",
                "time": "2026-03-09T11:02:17Z", "output_fields": {}}));
            assert_eq!(parsed.signals.severity_level, Some(level), "{priority}");
            assert_eq!(
                parsed.severity.as_deref(),
                Some(priority.to_lowercase().as_str())
            );
        }
    }

    #[test]
    fn a_socket_descriptor_becomes_the_connection() {
        let parsed = read(
            &json!({"rule": "Redirect STDOUT/STDIN to Network Connection in Container",
            "priority": "Critical", "output": "o", "source": "syscall", "time": "2026-03-09T11:02:17Z",
            "output_fields": {"proc.name": "sh", "fd.name": "10.42.3.17:40312->203.0.113.50:4444", "fd.l4proto": "tcp"}}),
        );
        let network = parsed.signals.network.unwrap();
        assert_eq!(network.destination_ip.as_deref(), Some("203.0.113.50"));
        assert_eq!(network.destination_port, Some(4444));
        assert_eq!(network.source_port, Some(40312));
        assert_eq!(network.direction, Some(Direction::Outbound));
    }

    #[test]
    fn kubernetes_audit_alerts_are_cloud_control_plane() {
        let parsed = read(
            &json!({"rule": "Attach/Exec Pod", "priority": "Notice", "source": "k8s_audit",
            "output": "o", "time": "2026-03-09T11:02:17Z", "tags": ["k8s", "mitre_execution", "T1609"],
            "output_fields": {"ka.user.name": "m.garcia@example.com", "ka.verb": "create",
                "ka.target.resource": "pods", "ka.target.subresource": "exec", "ka.target.name": "payments-api-7d9f",
                "ka.target.namespace": "payments", "ka.sourceips": "[203.0.113.66]"}}),
        );
        assert_eq!(parsed.signals.category, Some(AlertCategory::Cloud));
        let cloud = parsed.signals.cloud.unwrap();
        assert_eq!(cloud.operation.as_deref(), Some("create exec"));
        assert_eq!(
            cloud.resource.as_deref(),
            Some("payments/pods/payments-api-7d9f")
        );
        assert!(
            parsed
                .entities
                .iter()
                .any(|entity| entity.kind == EntityKind::Ip && entity.value == "203.0.113.66")
        );
        assert!(parsed.entities.iter().any(
            |entity| entity.kind == EntityKind::User && entity.value == "m.garcia@example.com"
        ));
        assert_eq!(parsed.signals.mitre_techniques, vec!["T1609"]);
    }

    #[test]
    fn other_alerts_with_a_rule_and_priority_are_not_falco() {
        assert!(!detect(
            &json!({"rule": "x", "priority": "P1", "output": "y", "time": "t"})
        ));
        assert!(!detect(&json!({"rule": "x", "priority": "Warning"})));
    }

    #[test]
    fn hostile_input_never_panics() {
        let huge = "f".repeat(100_000);
        for raw in [
            json!({"rule": huge, "priority": "Alert", "output": "o", "time": [], "tags": [1, {}, "mitre_"],
                "output_fields": {"fd.name": "->:", "fd.sport": "x", "evt.time": -1, "ka.sourceips": 7}}),
            json!({"rule": "r", "priority": "Debug", "output": "🦀", "source": "k8s_audit", "output_fields": "no"}),
            json!({"rule": "r", "priority": "Error", "output": "o", "time": "2026", "output_fields": {"fd.name": "a:1->b:2->c:3"}}),
        ] {
            let _ = parse_alert(Some(EVENT.key), &raw, chrono::Utc::now());
            let _ = crate::detect(&raw);
        }
    }
}
