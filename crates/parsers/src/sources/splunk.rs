//! Splunk, two wire formats:
//! - the **alert-action webhook** (Splunk Enterprise/Cloud 8+: `sid`, `search_name`, `app`,
//!   `owner`, `results_link`, and `result`, the first row of the triggering search). The
//!   row's fields are whatever the search produced, so they are read by what their names
//!   say (`src_ip`, `user`, `dest`, `signature`, `action`, `count`...), CIM names first;
//! - **Enterprise Security notable events** (ES 6-8), as the `notable` index or the
//!   `` `notable` `` macro returns them: a bare row (REST `results` element or a forwarded
//!   event), or one row wrapped as `{"result": {...}}` by `search/jobs/export`. Their
//!   `security_domain` sets the category, `urgency` the severity, and the analysts'
//!   `disposition` the source's verdict.
//!
//! The key-name reader here ([`read_row`]) is shared with the Google SecOps parser, whose
//! detection fields are free-form too.

use serde_json::{Map, Value};
use sleuth_domain::{
    ActionTaken, AlertCategory, AttachmentSignal, EmailSignal, EntityKind, NetworkSignal,
    ParsedAlert, ProcessSignal, SignInSignal, SourceVerdict,
};

use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::entities::{hash_kind, normalize_ip};
use crate::json::{first_str, has_key, scalar_text, str_at};
use crate::registry::Schema;
use crate::time::{first_time, parse_text, time_at};

pub(crate) static ALERT_WEBHOOK: Schema = Schema {
    key: "splunk_alert_webhook",
    display_name: "Splunk alert webhook",
    source_label: "Splunk",
    integration: "splunk",
    sample: include_str!("../../samples/splunk_alert_webhook.json"),
    detect: detect_webhook,
    parse: parse_webhook,
};

pub(crate) static ES_NOTABLE: Schema = Schema {
    key: "splunk_es_notable",
    display_name: "Splunk Enterprise Security notable event",
    source_label: "Splunk",
    integration: "splunk",
    sample: include_str!("../../samples/splunk_es_notable.json"),
    detect: detect_notable,
    parse: parse_notable,
};

/// The most fields of one row read; a search can return thousands of columns.
const MAX_FIELDS: usize = 500;
/// The most values of one multivalue field read.
const MAX_VALUES: usize = 50;

// ---------------------------------------------------------------------------------------
// The alert webhook

fn detect_webhook(raw: &Value) -> bool {
    str_at(raw, "sid").is_some()
        && str_at(raw, "search_name").is_some()
        && raw.get("result").is_some_and(Value::is_object)
}

fn parse_webhook(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let (Some(search_name), Some(row)) = (
        str_at(raw, "search_name"),
        raw.get("result").and_then(Value::as_object),
    ) else {
        return Err(ParseError::DoesNotFit {
            schema_key: ALERT_WEBHOOK.key,
            reason: "a Splunk alert webhook has search_name and a result object".into(),
        });
    };
    let sid = str_at(raw, "sid");
    let row_value = raw.get("result").unwrap_or(&Value::Null);
    let event_time = first_time(row_value, &["_time", "lastTime", "last_seen"]);
    alert
        .title(Some(search_name))
        .alert_type(Some(&format!("splunk:{search_name}")))
        // The sid of a scheduled search carries when it ran: "..._at_1772366400_1234".
        .create_time(sid.and_then(sid_time))
        .create_time(event_time)
        .start_time(first_time(
            row_value,
            &["firstTime", "first_seen", "earliest", "_time"],
        ))
        .ticket(
            sid.map(str::to_string),
            "search id (sid)",
            str_at(raw, "results_link").map(str::to_string),
        );
    alert.tag(
        str_at(raw, "app")
            .map(|app| format!("app:{app}"))
            .as_deref(),
    );

    let facts = read_row(row);
    alert.severity(facts.severity.as_deref());
    alert.description(first_str(
        row_value,
        &["description", "rule_description", "message"],
    ));
    let category = facts.guess_category();
    facts.apply(&mut alert, category);

    let subject = facts.main_subject();
    alert.coalesce_key(Some(match subject {
        Some(subject) => format!("{search_name}:{subject}"),
        None => search_name.to_string(),
    }));
    Ok(alert.finish())
}

/// The run time of a scheduled search, from its sid ("scheduler__admin__search__RMD5..._at_1772366400_1234").
fn sid_time(sid: &str) -> Option<sleuth_domain::Timestamp> {
    let (_, after) = sid.rsplit_once("_at_")?;
    let seconds = after.split('_').next()?;
    (seconds.len() == 10 && seconds.bytes().all(|byte| byte.is_ascii_digit()))
        .then(|| parse_text(seconds))
        .flatten()
}

// ---------------------------------------------------------------------------------------
// Enterprise Security notable events

fn detect_notable(raw: &Value) -> bool {
    notable_of(raw).is_some()
}

