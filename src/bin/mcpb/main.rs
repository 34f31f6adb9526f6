//! `mcpb`: talk to Model Context Protocol servers from the command line.
//!
//! One run: parse the command line ([`args`], clap), build a [`ServerConfig`] (or several, from
//! `--config`), connect, run one command (or a [`shell`] of them), close, and exit with a code
//! that says how it went (see [`args::EXIT_CODES`]). Errors go to stderr as one line naming the
//! server, then detail lines; with `--json`, stdout always holds exactly one JSON document (the
//! result, or `{"error": ...}`; see [`jsondoc`]).
//!
//! Nothing it prints shows a secret of the server (see [`ServerConfig::redact`]): its errors,
//! notes and log lines pass through the library's redaction rule. Text a server chose (tool
//! output, messages, names, stderr lines) is printed with its control characters escaped (see
//! [`terminal`]), so it cannot drive the terminal.

mod approve;
mod args;
mod auth;
mod discovered;
mod elicit;
mod interrupt;
mod jsondoc;
mod multi;
mod prompt;
mod render;
mod roots;
mod run;
mod sampling;
mod sandbox;
mod save;
mod schema;
mod shell;
mod sign_in;
mod tasks;
mod terminal;
mod trust;
mod tty;

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mcp_blocking::config::{
    ConfigError, ConfigErrorKind, LoadReport, ToolRefusal, TransportConfig,
};
use mcp_blocking::error::ConnectErrorKind;
use mcp_blocking::handler::Notification;
use mcp_blocking::model::{CompletionReference, LoggingLevel, Tool};
use mcp_blocking::{CallOptions, Client, ClientBuilder, Error, ServerConfig};
use serde_json::{json, Map, Value};

use args::{Cli, Command, Global, Parsed, Target, UrlTransport, UsageError};

/// A failed run (boxed: it travels up through every step of a run).
type Failure = Box<FailureInfo>;

/// What to print for a failed run and which code to exit with.
#[derive(Debug)]
struct FailureInfo {
    exit: u8,
    kind: &'static str,
    server: Option<String>,
    /// The one stderr line (it names the server when one is known).
    headline: String,
    detail: Vec<String>,
    extra: Value,
    /// Already printed (a timeout is reported before the server is shut down).
    printed: bool,
}

impl FailureInfo {
    fn new(exit: u8, kind: &'static str, server: Option<&str>, headline: String) -> Failure {
        Box::new(FailureInfo {
            exit,
            kind,
            server: server.map(str::to_owned),
            headline,
            detail: Vec::new(),
            extra: Value::Null,
            printed: false,
        })
    }

    fn usage(msg: impl Into<String>) -> Failure {
        let mut f = Self::new(2, "usage", None, format!("usage: {}", msg.into()));
        f.detail = vec!["run `mcpb --help` for the syntax".into()];
        f
    }

    fn config(server: Option<&str>, headline: String, detail: Vec<String>) -> Failure {
        let mut f = Self::new(2, "config", server, headline);
        f.detail = detail;
        f
    }

    /// A command the server's capabilities do not offer (exit 2, nothing sent).
    fn unsupported(server: &str, what: &str, capability: &str) -> Failure {
        let mut f = Self::new(
            2,
            "unsupported",
            Some(server),
            format!("server `{server}` offers no {what} (its capabilities do not include `{capability}`)"),
        );
        f.extra = json!({ "capability": capability });
        f
    }

    /// Classifies a library error. `connected` tells a failure to connect (3) from a failure
    /// of a request on a live connection.
    fn from_error(e: &Error, connected: bool) -> Failure {
        let text = match e {
            // TypeScript servers repeat the code in the message (`MCP error -32602: ...`).
            Error::Rpc {
                server,
                code,
                message,
                ..
            } => {
                let prefix = format!("MCP error {code}: ");
                let message = message.strip_prefix(&prefix).unwrap_or(message);
                format!("server `{server}`: error {code}: {message}")
            }
            _ => e.to_string(),
        };
        let mut lines = text.lines().map(str::to_owned);
        let headline = lines.next().unwrap_or_default();
        let mut detail: Vec<String> = lines.filter(|l| !l.is_empty()).collect();
        let mut extra = Value::Null;
        let (exit, kind) = match e {
            // Only `login` asks a person to sign in; any other command says so at once.
            _ if e.is_sign_in_required() => {
                let server = e.server().unwrap_or_default();
                let headline = format!(
                    "server `{server}`: sign-in required: it asks for an OAuth sign-in, and \
                     only `mcpb login` signs in"
                );
                let mut f = Self::new(7, "unauthorized", e.server(), headline);
                f.detail = vec![format!(
                    "sign in with `mcpb login` (with the same --url, or --config FILE --server \
                     {server}), then run this again"
                )];
                f.extra = json!({
                    "status": null,
                    "www_authenticate": null,
                    "reason": "sign_in_required",
                });
                return f;
            }
            Error::Config(_) => (2, "config"),
            Error::InvalidArgument { .. } => (2, "invalid_argument"),
            // Refused before anything was sent, connected or not.
            Error::ToolNotAllowed { refusal, .. } => {
                detail.push(refusal_detail(refusal));
                extra = json!({
                    "tool": refusal.tool,
                    "rule": refusal.rule,
                    "key": (!refusal.source.key.is_empty()).then_some(&refusal.source.key),
                    "file": refusal.source.file.as_ref().map(|f| f.display().to_string()),
                });
                (2, "tool_not_allowed")
            }
            Error::Connect(c) => {
                if c.kind() == ConnectErrorKind::TimedOut {
                    detail.push("use --timeout SECS to wait longer".into());
                }
                extra = json!({ "reason": connect_reason(c.kind()) });
                if let Some(challenge) = c.www_authenticate() {
                    detail.push(format!("WWW-Authenticate: {challenge}"));
                    extra["www_authenticate"] = challenge.into();
                }
                (3, "connect")
            }
            Error::Unauthorized {
                status,
                www_authenticate,
                ..
            } => {
                if let Some(challenge) = www_authenticate {
                    detail.push(format!("WWW-Authenticate: {challenge}"));
                }
                extra = json!({ "status": status, "www_authenticate": www_authenticate });
                (7, "unauthorized")
            }
            _ if !connected => (3, "connect"),
            Error::Timeout { .. } => {
                detail.push(
                    "use --timeout SECS to wait longer (--max-time SECS when progress keeps \
                     coming)"
                        .into(),
                );
                (4, "timeout")
            }
            Error::Rpc { code, data, .. } => {
                if let Some(d) = data {
                    detail.push(format!("data: {d}"));
                }
                extra = json!({ "code": code, "data": data });
                (5, "rpc")
            }
            Error::Protocol { .. } => (5, "protocol"),
            Error::Task { kind, .. } => {
                extra = json!({ "reason": format!("{kind:?}").to_ascii_lowercase() });
                (5, "task")
            }
            Error::Unsupported { .. } => (5, "unsupported"),
            Error::Skill { kind, uri, .. } => {
                extra = json!({
                    "reason": format!("{kind:?}").to_ascii_lowercase(),
                    "uri": uri,
                });
                (5, "skill")
            }
            Error::Spawn { .. } => (3, "connect"),
            // Closed, Transport (broken pipe, dropped stream), NotConnected after the end.
            _ => (6, "closed"),
        };
        let mut f = Self::new(exit, kind, e.server(), headline);
        f.detail = detail;
        f.extra = extra;
        f
    }

