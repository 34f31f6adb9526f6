//! Measures what tool search saves, printing a table: the bytes of tool definitions in each
//! request (the `tools` array of the OpenAI Chat body, as a scripted model on loopback received
//! it) for a Hub of 50 in-process servers × 30 tools, with and without
//! [`ToolSearch`](mcp_blocking::agent::ToolSearch), and how long one search takes.
//!
//! | row | what is measured |
//! |---|---|
//! | plain, request 1 | every tool of the run, as an agent without tool search sends them |
//! | search, request 1 | `search_tools` only |
//! | search, request 2 | after a search: `search_tools` and the tools found |
//! | search, request 3 | after the found tool was called |
//! | one search | wall time of `search_tools` over the 1,500 tools (mean of the run's searches) |
//!
//! Run: `cargo run --release --features testing --example bench_agent_tools`.

#[path = "../tests/agent_search_catalog/mod.rs"]
mod catalog;

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_blocking::agent::{
    Agent, AgentEvent, Model, ModelError, ModelRequest, ModelResponse, OpenAiChat, ToolSearch,
};
use mcp_fixture_server::scripted_model::{call, calls, Received, ScriptedModel, Step};
use serde_json::json;

const SEARCHES: usize = 20;

fn chat(model: &ScriptedModel) -> OpenAiChat {
    OpenAiChat::new("scripted")
        .base_url(&model.base_url())
        .api_key("sk-bench")
}

/// A model that notes when each answer arrived: the search runs right after, and its event
/// marks its end.
struct Timed {
    inner: OpenAiChat,
    answered: Arc<Mutex<Option<Instant>>>,
}

impl Model for Timed {
    fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let r = self.inner.complete(request);
        *self.answered.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        r
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench_agent_tools: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let (hub, _servers) = catalog::hub();
    let model = ScriptedModel::start(vec![Step::Text("plain".into())])?;
    Agent::new(&hub, chat(&model)).run("Refund the last charge of order 42")?;
    let plain = model.requests();

    let mut steps = vec![
        calls(vec![call(
            "search_tools",
            json!({"query": "refund a stripe charge"}),
        )]),
        calls(vec![call("create_refund", json!({"name": "order 42"}))]),
    ];
    // More searches, to time them.
    for _ in 1..SEARCHES {
        steps.push(calls(vec![call(
            "search_tools",
            json!({"query": "list open pull requests of a repository"}),
        )]));
    }
    steps.push(Step::Text("done".into()));
    let model = ScriptedModel::start(steps)?;
    let answered = Arc::new(Mutex::new(None::<Instant>));
    let times = Arc::new(Mutex::new(Vec::<Duration>::new()));
    let (a, t) = (Arc::clone(&answered), Arc::clone(&times));
    let timed = Timed {
        inner: chat(&model),
        answered,
    };
    let mut agent = Agent::new(&hub, timed)
        .tool_search(ToolSearch::new())
        .max_turns(SEARCHES + 2)
        .on_event(move |e| {
            if let AgentEvent::ToolsFound { .. } = e {
                let at = a.lock().unwrap_or_else(|p| p.into_inner()).take();
                if let Some(at) = at {
                    t.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(at.elapsed());
                }
            }
        });
    let out = agent.run("Refund the last charge of order 42")?;
    let search = model.requests();
    let bytes = |r: &Received| catalog::tool_bytes(&r.body);
    let p = bytes(&plain[0]);
    let rows = [
        ("plain, request 1", &plain[0]),
        ("search, request 1", &search[0]),
        ("search, request 2", &search[1]),
        ("search, request 3", &search[2]),
    ];
    println!("| request | tools offered | bytes of tool definitions | share of plain |");
    println!("|---|---:|---:|---:|");
    for (what, r) in rows {
        let b = bytes(r);
        println!(
            "| {what} | {} | {b} | {:.3}% |",
            r.tool_names().len(),
            b as f64 * 100.0 / p as f64
        );
    }
    let times = times.lock().unwrap_or_else(|p| p.into_inner());
    let mean = times.iter().sum::<Duration>() / u32::try_from(times.len().max(1))?;
    println!(
        "\nOne search over {} tools: {:.2} ms (mean of {}).",
        hub.tools().len(),
        mean.as_secs_f64() * 1000.0,
        times.len()
    );
    println!(
        "The model reached `{}` on server `{}` through a search, in {} turns.",
        out.tool_calls[1].tool,
        out.tool_calls[1].server.as_deref().unwrap_or("?"),
        out.turns
    );
    Ok(())
}
