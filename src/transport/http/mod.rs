//! Streamable HTTP transport (MCP 2025-03-26 … 2025-11-25) on ureq.
//!
//! ```text
//!  send(request) ──POST──> 2xx application/json ──> deliver ──> Ok
//!                     │    2xx text/event-stream ──> Ok; wait(deadline) delivers events until
//!                     │         one for the caller (progress: it waits again) or our response
//!                     │         └ ends after an id ──wait retry──> GET Last-Event-ID ──> (same)
//!                     │    3xx same origin ──> the same request at the new URL (at most 5 hops)
//!                     │    404 with a session ──> re-initialize once ──> POST again
//!                     │    400/404/405 on initialize (detect_legacy_sse) ──> Err; the connect
//!                     │         code sees `legacy_refusal()` and connects over legacy SSE instead
//!                     │    401/403 ──> Error::Unauthorized (WWW-Authenticate kept)
//!                     └──> other status ──> Error::Transport (status + body snippet)
//!  send(notifications/initialized) ──> 2xx ──> standalone GET stream thread (non-200: no stream);
//!                                             send returns once the GET is answered (≤ 2 s)
//!  a request re-sent after a re-initialization ──> the GET stream thread again, not waited for
//!  close() ──> DELETE (405 fine) ──> shut the ureq client's sockets ──> join the stream thread
//! ```
//!
//! Every POST is bounded by the caller's deadline, so a server that never answers or trickles
//! bytes times out on time: ureq's global timeout for the call is the latest the answer may be
//! read by (the caller's deadline, or its maximum total when progress may move that deadline
//! on), and every read and write on the caller's thread is bounded by the caller's current
//! deadline (`web::buffered::within`). An event-stream reply to a caller's request is read by
//! that caller in `Transport::wait` (`reply.rs`), one progress update at a time, so its
//! progress callback runs as each update comes and each update moves its deadline on. Closing
//! shuts every socket of the ureq client, which unblocks the stream thread's read and any
//! caller reading its reply.
//!
//! What a server can make the client hold is bounded by
//! [`Limits::max_message_bytes`](crate::config::Limits::max_message_bytes): a JSON reply
//! longer than that (by its `Content-Length`, or once that much has arrived) and an SSE event
//! whose data goes over it fail the request at once with [`Error::Protocol`] naming the cap; the
//! reply is dropped unread, which closes its connection. On the standalone GET stream an
//! oversized event is skipped (logged; a response in it fails its request) and the stream
//! goes on.
//!
//! A permanent redirect (301, 308) to the same origin moves the endpoint: later requests go to
//! the new URL. A temporary one (302, 307: Starlette's `/mcp` to `/mcp/`) is followed anew by
//! every request. See `redirect.rs` for which redirects are followed.
//!
//! This file holds the handle and its lifecycle (open, send, close); the rest is split by job
//! (what other HTTP-based transports share too is in `transport/web/`):
//!
//! | file | what |
//! |---|---|
//! | `post.rs` | one POST per frame and what its status means |
//! | `reply.rs` | reading a reply (JSON or SSE) to our response, resuming a broken SSE reply |
//! | `session.rs` | session id and version headers, re-initialize on 404, DELETE on close |
//! | `stream.rs` | the standalone GET stream thread and its reconnection backoff |
//! | `drain.rs` | answered SSE replies read to their end: inline when it has arrived, or by a thread |
//! | `fallback.rs` | what the switch to legacy HTTP+SSE needs (made by `client/connect.rs`) |

mod drain;
mod fallback;
mod modern;
mod post;
mod reply;
mod session;
mod stream;

use crate::sync::lock;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use self::drain::Drain;
pub(crate) use self::fallback::LegacyRefusal;
use self::post::Exchange;
use self::session::State;
use self::stream::Opening;
use super::web::buffered::{interruptible, within, Interrupt};
use super::web::{agent, Limit, RequestHeaders, Requester, Verb};
use super::{Caller, Closing, Outgoing, Sink, Transport};
use crate::config::{redact_url, HttpConfig, Limits};
use crate::error::{ConnectError, ConnectErrorKind, Error};
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::session::Event;

/// The header naming the protocol version.
const VERSION_HEADER: &str = "MCP-Protocol-Version";

#[cfg(test)]
#[path = "../../../tests/support_remote/mod.rs"]
#[allow(unreachable_pub, missing_docs)] // test-support code shared with the integration tests
pub(crate) mod test_support;

