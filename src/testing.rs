//! Test code that uses a [`Client`] without spawning anything (feature `testing`).
//!
//! A [`TestServer`] is an MCP server that lives in your test: give it tools, resources and
//! prompts (or script its wire messages outright), connect a real [`Client`] to it in-process,
//! and check what your code does. No process, no socket: a test runs in well under a
//! millisecond. The client is the same `Client` your program uses, with its handshake,
//! timeouts, handlers and errors.
//!
//! ```
//! use mcp_blocking::model::{CallToolResult, Content, Tool};
//! use mcp_blocking::testing::TestServer;
//! use serde_json::json;
//!
//! let server = TestServer::new("weather").tool(
//!     Tool::new("forecast", json!({"type": "object", "properties": {"city": {"type": "string"}}})),
//!     |call| {
//!         let city = call.arguments()["city"].as_str().unwrap_or("nowhere").to_owned();
//!         Ok(CallToolResult::success(vec![Content::text(format!("sunny in {city}"))]))
//!     },
//! );
//! let client = server.connect()?;
//! let result = client.call_tool("forecast", json!({"city": "Oslo"}))?;
//! assert_eq!(result.text(), "sunny in Oslo");
//! assert_eq!(server.received_methods(), ["initialize", "notifications/initialized", "tools/call"]);
//! # Ok::<(), mcp_blocking::Error>(())
//! ```
//!
//! What a server can do, and where its handlers run:
//! - tools ([`TestServer::tool`]), resources ([`TestServer::resource`]), prompts
//!   ([`TestServer::prompt`]), any other method ([`TestServer::on_request`]); everything else is
//!   answered with "method not found";
//! - inside a tool: report progress, send notifications, and ask the client something
//!   (sampling, elicitation, roots) with [`ToolCall::request`], which waits for the client's
//!   handler to answer;
//! - outside any call: push a notification to every connected client with
//!   [`TestServer::notify`];
//! - tasks: a tool whose `execution.taskSupport` is `optional` or `required`
//!   ([`Tool::with_task_support`](crate::model::Tool::with_task_support)) runs as a task when
//!   the call asks for one, and the server then declares the `tasks` capability; the handler
//!   runs inside the creating call, and the task reads `completed` (or `failed`) from the first
//!   `tasks/get` on, so [`Client::call_tool`] on a `required` tool works as against a real
//!   server;
//! - or take the wire in hand with [`TestServer::from_fn`]: every message the client sends goes
//!   to your function, and what it returns goes back.
//!
//! Each request is handled on a short-lived thread of its own (named `mcp-test:NAME`), while the
//! call waits for the answer as it would for any server: a handler that blocks holds that call
//! (and only that call), which returns [`Error::Timeout`] at its timeout. The handler's answer
//! is then discarded, as a late answer from any server is. Notifications are handled on the
//! thread that sent them, in the order sent. Closing the client waits at most
//! [`CLOSE_GRACE`](crate::handler::CLOSE_GRACE) for handlers still running (a connect that
//! failed, its `initialize` handler still running at the timeout, does not wait at all); a
//! thread still running after that is joined once its handler returns.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::client::{Client, ClientBuilder};
use crate::config::ServerConfig;
use crate::error::{Error, ErrorCode};
use crate::handler::HandlerError;
use crate::model::{
    CallToolResult, GetPromptResult, Implementation, Prompt, ReadResourceResult, Resource,
    ResourceTemplate, Tool, LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS,
};
use crate::sync::lock;
use crate::transport::memory::{InProcessServer, Peer, WeakPeer};

mod tasks;

