//! The SQLite schema after every migration is exactly `schema.sql` (see
//! `sleuth_test_support::schema`): a migration that changes it changes the file too.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_migrated_schema_is_the_checked_in_schema_sql() {
    let directory = tempfile::tempdir().expect("temp dir");
    let url = format!(
        "sqlite://{}?mode=rwc",
        directory.path().join("sleuth.db").display()
    );
    let store = sleuth_store_sqlite::open(&url, &Default::default())
        .await
        .expect("open and migrate");
    drop(store);
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&url).await.expect("connect");
    let schema = sleuth_test_support::schema::sqlite(&pool).await;
    pool.close().await;
    sleuth_test_support::schema::check_against_file(
        &schema,
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema.sql"),
    );
}
