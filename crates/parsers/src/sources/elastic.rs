//! Elastic Security detection alerts: the `.alerts-security.alerts-<space>` document (8.x
//! alerts-as-data), as a Kibana webhook connector or a SIEM forwarder sends it, with
//! nested objects or flattened dotted keys (`"kibana.alert.rule.name": ...`), and also as
//! a search hit (`{_index, _id, _source: {...}}`). The rule (`kibana.alert.rule.*`, its
//! `threat[]` ATT&CK mapping), the alert's workflow (`workflow_status`, and since 8.x the
//! closing `workflow_reason`) and the ECS fields of the source event (`host.*`,
//! `user.*`, `process.*`, `source.*`, `destination.*`, `file.*`, `event.*`) are read.
//! Elastic Defend's prevention alerts say so with `event.type: denied`.

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, EntityKind, NetworkSignal, ParsedAlert, ProcessSignal,
    SignInSignal, SourceVerdict,
};

use super::endpoint_common::{
    direction, file_name, owned, port_at, qualified_user, real_hash, some_network, some_process,
};
use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::entities::normalize_ip;
use crate::json::{array_at, bool_at, f64_at, first_str, first_text, str_at, strings_at};
use crate::registry::Schema;
use crate::time::first_time;

pub(crate) static ALERT: Schema = Schema {
    key: "elastic_security_alert",
    display_name: "Elastic Security detection alert (.alerts-security document)",
    source_label: "Elastic Security",
    integration: "elastic_security",
    sample: include_str!("../../samples/elastic_security_alert.json"),
    detect,
    parse,
};

/// The alert document: the hit's `_source`, or the object itself.
fn document(raw: &Value) -> &Value {
    raw.get("_source")
        .filter(|source| source.is_object())
        .unwrap_or(raw)
}

fn detect(raw: &Value) -> bool {
    let doc = document(raw);
    first_str(
        doc,
        &[
            "kibana.alert.rule.name",
            "kibana.alert.rule.uuid",
            "kibana.alert.rule.rule_id",
        ],
    )
    .is_some()
        && first_str(
            doc,
            &[
                "kibana.alert.uuid",
                "kibana.alert.workflow_status",
                "kibana.alert.severity",
                "kibana.alert.original_time",
            ],
        )
        .is_some()
}

