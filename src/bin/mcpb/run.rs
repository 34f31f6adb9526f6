//! `mcpb run`: the servers of a config file, a model, and the tool loop, for one message.
//!
//! ```text
//! mcpb --config FILE run [--server NAME]... [--model M] [--model-url URL] [--api-key-env VAR]
//!      [--max-turns N] [--template FILE] [--timeout SECS] [--json] [-v] "MESSAGE"
//! ```
//!
//! `mcpb chat` takes the same options and no MESSAGE: one conversation, a message per line of
//! stdin. Options may come before or after the word; they are parsed here, not by `args.rs`.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use mcp_blocking::agent::{
    Agent, AgentError, AgentEvent, AnthropicMessages, ModelError, OpenAiChat, RunOutput,
};
use mcp_blocking::config::{Template, MAX_TIMEOUT};
use mcp_blocking::{ConfigLoader, Hub, ServerConfig};
use serde_json::{json, Value};

use super::{terminal, Failure, FailureInfo};

/// Exit status when the turn limit is reached before the model answers.
pub(crate) const EXIT_TURN_LIMIT: u8 = 8;
/// Exit status when the model API fails (unreachable, refused, timed out, unreadable).
pub(crate) const EXIT_MODEL: u8 = 9;

/// The default model at OpenAI, and at Anthropic.
const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";
const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";

/// The global options that take a value (so their value is not the command word).
const VALUED: &[&str] = &[
    "--stdio",
    "--url",
    "--transport",
    "--config",
    "--server",
    "--timeout",
    "--header",
    "-H",
    "--env",
    "-e",
];

/// The command word of a command line: the first argument that is neither an option nor an
/// option's value.
pub(crate) fn command_word(args: &[String]) -> Option<&str> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            return it.next().map(String::as_str);
        }
        if a.starts_with('-') && a != "-" {
            if VALUED.contains(&a.as_str()) {
                it.next();
            }
            continue;
        }
        return Some(a);
    }
    None
}

/// A parsed `mcpb run` command line.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct RunArgs {
    pub(crate) config: Option<String>,
    pub(crate) servers: Vec<String>,
    pub(crate) model: Option<String>,
    pub(crate) model_url: Option<String>,
    pub(crate) api_key_env: Option<String>,
    pub(crate) max_turns: Option<usize>,
    pub(crate) template: Option<String>,
    pub(crate) timeout: Option<f64>,
    pub(crate) json: bool,
    pub(crate) verbosity: u8,
    pub(crate) message: String,
    /// `chat` rather than `run`: messages come from stdin.
    pub(crate) chat: bool,
}

