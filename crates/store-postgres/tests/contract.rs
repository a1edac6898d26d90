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

/// The database's URL, for the cases that also change it by SQL.
fn url_of(database: &TestDatabase) -> String {
    database.url().to_string()
}

sleuth_test_support::store_contract_tests!(open());
sleuth_test_support::response_action_contract_tests!(open());
sleuth_test_support::memory_audit_contract_tests!(open(), url_of);
sleuth_test_support::sql_change_contract_tests!(open(), url_of);
sleuth_test_support::analyst_contract_tests!(open());
sleuth_test_support::strategy_contract_tests!(open());
sleuth_test_support::connector_contract_tests!(open());
sleuth_test_support::sign_in_contract_tests!(open());

/// PostgreSQL's list counts are deltas that the store folds in the background (migrations
/// 0007, 0008 and 0016): folding, even by two processes at once, changes no count and
/// leaves one row per combination of counted columns (and tag name, or hour).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folding_the_count_deltas_changes_no_count() {
    let Some(database) = postgres::fresh_database().await else {
        return;
    };
    let store = sleuth_store_postgres::open(database.url(), &Default::default())
        .await
        .expect("open postgres");
    let before = sleuth_test_support::counts::store_a_counted_mix(&store).await;
    // However the writes batched (one delta row per combination and statement), both
    // folders fold: the background folder's threshold is not what is tested here.
    let (first, second) = tokio::join!(
        sleuth_store_sql::fold_counts_now(store.pool()),
        sleuth_store_sql::fold_counts_now(store.pool())
    );
    first.unwrap();
    second.unwrap();
    assert_eq!(
        sleuth_test_support::counts::state_totals(&store).await,
        before
    );
    let (rows, combinations): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), COUNT(DISTINCT (status, canceled, priority, alert_type)) FROM investigation_counts",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(rows, combinations, "one row per combination once folded");
    let (rows, combinations): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), COUNT(DISTINCT (name, status, canceled, priority, alert_type)) \
         FROM investigation_tag_counts",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(
        rows, combinations,
        "one row per tag and combination once folded"
    );
    let (rows, combinations): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), COUNT(DISTINCT (status, hour)) FROM investigation_hour_counts",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(rows, combinations, "one row per state and hour once folded");
}

/// The combinations, facets and hours that the count deltas sum to, and the same counted
/// from the investigations themselves: each query yields (combination, n) rows, the
/// combination as text so that one comparison serves every table.
const KEPT_AND_COUNTED: [(&str, &str); 3] = [
    (
        "SELECT CONCAT_WS('|', status, canceled, priority, alert_type, direct_source_label, \
         tenant_union_id, tenant_id, tenant_label, tenant_integration_key), SUM(n)::BIGINT \
         FROM investigation_counts GROUP BY 1 HAVING SUM(n) <> 0",
        "SELECT CONCAT_WS('|', status, canceled, priority, alert_type, direct_source_label, \
         tenant_union_id, tenant_id, tenant_label, tenant_integration_key), COUNT(*) \
         FROM investigations GROUP BY 1",
    ),
    (
        "SELECT CONCAT_WS('|', facet, status, canceled, priority, alert_type, \
         direct_source_label, tenant_union_id, tenant_id, tenant_label, \
         tenant_integration_key), SUM(n)::BIGINT \
         FROM investigation_facet_counts GROUP BY 1 HAVING SUM(n) <> 0",
        "SELECT CONCAT_WS('|', f.facet, f.status, f.canceled, f.priority, f.alert_type, \
         f.direct_source_label, f.tenant_union_id, f.tenant_id, f.tenant_label, \
         f.tenant_integration_key), COUNT(*) FROM investigations i \
         CROSS JOIN LATERAL investigation_facets(i.status, i.canceled, i.priority, \
         i.alert_type, i.direct_source_label, i.tenant_union_id, i.tenant_id, i.tenant_label, \
         i.tenant_integration_key) f GROUP BY 1",
    ),
    (
        "SELECT CONCAT_WS('|', status, hour), SUM(n)::BIGINT FROM investigation_hour_counts \
         GROUP BY 1 HAVING SUM(n) <> 0",
        "SELECT CONCAT_WS('|', status, alert_hour(alert_create_time)), COUNT(*) \
         FROM investigations GROUP BY 1",
    ),
];

async fn counted_rows(pool: &sqlx::AnyPool, query: &str) -> Vec<(String, i64)> {
    let mut rows: Vec<(String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(query.to_owned()))
        .fetch_all(pool)
        .await
        .unwrap_or_else(|error| panic!("{error}: {query}"));
    rows.sort();
    rows
}

