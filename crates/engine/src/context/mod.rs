//! What the operator knows about their organisation (docs/context.md), compiled once per
//! load into lookups, so that each investigation asks "what do we know about this
//! entity?" in constant time. Reading files is the caller's business: the engine gets
//! text and indicators, never paths.

mod document;

use foldhash::{HashMap, HashMapExt};
use std::net::IpAddr;

use ipnet::IpNet;
use sleuth_domain::{Entity, EntityKind};
use sleuth_normalize::entities::{self, user_base_name};

pub use document::{
    AdminTool, Asset, CloudResource, ContextDocument, Geo, Honeytoken, Identity, IntelEntry,
    IntelFeed, KnownGood, Network, Organization, PhishingSimulation, Policy, Scanner, Segment,
    ServiceAccount, SocTests, Window,
};

/// How an intel indicator is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntelKind {
    Ip,
    Network,
    Domain,
    Url,
    Email,
    Hash,
}

/// One known-bad indicator with what is known about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Intel {
    pub kind: IntelKind,
    /// Normalised like the alert entity of the same thing.
    pub value: String,
    /// One of `sleuth_intel::CATEGORIES` (docs/context.md lists them).
    pub category: String,
    pub description: Option<String>,
    pub source: Option<String>,
    pub confidence: u8,
}

impl Intel {
    /// Whether a match proves malicious activity (rather than only raising doubt:
    /// a Tor exit or an open proxy is used by the innocent too).
    pub fn proves_malice(&self) -> bool {
        self.confidence >= 70
            && !matches!(
                self.category.as_str(),
                "tor_exit" | "proxy" | "scanner" | "spam"
            )
    }
}

/// Where an IP address sits, as far as the operator's ranges tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkPlace {
    VpnEgress,
    OfficeNat,
    OwnPublic,
    Internal,
    /// A private address outside every listed internal range.
    UnlistedPrivate,
    Public,
    /// Loopback, link-local, multicast.
    Special,
}

impl NetworkPlace {
    /// The organisation's own address: inside, or its own public egress.
    pub fn is_own(self) -> bool {
        matches!(
            self,
            NetworkPlace::VpnEgress
                | NetworkPlace::OfficeNat
                | NetworkPlace::OwnPublic
                | NetworkPlace::Internal
                | NetworkPlace::UnlistedPrivate
        )
    }
}

/// Everything the context says about one entity.
#[derive(Debug, Clone, Default)]
pub struct Knowledge<'c> {
    pub intel: Vec<&'c Intel>,
    pub honeytoken: Option<&'c Honeytoken>,
    pub scanner: Option<&'c Scanner>,
    pub soc_test: bool,
    pub phishing_simulation: bool,
    pub known_good_hash: bool,
    pub known_good_domain: bool,
    pub known_good_ip: bool,
    pub partner_domain: bool,
    pub own_domain: bool,
    pub own_cloud_account: bool,
    pub identity: Option<&'c Identity>,
    pub service_account: Option<&'c ServiceAccount>,
    pub asset: Option<&'c Asset>,
    pub cloud_resource: Option<&'c CloudResource>,
    pub place: Option<NetworkPlace>,
    pub segment: Option<&'c Segment>,
}

impl Knowledge<'_> {
    /// Whether the entity is one of the organisation's crown jewels: a VIP or privileged
    /// person, a critical host, segment or cloud resource.
    pub fn crown_jewel(&self) -> Option<String> {
        if let Some(identity) = self.identity {
            let who = identity.name.as_deref().unwrap_or(&identity.user);
            if identity.vip {
                return Some(format!(
                    "{who} is a VIP{}",
                    identity
                        .title
                        .as_deref()
                        .map(|title| format!(" ({title})"))
                        .unwrap_or_default()
                ));
            }
            if identity.tier == Some(0) {
                return Some(format!("{who} holds tier-0 privilege"));
            }
            if identity.privileged || identity.it_admin {
                return Some(format!("{who} holds privileged access"));
            }
            if identity.security_team {
                return Some(format!("{who} is on the security team"));
            }
        }
        if let Some(asset) = self.asset.filter(|asset| asset.critical) {
            return Some(format!(
                "{} is a critical asset{}",
                asset.host,
                asset
                    .role
                    .as_deref()
                    .map(|role| format!(" ({role})"))
                    .unwrap_or_default()
            ));
        }
        if let Some(segment) = self.segment.filter(|segment| segment.critical) {
            return Some(format!("it is in the critical segment '{}'", segment.name));
        }
        if let Some(resource) = self.cloud_resource.filter(|resource| resource.critical) {
            return Some(format!(
                "{} is a critical cloud resource{}",
                resource.id,
                resource
                    .description
                    .as_deref()
                    .map(|description| format!(" ({description})"))
                    .unwrap_or_default()
            ));
        }
        None
    }
}

/// The operator's context, compiled for lookups. Cheap to share behind an `Arc`.
#[derive(Debug, Clone, Default)]
pub struct Context {
    document: ContextDocument,
    /// Exact indicators by kind, then by value: looked up with a `&str`, no allocation.
    intel_exact: HashMap<IntelKind, HashMap<String, Intel>>,
    intel_networks: Vec<(IpNet, Intel)>,
    internal: Vec<IpNet>,
    vpn_egress: Vec<IpNet>,
    office_nat: Vec<IpNet>,
    own_public: Vec<IpNet>,
    segments: Vec<(IpNet, usize)>,
    scanner_networks: Vec<(IpNet, usize)>,
    scanner_hosts: HashMap<String, usize>,
    known_good_hashes: Vec<String>,
    known_good_networks: Vec<IpNet>,
    phishing_ips: Vec<IpNet>,
    soc_test_networks: Vec<IpNet>,
    identities_by_name: HashMap<String, usize>,
    service_accounts_by_name: HashMap<String, usize>,
    assets_by_host: HashMap<String, usize>,
    assets_by_ip: HashMap<IpAddr, usize>,
    /// Each honeytoken's value and account base name, lower-cased, with its index.
    honeytoken_values: Vec<(String, String, usize)>,
    /// The SOC-test markers, lower-cased, empty ones left out.
    soc_test_markers: Vec<String>,
    /// SOC-test accounts by base name, hosts by short name, hashes lower-cased.
    soc_test_users: Vec<String>,
    soc_test_hosts: Vec<String>,
    soc_test_hashes: Vec<String>,
    /// Phishing-simulation senders, lower-cased: an address, or `@domain`.
    phishing_senders: Vec<String>,
    /// The domain lists as `domain_within` compares them (trimmed, lower-cased, any `*.`
    /// dropped, empty ones left out), so that each lookup allocates nothing.
    known_good_domains: Vec<String>,
    /// Each listed cloud resource's id, lower-cased, in the document's order.
    cloud_resource_ids: Vec<String>,
    partner_domains: Vec<String>,
    own_domains: Vec<String>,
    phishing_domains: Vec<String>,
}

