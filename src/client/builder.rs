//! [`ClientBuilder`]: a client with handlers, roots, client info or a shared poller.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, TrySendError};
use std::sync::{Arc, Mutex, RwLock};

use super::opener::Opener;
use super::options::Handlers;
use super::Client;
use crate::config::ServerConfig;
use crate::error::Error;
use crate::handler::{
    ElicitationHandler, HandlerError, Notification, NotificationHandler, SamplingHandler,
    ServerNotification,
};
use crate::model::{
    CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, Implementation, Root,
};
use crate::throttle::{more, Throttle};
use crate::transport::stdio::ConnectionPoller;

/// Builds a [`Client`] with handlers, roots or a shared poller.
///
/// ```no_run
/// use mcp_blocking::{Client, ConnectionPoller, ServerConfig};
/// use mcp_blocking::model::Root;
/// let poller = ConnectionPoller::new();
/// let client = Client::builder(ServerConfig::stdio("fs", "mcp-server-filesystem"))
///     .poller(&poller)
///     .roots(vec![Root::new("file:///data").with_name("data")])
///     .on_notification(|server, n| log::info!("{server}: {n:?}"))
///     .connect()?;
/// # Ok::<(), mcp_blocking::Error>(())
/// ```
#[must_use]
pub struct ClientBuilder {
    pub(super) config: ServerConfig,
    pub(super) poller: Option<ConnectionPoller>,
    pub(super) client_info: Implementation,
    pub(super) handlers: Handlers,
    pub(super) roots: Option<Vec<Root>>,
    pub(super) opener: Option<Arc<dyn Opener>>,
}

impl ClientBuilder {
    /// How many unread notifications the channel of
    /// [`notification_channel`](Self::notification_channel) holds.
    pub const NOTIFICATION_CHANNEL_CAPACITY: usize = 1024;

    /// Serves this stdio server from the given [`ConnectionPoller`]. Without one, a stdio
    /// client uses the process-wide poller, whose thread serves every such client and ends half
    /// a second after the last of them closed.
    pub fn poller(mut self, poller: &ConnectionPoller) -> Self {
        self.poller = Some(poller.clone());
        self
    }

    /// The `clientInfo` sent in `initialize` (default: `mcp-blocking` and its version).
    pub fn client_info(mut self, info: Implementation) -> Self {
        self.client_info = info;
        self
    }

    /// Answers `roots/list` with these roots and declares the `roots` capability.
    pub fn roots(mut self, roots: Vec<Root>) -> Self {
        self.roots = Some(roots);
        self
    }

    /// Installs a sampling handler and declares the `sampling` capability.
    ///
    /// The handler gets the server name and the request (see [`SamplingHandler`]):
    /// `.sampling(|server, params| Ok(CreateMessageResult::text("model", "...")))`.
    pub fn sampling<F>(mut self, handler: F) -> Self
    where
        F: Fn(&str, CreateMessageParams) -> Result<CreateMessageResult, HandlerError>
            + Send
            + Sync
            + 'static,
    {
        self.handlers.sampling = Some(Arc::new(handler));
        self
    }

    /// Installs an elicitation handler and declares the `elicitation` capability (form mode).
    ///
    /// The handler gets the server name and the request (see [`ElicitationHandler`]):
    /// `.elicitation(|server, params| Ok(ElicitResult::decline()))`.
    pub fn elicitation<F>(mut self, handler: F) -> Self
    where
        F: Fn(&str, ElicitParams) -> Result<ElicitResult, HandlerError> + Send + Sync + 'static,
    {
        self.handlers.elicitation = Some(Arc::new(handler));
        self
    }

    /// Adds a notification handler (called on the client's notification thread, in arrival
    /// order, never behind a sampling or elicitation handler):
    /// `.on_notification(|server, n| log::info!("{server}: {n:?}"))`.
    pub fn on_notification<F>(mut self, handler: F) -> Self
    where
        F: Fn(&str, Notification) + Send + Sync + 'static,
    {
        self.handlers.notifications.push(Arc::new(handler));
        self
    }

