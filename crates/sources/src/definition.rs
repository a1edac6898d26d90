//! A source as an admin declares it: what kind of system it is, how to ask it about each
//! kind of entity, and how its answer maps onto facts. Parsed and checked whole here
//! (`Definition::compile`), so that a bad definition is refused when it is written, never
//! when an investigation needs it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sleuth_domain::{EntityKind, FactKind, FactType, SourceKind};

use crate::extract::{Combine, FactRule};
use crate::template::Template;

/// The type-specific part of a source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Definition {
    HttpJson(HttpDefinition),
    Directory(DirectoryDefinition),
    Script(ScriptDefinition),
}

/// How long a source may take, how long its answers are kept, how often it may be asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// One lookup's time, token and retries included.
    pub timeout_seconds: f64,
    /// How long an answer (found or not found) is kept; failures are never kept.
    pub cache_ttl_seconds: u64,
    /// Calls per minute this source may receive from this process; 0: no limit.
    pub rate_limit_per_minute: u32,
    /// Consecutive failures that open the breaker.
    pub breaker_failures: u32,
    /// How long an open breaker stays open before one call may probe the source.
    pub breaker_cooldown_seconds: u64,
    /// At most this many entities of one alert are looked up in this source.
    pub max_entities_per_alert: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            timeout_seconds: 5.0,
            cache_ttl_seconds: 3600,
            rate_limit_per_minute: 0,
            breaker_failures: 3,
            breaker_cooldown_seconds: 30,
            max_entities_per_alert: 10,
        }
    }
}

impl Limits {
    pub fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout_seconds)
    }

    pub fn check(&self) -> Result<(), String> {
        if !(self.timeout_seconds.is_finite()
            && self.timeout_seconds > 0.0
            && self.timeout_seconds <= 60.0)
        {
            return Err("limits.timeout_seconds must be more than 0 and at most 60".into());
        }
        if self.cache_ttl_seconds > 30 * 24 * 3600 {
            return Err("limits.cache_ttl_seconds must be at most 2592000 (30 days)".into());
        }
        if self.breaker_failures == 0 {
            return Err("limits.breaker_failures must be at least 1".into());
        }
        if self.breaker_cooldown_seconds == 0 || self.breaker_cooldown_seconds > 3600 {
            return Err("limits.breaker_cooldown_seconds must be from 1 to 3600".into());
        }
        if self.max_entities_per_alert == 0 || self.max_entities_per_alert > 100 {
            return Err("limits.max_entities_per_alert must be from 1 to 100".into());
        }
        Ok(())
    }
}

/// A source that answers JSON over HTTP, declared instead of coded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpDefinition {
    /// What kind of system it is: the engine weighs a directory's word on an account, a
    /// threat-intelligence source's on a hash.
    pub source_kind: SourceKind,
    /// Scheme, host and path prefix that every lookup's `path` is appended to.
    pub base_url: String,
    #[serde(default)]
    pub auth: Auth,
    /// How to ask about each kind of entity (`ip`, `domain`, `hash_sha256`, `user`, ...).
    pub lookups: BTreeMap<String, Lookup>,
    /// HTTP statuses that mean "this entity is not known here".
    #[serde(default = "default_not_found_statuses")]
    pub not_found_statuses: Vec<u16>,
    /// A 200 answer that says "not known" in its body (abuse.ch's `query_status`).
    #[serde(default)]
    pub not_found_when: Option<Condition>,
    /// Where the vendor writes its error message (JSONPath), quoted in a failure.
    #[serde(default)]
    pub error_message: Option<String>,
    /// How the answer maps onto facts.
    pub facts: Vec<FactDeclaration>,
}

fn default_not_found_statuses() -> Vec<u16> {
    vec![404]
}

/// How the source authenticates each call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Auth {
    #[default]
    None,
    /// A header holding a stored secret, after an optional prefix (`SSWS `, `Bearer `).
    Header {
        name: String,
        secret: String,
        #[serde(default)]
        prefix: String,
    },
    /// A query parameter holding a stored secret.
    Query { name: String, secret: String },
    /// OAuth 2.0 client credentials (RFC 6749 §4.4): a token from `token_url`, kept until
    /// shortly before it expires, sent as `Authorization: Bearer`.
    Oauth2ClientCredentials {
        token_url: String,
        client_id: String,
        /// The name of the stored secret holding the client secret.
        client_secret: String,
        #[serde(default)]
        scope: Option<String>,
    },
}

impl Auth {
    /// The names of the stored secrets it reads.
    pub fn secret_names(&self) -> Vec<&str> {
        match self {
            Auth::None => Vec::new(),
            Auth::Header { secret, .. } | Auth::Query { secret, .. } => vec![secret],
            Auth::Oauth2ClientCredentials { client_secret, .. } => vec![client_secret],
        }
    }
}

