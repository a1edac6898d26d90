//! Upgrading a SQLite file that already holds data (see `sleuth_test_support::upgrade`).

use sleuth_store_sql::Dialect;
use sleuth_store_sql::migrate::{self, Migration};
use sleuth_store_sqlite::MIGRATIONS;
use sleuth_test_support::upgrade;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_stored_inside_investigations_move_out_with_migration_10() {
    let directory = tempfile::tempdir().expect("temp dir");
    let url = format!(
        "sqlite://{}?mode=rwc",
        directory.path().join("sleuth.db").display()
    );
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&url).await.expect("connect");
    let before: Vec<Migration> = MIGRATIONS
        .iter()
        .filter(|migration| migration.version < 10)
        .copied()
        .collect();
    migrate::apply(&pool, Dialect::Sqlite, &before, None)
        .await
        .expect("migrate to version 9");
    let (concluded, queued) = upgrade::store_investigations_before_migration_10(&pool).await;
    pool.close().await;

    let store = sleuth_store_sqlite::open(&url, &Default::default())
        .await
        .expect("open and migrate");
    upgrade::results_read_the_same_after_the_upgrade(&store, concluded, queued).await;
}
