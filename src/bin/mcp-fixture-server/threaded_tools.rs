//! The tools that block (sleep or wait for the client), each run on its own
//! thread by `job::spawn_job`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::args::{arg_str, arg_u64, opt_u64};
use crate::job::{abort_reply, Job};
use crate::reply::{to_json, Reply, RpcError, RpcResult};

pub(crate) const THREADED_TOOLS: [&str; 7] = [
    "slow",
    "progress",
    "ping_client",
    "roots",
    "sample",
    "elicit",
    "ask_first",
];

pub(crate) fn run_threaded_tool(
    job: &Job,
    name: &str,
    args: &Value,
    meta: Option<&Value>,
) -> RpcResult<Reply> {
    Ok(match name {
        "slow" => {
            let ms = arg_u64(args, "ms")?;
            if job.sleep(Duration::from_millis(ms)) {
                Reply::Text(format!("done after {ms} ms"))
            } else {
                Reply::Nothing
            }
        }
        "progress" => {
            let steps = arg_u64(args, "steps")?;
            let ms = opt_u64(args, "ms")?.unwrap_or(0);
            let token = meta.and_then(|m| m.get("progressToken")).cloned();
            for i in 1..=steps {
                if ms > 0 && !job.sleep(Duration::from_millis(ms)) {
                    return Ok(Reply::Nothing);
                }
                if let Some(token) = &token {
                    job.server.notify(
                        "notifications/progress",
                        json!({"progressToken": token, "progress": i, "total": steps, "message": format!("step {i}")}),
                    );
                }
            }
            Reply::Text(format!("progressed {steps}"))
        }
        "ping_client" => match job.ask_one("ping", None) {
            Ok(result) => Reply::Text(format!("client answered ping: {}", to_json(&result))),
            Err(reply) => reply,
        },
        "roots" => match job.ask_one("roots/list", None) {
            Ok(result) => Reply::Text(to_json(&result)),
            Err(reply) => reply,
        },
        "sample" => {
            let prompt = arg_str(args, "prompt")?;
            let params = json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                "maxTokens": 100,
            });
            match job.ask_one("sampling/createMessage", Some(params)) {
                Ok(result) => Reply::Text(to_json(&result)),
                Err(reply) => reply,
            }
        }
        "elicit" => {
            let message = arg_str(args, "message")?;
            let params = json!({
                "mode": "form",
                "message": message,
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "default": "anon"},
                        "age": {"type": "integer"},
                    },
                },
            });
            match job.ask_one("elicitation/create", Some(params)) {
                Ok(result) => Reply::Text(to_json(&result)),
                Err(reply) => reply,
            }
        }
        "ask_first" => match job.ask(&[("ping", None), ("roots/list", None)]) {
            Ok(_) => Reply::Text("asked".to_string()),
            Err(abort) => abort_reply(abort),
        },
        other => Reply::Error(RpcError::invalid_params(format!("Unknown tool: {other}"))),
    })
}
