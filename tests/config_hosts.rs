//! Each host's own file, as its documentation writes it (`fixtures/hosts/`), loads into the
//! servers that host would run, field by field; a broken file of each host is reported at the key
//! as written, TOML syntax errors with their line and column; and the `mcp` options block reaches
//! `LoadReport::degradation`.

#[path = "common/tempdir.rs"]
mod tempdir;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_blocking::config::{
    Approval, ConfigError, ConfigErrorKind, LoadReport, ToolPattern, TransportConfig,
};
use mcp_blocking::{ConfigLoader, ServerConfig};
use tempdir::TempDir;

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join("hosts")
        .join(path)
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn loader(pairs: &[(&str, &str)]) -> ConfigLoader {
    ConfigLoader::new().with_env(env(pairs))
}

fn names(r: &LoadReport) -> Vec<&str> {
    r.servers.iter().map(ServerConfig::name).collect()
}

fn server<'a>(r: &'a LoadReport, name: &str) -> &'a ServerConfig {
    r.server(name)
        .unwrap_or_else(|| panic!("no server `{name}`: {:?}", r.errors))
}

/// A stdio server's command, args, env and cwd.
type Stdio<'a> = (
    &'a str,
    Vec<&'a str>,
    Vec<(&'a str, &'a str)>,
    Option<&'a Path>,
);

/// (command, args, env, cwd) of a stdio server.
fn stdio(s: &ServerConfig) -> Stdio<'_> {
    let TransportConfig::Stdio(t) = s.transport() else {
        panic!("`{}` is not stdio: {:?}", s.name(), s.transport())
    };
    (
        t.command.as_str(),
        t.args.iter().map(String::as_str).collect(),
        t.env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect(),
        t.cwd.as_deref(),
    )
}

/// (url, headers) of a Streamable HTTP server.
fn http(s: &ServerConfig) -> (&str, Vec<(&str, &str)>) {
    let TransportConfig::StreamableHttp(t) = s.transport() else {
        panic!("`{}` is not streamable-http: {:?}", s.name(), s.transport())
    };
    let headers = t
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    (t.url.as_str(), headers)
}

fn patterns(p: &[ToolPattern]) -> Vec<&str> {
    p.iter().map(ToolPattern::as_str).collect()
}

/// The only error of a lenient load, for the server `name`.
fn only_error<'a>(r: &'a LoadReport, name: &str) -> &'a ConfigError {
    assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
    let e = &r.errors[0];
    assert_eq!(e.server.as_deref(), Some(name), "{e}");
    e
}

/// Writes `text` at `rel` (with its folders) in a fresh directory.
fn write(dir: &TempDir, rel: &str, text: &str) -> PathBuf {
    let rel_path = Path::new(rel);
    if let Some(parent) = rel_path.parent().filter(|p| !p.as_os_str().is_empty()) {
        let probe = dir.file("probe", "");
        let root = probe.parent().unwrap().to_path_buf();
        std::fs::create_dir_all(root.join(parent)).unwrap();
    }
    dir.file(rel, text)
}

// --- Codex ---------------------------------------------------------------------------------

#[test]
fn codex_documented_example() {
    let path = fixture("codex/config.toml");
    let r = loader(&[("FIGMA_OAUTH_TOKEN", "figma-s3cret-token")])
        .load(&path)
        .unwrap();
    assert!(r.is_ok(), "{:?}", r.errors);
    assert_eq!(names(&r), ["context7", "figma", "chrome_devtools"]);

    let context7 = server(&r, "context7");
    assert_eq!(
        stdio(context7),
        (
            "npx",
            vec!["-y", "@upstash/context7-mcp"],
            vec![("MY_ENV_VAR", "MY_ENV_VALUE")],
            None
        )
    );
    assert_eq!(context7.timeout(), Duration::from_secs(15));

    let figma = server(&r, "figma");
    assert_eq!(
        http(figma),
        (
            "https://mcp.figma.com/mcp",
            vec![
                ("X-Figma-Region", "us-east-1"),
                ("Authorization", "Bearer figma-s3cret-token")
            ]
        )
    );
    assert!(!format!("{figma:?}").contains("figma-s3cret-token"));

    // One timeout bounds both connecting and each call: the longer of the two.
    let devtools = server(&r, "chrome_devtools");
    assert_eq!(http(devtools), ("http://localhost:3000/mcp", vec![]));
    assert_eq!(devtools.timeout(), Duration::from_secs(45));
    let policy = devtools.policy();
    assert_eq!(
        policy.included().map(patterns),
        Some(vec!["open", "screenshot"])
    );
    assert_eq!(patterns(policy.excluded()), ["screenshot"]);
    assert!(policy.allows_tool("open") && !policy.allows_tool("screenshot"));
}

