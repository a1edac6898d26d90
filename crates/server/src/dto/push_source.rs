//! Push sources (ours): one URL per sending tool. The token appears only in the answer
//! that made it (create, or a rotation).

use chrono::{DateTime, Utc};
use serde::Serialize;
use sleuth_store::PushSource;
use utoipa::ToSchema;

#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = PushSource)]
pub struct PushSourceDto {
    pub id: i64,
    pub name: String,
    /// The vendor format and handshake: okta, github, graph, eventbridge, splunk, elastic,
    /// generic.
    pub kind: String,
    /// Where the tool sends its alerts (add `?token=...` when it cannot send a header).
    pub push_url: String,
    /// The secret (secret store) that signs this source's requests, for GitHub.
    pub signing_secret_name: Option<String>,
    pub tenant_union_id: Option<i64>,
    pub enabled: bool,
    /// Requests that delivered alerts, and the alerts they held.
    pub deliveries: i64,
    pub alerts_received: i64,
    pub last_delivery_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl PushSourceDto {
    pub fn new(source: &PushSource, base_url: &str) -> PushSourceDto {
        PushSourceDto {
            id: source.id,
            name: source.name.clone(),
            kind: source.kind.as_str().to_string(),
            push_url: format!("{base_url}/app/api/v1/push/{}", source.id),
            signing_secret_name: source.signing_secret.clone(),
            tenant_union_id: source.tenant_union_id,
            enabled: source.enabled,
            deliveries: source.deliveries,
            alerts_received: source.alerts_received,
            last_delivery_at: source.last_delivery_at,
            created_at: source.created_at,
            updated_at: source.updated_at,
        }
    }
}

/// A push source with its token when the answer made one (create, rotation): shown once.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = PushSourceWithToken)]
pub struct PushSourceWithTokenDto {
    #[serde(flatten)]
    pub source: PushSourceDto,
    /// The source's token: send it as `Authorization: <token>` (or `Bearer <token>`), as the
    /// password of basic auth, or as `?token=` on the URL. Stored only as a hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// What a push answers: every investigation the delivery made or found, in delivery order.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = PushAnswer)]
pub struct PushAnswerDto {
    pub investigation_ids: Vec<i64>,
}
