//! The protocol era as a strategy: what goes on the wire for a request in each era, and what
//! its answer means. I/O-free: it takes a request's method and params, or its answer, and gives
//! back what to send or what to do next, so a client has one request path whatever the era.
//!
//! ```text
//!  prepare(method, params) ──> Prepared { params (modern: + _meta), headers (modern) }
//!  read(method, answer)    ──> Step::Done(reply)             legacy: always, the answer unparsed
//!                          ├─> Step::Input { requests, state }  answer them, send again (Rounds)
//!                          ├─> Step::Task(task)               modern tools/call, tasks offered
//!                          └─> Err(Refusal)                    resultType this client refuses
//!  retry(method, error)    ──> Retry::Reissue | Retry::Relist | Retry::No
//!  operation(op)           ──> Action: a request, a notification, a listen, nothing, unsupported
//! ```
//!
//! | era | `_meta` | headers | `resultType` | `ping` | log level | subscribe |
//! |---|---|---|---|---|---|---|
//! | legacy | — | `MCP-Protocol-Version` once negotiated (the session's) | not read | a request | `logging/setLevel` | `resources/subscribe` |
//! | modern | version, capabilities, client info, log level | version, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*` | checked | unsupported | in `_meta` | `subscriptions/listen` |

use serde_json::{json, Map, Value};

mod modern;

use super::era;
use super::jsonrpc::Payload;
use crate::config::{echo, ProtocolEra};
use crate::error::Error;
use crate::model::{DiscoverResult, LoggingLevel, ServerCapabilities};
use crate::sync::write_lock;
pub(crate) use modern::{Modern, TASKS_EXTENSION};

/// Methods whose result may be an `InputRequiredResult`.
const MRTR_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// The key of the listen for list changes among the subscriptions (never a uri: no scheme).
pub(crate) const LIST_CHANGES: &str = "*list changes*";

/// The era a connection speaks, deciding what its messages carry.
pub(crate) enum Wire {
    /// The handshake era (`initialize`): the negotiated version, once there is one.
    Legacy(Option<String>),
    /// The stateless era (2026-07-28), boxed: what it keeps is large beside the legacy era's.
    Modern(Box<Modern>),
}

/// A request as it goes on the wire.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// Its params, with what the era adds.
    pub(crate) params: Option<Value>,
    /// The HTTP headers it carries (transports without headers ignore them).
    pub(crate) headers: Vec<(String, String)>,
}

/// A request's answer, as read so far.
#[derive(Debug)]
pub(crate) enum Reply {
    /// Not parsed yet: read straight into the caller's type.
    Raw(Payload),
    /// Parsed, and checked by the era.
    Value(Value),
}

impl Reply {
    /// The result as `T`.
    ///
    /// # Errors
    /// The parse error of a result that is not a `T`.
    pub(crate) fn parse<T: serde::de::DeserializeOwned>(self) -> Result<T, serde_json::Error> {
        match self {
            Reply::Raw(p) => p.parse(),
            Reply::Value(v) => serde_json::from_value(v),
        }
    }
}

/// What an answer means for the call.
#[derive(Debug)]
pub(crate) enum Step {
    /// The call's result.
    Done(Reply),
    /// The server asks for input first: answer each request (by key), then send the request
    /// again with the answers and `state` (see [`Rounds`]).
    Input {
        /// The server's input requests, by key.
        requests: Map<String, Value>,
        /// Its `requestState`, sent back as it came.
        state: Option<Value>,
    },
    /// The server made the call a task (the tasks extension): the task as it came.
    Task(Value),
}

/// Why an answer is refused.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// It is not JSON of a result.
    Malformed(serde_json::Error),
    /// It breaks the era's rules: what is wrong, in words.
    Protocol(String),
}

/// What to do after a request failed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Nothing: the failure is the call's.
    No,
    /// Send it again with a new id (a broken reply of a stateless server).
    Reissue,
    /// List the tools again (their headers changed), then send it again.
    Relist,
}

/// The retries one call has used (each at most once).
#[derive(Debug, Default)]
pub(crate) struct Retried {
    reissued: bool,
    relisted: bool,
}

