//! Okta System Log events: the LogEvent object of `/api/v1/logs` (LogEvent `version` "0"),
//! in the three envelopes Okta delivers it in:
//! - a bare LogEvent, as the System Log API returns each array element and as HTTP log
//!   streaming (Splunk HEC and similar) forwards it;
//! - an event hook request (`eventType: "com.okta.event_hook"`, `cloudEventsVersion`,
//!   `data.events[]`). The **first** event is the alert. The rest of the batch is read only
//!   for counts, because Okta batches a burst into one delivery: push denials and approvals
//!   of the first event's user (MFA fatigue), failed sign-ins from the first event's address
//!   and the accounts they targeted (password spray);
//! - an AWS EventBridge log-stream event (`source: "aws.partner/okta.com/..."`), the
//!   LogEvent in `detail`.
//!
//! In the wire format every `debugContext.debugData` value is a string, the structured
//! ones included: `risk` ("{reasons=..., level=HIGH}"), `behaviors` ("{New IP=POSITIVE,
//! ...}") and `logOnlySecurityData` (JSON inside a string). Okta names no ATT&CK technique;
//! the few event types whose meaning is unambiguous (a rejected push, an MFA factor
//! removed, a privilege granted) are mapped here.

use std::collections::BTreeSet;

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, CloudSignal, EntityKind, ParsedAlert, SeverityLevel, SignInSignal,
};

use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::json::{array_at, bool_at, first_str, str_at, text_at};
use crate::registry::Schema;
use crate::time::time_at;

pub(crate) static SYSTEM_LOG: Schema = Schema {
    key: "okta_system_log_event",
    display_name: "Okta System Log event (API, event hook or log stream)",
    source_label: "Okta",
    integration: "okta",
    sample: include_str!("../../samples/okta_system_log_event.json"),
    detect,
    parse,
};

/// The most events of a hook batch read for counts; Okta sends far fewer per request.
const MAX_BATCH: usize = 1000;

/// The longest `logOnlySecurityData` string decoded (it is a few hundred bytes in practice).
const MAX_EMBEDDED_JSON: usize = 64 * 1024;

fn detect(raw: &Value) -> bool {
    event_and_batch(raw).is_some()
}

/// The LogEvent that is the alert, and the batch it came in (itself alone when not a hook).
fn event_and_batch(raw: &Value) -> Option<(&Value, &[Value])> {
    if is_log_event(raw) {
        return Some((raw, std::slice::from_ref(raw)));
    }
    if str_at(raw, "eventType") == Some("com.okta.event_hook") {
        let events = array_at(raw, "data.events");
        let first = events.first().filter(|event| is_log_event(event))?;
        return Some((first, events));
    }
    if str_at(raw, "source").is_some_and(|source| source.starts_with("aws.partner/okta.com"))
        && let Some(detail) = raw.get("detail").filter(|detail| is_log_event(detail))
    {
        return Some((detail, std::slice::from_ref(detail)));
    }
    None
}

