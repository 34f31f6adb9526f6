//! Streamable HTTP transport (MCP 2025-03-26 … 2025-11-25) on ureq.
//!
//! ```text
//!  send(request) ──POST──> 2xx application/json ──> deliver ──> Ok
//!                     │    2xx text/event-stream ──> deliver events until our response ──> Ok
//!                     │         └ ends after an id ──wait retry──> GET Last-Event-ID ──> (same)
//!                     │    404 with a session ──> re-initialize once ──> POST again
//!                     │    400/404/405 on initialize (detect_legacy_sse) ──> legacy SSE from now on
//!                     └──> other status ──> Error::Transport (status + body snippet)
//!  send(notifications/initialized) ──> 2xx ──> standalone GET stream thread (non-200: no stream)
//!  close() ──> DELETE (405 fine) ──> shut the agent's sockets ──> join the stream thread
//! ```
//!
//! Every POST is bounded by the caller's deadline (ureq's global timeout for the call, which
//! covers reading the body too), so a server that never answers or trickles bytes times out on
//! time. Closing shuts every socket of the agent, which unblocks the stream thread's read.

use std::fmt;
use std::io::{BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use serde::Deserialize;

use super::sse_parser::{SseParser, SseReader};
use super::{Sink, Transport};
use crate::config::{AuthProvider, HttpConfig};
use crate::error::Error;
use crate::protocol::jsonrpc::{Inbound, RequestId};

#[cfg(test)]
#[path = "../../tests/support_remote/mod.rs"]
#[allow(unreachable_pub, missing_docs)] // test-support code shared with the integration tests
pub(crate) mod test_support;

/// The Accept header every POST carries (the spec requires both types).
const ACCEPT_POST: &str = "application/json, text/event-stream";
/// Largest JSON body read from a reply.
const MAX_JSON_BODY: u64 = 64 * 1024 * 1024;
/// How much of an error body is quoted in an error.
const SNIPPET: usize = 300;
/// How many times a response stream is resumed without progress before giving up.
const MAX_RESUMES: u32 = 5;
/// Delay before reconnecting a stream when the server named none.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// How long a resolved address is reused.
const DNS_TTL: Duration = Duration::from_secs(30);

/// Builds the agent all HTTP transports use: statuses come back as values, not errors.
pub(crate) fn agent() -> ureq::Agent {
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .user_agent(concat!("mcp-blocking/", env!("CARGO_PKG_VERSION")))
        .max_idle_connections_per_host(16)
        .build();
    ureq::Agent::with_parts(
        config,
        ureq::unversioned::transport::DefaultConnector::new(),
        CachingResolver::default(),
    )
}

/// ureq resolves the host before every request, and with a timeout set (we always set one) it
/// does so on a fresh thread. Remembering the answer for a while keeps a kept-alive connection
/// as cheap as it should be.
#[derive(Debug, Default)]
struct CachingResolver {
    inner: ureq::unversioned::resolver::DefaultResolver,
    cache: Mutex<
        Vec<(
            String,
            Instant,
            ureq::unversioned::resolver::ResolvedSocketAddrs,
        )>,
    >,
}

impl ureq::unversioned::resolver::Resolver for CachingResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        let key = format!(
            "{}://{}",
            uri.scheme_str().unwrap_or(""),
            uri.authority().map(|a| a.as_str()).unwrap_or("")
        );
        let now = Instant::now();
        {
            let mut cache = lock(&self.cache);
            cache.retain(|(_, at, _)| now.duration_since(*at) < DNS_TTL);
            if let Some((_, _, addrs)) = cache.iter().find(|(k, _, _)| *k == key) {
                return Ok(addrs.clone());
            }
        }
        let addrs = self.inner.resolve(uri, config, timeout)?;
        let mut cache = lock(&self.cache);
        if cache.len() >= 32 {
            cache.remove(0);
        }
        cache.push((key, now, addrs.clone()));
        Ok(addrs)
    }
}

/// Configured headers and the auth callback, applied to every request. `Debug` shows names only.
#[derive(Clone, Default)]
pub(crate) struct RequestHeaders {
    headers: Vec<(String, String)>,
    auth: Option<AuthProvider>,
}

impl fmt::Debug for RequestHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_map();
        for (name, _) in &self.headers {
            list.entry(name, &"<redacted>");
        }
        if self.auth.is_some() {
            list.entry(&"authorization", &"<provider, redacted>");
        }
        list.finish()
    }
}

impl RequestHeaders {
    /// Static headers plus an optional per-request `Authorization` provider.
    pub(crate) fn new(headers: Vec<(String, String)>, auth: Option<AuthProvider>) -> Self {
        RequestHeaders { headers, auth }
    }

