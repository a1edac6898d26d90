//! Microsoft Sentinel, in two formats:
//!
//! - **SecurityAlert rows** of the Log Analytics workspace (as a query, an export or a
//!   playbook hands them over): `TimeGenerated`, `DisplayName`, `AlertName`,
//!   `AlertSeverity`, `Description`, `ProviderName`, `ProductName`, `VendorName`,
//!   `VendorOriginalId`, `SystemAlertId`, `AlertType`, `AlertLink`, `Status`,
//!   `CompromisedEntity`, `StartTime`, `EndTime`, `Tactics` (comma-separated),
//!   `Techniques` (a JSON string), `Entities` (a JSON string holding an array of typed
//!   entities that point at each other with `$id`/`$ref`) and `ExtendedProperties` (a
//!   JSON string of an object). An alert another product raised and Sentinel forwards
//!   (`ProductName` "Microsoft Defender Advanced Threat Protection" and the like) is
//!   labelled with that product, Sentinel being the proxy.
//! - **Incidents**: the Azure REST resource (`Microsoft.SecurityInsights/Incidents`,
//!   API 2023-02-01 and later: `id`, `name`, `properties` with `title`, `severity`,
//!   `status`, `classification`, `classificationReason`, `incidentNumber`,
//!   `incidentUrl`, `createdTimeUtc`, `firstActivityTimeUtc`, `labels`, `owner`,
//!   `additionalData`, `relatedAnalyticRuleIds`); the same resource wrapped in the body of
//!   an automation rule's Logic App trigger (`object`, `workspaceInfo`,
//!   `objectSchemaType`), whose `properties` add `alerts[]` and `relatedEntities[]`; and
//!   the SecurityIncident row of Log Analytics (PascalCase `IncidentName`, `Title`,
//!   `IncidentNumber`, `CreatedTime`, `AdditionalData`).
//!
//! Every string that holds JSON is parsed defensively: text that is not JSON reads as
//! absent, never as an error.

use std::collections::HashMap;

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, EmailSignal, EntityKind, ParsedAlert, ProcessSignal, SignInSignal,
    Timestamp,
};

use super::common::{
    self, account_name, add_hash, add_machine, add_user, best_ip, classified_verdict, embedded,
    field, file_path, items, sender_address, squeeze, string_list, text,
};
use super::graph::threat_kind;
use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::json::is_placeholder;
use crate::registry::Schema;
use crate::time::parse_value;

pub(crate) static SECURITY_ALERT: Schema = Schema {
    key: "microsoft_sentinel_security_alert",
    display_name: "Microsoft Sentinel SecurityAlert row",
    source_label: "Microsoft Sentinel",
    integration: "microsoft_sentinel",
    sample: include_str!("../../../samples/microsoft_sentinel_security_alert.json"),
    detect: detect_alert,
    parse: parse_alert,
};

pub(crate) static INCIDENT: Schema = Schema {
    key: "microsoft_sentinel_incident",
    display_name: "Microsoft Sentinel incident (REST resource, automation trigger or SecurityIncident row)",
    source_label: "Microsoft Sentinel",
    integration: "microsoft_sentinel",
    sample: include_str!("../../../samples/microsoft_sentinel_incident.json"),
    detect: detect_incident,
    parse: parse_incident,
};

const SENTINEL: &str = "Microsoft Sentinel";

/// How deep nested entities are looked for inside one entity.
const MAX_ENTITY_DEPTH: usize = 4;

/// The product behind an alert or incident, from its product or provider name: the
/// prefix of its alert types and the category its alerts usually are. `None` for
/// Sentinel's own analytics.
fn product(name: &str) -> Option<(&'static str, Option<AlertCategory>)> {
    let lowered = name.trim().to_lowercase();
    let has = |words: &[&str]| words.iter().any(|word| lowered.contains(word));
    // Provider codes are matched whole: "asc" inside another word is not Defender for Cloud.
    let is = |codes: &[&str]| codes.contains(&lowered.as_str());
    Some(if has(&["office 365"]) || is(&["oatp", "mdo"]) {
        ("mdo", Some(AlertCategory::Email))
    } else if has(&["defender advanced threat", "defender for endpoint"]) || is(&["mdatp", "mde"]) {
        ("mde", Some(AlertCategory::Endpoint))
    } else if has(&["azure advanced threat", "defender for identity"])
        || is(&["azure atp", "aatp", "mdi"])
    {
        ("mdi", Some(AlertCategory::Identity))
    } else if has(&["identity protection"]) || is(&["ipc"]) {
        ("entra_id_protection", Some(AlertCategory::Identity))
    } else if has(&["cloud app"]) || is(&["mcas", "mdca"]) {
        ("mdca", Some(AlertCategory::Application))
    } else if has(&["security center", "defender for cloud"]) || is(&["asc", "mdc"]) {
        ("mdc", Some(AlertCategory::Cloud))
    } else if has(&["365 defender", "defender xdr"]) {
        ("m365d", None)
    } else if lowered.is_empty() || has(&["sentinel"]) || lowered.starts_with("asi") {
        return None;
    } else {
        ("sentinel", None)
    })
}

