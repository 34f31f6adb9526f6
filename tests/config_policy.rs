//! Host files' policy keys (Gemini CLI, Cline, Roo Code, Codex, Windsurf, VS Code, Claude Code)
//! load into each server's policy, a client built from the loaded config enforces it, a
//! sandbox asked for is kept for the spawn (a remote server's fails the load), a
//! `headersHelper` runs only when allowed, and every key not acted on is listed in the report
//! with why.

use std::collections::BTreeMap;
use std::path::PathBuf;

use mcp_blocking::config::{Approval, ConfigErrorKind, LoadReport, ServerPolicy};
use mcp_blocking::{ConfigLoader, ServerConfig};
use serde_json::json;

fn load(text: &str) -> LoadReport {
    ConfigLoader::new()
        .with_env(BTreeMap::new())
        .load_str(text)
        .unwrap()
}

fn ignored_keys(r: &LoadReport) -> Vec<&str> {
    r.ignored.iter().map(|k| k.key.as_str()).collect()
}

/// A file of its own in a fresh directory, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("mcpb-config-policy-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        TempFile(path)
    }

    fn dir(&self) -> PathBuf {
        self.0.parent().unwrap().to_path_buf()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.dir());
    }
}

#[test]
fn gemini_settings_filter_and_trust() {
    let r = load(
        r#"{"mcpServers": {
            "gem": {"command": "node", "args": ["s.js"], "excludeTools": ["crash", "delete_*"],
                    "trust": true, "authProviderType": "google_credentials"},
            "inc": {"command": "node", "includeTools": ["echo"], "trust": false}
        }}"#,
    );
    assert!(r.is_ok(), "{:?}", r.errors);
    let gem = r.server("gem").unwrap().policy();
    assert!(!gem.allows_tool("crash") && !gem.allows_tool("delete_repo"));
    assert!(gem.allows_tool("echo"));
    assert_eq!(gem.approval(), &Approval::All);
    let refusal = gem.check_tool("crash").unwrap_err();
    assert_eq!(refusal.source.key, "mcpServers.gem.excludeTools");
    let inc = r.server("inc").unwrap().policy();
    assert!(inc.allows_tool("echo") && !inc.allows_tool("add"));
    assert_eq!(inc.approval(), &Approval::Unset);
    assert_eq!(ignored_keys(&r), ["mcpServers.gem.authProviderType"]);
    assert_eq!(r.ignored[0].server.as_deref(), Some("gem"));
}

#[test]
fn cline_and_roo_approval_lists_and_their_other_keys() {
    let r = load(
        r#"{"mcpServers": {
            "cline": {"command": "npx", "autoApprove": ["read_file"], "disabled": false, "timeout": 60},
            "roo": {"command": "npx", "alwaysAllow": ["list_*"], "disabledTools": ["rm"],
                    "watchPaths": ["src/**"]}
        }}"#,
    );
    assert!(r.is_ok(), "{:?}", r.errors);
    let cline = r.server("cline").unwrap().policy();
    assert!(!cline.needs_approval("read_file") && cline.needs_approval("write_file"));
    assert_eq!(cline.approval_source().key, "mcpServers.cline.autoApprove");
    let roo = r.server("roo").unwrap().policy();
    assert!(!roo.needs_approval("list_dir") && roo.needs_approval("rm"));
    assert!(!roo.allows_tool("rm"));
    assert_eq!(ignored_keys(&r), ["mcpServers.roo.watchPaths"]);
}

#[test]
fn codex_tool_lists_and_enabled() {
    // Codex's keys, as its `[mcp_servers.NAME]` tables read once parsed.
    let r = load(
        r#"{"mcpServers": {
            "docs": {"command": "docs-mcp", "enabled_tools": ["search", "fetch"],
                     "disabled_tools": ["fetch"]},
            "off": {"command": "x", "enabled": false},
            "on": {"command": "x", "enabled": true}
        }}"#,
    );
    assert!(r.is_ok(), "{:?}", r.errors);
    let docs = r.server("docs").unwrap().policy();
    assert!(docs.allows_tool("search"));
    // An exclusion wins over an inclusion.
    assert!(!docs.allows_tool("fetch") && !docs.allows_tool("other"));
    assert_eq!(r.skipped_disabled, ["off"]);
    assert!(r.server("on").is_some());
}