    /// Adds the headers to a request; the auth provider is called now.
    pub(crate) fn apply<B>(
        &self,
        server: &str,
        mut req: ureq::RequestBuilder<B>,
    ) -> Result<ureq::RequestBuilder<B>, Error> {
        for (name, value) in &self.headers {
            req = req.header(name.as_str(), value.as_str());
        }
        if let Some(auth) = &self.auth {
            let value = (auth.0)().map_err(|e| Error::Transport {
                server: server.to_owned(),
                status: None,
                detail: format!("the auth provider failed: {e}"),
            })?;
            req = req.header("Authorization", value.as_str());
        }
        Ok(req)
    }
}

/// Turns a ureq failure into the crate's error; a passed deadline becomes [`Error::Timeout`].
pub(crate) fn map_ureq(
    server: &str,
    what: &str,
    method: &str,
    started: Instant,
    deadline: Option<Instant>,
    e: ureq::Error,
) -> Error {
    let timed_out = matches!(e, ureq::Error::Timeout(_))
        || deadline.is_some_and(|d| Instant::now() + Duration::from_millis(5) >= d);
    if timed_out {
        return Error::Timeout {
            server: server.to_owned(),
            method: method.to_owned(),
            after: started.elapsed(),
        };
    }
    let detail = match &e {
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            format!("{what}: connection refused")
        }
        ureq::Error::HostNotFound => format!("{what}: host not found (DNS)"),
        _ => format!("{what}: {e}"),
    };
    Error::Transport {
        server: server.to_owned(),
        status: None,
        detail,
    }
}

/// Maps an I/O error met while reading a body.
fn map_io(
    server: &str,
    what: &str,
    method: &str,
    started: Instant,
    deadline: Option<Instant>,
    e: std::io::Error,
) -> Error {
    if deadline.is_some_and(|d| Instant::now() + Duration::from_millis(5) >= d)
        || e.kind() == std::io::ErrorKind::TimedOut
    {
        return Error::Timeout {
            server: server.to_owned(),
            method: method.to_owned(),
            after: started.elapsed(),
        };
    }
    Error::Closed {
        server: server.to_owned(),
        detail: format!("{what}: {e}"),
        stderr_tail: String::new(),
    }
}

/// An error for a non-success status, quoting a bounded, single-line snippet of the body.
pub(crate) fn status_error(
    server: &str,
    what: &str,
    resp: ureq::http::Response<ureq::Body>,
) -> Error {
    let status = resp.status();
    let mut buf = Vec::new();
    let _ = resp
        .into_body()
        .into_reader()
        .take(SNIPPET as u64 * 4)
        .read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let mut snippet: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if snippet.chars().count() > SNIPPET {
        snippet = snippet.chars().take(SNIPPET).collect::<String>() + "…";
    }
    let detail = if snippet.is_empty() {
        format!("{what}: HTTP {status}")
    } else {
        format!("{what}: HTTP {status}: {snippet}")
    };
    Error::Transport {
        server: server.to_owned(),
        status: Some(status.as_u16()),
        detail,
    }
}

/// Reads and drops a small body so the connection can be reused.
pub(crate) fn drain(resp: ureq::http::Response<ureq::Body>) {
    let mut sink = std::io::sink();
    let _ = std::io::copy(
        &mut resp.into_body().into_reader().take(MAX_JSON_BODY),
        &mut sink,
    );
}

fn content_type(resp: &ureq::http::Response<ureq::Body>) -> String {
    resp.headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

fn is_event_stream(resp: &ureq::http::Response<ureq::Body>) -> bool {
    content_type(resp).starts_with("text/event-stream")
}

/// Parses one frame and hands every message to the sink; returns whether the response to
/// `want` was among them.
pub(crate) fn deliver_frame(
    server: &str,
    sink: &dyn Sink,
    data: &[u8],
    want: Option<&RequestId>,
) -> bool {
    match Inbound::parse(data) {
        Ok(msgs) => {
            let mut found = false;
            for msg in msgs {
                if let (Some(want), Inbound::Response(r)) = (want, &msg) {
                    if r.id.as_ref() == Some(want) {
                        found = true;
                    }
                }
                sink.deliver(msg);
            }
            found
        }
        Err(e) => {
            log::warn!("server `{server}`: ignoring a malformed message: {e}");
            false
        }
    }
}

/// The envelope fields a transport needs to know about an outbound frame.
#[derive(Deserialize, Default)]
pub(crate) struct Outbound {
    #[serde(default)]
    pub(crate) id: Option<RequestId>,
    #[serde(default)]
    pub(crate) method: Option<String>,
}

impl Outbound {
    pub(crate) fn peek(frame: &[u8]) -> Outbound {
        serde_json::from_slice(frame).unwrap_or_default()
    }

    fn is_request(&self) -> bool {
        self.id.is_some() && self.method.is_some()
    }

    pub(crate) fn label(&self) -> &str {
        self.method.as_deref().unwrap_or("response")
    }
}

/// An SSE reply being read.
type ReplyStream = SseReader<BufReader<ureq::BodyReader<'static>>>;

/// Replies whose rest is read in the background so their connection can be reused.
const MAX_DRAINING: usize = 8;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[derive(Default)]
struct State {
    session_id: Option<String>,
    protocol_version: Option<String>,
    /// The initialize request and initialized notification, replayed on a 404.
    init_frame: Option<Vec<u8>>,
    initialized_frame: Option<Vec<u8>>,
}

struct Inner {
    server: String,
    url: String,
    agent: ureq::Agent,
    headers: RequestHeaders,
    timeout: Duration,
    detect_legacy_sse: bool,
    sink: Arc<dyn Sink>,
    state: Mutex<State>,
    closed: AtomicBool,
    /// Dropped on close: wakes every retry wait at once.
    stop_tx: Mutex<Option<Sender<()>>>,
    stop_rx: Receiver<()>,
    /// Ids of responses that arrived on the standalone stream (a resumed reply may land there).
    answered_elsewhere: Mutex<Vec<RequestId>>,
    /// The drain thread, started with the first SSE reply.
    drain: Mutex<Drain>,
}

/// The drain thread's queue and handle.
#[derive(Default)]
struct Drain {
    tx: Option<Sender<ReplyStream>>,
    thread: Option<JoinHandle<()>>,
}

/// The Streamable HTTP connection handle.
pub(crate) struct HttpTransport {
    inner: Arc<Inner>,
    /// Set when auto-detection chose legacy HTTP+SSE; every call is forwarded to it.
    fallback: OnceLock<Arc<dyn Transport>>,
    stream: Mutex<Option<JoinHandle<()>>>,
}

impl fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTransport")
            .field("server", &self.inner.server)
            .field("url", &self.inner.url)
            .field("headers", &self.inner.headers)
            .field("legacy_fallback", &self.fallback.get().is_some())
            .finish_non_exhaustive()
    }
}

