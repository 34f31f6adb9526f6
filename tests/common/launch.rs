//! Starts a real peer (installed by `peers.rs`) on loopback and waits until it says which
//! port it listens on; the peer is killed and reaped on drop.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
    // From here on an early return kills and reaps the child.
    let mut peer = Peer {
        child,
        port: 0,
        drain: None,
    };
    let (tx, rx) = crossbeam_channel::unbounded::<String>();
    let tx2 = tx.clone();
    let err_thread = std::thread::Builder::new()
        .name("peer-stderr".into())
        .spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx2.send(line);
            }
        })
        .map_err(|e| format!("could not spawn a reader thread: {e}"))?;
    let drain = std::thread::Builder::new()
        .name("peer-stdout".into())
        .spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
            let _ = err_thread.join();
        })
        .map_err(|e| format!("could not spawn a reader thread: {e}"))?;
    peer.drain = Some(drain);
    let deadline = Instant::now() + wait;
    let mut seen = Vec::new();
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
