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

/// SQLite's list counts take their changes as appended deltas that the store folds in, in
/// the background (migration count_deltas): the delta tables empty within seconds, the
/// lists count the same before and after, and what the fold leaves is what the
/// investigations themselves count, for the combinations, every facet, the tags and the
/// hours.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folding_the_count_deltas_changes_no_count() {
    let directory = tempfile::tempdir().expect("temp dir");
    let store = sleuth_store_sqlite::open(
        &url_of(&directory),
        &sleuth_store_sqlite::SqliteOptions::default(),
    )
    .await
    .expect("open sqlite");
    let before = sleuth_test_support::counts::store_a_counted_mix(&store).await;
    // The store's own folder, in the background, a few times a second.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let deltas: i64 = sqlx::query_scalar(
            "SELECT (SELECT COUNT(*) FROM investigation_count_deltas) \
             + (SELECT COUNT(*) FROM investigation_tag_count_deltas) \
             + (SELECT COUNT(*) FROM investigation_hour_count_deltas)",
        )
        .fetch_one(store.pool())
        .await
        .unwrap();
        if deltas == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{deltas} deltas still unfolded after 20 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        sleuth_test_support::counts::state_totals(&store).await,
        before
    );

    // Each kept table, row for row, against the investigations counted directly: the
    // combinations, each facet (the columns it keeps besides state, stop reason and
    // priority), each facet per tag, and the hours.
    let combination = "status, canceled, priority, alert_type, direct_source_label, \
                       tenant_union_id, tenant_id, tenant_label, tenant_integration_key";
    let mut agreeing = vec![
        (
            format!("SELECT {combination}, n FROM investigation_counts"),
            format!("SELECT {combination}, COUNT(*) FROM investigations GROUP BY {combination}"),
        ),
        (
            format!("SELECT name, {combination}, n FROM investigation_tag_counts"),
            format!(
                "SELECT t.name, {tagged}, COUNT(*) FROM investigation_tags t \
                 JOIN investigations i ON i.id = t.investigation_id GROUP BY t.name, {tagged}",
                tagged = prefixed(combination)
            ),
        ),
        (
            "SELECT status, hour, n FROM investigation_hour_counts".to_string(),
            "SELECT status, (alert_create_time - ((alert_create_time % 3600000000) \
             + 3600000000) % 3600000000) / 3600000000 AS hour, COUNT(*) FROM investigations \
             GROUP BY 1, 2"
                .to_string(),
        ),
    ];
    let facets = [
        ("all", ""),
        ("type", ", alert_type"),
        ("source", ", direct_source_label"),
        (
            "tenant",
            ", tenant_union_id, tenant_id, tenant_label, tenant_integration_key",
        ),
        ("union", ", tenant_union_id"),
        ("type_source", ", alert_type, direct_source_label"),
    ];
    for (facet, kept_columns) in facets {
        let columns = format!("status, canceled, priority{kept_columns}");
        agreeing.push((
            format!("SELECT {columns}, n FROM investigation_facet_counts WHERE facet = '{facet}'"),
            format!("SELECT {columns}, COUNT(*) FROM investigations GROUP BY {columns}"),
        ));
        if matches!(facet, "all" | "type" | "source" | "tenant") {
            let tagged = prefixed(&columns);
            agreeing.push((
                format!(
                    "SELECT name, {columns}, n FROM investigation_tag_facet_counts \
                     WHERE facet = '{facet}'"
                ),
                format!(
                    "SELECT t.name, {tagged}, COUNT(*) FROM investigation_tags t \
                     JOIN investigations i ON i.id = t.investigation_id \
                     GROUP BY t.name, {tagged}"
                ),
            ));
        }
    }
    for (kept, counted) in agreeing {
        let differing: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM (SELECT * FROM ({kept}) EXCEPT SELECT * FROM ({counted}) \
             UNION ALL SELECT * FROM (SELECT * FROM ({counted}) EXCEPT SELECT * FROM ({kept})))"
        )))
        .fetch_one(store.pool())
        .await
        .unwrap();
        assert_eq!(differing, 0, "{kept}");
    }
}

/// `columns` (comma-separated) each prefixed with the alias `i.`.
fn prefixed(columns: &str) -> String {
    columns
        .split(',')
        .map(|column| format!("i.{}", column.trim()))
        .collect::<Vec<_>>()
        .join(", ")
}