#[test]
fn host_keys_with_no_meaning_here_are_reported_not_dropped() {
    let r = load(
        r#"{"mcpServers": {"s": {"command": "x", "gallery": "https://g", "version": "1.0.0", "dev": {"watch": "."}}}}"#,
    );
    assert!(r.is_ok(), "{:?}", r.errors);
    assert_eq!(
        ignored_keys(&r),
        [
            "mcpServers.s.dev",
            "mcpServers.s.gallery",
            "mcpServers.s.version"
        ]
    );
    assert!(r.ignored.iter().all(|k| !k.reason.is_empty()));
}

#[test]
fn another_hosts_oauth_settings_are_reported_not_dropped() {
    let r = load(
        r#"{"mcpServers": {"g": {"url": "https://h/mcp", "oauth": {
            "enabled": true, "clientId": "cid", "authorizationUrl": "https://a/auth",
            "tokenUrl": "https://a/token", "audiences": ["x"]}}}}"#,
    );
    assert!(r.is_ok(), "{:?}", r.errors);
    assert_eq!(
        ignored_keys(&r),
        [
            "mcpServers.g.oauth.authorizationUrl",
            "mcpServers.g.oauth.tokenUrl",
            "mcpServers.g.oauth.audiences"
        ]
    );
}

#[test]
fn policy_keys_of_the_wrong_type_fail_the_server_naming_the_key() {
    let r = load(
        r#"{"mcpServers": {
            "a": {"command": "x", "excludeTools": "crash"},
            "b": {"command": "x", "alwaysAllow": ["ok", 3]},
            "c": {"command": "x", "trust": "always"},
            "d": {"command": "x", "excludeTools": ["a"], "disabledTools": ["b"]},
            "e": {"command": "x", "enabled": 0},
            "fine": {"command": "x"}
        }}"#,
    );
    let got: Vec<(String, ConfigErrorKind)> =
        r.errors.iter().map(|e| (e.path.clone(), e.kind)).collect();
    assert_eq!(
        got,
        [
            (
                "mcpServers.a.excludeTools".into(),
                ConfigErrorKind::WrongType
            ),
            (
                "mcpServers.b.alwaysAllow[1]".into(),
                ConfigErrorKind::WrongType
            ),
            ("mcpServers.c.trust".into(), ConfigErrorKind::WrongType),
            (
                "mcpServers.d.disabledTools".into(),
                ConfigErrorKind::InvalidValue
            ),
            ("mcpServers.e.enabled".into(), ConfigErrorKind::WrongType),
        ]
    );
    assert_eq!(
        r.errors[0].to_string(),
        "server `a`: mcpServers.a.excludeTools: expected a list of tool names, found a string"
    );
    assert_eq!(r.servers.len(), 1);
}

