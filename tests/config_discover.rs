//! `ConfigLoader::discover`: the files the user's hosts read, in a temporary tree with the home
//! directory pointed into it (never the real one): precedence (local > project, nearest folder
//! first > user), the walk up the parents stopping at home, shadowed servers, settings files
//! without servers, per-file errors, and trust by a file's contents.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcp_blocking::config::discover::Discovery;
use mcp_blocking::config::locations::{HostConfig, Platform};
use mcp_blocking::config::{Approval, ConfigErrorKind, FileDigest, TrustStore};
use mcp_blocking::ConfigLoader;

mod common;

use common::tempdir::TempDir;

/// A tree: `<tmp>/home` is the home directory; `write` puts a file under the root.
struct Tree {
    _dir: TempDir,
    root: PathBuf,
}

impl Tree {
    fn new(tag: &str) -> Tree {
        let dir = TempDir::new(tag);
        let marker = dir.file("marker", "");
        let root = std::fs::canonicalize(marker.parent().unwrap()).unwrap();
        std::fs::create_dir_all(root.join("home")).unwrap();
        Tree { _dir: dir, root }
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = rel
            .split('/')
            .fold(self.root.clone(), |p, part| p.join(part));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn dir(&self, rel: &str) -> PathBuf {
        let path = rel
            .split('/')
            .fold(self.root.clone(), |p, part| p.join(part));
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    /// The environment of the loader: the tree's home alone.
    fn env(&self) -> BTreeMap<String, String> {
        let home = self.home().to_string_lossy().into_owned();
        BTreeMap::from([
            ("HOME".to_string(), home.clone()),
            ("USERPROFILE".to_string(), home),
        ])
    }

    /// A loader whose environment is the tree's home alone.
    fn loader(&self) -> ConfigLoader {
        ConfigLoader::new().with_env(self.env())
    }

    /// Writes `host`'s user file, at its place on this platform (Zed's is under `~/.config`
    /// on Unix, under `%APPDATA%` on Windows).
    fn write_user_file(&self, host: HostConfig, text: &str) -> PathBuf {
        let env = self.env();
        let path = host
            .path_in(Platform::current(), |k| env.get(k).map(Into::into))
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// A folder as Claude Code writes it among the `projects` of `~/.claude.json`: on Windows with
/// `/` and without the `\\?\` prefix of a resolved path.
fn claude_code_key(dir: &Path) -> String {
    let shown = dir.to_string_lossy();
    let plain = shown.strip_prefix(r"\\?\").unwrap_or(&shown);
    if cfg!(windows) {
        plain.replace('\\', "/")
    } else {
        plain.to_owned()
    }
}

fn stdio(name: &str) -> String {
    format!(r#"{{"command": "{name}-cmd"}}"#)
}

/// Each server as `name@file-relative-to-root:scope`.
fn servers(d: &Discovery, root: &Path) -> Vec<String> {
    d.servers
        .iter()
        .map(|s| {
            format!(
                "{}@{}:{}",
                s.server.name(),
                rel(&s.origin.file, root),
                s.origin.scope.name()
            )
        })
        .collect()
}

fn rel(path: &Path, root: &Path) -> String {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    path.strip_prefix(root)
        .unwrap_or(&path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

#[test]
fn local_beats_project_the_nearest_folder_beats_its_parents_and_project_beats_user() {
    let t = Tree::new("discover-order");
    let cwd = t.dir("home/proj/sub");
    let claude = format!(
        r#"{{"mcpServers": {{"a": {}, "b": {}}},
            "projects": {{{}: {{"mcpServers": {{"a": {}}}}}}}}}"#,
        stdio("user-a"),
        stdio("user-b"),
        serde_json::to_string(&cwd.to_string_lossy()).unwrap(),
        stdio("local-a"),
    );
    t.write("home/.claude.json", &claude);
    t.write(
        "home/proj/.mcp.json",
        &format!(
            r#"{{"mcpServers": {{"a": {}, "c": {}}}}}"#,
            stdio("proj-a"),
            stdio("proj-c")
        ),
    );
    t.write(
        "home/proj/sub/.vscode/mcp.json",
        &format!(r#"{{"servers": {{"c": {}}}}}"#, stdio("sub-c")),
    );

    let found = t.loader().discover(&cwd).unwrap();
    assert_eq!(
        servers(&found, &t.root),
        [
            "a@home/.claude.json:local",
            "c@home/proj/sub/.vscode/mcp.json:project",
            "b@home/.claude.json:user",
        ]
    );
    assert_eq!(
        found.server("a").unwrap().server.command(),
        Some("local-a-cmd")
    );
    let shadowed: Vec<String> = found
        .shadowed
        .iter()
        .map(|s| {
            format!(
                "{}@{}<{}",
                s.server.name(),
                rel(&s.origin.file, &t.root),
                s.by.scope.name()
            )
        })
        .collect();
    assert_eq!(
        shadowed,
        [
            "a@home/proj/.mcp.json<local",
            "c@home/proj/.mcp.json<project",
            "a@home/.claude.json<local",
        ]
    );
}

#[test]
fn the_local_scope_is_found_under_the_folder_as_claude_code_writes_it() {
    let t = Tree::new("discover-local-key");
    let cwd = t.dir("home/proj");
    // Claude Code's own spelling (on Windows `C:/Users/...`), and a trailing `/` besides.
    for key in [claude_code_key(&cwd), format!("{}/", claude_code_key(&cwd))] {
        let claude = format!(
            r#"{{"projects": {{{}: {{"mcpServers": {{"a": {}}}}}}}}}"#,
            serde_json::to_string(&key).unwrap(),
            stdio("local-a"),
        );
        t.write("home/.claude.json", &claude);
        let found = t.loader().discover(&cwd).unwrap();
        assert_eq!(
            servers(&found, &t.root),
            ["a@home/.claude.json:local"],
            "{key}"
        );
        assert!(!found.servers[0].needs_trust);
    }
}

#[test]
fn files_in_the_home_directory_are_user_files_not_project_files() {
    let t = Tree::new("discover-home");
    let cwd = t.dir("home/proj");
    // `.mcp.json` in home is not a file any host reads as the user's: not read at all.
    t.write(
        "home/.mcp.json",
        &format!(r#"{{"mcpServers": {{"x": {}}}}}"#, stdio("x")),
    );
    // `~/.gemini/settings.json` is Gemini CLI's user file, trusted.
    t.write(
        "home/.gemini/settings.json",
        &format!(r#"{{"mcpServers": {{"g": {}}}}}"#, stdio("g")),
    );
    let found = t.loader().discover(&cwd).unwrap();
    assert_eq!(
        servers(&found, &t.root),
        ["g@home/.gemini/settings.json:user"]
    );
    assert!(!found.servers[0].needs_trust);
}

#[test]
fn a_folder_outside_home_is_walked_up_to_the_root() {
    let t = Tree::new("discover-outside");
    let cwd = t.dir("work/repo/deep");
    t.write(
        "work/.cursor/mcp.json",
        &format!(r#"{{"mcpServers": {{"w": {}}}}}"#, stdio("w")),
    );
    let found = t.loader().discover(&cwd).unwrap();
    assert_eq!(
        servers(&found, &t.root),
        ["w@work/.cursor/mcp.json:project"]
    );
    assert!(found.servers[0].needs_trust);
}

#[test]
fn settings_files_without_servers_are_not_errors_and_a_broken_file_does_not_stop_the_others() {
    let t = Tree::new("discover-settings");
    let cwd = t.dir("home/proj");
    t.write("home/.gemini/settings.json", r#"{"theme": "GitHub"}"#);
    t.write_user_file(HostConfig::Zed, "// Zed\n{\"vim_mode\": true}");
    t.write("home/.claude.json", r#"{"numStartups": 3}"#);
    t.write("home/.cursor/mcp.json", r#"{"mcpServers": {"broken": "#);
    t.write(
        "home/.codeium/windsurf/mcp_config.json",
        &format!(r#"{{"mcpServers": {{"ws": {}}}}}"#, stdio("ws")),
    );
    let found = t.loader().discover(&cwd).unwrap();
    assert_eq!(
        servers(&found, &t.root),
        ["ws@home/.codeium/windsurf/mcp_config.json:user"]
    );
    let errors: Vec<(String, ConfigErrorKind)> = found
        .files
        .iter()
        .filter_map(|f| {
            f.error
                .as_ref()
                .map(|e| (rel(&f.origin.file, &t.root), e.kind))
        })
        .collect();
    assert_eq!(
        errors,
        [("home/.cursor/mcp.json".to_string(), ConfigErrorKind::Syntax)]
    );
    assert_eq!(found.files.len(), 5, "{:#?}", found.files);
    // A file that cannot be read defines no server: the others are what may start.
    let report = found.report();
    assert_eq!(report.servers.len(), 1);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
}

#[test]
fn a_project_file_is_trusted_for_the_contents_approved_and_needs_approval_again_once_changed() {
    let t = Tree::new("discover-trust");
    let cwd = t.dir("home/proj");
    let file = t.write(
        "home/proj/.mcp.json",
        &format!(
            r#"{{"mcpServers": {{"p": {}, "r": {{"type": "http", "url": "https://example.com/mcp"}}}}}}"#,
            stdio("p")
        ),
    );
    let loader = t.loader();

    // Nothing approved: every server of the project file waits, remote ones too.
    let found = loader.discover(&cwd).unwrap();
    assert!(found.servers.iter().all(|s| s.needs_trust));
    assert_eq!(found.untrusted_files().count(), 1);
    let report = found.report();
    assert!(report.servers.is_empty());
    assert_eq!(
        report
            .errors
            .iter()
            .map(|e| (e.server.as_deref(), e.kind))
            .collect::<Vec<_>>(),
        [
            (Some("p"), ConfigErrorKind::NotTrusted),
            (Some("r"), ConfigErrorKind::NotTrusted),
        ]
    );
    assert!(report.errors[0].to_string().contains("is not approved"));

    // Approved as it is: the servers start.
    let store_file = t.root.join("state").join("trust.json");
    let mut store = TrustStore::open(&store_file).unwrap();
    let digest = found.files[0].digest.clone().unwrap();
    assert_eq!(digest, FileDigest::of(&file).unwrap());
    store.approve(&digest);
    store.save().unwrap();
    let store = TrustStore::open(&store_file).unwrap();
    let found = loader.discover_with(&cwd, &store).unwrap();
    assert!(found.servers.iter().all(|s| !s.needs_trust));
    assert_eq!(found.report().servers.len(), 2);

    // Changed: it waits again.
    std::fs::write(
        &file,
        format!(r#"{{"mcpServers": {{"p": {}}}}}"#, stdio("other")),
    )
    .unwrap();
    let found = loader.discover_with(&cwd, &store).unwrap();
    assert!(found.servers[0].needs_trust);
    assert!(found.report().servers.is_empty());
}

#[test]
fn a_codex_project_file_is_a_project_file_waiting_for_approval_over_the_user_one() {
    let t = Tree::new("discover-codex");
    let cwd = t.dir("home/proj/sub");
    t.write(
        "home/proj/.codex/config.toml",
        "model = \"o3\"\n[mcp_servers.docs]\ncommand = \"proj-docs\"\n\
         default_tools_approval_mode = \"prompt\"\n[mcp_servers.docs.tools.search]\napproval_mode = \"approve\"\n",
    );
    // The nearer folder's file wins over its parent's; a file without servers is no error.
    t.write("home/proj/sub/.codex/config.toml", "model = \"o3\"\n");
    t.write(
        "home/.codex/config.toml",
        "[mcp_servers.docs]\ncommand = \"user-docs\"\n[mcp_servers.mine]\ncommand = \"m\"\n",
    );
    // A project's other hosts' files come first.
    t.write(
        "home/proj/.mcp.json",
        &format!(r#"{{"mcpServers": {{"docs": {}}}}}"#, stdio("claude-docs")),
    );
    let found = t.loader().discover(&cwd).unwrap();
    assert_eq!(
        servers(&found, &t.root),
        [
            "docs@home/proj/.mcp.json:project",
            "mine@home/.codex/config.toml:user"
        ]
    );
    std::fs::remove_file(t.root.join("home/proj/.mcp.json")).unwrap();
    let found = t.loader().discover(&cwd).unwrap();
    assert_eq!(
        servers(&found, &t.root),
        [
            "docs@home/proj/.codex/config.toml:project",
            "mine@home/.codex/config.toml:user"
        ]
    );
    let docs = found.server("docs").unwrap();
    assert!(docs.needs_trust);
    assert_eq!(
        docs.origin.host,
        mcp_blocking::config::locations::HostConfig::Codex
    );
    let policy = docs.server.policy();
    assert!(policy.needs_approval("fetch") && !policy.needs_approval("search"));
    assert!(
        found.files.iter().all(|f| f.error.is_none()),
        "{:#?}",
        found.files
    );
    // Not approved, it starts nothing and shadows the user's `docs` all the same.
    let report = found.report();
    assert_eq!(report.servers.len(), 1);
    assert_eq!(report.servers[0].name(), "mine");
    assert_eq!(report.errors[0].kind, ConfigErrorKind::NotTrusted);
}

/// A tree with a `.mcp.json` of `gh` and `db` in `home/proj`, and `~/.claude.json` with the
/// user's `fs`; and the folder.
fn claude_tree(tag: &str) -> (Tree, PathBuf) {
    let t = Tree::new(tag);
    let cwd = t.dir("home/proj");
    t.write(
        "home/proj/.mcp.json",
        &format!(
            r#"{{"mcpServers": {{"gh": {}, "db": {}}}}}"#,
            stdio("gh"),
            stdio("db")
        ),
    );
    t.write(
        "home/.claude.json",
        &format!(r#"{{"mcpServers": {{"fs": {}}}}}"#, stdio("fs")),
    );
    (t, cwd)
}

#[test]
fn claude_code_settings_deny_a_tool_naming_the_settings_file() {
    let (t, cwd) = claude_tree("claude-deny-tool");
    let settings = t.write(
        "home/.claude/settings.json",
        r#"{"permissions": {"deny": ["Bash(rm -rf *)", "mcp__fs__write_*"]}}"#,
    );
    let found = t.loader().discover(&cwd).unwrap();
    let fs = found.server("fs").unwrap();
    let refusal = fs.server.policy().check_tool("write_file").unwrap_err();
    assert_eq!(refusal.rule, "denied by `mcp__fs__write_*`");
    assert_eq!(refusal.source.key, "permissions.deny[1]");
    assert_eq!(refusal.source.file.as_deref(), Some(settings.as_path()));
    assert!(fs.server.policy().allows_tool("read_file"));
    // The settings file is listed among the files read, defining no server.
    let listed = found
        .files
        .iter()
        .find(|f| f.origin.file == settings)
        .expect("the settings file is listed");
    assert!(listed.server_names.is_empty() && listed.error.is_none());
    // Another host's server of the same name is not Claude Code's to limit.
    let t2 = Tree::new("claude-deny-other-host");
    let cwd2 = t2.dir("home/proj");
    t2.write(
        "home/.cursor/mcp.json",
        &format!(r#"{{"mcpServers": {{"fs": {}}}}}"#, stdio("fs")),
    );
    t2.write(
        "home/.claude/settings.json",
        r#"{"permissions": {"deny": ["mcp__fs"]}}"#,
    );
    let found = t2.loader().discover(&cwd2).unwrap();
    assert!(found
        .server("fs")
        .unwrap()
        .server
        .policy()
        .is_unrestricted());
}

#[test]
fn claude_code_settings_deny_a_server_and_it_does_not_start() {
    let (t, cwd) = claude_tree("claude-deny-server");
    let settings = t.write(
        "home/proj/.claude/settings.json",
        r#"{"permissions": {"deny": ["mcp__gh"]}}"#,
    );
    let found = t.loader().discover(&cwd).unwrap();
    assert!(found.server("gh").is_none());
    assert_eq!(found.denied.len(), 1);
    let gh = &found.denied[0];
    assert_eq!(gh.server.name(), "gh");
    assert_eq!(gh.reason, "denied by `mcp__gh`");
    assert_eq!(gh.source.key, "permissions.deny[0]");
    assert_eq!(gh.source.file.as_deref(), Some(settings.as_path()));
    // Nor once its project file is approved: a deny is the user's (or the project's) word.
    let mut store = TrustStore::new();
    for f in found.untrusted_files() {
        store.approve(f.digest.as_ref().unwrap());
    }
    let report = t.loader().discover_with(&cwd, &store).unwrap().report();
    let names: Vec<&str> = report.servers.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["db", "fs"]);
    let e = report
        .errors
        .iter()
        .find(|e| e.server.as_deref() == Some("gh"))
        .unwrap();
    assert_eq!(e.kind, ConfigErrorKind::Denied);
    assert_eq!(e.file.as_deref(), Some(settings.as_path()));
    assert!(e.message.contains("denied by `mcp__gh`"), "{e}");
}

#[test]
fn claude_code_disabled_servers_do_not_start_and_its_approvals_are_not_ours() {
    let (t, cwd) = claude_tree("claude-disabled");
    // In `~/.claude.json`, for this folder, beside the user's servers.
    let key = serde_json::to_string(&cwd.to_string_lossy()).unwrap();
    let claude = t.write(
        "home/.claude.json",
        &format!(
            r#"{{"mcpServers": {{"fs": {}}},
                "projects": {{{key}: {{"disabledMcpjsonServers": ["db"],
                                      "disabledMcpServers": ["fs"],
                                      "enabledMcpjsonServers": ["gh"],
                                      "enableAllProjectMcpServers": true}}}}}}"#,
            stdio("fs")
        ),
    );
    let found = t.loader().discover(&cwd).unwrap();
    let denied: Vec<(&str, &str)> = found
        .denied
        .iter()
        .map(|d| (d.server.name(), d.reason.as_str()))
        .collect();
    assert_eq!(
        denied,
        [
            ("db", "disabled by `disabledMcpjsonServers`"),
            ("fs", "disabled by `disabledMcpServers`")
        ]
    );
    assert_eq!(
        found.denied[0].source.key,
        format!(
            "projects.{}.disabledMcpjsonServers[0]",
            cwd.to_string_lossy()
        )
    );
    assert_eq!(
        found.denied[0].source.file.as_deref(),
        Some(claude.as_path())
    );
    // Claude Code's own approval of the project is listed, and `gh` still waits for ours.
    assert!(found.server("gh").unwrap().needs_trust);
    let ignored: Vec<String> = found
        .report()
        .ignored
        .iter()
        .map(|k| k.key.rsplit('.').next().unwrap().to_owned())
        .collect();
    assert_eq!(
        ignored,
        ["enabledMcpjsonServers", "enableAllProjectMcpServers"]
    );
}

#[test]
fn claude_code_user_settings_allow_auto_approves_and_a_project_s_allow_does_not() {
    let (t, cwd) = claude_tree("claude-allow");
    t.write(
        "home/.claude/settings.json",
        r#"{"permissions": {"allow": ["mcp__fs__read_file", "mcp__gh"]}}"#,
    );
    t.write(
        "home/proj/.claude/settings.local.json",
        r#"{"permissions": {"allow": ["mcp__db"], "ask": ["mcp__gh__push"]}}"#,
    );
    let found = t.loader().discover(&cwd).unwrap();
    let fs = found.server("fs").unwrap().server.policy();
    assert!(!fs.needs_approval("read_file") && fs.needs_approval("write_file"));
    assert_eq!(fs.approval_source().key, "permissions.allow[0]");
    // The project's settings may ask, never approve.
    let gh = found.server("gh").unwrap().server.policy();
    assert!(!gh.needs_approval("list") && gh.needs_approval("push"));
    let db = found.server("db").unwrap().server.policy();
    assert_eq!(db.approval(), &Approval::Unset);
    let ignored = found.report().ignored;
    assert_eq!(ignored.len(), 1, "{ignored:?}");
    assert_eq!(ignored[0].key, "permissions.allow[0]");
    assert!(
        ignored[0].reason.contains("never approve"),
        "{}",
        ignored[0]
    );
}

#[test]
fn a_claude_code_settings_file_that_cannot_be_read_holds_its_servers_back() {
    let (t, cwd) = claude_tree("claude-broken-settings");
    let settings = t.write(
        "home/proj/.claude/settings.json",
        r#"{"permissions": {"deny": "mcp__gh"}}"#,
    );
    t.write(
        "home/.cursor/mcp.json",
        &format!(r#"{{"mcpServers": {{"cur": {}}}}}"#, stdio("cur")),
    );
    let found = t.loader().discover(&cwd).unwrap();
    let held: Vec<&str> = found.denied.iter().map(|d| d.server.name()).collect();
    assert_eq!(held, ["gh", "db", "fs"]);
    assert!(found
        .denied
        .iter()
        .all(|d| d.source.file.as_deref() == Some(settings.as_path())));
    // Another host's servers are not Claude Code's.
    assert!(found.server("cur").is_some());
    let e = found
        .files
        .iter()
        .find(|f| f.origin.file == settings)
        .and_then(|f| f.error.clone())
        .unwrap();
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ConfigErrorKind::WrongType, "permissions.deny")
    );
}

#[test]
fn a_folder_that_does_not_exist_is_an_io_error() {
    let t = Tree::new("discover-missing");
    let e = t.loader().discover(t.root.join("nowhere")).unwrap_err();
    assert_eq!(e.kind, ConfigErrorKind::Io);
}

/// A `~/.claude.json` past `max_file_bytes`: Claude Code keeps every project's history in it.
fn large_claude_json(t: &Tree, cwd: &Path) -> PathBuf {
    let key = serde_json::to_string(&cwd.to_string_lossy()).unwrap();
    let history = format!(
        "[{}]",
        vec![r#"{"display": "a long prompt of the user's", "pastedContents": {}}"#; 400].join(",")
    );
    let others: Vec<String> = (0..20)
        .map(|i| {
            format!(
                r#""/elsewhere/p{i}": {{"history": {history}, "mcpServers": {{"o{i}": {}}}}}"#,
                stdio("o")
            )
        })
        .collect();
    t.write(
        "home/.claude.json",
        &format!(
            r#"{{"numStartups": 9, "mcpServers": {{"fs": {}}},
                "projects": {{{}, {key}: {{"history": {history}, "mcpServers": {{"local": {}}},
                                            "disabledMcpjsonServers": ["db"]}}}},
                "cachedChangelog": "{}"}}"#,
            stdio("fs"),
            others.join(","),
            stdio("local"),
            "x".repeat(50_000)
        ),
    )
}

#[test]
fn a_claude_json_larger_than_the_file_limit_gives_its_servers_and_rules_all_the_same() {
    let (t, cwd) = claude_tree("claude-large");
    let path = large_claude_json(&t, &cwd);
    let limit = 64 * 1024;
    assert!(std::fs::metadata(&path).unwrap().len() > 4 * limit as u64);
    let limits = mcp_blocking::config::InputLimits::default().with_max_file_bytes(limit);
    let found = t.loader().with_input_limits(limits).discover(&cwd).unwrap();
    // Nothing about the file itself: only the project file waiting for approval, and `db`.
    let kinds: Vec<ConfigErrorKind> = found.report().errors.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [ConfigErrorKind::NotTrusted, ConfigErrorKind::Denied]
    );
    assert_eq!(
        servers(&found, &t.root),
        [
            "local@home/.claude.json:local",
            "gh@home/proj/.mcp.json:project",
            "fs@home/.claude.json:user"
        ]
    );
    let denied: Vec<&str> = found.denied.iter().map(|d| d.server.name()).collect();
    assert_eq!(denied, ["db"]);

    // Loaded as one file, for the folder: the project's servers, then the user's.
    let report = ConfigLoader::new()
        .with_input_limits(limits)
        .with_project_dir(&cwd)
        .load(&path)
        .unwrap();
    let names: Vec<&str> = report.servers.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["local", "fs"]);
    // What is kept is still bounded: a node limit below the kept servers refuses the file.
    let tight = limits.with_max_nodes(5);
    let err = ConfigLoader::new()
        .with_input_limits(tight)
        .with_project_dir(&cwd)
        .load(&path)
        .unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::TooLarge);
}
