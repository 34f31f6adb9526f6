//! Shared by the examples: the fixture server, served by the example's own executable.
//!
//! Each example calls [`serve_fixture_if_asked`] first thing in `main`, and starts the fixture
//! server as this same executable with [`MARKER`] as its first argument ([`fixture_server`],
//! [`fixture_command`]). So an example needs nothing built beforehand: `cargo run --example X`
//! builds the example and the library, not the package's binaries.
#![allow(dead_code, reason = "each example uses a different part")]

use std::process::{Command, ExitCode};

use mcp_blocking::ServerConfig;

/// The first argument that makes an example serve the fixture instead of running.
pub const MARKER: &str = "--serve-fixture";

/// When this process was started as the fixture server (first argument [`MARKER`]), serves it on
/// stdin/stdout with the remaining arguments and returns the exit status for `main` to return.
pub fn serve_fixture_if_asked() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(MARKER.as_ref()) {
        return None;
    }
    let flags = args.map(|a| a.to_string_lossy().into_owned());
    // `--spawn-grandchild` starts this executable again: with the marker, so it serves too.
    Some(mcp_fixture_server::serve(&[MARKER], flags))
}

/// The `main` of an example: serves the fixture server when asked (see
/// [`serve_fixture_if_asked`]), else sets up logging and runs `run`, printing its error with
/// `Display` (not `Debug`, as returning it from `main` would).
pub fn main(run: fn() -> Result<(), Box<dyn std::error::Error>>) -> ExitCode {
    if let Some(code) = serve_fixture_if_asked() {
        return code;
    }
    env_logger::init();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// This executable's path, as a string for [`ServerConfig::stdio`].
fn this_exe() -> std::io::Result<String> {
    let exe = std::env::current_exe()?;
    Ok(exe.to_string_lossy().into_owned())
}

/// A stdio server config that starts the fixture server with `flags` (see the flags of
/// `mcp_fixture_server::serve`).
///
/// # Errors
/// When the path of this executable cannot be found.
pub fn fixture_server(name: impl Into<String>, flags: &[&str]) -> std::io::Result<ServerConfig> {
    let args = std::iter::once(MARKER).chain(flags.iter().copied());
    Ok(ServerConfig::stdio(name, this_exe()?).with_args(args))
}

/// A [`Command`] that starts the fixture server, for talking to it without the library.
///
/// # Errors
/// When the path of this executable cannot be found.
pub fn fixture_command() -> std::io::Result<Command> {
    let mut cmd = Command::new(this_exe()?);
    cmd.arg(MARKER);
    Ok(cmd)
}

/// Pins this process, and every thread it starts afterwards, to core 0: client and server
/// threads then share one core, so a benchmark's pinned table shows the work done rather than
/// how it spreads over cores.
#[cfg(unix)]
pub fn pin_to_core0() {
    let mut set = rustix::thread::CpuSet::new();
    set.set(0);
    if let Err(e) = rustix::thread::sched_setaffinity(None, &set) {
        eprintln!("could not pin to core 0: {e}");
    }
}

/// Pinning is done on Unix only: elsewhere the pinned figures are taken unpinned.
#[cfg(not(unix))]
pub fn pin_to_core0() {
    eprintln!("not pinned to core 0 (Unix only)");
}
