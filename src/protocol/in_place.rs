//! A large response line whose bulk is one JSON string (a 16 MB text, a base64 blob), taken
//! apart so that the string becomes the caller's `String` inside the very buffer the line was
//! read into: one copy of the message in memory at peak, not the line and the parsed text side
//! by side.
//!
//! ```text
//!   line:     {"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"<16 MB>"}]}}
//!   skeleton: {"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"<marker>"}]}}
//!   big:      the 16 MB, unescaped and moved to the start of the line's own buffer
//!   result:   the skeleton parsed, the marker replaced by `big` (moved, not copied)
//! ```
//!
//! Only a string that is a value (not a member name) and holds most of the line is taken out;
//! anything else is parsed as before. The string is checked as serde_json checks strings (no
//! raw control characters, valid escapes and surrogate pairs, valid UTF-8).

use serde_json::Value;

/// Lines at least this long are considered.
pub(crate) const MIN_LINE: usize = 1024 * 1024;

/// What stands for the big string in the skeleton (JSON text, and the string it reads as).
const MARKER: &[u8] = br#"\u0000mcp-blocking:in-place\u0000"#;
const MARKER_TEXT: &str = "\0mcp-blocking:in-place\0";

/// A line taken apart: the skeleton with a marker where the big string was, and the string.
pub(crate) struct Split {
    pub(crate) skeleton: Vec<u8>,
    pub(crate) big: String,
}

/// What [`split`] made of a line.
pub(crate) enum Outcome {
    /// Not a line to take apart: here it is, untouched.
    Whole(Vec<u8>),
    /// Taken apart.
    Split(Split),
    /// The big string is not a valid JSON string (the line is gone: it was being unescaped).
    Invalid(&'static str),
}

/// Takes `line` apart when one string value holds most of it.
pub(crate) fn split(mut line: Vec<u8>) -> Outcome {
    let Some((start, end)) = longest_string(&line) else {
        return Outcome::Whole(line);
    };
    if (end - start) * 2 < line.len() || is_member_name(&line[end + 1..]) {
        return Outcome::Whole(line);
    }
    let (head, tail) = (&line[..start], &line[end..]);
    if memchr::memmem::find(head, MARKER).is_some() || memchr::memmem::find(tail, MARKER).is_some()
    {
        return Outcome::Whole(line);
    }
    let mut skeleton = Vec::with_capacity(head.len() + MARKER.len() + tail.len());
    skeleton.extend_from_slice(head);
    skeleton.extend_from_slice(MARKER);
    skeleton.extend_from_slice(tail);
    let len = match unescape_to_front(&mut line, start, end) {
        Ok(len) => len,
        Err(what) => return Outcome::Invalid(what),
    };
    line.truncate(len);
    match String::from_utf8(line) {
        Ok(big) => Outcome::Split(Split { skeleton, big }),
        Err(_) => Outcome::Invalid("invalid unicode code point"),
    }
}

/// Puts `big` back where the marker is in `v` (the first one met); `false` when there is none.
pub(crate) fn put_back(v: &mut Value, big: &mut Option<String>) -> bool {
    match v {
        Value::String(s) if s == MARKER_TEXT => {
            if let Some(b) = big.take() {
                *s = b;
                return true;
            }
            false
        }
        Value::Array(items) => items.iter_mut().any(|i| put_back(i, big)),
        Value::Object(members) => members.values_mut().any(|m| put_back(m, big)),
        _ => false,
    }
}

/// The content (between its quotes) of the longest string in `line`, read as JSON text: every
/// `"` outside a string opens one. `None` when a string is not closed.
fn longest_string(line: &[u8]) -> Option<(usize, usize)> {
    let mut best = (0, 0);
    let mut i = 0;
    while let Some(p) = memchr::memchr(b'"', &line[i..]) {
        let start = i + p + 1;
        let mut j = start;
        let end = loop {
            let q = j + memchr::memchr2(b'"', b'\\', line.get(j..)?)?;
            if line[q] == b'"' {
                break q;
            }
            j = q + 2;
        };
        if end - start > best.1 - best.0 {
            best = (start, end);
        }
        i = end + 1;
    }
    (best.1 > best.0).then_some(best)
}

/// Whether what follows a string's closing quote makes it a member name.
fn is_member_name(after: &[u8]) -> bool {
    after
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        .is_some_and(|&b| b == b':')
}

/// Bytes unescaped, moved and checked at a time (while they are in the cache).
const BLOCK: usize = 64 * 1024;

/// Unescapes `buf[start..end]` (a JSON string's content) to the front of `buf`, in place (what
/// an escape stands for is never longer than the escape), checking that it is UTF-8; returns its
/// length.
fn unescape_to_front(buf: &mut [u8], start: usize, end: usize) -> Result<usize, &'static str> {
    let mut w = 0;
    let mut r = start;
    // `buf[..checked]` is known to be UTF-8.
    let mut checked = 0;
    while r < end {
        let limit = (r + BLOCK).min(end);
        let run = find_special(&buf[r..limit]).unwrap_or(limit - r);
        buf.copy_within(r..r + run, w);
        w += run;
        r += run;
        if r < limit {
            if buf[r] < 0x20 {
                return Err("control character (\\u0000-\\u001F) found while parsing a string");
            }
            r = unescape_one(buf, r, end, &mut w)?;
        }
        checked = check_utf8(buf, checked, w, false)?;
    }
    check_utf8(buf, checked, w, true)?;
    Ok(w)
}

