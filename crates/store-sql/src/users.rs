//! Users and their API keys.

use sleuth_domain::{Role, Timestamp};
use sleuth_store::{
    ApiKey, KeyHash, NewApiKey, NewUser, Principal, StoreError, StoreResult, TenantScope, User,
    UserChanges,
};
use sqlx::AnyPool;
use sqlx::any::AnyRow;

use crate::rows::{self, micros};
use crate::{DbResultExt, Dialect};

/// The user columns every query selects (table alias `u`), aliased so joins cannot
/// confuse them. A macro, so that `concat!` can build `&'static str` queries from it.
macro_rules! user_columns {
    () => {
        "u.id AS user_id, u.email AS user_email, u.first_name AS user_first_name, \
         u.last_name AS user_last_name, u.role AS user_role, u.oidc_user_id AS user_oidc_user_id, \
         u.is_active AS user_is_active, u.tenant_union_ids AS user_tenant_union_ids, \
         u.created_at AS user_created_at, u.updated_at AS user_updated_at"
    };
}
pub(crate) use user_columns;

pub(crate) fn read_user(row: &AnyRow) -> StoreResult<User> {
    Ok(User {
        id: rows::int(row, "user_id")?,
        email: rows::text(row, "user_email")?,
        first_name: rows::text(row, "user_first_name")?,
        last_name: rows::text(row, "user_last_name")?,
        role: rows::parsed(row, "user_role", Role::parse)?,
        oidc_user_id: rows::opt_text(row, "user_oidc_user_id")?,
        is_active: rows::flag(row, "user_is_active")?,
        tenant_scope: TenantScope::from_column(
            rows::opt_text(row, "user_tenant_union_ids")?.as_deref(),
        )?,
        created_at: rows::time(row, "user_created_at")?,
        updated_at: rows::time(row, "user_updated_at")?,
    })
}

pub(crate) async fn count_users(pool: &AnyPool) -> StoreResult<u64> {
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users")
        .fetch_one(pool)
        .await
        .db()?;
    Ok(u64::try_from(count).unwrap_or(0))
}

const INSERT_USER: &str = "INSERT INTO users \
    (email, first_name, last_name, role, oidc_user_id, is_active, created_at, updated_at, \
    tenant_union_ids) VALUES ($1, $2, $3, $4, $5, 1, $6, $6, $7) RETURNING id";

/// `Rejected` unless every union `scope` names exists, and it names at least one.
async fn check_scope(connection: &mut sqlx::AnyConnection, scope: &TenantScope) -> StoreResult<()> {
    let Some(ids) = scope.union_ids() else {
        return Ok(());
    };
    if ids.is_empty() {
        return Err(StoreError::Rejected {
            detail: "a tenant scope names at least one tenant union (or none at all, for every \
                     union)"
                .into(),
        });
    }
    for id in ids {
        let found: Option<i64> = sqlx::query_scalar("SELECT id FROM tenant_unions WHERE id = $1")
            .bind(*id)
            .fetch_optional(&mut *connection)
            .await
            .db()?;
        if found.is_none() {
            return Err(StoreError::Rejected {
                detail: format!("there is no tenant union {id}; see GET /app/api/v1/tenant-unions"),
            });
        }
    }
    Ok(())
}

pub(crate) async fn create_user(pool: &AnyPool, user: &NewUser) -> StoreResult<User> {
    let now = micros(chrono::Utc::now());
    let mut connection = pool.acquire().await.db()?;
    check_scope(&mut connection, &user.tenant_scope).await?;
    let inserted = sqlx::query_scalar::<_, i64>(INSERT_USER)
        .bind(user.email.as_str())
        .bind(&user.first_name)
        .bind(&user.last_name)
        .bind(user.role.as_str())
        .bind(user.oidc_user_id.as_deref())
        .bind(now)
        .bind(user.tenant_scope.to_column())
        .fetch_one(&mut *connection)
        .await
        .db();
    drop(connection);
    match inserted {
        Ok(user_id) => get_user(pool, user_id).await,
        Err(StoreError::Conflict { .. }) => Err(StoreError::Conflict {
            detail: format!("a user with email {} already exists", user.email),
        }),
        Err(other) => Err(other),
    }
}

pub(crate) async fn bootstrap_admin(
    pool: &AnyPool,
    dialect: Dialect,
    user: &NewUser,
    key: &NewApiKey,
) -> StoreResult<Option<User>> {
    let now = micros(chrono::Utc::now());
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    check_scope(&mut transaction, &user.tenant_scope).await?;
    if dialect == Dialect::Postgres {
        // Two processes starting together must not both create an admin.
        sqlx::query("SELECT pg_advisory_xact_lock(7469001)")
            .execute(&mut *transaction)
            .await
            .db()?;
    }
    let inserted: Option<i64> = sqlx::query_scalar(
        "INSERT INTO users (email, first_name, last_name, role, oidc_user_id, is_active, created_at, \
         updated_at, tenant_union_ids) \
         SELECT $1, $2, $3, $4, $5, 1, $6, $6, $7 WHERE NOT EXISTS (SELECT 1 FROM users) RETURNING id",
    )
    .bind(user.email.as_str())
    .bind(&user.first_name)
    .bind(&user.last_name)
    .bind(user.role.as_str())
    .bind(user.oidc_user_id.as_deref())
    .bind(now)
    .bind(user.tenant_scope.to_column())
    .fetch_optional(&mut *transaction)
    .await
    .db()?;
    let Some(user_id) = inserted else {
        return Ok(None);
    };
    insert_api_key(
        &mut transaction,
        &NewApiKey {
            user_id,
            ..key.clone()
        },
        now,
    )
    .await?;
    transaction.commit().await.db()?;
    get_user(pool, user_id).await.map(Some)
}

