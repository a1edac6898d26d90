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

/// Successes concluded before migration search_marks have no mark in their search
/// documents (store-sql's `search_marks`). Their searches must be counted right while they
/// are being marked (without the mark) and after (with it), and a start after the
/// migration marks them all in the background.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn successes_from_before_the_search_mark_are_marked_and_counted_throughout() {
    let directory = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", directory.path().join("sleuth.db").display());
    let store: std::sync::Arc<dyn sleuth_store::Store> = std::sync::Arc::new(
        sleuth_store_sqlite::open(&url, &Default::default())
            .await
            .expect("open"),
    );
    let successes = upgrade::successes_to_search(&store, 5).await;
    let marked = "SELECT COUNT(*) FROM investigation_search \
                  WHERE investigation_search MATCH '\"\u{E000}success\"'";
    let pool = sqlx::AnyPool::connect(&url).await.expect("connect");
    let scalar = |sql| sleuth_test_support::read_integer(&pool, sql);
    assert_eq!(
        scalar(marked).await,
        6,
        "each success is marked as it concludes"
    );
    assert_eq!(upgrade::beacons_counted(&store).await, 5);

    // As the migration leaves a database of unmarked successes.
    let unmark = || async {
        for (index, id) in successes.iter().enumerate() {
            let words = if index < 5 {
                "beacon seen"
            } else {
                "quiet host"
            };
            sqlx::query(
                "INSERT OR REPLACE INTO investigation_search (rowid, body) VALUES ($1, $2)",
            )
            .bind(id)
            .bind(words)
            .execute(&pool)
            .await
            .expect("an unmarked document");
        }
    };
    unmark().await;
    let newest = *successes.iter().max().expect("successes");
    sqlx::query("UPDATE search_marks SET unmarked_through = $1")
        .bind(newest)
        .execute(&pool)
        .await
        .expect("unmarked through the newest");
    assert_eq!(scalar(marked).await, 0);
    let mut through = newest;
    loop {
        assert_eq!(upgrade::beacons_counted(&store).await, 5);
        let done = sleuth_store_sql::search_marks::mark_earlier(&pool, 2)
            .await
            .expect("a batch marked");
        let now = scalar("SELECT unmarked_through FROM search_marks").await;
        assert!(
            now < through,
            "each batch lowers what is left: {now} after {through}"
        );
        through = now;
        if done {
            break;
        }
    }
    assert_eq!(through, 0);
    assert_eq!(scalar(marked).await, 6);
    assert_eq!(upgrade::beacons_counted(&store).await, 5);

    // The migration itself, on such a database, then a start that marks them.
    unmark().await;
    for statement in [
        "DROP TABLE search_marks",
        "DELETE FROM schema_migrations WHERE name = 'search_marks'",
    ] {
        sqlx::query(statement)
            .execute(&pool)
            .await
            .expect(statement);
    }
    drop(store);
    let store: std::sync::Arc<dyn sleuth_store::Store> = std::sync::Arc::new(
        sleuth_store_sqlite::open(&url, &Default::default())
            .await
            .expect("open and migrate"),
    );
    assert_eq!(upgrade::beacons_counted(&store).await, 5);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while scalar(marked).await < 6 {
        assert!(
            std::time::Instant::now() < deadline,
            "not marked 20 s after the start"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(scalar("SELECT unmarked_through FROM search_marks").await, 0);
    assert_eq!(upgrade::beacons_counted(&store).await, 5);
}
