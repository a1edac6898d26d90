//! A realistic stream of alerts for the benchmarks, shaped like a security team's day
//! rather than like one alert repeated: the corpus's vendor alerts (`corpus/alerts`, one
//! directory per source) as templates, each copy its own alert; generic alerts whose
//! titles name rules from a long tail (a Zipf law over thousands of rule names) and the
//! host or user they fired on; a population of users and hosts, with a few addresses seen
//! in almost every alert (proxies, resolvers, a scanner, a jump host); tenants; storms of
//! one rule; and sizes from 1 KB to 50 KB. Seeded: the same seed and settings give the
//! same alerts in the same order, so runs compare.
#![forbid(unsafe_code)]

use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};

/// What the stream is made of.
#[derive(Debug, Clone)]
pub struct Settings {
    pub seed: u64,
    /// Distinct rule names of generic alerts, drawn by a Zipf law of exponent `zipf_s`.
    pub rules: usize,
    pub zipf_s: f64,
    pub tenants: usize,
    pub users: usize,
    pub hosts: usize,
    /// The share of alerts that are generic (the rest are vendor templates).
    pub generic_share: f64,
    /// The share of alerts naming one of the addresses seen everywhere.
    pub everywhere_share: f64,
    /// A storm starts after every `storm_every` alerts (0: none) and interleaves
    /// `storm_size` alerts of one rule, one source and one tenant with the rest.
    pub storm_every: u64,
    pub storm_size: u64,
    /// Alert sizes are drawn log-uniformly between these (bytes of padding added).
    pub min_bytes: usize,
    pub max_bytes: usize,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            seed: 28,
            rules: 5_000,
            zipf_s: 1.1,
            tenants: 50,
            users: 4_000,
            hosts: 6_000,
            generic_share: 0.4,
            everywhere_share: 0.3,
            storm_every: 50_000,
            storm_size: 5_000,
            min_bytes: 1_024,
            max_bytes: 50 * 1_024,
        }
    }
}

/// One alert of the stream, ready to post.
#[derive(Debug, Clone)]
pub struct Alert {
    /// Its position in the stream, from 0.
    pub sequence: u64,
    /// The corpus directory it was copied from, or `generic`.
    pub source: String,
    /// The parser to name (`schema_key`), when the template names one.
    pub schema_key: Option<String>,
    /// Which tenant it belongs to, from 0.
    pub tenant: usize,
    /// Whether it belongs to a storm.
    pub storm: bool,
    /// The rank of its rule among the generic alerts' rules (`rule_name`), if generic.
    pub rule: Option<usize>,
    pub body: Value,
}

/// A vendor alert of the corpus.
#[derive(Debug, Clone)]
struct Template {
    source: String,
    schema_key: Option<String>,
    alert: Value,
}

/// The addresses seen in almost every alert.
const EVERYWHERE: &[&str] = &[
    "10.0.0.53",  // resolver
    "10.0.0.54",  // resolver
    "10.0.8.8",   // proxy
    "10.0.8.9",   // proxy
    "10.9.9.9",   // vulnerability scanner
    "10.0.20.15", // jump host
];

const VERBS: &[&str] = &[
    "Suspicious",
    "Unusual",
    "Malicious",
    "Rare",
    "Blocked",
    "Possible",
    "Anomalous",
    "Repeated",
];
const ACTIONS: &[&str] = &[
    "PowerShell download",
    "credential dumping",
    "login",
    "service creation",
    "scheduled task",
    "DNS query",
    "outbound connection",
    "mailbox rule",
    "privilege escalation",
    "registry run key",
    "file encryption",
    "token use",
    "process injection",
    "archive upload",
    "remote execution",
];
const PLACES: &[&str] = &[
    "on {host}",
    "by {user}",
    "from {ip} to {host}",
    "on {host} as {user}",
    "for {user} from {ip}",
];

/// The stream itself: an iterator of [`Alert`]s.
#[derive(Debug)]
pub struct Workload {
    settings: Settings,
    templates: Vec<Template>,
    rng: StdRng,
    /// Cumulative Zipf weights of the rules, for a binary search.
    rule_weights: Vec<f64>,
    tenant_weights: Vec<f64>,
    sequence: u64,
    storm: Option<Storm>,
}

#[derive(Debug, Clone, Copy)]
struct Storm {
    rule: usize,
    tenant: usize,
    left: u64,
}

/// Why a workload cannot be made.
#[derive(Debug)]
pub enum Error {
    Read(std::path::PathBuf, std::io::Error),
    Json(std::path::PathBuf, serde_json::Error),
    NoTemplates,
}

impl std::fmt::Display for Error {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Read(path, error) => {
                write!(formatter, "cannot read {}: {error}", path.display())
            }
            Error::Json(path, error) => {
                write!(formatter, "{} is not JSON: {error}", path.display())
            }
            Error::NoTemplates => write!(formatter, "the corpus directory holds no alerts"),
        }
    }
}

impl std::error::Error for Error {}

