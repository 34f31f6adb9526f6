//! No secret reaches `mcpb`'s output at any log level: a bearer token stays out of stderr
//! whatever `RUST_LOG` asks of the HTTP, TLS and WebSocket crates, and a secret that a peer
//! quotes in an error past the point where the message is cut is hidden, not cut in half.

mod support_remote;

use std::process::{Command, Output};

use support_remote::mcp::{McpHttp, Options};
use support_remote::ws::WsServer;

const MCPB: &str = env!("CARGO_BIN_EXE_mcpb");

/// A token long enough to span two rows of a hex dump, with no run that occurs by chance.
const TOKEN: &str = "tok-Zq7Xw9Vb3Kp2Rm8NcD4fHj6LsT1y";

fn mcpb(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(MCPB);
    c.args(args)
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run mcpb")
}

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
                let out = mcpb(&args, &[("RUST_LOG", filter)]);
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
