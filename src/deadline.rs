//! Deadlines from durations that cannot overflow: `Instant + Duration` panics when the sum is
//! not representable, and durations reach the crate from users and servers.

use std::time::{Duration, Instant};

/// `Instant::now() + d`, or the latest representable instant short of it.
pub(crate) fn after(d: Duration) -> Instant {
    add(Instant::now(), d)
}

/// `start + d`, or the latest representable instant short of it (halving `d` until the sum
/// fits, so a duration too long for the platform becomes "as late as it gets").
pub(crate) fn add(start: Instant, mut d: Duration) -> Instant {
    loop {
        if let Some(t) = start.checked_add(d) {
            return t;
        }
        d /= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_too_long_for_an_instant_does_not_panic() {
        let now = Instant::now();
        assert!(add(now, Duration::MAX) > now + Duration::from_secs(365 * 24 * 3600));
        assert_eq!(
            add(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        assert!(after(Duration::MAX) > now);
    }
}
