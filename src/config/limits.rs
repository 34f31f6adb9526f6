//! [`Limits`]: what one server can make the client hold.

/// What one server can make its client hold, and so how much memory a hostile or broken server
/// can cost. Every cap has a default; each is checked where the data arrives, and going over it
/// is a typed error or a logged drop that names the cap (never a slow growth of memory).
///
/// Set them on a server with [`ServerConfig::with_limits`](crate::ServerConfig::with_limits)
/// (or [`ServerConfig::max_message_bytes`](crate::ServerConfig::max_message_bytes) for the most
/// common one).
///
/// ```
/// use mcp_blocking::config::Limits;
/// use mcp_blocking::ServerConfig;
/// let limits = Limits::default().with_max_message_bytes(1 << 20);
/// let server = ServerConfig::stdio("fs", "mcp-server-filesystem").with_limits(limits);
/// assert_eq!(server.limits().max_message_bytes, 1 << 20);
/// assert_eq!(Limits::default().max_message_bytes, 64 * 1024 * 1024);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// The largest single message accepted from the server, in bytes: a stdio line, an HTTP
    /// JSON body, one SSE event (all its `data:` lines together), a WebSocket message. A larger
    /// answer to a request fails that request with an error naming this cap; the connection's
    /// other requests are unharmed where the transport allows. Default: 64 MiB.
    pub max_message_bytes: usize,
    /// Server-initiated requests and notifications waiting for the client's handlers. Beyond
    /// it, a request is answered at once with a JSON-RPC error and a notification is dropped
    /// with a warning. Default: 256.
    pub max_queued_server_messages: usize,
    /// How many of the server's last stderr lines are kept for error messages. Default: 20.
    pub stderr_tail_lines: usize,
    /// The longest piece of server-supplied text (a method name, an error message, a stderr
    /// line) echoed into a log line, an error message or a reply, in bytes; longer text is cut
    /// and marked. Default: 1024.
    pub max_echo_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 64 * 1024 * 1024,
            max_queued_server_messages: 256,
            stderr_tail_lines: 20,
            max_echo_bytes: 1024,
        }
    }
}

impl Limits {
    /// Sets [`max_message_bytes`](Limits::max_message_bytes).
    #[must_use]
    pub fn with_max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }

    /// Sets [`max_queued_server_messages`](Limits::max_queued_server_messages).
    #[must_use]
    pub fn with_max_queued_server_messages(mut self, count: usize) -> Self {
        self.max_queued_server_messages = count;
        self
    }

    /// Sets [`stderr_tail_lines`](Limits::stderr_tail_lines).
    #[must_use]
    pub fn with_stderr_tail_lines(mut self, lines: usize) -> Self {
        self.stderr_tail_lines = lines;
        self
    }

    /// Sets [`max_echo_bytes`](Limits::max_echo_bytes).
    #[must_use]
    pub fn with_max_echo_bytes(mut self, bytes: usize) -> Self {
        self.max_echo_bytes = bytes;
        self
    }
}