/// What the handle and its threads share.
struct Inner {
    server: String,
    /// The endpoint: the configured URL, or where a permanent redirect moved it.
    url: RwLock<String>,
    /// Sends requests and follows redirects, with the configured headers.
    req: Requester,
    timeout: Duration,
    /// The largest JSON body or SSE event accepted (`Limits::max_message_bytes`).
    max_message: usize,
    detect_legacy_sse: bool,
    sink: Arc<dyn Sink>,
    state: Mutex<State>,
    closed: AtomicBool,
    /// Dropped on close: wakes every retry wait at once.
    stop_tx: Mutex<Option<Sender<()>>>,
    stop_rx: Receiver<()>,
    /// Ids of responses that arrived on the standalone stream (a resumed reply may land there).
    answered_elsewhere: Mutex<Vec<RequestId>>,
    /// Event-stream replies their callers read in `wait`, by request id (see `reply.rs`).
    unread: Mutex<HashMap<i64, reply::Unread>>,
    /// What stops the reading of a caller reading its reply in `wait` now, by request id.
    reading: Mutex<HashMap<i64, Arc<Interrupt>>>,
    /// The drain thread, started with the first SSE reply.
    drain: Mutex<Drain>,
}

/// The Streamable HTTP connection handle.
pub(crate) struct HttpTransport {
    /// What the threads share.
    inner: Arc<Inner>,
    /// The status with which `initialize` was refused when auto-detection is on: the caller
    /// (see `client/connect.rs`) then connects over legacy HTTP+SSE instead.
    legacy_refused: OnceLock<u16>,
    /// The standalone GET stream thread, joined on close.
    stream: Mutex<Option<JoinHandle<()>>>,
}

impl fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTransport")
            .field("server", &self.inner.server)
            .field("url", &self.inner.shown_url())
            .field("headers", &self.inner.req.headers)
            .field("legacy_refused", &self.legacy_refused.get())
            .finish_non_exhaustive()
    }
}

/// Opens a Streamable HTTP transport. Nothing goes on the wire before the first `send`.
pub(crate) fn open(
    server: &str,
    cfg: &HttpConfig,
    timeout: Duration,
    limits: &Limits,
    sink: Arc<dyn Sink>,
) -> Result<Arc<HttpTransport>, Error> {
    Ok(Arc::new(HttpTransport::new(
        server, cfg, timeout, limits, sink,
    )?))
}

impl HttpTransport {
    /// A transport for `cfg.url`; fails when it is not an http:// or https:// URL.
    pub(crate) fn new(
        server: &str,
        cfg: &HttpConfig,
        timeout: Duration,
        limits: &Limits,
        sink: Arc<dyn Sink>,
    ) -> Result<Self, Error> {
        let url = cfg.url.as_str();
        if !crate::transport::web::url::is_http(url) {
            let shown = redact_url(url);
            return Err(ConnectError::new(
                server,
                &shown,
                ConnectErrorKind::Unreachable,
                format!("`{shown}` is not an http:// or https:// URL"),
            )
            .into());
        }
        let proxy = crate::transport::proxy::for_ureq(server, &cfg.proxy, url)?;
        let (stop_tx, stop_rx) = crossbeam_channel::bounded(0);
        Ok(HttpTransport {
            inner: Arc::new(Inner {
                server: server.to_owned(),
                url: RwLock::new(url.to_owned()),
                req: Requester::new(
                    server,
                    url,
                    agent(&cfg.root_certificates, proxy),
                    RequestHeaders::new(cfg.headers.clone(), cfg.auth.clone()),
                    cfg.follow_cross_origin_redirects,
                ),
                timeout,
                max_message: limits.max_message_bytes,
                detect_legacy_sse: cfg.detect_legacy_sse,
                sink,
                state: Mutex::new(State {
                    session_id: cfg.session_id.clone(),
                    ..State::default()
                }),
                closed: AtomicBool::new(false),
                stop_tx: Mutex::new(Some(stop_tx)),
                stop_rx,
                answered_elsewhere: Mutex::new(Vec::new()),
                unread: Mutex::new(HashMap::new()),
                reading: Mutex::new(HashMap::new()),
                drain: Mutex::new(Drain::default()),
            }),
            legacy_refused: OnceLock::new(),
            stream: Mutex::new(None),
        })
    }
}

