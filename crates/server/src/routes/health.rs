//! Liveness, readiness and metrics: unauthenticated, for load balancers and Prometheus.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sleuth_store::Store;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// How long the metrics' queue depth waits for the database. Under a flood every pooled
/// connection may be taken; the last value beats an exposition that never comes.
const QUEUE_DEPTH_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a readiness check waits for the database. It runs in the background, so no
/// probe waits for it, on a connection of its own outside the pool (the store's
/// `check_ready`), so a flood that holds every pooled connection does not delay it.
const DATABASE_CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// A database check younger than this is answered as it is; an older one is answered too,
/// while a fresh check runs in the background.
const CHECK_FRESH_FOR: Duration = Duration::from_secs(1);

/// A check older than this is not answered: `/readyz` waits for a fresh one.
const CHECK_USABLE_FOR: Duration = Duration::from_secs(10);

/// The last database check of `/readyz`, shared by every probe of the process. A probe never
/// queues behind the API for a pooled connection: at most one check runs at a time, in the
/// background, and probes answer the latest result while it is recent. A database that
/// stops answering shows within `CHECK_FRESH_FOR` plus `DATABASE_CHECK_TIMEOUT`.
#[derive(Default)]
pub struct DatabaseCheck {
    last: std::sync::Mutex<Option<(Instant, Result<(), String>)>>,
    running: Arc<tokio::sync::Mutex<()>>,
}

impl DatabaseCheck {
    fn last_within(&self, age: Duration) -> Option<Result<(), String>> {
        let last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        last.as_ref()
            .filter(|(at, _)| at.elapsed() <= age)
            .map(|(_, result)| result.clone())
    }

    fn record(&self, result: Result<(), String>) {
        *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((Instant::now(), result));
    }
}

async fn check_database(store: &Arc<dyn Store>) -> Result<(), String> {
    match tokio::time::timeout(DATABASE_CHECK_TIMEOUT, store.check_ready()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err("the database did not answer within 5 seconds (busy or unreachable)".into()),
    }
}

/// The database's readiness as `/readyz` answers it (see `DatabaseCheck`).
async fn database_ready(state: &AppState, store: &Arc<dyn Store>) -> Result<(), String> {
    let check = state.readiness();
    if let Some(result) = check.last_within(CHECK_FRESH_FOR) {
        return result;
    }
    if let Ok(guard) = Arc::clone(&check.running).try_lock_owned() {
        let (state, store) = (state.clone(), Arc::clone(store));
        tokio::spawn(async move {
            let result = check_database(&store).await;
            state.readiness().record(result);
            drop(guard);
        });
    }
    if let Some(result) = check.last_within(CHECK_USABLE_FOR) {
        return result;
    }
    // Nothing recent to answer: wait for the check under way.
    let _finished = check.running.lock().await;
    check
        .last_within(CHECK_USABLE_FOR)
        .unwrap_or_else(|| Err("the database check did not finish".into()))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz))
        .routes(routes!(metrics))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    pub status: &'static str,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    /// `ready` or `not_ready`.
    pub status: &'static str,
    /// `sqlite` or `postgres`, once connected.
    pub database: Option<&'static str>,
    /// Why Sleuth is not ready, when it is not.
    pub reason: Option<String>,
    /// The script sandbox the start-up probe found (null in a process that runs no
    /// scripts). A sandbox that cannot run scripts does not make Sleuth unready: only the
    /// script endpoints answer 503 then.
    pub sandbox: Option<crate::script_sandbox::SandboxReadiness>,
    /// Script secrets in this process. Like the sandbox, a problem here does not make
    /// Sleuth unready: only the scripts that name the secrets cannot have them.
    pub secrets: SecretsReadiness,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SecretsReadiness {
    /// The id of the key that seals secrets (`secrets.key_file`); null without one, when
    /// secrets cannot be stored.
    pub key_id: Option<String>,
    /// What keeps stored secrets from scripts, as found at start-up (a key missing for
    /// sealed secrets, or secrets still in plaintext).
    pub problem: Option<String>,
}

/// Alive: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, body = Health)))]
async fn healthz() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// Ready: the database is reachable and migrated.
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, body = Readiness), (status = 503, body = Readiness)))]
async fn readyz(State(state): State<AppState>) -> Response {
    let Some(store) = state.store_if_ready() else {
        let body = Readiness {
            status: "not_ready",
            database: None,
            reason: Some("connecting to or migrating the database".into()),
            sandbox: sandbox_readiness(&state),
            secrets: secrets_readiness(&state),
        };
        return (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response();
    };
    let database = Some(store.backend().as_str());
    let checked = database_ready(&state, store).await;
    match checked {
        Ok(()) => Json(Readiness {
            status: "ready",
            database,
            reason: None,
            sandbox: sandbox_readiness(&state),
            secrets: secrets_readiness(&state),
        })
        .into_response(),
        Err(reason) => {
            let body = Readiness {
                status: "not_ready",
                database,
                reason: Some(reason),
                sandbox: sandbox_readiness(&state),
                secrets: secrets_readiness(&state),
            };
            (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
        }
    }
}

fn secrets_readiness(state: &AppState) -> SecretsReadiness {
    SecretsReadiness {
        key_id: state
            .keyring()
            .map(|keyring| keyring.current_id().to_string()),
        problem: state.secrets_problem(),
    }
}

fn sandbox_readiness(state: &AppState) -> Option<crate::script_sandbox::SandboxReadiness> {
    state
        .sandbox_if_set()
        .map(|sandbox| crate::script_sandbox::SandboxReadiness::from(&sandbox.report()))
}

/// Prometheus metrics (OpenMetrics text).
#[utoipa::path(get, path = "/metrics", tag = "operations", responses((status = 200, content_type = "application/openmetrics-text", body = String)))]
async fn metrics(State(state): State<AppState>) -> Response {
    let pending = match state.store_if_ready() {
        Some(store) => tokio::time::timeout(QUEUE_DEPTH_TIMEOUT, store.pending_jobs())
            .await
            .ok()
            .and_then(Result::ok),
        None => None,
    };
    (
        [(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
        state.metrics().render(pending),
    )
        .into_response()
}
