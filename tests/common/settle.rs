//! Waiting for a value the kernel updates a moment after the fact.

use std::time::{Duration, Instant};

/// Threads that were joined can stay listed in `/proc/self/task` for a moment while the kernel
/// finishes releasing them, so a count or name check is retried for up to two seconds. Returns
/// the first value `want` accepts, or the last one read.
pub fn settled<T: PartialEq>(mut read: impl FnMut() -> T, want: impl Fn(&T) -> bool) -> T {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let v = read();
        if want(&v) || Instant::now() >= deadline {
            return v;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
