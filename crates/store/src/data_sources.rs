//! Data sources that investigations query (the directory, threat intelligence, ...): their
//! definitions as JSON, checked by `sleuth-sources` before they are stored, and scoped to
//! a tenant union or to all.

use async_trait::async_trait;
use sleuth_domain::Timestamp;

use crate::StoreResult;

#[derive(Debug, Clone)]
pub struct NewDataSource {
    pub name: String,
    pub definition: serde_json::Value,
    pub limits: serde_json::Value,
    /// The tenant union whose alerts it answers for; `None`: every union's.
    pub tenant_union_id: Option<i64>,
    pub enabled: bool,
    pub created_by: Option<i64>,
    pub at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DataSourceRecord {
    pub id: i64,
    pub name: String,
    pub definition: serde_json::Value,
    pub limits: serde_json::Value,
    pub tenant_union_id: Option<i64>,
    pub enabled: bool,
    /// Moves with every change.
    pub revision: i64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A change of a data source; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct DataSourceChanges {
    pub definition: Option<serde_json::Value>,
    pub limits: Option<serde_json::Value>,
    pub enabled: Option<bool>,
    /// `Some(None)`: every union's.
    pub tenant_union_id: Option<Option<i64>>,
}

#[async_trait]
pub trait DataSourceStore {
    /// `Conflict` when the name is taken; `Rejected` when the tenant union does not exist.
    async fn create_data_source(&self, source: &NewDataSource) -> StoreResult<DataSourceRecord>;
    /// Every data source, by id.
    async fn list_data_sources(&self) -> StoreResult<Vec<DataSourceRecord>>;
    async fn get_data_source(&self, data_source_id: i64) -> StoreResult<DataSourceRecord>;
    async fn update_data_source(
        &self,
        data_source_id: i64,
        changes: &DataSourceChanges,
        at: Timestamp,
    ) -> StoreResult<DataSourceRecord>;
    async fn delete_data_source(&self, data_source_id: i64) -> StoreResult<()>;
}
