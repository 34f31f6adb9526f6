//! Legacy HTTP+SSE transport (MCP 2024-11-05).
//!
//! ```text
//!  open ──GET url──> stream thread ──first `endpoint` event──> resolve, same origin? ──> ready
//!                         │                                      └ other origin ──> Error::Connect
//!                         └── `message` events ──> Sink::deliver
//!                         └── an event over max_message_bytes ──> skipped, logged; a response
//!                         │                                       in it fails its request
//!                         └── stream ends ──> Sink::closed (unless close() was called)
//!  send ──POST endpoint──> 2xx (202 Accepted) ──> Ok; the answer comes on the stream
//!                          401/403 ──> Error::Unauthorized
//!  close ──> shut the agent's sockets (unblocks the stream read) ──> join the thread
//! ```
//!
//! Opening is bounded by `timeout`: the GET's connect and response-header phases, then the
//! wait for the `endpoint` event. The configured headers and the auth provider's `Authorization`
//! go on the GET and on every POST (to the configured URL's origin only).
//!
//! The stream and the POSTs follow redirects as Streamable HTTP does (same origin, at most 5;
//! see `http/redirect.rs`); the endpoint resolves against the URL that finally answered the GET
//! and must be on its origin. The stream is not reconnected when it ends: the session lives
//! on it (its endpoint names it), so its end is the connection's end.

use crate::sync::lock;
use std::fmt;
use std::io::BufReader;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{RecvTimeoutError, Sender};

use super::sse_parser::{EventTooLarge, SseReader};
use super::web::{
    self, deliver_frame, drain, map_ureq, origin, resolve_reference, skip_oversized, status_error,
    Limit, RequestHeaders, Requester, Verb,
};
use super::{Closing, Outgoing, Sink, Transport};
use crate::config::{redact_url, Limits, SseConfig};
use crate::error::{ConnectError, ConnectErrorKind, Error};

/// The header naming the protocol version.
const VERSION_HEADER: &str = "MCP-Protocol-Version";

struct Inner {
    server: String,
    url: String,
    req: Requester,
    timeout: Duration,
    /// The largest event accepted (`Limits::max_message_bytes`).
    max_message: usize,
    sink: Arc<dyn Sink>,
    closing: AtomicBool,
    /// The negotiated version, from the handshake's end (see `send`).
    protocol_version: Mutex<Option<String>>,
}

/// The legacy HTTP+SSE connection handle.
pub(crate) struct SseTransport {
    inner: Arc<Inner>,
    endpoint: String,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl fmt::Debug for SseTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseTransport")
            .field("server", &self.inner.server)
            .field("url", &redact_url(&self.inner.url))
            .field("endpoint", &redact_url(&self.endpoint))
            .field("headers", &self.inner.req.headers)
            .finish_non_exhaustive()
    }
}

/// Opens a legacy HTTP+SSE transport: GET the stream and wait for its `endpoint` event.
pub(crate) fn open(
    server: &str,
    cfg: &SseConfig,
    timeout: Duration,
    limits: &Limits,
    sink: Arc<dyn Sink>,
) -> Result<Arc<dyn Transport>, Error> {
    let req = Requester::new(
        server,
        &cfg.url,
        web::agent(
            &cfg.root_certificates,
            super::proxy::for_ureq(server, &cfg.proxy, &cfg.url)?,
        ),
        RequestHeaders::new(cfg.headers.clone(), cfg.auth.clone()),
        cfg.follow_cross_origin_redirects,
    );
    open_with(&cfg.url, req, timeout, limits.max_message_bytes, sink)
}

