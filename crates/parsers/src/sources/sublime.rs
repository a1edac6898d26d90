//! Sublime Security webhook events: the body a Webhook Action POSTs when rules flag a
//! message (`type: "message.flagged"`), and the same envelope for user reports
//! (`message.user_reported`; any `message.*` type is read the same way):
//!
//! ```json
//! {"type": "message.flagged", "created_at": "...", "data": {
//!    "flagged_rules": [{"id", "name", "severity", "tags", "attack_types", "tactics_and_techniques"}],
//!    "message": {"id", "canonical_id", "external_id", "message_source_id", "created_at",
//!                "attack_score_verdict", "mailbox": {"id", "external_id", "email"}},
//!    "triggered_actions": [{"id", "name", "type"}]}}
//! ```
//!
//! Sublime's own payload names the message by its ids and mailbox only. Forwarders and
//! SOAR playbooks that enrich it with the message itself put those fields into
//! `data.message` (or `data.message.mdm`); both spellings are read: the Message Data Model's
//! (`sender.email.email`, `sender.display_name`, `recipients.to[].email.email`,
//! `subject.subject`, `body.links[].href_url.url`, `attachments[]{file_name, sha256, md5}`,
//! `headers.ips[].ip`, `headers.auth_summary.spf.details.client_ip.ip`,
//! `headers.return_path.email`, `headers.reply_to[].email.email`) and the Messages API's
//! flat one (`sender.email`, `subject`, `recipients[].email`, `landed_in_spam`, `read_at`).
//!
//! Sublime's rule tactics and techniques are its own vocabulary, kept as tags; the ATT&CK
//! technique is phishing, by what the message carries.

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, AttachmentSignal, EmailSignal, EntityKind, ParsedAlert,
    SeverityLevel, SourceVerdict,
};

use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::entities::{IpScope, ip_scope, normalize_ip};
use crate::json::{array_at, at, bool_at, first_str, str_at, strings_at, text_at};
use crate::registry::Schema;
use crate::time::first_time;

pub(crate) static ALERT: Schema = Schema {
    key: "sublime_security_alert",
    display_name: "Sublime Security webhook (flagged or reported message)",
    source_label: "Sublime Security",
    integration: "sublime_security",
    sample: include_str!("../../samples/sublime_security_alert.json"),
    detect,
    parse,
};

fn detect(raw: &Value) -> bool {
    str_at(raw, "type").is_some_and(|kind| kind.starts_with("message."))
        && at(raw, "data").is_some_and(Value::is_object)
        && (at(raw, "data.flagged_rules").is_some_and(Value::is_array)
            || at(raw, "data.message").is_some_and(Value::is_object))
}

/// Where the message's own fields may be: merged into `data.message`, or beside its ids.
const MESSAGE_BASES: [&str; 2] = ["data.message", "data.message.mdm"];

/// The first string at `path` under any of the message's bases.
fn message_str<'a>(raw: &'a Value, paths: &[&str]) -> Option<&'a str> {
    MESSAGE_BASES.iter().find_map(|base| {
        paths
            .iter()
            .find_map(|path| str_at(raw, &format!("{base}.{path}")))
    })
}

