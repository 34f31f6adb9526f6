//! `mcpb --sandbox` and its options, as `mcpb servers` shows them (text and `--json`): the
//! sandbox the options ask for, the one a VS Code file's `sandboxEnabled` asks for (found from
//! the folder, or named with `--config`), that one widened or narrowed by the options, and
//! none for a remote server. The options without `--sandbox`, a bad `--allow-net` value,
//! `--no-net` with `--allow-net` and `--sandbox` with `--url` are usage errors naming the
//! option. What the sandbox stops is tested where it is applied (`tests/sandbox.rs`); here,
//! once, a real server run by `npx` through `mcpb --sandbox --allow-write DIR`. Unix paths
//! throughout: a sandbox applies on Linux only.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};

mod common;

use common::mcpb::{assert_exit, command_at_home, mcpb, stderr, stdout};
use common::tempdir::TempDir;

fn doc(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// The entry of server `name` in a `servers --json` document.
fn entry<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["servers"]
        .as_array()
        .expect("servers")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no server `{name}` in {doc}"))
}

/// The text lines of server `name` in `servers` output: its own and the indented ones after it.
fn lines_of(text: &str, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if !line.starts_with(' ') {
            inside = line.split_whitespace().next() == Some(name);
        }
        if inside {
            out.push(line.trim().to_owned());
        }
    }
    assert!(!out.is_empty(), "no server `{name}` in:\n{text}");
    out
}

/// An `.mcp.json` with the fixture server `fx` and a remote server `web` (never reached).
fn plain_file(dir: &TempDir) -> String {
    let doc = json!({"mcpServers": {
        "fx": {"command": common::fixture::path()},
        "web": {"url": "http://127.0.0.1:9/mcp"},
    }});
    dir.file(".mcp.json", &doc.to_string())
        .to_string_lossy()
        .into_owned()
}

