//! `mcpb`'s conveniences against the fixture server: schema-aware arguments, help, "did you
//! mean", every server of a config at once (one of them broken), server names, progress,
//! Ctrl-C, saving blobs, `--input`, `--log-level`, `complete`, `subscribe`, the shell, and the
//! capabilities checked first.

use std::io::{BufRead, BufReader, Read};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

use common::mcpb::{command, mcpb};
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

fn headline(o: &Output) -> String {
    stderr(o).lines().next().unwrap_or("").to_owned()
}

// ---- schema-aware arguments ----------------------------------------------------------------------

#[test]
fn a_string_argument_stays_a_string() {
    // `echo` takes `text: string`: `3` is sent as "3", and `true` as "true".
    let o = on_fixture(&["--json", "call", "echo", "text=3"]);
    assert_exit(&o, 0);
    assert_eq!(json_doc(&o)["content"][0]["text"], "3");
    let o = on_fixture(&["call", "echo", "text=true"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "true\n");
}

#[test]
fn numbers_are_parsed_and_checked() {
    let o = on_fixture(&["call", "add", "a=1.5", "b=2"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "3.5\n");

    let o = on_fixture(&["call", "add", "a=1", "b=two"]);
    assert_exit(&o, 2);
    assert_eq!(
        headline(&o),
        "mcpb: server `mcp-fixture-server`: tool `add`: argument `b` must be a number, not `two`"
    );
    let o = on_fixture(&["call", "slow", "ms=1.5"]);
    assert_exit(&o, 2);
    assert!(
        headline(&o).contains("argument `ms` must be an integer, not `1.5`"),
        "{}",
        stderr(&o)
    );
    let o = on_fixture(&["--json", "call", "add", "a=x"]);
    assert_exit(&o, 2);
    let doc = json_doc(&o);
    assert_eq!(doc["error"]["kind"], "invalid_argument");
    assert_eq!(doc["error"]["problems"].as_array().map(Vec::len), Some(2));
}

#[test]
fn enums_are_checked_with_a_suggestion() {
    let o = on_fixture(&["call", "log", "level=eror", "message=m"]);
    assert_exit(&o, 2);
    let h = headline(&o);
    assert!(h.contains("argument `level` must be one of"), "{h}");
    assert!(h.contains("(did you mean `error`?)"), "{h}");
}

#[test]
fn missing_required_arguments_are_listed_with_their_types_before_sending() {
    // `crash` would end the server: with a missing argument it must not be sent at all. Here
    // `add` needs `a` and `b`, both numbers.
    let o = on_fixture(&["call", "add"]);
    assert_exit(&o, 2);
    assert_eq!(
        headline(&o),
        "mcpb: server `mcp-fixture-server`: tool `add`: missing required arguments: a \
         (number), b (number)"
    );
    assert!(
        stderr(&o).contains("mcpb call add --help"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn call_tool_help_shows_the_description_and_arguments() {
    let o = on_fixture(&["call", "progress", "--help"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(
        out.starts_with("mcpb call progress steps=VALUE [ms=VALUE]"),
        "{out}"
    );
    assert!(
        out.contains("Sends `steps` progress notifications"),
        "{out}"
    );
    assert!(out.contains("steps  integer (required)"), "{out}");
    assert!(out.contains("ms     integer (optional)"), "{out}");
}

#[test]
fn unknown_tools_prompts_and_commands_get_a_did_you_mean() {
    let o = on_fixture(&["call", "ecko", "text=x"]);
    assert_exit(&o, 2);
    assert_eq!(
        headline(&o),
        "mcpb: server `mcp-fixture-server` has no tool `ecko` (did you mean `echo`?)"
    );
    let o = on_fixture(&["prompt", "greting", "name=Ada"]);
    assert_exit(&o, 2);
    assert!(
        headline(&o).contains("has no prompt `greting` (did you mean `greeting`?)"),
        "{}",
        stderr(&o)
    );
    let o = on_fixture(&["prompt", "greeting"]);
    assert_exit(&o, 2);
    assert!(
        headline(&o).contains("missing required argument: name (string)"),
        "{}",
        stderr(&o)
    );
    let o = on_fixture(&["tols"]);
    assert_exit(&o, 2);
    assert!(headline(&o).contains("'tools'"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("usage: usage:"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("error:"), "{}", stderr(&o));
}

// ---- help and completions --------------------------------------------------------------------------

#[test]
fn help_for_each_command() {
    for args in [&["help", "call"][..], &["call", "--help"]] {
        let o = mcpb(args);
        assert_exit(&o, 0);
        let out = stdout(&o);
        assert!(out.contains("Usage: mcpb call"), "{args:?}: {out}");
        assert!(out.contains("--output <DIR>"), "{args:?}: {out}");
    }
    let o = mcpb(&["help", "servers"]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("--check"), "{}", stdout(&o));

    let o = mcpb(&["help", "json"]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("servers --check"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("\"error\": {\"exit\""),
        "{}",
        stdout(&o)
    );

    let o = mcpb(&["help", "cal"]);
    assert_exit(&o, 2);
    assert!(
        headline(&o).contains("did you mean `call`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn completions_and_man_page() {
    for (shell, mark) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef mcpb"),
        ("fish", "complete -c mcpb"),
    ] {
        let o = mcpb(&["completions", shell]);
        assert_exit(&o, 0);
        let out = stdout(&o);
        assert!(out.contains(mark), "{shell}: {out}");
        assert!(out.contains("subscribe"), "{shell}: commands are completed");
    }
    let o = mcpb(&["man"]);
    assert_exit(&o, 0);
    assert!(stdout(&o).starts_with(".ie"), "{}", &stdout(&o)[..40]);
    assert!(stdout(&o).contains(".TH mcpb"), "roff page");
}

#[test]
fn completions_for_powershell_and_elvish() {
    for (shell, mark) in [
        (
            "powershell",
            "Register-ArgumentCompleter -Native -CommandName 'mcpb'",
        ),
        ("elvish", "set edit:completion:arg-completer[mcpb]"),
    ] {
        let o = mcpb(&["completions", shell]);
        assert_exit(&o, 0);
        let out = stdout(&o);
        assert!(out.contains(mark), "{shell}: {out}");
        assert!(out.contains("subscribe"), "{shell}: commands are completed");
    }
}

// ---- every server of a config at once --------------------------------------------------------------

/// A config with a good server, one whose command does not exist, and one that is invalid.
fn two_config(dir: &TempDir) -> String {
    let fixture = serde_json::to_string(common::fixture::path()).expect("json string");
    let text = format!(
        r#"{{"mcpServers": {{
            "good": {{"command": {fixture}}},
            "broken": {{"command": "/nonexistent/mcp-broken-server"}}
        }}}}"#
    );
    dir.file("two.json", &text).to_string_lossy().into_owned()
}

#[test]
fn servers_check_connects_each_and_names_the_broken_one() {
    let dir = TempDir::new("check");
    let file = two_config(&dir);
    let o = mcpb(&["--config", &file, "servers", "--check"]);
    assert_ne!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_exit(&o, 3);
    let out = stdout(&o);
    let good = out
        .lines()
        .find(|l| l.starts_with("good"))
        .expect("good line");
    assert!(good.contains("ok"), "{out}");
    assert!(good.contains("mcp-fixture-server 0.1.0"), "{out}");
    assert!(good.contains("30 tools"), "{out}");
    assert!(good.ends_with(" ms"), "{out}");
    let broken = out
        .lines()
        .find(|l| l.starts_with("broken"))
        .expect("broken line");
    assert!(broken.contains("failed"), "{out}");
    assert!(broken.contains("/nonexistent/mcp-broken-server"), "{out}");
    assert!(
        stderr(&o).contains("1 of 2 servers failed: broken"),
        "{}",
        stderr(&o)
    );

    let doc = json_doc(&mcpb(&["--config", &file, "--json", "servers", "--check"]));
    assert_eq!(doc["servers"][0]["server"], "good");
    assert_eq!(doc["servers"][0]["ok"], true);
    assert_eq!(doc["servers"][0]["tools"], 30);
    assert!(doc["servers"][0]["latencyMs"].as_f64().is_some());
    assert_eq!(doc["servers"][1]["ok"], false);
    assert_eq!(doc["servers"][1]["error"]["kind"], "connect");
}

#[test]
fn tools_of_every_server_with_the_broken_ones_error() {
    let dir = TempDir::new("all-tools");
    let file = two_config(&dir);
    let o = mcpb(&["--config", &file, "tools"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("== good =="), "{out}");
    assert!(out.contains("  echo(text: string)"), "{out}");
    assert!(out.contains("== broken (failed) =="), "{out}");
    assert!(out.contains("server `broken`: could not start"), "{out}");
    assert!(
        stderr(&o).contains("1 of 2 servers failed"),
        "{}",
        stderr(&o)
    );

    let doc = json_doc(&mcpb(&["--config", &file, "--json", "prompts"]));
    assert_eq!(doc["servers"][0]["server"], "good");
    assert!(doc["servers"][0]["prompts"].as_array().is_some());
    assert_eq!(doc["servers"][1]["error"]["server"], "broken");
}

#[test]
fn call_routes_by_server_and_tool_or_by_a_unique_tool_name() {
    let dir = TempDir::new("route");
    let file = two_config(&dir);
    let o = mcpb(&["--config", &file, "call", "good/add", "a=2", "b=3"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "5\n");
    // Only `good` connects: the unique name finds it, and the broken server is not fatal.
    let o = mcpb(&["--config", &file, "call", "echo", "text=routed"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "routed\n");
    let o = mcpb(&["--config", &file, "call", "ecoh", "text=x"]);
    assert_exit(&o, 2);
    assert!(
        headline(&o).contains("did you mean `echo`"),
        "{}",
        stderr(&o)
    );
    // With --server (or one server in the file), SERVER/ may still be written.
    let o = mcpb(&[
        "--config",
        &file,
        "--server",
        "good",
        "call",
        "good/echo",
        "text=x",
    ]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "x\n");
    // Schema-aware through the Hub too.
    let o = mcpb(&["--config", &file, "call", "good/add", "a=x", "b=1"]);
    assert_exit(&o, 2);
    assert!(headline(&o).contains("must be a number"), "{}", stderr(&o));
}

// ---- names ---------------------------------------------------------------------------------------------

#[test]
fn a_stdio_server_is_named_by_its_server_info_not_its_launcher() {
    // The fixture started under the name `npx`: messages name it `mcp-fixture-server`.
    let dir = TempDir::new("npx");
    let bin = dir.file("placeholder", "");
    let bin_dir = bin.parent().expect("dir");
    #[cfg(unix)]
    let npx = {
        let npx = bin_dir.join("npx");
        std::os::unix::fs::symlink(common::fixture::path(), &npx).expect("symlink");
        npx
    };
    #[cfg(windows)]
    let npx = {
        let npx = bin_dir.join("npx.exe");
        std::fs::copy(common::fixture::path(), &npx).expect("copy");
        npx
    };
    let line = format!("'{}'", npx.display());
    let o = mcpb(&["--stdio", &line, "call", "rpc_error"]);
    assert_exit(&o, 5);
    assert_eq!(
        headline(&o),
        "mcpb: server `mcp-fixture-server`: error -32000: deliberate error"
    );
    let doc = json_doc(&mcpb(&["--stdio", &line, "--json", "info"]));
    assert_eq!(doc["server"], "mcp-fixture-server");
}

// ---- long work ---------------------------------------------------------------------------------------

#[test]
fn progress_extends_the_timeout_up_to_max_time() {
    // Five steps 400 ms apart: 2 s in all, more than --timeout 1, each step within it.
    let o = on_fixture(&["call", "progress", "steps=5", "ms=400", "--timeout", "1"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "progressed 5\n");
    let o = on_fixture(&[
        "call",
        "progress",
        "steps=5",
        "ms=400",
        "--timeout",
        "1",
        "--max-time",
        "1.3",
    ]);
    assert_exit(&o, 4);
    assert!(
        headline(&o).contains("timed out after 1.3 s"),
        "{}",
        stderr(&o)
    );
}

#[test]
#[cfg(unix)] // `script` (util-linux) gives mcpb a terminal.
fn a_progress_line_on_a_terminal_only() {
    use common::mcpb::MCPB;
    use std::process::Command;
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("no `script` command: the progress line is not tested here");
        return;
    }
    let line = format!(
        "'{MCPB}' --stdio \"{}\" call progress steps=3 ms=50",
        fixture("")
    );
    let o = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("run script");
    assert_exit(&o, 0);
    let out = stdout(&o);
    for step in 1..=3 {
        assert!(
            out.contains(&format!("\r\u{1b}[2Kprogress {step}/3 step {step}")),
            "{out:?}"
        );
    }
    assert!(
        out.contains("\r\u{1b}[2Kprogressed 3"),
        "cleared, then the result: {out:?}"
    );
    // Not a terminal: no progress line.
    let o = on_fixture(&["call", "progress", "steps=3", "ms=50"]);
    assert_exit(&o, 0);
    assert_eq!(stderr(&o), "");
}

#[test]
fn a_timeout_is_reported_before_the_server_is_shut_down() {
    // This server ignores SIGTERM and stdin's end: closing it takes seconds.
    let line = fixture("--ignore-sigterm");
    let start = Instant::now();
    let mut child = command(&[
        "--stdio",
        &line,
        "--timeout",
        "1",
        "call",
        "slow",
        "ms=8000",
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("run mcpb");
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let mut first = String::new();
    err.read_line(&mut first).expect("read stderr");
    let reported = start.elapsed();
    let mut rest = String::new();
    let _ = err.read_to_string(&mut rest);
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(4), "{first}{rest}");
    assert!(
        first.contains("`tools/call` timed out after 1.0 s"),
        "{first}"
    );
    assert!(
        reported < Duration::from_millis(1800),
        "reported after {reported:?}"
    );
}

#[test]
#[cfg(unix)] // Ctrl-C is sent as SIGINT.
fn ctrl_c_sends_cancelled_then_exits_130() {
    let line = fixture("--verbose");
    let mut child = command(&["--stdio", &line, "-v", "call", "slow", "ms=20000"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mcpb");
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let mut seen = String::new();
    // Wait until the server has the call (it logs each line it receives).
    loop {
        let mut l = String::new();
        if err.read_line(&mut l).expect("read stderr") == 0 {
            panic!("mcpb ended early:\n{seen}");
        }
        seen.push_str(&l);
        if l.contains(r#""method":"tools/call""#) {
            break;
        }
    }
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("SIGINT");
    let start = Instant::now();
    let _ = err.read_to_string(&mut seen);
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130), "{seen}");
    assert!(start.elapsed() < Duration::from_secs(5), "{seen}");
    assert!(
        seen.contains(r#""method":"notifications/cancelled""#),
        "the server got the cancellation:\n{seen}"
    );
    assert!(seen.contains("interrupted"), "{seen}");
}

// ---- content out ----------------------------------------------------------------------------------------

#[test]
fn read_saves_a_blob_decoded() {
    let dir = TempDir::new("read-o");
    let target = dir.file("logo.png", "");
    let path = target.to_str().expect("utf-8 path");
    let o = on_fixture(&["read", "fixture://logo", "-o", path]);
    assert_exit(&o, 0);
    assert!(stdout(&o).starts_with("saved "), "{}", stdout(&o));
    assert!(stdout(&o).contains("image/png"), "{}", stdout(&o));
    let bytes = std::fs::read(&target).expect("saved file");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{bytes:?}");

    // A text resource is saved as it is; the JSON says where.
    let text_file = dir.file("readme.txt", "");
    let doc = json_doc(&on_fixture(&[
        "--json",
        "read",
        "fixture://readme",
        "-o",
        text_file.to_str().expect("utf-8"),
    ]));
    assert_eq!(doc["saved"][0]["path"], text_file.to_str().expect("utf-8"));
    let saved = std::fs::read_to_string(&text_file).expect("saved");
    assert_eq!(doc["contents"][0]["text"], saved.as_str());
}

// ---- VS Code inputs -------------------------------------------------------------------------------------

#[test]
fn inputs_fill_vs_code_placeholders() {
    let dir = TempDir::new("inputs");
    let fixture = serde_json::to_string(common::fixture::path()).expect("json");
    let file = dir.file(
        "mcp.json",
        &format!(
            r#"{{"inputs": [{{"id": "tok", "type": "promptString", "password": true}}],
                "servers": {{"vs": {{"type": "stdio", "command": {fixture},
                                     "env": {{"TOK": "${{input:tok}}"}}}}}}}}"#
        ),
    );
    let file = file.to_str().expect("utf-8");
    let o = mcpb(&[
        "--config", file, "--input", "tok=abc", "call", "env", "name=TOK",
    ]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "abc\n");

    // Not on a terminal: no prompt, and the message says what to type.
    let o = mcpb(&["--config", file, "call", "env", "name=TOK"]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(err.contains("give it with --input tok=VALUE"), "{err}");
    assert!(!err.contains("ConfigLoader"), "{err}");
}

#[test]
#[cfg(unix)] // `script` (util-linux) gives mcpb a terminal.
fn a_missing_input_is_asked_for_on_a_terminal_without_echo() {
    use common::mcpb::MCPB;
    use std::io::Write;
    use std::process::Command;
    // `script` (util-linux) gives mcpb a terminal.
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("no `script` command: the terminal prompt is not tested here");
        return;
    }
    let dir = TempDir::new("inputs-tty");
    let fixture = serde_json::to_string(common::fixture::path()).expect("json");
    let file = dir.file(
        "mcp.json",
        &format!(
            r#"{{"servers": {{"vs": {{"type": "stdio", "command": {fixture},
                                    "env": {{"TOK": "${{input:tok}}"}}}}}}}}"#
        ),
    );
    let line = format!("'{MCPB}' --config '{}' call env name=TOK", file.display());
    let mut child = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run script");
    let mut out = child.stdout.take().expect("stdout");
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    // Typed only once the prompt is shown (and echo is off).
    while !String::from_utf8_lossy(&seen).contains("value for ${input:tok}: ") {
        let n = out.read(&mut buf).expect("read");
        assert!(n > 0, "no prompt: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"typed-S3CRET\n").expect("type");
    let mut rest = String::new();
    let _ = out.read_to_string(&mut rest);
    drop(stdin);
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "{rest}");
    assert_eq!(
        rest.matches("typed-S3CRET").count(),
        1,
        "printed by the tool, not echoed: {rest:?}"
    );
}

// ---- more of the protocol ---------------------------------------------------------------------------------

#[test]
fn log_level_is_set_and_log_messages_are_shown() {
    let o = on_fixture(&[
        "--log-level",
        "info",
        "call",
        "log",
        "level=warning",
        "message=careful now",
    ]);
    assert_exit(&o, 0);
    assert!(stderr(&o).contains("careful now"), "{}", stderr(&o));
    let o = on_fixture(&[
        "--log-level",
        "error",
        "call",
        "log",
        "level=info",
        "message=m",
    ]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "filtered\n", "the server filtered by the level");
}

#[test]
fn complete_lists_the_values() {
    let o = on_fixture(&["complete", "--prompt", "greeting", "name", "al"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "alice\nalbert\n");
    let doc = json_doc(&on_fixture(&[
        "--json",
        "complete",
        "--template",
        "fixture://items/{id}",
        "id",
    ]));
    assert_eq!(
        doc["completion"]["values"],
        serde_json::json!(["1", "2", "3"])
    );
}

/// Runs `mcpb --stdio FIXTURE shell` with `script` on stdin.
fn shell(script: &str) -> Output {
    use std::io::Write;
    let line = fixture("");
    let mut child = command(&["--stdio", &line, "shell"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mcpb");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("write script");
    child.wait_with_output().expect("wait")
}

#[test]
fn the_shell_keeps_one_session_with_history() {
    // `add_tool` changes this session's tool list: the next line sees the new tool.
    let o = shell("call add_tool name=later\ncall later 'text=same session'\nhistory\n!2\nexit\n");
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("added later"), "{out}");
    // Once from each call, once in the history listing.
    assert_eq!(out.matches("same session").count(), 3, "{out}");
    assert!(out.contains("   1  call add_tool name=later"), "{out}");
}

#[test]
fn subscribe_in_the_shell_prints_updates() {
    use std::io::Write;
    // Interactive: the update is printed by the notification thread, so the session is left
    // only once it has appeared (a script piped in at once could reach its end first).
    let line = fixture("");
    let mut child = command(&["--stdio", &line, "shell"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run mcpb");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(b"subscribe fixture://config\ncall touch uri=fixture://config\n")
        .expect("write");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut seen = String::new();
    while !seen.contains("updated fixture://config") {
        let mut l = String::new();
        if out.read_line(&mut l).expect("read stdout") == 0 {
            break;
        }
        seen.push_str(&l);
    }
    stdin.write_all(b"exit\n").expect("write");
    drop(stdin);
    let _ = out.read_to_string(&mut seen);
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0), "{seen}");
    assert!(seen.contains("subscribed to fixture://config"), "{seen}");
    assert!(seen.contains("touched"), "{seen}");
    assert!(seen.contains("updated fixture://config"), "{seen}");
}

#[test]
fn subscribe_json_lines_escape_controls_as_every_json_output_does() {
    use std::io::Write;
    let line = fixture("");
    let mut child = command(&["--stdio", &line, "--json", "shell"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run mcpb");
    let uri = "fixture://a\u{9b}31m\u{202e}b";
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(format!("subscribe {uri}\ncall touch uri={uri}\n").as_bytes())
        .expect("write");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut update = None;
    let mut seen = String::new();
    while update.is_none() {
        let mut l = String::new();
        if out.read_line(&mut l).expect("read stdout") == 0 {
            break;
        }
        seen.push_str(&l);
        if l.contains("\"updated\"") {
            update = Some(l);
        }
    }
    stdin.write_all(b"exit\n").expect("write");
    drop(stdin);
    let _ = out.read_to_string(&mut seen);
    assert_eq!(child.wait().expect("wait").code(), Some(0), "{seen}");
    let update = update.unwrap_or_else(|| panic!("no update in {seen:?}"));
    assert!(
        !update.contains(['\u{9b}', '\u{202e}']),
        "raw controls in {update:?}"
    );
    let doc: Value = serde_json::from_str(&update).expect("one JSON document per line");
    assert_eq!(doc["updated"], uri, "the escapes mean the same URI");
}

#[test]
#[cfg(unix)] // Ctrl-C is sent as SIGINT.
fn subscribe_waits_for_updates_until_ctrl_c() {
    let line = fixture("");
    let mut child = command(&["--stdio", &line, "subscribe", "fixture://config"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mcpb");
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let mut first = String::new();
    err.read_line(&mut first).expect("read stderr");
    assert!(
        first.contains("subscribed to fixture://config; updates follow until Ctrl-C"),
        "{first}"
    );
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("SIGINT");
    let mut rest = String::new();
    let _ = err.read_to_string(&mut rest);
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(130), "{rest}");
    assert!(rest.contains("subscription ended (Ctrl-C)"), "{rest}");
}

#[test]
fn a_failed_shell_line_does_not_end_the_session() {
    let o = shell("call nope\nbogus\nping\n");
    assert_exit(&o, 0);
    assert!(
        stdout(&o).contains("pong from `mcp-fixture-server`"),
        "{}",
        stdout(&o)
    );
    assert!(stderr(&o).contains("has no tool `nope`"), "{}", stderr(&o));
}

// ---- messages ----------------------------------------------------------------------------------------------

#[test]
fn config_errors_name_the_file_once() {
    let o = mcpb(&["--config", "/nonexistent/nope.json", "tools"]);
    assert_exit(&o, 2);
    let h = headline(&o);
    assert_eq!(h.matches("nope.json").count(), 1, "{h}");
}