type ToolFn = dyn Fn(&ToolCall<'_>) -> Result<CallToolResult, HandlerError> + Send + Sync;
type RequestFn = dyn Fn(Option<&Value>) -> Result<Value, HandlerError> + Send + Sync;
type RawFn = dyn Fn(&Value) -> Vec<Value> + Send + Sync;

/// An MCP server inside your test. Cheap to clone; clones share what they received.
///
/// Build it with the chainable methods, then [`connect`](Self::connect) a [`Client`] to it (or
/// hand [`client_builder`](Self::client_builder) to code that installs handlers first). One server
/// can serve any number of clients, one after another or at once.
#[derive(Clone)]
#[must_use]
pub struct TestServer {
    script: Arc<Script>,
    shared: Arc<Shared>,
}

#[derive(Clone)]
struct Script {
    info: Implementation,
    instructions: Option<String>,
    protocol_version: Option<String>,
    capabilities: Option<Value>,
    tools: Vec<(Tool, Arc<ToolFn>)>,
    resources: Vec<(Resource, ReadResourceResult)>,
    templates: Vec<ResourceTemplate>,
    prompts: Vec<(Prompt, GetPromptResult)>,
    requests: HashMap<String, Arc<RequestFn>>,
    raw: Option<Arc<RawFn>>,
}

#[derive(Default)]
struct Shared {
    received: Mutex<Vec<Value>>,
    peers: Mutex<Vec<WeakPeer>>,
    tasks: Mutex<Vec<tasks::StoredTask>>,
}

impl fmt::Debug for TestServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestServer")
            .field("name", &self.script.info.name)
            .field(
                "tools",
                &self
                    .script
                    .tools
                    .iter()
                    .map(|(t, _)| t.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl TestServer {
    /// A server named `name` (its `serverInfo.name`, and the name clients give it in errors)
    /// with nothing on offer yet.
    pub fn new(name: impl Into<String>) -> Self {
        TestServer {
            script: Arc::new(Script {
                info: Implementation::new(name, "0.0.0"),
                instructions: None,
                protocol_version: None,
                capabilities: None,
                tools: Vec::new(),
                resources: Vec::new(),
                templates: Vec::new(),
                prompts: Vec::new(),
                requests: HashMap::new(),
                raw: None,
            }),
            shared: Arc::default(),
        }
    }

    /// A server whose wire you script: `f` gets every message the client sends (handshake
    /// included) and returns the messages to send back, in order.
    ///
    /// ```
    /// use mcp_blocking::testing::TestServer;
    /// use serde_json::{json, Value};
    /// let server = TestServer::from_fn("silent", |msg: &Value| match msg["method"].as_str() {
    ///     Some("initialize") => vec![json!({"jsonrpc": "2.0", "id": msg["id"], "error":
    ///         {"code": -32000, "message": "not today"}})],
    ///     _ => vec![],
    /// });
    /// let err = server.connect().unwrap_err();
    /// assert!(err.to_string().contains("not today"), "{err}");
    /// ```
    pub fn from_fn(
        name: impl Into<String>,
        f: impl Fn(&Value) -> Vec<Value> + Send + Sync + 'static,
    ) -> Self {
        let mut s = Self::new(name);
        s.script_mut().raw = Some(Arc::new(f));
        s
    }

    fn script_mut(&mut self) -> &mut Script {
        Arc::make_mut(&mut self.script)
    }

    /// Sets the `serverInfo.version` (default `0.0.0`).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.script_mut().info.version = version.into();
        self
    }

    /// Sets the `instructions` of the `initialize` result.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.script_mut().instructions = Some(text.into());
        self
    }

    /// Answers `initialize` with this protocol version whatever the client asks (default: the
    /// client's version when this crate supports it, else the latest).
    pub fn protocol_version(mut self, version: impl Into<String>) -> Self {
        self.script_mut().protocol_version = Some(version.into());
        self
    }

    /// Declares exactly these capabilities (default: `tools`, `resources` and `prompts` for
    /// whatever was added, each with `listChanged`).
    pub fn capabilities(mut self, capabilities: Value) -> Self {
        self.script_mut().capabilities = Some(capabilities);
        self
    }

    /// Offers `tool`; `handler` answers its calls. A handler's `Err` becomes the JSON-RPC error
    /// of the call; a tool that fails as a tool returns `Ok(CallToolResult::error(..))`.
    pub fn tool(
        mut self,
        tool: Tool,
        handler: impl Fn(&ToolCall<'_>) -> Result<CallToolResult, HandlerError> + Send + Sync + 'static,
    ) -> Self {
        self.script_mut().tools.push((tool, Arc::new(handler)));
        self
    }

    /// Offers `resource`; `resources/read` of its URI answers `contents`.
    pub fn resource(mut self, resource: Resource, contents: ReadResourceResult) -> Self {
        self.script_mut().resources.push((resource, contents));
        self
    }

    /// Lists `template` in `resources/templates/list`.
    pub fn resource_template(mut self, template: ResourceTemplate) -> Self {
        self.script_mut().templates.push(template);
        self
    }

    /// Offers `prompt`; `prompts/get` of its name answers `result`.
    pub fn prompt(mut self, prompt: Prompt, result: GetPromptResult) -> Self {
        self.script_mut().prompts.push((prompt, result));
        self
    }

    /// Answers requests for `method` with `handler` (given the request's `params`). Takes
    /// precedence over the built-in answers, so it can also replace `tools/list` and the like.
    pub fn on_request(
        mut self,
        method: impl Into<String>,
        handler: impl Fn(Option<&Value>) -> Result<Value, HandlerError> + Send + Sync + 'static,
    ) -> Self {
        self.script_mut()
            .requests
            .insert(method.into(), Arc::new(handler));
        self
    }

    /// A [`ClientBuilder`] for a client of this server (named like the server), to install
    /// handlers or roots before connecting.
    ///
    /// ```
    /// use mcp_blocking::testing::TestServer;
    /// use mcp_blocking::model::Root;
    /// let client = TestServer::new("fs")
    ///     .client_builder()
    ///     .roots(vec![Root::new("file:///tmp")])
    ///     .connect()?;
    /// assert!(client.is_connected());
    /// # Ok::<(), mcp_blocking::Error>(())
    /// ```
    pub fn client_builder(&self) -> ClientBuilder {
        self.client_builder_for(ServerConfig::stdio(
            self.script.info.name.clone(),
            "in-process",
        ))
    }

    /// Like [`client_builder`](Self::client_builder), for a given config: its name and timeout
    /// apply; its transport is replaced by this in-process server.
    ///
    /// This server speaks the legacy protocol era (`initialize`), so a config left at
    /// [`ProtocolMode::Auto`](crate::config::ProtocolMode::Auto) is set to
    /// [`ProtocolMode::Legacy`](crate::config::ProtocolMode::Legacy): no `server/discover`
    /// probe shows in [`received`](Self::received).
    pub fn client_builder_for(&self, config: ServerConfig) -> ClientBuilder {
        use crate::config::ProtocolMode;
        let config = match config.protocol() {
            ProtocolMode::Auto => config.with_protocol(ProtocolMode::Legacy),
            _ => config,
        };
        Client::builder(config).in_process(Arc::new(self.clone()))
    }

    /// Connects a new client to this server.
    ///
    /// # Errors
    /// As [`Client::connect`]: for example [`Error::Connect`] when this server refuses the
    /// handshake.
    pub fn connect(&self) -> Result<Client, Error> {
        self.client_builder().connect()
    }

    /// Every message clients sent to this server, in order, handshake included.
    pub fn received(&self) -> Vec<Value> {
        lock(&self.shared.received).clone()
    }

    /// The `method` of every message clients sent (`"<response>"` for their answers to the
    /// server's requests).
    pub fn received_methods(&self) -> Vec<String> {
        lock(&self.shared.received)
            .iter()
            .map(|m| m["method"].as_str().unwrap_or("<response>").to_owned())
            .collect()
    }

    /// Sends a notification to every connected client; returns how many it reached.
    ///
    /// ```
    /// use mcp_blocking::handler::{notification_channel, Notification, NOTIFICATION_CHANNEL_CAPACITY};
    /// use mcp_blocking::testing::TestServer;
    /// use serde_json::json;
    /// let server = TestServer::new("s");
    /// let (notify, notifications) = notification_channel(NOTIFICATION_CHANNEL_CAPACITY);
    /// let builder = server.client_builder().on_notification(notify);
    /// let _client = builder.connect()?;
    /// assert_eq!(server.notify("notifications/tools/list_changed", json!({})), 1);
    /// let (from, n) = notifications.recv().unwrap();
    /// assert_eq!(from, "s");
    /// assert_eq!(n, Notification::ToolsListChanged);
    /// # Ok::<(), mcp_blocking::Error>(())
    /// ```
    pub fn notify(&self, method: &str, params: Value) -> usize {
        let mut peers = lock(&self.shared.peers);
        peers.retain(|p| p.upgrade().is_some_and(|p| !p.is_closed()));
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        peers
            .iter()
            .filter_map(WeakPeer::upgrade)
            .filter(|p| p.send(&msg))
            .count()
    }
}

/// One `tools/call` as a tool handler sees it.
pub struct ToolCall<'a> {
    name: &'a str,
    arguments: &'a Value,
    request: &'a Value,
    peer: &'a Peer,
}

impl fmt::Debug for ToolCall<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCall")
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .finish_non_exhaustive()
    }
}

