//! A fresh PostgreSQL database for a bench run, on the server the tests use.

/// Drops and creates database `name` on the server of `server_url`; returns its URL.
pub(crate) async fn recreate_postgres_database(server_url: &str, name: &str) -> String {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let mut connection = sqlx::AnyConnection::connect(server_url)
        .await
        .expect("postgres server");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(&mut connection)
    .await
    .expect("drop");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut connection)
        .await
        .expect("create");
    let base = server_url
        .rsplit_once('/')
        .map_or(server_url, |(base, _)| base);
    format!("{base}/{name}")
}
