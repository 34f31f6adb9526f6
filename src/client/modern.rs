//! The modern protocol era (2026-07-28) on a connection: the `server/discover` handshake (and
//! the `Auto` probe that falls back to `initialize`), the `_meta` every request carries,
//! `resultType`, multi-round-trip requests (an `InputRequiredResult` answered by the installed
//! handlers, then the request again with their answers), and `subscriptions/listen`.
//!
//! ```text
//!  Auto: server/discover ──DiscoverResult──> modern
//!                        ├─ -32022 ──> again with a version from data.supported
//!                        ├─ -32020 / -32021 ──> a modern refusal: connect fails
//!                        └─ other error, HTTP 4xx, not a discover result, no answer ──> initialize
//!  call: request ──resultType absent/complete──> result
//!                └─input_required──> handlers answer inputRequests ──> request again (new id,
//!                                    inputResponses, requestState as sent) ... at most
//!                                    Limits::max_input_rounds times
//! ```

use std::collections::{HashMap, HashSet};
use std::ops::Not;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use serde_json::{json, Map, Value};

use super::connection::Connection;
use super::{CallOptions, Client};
use crate::config::{ProtocolEra, AUTO_PROBE_TIMEOUT, MAX_TIMEOUT, MODERN_PROTOCOL_VERSION};
use crate::error::{ConnectError, ConnectErrorKind, Error, ErrorCode, ProtocolErrorKind};
use crate::model::{DiscoverResult, Implementation, InitializeResult, LoggingLevel};
use crate::protocol::era::{self, ParamHeader};
use crate::protocol::jsonrpc::InNotification;
use crate::sync::{lock, read_lock, write_lock};

/// The key of the listen for list changes among the subscriptions (never a uri: no scheme).
const LIST_CHANGES: &str = "*list changes*";

/// Methods whose result may be an `InputRequiredResult`.
const MRTR_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// What a modern connection keeps.
pub(crate) struct Modern {
    version: RwLock<String>,
    capabilities: Value,
    client_info: Value,
    /// The level sent as `_meta` logLevel (set with `Client::set_logging_level`).
    log_level: RwLock<Option<LoggingLevel>>,
    /// The `x-mcp-header` parameters of the tools listed so far, by tool name.
    tool_headers: RwLock<HashMap<String, Vec<ParamHeader>>>,
    pub(crate) discover: RwLock<Option<DiscoverResult>>,
    /// The server offers the tasks extension: every request declares it.
    tasks: AtomicBool,
    /// One `subscriptions/listen` per subscribed uri.
    listens: Mutex<Vec<Listen>>,
    /// Listen threads of ended subscriptions, joined on close.
    ended: Mutex<Vec<JoinHandle<()>>>,
    /// Serialises `subscribe`: one listen waits for its acknowledgement at a time.
    subscribing: Mutex<()>,
}

struct Listen {
    uri: String,
    id: i64,
    thread: JoinHandle<()>,
}

impl Modern {
    pub(crate) fn new(capabilities: Value, client_info: &Implementation) -> Modern {
        Modern {
            version: RwLock::new(MODERN_PROTOCOL_VERSION.to_owned()),
            capabilities,
            client_info: serde_json::to_value(client_info).unwrap_or(Value::Null),
            log_level: RwLock::new(None),
            tool_headers: RwLock::new(HashMap::new()),
            discover: RwLock::new(None),
            tasks: AtomicBool::new(false),
            listens: Mutex::new(Vec::new()),
            ended: Mutex::new(Vec::new()),
            subscribing: Mutex::new(()),
        }
    }

    /// The protocol version in use.
    pub(crate) fn version(&self) -> String {
        read_lock(&self.version).clone()
    }

    /// The `_meta` fields every request carries.
    pub(crate) fn meta(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(era::META_PROTOCOL_VERSION.into(), self.version().into());
        let mut caps = self.capabilities.clone();
        if self.offers_tasks() {
            super::tasks_modern::declare_extension(&mut caps);
        }
        m.insert(era::META_CLIENT_CAPABILITIES.into(), caps);
        m.insert(era::META_CLIENT_INFO.into(), self.client_info.clone());
        if let Some(level) = *read_lock(&self.log_level) {
            m.insert(era::META_LOG_LEVEL.into(), json!(level));
        }
        m
    }

