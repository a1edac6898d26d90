//! Google SecOps (Chronicle) rule detections, as the Detection Engine API (v2
//! `detect/rules/*/detections`, `GetDetection`) and the alerting feeds return them:
//! `type: "RULE_DETECTION"`, an `id` ("de_..."), `detection[]` (the YARA-L rule: name, id,
//! labels, outcomes, match variables as `detectionFields`, `riskScore`, `alertState`),
//! `timeWindow`, and `collectionElements[].references[].event`, the matched UDM events.
//! The first of a `{"detections": [...]}` page is read too.
//!
//! Source labels: SecOps ran the rule, so it is the direct source ("Google SecOps") even
//! though another product produced the telemetry. When every matched UDM event comes from
//! one product (`metadata.productName`, else `vendorName`), that product is recorded as
//! `proxy_source_label`, read here as "the product the detected activity came through",
//! and as a `telemetry:` tag; with several products neither is set.

use std::collections::BTreeSet;

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, AttachmentSignal, EmailSignal, EntityKind, NetworkSignal,
    ParsedAlert, ProcessSignal, SignInSignal,
};

use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::entities::normalize_ip;
use crate::json::{array_at, f64_at, first_str, scalar_text, str_at, strings_at, u64_at};
use crate::registry::Schema;
use crate::sources::splunk::{RowFacts, field_role};
use crate::time::{first_time, time_at};

pub(crate) static DETECTION: Schema = Schema {
    key: "google_secops_detection",
    display_name: "Google SecOps (Chronicle) rule detection",
    source_label: "Google SecOps",
    integration: "google_secops",
    sample: include_str!("../../samples/google_secops_detection.json"),
    detect,
    parse,
};

/// The most UDM events of one detection read.
const MAX_EVENTS: usize = 200;

fn detect(raw: &Value) -> bool {
    detection_of(raw).is_some()
}

fn detection_of(raw: &Value) -> Option<&Value> {
    if is_detection(raw) {
        return Some(raw);
    }
    array_at(raw, "detections")
        .first()
        .filter(|detection| is_detection(detection))
}

/// A rule detection names its type or "de_" id, and the rule in `detection[]`.
fn is_detection(value: &Value) -> bool {
    let typed = str_at(value, "type").is_some_and(|kind| kind.ends_with("_DETECTION"))
        || str_at(value, "id").is_some_and(|id| id.starts_with("de_"));
    typed && first_str(value, &["detection.0.ruleName", "detection.0.ruleId"]).is_some()
}