/// One request about one entity. Templates hold `{value}` (the entity's value), with an
/// optional filter: `{value|base64url}`, `{value|quoted}` (backslash before `'`, `"` and
/// `\`), `{value|odata}` (a doubled `'`), `{value|local}` (the account without its
/// domain). In a path the value is percent-encoded; in query and form values the URL's
/// own encoding applies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lookup {
    #[serde(default)]
    pub method: Method,
    pub path: String,
    #[serde(default)]
    pub query: BTreeMap<String, String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A form body (`application/x-www-form-urlencoded`).
    #[serde(default)]
    pub form: BTreeMap<String, String>,
    /// A JSON body; its string values are templates.
    #[serde(default)]
    pub json: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    #[default]
    Get,
    Post,
}

/// A test on the answer: the first value at `path` is one of `equals`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    pub path: String,
    pub equals: Vec<serde_json::Value>,
}

/// How one field of the answer becomes a fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactDeclaration {
    /// The fact's name (`malicious_votes`, `registered_at`, `account_enabled`, ...).
    pub fact: String,
    /// JSONPath (RFC 9535) to the value(s).
    pub path: String,
    /// How several matches combine: `first` (default), `all` (a list), `sum`, `count`.
    #[serde(default)]
    pub combine: Combine,
    /// Values mapped before use (`"SUSPENDED": false`); a value mapped to `null` is left
    /// out. A value not listed is taken as it is, or as `otherwise` when given, or left out
    /// when `only_mapped` is set.
    #[serde(default)]
    pub map: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub otherwise: Option<serde_json::Value>,
    #[serde(default)]
    pub only_mapped: bool,
    /// Only for these entity kinds (all when empty).
    #[serde(default)]
    pub for_kinds: Vec<String>,
}

/// A directory: LDAP or Active Directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectoryDefinition {
    /// `ldap://host:389` or `ldaps://host:636`.
    pub url: String,
    /// Upgrade an `ldap://` connection with StartTLS.
    #[serde(default)]
    pub starttls: bool,
    /// The account Sleuth binds as; anonymous when absent.
    #[serde(default)]
    pub bind_dn: Option<String>,
    /// The stored secret holding its password.
    #[serde(default)]
    pub bind_password_secret: Option<String>,
    pub base_dn: String,
    /// Which attribute names the directory speaks.
    #[serde(default)]
    pub flavour: DirectoryFlavour,
    /// Groups whose members are privileged (by common name, any case). The flavour's
    /// built-in administrators' groups are always included.
    #[serde(default)]
    pub privileged_groups: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DirectoryFlavour {
    /// `sAMAccountName`, `userPrincipalName`, `userAccountControl`, `memberOf`, ...
    #[default]
    ActiveDirectory,
    /// `uid`, `inetOrgPerson`, `groupOfNames`, `shadowExpire`, ...
    Openldap,
}

/// An enrichment script: Python in the response-action sandbox, given the entities,
/// printing JSON facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptDefinition {
    #[serde(default = "default_script_kind")]
    pub source_kind: SourceKind,
    /// The entity kinds it answers for.
    pub entity_kinds: Vec<String>,
    pub code: String,
    /// Network for the script: the public internet and the destinations the sandbox
    /// settings allow. Off unless set.
    #[serde(default)]
    pub allow_network: bool,
    /// Stored secrets the script receives as `secrets`.
    #[serde(default)]
    pub secret_names: Vec<String>,
}

fn default_script_kind() -> SourceKind {
    SourceKind::Other
}

/// A source checked and ready to ask.
#[derive(Debug, Clone)]
pub enum Compiled {
    Http(Box<CompiledHttp>),
    Directory(DirectoryDefinition),
    Script(CompiledScript),
}

#[derive(Debug, Clone)]
pub struct CompiledHttp {
    pub source_kind: SourceKind,
    pub base_url: url::Url,
    pub auth: Auth,
    pub lookups: BTreeMap<EntityKind, CompiledLookup>,
    pub not_found_statuses: Vec<u16>,
    pub not_found_when: Option<(serde_json_path::JsonPath, Vec<serde_json::Value>)>,
    pub error_message: Option<serde_json_path::JsonPath>,
    pub facts: Vec<FactRule>,
}

#[derive(Debug, Clone)]
pub struct CompiledLookup {
    pub method: Method,
    pub path: Template,
    pub query: Vec<(String, Template)>,
    pub headers: Vec<(String, Template)>,
    pub form: Vec<(String, Template)>,
    pub json: Option<serde_json::Value>,
}

#[derive(Debug, Clone)]
pub struct CompiledScript {
    pub source_kind: SourceKind,
    pub entity_kinds: Vec<EntityKind>,
    pub definition: ScriptDefinition,
}