    /// Whether the server offers the tasks extension (`io.modelcontextprotocol/tasks`) in
    /// `server/discover`.
    pub(crate) fn offers_tasks(&self) -> bool {
        self.tasks.load(Ordering::Relaxed)
    }

    /// The HTTP headers of an outbound frame (see `Transport::set_header_hook`).
    pub(crate) fn header_hook(self: &Arc<Self>) -> crate::transport::HeaderHook {
        let me = Arc::downgrade(self);
        Arc::new(move |frame: &[u8]| {
            // Cheap first: a frame without the modern `_meta` key is not a modern request.
            memchr::memmem::find(frame, era::META_PROTOCOL_VERSION.as_bytes())?;
            let msg: Value = serde_json::from_slice(frame).ok()?;
            let mut headers = era::standard_headers(&msg)?;
            if msg.get("method").and_then(Value::as_str) == Some("tools/call") {
                let params = msg.get("params");
                let name = params.and_then(|p| p.get("name")).and_then(Value::as_str);
                if let (Some(me), Some(name)) = (me.upgrade(), name) {
                    if let Some(h) = read_lock(&me.tool_headers).get(name) {
                        headers.extend(era::param_header_values(
                            h,
                            params.and_then(|p| p.get("arguments")),
                        ));
                    }
                }
            }
            Some(headers)
        })
    }

    /// Records the `x-mcp-header` parameters of listed tools and drops the tools whose
    /// annotations are invalid (they cannot be called correctly).
    pub(crate) fn check_tools(&self, server: &str, tools: &mut Vec<Value>) {
        let mut map = write_lock(&self.tool_headers);
        tools.retain(|t| {
            let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
            let schema = t.get("inputSchema").unwrap_or(&Value::Null);
            match era::param_headers(schema) {
                Ok(h) => {
                    map.insert(name.to_owned(), h);
                    true
                }
                Err(why) => {
                    log::warn!(
                        "server `{server}`: leaving out the tool `{}`: {}",
                        crate::config::echo(name, 256),
                        crate::config::echo(&why, 256)
                    );
                    map.remove(name);
                    false
                }
            }
        });
    }

    /// Ends the subscriptions' threads (after the transport closed and the calls failed).
    pub(crate) fn join_listens(&self) {
        let mut threads: Vec<JoinHandle<()>> = lock(&self.ended).drain(..).collect();
        threads.extend(lock(&self.listens).drain(..).map(|l| l.thread));
        for t in threads {
            let _ = t.join();
        }
    }
}

/// What `subscriptions/listen` sends the client that `subscribe` waits for.
pub(crate) enum ListenEvent {
    /// `notifications/subscriptions/acknowledged`'s params.
    Ack(Value),
    /// The listen request ended (before being acknowledged, or after).
    Ended(Result<(), Error>),
}

/// The subscription bookkeeping the notification dispatcher consults.
#[derive(Default)]
pub(crate) struct Subscriptions {
    /// The subscriptions whose messages are delivered (listen request ids).
    active: Mutex<HashSet<i64>>,
    /// Every listen id this connection opened (messages of the others are not ours to drop).
    opened: Mutex<HashSet<i64>>,
    /// The `subscribe` waiting for an acknowledgement.
    waiter: Mutex<Option<Sender<ListenEvent>>>,
}

impl Subscriptions {
    /// Whether the dispatcher should stop here: an acknowledgement (handed to `subscribe`) or a
    /// message of a subscription that was ended (dropped).
    pub(crate) fn intercept(&self, n: &InNotification) -> bool {
        let params: Option<Value> = n
            .params
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok());
        if n.method == "notifications/subscriptions/acknowledged" {
            if let Some(tx) = lock(&self.waiter).as_ref() {
                let _ = tx.try_send(ListenEvent::Ack(params.unwrap_or(Value::Null)));
            }
            return true;
        }
        let sid = params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(era::META_SUBSCRIPTION_ID))
            .and_then(Value::as_i64);
        match sid {
            Some(id) => lock(&self.opened).contains(&id) && !lock(&self.active).contains(&id),
            None => false,
        }
    }
}

