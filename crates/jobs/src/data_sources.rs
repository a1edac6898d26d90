//! The data sources of this process, as the pipeline asks them: the stored definitions put
//! in force (`sleuth-sources`), kept current, and their secrets opened from the secret
//! store for each call.
//!
//! Stored sources are read again when this process changed one through the API, and
//! otherwise every `data_sources.refresh_seconds`, so a change made through another
//! process (a `sleuth worker`) applies within that time. Reading them is one small query;
//! the sources that did not change keep their cache, breaker and rate limit.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sleuth_domain::ParsedAlert;
use sleuth_sources::{Definition, Limits, Secrets, SourceConfig, Sources};
use sleuth_store::{DataSourceRecord, Store};

use crate::metrics::Metrics;
use crate::settings::DataSourceSettings;

/// The sources in force and when they were last read from the store.
pub struct DataSources {
    sources: Sources,
    /// When the stored sources were last put in force; `None`: read them before the next use.
    loaded: tokio::sync::Mutex<Option<Instant>>,
}

impl std::fmt::Debug for DataSources {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("DataSources")
            .field("sources", &self.sources)
            .finish_non_exhaustive()
    }
}

impl DataSources {
    /// `secrets` opens a source's secrets at the moment of its call; `sandbox` runs the
    /// enrichment scripts.
    pub fn new(
        secrets: Arc<dyn Secrets>,
        sandbox: Option<Arc<sleuth_sandbox::Sandbox>>,
    ) -> Result<DataSources, String> {
        Ok(DataSources {
            sources: Sources::new(secrets, sandbox)?,
            loaded: tokio::sync::Mutex::new(None),
        })
    }

    /// The sources, for `test` and metrics.
    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    /// Makes the next use read the stored sources again (this process changed one).
    pub async fn changed(&self) {
        *self.loaded.lock().await = None;
    }

    /// Reads the stored sources when they are due, and puts them in force. A failure to
    /// read keeps the sources in force (logged): a database hiccup must not turn every
    /// investigation's sources off.
    async fn refresh(&self, store: &Arc<dyn Store>, every: Duration) {
        // One refresh at a time. The others wait for it (a query of a few rows every
        // `every`) rather than go on without the sources: right after a start or a change,
        // the sources in force are none or stale.
        let mut loaded = self.loaded.lock().await;
        if loaded.is_some_and(|at| at.elapsed() < every) {
            return;
        }
        match store.list_data_sources().await {
            Ok(records) => {
                let configs = records.iter().filter_map(config_of).collect();
                for (name, error) in self.sources.replace(configs) {
                    tracing::error!(source = %name, "a stored data source is left out: {error}");
                }
                *loaded = Some(Instant::now());
            }
            Err(error) => {
                tracing::error!("could not read the data sources; the ones in force stay: {error}");
            }
        }
    }

    /// What the sources in force for the alert's tenant union say about its entities,
    /// within the investigation's budget. Each call is counted in the metrics.
    pub async fn gather(
        &self,
        settings: &DataSourceSettings,
        metrics: &Metrics,
        store: &Arc<dyn Store>,
        alert: &ParsedAlert,
        tenant_union_id: i64,
    ) -> sleuth_domain::Facts {
        self.refresh(store, Duration::from_secs(settings.refresh_seconds))
            .await;
        let gathered = self
            .sources
            .gather(alert, tenant_union_id, settings.budget())
            .await;
        for call in &gathered.calls {
            metrics.data_source_call(&call.source, call.origin, call.failed, call.elapsed);
        }
        if !gathered.calls.is_empty() {
            for (source, breaker) in self.sources.breaker_states() {
                metrics.data_source_breaker(&source, breaker);
            }
        }
        gathered.facts
    }
}

/// Why a data source cannot be stored as asked: the field, and what is wrong with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub field: &'static str,
    pub message: String,
}

