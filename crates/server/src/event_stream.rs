//! The open event streams of the process, and (from `sleuth_jobs::event_horizon`) how far
//! a stream may read without ever skipping an event that is still being written.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

pub use sleuth_jobs::event_horizon::{GAP_PATIENCE, Horizon};

/// The open streams of the process: at most `server.max_event_streams`, all ended at once
/// when Sleuth shuts down (a stream never ends by itself, and a graceful shutdown waits
/// for every answer to end).
#[derive(Debug)]
pub struct EventStreams {
    slots: Arc<Semaphore>,
    closing: watch::Sender<bool>,
}

impl EventStreams {
    pub fn new(max_streams: usize) -> EventStreams {
        EventStreams {
            slots: Arc::new(Semaphore::new(max_streams)),
            closing: watch::Sender::new(false),
        }
    }

    /// A slot for one more stream, held while it is open; None when all are taken.
    pub fn open(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.slots).try_acquire_owned().ok()
    }

    /// What a stream watches to end when Sleuth shuts down.
    pub fn closing(&self) -> watch::Receiver<bool> {
        self.closing.subscribe()
    }

    /// Ends every open stream (after the event it is sending, if any).
    pub fn close_all(&self) {
        self.closing.send_replace(true);
    }
}
