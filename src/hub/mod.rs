//! [`Hub`]: many MCP servers for one host program.
//!
//! ```text
//!   build() ──resolve(run)──> initialised ──resolve(run)──> ...      (connections persist)
//!      │     settings: global -> group -> host -> run               failed: retried with backoff
//!      │     discovery on this first run only                       degraded: reconnected
//!      ├──connect_all()──> initialised (every configured server)
//!      ├──inject(clients, tools)──> initialised (externally managed clients)
//!      └──disconnect()──> nothing connected, no process, no thread ──resolve(run)──> ...
//! ```
//!
//! Connecting runs one named thread per server (scoped, so joined before `resolve` returns); all
//! stdio servers share one [`ConnectionPoller`]. Calls go through a snapshot of the routes taken
//! under a read lock held only to clone one route, never during a call.

mod degrade;
mod discovery;
mod export;
mod porter;
mod registry;
mod settings;
mod state;

use std::sync::mpsc;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use serde_json::Value;

use crate::client::{CallOptions, Client};
use crate::config::{HostedMcpServer, ServerConfig, Template};
use crate::error::Error;
use crate::handler::Notification;
use crate::model::{CallToolResult, Tool};
use crate::transport::poller::ConnectionPoller;

pub use degrade::{Degradation, DegradedServer, ServerFailure};
pub use discovery::ServerDiscovery;
pub use registry::{CollisionPolicy, HubTool};
pub use settings::{resolve_setting, Setting};

use registry::{Registry, Route};
use state::State;

/// The per-run settings: the user's message (for discovery) and the run level of the two
/// settings. Both settings default to [`Setting::Inherit`].
///
/// ```
/// use mcp_blocking::{Run, Setting};
/// let run = Run::new()
///     .query("install imagemagick")
///     .tools(Setting::list(["brew_install"]));
/// assert!(run.servers.is_inherit());
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Run {
    /// The text discovery scores servers against (the user's message); `None` skips discovery.
    pub query: Option<String>,
    /// The run level of the server setting.
    pub servers: Setting<ServerConfig>,
    /// The run level of the tool allow-list.
    pub tools: Setting<String>,
}

impl Run {
    /// A run that inherits both settings and gives no query.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the query used by discovery.
    #[must_use]
    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    /// Sets the run level of the server setting.
    #[must_use]
    pub fn servers(mut self, servers: Setting<ServerConfig>) -> Self {
        self.servers = servers;
        self
    }

    /// Sets the run level of the tool allow-list.
    #[must_use]
    pub fn tools(mut self, tools: Setting<String>) -> Self {
        self.tools = tools;
        self
    }
}

/// Something that happened to the Hub's servers; see [`Hub::events`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HubEvent {
    /// A server connected and listed its tools.
    Connected {
        /// The server.
        server: String,
        /// How many tools it offers.
        tools: usize,
    },
    /// A server could not be connected.
    ConnectFailed {
        /// The server.
        server: String,
        /// The error, as text.
        reason: String,
    },
    /// A server's tool list was fetched again after `notifications/tools/list_changed`.
    ToolsRefreshed {
        /// The server.
        server: String,
        /// How many tools it offers now.
        tools: usize,
    },
    /// A server was dropped from the tool set after its calls kept failing.
    Degraded {
        /// The server.
        server: String,
        /// The last error, as text.
        reason: String,
    },
}

/// The tools a run may use, with what went wrong, as [`Hub::resolve`] returns them.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ToolSet {
    /// The tools offered to this run, after the allow-list.
    pub tools: Vec<HubTool>,
    /// This run's servers that could not be connected.
    pub failed: Vec<ServerFailure>,
    /// Servers currently degraded (their tools are not in `tools`).
    pub degraded: Vec<DegradedServer>,
    /// Servers of the configuration that discovery left out (never connected).
    pub skipped: Vec<String>,
}

impl ToolSet {
    /// The offered tool names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }

    /// The names of the servers that could not be connected.
    pub fn failed_server_names(&self) -> Vec<&str> {
        self.failed.iter().map(|f| f.server.as_str()).collect()
    }

