//! The command line: options, the command and its arguments, and the small parsers behind them
//! (shell-like splitting of `--stdio`, `k=v` tool arguments).

use std::time::Duration;

use mcp_blocking::config::MAX_TIMEOUT;
use serde_json::{Map, Value};

/// How to reach the server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Target {
    /// `--stdio "CMD ARGS"`, already split.
    Stdio(Vec<String>),
    /// `--url URL [--transport T]`; `None` means detect (Streamable HTTP, else legacy SSE).
    Url(String, Option<UrlTransport>),
    /// `--config FILE [--server NAME]`.
    Config(String, Option<String>),
}

/// The transports `--transport` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UrlTransport {
    Http,
    Sse,
    Ws,
}

/// What to do once connected.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Command {
    Info,
    Tools,
    Call(String, Value),
    Resources,
    Templates,
    Read(String),
    Prompts,
    Prompt(String, Value),
    Ping,
    Servers,
    Tasks,
    TaskCancel(String),
}

impl Command {
    /// The command's name as typed.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Command::Info => "info",
            Command::Tools => "tools",
            Command::Call(..) => "call",
            Command::Resources => "resources",
            Command::Templates => "templates",
            Command::Read(_) => "read",
            Command::Prompts => "prompts",
            Command::Prompt(..) => "prompt",
            Command::Ping => "ping",
            Command::Servers => "servers",
            Command::Tasks => "tasks",
            Command::TaskCancel(_) => "task-cancel",
        }
    }
}

/// A parsed command line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cli {
    pub(crate) target: Target,
    pub(crate) timeout: Option<f64>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) json: bool,
    pub(crate) verbosity: u8,
    pub(crate) command: Command,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Parsed {
    Run(Box<Cli>),
    Help,
    Version,
}

/// A usage error: what was wrong with the command line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UsageError(pub(crate) String);

fn usage<T>(msg: impl Into<String>) -> Result<T, UsageError> {
    Err(UsageError(msg.into()))
}

/// Whether `--json` appears before any `--` (so even a usage error can answer in JSON).
pub(crate) fn wants_json(args: &[String]) -> bool {
    args.iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--json")
}