impl Transport for HttpTransport {
    fn send(&self, out: Outgoing) -> Result<(), Error> {
        let inner = &self.inner;
        if inner.closed.load(Ordering::SeqCst) {
            return Err(inner.closed_error("the client closed the connection"));
        }
        let deadline = out
            .deadline
            .unwrap_or_else(|| crate::deadline::after(inner.timeout));
        let method = out.method();
        if method == "initialize" {
            lock(&inner.state).init_frame = Some(out.clone());
        } else if method == "notifications/initialized" {
            // The end of the handshake names the negotiated version: every later message
            // carries it, those this transport makes itself (the GET stream, DELETE) too.
            let mut state = lock(&inner.state);
            state.initialized_frame = Some(out.frame.clone());
            state.protocol_version = out.header(VERSION_HEADER).map(str::to_owned);
        }
        // Every read and write of the exchange by the caller's deadline (ureq's own bound is
        // the latest its answer may be read by, when progress may move that deadline on), and
        // stoppable by another thread giving the request up (`Transport::interrupt`; one given
        // up before this point is not seen until the deadline).
        let caller = match (&out.id, out.caller_waits) {
            (Some(RequestId::Number(id)), true) => Some(*id),
            _ => None,
        };
        // Only a request its caller waits for can be given up: nothing else pays for an
        // interrupt (an allocation, and a lock at each read and write).
        let interrupt = caller.map(|id| {
            let interrupt = Arc::new(Interrupt::default());
            lock(&inner.reading).insert(id, Arc::clone(&interrupt));
            interrupt
        });
        let exchanged = interruptible(interrupt.as_ref(), || {
            within(deadline, || inner.exchange(&out, deadline, true))
        });
        if let Some(id) = caller {
            lock(&inner.reading).remove(&id);
        }
        match exchanged {
            Ok(()) => {
                if method == "notifications/initialized" {
                    self.start_stream(Opening::Awaited);
                }
                Ok(())
            }
            Err(Exchange::Reinitialized) => {
                // The caller's request is answered (or its reply is waiting for it to read in
                // `wait`): a GET the server holds must not spend the caller's deadline.
                self.start_stream(Opening::InBackground);
                Ok(())
            }
            Err(Exchange::Legacy(status)) => {
                let _ = self.legacy_refused.set(status);
                Err(Error::Transport {
                    server: inner.server.clone(),
                    status: Some(status),
                    detail: format!("POST {}: HTTP {status}", inner.shown_url()),
                    source: None,
                })
            }
            Err(Exchange::Failed(e)) => {
                let e = *e;
                if let (Error::Timeout { .. }, Some(id)) = (&e, &out.id) {
                    if out.is_request() && method != "initialize" {
                        inner.cancel(id);
                    }
                }
                if inner.closed.load(Ordering::SeqCst) {
                    Err(inner.closed_error("the client closed the connection"))
                } else {
                    Err(e)
                }
            }
        }
    }

    /// A caller whose answer comes as an event stream reads it here, on its own thread, until
    /// its progress or answer is routed to it (see `reply.rs`); any other waits on its slot.
    fn wait<'a>(
        &'a self,
        caller: &Caller<'a>,
        deadline: Instant,
    ) -> Result<Event, RecvTimeoutError> {
        if let Some(ended) = self.inner.read_in_wait(caller, deadline) {
            return ended;
        }
        caller.rx.recv_deadline(deadline)
    }

    /// A caller reading its reply in `wait` is stopped by shutting the socket it reads.
    fn interrupt(&self, id: i64) {
        let reading = lock(&self.inner.reading).get(&id).cloned();
        if let Some(r) = reading {
            r.fire();
        }
    }

    /// Both [`Closing`]s are the same: the close handshake (DELETE) is bounded by the timeout.
    fn close(&self, _how: Closing) -> Result<(), Error> {
        let inner = &self.inner;
        if inner.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        drop(lock(&inner.stop_tx).take());
        let drainer = {
            let mut drain = lock(&inner.drain);
            drain.tx = None;
            drain.thread.take()
        };
        inner.delete_session();
        // Shutting the client's sockets also wakes a caller reading its reply in `wait`.
        inner.req.agent.clone().shutdown();
        lock(&inner.unread).clear();
        let stream = lock(&self.stream).take();
        for (thread, what) in [(stream, "GET stream"), (drainer, "reply-drain")] {
            if thread.is_some_and(|h| h.join().is_err()) {
                log::warn!("server `{}`: the {what} thread panicked", inner.server);
            }
        }
        Ok(())
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        let _ = self.close(Closing::Graceful);
    }
}

impl Inner {
    /// The endpoint URL now.
    fn url(&self) -> String {
        crate::sync::read_lock(&self.url).clone()
    }

    /// The URL as error messages and logs show it: without password, query, or anything that
    /// came from a variable.
    fn shown_url(&self) -> String {
        self.sink.redact(&self.url())
    }

    /// Sends `verb` to the endpoint with the session headers and `extra`, following redirects;
    /// a permanent redirect on the same origin moves the endpoint for later requests.
    fn request(
        &self,
        verb: Verb<'_>,
        extra: &[(&str, &str)],
        limit: Limit,
        fail: impl Fn(&str, ureq::Error) -> Error,
    ) -> Result<ureq::http::Response<ureq::Body>, Error> {
        let session = self.session_headers();
        let mut headers: Vec<(&str, &str)> = extra.to_vec();
        // A header the message carries itself is not sent twice.
        headers.extend(
            session
                .iter()
                .filter(|(k, _)| !extra.iter().any(|(e, _)| e.eq_ignore_ascii_case(k)))
                .map(|(k, v)| (*k, v.as_str())),
        );
        let from = self.url();
        let sent = self.req.send(verb, &from, &headers, limit, fail)?;
        if sent.moved && self.req.is_home(&sent.url) {
            let mut url = crate::sync::write_lock(&self.url);
            if *url == from {
                log::info!(
                    "server `{}`: the endpoint moved permanently to {}",
                    self.server,
                    self.sink.redact(&sent.url)
                );
                *url = sent.url;
            }
        }
        Ok(sent.resp)
    }

