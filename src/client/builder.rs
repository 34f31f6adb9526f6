//! [`ClientBuilder`]: a client with handlers, roots, client info or a shared poller.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, RwLock};

use super::opener::Opener;
use super::options::Handlers;
use super::Client;
use crate::config::ServerConfig;
use crate::error::Error;
#[cfg(doc)]
use crate::handler::{ElicitationHandler, NotificationHandler, SamplingHandler};
use crate::handler::{HandlerError, Notification};
use crate::model::{
    CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, Implementation, Root,
};
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
    /// `.sampling(|server, params| Ok(CreateMessageResult::text("model", "...")))`. A handler
    /// that is a type of its own goes in as a closure that calls it:
    /// `.sampling(move |server, params| mine.create_message(server, params))`.
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
    /// `.elicitation(|server, params| Ok(ElicitResult::decline()))`. A handler that is a type of
    /// its own goes in as a closure that calls it:
    /// `.elicitation(move |server, params| mine.elicit(server, params))`.
    pub fn elicitation<F>(mut self, handler: F) -> Self
    where
        F: Fn(&str, ElicitParams) -> Result<ElicitResult, HandlerError> + Send + Sync + 'static,
    {
        self.handlers.elicitation = Some(Arc::new(handler));
        self
    }

    /// Also hands URL-mode elicitation requests (`mode: "url"`: the server asks the user to
    /// open a page, such as a sign-in at a third party) to the
    /// [`elicitation`](Self::elicitation) handler, and declares `elicitation: {form, url}`.
    /// Off by default: a URL-mode request is then refused with -32602 before any handler runs,
    /// so a handler written for forms never sees one.
    ///
    /// A handler that takes them must show the full address (its host above all), never open
    /// it without the user's consent, and answer `accept` only for consent to open it
    /// ([`ElicitParams::is_url_mode`](crate::model::ElicitParams::is_url_mode) tells the two
    /// modes apart; `url` and `elicitation_id` are set).
    ///
    /// ```
    /// use mcp_blocking::{Client, ServerConfig};
    /// use mcp_blocking::model::ElicitResult;
    /// let client = Client::builder(ServerConfig::stdio("s", "server"))
    ///     .elicitation(|_server, params| {
    ///         if params.is_url_mode() {
    ///             // Show params.url and ask before opening it; here: declined.
    ///             return Ok(ElicitResult::decline());
    ///         }
    ///         Ok(ElicitResult::decline())
    ///     })
    ///     .elicitation_url_mode(true)
    ///     .build();
    /// # drop(client);
    /// ```
    pub fn elicitation_url_mode(mut self, on: bool) -> Self {
        self.handlers.elicitation_url = on;
        self
    }

    /// [`sampling`](Self::sampling) with a handler shared with other clients (the Hub's).
    pub(crate) fn sampling_shared(
        mut self,
        handler: Arc<dyn crate::handler::SamplingHandler>,
    ) -> Self {
        self.handlers.sampling = Some(handler);
        self
    }

    /// [`elicitation`](Self::elicitation) with a handler shared with other clients (the Hub's).
    pub(crate) fn elicitation_shared(
        mut self,
        handler: Arc<dyn crate::handler::ElicitationHandler>,
    ) -> Self {
        self.handlers.elicitation = Some(handler);
        self
    }

    /// Adds a notification handler (called on the client's notification thread, in arrival
    /// order, never behind a sampling or elicitation handler); each handler added gets every
    /// notification: `.on_notification(|server, n| log::info!("{server}: {n:?}"))`.
    ///
    /// This is the one way notifications arrive: through a closure, a
    /// [`notification_channel`](crate::handler::notification_channel) (bounded, a closure too),
    /// or a [`NotificationHandler`] that is a type of its own, called from a closure:
    /// `.on_notification(move |server, n| mine.notify(server, n))`.
    pub fn on_notification<F>(mut self, handler: F) -> Self
    where
        F: Fn(&str, Notification) + Send + Sync + 'static,
    {
        self.handlers.notifications.push(Arc::new(handler));
        self
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
            // The OAuth settings at work: requests carry their access token.
            config: crate::auth::attach(self.config),
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
    /// How many notifications were dropped so far because a
    /// [`notification_channel`](crate::handler::notification_channel) installed on this client
    /// was full (over all of its channels).
    pub fn dropped_notifications(&self) -> u64 {
        self.handlers.channel_dropped.load(Ordering::Relaxed)
    }
}
