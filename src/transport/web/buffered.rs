//! Reading only what has arrived: a connector layer that lets the thread reading a reply ask
//! "read on, but only what is there or on its way right now", so the end of an answered
//! event-stream reply can be read inline (returning its connection to the pool at once) when it
//! came with the answer or just after it, and is otherwise left to the reply-drain thread.
//!
//! ```text
//!   ureq connection: TCP ─> (TLS) ─> Buffered ─> pool
//!   Buffered::await_input: normally waits for the socket (passes through);
//!                          inside `only_buffered(..)` on this thread: waits a moment
//!                          (`ARRIVING`, at most a scheduler tick), then WouldBlock
//! ```
//!
//! The same layer spares a kept-alive request the system calls it does not need (12 per
//! request against a raw client's 2, measured with `bench_http --only json`; 5 with this layer):
//!
//! ```text
//!   transmit_output: a small write is held back and leaves with the next one (head + body:
//!                    one write, one packet); a read sends a held write first
//!   is_open:         the pool asks when a connection comes back (right after its reply) and
//!                    before reuse; only the second probe reaches the socket
//!   timeouts:        the socket timeout is set again only when the one asked for is above the
//!                    last one set or more than `SLACK` (2 ms) below it: never shorter than asked
//! ```
//!
//! It also bounds a thread's reads and writes by a deadline of the thread's own ([`within`]):
//! ureq fixes a request's time limit when the request is made, but a caller whose deadline
//! moves on with progress reads the same reply in several waits, each with its own deadline.
//!
//! ```text
//!   within(deadline, f): every read and write f makes on this thread waits at most until
//!                        `deadline` (the shorter of it and ureq's own limit), then fails with
//!                        ureq's timeout error; the reply is then abandoned (dropped unread)
//!   interruptible(i, f): another thread's `i.fire()` shuts down the socket f is reading or
//!                        writing now (the layer knows each connection's socket), fails f's
//!                        later reads and writes at once, and ends a wait of f's on
//!                        `interrupted()` (a delay before resuming a stream)
//! ```

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use ureq::unversioned::transport::{
    Buffers, ConnectionDetails, Connector, NextTimeout, ShutdownHandle, Transport,
};

use crate::sync::lock;

/// How long a read inside [`only_buffered`] waits for bytes on their way (the socket's timeout
/// has a resolution of a scheduler tick, so this is a few milliseconds at most).
const ARRIVING: std::time::Duration = std::time::Duration::from_micros(500);

thread_local! {
    /// Whether reads on this thread may use only what is buffered already.
    static ONLY_BUFFERED: Cell<bool> = const { Cell::new(false) };
    /// The deadline of this thread's reads and writes (see [`within`]).
    static WITHIN: Cell<Option<Instant>> = const { Cell::new(None) };
    /// What may stop this thread's reads and writes (see [`interruptible`]).
    static INTERRUPT: RefCell<Option<Arc<Interrupt>>> = const { RefCell::new(None) };
}

/// Runs `f` with every read and write it makes on this thread (connecting aside) bounded by
/// `deadline` as well as by the request's own limit: one that would wait past it fails with
/// ureq's timeout error (for a body being read: an I/O error of kind `Other` holding it, see
/// `errors::is_io_timeout`).
pub(crate) fn within<T>(deadline: Instant, f: impl FnOnce() -> T) -> T {
    struct Reset(Option<Instant>);
    impl Drop for Reset {
        fn drop(&mut self) {
            WITHIN.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(WITHIN.with(|c| c.replace(Some(deadline))));
    f()
}

/// The deadline [`within`] set on this thread, if any.
pub(crate) fn current_deadline() -> Option<Instant> {
    WITHIN.with(Cell::get)
}

/// `timeout` shortened to this thread's deadline (see [`within`]); the timeout error when that
/// has passed.
fn bounded(mut timeout: NextTimeout) -> Result<NextTimeout, ureq::Error> {
    use ureq::unversioned::transport::time::Duration;
    let Some(deadline) = current_deadline() else {
        return Ok(timeout);
    };
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(ureq::Error::Timeout(timeout.reason));
    }
    let left = Duration::from(left);
    if left < timeout.after {
        timeout.after = left;
    }
    Ok(timeout)
}

/// Runs `f` with reads on this thread limited to what has been received or arrives within a
/// moment: a read that would wait longer fails with [`io::ErrorKind::WouldBlock`] instead
/// (nothing is consumed; the reply can be read on later, anywhere).
pub(crate) fn only_buffered<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            ONLY_BUFFERED.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(ONLY_BUFFERED.with(|c| c.replace(true)));
    f()
}