fn time_of(object: &Value, keys: &[&str]) -> Option<Timestamp> {
    keys.iter()
        .find_map(|key| field(object, key).and_then(parse_value))
}

// ---- SecurityAlert ----

fn detect_alert(raw: &Value) -> bool {
    let typed = text(raw, &["Type"]).is_some_and(|kind| kind == "SecurityAlert");
    let shaped = field(raw, "SystemAlertId").is_some()
        && (field(raw, "AlertName").is_some() || field(raw, "DisplayName").is_some())
        && ["ProviderName", "ProductName", "VendorName", "Entities"]
            .iter()
            .any(|key| field(raw, key).is_some());
    (typed || shaped) && field(raw, "properties").is_none()
}

fn parse_alert(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let name = text(raw, &["DisplayName", "AlertName"]);
    let system_id = text(raw, &["SystemAlertId"]);
    if name.is_none() && system_id.is_none() {
        return Err(ParseError::DoesNotFit {
            schema_key: SECURITY_ALERT.key,
            reason: "a SecurityAlert row has DisplayName, AlertName or SystemAlertId".into(),
        });
    }
    let extended = common::key_values(field(raw, "ExtendedProperties"));
    let extended_text = |key: &str| {
        extended
            .get(key)
            .and_then(crate::json::scalar_text)
            .filter(|text| !is_placeholder(text))
    };
    let product_name = text(raw, &["ProductName"]);
    let provider = text(raw, &["ProviderName"]);
    let forwarded = product(product_name.as_deref().unwrap_or_default())
        .or_else(|| product(provider.as_deref().unwrap_or_default()));
    let alert_name = text(raw, &["AlertName"]).or(name.clone());
    let alert_type = match forwarded {
        Some((prefix, _)) => alert_name.as_deref().map(|name| format!("{prefix}:{name}")),
        None => extended_text("Analytic Rule Name")
            .or(alert_name.clone())
            .map(|name| format!("sentinel:{name}")),
    };
    alert
        .title(name.as_deref())
        .alert_type(alert_type.as_deref())
        .create_time(time_of(raw, &["TimeGenerated", "ProcessingEndTime"]))
        .start_time(time_of(raw, &["StartTime", "StartTimeUtc"]))
        .severity(text(raw, &["AlertSeverity", "Severity"]).as_deref())
        .description(text(raw, &["Description"]).as_deref());
    if forwarded.is_some() {
        alert
            .source_label(product_name.as_deref().or(provider.as_deref()))
            .proxy_source_label(SENTINEL);
    }
    alert.ticket(
        system_id.clone(),
        "Sentinel alert id",
        text(raw, &["AlertLink"]),
    );
    let compromised = text(raw, &["CompromisedEntity"]);
    let rule = string_list(extended.get("Analytic Rule Ids"))
        .into_iter()
        .next();
    let coalesce = match (forwarded, text(raw, &["VendorOriginalId"])) {
        (Some(_), Some(original)) => Some(format!("vendor:{original}")),
        _ => rule
            .or(alert_name.clone())
            .map(|story| format!("{story}:{}", compromised.as_deref().unwrap_or_default()))
            .or_else(|| system_id.as_deref().map(|id| format!("alert:{id}"))),
    };
    alert.coalesce_key(coalesce);
    alert.tenant(
        text(raw, &["TenantId"]),
        text(raw, &["WorkspaceResourceGroup"]),
    );

    for tactic in string_list(field(raw, "Tactics")) {
        alert.tactic(Some(&tactic));
    }
    for key in ["Techniques", "SubTechniques"] {
        for technique in string_list(field(raw, key)) {
            alert.technique(Some(&technique));
        }
    }
    alert.tag(provider.as_deref());
    alert.tag(text(raw, &["Status"]).as_deref());
    for key in [
        "MicrosoftDefenderAtp.Category",
        "Category",
        "ThreatName",
        "ThreatFamilyName",
        "DetectionSource",
    ] {
        alert.tag(extended_text(key).as_deref());
    }
    for source in string_list(extended.get("Data Sources")) {
        alert.tag(Some(&source));
    }
    if let Some(score) = field(raw, "ConfidenceScore").and_then(Value::as_f64) {
        let percent = if score <= 1.0 { score * 100.0 } else { score };
        alert.signals.confidence = (0.0..=100.0)
            .contains(&percent)
            .then(|| percent.round() as u8);
    }

    let entities = common::embedded_list(field(raw, "Entities"));
    let facts = read_entities(&mut alert, &entities);
    if let Some(compromised) = compromised.as_deref() {
        if compromised.contains('@') {
            add_user(&mut alert, Some(compromised));
        } else if facts.hosts == 0 && !compromised.contains(' ') {
            add_machine(&mut alert, Some(compromised));
        }
    }
    let category = forwarded
        .and_then(|(_, category)| category)
        .or_else(|| facts.category());
    apply_facts(&mut alert, facts, category, name.as_deref());
    Ok(alert.finish())
}

