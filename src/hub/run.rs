//! What a run asks for ([`Run`]) and what it gets ([`ToolSet`]), and the Hub's [`HubEvent`]s.

use serde_json::Value;

use super::degrade::{self, DegradedServer, ServerFailure};
use super::export;
use super::registry::HubTool;
use super::settings::Setting;
use crate::config::{HostedMcpServer, ServerConfig};

/// The per-run settings: the user's message (for discovery) and the run level of the two
/// settings. Both settings default to [`Setting::Inherit`].
///
/// ```
/// use mcp_blocking::hub::{Run, Setting};
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

/// Something that happened to the Hub's servers; see [`Hub::events`](super::Hub::events).
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

/// The tools a run may use, with what went wrong, as [`Hub::resolve`](super::Hub::resolve) returns them.
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
    /// use mcp_blocking::hub::ToolSet;
    /// assert_eq!(ToolSet::default().to_openai_chat(), serde_json::json!([]));
    /// ```
    pub fn to_openai_chat(&self) -> Value {
        export::openai_chat(&self.tools)
    }

    /// The tools as the `tools` array of an OpenAI Responses request, followed by the `hosted`
    /// servers (MCP servers OpenAI calls itself: `{"type":"mcp","server_label",...}`).
    ///
    /// ```
    /// use mcp_blocking::config::HostedMcpServer;
    /// use mcp_blocking::hub::ToolSet;
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
