//! Sandboxed stdio servers (Linux, Landlock): the fixture server's normal tools work in a
//! sandbox, and each escape its `escape` tool tries is refused there and succeeds without one.
#![cfg(target_os = "linux")]

mod common;

use mcp_blocking::config::{ConfigErrorKind, Sandbox};
use mcp_blocking::{Client, Error, ServerConfig};
use serde_json::json;

fn fixture(sandbox: Option<Sandbox>) -> ServerConfig {
    let c = ServerConfig::stdio("sbx", common::fixture::path());
    match sandbox {
        Some(s) => c.with_sandbox(s),
        None => c,
    }
}

#[test]
fn a_sandboxed_server_answers_and_reports_what_was_applied() {
    let client = Client::connect(fixture(Some(Sandbox::new()))).unwrap();
    let text = client
        .call_tool("echo", json!({"text": "hi"}))
        .unwrap()
        .text();
    assert_eq!(text, "hi");
    let report = client.sandbox_report().expect("a report");
    assert!(report.is_complete(), "{report:?}");
    assert!(report.landlock_abi.unwrap() >= 6, "{report:?}");
    assert!(
        report
            .applied
            .iter()
            .any(|a| a.contains("filesystem rules")),
        "{report:?}"
    );
    assert!(
        report.applied.iter().any(|a| a.contains("TCP: no connect")),
        "{report:?}"
    );
    client.close().unwrap();
    let plain = Client::connect(fixture(None)).unwrap();
    assert!(plain.sandbox_report().is_none());
}

