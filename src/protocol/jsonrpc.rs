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
pub enum RequestId {
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

/// The `error` member of a JSON-RPC error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RpcError {
    pub(crate) code: i32,
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
    pub(crate) outcome: Result<Box<RawValue>, RpcError>,
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
                    (Some(result), None) => Ok(result),
                    (None, None) => {
                        if id.is_none() {
                            return Err(FrameError::Invalid("neither method, result nor error"));
                        }
                        // `"result": null` deserialises as None; keep it as a JSON null.
                        Ok(null_raw())
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
                assert_eq!(r.outcome.as_ref().unwrap().get(), r#"{"a":1}"#);
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
            matches!(&m[0], Inbound::Response(InResponse { outcome: Err(e), .. }) if e.code == -32601)
        );
    }

    #[test]
    fn null_result_is_kept_as_null() {
        let m = Inbound::parse(br#"{"jsonrpc":"2.0","id":1,"result":null}"#).unwrap();
        assert!(
            matches!(&m[0], Inbound::Response(InResponse { outcome: Ok(v), .. }) if v.get() == "null")
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
