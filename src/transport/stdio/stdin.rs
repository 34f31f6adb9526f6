//! A child's stdin: what callers write, coalesced, and what the poller finishes writing.
//!
//! ```text
//!   write(frame): nobody writing, nothing queued ──> this caller writes, without the lock,
//!                 its frame and every frame that joined meanwhile (one write for all)
//!                 somebody writing ──> the frame joins the next write (the outbox)
//!                 bytes queued (the pipe was full) ──> the frame joins the queue
//!   pipe full ──> the rest is queued; the poller writes it as the pipe drains (on_stdin)
//! ```
//!
//! The queue and outbox together hold at most `max_queued_write_bytes` (one frame is always
//! taken when both are empty); a writer that would go past it waits, up to its deadline, for the
//! server to read.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::process::ChildStdin;
use std::sync::Arc;
use std::time::Instant;

use polling::{Event, PollMode, Poller};

use super::pipes::Conn;
use super::poller::{add, key, STDIN};
pub(crate) use super::WriteOutcome;
use crate::sync::lock;

/// The writing side of one child.
#[derive(Default)]
pub(super) struct WriteSide {
    /// Shared with a caller writing without the lock; closing drops this handle, and the pipe
    /// closes when that caller is done.
    stdin: Option<Arc<ChildStdin>>,
    /// Bytes the pipe did not take, written by the poller thread as it drains.
    queue: VecDeque<u8>,
    /// Frames waiting for the caller writing now to take them along.
    outbox: Vec<u8>,
    /// A caller is writing (without the lock).
    writing: bool,
    /// The poller watches stdin for room.
    want_write: bool,
    /// stdin is registered with the poller: only once the pipe was first full.
    in_poller: bool,
    /// The pipe was enlarged (the first time it was full, see `write_growing`).
    grown: bool,
    /// Writers waiting for the queue to drain.
    waiting: usize,
}

impl WriteSide {
    fn held(&self) -> usize {
        self.queue.len() + self.outbox.len()
    }
}

impl Conn {
    /// Takes the child's stdin (registered with the poller only when it first fills up).
    pub(super) fn attach_stdin(&self, stdin: ChildStdin) {
        lock(&self.writer).stdin = Some(Arc::new(stdin));
    }