/// A LogEvent names its uuid, publication time and dotted event type, and an actor.
fn is_log_event(value: &Value) -> bool {
    str_at(value, "uuid").is_some()
        && str_at(value, "published").is_some()
        && str_at(value, "eventType").is_some_and(|event_type| event_type.contains('.'))
        && (value.get("actor").is_some_and(Value::is_object)
            || value.get("displayMessage").is_some()
            || value.get("legacyEventType").is_some())
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let Some((event, batch)) = event_and_batch(raw) else {
        return Err(ParseError::DoesNotFit {
            schema_key: SYSTEM_LOG.key,
            reason: "an Okta LogEvent has uuid, published and eventType, bare, in data.events \
                     of an event hook, or in detail of a log-stream event"
                .into(),
        });
    };
    let event_type = str_at(event, "eventType").unwrap_or_default();
    let result = str_at(event, "outcome.result").map(str::to_ascii_uppercase);
    let reason = str_at(event, "outcome.reason");
    let display_message = str_at(event, "displayMessage");

    alert
        .title(display_message)
        .title(Some(event_type))
        .alert_type(Some(&format!("okta:{event_type}")))
        .create_time(time_at(event, "published"));
    let severity = str_at(event, "severity");
    alert.signals.severity_level =
        severity.and_then(|word| match word.to_ascii_uppercase().as_str() {
            "DEBUG" | "INFO" => Some(SeverityLevel::Informational),
            "WARN" | "WARNING" => Some(SeverityLevel::Medium),
            "ERROR" => Some(SeverityLevel::High),
            _ => None,
        });
    alert.severity(severity);
    alert.ticket(
        str_at(event, "uuid").map(str::to_string),
        "Okta event uuid",
        None,
    );
    // The hook names the org it came from: https://<org>.okta.com/api/v1/eventHooks/...
    let org = str_at(raw, "source")
        .and_then(|source| source.strip_prefix("https://"))
        .and_then(|rest| rest.split('/').next())
        .filter(|host| host.contains("okta"));
    alert.tenant(org.map(str::to_string), None);

    let description = match (display_message, result.as_deref(), reason) {
        (Some(message), Some(result), Some(reason)) => {
            Some(format!("{message} (outcome {result}: {reason})"))
        }
        (Some(message), Some(result), None) => Some(format!("{message} (outcome {result})")),
        (message, _, _) => message.map(str::to_string),
    };
    alert.description(description.as_deref());
    alert.signals.category = Some(AlertCategory::Identity);
    alert.signals.action = Some(match result.as_deref() {
        Some("SUCCESS" | "ALLOW") => ActionTaken::Allowed,
        Some("FAILURE" | "DENY") => ActionTaken::Blocked,
        _ => ActionTaken::Observed,
    });
    alert.tag(Some(event_type));

    let actor_user = actor_user(event);
    let target_users: Vec<&str> = targets_of_type(event, "User")
        .filter_map(|target| first_str(target, &["alternateId", "displayName"]))
        .collect();
    let sign_in_user = actor_user.or_else(|| target_users.first().copied());
    let client_ip = str_at(event, "client.ipAddress");

    let mut sign_in = SignInSignal {
        user: sign_in_user.map(str::to_string),
        source_ip: client_ip.map(str::to_string),
        country: str_at(event, "client.geographicalContext.country").map(str::to_string),
        city: str_at(event, "client.geographicalContext.city").map(str::to_string),
        network_owner: first_str(event, &["securityContext.asOrg", "securityContext.isp"])
            .map(str::to_string),
        user_agent: str_at(event, "client.userAgent.rawUserAgent").map(str::to_string),
        application: targets_of_type(event, "AppInstance")
            .find_map(|target| first_str(target, &["displayName", "alternateId"]))
            .map(str::to_string),
        ..SignInSignal::default()
    };
    if is_sign_in_event(event_type) {
        sign_in.succeeded = match result.as_deref() {
            Some("SUCCESS" | "ALLOW") => Some(true),
            Some("FAILURE" | "DENY") => Some(false),
            _ => None,
        };
    }
    if event_type == "user.authentication.auth_via_mfa" {
        sign_in.mfa_passed = match result.as_deref() {
            Some("SUCCESS") => Some(true),
            Some("FAILURE" | "DENY") => Some(false),
            _ => None,
        };
    }
    if is_push_denial(event) {
        sign_in.mfa_passed = Some(false);
    }
    let counts = count_batch(event, batch);
    apply_batch(&mut sign_in, &counts, batch.len());
    // A batch whose denials end in an approval or a session is a sign-in that went
    // through, whatever the first event's own outcome.
    if counts.mfa_approved || counts.session_started {
        alert.signals.action = Some(ActionTaken::Allowed);
    }
    read_risk(event, &mut sign_in, &mut alert);
    alert.signals.sign_in = Some(sign_in);

    // Administrative events: the actor changed something about a user, app or group.
    if !is_sign_in_event(event_type) && !event_type.starts_with("system.push") {
        // Roles granted are named in tags: a role id is no resource to correlate on.
        for role in targets_of_type(event, "ROLE") {
            alert.tag(
                first_str(role, &["displayName", "id"])
                    .map(|role| format!("role:{role}"))
                    .as_deref(),
            );
        }
        let resource = array_at(event, "target").iter().find(|target| {
            str_at(target, "type").is_some_and(|kind| !matches!(kind, "User" | "ROLE"))
        });
        alert.signals.cloud = Some(CloudSignal {
            provider: Some("okta".into()),
            account: org.map(str::to_string),
            service: Some("Okta".into()),
            operation: Some(event_type.to_string()),
            principal: actor_user.map(str::to_string),
            resource: resource
                .and_then(|target| first_str(target, &["id", "alternateId"]))
                .map(str::to_string),
            resource_type: resource
                .and_then(|target| str_at(target, "type"))
                .map(str::to_string),
            ..CloudSignal::default()
        });
    }
    for user in &target_users {
        alert.entity(EntityKind::User, Some(user));
    }
    for address in array_at(event, "request.ipChain") {
        alert.entity(EntityKind::Ip, str_at(address, "ip"));
    }
    mitre(event_type, reason, &mut alert);

    let story = match (sign_in_user, client_ip) {
        (Some(user), Some(address)) => Some(format!("{}:{address}", user.to_lowercase())),
        (Some(user), None) => Some(format!("{event_type}:{}", user.to_lowercase())),
        (None, _) => text_at(event, "transaction.id"),
    };
    alert.coalesce_key(story);
    Ok(alert.finish())
}

