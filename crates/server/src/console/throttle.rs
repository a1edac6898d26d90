//! Sign-in attempts, limited per email address and per client address: past
//! `console.sign_in_failures_per_email` failures for one email, or
//! `console.sign_in_failures_per_address` from one address, within
//! `console.sign_in_window_minutes`, sign-in refuses without checking the password.
//!
//! Kept in memory, per process: a restart forgets, and several `sleuth serve` processes
//! behind a balancer each count on their own (so the limits multiply by their number).
//! That is enough to turn an online guess into a slow one, and keeps a sign-in free of
//! database writes; the argon2id cost makes every guess expensive besides. Behind a proxy
//! the client address is the proxy's, so the per-address limit covers all its clients
//! together; the per-email limit is unaffected.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sleuth_jobs::settings::ConsoleSettings;

/// The most keys remembered; past it, keys with no failure inside the window go first.
/// An attacker spraying addresses cannot grow the map without bound.
const MAX_KEYS: usize = 100_000;

#[derive(Debug)]
pub struct SignInThrottle {
    per_email: usize,
    per_address: usize,
    window: Duration,
    failures: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl SignInThrottle {
    pub fn new(settings: &ConsoleSettings) -> SignInThrottle {
        SignInThrottle {
            per_email: settings.sign_in_failures_per_email as usize,
            per_address: settings.sign_in_failures_per_address as usize,
            window: Duration::from_secs(settings.sign_in_window_minutes.saturating_mul(60)),
            failures: Mutex::new(HashMap::new()),
        }
    }

    fn keys(email: &str, address: &str) -> [(String, bool); 2] {
        [
            (format!("email:{}", email.trim().to_lowercase()), true),
            (format!("address:{address}"), false),
        ]
    }

    fn failures(&self) -> std::sync::MutexGuard<'_, HashMap<String, VecDeque<Instant>>> {
        // Plain data: a panic elsewhere cannot leave it half-written.
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a sign-in for `email` from `address` may be tried at `now`.
    pub fn allows(&self, email: &str, address: &str, now: Instant) -> bool {
        let mut failures = self.failures();
        SignInThrottle::keys(email, address)
            .into_iter()
            .all(|(key, is_email)| {
                let limit = if is_email {
                    self.per_email
                } else {
                    self.per_address
                };
                failures.get_mut(&key).is_none_or(|times| {
                    forget_before(times, now, self.window);
                    times.len() < limit
                })
            })
    }

    /// Counts a failed sign-in for `email` from `address` at `now`.
    pub fn failed(&self, email: &str, address: &str, now: Instant) {
        let mut failures = self.failures();
        if failures.len() >= MAX_KEYS {
            failures.retain(|_, times| {
                forget_before(times, now, self.window);
                !times.is_empty()
            });
        }
        for (key, _) in SignInThrottle::keys(email, address) {
            let times = failures.entry(key).or_default();
            forget_before(times, now, self.window);
            times.push_back(now);
        }
    }

    /// A successful sign-in clears the email's failures (not the address's: one account
    /// of the attacker's own must not reset a spray from that address).
    pub fn succeeded(&self, email: &str, address: &str) {
        let [(email_key, _), _] = SignInThrottle::keys(email, address);
        self.failures().remove(&email_key);
    }
}

fn forget_before(times: &mut VecDeque<Instant>, now: Instant, window: Duration) {
    while times
        .front()
        .is_some_and(|first| now.saturating_duration_since(*first) >= window)
    {
        times.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn throttle() -> SignInThrottle {
        SignInThrottle::new(&ConsoleSettings {
            sign_in_failures_per_email: 3,
            sign_in_failures_per_address: 5,
            sign_in_window_minutes: 10,
            ..ConsoleSettings::default()
        })
    }

    #[test]
    fn an_email_is_refused_after_its_failures_until_the_window_moves_on() {
        let throttle = throttle();
        let start = Instant::now();
        for minute in 0..3 {
            let at = start + Duration::from_secs(minute * 60);
            assert!(throttle.allows("Ana@example.com", "10.0.0.1", at));
            throttle.failed("ana@example.com", "10.0.0.1", at);
        }
        let later = start + Duration::from_secs(5 * 60);
        assert!(!throttle.allows("ana@example.com", "10.0.0.2", later));
        assert!(throttle.allows("bob@example.com", "10.0.0.1", later));
        // The first failure leaves the window ten minutes after it was made.
        assert!(throttle.allows(
            "ana@example.com",
            "10.0.0.2",
            start + Duration::from_secs(600)
        ));
    }

    #[test]
    fn an_address_is_refused_after_failures_across_emails() {
        let throttle = throttle();
        let now = Instant::now();
        for index in 0..5 {
            let email = format!("user{index}@example.com");
            assert!(throttle.allows(&email, "10.0.0.9", now));
            throttle.failed(&email, "10.0.0.9", now);
        }
        assert!(!throttle.allows("someone@example.com", "10.0.0.9", now));
        assert!(throttle.allows("someone@example.com", "10.0.0.8", now));
    }

    #[test]
    fn success_clears_the_emails_failures_but_not_the_addresss() {
        let throttle = throttle();
        let now = Instant::now();
        for _ in 0..3 {
            throttle.failed("ana@example.com", "10.0.0.1", now);
        }
        assert!(!throttle.allows("ana@example.com", "10.0.0.3", now));
        throttle.succeeded("ana@example.com", "10.0.0.1");
        assert!(throttle.allows("ana@example.com", "10.0.0.3", now));
        for _ in 0..2 {
            throttle.failed("eve@example.com", "10.0.0.1", now);
        }
        assert!(
            !throttle.allows("new@example.com", "10.0.0.1", now),
            "3 + 2 from one address"
        );
    }
}
