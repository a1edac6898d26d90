//! API keys over our admin endpoints (not in SPEC; on its conventions). The secret is never
//! shown again after creation: only its first characters (`prefix`) tell keys apart.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sleuth_store::ApiKey;
use utoipa::ToSchema;

use super::user::UserDto;

/// An API key as listed: never its secret.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ApiKey)]
pub struct ApiKeyDto {
    pub id: i64,
    /// A label for the key: which integration or person uses it.
    pub name: String,
    /// The first characters of the key, to tell keys apart.
    pub prefix: String,
    /// The user whose role the key carries.
    pub user: UserDto,
    pub created_at: DateTime<Utc>,
    /// Recorded at most once a minute; null when never used.
    pub last_used_at: Option<DateTime<Utc>>,
    /// Null while the key works; a revoked key never authenticates again.
    pub revoked_at: Option<DateTime<Utc>>,
    /// The tenant unions the key is bound to; null for every union. Either way it reaches
    /// no more than its user is bound to.
    pub tenant_union_ids: Option<Vec<i64>>,
}

impl ApiKeyDto {
    pub fn new(key: &ApiKey, user: UserDto) -> ApiKeyDto {
        ApiKeyDto {
            id: key.id,
            name: key.name.clone(),
            prefix: key.prefix.clone(),
            user,
            created_at: key.created_at,
            last_used_at: key.last_used_at,
            revoked_at: key.revoked_at,
            tenant_union_ids: key.tenant_scope.union_ids().map(<[i64]>::to_vec),
        }
    }
}

/// A key just created: the listed form plus the secret, shown this once.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = CreatedApiKey)]
pub struct CreatedApiKeyDto {
    #[serde(flatten)]
    pub api_key: ApiKeyDto,
    /// The secret. Send it as `Authorization: <key>`. It is stored only as a hash and is
    /// never shown again: keep it now.
    pub key: String,
}