/// Opens a Streamable HTTP transport. Nothing goes on the wire before the first `send`.
pub(crate) fn open(
    server: &str,
    cfg: &HttpConfig,
    timeout: Duration,
    sink: Arc<dyn Sink>,
) -> Result<Arc<dyn Transport>, Error> {
    Ok(Arc::new(HttpTransport::new(
        server,
        &cfg.url,
        RequestHeaders::new(cfg.headers.clone(), cfg.auth.clone()),
        cfg.session_id.clone(),
        cfg.detect_legacy_sse,
        timeout,
        sink,
    )?))
}

impl HttpTransport {
    pub(crate) fn new(
        server: &str,
        url: &str,
        headers: RequestHeaders,
        session_id: Option<String>,
        detect_legacy_sse: bool,
        timeout: Duration,
        sink: Arc<dyn Sink>,
    ) -> Result<Self, Error> {
        if url.parse::<ureq::http::Uri>().is_err()
            || !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(Error::Connect {
                server: server.to_owned(),
                detail: format!("`{url}` is not an http:// or https:// URL"),
                stderr_tail: String::new(),
            });
        }
        let (stop_tx, stop_rx) = crossbeam_channel::bounded(0);
        Ok(HttpTransport {
            inner: Arc::new(Inner {
                server: server.to_owned(),
                url: url.to_owned(),
                agent: agent(),
                headers,
                timeout,
                detect_legacy_sse,
                sink,
                state: Mutex::new(State {
                    session_id,
                    ..State::default()
                }),
                closed: AtomicBool::new(false),
                stop_tx: Mutex::new(Some(stop_tx)),
                stop_rx,
                answered_elsewhere: Mutex::new(Vec::new()),
                drain: Mutex::new(Drain::default()),
            }),
            fallback: OnceLock::new(),
            stream: Mutex::new(None),
        })
    }

    fn start_stream(&self) {
        let mut slot = lock(&self.stream);
        // Checked under the lock that close() takes to join: no thread starts after close.
        if self.inner.closed.load(Ordering::SeqCst)
            || slot.as_ref().is_some_and(|h| !h.is_finished())
        {
            return;
        }
        if let Some(old) = slot.take() {
            let _ = old.join();
        }
        let inner = Arc::clone(&self.inner);
        // The thread says when the server has answered the GET (stream or not), so that
        // requests sent after `initialized` find the stream already open.
        let (opened_tx, opened_rx) = crossbeam_channel::bounded(1);
        match std::thread::Builder::new()
            .name(format!("mcp-get:{}", inner.server))
            .spawn(move || inner.standalone_stream(opened_tx))
        {
            Ok(h) => {
                *slot = Some(h);
                let _ = opened_rx.recv_timeout(self.inner.timeout.min(Duration::from_secs(2)));
            }
            Err(e) => log::warn!(
                "server `{}`: could not start the GET stream thread: {e}",
                self.inner.server
            ),
        }
    }

    fn fall_back(&self, frame: Vec<u8>, deadline: Instant) -> Result<(), Error> {
        let inner = &self.inner;
        let left = deadline.saturating_duration_since(Instant::now());
        log::info!(
            "server `{}`: Streamable HTTP refused; trying legacy HTTP+SSE at {}",
            inner.server,
            inner.url
        );
        let legacy = super::sse::open_with(
            &inner.server,
            &inner.url,
            inner.headers.clone(),
            left.min(inner.timeout),
            Arc::clone(&inner.sink),
        )?;
        let legacy = self.fallback.get_or_init(|| legacy);
        legacy.send(frame, Some(deadline))
    }
}