/// The first list of strings among `paths` that has any.
fn first_strings<'a>(doc: &'a Value, paths: &[&str]) -> Vec<&'a str> {
    paths
        .iter()
        .map(|path| strings_at(doc, path))
        .find(|values| !values.is_empty())
        .unwrap_or_default()
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let doc = document(raw);
    let rule_name = str_at(doc, "kibana.alert.rule.name");
    let rule_id = first_str(
        doc,
        &[
            "kibana.alert.rule.rule_id",
            "kibana.alert.rule.parameters.rule_id",
            "kibana.alert.rule.uuid",
        ],
    );
    if rule_name.is_none() && rule_id.is_none() {
        return Err(ParseError::DoesNotFit {
            schema_key: ALERT.key,
            reason: "an Elastic Security alert has kibana.alert.rule.name or a rule id".into(),
        });
    }
    let reason = str_at(doc, "kibana.alert.reason");
    alert
        .title(rule_name)
        .title(reason)
        .alert_type(
            rule_id
                .or(rule_name)
                .map(|rule| format!("elastic:{rule}"))
                .as_deref(),
        )
        .create_time(first_time(
            doc,
            &[
                "@timestamp",
                "kibana.alert.start",
                "kibana.alert.last_detected",
            ],
        ))
        .start_time(first_time(doc, &["kibana.alert.original_time"]))
        .severity(first_str(
            doc,
            &["kibana.alert.severity", "kibana.alert.rule.severity"],
        ))
        .severity_score(
            f64_at(doc, "kibana.alert.risk_score")
                .or_else(|| f64_at(doc, "kibana.alert.rule.risk_score")),
            100.0,
        )
        .ticket(
            first_text(doc, &["kibana.alert.uuid"]).or_else(|| first_text(raw, &["_id"])),
            "kibana.alert.uuid",
            str_at(doc, "kibana.alert.url").map(str::to_string),
        )
        .tenant(
            strings_at(doc, "kibana.space_ids")
                .first()
                .map(|space| (*space).to_string()),
            None,
        )
        .description(reason)
        .description(str_at(doc, "kibana.alert.rule.description"))
        .sweep(reason);

    let host = first_str(doc, &["host.name", "host.hostname"]);
    let user = qualified_user(str_at(doc, "user.domain"), str_at(doc, "user.name"));
    let coalesce = first_str(doc, &["kibana.alert.group.id"])
        .map(str::to_string)
        .or_else(|| {
            first_str(doc, &["kibana.alert.rule.uuid"])
                .or(rule_id)
                .map(|rule| format!("{rule}:{}", host.or(user.as_deref()).unwrap_or_default()))
        });
    alert.coalesce_key(coalesce);

    let categories: Vec<String> = first_strings(
        doc,
        &["event.category", "kibana.alert.original_event.category"],
    )
    .into_iter()
    .map(str::to_ascii_lowercase)
    .collect();
    let has_process =
        str_at(doc, "process.name").is_some() || str_at(doc, "process.executable").is_some();
    let category = category(&categories, has_process);
    alert.signals.category = Some(category);

    for threat in array_at(doc, "kibana.alert.rule.threat")
        .iter()
        .chain(array_at(doc, "kibana.alert.rule.parameters.threat"))
        .take(20)
    {
        alert
            .tactic(str_at(threat, "tactic.id"))
            .tactic(str_at(threat, "tactic.name"));
        for technique in array_at(threat, "technique").iter().take(20) {
            alert.technique(str_at(technique, "id"));
            for sub in array_at(technique, "subtechnique").iter().take(20) {
                alert.technique(str_at(sub, "id"));
            }
        }
    }
    for tag in strings_at(doc, "kibana.alert.rule.tags")
        .into_iter()
        .chain(strings_at(doc, "kibana.alert.workflow_tags"))
        .chain(strings_at(doc, "kibana.alert.rule.type"))
    {
        alert.tag(Some(tag));
    }
    // What the source event was ("execution", "malicious_file", "Directory Service
    // Access") says what kind of activity a rule without an ATT&CK mapping caught.
    for field in ["event.action", "event.code"] {
        alert.tag(first_str(
            doc,
            &[field, &format!("kibana.alert.original_{field}")],
        ));
    }
    if str_at(doc, "kibana.alert.building_block_type").is_some() {
        alert.tag(Some("building_block"));
    }

    alert.signals.action = Some(action(doc));
    alert.signals.source_verdict = verdict(doc);

    let executable = str_at(doc, "process.executable");
    alert.signals.process = some_process(ProcessSignal {
        name: owned(str_at(doc, "process.name").or_else(|| executable.and_then(file_name))),
        path: owned(executable),
        command_line: owned(str_at(doc, "process.command_line")),
        decoded_command: None,
        parent_name: owned(
            str_at(doc, "process.parent.name")
                .or_else(|| str_at(doc, "process.parent.executable").and_then(file_name)),
        ),
        parent_command_line: owned(str_at(doc, "process.parent.command_line")),
        user: has_process.then(|| user.clone()).flatten(),
        sha256: real_hash(str_at(doc, "process.hash.sha256")),
        sha1: real_hash(str_at(doc, "process.hash.sha1")),
        md5: real_hash(str_at(doc, "process.hash.md5")),
        // ECS says whether the certificate chain is trusted: an untrusted one names nobody
        // who vouches for the code.
        signer: owned(str_at(doc, "process.code_signature.subject_name"))
            .filter(|_| bool_at(doc, "process.code_signature.trusted") != Some(false)),
    });

    let source_ip = str_at(doc, "source.ip").and_then(normalize_ip);
    let destination_ip = str_at(doc, "destination.ip").and_then(normalize_ip);
    let is_sign_in = categories
        .iter()
        .any(|category| category == "authentication" || category == "session");
    if category == AlertCategory::Identity && is_sign_in {
        alert.signals.sign_in = Some(SignInSignal {
            user: user
                .clone()
                .or_else(|| owned(str_at(doc, "user.target.name"))),
            source_ip: source_ip.clone(),
            country: owned(str_at(doc, "source.geo.country_iso_code")),
            city: owned(str_at(doc, "source.geo.city_name")),
            network_owner: owned(str_at(doc, "source.as.organization.name")),
            user_agent: owned(str_at(doc, "user_agent.original")),
            succeeded: match str_at(doc, "event.outcome") {
                Some("success") => Some(true),
                Some("failure") => Some(false),
                _ => None,
            },
            ..SignInSignal::default()
        });
    }
    alert.signals.network = some_network(NetworkSignal {
        direction: direction(source_ip.as_deref(), destination_ip.as_deref()),
        source_port: port_at(doc, "source.port"),
        destination_port: port_at(doc, "destination.port"),
        protocol: owned(str_at(doc, "network.transport")).map(|text| text.to_ascii_lowercase()),
        application_protocol: owned(str_at(doc, "network.protocol"))
            .map(|text| text.to_ascii_lowercase()),
        bytes_out: crate::json::u64_at(doc, "source.bytes"),
        bytes_in: crate::json::u64_at(doc, "destination.bytes"),
        hostname: owned(first_str(
            doc,
            &["destination.domain", "dns.question.name", "url.domain"],
        )),
        source_ip,
        destination_ip,
        ..NetworkSignal::default()
    });

    alert
        .host(host)
        .entity(EntityKind::User, user.as_deref())
        // ECS `user.name` as written, beside the `user.domain`-qualified form above.
        .entity(EntityKind::User, str_at(doc, "user.name"))
        .entity(EntityKind::User, str_at(doc, "user.target.name"))
        .entity(EntityKind::FilePath, str_at(doc, "file.path"))
        .hash(real_hash(str_at(doc, "file.hash.sha256")).as_deref())
        .hash(real_hash(str_at(doc, "file.hash.sha1")).as_deref())
        .hash(real_hash(str_at(doc, "file.hash.md5")).as_deref())
        .entity(EntityKind::FilePath, str_at(doc, "dll.path"))
        .hash(real_hash(str_at(doc, "dll.hash.sha256")).as_deref())
        .entity(EntityKind::Url, str_at(doc, "url.full"));
    for address in strings_at(doc, "host.ip").into_iter().take(20) {
        alert.entity(EntityKind::Ip, Some(address));
    }
    Ok(alert.finish())
}

