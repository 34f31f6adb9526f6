//! `mcpb` against the reference servers (`server-everything`, `server-filesystem`), installed
//! under `target/peers/` by `common::peers` (run on the pinned Node, no network once installed).
//!
//! `npx -y @modelcontextprotocol/server-everything` is what users type: a stand-in `npx` (a
//! shell script first on `PATH`) starts the installed package, so the very command line of the
//! README runs offline.
// Linux only: the peers run on the Node and Python that `common::peers` installs for Linux.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

mod common;

use common::mcpb::command;
use common::peers::{self, EVERYTHING, FILESYSTEM};
use common::tempdir::TempDir;

fn run(args: &[&str], path: Option<&std::ffi::OsStr>) -> Output {
    let mut cmd = command(args);
    cmd.args(["--timeout", "60"]);
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    cmd.output().expect("run mcpb")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "expected exit {code}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        stdout(o),
        stderr(o)
    );
}

fn quoted(p: &Path) -> String {
    format!("'{}'", p.display())
}

/// `node .../server-everything/dist/index.js`.
fn everything() -> String {
    format!(
        "{} {}",
        quoted(peers::node()),
        quoted(&peers::npm().entry(EVERYTHING))
    )
}

/// `node .../server-filesystem/dist/index.js DIR`.
fn filesystem(dir: &Path) -> String {
    format!(
        "{} {} {}",
        quoted(peers::node()),
        quoted(&peers::npm().entry(FILESYSTEM)),
        quoted(dir)
    )
}

/// A directory of one test: `TempDir` only hands out files.
fn dir_of(tmp: &TempDir) -> PathBuf {
    tmp.file(".keep", "")
        .parent()
        .expect("a directory")
        .to_path_buf()
}

#[test]
fn the_readme_command_line_prints_echo_3() {
    // A stand-in `npx` that runs the installed package on the pinned Node.
    let tmp = TempDir::new("npx");
    let script = format!(
        "#!/bin/sh\n# npx -y PACKAGE ARGS...\n[ \"$1\" = -y ] && shift\n\
         [ \"$1\" = {EVERYTHING} ] || exit 127\nshift\nexec {} \"$@\"\n",
        everything()
    );
    let npx = tmp.file("npx", &script);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&npx, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let old = std::env::var_os("PATH").unwrap_or_default();
    let path =
        std::env::join_paths(std::iter::once(dir_of(&tmp)).chain(std::env::split_paths(&old)))
            .expect("PATH");
    let o = run(
        &[
            "--stdio",
            "npx -y @modelcontextprotocol/server-everything",
            "call",
            "echo",
            "message=3",
        ],
        Some(&path),
    );
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "Echo: 3\n");

    // The server is named by what it says it is, not `npx`.
    let o = run(
        &[
            "--stdio",
            "npx -y @modelcontextprotocol/server-everything",
            "call",
            "get-sum",
            "a=1",
        ],
        Some(&path),
    );
    assert_exit(&o, 2);
    let h = stderr(&o);
    assert!(!h.contains("`npx`"), "{h}");
    assert!(h.contains("missing required argument: b (number)"), "{h}");
}

#[test]
fn everything_schema_aware_calls_and_help() {
    let line = everything();
    let o = run(&["--stdio", &line, "call", "get-sum", "a=2", "b=3.5"], None);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("5.5"), "{}", stdout(&o));
    let o = run(&["--stdio", &line, "call", "get-sum", "--help"], None);
    assert_exit(&o, 0);
    assert!(
        stdout(&o).contains("a  number (required)"),
        "{}",
        stdout(&o)
    );
    let o = run(&["--stdio", &line, "call", "get-summ", "a=1", "b=2"], None);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("did you mean `get-sum`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn everything_images_and_blobs_are_saved_decoded() {
    let tmp = TempDir::new("everything-o");
    let dir = dir_of(&tmp).join("out");
    let line = everything();
    let o = run(
        &[
            "--stdio",
            &line,
            "call",
            "get-tiny-image",
            "-o",
            dir.to_str().expect("utf-8"),
        ],
        None,
    );
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("saved "), "{}", stdout(&o));
    let png = std::fs::read_dir(&dir)
        .expect("the directory")
        .filter_map(Result::ok)
        .find(|e| e.path().extension().is_some_and(|x| x == "png"))
        .expect("a .png file");
    let bytes = std::fs::read(png.path()).expect("read");
    assert!(bytes.starts_with(b"\x89PNG"), "decoded PNG");

    let blob = dir_of(&tmp).join("blob.bin");
    let o = run(
        &[
            "--stdio",
            &line,
            "--json",
            "read",
            "demo://resource/dynamic/blob/1",
            "-o",
            blob.to_str().expect("utf-8"),
        ],
        None,
    );
    assert_exit(&o, 0);
    let doc: Value = serde_json::from_slice(&o.stdout).expect("json");
    let saved = std::fs::read(&blob).expect("saved blob");
    assert_eq!(doc["saved"][0]["bytes"], saved.len());
    assert!(!saved.is_empty());
}