    /// The names of the degraded servers.
    pub fn degraded_servers(&self) -> Vec<&str> {
        self.degraded.iter().map(|d| d.server.as_str()).collect()
    }

    /// A one-paragraph note for the system prompt naming unavailable external tools, or `None`.
    pub fn status_note(&self) -> Option<String> {
        degrade::status_note(&self.degraded, &self.failed)
    }

    /// The tools as the `tools` array of an OpenAI Chat Completions request.
    ///
    /// ```
    /// use mcp_blocking::ToolSet;
    /// assert_eq!(ToolSet::default().to_openai_chat(), serde_json::json!([]));
    /// ```
    pub fn to_openai_chat(&self) -> Value {
        export::openai_chat(&self.tools)
    }

    /// The tools as the `tools` array of an OpenAI Responses request, followed by the `hosted`
    /// servers (MCP servers OpenAI calls itself: `{"type":"mcp","server_label",...}`).
    ///
    /// ```
    /// use mcp_blocking::{HostedMcpServer, ToolSet};
    /// use serde_json::json;
    /// let docs = HostedMcpServer::new("docs", "https://example.com/mcp");
    /// let tools = ToolSet::default().to_openai_responses(&[docs]);
    /// assert_eq!(tools, json!([{"type": "mcp", "server_label": "docs", "server_url": "https://example.com/mcp"}]));
    /// ```
    pub fn to_openai_responses(&self, hosted: &[HostedMcpServer]) -> Value {
        let hosted: Vec<Value> = hosted.iter().map(HostedMcpServer::to_json).collect();
        export::openai_responses(&self.tools, &hosted)
    }

    /// The tools as the `tools` array of an Anthropic Messages request (`input_schema`).
    pub fn to_anthropic(&self) -> Value {
        export::anthropic(&self.tools)
    }
}

/// Builds a [`Hub`].
#[derive(Debug, Clone)]
#[must_use]
pub struct HubBuilder {
    options: Options,
    poller: Option<ConnectionPoller>,
}

#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) servers: [Setting<ServerConfig>; 3],
    pub(crate) tools: [Setting<String>; 3],
    pub(crate) discovery: bool,
    pub(crate) threshold: f64,
    pub(crate) collisions: CollisionPolicy,
    pub(crate) separator: String,
    pub(crate) degradation: Degradation,
    pub(crate) connect_base: Duration,
    pub(crate) connect_max: Duration,
}

const GLOBAL: usize = 0;
const GROUP: usize = 1;
const HOST: usize = 2;

impl HubBuilder {
    /// The global level of the server setting (RobotLab's `RobotLab.config.mcp`).
    pub fn global_servers(mut self, s: Setting<ServerConfig>) -> Self {
        self.options.servers[GLOBAL] = s;
        self
    }

    /// The group level of the server setting (RobotLab's network or task `config:`).
    pub fn group_servers(mut self, s: Setting<ServerConfig>) -> Self {
        self.options.servers[GROUP] = s;
        self
    }

    /// The host level of the server setting (RobotLab's `mcp:` at robot build).
    pub fn host_servers(mut self, s: Setting<ServerConfig>) -> Self {
        self.options.servers[HOST] = s;
        self
    }

    /// Takes the host level from a template's front matter: its `mcp:` servers (when it lists
    /// any) and its `tools:` allow-list (when it has one). Call [`host_servers`](Self::host_servers)
    /// afterwards to override the servers, as RobotLab's constructor `mcp:` does.
    ///
    /// ```
    /// use mcp_blocking::{Hub, Template};
    /// let t = Template::parse(
    ///     "---\nmcp: [{name: gh, transport: {type: stdio, command: mcp-github}}]\ntools: [search]\n---\nHi.\n",
    /// )?;
    /// let hub = Hub::builder().template(&t).build();
    /// # drop(hub);
    /// # Ok::<(), mcp_blocking::ConfigError>(())
    /// ```
    pub fn template(mut self, template: &Template) -> Self {
        if !template.mcp.is_empty() {
            self.options.servers[HOST] = Setting::List(template.mcp.clone());
        }
        if let Some(tools) = &template.tools {
            self.options.tools[HOST] = Setting::List(tools.clone());
        }
        self
    }