/// An operation whose form differs by era.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Op<'a> {
    /// `ping`.
    Ping,
    /// The lowest level of the server's log messages.
    SetLevel(LoggingLevel),
    /// Updates of a resource.
    Subscribe(&'a str),
    /// No more updates of a resource.
    Unsubscribe(&'a str),
    /// The client's roots changed.
    RootsChanged,
}

/// What an operation takes in this era.
#[derive(Debug, PartialEq)]
pub(crate) enum Action {
    /// A request; its result is only checked to be JSON.
    Request(&'static str, Option<Value>),
    /// A notification without params.
    Notify(&'static str),
    /// A `subscriptions/listen` kept open under `key`, asking for `notifications`; its
    /// acknowledgement must grant `grant`.
    Listen {
        key: String,
        notifications: Value,
        grant: Grant,
    },
    /// The listen kept under the key ends.
    EndListen(String),
    /// Nothing goes on the wire (what the era needs is kept for later requests).
    Nothing,
    /// The era has no such operation: the method bare.
    Unsupported(&'static str),
}

/// What a listen's acknowledgement must grant.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Grant {
    /// Whatever it says.
    Any,
    /// The subscription to this resource.
    Resource(String),
}

impl Grant {
    /// Whether the acknowledgement `ack` grants it.
    pub(crate) fn granted(&self, ack: &Value) -> bool {
        match self {
            Grant::Any => true,
            Grant::Resource(uri) => ack
                .get("notifications")
                .unwrap_or(ack)
                .get("resourceSubscriptions")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|u| u.as_str() == Some(uri))),
        }
    }
}

/// The requests of one call: its params, how many input rounds there were, and the answers the
/// next request carries.
#[derive(Debug)]
pub(crate) struct Rounds {
    params: Option<Value>,
    /// The request may be sent again (modern era): each request sends a copy of the params.
    again: bool,
    max: usize,
    done: usize,
    answers: Option<(Map<String, Value>, Option<Value>)>,
}

impl Rounds {
    /// Whether the call may take more than one request (modern era: input rounds, a request
    /// sent again); a legacy call is one request.
    pub(crate) fn may_resend(&self) -> bool {
        self.again
    }

    /// The params of the next request of the call: the call's, with the last round's
    /// `inputResponses` and `requestState`. In the legacy era, sent once, they are not copied.
    pub(crate) fn params(&mut self) -> Option<Value> {
        if !self.again {
            return self.params.take();
        }
        let Some((responses, state)) = &self.answers else {
            return self.params.clone();
        };
        let mut p = match &self.params {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        p.insert("inputResponses".into(), Value::Object(responses.clone()));
        if let Some(state) = state {
            p.insert("requestState".into(), state.clone());
        }
        Some(Value::Object(p))
    }

    /// Counts a round the server asked for; what is wrong when it asked once too often.
    ///
    /// # Errors
    /// The detail of the protocol error when the rounds are used up.
    pub(crate) fn begin(&mut self, method: &str) -> Result<(), String> {
        self.done += 1;
        if self.done > self.max {
            return Err(format!(
                "`{method}` still asked for input after {} rounds (`max_input_rounds`)",
                self.max
            ));
        }
        Ok(())
    }

    /// The round's answers, sent with the next request.
    pub(crate) fn answered(&mut self, responses: Map<String, Value>, state: Option<Value>) {
        self.answers = Some((responses, state));
    }
}

impl Wire {
    /// The legacy era before the handshake: nothing added.
    pub(crate) fn legacy() -> Wire {
        Wire::Legacy(None)
    }

    /// The requests of a call with `params`, with at most `max` input rounds
    /// (`Limits::max_input_rounds`).
    pub(crate) fn rounds(&self, params: Option<Value>, max: usize) -> Rounds {
        Rounds {
            params,
            again: matches!(self, Wire::Modern(_)),
            max,
            done: 0,
            answers: None,
        }
    }

    /// Whether a `tools/call` may be made a task by the legacy `tasks` capability in `caps`
    /// (task-augmented `tools/call`); the modern era has the tasks extension instead, where
    /// the server decides.
    pub(crate) fn augments_tool_calls(&self, caps: &ServerCapabilities) -> bool {
        matches!(self, Wire::Legacy(_)) && caps.has_task_tool_calls()
    }

    /// The era spoken.
    pub(crate) fn era(&self) -> ProtocolEra {
        match self {
            Wire::Legacy(_) => ProtocolEra::Legacy,
            Wire::Modern(_) => ProtocolEra::Modern,
        }
    }

    /// The modern state, for the `server/discover` handshake.
    pub(crate) fn modern_mut(&mut self) -> Option<&mut Modern> {
        match self {
            Wire::Modern(m) => Some(m.as_mut()),
            Wire::Legacy(_) => None,
        }
    }

    /// `server/discover`'s result, in the modern era.
    pub(crate) fn discover_result(&self) -> Option<&DiscoverResult> {
        match self {
            Wire::Modern(m) => m.discover.as_ref(),
            Wire::Legacy(_) => None,
        }
    }

    /// `Some(offered)` in the modern era, where tasks are an extension: whether the server
    /// offers it. `None` in the legacy era, where the `tasks` capability says it.
    pub(crate) fn tasks_extension(&self) -> Option<bool> {
        match self {
            Wire::Modern(m) => Some(m.tasks),
            Wire::Legacy(_) => None,
        }
    }

    /// A request as it goes on the wire; its HTTP headers only `with_headers` (a transport
    /// that sends none needs none built). A legacy request carries none of its own: it is
    /// sent with the session's version, which the transport keeps from the end of the
    /// handshake (see [`notification_headers`](Self::notification_headers)).
    pub(crate) fn prepare(
        &self,
        method: &str,
        params: Option<Value>,
        with_headers: bool,
    ) -> Prepared {
        match self {
            Wire::Legacy(_) => Prepared {
                params,
                headers: Vec::new(),
            },
            Wire::Modern(m) => {
                let params = era::with_meta(params, &m.meta());
                let headers = if with_headers {
                    m.headers(method, &params)
                } else {
                    Vec::new()
                };
                Prepared {
                    params: Some(params),
                    headers,
                }
            }
        }
    }

    /// The headers of a notification: in the legacy era the negotiated version, which the one
    /// that ends the handshake (`notifications/initialized`) gives the session.
    pub(crate) fn notification_headers(&self) -> Vec<(String, String)> {
        match self {
            Wire::Legacy(version) => version_header(version.as_deref()),
            // A modern notification carries no `_meta`, so no header says what it is.
            Wire::Modern(_) => Vec::new(),
        }
    }

    /// What the answer to `method` means. `max_echo` caps what an error quotes of it.
    ///
    /// # Errors
    /// A [`Refusal`] of an answer this client cannot use.
    pub(crate) fn read(
        &self,
        method: &str,
        answer: Payload,
        max_echo: usize,
    ) -> Result<Step, Refusal> {
        let Wire::Modern(m) = self else {
            return Ok(Step::Done(Reply::Raw(answer)));
        };
        let mut value: Value = answer.parse().map_err(Refusal::Malformed)?;
        let kind = match value.get("resultType") {
            None => "complete".to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        };
        match kind.as_str() {
            "complete" => {
                if let Value::Object(o) = &mut value {
                    o.remove("resultType");
                }
                Ok(Step::Done(Reply::Value(value)))
            }
            // The tasks extension: kept whole (`resultType` included) for the caller.
            "task" if method == "tools/call" && m.tasks => Ok(Step::Task(value)),
            "task" => Err(Refusal::Protocol(format!(
                "`{method}` answered with a task, which this client did not ask for"
            ))),
            "input_required" if MRTR_METHODS.contains(&method) => {
                let requests = match value.get_mut("inputRequests").map(Value::take) {
                    Some(Value::Object(r)) => r,
                    _ => Map::new(),
                };
                let state = value.get_mut("requestState").map(Value::take);
                Ok(Step::Input { requests, state })
            }
            "input_required" => Err(Refusal::Protocol(format!(
                "`{method}` asked for input, which only `tools/call`, `prompts/get` and \
                 `resources/read` may do"
            ))),
            other => Err(Refusal::Protocol(format!(
                "`{method}` answered with the result type `{}`, which this client does not know",
                echo(other, max_echo)
            ))),
        }
    }

    /// What to do after `method` failed with `e`. `reissuable`: the connection is still open
    /// and its requests are independent HTTP exchanges, so a broken one may be sent again.
    pub(crate) fn retry(
        &self,
        method: &str,
        e: &Error,
        reissuable: bool,
        tried: &mut Retried,
    ) -> Retry {
        if let Wire::Legacy(_) = self {
            return Retry::No;
        }
        match e {
            Error::Closed { .. } | Error::Transport { status: None, .. }
                if reissuable && !tried.reissued =>
            {
                tried.reissued = true;
                Retry::Reissue
            }
            Error::Rpc { code, .. }
                if code.0 == era::HEADER_MISMATCH && method == "tools/call" && !tried.relisted =>
            {
                tried.relisted = true;
                Retry::Relist
            }
            _ => Retry::No,
        }
    }

    /// What `op` takes in this era.
    pub(crate) fn operation(&self, op: Op<'_>) -> Action {
        match (self, op) {
            (Wire::Legacy(_), Op::Ping) => Action::Request("ping", None),
            (Wire::Modern(_), Op::Ping) => Action::Unsupported("ping"),
            (Wire::Legacy(_), Op::SetLevel(level)) => {
                Action::Request("logging/setLevel", Some(json!({ "level": level })))
            }
            (Wire::Modern(m), Op::SetLevel(level)) => {
                *write_lock(&m.log_level) = Some(level);
                Action::Nothing
            }
            (Wire::Legacy(_), Op::Subscribe(uri)) => {
                Action::Request("resources/subscribe", Some(json!({ "uri": uri })))
            }
            (Wire::Modern(_), Op::Subscribe(uri)) => Action::Listen {
                key: uri.to_owned(),
                notifications: json!({ "resourceSubscriptions": [uri] }),
                grant: Grant::Resource(uri.to_owned()),
            },
            (Wire::Legacy(_), Op::Unsubscribe(uri)) => {
                Action::Request("resources/unsubscribe", Some(json!({ "uri": uri })))
            }
            (Wire::Modern(_), Op::Unsubscribe(uri)) => Action::EndListen(uri.to_owned()),
            (Wire::Legacy(_), Op::RootsChanged) => {
                Action::Notify("notifications/roots/list_changed")
            }
            // The notification does not exist: the server asks for the roots when it needs them.
            (Wire::Modern(_), Op::RootsChanged) => Action::Nothing,
        }
    }

    /// Right after connecting, with notification handlers installed: the listen that brings
    /// the list changes the server announces (modern era; the legacy era's stream brings them
    /// unasked).
    pub(crate) fn list_changes(&self, caps: &ServerCapabilities) -> Option<Action> {
        let Wire::Modern(_) = self else {
            return None;
        };
        let mut asked = Map::new();
        let announced = [
            (
                caps.tools.as_ref().and_then(|t| t.list_changed),
                "toolsListChanged",
            ),
            (
                caps.prompts.as_ref().and_then(|p| p.list_changed),
                "promptsListChanged",
            ),
            (
                caps.resources.as_ref().and_then(|r| r.list_changed),
                "resourcesListChanged",
            ),
        ];
        for (changes, key) in announced {
            if changes == Some(true) {
                asked.insert(key.into(), json!(true));
            }
        }
        (!asked.is_empty()).then(|| Action::Listen {
            key: LIST_CHANGES.to_owned(),
            notifications: Value::Object(asked),
            grant: Grant::Any,
        })
    }

    /// A `tools/list` page as the era keeps it: in the modern era the `x-mcp-header`
    /// parameters of its tools are recorded, and a tool whose annotations are invalid is left
    /// out (it could not be called correctly over HTTP), with a warning naming `server`.
    pub(crate) fn keep_tools(&self, server: &str, page: &mut Reply) {
        let (Wire::Modern(m), Reply::Value(v)) = (self, page) else {
            return;
        };
        if let Some(Value::Array(tools)) = v.get_mut("tools") {
            m.check_tools(server, tools);
        }
    }
}

/// `MCP-Protocol-Version` when a version was negotiated.
fn version_header(version: Option<&str>) -> Vec<(String, String)> {
    version
        .map(|v| vec![("MCP-Protocol-Version".to_owned(), v.to_owned())])
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
