//! The `testing` feature: a user's unit tests drive a real `Client` against an in-process
//! `TestServer`, with no process, socket or thread of their own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_blocking::error::ErrorCode;
use mcp_blocking::handler::HandlerError;
use mcp_blocking::model::{
    CallToolResult, Content, CreateMessageParams, CreateMessageResult, GetPromptResult, Prompt,
    PromptMessage, ReadResourceResult, Resource, ResourceContents, Role, TextResourceContents,
    Tool,
};
use mcp_blocking::testing::TestServer;
use mcp_blocking::{CallOptions, Error, ServerConfig};
use serde_json::json;

fn echo_tool() -> Tool {
    Tool::new(
        "echo",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
    )
}

fn echo_server() -> TestServer {
    TestServer::new("unit").tool(echo_tool(), |call| {
        let text = call.arguments()["text"].as_str().unwrap_or_default();
        Ok(CallToolResult::success(vec![Content::text(text)]))
    })
}

#[test]
fn a_tool_is_listed_and_called() {
    let server = echo_server();
    let client = server.connect().unwrap();
    assert_eq!(client.server_info().unwrap().name, "unit");
    let tools = client.list_tools().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "echo");
    let out = client.call_tool("echo", json!({"text": "hi"})).unwrap();
    assert_eq!(out.text(), "hi");
    let sent = server.received();
    let call = sent.last().unwrap();
    assert_eq!(call["method"], "tools/call");
    assert_eq!(call["params"]["arguments"]["text"], "hi");
}

#[test]
fn an_unknown_tool_is_a_json_rpc_error_naming_the_server() {
    let client = echo_server().connect().unwrap();
    let err = client.call_tool("nope", json!({})).unwrap_err();
    match &err {
        Error::Rpc {
            server, message, ..
        } => {
            assert_eq!(server, "unit");
            assert!(message.contains("Unknown tool: nope"), "{message}");
        }
        other => panic!("expected an RPC error, got {other:?}"),
    }
}

#[test]
fn a_handler_error_reaches_the_caller_with_its_code() {
    let server = TestServer::new("s").tool(echo_tool(), |_| {
        Err(HandlerError::new(ErrorCode(-32000), "backend down"))
    });
    let err = server
        .connect()
        .unwrap()
        .call_tool("echo", json!({}))
        .unwrap_err();
    assert!(err.to_string().contains("backend down"), "{err}");
}

#[test]
fn resources_and_prompts_are_served() {
    let server = TestServer::new("docs")
        .resource(
            Resource::new("mem://readme", "readme"),
            ReadResourceResult::new(vec![ResourceContents::Text(TextResourceContents::new(
                "mem://readme",
                "hello",
            ))]),
        )
        .prompt(
            Prompt::new("greet"),
            GetPromptResult::new(vec![PromptMessage::new(Role::User, Content::text("hi!"))]),
        );
    let client = server.connect().unwrap();
    assert!(client.capabilities().unwrap().has_resources());
    assert!(!client.capabilities().unwrap().has_tools());
    assert_eq!(client.list_resources().unwrap()[0].uri, "mem://readme");
    let read = client.read_resource("mem://readme").unwrap();
    assert_eq!(read.contents.len(), 1);
    assert_eq!(client.list_prompts().unwrap()[0].name, "greet");
    let prompt = client.get_prompt("greet", json!({})).unwrap();
    assert_eq!(prompt.messages.len(), 1);
    let missing = client.read_resource("mem://other").unwrap_err();
    assert!(
        matches!(&missing, Error::Rpc { code, .. } if *code == ErrorCode::RESOURCE_NOT_FOUND),
        "{missing:?}"
    );
}

#[test]
fn a_tool_can_ask_the_client_to_sample() {
    let server = TestServer::new("asker").tool(echo_tool(), |call| {
        let params = CreateMessageParams::new(vec![], 10);
        let answer = call.ask(
            "sampling/createMessage",
            serde_json::to_value(params).unwrap(),
        )?;
        let text = answer["content"]["text"].as_str().unwrap_or_default();
        Ok(CallToolResult::success(vec![Content::text(format!(
            "model said {text}"
        ))]))
    });
    let client = server
        .client_builder()
        .sampling(|server: &str, _params: CreateMessageParams| {
            Ok(CreateMessageResult::text("m", format!("hello {server}")))
        })
        .connect()
        .unwrap();
    let out = client.call_tool("echo", json!({})).unwrap();
    assert_eq!(out.text(), "model said hello asker");
}

