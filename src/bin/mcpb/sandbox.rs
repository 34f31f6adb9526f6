//! `--sandbox` and its options: the confinement mcpb asks for each stdio server it starts, and
//! how `servers` shows the one each server gets.

use std::path::{Path, PathBuf};

use mcp_blocking::config::{Network, Sandbox};
use mcp_blocking::ServerConfig;
use serde_json::{json, Value};

use crate::args::Global;

/// `config` with the sandbox the options ask for, when it is a stdio server and `--sandbox` was
/// given: the one its file asked for (else the default one), widened by `--allow-read`,
/// `--allow-write` and `--allow-net`, narrowed by `--no-net`. Other servers are returned as
/// they are (`--sandbox` with `--url` is refused before this).
pub(crate) fn apply(global: &Global, config: ServerConfig) -> ServerConfig {
    if !global.sandbox || config.transport_type() != "stdio" {
        return config;
    }
    let mut sandbox = config.sandbox().unwrap_or_default();
    for dir in &global.allow_read {
        sandbox = sandbox.allow_read(from_here(dir));
    }
    for dir in &global.allow_write {
        sandbox = sandbox.allow_write(from_here(dir));
    }
    if global.no_net {
        sandbox = sandbox.no_network();
    }
    for rule in &global.allow_net {
        sandbox = sandbox.allow_domain(rule);
    }
    if global.best_effort_sandbox {
        sandbox = sandbox.best_effort();
    }
    config.with_sandbox(sandbox)
}

/// A path typed on the command line, taken from mcpb's working folder as the shell that typed
/// it would (a sandbox takes a relative path from the server's, which a config may set
/// elsewhere). `~` is left for the sandbox to expand, as a shell does not in `--opt=~/x`.
fn from_here(dir: &str) -> PathBuf {
    let p = Path::new(dir);
    if p.is_absolute() || p.starts_with("~") {
        return p.to_path_buf();
    }
    match std::env::current_dir() {
        Ok(cwd) => cwd.join(p),
        Err(_) => p.to_path_buf(),
    }
}

/// The `servers` line of a server's sandbox (`None` without one), and its JSON (`null`
/// without one).
pub(crate) fn shown(config: &ServerConfig) -> (Option<String>, Value) {
    let Some(sandbox) = config.sandbox() else {
        return (None, Value::Null);
    };
    let key = &sandbox.source().key;
    let mut line = format!("sandbox: {}", sandbox.summary());
    if !key.is_empty() {
        line.push_str(&format!(
            " (`{}`)",
            key.rsplit('.').next().unwrap_or_default()
        ));
    }
    (Some(line), to_json(&sandbox))
}

fn paths(list: &[PathBuf]) -> Vec<String> {
    list.iter().map(|p| p.display().to_string()).collect()
}

/// The sandbox as `servers --json` shows it (see `mcpb help json`).
fn to_json(sandbox: &Sandbox) -> Value {
    let network = match sandbox.network() {
        Network::Domains { allow, deny } => json!({
            "allow": allow.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "deny": deny.iter().map(ToString::to_string).collect::<Vec<_>>(),
        }),
        _ => json!("none"),
    };
    let l = sandbox.limits();
    let source = sandbox.source();
    json!({
        "summary": sandbox.summary(),
        "read": paths(sandbox.read_paths()),
        "write": paths(sandbox.write_paths()),
        "denyRead": paths(sandbox.denied_read_paths()),
        "denyWrite": paths(sandbox.denied_write_paths()),
        "defaultPaths": sandbox.has_default_paths(),
        "network": network,
        "limits": {
            "addressSpace": l.address_space,
            "openFiles": l.open_files,
            "processes": l.processes,
            "cpuSeconds": l.cpu_time.map(|t| t.as_secs() + u64::from(t.subsec_nanos() > 0)),
        },
        "bestEffort": sandbox.is_best_effort(),
        "key": (!source.key.is_empty()).then(|| source.key.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn global(sandbox: bool) -> Global {
        Global {
            sandbox,
            ..Global::default()
        }
    }

    #[test]
    fn only_stdio_servers_with_the_option_get_a_sandbox() {
        let stdio = ServerConfig::stdio("s", "server");
        assert!(apply(&global(false), stdio.clone()).sandbox().is_none());
        assert_eq!(apply(&global(true), stdio).sandbox(), Some(Sandbox::new()));
        let remote = ServerConfig::http("r", "http://127.0.0.1:1/mcp");
        assert_eq!(apply(&global(true), remote.clone()), remote);
    }

    #[test]
    #[cfg(unix)]
    fn the_options_widen_the_files_sandbox_and_no_net_narrows_it() {
        let from_file = Sandbox::new()
            .allow_write("/srv")
            .allow_domain("api.example.com")
            .max_processes(8);
        let config = ServerConfig::stdio("s", "server").with_sandbox(from_file);
        let g = Global {
            allow_read: vec!["/etc/app".into(), "rel".into(), "~/notes".into()],
            allow_write: vec!["/tmp/out".into()],
            best_effort_sandbox: true,
            ..global(true)
        };
        let got = apply(&g, config.clone()).sandbox().unwrap();
        let here = std::env::current_dir().unwrap();
        assert_eq!(
            got.read_paths(),
            [
                PathBuf::from("/etc/app"),
                here.join("rel"),
                PathBuf::from("~/notes")
            ]
        );
        assert_eq!(
            got.write_paths(),
            [PathBuf::from("/srv"), PathBuf::from("/tmp/out")]
        );
        assert!(got.is_best_effort());
        assert_eq!(got.limits().processes, Some(8));
        assert!(
            matches!(got.network(), Network::Domains { allow, .. } if allow.len() == 1),
            "{:?}",
            got.network()
        );
        let no_net = Global {
            no_net: true,
            ..global(true)
        };
        assert_eq!(
            apply(&no_net, config.clone()).sandbox().unwrap().network(),
            &Network::None
        );
        let more = Global {
            allow_net: vec!["*.example.org:8443".into()],
            ..global(true)
        };
        let Network::Domains { allow, .. } =
            apply(&more, config).sandbox().unwrap().network().clone()
        else {
            panic!("domains expected")
        };
        let shown: Vec<String> = allow.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["api.example.com", "*.example.org:8443"]);
    }

    #[test]
    fn shown_as_a_line_and_as_json() {
        assert_eq!(
            shown(&ServerConfig::stdio("s", "server")),
            (None, Value::Null)
        );
        let config = ServerConfig::stdio("s", "server").with_sandbox(
            Sandbox::new()
                .allow_read("/data")
                .allow_domain("example.com:8080")
                .deny_domain("bad.example.com")
                .max_cpu_time(Duration::from_millis(1500))
                .best_effort(),
        );
        let (line, doc) = shown(&config);
        assert_eq!(
            line.as_deref(),
            Some(
                "sandbox: reads: defaults, /data; network: example.com:8080 (not \
                 bad.example.com); CPU ≤ 2 s; best effort"
            )
        );
        assert_eq!(doc["read"], json!(["/data"]));
        assert_eq!(doc["write"], json!([]));
        assert_eq!(
            doc["network"],
            json!({"allow": ["example.com:8080"], "deny": ["bad.example.com"]})
        );
        assert_eq!(
            doc["limits"],
            json!({"addressSpace": null, "openFiles": null, "processes": null, "cpuSeconds": 2})
        );
        assert_eq!(doc["bestEffort"], true);
        assert_eq!(doc["key"], Value::Null);
        let (_, plain) = shown(&ServerConfig::stdio("s", "x").with_sandbox(Sandbox::new()));
        assert_eq!(plain["network"], "none");
    }
}
