//! `mcpb` without `--config` in a folder holding a `.mcp.json`: nothing starts until
//! `mcpb trust` approved the file; then its servers run; once the file changes, nothing starts
//! again until it is approved again. `--config` names a file trusted as it is. The home
//! directory and the trust file are the test's own.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

mod common;

use common::mcpb::{assert_exit, command_at_home, output_within, stderr, stdout};
use common::tempdir::TempDir;

/// A home directory with a project folder in it.
struct Project {
    _dir: TempDir,
    home: PathBuf,
    proj: PathBuf,
}

impl Project {
    /// `home/proj/.mcp.json` holding the fixture server `fx` and `ghost`, a program that does
    /// not exist: started, it would fail to spawn.
    fn new(tag: &str) -> Project {
        let dir = TempDir::new(tag);
        let root = dir.file("marker", "").parent().unwrap().to_path_buf();
        let home = root.join("home");
        let proj = home.join("proj");
        std::fs::create_dir_all(&proj).unwrap();
        let p = Project {
            _dir: dir,
            home,
            proj,
        };
        p.write_config("");
        p
    }

    fn config(&self) -> PathBuf {
        self.proj.join(".mcp.json")
    }

    /// Writes the project file, `tail` after its JSON (blanks change the file, not its servers).
    fn write_config(&self, tail: &str) {
        let fixture = serde_json::to_string(common::fixture::path()).unwrap();
        let ghost = serde_json::to_string(&self.proj.join("no-such-program")).unwrap();
        std::fs::write(
            self.config(),
            format!(
                r#"{{"mcpServers": {{"fx": {{"command": {fixture}}}, "ghost": {{"command": {ghost}}}}}}}{tail}"#
            ),
        )
        .unwrap();
    }

    /// `mcpb ARGS` in the project folder, with the test's home and nothing else of the user's.
    fn mcpb(&self, args: &[&str]) -> Output {
        self.mcpb_in(&self.proj, args)
    }

    /// `mcpb ARGS` in the project folder, its trust file at `store`.
    fn mcpb_with_store(&self, args: &[&str], store: &Path) -> Output {
        let mut c = self.command_in(&self.proj, args);
        c.env("MCPB_TRUST_FILE", store);
        let (out, _) = output_within(c, "mcpb", Duration::from_secs(60));
        out
    }

    fn mcpb_in(&self, dir: &Path, args: &[&str]) -> Output {
        let c = self.command_in(dir, args);
        let (out, _) = output_within(c, "mcpb", Duration::from_secs(60));
        out
    }

    /// `mcpb ARGS` in `dir`, with the test's home and nothing else of the user's.
    fn command_in(&self, dir: &Path, args: &[&str]) -> Command {
        command_at_home(dir, &self.home, args)
    }
}

/// Asserts that `o` started nothing and said how to approve.
#[track_caller]
fn assert_waits_for_trust(o: &Output) {
    assert_exit(o, 2);
    let err = stderr(o);
    for name in ["fx", "ghost"] {
        assert!(
            err.contains(&format!("server `{name}`: not started")),
            "{name}: {err}"
        );
    }
    assert!(err.contains("approve it with `mcpb trust`"), "{err}");
    // `ghost` cannot be spawned: had anything started, its failure would name its program.
    assert!(!err.contains("no-such-program"), "{err}");
    assert!(stdout(o).is_empty(), "{}", stdout(o));
}

#[test]
fn a_project_file_starts_nothing_until_approved_and_again_once_changed() {
    let p = Project::new("trust-sequence");
    assert_waits_for_trust(&p.mcpb(&["tools"]));

    let trusted = p.mcpb(&["trust", "--yes"]);
    assert_exit(&trusted, 0);
    let out = stdout(&trusted);
    assert!(out.contains(common::fixture::path()), "{out}");
    assert!(out.contains("`ghost` runs: "), "{out}");
    assert!(out.contains("approved "), "{out}");
    let store = p.home.join(".config").join("mcpb").join("trust.json");
    if cfg!(unix) {
        assert!(store.is_file(), "{}", store.display());
    }

    let tools = p.mcpb(&["--server", "fx", "tools"]);
    assert_exit(&tools, 0);
    assert!(stdout(&tools).contains("echo("), "{}", stdout(&tools));
    // Both servers start now: `ghost` fails to spawn, naming its program.
    let all = p.mcpb(&["tools"]);
    assert_exit(&all, 0);
    let out = stdout(&all);
    assert!(out.contains("echo("), "{out}");
    assert!(out.contains("== ghost (failed) =="), "{out}");
    assert!(out.contains("no-such-program"), "{out}");
    assert!(!out.contains("not started"), "{out}");

    // A changed file needs approval again.
    p.write_config("\n");
    assert_waits_for_trust(&p.mcpb(&["tools"]));
    assert_waits_for_trust(&p.mcpb(&["call", "fx/echo", "text=hi"]));
    let again = p.mcpb(&["--server", "fx", "tools"]);
    assert_exit(&again, 2);
    assert!(stderr(&again).contains("mcpb trust"), "{}", stderr(&again));
}

