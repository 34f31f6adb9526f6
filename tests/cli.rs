//! The `mcpb` command line against the fixture server: every command, every exit code, `--json`
//! output, and `servers` on a host config file.

use std::net::TcpListener;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

use common::mcpb::{mcpb, mcpb_with_env};
use common::tempdir::TempDir;

/// The `--stdio` command line of the fixture server (quoted: the path may hold blanks).
fn fixture(flags: &str) -> String {
    format!("'{}' {flags}", common::fixture::path())
}

/// Runs `mcpb --stdio FIXTURE ARGS...`.
fn on_fixture(args: &[&str]) -> Output {
    let line = fixture("");
    let mut all = vec!["--stdio", line.as_str()];
    all.extend_from_slice(args);
    mcpb(&all)
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

/// The single JSON document on stdout.
#[track_caller]
fn json_doc(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{}\n--- stderr ---\n{}",
            stdout(o),
            stderr(o)
        )
    })
}

/// The first stderr line: it must name the server.
fn headline(o: &Output) -> String {
    stderr(o).lines().next().unwrap_or("").to_owned()
}

/// A fresh directory under the system temp dir, removed on drop.
// ---- exit 0: every command works -------------------------------------------------------------

#[test]
fn info_shows_the_server_and_protocol() {
    let o = on_fixture(&["info"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(
        out.contains("server:       mcp-fixture-server 0.1.0"),
        "{out}"
    );
    assert!(out.contains("protocol:     2025-11-25"), "{out}");
    assert!(
        out.contains("Fixture server for mcp-blocking tests."),
        "{out}"
    );
}

#[test]
fn tools_prints_one_signature_per_tool() {
    let o = on_fixture(&["tools"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(
        out.contains("add(a: number, b: number)\n    Adds two numbers.\n"),
        "{out}"
    );
    assert!(out.contains("crash(code?: integer)"), "{out}");
}

#[test]
fn call_takes_key_values_as_json_when_they_parse() {
    let o = on_fixture(&["call", "add", "a=2", "b=40"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "42\n");
}

#[test]
fn call_takes_key_values_as_strings_otherwise() {
    let o = on_fixture(&["call", "echo", "text=hello world"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "hello world\n");
}

#[test]
fn call_takes_one_json_object() {
    let o = on_fixture(&["call", "echo", r#"{"text": "from json"}"#]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "from json\n");
}

#[test]
fn resources_templates_and_read() {
    let o = on_fixture(&["resources"]);
    assert_exit(&o, 0);
    assert!(
        stdout(&o).contains("fixture://readme  readme (text/plain)"),
        "{}",
        stdout(&o)
    );

    let o = on_fixture(&["templates"]);
    assert_exit(&o, 0);
    assert!(
        stdout(&o).contains("fixture://items/{id}"),
        "{}",
        stdout(&o)
    );

    let o = on_fixture(&["read", "fixture://readme"]);
    assert_exit(&o, 0);
    assert_eq!(
        stdout(&o),
        "# Fixture\nThis is the fixture server's readme.\n"
    );

    let o = on_fixture(&["read", "fixture://items/7"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "item 7\n");
}

#[test]
fn prompts_and_prompt() {
    let o = on_fixture(&["prompts"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("greeting(name)"), "{out}");
    assert!(out.contains("summarize(style?)"), "{out}");

    let o = on_fixture(&["prompt", "greeting", "name=Ada"]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("[user] Hello, Ada!"), "{}", stdout(&o));

    // Prompt arguments are strings: a number-looking value is passed as typed.
    let o = on_fixture(&["prompt", "greeting", "name=42"]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("[user] Hello, 42!"), "{}", stdout(&o));
}

#[test]
fn ping_answers() {
    let o = on_fixture(&["ping"]);
    assert_exit(&o, 0);
    assert!(
        stdout(&o).starts_with("pong from `mcp-fixture-server` in "),
        "{}",
        stdout(&o)
    );
}

#[test]
fn env_reaches_a_stdio_server() {
    let o = on_fixture(&[
        "--env",
        "MCPB_GREETING=bonjour",
        "call",
        "env",
        "name=MCPB_GREETING",
    ]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "bonjour\n");
}

#[test]
fn stdio_command_lines_are_split_like_a_shell() {
    // The quoted path and a flag after it: the fixture gets `--stderr-banner` as one argument.
    let o = mcpb(&["--stdio", &fixture("\"--stderr-banner\""), "ping"]);
    assert_exit(&o, 0);
}

#[test]
fn help_prints_the_contract() {
    let o = mcpb(&["--help"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("--config <FILE>"), "{out}");
    assert!(out.contains("6 connection closed mid-request"), "{out}");
}

// ---- exit 1..6 -------------------------------------------------------------------------------

#[test]
fn a_tool_error_exits_1_and_still_prints_the_result() {
    let o = on_fixture(&["call", "fail"]);
    assert_exit(&o, 1);
    assert_eq!(stdout(&o), "the tool failed on purpose\n");
    assert_eq!(
        headline(&o),
        "mcpb: server `mcp-fixture-server`: tool `fail` returned an error (isError)"
    );
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec![],
        vec!["tools"],
        vec!["--stdio", "x", "dance"],
        vec!["--stdio", "x", "call"],
        vec!["--stdio", "x", "call", "echo", "no-equals-sign"],
        vec!["--stdio", "x", "--timeout", "soon", "ping"],
        vec!["--stdio", "'unterminated", "ping"],
        vec!["--stdio", "x", "--url", "http://h", "ping"],
        vec!["--stdio", "x", "servers"],
    ] {
        let o = mcpb(&args);
        assert_exit(&o, 2);
        assert!(
            headline(&o).starts_with("mcpb: usage: "),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(o.stdout.is_empty(), "{args:?}: {}", stdout(&o));
    }
}

#[test]
fn invalid_tool_arguments_exit_2() {
    // Prompt arguments must be strings; `call` arguments must be an object.
    let o = on_fixture(&["call", "echo", "[1, 2]"]);
    assert_exit(&o, 2);
}

#[test]
fn a_missing_command_exits_3() {
    let o = mcpb(&["--stdio", "/nonexistent/mcp-server --flag", "tools"]);
    assert_exit(&o, 3);
    let h = headline(&o);
    assert!(h.contains("server `mcp-server`"), "{h}");
    assert!(
        h.contains("could not start `/nonexistent/mcp-server --flag`"),
        "{h}"
    );
}

#[test]
fn a_server_that_dies_at_start_exits_3() {
    let o = mcpb(&["--stdio", &fixture("--crash-on-start"), "tools"]);
    assert_exit(&o, 3);
    assert!(
        headline(&o).contains("server `mcp-fixture-server`: could not connect"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_server_that_dies_at_start_shows_its_stderr() {
    let o = mcpb(&["--stdio", &fixture("--crash-on-start"), "tools"]);
    assert_exit(&o, 3);
    assert!(
        stderr(&o).contains("failing at start-up on purpose"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_handshake_timeout_exits_3_and_says_how_it_failed() {
    let o = mcpb(&[
        "--json",
        "--stdio",
        &fixture("--never-answer"),
        "--timeout",
        "1",
        "ping",
    ]);
    assert_exit(&o, 3);
    assert!(
        stderr(&o).contains("use --timeout SECS to wait longer"),
        "{}",
        stderr(&o)
    );
    let doc = json_doc(&o);
    assert_eq!(doc["error"]["kind"], "connect");
    assert_eq!(doc["error"]["reason"], "timed_out");

    let o = mcpb(&["--json", "--stdio", &fixture("--crash-on-start"), "ping"]);
    assert_exit(&o, 3);
    assert_eq!(json_doc(&o)["error"]["reason"], "closed");
}

#[test]
fn a_url_that_refuses_the_handshake_exits_3() {
    // A loopback listener that accepts and hangs up at once.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let acceptor = std::thread::spawn(move || {
        let _ = listener.accept();
    });
    let o = mcpb(&[
        "--url",
        &url,
        "--transport",
        "http",
        "--timeout",
        "5",
        "ping",
    ]);
    acceptor.join().expect("acceptor");
    assert_exit(&o, 3);
    assert!(
        headline(&o).contains("server `127.0.0.1:"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_slow_tool_exits_4_on_time() {
    let start = Instant::now();
    let o = on_fixture(&["call", "slow", "ms=5000", "--timeout", "1"]);
    let took = start.elapsed();
    assert_exit(&o, 4);
    assert_eq!(
        headline(&o),
        "mcpb: server `mcp-fixture-server`: `tools/call` timed out after 1.0 s"
    );
    assert!(took < Duration::from_secs(4), "took {took:?}");
}

#[test]
fn a_json_rpc_error_exits_5_with_code_and_data() {
    let o = on_fixture(&["call", "rpc_error"]);
    assert_exit(&o, 5);
    assert_eq!(
        headline(&o),
        "mcpb: server `mcp-fixture-server`: error -32000: deliberate error"
    );
    assert!(
        stderr(&o).contains(r#"data: {"hint":"fixture"}"#),
        "{}",
        stderr(&o)
    );

    let o = on_fixture(&["read", "fixture://missing"]);
    assert_exit(&o, 5);
    assert!(headline(&o).contains("error -32002"), "{}", stderr(&o));
}

#[test]
fn a_crash_mid_call_exits_6_with_the_stderr_tail() {
    let start = Instant::now();
    let o = on_fixture(&["call", "crash", "code=7", "--timeout", "30"]);
    assert_exit(&o, 6);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "waited for the timeout"
    );
    assert!(
        headline(&o).contains("server `mcp-fixture-server`: connection closed"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("status 7"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("fixture: crashing now on purpose"),
        "{}",
        stderr(&o)
    );
}

// ---- --json ----------------------------------------------------------------------------------

#[test]
fn json_tools_is_one_document() {
    let o = on_fixture(&["--json", "tools"]);
    assert_exit(&o, 0);
    let doc = json_doc(&o);
    let names: Vec<&str> = doc["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"echo") && names.contains(&"add"),
        "{names:?}"
    );
    assert_eq!(doc["tools"][1]["inputSchema"]["required"][0], "a");
}

#[test]
fn json_call_keeps_structured_content() {
    let o = on_fixture(&["call", "add", "a=1", "b=2", "--json"]);
    assert_exit(&o, 0);
    let doc = json_doc(&o);
    assert_eq!(doc["structuredContent"]["sum"], 3);
    assert_eq!(doc["content"][0]["text"], "3");
}

#[test]
fn json_info_read_prompt_and_ping() {
    let doc = json_doc(&on_fixture(&["--json", "info"]));
    assert_eq!(doc["serverInfo"]["name"], "mcp-fixture-server");
    assert_eq!(doc["protocolVersion"], "2025-11-25");
    assert_eq!(doc["capabilities"]["resources"]["subscribe"], true);

    let doc = json_doc(&on_fixture(&["--json", "read", "fixture://config"]));
    assert_eq!(doc["contents"][0]["text"], r#"{"debug":false,"retries":3}"#);

    let doc = json_doc(&on_fixture(&[
        "--json",
        "prompt",
        "summarize",
        "style=terse",
    ]));
    assert_eq!(
        doc["messages"][0]["content"]["text"],
        "Summarize the conversation in a terse style."
    );

    let doc = json_doc(&on_fixture(&["--json", "ping"]));
    assert_eq!(doc["ok"], true);
}

#[test]
fn json_errors_are_one_document_too() {
    let o = on_fixture(&["--json", "call", "fail"]);
    assert_exit(&o, 1);
    assert_eq!(json_doc(&o)["isError"], true);

    let o = on_fixture(&["--json", "call", "rpc_error"]);
    assert_exit(&o, 5);
    let doc = json_doc(&o);
    assert_eq!(doc["error"]["exit"], 5);
    assert_eq!(doc["error"]["code"], -32000);
    assert_eq!(doc["error"]["data"]["hint"], "fixture");
    assert_eq!(doc["error"]["server"], "mcp-fixture-server");

    let o = mcpb(&["--json", "--stdio", "x", "dance"]);
    assert_exit(&o, 2);
    assert_eq!(json_doc(&o)["error"]["kind"], "usage");

    let o = mcpb(&["--json", "--stdio", "/nonexistent/srv", "ping"]);
    assert_exit(&o, 3);
    assert_eq!(json_doc(&o)["error"]["server"], "srv");
}

// ---- --config ----------------------------------------------------------------------------------

fn config_text(with_bad: bool) -> String {
    let fixture = serde_json::to_string(common::fixture::path()).expect("json string");
    let bad = if with_bad {
        r#", "typo": {"comand": "x"}"#
    } else {
        ""
    };
    format!(
        r#"{{"mcpServers": {{
            "fx": {{"command": {fixture}, "args": ["--stderr-banner"], "timeout": 20}},
            "api": {{"type": "http", "url": "https://api.example.com/mcp?key=s3cret",
                     "headers": {{"Authorization": "Bearer t0ken"}}}}{bad}
        }}}}"#
    )
}

#[test]
fn servers_lists_each_server_with_its_transport() {
    let dir = TempDir::new("servers");
    let file = dir.file("mcp.json", &config_text(false));
    let file = file.to_str().expect("utf-8 path");
    let o = mcpb(&["--config", file, "servers"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with("fx   stdio"), "{out}");
    assert!(lines[0].ends_with("--stderr-banner"), "{out}");
    assert!(lines[1].starts_with("api  streamable-http"), "{out}");
    assert!(!out.contains("s3cret") && !out.contains("t0ken"), "{out}");
}

/// `text` as a Windows editor saves it: a byte order mark, then CRLF line endings.
fn windows_text(text: &str) -> String {
    format!("\u{feff}{}", text.replace('\n', "\r\n"))
}

#[test]
fn a_claude_desktop_file_saved_on_windows_at_a_backslashed_path_is_loaded() {
    let dir = TempDir::new("servers-windows");
    // `<dir>\Claude\claude_desktop_config.json`: on Windows the file in the Claude folder, on
    // Unix a file whose name holds the backslashes; either way mcpb must take the path as given.
    let claude = dir.file("Claude", "");
    std::fs::remove_file(&claude).expect("remove");
    std::fs::create_dir(&claude).expect("create the Claude folder");
    let path = format!(
        "{}\\Claude\\claude_desktop_config.json",
        claude.parent().expect("parent").display()
    );
    std::fs::write(&path, windows_text(&config_text(false))).expect("write");
    let o = mcpb(&["--config", &path, "servers"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.starts_with("fx   stdio"), "{out}");
    let o = mcpb(&[
        "--config", &path, "--server", "fx", "call", "add", "a=1", "b=2",
    ]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "3\n");
}

#[test]
fn a_yaml_list_saved_on_windows_is_loaded() {
    let dir = TempDir::new("servers-windows-yaml");
    let fixture = serde_json::to_string(common::fixture::path()).expect("json string");
    let yaml = format!("- name: fx\n  transport:\n    type: stdio\n    command: {fixture}\n");
    let file = dir.file("servers.yaml", &windows_text(&yaml));
    let file = file.to_str().expect("utf-8 path");
    let o = mcpb(&["--config", file, "servers"]);
    assert_exit(&o, 0);
    assert!(stdout(&o).starts_with("fx  stdio"), "{}", stdout(&o));
}

#[test]
fn servers_reports_a_bad_entry_and_exits_2() {
    let dir = TempDir::new("servers-bad");
    let file = dir.file("mcp.json", &config_text(true));
    let file = file.to_str().expect("utf-8 path");
    let o = mcpb(&["--config", file, "servers"]);
    assert_exit(&o, 2);
    let out = stdout(&o);
    assert!(out.contains("fx"), "{out}");
    assert!(out.contains("api"), "{out}");
    assert!(
        out.contains("typo  error"),
        "the bad server is listed with its error: {out}"
    );
    assert!(out.contains("(did you mean `command`?)"), "{out}");
    assert!(
        headline(&o).contains("1 of 3 servers have errors"),
        "{}",
        stderr(&o)
    );

    let doc = json_doc(&mcpb(&["--config", file, "--json", "servers"]));
    assert_eq!(doc["servers"].as_array().map(Vec::len), Some(2));
    assert_eq!(doc["servers"][1]["transport"], "streamable-http");
    assert_eq!(doc["errors"][0]["server"], "typo");
}

#[test]
fn config_server_is_used_with_overrides() {
    let dir = TempDir::new("config-call");
    let file = dir.file("mcp.json", &config_text(true));
    let file = file.to_str().expect("utf-8 path");
    let o = mcpb(&[
        "--config", file, "--server", "fx", "call", "add", "a=1", "b=2",
    ]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "3\n");

    let o = mcpb(&[
        "--config",
        file,
        "--server",
        "fx",
        "--timeout",
        "1",
        "call",
        "slow",
        "ms=5000",
    ]);
    assert_exit(&o, 4);
}

#[test]
fn config_errors_exit_2_and_name_the_server() {
    let dir = TempDir::new("config-errors");
    let file = dir.file("mcp.json", &config_text(true));
    let file = file.to_str().expect("utf-8 path");

    let o = mcpb(&["--config", file, "--server", "typo", "ping"]);
    assert_exit(&o, 2);
    assert!(headline(&o).contains("server `typo`"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("unknown key `comand`"),
        "{}",
        stderr(&o)
    );

    let o = mcpb(&["--config", file, "--server", "nope", "ping"]);
    assert_exit(&o, 2);
    assert!(
        headline(&o).contains("server `nope`: not found"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("fx, api, typo"), "{}", stderr(&o));

    // More than one server and no --server.
    let o = mcpb(&["--config", file, "ping"]);
    assert_exit(&o, 2);

    let file = dir.file("broken.json", "{not json");
    let o = mcpb(&["--config", file.to_str().expect("utf-8 path"), "servers"]);
    assert_exit(&o, 2);

    let o = mcpb(&["--config", "/nonexistent/mcp.json", "servers"]);
    assert_exit(&o, 2);
}

#[test]
fn header_on_a_stdio_config_server_is_refused() {
    let dir = TempDir::new("config-header");
    let file = dir.file("mcp.json", &config_text(false));
    let file = file.to_str().expect("utf-8 path");
    let o = mcpb(&[
        "--config", file, "--server", "fx", "--header", "X-A: b", "ping",
    ]);
    assert_exit(&o, 2);
    assert!(
        headline(&o).contains("server `fx`: --header"),
        "{}",
        stderr(&o)
    );
}

// ---- secrets never printed -------------------------------------------------------------------

/// The value of `${TOKEN}` in the secrets config.
const TOKEN: &str = "tok-S3CRET-5e8d21";
/// Values written in that config as they are: a query value, a header value, an env value.
const LITERALS: [&str; 3] = ["qv-LITERAL-6c1f", "hv-LITERAL-0b7a", "ev-LITERAL-a93e"];

/// A config whose servers carry secrets everywhere: in a URL's password and query, headers, a
/// command, arguments and env; each fails to connect in its own way.
fn secrets_config(dir: &TempDir) -> String {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let fixture = common::fixture::path();
    let env = serde_json::json!({"SECRET_ENV": LITERALS[2], "TOKEN_ENV": "${TOKEN}"});
    let doc = serde_json::json!({"mcpServers": {
        "refused": {
            "type": "http",
            "url": format!("http://ada:${{TOKEN}}@127.0.0.1:{port}/mcp?api_key=${{TOKEN}}&plain={}", LITERALS[0]),
            "headers": {"Authorization": "Bearer ${TOKEN}", "X-Literal": LITERALS[1]},
        },
        "crashes": {"command": fixture, "args": ["--token=${TOKEN}"], "env": env},
        "silent": {
            "command": fixture,
            "args": ["--never-answer", "--protocol-version", "${TOKEN}"],
            "env": env,
            "timeout": 1,
        },
        "missing": {"command": "/nonexistent/${TOKEN}/mcp-server", "args": ["${TOKEN}"]},
    }});
    let path = dir.file("mcp.json", &doc.to_string());
    path.to_string_lossy().into_owned()
}

#[track_caller]
fn assert_no_secret(o: &Output) {
    let all = format!("{}\n{}", stdout(o), stderr(o));
    for secret in std::iter::once(TOKEN).chain(LITERALS) {
        assert!(!all.contains(secret), "`{secret}` printed:\n{all}");
    }
}

#[test]
fn connect_failures_print_no_secret_in_text_json_or_logs() {
    let dir = TempDir::new("secrets");
    let file = secrets_config(&dir);
    for (server, shows) in [
        ("refused", "http://ada:<redacted>@127.0.0.1:"),
        ("crashes", "--token=<redacted>"),
        ("silent", "--protocol-version <redacted>"),
        ("missing", "/nonexistent/<redacted>/mcp-server"),
    ] {
        for mode in [&["-vv"][..], &["--json"], &["--json", "-vvv"]] {
            let mut args = vec!["--config", file.as_str(), "--server", server];
            args.extend_from_slice(mode);
            args.push("ping");
            let o = mcpb_with_env(&args, &[("TOKEN", TOKEN)]);
            assert_exit(&o, 3);
            assert_no_secret(&o);
            assert!(stderr(&o).contains(shows), "{server}: {}", stderr(&o));
            if mode.contains(&"--json") {
                let doc = json_doc(&o);
                assert_eq!(doc["error"]["server"], server);
                assert!(doc.to_string().contains("<redacted>"), "{doc}");
            }
        }
    }
}

#[test]
fn command_line_headers_and_url_queries_are_not_printed() {
    let port = TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp?key={}", LITERALS[0]);
    let header = format!("Authorization: Bearer {TOKEN}");
    for json in [false, true] {
        let mut args = vec!["--url", url.as_str(), "--header", header.as_str(), "-vvv"];
        if json {
            args.push("--json");
        }
        args.push("tools");
        let o = mcpb(&args);
        assert_exit(&o, 3);
        assert_no_secret(&o);
    }
}

// ---- server text is escaped before it reaches a terminal --------------------------------------

#[test]
fn control_characters_in_tool_output_are_shown_escaped() {
    let text = "clear\u{1b}[2J bell\u{7} back\u{8} cr\r csi\u{9b}1m\nsecond line\ttab";
    let arg = format!("text={text}");
    let o = on_fixture(&["call", "echo", &arg]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(
        !out.chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{out:?}"
    );
    assert!(
        out.contains("clear\\u{1b}[2J bell\\u{7} back\\u{8} cr\\u{d} csi\\u{9b}1m"),
        "{out}"
    );
    assert!(
        out.contains("\nsecond line\ttab"),
        "newlines and tabs stay: {out:?}"
    );

    let o = on_fixture(&["--json", "call", "echo", &arg]);
    assert_exit(&o, 0);
    assert!(
        !stdout(&o).chars().any(|c| c.is_control() && c != '\n'),
        "{:?}",
        stdout(&o)
    );
    assert_eq!(
        json_doc(&o)["content"][0]["text"],
        text,
        "the JSON holds the text itself"
    );
}

#[test]
fn control_characters_in_errors_and_logs_are_shown_escaped() {
    // An unknown tool: mcpb names it (it is refused before anything is sent).
    let o = on_fixture(&["call", "title\u{1b}]0;pwned\u{7}"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(err.contains("title\\u{1b}]0;pwned\\u{7}"), "{err}");

    // A JSON-RPC error whose message quotes what was sent (an unknown log level).
    // (One JSON object is sent as it is; k=v values would be checked against the enum.)
    let o = on_fixture(&[
        "call",
        "log",
        r#"{"level": "\u001b[2Jloud", "message": "m"}"#,
    ]);
    assert_exit(&o, 5);
    let err = stderr(&o);
    assert!(!err.contains('\u{1b}'), "{err:?}");
    assert!(err.contains("\\u{1b}[2Jloud"), "{err}");

    // A log notification, shown with -v.
    let line = fixture("");
    let o = mcpb(&[
        "--stdio",
        &line,
        "-v",
        "call",
        "log",
        "level=error",
        "message=\u{1b}[31mred\u{1b}[0m",
    ]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(!err.contains('\u{1b}'), "{err:?}");
    assert!(err.contains("\\u{1b}[31mred\\u{1b}[0m"), "{err}");
}