/// Why a context could not be compiled: every problem, each naming the entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the context has {} problem(s): {}", .0.len(), .0.join("; "))]
pub struct ContextErrors(pub Vec<String>);

impl Context {
    /// No context at all: every investigation runs on the alert and history alone.
    pub fn empty() -> Context {
        Context::default()
    }

    /// Compiles a (merged) document. Invalid addresses and unknown enumerations are
    /// refused, all of them listed, so the operator fixes the file in one go.
    pub fn build(document: ContextDocument) -> Result<Context, ContextErrors> {
        let mut problems = Vec::new();
        let mut networks = |values: &[String], what: &str| -> Vec<IpNet> {
            values
                .iter()
                .filter_map(|value| {
                    let parsed = parse_network(value);
                    if parsed.is_none() {
                        problems.push(format!(
                            "{what}: '{value}' is not an IP address or CIDR range"
                        ));
                    }
                    parsed
                })
                .collect()
        };
        let internal = networks(&document.network.internal, "network.internal");
        let vpn_egress = networks(&document.network.vpn_egress, "network.vpn_egress");
        let office_nat = networks(&document.network.office_nat, "network.office_nat");
        let own_public = networks(&document.network.own_public, "network.own_public");
        let mut segments = Vec::new();
        for (index, segment) in document.network.segments.iter().enumerate() {
            for network in networks(
                &segment.ranges,
                &format!("network.segments '{}'", segment.name),
            ) {
                segments.push((network, index));
            }
        }
        let mut scanner_networks = Vec::new();
        let mut scanner_hosts = HashMap::new();
        for (index, scanner) in document.scanners.iter().enumerate() {
            for network in networks(&scanner.ips, &format!("scanners '{}'", scanner.name)) {
                scanner_networks.push((network, index));
            }
            for host in &scanner.hosts {
                scanner_hosts.insert(short_host(host), index);
            }
        }
        let known_good_networks = networks(&document.known_good.ips, "known_good.ips");
        let phishing_ips = networks(&document.phishing_simulation.ips, "phishing_simulation.ips");
        let soc_test_networks = networks(&document.soc_tests.ips, "soc_tests.ips");
        let mut service_account_check = Vec::new();
        for account in &document.service_accounts {
            service_account_check.extend(networks(
                &account.ips,
                &format!("service_accounts '{}'", account.user),
            ));
        }
        let mut assets_by_ip = HashMap::new();
        let mut assets_by_host = HashMap::new();
        for (index, asset) in document.assets.iter().enumerate() {
            assets_by_host.insert(short_host(&asset.host), index);
            for ip in &asset.ips {
                match ip.parse::<IpAddr>() {
                    Ok(address) => {
                        assets_by_ip.insert(address, index);
                    }
                    Err(_) => problems.push(format!(
                        "assets '{}': '{ip}' is not an IP address",
                        asset.host
                    )),
                }
            }
        }
        let mut context = Context {
            internal,
            vpn_egress,
            office_nat,
            own_public,
            segments,
            scanner_networks,
            scanner_hosts,
            known_good_hashes: document
                .known_good
                .hashes
                .iter()
                .chain(
                    document
                        .known_good
                        .admin_tools
                        .iter()
                        .flat_map(|tool| &tool.hashes),
                )
                .map(|hash| hash.trim().to_ascii_lowercase())
                .collect(),
            known_good_networks,
            phishing_ips,
            soc_test_networks,
            assets_by_host,
            assets_by_ip,
            ..Context::default()
        };
        for (index, identity) in document.identities.iter().enumerate() {
            for name in std::iter::once(&identity.user).chain(&identity.aliases) {
                let lowered = name.trim().to_lowercase();
                context
                    .identities_by_name
                    .entry(user_base_name(&lowered).to_string())
                    .or_insert(index);
                context.identities_by_name.insert(lowered, index);
            }
        }
        for (index, token) in document.honeytokens.iter().enumerate() {
            let value = token.value.trim().to_lowercase();
            if !value.is_empty() {
                let base = user_base_name(&value).to_string();
                context.honeytoken_values.push((value, base, index));
            }
        }
        context.soc_test_users = document
            .soc_tests
            .users
            .iter()
            .map(|user| user_base_name(&user.trim().to_lowercase()).to_string())
            .collect();
        context.soc_test_hosts = document
            .soc_tests
            .hosts
            .iter()
            .map(|host| short_host(host))
            .collect();
        context.soc_test_hashes = document
            .soc_tests
            .hashes
            .iter()
            .map(|hash| hash.trim().to_ascii_lowercase())
            .collect();
        context.phishing_senders = document
            .phishing_simulation
            .senders
            .iter()
            .map(|sender| sender.trim().to_lowercase())
            .collect();
        context.soc_test_markers = document
            .soc_tests
            .markers
            .iter()
            .map(|marker| marker.trim().to_lowercase())
            .filter(|marker| !marker.is_empty())
            .collect();
        context.cloud_resource_ids = document
            .cloud_resources
            .iter()
            .map(|resource| resource.id.to_lowercase())
            .collect();
        context.known_good_domains = listed_domains(&document.known_good.domains);
        context.partner_domains = listed_domains(&document.known_good.partner_domains);
        context.own_domains = listed_domains(&document.organization.email_domains);
        context.phishing_domains = listed_domains(&document.phishing_simulation.domains);
        for (index, account) in document.service_accounts.iter().enumerate() {
            let lowered = account.user.trim().to_lowercase();
            context
                .service_accounts_by_name
                .insert(user_base_name(&lowered).to_string(), index);
        }
        for entry in &document.intel {
            match intel_from_entry(entry) {
                Ok(intel) => context.add_intel(intel),
                Err(problem) => problems.push(problem),
            }
        }
        for policy in &document.policies {
            if !matches!(policy.effect.as_str(), "prohibited" | "authorized") {
                problems.push(format!(
                    "policies '{}': effect must be 'prohibited' or 'authorized', not '{}'",
                    policy.statement, policy.effect
                ));
            }
        }
        for tool in &document.known_good.admin_tools {
            problems.extend(unknown_behaviours(
                &tool.behaviours,
                &format!("known_good.admin_tools '{}'", tool.name),
            ));
        }
        for account in &document.service_accounts {
            let what = format!("service_accounts '{}'", account.user);
            problems.extend(unknown_behaviours(&account.behaviours, &what));
            problems.extend(unknown_behaviours(
                &account.never,
                &format!("{what}: never"),
            ));
        }
        for scanner in &document.scanners {
            for cluster in &scanner.clusters {
                if !is_cluster_name(cluster) {
                    problems.push(format!(
                        "scanners '{}': cluster '{}' is not a cluster name (letters, digits, '-' \
                         and '_', at most 100, as EKS, GKE and AKS name them)",
                        scanner.name,
                        crate::truncate(cluster, 40)
                    ));
                }
            }
            for window in &scanner.windows {
                if let Err(problem) = document::Window::parse(window) {
                    problems.push(format!("scanners '{}': {problem}", scanner.name));
                }
            }
        }
        for identity in &document.identities {
            let what = format!("identities '{}'", identity.user);
            problems.extend(unknown_behaviours(
                &identity.never,
                &format!("{what}: never"),
            ));
            if let Some(location) = &identity.location {
                problems.extend(country_problem(location, &format!("{what}: location")));
            }
            if let Some(state) = &identity.state
                && !document::IDENTITY_STATES.contains(&state.as_str())
            {
                problems.push(format!(
                    "{what}: state must be one of {}, not '{}'",
                    document::IDENTITY_STATES.join(", "),
                    crate::truncate(state, 40)
                ));
            }
            if let Some(tier) = identity.tier
                && tier > 2
            {
                problems.push(format!("{what}: tier must be 0, 1 or 2, not {tier}"));
            }
        }
        for country in &document.organization.usual_countries {
            problems.extend(country_problem(country, "organization.usual_countries"));
        }
        for feed in &document.intel_feeds {
            if !matches!(feed.format.as_str(), "csv" | "stix" | "misp") {
                problems.push(format!(
                    "intel_feeds '{}': format must be csv, stix or misp, not '{}'",
                    feed.path, feed.format
                ));
            }
        }
        if !problems.is_empty() {
            return Err(ContextErrors(problems));
        }
        context.document = document;
        Ok(context)
    }

