//! Claude Code's `headersHelper`: a shell command whose standard output is a JSON object of
//! header names and values for a remote server, run at load time when the program allows it
//! ([`ConfigLoader::allow_header_commands`](super::ConfigLoader::allow_header_commands)).
//!
//! ```text
//!   spawn (sh -c / cmd /C, stdin null, stdout + stderr piped,
//!          CLAUDE_CODE_MCP_SERVER_NAME / _URL set)
//!     │   two named reader threads, each ends at end of its pipe
//!     ├─ both pipes ended within the deadline ──> kill what is left, reap ──> parse stdout
//!     ├─ stdout over HELPER_OUTPUT_CAP ─────────> kill, join, reap ──> error
//!     └─ deadline (HELPER_TIMEOUT) ─────────────> kill, join, reap ──> error
//! ```
//!
//! On Unix the helper runs in its own process group, and the whole group is killed, so that a
//! grandchild (`sh -c 'sleep 60; echo'`) cannot keep the pipes open past the deadline; on
//! Windows its process tree is ended with `taskkill /T`.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, RecvTimeoutError};

/// How long a `headersHelper` may run (Claude Code's own limit).
pub(crate) const HELPER_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a `headersHelper` may print on its standard output; more is an error, not a cut.
pub(crate) const HELPER_OUTPUT_CAP: usize = 16 * 1024;
/// How much of a helper's standard error is kept for its error message.
const STDERR_CAP: usize = 2 * 1024;

/// What a reader thread saw.
enum Piped {
    /// The pipe ended; what was read.
    Done(Which, Vec<u8>),
    /// Standard output went over the cap.
    Over,
    /// The pipe could not be read.
    Failed(Which, std::io::Error),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Which {
    Out,
    Err,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Out => "standard output",
            Which::Err => "standard error",
        }
    }
}

/// Runs `command` for the server `server` at `url`, in `dir` when given (the config file's
/// directory, so that `./get-token.sh` in a project's `.mcp.json` is the project's), and
/// returns its headers, in output order.
///
/// # Errors
/// A message (without the helper's output, which may hold secrets) when the command cannot be
/// started, runs past [`HELPER_TIMEOUT`], prints more than [`HELPER_OUTPUT_CAP`] bytes, exits
/// with a failure, or prints anything but a JSON object of strings.
pub(crate) fn run(
    command: &str,
    server: &str,
    url: &str,
    dir: Option<&Path>,
) -> Result<Vec<(String, String)>, String> {
    let mut cmd = shell(command);
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    run_command(cmd, server, url, HELPER_TIMEOUT, HELPER_OUTPUT_CAP)
}

/// [`run`] with its limits given.
#[cfg(all(test, unix))]
fn run_with(
    command: &str,
    server: &str,
    url: &str,
    timeout: Duration,
    cap: usize,
) -> Result<Vec<(String, String)>, String> {
    run_command(shell(command), server, url, timeout, cap)
}