impl Workload {
    /// The stream over the corpus at `corpus` (a directory of one directory per source,
    /// each of JSON files holding `alert` and, optionally, `schema_key`).
    pub fn new(corpus: &Path, settings: Settings) -> Result<Workload, Error> {
        let templates = load_templates(corpus)?;
        if templates.is_empty() {
            return Err(Error::NoTemplates);
        }
        let rule_weights = cumulative(
            (1..=settings.rules.max(1)).map(|rank| 1.0 / (rank as f64).powf(settings.zipf_s)),
        );
        // Tenants differ in size too: a few large, many small.
        let tenant_weights =
            cumulative((1..=settings.tenants.max(1)).map(|rank| 1.0 / (rank as f64).sqrt()));
        Ok(Workload {
            rng: StdRng::seed_from_u64(settings.seed),
            settings,
            templates,
            rule_weights,
            tenant_weights,
            sequence: 0,
            storm: None,
        })
    }

    /// The distinct sources of the templates, sorted.
    pub fn sources(&self) -> Vec<&str> {
        let mut sources: Vec<&str> = self.templates.iter().map(|t| t.source.as_str()).collect();
        sources.dedup();
        sources
    }

    fn next_alert(&mut self) -> Alert {
        let sequence = self.sequence;
        self.sequence += 1;
        let settings = &self.settings;
        if settings.storm_every > 0
            && sequence > 0
            && sequence.is_multiple_of(settings.storm_every)
            && self.storm.is_none()
        {
            self.storm = Some(Storm {
                rule: self.rng.random_range(0..settings.rules.max(1)),
                tenant: pick(&self.tenant_weights, &mut self.rng),
                left: settings.storm_size,
            });
        }
        // A storm's alerts are every other one while it lasts.
        if let Some(storm) = self.storm.as_mut().filter(|_| sequence.is_multiple_of(2)) {
            storm.left -= 1;
            let (rule, tenant) = (storm.rule, storm.tenant);
            if storm.left == 0 {
                self.storm = None;
            }
            return self.generic(sequence, rule, tenant, true);
        }
        let tenant = pick(&self.tenant_weights, &mut self.rng);
        if self
            .rng
            .random_bool(self.settings.generic_share.clamp(0.0, 1.0))
        {
            let rule = pick(&self.rule_weights, &mut self.rng);
            self.generic(sequence, rule, tenant, false)
        } else {
            self.vendor(sequence, tenant)
        }
    }

    /// A generic alert of rule `rule`: a title naming the rule and what it fired on.
    fn generic(&mut self, sequence: u64, rule: usize, tenant: usize, storm: bool) -> Alert {
        let host = format!(
            "wks-{:04}",
            self.rng.random_range(0..self.settings.hosts.max(1))
        );
        let user = format!(
            "user{:04}",
            self.rng.random_range(0..self.settings.users.max(1))
        );
        let ip = self.address();
        let place = PLACES[rule % PLACES.len()]
            .replace("{host}", &host.to_uppercase())
            .replace("{user}", &user)
            .replace("{ip}", &ip);
        let title = format!("{} {place}", rule_name(rule));
        let severity = ["low", "medium", "high", "critical"][rule % 4];
        let mut body = json!({
            "title": title,
            "severity": severity,
            "host": host,
            "user": user,
            "src_ip": ip,
            "event_id": format!("wl-{}-{sequence}", self.settings.seed),
            "tenant": tenant_name(tenant),
        });
        self.pad(&mut body);
        Alert {
            sequence,
            source: "generic".into(),
            schema_key: None,
            tenant,
            storm,
            rule: Some(rule),
            body,
        }
    }

    /// A copy of a vendor alert of the corpus, its identifiers made its own.
    fn vendor(&mut self, sequence: u64, tenant: usize) -> Alert {
        let template = &self.templates[self.rng.random_range(0..self.templates.len())];
        let mut alert = template.alert.clone();
        let suffix = format!("-wl{}-{sequence}", self.settings.seed);
        make_identifiers_unique(&mut alert, &suffix, (sequence + 1) << 32);
        let (source, schema_key) = (template.source.clone(), template.schema_key.clone());
        self.pad(&mut alert);
        Alert {
            sequence,
            source,
            schema_key,
            tenant,
            storm: false,
            rule: None,
            body: alert,
        }
    }

    /// An address: one of those seen everywhere, or one of a large internal range.
    fn address(&mut self) -> String {
        if self
            .rng
            .random_bool(self.settings.everywhere_share.clamp(0.0, 1.0))
        {
            EVERYWHERE[self.rng.random_range(0..EVERYWHERE.len())].to_string()
        } else {
            let host: u32 = self.rng.random_range(0..65_536);
            format!(
                "10.{}.{}.{}",
                100 + host / 65_536,
                (host / 256) % 256,
                host % 256
            )
        }
    }

