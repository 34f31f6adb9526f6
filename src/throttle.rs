//! [`Throttle`]: at most one log line a second for something a server can make happen at will
//! (a dropped message, a skipped line), with a count of what was not logged.
//!
//! ```text
//!   hit() ──first, or a second after the last line──> Some(n): log now, n were not logged since
//!     └────otherwise────────────────────────────────> None: counted only
//!   unlogged() ──> the count since the last line (for a summary when the connection ends)
//! ```

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::sync::lock;

/// The shortest time between two log lines of one throttle.
const EVERY: Duration = Duration::from_secs(1);

#[derive(Default)]
pub(crate) struct Throttle {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    last: Option<Instant>,
    unlogged: u64,
}

impl Throttle {
    /// One occurrence: `Some(n)` when it should be logged now (`n` occurrences were not logged
    /// since the last line), `None` when it is only counted.
    pub(crate) fn hit(&self) -> Option<u64> {
        let mut s = lock(&self.state);
        let now = Instant::now();
        if s.last.is_some_and(|last| now.duration_since(last) < EVERY) {
            s.unlogged += 1;
            return None;
        }
        s.last = Some(now);
        Some(std::mem::take(&mut s.unlogged))
    }

    /// Occurrences not logged since the last line; the count starts again.
    pub(crate) fn unlogged(&self) -> u64 {
        std::mem::take(&mut lock(&self.state).unlogged)
    }
}

/// ` (and N more not logged)` for a count of occurrences not logged, or nothing.
pub(crate) fn more(unlogged: u64) -> String {
    if unlogged == 0 {
        String::new()
    } else {
        format!(" (and {unlogged} more since the last report)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_hit_is_logged_and_a_burst_is_counted() {
        let t = Throttle::default();
        assert_eq!(t.hit(), Some(0));
        for _ in 0..1000 {
            assert_eq!(t.hit(), None);
        }
        assert_eq!(t.unlogged(), 1000);
        assert_eq!(t.unlogged(), 0);
        assert_eq!(more(0), "");
        assert_eq!(more(3), " (and 3 more since the last report)");
    }
}
