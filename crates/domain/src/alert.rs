//! An alert as Sleuth understands it once a parser has read the raw JSON of a source.

use serde::{Deserialize, Serialize};

use crate::{HandlerVersion, Signals, Timestamp};

/// The kinds of things an alert can name. The wire spelling is the entity `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntityKind {
    Ip,
    Domain,
    Url,
    Email,
    User,
    Host,
    Process,
    FilePath,
    HashMd5,
    HashSha1,
    HashSha256,
    CloudAccount,
    CloudResource,
}

impl EntityKind {
    pub const ALL: &'static [EntityKind] = &[
        EntityKind::Ip,
        EntityKind::Domain,
        EntityKind::Url,
        EntityKind::Email,
        EntityKind::User,
        EntityKind::Host,
        EntityKind::Process,
        EntityKind::FilePath,
        EntityKind::HashMd5,
        EntityKind::HashSha1,
        EntityKind::HashSha256,
        EntityKind::CloudAccount,
        EntityKind::CloudResource,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EntityKind::Ip => "ip",
            EntityKind::Domain => "domain",
            EntityKind::Url => "url",
            EntityKind::Email => "email",
            EntityKind::User => "user",
            EntityKind::Host => "host",
            EntityKind::Process => "process",
            EntityKind::FilePath => "file_path",
            EntityKind::HashMd5 => "hash_md5",
            EntityKind::HashSha1 => "hash_sha1",
            EntityKind::HashSha256 => "hash_sha256",
            EntityKind::CloudAccount => "cloud_account",
            EntityKind::CloudResource => "cloud_resource",
        }
    }

    pub fn parse(value: &str) -> Option<EntityKind> {
        EntityKind::ALL
            .iter()
            .copied()
            .find(|kind| kind.as_str() == value)
    }
}

impl std::fmt::Display for EntityKind {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// One typed, normalised thing an alert names: an address, an account, a file.
/// Values are normalised by the engine (lower-case domains and hashes, refanged URLs),
/// so two entities are the same thing exactly when they are equal.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Entity {
    #[serde(rename = "type")]
    pub kind: EntityKind,
    pub value: String,
}

impl Entity {
    pub fn new(kind: EntityKind, value: impl Into<String>) -> Entity {
        Entity {
            kind,
            value: value.into(),
        }
    }
}

/// The fields of SPEC's Alert that a parser derives from the raw alert. Everything the
/// store assigns (ids, created_at, the tenant union) is absent here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParsedAlert {
    /// The parser that read the alert (`crowdstrike_falcon_alert`, `generic`, ...).
    pub schema_key: String,
    pub handler_version: HandlerVersion,
    /// What kind of detection this is, stable across alerts of the same rule
    /// (for example `guardduty:UnauthorizedAccess:EC2/SSHBruteForce`).
    pub alert_type: String,
    /// The title shown to analysts; may be tidied from `original_title`.
    pub title: String,
    /// The title exactly as the source wrote it.
    pub original_title: String,
    /// When the source raised the alert. Falls back to the time Sleuth received it.
    pub create_time: Timestamp,
    /// When the activity behind the alert began, when the source says.
    pub start_time: Option<Timestamp>,
    /// The source's own severity wording, normalised to lower case.
    pub severity: Option<String>,
    /// The product that raised the alert ("CrowdStrike Falcon").
    pub direct_source_label: String,
    /// A product the alert passed through on its way here (a SIEM forwarding an EDR alert).
    pub proxy_source_label: Option<String>,
    /// The integration key of the origin (`crowdstrike_falcon`).
    pub origin_integration: Option<String>,
    pub origin_integration_display_name: String,
    /// The source's own id of the alert; also the first choice of dedupe identity.
    pub origin_ticket_id: Option<String>,
    pub origin_ticket_id_label: Option<String>,
    pub origin_ticket_url: Option<String>,
    pub entities: Vec<Entity>,
    /// Hosts, accounts and resources the alert concerns, as a free object.
    pub assets: serde_json::Map<String, serde_json::Value>,
    /// Alerts with the same coalesce key inside the coalesce window are one story.
    pub coalesce_key: Option<String>,
    /// The tenant as the source names it (a customer, an org unit), when it does.
    pub tenant_id: Option<String>,
    pub tenant_label: Option<String>,
    /// What the source observed, in Sleuth's vocabulary; the engine reads only this.
    /// Alerts stored before it existed read back with empty signals.
    #[serde(default)]
    pub signals: Signals,
}

impl ParsedAlert {
    /// The entities of one kind, in order.
    pub fn entities_of(&self, kind: EntityKind) -> impl Iterator<Item = &str> {
        self.entities
            .iter()
            .filter(move |entity| entity.kind == kind)
            .map(|entity| entity.value.as_str())
    }
}