    /// Writes one frame (a newline is appended), coalesced with frames other callers write at
    /// the same moment; what the pipe does not take is queued for the poller. When queueing it
    /// would pass `max_queued_write_bytes`, waits (until `deadline`) for the child to read; the
    /// request `claimed` (see `claim_for`) then first gives up stdout, which the child may be
    /// waiting to have read.
    pub(super) fn write(
        &self,
        poller: &Poller,
        mut frame: Vec<u8>,
        deadline: Option<Instant>,
        mut claimed: Option<i64>,
    ) -> WriteOutcome {
        frame.push(b'\n');
        let mut w = lock(&self.writer);
        while w.held() > 0 && w.held().saturating_add(frame.len()) > self.max_queued_write {
            if let Some(id) = claimed.take() {
                // Not under the writer lock: handing stdout over takes the reader lock, and a
                // closing thread holds the reader while it closes stdin (process.rs).
                drop(w);
                self.unclaim(poller, id);
                w = lock(&self.writer);
                continue;
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return WriteOutcome::TimedOut {
                    queued: w.held(),
                    cap: self.max_queued_write,
                };
            }
            w.waiting += 1;
            w = match deadline {
                None => self.drained.wait(w).unwrap_or_else(|p| p.into_inner()),
                Some(d) => {
                    self.drained
                        .wait_timeout(w, d - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
            w.waiting -= 1;
        }
        let Some(pipe) = w.stdin.clone() else {
            return WriteOutcome::Closed;
        };
        w.outbox.extend_from_slice(&frame);
        self.write_outbox(poller, w, pipe)
    }

    fn write_outbox(
        &self,
        poller: &Poller,
        mut w: std::sync::MutexGuard<'_, WriteSide>,
        pipe: Arc<ChildStdin>,
    ) -> WriteOutcome {
        if w.writing {
            // The caller writing now takes the outbox along when its write returns.
            return WriteOutcome::Written;
        }
        if !w.queue.is_empty() {
            let joined = std::mem::take(&mut w.outbox);
            w.queue.extend(&joined);
            return WriteOutcome::Written;
        }
        w.writing = true;
        let mut grown = w.grown;
        let mut batch = std::mem::take(&mut w.outbox);
        drop(w);
        loop {
            let written = match write_growing(&pipe, &batch, &mut grown) {
                Ok(n) => n,
                Err(()) => {
                    let mut w = lock(&self.writer);
                    w.writing = false;
                    w.outbox.clear();
                    self.notify_waiters(&w);
                    return WriteOutcome::Closed;
                }
            };
            let mut w = lock(&self.writer);
            w.grown |= grown;
            if w.stdin.is_none() {
                // Closed meanwhile: what is left is dropped, as `close_stdin` drops the queue.
                w.writing = false;
                w.outbox.clear();
                self.notify_waiters(&w);
                return WriteOutcome::Written;
            }
            if written < batch.len() {
                // The pipe is full: the rest, then every frame that joined, wait for the poller.
                let rest = batch.split_off(written);
                w.queue.extend(&rest);
                let joined = std::mem::take(&mut w.outbox);
                w.queue.extend(&joined);
                w.writing = false;
                if !w.want_write {
                    let interest = Event::writable(key(self.id, STDIN));
                    let watched = if w.in_poller {
                        poller.modify_with_mode(&*pipe, interest, PollMode::Level)
                    } else {
                        add(poller, &*pipe, interest)
                    };
                    if watched.is_err() {
                        return WriteOutcome::Closed;
                    }
                    w.in_poller = true;
                    w.want_write = true;
                }
                return WriteOutcome::Written;
            }
            if w.outbox.is_empty() {
                w.writing = false;
                // The batch's buffer becomes the outbox again (its capacity is kept).
                batch.clear();
                std::mem::swap(&mut w.outbox, &mut batch);
                self.notify_waiters(&w);
                return WriteOutcome::Written;
            }
            // Frames joined while this one was written: they leave in one write.
            batch.clear();
            std::mem::swap(&mut batch, &mut w.outbox);
            self.notify_waiters(&w);
        }
    }

    fn notify_waiters(&self, w: &WriteSide) {
        if w.waiting > 0 {
            self.drained.notify_all();
        }
    }

    /// stdin has room: writes what is queued.
    pub(super) fn on_stdin(&self, poller: &Poller) {
        let mut w = lock(&self.writer);
        let Some(pipe) = w.stdin.clone() else { return };
        while !w.queue.is_empty() {
            let (front, _) = w.queue.as_slices();
            match (&*pipe).write(front) {
                Ok(0) => break,
                Ok(n) => {
                    w.queue.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    // The child closed its stdin (it is exiting); stdout's end reports it.
                    w.queue.clear();
                    break;
                }
            }
        }
        if w.queue.is_empty() && w.want_write {
            w.want_write = false;
            let _ =
                poller.modify_with_mode(&*pipe, Event::none(key(self.id, STDIN)), PollMode::Level);
        }
        self.notify_waiters(&w);
    }

    /// Closes the child's stdin (the polite "please exit"): deleted from the poller, queued
    /// bytes dropped. A caller writing at this moment finishes its write first.
    pub(super) fn close_stdin(&self, poller: &Poller) {
        let mut w = lock(&self.writer);
        if let Some(stdin) = w.stdin.take() {
            if std::mem::take(&mut w.in_poller) {
                let _ = poller.delete(&*stdin);
            }
        }
        w.queue.clear();
        w.outbox.clear();
        self.notify_waiters(&w);
    }
}

/// [`write_now`], and the first time the pipe is full (`grown` is false), enlarges it and
/// writes on.
fn write_growing(pipe: &ChildStdin, data: &[u8], grown: &mut bool) -> Result<usize, ()> {
    let written = write_now(pipe, data)?;
    if written == data.len() || *grown {
        return Ok(written);
    }
    *grown = true;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if rustix::pipe::fcntl_setpipe_size(pipe, super::pipes::PIPE_SIZE).is_ok() {
        return Ok(written + write_now(pipe, &data[written..])?);
    }
    Ok(written)
}

/// Writes as much of `data` as the pipe takes now; `Err` when the pipe is closed.
fn write_now(pipe: &ChildStdin, data: &[u8]) -> Result<usize, ()> {
    let mut written = 0;
    while written < data.len() {
        match (&*pipe).write(&data[written..]) {
            Ok(0) => break,
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(_) => return Err(()),
        }
    }
    Ok(written)
}
