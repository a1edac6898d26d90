//! Users and API keys over the API (admin only; our endpoints, SPEC's User shape): list,
//! create and change users (role, names, deactivation), and create, list and revoke keys.
//! A key is shown once, at creation, and stored only as a hash. Deactivating a user
//! revokes their keys at once (reactivating does not revive them); an admin cannot demote or deactivate themselves, and the store
//! refuses any change that would leave no active admin.
//!
//! Users and keys may be bound to tenant unions (`tenant_union_ids`): a bound key reads,
//! lists, counts and writes only what belongs to those unions, and what a request reaches
//! is what both its key and the key's user allow. A key is never wider than its user: made
//! without `tenant_union_ids`, it takes its user's. Users and keys made before scoping,
//! and any made without it, reach every union. Managing users and keys needs an admin key
//! bound to no union.

use std::collections::HashMap;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use sleuth_domain::{EmailAddress, Role, parse_person_name};
use sleuth_store::{NewApiKey, NewUser, StoreError, TenantScope, User, UserChanges};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{Caller, generate_key};
use crate::dto::api_key::{ApiKeyDto, CreatedApiKeyDto};
use crate::dto::user::{ManagedUserDto, UserDto};
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{ApiJson, QueryPairs, path_id, query_bool};
use crate::state::AppState;
use sleuth_jobs::firing;
use sleuth_jobs::trigger_catalog::{API_KEY_CREATED, API_KEY_REVOKED, USER_CREATED};

/// The longest key name and `oidc_user_id`, in characters.
const LABEL_MAX_CHARS: usize = 150;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_users, create_user))
        .routes(routes!(update_user))
        .routes(routes!(set_password))
        .routes(routes!(list_api_keys, create_api_key))
        .routes(routes!(revoke_api_key))
}

/// Body of a user create.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateUserRequest {
    /// Required; a valid address of at most 254 characters, unique (stored lower-cased).
    #[schema(format = Email, max_length = 254)]
    pub email: Option<String>,
    #[schema(max_length = 150)]
    pub first_name: Option<String>,
    #[schema(max_length = 150)]
    pub last_name: Option<String>,
    /// Required: admin, member or restricted-read-only.
    #[schema(schema_with = crate::dto::schema::role)]
    pub role: Option<String>,
    /// The user's id at the identity provider, when there is one (at most 150 characters).
    pub oidc_user_id: Option<String>,
    /// The tenant unions the user may reach (at least one); absent or null for every union.
    pub tenant_union_ids: Option<Vec<i64>>,
}

/// Body of a user change: any non-empty subset of the fields.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateUserRequest {
    #[schema(schema_with = crate::dto::schema::role)]
    pub role: Option<String>,
    #[schema(max_length = 150)]
    pub first_name: Option<String>,
    #[schema(max_length = 150)]
    pub last_name: Option<String>,
    /// False deactivates the user and revokes their keys (at once); true reactivates them,
    /// with no key: create new ones.
    pub is_active: Option<bool>,
    /// Binds the user to these tenant unions (at least one); null unbinds them (every
    /// union). Their keys are narrowed at once: a key reaches only what its user does.
    #[serde(default, deserialize_with = "crate::extract::present")]
    #[schema(value_type = Option<Vec<i64>>)]
    pub tenant_union_ids: Option<Option<Vec<i64>>>,
}

/// Body of a key create.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateApiKeyRequest {
    /// The user whose role the key carries; must be active.
    pub user_id: Option<i64>,
    /// A label (which integration or person uses the key): 1 to 150 characters.
    #[schema(min_length = 1, max_length = 150)]
    pub name: Option<String>,
    /// The tenant unions the key may reach, within its user's; absent: its user's.
    pub tenant_union_ids: Option<Vec<i64>>,
}

/// A tenant scope as a body names it: null or absent for every union, else at least one
/// union id.
fn scope_field(ids: Option<Vec<i64>>) -> ApiResult<TenantScope> {
    let Some(ids) = ids else {
        return Ok(TenantScope::All);
    };
    if ids.is_empty() {
        return Err(ApiError::invalid_field(
            "tenant_union_ids",
            "name at least one tenant union, or send null for every union",
        ));
    }
    if let Some(bad) = ids.iter().find(|id| **id < 1) {
        return Err(ApiError::invalid_field(
            "tenant_union_ids",
            format!("{bad} is not a tenant union id"),
        ));
    }
    Ok(TenantScope::unions(ids))
}