/// The count deltas that the triggers write for inserts, claims, conclusions, stops,
/// cancels and releases (one per combination and statement, a batch's rows grouped: 0039)
/// sum, in every combination, facet and hour, to what the investigations themselves
/// count; and still do once folded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kept_counts_are_what_the_investigations_count() {
    let Some(database) = postgres::fresh_database().await else {
        return;
    };
    let store = sleuth_store_postgres::open(database.url(), &Default::default())
        .await
        .expect("open postgres");
    sleuth_test_support::counts::store_a_counted_mix(&store).await;
    // A claimed batch of several titles given back: loading to not_asked, grouped.
    for index in 0..12 {
        let alert =
            sleuth_test_support::fixtures::simple_alert(&format!("more {}", index % 4), index);
        store
            .create_investigation(alert, true)
            .await
            .expect("create");
    }
    let lease = chrono::Duration::minutes(1);
    let claimed = store
        .claim_jobs("w", 8, lease, sleuth_test_support::fixtures::time(20))
        .await
        .expect("claim");
    assert_eq!(claimed.len(), 8);
    store.release_jobs(&claimed[..5]).await.expect("release");
    for folded in [false, true] {
        if folded {
            sleuth_store_sql::fold_counts_now(store.pool())
                .await
                .expect("fold");
        }
        for (kept, counted) in KEPT_AND_COUNTED {
            let kept_rows = counted_rows(store.pool(), kept).await;
            assert!(!kept_rows.is_empty(), "{kept}");
            assert_eq!(
                kept_rows,
                counted_rows(store.pool(), counted).await,
                "folded {folded}: {kept}"
            );
        }
    }
}

/// Upgrading a database that already holds data (see `sleuth_test_support::upgrade`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_stored_inside_investigations_move_out_with_migration_10() {
    use sleuth_store_sql::migrate::{self, Migration};
    use sleuth_test_support::upgrade;
    let Some(database) = postgres::fresh_database().await else {
        return;
    };
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(database.url())
        .await
        .expect("connect");
    let before: Vec<Migration> = sleuth_store_postgres::MIGRATIONS
        .iter()
        .filter(|migration| migration.version < 10)
        .copied()
        .collect();
    migrate::apply(&pool, sleuth_store_sql::Dialect::Postgres, &before, None)
        .await
        .expect("migrate to version 9");
    let (concluded, queued) = upgrade::store_investigations_before_migration_10(&pool).await;
    pool.close().await;

    let store = sleuth_store_postgres::open(database.url(), &Default::default())
        .await
        .expect("open and migrate");
    upgrade::results_read_the_same_after_the_upgrade(&store, concluded, queued).await;
}

/// PostgreSQL cannot hold a NUL in text. The API refuses one before the store; should one
/// reach the store anyway, it is refused as bad input, never a failure of Sleuth's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_in_text_is_refused_as_bad_input() {
    let Some((store, _database)) = open().await else {
        return;
    };
    let query = sleuth_store::InvestigationQuery {
        tenant_id: Some("acme\u{0}".into()),
        limit: 20,
        ..Default::default()
    };
    match store.list_investigations(&query).await {
        Err(sleuth_store::StoreError::Rejected { detail }) => assert!(detail.contains("NUL")),
        other => panic!("expected Rejected, got {other:?}"),
    }
}

/// A connector page of `count` alerts of `sources`, each source's alerts together in that
/// order: more than one statement of the set-based create holds (256 rows).
fn page_of_sources(
    connector_id: i64,
    lease_token: &str,
    sources: [&str; 2],
    count: usize,
) -> sleuth_store::ConnectorPage {
    use sleuth_test_support::fixtures::{new_alert, parsed_alert, time};
    let alerts = (0..count)
        .map(|index| {
            let source = sources[index * sources.len() / count];
            let title = format!("{lease_token} {source} {index}");
            new_alert(
                parsed_alert(&title, source, 0, &[]),
                serde_json::json!({"title": title}),
                None,
            )
        })
        .collect();
    sleuth_store::ConnectorPage {
        connector_id,
        lease_token: lease_token.into(),
        alerts,
        refused: 0,
        refused_reason: None,
        cursor: serde_json::json!({"page": lease_token}),
        caught_up: false,
        write_back_ids: Vec::new(),
        lease_until: time(2),
        at: time(0),
    }
}

