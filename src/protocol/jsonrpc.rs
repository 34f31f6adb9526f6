//! JSON-RPC 2.0 framing types: ids, requests, notifications, responses, error codes.
//!
//! Inbound messages keep their `params` / `result` as raw JSON ([`RawValue`]) so that the I/O
//! side only reads the envelope and a caller deserialises its own result once, on its own thread.

use std::fmt;

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::in_place;

/// A JSON-RPC request id: an integer or a string, never null.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum RequestId {
    /// An integer id (what this client sends).
    Number(i64),
    /// A string id (some servers use these for their own requests).
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

/// A JSON-RPC error code, open-ended, with the standard and MCP codes as constants.
///
/// It is the type of every code in this crate ([`Error::Rpc`](crate::Error::Rpc),
/// [`HandlerError`](crate::handler::HandlerError)); it serialises and displays as the bare number.
///
/// ```
/// use mcp_blocking::error::ErrorCode;
/// assert_eq!(ErrorCode::METHOD_NOT_FOUND, ErrorCode(-32601));
/// assert_eq!(ErrorCode::INVALID_PARAMS.to_string(), "-32602");
/// assert_eq!(serde_json::to_string(&ErrorCode(-32000)).unwrap(), "-32000");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// Invalid method parameters.
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// MCP: resource not found (2025-11-25 and earlier).
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// MCP: URL elicitation required (2025-11-25).
    pub const URL_ELICITATION_REQUIRED: ErrorCode = ErrorCode(-32042);
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// The `error` member of a JSON-RPC error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RpcError {
    pub(crate) code: ErrorCode,
    #[serde(default)]
    pub(crate) message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) data: Option<Value>,
}

/// A request that arrived from the server.
#[derive(Debug)]
pub(crate) struct InRequest {
    pub(crate) id: RequestId,
    pub(crate) method: String,
    pub(crate) params: Option<Box<RawValue>>,
}

/// A notification that arrived from the server.
#[derive(Debug)]
pub(crate) struct InNotification {
    pub(crate) method: String,
    pub(crate) params: Option<Box<RawValue>>,
}

/// A response that arrived from the server.
#[derive(Debug)]
pub(crate) struct InResponse {
    /// The request it answers; `None` when its `id` is `null` or missing (a server that could
    /// not read a request answers so).
    pub(crate) id: Option<RequestId>,
    pub(crate) outcome: Result<Payload, Fault>,
}

/// Why a response is not a result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Fault {
    /// The server's JSON-RPC error.
    Rpc(RpcError),
    /// The response breaks JSON-RPC 2.0; what was wrong (see [`Malformed`]).
    Malformed(Malformed),
}

/// How a response to an identifiable request breaks JSON-RPC 2.0. Its `Display` is the detail
/// an [`Error::Protocol`](crate::Error::Protocol) quotes; it echoes at most [`SHOWN`] bytes of
/// what the server sent, and only printable ASCII.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Malformed {
    /// No `jsonrpc` member (or `null`).
    NoVersion,
    /// A `jsonrpc` member other than `"2.0"`: its raw JSON when short and plain enough to show.
    WrongVersion(Option<String>),
    /// Both `result` and a non-null `error`.
    ResultAndError,
    /// Neither `result` nor a non-null `error`.
    NoOutcome,
    /// A response that also has a `method`.
    HasMethod,
    /// An `error` member that is not `{"code": integer, "message": string, "data"?: any}`.
    BadError(&'static str),
}

/// The longest piece of a malformed response quoted in its error.
pub(crate) const SHOWN: usize = 16;

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Malformed::NoVersion => f.write_str("the response has no `\"jsonrpc\": \"2.0\"`"),
            Malformed::WrongVersion(Some(v)) => {
                write!(f, "the response has `\"jsonrpc\": {v}`, not \"2.0\"")
            }
            Malformed::WrongVersion(None) => {
                f.write_str("the response has a `jsonrpc` member that is not \"2.0\"")
            }
            Malformed::ResultAndError => f.write_str("the response has both `result` and `error`"),
            Malformed::NoOutcome => f.write_str("the response has neither `result` nor `error`"),
            Malformed::HasMethod => {
                f.write_str("the response has a `method` besides its `result` or `error`")
            }
            Malformed::BadError(why) => write!(f, "the response's `error` {why}"),
        }
    }
}

