//! Connecting: opening the configured transport and running the `initialize` handshake.

use crate::sync::read_lock;
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;

use super::connection::Connection;
use super::dispatch::{ClientSink, DispatchCtx};
use super::era_cache;
use super::options::CallOptions;
use super::Client;
use crate::config::{ProtocolMode, TransportConfig};
use crate::error::{ConnectError, ConnectErrorKind, Error};
use crate::model::{ClientCapabilities, InitializeResult, RootsCapability};
use crate::protocol::session::{initialize_params, negotiate, Session};
use crate::protocol::wire::Wire;
use crate::transport::http::LegacyRefusal;
use crate::transport::stdio::ConnectionPoller;
use crate::transport::{stdio, Closing, Outgoing, StderrTail, Transport};

/// What one connection attempt is made of besides its transport (see `Client::parts`).
struct Parts {
    session: Arc<Session>,
    ctx: Arc<DispatchCtx>,
    sink: Arc<ClientSink>,
    /// The server's last stderr lines, kept by a stdio transport.
    stderr_tail: StderrTail,
    /// What a sandboxed stdio server's sandbox applied.
    sandbox: Option<crate::config::SandboxReport>,
}

impl Client {
    pub(super) fn capabilities_to_declare(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        if read_lock(&self.roots).is_some() {
            caps.roots = Some(RootsCapability::default().with_list_changed(true));
        }
        if self.handlers.sampling.is_some() {
            caps.sampling = Some(json!({}));
        }
        if self.handlers.elicitation.is_some() {
            caps.elicitation = Some(if self.handlers.elicitation_url {
                json!({ "form": {}, "url": {} })
            } else {
                json!({ "form": {} })
            });
        }
        caps
    }

    /// What connecting reaches for, as messages show it: the command line in backquotes, or the
    /// URL without its password and query; either without anything that came from a variable.
    pub(crate) fn target(&self) -> String {
        let shown = match self.config.transport() {
            TransportConfig::Stdio(cfg) => format!("`{}`", stdio::command_line(cfg)),
            other => other.url().unwrap_or_default().to_owned(),
        };
        self.config.redact(&shown)
    }

    /// Opens the transport and runs the handshake. Every failure after the config check is an
    /// [`Error::Spawn`] or an [`Error::Connect`].
    pub(super) fn establish(&self) -> Result<Connection, Error> {
        self.config.validate()?;
        let started = Instant::now();
        let server: Arc<str> = self.config.name().into();
        let timeout = self.config.timeout();
        // One deadline for the whole of connecting: opening the transport, the era probe and
        // the handshake share the timeout (a probe that goes unanswered does not double it).
        let deadline = crate::deadline::add(started, timeout);
        let mut parts = self.parts(&server);
        if let Some(opener) = &self.opener {
            let t = opener.open(&server, parts.sink.clone());
            return self.finish(server, parts, t, opener.target(), deadline);
        }
        let target = self.target();
        let transport: Arc<dyn Transport> = match self.config.transport() {
            TransportConfig::Stdio(cfg) => {
                // A client given no poller uses the process-wide one (its thread ends a moment
                // after the last server closes).
                let poller = match &self.poller {
                    Some(p) => p.clone(),
                    None => ConnectionPoller::process_default().map_err(|e| {
                        let detail = format!("{target}: could not create a poller: {e}");
                        ConnectError::new(&server, &target, ConnectErrorKind::Unreachable, detail)
                            .with_source(e)
                    })?,
                };
                let t = stdio::open(
                    &server,
                    cfg,
                    self.config.sandbox().as_ref(),
                    self.config.limits(),
                    &poller,
                    parts.sink.clone(),
                    parts.stderr_tail.clone(),
                )?;
                parts.sandbox = t.sandbox_report();
                t
            }
            // A 401 on the event stream itself authorizes too (one on `initialize` is handled
            // with every other request).
            TransportConfig::Sse(cfg) => {
                crate::auth::with_authorization(self.oauth_hook().as_ref(), &server, || {
                    crate::transport::sse::open(
                        &server,
                        cfg,
                        timeout,
                        self.config.limits(),
                        parts.sink.clone(),
                    )
                })?
            }
            TransportConfig::WebSocket(cfg) => crate::transport::ws::open(
                &server,
                cfg,
                timeout,
                self.config.limits(),
                parts.sink.clone(),
            )?,
            TransportConfig::StreamableHttp(cfg) => {
                let http = crate::transport::http::open(
                    &server,
                    cfg,
                    timeout,
                    self.config.limits(),
                    parts.sink.clone(),
                )?;
                let first = self.finish(
                    Arc::clone(&server),
                    parts,
                    http.clone(),
                    target.clone(),
                    deadline,
                );
                return match (first, http.legacy_refusal()) {
                    (Err(_), Some(refusal)) if cfg.detect_legacy_sse => {
                        self.fall_back_to_legacy_sse(server, cfg, refusal, &target, deadline)
                    }
                    (first, _) => first,
                };
            }
        };
        self.finish(server, parts, transport, target, deadline)
    }