    /// Shorthand for `host_servers(Setting::List(servers))`.
    pub fn servers(self, servers: impl IntoIterator<Item = ServerConfig>) -> Self {
        self.host_servers(Setting::List(servers.into_iter().collect()))
    }

    /// The global level of the tool allow-list.
    pub fn global_tools(mut self, s: Setting<String>) -> Self {
        self.options.tools[GLOBAL] = s;
        self
    }

    /// The group level of the tool allow-list.
    pub fn group_tools(mut self, s: Setting<String>) -> Self {
        self.options.tools[GROUP] = s;
        self
    }

    /// The host level of the tool allow-list.
    pub fn host_tools(mut self, s: Setting<String>) -> Self {
        self.options.tools[HOST] = s;
        self
    }

    /// Turns on server discovery for the first resolving run (default off).
    pub fn discovery(mut self, on: bool) -> Self {
        self.options.discovery = on;
        self
    }

    /// The discovery threshold (default [`ServerDiscovery::DEFAULT_THRESHOLD`]).
    pub fn discovery_threshold(mut self, threshold: f64) -> Self {
        self.options.threshold = threshold;
        self
    }

    /// What to do with tool names offered by several servers (default
    /// [`CollisionPolicy::PrefixColliding`]).
    pub fn collisions(mut self, policy: CollisionPolicy) -> Self {
        self.options.collisions = policy;
        self
    }

    /// The separator of prefixed names (default `"__"`, as in `server__tool`).
    pub fn name_separator(mut self, separator: impl Into<String>) -> Self {
        self.options.separator = separator.into();
        self
    }

    /// The degradation policy for calls (default [`Degradation::default`]).
    pub fn degradation(mut self, d: Degradation) -> Self {
        self.options.degradation = d;
        self
    }

    /// The backoff between connection attempts of a failed server: a server that failed `n`
    /// times in a row is retried by a run no sooner than `base · 2^(n-1)` (at most `max`) after
    /// its last attempt (default 500 ms, 30 s). [`Hub::connect_all`] ignores it.
    pub fn connect_backoff(mut self, base: Duration, max: Duration) -> Self {
        self.options.connect_base = base;
        self.options.connect_max = max;
        self
    }

    /// Serves the stdio servers from this poller instead of one the Hub creates. The Hub does not
    /// stop a poller it was given.
    pub fn poller(mut self, poller: &ConnectionPoller) -> Self {
        self.poller = Some(poller.clone());
        self
    }

    /// Builds the Hub. Nothing connects until [`Hub::resolve`] or [`Hub::connect_all`].
    ///
    /// # Panics
    /// If the OS refuses to create a poller (out of file descriptors), as
    /// [`ConnectionPoller::new`].
    pub fn build(self) -> Hub {
        let (poller, owns_poller) = match self.poller {
            Some(p) => (p, false),
            None => (ConnectionPoller::new(), true),
        };
        Hub {
            inner: Arc::new(Inner {
                options: self.options,
                poller,
                owns_poller,
                state: Mutex::new(State::default()),
                registry: RwLock::new(Arc::new(Registry::default())),
                connecting: Mutex::new(()),
                events: Mutex::new(Vec::new()),
            }),
        }
    }
}

