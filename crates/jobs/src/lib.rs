//! Sleuth's background work, without HTTP. A [`Runtime`] holds what it needs (settings,
//! store, the operator's context, sandbox, secrets keyring, data sources, metrics); the
//! HTTP layer (`sleuth-server`) wraps the same value, and `sleuth worker` runs this crate
//! alone. The path of one job: `workers` (claim under lease) -> `pipeline::run_job`
//! (guards, history and data sources, engine, stored result) -> `firing` (the triggers of
//! the finished investigation, scripts in the sandbox).
#![forbid(unsafe_code)]

pub mod builtin_strategies;
pub mod connector_runtime;
pub mod context_source;
pub mod context_status;
pub mod data_sources;
pub mod dto;
pub mod event_horizon;
pub mod firing;
pub mod intake;
pub mod metrics;
pub mod notify_conclusions;
pub mod notify_delivery;
pub mod notify_destination;
mod notify_events;
pub mod notify_transport;
pub mod pipeline;
pub mod process_name;
pub mod retention;
pub mod runtime;
pub mod script_sandbox;
pub mod script_secrets;
pub mod secret_keys;
pub mod settings;
pub mod trigger_catalog;
pub mod workers;

pub use crate::runtime::Runtime;
pub use crate::settings::Settings;