fn role(raw: &str) -> ApiResult<Role> {
    Role::parse(raw).map_err(|_| {
        let allowed: Vec<&str> = Role::ALL.iter().map(|role| role.as_str()).collect();
        ApiError::invalid_field(
            "role",
            format!(
                "'{}' is not one of: {}",
                raw.chars().take(60).collect::<String>(),
                allowed.join(", ")
            ),
        )
    })
}

fn person_name(field: &'static str, raw: &str) -> ApiResult<String> {
    parse_person_name(field, raw).map_err(|error| ApiError::invalid_field(field, error.to_string()))
}

/// A short label: not blank, bounded, no control characters.
fn label(field: &str, raw: &str) -> ApiResult<String> {
    let trimmed = raw.trim();
    let length = trimmed.chars().count();
    if trimmed.is_empty() || length > LABEL_MAX_CHARS || trimmed.chars().any(char::is_control) {
        return Err(ApiError::invalid_field(
            field,
            format!("must be 1 to {LABEL_MAX_CHARS} characters, without control characters"),
        ));
    }
    Ok(trimmed.to_string())
}

/// List users (admin). Active users by default; `is_active=false` lists the deactivated.
#[utoipa::path(get, path = "/app/api/v1/users", tag = "users",
    params(("is_active" = Option<bool>, Query, description = "Default true")),
    responses((status = 200, body = Vec<ManagedUserDto>), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("api_key" = [])))]
async fn list_users(
    State(state): State<AppState>,
    caller: Caller,
    query: QueryPairs,
) -> ApiResult<Json<Vec<ManagedUserDto>>> {
    caller.require(Role::Admin)?;
    let active = query_bool(&query, "is_active")?.unwrap_or(true);
    let users = state.store()?.list_users().await?;
    Ok(Json(
        users
            .iter()
            .filter(|user| user.is_active == active)
            .map(ManagedUserDto::from)
            .collect(),
    ))
}

/// Create a user (admin). Fires `USER_CREATED`. Give them a key with POST /api-keys.
#[utoipa::path(post, path = "/app/api/v1/users", tag = "users", request_body = CreateUserRequest,
    responses((status = 201, body = ManagedUserDto), (status = 400, description = "Invalid input, a duplicate email or an unknown tenant union", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("api_key" = [])))]
async fn create_user(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<CreateUserRequest>,
) -> ApiResult<(StatusCode, Json<ManagedUserDto>)> {
    let user = create(&state, &caller, request).await?;
    Ok((StatusCode::CREATED, Json(ManagedUserDto::from(&user))))
}

/// Creates a user as `caller` (the route's work, also the console's), firing
/// `USER_CREATED`.
pub(crate) async fn create(
    state: &AppState,
    caller: &Caller,
    request: CreateUserRequest,
) -> ApiResult<User> {
    caller.require(Role::Admin)?;
    let email = request
        .email
        .ok_or_else(|| ApiError::invalid_field("email", "is required"))?;
    let email = EmailAddress::parse(&email)
        .map_err(|error| ApiError::invalid_field("email", error.to_string()))?;
    let role = role(
        request
            .role
            .as_deref()
            .ok_or_else(|| ApiError::invalid_field("role", "is required"))?,
    )?;
    let new_user = NewUser {
        email,
        first_name: person_name("first_name", request.first_name.as_deref().unwrap_or(""))?,
        last_name: person_name("last_name", request.last_name.as_deref().unwrap_or(""))?,
        role,
        oidc_user_id: request
            .oidc_user_id
            .as_deref()
            .map(|raw| label("oidc_user_id", raw))
            .transpose()?,
        tenant_scope: scope_field(request.tenant_union_ids)?,
    };
    let store = state.store()?;
    let user = store.create_user(&new_user).await?;
    firing::fire_detached(state, store, vec![USER_CREATED], firing::user_firing(&user));
    Ok(user)
}

