//! Methods of [`Client`] under their earlier names, kept so that code written against them
//! still compiles: each forwards to its current name and is deprecated.

use serde_json::{json, Value};

use super::Client;
use crate::error::Error;

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