#[test]
fn codex_an_unset_bearer_token_variable_is_an_error_at_its_key() {
    let r = loader(&[]).load(fixture("codex/config.toml")).unwrap();
    let e = only_error(&r, "figma");
    assert_eq!(e.kind, ConfigErrorKind::UndefinedVariable);
    assert_eq!(e.path, "mcp_servers.figma.bearer_token_env_var");
    assert_eq!(e.message, "variable `FIGMA_OAUTH_TOKEN` is not set");
}

#[test]
fn codex_passes_named_variables_and_headers_from_the_environment() {
    let dir = TempDir::new("codex-env");
    let path = write(
        &dir,
        "config.toml",
        r#"
[mcp_servers.db]
command = "db-mcp"
env_vars = ["DB_TOKEN", "UNSET_ONE", { name = "DB_USER" }, { name = "REMOTE_ONE", source = "remote" }]
cwd = "/srv/db"
startup_timeout_ms = 90000
required = true

[mcp_servers.api]
url = "https://api.example.com/mcp"
env_http_headers = { "X-Api-Key" = "API_KEY", "X-Unset" = "NOT_SET" }
startup_timeout_sec = 0.25
"#,
    );
    let r = loader(&[
        ("DB_TOKEN", "db-token-value"),
        ("DB_USER", "app"),
        ("API_KEY", "api-key-value"),
    ])
    .load(&path)
    .unwrap();
    assert!(r.is_ok(), "{:?}", r.errors);
    let db = server(&r, "db");
    assert_eq!(
        stdio(db),
        (
            "db-mcp",
            vec![],
            vec![("DB_TOKEN", "db-token-value"), ("DB_USER", "app")],
            Some(Path::new("/srv/db"))
        )
    );
    assert_eq!(db.timeout(), Duration::from_secs(90));
    assert!(!format!("{db:?}").contains("db-token-value"));
    let ignored: Vec<&str> = r.ignored.iter().map(|k| k.key.as_str()).collect();
    assert_eq!(
        ignored,
        [
            "mcp_servers.db.env_vars[3].source",
            "mcp_servers.db.required"
        ]
    );
    // A header whose variable is not set is not sent, as in Codex; under 1 s is 1 s.
    let api = server(&r, "api");
    assert_eq!(
        http(api),
        (
            "https://api.example.com/mcp",
            vec![("X-Api-Key", "api-key-value")]
        )
    );
    assert_eq!(api.timeout(), Duration::from_secs(1));
}