/// Whether an error is the one [`only_buffered`] makes: the rest has not arrived yet.
pub(crate) fn is_not_yet(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

/// The connector layer: wraps the whole chain (`DefaultConnector`), so that it also learns the
/// socket each connection was made on (its shutdown handle, for [`Interrupt`]).
#[derive(Debug)]
pub(crate) struct BufferedConnector<C> {
    inner: C,
}

impl<C> BufferedConnector<C> {
    /// The layer over `inner`.
    pub(crate) fn new(inner: C) -> Self {
        BufferedConnector { inner }
    }
}

impl<C: Connector<()>> Connector<()> for BufferedConnector<C> {
    type Out = BufferedTransport<C::Out>;

    fn connect(
        &self,
        details: &ConnectionDetails,
        chained: Option<()>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        // The chain registers the socket it makes with the agent (for `Agent::shutdown`); the
        // handle is kept here too.
        let socket: Arc<Mutex<Option<Arc<Shut>>>> = Arc::default();
        let register = Arc::clone(&details.register_shutdown);
        let kept = Arc::clone(&socket);
        let ours = ConnectionDetails {
            uri: details.uri,
            addrs: details.addrs.clone(),
            config: details.config,
            request_level: details.request_level,
            resolver: details.resolver,
            now: details.now,
            timeout: details.timeout,
            current_time: Arc::clone(&details.current_time),
            run_connector: Arc::clone(&details.run_connector),
            register_shutdown: Arc::new(move |handle: Weak<dyn ShutdownHandle>| {
                // The agent (and an `Interrupt`) shut the socket through `Shut`, which also
                // tells the reads sliced on Windows (see `await_input`).
                let shut = Arc::new(Shut {
                    socket: handle,
                    done: AtomicBool::new(false),
                });
                let weak: Weak<dyn ShutdownHandle> = Arc::downgrade(&shut) as _;
                *lock(&kept) = Some(Arc::clone(&shut));
                register(weak)
            }),
        };
        let made = self.inner.connect(&ours, chained)?;
        let shut = lock(&socket).take();
        Ok(made.map(|t| BufferedTransport {
            socket: shut
                .as_ref()
                .map(|s| Arc::downgrade(s) as Weak<dyn ShutdownHandle>),
            shut,
            ..BufferedTransport::new(t)
        }))
    }
}

/// A connection's socket as the agent and an [`Interrupt`] shut it down: the socket is shut,
/// and `done` tells a read waiting in slices (Windows, see `BufferedTransport::await_input`)
/// to stop at the end of its slice.
struct Shut {
    socket: Weak<dyn ShutdownHandle>,
    done: AtomicBool,
}

impl ShutdownHandle for Shut {
    fn shutdown(&self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(s) = self.socket.upgrade() {
            s.shutdown();
        }
    }
}

/// How long one wait for input lasts on Windows before the read checks whether its socket was
/// shut down: there (and under Wine) shutting a socket down does not wake a read blocked on it
/// in another thread, which Linux does.
const SLICE: std::time::Duration = std::time::Duration::from_millis(100);

/// Lets another thread stop one thread's reads and writes on its connections (see
/// [`interruptible`]): the socket in use is shut down, any later read or write in the scope
/// fails at once, and a wait the scope makes between them on [`interrupted`] ends.
pub(crate) struct Interrupt {
    state: Mutex<InterruptState>,
    /// Disconnects when the interrupt fires (nothing is ever sent on it).
    fired: Receiver<()>,
}

struct InterruptState {
    /// Dropped when the interrupt fires: `None` once it has.
    armed: Option<Sender<()>>,
    /// The socket being read or written in the scope now.
    socket: Option<Weak<dyn ShutdownHandle>>,
}

impl Default for Interrupt {
    fn default() -> Self {
        let (armed, fired) = crossbeam_channel::bounded(0);
        Interrupt {
            state: Mutex::new(InterruptState {
                armed: Some(armed),
                socket: None,
            }),
            fired,
        }
    }
}

impl Interrupt {
    /// Stops the scope's reads and writes (and waits), now and from now on.
    pub(crate) fn fire(&self) {
        let socket = {
            let mut st = lock(&self.state);
            st.armed = None;
            st.socket.take()
        };
        if let Some(s) = socket.and_then(|w| w.upgrade()) {
            s.shutdown();
        }
    }

    /// Notes the socket about to be used; the error when the scope was interrupted.
    fn enter(&self, socket: Option<&Weak<dyn ShutdownHandle>>) -> Result<(), ureq::Error> {
        let mut st = lock(&self.state);
        if st.armed.is_none() {
            return Err(ureq::Error::Io(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the caller stopped waiting",
            )));
        }
        st.socket = socket.cloned();
        Ok(())
    }
}

