//! Proofpoint Targeted Attack Protection (TAP) events from the SIEM API v2
//! (`/v2/siem/...`, JSON format): message events (`messagesDelivered`, `messagesBlocked`)
//! and click events (`clicksPermitted`, `clicksBlocked`), one format each.
//!
//! An alert is either one event, as a forwarder splits the API's lists into items, or the
//! API's whole response (`{"queryEndTime": ..., "messagesDelivered": [...], ...}`), read by
//! its first event. The envelope is told by `queryEndTime` beside at least one of the four
//! lists. When it holds several, the list that matters most wins: `clicksPermitted` (a user
//! reached a malicious site), then `messagesDelivered`, `clicksBlocked`, `messagesBlocked`;
//! detection uses that order, and each format reads the first non-empty list of its own kind.
//!
//! A lone event does not say which list it came from. The list name is taken from a hint
//! forwarders add (`eventType`, `event_type` or `type`: "messagesDelivered",
//! "messages delivered", "clicks_blocked"...); failing that, a message with a quarantine
//! folder or rule was blocked, and otherwise whether it was delivered is unknown.
//! Message severity is the message's score for the threat's classification (0..=100).

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, AttachmentSignal, EmailSignal, EntityKind, ParsedAlert,
    SeverityLevel, SourceVerdict,
};

use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::entities::normalize_ip;
use crate::json::{array_at, f64_at, first_str, str_at, strings_at, text_at};
use crate::registry::Schema;
use crate::time::first_time;

pub(crate) static MESSAGE: Schema = Schema {
    key: "proofpoint_tap_message",
    display_name: "Proofpoint TAP message event (SIEM API v2)",
    source_label: "Proofpoint TAP",
    integration: "proofpoint_tap",
    sample: include_str!("../../samples/proofpoint_tap_message.json"),
    detect: detect_message,
    parse: parse_message,
};

pub(crate) static CLICK: Schema = Schema {
    key: "proofpoint_tap_click",
    display_name: "Proofpoint TAP click event (SIEM API v2)",
    source_label: "Proofpoint TAP",
    integration: "proofpoint_tap",
    sample: include_str!("../../samples/proofpoint_tap_click.json"),
    detect: detect_click,
    parse: parse_click,
};

/// Which SIEM API list an event belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    MessagesDelivered,
    MessagesBlocked,
    ClicksPermitted,
    ClicksBlocked,
}

impl List {
    /// Most telling first: the order an envelope with several lists is read in.
    const BY_PRIORITY: [List; 4] = [
        List::ClicksPermitted,
        List::MessagesDelivered,
        List::ClicksBlocked,
        List::MessagesBlocked,
    ];

    fn key(self) -> &'static str {
        match self {
            List::MessagesDelivered => "messagesDelivered",
            List::MessagesBlocked => "messagesBlocked",
            List::ClicksPermitted => "clicksPermitted",
            List::ClicksBlocked => "clicksBlocked",
        }
    }

    fn is_click(self) -> bool {
        matches!(self, List::ClicksPermitted | List::ClicksBlocked)
    }

    fn let_through(self) -> bool {
        matches!(self, List::MessagesDelivered | List::ClicksPermitted)
    }

    /// A forwarder's name for the list, however spelled ("messages delivered").
    fn from_hint(text: &str) -> Option<List> {
        let squeezed: String = text
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|character| character.to_ascii_lowercase())
            .collect();
        Some(match squeezed.as_str() {
            "messagesdelivered" | "messagedelivered" => List::MessagesDelivered,
            "messagesblocked" | "messageblocked" => List::MessagesBlocked,
            "clickspermitted" | "clickpermitted" => List::ClicksPermitted,
            "clicksblocked" | "clickblocked" => List::ClicksBlocked,
            _ => return None,
        })
    }
}

/// Whether the alert is the API's response rather than one event.
fn is_envelope(raw: &Value) -> bool {
    raw.get("queryEndTime").is_some()
        && List::BY_PRIORITY
            .iter()
            .any(|list| raw.get(list.key()).is_some_and(Value::is_array))
}

/// The first event of the first non-empty list among `lists`.
fn first_event<'a>(raw: &'a Value, lists: &[List]) -> Option<(&'a Value, List)> {
    lists.iter().find_map(|list| {
        array_at(raw, list.key())
            .iter()
            .find(|event| event.is_object())
            .map(|event| (event, *list))
    })
}