/// [`open`] with the requester already built (Streamable HTTP's auto-detection fallback hands
/// over its own, so the legacy stream sends the same headers, trusts the same roots and follows
/// redirects the same way).
pub(crate) fn open_with(
    url: &str,
    req: Requester,
    timeout: Duration,
    max_message: usize,
    sink: Arc<dyn Sink>,
) -> Result<Arc<dyn Transport>, Error> {
    let server = req.server.clone();
    let server = server.as_str();
    let shown = redact_url(url);
    let connect_err =
        |kind: ConnectErrorKind, detail: String| ConnectError::new(server, &shown, kind, detail);
    if !crate::transport::web::url::is_http(url) {
        return Err(connect_err(
            ConnectErrorKind::Unreachable,
            format!("`{shown}` is not an http:// or https:// URL"),
        )
        .into());
    }
    let inner = Arc::new(Inner {
        server: server.to_owned(),
        url: url.to_owned(),
        req,
        timeout,
        max_message,
        sink,
        closing: AtomicBool::new(false),
        protocol_version: Mutex::new(None),
    });
    let (ready_tx, ready_rx) = crossbeam_channel::bounded(1);
    let started = Instant::now();
    let thread = {
        let inner = Arc::clone(&inner);
        std::thread::Builder::new()
            .name(format!("mcp-sse:{server}"))
            .spawn(move || inner.run(ready_tx))
            .map_err(|e| {
                let detail = format!("{shown}: could not start the SSE thread: {e}");
                connect_err(ConnectErrorKind::Unreachable, detail).with_source(e)
            })?
    };
    let stop = |inner: &Inner, thread: JoinHandle<()>| {
        inner.closing.store(true, Ordering::SeqCst);
        inner.req.agent.clone().shutdown();
        let _ = thread.join();
    };
    match ready_rx.recv_timeout(timeout) {
        Ok(Ok(endpoint)) => {
            log::debug!(
                "server `{server}`: legacy SSE endpoint is {}",
                inner.sink.redact(&endpoint)
            );
            Ok(Arc::new(SseTransport {
                inner,
                endpoint,
                thread: Mutex::new(Some(thread)),
            }))
        }
        Ok(Err(e)) => {
            stop(&inner, thread);
            Err(e.into_connect(&shown, String::new))
        }
        Err(RecvTimeoutError::Timeout) => {
            stop(&inner, thread);
            let secs = started.elapsed().as_secs_f64();
            Err(connect_err(
                ConnectErrorKind::TimedOut,
                format!("GET {shown}: no `endpoint` event within {secs:.1} s"),
            )
            .into())
        }
        Err(RecvTimeoutError::Disconnected) => {
            stop(&inner, thread);
            Err(connect_err(
                ConnectErrorKind::Closed,
                format!("GET {shown}: the stream ended before the `endpoint` event"),
            )
            .into())
        }
    }
}

impl Inner {
    fn connect_err(&self, kind: ConnectErrorKind, detail: String) -> Error {
        ConnectError::new(&self.server, &redact_url(&self.url), kind, detail).into()
    }

