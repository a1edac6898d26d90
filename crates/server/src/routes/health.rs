//! Liveness, readiness and metrics: unauthenticated, for load balancers and Prometheus.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// How long readiness and the metrics' queue depth wait for the database. Under a flood
/// every pooled connection may be taken; an answer that says so beats one that never comes.
const DATABASE_CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

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
    let checked = tokio::time::timeout(DATABASE_CHECK_TIMEOUT, store.check_ready())
        .await
        .unwrap_or_else(|_| {
            Err(sleuth_store::StoreError::Unavailable(
                "the database did not answer within 2 seconds (busy or unreachable)".into(),
            ))
        });
    match checked {
        Ok(()) => Json(Readiness {
            status: "ready",
            database,
            reason: None,
            sandbox: sandbox_readiness(&state),
            secrets: secrets_readiness(&state),
        })
        .into_response(),
        Err(error) => {
            let body = Readiness {
                status: "not_ready",
                database,
                reason: Some(error.to_string()),
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
        Some(store) => tokio::time::timeout(DATABASE_CHECK_TIMEOUT, store.pending_jobs())
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
