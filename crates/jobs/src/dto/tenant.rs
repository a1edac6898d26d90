//! SPEC's Tenant union, full and list forms.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use sleuth_store::TenantUnion;
use utoipa::ToSchema;

use super::user::UserDto;

#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = TenantUnion)]
pub struct TenantUnionDto {
    pub id: i64,
    pub display_name: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Which tenants belong to the union: `tenant_ids` and `tenant_integration_keys` lists.
    #[schema(schema_with = super::schema::free_object)]
    pub lookup_dict: Map<String, Value>,
    pub last_modified_by: Option<UserDto>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = TenantUnionList)]
pub struct TenantUnionListDto {
    pub id: i64,
    pub display_name: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[schema(schema_with = super::schema::free_object)]
    pub lookup_dict: Map<String, Value>,
}

impl From<&TenantUnion> for TenantUnionDto {
    fn from(union: &TenantUnion) -> TenantUnionDto {
        TenantUnionDto {
            id: union.id,
            display_name: union.display_name.clone(),
            created_at: union.created_at,
            updated_at: union.updated_at,
            lookup_dict: union.lookup_dict.clone(),
            last_modified_by: union.last_modified_by.as_ref().map(UserDto::from),
        }
    }
}

impl From<&TenantUnion> for TenantUnionListDto {
    fn from(union: &TenantUnion) -> TenantUnionListDto {
        TenantUnionListDto {
            id: union.id,
            display_name: union.display_name.clone(),
            created_at: union.created_at,
            updated_at: union.updated_at,
            lookup_dict: union.lookup_dict.clone(),
        }
    }
}
