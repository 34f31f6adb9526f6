//! Approving tool calls in `run` and `chat`: a call the servers' config does not let run
//! without asking (a tool left out of Roo Code's `alwaysAllow`, Cline's `autoApprove`) is asked
//! about on the terminal.
//!
//! | situation | what happens |
//! |---|---|
//! | the config says nothing, trusts the server (`trust: true`) or lists the tool | runs |
//! | `--yes` | runs |
//! | answered `always` earlier in this run or chat | runs |
//! | a terminal | `run it? [y/n/always]` on stderr, the answer read from the terminal device (not stdin, which may be a pipe or the chat's messages) |
//! | no terminal | not run: the model is told the tool needs approval and to rerun with `--yes`; a line on stderr says the same |
//!
//! Calls of one turn run in parallel: one question is on the terminal at a time.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::sync::Mutex;

use mcp_blocking::agent::{ApprovalDecision, ToolApproval};

use crate::terminal;

/// An answer to `run it? [y/n/always]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    Yes,
    No,
    /// Yes, and for the rest of the session for this tool of this server.
    Always,
}

/// Reads an answer: `y`/`yes`, `n`/`no`, `a`/`always` (any case); an empty line is `no`, the
/// safe default. `None` for anything else (asked again).
pub(crate) fn parse_answer(line: &str) -> Option<Answer> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(Answer::Yes),
        "n" | "no" | "" => Some(Answer::No),
        "a" | "always" => Some(Answer::Always),
        _ => None,
    }
}

/// How many unreadable answers before a question counts as `no`.
const MAX_TRIES: usize = 3;

/// The most characters of a call's arguments shown in the question.
const SHOWN_ARGUMENTS: usize = 200;

/// The approval hook of `run` and `chat`.
pub(crate) struct Approver {
    yes: bool,
    /// (server, tool) answered `always`.
    always: Mutex<BTreeSet<(String, String)>>,
    /// The terminal to ask on (one question at a time); `None` without one.
    terminal: Mutex<Option<BufReader<std::fs::File>>>,
}

impl Approver {
    /// An approver: `yes` approves every call (`--yes`); otherwise the terminal is asked, when
    /// there is one (stderr on a terminal, and the terminal device opens).
    pub(crate) fn new(yes: bool) -> Self {
        let terminal = if yes || !std::io::stderr().is_terminal() {
            None
        } else {
            open_terminal().map(BufReader::new)
        };
        Approver {
            yes,
            always: Mutex::new(BTreeSet::new()),
            terminal: Mutex::new(terminal),
        }
    }

    /// Whether `ask`'s call runs.
    pub(crate) fn decide(&self, ask: &ToolApproval) -> ApprovalDecision {
        if !ask.required || self.yes {
            return ApprovalDecision::Approve;
        }
        let key = (ask.server.clone(), ask.tool.clone());
        let mut terminal = self.terminal.lock().unwrap_or_else(|p| p.into_inner());
        // Checked with the terminal held: an `always` given to a call of the same turn counts.
        if self.always().contains(&key) {
            return ApprovalDecision::Approve;
        }
        let Some(reader) = terminal.as_mut() else {
            return refuse(ask);
        };
        match ask_on(reader, ask) {
            Answer::Yes => ApprovalDecision::Approve,
            Answer::Always => {
                self.always().insert(key);
                ApprovalDecision::Approve
            }
            Answer::No => ApprovalDecision::Decline,
        }
    }

    fn always(&self) -> std::sync::MutexGuard<'_, BTreeSet<(String, String)>> {
        self.always.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Asks about `ask` on stderr and reads the answer from `reader` (end of input is `no`).
fn ask_on(reader: &mut impl BufRead, ask: &ToolApproval) -> Answer {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "mcpb: server `{}` wants to run `{}` {}",
        terminal::escaped(&ask.server),
        terminal::escaped(&ask.tool),
        terminal::escaped(&shown_arguments(ask))
    );
    if let Some(rule) = &ask.rule {
        let _ = writeln!(
            err,
            "  it needs your approval: {} lists the tools that run without asking",
            terminal::escaped(&rule.to_string())
        );
    }
    for _ in 0..MAX_TRIES {
        let _ = write!(err, "  run it? [y/n/always] ");
        let _ = err.flush();
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return Answer::No,
            Ok(_) => {
                if let Some(a) = parse_answer(&line) {
                    return a;
                }
            }
        }
    }
    Answer::No
}

