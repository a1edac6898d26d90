//! SPEC's User.

use serde::Serialize;
use sleuth_domain::Role;
use sleuth_store::User;
use utoipa::ToSchema;

#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = User)]
pub struct UserDto {
    pub id: i64,
    /// At most 254 characters.
    #[schema(format = Email, max_length = 254)]
    pub email: String,
    #[schema(max_length = 150)]
    pub first_name: String,
    #[schema(max_length = 150)]
    pub last_name: String,
    pub oidc_user_id: Option<String>,
    #[schema(schema_with = super::schema::role)]
    pub role: Role,
}

impl From<&User> for UserDto {
    fn from(user: &User) -> UserDto {
        UserDto {
            id: user.id,
            email: user.email.clone(),
            first_name: user.first_name.clone(),
            last_name: user.last_name.clone(),
            oidc_user_id: user.oidc_user_id.clone(),
            role: user.role,
        }
    }
}

/// A user as the users endpoints show it to an admin: SPEC's User and the tenant unions
/// they are bound to.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ManagedUser)]
pub struct ManagedUserDto {
    #[serde(flatten)]
    pub user: UserDto,
    /// The tenant unions the user's keys may reach; null for every union (users made
    /// before tenant scoping, and any never bound).
    pub tenant_union_ids: Option<Vec<i64>>,
}

impl From<&User> for ManagedUserDto {
    fn from(user: &User) -> ManagedUserDto {
        ManagedUserDto {
            user: UserDto::from(user),
            tenant_union_ids: user.tenant_scope.union_ids().map(<[i64]>::to_vec),
        }
    }
}
