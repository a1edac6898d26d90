//! HTTP tests: the real server on a loopback port, on SQLite and on PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod harness;
mod shapes;

mod analyst;
mod audit_log;
mod connectors;
mod context_memory;
mod data_sources;
mod engine;
mod events;
mod foundation;
mod fuzz;
mod hardening;
mod ingest;
mod investigations;
mod notifications;
mod notifications_email;
mod overload;
mod push;
mod response_actions;
mod strategies;
mod system_events;
mod tenants;
mod users;
mod vendors;