impl Client {
    /// The modern handshake: `server/discover` (with a retry at a version the server lists).
    /// `Ok(None)` when `probe` (the `Auto` mode) finds a legacy server: the caller then runs
    /// `initialize`.
    pub(super) fn discover(
        &self,
        conn: &mut Connection,
        target: &str,
        probe: bool,
        deadline: Instant,
    ) -> Result<Option<InitializeResult>, Error> {
        let server = self.server_name().to_owned();
        let caps = serde_json::to_value(self.capabilities_to_declare_modern()).unwrap_or_default();
        let modern = Arc::new(Modern::new(caps, &self.client_info));
        conn.transport.set_header_hook(Some(modern.header_hook()));
        conn.modern = Some(Arc::clone(&modern));
        // The probe may take half of what is left of connecting at most, so that `initialize`
        // still has the other half when a server leaves it unanswered; a modern-only handshake
        // has all of it.
        let probe_deadline = if probe {
            let now = Instant::now();
            let left = deadline.saturating_duration_since(now);
            crate::deadline::add(now, AUTO_PROBE_TIMEOUT.min(left / 2))
        } else {
            deadline
        };
        let protocol = |detail: String| -> Error {
            ConnectError::new(&server, target, ConnectErrorKind::Protocol, detail)
                .with_stderr_tail(conn.transport.stderr_tail())
                .into()
        };
        let mut tried = Vec::new();
        let outcome = loop {
            let version = modern.version();
            tried.push(version.clone());
            let left = match super::connect::left_of(conn, probe_deadline, "server/discover") {
                Ok(left) => left,
                Err(e) if probe => break Err(Some(e)),
                Err(e) => return Err(refused(e, &server, target, conn)),
            };
            let opts = CallOptions::new().timeout(left);
            match conn.request("server/discover", None, &opts) {
                Ok(payload) => break Ok(payload.parse::<DiscoverResult>()),
                Err(Error::Rpc { code, data, .. })
                    if code.0 == era::UNSUPPORTED_PROTOCOL_VERSION =>
                {
                    match era::pick_supported(data.as_deref()) {
                        Some(v) if tried.len() <= era::MAX_VERSION_RETRIES => {
                            *write_lock(&modern.version) = v.to_owned();
                        }
                        _ => {
                            let supported = data
                                .as_deref()
                                .and_then(|d| d.get("supported"))
                                .map(|v| conn.sink.ctx.limits.echo(&v.to_string()).into_owned())
                                .unwrap_or_else(|| "none".into());
                            if probe {
                                break Err(None);
                            }
                            return Err(protocol(format!(
                                "{target} speaks none of the modern protocol versions this client \
                                 does ({}); it supports {supported}",
                                era::MODERN_VERSIONS.join(", ")
                            )));
                        }
                    }
                }
                Err(e @ Error::Rpc { code, .. }) if era::is_modern_rejection(code.0) => {
                    return Err(refused(e, &server, target, conn));
                }
                Err(e) if probe && falls_back(&e) => break Err(Some(e)),
                Err(e) => return Err(refused(e, &server, target, conn)),
            }
        };
        let discovered = match outcome {
            Ok(Ok(d)) => d,
            Ok(Err(e)) if !probe => {
                return Err(protocol(format!(
                    "{target} sent a malformed `server/discover` result: {e}"
                )))
            }
            Ok(Err(e)) => {
                log::debug!("server `{server}`: not a discover result ({e}); trying initialize");
                conn.modern = None;
                conn.transport.set_header_hook(None);
                return Ok(None);
            }
            Err(why) => {
                if let Some(e) = why {
                    log::debug!(
                        "server `{server}`: the discover probe failed ({e}); trying initialize"
                    );
                }
                conn.modern = None;
                conn.transport.set_header_hook(None);
                return Ok(None);
            }
        };
        let version = modern.version();
        if !discovered.supported_versions.is_empty()
            && !discovered.supported_versions.contains(&version)
        {
            let ours = era::MODERN_VERSIONS
                .iter()
                .find(|v| discovered.supported_versions.iter().any(|s| s == *v));
            match ours {
                Some(v) => *write_lock(&modern.version) = (*v).to_owned(),
                None if probe => {
                    conn.modern = None;
                    conn.transport.set_header_hook(None);
                    return Ok(None);
                }
                None => {
                    return Err(protocol(format!(
                        "{target} supports only {}, none of which this client speaks in the \
                         modern era",
                        conn.sink
                            .ctx
                            .limits
                            .echo(&discovered.supported_versions.join(", "))
                    )))
                }
            }
        }
        let version = modern.version();
        let init = discovered.to_initialize_result(&version);
        modern.tasks.store(
            super::tasks_modern::offers_extension(&discovered.capabilities),
            Ordering::Relaxed,
        );
        *write_lock(&modern.discover) = Some(discovered);
        log::debug!(
            "server `{server}`: connected to {} {} (protocol {version}, stateless)",
            init.server_info.name,
            init.server_info.version,
        );
        Ok(Some(init))
    }