/// Runs `f` with this thread's reads and writes stoppable by `interrupt` from another thread;
/// `None`: by nothing (not even an enclosing scope's interrupt), at no cost per read or write.
pub(crate) fn interruptible<T>(interrupt: Option<&Arc<Interrupt>>, f: impl FnOnce() -> T) -> T {
    struct Reset(Option<Arc<Interrupt>>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let previous = self.0.take();
            INTERRUPT.with(|c| *c.borrow_mut() = previous);
        }
    }
    let _reset = Reset(INTERRUPT.with(|c| c.replace(interrupt.cloned())));
    f()
}

/// What disconnects when this thread's [`Interrupt`] fires, for a wait between reads (a delay
/// before resuming a stream) to end on too; outside [`interruptible`], a channel that never
/// does.
pub(crate) fn interrupted() -> Receiver<()> {
    INTERRUPT.with(|c| {
        c.borrow()
            .as_ref()
            .map_or_else(crossbeam_channel::never, |i| i.fired.clone())
    })
}

/// Checks this thread's [`Interrupt`] (if any) before I/O on `socket`.
fn check_interrupt(socket: Option<&Weak<dyn ShutdownHandle>>) -> Result<(), ureq::Error> {
    INTERRUPT.with(|c| match &*c.borrow() {
        Some(i) => i.enter(socket),
        None => Ok(()),
    })
}

/// A connection that honours [`only_buffered`], and spares the system calls a kept-alive
/// request does not need (see [`BufferedTransport::is_open`], [`Sticky`] and
/// [`BufferedTransport::transmit_output`]).
pub(crate) struct BufferedTransport<T> {
    inner: T,
    /// The socket under it (to shut down on an [`Interrupt`]), when the chain made one.
    socket: Option<Weak<dyn ShutdownHandle>>,
    /// The same, kept alive for as long as the connection (the agent holds it weakly).
    shut: Option<Arc<Shut>>,
    /// Whether the last thing done on this connection was I/O (not a liveness probe).
    after_io: bool,
    /// A small write held back to leave with the next one (a request's head with its body).
    held: Vec<u8>,
    /// The timeout the held write was given.
    held_timeout: Option<NextTimeout>,
    read_timeout: Sticky,
    write_timeout: Sticky,
}

impl<T> BufferedTransport<T> {
    fn new(inner: T) -> Self {
        BufferedTransport {
            inner,
            socket: None,
            shut: None,
            after_io: true,
            held: Vec::new(),
            held_timeout: None,
            read_timeout: Sticky::default(),
            write_timeout: Sticky::default(),
        }
    }
}

/// The most a held-back write may be: a request head (and a small body after it).
const MAX_HELD: usize = 8 * 1024;

