//! `ConfigLoader::discover`: the files the user's hosts read, in a temporary tree with the home
//! directory pointed into it (never the real one): precedence (local > project, nearest folder
//! first > user), the walk up the parents stopping at home, shadowed servers, settings files
//! without servers, per-file errors, and trust by a file's contents.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcp_blocking::config::discover::Discovery;
use mcp_blocking::config::{ConfigErrorKind, FileDigest, TrustStore};
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

    /// A loader whose environment is the tree's home alone.
    fn loader(&self) -> ConfigLoader {
        let home = self.home().to_string_lossy().into_owned();
        ConfigLoader::new().with_env(BTreeMap::from([
            ("HOME".to_string(), home.clone()),
            ("USERPROFILE".to_string(), home),
        ]))
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
    t.write(
        "home/.config/zed/settings.json",
        "// Zed\n{\"vim_mode\": true}",
    );
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

#[test]
fn a_folder_that_does_not_exist_is_an_io_error() {
    let t = Tree::new("discover-missing");
    let e = t.loader().discover(t.root.join("nowhere")).unwrap_err();
    assert_eq!(e.kind, ConfigErrorKind::Io);
}
