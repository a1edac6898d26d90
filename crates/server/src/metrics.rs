//! Prometheus metrics, written out by hand in the text exposition format: requests by
//! route, method and status, request latencies by route, and the workers' counters.
//! A dependency would add more code than these few counters need.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::state::AppState;

/// Upper bounds of the latency buckets, in seconds.
const LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

#[derive(Default)]
struct Latency {
    bucket_counts: [u64; LATENCY_BUCKETS.len()],
    count: u64,
    sum_seconds: f64,
}

#[derive(Default)]
pub struct Metrics {
    /// (route, method, status) -> count.
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    latencies: Mutex<BTreeMap<String, Latency>>,
    pub investigations_completed: AtomicU64,
    pub investigations_failed: AtomicU64,
    pub investigations_running: AtomicU64,
}

impl Metrics {
    pub fn record_request(&self, route: &str, method: &str, status: u16, elapsed: Duration) {
        if let Ok(mut requests) = self.requests.lock() {
            *requests
                .entry((route.to_string(), method.to_string(), status))
                .or_default() += 1;
        }
        if let Ok(mut latencies) = self.latencies.lock() {
            let latency = latencies.entry(route.to_string()).or_default();
            let seconds = elapsed.as_secs_f64();
            for (index, bound) in LATENCY_BUCKETS.iter().enumerate() {
                if seconds <= *bound {
                    latency.bucket_counts[index] += 1;
                }
            }
            latency.count += 1;
            latency.sum_seconds += seconds;
        }
    }

    /// The text exposition, with `pending_jobs` read by the caller from the store.
    pub fn render(&self, pending_jobs: Option<u64>) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP sleuth_http_requests_total HTTP requests by route, method and status."
        );
        let _ = writeln!(out, "# TYPE sleuth_http_requests_total counter");
        if let Ok(requests) = self.requests.lock() {
            for ((route, method, status), count) in requests.iter() {
                let _ = writeln!(
                    out,
                    "sleuth_http_requests_total{{route=\"{}\",method=\"{method}\",status=\"{status}\"}} {count}",
                    escape(route)
                );
            }
        }
        let _ = writeln!(
            out,
            "# HELP sleuth_http_request_duration_seconds Request latency by route."
        );
        let _ = writeln!(out, "# TYPE sleuth_http_request_duration_seconds histogram");
        if let Ok(latencies) = self.latencies.lock() {
            for (route, latency) in latencies.iter() {
                let route = escape(route);
                for (index, bound) in LATENCY_BUCKETS.iter().enumerate() {
                    let _ = writeln!(
                        out,
                        "sleuth_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"{bound}\"}} {}",
                        latency.bucket_counts[index]
                    );
                }
                let _ = writeln!(
                    out,
                    "sleuth_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}",
                    latency.count
                );
                let _ = writeln!(
                    out,
                    "sleuth_http_request_duration_seconds_sum{{route=\"{route}\"}} {}",
                    latency.sum_seconds
                );
                let _ = writeln!(
                    out,
                    "sleuth_http_request_duration_seconds_count{{route=\"{route}\"}} {}",
                    latency.count
                );
            }
        }
        for (name, help, value) in [
            (
                "sleuth_investigations_completed_total",
                "Investigations concluded by this process.",
                &self.investigations_completed,
            ),
            (
                "sleuth_investigations_failed_total",
                "Investigations stopped with an error by this process.",
                &self.investigations_failed,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                value.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP sleuth_investigations_running Investigations running in this process.\n\
             # TYPE sleuth_investigations_running gauge\nsleuth_investigations_running {}",
            self.investigations_running.load(Ordering::Relaxed)
        );
        if let Some(pending) = pending_jobs {
            let _ = writeln!(
                out,
                "# HELP sleuth_jobs_pending Investigations queued or running, in all processes.\n\
                 # TYPE sleuth_jobs_pending gauge\nsleuth_jobs_pending {pending}"
            );
        }
        out
    }
}

fn escape(label: &str) -> String {
    label
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Middleware recording every routed request. Routes are labelled by their pattern
/// (`/app/api/v1/investigation/{investigation_id}`), never by raw paths, so the number of
/// series stays bounded whatever clients send.
pub async fn track(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |path| path.as_str().to_string());
    let method = request.method().as_str().to_string();
    let response = next.run(request).await;
    state.metrics().record_request(
        &route,
        &method,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}
