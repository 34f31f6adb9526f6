//! `mcpb shell`: one session, commands typed line by line.
//!
//! Each line is a command as after `mcpb` (`tools`, `call echo text=hi`, `read URI -o FILE`,
//! `subscribe URI`...), split like a shell would split it. The connection, its subscriptions
//! and any other session-scoped state last until `exit`, `quit` or the end of input.
//! `history` lists the lines typed so far; `!N` runs line N again and `!!` the last one.
//! Updates of subscribed resources and (with `--log-level`) log messages are printed as they
//! arrive. On a terminal a prompt is shown on stderr; otherwise lines are read from stdin as
//! they come, so a script can be piped in.

use std::io::{BufRead, IsTerminal};

use clap::Parser;
use mcp_blocking::model::Root;
use serde_json::{json, Value};

use crate::args::{Cli, Command, Global};
use crate::{Failure, FailureInfo, Output, Session};

const SHELL_HELP: &str = "\
Commands are typed as after `mcpb`: info, tools, call TOOL [k=v ...], resources, templates,
read URI [-o FILE], prompts, prompt NAME [k=v ...], complete ..., subscribe URI, ping,
help [COMMAND]. `call TOOL --help` shows a tool's arguments.
Shell commands: history (the lines typed so far), !N (run line N again), !! (the last line),
roots (the roots offered to the server), roots add DIR, roots remove DIR|URI (the server is
told the list changed), exit or quit (or end of input).";

/// Runs the shell on a connected session until the input ends. The result's exit code is the
/// last command's.
pub(crate) fn run(global: &Global, session: &Session) -> Result<Output, Failure> {
    let interactive = std::io::stdin().is_terminal();
    let mut history: Vec<String> = Vec::new();
    let mut last_exit = 0u8;
    // Checked when connecting: the shell offers roots from the start.
    let mut roots = crate::roots::roots_of(&global.roots).unwrap_or_default();
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    if interactive {
        eprintln!(
            "mcpb: connected to `{}`; `help` for the commands, `exit` to leave",
            crate::terminal::escaped(session.server())
        );
    }
    loop {
        if interactive {
            eprint!("mcpb {}> ", crate::terminal::escaped(session.server()));
        }
        let Some(Ok(line)) = lines.next() else { break };
        let line = line.trim().to_owned();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = match recall(&line, &history) {
            Ok(l) => l,
            Err(msg) => {
                FailureInfo::usage(msg).print(false);
                last_exit = 2;
                continue;
            }
        };
        history.push(line.clone());
        match line.as_str() {
            "exit" | "quit" => break,
            "history" => {
                for (i, h) in history.iter().enumerate() {
                    println!("{:4}  {h}", i + 1);
                }
                continue;
            }
            "help" => {
                println!("{SHELL_HELP}");
                continue;
            }
            _ => {}
        }
        let result = if line == "roots" || line.starts_with("roots ") {
            roots_line(session, &mut roots, &line)
        } else {
            one_line(global, session, &line)
        };
        crate::clear_progress();
        match result {
            Ok(out) => {
                out.print(global.json);
                last_exit = out.exit;
            }
            Err(f) => {
                f.print(global.json);
                last_exit = f.exit;
                if crate::interrupt::interrupted() || !session.client.is_connected() {
                    let mut f = f;
                    f.printed = true;
                    return Err(f);
                }
            }
        }
    }
    Ok(Output {
        json: Value::Null,
        text: String::new(),
        exit: last_exit,
        note: None,
    })
}

/// `!!` and `!N` replaced by the line they name.
fn recall(line: &str, history: &[String]) -> Result<String, String> {
    let Some(rest) = line.strip_prefix('!') else {
        return Ok(line.to_owned());
    };
    let found = if rest == "!" {
        history.last()
    } else {
        rest.parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| history.get(i))
    };
    match found {
        Some(l) => {
            eprintln!("{}", crate::terminal::escaped(l));
            Ok(l.clone())
        }
        None => Err(format!(
            "no line `{line}` in the history (`history` lists them)"
        )),
    }
}

/// `roots`, `roots add DIR`, `roots remove DIR|URI`: lists or changes the roots offered, and
/// tells the server when they change (`notifications/roots/list_changed`).
fn roots_line(session: &Session, roots: &mut Vec<Root>, line: &str) -> Result<Output, Failure> {
    let words = shell_words::split(line)
        .map_err(|_| FailureInfo::usage(format!("`{line}` has an unterminated quote")))?;
    let words: Vec<&str> = words.iter().map(String::as_str).skip(1).collect();
    let text = if words.is_empty() {
        roots
            .iter()
            .map(|r| r.uri.clone())
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        let (changed, text) = crate::roots::edit(roots, &words).map_err(FailureInfo::usage)?;
        session
            .client
            .set_roots(changed.clone())
            .map_err(|e| session.failure(&e))?;
        *roots = changed;
        text
    };
    let uris: Vec<&str> = roots.iter().map(|r| r.uri.as_str()).collect();
    Ok(Output::ok(
        json!({ "server": session.server(), "roots": uris }),
        text,
    ))
}

/// Parses and runs one line.
fn one_line(global: &Global, session: &Session, line: &str) -> Result<Output, Failure> {
    let words = shell_words::split(line)
        .map_err(|_| FailureInfo::usage(format!("`{line}` has an unterminated quote")))?;
    let argv = std::iter::once("mcpb".to_owned()).chain(words);
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => match e.kind() {
            clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                let text = e.render().to_string();
                return Ok(Output::ok(json!({ "help": text }), text));
            }
            _ => return Err(crate::usage(crate::args::clap_usage(&e))),
        },
    };
    let g = &cli.global;
    if g.stdio.is_some() || g.url.is_some() || g.config.is_some() || !g.servers.is_empty() {
        return Err(FailureInfo::usage(
            "the server is chosen when the shell starts; leave --stdio, --url, --config and \
             --server out of its lines",
        ));
    }
    let mut here = global.clone();
    here.json |= g.json;
    let Some(command) = cli.command else {
        return Err(FailureInfo::usage("no command given (`help` lists them)"));
    };
    match &command {
        Command::Help { topic } => crate::help(topic.as_deref()),
        Command::Call(call) if call.tool.is_none() => crate::help(Some("call")),
        Command::Subscribe { uri } => {
            crate::require(session, "resources.subscribe", "resource subscriptions")?;
            session
                .client
                .subscribe(uri)
                .map_err(|e| session.failure(&e))?;
            Ok(Output::ok(
                json!({ "server": session.server(), "subscribed": uri }),
                format!("subscribed to {uri}; updates are printed as they arrive"),
            ))
        }
        _ => crate::run_command(&here, session, &command),
    }
}
