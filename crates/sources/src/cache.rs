//! Answers kept per source and entity for the source's TTL, shared by every investigation
//! of the process. Concurrent lookups of one key share one call: a burst of 1,000 alerts
//! on one hash asks the source once. Failures are shared by the lookups that waited on
//! that call, and never kept beyond it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sleuth_domain::{AnswerResult, Entity, Timestamp};
use tokio::sync::OnceCell;

/// How many answers the cache holds at most; past it the expired ones go, then the oldest.
const CAPACITY: usize = 100_000;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    source: Arc<str>,
    /// A changed definition must not be answered from the old one's cache.
    version: i64,
    entity: Entity,
}

/// An answer and when it was given.
#[derive(Debug, Clone)]
pub(crate) struct Cached {
    pub result: AnswerResult,
    pub at: Timestamp,
    pub fetched: Instant,
}

#[derive(Debug, Default)]
pub(crate) struct Cache {
    slots: Mutex<HashMap<Key, Arc<OnceCell<Cached>>>>,
}

/// Whether an answer came from the cache (or from a call another lookup made) or from a
/// call this lookup made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Called,
    Cache,
}

impl Cache {
    /// The kept answer, or the one `fetch` gives (run once for all concurrent callers).
    pub(crate) async fn get_or_fetch<F, Fut>(
        &self,
        source: &Arc<str>,
        version: i64,
        entity: &Entity,
        ttl: Duration,
        fetch: F,
    ) -> (Cached, Origin)
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Cached>,
    {
        let key = Key {
            source: source.clone(),
            version,
            entity: entity.clone(),
        };
        let cell = {
            let mut slots = self.lock();
            let now = Instant::now();
            let fresh = slots
                .get(&key)
                .filter(|cell| cell.get().is_none_or(|cached| usable(cached, ttl, now)))
                .cloned();
            match fresh {
                Some(cell) => cell,
                None => {
                    if slots.len() >= CAPACITY {
                        evict(&mut slots, ttl, now);
                    }
                    let cell = Arc::new(OnceCell::new());
                    slots.insert(key, cell.clone());
                    cell
                }
            }
        };
        let mut called = false;
        let cached = cell
            .get_or_init(|| {
                called = true;
                fetch()
            })
            .await
            .clone();
        let origin = if called {
            Origin::Called
        } else {
            Origin::Cache
        };
        (cached, origin)
    }

    /// Forgets every answer of `source` (its definition changed or it was deleted).
    pub(crate) fn forget(&self, source: &str) {
        self.lock().retain(|key, _| &*key.source != source);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Arc<OnceCell<Cached>>>> {
        crate::lock(&self.slots)
    }
}

fn usable(cached: &Cached, ttl: Duration, now: Instant) -> bool {
    !matches!(cached.result, AnswerResult::Failed { .. })
        && now.saturating_duration_since(cached.fetched) < ttl
}

fn evict(slots: &mut HashMap<Key, Arc<OnceCell<Cached>>>, ttl: Duration, now: Instant) {
    slots.retain(|_, cell| cell.get().is_none_or(|cached| usable(cached, ttl, now)));
    if slots.len() >= CAPACITY {
        let mut ages: Vec<(Instant, Key)> = slots
            .iter()
            .filter_map(|(key, cell)| cell.get().map(|cached| (cached.fetched, key.clone())))
            .collect();
        ages.sort_by_key(|(fetched, _)| *fetched);
        for (_, key) in ages.into_iter().take(CAPACITY / 4) {
            slots.remove(&key);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use sleuth_domain::EntityKind;

    use super::*;

    fn answer(result: AnswerResult) -> Cached {
        Cached {
            result,
            at: chrono::Utc::now(),
            fetched: Instant::now(),
        }
    }

    #[tokio::test]
    async fn concurrent_lookups_of_one_key_make_one_call() {
        let cache = Arc::new(Cache::default());
        let calls = Arc::new(AtomicUsize::new(0));
        let source: Arc<str> = Arc::from("vt");
        let entity = Entity::new(EntityKind::HashSha256, "ab".repeat(32));
        let mut tasks = Vec::new();
        for _ in 0..1000 {
            let (cache, calls, source, entity) =
                (cache.clone(), calls.clone(), source.clone(), entity.clone());
            tasks.push(tokio::spawn(async move {
                cache
                    .get_or_fetch(&source, 1, &entity, Duration::from_secs(60), || async {
                        calls.fetch_add(1, Ordering::SeqCst);
                        tokio::task::yield_now().await;
                        answer(AnswerResult::NotFound)
                    })
                    .await
            }));
        }
        let mut from_cache = 0;
        for task in tasks {
            let (cached, origin) = task.await.unwrap();
            assert_eq!(cached.result, AnswerResult::NotFound);
            from_cache += usize::from(origin == Origin::Cache);
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(from_cache, 999);
    }

    #[tokio::test]
    async fn failures_are_not_kept_and_a_new_version_asks_again() {
        let cache = Cache::default();
        let source: Arc<str> = Arc::from("directory");
        let entity = Entity::new(EntityKind::User, "alice");
        let ttl = Duration::from_secs(60);
        let failed = AnswerResult::Failed {
            reason: "down".into(),
        };
        let (_, origin) = cache
            .get_or_fetch(&source, 1, &entity, ttl, || async {
                answer(failed.clone())
            })
            .await;
        assert_eq!(origin, Origin::Called);
        let (cached, origin) = cache
            .get_or_fetch(&source, 1, &entity, ttl, || async {
                answer(AnswerResult::NotFound)
            })
            .await;
        assert_eq!(
            (cached.result, origin),
            (AnswerResult::NotFound, Origin::Called)
        );
        let (_, origin) = cache
            .get_or_fetch(&source, 1, &entity, ttl, || async {
                answer(AnswerResult::NotFound)
            })
            .await;
        assert_eq!(origin, Origin::Cache);
        let (_, origin) = cache
            .get_or_fetch(&source, 2, &entity, ttl, || async {
                answer(AnswerResult::NotFound)
            })
            .await;
        assert_eq!(origin, Origin::Called);
    }
}