#[test]
fn trust_without_a_terminal_or_yes_refuses_and_records_nothing() {
    let p = Project::new("trust-refuse");
    let o = p.mcpb(&["trust"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(err.contains("stdin is not a terminal"), "{err}");
    assert!(err.contains("mcpb trust --yes"), "{err}");
    // It showed what it would have approved.
    assert!(err.contains(common::fixture::path()), "{err}");
    assert_waits_for_trust(&p.mcpb(&["tools"]));
}

#[test]
fn trust_shows_a_remote_servers_headers_helper_as_a_command_to_approve() {
    let p = Project::new("trust-helper");
    std::fs::write(
        p.config(),
        r#"{"mcpServers": {"api": {"type": "http", "url": "http://127.0.0.1:9/mcp",
            "headersHelper": "./get-token.sh"}}}"#,
    )
    .unwrap();
    // Shown whether or not this run allows header commands: a later one may.
    for args in [&["trust"][..], &["--allow-header-commands", "trust"][..]] {
        let o = p.mcpb(args);
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert!(
            err.contains("runs the command at `mcpServers.api.headersHelper` for its headers"),
            "{args:?}: {err}"
        );
    }
    // Held back until then, and said so in the keys `servers` lists as ignored.
    let o = p.mcpb(&["--allow-header-commands", "servers"]);
    let out = format!("{}{}", stdout(&o), stderr(&o));
    assert!(
        out.contains("project file not approved (it runs once the file is approved"),
        "{out}"
    );
}

#[test]
fn a_broken_trust_file_is_named_once_and_starts_nothing() {
    let p = Project::new("trust-broken-store");
    let store = p.home.join(".config").join("mcpb").join("trust.json");
    std::fs::create_dir_all(store.parent().unwrap()).unwrap();
    std::fs::write(&store, r#"{"approved": ["#).unwrap();
    for args in [&["tools"][..], &["trust", "--yes"][..]] {
        let o = p.mcpb_with_store(args, &store);
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert!(err.contains("is not valid"), "{args:?}: {err}");
        assert_eq!(err.matches("trust file").count(), 1, "{args:?}: {err}");
    }
    assert_eq!(
        std::fs::read_to_string(&store).unwrap(),
        r#"{"approved": ["#
    );
}

#[test]
fn trust_with_nothing_waiting_says_so() {
    let p = Project::new("trust-nothing");
    assert_exit(&p.mcpb(&["trust", "--yes"]), 0);
    let o = p.mcpb(&["--json", "trust"]);
    assert_exit(&o, 0);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["waiting"], Value::Array(vec![]), "{doc}");
}

#[test]
fn a_file_named_with_config_is_trusted_as_named() {
    let p = Project::new("trust-config");
    let file = p.config();
    let o = p.mcpb(&[
        "--config",
        file.to_str().unwrap(),
        "--server",
        "fx",
        "call",
        "echo",
        "text=hi",
    ]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("hi"), "{}", stdout(&o));
    // There is nothing to approve in a file named so.
    let o = p.mcpb(&["--config", file.to_str().unwrap(), "trust", "--yes"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("`trust` does not take --config"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn servers_shows_origins_shadowing_and_what_waits_for_trust() {
    let p = Project::new("trust-servers");
    // A user file in the home directory with a server of the same name, and one of its own.
    let cursor = p.home.join(".cursor");
    std::fs::create_dir_all(&cursor).unwrap();
    let fixture = serde_json::to_string(common::fixture::path()).unwrap();
    std::fs::write(
        cursor.join("mcp.json"),
        format!(
            r#"{{"mcpServers": {{"fx": {{"command": "x"}}, "mine": {{"command": {fixture}}}}}}}"#
        ),
    )
    .unwrap();

    let o = p.mcpb(&["--json", "servers"]);
    assert_exit(&o, 0);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let servers = doc["servers"].as_array().unwrap();
    let names: Vec<&str> = servers
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fx", "ghost", "mine"]);
    assert_eq!(servers[0]["origin"]["scope"], "project");
    assert_eq!(servers[0]["origin"]["host"], "Claude Code");
    assert_eq!(servers[0]["needsTrust"], true);
    assert_eq!(servers[0]["shadowed"][0]["host"], "Cursor");
    assert_eq!(servers[0]["shadowed"][0]["scope"], "user");
    assert_eq!(servers[2]["origin"]["scope"], "user");
    assert_eq!(servers[2]["needsTrust"], false);

    let text = stdout(&p.mcpb(&["servers"]));
    assert!(text.contains("(Claude Code, project)"), "{text}");
    assert!(text.contains("shadows the one of "), "{text}");
    assert!(
        text.contains("not started: its project file is not approved"),
        "{text}"
    );

    // The user's own server starts without approval; the project's do not.
    let mine = p.mcpb(&["--server", "mine", "call", "echo", "text=ok"]);
    assert_exit(&mine, 0);
    let check = p.mcpb(&["servers", "--check"]);
    assert_exit(&check, 2);
    let text = stdout(&check);
    assert!(text.contains("mine   ok "), "{text}");
    assert!(
        text.contains("fx     waiting server `fx`: not started"),
        "{text}"
    );
    assert!(!text.contains("no-such-program"), "{text}");
}

#[test]
fn in_the_home_directory_no_file_is_a_project_file() {
    let p = Project::new("trust-home");
    // The project file moved to the home directory is not read (no host reads it there).
    std::fs::rename(p.config(), p.home.join(".mcp.json")).unwrap();
    let o = p.mcpb_in(&p.home, &["tools"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("no MCP config file found"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn run_without_config_uses_the_found_files_and_waits_for_trust_too() {
    let p = Project::new("trust-run");
    // A loopback model address nothing listens on: the servers are refused before it is used.
    let o = p.mcpb(&[
        "run",
        "--model-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        "hello",
    ]);
    assert_waits_for_trust(&o);
}
