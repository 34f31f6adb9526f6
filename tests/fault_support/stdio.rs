//! The stdio peer: the client starts the `fault_relay` example, which connects here, says its
//! process id, and then pipes its stdin and stdout through the socket, so the peer is in this
//! process like the others. Messages are lines. When the client closes the relay's stdin, the
//! peer lets the process go (closes the socket) unless the plan stalls `stdin-eof`: then it
//! keeps it alive, half a line or a trickle written, until the client ends it.

use std::io::{BufRead, BufReader};
use std::net::{Shutdown, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crossbeam_channel::Sender;
use serde_json::{json, Value};

use super::brain::{decide, Decision};
use super::wire::{Out, Writer};
use super::{Acceptor, Plan, Shared};

pub struct StdioPeer {
    pub shared: Arc<Shared>,
    acceptor: Acceptor,
}

/// The relay executable (`examples/fault_relay.rs`), next to the test's `deps/` folder.
///
/// # Panics
/// When it has not been built (`cargo build --example fault_relay`).
pub fn relay_path() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test executable");
        let profile = exe
            .parent()
            .and_then(|deps| deps.parent())
            .expect("tests live in <target>/<profile>/deps/");
        let path: PathBuf = profile
            .join("examples")
            .join(format!("fault_relay{}", std::env::consts::EXE_SUFFIX));
        assert!(
            path.is_file(),
            "{} is missing: run `cargo build --example fault_relay` first (a plain `cargo test` \
             builds it)",
            path.display()
        );
        path.to_string_lossy().into_owned()
    })
}

fn line(v: &Value) -> Vec<u8> {
    let mut l = v.to_string().into_bytes();
    l.push(b'\n');
    l
}

impl StdioPeer {
    pub fn start(plan: Plan) -> StdioPeer {
        let shared = Shared::new(plan);
        let sh = shared.clone();
        let acceptor = Acceptor::start("stdio", &shared, move |n, stream| serve(&sh, n, stream));
        StdioPeer { shared, acceptor }
    }

    /// The relay's command line: the program and its one argument.
    pub fn command(&self) -> (String, String) {
        (relay_path().to_owned(), self.acceptor.addr.to_string())
    }
}

fn serve(shared: &Arc<Shared>, n: usize, stream: TcpStream) {
    let Ok(read) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read);
    let mut pid = String::new();
    if reader.read_line(&mut pid).unwrap_or(0) == 0 {
        return;
    }
    if let Ok(pid) = pid.trim().parse() {
        shared.add_pid(pid);
    }
    let Ok(w) = stream.try_clone() else { return };
    let writer = Writer::start(shared, format!("fault-stdio-{n}-w"), w);
    read_loop(shared, &mut reader, &writer.tx);
    // stdin is closed: the client is closing the server.
    if shared.pseudo("stdin-eof") {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "still here ".repeat(10)}});
        let _ = writer.tx.send(Out::Stall(line(&note)));
    } else {
        writer.gone.store(true, Ordering::SeqCst);
        let _ = stream.shutdown(Shutdown::Both);
    }
    writer.finish();
}

fn read_loop(shared: &Shared, reader: &mut impl BufRead, tx: &Sender<Out>) {
    let mut buf = String::new();
    loop {
        buf.clear();
        match reader.read_line(&mut buf) {
            Ok(1..) if buf.ends_with('\n') => {}
            _ => return,
        }
        let msg: Value = serde_json::from_str(buf.trim()).unwrap_or(Value::Null);
        let out = match decide(shared, &msg) {
            Decision::Ignore | Decision::Expire => continue,
            Decision::Answer(v) => Out::Now(Duration::ZERO, line(&v)),
            Decision::Later(d, v) => Out::Now(d, line(&v)),
            Decision::Stall(v) => Out::Stall(line(&v)),
        };
        if tx.send(out).is_err() {
            return;
        }
    }
}
