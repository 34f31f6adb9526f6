//! The methods other than `tools/call`: initialize, the paginated lists,
//! resources, prompts, completion and logging.

use serde_json::{json, Value};

use crate::args::arg_str;
use crate::catalog::{builtin_tools, echo_like_tool, prompts, resource_templates, resources};
use crate::paging::{list_result, paginate};
use crate::reply::{Reply, RpcError, RpcResult};
use crate::server::Server;

const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
pub(crate) const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];
const LOGO_PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const README_TEXT: &str = "# Fixture\nThis is the fixture server's readme.\n";
const CONFIG_TEXT: &str = r#"{"debug":false,"retries":3}"#;
const NAMES: [&str; 4] = ["alice", "albert", "bob", "carol"];
const ITEM_IDS: [&str; 3] = ["1", "2", "3"];

pub(crate) fn initialize(server: &Server, params: Value) -> Reply {
    let requested = params.get("protocolVersion").and_then(Value::as_str);
    let version = match (&server.opts.protocol_version, requested) {
        (Some(forced), _) => forced.clone(),
        (None, Some(v)) if SUPPORTED_VERSIONS.contains(&v) => v.to_string(),
        _ => SUPPORTED_VERSIONS[0].to_string(),
    };
    server.state().client_init = Some(params);
    Reply::Result(json!({
        "protocolVersion": version,
        "capabilities": {
            "tools": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "prompts": {"listChanged": true},
            "logging": {},
            "completions": {},
        },
        "serverInfo": {"name": "mcp-fixture-server", "version": "0.1.0"},
        "instructions": "Fixture server for mcp-blocking tests.",
    }))
}

pub(crate) fn other_request(server: &Server, method: &str, params: &Value) -> RpcResult<Reply> {
    let page_size = server.opts.page_size;
    Ok(match method {
        "tools/list" => {
            let mut tools = builtin_tools();
            tools.reserve(server.opts.extra_tools);
            for i in 0..server.opts.extra_tools {
                tools.push(echo_like_tool(&format!("gen_{i}"), "Generated echo tool."));
            }
            for name in &server.state().added_tools {
                tools.push(echo_like_tool(name, "Added echo tool."));
            }
            list_result("tools", paginate(tools, params, page_size)?)
        }
        "resources/list" => list_result("resources", paginate(resources(), params, page_size)?),
        "resources/templates/list" => list_result(
            "resourceTemplates",
            paginate(resource_templates(), params, page_size)?,
        ),
        "prompts/list" => list_result("prompts", paginate(prompts(), params, page_size)?),
        "resources/read" => read_resource(arg_str(params, "uri")?)?,
        "resources/subscribe" => {
            let uri = arg_str(params, "uri")?;
            server.state().subscriptions.insert(uri.to_string());
            Reply::Result(json!({}))
        }
        "resources/unsubscribe" => {
            let uri = arg_str(params, "uri")?;
            server.state().subscriptions.remove(uri);
            Reply::Result(json!({}))
        }
        "prompts/get" => get_prompt(params)?,
        "completion/complete" => complete(params),
        "logging/setLevel" => {
            let level = arg_str(params, "level")?;
            server.state().min_level = level_index(level)?;
            Reply::Result(json!({}))
        }
        other => Reply::Error(RpcError::new(-32601, format!("Method not found: {other}"))),
    })
}

pub(crate) fn level_index(level: &str) -> RpcResult<usize> {
    LEVELS
        .iter()
        .position(|l| *l == level)
        .ok_or_else(|| RpcError::invalid_params(format!("Invalid log level: {level}")))
}

fn read_resource(uri: &str) -> RpcResult<Reply> {
    let content = match uri {
        "fixture://readme" => json!({"uri": uri, "mimeType": "text/plain", "text": README_TEXT}),
        "fixture://logo" => json!({"uri": uri, "mimeType": "image/png", "blob": LOGO_PNG_BASE64}),
        "fixture://config" => {
            json!({"uri": uri, "mimeType": "application/json", "text": CONFIG_TEXT})
        }
        _ => match uri.strip_prefix("fixture://items/") {
            Some(item) if !item.is_empty() && !item.contains('/') => {
                json!({"uri": uri, "mimeType": "text/plain", "text": format!("item {item}")})
            }
            _ => {
                return Err(RpcError {
                    code: -32002,
                    message: "Resource not found".to_string(),
                    data: Some(json!({"uri": uri})),
                })
            }
        },
    };
    Ok(Reply::Result(json!({"contents": [content]})))
}

fn get_prompt(params: &Value) -> RpcResult<Reply> {
    let name = arg_str(params, "name")?;
    let args = params.get("arguments").unwrap_or(&Value::Null);
    let user_text = |text: String| {
        Reply::Result(json!({
            "description": format!("The {name} prompt"),
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        }))
    };
    match name {
        "greeting" => {
            let who = args
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| RpcError::invalid_params("Missing required argument: name"))?;
            Ok(user_text(format!("Hello, {who}!")))
        }
        "summarize" => {
            let style = args
                .get("style")
                .and_then(Value::as_str)
                .unwrap_or("concise");
            Ok(user_text(format!(
                "Summarize the conversation in a {style} style."
            )))
        }
        other => Err(RpcError::invalid_params(format!("Unknown prompt: {other}"))),
    }
}

fn complete(params: &Value) -> Reply {
    let r = params.get("ref").unwrap_or(&Value::Null);
    let kind = r.get("type").and_then(Value::as_str).unwrap_or("");
    let arg = params.get("argument").unwrap_or(&Value::Null);
    let arg_name = arg.get("name").and_then(Value::as_str).unwrap_or("");
    let prefix = arg.get("value").and_then(Value::as_str).unwrap_or("");
    let candidates: &[&str] = match (kind, arg_name) {
        ("ref/prompt", "name") if r.get("name").and_then(Value::as_str) == Some("greeting") => {
            &NAMES
        }
        ("ref/resource", "id")
            if r.get("uri").and_then(Value::as_str) == Some("fixture://items/{id}") =>
        {
            &ITEM_IDS
        }
        _ => &[],
    };
    let values: Vec<&str> = candidates
        .iter()
        .copied()
        .filter(|c| c.starts_with(prefix))
        .collect();
    Reply::Result(json!({
        "completion": {"values": values, "total": values.len(), "hasMore": false},
    }))
}
