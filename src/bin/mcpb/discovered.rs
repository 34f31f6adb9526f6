//! `mcpb` without `--stdio`, `--url` or `--config`: the servers of the config files the user's
//! hosts read, found from the current folder (`ConfigLoader::discover_with`).
//!
//! A project file (found in this folder or a parent) came with the folder: its servers do not
//! start until `mcpb trust` has recorded the user's approval of the file as it is now (in the
//! trust file, `$MCPB_TRUST_FILE`, else `trust.json` beside the default token file:
//! `$XDG_CONFIG_HOME/mcpb/`, `~/.config/mcpb/`, on Windows `%APPDATA%\mcpb\`). Such a server
//! is listed with the reason and the command that approves it, and never started. Files in the
//! home directory are the user's own. `--config FILE` still means that one file, trusted
//! because the user named it.

use std::ffi::OsString;
use std::fmt::Write;
use std::path::PathBuf;

use mcp_blocking::config::discover::{Discovery, Origin};
use mcp_blocking::config::locations::Platform;
use mcp_blocking::config::{ConfigError, ConfigErrorKind, LoadReport, TrustStore};
use mcp_blocking::ConfigLoader;
use serde_json::{json, Value};

use crate::args::{Command, Global};
use crate::{multi, render, Failure, FailureInfo, Output};

/// How the found files are named in messages about them as a whole.
pub(crate) const LABEL: &str = "the config files found from this folder";

/// The loader of every config mcpb reads, with the options of the command line.
pub(crate) fn loader(global: &Global) -> ConfigLoader {
    ConfigLoader::new()
        .with_inputs(global.inputs.iter().cloned().collect())
        .allow_header_commands(global.allow_header_commands)
        .accept_unenforced(global.accept_unenforced)
}

/// The trust file: `$MCPB_TRUST_FILE`, else `trust.json` where the token file goes by default.
pub(crate) fn trust_path() -> PathBuf {
    trust_path_in(Platform::current(), |name| std::env::var_os(name))
}

fn trust_path_in(platform: Platform, env: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    if let Some(p) = env("MCPB_TRUST_FILE").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    // The default token file's folder, whatever file MCPB_TOKEN_FILE names.
    let tokens = crate::auth::store_path_in(platform, |name| {
        (name != "MCPB_TOKEN_FILE").then(|| env(name)).flatten()
    });
    tokens.with_file_name("trust.json")
}

/// What was found, and the servers that may start as one report.
pub(crate) struct Found {
    pub(crate) discovery: Discovery,
    pub(crate) report: LoadReport,
    pub(crate) store: TrustStore,
}

/// Discovers from the current folder, with the approvals of the trust file.
pub(crate) fn discover(global: &Global) -> Result<Found, Failure> {
    let path = trust_path();
    let store =
        TrustStore::open(&path).map_err(|e| FailureInfo::config(None, e.to_string(), vec![]))?;
    let cwd = std::env::current_dir().map_err(|e| {
        FailureInfo::config(None, format!("cannot read the current folder: {e}"), vec![])
    })?;
    let discovery = loader(global)
        .discover_with(&cwd, &store)
        .map_err(|e| FailureInfo::config(None, format!("config discovery: {e}"), vec![]))?;
    for f in &discovery.files {
        if let Some(e) = &f.error {
            let mut here = e.clone();
            here.file = None;
            log::warn!(
                "{}: {} (no server of it is used; `mcpb servers` lists the files)",
                f.origin.file.display(),
                crate::config_error_text(&here)
            );
        }
    }
    let mut report = discovery.report();
    for e in &mut report.errors {
        if e.kind == ConfigErrorKind::NotTrusted {
            e.message
                .push_str("; review its commands and approve it with `mcpb trust`");
        }
    }
    Ok(Found {
        discovery,
        report,
        store,
    })
}