/// Parses the arguments after the program name. Options may come before or after the command;
/// everything after `--` is a positional argument.
pub(crate) fn parse(args: &[String]) -> Result<Parsed, UsageError> {
    let mut stdio = None;
    let mut url = None;
    let mut transport = None;
    let mut config = None;
    let mut server = None;
    let mut timeout = None;
    let mut headers = Vec::new();
    let mut env = Vec::new();
    let mut json = false;
    let mut verbosity = 0u8;
    let mut positional: Vec<String> = Vec::new();

    let mut it = args.iter();
    let mut options_done = false;
    while let Some(arg) = it.next() {
        if options_done || !arg.starts_with('-') || arg == "-" {
            positional.push(arg.clone());
            continue;
        }
        // `--name=value` is the same as `--name value`.
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = |what: &str| -> Result<String, UsageError> {
            match inline.clone().or_else(|| it.next().cloned()) {
                Some(v) => Ok(v),
                None => usage(format!("{name} needs {what}")),
            }
        };
        match name {
            "--" => options_done = true,
            "-h" | "--help" => return Ok(Parsed::Help),
            "-V" | "--version" => return Ok(Parsed::Version),
            "--stdio" => set_once(&mut stdio, name, value("a command line")?)?,
            "--url" => set_once(&mut url, name, value("a URL")?)?,
            "--transport" => {
                let t = match value("http, sse or ws")?.to_ascii_lowercase().as_str() {
                    "http" | "streamable-http" => UrlTransport::Http,
                    "sse" => UrlTransport::Sse,
                    "ws" | "websocket" => UrlTransport::Ws,
                    other => {
                        return usage(format!(
                            "--transport must be http, sse or ws, not `{other}`"
                        ))
                    }
                };
                set_once(&mut transport, name, t)?;
            }
            "--config" => set_once(&mut config, name, value("a file")?)?,
            "--server" => set_once(&mut server, name, value("a server name")?)?,
            "--timeout" => {
                let raw = value("a number of seconds")?;
                let secs: f64 = match raw.trim().parse() {
                    Ok(s) if timeout_in_range(s) => s,
                    _ => {
                        return usage(format!(
                            "--timeout must be a number of seconds more than 0 and at most {} \
                             (24 h), not `{raw}`",
                            MAX_TIMEOUT.as_secs()
                        ))
                    }
                };
                set_once(&mut timeout, name, secs)?;
            }
            "--header" | "-H" => {
                let raw = value("'Name: value'")?;
                match raw.split_once(':') {
                    Some((k, v)) if !k.trim().is_empty() && !k.contains(char::is_whitespace) => {
                        headers.push((k.trim().to_owned(), v.trim().to_owned()))
                    }
                    _ => {
                        return usage(format!(
                            "--header must look like 'Name: value', not `{raw}`"
                        ))
                    }
                }
            }
            "--env" | "-e" => {
                let raw = value("KEY=VALUE")?;
                match raw.split_once('=') {
                    Some((k, v)) if !k.is_empty() => env.push((k.to_owned(), v.to_owned())),
                    _ => return usage(format!("--env must look like KEY=VALUE, not `{raw}`")),
                }
            }
            "--json" => json = true,
            "--verbose" => verbosity = verbosity.saturating_add(1),
            _ if is_verbose_flag(name) => {
                verbosity = verbosity.saturating_add((name.len() - 1) as u8);
            }
            _ => return usage(format!("unknown option `{arg}`")),
        }
    }

    let target =
        match (stdio, url, config) {
            (Some(line), None, None) => Target::Stdio(split_command_line(&line)?),
            (None, Some(u), None) => Target::Url(u, transport.take()),
            (None, None, Some(file)) => Target::Config(file, server.take()),
            (None, None, None) => return usage(
                "say which server: --stdio \"CMD ARGS\", --url URL or --config FILE --server NAME",
            ),
            _ => return usage("give only one of --stdio, --url and --config"),
        };
    if transport.is_some() {
        return usage("--transport applies only to --url");
    }
    if server.is_some() {
        return usage("--server applies only to --config");
    }
    if matches!(target, Target::Stdio(_)) && !headers.is_empty() {
        return usage("--header applies only to --url (a stdio server takes --env)");
    }
    if matches!(target, Target::Url(..)) && !env.is_empty() {
        return usage("--env applies only to --stdio and --config (a URL server takes --header)");
    }
    let command = parse_command(positional)?;
    if command == Command::Servers && !matches!(target, Target::Config(..)) {
        return usage("`servers` lists the servers of a config file: use --config FILE servers");
    }
    Ok(Parsed::Run(Box::new(Cli {
        target,
        timeout,
        headers,
        env,
        json,
        verbosity,
        command,
    })))
}

/// Whether `secs` is a timeout the library takes: more than zero (after rounding to
/// nanoseconds) and at most [`MAX_TIMEOUT`]. NaN, infinities and negatives are not.
fn timeout_in_range(secs: f64) -> bool {
    Duration::try_from_secs_f64(secs).is_ok_and(|d| !d.is_zero() && d <= MAX_TIMEOUT)
}

fn is_verbose_flag(name: &str) -> bool {
    name.len() >= 2 && name.starts_with('-') && name[1..].bytes().all(|b| b == b'v')
}

fn set_once<T>(slot: &mut Option<T>, name: &str, value: T) -> Result<(), UsageError> {
    if slot.is_some() {
        return usage(format!("{name} given twice"));
    }
    *slot = Some(value);
    Ok(())
}