impl Refusal {
    fn new(field: &'static str, message: impl Into<String>) -> Refusal {
        Refusal {
            field,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}: {}", self.field, self.message)
    }
}

/// The definition and limits of the shipped definition `name`, with the vendor's URL for
/// this customer in place of the shipped one when given.
pub fn shipped(
    name: &str,
    base_url: Option<&str>,
) -> Result<(serde_json::Value, serde_json::Value), Refusal> {
    let shipped = sleuth_sources::shipped::find(name).ok_or_else(|| {
        Refusal::new(
            "shipped",
            format!(
                "'{}' is not a shipped definition: one of {}",
                name.chars().take(60).collect::<String>(),
                sleuth_sources::shipped::all()
                    .iter()
                    .map(|shipped| shipped.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    let mut definition = shipped.definition;
    if let Some(base_url) = base_url {
        match &mut definition {
            Definition::HttpJson(http) => base_url.clone_into(&mut http.base_url),
            Definition::Directory(_) | Definition::Script(_) => {
                return Err(Refusal::new(
                    "base_url",
                    "this shipped definition has no base URL",
                ));
            }
        }
    }
    Ok((to_json(&definition)?, to_json(&shipped.limits)?))
}

/// A definition or limits as stored: plain data, so this fails only on a bug.
pub fn to_json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, Refusal> {
    serde_json::to_value(value).map_err(|error| Refusal::new("definition", error.to_string()))
}

/// The definition and limits read and checked whole, and the secrets they name that are
/// not stored (each must be, before the source is stored).
pub async fn check(
    store: &dyn Store,
    definition: serde_json::Value,
    limits: serde_json::Value,
) -> Result<Result<(Definition, Limits), Refusal>, sleuth_store::StoreError> {
    let definition: Definition = match serde_json::from_value(definition) {
        Ok(definition) => definition,
        Err(error) => {
            return Ok(Err(Refusal::new(
                "definition",
                format!("does not read as a data source definition: {error}"),
            )));
        }
    };
    let limits: Limits = match serde_json::from_value(limits) {
        Ok(limits) => limits,
        Err(error) => return Ok(Err(Refusal::new("limits", format!("do not read: {error}")))),
    };
    if let Err(error) = limits.check() {
        return Ok(Err(Refusal::new("limits", error)));
    }
    let compiled = match definition.compile() {
        Ok(compiled) => compiled,
        Err(error) => return Ok(Err(Refusal::new("definition", error))),
    };
    let wanted = compiled.secret_names();
    if !wanted.is_empty() {
        let stored = store.list_script_secrets().await?;
        let missing: Vec<String> = wanted
            .into_iter()
            .filter(|name| !stored.iter().any(|secret| &secret.name == name))
            .map(|name| name.chars().take(100).collect())
            .collect();
        if !missing.is_empty() {
            return Ok(Err(Refusal::new(
                "definition",
                format!(
                    "names secrets that are not stored: {}; store each first (`sleuth secret \
                     set NAME`)",
                    missing.join(", ")
                ),
            )));
        }
    }
    Ok(Ok((definition, limits)))
}

/// A stored source as the sources crate takes it; `None` (logged) when its stored JSON no
/// longer reads (written by another version of Sleuth).
pub fn config_of(record: &DataSourceRecord) -> Option<SourceConfig> {
    let definition: Definition = match serde_json::from_value(record.definition.clone()) {
        Ok(definition) => definition,
        Err(error) => {
            tracing::error!(source = %record.name, "a stored data source's definition does not read: {error}");
            return None;
        }
    };
    let limits: Limits = match serde_json::from_value(record.limits.clone()) {
        Ok(limits) => limits,
        Err(error) => {
            tracing::error!(source = %record.name, "a stored data source's limits do not read: {error}");
            return None;
        }
    };
    Some(SourceConfig {
        id: record.id,
        name: record.name.clone(),
        version: record.revision,
        tenant_union_id: record.tenant_union_id,
        enabled: record.enabled,
        definition,
        limits,
    })
}
