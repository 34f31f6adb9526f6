//! The model endpoint under the same stalls, for each API the agent speaks: every request
//! must end within [`HttpOptions::timeout`] + 1 s with [`ModelError::Timeout`], a retry not
//! starting the deadline again: every request stalls, or (`retry` cells) the first is answered
//! 503 late and the retry stalls; each whole and streamed (`stream` cells: the answer is read
//! as server-sent events, under the same deadline).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_blocking::agent::{
    Agent, AgentError, AnthropicMessages, HttpOptions, Model, ModelError, OpenAiChat,
    OpenAiResponses,
};
use mcp_blocking::{Hub, ServerConfig};
use serde_json::json;

use super::fault_support::endpoint::{EndpointPeer, Handler, Reply, Req};
use super::fault_support::{wire, Plan, Stall};
use super::{Outcome, SLACK, STALLS};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Api {
    OpenAiChat,
    OpenAiResponses,
    Anthropic,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct ModelCell {
    api: Api,
    s: Stall,
    /// The first request is answered 503 after [`RETRY_AFTER`], the retry stalls.
    retry: bool,
    /// The agent asks for a streamed answer (`Agent::stream`).
    stream: bool,
}

impl ModelCell {
    pub(super) fn name(&self) -> String {
        let retry = if self.retry { "/retry" } else { "" };
        let stream = if self.stream { "/stream" } else { "" };
        format!("model/{:?}{stream}{retry}/{:?}", self.api, self.s).to_lowercase()
    }

    fn timeout(&self) -> Duration {
        if self.retry {
            RETRY_TIMEOUT
        } else {
            MODEL_TIMEOUT
        }
    }
}

/// The model's request timeout in these cells.
pub(super) const MODEL_TIMEOUT: Duration = Duration::from_secs(1);
/// The model's request timeout in the `retry` cells: what is left of it after [`RETRY_AFTER`]
/// is shorter than it by more than [`SLACK`], so a retry that starts the deadline again
/// overshoots the bound.
const RETRY_TIMEOUT: Duration = Duration::from_millis(2500);
/// How long the first request of a `retry` cell takes before its 503.
const RETRY_AFTER: Duration = Duration::from_millis(1500);

/// [`model_handler`], but the first request takes [`RETRY_AFTER`] and is answered 503.
fn failing_once() -> Handler {
    let answered = AtomicUsize::new(0);
    let ok = model_handler();
    Arc::new(move |req: &Req, origin: &str| {
        if answered.fetch_add(1, Ordering::SeqCst) > 0 {
            return ok(req, origin);
        }
        // A server that takes its time, then fails (the peer's delay, not a synchronisation).
        std::thread::sleep(RETRY_AFTER);
        Reply::json(
            "503 Service Unavailable",
            &json!({"error": {"message": "overloaded"}}),
        )
    })
}

pub(super) fn model_handler() -> Handler {
    Arc::new(|req: &Req, _origin: &str| {
        let body = if req.path.ends_with("/chat/completions") {
            json!({"id": "c-1", "object": "chat.completion", "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "hello there"}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
        } else if req.path.ends_with("/responses") {
            json!({"id": "r-1", "object": "response", "status": "completed", "model": "m",
                "output": [{"type": "message", "role": "assistant", "id": "m-1",
                            "content": [{"type": "output_text", "text": "hello there"}]}],
                "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}})
        } else {
            json!({"id": "m-1", "type": "message", "role": "assistant", "model": "m",
                "content": [{"type": "text", "text": "hello there"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1}})
        };
        Reply::json("200 OK", &body)
    })
}

pub(super) fn model_route(req: &Req) -> Option<&'static str> {
    (req.method == "POST").then_some("model")
}

pub(super) fn run_model_cell(cell: &ModelCell) -> Outcome {
    let (plan, handler) = if cell.retry {
        (Plan::new(("model", 2), cell.s), failing_once())
    } else {
        let mut plan = Plan::new(("model", 1), cell.s);
        // Every request stalls: a retry must not start the deadline again.
        plan.stall_every = true;
        (plan, model_handler())
    };
    let peer = EndpointPeer::start(plan, model_route, handler);
    let bound = cell.timeout() + SLACK;
    let mut o = HttpOptions::default();
    o.timeout = cell.timeout();
    o.base_delay = Duration::from_millis(10);
    let base = peer.origin();
    let model: Box<dyn Model> = match cell.api {
        Api::OpenAiChat => Box::new(
            OpenAiChat::new("m")
                .base_url(&format!("{base}/v1"))
                .api_key("sk-test-key")
                .http_options(o),
        ),
        Api::OpenAiResponses => Box::new(
            OpenAiResponses::new("m")
                .base_url(&format!("{base}/v1"))
                .api_key("sk-test-key")
                .http_options(o),
        ),
        Api::Anthropic => Box::new(
            AnthropicMessages::new("m")
                .base_url(&base)
                .api_key("sk-test-key")
                .http_options(o),
        ),
    };
    let hub = Hub::new(Vec::<ServerConfig>::new());
    let started = Instant::now();
    let r = Agent::new(&hub, model).stream(cell.stream).run("hello");
    let took = started.elapsed();
    hub.disconnect();
    let outcome = match r {
        Ok(out) => Err(format!("answered {:?} after {took:?}", out.text)),
        Err(AgentError::Model {
            source: ModelError::Timeout { .. },
            ..
        }) if took <= bound => Ok(took),
        Err(AgentError::Model {
            source: ModelError::Timeout { .. },
            ..
        }) => Err(format!("timed out after {took:?}, more than {bound:?}")),
        Err(e) => Err(format!("not a model timeout after {took:?}: {e:?}")),
    };
    let left = wire::wait(SLACK, &mut || peer.shared.open_connections() == 0);
    drop(peer);
    match (outcome, left) {
        (Ok(d), true) => Ok(d),
        (Ok(_), false) => Err("a connection to the model is still open".into()),
        (Err(e), _) => Err(e),
    }
}

pub(super) fn model_cells() -> Vec<ModelCell> {
    let mut cells = Vec::new();
    for api in [Api::OpenAiChat, Api::OpenAiResponses, Api::Anthropic] {
        for stream in [false, true] {
            for retry in [false, true] {
                for s in STALLS {
                    cells.push(ModelCell {
                        api,
                        s,
                        retry,
                        stream,
                    });
                }
            }
        }
    }
    cells
}
