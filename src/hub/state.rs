//! The Hub's bookkeeping: one slot per server it knows, and the work that changes slots
//! (connecting, injecting, refreshing, degrading, disconnecting).
//!
//! ```text
//!   Idle ──connect ok──> Connected ──calls keep failing──> Degraded ──later run──> (connect)
//!    │                      │  ├─ list_changed: tools fetched again
//!    │                      │  └─ a call finds the connection ended: reconnected, tools fetched
//!    └──connect fails──> Failed ──later run, after backoff──> (connect)
//! ```

use crate::sync::lock;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use super::compact::{self, KeptPage, KeptTool};
use super::degrade::{backoff, DegradedServer, Failed, ServerFailure};
use super::discovery::ServerDiscovery;
use super::registry::Route;
use super::{HubEvent, Inner};
use crate::client::{CallOptions, Client};
use crate::config::ServerConfig;
use crate::error::{ConnectError, ConnectErrorKind, Error};
use crate::model::{CallToolResult, Tool};

/// A client and the outcome of listing its tools.
type Listed = (Arc<Client>, Result<Vec<Tool>, Error>);

/// A server's name and the outcome of connecting it: its tools, as the Hub keeps them.
type Connected = (String, Result<Arc<[KeptTool]>, Error>);

#[derive(Default)]
pub(crate) struct State {
    /// Whether a resolving run, `connect_all` or `inject` has happened.
    pub(crate) initialized: bool,
    /// Every server the Hub has met, in the order it met them.
    slots: Vec<Slot>,
    /// Servers discovery left out on the first run.
    pub(crate) skipped: BTreeSet<String>,
}

struct Slot {
    name: String,
    client: Arc<Client>,
    /// Given by `inject`: never closed by the Hub.
    injected: bool,
    status: Status,
    /// Shared with the registry, which offers them without a copy.
    tools: Arc<[KeptTool]>,
    failure: Option<Failure>,
}

#[derive(PartialEq)]
enum Status {
    Idle,
    Connected,
    Failed,
    Degraded { reason: String, tools: Vec<String> },
}

struct Failure {
    reason: String,
    attempts: u32,
    at: Instant,
}

impl State {
    fn slot(&self, name: &str) -> Option<&Slot> {
        self.slots.iter().find(|s| s.name == name)
    }

    fn slot_mut(&mut self, name: &str) -> Option<&mut Slot> {
        self.slots.iter_mut().find(|s| s.name == name)
    }

    pub(crate) fn connected_names(&self) -> Vec<String> {
        self.slots
            .iter()
            .filter(|s| s.status == Status::Connected)
            .map(|s| s.name.clone())
            .collect()
    }

    /// The configuration of every server the Hub has met, in order.
    pub(crate) fn configs(&self) -> Vec<ServerConfig> {
        self.slots
            .iter()
            .map(|s| s.client.config().clone())
            .collect()
    }

    pub(crate) fn client(&self, name: &str) -> Option<Arc<Client>> {
        self.slot(name).map(|s| Arc::clone(&s.client))
    }

    pub(crate) fn failure(&self, name: &str) -> Option<ServerFailure> {
        let s = self.slot(name)?;
        match (&s.status, &s.failure) {
            (Status::Failed, Some(f)) => Some(ServerFailure {
                server: s.name.clone(),
                reason: f.reason.clone(),
                attempts: f.attempts,
            }),
            _ => None,
        }
    }

    pub(crate) fn failures(&self) -> Vec<ServerFailure> {
        self.slots
            .iter()
            .filter_map(|s| self.failure(&s.name))
            .collect()
    }