#[test]
fn a_question_the_client_cannot_answer_fails_the_tool_call() {
    // No sampling handler: the client answers -32601, which the tool reports.
    let server = TestServer::new("asker").tool(echo_tool(), |call| {
        call.ask("sampling/createMessage", json!({}))?;
        Ok(CallToolResult::success(vec![]))
    });
    let client = server.connect().unwrap();
    let err = client.call_tool("echo", json!({})).unwrap_err();
    assert!(matches!(err, Error::Rpc { .. }), "{err:?}");
}

#[test]
fn progress_reaches_the_call_s_callback() {
    let server = TestServer::new("p").tool(echo_tool(), |call| {
        for i in 1..=3 {
            call.progress(f64::from(i), Some(3.0));
        }
        Ok(CallToolResult::success(vec![Content::text("done")]))
    });
    let client = server.connect().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let opts = CallOptions::new()
        .timeout(Duration::from_secs(5))
        .on_progress(move |p| sink.lock().unwrap().push(p.progress));
    let out = client.call_tool_with("echo", json!({}), &opts).unwrap();
    assert_eq!(out.text(), "done");
    assert_eq!(*seen.lock().unwrap(), [1.0, 2.0, 3.0]);
}

#[test]
fn on_request_answers_any_method() {
    let server = TestServer::new("c").on_request("completion/complete", |_| {
        Ok(json!({"completion": {"values": ["alice"], "hasMore": false}}))
    });
    let client = server.connect().unwrap();
    let v = client
        .request("completion/complete", Some(json!({})), &CallOptions::new())
        .unwrap();
    assert_eq!(v["completion"]["values"][0], "alice");
    let err = client
        .request("nothing/here", None, &CallOptions::new())
        .unwrap_err();
    assert!(
        matches!(&err, Error::Rpc { code, .. } if *code == ErrorCode::METHOD_NOT_FOUND),
        "{err:?}"
    );
}

#[test]
fn a_refused_version_fails_connect() {
    let err = echo_server()
        .protocol_version("1999-01-01")
        .connect()
        .unwrap_err();
    assert!(err.to_string().contains("1999-01-01"), "{err}");
    assert_eq!(err.server(), Some("unit"));
}

#[test]
fn a_connect_whose_initialize_handler_blocks_ends_at_its_timeout() {
    let (release_tx, release_rx) = crossbeam_channel::bounded::<()>(1);
    let server = TestServer::new("stuck").on_request("initialize", move |_| {
        // Blocks far past the connect timeout, until released.
        let _ = release_rx.recv_timeout(Duration::from_secs(10));
        Err(HandlerError::new(ErrorCode::INTERNAL_ERROR, "released"))
    });
    let timeout = Duration::from_millis(500);
    let config =
        ServerConfig::stdio("stuck", "in-process").with_timeout_secs(timeout.as_secs_f64());
    let started = Instant::now();
    let err = server
        .client_builder_for(config)
        .connect()
        .expect_err("initialize never answered");
    let took = started.elapsed();
    // Waiting for the handler (`CLOSE_GRACE`, 1 s) on top of the timeout would overshoot.
    assert!(took < timeout + Duration::from_secs(1), "{took:?}");
    assert!(err.is_timeout(), "{err:?}");
    assert_eq!(err.server(), Some("stuck"));
    let _ = release_tx.send(());
}

#[test]
fn calls_after_close_are_errors_not_hangs() {
    let client = echo_server().connect().unwrap();
    client.close().unwrap();
    assert!(client.call_tool("echo", json!({})).is_err());
}

#[test]
fn a_handler_type_of_its_own_is_installed_through_a_closure() {
    use mcp_blocking::handler::SamplingHandler;
    struct Fixed;
    impl SamplingHandler for Fixed {
        fn create_message(
            &self,
            server: &str,
            _params: CreateMessageParams,
        ) -> Result<CreateMessageResult, HandlerError> {
            Ok(CreateMessageResult::text("fixed", format!("from {server}")))
        }
    }
    let server = TestServer::new("typed").tool(echo_tool(), |call| {
        let answer = call.ask(
            "sampling/createMessage",
            json!({"messages": [], "maxTokens": 1}),
        )?;
        let text = answer["content"]["text"].as_str().unwrap_or_default();
        Ok(CallToolResult::success(vec![Content::text(text)]))
    });
    let client = server
        .client_builder()
        .sampling(move |server, params| Fixed.create_message(server, params))
        .connect()
        .unwrap();
    assert_eq!(
        client.call_tool("echo", json!({})).unwrap().text(),
        "from typed"
    );
}