    /// This failure with the secrets of `config` hidden in everything it prints.
    fn redacted(mut self: Failure, config: &ServerConfig) -> Failure {
        self.headline = config.redact(&self.headline);
        for line in &mut self.detail {
            *line = config.redact(line);
        }
        redact_value(config, &mut self.extra);
        self
    }

    /// This failure naming the server `shown` where the library named it `configured`.
    fn renamed(mut self: Failure, configured: &str, shown: &str) -> Failure {
        if configured != shown {
            let (from, to) = (
                format!("server `{configured}`"),
                format!("server `{shown}`"),
            );
            self.headline = self.headline.replace(&from, &to);
            if self.server.as_deref() == Some(configured) {
                self.server = Some(shown.to_owned());
            }
        }
        self
    }

    fn print(&self, json_mode: bool) {
        if self.printed {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "mcpb: {}", terminal::escaped(&self.headline));
        for line in &self.detail {
            let _ = writeln!(err, "  {}", terminal::escaped(line));
        }
        if json_mode {
            terminal::print_json(&self.to_json());
        }
    }

    fn to_json(&self) -> Value {
        let mut doc = json!({
            "error": {
                "exit": self.exit,
                "kind": self.kind,
                "server": self.server,
                "message": self.headline,
                "detail": self.detail,
            }
        });
        if let Value::Object(m) = &self.extra {
            for (k, v) in m {
                doc["error"][k] = v.clone();
            }
        }
        doc
    }
}

/// Where the rule refusing a tool was written, and what to change to allow it.
fn refusal_detail(refusal: &ToolRefusal) -> String {
    let key = refusal.source.key.rsplit('.').next().unwrap_or_default();
    match (&refusal.source.file, key.is_empty()) {
        (Some(file), false) => format!(
            "the server's `{key}` in {} does not allow it; change the file to call it",
            file.display()
        ),
        (Some(file), true) => format!("{} does not allow it", file.display()),
        (None, _) => "the server's policy does not allow it".to_owned(),
    }
}

/// The refusal of `tool` by the policy of `config`'s server, before anything starts: an
/// excluded tool is not called, whatever the server offers.
fn policy_refusal(config: &ServerConfig, tool: &str) -> Option<Error> {
    let refusal = config.policy().check_tool(tool).err()?;
    Some(Error::ToolNotAllowed {
        server: config.name().to_owned(),
        refusal: Box::new(refusal),
    })
}

/// Every string of `value` with the secrets of `config` hidden.
fn redact_value(config: &ServerConfig, value: &mut Value) {
    match value {
        Value::String(s) => *s = config.redact(s),
        Value::Array(items) => items.iter_mut().for_each(|v| redact_value(config, v)),
        Value::Object(map) => map.values_mut().for_each(|v| redact_value(config, v)),
        _ => {}
    }
}

/// How a connection failed, for `--json` (`"reason"` next to `"kind": "connect"`).
fn connect_reason(kind: ConnectErrorKind) -> &'static str {
    match kind {
        ConnectErrorKind::Unreachable => "unreachable",
        ConnectErrorKind::Auth => "auth",
        ConnectErrorKind::TimedOut => "timed_out",
        ConnectErrorKind::Closed => "closed",
        ConnectErrorKind::Rejected => "rejected",
        ConnectErrorKind::Protocol => "protocol",
        _ => "other",
    }
}

/// What a successful command produced: text lines or a JSON document, and the exit code
/// (1 when a tool reported `isError`).
struct Output {
    json: Value,
    text: String,
    exit: u8,
    /// A line for stderr even on success (a tool's `isError`).
    note: Option<String>,
}

impl Output {
    fn ok(json: Value, text: String) -> Self {
        Output {
            json,
            text,
            exit: 0,
            note: None,
        }
    }

    fn print(&self, json_mode: bool) {
        if let Some(note) = &self.note {
            eprintln!("mcpb: {}", terminal::escaped(note));
        }
        if json_mode {
            if !self.json.is_null() {
                terminal::print_json(&self.json);
            }
        } else {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(terminal::escaped(&self.text).as_bytes());
            if !self.text.is_empty() && !self.text.ends_with('\n') {
                let _ = stdout.write_all(b"\n");
            }
            let _ = stdout.flush();
        }
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let json_mode = args::wants_json(&argv);
    let cli = match args::parse(&argv) {
        Ok(Parsed::Run(cli)) => cli,
        Ok(Parsed::Text(text)) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Err(UsageError(msg)) => {
            let f = FailureInfo::usage(msg);
            f.print(json_mode);
            return ExitCode::from(f.exit);
        }
    };
    init_logging(cli.global.verbose, cli.global.log_level.is_some());
    interrupt::install();
    let result = run(&cli);
    clear_progress();
    match result {
        Ok(out) => {
            out.print(cli.global.json);
            ExitCode::from(out.exit)
        }
        Err(f) => {
            f.print(cli.global.json);
            ExitCode::from(f.exit)
        }
    }
}

fn init_logging(verbosity: u8, server_logs: bool) {
    let level = match verbosity {
        0 => log::LevelFilter::Warn,
        1 => log::LevelFilter::Info,
        2 => log::LevelFilter::Debug,
        _ => log::LevelFilter::Trace,
    };
    let mut builder = env_logger::Builder::new();
    builder.filter_level(level).format(|buf, record| {
        // Log lines quote what servers wrote (stderr lines, progress messages, log messages).
        let message = record.args().to_string();
        writeln!(
            buf,
            "[{} {}] {}",
            record.level(),
            record.target(),
            terminal::escaped(&message)
        )
    });
    if verbosity == 0 {
        // The config loader warns about each bad server; `servers` and `--server` report
        // those themselves, so the warnings would only repeat them (-v shows them). The Hub
        // warns about each server it cannot connect; mcpb reports those too.
        builder.filter_module("mcp_blocking::config", log::LevelFilter::Error);
        builder.filter_module("mcp_blocking::hub", log::LevelFilter::Error);
    }
    // RUST_LOG refines the default (e.g. RUST_LOG=mcp_blocking::stderr=off); -v still raises it.
    if let Ok(spec) = std::env::var("RUST_LOG") {
        builder.parse_filters(&spec);
        if verbosity > 0 {
            builder.filter_level(level);
        }
    }
    if server_logs {
        // The server filters its log messages by the level --log-level asked for.
        builder.filter_module("mcp_blocking::server_log", log::LevelFilter::Trace);
    }
    let logger = builder.build();
    let max = logger.filter();
    if log::set_boxed_logger(Box::new(WireCapped(logger))).is_ok() {
        log::set_max_level(max);
    }
}

/// The crates under mcpb that quote the wire in their detailed logs, and the most detailed
/// level of each that is shown whatever `RUST_LOG` or `-v` ask: ureq's trace level shows a
/// request's path and query, ureq_proto's hex-dumps every byte sent (headers with tokens
/// included), tungstenite's debug level shows the URL and its trace level the handshake's
/// headers, and rustls's trace level the handshake's messages.
const WIRE_CAPS: &[(&str, log::LevelFilter)] = &[
    ("ureq", log::LevelFilter::Debug),
    ("ureq_proto", log::LevelFilter::Debug),
    ("rustls", log::LevelFilter::Debug),
    ("tungstenite", log::LevelFilter::Info),
];

/// Whether a record of `target` at `level` may be shown (see [`WIRE_CAPS`]). A cap applies to
/// the crate's target and every module under it, so no directive, however specific, lifts it.
fn within_wire_cap(target: &str, level: log::Level) -> bool {
    WIRE_CAPS.iter().all(|(krate, cap)| {
        let inside = target
            .strip_prefix(krate)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"));
        !inside || level <= *cap
    })
}

/// env_logger behind the caps of [`WIRE_CAPS`]: env_logger lets the most specific directive
/// win, so a cap set as a directive (`ureq=debug`) is lifted by `RUST_LOG=ureq_proto=trace`.
struct WireCapped(env_logger::Logger);

impl log::Log for WireCapped {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        within_wire_cap(metadata.target(), metadata.level()) && self.0.enabled(metadata)
    }