    /// The capabilities declared in `_meta` (roots without `listChanged`: the notification
    /// does not exist in the modern era).
    fn capabilities_to_declare_modern(&self) -> crate::model::ClientCapabilities {
        let mut caps = self.capabilities_to_declare();
        if caps.roots.is_some() {
            caps.roots = Some(crate::model::RootsCapability::default());
        }
        caps
    }

    /// One modern request: the result with `resultType` checked and removed, the server's
    /// input requests answered by the handlers (at most `Limits::max_input_rounds` rounds, all
    /// under the call's one deadline, which only its progress moves on), a
    /// broken HTTP reply re-issued once with a new id, and a `tools/call` refused for its
    /// headers (`-32020`) retried once after listing the tools again.
    pub(super) fn modern_request(
        &self,
        conn: &Connection,
        method: &str,
        params: Option<Value>,
        opts: &CallOptions,
    ) -> Result<Value, Error> {
        let max_rounds = self.config.limits().max_input_rounds;
        // One deadline for the whole call, whatever the number of rounds: each round's request
        // starts from the deadline the last one left (progress may have moved it on).
        let round_opts = Rounds::new(opts, conn.default_timeout);
        let mut rounds = 0;
        let mut answers: Option<(Map<String, Value>, Option<Value>)> = None;
        let mut reissued = false;
        let mut relisted = false;
        loop {
            let mut sent = params.clone();
            if let Some((responses, state)) = &answers {
                let mut p = match sent {
                    Some(Value::Object(m)) => m,
                    _ => Map::new(),
                };
                p.insert("inputResponses".into(), Value::Object(responses.clone()));
                if let Some(state) = state {
                    p.insert("requestState".into(), state.clone());
                }
                sent = Some(Value::Object(p));
            }
            let payload = match conn.request(method, sent, &round_opts.next()) {
                Ok(p) => p,
                Err(Error::Closed { .. } | Error::Transport { status: None, .. })
                    if !reissued && !conn.session.is_closed() && self.config.url().is_some() =>
                {
                    log::debug!(
                        "server `{}`: the reply to `{method}` broke; sending it again",
                        self.server_name()
                    );
                    reissued = true;
                    continue;
                }
                Err(Error::Rpc { code, .. })
                    if code.0 == era::HEADER_MISMATCH && method == "tools/call" && !relisted =>
                {
                    relisted = true;
                    let _ = self.list_tools();
                    continue;
                }
                Err(e) => return Err(e),
            };
            let mut value: Value = payload.parse().map_err(|e| self.malformed(method, &e))?;
            let kind = match value.get("resultType") {
                None => "complete".to_owned(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            };
            match kind.as_str() {
                "complete" => {
                    if let Value::Object(m) = &mut value {
                        m.remove("resultType");
                    }
                    return Ok(value);
                }
                // The tasks extension: kept whole (`resultType` included) for the caller.
                "task"
                    if method == "tools/call"
                        && conn.modern.as_ref().is_some_and(|m| m.offers_tasks()) =>
                {
                    return Ok(value);
                }
                "task" => {
                    return Err(Error::Protocol {
                        server: self.server_name().to_owned(),
                        kind: ProtocolErrorKind::Unexpected,
                        detail: format!(
                            "`{method}` answered with a task, which this client did not ask for"
                        ),
                    })
                }
                "input_required" if MRTR_METHODS.contains(&method) => {
                    rounds += 1;
                    if rounds > max_rounds {
                        return Err(Error::Protocol {
                            server: self.server_name().to_owned(),
                            kind: ProtocolErrorKind::TooMany,
                            detail: format!(
                                "`{method}` still asked for input after {max_rounds} rounds \
                                 (`max_input_rounds`)"
                            ),
                        });
                    }
                    let mut responses = Map::new();
                    if let Some(Value::Object(requests)) = value.get("inputRequests") {
                        for (key, request) in requests {
                            responses.insert(key.clone(), self.answer_input(conn, request)?);
                        }
                    }
                    answers = Some((responses, value.get("requestState").cloned()));
                }
                "input_required" => {
                    return Err(Error::Protocol {
                        server: self.server_name().to_owned(),
                        kind: ProtocolErrorKind::Unexpected,
                        detail: format!(
                            "`{method}` asked for input, which only `tools/call`, `prompts/get` \
                             and `resources/read` may do"
                        ),
                    })
                }
                other => {
                    return Err(Error::Protocol {
                        server: self.server_name().to_owned(),
                        kind: ProtocolErrorKind::Unexpected,
                        detail: format!(
                            "`{method}` answered with the result type `{}`, which this client \
                             does not know",
                            conn.sink.ctx.limits.echo(other)
                        ),
                    })
                }
            }
        }
    }

    /// Answers one of the server's input requests with the installed handlers.
    fn answer_input(&self, conn: &Connection, request: &Value) -> Result<Value, Error> {
        answer_input(conn, &self.roots, request)
    }

    /// `subscribe` in the modern era: a `subscriptions/listen` for `uri`, acknowledged by the
    /// server, on its own thread until it ends, `unsubscribe` is called or the client closes.
    pub(super) fn subscribe_modern(
        &self,
        conn: &Arc<Connection>,
        modern: &Arc<Modern>,
        uri: &str,
    ) -> Result<(), Error> {
        let asked = json!({ "resourceSubscriptions": [uri] });
        let granted = |ack: &Value| {
            ack.get("notifications")
                .unwrap_or(ack)
                .get("resourceSubscriptions")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|u| u.as_str() == Some(uri)))
        };
        self.listen(conn, modern, uri, asked, &granted)
    }

    /// Modern era, right after connecting, when notification handlers are installed: a
    /// `subscriptions/listen` for the list changes the server announces (`listChanged` in its
    /// capabilities), so the handlers hear of them as the legacy era's GET stream tells them.
    /// A failure is logged; the connection is usable without it.
    pub(super) fn listen_for_list_changes(&self, conn: &Arc<Connection>) {
        let (Some(modern), Some(init)) = (conn.modern.clone(), conn.init.as_ref()) else {
            return;
        };
        if conn.sink.ctx.has_notification_handlers().not() {
            return;
        }
        let caps = &init.capabilities;
        let mut asked = Map::new();
        if caps
            .tools
            .as_ref()
            .is_some_and(|t| t.list_changed == Some(true))
        {
            asked.insert("toolsListChanged".into(), json!(true));
        }
        if caps
            .prompts
            .as_ref()
            .is_some_and(|p| p.list_changed == Some(true))
        {
            asked.insert("promptsListChanged".into(), json!(true));
        }
        if caps
            .resources
            .as_ref()
            .is_some_and(|r| r.list_changed == Some(true))
        {
            asked.insert("resourcesListChanged".into(), json!(true));
        }
        if asked.is_empty() {
            return;
        }
        if let Err(e) = self.listen(conn, &modern, LIST_CHANGES, Value::Object(asked), &|_| true) {
            log::warn!(
                "server `{}`: could not listen for list changes: {e}",
                self.server_name()
            );
        }
    }

    /// Opens a `subscriptions/listen` for `notifications` (kept under `key`), waits for its
    /// acknowledgement and checks it with `granted`.
    fn listen(
        &self,
        conn: &Arc<Connection>,
        modern: &Arc<Modern>,
        key: &str,
        notifications: Value,
        granted: &dyn Fn(&Value) -> bool,
    ) -> Result<(), Error> {
        let _one = lock(&modern.subscribing);
        if lock(&modern.listens).iter().any(|l| l.uri == key) {
            return Ok(());
        }
        let subs = &conn.sink.ctx.subscriptions;
        let (tx, rx): (Sender<ListenEvent>, Receiver<ListenEvent>) = crossbeam_channel::bounded(4);
        *lock(&subs.waiter) = Some(tx.clone());
        let params = json!({ "notifications": notifications });
        let listener = Arc::clone(conn);
        let thread = std::thread::Builder::new()
            .name(format!("mcp-listen-{}", self.server_name()))
            .spawn(move || {
                let opts = CallOptions::new().timeout(MAX_TIMEOUT);
                let r = listener
                    .request("subscriptions/listen", Some(params), &opts)
                    .map(|_| ());
                let _ = tx.try_send(ListenEvent::Ended(r));
            })
            .map_err(|e| Error::Protocol {
                server: self.server_name().to_owned(),
                kind: ProtocolErrorKind::Other,
                detail: format!("could not start the subscription thread: {e}"),
            })?;
        let outcome = rx.recv_timeout(self.config.timeout());
        *lock(&subs.waiter) = None;
        let fail = |thread: JoinHandle<()>, e: Error| {
            lock(&modern.ended).push(thread);
            Err(e)
        };
        let ack = match outcome {
            Ok(ListenEvent::Ack(ack)) => ack,
            Ok(ListenEvent::Ended(r)) => {
                let _ = thread.join();
                return Err(r.err().unwrap_or_else(|| Error::Protocol {
                    server: self.server_name().to_owned(),
                    kind: ProtocolErrorKind::Ended,
                    detail: "`subscriptions/listen` ended before it was acknowledged".into(),
                }));
            }
            Err(_) => {
                return fail(
                    thread,
                    Error::Timeout {
                        server: self.server_name().to_owned(),
                        method: "subscriptions/listen".into(),
                        after: self.config.timeout(),
                    },
                )
            }
        };
        let id = ack
            .get("_meta")
            .and_then(|m| m.get(era::META_SUBSCRIPTION_ID))
            .and_then(Value::as_i64);
        let Some(id) = id else {
            return fail(
                thread,
                Error::Protocol {
                    server: self.server_name().to_owned(),
                    kind: ProtocolErrorKind::Unexpected,
                    detail: "the subscription acknowledgement has no subscription id".into(),
                },
            );
        };
        lock(&subs.opened).insert(id);
        if !granted(&ack) {
            self.end_listen(conn, id, "not granted");
            return fail(
                thread,
                Error::Rpc {
                    server: self.server_name().to_owned(),
                    code: ErrorCode::INVALID_PARAMS,
                    message: format!(
                        "the server did not grant a subscription to `{}`",
                        conn.sink.ctx.limits.echo(key)
                    ),
                    data: None,
                },
            );
        }
        lock(&subs.active).insert(id);
        lock(&modern.listens).push(Listen {
            uri: key.to_owned(),
            id,
            thread,
        });
        Ok(())
    }

    /// `unsubscribe` in the modern era: the subscription's messages are dropped from now on and
    /// its listen request is cancelled (`notifications/cancelled`; over HTTP its stream ends
    /// when the connection does).
    pub(super) fn unsubscribe_modern(
        &self,
        conn: &Connection,
        modern: &Modern,
        uri: &str,
    ) -> Result<(), Error> {
        let found = {
            let mut listens = lock(&modern.listens);
            listens
                .iter()
                .position(|l| l.uri == uri)
                .map(|i| listens.remove(i))
        };
        let Some(listen) = found else {
            return Ok(());
        };
        lock(&conn.sink.ctx.subscriptions.active).remove(&listen.id);
        self.end_listen(conn, listen.id, "unsubscribed");
        lock(&modern.ended).push(listen.thread);
        Ok(())
    }

    /// Ends a listen request on our side. On stdio (and in-process) the server is told with
    /// `notifications/cancelled` and the request stops waiting, which ends its thread; over HTTP
    /// the spec ends a listen by closing its stream, which this transport does when the
    /// connection closes (its messages are dropped meanwhile).
    fn end_listen(&self, conn: &Connection, id: i64, reason: &str) {
        if self.config.url().is_some() {
            return;
        }
        if let Err(e) = conn.notify(
            "notifications/cancelled",
            Some(json!({ "requestId": id, "reason": reason })),
        ) {
            log::debug!(
                "server `{}`: could not cancel a subscription: {e}",
                self.server_name()
            );
        }
        // Its thread waits for the request's end: end it now (the server sends no answer to a
        // cancelled request).
        conn.abandon(id, "the subscription ended");
    }

    /// Stores the level sent with every later request.
    pub(super) fn set_log_level_modern(modern: &Modern, level: LoggingLevel) {
        *write_lock(&modern.log_level) = Some(level);
    }

    /// The error for a method the modern era does not have (`method` bare: `ping`).
    pub(super) fn unsupported(&self, method: &str, era: ProtocolEra) -> Error {
        Error::Unsupported {
            server: self.server_name().to_owned(),
            feature: method.to_owned(),
            era,
        }
    }
}