    /// Adds a known-bad indicator (from the document or a feed). A later entry for the same
    /// value replaces an earlier one only when it is more confident.
    pub fn add_intel(&mut self, intel: Intel) {
        if intel.kind == IntelKind::Network {
            if let Some(network) = parse_network(&intel.value) {
                self.intel_networks.push((network, intel));
            }
            return;
        }
        let by_value = self.intel_exact.entry(intel.kind).or_default();
        match by_value.get(&intel.value) {
            Some(existing) if existing.confidence >= intel.confidence => {}
            _ => {
                by_value.insert(intel.value.clone(), intel);
            }
        }
    }

    /// How many indicators are loaded, for `sleuth context check` and `/readyz`.
    pub fn intel_count(&self) -> usize {
        self.intel_exact.values().map(HashMap::len).sum::<usize>() + self.intel_networks.len()
    }

    pub fn document(&self) -> &ContextDocument {
        &self.document
    }

    /// Everything known about one entity.
    pub fn about(&self, entity: &Entity) -> Knowledge<'_> {
        let mut knowledge = Knowledge::default();
        let value = entity.value.as_str();
        match entity.kind {
            EntityKind::Ip => self.about_ip(value, &mut knowledge),
            EntityKind::Domain => self.about_domain(value, &mut knowledge),
            EntityKind::Url => {
                self.push_intel(&mut knowledge, IntelKind::Url, value);
            }
            EntityKind::Email => self.about_email(value, &mut knowledge),
            EntityKind::HashMd5 | EntityKind::HashSha1 | EntityKind::HashSha256 => {
                self.push_intel(&mut knowledge, IntelKind::Hash, value);
                knowledge.known_good_hash = self.known_good_hashes.iter().any(|hash| hash == value);
                knowledge.soc_test = self.soc_test_hashes.iter().any(|hash| hash == value);
            }
            EntityKind::User => self.about_user(value, &mut knowledge),
            EntityKind::Host => self.about_host(value, &mut knowledge),
            EntityKind::CloudAccount => {
                knowledge.own_cloud_account = self
                    .document
                    .organization
                    .cloud_accounts
                    .iter()
                    .any(|account| account.eq_ignore_ascii_case(value));
            }
            EntityKind::CloudResource => {
                let lowered = lower_case(value);
                knowledge.cloud_resource = self
                    .cloud_resource_ids
                    .iter()
                    .position(|id| resource_within(&lowered, id))
                    .map(|index| &self.document.cloud_resources[index]);
            }
            EntityKind::Process | EntityKind::FilePath => {}
        }
        knowledge.honeytoken = self.honeytoken_named(value);
        knowledge
    }

    fn about_ip<'c>(&'c self, value: &str, knowledge: &mut Knowledge<'c>) {
        let Ok(address) = value.parse::<IpAddr>() else {
            return;
        };
        let within = |networks: &[IpNet]| networks.iter().any(|network| network.contains(&address));
        knowledge.place = Some(if within(&self.vpn_egress) {
            NetworkPlace::VpnEgress
        } else if within(&self.office_nat) {
            NetworkPlace::OfficeNat
        } else if within(&self.own_public) {
            NetworkPlace::OwnPublic
        } else if within(&self.internal) {
            NetworkPlace::Internal
        } else {
            match entities::ip_scope(value) {
                Some(entities::IpScope::Private) => NetworkPlace::UnlistedPrivate,
                Some(entities::IpScope::Public) | None => NetworkPlace::Public,
                Some(_) => NetworkPlace::Special,
            }
        });
        // The most specific segment wins (a /24 inside a /16).
        knowledge.segment = self
            .segments
            .iter()
            .filter(|(network, _)| network.contains(&address))
            .max_by_key(|(network, _)| network.prefix_len())
            .map(|(_, index)| &self.document.network.segments[*index]);
        knowledge.scanner = self
            .scanner_networks
            .iter()
            .find(|(network, _)| network.contains(&address))
            .map(|(_, index)| &self.document.scanners[*index]);
        knowledge.known_good_ip = within(&self.known_good_networks);
        knowledge.phishing_simulation = within(&self.phishing_ips);
        knowledge.soc_test = within(&self.soc_test_networks);
        knowledge.asset = self
            .assets_by_ip
            .get(&address)
            .map(|index| &self.document.assets[*index]);
        self.push_intel(knowledge, IntelKind::Ip, value);
        for (network, intel) in &self.intel_networks {
            if network.contains(&address) {
                knowledge.intel.push(intel);
            }
        }
    }

    fn about_domain<'c>(&'c self, value: &str, knowledge: &mut Knowledge<'c>) {
        for suffix in domain_and_parents(value) {
            if let Some(intel) = self.intel(IntelKind::Domain, suffix) {
                knowledge.intel.push(intel);
            }
        }
        let listed = |domains: &[String]| {
            domains
                .iter()
                .any(|listed| within_normalised(value, listed))
        };
        knowledge.known_good_domain = listed(&self.known_good_domains);
        knowledge.partner_domain = listed(&self.partner_domains);
        knowledge.own_domain = listed(&self.own_domains);
        knowledge.phishing_simulation = listed(&self.phishing_domains);
    }

    fn about_email<'c>(&'c self, value: &str, knowledge: &mut Knowledge<'c>) {
        self.push_intel(knowledge, IntelKind::Email, value);
        if let Some((_, domain)) = value.rsplit_once('@') {
            let mut domain_knowledge = Knowledge::default();
            self.about_domain(domain, &mut domain_knowledge);
            knowledge.intel.extend(domain_knowledge.intel);
            knowledge.known_good_domain = domain_knowledge.known_good_domain;
            knowledge.partner_domain = domain_knowledge.partner_domain;
            knowledge.own_domain = domain_knowledge.own_domain;
            knowledge.phishing_simulation = domain_knowledge.phishing_simulation;
        }
        knowledge.phishing_simulation |=
            self.phishing_senders
                .iter()
                .any(|sender| match sender.strip_prefix('@') {
                    Some(domain) => value
                        .rsplit_once('@')
                        .is_some_and(|(_, own)| domain_within(own, domain)),
                    None => sender == value,
                });
        // An address is the person of the same account name only on the organisation's
        // own mail domains: `d.okafor@exarnple.com` is not the CEO `d.okafor`. Elsewhere
        // only the exact address, listed as a user or alias, names someone. Without any
        // mail domain in the context there is nothing to tell them apart by.
        let own_or_unknown =
            knowledge.own_domain || self.document.organization.email_domains.is_empty();
        if own_or_unknown {
            self.about_user(value, knowledge);
        } else {
            knowledge.identity = self
                .identities_by_name
                .get(value)
                .map(|index| &self.document.identities[*index]);
        }
    }

    fn about_user<'c>(&'c self, value: &str, knowledge: &mut Knowledge<'c>) {
        let base = user_base_name(value);
        knowledge.identity = self
            .identities_by_name
            .get(value)
            .or_else(|| self.identities_by_name.get(base))
            .map(|index| &self.document.identities[*index]);
        knowledge.service_account = self
            .service_accounts_by_name
            .get(base)
            .map(|index| &self.document.service_accounts[*index]);
        knowledge.soc_test |= self.soc_test_users.iter().any(|user| user == base);
    }

    fn about_host<'c>(&'c self, value: &str, knowledge: &mut Knowledge<'c>) {
        let short = short_host(value);
        // Names are looked up; patterns (`srv-web-*`) are tried after, in the order written.
        let by_pattern = |hosts: &[String]| {
            hosts.iter().any(|listed| is_pattern(listed)) && Context::host_in(value, hosts)
        };
        knowledge.asset = self
            .assets_by_host
            .get(&short)
            .map(|index| &self.document.assets[*index])
            .or_else(|| {
                self.document
                    .assets
                    .iter()
                    .find(|asset| by_pattern(std::slice::from_ref(&asset.host)))
            });
        knowledge.scanner = self
            .scanner_hosts
            .get(&short)
            .map(|index| &self.document.scanners[*index])
            .or_else(|| {
                self.document
                    .scanners
                    .iter()
                    .find(|scanner| by_pattern(&scanner.hosts))
            });
        knowledge.soc_test =
            self.soc_test_hosts.contains(&short) || by_pattern(&self.document.soc_tests.hosts);
    }

    fn push_intel<'c>(&'c self, knowledge: &mut Knowledge<'c>, kind: IntelKind, value: &str) {
        if let Some(intel) = self.intel(kind, value) {
            knowledge.intel.push(intel);
        }
    }

    fn intel(&self, kind: IntelKind, value: &str) -> Option<&Intel> {
        self.intel_exact.get(&kind)?.get(value)
    }

    fn honeytoken_named(&self, value: &str) -> Option<&Honeytoken> {
        if self.honeytoken_values.is_empty() {
            return None;
        }
        let lowered = lower_case(value);
        let base = user_base_name(&lowered);
        self.honeytoken_values
            .iter()
            .find(|(token, token_base, _)| *token == lowered || *token_base == base)
            .map(|(_, _, index)| &self.document.honeytokens[*index])
    }

    /// A honeytoken written inside free text (a command line, a request). `lowered_text`
    /// is lower-case already (the case's searchable text is).
    pub fn honeytoken_in(&self, lowered_text: &str) -> Option<&Honeytoken> {
        self.honeytoken_values
            .iter()
            .find(|(token, _, _)| token.len() >= 4 && lowered_text.contains(token.as_str()))
            .map(|(_, _, index)| &self.document.honeytokens[*index])
    }

    /// A SOC-test marker written inside free text (lower-case already).
    pub fn soc_test_marker_in(&self, lowered_text: &str) -> Option<&str> {
        self.soc_test_markers
            .iter()
            .find(|marker| lowered_text.contains(marker.as_str()))
            .map(String::as_str)
    }

    /// The policies that apply to an alert: one of its match terms appears in `text`
    /// (lower-cased by the caller) or one of its labels is among `tags`, none of its
    /// `unless` terms appears, and, when it names `outside` domains, one of `addresses`
    /// (email addresses and domains) lies outside them all.
    pub fn policies_matching<'c>(
        &'c self,
        lowered_text: &str,
        tags: &[String],
        addresses: &[&str],
    ) -> Vec<&'c Policy> {
        let appears = |terms: &[String]| {
            terms.iter().any(|term| {
                !term.trim().is_empty() && lowered_text.contains(&*lower_case(term.trim()))
            })
        };
        self.document
            .policies
            .iter()
            .filter(|policy| {
                let labelled = policy.labels.iter().any(|label| {
                    tags.iter()
                        .any(|tag| tag.trim().eq_ignore_ascii_case(label.trim()))
                });
                let outside = policy.outside.is_empty()
                    || addresses.iter().any(|address| {
                        let domain = address
                            .rsplit_once('@')
                            .map_or(*address, |(_, domain)| domain);
                        !policy
                            .outside
                            .iter()
                            .any(|inside| domain_within(domain, inside.trim()))
                    });
                (appears(&policy.matches) || labelled) && !appears(&policy.unless) && outside
            })
            .collect()
    }

    /// The admin tool whose binary is `process_name` (a file name or path).
    pub fn admin_tool(&self, process_name: &str) -> Option<&AdminTool> {
        let name = file_name(process_name).to_lowercase();
        self.document.known_good.admin_tools.iter().find(|tool| {
            tool.binaries
                .iter()
                .any(|binary| binary.to_lowercase() == name)
        })
    }

    /// Whether `country` (a code or a name) is one the organisation normally works from.
    pub fn usual_country(&self, country: &str) -> bool {
        self.document
            .organization
            .usual_countries
            .iter()
            .any(|usual| usual.eq_ignore_ascii_case(country.trim()))
    }

    /// The behaviours an allowance names (validated when the context was built).
    pub fn behaviours(names: &[String]) -> Vec<crate::behaviour::Behaviour> {
        names
            .iter()
            .filter_map(|name| crate::behaviour::Behaviour::parse(name))
            .collect()
    }

    /// Whether an IP address falls in any of `ranges` (single IPs or CIDRs as written).
    pub fn ip_in(ip: &str, ranges: &[String]) -> bool {
        let Ok(address) = ip.parse::<IpAddr>() else {
            return false;
        };
        ranges
            .iter()
            .filter_map(|range| parse_network(range))
            .any(|network| network.contains(&address))
    }

    /// Whether `host` is one of `hosts`: compared by short name, or matched by a pattern
    /// (`srv-web-*`, `*.build.example.com`; `*` is any run of characters, `?` one).
    pub fn host_in(host: &str, hosts: &[String]) -> bool {
        let short = short_host(host);
        let full = host.trim().to_lowercase();
        hosts.iter().any(|listed| {
            if is_pattern(listed) {
                let pattern = listed.trim().to_lowercase();
                glob_match(&pattern, &short) || glob_match(&pattern, &full)
            } else {
                short_host(listed) == short
            }
        })
    }

    /// Whether `user` is one of `users`, however either is qualified.
    pub fn user_in(user: &str, users: &[String]) -> bool {
        let lowered = user.to_lowercase();
        let base = user_base_name(&lowered);
        users.iter().any(|listed| {
            let listed = listed.trim().to_lowercase();
            listed == lowered || user_base_name(&listed) == base
        })
    }
}

