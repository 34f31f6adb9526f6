//! How a stdio server's command becomes a process on Windows, as pure functions: the command
//! found through `PATH` and `PATHEXT` (so `"command": "npx"` finds `npx.cmd`, as in cmd.exe and
//! the desktop hosts), the arguments a batch file may not be given, and the environment a
//! server inherits on each platform.
//!
//! ```text
//!   "npx" ──resolve_command──> C:\Program Files\nodejs\npx.cmd (Batch)
//!                                   │
//!          check_batch_args(args) ──┤ refused: NUL, newline, carriage return, Ctrl-Z
//!                                   v
//!   std::process::Command::new(path): std runs a batch file as
//!   cmd.exe /e:ON /v:OFF /d /c ""C:\...\npx.cmd" -y "a&b""   (see `batch_command_line`)
//! ```
//!
//! Nothing here touches the file system or the OS (the caller passes `is_file`, `PATH`,
//! `PATHEXT`), so the Windows rules are unit-tested on every platform; only the Windows spawn
//! calls the resolver and the argument check.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// What cmd.exe uses when `PATHEXT` is unset (or names no extension).
const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD";

/// The extensions `CreateProcess` can start: programs, and batch files (through cmd.exe, which
/// std puts in front of them). Other `PATHEXT` entries (`.JS`, `.VBS`, `.PY`) are opened by
/// their file association, which only a shell does.
const STARTABLE: [&str; 4] = [".com", ".exe", ".bat", ".cmd"];

/// Environment variables a child inherits by default on POSIX systems (the MCP SDKs' list).
const POSIX_INHERITED_ENV: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// Environment variables a child inherits by default on Windows: the TypeScript SDK's win32
/// list (the Python SDK's, plus `PROGRAMFILES`), and what Windows programs and launchers look
/// for: the system folders (`SYSTEMROOT`, `WINDIR`, `COMSPEC` for cmd.exe itself), `PATHEXT`
/// (a `.cmd` shim that runs another command), `TMP` beside `TEMP`, the program and data folders.
const WINDOWS_INHERITED_ENV: [&str; 20] = [
    "APPDATA",
    "COMMONPROGRAMFILES",
    "COMMONPROGRAMFILES(X86)",
    "COMSPEC",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "PROGRAMFILES(X86)",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
    "WINDIR",
];

/// The environment variables a child inherits by default on this platform.
///
/// On Windows the names compare case-insensitively, as everywhere in its environment:
/// `std::env::var_os("SYSTEMROOT")` finds `SystemRoot`, and std's `Command` treats `Path` set
/// in a server's `env` as the `PATH` it replaces. The child sees the value under the spelling
/// of this list, which any Windows program reads the same way.
#[cfg_attr(
    not(windows),
    allow(dead_code, reason = "only the Windows spawn calls it")
)]
pub(crate) fn inherited_env() -> &'static [&'static str] {
    if cfg!(windows) {
        &WINDOWS_INHERITED_ENV
    } else {
        &POSIX_INHERITED_ENV
    }
}

/// The value a child will see for `name`: the server's configured `env` first, else the
/// parent's (`parent`), which the allow-list passes on. Windows compares names without regard
/// to ASCII case (`Path` is `PATH`); POSIX systems compare them exactly.
#[cfg_attr(
    not(windows),
    allow(dead_code, reason = "only the Windows spawn calls it")
)]
pub(crate) fn child_var(
    name: &str,
    configured: &BTreeMap<String, String>,
    parent: Option<OsString>,
) -> Option<OsString> {
    configured_var(name, configured, cfg!(windows)).or(parent)
}

/// The configured value of `name`, its name compared without regard to ASCII case when
/// `ignore_case`. If two spellings are configured, the last in order wins, as in std's
/// `Command::envs` (which sets them in turn).
fn configured_var(
    name: &str,
    configured: &BTreeMap<String, String>,
    ignore_case: bool,
) -> Option<OsString> {
    configured
        .iter()
        .rev()
        .find(|(k, _)| {
            if ignore_case {
                k.eq_ignore_ascii_case(name)
            } else {
                k.as_str() == name
            }
        })
        .map(|(_, v)| OsString::from(v))
}

/// What a resolved command is, which decides how it is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A program, started by `CreateProcess` itself.
    Program,
    /// A `.bat` or `.cmd` file, which std starts through cmd.exe: its arguments must pass
    /// [`check_batch_args`].
    Batch,
}

