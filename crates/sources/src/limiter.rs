//! A rate limit per source: a token bucket of `per_minute` calls, and the pause a vendor
//! asked for with 429 and `Retry-After`, during which the source is not asked at all.

use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub(crate) struct Limiter {
    per_minute: u32,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// May go below zero: each caller reserves its token and waits its turn.
    tokens: f64,
    refilled: Instant,
    paused_until: Option<Instant>,
}

/// When a call may go.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Turn {
    Now,
    /// After this wait (a token is reserved for the caller).
    After(Duration),
    /// The vendor asked for a pause that lasts this long still.
    Paused(Duration),
}

impl Limiter {
    /// `per_minute` 0: no limit of our own (the vendor's pauses still apply).
    pub(crate) fn new(per_minute: u32, now: Instant) -> Limiter {
        Limiter {
            per_minute,
            state: Mutex::new(State {
                tokens: f64::from(per_minute),
                refilled: now,
                paused_until: None,
            }),
        }
    }

    pub(crate) fn turn(&self, now: Instant) -> Turn {
        let mut state = self.lock();
        if let Some(until) = state.paused_until {
            if now < until {
                return Turn::Paused(until - now);
            }
            state.paused_until = None;
        }
        if self.per_minute == 0 {
            return Turn::Now;
        }
        let rate = f64::from(self.per_minute) / 60.0;
        let elapsed = now.saturating_duration_since(state.refilled).as_secs_f64();
        state.tokens = (state.tokens + elapsed * rate).min(f64::from(self.per_minute));
        state.refilled = now;
        state.tokens -= 1.0;
        if state.tokens >= 0.0 {
            Turn::Now
        } else {
            Turn::After(Duration::from_secs_f64(-state.tokens / rate))
        }
    }

    /// Gives back a token reserved by a caller that did not call after all.
    pub(crate) fn give_back(&self) {
        if self.per_minute > 0 {
            let mut state = self.lock();
            state.tokens = (state.tokens + 1.0).min(f64::from(self.per_minute));
        }
    }

    /// The vendor said 429: no call before `until`.
    pub(crate) fn pause_until(&self, until: Instant) {
        let mut state = self.lock();
        if state.paused_until.is_none_or(|current| current < until) {
            state.paused_until = Some(until);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        crate::lock(&self.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_allows_its_rate_then_makes_callers_wait_their_turn() {
        let start = Instant::now();
        let limiter = Limiter::new(60, start);
        for _ in 0..60 {
            assert_eq!(limiter.turn(start), Turn::Now);
        }
        let Turn::After(first) = limiter.turn(start) else {
            panic!("the 61st call in the same instant must wait");
        };
        let Turn::After(second) = limiter.turn(start) else {
            panic!("and so must the 62nd");
        };
        assert!(first <= Duration::from_millis(1001) && second > first);
        assert_eq!(limiter.turn(start + Duration::from_secs(5)), Turn::Now);
    }

    #[test]
    fn a_vendor_pause_refuses_calls_until_it_ends() {
        let start = Instant::now();
        let limiter = Limiter::new(0, start);
        limiter.pause_until(start + Duration::from_secs(7));
        assert!(matches!(
            limiter.turn(start + Duration::from_secs(2)),
            Turn::Paused(left) if left == Duration::from_secs(5)
        ));
        assert_eq!(limiter.turn(start + Duration::from_secs(7)), Turn::Now);
    }
}
