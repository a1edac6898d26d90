//! A circuit breaker per source: after `failures` failures in a row the source is not
//! asked until a cooldown has passed; then one call probes it, and only its success closes
//! the breaker again. A dead source so costs one timeout per cooldown, not one per
//! investigation.

use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub(crate) struct Breaker {
    failures_to_open: u32,
    cooldown: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Clone, Copy)]
enum State {
    Closed {
        failures: u32,
    },
    /// Refusing calls until `until`; `probing` while a probe is out.
    Open {
        until: Instant,
        probing: bool,
    },
}

/// What a caller may do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    Go,
    /// The one call that tests an open breaker's source.
    Probe,
    /// Refused: the breaker is open (this long still, or a probe is out).
    Refused {
        retry_in: Duration,
    },
}

/// For metrics: 0 closed, 1 open, 2 half-open (a probe is out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    Closed,
    Open,
    HalfOpen,
}

impl Breaker {
    pub(crate) fn new(failures_to_open: u32, cooldown: Duration) -> Breaker {
        Breaker {
            failures_to_open: failures_to_open.max(1),
            cooldown,
            state: Mutex::new(State::Closed { failures: 0 }),
        }
    }

    pub(crate) fn admit(&self, now: Instant) -> Admission {
        let mut state = self.lock();
        match *state {
            State::Closed { .. } => Admission::Go,
            State::Open { until, .. } if now >= until => {
                // This caller probes; the others stay refused for another cooldown, or
                // until the probe reports. A probe that never reports (its investigation
                // gave up) lets the next caller probe after that cooldown.
                *state = State::Open {
                    until: now + self.cooldown,
                    probing: true,
                };
                Admission::Probe
            }
            State::Open { until, .. } => Admission::Refused {
                retry_in: until.saturating_duration_since(now),
            },
        }
    }

    pub(crate) fn success(&self) {
        *self.lock() = State::Closed { failures: 0 };
    }

    pub(crate) fn failure(&self, now: Instant) {
        let mut state = self.lock();
        let failures = match *state {
            State::Closed { failures } => failures + 1,
            State::Open { .. } => self.failures_to_open,
        };
        *state = if failures >= self.failures_to_open {
            State::Open {
                until: now + self.cooldown,
                probing: false,
            }
        } else {
            State::Closed { failures }
        };
    }

    pub(crate) fn state(&self) -> BreakerState {
        match *self.lock() {
            State::Closed { .. } => BreakerState::Closed,
            State::Open { probing: false, .. } => BreakerState::Open,
            State::Open { probing: true, .. } => BreakerState::HalfOpen,
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
    fn opens_after_failures_in_a_row_and_closes_after_a_probe_succeeds() {
        let breaker = Breaker::new(2, Duration::from_secs(30));
        let start = Instant::now();
        breaker.failure(start);
        assert_eq!(breaker.admit(start), Admission::Go);
        breaker.success();
        breaker.failure(start);
        assert_eq!(
            breaker.state(),
            BreakerState::Closed,
            "a success resets the count"
        );
        breaker.failure(start);
        assert_eq!(breaker.state(), BreakerState::Open);
        assert!(matches!(
            breaker.admit(start + Duration::from_secs(10)),
            Admission::Refused { .. }
        ));
        let later = start + Duration::from_secs(31);
        assert_eq!(breaker.admit(later), Admission::Probe);
        assert!(
            matches!(breaker.admit(later), Admission::Refused { .. }),
            "one probe at a time"
        );
        assert_eq!(breaker.state(), BreakerState::HalfOpen);
        breaker.success();
        assert_eq!(breaker.admit(later), Admission::Go);
    }

    #[test]
    fn a_failed_probe_opens_the_breaker_for_another_cooldown() {
        let breaker = Breaker::new(1, Duration::from_secs(30));
        let start = Instant::now();
        breaker.failure(start);
        let later = start + Duration::from_secs(31);
        assert_eq!(breaker.admit(later), Admission::Probe);
        breaker.failure(later);
        assert!(matches!(
            breaker.admit(later + Duration::from_secs(29)),
            Admission::Refused { .. }
        ));
        assert_eq!(
            breaker.admit(later + Duration::from_secs(30)),
            Admission::Probe
        );
    }
}