/// A problem for each name that is not one of the behaviours an allowance may name.
/// A country must be written as its ISO 3166 alpha-2 code, as alerts carry it.
fn country_problem(country: &str, what: &str) -> Option<String> {
    let code = country.trim();
    let is_code = code.len() == 2 && code.bytes().all(|byte| byte.is_ascii_alphabetic());
    (!is_code).then(|| {
        format!(
            "{what}: '{}' is not an ISO 3166 alpha-2 country code (write GB, US, DE, ...)",
            crate::truncate(code, 40)
        )
    })
}

fn unknown_behaviours(names: &[String], what: &str) -> Vec<String> {
    names
        .iter()
        .filter(|name| crate::behaviour::Behaviour::parse(name).is_none())
        .map(|name| {
            format!(
                "{what}: behaviours: '{name}' is not one of {}",
                crate::behaviour::Behaviour::ALL
                    .iter()
                    .map(|behaviour| behaviour.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect()
}

/// Reads an intel entry of the document into an indicator, normalised exactly as feed
/// indicators are (sleuth-intel's rules), so both match the same entities.
fn intel_from_entry(entry: &IntelEntry) -> Result<Intel, String> {
    let value = entry.value.trim();
    let (kind, normalised) = sleuth_intel::normalize_indicator(entry.kind.as_deref(), value)
        .map_err(|rejected| format!("intel '{value}': {rejected}"))?;
    // A category is one of the fixed list, or a feed's wording that maps onto one (STIX and
    // MISP vocabularies); anything else is refused rather than read as "other".
    let category = match entry.category.as_deref() {
        None => "other".to_string(),
        Some(category) => {
            let lowered = category.trim().to_ascii_lowercase();
            if sleuth_intel::CATEGORIES.contains(&lowered.as_str()) {
                lowered
            } else {
                sleuth_intel::categorize(category)
                    .ok_or_else(|| {
                        format!(
                            "intel '{value}': category '{}' is not one of {}",
                            crate::truncate(category, 60),
                            sleuth_intel::CATEGORIES.join(", ")
                        )
                    })?
                    .to_string()
            }
        }
    };
    let confidence = match entry.confidence {
        None => sleuth_intel::DEFAULT_CONFIDENCE,
        Some(number) if number.fract() == 0.0 && (0.0..=100.0).contains(&number) => {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let whole = number as u8;
            whole
        }
        Some(number) => {
            return Err(format!(
                "intel '{value}': confidence must be a whole number from 0 to 100, not {number}"
            ));
        }
    };
    Ok(Intel {
        kind: IntelKind::from(kind),
        value: normalised,
        category,
        description: entry.description.clone(),
        source: entry.source.clone(),
        confidence,
    })
}

impl From<sleuth_intel::IndicatorKind> for IntelKind {
    fn from(kind: sleuth_intel::IndicatorKind) -> IntelKind {
        use sleuth_intel::IndicatorKind as Feed;
        match kind {
            Feed::Ip => IntelKind::Ip,
            Feed::IpNetwork => IntelKind::Network,
            Feed::Domain => IntelKind::Domain,
            Feed::Url => IntelKind::Url,
            Feed::Email => IntelKind::Email,
            Feed::HashMd5 | Feed::HashSha1 | Feed::HashSha256 => IntelKind::Hash,
        }
    }
}

impl From<sleuth_intel::Indicator> for Intel {
    fn from(indicator: sleuth_intel::Indicator) -> Intel {
        Intel {
            kind: IntelKind::from(indicator.kind),
            value: indicator.value,
            category: indicator.category.unwrap_or_else(|| "other".to_string()),
            description: indicator.description,
            source: indicator.source,
            confidence: indicator.confidence,
        }
    }
}

/// A single address or a CIDR range.
fn parse_network(text: &str) -> Option<IpNet> {
    let text = text.trim();
    if let Ok(network) = text.parse::<IpNet>() {
        return Some(network.trunc());
    }
    text.parse::<IpAddr>().ok().map(IpNet::from)
}

/// Whether `name` can name a Kubernetes cluster: what EKS, GKE and AKS allow between them
/// (letters, digits, '-' and '_', at most 100 characters).
fn is_cluster_name(name: &str) -> bool {
    let name = name.trim();
    !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|character| character.is_ascii_alphanumeric() || matches!(character, '-' | '_'))
}

/// Whether a listed host is a pattern rather than a name.
fn is_pattern(listed: &str) -> bool {
    listed.contains(['*', '?'])
}

/// Shell-style matching of a lower-case name: `*` any run of characters, `?` one. Linear in
/// the name for the patterns operators write (backtracking only to the last `*`).
fn glob_match(pattern: &str, name: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let name: Vec<char> = name.chars().collect();
    let (mut at_pattern, mut at_name) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while at_name < name.len() {
        match pattern.get(at_pattern) {
            Some('*') => {
                star = Some((at_pattern, at_name));
                at_pattern += 1;
            }
            Some(&wanted) if wanted == '?' || wanted == name[at_name] => {
                at_pattern += 1;
                at_name += 1;
            }
            _ => match star {
                Some((star_pattern, star_name)) => {
                    at_pattern = star_pattern + 1;
                    at_name = star_name + 1;
                    star = Some((star_pattern, star_name + 1));
                }
                None => return false,
            },
        }
    }
    pattern[at_pattern..].iter().all(|rest| *rest == '*')
}

/// The host name before its first dot, lower-cased: "WKS-0231.corp.example.com" is "wks-0231".
fn short_host(host: &str) -> String {
    let lowered = host.trim().to_lowercase();
    if lowered.parse::<IpAddr>().is_ok() {
        return lowered;
    }
    lowered.split('.').next().unwrap_or_default().to_string()
}

/// `text` lower-cased, borrowed when it is lower-case already (entity values mostly are).
pub(crate) fn lower_case(text: &str) -> std::borrow::Cow<'_, str> {
    let unchanged = if text.is_ascii() {
        !text.bytes().any(|byte| byte.is_ascii_uppercase())
    } else {
        text.chars().all(|character| {
            let mut lower = character.to_lowercase();
            lower.next() == Some(character) && lower.next().is_none()
        })
    };
    if unchanged {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(text.to_lowercase())
    }
}

/// The last component of a path ("C:\\Tools\\PsExec64.exe" -> "PsExec64.exe").
pub fn file_name(path: &str) -> &str {
    path.rsplit(['\\', '/']).next().unwrap_or(path)
}

/// "a.b.evil.com", "b.evil.com", "evil.com" (never the bare public suffix).
fn domain_and_parents(domain: &str) -> impl Iterator<Item = &str> {
    let registrable_len = entities::registrable_domain(domain).map_or(domain.len(), str::len);
    std::iter::successors(Some(domain), |current| {
        current.split_once('.').map(|(_, rest)| rest)
    })
    .take_while(move |candidate| candidate.len() >= registrable_len)
}

/// Whether `domain` is `listed` or one of its subdomains.
fn domain_within(domain: &str, listed: &str) -> bool {
    within_normalised(domain, &normalised_domain(listed))
}

/// Whether the cloud resource `value` is the listed resource `id` (both lower-case): named
/// in full, by the last part of the listed name (`example-payroll-exports` for its ARN), or
/// lying inside it, where the listed id is a whole part of the name with more after it (a
/// dataset `//bigquery.googleapis.com/projects/example-data/datasets/x` inside the project
/// `example-data`, an object inside its bucket, a pod inside its cluster). What lies inside
/// a crown jewel is one too.
fn resource_within(value: &str, id: &str) -> bool {
    let named = id == value
        || id
            .strip_suffix(value)
            .is_some_and(|head| head.ends_with(':') || head.ends_with('/'));
    let inside = !id.is_empty()
        && value.match_indices(id).any(|(start, _)| {
            let before = value[..start].chars().next_back();
            let after = value[start + id.len()..].chars().next();
            matches!(before, None | Some('/' | ':')) && after == Some('/')
        });
    named || inside
}

/// `domain_within` for a listed domain already normalised (`normalised_domain`).
fn within_normalised(domain: &str, listed: &str) -> bool {
    !listed.is_empty()
        && (domain == listed
            || domain
                .strip_suffix(listed)
                .is_some_and(|head| head.ends_with('.')))
}

/// A listed domain as `domain_within` compares it: trimmed, any `*.` dropped, lower-cased.
fn normalised_domain(listed: &str) -> String {
    listed.trim().trim_start_matches("*.").to_lowercase()
}

/// A list of domains normalised for `within_normalised`, empty ones left out.
fn listed_domains(domains: &[String]) -> Vec<String> {
    domains
        .iter()
        .map(|listed| normalised_domain(listed))
        .filter(|listed| !listed.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus_context() -> Context {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../corpus/context/organization.toml"
        ))
        .unwrap();
        Context::build(ContextDocument::from_toml(&text).unwrap()).unwrap()
    }

    fn about<'c>(context: &'c Context, kind: EntityKind, value: &str) -> Knowledge<'c> {
        context.about(&Entity::new(kind, value))
    }

    /// The problems `build` lists for a document, joined.
    fn refused(text: &str) -> String {
        let document = ContextDocument::from_toml(text).expect("the document reads");
        match Context::build(document) {
            Ok(_) => String::new(),
            Err(ContextErrors(problems)) => problems.join("\n"),
        }
    }

    #[test]
    fn the_checker_is_strict_where_the_document_promises() {
        for (confidence, shown) in [
            ("500", "500"),
            ("200", "200"),
            ("-1", "-1"),
            ("72.5", "72.5"),
        ] {
            let problem = refused(&format!(
                "[[intel]]\nvalue = \"203.0.113.9\"\nconfidence = {confidence}\n"
            ));
            assert!(
                problem.contains(
                    "intel '203.0.113.9': confidence must be a whole number from 0 to 100"
                ) && problem.contains(shown),
                "{confidence}: {problem}"
            );
        }
        let problem = refused("[[intel]]\nvalue = \"203.0.113.9\"\ncategory = \"made-up stuff\"\n");
        assert!(
            problem.contains("category 'made-up stuff' is not one of c2,"),
            "{problem}"
        );
        let problem =
            refused("[[identities]]\nuser = \"a@example.com\"\nlocation = \"United Kingdom\"\n");
        assert!(
            problem.contains(
                "identities 'a@example.com': location: 'United Kingdom' is not an ISO 3166"
            ),
            "{problem}"
        );
        let problem = refused("[organization]\nusual_countries = [\"GB\", \"Germany\"]\n");
        assert!(
            problem.contains("'Germany'") && !problem.contains("'GB'"),
            "{problem}"
        );
        let problem = refused("[[service_accounts]]\nuser = \"svc-x\"\nnever = [\"flying\"]\n");
        assert!(
            problem.contains("service_accounts 'svc-x': never: behaviours: 'flying'"),
            "{problem}"
        );
        // What the docs allow loads: a whole confidence, a category a feed's words map onto,
        // codes, known behaviours.
        assert_eq!(
            refused(
                "[organization]\nusual_countries = [\"gb\"]\n[[intel]]\nvalue = \"203.0.113.9\"\nconfidence = 90\ncategory = \"Tor exit node\"\n\
                 [[identities]]\nuser = \"a@example.com\"\nlocation = \"US\"\nnever = [\"privilege_grant\"]\n"
            ),
            ""
        );
        // A confidence is written back as the whole number it was.
        let document =
            ContextDocument::from_toml("[[intel]]\nvalue = \"203.0.113.9\"\nconfidence = 90\n")
                .unwrap();
        assert!(
            document.to_toml().contains("confidence = 90\n"),
            "{}",
            document.to_toml()
        );
    }

    #[test]
    fn lower_casing_borrows_what_is_lower_case_already_and_lowers_the_rest() {
        for (text, lowered, borrowed) in [
            ("corp\\r.patel", "corp\\r.patel", true),
            ("CORP\\R.Patel", "corp\\r.patel", false),
            ("müller", "müller", true),
            ("MÜLLER", "müller", false),
            // A title-case letter is not upper case, yet it has a lower case.
            ("ǅemal", "ǆemal", false),
        ] {
            let result = lower_case(text);
            assert_eq!(result, lowered, "{text}");
            assert_eq!(
                matches!(result, std::borrow::Cow::Borrowed(_)),
                borrowed,
                "{text}"
            );
        }
        assert!(domain_within("mail.example.com", " *.Example.COM "));
        assert!(domain_within("example.com", "example.com"));
        assert!(!domain_within("badexample.com", "example.com"));
        assert!(!domain_within("example.com", "  "));
    }

    #[test]
    fn a_resource_inside_a_listed_one_is_that_one() {
        let project = "example-data-2718";
        assert!(resource_within(project, project));
        assert!(resource_within(
            "//bigquery.googleapis.com/projects/example-data-2718/datasets/sales",
            project
        ));
        assert!(resource_within(
            "arn:aws:s3:::example-payroll-exports/2026/03/salaries.csv",
            "arn:aws:s3:::example-payroll-exports"
        ));
        assert!(resource_within(
            "example-payroll-exports",
            "arn:aws:s3:::example-payroll-exports"
        ));
        // A longer name that merely starts or ends the same is another resource.
        assert!(!resource_within(
            "//bigquery.googleapis.com/projects/example-data-27180/datasets/sales",
            project
        ));
        assert!(!resource_within(
            "//bigquery.googleapis.com/projects/old-example-data-2718/datasets/sales",
            project
        ));
        assert!(!resource_within("example-data-2718", ""));
    }

    #[test]
    fn host_patterns_match_as_names_do() {
        let context = Context::build(
            ContextDocument::from_toml(
                "[[scanners]]\nname = \"fleet\"\nhosts = [\"scan-??\"]\n[[assets]]\nhost = \"srv-web-*\"\nrole = \"web server\"\n\
                 [soc_tests]\nhosts = [\"*.purple.example.com\"]\n",
            )
            .unwrap(),
        )
        .unwrap();
        assert!(
            about(&context, EntityKind::Host, "SRV-WEB-07.corp.example.com")
                .asset
                .is_some()
        );
        assert!(
            about(&context, EntityKind::Host, "srv-db-01")
                .asset
                .is_none()
        );
        assert!(
            about(&context, EntityKind::Host, "scan-01")
                .scanner
                .is_some()
        );
        assert!(
            about(&context, EntityKind::Host, "scan-001")
                .scanner
                .is_none()
        );
        assert!(about(&context, EntityKind::Host, "wks-1.purple.example.com").soc_test);
        assert!(!about(&context, EntityKind::Host, "wks-1.example.com").soc_test);
        assert!(Context::host_in("srv-web-12", &["srv-web-*".to_string()]));
        assert!(Context::host_in(
            "srv-web-12",
            &["SRV-WEB-12.corp".to_string()]
        ));
        assert!(!Context::host_in("srv-api-12", &["srv-web-*".to_string()]));
        assert!(glob_match("a*b*c", "axxbyyc") && !glob_match("a*b*c", "axxbyy"));
    }

    #[test]
    fn addresses_are_placed_in_the_operators_network() {
        let context = corpus_context();
        let place = |ip: &str| about(&context, EntityKind::Ip, ip).place;
        assert_eq!(place("192.0.2.20"), Some(NetworkPlace::VpnEgress));
        assert_eq!(place("192.0.2.21"), Some(NetworkPlace::OfficeNat));
        assert_eq!(place("192.0.2.5"), Some(NetworkPlace::OwnPublic));
        assert_eq!(place("10.20.30.40"), Some(NetworkPlace::Internal));
        assert_eq!(place("203.0.113.9"), Some(NetworkPlace::Public));
        let pci = about(&context, EntityKind::Ip, "10.50.1.2");
        assert_eq!(
            pci.segment.map(|segment| segment.name.as_str()),
            Some("Cardholder data environment")
        );
        assert!(pci.crown_jewel().is_some());
    }

    #[test]
    fn intel_matches_exact_values_subdomains_and_sender_domains() {
        let context = corpus_context();
        assert_eq!(
            about(&context, EntityKind::Ip, "203.0.113.50").intel[0].category,
            "c2"
        );
        assert_eq!(
            about(&context, EntityKind::Domain, "x.cdn.update-check.net")
                .intel
                .len(),
            1
        );
        assert_eq!(
            about(
                &context,
                EntityKind::Email,
                "it-support@micros0ft-authenticate.com"
            )
            .intel[0]
                .category,
            "phishing"
        );
        assert!(
            about(&context, EntityKind::Ip, "203.0.113.51")
                .intel
                .is_empty()
        );
        assert!(!about(&context, EntityKind::Ip, "203.0.113.66").intel[0].proves_malice());
    }

    #[test]
    fn people_are_found_however_a_tool_qualifies_them() {
        let context = corpus_context();
        for name in [
            "r.patel@example.com",
            "corp\\r.patel",
            "r.patel",
            "example\\r.patel",
        ] {
            let knowledge = about(&context, EntityKind::User, name);
            assert_eq!(
                knowledge.identity.map(|identity| identity.user.as_str()),
                Some("r.patel@example.com"),
                "{name}"
            );
            assert!(
                knowledge
                    .crown_jewel()
                    .is_some_and(|reason| reason.contains("VIP"))
            );
        }
        assert!(
            about(&context, EntityKind::User, "corp\\svc-backup")
                .service_account
                .is_some()
        );
        assert!(
            about(&context, EntityKind::User, "CORP\\svc-sql-legacy")
                .honeytoken
                .is_some()
        );
    }

    #[test]
    fn hosts_match_by_short_name_and_scanners_by_address() {
        let context = corpus_context();
        assert!(
            about(&context, EntityKind::Host, "dc-01.corp.example.com")
                .asset
                .is_some_and(|asset| asset.critical)
        );
        assert!(
            about(&context, EntityKind::Ip, "10.9.9.10")
                .scanner
                .is_some()
        );
        assert!(about(&context, EntityKind::Host, "soc-test-01").soc_test);
        assert!(
            context
                .soc_test_marker_in("invoke-atomictest t1003 (atomic red team)")
                .is_some()
        );
        assert!(context.admin_tool("C:\\Tools\\PsExec64.exe").is_some());
    }

    #[test]
    fn phishing_simulation_and_partners_are_recognised() {
        let context = corpus_context();
        assert!(
            about(
                &context,
                EntityKind::Email,
                "awareness@phishsim-training.com"
            )
            .phishing_simulation
        );
        assert!(about(&context, EntityKind::Ip, "198.51.100.200").phishing_simulation);
        assert!(
            about(
                &context,
                EntityKind::Email,
                "orders@northwind-logistics.com"
            )
            .partner_domain
        );
        assert!(about(&context, EntityKind::Email, "r.patel@example.com").own_domain);
    }

    #[test]
    fn an_address_outside_the_mail_domains_is_nobody_by_its_account_name_alone() {
        let context = corpus_context();
        let own = about(&context, EntityKind::Email, "r.patel@example.com");
        let identity = own
            .identity
            .expect("the organisation's own address is its person");
        let lookalike = about(&context, EntityKind::Email, "r.patel@exarnple.com");
        assert!(
            lookalike.identity.is_none(),
            "a lookalike domain named {}",
            identity.user
        );
        assert!(!lookalike.own_domain);
        // The account name alone, with no domain, still names the person.
        assert!(
            about(&context, EntityKind::User, "r.patel")
                .identity
                .is_some()
        );
    }

    #[test]
    fn every_bad_entry_is_reported_at_once() {
        let document = ContextDocument::from_toml(
            "[network]\ninternal = [\"10.0.0.0/8\", \"10.0.0.300\"]\n[[intel]]\nkind = \"ip\"\nvalue = \"1.2.3\"\n[[policies]]\nstatement = \"x\"\neffect = \"maybe\"\n",
        )
        .unwrap();
        let ContextErrors(problems) = Context::build(document).expect_err("three problems");
        assert_eq!(problems.len(), 3, "{problems:?}");
    }

    #[test]
    fn a_policy_applies_on_its_terms_or_labels_unless_lifted_and_only_outside_its_domains() {
        let context = Context::build(
            ContextDocument::from_toml(
                r#"
[[policies]]
statement = "Owner is never granted outside example.com."
effect = "prohibited"
matches = ["roles/owner"]
outside = ["example.com"]

[[policies]]
statement = "Root use needs a change ticket."
effect = "prohibited"
matches = ["sudo to root"]
unless = ["chg0"]

[[policies]]
statement = "Incidents labelled test are the detection team's rehearsals."
effect = "authorized"
labels = ["Test"]
"#,
            )
            .expect("reads"),
        )
        .expect("valid");
        let statements = |text: &str, tags: &[&str], addresses: &[&str]| -> Vec<String> {
            let tags: Vec<String> = tags.iter().map(|tag| (*tag).to_string()).collect();
            context
                .policies_matching(text, &tags, addresses)
                .iter()
                .map(|policy| policy.statement.chars().take(5).collect())
                .collect()
        };
        let grant = "setiampolicy roles/owner";
        assert_eq!(
            statements(grant, &[], &["a@example.com", "x@gmail.com"]),
            ["Owner"]
        );
        assert!(statements(grant, &[], &["a@example.com", "b@eu.example.com"]).is_empty());
        assert!(statements(grant, &[], &["a@example.com.evil.net"]).len() == 1);
        assert_eq!(statements("sudo to root on db-01", &[], &[]), ["Root "]);
        assert!(statements("sudo to root on db-01 for chg0031822", &[], &[]).is_empty());
        assert_eq!(statements("anything", &["test"], &[]), ["Incid"]);
        assert!(statements("a test of nothing", &["testing"], &[]).is_empty());
    }
}