/// Answers one of the server's input requests (an MRTR round, or a task's `inputRequests`)
/// with the installed handlers, `roots/list` with `roots`.
pub(super) fn answer_input(
    conn: &Connection,
    roots: &RwLock<Option<Vec<crate::model::Root>>>,
    request: &Value,
) -> Result<Value, Error> {
    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    if method == "roots/list" {
        return match read_lock(roots).as_ref() {
            Some(roots) => Ok(json!({ "roots": roots })),
            // Answered as the legacy era's dispatcher answers it: no such method here.
            None => Err(Error::Rpc {
                server: conn.server.to_string(),
                code: ErrorCode::METHOD_NOT_FOUND,
                message: "the server asked for `roots/list` and the client has no roots \
                          (see `ClientBuilder::roots`)"
                    .into(),
                data: None,
            }),
        };
    }
    conn.sink.ctx.serve(method, params).map_err(|e| Error::Rpc {
        server: conn.server.to_string(),
        code: e.code,
        message: format!(
            "the client's `{}` handler refused the server's input request: {}",
            conn.sink.ctx.limits.echo(method),
            e.message
        ),
        data: e.data.map(Box::new),
    })
}

/// A failed `server/discover` as a connect error: the server's JSON-RPC error is a refusal of
/// `server/discover` (kind `Rejected`); anything else as any handshake failure.
fn refused(e: Error, server: &str, target: &str, conn: &Connection) -> Error {
    match e {
        Error::Rpc {
            ref code,
            ref message,
            ..
        } => {
            let detail = format!("{target} refused `server/discover`: error {code}: {message}");
            ConnectError::new(server, target, ConnectErrorKind::Rejected, detail)
                .with_stderr_tail(conn.transport.stderr_tail())
                .with_source(e)
                .into()
        }
        e => e.into_connect(target, || conn.transport.stderr_tail()),
    }
}

