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

mod builder;
mod compact;
mod degrade;
mod discovery;
mod events;
mod export;
// Its name cleaning and digest also name a sandboxed server's folders.
pub(crate) mod names;
mod policy;
mod porter;
mod registry;
mod run;
mod settings;
mod state;
mod tasks;

use crate::sync::{lock, read_lock, write_lock};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use serde_json::Value;

use crate::client::{CallOptions, Client};
use crate::config::{ServerConfig, ServerPolicy};
use crate::error::{Error, InvalidArgumentKind};
use crate::handler::Notification;
use crate::model::{CallToolResult, Tool};
use crate::transport::stdio::ConnectionPoller;

pub use builder::HubBuilder;
pub use degrade::{Degradation, DegradedServer, ServerFailure};
pub use discovery::ServerDiscovery;
pub(crate) use discovery::Terms;
pub use registry::{CollisionPolicy, HubTool};
pub use run::{HubEvent, Run, ToolSet};
pub(crate) use settings::resolve_setting;
pub use settings::Setting;

use builder::Options;
use degrade::Next;
use registry::{Offered, Registry, Route};
use state::State;

/// Many MCP servers for one host program: settings hierarchy, discovery, parallel connect,
/// failure bookkeeping and retry, tool allow-lists, collisions, routing and degradation.
///
/// `Hub` is `Send + Sync`; share it (in an `Arc`) and call tools from many threads at once.
/// Dropping it disconnects everything.
///
/// ```no_run
/// use mcp_blocking::{Hub, ServerConfig};
/// use mcp_blocking::hub::{Run, Setting};
/// let hub = Hub::builder()
///     .servers([
///         ServerConfig::stdio("filesystem", "mcp-server-filesystem")
///             .with_args(["/data"])
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
    events: events::Events,
}

impl Default for Hub {
    fn default() -> Self {
        Hub::builder().build()
    }
}

