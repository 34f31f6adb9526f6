//! A caller waiting for the answer to its request, as a transport sees it in
//! [`Transport::wait`](super::Transport::wait).
//!
//! A transport may give a waiting caller a role (stdio: a hand-off of stdout it has not taken
//! yet; Streamable HTTP: a reply kept for it to read). It [enlists](Caller::enlist) the caller
//! then, and the role passes on when the caller stops waiting, which is when it is dropped
//! (answered, failed, timed out, or unwinding): no transport method has to be called for it, and
//! a caller that was never enlisted costs nothing there.
//!
//! ```text
//!   Caller::new ──> wait, wait, ... ──> dropped
//!                     └─ enlist(by) ──────> by.leave(caller)  (once, at the drop)
//! ```

use std::cell::Cell;

use crate::protocol::slot::{SlotRx, SlotTx};

/// What a transport does when a caller it [enlisted](Caller::enlist) stops waiting.
pub(crate) trait Leaving {
    /// `caller` stops waiting: a role it was given in `wait` passes to another caller, or what
    /// was kept for it is let go.
    fn leave(&self, caller: &Caller<'_>);
}

/// A caller waiting for the answer to its request (see
/// [`Transport::wait`](super::Transport::wait)).
pub(crate) struct Caller<'a> {
    /// The request id.
    pub(crate) id: i64,
    /// Its slot: where the session routes its progress and answer.
    pub(crate) rx: &'a SlotRx,
    /// A sender to its slot, for [`Event::Wake`](crate::protocol::session::Event::Wake).
    #[cfg_attr(
        windows,
        allow(
            dead_code,
            reason = "the Unix stdio transport's leader/follower reading uses it"
        )
    )]
    pub(crate) tx: &'a SlotTx,
    /// Who to tell when the caller stops waiting (see [`enlist`](Self::enlist)).
    leaving: Cell<Option<&'a dyn Leaving>>,
}

impl<'a> Caller<'a> {
    /// The caller of request `id`, waiting on `rx`.
    pub(crate) fn new(id: i64, rx: &'a SlotRx, tx: &'a SlotTx) -> Self {
        Caller {
            id,
            rx,
            tx,
            leaving: Cell::new(None),
        }
    }

    /// The caller was given a role that `by` takes back (with [`Leaving::leave`]) when the
    /// caller stops waiting. Enlisting again changes nothing but who is told.
    pub(crate) fn enlist(&self, by: &'a dyn Leaving) {
        self.leaving.set(Some(by));
    }

    /// Whether a transport [enlisted](Self::enlist) the caller.
    #[cfg_attr(
        windows,
        allow(
            dead_code,
            reason = "the Unix stdio transport's leader/follower reading uses it"
        )
    )]
    pub(crate) fn is_enlisted(&self) -> bool {
        self.leaving.get().is_some()
    }
}

impl Drop for Caller<'_> {
    /// The caller stops waiting: whoever enlisted it takes its role back.
    fn drop(&mut self) {
        if let Some(by) = self.leaving.take() {
            by.leave(self);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::slot::slot;

    /// Records the ids of the callers that left.
    #[derive(Default)]
    struct Left(std::sync::Mutex<Vec<i64>>);

    impl Leaving for Left {
        fn leave(&self, caller: &Caller<'_>) {
            self.0.lock().unwrap().push(caller.id);
        }
    }

    #[test]
    fn an_enlisted_caller_is_let_go_once_when_it_stops_waiting_and_others_cost_nothing() {
        let left = Left::default();
        let (tx, rx) = slot(1);
        {
            let never = Caller::new(1, &rx, &tx);
            assert!(!never.is_enlisted());
        }
        {
            let enlisted = Caller::new(2, &rx, &tx);
            enlisted.enlist(&left);
            enlisted.enlist(&left);
            assert!(enlisted.is_enlisted());
        }
        assert_eq!(
            *left.0.lock().unwrap(),
            [2],
            "once, and only the enlisted one"
        );
    }

    #[test]
    fn a_caller_unwinding_out_of_its_wait_is_let_go_too() {
        let left = Left::default();
        let (tx, rx) = slot(1);
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let caller = Caller::new(3, &rx, &tx);
            caller.enlist(&left);
            panic!("a progress callback panicked");
        }));
        assert!(unwound.is_err());
        assert_eq!(*left.0.lock().unwrap(), [3]);
    }
}
