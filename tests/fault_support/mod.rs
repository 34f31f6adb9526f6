//! The hostile peers of the fault matrix (`tests/fault_matrix.rs`): one per transport, each
//! driven by a [`Plan`]. A peer answers the handshake and the listings as a well-behaved MCP
//! server would, then stalls at the planned request in the planned way ([`Stall`]): no answer at
//! all, the status line and headers only, half of the body (event, frame, line), or the answer
//! one byte every 100 ms.
//!
//! | file | what |
//! |---|---|
//! | `brain.rs` | what a peer answers to each message, and where the plan stalls it |
//! | `wire.rs` | writing an answer the stalled way, and waiting with a deadline |
//! | `http.rs` | Streamable HTTP (JSON or event-stream replies) and legacy HTTP+SSE |
//! | `ws.rs` | WebSocket (the upgrade and the frames by hand) |
//! | `stdio.rs` | stdio, through the `fault_relay` example process |
//! | `in_process.rs` | `testing::TestServer`, in this process |
//! | `endpoint.rs` | plain HTTP: an authorization server, a model endpoint |
//!
//! What each stall is on each transport (`-`: no such stall there):
//!
//! | | silent | head | half | trickle |
//! |---|---|---|---|---|
//! | Streamable HTTP, JSON | no answer on the POST | status line and headers (`Content-Length` set) | half the body | the body, a byte at a time |
//! | Streamable HTTP, event stream | no answer on the POST | status line and headers (chunked) | half the event | the event, a byte (chunk) at a time |
//! | legacy HTTP+SSE | POST 202, nothing on the GET stream | the POST's status line and headers | half the event on the GET stream | the event, a byte at a time |
//! | WebSocket | no frame | the upgrade's head, unterminated (connect only) | half the frame | the frame, a byte at a time |
//! | stdio | no line | - | half the line | the line, a byte at a time |
//! | in process | the handler does not return | - | - | - |
//!
//! An HTTP request's own connection stays stalled until the client closes it. A shared stream
//! (stdio, WebSocket, the legacy GET stream) is released when the client shows it gave up or
//! moved on ([`Shared`]'s `released`): the rest of the answer is then written, late, and the
//! stream serves on, so a cell can check that the connection is usable afterwards.
//!
//! Every peer keeps count of the connections it accepted that the client has not closed yet,
//! and (stdio) of the relay processes that reported in, so a cell can check that the client
//! left nothing behind. Dropping a peer stops it, shuts every connection and joins every thread.
#![allow(dead_code)] // each part is used by some cells only

pub mod brain;
pub mod endpoint;
pub mod http;
pub mod in_process;
pub mod stdio;
pub mod wire;
pub mod ws;

use std::collections::HashMap;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How the peer stalls at the planned request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stall {
    /// Nothing at all is sent back.
    Silent,
    /// The status line and headers (HTTP; for WebSocket the upgrade's, unterminated), then nothing.
    Head,
    /// Half of the body, event, frame or line, then nothing.
    Half,
    /// The answer, one byte every 100 ms.
    Trickle,
}