/// Checks a response's `jsonrpc` member (raw JSON; `None` when missing or null).
fn check_version(raw: Option<&RawValue>) -> Result<(), Malformed> {
    let Some(raw) = raw else {
        return Err(Malformed::NoVersion);
    };
    let raw = raw.get();
    if raw == "\"2.0\""
        || serde_json::from_str::<std::borrow::Cow<'_, str>>(raw).is_ok_and(|v| v == "2.0")
    {
        return Ok(());
    }
    let shown = raw.len() <= SHOWN && raw.bytes().all(|b| (b' '..=b'~').contains(&b));
    Err(Malformed::WrongVersion(shown.then(|| raw.to_owned())))
}

/// Reads an `error` member strictly: an object with an integer `code` (32 bits, as
/// [`ErrorCode`]) and a string `message`; `data` may be anything.
fn strict_error(raw: &RawValue) -> Result<RpcError, Malformed> {
    let Ok(Value::Object(mut obj)) = serde_json::from_str::<Value>(raw.get()) else {
        return Err(Malformed::BadError("is not an object"));
    };
    let code = match obj.get("code") {
        None => return Err(Malformed::BadError("has no `code`")),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(c) => i32::try_from(c)
                .map_err(|_| Malformed::BadError("has a `code` out of the 32-bit range"))?,
            None if n.is_u64() => {
                return Err(Malformed::BadError("has a `code` out of the 32-bit range"))
            }
            None => return Err(Malformed::BadError("has a `code` that is not an integer")),
        },
        Some(_) => return Err(Malformed::BadError("has a `code` that is not an integer")),
    };
    let message = match obj.remove("message") {
        Some(Value::String(m)) => m,
        None => return Err(Malformed::BadError("has no `message`")),
        Some(_) => return Err(Malformed::BadError("has a `message` that is not a string")),
    };
    Ok(RpcError {
        code: ErrorCode(code),
        message,
        data: obj.remove("data"),
    })
}

/// The `result` of a response, parsed by the caller that waits for it (on its own thread, once).
#[derive(Debug, Clone)]
pub(crate) enum Payload {
    /// The result alone, as raw JSON.
    Raw(Box<RawValue>),
    /// A whole response line whose envelope was only peeked at (see [`peek_response_id`]): the
    /// result is parsed straight out of it, so a large result is scanned once, not twice. The
    /// rest of the envelope is checked in the same pass, by the same rules as [`Inbound::parse`].
    Line(Vec<u8>),
}

impl Payload {
    /// Deserialises the result. For a [`Payload::Line`], an envelope that breaks JSON-RPC 2.0
    /// (see [`Malformed`]) is an error too, whose message is the [`Malformed`] text. A large
    /// line that is mostly one string is parsed in place (see `in_place.rs`): the string
    /// becomes the result's without a second copy of the message.
    pub(crate) fn parse<T: serde::de::DeserializeOwned>(self) -> Result<T, serde_json::Error> {
        match self {
            Payload::Raw(raw) => serde_json::from_str(raw.get()),
            Payload::Line(line) if line.len() >= in_place::MIN_LINE => {
                match in_place::split(line) {
                    in_place::Outcome::Whole(line) => parse_line(&line),
                    in_place::Outcome::Invalid(what) => Err(serde::de::Error::custom(what)),
                    in_place::Outcome::Split(split) => {
                        let mut result: Value = parse_line(&split.skeleton)?;
                        let mut big = Some(split.big);
                        in_place::put_back(&mut result, &mut big);
                        serde_json::from_value(result)
                    }
                }
            }
            Payload::Line(line) => parse_line(&line),
        }
    }
}

/// The result of a whole response line, its envelope checked in the same pass.
fn parse_line<T: serde::de::DeserializeOwned>(line: &[u8]) -> Result<T, serde_json::Error> {
    // Unknown members are skipped; the known ones are read (or skipped, for the ones only
    // checked) in the same single pass as the result. Naming `id` makes a second `id` an error,
    // as it is for `Inbound::parse`.
    #[derive(Deserialize)]
    struct Env<'a, T> {
        #[serde(default, borrow)]
        jsonrpc: Option<&'a RawValue>,
        #[serde(default, rename = "id")]
        _id: Option<IgnoredAny>,
        #[serde(default)]
        method: Option<IgnoredAny>,
        #[serde(default)]
        error: Option<IgnoredAny>,
        result: T,
    }
    let env: Env<'_, T> = serde_json::from_slice(line)?;
    let checked = check_version(env.jsonrpc).and_then(|()| {
        if env.method.is_some() {
            Err(Malformed::HasMethod)
        } else if env.error.is_some() {
            Err(Malformed::ResultAndError)
        } else {
            Ok(())
        }
    });
    match checked {
        Ok(()) => Ok(env.result),
        Err(m) => Err(serde::de::Error::custom(m)),
    }
}