/// The notable row: the alert itself, or the one `search/jobs/export` wraps in `result`.
fn notable_of(raw: &Value) -> Option<&Value> {
    if is_notable(raw) {
        return Some(raw);
    }
    // A webhook also has `result`, but names its search job (`sid`).
    if !has_key(raw, "sid")
        && let Some(row) = raw.get("result").filter(|row| is_notable(row))
    {
        return Some(row);
    }
    None
}

/// A notable has an event id, a correlation search behind it, and ES's triage fields; the
/// id alone is too common a name, so ES's own "@@notable@@" id form or its security
/// domain must be there too.
fn is_notable(value: &Value) -> bool {
    let Some(event_id) = str_at(value, "event_id") else {
        return false;
    };
    let named = ["rule_name", "rule_title", "search_name"]
        .iter()
        .any(|key| str_at(value, key).is_some())
        || str_at(value, "source").is_some_and(|source| source.ends_with(" - Rule"));
    let from_es = event_id.contains("@@notable@@") || str_at(value, "security_domain").is_some();
    named && from_es && (has_key(value, "urgency") || has_key(value, "security_domain"))
}

fn parse_notable(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let Some(row) = notable_of(raw) else {
        return Err(ParseError::DoesNotFit {
            schema_key: ES_NOTABLE.key,
            reason: "an ES notable has event_id, security_domain or urgency, and a rule name"
                .into(),
        });
    };
    // "Access - Brute Force Access Behavior Detected - Rule" names the correlation search.
    let search_name = first_str(row, &["search_name", "source"])
        .map(|name| name.strip_suffix(" - Rule").unwrap_or(name));
    let rule_name = first_str(row, &["rule_name"]).or(search_name);
    alert
        .title(str_at(row, "rule_title"))
        .title(rule_name)
        .alert_type(
            rule_name
                .or_else(|| str_at(row, "rule_id"))
                .map(|name| format!("splunk_es:{name}"))
                .as_deref(),
        )
        .create_time(time_at(row, "_time"))
        .start_time(first_time(row, &["orig_time", "firstTime"]))
        .severity(first_str(row, &["urgency", "severity"]))
        .ticket(
            str_at(row, "event_id").map(str::to_string),
            "notable event_id",
            None,
        )
        .description(first_str(
            row,
            &["rule_description", "savedsearch_description"],
        ));

    let domain = str_at(row, "security_domain").map(str::to_ascii_lowercase);
    let verdict = first_str(row, &["disposition_label", "disposition"]).and_then(disposition);
    alert.signals.source_verdict = verdict;
    for label in [
        domain.as_deref(),
        str_at(row, "status_label"),
        str_at(row, "disposition_label"),
    ] {
        alert.tag(label);
    }
    let Some(fields) = row.as_object() else {
        return Ok(alert.finish());
    };
    // The risk object names what the risk-based rule scored: a user or a system.
    match str_at(row, "risk_object_type")
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("user") => {
            alert.entity(EntityKind::User, str_at(row, "risk_object"));
        }
        Some("system") => {
            alert.host(str_at(row, "risk_object"));
        }
        _ => {}
    }
    let facts = read_row(fields);
    let category = match domain.as_deref() {
        Some("access" | "identity") => Some(AlertCategory::Identity),
        Some("endpoint") => Some(AlertCategory::Endpoint),
        Some("network") => Some(AlertCategory::Network),
        Some("audit") => Some(AlertCategory::Application),
        _ => facts.guess_category(),
    };
    facts.apply(&mut alert, category);
    let subject = first_str(row, &["risk_object"])
        .map(str::to_lowercase)
        .or_else(|| facts.main_subject());
    let story = rule_name.map(|rule| match subject {
        Some(subject) => format!("{rule}:{subject}"),
        None => rule.to_string(),
    });
    alert.coalesce_key(story);
    Ok(alert.finish())
}

/// ES dispositions ("disposition:1" or their labels) as a verdict; undetermined and other
/// say nothing.
fn disposition(text: &str) -> Option<SourceVerdict> {
    let lowered = text.trim().to_ascii_lowercase();
    match lowered.as_str() {
        "disposition:1" => return Some(SourceVerdict::Malicious),
        "disposition:2" | "disposition:3" | "disposition:4" => return Some(SourceVerdict::Benign),
        _ => {}
    }
    if lowered.starts_with("true positive") {
        Some(SourceVerdict::Malicious)
    } else if lowered.starts_with("benign positive")
        || lowered.starts_with("false positive")
        || lowered == "testing"
    {
        Some(SourceVerdict::Benign)
    } else {
        None
    }
}

// ---------------------------------------------------------------------------------------
// Reading free-form rows by their field names

