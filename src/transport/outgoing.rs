//! What a transport is handed to send: one serialised JSON-RPC message together with what the
//! session already knows about it (its kind, id, method and deadline), so that no transport has
//! to parse what was just encoded.
//!
//! New facts a transport may need about a message (a header value taken from its params, say)
//! become new fields here, set by the constructors or a `with_` method; transports that do not
//! use them are untouched.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::protocol::jsonrpc::{encode_notification, encode_response, RequestId, RpcError};

/// The kind of an outgoing message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A request: it has an id and a method, and an answer is expected.
    Request,
    /// A notification: a method, no id.
    Notification,
    /// A response to a server's request: an id, no method.
    Response,
}

/// One message on its way out.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    /// The serialised message, without a trailing newline.
    pub(crate) frame: Vec<u8>,
    /// What it is.
    pub(crate) kind: Kind,
    /// The request id (requests and responses).
    pub(crate) id: Option<RequestId>,
    /// The method (requests and notifications); for a response, the method of the server
    /// request it answers, when known (for messages only).
    pub(crate) method: Option<String>,
    /// When the send must have succeeded or failed; `None`: the transport's own timeout. For a
    /// request read inside `send` (Streamable HTTP), also when its answer must have begun.
    pub(crate) deadline: Option<Instant>,
    /// The latest its answer may be read by, when progress may move the caller's deadline on
    /// (see [`Outgoing::extensible_until`]); `None`: [`deadline`](Self::deadline) is final.
    pub(crate) limit: Option<Instant>,
    /// The caller waits for the answer with [`Transport::wait`](super::Transport::wait): a
    /// transport that reads answers on the caller's thread may leave the reading to it, so each
    /// wait has its own deadline and the caller sees progress as it comes.
    pub(crate) caller_waits: bool,
    /// The HTTP headers the protocol era gives the message (`MCP-Protocol-Version`, the modern
    /// `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`); transports without headers ignore them.
    pub(crate) headers: Vec<(String, String)>,
}

impl Outgoing {
    /// Our request `id` for `method`, already encoded as `frame` (see `Session::begin`).
    pub(crate) fn encoded_request(id: i64, method: &str, frame: Vec<u8>) -> Outgoing {
        Outgoing {
            frame,
            kind: Kind::Request,
            id: Some(RequestId::Number(id)),
            method: Some(method.to_owned()),
            deadline: None,
            limit: None,
            caller_waits: false,
            headers: Vec::new(),
        }
    }

    /// A notification.
    pub(crate) fn notification(method: &str, params: Option<&Value>) -> Outgoing {
        Outgoing {
            frame: encode_notification(method, params),
            kind: Kind::Notification,
            id: None,
            method: Some(method.to_owned()),
            deadline: None,
            limit: None,
            caller_waits: false,
            headers: Vec::new(),
        }
    }

    /// Our answer to the server's request `id` (a request for `method`).
    pub(crate) fn response(
        id: &RequestId,
        method: &str,
        outcome: &Result<Value, RpcError>,
    ) -> Outgoing {
        Outgoing {
            frame: encode_response(id, outcome),
            kind: Kind::Response,
            id: Some(id.clone()),
            method: Some(method.to_owned()),
            deadline: None,
            limit: None,
            caller_waits: false,
            headers: Vec::new(),
        }
    }

    /// The one place a cancellation is built: `notifications/cancelled` for our request `id`,
    /// which we gave up on for `reason`. It gets at most a second (or `limit`) to leave.
    pub(crate) fn cancellation(id: &RequestId, reason: &str, limit: Duration) -> Outgoing {
        Outgoing::notification(
            "notifications/cancelled",
            Some(&json!({ "requestId": id, "reason": reason })),
        )
        .by(Instant::now() + limit.min(Duration::from_secs(1)))
    }

    /// `notifications/initialized`.
    pub(crate) fn initialized() -> Outgoing {
        Outgoing::notification("notifications/initialized", None)
    }

