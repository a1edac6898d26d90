//! Prometheus metrics, with the Prometheus project's own client (`prometheus-client`):
//! requests by route, method and status, request latencies by route, requests in flight
//! and shed by admission class, and the workers' counters. Every family is registered once, here; code that counts something holds a
//! handle to its family from `Metrics` and never formats text itself. The HTTP layer
//! counts its requests through `record_request` and serves `render` at `/metrics`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Upper bounds of the latency buckets, in seconds.
const LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// The content type of `render`'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    /// The route's pattern (`/app/api/v1/investigation/{investigation_id}`), never a raw
    /// path, so the number of series stays bounded whatever clients send.
    route: String,
    method: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConnectorAlertLabels {
    /// The connector's name (admins make them; their number is small).
    connector: String,
    /// taken (a new investigation), known (already stored), refused (no parser reads
    /// it), filtered (left out by the connector's filters).
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConnectorPollLabels {
    connector: String,
    /// ok or error.
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConnectorLabels {
    connector: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DataSourceCallLabels {
    /// The source's name (admins make them; their number is small).
    source: String,
    /// called (the source was asked) or cache (a kept answer).
    origin: &'static str,
    /// ok or error (no answer: down, too slow, refused, breaker open).
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DataSourceLabels {
    source: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

/// Which bound of `admission` a request counts against.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClassLabels {
    class: &'static str,
}

pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latencies: Family<RouteLabels, Histogram>,
    shed: Family<ClassLabels, Counter>,
    in_flight: Family<ClassLabels, Gauge>,
    pub investigations_completed: Counter,
    pub investigations_failed: Counter,
    pub investigations_running: Gauge,
    /// Set from the store just before each scrape (`render`).
    jobs_pending: Gauge,
    connector_alerts: Family<ConnectorAlertLabels, Counter>,
    connector_polls: Family<ConnectorPollLabels, Counter>,
    connector_caught_up: Family<ConnectorLabels, Gauge>,
    data_source_calls: Family<DataSourceCallLabels, Counter>,
    data_source_latency: Family<DataSourceLabels, Histogram>,
    data_source_breaker_open: Family<DataSourceLabels, Gauge>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::with_prefix("sleuth");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests by route, method and status",
            requests.clone(),
        );
        let latencies = Family::<RouteLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(LATENCY_BUCKETS)
        });
        registry.register(
            "http_request_duration_seconds",
            "Request latency by route",
            latencies.clone(),
        );
        let shed = Family::<ClassLabels, Counter>::default();
        registry.register(
            "http_requests_shed",
            "Requests answered 503 without being worked on, because too many were in flight",
            shed.clone(),
        );
        let in_flight = Family::<ClassLabels, Gauge>::default();
        registry.register(
            "http_requests_in_flight",
            "Requests being worked on now, by admission class",
            in_flight.clone(),
        );
        let investigations_completed = Counter::default();
        registry.register(
            "investigations_completed",
            "Investigations concluded by this process",
            investigations_completed.clone(),
        );
        let investigations_failed = Counter::default();
        registry.register(
            "investigations_failed",
            "Investigations stopped with an error by this process",
            investigations_failed.clone(),
        );
        let investigations_running = Gauge::default();
        registry.register(
            "investigations_running",
            "Investigations running in this process",
            investigations_running.clone(),
        );
        let jobs_pending = Gauge::default();
        registry.register(
            "jobs_pending",
            "Investigations queued or running, in all processes",
            jobs_pending.clone(),
        );
        let connector_alerts = Family::<ConnectorAlertLabels, Counter>::default();
        registry.register(
            "connector_alerts",
            "Alerts a pull connector read, by connector and what became of them",
            connector_alerts.clone(),
        );
        let connector_polls = Family::<ConnectorPollLabels, Counter>::default();
        registry.register(
            "connector_polls",
            "Polls of a pull connector by this process, by result",
            connector_polls.clone(),
        );
        let connector_caught_up = Family::<ConnectorLabels, Gauge>::default();
        registry.register(
            "connector_caught_up_timestamp_seconds",
            "When a connector last read every page its vendor had (Unix time); its lag is now minus this",
            connector_caught_up.clone(),
        );
        let data_source_calls = Family::<DataSourceCallLabels, Counter>::default();
        registry.register(
            "data_source_lookups",
            "Look-ups of a data source by investigations, by source, origin and result",
            data_source_calls.clone(),
        );
        let data_source_latency =
            Family::<DataSourceLabels, Histogram>::new_with_constructor(|| {
                Histogram::new(LATENCY_BUCKETS)
            });
        registry.register(
            "data_source_lookup_duration_seconds",
            "How long an investigation waited for one look-up, by source (cache hits included)",
            data_source_latency.clone(),
        );
        let data_source_breaker_open = Family::<DataSourceLabels, Gauge>::default();
        registry.register(
            "data_source_breaker_open",
            "1 while a data source's circuit breaker is open or probing, 0 while closed",
            data_source_breaker_open.clone(),
        );
        Metrics {
            data_source_calls,
            data_source_latency,
            data_source_breaker_open,
            connector_alerts,
            connector_polls,
            connector_caught_up,
            registry,
            requests,
            latencies,
            shed,
            in_flight,
            investigations_completed,
            investigations_failed,
            investigations_running,
            jobs_pending,
        }
    }
}

