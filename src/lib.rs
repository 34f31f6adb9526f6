//! A blocking Model Context Protocol (MCP) client.
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod config;
mod error;
mod model;
mod protocol;
mod transport;

pub use config::{
    normalize_timeout, AuthProvider, ConfigError, HttpConfig, ServerConfig, StdioConfig,
    TransportConfig, DEFAULT_TIMEOUT, VALID_TRANSPORT_TYPES,
};
pub use error::{Error, Result};
pub use protocol::jsonrpc::{ErrorCode, RequestId};