#[test]
fn codex_broken_files_name_the_place() {
    let dir = TempDir::new("codex-broken");
    // A syntax error: line and column, and the file.
    let path = write(
        &dir,
        "syntax.toml",
        "[mcp_servers.a]\ncommand = \"npx\"\nargs = [\"-y\", oops]\n",
    );
    let e = ConfigLoader::new().load(&path).unwrap_err();
    assert_eq!(e.kind, ConfigErrorKind::Syntax);
    assert_eq!(e.file.as_deref(), Some(path.as_path()));
    assert!(
        e.message.starts_with("invalid TOML: ") && e.message.ends_with("at line 3 column 15"),
        "{e}"
    );
    // A value of the wrong type, at its key path.
    let path = write(
        &dir,
        "types.toml",
        "[mcp_servers.x]\ncommand = \"npx\"\nargs = \"-y\"\n",
    );
    let r = ConfigLoader::new().load(&path).unwrap();
    let e = only_error(&r, "x");
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ConfigErrorKind::WrongType, "mcp_servers.x.args")
    );
    // Codex's own keys, each at its name.
    for (line, key, kind) in [
        (
            "startup_timeout_sec = \"ten\"",
            "startup_timeout_sec",
            ConfigErrorKind::InvalidValue,
        ),
        (
            "tool_timeout_sec = 100000000",
            "tool_timeout_sec",
            ConfigErrorKind::InvalidValue,
        ),
        (
            "env_vars = \"TOKEN\"",
            "env_vars",
            ConfigErrorKind::WrongType,
        ),
        (
            "env_vars = [\"NOT A NAME\"]",
            "env_vars[0]",
            ConfigErrorKind::InvalidValue,
        ),
    ] {
        let path = write(
            &dir,
            "keys.toml",
            &format!("[mcp_servers.x]\ncommand = \"npx\"\n{line}\n"),
        );
        let r = ConfigLoader::new().load(&path).unwrap();
        let e = only_error(&r, "x");
        assert_eq!(
            (e.kind, e.path.as_str()),
            (kind, format!("mcp_servers.x.{key}").as_str()),
            "{e}"
        );
    }
    // A timeout past 24 h is told in the key's own unit, as written.
    for (line, want) in [
        (
            "startup_timeout_sec = 1e300",
            "`startup_timeout_sec` is at most 86400 seconds (24 h), found 1e+300",
        ),
        (
            "tool_timeout_sec = 86401",
            "`tool_timeout_sec` is at most 86400 seconds (24 h), found 86401",
        ),
        (
            "startup_timeout_ms = 86400001",
            "`startup_timeout_ms` is at most 86400000 milliseconds (24 h), found 86400001",
        ),
    ] {
        let path = write(
            &dir,
            "timeouts.toml",
            &format!("[mcp_servers.x]\ncommand = \"npx\"\n{line}\n"),
        );
        let r = ConfigLoader::new().load(&path).unwrap();
        let e = only_error(&r, "x");
        assert_eq!(e.kind, ConfigErrorKind::InvalidValue, "{e}");
        assert!(e.message.contains(want), "{e}");
    }
    // 24 h itself is allowed.
    let path = write(
        &dir,
        "timeouts.toml",
        "[mcp_servers.x]\ncommand = \"npx\"\ntool_timeout_sec = 86400\n",
    );
    assert!(ConfigLoader::new().load(&path).unwrap().errors.is_empty());
    let path = write(
        &dir,
        "headers.toml",
        "[mcp_servers.x]\nurl = \"https://h/mcp\"\nhttp_headers = { \"Bad Name\" = \"v\" }\n",
    );
    let e = only_error(&ConfigLoader::new().load(&path).unwrap(), "x").clone();
    assert_eq!(e.path, "mcp_servers.x.http_headers.Bad Name", "{e}");
    // `mcp_servers` misspelt is not a file without servers.
    let path = write(&dir, "typo.toml", "[mcp_server.x]\ncommand = \"npx\"\n");
    let e = ConfigLoader::new().load(&path).unwrap_err();
    assert_eq!(e.kind, ConfigErrorKind::UnknownFormat);
    assert_eq!(e.suggestion.as_deref(), Some("mcp_servers"));
    // A Codex file with no servers loads none.
    let path = write(&dir, "none.toml", "model = \"o3\"\n");
    assert!(ConfigLoader::new().load(&path).unwrap().servers.is_empty());
}

#[test]
fn codex_approval_modes_documented_example() {
    let r = loader(&[]).load(fixture("codex/approvals.toml")).unwrap();
    assert!(r.is_ok(), "{:?}", r.errors);
    assert_eq!(names(&r), ["docs", "linear", "notes"]);

    // Asked about by default; `search` approved on its own.
    let docs = server(&r, "docs").policy();
    assert_eq!(docs.approval(), &Approval::Tools(vec!["search".into()]));
    assert!(!docs.needs_approval("search") && docs.needs_approval("fetch"));
    assert_eq!(
        docs.approval_source().key,
        "mcp_servers.docs.default_tools_approval_mode"
    );
    // Approved by default; `create_issue` asked about on its own.
    let linear = server(&r, "linear").policy();
    assert_eq!(
        linear.approval(),
        &Approval::AllExcept(vec!["create_issue".into()])
    );
    assert!(linear.needs_approval("create_issue") && !linear.needs_approval("list_issues"));
    assert_eq!(linear.approval_source().key, "mcp_servers.linear.tools");
    // `auto` by default, and a tool approved: nothing asked, as a file without approvals.
    let notes = server(&r, "notes").policy();
    assert_eq!(notes.approval(), &Approval::Unset);
    assert!(notes.is_unrestricted());

    let ignored: Vec<&str> = r.ignored.iter().map(|k| k.key.as_str()).collect();
    assert_eq!(
        ignored,
        [
            "mcp_servers.docs.supports_parallel_tool_calls",
            "mcp_servers.linear.scopes",
            "mcp_servers.linear.oauth_resource",
            "mcp_servers.notes.environment_id",
        ]
    );
    assert!(r.ignored.iter().all(|k| !k.reason.is_empty()));
}