    /// The protocol session, the dispatcher's context and the sink of one connection attempt.
    fn parts(&self, server: &Arc<str>) -> Parts {
        let session =
            Arc::new(Session::new().with_max_echo_bytes(self.config.limits().max_echo_bytes));
        let ctx = Arc::new(DispatchCtx::new(
            Arc::clone(server),
            Arc::clone(&self.handlers),
            Arc::clone(&self.roots),
            self.config.timeout(),
            *self.config.limits(),
            self.config.secret_values(),
        ));
        let sink = Arc::new(ClientSink::new(Arc::clone(&session), Arc::clone(&ctx)));
        Parts {
            session,
            ctx,
            sink,
            stderr_tail: StderrTail::default(),
            sandbox: None,
        }
    }

    /// Streamable HTTP refused `initialize` as a legacy server does (400, 404 or 405) and
    /// detection is on: connect over legacy HTTP+SSE at the same endpoint, with the same
    /// headers, roots, proxy and redirect rule, within what is left of the timeout. When that
    /// fails too, the error gives both reasons.
    fn fall_back_to_legacy_sse(
        &self,
        server: Arc<str>,
        cfg: &crate::config::HttpConfig,
        refusal: LegacyRefusal,
        target: &str,
        deadline: Instant,
    ) -> Result<Connection, Error> {
        log::info!(
            "server `{server}`: Streamable HTTP refused; trying legacy HTTP+SSE at {}",
            self.config.redact(&refusal.url)
        );
        let mut legacy = crate::config::SseConfig::new(refusal.url.clone());
        legacy.headers = cfg.headers.clone();
        legacy.auth = cfg.auth.clone();
        legacy.root_certificates = cfg.root_certificates.clone();
        legacy.follow_cross_origin_redirects = cfg.follow_cross_origin_redirects;
        legacy.proxy = cfg.proxy.clone();
        let both = |e: Error| -> Error {
            log::debug!("server `{server}`: legacy SSE fallback failed: {e}");
            Error::Transport {
                server: server.to_string(),
                status: Some(refusal.status),
                detail: format!("{} (and legacy HTTP+SSE failed too: {e})", refusal.shown),
                source: Some(Box::new(e)),
            }
            .into_connect(target, String::new)
        };
        let parts = self.parts(&server);
        let left = deadline.saturating_duration_since(Instant::now());
        let limit = if left.is_zero() {
            std::time::Duration::from_millis(1)
        } else {
            left
        };
        let transport = crate::transport::sse::open(
            &server,
            &legacy,
            limit,
            self.config.limits(),
            parts.sink.clone(),
        )
        .map_err(both)?;
        self.finish(server, parts, transport, target.to_owned(), deadline)
    }

    /// The OAuth settings and the server URL, when the server uses OAuth.
    pub(super) fn oauth_hook(&self) -> Option<(crate::auth::OAuth, String)> {
        let oauth = crate::auth::OAuth::of(self.config.oauth()?);
        // Requests to the authorization server use this server's proxy and TLS roots.
        oauth.bind(&self.config);
        Some((oauth, self.config.url()?.to_owned()))
    }

    /// Runs the handshake on an opened transport.
    fn finish(
        &self,
        server: Arc<str>,
        parts: Parts,
        transport: Arc<dyn Transport>,
        target: String,
        deadline: Instant,
    ) -> Result<Connection, Error> {
        let Parts {
            session,
            ctx,
            sink,
            stderr_tail,
            sandbox,
        } = parts;
        let timeout = self.config.timeout();
        let _ = ctx.transport.set(Arc::downgrade(&transport));
        let mut conn = Connection {
            server: Arc::clone(&server),
            session,
            sink,
            transport,
            stderr_tail,
            sandbox,
            init: None,
            default_timeout: timeout,
            oauth: self.oauth_hook(),
            task_tools: Default::default(),
            wire: Wire::legacy(),
            listens: Default::default(),
            sends_headers: matches!(
                self.config.transport(),
                TransportConfig::StreamableHttp(_) | TransportConfig::Sse(_)
            ),
        };
        match self.open_era(&mut conn, &target, deadline) {
            Ok(init) => {
                conn.init = Some(init);
                Ok(conn)
            }
            Err(e) => {
                // The connect timeout may be spent already: a connection that never became
                // usable is torn down without a close handshake or a grace for the server.
                let _ = conn.transport.close(Closing::Abort);
                let _ = conn.shutdown();
                Err(e)
            }
        }
    }

