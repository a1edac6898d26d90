//! The HTTP routes, one module per resource. Each handler is registered together with its
//! OpenAPI description (utoipa-axum's `routes!`), so the published schema cannot drift
//! from the router.

pub mod audit_log;
pub mod connectors;
pub mod context;
pub mod context_memory;
pub mod data_sources;
pub mod events;
pub mod feedback;
pub mod health;
pub mod investigations;
pub mod notes;
pub mod notifications;
pub mod push;
pub mod push_sources;
pub mod response_actions;
pub mod schema;
pub mod schema_keys;
pub mod strategies;
pub mod system_events;
pub mod tenants;
pub mod users;
