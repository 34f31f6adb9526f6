//! Every server of a config file at once: `tools`, `resources`, `templates` and `prompts` listed
//! across all of them, `servers --check`, and `call` routed through the [`Hub`].
//!
//! Servers are connected in parallel (one named, joined thread each); a server that fails is
//! shown with its error and does not stop the others.

use std::fmt::Write;
use std::time::Instant;

use mcp_blocking::config::{ConfigErrorKind, LoadReport};
use mcp_blocking::{Hub, ServerConfig};
use serde_json::{json, Value};

use crate::args::{CallArgs, Command, Global};
use crate::{Failure, FailureInfo, Output, Session};

/// What one server gave, or why it could not.
type Outcome = Result<(Value, String), Failure>;

/// Runs `f` on every server, each on its own thread, and returns the outcomes in config order
/// with the time each took.
fn each_server(
    global: &Global,
    servers: &[ServerConfig],
    f: impl Fn(&Session) -> Outcome + Sync,
) -> Vec<(String, Outcome, f64)> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = servers
            .iter()
            .map(|config| {
                let f = &f;
                let name = config.name().to_owned();
                let handle = std::thread::Builder::new()
                    .name(format!("mcpb-{name}"))
                    .spawn_scoped(scope, move || {
                        let start = Instant::now();
                        let outcome = crate::apply_overrides(global, config.clone())
                            .and_then(|c| crate::connect(global, c, crate::Named::Config))
                            .and_then(|session| {
                                let r = f(&session);
                                session.close();
                                r
                            });
                        (outcome, start.elapsed().as_secs_f64() * 1000.0)
                    });
                (name, handle)
            })
            .collect();
        handles
            .into_iter()
            .map(|(name, handle)| match handle {
                Ok(h) => match h.join() {
                    Ok((outcome, ms)) => (name, outcome, ms),
                    Err(_) => (
                        name.clone(),
                        Err(internal(&name, "its thread panicked")),
                        0.0,
                    ),
                },
                Err(e) => (name.clone(), Err(internal(&name, &e.to_string())), 0.0),
            })
            .collect()
    })
}

fn internal(server: &str, what: &str) -> Failure {
    FailureInfo::new(
        3,
        "connect",
        Some(server),
        format!("server `{server}`: {what}"),
    )
}

/// The config errors of a file as failures, one per bad entry.
fn config_failures(report: &LoadReport) -> Vec<(String, Failure)> {
    report
        .errors
        .iter()
        .map(|e| {
            let name = e.server.clone().unwrap_or_else(|| "?".into());
            let mut here = e.clone();
            here.file = None;
            here.server = None;
            // A server waiting for approval, or turned off by the user's settings, is not
            // invalid: it is not started.
            let what = if matches!(
                e.kind,
                ConfigErrorKind::NotTrusted | ConfigErrorKind::Denied
            ) {
                ""
            } else {
                "invalid configuration: "
            };
            let f = FailureInfo::config(
                Some(&name),
                format!("server `{name}`: {what}{}", crate::config_error_text(&here)),
                vec![],
            );
            (name, f)
        })
        .collect()
}

/// `tools`, `resources`, `templates` or `prompts` on every server of the file.
pub(crate) fn list(global: &Global, command: &Command, report: &LoadReport) -> Output {
    let (key, what, capability) = match command {
        Command::Tools => ("tools", "tools", "tools"),
        Command::Resources => ("resources", "resources", "resources"),
        Command::Templates => ("resourceTemplates", "resource templates", "resources"),
        _ => ("prompts", "prompts", "prompts"),
    };
    let results = each_server(global, &report.servers, |session| {
        if crate::require(session, capability, what).is_err() {
            return Ok((json!([]), format!("(offers no {what})\n")));
        }
        let client = &session.client;
        let fail = |e| session.failure(&e);
        let out = match command {
            Command::Tools => crate::render::tools(&client.list_tools().map_err(fail)?),
            Command::Resources => crate::render::resources(&client.list_resources().map_err(fail)?),
            Command::Templates => {
                crate::render::templates(&client.list_resource_templates().map_err(fail)?)
            }
            _ => crate::render::prompts(&client.list_prompts().map_err(fail)?),
        };
        Ok((out.json[key].clone(), out.text))
    });
    let mut text = String::new();
    let mut entries = Vec::new();
    let mut failed = 0;
    let total = results.len() + report.errors.len();
    let failures = results
        .into_iter()
        .map(|(name, outcome, _)| (name, outcome))
        .chain(
            config_failures(report)
                .into_iter()
                .map(|(n, f)| (n, Err(f))),
        );
    for (name, outcome) in failures {
        match outcome {
            Ok((items, body)) => {
                let _ = writeln!(text, "== {name} ==");
                for line in body.lines() {
                    let _ = writeln!(text, "  {line}");
                }
                entries.push(json!({ "server": name, key: items }));
            }
            Err(f) => {
                failed += 1;
                let _ = writeln!(text, "== {name} (failed) ==");
                let _ = writeln!(text, "  {}", f.headline);
                for line in &f.detail {
                    let _ = writeln!(text, "    {line}");
                }
                entries.push(json!({ "server": name, "error": f.to_json()["error"] }));
            }
        }
    }
    Output {
        json: json!({ "servers": entries }),
        text,
        exit: if failed > 0 && failed == total { 3 } else { 0 },
        note: (failed > 0).then(|| format!("{failed} of {total} servers failed (shown above)")),
    }
}