/// Many MCP servers for one host program: settings hierarchy, discovery, parallel connect,
/// failure bookkeeping and retry, tool allow-lists, collisions, routing and degradation.
///
/// `Hub` is `Send + Sync`; share it (in an `Arc`) and call tools from many threads at once.
/// Dropping it disconnects everything.
///
/// ```no_run
/// use mcp_blocking::{Hub, Run, ServerConfig, Setting};
/// let hub = Hub::builder()
///     .servers([
///         ServerConfig::stdio("filesystem", "mcp-server-filesystem")
///             .args(["/data"])
///             .with_description("Read, write, and search local files and directories"),
///         ServerConfig::stdio("github", "mcp-server-github")
///             .with_description("GitHub repos, issues, pull requests, code search"),
///     ])
///     .discovery(true)
///     .build();
/// let tools = hub.resolve(&Run::new().query("read the config file"));
/// for failed in &tools.failed {
///     eprintln!("unavailable: {} ({})", failed.server, failed.reason);
/// }
/// let request_tools = tools.to_openai_chat();
/// # let _ = request_tools;
/// let result = hub.call_tool("read_file", serde_json::json!({"path": "/data/config.toml"}))?;
/// println!("{}", result.text());
/// hub.disconnect();
/// # Ok::<(), mcp_blocking::Error>(())
/// ```
pub struct Hub {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("connected", &self.connected_servers())
            .field("failed", &self.failed_server_names())
            .field("degraded", &self.degraded_servers())
            .finish()
    }
}

pub(crate) struct Inner {
    pub(crate) options: Options,
    pub(crate) poller: ConnectionPoller,
    owns_poller: bool,
    pub(crate) state: Mutex<State>,
    registry: RwLock<Arc<Registry>>,
    /// Serialises connecting, injecting and disconnecting (never held by calls).
    connecting: Mutex<()>,
    events: Mutex<Vec<mpsc::Sender<HubEvent>>>,
}

impl Default for Hub {
    fn default() -> Self {
        Hub::builder().build()
    }
}

impl Hub {
    /// Starts building a Hub.
    pub fn builder() -> HubBuilder {
        HubBuilder {
            options: Options {
                servers: [Setting::Inherit, Setting::Inherit, Setting::Inherit],
                tools: [Setting::Inherit, Setting::Inherit, Setting::Inherit],
                discovery: false,
                threshold: ServerDiscovery::DEFAULT_THRESHOLD,
                collisions: CollisionPolicy::default(),
                separator: "__".into(),
                degradation: Degradation::default(),
                connect_base: Duration::from_millis(500),
                connect_max: Duration::from_secs(30),
            },
            poller: None,
        }
    }

    /// A Hub for these host-level servers, with the default options.
    pub fn new(servers: impl IntoIterator<Item = ServerConfig>) -> Hub {
        Hub::builder().servers(servers).build()
    }

    /// Prepares a run: resolves both settings, connects (in parallel) the servers it needs that
    /// are not connected — new ones, failed ones whose backoff has passed, degraded ones and
    /// ones whose connection ended — and returns the tools the run may use.
    ///
    /// Discovery (when on) applies to the first run whose server list is not empty; the servers
    /// it leaves out are not connected for the Hub's life (until [`connect_all`](Self::connect_all)
    /// or [`disconnect`](Self::disconnect)). A run whose server setting resolves to an empty
    /// list connects nothing and gets no tools; connections stay open.
    ///
    /// Never fails: a server that cannot be connected is logged at WARN, recorded (see
    /// [`failures`](Self::failures)) and left out.
    pub fn resolve(&self, run: &Run) -> ToolSet {
        let o = &self.inner.options;
        let servers = resolve_setting(&[&o.servers[0], &o.servers[1], &o.servers[2], &run.servers])
            .unwrap_or_default();
        let allow = resolve_setting(&[&o.tools[0], &o.tools[1], &o.tools[2], &run.tools]);
        if servers.is_empty() {
            return self.tool_set(&[], allow.as_deref());
        }
        let names = self
            .inner
            .connect_for_run(&servers, run.query.as_deref(), false);
        self.tool_set(&names, allow.as_deref())
    }

    /// Connects every server of the resolved configuration now (RobotLab's `connect_mcp!`),
    /// without discovery and ignoring the retry backoff, and marks the Hub initialised. Returns
    /// the servers that failed (empty when all connected).
    pub fn connect_all(&self) -> Vec<ServerFailure> {
        let o = &self.inner.options;
        let servers =
            resolve_setting(&[&o.servers[0], &o.servers[1], &o.servers[2]]).unwrap_or_default();
        let names = self.inner.connect_for_run(&servers, None, true);
        let state = self.inner.lock_state();
        names.iter().filter_map(|n| state.failure(n)).collect()
    }