#[test]
fn a_sandbox_asked_for_is_the_one_the_server_is_spawned_in() {
    let text = r#"{"servers": {
        "boxed": {"type": "stdio", "command": "npx", "sandboxEnabled": true,
                  "sandbox": {"filesystem": {"allowWrite": ["/srv/w"], "allowRead": ["/srv/r"]},
                              "network": {"allowedDomains": ["api.github.com"],
                                          "deniedDomains": ["evil.github.com"]},
                              "limits": {"openFiles": 256}}},
        "plain": {"type": "stdio", "command": "npx", "sandbox": {"network": {"allowedDomains": []}}}
    }}"#;
    let r = load(text);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let sb = r.server("boxed").unwrap().sandbox().expect("sandboxed");
    assert_eq!(sb.write_paths(), [std::path::PathBuf::from("/srv/w")]);
    assert_eq!(sb.read_paths(), [std::path::PathBuf::from("/srv/r")]);
    assert_eq!(sb.limits().open_files, Some(256));
    assert_eq!(
        sb.summary(),
        "reads: defaults, /srv/r; writes: /srv/w; network: api.github.com (not evil.github.com); \
         open files ≤ 256"
    );
    assert_eq!(sb.source().key, "servers.boxed.sandboxEnabled");
    // A `sandbox` block without `sandboxEnabled: true` is inert, as in VS Code, and reported.
    assert!(r.server("plain").unwrap().sandbox().is_none());
    assert_eq!(ignored_keys(&r), ["servers.plain.sandbox"]);

    // What Landlock cannot express is an error at its key, before anything runs.
    let r = load(
        r#"{"servers": {"s": {"command": "x", "sandboxEnabled": true, "sandbox": {"filesystem": {"allowWrite": ["/srv"], "denyRead": ["/srv/keys"]}}}}}"#,
    );
    assert_eq!(r.errors[0].kind, ConfigErrorKind::Unenforceable);
    assert_eq!(r.errors[0].path, "servers.s.sandbox.filesystem.denyRead");

    // A typo inside the block is an error whatever else is set.
    let r = load(
        r#"{"servers": {"s": {"command": "x", "sandboxEnabled": true, "sandbox": {"filesystem": {"allowWrites": []}}}}}"#,
    );
    assert_eq!(r.errors[0].kind, ConfigErrorKind::UnknownKey);
    assert_eq!(r.errors[0].path, "servers.s.sandbox.filesystem.allowWrites");
    assert_eq!(r.errors[0].suggestion.as_deref(), Some("allowWrite"));
}

#[test]
fn a_remote_server_asking_for_a_sandbox_fails_unless_accepted() {
    let text = r#"{"servers": {"boxed": {"type": "http", "url": "https://x.dev/mcp", "sandboxEnabled": true}}}"#;
    let r = load(text);
    assert_eq!(r.errors.len(), 1);
    let e = &r.errors[0];
    assert_eq!(e.kind, ConfigErrorKind::Unenforceable);
    assert_eq!(e.path, "servers.boxed.sandboxEnabled");
    assert_eq!(e.server.as_deref(), Some("boxed"));
    assert!(e.message.contains("not reached unconfined"), "{e}");
    // Strict: the load itself fails.
    let e = ConfigLoader::new()
        .with_env(BTreeMap::new())
        .strict(true)
        .load_str(text)
        .unwrap_err();
    assert_eq!(e.kind, ConfigErrorKind::Unenforceable);
    // Accepted: loaded without it, and said so.
    let r = ConfigLoader::new()
        .with_env(BTreeMap::new())
        .accept_unenforced(true)
        .load_str(text)
        .unwrap();
    assert!(r.is_ok(), "{:?}", r.errors);
    let s = r.server("boxed").unwrap();
    assert!(s.policy().sandbox().is_none());
    assert!(s.validate().is_ok());
    assert_eq!(ignored_keys(&r), ["servers.boxed.sandboxEnabled"]);
    assert!(r.ignored[0].reason.contains("accepted"), "{}", r.ignored[0]);
}

#[test]
fn our_own_nested_entries_carry_a_policy_too() {
    let r = load(
        r#"{"mcp": [{"name": "gh", "transport": {"type": "stdio", "command": "gh-mcp"},
                     "excludeTools": ["delete_*"], "alwaysAllow": ["get_*"]}]}"#,
    );
    assert!(r.is_ok(), "{:?}", r.errors);
    let p = r.server("gh").unwrap().policy();
    assert!(!p.allows_tool("delete_repo"));
    assert_eq!(
        p.check_tool("delete_repo").unwrap_err().source.key,
        "mcp[0].excludeTools"
    );
    assert!(p.needs_approval("create_issue") && !p.needs_approval("get_issue"));
    // Another host's key with no meaning is not ours to accept.
    let r = load(
        r#"{"mcp": [{"name": "gh", "transport": {"type": "stdio", "command": "x"}, "gallery": "g"}]}"#,
    );
    assert_eq!(r.errors[0].kind, ConfigErrorKind::UnknownKey);
    // A policy key belongs at the top, not in the transport.
    let r = load(
        r#"{"mcp": [{"name": "gh", "transport": {"type": "stdio", "command": "x", "excludeTools": []}}]}"#,
    );
    assert_eq!(r.errors[0].path, "mcp[0].transport.excludeTools");
}

