//! The tools answered inline on the reader thread (including the `echo` hot
//! path).

use std::io::{self, BufWriter, Write};

use serde_json::{json, Value};

use crate::args::{arg_number, arg_str, arg_u64, opt_u64, take_string};
use crate::methods::level_index;
use crate::reply::{to_json, tool_error, Reply, RpcError, RpcResult};
use crate::server::Server;

fn is_known_echo_like(server: &Server, name: &str) -> bool {
    if let Some(n) = name.strip_prefix("gen_") {
        if n.parse::<usize>()
            .is_ok_and(|i| i < server.opts.extra_tools && i.to_string() == n)
        {
            return true;
        }
    }
    server.state().added_tools.iter().any(|t| t == name)
}

/// Tools answered inline on the reader thread.
pub(crate) fn call_tool(server: &Server, name: &str, args: &mut Value) -> RpcResult<Reply> {
    Ok(match name {
        "echo" => Reply::Text(take_string(args, "text")?),
        "add" => {
            let (a, b) = (arg_number(args, "a")?, arg_number(args, "b")?);
            let sum = match (a.as_i64(), b.as_i64()) {
                (Some(x), Some(y)) if x.checked_add(y).is_some() => json!(x + y),
                _ => json!(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)),
            };
            Reply::Result(json!({
                "content": [{"type": "text", "text": sum.to_string()}],
                "structuredContent": {"sum": sum},
            }))
        }
        "large" => Reply::Text(large_text(arg_u64(args, "bytes")? as usize)),
        "fail" => tool_error("the tool failed on purpose"),
        "rpc_error" => Reply::Error(RpcError {
            code: -32000,
            message: "deliberate error".to_string(),
            data: Some(json!({"hint": "fixture"})),
        }),
        "crash" => {
            let code = opt_u64(args, "code")?.unwrap_or(3);
            eprintln!("fixture: crashing now on purpose");
            std::process::exit(code as i32);
        }
        "stderr_flood" => {
            flood_stderr(arg_u64(args, "bytes")? as usize);
            Reply::Text("flooded".to_string())
        }
        "log" => {
            let level = arg_str(args, "level")?;
            let message = args.get("message").cloned().ok_or_else(|| {
                RpcError::invalid_params("Invalid arguments: `message` is required")
            })?;
            if level_index(level)? >= server.state().min_level {
                server.notify(
                    "notifications/message",
                    json!({"level": level, "logger": "fixture", "data": message}),
                );
                Reply::Text("logged".to_string())
            } else {
                Reply::Text("filtered".to_string())
            }
        }
        "notify_list_changed" => {
            for kind in ["tools", "prompts", "resources"] {
                server.notify(&format!("notifications/{kind}/list_changed"), json!({}));
            }
            Reply::Text("notified".to_string())
        }
        "add_tool" => {
            let name = arg_str(args, "name")?.to_string();
            {
                let mut st = server.state();
                if !st.added_tools.contains(&name) {
                    st.added_tools.push(name.clone());
                }
            }
            server.notify("notifications/tools/list_changed", json!({}));
            Reply::Text(format!("added {name}"))
        }
        "touch" => {
            let uri = arg_str(args, "uri")?;
            let subscribed = server.state().subscriptions.contains(uri);
            if subscribed {
                server.notify("notifications/resources/updated", json!({"uri": uri}));
                Reply::Text("touched".to_string())
            } else {
                Reply::Text("not subscribed".to_string())
            }
        }
        "cancelled_requests" => {
            Reply::Text(to_json(&Value::Array(server.state().cancelled.clone())))
        }
        "client_info" => Reply::Text(to_json(
            server.state().client_init.as_ref().unwrap_or(&Value::Null),
        )),
        "env" => match std::env::var_os(arg_str(args, "name")?) {
            Some(v) => Reply::Text(v.to_string_lossy().into_owned()),
            None => tool_error("unset"),
        },
        "cwd" => match std::env::current_dir() {
            Ok(d) => Reply::Text(d.display().to_string()),
            Err(e) => tool_error(format!("cannot get the current directory: {e}")),
        },
        "stop_reading" => Reply::Text("stopping".to_string()),
        "grandchild_pid" => match server.grandchild_pid {
            Some(pid) => Reply::Text(pid.to_string()),
            None => tool_error("no grandchild (start with --spawn-grandchild)"),
        },
        other if is_known_echo_like(server, other) => Reply::Text(take_string(args, "text")?),
        other => Reply::Error(RpcError::invalid_params(format!("Unknown tool: {other}"))),
    })
}

fn large_text(len: usize) -> String {
    const PATTERN: &[u8; 64] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-.";
    let mut s = String::with_capacity(len);
    let pattern = std::str::from_utf8(PATTERN).unwrap_or_default();
    for _ in 0..len / PATTERN.len() {
        s.push_str(pattern);
    }
    s.push_str(&pattern[..len % PATTERN.len()]);
    s
}

fn flood_stderr(bytes: usize) {
    const LINE: &str = "fixture: flooding stderr on purpose, line of exactly one hundred bytes ............................";
    const _: () = assert!(LINE.len() == 99);
    let mut err = BufWriter::with_capacity(64 * 1024, io::stderr().lock());
    let mut left = bytes;
    let res = (|| {
        while left > 0 {
            let n = left.min(LINE.len() + 1);
            if n == LINE.len() + 1 {
                err.write_all(LINE.as_bytes())?;
            } else {
                err.write_all(&LINE.as_bytes()[..n - 1])?;
            }
            err.write_all(b"\n")?;
            left -= n;
        }
        err.flush()
    })();
    if let Err(e) = res {
        eprintln!("fixture: stderr flood failed: {e}");
    }
}