/// `servers --check`: connect each server, in parallel; status, version, tool count, latency.
pub(crate) fn check(global: &Global, file: &str, report: &LoadReport) -> Output {
    let results = each_server(global, &report.servers, |session| {
        let client = &session.client;
        let info = client.server_info();
        let tools = if crate::require(session, "tools", "tools").is_ok() {
            Some(client.list_tools().map_err(|e| session.failure(&e))?.len())
        } else {
            None
        };
        let doc = json!({
            "serverInfo": info.as_ref().map(|i| json!({"name": i.name, "version": i.version})),
            "protocolVersion": client.protocol_version(),
            "tools": tools,
        });
        Ok((doc, String::new()))
    });
    let width = crate::render::name_width(results.iter().map(|(n, _, _)| n.as_str()), report);
    let mut text = String::new();
    let mut entries = Vec::new();
    let mut failed = Vec::new();
    let mut exit = 0;
    for (name, outcome, ms) in results {
        match outcome {
            Ok((doc, _)) => {
                let version = doc["serverInfo"]
                    .as_object()
                    .map(|i| {
                        format!(
                            "{} {}",
                            i["name"].as_str().unwrap_or("?"),
                            i["version"].as_str().unwrap_or("?")
                        )
                    })
                    .unwrap_or_else(|| "?".into());
                let tools = doc["tools"].as_u64().map_or("no tools".to_owned(), |n| {
                    format!("{n} tool{}", if n == 1 { "" } else { "s" })
                });
                let _ = writeln!(
                    text,
                    "{name:width$}  ok      {version}, {tools}, {ms:.0} ms"
                );
                let mut entry = json!({ "server": name, "ok": true, "latencyMs": ms });
                for (k, v) in doc.as_object().into_iter().flatten() {
                    entry[k] = v.clone();
                }
                entries.push(entry);
            }
            Err(f) => {
                let _ = writeln!(text, "{name:width$}  failed  {}", f.headline);
                exit = exit.max(f.exit.max(3));
                failed.push(name.clone());
                entries.push(
                    json!({ "server": name, "ok": false, "latencyMs": ms, "error": f.to_json()["error"] }),
                );
            }
        }
    }
    for (name, f, kind) in config_failures(report)
        .into_iter()
        .zip(&report.errors)
        .map(|((n, f), e)| (n, f, e.kind))
    {
        let state = match kind {
            ConfigErrorKind::NotTrusted => "waiting",
            ConfigErrorKind::Denied => "denied",
            _ => "invalid",
        };
        let _ = writeln!(text, "{name:width$}  {state} {}", f.headline);
        exit = exit.max(2);
        failed.push(name.clone());
        entries.push(json!({ "server": name, "ok": false, "error": f.to_json()["error"] }));
    }
    for name in &report.skipped_disabled {
        let _ = writeln!(text, "{name:width$}  disabled");
        entries.push(json!({ "server": name, "ok": null, "disabled": true }));
    }
    let total = entries.len() - report.skipped_disabled.len();
    Output {
        json: json!({ "file": file, "servers": entries }),
        text,
        exit,
        note: (!failed.is_empty()).then(|| {
            format!(
                "config `{file}`: {} of {total} servers failed: {}",
                failed.len(),
                failed.join(", ")
            )
        }),
    }
}

