//! [`Client`]: one MCP server, blocking calls, safe to share between threads.
//!
//! ```text
//!   new() ──open()──> connected ──close()/drop──> disconnected ──open()──> ...
//!            │  spawn or reach the server, `initialize`, check the version, `initialized`
//!            │  (modern era, 2026-07-28: `server/discover` instead; see `discover.rs`)
//!            └─ Err: the server, the command or url, and the server's last stderr lines
//! ```
//!
//! Every call takes one path whatever the era (`call.rs`): the connection's era
//! (`protocol/wire.rs`) decides what a request carries and what its answer means, so no
//! method here asks which era it speaks. The files, each importing only those above it (and
//! extending [`Client`] where they add methods):
//!
//! | file | what |
//! |---|---|
//! | `options.rs`, `era_cache.rs`, `subscriptions.rs` | call options and handlers; the servers found legacy; the bookkeeping of modern listens |
//! | `dispatch.rs` | what a server sends on its own: lanes, handler threads, answers to input requests |
//! | `connection.rs` | one live connection: session, transport, dispatcher, era; one request, one notification |
//! | `call.rs` | the one request path (input rounds, requests sent again) and era-shaped operations |
//! | `connect.rs`, `discover.rs` | connecting: the transport, `initialize`, or `server/discover` and the `Auto` probe |
//! | `listen.rs` | `subscriptions/listen` (modern subscriptions and list changes) |
//! | `tasks.rs`, `tasks_modern.rs`, `task_calls.rs` | tasks: the handle and its wait, the tasks extension, the `Client` methods |

mod builder;
mod call;
mod connect;
mod connection;
mod discover;
mod dispatch;
mod era_cache;
mod listen;
mod opener;
mod options;
mod renamed;
mod skills;
mod subscriptions;
mod task_calls;
mod tasks;
mod tasks_modern;

use crate::sync::{lock, read_lock, write_lock};
use std::sync::{Arc, Mutex, RwLock};

use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use crate::config::{ProtocolEra, ServerConfig};
use crate::error::{Error, InvalidArgumentKind, ProtocolErrorKind};
use crate::model::{
    CallToolResult, CompleteResult, CompletionReference, DiscoverResult, GetPromptResult,
    Implementation, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, LoggingLevel, Prompt, ReadResourceResult, Resource,
    ResourceTemplate, Root, ServerCapabilities, Tool,
};
use crate::protocol::wire::Op;
use crate::transport::stdio::ConnectionPoller;
pub use builder::ClientBuilder;
use call::Answer;
use connection::Connection;
use opener::Opener;

/// How long [`Client::cancel_pending`] waits to send each `notifications/cancelled`.
const CANCEL_SEND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);
pub use options::CallOptions;
use options::Handlers;
pub use skills::{LoadedSkill, SkillLimits};
pub use tasks::TaskHandle;

/// A connection to one MCP server.
///
/// Every method blocks until the server answers or the call's timeout passes. `Client` is
/// `Send + Sync`: share it (in an `Arc`) and call it from many threads at once; each call waits
/// only for its own answer.
///
/// ```no_run
/// use mcp_blocking::{Client, ServerConfig};
/// let server = ServerConfig::stdio("fs", "npx")
///     .with_args(["-y", "@modelcontextprotocol/server-filesystem", "/data"])
///     .with_timeout_secs(30.0);
/// let client = Client::connect(server)?;
/// for tool in client.list_tools()? {
///     println!("{}: {}", tool.name, tool.description());
/// }
/// let result = client.call_tool("read_file", serde_json::json!({"path": "/data/readme.txt"}))?;
/// println!("{}", result.text());
/// client.close()?;
/// # Ok::<(), mcp_blocking::Error>(())
/// ```
pub struct Client {
    config: ServerConfig,
    poller: Option<ConnectionPoller>,
    client_info: Implementation,
    handlers: Arc<Handlers>,
    roots: Arc<RwLock<Option<Vec<Root>>>>,
    state: RwLock<Option<Arc<Connection>>>,
    /// Serialises `open` and `close`.
    lifecycle: Mutex<()>,
    /// What opens the transport instead of the configured one, if anything.
    opener: Option<Arc<dyn Opener>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.config)
            .field("connected", &self.is_connected())
            .finish()
    }
}

