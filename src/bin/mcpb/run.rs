//! `mcpb run` and `mcpb chat`: the servers of a config file, a model, and the tool loop.
//!
//! ```text
//! mcpb --config FILE run [--server NAME]... [--model M] [--model-url URL] [--api-key-env VAR]
//!      [--max-turns N] [--template FILE] [--tool-search] [--max-result-bytes N]
//!      [--server-instructions] [--skill [SERVER/]NAME]... [--timeout SECS] [--json] [-v]
//!      "MESSAGE"
//! ```
//!
//! `mcpb chat` takes the same options and no MESSAGE: one conversation, a message per line of
//! stdin. It asks the model to stream and prints the answer's text as it arrives (with
//! `--json`, one whole document per answer instead); `mcpb run` prints its answer whole. Ctrl-C
//! cancels the run at once (the model request in flight is closed, the tool calls in flight get
//! `notifications/cancelled`) and exits 130, as for `call`.
//!
//! The servers' config files limit the run: an excluded tool is never offered to the model, a
//! tool the file does not auto-approve is asked about ([`approve`](crate::approve); `--yes`
//! approves every call), and the file's `mcp` options block sets how calls degrade.

use std::io::Write;
use std::time::Duration;

use mcp_blocking::agent::{
    Agent, AgentError, AgentEvent, AnthropicMessages, HttpOptions, ModelDelta, ModelError,
    OpenAiChat, RunOutput, ToolSearch,
};
use mcp_blocking::config::{Limits, Template};
use mcp_blocking::hub::Degradation;
use mcp_blocking::{Hub, ServerConfig};
use serde_json::{json, Value};

use crate::approve::Approver;
use crate::args::{ChatArgs, Global, ModelArgs, RunArgs};
use crate::{interrupt, terminal, Failure, FailureInfo, Output};

/// Exit status when the turn limit is reached before the model answers.
pub(crate) const EXIT_TURN_LIMIT: u8 = 8;
/// Exit status when the model API fails (unreachable, refused, timed out, unreadable).
pub(crate) const EXIT_MODEL: u8 = 9;

/// The default model at OpenAI, and at Anthropic.
const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";
const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";

/// Refuses the options `run` and `chat` do not take (their servers come from --config, the
/// template, or else the config files found from the current folder).
fn check(global: &Global, word: &str) -> Result<(), Failure> {
    global
        .refuse(
            word,
            &[
                "--stdio",
                "--url",
                "--transport",
                "--log-level",
                "--max-time",
            ],
            "its servers come from --config and --template",
        )
        .map_err(crate::usage)?;
    Ok(())
}

/// Whether `url` is an Anthropic Messages endpoint.
fn is_anthropic(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    lower.contains("anthropic") || lower.trim_end_matches('/').ends_with("/messages")
}

/// Whether `url`'s host is loopback (a local model server, which needs no key).
fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = if host.starts_with('[') {
        host.split(']').next().unwrap_or("").trim_start_matches('[')
    } else {
        host.split(':').next().unwrap_or("")
    };
    host == "localhost" || host == "::1" || host.starts_with("127.")
}

/// The servers: those of the config file (all, or the ones named), then the template's, with
/// the global options applied (timeout, headers, environment, sign-in).
fn servers(
    global: &Global,
    template: Option<&Template>,
) -> Result<(Vec<ServerConfig>, Option<Degradation>), Failure> {
    let mut out = Vec::new();
    let mut degradation = None;
    let template_servers = template.is_some_and(|t| !t.mcp.is_empty());
    let loaded = match &global.config {
        Some(file) => Some((file.as_str(), crate::load_config(global, file)?)),
        None if !template_servers => Some((
            crate::discovered::LABEL,
            crate::discovered::startable(crate::discovered::discover(global)?)?,
        )),
        None => None,
    };
    if let Some((file, report)) = loaded {
        degradation.clone_from(&report.degradation);
        if global.servers.is_empty() {
            for e in &report.errors {
                log::warn!("config `{file}`: {e} (left out)");
            }
            out.extend(report.servers.iter().cloned());
        } else {
            for name in &global.servers {
                out.push(crate::pick_server(file, Some(name), &report, "run")?);
            }
        }
    }
    if let Some(t) = template {
        out.extend(t.mcp.iter().cloned());
    }
    let servers = out
        .into_iter()
        .map(|c| crate::apply_overrides(global, c))
        .collect::<Result<_, _>>()?;
    Ok((servers, degradation))
}

