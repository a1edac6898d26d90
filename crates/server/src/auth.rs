//! Authentication and roles (DESIGN.md §1): `Authorization: <key>`, with `Bearer `,
//! `Token ` and `Api-Key ` tolerated as prefixes. Keys are random, shown once, and stored
//! only as a SHA-256 hash.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use base64::Engine;
use rand::RngCore;
use sleuth_domain::Role;
use sleuth_store::{KeyHash, Principal, TenantScope};

use crate::audit::AuditSlot;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::state::AppState;

/// Keys look like `sleuth_` followed by 43 URL-safe base64 characters (32 random bytes),
/// so secret scanners and people can tell what they are.
pub const KEY_PREFIX: &str = "sleuth_";

/// Last-use times are written at most this often per key, so that authentication does
/// not turn every request into a database write.
const KEY_USE_RESOLUTION_SECONDS: i64 = 60;

/// A new random API key: the secret (shown once) and what is stored.
pub fn generate_key() -> (String, KeyHash, String) {
    let mut bytes = [0_u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let secret = format!(
        "{KEY_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    );
    let hash = KeyHash::of(&secret);
    let prefix: String = secret.chars().take(KEY_PREFIX.len() + 6).collect();
    (secret, hash, prefix)
}

/// The authenticated caller of a request, and the audit slot of a request that writes.
#[derive(Debug, Clone)]
pub struct Caller(pub Principal, pub(crate) Option<AuditSlot>);

impl Caller {
    /// Refuses with 403 unless the caller's role includes `required`. What needs the admin
    /// role is Sleuth's own configuration, shared by every tenant (users and keys, tenant
    /// unions, response actions, strategies, sources, the context document), so it also
    /// needs a caller bound to no tenant union; the few admin reads that keep to the
    /// caller's tenants use `require_within_scope`.
    pub fn require(&self, required: Role) -> ApiResult<&Caller> {
        self.require_within_scope(required)?;
        if required == Role::Admin && !self.scope().is_all() {
            return Err(ApiError::new(
                ErrorCode::AccessDenied,
                format!(
                    "this action changes or reads what every tenant shares, so it needs a key \
                     bound to no tenant union; yours reaches {}",
                    self.scope()
                ),
            ));
        }
        Ok(self)
    }

    /// Refuses with 403 unless the caller's role includes `required`; for endpoints that
    /// apply the caller's tenant scope themselves.
    pub fn require_within_scope(&self, required: Role) -> ApiResult<&Caller> {
        if self.0.user.role.allows(required) {
            Ok(self)
        } else {
            Err(ApiError::new(
                ErrorCode::AccessDenied,
                format!(
                    "this action needs the {required} role; your key belongs to a user with role {}",
                    self.0.user.role
                ),
            ))
        }
    }

    pub fn user_id(&self) -> i64 {
        self.0.user.id
    }

    /// The tenant unions this request may reach: what both the key and its user allow.
    pub fn scope(&self) -> TenantScope {
        self.0.scope()
    }

    /// 404 unless the investigation exists within the caller's tenant unions: another
    /// tenant's investigation is answered as missing, never as forbidden. A request that
    /// writes also has its audit entry say the investigation's union
    /// (`AuditSlot::concerns_union`); a read by a caller bound to no union asks nothing.
    pub async fn check_investigation(
        &self,
        state: &AppState,
        investigation_id: i64,
    ) -> ApiResult<()> {
        let scope = self.scope();
        if scope.is_all() && self.1.is_none() {
            return Ok(());
        }
        let tenant_union_id = state
            .store()?
            .check_investigation_scope(investigation_id, &scope)
            .await?;
        self.concerns_union(tenant_union_id);
        Ok(())
    }

    /// Says, for the audit entry of a request that writes, which tenant union the change
    /// concerns; nothing for a read.
    pub fn concerns_union(&self, tenant_union_id: i64) {
        if let Some(slot) = &self.1 {
            slot.concerns_union(tenant_union_id);
        }
    }

    /// 403 unless the caller may put data into this tenant union.
    pub fn require_union(&self, tenant_union_id: i64) -> ApiResult<()> {
        let scope = self.scope();
        if scope.allows(tenant_union_id) {
            Ok(())
        } else {
            Err(ApiError::new(
                ErrorCode::AccessDenied,
                format!("your key reaches {scope}, not tenant union {tenant_union_id}"),
            ))
        }
    }
}

/// Strips a tolerated scheme word from the header value.
fn key_from_header(value: &str) -> &str {
    let value = value.trim();
    for scheme in [
        "Bearer ", "Token ", "Api-Key ", "bearer ", "token ", "api-key ",
    ] {
        if let Some(rest) = value.strip_prefix(scheme) {
            return rest.trim();
        }
    }
    value
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let store = state.store()?;
        let unauthorized = |message: &str| ApiError::new(ErrorCode::Unauthorized, message);
        let header = parts.headers.get(AUTHORIZATION).ok_or_else(|| {
            unauthorized("missing Authorization header; send Authorization: <your API key>")
        })?;
        let header = header
            .to_str()
            .map_err(|_| unauthorized("the Authorization header is not valid text"))?;
        let key = key_from_header(header);
        if key.is_empty() || key.len() > 512 {
            return Err(unauthorized("the API key is missing or malformed"));
        }
        let principal = store
            .authenticate(&KeyHash::of(key))
            .await?
            .ok_or_else(|| unauthorized("unknown or revoked API key"))?;
        // The audit layer records writes under the caller who made them.
        let slot = parts.extensions.get::<AuditSlot>().cloned();
        if let Some(slot) = &slot {
            slot.fill(&principal);
        }
        let now = chrono::Utc::now();
        let stale = principal
            .key_last_used_at
            .is_none_or(|last| (now - last).num_seconds() >= KEY_USE_RESOLUTION_SECONDS);
        if stale {
            let store = store.clone();
            let api_key_id = principal.api_key_id;
            tokio::spawn(async move {
                if let Err(error) = store.record_key_use(api_key_id, now).await {
                    tracing::debug!(%error, "could not record key use");
                }
            });
        }
        Ok(Caller(principal, slot))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_long_random_and_prefixed() {
        let (first, first_hash, prefix) = generate_key();
        let (second, _, _) = generate_key();
        assert!(first.starts_with(KEY_PREFIX));
        assert_eq!(first.len(), KEY_PREFIX.len() + 43);
        assert_ne!(first, second);
        assert_eq!(first_hash, KeyHash::of(&first));
        assert!(first.starts_with(&prefix));
    }

    #[test]
    fn tolerated_prefixes_are_stripped() {
        assert_eq!(key_from_header("Bearer abc"), "abc");
        assert_eq!(key_from_header("Token abc"), "abc");
        assert_eq!(key_from_header("Api-Key abc"), "abc");
        assert_eq!(key_from_header(" abc "), "abc");
    }
}
