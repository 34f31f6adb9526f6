//! The main demo: spawn the bundled fixture server, list its tools, call two, read a resource.
//! The server is this example's own executable, started again with `--serve-fixture`.
//!
//! | step | what it shows |
//! |---|---|
//! | connect | spawn + `initialize` handshake, server info |
//! | list tools | pagination followed to the end |
//! | call `add` | a tool result with text and structured content |
//! | call `fail` | a tool that reports failure in its result (`isError`) |
//! | read a resource | `resources/read` |
//!
//! Run with `cargo run --example quickstart`.

mod support;

use std::process::ExitCode;

use mcp_blocking::Client;
use serde_json::json;

fn main() -> ExitCode {
    support::main(run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let config = support::fixture_server("fixture", &["--page-size", "4"])?;
    let client = Client::connect(config)?;
    let info = client.server_info().expect("connected");
    println!(
        "connected to {} {} (protocol {})",
        info.name,
        info.version,
        client.protocol_version().unwrap_or_default()
    );

    let tools = client.list_tools()?;
    println!("\n{} tools:", tools.len());
    for tool in &tools {
        println!("  {:<20} {}", tool.name, tool.description());
    }

    let sum = client.call_tool("add", json!({"a": 2, "b": 40}))?;
    println!(
        "\nadd(2, 40) -> {} (structured: {})",
        sum.text(),
        sum.structured_content.clone().unwrap_or_default()
    );

    let failed = client.call_tool("fail", json!({}))?;
    println!(
        "fail() -> is_error={} text={:?}",
        failed.failed(),
        failed.text()
    );

    let readme = client.read_resource("fixture://readme")?;
    println!(
        "\nfixture://readme has {} content block(s)",
        readme.contents.len()
    );

    client.close()?;
    println!("\nclosed cleanly");
    Ok(())
}