impl Compiled {
    /// The entity kinds this source answers for.
    pub fn entity_kinds(&self) -> Vec<EntityKind> {
        match self {
            Compiled::Http(http) => http.lookups.keys().copied().collect(),
            Compiled::Directory(_) => vec![EntityKind::User, EntityKind::Email, EntityKind::Host],
            Compiled::Script(script) => script.entity_kinds.clone(),
        }
    }

    pub fn source_kind(&self) -> SourceKind {
        match self {
            Compiled::Http(http) => http.source_kind,
            Compiled::Directory(_) => SourceKind::Directory,
            Compiled::Script(script) => script.source_kind,
        }
    }

    /// The names of the stored secrets it reads.
    pub fn secret_names(&self) -> Vec<String> {
        match self {
            Compiled::Http(http) => http
                .auth
                .secret_names()
                .into_iter()
                .map(str::to_string)
                .collect(),
            Compiled::Directory(directory) => {
                directory.bind_password_secret.iter().cloned().collect()
            }
            Compiled::Script(script) => script.definition.secret_names.clone(),
        }
    }
}

impl Definition {
    /// Checks the whole definition; the error names the field and what is allowed.
    pub fn compile(&self) -> Result<Compiled, String> {
        match self {
            Definition::HttpJson(http) => {
                compile_http(http).map(|http| Compiled::Http(Box::new(http)))
            }
            Definition::Directory(directory) => {
                let url = url::Url::parse(&directory.url)
                    .map_err(|error| format!("url: not a URL ({error})"))?;
                if !matches!(url.scheme(), "ldap" | "ldaps") {
                    return Err("url: must start with ldap:// or ldaps://".into());
                }
                if directory.starttls && url.scheme() == "ldaps" {
                    return Err("starttls: an ldaps:// URL is already encrypted".into());
                }
                if directory.base_dn.trim().is_empty() {
                    return Err("base_dn: required (for example dc=corp,dc=example)".into());
                }
                if directory.bind_dn.is_some() != directory.bind_password_secret.is_some() {
                    return Err(
                        "bind_dn and bind_password_secret: give both, or neither for an \
                         anonymous bind"
                            .into(),
                    );
                }
                Ok(Compiled::Directory(directory.clone()))
            }
            Definition::Script(script) => {
                if script.entity_kinds.is_empty() {
                    return Err("entity_kinds: name at least one entity kind".into());
                }
                let entity_kinds = script
                    .entity_kinds
                    .iter()
                    .map(|kind| entity_kind(kind, "entity_kinds"))
                    .collect::<Result<Vec<_>, _>>()?;
                if script.code.trim().is_empty() {
                    return Err("code: the script is empty".into());
                }
                Ok(Compiled::Script(CompiledScript {
                    source_kind: script.source_kind,
                    entity_kinds,
                    definition: script.clone(),
                }))
            }
        }
    }
}