pub(crate) async fn get_user(pool: &AnyPool, user_id: i64) -> StoreResult<User> {
    let row = sqlx::query(concat!(
        "SELECT ",
        user_columns!(),
        " FROM users u WHERE u.id = $1"
    ))
    .bind(user_id)
    .fetch_optional(pool)
    .await
    .db()?;
    row.as_ref()
        .map(read_user)
        .transpose()?
        .ok_or_else(|| StoreError::not_found("user", user_id))
}

pub(crate) async fn find_user_by_email(pool: &AnyPool, email: &str) -> StoreResult<Option<User>> {
    let row = sqlx::query(concat!(
        "SELECT ",
        user_columns!(),
        " FROM users u WHERE u.email = $1"
    ))
    .bind(email.trim().to_lowercase())
    .fetch_optional(pool)
    .await
    .db()?;
    row.as_ref().map(read_user).transpose()
}

pub(crate) async fn list_users(pool: &AnyPool) -> StoreResult<Vec<User>> {
    let found = sqlx::query(concat!(
        "SELECT ",
        user_columns!(),
        " FROM users u ORDER BY u.id"
    ))
    .fetch_all(pool)
    .await
    .db()?;
    found.iter().map(read_user).collect()
}

pub(crate) async fn update_user(
    pool: &AnyPool,
    dialect: Dialect,
    user_id: i64,
    changes: &UserChanges,
) -> StoreResult<User> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    let may_remove_an_admin =
        changes.role.is_some_and(|role| role != Role::Admin) || changes.is_active == Some(false);
    if may_remove_an_admin && dialect == Dialect::Postgres {
        // Two admins demoting each other at once must not both succeed: serialise the
        // changes that can remove an admin, then count what is left.
        sqlx::query("SELECT pg_advisory_xact_lock(7469002)")
            .execute(&mut *transaction)
            .await
            .db()?;
    }
    // Only a change that takes an active admin away can leave none (a database without
    // any admin, as in some tests, is not made worse by changing a member).
    let was_active_admin: Option<i64> = sqlx::query_scalar(
        "SELECT id FROM users WHERE id = $1 AND role = 'admin' AND is_active = 1",
    )
    .bind(user_id)
    .fetch_optional(&mut *transaction)
    .await
    .db()?;
    // COALESCE keeps a column when its change is absent, so one statement covers every subset.
    let updated = sqlx::query(
        "UPDATE users SET role = COALESCE($2, role), first_name = COALESCE($3, first_name), \
         last_name = COALESCE($4, last_name), is_active = COALESCE($5, is_active), updated_at = $6 \
         WHERE id = $1",
    )
    .bind(user_id)
    .bind(changes.role.map(Role::as_str))
    .bind(changes.first_name.as_deref())
    .bind(changes.last_name.as_deref())
    .bind(changes.is_active.map(i64::from))
    .bind(micros(chrono::Utc::now()))
    .execute(&mut *transaction)
    .await
    .db()?;
    if updated.rows_affected() == 0 {
        return Err(StoreError::not_found("user", user_id));
    }
    if let Some(scope) = &changes.tenant_scope {
        // Keys keep their own binding: what they reach is narrowed by the user's at every
        // authentication, so narrowing a user narrows their keys at once.
        check_scope(&mut transaction, scope).await?;
        sqlx::query("UPDATE users SET tenant_union_ids = $2 WHERE id = $1")
            .bind(user_id)
            .bind(scope.to_column())
            .execute(&mut *transaction)
            .await
            .db()?;
    }
    if changes.is_active == Some(false) {
        // Deactivation revokes the user's keys for good: reactivating a user must not
        // silently bring back keys that may have leaked while they were away.
        sqlx::query(
            "UPDATE api_keys SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL",
        )
        .bind(user_id)
        .bind(micros(chrono::Utc::now()))
        .execute(&mut *transaction)
        .await
        .db()?;
    }
    if may_remove_an_admin && was_active_admin.is_some() {
        let admins: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM users WHERE role = 'admin' AND is_active = 1")
                .fetch_one(&mut *transaction)
                .await
                .db()?;
        if admins == 0 {
            // Dropping the transaction rolls the change back.
            return Err(StoreError::Rejected {
                detail: format!(
                    "user {user_id} is the last active admin; make another user admin first, \
                     so that someone can still manage users and keys"
                ),
            });
        }
    }
    transaction.commit().await.db()?;
    get_user(pool, user_id).await
}