impl Client {
    /// Starts building a client for `config`.
    pub fn builder(config: ServerConfig) -> ClientBuilder {
        ClientBuilder {
            config,
            poller: None,
            client_info: Implementation::new("mcp-blocking", env!("CARGO_PKG_VERSION")),
            handlers: Handlers::default(),
            roots: None,
            opener: None,
        }
    }

    /// Connects to the server: starts or reaches it and completes the handshake of its
    /// [protocol mode](crate::config::ProtocolMode): `initialize` (legacy era),
    /// `server/discover` (modern era), or, by default, a `server/discover` probe that falls back
    /// to `initialize`.
    ///
    /// # Errors
    /// [`Error::Config`] for an invalid config ([`ServerConfig::validate`], e.g. a timeout out of
    /// range: see [timeouts](ServerConfig#timeouts)), [`Error::Spawn`] when the command cannot
    /// start, [`Error::Connect`] for every other failure to connect or to complete the handshake
    /// (naming the server, the command or url, and quoting the server's last stderr lines); its
    /// [`ConnectError::kind`](crate::error::ConnectError::kind) tells an unreachable server from a
    /// timeout, a process that exited, a refused `initialize` or a protocol version this client
    /// does not speak.
    pub fn connect(config: ServerConfig) -> Result<Client, Error> {
        Self::builder(config).connect()
    }

    /// A client for `config`, not yet connected; see [`open`](Self::open).
    pub fn new(config: ServerConfig) -> Client {
        Self::builder(config).build()
    }

    /// A client served by a shared poller, not yet connected.
    pub fn with_poller(config: ServerConfig, poller: &ConnectionPoller) -> Client {
        Self::builder(config).poller(poller).build()
    }

    /// Connects when not connected; a no-op when connected. Also
    /// reconnects a client whose server has gone (the call that failed returned
    /// [`Error::Closed`]).
    ///
    /// ```no_run
    /// use mcp_blocking::{Client, ConnectionPoller, ServerConfig};
    /// let poller = ConnectionPoller::new();
    /// let client = Client::with_poller(ServerConfig::stdio("fs", "mcp-server-filesystem"), &poller);
    /// client.open()?;
    /// assert!(client.is_connected());
    /// client.close()?;
    /// # Ok::<(), mcp_blocking::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Client::connect`].
    #[doc(alias = "connect")]
    pub fn open(&self) -> Result<(), Error> {
        let _guard = lock(&self.lifecycle);
        if self.is_connected() {
            return Ok(());
        }
        if let Some(old) = self.take_connection() {
            let _ = old.shutdown();
        }
        let conn = Arc::new(self.establish().map_err(|e| self.redacted(e))?);
        *write_lock(&self.state) = Some(Arc::clone(&conn));
        self.listen_for_list_changes(&conn);
        Ok(())
    }