/// What a peer does: which request stalls and how, and what it does before.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Speak the 2026-07-28 era (`server/discover`, `resultType`, input rounds).
    pub modern: bool,
    /// The method (or pseudo-method: `DELETE`, `close`, `stdin-eof`, `upgrade`) and its
    /// occurrence (from 1) that stalls.
    pub stall_at: (&'static str, usize),
    pub stall: Stall,
    /// The occurrence answered HTTP 404 (the session forgotten), so the client re-initialises.
    pub expire_at: Option<(&'static str, usize)>,
    /// Every HTTP reply closes its connection, so the next request opens a fresh one.
    pub close_each: bool,
    /// Modern era: `tools/call` answers `input_required` this many times (each after
    /// `round_delay`) before the stall.
    pub rounds: usize,
    pub round_delay: Duration,
    /// Every occurrence of `stall_at`'s method stalls, not just the one numbered.
    pub stall_every: bool,
    /// A second request that stalls the same way (an `Auto` probe and its `initialize`).
    pub stall_too: Option<(&'static str, usize)>,
}

impl Plan {
    pub fn new(stall_at: (&'static str, usize), stall: Stall) -> Plan {
        Plan {
            modern: false,
            stall_at,
            stall,
            expire_at: None,
            close_each: false,
            rounds: 0,
            round_delay: Duration::ZERO,
            stall_every: false,
            stall_too: None,
        }
    }
}

/// What every peer shares between its threads.
pub struct Shared {
    pub plan: Plan,
    counts: Mutex<HashMap<String, usize>>,
    /// The peer is being dropped: every loop ends.
    pub stop: AtomicBool,
    /// Set when, after the stall began, the client sent something that shows it gave up
    /// (`notifications/cancelled`, `tasks/cancel`) or moved on (`ping`, `tools/list`, a new
    /// handshake): a shared stream (stdio, WebSocket, legacy SSE) then finishes the stalled
    /// answer, late, and serves on. An HTTP request's own connection is never released.
    released: AtomicBool,
    /// When the stalled request arrived.
    stalled_at: Mutex<Option<Instant>>,
    /// Connections accepted and not yet closed by the client.
    open: AtomicUsize,
    accepted: AtomicUsize,
    /// stdio: the relay processes that reported in.
    pids: Mutex<Vec<u32>>,
    /// Handles on every connection, shut when the peer is dropped.
    streams: Mutex<Vec<TcpStream>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Shared {
    pub fn new(plan: Plan) -> Arc<Shared> {
        Arc::new(Shared {
            plan,
            counts: Mutex::new(HashMap::new()),
            stop: AtomicBool::new(false),
            released: AtomicBool::new(false),
            stalled_at: Mutex::new(None),
            open: AtomicUsize::new(0),
            accepted: AtomicUsize::new(0),
            pids: Mutex::new(Vec::new()),
            streams: Mutex::new(Vec::new()),
            threads: Mutex::new(Vec::new()),
        })
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    pub fn released(&self) -> bool {
        self.released.load(Ordering::SeqCst)
    }

    fn release(&self) {
        if self.stalled_at.lock().unwrap().is_some() {
            self.released.store(true, Ordering::SeqCst);
        }
    }

    /// Counts one more `method`; its occurrence number (from 1).
    fn count(&self, method: &str) -> usize {
        let mut counts = self.counts.lock().unwrap();
        let n = counts.entry(method.to_owned()).or_insert(0);
        *n += 1;
        *n
    }

    /// Whether this occurrence of `method` is the planned stall (and notes when it came).
    fn is_stall(&self, method: &str, n: usize) -> bool {
        let (m, k) = self.plan.stall_at;
        let hit = (m == method && (k == n || self.plan.stall_every))
            || self.plan.stall_too == Some((method, n));
        if hit {
            *self.stalled_at.lock().unwrap() = Some(Instant::now());
            // A second stall (after an `Auto` probe the client gave up on) holds again.
            self.released.store(false, Ordering::SeqCst);
        }
        hit
    }

    /// Counts a pseudo-method (`DELETE`, `close`, `stdin-eof`, `upgrade`): whether it stalls.
    pub fn pseudo(&self, name: &'static str) -> bool {
        let n = self.count(name);
        self.is_stall(name, n)
    }

    /// When the stalled request arrived, if it did.
    pub fn stalled_at(&self) -> Option<Instant> {
        *self.stalled_at.lock().unwrap()
    }

    /// A connection was accepted: keep a handle on it and count it open.
    pub fn accepted(&self, stream: &TcpStream) {
        self.accepted.fetch_add(1, Ordering::SeqCst);
        self.open.fetch_add(1, Ordering::SeqCst);
        if let Ok(c) = stream.try_clone() {
            self.streams.lock().unwrap().push(c);
        }
    }

    /// The client closed a connection (or the peer is stopping).
    pub fn closed(&self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }

    pub fn add_thread(&self, h: JoinHandle<()>) {
        self.threads.lock().unwrap().push(h);
    }

    pub fn add_pid(&self, pid: u32) {
        self.pids.lock().unwrap().push(pid);
    }

    pub fn pids(&self) -> Vec<u32> {
        self.pids.lock().unwrap().clone()
    }

    /// Connections the client has not closed.
    pub fn open_connections(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// Stops every loop, shuts every connection and joins every thread.
    pub fn shut_down(&self) {
        self.stop.store(true, Ordering::SeqCst);
        for s in self.streams.lock().unwrap().iter() {
            let _ = s.shutdown(Shutdown::Both);
        }
        loop {
            let batch: Vec<_> = self.threads.lock().unwrap().drain(..).collect();
            if batch.is_empty() {
                break;
            }
            for t in batch {
                let _ = t.join();
            }
            // A connection accepted while joining has its handle shut too.
            for s in self.streams.lock().unwrap().iter() {
                let _ = s.shutdown(Shutdown::Both);
            }
        }
    }
}

/// A peer's listening socket (127.0.0.1:0) and the thread that accepts on it: each connection
/// is counted open, kept (to be shut when the peer stops) and served on a thread of its own,
/// `fault-{name}-{n}`. Dropping it stops the peer: the accept thread is woken and joined, every
/// connection shut and every thread joined.
pub struct Acceptor {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl Acceptor {
    pub fn start(
        name: &str,
        shared: &Arc<Shared>,
        serve: impl Fn(usize, TcpStream) + Send + Sync + 'static,
    ) -> Acceptor {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local address");
        let (sh, serve, name) = (shared.clone(), Arc::new(serve), name.to_owned());
        let accept = std::thread::Builder::new()
            .name(format!("fault-{name}-accept"))
            .spawn(move || {
                for (n, stream) in listener.incoming().enumerate() {
                    if sh.stopping() {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let _ = stream.set_nodelay(true);
                    sh.accepted(&stream);
                    let (s, serve) = (sh.clone(), serve.clone());
                    let h = std::thread::Builder::new()
                        .name(format!("fault-{name}-{n}"))
                        .spawn(move || {
                            serve(n, stream);
                            s.closed();
                        })
                        .expect("spawn");
                    sh.add_thread(h);
                }
            })
            .expect("spawn");
        Acceptor {
            addr,
            shared: shared.clone(),
            accept: Some(accept),
        }
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(a) = self.accept.take() {
            let _ = a.join();
        }
        self.shared.shut_down();
    }
}

/// Any of the MCP peers, for the matrix.
pub enum Peer {
    Http(http::HttpPeer),
    Ws(ws::WsPeer),
    Stdio(stdio::StdioPeer),
    InProcess(in_process::InProcessPeer),
}

impl Peer {
    pub fn shared(&self) -> &Arc<Shared> {
        match self {
            Peer::Http(p) => &p.shared,
            Peer::Ws(p) => &p.shared,
            Peer::Stdio(p) => &p.shared,
            Peer::InProcess(p) => &p.shared,
        }
    }
}

/// Whether process `pid` is gone (reaped; a zombie still counts as there).
#[cfg(unix)]
pub fn pid_gone(pid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Whether process `pid` is gone (exited).
#[cfg(windows)]
pub fn pid_gone(pid: u32) -> bool {
    !crate::process::running(pid)
}
