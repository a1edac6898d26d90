//! Admission: how many requests Sleuth works on at once, and what it answers to the rest.
//!
//! Every request takes a slot before anything else is done for it (authentication, reading
//! its body, the database). The health, readiness and metrics endpoints draw from their own
//! small pool, so a flood of API requests never keeps a load balancer or Prometheus from an
//! answer; creates and push deliveries draw from theirs, so a flood of reads never sheds the
//! alerts coming in (an alert refused is work a sender must redo, a list refused is not). A request that finds no free slot waits at most `server.queue_wait_ms`, then is
//! shed: 503 with `Retry-After` and the JSON error body (code `overloaded`), counted in
//! `sleuth_http_requests_shed_total`. Shedding early is what keeps memory and latency
//! bounded: a queue that only grows answers everyone late and holds every waiting
//! request's memory.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{ApiError, ErrorCode};
use sleuth_jobs::metrics::Metrics;
use sleuth_jobs::settings::ServerSettings;

/// The bounds a request can count against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// `/healthz`, `/readyz`, `/metrics`: cheap, and needed most when Sleuth is busiest.
    Health,
    /// Alerts coming in: the creates and the push endpoints.
    Ingest,
    /// Everything else.
    Api,
}

impl Class {
    pub fn of(path: &str) -> Class {
        match path {
            "/healthz" | "/readyz" | "/metrics" => Class::Health,
            _ if path.starts_with("/app/api/v1/investigation/create")
                || path.starts_with("/app/api/v1/push/") =>
            {
                Class::Ingest
            }
            _ => Class::Api,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Class::Health => "health",
            Class::Ingest => "ingest",
            Class::Api => "api",
        }
    }
}

struct Pool {
    slots: Arc<Semaphore>,
    in_flight: Gauge,
}

/// The slots of both classes, shared by every request of the process.
pub struct Admission {
    health: Pool,
    ingest: Pool,
    api: Pool,
    queue_wait: Duration,
    retry_after_seconds: u64,
    metrics: Arc<Metrics>,
}

impl Admission {
    pub fn new(settings: &ServerSettings, metrics: Arc<Metrics>) -> Admission {
        let pool = |size: usize, class: Class| Pool {
            slots: Arc::new(Semaphore::new(size)),
            in_flight: metrics.in_flight(class.label()),
        };
        Admission {
            health: pool(settings.max_health_requests_in_flight, Class::Health),
            ingest: pool(settings.max_ingest_requests_in_flight, Class::Ingest),
            api: pool(settings.max_requests_in_flight, Class::Api),
            queue_wait: Duration::from_millis(settings.queue_wait_ms),
            retry_after_seconds: settings.retry_after_seconds,
            metrics,
        }
    }

    fn pool(&self, class: Class) -> &Pool {
        match class {
            Class::Health => &self.health,
            Class::Ingest => &self.ingest,
            Class::Api => &self.api,
        }
    }

    /// A slot for a request of `class`, or None when none freed up within the queue wait.
    async fn slot(&self, class: Class) -> Option<Slot> {
        let pool = self.pool(class);
        let permit = match Arc::clone(&pool.slots).try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) if self.queue_wait.is_zero() => return None,
            Err(_) => {
                tokio::time::timeout(self.queue_wait, Arc::clone(&pool.slots).acquire_owned())
                    .await
                    .ok()?
                    .ok()?
            }
        };
        pool.in_flight.inc();
        Some(Slot {
            _permit: permit,
            in_flight: pool.in_flight.clone(),
        })
    }
}

/// A request's slot, given back when dropped.
struct Slot {
    _permit: OwnedSemaphorePermit,
    in_flight: Gauge,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.in_flight.dec();
    }
}

/// The layer: runs the request in a slot of its class, or sheds it.
pub async fn admit(
    State(admission): State<Arc<Admission>>,
    request: Request,
    next: Next,
) -> Response {
    let class = Class::of(request.uri().path());
    let Some(slot) = admission.slot(class).await else {
        admission.metrics.record_shed(class.label());
        let mut error = ApiError::new(
            ErrorCode::Overloaded,
            "Sleuth is working on as many requests as it takes at once; retry after the time in Retry-After",
        );
        error.retry_after_seconds = Some(admission.retry_after_seconds);
        return error.into_response();
    };
    let response = next.run(request).await;
    drop(slot);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_operations_endpoints_are_health() {
        assert_eq!(Class::of("/healthz"), Class::Health);
        assert_eq!(Class::of("/readyz"), Class::Health);
        assert_eq!(Class::of("/metrics"), Class::Health);
        assert_eq!(Class::of("/healthz/x"), Class::Api);
        assert_eq!(Class::of("/app/api/v1/investigation"), Class::Api);
        assert_eq!(Class::of("/app/api/v1/investigation/create"), Class::Ingest);
        assert_eq!(
            Class::of("/app/api/v1/investigation/create/custom"),
            Class::Ingest
        );
        assert_eq!(Class::of("/app/api/v1/push/7"), Class::Ingest);
        assert_eq!(Class::of("/app/api/v1/investigation/7"), Class::Api);
    }

    #[tokio::test]
    async fn a_request_waits_for_a_slot_then_is_shed() {
        let settings = ServerSettings {
            max_requests_in_flight: 1,
            queue_wait_ms: 50,
            ..ServerSettings::default()
        };
        let admission = Admission::new(&settings, Arc::new(Metrics::default()));
        let held = admission.slot(Class::Api).await.expect("a free slot");
        assert!(admission.slot(Class::Api).await.is_none());
        assert!(admission.slot(Class::Health).await.is_some());
        drop(held);
        assert!(admission.slot(Class::Api).await.is_some());
    }
}
