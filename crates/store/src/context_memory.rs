//! Context memory in storage: the operator's knowledge in plain words ("198.51.100.9 is the
//! Frankfurt VPN egress"), each item scoped to everyone, a tenant union or a tenant id,
//! with the entities it names. The server extracts and validates the entities; the store
//! keeps them under match keys (below) so that `Store::history` finds, for a new alert,
//! the items that name its entities within the alert's scope and never another tenant's.

use async_trait::async_trait;
use sleuth_domain::{Entity, EntityKind, MemoryVerdict, Timestamp};

use crate::{StoreResult, TenantScope, User};

/// Where an item applies. Both fields set means both must hold; neither means everyone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryScope {
    pub tenant_union_id: Option<i64>,
    /// The tenant as alerts name it (`tenant_id` of the alert).
    pub tenant_id: Option<String>,
    /// A label shown with the tenant id; never matched on.
    pub tenant_label: Option<String>,
}

impl MemoryScope {
    pub fn is_global(&self) -> bool {
        self.tenant_union_id.is_none() && self.tenant_id.is_none()
    }
}

/// A structured hint: what the operator says about one entity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryHint {
    /// Already normalised by the entity rules of its kind.
    pub entity: Entity,
    pub verdict: Option<MemoryVerdict>,
    pub note: Option<String>,
}

/// An item to store (create) or to store in place of the current one (update).
#[derive(Debug, Clone, PartialEq)]
pub struct NewMemoryItem {
    pub text: String,
    pub scope: MemoryScope,
    pub hints: Vec<MemoryHint>,
    /// The entities found in the text (normalised), hinted ones not repeated.
    pub entities: Vec<Entity>,
    /// Who writes it: the creator on create, the modifier on update.
    pub author_id: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MemoryItemRecord {
    pub id: i64,
    pub text: String,
    pub scope: MemoryScope,
    pub hints: Vec<MemoryHint>,
    pub entities: Vec<Entity>,
    pub created_by: Option<User>,
    pub last_modified_by: Option<User>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Which items to list. Every filter set must hold.
#[derive(Debug, Clone, Default)]
pub struct MemoryQuery {
    /// Only items without any scope.
    pub global_only: bool,
    pub tenant_union_id: Option<i64>,
    pub tenant_id: Option<String>,
    /// The caller's tenant unions. A bound caller sees only items of its unions: not the
    /// global ones, nor those scoped by a tenant id alone, which no union owns.
    pub scope: TenantScope,
    /// Every word must appear (case-insensitively) in the text or the entities.
    pub search: Option<String>,
    pub limit: u32,
    pub offset: u64,
}

/// A page of items, newest first, and how many matched.
#[derive(Debug, Clone)]
pub struct MemoryPage {
    pub total: u64,
    pub items: Vec<MemoryItemRecord>,
}

/// The key under which a stored entity of an item is found. Hosts, users and domains
/// share one namespace of names, because plain words cannot say which one "svc-backup"
/// is; a user is known by its account name without its domain ("corp\\j.smith" and
/// "j.smith@corp.com" are both "j.smith").
pub fn memory_key(entity: &Entity) -> String {
    match entity.kind {
        EntityKind::User => format!("name:{}", user_base_name(&entity.value)),
        EntityKind::Host | EntityKind::Domain => format!("name:{}", entity.value),
        kind => format!("{kind}:{}", entity.value),
    }
}

/// The keys an alert's entity is looked up under: its own key, and the forms an operator
/// writes it in — a host's short name ("wks-0231" for "wks-0231.corp.example.com"), the
/// email address a user principal name is ("j.smith@corp.com").
pub fn alert_lookup_keys(entity: &Entity) -> Vec<String> {
    let mut keys = vec![memory_key(entity)];
    match entity.kind {
        EntityKind::Host => {
            if let Some((short, _)) = entity.value.split_once('.')
                && !short.is_empty()
                && entity.value.parse::<std::net::IpAddr>().is_err()
            {
                keys.push(format!("name:{short}"));
            }
        }
        EntityKind::User if entity.value.contains('@') => {
            keys.push(format!("email:{}", entity.value));
        }
        _ => {}
    }
    keys
}

fn user_base_name(user: &str) -> &str {
    let without_domain = user.rsplit_once('\\').map_or(user, |(_, name)| name);
    without_domain
        .split_once('@')
        .map_or(without_domain, |(name, _)| name)
}

/// Context memory in storage.
#[async_trait]
pub trait ContextMemoryStore: Send + Sync {
    /// `Rejected` when the scope names a tenant union that does not exist.
    async fn create_memory_item(
        &self,
        item: &NewMemoryItem,
        at: Timestamp,
    ) -> StoreResult<MemoryItemRecord>;
    /// Replaces the item's text, scope, hints and entities. `NotFound` for an unknown id.
    async fn update_memory_item(
        &self,
        item_id: i64,
        item: &NewMemoryItem,
        at: Timestamp,
    ) -> StoreResult<MemoryItemRecord>;
    /// `NotFound` for an unknown id.
    async fn delete_memory_item(&self, item_id: i64) -> StoreResult<()>;
    async fn get_memory_item(&self, item_id: i64) -> StoreResult<MemoryItemRecord>;
    async fn list_memory_items(&self, query: &MemoryQuery) -> StoreResult<MemoryPage>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(kind: EntityKind, value: &str) -> Vec<String> {
        alert_lookup_keys(&Entity::new(kind, value))
    }

    #[test]
    fn users_hosts_and_domains_share_names_and_users_lose_their_domain() {
        assert_eq!(
            memory_key(&Entity::new(EntityKind::User, "corp\\svc-backup")),
            "name:svc-backup"
        );
        assert_eq!(
            memory_key(&Entity::new(EntityKind::Host, "svc-backup")),
            "name:svc-backup"
        );
        assert_eq!(
            keys(EntityKind::User, "j.smith@corp.com"),
            ["name:j.smith", "email:j.smith@corp.com"]
        );
        assert_eq!(
            keys(EntityKind::Host, "wks-0231.corp.example.com"),
            ["name:wks-0231.corp.example.com", "name:wks-0231"]
        );
        assert_eq!(keys(EntityKind::Ip, "198.51.100.9"), ["ip:198.51.100.9"]);
        assert_eq!(keys(EntityKind::Host, "10.1.2.3"), ["name:10.1.2.3"]);
    }
}
