//! Microsoft Graph security alerts (`GET /security/alerts_v2`, v1.0): the one alert
//! resource Defender XDR gives for every product it unifies. `serviceSource` names the
//! product (Defender for Endpoint, Office 365, Identity, Cloud Apps, Cloud, Entra ID
//! Protection, Purview DLP, Sentinel, Defender XDR itself), so it sets the alert's
//! source label and, with the evidence, its category.
//!
//! Evidence is a list of typed records (`@odata.type` `#microsoft.graph.security.*`):
//! `deviceEvidence`, `userEvidence`, `ipEvidence`, `urlEvidence`, `fileEvidence`,
//! `processEvidence`, `mailboxEvidence`, `analyzedMessageEvidence`,
//! `cloudApplicationEvidence`, `azureResourceEvidence` and others, each with `verdict`
//! and `remediationStatus`. The first-generation `/security/alerts` resource (with
//! `vendorInformation`) is a different format and is not read here.

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, EmailSignal, EntityKind, ParsedAlert, ProcessSignal, SignInSignal,
    SourceVerdict,
};

use super::common::{
    self, account_name, add_hash, add_machine, add_user, best_ip, classified_verdict, field,
    file_path, items, sender_address, squeeze, text,
};
use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::json::{has_key, str_at, strings_at, text_at};
use crate::registry::Schema;
use crate::time::time_at;

pub(crate) static ALERT_V2: Schema = Schema {
    key: "microsoft_graph_alert_v2",
    display_name: "Microsoft Graph security alert (alerts_v2)",
    source_label: "Microsoft Defender XDR",
    integration: "microsoft_graph_security",
    sample: include_str!("../../../samples/microsoft_graph_alert_v2.json"),
    detect,
    parse,
};

fn detect(raw: &Value) -> bool {
    let typed = str_at(raw, "@odata.type")
        .is_some_and(|kind| kind.eq_ignore_ascii_case("#microsoft.graph.security.alert"));
    let shaped = has_key(raw, "serviceSource")
        && (has_key(raw, "createdDateTime")
            || has_key(raw, "providerAlertId")
            || has_key(raw, "alertWebUrl"));
    typed || shaped
}