/// A command found: the file to start and how it is started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// The file, as found (a `PATH` entry or the server's `cwd` joined with the command).
    pub(crate) path: PathBuf,
    /// Whether it is a batch file.
    pub(crate) kind: Kind,
}

/// Finds the file a command names, by the Windows rules:
///
/// - A command with a path separator (`\` or `/`) or a drive (`C:`) is a path. A relative one is
///   taken relative to `cwd` (the server's working directory) when there is one: that is what
///   the same config means on Unix, where the program is looked up after the child changed
///   directory, while `CreateProcess` would take it relative to ours.
/// - Otherwise each directory of `path` (the `PATH` the child will see: `;`-separated, quotes
///   around an entry allowed, empty entries skipped) is searched in order.
/// - A command that ends in a `PATHEXT` extension (`npx.cmd`, `node.exe`) is looked for as is;
///   any other gets each extension appended in `PATHEXT` order (`npx` finds `npx.cmd` and never
///   the extension-less `npx` shell script npm installs beside it). `PATHEXT` defaults to
///   `.COM;.EXE;.BAT;.CMD`; only those four kinds can be started without a shell, so other
///   entries are skipped, and a command that ends in one (`server.js`) is refused with a hint.
///   Extensions compare case-insensitively. A path that has none of them is also tried as is
///   after the extensions (a program without an extension still runs).
///
/// Unlike cmd.exe, the current directory is never searched, and unlike `CreateProcess`
/// neither is our own program's directory: Rust's std stopped searching the current directory
/// for the same reason (a file planted in a project folder would run in place of the real
/// tool), and a server's command has nothing to do with where the client's program lives. The
/// Windows system folders are on the default `PATH`.
///
/// # Errors
///
/// [`LaunchError::BadCommand`] for an empty command, one that ends in a separator (or in `.`,
/// `..`: a folder, once Windows has normalised the name), or one whose
/// file name contains `"`, `:` or NUL (no Windows file name does; `:` names an alternate data
/// stream), [`LaunchError::NotAProgram`] for a script extension, [`LaunchError::NotInPath`] and
/// [`LaunchError::NoSuchFile`] when nothing is found.
#[cfg_attr(
    not(windows),
    allow(dead_code, reason = "only the Windows spawn calls it")
)]
pub(crate) fn resolve_command(
    command: &str,
    cwd: Option<&Path>,
    path: Option<&OsStr>,
    pathext: Option<&OsStr>,
    is_file: &dyn Fn(&Path) -> bool,
) -> Result<Resolved, LaunchError> {
    let bad = |reason| LaunchError::BadCommand {
        command: command.to_owned(),
        reason,
    };
    if command.is_empty() {
        return Err(bad(BadCommand::Empty));
    }
    let name = file_name(command);
    // `.`, `..` and the like name a folder once Windows drops trailing dots and spaces:
    // `run.bat\.` would start `run.bat`, a batch file its name does not show.
    if name.trim_end_matches(['.', ' ']).is_empty() {
        return Err(bad(BadCommand::NoFileName));
    }
    if let Some(c) = name.chars().find(|c| matches!(c, '"' | ':' | '\0')) {
        return Err(bad(BadCommand::Character(c)));
    }
    let pathext = pathext.map(OsStr::to_string_lossy);
    let listed = extensions(pathext.as_deref().unwrap_or(DEFAULT_PATHEXT));
    let usable: Vec<&str> = listed
        .iter()
        .copied()
        .filter(|e| STARTABLE.iter().any(|s| s.eq_ignore_ascii_case(e)))
        .collect();
    if let Some(ext) = listed
        .iter()
        .find(|e| ends_with_ignore_case(name, e) && !usable.contains(e))
    {
        return Err(LaunchError::NotAProgram {
            command: command.to_owned(),
            extension: (*ext).to_owned(),
        });
    }
    let has_extension = usable.iter().any(|e| ends_with_ignore_case(name, e));
    let candidates = |base: OsString| -> Vec<OsString> {
        if has_extension {
            return vec![base];
        }
        usable
            .iter()
            .map(|e| {
                // Lower case, as the files are mostly named (`npx.cmd`): the same file on a
                // case-insensitive file system, and the name a message shows reads as listed.
                let mut c = base.clone();
                c.push(e.to_ascii_lowercase());
                c
            })
            .collect()
    };
    let found = |candidate: OsString| {
        let path = PathBuf::from(candidate);
        is_file(&path).then(|| Resolved {
            kind: kind_of(&path.to_string_lossy()),
            path,
        })
    };
    let shown = usable.join(";");

    if is_path(command) {
        let base = match cwd {
            Some(dir) if is_relative(command) => join(dir.as_os_str(), strip_dot(command)),
            _ => OsString::from(command),
        };
        let mut tries = candidates(base.clone());
        if !has_extension {
            tries.push(base.clone());
        }
        return tries
            .into_iter()
            .find_map(found)
            .ok_or_else(|| LaunchError::NoSuchFile {
                path: base.to_string_lossy().into_owned(),
                extensions: (!has_extension).then_some(shown),
            });
    }

    let path = path.map(OsStr::to_string_lossy);
    let dirs = path.as_deref().map(split_path).unwrap_or_default();
    dirs.iter()
        .flat_map(|dir| candidates(join(OsStr::new(dir), command)))
        .find_map(found)
        .ok_or_else(|| LaunchError::NotInPath {
            command: command.to_owned(),
            path_set: path.is_some(),
            extensions: shown,
        })
}