    /// Closes the connection (stdio: stdin closed, then SIGTERM and SIGKILL to the process group
    /// if needed). Pending calls fail with [`Error::Closed`]. A no-op when not connected; the
    /// client can [`open`](Self::open) again. Dropping the client does the same.
    ///
    /// It returns in bounded time, whatever the handlers do: the handlers are told first
    /// ([`handler::close_signal`](crate::handler::close_signal)), and a handler still running
    /// [`CLOSE_GRACE`](crate::handler::CLOSE_GRACE) after the close began is left to finish on
    /// its own thread; its answer is discarded, and that thread is joined, once the handler has
    /// returned, by the next client in the process that connects or closes (see
    /// [the handler module](crate::handler#closing-while-a-handler-runs)). For stdio, ending
    /// the process takes at most about 6 s (2 s after stdin closes, 2 s after SIGTERM, 2 s for
    /// the rest of its process group), and the handlers' grace runs meanwhile; once a request to
    /// it was given up (timed out or cancelled), SIGTERM follows the closing of its stdin after
    /// half a second, since a server busy with that request would notice its stdin close only
    /// after it. A connect that fails ends the process the same way. Streamable HTTP
    /// sends the session's `DELETE` within the request timeout, at most 5 s; WebSocket waits for
    /// the close handshake within the request timeout, at most 2 s; legacy HTTP+SSE sends
    /// nothing and drops its stream. Every connection is shut, and every thread joined, by then.
    ///
    /// # Errors
    /// A transport error met while closing; the connection is closed anyway.
    #[doc(alias = "disconnect")]
    pub fn close(&self) -> Result<(), Error> {
        let _guard = lock(&self.lifecycle);
        match self.take_connection() {
            Some(conn) => conn.shutdown(),
            None => Ok(()),
        }
    }

    /// Whether the handshake completed and the connection has not ended since.
    pub fn is_connected(&self) -> bool {
        read_lock(&self.state)
            .as_ref()
            .is_some_and(|c| !c.session.is_closed())
    }

    /// The server's configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The server's configured name.
    pub fn server_name(&self) -> &str {
        self.config.name()
    }

    /// The server's whole `initialize` result, when connected.
    pub fn initialize_result(&self) -> Option<InitializeResult> {
        self.init_part(InitializeResult::clone)
    }

    /// The negotiated protocol version, when connected: the one `initialize` settled on
    /// (legacy era), or the one every request carries (modern era, e.g. `2026-07-28`).
    pub fn protocol_version(&self) -> Option<String> {
        self.init_part(|i| i.protocol_version.clone())
    }

    /// The protocol era the connection speaks, when connected: what
    /// [`ProtocolMode::Auto`](crate::config::ProtocolMode::Auto) found, or the configured one.
    ///
    /// In the modern era, [`initialize_result`](Self::initialize_result),
    /// [`server_info`](Self::server_info), [`capabilities`](Self::capabilities) and
    /// [`instructions`](Self::instructions) report what `server/discover` said (see
    /// [`discover_result`](Self::discover_result) for all of it).
    pub fn protocol_era(&self) -> Option<ProtocolEra> {
        Some(self.connection().ok()?.wire.era())
    }

    /// The server's `server/discover` result, when connected in the modern era.
    pub fn discover_result(&self) -> Option<DiscoverResult> {
        self.connection().ok()?.wire.discover_result().cloned()
    }

    /// The server's `serverInfo`, when connected.
    pub fn server_info(&self) -> Option<Implementation> {
        self.init_part(|i| i.server_info.clone())
    }

    /// The server's capabilities, when connected.
    pub fn capabilities(&self) -> Option<ServerCapabilities> {
        self.init_part(|i| i.capabilities.clone())
    }

    /// The server's `instructions`, when it gave any.
    pub fn instructions(&self) -> Option<String> {
        self.init_part(|i| i.instructions.clone()).flatten()
    }

    /// Reads one part of the `initialize` result without copying the rest.
    fn init_part<T>(&self, part: impl FnOnce(&InitializeResult) -> T) -> Option<T> {
        let conn = self.connection().ok()?;
        conn.init.as_ref().map(part)
    }

    /// The last lines the server wrote to stderr (stdio servers), with this server's secrets
    /// hidden (see [`ServerConfig::redact`]).
    pub fn stderr_tail(&self) -> String {
        self.connection()
            .map(|c| self.config.redact(&c.stderr_tail.text()))
            .unwrap_or_default()
    }

