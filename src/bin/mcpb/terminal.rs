//! Text a server chose, made safe to print on a terminal.
//!
//! A server's tool output, error messages, names and stderr lines may hold control characters:
//! an escape sequence can clear the screen, rewrite earlier lines, set the window title or
//! hide text; a carriage return or backspace can overwrite what was printed. `mcpb` prints
//! every such character escaped, as Rust writes it (`\u{1b}`), so what a server sent is shown
//! and never acted on.
//!
//! | where | what is escaped | what stays |
//! |---|---|---|
//! | text output, stderr lines, log lines | every control character (C0, DEL, C1) and the bidirectional-text controls | newline and tab |
//! | `--json` | DEL, C1 and the bidirectional-text controls, as `\uXXXX` (the JSON writer escapes C0 already) | everything else; the document stays valid JSON |
//!
//! Every `--json` document, a whole one ([`print_json`]) or one line of JSON Lines
//! ([`print_json_line`]: `chat`, `subscribe`), goes out through [`json_text`], so no command
//! writes a raw control character that another one escapes.
//!
//! mcpb's own output has no colours; the one escape sequence it writes itself (erasing the
//! progress line) goes only to a terminal that takes it ([`stderr_takes_escapes`]).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::{IsTerminal as _, Write as _};

use serde_json::{json, Value};

/// The characters that reorder how text around them is displayed (Trojan-Source style).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Whether `c` must not reach a terminal as it is (newline and tab may).
fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c)
}

/// `text` with every control character but newline and tab, and every bidirectional-text
/// control, written as an escape (`\u{1b}`). Borrowed when there was nothing to escape.
pub(crate) fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether `c` must be written as a `\uXXXX` escape in a `--json` document: DEL, the C1
/// controls and the bidirectional-text controls (the JSON writer escapes C0 itself).
fn is_unsafe_in_json(c: char) -> bool {
    (c.is_control() && c as u32 >= 0x7f) || is_bidi_control(c)
}

/// A serialised JSON document with DEL, the C1 controls and the bidirectional-text controls
/// written as `\uXXXX` escapes. These characters can only occur inside its strings, where the
/// escape means the same character, so the document stays valid and equal.
fn escaped_json(doc: String) -> String {
    if !doc.chars().any(is_unsafe_in_json) {
        return doc;
    }
    let mut out = String::with_capacity(doc.len() + 16);
    for c in doc.chars() {
        if is_unsafe_in_json(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// `doc` as `--json` writes it: serialised (pretty, or on one line for JSON Lines), then
/// escaped by the rule above.
pub(crate) fn json_text(doc: &Value, pretty: bool) -> String {
    let text = if pretty {
        serde_json::to_string_pretty(doc)
    } else {
        serde_json::to_string(doc)
    };
    let text = text.unwrap_or_else(|e| {
        json!({ "error": { "kind": "internal", "message": e.to_string() } }).to_string()
    });
    escaped_json(text)
}

/// Writes `doc` on stdout, pretty printed: the one document of a command.
pub(crate) fn print_json(doc: &Value) {
    write_stdout(&json_text(doc, true));
}

/// Writes `doc` on stdout on one line: one document of a JSON Lines stream.
pub(crate) fn print_json_line(doc: &Value) {
    write_stdout(&json_text(doc, false));
}

fn write_stdout(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.write_all(b"\n");
    let _ = stdout.flush();
}

/// Whether stderr is a terminal that takes the escape sequence mcpb writes itself (erase the
/// line, for the progress line). On Windows the console is asked to process escape sequences
/// (virtual terminal processing, Windows 10 and later); one that cannot is taken as no terminal,
/// so its user sees no raw escapes.
pub(crate) fn stderr_takes_escapes() -> bool {
    std::io::stderr().is_terminal() && console_takes_escapes()
}

#[cfg(unix)]
fn console_takes_escapes() -> bool {
    true
}

#[cfg(windows)]
fn console_takes_escapes() -> bool {
    use std::os::windows::io::AsRawHandle;
    use windows_sys::Win32::System::Console::{
        GetConsoleMode, SetConsoleMode, ENABLE_VIRTUAL_TERMINAL_PROCESSING,
    };
    let stderr = std::io::stderr();
    let handle = stderr.as_raw_handle();
    let mut mode = 0u32;
    // SAFETY: the handle is stderr's, valid while `stderr` lives; `mode` is a live u32 the
    // first call writes; the second passes no pointer.
    #[allow(unsafe_code)]
    unsafe {
        GetConsoleMode(handle, &mut mode) != 0
            && (mode & ENABLE_VIRTUAL_TERMINAL_PROCESSING != 0
                || SetConsoleMode(handle, mode | ENABLE_VIRTUAL_TERMINAL_PROCESSING) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_escaped_and_lines_stay() {
        assert_eq!(
            escaped("a\x1b[2Jb\x07c\x08d\re\nf\tg"),
            "a\\u{1b}[2Jb\\u{7}c\\u{8}d\\u{d}e\nf\tg"
        );
        assert_eq!(escaped("\u{9b}31m\u{7f}"), "\\u{9b}31m\\u{7f}");
        assert_eq!(escaped("abc\u{202e}cba"), "abc\\u{202e}cba");
        assert!(matches!(escaped("plain, été\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn json_stays_valid_and_equal() {
        let value = serde_json::json!({"t": "x\u{1b}[2J\u{9b}1m\u{202e}\u{7f}"});
        for pretty in [true, false] {
            let doc = json_text(&value, pretty);
            assert!(!doc.chars().any(|c| c.is_control() && c != '\n'), "{doc}");
            assert!(!doc.contains('\u{202e}'));
            assert_eq!(doc.contains('\n'), pretty);
            let back: serde_json::Value = serde_json::from_str(&doc).unwrap();
            assert_eq!(back, value);
        }
    }
}