/// The array at `path` under the first base that has one.
fn message_array<'a>(raw: &'a Value, path: &str) -> &'a [Value] {
    MESSAGE_BASES
        .iter()
        .map(|base| array_at(raw, &format!("{base}.{path}")))
        .find(|items| !items.is_empty())
        .unwrap_or(&[])
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let kind = str_at(raw, "type").unwrap_or("message.flagged");
    let rules: Vec<&Value> = array_at(raw, "data.flagged_rules")
        .iter()
        .filter(|rule| rule.is_object())
        .take(100)
        .collect();
    let message_id = text_at(raw, "data.message.id");
    let canonical_id = text_at(raw, "data.message.canonical_id");
    if rules.is_empty() && message_id.is_none() && canonical_id.is_none() {
        return Err(ParseError::DoesNotFit {
            schema_key: ALERT.key,
            reason: "a Sublime event has data.flagged_rules or data.message.id".into(),
        });
    }
    // The rule an analyst reads first: the most severe, the first among equals.
    let headline = rules
        .iter()
        .enumerate()
        .max_by_key(|(position, rule)| {
            (
                str_at(rule, "severity").and_then(SeverityLevel::parse),
                std::cmp::Reverse(*position),
            )
        })
        .map(|(_, rule)| *rule);
    let rule_name = headline.and_then(|rule| str_at(rule, "name"));
    let subject = message_str(raw, &["subject.subject", "subject"]);
    let reported = kind == "message.user_reported";
    let fallback_title = match subject {
        Some(subject) if reported => format!("Message reported by a user: {subject}"),
        _ if reported => "Message reported by a user".to_string(),
        _ => format!("Sublime {kind}"),
    };
    alert
        .title(rule_name)
        .title(Some(&fallback_title))
        .alert_type(Some(&format!("sublime:{}", rule_name.unwrap_or(kind))))
        .create_time(first_time(raw, &["created_at", "data.message.created_at"]))
        .start_time(first_time(
            raw,
            &["data.message.created_at", "data.message._meta.created_at"],
        ))
        .severity(headline.and_then(|rule| str_at(rule, "severity")));
    if rules.len() > 1 {
        let names: Vec<&str> = rules
            .iter()
            .filter_map(|rule| str_at(rule, "name"))
            .collect();
        alert.description(Some(&format!(
            "Flagged by {} rules: {}",
            names.len(),
            names.join("; ")
        )));
    }
    alert.ticket(message_id.clone(), "message id", None);
    // Sublime groups near-identical messages under one canonical id: one campaign, one story.
    alert.coalesce_key(canonical_id.or(message_id));

    let mut attack_types: Vec<String> = Vec::new();
    for rule in &rules {
        for key in [
            "tags",
            "attack_types",
            "tactics_and_techniques",
            "detection_methods",
        ] {
            for value in strings_at(rule, key) {
                alert.tag(Some(value));
                if key == "attack_types" {
                    attack_types.push(value.to_ascii_lowercase());
                }
            }
        }
    }
    let rule_names: Vec<String> = rules
        .iter()
        .filter_map(|rule| str_at(rule, "name"))
        .map(str::to_ascii_lowercase)
        .collect();
    let threat = threat_kind(&attack_types, &rule_names);

    // What Sublime did: removing the message stops it; a banner lets it through, marked.
    let actions: Vec<String> = array_at(raw, "data.triggered_actions")
        .iter()
        .take(50)
        .flat_map(|action| [str_at(action, "type"), str_at(action, "name")])
        .flatten()
        .map(str::to_ascii_lowercase)
        .collect();
    for action in array_at(raw, "data.triggered_actions").iter().take(50) {
        alert.tag(first_str(action, &["name", "type"]));
    }
    let removed = actions.iter().any(|action| {
        ["quarantine", "trash", "delete", "spam", "junk", "remove"]
            .iter()
            .any(|word| action.contains(word))
    });
    let bannered = actions
        .iter()
        .any(|action| action.contains("banner") || action.contains("warn"));
    let landed_in_spam = MESSAGE_BASES
        .iter()
        .any(|base| bool_at(raw, &format!("{base}.landed_in_spam")) == Some(true));
    alert.signals.action = Some(if removed {
        ActionTaken::Blocked
    } else if bannered {
        ActionTaken::Allowed
    } else {
        ActionTaken::Observed
    });
    let delivered = if removed || landed_in_spam {
        Some(false)
    } else if bannered || reported {
        Some(true)
    } else {
        None
    };

    let verdict = str_at(raw, "data.message.attack_score_verdict").map(str::to_ascii_lowercase);
    alert.signals.source_verdict = match verdict.as_deref() {
        Some("malicious") => Some(SourceVerdict::Malicious),
        Some("suspicious") => Some(SourceVerdict::Suspicious),
        Some("benign") => Some(SourceVerdict::Benign),
        _ => None,
    };
    if let Some(verdict) = verdict {
        alert.tag(Some(&format!("attack score: {verdict}")));
    }

    let mailbox = message_str(raw, &["mailbox.email.email", "mailbox.email"]);
    let mut recipients: Vec<String> = Vec::new();
    let mut add_recipient = |address: Option<&str>| {
        if let Some(address) = address
            && recipients.len() < 100
            && !recipients
                .iter()
                .any(|known| known.eq_ignore_ascii_case(address))
        {
            recipients.push(address.to_string());
        }
    };
    add_recipient(mailbox);
    for list in ["recipients.to", "recipients.cc", "recipients"] {
        for recipient in message_array(raw, list) {
            add_recipient(first_str(recipient, &["email.email", "email"]));
        }
    }
    let urls: Vec<String> = message_array(raw, "body.links")
        .iter()
        .filter_map(|link| str_at(link, "href_url.url"))
        .filter(|url| url.contains("://"))
        .map(str::to_string)
        .take(50)
        .collect();
    let attachments: Vec<AttachmentSignal> = message_array(raw, "attachments")
        .iter()
        .take(50)
        .map(|attachment| AttachmentSignal {
            name: str_at(attachment, "file_name").map(str::to_string),
            sha256: str_at(attachment, "sha256").map(str::to_string),
            md5: str_at(attachment, "md5").map(str::to_string),
        })
        .collect();
    let sender_ip = message_str(raw, &["headers.auth_summary.spf.details.client_ip.ip"])
        .and_then(normalize_ip)
        .or_else(|| {
            message_array(raw, "headers.ips")
                .iter()
                .filter_map(|ip| str_at(ip, "ip").and_then(normalize_ip))
                .find(|ip| ip_scope(ip) == Some(IpScope::Public))
        });
    let display_name = message_str(raw, &["sender.display_name"]);
    if let Some(display_name) = display_name {
        alert.tag(Some(&format!("sender display name: {display_name}")));
    }
    if message_str(raw, &["read_at"]).is_some() {
        alert.tag(Some("read by the recipient"));
    }

    // The mailbox is the organisation's own user; the attack's target.
    alert.entity(EntityKind::User, mailbox);
    alert.signals.category = Some(AlertCategory::Email);
    alert.technique(Some(
        if threat.as_deref() == Some("malware") || (urls.is_empty() && !attachments.is_empty()) {
            "T1566.001"
        } else if !urls.is_empty() {
            "T1566.002"
        } else {
            "T1566"
        },
    ));
    // A Reply-To elsewhere is where the answers of a BEC go.
    for reply_to in message_array(raw, "headers.reply_to") {
        alert.entity(
            EntityKind::Email,
            first_str(reply_to, &["email.email", "email"]),
        );
    }
    let sender = message_str(raw, &["sender.email.email", "sender.email"]);
    let envelope_sender = message_str(raw, &["headers.return_path.email"])
        .filter(|envelope| sender.is_none_or(|sender| !sender.eq_ignore_ascii_case(envelope)));
    alert.signals.email = Some(EmailSignal {
        sender: sender.map(str::to_string),
        envelope_sender: envelope_sender.map(str::to_string),
        sender_ip,
        recipients,
        subject: subject.map(str::to_string),
        urls,
        attachments,
        threat_kind: threat,
        delivered,
        clicked: None,
        click_permitted: None,
        sender_display_name: display_name.map(|name| crate::builder::truncate(name, 200)),
        reply_to: message_array(raw, "headers.reply_to")
            .iter()
            .find_map(|reply_to| first_str(reply_to, &["email.email", "email"]))
            .map(str::to_string),
    });
    Ok(alert.finish())
}