/// How much longer than asked a read or write may wait. The socket timeout under it is set by
/// a system call whenever its value changes, which with a deadline is every request; keeping
/// the last value while it is within this much above what is asked (never below it) sets it
/// once for a run of requests with the same timeout. Linux rounds socket timeouts to a
/// scheduler tick (1-10 ms) anyway.
const SLACK: std::time::Duration = std::time::Duration::from_millis(2);

/// The timeout last passed down for one direction, reused while close enough above the one
/// asked for.
#[derive(Default)]
struct Sticky(Option<std::time::Duration>);

impl Sticky {
    /// The timeout to pass down for `asked`: the last one when it is no shorter and at most
    /// [`SLACK`] longer, otherwise `asked` plus half the slack (remembered).
    fn adjust(&mut self, mut asked: NextTimeout) -> NextTimeout {
        use ureq::unversioned::transport::time::Duration;
        let Duration::Exact(want) = asked.after else {
            self.0 = None;
            return asked;
        };
        if want.is_zero() || asked.per_read.is_some() || asked.per_write.is_some() {
            self.0 = None;
            return asked;
        }
        let keep = self.0.filter(|last| *last >= want && *last - want <= SLACK);
        let chosen = keep.unwrap_or(want + SLACK / 2);
        self.0 = Some(chosen);
        asked.after = Duration::Exact(chosen);
        asked
    }

    /// Passes `asked` down unchanged (and remembers it as what the socket has now).
    fn exact(&mut self, asked: NextTimeout) -> NextTimeout {
        use ureq::unversioned::transport::time::Duration;
        self.0 = match asked.after {
            Duration::Exact(d) if asked.per_read.is_none() && asked.per_write.is_none() => Some(d),
            _ => None,
        };
        asked
    }
}

impl<T: Transport> fmt::Debug for BufferedTransport<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("BufferedTransport")
            .field(&self.inner)
            .finish()
    }
}

impl<T: Transport> BufferedTransport<T> {
    /// Sends the held-back write, if any.
    fn flush_held(&mut self) -> Result<(), ureq::Error> {
        let Some(timeout) = self.held_timeout.take() else {
            return Ok(());
        };
        let held = std::mem::take(&mut self.held);
        let mut sent = 0;
        while sent < held.len() {
            let out = self.inner.buffers().output();
            let n = out.len().min(held.len() - sent);
            out[..n].copy_from_slice(&held[sent..sent + n]);
            let timeout = self.write_timeout.adjust(bounded(timeout)?);
            self.inner.transmit_output(n, timeout)?;
            sent += n;
        }
        self.held = held;
        self.held.clear();
        Ok(())
    }
}

impl<T: Transport> BufferedTransport<T> {
    /// Waits for input as `inner.await_input(timeout)` does, in waits of at most [`SLICE`],
    /// stopping when the socket was shut down (the agent closing, an [`Interrupt`]) between two:
    /// where shutting a socket down does not wake a read blocked on it (Windows), a stream read
    /// with no time limit still ends when its client closes.
    #[cfg_attr(not(windows), allow(dead_code, reason = "Linux wakes the read itself"))]
    fn await_sliced(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        use ureq::unversioned::transport::time::Duration;
        let deadline = match timeout.after {
            Duration::Exact(d) => Some(crate::deadline::after(d)),
            Duration::NotHappening => None,
        };
        loop {
            if self
                .shut
                .as_ref()
                .is_some_and(|s| s.done.load(Ordering::SeqCst))
            {
                return Err(ureq::Error::Io(io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "the connection was shut down",
                )));
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left.is_some_and(|l| l.is_zero()) {
                return Err(ureq::Error::Timeout(timeout.reason));
            }
            let slice = left.map_or(SLICE, |l| l.min(SLICE));
            let last = left.is_some_and(|l| l <= SLICE);
            let wait = NextTimeout {
                after: Duration::Exact(slice),
                ..timeout
            };
            match self.inner.await_input(self.read_timeout.adjust(wait)) {
                Err(ureq::Error::Timeout(_)) if !last => continue,
                other => return other,
            }
        }
    }
}

