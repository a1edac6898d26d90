//! Push sources (`sleuth_store::PushStore`): their settings, token hashes and counts.

use async_trait::async_trait;
use sleuth_domain::Timestamp;
use sleuth_store::{
    KeyHash, NewPushSource, PushKind, PushSource, PushSourceChanges, PushStore, StoreError,
    StoreResult,
};
use sqlx::any::AnyRow;

use crate::rows::{self, micros};
use crate::{DbResultExt, SqlStore};

macro_rules! columns {
    () => {
        "id, name, kind, token_hash, signing_secret, tenant_union_id, enabled, deliveries, \
         alerts_received, last_delivery_at, created_at, updated_at"
    };
}

fn read(row: &AnyRow) -> StoreResult<PushSource> {
    let kind = rows::text(row, "kind")?;
    let token_hash = rows::text(row, "token_hash")?;
    let token_hash = KeyHash::from_hex(&token_hash)
        .ok_or_else(|| StoreError::internal("a push source's stored token hash is not hex"))?;
    Ok(PushSource {
        id: rows::int(row, "id")?,
        name: rows::text(row, "name")?,
        kind: PushKind::parse(&kind).ok_or_else(|| {
            StoreError::internal(format!("a push source has the unknown kind '{kind}'"))
        })?,
        token_hash,
        signing_secret: rows::opt_text(row, "signing_secret")?,
        tenant_union_id: rows::opt_int(row, "tenant_union_id")?,
        enabled: rows::flag(row, "enabled")?,
        deliveries: rows::int(row, "deliveries")?,
        alerts_received: rows::int(row, "alerts_received")?,
        last_delivery_at: rows::opt_time(row, "last_delivery_at")?,
        created_at: rows::time(row, "created_at")?,
        updated_at: rows::time(row, "updated_at")?,
    })
}

#[async_trait]
impl PushStore for SqlStore {
    async fn create_push_source(&self, source: &NewPushSource) -> StoreResult<PushSource> {
        let row = sqlx::query(concat!(
            "INSERT INTO push_sources (name, kind, token_hash, signing_secret, tenant_union_id, \
             created_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) \
             RETURNING ",
            columns!()
        ))
        .bind(&source.name)
        .bind(source.kind.as_str())
        .bind(source.token_hash.to_hex())
        .bind(source.signing_secret.as_deref())
        .bind(source.tenant_union_id)
        .bind(source.created_by)
        .bind(micros(source.at))
        .fetch_one(&self.pool)
        .await
        .map_err(|error| match crate::store_error(error) {
            StoreError::Conflict { .. } => StoreError::Conflict {
                detail: format!("a push source named '{}' exists", source.name),
            },
            other => other,
        })?;
        read(&row)
    }

    async fn list_push_sources(&self) -> StoreResult<Vec<PushSource>> {
        sqlx::query(concat!(
            "SELECT ",
            columns!(),
            " FROM push_sources ORDER BY id"
        ))
        .fetch_all(&self.pool)
        .await
        .db()?
        .iter()
        .map(read)
        .collect()
    }

    async fn get_push_source(&self, push_source_id: i64) -> StoreResult<PushSource> {
        let row = sqlx::query(concat!(
            "SELECT ",
            columns!(),
            " FROM push_sources WHERE id = $1"
        ))
        .bind(push_source_id)
        .fetch_optional(&self.pool)
        .await
        .db()?
        .ok_or_else(|| StoreError::not_found("push source", push_source_id))?;
        read(&row)
    }

    async fn update_push_source(
        &self,
        push_source_id: i64,
        changes: &PushSourceChanges,
        at: Timestamp,
    ) -> StoreResult<PushSource> {
        let row = sqlx::query(concat!(
            "UPDATE push_sources SET enabled = COALESCE($1, enabled), \
             token_hash = COALESCE($2, token_hash), updated_at = $3 WHERE id = $4 \
             RETURNING ",
            columns!()
        ))
        .bind(changes.enabled.map(i64::from))
        .bind(changes.token_hash.as_ref().map(KeyHash::to_hex))
        .bind(micros(at))
        .bind(push_source_id)
        .fetch_optional(&self.pool)
        .await
        .db()?
        .ok_or_else(|| StoreError::not_found("push source", push_source_id))?;
        read(&row)
    }

    async fn delete_push_source(&self, push_source_id: i64) -> StoreResult<()> {
        let deleted = sqlx::query("DELETE FROM push_sources WHERE id = $1")
            .bind(push_source_id)
            .execute(&self.pool)
            .await
            .db()?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::not_found("push source", push_source_id));
        }
        Ok(())
    }

    async fn record_push_delivery(
        &self,
        push_source_id: i64,
        alerts: i64,
        at: Timestamp,
    ) -> StoreResult<()> {
        sqlx::query(
            "UPDATE push_sources SET deliveries = deliveries + 1, \
             alerts_received = alerts_received + $1, last_delivery_at = $2 WHERE id = $3",
        )
        .bind(alerts)
        .bind(micros(at))
        .bind(push_source_id)
        .execute(&self.pool)
        .await
        .db()?;
        Ok(())
    }
}