/// What a free-form field's name says its value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldRole {
    /// Where activity came from: an address or a host (CIM `src`).
    Source,
    /// Where it went: an address or a host (CIM `dest`).
    Destination,
    Host,
    User,
    SourceUser,
    DestinationUser,
    Email,
    Sender,
    Recipient,
    Subject,
    Url,
    Domain,
    Hash,
    Process,
    ParentProcess,
    CommandLine,
    FilePath,
    Signature,
    Action,
    Country,
    City,
    UserAgent,
    Application,
    SourcePort,
    DestinationPort,
    FailureCount,
    DistinctUsers,
    MfaDenials,
    Count,
    Tactic,
    Technique,
    Severity,
    FreeText,
}

/// A field name as lower-case words: "src_ip", "srcIp" and "Src-IP" all become
/// ["src", "ip"]; "dc(user)" becomes ["dc", "user"].
fn words(key: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for character in key.chars().take(100) {
        if !character.is_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if character.is_uppercase() && previous_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = character.is_lowercase() || character.is_ascii_digit();
        current.extend(character.to_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// The role of a field by its name; `None` for fields that name nothing worth reading.
pub(crate) fn field_role(key: &str) -> Option<FieldRole> {
    let words = words(key);
    let has = |word: &str| words.iter().any(|found| found == word);
    let has_any = |list: &[&str]| list.iter().any(|word| has(word));
    let last = words.last().map(String::as_str).unwrap_or_default();
    let addressish = has_any(&["ip", "ipaddress", "address", "addr", "host", "hostname"]);
    let counted = has_any(&["count", "dc", "distinct", "unique", "num", "total"]);
    let user_words = ["user", "username", "users", "account", "login", "userid"];
    // "src_user_domain" is the account's AD domain ("CORP"), neither a user nor a DNS name.
    if has("domain") && has_any(&user_words) {
        return None;
    }
    Some(if has_any(&["tactic", "tactics"]) {
        FieldRole::Tactic
    } else if has_any(&["technique", "techniques"]) || (has("mitre") && has("attack")) {
        FieldRole::Technique
    } else if has_any(&["sha256", "sha1", "md5", "hash", "hashes"]) {
        FieldRole::Hash
    } else if has("agent") {
        FieldRole::UserAgent
    } else if has_any(&["country", "countries"]) {
        FieldRole::Country
    } else if has("city") {
        FieldRole::City
    } else if has("port") {
        if has_any(&["dest", "dst", "destination", "target"]) {
            FieldRole::DestinationPort
        } else {
            FieldRole::SourcePort
        }
    } else if (has("mfa") || has("push"))
        && has_any(&[
            "denied",
            "denials",
            "deny",
            "rejected",
            "rejections",
            "reject",
        ])
    {
        FieldRole::MfaDenials
    } else if has_any(&["failure", "failures", "failed", "fail", "failcount"]) && !has("reason") {
        FieldRole::FailureCount
    } else if counted && has_any(&["user", "users", "account", "accounts", "target", "targets"])
        || key == "user_count"
    {
        FieldRole::DistinctUsers
    } else if has_any(&["count", "hits", "attempts"]) {
        FieldRole::Count
    } else if has("sender") || key == "from" || (has("mail") && has("from")) {
        FieldRole::Sender
    } else if has_any(&["recipient", "recipients"]) || key == "to" {
        FieldRole::Recipient
    } else if has("subject") {
        FieldRole::Subject
    } else if has_any(&["url", "uri"]) {
        FieldRole::Url
    } else if has_any(&["command", "cmdline", "cmd"]) {
        FieldRole::CommandLine
    } else if has("parent") && has("process") {
        FieldRole::ParentProcess
    } else if has("process") || last == "image" || last == "exe" {
        FieldRole::Process
    } else if has_any(&["path", "filename"]) || key == "file_name" || key == "file" {
        FieldRole::FilePath
    } else if has_any(&["query", "fqdn"]) || (has("domain") && !has("user") && !has("security")) {
        FieldRole::Domain
    } else if has_any(&["email", "mail", "upn"]) {
        FieldRole::Email
    } else if has_any(&["src", "source", "client", "remote", "principal"])
        && has_any(&["user", "username", "userid"])
    {
        FieldRole::SourceUser
    } else if has_any(&["dest", "dst", "destination", "target"])
        && has_any(&["user", "username", "userid"])
    {
        FieldRole::DestinationUser
    } else if has_any(&user_words) {
        FieldRole::User
    } else if has("src") || (has_any(&["source", "client", "remote", "principal"]) && addressish) {
        FieldRole::Source
    } else if has_any(&["dest", "dst"]) || (has_any(&["destination", "target"]) && addressish) {
        FieldRole::Destination
    } else if key.eq_ignore_ascii_case("ip") || has("ipaddress") || key == "ip_address" {
        FieldRole::Source
    } else if has_any(&[
        "host",
        "hostname",
        "computer",
        "dvc",
        "workstation",
        "machine",
        "device",
    ]) {
        FieldRole::Host
    } else if has("signature") && !has("id") {
        FieldRole::Signature
    } else if matches!(last, "action" | "outcome" | "result") {
        FieldRole::Action
    } else if matches!(last, "app" | "application" | "service") {
        FieldRole::Application
    } else if matches!(last, "severity" | "urgency" | "priority") {
        FieldRole::Severity
    } else if matches!(
        last,
        "description" | "message" | "msg" | "summary" | "reason" | "details"
    ) {
        FieldRole::FreeText
    } else {
        return None;
    })
}

/// What one free-form row says, grouped by role, each value once and in order.
#[derive(Debug, Default)]
pub(crate) struct RowFacts {
    pub(crate) sources: Vec<String>,
    pub(crate) destinations: Vec<String>,
    pub(crate) hosts: Vec<String>,
    pub(crate) users: Vec<String>,
    pub(crate) source_users: Vec<String>,
    pub(crate) destination_users: Vec<String>,
    pub(crate) emails: Vec<String>,
    pub(crate) senders: Vec<String>,
    pub(crate) recipients: Vec<String>,
    pub(crate) subjects: Vec<String>,
    pub(crate) urls: Vec<String>,
    pub(crate) domains: Vec<String>,
    pub(crate) hashes: Vec<String>,
    pub(crate) processes: Vec<String>,
    pub(crate) parent_processes: Vec<String>,
    pub(crate) command_lines: Vec<String>,
    pub(crate) file_paths: Vec<String>,
    pub(crate) signatures: Vec<String>,
    pub(crate) actions: Vec<String>,
    pub(crate) countries: Vec<String>,
    pub(crate) cities: Vec<String>,
    pub(crate) user_agents: Vec<String>,
    pub(crate) applications: Vec<String>,
    pub(crate) source_port: Option<u16>,
    pub(crate) destination_port: Option<u16>,
    pub(crate) failure_count: Option<u32>,
    pub(crate) distinct_users: Option<u32>,
    pub(crate) mfa_denials: Option<u32>,
    pub(crate) count: Option<u32>,
    pub(crate) tactics: Vec<String>,
    pub(crate) techniques: Vec<String>,
    pub(crate) severity: Option<String>,
    pub(crate) free_text: Vec<String>,
}

/// ES's own identifiers of a notable: they name the notable, not the activity (the event
/// hash is an MD5 that must not become a file hash).
const NOTABLE_BOOKKEEPING: &[&str] = &["event_hash", "event_id", "rule_id", "orig_rid", "orig_sid"];

/// Reads every field of a row by its name (multivalue fields value by value).
pub(crate) fn read_row(row: &Map<String, Value>) -> RowFacts {
    let mut facts = RowFacts::default();
    for (key, value) in row.iter().take(MAX_FIELDS) {
        // Splunk's own bookkeeping fields ("_raw", "_cd", "_bkt") and the notable's
        // drill-down searches are not facts about the activity.
        if key.starts_with('_')
            || key.starts_with("drilldown")
            || key.starts_with("info_")
            || NOTABLE_BOOKKEEPING.contains(&key.as_str())
        {
            continue;
        }
        if let Some(role) = field_role(key) {
            facts.add(role, value);
        }
    }
    facts
}

impl RowFacts {
    /// Files one field's value(s) under `role`.
    pub(crate) fn add(&mut self, role: FieldRole, value: &Value) {
        let texts: Vec<String> = match value {
            Value::Array(items) => items
                .iter()
                .take(MAX_VALUES)
                .filter_map(scalar_text)
                .collect(),
            scalar => scalar_text(scalar).into_iter().collect(),
        };
        let number = texts
            .first()
            .and_then(|text| text.parse::<f64>().ok())
            .filter(|number| number.is_finite() && *number >= 0.0 && *number <= f64::from(u32::MAX))
            .map(|number| {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // Bounded above.
                let whole = number as u32;
                whole
            });
        let port = number.and_then(|number| u16::try_from(number).ok());
        let list = match role {
            FieldRole::Source => &mut self.sources,
            FieldRole::Destination => &mut self.destinations,
            FieldRole::Host => &mut self.hosts,
            FieldRole::User => &mut self.users,
            FieldRole::SourceUser => &mut self.source_users,
            FieldRole::DestinationUser => &mut self.destination_users,
            FieldRole::Email => &mut self.emails,
            FieldRole::Sender => &mut self.senders,
            FieldRole::Recipient => &mut self.recipients,
            FieldRole::Subject => &mut self.subjects,
            FieldRole::Url => &mut self.urls,
            FieldRole::Domain => &mut self.domains,
            FieldRole::Hash => &mut self.hashes,
            FieldRole::Process => &mut self.processes,
            FieldRole::ParentProcess => &mut self.parent_processes,
            FieldRole::CommandLine => &mut self.command_lines,
            FieldRole::FilePath => &mut self.file_paths,
            FieldRole::Signature => &mut self.signatures,
            FieldRole::Action => &mut self.actions,
            FieldRole::Country => &mut self.countries,
            FieldRole::City => &mut self.cities,
            FieldRole::UserAgent => &mut self.user_agents,
            FieldRole::Application => &mut self.applications,
            FieldRole::Tactic => &mut self.tactics,
            FieldRole::Technique => &mut self.techniques,
            FieldRole::FreeText => &mut self.free_text,
            FieldRole::SourcePort => {
                self.source_port = self.source_port.or(port);
                return;
            }
            FieldRole::DestinationPort => {
                self.destination_port = self.destination_port.or(port);
                return;
            }
            FieldRole::FailureCount => {
                self.failure_count = self.failure_count.or(number);
                return;
            }
            FieldRole::DistinctUsers => {
                self.distinct_users = self.distinct_users.or(number);
                return;
            }
            FieldRole::MfaDenials => {
                self.mfa_denials = self.mfa_denials.or(number);
                return;
            }
            FieldRole::Count => {
                self.count = self.count.or(number);
                return;
            }
            FieldRole::Severity => {
                if self.severity.is_none() {
                    self.severity = texts.into_iter().next();
                }
                return;
            }
        };
        for text in texts {
            if !list.contains(&text) && list.len() < MAX_VALUES {
                list.push(text);
            }
        }
    }

    /// The first source that is an IP address.
    fn source_ip(&self) -> Option<String> {
        self.sources.iter().find_map(|source| normalize_ip(source))
    }

    fn destination_ip(&self) -> Option<String> {
        self.destinations
            .iter()
            .find_map(|destination| normalize_ip(destination))
    }

    /// The account the row is about: the target of a sign-in before its initiator.
    pub(crate) fn main_user(&self) -> Option<&str> {
        self.users
            .iter()
            .chain(&self.destination_users)
            .chain(&self.source_users)
            .chain(&self.emails)
            .next()
            .map(String::as_str)
    }

    /// What the row is about, for grouping repeated alerts: a user, else a source, else a host.
    pub(crate) fn main_subject(&self) -> Option<String> {
        self.main_user()
            .or(self.sources.first().map(String::as_str))
            .or(self.hosts.first().map(String::as_str))
            .or(self.destinations.first().map(String::as_str))
            .map(str::to_lowercase)
    }

    /// The category the fields suggest when the format does not say.
    pub(crate) fn guess_category(&self) -> Option<AlertCategory> {
        let any_user = self.main_user().is_some();
        if !self.processes.is_empty() || !self.command_lines.is_empty() {
            Some(AlertCategory::Endpoint)
        } else if !self.senders.is_empty() || !self.subjects.is_empty() {
            Some(AlertCategory::Email)
        } else if any_user
            || self.failure_count.is_some()
            || self.distinct_users.is_some()
            || self.mfa_denials.is_some()
        {
            Some(AlertCategory::Identity)
        } else if !self.hashes.is_empty() || !self.file_paths.is_empty() {
            Some(AlertCategory::Endpoint)
        } else if !self.sources.is_empty() || !self.destinations.is_empty() {
            Some(AlertCategory::Network)
        } else {
            None
        }
    }

    /// What the row's action words say happened, when they agree on anything.
    fn action(&self) -> Option<(ActionTaken, Option<bool>)> {
        self.actions.iter().find_map(|word| action_word(word))
    }

    /// Fills the signals and entities of `alert` from the row, shaped by `category`.
    pub(crate) fn apply(&self, alert: &mut AlertBuilder, category: Option<AlertCategory>) {
        alert.signals.category = alert.signals.category.or(category);
        let action = self.action();
        if let Some((taken, _)) = action {
            alert.signals.action.get_or_insert(taken);
        }
        for tactic in &self.tactics {
            for part in tactic.split([',', ';', '|']) {
                alert.tactic(Some(part));
            }
        }
        for technique in &self.techniques {
            for part in technique.split([',', ';', '|', ' ']) {
                alert.technique(Some(part));
            }
            // Some searches name tactics in a mitre field too.
            alert.tactic(Some(technique));
        }
        for signature in &self.signatures {
            alert.tag(Some(signature));
        }
        match category {
            Some(AlertCategory::Identity) => self.apply_sign_in(alert, action),
            Some(AlertCategory::Endpoint) => self.apply_process(alert),
            Some(AlertCategory::Email) => self.apply_email(alert, action),
            _ => {}
        }
        // Traffic detail for any alert that names a destination; an IDS-style signature
        // alone makes a network block only when nothing else claimed the alert.
        let has_traffic = self.destination_ip().is_some()
            || self.destination_port.is_some()
            || !self.domains.is_empty()
            || (category.is_none() && !self.signatures.is_empty());
        if category == Some(AlertCategory::Network) || has_traffic {
            self.apply_network(alert);
        }
        self.apply_entities(alert);
    }

    fn apply_sign_in(&self, alert: &mut AlertBuilder, action: Option<(ActionTaken, Option<bool>)>) {
        let distinct_users = {
            let mut all: Vec<String> = self.users.iter().map(|user| user.to_lowercase()).collect();
            all.sort_unstable();
            all.dedup();
            u32::try_from(all.len()).ok().filter(|count| *count > 1)
        };
        let failed = action.and_then(|(_, succeeded)| succeeded) == Some(false);
        alert.signals.sign_in = Some(SignInSignal {
            user: self.main_user().map(str::to_string),
            source_ip: self.source_ip(),
            country: self.countries.first().cloned(),
            city: self.cities.first().cloned(),
            user_agent: self.user_agents.first().cloned(),
            application: self.applications.first().cloned(),
            succeeded: action.and_then(|(_, succeeded)| succeeded),
            mfa_denials: self.mfa_denials,
            failure_count: self.failure_count.or(self.count.filter(|_| failed)),
            targeted_accounts: self.distinct_users.or(distinct_users),
            ..SignInSignal::default()
        });
    }

    fn apply_process(&self, alert: &mut AlertBuilder) {
        let by_length = |length: usize| {
            self.hashes
                .iter()
                .find(|hash| hash.len() == length && hash_kind(hash).is_some())
                .cloned()
        };
        let (name, path) = match self.processes.first() {
            Some(process) if process.contains(['\\', '/']) => (
                process.rsplit(['\\', '/']).next().map(str::to_string),
                Some(process.clone()),
            ),
            Some(process) => (Some(process.clone()), None),
            None => (None, None),
        };
        alert.signals.process = Some(ProcessSignal {
            name,
            path,
            command_line: self.command_lines.first().cloned(),
            parent_name: self.parent_processes.first().cloned(),
            user: self.main_user().map(str::to_string),
            sha256: by_length(64),
            sha1: by_length(40),
            md5: by_length(32),
            ..ProcessSignal::default()
        });
    }

    fn apply_email(&self, alert: &mut AlertBuilder, action: Option<(ActionTaken, Option<bool>)>) {
        let attachments = self
            .hashes
            .iter()
            .filter(|hash| hash_kind(hash).is_some())
            .map(|hash| AttachmentSignal {
                sha256: (hash.len() == 64).then(|| hash.clone()),
                md5: (hash.len() == 32).then(|| hash.clone()),
                ..AttachmentSignal::default()
            })
            .collect();
        alert.signals.email = Some(EmailSignal {
            sender: self.senders.first().cloned(),
            recipients: self.recipients.clone(),
            subject: self.subjects.first().cloned(),
            urls: self.urls.clone(),
            attachments,
            delivered: action.map(|(taken, _)| taken == ActionTaken::Allowed),
            ..EmailSignal::default()
        });
    }

    fn apply_network(&self, alert: &mut AlertBuilder) {
        if alert.signals.network.is_some() {
            return;
        }
        alert.signals.network = Some(NetworkSignal {
            source_ip: self.source_ip(),
            source_port: self.source_port,
            destination_ip: self.destination_ip(),
            destination_port: self.destination_port,
            signature: self.signatures.first().cloned(),
            hostname: self.domains.first().cloned(),
            ..NetworkSignal::default()
        });
    }

    fn apply_entities(&self, alert: &mut AlertBuilder) {
        for address in self
            .sources
            .iter()
            .chain(&self.destinations)
            .chain(&self.hosts)
        {
            alert.host(Some(address));
        }
        for user in self
            .users
            .iter()
            .chain(&self.source_users)
            .chain(&self.destination_users)
        {
            alert.entity(EntityKind::User, Some(user));
        }
        for email in self
            .emails
            .iter()
            .chain(&self.senders)
            .chain(&self.recipients)
        {
            alert.entity(EntityKind::Email, Some(email));
        }
        for url in &self.urls {
            alert.entity(EntityKind::Url, Some(url));
        }
        for domain in &self.domains {
            alert.entity(EntityKind::Domain, Some(domain));
        }
        for hash in &self.hashes {
            alert.hash(Some(hash));
        }
        for path in &self.file_paths {
            alert.entity(EntityKind::FilePath, Some(path));
        }
        for process in self.processes.iter().chain(&self.parent_processes) {
            alert.entity(EntityKind::Process, Some(process));
        }
        for text in self.command_lines.iter().chain(&self.free_text) {
            alert.sweep(Some(text));
        }
    }
}

/// What a SIEM's action word says: what the tool did, and for sign-ins whether it worked.
pub(crate) fn action_word(text: &str) -> Option<(ActionTaken, Option<bool>)> {
    let lowered = text.trim().to_ascii_lowercase();
    const FAILED: &[&str] = &["fail", "denied", "deny", "reject", "invalid", "locked"];
    const BLOCKED: &[&str] = &[
        "block",
        "prevent",
        "quarantin",
        "drop",
        "remediat",
        "contain",
    ];
    const SUCCEEDED: &[&str] = &["success", "succeeded", "logged in", "authenticated"];
    const ALLOWED: &[&str] = &["allow", "permit", "deliver", "accept", "pass"];
    let contains = |list: &[&str]| list.iter().any(|word| lowered.contains(word));
    if contains(FAILED) {
        Some((ActionTaken::Blocked, Some(false)))
    } else if contains(BLOCKED) {
        Some((ActionTaken::Blocked, None))
    } else if contains(SUCCEEDED) {
        Some((ActionTaken::Allowed, Some(true)))
    } else if contains(ALLOWED) {
        Some((ActionTaken::Allowed, None))
    } else if ["detect", "alert", "log", "monitor"]
        .iter()
        .any(|word| lowered.contains(word))
    {
        Some((ActionTaken::Observed, None))
    } else {
        None
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

    #[test]
    fn field_names_map_to_roles_whatever_their_style() {
        let cases = [
            ("src_ip", Some(FieldRole::Source)),
            ("src", Some(FieldRole::Source)),
            ("ClientIP", Some(FieldRole::Source)),
            ("dest", Some(FieldRole::Destination)),
            ("dest_host", Some(FieldRole::Destination)),
            ("user", Some(FieldRole::User)),
            ("src_user", Some(FieldRole::SourceUser)),
            ("user_agent", Some(FieldRole::UserAgent)),
            ("http_user_agent", Some(FieldRole::UserAgent)),
            ("dc(user)", Some(FieldRole::DistinctUsers)),
            ("user_count", Some(FieldRole::DistinctUsers)),
            ("failure", Some(FieldRole::FailureCount)),
            ("failed_count", Some(FieldRole::FailureCount)),
            ("mfa_push_denials", Some(FieldRole::MfaDenials)),
            ("count", Some(FieldRole::Count)),
            ("dest_port", Some(FieldRole::DestinationPort)),
            ("file_hash", Some(FieldRole::Hash)),
            ("process_name", Some(FieldRole::Process)),
            ("parent_process_name", Some(FieldRole::ParentProcess)),
            ("process_command_line", Some(FieldRole::CommandLine)),
            (
                "annotations.mitre_attack.mitre_tactic",
                Some(FieldRole::Tactic),
            ),
            ("annotations.mitre_attack", Some(FieldRole::Technique)),
            ("signature", Some(FieldRole::Signature)),
            ("action", Some(FieldRole::Action)),
            ("app", Some(FieldRole::Application)),
            ("src_country", Some(FieldRole::Country)),
            ("host", Some(FieldRole::Host)),
            ("urgency", Some(FieldRole::Severity)),
            ("sender", Some(FieldRole::Sender)),
            ("query", Some(FieldRole::Domain)),
            ("source", None),
            ("sourcetype", None),
            ("owner", None),
            ("src_user_domain", None),
            ("principal.ip", Some(FieldRole::Source)),
            ("target.user.userid", Some(FieldRole::DestinationUser)),
        ];
        for (key, expected) in cases {
            assert_eq!(field_role(key), expected, "{key}");
        }
    }

    #[test]
    fn the_webhook_sample_reads_completely() {
        let raw: Value = serde_json::from_str(ALERT_WEBHOOK.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "splunk_alert_webhook");
        assert_eq!(parsed.title, "Brute force followed by successful logon");
        assert_eq!(
            parsed.create_time.to_rfc3339(),
            "2026-03-04T09:30:00+00:00",
            "from the sid"
        );
        assert_eq!(
            parsed.origin_ticket_id_label.as_deref(),
            Some("search id (sid)")
        );
        assert!(parsed.origin_ticket_url.is_some());
        let sign_in = parsed.signals.sign_in.as_ref().unwrap();
        assert_eq!(sign_in.user.as_deref(), Some("j.smith@example.com"));
        assert_eq!(sign_in.source_ip.as_deref(), Some("198.51.100.23"));
        assert_eq!(sign_in.failure_count, Some(45));
        assert_eq!(sign_in.succeeded, Some(true));
        assert_eq!(parsed.signals.category, Some(AlertCategory::Identity));
        assert!(has(&parsed, EntityKind::Ip, "198.51.100.23"));
        assert!(has(&parsed, EntityKind::User, "j.smith@example.com"));
    }

    #[test]
    fn a_webhook_with_process_fields_is_an_endpoint_alert() {
        let parsed = read(&json!({
            "sid": "rt_md_1772366400.88", "search_name": "Encoded PowerShell",
            "result": {"host": "WKS-0231", "process_name": "powershell.exe",
                       "process": "powershell.exe -enc SQBFAFgA", "user": "CORP\\r.patel",
                       "parent_process_name": "winword.exe", "severity": "high",
                       "file_hash": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
        }));
        assert_eq!(parsed.signals.category, Some(AlertCategory::Endpoint));
        let process = parsed.signals.process.as_ref().unwrap();
        assert_eq!(process.parent_name.as_deref(), Some("winword.exe"));
        assert_eq!(process.user.as_deref(), Some("CORP\\r.patel"));
        assert!(process.sha256.is_some());
        assert_eq!(parsed.signals.severity_level, Some(SeverityLevel::High));
        assert!(has(&parsed, EntityKind::Host, "wks-0231"));
    }

    #[test]
    fn the_notable_sample_reads_completely() {
        let raw: Value = serde_json::from_str(ES_NOTABLE.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "splunk_es_notable");
        assert_eq!(
            parsed.alert_type,
            "splunk_es:Access - Geographically Improbable Access Detected"
        );
        assert_eq!(parsed.severity.as_deref(), Some("high"));
        assert_eq!(parsed.signals.category, Some(AlertCategory::Identity));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Initial Access"]);
        assert_eq!(parsed.signals.source_verdict, None);
        assert!(has(&parsed, EntityKind::User, "r.patel@example.com"));
        assert!(has(&parsed, EntityKind::Ip, "203.0.113.145"));
        assert!(
            !parsed
                .entities
                .iter()
                .any(|entity| entity.kind == EntityKind::HashMd5),
            "the notable's own event_hash is no file hash: {:?}",
            parsed.entities
        );
    }

    #[test]
    fn dispositions_become_verdicts() {
        let cases = [
            ("disposition:1", Some(SourceVerdict::Malicious)),
            (
                "True Positive - Suspicious Activity",
                Some(SourceVerdict::Malicious),
            ),
            (
                "Benign Positive - Suspicious But Expected",
                Some(SourceVerdict::Benign),
            ),
            (
                "False Positive - Incorrect Analytic Logic",
                Some(SourceVerdict::Benign),
            ),
            ("disposition:4", Some(SourceVerdict::Benign)),
            ("Undetermined", None),
            ("disposition:6", None),
            ("Other", None),
        ];
        for (text, expected) in cases {
            assert_eq!(disposition(text), expected, "{text}");
        }
    }

    #[test]
    fn an_exported_notable_row_is_unwrapped_but_a_webhook_is_not_a_notable() {
        let row = json!({"event_id": "E@@notable@@1", "security_domain": "network",
                         "rule_name": "Network - Port Scan", "src": "10.9.9.10",
                         "_time": "2026-03-01T12:00:00.000+00:00"});
        let exported = json!({"preview": false, "offset": 0, "result": row.clone()});
        assert_eq!(read(&exported).schema_key, "splunk_es_notable");
        let webhook = json!({"sid": "s", "search_name": "x", "result": row});
        assert_eq!(read(&webhook).schema_key, "splunk_alert_webhook");
    }

    #[test]
    fn other_tools_with_an_event_id_and_an_urgency_are_not_notables() {
        for raw in [
            json!({"event_id": "42", "urgency": "high", "source": "monitoring"}),
            json!({"event_id": "42", "urgency": "high", "rule_name": "CPU above 90%"}),
            json!({"security_domain": "access", "rule_name": "x"}),
        ] {
            assert!(!detect_notable(&raw), "{raw}");
        }
    }

    #[test]
    fn scheduled_sids_carry_their_run_time() {
        assert_eq!(
            sid_time("scheduler__admin__search__RMD5a1b2c3d4e5f60718_at_1772366400_1234")
                .map(|time| time.to_rfc3339()),
            Some("2026-03-01T12:00:00+00:00".into())
        );
        assert_eq!(sid_time("1772366400.1234"), None);
        assert_eq!(sid_time("_at_"), None);
        assert_eq!(sid_time("x_at_12345678901234567890"), None);
    }

    #[test]
    fn hostile_input_never_panics() {
        let long = "ü".repeat(100_000);
        let wide: Map<String, Value> = (0..5000)
            .map(|index| {
                (
                    format!("src_ip_{index}"),
                    json!(format!("10.0.0.{}", index % 250 + 1)),
                )
            })
            .collect();
        for raw in [
            json!({"sid": 5, "search_name": [], "result": "x"}),
            json!({"sid": "s", "search_name": "n", "result": {"count": -5, "dest_port": 99999999,
                   "failure": "NaN", "user": {"nested": true}, "src": [1, null, {}], "_time": "bad"}}),
            json!({"sid": format!("x_at_{long}"), "search_name": long, "result": {long.clone(): long}}),
            json!({"sid": "s", "search_name": "n", "result": wide}),
            json!({"event_id": long, "security_domain": [], "urgency": {}, "rule_name": 5,
                   "source": long, "risk_object_type": "user", "risk_object": 7}),
            json!({"result": {"event_id": "e", "urgency": "high", "rule_title": "t",
                   "disposition": [], "annotations.mitre_attack.mitre_technique_id": [long]}}),
        ] {
            let _ = parse_alert(None, &raw, chrono::Utc::now());
            let _ = parse_alert(Some("splunk_alert_webhook"), &raw, chrono::Utc::now());
            let _ = parse_alert(Some("splunk_es_notable"), &raw, chrono::Utc::now());
        }
    }
}