/// Two processes store pages with the same two sources in opposite orders, side by side,
/// each in several statements. Each statement's trigger takes the burst guard's counters
/// of its alerts in key order; across statements, each transaction takes them all in key
/// order first (`source_counters`). Otherwise the first would hold one source's counter
/// and wait for the other's, which the second holds while it waits for the first's: a
/// deadlock, which PostgreSQL breaks by failing one page's statement (the store then
/// stores that page again one alert at a time, so the deadlock shows only in the
/// database's count of them). A third connection makes both pages stop in their second
/// statement until both are waiting, so that the order of their statements, not their
/// speed, decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_with_the_same_sources_in_opposite_orders_are_stored_side_by_side() {
    use sleuth_store::{ConnectorStore, Created, NewConnector};
    use sleuth_test_support::fixtures::time;
    use sqlx::Connection;
    let Some(database) = postgres::fresh_database().await else {
        return;
    };
    let mut processes = Vec::new();
    let mut pages = Vec::new();
    for (index, sources) in [["Alpha", "Beta"], ["Beta", "Alpha"]]
        .into_iter()
        .enumerate()
    {
        let store = sleuth_store_postgres::open(database.url(), &Default::default())
            .await
            .expect("open postgres");
        let connector = store
            .create_connector(&NewConnector {
                name: format!("connector {index}"),
                kind: "crowdstrike".into(),
                settings: serde_json::json!({"base_url": "https://api.crowdstrike.com"}),
                tenant_union_id: None,
                enabled: true,
                interval_seconds: 120,
                created_by: None,
                at: time(0),
            })
            .await
            .unwrap();
        let token = format!("poller {index}");
        assert!(
            store
                .lease_connector(connector.id, &token, time(0), time(1))
                .await
                .unwrap()
        );
        pages.push(page_of_sources(connector.id, &token, sources, 600));
        processes.push(Arc::new(store));
    }
    // The blocker holds, uncommitted, an alert of the identity of each page's 301st: each
    // page waits for it in its second statement, holding what its first one took.
    let mut blocker = sqlx::AnyConnection::connect(database.url()).await.unwrap();
    sqlx::query("BEGIN").execute(&mut blocker).await.unwrap();
    for page in &pages {
        sqlx::query(
            "INSERT INTO alerts (identity, tenant_union_id, parsed, raw_alert_content, \
             direct_source_label, created_at, updated_at) \
             VALUES ($1, $2, '{}', '{}', 'Gamma', 0, 0)",
        )
        .bind(page.alerts[300].identity.clone())
        .bind(page.alerts[300].tenant_union_id)
        .execute(&mut blocker)
        .await
        .unwrap();
    }
    let mut stored = Vec::new();
    for (store, page) in processes.iter().zip(pages) {
        let store = store.clone();
        stored.push(tokio::spawn(async move {
            store.commit_connector_page(page).await
        }));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(processes[0].pool())
        .await
        .unwrap();
        if waiting >= 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the pages never both waited"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    sqlx::query("ROLLBACK").execute(&mut blocker).await.unwrap();
    for page in stored {
        let created = page.await.unwrap().expect("both pages are stored");
        assert_eq!(created.len(), 600);
        assert!(
            created
                .iter()
                .all(|created| matches!(created, Created::New(_)))
        );
    }
    let (positions, last): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(DISTINCT position), MAX(position) FROM alert_source_positions \
         WHERE direct_source_label = 'Alpha'",
    )
    .fetch_one(processes[0].pool())
    .await
    .unwrap();
    assert_eq!((positions, last), (600, 600), "gapless positions");
    // A server process reports its deadlocks by the time it exits: the pools' connections
    // are closed (the stores keep a few of their own outside them).
    let backends = "SELECT COUNT(*) FROM pg_stat_activity \
                    WHERE datname = current_database() AND pid <> pg_backend_pid()";
    let before: i64 = sqlx::query_scalar(backends)
        .fetch_one(&mut blocker)
        .await
        .unwrap();
    let mut pooled = 0;
    for store in &processes {
        pooled += i64::from(store.pool().size());
        store.pool().close().await;
    }
    loop {
        let others: i64 = sqlx::query_scalar(backends)
            .fetch_one(&mut blocker)
            .await
            .unwrap();
        if others <= before - pooled {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the stores' connections never closed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let deadlocks: i64 = sqlx::query_scalar(
        "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(&mut blocker)
    .await
    .unwrap();
    assert_eq!(deadlocks, 0);
}
sleuth_test_support::notification_contract_tests!(open());

/// Several processes fold the same tables: a fold by one (which inserts a row per
/// combination) is not taken by another for as many new deltas. When each process kept
/// its own last fold, they folded in turn every second without end, and those folds were
/// most of PostgreSQL's time under a drain with two worker processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fold_by_one_process_is_not_folded_again_by_another() {
    let Some(database) = postgres::fresh_database().await else {
        return;
    };
    // Migrated by a store, whose own folder stops when it is dropped: the two pools
    // below are two processes' folders.
    drop(
        sleuth_store_postgres::open(database.url(), &Default::default())
            .await
            .expect("open postgres"),
    );
    let first = sqlx::AnyPool::connect(database.url()).await.unwrap();
    let second = sqlx::AnyPool::connect(database.url()).await.unwrap();
    sqlx::query("DELETE FROM count_folds")
        .execute(&first)
        .await
        .unwrap();
    let table = "investigation_counts";
    let base = inserted_into(&first, table).await;
    // The fewest deltas a fold waits for, and three times as many combinations.
    let due = sleuth_store_sql::FOLD_MIN_DELTAS;
    let combinations = 3 * due;
    let add_one_to_each = format!(
        "INSERT INTO investigation_counts \
         (status, alert_type, direct_source_label, tenant_union_id, n) \
         SELECT 'success', 'type ' || g, 'source', 1, 1 FROM generate_series(1, {combinations}) AS g"
    );
    let add_one_to_each = || sqlx::query(sqlx::AssertSqlSafe(add_one_to_each.clone()));
    add_one_to_each().execute(&first).await.unwrap();
    wait_until_inserted(&second, table, base + combinations).await;
    let folded = |pool| sleuth_store_sql::fold_due_counts(pool);
    assert!(
        folded(&first).await.unwrap().is_empty(),
        "a first look counts"
    );
    assert!(folded(&second).await.unwrap().is_empty(), "and is shared");

    add_one_to_each().execute(&second).await.unwrap();
    wait_until_inserted(&second, table, base + 2 * combinations).await;
    assert_eq!(folded(&first).await.unwrap(), [table]);
    // The fold's own rows, one per combination, once in the statistics, are no new deltas.
    wait_until_inserted(&second, table, base + 3 * combinations).await;
    assert!(folded(&second).await.unwrap().is_empty());
    assert!(folded(&first).await.unwrap().is_empty());
    assert_eq!(
        rows_and_total(&first).await,
        (combinations, 2 * combinations)
    );

    // A later fold reads only the deltas since: `due - 1` on one combination already
    // folded and one that brings another to zero. It inserts no row, and drops the zero.
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO investigation_counts \
         (status, alert_type, direct_source_label, tenant_union_id, n) \
         SELECT 'success', 'type 1', 'source', 1, 1 FROM generate_series(1, {}) \
         UNION ALL SELECT 'success', 'type 2', 'source', 1, -2",
        due - 1
    )))
    .execute(&second)
    .await
    .unwrap();
    wait_until_inserted(&first, table, base + 3 * combinations + due).await;
    assert_eq!(folded(&second).await.unwrap(), [table]);
    let rows_inserted: i64 =
        sqlx::query_scalar("SELECT rows_inserted FROM count_folds WHERE table_name = $1")
            .bind(table)
            .fetch_one(&first)
            .await
            .unwrap();
    assert_eq!(
        rows_inserted, 0,
        "the folded rows were updated, not rewritten"
    );
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT alert_type, n FROM investigation_counts \
         WHERE alert_type IN ('type 1', 'type 2', 'type 3') ORDER BY alert_type",
    )
    .fetch_all(&first)
    .await
    .unwrap();
    assert_eq!(
        rows,
        [("type 1".to_string(), due + 1), ("type 3".to_string(), 2)]
    );
    assert_eq!(
        rows_and_total(&first).await,
        (combinations - 1, 2 * combinations + due - 3)
    );
}

