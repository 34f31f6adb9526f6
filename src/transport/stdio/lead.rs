//! Who reads a child's stdout, and when that changes hands: the scheduling of the stdio
//! transport. The protocol core knows ids, pending requests and routing only; this file decides
//! which thread reads.
//!
//! ```text
//!   a caller waiting for its answer (wait):
//!     nobody reads ──> it leads: stops the poller watching stdout, reads and routes everything
//!                      until its own answer is in (other callers' answers reach them on the way)
//!     somebody leads ──> it follows: enlisted, it waits on its slot
//!   the leader leaves ──> wakes the longest-waiting follower (Event::Wake), who leads next;
//!                         with no follower, a caller that has written its request and not yet
//!                         come to wait leads next (it is not asleep: nothing to wake);
//!                         with neither, the poller thread watches stdout again
//!   a woken follower that leaves without leading passes the wake on (stop_waiting, run when
//!   the caller, enlisted, is dropped)
//!   a read's answers are all routed before their callers are woken (HeldWakes)
//!   a new connection: nobody watches stdout until its first request (the handshake) claims
//!   it; the first hand-over registers it with the poller
//!   close: the closing thread leads (lead_to_close) until the child has exited, so its exit
//!   wakes only that thread (see process.rs)
//! ```
//!
//! A busy connection is thus read by its callers, one at a time, and never goes through the
//! poller thread; an idle one is watched by the poller (server requests, notifications, exit).

use std::os::fd::AsFd;
use std::time::Instant;

use crossbeam_channel::{RecvTimeoutError, TryRecvError};
use polling::{Event as PollEvent, PollMode, Poller};

use super::pipes::{Conn, ReadSide, ReadStatus};
use super::poller::{add, key, STDOUT};
use crate::protocol::session::Event;
use crate::protocol::slot::{HeldWakes, SlotTx};
use crate::sync::lock;
use crate::transport::{Caller, Leaving};

/// The reading role of one connection.
#[derive(Default)]
pub(crate) struct Lead {
    /// A calling thread is reading stdout.
    active: bool,
    /// The caller handed stdout to lead next (a woken follower, or an arriving caller), which
    /// has not done so yet. While a leader reads or a hand-off is pending, the poller thread
    /// does not watch stdout.
    woken: Option<i64>,
    /// Callers waiting while another leads, longest-waiting first.
    followers: Vec<(i64, SlotTx)>,
    /// Callers whose request is being written or was written (`claim_for`) and who have not yet
    /// come to wait (`lead`) or left (`stop_waiting`, `unclaim`): each comes to one of those next,
    /// so one of them can be handed stdout without a wake. A writer that has to wait for the
    /// server to read its stdin leaves first (`unclaim`): the server may be waiting for its
    /// stdout to be read.
    arriving: Vec<i64>,
    /// stdout is registered with the poller. A new connection's is not: its first request (the
    /// handshake) claims stdout before anybody watches it, and the first hand-over registers it.
    in_poller: bool,
    /// The poller thread watches stdout (registered, with read interest).
    armed: bool,
}

impl Lead {
    /// Wakes the longest-waiting follower still waiting for its answer to lead next; `false`
    /// when there is none.
    fn wake_next(&mut self) -> bool {
        while !self.followers.is_empty() {
            let (id, tx) = self.followers.remove(0);
            // A follower whose answer (or progress) was just routed to it is about to return
            // anyway; it leaves the list. At most one wake is outstanding per caller (it left
            // the list), so a slot has room; a caller that has gone (slot closed) is skipped.
            if tx.is_empty() && tx.try_send(Event::Wake).is_ok() {
                self.woken = Some(id);
                return true;
            }
        }
        self.woken = None;
        false
    }

    /// Hands stdout to the caller that wrote its request last and has not come to wait yet
    /// (it leads when it does, or passes it on when it leaves); `false` when there is none.
    fn pass_to_arriving(&mut self) -> bool {
        self.woken = self.arriving.last().copied();
        self.woken.is_some()
    }

    /// `id` came to wait or left: it is no longer arriving.
    fn arrived(&mut self, id: i64) {
        if let Some(i) = self.arriving.iter().rposition(|a| *a == id) {
            self.arriving.swap_remove(i);
        }
    }
}

/// The longest one wait of a caller reading stdout lasts before it looks at its slot again,
/// when it has no waker.
const LEAD_SLICE: std::time::Duration = std::time::Duration::from_millis(50);