#[test]
fn servers_shows_the_sandbox_the_options_ask_for() {
    let dir = TempDir::new("cli-sandbox-flags");
    let file = plain_file(&dir);
    let out_dir = dir.path().join("out");
    let out_dir = out_dir.to_str().unwrap();
    let flags = [
        "--sandbox",
        "--allow-read",
        "/opt/data",
        "--allow-write",
        out_dir,
        "--allow-net",
        "api.example.com",
        "--allow-net",
        "*.example.org:8443",
        "--best-effort-sandbox",
    ];
    let mut args = vec!["--config", file.as_str()];
    args.extend(flags);
    args.push("servers");
    let out = mcpb(&args);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let expected = format!(
        "sandbox: reads: defaults, /opt/data; writes: {out_dir}; network: api.example.com, \
         *.example.org:8443; best effort"
    );
    assert!(lines_of(&text, "fx").contains(&expected), "{text}");
    assert!(
        !lines_of(&text, "web")
            .iter()
            .any(|l| l.starts_with("sandbox:")),
        "a remote server runs in no process of mcpb's:\n{text}"
    );

    args.insert(0, "--json");
    let out = mcpb(&args);
    assert_exit(&out, 0);
    let d = doc(&out);
    let fx = &entry(&d, "fx")["sandbox"];
    assert_eq!(fx["summary"], expected.strip_prefix("sandbox: ").unwrap());
    assert_eq!(fx["read"], json!(["/opt/data"]));
    assert_eq!(fx["write"], json!([out_dir]));
    assert_eq!(
        fx["network"],
        json!({"allow": ["api.example.com", "*.example.org:8443"], "deny": []})
    );
    assert_eq!(
        fx["limits"],
        json!({"addressSpace": null, "openFiles": null, "processes": null, "cpuSeconds": null})
    );
    assert_eq!(fx["bestEffort"], true);
    assert_eq!(fx["defaultPaths"], true);
    assert_eq!(fx["key"], Value::Null);
    assert_eq!(entry(&d, "web")["sandbox"], Value::Null);

    // Without --sandbox: no sandbox, said as null.
    let out = mcpb(&["--json", "--config", &file, "servers"]);
    assert_exit(&out, 0);
    assert_eq!(entry(&doc(&out), "fx")["sandbox"], Value::Null);
    let out = mcpb(&["--config", &file, "servers"]);
    assert!(
        !stdout(&out)
            .lines()
            .any(|l| l.trim().starts_with("sandbox:")),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_relative_folder_is_taken_from_where_mcpb_runs() {
    let dir = TempDir::new("cli-sandbox-relative");
    let file = plain_file(&dir);
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = command_at_home(
        dir.path(),
        &home,
        &[
            "--json",
            "--config",
            &file,
            "--sandbox",
            "--allow-write",
            "data",
            "servers",
        ],
    )
    .output()
    .unwrap();
    assert_exit(&out, 0);
    let d = doc(&out);
    let write = &entry(&d, "fx")["sandbox"]["write"];
    let here = std::fs::canonicalize(dir.path()).unwrap();
    let got = PathBuf::from(write[0].as_str().expect("one path"));
    assert!(
        got == dir.path().join("data") || got == here.join("data"),
        "{write}"
    );
}

/// A project folder under a home of its own, with a VS Code `.vscode/mcp.json` whose server
/// `boxed` asks for a sandbox and whose server `plain` does not.
fn vscode_project(dir: &TempDir) -> (PathBuf, PathBuf) {
    let home = dir.path().join("home");
    let proj = home.join("proj");
    std::fs::create_dir_all(proj.join(".vscode")).unwrap();
    let doc = json!({"servers": {
        "boxed": {
            "type": "stdio",
            "command": common::fixture::path(),
            "sandboxEnabled": true,
            "sandbox": {
                "filesystem": {"allowWrite": ["/srv/boxed"], "denyRead": ["/home/secrets"]},
                "network": {"allowedDomains": ["*.github.com"], "deniedDomains": ["gist.github.com"]},
                "limits": {"processes": 16, "openFiles": 256},
            },
        },
        "plain": {"type": "stdio", "command": common::fixture::path()},
    }});
    std::fs::write(proj.join(".vscode").join("mcp.json"), doc.to_string()).unwrap();
    (home, proj)
}

fn at(home: &Path, proj: &Path, args: &[&str]) -> Output {
    command_at_home(proj, home, args).output().unwrap()
}

#[test]
fn servers_shows_the_sandbox_a_vscode_file_asks_for() {
    let dir = TempDir::new("cli-sandbox-vscode");
    let (home, proj) = vscode_project(&dir);
    let summary = "reads: defaults; writes: /srv/boxed; network: *.github.com (not \
                   gist.github.com); open files ≤ 256; processes ≤ 16";

    // Found from the folder (not approved yet: listed, not started).
    let out = at(&home, &proj, &["servers"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let boxed = lines_of(&text, "boxed");
    assert!(
        boxed.contains(&format!("sandbox: {summary} (`sandboxEnabled`)")),
        "{text}"
    );
    assert!(
        !lines_of(&text, "plain")
            .iter()
            .any(|l| l.starts_with("sandbox:")),
        "{text}"
    );
    let out = at(&home, &proj, &["--json", "servers"]);
    assert_exit(&out, 0);
    let d = doc(&out);
    let sb = &entry(&d, "boxed")["sandbox"];
    assert_eq!(sb["summary"], summary);
    assert_eq!(sb["key"], "servers.boxed.sandboxEnabled");
    assert_eq!(sb["write"], json!(["/srv/boxed"]));
    assert_eq!(sb["denyRead"], json!(["/home/secrets"]));
    assert_eq!(
        sb["network"],
        json!({"allow": ["*.github.com"], "deny": ["gist.github.com"]})
    );
    assert_eq!(sb["limits"]["processes"], 16);
    assert_eq!(sb["limits"]["openFiles"], 256);
    assert_eq!(sb["bestEffort"], false);
    assert_eq!(entry(&d, "plain")["sandbox"], Value::Null);
    // The policy still names the key that asked.
    assert_eq!(
        entry(&d, "boxed")["policy"]["sandbox"]["key"],
        "servers.boxed.sandboxEnabled"
    );

    // Named with --config, with the options: the file's sandbox widened (a folder to read)
    // and narrowed (no network), its limits kept; the other server gets the default one.
    let file = proj.join(".vscode").join("mcp.json");
    let file = file.to_str().unwrap();
    let args = [
        "--json",
        "--config",
        file,
        "--sandbox",
        "--allow-read",
        "/opt/tools",
        "--no-net",
        "servers",
    ];
    let out = at(&home, &proj, &args);
    assert_exit(&out, 0);
    let d = doc(&out);
    let sb = &entry(&d, "boxed")["sandbox"];
    assert_eq!(
        sb["summary"],
        "reads: defaults, /opt/tools; writes: /srv/boxed; network: none; open files ≤ 256; \
         processes ≤ 16"
    );
    assert_eq!(sb["network"], "none");
    assert_eq!(sb["key"], "servers.boxed.sandboxEnabled");
    let plain = &entry(&d, "plain")["sandbox"];
    assert_eq!(
        plain["summary"],
        "reads: defaults, /opt/tools; network: none"
    );
    assert_eq!(plain["key"], Value::Null);
    let out = at(&home, &proj, &args[1..]);
    assert_exit(&out, 0);
    assert!(
        lines_of(&stdout(&out), "plain")
            .contains(&"sandbox: reads: defaults, /opt/tools; network: none".to_owned()),
        "{}",
        stdout(&out)
    );
}

/// Runs `mcpb ARGS` expecting a usage error (exit 2), and returns its message.
fn usage_error(args: &[&str]) -> String {
    let out = mcpb(args);
    assert_exit(&out, 2);
    stderr(&out)
}

#[test]
fn the_sandbox_options_need_sandbox() {
    let fixture = common::fixture::path();
    for option in [
        &["--allow-read", "/data"][..],
        &["--allow-write", "/data"],
        &["--allow-net", "example.com"],
        &["--no-net"],
        &["--best-effort-sandbox"],
    ] {
        let mut args = vec!["--stdio", fixture];
        args.extend(option);
        args.push("tools");
        let err = usage_error(&args);
        assert!(err.contains(option[0]), "{option:?}: {err}");
        assert!(err.contains("--sandbox"), "{option:?}: {err}");
        // After the command too (the options are global).
        let mut args = vec!["--stdio", fixture, "tools"];
        args.extend(option);
        let err = usage_error(&args);
        assert!(err.contains("--sandbox"), "{option:?}: {err}");
    }
    let err = usage_error(&[
        "--stdio",
        fixture,
        "--sandbox",
        "--no-net",
        "--allow-net",
        "example.com",
        "tools",
    ]);
    assert!(
        err.contains("--no-net") && err.contains("--allow-net"),
        "{err}"
    );
    for option in ["--allow-read", "--allow-write"] {
        let err = usage_error(&["--stdio", fixture, "--sandbox", option, "", "tools"]);
        assert!(err.contains(&format!("{option} must be a path")), "{err}");
    }
    let err = usage_error(&["--url", "http://127.0.0.1:9/mcp", "--sandbox", "tools"]);
    assert!(err.contains("--sandbox") && err.contains("--url"), "{err}");
}

#[test]
fn a_bad_allow_net_value_is_an_error_naming_the_option() {
    let fixture = common::fixture::path();
    for bad in [
        "exa mple.com",
        "example.com:0",
        "example.com:99999",
        "http://example.com",
    ] {
        let err = usage_error(&["--stdio", fixture, "--sandbox", "--allow-net", bad, "tools"]);
        assert!(err.contains("--allow-net"), "{bad}: {err}");
        assert!(err.contains(&format!("`{bad}`")), "{bad}: {err}");
        let out = mcpb(&[
            "--json",
            "--stdio",
            fixture,
            "--sandbox",
            "--allow-net",
            bad,
            "tools",
        ]);
        assert_exit(&out, 2);
        let d = doc(&out);
        assert_eq!(d["error"]["kind"], "usage", "{d}");
        let message = d["error"]["message"].as_str().unwrap();
        assert!(message.contains("--allow-net"), "{message}");
    }
}

#[test]
fn help_lists_the_sandbox_options() {
    let out = mcpb(&["--help"]);
    assert_exit(&out, 0);
    let help = stdout(&out);
    for option in [
        "--sandbox",
        "--allow-read <DIR>",
        "--allow-write <DIR>",
        "--allow-net <HOST[:PORT]>",
        "--no-net",
        "--best-effort-sandbox",
    ] {
        assert!(help.contains(option), "{option}:\n{help}");
    }
    assert!(help.contains("Sandbox (stdio servers)"), "{help}");
}

/// `npx -y @modelcontextprotocol/server-filesystem DIR OTHER` through `mcpb --sandbox
/// --allow-write DIR`, run from the folder the peers are installed in (npx finds the package
/// there): it lists and reads DIR, and is refused OTHER, which the server itself would serve.
#[test]
#[cfg(target_os = "linux")]
fn npx_server_filesystem_is_confined_to_its_folder() {
    let dir = TempDir::new("cli-sbx-fs");
    dir.file("notes.txt", "hello from inside\n");
    let other = TempDir::new("cli-sbx-other");
    let secret = other.file("secret.txt", "not for the server\n");
    let npm = common::peers::npm().package_dir(common::peers::FILESYSTEM);
    let root = npm
        .ancestors()
        .find(|p| p.ends_with("npm"))
        .expect("the npm peers' folder")
        .to_path_buf();
    let server = format!(
        "npx -y {} {} {}",
        common::peers::FILESYSTEM,
        dir.path().display(),
        other.path().display()
    );
    let run = |sandboxed: bool, tool: &str, arg: String| {
        let dir_s = dir.path().display().to_string();
        let mut args = vec![];
        if sandboxed {
            args.extend(["--sandbox", "--allow-write", dir_s.as_str()]);
        }
        args.extend([
            "--timeout",
            "60",
            "--stdio",
            server.as_str(),
            "call",
            tool,
            arg.as_str(),
        ]);
        let out = common::mcpb::command(&args)
            .current_dir(&root)
            .output()
            .expect("run mcpb");
        (out.status.code(), stdout(&out), stderr(&out))
    };
    let (code, listed, err) = run(
        true,
        "list_directory",
        format!("path={}", dir.path().display()),
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(listed.contains("notes.txt"), "{listed}");
    let (code, read, err) = run(
        true,
        "read_text_file",
        format!("path={}", dir.path().join("notes.txt").display()),
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(read.contains("hello from inside"), "{read}");
    // Outside DIR: served without the sandbox, refused within it.
    let (code, read, err) = run(
        false,
        "read_text_file",
        format!("path={}", secret.display()),
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(read.contains("not for the server"), "{read}");
    let (code, read, err) = run(true, "read_text_file", format!("path={}", secret.display()));
    assert_ne!(code, Some(0), "{read}");
    let all = format!("{read}{err}");
    assert!(!all.contains("not for the server"), "{all}");
    assert!(
        all.contains("EACCES") || all.contains("permission denied"),
        "{all}"
    );
}