/// Sets the category, signals and action that entities and the title imply.
fn apply_facts(
    alert: &mut AlertBuilder,
    facts: EntityFacts,
    category: Option<AlertCategory>,
    title: Option<&str>,
) {
    alert.signals.category = category;
    let stopped = facts.stopped || common::title_says_stopped(title);
    if category == Some(AlertCategory::Identity) || facts.application.is_some() {
        alert.signals.sign_in = facts.sign_in();
    }
    let delivered = facts.email.as_ref().and_then(|email| email.delivered);
    alert.signals.email = facts.email;
    alert.signals.process = facts.process;
    alert.signals.action = Some(if stopped {
        ActionTaken::Blocked
    } else if delivered == Some(true) {
        ActionTaken::Allowed
    } else {
        ActionTaken::Observed
    });
}

// ---- Entities ----

/// What a list of Sentinel entities held, beyond the entities themselves.
#[derive(Default)]
struct EntityFacts {
    hosts: usize,
    users: Vec<String>,
    ips: Vec<(String, Option<String>)>,
    files: usize,
    urls: usize,
    cloud_resources: usize,
    application: Option<String>,
    process: Option<ProcessSignal>,
    email: Option<EmailSignal>,
    mailboxes: usize,
    stopped: bool,
}

impl EntityFacts {
    fn category(&self) -> Option<AlertCategory> {
        if self.email.is_some() || self.mailboxes > 0 {
            Some(AlertCategory::Email)
        } else if self.process.is_some() || self.files > 0 {
            Some(AlertCategory::Endpoint)
        } else if self.cloud_resources > 0 {
            Some(AlertCategory::Cloud)
        } else if !self.users.is_empty() && (!self.ips.is_empty() || self.application.is_some()) {
            Some(AlertCategory::Identity)
        } else if !self.ips.is_empty() || self.urls > 0 {
            Some(AlertCategory::Network)
        } else if self.hosts > 0 {
            Some(AlertCategory::Endpoint)
        } else if !self.users.is_empty() {
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

/// One entity as Sentinel writes it: Log Analytics puts the fields beside `Type`, the
/// REST API puts them in `properties` beside `kind`.
fn entity_parts(value: &Value) -> Option<(String, &Value)> {
    if let Some(kind) = text(value, &["kind"])
        && let Some(properties) = field(value, "properties").filter(|value| value.is_object())
    {
        return Some((squeeze(&kind), properties));
    }
    text(value, &["Type"]).map(|kind| (squeeze(&kind), value))
}

/// Every entity object in the list, nested ones included, and the index of `$id`s.
fn flatten(list: &[Value]) -> (Vec<&Value>, HashMap<String, &Value>) {
    fn walk<'a>(
        value: &'a Value,
        depth: usize,
        all: &mut Vec<&'a Value>,
        index: &mut HashMap<String, &'a Value>,
    ) {
        if depth > MAX_ENTITY_DEPTH || all.len() >= common::MAX_ITEMS * 2 {
            return;
        }
        match value {
            Value::Object(map) => {
                if let Some(id) = map.get("$id").and_then(crate::json::scalar_text) {
                    index.entry(id).or_insert(value);
                }
                if entity_parts(value).is_some() {
                    all.push(value);
                }
                for child in map.values() {
                    if child.is_object() || child.is_array() {
                        walk(child, depth + 1, all, index);
                    }
                }
            }
            Value::Array(items) => {
                for item in items.iter().take(common::MAX_ITEMS) {
                    walk(item, depth + 1, all, index);
                }
            }
            _ => {}
        }
    }
    let mut all = Vec::new();
    let mut index = HashMap::new();
    for item in list.iter().take(common::MAX_ITEMS) {
        walk(item, 0, &mut all, &mut index);
    }
    (all, index)
}

/// A field that holds an entity inline or as `{"$ref": "4"}`.
fn linked<'a>(
    object: &'a Value,
    key: &str,
    index: &HashMap<String, &'a Value>,
) -> Option<&'a Value> {
    let value = field(object, key)?;
    match field(value, "$ref").and_then(crate::json::scalar_text) {
        Some(reference) => index.get(&reference).copied(),
        None => value.is_object().then_some(value),
    }
}

fn entity_account(entity: &Value) -> Option<String> {
    let name = text(entity, &["Name", "accountName"]);
    let upn = match (text(entity, &["UPNSuffix", "upnSuffix"]), name.as_deref()) {
        (Some(suffix), Some(name)) if !name.contains('@') => Some(format!("{name}@{suffix}")),
        _ => text(entity, &["UserPrincipalName", "Upn"]),
    };
    account_name(
        name.as_deref(),
        text(entity, &["NTDomain", "ntDomain"]).as_deref(),
        upn.as_deref(),
    )
}