impl ToolCall<'_> {
    /// The tool's name.
    pub fn name(&self) -> &str {
        self.name
    }

    /// The call's arguments (`{}` when none were sent).
    pub fn arguments(&self) -> &Value {
        self.arguments
    }

    /// The whole `tools/call` request as the client sent it (`_meta` included).
    pub fn request(&self) -> &Value {
        self.request
    }

    /// Sends a notification to the client while the call runs.
    pub fn notify(&self, method: &str, params: Value) {
        self.peer
            .send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Reports progress, when the client asked for it (sent a `progressToken`); otherwise does
    /// nothing.
    pub fn progress(&self, progress: f64, total: Option<f64>) {
        let Some(token) = self.request["params"]["_meta"].get("progressToken") else {
            return;
        };
        let mut params = json!({"progressToken": token, "progress": progress});
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        self.notify("notifications/progress", params);
    }

    /// Asks the client something (`sampling/createMessage`, `elicitation/create`,
    /// `roots/list`, `ping`) and waits for the answer, up to the call's own timeout.
    ///
    /// # Errors
    /// The client's JSON-RPC error as a [`HandlerError`]; a [`HandlerError`] with code
    /// [`ErrorCode::INTERNAL_ERROR`] when the connection closed or the call's timeout passed
    /// first.
    pub fn ask(&self, method: &str, params: Value) -> Result<Value, HandlerError> {
        let answer = self.peer.request(method, params).ok_or_else(|| {
            HandlerError::new(
                ErrorCode::INTERNAL_ERROR,
                format!("no answer to `{method}` from the client"),
            )
        })?;
        match answer.get("error") {
            Some(e) => Err(HandlerError::new(
                e["code"]
                    .as_i64()
                    .and_then(|c| i32::try_from(c).ok())
                    .map_or(ErrorCode::INTERNAL_ERROR, ErrorCode),
                e["message"].as_str().unwrap_or_default(),
            )),
            None => Ok(answer.get("result").cloned().unwrap_or(Value::Null)),
        }
    }
}

