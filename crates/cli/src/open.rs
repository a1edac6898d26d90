//! Opening the store: the backend is chosen once, from the database URL.

use std::sync::Arc;

use anyhow::Context as _;
use sleuth_jobs::Settings;
use sleuth_store::Store;

/// Opens and migrates the database named by the settings.
pub(crate) async fn open_store(settings: &Settings) -> anyhow::Result<Arc<dyn Store>> {
    let url = &settings.database.url;
    let shown = sleuth_jobs::settings::redact_url_password(url);
    if sleuth_store_sqlite::handles(url) {
        let options = sleuth_store_sqlite::SqliteOptions {
            max_connections: settings.database.max_connections,
            ..Default::default()
        };
        let store = sleuth_store_sqlite::open(url, &options)
            .await
            .with_context(|| format!("cannot open the SQLite database {shown}"))?;
        return Ok(Arc::new(store));
    }
    if sleuth_store_postgres::handles(url) {
        let options = sleuth_store_postgres::PostgresOptions {
            max_connections: settings.database.max_connections,
            ..Default::default()
        };
        let store = sleuth_store_postgres::open(url, &options)
            .await
            .with_context(|| format!("cannot open the PostgreSQL database {shown}"))?;
        return Ok(Arc::new(store));
    }
    anyhow::bail!(
        "database URL {shown} is neither sqlite:// nor postgres://; set --database or SLEUTH_DATABASE_URL"
    )
}
