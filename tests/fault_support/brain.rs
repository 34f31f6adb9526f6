//! What a peer answers: a small, well-behaved MCP server in both eras (`echo`, and the
//! task-required `slow_task` whose task never ends; in the legacy era also one skill, `check`,
//! with one file), except where the [`Plan`](super::Plan) says to stall, to forget the
//! session, or (2026-07-28) to ask for input first.

use std::time::Duration;

use serde_json::{json, Value};

use super::Shared;

/// What to send back for one message.
#[derive(Debug)]
pub enum Decision {
    /// Nothing (a notification or a response); HTTP answers 202.
    Ignore,
    /// This JSON-RPC message.
    Answer(Value),
    /// This message, after a while (a server that takes its time, but answers).
    Later(Duration, Value),
    /// This message, written the plan's stalled way.
    Stall(Value),
    /// HTTP 404: the session is forgotten.
    Expire,
}

/// Methods whose arrival after the stall began shows the client has moved on.
const RELEASING: [&str; 6] = [
    "tools/list",
    "ping",
    "tasks/cancel",
    "initialize",
    "server/discover",
    "notifications/cancelled",
];

/// The decision for one incoming message.
pub fn decide(shared: &Shared, msg: &Value) -> Decision {
    let Some(method) = msg.get("method").and_then(Value::as_str) else {
        return Decision::Ignore;
    };
    let id = msg.get("id");
    let n = id.map(|_| shared.count(method));
    let expire = n.is_some_and(|n| shared.plan.expire_at == Some((method, n)));
    let stall = !expire && n.is_some_and(|n| shared.is_stall(method, n));
    // A request that is itself a stall releases nothing: the stall before it (an `Auto` probe,
    // then its `initialize`) keeps holding the shared stream.
    if RELEASING.contains(&method) && !stall {
        shared.release();
    }
    let (Some(id), Some(n)) = (id, n) else {
        return Decision::Ignore;
    };
    if expire {
        return Decision::Expire;
    }
    let modern = shared.plan.modern;
    let result = if modern {
        modern_result(method, msg)
    } else {
        legacy_result(method, msg)
    };
    let answer = match result {
        Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
        Err(message) => json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": message}}),
    };
    if stall {
        return Decision::Stall(answer);
    }
    if modern && method == "tools/call" && n <= shared.plan.rounds {
        let ask = json!({"jsonrpc": "2.0", "id": id, "result": {
            "resultType": "input_required",
            "inputRequests": {"where": {"method": "roots/list", "params": {}}},
            "requestState": format!("round-{n}"),
        }});
        return Decision::Later(shared.plan.round_delay, ask);
    }
    Decision::Answer(answer)
}

fn tools() -> Value {
    json!([
        {"name": "echo", "description": "Says the text back.",
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
        {"name": "slow_task", "description": "A task that never ends.",
         "inputSchema": {"type": "object", "properties": {}},
         "execution": {"taskSupport": "required"}}
    ])
}

fn task(status: &str) -> Value {
    json!({"taskId": "t-1", "status": status, "createdAt": "2026-01-01T00:00:00Z",
           "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttl": 60000, "pollInterval": 100})
}

fn echo(msg: &Value) -> Value {
    let text = msg["params"]["arguments"]["text"]
        .as_str()
        .unwrap_or("done");
    json!({"content": [{"type": "text", "text": text}]})
}

fn legacy_result(method: &str, msg: &Value) -> Result<Value, String> {
    Ok(match method {
        "initialize" => json!({
            "protocolVersion": msg["params"]["protocolVersion"].as_str().unwrap_or("2025-11-25"),
            "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {},
                             "requests": {"tools": {"call": {}}}},
                             "resources": {},
                             "extensions": {"io.modelcontextprotocol/skills": {}}},
            "serverInfo": {"name": "hostile", "version": "1.0.0"}
        }),
        "ping" => json!({}),
        "tools/list" => json!({"tools": tools()}),
        "tools/call" if msg["params"].get("task").is_some() => json!({"task": task("working")}),
        "tools/call" => echo(msg),
        "tasks/get" => task("working"),
        "tasks/cancel" => task("cancelled"),
        "tasks/result" => echo(msg),
        "skills/list" => json!({"skills": [skill_entry()]}),
        "resources/read" => {
            let uri = msg["params"]["uri"].as_str().unwrap_or("");
            let text = SKILL_FILES
                .iter()
                .find(|(u, _)| *u == uri)
                .map(|(_, t)| *t)
                .ok_or_else(|| format!("no resource {uri}"))?;
            json!({"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]})
        }
        other => return Err(format!("no method {other}")),
    })
}

/// The URI of the skill's file that the agent reads.
pub const SKILL_FILE: &str = "skill://check/notes.md";

/// The files of the one skill: its SKILL.md and [`SKILL_FILE`], by URI.
const SKILL_FILES: [(&str, &str); 2] = [
    (
        "skill://check/SKILL.md",
        "---\nname: check\ndescription: A skill to read\n---\nRead notes.md.\n",
    ),
    (SKILL_FILE, "Notes.\n"),
];

/// The skill's `skills/list` entry, with each file's size and SHA-256 digest.
fn skill_entry() -> Value {
    let resources: Vec<Value> = SKILL_FILES
        .iter()
        .map(|(uri, text)| {
            let d = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
            let hex: String = d.as_ref().iter().map(|b| format!("{b:02x}")).collect();
            json!({"uri": uri, "digest": format!("sha256:{hex}"), "size": text.len()})
        })
        .collect();
    json!({"uri": SKILL_FILES[0].0,
           "frontmatter": {"name": "check", "description": "A skill to read"},
           "resources": resources})
}

fn modern_result(method: &str, msg: &Value) -> Result<Value, String> {
    let mut r = match method {
        "server/discover" => json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1.0.0"}
        }),
        "tools/list" => json!({"tools": tools()}),
        "tools/call" => echo(msg),
        other => return Err(format!("no method {other}")),
    };
    r["resultType"] = json!("complete");
    Ok(r)
}
