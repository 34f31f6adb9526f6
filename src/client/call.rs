//! The one request path of [`Client`], whatever the era: a request as the connection's era
//! prepares it, its answer as the era reads it, and the operations whose form differs by era
//! done as the era says (see `protocol/wire.rs`, which decides; this file only does the I/O).
//!
//! ```text
//!  call(method, params) ──Connection::request (era's _meta, headers)──> Wire::read
//!     ├─ Done ──> Answer::Done          ├─ Task ──> Answer::Task
//!     ├─ Input ──> the handlers answer (DispatchCtx::answer_input) ──> the request again,
//!     │            under the call's one deadline (CallClock), at most max_input_rounds times
//!     └─ failed ──> Wire::retry: sent again once / tools listed again once / the error
//!  perform(op) ──Wire::operation──> a request, a notification, a listen, nothing, Unsupported
//! ```

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::connection::Connection;
use super::options::CallOptions;
use super::Client;
use crate::config::ProtocolEra;
use crate::error::{Error, ProtocolErrorKind};
use crate::protocol::wire::{Action, Op, Refusal, Reply, Retried, Retry, Step};
use crate::sync::lock;

/// What a call came to.
pub(crate) enum Answer {
    /// Its result.
    Done(Reply),
    /// A task the server made of it (modern `tools/call`, the tasks extension), as it came.
    Task(Value),
}

impl Answer {
    /// The result as sent: a task is kept whole (`resultType` included).
    pub(crate) fn into_reply(self) -> Reply {
        match self {
            Answer::Done(r) => r,
            Answer::Task(v) => Reply::Value(v),
        }
    }
}

impl Client {
    /// Refuses a `tools/call` of a tool the server's policy does not allow, before anything
    /// is sent (see [`ServerPolicy`](crate::config::ServerPolicy)).
    pub(super) fn check_tool_allowed(&self, params: Option<&Value>) -> Result<(), Error> {
        match params.and_then(|p| p.get("name")).and_then(Value::as_str) {
            Some(name) => self.check_tool_name(name),
            // A call without a name is the server's to refuse; no policy names it.
            None => Ok(()),
        }
    }

    /// [`check_tool_allowed`](Self::check_tool_allowed) for the tool `name`.
    pub(super) fn check_tool_name(&self, name: &str) -> Result<(), Error> {
        self.config
            .policy()
            .check_tool(name)
            .map_err(|refusal| Error::ToolNotAllowed {
                server: self.server_name().to_owned(),
                refusal: Box::new(refusal),
            })
    }

    /// One call: the request, and in the modern era the server's input requests answered by
    /// the handlers (at most `Limits::max_input_rounds` rounds, all under the call's one
    /// deadline, which only its progress moves on), a broken HTTP reply sent again once with a
    /// new id, and a `tools/call` refused for its headers (`-32020`) sent again once after
    /// listing the tools again. Errors are not redacted yet.
    pub(super) fn call(
        &self,
        conn: &Connection,
        method: &str,
        params: Option<Value>,
        opts: &CallOptions,
    ) -> Result<Answer, Error> {
        if method == "tools/call" {
            self.check_tool_allowed(params.as_ref())?;
        }
        let mut rounds = conn
            .wire
            .rounds(params, self.config.limits().max_input_rounds);
        // One deadline for the whole call, whatever the number of rounds: each request starts
        // from the deadline the last one left (progress may have moved it on). A call of one
        // request needs no clock: its request keeps its own deadline (and a request sent again
        // after authorizing gets a new one, as any request does).
        let clock = rounds
            .may_resend()
            .then(|| CallClock::new(opts, conn.default_timeout));
        let mut tried = Retried::default();
        loop {
            let next = clock.as_ref().map(CallClock::next);
            let payload = match conn.request(method, rounds.params(), next.as_ref().unwrap_or(opts))
            {
                Ok(p) => p,
                Err(e) => {
                    let reissuable = !conn.session.is_closed() && self.config.url().is_some();
                    match conn.wire.retry(method, &e, reissuable, &mut tried) {
                        Retry::Reissue => {
                            log::debug!(
                                "server `{}`: the reply to `{method}` broke; sending it again",
                                self.server_name()
                            );
                            continue;
                        }
                        Retry::Relist => {
                            let _ = self.list_tools();
                            continue;
                        }
                        Retry::No => return Err(e),
                    }
                }
            };
            let max_echo = conn.sink.ctx.limits.max_echo_bytes;
            let step = conn
                .wire
                .read(method, payload, max_echo)
                .map_err(|r| match r {
                    Refusal::Malformed(e) => self.malformed(method, &e),
                    Refusal::Protocol(detail) => {
                        self.protocol(ProtocolErrorKind::Unexpected, detail)
                    }
                })?;
            match step {
                Step::Done(reply) => return Ok(Answer::Done(reply)),
                Step::Task(task) => return Ok(Answer::Task(task)),
                Step::Input { requests, state } => {
                    rounds
                        .begin(method)
                        .map_err(|d| self.protocol(ProtocolErrorKind::TooMany, d))?;
                    let mut responses = Map::new();
                    for (key, request) in requests {
                        let answer = conn.sink.ctx.answer_input(&request)?;
                        responses.insert(key, answer);
                    }
                    rounds.answered(responses, state);
                }
            }
        }
    }

    /// Does `op` in the form of the connection's era.
    ///
    /// # Errors
    /// As the request, notification or listen it takes; [`Error::Unsupported`] when the era
    /// has no such operation.
    pub(super) fn perform(&self, conn: &Arc<Connection>, op: Op<'_>) -> Result<(), Error> {
        self.act(conn, conn.wire.operation(op))
    }

