//! The baseline the creates are measured against: a bare axum + SQLite program that does
//! only what a create must (parse the JSON, dedupe the alert by the hash of its body, store
//! it and enqueue a job, with group commit: one transaction for every create waiting), on
//! SQLite with the pragmas Sleuth uses. Everything Sleuth adds (authentication, the vendor
//! parsers, entities, audit, tenants, limits) is what the ratio to this prices.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqliteSynchronous};
use tokio::sync::{mpsc, oneshot};

/// One create waiting for the writer: the dedupe key, the body, where to answer.
struct Pending {
    key: Vec<u8>,
    body: String,
    answer: oneshot::Sender<i64>,
}

/// Serves the baseline on a loopback port with its database at `file`; returns the address.
pub(crate) async fn start(file: &std::path::Path) -> String {
    let options = SqliteConnectOptions::new()
        .filename(file)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal);
    let pool = SqlitePool::connect_with(options).await.unwrap();
    sqlx::raw_sql(
        "CREATE TABLE alerts (id INTEGER PRIMARY KEY, dedupe_key BLOB NOT NULL UNIQUE, body TEXT NOT NULL);
         CREATE TABLE jobs (id INTEGER PRIMARY KEY, alert_id INTEGER NOT NULL);",
    )
    .execute(&pool)
    .await
    .unwrap();
    let (queue, waiting) = mpsc::channel::<Pending>(4096);
    tokio::spawn(write_in_groups(pool, waiting));
    let router = axum::Router::new()
        .route("/app/api/v1/investigation/create", post(create))
        .with_state(Arc::new(queue));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, router).await });
    address
}

async fn create(
    State(queue): State<Arc<mpsc::Sender<Pending>>>,
    Json(request): Json<Value>,
) -> Result<Json<Value>, StatusCode> {
    let alert = request
        .get("raw_alert_content")
        .filter(|alert| alert.is_object())
        .ok_or(StatusCode::BAD_REQUEST)?;
    let body = alert.to_string();
    let key = Sha256::digest(body.as_bytes()).to_vec();
    let (answer, answered) = oneshot::channel();
    queue
        .send(Pending { key, body, answer })
        .await
        .map_err(|_| StatusCode::SERVICE_UNAVAILABLE)?;
    let id = answered
        .await
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
    Ok(Json(json!({ "investigation_id": id })))
}

/// Takes every create waiting, stores them in one transaction, answers each.
async fn write_in_groups(pool: SqlitePool, mut waiting: mpsc::Receiver<Pending>) {
    let mut group = Vec::new();
    while waiting.recv_many(&mut group, 512).await > 0 {
        let mut transaction = pool.begin().await.unwrap();
        let mut ids = Vec::with_capacity(group.len());
        for pending in &group {
            let stored: Option<i64> = sqlx::query_scalar(
                "INSERT INTO alerts (dedupe_key, body) VALUES (?, ?) \
                 ON CONFLICT (dedupe_key) DO NOTHING RETURNING id",
            )
            .bind(&pending.key)
            .bind(&pending.body)
            .fetch_optional(&mut *transaction)
            .await
            .unwrap();
            let id = match stored {
                Some(id) => {
                    sqlx::query("INSERT INTO jobs (alert_id) VALUES (?)")
                        .bind(id)
                        .execute(&mut *transaction)
                        .await
                        .unwrap();
                    id
                }
                None => sqlx::query_scalar("SELECT id FROM alerts WHERE dedupe_key = ?")
                    .bind(&pending.key)
                    .fetch_one(&mut *transaction)
                    .await
                    .unwrap(),
            };
            ids.push(id);
        }
        transaction.commit().await.unwrap();
        for (pending, id) in group.drain(..).zip(ids) {
            let _ = pending.answer.send(id);
        }
    }
}
