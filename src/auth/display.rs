//! What of a peer's text may reach a person or a program: an authorization server chooses its
//! endpoints' URLs, and one with an escape sequence, a bell, a newline or a bidirectional-text
//! control would drive the terminal it is printed on, forge lines after it, or reach a browser
//! opener's arguments as it is.
//!
//! | text | what happens to an unsafe character |
//! |---|---|
//! | the authorization URL (handed to the [`RedirectHandler`](super::RedirectHandler)) | refused: the authorization fails before the URL is shown |
//! | a URL named in an error or a log line | written as an escape (`\u{1b}`) |

use std::borrow::Cow;

/// Whether `c` must not be printed or handed to a program as it is: a control character (C0,
/// newline and tab included, DEL, C1), a bidirectional-text control, or a line or paragraph
/// separator.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// The first character of `text` that must not be printed or handed to a program as it is.
pub(crate) fn unsafe_char(text: &str) -> Option<char> {
    text.chars().find(|c| is_unsafe(*c))
}

/// `text` with every unsafe character written as an escape (`\u{1b}`); borrowed when there was
/// none.
pub(crate) fn escaped(text: &str) -> Cow<'_, str> {
    if unsafe_char(text).is_none() {
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

/// Refuses a URL the authorization server chose that holds an unsafe character: `what` names
/// where it came from.
///
/// # Errors
/// The URL holds one; the message names the character, never the URL as it is.
pub(crate) fn require_showable(url: &str, what: &str) -> Result<(), String> {
    match unsafe_char(url) {
        None => Ok(()),
        Some(c) => Err(format!(
            "the authorization server's {what} holds a control character (U+{:04X}); refusing \
             to show it or hand it to a program",
            c as u32
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_marks_are_unsafe_and_the_rest_is_not() {
        for bad in [
            "\u{1b}[2J",
            "\u{7}",
            "a\nb",
            "a\tb",
            "\u{7f}",
            "\u{9b}",
            "\u{202e}",
            "\u{2028}",
        ] {
            assert!(unsafe_char(bad).is_some(), "{bad:?}");
        }
        let fine = "https://as.example/authorize?x=%1B&name=été";
        assert_eq!(unsafe_char(fine), None);
        assert!(matches!(escaped(fine), Cow::Borrowed(_)));
        assert_eq!(
            escaped("a\u{1b}]8;;x\u{7}\nb"),
            "a\\u{1b}]8;;x\\u{7}\\u{a}b"
        );
    }

    #[test]
    fn the_refusal_names_the_character_not_the_url() {
        let e = require_showable("https://as/a#\u{1b}[2J", "authorization_endpoint").unwrap_err();
        assert!(
            e.contains("U+001B") && e.contains("authorization_endpoint"),
            "{e}"
        );
        assert!(unsafe_char(&e).is_none(), "{e:?}");
    }
}