/// What follows the last separator (the whole command when there is none).
fn file_name(command: &str) -> &str {
    let name = command.rsplit(['\\', '/']).next().unwrap_or(command);
    // `C:npx.cmd`: a drive without a separator.
    if has_drive(name) {
        &name[2..]
    } else {
        name
    }
}

/// `C:` at the start.
fn has_drive(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

fn is_path(command: &str) -> bool {
    command.contains(['\\', '/']) || has_drive(command)
}

/// Relative to the current directory: no drive and no leading separator (`\x` is relative to
/// the current drive's root, `C:x` to drive C's current directory; both are left to Windows).
fn is_relative(command: &str) -> bool {
    !has_drive(command) && !command.starts_with(['\\', '/'])
}

/// `tools\x` for `.\tools\x`, so a path joined to the working directory reads as Windows
/// would normalise it.
fn strip_dot(mut command: &str) -> &str {
    while let Some(rest) = command
        .strip_prefix(".\\")
        .or_else(|| command.strip_prefix("./"))
    {
        command = rest;
    }
    command
}

fn join(dir: &OsStr, name: &str) -> OsString {
    let mut out = dir.to_os_string();
    let text = dir.to_string_lossy();
    if !text.is_empty() && !text.ends_with(['\\', '/']) {
        out.push("\\");
    }
    out.push(name);
    out
}

/// `PATH`'s directories: `;` separates them except inside quotes, which are removed (Windows
/// allows `"C:\Program Files\x";C:\y`); empty entries are skipped.
fn split_path(path: &str) -> Vec<String> {
    let mut dirs = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in path.chars() {
        match c {
            '"' => quoted = !quoted,
            ';' if !quoted => dirs.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    dirs.push(current);
    dirs.retain(|d| !d.is_empty());
    dirs
}

/// `PATHEXT`'s extensions, in order: each must start with `.`; others and empty ones are
/// skipped, and an empty list means the default.
fn extensions(pathext: &str) -> Vec<&str> {
    let listed: Vec<&str> = pathext
        .split(';')
        .map(str::trim)
        .filter(|e| e.len() > 1 && e.starts_with('.'))
        .collect();
    if listed.is_empty() {
        extensions(DEFAULT_PATHEXT)
    } else {
        listed
    }
}

fn ends_with_ignore_case(s: &str, suffix: &str) -> bool {
    s.len() >= suffix.len()
        && s.is_char_boundary(s.len() - suffix.len())
        && s[s.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
}

/// A batch file by std's rule: the name ends in `.bat` or `.cmd`, any case, once Windows has
/// dropped the trailing dots and spaces it ignores in a file name (`x.cmd.` is `x.cmd`; std
/// decides on the name so normalised, and so must we, or an argument std passes through cmd.exe
/// would miss our check).
fn kind_of(path: &str) -> Kind {
    let name = path.trim_end_matches(['.', ' ']);
    if ends_with_ignore_case(name, ".bat") || ends_with_ignore_case(name, ".cmd") {
        Kind::Batch
    } else {
        Kind::Program
    }
}

/// Refuses the arguments of a batch file that cmd.exe cannot be given safely.
///
/// Rust's std (since 1.77.2, the fix for CVE-2024-24576, "BatBadBut") runs a `.bat` or `.cmd`
/// through `cmd.exe /e:ON /v:OFF /d /c` and escapes each argument for it; we rely on that
/// escaping rather than a second one of our own, and refuse first, with the argument's
/// position, what std refuses with a bare `InvalidInput` or what no escaping makes safe:
///
/// - NUL (std: "nul byte found"), a newline or a carriage return (std refuses them: cmd.exe
///   ends the command there and would run the rest of the line as commands of its own);
/// - Ctrl-Z (0x1A), beyond std: cmd.exe reads it as an end of line when it reads a command.
///
/// Allowed, because std's escaping makes them literal: `"` (doubled inside quotes), `&|<>^()`
/// and spaces (inside quotes), a trailing backslash (doubled before the closing quote), `%`
/// (std writes `%%cd:~,%` before it, an empty substring of `%cd%` that keeps cmd.exe from
/// reading `%PATH%` as a variable) and `!` (`/v:OFF` turns delayed expansion off). What a
/// script then does with its arguments is its own affair: one that turns delayed expansion on
/// itself, or passes `%*` through `call` (which expands `%` again), can still read `!X!` or
/// `%X%` in an argument as a variable; the launchers of npm and uv (`npx.cmd`, `uvx`) do
/// neither.
///
/// # Errors
///
/// [`LaunchError::BatchArgument`] naming the first refused argument (counted from 1) and why.
#[cfg_attr(
    not(windows),
    allow(dead_code, reason = "only the Windows spawn calls it")
)]
pub(crate) fn check_batch_args(args: &[String]) -> Result<(), LaunchError> {
    for (i, arg) in args.iter().enumerate() {
        let problem = arg.chars().find_map(|c| match c {
            '\0' => Some(BatchArgProblem::Nul),
            '\n' => Some(BatchArgProblem::Newline),
            '\r' => Some(BatchArgProblem::CarriageReturn),
            '\x1a' => Some(BatchArgProblem::CtrlZ),
            _ => None,
        });
        if let Some(problem) = problem {
            return Err(LaunchError::BatchArgument {
                number: i + 1,
                problem,
            });
        }
    }
    Ok(())
}

/// The command line std gives cmd.exe for `script` and `args` (as `CreateProcess`'s
/// `lpCommandLine`; the program it starts is `cmd.exe` from the system folder), for messages
/// and tests. It follows std's `make_bat_command_line` (without `force_quotes`, which we never
/// set): the whole line after `/c` in one pair of quotes, the script in its own, and each
/// argument quoted when it is empty, ends in `\`, or holds an ASCII character other than a
/// letter, a digit or one of ``#$*+-./:?@\_``, or a control character; inside, `"` is doubled,
/// backslashes before a `"` are doubled, and `%` is preceded by `%%cd:~,`.
///
/// # Errors
///
/// What [`check_batch_args`] refuses, and a script whose name contains `"` or ends in `\`
/// ([`LaunchError::BadCommand`]: std refuses them, as no Windows file name is so made).
#[cfg_attr(
    not(test),
    allow(dead_code, reason = "for messages; the spawn relies on std's own")
)]
pub(crate) fn batch_command_line(script: &str, args: &[String]) -> Result<String, LaunchError> {
    let bad = |reason| LaunchError::BadCommand {
        command: script.to_owned(),
        reason,
    };
    if script.contains('"') {
        return Err(bad(BadCommand::Character('"')));
    }
    if script.ends_with('\\') {
        return Err(bad(BadCommand::NoFileName));
    }
    check_batch_args(args)?;
    let mut line = format!("cmd.exe /e:ON /v:OFF /d /c \"\"{script}\"");
    for arg in args {
        line.push(' ');
        push_batch_arg(&mut line, arg);
    }
    line.push('"');
    Ok(line)
}