    pub(crate) fn degraded(&self) -> Vec<DegradedServer> {
        self.slots
            .iter()
            .filter_map(|s| match &s.status {
                Status::Degraded { reason, tools } => Some(DegradedServer {
                    server: s.name.clone(),
                    reason: reason.clone(),
                    tools: tools.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    /// The connected servers, and those that were connected once (degraded or failed since:
    /// their last tool lists keep their names reserved, so other servers' names do not change),
    /// with their tools and clients, in order, each with whether it is connected.
    pub(crate) fn named_tools(&self) -> Vec<NamedTools> {
        self.slots
            .iter()
            .filter(|s| s.status == Status::Connected || !s.tools.is_empty())
            .map(|s| {
                let live = s.status == Status::Connected;
                (
                    s.name.clone(),
                    Arc::clone(&s.tools),
                    Arc::clone(&s.client),
                    live,
                )
            })
            .collect()
    }
}

/// A server's name, its tools, its client, and whether it is connected.
pub(crate) type NamedTools = (String, Arc<[KeptTool]>, Arc<Client>, bool);

/// Opens a client and lists its tools, in the form the Hub keeps them; closes it again when
/// listing fails.
///
/// Each tool is kept as it is read, on the connecting thread (see `compact`): a connecting
/// thread never holds a whole parsed list, so the threads' allocations, made at about the same
/// time by many of them, stay small.
fn connect_one(client: &Client) -> Result<Arc<[KeptTool]>, Error> {
    client.open()?;
    match client.list_tools_as::<KeptPage>() {
        Ok(tools) => Ok(Arc::from(tools)),
        Err(e) => {
            let _ = client.close();
            Err(e)
        }
    }
}

impl Inner {
    /// Connects what `servers` needs (see `Hub::resolve`); returns the names of the run's servers
    /// after discovery. `eager` (from `connect_all`) skips discovery and the backoff.
    pub(crate) fn connect_for_run(
        self: &Arc<Self>,
        servers: &[ServerConfig],
        query: Option<&str>,
        eager: bool,
    ) -> Vec<String> {
        let _connecting = lock(&self.connecting);
        let mut jobs: Vec<(String, Arc<Client>)> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        {
            let mut st = self.lock_state();
            let mut unique: Vec<&ServerConfig> = Vec::new();
            for s in servers {
                if !unique.iter().any(|u| u.name() == s.name()) {
                    unique.push(s);
                }
            }
            let selected: Vec<&ServerConfig> = if eager {
                st.skipped.clear();
                unique
            } else if !st.initialized && self.options.discovery && query.is_some() {
                let owned: Vec<ServerConfig> = unique.iter().map(|s| (*s).clone()).collect();
                let picked = ServerDiscovery::select_indices(
                    query.unwrap_or_default(),
                    &owned,
                    self.options.threshold,
                );
                for (i, s) in unique.iter().enumerate() {
                    if !picked.contains(&i) && st.slot(s.name()).is_none() {
                        log::info!("hub: discovery leaves out server `{}`", s.name());
                        st.skipped.insert(s.name().to_owned());
                    }
                }
                unique
                    .iter()
                    .enumerate()
                    .filter(|(i, s)| picked.contains(i) || st.slot(s.name()).is_some())
                    .map(|(_, s)| *s)
                    .collect()
            } else {
                unique
                    .into_iter()
                    .filter(|s| !st.skipped.contains(s.name()))
                    .collect()
            };
            st.initialized = true;
            let now = Instant::now();
            for cfg in selected {
                names.push(cfg.name().to_owned());
                if st.slot(cfg.name()).is_none() {
                    let client = self.new_client(cfg.clone());
                    st.slots.push(Slot {
                        name: cfg.name().to_owned(),
                        client,
                        injected: false,
                        status: Status::Idle,
                        tools: Arc::new([]),
                        failure: None,
                    });
                }
                let Some(slot) = st.slot(cfg.name()) else {
                    continue;
                };
                let due = match &slot.status {
                    Status::Idle | Status::Degraded { .. } => true,
                    Status::Connected => {
                        let lost = !slot.client.is_connected();
                        if lost {
                            log::warn!(
                                "server `{}`: the connection ended; reconnecting",
                                slot.name
                            );
                        }
                        lost
                    }
                    Status::Failed => {
                        eager
                            || slot.failure.as_ref().is_none_or(|f| {
                                let wait = backoff(
                                    f.attempts.saturating_sub(1),
                                    self.options.connect_base,
                                    self.options.connect_max,
                                );
                                now >= crate::deadline::add(f.at, wait)
                            })
                    }
                };
                if due {
                    jobs.push((slot.name.clone(), Arc::clone(&slot.client)));
                }
            }
        }
        if jobs.is_empty() {
            return names;
        }
        let results = connect_in_parallel(&jobs);
        let mut st = self.lock_state();
        for (name, result) in results {
            let Some(slot) = st.slot_mut(&name) else {
                continue;
            };
            match result {
                Ok(tools) => {
                    log::info!("server `{name}`: connected, {} tools", tools.len());
                    let n = tools.len();
                    slot.status = Status::Connected;
                    slot.tools = tools;
                    slot.failure = None;
                    self.emit(HubEvent::Connected {
                        server: name,
                        tools: n,
                    });
                }
                Err(e) => {
                    let reason = e.to_string();
                    log::warn!("hub: could not connect server `{name}`: {reason}");
                    let attempts = slot.failure.as_ref().map_or(0, |f| f.attempts) + 1;
                    slot.status = Status::Failed;
                    slot.failure = Some(Failure {
                        reason: reason.clone(),
                        attempts,
                        at: Instant::now(),
                    });
                    self.emit(HubEvent::ConnectFailed {
                        server: name,
                        reason,
                    });
                }
            }
        }
        self.rebuild(&st);
        names
    }

    /// Adopts externally connected clients (see `Hub::inject`).
    pub(crate) fn inject(&self, clients: Vec<Arc<Client>>, tools: Vec<(String, Vec<Tool>)>) {
        let _connecting = lock(&self.connecting);
        let given: BTreeMap<String, Vec<Tool>> = tools.into_iter().collect();
        let listed: Vec<Listed> = clients
            .into_iter()
            .map(|c| {
                let tools = match given.get(c.server_name()) {
                    // A list given with the client passes the client's policy too.
                    Some(t) => Ok(super::policy::allowed(c.config(), t)),
                    None => c.list_tools(),
                };
                (c, tools)
            })
            .collect();
        let mut replaced = Vec::new();
        {
            let mut st = self.lock_state();
            st.initialized = true;
            for (client, tools) in listed {
                let name = client.server_name().to_owned();
                if let Some(i) = st.slots.iter().position(|s| s.name == name) {
                    let old = st.slots.remove(i);
                    if !old.injected {
                        replaced.push(old.client);
                    }
                }
                st.skipped.remove(&name);
                let (status, tools, failure) = match tools {
                    Ok(t) => (Status::Connected, compact::keep(&t), None),
                    Err(e) => {
                        log::warn!("hub: injected server `{name}` could not list its tools: {e}");
                        let failure = Failure {
                            reason: e.to_string(),
                            attempts: 1,
                            at: Instant::now(),
                        };
                        (Status::Failed, Arc::from([]), Some(failure))
                    }
                };
                st.slots.push(Slot {
                    name,
                    client,
                    injected: true,
                    status,
                    tools,
                    failure,
                });
            }
            self.rebuild(&st);
        }
        close_in_parallel(&replaced);
    }

    /// Fetches a connected server's tools again (after `notifications/tools/list_changed`).
    pub(crate) fn refresh_tools(&self, server: &str) {
        let client = match self.lock_state().slot(server) {
            Some(s) if s.status == Status::Connected => Arc::clone(&s.client),
            _ => return,
        };
        match client.list_tools_as::<KeptPage>() {
            Ok(tools) => {
                let n = tools.len();
                let tools: Arc<[KeptTool]> = Arc::from(tools);
                let mut st = self.lock_state();
                let Some(slot) = st.slot_mut(server) else {
                    return;
                };
                if slot.status != Status::Connected || !Arc::ptr_eq(&slot.client, &client) {
                    return;
                }
                slot.tools = tools;
                self.rebuild(&st);
                log::debug!("server `{server}`: tool list refreshed, {n} tools");
                self.emit(HubEvent::ToolsRefreshed {
                    server: server.to_owned(),
                    tools: n,
                });
            }
            Err(e) => log::warn!("server `{server}`: could not refresh the tool list: {e}"),
        }
    }

    /// One attempt at a call: reconnects the server first when its connection has ended, then
    /// sends the call. A failure says whether the request may have reached the server.
    pub(crate) fn attempt(
        &self,
        route: &Route,
        arguments: &serde_json::Value,
        opts: &CallOptions,
    ) -> Result<CallToolResult, Failed> {
        if !route.client.is_connected() {
            self.reconnect(route)
                .map_err(|error| Failed { error, sent: false })?;
        }
        route
            .client
            .call_tool_with(&route.tool, arguments.clone(), opts)
            .map_err(|error| {
                // Refused before anything was handed to the connection.
                let sent = !matches!(
                    error,
                    Error::NotConnected { .. } | Error::InvalidArgument { .. }
                );
                Failed { error, sent }
            })
    }

    /// Opens a server's connection again (for stdio, a new process) and fetches its tools.
    fn reconnect(&self, route: &Route) -> Result<(), Error> {
        log::info!(
            "server `{}`: the connection ended; reconnecting",
            route.server
        );
        route.client.open()?;
        self.refresh_tools(&route.server);
        Ok(())
    }

    /// After a call that may have run failed with `error` and is not sent again: whether the
    /// server is still usable. A closed connection is reconnected; a timed-out or broken one
    /// must answer `ping`.
    pub(crate) fn check_server(&self, route: &Route, error: &Error) -> bool {
        if matches!(error, Error::Closed { .. }) || !route.client.is_connected() {
            return match self.reconnect(route) {
                Ok(()) => true,
                Err(e) => {
                    log::warn!("server `{}`: could not reconnect: {e}", route.server);
                    false
                }
            };
        }
        // A modern (2026-07-28) server has no `ping`: `server/discover` is as cheap.
        let alive = match route.client.ping() {
            Err(Error::Unsupported { .. }) => route
                .client
                .request("server/discover", None, &crate::CallOptions::default())
                .map(|_| ()),
            other => other,
        };
        match alive {
            Ok(()) => true,
            Err(e) => {
                log::warn!(
                    "server `{}`: does not answer `ping` after a failed call: {e}",
                    route.server
                );
                false
            }
        }
    }

    /// Drops a server from the tool set after its calls kept failing.
    pub(crate) fn degrade(&self, server: &str, error: &Error) {
        let reason = error.to_string();
        let removed: Vec<String> = self
            .registry()
            .offered
            .iter()
            .filter(|t| &*t.server == server)
            .map(|t| t.name.clone())
            .collect();
        let client = {
            let mut st = self.lock_state();
            let Some(slot) = st.slot_mut(server) else {
                return;
            };
            if slot.status != Status::Connected {
                return;
            }
            // The tools stay known (not offered) so the other servers' names do not change.
            slot.status = Status::Degraded {
                reason: reason.clone(),
                tools: removed,
            };
            let client = (!slot.injected).then(|| Arc::clone(&slot.client));
            self.rebuild(&st);
            client
        };
        log::warn!(
            "server `{server}`: degraded after repeated failures, its tools are removed until a \
             later run reconnects it: {reason}"
        );
        self.emit(HubEvent::Degraded {
            server: server.to_owned(),
            reason,
        });
        if let Some(client) = client {
            if let Err(e) = client.close() {
                log::debug!("server `{server}`: error while closing: {e}");
            }
        }
    }

    /// Closes everything the Hub started and forgets all state (see `Hub::disconnect`).
    pub(crate) fn disconnect_all(&self) {
        let _connecting = lock(&self.connecting);
        let slots = {
            let mut st = self.lock_state();
            let slots = std::mem::take(&mut st.slots);
            st.skipped.clear();
            st.initialized = false;
            self.rebuild(&st);
            slots
        };
        let own: Vec<Arc<Client>> = slots
            .into_iter()
            .filter(|s| !s.injected)
            .map(|s| s.client)
            .collect();
        close_in_parallel(&own);
        drop(own);
        self.stop_own_poller();
    }
}

/// Connects every job on its own named thread; returns the results in job order.
fn connect_in_parallel(jobs: &[(String, Arc<Client>)]) -> Vec<Connected> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|(name, client)| {
                let spawned = std::thread::Builder::new()
                    .name(format!("hub-connect-{name}"))
                    .spawn_scoped(scope, move || connect_one(client));
                (name, client, spawned)
            })
            .collect();
        handles
            .into_iter()
            .map(|(name, client, spawned)| {
                let result = match spawned {
                    Ok(handle) => handle.join().unwrap_or_else(|_| {
                        let target = client.target();
                        let detail = format!("{target}: the connecting thread panicked");
                        Err(
                            ConnectError::new(name, &target, ConnectErrorKind::Unreachable, detail)
                                .into(),
                        )
                    }),
                    Err(e) => {
                        log::debug!("hub: no thread for `{name}` ({e}); connecting inline");
                        connect_one(client)
                    }
                };
                (name.clone(), result)
            })
            .collect()
    })
}

/// Closes clients, each on its own named thread (a stdio close may wait for the process).
fn close_in_parallel(clients: &[Arc<Client>]) {
    let close = |c: &Client| {
        if let Err(e) = c.close() {
            log::debug!("server `{}`: error while closing: {e}", c.server_name());
        }
    };
    std::thread::scope(|scope| {
        for c in clients {
            let spawned = std::thread::Builder::new()
                .name(format!("hub-close-{}", c.server_name()))
                .spawn_scoped(scope, move || close(c));
            if spawned.is_err() {
                close(c);
            }
        }
    });
}
