//! [`Limits`]: what one server can make the client hold, and what a model can make an agent run.

use std::borrow::Cow;
use std::time::Duration;

/// What one server can make its client hold, and so how much memory a hostile or broken server
/// can cost. Every cap has a default; each is checked where the data arrives, and going over it
/// is a typed error or a logged drop that names the cap (never a slow growth of memory).
///
/// Set them on a server with [`ServerConfig::with_limits`](crate::ServerConfig::with_limits)
/// (or [`ServerConfig::with_max_message_bytes`](crate::ServerConfig::with_max_message_bytes) for the most
/// common one). The `Agent` fields cap what a model's answer can make an
/// [`Agent`](crate::agent::Agent) do; set them with
/// [`Agent::limits`](crate::agent::Agent::limits).
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
    /// Server-initiated messages waiting for the client: each of three queues (requests for
    /// the sampling and elicitation handlers, notifications for the notification handlers,
    /// and the client's own answers waiting to be sent) holds at most this many messages, and,
    /// past the first, at most [`max_message_bytes`](Limits::max_message_bytes) bytes of them.
    /// Beyond it, a request is answered at once with the JSON-RPC error `-32000` ("client
    /// busy") and a notification is dropped; the warning for either is logged at most once a
    /// second, with a count. A request that finds even the answers' queue full (the server is
    /// not reading what the client sends) is left unanswered, with the same kind of warning.
    /// Progress for a call that asked for it goes to that call, not through these queues.
    /// Default: 256.
    pub max_queued_server_messages: usize,
    /// How many of the server's last stderr lines are kept, to be quoted in errors (stdio).
    /// Default: 20.
    pub stderr_tail_lines: usize,
    /// The longest piece of server-supplied text (a method name, an error message, a stderr
    /// line, a log message) echoed into a log line, an error message or a reply, in bytes;
    /// longer text is cut and marked `… (N bytes cut)`. A stderr line is never held whole:
    /// only its first this-many bytes are kept while the rest of it streams past. Default: 1024.
    pub max_echo_bytes: usize,
    /// Bytes the client has written to the server that the server has not read yet (stdio: the
    /// queue behind its stdin pipe). A write that would go past it waits, up to its deadline,
    /// for the server to read; then a call fails with [`Error::Timeout`](crate::Error::Timeout),
    /// and a notification or an answer to the server with
    /// [`Error::Transport`](crate::Error::Transport) naming this cap. The connection stays
    /// open, and what is queued is written as the server reads. One message is always taken
    /// when nothing is queued, whatever its size. Default: 64 MiB.
    pub max_queued_write_bytes: usize,
    /// The shortest wait between two `tasks/get` polls of a task, whatever `pollInterval` the
    /// server suggests. Default: 100 ms.
    pub task_poll_floor: Duration,
    /// The longest wait between two `tasks/get` polls of a task (also used when the server
    /// suggests no `pollInterval`, if shorter than 1 s). Default: 30 s.
    pub task_poll_ceiling: Duration,
    /// The most tasks [`Client::list_tasks`](crate::Client::list_tasks) collects over all
    /// pages; past it, it fails with [`Error::Protocol`](crate::Error::Protocol) naming this
    /// cap (read the pages one by one with `list_tasks_page` to see more). Default: 10 000.
    pub max_listed_tasks: usize,
    /// Modern era (2026-07-28): how many times one call is retried with the answers to the
    /// server's input requests (`InputRequiredResult`, answered by the elicitation, sampling
    /// and roots handlers) before it fails with [`Error::Protocol`](crate::Error::Protocol).
    /// Default: 8.
    pub max_input_rounds: usize,
    /// OAuth: the largest answer read from the protected resource's metadata or the
    /// authorization server (its metadata, dynamic registration, token and refresh answers),
    /// in bytes. A larger one fails the authorization with an error naming this cap.
    /// Default: 256 KiB.
    pub max_auth_response_bytes: usize,
    /// Agent: the most tool calls of one model turn that are run. A turn that asks for more
    /// has its first this-many calls run and each of the others answered at once with an
    /// error result the model can read (one per call id, naming this cap), so a model cannot
    /// make one turn cost more than this many tool calls. Default: 64.
    pub max_tool_calls_per_turn: usize,
    /// Agent: how many tool calls of one turn run at the same time, each on a named thread of
    /// a pool that is joined before the turn ends (at least 1). Default: 8.
    pub max_parallel_tool_calls: usize,
    /// Agent: the most bytes of text one tool result sends to the model (all its text parts
    /// together, UTF-8). A longer result is cut at a character boundary and followed by a
    /// notice giving its size and the size kept, with the URIs of the resources it links to
    /// or embeds (kept whole, so the model can read them) or else the advice to call the tool
    /// with narrower arguments. Images are not counted. Default: 100 000 (about 25 000 tokens).
    pub max_tool_result_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 64 * 1024 * 1024,
            max_queued_server_messages: 256,
            stderr_tail_lines: 20,
            max_echo_bytes: 1024,
            max_queued_write_bytes: 64 * 1024 * 1024,
            task_poll_floor: Duration::from_millis(100),
            task_poll_ceiling: Duration::from_secs(30),
            max_listed_tasks: 10_000,
            max_input_rounds: 8,
            max_auth_response_bytes: 256 * 1024,
            max_tool_calls_per_turn: 64,
            max_parallel_tool_calls: 8,
            max_tool_result_bytes: 100_000,
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

    /// Sets [`max_input_rounds`](Limits::max_input_rounds).
    #[must_use]
    pub fn with_max_input_rounds(mut self, rounds: usize) -> Self {
        self.max_input_rounds = rounds;
        self
    }

    /// Sets [`max_auth_response_bytes`](Limits::max_auth_response_bytes).
    #[must_use]
    pub fn with_max_auth_response_bytes(mut self, bytes: usize) -> Self {
        self.max_auth_response_bytes = bytes;
        self
    }

    /// Sets [`max_queued_write_bytes`](Limits::max_queued_write_bytes).
    #[must_use]
    pub fn with_max_queued_write_bytes(mut self, bytes: usize) -> Self {
        self.max_queued_write_bytes = bytes;
        self
    }

    /// Sets [`task_poll_floor`](Limits::task_poll_floor) and
    /// [`task_poll_ceiling`](Limits::task_poll_ceiling) (a ceiling below the floor is raised
    /// to it).
    #[must_use]
    pub fn with_task_poll_bounds(mut self, floor: Duration, ceiling: Duration) -> Self {
        self.task_poll_floor = floor;
        self.task_poll_ceiling = ceiling.max(floor);
        self
    }

    /// Sets [`max_listed_tasks`](Limits::max_listed_tasks).
    #[must_use]
    pub fn with_max_listed_tasks(mut self, count: usize) -> Self {
        self.max_listed_tasks = count;
        self
    }

    /// Sets [`max_tool_calls_per_turn`](Limits::max_tool_calls_per_turn).
    #[must_use]
    pub fn with_max_tool_calls_per_turn(mut self, count: usize) -> Self {
        self.max_tool_calls_per_turn = count;
        self
    }

    /// Sets [`max_parallel_tool_calls`](Limits::max_parallel_tool_calls) (0 is taken as 1).
    #[must_use]
    pub fn with_max_parallel_tool_calls(mut self, count: usize) -> Self {
        self.max_parallel_tool_calls = count.max(1);
        self
    }

    /// Sets [`max_tool_result_bytes`](Limits::max_tool_result_bytes).
    #[must_use]
    pub fn with_max_tool_result_bytes(mut self, bytes: usize) -> Self {
        self.max_tool_result_bytes = bytes;
        self
    }

    /// How long to wait before the next poll of a task that suggested `suggested` ms.
    pub(crate) fn task_poll_interval(&self, suggested: Option<u64>) -> Duration {
        let wanted = suggested.map_or(Duration::from_secs(1), Duration::from_millis);
        wanted.clamp(
            self.task_poll_floor,
            self.task_poll_ceiling.max(self.task_poll_floor),
        )
    }

    /// `text` as it may be echoed: cut to [`max_echo_bytes`](Limits::max_echo_bytes).
    pub(crate) fn echo<'a>(&self, text: &'a str) -> Cow<'a, str> {
        echo(text, self.max_echo_bytes)
    }
}