fn entity_kind(text: &str, field: &str) -> Result<EntityKind, String> {
    EntityKind::parse(text).ok_or_else(|| {
        format!(
            "{field}: '{}' is not an entity kind; allowed: {}",
            text.chars().take(60).collect::<String>(),
            EntityKind::ALL
                .iter()
                .map(|kind| kind.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

fn json_path(text: &str, field: &str) -> Result<serde_json_path::JsonPath, String> {
    serde_json_path::JsonPath::parse(text)
        .map_err(|error| format!("{field}: not a JSONPath (RFC 9535) query: {error}"))
}

fn compile_http(http: &HttpDefinition) -> Result<CompiledHttp, String> {
    let base_url = url::Url::parse(&http.base_url)
        .map_err(|error| format!("base_url: not a URL ({error})"))?;
    if !matches!(base_url.scheme(), "http" | "https") {
        return Err("base_url: must start with https:// (or http://)".into());
    }
    if base_url.query().is_some() || !base_url.username().is_empty() {
        return Err("base_url: put query values in a lookup and credentials in auth".into());
    }
    match &http.auth {
        Auth::None => {}
        Auth::Header { name, secret, .. } | Auth::Query { name, secret } => {
            if name.trim().is_empty() || secret.trim().is_empty() {
                return Err("auth: name and secret are required".into());
            }
            if let Auth::Header { name, .. } = &http.auth {
                reqwest::header::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| format!("auth.name: '{name}' is not a header name"))?;
            }
        }
        Auth::Oauth2ClientCredentials {
            token_url,
            client_id,
            client_secret,
            ..
        } => {
            let url = url::Url::parse(token_url)
                .map_err(|error| format!("auth.token_url: not a URL ({error})"))?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err("auth.token_url: must start with https://".into());
            }
            if client_id.trim().is_empty() || client_secret.trim().is_empty() {
                return Err("auth: client_id and client_secret are required".into());
            }
        }
    }
    if http.lookups.is_empty() {
        return Err("lookups: declare at least one entity kind".into());
    }
    let mut lookups = BTreeMap::new();
    for (kind, lookup) in &http.lookups {
        let kind = entity_kind(kind, "lookups")?;
        let field = format!("lookups.{kind}");
        let templates = |pairs: &BTreeMap<String, String>, part: &str| {
            pairs
                .iter()
                .map(|(name, value)| {
                    Template::parse(value)
                        .map(|template| (name.clone(), template))
                        .map_err(|error| format!("{field}.{part}.{name}: {error}"))
                })
                .collect::<Result<Vec<_>, String>>()
        };
        for name in lookup.headers.keys() {
            reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("{field}.headers: '{name}' is not a header name"))?;
        }
        if !lookup.form.is_empty() && lookup.json.is_some() {
            return Err(format!("{field}: a body is either form or json, not both"));
        }
        if lookup.method == Method::Get && (!lookup.form.is_empty() || lookup.json.is_some()) {
            return Err(format!("{field}: a GET has no body; use method POST"));
        }
        if let Some(json) = &lookup.json {
            check_json_templates(json).map_err(|error| format!("{field}.json: {error}"))?;
        }
        lookups.insert(
            kind,
            CompiledLookup {
                method: lookup.method,
                path: Template::parse(&lookup.path)
                    .map_err(|error| format!("{field}.path: {error}"))?,
                query: templates(&lookup.query, "query")?,
                headers: templates(&lookup.headers, "headers")?,
                form: templates(&lookup.form, "form")?,
                json: lookup.json.clone(),
            },
        );
    }
    if let Some(status) = http
        .not_found_statuses
        .iter()
        .find(|status| !(400..600).contains(*status) || **status == 429)
    {
        return Err(format!(
            "not_found_statuses: {status} cannot mean 'not found' (4xx or 5xx other than 429)"
        ));
    }
    let not_found_when = http
        .not_found_when
        .as_ref()
        .map(|condition| {
            json_path(&condition.path, "not_found_when.path")
                .map(|path| (path, condition.equals.clone()))
        })
        .transpose()?;
    let error_message = http
        .error_message
        .as_deref()
        .map(|path| json_path(path, "error_message"))
        .transpose()?;
    if http.facts.is_empty() {
        return Err("facts: declare at least one fact".into());
    }
    let facts = http
        .facts
        .iter()
        .enumerate()
        .map(|(index, declaration)| compile_fact(declaration, &format!("facts[{index}]")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CompiledHttp {
        source_kind: http.source_kind,
        base_url,
        auth: http.auth.clone(),
        lookups,
        not_found_statuses: http.not_found_statuses.clone(),
        not_found_when,
        error_message,
        facts,
    })
}

fn check_json_templates(value: &serde_json::Value) -> Result<(), String> {
    match value {
        serde_json::Value::String(text) => Template::parse(text).map(|_| ()),
        serde_json::Value::Array(items) => items.iter().try_for_each(check_json_templates),
        serde_json::Value::Object(fields) => fields.values().try_for_each(check_json_templates),
        _ => Ok(()),
    }
}

fn compile_fact(declaration: &FactDeclaration, field: &str) -> Result<FactRule, String> {
    let kind = FactKind::parse(&declaration.fact).ok_or_else(|| {
        format!(
            "{field}.fact: '{}' is not a fact Sleuth knows; allowed: {}",
            declaration.fact.chars().take(60).collect::<String>(),
            FactKind::ALL
                .iter()
                .map(|kind| kind.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })?;
    let path = json_path(&declaration.path, &format!("{field}.path"))?;
    let fits = match declaration.combine {
        Combine::First => true,
        Combine::All => kind.value_type() == FactType::List,
        Combine::Sum | Combine::Count => kind.value_type() == FactType::Number,
    };
    if !fits {
        return Err(format!(
            "{field}.combine: {:?} does not give a {} value, which '{kind}' holds",
            declaration.combine,
            type_name(kind.value_type())
        ));
    }
    let for_kinds = declaration
        .for_kinds
        .iter()
        .map(|kind| entity_kind(kind, &format!("{field}.for_kinds")))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(FactRule {
        kind,
        path,
        combine: declaration.combine,
        map: declaration.map.clone(),
        otherwise: if declaration.only_mapped {
            Some(serde_json::Value::Null)
        } else {
            declaration.otherwise.clone()
        },
        for_kinds,
    })
}

pub(crate) fn type_name(value_type: FactType) -> &'static str {
    match value_type {
        FactType::Flag => "true/false",
        FactType::Number => "number",
        FactType::Date => "date",
        FactType::Text => "text",
        FactType::List => "list",
    }
}

#[cfg(test)]
pub(crate) fn compile_fact_for_tests(declaration: &FactDeclaration) -> Result<FactRule, String> {
    compile_fact(declaration, "facts[0]")
}