fn reply(id: &Value, outcome: Result<Value, HandlerError>) -> Value {
    match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(e) => {
            let mut error = json!({"code": e.code.0, "message": e.message});
            if let Some(data) = e.data {
                error["data"] = data;
            }
            json!({"jsonrpc": "2.0", "id": id, "error": error})
        }
    }
}

fn to_value(v: impl Serialize) -> Result<Value, HandlerError> {
    serde_json::to_value(v).map_err(|e| HandlerError::new(ErrorCode::INTERNAL_ERROR, e.to_string()))
}

fn invalid_params(message: String) -> HandlerError {
    HandlerError::new(ErrorCode::INVALID_PARAMS, message)
}

impl Script {
    fn initialize(&self, params: Option<&Value>) -> Value {
        let asked = params
            .and_then(|p| p["protocolVersion"].as_str())
            .filter(|v| SUPPORTED_PROTOCOL_VERSIONS.contains(v));
        let version = self
            .protocol_version
            .as_deref()
            .or(asked)
            .unwrap_or(LATEST_PROTOCOL_VERSION);
        let capabilities = self.capabilities.clone().unwrap_or_else(|| {
            let mut caps = Map::new();
            if !self.tools.is_empty() {
                caps.insert("tools".into(), json!({"listChanged": true}));
            }
            if !self.resources.is_empty() || !self.templates.is_empty() {
                caps.insert("resources".into(), json!({"listChanged": true}));
            }
            if !self.prompts.is_empty() {
                caps.insert("prompts".into(), json!({"listChanged": true}));
            }
            if tasks::any_task_tool(self.tools.iter().map(|(t, _)| t)) {
                caps.insert("tasks".into(), tasks::capability());
            }
            Value::Object(caps)
        });
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": self.info,
        });
        if let Some(text) = &self.instructions {
            result["instructions"] = json!(text);
        }
        result
    }

    fn answer(&self, msg: &Value, peer: &Peer, shared: &Shared) -> Result<Value, HandlerError> {
        let method = msg["method"].as_str().unwrap_or_default();
        let params = msg.get("params");
        if let Some(handler) = self.requests.get(method) {
            return handler(params);
        }
        if let Some(answer) = tasks::answer(&lock(&shared.tasks), method, params) {
            return answer;
        }
        let param = |key: &str| params.and_then(|p| p[key].as_str()).unwrap_or_default();
        match method {
            "initialize" => Ok(self.initialize(params)),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(json!({
                "tools": self.tools.iter().map(|(t, _)| to_value(t)).collect::<Result<Vec<_>, _>>()?,
            })),
            "tools/call" => {
                let name = param("name");
                let (tool, handler) = self
                    .tools
                    .iter()
                    .find(|(t, _)| t.name == name)
                    .ok_or_else(|| invalid_params(format!("Unknown tool: {name}")))?;
                let as_task = tasks::check_call(tool, params)?;
                let empty = json!({});
                let call = ToolCall {
                    name,
                    arguments: params.and_then(|p| p.get("arguments")).unwrap_or(&empty),
                    request: msg,
                    peer,
                };
                if as_task {
                    let outcome = handler(&call).and_then(to_value);
                    return Ok(tasks::create(&mut lock(&shared.tasks), outcome));
                }
                to_value(handler(&call)?)
            }
            "resources/list" => Ok(json!({
                "resources": self.resources.iter().map(|(r, _)| to_value(r)).collect::<Result<Vec<_>, _>>()?,
            })),
            "resources/templates/list" => {
                Ok(json!({ "resourceTemplates": to_value(&self.templates)? }))
            }
            "resources/read" => {
                let uri = param("uri");
                let (_, contents) = self
                    .resources
                    .iter()
                    .find(|(r, _)| r.uri == uri)
                    .ok_or_else(|| {
                        HandlerError::new(ErrorCode::RESOURCE_NOT_FOUND, "Resource not found")
                            .with_data(json!({ "uri": uri }))
                    })?;
                to_value(contents)
            }
            "prompts/list" => Ok(json!({
                "prompts": self.prompts.iter().map(|(p, _)| to_value(p)).collect::<Result<Vec<_>, _>>()?,
            })),
            "prompts/get" => {
                let name = param("name");
                let (_, result) = self
                    .prompts
                    .iter()
                    .find(|(p, _)| p.name == name)
                    .ok_or_else(|| invalid_params(format!("Unknown prompt: {name}")))?;
                to_value(result)
            }
            _ => Err(HandlerError::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )),
        }
    }
}

impl InProcessServer for TestServer {
    fn received(&self, msg: &Value) {
        lock(&self.shared.received).push(msg.clone());
    }

    fn handle(&self, msg: &Value, peer: &Peer) {
        if let Some(raw) = &self.script.raw {
            for out in raw(msg) {
                peer.send(&out);
            }
            return;
        }
        // Notifications (no id) need no answer.
        let Some(id) = msg.get("id") else { return };
        peer.send(&reply(id, self.script.answer(msg, peer, &self.shared)));
    }

    fn connected(&self, peer: &Peer) {
        lock(&self.shared.peers).push(peer.downgrade());
    }
}
