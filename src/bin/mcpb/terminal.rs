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

use std::borrow::Cow;
use std::fmt::Write;

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

/// A serialised JSON document with DEL, the C1 controls and the bidirectional-text controls
/// written as `\uXXXX` escapes. These characters can only occur inside its strings, where the
/// escape means the same character, so the document stays valid and equal.
pub(crate) fn escaped_json(doc: String) -> String {
    let unsafe_in_json = |c: char| (c.is_control() && c as u32 >= 0x7f) || is_bidi_control(c);
    if !doc.chars().any(unsafe_in_json) {
        return doc;
    }
    let mut out = String::with_capacity(doc.len() + 16);
    for c in doc.chars() {
        if unsafe_in_json(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
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
        let doc = escaped_json(serde_json::to_string(&value).unwrap());
        assert!(!doc.chars().any(|c| c.is_control()), "{doc}");
        assert!(!doc.contains('\u{202e}'));
        let back: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(back, value);
    }
}
