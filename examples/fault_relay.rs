//! A stdio MCP server that is only a pipe, for the fault matrix (`tests/fault_matrix.rs`): it
//! connects to the loopback address given as its one argument, writes its process id there as
//! the first line, then copies its stdin to the socket and the socket to its stdout, byte for
//! byte as they come. The test plays the server on the other end, so the stdio transport meets
//! the same scripted peer as the remote transports.
//!
//! When stdin ends, the socket's sending side is shut (the peer sees the close and decides
//! whether to let the process go); when the peer closes the socket, the process exits.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};

fn main() {
    let Some(addr) = std::env::args().nth(1) else {
        eprintln!("usage: fault_relay ADDR");
        std::process::exit(2);
    };
    let mut sock = match TcpStream::connect(&addr) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fault_relay: cannot reach {addr}: {e}");
            std::process::exit(1);
        }
    };
    let _ = sock.set_nodelay(true);
    if writeln!(sock, "{}", std::process::id()).is_err() {
        std::process::exit(1);
    }
    let mut up = sock.try_clone().expect("a second handle on the socket");
    // Not joined: it may be blocked on stdin when the peer ends the process, which exits below.
    let _stdin = std::thread::Builder::new()
        .name("relay-stdin".into())
        .spawn(move || {
            let mut buf = [0u8; 8192];
            let mut stdin = std::io::stdin().lock();
            while let Ok(n @ 1..) = stdin.read(&mut buf) {
                if up.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            let _ = up.shutdown(Shutdown::Write);
        })
        .expect("spawn the stdin thread");
    let mut out = std::io::stdout().lock();
    let mut buf = [0u8; 8192];
    while let Ok(n @ 1..) = sock.read(&mut buf) {
        if out.write_all(&buf[..n]).and_then(|()| out.flush()).is_err() {
            break;
        }
    }
    std::process::exit(0);
}
