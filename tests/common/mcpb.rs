//! Running the `mcpb` binary (feature `cli`) from a test: one command line with the environment
//! the tests expect, so that what a test reads comes from its own arguments and peers, not from
//! the shell that started `cargo test`.

use std::path::Path;
use std::process::{Command, Output};

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
