//! Which protocol era a server is spoken to in: [`ProtocolMode`] (chosen per server) and
//! [`ProtocolEra`] (what a connection ended up speaking).
//!
//! MCP has two eras. The *legacy* revisions (2025-11-25 and earlier) open a stateful session
//! with `initialize`; the *modern* ones (2026-07-28 and later) have no handshake: every request
//! carries the protocol version and the client's capabilities in its `_meta`, and the server
//! describes itself through `server/discover`. The client's public API is the same in both;
//! what one era lacks is an [`Error::Unsupported`](crate::Error::Unsupported) naming it.
//!
//! # What the modern era covers
//!
//! Built: the `server/discover` handshake (retried at a version the server lists after
//! `-32022`), `_meta` protocol version, client capabilities, client info and log level on every
//! request, `resultType` (absent means complete; an unknown one is an error), multi-round-trip
//! requests (the elicitation, sampling and roots handlers answer `inputRequests`; the request is
//! sent again with a new id, `inputResponses` and `requestState` as received, at most
//! [`Limits::max_input_rounds`](crate::config::Limits::max_input_rounds) times),
//! `subscriptions/listen` behind `subscribe` (acknowledged, demultiplexed by subscription id)
//! and for list changes when notification handlers are installed, on HTTP the
//! `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` (`x-mcp-header`) headers,
//! a JSON-RPC error in a 4xx body taken as the answer, no session and no GET stream, a broken
//! reply re-issued once with a new id, and a `-32020` tools call retried after listing the tools
//! again; `-32002` and `-32602` both read as resource-not-found
//! ([`Error::is_resource_not_found`](crate::Error::is_resource_not_found)).
//!
//! Not built: caching by `ttlMs`/`cacheScope` (nothing is cached), re-opening a subscription
//! whose stream dropped or after a reconnect, ending one HTTP listen stream before the
//! connection closes, remembering the era found per server between connections, URL-mode
//! elicitation, and the tasks extension.

use std::fmt;
use std::time::Duration;

/// The newest modern protocol revision this client speaks.
pub const MODERN_PROTOCOL_VERSION: &str = "2026-07-28";

/// The longest the [`ProtocolMode::Auto`] probe waits for an answer to `server/discover`
/// before falling back to `initialize`: 10 seconds, or half of the server's timeout when that
/// is shorter (see [`ServerConfig::timeout`](crate::ServerConfig::timeout)). Connecting as a
/// whole (opening the transport, the probe and `initialize`) keeps to one timeout: a probe
/// left unanswered leaves `initialize` the rest of it.
pub const AUTO_PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How the client opens a connection: which protocol era it speaks.
///
/// Set with [`ServerConfig::with_protocol`](crate::ServerConfig::with_protocol), or in a
/// config file with the key `protocol` (`"auto"`, `"legacy"` or `"modern"`).
///
/// ```
/// use mcp_blocking::ServerConfig;
/// use mcp_blocking::config::ProtocolMode;
/// let s = ServerConfig::stdio("fs", "mcp-server-filesystem").with_protocol(ProtocolMode::Modern);
/// assert_eq!(s.protocol(), ProtocolMode::Modern);
/// assert_eq!(ServerConfig::stdio("fs", "x").protocol(), ProtocolMode::Auto);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProtocolMode {
    /// The stateful era (2025-11-25 and earlier): `initialize`, then a session.
    Legacy,
    /// The stateless era (2026-07-28): `server/discover`, and `_meta` on every request. A
    /// server that does not speak it fails to connect.
    Modern,
    /// The default: probe with `server/discover`; a discover result means modern. A JSON-RPC
    /// error that is not one of the modern rejections, an HTTP 4xx that is not a modern error,
    /// a result that is not a discover result, or no answer within [`AUTO_PROBE_TIMEOUT`] (or
    /// half the server's timeout when shorter) means legacy: the client then sends
    /// `initialize` within what is left of the timeout.
    /// Legacy HTTP+SSE and WebSocket servers are spoken to in the legacy era without a probe.
    ///
    /// Once a probe has fallen back and `initialize` succeeded, the process remembers that
    /// server (a keyed hash of its stdio command line, arguments, environment and directory, or
    /// of its Streamable HTTP URL; at most 256 of them) and connects to it again, as a Hub
    /// reconnecting does, without the probe. A handshake that then fails forgets it, so the next
    /// connection probes again.
    #[default]
    Auto,
}

impl ProtocolMode {
    /// The name used in config files: `legacy`, `modern` or `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolMode::Legacy => "legacy",
            ProtocolMode::Modern => "modern",
            ProtocolMode::Auto => "auto",
        }
    }

    /// Parses a config file's value (case-insensitive); `None` for anything else.
    ///
    /// ```
    /// use mcp_blocking::config::ProtocolMode;
    /// assert_eq!(ProtocolMode::parse("Modern"), Some(ProtocolMode::Modern));
    /// assert_eq!(ProtocolMode::parse("2026"), None);
    /// ```
    pub fn parse(s: &str) -> Option<ProtocolMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "legacy" => Some(ProtocolMode::Legacy),
            "modern" => Some(ProtocolMode::Modern),
            "auto" => Some(ProtocolMode::Auto),
            _ => None,
        }
    }
}

impl fmt::Display for ProtocolMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The era a connection speaks (see [`Client::protocol_era`](crate::Client::protocol_era)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProtocolEra {
    /// 2025-11-25 and earlier: a stateful session opened with `initialize`.
    Legacy,
    /// 2026-07-28 and later: stateless, `_meta` on every request.
    Modern,
}

impl ProtocolEra {
    /// `legacy` or `modern`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolEra::Legacy => "legacy",
            ProtocolEra::Modern => "modern",
        }
    }

    /// The era of a dated protocol revision: modern from 2026-07-28 on.
    ///
    /// ```
    /// use mcp_blocking::config::ProtocolEra;
    /// assert_eq!(ProtocolEra::of_version("2025-11-25"), ProtocolEra::Legacy);
    /// assert_eq!(ProtocolEra::of_version("2026-07-28"), ProtocolEra::Modern);
    /// ```
    pub fn of_version(version: &str) -> ProtocolEra {
        if version >= MODERN_PROTOCOL_VERSION {
            ProtocolEra::Modern
        } else {
            ProtocolEra::Legacy
        }
    }
}

impl fmt::Display for ProtocolEra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolEra::Legacy => f.write_str("legacy (2025-11-25)"),
            ProtocolEra::Modern => write!(f, "modern ({MODERN_PROTOCOL_VERSION})"),
        }
    }
}
