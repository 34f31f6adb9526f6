//! Methods of [`Client`] under their earlier names, kept so that code written against them
//! still compiles: each forwards to its current name and is deprecated.

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
}
