//! What a connection of the modern era (2026-07-28) keeps for its requests: the version and
//! the `_meta` every request carries, the log level, the `x-mcp-header` parameters of the
//! listed tools (and the headers they give a `tools/call`), `server/discover`'s result and the
//! version negotiation. I/O-free; [`Wire`](super::Wire) decides with it.

use std::collections::HashMap;
use std::sync::RwLock;

use serde_json::{json, Map, Value};

use crate::config::{echo, MODERN_PROTOCOL_VERSION};
use crate::model::{DiscoverResult, LoggingLevel, ServerCapabilities};
use crate::protocol::era::{self, ParamHeader};
use crate::sync::{read_lock, write_lock};

/// The extension's id, in `server/discover` capabilities and in the client's.
pub(crate) const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// What a modern connection keeps.
pub(crate) struct Modern {
    pub(super) version: String,
    pub(super) capabilities: Value,
    pub(super) client_info: Value,
    /// The level sent as `_meta` logLevel (see [`Op::SetLevel`]).
    pub(super) log_level: RwLock<Option<LoggingLevel>>,
    /// The `x-mcp-header` parameters of the tools listed so far, by tool name.
    pub(super) tool_headers: RwLock<HashMap<String, Vec<ParamHeader>>>,
    pub(super) discover: Option<DiscoverResult>,
    /// The server offers the tasks extension: every request declares it.
    pub(super) tasks: bool,
    /// How many times `server/discover` was refused for its version.
    pub(super) refusals: usize,
}

impl Modern {
    /// A modern connection declaring `capabilities` and `client_info` (JSON), at the newest
    /// version until `server/discover` says otherwise.
    pub(crate) fn new(capabilities: Value, client_info: Value) -> Modern {
        Modern {
            version: MODERN_PROTOCOL_VERSION.to_owned(),
            capabilities,
            client_info,
            log_level: RwLock::new(None),
            tool_headers: RwLock::new(HashMap::new()),
            discover: None,
            tasks: false,
            refusals: 0,
        }
    }

    /// The protocol version in use.
    pub(crate) fn version(&self) -> &str {
        &self.version
    }

    /// `server/discover` was refused for its version (`UnsupportedProtocolVersion`, whose
    /// `data.supported` lists the server's): whether to send it again, now at a version of
    /// ours the server lists. At most [`era::MAX_VERSION_RETRIES`] times, since a server may
    /// refuse a first request whatever it carries.
    pub(crate) fn retry_version(&mut self, data: Option<&Value>) -> bool {
        self.refusals += 1;
        match era::pick_supported(data) {
            Some(v) if self.refusals <= era::MAX_VERSION_RETRIES => {
                v.clone_into(&mut self.version);
                true
            }
            _ => false,
        }
    }

    /// Takes `server/discover`'s result: speaks a version it lists (the one in use when it
    /// lists it or lists none, else the newest of ours it lists) and keeps it; the tasks
    /// extension is declared from now on when it offers it.
    ///
    /// # Errors
    /// The versions it lists, when none of them is ours.
    pub(crate) fn discovered(&mut self, found: DiscoverResult) -> Result<(), Vec<String>> {
        let listed = &found.supported_versions;
        if !listed.is_empty() && !listed.contains(&self.version) {
            let ours = era::MODERN_VERSIONS
                .iter()
                .find(|v| listed.iter().any(|s| s == *v));
            match ours {
                Some(v) => (*v).clone_into(&mut self.version),
                None => return Err(found.supported_versions),
            }
        }
        self.tasks = offers_tasks_extension(&found.capabilities);
        self.discover = Some(found);
        Ok(())
    }

    /// The `_meta` fields every request carries.
    pub(super) fn meta(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(
            era::META_PROTOCOL_VERSION.into(),
            self.version.clone().into(),
        );
        let mut caps = self.capabilities.clone();
        if self.tasks {
            declare_tasks_extension(&mut caps);
        }
        m.insert(era::META_CLIENT_CAPABILITIES.into(), caps);
        m.insert(era::META_CLIENT_INFO.into(), self.client_info.clone());
        if let Some(level) = *read_lock(&self.log_level) {
            m.insert(era::META_LOG_LEVEL.into(), json!(level));
        }
        m
    }

    /// The HTTP headers of a request whose params (with `_meta`) are `params`: the standard
    /// ones, and for `tools/call` the `Mcp-Param-*` of the tool's `x-mcp-header` arguments.
    pub(super) fn headers(&self, method: &str, params: &Value) -> Vec<(String, String)> {
        let Some(mut headers) = era::standard_headers(method, Some(params)) else {
            return Vec::new();
        };
        if method == "tools/call" {
            if let Some(name) = params.get("name").and_then(Value::as_str) {
                if let Some(h) = read_lock(&self.tool_headers).get(name) {
                    headers.extend(era::param_header_values(h, params.get("arguments")));
                }
            }
        }
        headers
    }

    /// Records the `x-mcp-header` parameters of listed tools and drops the tools whose
    /// annotations are invalid (they cannot be called correctly).
    pub(super) fn check_tools(&self, server: &str, tools: &mut Vec<Value>) {
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
                        echo(name, 256),
                        echo(&why, 256)
                    );
                    map.remove(name);
                    false
                }
            }
        });
    }
}

/// Whether `server/discover` capabilities offer the tasks extension.
fn offers_tasks_extension(caps: &ServerCapabilities) -> bool {
    caps.extra
        .get("extensions")
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some()
}

/// Adds the tasks extension to client capabilities (a JSON object).
fn declare_tasks_extension(caps: &mut Value) {
    if let Value::Object(m) = caps {
        let ext = m
            .entry("extensions")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(e) = ext {
            e.insert(TASKS_EXTENSION.into(), json!({}));
        }
    }
}