    /// Adopts clients connected elsewhere and marks the Hub initialised (RobotLab's
    /// `inject_mcp!`). `tools` gives the tool lists of some servers (by server name); the others
    /// are asked with `tools/list`. A client replaces a Hub server of the same name. The Hub does
    /// not close injected clients: [`disconnect`](Self::disconnect) only lets go of them.
    pub fn inject(&self, clients: Vec<Arc<Client>>, tools: Vec<(String, Vec<Tool>)>) {
        self.inner.inject(clients, tools);
    }

    /// Closes every server the Hub started (in parallel), lets go of injected clients, stops the
    /// Hub's own poller, and forgets all state, so no process or thread is left. The Hub can be
    /// used again: the next run connects afresh.
    pub fn disconnect(&self) {
        self.inner.disconnect_all();
    }

    /// Calls a tool by its offered name, routed to its server, with the degradation policy.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (server `hub`) when no connected server offers `name`; the
    /// server's error otherwise (after the retries for a retryable one, see [`Degradation`]).
    pub fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, Error> {
        self.call_tool_with(name, arguments, &CallOptions::default())
    }

    /// [`call_tool`](Self::call_tool) with per-call options (timeout, progress).
    ///
    /// # Errors
    /// As [`call_tool`](Self::call_tool).
    pub fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        opts: &CallOptions,
    ) -> Result<CallToolResult, Error> {
        let route = self.route(name)?;
        let policy = &self.inner.options.degradation;
        let mut retry = 0;
        loop {
            match route
                .client
                .call_tool_with(&route.tool, arguments.clone(), opts)
            {
                Ok(result) => return Ok(result),
                Err(e) if e.is_retryable() && retry < policy.extra_retries => {
                    let wait = policy.delay(retry);
                    log::info!(
                        "server `{}`: `{}` failed ({e}); retry {} of {} in {wait:?}",
                        route.server,
                        route.tool,
                        retry + 1,
                        policy.extra_retries
                    );
                    std::thread::sleep(wait);
                    retry += 1;
                }
                Err(e) => {
                    if e.is_retryable() && policy.graceful {
                        self.inner.degrade(&route.server, &e);
                    }
                    return Err(e);
                }
            }
        }
    }

    /// Every tool offered by the connected servers, before any allow-list.
    pub fn tools(&self) -> Vec<HubTool> {
        self.inner.registry().tools.clone()
    }

    /// The names of the servers that are connected now, in configuration order.
    pub fn connected_servers(&self) -> Vec<String> {
        self.inner.lock_state().connected_names()
    }

    /// The client of a server, when the Hub knows it.
    pub fn client(&self, server: &str) -> Option<Arc<Client>> {
        self.inner.lock_state().client(server)
    }

    /// The names of the servers whose last connection attempt failed (RobotLab's
    /// `failed_mcp_server_names`).
    pub fn failed_server_names(&self) -> Vec<String> {
        self.failures().into_iter().map(|f| f.server).collect()
    }

    /// Each failed server with the reason and the number of failed attempts in a row.
    pub fn failures(&self) -> Vec<ServerFailure> {
        self.inner.lock_state().failures()
    }

    /// The names of the degraded servers (@robojs/ai's `degradedMcpServers`).
    pub fn degraded_servers(&self) -> Vec<String> {
        self.degraded().into_iter().map(|d| d.server).collect()
    }

    /// Each degraded server with the reason and the tools that were removed.
    pub fn degraded(&self) -> Vec<DegradedServer> {
        self.inner.lock_state().degraded()
    }

    /// A one-paragraph note for the system prompt naming the unavailable external tools
    /// (degraded and failed servers), or `None` when all are available.
    pub fn status_note(&self) -> Option<String> {
        let state = self.inner.lock_state();
        degrade::status_note(&state.degraded(), &state.failures())
    }

    /// Whether a run (or `connect_all`, or `inject`) has initialised the Hub.
    pub fn is_initialized(&self) -> bool {
        self.inner.lock_state().initialized
    }

    /// A channel of [`HubEvent`]s from now on (connections, failures, refreshes, degradation).
    /// Events are sent from the thread where they happen; a dropped receiver is forgotten.
    pub fn events(&self) -> mpsc::Receiver<HubEvent> {
        let (tx, rx) = mpsc::channel();
        self.inner
            .events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(tx);
        rx
    }

    /// The poller serving the Hub's stdio servers.
    pub fn poller(&self) -> &ConnectionPoller {
        &self.inner.poller
    }

    fn route(&self, name: &str) -> Result<Route, Error> {
        self.inner
            .registry()
            .routes
            .get(name)
            .cloned()
            .ok_or_else(|| Error::InvalidArgument {
                server: "hub".into(),
                detail: format!("no connected server offers a tool named `{name}`"),
            })
    }

    fn tool_set(&self, servers: &[String], allow: Option<&[String]>) -> ToolSet {
        let registry = self.inner.registry();
        let tools = registry
            .tools
            .iter()
            .filter(|t| servers.contains(&t.server))
            .filter(|t| allow.map_or(true, |a| a.iter().any(|e| t.matches(e))))
            .cloned()
            .collect();
        let state = self.inner.lock_state();
        ToolSet {
            tools,
            failed: servers.iter().filter_map(|s| state.failure(s)).collect(),
            degraded: state.degraded(),
            skipped: state.skipped.iter().cloned().collect(),
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.inner.disconnect_all();
    }
}

