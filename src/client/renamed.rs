//! Methods of [`Client`] and [`ClientBuilder`] under their earlier names, kept so that code
//! written against them still compiles: each forwards to what replaced it and is deprecated.

use std::sync::mpsc;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{Client, ClientBuilder};
use crate::error::Error;
use crate::handler::{
    notification_channel, ElicitationHandler, NotificationHandler, SamplingHandler,
    ServerNotification, NOTIFICATION_CHANNEL_CAPACITY,
};

impl ClientBuilder {
    /// Moved to [`handler::NOTIFICATION_CHANNEL_CAPACITY`](NOTIFICATION_CHANNEL_CAPACITY).
    #[deprecated(
        since = "0.2.0",
        note = "moved to `handler::NOTIFICATION_CHANNEL_CAPACITY`"
    )]
    #[doc(hidden)]
    pub const NOTIFICATION_CHANNEL_CAPACITY: usize = NOTIFICATION_CHANNEL_CAPACITY;

    /// Replaced by [`sampling`](Self::sampling) with a closure that calls the handler.
    #[deprecated(
        since = "0.2.0",
        note = "use `sampling(move |server, params| handler.create_message(server, params))`"
    )]
    #[doc(hidden)]
    pub fn sampling_handler(mut self, handler: impl SamplingHandler + 'static) -> Self {
        self.handlers.sampling = Some(Arc::new(handler));
        self
    }

    /// Replaced by [`elicitation`](Self::elicitation) with a closure that calls the handler.
    #[deprecated(
        since = "0.2.0",
        note = "use `elicitation(move |server, params| handler.elicit(server, params))`"
    )]
    #[doc(hidden)]
    pub fn elicitation_handler(mut self, handler: impl ElicitationHandler + 'static) -> Self {
        self.handlers.elicitation = Some(Arc::new(handler));
        self
    }

    /// Replaced by [`on_notification`](Self::on_notification) with a closure that calls the
    /// handler.
    #[deprecated(
        since = "0.2.0",
        note = "use `on_notification(move |server, n| handler.notify(server, n))`"
    )]
    #[doc(hidden)]
    pub fn notification_handler(mut self, handler: impl NotificationHandler + 'static) -> Self {
        self.handlers.notifications.push(Arc::new(handler));
        self
    }

    /// Replaced by [`handler::notification_channel`](notification_channel) and
    /// [`on_notification`](Self::on_notification).
    #[deprecated(
        since = "0.2.0",
        note = "use `handler::notification_channel(NOTIFICATION_CHANNEL_CAPACITY)` and `on_notification`"
    )]
    #[doc(hidden)]
    pub fn notification_channel(self) -> (Self, mpsc::Receiver<ServerNotification>) {
        let (notify, rx) = notification_channel(NOTIFICATION_CHANNEL_CAPACITY);
        (self.on_notification(notify), rx)
    }

    /// Replaced by [`handler::notification_channel`](notification_channel) and
    /// [`on_notification`](Self::on_notification).
    #[deprecated(
        since = "0.2.0",
        note = "use `handler::notification_channel(capacity)` and `on_notification`"
    )]
    #[doc(hidden)]
    pub fn notification_channel_with_capacity(
        self,
        capacity: usize,
    ) -> (Self, mpsc::Receiver<ServerNotification>) {
        let (notify, rx) = notification_channel(capacity);
        (self.on_notification(notify), rx)
    }
}

impl Client {
    /// Renamed [`close`](Self::close).
    ///
    /// # Errors
    /// As [`close`](Self::close).
    #[deprecated(since = "0.2.0", note = "renamed to `close`")]
    #[doc(hidden)]
    pub fn disconnect(&self) -> Result<(), Error> {
        self.close()
    }

    /// `{server, connected}`: the config (as [`ServerConfig::to_json`]) and whether it is
    /// connected.
    ///
    /// [`ServerConfig::to_json`]: crate::ServerConfig::to_json
    #[deprecated(
        since = "0.2.0",
        note = "use `config().to_json()` and `is_connected()`"
    )]
    #[doc(hidden)]
    pub fn to_json(&self) -> Value {
        json!({ "server": self.config().to_json(), "connected": self.is_connected() })
    }
}

#[cfg(test)]
#[allow(deprecated, reason = "these tests call the earlier names on purpose")]
mod tests {
    use crate::{Client, ServerConfig};

    #[test]
    fn disconnect_closes_as_close_does() {
        let c = Client::new(ServerConfig::stdio("fs", "true"));
        assert!(c.disconnect().is_ok());
        assert!(!c.is_connected());
    }

    #[test]
    fn to_json_shows_the_config_and_whether_connected() {
        let c = Client::new(ServerConfig::stdio("fs", "true"));
        assert_eq!(c.to_json()["connected"], serde_json::json!(false));
        assert_eq!(c.to_json()["server"], c.config().to_json());
    }
}
