//! Data sources (`sleuth_store::DataSourceStore`): their definitions and limits as JSON
//! text, scope and state.

use async_trait::async_trait;
use sleuth_domain::Timestamp;
use sleuth_store::{
    DataSourceChanges, DataSourceRecord, DataSourceStore, NewDataSource, StoreError, StoreResult,
};
use sqlx::any::AnyRow;

use crate::rows::{self, micros};
use crate::{DbResultExt, SqlStore};

macro_rules! columns {
    () => {
        "id, name, definition, limits, tenant_union_id, enabled, revision, created_at, updated_at"
    };
}

fn read(row: &AnyRow) -> StoreResult<DataSourceRecord> {
    let json = |column: &str| -> StoreResult<serde_json::Value> {
        serde_json::from_str(&rows::text(row, column)?).map_err(|error| {
            StoreError::internal(format!(
                "a data source's stored {column} is not JSON: {error}"
            ))
        })
    };
    Ok(DataSourceRecord {
        id: rows::int(row, "id")?,
        name: rows::text(row, "name")?,
        definition: json("definition")?,
        limits: json("limits")?,
        tenant_union_id: rows::opt_int(row, "tenant_union_id")?,
        enabled: rows::flag(row, "enabled")?,
        revision: rows::int(row, "revision")?,
        created_at: rows::time(row, "created_at")?,
        updated_at: rows::time(row, "updated_at")?,
    })
}

/// A unique name taken, or a tenant union that does not exist, as outcomes.
fn refusal(error: sqlx::Error, name: &str) -> StoreError {
    crate::named_record_error(error, "data source", name)
}

#[async_trait]
impl DataSourceStore for SqlStore {
    async fn create_data_source(&self, source: &NewDataSource) -> StoreResult<DataSourceRecord> {
        let row = sqlx::query(concat!(
            "INSERT INTO data_sources (name, definition, limits, tenant_union_id, enabled, \
             created_by, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) \
             RETURNING ",
            columns!()
        ))
        .bind(&source.name)
        .bind(source.definition.to_string())
        .bind(source.limits.to_string())
        .bind(source.tenant_union_id)
        .bind(i64::from(source.enabled))
        .bind(source.created_by)
        .bind(micros(source.at))
        .fetch_one(&self.pool)
        .await
        .map_err(|error| refusal(error, &source.name))?;
        read(&row)
    }

    async fn list_data_sources(&self) -> StoreResult<Vec<DataSourceRecord>> {
        sqlx::query(concat!(
            "SELECT ",
            columns!(),
            " FROM data_sources ORDER BY id"
        ))
        .fetch_all(&self.pool)
        .await
        .db()?
        .iter()
        .map(read)
        .collect()
    }

    async fn get_data_source(&self, data_source_id: i64) -> StoreResult<DataSourceRecord> {
        let row = sqlx::query(concat!(
            "SELECT ",
            columns!(),
            " FROM data_sources WHERE id = $1"
        ))
        .bind(data_source_id)
        .fetch_optional(&self.pool)
        .await
        .db()?
        .ok_or_else(|| StoreError::not_found("data source", data_source_id))?;
        read(&row)
    }

    async fn update_data_source(
        &self,
        data_source_id: i64,
        changes: &DataSourceChanges,
        at: Timestamp,
    ) -> StoreResult<DataSourceRecord> {
        let current = self.get_data_source(data_source_id).await?;
        let tenant_union_id = changes.tenant_union_id.unwrap_or(current.tenant_union_id);
        let row = sqlx::query(concat!(
            "UPDATE data_sources SET definition = COALESCE($1, definition), \
             limits = COALESCE($2, limits), enabled = COALESCE($3, enabled), \
             tenant_union_id = $4, revision = revision + 1, updated_at = $5 WHERE id = $6 \
             RETURNING ",
            columns!()
        ))
        .bind(changes.definition.as_ref().map(ToString::to_string))
        .bind(changes.limits.as_ref().map(ToString::to_string))
        .bind(changes.enabled.map(i64::from))
        .bind(tenant_union_id)
        .bind(micros(at))
        .bind(data_source_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(|error| refusal(error, &current.name))?
        .ok_or_else(|| StoreError::not_found("data source", data_source_id))?;
        read(&row)
    }

    async fn delete_data_source(&self, data_source_id: i64) -> StoreResult<()> {
        let deleted = sqlx::query("DELETE FROM data_sources WHERE id = $1")
            .bind(data_source_id)
            .execute(&self.pool)
            .await
            .db()?;
        if deleted.rows_affected() == 0 {
            return Err(StoreError::not_found("data source", data_source_id));
        }
        Ok(())
    }
}