/// One inbound JSON-RPC message.
#[derive(Debug)]
pub(crate) enum Inbound {
    Request(InRequest),
    Notification(InNotification),
    Response(InResponse),
    /// An element of a batch that is not a usable message (a whole frame that is not one is an
    /// `Err` of [`Inbound::parse`] instead).
    Invalid(FrameError),
}

/// The members of a message, each kept raw until its kind is known. `null` reads as absent,
/// except for `result` (a `null` result is a result).
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<Value>,
    #[serde(default)]
    params: Option<Box<RawValue>>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Box<RawValue>>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
}

/// A member that is there, even as `null`.
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// Why an inbound frame was not a usable JSON-RPC message.
#[derive(Debug)]
pub(crate) enum FrameError {
    /// Not JSON at all (a stray log line, say).
    NotJson(serde_json::Error),
    /// JSON, but not a JSON-RPC 2.0 message.
    Invalid(std::borrow::Cow<'static, str>),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::NotJson(e) => write!(f, "not JSON: {e}"),
            FrameError::Invalid(why) => write!(f, "not a JSON-RPC 2.0 message: {why}"),
        }
    }
}

/// A JSON `id` as a [`RequestId`]: `Ok(None)` for `null`, `Err` for what cannot be one (a
/// fraction, an integer beyond 64 bits, a boolean, an array or an object).
fn request_id(v: Option<Value>) -> Result<Option<RequestId>, FrameError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(RequestId::String(s))),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(n) => Ok(Some(RequestId::Number(n))),
            None => Err(FrameError::Invalid(
                "its `id` is a number but not a 64-bit integer".into(),
            )),
        },
        Some(_) => Err(FrameError::Invalid(
            "its `id` is neither a string nor an integer".into(),
        )),
    }
}

impl Inbound {
    /// Parses one frame (a line on stdio, an SSE `data`, a WebSocket text frame).
    ///
    /// A response whose `id` can be read is always a [`Inbound::Response`], even when the rest
    /// of it breaks JSON-RPC 2.0 (then its outcome is a [`Fault::Malformed`]): its caller can be
    /// failed at once instead of waiting for its timeout. A batch (an array, 2025-03-26) gives
    /// one message per element, an unusable element becoming [`Inbound::Invalid`].
    pub(crate) fn parse(bytes: &[u8]) -> Result<Vec<Inbound>, FrameError> {
        let bytes = trim_ascii(bytes);
        if bytes.first() == Some(&b'[') {
            // 2025-03-26 batches: tolerate them.
            let items: Vec<&RawValue> =
                serde_json::from_slice(bytes).map_err(FrameError::NotJson)?;
            return Ok(items
                .iter()
                .map(|raw| Self::parse_one(raw.get().as_bytes()).unwrap_or_else(Inbound::Invalid))
                .collect());
        }
        Self::parse_one(bytes).map(|m| vec![m])
    }

    fn parse_one(bytes: &[u8]) -> Result<Inbound, FrameError> {
        if bytes.first() != Some(&b'{') {
            return Err(match serde_json::from_slice::<IgnoredAny>(bytes) {
                Err(e) => FrameError::NotJson(e),
                Ok(_) => FrameError::Invalid("not an object".into()),
            });
        }
        let env: Envelope<'_> = serde_json::from_slice(bytes).map_err(|e| {
            if e.is_data() {
                // A member that appears twice.
                FrameError::Invalid(e.to_string().into())
            } else {
                FrameError::NotJson(e)
            }
        })?;
        let method = match env.method {
            None | Some(Value::Null) => None,
            Some(Value::String(m)) => Some(m),
            Some(_) => return Err(FrameError::Invalid("its `method` is not a string".into())),
        };
        let error = env.error.filter(|e| e.get() != "null");
        if env.result.is_none() && error.is_none() {
            if let Some(method) = method {
                if check_version(env.jsonrpc).is_err() {
                    return Err(FrameError::Invalid(
                        "missing or wrong \"jsonrpc\": \"2.0\"".into(),
                    ));
                }
                return Ok(match request_id(env.id)? {
                    Some(id) => Inbound::Request(InRequest {
                        id,
                        method,
                        params: env.params,
                    }),
                    None => Inbound::Notification(InNotification {
                        method,
                        params: env.params,
                    }),
                });
            }
        }
        // A response (or an id alone: a response with neither result nor error).
        let id = request_id(env.id)?;
        if id.is_none() && env.result.is_none() && error.is_none() {
            return Err(FrameError::Invalid(
                "neither method, result nor error".into(),
            ));
        }
        let checked = check_version(env.jsonrpc).and(match method {
            Some(_) => Err(Malformed::HasMethod),
            None => Ok(()),
        });
        let outcome = match (checked, env.result, error) {
            (Err(m), _, _) => Err(Fault::Malformed(m)),
            (Ok(()), Some(_), Some(_)) => Err(Fault::Malformed(Malformed::ResultAndError)),
            (Ok(()), Some(result), None) => Ok(Payload::Raw(result)),
            (Ok(()), None, Some(error)) => {
                Err(strict_error(error).map_or_else(Fault::Malformed, Fault::Rpc))
            }
            (Ok(()), None, None) => Err(Fault::Malformed(Malformed::NoOutcome)),
        };
        // Without an id, only an error response is one (see `Session::route`): a broken
        // result without an id answers nothing we could name.
        if let (None, None, Err(Fault::Malformed(m))) = (&id, error, &outcome) {
            return Err(FrameError::Invalid(
                format!("a result without an id: {m}").into(),
            ));
        }
        Ok(Inbound::Response(InResponse { id, outcome }))
    }
}

