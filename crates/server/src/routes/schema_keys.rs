//! The alert formats Sleuth reads: every `schema_key` with what it is and a sample alert,
//! so a client can pick the key to send (or leave it out and let Sleuth detect it).

use axum::Json;
use serde::Serialize;
use serde_json::Value;
use sleuth_domain::Role;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiResult, ErrorBody};
use crate::state::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_schema_keys))
}

/// One alert format.
#[derive(Debug, Serialize, ToSchema)]
pub struct SchemaKeyDto {
    /// The value of `schema_key` on create.
    pub schema_key: &'static str,
    /// What the format is.
    pub display_name: &'static str,
    /// The product that raises these alerts (the alert's `direct_source_label`).
    pub source_label: &'static str,
    /// The alert's `origin_integration`.
    pub integration: &'static str,
    /// A realistic example alert in this format.
    #[schema(value_type = Object)]
    pub sample: Value,
}

/// List the alert formats (`schema_key`s) with a sample each, in detection order.
#[utoipa::path(get, path = "/app/api/v1/schema-keys", tag = "investigations",
    responses((status = 200, body = Vec<SchemaKeyDto>), (status = 401, body = ErrorBody)),
    security(("api_key" = [])))]
async fn list_schema_keys(caller: Caller) -> ApiResult<Json<Vec<SchemaKeyDto>>> {
    caller.require(Role::RestrictedReadOnly)?;
    Ok(Json(
        sleuth_parsers::schemas()
            .iter()
            .map(|schema| SchemaKeyDto {
                schema_key: schema.key,
                display_name: schema.display_name,
                source_label: schema.source_label,
                integration: schema.integration,
                // The samples are checked to be JSON by the parsers' own tests.
                sample: serde_json::from_str(schema.sample).unwrap_or(Value::Null),
            })
            .collect(),
    ))
}