/// What a run or a chat needs: the servers, the model and the template.
struct Setup {
    servers: Vec<ServerConfig>,
    /// The config file's `mcp` options block, when it has one.
    degradation: Option<Degradation>,
    model: Box<dyn mcp_blocking::agent::Model>,
    template: Option<Template>,
}

fn prepare(global: &Global, args: &ModelArgs) -> Result<Setup, Failure> {
    let template = match &args.template {
        Some(path) => Some(
            crate::discovered::loader(global)
                .load_template(path)
                .map_err(|e| {
                    FailureInfo::config(
                        e.server.as_deref(),
                        format!("template `{path}`: {e}"),
                        Vec::new(),
                    )
                })?,
        ),
        None => None,
    };
    let (servers, degradation) = servers(global, template.as_ref())?;
    let template_model = template
        .as_ref()
        .and_then(|t| t.metadata.get("model"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let (model, _) = model_client(
        global,
        args.model_url.as_deref(),
        args.model.clone().or(template_model),
        args.api_key_env.as_deref(),
    )?;
    Ok(Setup {
        servers,
        degradation,
        model,
        template,
    })
}

/// The model client of `run`, `chat` and sampling, and the model's name: the API at `url`
/// (else `$OPENAI_BASE_URL`, else OpenAI's), Anthropic Messages when the URL says so, the key
/// from the variable `key_env` (else the API's usual one; a loopback URL needs none), and
/// `--timeout` bounding each request.
pub(crate) fn model_client(
    global: &Global,
    url: Option<&str>,
    model: Option<String>,
    key_env: Option<&str>,
) -> Result<(Box<dyn mcp_blocking::agent::Model>, String), Failure> {
    let url = url
        .map(str::to_owned)
        .or_else(|| {
            std::env::var("OPENAI_BASE_URL")
                .ok()
                .filter(|u| !u.trim().is_empty())
        })
        .unwrap_or_else(|| OpenAiChat::DEFAULT_BASE_URL.to_owned());
    let anthropic = is_anthropic(&url);
    let key_var = key_env.map(str::to_owned).unwrap_or_else(|| {
        if anthropic {
            "ANTHROPIC_API_KEY"
        } else {
            "OPENAI_API_KEY"
        }
        .to_owned()
    });
    let key = std::env::var(&key_var)
        .ok()
        .filter(|k| !k.trim().is_empty());
    if key.is_none() && (key_env.is_some() || !is_loopback(&url)) {
        return Err(FailureInfo::config(
            None,
            format!(
                "no API key: set {key_var}{}",
                if key_env.is_some() {
                    ""
                } else {
                    " (or name another variable with --api-key-env)"
                }
            ),
            Vec::new(),
        ));
    }
    let model_name = model.unwrap_or_else(|| {
        if anthropic {
            DEFAULT_ANTHROPIC_MODEL
        } else {
            DEFAULT_OPENAI_MODEL
        }
        .to_owned()
    });
    let base = url.trim_end_matches('/');
    // `--timeout` bounds every request mcpb makes, the model's included (retries within it);
    // without it a model request gets the library's default, since answers take a while.
    let mut http = HttpOptions::default();
    if let Some(s) = global.timeout {
        http.timeout = Duration::from_secs_f64(s);
    }
    let client: Box<dyn mcp_blocking::agent::Model> = if anthropic {
        let base = base.strip_suffix("/v1/messages").unwrap_or(base);
        let m = AnthropicMessages::new(&model_name)
            .base_url(base)
            .http_options(http);
        Box::new(match key {
            Some(k) => m.api_key(k),
            None => m,
        })
    } else {
        let base = base.strip_suffix("/chat/completions").unwrap_or(base);
        let m = OpenAiChat::new(&model_name)
            .base_url(base)
            .http_options(http);
        Box::new(match key {
            Some(k) => m.api_key(k),
            None => m,
        })
    };
    Ok((client, model_name))
}

/// What `mcpb chat` has printed of the answer streaming in.
#[derive(Default)]
struct Streamed {
    /// The turn of the last piece printed.
    turn: usize,
    /// Whether anything of this answer was printed.
    any: bool,
    /// Whether the last piece printed ended a line.
    at_line_start: bool,
}

impl Streamed {
    /// Prints a piece of text of turn `turn` on stdout, as it came (escaped for the terminal);
    /// the text of a new turn starts on a line of its own.
    fn piece(&mut self, turn: usize, text: &str) {
        let mut out = std::io::stdout().lock();
        if self.any && turn != self.turn && !self.at_line_start {
            let _ = out.write_all(b"\n");
        }
        let _ = out.write_all(terminal::escaped(text).as_bytes());
        let _ = out.flush();
        self.turn = turn;
        self.any = true;
        self.at_line_start = text.ends_with('\n');
    }

    /// Ends the answer's line; whether anything was printed. Ready for the next answer.
    fn finish(&mut self) -> bool {
        let printed = self.any;
        if self.any && !self.at_line_start {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(b"\n");
            let _ = out.flush();
        }
        *self = Streamed::default();
        printed
    }
}

type Printer = std::sync::Arc<std::sync::Mutex<Streamed>>;

fn printer(p: &Printer) -> std::sync::MutexGuard<'_, Streamed> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

/// The agent for `args` over `hub`; with `stream`, the answer's text is printed as it arrives.
fn agent<'h>(
    hub: &'h Hub,
    setup: Setup,
    global: &Global,
    args: &ModelArgs,
    stream: Option<Printer>,
) -> Agent<'h> {
    let mut agent = Agent::new(hub, setup.model);
    if let Some(t) = &setup.template {
        agent = agent.template(t);
    }
    if let Some(n) = args.max_turns {
        agent = agent.max_turns(n);
    }
    if let Some(s) = global.timeout {
        agent = agent.tool_timeout(Duration::from_secs_f64(s));
    }
    let verbose = global.verbose > 0;
    if let Some(p) = stream {
        agent = agent.stream(true).on_event(move |e| {
            if let AgentEvent::ModelDelta {
                turn,
                delta: ModelDelta::Text(t),
            } = e
            {
                printer(&p).piece(*turn, t);
            } else if verbose {
                show_event(e);
            }
        });
    } else if verbose {
        agent = agent.on_event(show_event);
    }
    if args.tool_search {
        agent = agent.tool_search(ToolSearch::new());
    }
    if let Some(n) = args.max_result_bytes {
        agent = agent.limits(Limits::default().with_max_tool_result_bytes(n));
    }
    agent = agent.server_instructions(args.server_instructions);
    let approver = Approver::new(args.yes);
    agent.approve(move |ask| approver.decide(ask))
}