/// Runs the helper's shell command `cmd` under `timeout`, its output capped at `cap`.
fn run_command(
    mut cmd: Command,
    server: &str,
    url: &str,
    timeout: Duration,
    cap: usize,
) -> Result<Vec<(String, String)>, String> {
    let deadline = Instant::now() + timeout;
    let mut child = cmd
        .env("CLAUDE_CODE_MCP_SERVER_NAME", server)
        .env("CLAUDE_CODE_MCP_SERVER_URL", url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("the command could not be started: {e}"))?;
    let (Some(mut out), Some(mut err)) = (child.stdout.take(), child.stderr.take()) else {
        end(&mut child);
        return Err("the command's output could not be read".into());
    };
    let (tx, rx) = bounded::<Piped>(2);
    let tx_err = tx.clone();
    let readers = [
        thread::Builder::new()
            .name("mcp-headers-helper-out".into())
            .spawn(move || {
                let msg = match read_capped(&mut out, cap) {
                    Ok(Some(bytes)) => Piped::Done(Which::Out, bytes),
                    Ok(None) => Piped::Over,
                    Err(e) => Piped::Failed(Which::Out, e),
                };
                // The receiver is gone only once the run has ended.
                let _ = tx.send(msg);
            }),
        thread::Builder::new()
            .name("mcp-headers-helper-err".into())
            .spawn(move || {
                let msg = match read_tail(&mut err, STDERR_CAP) {
                    Ok(bytes) => Piped::Done(Which::Err, bytes),
                    Err(e) => Piped::Failed(Which::Err, e),
                };
                let _ = tx_err.send(msg);
            }),
    ];
    let mut joins = Vec::new();
    let mut failure = None;
    for r in readers {
        match r {
            Ok(h) => joins.push(h),
            Err(e) => failure = Some(format!("a thread to read its output could not start: {e}")),
        }
    }

    let (mut stdout, mut stderr) = (None, Vec::new());
    let mut pending = joins.len();
    while failure.is_none() && pending > 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Piped::Done(Which::Out, bytes)) => stdout = Some(bytes),
            Ok(Piped::Done(Which::Err, bytes)) => stderr = bytes,
            Ok(Piped::Over) => {
                failure = Some(format!("the command printed more than {cap} bytes"));
            }
            Ok(Piped::Failed(which, e)) => {
                failure = Some(format!("its {} could not be read: {e}", which.name()));
            }
            Err(RecvTimeoutError::Timeout) => {
                failure = Some(format!(
                    "the command did not finish within {} s",
                    timeout.as_secs_f64()
                ));
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
        pending -= 1;
    }
    // Whatever happened, nothing of the helper outlives its run: its pipes have ended (so it has
    // exited, or closed them), or it ran out of time or room. Killing ends the readers too.
    let status = end(&mut child);
    for j in joins {
        let _ = j.join();
    }
    if let Some(f) = failure {
        return Err(with_stderr(f, &stderr));
    }
    match status {
        Some(s) if s.success() => {}
        Some(s) => return Err(with_stderr(format!("the command failed ({s})"), &stderr)),
        None => {
            return Err(with_stderr(
                "the command could not be waited for".into(),
                &stderr,
            ))
        }
    }
    parse_headers(&stdout.unwrap_or_default())
}

/// The platform shell running `command`.
fn shell(command: &str) -> Command {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let mut c = Command::new("sh");
        c.arg("-c").arg(command);
        // Its own group, so that the whole tree can be killed at the deadline.
        c.process_group(0);
        c
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        let mut c = Command::new("cmd");
        // As written: cmd.exe parses its own command line, and Rust's quoting would change it.
        c.arg("/C").raw_arg(command);
        c
    }
}

/// Kills what is left of the helper (its process group on Unix) and reaps it; its exit status,
/// when it could be waited for.
fn end(child: &mut Child) -> Option<std::process::ExitStatus> {
    #[cfg(unix)]
    {
        if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
            // The group is gone when the helper and its children all exited: nothing to do.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
    // An exited child is not killed again; its status stays its own.
    if matches!(child.try_wait(), Ok(None)) {
        #[cfg(windows)]
        {
            // `cmd /C` has no process group: its tree is ended by the system's own tool, so that
            // a program it started cannot hold the pipes open (and the readers waiting).
            let _ = Command::new("taskkill")
                .args(["/F", "/T", "/PID", &child.id().to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = child.kill();
    }
    child.wait().ok()
}

/// Reads `r` to its end, or `None` once more than `cap` bytes came.
fn read_capped(r: &mut impl Read, cap: usize) -> std::io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    let n = r.take(cap as u64 + 1).read_to_end(&mut buf)?;
    Ok((n <= cap).then_some(buf))
}

/// Reads `r` to its end, keeping its last `cap` bytes.
fn read_tail(r: &mut impl Read, cap: usize) -> std::io::Result<Vec<u8>> {
    let mut kept = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) => return Ok(kept),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        kept.extend_from_slice(&chunk[..n]);
        if kept.len() > cap {
            kept.drain(..kept.len() - cap);
        }
    }
}

/// `message`, with the last line of the helper's standard error when it printed one.
fn with_stderr(message: String, stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    match text.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
        Some(line) => format!("{message}; its last error line: {}", super::echo(line, 200)),
        None => message,
    }
}