/// Change a user's role or names, or deactivate (`is_active: false`) or reactivate them
/// (admin). An admin cannot demote or deactivate themselves.
#[utoipa::path(patch, path = "/app/api/v1/users/{user_id}", tag = "users",
    params(("user_id" = String, Path)), request_body = UpdateUserRequest,
    responses((status = 200, body = ManagedUserDto), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn update_user(
    State(state): State<AppState>,
    caller: Caller,
    Path(user_id): Path<String>,
    ApiJson(request): ApiJson<UpdateUserRequest>,
) -> ApiResult<Json<ManagedUserDto>> {
    caller.require(Role::Admin)?;
    let user_id = path_id(&user_id, "user")?;
    let user = update(&state, &caller, user_id, request).await?;
    Ok(Json(ManagedUserDto::from(&user)))
}

/// Changes a user as `caller` (the route's work, also the console's).
pub(crate) async fn update(
    state: &AppState,
    caller: &Caller,
    user_id: i64,
    request: UpdateUserRequest,
) -> ApiResult<User> {
    caller.require(Role::Admin)?;
    let changes = UserChanges {
        role: request.role.as_deref().map(role).transpose()?,
        first_name: request
            .first_name
            .as_deref()
            .map(|raw| person_name("first_name", raw))
            .transpose()?,
        last_name: request
            .last_name
            .as_deref()
            .map(|raw| person_name("last_name", raw))
            .transpose()?,
        is_active: request.is_active,
        tenant_scope: request.tenant_union_ids.map(scope_field).transpose()?,
    };
    if changes.role.is_none()
        && changes.first_name.is_none()
        && changes.last_name.is_none()
        && changes.is_active.is_none()
        && changes.tenant_scope.is_none()
    {
        return Err(ApiError::bad_request(
            "nothing to change: send at least one of role, first_name, last_name, is_active, \
             tenant_union_ids",
        ));
    }
    let demotes = changes.role.is_some_and(|role| role != Role::Admin);
    let deactivates = changes.is_active == Some(false);
    if user_id == caller.user_id() && (demotes || deactivates) {
        return Err(ApiError::bad_request(
            "you cannot demote or deactivate yourself: ask another admin, so that Sleuth \
             always keeps an admin",
        ));
    }
    Ok(state.store()?.update_user(user_id, &changes).await?)
}

/// Body of a password set or reset.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetPasswordRequest {
    /// Required: 12 to 256 characters, not the user's email.
    #[schema(min_length = 12, max_length = 256)]
    pub password: Option<String>,
    /// Whether the user must choose a new password at their next console sign-in before
    /// anything else. Default true: a password an admin chose is known to two people.
    pub must_change: Option<bool>,
}

/// Set or reset a user's console password (admin). Stored only as its argon2id hash;
/// every console session of the user ends. The user signs in at `/` with their email and
/// this password.
#[utoipa::path(put, path = "/app/api/v1/users/{user_id}/password", tag = "users",
    params(("user_id" = String, Path)), request_body = SetPasswordRequest,
    responses((status = 204, description = "Set"), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn set_password(
    State(state): State<AppState>,
    caller: Caller,
    Path(user_id): Path<String>,
    ApiJson(request): ApiJson<SetPasswordRequest>,
) -> ApiResult<StatusCode> {
    caller.require(Role::Admin)?;
    let user_id = path_id(&user_id, "user")?;
    set_password_of(&state, &caller, user_id, request).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Sets a user's console password as `caller` (the route's work, also the console's).
pub(crate) async fn set_password_of(
    state: &AppState,
    caller: &Caller,
    user_id: i64,
    request: SetPasswordRequest,
) -> ApiResult<()> {
    caller.require(Role::Admin)?;
    let password = request
        .password
        .ok_or_else(|| ApiError::invalid_field("password", "is required"))?;
    let store = state.store()?;
    let user = store.get_user(user_id).await?;
    crate::passwords::check_new(&password, &user.email)
        .map_err(|problem| ApiError::invalid_field("password", problem))?;
    let hash = crate::passwords::hash_blocking(password).await;
    store
        .set_password(
            user_id,
            &hash,
            request.must_change.unwrap_or(true),
            chrono::Utc::now(),
        )
        .await?;
    Ok(())
}

/// Every user by id, for showing keys with their users.
async fn users_by_id(state: &AppState) -> ApiResult<HashMap<i64, User>> {
    let users = state.store()?.list_users().await?;
    Ok(users.into_iter().map(|user| (user.id, user)).collect())
}

fn key_dto(key: &sleuth_store::ApiKey, users: &HashMap<i64, User>) -> ApiResult<ApiKeyDto> {
    let user = users.get(&key.user_id).ok_or_else(|| {
        tracing::error!(api_key_id = key.id, "an API key's user is missing");
        ApiError::system_error()
    })?;
    Ok(ApiKeyDto::new(key, UserDto::from(user)))
}

/// List API keys (admin), revoked ones included. Never their secrets.
#[utoipa::path(get, path = "/app/api/v1/api-keys", tag = "users",
    responses((status = 200, body = Vec<ApiKeyDto>), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("api_key" = [])))]