fn parse_command(positional: Vec<String>) -> Result<Command, UsageError> {
    let mut it = positional.into_iter();
    let Some(cmd) = it.next() else {
        return usage("no command given (info, tools, call, resources, templates, read, prompts, prompt, ping, servers, tasks, task-cancel)");
    };
    let rest: Vec<String> = it.collect();
    let no_args = |c: Command| {
        if rest.is_empty() {
            Ok(c)
        } else {
            usage(format!(
                "`{}` takes no arguments, got `{}`",
                c.name(),
                rest.join(" ")
            ))
        }
    };
    match cmd.as_str() {
        "info" => no_args(Command::Info),
        "tools" => no_args(Command::Tools),
        "resources" => no_args(Command::Resources),
        "templates" => no_args(Command::Templates),
        "prompts" => no_args(Command::Prompts),
        "ping" => no_args(Command::Ping),
        "servers" => no_args(Command::Servers),
        "tasks" => no_args(Command::Tasks),
        "task-cancel" => match rest.as_slice() {
            [id] => Ok(Command::TaskCancel(id.clone())),
            _ => usage("usage: task-cancel TASK_ID"),
        },
        "read" => match rest.as_slice() {
            [uri] => Ok(Command::Read(uri.clone())),
            _ => usage("usage: read URI"),
        },
        "call" => {
            let Some((tool, args)) = rest.split_first() else {
                return usage("usage: call TOOL [JSON_OBJECT | k=v ...]");
            };
            Ok(Command::Call(tool.clone(), parse_arguments(args, false)?))
        }
        "prompt" => {
            let Some((name, args)) = rest.split_first() else {
                return usage("usage: prompt NAME [JSON_OBJECT | k=v ...]");
            };
            Ok(Command::Prompt(name.clone(), parse_arguments(args, true)?))
        }
        other => usage(format!(
            "unknown command `{other}` (info, tools, call, resources, templates, read, prompts, prompt, ping, servers, tasks, task-cancel)"
        )),
    }
}

/// Tool or prompt arguments: nothing (`null`), one JSON object, or `k=v` pairs.
///
/// A `k=v` value is taken as JSON when it parses (`n=3`, `flag=true`, `o={"a":1}`, `s="x"`) and
/// as a string otherwise (`name=Ada`). Prompt arguments are strings by the protocol, so for them
/// a value is kept as typed, except that a quoted JSON string loses its quotes.
pub(crate) fn parse_arguments(args: &[String], strings_only: bool) -> Result<Value, UsageError> {
    match args {
        [] => return Ok(Value::Null),
        [one] if one.trim_start().starts_with('{') => {
            return match serde_json::from_str::<Value>(one) {
                Ok(v @ Value::Object(_)) => Ok(v),
                Ok(_) => usage("the arguments must be one JSON object"),
                Err(e) => usage(format!("the arguments are not valid JSON: {e}")),
            };
        }
        _ => {}
    }
    let mut map = Map::new();
    for arg in args {
        let Some((k, v)) = arg.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            return usage(format!("expected k=v or one JSON object, got `{arg}`"));
        };
        let value = match serde_json::from_str::<Value>(v) {
            Ok(Value::String(s)) => Value::String(s),
            Ok(_) if strings_only => Value::String(v.to_owned()),
            Ok(json) => json,
            Err(_) => Value::String(v.to_owned()),
        };
        if map.insert(k.to_owned(), value).is_some() {
            return usage(format!("argument `{k}` given twice"));
        }
    }
    Ok(Value::Object(map))
}

