//! Google Workspace Alert Center alerts (Alert Center API v1beta1 `Alert` resource), as
//! `alerts.get` returns one, or the first of an `alerts.list` page (`{"alerts": [...]}`).
//! The alert's `type` ("Suspicious login", "User reported phishing", "Leaked password")
//! is the detection; `data` carries a typed payload named by its `@type`
//! (`type.googleapis.com/google.apps.alertcenter.type.MailPhishing`, `AccountWarning`,
//! `StateSponsoredAttack`, `DeviceCompromised`...). Google's own severity is in
//! `metadata.severity`; the alert carries no classification of its own (feedback is a
//! separate resource).

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, AttachmentSignal, EmailSignal, EntityKind, ParsedAlert,
    SignInSignal,
};

use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::entities::hash_kind;
use crate::json::{array_at, bool_at, first_str, str_at, strings_at};
use crate::registry::Schema;
use crate::time::time_at;

pub(crate) static ALERT_CENTER: Schema = Schema {
    key: "google_workspace_alert",
    display_name: "Google Workspace Alert Center alert",
    source_label: "Google Workspace",
    integration: "google_workspace",
    sample: include_str!("../../samples/google_workspace_alert.json"),
    detect,
    parse,
};

/// The most messages of one phishing alert read.
const MAX_MESSAGES: usize = 100;

fn detect(raw: &Value) -> bool {
    alert_of(raw).is_some()
}

fn alert_of(raw: &Value) -> Option<&Value> {
    if is_alert(raw) {
        return Some(raw);
    }
    array_at(raw, "alerts")
        .first()
        .filter(|alert| is_alert(alert))
}

/// An Alert Center alert names its customer, its id, its type and the product that raised it.
fn is_alert(value: &Value) -> bool {
    str_at(value, "alertId").is_some()
        && str_at(value, "customerId").is_some()
        && str_at(value, "type").is_some()
        && str_at(value, "source").is_some()
}

/// The payload's kind: "MailPhishing" from "type.googleapis.com/google.apps.alertcenter.type.MailPhishing".
fn data_kind(alert: &Value) -> Option<&str> {
    str_at(alert, "data.@type").and_then(|kind| kind.rsplit(['.', '/']).next())
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let Some(source_alert) = alert_of(raw) else {
        return Err(ParseError::DoesNotFit {
            schema_key: ALERT_CENTER.key,
            reason: "an Alert Center alert has alertId, customerId, type and source".into(),
        });
    };
    let raw = source_alert;
    let alert_type = str_at(raw, "type").unwrap_or_default();
    let source = str_at(raw, "source").unwrap_or_default();
    let kind = data_kind(raw).unwrap_or_default();
    alert
        .title(Some(alert_type))
        .alert_type(Some(&format!("google_workspace:{alert_type}")))
        .create_time(time_at(raw, "createTime"))
        .start_time(time_at(raw, "startTime"))
        .severity(str_at(raw, "metadata.severity"))
        .ticket(
            str_at(raw, "alertId").map(str::to_string),
            "alertId",
            str_at(raw, "securityInvestigationToolLink").map(str::to_string),
        )
        .tenant(
            str_at(raw, "customerId").map(str::to_string),
            str_at(raw, "data.domainId.customerPrimaryDomain").map(str::to_string),
        );
    for tag in [Some(source), str_at(raw, "metadata.status")] {
        alert.tag(tag);
    }
    if bool_at(raw, "deleted") == Some(true) {
        alert.tag(Some("deleted"));
    }

    let lowered_type = alert_type.to_ascii_lowercase();
    let category = match (kind, source) {
        ("MailPhishing" | "BadWhitelist" | "PhishingSpike", _) | (_, "Gmail phishing") => {
            AlertCategory::Email
        }
        (
            "AccountWarning" | "StateSponsoredAttack" | "UserChanges" | "AccountSuspensionWarning",
            _,
        )
        | (_, "Google identity") => AlertCategory::Identity,
        ("DeviceCompromised" | "SuspiciousActivity", _) | (_, "Mobile device management") => {
            AlertCategory::Endpoint
        }
        _ => AlertCategory::Application,
    };
    alert.signals.category = Some(category);

    // The user the alert is about: AccountWarning and the MDM payloads name an email;
    // UserChanges names the changed account.
    let user = first_str(raw, &["data.email", "data.name"]).filter(|user| user.contains('@'));
    match category {
        AlertCategory::Email => read_mail(raw, &lowered_type, &mut alert),
        AlertCategory::Identity => read_account(raw, user, &lowered_type, &mut alert),
        _ => {
            alert.entity(EntityKind::User, user);
            alert.signals.action = Some(ActionTaken::Observed);
        }
    }
    for device in array_at(raw, "data.events").iter().take(MAX_MESSAGES) {
        alert.tag(str_at(device, "deviceCompromisedState"));
        alert.tag(str_at(device, "deviceProperty"));
        alert.tag(str_at(device, "deviceModel"));
    }
    mitre(&lowered_type, &mut alert);

    let subject = user
        .or_else(|| str_at(raw, "data.maliciousEntity.entity.emailAddress"))
        .or_else(|| str_at(raw, "data.maliciousEntity.fromHeader"))
        .map(str::to_lowercase);
    alert.coalesce_key(Some(match subject {
        Some(subject) => format!("{alert_type}:{subject}"),
        None => str_at(raw, "alertId").unwrap_or(alert_type).to_string(),
    }));
    Ok(alert.finish())
}