/// What one `serviceSource` is: the product's name, the prefix of its alert types (the
/// same as its own format's, so one detection reads alike whichever way it arrives),
/// and the category its alerts usually are.
fn service(source: Option<&str>) -> (Option<&'static str>, &'static str, Option<AlertCategory>) {
    let Some(source) = source else {
        return (None, "m365d", None);
    };
    match squeeze(source).as_str() {
        "microsoftdefenderforendpoint" => (
            Some("Microsoft Defender for Endpoint"),
            "mde",
            Some(AlertCategory::Endpoint),
        ),
        "microsoftdefenderforoffice365" => (
            Some("Microsoft Defender for Office 365"),
            "mdo",
            Some(AlertCategory::Email),
        ),
        "microsoftdefenderforidentity" => (
            Some("Microsoft Defender for Identity"),
            "mdi",
            Some(AlertCategory::Identity),
        ),
        "microsoftdefenderforcloudapps" => (
            Some("Microsoft Defender for Cloud Apps"),
            "mdca",
            Some(AlertCategory::Application),
        ),
        "azureadidentityprotection" => (
            Some("Microsoft Entra ID Protection"),
            "entra_id_protection",
            Some(AlertCategory::Identity),
        ),
        "microsoftdefenderforcloud" => (
            Some("Microsoft Defender for Cloud"),
            "mdc",
            Some(AlertCategory::Cloud),
        ),
        "datalossprevention" => (
            Some("Microsoft Purview Data Loss Prevention"),
            "purview_dlp",
            Some(AlertCategory::Application),
        ),
        "microsoftappgovernance" => (
            Some("Microsoft app governance"),
            "app_governance",
            Some(AlertCategory::Application),
        ),
        "microsoftsentinel" => (Some("Microsoft Sentinel"), "sentinel", None),
        "microsoft365defender" | "microsoftdefenderxdr" => {
            (Some("Microsoft Defender XDR"), "m365d", None)
        }
        _ => (None, "m365d", None),
    }
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let id = text_at(raw, "id");
    let title = str_at(raw, "title");
    if id.is_none() && title.is_none() {
        return Err(ParseError::DoesNotFit {
            schema_key: ALERT_V2.key,
            reason: "a Graph security alert has an id or a title".into(),
        });
    }
    let (product, prefix, category) = service(str_at(raw, "serviceSource"));
    alert
        .title(title)
        .title(str_at(raw, "threatDisplayName"))
        .alert_type(title.map(|title| format!("{prefix}:{title}")).as_deref())
        .create_time(time_at(raw, "createdDateTime"))
        .start_time(time_at(raw, "firstActivityDateTime"))
        .severity(str_at(raw, "severity").filter(|word| !word.eq_ignore_ascii_case("unknown")))
        .description(str_at(raw, "description"))
        .source_label(product);
    alert.ticket(
        id.clone(),
        "Defender XDR alert id",
        str_at(raw, "alertWebUrl").map(str::to_string),
    );
    let incident = text_at(raw, "incidentId");
    alert.coalesce_key(
        incident
            .map(|incident| format!("incident:{incident}"))
            .or_else(|| id.as_deref().map(|id| format!("alert:{id}"))),
    );
    alert.tenant(text_at(raw, "tenantId"), None);

    alert
        .tactic(str_at(raw, "category"))
        .tactic(common::category_tactic(str_at(raw, "category")));
    for technique in strings_at(raw, "mitreTechniques") {
        alert.technique(Some(technique));
    }
    for tag in [
        "category",
        "threatFamilyName",
        "threatDisplayName",
        "actorDisplayName",
        "detectionSource",
        "determination",
    ] {
        alert.tag(str_at(raw, tag));
    }
    for tag in strings_at(raw, "systemTags") {
        alert.tag(Some(tag));
    }

    let found = read_evidence(&mut alert, items(raw, &["evidence"]));
    let category = category.or_else(|| found.category());
    alert.signals.category = category;

    let classification = str_at(raw, "classification");
    let determination = str_at(raw, "determination");
    let mut verdict = classified_verdict(classification, determination);
    let threat_named = common::names_malware(str_at(raw, "threatDisplayName"))
        || common::names_malware(str_at(raw, "threatFamilyName"));
    if verdict == SourceVerdict::Suspicious && (found.malicious_verdict || threat_named) {
        verdict = SourceVerdict::Malicious;
    }
    alert.signals.source_verdict = Some(verdict);

    let lowered_title = title.unwrap_or_default().to_lowercase();
    if let Some(mut email) = found.email.clone() {
        if lowered_title.contains("click") {
            email.clicked = Some(true);
        }
        alert.signals.email = Some(email);
    } else if category == Some(AlertCategory::Email) && lowered_title.contains("click") {
        alert.signals.email = Some(EmailSignal {
            urls: found.urls.clone(),
            recipients: found.mailboxes.clone(),
            clicked: Some(true),
            ..EmailSignal::default()
        });
    }
    if category == Some(AlertCategory::Identity) || found.application.is_some() {
        alert.signals.sign_in = found.sign_in();
    }
    if let Some(process) = found.process.clone() {
        alert.signals.process = Some(process);
    }
    alert.signals.action = Some(if found.stopped || common::title_says_stopped(title) {
        ActionTaken::Blocked
    } else if alert
        .signals
        .email
        .as_ref()
        .is_some_and(|email| email.delivered == Some(true))
    {
        ActionTaken::Allowed
    } else {
        ActionTaken::Observed
    });
    Ok(alert.finish())
}

/// What the evidence list held, gathered before the signals are decided.
#[derive(Default)]
struct Evidence {
    stopped: bool,
    malicious_verdict: bool,
    devices: usize,
    users: Vec<String>,
    ips: Vec<(String, Option<String>)>,
    urls: Vec<String>,
    mailboxes: Vec<String>,
    application: Option<String>,
    cloud_resources: usize,
    process: Option<ProcessSignal>,
    files: usize,
    email: Option<EmailSignal>,
}

impl Evidence {
    /// The category the evidence implies when the service does not say.
    fn category(&self) -> Option<AlertCategory> {
        if self.email.is_some() || !self.mailboxes.is_empty() {
            Some(AlertCategory::Email)
        } else if self.process.is_some() || self.files > 0 || self.devices > 0 {
            Some(AlertCategory::Endpoint)
        } else if self.cloud_resources > 0 {
            Some(AlertCategory::Cloud)
        } else if !self.users.is_empty() || !self.ips.is_empty() {
            Some(AlertCategory::Identity)
        } else {
            None
        }
    }

