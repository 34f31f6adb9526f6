//! `mcpb`: talk to one MCP server from the command line.
//!
//! ```text
//! mcpb (--stdio "CMD ARGS" | --url URL [--transport http|sse|ws] | --config FILE --server NAME)
//!      [--timeout SECS] [--header 'K: V']... [--env K=V]... [--json] [-v|-vv] COMMAND
//! ```
//!
//! One run: parse the command line, build a [`ServerConfig`], connect, run one command, close,
//! and exit with a code that says how it went (see [`HELP`]). Errors go to stderr as one line
//! naming the server, then detail lines; with `--json`, stdout always holds exactly one JSON
//! document (the result, or `{"error": ...}`).
//!
//! Nothing it prints shows a secret of the server (see [`ServerConfig::redact`]): its errors,
//! notes and log lines pass through the library's redaction rule. Text a server chose (tool
//! output, messages, names, stderr lines) is printed with its control characters escaped (see
//! [`terminal`]), so it cannot drive the terminal.

mod args;
mod render;
mod terminal;

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

use mcp_blocking::config::{LoadReport, TransportConfig};
use mcp_blocking::error::ConnectErrorKind;
use mcp_blocking::{CallOptions, Client, ConfigLoader, Error, ServerConfig};
use serde_json::{json, Value};

use args::{Cli, Command, Parsed, Target, UrlTransport, UsageError};

const HELP: &str = "\
mcpb: talk to one Model Context Protocol server