/// `call TOOL` or `call SERVER/TOOL` across a config file: routed through a [`Hub`].
pub(crate) fn call(
    global: &Global,
    call: &CallArgs,
    report: &LoadReport,
) -> Result<Output, Failure> {
    let wanted = call.tool.as_deref().unwrap_or_default();
    let (server, tool) = match wanted.split_once('/') {
        Some((s, t)) if report.server(s).is_some() => (Some(s), t),
        Some((s, _)) if report.errors.iter().any(|e| e.server.as_deref() == Some(s)) => {
            return Err(config_failures(report)
                .into_iter()
                .find(|(n, _)| n == s)
                .map(|(_, f)| f)
                .expect("the server has a config error"));
        }
        _ => (None, wanted),
    };
    let servers: Vec<ServerConfig> = report
        .servers
        .iter()
        .filter(|s| server.is_none_or(|n| s.name() == n))
        .map(|s| crate::apply_overrides(global, s.clone()))
        .collect::<Result<_, _>>()?;
    // A tool the named server's policy refuses is refused before anything starts.
    if let Some(config) = server.and_then(|_| servers.first()) {
        if let Some(refused) = crate::policy_refusal(config, tool) {
            return Err(crate::FailureInfo::from_error(&refused, true).redacted(config));
        }
    }
    // The file's `mcp` options block: how the call is retried.
    let mut hub = crate::answering(global)?.hub(Hub::builder().servers(servers));
    if let Some(d) = &report.degradation {
        hub = hub.degradation(d.clone());
    }
    let hub = hub.build();
    let result = call_on_hub(global, call, &hub, server, tool);
    hub.disconnect();
    result
}

fn call_on_hub(
    global: &Global,
    call: &CallArgs,
    hub: &Hub,
    server: Option<&str>,
    tool: &str,
) -> Result<Output, Failure> {
    let failures = hub.connect_all();
    let offered: Vec<_> = hub
        .tools()
        .into_iter()
        .filter(|t| server.is_none_or(|s| t.server == s))
        .collect();
    let matching: Vec<_> = offered
        .iter()
        .filter(|t| t.tool.name == tool || (server.is_none() && t.name == tool))
        .collect();
    let found = match matching.as_slice() {
        [one] => *one,
        [] => {
            if let (Some(s), Some(f)) = (server, failures.first()) {
                return Err(FailureInfo::new(3, "connect", Some(s), f.reason.clone()));
            }
            // Offered by no server: refused when a server's policy excludes it, naming the rule.
            if let Some((refused, config)) = hub.connected_servers().iter().find_map(|s| {
                let client = hub.client(s)?;
                Some((crate::policy_refusal(client.config(), tool)?, client))
            }) {
                return Err(FailureInfo::from_error(&refused, true).redacted(config.config()));
            }
            let hint = crate::schema::closest(tool, offered.iter().map(|t| t.tool.name.as_str()))
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            let place = server.map_or("no server".to_owned(), |s| format!("server `{s}`"));
            let mut f = FailureInfo::new(
                2,
                "unknown_tool",
                server,
                format!("{place} has no tool `{tool}`{hint}"),
            );
            f.detail = failures
                .iter()
                .map(|f| format!("not connected: {}", f.reason))
                .collect();
            return Err(f);
        }
        many => {
            let names: Vec<String> = many
                .iter()
                .map(|t| format!("{}/{}", t.server, t.tool.name))
                .collect();
            return Err(FailureInfo::usage(format!(
                "several servers offer `{tool}`: say which with {}",
                names.join(" or ")
            )));
        }
    };
    let client = hub
        .client(&found.server)
        .ok_or_else(|| internal(&found.server, "not connected"))?;
    let session = Session {
        shown: found.server.clone(),
        target: crate::render::target_of(client.config()),
        client,
    };
    if call.help {
        let text = crate::schema::tool_help(&found.tool, &found.server);
        return Ok(Output::ok(
            json!({ "server": found.server, "tool": found.tool }),
            text,
        ));
    }
    let raw = crate::args::raw_arguments(&call.args).map_err(crate::usage)?;
    let arguments = crate::schema::tool_arguments(&raw, &found.tool.input_schema).map_err(|p| {
        crate::argument_failure(&found.server, &format!("tool `{}`", found.tool.name), p)
    })?;
    let opts = crate::call_options(global, session.client.config());
    crate::interrupt::register(&session.client);
    let result = hub.call_tool_with(&found.name, arguments, &opts);
    crate::interrupt::unregister(&session.client);
    crate::clear_progress();
    let result = result.map_err(|e| {
        let mut f = session.failure(&e);
        f.print(global.json);
        f.printed = true;
        f
    })?;
    crate::finish_call(
        &result,
        &found.tool.name,
        &found.server,
        call.output.as_deref(),
    )
}
