//! Push sources: one URL per sending tool (an Okta event hook, a GitHub webhook, a Graph
//! subscription, ...), each with its own token, stored only as a hash.

use async_trait::async_trait;
use sleuth_domain::Timestamp;

use crate::{KeyHash, StoreResult};

/// How a push source's requests are read and authenticated: the vendor's push format and
/// handshake. Spelled once here (`as_str`, `parse`, `ALL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushKind {
    /// Okta event hooks: the one-time verification challenge, events in `data.events`.
    Okta,
    /// GitHub webhooks (secret scanning and the rest), signed with `X-Hub-Signature-256`.
    Github,
    /// Microsoft Graph change notifications: the `validationToken` handshake, `clientState`.
    Graph,
    /// Amazon EventBridge API destinations: one event per request.
    Eventbridge,
    /// Splunk's webhook alert action (and notables sent by an alert action).
    Splunk,
    /// Elastic's Webhook connector: one alert, or a list of them (`{{context.alerts}}`).
    Elastic,
    /// Any JSON alert, or any body `envelopes` recognises.
    Generic,
}

impl PushKind {
    pub const ALL: [PushKind; 7] = [
        PushKind::Okta,
        PushKind::Github,
        PushKind::Graph,
        PushKind::Eventbridge,
        PushKind::Splunk,
        PushKind::Elastic,
        PushKind::Generic,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PushKind::Okta => "okta",
            PushKind::Github => "github",
            PushKind::Graph => "graph",
            PushKind::Eventbridge => "eventbridge",
            PushKind::Splunk => "splunk",
            PushKind::Elastic => "elastic",
            PushKind::Generic => "generic",
        }
    }

    pub fn parse(text: &str) -> Option<PushKind> {
        PushKind::ALL.into_iter().find(|kind| kind.as_str() == text)
    }
}

#[derive(Debug, Clone)]
pub struct NewPushSource {
    pub name: String,
    pub kind: PushKind,
    pub token_hash: KeyHash,
    /// The name of the secret (the secret store) that signs this source's requests, for
    /// kinds that sign (GitHub's webhook secret).
    pub signing_secret: Option<String>,
    /// The tenant union its alerts join; `None` decides per alert, as creates do.
    pub tenant_union_id: Option<i64>,
    pub created_by: Option<i64>,
    pub at: Timestamp,
}

#[derive(Debug, Clone)]
pub struct PushSource {
    pub id: i64,
    pub name: String,
    pub kind: PushKind,
    pub token_hash: KeyHash,
    pub signing_secret: Option<String>,
    pub tenant_union_id: Option<i64>,
    pub enabled: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// Requests that delivered alerts, and alerts delivered, since the source was made.
    pub deliveries: i64,
    pub alerts_received: i64,
    pub last_delivery_at: Option<Timestamp>,
}

/// A change of a push source; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct PushSourceChanges {
    pub enabled: Option<bool>,
    pub token_hash: Option<KeyHash>,
}

#[async_trait]
pub trait PushStore {
    /// `Conflict` when the name is taken.
    async fn create_push_source(&self, source: &NewPushSource) -> StoreResult<PushSource>;
    async fn list_push_sources(&self) -> StoreResult<Vec<PushSource>>;
    async fn get_push_source(&self, push_source_id: i64) -> StoreResult<PushSource>;
    async fn update_push_source(
        &self,
        push_source_id: i64,
        changes: &PushSourceChanges,
        at: Timestamp,
    ) -> StoreResult<PushSource>;
    async fn delete_push_source(&self, push_source_id: i64) -> StoreResult<()>;
    /// Counts a delivery of `alerts` alerts.
    async fn record_push_delivery(
        &self,
        push_source_id: i64,
        alerts: i64,
        at: Timestamp,
    ) -> StoreResult<()>;
}
