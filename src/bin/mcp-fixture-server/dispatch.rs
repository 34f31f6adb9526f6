//! One line from stdin: parse it and route it as a request, a notification
//! or the client's answer to a server-to-client request.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::job::{id_key, spawn_job, JobEvent};
use crate::methods::{initialize, other_request};
use crate::reply::{Reply, RpcError};
use crate::server::Server;
use crate::threaded_tools::THREADED_TOOLS;
use crate::tools::call_tool;

/// What the reader loop does after a message.
pub(crate) enum Flow {
    Continue,
    StopReading,
}

pub(crate) fn handle_line(server: &Arc<Server>, line: &[u8]) -> Flow {
    let msg: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("fixture: parse error: {e}");
            server.reply(
                &Value::Null,
                Reply::Error(RpcError::new(-32700, format!("Parse error: {e}"))),
            );
            return Flow::Continue;
        }
    };
    let mut msg = match msg {
        Value::Object(m) => m,
        Value::Array(_) => {
            server.reply(
                &Value::Null,
                Reply::Error(RpcError::new(-32600, "Batches are not supported")),
            );
            return Flow::Continue;
        }
        _ => {
            server.reply(
                &Value::Null,
                Reply::Error(RpcError::new(-32600, "Invalid Request")),
            );
            return Flow::Continue;
        }
    };
    let params = msg.remove("params").unwrap_or(Value::Null);
    let method = match msg.remove("method") {
        Some(Value::String(m)) => m,
        Some(_) => {
            let id = msg.remove("id").unwrap_or(Value::Null);
            server.reply(&id, Reply::Error(RpcError::new(-32600, "Invalid Request")));
            return Flow::Continue;
        }
        None => {
            handle_answer(server, msg);
            return Flow::Continue;
        }
    };
    match msg.remove("id") {
        None => {
            handle_notification(server, &method, params);
            Flow::Continue
        }
        Some(id) => handle_request(server, &method, id, params),
    }
}

/// Routes the client's answer to a server-to-client request.
fn handle_answer(server: &Server, msg: Map<String, Value>) {
    let sid = match msg.get("id") {
        Some(Value::String(s)) => s.clone(),
        other => {
            eprintln!("fixture: dropping a message with no method and id {other:?}");
            return;
        }
    };
    let waiter = server.state().waiters.remove(&sid);
    match waiter {
        Some(tx) => {
            let _ = tx.send(JobEvent::Answer(sid, Value::Object(msg)));
        }
        None => eprintln!("fixture: dropping an answer to unknown request {sid}"),
    }
}

fn handle_notification(server: &Server, method: &str, params: Value) {
    match method {
        "notifications/initialized" => {
            server.state().initialized = true;
            if server.opts.exit_on_initialized {
                eprintln!("fixture: exiting after notifications/initialized on purpose");
                std::process::exit(0);
            }
        }
        "notifications/cancelled" => {
            let request_id = params.get("requestId").cloned().unwrap_or(Value::Null);
            let key = id_key(&request_id);
            let mut st = server.state();
            if let Some(tx) = st.running.remove(&key) {
                let _ = tx.send(JobEvent::Cancelled);
            }
            st.cancelled.push(request_id);
        }
        _ => {}
    }
}

fn handle_request(server: &Arc<Server>, method: &str, id: Value, mut params: Value) -> Flow {
    let reply = match method {
        "tools/call" => {
            let name = match params.get_mut("name").map(Value::take) {
                Some(Value::String(n)) => n,
                _ => {
                    server.reply(
                        &id,
                        Reply::Error(RpcError::invalid_params("Missing tool name")),
                    );
                    return Flow::Continue;
                }
            };
            let mut args = params
                .get_mut("arguments")
                .map(Value::take)
                .unwrap_or(Value::Null);
            if THREADED_TOOLS.contains(&name.as_str()) {
                let meta = params.get_mut("_meta").map(Value::take);
                spawn_job(server, id, name, args, meta);
                return Flow::Continue;
            }
            let reply = call_tool(server, &name, &mut args).unwrap_or_else(Reply::Error);
            if name == "stop_reading" {
                server.reply(&id, reply);
                return Flow::StopReading;
            }
            reply
        }
        "ping" => Reply::Result(json!({})),
        "initialize" => initialize(server, params),
        other => other_request(server, other, &params).unwrap_or_else(Reply::Error),
    };
    server.reply(&id, reply);
    Flow::Continue
}