    /// Installs a sampling handler that is a type of its own (a struct implementing
    /// [`SamplingHandler`]) rather than a closure; otherwise as [`sampling`](Self::sampling).
    pub fn sampling_handler(mut self, handler: impl SamplingHandler + 'static) -> Self {
        self.handlers.sampling = Some(Arc::new(handler));
        self
    }

    /// Installs an elicitation handler that is a type of its own (a struct implementing
    /// [`ElicitationHandler`]); otherwise as [`elicitation`](Self::elicitation).
    pub fn elicitation_handler(mut self, handler: impl ElicitationHandler + 'static) -> Self {
        self.handlers.elicitation = Some(Arc::new(handler));
        self
    }

    /// Adds a notification handler that is a type of its own (a struct implementing
    /// [`NotificationHandler`]); otherwise as [`on_notification`](Self::on_notification).
    pub fn notification_handler(mut self, handler: impl NotificationHandler + 'static) -> Self {
        self.handlers.notifications.push(Arc::new(handler));
        self
    }

    /// Delivers notifications through a channel holding at most
    /// [`NOTIFICATION_CHANNEL_CAPACITY`](Self::NOTIFICATION_CHANNEL_CAPACITY) unread ones;
    /// returns the builder and the receiving end. See
    /// [`notification_channel_with_capacity`](Self::notification_channel_with_capacity).
    pub fn notification_channel(self) -> (Self, mpsc::Receiver<ServerNotification>) {
        self.notification_channel_with_capacity(Self::NOTIFICATION_CHANNEL_CAPACITY)
    }

    /// Delivers notifications through a channel holding at most `capacity` unread ones (at
    /// least 1); returns the builder and the receiving end.
    ///
    /// The client's notification thread never waits for the receiver: when the channel is
    /// full, the new notification is dropped (for this channel only), counted in
    /// [`Client::dropped_notifications`], and a warning is logged (at most once a second). A
    /// server can send notifications at will, so the bound keeps a program that is slow to
    /// read from growing memory; a receiver that is dropped is simply no longer sent to.
    pub fn notification_channel_with_capacity(
        mut self,
        capacity: usize,
    ) -> (Self, mpsc::Receiver<ServerNotification>) {
        let (tx, rx) = mpsc::sync_channel(capacity.max(1));
        let dropped = Arc::clone(&self.handlers.channel_dropped);
        let full = Throttle::default();
        self.handlers
            .notifications
            .push(Arc::new(move |server: &str, n| {
                if let Err(TrySendError::Full(_)) = tx.try_send((server.to_owned(), n)) {
                    dropped.fetch_add(1, Ordering::Relaxed);
                    if let Some(unlogged) = full.hit() {
                        log::warn!(
                            "server `{server}`: the notification channel is full (the program \
                             is not reading it); a notification is dropped{}",
                            more(unlogged)
                        );
                    }
                }
            }));
        (self, rx)
    }

    /// Serves this client from an in-process server instead of its configured transport.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn in_process(
        mut self,
        server: Arc<dyn crate::transport::memory::InProcessServer>,
    ) -> Self {
        self.opener = Some(Arc::new(super::opener::InProcess(server)));
        self
    }

    /// Builds the client without connecting (call [`Client::open`]).
    pub fn build(self) -> Client {
        Client {
            config: self.config,
            poller: self.poller,
            client_info: self.client_info,
            handlers: Arc::new(self.handlers),
            roots: Arc::new(RwLock::new(self.roots)),
            state: RwLock::new(None),
            lifecycle: Mutex::new(()),
            opener: self.opener,
        }
    }

    /// Builds the client and connects it.
    ///
    /// # Errors
    /// As [`Client::open`].
    pub fn connect(self) -> Result<Client, Error> {
        let client = self.build();
        client.open()?;
        Ok(client)
    }
}

impl Client {
    /// How many notifications were dropped so far because a channel of
    /// [`ClientBuilder::notification_channel`] was full (over all of this client's channels).
    pub fn dropped_notifications(&self) -> u64 {
        self.handlers.channel_dropped.load(Ordering::Relaxed)
    }
}
