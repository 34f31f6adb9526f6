//! Where one caller waits for the events of its request: a small bounded queue and the waiting
//! thread, parked and unparked directly.
//!
//! A channel would do, but a channel's blocking receive spins and yields before it sleeps: with
//! several callers sharing one core that is a `sched_yield` or more per call, and a wake-up
//! costs a lock and a futex call besides. Here a sender takes one lock, pushes and unparks the
//! waiter (a futex call only when it sleeps); the waiter takes one lock per look.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Thread;
use std::time::Instant;

pub(crate) use crossbeam_channel::{RecvTimeoutError, TryRecvError};

use super::session::Event;
use crate::sync::lock;

struct Inner {
    state: Mutex<State>,
    /// The queue's length, readable without the lock.
    len: AtomicUsize,
    cap: usize,
}

impl Drop for SlotRx {
    fn drop(&mut self) {
        lock(&self.0.state).gone = true;
    }
}

struct State {
    queue: VecDeque<Event>,
    /// The thread waiting in `recv_deadline`, to unpark.
    waiter: Option<Thread>,
    /// The receiver is gone: nothing more is taken.
    gone: bool,
}

thread_local! {
    /// Wakes held back on this thread (see [`HeldWakes`]): whether they are, and whom to wake.
    static HELD: std::cell::RefCell<(bool, Vec<Thread>)> =
        const { std::cell::RefCell::new((false, Vec::new())) };
}

fn wake(t: Thread) {
    let held = HELD.with(|h| {
        let mut h = h.borrow_mut();
        if h.0 {
            h.1.push(t.clone());
        }
        h.0
    });
    if !held {
        t.unpark();
    }
}

/// While one lives, the waiters this thread hands events to are woken only when it is dropped
/// (or [`release`](Self::release)d): a thread routing a whole read of answers wakes their
/// callers after routing all of them, rather than being interrupted by each one on a busy core.
pub(crate) struct HeldWakes(());

impl HeldWakes {
    /// Holds this thread's wakes back.
    pub(crate) fn hold() -> HeldWakes {
        HELD.with(|h| h.borrow_mut().0 = true);
        HeldWakes(())
    }

    /// Wakes everybody held back so far (and keeps holding).
    pub(crate) fn release(&self) {
        let mut woken = HELD.with(|h| std::mem::take(&mut h.borrow_mut().1));
        for t in woken.drain(..) {
            t.unpark();
        }
        // The list's memory is kept for the next round.
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            if h.1.capacity() < woken.capacity() {
                h.1 = woken;
            }
        });
    }
}

impl Drop for HeldWakes {
    fn drop(&mut self) {
        self.release();
        HELD.with(|h| h.borrow_mut().0 = false);
    }
}

/// The sending end of a slot (the session routes to it; a transport may wake its caller).
#[derive(Clone)]
pub(crate) struct SlotTx(Arc<Inner>);

/// The receiving end of a slot: its caller's.
pub(crate) struct SlotRx(Arc<Inner>);

/// The slot was full, or its caller gone (the event is dropped).
#[derive(Debug)]
pub(crate) struct Refused;

/// A slot holding at most `cap` events.
pub(crate) fn slot(cap: usize) -> (SlotTx, SlotRx) {
    let inner = Arc::new(Inner {
        state: Mutex::new(State {
            queue: VecDeque::with_capacity(cap.min(2)),
            waiter: None,
            gone: false,
        }),
        len: AtomicUsize::new(0),
        cap,
    });
    (SlotTx(Arc::clone(&inner)), SlotRx(inner))
}

impl SlotTx {
    /// Queues `ev` and wakes the waiter; `Err` when the slot is full or its caller gone.
    pub(crate) fn try_send(&self, ev: Event) -> Result<(), Refused> {
        let waiter = {
            let mut st = lock(&self.0.state);
            if st.queue.len() >= self.0.cap || st.gone {
                return Err(Refused);
            }
            st.queue.push_back(ev);
            self.0.len.store(st.queue.len(), Ordering::Release);
            st.waiter.take()
        };
        if let Some(t) = waiter {
            wake(t);
        }
        Ok(())
    }