impl Hub {
    /// Starts building a Hub.
    pub fn builder() -> HubBuilder {
        HubBuilder::new()
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

    /// Connects every server of the resolved configuration now,
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

    /// Adopts clients connected elsewhere and marks the Hub initialised. `tools` gives the tool lists of some servers (by server name); the others
    /// are asked with `tools/list`. A given list is filtered by the client's
    /// [policy](crate::config::ServerPolicy), as the client filters its own lists. A client replaces a Hub server of the same name. The Hub does
    /// not close injected clients: [`disconnect`](Self::disconnect) only lets go of them, and a
    /// degraded one is not closed (a later run calls its `open`, a no-op while it is connected,
    /// and lists its tools again). Their `list_changed` notifications
    /// go to their own handlers: call [`refresh_tools`](Self::refresh_tools) from there.
    pub fn inject(&self, clients: Vec<Arc<Client>>, tools: Vec<(String, Vec<Tool>)>) {
        self.inner.inject(clients, tools);
    }

    /// Fetches a connected server's tool list again now. The Hub does this by itself when one of
    /// its own servers sends `notifications/tools/list_changed`; injected clients carry their own
    /// handlers, so their owner calls this instead.
    pub fn refresh_tools(&self, server: &str) {
        self.inner.refresh_tools(server);
    }

    /// Closes every server the Hub started (in parallel), lets go of injected clients, stops the
    /// Hub's own poller, and forgets all state, so no process or thread is left. The Hub can be
    /// used again: the next run connects afresh.
    pub fn disconnect(&self) {
        self.inner.disconnect_all();
    }

    /// Calls a tool by its offered name, routed to its server, with the degradation policy: a
    /// server whose connection has ended is reconnected first; a failure is retried only when a
    /// retry cannot run the tool twice (see [`Degradation`]).
    ///
    /// # Errors
    /// [`Error::ToolNotAllowed`] naming the server when its policy refuses the tool (see
    /// [`ServerPolicy`]; nothing is sent); [`Error::InvalidArgument`] (server `hub`) when no
    /// connected server offers `name` otherwise;
    /// [`Error::Config`] (server `hub`) when a [`Degradation`] delay is out of range (see
    /// [`Degradation::validate`]); the server's error otherwise (after the retries for a
    /// retryable one, see [`Degradation`]).
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
        let policy = &self.inner.options.degradation;
        policy.validate()?;
        let (route, may_resend) = self.route(name)?;
        let mut retry = 0;
        loop {
            let failed = match self.inner.attempt(&route, &arguments, opts) {
                Ok(result) => return Ok(result),
                Err(failed) => failed,
            };
            // A call its caller gave up is neither retried nor held against the server.
            if opts.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
                return Err(failed.error);
            }
            match policy.next(&failed, retry, may_resend) {
                Next::Retry => {
                    let wait = policy.delay(retry);
                    log::info!(
                        "server `{}`: `{}` failed ({}); retry {} of {} in {wait:?}",
                        route.server,
                        route.tool,
                        failed.error,
                        retry + 1,
                        policy.extra_retries
                    );
                    std::thread::sleep(wait);
                    retry += 1;
                }
                Next::GiveUp => return Err(failed.error),
                Next::Degrade => {
                    if policy.graceful {
                        self.inner.degrade(&route.server, &failed.error);
                    }
                    return Err(failed.error);
                }
                Next::CheckServer => {
                    log::info!(
                        "server `{}`: `{}` failed ({}) and is not sent again: the request may \
                         have reached the server, and the tool is not marked idempotent",
                        route.server,
                        route.tool,
                        failed.error
                    );
                    if !self.inner.check_server(&route, &failed.error) && policy.graceful {
                        self.inner.degrade(&route.server, &failed.error);
                    }
                    return Err(failed.error);
                }
            }
        }
    }

    /// Every tool offered by the connected servers, before any allow-list (each server's
    /// [policy](ServerPolicy) applied: a tool it excludes is not here).
    pub fn tools(&self) -> Vec<HubTool> {
        let registry = self.inner.registry();
        registry.offered.iter().map(Offered::to_hub_tool).collect()
    }

    /// The degradation policy calls follow (see [`HubBuilder::degradation`] and
    /// [`HubBuilder::config_report`]).
    pub fn degradation(&self) -> &Degradation {
        &self.inner.options.degradation
    }

    /// The names of the servers that are connected now, in configuration order.
    pub fn connected_servers(&self) -> Vec<String> {
        self.inner.lock_state().connected_names()
    }

    /// The skills of every connected server that offers the skills extension, in configuration
    /// order: each server's name with its [`Client::list_skills`] (entries only; no skill file
    /// is read). The servers are asked one after another, each within its own timeout; one that
    /// fails leaves the others' lists intact.
    pub fn list_skills(&self) -> Vec<(String, Result<Vec<crate::model::SkillEntry>, Error>)> {
        self.connected_servers()
            .into_iter()
            .filter_map(|name| {
                let client = self.client(&name)?;
                client
                    .supports_skills()
                    .then(|| (name, client.list_skills()))
            })
            .collect()
    }

    /// Loads a skill (see [`Client::load_skill`]) from one of the connected servers: from
    /// `server` when it is given, else from the one connected server whose `skills/list` names
    /// it. `skill` is the skill's name or the URI of its `SKILL.md`. Only `SKILL.md` is read,
    /// and the skill is returned only once it is verified against its entry (size, digest,
    /// frontmatter); [`LoadedSkill::server`](crate::LoadedSkill::server) says where it came
    /// from.
    ///
    /// Only connected servers are asked: load skills after a run has resolved the Hub, or
    /// after [`connect_all`](Self::connect_all).
    ///
    /// ```no_run
    /// use mcp_blocking::{Hub, ServerConfig};
    /// let hub = Hub::new([ServerConfig::stdio("docs", "docs-server")]);
    /// hub.connect_all();
    /// let skill = hub.load_skill(None, "pdf-processing")?;
    /// println!("{} from {}", skill.entry.uri, skill.server());
    /// # Ok::<(), mcp_blocking::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (server `hub`) of kind
    /// [`UnknownName`](InvalidArgumentKind::UnknownName) when `server` is not connected, or of
    /// kind [`Ambiguous`](InvalidArgumentKind::Ambiguous) when several servers list the skill
    /// (nothing is read: name the server); [`Error::Skill`] of kind
    /// [`NotFound`](crate::error::SkillErrorKind::NotFound) when no server lists it, or
    /// `server` does not offer the skills extension (server `hub` when none was named); a
    /// server's error from `skills/list` when no other server lists the skill; as
    /// [`Client::load_skill_entry`].
    pub fn load_skill(
        &self,
        server: Option<&str>,
        skill: &str,
    ) -> Result<crate::LoadedSkill, Error> {
        use crate::error::SkillErrorKind;
        let not_found = |server: &str, detail: String| Error::Skill {
            server: server.to_owned(),
            kind: SkillErrorKind::NotFound,
            uri: skill.to_owned(),
            detail,
        };
        if let Some(name) = server {
            let client = self.client(name).ok_or_else(|| Error::InvalidArgument {
                server: "hub".to_owned(),
                kind: InvalidArgumentKind::UnknownName,
                detail: format!("no connected server is named `{name}`"),
            })?;
            if !client.supports_skills() {
                return Err(not_found(
                    name,
                    "the server does not offer the skills extension".to_owned(),
                ));
            }
            return client.load_skill(skill);
        }
        let mut found: Vec<(Arc<Client>, crate::model::SkillEntry)> = Vec::new();
        let mut first_failure: Option<Error> = None;
        let mut asked = 0;
        for (name, listed) in self.list_skills() {
            asked += 1;
            let entries = match listed {
                Ok(entries) => entries,
                Err(e) => {
                    log::warn!("server `{name}`: its skills could not be listed: {e}");
                    first_failure.get_or_insert(e);
                    continue;
                }
            };
            let entry = entries
                .iter()
                .find(|e| e.uri == skill)
                .or_else(|| entries.iter().find(|e| e.name() == Some(skill)));
            if let (Some(entry), Some(client)) = (entry, self.client(&name)) {
                found.push((client, entry.clone()));
            }
        }
        match found.len() {
            1 => {
                let (client, entry) = found.remove(0);
                client.load_skill_entry(&entry, &crate::SkillLimits::default())
            }
            0 => Err(first_failure.unwrap_or_else(|| {
                not_found(
                    "hub",
                    format!("none of the {asked} connected servers offering skills lists it"),
                )
            })),
            _ => {
                let names: Vec<String> = found
                    .iter()
                    .map(|(c, _)| format!("`{}`", c.server_name()))
                    .collect();
                Err(Error::InvalidArgument {
                    server: "hub".to_owned(),
                    kind: InvalidArgumentKind::Ambiguous,
                    detail: format!(
                        "the skill `{skill}` is listed by several servers ({}); name one",
                        names.join(", ")
                    ),
                })
            }
        }
    }

    /// The client of a server, when the Hub knows it.
    pub fn client(&self, server: &str) -> Option<Arc<Client>> {
        self.inner.lock_state().client(server)
    }

    /// The policy of a server the Hub knows (connected, injected or configured): which of its
    /// tools are offered and callable, and which need the user's approval (the
    /// [agent](crate::agent::Agent) asks about those). `None` for a server it does not know.
    pub fn server_policy(&self, server: &str) -> Option<ServerPolicy> {
        if let Some(client) = self.client(server) {
            return Some(client.config().policy().clone());
        }
        let o = &self.inner.options;
        resolve_setting(&[&o.servers[0], &o.servers[1], &o.servers[2]])
            .unwrap_or_default()
            .into_iter()
            .find(|c| c.name() == server)
            .map(|c| c.policy().clone())
    }

    /// The names of the servers whose last connection attempt failed.
    pub fn failed_server_names(&self) -> Vec<String> {
        self.failures().into_iter().map(|f| f.server).collect()
    }

    /// Each failed server with the reason and the number of failed attempts in a row.
    pub fn failures(&self) -> Vec<ServerFailure> {
        self.inner.lock_state().failures()
    }

    /// The names of the degraded servers.
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

    /// How many unread events the channel of [`events`](Self::events) holds.
    pub const EVENTS_CAPACITY: usize = 1024;

    /// A channel of [`HubEvent`]s from now on (connections, failures, refreshes, degradation),
    /// holding at most [`EVENTS_CAPACITY`](Self::EVENTS_CAPACITY) unread events (see
    /// [`events_with_capacity`](Self::events_with_capacity)).
    pub fn events(&self) -> mpsc::Receiver<HubEvent> {
        self.events_with_capacity(Self::EVENTS_CAPACITY)
    }

    /// A channel of [`HubEvent`]s from now on, holding at most `capacity` unread events (at
    /// least 1). Events are sent from the thread where they happen, which never waits for the
    /// receiver: when the channel is full, the new event is dropped for this receiver, counted
    /// in [`dropped_events`](Self::dropped_events), and a warning is logged (at most once a
    /// second). A server can make events happen at will (each `tools/list_changed` is a
    /// [`HubEvent::ToolsRefreshed`]), so the bound keeps a slow reader from growing memory. A
    /// dropped receiver is forgotten.
    pub fn events_with_capacity(&self, capacity: usize) -> mpsc::Receiver<HubEvent> {
        self.inner.events.subscribe(capacity)
    }

    /// How many events were dropped so far because a receiver's channel was full (over all
    /// receivers of [`events`](Self::events) and
    /// [`events_with_capacity`](Self::events_with_capacity)).
    pub fn dropped_events(&self) -> u64 {
        self.inner.events.dropped()
    }

    /// The poller serving the Hub's stdio servers.
    pub fn poller(&self) -> &ConnectionPoller {
        &self.inner.poller
    }

    /// Where a call of `name` goes, and whether it may be sent again after it may have run.
    fn route(&self, name: &str) -> Result<(Route, bool), Error> {
        let registry = self.inner.registry();
        let Some(offered) = registry.find(name) else {
            return Err(self
                .refusal(name)
                .unwrap_or_else(|| Error::InvalidArgument {
                    server: "hub".into(),
                    kind: InvalidArgumentKind::UnknownName,
                    detail: format!("no connected server offers a tool named `{name}`"),
                }));
        };
        let kept = offered.kept();
        let policy = &self.inner.options.degradation;
        let may_resend = policy.may_resend_named(&offered.name, &kept.name, kept.idempotent);
        Ok((offered.route(), may_resend))
    }

    /// The refusal of a call of `name` (offered by no server) by a server's policy: the
    /// servers the Hub has met, then those configured.
    fn refusal(&self, name: &str) -> Option<Error> {
        let o = &self.inner.options;
        let mut servers: Vec<ServerConfig> = self.inner.lock_state().configs();
        let configured =
            resolve_setting(&[&o.servers[0], &o.servers[1], &o.servers[2]]).unwrap_or_default();
        for c in configured {
            if !servers.iter().any(|s| s.name() == c.name()) {
                servers.push(c);
            }
        }
        policy::refusal(&servers, name, &o.separator)
    }

    fn tool_set(&self, servers: &[String], allow: Option<&[String]>) -> ToolSet {
        let registry = self.inner.registry();
        let picked: Vec<&Offered> = registry
            .offered
            .iter()
            .filter(|t| servers.iter().any(|s| *s == *t.server))
            .filter(|t| allow.is_none_or(|a| a.iter().any(|e| t.matches(e))))
            .collect();
        // Made in one allocation of the exact size, not grown (and copied) step by step.
        let tools = picked.into_iter().map(Offered::to_hub_tool).collect();
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
        lock(&self.state)
    }

    fn registry(&self) -> Arc<Registry> {
        Arc::clone(&read_lock(&self.registry))
    }

    /// Rebuilds the routes from the connected servers. Called with the state locked.
    pub(crate) fn rebuild(&self, state: &State) {
        let servers = state.named_tools();
        let refs: Vec<registry::ServerTools<'_>> = servers
            .iter()
            .map(|(n, t, c, live)| (n.as_str(), Arc::clone(t), Arc::clone(c), *live))
            .collect();
        let reg = Registry::build(&refs, self.options.collisions, &self.options.separator);
        *write_lock(&self.registry) = Arc::new(reg);
    }

    pub(crate) fn emit(&self, event: HubEvent) {
        self.events.emit(&event);
    }

    /// A new Hub-owned client for `config`, refreshing its tools on `list_changed`.
    pub(crate) fn new_client(self: &Arc<Self>, config: ServerConfig) -> Arc<Client> {
        let weak: Weak<Inner> = Arc::downgrade(self);
        let mut builder = Client::builder(config)
            .poller(&self.poller)
            .on_notification(move |server: &str, n: Notification| {
                if n == Notification::ToolsListChanged {
                    if let Some(inner) = weak.upgrade() {
                        inner.refresh_tools(server);
                    }
                }
            });
        let answers = &self.options.answers;
        if let Some(h) = &answers.sampling {
            builder = builder.sampling_shared(Arc::clone(h));
        }
        if let Some(h) = &answers.elicitation {
            builder = builder
                .elicitation_shared(Arc::clone(h))
                .elicitation_url_mode(answers.elicitation_url);
        }
        if let Some(roots) = &answers.roots {
            builder = builder.roots(roots.clone());
        }
        Arc::new(builder.build())
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