/// A server command on the discovered servers.
pub(crate) fn run(global: &Global, command: &Command) -> Result<Output, Failure> {
    if global.transport.is_some() {
        return Err(FailureInfo::usage("--transport applies only to --url"));
    }
    if global.servers.len() > 1 {
        return Err(FailureInfo::usage(
            "--server names one server here (only run and chat take more)",
        ));
    }
    let found = discover(global)?;
    if let Command::Servers { check } = command {
        if *check {
            return Ok(multi::check(global, LABEL, &found.report));
        }
        return Ok(servers(global, &found));
    }
    let report = startable(found)?;
    crate::on_report(
        global,
        command,
        LABEL,
        global.servers.first().map(String::as_str),
        &report,
    )
}

/// The report of what was found, or why nothing can start: no file found, or only servers
/// waiting for approval (said once, with what approves them).
pub(crate) fn startable(found: Found) -> Result<LoadReport, Failure> {
    let report = found.report;
    if report.servers.is_empty() && report.errors.is_empty() && report.skipped_disabled.is_empty() {
        return Err(FailureInfo::usage(
            "no MCP config file found from this folder (.mcp.json, .vscode/mcp.json, \
             .cursor/mcp.json, .gemini/settings.json, .codex/config.toml, nor the hosts' user \
             files): say which server: --stdio \"CMD ARGS\", --url URL or --config FILE",
        ));
    }
    let waiting = |e: &ConfigError| e.kind == ConfigErrorKind::NotTrusted;
    if report.servers.is_empty() && !report.errors.is_empty() && report.errors.iter().all(waiting) {
        let detail = report
            .errors
            .iter()
            .map(|e| {
                let mut here = e.clone();
                here.file = None;
                here.server = None;
                format!(
                    "server `{}`: {}",
                    e.server.as_deref().unwrap_or("?"),
                    crate::config_error_text(&here)
                )
            })
            .collect();
        return Err(FailureInfo::config(
            None,
            "nothing started: the servers found here are in project config files not approved \
             yet; review their commands and approve them with `mcpb trust`"
                .to_owned(),
            detail,
        ));
    }
    Ok(report)
}

/// `file (host, scope)`.
fn origin_text(o: &Origin) -> String {
    format!(
        "{} ({}, {})",
        o.file.display(),
        o.host.name(),
        o.scope.name()
    )
}

fn origin_json(o: &Origin) -> Value {
    json!({
        "file": o.file.display().to_string(),
        "host": o.host.name(),
        "scope": o.scope.name(),
    })
}