    fn log(&self, record: &log::Record<'_>) {
        if within_wire_cap(record.target(), record.level()) {
            self.0.log(record);
        }
    }

    fn flush(&self) {
        self.0.flush();
    }
}

/// Commands that need no server, then the server's commands.
fn run(cli: &Cli) -> Result<Output, Failure> {
    let Some(command) = &cli.command else {
        return Err(FailureInfo::usage(format!(
            "no command given ({})",
            args::command_names().join(", ")
        )));
    };
    let global = &cli.global;
    match command {
        Command::Help { topic } => return help(topic.as_deref()),
        Command::Run(args) => return run::run(global, args),
        Command::Chat(args) => return run::chat(global, args),
        Command::Login { .. } | Command::Logout | Command::Auth { .. } => {
            return auth::command(global, command)
        }
        Command::Completions { shell } => return Ok(completions(*shell)),
        Command::Man => return man(),
        Command::Trust { yes } => return trust::command(global, *yes),
        Command::Call(call) if call.tool.is_none() => {
            if call.help {
                return help(Some("call"));
            }
            return Err(FailureInfo::usage(
                "`call` needs a tool: mcpb call TOOL [ARGS] (mcpb help call)",
            ));
        }
        _ => {}
    }
    // Arguments that cannot be read are refused before anything starts.
    sign_in::options(global, false).map_err(usage)?;
    match command {
        Command::Call(call) if !call.help => {
            args::raw_arguments(&call.args).map_err(usage)?;
        }
        Command::Prompt { args, .. } => {
            args::raw_arguments(args).map_err(usage)?;
        }
        _ => {}
    }
    // Without --stdio, --url or --config: the config files the user's hosts read.
    if global.discovers() {
        return discovered::run(global, command);
    }
    let target = global.target().map_err(usage)?;
    if let Target::Config(file, wanted) = &target {
        let report = load_config(global, file)?;
        if let Command::Servers { check } = command {
            if *check {
                return Ok(multi::check(global, file, &report));
            }
            return Ok(render::servers(global, file, &report));
        }
        return on_report(global, command, file, wanted.as_deref(), &report);
    }
    if let Command::Servers { .. } = command {
        return Err(FailureInfo::usage(
            "`servers` lists the servers of a config file: use --config FILE servers",
        ));
    }
    let config = build_config(global, &target)?;
    connect_and_run(global, config, Named::ByServer, command)
}

/// A server command on the servers of `report` (loaded from `file`): every server for the
/// listing commands and `call` without --server, else the one `wanted` (or the only one).
fn on_report(
    global: &Global,
    command: &Command,
    file: &str,
    wanted: Option<&str>,
    report: &LoadReport,
) -> Result<Output, Failure> {
    let many = wanted.is_none() && report.servers.len() + report.errors.len() > 1;
    if many {
        match command {
            Command::Tools | Command::Resources | Command::Templates | Command::Prompts => {
                return Ok(multi::list(global, command, report));
            }
            Command::Call(call) => return multi::call(global, call, report),
            _ => {}
        }
    }
    let config = pick_server(file, wanted, report, command.name())?;
    let config = apply_overrides(global, config)?;
    // `call SERVER/TOOL` names the one server too.
    if let Command::Call(call) = command {
        let prefix = format!("{}/", config.name());
        if let Some(tool) = call.tool.as_deref().and_then(|t| t.strip_prefix(&prefix)) {
            let mut call = call.clone();
            call.tool = Some(tool.to_owned());
            return connect_and_run(global, config, Named::Config, &Command::Call(call));
        }
    }
    connect_and_run(global, config, Named::Config, command)
}

fn help(topic: Option<&str>) -> Result<Output, Failure> {
    let mut cmd = args::command();
    let text = match topic {
        None => cmd.render_long_help().to_string(),
        Some("json") => jsondoc::TEXT.to_owned(),
        Some(name) => match cmd.find_subcommand_mut(name) {
            Some(sub) => {
                let mut sub = sub.clone().bin_name(format!("mcpb {name}"));
                sub.render_long_help().to_string()
            }
            None => {
                let mut names = args::command_names();
                names.push("json".into());
                let hint = schema::closest(name, names.iter().map(String::as_str))
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                return Err(FailureInfo::usage(format!(
                    "no help topic `{name}`{hint}; topics: the commands and `json`"
                )));
            }
        },
    };
    Ok(Output::ok(json!({ "help": text }), text))
}

fn completions(shell: args::CompletionShell) -> Output {
    use clap_complete::Shell;
    let shell = match shell {
        args::CompletionShell::Bash => Shell::Bash,
        args::CompletionShell::Zsh => Shell::Zsh,
        args::CompletionShell::Fish => Shell::Fish,
        args::CompletionShell::Powershell => Shell::PowerShell,
        args::CompletionShell::Elvish => Shell::Elvish,
    };
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut args::command(), "mcpb", &mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    Output::ok(json!({ "script": text }), text)
}

fn man() -> Result<Output, Failure> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(args::command())
        .render(&mut buf)
        .map_err(|e| FailureInfo::new(2, "internal", None, format!("man page: {e}")))?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    Ok(Output::ok(json!({ "man": text }), text))
}

/// Loads a config file, asking for `${input:ID}` values on a terminal when they are missing.
fn load_config(global: &Global, file: &str) -> Result<LoadReport, Failure> {
    let mut inputs: BTreeMap<String, String> = global.inputs.iter().cloned().collect();
    let interactive = std::io::stdin().is_terminal();
    loop {
        let loaded = discovered::loader(global)
            .with_inputs(inputs.clone())
            .load(file);
        let missing: Vec<String> = match &loaded {
            Ok(report) => report.errors.iter().filter_map(missing_input).collect(),
            Err(e) => missing_input(e).into_iter().collect(),
        };
        let missing: Vec<String> = missing
            .into_iter()
            .filter(|id| !inputs.contains_key(id))
            .collect();
        if missing.is_empty() || !interactive {
            return loaded.map_err(|e| config_failure(file, &e));
        }
        for id in missing {
            let value = prompt::ask(&format!(
                "value for ${{input:{}}}: ",
                terminal::escaped(&id)
            ))
            .map_err(|e| FailureInfo::config(None, format!("config `{file}`: {e}"), vec![]))?;
            inputs.insert(id, value);
        }
    }
}

/// The id of the `${input:ID}` an error says has no value.
fn missing_input(e: &ConfigError) -> Option<String> {
    let found = e.found.as_deref()?;
    let id = found.strip_prefix("${input:")?.strip_suffix('}')?;
    Some(id.to_owned())
}

/// A config error as one sentence: it names the file once, and points at `--input` rather than
/// at the library.
pub(crate) fn config_error_text(e: &ConfigError) -> String {
    let text = e.to_string();
    match missing_input(e) {
        Some(id) => {
            let cut = text.find("inputs are not prompted").unwrap_or(text.len());
            let head = text[..cut].trim_end_matches([' ', ':', ';']);
            format!("{head}: give it with --input {id}=VALUE")
        }
        None => text,
    }
}