/// The acting person's login, when the actor is a user (not Okta itself or an API client).
fn actor_user(event: &Value) -> Option<&str> {
    str_at(event, "actor.type")
        .is_some_and(|kind| kind.eq_ignore_ascii_case("user"))
        .then(|| str_at(event, "actor.alternateId"))
        .flatten()
}

fn targets_of_type<'a>(event: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> {
    array_at(event, "target")
        .iter()
        .filter(move |target| str_at(target, "type").is_some_and(|found| found == kind))
}

/// Event types that are a sign-in or a step of one, whose outcome says whether it worked.
fn is_sign_in_event(event_type: &str) -> bool {
    event_type == "user.session.start"
        || event_type == "policy.evaluate_sign_on"
        || event_type == "security.threat.detected"
        || event_type.starts_with("user.authentication.")
        || event_type.starts_with("user.mfa.okta_verify")
        || event_type.starts_with("app.oauth2.")
}

fn is_push_denial(event: &Value) -> bool {
    let event_type = str_at(event, "eventType").unwrap_or_default();
    if event_type.starts_with("user.mfa.okta_verify.deny_push") {
        return true;
    }
    let failed = str_at(event, "outcome.result")
        .is_some_and(|result| result.eq_ignore_ascii_case("FAILURE"));
    let rejected = str_at(event, "outcome.reason").is_some_and(|reason| {
        let lowered = reason.to_ascii_lowercase();
        lowered.contains("reject") || lowered.contains("denied")
    });
    event_type == "user.authentication.auth_via_mfa" && failed && rejected
}

/// What the events of one delivery add up to, relative to the first event.
#[derive(Debug, Default)]
struct BatchCounts {
    push_denials: u32,
    mfa_approved: bool,
    session_started: bool,
    failures: u32,
    failed_accounts: BTreeSet<String>,
}

fn count_batch(first: &Value, batch: &[Value]) -> BatchCounts {
    let user = str_at(first, "actor.alternateId").map(str::to_lowercase);
    let address = str_at(first, "client.ipAddress");
    let mut counts = BatchCounts::default();
    for event in batch.iter().take(MAX_BATCH) {
        let event_type = str_at(event, "eventType").unwrap_or_default();
        let result = str_at(event, "outcome.result").map(str::to_ascii_uppercase);
        let same_user =
            user.is_some() && str_at(event, "actor.alternateId").map(str::to_lowercase) == user;
        if same_user && is_push_denial(event) {
            counts.push_denials = counts.push_denials.saturating_add(1);
        }
        if same_user
            && event_type == "user.authentication.auth_via_mfa"
            && result.as_deref() == Some("SUCCESS")
        {
            counts.mfa_approved = true;
        }
        if same_user && event_type == "user.session.start" && result.as_deref() == Some("SUCCESS") {
            counts.session_started = true;
        }
        let same_address = address.is_some() && str_at(event, "client.ipAddress") == address;
        if same_address
            && is_sign_in_event(event_type)
            && !is_push_denial(event)
            && matches!(result.as_deref(), Some("FAILURE" | "DENY"))
        {
            counts.failures = counts.failures.saturating_add(1);
            if let Some(account) = str_at(event, "actor.alternateId")
                && counts.failed_accounts.len() < MAX_BATCH
            {
                counts.failed_accounts.insert(account.to_lowercase());
            }
        }
    }
    counts
}

fn apply_batch(sign_in: &mut SignInSignal, counts: &BatchCounts, batch_len: usize) {
    if counts.push_denials > 0 {
        sign_in.mfa_denials = Some(counts.push_denials);
    }
    if counts.mfa_approved {
        sign_in.mfa_passed = Some(true);
    }
    if counts.session_started {
        sign_in.succeeded = Some(true);
    }
    // A single event's own failure is its outcome, not a count.
    if batch_len > 1 && counts.failures > 0 {
        sign_in.failure_count = Some(counts.failures);
        sign_in.targeted_accounts = u32::try_from(counts.failed_accounts.len()).ok();
    }
}

