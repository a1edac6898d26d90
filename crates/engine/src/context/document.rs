//! The context document as operators write it (docs/context.md): TOML or JSON, every
//! section optional, unknown keys refused by name so a typo never silently drops a fact.
//! Several documents (the files of a directory, the API's copy) merge by joining lists.

use serde::{Deserialize, Serialize};

/// One context document. The field names are the file format: change them only with
/// docs/context.md.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContextDocument {
    pub organization: Organization,
    pub network: Network,
    pub scanners: Vec<Scanner>,
    pub intel: Vec<IntelEntry>,
    pub intel_feeds: Vec<IntelFeed>,
    pub known_good: KnownGood,
    pub service_accounts: Vec<ServiceAccount>,
    pub phishing_simulation: PhishingSimulation,
    pub soc_tests: SocTests,
    pub honeytokens: Vec<Honeytoken>,
    pub assets: Vec<Asset>,
    pub cloud_resources: Vec<CloudResource>,
    pub identities: Vec<Identity>,
    pub policies: Vec<Policy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geo: Option<Geo>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Organization {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub email_domains: Vec<String>,
    pub ad_domains: Vec<String>,
    pub cloud_accounts: Vec<String>,
    pub usual_countries: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Network {
    pub internal: Vec<String>,
    pub vpn_egress: Vec<String>,
    pub office_nat: Vec<String>,
    pub own_public: Vec<String>,
    pub segments: Vec<Segment>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Segment {
    pub name: String,
    pub ranges: Vec<String>,
    pub critical: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Scanner {
    pub name: String,
    pub ips: Vec<String>,
    pub hosts: Vec<String>,
    /// Kubernetes namespaces its jobs run in (an in-cluster scanner has no fixed address).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// Kubernetes clusters it runs in, by name as the cloud names them ("prod-eks-1"): the
    /// whole cluster, or with `namespaces` only those namespaces of these clusters.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<String>,
    /// The cloud identities it acts as: a role or user ARN, a service-account email, a user
    /// name, compared whole.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cloud_identities: Vec<String>,
    /// When it scans, in UTC: `"Tue 01:00-05:00"`, `"Mon-Fri 22:00-02:00"`, `"02:00-04:00"`
    /// (every day). Empty: any time. Outside them it is not scanning for you.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A scanning window read: the weekdays (Monday = 0) and the minutes of the day it spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    days: [bool; 7],
    start: u32,
    end: u32,
}

const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

impl Window {
    /// Reads `"Tue 01:00-05:00"`, `"Mon-Fri 22:00-02:00"` or `"02:00-04:00"`.
    pub fn parse(text: &str) -> Result<Window, String> {
        let wrong = || {
            format!(
                "window '{}' is not like \"Tue 01:00-05:00\", \"Mon-Fri 22:00-02:00\" or \"02:00-04:00\" (UTC)",
                crate::truncate(text, 40)
            )
        };
        let (days, hours) = match text.trim().split_once(' ') {
            Some((days, hours)) => (Some(days.trim()), hours.trim()),
            None => (None, text.trim()),
        };
        let day = |name: &str| {
            DAYS.iter()
                .position(|day| name.to_ascii_lowercase().starts_with(day))
                .ok_or_else(wrong)
        };
        let mut set = [days.is_none(); 7];
        if let Some(days) = days {
            for part in days.split(',') {
                match part.split_once('-') {
                    Some((first, last)) => {
                        let (first, last) = (day(first)?, day(last)?);
                        let mut index = first;
                        loop {
                            set[index] = true;
                            if index == last {
                                break;
                            }
                            index = (index + 1) % 7;
                        }
                    }
                    None => set[day(part)?] = true,
                }
            }
        }
        let minute = |clock: &str| -> Result<u32, String> {
            let (hour, minute) = clock.trim().split_once(':').ok_or_else(wrong)?;
            let (hour, minute): (u32, u32) = (
                hour.parse().map_err(|_| wrong())?,
                minute.parse().map_err(|_| wrong())?,
            );
            if hour > 24 || minute > 59 || (hour == 24 && minute > 0) {
                return Err(wrong());
            }
            Ok(hour * 60 + minute)
        };
        let (start, end) = hours.split_once('-').ok_or_else(wrong)?;
        Ok(Window {
            days: set,
            start: minute(start)?,
            end: minute(end)?,
        })
    }

    /// Whether a moment (weekday, Monday = 0, and minute of the day, UTC) is inside. A
    /// window that ends before it starts runs past midnight into the next day.
    pub fn contains(&self, weekday: usize, minute: u32) -> bool {
        if self.start <= self.end {
            self.days[weekday % 7] && (self.start..self.end).contains(&minute)
        } else {
            (self.days[weekday % 7] && minute >= self.start)
                || (self.days[(weekday + 6) % 7] && minute < self.end)
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntelEntry {
    /// ip | domain | url | email | hash; recognised from the value when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// 0..=100. Read as any number so that a wrong one is refused with the field and the
    /// range (`Context::build`), not a type error.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "whole_number"
    )]
    pub confidence: Option<f64>,
}

/// A confidence written back as the whole number it was read as (`confidence = 90`).
fn whole_number<S: serde::Serializer>(
    value: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        #[allow(clippy::cast_possible_truncation)]
        Some(number) if number.fract() == 0.0 && number.abs() < 1e15 => {
            serializer.serialize_i64(*number as i64)
        }
        Some(number) => serializer.serialize_f64(*number),
        None => serializer.serialize_none(),
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IntelFeed {
    /// Relative to the document that names it; the loader resolves and reads it.
    pub path: String,
    /// csv | stix | misp
    pub format: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KnownGood {
    pub hashes: Vec<String>,
    pub domains: Vec<String>,
    pub partner_domains: Vec<String>,
    pub ips: Vec<String>,
    pub admin_tools: Vec<AdminTool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdminTool {
    pub name: String,
    pub binaries: Vec<String>,
    pub hashes: Vec<String>,
    /// Who may use it; empty means anyone.
    pub users: Vec<String>,
    /// From where; empty means anywhere.
    pub hosts: Vec<String>,
    /// High-harm behaviours this tool is sanctioned for (credential_dumping, persistence,
    /// ...; docs/context.md). Without them its use explains only ordinary administration.
    pub behaviours: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServiceAccount {
    pub user: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub hosts: Vec<String>,
    pub ips: Vec<String>,
    /// Whether it may sign in interactively or from a browser (default: no).
    pub interactive: bool,
    /// What it runs; an empty list names no process (it does not mean "any").
    pub processes: Vec<String>,
    /// High-harm behaviours its job includes (backup_deletion for a backup job that prunes
    /// snapshots, ...); without them its listed job explains only ordinary work.
    pub behaviours: Vec<String>,
    /// Behaviours this account never does (docs/context.md, "never" rules): an alert
    /// claiming one is a violation the operator declared.
    pub never: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PhishingSimulation {
    /// Addresses, or `@domain` for every sender of a domain.
    pub senders: Vec<String>,
    pub domains: Vec<String>,
    pub ips: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SocTests {
    pub hosts: Vec<String>,
    pub users: Vec<String>,
    pub hashes: Vec<String>,
    pub ips: Vec<String>,
    /// Text in a title, command line or subject that marks a planned test.
    pub markers: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Honeytoken {
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Where the token lies on purpose (a repository, a share, a path): an alert that only
    /// finds it there is the bait being seen, not a leak and not a use.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub planted_in: Vec<String>,
    /// The secret scanner's name for the token's type (`aws_access_key_id`): a finding of
    /// another type where the token lies is some other secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_type: Option<String>,
}

impl Honeytoken {
    /// Whether `place` (a repository, a file URL) is where the token was planted: one of
    /// `planted_in` is the place or contains it as a path segment (`example-corp/infra`
    /// in `https://github.com/example-corp/infra/blob/...`).
    pub fn planted_at(&self, place: &str) -> bool {
        let place = place.to_lowercase();
        self.planted_in.iter().any(|planted| {
            let planted = planted.trim().trim_matches('/').to_lowercase();
            !planted.is_empty()
                && place.match_indices(&planted).any(|(start, _)| {
                    let before = place[..start].chars().next_back();
                    let after = place[start + planted.len()..].chars().next();
                    before.is_none_or(|c| matches!(c, '/' | ':' | '\\'))
                        && after.is_none_or(|c| matches!(c, '/' | '\\' | '?' | '#'))
                })
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Asset {
    pub host: String,
    pub ips: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    pub critical: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CloudResource {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub critical: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Identity {
    pub user: String,
    pub aliases: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub department: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The country they work from (ISO 3166 alpha-2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    pub vip: bool,
    pub privileged: bool,
    pub security_team: bool,
    pub it_admin: bool,
    /// Behaviours this person never does ("never" rules), as for service accounts.
    pub never: Vec<String>,
    /// Where they stand: `leaver` (gone; the account should be dead), `on_notice`
    /// (leaving), `contractor`. Absent: an employee.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Privilege tier in the usual model: 0 controls identity itself (domain, IdP, cloud
    /// root), 1 servers and applications, 2 workstations and their users.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<u8>,
}

/// The states an identity may be in (`[[identities]] state`).
pub(super) const IDENTITY_STATES: &[&str] = &["leaver", "on_notice", "contractor"];

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    pub statement: String,
    /// prohibited | authorized
    pub effect: String,
    pub matches: Vec<String>,
    /// Alert labels or tags (whole, any case) that make the policy apply, as a match does.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
    /// Text whose presence lifts the policy (a change ticket's prefix for "root use needs
    /// a ticket").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unless: Vec<String>,
    /// Domains the policy holds inside: it applies only when the alert names an email
    /// address or domain outside all of them ("Owner is never granted outside example.com").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outside: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Geo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mmdb: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asn_mmdb: Option<String>,
}

impl ContextDocument {
    /// Reads a TOML document. The error names the line and what is wrong.
    pub fn from_toml(text: &str) -> Result<ContextDocument, String> {
        toml::from_str(text).map_err(|error| error.to_string())
    }

    /// Reads a JSON document (the API accepts both).
    pub fn from_json(text: &str) -> Result<ContextDocument, String> {
        serde_json::from_str(text).map_err(|error| error.to_string())
    }

    /// This document as TOML, for `sleuth context check` and the API.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Joins `other` into this one: lists are appended, the organisation's name is kept
    /// from the first document that has one, the geo settings from the last.
    pub fn merge(&mut self, other: ContextDocument) {
        let ContextDocument {
            organization,
            network,
            scanners,
            intel,
            intel_feeds,
            known_good,
            service_accounts,
            phishing_simulation,
            soc_tests,
            honeytokens,
            assets,
            cloud_resources,
            identities,
            policies,
            geo,
        } = other;
        if self.organization.name.is_none() {
            self.organization.name = organization.name;
        }
        self.organization
            .email_domains
            .extend(organization.email_domains);
        self.organization.ad_domains.extend(organization.ad_domains);
        self.organization
            .cloud_accounts
            .extend(organization.cloud_accounts);
        self.organization
            .usual_countries
            .extend(organization.usual_countries);
        self.network.internal.extend(network.internal);
        self.network.vpn_egress.extend(network.vpn_egress);
        self.network.office_nat.extend(network.office_nat);
        self.network.own_public.extend(network.own_public);
        self.network.segments.extend(network.segments);
        self.scanners.extend(scanners);
        self.intel.extend(intel);
        self.intel_feeds.extend(intel_feeds);
        self.known_good.hashes.extend(known_good.hashes);
        self.known_good.domains.extend(known_good.domains);
        self.known_good
            .partner_domains
            .extend(known_good.partner_domains);
        self.known_good.ips.extend(known_good.ips);
        self.known_good.admin_tools.extend(known_good.admin_tools);
        self.service_accounts.extend(service_accounts);
        self.phishing_simulation
            .senders
            .extend(phishing_simulation.senders);
        self.phishing_simulation
            .domains
            .extend(phishing_simulation.domains);
        self.phishing_simulation.ips.extend(phishing_simulation.ips);
        self.soc_tests.hosts.extend(soc_tests.hosts);
        self.soc_tests.users.extend(soc_tests.users);
        self.soc_tests.hashes.extend(soc_tests.hashes);
        self.soc_tests.ips.extend(soc_tests.ips);
        self.soc_tests.markers.extend(soc_tests.markers);
        self.honeytokens.extend(honeytokens);
        self.assets.extend(assets);
        self.cloud_resources.extend(cloud_resources);
        self.identities.extend(identities);
        self.policies.extend(policies);
        if geo.is_some() {
            self.geo = geo;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_is_refused_by_name_and_line() {
        let error =
            ContextDocument::from_toml("[organization]\nemail_domain = [\"example.com\"]\n")
                .expect_err("unknown key");
        assert!(error.contains("email_domain"), "{error}");
        assert!(error.contains("line 2") || error.contains("2 |"), "{error}");
    }

    #[test]
    fn documents_merge_by_joining_lists() {
        let mut first = ContextDocument::from_toml(
            "[organization]\nname = \"First\"\nemail_domains = [\"a.com\"]\n[[scanners]]\nname = \"s1\"\n",
        )
        .unwrap();
        let second = ContextDocument::from_toml(
            "[organization]\nname = \"Second\"\nemail_domains = [\"b.com\"]\n[[scanners]]\nname = \"s2\"\n",
        )
        .unwrap();
        first.merge(second);
        assert_eq!(first.organization.name.as_deref(), Some("First"));
        assert_eq!(first.organization.email_domains, vec!["a.com", "b.com"]);
        assert_eq!(first.scanners.len(), 2);
    }

    #[test]
    fn a_document_survives_toml_and_json_round_trips() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../corpus/context/organization.toml"
        ))
        .unwrap();
        let document = ContextDocument::from_toml(&text).unwrap();
        assert!(!document.identities.is_empty());
        assert_eq!(
            ContextDocument::from_toml(&document.to_toml()).unwrap(),
            document
        );
        let json = serde_json::to_string(&document).unwrap();
        assert_eq!(ContextDocument::from_json(&json).unwrap(), document);
    }
}
