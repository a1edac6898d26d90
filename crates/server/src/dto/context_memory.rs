//! Context memory items (ours, on the product's paths): the operator's words, their scope,
//! the structured hints, and the entities found in them.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sleuth_domain::MemoryVerdict;
use sleuth_store::{MemoryHint, MemoryItemRecord};
use utoipa::ToSchema;

use super::investigation::EntityDto;
use super::user::UserDto;

/// What the operator says about one entity.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ContextMemoryHint)]
pub struct ContextMemoryHintDto {
    pub entity: EntityDto,
    /// benign or malicious; null when the hint only points at the entity.
    #[schema(value_type = Option<String>, example = "benign")]
    pub verdict: Option<&'static str>,
    /// At most 1000 characters.
    pub note: Option<String>,
}

/// One context memory item.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ContextMemoryItem)]
pub struct ContextMemoryItemDto {
    pub item_id: i64,
    /// The operator's words (1 to 5000 characters).
    pub text: String,
    /// Set when the item applies only to alerts of this tenant union.
    pub tenant_union_id: Option<i64>,
    /// Set when the item applies only to alerts naming this tenant id.
    pub tenant_id: Option<String>,
    pub tenant_label: Option<String>,
    /// True when the item applies to every alert.
    pub is_global: bool,
    pub hints: Vec<ContextMemoryHintDto>,
    /// The entities found in the text (hinted entities are in `hints`).
    pub entities: Vec<EntityDto>,
    pub created_by: Option<UserDto>,
    pub last_modified_by: Option<UserDto>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The answer to a create.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ContextMemoryCreated)]
pub struct ContextMemoryCreatedDto {
    pub item_id: i64,
}

/// A page of context memory items, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ContextMemoryPage)]
pub struct ContextMemoryPageDto {
    /// How many items match the filters (all pages).
    pub count: u64,
    pub results: Vec<ContextMemoryItemDto>,
}

pub fn verdict_name(verdict: MemoryVerdict) -> &'static str {
    match verdict {
        MemoryVerdict::Benign => "benign",
        MemoryVerdict::Malicious => "malicious",
    }
}

impl From<&MemoryHint> for ContextMemoryHintDto {
    fn from(hint: &MemoryHint) -> ContextMemoryHintDto {
        ContextMemoryHintDto {
            entity: EntityDto::from(&hint.entity),
            verdict: hint.verdict.map(verdict_name),
            note: hint.note.clone(),
        }
    }
}

impl From<&MemoryItemRecord> for ContextMemoryItemDto {
    fn from(item: &MemoryItemRecord) -> ContextMemoryItemDto {
        ContextMemoryItemDto {
            item_id: item.id,
            text: item.text.clone(),
            tenant_union_id: item.scope.tenant_union_id,
            tenant_id: item.scope.tenant_id.clone(),
            tenant_label: item.scope.tenant_label.clone(),
            is_global: item.scope.is_global(),
            hints: item.hints.iter().map(ContextMemoryHintDto::from).collect(),
            entities: item.entities.iter().map(EntityDto::from).collect(),
            created_by: item.created_by.as_ref().map(UserDto::from),
            last_modified_by: item.last_modified_by.as_ref().map(UserDto::from),
            created_at: item.created_at,
            updated_at: item.updated_at,
        }
    }
}