    /// What the sandbox of a sandboxed stdio server applied, and what it did not (only with
    /// [`Sandbox::best_effort`](crate::config::Sandbox::best_effort): otherwise a sandbox that
    /// cannot be applied in full fails the connect). `None` when not connected or not
    /// sandboxed.
    ///
    /// ```no_run
    /// use mcp_blocking::{Client, ServerConfig};
    /// use mcp_blocking::config::Sandbox;
    /// let config = ServerConfig::stdio("fs", "mcp-server-filesystem")
    ///     .with_sandbox(Sandbox::new().allow_write("/srv/data").best_effort());
    /// let client = Client::connect(config)?;
    /// if let Some(report) = client.sandbox_report() {
    ///     for missing in &report.not_applied {
    ///         eprintln!("not confined: {missing}");
    ///     }
    /// }
    /// # Ok::<(), mcp_blocking::Error>(())
    /// ```
    pub fn sandbox_report(&self) -> Option<crate::config::SandboxReport> {
        self.connection().ok().and_then(|c| c.sandbox.clone())
    }

    /// Replaces the roots offered to the server and sends `notifications/roots/list_changed`
    /// (legacy era; in the modern era the notification does not exist: the server asks for the
    /// roots when it needs them).
    ///
    /// # Errors
    /// A transport error while notifying.
    pub fn set_roots(&self, roots: Vec<Root>) -> Result<(), Error> {
        *write_lock(&self.roots) = Some(roots);
        match self.connection() {
            Ok(c) => self.perform(&c, Op::RootsChanged),
            Err(_) => Ok(()),
        }
    }

    /// Sends `ping` and waits for the answer.
    ///
    /// # Errors
    /// [`Error::Timeout`], [`Error::Closed`], [`Error::Rpc`], [`Error::NotConnected`];
    /// [`Error::Unsupported`] in the modern era, which has no `ping`.
    pub fn ping(&self) -> Result<(), Error> {
        self.perform(&self.connection()?, Op::Ping)
    }