    fn sign_in(&self) -> Option<SignInSignal> {
        let source_ip = best_ip(self.ips.iter().map(|(ip, _)| ip.as_str()));
        let country = source_ip.as_ref().and_then(|chosen| {
            self.ips
                .iter()
                .find(|(ip, _)| ip == chosen)
                .and_then(|(_, country)| country.clone())
        });
        let user = self.users.first().cloned();
        (user.is_some() || source_ip.is_some()).then(|| SignInSignal {
            user,
            source_ip,
            country,
            application: self.application.clone(),
            ..SignInSignal::default()
        })
    }
}

/// The kind of an evidence record: `#microsoft.graph.security.ipEvidence` -> "ipevidence".
fn evidence_kind(record: &Value) -> String {
    let kind = text(record, &["@odata.type"]).unwrap_or_default();
    squeeze(kind.rsplit('.').next().unwrap_or_default())
}

fn read_evidence(alert: &mut AlertBuilder, evidence: &[Value]) -> Evidence {
    let mut found = Evidence::default();
    for record in evidence {
        if let Some(status) = text(record, &["remediationStatus"]).map(|status| squeeze(&status))
            && matches!(status.as_str(), "remediated" | "prevented" | "blocked")
        {
            found.stopped = true;
        }
        if let Some(status) = text(record, &["detectionStatus"]).map(|status| squeeze(&status))
            && matches!(status.as_str(), "prevented" | "blocked")
        {
            found.stopped = true;
        }
        if text(record, &["verdict"]).is_some_and(|verdict| squeeze(&verdict) == "malicious") {
            found.malicious_verdict = true;
        }
        match evidence_kind(record).as_str() {
            "deviceevidence" => {
                found.devices += 1;
                add_machine(
                    alert,
                    text(record, &["deviceDnsName", "hostName"]).as_deref(),
                );
                for address in common::string_list(field(record, "ipInterfaces")) {
                    alert.entity(EntityKind::Ip, Some(&address));
                }
            }
            "userevidence" => {
                if let Some(user) = user_account(field(record, "userAccount")) {
                    add_user(alert, Some(&user));
                    found.users.push(user);
                }
            }
            "ipevidence" => {
                if let Some(address) = text(record, &["ipAddress"]) {
                    alert.entity(EntityKind::Ip, Some(&address));
                    found
                        .ips
                        .push((address, text(record, &["countryLetterCode"])));
                }
            }
            "urlevidence" => {
                if let Some(url) = text(record, &["url"]) {
                    alert.entity(EntityKind::Url, Some(&url));
                    found.urls.push(url);
                }
            }
            "fileevidence" | "filehashevidence" => {
                found.files += 1;
                read_file(alert, field(record, "fileDetails").unwrap_or(record));
            }
            "processevidence" => {
                let process = process_of(record);
                if found.process.is_none() {
                    found.process = Some(process);
                } else {
                    alert.entity(EntityKind::Process, process.name.as_deref());
                    alert.sweep(process.command_line.as_deref());
                }
            }
            "mailboxevidence" => {
                if let Some(address) = text(record, &["primaryAddress", "upn"]) {
                    alert.entity(EntityKind::Email, Some(&address));
                    found.mailboxes.push(address);
                }
                if let Some(user) = user_account(field(record, "userAccount")) {
                    add_user(alert, Some(&user));
                    found.users.push(user);
                }
            }
            "analyzedmessageevidence" => {
                let message = message_of(record);
                found.email = Some(merge_messages(found.email.take(), message));
            }
            "cloudapplicationevidence" | "oauthapplicationevidence" => {
                let name = text(record, &["displayName", "appName"]);
                alert.tag(name.as_deref());
                found.application = found.application.or(name);
            }
            // Defender for Containers: the cluster, and a namespace with its cluster, by name
            // (what a scanner declared by cluster or namespace is matched against).
            "kubernetesclusterevidence" => {
                kubernetes_tags(alert, None, Some(record));
            }
            "kubernetesnamespaceevidence" => {
                kubernetes_tags(alert, Some(record), field(record, "cluster"));
            }
            "kubernetespodevidence"
            | "kubernetescontrollerevidence"
            | "kubernetesserviceaccountevidence" => {
                let namespace = field(record, "namespace");
                kubernetes_tags(
                    alert,
                    namespace,
                    namespace.and_then(|namespace| field(namespace, "cluster")),
                );
            }
            "azureresourceevidence" | "amazonresourceevidence" | "googlecloudresourceevidence" => {
                found.cloud_resources += 1;
                alert.entity(
                    EntityKind::CloudResource,
                    text(
                        record,
                        &["resourceId", "amazonResourceId", "fullResourceName"],
                    )
                    .as_deref(),
                );
            }
            _ => {}
        }
    }
    found
}

