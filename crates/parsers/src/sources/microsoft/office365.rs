//! Microsoft Defender for Office 365, as the Office 365 Management Activity API (and
//! the unified audit log it feeds) records it. Three record types are read:
//!
//! - **SecurityComplianceAlerts** (`RecordType` 40, `Workload` `SecurityComplianceCenter`,
//!   `Operation` `AlertTriggered` or `AlertEntityGenerated`): the alert itself, with
//!   `Name`, `Category`, `Severity`, `Status`, `AlertId`, `AlertType`, `PolicyId`,
//!   `AlertLinks`, `ObjectId`/`AlertEntityId`, `EntityType`, `Comments`, and `Data`, a
//!   string of JSON with short keys. Read from `Data`: `f3u` (the user), `trc` (the
//!   recipient), `tsd` (the sender), `sip` (the sender's address), `ms` (the subject),
//!   `zu` (URLs, `;`-separated), `zfn` (file names, `;`-separated), `ttr` (the result of
//!   zero-hour auto purge), `ot` (what Safe Links did with a click), `od`/`ad` (the
//!   description), `ts`/`te` (the activity window), `tdc` (the count), `an`, `sev`,
//!   `suid`, `imsgid`, `tid`. Other keys are kept only in the raw alert.
//! - **TIMailData** (`RecordType` 28, `Workload` `ThreatIntelligence`): one message as
//!   Threat Explorer sees it: `NetworkMessageId`, `P1Sender`, `P2Sender`, `Recipients`,
//!   `Subject`, `SenderIp`, `Verdict`, `DeliveryAction`, `LatestDeliveryLocation`,
//!   `DetectionMethod`, `ThreatsAndDetectionTech`, `AttachmentData[]`, `EventDeepLink`.
//! - **TIUrlClickData** (`RecordType` 41): a Safe Links time-of-click record: `UserId`,
//!   `Url`, `UserIp`, `AppName`, `TimeOfClick`, `SourceId`, `UrlClickAction`.
//!
//! The same alert record type also carries Purview alerts (DLP, insider risk, access and
//! data governance) and Cloud App Security ones; they are read alike and labelled with
//! their own product.

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, AttachmentSignal, EmailSignal, EntityKind, ParsedAlert,
    SourceVerdict,
};

use super::common::{
    self, add_user, embedded, field, items, sender_address, squeeze, string_list, text,
};
use super::graph::threat_kind;
use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::entities::hash_kind;
use crate::json::{is_placeholder, scalar_text, str_at, text_at};
use crate::registry::Schema;
use crate::time::{first_time, parse_value, time_at};

