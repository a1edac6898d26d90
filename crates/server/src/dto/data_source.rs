//! Data sources (ours): the definition as given (secrets only named), what it answers for,
//! and the state of its circuit breaker in this process.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sleuth_store::DataSourceRecord;
use utoipa::ToSchema;

#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = DataSource)]
pub struct DataSourceDto {
    pub id: i64,
    pub name: String,
    /// directory, threat_intel, registration, endpoint, sign_ins or other; `null` when the
    /// stored definition no longer reads (it is then left out of investigations).
    pub source_kind: Option<String>,
    /// The entity kinds it answers for.
    pub entity_kinds: Vec<String>,
    /// As given: type (http_json, directory or script) and its fields; secrets are named,
    /// never shown.
    #[schema(value_type = Object)]
    pub definition: serde_json::Value,
    #[schema(value_type = Object)]
    pub limits: serde_json::Value,
    /// The tenant union whose alerts it answers for; `null`: every union's.
    pub tenant_union_id: Option<i64>,
    pub enabled: bool,
    /// Moves with every change; answers cached under an older revision are not used.
    pub revision: i64,
    /// This process's circuit breaker for it: closed, open or half_open; `null` when it is
    /// not in force here (disabled, or not yet read).
    pub breaker: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl DataSourceDto {
    pub fn new(record: &DataSourceRecord, breaker: Option<sleuth_sources::BreakerState>) -> Self {
        let compiled = sleuth_jobs::data_sources::config_of(record)
            .and_then(|config| config.definition.compile().ok());
        DataSourceDto {
            id: record.id,
            name: record.name.clone(),
            source_kind: compiled
                .as_ref()
                .map(|compiled| compiled.source_kind().as_str().to_string()),
            entity_kinds: compiled
                .as_ref()
                .map(|compiled| {
                    compiled
                        .entity_kinds()
                        .iter()
                        .map(|kind| kind.as_str().to_string())
                        .collect()
                })
                .unwrap_or_default(),
            definition: record.definition.clone(),
            limits: record.limits.clone(),
            tenant_union_id: record.tenant_union_id,
            enabled: record.enabled,
            revision: record.revision,
            breaker: breaker.map(|state| {
                match state {
                    sleuth_sources::BreakerState::Closed => "closed",
                    sleuth_sources::BreakerState::Open => "open",
                    sleuth_sources::BreakerState::HalfOpen => "half_open",
                }
                .to_string()
            }),
            created_at: record.created_at,
            updated_at: record.updated_at,
        }
    }
}

/// What one test look-up gave.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = DataSourceTest)]
pub struct DataSourceTestDto {
    /// found, not_found or failed.
    pub result: String,
    /// The facts taken from the answer, by fact name.
    #[schema(value_type = Object)]
    pub facts: serde_json::Map<String, serde_json::Value>,
    /// Why it failed, in words that hold no secret.
    pub reason: Option<String>,
    /// The source's own answer as it came (HTTP JSON and script sources).
    #[schema(value_type = Option<Object>)]
    pub raw: Option<serde_json::Value>,
    pub elapsed_ms: u64,
}

/// A definition Sleuth ships, to create a source from by name.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ShippedDataSource)]
pub struct ShippedDataSourceDto {
    pub name: String,
    pub description: String,
    /// The vendor's documentation of the API it calls.
    pub documentation: String,
    #[schema(value_type = Object)]
    pub definition: serde_json::Value,
    #[schema(value_type = Object)]
    pub limits: serde_json::Value,
}
