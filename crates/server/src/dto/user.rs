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