/// One argument, escaped as std escapes it for cmd.exe.
fn push_batch_arg(line: &mut String, arg: &str) {
    const PLAIN: &str = r"#$*+-./:?@\_";
    let quote = arg.is_empty()
        || arg.ends_with('\\')
        || arg.chars().any(|c| {
            (c.is_ascii() && !c.is_ascii_alphanumeric() && !PLAIN.contains(c)) || c.is_control()
        });
    if quote {
        line.push('"');
    }
    let mut backslashes = 0;
    for c in arg.chars() {
        match c {
            '\\' => backslashes += 1,
            '"' => {
                // The backslashes before a quote escape it for the program's own parser:
                // doubled, they stay backslashes; the quote is doubled for cmd.exe.
                line.extend(std::iter::repeat_n('\\', backslashes));
                line.push('"');
                backslashes = 0;
            }
            '%' => {
                line.push_str("%%cd:~,");
                backslashes = 0;
            }
            _ => backslashes = 0,
        }
        line.push(c);
    }
    if quote {
        line.extend(std::iter::repeat_n('\\', backslashes));
        line.push('"');
    }
}

/// Why a command could not be started on Windows before any process was created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LaunchError {
    /// The command cannot name a file.
    #[error("`{command}` {reason}")]
    BadCommand {
        /// The command as configured.
        command: String,
        /// What is wrong with it.
        reason: BadCommand,
    },
    /// A command without a path was not found in any `PATH` directory.
    #[error("{}", not_in_path(command, *path_set, extensions))]
    NotInPath {
        /// The command as configured.
        command: String,
        /// Whether the child has a `PATH` at all.
        path_set: bool,
        /// The extensions tried, `;`-separated.
        extensions: String,
    },
    /// A command with a path names no file.
    #[error("`{path}` does not exist{}", tried(extensions.as_deref()))]
    NoSuchFile {
        /// The path looked at (joined with the working directory when relative).
        path: String,
        /// The extensions also tried, `;`-separated, when the path had none.
        extensions: Option<String>,
    },
    /// The command ends in a `PATHEXT` extension that only a shell's file association opens.
    #[error(
        "`{command}` is a `{extension}` file, which Windows opens by its file association, not \
         as a program: make its interpreter the command and the file its first argument"
    )]
    NotAProgram {
        /// The command as configured.
        command: String,
        /// Its extension, as `PATHEXT` spells it.
        extension: String,
    },
    /// An argument of a batch file that cmd.exe cannot be given safely.
    #[error("argument {number} of a batch file {problem}, which cmd.exe cannot be given safely")]
    BatchArgument {
        /// Its position in the configured `args`, counted from 1.
        number: usize,
        /// What it contains.
        problem: BatchArgProblem,
    },
}