async fn insert_api_key(
    connection: &mut sqlx::AnyConnection,
    key: &NewApiKey,
    now: i64,
) -> StoreResult<i64> {
    sqlx::query_scalar(
        "INSERT INTO api_keys (user_id, name, key_hash, key_prefix, created_at, tenant_union_ids) \
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
    )
    .bind(key.user_id)
    .bind(&key.name)
    .bind(key.hash.to_hex())
    .bind(&key.prefix)
    .bind(now)
    .bind(key.tenant_scope.to_column())
    .fetch_one(connection)
    .await
    .db()
}

macro_rules! api_key_select {
    () => {
        "SELECT k.id, k.user_id, u.email AS user_email, k.name, k.key_prefix, k.created_at, \
         k.last_used_at, k.revoked_at, k.tenant_union_ids FROM api_keys k \
         JOIN users u ON u.id = k.user_id"
    };
}

fn read_api_key(row: &AnyRow) -> StoreResult<ApiKey> {
    Ok(ApiKey {
        id: rows::int(row, "id")?,
        user_id: rows::int(row, "user_id")?,
        user_email: rows::text(row, "user_email")?,
        name: rows::text(row, "name")?,
        prefix: rows::text(row, "key_prefix")?,
        created_at: rows::time(row, "created_at")?,
        last_used_at: rows::opt_time(row, "last_used_at")?,
        revoked_at: rows::opt_time(row, "revoked_at")?,
        tenant_scope: TenantScope::from_column(
            rows::opt_text(row, "tenant_union_ids")?.as_deref(),
        )?,
    })
}

async fn get_api_key(pool: &AnyPool, api_key_id: i64) -> StoreResult<ApiKey> {
    let row = sqlx::query(concat!(api_key_select!(), " WHERE k.id = $1"))
        .bind(api_key_id)
        .fetch_optional(pool)
        .await
        .db()?;
    row.as_ref()
        .map(read_api_key)
        .transpose()?
        .ok_or_else(|| StoreError::not_found("api key", api_key_id))
}

pub(crate) async fn create_api_key(pool: &AnyPool, key: &NewApiKey) -> StoreResult<ApiKey> {
    let user = get_user(pool, key.user_id).await?;
    if !key.tenant_scope.is_within(&user.tenant_scope) {
        return Err(StoreError::Rejected {
            detail: format!(
                "a key reaches at most what its user does: {} is bound to {}, the key asked \
                 for {}",
                user.email, user.tenant_scope, key.tenant_scope
            ),
        });
    }
    let mut connection = pool.acquire().await.db()?;
    check_scope(&mut connection, &key.tenant_scope).await?;
    let api_key_id = insert_api_key(&mut connection, key, micros(chrono::Utc::now())).await?;
    drop(connection);
    get_api_key(pool, api_key_id).await
}

pub(crate) async fn list_api_keys(pool: &AnyPool) -> StoreResult<Vec<ApiKey>> {
    let found = sqlx::query(concat!(api_key_select!(), " ORDER BY k.id"))
        .fetch_all(pool)
        .await
        .db()?;
    found.iter().map(read_api_key).collect()
}

pub(crate) async fn revoke_api_key(
    pool: &AnyPool,
    api_key_id: i64,
    at: Timestamp,
) -> StoreResult<ApiKey> {
    sqlx::query("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1")
        .bind(api_key_id)
        .bind(micros(at))
        .execute(pool)
        .await
        .db()?;
    get_api_key(pool, api_key_id).await
}

pub(crate) async fn authenticate(pool: &AnyPool, hash: &KeyHash) -> StoreResult<Option<Principal>> {
    let row = sqlx::query(concat!(
        "SELECT ",
        user_columns!(),
        ", k.id AS api_key_id, k.last_used_at AS key_last_used_at, \
         k.tenant_union_ids AS key_tenant_union_ids FROM api_keys k JOIN users u ON u.id = k.user_id \
         WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND u.is_active = 1"
    ))
    .bind(hash.to_hex())
    .fetch_optional(pool)
    .await
    .db()?;
    let Some(row) = row else {
        return Ok(None);
    };
    Ok(Some(Principal {
        user: read_user(&row)?,
        api_key_id: rows::int(&row, "api_key_id")?,
        key_last_used_at: rows::opt_time(&row, "key_last_used_at")?,
        key_scope: TenantScope::from_column(
            rows::opt_text(&row, "key_tenant_union_ids")?.as_deref(),
        )?,
    }))
}

pub(crate) async fn record_key_use(
    pool: &AnyPool,
    api_key_id: i64,
    at: Timestamp,
) -> StoreResult<()> {
    sqlx::query("UPDATE api_keys SET last_used_at = $2 WHERE id = $1")
        .bind(api_key_id)
        .bind(micros(at))
        .execute(pool)
        .await
        .db()?;
    Ok(())
}
