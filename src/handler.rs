//! What a program can do with the traffic a server starts: sampling and elicitation requests,
//! and notifications.
//!
//! # Where handlers run
//!
//! Never on an I/O thread, so a slow handler never delays a response to a call. Each server has
//! up to three threads of its own, each started the first time it is needed and named after the
//! server:
//!
//! | thread | runs |
//! |---|---|
//! | `mcp-requests-NAME` | the [`SamplingHandler`] and the [`ElicitationHandler`], one request at a time |
//! | `mcp-notify-NAME` | the [`NotificationHandler`]s, one notification at a time, in arrival order |
//! | `mcp-replies-NAME` | no user code: it sends every answer to the server (handler results, `ping`, `roots/list`, errors) |
//!
//! So a sampling or elicitation request that takes minutes (a model, a person) holds up neither
//! the notifications nor the answers to `ping`, and a server that does not read what the client
//! sends holds up only the replies thread.
//!
//! What waits for these threads is bounded by
//! [`Limits::max_queued_server_messages`](crate::config::Limits::max_queued_server_messages):
//! past it, a request is answered with an error at once and a notification is dropped.
//!
//! # Closing while a handler runs
//!
//! [`Client::close`](crate::Client::close) (and dropping the client) tells the handlers the
//! connection is closing ([`close_signal`]), then waits at most [`CLOSE_GRACE`] for them to
//! return. A handler still running after that keeps its thread, and `close` returns anyway: a
//! handler that waits on a person cannot hang the program's shutdown. Whatever such a handler
//! returns later is discarded (the connection is gone). Its thread ends as soon as the handler
//! returns, and is joined by the next client in the process that connects or closes; so a
//! handler that never returns keeps one thread until the process exits, and nothing else.
//!
//! A handler that may wait long should watch its [`close_signal`] and give up when it fires:
//!
//! ```
//! use std::time::Duration;
//! use mcp_blocking::handler::{close_signal, HandlerError};
//! use mcp_blocking::model::{ElicitParams, ElicitResult};
//!
//! fn ask_a_person(_server: &str, _params: ElicitParams) -> Result<ElicitResult, HandlerError> {
//!     let closing = close_signal();
//!     loop {
//!         // ... check whether the person has answered; if so, return their answer ...
//!         if closing.as_ref().is_some_and(|c| c.wait_timeout(Duration::from_millis(200))) {
//!             return Err(HandlerError::rejected("the connection was closed"));
//!         }
//! #       return Ok(ElicitResult::decline());
//!     }
//! }
//! # let _ = ask_a_person;
//! ```

use std::cell::RefCell;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::model::{
    Cancelled, CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult,
    LoggingMessage, Progress, ResourceUpdated, Task,
};
use crate::protocol::jsonrpc::ErrorCode;
use crate::sync::lock;

mod channel;

pub(crate) use channel::set_drop_counter;
pub use channel::{notification_channel, NOTIFICATION_CHANNEL_CAPACITY};

/// How long [`Client::close`](crate::Client::close) (and dropping a client) waits for a handler
/// that is running to return before it returns anyway (see [the module docs](self)).
pub const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// Tells a handler whether the connection it serves has been closed.
///
/// Get the one for the handler that is running with [`close_signal`]. Cloning is cheap; every
/// clone sees the same connection.
#[derive(Clone)]
pub struct CloseSignal {
    inner: Arc<SignalInner>,
}

struct SignalInner {
    closed: Mutex<Closed>,
    changed: Condvar,
}

/// Whether the connection is closed, and how many threads wait for it: `changed` is only
/// signalled when one does (a signal costs a system call even with no waiter).
#[derive(Default)]
struct Closed {
    closed: bool,
    waiting: usize,
}

impl fmt::Debug for CloseSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CloseSignal")
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl CloseSignal {
    pub(crate) fn new() -> Self {
        CloseSignal {
            inner: Arc::new(SignalInner {
                closed: Mutex::new(Closed::default()),
                changed: Condvar::new(),
            }),
        }
    }

    /// Marks the connection closed and wakes every waiter.
    pub(crate) fn close(&self) {
        let mut c = lock(&self.inner.closed);
        c.closed = true;
        let wake = c.waiting > 0;
        drop(c);
        if wake {
            self.inner.changed.notify_all();
        }
    }

    /// Whether the connection has been closed (by [`Client::close`](crate::Client::close) or
    /// dropping the client).
    pub fn is_closed(&self) -> bool {
        lock(&self.inner.closed).closed
    }

    /// Waits up to `timeout` for the connection to be closed; returns whether it is.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let mut c = lock(&self.inner.closed);
        c.waiting += 1;
        let (mut c, _) = self
            .inner
            .changed
            .wait_timeout_while(c, timeout, |c| !c.closed)
            .unwrap_or_else(|p| p.into_inner());
        c.waiting -= 1;
        c.closed
    }
}

thread_local! {
    /// The signal of the connection whose dispatcher thread this is.
    static CURRENT: RefCell<Option<CloseSignal>> = const { RefCell::new(None) };
}

/// The [`CloseSignal`] of the connection whose message the calling handler is handling, or
/// `None` when called outside a handler.
///
/// ```
/// // Outside a handler there is no connection to watch.
/// assert!(mcp_blocking::handler::close_signal().is_none());
/// ```
pub fn close_signal() -> Option<CloseSignal> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Makes `signal` the one [`close_signal`] returns on this thread (a dispatcher thread, once,
/// as it starts).
pub(crate) fn set_close_signal(signal: CloseSignal) {
    CURRENT.with(|c| *c.borrow_mut() = Some(signal));
}

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
/// [`ClientBuilder::sampling`](crate::ClientBuilder::sampling) takes such a closure; a type of
/// your own that implements this trait goes in through one that calls it
/// (`.sampling(move |server, params| mine.create_message(server, params))`).
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
/// [`ClientBuilder::elicitation`](crate::ClientBuilder::elicitation) takes one; a type of your own
/// that implements this trait goes in through one that calls it
/// (`.elicitation(move |server, params| mine.elicit(server, params))`).
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
    /// `notifications/tasks/status`: a task changed (optional for servers; may arrive before
    /// the task's creation is answered).
    TaskStatus(Box<Task>),
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
            "notifications/tasks/status" => typed(&params).map(Notification::TaskStatus),
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
/// one (a [`notification_channel`] is one too); a type of your own that implements this trait
/// goes in through one that calls it (`.on_notification(move |server, n| mine.notify(server, n))`).
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

/// A notification delivered through a [`notification_channel`]: the server name and the
/// notification.
pub type ServerNotification = (String, Notification);