/// Finds the id of a plain successful response (`{"jsonrpc", "id", "result"}` in any order)
/// without parsing its result: keys are read, values skipped. Returns `None` for anything else
/// (requests, notifications, errors, odd keys), which then gets a full parse.
pub(crate) fn peek_response_id(bytes: &[u8]) -> Option<RequestId> {
    let mut p = Peek { b: bytes, i: 0 };
    p.ws();
    p.eat(b'{')?;
    let (mut id, mut has_result) = (None, false);
    loop {
        p.ws();
        let key = p.simple_string()?;
        p.ws();
        p.eat(b':')?;
        p.ws();
        match key {
            b"id" => id = Some(p.id()?),
            b"result" => {
                has_result = true;
                if id.is_some() {
                    // The id came first, as the SDKs write it: no need to scan the result here,
                    // the caller's parse checks the rest.
                    return id;
                }
                p.skip_value()?;
            }
            b"jsonrpc" => {
                if p.simple_string()? != b"2.0" {
                    return None;
                }
            }
            _ => return None,
        }
        p.ws();
        match p.next()? {
            b',' => continue,
            b'}' => break,
            _ => return None,
        }
    }
    if has_result {
        id
    } else {
        None
    }
}

/// The id of a response from the first bytes of its line (`id` must come before `result` or
/// `error`, as the SDKs write it): used to fail the right caller when a response is too large to
/// take in. `None` unless the prefix shows the whole id and then the `result` or `error` key, so
/// neither a server's request nor an id cut short names a request of ours.
pub(crate) fn peek_id_prefix(bytes: &[u8]) -> Option<RequestId> {
    let mut p = Peek { b: bytes, i: 0 };
    p.ws();
    p.eat(b'{')?;
    let mut id = None;
    loop {
        p.ws();
        let key = p.simple_string()?;
        if key == b"result" {
            return id;
        }
        p.ws();
        p.eat(b':')?;
        p.ws();
        match key {
            // An `"error": null` is no error: the message may yet be a request.
            b"error" => return id.filter(|_| p.b.get(p.i) == Some(&b'{')),
            b"id" if id.is_none() => id = Some(p.id()?),
            b"jsonrpc" => {
                p.simple_string()?;
            }
            _ => return None,
        }
        p.ws();
        p.eat(b',')?;
    }
}

