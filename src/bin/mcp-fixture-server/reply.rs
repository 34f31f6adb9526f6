//! What a request gets back: a result, a text tool result, a JSON-RPC error
//! or nothing.

use serde_json::{json, Value};

pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) data: Option<Value>,
}

impl RpcError {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        RpcError::new(-32602, message)
    }
}

/// What to send back for a request.
pub(crate) enum Reply {
    /// A full `result` object.
    Result(Value),
    /// A tool result with one text block (written without building a `Value`).
    Text(String),
    /// A JSON-RPC error.
    Error(RpcError),
    /// Nothing (crash, cancelled).
    Nothing,
}

pub(crate) type RpcResult<T> = Result<T, RpcError>;

pub(crate) fn tool_error(text: impl Into<String>) -> Reply {
    Reply::Result(json!({
        "content": [{"type": "text", "text": text.into()}],
        "isError": true,
    }))
}

pub(crate) fn to_json(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}