/// Whether a probe failure means "not a modern server" (fall back to `initialize`): a JSON-RPC
/// error that is not a modern refusal, an HTTP 4xx other than an authentication failure, no
/// answer in time. A server that cannot be reached, or refuses the credentials, fails the same
/// way whatever the era, so that is the error.
fn falls_back(e: &Error) -> bool {
    match e {
        Error::Rpc { code, .. } => !era::is_modern_rejection(code.0),
        Error::Timeout { .. } => true,
        Error::Transport {
            status: Some(s), ..
        } => (400..500).contains(s) && !crate::error::is_auth_status(*s),
        Error::Protocol { .. } => true,
        _ => false,
    }
}

/// The options of the requests of one call made in rounds (input rounds, a re-issued request):
/// the call's options, with progress moving one deadline shared by all the rounds.
struct Rounds {
    /// The call's options (its progress callback also moves the shared deadline).
    opts: CallOptions,
    /// When the call began.
    start: Instant,
    /// The call's deadline now.
    deadline: Arc<Mutex<Instant>>,
}

impl Rounds {
    fn new(opts: &CallOptions, default_timeout: Duration) -> Rounds {
        let start = Instant::now();
        let timeout = opts.timeout.unwrap_or(default_timeout);
        let deadline = Arc::new(Mutex::new(crate::deadline::add(start, timeout)));
        let mut opts = opts.clone();
        if let (true, Some(cb)) = (opts.reset_timeout_on_progress, opts.on_progress.clone()) {
            let hard_limit = opts
                .max_total_timeout
                .map(|m| crate::deadline::add(start, m.max(timeout)));
            let moved = Arc::clone(&deadline);
            opts.on_progress = Some(Arc::new(move |p: &crate::model::Progress| {
                let next = crate::deadline::after(timeout);
                *lock(&moved) = hard_limit.map_or(next, |h| next.min(h));
                cb(p);
            }));
        }
        Rounds {
            opts,
            start,
            deadline,
        }
    }

