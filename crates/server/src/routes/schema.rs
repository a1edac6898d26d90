//! The machine-readable description (OpenAPI 3.1, version 0.1.0) at
//! `GET /app/api/v1/schema`, and a browsable page beside it (Swagger UI, served from the
//! binary: no CDN, works offline). Both are public: they describe, they hold no data.

use utoipa::Modify;
use utoipa::OpenApi;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};

pub const SCHEMA_PATH: &str = "/app/api/v1/schema";
pub const DOCS_PATH: &str = "/app/api/v1/schema/docs";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Sleuth",
        version = "0.1.0",
        description = "Self-hosted security alert investigation. Send alerts as JSON; Sleuth \
                       investigates each and answers with findings, evidence, an outcome, a \
                       priority and recommended remediations.\n\nAuthenticate with \
                       `Authorization: <API key>` (`Bearer `, `Token ` and `Api-Key ` \
                       prefixes are tolerated). Errors are JSON: `{error_msg, detail, code}`."
    ),
    modifiers(&ApiKeySecurity),
    tags(
        (name = "investigations", description = "Alerts in, investigations out"),
        (name = "tenants", description = "Tenant unions"),
        (name = "response-actions", description = "Response scripts, their triggers, runs and secrets (admin)"),
        (name = "operations", description = "Health, readiness, metrics"),
        (name = "context-memory", description = "The operator's knowledge in plain words, cited by investigations"),
        (name = "system-events", description = "Every trigger that fired (admin)"),
        (name = "audit", description = "The hash-chained log of every write (admin)"),
        (name = "notes", description = "Analysts' notes on investigations"),
        (name = "feedback", description = "Feedback and review of concluded investigations"),
        (name = "users", description = "Users and API keys (admin)"),
        (name = "custom-strategies", description = "Custom strategies: outcome and priority rules and instructions on top of the engine, versioned, with backtesting (admin)"),
        (name = "connectors", description = "Pull connectors: vendor alert APIs polled on an interval (admin)"),
        (name = "notifications", description = "Notification destinations (webhook, Slack, Teams, PagerDuty, syslog), their rules and delivery logs (admin)"),
    )
)]
pub struct ApiDoc;

struct ApiKeySecurity;

impl Modify for ApiKeySecurity {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "Authorization",
                "Your API key, as printed by `sleuth serve` on first start or `sleuth apikey create`.",
            ))),
        );
    }
}