#[test]
fn codex_approval_modes_and_other_keys_broken_or_unenforceable() {
    let dir = TempDir::new("codex-approvals");
    for (lines, key, kind) in [
        (
            "default_tools_approval_mode = \"sometimes\"",
            "default_tools_approval_mode",
            ConfigErrorKind::InvalidValue,
        ),
        (
            "[mcp_servers.x.tools.search]\napproval_mode = \"never\"",
            "tools.search.approval_mode",
            ConfigErrorKind::InvalidValue,
        ),
        (
            "[mcp_servers.x.tools.search]\napproval = \"approve\"",
            "tools.search.approval",
            ConfigErrorKind::UnknownKey,
        ),
        (
            "supports_parallel_tool_calls = \"yes\"",
            "supports_parallel_tool_calls",
            ConfigErrorKind::WrongType,
        ),
        // Run elsewhere by Codex, or kept from the model: not here, so not at all.
        (
            "environment_id = \"remote-box\"",
            "environment_id",
            ConfigErrorKind::Unenforceable,
        ),
        (
            "omit_tools_from = [\"code_mode\"]",
            "omit_tools_from",
            ConfigErrorKind::Unenforceable,
        ),
    ] {
        let path = write(
            &dir,
            "config.toml",
            &format!("[mcp_servers.x]\ncommand = \"npx\"\n{lines}\n"),
        );
        let r = ConfigLoader::new().load(&path).unwrap();
        let e = only_error(&r, "x");
        assert_eq!(
            (e.kind, e.path.as_str()),
            (kind, format!("mcp_servers.x.{key}").as_str()),
            "{e}"
        );
        assert_eq!(e.file.as_deref(), Some(path.as_path()));
    }
    // Codex's OAuth callback port is ours as `redirect_port`, reported at its own name.
    let path = write(
        &dir,
        "config.toml",
        "[mcp_servers.x]\nurl = \"https://h/mcp\"\n[mcp_servers.x.oauth]\nclient_id = \"c\"\n\
         callback_port = \"no\"\ncallback_url = \"http://127.0.0.1:5555/cb\"\n",
    );
    let r = ConfigLoader::new().load(&path).unwrap();
    let e = only_error(&r, "x");
    assert_eq!(e.path, "mcp_servers.x.oauth.callback_port", "{e}");
    let path = write(
        &dir,
        "config.toml",
        "[mcp_servers.x]\nurl = \"https://h/mcp\"\n[mcp_servers.x.oauth]\nclient_id = \"c\"\n\
         callback_port = 5555\ncallback_url = \"http://127.0.0.1:5555/cb\"\n",
    );
    let r = ConfigLoader::new().load(&path).unwrap();
    assert!(r.is_ok(), "{:?}", r.errors);
    let keys: Vec<&str> = r.ignored.iter().map(|k| k.key.as_str()).collect();
    assert_eq!(keys, ["mcp_servers.x.oauth.callback_url"]);
    // Accepted, an unenforceable key is listed instead.
    let path = write(
        &dir,
        "config.toml",
        "[mcp_servers.x]\ncommand = \"npx\"\nenvironment_id = \"remote-box\"\n",
    );
    let r = ConfigLoader::new()
        .accept_unenforced(true)
        .load(&path)
        .unwrap();
    assert!(r.is_ok(), "{:?}", r.errors);
    assert_eq!(r.ignored.len(), 1);
    assert_eq!(r.ignored[0].key, "mcp_servers.x.environment_id");
    assert!(r.ignored[0].reason.contains("accepted"), "{}", r.ignored[0]);
}

// --- Gemini CLI ----------------------------------------------------------------------------

fn gemini_env() -> ConfigLoader {
    loader(&[
        ("DB_CONNECTION_STRING", "postgres://db/app"),
        ("EXTERNAL_API_KEY", "external-api-key"),
        ("EXTERNAL_SERVICE_TOKEN", "service-token"),
        ("PWD", "/home/alex/app"),
    ])
}

