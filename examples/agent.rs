//! An agent: a model and two MCP servers' tools in one blocking loop.
//!
//! With no environment set, the model is a scripted one on loopback (it calls `add`, then
//! `echo`, then answers with what the tools said), so this runs anywhere with no key:
//!
//! ```text
//! cargo run --example agent
//! ```
//!
//! With `OPENAI_BASE_URL` and/or `OPENAI_API_KEY` set, it talks to that endpoint instead
//! (`OPENAI_MODEL` names the model, default `gpt-4o-mini`):
//!
//! ```text
//! OPENAI_API_KEY=sk-... cargo run --example agent
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=llama3.2 cargo run --example agent
//! ```
//!
//! An argument replaces the question. The two servers are fixture servers (this executable,
//! started again), named `math` and `notes`. They offer the same tools, so their names are
//! prefixed (`math__add`); `notes` also offers `notes.search`, offered as `notes_search`. The
//! agent's allow-list keeps three tools.

mod support;

use std::process::ExitCode;

use mcp_blocking::agent::{Agent, AgentEvent, Model, OpenAiChat};
use mcp_blocking::Hub;
use mcp_fixture_server::scripted_model::{call, call_containing, calls, ScriptedModel, Step};
use serde_json::json;

fn main() -> ExitCode {
    support::main(run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "What is 17 + 25? Use the add tool, then echo the sum.".into());
    let hub = Hub::new([
        support::fixture_server("math", &[])?.with_description("add numbers"),
        support::fixture_server("notes", &["--extra-tool", "notes.search"])?
            .with_description("search notes"),
    ]);

    let base_url = std::env::var("OPENAI_BASE_URL").ok();
    let key = std::env::var("OPENAI_API_KEY").ok();
    // Kept alive for the whole run when used.
    let mut scripted = None;
    let model: Box<dyn Model> = if base_url.is_some() || key.is_some() {
        let name = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into());
        let mut m = OpenAiChat::new(&name);
        if let Some(url) = &base_url {
            m = m.base_url(url);
        }
        if let Some(k) = key {
            m = m.api_key(k);
        }
        println!(
            "model: {name} at {}",
            base_url.as_deref().unwrap_or(OpenAiChat::DEFAULT_BASE_URL)
        );
        Box::new(m)
    } else {
        let server = ScriptedModel::start(vec![
            Step::Call(
                "I'll add the numbers first.".into(),
                vec![call("math__add", json!({"a": 17, "b": 25}))],
            ),
            // Two calls in one turn: they run in parallel.
            calls(vec![
                call("math__echo", json!({"text": "17 + 25 = 42"})),
                call_containing("search", json!({"text": "sums"})),
            ]),
            Step::Summary("Done. The tools said: ".into()),
        ])?;
        let m = OpenAiChat::new("scripted").base_url(&server.base_url());
        println!(
            "model: scripted, at {} (set OPENAI_BASE_URL or OPENAI_API_KEY for a real one)",
            server.base_url()
        );
        scripted = Some(server);
        Box::new(m)
    };

    let mut agent = Agent::new(&hub, model)
        .system_prompt("You are a careful assistant. Use the tools; answer in one sentence.")
        // Only these reach the model (offered or server names): `notes.search` is offered as
        // `notes_search`, since the APIs allow no dots in tool names.
        .allow_tools(["math__add", "math__echo", "notes.search"])
        .max_turns(6)
        .on_event(|e| match e {
            AgentEvent::ModelText { turn, text } => {
                println!("  [turn {turn}] model: {}", text.replace('\n', " / "))
            }
            AgentEvent::ToolCallStarted {
                turn,
                server,
                tool,
                arguments,
                ..
            } => {
                println!("  [turn {turn}] -> {server}/{tool} {arguments}")
            }
            AgentEvent::ToolCallFinished {
                turn,
                server,
                tool,
                is_error,
                output,
                elapsed,
                ..
            } => {
                let outcome = if *is_error { "error" } else { "ok" };
                println!(
                    "  [turn {turn}] <- {server}/{tool} {outcome} ({} ms): {output}",
                    elapsed.as_millis()
                )
            }
            _ => {}
        });

    println!("user: {question}");
    let out = agent.run(&question)?;
    println!("answer: {}", out.text.replace('\n', "\n        "));
    println!(
        "{} turns, {} tool calls, {} tokens ({} in, {} out)",
        out.turns,
        out.tool_calls.len(),
        out.usage.total(),
        out.usage.input_tokens,
        out.usage.output_tokens
    );
    if let Some(server) = &scripted {
        // The scripted model checked every request it got (names, one result per call id).
        let v = server.violations();
        if !v.is_empty() {
            return Err(format!("the model saw broken requests: {v:?}").into());
        }
    }
    hub.disconnect();
    Ok(())
}
