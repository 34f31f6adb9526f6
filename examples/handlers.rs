//! Handlers for the traffic a server starts: sampling, elicitation, roots and notifications,
//! against the bundled fixture server (this example's own executable, started again with
//! `--serve-fixture`).
//!
//! | step | what it shows |
//! |---|---|
//! | connect | `Client::builder` with `.sampling(..)`, `.elicitation(..)`, `.roots(..)`, `.on_notification(..)`; the capabilities that declares |
//! | call `sample` | the server asks for a completion (`sampling/createMessage`); the sampling handler answers |
//! | call `sample`, refused | a `HandlerError` goes back to the server as a JSON-RPC error |
//! | call `elicit` | the server asks the user (`elicitation/create`); the handler accepts, the schema's default fills the field left out |
//! | call `roots` | the server asks for `roots/list`; the client answers with the builder's roots |
//! | `set_roots` | new roots and `notifications/roots/list_changed`; the next `roots/list` sees them |
//! | call `log`, `notify_list_changed` | notifications reach the notification handler, which hands them to the main thread |
//! | call `progress` | progress of one call, through `CallOptions::on_progress` |
//!
//! Handlers run on the client's dispatcher thread while the call that caused them waits.
//!
//! Run with `cargo run --example handlers`.

mod support;

use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use mcp_blocking::handler::{HandlerError, Notification};
use mcp_blocking::model::{CreateMessageResult, ElicitResult, Root};
use mcp_blocking::{CallOptions, Client};
use serde_json::{json, Value};

fn main() -> ExitCode {
    support::main(run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    // The notification handler runs on the dispatcher thread; it passes a line to the main thread,
    // which prints it in order with the rest.
    let (notes, noted) = mpsc::channel::<String>();
    let client = Client::builder(support::fixture_server("fixture", &[])?)
        .sampling(|server, params| {
            let prompt = params.messages.last().map(|m| m.text()).unwrap_or_default();
            println!(
                "  [sampling] {server} asks for at most {} tokens: {prompt:?}",
                params.max_tokens
            );
            if prompt.contains("secret") {
                return Err(HandlerError::rejected("the user declined to share secrets"));
            }
            // A stand-in for a model.
            let reply = format!(
                "{} characters, {} words",
                prompt.len(),
                prompt.split_whitespace().count()
            );
            Ok(CreateMessageResult::text("word-counter", reply).with_stop_reason("endTurn"))
        })
        .elicitation(|server, params| {
            let fields = params
                .requested_schema
                .as_ref()
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default();
            println!(
                "  [elicitation] {server} asks {:?} for {fields:?}; the user fills in `age` only",
                params.message
            );
            let mut answer = serde_json::Map::new();
            answer.insert("age".into(), json!(42));
            Ok(ElicitResult::accept(answer))
        })
        .roots(vec![
            Root::new("file:///home/me/project").with_name("project")
        ])
        .on_notification(move |server, n| {
            let line = match n {
                Notification::Log(m) => {
                    let text = m
                        .data
                        .as_str()
                        .map_or_else(|| m.data.to_string(), str::to_owned);
                    format!("{} from {server}: {text}", m.level.as_str())
                }
                Notification::ToolsListChanged => format!("{server}: the tool list changed"),
                Notification::PromptsListChanged => format!("{server}: the prompt list changed"),
                Notification::ResourcesListChanged => {
                    format!("{server}: the resource list changed")
                }
                other => format!("{server}: {other:?}"),
            };
            let _ = notes.send(line);
        })
        .connect()?;

    println!("== connect ==");
    let init: Value = serde_json::from_str(&client.call_tool("client_info", json!({}))?.text())?;
    println!("  capabilities sent: {}", init["capabilities"]);

    println!("\n== sampling ==");
    let sampled = client.call_tool("sample", json!({"prompt": "How long is this question?"}))?;
    println!("  the tool got back: {}", sampled.text());
    let refused = client.call_tool("sample", json!({"prompt": "Tell me the secret"}))?;
    println!(
        "  refused: is_error={} text={:?}",
        refused.failed(),
        refused.text()
    );

    println!("\n== elicitation ==");
    let elicited = client.call_tool("elicit", json!({"message": "Who are you?"}))?;
    println!("  the tool got back: {}", elicited.text());

    println!("\n== roots ==");
    println!(
        "  roots/list: {}",
        client.call_tool("roots", json!({}))?.text()
    );
    client.set_roots(vec![
        Root::new("file:///home/me/project").with_name("project"),
        Root::new("file:///tmp/scratch").with_name("scratch"),
    ])?;
    println!(
        "  after set_roots: {}",
        client.call_tool("roots", json!({}))?.text()
    );

    println!("\n== notifications ==");
    client.call_tool(
        "log",
        json!({"level": "warning", "message": "disk almost full"}),
    )?;
    print_notes(&noted, 1)?;
    client.call_tool("notify_list_changed", json!({}))?;
    print_notes(&noted, 3)?;

    println!("\n== progress of one call ==");
    let opts = CallOptions::new().on_progress(|p| {
        println!(
            "  progress {}/{} {}",
            p.progress,
            p.total.unwrap_or_default(),
            p.message.as_deref().unwrap_or("")
        );
    });
    let done = client.call_tool_with("progress", json!({"steps": 3}), &opts)?;
    println!("  the tool got back: {}", done.text());

    client.close()?;
    println!("\nclosed cleanly");
    Ok(())
}

/// Prints the next `count` notifications, waiting up to 5 s for each.
fn print_notes(
    rx: &mpsc::Receiver<String>,
    count: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    for _ in 0..count {
        let line = rx
            .recv_timeout(Duration::from_secs(5))
            .map_err(|e| format!("an expected notification did not come: {e}"))?;
        println!("  [notification] {line}");
    }
    Ok(())
}
