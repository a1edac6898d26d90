//! Sleuth's HTTP API. `build` assembles the router from the state (the jobs' runtime and
//! what HTTP adds); `serve` runs it on a listener until a shutdown signal, so tests can bind
//! port 0 and own the signal. The data path of one alert: `routes::investigations::submit`
//! (parse, identity, store once) -> the queue -> `sleuth_jobs::workers` ->
//! `sleuth_jobs::pipeline::run_job` (guards, history, engine, stored result).
#![forbid(unsafe_code)]

pub mod admission;
pub mod audit;
pub mod auth;
pub mod connections;
pub mod console;
pub mod database_check;
pub mod dto;
pub mod error;
pub mod event_stream;
pub mod extract;
mod json_errors;
mod links;
mod list_budget;
mod list_query;
pub mod metrics;
pub mod passwords;
pub mod push_auth;
pub mod request_target;
pub mod routes;
pub mod state;

use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, Request};
use axum::response::IntoResponse;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_swagger_ui::SwaggerUi;

use crate::error::{ApiError, ErrorCode};
use crate::routes::schema::{ApiDoc, DOCS_PATH, SCHEMA_PATH};
pub use crate::state::AppState;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The OpenAPI description and the routes it describes, from one list of handlers.
fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(routes::investigations::router())
        .merge(routes::tenants::router())
        .merge(routes::response_actions::router())
        .merge(routes::health::router())
        .merge(routes::context::router())
        .merge(routes::schema_keys::router())
        .merge(routes::context_memory::router())
        .merge(routes::system_events::router())
        .merge(routes::events::router())
        .merge(routes::audit_log::router())
        .merge(routes::notes::router())
        .merge(routes::feedback::router())
        .merge(routes::users::router())
        .merge(routes::strategies::router())
        .merge(routes::push_sources::router())
        .merge(routes::push::router())
        .merge(routes::connectors::router())
        .merge(routes::data_sources::router())
        .merge(routes::notifications::router())
}

/// The OpenAPI document Sleuth serves.
pub fn openapi() -> utoipa::openapi::OpenApi {
    api().into_openapi()
}

/// The whole HTTP application.
pub fn build(state: AppState) -> Router {
    let body_limit = state.settings().server.body_limit_bytes;
    let body_timeout = Duration::from_secs(state.settings().server.body_read_timeout_seconds);
    let admission = std::sync::Arc::new(admission::Admission::new(
        &state.settings().server,
        state.shared_metrics(),
    ));
    let (router, openapi) = api().split_for_parts();
    // The console's forms are audited like the API's writes.
    let console = console::router().route_layer(axum::middleware::from_fn_with_state(
        state.clone(),
        audit::record,
    ));
    router
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), audit::record))
        .route_layer(axum::middleware::from_fn_with_state(state.shared_metrics(), metrics::track))
        .merge(SwaggerUi::new(DOCS_PATH).url(SCHEMA_PATH, openapi))
        .merge(console)
        .fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state.clone())
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn_with_state(
            body_timeout,
            connections::body_deadline,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state,
            request_target::check,
        ))
        .layer(axum::middleware::from_fn_with_state(
            admission,
            admission::admit,
        ))
        .layer(axum::middleware::map_response(json_errors::ensure_json))
        .layer(axum::middleware::from_fn(console::security_headers))
        .layer(CatchPanicLayer::custom(|_panic| {
            tracing::error!("a request handler panicked");
            ApiError::system_error().into_response()
        }))
        .layer(
            TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
                let request_id = request
                    .headers()
                    .get(REQUEST_ID)
                    .and_then(|value| value.to_str().ok())
                    .unwrap_or("-");
                tracing::info_span!("request", method = %request.method(), path = %request.uri().path(), request_id)
            }),
        )
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
}

/// A path no route has: the console's 404 page for a browser on a console path (a person
/// followed a link), the API's JSON error otherwise.
async fn unknown_route(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: axum::extract::Request,
) -> axum::response::Response {
    if console::wants_error_page(&request) {
        return console::unknown_page(&state, request).await;
    }
    ApiError::not_found("no such endpoint; the API is described at GET /app/api/v1/schema")
        .into_response()
}

async fn method_not_allowed(request: axum::extract::Request) -> axum::response::Response {
    if console::wants_error_page(&request) {
        return console::pages::error_page(
            axum::http::StatusCode::METHOD_NOT_ALLOWED,
            "This page does not take that kind of request.",
        );
    }
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        "this endpoint does not accept that method; see GET /app/api/v1/schema",
    )
    .into_response()
}

pub use crate::connections::{ConnectionLimits, serve};

/// How long to wait between attempts to reach the database at start-up.
pub const CONNECT_RETRY: Duration = Duration::from_secs(2);