struct Peek<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Peek<'a> {
    fn next(&mut self) -> Option<u8> {
        let c = *self.b.get(self.i)?;
        self.i += 1;
        Some(c)
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    fn ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// A string without escapes (keys, "2.0", string ids).
    fn simple_string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.i;
        let len = self.b[start..]
            .iter()
            .position(|&c| c == b'"' || c == b'\\')?;
        if self.b[start + len] != b'"' {
            return None;
        }
        self.i = start + len + 1;
        Some(&self.b[start..start + len])
    }

    fn id(&mut self) -> Option<RequestId> {
        if self.b.get(self.i) == Some(&b'"') {
            let s = std::str::from_utf8(self.simple_string()?).ok()?;
            return Some(RequestId::String(s.to_owned()));
        }
        // An integer as JSON writes one: `-?(0|[1-9][0-9]*)`, and not `-0` (which serde_json
        // reads as a float, so no full parse would take it as an id).
        let start = self.i;
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let digits = self.i;
        while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        match &self.b[digits..self.i] {
            [] => return None,
            [b'0'] if digits > start => return None,
            [b'0', _, ..] => return None,
            _ => {}
        }
        let n = std::str::from_utf8(&self.b[start..self.i])
            .ok()?
            .parse()
            .ok()?;
        Some(RequestId::Number(n))
    }

    /// Skips any JSON value; strings are skipped eight bytes at a time.
    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            self.ws();
            match *self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    self.skip_string_body()?;
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.i += 1;
                }
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    self.i += 1;
                }
                b',' | b':' if depth > 0 => self.i += 1,
                _ => {
                    // number, true, false, null
                    let len = self.b[self.i..]
                        .iter()
                        .position(|c| {
                            matches!(c, b',' | b'}' | b']' | b':' | b' ' | b'\t' | b'\n' | b'\r')
                        })
                        .unwrap_or(self.b.len() - self.i);
                    if len == 0 {
                        return None;
                    }
                    self.i += len;
                }
            }
            if depth == 0 {
                return Some(());
            }
        }
    }

    /// After an opening quote: moves past the closing one.
    fn skip_string_body(&mut self) -> Option<()> {
        const LO: u64 = 0x0101_0101_0101_0101;
        const HI: u64 = 0x8080_8080_8080_8080;
        const QUOTE: u64 = LO * b'"' as u64;
        const BACKSLASH: u64 = LO * b'\\' as u64;
        loop {
            // Fast: whole words with neither a quote nor a backslash.
            while let Some(chunk) = self.b.get(self.i..self.i + 8) {
                let mut word = [0u8; 8];
                word.copy_from_slice(chunk);
                let w = u64::from_le_bytes(word);
                let (q, bs) = (w ^ QUOTE, w ^ BACKSLASH);
                let found = (q.wrapping_sub(LO) & !q) | (bs.wrapping_sub(LO) & !bs);
                if found & HI != 0 {
                    break;
                }
                self.i += 8;
            }
            match self.next()? {
                b'"' => return Some(()),
                b'\\' => {
                    self.next()?;
                }
                _ => {}
            }
        }
    }
}

