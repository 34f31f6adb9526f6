//! The Hub: three fixture servers for one host program, one of them broken.
//!
//! | step | what it shows |
//! |---|---|
//! | discovery | which servers a few queries pick (TF cosine over name + description) |
//! | first run | parallel connect; discovery on the run's query; the broken server in the failed list |
//! | collision | both working servers offer `echo`: offered as `files__echo` and `github__echo`, routed |
//! | allow-list | a run's `tools` setting keeps only the named tools |
//! | export | the tool list as OpenAI Chat, OpenAI Responses (with a hosted server) and Anthropic JSON |
//! | status note | the paragraph a host puts in its system prompt when servers are unavailable |
//! | retry | a failed server is retried on later runs after its backoff, or now by `connect_all` |
//! | disconnect | every process closed, the poller stopped |
//!
//! Run with `cargo run --example hub` (`RUST_LOG=warn` shows the Hub's warnings).

mod support;

use std::process::ExitCode;

use mcp_blocking::config::HostedMcpServer;
use mcp_blocking::hub::{Run, ServerDiscovery, Setting};
use mcp_blocking::{Hub, ServerConfig};
use serde_json::json;

fn main() -> ExitCode {
    support::main(run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let servers = vec![
        support::fixture_server("files", &["--extra-tools", "1"])?
            .with_env("HUB_FIXTURE_NAME", "files")
            .with_description("Read and write local files"),
        support::fixture_server("github", &["--extra-tools", "2"])?
            .with_env("HUB_FIXTURE_NAME", "github")
            .with_description("GitHub repos, issues and pull requests, with their files"),
        support::fixture_server("tracker", &["--crash-on-start"])?
            .with_description("Search the issue tracker"),
    ];

    println!("== discovery (no connections) ==");
    for query in [
        "open issues on github",
        "read the local config file",
        "install imagemagick",
    ] {
        let picked = ServerDiscovery::select(query, &servers, ServerDiscovery::DEFAULT_THRESHOLD);
        let names: Vec<&str> = picked.iter().map(ServerConfig::name).collect();
        println!("  {query:<30} -> {names:?}");
    }

    let hub = Hub::builder().servers(servers).discovery(true).build();

    println!("\n== first run: \"read files from github issues\" ==");
    let set = hub.resolve(&Run::new().query("read files from github issues"));
    println!("  connected: {:?}", hub.connected_servers());
    println!("  skipped by discovery: {:?}", set.skipped);
    for failure in &set.failed {
        let first_line = failure.reason.lines().next().unwrap_or_default();
        println!("  failed: {} ({first_line})", failure.server);
    }
    println!(
        "  {} tools offered; the echo-like ones and where they route:",
        set.tools.len()
    );
    for t in set
        .tools
        .iter()
        .filter(|t| t.tool.name.contains("echo") || t.tool.name.starts_with("gen_"))
    {
        println!("    {:<14} -> {}::{}", t.name, t.server, t.tool.name);
    }

    println!("\n== collision routing ==");
    for tool in ["files__env", "github__env"] {
        let who = hub.call_tool(tool, json!({"name": "HUB_FIXTURE_NAME"}))?;
        println!("  {tool:<12} answered by {}", who.text());
    }
    let gen1 = hub.call_tool("gen_1", json!({"text": "only github has gen_1"}))?;
    println!("  gen_1        -> {}", gen1.text());

    println!("\n== allow-list: tools = [echo, gen_1] ==");
    let narrow = hub.resolve(&Run::new().tools(Setting::list(["echo", "gen_1"])));
    println!("  offered: {:?}", narrow.names());

    println!("\n== export ==");
    println!(
        "  OpenAI Chat:\n{}",
        serde_json::to_string_pretty(&narrow.to_openai_chat())?
    );
    let docs = HostedMcpServer::new("docs", "https://example.com/mcp");
    println!(
        "  OpenAI Responses (with a hosted server):\n{}",
        serde_json::to_string_pretty(&narrow.to_openai_responses(&[docs]))?
    );
    println!(
        "  Anthropic:\n{}",
        serde_json::to_string_pretty(&narrow.to_anthropic())?
    );

    println!("\n== status note ==");
    println!("  {}", hub.status_note().unwrap_or_default());

    println!("\n== retry ==");
    let attempts = |hub: &Hub| {
        hub.failures()
            .iter()
            .map(|f| f.attempts)
            .collect::<Vec<_>>()
    };
    let again = hub.resolve(&Run::new());
    println!(
        "  a run right away: failed {:?}, attempts {:?} (waiting out the 500 ms backoff)",
        again.failed_server_names(),
        attempts(&hub)
    );
    hub.connect_all();
    println!(
        "  connect_all (ignores the backoff): attempts {:?}",
        attempts(&hub)
    );

    hub.disconnect();
    println!("\ndisconnected: {:?} connected", hub.connected_servers());
    Ok(())
}