/// Connects every server, reports those that failed, and hands the connected ones and the
/// run to the Ctrl-C handler; `f` runs the agent; then everything is let go and closed.
fn with_agent<T>(
    global: &Global,
    args: &ModelArgs,
    stream: Option<Printer>,
    f: impl FnOnce(&mut Agent<'_>) -> Result<T, Failure>,
) -> Result<T, Failure> {
    let mut setup = prepare(global, args)?;
    let mut hub =
        crate::answering(global)?.hub(Hub::builder().servers(std::mem::take(&mut setup.servers)));
    if let Some(d) = setup.degradation.take() {
        hub = hub.degradation(d);
    }
    let hub = hub.try_build().map_err(|e| {
        FailureInfo::config(
            None,
            format!("config: {}", crate::config_error_text(&e)),
            vec![],
        )
    })?;
    for failed in hub.connect_all() {
        eprintln!(
            "mcpb: server `{}` is unavailable: {}",
            terminal::escaped(&failed.server),
            terminal::escaped(&failed.reason)
        );
    }
    let clients: Vec<_> = hub
        .connected_servers()
        .iter()
        .filter_map(|name| hub.client(name))
        .collect();
    clients.iter().for_each(interrupt::register);
    let mut agent = agent(&hub, setup, global, args, stream);
    // Every skill is loaded and verified before the model is asked anything: one that fails
    // stops the command with nothing sent to the model.
    let result = match offer_skills(global, &hub, &mut agent, &args.skill) {
        Ok(()) => {
            interrupt::register_run(agent.cancel_handle());
            let result = f(&mut agent);
            interrupt::unregister_run();
            result
        }
        Err(e) => Err(e),
    };
    clients.iter().for_each(interrupt::unregister);
    drop(agent);
    hub.disconnect();
    result
}

/// Loads each `--skill` from the Hub's servers (verified) and offers it to the model; the first
/// that fails is the command's failure, with the exit status `mcpb skill` gives it.
fn offer_skills(
    global: &Global,
    hub: &Hub,
    agent: &mut Agent<'_>,
    skills: &[String],
) -> Result<(), Failure> {
    for wanted in skills {
        let (server, name) = skill_name(wanted)?;
        let skill = hub
            .load_skill(server, name)
            .map_err(|e| FailureInfo::from_error(&e, true))?;
        agent
            .add_skill(&skill)
            .map_err(|e| FailureInfo::from_error(&e, true))?;
        if global.verbose > 0 {
            eprintln!(
                "mcpb: skill `{}` of server `{}` offered to the model",
                terminal::escaped(name),
                terminal::escaped(skill.server())
            );
        }
    }
    Ok(())
}

/// The server (when named) and the skill of a `--skill` value: `NAME`, `SERVER/NAME`, or the
/// URI of a skill's `SKILL.md` (which is not split).
fn skill_name(value: &str) -> Result<(Option<&str>, &str), Failure> {
    let (server, name) = match value.split_once('/') {
        Some((server, name)) if !value.contains("://") => (Some(server), name),
        _ => (None, value),
    };
    if name.trim().is_empty() || server.is_some_and(|s| s.trim().is_empty()) {
        return Err(FailureInfo::usage(format!(
            "--skill `{value}`: give NAME, SERVER/NAME or the URI of a SKILL.md"
        )));
    }
    Ok((server, name))
}

/// `mcpb run MESSAGE`: the answer, or a failure.
pub(crate) fn run(global: &Global, args: &RunArgs) -> Result<Output, Failure> {
    check(global, "run")?;
    if args.message.trim().is_empty() {
        return Err(FailureInfo::usage("the MESSAGE is empty"));
    }
    let out = with_agent(global, &args.model, None, |agent| {
        agent.run(&args.message).map_err(|e| failure(&e))
    })?;
    Ok(answer(&out))
}

/// A run's output: its JSON document, and its text ending in one newline.
fn answer(out: &RunOutput) -> Output {
    Output::ok(out.to_json(), format!("{}\n", out.text.trim_end()))
}

/// `mcpb chat`: one conversation, a message per line of stdin, each answer on stdout (with
/// `--json`, one document per line). Ends at the end of input or on a line `/exit`; a failed
/// message (turn limit, model error) is reported on stderr and the conversation goes on;
/// Ctrl-C ends it (exit 130).
pub(crate) fn chat(global: &Global, args: &ChatArgs) -> Result<Output, Failure> {
    use std::io::BufRead;
    check(global, "chat")?;
    // The text is printed as it arrives, except with --json (one whole document per answer).
    let streamed = (!global.json).then(Printer::default);
    with_agent(global, &args.model, streamed.clone(), |agent| {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            if line == "/exit" || line == "/quit" {
                break;
            }
            match agent.run(line) {
                Ok(out) => {
                    let printed = streamed.as_ref().is_some_and(|p| printer(p).finish());
                    if global.json {
                        terminal::print_json_line(&out.to_json());
                    } else if !printed {
                        let mut stdout = std::io::stdout().lock();
                        let _ = stdout.write_all(terminal::escaped(&answer(&out).text).as_bytes());
                        let _ = stdout.flush();
                    }
                }
                Err(e) => {
                    // A failed answer's piece ends its line before the error is reported.
                    if let Some(p) = &streamed {
                        printer(p).finish();
                    }
                    if let AgentError::Cancelled { .. } = e {
                        return Err(failure(&e));
                    }
                    failure(&e).print(false);
                }
            }
        }
        // Nothing more to print: each answer went out as it came.
        Ok(Output::ok(Value::Null, String::new()))
    })
}