/// Account warnings: a suspicious or blocked sign-in, a leaked password, a suspension.
fn read_account(raw: &Value, user: Option<&str>, lowered_type: &str, alert: &mut AlertBuilder) {
    // Google fills loginTime only for a sign-in that went through; a blocked attempt has
    // only the address.
    let signed_in = time_at(raw, "data.loginDetails.loginTime").is_some();
    let blocked_login = lowered_type.starts_with("suspicious login") && !signed_in;
    let suspended = lowered_type.starts_with("user suspended");
    let succeeded = if signed_in {
        Some(true)
    } else if blocked_login {
        Some(false)
    } else {
        None
    };
    alert.signals.action = Some(if signed_in {
        ActionTaken::Allowed
    } else if blocked_login || suspended {
        ActionTaken::Blocked
    } else {
        ActionTaken::Observed
    });
    alert.signals.sign_in = Some(SignInSignal {
        user: user.map(str::to_string),
        source_ip: str_at(raw, "data.loginDetails.ipAddress").map(str::to_string),
        succeeded,
        // metadata.severity is the alert's severity (read as such by the builder), not a
        // risk rating of the sign-in: restating it here would count it twice.
        risk_reasons: str_at(raw, "type")
            .map(str::to_string)
            .into_iter()
            .collect(),
        ..SignInSignal::default()
    });
}

