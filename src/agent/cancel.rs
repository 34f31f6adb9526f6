//! [`CancelHandle`]: stops a run from another thread.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::sync::lock;

/// Cancels a run from another thread. Clone it freely; all clones share one flag.
///
/// A cancelled run stops at its next step: before the next model request, while waiting
/// between retries, or once the tool calls already running have finished (each is bounded by
/// its timeout). A model request already sent is not interrupted (it is bounded by the model's
/// timeout). The flag stays set until [`reset`](Self::reset).
///
/// ```
/// use mcp_blocking::agent::CancelHandle;
/// let cancel = CancelHandle::new();
/// let other = cancel.clone();
/// std::thread::scope(|s| { s.spawn(|| other.cancel()); });
/// assert!(cancel.is_cancelled());
/// ```
#[derive(Debug, Clone, Default)]
pub struct CancelHandle {
    inner: Arc<(Mutex<bool>, Condvar)>,
}

impl CancelHandle {
    /// A handle that has not fired.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fires: the run stops at its next step.
    pub fn cancel(&self) {
        *lock(&self.inner.0) = true;
        self.inner.1.notify_all();
    }

    /// Whether it has fired.
    pub fn is_cancelled(&self) -> bool {
        *lock(&self.inner.0)
    }

    /// Clears the flag, so the next run can go ahead.
    pub fn reset(&self) {
        *lock(&self.inner.0) = false;
    }

    /// Waits `timeout`, or less when the handle fires; returns whether it fired.
    pub(crate) fn wait(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut fired = lock(&self.inner.0);
        while !*fired {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            fired = match self.inner.1.wait_timeout(fired, left) {
                Ok((g, _)) => g,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_ends_when_fired_or_timed_out() {
        let c = CancelHandle::new();
        assert!(!c.wait(Duration::from_millis(1)));
        let other = c.clone();
        std::thread::scope(|s| {
            s.spawn(move || other.cancel());
            assert!(c.wait(Duration::from_secs(30)));
        });
        c.reset();
        assert!(!c.is_cancelled());
    }
}