/// Each tool call and its outcome, on stderr (with `-v`).
fn show_event(e: &AgentEvent) {
    let mut err = std::io::stderr().lock();
    match e {
        AgentEvent::ToolCallStarted {
            turn,
            server,
            tool,
            arguments,
            ..
        } => {
            let _ = writeln!(
                err,
                "mcpb: [turn {turn}] -> {}/{} {}",
                terminal::escaped(server),
                terminal::escaped(tool),
                terminal::escaped(&arguments.to_string())
            );
        }
        AgentEvent::ToolCallFinished {
            turn,
            server,
            tool,
            is_error,
            output,
            elapsed,
            ..
        } => {
            let first = output.lines().next().unwrap_or("");
            let _ = writeln!(
                err,
                "mcpb: [turn {turn}] <- {}/{} {} in {:.2} s: {}",
                terminal::escaped(if server.is_empty() { "?" } else { server }),
                terminal::escaped(tool),
                if *is_error { "error" } else { "ok" },
                elapsed.as_secs_f64(),
                terminal::escaped(first)
            );
        }
        AgentEvent::ToolsFound {
            turn, query, tools, ..
        } => {
            let _ = writeln!(
                err,
                "mcpb: [turn {turn}] search {}: {}",
                terminal::escaped(&json!(query).to_string()),
                terminal::escaped(&tools.join(", "))
            );
        }
        _ => {}
    }
}

