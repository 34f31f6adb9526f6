//! A blocking Model Context Protocol (MCP) client.
#![deny(unsafe_code)]
#![deny(missing_docs)]
#![warn(unreachable_pub)]

mod client;
mod config;
mod error;
mod handler;
mod hub;
mod model;
mod protocol;
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
pub use error::{Error, Result};
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