    /// Adds a field of filler (a captured event, as sources attach) so that the alert's
    /// size is drawn log-uniformly between the settings' bounds.
    fn pad(&mut self, alert: &mut Value) {
        let (low, high) = (
            self.settings.min_bytes.max(1) as f64,
            self.settings.max_bytes.max(self.settings.min_bytes.max(1)) as f64,
        );
        let target = (low.ln() + self.rng.random::<f64>() * (high.ln() - low.ln())).exp();
        let current = alert.to_string().len();
        let missing = (target as usize).saturating_sub(current + 32);
        if let Value::Object(fields) = alert {
            let mut filler = String::with_capacity(missing);
            while filler.len() < missing {
                filler.push_str(FILLER_WORDS[self.rng.random_range(0..FILLER_WORDS.len())]);
                filler.push(' ');
            }
            filler.truncate(missing);
            fields.insert("raw_event".into(), Value::String(filler));
        }
    }
}

impl Iterator for Workload {
    type Item = Alert;

    fn next(&mut self) -> Option<Alert> {
        Some(self.next_alert())
    }
}

const FILLER_WORDS: &[&str] = &[
    "process", "parent", "image", "loaded", "module", "registry", "value", "written", "network",
    "session", "opened", "closed", "bytes", "sent", "received", "handle", "granted", "access",
];

/// The rule name of rank `rule`: unique per rank, read like a detection's name.
pub fn rule_name(rule: usize) -> String {
    let verb = VERBS[rule % VERBS.len()];
    let action = ACTIONS[(rule / VERBS.len()) % ACTIONS.len()];
    let variant = rule / (VERBS.len() * ACTIONS.len());
    if variant == 0 {
        format!("{verb} {action}")
    } else {
        format!("{verb} {action} variant {}", rule_variant_name(variant))
    }
}

/// Letters, not digits, so that the title's type keeps the variant.
fn rule_variant_name(mut variant: usize) -> String {
    let mut name = String::new();
    loop {
        name.push(char::from(b'a' + (variant % 26) as u8));
        variant /= 26;
        if variant == 0 {
            return name;
        }
    }
}

/// The name of tenant `tenant`.
pub fn tenant_name(tenant: usize) -> String {
    format!("tenant-{tenant:02}")
}

fn cumulative(weights: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut total = 0.0;
    weights
        .map(|weight| {
            total += weight;
            total
        })
        .collect()
}

/// An index drawn with the weights whose running sums are `cumulative`.
fn pick(cumulative: &[f64], rng: &mut StdRng) -> usize {
    let total = cumulative.last().copied().unwrap_or(0.0);
    let point = rng.random::<f64>() * total;
    cumulative
        .partition_point(|sum| *sum <= point)
        .min(cumulative.len().saturating_sub(1))
}

/// Appends `suffix` to every string under a key that names an identifier (`id`, `*Id`,
/// `*_id`, `uuid`, `guid`, `*key`, a resource `name`), so that no two copies of a template are the same
/// alert to the dedupe.
fn make_identifiers_unique(value: &mut Value, suffix: &str, offset: u64) {
    match value {
        Value::Object(fields) => {
            for (key, field) in fields.iter_mut() {
                match field {
                    // A resource name is its identifier too (`organizations/…/findings/…`).
                    Value::String(text)
                        if names_identifier(key) || (key == "name" && text.contains('/')) =>
                    {
                        text.push_str(suffix);
                    }
                    // Numbered incidents (`incidentNumber`, `alertId`: 4901).
                    Value::Number(number)
                        if names_identifier(key)
                            || key.to_ascii_lowercase().ends_with("number") =>
                    {
                        if let Some(original) = number.as_u64() {
                            *field = Value::from(original.wrapping_add(offset));
                        }
                    }
                    _ => make_identifiers_unique(field, suffix, offset),
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| make_identifiers_unique(item, suffix, offset)),
        _ => {}
    }
}

fn names_identifier(key: &str) -> bool {
    let lowered = key.to_ascii_lowercase();
    lowered.ends_with("id")
        || lowered.ends_with("ids")
        || lowered.contains("uuid")
        || lowered.contains("guid")
        || lowered.ends_with("key")
}

fn load_templates(corpus: &Path) -> Result<Vec<Template>, Error> {
    let mut templates = Vec::new();
    let read_dir = |path: &Path| -> Result<Vec<std::path::PathBuf>, Error> {
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .map_err(|error| Error::Read(path.to_path_buf(), error))?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .collect();
        entries.sort();
        Ok(entries)
    };
    for directory in read_dir(corpus)? {
        if !directory.is_dir() {
            continue;
        }
        let source = directory
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        for file in read_dir(&directory)? {
            if file.extension().is_none_or(|extension| extension != "json") {
                continue;
            }
            let text =
                std::fs::read_to_string(&file).map_err(|error| Error::Read(file.clone(), error))?;
            let document: Value =
                serde_json::from_str(&text).map_err(|error| Error::Json(file.clone(), error))?;
            let Some(Value::Object(alert)) = document.get("alert").cloned() else {
                continue;
            };
            templates.push(Template {
                source: source.clone(),
                schema_key: document
                    .get("schema_key")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                alert: Value::Object(Map::from_iter(alert)),
            });
        }
    }
    Ok(templates)
}