    /// The options of the next request of the call.
    fn next(&self) -> CallOptions {
        CallOptions {
            call_deadline: Some((self.start, *lock(&self.deadline))),
            ..self.opts.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    //! The modern era against a scripted in-process server.

    use serde_json::{json, Value};

    use crate::config::{ProtocolMode, ServerConfig};
    use crate::model::Root;
    use crate::testing::TestServer;
    use crate::Error;

    fn reply(msg: &Value, result: Value) -> Vec<Value> {
        vec![json!({"jsonrpc": "2.0", "id": msg["id"], "result": result})]
    }

    /// A modern server whose `tools/call` always asks for the roots again, and whose
    /// `tools/list` has an unknown result type.
    fn stubborn() -> TestServer {
        TestServer::from_fn("stubborn", |msg: &Value| match msg["method"].as_str() {
            Some("server/discover") => reply(
                msg,
                json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}),
            ),
            Some("tools/call") => reply(
                msg,
                json!({"resultType": "input_required",
                           "inputRequests": {"r": {"method": "roots/list", "params": {}}},
                           "requestState": "s"}),
            ),
            Some("tools/list") => reply(msg, json!({"resultType": "later", "tools": []})),
            Some(_) if msg.get("id").is_some() => vec![json!({"jsonrpc": "2.0",
                    "id": msg["id"], "error": {"code": -32601, "message": "no"}})],
            _ => vec![],
        })
    }

