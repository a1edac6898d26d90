//! The store contract, on a fresh PostgreSQL database per test (SLEUTH_TEST_POSTGRES_URL).

use std::sync::Arc;

use sleuth_store::Store;
use sleuth_test_support::postgres::{self, TestDatabase};

async fn open() -> Option<(Arc<dyn Store>, TestDatabase)> {
    let database = postgres::fresh_database().await?;
    let store = sleuth_store_postgres::open(database.url(), &Default::default())
        .await
        .expect("open postgres");
    Some((Arc::new(store), database))
}

sleuth_test_support::store_contract_tests!(open());
sleuth_test_support::response_action_contract_tests!(open());
sleuth_test_support::memory_audit_contract_tests!(open(), |database: &TestDatabase| database
    .url()
    .to_string());
sleuth_test_support::analyst_contract_tests!(open());
sleuth_test_support::strategy_contract_tests!(open());
