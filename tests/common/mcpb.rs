//! Running the `mcpb` binary (feature `cli`) from a test: one command line with the environment
//! the tests expect, so that what a test reads comes from its own arguments and peers, not from
//! the shell that started `cargo test`.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The `mcpb` executable Cargo built for this test binary.
pub const MCPB: &str = env!("CARGO_BIN_EXE_mcpb");

/// `mcpb ARGS`, without the settings the environment may hold: no `RUST_LOG` (its log lines
/// would join the stderr a test reads) and no `OPENAI_BASE_URL` or `OPENAI_API_KEY` (a test that
/// runs a model names it).
pub fn command(args: &[&str]) -> Command {
    let mut c = Command::new(MCPB);
    c.args(args)
        .env_remove("RUST_LOG")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY");
    c
}

/// Runs `mcpb ARGS` (see [`command`]) to its end: stdin empty, stdout and stderr kept.
pub fn mcpb(args: &[&str]) -> Output {
    command(args).output().expect("run mcpb")
}

/// Runs `mcpb ARGS` as [`mcpb`] does, with the variables of `env` set.
pub fn mcpb_with_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = command(args);
    c.envs(env.iter().copied());
    c.output().expect("run mcpb")
}

/// `mcpb ARGS` (see [`command`]) keeping its sign-ins in the token file `store`, with a
/// `BROWSER` that opens nothing: a test that signs in plays the browser itself.
pub fn with_token_file(store: &Path, args: &[&str]) -> Command {
    let mut c = command(args);
    c.env("MCPB_TOKEN_FILE", store).env("BROWSER", "true");
    c
}

/// Runs `mcpb ARGS` with the token file `store` (see [`with_token_file`]) to its end: stdin
/// empty, stdout and stderr kept.
pub fn mcpb_with_token_file(store: &Path, args: &[&str]) -> Output {
    with_token_file(store, args).output().expect("run mcpb")
}

/// Runs `cmd` as [`mcpb`] does (stdin empty, stdout and stderr kept), for at most `limit` (see
/// [`wait_within`]); what it did and how long it took.
pub fn output_within(mut cmd: Command, what: &str, limit: Duration) -> (Output, Duration) {
    let started = Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mcpb");
    let out = wait_within(child, what, limit);
    (out, started.elapsed())
}

/// Waits for `child` at most `limit`: one still running then is killed and the test fails.
pub fn wait_within(child: Child, what: &str, limit: Duration) -> Output {
    let pid = child.id();
    let (tx, rx) = crossbeam_channel::bounded(1);
    let waiter = std::thread::Builder::new()
        .name("mcpb-waiter".into())
        .spawn(move || {
            let _ = tx.send(child.wait_with_output());
        })
        .unwrap();
    let out = rx.recv_timeout(limit);
    if out.is_err() {
        super::process::kill(pid);
        let _ = rx.recv();
    }
    waiter.join().unwrap();
    match out {
        Ok(out) => out.expect("mcpb ran"),
        Err(_) => panic!("{what} did not end within {limit:?}"),
    }
}

/// `mcpb ARGS` in `dir` with `home` as the user's home and nothing else of the user's (no
/// config, Codex home, trust or token file of the machine), on every platform.
pub fn command_at_home(dir: &Path, home: &Path, args: &[&str]) -> Command {
    let mut c = command(args);
    c.current_dir(dir)
        .env("HOME", home)
        .env("USERPROFILE", home)
        .env("APPDATA", home.join("AppData").join("Roaming"))
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CODEX_HOME")
        .env_remove("MCPB_TRUST_FILE")
        .env_remove("MCPB_TOKEN_FILE");
    c
}

/// What `o` printed on stdout.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// What `o` printed on stderr.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts `o` exited with `code`, showing both outputs otherwise.
#[track_caller]
pub fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "expected exit {code}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        stdout(o),
        stderr(o)
    );
}
