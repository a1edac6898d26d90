//! Recently authenticated API keys, so that a request does not cost a database round trip
//! to learn who sent it: on the create path the key lookup was a large share of the CPU of
//! a create, and one more hop to the database thread.
//!
//! What a cached answer may get wrong, and for how long:
//! - In this process, nothing: every change to keys or users made through this store
//!   (revoking a key, changing or deactivating a user) empties the cache once it commits,
//!   and a lookup that raced with such a change does not put its answer in.
//! - Another process (`sleuth apikey revoke` beside a running server, or a second
//!   `sleuth serve` on the same database) is seen within [`KEY_CACHE_TTL`], the time an
//!   answer is trusted before the key is looked up again.
//!
//! Only keys that authenticated are kept: an unknown key is looked up every time, so that
//! guessing keys cannot fill the cache, and a key created elsewhere works at once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use sleuth_domain::Timestamp;
use sleuth_store::{KEY_CACHE_TTL, KeyHash, Principal};

/// At most this many keys are kept (a deployment has tens); past it, stale answers are
/// dropped first, then all.
const KEY_CACHE_MAX: usize = 4_096;

#[derive(Default)]
pub(crate) struct KeyCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<KeyHash, (Principal, Instant)>,
    /// Bumped by every change to keys or users. A lookup remembers the generation it began
    /// in and keeps its answer only if no change committed meanwhile.
    generation: u64,
}

/// Where a lookup began, to be handed back to [`KeyCache::keep`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Generation(u64);

impl KeyCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The map holds plain data: a panic elsewhere cannot leave it half-updated.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The cached principal of a key, if it was looked up less than [`KEY_CACHE_TTL`] ago;
    /// otherwise the generation to pass to [`KeyCache::keep`] after looking it up.
    pub(crate) fn get(&self, hash: &KeyHash, now: Instant) -> Result<Principal, Generation> {
        let inner = self.lock();
        match inner.entries.get(hash) {
            Some((principal, fetched)) if now.duration_since(*fetched) < KEY_CACHE_TTL => {
                Ok(principal.clone())
            }
            _ => Err(Generation(inner.generation)),
        }
    }

    /// Keeps a principal just read from the database, unless keys or users changed since
    /// the lookup began.
    pub(crate) fn keep(
        &self,
        hash: &KeyHash,
        principal: &Principal,
        began: Generation,
        now: Instant,
    ) {
        let mut inner = self.lock();
        if inner.generation != began.0 {
            return;
        }
        if inner.entries.len() >= KEY_CACHE_MAX {
            inner
                .entries
                .retain(|_, (_, fetched)| now.duration_since(*fetched) < KEY_CACHE_TTL);
            if inner.entries.len() >= KEY_CACHE_MAX {
                inner.entries.clear();
            }
        }
        inner.entries.insert(hash.clone(), (principal.clone(), now));
    }

    /// Forgets every answer. Call after a change to keys or users has committed.
    pub(crate) fn invalidate(&self) {
        let mut inner = self.lock();
        inner.entries.clear();
        inner.generation += 1;
    }

    /// A key's use was recorded: cached answers show it, so that the next requests do
    /// not record it again.
    pub(crate) fn note_use(&self, api_key_id: i64, at: Timestamp) {
        let mut inner = self.lock();
        for (principal, _) in inner.entries.values_mut() {
            if principal.api_key_id == api_key_id {
                principal.key_last_used_at = Some(at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sleuth_domain::Role;
    use sleuth_store::User;

    fn principal(api_key_id: i64) -> Principal {
        let at = chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        Principal {
            user: User {
                id: 1,
                email: "kim@example.com".into(),
                first_name: "Kim".into(),
                last_name: "Lee".into(),
                role: Role::Member,
                oidc_user_id: None,
                is_active: true,
                tenant_scope: sleuth_store::TenantScope::All,
                created_at: at,
                updated_at: at,
            },
            api_key_id,
            key_last_used_at: None,
            key_scope: sleuth_store::TenantScope::All,
        }
    }

    /// Looks the key up as `SqlStore::authenticate` does on a miss: the database answers
    /// with `api_key_id`'s principal.
    fn look_up(cache: &KeyCache, hash: &KeyHash, api_key_id: i64, now: Instant) {
        let began = cache.get(hash, now).expect_err("not cached yet");
        cache.keep(hash, &principal(api_key_id), began, now);
    }

    #[test]
    fn answers_are_kept_for_the_ttl_only() {
        let cache = KeyCache::default();
        let hash = KeyHash::of("secret");
        let start = Instant::now();
        look_up(&cache, &hash, 7, start);
        let hit = cache.get(&hash, start + KEY_CACHE_TTL / 2).unwrap();
        assert_eq!(hit.api_key_id, 7);
        assert!(cache.get(&hash, start + KEY_CACHE_TTL).is_err());
        assert!(cache.get(&KeyHash::of("other"), start).is_err());
    }

    #[test]
    fn a_lookup_that_raced_with_a_change_is_not_kept() {
        let cache = KeyCache::default();
        let hash = KeyHash::of("secret");
        let now = Instant::now();
        let began = cache.get(&hash, now).unwrap_err();
        // A revocation commits while the lookup is in flight: its answer may be stale.
        cache.invalidate();
        cache.keep(&hash, &principal(7), began, now);
        assert!(cache.get(&hash, now).is_err());

        look_up(&cache, &hash, 7, now);
        assert!(cache.get(&hash, now).is_ok());
        cache.invalidate();
        assert!(cache.get(&hash, now).is_err(), "a change empties the cache");
    }

    #[test]
    fn recorded_uses_show_in_cached_answers() {
        let cache = KeyCache::default();
        let hash = KeyHash::of("secret");
        let now = Instant::now();
        look_up(&cache, &hash, 7, now);
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        cache.note_use(8, at);
        assert_eq!(cache.get(&hash, now).unwrap().key_last_used_at, None);
        cache.note_use(7, at);
        assert_eq!(cache.get(&hash, now).unwrap().key_last_used_at, Some(at));
    }

    #[test]
    fn the_cache_stays_bounded() {
        let cache = KeyCache::default();
        let now = Instant::now();
        for index in 0..KEY_CACHE_MAX + 10 {
            look_up(&cache, &KeyHash::of(&index.to_string()), index as i64, now);
        }
        assert!(cache.lock().entries.len() <= KEY_CACHE_MAX);
    }
}