impl<T: Transport> Transport for BufferedTransport<T> {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.inner.buffers()
    }

    /// A small write with nothing held is held back; the next write takes it along in one
    /// system call (one packet) when both fit in the output buffer, and a read sends it first.
    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.after_io = true;
        check_interrupt(self.socket.as_ref())?;
        let timeout = bounded(timeout)?;
        if self.held_timeout.is_none() && amount <= MAX_HELD {
            let data = &self.inner.buffers().output()[..amount];
            self.held.clear();
            self.held.extend_from_slice(data);
            self.held_timeout = Some(timeout);
            return Ok(());
        }
        let held = self.held.len();
        if self.held_timeout.is_some() && held + amount <= self.inner.buffers().output().len() {
            // The held bytes go in front of this write, in the same buffer.
            let out = self.inner.buffers().output();
            out.copy_within(..amount, held);
            out[..held].copy_from_slice(&self.held);
            self.held.clear();
            self.held_timeout = None;
            let timeout = self.write_timeout.adjust(timeout);
            return self.inner.transmit_output(held + amount, timeout);
        }
        if self.held_timeout.is_some() {
            // Too large to join: this write's bytes wait in a copy while the held ones go.
            let data = self.inner.buffers().output()[..amount].to_vec();
            self.flush_held()?;
            self.inner.buffers().output()[..amount].copy_from_slice(&data);
        }
        let timeout = self.write_timeout.adjust(timeout);
        self.inner.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.after_io = true;
        check_interrupt(self.socket.as_ref())?;
        self.flush_held()?;
        let timeout = bounded(timeout)?;
        if !ONLY_BUFFERED.with(Cell::get) {
            if cfg!(windows) {
                return self.await_sliced(timeout);
            }
            let timeout = self.read_timeout.adjust(timeout);
            return self.inner.await_input(timeout);
        }
        // What is on its way right now (the end of a stream written just after its last event)
        // is worth a moment; anything later is left for another thread to read.
        let moment = NextTimeout {
            after: ureq::unversioned::transport::time::Duration::from(ARRIVING),
            reason: timeout.reason,
            per_read: None,
            per_write: None,
        };
        let moment = if timeout.after < moment.after {
            timeout
        } else {
            moment
        };
        match self.inner.await_input(self.read_timeout.exact(moment)) {
            Err(ureq::Error::Timeout(_)) => Err(ureq::Error::Io(io::Error::new(
                io::ErrorKind::WouldBlock,
                "the rest of the reply has not arrived yet",
            ))),
            other => other,
        }
    }

    /// The pool asks twice per request: when the connection comes back (right after the reply
    /// was read) and before it is used again. Only the second probe is made: a connection that
    /// broke or received stray bytes meanwhile is still found out before it is used, and the
    /// first probe (three system calls on TCP) is spared.
    fn is_open(&mut self) -> bool {
        if std::mem::replace(&mut self.after_io, false) && self.held_timeout.is_none() {
            return true;
        }
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

#[cfg(test)]
mod tests {
    //! The layer over a recording connection: what reaches it, and when.

    use std::time::Duration;

    use ureq::unversioned::transport::time::Duration as UDuration;
    use ureq::unversioned::transport::LazyBuffers;

    use super::*;

    /// Records writes, reads and probes; reads find nothing.
    #[derive(Debug)]
    struct Recording {
        buffers: LazyBuffers,
        writes: Vec<Vec<u8>>,
        write_timeouts: Vec<UDuration>,
        read_timeouts: Vec<UDuration>,
        probes: usize,
    }

    impl Recording {
        fn new() -> Self {
            Recording {
                buffers: LazyBuffers::new(1024, 1024),
                writes: Vec::new(),
                write_timeouts: Vec::new(),
                read_timeouts: Vec::new(),
                probes: 0,
            }
        }
    }

    impl Transport for Recording {
        fn buffers(&mut self) -> &mut dyn Buffers {
            &mut self.buffers
        }
        fn transmit_output(&mut self, amount: usize, t: NextTimeout) -> Result<(), ureq::Error> {
            let data = self.buffers.output()[..amount].to_vec();
            self.writes.push(data);
            self.write_timeouts.push(t.after);
            Ok(())
        }
        fn await_input(&mut self, t: NextTimeout) -> Result<bool, ureq::Error> {
            self.read_timeouts.push(t.after);
            Ok(false)
        }
        fn is_open(&mut self) -> bool {
            self.probes += 1;
            true
        }
        fn is_tls(&self) -> bool {
            false
        }
    }

    /// Reads nothing: each wait lasts the time it is given, then times out.
    #[derive(Debug)]
    struct Silent {
        buffers: LazyBuffers,
        waits: usize,
    }

    impl Transport for Silent {
        fn buffers(&mut self) -> &mut dyn Buffers {
            &mut self.buffers
        }
        fn transmit_output(&mut self, _: usize, _: NextTimeout) -> Result<(), ureq::Error> {
            Ok(())
        }
        fn await_input(&mut self, t: NextTimeout) -> Result<bool, ureq::Error> {
            self.waits += 1;
            // The socket's own timeout, as a blocked read that nothing wakes would end.
            std::thread::sleep(*t.after);
            Err(ureq::Error::Timeout(t.reason))
        }
        fn is_open(&mut self) -> bool {
            true
        }
        fn is_tls(&self) -> bool {
            false
        }
    }

    /// A connection over `Silent` whose socket the returned handle shuts down.
    fn silent() -> (BufferedTransport<Silent>, Arc<Shut>) {
        let shut = Arc::new(Shut {
            socket: Weak::<Shut>::new(),
            done: AtomicBool::new(false),
        });
        let t = BufferedTransport {
            shut: Some(Arc::clone(&shut)),
            ..BufferedTransport::new(Silent {
                buffers: LazyBuffers::new(1024, 1024),
                waits: 0,
            })
        };
        (t, shut)
    }

    #[test]
    fn a_sliced_read_without_a_time_limit_ends_when_its_socket_is_shut_down() {
        let (mut t, shut) = silent();
        let shutter = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(250));
            shut.shutdown();
        });
        let started = Instant::now();
        let open = NextTimeout {
            after: UDuration::NotHappening,
            ..NextTimeout::default()
        };
        let err = t.await_sliced(open).unwrap_err();
        shutter.join().unwrap();
        assert!(
            matches!(&err, ureq::Error::Io(e) if e.kind() == io::ErrorKind::ConnectionAborted),
            "{err:?}"
        );
        // Within a slice of the shutdown, however long the read could have waited.
        assert!(
            started.elapsed() < Duration::from_millis(250) + SLICE * 3,
            "{:?}",
            started.elapsed()
        );
        assert!(t.inner.waits >= 2, "{}", t.inner.waits);
    }

    #[test]
    fn a_sliced_read_keeps_its_time_limit() {
        let (mut t, _shut) = silent();
        let started = Instant::now();
        let err = t.await_sliced(within(350)).unwrap_err();
        let took = started.elapsed();
        assert!(matches!(err, ureq::Error::Timeout(_)), "{err:?}");
        assert!(took >= Duration::from_millis(350), "{took:?}");
        assert!(
            took < Duration::from_millis(350) + Duration::from_secs(1),
            "{took:?}"
        );
        assert_eq!(t.inner.waits, 4, "three full slices and the rest");
    }

    fn within(ms: u64) -> NextTimeout {
        NextTimeout {
            after: UDuration::from(Duration::from_millis(ms)),
            ..NextTimeout::default()
        }
    }

    fn write(t: &mut BufferedTransport<Recording>, bytes: &[u8], ms: u64) {
        t.buffers().output()[..bytes.len()].copy_from_slice(bytes);
        t.transmit_output(bytes.len(), within(ms)).expect("write");
    }

    #[test]
    fn a_head_leaves_with_its_body_in_one_write() {
        let mut t = BufferedTransport::new(Recording::new());
        write(&mut t, b"HEAD\r\n\r\n", 1000);
        assert!(t.inner.writes.is_empty(), "the head is held back");
        write(&mut t, b"{body}", 1000);
        assert_eq!(t.inner.writes, [b"HEAD\r\n\r\n{body}".to_vec()]);
        // A request without a body: its head goes out when the reply is awaited.
        write(&mut t, b"GET\r\n\r\n", 1000);
        t.await_input(within(1000)).expect("read");
        assert_eq!(t.inner.writes.len(), 2);
        assert_eq!(t.inner.writes[1], b"GET\r\n\r\n");
    }

    #[test]
    fn a_write_too_large_to_join_goes_after_the_held_one() {
        let mut t = BufferedTransport::new(Recording::new());
        write(&mut t, b"HEAD", 1000);
        let big = vec![b'x'; 1022];
        write(&mut t, &big, 1000);
        assert_eq!(t.inner.writes, [b"HEAD".to_vec(), big]);
    }

    #[test]
    fn only_the_probe_before_reuse_reaches_the_connection() {
        let mut t = BufferedTransport::new(Recording::new());
        write(&mut t, b"HEAD", 1000);
        t.await_input(within(1000)).expect("read");
        // Back to the pool right after the reply: not probed; taken from the pool: probed.
        assert!(t.is_open());
        assert_eq!(t.inner.probes, 0);
        assert!(t.is_open());
        assert_eq!(t.inner.probes, 1);
        assert!(t.is_open());
        assert_eq!(t.inner.probes, 2);
    }

    // On Windows a read reaches the socket in slices of `SLICE` (`await_sliced`, tested on every
    // platform above): the timeouts passed down whole are the Unix path's.
    #[cfg(unix)]
    #[test]
    fn timeouts_are_never_shorter_than_asked_and_at_most_the_slack_longer() {
        let mut t = BufferedTransport::new(Recording::new());
        for ms in [10_000, 9_999, 10_000, 9_999, 5_000, 5_000, 7_000] {
            t.await_input(within(ms)).expect("read");
        }
        let asked = [10_000, 9_999, 10_000, 9_999, 5_000, 5_000, 7_000];
        let got: Vec<Duration> = t.inner.read_timeouts.iter().map(|d| **d).collect();
        for (a, g) in asked.iter().zip(&got) {
            let a = Duration::from_millis(*a);
            assert!(*g >= a && *g - a <= SLACK, "asked {a:?}, passed {g:?}");
        }
        // Within the slack the same value is passed down, so the socket is not set again.
        assert_eq!(got[0], got[1]);
        assert_eq!(got[1], got[2]);
        assert_eq!(got[4], got[5]);
        assert_ne!(got[3], got[4]);
        // No timeout and a zero one pass through unchanged.
        t.await_input(NextTimeout::default()).expect("read");
        assert!(t.inner.read_timeouts[7].is_not_happening());
        t.await_input(within(0)).expect("read");
        assert!(t.inner.read_timeouts[8].is_zero());
    }

    // The same on Windows, where the read's timeout reaches the socket in slices (see above).
    #[cfg(unix)]
    #[test]
    fn within_a_deadline_reads_and_writes_wait_no_longer_than_it() {
        let mut t = BufferedTransport::new(Recording::new());
        super::within(Instant::now() + Duration::from_millis(300), || {
            t.await_input(within(10_000)).expect("read");
        });
        let asked = *t.inner.read_timeouts[0];
        assert!(asked <= Duration::from_millis(300) + SLACK, "{asked:?}");
        // Past the deadline nothing reaches the connection: ureq's timeout error.
        let passed = Instant::now();
        super::within(passed, || {
            let read = t.await_input(within(10_000));
            assert!(matches!(read, Err(ureq::Error::Timeout(_))), "{read:?}");
            t.buffers().output()[..4].copy_from_slice(b"HEAD");
            let write = t.transmit_output(4, within(10_000));
            assert!(matches!(write, Err(ureq::Error::Timeout(_))), "{write:?}");
        });
        assert_eq!(t.inner.read_timeouts.len(), 1);
        assert!(t.inner.writes.is_empty());
        // Outside `within`, ureq's own timeout is the bound again.
        assert!(current_deadline().is_none());
        t.await_input(within(10_000)).expect("read");
        assert!(*t.inner.read_timeouts[1] >= Duration::from_secs(10));
    }
}
