//! Property-based fuzzing of what reads a peer's bytes: [`Inbound::parse`], the response id
//! peeks ([`peek_response_id`], [`peek_id_prefix`]), a peeked line's parse ([`Payload::Line`]),
//! the whole routing path of a [`Client`](crate::Client) against a scripted in-process server,
//! and the configured-header check ([`header_pair`]).
//!
//! Each target runs a fixed number of cases from a seeded xorshift generator, so a failure
//! reproduces exactly: it prints the seed, the case and the input. `MCP_FUZZ_CASES` sets the
//! cases per target (default [`DEFAULT_CASES`]; the routing target runs a fifth of them), and
//! `MCP_FUZZ_SEED` the seed.
//!
//! Checked for every input: no panic; agreement with an oracle written on `serde_json::Value`
//! when the input is valid JSON; that a peek names the same id as the full parse; that a
//! peeked line's result is the one the full parse gives; and that parsing allocates at most
//! linearly in the input (a counting allocator, test builds only).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use super::jsonrpc::{
    peek_id_prefix, peek_response_id, Fault, FrameError, InResponse, Inbound, Malformed, Payload,
    RequestId,
};

/// Cases per target unless `MCP_FUZZ_CASES` says otherwise.
const DEFAULT_CASES: u64 = 5_000;
const DEFAULT_SEED: u64 = 0x5EED_1DEA_F00D_CAFE;

fn cases() -> u64 {
    crate::test_rng::cases(DEFAULT_CASES)
}

fn seed() -> u64 {
    crate::test_rng::seed(DEFAULT_SEED)
}

// ---------------------------------------------------------------------------------------------
// Allocation accounting: the peak of live bytes allocated by this thread since `reset`.

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn note(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

/// Counts what each thread allocates, then hands the work to the system allocator.
struct Counting;

// SAFETY: every call is passed unchanged to `System`, which upholds the `GlobalAlloc`
// contract; the counting touches only `const`-initialised thread-locals of plain `Cell`s,
// which never allocate.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            note(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            note(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        note(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            note(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Runs `f` and returns its output with the most bytes it held allocated at once.
fn peak_bytes<T>(f: impl FnOnce() -> T) -> (T, usize) {
    LIVE.with(|l| l.set(0));
    PEAK.with(|p| p.set(0));
    let out = f();
    (out, PEAK.with(Cell::get).max(0) as usize)
}

#[test]
fn the_allocation_counter_counts() {
    let (v, bytes) = peak_bytes(|| vec![1u8; 100_000]);
    assert!(bytes >= 100_000, "{bytes}");
    drop(v);
    let ((), bytes) = peak_bytes(|| {});
    assert_eq!(bytes, 0);
}

/// The allocation a parse of `len` bytes may hold: linear in the input.
fn allowed(len: usize) -> usize {
    64 * len + 8 * 1024
}

// ---------------------------------------------------------------------------------------------
// The generator.

use crate::test_rng::Rng;

/// Reports the seed, case and input of a failing case.
struct Case<'a> {
    target: &'static str,
    n: u64,
    input: &'a [u8],
}

impl std::fmt::Display for Case<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} case {} (MCP_FUZZ_SEED={}): input {:?}",
            self.target,
            self.n,
            seed(),
            String::from_utf8_lossy(self.input)
        )
    }
}

fn random_string(rng: &mut Rng) -> String {
    const PIECES: &[&str] = &[
        "a", "b", "z", "0", "9", " ", "\"", "\\", "/", "\n", "\r", "\t", "\u{0}", "\u{1f}", "é",
        "€", "😀", "\u{fffd}", "\u{2028}", "id", "result", "error", "jsonrpc", "2.0", "method",
        "{", "}", "[", "]", ":", ",",
    ];
    let n = rng.below(8);
    (0..n).map(|_| *rng.pick(PIECES)).collect()
}

fn random_number(rng: &mut Rng) -> Value {
    match rng.below(8) {
        0 => json!(0),
        1 => json!(rng.below(100) as i64),
        2 => json!(-(rng.below(100) as i64)),
        3 => json!(rng.next() as i64),
        4 => json!(rng.next()),
        5 => json!(i64::MIN),
        6 => json!((rng.below(1000) as f64) / 8.0),
        _ => json!(1e300),
    }
}