/// `[{key, value}]` lists (labels, outcomes, detection fields) as pairs.
fn pairs<'a>(value: &'a Value, path: &str) -> Vec<(&'a str, String)> {
    array_at(value, path)
        .iter()
        .take(100)
        .filter_map(|pair| {
            let key = str_at(pair, "key")?;
            let value = pair.get("value").and_then(scalar_text)?;
            Some((key, value))
        })
        .collect()
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let Some(raw) = detection_of(raw) else {
        return Err(ParseError::DoesNotFit {
            schema_key: DETECTION.key,
            reason: "a SecOps detection has type RULE_DETECTION (or a de_ id) and \
                     detection[0].ruleName or ruleId"
                .into(),
        });
    };
    let rule = raw
        .get("detection")
        .and_then(|rules| rules.get(0))
        .unwrap_or(&Value::Null);
    let rule_name = first_str(rule, &["ruleName", "ruleId"]).unwrap_or_default();
    let labels = pairs(rule, "ruleLabels");
    let outcomes = pairs(rule, "outcomes");
    let label = |wanted: &str| {
        labels
            .iter()
            .chain(&outcomes)
            .find(|(key, _)| key.eq_ignore_ascii_case(wanted))
            .map(|(_, value)| value.as_str())
    };
    alert
        .title(Some(rule_name))
        .alert_type(Some(&format!("google_secops:{rule_name}")))
        .create_time(first_time(raw, &["createdTime", "detectionTime"]))
        .start_time(time_at(raw, "timeWindow.startTime"))
        .severity(label("severity"))
        .severity_score(f64_at(rule, "riskScore"), 100.0)
        .ticket(
            str_at(raw, "id").map(str::to_string),
            "detection id",
            str_at(rule, "urlBackToProduct").map(str::to_string),
        )
        .description(first_str(rule, &["description"]).or(label("description")));
    for tag in [
        str_at(rule, "ruleType"),
        str_at(rule, "alertState"),
        label("category"),
    ] {
        alert.tag(tag.map(str::to_ascii_lowercase).as_deref());
    }
    for (key, value) in &labels {
        let lowered = key.to_ascii_lowercase();
        if lowered.contains("tactic") || lowered.contains("technique") {
            for part in value.split([',', ';', '|']) {
                let part = part.trim();
                alert.tactic(Some(part));
                alert.technique(part.split_whitespace().next());
            }
        }
    }

    let events: Vec<&Value> = array_at(raw, "collectionElements")
        .iter()
        .flat_map(|element| array_at(element, "references"))
        .filter_map(|reference| reference.get("event"))
        .take(MAX_EVENTS)
        .collect();

    // The rule's match variables and outcomes name its subject (user, address, host).
    let mut facts = RowFacts::default();
    for (key, value) in pairs(rule, "detectionFields")
        .into_iter()
        .chain(outcomes.iter().map(|(key, value)| (*key, value.clone())))
    {
        if let Some(role) = field_role(key) {
            facts.add(role, &Value::String(value));
        }
    }

    let category = events
        .iter()
        .find_map(|event| str_at(event, "metadata.eventType").and_then(category_of))
        .or_else(|| facts.guess_category());
    alert.signals.category = category;
    alert.signals.action = action_of(&events);
    match category {
        Some(AlertCategory::Identity) => read_sign_ins(&events, &facts, &mut alert),
        Some(AlertCategory::Endpoint) => read_process(&events, &mut alert),
        Some(AlertCategory::Email) => read_email(&events, &mut alert),
        _ => {}
    }
    if category == Some(AlertCategory::Network)
        || events
            .iter()
            .any(|event| str_at(event, "network.applicationProtocol").is_some())
    {
        read_network(&events, &mut alert);
    }
    for event in &events {
        read_event_entities(event, &mut alert);
    }
    facts.apply(&mut alert, None);

    let products: BTreeSet<&str> = events
        .iter()
        .filter_map(|event| first_str(event, &["metadata.productName", "metadata.vendorName"]))
        .collect();
    if products.len() == 1
        && let Some(product) = products.first()
    {
        alert.proxy_source_label(product);
        alert.tag(Some(&format!("telemetry:{product}")));
    }

    let mut subject: Vec<String> = pairs(rule, "detectionFields")
        .into_iter()
        .map(|(key, value)| format!("{key}={}", value.to_lowercase()))
        .collect();
    subject.sort_unstable();
    let rule_key = first_str(rule, &["ruleId", "ruleName"]).unwrap_or(rule_name);
    alert.coalesce_key(Some(if subject.is_empty() {
        str_at(raw, "id").unwrap_or(rule_key).to_string()
    } else {
        format!("{rule_key}:{}", subject.join(","))
    }));
    Ok(alert.finish())
}

/// The category of a UDM event type.
fn category_of(event_type: &str) -> Option<AlertCategory> {
    let family = event_type.split('_').next().unwrap_or_default();
    match family {
        "USER" | "GROUP" => Some(AlertCategory::Identity),
        "PROCESS" | "FILE" | "REGISTRY" | "SCAN" | "SYSTEM" => Some(AlertCategory::Endpoint),
        "NETWORK" => Some(AlertCategory::Network),
        "EMAIL" => Some(AlertCategory::Email),
        "RESOURCE" | "SERVICE" => Some(AlertCategory::Cloud),
        _ => None,
    }
}

/// The UDM `securityResult[].action` values of an event (a list, or one string).
fn actions_of(event: &Value) -> Vec<&str> {
    array_at(event, "securityResult")
        .iter()
        .take(20)
        .flat_map(|result| strings_at(result, "action"))
        .collect()
}

fn is_allowed(action: &str) -> bool {
    matches!(action, "ALLOW" | "ALLOW_WITH_MODIFICATION")
}

fn is_blocked(action: &str) -> bool {
    matches!(action, "BLOCK" | "FAIL" | "QUARANTINE")
}

/// Allowed when any matched event went through; blocked when every one was stopped.
fn action_of(events: &[&Value]) -> Option<ActionTaken> {
    let actions: Vec<&str> = events.iter().flat_map(|event| actions_of(event)).collect();
    if actions.iter().any(|action| is_allowed(action)) {
        Some(ActionTaken::Allowed)
    } else if !actions.is_empty() && actions.iter().all(|action| is_blocked(action)) {
        Some(ActionTaken::Blocked)
    } else {
        Some(ActionTaken::Observed)
    }
}

