//! How far a reader of the system events (an event stream, a notification deliverer) may
//! read without ever skipping an event that is still being written.
//!
//! System event ids come from the database when a transaction writes, and the event is
//! visible when that transaction commits. With several writers (the API, worker
//! processes), a transaction holding id 10 can commit after one holding id 11: a stream
//! that read 11 and moved its position past it would never see 10. So a stream reads only
//! up to the first gap in the ids after its position, and waits for the gap to fill. A gap
//! that stands for [`GAP_PATIENCE`] is a write that rolled back (or a sequence that skipped),
//! and the stream moves past it.

use std::time::{Duration, Instant};

/// How long a gap in the ids is waited for before it is taken for a rolled-back write.
/// Far longer than a commit takes; a client sees events that late, never out of order.
pub const GAP_PATIENCE: Duration = Duration::from_secs(10);

/// A stream's position and the gap it is waiting on, if any.
#[derive(Debug)]
pub struct Horizon {
    position: i64,
    waiting: Option<(i64, Instant)>,
    patience: Duration,
}

impl Horizon {
    /// A stream that has sent every event up to and including `position`.
    pub fn new(position: i64, patience: Duration) -> Horizon {
        Horizon {
            position,
            waiting: None,
            patience,
        }
    }

    pub fn position(&self) -> i64 {
        self.position
    }

    /// The last id the stream may read now, given the ids after its position (ascending,
    /// as the store lists them): the end of the run of consecutive ids, or further when the
    /// gap after it has been waited on long enough.
    pub fn through(&mut self, ids_after: &[i64], now: Instant) -> i64 {
        let mut through = self.position;
        for &id in ids_after {
            if id <= through {
                continue;
            }
            if id == through + 1 {
                through = id;
                continue;
            }
            let missing = through + 1;
            match self.waiting {
                Some((gap, since)) if gap == missing => {
                    if now.duration_since(since) < self.patience {
                        break;
                    }
                    self.waiting = None;
                    through = id;
                }
                _ => {
                    self.waiting = Some((missing, now));
                    break;
                }
            }
        }
        through
    }

    /// The stream sent everything up to and including `id`.
    pub fn advance(&mut self, id: i64) {
        self.position = self.position.max(id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATIENCE: Duration = Duration::from_secs(10);

    #[test]
    fn consecutive_ids_are_read_to_their_end() {
        let mut horizon = Horizon::new(4, PATIENCE);
        assert_eq!(horizon.through(&[5, 6, 7], Instant::now()), 7);
        assert_eq!(horizon.through(&[], Instant::now()), 4);
    }

    #[test]
    fn a_gap_stops_the_read_until_it_fills() {
        let start = Instant::now();
        let mut horizon = Horizon::new(4, PATIENCE);
        // 6 is committed, 5 is still being written: nothing may be read yet.
        assert_eq!(horizon.through(&[6, 7], start), 4);
        assert_eq!(horizon.through(&[6, 7], start + Duration::from_secs(3)), 4);
        // 5 commits: all three are read, in order.
        assert_eq!(
            horizon.through(&[5, 6, 7], start + Duration::from_secs(4)),
            7
        );
        horizon.advance(7);
        assert_eq!(horizon.position(), 7);
    }

    #[test]
    fn a_gap_that_stands_past_the_patience_was_a_rolled_back_write() {
        let start = Instant::now();
        let mut horizon = Horizon::new(4, PATIENCE);
        assert_eq!(horizon.through(&[5, 7, 8], start), 5);
        horizon.advance(5);
        assert_eq!(horizon.through(&[7, 8], start + Duration::from_secs(1)), 5);
        assert_eq!(horizon.through(&[7, 8], start + Duration::from_secs(12)), 8);
    }

    #[test]
    fn a_new_gap_is_waited_on_afresh() {
        let start = Instant::now();
        let mut horizon = Horizon::new(0, PATIENCE);
        assert_eq!(horizon.through(&[2], start), 0);
        assert_eq!(horizon.through(&[2], start + PATIENCE), 2);
        horizon.advance(2);
        // The gap at 3 is new: its own patience starts now.
        assert_eq!(horizon.through(&[4], start + PATIENCE), 2);
        assert_eq!(
            horizon.through(&[4], start + PATIENCE + Duration::from_secs(1)),
            2
        );
    }
}
