//! The one way an alert is made ready to store, whichever way it came in (SPEC's creates,
//! the push endpoints, the connectors): parsed, with its tenant union, identity and content
//! hash, so every alert is read alike.

use serde_json::{Map, Value};
use sleuth_store::{
    DEFAULT_TENANT_UNION_ID, NewAlert, Store, StoreError, alert_identity, canonical_hash,
};

/// How an alert is read and whose it is: what a create names beside the alert.
#[derive(Debug, Clone, Default)]
pub struct AlertOptions {
    pub schema_key: Option<String>,
    pub tenant_union_id: Option<i64>,
    pub tenant_integration_key: Option<String>,
}

/// Why an alert cannot be stored. The HTTP layer answers the first two with 400.
#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    /// The alert itself cannot be read.
    #[error("{0}")]
    Unreadable(String),
    /// A value named beside the alert is wrong.
    #[error("{field}: {message}")]
    InvalidField {
        field: &'static str,
        message: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// An alert ready to store. `raw_text` is the alert's exact text, `raw` the same parsed.
pub async fn prepare(
    store: &dyn Store,
    raw_text: String,
    raw: &Value,
    options: &AlertOptions,
) -> Result<NewAlert, IntakeError> {
    if !raw.is_object() {
        return Err(IntakeError::Unreadable(
            "the alert must be a JSON object".into(),
        ));
    }
    if let Some(key) = &options.tenant_integration_key
        && (key.chars().count() > 200 || key.chars().any(char::is_control))
    {
        return Err(IntakeError::InvalidField {
            field: "tenant_integration_key",
            message: "must be at most 200 characters, without control characters (NUL among them)"
                .into(),
        });
    }
    // Stored times have microsecond precision; so does everything derived from this one.
    let received_at = chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 6);
    let parsed = sleuth_parsers::parse_alert(options.schema_key.as_deref(), raw, received_at)
        .map_err(|error| IntakeError::Unreadable(error.to_string()))?;
    let tenant_union_id = match options.tenant_union_id {
        Some(id) => {
            store.get_tenant_union(id).await.map_err(|error| match error {
                StoreError::NotFound { .. } => IntakeError::InvalidField {
                    field: "tenant_union_id",
                    message: format!(
                        "tenant union {id} does not exist (GET /app/api/v1/tenant-unions lists them)"
                    ),
                },
                other => IntakeError::Store(other),
            })?;
            id
        }
        None => {
            tenant_union_for(
                store,
                parsed.tenant_id.as_deref(),
                options.tenant_integration_key.as_deref(),
            )
            .await?
        }
    };
    let content_hash = canonical_hash(raw);
    let identity = alert_identity(
        &parsed,
        &content_hash,
        tenant_union_id,
        options.tenant_integration_key.as_deref(),
    );
    Ok(NewAlert {
        parsed,
        raw_alert_content: raw_text,
        identity,
        content_hash,
        tenant_union_id,
        tenant_integration_key: options.tenant_integration_key.clone(),
        received_at,
    })
}

/// The union whose `lookup_dict` lists the alert's tenant or integration, else the default.
async fn tenant_union_for(
    store: &dyn Store,
    tenant_id: Option<&str>,
    integration_key: Option<&str>,
) -> Result<i64, StoreError> {
    if tenant_id.is_none() && integration_key.is_none() {
        return Ok(DEFAULT_TENANT_UNION_ID);
    }
    let lists = |dict: &Map<String, Value>, key: &str, wanted: Option<&str>| {
        wanted.is_some_and(|wanted| {
            dict.get(key)
                .and_then(Value::as_array)
                .is_some_and(|values| values.iter().any(|value| value.as_str() == Some(wanted)))
        })
    };
    let unions = store.list_tenant_unions().await?;
    Ok(unions
        .iter()
        .find(|union| {
            lists(&union.lookup_dict, "tenant_ids", tenant_id)
                || lists(
                    &union.lookup_dict,
                    "tenant_integration_keys",
                    integration_key,
                )
        })
        .map_or(DEFAULT_TENANT_UNION_ID, |union| union.id))
}