fn read_entities(alert: &mut AlertBuilder, list: &[Value]) -> EntityFacts {
    let (all, index) = flatten(list);
    let mut facts = EntityFacts::default();
    for value in all {
        let Some((kind, entity)) = entity_parts(value) else {
            continue;
        };
        match kind.as_str() {
            "host" => {
                facts.hosts += 1;
                let host = text(entity, &["HostName", "hostName", "NetBiosName"]);
                add_machine(alert, host.as_deref());
                if let (Some(host), Some(domain)) = (host, text(entity, &["DnsDomain"])) {
                    alert.host(Some(&format!("{host}.{domain}")));
                }
            }
            "account" => {
                if let Some(user) = entity_account(entity) {
                    add_user(alert, Some(&user));
                    facts.users.push(user);
                }
            }
            "ip" => {
                if let Some(address) = text(entity, &["Address"]) {
                    alert.entity(EntityKind::Ip, Some(&address));
                    let country = field(entity, "Location")
                        .and_then(|location| text(location, &["CountryCode"]));
                    facts.ips.push((address, country));
                }
            }
            "file" => {
                facts.files += 1;
                alert.entity(
                    EntityKind::FilePath,
                    file_path(
                        text(entity, &["Directory"]).as_deref(),
                        text(entity, &["Name", "fileName"]).as_deref(),
                    )
                    .as_deref(),
                );
            }
            "filehash" => {
                add_hash(alert, text(entity, &["Value", "hashValue"]).as_deref());
            }
            "process" => {
                let process = process_of(entity, &index);
                if facts.process.is_none() {
                    facts.process = Some(process);
                } else {
                    alert.entity(EntityKind::Process, process.name.as_deref());
                    alert.sweep(process.command_line.as_deref());
                }
            }
            "url" => {
                facts.urls += 1;
                alert.entity(EntityKind::Url, text(entity, &["Url"]).as_deref());
            }
            "dns" | "dnsresolution" => {
                alert.entity(EntityKind::Domain, text(entity, &["DomainName"]).as_deref());
            }
            "mailbox" => {
                facts.mailboxes += 1;
                alert.entity(
                    EntityKind::Email,
                    text(entity, &["MailboxPrimaryAddress"]).as_deref(),
                );
                if let Some(upn) = text(entity, &["Upn"]) {
                    add_user(alert, Some(&upn));
                    facts.users.push(upn);
                }
            }
            "mailmessage" | "submissionmail" => {
                let message = message_of(entity);
                if message.delivered == Some(false) {
                    facts.stopped = true;
                }
                facts.email = Some(match facts.email.take() {
                    Some(mut merged) => {
                        merged.recipients.extend(message.recipients);
                        merged.recipients.dedup();
                        merged
                    }
                    None => message,
                });
            }
            "cloudapplication" => {
                let name = text(entity, &["Name", "AppName", "appName"]);
                alert.tag(name.as_deref());
                facts.application = facts.application.or(name);
            }
            "azureresource" => {
                facts.cloud_resources += 1;
                alert.entity(
                    EntityKind::CloudResource,
                    text(entity, &["ResourceId"]).as_deref(),
                );
            }
            "malware" => {
                alert.tag(text(entity, &["Name", "malwareName"]).as_deref());
            }
            _ => {}
        }
    }
    facts
}

fn process_of(entity: &Value, index: &HashMap<String, &Value>) -> ProcessSignal {
    let image = linked(entity, "ImageFile", index);
    let parent = linked(entity, "ParentProcess", index);
    let parent_image = parent.and_then(|parent| linked(parent, "ImageFile", index));
    let account = linked(entity, "Account", index);
    let name = image.and_then(|image| text(image, &["Name"]));
    let hashes: Vec<(String, String)> = image
        .map(|image| items(image, &["FileHashes"]))
        .unwrap_or(&[])
        .iter()
        .filter_map(|hash| {
            let hash = match field(hash, "$ref").and_then(crate::json::scalar_text) {
                Some(reference) => index.get(&reference).copied()?,
                None => hash,
            };
            Some((
                text(hash, &["Algorithm"])?.to_ascii_lowercase(),
                text(hash, &["Value"])?,
            ))
        })
        .collect();
    let hash_of = |algorithm: &str| {
        hashes
            .iter()
            .find(|(kind, _)| kind == algorithm)
            .map(|(_, value)| value.clone())
    };
    ProcessSignal {
        path: file_path(
            image
                .and_then(|image| text(image, &["Directory"]))
                .as_deref(),
            name.as_deref(),
        ),
        name,
        command_line: text(entity, &["CommandLine", "commandLine"]),
        decoded_command: None,
        parent_name: parent_image.and_then(|image| text(image, &["Name"])),
        parent_command_line: parent.and_then(|parent| text(parent, &["CommandLine"])),
        user: account.and_then(entity_account),
        sha256: hash_of("sha256"),
        sha1: hash_of("sha1"),
        md5: hash_of("md5"),
        signer: None,
    }
}

