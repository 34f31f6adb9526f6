//! Writing an answer the stalled way ([`Stall`]), the writer of a shared stream (stdio,
//! WebSocket), and waiting with a deadline on a condition.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::{Shared, Stall};

/// The longest a peer holds a stall: the cell has failed long before, and the peer then lets go.
pub const HOLD: Duration = Duration::from_secs(30);

/// The gap between two bytes of a trickle.
pub const TRICKLE_GAP: Duration = Duration::from_millis(100);

/// An answer as bytes: a head (HTTP status line and headers; empty elsewhere) and a body, sent
/// as HTTP chunks when `chunked`.
pub struct Bytes {
    pub head: Vec<u8>,
    pub body: Vec<u8>,
    pub chunked: bool,
}

impl Bytes {
    pub fn plain(body: Vec<u8>) -> Bytes {
        Bytes {
            head: Vec::new(),
            body,
            chunked: false,
        }
    }

    fn body(&self, w: &mut impl Write, part: &[u8]) -> io::Result<()> {
        if part.is_empty() {
            return Ok(());
        }
        if self.chunked {
            write!(w, "{:x}\r\n", part.len())?;
            w.write_all(part)?;
            w.write_all(b"\r\n")?;
        } else {
            w.write_all(part)?;
        }
        w.flush()
    }
}

/// Waits at most `d` for `done` (checked about every 10 ms; a check may itself block that
/// long); whether it came true.
pub fn wait(d: Duration, done: &mut dyn FnMut() -> bool) -> bool {
    let until = Instant::now() + d;
    loop {
        let before = Instant::now();
        if done() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        // A check that did not block itself is not repeated at once.
        if before.elapsed() < Duration::from_millis(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Whether the client has closed `stream` (read with a 10 ms timeout; data is discarded) or
/// the peer is stopping.
pub fn client_gone(stream: &mut TcpStream, shared: &Shared) -> bool {
    if shared.stopping() {
        return true;
    }
    let _ = stream.set_read_timeout(Some(Duration::from_millis(10)));
    let mut buf = [0u8; 512];
    match stream.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
        ),
    }
}

/// Writes `a` stalled by `stall`, then holds until `ended` (the client gave up, or the peer
/// stops) or, on a shared stream, `released`; a released stream gets the rest of the answer
/// at once and goes on. Whether the stream goes on.
pub fn stalled(
    w: &mut impl Write,
    a: &Bytes,
    stall: Stall,
    ended: &mut dyn FnMut() -> bool,
    released: &dyn Fn() -> bool,
) -> bool {
    let mut sent = 0;
    let mut head_sent = false;
    let result = (|| -> io::Result<()> {
        match stall {
            Stall::Silent => {}
            Stall::Head => {
                w.write_all(&a.head)?;
                head_sent = true;
            }
            Stall::Half => {
                w.write_all(&a.head)?;
                head_sent = true;
                sent = a.body.len() / 2;
                a.body(w, &a.body[..sent])?;
            }
            Stall::Trickle => {
                w.write_all(&a.head)?;
                head_sent = true;
                while sent < a.body.len() {
                    a.body(w, &a.body[sent..=sent])?;
                    sent += 1;
                    if wait(TRICKLE_GAP, &mut || ended() || released()) {
                        break;
                    }
                }
            }
        }
        w.flush()
    })();
    if result.is_err() {
        return false;
    }
    wait(HOLD, &mut || ended() || released());
    if ended() || !released() {
        return false;
    }
    let rest = (|| -> io::Result<()> {
        if !head_sent {
            w.write_all(&a.head)?;
        }
        a.body(w, &a.body[sent..])?;
        w.flush()
    })();
    rest.is_ok()
}

/// What the reader of a shared stream hands its writer: a message (a line, a frame) written
/// after a delay, or one written the stalled way.
pub enum Out {
    Now(Duration, Vec<u8>),
    Stall(Vec<u8>),
}

/// The writer thread of a shared stream: it writes what it is handed until the stream is
/// [`gone`](Writer::gone), the peer stops, or a write fails.
pub struct Writer {
    pub tx: Sender<Out>,
    pub gone: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Writer {
    /// Starts the writer, on a thread named `name`.
    pub fn start(shared: &Arc<Shared>, name: String, w: TcpStream) -> Writer {
        let gone = Arc::new(AtomicBool::new(false));
        let (tx, rx) = crossbeam_channel::unbounded();
        let thread = {
            let (shared, gone) = (shared.clone(), gone.clone());
            std::thread::Builder::new()
                .name(name)
                .spawn(move || write_loop(&shared, &gone, w, &rx))
                .expect("spawn")
        };
        Writer { tx, gone, thread }
    }

    /// Lets the writer end once it has written what it was handed, and joins it.
    pub fn finish(self) {
        drop(self.tx);
        let _ = self.thread.join();
    }
}

fn write_loop(shared: &Shared, gone: &AtomicBool, mut w: TcpStream, rx: &Receiver<Out>) {
    let ended = || gone.load(Ordering::SeqCst) || shared.stopping();
    loop {
        let out = match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(out) => out,
            Err(RecvTimeoutError::Timeout) if !ended() => continue,
            Err(_) => return,
        };
        let goes_on = match out {
            Out::Now(d, bytes) => {
                std::thread::sleep(d);
                w.write_all(&bytes).and_then(|()| w.flush()).is_ok()
            }
            // A plain answer has no head: a head stall writes nothing, as a silent one.
            Out::Stall(bytes) => stalled(
                &mut w,
                &Bytes::plain(bytes),
                shared.plan.stall,
                &mut || ended(),
                &|| shared.released(),
            ),
        };
        if !goes_on {
            return;
        }
    }
}
