//! `mcpb` without `--config` applies Claude Code's settings to the servers of Claude Code's
//! files: a tool `permissions.deny` names is neither listed nor callable (exit 2 naming the
//! settings file and the rule), a server it denies whole is not started and `mcpb servers`
//! says why. The home directory is the test's own.

use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use serde_json::Value;

mod common;

use common::mcpb::{assert_exit, command_at_home, output_within, stderr, stdout};
use common::tempdir::TempDir;

/// A home directory whose `~/.claude.json` holds the fixture server `fx` and `gone` (a program
/// that does not exist), and whose `~/.claude/settings.json` denies `fx`'s `add` and all of
/// `gone`; and a folder in it.
struct Home {
    _dir: TempDir,
    home: PathBuf,
    settings: PathBuf,
}

impl Home {
    fn new(tag: &str) -> Home {
        let dir = TempDir::new(tag);
        let root = dir.file("marker", "").parent().unwrap().to_path_buf();
        let home = root.join("home");
        std::fs::create_dir_all(home.join("work")).unwrap();
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        let fixture = serde_json::to_string(common::fixture::path()).unwrap();
        let gone = serde_json::to_string(&home.join("no-such-program")).unwrap();
        std::fs::write(
            home.join(".claude.json"),
            format!(
                r#"{{"mcpServers": {{"fx": {{"command": {fixture}}}, "gone": {{"command": {gone}}}}}}}"#
            ),
        )
        .unwrap();
        let settings = home.join(".claude").join("settings.json");
        std::fs::write(
            &settings,
            r#"{"permissions": {"deny": ["mcp__fx__add", "mcp__gone"], "allow": ["Bash(ls)"]}}"#,
        )
        .unwrap();
        Home {
            _dir: dir,
            home,
            settings,
        }
    }

    /// `mcpb ARGS` in `~/work`, with the test's home and nothing else of the user's.
    fn mcpb(&self, args: &[&str]) -> Output {
        let c = command_at_home(&self.home.join("work"), &self.home, args);
        let (out, _) = output_within(c, "mcpb", Duration::from_secs(60));
        out
    }
}

#[test]
fn a_tool_the_settings_deny_is_neither_listed_nor_callable() {
    let h = Home::new("claude-settings-tool");
    let tools = h.mcpb(&["--server", "fx", "tools"]);
    assert_exit(&tools, 0);
    let out = stdout(&tools);
    assert!(out.contains("echo("), "{out}");
    assert!(!out.contains("add("), "{out}");

    let call = h.mcpb(&["call", "fx/add", "a=1", "b=2"]);
    assert_exit(&call, 2);
    let err = stderr(&call);
    assert!(err.contains("denied by `mcp__fx__add`"), "{err}");
    assert!(err.contains("permissions.deny[0]"), "{err}");
    // Named as found: from the home directory resolved.
    let settings = std::fs::canonicalize(&h.settings).unwrap();
    assert!(err.contains(&settings.display().to_string()), "{err}");
    assert!(stdout(&call).is_empty(), "{}", stdout(&call));

    let json = h.mcpb(&["--json", "--server", "fx", "call", "add", "a=1", "b=2"]);
    assert_exit(&json, 2);
    let doc: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["error"]["kind"], "tool_not_allowed", "{doc}");

    // The tools the settings leave alone still run.
    let echo = h.mcpb(&["call", "fx/echo", "text=hi"]);
    assert_exit(&echo, 0);
    assert!(stdout(&echo).contains("hi"), "{}", stdout(&echo));
}

#[test]
fn a_server_the_settings_deny_is_not_started_and_servers_says_why() {
    let h = Home::new("claude-settings-server");
    let servers = h.mcpb(&["servers"]);
    assert_exit(&servers, 0);
    let out = stdout(&servers);
    assert!(
        out.contains("not started: denied by `mcp__gone` (`permissions.deny[1]`"),
        "{out}"
    );
    let doc: Value = serde_json::from_slice(&h.mcpb(&["--json", "servers"]).stdout).unwrap();
    assert_eq!(doc["denied"][0]["name"], "gone", "{doc}");
    assert_eq!(doc["denied"][0]["key"], "permissions.deny[1]", "{doc}");

    // Asked for by name, it is refused before anything is spawned.
    let o = h.mcpb(&["--server", "gone", "tools"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(err.contains("denied by `mcp__gone`"), "{err}");
    assert!(!err.contains("no-such-program"), "{err}");
}