/// The list a lone event names through a forwarder's hint.
fn hinted_list(event: &Value) -> Option<List> {
    ["eventType", "event_type", "type"]
        .iter()
        .find_map(|key| str_at(event, key).and_then(List::from_hint))
}

fn looks_like_message(event: &Value) -> bool {
    str_at(event, "GUID").is_some()
        && (event.get("threatsInfoMap").is_some_and(Value::is_array)
            || event.get("messageParts").is_some_and(Value::is_array))
        && (event.get("messageTime").is_some() || event.get("QID").is_some())
}

fn looks_like_click(event: &Value) -> bool {
    str_at(event, "GUID").is_some()
        && event.get("clickTime").is_some()
        && (event.get("url").is_some()
            || event.get("threatID").is_some()
            || event.get("clickIP").is_some())
}

fn detect_message(raw: &Value) -> bool {
    if is_envelope(raw) {
        return first_event(raw, &List::BY_PRIORITY).is_some_and(|(_, list)| !list.is_click());
    }
    looks_like_message(raw)
}

fn detect_click(raw: &Value) -> bool {
    if is_envelope(raw) {
        return first_event(raw, &List::BY_PRIORITY).is_some_and(|(_, list)| list.is_click());
    }
    looks_like_click(raw)
}

/// The event to read and the list it came from, if known.
fn event_of<'a>(
    raw: &'a Value,
    lists: &[List],
    schema: &'static Schema,
) -> Result<(&'a Value, Option<List>), ParseError> {
    if is_envelope(raw) {
        return first_event(raw, lists)
            .map(|(event, list)| (event, Some(list)))
            .ok_or_else(|| ParseError::DoesNotFit {
                schema_key: schema.key,
                reason: format!(
                    "the SIEM API response holds no event in {}",
                    lists
                        .iter()
                        .map(|list| list.key())
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            });
    }
    Ok((raw, hinted_list(raw).filter(|list| lists.contains(list))))
}

fn parse_message(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let (event, list) = event_of(
        raw,
        &[List::MessagesDelivered, List::MessagesBlocked],
        &MESSAGE,
    )?;
    let guid = text_at(event, "GUID");
    let threats = array_at(event, "threatsInfoMap");
    if guid.is_none() && threats.is_empty() && str_at(event, "messageID").is_none() {
        return Err(ParseError::DoesNotFit {
            schema_key: MESSAGE.key,
            reason: "a TAP message event has a GUID, a messageID or a threatsInfoMap".into(),
        });
    }
    // Quarantine is what blocking a message means in PPS.
    let list = list.or_else(|| {
        (str_at(event, "quarantineFolder").is_some() || str_at(event, "quarantineRule").is_some())
            .then_some(List::MessagesBlocked)
    });
    let headline = headline_threat(threats);
    let classification = headline
        .and_then(|threat| str_at(threat, "classification"))
        .map(str::to_ascii_lowercase);
    let threat_type = headline
        .and_then(|threat| str_at(threat, "threatType"))
        .map(str::to_ascii_lowercase);
    let subject = str_at(event, "subject");

    let what = match (classification.as_deref(), threat_type.as_deref()) {
        (Some(class), Some("url")) => format!("{class} URL"),
        (Some(class), Some("attachment")) => format!("{class} attachment"),
        (Some(class), _) => format!("{class} content"),
        (None, _) => "a threat".to_string(),
    };
    let headline_text = match list {
        Some(List::MessagesDelivered) => format!("Delivered message with {what}"),
        Some(List::MessagesBlocked) => format!("Blocked message with {what}"),
        _ => format!("Message with {what}"),
    };
    let title = match subject {
        Some(subject) => format!("{headline_text}: {subject}"),
        None => headline_text,
    };
    alert
        .title(Some(&title))
        .alert_type(Some(&format!(
            "proofpoint_tap:message:{}:{}",
            classification.as_deref().unwrap_or("unknown"),
            threat_type.as_deref().unwrap_or("unknown")
        )))
        .create_time(first_time(
            event,
            &["messageTime", "threatsInfoMap.0.threatTime"],
        ));

    let score = classification
        .as_deref()
        .and_then(score_key)
        .and_then(|key| f64_at(event, key))
        .or_else(|| {
            ["phishScore", "malwareScore", "impostorScore", "spamScore"]
                .iter()
                .filter_map(|key| f64_at(event, key))
                .reduce(f64::max)
        })
        .map(|score| score.clamp(0.0, 100.0));
    alert.severity_score(score, 100.0);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // Clamped to 0..=100.
    let confidence = score.map(|score| score.round() as u8);
    alert.signals.confidence = confidence;

    alert.ticket(
        guid.clone(),
        "GUID",
        headline.and_then(|threat| str_at(threat, "threatUrl").map(str::to_string)),
    );
    let campaign = headline.and_then(|threat| text_at(threat, "campaignID"));
    let threat_id = headline.and_then(|threat| text_at(threat, "threatID"));
    alert.coalesce_key(campaign.or(threat_id).or(guid));
    alert.tenant(text_at(event, "cluster"), None);

    // The message's parts: real attachments, and the hashes TAP condemned.
    let mut attachments: Vec<AttachmentSignal> = array_at(event, "messageParts")
        .iter()
        .filter(|part| {
            str_at(part, "disposition").is_some_and(|disposition| disposition == "attached")
        })
        .take(50)
        .map(|part| AttachmentSignal {
            name: str_at(part, "filename").map(str::to_string),
            sha256: str_at(part, "sha256").map(str::to_string),
            md5: str_at(part, "md5").map(str::to_string),
        })
        .collect();
    let mut urls = Vec::new();
    for threat in threats.iter().take(50) {
        let Some(indicator) = str_at(threat, "threat") else {
            continue;
        };
        match str_at(threat, "threatType")
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("url") => {
                if let Some(url) = as_url(indicator) {
                    urls.push(url);
                } else {
                    alert.entity(EntityKind::Domain, Some(indicator));
                }
            }
            Some("attachment") => {
                let known = attachments
                    .iter()
                    .any(|part| part.sha256.as_deref() == Some(indicator));
                if !known {
                    attachments.push(AttachmentSignal {
                        sha256: Some(indicator.to_string()),
                        ..AttachmentSignal::default()
                    });
                }
            }
            _ => {}
        }
        alert.tag(str_at(threat, "classification"));
    }

    let header_from = str_at(event, "headerFrom").and_then(address_of);
    let envelope_sender = str_at(event, "sender");
    let sender = header_from.or_else(|| first_str(event, &["fromAddress.0", "sender"]));
    let mut recipients: Vec<String> = Vec::new();
    for key in ["recipient", "toAddresses", "ccAddresses"] {
        for recipient in strings_at(event, key) {
            if recipients.len() < 100
                && !recipients
                    .iter()
                    .any(|known| known.eq_ignore_ascii_case(recipient))
            {
                recipients.push(recipient.to_string());
            }
        }
    }
    alert.signals.category = Some(AlertCategory::Email);
    alert.signals.action = Some(match list {
        Some(List::MessagesDelivered) => ActionTaken::Allowed,
        Some(List::MessagesBlocked) => ActionTaken::Blocked,
        _ => ActionTaken::Observed,
    });
    alert.signals.source_verdict = verdict(headline, classification.as_deref());
    alert.signals.email = Some(EmailSignal {
        envelope_sender: envelope_sender
            .filter(|envelope| sender.is_none_or(|sender| !sender.eq_ignore_ascii_case(envelope)))
            .map(str::to_string),
        sender: sender.map(str::to_string),
        sender_ip: str_at(event, "senderIP").and_then(normalize_ip),
        recipients,
        subject: subject.map(str::to_string),
        urls,
        attachments,
        threat_kind: classification.as_deref().map(threat_kind),
        delivered: list.map(List::let_through),
        clicked: None,
        click_permitted: None,
        sender_display_name: str_at(event, "headerFrom").and_then(display_name_of),
        reply_to: strings_at(event, "replyToAddress")
            .into_iter()
            .next()
            .map(str::to_string),
    });
    // The envelope recipients are the organisation's own mailboxes (TAP filters inbound
    // mail); header To and Cc may name outsiders, so only these are users.
    for recipient in strings_at(event, "recipient").into_iter().take(20) {
        alert.entity(EntityKind::User, Some(recipient));
    }
    for reply_to in strings_at(event, "replyToAddress") {
        alert.entity(EntityKind::Email, Some(reply_to));
    }
    alert.entity(
        EntityKind::Email,
        str_at(event, "headerReplyTo").and_then(address_of),
    );
    alert
        .tag(str_at(event, "quarantineFolder"))
        .tag(str_at(event, "quarantineRule"));
    for route in strings_at(event, "policyRoutes") {
        alert.tag(Some(route));
    }
    alert.technique(Some(match threat_type.as_deref() {
        Some("url") => "T1566.002",
        Some("attachment") => "T1566.001",
        _ => "T1566",
    }));
    Ok(alert.finish())
}