fn random_value(rng: &mut Rng, depth: usize) -> Value {
    match rng.below(if depth == 0 { 4 } else { 6 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.one_in(2)),
        2 => random_number(rng),
        3 => Value::String(random_string(rng)),
        4 => Value::Array(
            (0..rng.below(4))
                .map(|_| random_value(rng, depth - 1))
                .collect(),
        ),
        _ => Value::Object(
            (0..rng.below(4))
                .map(|_| (random_string(rng), random_value(rng, depth - 1)))
                .collect(),
        ),
    }
}

/// How a generated frame names the request it answers; the routing target puts the real id in.
const OURS: &str = "\u{1}ours";
const OURS_AS_STRING: &str = "\u{1}ours-as-string";

fn random_id(rng: &mut Rng, with_ours: bool) -> Option<Value> {
    match rng.below(12) {
        0..=2 if with_ours => Some(json!(OURS)),
        3 if with_ours => Some(json!(OURS_AS_STRING)),
        0..=3 => Some(json!(rng.below(5))),
        4 => Some(Value::Null),
        5 => None,
        6 => Some(json!(rng.below(1000) as i64 - 500)),
        7 => Some(json!(random_string(rng))),
        8 => Some(json!(1.5)),
        9 => Some(json!(u64::MAX)),
        10 => Some(json!(true)),
        _ => Some(random_value(rng, 2)),
    }
}

fn random_error(rng: &mut Rng) -> Value {
    match rng.below(8) {
        0..=3 => json!({"code": *rng.pick(&[-32700, -32600, -32601, -32602, -32603, -32000, 0, 7]),
                        "message": random_string(rng)}),
        4 => json!({"code": -32602, "message": "bad", "data": random_value(rng, 2)}),
        5 => json!({"code": random_number(rng), "message": random_value(rng, 1)}),
        6 => {
            let mut m = Map::new();
            if rng.one_in(2) {
                m.insert("code".into(), random_value(rng, 1));
            }
            if rng.one_in(2) {
                m.insert("message".into(), random_value(rng, 1));
            }
            Value::Object(m)
        }
        _ => random_value(rng, 2),
    }
}

fn tool_result(rng: &mut Rng) -> Value {
    match rng.below(4) {
        0 | 1 => json!({"content": [{"type": "text", "text": random_string(rng)}]}),
        2 => Value::Null,
        _ => random_value(rng, 3),
    }
}

/// A message as a server might send it, well-formed or not.
fn random_message(rng: &mut Rng, with_ours: bool) -> Value {
    let mut m = Map::new();
    // Members in a random order (`preserve_order` keeps insertion order).
    let mut members: Vec<(&str, Value)> = Vec::new();
    match rng.below(10) {
        0..=6 => members.push(("jsonrpc", json!("2.0"))),
        7 => {}
        8 => members.push((
            "jsonrpc",
            json!(*rng.pick(&["1.0", "2", "2.0 ", "", "2.00"])),
        )),
        _ => members.push(("jsonrpc", random_value(rng, 1))),
    }
    let kind = rng.below(10);
    if kind < 6 {
        // A response.
        if let Some(id) = random_id(rng, with_ours) {
            members.push(("id", id));
        }
        match rng.below(10) {
            0..=4 => members.push(("result", tool_result(rng))),
            5..=7 => members.push(("error", random_error(rng))),
            8 => {
                members.push(("result", tool_result(rng)));
                members.push((
                    "error",
                    if rng.one_in(2) {
                        Value::Null
                    } else {
                        random_error(rng)
                    },
                ));
            }
            _ => {}
        }
        if rng.one_in(12) {
            members.push((
                "method",
                if rng.one_in(2) {
                    Value::Null
                } else {
                    json!("x")
                },
            ));
        }
    } else if kind < 8 {
        // A notification, progress now and then for our request.
        if rng.one_in(2) {
            members.push(("method", json!("notifications/progress")));
            let token = if with_ours && rng.one_in(2) {
                json!(OURS)
            } else {
                random_value(rng, 1)
            };
            members.push((
                "params",
                json!({"progressToken": token, "progress": random_number(rng)}),
            ));
        } else {
            members.push((
                "method",
                json!(*rng.pick(&[
                    "notifications/message",
                    "notifications/tools/list_changed",
                    "notifications/whatever",
                    ""
                ])),
            ));
            members.push(("params", random_value(rng, 2)));
        }
    } else {
        // A request from the server.
        members.push((
            "method",
            if rng.one_in(8) {
                random_value(rng, 1)
            } else {
                json!(*rng.pick(&["ping", "roots/list", "sampling/createMessage", "x/y"]))
            },
        ));
        if let Some(id) = random_id(rng, false) {
            members.push(("id", id));
        }
        if rng.one_in(2) {
            members.push(("params", random_value(rng, 2)));
        }
    }
    if rng.one_in(6) {
        members.push(("extra", random_value(rng, 2)));
    }
    for i in (1..members.len()).rev() {
        members.swap(i, rng.below(i + 1));
    }
    for (k, v) in members {
        m.insert(k.to_owned(), v);
    }
    Value::Object(m)
}