impl Transport for HttpTransport {
    fn send(&self, frame: Vec<u8>, deadline: Option<Instant>) -> Result<(), Error> {
        if let Some(legacy) = self.fallback.get() {
            return legacy.send(frame, deadline);
        }
        let inner = &self.inner;
        if inner.closed.load(Ordering::SeqCst) {
            return Err(inner.closed_error("the client closed the connection"));
        }
        let out = Outbound::peek(&frame);
        let deadline = deadline.unwrap_or_else(|| Instant::now() + inner.timeout);
        let method = out.method.as_deref().unwrap_or("");
        if method == "initialize" {
            lock(&inner.state).init_frame = Some(frame.clone());
        } else if method == "notifications/initialized" {
            lock(&inner.state).initialized_frame = Some(frame.clone());
        }
        match inner.exchange(&frame, &out, deadline, true) {
            Ok(()) => {
                if method == "notifications/initialized" {
                    self.start_stream();
                }
                Ok(())
            }
            Err(Exchange::Reinitialized) => {
                self.start_stream();
                Ok(())
            }
            Err(Exchange::Legacy(status)) => {
                let original = format!("POST {}: HTTP {status}", inner.url);
                self.fall_back(frame, deadline).map_err(|e| {
                    log::debug!("server `{}`: legacy SSE fallback failed: {e}", inner.server);
                    Error::Transport {
                        server: inner.server.clone(),
                        status: Some(status),
                        detail: format!("{original} (and legacy HTTP+SSE failed too: {e})"),
                    }
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

    fn set_protocol_version(&self, version: &str) {
        if let Some(legacy) = self.fallback.get() {
            legacy.set_protocol_version(version);
        }
        lock(&self.inner.state).protocol_version = Some(version.to_owned());
    }

    fn close(&self) -> Result<(), Error> {
        let inner = &self.inner;
        if inner.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        if let Some(legacy) = self.fallback.get() {
            let _ = legacy.close();
        }
        drop(lock(&inner.stop_tx).take());
        let drainer = {
            let mut drain = lock(&inner.drain);
            drain.tx = None;
            drain.thread.take()
        };
        inner.delete_session();
        inner.agent.clone().shutdown();
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
        let _ = self.close();
    }
}

/// How an exchange that did not simply succeed ended.
enum Exchange {
    /// The session expired and was re-established; the request was repeated and succeeded.
    Reinitialized,
    /// `initialize` was refused with this status and legacy detection is on.
    Legacy(u16),
    Failed(Box<Error>),
}

impl From<Error> for Exchange {
    fn from(e: Error) -> Self {
        Exchange::Failed(Box::new(e))
    }
}

/// What a caller's exchange is about: the request it waits for and its deadline.
struct Call<'a> {
    want: Option<&'a RequestId>,
    method: &'a str,
    started: Instant,
    deadline: Instant,
    /// Deliver what arrives to the sink (false while replaying `initialize`).
    deliver: bool,
}

impl Call<'_> {
    fn timeout(&self, server: &str) -> Error {
        Error::Timeout {
            server: server.to_owned(),
            method: self.method.to_owned(),
            after: self.started.elapsed(),
        }
    }

    fn io_error(&self, server: &str, what: &str, e: std::io::Error) -> Error {
        map_io(
            server,
            what,
            self.method,
            self.started,
            Some(self.deadline),
            e,
        )
    }

    fn ureq_error(&self, server: &str, what: &str, e: ureq::Error) -> Error {
        map_ureq(
            server,
            what,
            self.method,
            self.started,
            Some(self.deadline),
            e,
        )
    }
}

impl Inner {
    fn closed_error(&self, detail: &str) -> Error {
        Error::Closed {
            server: self.server.clone(),
            detail: detail.to_owned(),
            stderr_tail: String::new(),
        }
    }

    /// Adds session, version and configured headers.
    fn prepare<B>(&self, req: ureq::RequestBuilder<B>) -> Result<ureq::RequestBuilder<B>, Error> {
        let mut req = self.headers.apply(&self.server, req)?;
        let state = lock(&self.state);
        if let Some(sid) = &state.session_id {
            req = req.header("Mcp-Session-Id", sid.as_str());
        }
        if let Some(v) = &state.protocol_version {
            req = req.header("MCP-Protocol-Version", v.as_str());
        }
        Ok(req)
    }

    fn post(
        &self,
        frame: &[u8],
        method: &str,
        deadline: Instant,
    ) -> Result<ureq::http::Response<ureq::Body>, Error> {
        let started = Instant::now();
        let left = deadline.saturating_duration_since(started);
        if left.is_zero() {
            return Err(Error::Timeout {
                server: self.server.clone(),
                method: method.to_owned(),
                after: Duration::ZERO,
            });
        }
        let req = self
            .agent
            .post(&self.url)
            .config()
            .timeout_global(Some(left))
            .build()
            .header("Accept", ACCEPT_POST)
            .header("Content-Type", "application/json");
        let req = self.prepare(req)?;
        req.send(frame).map_err(|e| {
            map_ureq(
                &self.server,
                &format!("POST {}", self.url),
                method,
                started,
                Some(deadline),
                e,
            )
        })
    }

    fn exchange(
        &self,
        frame: &[u8],
        out: &Outbound,
        deadline: Instant,
        may_reinit: bool,
    ) -> Result<(), Exchange> {
        let started = Instant::now();
        let method = out.label();
        let had_session = lock(&self.state).session_id.is_some();
        let resp = self.post(frame, method, deadline)?;
        let status = resp.status().as_u16();
        if status == 404 && had_session && may_reinit && method != "initialize" {
            drain(resp);
            let has_init = lock(&self.state).init_frame.is_some();
            if has_init {
                log::info!(
                    "server `{}`: session expired (HTTP 404); re-initializing",
                    self.server
                );
                self.reinitialize(deadline)?;
                self.exchange(frame, out, deadline, false)?;
                return Err(Exchange::Reinitialized);
            }
            return Err(Exchange::Failed(Box::new(Error::Transport {
                server: self.server.clone(),
                status: Some(404),
                detail: format!("POST {}: HTTP 404: session expired", self.url),
            })));
        }
        if method == "initialize" && had_session && may_reinit && matches!(status, 400 | 404) {
            // A configured session id the server no longer knows: start a fresh session.
            drain(resp);
            log::info!(
                "server `{}`: the configured session was refused (HTTP {status}); starting a new one",
                self.server
            );
            lock(&self.state).session_id = None;
            return self.exchange(frame, out, deadline, false);
        }
        if method == "initialize" && self.detect_legacy_sse && matches!(status, 400 | 404 | 405) {
            drain(resp);
            return Err(Exchange::Legacy(status));
        }
        if !(200..300).contains(&status) {
            return Err(status_error(&self.server, &format!("POST {}", self.url), resp).into());
        }
        if method == "initialize" {
            self.take_session_id(&resp);
        }
        if !out.is_request() {
            drain(resp);
            return Ok(());
        }
        let call = Call {
            want: out.id.as_ref(),
            method,
            started,
            deadline,
            deliver: true,
        };
        self.read_reply(resp, &call)?;
        Ok(())
    }

    fn take_session_id(&self, resp: &ureq::http::Response<ureq::Body>) {
        let sid = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(sid) = sid {
            log::debug!("server `{}`: session established", self.server);
            lock(&self.state).session_id = Some(sid);
        }
    }

    /// Reads a request's reply (JSON or SSE) until the response to `call.want`.
    fn read_reply(
        &self,
        resp: ureq::http::Response<ureq::Body>,
        call: &Call<'_>,
    ) -> Result<(), Error> {
        let what = format!("POST {}", self.url);
        if is_event_stream(&resp) {
            let reader = BufReader::new(resp.into_body().into_reader());
            return self.read_events(SseReader::new(reader), call);
        }
        let mut body = Vec::new();
        resp.into_body()
            .into_reader()
            .take(MAX_JSON_BODY)
            .read_to_end(&mut body)
            .map_err(|e| call.io_error(&self.server, &what, e))?;
        let found = if call.deliver {
            deliver_frame(&self.server, &*self.sink, &body, call.want)
        } else {
            !body.is_empty()
        };
        if found {
            Ok(())
        } else {
            Err(Error::Protocol {
                server: self.server.clone(),
                detail: format!(
                    "{what}: the reply did not contain the response to `{}`",
                    call.method
                ),
            })
        }
    }

    /// Reads SSE events until our response. A stream that ends (or breaks) after an event id is
    /// resumed with GET + `Last-Event-ID` after the server's `retry` delay, as often as it makes
    /// progress; the response may arrive on the resumed stream.
    fn read_events(&self, mut reader: ReplyStream, call: &Call<'_>) -> Result<(), Error> {
        let mut what = format!("POST {}", self.url);
        let mut stalled = 0;
        loop {
            let before = reader.parser().last_event_id().map(str::to_owned);
            let ended = loop {
                match reader.next_event() {
                    Ok(Some(ev)) if ev.is_message() => {
                        let data = ev.data.as_bytes();
                        let found = if call.deliver {
                            deliver_frame(&self.server, &*self.sink, data, call.want)
                        } else {
                            is_response_to(data, call.want)
                        };
                        if found {
                            self.hand_off(reader);
                            return Ok(());
                        }
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => break None,
                    Err(e) => break Some(call.io_error(&self.server, &what, e)),
                }
            };
            let parser = reader.into_parser();
            if parser.last_event_id().is_none() {
                return Err(ended.unwrap_or_else(|| {
                    self.closed_error(&format!(
                        "the server ended the response stream of `{}` before answering",
                        call.method
                    ))
                }));
            }
            if let Some(err) = ended {
                if matches!(err, Error::Timeout { .. }) {
                    return Err(err);
                }
                log::debug!("server `{}`: response stream broke: {err}", self.server);
            }
            stalled = if parser.last_event_id() == before.as_deref() {
                stalled + 1
            } else {
                1
            };
            if stalled > MAX_RESUMES {
                return Err(self.closed_error(&format!(
                    "the response stream of `{}` could not be resumed",
                    call.method
                )));
            }
            if self.wait_retry(&parser, call)? {
                return Ok(());
            }
            what = format!("GET {}", self.url);
            reader = self.resume(parser, call, &what)?;
        }
    }

    /// Waits the server's `retry` delay before resuming; `Ok(true)` when the response arrived on
    /// the standalone stream meanwhile.
    fn wait_retry(&self, parser: &SseParser, call: &Call<'_>) -> Result<bool, Error> {
        let delay = parser.retry().unwrap_or(DEFAULT_RETRY);
        if Instant::now() + delay >= call.deadline {
            // Waiting would outlast the caller's deadline.
            self.wait(call.deadline.saturating_duration_since(Instant::now()))?;
            return Err(call.timeout(&self.server));
        }
        self.wait(delay)?;
        Ok(self.take_answered(call.want))
    }

    /// GET with `Last-Event-ID`: the continuation of a response stream.
    fn resume(&self, parser: SseParser, call: &Call<'_>, what: &str) -> Result<ReplyStream, Error> {
        let last_id = parser.last_event_id().unwrap_or_default().to_owned();
        log::debug!(
            "server `{}`: resuming the `{}` stream after event {last_id:?}",
            self.server,
            call.method
        );
        let left = call.deadline.saturating_duration_since(Instant::now());
        let req = self
            .agent
            .get(&self.url)
            .config()
            .timeout_global(Some(left))
            .build()
            .header("Accept", "text/event-stream")
            .header("Last-Event-ID", last_id.as_str());
        let resp = self
            .prepare(req)?
            .call()
            .map_err(|e| call.ureq_error(&self.server, what, e))?;
        if resp.status() != 200 || !is_event_stream(&resp) {
            return Err(status_error(&self.server, what, resp));
        }
        Ok(SseReader::with_parser(
            BufReader::new(resp.into_body().into_reader()),
            parser,
        ))
    }

    /// Tells the server a timed-out request is abandoned (best effort, briefly bounded).
    fn cancel(&self, id: &RequestId) {
        let note = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "timed out"},
        });
        let frame = note.to_string().into_bytes();
        let deadline = Instant::now() + self.timeout.min(Duration::from_secs(1));
        match self.post(&frame, "notifications/cancelled", deadline) {
            Ok(resp) => drain(resp),
            Err(e) => log::debug!(
                "server `{}`: could not send the cancellation: {e}",
                self.server
            ),
        }
    }

    /// Passes the rest of an answered SSE reply to the drain thread (servers close the stream
    /// right after the response); reading it to its end returns the connection to the pool.
    /// When the drain queue is full the reply is dropped, which closes its connection.
    /// The thread starts with the first reply, under the lock close() takes, so none starts
    /// after close.
    fn hand_off(&self, reader: ReplyStream) {
        let mut drain = lock(&self.drain);
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        if drain.tx.is_none() {
            let (tx, rx) = crossbeam_channel::bounded::<ReplyStream>(MAX_DRAINING);
            let (server, sink) = (self.server.clone(), Arc::clone(&self.sink));
            match std::thread::Builder::new()
                .name(format!("mcp-drain:{}", self.server))
                .spawn(move || drain_replies(&server, &*sink, rx))
            {
                Ok(h) => {
                    drain.tx = Some(tx);
                    drain.thread = Some(h);
                }
                Err(e) => {
                    log::debug!("server `{}`: no reply-drain thread: {e}", self.server);
                    return;
                }
            }
        }
        if let Some(tx) = &drain.tx {
            let _ = tx.try_send(reader);
        }
    }

    /// Remembers the ids of responses met on the standalone stream (bounded list).
    fn note_responses(&self, data: &[u8]) {
        if let Ok(msgs) = Inbound::parse(data) {
            let mut seen = lock(&self.answered_elsewhere);
            for m in msgs {
                if let Inbound::Response(r) = m {
                    if let Some(id) = r.id {
                        if seen.len() >= 64 {
                            seen.remove(0);
                        }
                        seen.push(id);
                    }
                }
            }
        }
    }

    fn take_answered(&self, want: Option<&RequestId>) -> bool {
        let Some(want) = want else { return false };
        let mut seen = lock(&self.answered_elsewhere);
        match seen.iter().position(|id| id == want) {
            Some(i) => {
                seen.remove(i);
                true
            }
            None => false,
        }
    }

    /// Waits `delay`, or less when the transport is closed meanwhile.
    fn wait(&self, delay: Duration) -> Result<(), Error> {
        match self.stop_rx.recv_timeout(delay) {
            Err(RecvTimeoutError::Timeout) => Ok(()),
            _ => Err(self.closed_error("the client closed the connection")),
        }
    }

    /// Replays the remembered initialize request and initialized notification without a session
    /// id. The initialize response is consumed here, not delivered: nobody is waiting for it.
    fn reinitialize(&self, deadline: Instant) -> Result<(), Error> {
        let (init, initialized) = {
            let mut st = lock(&self.state);
            st.session_id = None;
            (st.init_frame.clone(), st.initialized_frame.clone())
        };
        let Some(init) = init else {
            return Ok(());
        };
        let started = Instant::now();
        let out = Outbound::peek(&init);
        let resp = self.post(&init, "initialize", deadline)?;
        if !resp.status().is_success() {
            return Err(status_error(
                &self.server,
                &format!("re-initialize POST {}", self.url),
                resp,
            ));
        }
        self.take_session_id(&resp);
        let call = Call {
            want: out.id.as_ref(),
            method: "initialize",
            started,
            deadline,
            deliver: false,
        };
        self.read_reply(resp, &call)?;
        if let Some(note) = initialized {
            let resp = self.post(&note, "notifications/initialized", deadline)?;
            if !resp.status().is_success() {
                return Err(status_error(
                    &self.server,
                    &format!("re-initialize POST {}", self.url),
                    resp,
                ));
            }
            drain(resp);
        }
        Ok(())
    }

    /// Sends DELETE with the session id; 405 means the server does not support it.
    fn delete_session(&self) {
        if lock(&self.state).session_id.is_none() {
            return;
        }
        let req = self
            .agent
            .delete(&self.url)
            .config()
            .timeout_global(Some(self.timeout.min(Duration::from_secs(5))))
            .build();
        let Ok(req) = self.prepare(req) else { return };
        match req.call() {
            Ok(resp) => {
                log::debug!(
                    "server `{}`: DELETE session: HTTP {}",
                    self.server,
                    resp.status()
                );
                drain(resp);
            }
            Err(e) => log::debug!("server `{}`: DELETE session failed: {e}", self.server),
        }
    }

    /// The standalone GET stream: server requests and notifications outside any POST.
    fn standalone_stream(self: Arc<Self>, opened: Sender<()>) {
        let mut opened = Some(opened);
        let mut parser = SseParser::new();
        let mut failures: u32 = 0;
        loop {
            if self.closed.load(Ordering::SeqCst) {
                return;
            }
            let req = self
                .agent
                .get(&self.url)
                .config()
                .timeout_connect(Some(self.timeout))
                .timeout_recv_response(Some(self.timeout))
                .build()
                .header("Accept", "text/event-stream");
            let req = match parser.last_event_id() {
                Some(id) => req.header("Last-Event-ID", id),
                None => req,
            };
            let Ok(req) = self.prepare(req) else { return };
            let answer = req.call();
            drop(opened.take());
            match answer {
                Ok(resp) if resp.status() == 200 && is_event_stream(&resp) => {
                    log::debug!("server `{}`: standalone GET stream open", self.server);
                    let mut reader = SseReader::with_parser(
                        BufReader::new(resp.into_body().into_reader()),
                        std::mem::take(&mut parser),
                    );
                    loop {
                        match reader.next_event() {
                            Ok(Some(ev)) => {
                                failures = 0;
                                if ev.is_message() {
                                    self.note_responses(ev.data.as_bytes());
                                    deliver_frame(
                                        &self.server,
                                        &*self.sink,
                                        ev.data.as_bytes(),
                                        None,
                                    );
                                }
                            }
                            Ok(None) => break,
                            Err(e) => {
                                if !self.closed.load(Ordering::SeqCst) {
                                    log::debug!("server `{}`: GET stream broke: {e}", self.server);
                                }
                                break;
                            }
                        }
                    }
                    parser = reader.into_parser();
                }
                Ok(resp) => {
                    log::debug!(
                        "server `{}`: no standalone GET stream (HTTP {})",
                        self.server,
                        resp.status()
                    );
                    drain(resp);
                    return;
                }
                Err(e) => {
                    if self.closed.load(Ordering::SeqCst) {
                        return;
                    }
                    log::debug!("server `{}`: GET stream failed: {e}", self.server);
                }
            }
            failures += 1;
            if failures > 2 {
                log::debug!("server `{}`: giving up on the GET stream", self.server);
                return;
            }
            let backoff = DEFAULT_RETRY.mul_f64(1.5f64.powi(failures as i32 - 1));
            let delay = parser.retry().unwrap_or(backoff);
            if self.stop_rx.recv_timeout(delay) != Err(RecvTimeoutError::Timeout) {
                return;
            }
        }
    }
}

fn is_response_to(data: &[u8], want: Option<&RequestId>) -> bool {
    match Inbound::parse(data) {
        Ok(msgs) => msgs.iter().any(|m| match m {
            Inbound::Response(r) => want.is_none() || r.id.as_ref() == want,
            _ => false,
        }),
        Err(_) => false,
    }
}

/// The drain thread: reads answered SSE replies to their end, delivering anything that still
/// comes, until the transport closes.
fn drain_replies(server: &str, sink: &dyn Sink, replies: Receiver<ReplyStream>) {
    for mut reply in replies {
        loop {
            match reply.next_event() {
                Ok(Some(ev)) if ev.is_message() => {
                    deliver_frame(server, sink, ev.data.as_bytes(), None);
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    log::debug!("server `{server}`: an answered reply stream broke: {e}");
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! The transport driven directly, with a sink that records what it is handed.

    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::test_support::{result, HttpServer};
    use super::*;

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
            };
            self.seen.lock().unwrap().push(line);
        }

        fn closed(&self, detail: String, _stderr_tail: String) {
            self.closed.lock().unwrap().push(detail);
            let _ = self.closed_tx.send(());
        }
    }

    fn transport(url: &str, sink: Arc<Recorder>) -> Arc<dyn Transport> {
        let cfg = crate::config::ServerConfig::http("t", url);
        let crate::config::TransportConfig::StreamableHttp(http) = cfg.transport() else {
            unreachable!("an http config")
        };
        open("t", http, Duration::from_secs(5), sink).expect("open")
    }

    fn call_frame(id: i64) -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "x", "arguments": {}}})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn an_sse_reply_delivers_server_messages_before_the_response() {
        let srv = HttpServer::start(|req, conn| {
            let id = req.json()["id"].clone();
            conn.sse_start(&[]);
            let ping = json!({"jsonrpc": "2.0", "id": "s1", "method": "ping"});
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "working"}});
            let _ = conn.event(None, &ping);
            let _ = conn.chunk("retry: 10\n: keep-alive\n\n");
            let _ = conn.event(Some("e1"), &note);
            let _ = conn.event(Some("e2"), &result(&id, json!({"content": []})));
            conn.sse_end();
        });
        let sink = Arc::new(Recorder::default());
        let t = transport(&srv.url("/mcp"), sink.clone());
        t.send(call_frame(1), Some(Instant::now() + Duration::from_secs(5)))
            .expect("send");
        t.close().expect("close");
        assert_eq!(
            *sink.seen.lock().unwrap(),
            [
                "request ping",
                "notification notifications/message",
                "response 1"
            ]
        );
        assert!(sink.closed.lock().unwrap().is_empty());
    }

    #[test]
    fn a_notification_accepts_any_2xx_and_delivers_nothing() {
        // Some servers answer notifications with `200 {"jsonrpc":"2.0","result":{}}`.
        let srv = HttpServer::start(|_req, conn| {
            conn.json(200, &[], &json!({"jsonrpc": "2.0", "result": {}}))
        });
        let sink = Arc::new(Recorder::default());
        let t = transport(&srv.url("/mcp"), sink.clone());
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        t.send(note.to_string().into_bytes(), None).expect("send");
        t.close().expect("close");
        assert!(sink.seen.lock().unwrap().is_empty());
    }

    #[test]
    fn a_json_reply_without_our_response_is_a_protocol_error() {
        let srv = HttpServer::start(|_req, conn| {
            conn.json(200, &[], &json!({"jsonrpc": "2.0", "id": 99, "result": {}}))
        });
        let sink = Arc::new(Recorder::default());
        let t = transport(&srv.url("/mcp"), sink.clone());
        let err = t
            .send(call_frame(1), Some(Instant::now() + Duration::from_secs(5)))
            .expect_err("no response to id 1");
        assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
        t.close().expect("close");
    }

    #[test]
    fn header_values_are_redacted_in_debug() {
        let headers = RequestHeaders::new(
            vec![("Authorization".into(), "Bearer s3cret".into())],
            Some(AuthProvider::new(|| Ok("Bearer other".into()))),
        );
        let shown = format!("{headers:?}");
        assert!(shown.contains("Authorization"), "{shown}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("other"),
            "{shown}"
        );
    }

    #[test]
    fn sending_after_close_is_a_closed_error() {
        let srv = HttpServer::start(|_req, conn| conn.accepted());
        let sink = Arc::new(Recorder::default());
        let t = transport(&srv.url("/mcp"), sink);
        t.close().expect("close");
        t.close().expect("close is idempotent");
        let err = t.send(call_frame(1), None).expect_err("closed");
        assert!(matches!(err, Error::Closed { .. }), "{err:?}");
    }
}