fn parse_click(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let (event, list) = event_of(raw, &[List::ClicksPermitted, List::ClicksBlocked], &CLICK)?;
    let url = str_at(event, "url");
    let guid = text_at(event, "GUID");
    if url.is_none() && guid.is_none() && str_at(event, "threatID").is_none() {
        return Err(ParseError::DoesNotFit {
            schema_key: CLICK.key,
            reason: "a TAP click event has a url, a GUID or a threatID".into(),
        });
    }
    let classification = str_at(event, "classification").map(str::to_ascii_lowercase);
    let what = classification.as_deref().unwrap_or("malicious");
    let title = match list {
        Some(List::ClicksPermitted) => format!("Permitted click on {what} URL"),
        Some(List::ClicksBlocked) => format!("Blocked click on {what} URL"),
        _ => format!("Click on {what} URL"),
    };
    alert
        .title(Some(&title))
        .alert_type(Some(&format!(
            "proofpoint_tap:click:{}",
            classification.as_deref().unwrap_or("unknown")
        )))
        .create_time(first_time(event, &["clickTime", "threatTime"]));
    // Clicks carry no score: the classification is all TAP says of the threat.
    alert.signals.severity_level = classification.as_deref().map(|class| match class {
        "spam" => SeverityLevel::Low,
        _ => SeverityLevel::High,
    });
    alert.ticket(
        text_at(event, "id").or_else(|| guid.clone()),
        "click id",
        str_at(event, "threatURL").map(str::to_string),
    );
    let recipient = str_at(event, "recipient");
    // One user clicking the same threat again is one story.
    alert.coalesce_key(
        text_at(event, "threatID")
            .or(guid)
            .map(|threat| format!("{threat}:{}", recipient.unwrap_or_default())),
    );

    alert.signals.category = Some(AlertCategory::Email);
    alert.signals.action = Some(match list {
        Some(List::ClicksPermitted) => ActionTaken::Allowed,
        Some(List::ClicksBlocked) => ActionTaken::Blocked,
        _ => ActionTaken::Observed,
    });
    alert.signals.source_verdict = verdict(Some(event), classification.as_deref());
    alert.signals.email = Some(EmailSignal {
        sender: str_at(event, "sender").map(str::to_string),
        sender_ip: str_at(event, "senderIP").and_then(normalize_ip),
        recipients: recipient.map(str::to_string).into_iter().collect(),
        urls: url.and_then(as_url).into_iter().collect(),
        threat_kind: classification.as_deref().map(threat_kind),
        // A click means the message reached the mailbox.
        delivered: Some(true),
        clicked: Some(true),
        click_permitted: list.map(List::let_through),
        ..EmailSignal::default()
    });
    // The person who clicked, and where from (their address, or their office's NAT).
    alert.entity(EntityKind::User, recipient);
    alert.entity(
        EntityKind::Ip,
        str_at(event, "clickIP").and_then(normalize_ip).as_deref(),
    );
    alert
        .tag(str_at(event, "classification"))
        .tag(str_at(event, "userAgent"));
    if let Some(campaign) = text_at(event, "campaignId") {
        alert.tag(Some(&format!("campaign {campaign}")));
    }
    alert.technique(Some("T1566.002"));
    Ok(alert.finish())
}

