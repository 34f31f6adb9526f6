//! A blocking Model Context Protocol (MCP) client: spawn or reach MCP servers, discover their
//! tools, resources and prompts, call them, and manage many of them at once, from plain
//! synchronous Rust. No async runtime: threads, channels and blocking I/O.
//!
//! ```no_run
//! use mcp_blocking::{Client, ServerConfig};
//! let client = Client::connect(ServerConfig::stdio("everything", "npx")
//!     .args(["-y", "@modelcontextprotocol/server-everything"]))?;
//! let tools = client.list_tools()?;
//! let result = client.call_tool("echo", serde_json::json!({"message": "hi"}))?;
//! println!("{} tools; echo said {}", tools.len(), result.text());
//! # Ok::<(), mcp_blocking::Error>(())
//! ```
//!
//! | piece | what it is |
//! |---|---|
//! | [`ServerConfig`] | a validated server description (stdio, Streamable HTTP, legacy SSE, WebSocket) |
//! | [`ConfigLoader`], [`Template`], [`HostedMcpServer`] | the config files MCP hosts already use |
//! | [`Client`] | one server; blocking calls with a timeout each; `Send + Sync` |
//! | [`ConnectionPoller`] | one I/O thread for the pipes of any number of stdio servers |
//! | [`Hub`] | many servers for one host program: discovery, allow-lists, routing, degradation |
//! | [`Error`] | the one error type; every variant names its server |
//!
//! The library never writes to stdout or stderr; it logs through the `log` crate (server stderr
//! lines under the target `mcp_blocking::stderr`, server log notifications under
//! `mcp_blocking::server_log`).
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![warn(unreachable_pub)]

/// The README's examples, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod client;
mod config;
mod error;
mod handler;
mod hub;
mod model;
mod protocol;
mod sync;
mod transport;

pub use client::{CallOptions, Client, ClientBuilder};
pub use handler::{
    ElicitationHandler, HandlerError, Notification, NotificationHandler, SamplingHandler,
    ServerNotification,
};
pub use hub::{
    resolve_setting, CollisionPolicy, Degradation, DegradedServer, Hub, HubBuilder, HubEvent,
    HubTool, Run, ServerDiscovery, ServerFailure, Setting, ToolSet,
};
pub use transport::poller::ConnectionPoller;

pub use config::{
    normalize_timeout, AuthProvider, ConfigError, ConfigErrorKind, ConfigLoader, HostedMcpServer,
    HostedReport, HttpConfig, LoadReport, RequireApproval, ServerConfig, StdioConfig, Template,
    TransportConfig, DEFAULT_TIMEOUT, VALID_TRANSPORT_TYPES,
};
pub use error::{ConnectError, ConnectErrorKind, Error, Result};
pub use model::{
    apply_schema_defaults, Annotations, AudioContent, BlobResourceContents, CallToolResult,
    Cancelled, ClientCapabilities, CompleteResult, Completion, CompletionReference, Content,
    CreateMessageParams, CreateMessageResult, ElicitAction, ElicitParams, ElicitResult,
    EmbeddedResource, GetPromptResult, ImageContent, Implementation, InitializeResult,
    ListChangedCapability, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListRootsResult, ListToolsResult, LoggingLevel, LoggingMessage, ParseLoggingLevelError,
    Progress, ProgressToken, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Resource,
    ResourceContents, ResourceLink, ResourceTemplate, ResourceUpdated, ResourcesCapability, Role,
    Root, RootsCapability, SamplingMessage, ServerCapabilities, TextContent, TextResourceContents,
    Tool, ToolAnnotations, LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS,
};
pub use protocol::jsonrpc::{ErrorCode, RequestId};
