//! `mcpb trust [--yes]`: shows what each project config file found from the current folder
//! would run, and records the user's approval of it (see [`crate::discovered`]).
//!
//! ```text
//!  discover ──> project files not approved with their current contents
//!      none ──> "nothing to approve", exit 0
//!      each ──> its servers: command line, working folder, names of its env variables, urls
//!           ──> --yes: approved │ terminal: "approve? [y/N]" │ neither: refused, exit 2
//!           ──> approvals saved in the trust file (keyed by path and SHA-256 of the contents)
//! ```
//!
//! What is approved is the file as it was read and shown: discovery reads it once, and hashes
//! and loads those same bytes.

use std::fmt::Write as _;
use std::io::{BufRead, IsTerminal};

use mcp_blocking::config::discover::DiscoveredFile;
use mcp_blocking::config::TransportConfig;
use mcp_blocking::ServerConfig;
use serde_json::{json, Value};

use crate::args::Global;
use crate::{discovered, render, terminal, Failure, FailureInfo, Output};

/// `mcpb trust`.
pub(crate) fn command(global: &Global, yes: bool) -> Result<Output, Failure> {
    global
        .refuse(
            "trust",
            &[
                "--stdio",
                "--url",
                "--transport",
                "--config",
                "--server",
                "--header",
                "--env",
                "--log-level",
            ]
            .into_iter()
            .chain(crate::sign_in::ALL)
            .collect::<Vec<_>>(),
            "it approves the project config files found from the current folder; a file named \
             with --config needs no approval",
        )
        .map_err(crate::usage)?;
    let mut found = discovered::discover(global)?;
    let waiting: Vec<&DiscoveredFile> = found.discovery.untrusted_files().collect();
    if waiting.is_empty() {
        let text = "nothing to approve: no project config file found from this folder waits \
                    for approval";
        return Ok(Output::ok(
            json!({ "approved": [], "waiting": [] }),
            text.to_owned(),
        ));
    }
    let mut shown = String::new();
    let mut files = Vec::new();
    for f in &waiting {
        let (text, servers) = describe(f, &found.discovery);
        shown.push_str(&text);
        files.push((f, servers));
    }
    let interactive = std::io::stdin().is_terminal();
    if !yes && !interactive {
        let mut f = FailureInfo::config(
            None,
            "not approved: stdin is not a terminal to ask on; review the commands below and \
             run `mcpb trust --yes` to approve them"
                .to_owned(),
            shown.lines().map(str::to_owned).collect(),
        );
        f.extra = json!({ "waiting": files.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>() });
        return Err(f);
    }
    let mut approved = Vec::new();
    let mut declined = Vec::new();
    let mut text = String::new();
    for (f, servers) in &files {
        let file = f.origin.file.display().to_string();
        let Some(digest) = &f.digest else {
            let _ = writeln!(text, "{file}: could not be read; not approved");
            declined.push(servers.clone());
            continue;
        };
        let ok = yes || {
            let (one, _) = describe(f, &found.discovery);
            eprint!("{}", terminal::escaped(&one));
            ask(&format!("approve {file}? [y/N] "))?
        };
        if ok {
            found.store.approve(digest);
            let _ = writeln!(text, "approved {file}");
            approved.push(servers.clone());
        } else {
            let _ = writeln!(text, "not approved: {file}");
            declined.push(servers.clone());
        }
    }
    if !approved.is_empty() {
        // The message names the trust file.
        found
            .store
            .save()
            .map_err(|e| FailureInfo::config(None, e.to_string(), vec![]))?;
    }
    let body = if yes { format!("{shown}{text}") } else { text };
    Ok(Output::ok(
        json!({ "approved": approved, "declined": declined }),
        body,
    ))
}

/// What `f` would run, as text and JSON: each server of the file (the shadowed ones too: the
/// approval covers the whole file).
fn describe(f: &DiscoveredFile, d: &mcp_blocking::config::discover::Discovery) -> (String, Value) {
    let mut text = format!(
        "{} ({}, project file):\n",
        f.origin.file.display(),
        f.origin.host.name()
    );
    let servers = d
        .servers
        .iter()
        .filter(|s| s.origin.file == f.origin.file)
        .map(|s| &s.server)
        .chain(
            d.shadowed
                .iter()
                .filter(|s| s.origin.file == f.origin.file)
                .map(|s| &s.server),
        );
    let mut list = Vec::new();
    for s in servers {
        let _ = writeln!(text, "  {}", server_line(s));
        if let TransportConfig::Stdio(stdio) = s.transport() {
            if let Some(cwd) = &stdio.cwd {
                let _ = writeln!(text, "      in {}", cwd.display());
            }
            if !stdio.env.is_empty() {
                let names: Vec<&str> = stdio.env.keys().map(String::as_str).collect();
                let _ = writeln!(text, "      with variables {}", names.join(", "));
            }
        }
        // A remote server's `headersHelper` is a command too, run once the file is approved
        // (with --allow-header-commands): the user is shown where it is written.
        for k in
            f.report.ignored.iter().filter(|k| {
                k.server.as_deref() == Some(s.name()) && k.key.ends_with(".headersHelper")
            })
        {
            let _ = writeln!(
                text,
                "      and runs the command at `{}` for its headers (with --allow-header-commands)",
                k.key
            );
        }
        list.push(json!({
            "name": s.name(),
            "transport": s.transport_type(),
            "target": render::target_of(s),
        }));
    }
    let value = json!({
        "file": f.origin.file.display().to_string(),
        "host": f.origin.host.name(),
        "sha256": f.digest.as_ref().map(|d| d.sha256.clone()),
        "servers": list,
    });
    (text, value)
}

/// `name: runs CMD ARGS` or `name: connects to URL`, as the redaction rule shows them.
fn server_line(s: &ServerConfig) -> String {
    let target = render::target_of(s);
    match s.transport() {
        TransportConfig::Stdio(_) => format!("`{}` runs: {target}", s.name()),
        _ => format!(
            "`{}` connects to ({}): {target}",
            s.name(),
            s.transport_type()
        ),
    }
}

/// Asks a yes/no question on the terminal: only `y` or `yes` approve.
fn ask(question: &str) -> Result<bool, Failure> {
    eprint!("{question}");
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| FailureInfo::config(None, format!("cannot read the answer: {e}"), vec![]))?;
    Ok(is_yes(&line))
}

fn is_yes(answer: &str) -> bool {
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_yes_approves() {
        assert!(is_yes("y\n"));
        assert!(is_yes(" YES \r\n"));
        assert!(!is_yes("\n"));
        assert!(!is_yes("n"));
        assert!(!is_yes("yep"));
    }
}