/// A `userAccount` complex value as one account name.
fn user_account(account: Option<&Value>) -> Option<String> {
    let account = account?;
    account_name(
        text(account, &["accountName"]).as_deref(),
        text(account, &["domainName"]).as_deref(),
        text(account, &["userPrincipalName"]).as_deref(),
    )
}

fn read_file(alert: &mut AlertBuilder, details: &Value) {
    add_hash(alert, text(details, &["sha256"]).as_deref());
    add_hash(alert, text(details, &["sha1"]).as_deref());
    add_hash(alert, text(details, &["md5"]).as_deref());
    alert.entity(
        EntityKind::FilePath,
        file_path(
            text(details, &["filePath"]).as_deref(),
            text(details, &["fileName"]).as_deref(),
        )
        .as_deref(),
    );
}

fn process_of(record: &Value) -> ProcessSignal {
    let image = field(record, "imageFile").unwrap_or(&Value::Null);
    let parent = field(record, "parentProcessImageFile").unwrap_or(&Value::Null);
    let name = text(image, &["fileName"]);
    ProcessSignal {
        path: file_path(text(image, &["filePath"]).as_deref(), name.as_deref()),
        name,
        command_line: text(record, &["processCommandLine"]),
        decoded_command: None,
        parent_name: text(parent, &["fileName"]),
        parent_command_line: None,
        user: user_account(field(record, "userAccount")),
        sha256: text(image, &["sha256"]),
        sha1: text(image, &["sha1"]),
        md5: text(image, &["md5"]),
        signer: text(image, &["signer", "filePublisher"]),
    }
}

/// `namespace:` and `cluster:` labels from a `kubernetesNamespaceEvidence` and a
/// `kubernetesClusterEvidence` (each by its `name`).
fn kubernetes_tags(alert: &mut AlertBuilder, namespace: Option<&Value>, cluster: Option<&Value>) {
    for (record, label) in [(namespace, "namespace"), (cluster, "cluster")] {
        if let Some(name) = record.and_then(|record| text(record, &["name"])) {
            alert.tag(Some(&format!("{label}:{name}")));
        }
    }
}

/// An `analyzedMessageEvidence` record as an email signal.
fn message_of(record: &Value) -> EmailSignal {
    let sender = |key: &str| {
        field(record, key)
            .and_then(|party| text(party, &["emailAddress"]))
            .map(|address| sender_address(&address))
    };
    let threats = common::string_list(field(record, "threats"));
    let location = text(record, &["deliveryLocation"]).map(|location| squeeze(&location));
    let action = text(record, &["deliveryAction"]).map(|action| squeeze(&action));
    let delivered = match (location.as_deref(), action.as_deref()) {
        (Some("inbox" | "external" | "forwarded"), _) => Some(true),
        (Some("junkfolder" | "quarantine" | "failed" | "dropped" | "deletedfolder"), _) => {
            Some(false)
        }
        (_, Some("delivered")) => Some(true),
        (_, Some("blocked" | "replaced" | "junked" | "deliveredasspam")) => Some(false),
        _ => None,
    };
    EmailSignal {
        envelope_sender: sender("p1Sender"),
        sender: sender("p2Sender").or_else(|| sender("p1Sender")),
        sender_ip: text(record, &["senderIp"]),
        recipients: text(record, &["recipientEmailAddress"])
            .into_iter()
            .collect(),
        subject: text(record, &["subject"]),
        urls: common::string_list(field(record, "urls")),
        attachments: Vec::new(),
        threat_kind: threat_kind(&threats),
        delivered,
        clicked: None,
        click_permitted: None,
        // Not carried by this shape.
        sender_display_name: None,
        reply_to: None,
    }
}

/// Several analysed messages (one per recipient) are one message to many people.
fn merge_messages(existing: Option<EmailSignal>, next: EmailSignal) -> EmailSignal {
    let Some(mut merged) = existing else {
        return next;
    };
    for recipient in next.recipients {
        if !merged.recipients.contains(&recipient) {
            merged.recipients.push(recipient);
        }
    }
    for url in next.urls {
        if !merged.urls.contains(&url) {
            merged.urls.push(url);
        }
    }
    merged.delivered = match (merged.delivered, next.delivered) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (first, second) => first.or(second),
    };
    merged.sender = merged.sender.or(next.sender);
    merged.threat_kind = merged.threat_kind.or(next.threat_kind);
    merged
}