fn config_failure(file: &str, e: &ConfigError) -> Failure {
    let text = config_error_text(e);
    let headline = if e.file.is_some() {
        format!("config {text}")
    } else {
        format!("config `{file}`: {text}")
    };
    FailureInfo::config(e.server.as_deref(), headline, expected_found(e))
}

fn expected_found(e: &ConfigError) -> Vec<String> {
    let mut v = Vec::new();
    if missing_input(e).is_some() {
        return v;
    }
    if let Some(f) = &e.found {
        v.push(format!("found: {f}"));
    }
    if let Some(x) = &e.expected {
        v.push(format!("expected: {x}"));
    }
    v
}

/// The names of a config's servers, for messages.
fn server_names(report: &LoadReport) -> String {
    let mut all: Vec<&str> = report.servers.iter().map(|s| s.name()).collect();
    all.extend(report.errors.iter().filter_map(|e| e.server.as_deref()));
    if all.is_empty() {
        "the file defines no server".to_owned()
    } else {
        format!("servers in the file: {}", all.join(", "))
    }
}

/// The server of a config file a command runs on, as the file gives it.
fn pick_server(
    file: &str,
    wanted: Option<&str>,
    report: &LoadReport,
    command: &str,
) -> Result<ServerConfig, Failure> {
    let name = match wanted {
        Some(n) => n.to_owned(),
        None if report.servers.len() == 1 && report.errors.is_empty() => {
            report.servers[0].name().to_owned()
        }
        None if report.servers.is_empty() && report.errors.len() == 1 => {
            report.errors[0].server.clone().unwrap_or_default()
        }
        None => {
            return Err(FailureInfo::usage(format!(
                "`{command}` runs on one server: add --server NAME ({})",
                server_names(report)
            )))
        }
    };
    if let Some(s) = report.server(&name) {
        return Ok(s.clone());
    }
    if let Some(e) = report
        .errors
        .iter()
        .find(|e| e.server.as_deref() == Some(&name))
    {
        let mut here = e.clone();
        here.file = None;
        here.server = None;
        // Waiting for approval, or turned off by the user's settings: not invalid.
        if matches!(
            e.kind,
            ConfigErrorKind::NotTrusted | ConfigErrorKind::Denied
        ) {
            return Err(FailureInfo::config(
                Some(&name),
                format!("server `{name}`: {}", config_error_text(&here)),
                vec![],
            ));
        }
        return Err(FailureInfo::config(
            Some(&name),
            format!("server `{name}`: invalid configuration in `{file}`"),
            std::iter::once(config_error_text(&here))
                .chain(expected_found(e))
                .collect(),
        ));
    }
    if report.skipped_disabled.contains(&name) {
        return Err(FailureInfo::config(
            Some(&name),
            format!("server `{name}`: disabled in `{file}`"),
            vec!["remove `disabled: true` to use it".into()],
        ));
    }
    let all: Vec<&str> = report.servers.iter().map(|s| s.name()).collect();
    let hint = schema::closest(&name, all)
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    Err(FailureInfo::config(
        Some(&name),
        format!("server `{name}`: not found in `{file}`{hint}"),
        vec![server_names(report)],
    ))
}

/// The config for `--stdio` or `--url`.
fn build_config(global: &Global, target: &Target) -> Result<ServerConfig, Failure> {
    let config = match target {
        Target::Stdio(words) => {
            let (cmd, rest) = words
                .split_first()
                .expect("split_command_line never returns empty");
            ServerConfig::stdio(launched_name(words), cmd.clone()).with_args(rest.iter().cloned())
        }
        Target::Url(url, transport) => {
            let name = host_of(url);
            let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
            let is_ws = matches!(scheme.as_deref(), Some("ws" | "wss"));
            match transport {
                Some(UrlTransport::Http) if !is_ws => ServerConfig::http(name, url.clone()),
                Some(UrlTransport::Sse) if !is_ws => ServerConfig::sse(name, url.clone()),
                Some(UrlTransport::Ws) => ServerConfig::websocket(name, url.clone()),
                None if is_ws => ServerConfig::websocket(name, url.clone()),
                None => detecting_http(ServerConfig::http(name, url.clone())),
                Some(_) => {
                    return Err(FailureInfo::usage(
                        "a ws:// or wss:// URL is a WebSocket server: drop --transport or use \
                         --transport ws",
                    ))
                }
            }
        }
        Target::Config(..) => unreachable!("build_config is not called for --config"),
    };
    apply_overrides(global, config)
}

/// Turns on the Streamable HTTP to legacy SSE fallback, as for a host-file `url` with no type.
fn detecting_http(config: ServerConfig) -> ServerConfig {
    match config.transport() {
        TransportConfig::StreamableHttp(h) => {
            let mut h = h.clone();
            h.detect_legacy_sse = true;
            let timeout = config.timeout();
            ServerConfig::new(config.name(), TransportConfig::StreamableHttp(h))
                .map(|c| c.with_timeout(timeout))
                .unwrap_or(config)
        }
        _ => config,
    }
}

/// Applies `--timeout`, `--env`, `--header`, `--sandbox` and the OAuth sign-in (the stored one,
/// or the grant of the OAuth options: see `sign_in`) on top of a config.
fn apply_overrides(global: &Global, mut config: ServerConfig) -> Result<ServerConfig, Failure> {
    let kind = config.transport_type();
    let server = config.name().to_owned();
    let sign_in = sign_in::options(global, false).map_err(usage)?;
    if sign_in.is_set() && auth::url_of(&config).is_none() {
        let options = sign_in::given(global).join(", ");
        return Err(FailureInfo::config(
            Some(&server),
            format!(
                "server `{server}`: {options}: OAuth applies only to http and sse servers, this \
                 one is {kind}"
            ),
            vec![],
        ));
    }
    config = auth::with_sign_in(config, &sign_in, global.timeout);
    if !global.env.is_empty() && kind != "stdio" {
        return Err(FailureInfo::config(
            Some(&server),
            format!("server `{server}`: --env applies only to stdio servers, this one is {kind}"),
            vec![],
        ));
    }
    if !global.headers.is_empty() && kind == "stdio" {
        return Err(FailureInfo::config(
            Some(&server),
            format!(
                "server `{server}`: --header applies only to remote (http, sse and websocket) \
                 servers, this one is {kind}"
            ),
            vec![],
        ));
    }
    for (k, v) in &global.env {
        config = config.with_env(k, v);
    }
    for (k, v) in &global.headers {
        config = config.with_header(k, v);
    }
    if let Some(secs) = global.timeout {
        config = config.with_timeout_secs(secs);
    }
    Ok(sandbox::apply(global, config))
}

/// A usage error as a failure.
fn usage(UsageError(message): UsageError) -> Failure {
    FailureInfo::usage(message)
}

/// How a server is named in messages once connected.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Named {
    /// By its config entry.
    Config,
    /// By its `serverInfo.name` (for `--stdio` and `--url`, whose names are only guesses).
    ByServer,
}

/// A connected server, with the name to show for it.
struct Session {
    client: Arc<Client>,
    /// The name messages use.
    shown: String,
    /// Where it is (command line or URL), redacted.
    target: String,
}