    #[test]
    fn input_rounds_are_bounded_and_an_unknown_result_type_is_refused() {
        let server = stubborn();
        let config = ServerConfig::stdio("stubborn", "unused")
            .with_protocol(ProtocolMode::Modern)
            .with_limits(crate::config::Limits::default().with_max_input_rounds(3));
        let client = server
            .client_builder_for(config)
            .roots(vec![Root::new("file:///r")])
            .connect()
            .expect("connect");
        let e = client.call_tool("t", json!({})).unwrap_err();
        assert!(
            matches!(&e, Error::Protocol { detail, .. } if detail.contains("3 rounds")),
            "{e}"
        );
        let calls: Vec<Value> = server
            .received()
            .into_iter()
            .filter(|m| m["method"] == "tools/call")
            .collect();
        assert_eq!(calls.len(), 4, "the first call and three retries");
        assert!(calls[0]["params"].get("inputResponses").is_none());
        assert_eq!(calls[1]["params"]["requestState"], json!("s"));
        assert_eq!(
            calls[1]["params"]["inputResponses"]["r"]["roots"][0]["uri"],
            json!("file:///r")
        );
        assert_ne!(calls[0]["id"], calls[1]["id"], "a retry has a new id");
        assert_eq!(
            calls[1]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            json!("2026-07-28")
        );
        let e = client.list_tools().unwrap_err();
        assert!(e.to_string().contains("`later`"), "{e}");
    }

    /// A legacy server that answers `initialize` and ignores `server/discover`, or answers it
    /// with `code`.
    fn legacy_ignoring_discover(code: Option<i64>) -> TestServer {
        TestServer::from_fn("old", move |msg: &Value| match msg["method"].as_str() {
            Some("server/discover") => match code {
                Some(code) => vec![json!({"jsonrpc": "2.0", "id": msg["id"],
                    "error": {"code": code, "message": "refused"}})],
                None => vec![],
            },
            Some("initialize") => reply(
                msg,
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                       "serverInfo": {"name": "old", "version": "1"}}),
            ),
            Some(_) if msg.get("id").is_some() => reply(msg, json!({})),
            _ => vec![],
        })
    }

    /// An `Auto` client of `server` (not through `client_builder_for`, which makes `Auto`
    /// legacy for the built-in in-process server).
    fn auto(server: &TestServer, timeout: f64) -> crate::ClientBuilder {
        let config = ServerConfig::stdio("old", "unused")
            .with_timeout_secs(timeout)
            .with_protocol(ProtocolMode::Auto);
        crate::Client::builder(config).in_process(std::sync::Arc::new(server.clone()))
    }

    #[test]
    fn auto_falls_back_on_silence_and_on_a_legacy_error_but_not_on_a_modern_refusal() {
        use crate::config::ProtocolEra;
        let silent = legacy_ignoring_discover(None);
        let c = auto(&silent, 0.3).connect().expect("falls back");
        assert_eq!(c.protocol_era(), Some(ProtocolEra::Legacy));
        let methods = silent.received_methods();
        assert_eq!(methods[0], "server/discover");
        assert!(methods.contains(&"initialize".to_owned()), "{methods:?}");

        let confused = legacy_ignoring_discover(Some(-32600));
        let c = auto(&confused, 5.0).connect().expect("falls back");
        assert_eq!(c.protocol_era(), Some(ProtocolEra::Legacy));

        let modern = legacy_ignoring_discover(Some(-32021));
        let e = auto(&modern, 5.0).connect().unwrap_err();
        assert!(e.to_string().contains("-32021"), "{e}");
        assert!(!modern.received_methods().contains(&"initialize".to_owned()));
    }
}