/// The threat of a message as Sleuth names it, from Defender's detection names.
pub(super) fn threat_kind(threats: &[String]) -> Option<String> {
    let joined = threats.join(" ").to_lowercase();
    [
        ("phish", "phish"),
        ("malware", "malware"),
        ("impersonation", "impersonation"),
        ("spoof", "impersonation"),
        ("bec", "bec"),
        ("spam", "spam"),
    ]
    .iter()
    .find(|(word, _)| joined.contains(word))
    .map(|(_, kind)| (*kind).to_string())
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
        let raw: Value = serde_json::from_str(ALERT_V2.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, ALERT_V2.key);
        assert_eq!(
            parsed.direct_source_label,
            "Microsoft Defender for Office 365"
        );
        assert_eq!(parsed.signals.category, Some(AlertCategory::Email));
        let email = parsed.signals.email.as_ref().expect("an email");
        assert_eq!(email.clicked, Some(true));
        assert!(!email.urls.is_empty());
        assert!(parsed.origin_ticket_url.is_some());
        assert!(parsed.coalesce_key.is_some());
    }

    #[test]
    fn defender_for_containers_evidence_names_the_cluster_and_namespace() {
        let raw = json!({"id": "da1", "title": "Anomalous pod deployment", "severity": "medium",
        "serviceSource": "microsoftDefenderForCloud", "createdDateTime": "2026-03-10T09:00:00Z",
        "evidence": [
            {"@odata.type": "#microsoft.graph.security.kubernetesPodEvidence", "name": "scan-7f9c",
             "namespace": {"name": "sec-scanning", "cluster": {"name": "aks-sec-tools", "platform": "aks"}}},
            {"@odata.type": "#microsoft.graph.security.kubernetesClusterEvidence", "name": "aks-sec-tools"}
        ]});
        let tags = read(&raw).signals.tags;
        for wanted in ["cluster:aks-sec-tools", "namespace:sec-scanning"] {
            assert!(tags.iter().any(|tag| tag == wanted), "{wanted}: {tags:?}");
        }
    }

    #[test]
    fn the_service_names_the_product_and_the_category() {
        let cases = [
            (
                "microsoftDefenderForEndpoint",
                "Microsoft Defender for Endpoint",
                Some(AlertCategory::Endpoint),
            ),
            (
                "microsoftDefenderForIdentity",
                "Microsoft Defender for Identity",
                Some(AlertCategory::Identity),
            ),
            (
                "azureAdIdentityProtection",
                "Microsoft Entra ID Protection",
                Some(AlertCategory::Identity),
            ),
            (
                "microsoftDefenderForCloud",
                "Microsoft Defender for Cloud",
                Some(AlertCategory::Cloud),
            ),
            ("somethingNew", "Microsoft Defender XDR", None),
        ];
        for (source, label, category) in cases {
            let parsed = read(&json!({
                "id": "x1", "title": "t", "serviceSource": source, "createdDateTime": "2026-03-02T10:00:00Z"
            }));
            assert_eq!(parsed.direct_source_label, label, "{source}");
            assert_eq!(parsed.signals.category, category, "{source}");
        }
    }

    #[test]
    fn identity_evidence_fills_the_sign_in() {
        let parsed = read(&json!({
            "id": "x2", "title": "Unfamiliar sign-in properties", "serviceSource": "azureAdIdentityProtection",
            "createdDateTime": "2026-03-02T10:00:00Z", "classification": "falsePositive",
            "evidence": [
                {"@odata.type": "#microsoft.graph.security.userEvidence", "userAccount": {"accountName": "m.garcia", "userPrincipalName": "m.garcia@example.com"}},
                {"@odata.type": "#microsoft.graph.security.ipEvidence", "ipAddress": "10.1.1.1"},
                {"@odata.type": "#microsoft.graph.security.ipEvidence", "ipAddress": "198.51.100.44", "countryLetterCode": "US"}
            ]
        }));
        let sign_in = parsed.signals.sign_in.as_ref().unwrap();
        assert_eq!(sign_in.user.as_deref(), Some("m.garcia@example.com"));
        assert_eq!(sign_in.source_ip.as_deref(), Some("198.51.100.44"));
        assert_eq!(sign_in.country.as_deref(), Some("US"));
        assert_eq!(parsed.signals.source_verdict, Some(SourceVerdict::Benign));
    }

    #[test]
    fn process_and_file_evidence_fill_the_process() {
        let parsed = read(&json!({
            "id": "x3", "title": "Suspicious scheduled task", "serviceSource": "microsoftDefenderForEndpoint",
            "createdDateTime": "2026-03-02T10:00:00Z",
            "evidence": [
                {"@odata.type": "#microsoft.graph.security.processEvidence", "processCommandLine": "schtasks /create /tn x /tr y",
                 "detectionStatus": "detected", "imageFile": {"fileName": "schtasks.exe", "filePath": "C:\\Windows\\System32"},
                 "parentProcessImageFile": {"fileName": "cmd.exe"}, "userAccount": {"accountName": "l.brown", "domainName": "CORP"}},
                {"@odata.type": "#microsoft.graph.security.fileEvidence", "fileDetails": {"sha256": "CD".repeat(32), "fileName": "y.ps1", "filePath": "C:\\Users\\l.brown\\AppData"}},
                {"@odata.type": "#microsoft.graph.security.deviceEvidence", "deviceDnsName": "wks-0277.corp.example.com", "ipInterfaces": ["10.20.31.7"]}
            ]
        }));
        let process = parsed.signals.process.as_ref().unwrap();
        assert_eq!(process.name.as_deref(), Some("schtasks.exe"));
        assert_eq!(process.parent_name.as_deref(), Some("cmd.exe"));
        assert_eq!(process.user.as_deref(), Some("CORP\\l.brown"));
        assert!(has(&parsed, EntityKind::HashSha256, &"cd".repeat(32)));
        assert!(has(&parsed, EntityKind::Host, "wks-0277"));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Observed));
    }

    #[test]
    fn other_formats_are_not_claimed() {
        assert!(!detect(
            &json!({"id": "da1", "title": "x", "alertCreationTime": "y", "machineId": "z"})
        ));
        assert!(!detect(
            &json!({"riskEventType": "unfamiliarFeatures", "riskState": "atRisk"})
        ));
    }

    #[test]
    fn hostile_input_never_panics() {
        let huge = "\u{0627}".repeat(200_000);
        for raw in [
            json!({"serviceSource": 1, "createdDateTime": [], "title": huge, "evidence": {"a": 1}}),
            json!({"serviceSource": "x", "createdDateTime": "y", "id": 3, "evidence": [null, 1, "s", {"@odata.type": 7},
                {"@odata.type": "#microsoft.graph.security.analyzedMessageEvidence", "p1Sender": "x", "urls": "y", "threats": [{}]},
                {"@odata.type": "#microsoft.graph.security.processEvidence", "imageFile": [], "userAccount": "u"},
                {"@odata.type": "#microsoft.graph.security.userEvidence", "userAccount": {"accountName": huge}}]}),
            json!({"@odata.type": "#microsoft.graph.security.alert", "mitreTechniques": "T1059", "systemTags": {}}),
            json!({"id": "x", "title": "A click", "serviceSource": "microsoftDefenderForOffice365", "createdDateTime": "y", "evidence": [
                {"@odata.type": "#microsoft.graph.security.analyzedMessageEvidence", "p1Sender": {"emailAddress": "ЖЖЖЖЖЖЖЖ@пример.рф"},
                 "p2Sender": {"emailAddress": "Дмитрий@пример.рф"}, "urls": ["https://пример.рф/", "ЖЖЖЖЖЖЖЖЖ"],
                 "recipientEmailAddress": "ЖЖЖЖЖЖЖЖ", "senderIp": "ЖЖЖЖЖЖЖЖ"},
                {"@odata.type": "#microsoft.graph.security.urlEvidence", "url": "ЖЖЖЖЖЖЖЖЖ"},
                {"@odata.type": "#microsoft.graph.security.ipEvidence", "ipAddress": "ЖЖЖЖЖЖЖЖЖ"},
                {"@odata.type": "#microsoft.graph.security.mailboxEvidence", "primaryAddress": "ЖЖЖЖЖЖЖЖ"},
                {"@odata.type": "#microsoft.graph.security.deviceEvidence", "ipInterfaces": ["ЖЖЖЖЖЖЖЖ"]},
                {"@odata.type": "#microsoft.graph.security.processEvidence", "processCommandLine": "Программа.exe"},
                {"@odata.type": "#microsoft.graph.security.processEvidence", "processCommandLine": "Программа.exe"}]}),
        ] {
            let _ = parse_alert(Some(ALERT_V2.key), &raw, chrono::Utc::now());
        }
    }
}