/// The threat an analyst reads first: an active one, else the first.
fn headline_threat(threats: &[Value]) -> Option<&Value> {
    threats
        .iter()
        .find(|threat| {
            str_at(threat, "threatStatus")
                .is_some_and(|status| status.eq_ignore_ascii_case("active"))
        })
        .or_else(|| threats.iter().find(|threat| threat.is_object()))
}

/// The message score that belongs to a classification.
fn score_key(classification: &str) -> Option<&'static str> {
    Some(match classification {
        "phish" => "phishScore",
        "malware" => "malwareScore",
        "impostor" => "impostorScore",
        "spam" => "spamScore",
        _ => return None,
    })
}

/// Sleuth's name for TAP's classification: an impostor message is business email compromise.
fn threat_kind(classification: &str) -> String {
    match classification {
        "impostor" => "bec".to_string(),
        other => other.to_string(),
    }
}

/// TAP's threat status says whether its analysts still stand by the classification.
fn verdict(threat: Option<&Value>, classification: Option<&str>) -> Option<SourceVerdict> {
    let status = threat
        .and_then(|threat| str_at(threat, "threatStatus"))
        .map(str::to_ascii_lowercase);
    match (status.as_deref(), classification) {
        (Some("falsepositive"), _) => Some(SourceVerdict::Benign),
        (Some("active"), Some("malware" | "phish" | "impostor")) => Some(SourceVerdict::Malicious),
        (Some("active"), Some(_)) => Some(SourceVerdict::Suspicious),
        _ => None,
    }
}

