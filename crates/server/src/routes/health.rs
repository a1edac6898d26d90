//! Liveness, readiness and metrics: unauthenticated, for load balancers and Prometheus.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sleuth_sandbox::ProbeReport;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// How long the metrics' queue depth waits for the database. Under a flood every pooled
/// connection may be taken; the last value beats an exposition that never comes.
const QUEUE_DEPTH_TIMEOUT: Duration = Duration::from_secs(2);

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
    pub sandbox: Option<SandboxReadiness>,
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
    let checked = state.readiness().answer(store).await;
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

fn sandbox_readiness(state: &AppState) -> Option<SandboxReadiness> {
    state
        .sandbox_if_set()
        .map(|sandbox| SandboxReadiness::from(&sandbox.report()))
}

/// The sandbox on `/readyz`: its mode, whether scripts can run, and each layer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SandboxReadiness {
    /// `strict`, `best_effort` or `none`.
    pub mode: String,
    /// Whether response scripts can run; script endpoints answer 503 while they cannot.
    pub ready: bool,
    /// Why scripts cannot run, when they cannot.
    pub reason: Option<String>,
    pub interpreter: String,
    pub layers: Vec<SandboxLayer>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SandboxLayer {
    /// `rlimits`, `pid-namespace`, `dedicated-uid`, `landlock`, `seccomp`, ...
    pub layer: String,
    pub available: bool,
    /// What applied (`abi 7`, a uid) or why it did not.
    pub detail: String,
}

impl From<&ProbeReport> for SandboxReadiness {
    fn from(report: &ProbeReport) -> SandboxReadiness {
        SandboxReadiness {
            mode: report.mode.as_str().to_string(),
            ready: report.not_ready.is_none(),
            reason: report.not_ready.clone(),
            interpreter: report.interpreter.display().to_string(),
            layers: report
                .layers
                .iter()
                .map(|layer| SandboxLayer {
                    layer: layer.layer.clone(),
                    available: layer.available,
                    detail: layer.detail.clone(),
                })
                .collect(),
        }
    }
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
        [(header::CONTENT_TYPE, sleuth_jobs::metrics::CONTENT_TYPE)],
        state.metrics().render(pending),
    )
        .into_response()
}