    /// Every tool, following `nextCursor` to the end.
    ///
    /// # Errors
    /// As [`ping`](Self::ping); [`Error::Protocol`] for a malformed result or a cursor loop.
    pub fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        self.list_tools_as::<ListToolsResult>()
    }

    /// Every page of `tools/list`, each read as `P` (see [`ToolPage`]).
    pub(crate) fn list_tools_as<P: ToolPage>(&self) -> Result<Vec<P::Item>, Error> {
        let tools = self.collect_pages(|c| self.list_tools_page_as::<P>(c).map(P::into_parts))?;
        self.remember_task_support(tools.iter().filter_map(P::requires_task));
        Ok(tools)
    }

    /// One page of `tools/list`.
    ///
    /// # Errors
    /// As [`list_tools`](Self::list_tools).
    ///
    /// In the modern era, a tool whose `x-mcp-header` annotations are invalid is left out (it
    /// could not be called correctly over HTTP), with a warning logged.
    pub fn list_tools_page(&self, cursor: Option<&str>) -> Result<ListToolsResult, Error> {
        self.list_tools_page_as(cursor)
    }

    /// One page of `tools/list`, read as `P`.
    fn list_tools_page_as<P: ToolPage>(&self, cursor: Option<&str>) -> Result<P, Error> {
        let conn = self.connection()?;
        let mut page = self
            .call(
                &conn,
                "tools/list",
                cursor_params(cursor),
                &CallOptions::default(),
            )
            .map_err(|e| self.redacted(e))?
            .into_reply();
        conn.wire.keep_tools(self.server_name(), &mut page);
        let page: P = page.parse().map_err(|e| self.malformed("tools/list", &e))?;
        Ok(page.retain(|name| self.config.policy().allows_tool(name)))
    }

    /// Calls a tool. `arguments` must be a JSON object (or `null` for none). A tool that fails
    /// reports it in the result ([`CallToolResult::failed`]); a JSON-RPC error (unknown tool, bad
    /// arguments) is [`Error::Rpc`].
    ///
    /// A tool whose `execution.taskSupport` is `required`, on a server that declares
    /// task-augmented `tools/call`, runs as a task without the caller doing anything more: the
    /// call creates the task, waits for its result (answering an `input_required` task's
    /// elicitation or sampling request through the client's handlers), and returns the result,
    /// within the call's timeout; when that passes, `tasks/cancel` is sent (the call returns at
    /// most about a second later, the time that may take). The tools' task
    /// support is learnt from `tools/list` (once per connection, and again on each
    /// [`list_tools`](Self::list_tools)). See [`call_tool_as_task`](Self::call_tool_as_task)
    /// to keep a handle on the task instead.
    ///
    /// In the modern era (2026-07-28) the server decides which calls become tasks, when it
    /// offers the tasks extension (`io.modelcontextprotocol/tasks`, declared by the client on
    /// every request then): a call answered with a task is driven the same way (`tasks/get`
    /// polls, input requests answered by the handlers and sent with `tasks/update`,
    /// `tasks/cancel` when the timeout passes) and returns the task's result.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `arguments` is not an object; as [`ping`](Self::ping);
    /// for a task, [`Error::Task`] when it was cancelled (or, modern era, of kind
    /// [`TaskErrorKind::Unsupported`](crate::error::TaskErrorKind::Unsupported) when the
    /// server requires the tasks extension (-32021) without offering it); a modern task that
    /// failed is its [`Error::Rpc`].
    pub fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, Error> {
        self.call_tool_with(name, arguments, &CallOptions::default())
    }

    /// [`call_tool`](Self::call_tool) with per-call options (timeout, progress, task status).
    ///
    /// # Errors
    /// As [`call_tool`](Self::call_tool); [`Error::InvalidArgument`] also when a timeout in `opts`
    /// is out of range (see [`CallOptions::timeout`]), before anything is sent.
    pub fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        opts: &CallOptions,
    ) -> Result<CallToolResult, Error> {
        let conn = self.connection()?;
        // Only a server that declares task-augmented `tools/call` may require a task.
        let task_calls = conn
            .init
            .as_ref()
            .is_some_and(|i| conn.wire.augments_tool_calls(&i.capabilities));
        if task_calls {
            if let Some(done) = self.call_as_task_if_required(name, &arguments, opts) {
                return done;
            }
        }
        // Kept only for a server with tasks, whose tool list may be stale.
        let retry = task_calls.then(|| arguments.clone());
        let start = std::time::Instant::now();
        let params = self.tool_params(name, arguments)?;
        let plain = match self.call(&conn, "tools/call", Some(Value::Object(params)), opts) {
            Ok(Answer::Done(result)) => {
                result.parse().map_err(|e| self.malformed("tools/call", &e))
            }
            // The server made the call a task (the tasks extension): its result, within the
            // call's timeout.
            Ok(Answer::Task(task)) => self.finish_task(conn, task, opts, start),
            Err(e) => Err(self.redacted(tasks_modern::requires_extension(e, &conn, name))),
        };
        if let Some(arguments) = retry {
            // A tool that now requires a task says so: learn the tools again, then retry.
            if task_calls::says_task_required(&plain) && self.list_tools().is_ok() {
                if let Some(done) = self.call_as_task_if_required(name, &arguments, opts) {
                    return done;
                }
            }
        }
        plain
    }

    /// Every resource, following `nextCursor` to the end.
    ///
    /// # Errors
    /// As [`list_tools`](Self::list_tools).
    pub fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        self.collect_pages(|c| {
            self.list_resources_page(c)
                .map(|p| (p.resources, p.next_cursor))
        })
    }

    /// One page of `resources/list`.
    ///
    /// # Errors
    /// As [`list_tools`](Self::list_tools).
    pub fn list_resources_page(&self, cursor: Option<&str>) -> Result<ListResourcesResult, Error> {
        self.typed(
            "resources/list",
            cursor_params(cursor),
            &CallOptions::default(),
        )
    }

    /// Every resource template, following `nextCursor` to the end.
    ///
    /// # Errors
    /// As [`list_tools`](Self::list_tools).
    pub fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        self.collect_pages(|c| {
            self.list_resource_templates_page(c)
                .map(|p| (p.resource_templates, p.next_cursor))
        })
    }

    /// One page of `resources/templates/list`.
    ///
    /// # Errors
    /// As [`list_tools`](Self::list_tools).
    pub fn list_resource_templates_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<ListResourceTemplatesResult, Error> {
        self.typed(
            "resources/templates/list",
            cursor_params(cursor),
            &CallOptions::default(),
        )
    }

    /// Reads a resource.
    ///
    /// # Errors
    /// As [`ping`](Self::ping); a missing resource is [`Error::Rpc`] (code -32002 in the
    /// legacy era, -32602 from 2026-07-28 on: [`Error::is_resource_not_found`] accepts both).
    pub fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        self.read_resource_with(uri, &CallOptions::default())
    }

    /// [`read_resource`](Self::read_resource) under `opts` (a skill file read by the agent:
    /// its tool timeout and cancellation).
    pub(crate) fn read_resource_with(
        &self,
        uri: &str,
        opts: &CallOptions,
    ) -> Result<ReadResourceResult, Error> {
        self.typed("resources/read", Some(json!({ "uri": uri })), opts)
    }

    /// Subscribes to `notifications/resources/updated` for `uri`.
    ///
    /// Legacy era: `resources/subscribe`. Modern era: a `subscriptions/listen` for `uri`, kept
    /// open on its own thread (`mcp-listen-NAME`) until [`unsubscribe`](Self::unsubscribe),
    /// the server ends it or the client closes; this returns once the server has acknowledged
    /// it. The updates reach the notification handlers in both eras.
    ///
    /// # Errors
    /// As [`ping`](Self::ping); in the modern era, [`Error::Rpc`] with code -32602 when the
    /// server acknowledged the listen without granting `uri`, and [`Error::Timeout`] when it
    /// did not acknowledge it within the server's timeout.
    pub fn subscribe(&self, uri: &str) -> Result<(), Error> {
        self.perform(&self.connection()?, Op::Subscribe(uri))
    }

    /// Ends a subscription (modern era: its updates stop reaching the handlers at once, and its
    /// listen request is cancelled).
    ///
    /// # Errors
    /// As [`ping`](Self::ping).
    pub fn unsubscribe(&self, uri: &str) -> Result<(), Error> {
        self.perform(&self.connection()?, Op::Unsubscribe(uri))
    }

    /// Every prompt, following `nextCursor` to the end.
    ///
    /// # Errors
    /// As [`list_tools`](Self::list_tools).
    pub fn list_prompts(&self) -> Result<Vec<Prompt>, Error> {
        self.collect_pages(|c| {
            self.list_prompts_page(c)
                .map(|p| (p.prompts, p.next_cursor))
        })
    }

    /// One page of `prompts/list`.
    ///
    /// # Errors
    /// As [`list_tools`](Self::list_tools).
    pub fn list_prompts_page(&self, cursor: Option<&str>) -> Result<ListPromptsResult, Error> {
        self.typed(
            "prompts/list",
            cursor_params(cursor),
            &CallOptions::default(),
        )
    }

    /// Gets a prompt. `arguments` is a JSON object of strings, or `null`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `arguments` is not an object of strings; as [`ping`](Self::ping).
    pub fn get_prompt(&self, name: &str, arguments: Value) -> Result<GetPromptResult, Error> {
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.to_owned()));
        match arguments {
            Value::Null => {}
            Value::Object(m) => {
                if let Some((k, v)) = m.iter().find(|(_, v)| !v.is_string()) {
                    return Err(Error::InvalidArgument {
                        server: self.server_name().to_owned(),
                        kind: InvalidArgumentKind::WrongType,
                        detail: format!(
                            "prompt argument `{k}` must be a string, got {}",
                            json_kind(v)
                        ),
                    });
                }
                params.insert("arguments".into(), Value::Object(m));
            }
            other => {
                return Err(Error::InvalidArgument {
                    server: self.server_name().to_owned(),
                    kind: InvalidArgumentKind::WrongType,
                    detail: format!(
                        "prompt arguments must be a JSON object, got {}",
                        json_kind(&other)
                    ),
                })
            }
        }
        self.typed(
            "prompts/get",
            Some(Value::Object(params)),
            &CallOptions::default(),
        )
    }

    /// Asks for completions of an argument of a prompt or resource template.
    ///
    /// # Errors
    /// As [`ping`](Self::ping).
    pub fn complete(
        &self,
        reference: CompletionReference,
        argument: &str,
        value: &str,
        context: Option<Map<String, Value>>,
    ) -> Result<CompleteResult, Error> {
        let mut params =
            json!({ "ref": reference, "argument": { "name": argument, "value": value } });
        if let Some(ctx) = context {
            params["context"] = json!({ "arguments": ctx });
        }
        self.typed("completion/complete", Some(params), &CallOptions::default())
    }

    /// Sets the minimum level of the server's log notifications: `logging/setLevel` in the
    /// legacy era; in the modern era the level goes in the `_meta` of every later request
    /// (without one, a modern server sends no log messages).
    ///
    /// # Errors
    /// As [`ping`](Self::ping).
    pub fn set_logging_level(&self, level: LoggingLevel) -> Result<(), Error> {
        self.perform(&self.connection()?, Op::SetLevel(level))
    }

    /// Sends any request and returns its raw result: for methods this crate has no wrapper for.
    ///
    /// In the modern era a `tools/call` the server answers with a task (the tasks extension)
    /// returns that task as sent (`resultType: "task"`, `taskId`, ...): nothing drives it.
    ///
    /// # Errors
    /// As [`ping`](Self::ping); [`Error::InvalidArgument`] when a timeout in `opts` is out of
    /// range (see [`CallOptions::timeout`]), before anything is sent.
    pub fn request(
        &self,
        method: &str,
        params: Option<Value>,
        opts: &CallOptions,
    ) -> Result<Value, Error> {
        self.typed(method, params, opts)
    }

    /// Sends any notification.
    ///
    /// # Errors
    /// [`Error::NotConnected`]; a transport error.
    pub fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        self.connection()?
            .notify(method, params)
            .map_err(|e| self.redacted(e))
    }

    /// Asks the server to stop every request of this client still waiting for its answer (a
    /// user pressed Ctrl-C, say): sends `notifications/cancelled` with `reason` for each, and
    /// returns how many were cancelled. The calls themselves keep waiting (the server sends no
    /// answer to a cancelled request, so they end at their timeout); close the client, from any
    /// thread, to end them at once with [`Error::Closed`].
    ///
    /// ```no_run
    /// use mcp_blocking::{Client, ServerConfig};
    /// let client = Client::connect(ServerConfig::stdio("fs", "mcp-server-filesystem"))?;
    /// // On another thread, while a call runs:
    /// let cancelled = client.cancel_pending("interrupted by the user")?;
    /// client.close()?;
    /// # let _ = cancelled;
    /// # Ok::<(), mcp_blocking::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NotConnected`]; a transport error while sending (the remaining requests are
    /// not cancelled then).
    pub fn cancel_pending(&self, reason: &str) -> Result<usize, Error> {
        let conn = self.connection()?;
        let ids = conn.session.pending_ids();
        for &id in &ids {
            conn.transport
                .send(crate::transport::Outgoing::cancellation(
                    &crate::protocol::jsonrpc::RequestId::Number(id),
                    reason,
                    CANCEL_SEND_TIMEOUT,
                ))
                .map_err(|e| self.redacted(e))?;
        }
        Ok(ids.len())
    }

    fn typed<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Option<Value>,
        opts: &CallOptions,
    ) -> Result<T, Error> {
        let conn = self.connection()?;
        self.call(&conn, method, params, opts)
            .map_err(|e| self.redacted(e))?
            .into_reply()
            .parse()
            .map_err(|e| self.malformed(method, &e))
    }

    /// `e` as it leaves the client: with this server's secrets hidden (see
    /// [`ServerConfig::redact`]). Every error a method returns passes through here, or holds
    /// nothing but the server's name and text of this crate's own.
    fn redacted(&self, e: Error) -> Error {
        e.redact(&self.config.secret_values())
    }

    fn malformed(&self, method: &str, e: &serde_json::Error) -> Error {
        self.redacted(Error::Protocol {
            server: self.server_name().to_owned(),
            kind: ProtocolErrorKind::Malformed,
            detail: format!("malformed `{method}` result: {e}"),
        })
    }

    fn collect_pages<T>(
        &self,
        mut page: impl FnMut(Option<&str>) -> Result<(Vec<T>, Option<String>), Error>,
    ) -> Result<Vec<T>, Error> {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        loop {
            let (items, next) = page(cursor.as_deref())?;
            if all.is_empty() {
                // The first page is the list so far: kept, not copied.
                all = items;
            } else {
                all.extend(items);
            }
            match next {
                Some(next) => {
                    if !seen.insert(next.clone()) {
                        return Err(self.redacted(Error::Protocol {
                            server: self.server_name().to_owned(),
                            kind: ProtocolErrorKind::Unexpected,
                            detail: format!(
                                "the server repeated the cursor `{next}`; stopping pagination"
                            ),
                        }));
                    }
                    cursor = Some(next);
                }
                None => return Ok(all),
            }
        }
    }

    fn connection(&self) -> Result<Arc<Connection>, Error> {
        read_lock(&self.state)
            .clone()
            .ok_or_else(|| Error::NotConnected {
                server: self.server_name().to_owned(),
            })
    }

    fn take_connection(&self) -> Option<Arc<Connection>> {
        write_lock(&self.state).take()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(conn) = self.take_connection() {
            if let Err(e) = conn.shutdown() {
                log::debug!(
                    "server `{}`: error while closing on drop: {e}",
                    self.server_name()
                );
            }
        }
    }
}