async fn list_api_keys(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<ApiKeyDto>>> {
    caller.require(Role::Admin)?;
    let keys = state.store()?.list_api_keys().await?;
    let users = users_by_id(&state).await?;
    keys.iter()
        .map(|key| key_dto(key, &users))
        .collect::<ApiResult<Vec<_>>>()
        .map(Json)
}

/// Create an API key for a user (admin). The answer carries the key in `key`, shown this
/// once. Fires `API_KEY_CREATED`.
#[utoipa::path(post, path = "/app/api/v1/api-keys", tag = "users", request_body = CreateApiKeyRequest,
    responses((status = 201, body = CreatedApiKeyDto), (status = 400, description = "Invalid input, an unknown or deactivated user, or tenant unions beyond the user's", body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody)),
    security(("api_key" = [])))]
async fn create_api_key(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(request): ApiJson<CreateApiKeyRequest>,
) -> ApiResult<(StatusCode, Json<CreatedApiKeyDto>)> {
    caller.require(Role::Admin)?;
    let user_id = request
        .user_id
        .ok_or_else(|| ApiError::invalid_field("user_id", "is required: the id of a user"))?;
    let name = label(
        "name",
        request
            .name
            .as_deref()
            .ok_or_else(|| ApiError::invalid_field("name", "is required"))?,
    )?;
    let store = state.store()?;
    let user = match store.get_user(user_id).await {
        Ok(user) => user,
        // An unknown id in the body is bad input, not a missing resource of the path.
        Err(StoreError::NotFound { .. }) => {
            return Err(ApiError::invalid_field(
                "user_id",
                format!("there is no user {user_id}; see GET /app/api/v1/users"),
            ));
        }
        Err(other) => return Err(other.into()),
    };
    if !user.is_active {
        return Err(ApiError::invalid_field(
            "user_id",
            format!(
                "user {user_id} ({}) is deactivated; reactivate them first",
                user.email
            ),
        ));
    }
    let tenant_scope = match request.tenant_union_ids {
        None => user.tenant_scope.clone(),
        ids => scope_field(ids)?,
    };
    let (secret, hash, prefix) = generate_key();
    let key = store
        .create_api_key(&NewApiKey {
            user_id,
            name,
            hash,
            prefix,
            tenant_scope,
        })
        .await?;
    firing::fire_detached(
        &state,
        store,
        vec![API_KEY_CREATED],
        firing::api_key_firing(&key, &user),
    );
    let created = CreatedApiKeyDto {
        api_key: ApiKeyDto::new(&key, UserDto::from(&user)),
        key: secret,
    };
    Ok((StatusCode::CREATED, Json(created)))
}

/// Revoke an API key (admin): it stops working at once. Revoking again changes nothing.
/// Fires `API_KEY_REVOKED` when the key was working.
#[utoipa::path(post, path = "/app/api/v1/api-keys/{api_key_id}/revoke", tag = "users",
    params(("api_key_id" = String, Path)),
    responses((status = 200, body = ApiKeyDto), (status = 401, body = ErrorBody), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)),
    security(("api_key" = [])))]
async fn revoke_api_key(
    State(state): State<AppState>,
    caller: Caller,
    Path(api_key_id): Path<String>,
) -> ApiResult<Json<ApiKeyDto>> {
    caller.require(Role::Admin)?;
    let api_key_id = path_id(&api_key_id, "api key")?;
    let store = state.store()?;
    // Times are kept to the microsecond: the key was revoked now when it reads back `now`.
    let now = chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 6);
    let key = store.revoke_api_key(api_key_id, now).await?;
    let user = store.get_user(key.user_id).await?;
    if key.revoked_at == Some(now) {
        firing::fire_detached(
            &state,
            store,
            vec![API_KEY_REVOKED],
            firing::api_key_firing(&key, &user),
        );
    }
    Ok(Json(ApiKeyDto::new(&key, UserDto::from(&user))))
}