/// The rows of `investigation_counts` and the sum of their counts.
async fn rows_and_total(pool: &sqlx::AnyPool) -> (i64, i64) {
    sqlx::query_as("SELECT COUNT(*), CAST(SUM(n) AS BIGINT) FROM investigation_counts")
        .fetch_one(pool)
        .await
        .expect("count the rows")
}

/// The rows inserted into `table` so far, as PostgreSQL's statistics count them.
async fn inserted_into(pool: &sqlx::AnyPool, table: &str) -> i64 {
    let mut connection = pool.acquire().await.expect("a connection");
    sqlx::query("SELECT pg_stat_clear_snapshot()")
        .execute(&mut *connection)
        .await
        .expect("clear the statistics snapshot");
    sqlx::query_scalar(
        "SELECT COALESCE(MAX(n_tup_ins), 0) FROM pg_stat_user_tables \
         WHERE schemaname = current_schema() AND relname = $1",
    )
    .bind(table)
    .fetch_one(&mut *connection)
    .await
    .expect("read the table's statistics")
}

/// Waits until the statistics count `at_least` rows inserted into `table`: each backend
/// reports its inserts within about a second of going idle.
async fn wait_until_inserted(pool: &sqlx::AnyPool, table: &str, at_least: i64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let inserted = inserted_into(pool, table).await;
        if inserted >= at_least {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{table}: {inserted} rows inserted, not {at_least}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