fn message_of(entity: &Value) -> EmailSignal {
    let recipients: Vec<String> = text(entity, &["Recipient", "recipient"])
        .into_iter()
        .collect();
    let location = text(entity, &["DeliveryLocation"]).map(|location| squeeze(&location));
    let action = text(entity, &["DeliveryAction"]).map(|action| squeeze(&action));
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
        sender: text(entity, &["P2Sender", "Sender"]).map(|sender| sender_address(&sender)),
        envelope_sender: text(entity, &["P1Sender"]).map(|sender| sender_address(&sender)),
        sender_ip: text(entity, &["SenderIP", "SenderIp"]),
        recipients,
        subject: text(entity, &["Subject"]),
        urls: string_list(field(entity, "Urls")),
        attachments: Vec::new(),
        threat_kind: threat_kind(&string_list(field(entity, "Threats"))),
        delivered,
        clicked: None,
        click_permitted: None,
        // Not carried by this shape.
        sender_display_name: None,
        reply_to: None,
    }
}

// ---- Incidents ----

/// The incident resource and its `properties`, whichever envelope holds them.
fn incident_parts(raw: &Value) -> Option<(&Value, &Value)> {
    let resource = field(raw, "object")
        .filter(|object| object.is_object())
        .unwrap_or(raw);
    let properties = field(resource, "properties").filter(|value| value.is_object())?;
    let resource_type = text(resource, &["type"]).unwrap_or_default().to_lowercase();
    let id = text(resource, &["id"]).unwrap_or_default().to_lowercase();
    let is_incident = resource_type == "microsoft.securityinsights/incidents"
        || id.contains("/providers/microsoft.securityinsights/incidents/")
        || text(raw, &["objectSchemaType"])
            .is_some_and(|kind| kind.eq_ignore_ascii_case("Incident"));
    (is_incident && field(properties, "title").is_some()).then_some((resource, properties))
}

fn is_incident_row(raw: &Value) -> bool {
    let typed = text(raw, &["Type"]).is_some_and(|kind| kind == "SecurityIncident");
    let shaped = field(raw, "IncidentNumber").is_some()
        && field(raw, "IncidentName").is_some()
        && field(raw, "Title").is_some();
    typed || shaped
}

fn detect_incident(raw: &Value) -> bool {
    incident_parts(raw).is_some() || is_incident_row(raw)
}

fn parse_incident(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let (resource, properties) = match incident_parts(raw) {
        Some(parts) => parts,
        None if is_incident_row(raw) || field(raw, "Title").is_some() => (raw, raw),
        None => {
            return Err(ParseError::DoesNotFit {
                schema_key: INCIDENT.key,
                reason: "a Sentinel incident has properties.title (REST), object.properties.title \
                         (automation trigger) or Title (SecurityIncident row)"
                    .into(),
            });
        }
    };
    let title = text(properties, &["title"]);
    let additional = embedded(field(properties, "additionalData"));
    let additional = additional.as_deref().unwrap_or(&Value::Null);
    let products: Vec<String> = string_list(field(additional, "alertProductNames"));
    let alerts = items(properties, &["alerts"]);
    let alert_products: Vec<String> = alerts
        .iter()
        .filter_map(|alert| {
            field(alert, "properties").and_then(|properties| text(properties, &["productName"]))
        })
        .collect();
    let mut distinct: Vec<&String> = products.iter().chain(&alert_products).collect();
    distinct.sort();
    distinct.dedup();
    let forwarded = match distinct.as_slice() {
        [only] => product(only).map(|found| (only.as_str(), found)),
        _ => None,
    };
    let prefix = forwarded.map_or("sentinel", |(_, (prefix, _))| prefix);
    alert
        .title(title.as_deref())
        .alert_type(
            title
                .as_deref()
                .map(|title| format!("{prefix}:{title}"))
                .as_deref(),
        )
        .create_time(time_of(
            properties,
            &["createdTimeUtc", "CreatedTime", "TimeGenerated"],
        ))
        .start_time(time_of(
            properties,
            &["firstActivityTimeUtc", "FirstActivityTime"],
        ))
        .severity(text(properties, &["severity"]).as_deref())
        .description(text(properties, &["description"]).as_deref());
    if let Some((label, _)) = forwarded {
        alert.source_label(Some(label)).proxy_source_label(SENTINEL);
    }
    let number = text(properties, &["incidentNumber"]);
    let name = text(resource, &["name", "IncidentName"]);
    alert.ticket(
        number.clone().or(name.clone()),
        if number.is_some() {
            "Sentinel incident number"
        } else {
            "Sentinel incident id"
        },
        text(properties, &["incidentUrl"]).or_else(|| text(additional, &["providerIncidentUrl"])),
    );
    alert.coalesce_key(
        name.or_else(|| text(resource, &["id"]))
            .map(|name| format!("incident:{name}")),
    );
    let (tenant, workspace) = tenant_of(raw, resource);
    alert.tenant(tenant, workspace);

    let classification = text(properties, &["classification"]);
    alert.signals.source_verdict = Some(classified_verdict(classification.as_deref(), None));
    for key in ["status", "classification", "classificationReason"] {
        alert.tag(text(properties, &[key]).as_deref());
    }
    for label in items(properties, &["labels"]) {
        alert.tag(
            text(label, &["labelName"])
                .or_else(|| crate::json::scalar_text(label))
                .as_deref(),
        );
    }
    for product in &distinct {
        alert.tag(Some(product));
    }
    alert.description(text(properties, &["classificationComment"]).as_deref());
    for tactic in string_list(field(additional, "tactics")) {
        alert.tactic(Some(&tactic));
    }
    for technique in string_list(field(additional, "techniques")) {
        alert.technique(Some(&technique));
    }
    for incident_alert in alerts {
        let Some(alert_properties) = field(incident_alert, "properties") else {
            continue;
        };
        alert.tag(text(alert_properties, &["alertDisplayName"]).as_deref());
        for tactic in string_list(field(alert_properties, "tactics")) {
            alert.tactic(Some(&tactic));
        }
    }

    // The entities: the incident's related ones and those of each alert it holds (an
    // incident fetched with its alerts often carries them only there).
    let mut entities: Vec<Value> = items(properties, &["relatedEntities"]).to_vec();
    for incident_alert in alerts {
        if let Some(alert_properties) = field(incident_alert, "properties") {
            entities.extend(items(alert_properties, &["entities"]).iter().cloned());
        }
    }
    let facts = read_entities(&mut alert, &entities);
    // The incident's owner: whom to ask, and an account the incident names.
    if let Some(owner) =
        field(properties, "owner").and_then(|owner| text(owner, &["email", "userPrincipalName"]))
    {
        alert.entity(EntityKind::Email, Some(&owner));
        alert.signals.handlers.push(owner.to_lowercase());
    }
    // Incidents without entities still name addresses and accounts in their words.
    alert.sweep(title.as_deref());
    alert.sweep(text(properties, &["description"]).as_deref());
    let category = forwarded
        .and_then(|(_, (_, category))| category)
        .or_else(|| facts.category());
    apply_facts(&mut alert, facts, category, title.as_deref());
    Ok(alert.finish())
}