/// The account a UDM event is about: the target of a login, else the principal.
fn event_user(event: &Value) -> Option<&str> {
    first_str(
        event,
        &[
            "target.user.emailAddresses.0",
            "target.user.userid",
            "principal.user.emailAddresses.0",
            "principal.user.userid",
        ],
    )
}

fn read_sign_ins(events: &[&Value], facts: &RowFacts, alert: &mut AlertBuilder) {
    let first = events.first().copied().unwrap_or(&Value::Null);
    let mut failures = 0_u32;
    let mut accounts: BTreeSet<String> = BTreeSet::new();
    let mut succeeded = None;
    for event in events {
        let actions = actions_of(event);
        if let Some(user) = event_user(event) {
            accounts.insert(user.to_lowercase());
        }
        if actions.iter().any(|action| is_allowed(action)) {
            succeeded = Some(true);
        } else if actions.iter().any(|action| is_blocked(action)) {
            failures = failures.saturating_add(1);
            succeeded.get_or_insert(false);
        }
    }
    let many = events.len() > 1;
    // A detection over many accounts (a spray) is about its source, not one user, unless
    // its match variables name one.
    let one_account = accounts.len() <= 1;
    alert.signals.sign_in = Some(SignInSignal {
        user: facts
            .main_user()
            .or_else(|| event_user(first).filter(|_| one_account))
            .map(str::to_string),
        source_ip: strings_at(first, "principal.ip")
            .into_iter()
            .chain(strings_at(first, "src.ip"))
            .find_map(normalize_ip),
        country: first_str(
            first,
            &[
                "principal.location.countryOrRegion",
                "principal.ipGeoArtifact.0.location.countryOrRegion",
            ],
        )
        .map(str::to_string),
        city: first_str(
            first,
            &[
                "principal.location.city",
                "principal.ipGeoArtifact.0.location.city",
            ],
        )
        .map(str::to_string),
        network_owner: first_str(
            first,
            &[
                "principal.ipGeoArtifact.0.network.organizationName",
                "principal.ipGeoArtifact.0.network.carrierName",
            ],
        )
        .map(str::to_string),
        user_agent: str_at(first, "network.http.userAgent").map(str::to_string),
        application: first_str(first, &["target.application", "target.resource.name"])
            .map(str::to_string),
        succeeded,
        mfa_passed: None,
        mfa_denials: facts.mfa_denials,
        failure_count: facts
            .failure_count
            .or(Some(failures).filter(|count| many && *count > 0)),
        targeted_accounts: facts.distinct_users.or(u32::try_from(accounts.len())
            .ok()
            .filter(|count| many && *count > 1)),
        risk_level: None,
        risk_reasons: Vec::new(),
    });
}

fn read_process(events: &[&Value], alert: &mut AlertBuilder) {
    let Some(event) = events
        .iter()
        .find(|event| str_at(event, "target.process").is_some() || has_process(event))
        .or(events.first())
    else {
        return;
    };
    let path = str_at(event, "target.process.file.fullPath");
    alert.signals.process = Some(ProcessSignal {
        name: path
            .and_then(|path| path.rsplit(['\\', '/']).next())
            .map(str::to_string),
        path: path.map(str::to_string),
        command_line: str_at(event, "target.process.commandLine").map(str::to_string),
        parent_name: str_at(event, "principal.process.file.fullPath")
            .and_then(|path| path.rsplit(['\\', '/']).next())
            .map(str::to_string),
        parent_command_line: str_at(event, "principal.process.commandLine").map(str::to_string),
        user: first_str(event, &["principal.user.userid", "target.user.userid"])
            .map(str::to_string),
        sha256: str_at(event, "target.process.file.sha256").map(str::to_string),
        sha1: str_at(event, "target.process.file.sha1").map(str::to_string),
        md5: str_at(event, "target.process.file.md5").map(str::to_string),
        ..ProcessSignal::default()
    });
}

fn has_process(event: &Value) -> bool {
    event
        .get("target")
        .and_then(|target| target.get("process"))
        .is_some_and(Value::is_object)
}