/// Splits a command line as a POSIX shell would split words, without running a shell: blanks
/// separate words; `'...'` is literal; `"..."` keeps blanks and honours `\"`, `\\`, `\$` and
/// `` \` ``; a backslash outside quotes takes the next character literally. No expansion of any
/// kind happens.
pub(crate) fn split_command_line(line: &str) -> Result<Vec<String>, UsageError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return usage(format!("unterminated ' in --stdio `{line}`")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return usage(format!("unterminated \" in --stdio `{line}`")),
                        },
                        Some(c) => word.push(c),
                        None => return usage(format!("unterminated \" in --stdio `{line}`")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') => {}
                    Some(c) => word.push(c),
                    None => return usage(format!("--stdio `{line}` ends with a lone backslash")),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return usage("--stdio needs a command");
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn run(v: &[&str]) -> Cli {
        match parse(&strings(v)) {
            Ok(Parsed::Run(cli)) => *cli,
            other => panic!("{v:?} gave {other:?}"),
        }
    }

    #[test]
    fn splits_like_a_shell_without_expanding() {
        assert_eq!(
            split_command_line(r#"node "my dir/x.js" --name 'a b' c\ d "q\"t" '$HOME'"#).unwrap(),
            strings(&[
                "node",
                "my dir/x.js",
                "--name",
                "a b",
                "c d",
                "q\"t",
                "$HOME"
            ])
        );
        assert_eq!(
            split_command_line("  a   ''  b ").unwrap(),
            strings(&["a", "", "b"])
        );
        assert!(split_command_line("a 'b").is_err());
        assert!(split_command_line("   ").is_err());
    }

    #[test]
    fn key_values_are_json_when_they_parse() {
        let args = strings(&[
            "n=3",
            "f=true",
            "o={\"a\":1}",
            "s=hello world",
            "q=\"7\"",
            "e=",
        ]);
        assert_eq!(
            parse_arguments(&args, false).unwrap(),
            json!({"n": 3, "f": true, "o": {"a": 1}, "s": "hello world", "q": "7", "e": ""})
        );
    }

    #[test]
    fn prompt_arguments_stay_strings() {
        let args = strings(&["n=3", "name=\"Ada\""]);
        assert_eq!(
            parse_arguments(&args, true).unwrap(),
            json!({"n": "3", "name": "Ada"})
        );
    }

    #[test]
    fn one_json_object_is_taken_whole() {
        let args = strings(&[r#"{"a": [1, 2]}"#]);
        assert_eq!(parse_arguments(&args, false).unwrap(), json!({"a": [1, 2]}));
        assert!(parse_arguments(&strings(&["{bad"]), false).is_err());
        assert!(parse_arguments(&strings(&["noequals"]), false).is_err());
        assert!(parse_arguments(&strings(&["a=1", "a=2"]), false).is_err());
    }

    #[test]
    fn options_may_follow_the_command() {
        let cli = run(&[
            "--stdio",
            "srv -x",
            "call",
            "slow",
            "ms=5",
            "--timeout",
            "1",
            "-vv",
            "--json",
        ]);
        assert_eq!(cli.target, Target::Stdio(strings(&["srv", "-x"])));
        assert_eq!(cli.command, Command::Call("slow".into(), json!({"ms": 5})));
        assert_eq!(cli.timeout, Some(1.0));
        assert_eq!(cli.verbosity, 2);
        assert!(cli.json);
    }

    #[test]
    fn url_with_transport_headers_and_inline_values() {
        let cli = run(&[
            "--url=http://h/mcp",
            "--transport",
            "ws",
            "-H",
            "X-A: b: c",
            "ping",
        ]);
        assert_eq!(
            cli.target,
            Target::Url("http://h/mcp".into(), Some(UrlTransport::Ws))
        );
        assert_eq!(cli.headers, vec![("X-A".to_string(), "b: c".to_string())]);
    }

    #[test]
    fn usage_errors_say_what_is_wrong() {
        let err = |v: &[&str]| match parse(&strings(v)) {
            Err(UsageError(m)) => m,
            other => panic!("{v:?} gave {other:?}"),
        };
        assert!(err(&["tools"]).contains("say which server"));
        assert!(err(&["--stdio", "a", "--url", "u", "tools"]).contains("only one"));
        assert!(err(&["--stdio", "a"]).contains("no command"));
        assert!(err(&["--stdio", "a", "dance"]).contains("unknown command `dance`"));
        assert!(err(&["--stdio", "a", "--timeout", "0", "ping"]).contains("more than 0"));
        assert!(err(&["--stdio", "a", "servers"]).contains("--config"));
        assert!(err(&["--stdio", "a", "--header", "X: y", "ping"]).contains("--header"));
        assert!(err(&["--stdio", "a", "--transport", "ws", "ping"]).contains("--transport"));
        assert!(err(&["--stdio", "a", "--bogus", "ping"]).contains("`--bogus`"));
        assert!(err(&["--stdio", "a", "read"]).contains("read URI"));
    }

    #[test]
    fn double_dash_ends_options() {
        let cli = run(&["--stdio", "a", "call", "t", "--", "--x=1"]);
        assert_eq!(cli.command, Command::Call("t".into(), json!({"--x": 1})));
    }
}