/// Checks `buf[from..to]` is UTF-8 but for a character cut at `to` (unless `last`); returns how
/// far it is known to be.
fn check_utf8(buf: &[u8], from: usize, to: usize, last: bool) -> Result<usize, &'static str> {
    match std::str::from_utf8(&buf[from..to]) {
        Ok(_) => Ok(to),
        Err(e) if e.error_len().is_none() && !last => Ok(from + e.valid_up_to()),
        Err(_) => Err("invalid unicode code point"),
    }
}

/// The first `\\` or control character in `hay`, 64 bytes at a time (which the compiler turns
/// into vector compares).
fn find_special(hay: &[u8]) -> Option<usize> {
    let special = |b: u8| b == b'\\' || b < 0x20;
    let mut base = 0;
    for chunk in hay.chunks(64) {
        if chunk.iter().fold(false, |acc, &b| acc | special(b)) {
            return chunk.iter().position(|&b| special(b)).map(|p| base + p);
        }
        base += chunk.len();
    }
    None
}

/// Writes what the escape at `buf[r]` stands for at `buf[*w..]`; returns where the text goes on.
fn unescape_one(
    buf: &mut [u8],
    mut r: usize,
    end: usize,
    w: &mut usize,
) -> Result<usize, &'static str> {
    // `\\` and at least one more byte before the closing quote.
    if r + 1 >= end {
        return Err("invalid escape");
    }
    let e = buf[r + 1];
    r += 2;
    let byte = match e {
        b'"' => b'"',
        b'\\' => b'\\',
        b'/' => b'/',
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        b'u' => {
            let mut c = hex4(&buf[r..end])?;
            r += 4;
            if (0xD800..0xDC00).contains(&c) {
                if r + 6 > end || &buf[r..r + 2] != b"\\u" {
                    return Err("lone leading surrogate in hex escape");
                }
                let low = hex4(&buf[r + 2..end])?;
                if !(0xDC00..0xE000).contains(&low) {
                    return Err("lone leading surrogate in hex escape");
                }
                r += 6;
                c = 0x10000 + ((c - 0xD800) << 10) + (low - 0xDC00);
            } else if (0xDC00..0xE000).contains(&c) {
                return Err("lone leading surrogate in hex escape");
            }
            let ch = char::from_u32(c).ok_or("invalid unicode code point")?;
            let mut tmp = [0u8; 4];
            let s = ch.encode_utf8(&mut tmp);
            buf[*w..*w + s.len()].copy_from_slice(s.as_bytes());
            *w += s.len();
            return Ok(r);
        }
        _ => return Err("invalid escape"),
    };
    buf[*w] = byte;
    *w += 1;
    Ok(r)
}