impl Inner {
    pub(crate) fn lock_state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn registry(&self) -> Arc<Registry> {
        Arc::clone(&self.registry.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Rebuilds the routes from the connected servers. Called with the state locked.
    pub(crate) fn rebuild(&self, state: &State) {
        let servers = state.named_tools();
        let refs: Vec<(&str, &[Tool], Arc<Client>, bool)> = servers
            .iter()
            .map(|(n, t, c, live)| (n.as_str(), t.as_slice(), Arc::clone(c), *live))
            .collect();
        let reg = Registry::build(&refs, self.options.collisions, &self.options.separator);
        *self.registry.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(reg);
    }

    pub(crate) fn emit(&self, event: HubEvent) {
        let mut senders = self.events.lock().unwrap_or_else(|p| p.into_inner());
        senders.retain(|tx| tx.send(event.clone()).is_ok());
    }

    /// A new Hub-owned client for `config`, refreshing its tools on `list_changed`.
    pub(crate) fn new_client(self: &Arc<Self>, config: ServerConfig) -> Arc<Client> {
        let weak: Weak<Inner> = Arc::downgrade(self);
        Arc::new(
            Client::builder(config)
                .poller(&self.poller)
                .on_notification(move |server: &str, n: Notification| {
                    if n == Notification::ToolsListChanged {
                        if let Some(inner) = weak.upgrade() {
                            inner.refresh_tools(server);
                        }
                    }
                })
                .build(),
        )
    }

    fn stop_own_poller(&self) {
        if self.owns_poller {
            if let Err(e) = self.poller.stop(Duration::from_secs(5)) {
                log::warn!("hub: the connection poller did not stop: {e}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn hub_is_send_and_sync() {
        assert_send_sync::<Hub>();
        assert_send_sync::<ToolSet>();
    }

    #[test]
    fn an_unknown_tool_names_the_hub() {
        let hub = Hub::default();
        let err = hub.call_tool("nope", Value::Null).err();
        assert!(matches!(err, Some(Error::InvalidArgument { ref server, .. }) if server == "hub"));
    }

    #[test]
    fn a_run_with_no_servers_connects_nothing() {
        let hub = Hub::default();
        let set = hub.resolve(&Run::new());
        assert!(set.tools.is_empty() && set.failed.is_empty());
        assert!(!hub.is_initialized());
    }
}