/// Sleuth's threat name from Sublime's attack types, else from the rule names.
fn threat_kind(attack_types: &[String], rule_names: &[String]) -> Option<String> {
    let any = |texts: &[String], words: &[&str]| {
        texts
            .iter()
            .any(|text| words.iter().any(|word| text.contains(word)))
    };
    let kind = if any(attack_types, &["malware", "ransomware"]) {
        "malware"
    } else if any(attack_types, &["bec", "fraud"]) {
        "bec"
    } else if any(attack_types, &["phishing"]) {
        "phish"
    } else if any(attack_types, &["spam"]) {
        "spam"
    } else if any(
        rule_names,
        &["malware", "smuggling", "macro", "malicious attachment"],
    ) {
        "malware"
    } else if any(rule_names, &["bec", "fraud", "payment", "wire"]) {
        "bec"
    } else if any(rule_names, &["impersonation", "lookalike", "look-alike"]) {
        "impersonation"
    } else if any(rule_names, &["phish", "credential"]) {
        "phish"
    } else {
        return None;
    };
    Some(kind.to_string())
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
        assert_eq!(parsed.schema_key, "sublime_security_alert");
        assert_eq!(
            parsed.title,
            "Attachment: HTML smuggling with embedded payload from untrusted sender"
        );
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Blocked));
        assert_eq!(
            parsed.signals.source_verdict,
            Some(SourceVerdict::Malicious)
        );
        let email = parsed.signals.email.as_ref().unwrap();
        assert_eq!(email.threat_kind.as_deref(), Some("malware"));
        assert_eq!(email.delivered, Some(false));
        assert_eq!(email.sender_ip.as_deref(), Some("203.0.113.151"));
        assert!(has(&parsed, EntityKind::User, "l.brown@example.com"));
        assert!(has(
            &parsed,
            EntityKind::Email,
            "ap-notices@orderdesk-billing.com"
        ));
        assert_eq!(parsed.signals.mitre_techniques, vec!["T1566.001"]);
        assert!(parsed.coalesce_key.is_some());
    }

    #[test]
    fn the_bare_webhook_reads_without_message_fields() {
        let parsed = read(&json!({
            "type": "message.flagged", "created_at": "2026-03-05T10:00:00.5Z",
            "data": {
                "flagged_rules": [
                    {"id": "r1", "name": "Low rule", "severity": "low"},
                    {"id": "r2", "name": "Credential phishing: fake login page", "severity": "medium",
                     "attack_types": ["Credential Phishing"]},
                    {"id": "r3", "name": "Another medium rule", "severity": "medium"}
                ],
                "message": {"id": "m1", "canonical_id": "c1", "mailbox": {"id": "x", "external_id": "y"}},
                "triggered_actions": [{"id": "a1", "name": "SIEM", "type": "webhook"}]
            }
        }));
        assert_eq!(parsed.title, "Credential phishing: fake login page");
        assert_eq!(parsed.severity.as_deref(), Some("medium"));
        assert_eq!(parsed.origin_ticket_id.as_deref(), Some("m1"));
        assert_eq!(
            parsed.coalesce_key.as_deref(),
            Some("sublime_security_alert:c1")
        );
        let email = parsed.signals.email.unwrap();
        assert_eq!(email.threat_kind.as_deref(), Some("phish"));
        assert_eq!(email.delivered, None);
        assert_eq!(parsed.signals.action, Some(ActionTaken::Observed));
    }

    #[test]
    fn triggered_actions_say_whether_the_message_stayed() {
        let cases = [
            ("quarantine_message", ActionTaken::Blocked, Some(false)),
            ("move_to_spam", ActionTaken::Blocked, Some(false)),
            ("warning_banner", ActionTaken::Allowed, Some(true)),
            ("slack", ActionTaken::Observed, None),
        ];
        for (action, taken, delivered) in cases {
            let parsed = read(&json!({"type": "message.flagged", "data": {
                "flagged_rules": [{"name": "R", "severity": "high"}],
                "message": {"id": "m"}, "triggered_actions": [{"type": action}]}}));
            assert_eq!(parsed.signals.action, Some(taken), "{action}");
            assert_eq!(
                parsed.signals.email.unwrap().delivered,
                delivered,
                "{action}"
            );
        }
    }

    #[test]
    fn a_user_report_with_flat_message_fields_reads() {
        let parsed = read(&json!({
            "type": "message.user_reported", "created_at": "2026-03-05T10:00:00Z",
            "data": {"message": {
                "id": "m2", "canonical_id": "c2", "subject": "Your parcel is waiting",
                "sender": {"email": "notify@parcel-track.example.net", "display_name": "Parcel"},
                "recipients": [{"email": "m.garcia@example.com"}],
                "mailbox": {"id": "mb", "email": "m.garcia@example.com"}
            }}
        }));
        assert_eq!(
            parsed.title,
            "Message reported by a user: Your parcel is waiting"
        );
        assert_eq!(parsed.alert_type, "sublime:message.user_reported");
        let email = parsed.signals.email.unwrap();
        assert_eq!(email.delivered, Some(true));
        assert_eq!(email.recipients, vec!["m.garcia@example.com"]);
        assert_eq!(
            email.sender.as_deref(),
            Some("notify@parcel-track.example.net")
        );
    }

    #[test]
    fn other_payloads_with_a_type_are_not_sublime_events() {
        for raw in [
            json!({"type": "message.flagged"}),
            json!({"type": "alert", "data": {"flagged_rules": []}}),
            json!({"type": "message.flagged", "data": {"message": "x"}}),
        ] {
            assert!(!detect(&raw), "{raw}");
        }
    }

    #[test]
    fn hostile_input_does_not_panic() {
        let huge = "Ω".repeat(100_000);
        for raw in [
            json!({"type": "message.flagged", "created_at": huge, "data": {
                "flagged_rules": [1, {"name": huge, "severity": ["high"], "tags": {"a": 1},
                    "attack_types": [null, huge]}, "x"],
                "message": {"id": {"a": 1}, "canonical_id": [], "mailbox": {"email": "ΩΩΩΩΩΩΩΩΩ@example.com"},
                    "sender": {"email": {"email": "ΩΩΩΩΩΩΩΩΩ@evil.example.com"}, "display_name": huge},
                    "recipients": {"to": [{"email": {"email": 5}}, "x"]}, "subject": {"subject": huge},
                    "body": {"links": [{"href_url": {"url": format!("https://ΩΩΩΩΩΩΩ.example.com/{huge}")}}]},
                    "attachments": [{"file_name": huge, "sha256": huge}],
                    "headers": {"ips": [{"ip": huge}, 3], "return_path": {"email": "ΩΩΩΩΩΩΩΩΩ@x.example.com"}},
                    "landed_in_spam": "maybe"},
                "triggered_actions": [{"type": huge}, null]}}),
            json!({"type": "message.flagged", "data": {"message": {}}}),
        ] {
            let _ = parse_alert(Some("sublime_security_alert"), &raw, chrono::Utc::now());
        }
    }
}
