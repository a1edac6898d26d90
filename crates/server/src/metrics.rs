//! Counting the HTTP requests into the metrics (`sleuth_jobs::metrics`, where every family
//! is registered).

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use sleuth_jobs::metrics::Metrics;

/// Middleware recording every routed request.
pub async fn track(State(metrics): State<Arc<Metrics>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |path| path.as_str().to_string());
    let method = request.method().as_str().to_string();
    let response = next.run(request).await;
    metrics.record_request(
        &route,
        &method,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}
