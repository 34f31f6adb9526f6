//! What a program can do with the traffic a server starts: sampling and elicitation requests,
//! and notifications.
//!
//! Handlers run on the client's dispatcher thread, never on an I/O thread, so a slow handler
//! delays only the next server-initiated message, never a response to a call. Closing the client
//! waits for a handler that is running to return (the dispatcher thread is joined), so a handler
//! that waits on a person should give up when its client is being closed.

use std::fmt;

use serde_json::Value;

use crate::model::{
    Cancelled, CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult,
    LoggingMessage, Progress, ResourceUpdated,
};
use crate::protocol::jsonrpc::ErrorCode;

/// An error a handler returns; it is sent to the server as a JSON-RPC error.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HandlerError {
    /// The JSON-RPC error code.
    pub code: ErrorCode,
    /// A message for the server.
    pub message: String,
    /// Optional structured detail.
    pub data: Option<Value>,
}

impl HandlerError {
    /// An error with the given code and message.
    ///
    /// ```
    /// use mcp_blocking::error::ErrorCode;
    /// use mcp_blocking::handler::HandlerError;
    /// let e = HandlerError::new(ErrorCode::INVALID_PARAMS, "no model for this prompt");
    /// assert_eq!(e.to_string(), "error -32602: no model for this prompt");
    /// ```
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        HandlerError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The user declined the request (code `-1`, as the sampling spec suggests).
    pub fn rejected(message: impl Into<String>) -> Self {
        Self::new(ErrorCode(-1), message)
    }

    /// Adds structured detail.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error {}: {}", self.code, self.message)
    }
}

impl std::error::Error for HandlerError {}

/// Answers `sampling/createMessage`: the server asks the host's model for a completion.
///
/// Installing one declares the `sampling` capability. Any `Fn(&str, CreateMessageParams) ->
/// Result<CreateMessageResult, HandlerError>` closure is a handler; the `&str` is the server name.
/// [`ClientBuilder::sampling`](crate::ClientBuilder::sampling) takes such a closure;
/// [`ClientBuilder::sampling_handler`](crate::ClientBuilder::sampling_handler) takes a type of
/// your own that implements this trait.
pub trait SamplingHandler: Send + Sync {
    /// Produces the completion, or an error (e.g. [`HandlerError::rejected`]).
    ///
    /// # Errors
    /// Whatever should be sent back to the server as a JSON-RPC error.
    fn create_message(
        &self,
        server: &str,
        params: CreateMessageParams,
    ) -> Result<CreateMessageResult, HandlerError>;
}

impl<F> SamplingHandler for F
where
    F: Fn(&str, CreateMessageParams) -> Result<CreateMessageResult, HandlerError> + Send + Sync,
{
    fn create_message(
        &self,
        server: &str,
        params: CreateMessageParams,
    ) -> Result<CreateMessageResult, HandlerError> {
        self(server, params)
    }
}

/// Answers `elicitation/create`: the server asks the user for input.
///
/// Installing one declares the `elicitation` capability (form mode). When the result accepts,
/// fields the user left out are filled from the schema's `default`s before it is sent.
/// Any `Fn(&str, ElicitParams) -> Result<ElicitResult, HandlerError>` closure is a handler;
/// [`ClientBuilder::elicitation`](crate::ClientBuilder::elicitation) takes one, and
/// [`ClientBuilder::elicitation_handler`](crate::ClientBuilder::elicitation_handler) a type of
/// your own that implements this trait.
pub trait ElicitationHandler: Send + Sync {
    /// Asks the user, and returns their answer.
    ///
    /// # Errors
    /// Whatever should be sent back to the server as a JSON-RPC error.
    fn elicit(&self, server: &str, params: ElicitParams) -> Result<ElicitResult, HandlerError>;
}

impl<F> ElicitationHandler for F
where
    F: Fn(&str, ElicitParams) -> Result<ElicitResult, HandlerError> + Send + Sync,
{
    fn elicit(&self, server: &str, params: ElicitParams) -> Result<ElicitResult, HandlerError> {
        self(server, params)
    }
}

/// A notification from a server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Notification {
    /// `notifications/message`: a log message (also forwarded to `log`).
    Log(LoggingMessage),
    /// `notifications/progress` for a request that did not ask for progress callbacks.
    Progress(Progress),
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/resources/updated`.
    ResourceUpdated(ResourceUpdated),
    /// `notifications/cancelled`: the server cancelled one of its own requests.
    Cancelled(Cancelled),
    /// Any other notification, kept as it came.
    Other {
        /// The method name.
        method: String,
        /// The params, or `Null`.
        params: Value,
    },
}

impl Notification {
    /// Interprets a notification by its method; malformed params fall back to [`Notification::Other`].
    pub(crate) fn from_parts(method: &str, params: Value) -> Self {
        fn typed<T: serde::de::DeserializeOwned>(params: &Value) -> Option<T> {
            serde_json::from_value(params.clone()).ok()
        }
        let n = match method {
            "notifications/message" => typed(&params).map(Notification::Log),
            "notifications/progress" => typed(&params).map(Notification::Progress),
            "notifications/tools/list_changed" => Some(Notification::ToolsListChanged),
            "notifications/prompts/list_changed" => Some(Notification::PromptsListChanged),
            "notifications/resources/list_changed" => Some(Notification::ResourcesListChanged),
            "notifications/resources/updated" => typed(&params).map(Notification::ResourceUpdated),
            "notifications/cancelled" => typed(&params).map(Notification::Cancelled),
            _ => None,
        };
        n.unwrap_or_else(|| Notification::Other {
            method: method.to_owned(),
            params,
        })
    }
}

/// Receives notifications. Any `Fn(&str, Notification)` closure is one; the `&str` is the
/// server name. [`ClientBuilder::on_notification`](crate::ClientBuilder::on_notification) takes
/// one, and [`ClientBuilder::notification_handler`](crate::ClientBuilder::notification_handler)
/// a type of your own that implements this trait.
pub trait NotificationHandler: Send + Sync {
    /// Called once per notification, in arrival order.
    fn notify(&self, server: &str, notification: Notification);
}

impl<F> NotificationHandler for F
where
    F: Fn(&str, Notification) + Send + Sync,
{
    fn notify(&self, server: &str, notification: Notification) {
        self(server, notification)
    }
}

/// A notification delivered through a channel: the server name and the notification.
pub type ServerNotification = (String, Notification);