fn not_in_path(command: &str, path_set: bool, extensions: &str) -> String {
    if path_set {
        format!("`{command}` was not found in PATH with any PATHEXT extension ({extensions})")
    } else {
        format!("`{command}` was not found: PATH is not set")
    }
}

fn tried(extensions: Option<&str>) -> String {
    extensions
        .map(|e| format!(", with or without a PATHEXT extension ({e})"))
        .unwrap_or_default()
}

/// What is wrong with a command that cannot name a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BadCommand {
    /// The command is empty.
    Empty,
    /// It ends in a separator.
    NoFileName,
    /// Its file name holds a character no Windows file name holds.
    Character(char),
}

impl fmt::Display for BadCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadCommand::Empty => f.write_str("is empty"),
            BadCommand::NoFileName => f.write_str("names a folder, not a file"),
            BadCommand::Character(c) => {
                write!(f, "contains {c:?}, which no Windows file name does")
            }
        }
    }
}

/// What a refused batch-file argument contains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchArgProblem {
    /// A NUL character.
    Nul,
    /// A line feed.
    Newline,
    /// A carriage return.
    CarriageReturn,
    /// A Ctrl-Z (0x1A).
    CtrlZ,
}

impl fmt::Display for BatchArgProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BatchArgProblem::Nul => "contains a NUL character",
            BatchArgProblem::Newline => "contains a newline",
            BatchArgProblem::CarriageReturn => "contains a carriage return",
            BatchArgProblem::CtrlZ => "contains a Ctrl-Z (0x1A)",
        })
    }
}

impl LaunchError {
    /// The crate's error for it: [`Error::Spawn`] naming the server and the command line, with
    /// this as the OS error's message (kind `NotFound` when nothing was found, `InvalidInput`
    /// otherwise, as std would report either).
    #[cfg_attr(
        not(windows),
        allow(dead_code, reason = "only the Windows spawn calls it")
    )]
    pub(crate) fn into_spawn_error(self, server: &str, command_line: String) -> Error {
        let kind = match self {
            LaunchError::NotInPath { .. } | LaunchError::NoSuchFile { .. } => {
                std::io::ErrorKind::NotFound
            }
            _ => std::io::ErrorKind::InvalidInput,
        };
        Error::Spawn {
            server: server.to_owned(),
            command: command_line,
            source: std::io::Error::new(kind, self),
        }
    }
}

#[cfg(test)]
mod tests;