/// Connects, with the notification printer and the Ctrl-C handler in place.
fn connect(global: &Global, config: ServerConfig, named: Named) -> Result<Session, Failure> {
    let target = render::target_of(&config);
    log::info!("connecting to `{}` ({target})", config.name());
    let json_mode = global.json;
    let mut builder = Client::builder(config.clone())
        .on_notification(move |server, n| print_notification(server, n, json_mode));
    builder = answering(global)?.client(builder);
    let client = Arc::new(builder.connect().map_err(|e| {
        let mut f = FailureInfo::from_error(&e, false);
        auth::hint_login(global, &config, &e, &mut f.detail);
        f.redacted(&config)
    })?);
    interrupt::register(&client);
    let shown = match (named, client.server_info()) {
        (Named::ByServer, Some(info)) if !info.name.trim().is_empty() => info.name.clone(),
        _ => config.name().to_owned(),
    };
    let session = Session {
        client,
        shown,
        target,
    };
    if let Some(level) = global.log_level {
        set_log_level(&session, level).inspect_err(|_| session.close())?;
    }
    Ok(session)
}

/// The server's requests mcpb answers: elicitation always (on the terminal, from `--input`,
/// or declined), roots with `--root` (and in `shell`), sampling with `--sampling-model-url`.
pub(crate) fn answering(global: &Global) -> Result<Answering, Failure> {
    let elicitor = Arc::new(elicit::Elicitor::new(&global.inputs));
    let roots = if !global.roots.is_empty() || global.offer_roots {
        Some(roots::roots_of(&global.roots).map_err(FailureInfo::usage)?)
    } else {
        None
    };
    let sampler = if let Some(url) = &global.sampling_model_url {
        let (model, name) = run::model_client(
            global,
            Some(url),
            global.sampling_model.clone(),
            global.sampling_api_key_env.as_deref(),
        )?;
        Some(Arc::new(sampling::Sampler::new(
            model,
            name,
            global.sampling_yes,
        )))
    } else if global.sampling_model.is_some()
        || global.sampling_api_key_env.is_some()
        || global.sampling_yes
    {
        return Err(FailureInfo::usage(
            "--sampling-model, --sampling-api-key-env and --sampling-yes go with \
             --sampling-model-url URL (the model API that answers sampling requests)",
        ));
    } else {
        None
    };
    Ok(Answering {
        elicitor,
        roots,
        sampler,
    })
}

/// How mcpb answers what its servers ask: the elicitation form, the roots, the sampling model;
/// given to one client or to every client of a Hub.
pub(crate) struct Answering {
    elicitor: Arc<elicit::Elicitor>,
    roots: Option<Vec<mcp_blocking::model::Root>>,
    sampler: Option<Arc<sampling::Sampler>>,
}

/// The handlers of an [`Answering`] installed on a builder: a `ClientBuilder` and a
/// `HubBuilder` have the same methods, but no trait in common.
macro_rules! answered_by {
    ($answering:expr, $builder:expr) => {{
        let Answering {
            elicitor,
            roots,
            sampler,
        } = $answering;
        let mut builder = $builder
            .elicitation(move |server, params| elicitor.elicit(server, &params))
            .elicitation_url_mode(true);
        if let Some(roots) = roots {
            builder = builder.roots(roots);
        }
        if let Some(sampler) = sampler {
            builder =
                builder.sampling(move |server, params| sampler.create_message(server, &params));
        }
        builder
    }};
}

impl Answering {
    fn client(self, builder: ClientBuilder) -> ClientBuilder {
        answered_by!(self, builder)
    }

    pub(crate) fn hub(
        self,
        builder: mcp_blocking::hub::HubBuilder,
    ) -> mcp_blocking::hub::HubBuilder {
        answered_by!(self, builder)
    }
}

impl Session {
    fn server(&self) -> &str {
        &self.shown
    }

    /// A library error of this session as a failure: redacted, naming the server as shown.
    fn failure(&self, e: &Error) -> Failure {
        let f = if interrupt::interrupted() {
            let mut f = FailureInfo::new(
                interrupt::EXIT,
                "interrupted",
                Some(&self.shown),
                format!(
                    "server `{}`: interrupted; the request was cancelled (notifications/cancelled)",
                    self.shown
                ),
            );
            f.extra = json!({ "reason": interrupt::REASON });
            f
        } else {
            FailureInfo::from_error(e, true)
        };
        f.redacted(self.client.config())
            .renamed(self.client.server_name(), &self.shown)
    }

    fn close(&self) {
        interrupt::unregister(&self.client);
        if let Err(e) = self.client.close() {
            log::debug!("closing: {}", self.client.config().redact(&e.to_string()));
        }
    }
}

fn set_log_level(session: &Session, level: args::LogLevel) -> Result<(), Failure> {
    let caps = session.client.capabilities().unwrap_or_default();
    if caps.logging.is_none() {
        return Err(FailureInfo::unsupported(
            session.server(),
            "log messages",
            "logging",
        ));
    }
    let level = match level {
        args::LogLevel::Debug => LoggingLevel::Debug,
        args::LogLevel::Info => LoggingLevel::Info,
        args::LogLevel::Notice => LoggingLevel::Notice,
        args::LogLevel::Warning => LoggingLevel::Warning,
        args::LogLevel::Error => LoggingLevel::Error,
        args::LogLevel::Critical => LoggingLevel::Critical,
        args::LogLevel::Alert => LoggingLevel::Alert,
        args::LogLevel::Emergency => LoggingLevel::Emergency,
    };
    session
        .client
        .set_logging_level(level)
        .map_err(|e| session.failure(&e))
}

/// Prints the resource updates a server sends (after `subscribe`) on stdout. (Its log
/// messages reach stderr through the library's `mcp_blocking::server_log` log target, shown
/// with `--log-level` or `-v`.)
fn print_notification(server: &str, n: Notification, json_mode: bool) {
    if let Notification::ResourceUpdated(u) = n {
        clear_progress();
        if json_mode {
            terminal::print_json_line(&json!({ "server": server, "updated": u.uri }));
        } else {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "updated {}", terminal::escaped(&u.uri));
            let _ = out.flush();
        }
    }
}

/// Whether a progress line is on stderr now.
static PROGRESS_SHOWN: AtomicBool = AtomicBool::new(false);

/// Removes the progress line, if one is shown.
fn clear_progress() {
    if PROGRESS_SHOWN.swap(false, Ordering::SeqCst) {
        eprint!("\r\x1b[2K");
    }
}

/// Call options: progress shown (a line on a terminal, a log line with -v) and extending the
/// timeout up to `--max-time`.
fn call_options(global: &Global, config: &ServerConfig) -> CallOptions {
    let on_terminal = terminal::stderr_takes_escapes();
    CallOptions::new()
        .on_progress(move |p| {
            let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
            let msg = p
                .message
                .as_deref()
                .map(|m| format!(" {m}"))
                .unwrap_or_default();
            log::info!("progress {}{total}{msg}", p.progress);
            if on_terminal {
                let line = format!("progress {}{total}{msg}", p.progress);
                let line: String = terminal::escaped(&line).chars().take(200).collect();
                eprint!("\r\x1b[2K{line}");
                PROGRESS_SHOWN.store(true, Ordering::SeqCst);
            }
        })
        .on_task_status(tasks::status_logger())
        .reset_timeout_on_progress(true)
        .max_total_timeout(global.max_time(config.timeout()))
}

fn connect_and_run(
    global: &Global,
    config: ServerConfig,
    named: Named,
    command: &Command,
) -> Result<Output, Failure> {
    if let Command::Shell = command {
        let mut global = global.clone();
        global.offer_roots = true;
        let session = connect(&global, config, named)?;
        let result = shell::run(&global, &session);
        session.close();
        return result;
    }
    let session = connect(global, config, named)?;
    let result = run_command(global, &session, command);
    clear_progress();
    let result = result.map_err(|mut f| {
        // Reported now: closing may wait for the server to end (a slow tool may keep it busy).
        f.print(global.json);
        f.printed = true;
        f
    });
    session.close();
    result
}

