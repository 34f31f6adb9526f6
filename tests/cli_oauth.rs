//! `mcpb login`, `auth status`, a later command using the stored token, and `logout`, end to
//! end against the loopback authorization server of `tests/oauth_support/`.

mod common;
mod oauth_support;
mod support_remote;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Output, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::mcpb::{command, mcpb_with_token_file, output_within, wait_within, with_token_file};
use oauth_support::{browser, headless, AsOptions, AuthServer};
use serde_json::Value;

fn temp_store(name: &str) -> std::path::PathBuf {
    std::env::temp_dir()
        .join(format!(
            "mcpb-cli-oauth-{}-{name}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
        ))
        .join("tokens.json")
}

/// Writes `mcp.json` with `servers` as its `mcpServers`, next to `store`; its path.
fn config_file(store: &Path, servers: &Value) -> String {
    let dir = store.parent().unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let file = dir.join("mcp.json");
    let doc = serde_json::json!({ "mcpServers": servers });
    std::fs::write(&file, doc.to_string()).unwrap();
    file.to_str().unwrap().to_owned()
}

/// Runs `mcpb login` (loopback listener), playing the browser from the URL it prints.
fn login(store: &Path, url: &str) -> Output {
    let mut child = with_token_file(store, &["--url", url, "login"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcpb login");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let auth_url = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break None;
        }
        seen.push_str(&line);
        if let Some(u) = line
            .trim()
            .strip_prefix("http")
            .filter(|_| line.contains("/authorize?"))
        {
            break Some(format!("http{u}"));
        }
    };
    let auth_url = auth_url.unwrap_or_else(|| panic!("no authorization URL printed:\n{seen}"));
    browser(&auth_url).expect("the browser reaches the loopback listener");
    let out = child.wait_with_output().expect("mcpb login ends");
    assert!(
        out.status.success(),
        "{seen}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn login_then_commands_use_the_stored_token_then_logout() {
    let server = AuthServer::start(AsOptions::default());
    let url = server.mcp_url();
    let store = temp_store("e2e");

    let out = mcpb_with_token_file(&store, &["--url", &url, "auth", "status"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Not signed in"));

    let out = login(&store, &url);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Signed in to"), "{text}");
    assert_eq!(server.state.authorize_requests.load(Ordering::SeqCst), 1);

    // A later command uses the stored token without signing in again.
    let out = mcpb_with_token_file(&store, &["--url", &url, "tools"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("hello"));
    assert_eq!(server.state.authorize_requests.load(Ordering::SeqCst), 1);

    // Status, as text and JSON, never shows the tokens.
    let token = server.state.access.lock().unwrap()[0].clone();
    let out = mcpb_with_token_file(&store, &["--url", &url, "--json", "auth", "status"]);
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["signed_in"], true);
    assert_eq!(doc["tokens"][0]["refreshable"], true);
    let all = String::from_utf8_lossy(&out.stdout).into_owned()
        + &String::from_utf8_lossy(
            &mcpb_with_token_file(&store, &["--url", &url, "auth", "status"]).stdout,
        );
    assert!(!all.contains(&token) && !all.contains("rt-"), "{all}");

    // A revoked access token is refreshed silently.
    server.state.revoke_access_tokens();
    let out = mcpb_with_token_file(&store, &["--url", &url, "tools"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.state.refresh_grants.load(Ordering::SeqCst), 1);

    let out = mcpb_with_token_file(&store, &["--url", &url, "logout"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Signed out"));
    let out = mcpb_with_token_file(&store, &["--url", &url, "auth", "status"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Not signed in"));
    // Without a sign-in the server's 401 is reported (exit 3: could not connect), naming the
    // login command.
    let out = mcpb_with_token_file(&store, &["--url", &url, "tools"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("run `mcpb --url {url} login`")),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(store.parent().unwrap());
}

/// Reads `stderr` up to the line that holds the authorization URL (what it read kept in
/// `seen`) and returns that line trimmed; `None` when stderr ended first.
fn authorize_line(stderr: &mut impl BufRead, seen: &mut String) -> Option<String> {
    loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            return None;
        }
        seen.push_str(&line);
        if line.contains("/authorize?") {
            return Some(line.trim().to_owned());
        }
    }
}

/// Runs `mcpb BEFORE --json login --paste AFTER`, playing the browser headlessly; returns what
/// mcpb did and the authorization URL it printed.
fn login_pasting(store: &Path, before: &[&str], after: &[&str]) -> (Output, String) {
    let mut child = command(before)
        .args(["--json", "login", "--paste"])
        .args(after)
        .env("MCPB_TOKEN_FILE", store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcpb login --paste");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let Some(auth_url) = authorize_line(&mut stderr, &mut seen) else {
        let mut stdout = String::new();
        let _ = std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut stdout);
        panic!("no URL printed; stderr: {seen}; stdout: {stdout}");
    };
    let landed = headless(&auth_url).expect("redirect");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{landed}").unwrap();
    drop(stdin);
    (child.wait_with_output().unwrap(), auth_url)
}

#[test]
fn login_with_paste_reads_the_address_from_stdin() {
    let server = AuthServer::start(AsOptions::default());
    let url = server.mcp_url();
    let store = temp_store("paste");
    let (out, auth_url) = login_pasting(&store, &["--url", &url], &["--scope", "mcp:read"]);
    assert!(auth_url.contains("scope=mcp%3Aread"), "{auth_url}");
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["signed_in"], true);
    assert_eq!(doc["tokens"][0]["client_id"], "client-1");
    let _ = std::fs::remove_dir_all(store.parent().unwrap());
}

#[test]
fn auth_commands_need_a_url() {
    let store = temp_store("usage");
    let out = mcpb_with_token_file(&store, &["login"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--url"));
}

#[test]
fn client_id_and_secret_sign_in_as_a_machine_client() {
    let server = AuthServer::start(AsOptions::default());
    let url = server.mcp_url();
    let store = temp_store("m2m");
    let out = mcpb_with_token_file(
        &store,
        &[
            "--url",
            &url,
            "--client-id",
            "m2m",
            "--client-secret",
            "m2m-secret",
            "tools",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("hello"));
    assert_eq!(
        server
            .state
            .client_credentials_grants
            .load(Ordering::SeqCst),
        1
    );
    assert_eq!(server.state.authorize_requests.load(Ordering::SeqCst), 0);

    let out = mcpb_with_token_file(&store, &["--url", &url, "--client-id", "m2m", "tools"]);
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(store.parent().unwrap());
}

#[test]
fn login_status_and_logout_work_on_a_config_entry() {
    let server = AuthServer::start(AsOptions::default());
    let url = server.mcp_url();
    let store = temp_store("config");
    let dir = store.parent().unwrap();
    let file = config_file(
        &store,
        &serde_json::json!({
            "remote": {"type": "http", "url": url},
            "local": {"command": "true"},
        }),
    );
    let file = file.as_str();
    let entry = ["--config", file, "--server", "remote"];

    let (out, _) = login_pasting(&store, &entry, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["signed_in"], true);

    // A later command on the entry uses the stored token.
    let out = mcpb_with_token_file(&store, &[&entry[..], &["tools"]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("hello"));
    assert_eq!(server.state.authorize_requests.load(Ordering::SeqCst), 1);
    let out = mcpb_with_token_file(&store, &[&entry[..], &["auth", "status"]].concat());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Signed in to"));
    let out = mcpb_with_token_file(&store, &[&entry[..], &["logout"]].concat());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Signed out"));

    // A stdio entry has no sign-in: a config error, as one JSON error document.
    let out = mcpb_with_token_file(
        &store,
        &[
            "--config", file, "--server", "local", "--json", "auth", "status",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["error"]["kind"], "config");
    assert_eq!(doc["error"]["server"], "local");
    assert!(
        doc["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("http and sse")),
        "{doc}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn auth_usage_errors_are_the_usual_error_document() {
    let store = temp_store("usage-json");
    let out = mcpb_with_token_file(
        &store,
        &[
            "--url",
            "http://127.0.0.1:9/mcp",
            "--json",
            "logout",
            "--client-id",
            "x",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["error"]["exit"], 2);
    assert_eq!(doc["error"]["kind"], "usage");
    let message = doc["error"]["message"].as_str().unwrap_or_default();
    assert_eq!(
        message,
        "usage: `logout` does not take --client-id (they choose how `login` signs in)"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("mcpb:").count(), 1, "{err}");
}

#[test]
fn a_hostile_authorization_url_is_neither_printed_nor_opened() {
    let dir = temp_store("hostile").parent().unwrap().to_owned();
    std::fs::create_dir_all(&dir).unwrap();
    // A $BROWSER that records that it ran (a batch file on Windows).
    let opened = dir.join("opened");
    let (opener, script) = if cfg!(windows) {
        let script = format!("@echo %*>> \"{}\"\r\n", opened.display());
        (dir.join("browser.cmd"), script)
    } else {
        let script = format!("#!/bin/sh\necho \"$@\" >> '{}'\n", opened.display());
        (dir.join("browser.sh"), script)
    };
    std::fs::write(&opener, script).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let tails = [
        "#\u{1b}[2J\u{1b}[H\nmcpb: signed in as admin",
        "#\u{1b}]8;;https://evil.example\u{7}click\u{1b}]8;;\u{7}",
        "#x\u{9b}31m\u{202e}",
    ];
    for (i, tail) in tails.into_iter().enumerate() {
        let server = AuthServer::start_with(|origin| AsOptions {
            endpoints: vec![(
                "authorization_endpoint".into(),
                format!("{origin}/authorize{tail}"),
            )],
            ..AsOptions::default()
        });
        let url = server.mcp_url();
        let store = dir.join(format!("tokens-{i}.json"));
        for paste in [false, true] {
            let mut args = vec!["--url", url.as_str(), "login"];
            if paste {
                args.push("--paste");
            }
            let mut cmd = with_token_file(&store, &args);
            cmd.env("BROWSER", &opener);
            // A login that went on to wait for the browser fails the test here, not hangs it.
            let (out, _) = output_within(cmd, "mcpb login", Duration::from_secs(30));
            let all = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(3), "{tail:?}: {all}");
            assert!(all.contains("control character"), "{tail:?}: {all}");
            assert!(
                !all.chars()
                    .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'),
                "{tail:?}: {all:?}"
            );
            assert!(
                !all.lines().any(|l| l.starts_with("mcpb: signed in")),
                "{all}"
            );
            assert!(!opened.exists(), "the opener ran");
            assert!(server.requests_to("/authorize").is_empty());
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Runs mcpb for at most `limit` (see [`wait_within`]); returns what it did and how long it
/// took.
fn mcpb_within(store: &Path, args: &[&str], limit: Duration) -> (Output, Duration) {
    output_within(
        with_token_file(store, args),
        &format!("mcpb {args:?}"),
        limit,
    )
}

#[test]
fn a_command_that_needs_a_sign_in_says_so_at_once() {
    let server = AuthServer::start(AsOptions::default());
    let url = server.mcp_url();
    let store = temp_store("sign-in-required");
    let dir = store.parent().unwrap();
    let file = config_file(
        &store,
        &serde_json::json!({
            "remote": {"type": "http", "url": url, "oauth": {"scopes": ["mcp:read"]}},
        }),
    );
    let file = file.as_str();
    let entry = ["--config", file, "--server", "remote"];
    let limit = Duration::from_secs(20);

    // A config entry with an `oauth` block, not signed in: exit 7 at once, naming the login.
    let (out, took) = mcpb_within(
        &store,
        &[&entry[..], &["--timeout", "5", "tools"]].concat(),
        limit,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{err}");
    assert!(took < Duration::from_secs(6), "{took:?}");
    assert!(err.contains("sign-in required"), "{err}");
    assert!(
        err.contains(&format!("`mcpb --config {file} --server remote login`")),
        "{err}"
    );
    let (out, _) = mcpb_within(
        &store,
        &[&entry[..], &["--timeout", "5", "--json", "tools"]].concat(),
        limit,
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["error"]["exit"], 7, "{doc}");
    assert_eq!(doc["error"]["kind"], "unauthorized", "{doc}");
    assert_eq!(doc["error"]["reason"], "sign_in_required", "{doc}");
    assert!(server.requests_to("/authorize").is_empty());
    assert!(server.requests_to("/register").is_empty());

    // Signed in, the entry works with the stored token.
    let (out, _) = login_pasting(&store, &entry, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (out, _) = mcpb_within(&store, &[&entry[..], &["tools"]].concat(), limit);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A stored sign-in that can no longer be refreshed: the same, for --url too.
    server.state.revoke_access_tokens();
    server.state.refresh.lock().unwrap().clear();
    let (out, took) = mcpb_within(
        &store,
        &["--url", &url, "--timeout", "5", "call", "hello"],
        limit,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{err}");
    assert!(took < Duration::from_secs(6), "{took:?}");
    assert!(err.contains(&format!("`mcpb --url {url} login`")), "{err}");
    assert_eq!(server.state.authorize_requests.load(Ordering::SeqCst), 1);
    let _ = std::fs::remove_dir_all(dir);
}

/// `mcpb --url URL login --max-time 3` while another local connection trickles a byte every
/// 100 ms into its loopback listener, the browser coming back too when `browse`: returns
/// what mcpb did, how long it took after printing the address, and what it printed on stderr.
fn login_while_trickling(server: &AuthServer, browse: bool) -> (Output, Duration, String) {
    let store = temp_store("trickle");
    let mut child = with_token_file(
        &store,
        &["--url", &server.mcp_url(), "login", "--max-time", "3"],
    )
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("start mcpb login");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let auth_url = authorize_line(&mut stderr, &mut seen)
        .unwrap_or_else(|| panic!("no authorization URL printed:\n{seen}"));
    let shown = Instant::now();
    let marker = "redirect_uri=http%3A%2F%2F127.0.0.1%3A";
    let rest = &auth_url[auth_url.find(marker).expect("a loopback redirect_uri") + marker.len()..];
    let port: u16 = rest[..rest.find('%').unwrap()].parse().unwrap();
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.write_all(b"GET /callback?").unwrap();
    let (stop, stopped) = crossbeam_channel::bounded::<()>(1);
    let trickler = std::thread::Builder::new()
        .name("trickler".into())
        .spawn(move || {
            let end = Instant::now() + Duration::from_secs(30);
            while Instant::now() < end {
                match stopped.recv_timeout(Duration::from_millis(100)) {
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                        if conn.write_all(b"a").is_err() {
                            return;
                        }
                    }
                    _ => return,
                }
            }
        })
        .unwrap();
    let browser_thread = browse.then(|| {
        std::thread::Builder::new()
            .name("browser".into())
            .spawn(move || browser(&auth_url))
            .unwrap()
    });
    let out = wait_within(child, "mcpb login", Duration::from_secs(20));
    let took = shown.elapsed();
    let _ = stop.send(());
    trickler.join().unwrap();
    if let Some(b) = browser_thread {
        b.join().unwrap().expect("the browser reached the listener");
    }
    std::io::Read::read_to_string(&mut stderr, &mut seen).unwrap();
    let _ = std::fs::remove_dir_all(store.parent().unwrap());
    (out, took, seen)
}

#[test]
fn login_completes_while_another_local_connection_trickles() {
    let server = AuthServer::start(AsOptions::default());
    let (out, _, err) = login_while_trickling(&server, true);
    assert!(out.status.success(), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Signed in to"));
}

#[test]
fn login_ends_at_its_deadline_while_another_local_connection_trickles() {
    let server = AuthServer::start(AsOptions::default());
    let (out, took, err) = login_while_trickling(&server, false);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("no browser came back"), "{err}");
    assert!(took < Duration::from_secs(3 + 1), "{took:?}");
}

#[test]
fn a_stalled_token_endpoint_ends_a_command_at_its_timeout() {
    // `--timeout` bounds the requests to the authorization server too, not only the server's.
    let server = AuthServer::start(AsOptions {
        stall_token: true,
        ..AsOptions::default()
    });
    let url = server.mcp_url();
    let store = temp_store("stalled-token");
    // Bounded by far more than the timeout, so that a command the stall holds fails the test
    // rather than hanging it.
    let (out, took) = mcpb_within(
        &store,
        &[
            "--url",
            &url,
            "--timeout",
            "2",
            "--client-id",
            "m2m",
            "--client-secret",
            "m2m-secret",
            "tools",
        ],
        Duration::from_secs(30),
    );
    assert!(!out.status.success(), "no token, no tools");
    assert!(
        took < std::time::Duration::from_secs(6),
        "a stalled token endpoint held `--timeout 2 tools` for {took:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(store.parent().unwrap());
}