#[test]
fn gemini_documented_example() {
    let r = gemini_env()
        .load(fixture("gemini/.gemini/settings.json"))
        .unwrap();
    assert!(r.is_ok(), "{:?}", r.errors);
    assert_eq!(
        names(&r),
        [
            "pythonTools",
            "nodeServer",
            "dockerizedServer",
            "httpServer",
            "httpServerWithAuth",
            "filteredServer",
            "sseServer"
        ]
    );

    let python = server(&r, "pythonTools");
    assert_eq!(
        stdio(python),
        (
            "python",
            vec!["-m", "my_mcp_server", "--port", "8080"],
            vec![
                ("API_KEY", "external-api-key"),
                ("DATABASE_URL", "postgres://db/app")
            ],
            Some(Path::new("./mcp-servers/python"))
        )
    );
    assert_eq!(python.timeout(), Duration::from_secs(15));

    let node = server(&r, "nodeServer");
    assert_eq!(stdio(node).0, "node");
    assert_eq!(node.policy().approval(), &Approval::All);

    let docker = server(&r, "dockerizedServer");
    assert_eq!(stdio(docker).1[6], "/home/alex/app:/workspace");
    assert_eq!(stdio(docker).2, [("API_KEY", "service-token")]);

    let plain = server(&r, "httpServer");
    assert_eq!(http(plain), ("http://localhost:3000/mcp", vec![]));
    assert_eq!(plain.timeout(), Duration::from_secs(5));
    let TransportConfig::StreamableHttp(t) = plain.transport() else {
        panic!()
    };
    assert!(!t.detect_legacy_sse, "httpUrl is Streamable HTTP");

    let auth = server(&r, "httpServerWithAuth");
    assert_eq!(
        http(auth).1,
        [
            ("Authorization", "Bearer your-api-token"),
            ("X-Custom-Header", "custom-value"),
            ("Content-Type", "application/json")
        ]
    );

    let filtered = server(&r, "filteredServer");
    assert_eq!(filtered.timeout(), Duration::from_secs(30));
    assert_eq!(
        filtered.policy().included().map(patterns),
        Some(vec!["safe_tool", "file_reader", "data_processor"])
    );

    // `url` is legacy SSE in Gemini's files.
    let sse = server(&r, "sseServer");
    assert_eq!(sse.transport_type(), "sse");
    assert_eq!(sse.url(), Some("http://localhost:8080/sse"));

    // `mcp.excluded` wins over `mcp.allowed`; a server not allowed is not loaded.
    assert_eq!(r.skipped_disabled, ["experimental-server", "notAllowed"]);
    let skipped: Vec<(&str, &str)> = r
        .ignored
        .iter()
        .filter(|k| k.key.starts_with("mcpServers."))
        .map(|k| (k.key.as_str(), k.reason.as_str()))
        .collect();
    assert_eq!(
        skipped,
        [
            (
                "mcpServers.experimental-server",
                "listed in Gemini CLI's `mcp.excluded`: not loaded"
            ),
            (
                "mcpServers.notAllowed",
                "not listed in Gemini CLI's `mcp.allowed`: not loaded"
            )
        ]
    );
}