/// Checks that the server's capabilities offer `capability`.
fn require(session: &Session, capability: &str, what: &str) -> Result<(), Failure> {
    let caps = session.client.capabilities().unwrap_or_default();
    let offered = match capability {
        "tools" => caps.tools.is_some(),
        "resources" => caps.resources.is_some(),
        "resources.subscribe" => caps
            .resources
            .as_ref()
            .is_some_and(|r| r.subscribe == Some(true)),
        "prompts" => caps.prompts.is_some(),
        "completions" => caps.completions.is_some(),
        "logging" => caps.logging.is_some(),
        "extensions.io.modelcontextprotocol/skills" => session.client.supports_skills(),
        _ => true,
    };
    if offered {
        Ok(())
    } else {
        Err(FailureInfo::unsupported(session.server(), what, capability))
    }
}

/// The tools of a server, for schema-aware arguments, help and "did you mean".
fn tool_named(session: &Session, name: &str) -> Result<Tool, Failure> {
    let tools = session
        .client
        .list_tools()
        .map_err(|e| session.failure(&e))?;
    if let Some(t) = tools.iter().find(|t| t.name == name) {
        return Ok(t.clone());
    }
    let hint = schema::closest(name, tools.iter().map(|t| t.name.as_str()))
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    let mut f = FailureInfo::new(
        2,
        "unknown_tool",
        Some(session.server()),
        format!("server `{}` has no tool `{name}`{hint}", session.server()),
    );
    f.detail = vec!["`mcpb tools` lists them".into()];
    Err(f)
}

/// Turns argument problems into one failure (exit 2, nothing sent).
fn argument_failure(server: &str, what: &str, problems: Vec<String>) -> Failure {
    let mut f = FailureInfo::new(
        2,
        "invalid_argument",
        Some(server),
        format!("server `{server}`: {what}: {}", problems.join("; ")),
    );
    f.detail = vec![format!(
        "mcpb call {} --help shows its arguments",
        what.trim_start_matches("tool `").trim_end_matches('`')
    )];
    f.extra = json!({ "problems": problems });
    f
}

/// The capability path `require` checks for the skills extension.
const SKILLS_CAPABILITY: &str = "extensions.io.modelcontextprotocol/skills";

