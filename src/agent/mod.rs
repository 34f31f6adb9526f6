//! A model and the Hub's MCP tools in one blocking loop: the [`Model`] trait, three built-in
//! models ([`OpenAiChat`], [`AnthropicMessages`], [`OpenAiResponses`]) and the [`Agent`] that
//! runs the loop.
//!
//! ```no_run
//! use mcp_blocking::{Hub, ServerConfig};
//! use mcp_blocking::agent::{Agent, OpenAiChat};
//! let hub = Hub::new([ServerConfig::stdio("everything", "npx")
//!     .with_args(["-y", "@modelcontextprotocol/server-everything"])]);
//! let model = OpenAiChat::new("gpt-4o-mini").api_key_from_env("OPENAI_API_KEY")?;
//! let mut agent = Agent::new(&hub, model).system_prompt("You are terse.");
//! let reply = agent.run("What is 2 + 3? Use the tools.")?;
//! println!("{} ({} turns, {} tokens)", reply.text, reply.turns, reply.usage.total());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The loop
//!
//! ```text
//!  run(message) ── hub.resolve(query = message, run-level allow-list)   discovery: first run only
//!     │            system = prompt + servers' instructions (opt-in) + skills (added, opt-in)
//!     │                     + unavailable-tools note
//!     └─ turn 1..=max_turns:  model.complete(system, conversation, tools)
//!          │                  tools: all of the run's, or with ToolSearch: search_tools +
//!          │                         pinned + found/used (found by a search: from next turn)
//!          ├─ no tool call ────────────────> Ok(RunOutput { text, turns, tool_calls, usage })
//!          └─ tool calls (at most max_tool_calls_per_turn run) ── approval (the hook;
//!                 without one, the servers' policies) ── a pool of at most
//!                 max_parallel_tool_calls named threads (per-call timeout)
//!                 └─ one result per call id, in the model's order, errors as text, each
//!                    cut to max_tool_result_bytes with a notice ─> next turn
//!     max_turns reached ──> Err(AgentError::TurnLimit { transcript, .. })
//! ```
//!
//! Names the model sees are the Hub's offered names, which always match the APIs' rule
//! `^[a-zA-Z0-9_-]{1,64}$` (see [`CollisionPolicy`](crate::hub::CollisionPolicy)); a call is
//! routed back to its server and the server's own tool name.
//!
//! Tool failures never end a run: a JSON-RPC error, an `isError` result, an unknown tool,
//! arguments that are not a JSON object, a declined approval and a timeout all go back to the
//! model as the text of that call's result, so it can try again or explain.
//!
//! # Streaming and cancelling
//!
//! With [`Agent::stream`], the built-in models ask for streamed answers and each piece of text
//! and of a tool call's arguments reaches [`Agent::on_event`] as an
//! [`AgentEvent::ModelDelta`] as it arrives (the turn's whole text follows as
//! [`AgentEvent::ModelText`]). [`Agent::cancel_handle`] stops a run at once, interrupting the
//! model request in flight and cancelling the tool calls in flight.

mod anthropic;
mod approval;
mod budget;
mod cancel;
mod content;
mod hosted;
mod http;
#[cfg(test)]
mod http_tests;
mod openai_chat;
mod openai_responses;
mod runner;
mod search;
mod skills;
mod stream;
mod types;

pub use anthropic::AnthropicMessages;
pub use approval::{ApprovalDecision, ToolApproval};
pub use cancel::CancelHandle;
pub use http::{ApiKey, HttpOptions};
pub use openai_chat::OpenAiChat;
pub use openai_responses::OpenAiResponses;
pub use runner::{Agent, AgentError, AgentEvent, RunOutput, ToolCallRecord};
pub use search::ToolSearch;
pub use types::{
    ApprovalRequest, AssistantMessage, DeltaSink, Message, Model, ModelDelta, ModelError,
    ModelRequest, ModelResponse, ModelSettings, Part, RawMessage, ToolCall, ToolResultMessage,
    Usage,
};

/// The name a built-in tool of the agent (the tool search, the skill file tool) is offered by:
/// `base`, or when `used` says a tool of the run has it, `base_2` (or the next free number),
/// so that the server's tool keeps its name.
fn free_name(base: &str, used: impl Fn(&str) -> bool) -> String {
    let mut name = base.to_owned();
    let mut n = 2;
    while used(&name) {
        name = format!("{base}_{n}");
        n += 1;
    }
    name
}