pub(crate) static ALERT: Schema = Schema {
    key: "microsoft_defender_office365_alert",
    display_name: "Microsoft Defender for Office 365 alert (Management Activity API)",
    source_label: "Microsoft Defender for Office 365",
    integration: "microsoft_defender_office365",
    sample: include_str!("../../../samples/microsoft_defender_office365_alert.json"),
    detect,
    parse,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Record {
    Alert,
    Mail,
    Click,
}

fn record(raw: &Value) -> Option<Record> {
    let workload = str_at(raw, "Workload").unwrap_or_default();
    let operation = str_at(raw, "Operation").unwrap_or_default();
    let record_type = text_at(raw, "RecordType").unwrap_or_default();
    let alert_record = record_type == "40"
        || (workload.eq_ignore_ascii_case("SecurityComplianceCenter")
            && operation.starts_with("Alert"));
    if alert_record
        && str_at(raw, "AlertId").is_some()
        && (str_at(raw, "Name").is_some() || str_at(raw, "Data").is_some())
    {
        return Some(Record::Alert);
    }
    if !workload.eq_ignore_ascii_case("ThreatIntelligence") {
        return None;
    }
    if operation.starts_with("TIMailData") || record_type == "28" {
        return Some(Record::Mail);
    }
    if operation.eq_ignore_ascii_case("TIUrlClickData") || record_type == "41" {
        return Some(Record::Click);
    }
    None
}

fn detect(raw: &Value) -> bool {
    record(raw).is_some()
}

fn parse(raw: &Value, alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    match record(raw) {
        Some(Record::Mail) => parse_mail(raw, alert),
        Some(Record::Click) => parse_click(raw, alert),
        Some(Record::Alert) => parse_alert_record(raw, alert),
        // Asked for by key: read whatever is there as an alert record.
        None if str_at(raw, "AlertId").is_some() || str_at(raw, "Name").is_some() => {
            parse_alert_record(raw, alert)
        }
        None => Err(ParseError::DoesNotFit {
            schema_key: ALERT.key,
            reason: "a Management Activity API record has Workload and Operation, \
                     and an alert has AlertId or Name"
                .into(),
        }),
    }
}

/// Which product an alert record comes from, and what its alerts are about.
fn product(raw: &Value) -> (&'static str, &'static str, AlertCategory) {
    let source = str_at(raw, "Source").unwrap_or_default().to_lowercase();
    if source.contains("cloud app") {
        return (
            "Microsoft Defender for Cloud Apps",
            "mdca",
            AlertCategory::Application,
        );
    }
    match squeeze(str_at(raw, "Category").unwrap_or("ThreatManagement")).as_str() {
        "threatmanagement" | "mailflow" | "" => (
            "Microsoft Defender for Office 365",
            "mdo",
            AlertCategory::Email,
        ),
        _ => ("Microsoft Purview", "purview", AlertCategory::Application),
    }
}

fn parse_alert_record(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let data = embedded(raw.get("Data"));
    let data = data.as_deref().unwrap_or(&Value::Null);
    let data_text = |keys: &[&str]| text(data, keys);
    let name = str_at(raw, "Name")
        .map(str::to_string)
        .or_else(|| data_text(&["an"]));
    let (label, prefix, category) = product(raw);
    alert
        .title(name.as_deref())
        .alert_type(
            name.as_deref()
                .map(|name| format!("{prefix}:{name}"))
                .as_deref(),
        )
        .create_time(time_at(raw, "CreationTime"))
        .start_time(data.get("ts").and_then(parse_value))
        .severity(str_at(raw, "Severity").or(data_text(&["sev"]).as_deref()))
        .description(data_text(&["ad", "od"]).as_deref())
        .description(str_at(raw, "Comments").filter(|comment| {
            !comment.eq_ignore_ascii_case("New alert")
                && !comment.eq_ignore_ascii_case("Alert Updated")
        }))
        .source_label(Some(label));
    let link = items(raw, &["AlertLinks"])
        .iter()
        .find_map(|link| text(link, &["AlertLinkHref"]))
        .filter(|link| link.starts_with("https://"));
    let alert_id = text_at(raw, "AlertId");
    alert.ticket(alert_id.clone(), "Defender for Office 365 alert id", link);
    alert.coalesce_key(alert_id.map(|id| format!("alert:{id}")));
    alert.tenant(
        text_at(raw, "OrganizationId").or_else(|| data_text(&["tid"])),
        None,
    );
    for tag in ["Category", "AlertType", "EntityType", "Status"] {
        alert.tag(str_at(raw, tag));
    }
    alert.tag(data_text(&["op"]).as_deref());
    alert.tag(data_text(&["wl"]).as_deref());
    alert.signals.category = Some(category);

    // The people the alert is about: the acting user, the submitter, the entity.
    for user in [data_text(&["f3u"]), data_text(&["suid"])] {
        add_user(&mut alert, user.as_deref());
    }
    let object = str_at(raw, "ObjectId").or(str_at(raw, "AlertEntityId"));
    let entity_type = str_at(raw, "EntityType").map(squeeze).unwrap_or_default();
    let object_is_url = object.is_some_and(|object| object.contains("://"));
    if let Some(object) = object.filter(|_| !object_is_url) {
        match entity_type.as_str() {
            "user" | "recipients" => add_user(&mut alert, Some(object)),
            "sender" => {
                alert.entity(EntityKind::Email, Some(object));
            }
            "malwarefamily" => {
                alert.tag(Some(object));
            }
            _ => {}
        }
    }

    let lowered = name.as_deref().unwrap_or_default().to_lowercase();
    let user_report = lowered.contains("reported by user")
        || data_text(&["op"]).is_some_and(|op| op.eq_ignore_ascii_case("UserSubmission"));
    let mut urls = split_list(data_text(&["zu"]).as_deref());
    if let Some(url) = object.filter(|_| object_is_url) {
        urls.insert(0, url.to_string());
    }
    let attachments: Vec<AttachmentSignal> = split_list(data_text(&["zfn"]).as_deref())
        .into_iter()
        .map(|name| AttachmentSignal {
            name: Some(name),
            ..AttachmentSignal::default()
        })
        .collect();
    let clicked = lowered.contains("click");
    let click_permitted = data_text(&["ot"]).and_then(|action| click_permitted(&action));
    let zapped =
        data_text(&["ttr"]).is_some_and(|result| result.to_lowercase().contains("success"));
    let recipients: Vec<String> = split_list(data_text(&["trc"]).as_deref());
    let emailish = category == AlertCategory::Email
        && (!recipients.is_empty()
            || !urls.is_empty()
            || !attachments.is_empty()
            || data_text(&["tsd", "ms", "imsgid"]).is_some()
            || clicked);
    // A report, or a URL Defender only calls "potentially" malicious, names no threat.
    let kind = (!user_report && !lowered.contains("potentially"))
        .then(|| {
            let mut words = vec![lowered.clone()];
            if lowered.contains("malicious url") {
                words.push("phish".into());
            }
            threat_kind(&words)
        })
        .flatten();
    // An alert about an account (a user restricted from sending, a user whose mailbox
    // forwards out) names no message: it is about who holds the account, an identity
    // alert, even when the mail product raised it.
    if category == AlertCategory::Email && !emailish && entity_type == "user" {
        alert.signals.category = Some(AlertCategory::Identity);
    }
    if emailish {
        alert.signals.email = Some(EmailSignal {
            sender: data_text(&["tsd"]).map(|sender| sender_address(&sender)),
            envelope_sender: None,
            sender_ip: data_text(&["sip"]),
            recipients,
            subject: data_text(&["ms"]),
            urls,
            attachments,
            threat_kind: kind.clone(),
            delivered: (lowered.contains("after delivery") || clicked).then_some(true),
            clicked: clicked.then_some(true),
            click_permitted,
            // Not carried by this shape.
            sender_display_name: None,
            reply_to: None,
        });
    }

    let stopped_by_name = ["removed", "blocked", "quarantined", "restricted", "zapped"]
        .iter()
        .any(|word| lowered.contains(word));
    alert.signals.action = Some(if zapped || click_permitted == Some(false) {
        ActionTaken::Blocked
    } else if click_permitted == Some(true) {
        ActionTaken::Allowed
    } else if stopped_by_name {
        ActionTaken::Blocked
    } else {
        ActionTaken::Observed
    });
    // Defender names the message malicious only when it decided so, not for a report
    // or a "potentially malicious" click.
    let decided = !user_report
        && !lowered.contains("potentially")
        && ["malicious", "malware", "phish"]
            .iter()
            .any(|word| lowered.contains(word));
    if decided {
        alert.signals.source_verdict = Some(SourceVerdict::Malicious);
    }
    if category == AlertCategory::Email && (kind.is_some() || clicked) {
        alert.technique(Some(if clicked { "T1566.002" } else { "T1566" }));
        if clicked {
            alert.technique(Some("T1204.001"));
        }
    }
    alert.tactic(str_at(raw, "Category"));
    Ok(alert.finish())
}

/// A `;`-separated list as Defender writes URLs and file names in `Data`.
fn split_list(text: Option<&str>) -> Vec<String> {
    text.unwrap_or_default()
        .split(';')
        .map(str::trim)
        .filter(|part| !is_placeholder(part))
        .take(common::MAX_ITEMS)
        .map(str::to_string)
        .collect()
}

/// Whether Safe Links let a click through, from the action it recorded.
fn click_permitted(action: &str) -> Option<bool> {
    match squeeze(action).as_str() {
        "allowed"
        | "blockpageoverride"
        | "pendingdetonationpageoverride"
        | "clickedthrough"
        | "clickthrough"
        | "clickedeventhoughblocked"
        | "clickedthroughblock" => Some(true),
        "blockpage" | "blocked" | "pendingdetonationpage" | "block" | "2" => Some(false),
        _ => None,
    }
}

fn parse_mail(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let verdict = str_at(raw, "Verdict");
    let delivery = str_at(raw, "DeliveryAction");
    let title = format!(
        "{} email {}",
        verdict.unwrap_or("Suspicious"),
        delivery.unwrap_or("detected").to_lowercase()
    );
    alert
        .title(Some(&title))
        .alert_type(Some(&format!(
            "mdo:TIMailData:{}",
            verdict.unwrap_or("unknown")
        )))
        .create_time(time_at(raw, "CreationTime"))
        .start_time(time_at(raw, "MessageTime"));
    let message_id = text_at(raw, "NetworkMessageId");
    alert.ticket(
        message_id.clone(),
        "Exchange network message id",
        str_at(raw, "EventDeepLink").map(str::to_string),
    );
    alert.coalesce_key(message_id.map(|id| format!("message:{id}")));
    alert.tenant(text_at(raw, "OrganizationId"), None);
    let detections = string_list(raw.get("ThreatsAndDetectionTech"));
    let summary = detections.join("; ");
    alert.description(Some(summary.as_str()).filter(|text| !text.is_empty()));
    for tag in [
        "DetectionMethod",
        "DetectionType",
        "Policy",
        "PolicyAction",
        "PhishConfidenceLevel",
        "Directionality",
    ] {
        alert.tag(str_at(raw, tag));
    }

    let mut attachments = Vec::new();
    for attachment in items(raw, &["AttachmentData"]) {
        let sha256 = text(attachment, &["SHA256", "Sha256"])
            .filter(|hash| hash_kind(hash) == Some(EntityKind::HashSha256));
        alert.tag(text(attachment, &["MalwareFamily"]).as_deref());
        attachments.push(AttachmentSignal {
            name: text(attachment, &["FileName"]),
            sha256,
            md5: None,
        });
    }
    let mut threats: Vec<String> = verdict.map(str::to_string).into_iter().collect();
    threats.extend(detections);
    let kind = threat_kind(&threats);
    let location = str_at(raw, "LatestDeliveryLocation")
        .or(str_at(raw, "OriginalDeliveryLocation"))
        .map(squeeze);
    let delivered = match (location.as_deref(), delivery.map(squeeze).as_deref()) {
        (Some("inbox" | "external" | "forwarded"), _) => Some(true),
        (Some("quarantine" | "junkfolder" | "dropped" | "failed" | "deleteditems"), _) => {
            Some(false)
        }
        (_, Some("delivered")) => Some(true),
        (_, Some("blocked" | "replaced" | "junked" | "deliveredasspam")) => Some(false),
        _ => None,
    };
    let recipients = string_list(raw.get("Recipients"));
    alert.signals.email = Some(EmailSignal {
        sender: str_at(raw, "P2Sender").map(sender_address),
        envelope_sender: str_at(raw, "P1Sender").map(sender_address),
        sender_ip: str_at(raw, "SenderIp").map(str::to_string),
        recipients,
        subject: str_at(raw, "Subject").map(str::to_string),
        urls: Vec::new(),
        attachments,
        threat_kind: kind.clone(),
        delivered,
        clicked: None,
        click_permitted: None,
        // Not carried by this shape.
        sender_display_name: None,
        reply_to: None,
    });
    alert.signals.category = Some(AlertCategory::Email);

    let purged = string_list(raw.get("AdditionalActionsAndResults"))
        .iter()
        .any(|action| action.to_lowercase().contains("zap") && !action.contains("N/A"));
    alert.signals.action = Some(match delivery.map(squeeze).as_deref() {
        _ if purged => ActionTaken::Blocked,
        Some("blocked" | "replaced") => ActionTaken::Blocked,
        Some("delivered") => ActionTaken::Allowed,
        _ => ActionTaken::Observed,
    });
    if matches!(kind.as_deref(), Some("phish" | "malware")) {
        alert.signals.source_verdict = Some(SourceVerdict::Malicious);
        alert.technique(Some("T1566"));
    }
    Ok(alert.finish())
}

fn parse_click(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let action = ["UrlClickAction", "ClickAction"]
        .iter()
        .find_map(|key| field(raw, key).and_then(scalar_text));
    let permitted = action.as_deref().and_then(click_permitted);
    let title = match permitted {
        Some(true) => "Safe Links URL click allowed",
        Some(false) => "Safe Links URL click blocked",
        None => "Safe Links URL click",
    };
    let url = str_at(raw, "Url");
    let user = str_at(raw, "UserId");
    alert
        .title(Some(title))
        .alert_type(Some("mdo:TIUrlClickData"))
        .create_time(time_at(raw, "CreationTime"))
        .start_time(first_time(raw, &["TimeOfClick"]));
    alert.ticket(
        text_at(raw, "Id"),
        "audit record id",
        str_at(raw, "EventDeepLink").map(str::to_string),
    );
    alert.coalesce_key(Some(format!(
        "click:{}:{}",
        user.unwrap_or_default(),
        url.unwrap_or_default()
    )));
    alert.tenant(text_at(raw, "OrganizationId"), None);
    alert.tag(str_at(raw, "AppName"));
    alert.tag(action.as_deref());
    alert.entity(EntityKind::Ip, str_at(raw, "UserIp"));
    add_user(&mut alert, user);
    alert.signals.category = Some(AlertCategory::Email);
    alert.signals.email = Some(EmailSignal {
        recipients: user
            .filter(|user| user.contains('@'))
            .map(str::to_string)
            .into_iter()
            .collect(),
        urls: url.map(str::to_string).into_iter().collect(),
        clicked: Some(true),
        click_permitted: permitted,
        ..EmailSignal::default()
    });
    alert.signals.action = Some(match permitted {
        Some(true) => ActionTaken::Allowed,
        Some(false) => ActionTaken::Blocked,
        None => ActionTaken::Observed,
    });
    alert.technique(Some("T1204.001"));
    Ok(alert.finish())
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

    fn alert_record(name: &str, data: Value) -> Value {
        json!({
            "CreationTime": "2026-03-03T09:15:00", "Id": "0d9a7c5e-1111-4a0b-9c1d-2e3f4a5b6c7d",
            "Operation": "AlertEntityGenerated", "OrganizationId": "0d3c6b1e-7a42-4c55-9b1e-5f2d8c9a1e01",
            "RecordType": 40, "ResultStatus": "Succeeded", "UserKey": "SecurityComplianceAlerts",
            "UserType": 4, "Version": 1, "Workload": "SecurityComplianceCenter",
            "AlertId": "5c1e2d3f-2222-4b5a-8c9d-0e1f2a3b4c5d", "AlertType": "System",
            "Category": "ThreatManagement", "Comments": "New alert", "Name": name, "Severity": "High",
            "Source": "Office 365 Security & Compliance", "Status": "Active",
            "Data": data.to_string()
        })
    }

    #[test]
    fn the_sample_reads_completely() {
        let raw: Value = serde_json::from_str(ALERT.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, ALERT.key);
        assert_eq!(parsed.signals.category, Some(AlertCategory::Email));
        let email = parsed.signals.email.as_ref().expect("an email");
        assert!(!email.recipients.is_empty());
        assert!(!email.urls.is_empty());
        assert!(parsed.start_time.is_some());
    }

    #[test]
    fn a_purge_after_delivery_is_a_delivered_and_stopped_phish() {
        let parsed = read(&alert_record(
            "Email messages containing malicious URL removed after delivery",
            json!({"trc": "r.patel@example.com", "tsd": "it-support@micros0ft-authenticate.com",
                   "zu": "https://micros0ft-authenticate.com/login;https://micros0ft-authenticate.com/x",
                   "ms": "Password expiry", "ttr": "Success", "ts": "2026-03-03T09:02:00Z"}),
        ));
        let email = parsed.signals.email.as_ref().unwrap();
        assert_eq!(email.threat_kind.as_deref(), Some("phish"));
        assert_eq!(email.delivered, Some(true));
        assert_eq!(email.urls.len(), 2);
        assert_eq!(parsed.signals.action, Some(ActionTaken::Blocked));
        assert_eq!(
            parsed.signals.source_verdict,
            Some(SourceVerdict::Malicious)
        );
        assert_eq!(parsed.signals.mitre_tactics, vec!["Initial Access"]);
        assert!(has(
            &parsed,
            EntityKind::Domain,
            "micros0ft-authenticate.com"
        ));
        assert!(has(&parsed, EntityKind::Email, "r.patel@example.com"));
    }

    #[test]
    fn a_click_through_a_block_page_was_permitted() {
        let mut raw = alert_record(
            "A potentially malicious URL click was detected",
            json!({"trc": "l.brown@example.com", "ot": "BlockPageOverride", "od": "Safe Links click"}),
        );
        raw["ObjectId"] = json!("https://login-verify.example.net/a");
        let parsed = read(&raw);
        let email = parsed.signals.email.as_ref().unwrap();
        assert_eq!(email.clicked, Some(true));
        assert_eq!(email.click_permitted, Some(true));
        assert_eq!(email.urls, vec!["https://login-verify.example.net/a"]);
        assert_eq!(parsed.signals.action, Some(ActionTaken::Allowed));
        assert_eq!(parsed.signals.source_verdict, None);
    }

    #[test]
    fn a_user_report_names_no_threat() {
        let parsed = read(&alert_record(
            "Email reported by user as malware or phish",
            json!({"op": "UserSubmission", "suid": "m.garcia@example.com", "tsd": "awareness@phishsim-training.com", "trc": "m.garcia@example.com"}),
        ));
        let email = parsed.signals.email.as_ref().unwrap();
        assert_eq!(email.threat_kind, None);
        assert_eq!(
            email.sender.as_deref(),
            Some("awareness@phishsim-training.com")
        );
        assert_eq!(parsed.signals.source_verdict, None);
        assert!(has(&parsed, EntityKind::User, "m.garcia@example.com"));
    }

    #[test]
    fn purview_alerts_are_labelled_as_purview() {
        let mut raw = alert_record("DLP policy match", json!({"f3u": "l.brown@example.com"}));
        raw["Category"] = json!("DataLossPrevention");
        let parsed = read(&raw);
        assert_eq!(parsed.direct_source_label, "Microsoft Purview");
        assert_eq!(parsed.signals.category, Some(AlertCategory::Application));
        assert!(parsed.signals.email.is_none());
    }

    #[test]
    fn explorer_mail_and_click_records_read() {
        let mail = read(&json!({
            "CreationTime": "2026-03-03T10:00:00", "Id": "a", "Operation": "TIMailData", "RecordType": 28,
            "Workload": "ThreatIntelligence", "NetworkMessageId": "7f3e", "P1Sender": "prvs=12ab=x@bad.example",
            "P2Sender": "x@bad.example", "Recipients": ["l.brown@example.com"], "Verdict": "Malware",
            "DeliveryAction": "Blocked", "LatestDeliveryLocation": "Quarantine", "Subject": "Invoice",
            "AttachmentData": [{"FileName": "inv.iso", "SHA256": "EF".repeat(32), "MalwareFamily": "Trojan:Win32/Qakbot"}]
        }));
        assert_eq!(mail.title, "Malware email blocked");
        let email = mail.signals.email.as_ref().unwrap();
        assert_eq!(email.envelope_sender.as_deref(), Some("x@bad.example"));
        assert_eq!(email.delivered, Some(false));
        assert_eq!(mail.signals.action, Some(ActionTaken::Blocked));
        assert!(has(&mail, EntityKind::HashSha256, &"ef".repeat(32)));

        let click = read(&json!({
            "CreationTime": "2026-03-03T10:00:00", "Id": "b", "Operation": "TIUrlClickData", "RecordType": 41,
            "Workload": "ThreatIntelligence", "UserId": "l.brown@example.com", "Url": "https://bad.example/x",
            "UserIp": "192.0.2.21", "AppName": "Mail", "UrlClickAction": "BlockPage"
        }));
        assert_eq!(click.title, "Safe Links URL click blocked");
        assert_eq!(click.signals.action, Some(ActionTaken::Blocked));
    }

    #[test]
    fn other_audit_records_are_not_claimed() {
        assert!(!detect(
            &json!({"Workload": "Exchange", "Operation": "New-InboxRule", "RecordType": 1})
        ));
        assert!(!detect(
            &json!({"Workload": "SecurityComplianceCenter", "Operation": "AlertTriggered"})
        ));
    }

    #[test]
    fn hostile_input_never_panics() {
        let huge = "\u{10FFFF}".repeat(100_000);
        for raw in [
            json!({"Workload": "SecurityComplianceCenter", "Operation": "AlertTriggered", "AlertId": "x", "Name": "y",
                   "Data": "{\"zu\": 5, \"trc\": [], \"ts\": {}}", "AlertLinks": "x", "ObjectId": 7}),
            json!({"Workload": "SecurityComplianceCenter", "Operation": "AlertTriggered", "AlertId": "x", "Data": huge.clone()}),
            json!({"RecordType": "40", "AlertId": "x", "Name": huge, "Data": "{\"zu\": \";;;;\"}"}),
            json!({"Workload": "ThreatIntelligence", "Operation": "TIMailData", "Recipients": "x", "AttachmentData": [1, {}],
                   "AdditionalActionsAndResults": {}}),
            json!({"Workload": "ThreatIntelligence", "Operation": "TIUrlClickData", "UrlClickAction": [], "Url": 5}),
            json!({"Workload": "ThreatIntelligence", "Operation": "TIUrlClickData", "Url": "ЖЖЖЖЖЖЖЖ", "UserId": "ЖЖЖЖЖЖЖ@ЖЖЖ", "UserIp": "ЖЖЖЖЖЖЖЖ"}),
            json!({"Workload": "ThreatIntelligence", "Operation": "TIMailData", "P1Sender": "ЖЖЖЖЖЖЖЖ", "P2Sender": "ЖЖЖЖЖЖЖЖ",
                   "SenderIp": "ЖЖЖЖЖЖЖЖ", "Recipients": ["ЖЖЖЖЖЖЖЖ"]}),
            json!({"Workload": "SecurityComplianceCenter", "Operation": "AlertTriggered", "AlertId": "x", "Name": "Email click",
                   "ObjectId": "ЖЖЖЖЖЖЖЖ", "EntityType": "Sender",
                   "Data": "{\"trc\": \"ЖЖЖЖЖЖЖЖ\", \"tsd\": \"ЖЖЖЖЖЖЖЖ\", \"sip\": \"ЖЖЖЖЖЖЖЖ\", \"zu\": \"ЖЖЖЖЖЖЖЖ;ЖЖЖЖЖЖЖЖ\"}"}),
        ] {
            let _ = parse_alert(Some(ALERT.key), &raw, chrono::Utc::now());
        }
        assert!(parse_alert(Some(ALERT.key), &json!({"x": 1}), chrono::Utc::now()).is_err());
    }
}