/// Runs one command on a connected server.
fn run_command(global: &Global, session: &Session, command: &Command) -> Result<Output, Failure> {
    let client = &session.client;
    let server = session.server();
    let fail = |e: Error| session.failure(&e);
    Ok(match command {
        Command::Info => render::info(client, server, &session.target),
        Command::Tools => {
            require(session, "tools", "tools")?;
            render::tools(&client.list_tools().map_err(fail)?)
        }
        Command::Call(call) => {
            let name = call.tool.as_deref().unwrap_or_default();
            if let Some(refused) = policy_refusal(client.config(), name) {
                return Err(fail(refused));
            }
            require(session, "tools", "tools")?;
            let tool = tool_named(session, name)?;
            if call.help {
                let text = schema::tool_help(&tool, server);
                return Ok(Output::ok(json!({ "server": server, "tool": tool }), text));
            }
            let raw = args::raw_arguments(&call.args).map_err(usage)?;
            let arguments = schema::tool_arguments(&raw, &tool.input_schema)
                .map_err(|p| argument_failure(server, &format!("tool `{name}`"), p))?;
            let opts = call_options(global, client.config());
            let result = client
                .call_tool_with(name, arguments, &opts)
                .map_err(fail)?;
            clear_progress();
            finish_call(&result, name, server, call.output.as_deref())?
        }
        Command::Resources => {
            require(session, "resources", "resources")?;
            render::resources(&client.list_resources().map_err(fail)?)
        }
        Command::Templates => {
            require(session, "resources", "resources")?;
            render::templates(&client.list_resource_templates().map_err(fail)?)
        }
        Command::Read { uri, output } => {
            require(session, "resources", "resources")?;
            let result = client.read_resource(uri).map_err(fail)?;
            let mut out = render::read(&result);
            if let Some(path) = output {
                let contents = out.json["contents"].as_array().cloned().unwrap_or_default();
                let saved = save::save_contents(&contents, std::path::Path::new(path))
                    .map_err(|e| save_failure(server, e))?;
                out.text = saved_lines(&saved);
                out.json["saved"] = saved_json(&saved);
            }
            out
        }
        Command::Skills => {
            require(session, SKILLS_CAPABILITY, "skills")?;
            render::skills(&client.list_skills().map_err(fail)?)
        }
        Command::Skill { name, file } => {
            require(session, SKILLS_CAPABILITY, "skills")?;
            let skill = client.load_skill(name).map_err(fail)?;
            match file {
                None => render::skill(&skill),
                Some(file) => {
                    // A path within the skill (`references/FORMS.md`) or a listed URI.
                    let suffix = format!("/{}", file.trim_start_matches('/'));
                    let uri = skill
                        .files
                        .iter()
                        .find(|f| f.uri == *file)
                        .or_else(|| skill.files.iter().find(|f| f.uri.ends_with(&suffix)))
                        .map_or(file.as_str(), |f| f.uri.as_str());
                    let bytes = skill.read_file(client, uri).map_err(fail)?;
                    render::skill_file(uri, bytes)
                }
            }
        }
        Command::Prompts => {
            require(session, "prompts", "prompts")?;
            render::prompts(&client.list_prompts().map_err(fail)?)
        }
        Command::Prompt { name, args } => {
            require(session, "prompts", "prompts")?;
            let raw = args::raw_arguments(args).map_err(usage)?;
            let arguments = prompt_arguments(session, name, &raw)?;
            render::prompt(&client.get_prompt(name, arguments).map_err(fail)?)
        }
        Command::Complete(c) => {
            require(session, "completions", "argument completion")?;
            let reference = match (&c.prompt, &c.template) {
                (Some(p), _) => CompletionReference::prompt(p.clone()),
                (None, Some(t)) => CompletionReference::resource(t.clone()),
                (None, None) => unreachable!("clap requires --prompt or --template"),
            };
            let context: Option<Map<String, Value>> = (!c.context.is_empty()).then(|| {
                c.context
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect()
            });
            let result = client
                .complete(reference, &c.argument, &c.value, context)
                .map_err(fail)?;
            render::completion(&result)
        }
        Command::Subscribe { uri } => {
            require(session, "resources.subscribe", "resource subscriptions")?;
            client.subscribe(uri).map_err(fail)?;
            if !global.json {
                eprintln!(
                    "mcpb: server `{server}`: subscribed to {}; updates follow until Ctrl-C",
                    terminal::escaped(uri)
                );
            }
            while !interrupt::interrupted() && client.is_connected() {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            if interrupt::interrupted() {
                return Err(session.failure(&Error::NotConnected {
                    server: server.to_owned(),
                }))
                .map_err(|mut f| {
                    f.headline = format!("server `{server}`: subscription ended (Ctrl-C)");
                    f
                });
            }
            return Err(FailureInfo::new(
                6,
                "closed",
                Some(server),
                format!("server `{server}`: connection closed during the subscription"),
            ));
        }
        Command::Tasks => tasks::list(client).map_err(fail)?,
        Command::TaskCancel { id } => tasks::cancel(client, id).map_err(fail)?,
        Command::Ping => {
            let start = Instant::now();
            client.ping().map_err(fail)?;
            let ms = start.elapsed().as_secs_f64() * 1000.0;
            Output::ok(
                json!({ "server": server, "ok": true, "elapsedMs": ms }),
                format!("pong from `{server}` in {ms:.1} ms"),
            )
        }
        Command::Servers { .. }
        | Command::Trust { .. }
        | Command::Shell
        | Command::Completions { .. }
        | Command::Man
        | Command::Run(_)
        | Command::Chat(_)
        | Command::Login { .. }
        | Command::Logout
        | Command::Auth { .. }
        | Command::Help { .. } => {
            // Only a line of the shell gets here: the others are run before connecting.
            return Err(FailureInfo::usage(format!(
                "`{}` is not a shell command",
                command.name()
            )));
        }
    })
}

/// A tool result printed, its binary contents saved with `-o DIR`, isError as exit 1.
fn finish_call(
    result: &mcp_blocking::model::CallToolResult,
    tool: &str,
    server: &str,
    output: Option<&str>,
) -> Result<Output, Failure> {
    let mut out = render::call_result(result);
    if let Some(dir) = output {
        let content = out.json["content"].as_array().cloned().unwrap_or_default();
        let saved = save::save_blocks(&content, std::path::Path::new(dir), tool)
            .map_err(|e| save_failure(server, e))?;
        if !saved.is_empty() {
            let files: Vec<save::Saved> = saved.into_iter().map(|(_, s)| s).collect();
            out.json["saved"] = saved_json(&files);
            out.text = render::call_text_with_saved(&out.json, &files);
        }
    }
    if result.failed() {
        out.exit = 1;
        out.note = Some(format!(
            "server `{server}`: tool `{tool}` returned an error (isError)"
        ));
    }
    Ok(out)
}

fn save_failure(server: &str, e: String) -> Failure {
    FailureInfo::new(2, "output", Some(server), format!("-o: {e}"))
}

fn saved_lines(saved: &[save::Saved]) -> String {
    saved
        .iter()
        .map(|s| {
            let mime = if s.mime.is_empty() { "?" } else { &s.mime };
            format!("saved {} ({} bytes, {mime})\n", s.path.display(), s.bytes)
        })
        .collect()
}

fn saved_json(saved: &[save::Saved]) -> Value {
    saved
        .iter()
        .map(|s| json!({ "path": s.path.display().to_string(), "bytes": s.bytes, "mimeType": s.mime }))
        .collect()
}

/// Prompt arguments (strings), checked against the prompt's declared arguments.
fn prompt_arguments(session: &Session, name: &str, raw: &args::RawArgs) -> Result<Value, Failure> {
    let prompts = session
        .client
        .list_prompts()
        .map_err(|e| session.failure(&e))?;
    let server = session.server();
    let Some(prompt) = prompts.iter().find(|p| p.name == name) else {
        let hint = schema::closest(name, prompts.iter().map(|p| p.name.as_str()))
            .map(|s| format!(" (did you mean `{s}`?)"))
            .unwrap_or_default();
        return Err(FailureInfo::new(
            2,
            "unknown_prompt",
            Some(server),
            format!("server `{server}` has no prompt `{name}`{hint}"),
        ));
    };
    let map: Map<String, Value> = match raw {
        args::RawArgs::Object(m) => m.clone(),
        args::RawArgs::Pairs(pairs) => pairs
            .iter()
            .map(|(k, v)| {
                // A quoted JSON string loses its quotes; anything else is kept as typed.
                let value = match serde_json::from_str::<Value>(v) {
                    Ok(Value::String(s)) => s,
                    _ => v.clone(),
                };
                (k.clone(), Value::String(value))
            })
            .collect(),
    };
    let declared: Vec<&str> = prompt
        .arguments
        .iter()
        .flatten()
        .map(|a| a.name.as_str())
        .collect();
    let mut problems = Vec::new();
    for k in map.keys() {
        if !declared.is_empty() && !declared.contains(&k.as_str()) {
            let hint = schema::closest(k, declared.iter().copied())
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            problems.push(format!("the prompt takes no argument `{k}`{hint}"));
        }
    }
    let missing: Vec<String> = prompt
        .arguments
        .iter()
        .flatten()
        .filter(|a| a.required == Some(true) && !map.contains_key(&a.name))
        .map(|a| format!("{} (string)", a.name))
        .collect();
    problems.extend(schema::missing_arguments(&missing));
    if !problems.is_empty() {
        let mut f = argument_failure(server, &format!("prompt `{name}`"), problems);
        f.detail = vec!["`mcpb prompts` lists the prompts and their arguments".into()];
        return Err(f);
    }
    Ok(if raw.is_empty() {
        Value::Null
    } else {
        Value::Object(map)
    })
}

/// The name of a `--stdio` server before it says its own: the package or script a launcher
/// (npx, uvx, python, node, docker...) runs, else the program's file name.
fn launched_name(words: &[String]) -> String {
    const LAUNCHERS: &[&str] = &[
        "npx", "bunx", "pnpx", "uvx", "uv", "pipx", "python", "python3", "node", "deno", "bun",
        "npm", "pnpm", "yarn", "docker", "podman", "java", "ruby", "go", "cargo", "sh", "bash",
        "env", "dotnet", "php",
    ];
    /// Words of a launcher that are not the thing launched.
    const VERBS: &[&str] = &["run", "exec", "dlx", "tool", "x", "start", "--"];
    let program = file_name(&words[0]);
    // A Windows program's file name ends in the extension it is run by: `weather.exe` is named
    // `weather` there, as the same server is on Unix.
    let program = if cfg!(windows) {
        without_run_extension(&program).to_owned()
    } else {
        program
    };
    let stem = program.trim_end_matches(".exe");
    if !LAUNCHERS.contains(&stem) && !stem.starts_with("python3.") {
        return program;
    }
    let mut it = words[1..].iter().peekable();
    while let Some(w) = it.next() {
        if w == "-m" || w == "--from" || w == "--package" || w == "-p" {
            if let Some(next) = it.next() {
                if w == "-m" {
                    return next.clone();
                }
            }
            continue;
        }
        if w.starts_with('-') || VERBS.contains(&w.as_str()) || w.contains('=') {
            continue;
        }
        return package_name(w);
    }
    program
}

/// `@scope/server-x@1.2` → `server-x`; `/a/server-x/dist/index.js` → `server-x`;
/// `/srv/weather.py` → `weather`; `mcp/fetch:latest` → `fetch`.
fn package_name(word: &str) -> String {
    const GENERIC: &[&str] = &["index", "main", "server", "cli", "app", "run"];
    const BUILD_DIRS: &[&str] = &["dist", "build", "src", "lib", "bin", "out"];
    let name = if let Some(scoped) = word.strip_prefix('@') {
        let bare = scoped.split('@').next().unwrap_or(scoped);
        bare.rsplit('/').next().unwrap_or(bare).to_owned()
    } else {
        let segments: Vec<&str> = word.split('/').filter(|s| !s.is_empty()).collect();
        let last = segments.last().copied().unwrap_or(word);
        let last = last.split([':', '@']).next().unwrap_or(last);
        let stem = [".js", ".mjs", ".cjs", ".ts", ".py", ".jar"]
            .iter()
            .find_map(|ext| last.strip_suffix(ext))
            .unwrap_or(last);
        if GENERIC.contains(&stem) && segments.len() > 1 {
            // `.../server-x/dist/index.js`: the package's folder says more.
            segments[..segments.len() - 1]
                .iter()
                .rev()
                .find(|s| !BUILD_DIRS.contains(s))
                .map_or(stem, |s| *s)
                .to_owned()
        } else {
            stem.to_owned()
        }
    };
    if name.is_empty() {
        word.to_owned()
    } else {
        name
    }
}

/// `program` without the extension Windows runs a program file by (`.exe`, `.cmd`, `.bat`, in
/// any case); anything else as it is.
fn without_run_extension(program: &str) -> &str {
    for ext in [".exe", ".cmd", ".bat"] {
        let cut = program.len().saturating_sub(ext.len());
        if cut > 0 && program.is_char_boundary(cut) && program[cut..].eq_ignore_ascii_case(ext) {
            return &program[..cut];
        }
    }
    program
}

/// A path's file name.
fn file_name(cmd: &str) -> String {
    std::path::Path::new(cmd)
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty())
        .unwrap_or(cmd)
        .to_owned()
}

