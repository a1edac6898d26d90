//! The tenant scope of a request inside the queries that answer it (`TenantScope`): a
//! filter on a tenant union column, so that pages and counts hold only what the caller may
//! see, and a check that answers another tenant's investigation as missing.

use sleuth_store::{StoreError, StoreResult, TenantScope};
use sqlx::AnyConnection;

use crate::DbResultExt;
use crate::builder::SqlBuilder;

/// ` AND column IN (...)` for a bound scope (`1 = 0` when it allows no union, and so a NULL
/// union, as a global item has, never matches); nothing for every union.
pub(crate) fn push_union_filter(
    builder: &mut SqlBuilder,
    column: &str,
    scope: &TenantScope,
) -> StoreResult<()> {
    match scope.union_ids() {
        None => {}
        Some([]) => {
            builder.push(" AND 1 = 0");
        }
        Some(ids) => {
            builder.push(&format!(" AND {column} IN "));
            builder.bind_list(ids.iter().copied())?;
        }
    }
    Ok(())
}

/// The investigation's tenant union; `NotFound` unless the investigation exists within
/// `scope`.
pub(crate) async fn check_investigation(
    connection: &mut AnyConnection,
    investigation_id: i64,
    scope: &TenantScope,
) -> StoreResult<i64> {
    let mut probe = SqlBuilder::new("SELECT i.tenant_union_id FROM investigations i WHERE i.id = ");
    probe.bind(investigation_id)?;
    push_union_filter(&mut probe, "i.tenant_union_id", scope)?;
    let found: Option<i64> = probe
        .build_scalar()
        .fetch_optional(&mut *connection)
        .await
        .db()?;
    found.ok_or_else(|| StoreError::not_found("investigation", investigation_id))
}