#[test]
fn a_policy_saves_and_reloads_equal() {
    let r = load(
        r#"{"mcpServers": {
            "a": {"command": "x", "includeTools": ["get_*", "echo"], "excludeTools": ["get_secret"], "autoApprove": ["echo"]},
            "b": {"url": "https://h/mcp", "trust": true, "disabled_tools": ["crash"]},
            "c": {"command": "x"},
            "d": {"command": "x", "sandboxEnabled": true, "sandbox": {
                "filesystem": {"allowRead": ["/r"], "allowWrite": ["/w"], "denyRead": ["/secret"],
                               "denyWrite": ["/etc"]},
                "network": {"allowedDomains": ["*.example.com"], "deniedDomains": ["bad.example.com"]},
                "limits": {"addressSpace": 1073741824, "openFiles": 64, "processes": 8, "cpuSeconds": 30},
                "bestEffort": true}},
            "e": {"command": "x", "sandboxEnabled": true}
        }}"#,
    );
    assert!(r.is_ok(), "{:?}", r.errors);
    for s in &r.servers {
        let again = ServerConfig::from_value(&s.to_json()).unwrap();
        assert_eq!(&again, s, "{}", s.to_json());
        // The same sandbox, but for where it was written (the reload has no file around it).
        let rules = |c: &ServerConfig| c.sandbox().map(|b| b.with_source(Default::default()));
        assert_eq!(rules(&again), rules(s), "{}", s.to_json());
    }
    // Every key of the sandbox block is written back, and nothing the file did not say.
    let d = r.server("d").unwrap().to_json();
    assert_eq!(d["sandboxEnabled"], true);
    assert_eq!(
        d["sandbox"],
        json!({
            "filesystem": {"allowRead": ["/r"], "allowWrite": ["/w"], "denyRead": ["/secret"],
                           "denyWrite": ["/etc"]},
            "network": {"allowedDomains": ["*.example.com"], "deniedDomains": ["bad.example.com"]},
            "limits": {"addressSpace": 1073741824u64, "openFiles": 64, "processes": 8, "cpuSeconds": 30},
            "bestEffort": true,
        })
    );
    let e = r.server("e").unwrap().to_json();
    assert_eq!(
        (&e["sandboxEnabled"], &e["sandbox"]),
        (&json!(true), &json!({}))
    );
    let b = r.server("b").unwrap().to_json();
    assert_eq!(
        (&b["trust"], &b["excludeTools"]),
        (&json!(true), &json!(["crash"]))
    );
    assert!(r
        .server("c")
        .unwrap()
        .to_json()
        .get("excludeTools")
        .is_none());
}

