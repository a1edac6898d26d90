//! The wire shapes of SPEC.md, one type per shape, built from storage records with `From`.
//! Only this module (with the shapes scripts see too, `sleuth_jobs::dto`, re-exported here)
//! decides field names and shapes: renaming an internal field never changes the API.

pub use sleuth_jobs::dto::{investigation, schema, tenant, user};

pub mod api_key;
pub mod audit;
pub mod connector;
pub mod context_memory;
pub mod data_source;
pub mod note;
pub mod notification;
pub mod push_source;
pub mod response_action;
pub mod revision;
pub mod strategy;
pub mod system_event;
