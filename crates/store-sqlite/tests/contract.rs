//! The store contract, on a fresh SQLite file per test.

use std::sync::Arc;

use sleuth_store::Store;

async fn open() -> Option<(Arc<dyn Store>, tempfile::TempDir)> {
    let directory = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", directory.path().join("sleuth.db").display());
    let store = sleuth_store_sqlite::open(&url, &sleuth_store_sqlite::SqliteOptions::default())
        .await
        .expect("open sqlite");
    Some((Arc::new(store), directory))
}

/// The URL of the database in `directory`, for the cases that also change it by SQL.
fn url_of(directory: &tempfile::TempDir) -> String {
    format!("sqlite://{}", directory.path().join("sleuth.db").display())
}

sleuth_test_support::store_contract_tests!(open());
sleuth_test_support::response_action_contract_tests!(open());
sleuth_test_support::memory_audit_contract_tests!(open(), url_of);
sleuth_test_support::sql_change_contract_tests!(open(), url_of);
sleuth_test_support::analyst_contract_tests!(open());
sleuth_test_support::strategy_contract_tests!(open());
sleuth_test_support::connector_contract_tests!(open());
sleuth_test_support::sign_in_contract_tests!(open());
sleuth_test_support::notification_contract_tests!(open());