#[test]
fn filesystem_offers_tools_only_and_says_so() {
    let tmp = TempDir::new("fs");
    let note = tmp.file("note.txt", "hello from a file\n");
    let line = filesystem(&dir_of(&tmp));
    for (command, what) in [
        ("resources", "offers no resources"),
        ("prompts", "offers no prompts"),
        ("templates", "offers no resources"),
    ] {
        let o = run(&["--stdio", &line, command], None);
        assert_exit(&o, 2);
        assert!(stderr(&o).contains(what), "{command}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("secure-filesystem-server"),
            "named by its serverInfo: {}",
            stderr(&o)
        );
    }
    let o = run(&["--stdio", &line, "--log-level", "debug", "ping"], None);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("offers no log messages"),
        "{}",
        stderr(&o)
    );

    let path = format!("path={}", note.display());
    let o = run(&["--stdio", &line, "call", "read_text_file", &path], None);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "hello from a file\n");
}

#[test]
fn a_two_server_config_with_one_broken() {
    let tmp = TempDir::new("two");
    let node = serde_json::to_string(&peers::node()).expect("json");
    let entry = serde_json::to_string(&peers::npm().entry(EVERYTHING)).expect("json");
    let file = tmp.file(
        "two.json",
        &format!(
            r#"{{"mcpServers": {{
                "everything": {{"command": {node}, "args": [{entry}], "timeout": 60}},
                "broken": {{"command": "/nonexistent/mcp-broken"}}
            }}}}"#
        ),
    );
    let file = file.to_str().expect("utf-8");

    let o = run(&["--config", file, "servers", "--check"], None);
    assert_ne!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(
        out.lines()
            .any(|l| l.starts_with("everything") && l.contains(" ok ")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("broken") && l.contains("failed")),
        "{out}"
    );
    assert!(stderr(&o).contains("broken"), "{}", stderr(&o));

    let o = run(&["--config", file, "tools"], None);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("== everything =="), "{out}");
    assert!(out.contains("echo(message: string)"), "{out}");
    assert!(out.contains("== broken (failed) =="), "{out}");
    assert!(out.contains("could not start"), "{out}");

    let o = run(&["--config", file, "call", "echo", "message=3"], None);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "Echo: 3\n");
}

/// A host file's exclusions hold against the reference filesystem server: in a Gemini CLI file
/// (`excludeTools`) and a Codex file (`disabled_tools`), the write tools are neither listed nor
/// callable, and nothing is written; the reading tools still work.
#[test]
fn filesystem_write_tools_excluded_by_a_host_file_are_not_offered_nor_run() {
    let tmp = TempDir::new("fs-policy");
    let dir = dir_of(&tmp);
    tmp.file("note.txt", "hello\n");
    let node = serde_json::to_string(&peers::node()).expect("json");
    let entry = serde_json::to_string(&peers::npm().entry(FILESYSTEM)).expect("json");
    let root = serde_json::to_string(&dir).expect("json");
    let gemini = tmp.file(
        "settings.json",
        &format!(
            r#"{{"mcpServers": {{"fs": {{"command": {node}, "args": [{entry}, {root}],
                "timeout": 60000, "excludeTools": ["write_file", "edit_*"]}}}}}}"#
        ),
    );
    // TOML literal strings: the paths as they are.
    let codex = tmp.file(
        "config.toml",
        &format!(
            "[mcp_servers.fs]\ncommand = '{}'\nargs = ['{}', '{}']\n\
             tool_timeout_sec = 60\ndisabled_tools = ['write_file', 'edit_file']\n",
            peers::node().display(),
            peers::npm().entry(FILESYSTEM).display(),
            dir.display()
        ),
    );
    for file in [&gemini, &codex] {
        let file = file.to_str().expect("utf-8");
        let o = run(&["--config", file, "--json", "tools"], None);
        assert_exit(&o, 0);
        let doc: Value = serde_json::from_str(&stdout(&o)).expect("json");
        let names: Vec<&str> = doc["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(names.contains(&"read_text_file"), "{file}: {names:?}");
        assert!(
            !names.contains(&"write_file") && !names.contains(&"edit_file"),
            "{file}: {names:?}"
        );
        let target = dir.join("written.txt");
        let path = format!("path={}", target.display());
        let o = run(
            &["--config", file, "call", "write_file", &path, "content=x"],
            None,
        );
        assert_exit(&o, 2);
        assert!(
            stderr(&o).contains("tool `write_file` is excluded"),
            "{}",
            stderr(&o)
        );
        assert!(!target.exists(), "{file}: the excluded tool ran");
        let path = format!("path={}", dir.join("note.txt").display());
        let o = run(&["--config", file, "call", "read_text_file", &path], None);
        assert_exit(&o, 0);
        assert_eq!(stdout(&o), "hello\n");
    }
}