fn failure(e: &AgentError) -> Failure {
    match e {
        AgentError::TurnLimit {
            turns,
            tool_calls,
            usage,
            ..
        } => {
            let mut f = FailureInfo::new(EXIT_TURN_LIMIT, "turn_limit", None, e.to_string());
            f.detail = vec![format!(
                "{} tool calls; raise the limit with --max-turns N",
                tool_calls.len()
            )];
            f.extra = json!({
                "turns": turns,
                "tool_calls": tool_calls.iter().map(|c| c.to_json()).collect::<Vec<_>>(),
                "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
            });
            f
        }
        AgentError::Model { source, .. } => {
            let mut f = FailureInfo::new(EXIT_MODEL, "model", None, e.to_string());
            if let ModelError::Status { status, .. } = source {
                f.extra = json!({ "status": status });
            }
            f
        }
        // Only Ctrl-C cancels a run.
        _ => {
            let mut f = FailureInfo::new(
                interrupt::EXIT,
                "interrupted",
                None,
                "interrupted; the run was cancelled (notifications/cancelled for the tool calls \
                 in flight)"
                    .to_owned(),
            );
            f.extra = json!({ "reason": interrupt::REASON });
            f
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_urls_are_classified() {
        assert!(is_anthropic("https://api.anthropic.com"));
        assert!(!is_anthropic("http://localhost:11434/v1"));
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://127.0.0.1:8080"));
        assert!(is_loopback("http://[::1]:8080/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
    }

    #[test]
    fn skill_values_name_a_skill_and_perhaps_its_server() {
        assert_eq!(skill_name("pdf").unwrap(), (None, "pdf"));
        assert_eq!(skill_name("docs/pdf").unwrap(), (Some("docs"), "pdf"));
        assert_eq!(
            skill_name("skill://pdf/SKILL.md").unwrap(),
            (None, "skill://pdf/SKILL.md")
        );
        for bad in ["", "docs/", "/pdf", " "] {
            assert!(skill_name(bad).is_err(), "{bad:?}");
        }
    }
}
