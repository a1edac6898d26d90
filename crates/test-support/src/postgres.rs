//! A fresh PostgreSQL database per test, created on the server named by
//! `SLEUTH_TEST_POSTGRES_URL` and dropped when the test ends.
//!
//! Without that variable the PostgreSQL tests are skipped with a printed reason, unless
//! `SLEUTH_REQUIRE_POSTGRES=1` (set by `.ci/run`), in which case they fail: CI must never
//! pass by skipping them.

use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::Connection;
use sqlx::postgres::PgConnection;

static NEXT_DATABASE: AtomicU64 = AtomicU64::new(0);

/// A database that exists for one test.
#[derive(Debug)]
pub struct TestDatabase {
    server_url: String,
    name: String,
    url: String,
}

impl TestDatabase {
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let server_url = self.server_url.clone();
        let name = self.name.clone();
        // Drop cannot await; a short-lived thread with its own runtime does the cleanup.
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build();
            if let Ok(runtime) = runtime {
                runtime.block_on(async {
                    if let Ok(mut connection) = PgConnection::connect(&server_url).await {
                        let sql = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
                        let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                            .execute(&mut connection)
                            .await;
                    }
                });
            }
        });
        let _ = cleanup.join();
    }
}

/// The server URL for PostgreSQL tests, or `None` (with the reason printed) to skip them.
pub fn server_url() -> Option<String> {
    match std::env::var("SLEUTH_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            if std::env::var("SLEUTH_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("SLEUTH_REQUIRE_POSTGRES=1 but SLEUTH_TEST_POSTGRES_URL is not set");
            }
            eprintln!(
                "skipping a PostgreSQL test: set SLEUTH_TEST_POSTGRES_URL \
                 (e.g. postgres://postgres@127.0.0.1:5432/test) to run it"
            );
            None
        }
    }
}

/// Creates an empty database for one test.
pub async fn fresh_database() -> Option<TestDatabase> {
    let server_url = server_url()?;
    let name = format!(
        "sleuth_test_{}_{}_{}",
        std::process::id(),
        NEXT_DATABASE.fetch_add(1, Ordering::Relaxed),
        chrono::Utc::now().timestamp_micros() % 1_000_000
    );
    let mut connection = PgConnection::connect(&server_url)
        .await
        .unwrap_or_else(|error| panic!("cannot reach PostgreSQL at {server_url}: {error}"));
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
        .execute(&mut connection)
        .await
        .unwrap_or_else(|error| panic!("cannot create test database {name}: {error}"));
    let url = replace_database(&server_url, &name);
    Some(TestDatabase {
        server_url,
        name,
        url,
    })
}

/// The same server URL pointing at another database.
fn replace_database(server_url: &str, database: &str) -> String {
    let (base, query) = match server_url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (server_url, String::new()),
    };
    let scheme_end = base.find("://").map_or(0, |index| index + 3);
    let host_part = match base[scheme_end..].find('/') {
        Some(slash) => &base[..scheme_end + slash],
        None => base,
    };
    format!("{host_part}/{database}{query}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_are_swapped_in_urls() {
        assert_eq!(
            replace_database("postgres://u@h:5432/test", "x"),
            "postgres://u@h:5432/x"
        );
        assert_eq!(
            replace_database("postgres://h/test?sslmode=disable", "x"),
            "postgres://h/x?sslmode=disable"
        );
        assert_eq!(
            replace_database("postgres://h:5432", "x"),
            "postgres://h:5432/x"
        );
    }
}