impl Conn {
    /// Waits until `deadline` for the next event of `caller`'s request, reading stdout itself
    /// when nobody else does. A caller that follows, or leaves without having led, is enlisted
    /// with `by`, which calls [`stop_waiting`](Self::stop_waiting) when the caller is dropped.
    pub(super) fn wait<'a>(
        &self,
        poller: &Poller,
        caller: &Caller<'a>,
        by: &'a dyn Leaving,
        deadline: Instant,
    ) -> Result<Event, RecvTimeoutError> {
        // A caller leaving without having led may hold stdout claimed for it (`claim_for`):
        // enlisted, it gives it back in `stop_waiting`.
        let mut led = false;
        let leaving = |led: bool| {
            if !led {
                caller.enlist(by);
            }
        };
        loop {
            match caller.rx.try_recv() {
                Ok(Event::Wake) => {}
                Ok(ev) => {
                    leaving(led);
                    return Ok(ev);
                }
                Err(TryRecvError::Disconnected) => {
                    leaving(led);
                    return Err(RecvTimeoutError::Disconnected);
                }
                Err(TryRecvError::Empty) => {
                    if Instant::now() >= deadline {
                        leaving(led);
                        return Err(RecvTimeoutError::Timeout);
                    }
                    if self.lead(poller, caller, by, deadline) {
                        led = true;
                    } else {
                        match caller.rx.recv_deadline(deadline) {
                            Ok(Event::Wake) => {}
                            other => return other,
                        }
                    }
                }
            }
        }
    }

    /// Before request `id` is written: when nobody reads stdout, the poller thread stops
    /// watching it now, as a hand-off to the caller of `id` (who leads next, see `wait`), so that
    /// an answer arriving before the caller waits does not wake the poller thread. Nothing is
    /// done when another thread reads or a hand-off is pending. The caller gives it back in
    /// `stop_waiting` if it leaves without leading; `unclaim` when the write fails.
    pub(super) fn claim_for(&self, poller: &Poller, id: i64) {
        let Ok(r) = self.reader.try_lock() else {
            lock(&self.lead).arriving.push(id);
            return;
        };
        let mut l = lock(&self.lead);
        l.arriving.push(id);
        if l.active || l.woken.is_some() {
            return;
        }
        let Some(stdout) = r.stdout.as_ref() else {
            return;
        };
        if l.armed {
            if poller
                .modify_with_mode(
                    stdout,
                    PollEvent::none(key(self.id, STDOUT)),
                    PollMode::Level,
                )
                .is_err()
            {
                return;
            }
            l.armed = false;
        }
        l.woken = Some(id);
    }

    /// Before a message that is not a request is written: stdout is watched by somebody (a new
    /// connection's is watched by nobody until its first request claims it).
    pub(super) fn watch_if_unclaimed(&self, poller: &Poller) {
        let Ok(r) = self.reader.try_lock() else {
            // Somebody reads it.
            return;
        };
        let mut l = lock(&self.lead);
        if !l.active && l.woken.is_none() && !l.armed {
            self.hand_over(&mut l, &r, poller);
        }
    }

    /// Request `id` was not written, or its writer has to wait for the server to read: it is no
    /// longer arriving, and stdout claimed for it (`claim_for`) or handed to it and not taken
    /// since goes to another caller or back to the poller thread.
    pub(super) fn unclaim(&self, poller: &Poller, id: i64) {
        {
            let mut l = lock(&self.lead);
            l.arrived(id);
            // Not claimed (another thread reads, or a closing thread holds stdout): nothing to
            // give back, and no reader lock to wait for.
            if l.woken != Some(id) {
                return;
            }
        }
        let r = lock(&self.reader);
        let mut l = lock(&self.lead);
        if !l.active && l.woken == Some(id) {
            self.hand_over(&mut l, &r, poller);
        }
    }

    /// Reads stdout until `caller`'s slot has an event or `deadline` passes; returns `false`
    /// (having enlisted the caller as a follower, with `by`) when another thread leads.
    fn lead<'a>(
        &self,
        poller: &Poller,
        caller: &Caller<'a>,
        by: &'a dyn Leaving,
        deadline: Instant,
    ) -> bool {
        let disarm = {
            let mut l = lock(&self.lead);
            l.arrived(caller.id);
            if l.active {
                if !l.followers.iter().any(|(id, _)| *id == caller.id) {
                    l.followers.push((caller.id, caller.tx.clone()));
                }
                caller.enlist(by);
                return false;
            }
            l.active = true;
            if caller.is_enlisted() {
                l.followers.retain(|(id, _)| *id != caller.id);
            }
            // Whoever was woken (a hand-off was pending), the poller is not watching stdout.
            l.woken = None;
            std::mem::take(&mut l.armed)
        };
        let mut r = lock(&self.reader);
        let Some(stdout) = r.stdout.as_ref() else {
            lock(&self.lead).active = false;
            return false;
        };
        if disarm {
            let _ = poller.modify_with_mode(
                stdout,
                PollEvent::none(key(self.id, STDOUT)),
                PollMode::Level,
            );
        }
        let waker = self.waker.get_or_init(super::pipes::Waker::new).as_ref();
        let mut ended = false;
        // Every answer of a read is routed before any of their callers is woken.
        let held = HeldWakes::hold();
        while caller.rx.is_empty() {
            // Wait first: the answer is rarely there already, and when it is, poll says so at
            // once. This saves a read that would only report an empty pipe.
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            let Some(stdout) = r.stdout.as_ref() else {
                break;
            };
            // A request given up by another thread (its slot filled, see
            // `Connection::abandon`) wakes this wait through the waker; without one (out of
            // descriptors) the wait looks at the slot in slices.
            let left = deadline - now;
            let wait = match waker {
                Some(_) => rustix::event::Timespec::try_from(left).ok(),
                None => rustix::event::Timespec::try_from(left.min(LEAD_SLICE)).ok(),
            };
            let wake_fd = waker.map_or(stdout.as_fd(), super::pipes::Waker::read_end);
            let mut fds = [
                rustix::event::PollFd::new(stdout, rustix::event::PollFlags::IN),
                rustix::event::PollFd::new(&wake_fd, rustix::event::PollFlags::IN),
            ];
            let watched = if waker.is_some() { 2 } else { 1 };
            match rustix::event::poll(&mut fds[..watched], wait.as_ref()) {
                Ok(0) => continue,
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => break,
            }
            if let Some(w) = waker {
                if !fds[1].revents().is_empty() {
                    w.drain();
                }
                if fds[0].revents().is_empty() {
                    // Only the waker: look at the slot again.
                    continue;
                }
            }
            match self.read_available(&mut r, poller) {
                ReadStatus::Ended | ReadStatus::Gone => {
                    ended = true;
                    break;
                }
                ReadStatus::Drained => held.release(),
            }
        }
        {
            let mut l = lock(&self.lead);
            l.active = false;
            if !ended {
                self.hand_over(&mut l, &r, poller);
            }
        }
        drop(r);
        drop(held);
        if ended {
            let mut chunk = vec![0u8; 16 * 1024];
            self.end_after_stdout(poller, &mut chunk);
        }
        true
    }

    /// Nobody leads: wakes the longest-waiting follower to lead next; with none, hands stdout to
    /// a caller who has written its request and not come to wait yet; with neither, has the
    /// poller thread watch stdout again (so an answer to a caller about to wait does not wake
    /// the poller thread first).
    fn hand_over(&self, l: &mut Lead, r: &ReadSide, poller: &Poller) {
        if l.wake_next() || l.pass_to_arriving() {
            return;
        }
        if let Some(stdout) = r.stdout.as_ref() {
            let interest = PollEvent::readable(key(self.id, STDOUT));
            let done = if l.in_poller {
                poller.modify_with_mode(stdout, interest, PollMode::Level)
            } else {
                add(poller, stdout, interest)
            };
            match done {
                Ok(()) => {
                    l.in_poller = true;
                    l.armed = true;
                }
                Err(e) => log::warn!(
                    "server `{}`: could not watch its stdout: {e}; it is read only while a \
                     caller waits",
                    self.framer.server
                ),
            }
        }
    }

    /// Stops the poller thread watching stdout and deletes it from the poller (the connection
    /// is closing); `false` when a caller reads it or is about to. `r` is held by the closing
    /// thread, which reads stdout itself from now on (the other callers follow meanwhile) and
    /// gives it up with [`stop_leading_to_close`](Self::stop_leading_to_close).
    pub(super) fn lead_to_close(&self, r: &ReadSide, poller: &Poller) -> bool {
        let mut l = lock(&self.lead);
        if l.active {
            return false;
        }
        l.active = true;
        l.woken = None;
        l.armed = false;
        if let Some(stdout) = r.stdout.as_ref() {
            if std::mem::take(&mut l.in_poller) {
                let _ = poller.delete(stdout);
            }
        }
        true
    }

    /// The closing thread is done reading: stdout (no longer in the poller) is closed, and a
    /// caller that followed meanwhile is woken to find it so.
    pub(super) fn stop_leading_to_close(&self, r: &mut ReadSide, poller: &Poller) {
        let mut l = lock(&self.lead);
        drop(r.stdout.take());
        l.active = false;
        self.hand_over(&mut l, r, poller);
    }

    /// Removes stdout from the poller (when it is there) and closes it.
    pub(super) fn drop_stdout(&self, r: &mut ReadSide, poller: &Poller) {
        let mut l = lock(&self.lead);
        if let Some(stdout) = r.stdout.take() {
            if std::mem::take(&mut l.in_poller) {
                let _ = poller.delete(&stdout);
            }
        }
        l.armed = false;
    }

    /// `caller`, enlisted in [`wait`](Self::wait), stops waiting: it leaves the followers, and a
    /// wake it has not acted on passes to another follower (or back to the poller thread).
    pub(super) fn stop_waiting(&self, poller: &Poller, caller: &Caller<'_>) {
        let handed_to_me = |l: &Lead| !l.active && l.woken == Some(caller.id);
        {
            // Only the lead lock: a leader holds the reader for as long as it reads.
            let mut l = lock(&self.lead);
            l.followers.retain(|(id, _)| *id != caller.id);
            l.arrived(caller.id);
            if !handed_to_me(&l) {
                return;
            }
        }
        // Woken and leaving without leading: nobody reads now, so the reader is free (the lock
        // order is reader, then lead).
        let r = lock(&self.reader);
        let mut l = lock(&self.lead);
        if handed_to_me(&l) {
            self.hand_over(&mut l, &r, poller);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::session::Failure;

    #[test]
    fn with_no_follower_the_caller_that_wrote_last_and_has_not_waited_leads_next() {
        let mut l = Lead {
            arriving: vec![3, 5],
            ..Lead::default()
        };
        assert!(!l.wake_next());
        assert!(l.pass_to_arriving());
        assert_eq!(l.woken, Some(5), "the last to write");
        l.arrived(5);
        assert_eq!(l.arriving, [3]);
        l.arrived(9);
        assert_eq!(
            l.arriving,
            [3],
            "an id that is not arriving changes nothing"
        );
        assert!(l.pass_to_arriving());
        assert_eq!(l.woken, Some(3));
        l.arrived(3);
        assert!(!l.pass_to_arriving());
        assert_eq!(l.woken, None);
    }

    /// Routes each response line to the slot of its id.
    #[derive(Default)]
    struct Route(std::sync::Mutex<Vec<(i64, SlotTx)>>);

    impl crate::transport::Sink for Route {
        fn deliver(&self, msg: crate::protocol::jsonrpc::Inbound) {
            use crate::protocol::jsonrpc::{InResponse, Inbound, RequestId};
            let Inbound::Response(InResponse {
                id: Some(RequestId::Number(id)),
                outcome: Ok(payload),
            }) = msg
            else {
                panic!("not an answer");
            };
            let slots = lock(&self.0);
            let (_, tx) = slots.iter().find(|(i, _)| *i == id).expect("a slot");
            tx.try_send(Event::Done(Ok(payload))).unwrap();
        }
        fn closed(&self, _detail: String, _stderr_tail: String) {}
    }

    /// Lets a caller of `Conn` go as the stdio transport does.
    struct Leave<'a>(&'a Conn, &'a Poller);

    impl Leaving for Leave<'_> {
        fn leave(&self, caller: &Caller<'_>) {
            self.0.stop_waiting(self.1, caller);
        }
    }

    /// Callers on real pipes, one after the other on this thread: a leader leaving hands stdout
    /// to a caller who has written and not yet waited, without the poller; a writer that has to
    /// wait for the server to read gives stdout up first; a caller handed stdout that leaves
    /// without leading gives it to the poller.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_leaving_leader_hands_stdout_to_an_arriving_caller_then_to_the_poller() {
        use std::io::Write;
        use std::sync::Arc;
        use std::time::Duration;

        use super::super::stdin::WriteOutcome;
        use crate::protocol::slot::slot;
        let route = Arc::new(Route::default());
        let c = Conn::new(
            0,
            Arc::from("t"),
            Arc::clone(&route) as Arc<dyn crate::transport::Sink>,
            &crate::config::Limits {
                max_queued_write_bytes: 1024,
                ..crate::config::Limits::default()
            },
            Box::new(String::new),
            crate::transport::StderrTail::default(),
        );
        let (read_end, write_end) = rustix::pipe::pipe().unwrap();
        rustix::io::ioctl_fionbio(&read_end, true).unwrap();
        let mut server = std::fs::File::from(write_end);
        lock(&c.reader).stdout = Some(std::process::ChildStdout::from(read_end));
        let poller = Poller::new().unwrap();
        let leave = Leave(&c, &poller);
        let answer = |server: &mut std::fs::File, id: i64| {
            writeln!(server, r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#).unwrap();
        };
        let soon = || Instant::now() + Duration::from_secs(10);
        let callers: Vec<_> = (1..=4).map(|_| slot(2)).collect();
        for (id, (tx, _)) in (1..).zip(&callers) {
            lock(&route.0).push((id, tx.clone()));
        }
        let caller = |id: i64| {
            let (tx, rx) = &callers[id as usize - 1];
            Caller::new(id, rx, tx)
        };
        let state = || {
            let l = lock(&c.lead);
            (l.active, l.woken, l.armed, l.arriving.clone())
        };

        // 1 and 2 write their requests; nobody reads yet, so 1 (the first) is handed stdout.
        c.claim_for(&poller, 1);
        c.claim_for(&poller, 2);
        assert_eq!(state(), (false, Some(1), false, vec![1, 2]));
        answer(&mut server, 1);
        let one = caller(1);
        assert!(matches!(
            c.wait(&poller, &one, &leave, soon()),
            Ok(Event::Done(Ok(_)))
        ));
        drop(one);
        // 1 read its answer and left: 2 leads next, the poller is not asked to watch.
        assert_eq!(state(), (false, Some(2), false, vec![2]));
        answer(&mut server, 2);
        let two = caller(2);
        assert!(matches!(
            c.wait(&poller, &two, &leave, soon()),
            Ok(Event::Done(Ok(_)))
        ));
        drop(two);
        assert_eq!(state(), (false, None, true, vec![]), "the poller watches");

        // 3 claims stdout from the poller, 4 writes too. 3's write has to wait for the server
        // to read its stdin (full, and more queued than the cap): 3 gives stdout to 4 first.
        let (stdin_read, stdin_write) = rustix::pipe::pipe().unwrap();
        rustix::io::ioctl_fionbio(&stdin_write, true).unwrap();
        c.attach_stdin(std::process::ChildStdin::from(stdin_write));
        c.claim_for(&poller, 3);
        c.claim_for(&poller, 4);
        assert_eq!(state(), (false, Some(3), false, vec![3, 4]));
        let fill = vec![b' '; 4 << 20];
        assert!(matches!(
            c.write(&poller, fill, None, None),
            WriteOutcome::Written
        ));
        assert!(matches!(
            c.write(&poller, b"{}".to_vec(), Some(Instant::now()), Some(3)),
            WriteOutcome::TimedOut { .. }
        ));
        assert_eq!(state(), (false, Some(4), false, vec![4]));
        // 4 leaves at its deadline without leading: the poller watches again.
        let four = caller(4);
        assert!(matches!(
            c.wait(&poller, &four, &leave, Instant::now()),
            Err(RecvTimeoutError::Timeout)
        ));
        drop(four);
        assert_eq!(state(), (false, None, true, vec![]));
        drop(stdin_read);
    }

    #[test]
    fn a_leaving_leader_wakes_one_follower_once_and_its_answer_still_fits() {
        use crate::protocol::slot::slot;
        let (ta, ra) = slot(2);
        let (tb, rb) = slot(2);
        let (tc, rc) = slot(2);
        drop(rc);
        let (td, _rd) = slot(2);
        td.try_send(Event::Done(Err(Failure::Unusable("answered".into()))))
            .unwrap();
        let mut l = Lead {
            active: false,
            woken: None,
            followers: vec![(3, tc), (4, td), (1, ta.clone()), (2, tb)],
            ..Lead::default()
        };
        assert!(l.wake_next());
        assert_eq!(
            l.woken,
            Some(1),
            "a caller that has gone, or has its answer, is skipped"
        );
        assert!(matches!(ra.try_recv(), Ok(Event::Wake)));
        assert!(rb.is_empty(), "only one is woken");
        // The answer still fits behind an outstanding wake.
        ta.try_send(Event::Wake).unwrap();
        assert!(ta
            .try_send(Event::Done(Err(Failure::Unusable("x".into()))))
            .is_ok());
        assert!(l.wake_next());
        assert_eq!(l.woken, Some(2), "then the next longest-waiting one");
        assert!(matches!(rb.try_recv(), Ok(Event::Wake)));
        assert!(!l.wake_next(), "nobody else is waiting");
        assert_eq!(l.woken, None);
    }
}