#[test]
fn the_server_has_a_private_temporary_folder_removed_when_it_ends() {
    let client = Client::connect(fixture(Some(Sandbox::new()))).unwrap();
    let report = client.sandbox_report().unwrap();
    let temp = report
        .applied
        .iter()
        .find_map(|a| a.strip_prefix("a private temporary folder (TMPDIR): "))
        .map(std::path::PathBuf::from)
        .expect("a temporary folder");
    let file = temp.join("work.txt");
    let wrote = escape(&client, json!({"what": "write", "path": file}));
    assert!(wrote.starts_with("ok"), "{wrote}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "escaped");
    client.close().unwrap();
    assert!(!temp.exists(), "{} is left", temp.display());
}

#[test]
fn a_command_outside_the_granted_paths_does_not_start() {
    let e = Client::connect(fixture(Some(Sandbox::new().without_default_paths()))).unwrap_err();
    match &e {
        Error::Spawn { source, .. } => {
            assert!(source.to_string().contains("in its sandbox"), "{e}");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn a_denied_path_inside_a_granted_one_is_refused_before_spawning() {
    let dir = common::tempdir::TempDir::new("sbx-deny");
    let e = Client::connect(fixture(Some(
        Sandbox::new()
            .allow_write(dir.path())
            .deny_read(dir.path().join("secret")),
    )))
    .unwrap_err();
    match e {
        Error::Config(c) => {
            assert_eq!(c.kind, ConfigErrorKind::Unenforceable);
            assert_eq!(c.server.as_deref(), Some("sbx"));
        }
        other => panic!("{other}"),
    }
}

/// What the fixture's `escape` tool says of one attempt: `ok: ...` or `refused: ...`.
fn escape(client: &Client, args: serde_json::Value) -> String {
    let r = client.call_tool("escape", args).expect("escape answers");
    assert_ne!(r.is_error, Some(true), "{}", r.text());
    r.text()
}

/// Runs `attempt` against the fixture unconfined and in `sandbox`: it must succeed without the
/// sandbox (so that the test can fail) and be refused within it with `errno`.
fn escapes_only_without(sandbox: Sandbox, args: serde_json::Value, errno: &str) {
    let plain = Client::connect(fixture(None)).unwrap();
    let done = escape(&plain, args.clone());
    assert!(done.starts_with("ok"), "without a sandbox {args}: {done}");
    plain.close().unwrap();
    let boxed = Client::connect(fixture(Some(sandbox))).unwrap();
    let refused = escape(&boxed, args.clone());
    assert!(
        refused.starts_with("refused") && refused.contains(errno),
        "in a sandbox {args}: {refused}"
    );
    // The server's normal tools still work.
    assert_eq!(
        boxed
            .call_tool("echo", json!({"text": "still here"}))
            .unwrap()
            .text(),
        "still here"
    );
    boxed.close().unwrap();
}

#[test]
fn reading_outside_the_granted_paths_is_refused() {
    let dir = common::tempdir::TempDir::new("sbx-read");
    let secret = dir.file("secret.txt", "the key");
    escapes_only_without(
        Sandbox::new(),
        json!({"what": "read", "path": secret}),
        "errno 13",
    );
    // Granted, it is read.
    let boxed = Client::connect(fixture(Some(Sandbox::new().allow_read(dir.path())))).unwrap();
    assert_eq!(
        escape(&boxed, json!({"what": "read", "path": secret})),
        "ok: the key"
    );
}

#[test]
fn writing_outside_the_writable_paths_is_refused() {
    let readable = common::tempdir::TempDir::new("sbx-write-r");
    let writable = common::tempdir::TempDir::new("sbx-write-w");
    let target = readable.path().join("planted.txt");
    escapes_only_without(
        Sandbox::new()
            .allow_read(readable.path())
            .allow_write(writable.path()),
        json!({"what": "write", "path": target}),
        "errno 13",
    );
    std::fs::remove_file(&target).unwrap();
    let boxed = Client::connect(fixture(Some(
        Sandbox::new()
            .allow_read(readable.path())
            .allow_write(writable.path()),
    )))
    .unwrap();
    assert!(escape(&boxed, json!({"what": "write", "path": target})).starts_with("refused"));
    assert!(!target.exists());
    let inside = writable.path().join("ok.txt");
    assert!(escape(&boxed, json!({"what": "write", "path": inside})).starts_with("ok"));
    assert_eq!(std::fs::read_to_string(inside).unwrap(), "escaped");
}

#[test]
fn a_loopback_port_is_unreachable_without_network() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    escapes_only_without(
        Sandbox::new(),
        json!({"what": "connect", "port": port}),
        "errno 13",
    );
    drop(listener);
}

#[test]
fn the_client_cannot_be_signalled_from_the_sandbox() {
    escapes_only_without(Sandbox::new(), json!({"what": "signal"}), "errno 1)");
}

#[test]
fn an_abstract_socket_outside_the_sandbox_is_unreachable() {
    use std::os::linux::net::SocketAddrExt;
    let name = format!("mcp-blocking-sbx-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    // Refused twice over: the socket filter allows no Unix socket (EACCES), and the Landlock
    // scope no abstract socket outside the sandbox (EPERM).
    escapes_only_without(
        Sandbox::new(),
        json!({"what": "abstract", "name": name}),
        "errno 13",
    );
    drop(listener);
}

#[test]
fn a_datagram_is_refused_without_network() {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    escapes_only_without(
        Sandbox::new(),
        json!({"what": "udp", "port": port}),
        "errno 13",
    );
}

#[test]
fn a_socket_never_bound_cannot_listen() {
    // `listen` binds such a socket to a free port without Landlock's bind check.
    escapes_only_without(Sandbox::new(), json!({"what": "listen"}), "errno 13");
}

#[test]
fn tcp_fast_open_does_not_pass_the_connect_rule() {
    // `sendto` with `MSG_FASTOPEN` connects without Landlock's connect check.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let args = json!({"what": "fastopen", "port": port});
    // Clients may use Fast Open unless the host's sysctl turned it off (bit 1).
    let client_fastopen = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_fastopen")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .is_some_and(|v| v & 1 == 1);
    if client_fastopen {
        let plain = Client::connect(fixture(None)).unwrap();
        let done = escape(&plain, args.clone());
        assert!(done.starts_with("ok"), "without a sandbox: {done}");
        // The fixture waited for the handshake: the connection is queued.
        listener.accept().expect("the unconfined server connected");
        plain.close().unwrap();
    }
    let boxed = Client::connect(fixture(Some(Sandbox::new()))).unwrap();
    let refused = escape(&boxed, args);
    assert!(
        refused.starts_with("refused") && refused.contains("errno 13"),
        "in a sandbox: {refused}"
    );
    assert_eq!(
        listener.accept().map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "the sandboxed server connected"
    );
    boxed.close().unwrap();
}

/// A loopback HTTP server answering `200` to every request until dropped (then joined).
struct Upstream {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<usize>>,
}

impl Upstream {
    fn start() -> Upstream {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("upstream".into())
            .spawn(move || {
                let mut served = 0;
                for conn in listener.incoming() {
                    if flag.load(std::sync::atomic::Ordering::SeqCst) {
                        break;
                    }
                    let Ok(mut c) = conn else { continue };
                    c.set_read_timeout(Some(std::time::Duration::from_secs(5)))
                        .unwrap();
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match c.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let _ = c.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                    );
                    served += 1;
                }
                served
            })
            .unwrap();
        Upstream {
            port,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops and joins the server; how many requests it answered.
    fn finish(mut self) -> usize {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
        self.thread.take().unwrap().join().unwrap()
    }
}

#[test]
fn only_the_listed_hosts_are_reached_and_only_through_the_proxy() {
    let up = Upstream::start();
    let port = up.port;
    // Unconfined, the server reaches the port directly.
    let plain = Client::connect(fixture(None)).unwrap();
    assert!(escape(&plain, json!({"what": "connect", "port": port})).starts_with("ok"));
    plain.close().unwrap();

    let boxed = Client::connect(fixture(Some(
        Sandbox::new().allow_domain(&format!("localhost:{port}")),
    )))
    .unwrap();
    let report = boxed.sandbox_report().unwrap();
    let proxy = report.proxy.expect("a proxy");
    assert!(proxy.ip().is_loopback());
    // The listed host, through the proxy: plain HTTP and a CONNECT tunnel.
    let via = |host: &str, tunnel: bool| {
        let mut args = json!({"what": "proxy", "host": host, "port": port});
        if tunnel {
            args["via"] = json!("connect");
        }
        escape(&boxed, args)
    };
    assert!(
        via("localhost", false).starts_with("ok: HTTP/1.1 200"),
        "{}",
        via("localhost", false)
    );
    assert!(via("localhost", true).starts_with("ok: HTTP/1.1 200"));
    // The same port by another name, not listed: refused by the proxy.
    let refused = via("127.0.0.1", false);
    assert!(refused.starts_with("refused: HTTP/1.1 403"), "{refused}");
    assert!(via("127.0.0.1", true).starts_with("refused: HTTP/1.1 403"));
    // And directly, past the proxy: refused by Landlock.
    let direct = escape(&boxed, json!({"what": "connect", "port": port}));
    assert!(
        direct.starts_with("refused") && direct.contains("errno 13"),
        "{direct}"
    );
    boxed.close().unwrap();
    // The proxy is gone with the client.
    assert!(
        std::net::TcpStream::connect(proxy).is_err(),
        "the proxy still listens"
    );
    assert_eq!(
        up.finish(),
        2 + 1,
        "two requests through the proxy, one direct connect"
    );
}

/// Whether the process runs as root (whom Linux exempts from the process limit).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

#[test]
fn a_process_limit_asked_for_by_root_fails_closed_or_is_reported_as_best_effort() {
    if !is_root() {
        // Not root: applied, and said so.
        let c = Client::connect(fixture(Some(Sandbox::new().max_processes(64)))).unwrap();
        let report = c.sandbox_report().unwrap();
        assert!(
            report.applied.iter().any(|a| a.contains("processes ≤ 64")),
            "{report:?}"
        );
        return;
    }
    let e = Client::connect(fixture(Some(Sandbox::new().max_processes(64)))).unwrap_err();
    match &e {
        Error::Config(c) => {
            assert_eq!(c.kind, ConfigErrorKind::Unenforceable);
            assert!(c.message.contains("RLIMIT_NPROC"), "{e}");
        }
        other => panic!("{other}"),
    }
    let c = Client::connect(fixture(Some(
        Sandbox::new().max_processes(64).best_effort(),
    )))
    .unwrap();
    let report = c.sandbox_report().unwrap();
    assert!(!report.is_complete());
    assert!(report.not_applied[0].contains("RLIMIT_NPROC"), "{report:?}");
    // The rest is applied all the same.
    assert!(
        report
            .applied
            .iter()
            .any(|a| a.contains("filesystem rules")),
        "{report:?}"
    );
}

/// Drops the calling thread (not the process: the raw system call, not libc's wrapper, which
/// would change every thread) to the user `nobody`, so that the process limit binds.
fn become_nobody_on_this_thread() {
    const NOBODY: libc::c_long = 65534;
    // SAFETY: plain system calls with integer arguments, on this thread's credentials only.
    #[allow(unsafe_code)]
    unsafe {
        assert_eq!(
            libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()),
            0
        );
        assert_eq!(
            libc::syscall(libc::SYS_setresgid, NOBODY, NOBODY, NOBODY),
            0
        );
        assert_eq!(
            libc::syscall(libc::SYS_setresuid, NOBODY, NOBODY, NOBODY),
            0
        );
    }
}

#[test]
fn forking_past_the_process_limit_is_refused() {
    // The limit counts the user's processes, and root has none: the attempt runs as `nobody`
    // on a thread of its own (when the tests run as root) or as the user.
    std::thread::spawn(|| {
        if is_root() {
            become_nobody_on_this_thread();
        }
        escapes_only_without(
            Sandbox::new().max_processes(8),
            json!({"what": "fork", "count": 16}),
            "errno 11",
        );
    })
    .join()
    .unwrap();
}

#[test]
fn a_limit_above_the_clients_own_is_held_at_the_clients() {
    // Above the hard limit (and the kernel's `nr_open`), the child could not set it: the
    // server starts held at the client's own hard limit, and the report says so.
    let c = Client::connect(fixture(Some(Sandbox::new().max_open_files(1 << 40)))).unwrap();
    assert_eq!(
        c.call_tool("echo", json!({"text": "up"})).unwrap().text(),
        "up"
    );
    let report = c.sandbox_report().unwrap();
    assert!(
        report
            .applied
            .iter()
            .any(|a| a.starts_with("open files ≤") && a.contains("the client's own hard limit")),
        "{report:?}"
    );
}
