//! JSON-RPC 2.0 framing types: ids, requests, notifications, responses, error codes.
//!
//! Inbound messages keep their `params` / `result` as raw JSON ([`RawValue`]) so that the I/O
//! side only reads the envelope and a caller deserialises its own result once, on its own thread.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

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
    pub(crate) id: Option<RequestId>,
    pub(crate) outcome: Result<Payload, RpcError>,
}

/// The `result` of a response, parsed by the caller that waits for it (on its own thread, once).
#[derive(Debug)]
pub(crate) enum Payload {
    /// The result alone, as raw JSON.
    Raw(Box<RawValue>),
    /// A whole response line whose envelope was only peeked at (see [`peek_response_id`]): the
    /// result is parsed straight out of it, so a large result is scanned once, not twice.
    Line(Vec<u8>),
}

impl Payload {
    /// Deserialises the result.
    pub(crate) fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        match self {
            Payload::Raw(raw) => serde_json::from_str(raw.get()),
            Payload::Line(line) => {
                #[derive(Deserialize)]
                struct Env<'a, T> {
                    #[serde(borrow)]
                    jsonrpc: std::borrow::Cow<'a, str>,
                    result: T,
                }
                let env: Env<'_, T> = serde_json::from_slice(line)?;
                if env.jsonrpc != "2.0" {
                    return Err(serde::de::Error::custom(
                        "missing or wrong \"jsonrpc\": \"2.0\"",
                    ));
                }
                Ok(env.result)
            }
        }
    }
}

/// One inbound JSON-RPC message.
#[derive(Debug)]
pub(crate) enum Inbound {
    Request(InRequest),
    Notification(InNotification),
    Response(InResponse),
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    jsonrpc: Option<String>,
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Box<RawValue>>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<RpcError>,
}

/// Why an inbound frame was not a usable JSON-RPC message.
#[derive(Debug)]
pub(crate) enum FrameError {
    /// Not JSON at all (a stray log line, say).
    NotJson(serde_json::Error),
    /// JSON, but not a JSON-RPC 2.0 message.
    Invalid(&'static str),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::NotJson(e) => write!(f, "not JSON: {e}"),
            FrameError::Invalid(why) => write!(f, "not a JSON-RPC 2.0 message: {why}"),
        }
    }
}

impl Inbound {
    /// Parses one frame (a line on stdio, an SSE `data`, a WebSocket text frame).
    pub(crate) fn parse(bytes: &[u8]) -> Result<Vec<Inbound>, FrameError> {
        let bytes = trim_ascii(bytes);
        if bytes.first() == Some(&b'[') {
            // 2025-03-26 batches: tolerate them.
            let items: Vec<Box<RawValue>> =
                serde_json::from_slice(bytes).map_err(FrameError::NotJson)?;
            return items
                .iter()
                .map(|raw| Self::parse_one(raw.get().as_bytes()))
                .collect();
        }
        Self::parse_one(bytes).map(|m| vec![m])
    }

    fn parse_one(bytes: &[u8]) -> Result<Inbound, FrameError> {
        let env: Envelope = serde_json::from_slice(bytes).map_err(FrameError::NotJson)?;
        if env.jsonrpc.as_deref() != Some("2.0") {
            return Err(FrameError::Invalid("missing or wrong \"jsonrpc\": \"2.0\""));
        }
        match (env.method, env.id) {
            (Some(method), Some(id)) => Ok(Inbound::Request(InRequest {
                id,
                method,
                params: env.params,
            })),
            (Some(method), None) => Ok(Inbound::Notification(InNotification {
                method,
                params: env.params,
            })),
            (None, id) => {
                let outcome = match (env.result, env.error) {
                    (_, Some(err)) => Err(err),
                    (Some(result), None) => Ok(Payload::Raw(result)),
                    (None, None) => {
                        if id.is_none() {
                            return Err(FrameError::Invalid("neither method, result nor error"));
                        }
                        // `"result": null` deserialises as None; keep it as a JSON null.
                        Ok(Payload::Raw(null_raw()))
                    }
                };
                Ok(Inbound::Response(InResponse { id, outcome }))
            }
        }
    }
}

pub(crate) fn null_raw() -> Box<RawValue> {
    RawValue::from_string("null".to_owned()).expect("null is valid JSON")
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

/// The id of a response from the first bytes of its line (`id` must come before `result`, as
/// the SDKs write it): used to fail the right caller when a response is too large to take in.
pub(crate) fn peek_id_prefix(bytes: &[u8]) -> Option<RequestId> {
    let mut p = Peek { b: bytes, i: 0 };
    p.ws();
    p.eat(b'{')?;
    loop {
        p.ws();
        let key = p.simple_string()?;
        p.ws();
        p.eat(b':')?;
        p.ws();
        match key {
            b"id" => return p.id(),
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
        let start = self.i;
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
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
                let v: Value = r.outcome.as_ref().unwrap().parse().unwrap();
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
            matches!(&m[0], Inbound::Response(InResponse { outcome: Err(e), .. }) if e.code == ErrorCode::METHOD_NOT_FOUND)
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
    fn rejects_non_json_and_wrong_version() {
        assert!(matches!(
            Inbound::parse(b"hello world"),
            Err(FrameError::NotJson(_))
        ));
        assert!(matches!(
            Inbound::parse(br#"{"jsonrpc":"1.0","id":1,"result":1}"#),
            Err(FrameError::Invalid(_))
        ));
        assert!(matches!(
            Inbound::parse(br#"{"jsonrpc":"2.0"}"#),
            Err(FrameError::Invalid(_))
        ));
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
            peek_id_prefix(br#"{"id":"a","#),
            Some(RequestId::String("a".into()))
        );
        assert_eq!(peek_id_prefix(br#"{"result":{},"id":7}"#), None);
    }

    #[test]
    fn tolerates_batches() {
        let m = Inbound::parse(
            br#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"x"}]"#,
        )
        .unwrap();
        assert_eq!(m.len(), 2);
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