    /// The same message, carrying `headers` (see [`headers`](Self::headers)).
    pub(crate) fn with_headers(mut self, headers: Vec<(String, String)>) -> Outgoing {
        self.headers = headers;
        self
    }

    /// The value of the header `name` (ASCII case-insensitive) the message carries.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The same message with a deadline.
    pub(crate) fn by(mut self, deadline: Instant) -> Outgoing {
        self.deadline = Some(deadline);
        self
    }

    /// The same request, whose answer may be read until `limit` when progress moves its caller's
    /// deadline on (the caller's request timeout after each progress, capped by its maximum
    /// total): a transport bounding a whole exchange at once bounds it by `limit`, and each
    /// read by the caller's current deadline.
    pub(crate) fn extensible_until(mut self, limit: Instant) -> Outgoing {
        self.limit = Some(limit);
        self
    }

    /// The same request, whose caller will wait for its answer with
    /// [`Transport::wait`](super::Transport::wait).
    pub(crate) fn answered_in_wait(mut self) -> Outgoing {
        self.caller_waits = true;
        self
    }

    /// Whether it is a request (an answer is expected).
    pub(crate) fn is_request(&self) -> bool {
        self.kind == Kind::Request
    }

    /// The method name, or `response` for a response.
    pub(crate) fn label(&self) -> &str {
        match self.kind {
            Kind::Response => "response",
            _ => self.method.as_deref().unwrap_or("response"),
        }
    }

    /// The method name of a request or notification (empty for a response).
    pub(crate) fn method(&self) -> &str {
        match self.kind {
            Kind::Response => "",
            _ => self.method.as_deref().unwrap_or(""),
        }
    }

    /// A message from a frame whose envelope must be read (tests hand transports raw frames).
    #[cfg(test)]
    pub(crate) fn parse(frame: Vec<u8>) -> Outgoing {
        #[derive(serde::Deserialize, Default)]
        struct Envelope {
            #[serde(default)]
            id: Option<RequestId>,
            #[serde(default)]
            method: Option<String>,
        }
        let env: Envelope = serde_json::from_slice(&frame).unwrap_or_default();
        let kind = match (&env.id, &env.method) {
            (Some(_), Some(_)) => Kind::Request,
            (None, _) => Kind::Notification,
            (Some(_), None) => Kind::Response,
        };
        Outgoing {
            frame,
            kind,
            id: env.id,
            method: env.method,
            deadline: None,
            limit: None,
            caller_waits: false,
            headers: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc::encode_request;

    #[test]
    fn constructors_say_what_they_built() {
        let r = Outgoing::encoded_request(
            7,
            "tools/call",
            encode_request(
                &RequestId::Number(7),
                "tools/call",
                Some(&json!({"name": "x"})),
            ),
        );
        assert!(r.is_request());
        assert_eq!(
            (r.id.clone(), r.label()),
            (Some(RequestId::Number(7)), "tools/call")
        );
        let v: Value = serde_json::from_slice(&r.frame).unwrap();
        assert_eq!(v["id"], json!(7));
        let c = Outgoing::cancellation(&RequestId::Number(7), "timed out", Duration::from_secs(9));
        let v: Value = serde_json::from_slice(&c.frame).unwrap();
        assert_eq!(v["method"], "notifications/cancelled");
        assert_eq!(v["params"], json!({"requestId": 7, "reason": "timed out"}));
        assert!(c.deadline.unwrap() <= Instant::now() + Duration::from_secs(1));
        assert!(!c.is_request() && c.id.is_none());
        let a = Outgoing::response(&RequestId::Number(1), "ping", &Ok(json!({})));
        assert_eq!((a.label(), a.method()), ("response", ""));
        let p = Outgoing::parse(r.frame.clone());
        assert_eq!((p.kind, p.label()), (Kind::Request, "tools/call"));
    }
}
