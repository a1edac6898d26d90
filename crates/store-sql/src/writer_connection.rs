//! The connection the group-commit writers (creates, finished jobs, audit entries, system
//! events) and the workers' claims write on.
//!
//! Why: SQLite empties a connection's whole page cache whenever another connection has
//! committed since that connection's last transaction, and the pool hands out its idle
//! connections in turn. So every batch began on a connection some other one had just
//! written behind, and read the B-tree pages it was about to change back from the file.
//! On SQLite one connection is therefore kept for these writers from one batch to the
//! next: they take turns anyway (`begin_write`), so keeping it costs no concurrency. It
//! helps the workers' finishes most (small batches, each of which began cold); creates
//! under load come in large batches, which a cold start costs little.
//!
//! On PostgreSQL each batch takes a connection from the pool: there the writers run side
//! by side, and a shared connection would make them wait for each other.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use sleuth_store::StoreResult;
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection, AnyPool};
use tokio::sync::Mutex;

use crate::{DbResultExt, Dialect};

/// Where the hot writers get their connection. Cheap to clone: clones share the kept
/// connection.
#[derive(Clone)]
pub(crate) struct WriterConnections {
    pool: AnyPool,
    /// SQLite: the kept connection, empty until the first write and after a failed one.
    kept: Option<Arc<Mutex<Option<PoolConnection<Any>>>>>,
    /// Whether a write ran since `take_wrote` last looked (so that background work that
    /// follows writes, such as folding count deltas, need not poll an idle database).
    wrote: Arc<AtomicBool>,
}

impl WriterConnections {
    pub(crate) fn new(pool: AnyPool, dialect: Dialect) -> WriterConnections {
        WriterConnections {
            pool,
            kept: (dialect == Dialect::Sqlite).then(Arc::default),
            wrote: Arc::default(),
        }
    }

    /// Whether a write ran since the last call.
    pub(crate) fn take_wrote(&self) -> bool {
        self.wrote.swap(false, Ordering::Relaxed)
    }

    /// Runs `write` (which begins and ends its own transaction) on the kept connection
    /// once the writer before has finished with it (SQLite), else on one from the pool.
    /// `write` must not call this again: it would wait for itself.
    pub(crate) async fn write<T>(
        &self,
        write: impl AsyncFnOnce(&mut AnyConnection) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let Some(kept) = &self.kept else {
            let mut connection = self.pool.acquire().await.db()?;
            let written = write(&mut connection).await;
            self.wrote.store(true, Ordering::Relaxed);
            return written;
        };
        let mut held = kept.lock().await;
        let connection = match held.as_mut() {
            Some(connection) => connection,
            None => held.insert(self.pool.acquire().await.db()?),
        };
        let written = write(connection).await;
        // After the write's end, so that whoever looks sees what it committed.
        self.wrote.store(true, Ordering::Relaxed);
        if written.is_err() {
            // So that the next batch begins on a new connection: one that cannot write
            // (its thread gone, say) must not be kept for every write to come. Failures
            // are rare (a batch the database refuses is replayed one request at a time),
            // so opening a connection again costs little.
            if let Some(mut connection) = held.take() {
                connection.close_on_drop();
            }
        }
        written
    }
}
