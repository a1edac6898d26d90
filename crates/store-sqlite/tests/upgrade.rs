//! Upgrading a SQLite file that already holds data (see `sleuth_test_support::upgrade`).

use sleuth_store::Store as _;
use sleuth_store_sql::Dialect;
use sleuth_store_sql::migrate::{self, Migration};
use sleuth_store_sqlite::MIGRATIONS;
use sleuth_test_support::upgrade;

/// A new SQLite file in a temporary directory, migrated up to (not including) `version`:
/// its directory (kept for the test), URL and pool.
async fn migrated_before(version: i64) -> (tempfile::TempDir, String, sqlx::AnyPool) {
    let directory = tempfile::tempdir().expect("temp dir");
    let url = format!(
        "sqlite://{}?mode=rwc",
        directory.path().join("sleuth.db").display()
    );
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&url).await.expect("connect");
    let before: Vec<Migration> = MIGRATIONS
        .iter()
        .filter(|migration| migration.version < version)
        .copied()
        .collect();
    migrate::apply(&pool, Dialect::Sqlite, &before, None)
        .await
        .expect("migrate to the version before");
    (directory, url, pool)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_stored_inside_investigations_move_out_with_migration_10() {
    let (_directory, url, pool) = migrated_before(10).await;
    let (concluded, queued) = upgrade::store_investigations_before_migration_10(&pool).await;
    pool.close().await;

    let store = sleuth_store_sqlite::open(&url, &Default::default())
        .await
        .expect("open and migrate");
    upgrade::results_read_the_same_after_the_upgrade(&store, concluded, queued).await;
}

/// Migration count_keys_state_last rewrites the keys of the kept counts stored before it
/// (state first) into the order the fold now keys them by (state last): a fold after the
/// upgrade adds to the rows kept before, rather than starting a second row of the same
/// combination beside each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_counts_keyed_state_first_are_folded_into_after_migration_36() {
    let (_directory, url, pool) = migrated_before(36).await;
    // Three urgent successes of one detection, as a fold before the upgrade kept them.
    for statement in [
        "INSERT INTO investigation_counts (group_key, status, canceled, priority, alert_type, \
         direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key, n) \
         VALUES (json_array('success', NULL, 'urgent', 'edr:lsass_dump', 'EDR', 1, NULL, NULL, NULL), \
         'success', NULL, 'urgent', 'edr:lsass_dump', 'EDR', 1, NULL, NULL, NULL, 3)",
        "INSERT INTO investigation_facet_counts (group_key, facet, status, canceled, priority, \
         alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label, \
         tenant_integration_key, n) \
         VALUES (json_array('type', 'success', NULL, 'urgent', 'edr:lsass_dump', NULL, NULL, NULL, \
         NULL, NULL), 'type', 'success', NULL, 'urgent', 'edr:lsass_dump', NULL, NULL, NULL, \
         NULL, NULL, 3)",
        "INSERT INTO investigation_tag_counts (group_key, name, status, canceled, priority, \
         alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label, \
         tenant_integration_key, n) \
         VALUES (json_array('credential_access', 'success', NULL, 'urgent', 'edr:lsass_dump', \
         'EDR', 1, NULL, NULL, NULL), 'credential_access', 'success', NULL, 'urgent', \
         'edr:lsass_dump', 'EDR', 1, NULL, NULL, NULL, 3)",
        "INSERT INTO investigation_tag_facet_counts (group_key, name, facet, status, canceled, \
         priority, alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label, \
         tenant_integration_key, n) \
         VALUES (json_array('credential_access', 'type', 'success', NULL, 'urgent', \
         'edr:lsass_dump', NULL, NULL, NULL, NULL, NULL), 'credential_access', 'type', \
         'success', NULL, 'urgent', 'edr:lsass_dump', NULL, NULL, NULL, NULL, NULL, 3)",
    ] {
        sqlx::query(statement)
            .execute(&pool)
            .await
            .expect("a kept row");
    }
    pool.close().await;

    let store = sleuth_store_sqlite::open(&url, &Default::default())
        .await
        .expect("open and migrate");
    // A fourth, as its conclusion's deltas leave it, then a write of the store's own, after
    // which its folder folds.
    for statement in [
        "INSERT INTO investigation_count_deltas (status, canceled, priority, alert_type, \
         direct_source_label, tenant_union_id, tenant_id, tenant_label, tenant_integration_key, n) \
         VALUES ('success', NULL, 'urgent', 'edr:lsass_dump', 'EDR', 1, NULL, NULL, NULL, 1)",
        "INSERT INTO investigation_tag_count_deltas (name, status, canceled, priority, \
         alert_type, direct_source_label, tenant_union_id, tenant_id, tenant_label, \
         tenant_integration_key, n) \
         VALUES ('credential_access', 'success', NULL, 'urgent', 'edr:lsass_dump', 'EDR', 1, \
         NULL, NULL, NULL, 1)",
    ] {
        sqlx::query(statement)
            .execute(store.pool())
            .await
            .expect("a delta");
    }
    store
        .create_investigation(
            sleuth_test_support::fixtures::simple_alert("a write", 0),
            false,
        )
        .await
        .expect("a write");
    let kept = [
        "SELECT n FROM investigation_counts WHERE status = 'success' \
         AND alert_type = 'edr:lsass_dump'",
        "SELECT n FROM investigation_facet_counts WHERE facet = 'type' AND status = 'success' \
         AND alert_type = 'edr:lsass_dump'",
        "SELECT n FROM investigation_tag_counts WHERE status = 'success' \
         AND alert_type = 'edr:lsass_dump'",
        "SELECT n FROM investigation_tag_facet_counts WHERE facet = 'type' \
         AND status = 'success' AND alert_type = 'edr:lsass_dump'",
    ];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    for statement in kept {
        loop {
            let rows: Vec<i64> = sqlx::query_scalar(statement)
                .fetch_all(store.pool())
                .await
                .expect("kept rows");
            if rows != [3] {
                assert_eq!(rows, [4], "{statement}");
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "not folded after 20 s: {statement}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}