/// A threat's URL; TAP writes some without their scheme ("evil.example/login").
fn as_url(text: &str) -> Option<String> {
    if text.contains("://") {
        Some(text.to_string())
    } else if text.contains('.') && !text.contains(char::is_whitespace) && !text.contains('@') {
        Some(format!("http://{text}"))
    } else {
        None
    }
}

/// The address in a header value ("Riya Patel <r.patel@example.com>" or a bare address).
fn address_of(header: &str) -> Option<&str> {
    let inner = match (header.rfind('<'), header.rfind('>')) {
        (Some(open), Some(close)) if open < close => header.get(open + 1..close)?,
        _ => header,
    };
    let inner = inner.trim();
    inner.contains('@').then_some(inner)
}

/// The display name of a header address ("David Okafor <d.okafor@exarnple.com>"), when
/// it has one: impersonation borrows a known name on a foreign address.
fn display_name_of(header: &str) -> Option<String> {
    let (name, _) = header.split_once('<')?;
    let name = name.trim().trim_matches('"').trim();
    (!name.is_empty()).then(|| crate::builder::truncate(name, 200))
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

    fn message(extra: Value) -> Value {
        let mut event = json!({
            "GUID": "G1", "QID": "Q1", "messageTime": "2026-03-04T09:00:00.000Z",
            "sender": "a@evil.example.net", "recipient": ["l.brown@example.com"],
            "phishScore": 88, "malwareScore": 0, "spamScore": 20, "impostorScore": 0,
            "threatsInfoMap": [{"threatID": "T1", "threatStatus": "active",
                "classification": "phish", "threatType": "url",
                "threat": "https://login.evil.example.net/a"}],
            "messageParts": []
        });
        if let (Some(event), Some(extra)) = (event.as_object_mut(), extra.as_object()) {
            event.extend(extra.clone());
        }
        event
    }

    #[test]
    fn the_message_sample_reads_completely() {
        let raw: Value = serde_json::from_str(MESSAGE.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "proofpoint_tap_message");
        assert_eq!(
            parsed.alert_type,
            "proofpoint_tap:message:malware:attachment"
        );
        let email = parsed.signals.email.as_ref().unwrap();
        assert_eq!(email.delivered, Some(false));
        assert_eq!(email.threat_kind.as_deref(), Some("malware"));
        assert_eq!(email.attachments.len(), 1);
        assert_eq!(parsed.signals.action, Some(ActionTaken::Blocked));
        assert_eq!(
            parsed.signals.source_verdict,
            Some(SourceVerdict::Malicious)
        );
        assert_eq!(parsed.signals.mitre_tactics, vec!["Initial Access"]);
        assert!(parsed.origin_ticket_url.is_some());
    }

    #[test]
    fn the_click_sample_reads_completely() {
        let raw: Value = serde_json::from_str(CLICK.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "proofpoint_tap_click");
        assert_eq!(parsed.title, "Permitted click on phish URL");
        let email = parsed.signals.email.as_ref().unwrap();
        assert_eq!(email.click_permitted, Some(true));
        assert_eq!(email.clicked, Some(true));
        assert!(has(
            &parsed,
            EntityKind::Domain,
            "micros0ft-authenticate.com"
        ));
        assert!(has(&parsed, EntityKind::Email, "r.patel@example.com"));
        assert!(has(&parsed, EntityKind::User, "r.patel@example.com"));
    }

    #[test]
    fn the_list_of_a_lone_event_comes_from_a_hint_or_the_quarantine() {
        let cases = [
            (json!({"eventType": "messages delivered"}), Some(true)),
            (json!({"type": "messagesBlocked"}), Some(false)),
            (json!({"quarantineFolder": "Phish"}), Some(false)),
            (json!({}), None),
        ];
        for (extra, delivered) in cases {
            let parsed = read(&message(extra.clone()));
            assert_eq!(
                parsed.signals.email.unwrap().delivered,
                delivered,
                "{extra}"
            );
        }
    }

    #[test]
    fn an_envelope_is_read_by_its_most_telling_list() {
        let click = json!({"GUID": "G2", "clickTime": "2026-03-04T09:05:00.000Z",
            "url": "https://login.evil.example.net/a", "classification": "phish",
            "recipient": "l.brown@example.com", "threatStatus": "active"});
        let both = json!({"queryEndTime": "2026-03-04T10:00:00Z",
            "messagesDelivered": [message(json!({}))], "clicksPermitted": [click],
            "messagesBlocked": [], "clicksBlocked": []});
        assert_eq!(read(&both).schema_key, "proofpoint_tap_click");
        // Asked for as a message, the same envelope gives its message.
        let as_message =
            parse_alert(Some("proofpoint_tap_message"), &both, chrono::Utc::now()).unwrap();
        assert_eq!(as_message.signals.email.unwrap().delivered, Some(true));

        let empty = json!({"queryEndTime": "2026-03-04T10:00:00Z", "messagesBlocked": []});
        assert!(!detect_message(&empty) && !detect_click(&empty));
        assert!(parse_alert(Some("proofpoint_tap_message"), &empty, chrono::Utc::now()).is_err());
    }

    #[test]
    fn threat_status_and_classification_make_the_verdict() {
        let cases = [
            ("active", "phish", Some(SourceVerdict::Malicious)),
            ("active", "spam", Some(SourceVerdict::Suspicious)),
            ("falsePositive", "phish", Some(SourceVerdict::Benign)),
            ("cleared", "malware", None),
        ];
        for (status, class, expected) in cases {
            let raw = message(json!({"threatsInfoMap": [{"threatStatus": status,
                "classification": class, "threatType": "url", "threat": "evil.example.net/x"}]}));
            assert_eq!(
                read(&raw).signals.source_verdict,
                expected,
                "{status} {class}"
            );
        }
    }

    #[test]
    fn header_addresses_are_read_out_of_display_names() {
        assert_eq!(
            address_of("Riya Patel <r.patel@example.com>"),
            Some("r.patel@example.com")
        );
        assert_eq!(address_of("<a@b.example>"), Some("a@b.example"));
        assert_eq!(address_of("nobody"), None);
        assert_eq!(address_of("x > y < z"), None);
    }

    #[test]
    fn other_formats_are_not_taken_for_tap_events() {
        for raw in [
            json!({"GUID": "x"}),
            json!({"queryEndTime": "2026-03-04T10:00:00Z"}),
            json!({"clickTime": "2026-03-04T10:00:00Z", "url": "https://a.example"}),
            json!({"event_type": "alert", "alert": {"signature_id": 1}}),
        ] {
            assert!(!detect_message(&raw) && !detect_click(&raw), "{raw}");
        }
    }

    #[test]
    fn hostile_input_does_not_panic() {
        let huge = "Ω".repeat(100_000);
        let hostile = json!({"GUID": [1], "QID": {"a": huge}, "messageTime": huge,
            "threatsInfoMap": [7, {"threat": huge, "threatType": "url", "classification": 5},
                {"threat": "ΩΩΩΩΩΩΩΩΩ@x.example.com", "threatType": "attachment"}],
            "messageParts": [{"disposition": "attached", "filename": huge, "sha256": "ΩΩ"}],
            "headerFrom": "ΩΩΩΩΩΩΩΩ <ΩΩΩΩΩΩΩΩΩ@evil.example.com>", "recipient": "ΩΩΩΩΩΩΩΩΩ@example.com",
            "toAddresses": [null, 3], "phishScore": "NaN", "malwareScore": 1e308,
            "senderIP": huge, "replyToAddress": ["ΩΩΩΩΩΩΩΩΩ@x.example.com"], "cluster": []});
        let click = json!({"GUID": "g", "clickTime": -1, "url": huge, "clickIP": "ΩΩΩΩΩΩΩΩΩ",
            "recipient": "ΩΩΩΩΩΩΩΩΩ@example.com", "sender": 4, "classification": huge});
        for raw in [
            hostile.clone(),
            click.clone(),
            json!({"queryEndTime": 1, "messagesDelivered": [hostile, "x"], "clicksPermitted": [click]}),
            json!({"queryEndTime": 1, "messagesDelivered": "x"}),
        ] {
            for key in ["proofpoint_tap_message", "proofpoint_tap_click"] {
                let _ = parse_alert(Some(key), &raw, chrono::Utc::now());
            }
        }
    }
}