#[test]
fn gemini_timeouts_are_milliseconds_and_url_means_sse_only_in_its_files() {
    let text = r#"{"mcpServers": {"a": {"url": "http://h/sse", "timeout": 500}}}"#;
    let dir = TempDir::new("gemini-keys");
    let gemini = write(&dir, ".gemini/settings.json", text);
    let r = ConfigLoader::new().load(&gemini).unwrap();
    let a = server(&r, "a");
    assert_eq!(
        (a.transport_type(), a.timeout()),
        ("sse", Duration::from_secs(1))
    );
    // The same entry in another host's file keeps that file's rules.
    let other = write(&dir, ".mcp.json", text);
    let r = ConfigLoader::new().load(&other).unwrap();
    let a = server(&r, "a");
    assert_eq!(
        (a.transport_type(), a.timeout()),
        ("streamable-http", Duration::from_secs(500))
    );
    // A settings file without servers loads none; a misspelt key is still an error.
    let empty = write(&dir, "x/.gemini/settings.json", r#"{"theme": "Dracula"}"#);
    assert!(ConfigLoader::new().load(&empty).unwrap().servers.is_empty());
    let typo = write(&dir, "y/.gemini/settings.json", r#"{"mcpServer": {}}"#);
    let e = ConfigLoader::new().load(&typo).unwrap_err();
    assert_eq!(e.suggestion.as_deref(), Some("mcpServers"), "{e}");
}

#[test]
fn gemini_broken_files_name_the_key_as_written() {
    let dir = TempDir::new("gemini-broken");
    for (entry, path, kind) in [
        (
            r#"{"httpUrl": 8080}"#,
            "httpUrl",
            ConfigErrorKind::WrongType,
        ),
        (
            r#"{"httpUrl": "ftp://h/mcp"}"#,
            "httpUrl",
            ConfigErrorKind::InvalidUrl,
        ),
        (
            r#"{"httpUrl": "http://h/mcp", "url": "http://h/sse"}"#,
            "httpUrl",
            ConfigErrorKind::InvalidValue,
        ),
        (
            r#"{"command": "x", "env": {"K": "$UNSET_VAR"}}"#,
            "env.K",
            ConfigErrorKind::UndefinedVariable,
        ),
        (
            r#"{"command": "x", "cwd": 7}"#,
            "cwd",
            ConfigErrorKind::WrongType,
        ),
    ] {
        let file = write(
            &dir,
            ".gemini/settings.json",
            &format!(r#"{{"mcpServers": {{"x": {entry}}}}}"#),
        );
        let r = loader(&[]).load(&file).unwrap();
        let e = only_error(&r, "x");
        assert_eq!(
            (e.kind, e.path.as_str()),
            (kind, format!("mcpServers.x.{path}").as_str()),
            "{entry}: {e}"
        );
    }
    // `httpUrl`, not `url`, in the message too.
    let file = write(
        &dir,
        ".gemini/settings.json",
        r#"{"mcpServers": {"x": {"httpUrl": "http://h/mcp", "command": "y"}}}"#,
    );
    let r = loader(&[]).load(&file).unwrap();
    assert_eq!(only_error(&r, "x").kind, ConfigErrorKind::CommandAndUrl);
    let file = write(
        &dir,
        ".gemini/settings.json",
        r#"{"mcp": {"excluded": "x"}, "mcpServers": {"x": {"command": "y"}}}"#,
    );
    let e = loader(&[]).load(&file).unwrap_err();
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ConfigErrorKind::WrongType, "mcp.excluded")
    );
}

// --- Zed -----------------------------------------------------------------------------------

#[test]
fn zed_documented_example() {
    let r = ConfigLoader::new()
        .load(fixture("zed/zed/settings.json"))
        .unwrap();
    assert_eq!(names(&r), ["run-command", "remote-mcp-server-with-oauth"]);
    assert_eq!(
        stdio(server(&r, "run-command")),
        ("some-command", vec!["arg-1", "arg-2"], vec![], None)
    );
    assert_eq!(
        http(server(&r, "remote-mcp-server-with-oauth")),
        ("https://mcp.example.com/mcp", vec![])
    );
    // The documented `"url": "custom"` is not a url, for Zed either.
    let e = only_error(&r, "remote-mcp-server");
    assert_eq!(
        (e.kind, e.path.as_str()),
        (
            ConfigErrorKind::InvalidUrl,
            "context_servers.remote-mcp-server.url"
        )
    );
}

#[test]
fn zed_earlier_forms_and_an_extension_server() {
    let r = ConfigLoader::new()
        .load(fixture("zed/older/zed/settings.json"))
        .unwrap();
    assert_eq!(names(&r), ["some-context-server", "your-mcp-server"]);
    for name in names(&r) {
        assert_eq!(
            stdio(server(&r, name)),
            ("some-command", vec!["arg-1", "arg-2"], vec![], None)
        );
    }
    assert_eq!(r.ignored.len(), 1, "{:?}", r.ignored);
    assert_eq!(
        r.ignored[0].key,
        "context_servers.some-context-server.settings"
    );
    assert_eq!(r.ignored[0].server.as_deref(), Some("some-context-server"));
    // An extension's server is run by the extension inside Zed: not here, and said so.
    let e = only_error(&r, "postgres-context-server");
    assert_eq!(
        (e.kind, e.path.as_str()),
        (
            ConfigErrorKind::NotApplicable,
            "context_servers.postgres-context-server.source"
        )
    );
}

#[test]
fn zed_broken_files_name_the_key_as_written() {
    let dir = TempDir::new("zed-broken");
    for (entry, path, kind) in [
        (
            r#"{"command": {"args": []}}"#,
            "command.path",
            ConfigErrorKind::MissingField,
        ),
        (
            r#"{"command": {"path": "x", "args": "a"}}"#,
            "command.args",
            ConfigErrorKind::WrongType,
        ),
        (
            r#"{"command": {"path": "x", "arg": []}}"#,
            "command.arg",
            ConfigErrorKind::UnknownKey,
        ),
        (
            r#"{"command": {"path": 3}}"#,
            "command.path",
            ConfigErrorKind::WrongType,
        ),
        (
            r#"{"source": "npm", "command": "x"}"#,
            "source",
            ConfigErrorKind::InvalidValue,
        ),
    ] {
        let file = write(
            &dir,
            "zed/settings.json",
            &format!(r#"{{"vim_mode": true, "context_servers": {{"x": {entry}}}}}"#),
        );
        let r = ConfigLoader::new().load(&file).unwrap();
        let e = only_error(&r, "x");
        assert_eq!(
            (e.kind, e.path.as_str()),
            (kind, format!("context_servers.x.{path}").as_str()),
            "{entry}: {e}"
        );
    }
    // Told by its keys, wherever it is.
    let r = ConfigLoader::new()
        .load_str(r#"{"context_servers": {"x": {"command": {"path": "y"}}}}"#)
        .unwrap();
    assert_eq!(stdio(server(&r, "x")).0, "y");
}

// --- Windsurf ------------------------------------------------------------------------------

#[test]
fn windsurf_documented_example() {
    let r = loader(&[("FIGMA_API_KEY", "figma-api-s3cret")])
        .load(fixture("windsurf/mcp_config.json"))
        .unwrap();
    assert!(r.is_ok(), "{:?}", r.errors);
    assert_eq!(names(&r), ["github", "figma"]);
    assert_eq!(
        stdio(server(&r, "github")),
        (
            "npx",
            vec!["-y", "@modelcontextprotocol/server-github"],
            vec![(
                "GITHUB_PERSONAL_ACCESS_TOKEN",
                "<YOUR_PERSONAL_ACCESS_TOKEN>"
            )],
            None
        )
    );
    let figma = server(&r, "figma");
    assert_eq!(
        http(figma),
        (
            "https://your-server-url/mcp",
            vec![("API_KEY", "figma-api-s3cret")]
        )
    );
    assert!(!format!("{figma:?}").contains("figma-api-s3cret"));
}

#[test]
fn windsurf_broken_file_names_server_url() {
    let dir = TempDir::new("windsurf-broken");
    for (entry, kind) in [
        (
            r#"{"serverUrl": ["https://h/mcp"]}"#,
            ConfigErrorKind::WrongType,
        ),
        (r#"{"serverUrl": "not a url"}"#, ConfigErrorKind::InvalidUrl),
        (
            r#"{"serverUrl": "https://h/mcp", "url": "https://h/mcp"}"#,
            ConfigErrorKind::InvalidValue,
        ),
    ] {
        let file = write(
            &dir,
            "mcp_config.json",
            &format!(r#"{{"mcpServers": {{"figma": {entry}}}}}"#),
        );
        let r = ConfigLoader::new().load(&file).unwrap();
        let e = only_error(&r, "figma");
        assert_eq!(
            (e.kind, e.path.as_str()),
            (kind, "mcpServers.figma.serverUrl"),
            "{entry}: {e}"
        );
    }
}

// --- Claude Code's ~/.claude.json ----------------------------------------------------------

#[test]
fn claude_json_project_servers_come_first_and_hide_the_users() {
    let path = fixture("claude_code/.claude.json");
    let r = loader(&[("AIRTABLE_API_KEY", "key-airtable-1")])
        .with_project_dir("/home/alex/app")
        .load(&path)
        .unwrap();
    assert!(r.is_ok(), "{:?}", r.errors);
    assert_eq!(names(&r), ["airtable", "stripe", "sentry"]);
    assert_eq!(
        stdio(server(&r, "airtable")),
        (
            "npx",
            vec!["-y", "airtable-mcp-server@1.4.0"],
            vec![("AIRTABLE_API_KEY", "key-airtable-1")],
            None
        )
    );
    assert_eq!(
        http(server(&r, "stripe")),
        ("https://mcp.stripe.com", vec![])
    );
    assert_eq!(
        http(server(&r, "sentry")),
        ("https://mcp.sentry.dev/mcp", vec![])
    );
    assert_eq!(r.ignored.len(), 1, "{:?}", r.ignored);
    let shadowed = &r.ignored[0];
    assert_eq!(shadowed.key, "mcpServers.airtable");
    assert_eq!(shadowed.file.as_deref(), Some(path.as_path()));
    assert!(
        shadowed
            .reason
            .contains("projects./home/alex/app.mcpServers.airtable"),
        "{shadowed}"
    );

    // Another directory: the user's servers only. A trailing `/` is the same directory.
    let r = loader(&[("AIRTABLE_API_KEY", "k")])
        .with_project_dir("/home/alex")
        .load(&path)
        .unwrap();
    assert_eq!(names(&r), ["sentry", "airtable"]);
    assert_eq!(
        stdio(server(&r, "airtable")).1,
        ["-y", "airtable-mcp-server"]
    );
    let r = loader(&[("AIRTABLE_API_KEY", "k")])
        .with_project_dir("/home/alex/other/")
        .load(&path)
        .unwrap();
    assert_eq!(names(&r), ["other-only", "sentry", "airtable"]);
}

#[test]
fn claude_json_broken_project_entry_names_its_path() {
    let dir = TempDir::new("claude-json");
    let file = write(
        &dir,
        ".claude.json",
        r#"{"projects": {"/home/u/app": {"mcpServers": {"x": {"type": "http", "url": 5}}}}}"#,
    );
    let r = ConfigLoader::new()
        .with_project_dir("/home/u/app")
        .load(&file)
        .unwrap();
    let e = only_error(&r, "x");
    assert_eq!(
        (e.kind, e.path.as_str()),
        (
            ConfigErrorKind::WrongType,
            "projects./home/u/app.mcpServers.x.url"
        )
    );
    // A `~/.claude.json` without servers for this directory loads none.
    let file = write(
        &dir,
        ".claude.json",
        r#"{"numStartups": 3, "projects": {}}"#,
    );
    let r = ConfigLoader::new()
        .with_project_dir("/x")
        .load(&file)
        .unwrap();
    assert!(r.servers.is_empty() && r.is_ok());
    let file = write(&dir, ".claude.json", r#"{"projects": {"/x": []}}"#);
    let e = ConfigLoader::new()
        .with_project_dir("/x")
        .load(&file)
        .unwrap_err();
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ConfigErrorKind::WrongType, "projects./x")
    );
}

// --- The `mcp` options block ---------------------------------------------------------------

#[test]
fn the_mcp_options_block_beside_the_servers_or_holding_them() {
    let r = ConfigLoader::new()
        .load_str(
            r#"{"mcp": {"gracefulDegradation": false, "extraRetries": 3, "baseDelayMs": 100,
                        "maxDelayMs": 800},
                "mcpServers": {"a": {"command": "x"}}}"#,
        )
        .unwrap();
    assert_eq!(names(&r), ["a"]);
    let d = r.degradation.expect("the options block");
    assert!(!d.graceful);
    assert_eq!(d.extra_retries, 3);
    assert_eq!(d.base_delay, Duration::from_millis(100));
    assert_eq!(d.max_delay, Duration::from_millis(800));

    let r = ConfigLoader::new()
        .load_str("mcp:\n  extraRetries: 0\n  servers:\n    a:\n      command: x\n")
        .unwrap();
    assert_eq!(names(&r), ["a"]);
    assert_eq!(r.degradation.map(|d| d.extra_retries), Some(0));
    // Without the block, nothing is said.
    let r = ConfigLoader::new()
        .load_str(r#"{"mcp": {"servers": {"a": {"command": "x"}}}}"#)
        .unwrap();
    assert_eq!(r.degradation, None);
}

#[test]
fn the_mcp_options_block_is_checked_key_by_key() {
    let load = |text: &str| ConfigLoader::new().load_str(text).unwrap_err();
    let e = load(r#"{"mcp": {"extraRetires": 1}, "mcpServers": {}}"#);
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ConfigErrorKind::UnknownKey, "mcp.extraRetires")
    );
    assert_eq!(e.suggestion.as_deref(), Some("extraRetries"));
    let e = load(r#"{"mcp": {"baseDelayMs": "500"}, "mcpServers": {}}"#);
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ConfigErrorKind::WrongType, "mcp.baseDelayMs")
    );
    let e = load(r#"{"mcp": {"maxDelayMs": 100000000000}, "mcpServers": {}}"#);
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ConfigErrorKind::InvalidValue, "mcp.maxDelayMs")
    );
    let e = load(r#"{"mcp": {"extraRetries": 11}, "mcpServers": {}}"#);
    assert_eq!(
        (e.kind, e.path.as_str()),
        (ConfigErrorKind::InvalidValue, "mcp.extraRetries")
    );
    // In Gemini CLI's file, `mcp` is Gemini's block, not ours.
    let dir = TempDir::new("gemini-mcp");
    let file = write(
        &dir,
        ".gemini/settings.json",
        r#"{"mcp": {"serverCommand": "run-me"}, "mcpServers": {"a": {"command": "x"}}}"#,
    );
    let r = ConfigLoader::new().load(&file).unwrap();
    assert_eq!((names(&r), r.degradation.is_none()), (vec!["a"], true));
    assert_eq!(r.ignored[0].key, "mcp.serverCommand");
}

/// Gemini CLI's own `mcp` block says whose file it is wherever the file lies: its server lists
/// apply, and its spelling (`url` is legacy SSE) is read as Gemini's.
#[test]
fn gemini_s_mcp_block_makes_any_file_read_as_gemini_s() {
    let text = r#"{"mcp": {"excluded": ["b"]},
        "mcpServers": {"a": {"url": "http://127.0.0.1:9/sse", "excludeTools": ["x"]},
                       "b": {"command": "b-cmd"}}}"#;
    let r = loader(&[]).load_str(text).unwrap();
    assert_eq!(names(&r), ["a"]);
    assert_eq!(server(&r, "a").transport_type(), "sse");
    assert_eq!(r.skipped_disabled, ["b"]);
    assert!(r
        .ignored
        .iter()
        .any(|k| k.key == "mcpServers.b" && k.reason.contains("`mcp.excluded`")));
    // The options block of a Hub is not Gemini's.
    let r = loader(&[])
        .load_str(r#"{"mcp": {"extraRetries": 2}, "mcpServers": {"a": {"url": "http://127.0.0.1:9/mcp"}}}"#)
        .unwrap();
    assert_eq!(server(&r, "a").transport_type(), "streamable-http");
    assert_eq!(r.degradation.map(|d| d.extra_retries), Some(2));
}