/// The subscription and workspace an incident lives in: from the trigger's
/// `workspaceInfo`, the resource id's path, or the row's `TenantId`.
fn tenant_of(raw: &Value, resource: &Value) -> (Option<String>, Option<String>) {
    if let Some(info) = field(raw, "workspaceInfo") {
        return (
            text(info, &["SubscriptionId"]),
            text(info, &["WorkspaceName"]),
        );
    }
    let id = text(resource, &["id"]).unwrap_or_default();
    let segments: Vec<&str> = id.split('/').collect();
    let after = |name: &str| {
        segments
            .iter()
            .position(|segment| segment.eq_ignore_ascii_case(name))
            .and_then(|position| segments.get(position + 1))
            .map(|value| (*value).to_string())
    };
    match after("subscriptions") {
        Some(subscription) => (Some(subscription), after("workspaces")),
        None => (text(resource, &["TenantId"]), None),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sleuth_domain::SourceVerdict;

    use super::*;
    use crate::parse_alert as read_with;

    fn read(raw: &Value) -> ParsedAlert {
        read_with(None, raw, chrono::Utc::now()).expect("parses")
    }

    fn has(parsed: &ParsedAlert, kind: EntityKind, value: &str) -> bool {
        parsed
            .entities
            .iter()
            .any(|entity| entity.kind == kind && entity.value == value)
    }

    #[test]
    fn the_samples_read_completely() {
        let raw: Value = serde_json::from_str(SECURITY_ALERT.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, SECURITY_ALERT.key);
        assert_eq!(parsed.proxy_source_label.as_deref(), Some(SENTINEL));
        assert!(parsed.signals.process.is_some());
        assert!(!parsed.signals.mitre_tactics.is_empty());

        let raw: Value = serde_json::from_str(INCIDENT.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, INCIDENT.key);
        assert!(parsed.origin_ticket_id.is_some());
        assert!(parsed.origin_ticket_url.is_some());
    }

    #[test]
    fn entities_held_in_a_string_resolve_their_references() {
        let entities = json!([
            {"$id": "2", "HostName": "wks-0231", "DnsDomain": "corp.example.com", "Type": "host"},
            {"$id": "3", "Name": "r.patel", "NTDomain": "CORP", "UPNSuffix": "example.com", "Type": "account"},
            {"$id": "4", "ProcessId": "4120", "CommandLine": "rundll32.exe C:\\Users\\Public\\a.dll,Start",
             "ImageFile": {"$id": "5", "Name": "rundll32.exe", "Directory": "C:\\Windows\\System32",
                           "FileHashes": [{"$id": "6", "Algorithm": "SHA256", "Value": "AB".repeat(32), "Type": "filehash"}], "Type": "file"},
             "ParentProcess": {"$id": "7", "CommandLine": "winword.exe /n", "ImageFile": {"$id": "8", "Name": "winword.exe", "Type": "file"}, "Type": "process"},
             "Account": {"$ref": "3"}, "Host": {"$ref": "2"}, "Type": "process"},
            {"$id": "9", "Address": "203.0.113.50", "Location": {"CountryCode": "NL"}, "Type": "ip"},
            {"$id": "10", "Url": "https://cdn.update-check.net/jquery.min.js", "Type": "url"}
        ]);
        let parsed = read(&json!({
            "TimeGenerated": "2026-03-04T11:00:00Z", "DisplayName": "Cobalt Strike C2", "AlertName": "Cobalt Strike C2",
            "AlertSeverity": "High", "ProviderName": "MDATP", "ProductName": "Microsoft Defender Advanced Threat Protection",
            "SystemAlertId": "f1e2", "VendorOriginalId": "da638", "Tactics": "CommandAndControl, Execution",
            "Techniques": "[\"T1071\"]", "Entities": entities.to_string(), "Type": "SecurityAlert"
        }));
        assert_eq!(
            parsed.direct_source_label,
            "Microsoft Defender Advanced Threat Protection"
        );
        assert_eq!(parsed.alert_type, "mde:Cobalt Strike C2");
        assert_eq!(parsed.signals.category, Some(AlertCategory::Endpoint));
        let process = parsed.signals.process.as_ref().unwrap();
        assert_eq!(process.name.as_deref(), Some("rundll32.exe"));
        assert_eq!(process.parent_name.as_deref(), Some("winword.exe"));
        assert_eq!(process.user.as_deref(), Some("r.patel@example.com"));
        assert_eq!(process.sha256.as_deref(), Some("AB".repeat(32).as_str()));
        for (kind, value) in [
            (EntityKind::Host, "wks-0231"),
            (EntityKind::Host, "wks-0231.corp.example.com"),
            (EntityKind::User, "r.patel@example.com"),
            (EntityKind::Ip, "203.0.113.50"),
            (EntityKind::Domain, "cdn.update-check.net"),
            (EntityKind::HashSha256, &"ab".repeat(32)),
        ] {
            assert!(
                has(&parsed, kind, value),
                "{kind} {value}: {:?}",
                parsed.entities
            );
        }
        assert_eq!(
            parsed.signals.mitre_tactics,
            vec!["Command and Control", "Execution"]
        );
    }

    #[test]
    fn sentinel_analytics_stay_sentinel_and_may_have_no_entities() {
        let parsed = read(&json!({
            "TimeGenerated": "2026-03-04T11:00:00Z", "DisplayName": "Mass download", "AlertName": "Mass download",
            "AlertSeverity": "Medium", "ProviderName": "ASI Scheduled Alerts", "ProductName": "Azure Sentinel",
            "SystemAlertId": "a1", "Entities": "[]", "ExtendedProperties": "not json", "Tactics": "Exfiltration"
        }));
        assert_eq!(parsed.direct_source_label, "Microsoft Sentinel");
        assert_eq!(parsed.proxy_source_label, None);
        assert_eq!(parsed.alert_type, "sentinel:Mass download");
        assert!(parsed.entities.is_empty());
        assert_eq!(parsed.signals.category, None);
    }

    #[test]
    fn an_incident_reads_from_the_resource_the_trigger_and_the_row() {
        let properties = json!({
            "title": "Atypical travel", "severity": "Medium", "status": "New", "incidentNumber": 4711,
            "incidentUrl": "https://portal.azure.com/#asset/Microsoft_Azure_Security_Insights/Incident/x",
            "createdTimeUtc": "2026-03-04T11:00:00Z", "firstActivityTimeUtc": "2026-03-04T10:40:00Z",
            "additionalData": {"alertsCount": 1, "alertProductNames": ["Azure Active Directory Identity Protection"], "tactics": ["InitialAccess"]},
            "relatedEntities": [
                {"kind": "Account", "properties": {"accountName": "j.smith", "upnSuffix": "example.com", "friendlyName": "j.smith"}},
                {"kind": "Ip", "properties": {"address": "198.51.100.77", "location": {"countryCode": "RU"}}}
            ]
        });
        let resource = json!({
            "id": "/subscriptions/5f1e/resourceGroups/rg-sec/providers/Microsoft.OperationalInsights/workspaces/law-prod/providers/Microsoft.SecurityInsights/Incidents/9d2c",
            "name": "9d2c", "type": "Microsoft.SecurityInsights/Incidents", "properties": properties
        });
        let trigger = json!({"object": resource.clone(), "workspaceInfo": {"SubscriptionId": "5f1e", "WorkspaceName": "law-prod"}, "objectSchemaType": "Incident"});
        for raw in [resource, trigger] {
            let parsed = read(&raw);
            assert_eq!(parsed.schema_key, INCIDENT.key);
            assert_eq!(parsed.origin_ticket_id.as_deref(), Some("4711"));
            assert_eq!(parsed.tenant_id.as_deref(), Some("5f1e"));
            assert_eq!(parsed.tenant_label.as_deref(), Some("law-prod"));
            assert_eq!(
                parsed.direct_source_label,
                "Azure Active Directory Identity Protection"
            );
            assert_eq!(parsed.signals.category, Some(AlertCategory::Identity));
            let sign_in = parsed.signals.sign_in.as_ref().unwrap();
            assert_eq!(sign_in.user.as_deref(), Some("j.smith@example.com"));
            assert_eq!(sign_in.country.as_deref(), Some("RU"));
            assert_eq!(
                parsed.signals.source_verdict,
                Some(SourceVerdict::Suspicious)
            );
        }
        let row = read(&json!({
            "TenantId": "7a1b", "TimeGenerated": "2026-03-04T12:00:00Z", "IncidentName": "9d2c", "Title": "Brute force from 198.51.100.240",
            "Severity": "Low", "Status": "Closed", "Classification": "BenignPositive", "ClassificationReason": "SuspiciousButExpected",
            "IncidentNumber": 4712, "CreatedTime": "2026-03-04T11:00:00Z", "AdditionalData": "{\"tactics\":[\"CredentialAccess\"]}",
            "Type": "SecurityIncident"
        }));
        assert_eq!(row.signals.source_verdict, Some(SourceVerdict::Benign));
        assert!(has(&row, EntityKind::Ip, "198.51.100.240"));
        assert_eq!(row.signals.mitre_tactics, vec!["Credential Access"]);
    }

    #[test]
    fn the_two_formats_do_not_claim_each_other() {
        assert!(!detect_incident(
            &json!({"SystemAlertId": "x", "AlertName": "y", "ProviderName": "z"})
        ));
        assert!(!detect_alert(
            &json!({"IncidentNumber": 1, "IncidentName": "x", "Title": "y"})
        ));
        assert!(!detect_alert(
            &json!({"properties": {"title": "x"}, "type": "Microsoft.SecurityInsights/Incidents"})
        ));
    }

    #[test]
    fn hostile_input_never_panics() {
        let huge = "\u{202E}".repeat(100_000);
        let cyclic = json!([{"$id": "1", "ImageFile": {"$ref": "1"}, "ParentProcess": {"$ref": "1"}, "Account": {"$ref": "1"}, "Type": "process"}]);
        let deep = (0..50).fold(
            json!({"Type": "host", "HostName": "x"}),
            |inner, _| json!({"Type": "process", "ImageFile": inner}),
        );
        for raw in [
            json!({"SystemAlertId": 1, "AlertName": [], "ProviderName": {}, "Entities": huge.clone(), "Tactics": 5, "Techniques": "[[[", "ConfidenceScore": 1e300}),
            json!({"SystemAlertId": "x", "AlertName": "y", "ProviderName": "z", "Entities": cyclic.to_string()}),
            json!({"SystemAlertId": "x", "AlertName": "y", "ProviderName": "z", "Entities": [deep]}),
            json!({"SystemAlertId": "x", "AlertName": huge, "ProductName": "Microsoft Defender Advanced Threat Protection", "Entities": [1, "a", null, {"Type": 3}]}),
            json!({"object": {"properties": {"title": 1, "relatedEntities": "x", "alerts": [1], "additionalData": "[}"}}, "objectSchemaType": "Incident"}),
            json!({"type": "Microsoft.SecurityInsights/Incidents", "id": "/subscriptions", "properties": {"title": "t", "labels": [{}, 1], "relatedEntities": [{"kind": "Process", "properties": {"commandLine": [], "ImageFile": {"$ref": "9"}}}]}}),
            json!({"type": "Microsoft.SecurityInsights/Incidents", "id": "/subscriptions/x", "properties": {"title": "Программа ЖЖЖЖ", "description": "Программа",
                   "relatedEntities": [{"kind": "Ip", "properties": {"address": "ЖЖЖЖЖЖЖЖ"}}, {"kind": "Url", "properties": {"url": "ЖЖЖЖЖЖЖЖ"}},
                                       {"kind": "MailMessage", "properties": {"recipient": "ЖЖЖЖЖЖЖЖ", "p1Sender": "ЖЖЖЖЖЖЖЖ", "urls": ["ЖЖЖЖЖЖЖЖ"]}},
                                       {"kind": "Process", "properties": {"commandLine": "Программа.exe"}}, {"kind": "Process", "properties": {"commandLine": "Программа.exe"}},
                                       {"kind": "DnsResolution", "properties": {"domainName": "пример.рф"}}, {"kind": "Mailbox", "properties": {"mailboxPrimaryAddress": "ЖЖЖЖЖЖЖЖ"}}]}}),
        ] {
            let _ = read_with(Some(SECURITY_ALERT.key), &raw, chrono::Utc::now());
            let _ = read_with(Some(INCIDENT.key), &raw, chrono::Utc::now());
        }
    }
}