fn hex4(b: &[u8]) -> Result<u32, &'static str> {
    let digits = b.get(..4).ok_or("invalid escape")?;
    let mut n = 0;
    for &d in digits {
        let v = (d as char).to_digit(16).ok_or("invalid escape")?;
        n = n * 16 + v;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(text: &str) -> Option<String> {
        let line = serde_json::to_vec(&serde_json::json!({"id": 1, "result": {"t": text}}))
            .expect("serialises");
        match split(line) {
            Outcome::Split(mut s) => {
                let mut v: Value = serde_json::from_slice(&s.skeleton).expect("skeleton");
                let mut big = Some(std::mem::take(&mut s.big));
                assert!(put_back(&mut v, &mut big));
                Some(v["result"]["t"].as_str().expect("text").to_owned())
            }
            Outcome::Whole(_) => None,
            Outcome::Invalid(w) => panic!("{w}"),
        }
    }

    #[test]
    fn a_mostly_string_line_comes_apart_and_back_together() {
        let text = format!("a\"b\\c\n\u{1}é😀/{}", "x".repeat(200));
        assert_eq!(roundtrip(&text).as_deref(), Some(text.as_str()));
        // Too small a share of the line: left whole.
        assert_eq!(roundtrip("short"), None);
    }

    #[test]
    fn escapes_read_as_serde_json_reads_them() {
        for (json, want) in [
            (
                r#""\u00e9\ud83d\ude00\/\b\f\r\t""#,
                Ok("é😀/\u{8}\u{c}\r\t"),
            ),
            (r#""\ud83d""#, Err(())),
            (r#""\ude00x""#, Err(())),
            (r#""\x""#, Err(())),
            (r#""\u12""#, Err(())),
            ("\"a\u{1}b\"", Err(())),
        ] {
            let mut buf = json.as_bytes().to_vec();
            let got = unescape_to_front(&mut buf, 1, json.len() - 1)
                .map(|n| String::from_utf8(buf[..n].to_vec()).unwrap());
            let serde: Result<String, _> = serde_json::from_str(json);
            assert_eq!(got.is_ok(), serde.is_ok(), "{json}");
            if let Ok(w) = want {
                assert_eq!(got.unwrap(), w);
            }
        }
    }

    #[test]
    fn member_names_and_unclosed_strings_are_left_whole() {
        let name = format!(r#"{{"result":{{"{}":1}}}}"#, "k".repeat(300));
        assert!(matches!(split(name.into_bytes()), Outcome::Whole(_)));
        let open = format!(r#"{{"result":"{}"#, "k".repeat(300));
        assert!(matches!(split(open.into_bytes()), Outcome::Whole(_)));
    }

    #[test]
    fn a_large_result_parses_in_place_as_it_parses_whole() {
        use crate::model::CallToolResult;
        use crate::protocol::jsonrpc::Payload;
        let text = format!("{}\"é\\\n😀{}", "a".repeat(MIN_LINE), "b".repeat(70_000));
        let line = |version: &str| {
            serde_json::to_vec(&serde_json::json!({
                "jsonrpc": version, "id": 3,
                "result": {"content": [{"type": "text", "text": text}], "isError": false}
            }))
            .unwrap()
        };
        let whole: CallToolResult = {
            let l = line("2.0");
            let v: Value = serde_json::from_slice(&l).unwrap();
            serde_json::from_value(v["result"].clone()).unwrap()
        };
        let parsed: CallToolResult = Payload::Line(line("2.0")).parse().unwrap();
        assert_eq!(parsed, whole);
        assert_eq!(parsed.content[0].as_text(), Some(text.as_str()));
        // The envelope is still checked.
        let e = Payload::Line(line("1.0"))
            .parse::<CallToolResult>()
            .unwrap_err();
        assert!(e.to_string().contains("jsonrpc"), "{e}");
        // A broken string fails, as serde_json fails it.
        let mut broken = line("2.0");
        let at = memchr::memmem::find(&broken, b"aaaa").unwrap();
        broken[at] = 0x01;
        assert!(Payload::Line(broken).parse::<CallToolResult>().is_err());
        // The marker text in the rest of the line leaves it whole, and it parses as before.
        let mut odd = serde_json::to_vec(&serde_json::json!({
            "jsonrpc": "2.0", "id": 3, "result": {"m": MARKER_TEXT, "t": text}
        }))
        .unwrap();
        let v: Value = Payload::Line(odd.clone()).parse().unwrap();
        assert_eq!(v["m"], MARKER_TEXT);
        assert_eq!(v["t"], text.as_str());
        odd.truncate(odd.len() - 2);
        assert!(Payload::Line(odd).parse::<Value>().is_err());
    }
}