/// The headers of a helper's output: one JSON object of strings.
fn parse_headers(stdout: &[u8]) -> Result<Vec<(String, String)>, String> {
    let value: serde_json::Value = serde_json::from_slice(stdout).map_err(|_| {
        "the command did not print a JSON object of headers (its output is not JSON)".to_owned()
    })?;
    let serde_json::Value::Object(map) = value else {
        return Err(format!(
            "the command did not print a JSON object of headers (it printed {})",
            super::error::json_type_name(&value)
        ));
    };
    map.into_iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => Ok((k, s)),
            other => Err(format!(
                "the command's header `{}` is {}, not a string",
                super::echo(&k, 64),
                super::error::json_type_name(&other)
            )),
        })
        .collect()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn headers_printed_are_returned_with_the_server_in_the_environment() {
        let h = run(
            r#"printf '{"Authorization": "Bearer %s", "X-Url": "%s"}' "$CLAUDE_CODE_MCP_SERVER_NAME" "$CLAUDE_CODE_MCP_SERVER_URL""#,
            "api",
            "https://h/mcp",
            None,
        )
        .unwrap();
        assert_eq!(
            h,
            [
                ("Authorization".to_owned(), "Bearer api".to_owned()),
                ("X-Url".to_owned(), "https://h/mcp".to_owned())
            ]
        );
    }

    #[test]
    fn a_helper_past_its_deadline_is_killed_with_its_children() {
        // `sleep` is the shell's child and holds its output open: the run can end only once
        // the whole tree is gone (killing the shell alone would leave it to run 5 s).
        let start = Instant::now();
        let e = run_with(
            "sleep 5; echo '{}'",
            "s",
            "http://h",
            Duration::from_millis(300),
            1024,
        )
        .unwrap_err();
        let took = start.elapsed();
        assert_eq!(e, "the command did not finish within 0.3 s");
        assert!(
            took < Duration::from_millis(300) + Duration::from_secs(2),
            "{took:?}"
        );
    }

    #[test]
    fn output_over_the_cap_is_an_error_not_a_cut() {
        let e = run_with(
            "yes x | head -c 5000",
            "s",
            "http://h",
            HELPER_TIMEOUT,
            4096,
        )
        .unwrap_err();
        assert_eq!(e, "the command printed more than 4096 bytes");
        // At the cap, it is read whole.
        let ok = run_with(
            r#"printf '{"A": "%s"}' "$(head -c 100 /dev/zero | tr '\0' x)""#,
            "s",
            "http://h",
            HELPER_TIMEOUT,
            109,
        )
        .unwrap();
        assert_eq!(ok[0].1.len(), 100);
    }

    #[test]
    fn a_flood_on_standard_error_keeps_only_its_tail() {
        // 1 MB on stderr, then a last line: only the last STDERR_CAP bytes are kept, and the
        // error quotes the last line, cut.
        let e = run(
            "yes 0123456789 | head -c 1000000 >&2; echo >&2; printf 'last %0300d' 0 >&2; exit 1",
            "s",
            "http://h",
            None,
        )
        .unwrap_err();
        assert!(e.contains("its last error line: last 000"), "{e}");
        assert!(e.len() < 600, "{} bytes: {e}", e.len());
        let tail = read_tail(&mut &[b'x'; 10_000][..], 100).unwrap();
        assert_eq!(tail.len(), 100);
    }

    #[test]
    fn output_that_is_not_an_object_of_strings_is_an_error() {
        for (cmd, want) in [
            ("echo not json", "its output is not JSON"),
            ("echo '[1]'", "it printed a list"),
            (r#"echo '{"A": 1}'"#, "header `A` is a number, not a string"),
        ] {
            let e = run(cmd, "s", "http://h", None).unwrap_err();
            assert!(e.contains(want), "{cmd}: {e}");
        }
    }

    #[test]
    fn a_failing_helper_says_so_with_its_last_error_line() {
        let e = run(
            "echo first >&2; echo 'no token' >&2; exit 3",
            "s",
            "http://h",
            None,
        )
        .unwrap_err();
        assert!(e.contains("failed") && e.contains("no token"), "{e}");
    }
}

#[cfg(all(test, windows))]
mod windows_tests {
    use super::*;

    #[test]
    fn headers_printed_through_cmd_are_returned() {
        // The command line reaches cmd.exe as written, quotes included.
        let h = run(
            r#"echo {"X-Server": "%CLAUDE_CODE_MCP_SERVER_NAME%"}"#,
            "api",
            "http://h",
            None,
        )
        .unwrap();
        assert_eq!(h, [("X-Server".to_owned(), "api".to_owned())]);
    }

    #[test]
    fn a_failing_helper_says_so() {
        let e = run("exit /b 3", "s", "http://h", None).unwrap_err();
        assert!(e.contains("failed"), "{e}");
    }
}
