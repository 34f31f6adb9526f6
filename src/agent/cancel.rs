//! [`CancelHandle`]: stops a run from another thread.
//!
//! ```text
//!   cancel() ── flag set ── each registered hook runs once, on the cancelling thread:
//!       model request in flight ── its connection is shut down (the read fails at once)
//!       tool call in flight     ── notifications/cancelled, and the call stops waiting
//!   a hook registered after the handle fired runs at once, on the registering thread
//! ```

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::sync::lock;

/// What a registered hook does when the handle fires.
type Hook = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct State {
    fired: bool,
    /// The hooks of the operations in flight, by registration number.
    hooks: Vec<(u64, Hook)>,
    next: u64,
}

/// Cancels a run from another thread. Clone it freely; all clones share one flag.
///
/// A cancelled run stops at once: a model request in flight is interrupted by closing its
/// connection (a streamed answer stops mid-stream), a wait between retries ends, and each tool
/// call in flight is cancelled: its server is sent `notifications/cancelled` (a call running as
/// a task: `tasks/cancel`) and the call stops waiting for an answer. The run then returns
/// [`AgentError::Cancelled`](super::AgentError::Cancelled). Only a connection still being
/// opened (name resolution, TCP connect) is not cut short; it is bounded by the model's
/// timeout. The flag stays set until [`reset`](Self::reset).
///
/// ```
/// use mcp_blocking::agent::CancelHandle;
/// let cancel = CancelHandle::new();
/// let other = cancel.clone();
/// std::thread::scope(|s| { s.spawn(|| other.cancel()); });
/// assert!(cancel.is_cancelled());
/// ```
#[derive(Clone, Default)]
pub struct CancelHandle {
    inner: Arc<(Mutex<State>, Condvar)>,
}

impl std::fmt::Debug for CancelHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = lock(&self.inner.0);
        f.debug_struct("CancelHandle")
            .field("cancelled", &st.fired)
            .field("in_flight", &st.hooks.len())
            .finish()
    }
}

impl CancelHandle {
    /// A handle that has not fired.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fires: the run stops now (see the type's docs). The hooks of the operations in flight
    /// run on this thread before it returns.
    pub fn cancel(&self) {
        let hooks = {
            let mut st = lock(&self.inner.0);
            st.fired = true;
            std::mem::take(&mut st.hooks)
        };
        self.inner.1.notify_all();
        for (_, hook) in hooks {
            hook();
        }
    }

    /// Whether it has fired.
    pub fn is_cancelled(&self) -> bool {
        lock(&self.inner.0).fired
    }

    /// Clears the flag, so the next run can go ahead.
    pub fn reset(&self) {
        lock(&self.inner.0).fired = false;
    }

    /// Sleeps `timeout`, or less when `cancel` (if any) fires; returns whether it fired.
    pub(crate) fn pause(cancel: Option<&CancelHandle>, timeout: Duration) -> bool {
        match cancel {
            Some(c) => c.wait(timeout),
            None => {
                std::thread::sleep(timeout);
                false
            }
        }
    }

    /// Waits `timeout`, or less when the handle fires; returns whether it fired.
    pub(crate) fn wait(&self, timeout: Duration) -> bool {
        // A wait as long as the caller's policy says (a delay from a builder, unchecked):
        // `Instant + Duration` would panic past what an instant can hold.
        let deadline = crate::deadline::after(timeout);
        let mut st = lock(&self.inner.0);
        while !st.fired {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            st = match self.inner.1.wait_timeout(st, left) {
                Ok((g, _)) => g,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        true
    }

    /// Runs `hook` when the handle fires, unless the returned guard was dropped first; at once
    /// (on this thread) when it has fired already. An operation in flight registers how to stop
    /// itself, and drops the guard when it ends.
    pub(crate) fn on_cancel(&self, hook: impl FnOnce() + Send + 'static) -> OnCancel {
        let mut st = lock(&self.inner.0);
        if st.fired {
            drop(st);
            hook();
            return OnCancel {
                handle: None,
                id: 0,
            };
        }
        let id = st.next;
        st.next += 1;
        st.hooks.push((id, Box::new(hook)));
        OnCancel {
            handle: Some(self.clone()),
            id,
        }
    }
}

/// Unregisters a hook of [`CancelHandle::on_cancel`] when dropped.
pub(crate) struct OnCancel {
    handle: Option<CancelHandle>,
    id: u64,
}

impl Drop for OnCancel {
    fn drop(&mut self) {
        if let Some(h) = &self.handle {
            // Taken out under the lock, dropped after it: a hook's captures may hold anything.
            let removed = {
                let mut st = lock(&h.inner.0);
                st.hooks
                    .iter()
                    .position(|(id, _)| *id == self.id)
                    .map(|i| st.hooks.swap_remove(i))
            };
            drop(removed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

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
        // However long the wait asked for, a fired handle ends it at once.
        c.cancel();
        assert!(c.wait(Duration::MAX));
    }

    #[test]
    fn hooks_run_once_when_fired_and_never_after_their_guard_is_dropped() {
        let c = CancelHandle::new();
        let ran = Arc::new(AtomicUsize::new(0));
        let counted = || {
            let ran = Arc::clone(&ran);
            move || {
                ran.fetch_add(1, Ordering::SeqCst);
            }
        };
        let kept = c.on_cancel(counted());
        drop(c.on_cancel(counted()));
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        c.cancel();
        assert_eq!(
            ran.load(Ordering::SeqCst),
            1,
            "only the registered hook ran"
        );
        c.cancel();
        assert_eq!(ran.load(Ordering::SeqCst), 1, "a hook runs once");
        drop(kept);
        // Registered after firing: runs at once.
        let _late = c.on_cancel(counted());
        assert_eq!(ran.load(Ordering::SeqCst), 2);
        assert_eq!(lock(&c.inner.0).hooks.len(), 0);
    }
}