fn cursor_params(cursor: Option<&str>) -> Option<Value> {
    cursor.map(|c| json!({ "cursor": c }))
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod memory_tests;
#[cfg(test)]
mod tasks_tests;

/// A `tools/list` page as a caller reads it: [`ListToolsResult`] for [`Client::list_tools`], the
/// Hub's compact form (`hub::compact::KeptPage`) for the Hub, which keeps each tool as it is read.
pub(crate) trait ToolPage: DeserializeOwned {
    /// One tool as this page keeps it.
    type Item;
    /// The page's tools and its `nextCursor`.
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>);
    /// The tool's name when its `execution.taskSupport` is `required`.
    fn requires_task(item: &Self::Item) -> Option<&str>;
    /// The page with only the tools whose name `keep` accepts (the server's policy).
    fn retain(self, keep: impl Fn(&str) -> bool) -> Self;
}

impl ToolPage for ListToolsResult {
    type Item = Tool;
    fn into_parts(self) -> (Vec<Tool>, Option<String>) {
        (self.tools, self.next_cursor)
    }
    fn requires_task(tool: &Tool) -> Option<&str> {
        (tool.task_support() == crate::model::TaskSupport::Required).then_some(tool.name.as_str())
    }
    fn retain(mut self, keep: impl Fn(&str) -> bool) -> Self {
        self.tools.retain(|t| keep(&t.name));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn client_is_send_and_sync() {
        assert_send_sync::<Client>();
    }

    #[test]
    fn calls_before_connect_say_not_connected() {
        let c = Client::new(ServerConfig::stdio("fs", "true"));
        assert!(!c.is_connected());
        assert!(matches!(c.ping(), Err(Error::NotConnected { server }) if server == "fs"));
        assert_eq!(c.config().to_json()["name"], json!("fs"));
    }
}