/// Sign-ins and account changes are identity alerts, traffic without a process is a
/// network alert, mail is mail; the rest happens on a host.
fn category(categories: &[String], has_process: bool) -> AlertCategory {
    let any = |words: &[&str]| {
        categories
            .iter()
            .any(|category| words.contains(&category.as_str()))
    };
    if any(&["authentication", "iam", "session"]) && !has_process {
        AlertCategory::Identity
    } else if any(&["email"]) {
        AlertCategory::Email
    } else if any(&["network"]) && !has_process {
        AlertCategory::Network
    } else {
        AlertCategory::Endpoint
    }
}

/// Elastic Defend marks what it prevented with `event.type: denied`; a rule on
/// firewall or proxy data may carry the device's own outcome in `event.action`.
fn action(doc: &Value) -> ActionTaken {
    let types: Vec<String> =
        first_strings(doc, &["event.type", "kibana.alert.original_event.type"])
            .into_iter()
            .map(str::to_ascii_lowercase)
            .collect();
    if types.iter().any(|kind| kind == "denied") {
        ActionTaken::Blocked
    } else if types.iter().any(|kind| kind == "allowed") {
        ActionTaken::Allowed
    } else {
        ActionTaken::Observed
    }
}

/// The analysts' closing reason (`kibana.alert.workflow_reason`, 8.x) or the workflow
/// tag Kibana offers for it ("False Positive").
fn verdict(doc: &Value) -> Option<SourceVerdict> {
    let mut words: Vec<String> = strings_at(doc, "kibana.alert.workflow_tags")
        .into_iter()
        .map(|tag| tag.to_ascii_lowercase().replace([' ', '-'], "_"))
        .collect();
    if let Some(reason) = str_at(doc, "kibana.alert.workflow_reason") {
        words.push(reason.to_ascii_lowercase().replace([' ', '-'], "_"));
    }
    if words
        .iter()
        .any(|word| word.contains("false_positive") || word.contains("benign"))
    {
        Some(SourceVerdict::Benign)
    } else if words.iter().any(|word| word.contains("true_positive")) {
        Some(SourceVerdict::Malicious)
    } else {
        None
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
    fn the_sample_reads_completely() {
        let raw: Value = serde_json::from_str(ALERT.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "elastic_security_alert");
        assert_eq!(parsed.title, "Potential Credential Access via DCSync");
        assert_eq!(
            parsed.alert_type,
            "elastic:9f962927-1a4f-45f3-a57b-287f2c7029c1"
        );
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        assert_eq!(
            parsed.create_time.to_rfc3339(),
            "2026-03-06T03:12:45.881+00:00"
        );
        assert_eq!(
            parsed.start_time.map(|time| time.to_rfc3339()).as_deref(),
            Some("2026-03-06T03:12:41.204+00:00")
        );
        assert_eq!(
            parsed.origin_ticket_id_label.as_deref(),
            Some("kibana.alert.uuid")
        );
        assert_eq!(parsed.tenant_id.as_deref(), Some("default"));
        assert_eq!(parsed.signals.category, Some(AlertCategory::Identity));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Credential Access"]);
        assert_eq!(parsed.signals.mitre_techniques, vec!["T1003", "T1003.006"]);
        assert_eq!(parsed.signals.action, Some(ActionTaken::Observed));
        assert!(
            parsed.signals.sign_in.is_none(),
            "a directory access is not a sign-in"
        );
        assert!(has(&parsed, EntityKind::Host, "dc-01"));
        assert!(has(&parsed, EntityKind::Ip, "10.0.0.5"));
        assert!(has(&parsed, EntityKind::User, "corp\\l.brown"));
    }

    #[test]
    fn nested_documents_and_search_hits_read_like_flattened_ones() {
        let nested = json!({
            "_index": ".internal.alerts-security.alerts-default-000001", "_id": "a1b2",
            "_source": {
                "@timestamp": "2026-03-06T10:00:00Z",
                "kibana": {"alert": {"rule": {"name": "Malware Prevention Alert", "rule_id": "malware-prevention",
                                               "threat": [{"tactic": {"id": "TA0002", "name": "Execution"},
                                                           "technique": [{"id": "T1204", "subtechnique": [{"id": "T1204.002"}]}]}]},
                                     "severity": "critical", "risk_score": 99, "workflow_status": "open"}},
                "event": {"category": ["malware", "intrusion_detection", "file"], "type": ["info", "denied"]},
                "host": {"name": "WKS-0519", "ip": ["10.20.45.19", "fe80::1"]},
                "user": {"name": "l.brown", "domain": "CORP"},
                "file": {"path": "C:\\Users\\l.brown\\Downloads\\invoice.exe", "hash": {"sha256": "a".repeat(64)}},
                "process": {"name": "explorer.exe"}
            }
        });
        let parsed = read(&nested);
        assert_eq!(parsed.title, "Malware Prevention Alert");
        assert_eq!(parsed.origin_ticket_id.as_deref(), Some("a1b2"));
        assert_eq!(parsed.severity.as_deref(), Some("critical"));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Blocked));
        assert_eq!(parsed.signals.category, Some(AlertCategory::Endpoint));
        assert_eq!(parsed.signals.mitre_techniques, vec!["T1204", "T1204.002"]);
        assert!(has(&parsed, EntityKind::HashSha256, &"a".repeat(64)));
        assert!(has(&parsed, EntityKind::Ip, "10.20.45.19"));
        assert!(has(&parsed, EntityKind::Host, "wks-0519"));
    }

    #[test]
    fn authentication_alerts_carry_the_sign_in() {
        let parsed = read(&json!({
            "kibana.alert.rule.name": "Multiple Logon Failure Followed by Logon Success",
            "kibana.alert.uuid": "u1", "@timestamp": "2026-03-06T10:00:00Z",
            "event.category": ["authentication"], "event.outcome": "success",
            "user.name": "svc-sql-legacy", "source.ip": "10.20.44.12", "host.name": "fs-01"
        }));
        assert_eq!(parsed.signals.category, Some(AlertCategory::Identity));
        let sign_in = parsed.signals.sign_in.unwrap();
        assert_eq!(sign_in.user.as_deref(), Some("svc-sql-legacy"));
        assert_eq!(sign_in.source_ip.as_deref(), Some("10.20.44.12"));
        assert_eq!(sign_in.succeeded, Some(true));
    }

    #[test]
    fn the_closing_reason_is_the_analysts_verdict() {
        let cases = [
            (
                json!({"kibana.alert.workflow_reason": "false_positive"}),
                Some(SourceVerdict::Benign),
            ),
            (
                json!({"kibana.alert.workflow_reason": "true_positive"}),
                Some(SourceVerdict::Malicious),
            ),
            (
                json!({"kibana.alert.workflow_tags": ["False Positive"]}),
                Some(SourceVerdict::Benign),
            ),
            (json!({"kibana.alert.workflow_status": "closed"}), None),
        ];
        for (doc, expected) in cases {
            assert_eq!(verdict(&doc), expected, "{doc}");
        }
    }

    #[test]
    fn only_a_trusted_signature_names_a_signer() {
        let signer = |trusted: Value| {
            let raw = json!({"@timestamp": "2026-03-06T10:00:00Z", "kibana.alert.rule.name": "R",
                "kibana.alert.rule.rule_id": "r", "kibana.alert.uuid": "u", "host.name": "wks-1",
                "process.name": "updater.exe", "process.code_signature.subject_name": "Example Vendor LLC",
                "process.code_signature.trusted": trusted});
            read(&raw)
                .signals
                .process
                .and_then(|process| process.signer)
        };
        assert_eq!(signer(json!(true)).as_deref(), Some("Example Vendor LLC"));
        assert_eq!(signer(Value::Null).as_deref(), Some("Example Vendor LLC"));
        assert_eq!(signer(json!(false)), None);
    }

    #[test]
    fn other_shapes_are_not_elastic_alerts() {
        assert!(!detect(&json!({"kibana.alert.rule.name": "x"})));
        assert!(!detect(&json!({"kibana": {"alert": {"severity": "high"}}})));
        assert!(!detect(&json!({"_source": "x", "kibana.alert.uuid": "y"})));
    }

    #[test]
    fn hostile_input_never_panics() {
        // Unicode starts after eight ASCII bytes; see the note in crowdstrike.rs.
        let huge = format!("unicode:{}", "é".repeat(100_000));
        let hostile = [
            json!({"kibana.alert.rule.name": [1], "kibana.alert.uuid": {}, "kibana.alert.rule.threat": "x",
                   "event.category": [null, 5], "host.ip": {"a": 1}, "source.port": -1, "kibana.alert.risk_score": "NaN"}),
            json!({"_source": {"kibana.alert.rule.name": huge.clone(), "kibana.alert.uuid": huge.clone(),
                   "kibana.alert.reason": huge.clone(), "@timestamp": huge.clone(), "process.command_line": huge.clone(),
                   "kibana.alert.rule.threat": [null, {"tactic": "x", "technique": [null, {"subtechnique": 7}]}],
                   "host.name": huge.clone(), "url.full": huge.clone(), "source.ip": "unicode:🦀🦀🦀"}}),
        ];
        for raw in hostile {
            let _ = crate::parse_alert(None, &raw, chrono::Utc::now());
            let _ = crate::parse_alert(Some(ALERT.key), &raw, chrono::Utc::now());
        }
    }
}
