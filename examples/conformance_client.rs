//! The client side of the official MCP conformance suite (`@modelcontextprotocol/conformance`).
//!
//! | scenario (`MCP_CONFORMANCE_SCENARIO`)   | what this client does                                          |
//! |-----------------------------------------|----------------------------------------------------------------|
//! | `initialize`                            | connect (initialize + initialized), list tools, close          |
//! | `tools_call`                            | list tools, call `add_numbers` with `{a: 5, b: 3}`             |
//! | `elicitation-sep1034-client-defaults`   | call `test_client_elicitation_defaults`, accept with defaults  |
//! | `sse-retry`                             | call `test_reconnection` (the reply is resumed on a GET)       |
//! | anything else (auth scenarios, …)       | list tools and call the first one                              |
//!
//! Contract: the server URL is the last argument; logs go to stderr; exit 0 on success.
//!
//! ```text
//! conformance client --command "target/debug/examples/conformance_client" --scenario initialize
//! ```

use std::process::ExitCode;

use mcp_blocking::model::{ElicitParams, ElicitResult, Implementation};
use mcp_blocking::{Client, ServerConfig};
use serde_json::{json, Map, Value};

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .target(env_logger::Target::Stderr)
        .init();
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance_client <server-url>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    eprintln!("scenario `{scenario}` against {url}");
    match run(&scenario, &url) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(scenario: &str, url: &str) -> Result<(), Box<mcp_blocking::Error>> {
    let config = ServerConfig::http("conformance", url).timeout_secs(20.0);
    let client = Client::builder(config)
        .client_info(Implementation::new(
            "mcp-blocking-conformance",
            env!("CARGO_PKG_VERSION"),
        ))
        .elicitation(|_server: &str, params: ElicitParams| {
            eprintln!("elicitation: {}", params.message);
            // Accept with nothing typed in: the client fills the schema's defaults.
            Ok(ElicitResult::accept(Map::new()))
        })
        .connect()?;
    let outcome = scenario_steps(&client, scenario);
    client.close()?;
    outcome
}

fn scenario_steps(client: &Client, scenario: &str) -> Result<(), Box<mcp_blocking::Error>> {
    let tools = client.list_tools()?;
    eprintln!("{} tools", tools.len());
    let call = |name: &str, args: Value| -> Result<(), Box<mcp_blocking::Error>> {
        let r = client.call_tool(name, args)?;
        eprintln!("{name}: {}", serde_json::to_string(&r).unwrap_or_default());
        Ok(())
    };
    match scenario {
        "initialize" => Ok(()),
        "tools_call" => call("add_numbers", json!({"a": 5, "b": 3})),
        "elicitation-sep1034-client-defaults" => {
            call("test_client_elicitation_defaults", json!({}))
        }
        "sse-retry" => call("test_reconnection", json!({})),
        _ => match tools.first() {
            Some(t) => call(&t.name, json!({})),
            None => Ok(()),
        },
    }
}