/// Gmail phishing alerts: the sender, the messages and what Gmail did with them.
fn read_mail(raw: &Value, lowered_type: &str, alert: &mut AlertBuilder) {
    let messages = array_at(raw, "data.messages");
    let mut recipients: Vec<String> = Vec::new();
    let mut attachments: Vec<AttachmentSignal> = Vec::new();
    for message in messages.iter().take(MAX_MESSAGES) {
        if let Some(recipient) = str_at(message, "recipient")
            && !recipients.iter().any(|known| known == recipient)
        {
            recipients.push(recipient.to_string());
        }
        for digest in strings_at(message, "attachmentsSha256Hash") {
            if hash_kind(digest) == Some(EntityKind::HashSha256)
                && !attachments
                    .iter()
                    .any(|known| known.sha256.as_deref() == Some(digest))
            {
                attachments.push(AttachmentSignal {
                    sha256: Some(digest.to_string()),
                    ..AttachmentSignal::default()
                });
            }
        }
    }
    let from_header = str_at(raw, "data.maliciousEntity.fromHeader");
    let sender = str_at(raw, "data.maliciousEntity.entity.emailAddress")
        .or(from_header.and_then(address_in_header));
    let removed = str_at(raw, "data.systemActionType") == Some("REMOVED_FROM_INBOX");
    alert.signals.action = Some(match str_at(raw, "data.systemActionType") {
        Some("REMOVED_FROM_INBOX") => ActionTaken::Blocked,
        Some("NO_OPERATION") => ActionTaken::Allowed,
        _ => ActionTaken::Observed,
    });
    let threat_kind = if lowered_type.contains("malware") {
        "malware"
    } else if lowered_type.contains("spoofing") {
        "impersonation"
    } else if lowered_type.contains("spam") {
        "spam"
    } else {
        "phish"
    };
    if bool_at(raw, "data.isInternal") == Some(true) {
        alert.tag(Some("internal sender"));
    }
    alert.tag(str_at(raw, "data.maliciousEntity.displayName"));
    // The Alert Center documents `fromHeader` as the sender's address and `entity` as the
    // actor that triggered the alert: when they differ, both are parties to act on.
    alert.entity(EntityKind::Email, from_header.and_then(address_in_header));
    alert.signals.email = Some(EmailSignal {
        sender: sender.map(str::to_string),
        recipients,
        subject: messages
            .iter()
            .find_map(|message| str_at(message, "subjectText"))
            .map(str::to_string),
        attachments,
        threat_kind: Some(threat_kind.into()),
        // Every Gmail phishing alert is about messages that reached mailboxes: reported by
        // their recipients or reclassified after delivery. Removal came after.
        delivered: Some(true).filter(|_| !messages.is_empty() || removed),
        ..EmailSignal::default()
    });
}

/// "Payroll Team <payroll@evil.example>" -> "payroll@evil.example"; a bare address as is.
fn address_in_header(header: &str) -> Option<&str> {
    let address = match (header.rfind('<'), header.rfind('>')) {
        (Some(start), Some(end)) if start < end => &header[start + 1..end],
        _ => header,
    };
    let address = address.trim();
    address.contains('@').then_some(address)
}