    /// A closed-connection error with this detail.
    fn closed_error(&self, detail: &str) -> Error {
        Error::Closed {
            server: self.server.clone(),
            detail: detail.to_owned(),
            stderr_tail: String::new(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! The transport driven directly, with a sink that records what it is handed.

    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use serde_json::json;

    use super::test_support::HttpServer;
    use super::*;
    use crate::protocol::jsonrpc::Inbound;
    use crate::transport::Outgoing;

    /// Records deliveries as short strings (`request ping`, `response 1`, …) and closings.
    pub(crate) struct Recorder {
        pub(crate) seen: Mutex<Vec<String>>,
        pub(crate) closed: Mutex<Vec<String>>,
        /// Signals each closing, for tests that wait for one.
        closed_tx: crossbeam_channel::Sender<()>,
        pub(crate) closed_rx: crossbeam_channel::Receiver<()>,
    }

    impl Default for Recorder {
        fn default() -> Self {
            let (closed_tx, closed_rx) = crossbeam_channel::unbounded();
            Recorder {
                seen: Mutex::default(),
                closed: Mutex::default(),
                closed_tx,
                closed_rx,
            }
        }
    }

    impl Sink for Recorder {
        fn deliver(&self, msg: Inbound) {
            let line = match msg {
                Inbound::Request(r) => format!("request {}", r.method),
                Inbound::Notification(n) => format!("notification {}", n.method),
                Inbound::Response(r) => match r.id {
                    Some(id) => format!("response {id}"),
                    None => "response".to_owned(),
                },
                Inbound::Invalid(e) => format!("invalid {e}"),
            };
            self.seen.lock().unwrap().push(line);
        }

        fn closed(&self, detail: String, _stderr_tail: String) {
            self.closed.lock().unwrap().push(detail);
            let _ = self.closed_tx.send(());
        }
    }

    pub(super) fn transport(url: &str, sink: Arc<Recorder>) -> Arc<dyn Transport> {
        let cfg = crate::config::ServerConfig::http("t", url);
        let crate::config::TransportConfig::StreamableHttp(http) = cfg.transport() else {
            unreachable!("an http config")
        };
        open("t", http, Duration::from_secs(5), cfg.limits(), sink).expect("open")
    }

    pub(super) fn call_frame(id: i64) -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "x", "arguments": {}}})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn the_version_the_handshake_ends_with_goes_on_every_later_message_once() {
        let srv = HttpServer::start(|req, conn| match req.json().get("id") {
            Some(id) if req.json().get("method").is_some() => {
                conn.json(200, &[], &json!({"jsonrpc": "2.0", "id": id, "result": {}}))
            }
            _ => conn.accepted(),
        });
        let sink = Arc::new(Recorder::default());
        let t = transport(&srv.url("/mcp"), sink);
        let version = vec![("MCP-Protocol-Version".to_owned(), "2025-06-18".to_owned())];
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
        t.send(Outgoing::parse(init.to_string().into_bytes()))
            .expect("initialize");
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        t.send(Outgoing::parse(done.to_string().into_bytes()).with_headers(version.clone()))
            .expect("initialized");
        t.send(Outgoing::parse(call_frame(2)).with_headers(version))
            .expect("a request carrying the version itself");
        let answer = Outgoing::response(&RequestId::Number(7), "ping", &Ok(json!({})));
        t.send(answer).expect("an answer carrying no header");
        t.close(crate::transport::Closing::Graceful).expect("close");
        let posts: Vec<_> = srv
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST")
            .collect();
        assert_eq!(posts.len(), 4, "{posts:?}");
        assert!(posts[0].header("mcp-protocol-version").is_none());
        for p in &posts[1..] {
            assert_eq!(
                p.header_values("mcp-protocol-version"),
                vec!["2025-06-18"],
                "{}",
                String::from_utf8_lossy(&p.body)
            );
        }
    }

    #[test]
    fn sending_after_close_is_a_closed_error() {
        let srv = HttpServer::start(|_req, conn| conn.accepted());
        let sink = Arc::new(Recorder::default());
        let t = transport(&srv.url("/mcp"), sink);
        t.close(Closing::Graceful).expect("close");
        t.close(Closing::Graceful).expect("close is idempotent");
        let err = t.send(Outgoing::parse(call_frame(1))).expect_err("closed");
        assert!(matches!(err, Error::Closed { .. }), "{err:?}");
    }
}