fn read_email(events: &[&Value], alert: &mut AlertBuilder) {
    let Some(event) = events.first() else {
        return;
    };
    alert.signals.email = Some(EmailSignal {
        sender: str_at(event, "network.email.from").map(str::to_string),
        recipients: strings_at(event, "network.email.to")
            .into_iter()
            .map(str::to_string)
            .collect(),
        subject: strings_at(event, "network.email.subject")
            .first()
            .map(|subject| (*subject).to_string()),
        urls: strings_at(event, "target.url")
            .into_iter()
            .map(str::to_string)
            .collect(),
        attachments: str_at(event, "target.file.sha256")
            .map(|sha256| AttachmentSignal {
                name: str_at(event, "target.file.fullPath").map(str::to_string),
                sha256: Some(sha256.to_string()),
                ..AttachmentSignal::default()
            })
            .into_iter()
            .collect(),
        ..EmailSignal::default()
    });
}

fn read_network(events: &[&Value], alert: &mut AlertBuilder) {
    let Some(event) = events.first() else {
        return;
    };
    let port = |path: &str| u64_at(event, path).and_then(|port| u16::try_from(port).ok());
    alert.signals.network = Some(NetworkSignal {
        source_ip: strings_at(event, "principal.ip")
            .into_iter()
            .find_map(normalize_ip),
        source_port: port("principal.port"),
        destination_ip: strings_at(event, "target.ip")
            .into_iter()
            .find_map(normalize_ip),
        destination_port: port("target.port"),
        protocol: str_at(event, "network.ipProtocol").map(str::to_ascii_lowercase),
        application_protocol: str_at(event, "network.applicationProtocol")
            .map(str::to_ascii_lowercase),
        bytes_out: u64_at(event, "network.sentBytes"),
        bytes_in: u64_at(event, "network.receivedBytes"),
        signature: str_at(event, "securityResult.0.ruleName").map(str::to_string),
        hostname: first_str(
            event,
            &[
                "network.dns.questions.0.name",
                "network.tls.client.serverName",
            ],
        )
        .map(str::to_string),
        ..NetworkSignal::default()
    });
}

