//! What the team's own systems answered about an alert's entities: the directory, threat
//! intelligence, registration data, the EDR. The data sources gather these before the
//! engine runs (`sleuth-sources`); the engine reads them as facts and never asks anyone.

use serde::{Deserialize, Serialize};

use crate::{Entity, Timestamp};

/// Every answer gathered for one alert, in the order the sources were asked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Facts {
    pub answers: Vec<SourceAnswer>,
}

impl Facts {
    /// The answers about one entity.
    pub fn about<'a>(&'a self, entity: &'a Entity) -> impl Iterator<Item = &'a SourceAnswer> {
        self.answers
            .iter()
            .filter(move |answer| answer.entity == *entity)
    }

    pub fn is_empty(&self) -> bool {
        self.answers.is_empty()
    }
}

/// One source's answer about one entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceAnswer {
    /// The source's name as the operator gave it ("corp-directory", "virustotal").
    pub source: String,
    /// What kind of system answered: the engine judges a directory's word on an account,
    /// not a threat-intelligence feed's.
    pub source_kind: SourceKind,
    pub entity: Entity,
    /// When the source answered (for a cached answer, when it was first given).
    pub at: Timestamp,
    pub result: AnswerResult,
}

impl SourceAnswer {
    /// The facts of a found answer (none for the others).
    pub fn facts(&self) -> &[Fact] {
        match &self.result {
            AnswerResult::Found(facts) => facts,
            AnswerResult::NotFound | AnswerResult::Failed { .. } => &[],
        }
    }

    /// The first fact of this kind, when the answer has one.
    pub fn fact(&self, kind: FactKind) -> Option<&FactValue> {
        self.facts()
            .iter()
            .find(|fact| fact.kind == kind)
            .map(|fact| &fact.value)
    }
}

/// What kind of system a source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// A directory of people and machines (LDAP, Active Directory, Okta, Entra ID).
    Directory,
    /// Threat intelligence and reputation (VirusTotal, AbuseIPDB, GreyNoise, abuse.ch).
    ThreatIntel,
    /// Registration data (RDAP, WHOIS).
    Registration,
    /// An EDR's or inventory's view of hosts (CrowdStrike).
    Endpoint,
    /// Sign-in records (Entra ID sign-ins).
    SignIns,
    /// Anything else (an enrichment script).
    Other,
}

impl SourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Directory => "directory",
            SourceKind::ThreatIntel => "threat_intel",
            SourceKind::Registration => "registration",
            SourceKind::Endpoint => "endpoint",
            SourceKind::SignIns => "sign_ins",
            SourceKind::Other => "other",
        }
    }
}

/// What came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerResult {
    /// The source knows the entity; what it said.
    Found(Vec<Fact>),
    /// The source answered and does not know the entity.
    NotFound,
    /// The source could not answer (down, too slow, refused, its breaker open). The
    /// reason is safe to show: it never holds a secret.
    Failed { reason: String },
}

/// One thing a source said, in Sleuth's vocabulary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    pub kind: FactKind,
    pub value: FactValue,
}

/// A fact's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FactValue {
    Flag(bool),
    Number(f64),
    Date(Timestamp),
    Text(String),
    List(Vec<String>),
}

impl FactValue {
    pub fn as_flag(&self) -> Option<bool> {
        match self {
            FactValue::Flag(flag) => Some(*flag),
            _ => None,
        }
    }

    pub fn as_number(&self) -> Option<f64> {
        match self {
            FactValue::Number(number) => Some(*number),
            _ => None,
        }
    }

    pub fn as_date(&self) -> Option<Timestamp> {
        match self {
            FactValue::Date(date) => Some(*date),
            _ => None,
        }
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            FactValue::Text(text) => Some(text),
            _ => None,
        }
    }

    pub fn as_list(&self) -> &[String] {
        match self {
            FactValue::List(items) => items,
            _ => &[],
        }
    }
}

impl std::fmt::Display for FactValue {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FactValue::Flag(flag) => write!(formatter, "{flag}"),
            FactValue::Number(number) => write!(formatter, "{number}"),
            FactValue::Date(date) => write!(formatter, "{}", date.to_rfc3339()),
            FactValue::Text(text) => formatter.write_str(text),
            FactValue::List(items) => formatter.write_str(&items.join(", ")),
        }
    }
}

/// The type of value a fact kind holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactType {
    Flag,
    Number,
    Date,
    Text,
    List,
}

macro_rules! fact_kinds {
    ($($(#[$meta:meta])* $variant:ident => $text:literal, $kind:ident;)+) => {
        /// The facts the engine understands. A source definition maps its fields onto these
        /// names; each holds one type of value.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum FactKind {
            $($(#[$meta])* #[serde(rename = $text)] $variant,)+
        }

        impl FactKind {
            pub const ALL: &'static [FactKind] = &[$(FactKind::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $(FactKind::$variant => $text,)+
                }
            }

            pub fn value_type(self) -> FactType {
                match self {
                    $(FactKind::$variant => FactType::$kind,)+
                }
            }

            pub fn parse(text: &str) -> Option<FactKind> {
                match text {
                    $($text => Some(FactKind::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

fact_kinds! {
    /// The source's own verdict: `malicious`, `suspicious`, `benign` or `unknown`.
    Verdict => "verdict", Text;
    /// How many engines or reporters call the entity malicious.
    MaliciousVotes => "malicious_votes", Number;
    /// How many engines or reporters looked at it.
    TotalVotes => "total_votes", Number;
    /// An abuse or risk score from 0 (clean) to 100 (certainly abusive).
    AbuseScore => "abuse_score", Number;
    /// When the domain was registered.
    RegisteredAt => "registered_at", Date;
    FirstSeen => "first_seen", Date;
    LastSeen => "last_seen", Date;
    /// Free labels: threat names, tags, categories.
    Labels => "labels", List;
    Country => "country", Text;
    /// Whether the account may sign in (false: disabled, suspended, deprovisioned).
    AccountEnabled => "account_enabled", Flag;
    /// Whether the account belongs to a privileged group.
    Privileged => "privileged", Flag;
    /// The privileged groups it belongs to.
    PrivilegedGroups => "privileged_groups", List;
    Groups => "groups", List;
    DisplayName => "display_name", Text;
    Title => "title", Text;
    Department => "department", Text;
    Manager => "manager", Text;
    PasswordLastSet => "password_last_set", Date;
    LastLogon => "last_logon", Date;
    /// What a host is: `server`, `workstation`, `domain_controller`.
    HostRole => "host_role", Text;
    OperatingSystem => "operating_system", Text;
    OrganizationalUnit => "organizational_unit", Text;
    Owner => "owner", Text;
    /// Recent successful sign-ins the source recorded.
    RecentSignIns => "recent_sign_ins", Number;
}

impl std::fmt::Display for FactKind {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}