/// Parses the whole command line (the word `run` included).
pub(crate) fn parse(args: &[String]) -> Result<RunArgs, String> {
    let mut out = RunArgs::default();
    let mut message: Vec<String> = Vec::new();
    let mut saw_run = false;
    let mut it = args.iter();
    let mut options_done = false;
    while let Some(arg) = it.next() {
        if options_done || !arg.starts_with('-') || arg == "-" {
            if !saw_run && (arg == "run" || arg == "chat") {
                saw_run = true;
                out.chat = arg == "chat";
            } else {
                message.push(arg.clone());
            }
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("{name} needs {what}"))
        };
        let once = |slot: &mut Option<String>, v: String| -> Result<(), String> {
            if slot.replace(v).is_some() {
                return Err(format!("{name} given twice"));
            }
            Ok(())
        };
        match name {
            "--" => options_done = true,
            "--config" => once(&mut out.config, value("a file")?)?,
            "--server" => out.servers.push(value("a server name")?),
            "--model" => once(&mut out.model, value("a model name")?)?,
            "--model-url" => once(&mut out.model_url, value("a URL")?)?,
            "--api-key-env" => once(&mut out.api_key_env, value("a variable name")?)?,
            "--template" => once(&mut out.template, value("a file")?)?,
            "--max-turns" => {
                let raw = value("a number")?;
                match raw.trim().parse::<usize>() {
                    Ok(n) if (1..=1000).contains(&n) => out.max_turns = Some(n),
                    _ => return Err(format!("--max-turns must be 1 to 1000, not `{raw}`")),
                }
            }
            "--timeout" => {
                let raw = value("a number of seconds")?;
                match raw.trim().parse::<f64>() {
                    Ok(s) if s > 0.0 && s <= MAX_TIMEOUT.as_secs_f64() => out.timeout = Some(s),
                    _ => {
                        return Err(format!(
                            "--timeout must be a number of seconds more than 0 and at most {}, not `{raw}`",
                            MAX_TIMEOUT.as_secs()
                        ))
                    }
                }
            }
            "--json" => out.json = true,
            "-v" | "--verbose" => out.verbosity += 1,
            "-vv" => out.verbosity += 2,
            "--stdio" | "--url" | "--transport" | "--header" | "-H" | "--env" | "-e" => {
                return Err(format!(
                    "`run` takes its servers from --config (and --template), not {name}"
                ))
            }
            other => return Err(format!("unknown option `{other}` for `run`")),
        }
    }
    let word = if out.chat { "chat" } else { "run" };
    match message.as_slice() {
        [] if out.chat => {}
        _ if out.chat => return Err("`chat` reads its messages from stdin, one per line".into()),
        [m] if !m.trim().is_empty() => out.message = m.clone(),
        [] => return Err("`run` needs a MESSAGE".into()),
        [_] => return Err("the MESSAGE is empty".into()),
        more => {
            return Err(format!(
                "`run` takes one MESSAGE (quote it), got {} words",
                more.len()
            ))
        }
    }
    if out.config.is_none() && out.template.is_none() {
        return Err(format!(
            "`{word}` needs --config FILE (or --template FILE with `mcp:` servers)"
        ));
    }
    Ok(out)
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

/// `mcpb ... run ...`: parses, runs, prints, and returns the exit status.
pub(crate) fn main(argv: &[String]) -> ExitCode {
    let json_mode = argv.iter().any(|a| a == "--json");
    let args = match parse(argv) {
        Ok(a) => a,
        Err(msg) => {
            let f = FailureInfo::usage(msg);
            f.print(json_mode);
            return ExitCode::from(f.exit);
        }
    };
    super::init_logging(args.verbosity, false);
    if args.chat {
        return match chat(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(f) => {
                f.print(args.json);
                ExitCode::from(f.exit)
            }
        };
    }
    match run(&args) {
        Ok(out) => {
            if args.json {
                super::print_json(&out.to_json());
            } else {
                let mut stdout = std::io::stdout().lock();
                let _ = writeln!(stdout, "{}", terminal::escaped(out.text.trim_end()));
                let _ = stdout.flush();
            }
            ExitCode::SUCCESS
        }
        Err(f) => {
            f.print(args.json);
            ExitCode::from(f.exit)
        }
    }
}

fn config_failure(headline: String) -> Failure {
    FailureInfo::config(None, headline, Vec::new())
}

/// The servers: those of the config file (all, or the ones named), then the template's.
fn servers(args: &RunArgs, template: Option<&Template>) -> Result<Vec<ServerConfig>, Failure> {
    let mut out = Vec::new();
    if let Some(file) = &args.config {
        let report = super::load_config(file, &[])?;
        if args.servers.is_empty() {
            for e in &report.errors {
                log::warn!("config `{file}`: {e} (left out)");
            }
            out.extend(report.servers.iter().cloned());
        } else {
            for name in &args.servers {
                match report.server(name) {
                    Some(s) => out.push(s.clone()),
                    None => {
                        let all: Vec<&str> = report.servers.iter().map(|s| s.name()).collect();
                        return Err(FailureInfo::config(
                            Some(name),
                            format!("server `{name}`: not found (or invalid) in `{file}`"),
                            vec![format!("servers in the file: {}", all.join(", "))],
                        ));
                    }
                }
            }
        }
    }
    if let Some(t) = template {
        out.extend(t.mcp.iter().cloned());
    }
    if let Some(s) = args.timeout {
        out = out.into_iter().map(|c| c.timeout_secs(s)).collect();
    }
    Ok(out)
}