/// The server name for `--url`: host and port, without scheme, user or path.
fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host.is_empty() {
        url.to_owned()
    } else {
        host.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn words(line: &str) -> Vec<String> {
        args::split_command_line(line).unwrap()
    }

    #[test]
    fn names_servers_after_what_a_launcher_runs() {
        assert_eq!(
            launched_name(&words("/usr/bin/mcp-server --x")),
            "mcp-server"
        );
        assert_eq!(
            launched_name(&words("npx -y @modelcontextprotocol/server-everything")),
            "server-everything"
        );
        assert_eq!(
            launched_name(&words(
                "npx -y @modelcontextprotocol/server-filesystem@2025.1 /tmp"
            )),
            "server-filesystem"
        );
        assert_eq!(
            launched_name(&words("uvx mcp-server-fetch")),
            "mcp-server-fetch"
        );
        assert_eq!(
            launched_name(&words("python -m weather_server")),
            "weather_server"
        );
        assert_eq!(launched_name(&words("python3 /srv/weather.py")), "weather");
        assert_eq!(
            launched_name(&words("python3 /srv/tools/server.py")),
            "tools"
        );
        assert_eq!(
            launched_name(&words(
                "/opt/node /n/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
            )),
            "server-filesystem"
        );
        assert_eq!(
            launched_name(&words("node /n/@scope/server-x/dist/index.js /tmp")),
            "server-x"
        );
        assert_eq!(
            launched_name(&words("docker run -i --rm mcp/fetch:latest")),
            "fetch"
        );
        assert_eq!(launched_name(&words("npx")), "npx");
        assert_eq!(
            host_of("https://user:pw@api.example.com:8443/mcp?k=v"),
            "api.example.com:8443"
        );
        assert_eq!(host_of("ws://127.0.0.1:9/"), "127.0.0.1:9");
    }

    #[test]
    fn a_windows_program_is_named_without_the_extension_it_runs_by() {
        assert_eq!(
            without_run_extension("mcp-fixture-server.exe"),
            "mcp-fixture-server"
        );
        assert_eq!(without_run_extension("npx.CMD"), "npx");
        assert_eq!(without_run_extension("setup.Bat"), "setup");
        assert_eq!(without_run_extension("weather.py"), "weather.py");
        assert_eq!(without_run_extension(".exe"), ".exe");
        assert_eq!(without_run_extension("é.exe"), "é");
        assert_eq!(without_run_extension("x"), "x");
    }

    #[test]
    fn ws_urls_are_websocket_without_transport() {
        let global = Global::default();
        let c = build_config(&global, &Target::Url("ws://127.0.0.1:9/mcp".into(), None)).unwrap();
        assert_eq!(c.transport_type(), "websocket");
        let c = build_config(&global, &Target::Url("WSS://h/mcp".into(), None)).unwrap();
        assert_eq!(c.transport_type(), "websocket");
        let c = build_config(&global, &Target::Url("http://h/mcp".into(), None)).unwrap();
        assert_eq!(c.transport_type(), "streamable-http");
        assert!(build_config(
            &global,
            &Target::Url("ws://h/".into(), Some(UrlTransport::Sse))
        )
        .is_err());
    }

    #[test]
    fn exit_codes_follow_the_contract() {
        let s = || "x".to_owned();
        let code = |e: Error, connected| FailureInfo::from_error(&e, connected).exit;
        assert_eq!(
            code(
                Error::Timeout {
                    server: s(),
                    method: "m".into(),
                    after: Duration::from_secs(1)
                },
                true
            ),
            4
        );
        assert_eq!(
            code(
                Error::Closed {
                    server: s(),
                    detail: "d".into(),
                    stderr_tail: String::new()
                },
                false
            ),
            3
        );
        assert_eq!(
            code(
                Error::Unauthorized {
                    server: s(),
                    status: 401,
                    detail: "d".into(),
                    www_authenticate: Some("Bearer".into())
                },
                true
            ),
            7
        );
        for connected in [false, true] {
            let e = Error::SignInRequired {
                server: s(),
                detail: "d".into(),
            };
            assert_eq!(code(e, connected), 7);
        }
    }

    #[test]
    fn a_tool_the_policy_refuses_exits_2_naming_the_file_and_key() {
        use mcp_blocking::config::{RuleSource, ServerPolicy};
        let policy = ServerPolicy::new()
            .exclude_tools(["crash"])
            .with_exclude_source(RuleSource::key("mcpServers.gem.excludeTools"))
            .with_file(std::path::Path::new("settings.json"));
        let config = ServerConfig::stdio("gem", "x").with_policy(policy);
        assert!(policy_refusal(&config, "echo").is_none());
        let refused = policy_refusal(&config, "crash").expect("refused");
        for connected in [false, true] {
            let f = FailureInfo::from_error(&refused, connected);
            assert_eq!((f.exit, f.kind), (2, "tool_not_allowed"));
            assert_eq!(
                f.headline,
                "server `gem`: tool `crash` is excluded by `excludeTools` \
                 (`mcpServers.gem.excludeTools` in settings.json)"
            );
            assert_eq!(
                f.detail,
                [
                    "the server's `excludeTools` in settings.json does not allow it; change the \
                  file to call it"
                ]
            );
            let doc = f.to_json();
            assert_eq!(doc["error"]["tool"], "crash");
            assert_eq!(doc["error"]["key"], "mcpServers.gem.excludeTools");
            assert_eq!(doc["error"]["file"], "settings.json");
            assert_eq!(doc["error"]["server"], "gem");
        }
    }

    #[test]
    fn rpc_messages_do_not_repeat_the_code() {
        let f = FailureInfo::from_error(
            &Error::Rpc {
                server: "everything".into(),
                code: mcp_blocking::error::ErrorCode(-32602),
                message: "MCP error -32602: Invalid arguments for tool echo".into(),
                data: None,
            },
            true,
        );
        assert_eq!(
            f.headline,
            "server `everything`: error -32602: Invalid arguments for tool echo"
        );
        assert_eq!(f.exit, 5);
    }

    #[test]
    fn the_headline_names_the_server_and_the_stderr_tail_follows() {
        let f = FailureInfo::from_error(
            &Error::Closed {
                server: "fx".into(),
                detail: "exited with status 3".into(),
                stderr_tail: "boom".into(),
            },
            true,
        )
        .renamed("fx", "fixture");
        assert!(
            f.headline.starts_with("server `fixture`:"),
            "{}",
            f.headline
        );
        assert_eq!(f.server.as_deref(), Some("fixture"));
        assert!(f.detail.iter().any(|l| l == "boom"), "{:?}", f.detail);
    }
}