/// The hosts, addresses, accounts, URLs, files and ATT&CK of one UDM event.
fn read_event_entities(event: &Value, alert: &mut AlertBuilder) {
    for noun in ["principal", "target", "src", "observer"] {
        alert.host(str_at(event, &format!("{noun}.hostname")));
        alert.host(str_at(event, &format!("{noun}.asset.hostname")));
        for address in strings_at(event, &format!("{noun}.ip")) {
            alert.entity(EntityKind::Ip, Some(address));
        }
        alert.entity(
            EntityKind::User,
            str_at(event, &format!("{noun}.user.userid")),
        );
        for email in strings_at(event, &format!("{noun}.user.emailAddresses")) {
            alert.entity(EntityKind::User, Some(email));
        }
        for url in strings_at(event, &format!("{noun}.url")) {
            alert.entity(EntityKind::Url, Some(url));
        }
        alert.entity(
            EntityKind::FilePath,
            str_at(event, &format!("{noun}.file.fullPath")),
        );
        for digest in ["sha256", "sha1", "md5"] {
            alert.hash(str_at(event, &format!("{noun}.file.{digest}")));
            alert.hash(str_at(event, &format!("{noun}.process.file.{digest}")));
        }
    }
    for result in array_at(event, "securityResult").iter().take(20) {
        for tactic in array_at(result, "attackDetails.tactics") {
            alert.tactic(first_str(tactic, &["id", "name"]));
        }
        for technique in array_at(result, "attackDetails.techniques") {
            alert.technique(first_str(technique, &["subtechniqueId", "id"]));
        }
        for category in strings_at(result, "category") {
            alert.tag(Some(&category.to_ascii_lowercase()));
        }
        alert.sweep(str_at(result, "summary"));
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
        let raw: Value = serde_json::from_str(DETECTION.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "google_secops_detection");
        assert_eq!(parsed.title, "okta_password_spray_single_source");
        assert_eq!(
            parsed.alert_type,
            "google_secops:okta_password_spray_single_source"
        );
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        assert_eq!(parsed.direct_source_label, "Google SecOps");
        assert_eq!(parsed.proxy_source_label.as_deref(), Some("Okta"));
        assert_eq!(
            parsed.origin_ticket_id_label.as_deref(),
            Some("detection id")
        );
        assert_eq!(parsed.signals.category, Some(AlertCategory::Identity));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Blocked));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Credential Access"]);
        assert_eq!(parsed.signals.mitre_techniques, vec!["T1110.003"]);
        let sign_in = parsed.signals.sign_in.as_ref().unwrap();
        assert_eq!(sign_in.source_ip.as_deref(), Some("198.51.100.23"));
        assert_eq!(sign_in.targeted_accounts, Some(14));
        assert_eq!(sign_in.failure_count, Some(14));
        assert_eq!(sign_in.succeeded, Some(false));
        assert!(has(&parsed, EntityKind::Ip, "198.51.100.23"));
        assert!(has(&parsed, EntityKind::User, "a.chen@example.com"));
        assert!(parsed.coalesce_key.is_some());
    }

    #[test]
    fn event_types_pick_the_category() {
        let cases = [
            ("USER_LOGIN", Some(AlertCategory::Identity)),
            ("PROCESS_LAUNCH", Some(AlertCategory::Endpoint)),
            ("NETWORK_DNS", Some(AlertCategory::Network)),
            ("EMAIL_TRANSACTION", Some(AlertCategory::Email)),
            ("GENERIC_EVENT", None),
        ];
        for (event_type, expected) in cases {
            assert_eq!(category_of(event_type), expected, "{event_type}");
        }
    }

    #[test]
    fn a_process_detection_reads_the_process_and_several_products_set_no_proxy() {
        let parsed = read(&json!({
            "type": "RULE_DETECTION", "id": "de_1", "createdTime": "2026-03-06T10:00:00Z",
            "detection": [{"ruleName": "encoded_powershell", "ruleLabels": [{"key": "severity", "value": "Medium"}]}],
            "collectionElements": [{"label": "e", "references": [
                {"event": {"metadata": {"eventType": "PROCESS_LAUNCH", "productName": "Microsoft Sysmon"},
                           "principal": {"hostname": "wks-0231", "user": {"userid": "r.patel"},
                                         "process": {"file": {"fullPath": "C:\\Program Files\\Microsoft Office\\WINWORD.EXE"}}},
                           "target": {"process": {"commandLine": "powershell -enc SQBFAFgA",
                                      "file": {"fullPath": "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe"}}}}},
                {"event": {"metadata": {"eventType": "NETWORK_CONNECTION", "productName": "Zeek"},
                           "principal": {"ip": ["10.20.30.40"]}, "target": {"ip": ["203.0.113.50"], "port": 443}}}
            ]}]
        }));
        assert_eq!(parsed.signals.category, Some(AlertCategory::Endpoint));
        let process = parsed.signals.process.as_ref().unwrap();
        assert_eq!(process.name.as_deref(), Some("powershell.exe"));
        assert_eq!(process.parent_name.as_deref(), Some("WINWORD.EXE"));
        assert_eq!(parsed.proxy_source_label, None);
        assert!(has(&parsed, EntityKind::Host, "wks-0231"));
        assert!(has(&parsed, EntityKind::Ip, "203.0.113.50"));
    }

    #[test]
    fn other_shapes_are_not_detections() {
        for raw in [
            json!({"type": "RULE_DETECTION"}),
            json!({"id": "de_1", "detection": []}),
            json!({"type": "ALERT", "detection": [{"ruleName": "x"}]}),
        ] {
            assert!(!detect(&raw), "{raw}");
        }
    }

    #[test]
    fn hostile_input_never_panics() {
        let long = "ø".repeat(100_000);
        for raw in [
            json!({"type": "RULE_DETECTION", "detection": [{"ruleName": 5}]}),
            json!({"type": "RULE_DETECTION", "detection": [{"ruleName": "r", "riskScore": "NaN",
                   "ruleLabels": "x", "outcomes": [null, {"key": 1}], "detectionFields": [{"key": "src", "value": []}]}],
                   "collectionElements": [null, {"references": "x"}, {"references": [{"event": 5}, {"event": {
                       "metadata": {"eventType": 7}, "principal": {"ip": "not-a-list"},
                       "securityResult": [{"action": 5, "attackDetails": {"tactics": "x"}}]}}]}]}),
            json!({"id": "de_x", "detection": [{"ruleId": long, "ruleLabels": [{"key": "tactic", "value": long}]}],
                   "collectionElements": [{"references": [{"event": {"metadata": {"eventType": "USER_LOGIN"},
                       "target": {"user": {"userid": long}}, "principal": {"ip": [long]}}}]}]}),
            json!({"detections": [null, {"type": "RULE_DETECTION"}]}),
        ] {
            let _ = parse_alert(None, &raw, chrono::Utc::now());
            let _ = parse_alert(Some("google_secops_detection"), &raw, chrono::Utc::now());
        }
    }
}