/// The arguments as one line, cut at [`SHOWN_ARGUMENTS`] characters.
fn shown_arguments(ask: &ToolApproval) -> String {
    let text = ask.arguments.to_string();
    if text.chars().count() > SHOWN_ARGUMENTS {
        let cut: String = text.chars().take(SHOWN_ARGUMENTS).collect();
        format!("{cut}...")
    } else {
        text
    }
}

/// Without a terminal: not run, the model told to have the user rerun with `--yes`, and the
/// user told on stderr.
fn refuse(ask: &ToolApproval) -> ApprovalDecision {
    let rule = ask
        .rule
        .as_ref()
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    eprintln!(
        "mcpb: server `{}`: tool `{}` needs approval{} and there is no terminal to ask on: not \
         run (run again with --yes to approve every tool call)",
        terminal::escaped(&ask.server),
        terminal::escaped(&ask.tool),
        terminal::escaped(&rule)
    );
    ApprovalDecision::DeclineWith(format!(
        "Not run: the tool `{}` of server `{}` needs the user's approval{rule}, and there is no \
         terminal to ask the user on. Tell the user to run mcpb again with --yes to approve \
         every tool call, or from a terminal to be asked.",
        ask.tool, ask.server
    ))
}

/// The terminal device, for reading answers even when stdin is a pipe.
#[cfg(unix)]
fn open_terminal() -> Option<std::fs::File> {
    std::fs::File::open("/dev/tty").ok()
}

/// The console's input, for reading answers even when stdin is a pipe.
#[cfg(windows)]
fn open_terminal() -> Option<std::fs::File> {
    std::fs::File::open("CONIN$").ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_in_any_case_and_enter_is_no() {
        for (line, answer) in [
            ("y\n", Some(Answer::Yes)),
            ("YES\r\n", Some(Answer::Yes)),
            (" n ", Some(Answer::No)),
            ("no", Some(Answer::No)),
            ("\n", Some(Answer::No)),
            ("a", Some(Answer::Always)),
            ("Always\n", Some(Answer::Always)),
            ("sure", None),
            ("yy", None),
        ] {
            assert_eq!(parse_answer(line), answer, "{line:?}");
        }
    }

    #[test]
    fn a_question_takes_the_first_readable_answer_and_gives_up_as_no() {
        let ask = sample();
        let mut twice = std::io::Cursor::new("what\nalways\n");
        assert_eq!(ask_on(&mut twice, &ask), Answer::Always);
        let mut garbled = std::io::Cursor::new("x\ny?\nz\ny\n");
        assert_eq!(ask_on(&mut garbled, &ask), Answer::No);
        let mut ended = std::io::Cursor::new("");
        assert_eq!(ask_on(&mut ended, &ask), Answer::No);
    }

    #[test]
    fn always_approves_that_tool_for_the_rest_of_the_session() {
        let approver = Approver {
            yes: false,
            always: Mutex::new(BTreeSet::new()),
            terminal: Mutex::new(None),
        };
        let ask = sample();
        assert!(!approver.decide(&ask).is_approved());
        approver
            .always()
            .insert((ask.server.clone(), ask.tool.clone()));
        assert!(approver.decide(&ask).is_approved());
        let yes = Approver {
            yes: true,
            ..approver
        };
        assert!(yes.decide(&sample_of("other")).is_approved());
    }

    fn sample() -> ToolApproval {
        sample_of("write_file")
    }

    /// A call that needs approval, as the agent asks about it.
    fn sample_of(tool: &str) -> ToolApproval {
        use mcp_blocking::config::{Approval, ServerPolicy};
        let policy = ServerPolicy::new().with_approval(Approval::Tools(vec!["read_file".into()]));
        ToolApproval::new("fs", tool, serde_json::json!({"path": "/x"}), Some(&policy))
    }
}
