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

/// Counts per state as the list reports them (from `investigation_counts`).
async fn state_totals(store: &dyn Store) -> Vec<u64> {
    let mut totals = Vec::new();
    for state in sleuth_domain::InvestigationStatus::ALL {
        let query = sleuth_store::InvestigationQuery {
            states: vec![*state],
            ..Default::default()
        };
        let page = store.list_investigations(&query).await.expect("list");
        totals.push(page.total);
    }
    totals
}

/// PostgreSQL's list counts are deltas that the store folds in the background (migration
/// 0007): folding, even by two processes at once, changes no count and leaves one row per
/// combination of counted columns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folding_the_count_deltas_changes_no_count() {
    use sleuth_test_support::fixtures::{simple_alert, time};
    let Some(database) = postgres::fresh_database().await else {
        return;
    };
    let store = sleuth_store_postgres::open(database.url(), &Default::default())
        .await
        .expect("open postgres");
    let mut created = Vec::new();
    for index in 0..6 {
        let alert = simple_alert(&format!("alert {}", index % 2), index);
        created.push(
            store
                .create_investigation(alert, index >= 2)
                .await
                .unwrap()
                .investigation_id(),
        );
    }
    for id in &created[..3] {
        store.cancel_investigation(*id, time(10)).await.unwrap();
    }
    let before = state_totals(&store).await;
    assert_eq!(before.iter().sum::<u64>(), 6, "{before:?}");
    let (first, second) = tokio::join!(
        sleuth_store_sql::fold_counts(store.pool()),
        sleuth_store_sql::fold_counts(store.pool())
    );
    first.unwrap();
    second.unwrap();
    assert_eq!(state_totals(&store).await, before);
    let (rows, combinations): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), COUNT(DISTINCT (status, canceled, alert_type)) FROM investigation_counts",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(rows, combinations, "one row per combination once folded");
}
