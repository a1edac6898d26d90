//! When a failed delivery is tried again, and when it is given up.
//!
//! At-least-once delivery: a delivery is retried until the destination accepts it or the
//! schedule runs out, then it is dead-lettered with its last reason (and can be sent again
//! by hand). Delays grow exponentially with jitter, so that many deliveries failing at once
//! (a receiver down) do not come back at once; a destination's `Retry-After` is honoured.

use std::time::Duration;

use sleuth_domain::Timestamp;

/// A destination's retry schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// The delay after the first failure (before jitter).
    pub first_delay: Duration,
    /// No delay is longer, `Retry-After` included.
    pub max_delay: Duration,
    /// Attempts in all, the first included; then the delivery is dead-lettered.
    pub max_attempts: u32,
}

impl Default for Schedule {
    /// 5 s doubling to an hour, 12 attempts: about seven hours of trying.
    fn default() -> Schedule {
        Schedule {
            first_delay: Duration::from_secs(5),
            max_delay: Duration::from_secs(3600),
            max_attempts: 12,
        }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    RetryAfter(Duration),
    DeadLetter,
}

impl Schedule {
    /// After the `attempts`-th attempt failed (1 for the first): wait, or give up.
    /// `retry_after` is the destination's own ask; `random` is uniform in `[0, 1)`.
    pub fn after_failure(&self, attempts: u32, retry_after: Option<Duration>, random: f64) -> Next {
        if attempts >= self.max_attempts {
            return Next::DeadLetter;
        }
        let doublings = attempts.saturating_sub(1).min(30);
        let base = self
            .first_delay
            .saturating_mul(1 << doublings)
            .min(self.max_delay);
        // Half fixed, half random: never a stampede, never much sooner than planned.
        let jitter = base.mul_f64(random.clamp(0.0, 1.0) / 2.0);
        let delay = base / 2 + jitter;
        let delay = retry_after.map_or(delay, |asked| asked.max(delay));
        Next::RetryAfter(delay.min(self.max_delay))
    }
}

/// What an HTTP status says about a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Delivered,
    /// Worth trying again: the receiver is busy, rate-limiting or broken for now.
    TryAgain,
    /// Trying again will not help (the URL is gone, the token refused, the body refused).
    Refused,
}

pub fn classify(status: u16) -> Answer {
    match status {
        200..=299 => Answer::Delivered,
        408 | 425 | 429 | 500..=599 => Answer::TryAgain,
        _ => Answer::Refused,
    }
}

/// A `Retry-After` header: seconds, or an HTTP date (then the time until it).
pub fn parse_retry_after(value: &str, now: Timestamp) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = at.with_timezone(&chrono::Utc) - now;
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_with_jitter_up_to_the_cap_then_dead_letter() {
        let schedule = Schedule::default();
        assert_eq!(
            schedule.after_failure(1, None, 0.0),
            Next::RetryAfter(Duration::from_millis(2500))
        );
        assert_eq!(
            schedule.after_failure(1, None, 0.999_999),
            Next::RetryAfter(Duration::from_secs(5).mul_f64(0.5 + 0.999_999 / 2.0))
        );
        assert_eq!(
            schedule.after_failure(3, None, 0.0),
            Next::RetryAfter(Duration::from_secs(10))
        );
        assert_eq!(
            schedule.after_failure(11, None, 1.0),
            Next::RetryAfter(Duration::from_secs(3600))
        );
        assert_eq!(schedule.after_failure(12, None, 0.5), Next::DeadLetter);
    }

    #[test]
    fn retry_after_is_honoured_but_capped() {
        let schedule = Schedule::default();
        assert_eq!(
            schedule.after_failure(1, Some(Duration::from_secs(30)), 0.0),
            Next::RetryAfter(Duration::from_secs(30))
        );
        assert_eq!(
            schedule.after_failure(1, Some(Duration::from_secs(86_400)), 0.0),
            Next::RetryAfter(Duration::from_secs(3600))
        );
    }

    #[test]
    fn statuses_and_retry_after_forms_read() {
        assert_eq!(classify(204), Answer::Delivered);
        assert_eq!(classify(429), Answer::TryAgain);
        assert_eq!(classify(503), Answer::TryAgain);
        assert_eq!(classify(404), Answer::Refused);
        assert_eq!(classify(401), Answer::Refused);
        let now = chrono::DateTime::parse_from_rfc3339("2015-10-21T07:28:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:29:00 GMT", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }
}