fn trim_ascii(mut b: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = b {
        if first.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    while let [rest @ .., last] = b {
        if last.is_ascii_whitespace() {
            b = rest;
        } else {
            break;
        }
    }
    b
}

/// Serialises an outbound request.
pub(crate) fn encode_request(id: &RequestId, method: &str, params: Option<&Value>) -> Vec<u8> {
    #[derive(Serialize)]
    struct Req<'a> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a Value>,
    }
    serde_json::to_vec(&Req {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
    .expect("serialising JSON values cannot fail")
}

/// Serialises an outbound notification.
pub(crate) fn encode_notification(method: &str, params: Option<&Value>) -> Vec<u8> {
    #[derive(Serialize)]
    struct Note<'a> {
        jsonrpc: &'static str,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a Value>,
    }
    serde_json::to_vec(&Note {
        jsonrpc: "2.0",
        method,
        params,
    })
    .expect("serialising JSON values cannot fail")
}

/// Serialises an outbound response (to a server's request).
pub(crate) fn encode_response(id: &RequestId, outcome: &Result<Value, RpcError>) -> Vec<u8> {
    #[derive(Serialize)]
    struct Resp<'a> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<&'a Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<&'a RpcError>,
    }
    let (result, error) = match outcome {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e)),
    };
    serde_json::to_vec(&Resp {
        jsonrpc: "2.0",
        id,
        result,
        error,
    })
    .expect("serialising JSON values cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_kinds() {
        let m = Inbound::parse(br#"{"jsonrpc":"2.0","id":7,"result":{"a":1}}"#).unwrap();
        match &m[0] {
            Inbound::Response(r) => {
                assert_eq!(r.id, Some(RequestId::Number(7)));
                let v: Value = r.outcome.as_ref().unwrap().clone().parse().unwrap();
                assert_eq!(v, serde_json::json!({"a": 1}));
            }
            other => panic!("{other:?}"),
        }
        let m = Inbound::parse(br#"{"jsonrpc":"2.0","id":"s1","method":"ping"}"#).unwrap();
        assert!(
            matches!(&m[0], Inbound::Request(r) if r.id == RequestId::String("s1".into()) && r.method == "ping")
        );
        let m = Inbound::parse(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\r",
        )
        .unwrap();
        assert!(matches!(&m[0], Inbound::Notification(n) if n.method == "notifications/message"));
        let m =
            Inbound::parse(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}"#)
                .unwrap();
        assert!(
            matches!(&m[0], Inbound::Response(InResponse { outcome: Err(Fault::Rpc(e)), .. }) if e.code == ErrorCode::METHOD_NOT_FOUND)
        );
    }

    #[test]
    fn null_result_is_kept_as_null() {
        let m = Inbound::parse(br#"{"jsonrpc":"2.0","id":1,"result":null}"#).unwrap();
        assert!(
            matches!(&m[0], Inbound::Response(InResponse { outcome: Ok(Payload::Raw(v)), .. }) if v.get() == "null")
        );
    }

    #[test]
    fn rejects_non_json_and_what_has_no_readable_id() {
        assert!(matches!(
            Inbound::parse(b"hello world"),
            Err(FrameError::NotJson(_))
        ));
        for frame in [
            r#"{"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":null}"#,
            r#"{"jsonrpc":"1.0","method":"ping","id":1}"#,
            r#"{"method":"notifications/message"}"#,
            r#"{"jsonrpc":"2.0","method":5}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":true,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":null,"result":{}}"#,
            r#"{"jsonrpc":"2.0","method":"x","result":{}}"#,
            "5",
            "null",
            r#""a string""#,
        ] {
            assert!(
                matches!(
                    Inbound::parse(frame.as_bytes()),
                    Err(FrameError::Invalid(_))
                ),
                "{frame}: {:?}",
                Inbound::parse(frame.as_bytes())
            );
        }
    }

    /// The outcome of a one-message frame that must be a response.
    fn outcome(frame: &str) -> (Option<RequestId>, Result<Value, Fault>) {
        let mut m = Inbound::parse(frame.as_bytes()).expect(frame);
        assert_eq!(m.len(), 1, "{frame}");
        match m.pop() {
            Some(Inbound::Response(r)) => (r.id, r.outcome.map(|p| p.parse().unwrap())),
            other => panic!("{frame}: {other:?}"),
        }
    }

    fn malformed(frame: &str) -> Malformed {
        match outcome(frame) {
            (Some(RequestId::Number(1)), Err(Fault::Malformed(m))) => m,
            other => panic!("{frame}: {other:?}"),
        }
    }

    #[test]
    fn a_malformed_response_with_a_readable_id_is_a_response_with_a_fault() {
        assert_eq!(
            malformed(r#"{"jsonrpc":"1.0","id":1,"result":{}}"#),
            Malformed::WrongVersion(Some("\"1.0\"".into()))
        );
        assert_eq!(
            malformed(r#"{"jsonrpc":2.0,"id":1,"result":{}}"#),
            Malformed::WrongVersion(Some("2.0".into()))
        );
        assert_eq!(
            malformed(&format!(
                r#"{{"jsonrpc":"{}","id":1,"result":{{}}}}"#,
                "x".repeat(100)
            )),
            Malformed::WrongVersion(None)
        );
        assert_eq!(malformed(r#"{"id":1,"result":{}}"#), Malformed::NoVersion);
        assert_eq!(
            malformed(r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#),
            Malformed::ResultAndError
        );
        assert_eq!(
            malformed(r#"{"jsonrpc":"2.0","id":1,"result":null,"error":{"code":1,"message":"m"}}"#),
            Malformed::ResultAndError
        );
        assert_eq!(
            malformed(r#"{"jsonrpc":"2.0","id":1}"#),
            Malformed::NoOutcome
        );
        assert_eq!(
            malformed(r#"{"jsonrpc":"2.0","id":1,"error":null}"#),
            Malformed::NoOutcome
        );
        assert_eq!(
            malformed(r#"{"jsonrpc":"2.0","id":1,"method":"x","result":{}}"#),
            Malformed::HasMethod
        );
        for (error, why) in [
            (r#""oops""#, "is not an object"),
            (r#"[]"#, "is not an object"),
            (r#"{"message":"m"}"#, "has no `code`"),
            (
                r#"{"code":"1","message":"m"}"#,
                "has a `code` that is not an integer",
            ),
            (
                r#"{"code":1.5,"message":"m"}"#,
                "has a `code` that is not an integer",
            ),
            (
                r#"{"code":2147483648,"message":"m"}"#,
                "has a `code` out of the 32-bit range",
            ),
            (
                r#"{"code":18446744073709551615,"message":"m"}"#,
                "has a `code` out of the 32-bit range",
            ),
            (r#"{"code":1}"#, "has no `message`"),
            (
                r#"{"code":1,"message":null}"#,
                "has a `message` that is not a string",
            ),
        ] {
            let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"error":{error}}}"#);
            assert_eq!(malformed(&frame), Malformed::BadError(why), "{frame}");
        }
        // The text an error quotes.
        assert_eq!(
            Malformed::WrongVersion(Some("\"1.0\"".into())).to_string(),
            r#"the response has `"jsonrpc": "1.0"`, not "2.0""#
        );
    }

    #[test]
    fn null_members_read_as_absent_except_a_null_result() {
        assert_eq!(
            outcome(r#"{"jsonrpc":"2.0","id":1,"result":{"a":1},"error":null,"method":null}"#),
            (Some(RequestId::Number(1)), Ok(serde_json::json!({"a": 1})))
        );
        let (id, out) = outcome(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":[1]}}"#,
        );
        assert_eq!(id, None);
        assert_eq!(
            out,
            Err(Fault::Rpc(RpcError {
                code: ErrorCode::PARSE_ERROR,
                message: "Parse error".into(),
                data: Some(serde_json::json!([1])),
            }))
        );
        // A missing id reads as a null one.
        let (id, out) = outcome(r#"{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}"#);
        assert!(id.is_none() && matches!(out, Err(Fault::Rpc(_))));
        // A version written with an escape is still "2.0".
        assert!(outcome(r#"{"jsonrpc":"2\u002e0","id":1,"result":1}"#)
            .1
            .is_ok());
    }

    #[test]
    fn peek_finds_response_ids_and_declines_the_rest() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":12,"result":{{"content":[{{"type":"text","text":"{}\\\"q\\\\"}}],"n":[1,-2.5e3,true,null,{{}}]}}}}"#,
            "x".repeat(100)
        );
        assert_eq!(
            peek_response_id(big.as_bytes()),
            Some(RequestId::Number(12))
        );
        let v: Value = Payload::Line(big.clone().into_bytes()).parse().unwrap();
        assert_eq!(v["n"][1], serde_json::json!(-2500.0));
        assert_eq!(
            peek_response_id(br#" { "result" : {} , "id" : "abc", "jsonrpc":"2.0" } "#),
            Some(RequestId::String("abc".into()))
        );
        assert_eq!(
            peek_response_id(br#"{"jsonrpc":"2.0","id":-3,"result":"a\"b"}"#),
            Some(RequestId::Number(-3))
        );
        // Not plain responses: a full parse decides.
        assert_eq!(
            peek_response_id(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            None
        );
        assert_eq!(
            peek_response_id(br#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#),
            None
        );
        assert_eq!(
            peek_response_id(br#"{"jsonrpc":"1.0","id":1,"result":{}}"#),
            None
        );
        assert_eq!(peek_response_id(br#"{"jsonrpc":"2.0","id":1}"#), None);
        // With the id first, the result is left to the caller's parse, which fails on a broken
        // one; with the id after it, the result is skipped and must be well-formed.
        assert_eq!(
            peek_response_id(br#"{"jsonrpc":"2.0","id":1,"result":{"#),
            Some(RequestId::Number(1))
        );
        assert_eq!(
            peek_response_id(br#"{"jsonrpc":"2.0","result":{"a":[1,"#),
            None
        );
        assert_eq!(peek_response_id(b"not json"), None);
        // A peeked line whose result is broken fails when the caller parses it.
        assert!(
            Payload::Line(br#"{"jsonrpc":"2.0","id":1,"result":[1,}"#.to_vec())
                .parse::<Value>()
                .is_err()
        );
    }

    #[test]
    fn peek_id_prefix_reads_a_leading_id() {
        assert_eq!(
            peek_id_prefix(br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"te"#),
            Some(RequestId::Number(7))
        );
        assert_eq!(
            peek_id_prefix(br#"{"id":"a","result""#),
            Some(RequestId::String("a".into()))
        );
        assert_eq!(peek_id_prefix(br#"{"result":{},"id":7}"#), None);
        assert_eq!(
            peek_id_prefix(br#"{"id":7,"jsonrpc":"2.0","error":{"code":1,"message":"#),
            Some(RequestId::Number(7))
        );
    }

    /// Found by fuzzing: `-0` peeked as id 0, though serde_json reads it as a float (so the
    /// full parse found no id); leading zeros are not JSON at all.
    #[test]
    fn peeks_take_only_integers_as_json_writes_them() {
        for id in ["-0", "01", "-01", "00", "-"] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
            assert_eq!(peek_response_id(line.as_bytes()), None, "{id}");
            assert_eq!(peek_id_prefix(line.as_bytes()), None, "{id}");
        }
        for (id, n) in [
            ("0", 0),
            ("-1", -1),
            ("10", 10),
            ("-9223372036854775808", i64::MIN),
        ] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
            assert_eq!(
                peek_response_id(line.as_bytes()),
                Some(RequestId::Number(n))
            );
            assert_eq!(peek_id_prefix(line.as_bytes()), Some(RequestId::Number(n)));
        }
    }

    /// Found by fuzzing, and kept: serde_json does not check what it skips (UTF-8, `\u`
    /// escapes, number range) in members nobody reads, so such a frame is still read; no
    /// string is ever made of those bytes.
    #[test]
    fn unread_members_are_skipped_unchecked() {
        let frame =
            b"{\"jsonrpc\":\"2.0\",\"id\":3,\"x\":\"\xff\\ud800\",\"y\":1e999,\"result\":{}}";
        assert!(serde_json::from_slice::<Value>(frame).is_err());
        let m = Inbound::parse(frame).unwrap();
        assert!(matches!(
            &m[..],
            [Inbound::Response(InResponse {
                id: Some(RequestId::Number(3)),
                outcome: Ok(_)
            })]
        ));
        assert_eq!(peek_response_id(frame), None);
    }

    /// Found by fuzzing: a server request's id named one of ours.
    #[test]
    fn peek_id_prefix_ignores_a_server_request() {
        assert_eq!(
            peek_id_prefix(
                br#"{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{"#
            ),
            None
        );
        assert_eq!(peek_id_prefix(br#"{"jsonrpc":"2.0","id":4,"#), None);
        assert_eq!(
            peek_id_prefix(br#"{"id":4,"jsonrpc":"2.0","error":null,"method":"x","params":{"#),
            None
        );
    }

    /// Found by fuzzing: a prefix that ends inside an id read as a shorter id.
    #[test]
    fn peek_id_prefix_needs_the_whole_id() {
        assert_eq!(peek_id_prefix(br#"{"jsonrpc":"2.0","id":12"#), None);
        assert_eq!(peek_id_prefix(br#"{"jsonrpc":"2.0","id":12,"re"#), None);
        assert_eq!(peek_id_prefix(br#"{"jsonrpc":"2.0","id":"ab"#), None);
    }

    #[test]
    fn tolerates_batches_element_by_element() {
        let m = Inbound::parse(
            br#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"x"},
                {"jsonrpc":"1.0","id":2,"result":{}},7,{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}]"#,
        )
        .unwrap();
        assert_eq!(m.len(), 5);
        assert!(matches!(
            &m[0],
            Inbound::Response(InResponse { outcome: Ok(_), .. })
        ));
        assert!(matches!(&m[1], Inbound::Notification(_)));
        assert!(matches!(
            &m[2],
            Inbound::Response(InResponse {
                id: Some(RequestId::Number(2)),
                outcome: Err(Fault::Malformed(Malformed::WrongVersion(_)))
            })
        ));
        assert!(matches!(&m[3], Inbound::Invalid(FrameError::Invalid(_))));
        assert!(matches!(
            &m[4],
            Inbound::Response(InResponse {
                id: None,
                outcome: Err(Fault::Rpc(_))
            })
        ));
        assert!(matches!(
            Inbound::parse(b"[1,"),
            Err(FrameError::NotJson(_))
        ));
    }

    #[test]
    fn a_peeked_line_is_checked_by_the_same_rules_as_a_full_parse() {
        let line = |s: &str| Payload::Line(s.as_bytes().to_vec()).parse::<Value>();
        assert_eq!(
            line(r#"{"jsonrpc":"2.0","id":1,"result":{"a":1},"error":null}"#).unwrap(),
            serde_json::json!({"a": 1})
        );
        for (frame, want) in [
            (
                r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
                Malformed::WrongVersion(Some("\"1.0\"".into())),
            ),
            (r#"{"id":1,"result":{}}"#, Malformed::NoVersion),
            (
                r#"{"id":1,"result":{},"jsonrpc":"2.0","error":{"code":1,"message":"m"}}"#,
                Malformed::ResultAndError,
            ),
            (
                r#"{"id":1,"result":{},"jsonrpc":"2.0","method":"x"}"#,
                Malformed::HasMethod,
            ),
        ] {
            assert_eq!(
                line(frame).unwrap_err().to_string(),
                want.to_string(),
                "{frame}"
            );
            assert_eq!(malformed(frame), want, "{frame}");
        }
        assert!(line(r#"{"jsonrpc":"2.0","id":1,"result":{},"id":1}"#).is_err());
    }

    #[test]
    fn encodes_compactly() {
        let v = encode_request(
            &RequestId::Number(3),
            "tools/call",
            Some(&serde_json::json!({"name":"a\nb"})),
        );
        assert_eq!(
            std::str::from_utf8(&v).unwrap(),
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a\nb"}}"#
        );
        assert!(!v.contains(&b'\n'));
    }
}
