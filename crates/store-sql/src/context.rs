//! The operator's context document kept through the API: one row, replaced whole.

use sleuth_domain::Timestamp;
use sleuth_store::{StoreResult, StoredContext};
use sqlx::AnyPool;

use crate::DbResultExt;
use crate::rows::{self, micros};

pub(crate) async fn get_context_document(pool: &AnyPool) -> StoreResult<Option<StoredContext>> {
    let row =
        sqlx::query("SELECT document, updated_by, updated_at FROM context_documents WHERE id = 1")
            .fetch_optional(pool)
            .await
            .db()?;
    row.map(|row| {
        Ok(StoredContext {
            document: rows::text(&row, "document")?,
            updated_by: rows::opt_int(&row, "updated_by")?,
            updated_at: rows::time(&row, "updated_at")?,
        })
    })
    .transpose()
}

pub(crate) async fn put_context_document(
    pool: &AnyPool,
    document: &str,
    updated_by: Option<i64>,
    at: Timestamp,
) -> StoreResult<StoredContext> {
    sqlx::query(
        "INSERT INTO context_documents (id, document, updated_by, updated_at) VALUES (1, $1, $2, $3) \
         ON CONFLICT (id) DO UPDATE SET document = excluded.document, \
         updated_by = excluded.updated_by, updated_at = excluded.updated_at",
    )
    .bind(document)
    .bind(updated_by)
    .bind(micros(at))
    .execute(pool)
    .await
    .db()?;
    Ok(StoredContext {
        document: document.to_string(),
        updated_by,
        updated_at: at,
    })
}