#[test]
fn codex_approval_modes_save_and_reload_equal() {
    let r = load(
        r#"{"mcpServers": {
            "asked": {"command": "x", "default_tools_approval_mode": "prompt",
                      "tools": {"search": {"approval_mode": "approve"}}},
            "all_but": {"command": "x", "tools": {"push": {"approval_mode": "prompt"}}}
        }}"#,
    );
    assert!(r.is_ok(), "{:?}", r.errors);
    let all_but = r.server("all_but").unwrap();
    assert_eq!(
        all_but.policy().approval(),
        &Approval::AllExcept(vec!["push".into()])
    );
    for s in &r.servers {
        let again = ServerConfig::from_value(&s.to_json()).unwrap();
        assert_eq!(&again, s, "{}", s.to_json());
    }
    let v = all_but.to_json();
    assert_eq!(
        (&v["default_tools_approval_mode"], &v["tools"]),
        (
            &json!("approve"),
            &json!({"push": {"approval_mode": "prompt"}})
        )
    );
    // None asked about is every tool approved.
    let none = ServerConfig::stdio("n", "x")
        .with_policy(ServerPolicy::new().with_approval(Approval::AllExcept(Vec::new())));
    let again = ServerConfig::from_value(&none.to_json()).unwrap();
    assert_eq!(again.policy().approval(), &Approval::All);
}

#[test]
fn the_file_is_named_in_every_rule_and_ignored_key() {
    let f = TempFile::new(
        "settings.json",
        r#"{"mcpServers": {"gem": {"command": "x", "excludeTools": ["crash"], "version": "2"}}}"#,
    );
    let r = ConfigLoader::new().load(&f.0).unwrap();
    let refusal = r.servers[0].policy().check_tool("crash").unwrap_err();
    assert_eq!(refusal.source.file.as_deref(), Some(f.0.as_path()));
    assert_eq!(
        refusal.to_string(),
        format!(
            "tool `crash` is excluded by `excludeTools` (`mcpServers.gem.excludeTools` in {})",
            f.0.display()
        )
    );
    assert_eq!(r.ignored[0].file.as_deref(), Some(f.0.as_path()));
}

// The in-process server is the `testing` feature's.
#[cfg(feature = "testing")]
#[test]
fn a_file_that_excludes_a_tool_gives_a_client_that_cannot_list_or_call_it() {
    use mcp_blocking::model::{CallToolResult, Content, Tool};
    use mcp_blocking::testing::TestServer;
    use mcp_blocking::Error;
    let r = load(r#"{"mcpServers": {"gem": {"command": "node", "excludeTools": ["crash"]}}}"#);
    let config = r.server("gem").unwrap().clone();
    let ok = |_: &mcp_blocking::testing::ToolCall<'_>| {
        Ok(CallToolResult::success(vec![Content::text("ran")]))
    };
    let server = TestServer::new("gem")
        .tool(Tool::new("echo", json!({"type": "object"})), ok)
        .tool(Tool::new("crash", json!({"type": "object"})), ok);
    let client = server.client_builder_for(config).connect().unwrap();
    let names: Vec<String> = client
        .list_tools()
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["echo"]);
    match client.call_tool("crash", json!({})) {
        Err(Error::ToolNotAllowed { refusal, .. }) => {
            assert_eq!(refusal.source.key, "mcpServers.gem.excludeTools")
        }
        other => panic!("expected ToolNotAllowed, got {other:?}"),
    }
    assert!(!server.received_methods().iter().any(|m| m == "tools/call"));
    assert!(client.call_tool("echo", json!({})).is_ok());
}

