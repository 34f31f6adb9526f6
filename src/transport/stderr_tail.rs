//! The last lines a server process wrote to stderr, shared by the transport that keeps them
//! (stdio, as it reads them) and the client that quotes them (in errors and
//! `Client::stderr_tail`). The client makes one per connection and gives it to the transport
//! as it opens; a transport without a process leaves it empty.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::sync::lock;

/// The last lines a server wrote to stderr, oldest first (a handle: clones share the lines).
///
/// What it holds is capped by whoever keeps lines in it: stdio keeps at most
/// `stderr_tail_lines` lines of at most `max_echo_bytes` each.
#[derive(Clone, Default)]
pub(crate) struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    /// The lines, oldest first, joined with `\n`; empty when there are none.
    pub(crate) fn text(&self) -> String {
        let lines = lock(&self.0);
        let mut text = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                text.push('\n');
            }
            text.push_str(line);
        }
        text
    }

    /// Keeps `line` as the newest, forgetting the oldest so that at most `cap` are kept (none
    /// when `cap` is 0).
    pub(crate) fn push(&self, line: String, cap: usize) {
        if cap == 0 {
            return;
        }
        let mut lines = lock(&self.0);
        while lines.len() >= cap {
            lines.pop_front();
        }
        lines.push_back(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_lines_are_kept_up_to_the_cap_and_shared_by_clones() {
        let tail = StderrTail::default();
        let seen = tail.clone();
        assert_eq!(seen.text(), "");
        for line in ["one", "two", "three"] {
            tail.push(line.into(), 2);
        }
        assert_eq!(seen.text(), "two\nthree");
        tail.push("four".into(), 0);
        assert_eq!(seen.text(), "two\nthree", "a cap of 0 keeps nothing more");
    }
}
