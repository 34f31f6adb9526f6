//! No secret reaches `mcpb`'s output at any log level: a bearer token stays out of stderr
//! whatever `RUST_LOG` asks of the HTTP, TLS and WebSocket crates, and a secret that a peer
//! quotes in an error past the point where the message is cut is hidden, not cut in half.

mod common;
mod support_remote;

use std::process::Output;

use serde_json::json;
use support_remote::mcp::{McpHttp, Options};
use support_remote::ws::WsServer;
use support_remote::HttpServer;

use common::mcpb::{mcpb, mcpb_with_env};
use common::tempdir::TempDir;

/// A token long enough to span two rows of a hex dump, with no run that occurs by chance.
const TOKEN: &str = "tok-Zq7Xw9Vb3Kp2Rm8NcD4fHj6LsT1y";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A piece of `secret` (six characters or more) that `out` shows, if any: a hex dump or a cut
/// message would show a piece, not the whole.
fn leaked<'a>(out: &str, secret: &'a str) -> Option<&'a str> {
    (0..=secret.len() - 6)
        .map(|i| &secret[i..i + 6])
        .find(|piece| out.contains(piece))
}

#[track_caller]
fn assert_hidden(what: &str, out: &Output, secret: &str) {
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let shown = text(bytes);
        if let Some(piece) = leaked(&shown, secret) {
            panic!("{what}: {stream} shows `{piece}` of the secret:\n{shown}");
        }
    }
}

#[test]
fn no_log_level_shows_a_bearer_token() {
    let header = format!("Bearer {TOKEN}");
    let http = McpHttp::start(Options {
        require_auth: Some(header.clone()),
        ..Options::default()
    });
    let ws = WsServer::start(true);
    let auth = format!("Authorization: {header}");
    for url in [http.url(), ws.url()] {
        for filter in [
            "trace",
            "ureq_proto=trace",
            "ureq_proto::util=trace",
            "ureq=trace",
            "rustls=trace",
            "tungstenite=trace",
        ] {
            for verbose in [None, Some("-vvv")] {
                let mut args = vec!["--url", &url, "--header", &auth, "tools"];
                args.extend(verbose);
                let out = mcpb_with_env(&args, &[("RUST_LOG", filter)]);
                let what = format!("{url} RUST_LOG={filter} {verbose:?}");
                assert_eq!(out.status.code(), Some(0), "{what}: {}", text(&out.stderr));
                if filter == "trace" {
                    assert!(!out.stderr.is_empty(), "{what}: something was logged");
                }
                assert_hidden(&what, &out, TOKEN);
            }
        }
    }
}

#[test]
fn a_model_endpoint_quoting_the_key_past_the_cut_does_not_show_it() {
    // The API's message quotes the key after 279 characters: a cut at 300 falls inside it.
    let message = format!("{} Incorrect API key provided: {TOKEN}.", "x".repeat(250));
    let body = json!({"error": {"message": message, "type": "invalid_request_error"}}).to_string();
    let model = HttpServer::start(move |_, conn| {
        conn.respond(
            401,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
    });
    let dir = TempDir::new("cli-secrets");
    let fixture = common::fixture::path();
    let config = json!({"mcpServers": {"fx": {"command": fixture}}}).to_string();
    let file = dir.file("mcp.json", &config);
    let file = file.to_string_lossy();
    let url = model.url("/v1");
    for json in [false, true] {
        let mut args = vec!["--config", &file, "run", "--server", "fx"];
        args.extend(["--model-url", &url, "--api-key-env", "MODEL_KEY"]);
        if json {
            args.push("--json");
        }
        args.push("hello");
        let out = mcpb_with_env(&args, &[("MODEL_KEY", TOKEN)]);
        assert_eq!(out.status.code(), Some(9), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains("401"), "{}", text(&out.stderr));
        assert_hidden(&format!("run --json={json}"), &out, TOKEN);
    }
}

#[test]
fn an_mcp_server_error_quoting_a_header_past_the_cut_does_not_show_it() {
    // The body quotes the request's headers after 182 or 282 characters: the excerpt of the
    // body an error quotes is cut at 200 characters (a refused stateless-era request) or 300
    // (any other status), inside the token. Or the token starts 10 bytes before the end of
    // the 1,200 bytes read of the body, after white space (which the excerpt folds).
    let auth = format!("Authorization: Bearer {TOKEN}");
    for failing in ["server/discover", "tools/list"] {
        for padding in [
            format!("{} you sent authorization: Bearer ", "y".repeat(150)),
            format!("{} you sent authorization: Bearer ", "y".repeat(250)),
            " ".repeat(1_190),
        ] {
            let shown = padding.trim().len();
            let body = format!("{padding}{TOKEN}");
            let server = HttpServer::start(move |req, conn| {
                let msg = req.json();
                if req.method != "POST" {
                    conn.respond(405, &[], b"");
                } else if msg["method"] == failing {
                    conn.respond(500, &[("Content-Type", "text/plain")], body.as_bytes());
                } else if let Some(reply) = support_remote::mcp::answer(&msg) {
                    let reply = reply.to_string();
                    conn.respond(
                        200,
                        &[("Content-Type", "application/json")],
                        reply.as_bytes(),
                    );
                } else {
                    conn.respond(202, &[], b"");
                }
            });
            let url = server.url("/mcp");
            for json in [false, true] {
                let mut args = vec!["--url", &url, "--header", &auth, "--timeout", "5", "tools"];
                if json {
                    args.push("--json");
                }
                let out = mcpb(&args);
                let what = format!("{failing} answered 500 after {shown}, --json={json}");
                assert_ne!(out.status.code(), Some(0), "{what}: {}", text(&out.stderr));
                assert!(
                    text(&out.stderr).contains("500"),
                    "{what}: {}",
                    text(&out.stderr)
                );
                assert_hidden(&what, &out, TOKEN);
            }
        }
    }
}

#[test]
fn a_server_log_message_quoting_a_secret_past_the_cut_does_not_show_it() {
    // The env value is one of the server's secrets; its log message quotes it after 1,010
    // bytes, and a log line quotes at most 1,024 (`max_echo_bytes`).
    let dir = TempDir::new("cli-secrets");
    let fixture = common::fixture::path();
    let config = json!({"mcpServers": {"fx": {"command": fixture, "env": {"API_TOKEN": TOKEN}}}});
    let file = dir.file("mcp.json", &config.to_string());
    let message = format!("message={} {TOKEN}", "z".repeat(1_009));
    let out = mcpb_with_env(
        &[
            "--config",
            &file.to_string_lossy(),
            "--server",
            "fx",
            "--log-level",
            "info",
            "call",
            "log",
            "level=warning",
            &message,
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("zzz"), "{}", text(&out.stderr));
    assert_hidden("a server log message", &out, TOKEN);
}