#[test]
fn a_headers_helper_on_a_stdio_server_does_not_apply() {
    let r = load(r#"{"mcpServers": {"s": {"command": "x", "headersHelper": "echo {}"}}}"#);
    assert_eq!(r.errors[0].kind, ConfigErrorKind::NotApplicable);
    assert_eq!(r.errors[0].path, "mcpServers.s.headersHelper");
}

#[test]
fn a_policy_in_code_is_a_policy_like_any_other() {
    // The same rules from a file and from code compare equal.
    let r = load(r#"{"mcpServers": {"s": {"command": "x", "excludeTools": ["a"]}}}"#);
    let code = ServerConfig::stdio("s", "x").with_policy(ServerPolicy::new().exclude_tools(["a"]));
    assert_eq!(r.servers[0], code);
}

#[cfg(unix)]
mod headers_helper {
    use super::*;
    use mcp_blocking::config::TransportConfig;

    #[test]
    fn not_allowed_it_is_not_run_and_is_reported() {
        let dir = TempFile::new("marker-dir", "");
        let marker = dir.dir().join("ran");
        let text = json!({"mcpServers": {"api": {
            "type": "http", "url": "https://h/mcp",
            "headersHelper": format!("touch '{}'; echo '{{}}'", marker.display())
        }}})
        .to_string();
        let r = load(&text);
        assert!(r.is_ok(), "{:?}", r.errors);
        assert!(!marker.exists(), "the helper ran");
        assert_eq!(ignored_keys(&r), ["mcpServers.api.headersHelper"]);
        assert!(
            r.ignored[0].reason.contains("allow_header_commands")
                && r.ignored[0].reason.contains("--allow-header-commands"),
            "{}",
            r.ignored[0]
        );
        // Allowed, the same file runs it.
        let r = ConfigLoader::new()
            .allow_header_commands(true)
            .load_str(&text)
            .unwrap();
        assert!(r.is_ok(), "{:?}", r.errors);
        assert!(marker.exists());
        assert!(r.ignored.is_empty());
    }

    #[test]
    fn allowed_its_headers_are_used_over_static_ones_and_kept_secret() {
        let r = ConfigLoader::new()
            .allow_header_commands(true)
            .load_str(
                r#"{"mcpServers": {"api": {"type": "http", "url": "https://h/mcp",
                    "headers": {"authorization": "Bearer static", "X-Team": "t"},
                    "headersHelper": "printf '{\"Authorization\": \"Bearer tok-%s\"}' \"$CLAUDE_CODE_MCP_SERVER_NAME\""}}}"#,
            )
            .unwrap();
        assert!(r.is_ok(), "{:?}", r.errors);
        let s = r.server("api").unwrap();
        let TransportConfig::StreamableHttp(http) = s.transport() else {
            panic!("not http")
        };
        assert_eq!(
            http.headers,
            [
                ("X-Team".to_owned(), "t".to_owned()),
                ("Authorization".to_owned(), "Bearer tok-api".to_owned())
            ]
        );
        assert!(!format!("{s:?}").contains("tok-api"));
        assert!(!format!("{r:?}").contains("tok-api"));
    }

    #[test]
    fn it_runs_in_the_files_directory() {
        let f = TempFile::new(
            ".mcp.json",
            r#"{"mcpServers": {"api": {"type": "http", "url": "https://h/mcp", "headersHelper": "./get-token.sh"}}}"#,
        );
        let script = f.dir().join("get-token.sh");
        std::fs::write(&script, "#!/bin/sh\necho '{\"X-Token\": \"t-1\"}'\n").unwrap();
        let mut perms = std::fs::metadata(&script).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&script, perms).unwrap();
        let r = ConfigLoader::new()
            .allow_header_commands(true)
            .load(&f.0)
            .unwrap();
        assert!(r.is_ok(), "{:?}", r.errors);
        let TransportConfig::StreamableHttp(http) = r.servers[0].transport() else {
            panic!("not http")
        };
        assert_eq!(http.headers, [("X-Token".to_owned(), "t-1".to_owned())]);
    }

    #[test]
    fn its_failures_fail_the_server_naming_the_key() {
        for (helper, want) in [
            ("echo not-json", "not JSON"),
            ("exit 4", "failed"),
            (r#"echo '{"Bad Name": "v"}'"#, "the headers helper printed"),
            ("yes x | head -c 20000", "more than 16384 bytes"),
        ] {
            let text =
                json!({"mcpServers": {"api": {"url": "https://h/mcp", "headersHelper": helper}}})
                    .to_string();
            let r = ConfigLoader::new()
                .allow_header_commands(true)
                .load_str(&text)
                .unwrap();
            assert_eq!(r.errors.len(), 1, "{helper}");
            let e = &r.errors[0];
            assert_eq!(e.path, "mcpServers.api.headersHelper", "{helper}");
            assert!(e.message.contains(want), "{helper}: {e}");
        }
    }
}