    /// Does what the era said.
    pub(super) fn act(&self, conn: &Arc<Connection>, action: Action) -> Result<(), Error> {
        let done = match action {
            Action::Request(method, params) => self
                .call(conn, method, params, &CallOptions::default())
                .and_then(|a| {
                    a.into_reply()
                        .parse::<Value>()
                        .map_err(|e| self.malformed(method, &e))
                })
                .map(|_| ()),
            Action::Notify(method) => conn.notify(method, None),
            Action::Listen {
                key,
                notifications,
                grant,
            } => self.listen(conn, &key, notifications, &grant),
            Action::EndListen(key) => {
                self.end_listen(conn, &key);
                Ok(())
            }
            Action::Nothing => Ok(()),
            Action::Unsupported(feature) => Err(self.unsupported(feature, conn.wire.era())),
        };
        done.map_err(|e| self.redacted(e))
    }

    /// The error for a method the era does not have (`method` bare: `ping`).
    pub(super) fn unsupported(&self, method: &str, era: ProtocolEra) -> Error {
        Error::Unsupported {
            server: self.server_name().to_owned(),
            feature: method.to_owned(),
            era,
        }
    }

    /// A protocol error of this server.
    fn protocol(&self, kind: ProtocolErrorKind, detail: String) -> Error {
        Error::Protocol {
            server: self.server_name().to_owned(),
            kind,
            detail,
        }
    }
}

/// The options of the requests of one call of several (input rounds, a request sent again):
/// the call's options, with progress moving one deadline shared by all the requests.
struct CallClock {
    /// The call's options (its progress callback also moves the shared deadline).
    opts: CallOptions,
    /// When the call began.
    start: Instant,
    /// The call's deadline, when nothing moves it.
    fixed: Instant,
    /// The call's deadline now, when progress moves it on (only then is it shared).
    moved: Option<Arc<Mutex<Instant>>>,
}

impl CallClock {
    fn new(opts: &CallOptions, default_timeout: Duration) -> CallClock {
        let start = Instant::now();
        let timeout = opts.timeout.unwrap_or(default_timeout);
        let fixed = crate::deadline::add(start, timeout);
        let mut opts = opts.clone();
        let mut moved = None;
        if let (true, Some(cb)) = (opts.reset_timeout_on_progress, opts.on_progress.clone()) {
            let hard_limit = opts
                .max_total_timeout
                .map(|m| crate::deadline::add(start, m.max(timeout)));
            let deadline = Arc::new(Mutex::new(fixed));
            let shared = Arc::clone(&deadline);
            opts.on_progress = Some(Arc::new(move |p: &crate::model::Progress| {
                let next = crate::deadline::after(timeout);
                *lock(&shared) = hard_limit.map_or(next, |h| next.min(h));
                cb(p);
            }));
            moved = Some(deadline);
        }
        CallClock {
            opts,
            start,
            fixed,
            moved,
        }
    }

    /// The options of the next request of the call.
    fn next(&self) -> CallOptions {
        let deadline = self.moved.as_ref().map_or(self.fixed, |d| *lock(d));
        CallOptions {
            call_deadline: Some((self.start, deadline)),
            ..self.opts.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    //! The one request path against a scripted in-process modern server.

    use serde_json::{json, Value};

    use crate::config::{ProtocolMode, ServerConfig};
    use crate::model::Root;
    use crate::testing::TestServer;
    use crate::Error;

    fn reply(msg: &Value, result: Value) -> Vec<Value> {
        vec![json!({"jsonrpc": "2.0", "id": msg["id"], "result": result})]
    }

    /// A modern server whose `tools/call` always asks for the roots again, and whose
    /// `tools/list` has an unknown result type.
    fn stubborn() -> TestServer {
        TestServer::from_fn("stubborn", |msg: &Value| match msg["method"].as_str() {
            Some("server/discover") => reply(
                msg,
                json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}),
            ),
            Some("tools/call") => reply(
                msg,
                json!({"resultType": "input_required",
                           "inputRequests": {"r": {"method": "roots/list", "params": {}}},
                           "requestState": "s"}),
            ),
            Some("tools/list") => reply(msg, json!({"resultType": "later", "tools": []})),
            Some(_) if msg.get("id").is_some() => vec![json!({"jsonrpc": "2.0",
                    "id": msg["id"], "error": {"code": -32601, "message": "no"}})],
            _ => vec![],
        })
    }

    #[test]
    fn input_rounds_are_bounded_and_an_unknown_result_type_is_refused() {
        let server = stubborn();
        let config = ServerConfig::stdio("stubborn", "unused")
            .with_protocol(ProtocolMode::Modern)
            .with_limits(crate::config::Limits::default().with_max_input_rounds(3));
        let client = server
            .client_builder_for(config)
            .roots(vec![Root::new("file:///r")])
            .connect()
            .expect("connect");
        let e = client.call_tool("t", json!({})).unwrap_err();
        assert!(
            matches!(&e, Error::Protocol { detail, .. } if detail.contains("3 rounds")),
            "{e}"
        );
        let calls: Vec<Value> = server
            .received()
            .into_iter()
            .filter(|m| m["method"] == "tools/call")
            .collect();
        assert_eq!(calls.len(), 4, "the first call and three retries");
        assert!(calls[0]["params"].get("inputResponses").is_none());
        assert_eq!(calls[1]["params"]["requestState"], json!("s"));
        assert_eq!(
            calls[1]["params"]["inputResponses"]["r"]["roots"][0]["uri"],
            json!("file:///r")
        );
        assert_ne!(calls[0]["id"], calls[1]["id"], "a retry has a new id");
        assert_eq!(
            calls[1]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            json!("2026-07-28")
        );
        let e = client.list_tools().unwrap_err();
        assert!(e.to_string().contains("`later`"), "{e}");
    }
}