/// What a run or a chat needs: the servers, the model and the template.
struct Setup {
    servers: Vec<ServerConfig>,
    model: Box<dyn mcp_blocking::agent::Model>,
    template: Option<Template>,
}

fn prepare(args: &RunArgs) -> Result<Setup, Failure> {
    let template = match &args.template {
        Some(path) => Some(ConfigLoader::new().load_template(path).map_err(|e| {
            FailureInfo::config(
                e.server.as_deref(),
                format!("template `{path}`: {e}"),
                Vec::new(),
            )
        })?),
        None => None,
    };
    let servers = servers(args, template.as_ref())?;
    let url = args
        .model_url
        .clone()
        .or_else(|| {
            std::env::var("OPENAI_BASE_URL")
                .ok()
                .filter(|u| !u.trim().is_empty())
        })
        .unwrap_or_else(|| OpenAiChat::DEFAULT_BASE_URL.to_owned());
    let anthropic = is_anthropic(&url);
    let key_var = args.api_key_env.clone().unwrap_or_else(|| {
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
    if key.is_none() && (args.api_key_env.is_some() || !is_loopback(&url)) {
        return Err(config_failure(format!(
            "no API key: set {key_var}{}",
            if args.api_key_env.is_some() {
                ""
            } else {
                " (or name another variable with --api-key-env)"
            }
        )));
    }
    let template_model = template
        .as_ref()
        .and_then(|t| t.metadata.get("model"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let model_name = args.model.clone().or(template_model).unwrap_or_else(|| {
        if anthropic {
            DEFAULT_ANTHROPIC_MODEL
        } else {
            DEFAULT_OPENAI_MODEL
        }
        .to_owned()
    });
    let model: Box<dyn mcp_blocking::agent::Model> = if anthropic {
        let base = url.trim_end_matches('/');
        let base = base.strip_suffix("/v1/messages").unwrap_or(base);
        let mut m = AnthropicMessages::new(&model_name).base_url(base);
        if let Some(k) = key {
            m = m.api_key(k);
        }
        Box::new(m)
    } else {
        let base = url.trim_end_matches('/');
        let base = base.strip_suffix("/chat/completions").unwrap_or(base);
        let mut m = OpenAiChat::new(&model_name).base_url(base);
        if let Some(k) = key {
            m = m.api_key(k);
        }
        Box::new(m)
    };
    Ok(Setup {
        servers,
        model,
        template,
    })
}

/// The agent for `args` over `hub`.
fn agent<'h>(hub: &'h Hub, setup: Setup, args: &RunArgs) -> Agent<'h> {
    let mut agent = Agent::new(hub, setup.model);
    if let Some(t) = &setup.template {
        agent = agent.template(t);
    }
    if let Some(n) = args.max_turns {
        agent = agent.max_turns(n);
    }
    if let Some(s) = args.timeout {
        agent = agent.tool_timeout(Duration::from_secs_f64(s));
    }
    if args.verbosity > 0 {
        agent = agent.on_event(show_event);
    }
    agent
}

fn run(args: &RunArgs) -> Result<RunOutput, Failure> {
    let mut setup = prepare(args)?;
    let hub = Hub::new(std::mem::take(&mut setup.servers));
    let mut agent = agent(&hub, setup, args);
    let result = agent.run(&args.message);
    report_failed_servers(&hub);
    result.map_err(|e| failure(&e))
}

fn report_failed_servers(hub: &Hub) {
    for f in hub.failures() {
        eprintln!(
            "mcpb: server `{}` was unavailable: {}",
            terminal::escaped(&f.server),
            terminal::escaped(&f.reason)
        );
    }
}

/// `mcpb chat`: one conversation, a message per line of stdin, each answer on stdout. Ends at
/// the end of input or on a line `/exit`; a failed message (turn limit, model error) is
/// reported on stderr and the conversation goes on.
fn chat(args: &RunArgs) -> Result<(), Failure> {
    use std::io::BufRead;
    let mut setup = prepare(args)?;
    let hub = Hub::new(std::mem::take(&mut setup.servers));
    let mut agent = agent(&hub, setup, args);
    let stdin = std::io::stdin();
    let mut reported = false;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line == "/exit" || line == "/quit" {
            break;
        }
        let result = agent.run(line);
        if !reported {
            report_failed_servers(&hub);
            reported = true;
        }
        match result {
            Ok(out) => {
                let mut stdout = std::io::stdout().lock();
                if args.json {
                    let _ = writeln!(stdout, "{}", out.to_json());
                } else {
                    let _ = writeln!(stdout, "{}", terminal::escaped(out.text.trim_end()));
                }
                let _ = stdout.flush();
            }
            Err(e) => failure(&e).print(false),
        }
    }
    Ok(())
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
        } => Box::new(FailureInfo {
            exit: EXIT_TURN_LIMIT,
            kind: "turn_limit",
            server: None,
            headline: e.to_string(),
            detail: vec![format!(
                "{} tool calls; raise the limit with --max-turns N",
                tool_calls.len()
            )],
            extra: json!({
                "turns": turns,
                "tool_calls": tool_calls.iter().map(|c| c.to_json()).collect::<Vec<_>>(),
                "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
            }),
            printed: false,
        }),
        AgentError::Model { source, .. } => {
            let mut extra = json!({});
            if let ModelError::Status { status, .. } = source {
                extra["status"] = json!(status);
            }
            Box::new(FailureInfo {
                exit: EXIT_MODEL,
                kind: "model",
                server: None,
                headline: e.to_string(),
                detail: Vec::new(),
                extra,
                printed: false,
            })
        }
        other => Box::new(FailureInfo {
            exit: EXIT_MODEL,
            kind: "cancelled",
            server: None,
            headline: other.to_string(),
            detail: Vec::new(),
            extra: Value::Null,
            printed: false,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn the_command_word_skips_option_values() {
        assert_eq!(
            command_word(&argv(&["--config", "run", "tools"])),
            Some("tools")
        );
        assert_eq!(
            command_word(&argv(&["--config", "f", "-v", "run", "hi"])),
            Some("run")
        );
        assert_eq!(command_word(&argv(&["--json"])), None);
    }

    #[test]
    fn options_go_before_or_after_the_word() {
        let a = parse(&argv(&[
            "--config",
            "f.json",
            "run",
            "--server",
            "a",
            "--server",
            "b",
            "--model",
            "m",
            "--max-turns",
            "3",
            "--json",
            "-v",
            "hello there",
        ]))
        .unwrap();
        assert_eq!(a.servers, ["a", "b"]);
        assert_eq!((a.max_turns, a.json, a.verbosity), (Some(3), true, 1));
        assert_eq!(a.message, "hello there");
        assert!(parse(&argv(&["--config", "f", "run"])).is_err());
        assert!(parse(&argv(&["--config", "f", "run", "a", "b"])).is_err());
        assert!(parse(&argv(&["run", "hi"])).is_err());
        assert!(parse(&argv(&["--config", "f", "run", "--max-turns", "0", "hi"])).is_err());
    }

    #[test]
    fn model_urls_are_classified() {
        assert!(is_anthropic("https://api.anthropic.com"));
        assert!(!is_anthropic("http://localhost:11434/v1"));
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://127.0.0.1:8080"));
        assert!(is_loopback("http://[::1]:8080/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
    }
}