/// A frame: one message, now and then a batch, rarely any JSON value.
fn random_frame(rng: &mut Rng, with_ours: bool) -> Value {
    match rng.below(12) {
        0 => Value::Array(
            (0..rng.below(4))
                .map(|_| {
                    if rng.one_in(5) {
                        random_value(rng, 1)
                    } else {
                        random_message(rng, with_ours)
                    }
                })
                .collect(),
        ),
        1 => random_value(rng, 2),
        _ => random_message(rng, with_ours),
    }
}

/// Writes `v` as JSON with random whitespace and, now and then, needless `\u` escapes.
fn write_json(rng: &mut Rng, v: &Value, out: &mut String) {
    let ws = |rng: &mut Rng, out: &mut String| {
        if rng.one_in(4) {
            const SPACES: [&str; 6] = [" ", "  ", "\t", "\r", "\n", " \n "];
            let space = *rng.pick(&SPACES);
            out.push_str(space);
        }
    };
    match v {
        Value::String(s) => write_string(rng, s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                ws(rng, out);
                write_json(rng, item, out);
                ws(rng, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                ws(rng, out);
                write_string(rng, k, out);
                ws(rng, out);
                out.push(':');
                ws(rng, out);
                write_json(rng, item, out);
                ws(rng, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

fn write_string(rng: &mut Rng, s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if rng.one_in(24) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04X}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Breaks a frame the way a broken or hostile peer might.
fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>) {
    const TOKENS: &[&[u8]] = &[
        b"{",
        b"}",
        b"[",
        b"]",
        b"\"",
        b":",
        b",",
        b"\\",
        b"\\u",
        b"\\ud800",
        b"-",
        b"-0",
        b"0",
        b"01",
        b"1e9",
        b".5",
        b"null",
        b"true",
        b"\"id\":",
        b"\"result\":",
        b"\"error\":",
        b"\"jsonrpc\":\"2.0\",",
        b"\"id\":-0,",
        b"\"id\":1",
        b"\n",
        b"\r",
        b" ",
        b"\0",
        b"\xff",
        b"\xc3",
        b"\xe2\x82",
        b"99999999999999999999",
    ];
    for _ in 0..=rng.below(3) {
        let len = bytes.len();
        let at = if len == 0 { 0 } else { rng.below(len + 1) };
        match rng.below(6) {
            0 if len > 0 => bytes[rng.below(len)] = rng.next() as u8,
            1 => {
                let t = *rng.pick(TOKENS);
                bytes.splice(at..at, t.iter().copied());
            }
            2 if len > 0 => {
                let end = (at + 1 + rng.below(8)).min(len);
                bytes.drain(at.min(end)..end);
            }
            3 => bytes.truncate(at),
            4 if len > 0 => {
                let start = rng.below(len);
                let end = (start + 1 + rng.below(16)).min(len);
                let piece = bytes[start..end].to_vec();
                bytes.splice(at..at, piece);
            }
            _ => {
                let t = *rng.pick(TOKENS);
                bytes.extend_from_slice(t);
            }
        }
    }
}

/// Random bytes drawn mostly from JSON's own alphabet.
fn token_soup(rng: &mut Rng) -> Vec<u8> {
    const ALPHABET: &[u8] = b"{}[]\":,\\ -+.0123456789eEnulltruefasjdrpcmho\t\r\n\x00\xff\xc3";
    (0..rng.below(64))
        .map(|_| {
            if rng.one_in(16) {
                rng.next() as u8
            } else {
                *rng.pick(ALPHABET)
            }
        })
        .collect()
}

/// One input for the parse targets, and whether it is an unbroken generated frame.
fn parse_input(rng: &mut Rng) -> (Vec<u8>, bool) {
    match rng.below(8) {
        0 => (token_soup(rng), false),
        1..=3 => {
            let mut s = String::new();
            let frame = random_frame(rng, false);
            write_json(rng, &frame, &mut s);
            let mut b = s.into_bytes();
            mutate(rng, &mut b);
            (b, false)
        }
        _ => {
            let mut s = String::new();
            let frame = random_frame(rng, false);
            write_json(rng, &frame, &mut s);
            (s.into_bytes(), true)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The oracle: what a message is, read off a `serde_json::Value` by the documented rules.

#[derive(Debug, PartialEq)]
enum Expect {
    Invalid,
    Request(RequestId, String),
    Notification(String),
    Response(Option<RequestId>, Outcome),
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Result(Value),
    Rpc(i32, String, Option<Value>),
    /// Which rule was broken (the quoted text is not compared).
    Malformed(&'static str),
}

fn kind_of(m: &Malformed) -> &'static str {
    match m {
        Malformed::NoVersion => "no version",
        Malformed::WrongVersion(_) => "wrong version",
        Malformed::ResultAndError => "both",
        Malformed::NoOutcome => "neither",
        Malformed::HasMethod => "method",
        Malformed::BadError(_) => "bad error",
    }
}

/// `None` when the id cannot be read (nothing answers to it); `Some(None)` for a null one.
fn oracle_id(v: Option<&Value>) -> Option<Option<RequestId>> {
    match v {
        None | Some(Value::Null) => Some(None),
        Some(Value::String(s)) => Some(Some(RequestId::String(s.clone()))),
        Some(Value::Number(n)) => n.as_i64().map(|n| Some(RequestId::Number(n))),
        Some(_) => None,
    }
}

fn oracle(v: &Value) -> Expect {
    let Some(obj) = v.as_object() else {
        return Expect::Invalid;
    };
    let method = match obj.get("method") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => Some(m.clone()),
        Some(_) => return Expect::Invalid,
    };
    let version = match obj.get("jsonrpc") {
        None | Some(Value::Null) => Err("no version"),
        Some(Value::String(s)) if s == "2.0" => Ok(()),
        Some(_) => Err("wrong version"),
    };
    let result = obj.get("result");
    let error = obj.get("error").filter(|e| !e.is_null());
    if let (Some(method), None, None) = (&method, result, error) {
        if version.is_err() {
            return Expect::Invalid;
        }
        return match oracle_id(obj.get("id")) {
            None => Expect::Invalid,
            Some(None) => Expect::Notification(method.clone()),
            Some(Some(id)) => Expect::Request(id, method.clone()),
        };
    }
    let Some(id) = oracle_id(obj.get("id")) else {
        return Expect::Invalid;
    };
    let outcome = match (version, &method, result, error) {
        (Err(why), ..) => Outcome::Malformed(why),
        (Ok(()), Some(_), ..) => Outcome::Malformed("method"),
        (Ok(()), None, Some(_), Some(_)) => Outcome::Malformed("both"),
        (Ok(()), None, Some(r), None) => Outcome::Result(r.clone()),
        (Ok(()), None, None, Some(e)) => oracle_error(e),
        (Ok(()), None, None, None) => Outcome::Malformed("neither"),
    };
    if id.is_none() && error.is_none() {
        return match outcome {
            Outcome::Result(r) if result.is_some() => Expect::Response(None, Outcome::Result(r)),
            _ => Expect::Invalid,
        };
    }
    Expect::Response(id, outcome)
}

fn oracle_error(e: &Value) -> Outcome {
    let Some(obj) = e.as_object() else {
        return Outcome::Malformed("bad error");
    };
    let code = obj
        .get("code")
        .and_then(Value::as_i64)
        .and_then(|c| i32::try_from(c).ok());
    match (code, obj.get("message")) {
        (Some(code), Some(Value::String(m))) => {
            Outcome::Rpc(code, m.clone(), obj.get("data").cloned())
        }
        _ => Outcome::Malformed("bad error"),
    }
}

/// What `Inbound::parse` made of one message, in the oracle's terms.
fn observed(m: &Inbound) -> Expect {
    match m {
        Inbound::Invalid(_) => Expect::Invalid,
        Inbound::Request(r) => Expect::Request(r.id.clone(), r.method.clone()),
        Inbound::Notification(n) => Expect::Notification(n.method.clone()),
        Inbound::Response(InResponse { id, outcome }) => Expect::Response(
            id.clone(),
            match outcome {
                Ok(p) => Outcome::Result(
                    p.clone()
                        .parse::<Value>()
                        .expect("a parsed result re-reads"),
                ),
                Err(Fault::Rpc(e)) => Outcome::Rpc(e.code.0, e.message.clone(), e.data.clone()),
                Err(Fault::Malformed(m)) => Outcome::Malformed(kind_of(m)),
            },
        ),
    }
}

/// Whether `input` fails to be JSON only in ways serde_json does not check in the members it
/// skips or keeps raw (bad UTF-8, a lone surrogate or a broken `\u` escape in a string, a
/// number beyond `f64`): such a
/// frame may be read, with those members left alone (no string is ever made of them), and a
/// batch element holding one may be the one that is `Invalid`.
fn unchecked_when_skipped(input: &[u8], e: &serde_json::Error) -> bool {
    let why = e.to_string();
    std::str::from_utf8(input).is_err()
        || [
            "escape",
            "surrogate",
            "unicode code point",
            "number out of range",
        ]
        .iter()
        .any(|w| why.contains(w))
}

fn is_duplicate(e: &FrameError) -> bool {
    matches!(e, FrameError::Invalid(why) if why.contains("duplicate field"))
}

// ---------------------------------------------------------------------------------------------
// Targets.

/// `Inbound::parse`: agrees with the oracle on valid JSON, never panics, allocates linearly.
#[test]
fn fuzz_inbound_parse_agrees_with_serde_json() {
    let mut rng = Rng::new(seed());
    for n in 0..cases() {
        let (input, _) = parse_input(&mut rng);
        let case = Case {
            target: "Inbound::parse",
            n,
            input: &input,
        };
        let (parsed, bytes) = peak_bytes(|| Inbound::parse(&input));
        assert!(bytes <= allowed(input.len()), "{case}: held {bytes} bytes");
        let value = match serde_json::from_slice::<Value>(&input) {
            Ok(value) => value,
            Err(e) => {
                if !unchecked_when_skipped(&input, &e) {
                    assert!(
                        parsed.is_err(),
                        "{case}: not JSON, yet parsed as {parsed:?}"
                    );
                }
                continue;
            }
        };
        let expected: Vec<Expect> = match &value {
            Value::Array(items) => items.iter().map(oracle).collect(),
            other => vec![oracle(other)],
        };
        match parsed {
            Ok(msgs) => {
                assert_eq!(msgs.len(), expected.len(), "{case}: {msgs:?}");
                for (m, want) in msgs.iter().zip(&expected) {
                    // A batch element with a member twice is invalid (serde_json's `Value`
                    // keeps the last).
                    if matches!(m, Inbound::Invalid(e) if is_duplicate(e)) {
                        continue;
                    }
                    assert_eq!(&observed(m), want, "{case}");
                }
            }
            Err(e) if is_duplicate(&e) => {}
            Err(e) => {
                assert!(
                    !value.is_array() && expected == [Expect::Invalid],
                    "{case}: {e}, expected {expected:?}"
                );
            }
        }
    }
}

/// The peeks: a peeked id is the full parse's id, and a peeked line's result is the full
/// parse's result; a plain response is always peeked; a prefix never names another id.
#[test]
fn fuzz_response_id_peeks_agree_with_the_full_parse() {
    let mut rng = Rng::new(seed() ^ 0x9E37_79B9);
    let mut peeked = 0u64;
    for n in 0..cases() {
        let (input, unbroken) = parse_input(&mut rng);
        check_peeks(&input, unbroken, n, &mut peeked);
    }
    // Plain responses, as SDKs write them: the peek must find them all.
    for n in 0..cases() / 4 {
        let id = match rng.below(3) {
            0 => json!(rng.next() as i64),
            1 => json!(rng.below(1000)),
            _ => json!((0..rng.below(6))
                .map(|_| *rng.pick(&["a", "Z", "0", "-", " ", "é", "😀"]))
                .collect::<String>()),
        };
        let mut members = [
            ("jsonrpc", json!("2.0")),
            ("id", id.clone()),
            ("result", random_value(&mut rng, 3)),
        ];
        for i in (1..members.len()).rev() {
            members.swap(i, rng.below(i + 1));
        }
        let mut s = String::from("{");
        for (i, (k, v)) in members.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            let _ = write!(s, "\"{k}\":");
            if *k != "result" {
                s.push_str(&v.to_string());
            } else {
                write_json(&mut rng, v, &mut s);
            }
        }
        s.push('}');
        let case = Case {
            target: "peek_response_id (plain)",
            n,
            input: s.as_bytes(),
        };
        let want = match &id {
            Value::String(s) => RequestId::String(s.clone()),
            n => RequestId::Number(n.as_i64().unwrap()),
        };
        assert_eq!(peek_response_id(s.as_bytes()), Some(want), "{case}");
        check_peeks(s.as_bytes(), true, n, &mut peeked);
    }
    assert!(peeked > cases() / 10, "only {peeked} inputs were peeked");
}

fn check_peeks(input: &[u8], unbroken: bool, n: u64, peeked: &mut u64) {
    let case = Case {
        target: "peek_response_id",
        n,
        input,
    };
    let (peek, bytes) = peak_bytes(|| peek_response_id(input));
    assert!(bytes <= input.len() + 256, "{case}: held {bytes} bytes");
    let (prefix_peek, _) = peak_bytes(|| peek_id_prefix(input));
    let full = Inbound::parse(input);
    let strict = serde_json::from_slice::<Value>(input);
    let valid_json = strict.is_ok();
    let lenient = strict
        .as_ref()
        .err()
        .is_some_and(|e| unchecked_when_skipped(input, e));
    let full_id = match &full {
        Ok(msgs) => match msgs.as_slice() {
            [Inbound::Response(r)] => r.id.clone(),
            _ => None,
        },
        Err(_) => None,
    };
    if let Some(id) = &peek {
        *peeked += 1;
        let line = Payload::Line(input.to_vec());
        let (from_line, bytes) = peak_bytes(|| line.parse::<Value>());
        assert!(bytes <= allowed(input.len()), "{case}: held {bytes} bytes");
        if !valid_json {
            // As for `Inbound::parse`, what serde_json skips unchecked is not looked at.
            if !lenient {
                assert!(from_line.is_err(), "{case}: a broken line parsed");
            }
        } else {
            match &full {
                Ok(msgs) => {
                    assert_eq!(full_id.as_ref(), Some(id), "{case}: the peek disagrees");
                    let [Inbound::Response(r)] = msgs.as_slice() else {
                        unreachable!("checked above")
                    };
                    match &r.outcome {
                        Ok(raw) => assert_eq!(
                            from_line.as_ref().ok(),
                            Some(&raw.clone().parse::<Value>().unwrap()),
                            "{case}"
                        ),
                        Err(_) => assert!(from_line.is_err(), "{case}: {from_line:?}"),
                    }
                }
                Err(e) => assert!(is_duplicate(e), "{case}: peeked {id:?}, but {e}"),
            }
        }
    }
    // The prefix peek names the full parse's id, or nothing; so does every prefix of it.
    if let Some(id) = &prefix_peek {
        if valid_json && full.is_ok() {
            assert_eq!(
                full_id.as_ref(),
                Some(id),
                "{case}: the prefix peek disagrees"
            );
        }
    }
    if unbroken {
        if let Some(id) = &full_id {
            for cut in 0..input.len().min(300) {
                if let Some(got) = peek_id_prefix(&input[..cut]) {
                    assert_eq!(&got, id, "{case}: the prefix of {cut} bytes names {got:?}");
                }
            }
        }
    }
}

/// `header_pair`: never panics, accepts exactly what the `http` crate accepts, and never
/// quotes a value in its error.
#[test]
fn fuzz_configured_header_pairs() {
    use crate::config::header_pair;
    let mut rng = Rng::new(seed() ^ 0x4EAD);
    for n in 0..cases() {
        let mut piece = || -> String {
            const PIECES: &[&str] = &[
                "x",
                "Authorization",
                "-",
                "_",
                " ",
                ":",
                "\r",
                "\n",
                "\0",
                "\t",
                "é",
                "\u{7f}",
                "Bearer",
                "tok",
                "=",
                "\"",
                "(",
                "😀",
            ];
            (0..rng.below(6)).map(|_| *rng.pick(PIECES)).collect()
        };
        let name = piece();
        let value = format!("{}SECRET{}", piece(), piece());
        let shown = format!("{name:?}: {value:?}");
        let case = Case {
            target: "header_pair",
            n,
            input: shown.as_bytes(),
        };
        let got = header_pair(&name, &value);
        let want_ok = ureq::http::HeaderName::from_bytes(name.as_bytes()).is_ok()
            && ureq::http::HeaderValue::from_str(&value).is_ok();
        assert_eq!(got.is_ok(), want_ok, "{case}");
        match got {
            Ok((k, v)) => {
                assert_eq!(k.as_str(), name.to_ascii_lowercase(), "{case}");
                assert_eq!(v.as_bytes(), value.as_bytes(), "{case}");
            }
            Err(e) => {
                let shown = format!("{e} {e:?}");
                assert!(!shown.contains("SECRET"), "{case}: {shown}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The routing path: a client calling a scripted in-process server that answers with random and
// broken frames, then (usually) with a proper answer.

static WORKER_PANICS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Counts panics on the client's own threads (`mcp-…`), which would otherwise only print.
fn watch_worker_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with("mcp-"))
            {
                WORKER_PANICS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            previous(info);
        }));
    });
}

/// Puts the request's real id where a generated frame says [`OURS`].
fn with_ours(v: Value, id: &Value) -> Value {
    match v {
        Value::String(s) if s == OURS => id.clone(),
        Value::String(s) if s == OURS_AS_STRING => json!(id.to_string()),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| with_ours(v, id)).collect()),
        Value::Object(m) => {
            Value::Object(m.into_iter().map(|(k, v)| (k, with_ours(v, id))).collect())
        }
        other => other,
    }
}

/// How a call should end.
#[derive(Debug, PartialEq)]
enum Ends {
    Text(String),
    Malformed,
    Rpc(i32),
    Timeout,
}

/// Reads the frames in order as the session does: the first response with our id, or the
/// first error without an id (ours is the only pending request), decides; else the final
/// answer, when there is one; else the timeout.
fn predict(frames: &[Value], ours: i64, final_text: Option<&str>) -> Ends {
    let elements = frames.iter().flat_map(|f| match f {
        Value::Array(items) => items.iter().collect::<Vec<_>>(),
        one => vec![one],
    });
    for element in elements {
        let Expect::Response(id, outcome) = oracle(element) else {
            continue;
        };
        let claims = match &id {
            Some(RequestId::Number(n)) => *n == ours,
            Some(RequestId::String(s)) => s.parse::<i64>() == Ok(ours),
            None => !matches!(outcome, Outcome::Result(_)),
        };
        if !claims {
            continue;
        }
        return match outcome {
            Outcome::Result(v) => match serde_json::from_value::<crate::model::CallToolResult>(v) {
                Ok(r) => Ends::Text(r.text()),
                Err(_) => Ends::Malformed,
            },
            Outcome::Rpc(code, ..) => Ends::Rpc(code),
            Outcome::Malformed(_) => Ends::Malformed,
        };
    }
    final_text.map_or(Ends::Timeout, |t| Ends::Text(t.to_owned()))
}

#[test]
fn fuzz_routing_every_call_ends_as_predicted_and_in_time() {
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use crate::config::ServerConfig;
    use crate::error::Error;
    use crate::testing::TestServer;
    use crate::CallOptions;

    watch_worker_panics();
    let script: Arc<Mutex<Vec<Value>>> = Arc::default();
    let frames = Arc::clone(&script);
    let last_call: Arc<Mutex<Option<i64>>> = Arc::default();
    let seen_call = Arc::clone(&last_call);
    let server = TestServer::from_fn("fuzz", move |m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![json!({"jsonrpc": "2.0", "id": m["id"], "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "fuzz", "version": "1"}}})],
        Some("tools/call") => {
            *seen_call.lock().unwrap() = m["id"].as_i64();
            frames
                .lock()
                .unwrap()
                .iter()
                .map(|f| with_ours(f.clone(), &m["id"]))
                .collect()
        }
        Some("ping") => vec![json!({"jsonrpc": "2.0", "id": m["id"], "result": {}})],
        _ => vec![],
    });
    let client = server
        .client_builder_for(ServerConfig::stdio("fuzz", "unused").with_timeout_secs(5.0))
        .build();
    client.open().unwrap();
    let mut rng = Rng::new(seed() ^ 0xC0DE);
    let mut ends = std::collections::BTreeMap::<String, u64>::new();
    for n in 0..(cases() / 5).max(1) {
        let mut frames: Vec<Value> = (0..rng.below(4))
            .map(|_| random_frame(&mut rng, true))
            .collect();
        let final_text = (!rng.one_in(25)).then(|| format!("final {n}"));
        if let Some(text) = &final_text {
            frames.push(json!({"jsonrpc": "2.0", "id": OURS,
                "result": {"content": [{"type": "text", "text": text}]}}));
        }
        *script.lock().unwrap() = frames.clone();
        let timeout = if final_text.is_some() {
            Duration::from_secs(5)
        } else {
            Duration::from_millis(20)
        };
        let mut opts = CallOptions::new().timeout(timeout);
        if rng.one_in(3) {
            opts = opts.on_progress(|_| {});
        }
        let start = Instant::now();
        let got = client.call_tool_with("t", json!({}), &opts);
        let took = start.elapsed();
        let ours = last_call
            .lock()
            .unwrap()
            .take()
            .expect("the call reached the server");
        let frames: Vec<Value> = frames
            .into_iter()
            .map(|f| with_ours(f, &json!(ours)))
            .collect();
        let case = format!(
            "routing case {n} (MCP_FUZZ_SEED={}): frames {}",
            seed(),
            serde_json::to_string(&frames).unwrap()
        );
        assert!(
            took < timeout + Duration::from_secs(2),
            "{case}: took {took:?}"
        );
        let want = predict(&frames, ours, final_text.as_deref());
        let ended = match &got {
            Ok(r) => Ends::Text(r.text()),
            Err(Error::Protocol { server, .. }) if server == "fuzz" => Ends::Malformed,
            Err(Error::Rpc { server, code, .. }) if server == "fuzz" => Ends::Rpc(code.0),
            Err(Error::Timeout { server, .. }) if server == "fuzz" => Ends::Timeout,
            Err(e) => panic!("{case}: an unexpected error {e:?}"),
        };
        assert_eq!(ended, want, "{case}: {got:?}");
        let label = match &ended {
            Ends::Text(t) if t.starts_with("final") => "answered by the final response",
            Ends::Text(_) => "answered by a random response",
            Ends::Malformed => "failed as malformed",
            Ends::Rpc(_) => "failed with a JSON-RPC error",
            Ends::Timeout => "timed out",
        };
        *ends.entry(label.to_owned()).or_default() += 1;
        if n % 50 == 49 {
            client
                .ping()
                .unwrap_or_else(|e| panic!("{case}: ping after: {e}"));
        }
    }
    client.close().unwrap();
    assert_eq!(
        WORKER_PANICS.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "a client thread panicked"
    );
    // Every kind of ending was reached (the generator is not lopsided).
    assert!(ends.len() >= 4 || cases() < 500, "{ends:?}");
}