/// `servers` on the discovered files: each server with its origin, what it shadows and whether
/// it waits for approval; the servers the user's host settings turn off, with the rule; then
/// the files' errors and ignored keys.
fn servers(global: &Global, found: &Found) -> Output {
    let d = &found.discovery;
    let mut text = String::new();
    let width = d
        .servers
        .iter()
        .map(|s| s.server.name().len())
        .chain(d.denied.iter().map(|x| x.server.name().len()))
        .max()
        .unwrap_or(0);
    let mut servers = Vec::new();
    for s in &d.servers {
        let server = crate::sandbox::apply(global, s.server.clone());
        let target = render::target_of(&server);
        let _ = writeln!(
            text,
            "{:width$}  {:15}  {target}",
            s.server.name(),
            s.server.transport_type()
        );
        let _ = writeln!(text, "{:width$}  from {}", "", origin_text(&s.origin));
        let (lines, limits) = render::policy(&server);
        let (sandbox_line, sandbox) = crate::sandbox::shown(&server);
        for line in lines.into_iter().chain(sandbox_line) {
            let _ = writeln!(text, "{:width$}  {line}", "");
        }
        if s.needs_trust {
            let _ = writeln!(
                text,
                "{:width$}  not started: its project file is not approved (run `mcpb trust`)",
                ""
            );
        }
        let shadowed: Vec<_> = d
            .shadowed
            .iter()
            .filter(|x| x.server.name() == s.server.name())
            .collect();
        for x in &shadowed {
            let _ = writeln!(
                text,
                "{:width$}  shadows the one of {}",
                "",
                origin_text(&x.origin)
            );
        }
        servers.push(json!({
            "name": s.server.name(),
            "transport": s.server.transport_type(),
            "target": target,
            "origin": origin_json(&s.origin),
            "needsTrust": s.needs_trust,
            "policy": limits,
            "sandbox": sandbox,
            "shadowed": shadowed.iter().map(|x| origin_json(&x.origin)).collect::<Vec<_>>(),
        }));
    }
    // Turned off by the user's host settings (Claude Code's `permissions.deny`, ...): the
    // user's word, not an error of the file.
    let mut denied = Vec::new();
    for x in &d.denied {
        let _ = writeln!(
            text,
            "{:width$}  {:15}  {}",
            x.server.name(),
            x.server.transport_type(),
            render::target_of(&x.server)
        );
        let _ = writeln!(text, "{:width$}  from {}", "", origin_text(&x.origin));
        let _ = writeln!(
            text,
            "{:width$}  not started: {} ({})",
            "", x.reason, x.source
        );
        denied.push(json!({
            "name": x.server.name(),
            "origin": origin_json(&x.origin),
            "reason": x.reason,
            "file": x.source.file.as_ref().map(|f| f.display().to_string()),
            "key": x.source.key,
        }));
    }
    let mut errors = Vec::new();
    let mut failed = 0;
    for f in &d.files {
        let whole = f.error.iter();
        for e in f.report.errors.iter().chain(whole) {
            failed += 1;
            let mut here = e.clone();
            here.file = None;
            let message = crate::config_error_text(&here);
            let _ = writeln!(text, "error: {}: {message}", f.origin.file.display());
            errors.push(json!({
                "file": f.origin.file.display().to_string(),
                "server": e.server,
                "path": e.path,
                "message": message,
            }));
        }
        for name in &f.report.skipped_disabled {
            let _ = writeln!(text, "disabled: `{name}` in {}", f.origin.file.display());
        }
    }
    let ignored = render::ignored(&found.report, &mut text);
    if d.servers.is_empty() && d.denied.is_empty() && errors.is_empty() {
        text.push_str("(no servers: no MCP config file found from this folder)\n");
    }
    let files: Vec<Value> = d
        .files
        .iter()
        .map(|f| {
            let mut o = origin_json(&f.origin);
            o["trusted"] = f.trusted.into();
            o["servers"] = json!(f.server_names);
            o
        })
        .collect();
    let trust_file = found
        .store
        .path()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    Output {
        json: json!({
            "discovered": true,
            "servers": servers,
            "errors": errors,
            "ignored": ignored,
            "denied": denied,
            "files": files,
            "trustFile": trust_file,
        }),
        text,
        exit: if failed > 0 { 2 } else { 0 },
        note: (failed > 0).then(|| {
            let s = if failed == 1 { "" } else { "s" };
            format!("{LABEL}: {failed} error{s} (listed above)")
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::tests::env_of;

    #[cfg(unix)]
    #[test]
    fn the_trust_file_is_beside_the_default_token_file_whatever_mcpb_token_file_says() {
        let env = [
            ("HOME", "/home/a"),
            ("MCPB_TOKEN_FILE", "/elsewhere/t.json"),
        ];
        assert_eq!(
            trust_path_in(Platform::Unix, env_of(&env)),
            PathBuf::from("/home/a/.config/mcpb/trust.json")
        );
        let env = [("HOME", "/home/a"), ("XDG_CONFIG_HOME", "/cfg")];
        assert_eq!(
            trust_path_in(Platform::Unix, env_of(&env)),
            PathBuf::from("/cfg/mcpb/trust.json")
        );
        let env = [("HOME", "/home/a"), ("MCPB_TRUST_FILE", "/x/trust.json")];
        assert_eq!(
            trust_path_in(Platform::Unix, env_of(&env)),
            PathBuf::from("/x/trust.json")
        );
    }

    #[cfg(windows)]
    #[test]
    fn the_trust_file_on_windows_is_under_appdata() {
        let env = [("APPDATA", r"C:\Users\a\AppData\Roaming")];
        assert_eq!(
            trust_path_in(Platform::Windows, env_of(&env)),
            PathBuf::from(r"C:\Users\a\AppData\Roaming\mcpb\trust.json")
        );
    }
}