/// ATT&CK for the alert types whose meaning is unambiguous.
fn mitre(lowered_type: &str, alert: &mut AlertBuilder) {
    if lowered_type.starts_with("suspicious login")
        || lowered_type.starts_with("suspicious programmatic login")
        || lowered_type.starts_with("user suspended")
    {
        alert.technique(Some("T1078.004"));
    } else if lowered_type.contains("leaked password") {
        alert.tactic(Some("Credential Access"));
    } else if lowered_type.contains("malware reclassification") {
        alert.technique(Some("T1566.001"));
    } else if lowered_type.contains("phishing")
        || lowered_type.contains("suspicious message")
        || lowered_type.contains("government attack")
    {
        alert.technique(Some("T1566"));
    } else if lowered_type.contains("admin privilege") {
        alert.technique(Some("T1098"));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sleuth_domain::SeverityLevel;

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

    fn account_warning(alert_type: &str, data: Value) -> Value {
        json!({
            "customerId": "C03az79cb", "alertId": "a1", "createTime": "2026-03-05T10:00:00Z",
            "startTime": "2026-03-05T09:58:00Z", "type": alert_type, "source": "Google identity",
            "data": data, "metadata": {"severity": "HIGH", "status": "NOT_STARTED"}
        })
    }

    #[test]
    fn the_sample_reads_completely() {
        let raw: Value = serde_json::from_str(ALERT_CENTER.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "google_workspace_alert");
        assert_eq!(parsed.title, "User reported phishing");
        assert_eq!(parsed.alert_type, "google_workspace:User reported phishing");
        assert_eq!(parsed.severity.as_deref(), Some("medium"));
        assert_eq!(parsed.tenant_id.as_deref(), Some("C03az79cb"));
        assert!(parsed.origin_ticket_url.is_some());
        assert_eq!(parsed.signals.category, Some(AlertCategory::Email));
        let email = parsed.signals.email.as_ref().unwrap();
        assert_eq!(
            email.sender.as_deref(),
            Some("hr-benefits@benefits-portal-update.com")
        );
        assert_eq!(email.recipients.len(), 2);
        assert_eq!(email.attachments.len(), 1);
        assert_eq!(email.threat_kind.as_deref(), Some("phish"));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Allowed));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Initial Access"]);
        assert!(has(
            &parsed,
            EntityKind::Email,
            "hr-benefits@benefits-portal-update.com"
        ));
        assert!(has(&parsed, EntityKind::Email, "l.brown@example.com"));
    }

    #[test]
    fn a_suspicious_login_without_a_login_time_was_blocked() {
        let parsed = read(&account_warning(
            "Suspicious login",
            json!({"@type": "type.googleapis.com/google.apps.alertcenter.type.AccountWarning",
                   "email": "r.patel@example.com", "loginDetails": {"ipAddress": "203.0.113.66"}}),
        ));
        assert_eq!(parsed.signals.category, Some(AlertCategory::Identity));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Blocked));
        let sign_in = parsed.signals.sign_in.as_ref().unwrap();
        assert_eq!(sign_in.succeeded, Some(false));
        assert_eq!(sign_in.source_ip.as_deref(), Some("203.0.113.66"));
        assert_eq!(parsed.signals.severity_level, Some(SeverityLevel::High));
        assert!(has(&parsed, EntityKind::User, "r.patel@example.com"));
        assert!(has(&parsed, EntityKind::Ip, "203.0.113.66"));
    }

    #[test]
    fn a_suspicious_login_with_a_login_time_went_through() {
        let parsed = read(&account_warning(
            "Suspicious programmatic login",
            json!({"email": "m.garcia@example.com",
                   "loginDetails": {"ipAddress": "198.51.100.9", "loginTime": "2026-03-05T09:57:00Z"}}),
        ));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Allowed));
        assert_eq!(parsed.signals.sign_in.unwrap().succeeded, Some(true));
    }

    #[test]
    fn a_list_page_reads_its_first_alert() {
        let page = json!({"alerts": [account_warning("Leaked password",
                          json!({"email": "m.garcia@example.com"}))], "nextPageToken": "x"});
        let parsed = read(&page);
        assert_eq!(parsed.schema_key, "google_workspace_alert");
        assert_eq!(parsed.signals.mitre_tactics, vec!["Credential Access"]);
    }

    #[test]
    fn headers_yield_their_address() {
        assert_eq!(
            address_in_header("Payroll <pay@evil.example>"),
            Some("pay@evil.example")
        );
        assert_eq!(
            address_in_header("pay@evil.example"),
            Some("pay@evil.example")
        );
        assert_eq!(address_in_header("> weird <"), None);
        assert_eq!(address_in_header("No address"), None);
    }

    #[test]
    fn hostile_input_never_panics() {
        let long = "ß".repeat(100_000);
        for raw in [
            json!({"alertId": [], "customerId": {}, "type": 5, "source": null}),
            json!({"alertId": "a", "customerId": "c", "type": "Gmail phishing", "source": "Gmail phishing",
                   "data": {"@type": 5, "messages": [null, 5, {"recipient": [], "attachmentsSha256Hash": "x"}],
                            "maliciousEntity": {"fromHeader": ">><<@"}}}),
            json!({"alertId": long, "customerId": long, "type": long, "source": long,
                   "data": {"@type": long, "email": long, "loginDetails": {"ipAddress": long}}}),
            json!({"alerts": [null, {"alertId": "a"}]}),
        ] {
            let _ = parse_alert(None, &raw, chrono::Utc::now());
            let _ = parse_alert(Some("google_workspace_alert"), &raw, chrono::Utc::now());
        }
    }
}