    /// The handshake of the configured protocol mode: `server/discover` (modern), `initialize`
    /// (legacy), or the probe and its fallback (auto; legacy HTTP+SSE and WebSocket servers are
    /// not probed).
    ///
    /// In auto mode, a transport whose probe fell back earlier in this process is not probed
    /// again, and connections to one transport that start together share one probe (see
    /// `era_cache.rs`).
    fn open_era(
        &self,
        conn: &mut Connection,
        target: &str,
        deadline: Instant,
    ) -> Result<InitializeResult, Error> {
        let mut probing = None;
        let probe = match self.config.protocol() {
            ProtocolMode::Legacy => return self.handshake(conn, target, deadline),
            ProtocolMode::Modern => false,
            _ => {
                if matches!(
                    self.config.transport(),
                    TransportConfig::Sse(_) | TransportConfig::WebSocket(_)
                ) {
                    return self.handshake(conn, target, deadline);
                }
                let seen = self.era_key();
                match era_cache::plan(seen, deadline) {
                    era_cache::Plan::Legacy => {
                        return self
                            .handshake(conn, target, deadline)
                            .inspect_err(|_| era_cache::forget(seen));
                    }
                    era_cache::Plan::Probe(p) => probing = Some(p),
                }
                true
            }
        };
        match self.discover(conn, target, probe, deadline)? {
            Some(init) => {
                if let Some(p) = &probing {
                    p.answered();
                }
                Ok(init)
            }
            None => {
                // Connections to the same transport waiting for this probe skip theirs now.
                if let Some(p) = &probing {
                    p.fell_back();
                }
                self.handshake(conn, target, deadline).inspect_err(|_| {
                    if let Some(p) = &probing {
                        p.forget();
                    }
                })
            }
        }
    }

    /// The identity under which the era of this server is remembered; `None` for a server
    /// reached through an opener (its config names no real transport).
    fn era_key(&self) -> Option<u64> {
        if self.opener.is_some() {
            return None;
        }
        era_cache::key(self.config.transport())
    }

    /// Sends `initialize`, checks the answer and sends `notifications/initialized`. A timeout,
    /// a closed connection, the server's JSON-RPC error, a transport or protocol failure
    /// becomes an [`Error::Connect`] of the matching [`ConnectErrorKind`].
    fn handshake(
        &self,
        conn: &mut Connection,
        target: &str,
        deadline: Instant,
    ) -> Result<InitializeResult, Error> {
        let server = self.server_name().to_owned();
        // The errors quote the server's stderr through a handle of their own: the handshake
        // changes the connection's era meanwhile.
        let tail = conn.stderr_tail.clone();
        let failed = |e: Error| {
            // Connecting has one timeout, whatever part of it a probe took first: the message
            // says the timeout that was set.
            let e = match e {
                Error::Timeout { server, method, .. } => Error::Timeout {
                    server,
                    method,
                    after: self.config.timeout(),
                },
                e => e,
            };
            e.into_connect(target, || tail.text())
        };
        let opts =
            CallOptions::new().timeout(conn.left_of(deadline, "initialize").map_err(failed)?);
        let protocol = |detail: String| {
            ConnectError::new(&server, target, ConnectErrorKind::Protocol, detail)
                .with_stderr_tail(tail.text())
        };
        let params = initialize_params(&self.capabilities_to_declare(), &self.client_info);
        let raw = conn
            .request("initialize", Some(params), &opts)
            .map_err(failed)?;
        let init: InitializeResult = raw.parse().map_err(|e| {
            protocol(format!(
                "{target} sent a malformed `initialize` result: {e}"
            ))
            .with_source(e)
        })?;
        negotiate(&init).map_err(|detail| protocol(format!("{target}: {detail}")))?;
        // Every later message says the version (over HTTP, as a header).
        conn.wire = Wire::Legacy(Some(init.protocol_version.clone()));
        let initialized = Outgoing::initialized()
            .with_headers(conn.wire.notification_headers())
            .by(crate::deadline::after(conn.default_timeout));
        conn.transport.send(initialized).map_err(failed)?;
        log::debug!(
            "server `{server}`: connected to {} {} (protocol {})",
            init.server_info.name,
            init.server_info.version,
            init.protocol_version
        );
        Ok(init)
    }
}