/// Okta's risk engine and behaviour detection, and the address's reputation.
fn read_risk(event: &Value, sign_in: &mut SignInSignal, alert: &mut AlertBuilder) {
    let debug = |key: &str| str_at(event, &format!("debugContext.debugData.{key}"));
    let mut reasons: Vec<String> = Vec::new();
    if let Some(risk) = debug("risk") {
        let (level, risk_reasons) = braced_risk(risk);
        sign_in.risk_level = level.map(str::to_ascii_lowercase);
        reasons.extend(risk_reasons.into_iter().map(str::to_string));
    }
    if let Some(behaviors) = debug("behaviors") {
        reasons.extend(positive_behaviors(behaviors).map(str::to_string));
    }
    if let Some(embedded) =
        debug("logOnlySecurityData").filter(|text| text.len() <= MAX_EMBEDDED_JSON)
        && let Ok(data) = serde_json::from_str::<Value>(embedded)
    {
        if sign_in.risk_level.is_none() {
            sign_in.risk_level = str_at(&data, "risk.level").map(str::to_ascii_lowercase);
        }
        if let Some(risk_reasons) = str_at(&data, "risk.reasons") {
            reasons.extend(
                risk_reasons
                    .split(',')
                    .map(|reason| reason.trim().to_string()),
            );
        }
        if let Some(Value::Object(behaviors)) = data.get("behaviors") {
            for (name, verdict) in behaviors.iter().take(50) {
                if verdict.as_str() == Some("POSITIVE") {
                    reasons.push(name.clone());
                }
            }
        }
    }
    if debug("threatSuspected").is_some_and(|flag| flag.eq_ignore_ascii_case("true")) {
        reasons.push("threatSuspected".into());
        alert.tag(Some("threat suspected"));
    }
    if bool_at(event, "securityContext.isProxy") == Some(true) {
        reasons.push("isProxy".into());
        alert.tag(Some("anonymizing proxy"));
    }
    for reason in reasons {
        if !reason.is_empty()
            && reason.len() <= 200
            && !sign_in.risk_reasons.contains(&reason)
            && sign_in.risk_reasons.len() < 30
        {
            sign_in.risk_reasons.push(reason);
        }
    }
}

/// "{reasons=Anomalous Device, New Geo-Location, level=HIGH}" -> (HIGH, [reasons]).
/// The reasons themselves contain commas, so each key runs to the next known key.
fn braced_risk(text: &str) -> (Option<&str>, Vec<&str>) {
    let inner = text.trim().trim_start_matches('{').trim_end_matches('}');
    let value_of = |key: &str| {
        let start = inner.find(key)? + key.len();
        let rest = &inner[start..];
        let end = ["level=", "reasons="]
            .iter()
            .filter_map(|next| rest.find(&format!(", {next}")))
            .min()
            .unwrap_or(rest.len());
        Some(rest[..end].trim())
    };
    let level = value_of("level=").filter(|level| !level.is_empty());
    let reasons = value_of("reasons=")
        .map(|reasons| {
            reasons
                .split(',')
                .map(str::trim)
                .filter(|reason| !reason.is_empty())
                .collect()
        })
        .unwrap_or_default();
    (level, reasons)
}

/// "{New IP=POSITIVE, New Device=NEGATIVE}" -> the behaviours Okta saw ("New IP").
fn positive_behaviors(text: &str) -> impl Iterator<Item = &str> {
    text.trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .split(',')
        .take(50)
        .filter_map(|pair| pair.split_once('='))
        .filter(|(_, verdict)| verdict.trim() == "POSITIVE")
        .map(|(name, _)| name.trim())
}

