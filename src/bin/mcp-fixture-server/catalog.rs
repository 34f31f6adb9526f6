//! What the lists contain: the built-in tools, resources, resource templates
//! and prompts.

use serde_json::{json, Value};

use crate::methods::LEVELS;

fn schema(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required})
}

fn tool(name: &str, description: &str, input: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": input})
}

pub(crate) fn echo_like_tool(name: &str, description: &str) -> Value {
    tool(
        name,
        description,
        schema(json!({"text": {"type": "string"}}), &["text"]),
    )
}

pub(crate) fn builtin_tools() -> Vec<Value> {
    let none = || schema(json!({}), &[]);
    let int = |d: &str| json!({"type": "integer", "minimum": 0, "description": d});
    let string = |d: &str| json!({"type": "string", "description": d});
    let mut add = tool(
        "add",
        "Adds two numbers.",
        schema(
            json!({"a": {"type": "number"}, "b": {"type": "number"}}),
            &["a", "b"],
        ),
    );
    add["outputSchema"] = schema(json!({"sum": {"type": "number"}}), &["sum"]);
    add["annotations"] =
        json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false});
    let mut echo = echo_like_tool("echo", "Returns its `text` argument.");
    echo["annotations"] = json!({"title": "Echo", "readOnlyHint": true});
    vec![
        echo,
        add,
        tool(
            "slow",
            "Sleeps `ms` milliseconds (cancellable).",
            schema(json!({"ms": int("milliseconds")}), &["ms"]),
        ),
        tool(
            "large",
            "Returns exactly `bytes` ASCII characters.",
            schema(json!({"bytes": int("length")}), &["bytes"]),
        ),
        tool("fail", "Returns a tool error (isError).", none()),
        tool("rpc_error", "Answers with a JSON-RPC error -32000.", none()),
        tool(
            "crash",
            "Exits with status `code` (default 3) without replying.",
            schema(json!({"code": int("exit status")}), &[]),
        ),
        tool(
            "stderr_flood",
            "Writes `bytes` bytes to stderr.",
            schema(json!({"bytes": int("byte count")}), &["bytes"]),
        ),
        tool(
            "progress",
            "Sends `steps` progress notifications, `ms` apart.",
            schema(
                json!({"steps": int("number of steps"), "ms": int("delay per step")}),
                &["steps"],
            ),
        ),
        tool(
            "log",
            "Sends a log message notification.",
            schema(
                json!({"level": {"type": "string", "enum": LEVELS}, "message": string("the message")}),
                &["level", "message"],
            ),
        ),
        tool("ping_client", "Pings the client.", none()),
        tool("roots", "Asks the client for its roots.", none()),
        tool(
            "sample",
            "Asks the client to sample an LLM.",
            schema(json!({"prompt": string("user prompt")}), &["prompt"]),
        ),
        tool(
            "elicit",
            "Asks the client to elicit user input.",
            schema(json!({"message": string("question")}), &["message"]),
        ),
        tool(
            "ask_first",
            "Sends ping and roots/list to the client before replying.",
            none(),
        ),
        tool(
            "notify_list_changed",
            "Sends the three list_changed notifications.",
            none(),
        ),
        tool(
            "add_tool",
            "Adds an echo-like tool named `name`.",
            schema(json!({"name": string("tool name")}), &["name"]),
        ),
        tool(
            "touch",
            "Sends resources/updated for `uri` if subscribed.",
            schema(json!({"uri": string("resource URI")}), &["uri"]),
        ),
        tool(
            "cancelled_requests",
            "Lists the request ids received in notifications/cancelled.",
            none(),
        ),
        tool(
            "client_info",
            "Returns the initialize params received.",
            none(),
        ),
        tool(
            "env",
            "Returns an environment variable of the server.",
            schema(json!({"name": string("variable name")}), &["name"]),
        ),
        tool("cwd", "Returns the server's current directory.", none()),
        tool(
            "stop_reading",
            "Replies, then stops reading stdin for good.",
            none(),
        ),
        tool(
            "grandchild_pid",
            "Returns the pid of the --spawn-grandchild process.",
            none(),
        ),
    ]
}

pub(crate) fn resources() -> Vec<Value> {
    vec![
        json!({"uri": "fixture://readme", "name": "readme", "title": "Read me", "mimeType": "text/plain"}),
        json!({"uri": "fixture://logo", "name": "logo", "mimeType": "image/png"}),
        json!({"uri": "fixture://config", "name": "config", "mimeType": "application/json"}),
    ]
}

pub(crate) fn resource_templates() -> Vec<Value> {
    vec![json!({
        "uriTemplate": "fixture://items/{id}",
        "name": "item",
        "description": "An item by id.",
        "mimeType": "text/plain",
    })]
}

pub(crate) fn prompts() -> Vec<Value> {
    vec![
        json!({
            "name": "greeting",
            "description": "Greets someone.",
            "arguments": [{"name": "name", "description": "Who to greet", "required": true}],
        }),
        json!({
            "name": "summarize",
            "description": "Asks for a summary.",
            "arguments": [{"name": "style", "description": "Summary style", "required": false}],
        }),
    ]
}