USAGE:
  mcpb (--stdio \"CMD ARGS\" | --url URL [--transport http|sse|ws] | --config FILE --server NAME)
       [--timeout SECS] [--header 'K: V']... [--env K=V]... [--json] [-v|-vv] COMMAND

SERVER:
  --stdio \"CMD ARGS\"   start CMD (split like a shell would, quotes honoured, no shell run)
                       and speak MCP over its stdin/stdout
  --url URL            a remote server; --transport http (Streamable HTTP), sse (legacy
                       HTTP+SSE) or ws (WebSocket); without it, Streamable HTTP falling back
                       to legacy SSE
  --config FILE        a host config file (.mcp.json, Claude Desktop, VS Code, YAML list);
  --server NAME        the server in it (may be left out when the file has just one)

OPTIONS:
  --timeout SECS       per-request timeout in seconds, handshake included; more than 0, at
                       most 86400 (24 h) (default: the config's, else 15)
  --header 'K: V'      add an HTTP header (repeatable; remote servers only)
  --env K=V            add an environment variable for a stdio server (repeatable); the
                       server otherwise sees only HOME, LOGNAME, PATH, SHELL, TERM and USER
  --json               print exactly one JSON document on stdout, errors included
  -v, -vv              log at info (server stderr, progress) or debug level on stderr
  -h, --help           this text;  -V, --version  the version

COMMANDS:
  info                                 server name, version, protocol, capabilities
  tools                                list tools
  call TOOL [JSON_OBJECT | k=v ...]    call a tool; k=v values are JSON when they parse
                                       (n=3, on=true, o={\"a\":1}), else strings (name=Ada)
  resources | templates                list resources or resource templates
  read URI                             read a resource
  prompts                              list prompts
  prompt NAME [JSON_OBJECT | k=v ...]  get a prompt (values are strings)
  ping                                 ping the server
  servers                              with --config: every server in the file, its
                                       transport and any error (exit 2 if any)

EXIT STATUS:
  0 ok   1 the tool returned isError   2 usage or config error   3 could not connect (a
  handshake that times out included)   4 timed out   5 the server answered with a JSON-RPC
  error (or a malformed result)   6 connection closed mid-request   7 the server refused the
  credentials (HTTP 401 or 403) after connecting; a refusal while connecting is 3

EXAMPLES:
  mcpb --stdio \"npx -y @modelcontextprotocol/server-everything\" call get-sum a=2 b=3
  mcpb --url http://localhost:3001/mcp --json tools
  mcpb --config .mcp.json --server fs read file:///tmp/notes.txt
";

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
}

impl FailureInfo {
    fn usage(msg: impl Into<String>) -> Failure {
        Box::new(FailureInfo {
            exit: 2,
            kind: "usage",
            server: None,
            headline: format!("usage: {}", msg.into()),
            detail: vec!["run `mcpb --help` for the syntax".into()],
            extra: Value::Null,
        })
    }

    fn config(server: Option<&str>, headline: String, detail: Vec<String>) -> Failure {
        Box::new(FailureInfo {
            exit: 2,
            kind: "config",
            server: server.map(str::to_owned),
            headline,
            detail,
            extra: Value::Null,
        })
    }

    /// Classifies a library error. `connected` tells a failure to connect (3) from a failure
    /// of a request on a live connection.
    fn from_error(e: &Error, connected: bool) -> Failure {
        let text = e.to_string();
        let mut lines = text.lines().map(str::to_owned);
        let headline = lines.next().unwrap_or_default();
        let mut detail: Vec<String> = lines.filter(|l| !l.is_empty()).collect();
        let mut extra = Value::Null;
        let (exit, kind) = match e {
            Error::Config(_) => (2, "config"),
            Error::InvalidArgument { .. } => (2, "invalid_argument"),
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
                detail.push("use --timeout SECS to wait longer".into());
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
            Error::Unsupported { .. } => (5, "unsupported"),
            Error::Spawn { .. } => (3, "connect"),
            // Closed, Transport (broken pipe, dropped stream), NotConnected after the end.
            _ => (6, "closed"),
        };
        Box::new(FailureInfo {
            exit,
            kind,
            server: e.server().map(str::to_owned),
            headline,
            detail,
            extra,
        })
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

    fn print(&self, json_mode: bool) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "mcpb: {}", terminal::escaped(&self.headline));
        for line in &self.detail {
            let _ = writeln!(err, "  {}", terminal::escaped(line));
        }
        if json_mode {
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
            print_json(&doc);
        }
    }
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
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let json_mode = args::wants_json(&argv);
    let cli = match args::parse(&argv) {
        Ok(Parsed::Run(cli)) => cli,
        Ok(Parsed::Help) => {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Version) => {
            println!("mcpb {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(UsageError(msg)) => {
            let f = FailureInfo::usage(msg);
            f.print(json_mode);
            return ExitCode::from(f.exit);
        }
    };
    init_logging(cli.verbosity);
    match run(&cli) {
        Ok(out) => {
            if let Some(note) = &out.note {
                eprintln!("mcpb: {}", terminal::escaped(note));
            }
            if cli.json {
                print_json(&out.json);
            } else {
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(terminal::escaped(&out.text).as_bytes());
                if !out.text.is_empty() && !out.text.ends_with('\n') {
                    let _ = stdout.write_all(b"\n");
                }
                let _ = stdout.flush();
            }
            ExitCode::from(out.exit)
        }
        Err(f) => {
            f.print(cli.json);
            ExitCode::from(f.exit)
        }
    }
}

fn init_logging(verbosity: u8) {
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
        // those themselves, so the warnings would only repeat them (-v shows them).
        builder.filter_module("mcp_blocking::config", log::LevelFilter::Error);
    }
    // RUST_LOG refines the default (e.g. RUST_LOG=mcp_blocking::stderr=off); -v still raises it.
    if let Ok(spec) = std::env::var("RUST_LOG") {
        builder.parse_filters(&spec);
        if verbosity > 0 {
            builder.filter_level(level);
        }
    }
    // The HTTP client shows a request's path and query (where credentials may be) at trace
    // level; mcpb never prints them.
    builder.filter_module("ureq", level.min(log::LevelFilter::Debug));
    let _ = builder.try_init();
}

fn print_json(doc: &Value) {
    let text = serde_json::to_string_pretty(doc).unwrap_or_else(|e| {
        json!({ "error": { "kind": "internal", "message": e.to_string() } }).to_string()
    });
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(terminal::escaped_json(text).as_bytes());
    let _ = stdout.write_all(b"\n");
    let _ = stdout.flush();
}

fn run(cli: &Cli) -> Result<Output, Failure> {
    if let Target::Config(file, _) = &cli.target {
        let report = load_config(file)?;
        if cli.command == Command::Servers {
            return Ok(render::servers(file, &report));
        }
        let config = pick_server(cli, file, &report)?;
        return connect_and_run(cli, config);
    }
    let config = build_config(cli)?;
    connect_and_run(cli, config)
}

fn load_config(file: &str) -> Result<LoadReport, Failure> {
    ConfigLoader::new().load(file).map_err(|e| {
        FailureInfo::config(
            e.server.as_deref(),
            format!("config `{file}`: {e}"),
            expected_found(&e),
        )
    })
}

fn expected_found(e: &mcp_blocking::config::ConfigError) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(f) = &e.found {
        v.push(format!("found: {f}"));
    }
    if let Some(x) = &e.expected {
        v.push(format!("expected: {x}"));
    }
    v
}

fn pick_server(cli: &Cli, file: &str, report: &LoadReport) -> Result<ServerConfig, Failure> {
    let Target::Config(_, wanted) = &cli.target else {
        unreachable!("pick_server is only called for --config");
    };
    let names = || {
        let mut all: Vec<&str> = report.servers.iter().map(|s| s.name()).collect();
        all.extend(report.errors.iter().filter_map(|e| e.server.as_deref()));
        if all.is_empty() {
            "the file defines no server".to_owned()
        } else {
            format!("servers in the file: {}", all.join(", "))
        }
    };
    let name = match wanted {
        Some(n) => n.clone(),
        None if report.servers.len() == 1 && report.errors.is_empty() => {
            report.servers[0].name().to_owned()
        }
        None => {
            return Err(FailureInfo::usage(format!(
                "--config needs --server NAME ({})",
                names()
            )))
        }
    };
    if let Some(s) = report.server(&name) {
        return apply_overrides(cli, s.clone());
    }
    if let Some(e) = report
        .errors
        .iter()
        .find(|e| e.server.as_deref() == Some(&name))
    {
        return Err(FailureInfo::config(
            Some(&name),
            format!("server `{name}`: invalid configuration in `{file}`"),
            std::iter::once(e.to_string())
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
    Err(FailureInfo::config(
        Some(&name),
        format!("server `{name}`: not found in `{file}`"),
        vec![names()],
    ))
}

/// The config for `--stdio` or `--url`.
fn build_config(cli: &Cli) -> Result<ServerConfig, Failure> {
    let config = match &cli.target {
        Target::Stdio(words) => {
            let (cmd, rest) = words
                .split_first()
                .expect("split_command_line never returns empty");
            ServerConfig::stdio(program_name(cmd), cmd.clone()).args(rest.iter().cloned())
        }
        Target::Url(url, transport) => {
            let name = host_of(url);
            match transport {
                Some(UrlTransport::Http) => ServerConfig::http(name, url.clone()),
                Some(UrlTransport::Sse) => ServerConfig::sse(name, url.clone()),
                Some(UrlTransport::Ws) => ServerConfig::websocket(name, url.clone()),
                None => detecting_http(ServerConfig::http(name, url.clone())),
            }
        }
        Target::Config(..) => unreachable!("build_config is not called for --config"),
    };
    apply_overrides(cli, config)
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

/// Applies `--timeout`, `--env` and `--header` on top of a config.
fn apply_overrides(cli: &Cli, mut config: ServerConfig) -> Result<ServerConfig, Failure> {
    let kind = config.transport_type();
    let server = config.name().to_owned();
    if !cli.env.is_empty() && kind != "stdio" {
        return Err(FailureInfo::config(
            Some(&server),
            format!("server `{server}`: --env applies only to stdio servers, this one is {kind}"),
            vec![],
        ));
    }
    if !cli.headers.is_empty() && kind == "stdio" {
        return Err(FailureInfo::config(
            Some(&server),
            format!(
                "server `{server}`: --header applies only to remote (http, sse and websocket) \
                 servers, this one is {kind}"
            ),
            vec![],
        ));
    }
    for (k, v) in &cli.env {
        config = config.env(k, v);
    }
    for (k, v) in &cli.headers {
        config = config.header(k, v);
    }
    if let Some(secs) = cli.timeout {
        config = config.timeout_secs(secs);
    }
    Ok(config)
}

fn connect_and_run(cli: &Cli, config: ServerConfig) -> Result<Output, Failure> {
    let target = render::target_of(&config);
    log::info!("connecting to `{}` ({target})", config.name());
    let client = Client::connect(config.clone())
        .map_err(|e| FailureInfo::from_error(&e, false).redacted(&config))?;
    let result = run_command(cli, &client, &target);
    if let Err(e) = client.close() {
        log::debug!("closing: {}", config.redact(&e.to_string()));
    }
    result.map_err(|e| FailureInfo::from_error(&e, true).redacted(&config))
}

// The library's `Error` is returned as it is, to be classified in one place.
fn run_command(cli: &Cli, client: &Client, target: &str) -> Result<Output, Error> {
    let server = client.server_name().to_owned();
    Ok(match &cli.command {
        Command::Info => render::info(client, target),
        Command::Tools => render::tools(&client.list_tools()?),
        Command::Call(tool, arguments) => {
            let opts = CallOptions::new().on_progress(|p| {
                let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
                let msg = p
                    .message
                    .as_deref()
                    .map(|m| format!(" {m}"))
                    .unwrap_or_default();
                log::info!("progress {}{total}{msg}", p.progress);
            });
            let result = client.call_tool_with(tool, arguments.clone(), &opts)?;
            let mut out = render::call_result(&result);
            if result.failed() {
                out.exit = 1;
                out.note = Some(format!(
                    "server `{server}`: tool `{tool}` returned an error (isError)"
                ));
            }
            out
        }
        Command::Resources => render::resources(&client.list_resources()?),
        Command::Templates => render::templates(&client.list_resource_templates()?),
        Command::Read(uri) => render::read(&client.read_resource(uri)?),
        Command::Prompts => render::prompts(&client.list_prompts()?),
        Command::Prompt(name, arguments) => {
            render::prompt(&client.get_prompt(name, arguments.clone())?)
        }
        Command::Ping => {
            let start = Instant::now();
            client.ping()?;
            let ms = start.elapsed().as_secs_f64() * 1000.0;
            Output::ok(
                json!({ "server": server, "ok": true, "elapsedMs": ms }),
                format!("pong from `{server}` in {ms:.1} ms"),
            )
        }
        Command::Servers => unreachable!("`servers` needs --config and never connects"),
    })
}

/// The server name for `--stdio`: the program's file name.
fn program_name(cmd: &str) -> String {
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

    #[test]
    fn names_servers_after_the_program_or_host() {
        assert_eq!(program_name("/usr/bin/node"), "node");
        assert_eq!(program_name("npx"), "npx");
        assert_eq!(
            host_of("https://user:pw@api.example.com:8443/mcp?k=v"),
            "api.example.com:8443"
        );
        assert_eq!(host_of("ws://127.0.0.1:9/"), "127.0.0.1:9");
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
                Error::Rpc {
                    server: s(),
                    code: mcp_blocking::error::ErrorCode(-1),
                    message: "m".into(),
                    data: None
                },
                true
            ),
            5
        );
        assert_eq!(
            code(
                Error::Closed {
                    server: s(),
                    detail: "d".into(),
                    stderr_tail: String::new()
                },
                true
            ),
            6
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
        assert_eq!(
            code(
                Error::InvalidArgument {
                    server: s(),
                    detail: "d".into()
                },
                true
            ),
            2
        );
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
        );
        assert!(f.headline.starts_with("server `fx`:"), "{}", f.headline);
        assert!(f.detail.iter().any(|l| l == "boom"), "{:?}", f.detail);
    }
}