/// ATT&CK for the event types whose meaning is unambiguous.
fn mitre(event_type: &str, reason: Option<&str>, alert: &mut AlertBuilder) {
    let technique = match event_type {
        "user.mfa.okta_verify.deny_push" | "user.mfa.okta_verify.deny_push_upgrade_needed" => {
            Some("T1621")
        }
        "user.mfa.factor.deactivate" | "user.mfa.factor.reset_all" | "user.mfa.attempt_bypass" => {
            Some("T1556.006")
        }
        "user.account.privilege.grant" | "group.privilege.grant" => Some("T1098.003"),
        "user.session.impersonation.initiate" | "user.session.impersonation.grant" => {
            Some("T1078.004")
        }
        "user.account.lock" => Some("T1110"),
        "security.threat.detected" => {
            let lowered = reason.unwrap_or_default().to_ascii_lowercase();
            if lowered.contains("spray") {
                Some("T1110.003")
            } else if lowered.contains("stuffing") {
                Some("T1110.004")
            } else if lowered.contains("brute") || lowered.contains("login failures") {
                Some("T1110")
            } else {
                None
            }
        }
        _ => None,
    };
    alert.technique(technique);
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

    fn event(event_type: &str, user: &str, ip: &str, result: &str) -> Value {
        json!({
            "uuid": format!("{event_type}-{user}"), "published": "2026-03-03T08:00:00.000Z",
            "eventType": event_type, "version": "0", "severity": "INFO",
            "displayMessage": "message",
            "actor": {"id": "00u1", "type": "User", "alternateId": user, "displayName": user},
            "client": {"ipAddress": ip},
            "outcome": {"result": result}
        })
    }

    #[test]
    fn the_sample_reads_completely() {
        let raw: Value = serde_json::from_str(SYSTEM_LOG.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "okta_system_log_event");
        assert_eq!(parsed.title, "User login to Okta");
        assert_eq!(parsed.alert_type, "okta:user.session.start");
        assert_eq!(parsed.severity.as_deref(), Some("info"));
        assert_eq!(parsed.direct_source_label, "Okta");
        let sign_in = parsed.signals.sign_in.as_ref().unwrap();
        assert_eq!(sign_in.user.as_deref(), Some("m.garcia@example.com"));
        assert_eq!(sign_in.source_ip.as_deref(), Some("203.0.113.66"));
        assert_eq!(sign_in.succeeded, Some(true));
        assert_eq!(sign_in.country.as_deref(), Some("Germany"));
        assert_eq!(
            sign_in.network_owner.as_deref(),
            Some("Tor exit relay hosting")
        );
        assert_eq!(sign_in.risk_level.as_deref(), Some("high"));
        assert!(sign_in.risk_reasons.contains(&"New Device".to_string()));
        assert!(sign_in.risk_reasons.contains(&"isProxy".to_string()));
        assert!(
            parsed
                .signals
                .tags
                .contains(&"anonymizing proxy".to_string())
        );
        assert_eq!(parsed.signals.action, Some(ActionTaken::Allowed));
        assert!(has(&parsed, EntityKind::User, "m.garcia@example.com"));
        assert!(has(&parsed, EntityKind::Ip, "203.0.113.66"));
    }

    #[test]
    fn a_hook_batch_counts_push_denials_and_the_final_approval() {
        let mut events: Vec<Value> = (0..6)
            .map(|_| {
                let mut denial = event(
                    "user.mfa.okta_verify.deny_push",
                    "r.patel@example.com",
                    "203.0.113.77",
                    "FAILURE",
                );
                denial["outcome"]["reason"] = json!("User rejected Okta push verify");
                denial
            })
            .collect();
        events.push(event(
            "user.authentication.auth_via_mfa",
            "r.patel@example.com",
            "203.0.113.77",
            "SUCCESS",
        ));
        events.push(event(
            "user.session.start",
            "r.patel@example.com",
            "203.0.113.77",
            "SUCCESS",
        ));
        let hook = json!({
            "eventType": "com.okta.event_hook", "eventTypeVersion": "1.0",
            "cloudEventsVersion": "0.1", "source": "https://example.okta.com/api/v1/eventHooks/who1",
            "eventId": "e1", "eventTime": "2026-03-03T08:00:05.000Z",
            "data": {"events": events}
        });
        let parsed = read(&hook);
        assert_eq!(parsed.schema_key, "okta_system_log_event");
        assert_eq!(parsed.alert_type, "okta:user.mfa.okta_verify.deny_push");
        assert_eq!(parsed.tenant_id.as_deref(), Some("example.okta.com"));
        let sign_in = parsed.signals.sign_in.unwrap();
        assert_eq!(sign_in.mfa_denials, Some(6));
        assert_eq!(sign_in.mfa_passed, Some(true));
        assert_eq!(sign_in.succeeded, Some(true));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Allowed));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Credential Access"]);
    }

    #[test]
    fn a_hook_batch_of_failures_from_one_address_counts_the_accounts_targeted() {
        let events: Vec<Value> = ["a", "b", "c", "a"]
            .iter()
            .map(|user| {
                event(
                    "user.session.start",
                    &format!("{user}@example.com"),
                    "198.51.100.23",
                    "FAILURE",
                )
            })
            .collect();
        let hook = json!({"eventType": "com.okta.event_hook", "data": {"events": events}});
        let sign_in = read(&hook).signals.sign_in.unwrap();
        assert_eq!(sign_in.failure_count, Some(4));
        assert_eq!(sign_in.targeted_accounts, Some(3));
        assert_eq!(sign_in.succeeded, Some(false));
    }

    #[test]
    fn an_eventbridge_log_stream_event_reads_its_detail() {
        let raw = json!({
            "version": "0", "id": "x", "detail-type": "SystemLog",
            "source": "aws.partner/okta.com/example/okta-logs",
            "detail": event("user.account.lock", "l.brown@example.com", "203.0.113.9", "SUCCESS")
        });
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "okta_system_log_event");
        assert_eq!(parsed.signals.mitre_techniques, vec!["T1110"]);
    }

    #[test]
    fn a_privilege_grant_names_the_admin_and_the_grantee() {
        let mut grant = event(
            "user.account.privilege.grant",
            "j.smith@example.com",
            "192.0.2.20",
            "SUCCESS",
        );
        grant["target"] = json!([
            {"id": "00u9", "type": "User", "alternateId": "l.brown@example.com"},
            {"id": "SUPER_ADMIN", "type": "ROLE", "displayName": "Super Administrator"}
        ]);
        let parsed = read(&grant);
        let cloud = parsed.signals.cloud.as_ref().unwrap();
        assert_eq!(cloud.principal.as_deref(), Some("j.smith@example.com"));
        assert_eq!(cloud.resource, None);
        assert!(
            parsed
                .signals
                .tags
                .contains(&"role:Super Administrator".to_string())
        );
        assert!(has(&parsed, EntityKind::User, "l.brown@example.com"));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Persistence"]);
        assert_eq!(parsed.signals.sign_in.unwrap().succeeded, None);
    }

    #[test]
    fn risk_strings_read_with_commas_inside_the_reasons() {
        let (level, reasons) =
            braced_risk("{reasons=Anomalous Device, New Geo-Location, level=HIGH}");
        assert_eq!(level, Some("HIGH"));
        assert_eq!(reasons, vec!["Anomalous Device", "New Geo-Location"]);
        let (level, reasons) = braced_risk("{level=LOW}");
        assert_eq!(level, Some("LOW"));
        assert!(reasons.is_empty());
        assert_eq!(
            positive_behaviors("{New IP=POSITIVE, New Device=NEGATIVE, Velocity=POSITIVE}")
                .collect::<Vec<_>>(),
            vec!["New IP", "Velocity"]
        );
    }

    #[test]
    fn other_shapes_are_not_okta_events() {
        for raw in [
            json!({"eventType": "user.session.start"}),
            json!({"uuid": "x", "published": "2026-03-01T00:00:00Z", "eventType": "login"}),
            json!({"eventType": "com.okta.event_hook", "data": {"events": []}}),
            json!({"source": "aws.guardduty", "detail": {"uuid": "x"}}),
        ] {
            assert!(!detect(&raw), "{raw}");
        }
    }

    #[test]
    fn hostile_input_never_panics() {
        let long = "é".repeat(100_000);
        for raw in [
            json!({"uuid": 5, "published": [], "eventType": {}, "actor": "x"}),
            json!({"uuid": "u", "published": "garbage", "eventType": "a.b", "actor": {},
                   "client": {"ipAddress": 7, "geographicalContext": []},
                   "target": "nope", "outcome": {"result": []},
                   "securityContext": {"isProxy": "maybe"},
                   "debugContext": {"debugData": {"risk": "{{{level=", "behaviors": "=,=,=",
                                                  "logOnlySecurityData": "{not json"}}}),
            json!({"uuid": long, "published": long, "eventType": format!("a.{long}"),
                   "displayMessage": long, "actor": {"type": "User", "alternateId": long},
                   "debugContext": {"debugData": {"risk": format!("{{reasons={long}, level={long}}}")}}}),
            json!({"eventType": "com.okta.event_hook", "data": {"events": [
                {"uuid": "u", "published": "2026-03-01T00:00:00Z", "eventType": "a.b", "actor": {}},
                null, 5, "x", []]}}),
        ] {
            let _ = parse_alert(Some("okta_system_log_event"), &raw, chrono::Utc::now());
            let _ = parse_alert(None, &raw, chrono::Utc::now());
        }
    }
}
