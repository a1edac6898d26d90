//! What every handler shares: the jobs' runtime (settings, store, context, sandbox,
//! secrets, data sources, metrics) and what only the HTTP layer needs beside it.

use std::ops::Deref;
use std::sync::Arc;

use sleuth_engine::Context;
use sleuth_jobs::{Runtime, Settings};
use sleuth_store::Store;

use crate::console::throttle::SignInThrottle;
use crate::database_check::DatabaseCheck;
use crate::error::{ApiError, ApiResult};
use crate::event_stream::EventStreams;

#[derive(Clone)]
pub struct AppState {
    runtime: Runtime,
    /// The database check `/readyz` answers from (`routes::health`).
    readiness: Arc<DatabaseCheck>,
    /// The open event streams, bounded and ended together at shutdown.
    event_streams: Arc<EventStreams>,
    /// The console's sign-in attempts (in memory, per process: `console::throttle`).
    sign_in_throttle: Arc<SignInThrottle>,
}

/// Handlers read the runtime's parts (`state.settings()`, `state.context()`) through the
/// state, as they would through the runtime itself.
impl Deref for AppState {
    type Target = Runtime;

    fn deref(&self) -> &Runtime {
        &self.runtime
    }
}

impl AppState {
    pub fn new(settings: Settings, context: Context) -> AppState {
        AppState::from_runtime(Runtime::new(settings, context))
    }

    /// The HTTP layer over a runtime that workers may share.
    pub fn from_runtime(runtime: Runtime) -> AppState {
        let event_streams = Arc::new(EventStreams::new(
            runtime.settings().server.max_event_streams,
        ));
        let sign_in_throttle = Arc::new(SignInThrottle::new(&runtime.settings().console));
        AppState {
            runtime,
            event_streams,
            sign_in_throttle,
            readiness: Arc::new(DatabaseCheck::default()),
        }
    }

    /// The runtime, for the jobs started beside the API (workers, watchers, connectors).
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    pub fn readiness(&self) -> &Arc<DatabaseCheck> {
        &self.readiness
    }

    pub fn sign_in_throttle(&self) -> &SignInThrottle {
        &self.sign_in_throttle
    }

    pub fn event_streams(&self) -> &EventStreams {
        &self.event_streams
    }

    /// The store, or 503 `not_ready` while Sleuth is still connecting or migrating.
    pub fn store(&self) -> ApiResult<&Arc<dyn Store>> {
        self.runtime.store_if_ready().ok_or_else(|| {
            ApiError::not_ready(
                "Sleuth is starting (connecting to or migrating the database); retry shortly",
                self.runtime.settings().server.retry_after_seconds,
            )
        })
    }
}
