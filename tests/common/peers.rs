//! Real MCP peer servers for tests, installed on first use under `target/peers/`:
//!
//! | peer | installed into | how |
//! |---|---|---|
//! | `@modelcontextprotocol/server-everything`, `@modelcontextprotocol/server-filesystem` | `target/peers/npm` | `npm install --prefix` |
//! | the Python `mcp` SDK | `target/peers/py` | `python3 -m venv`, then `pip install` |
//!
//! Each install is done in a scratch directory and renamed into place with a marker file naming
//! the pinned versions, so a half-finished install is never used, tests running in parallel
//! (threads or processes) never see one another's work in progress, and a later run reuses the
//! finished one. A missing `npm`/`node`/`python3`, or a failed install, panics with a message
//! naming what is missing and the command that failed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use mcp_blocking::ServerConfig;

/// The npm packages, pinned so that a test run is reproducible; bump deliberately.
pub const NPM_PACKAGES: [&str; 2] = [
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/server-filesystem@2026.8.31",
];

/// The Python SDK, pinned likewise.
pub const PY_PACKAGES: [&str; 1] = ["mcp==2.3.0"];

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

/// The installed npm peers.
#[derive(Debug)]
pub struct NpmPeers {
    root: PathBuf,
}

impl NpmPeers {
    /// The directory of an installed package, e.g. `@modelcontextprotocol/server-everything`.
    pub fn package_dir(&self, package: &str) -> PathBuf {
        self.root.join("node_modules").join(package)
    }

    /// `server-everything` in stdio mode.
    pub fn everything(&self) -> ServerConfig {
        let entry = self
            .package_dir("@modelcontextprotocol/server-everything")
            .join("dist/index.js");
        ServerConfig::stdio("everything", "node")
            .args([path_str(&entry), "stdio".to_owned()])
            .timeout_secs(PEER_TIMEOUT_SECS)
    }

    /// `server-filesystem` allowed to reach `dir` only.
    pub fn filesystem(&self, dir: &Path) -> ServerConfig {
        let entry = self
            .package_dir("@modelcontextprotocol/server-filesystem")
            .join("dist/index.js");
        ServerConfig::stdio("filesystem", "node")
            .args([path_str(&entry), path_str(dir)])
            .timeout_secs(PEER_TIMEOUT_SECS)
    }
}

/// The Python virtualenv with the `mcp` SDK.
#[derive(Debug)]
pub struct PythonPeers {
    venv: PathBuf,
}

impl PythonPeers {
    /// The virtualenv's interpreter.
    pub fn python(&self) -> PathBuf {
        self.venv.join("bin").join("python")
    }

    /// A server script of `tests/peers/` run by the virtualenv's interpreter.
    pub fn script(&self, name: &str, script: &str) -> ServerConfig {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/peers")
            .join(script);
        ServerConfig::stdio(name, path_str(&self.python()))
            .args(["-u".to_owned(), path_str(&path)])
            .timeout_secs(PEER_TIMEOUT_SECS)
    }
}

/// The npm peers, installed on first use.
///
/// # Panics
/// When `node` or `npm` is missing or `npm install` fails; the message says which and how.
pub fn npm() -> &'static NpmPeers {
    static NPM: OnceLock<Result<NpmPeers, String>> = OnceLock::new();
    match NPM.get_or_init(|| {
        install("npm", &NPM_PACKAGES, check_node, |scratch| {
            let mut cmd = Command::new("npm");
            cmd.arg("install")
                .arg("--prefix")
                .arg(scratch)
                .args(["--no-audit", "--no-fund", "--no-update-notifier"])
                .args(NPM_PACKAGES);
            run(cmd)
        })
        .map(|root| NpmPeers { root })
    }) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

/// The Python peers, installed on first use.
///
/// # Panics
/// When `python3` (or its `venv` module) is missing or `pip install` fails.
pub fn python() -> &'static PythonPeers {
    static PY: OnceLock<Result<PythonPeers, String>> = OnceLock::new();
    match PY.get_or_init(|| {
        install("py", &PY_PACKAGES, check_python, |scratch| {
            let mut venv = Command::new("python3");
            venv.args(["-m", "venv"]).arg(scratch);
            run(venv).map_err(|e| {
                format!("{e}\n(on Debian or Ubuntu the venv module comes with `apt-get install python3-venv`)")
            })?;
            let mut pip = Command::new(scratch.join("bin/python"));
            pip.args(["-m", "pip", "install", "--disable-pip-version-check", "--quiet"])
                .args(PY_PACKAGES);
            run(pip)?;
            let mut check = Command::new(scratch.join("bin/python"));
            check.args(["-c", "import mcp"]);
            run(check)
        })
        .map(|venv| PythonPeers { venv })
    }) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

fn check_node() -> Result<(), String> {
    require(
        "node",
        "Node.js (https://nodejs.org, or `apt-get install nodejs npm`)",
    )?;
    require("npm", "npm (comes with Node.js; or `apt-get install npm`)")
}

fn check_python() -> Result<(), String> {
    require(
        "python3",
        "Python 3 (`apt-get install python3 python3-venv`)",
    )
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

/// Installs into `peers/NAME` unless an install of `packages` is already there: `fill` works in a
/// scratch directory, which is then renamed into place.
fn install(
    name: &str,
    packages: &[&str],
    check_tools: fn() -> Result<(), String>,
    fill: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<PathBuf, String> {
    let peers = peers_dir();
    let dest = peers.join(name);
    let wanted = packages.join("\n");
    let installed =
        |dir: &Path| std::fs::read_to_string(dir.join(MARKER)).is_ok_and(|m| m == wanted);
    if installed(&dest) {
        return Ok(dest);
    }
    check_tools()?;
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
        packages.join(", ")
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
    // these packages always has the marker, so this never removes another run's good work).
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
