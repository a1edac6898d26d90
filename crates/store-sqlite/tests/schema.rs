//! The SQLite schema after every migration: exactly `schema.sql` (see
//! `sleuth_test_support::schema`), so a migration that changes it changes the file too;
//! and the plans SQLite chooses on it for statements whose cost must not grow with what is
//! stored. The planner decides from a statement's shape (this schema keeps no
//! statistics), so an empty database shows the plan a million rows get.

/// A database migrated by the store, and a pool on it (the directory holds the file).
async fn migrated_database() -> (tempfile::TempDir, sqlx::AnyPool) {
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
    (directory, pool)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_migrated_schema_is_the_checked_in_schema_sql() {
    let (_directory, pool) = migrated_database().await;
    let schema = sleuth_test_support::schema::sqlite(&pool).await;
    pool.close().await;
    sleuth_test_support::schema::check_against_file(
        &schema,
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schema.sql"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_takes_the_first_jobs_of_the_queue_without_reading_all_of_it() {
    let (_directory, pool) = migrated_database().await;
    // Whatever the claim's size (the planner's choice turned on it: a claim of up to three
    // read every queued job from the lease index and sorted them), it walks the queue in
    // order and stops at the first jobs free to take.
    for max in [1, 2, 3, 5, 10, 64] {
        let plan = sleuth_store_sql::sqlite_claim_pick_plan(&pool, max)
            .await
            .expect("the plan");
        assert_eq!(plan, vec!["SCAN jobs".to_string()], "a claim of {max}");
    }
    pool.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_of_new_system_events_walks_only_their_span_of_ids() {
    let (_directory, pool) = migrated_database().await;
    // A deliverer or a filtered event stream reads the few events past its position; a
    // name filter must not send the planner down the trigger index, which holds every
    // event of that name ever recorded.
    for names in [vec![], vec!["investigation_completed", "review_completed"]] {
        let query = sleuth_store::SystemEventsAfter {
            after_id: 100,
            through_id: 200,
            trigger_names: names.iter().map(|name| name.to_string()).collect(),
            scope: sleuth_store::TenantScope::All,
            limit: 100,
        };
        let plan = sleuth_store_sql::sqlite_system_events_after_plan(&pool, &query)
            .await
            .expect("the plan");
        assert_eq!(
            plan,
            vec![
                "SEARCH system_events USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)".to_string()
            ],
            "names {names:?}"
        );
    }
    pool.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verdicts_on_the_same_detection_are_read_from_their_own_index() {
    let (_directory, pool) = migrated_database().await;
    // The type's own index (type, state, time) also holds every investigation a storm
    // coalesced: the walk for the newest twenty verdicts read them all. The partial index
    // of those that concluded on their own seeks to the detection, source and union, and
    // is already in the order wanted (no sort).
    let plan = sleuth_store_sql::sqlite_earlier_investigations_plan(&pool)
        .await
        .expect("the plan");
    let same_detection: Vec<&String> = plan
        .iter()
        .filter(|step| step.contains("investigations_same_detection"))
        .collect();
    assert_eq!(
        same_detection,
        [&"SEARCH i USING INDEX investigations_same_detection \
           (alert_type=? AND direct_source_label=? AND tenant_union_id=?)"
            .to_string()],
        "{plan:#?}"
    );
    assert!(
        !plan.iter().any(|step| step.contains("TEMP B-TREE")),
        "{plan:#?}"
    );
    pool.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_due_writebacks_are_read_from_their_own_index_not_the_investigations() {
    let (_directory, pool) = migrated_database().await;
    // Polled every second: starting at the investigations walked every concluded one to
    // find their writebacks, with no connector configured at all.
    let plan = sleuth_store_sql::sqlite_due_writebacks_plan(&pool)
        .await
        .expect("the plan");
    assert_eq!(
        plan,
        [
            "SEARCH w USING INDEX connector_writebacks_due (next_attempt_at<?)",
            "SEARCH i USING INTEGER PRIMARY KEY (rowid=?)",
        ],
        "{plan:#?}"
    );
    pool.close().await;
}