    /// The stream thread: reports the endpoint (or the failure) on `ready`, then delivers.
    fn run(self: Arc<Self>, ready: Sender<Result<String, Error>>) {
        let what = format!("GET {}", redact_url(&self.url));
        let started = Instant::now();
        let sent = self.req.send(
            Verb::Get,
            &self.url,
            &[("Accept", "text/event-stream")],
            Limit::Open(self.timeout),
            |what, e| map_ureq(&self.server, what, "connect", started, None, e),
        );
        let sent = match sent {
            Ok(s) => s,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let (resp, stream_url) = (sent.resp, sent.url);
        if resp.status() != 200 {
            let _ = ready.send(Err(status_error(&self.server, &what, resp)));
            return;
        }
        let mut reader = SseReader::new(
            BufReader::new(resp.into_body().into_reader()),
            self.max_message,
        );
        let mut ready = Some(ready);
        let end = loop {
            match reader.next_event() {
                Ok(Some(ev)) if ev.event.as_deref() == Some("endpoint") => {
                    let Some(tx) = ready.take() else {
                        log::debug!("server `{}`: ignoring a second endpoint event", self.server);
                        continue;
                    };
                    let result = resolve_endpoint(&stream_url, ev.data.trim()).map_err(|why| {
                        self.connect_err(ConnectErrorKind::Protocol, format!("{what}: {why}"))
                    });
                    let refused = result.is_err();
                    let _ = tx.send(result);
                    if refused {
                        return;
                    }
                }
                Ok(Some(ev)) if ev.is_message() => {
                    if ready.is_some() {
                        log::debug!(
                            "server `{}`: message before the endpoint event",
                            self.server
                        );
                    }
                    deliver_frame(&self.server, &*self.sink, ev.data.as_bytes(), None);
                }
                Ok(Some(ev)) => log::debug!(
                    "server `{}`: ignoring SSE event {:?}",
                    self.server,
                    ev.event
                ),
                Ok(None) => break "the server ended the SSE stream".to_owned(),
                Err(e) => {
                    if let Some(t) = EventTooLarge::find(&e) {
                        skip_oversized(&self.server, &what, &*self.sink, t);
                        continue;
                    }
                    break format!("the SSE stream broke: {e}");
                }
            }
        };
        if let Some(tx) = ready {
            let _ = tx.send(Err(self.connect_err(
                ConnectErrorKind::Closed,
                format!("{what}: {end} before the `endpoint` event"),
            )));
            return;
        }
        if !self.closing.load(Ordering::SeqCst) {
            log::debug!("server `{}`: {end}", self.server);
            self.sink.closed(end, String::new());
        }
    }
}

impl Transport for SseTransport {
    fn send(&self, out: Outgoing) -> Result<(), Error> {
        let inner = &self.inner;
        if inner.closing.load(Ordering::SeqCst) {
            return Err(Error::Closed {
                server: inner.server.clone(),
                detail: "the client closed the connection".into(),
                stderr_tail: String::new(),
            });
        }
        let method = out.label();
        let started = Instant::now();
        let deadline = out
            .deadline
            .unwrap_or_else(|| crate::deadline::add(started, inner.timeout));
        if deadline <= started {
            return Err(Error::Timeout {
                server: inner.server.clone(),
                method: method.to_owned(),
                after: Duration::ZERO,
            });
        }
        if out.method() == "notifications/initialized" {
            // The end of the handshake names the negotiated version: every later message
            // carries it, answers to the server's requests too.
            *lock(&inner.protocol_version) = out.header(VERSION_HEADER).map(str::to_owned);
        }
        let version = lock(&inner.protocol_version).clone();
        let mut headers = vec![("Content-Type", "application/json")];
        headers.extend(out.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        if let (Some(v), None) = (version.as_deref(), out.header(VERSION_HEADER)) {
            headers.push((VERSION_HEADER, v));
        }
        let what = format!("POST {}", redact_url(&self.endpoint));
        let resp = inner
            .req
            .send(
                Verb::Post(&out.frame),
                &self.endpoint,
                &headers,
                Limit::Until(deadline),
                |what, e| map_ureq(&inner.server, what, method, started, Some(deadline), e),
            )?
            .resp;
        if !resp.status().is_success() {
            return Err(status_error(&inner.server, &what, resp));
        }
        drain(resp);
        Ok(())
    }

    /// Both [`Closing`]s are the same: there is no close handshake, the stream's socket is shut.
    fn close(&self, _how: Closing) -> Result<(), Error> {
        let inner = &self.inner;
        inner.closing.store(true, Ordering::SeqCst);
        let Some(thread) = lock(&self.thread).take() else {
            return Ok(());
        };
        inner.req.agent.clone().shutdown();
        if thread.join().is_err() {
            log::warn!("server `{}`: the SSE thread panicked", inner.server);
        }
        Ok(())
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        let _ = self.close(Closing::Graceful);
    }
}

/// Resolves the `endpoint` event's URI against the stream URL and refuses another origin.
pub(crate) fn resolve_endpoint(base: &str, endpoint: &str) -> Result<String, String> {
    if endpoint.is_empty() {
        return Err("the `endpoint` event is empty".into());
    }
    let Some(resolved) = resolve_reference(base, endpoint) else {
        let shown: String = endpoint.chars().take(200).collect();
        return Err(format!(
            "the `endpoint` event `{}` is not a valid URL",
            redact_url(&shown)
        ));
    };
    if origin(base) == origin(&resolved) {
        Ok(resolved)
    } else {
        Err(format!(
            "refusing endpoint `{}`: its origin differs from the stream's",
            redact_url(&resolved)
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use crate::transport::Closing;

    use serde_json::json;

    use super::resolve_endpoint;
    use crate::transport::http::test_support::mcp::McpSse;
    use crate::transport::http::tests::Recorder;

    #[test]
    fn the_end_of_the_stream_is_reported_once() {
        let srv = McpSse::start("/messages?sid=1");
        let sink = Arc::new(Recorder::default());
        let cfg = crate::config::SseConfig::new(srv.server.url("/sse"));
        let limits = crate::config::Limits::default();
        let t =
            super::open("s", &cfg, Duration::from_secs(5), &limits, sink.clone()).expect("open");
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "die", "arguments": {}}});
        t.send(
            crate::transport::Outgoing::parse(call.to_string().into_bytes())
                .by(Instant::now() + Duration::from_secs(5)),
        )
        .expect("POST accepted");
        sink.closed_rx
            .recv_timeout(Duration::from_secs(5))
            .expect("the end is reported");
        t.close(Closing::Graceful).expect("close");
        assert_eq!(sink.closed.lock().unwrap().len(), 1);
    }

    #[test]
    fn close_does_not_report_an_end() {
        let srv = McpSse::start("/messages?sid=1");
        let sink = Arc::new(Recorder::default());
        let cfg = crate::config::SseConfig::new(srv.server.url("/sse"));
        let limits = crate::config::Limits::default();
        let t =
            super::open("s", &cfg, Duration::from_secs(5), &limits, sink.clone()).expect("open");
        t.close(Closing::Graceful).expect("close");
        assert!(sink.closed.lock().unwrap().is_empty());
    }

    #[test]
    fn the_version_the_handshake_ends_with_goes_on_every_later_post_once() {
        use crate::protocol::jsonrpc::RequestId;
        use crate::transport::Outgoing;
        let srv = McpSse::start("/messages?sid=1");
        let sink = Arc::new(Recorder::default());
        let cfg = crate::config::SseConfig::new(srv.server.url("/sse"));
        let limits = crate::config::Limits::default();
        let t = super::open("s", &cfg, Duration::from_secs(5), &limits, sink).expect("open");
        let version = vec![("MCP-Protocol-Version".to_owned(), "2025-06-18".to_owned())];
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        t.send(Outgoing::parse(done.to_string().into_bytes()).with_headers(version.clone()))
            .expect("initialized");
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        t.send(Outgoing::parse(call.to_string().into_bytes()).with_headers(version))
            .expect("a request carrying the version itself");
        let answer = Outgoing::response(&RequestId::Number(7), "ping", &Ok(json!({})));
        t.send(answer).expect("an answer carrying no header");
        t.close(crate::transport::Closing::Graceful).expect("close");
        let posts: Vec<_> = srv
            .server
            .requests()
            .into_iter()
            .filter(|r| r.method == "POST")
            .collect();
        assert_eq!(posts.len(), 3, "{posts:?}");
        for p in &posts {
            assert_eq!(p.header_values("mcp-protocol-version"), vec!["2025-06-18"]);
        }
    }

    #[test]
    fn endpoints_resolve_against_the_stream_url() {
        let base = "http://127.0.0.1:8000/sse";
        assert_eq!(
            resolve_endpoint(base, "/messages?sessionId=1").as_deref(),
            Ok("http://127.0.0.1:8000/messages?sessionId=1")
        );
        assert_eq!(
            resolve_endpoint("http://h:1/a/sse", "messages/?session_id=2").as_deref(),
            Ok("http://h:1/a/messages/?session_id=2")
        );
        assert_eq!(
            resolve_endpoint(base, "http://127.0.0.1:8000/m").as_deref(),
            Ok("http://127.0.0.1:8000/m")
        );
        assert_eq!(
            resolve_endpoint("http://H:80/sse", "http://h/m").as_deref(),
            Ok("http://h/m")
        );
    }

    #[test]
    fn another_origin_is_refused() {
        let base = "http://127.0.0.1:8000/sse";
        assert!(resolve_endpoint(base, "http://evil.example/messages").is_err());
        assert!(resolve_endpoint(base, "//evil.example/messages").is_err());
        assert!(resolve_endpoint(base, "https://127.0.0.1:8000/m").is_err());
        assert!(resolve_endpoint(base, "http://127.0.0.1:8001/m").is_err());
    }
}
