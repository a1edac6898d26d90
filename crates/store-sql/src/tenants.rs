//! Tenant unions: named groups of tenants that alerts can belong to.

use sleuth_store::{StoreError, StoreResult, TenantUnion, TenantUnionInput};
use sqlx::AnyPool;
use sqlx::any::AnyRow;

use crate::DbResultExt;
use crate::rows::{self, micros};
use crate::users::{read_user, user_columns};

macro_rules! tenant_union_select {
    () => {
        concat!(
            "SELECT t.id AS tenant_union_id, t.display_name AS tenant_union_display_name, \
             t.lookup_dict AS tenant_union_lookup_dict, t.created_at AS tenant_union_created_at, \
             t.updated_at AS tenant_union_updated_at, ",
            user_columns!(),
            " FROM tenant_unions t LEFT JOIN users u ON u.id = t.last_modified_by"
        )
    };
}

/// Reads a tenant union from a row selected with `tenant_union_select!` columns; the
/// modifying user's columns may be null.
pub(crate) fn read_tenant_union(row: &AnyRow) -> StoreResult<TenantUnion> {
    let last_modified_by = match rows::opt_int(row, "user_id")? {
        Some(_) => Some(read_user(row)?),
        None => None,
    };
    Ok(TenantUnion {
        id: rows::int(row, "tenant_union_id")?,
        display_name: rows::text(row, "tenant_union_display_name")?,
        lookup_dict: rows::json(row, "tenant_union_lookup_dict")?,
        last_modified_by,
        created_at: rows::time(row, "tenant_union_created_at")?,
        updated_at: rows::time(row, "tenant_union_updated_at")?,
    })
}

fn conflict(input: &TenantUnionInput) -> StoreError {
    StoreError::Conflict {
        detail: format!(
            "a tenant union named '{}' already exists",
            input.display_name
        ),
    }
}

pub(crate) async fn create_tenant_union(
    pool: &AnyPool,
    input: &TenantUnionInput,
) -> StoreResult<TenantUnion> {
    let now = micros(chrono::Utc::now());
    let inserted = sqlx::query_scalar::<_, i64>(
        "INSERT INTO tenant_unions (display_name, lookup_dict, last_modified_by, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $4) RETURNING id",
    )
    .bind(&input.display_name)
    .bind(rows::to_json(&input.lookup_dict)?)
    .bind(input.modified_by)
    .bind(now)
    .fetch_one(pool)
    .await
    .db();
    match inserted {
        Ok(tenant_union_id) => get_tenant_union(pool, tenant_union_id).await,
        Err(StoreError::Conflict { .. }) => Err(conflict(input)),
        Err(other) => Err(other),
    }
}

pub(crate) async fn update_tenant_union(
    pool: &AnyPool,
    tenant_union_id: i64,
    input: &TenantUnionInput,
) -> StoreResult<TenantUnion> {
    let updated = sqlx::query(
        "UPDATE tenant_unions SET display_name = $2, lookup_dict = $3, last_modified_by = $4, \
         updated_at = $5 WHERE id = $1",
    )
    .bind(tenant_union_id)
    .bind(&input.display_name)
    .bind(rows::to_json(&input.lookup_dict)?)
    .bind(input.modified_by)
    .bind(micros(chrono::Utc::now()))
    .execute(pool)
    .await
    .db();
    match updated {
        Ok(result) if result.rows_affected() == 0 => {
            Err(StoreError::not_found("tenant union", tenant_union_id))
        }
        Ok(_) => get_tenant_union(pool, tenant_union_id).await,
        Err(StoreError::Conflict { .. }) => Err(conflict(input)),
        Err(other) => Err(other),
    }
}

pub(crate) async fn get_tenant_union(
    pool: &AnyPool,
    tenant_union_id: i64,
) -> StoreResult<TenantUnion> {
    let row = sqlx::query(concat!(tenant_union_select!(), " WHERE t.id = $1"))
        .bind(tenant_union_id)
        .fetch_optional(pool)
        .await
        .db()?;
    row.as_ref()
        .map(read_tenant_union)
        .transpose()?
        .ok_or_else(|| StoreError::not_found("tenant union", tenant_union_id))
}

pub(crate) async fn list_tenant_unions(pool: &AnyPool) -> StoreResult<Vec<TenantUnion>> {
    let found = sqlx::query(concat!(tenant_union_select!(), " ORDER BY t.id"))
        .fetch_all(pool)
        .await
        .db()?;
    found.iter().map(read_tenant_union).collect()
}
