//! Group commit, the one shape shared by every hot write of the store (creates, finished
//! investigations, audit entries): callers queue a request and wait; one task per kind of
//! write takes every request already waiting (up to a maximum), writes them all in one
//! transaction, and answers each caller only after the commit.
//!
//! Why: a commit, and on SQLite the database's single write lock, cost the same for one
//! row as for hundreds. With one transaction per request, concurrent writers queue for the
//! lock one by one and the commit rate caps throughput; with one per batch, the batch
//! grows with the load instead.

use async_trait::async_trait;
use sleuth_store::{StoreError, StoreResult};
use tokio::sync::{mpsc, oneshot};

/// One kind of batched write.
#[async_trait]
pub(crate) trait BatchWrite: Send + Sync + 'static {
    type Request: Send + 'static;
    type Output: Send + 'static;

    /// Writes the batch; returns one result per request, in order. Whatever it answers
    /// `Ok` must be committed.
    async fn write(&self, batch: &[Self::Request]) -> Vec<StoreResult<Self::Output>>;
}

/// How many requests one transaction carries at most, for the writers that need no other
/// bound (creates have their own setting).
pub(crate) const BATCH_MAX: usize = 256;

/// The answers to a batch written all or nothing: each request its own output, or every
/// request the same error.
pub(crate) fn all_or_nothing<T>(
    what: &str,
    size: usize,
    written: StoreResult<Vec<T>>,
) -> Vec<StoreResult<T>> {
    match written {
        Ok(outputs) => outputs.into_iter().map(Ok).collect(),
        Err(error) => all_failed(what, size, &error),
    }
}

/// Every request of a batch that failed to commit gets the same error (logged once here,
/// with what was being written): nothing of the batch is stored.
pub(crate) fn all_failed<T>(what: &str, size: usize, error: &StoreError) -> Vec<StoreResult<T>> {
    tracing::error!(%error, size, "{what} failed to commit");
    let message = error.to_string();
    (0..size)
        .map(|_| Err(StoreError::Unavailable(message.clone().into())))
        .collect()
}

type Queued<W> = (
    <W as BatchWrite>::Request,
    oneshot::Sender<StoreResult<<W as BatchWrite>::Output>>,
);

/// The queue in front of one writer task. Cheap to clone.
pub(crate) struct GroupCommit<W: BatchWrite> {
    sender: mpsc::Sender<Queued<W>>,
}

impl<W: BatchWrite> Clone for GroupCommit<W> {
    fn clone(&self) -> Self {
        GroupCommit {
            sender: self.sender.clone(),
        }
    }
}

impl<W: BatchWrite> GroupCommit<W> {
    /// Starts the writer task. Must run inside a tokio runtime.
    pub(crate) fn spawn(writer: W, batch_max: usize) -> GroupCommit<W> {
        let batch_max = batch_max.max(1);
        let (sender, receiver) = mpsc::channel(batch_max * 4);
        tokio::spawn(run(writer, batch_max, receiver));
        GroupCommit { sender }
    }

    /// Queues a request and waits for its commit.
    pub(crate) async fn submit(&self, request: W::Request) -> StoreResult<W::Output> {
        let (reply, answer) = oneshot::channel();
        self.sender
            .send((request, reply))
            .await
            .map_err(|_| StoreError::Unavailable("the store is shutting down".into()))?;
        answer.await.map_err(|_| {
            StoreError::Unavailable("the store's writer stopped before answering".into())
        })?
    }
}

async fn run<W: BatchWrite>(writer: W, batch_max: usize, mut receiver: mpsc::Receiver<Queued<W>>) {
    let mut queued = Vec::with_capacity(batch_max);
    // recv_many waits for the first request, then takes whatever else is already queued.
    while receiver.recv_many(&mut queued, batch_max).await > 0 {
        let (batch, replies): (Vec<W::Request>, Vec<_>) = queued.drain(..).unzip();
        let results = writer.write(&batch).await;
        debug_assert_eq!(results.len(), replies.len());
        for (reply, result) in replies.into_iter().zip(results) {
            // The caller may have gone away (a client disconnected); what was written stays.
            let _ = reply.send(result);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Records the size of every batch and answers each request with its double.
    struct Doubler {
        batches: std::sync::Arc<Mutex<Vec<usize>>>,
    }

    #[async_trait]
    impl BatchWrite for Doubler {
        type Request = u32;
        type Output = u32;
        async fn write(&self, batch: &[u32]) -> Vec<StoreResult<u32>> {
            self.batches.lock().unwrap().push(batch.len());
            // Slow enough that requests pile up behind the first batch.
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            batch.iter().map(|value| Ok(value * 2)).collect()
        }
    }

    #[tokio::test]
    async fn concurrent_requests_share_batches_and_each_gets_its_own_answer() {
        let batches = std::sync::Arc::new(Mutex::new(Vec::new()));
        let writer = GroupCommit::spawn(
            Doubler {
                batches: batches.clone(),
            },
            8,
        );
        let tasks: Vec<_> = (0..20u32)
            .map(|value| {
                let writer = writer.clone();
                tokio::spawn(async move { (value, writer.submit(value).await.unwrap()) })
            })
            .collect();
        for task in tasks {
            let (value, answer) = task.await.unwrap();
            assert_eq!(answer, value * 2);
        }
        let batches = batches.lock().unwrap().clone();
        assert_eq!(batches.iter().sum::<usize>(), 20);
        assert!(batches.iter().all(|&size| size <= 8), "{batches:?}");
        assert!(batches.len() < 20, "requests were batched: {batches:?}");
    }
}