    /// How many events wait to be received.
    pub(crate) fn len(&self) -> usize {
        self.0.len.load(Ordering::Acquire)
    }

    /// Whether no event waits.
    #[cfg_attr(
        windows,
        allow(
            dead_code,
            reason = "the Unix stdio transport's leader/follower reading uses it"
        )
    )]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl SlotRx {
    /// The next event, if one is there.
    pub(crate) fn try_recv(&self) -> Result<Event, TryRecvError> {
        if self.is_empty() {
            return Err(TryRecvError::Empty);
        }
        let mut st = lock(&self.0.state);
        let ev = st.queue.pop_front();
        self.0.len.store(st.queue.len(), Ordering::Release);
        ev.ok_or(TryRecvError::Empty)
    }

    /// Waits until `deadline` for the next event (the thread sleeps; a sender wakes it).
    pub(crate) fn recv_deadline(&self, deadline: Instant) -> Result<Event, RecvTimeoutError> {
        loop {
            {
                let mut st = lock(&self.0.state);
                if let Some(ev) = st.queue.pop_front() {
                    self.0.len.store(st.queue.len(), Ordering::Release);
                    st.waiter = None;
                    return Ok(ev);
                }
                let now = Instant::now();
                if now >= deadline {
                    st.waiter = None;
                    return Err(RecvTimeoutError::Timeout);
                }
                if st.waiter.is_none() {
                    st.waiter = Some(std::thread::current());
                }
            }
            // An unpark between the unlock and here is not lost: it makes this return at once.
            std::thread::park_timeout(deadline.saturating_duration_since(Instant::now()));
        }
    }

    /// Whether no event waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.len.load(Ordering::Acquire) == 0
    }

    /// Every event waiting now.
    pub(crate) fn try_iter(&self) -> impl Iterator<Item = Event> + '_ {
        std::iter::from_fn(move || self.try_recv().ok())
    }

    /// How many events wait to be received.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::session::Failure;
    use std::time::Duration;

    fn closed() -> Event {
        Event::Done(Err(Failure::Unusable("x".into())))
    }

    #[test]
    fn a_slot_holds_its_capacity_and_wakes_its_waiter() {
        let (tx, rx) = slot(2);
        tx.try_send(Event::Wake).unwrap();
        tx.try_send(closed()).unwrap();
        assert!(tx.try_send(Event::Wake).is_err(), "full");
        assert_eq!((tx.len(), rx.len()), (2, 2));
        assert!(matches!(rx.try_recv(), Ok(Event::Wake)));
        assert!(matches!(rx.try_iter().next(), Some(Event::Done(_))));
        assert!(rx.is_empty() && tx.is_empty());
        let (gone_tx, gone_rx) = slot(2);
        drop(gone_rx);
        assert!(gone_tx.try_send(Event::Wake).is_err(), "its caller is gone");
        let soon = Instant::now() + Duration::from_millis(20);
        assert!(matches!(
            rx.recv_deadline(soon),
            Err(RecvTimeoutError::Timeout)
        ));
        assert!(Instant::now() >= soon);
        let held = HeldWakes::hold();
        tx.try_send(closed()).unwrap();
        held.release();
        drop(held);
        assert!(matches!(rx.try_recv(), Ok(Event::Done(_))));
        std::thread::scope(|s| {
            s.spawn(|| {
                let _held = HeldWakes::hold();
                // No sleep to synchronise: whether the waiter parks first or not, it wakes.
                tx.try_send(closed()).unwrap();
            });
            let far = Instant::now() + Duration::from_secs(30);
            assert!(matches!(rx.recv_deadline(far), Ok(Event::Done(_))));
        });
    }
}
