//! The wire shapes of SPEC.md, one type per shape, built from storage records with `From`.
//! Only this module decides field names and shapes: renaming an internal field never
//! changes the API.

pub mod api_key;
pub mod audit;
pub mod connector;
pub mod context_memory;
pub mod data_source;
pub mod investigation;
pub mod note;
pub mod push_source;
pub mod response_action;
pub mod revision;
pub mod schema;
pub mod strategy;
pub mod system_event;
pub mod tenant;
pub mod user;
