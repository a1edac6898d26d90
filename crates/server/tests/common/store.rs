//! The store of one test's app, for the API's and the console's suites alike: a fresh
//! SQLite file, or a fresh PostgreSQL database on the server `SLEUTH_TEST_POSTGRES_URL`
//! names (`sleuth_test_support::postgres`).

use std::sync::Arc;

use sleuth_store::Store;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
}

/// What keeps a test's store: the SQLite file's directory or the PostgreSQL database,
/// removed when dropped.
pub(crate) type Keeper = Box<dyn std::any::Any + Send>;

/// A fresh store on `backend` and its keeper; `None` (with the reason printed) for
/// PostgreSQL when no server is named.
pub(crate) async fn fresh_store(backend: Backend) -> Option<(Arc<dyn Store>, Keeper)> {
    match backend {
        Backend::Sqlite => {
            let directory = tempfile::tempdir().expect("temp dir");
            let url = format!("sqlite://{}", directory.path().join("sleuth.db").display());
            let store = sleuth_store_sqlite::open(&url, &Default::default())
                .await
                .expect("sqlite");
            Some((Arc::new(store), Box::new(directory)))
        }
        Backend::Postgres => {
            let database = sleuth_test_support::postgres::fresh_database().await?;
            let store = sleuth_store_postgres::open(database.url(), &Default::default())
                .await
                .expect("postgres");
            Some((Arc::new(store), Box::new(database)))
        }
    }
}
