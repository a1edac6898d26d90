//! Shared test harness: fixtures and the store contract suite that every backend runs.
#![forbid(unsafe_code)]
// Test support code may panic on broken expectations: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod contract;
pub mod contract_analyst;
pub mod contract_connectors;
pub mod contract_memory_audit;
pub mod contract_notifications;
pub mod contract_response_actions;
pub mod contract_sign_in;
pub mod contract_strategies;
pub mod counts;
pub mod fixtures;
pub mod postgres;
pub mod raw_http;
pub mod schema;
pub mod upgrade;

/// The one integer `sql` reads (a count, a kept value), for tests that look at a database
/// directly.
pub async fn read_integer(pool: &sqlx::AnyPool, sql: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql.to_string()))
        .fetch_one(pool)
        .await
        .unwrap_or_else(|error| panic!("{sql}: {error}"))
}