impl Metrics {
    pub fn record_request(&self, route: &str, method: &str, status: u16, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels {
                route: route.to_string(),
                method: method.to_string(),
                status,
            })
            .inc();
        self.latencies
            .get_or_create(&RouteLabels {
                route: route.to_string(),
            })
            .observe(seconds);
    }

    /// One request of admission class `class` (`health` or `api`) shed.
    pub fn record_shed(&self, class: &'static str) {
        self.shed.get_or_create(&ClassLabels { class }).inc();
    }

    /// The gauge of requests of `class` in flight, for the admission layer to move.
    pub fn in_flight(&self, class: &'static str) -> Gauge {
        self.in_flight.get_or_create(&ClassLabels { class }).clone()
    }

    /// Counts `count` alerts of a connector's poll with the outcome named (see
    /// `ConnectorAlertLabels`).
    pub fn connector_alerts(&self, connector: &str, outcome: &'static str, count: u64) {
        self.connector_alerts
            .get_or_create(&ConnectorAlertLabels {
                connector: connector.to_string(),
                outcome,
            })
            .inc_by(count);
    }

    /// Counts a connector's poll, and when it read all its vendor had, notes when.
    pub fn connector_poll(&self, connector: &str, ok: bool, caught_up_at: Option<i64>) {
        self.connector_polls
            .get_or_create(&ConnectorPollLabels {
                connector: connector.to_string(),
                result: if ok { "ok" } else { "error" },
            })
            .inc();
        if let Some(at) = caught_up_at {
            self.connector_caught_up
                .get_or_create(&ConnectorLabels {
                    connector: connector.to_string(),
                })
                .set(at);
        }
    }

    /// Counts one look-up of a data source by an investigation.
    pub fn data_source_call(
        &self,
        source: &str,
        origin: sleuth_sources::Origin,
        failed: bool,
        elapsed: std::time::Duration,
    ) {
        self.data_source_calls
            .get_or_create(&DataSourceCallLabels {
                source: source.to_string(),
                origin: match origin {
                    sleuth_sources::Origin::Called => "called",
                    sleuth_sources::Origin::Cache => "cache",
                },
                result: if failed { "error" } else { "ok" },
            })
            .inc();
        self.data_source_latency
            .get_or_create(&DataSourceLabels {
                source: source.to_string(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// Notes the state of a data source's circuit breaker.
    pub fn data_source_breaker(&self, source: &str, state: sleuth_sources::BreakerState) {
        self.data_source_breaker_open
            .get_or_create(&DataSourceLabels {
                source: source.to_string(),
            })
            .set(i64::from(state != sleuth_sources::BreakerState::Closed));
    }

    /// The exposition (OpenMetrics text), with `pending_jobs` read by the caller from the
    /// store; `None` (the store is not reachable) leaves the last value.
    pub fn render(&self, pending_jobs: Option<u64>) -> String {
        if let Some(pending) = pending_jobs {
            self.jobs_pending
                .set(i64::try_from(pending).unwrap_or(i64::MAX));
        }
        let mut text = String::new();
        if let Err(error) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::error!(%error, "could not encode the metrics");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_names_every_family_with_its_samples() {
        let metrics = Metrics::default();
        metrics.record_request("/app/api/v1/investigation", "GET", 200, 0.003);
        metrics.record_request("/app/api/v1/investigation", "GET", 200, 0.2);
        metrics.investigations_completed.inc();
        metrics.investigations_running.set(2);
        metrics.record_shed("api");
        metrics.in_flight("health").inc();
        let text = metrics.render(Some(7));
        for line in [
            "sleuth_http_requests_total{route=\"/app/api/v1/investigation\",method=\"GET\",status=\"200\"} 2",
            "sleuth_http_request_duration_seconds_bucket{le=\"0.005\",route=\"/app/api/v1/investigation\"} 1",
            "sleuth_http_request_duration_seconds_count{route=\"/app/api/v1/investigation\"} 2",
            "sleuth_investigations_completed_total 1",
            "sleuth_investigations_failed_total 0",
            "sleuth_investigations_running 2",
            "sleuth_jobs_pending 7",
            "sleuth_http_requests_shed_total{class=\"api\"} 1",
            "sleuth_http_requests_in_flight{class=\"health\"} 1",
            "# EOF",
        ] {
            assert!(text.contains(line), "missing {line}:\n{text}");
        }
    }

    #[test]
    fn a_route_label_is_escaped_not_trusted() {
        let metrics = Metrics::default();
        metrics.record_request("unmatched\"} 1\nfake 9", "GET", 404, 0.001);
        let text = metrics.render(None);
        assert!(!text.contains("\nfake 9"), "{text}");
    }
}