/// `text` cut to at most `max` bytes (at a character boundary), marked with how many bytes were
/// cut; unchanged when it fits.
pub(crate) fn echo(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let end = char_floor(text, max);
    Cow::Owned(cut_mark(&text[..end], text.len() - end))
}

/// The largest index at most `max` (and at most `text.len()`) on a character boundary of `text`.
pub(crate) fn char_floor(text: &str, max: usize) -> usize {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// The character that follows text cut short, wherever the crate cuts what a peer sent (an
/// echo's `… (N bytes cut)`, an HTTP body's excerpt). The redaction rule looks for it: a secret
/// cut in two before it was redacted leaves its start right before this mark.
pub(crate) const CUT: char = '…';

/// `kept` followed by the mark for `cut` bytes left out.
pub(crate) fn cut_mark(kept: &str, cut: usize) -> String {
    format!("{kept}{CUT} ({cut} bytes cut)")
}

#[cfg(test)]
mod tests {
    use super::{echo, Limits};
    use std::time::Duration;

    #[test]
    fn task_polls_stay_between_the_floor_and_the_ceiling() {
        let l = Limits::default();
        assert_eq!(l.task_poll_interval(None), Duration::from_secs(1));
        assert_eq!(l.task_poll_interval(Some(0)), Duration::from_millis(100));
        assert_eq!(
            l.task_poll_interval(Some(u64::MAX)),
            Duration::from_secs(30)
        );
        assert_eq!(
            l.task_poll_interval(Some(1500)),
            Duration::from_millis(1500)
        );
        let odd = l.with_task_poll_bounds(Duration::from_secs(2), Duration::from_secs(1));
        assert_eq!(odd.task_poll_interval(Some(5000)), Duration::from_secs(2));
    }

    #[test]
    fn echo_cuts_at_a_character_boundary_and_says_how_much() {
        assert_eq!(echo("short", 10), "short");
        assert_eq!(echo("abcdef", 3), "abc… (3 bytes cut)");
        // "é" is two bytes: a cut inside it moves back to its start.
        assert_eq!(echo("aé", 2), "a… (2 bytes cut)");
        assert_eq!(echo("abc", 0), "… (3 bytes cut)");
    }
}
