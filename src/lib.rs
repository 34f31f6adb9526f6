//! A blocking Model Context Protocol (MCP) client: spawn or reach MCP servers, discover their
//! tools, resources and prompts, call them, and manage many of them at once, from plain
//! synchronous Rust. No async runtime: threads, channels and blocking I/O.
//!
//! ```no_run
//! use mcp_blocking::{Client, ServerConfig};
//! let client = Client::connect(ServerConfig::stdio("everything", "npx")
//!     .with_args(["-y", "@modelcontextprotocol/server-everything"]))?;
//! let tools = client.list_tools()?;
//! let result = client.call_tool("echo", serde_json::json!({"message": "hi"}))?;
//! println!("{} tools; echo said {}", tools.len(), result.text());
//! # Ok::<(), mcp_blocking::Error>(())
//! ```
//!
//! # Where things are
//!
//! The crate root holds what a program reaches for first; everything else lives in a module named
//! for what it holds.
//!
//! | name | what it is |
//! |---|---|
//! | [`ServerConfig`] | how to reach one server: stdio, Streamable HTTP, legacy SSE or WebSocket |
//! | [`Client`], [`ClientBuilder`] | one server; blocking calls, each with a timeout; `Send + Sync` |
//! | [`CallOptions`] | per-call timeout, progress callback, timeout reset on progress |
//! | [`ConfigLoader`] | reads the config files MCP hosts already use (`.mcp.json`, VS Code, YAML) |
//! | [`ConnectionPoller`] | one I/O thread for the pipes of any number of stdio servers |
//! | [`Hub`] | many servers for one program: discovery, allow-lists, routing, degradation |
//! | [`Error`], [`Result`] | the one error type; every variant names its server |
//!
//! The modules, one sentence each:
//!
//! - [`agent`]: a model and the Hub's tools in one blocking loop: [`agent::Agent`], the
//!   [`agent::Model`] trait and built-in OpenAI Chat, OpenAI Responses and Anthropic models.
//! - [`auth`]: OAuth 2.1 for remote servers: [`auth::OAuthConfig`] (authorization code with PKCE,
//!   client credentials), redirect handlers and token stores.
//! - [`config`]: transport settings, per-server [`config::Limits`], config-file loading and its
//!   errors, templates and hosted-MCP entries.
//! - [`error`]: [`Error`] and the types it carries ([`error::ConnectError`],
//!   [`error::ErrorCode`], [`error::TaskErrorKind`]).
//! - [`handler`]: answering what a server asks and sends: sampling, elicitation, roots,
//!   notifications.
//! - [`hub`]: the pieces of the multi-server layer: settings, discovery, degradation, tool
//!   exports.
//! - [`model`]: the MCP types: tools, resources, prompts, content, capabilities, tasks.
//! - [`tasks`]: [`tasks::TaskHandle`], a tool call running as a task (see
//!   [`Client::call_tool_as_task`]).
//! - `testing` (feature `testing`): `TestServer`, an in-process server for your own unit tests.
//!
//! # Logging
//!
//! The library never writes to stdout or stderr; it logs through the `log` crate (server stderr
//! lines under the target `mcp_blocking::stderr`, server log notifications under
//! `mcp_blocking::server_log`).
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![warn(unreachable_pub)]

/// The README's examples, compiled as doc tests (with the `testing` feature, which one of them
/// shows; the README's test command enables every feature).
#[cfg(all(doctest, feature = "testing"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod agent;
pub mod auth;
mod client;
pub mod config;
mod deadline;
pub mod error;
pub mod handler;
pub mod hub;
pub mod model;
mod protocol;
mod sync;
pub mod tasks {
    //! Tool calls that run as tasks (MCP revision 2025-11-25): [`TaskHandle`], returned by
    //! [`Client::call_tool_as_task`](crate::Client::call_tool_as_task). The wire types are in
    //! [`model`](crate::model) ([`Task`](crate::model::Task),
    //! [`TaskStatus`](crate::model::TaskStatus)); the error kind is
    //! [`error::TaskErrorKind`](crate::error::TaskErrorKind).
    pub use crate::client::TaskHandle;
}
#[cfg(test)]
mod test_rng;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod throttle;
mod transport;
mod url;
#[cfg(windows)]
mod wsapoll;

pub use client::{CallOptions, Client, ClientBuilder, LoadedSkill, SkillLimits};
pub use config::{ConfigLoader, ServerConfig};
pub use error::{Error, Result};
pub use hub::Hub;
pub use transport::stdio::ConnectionPoller;
