//! The loopback listener (RFC 8252) that receives the browser's redirect after a sign-in.
//!
//! One thread, no thread per connection: the listener and every connection it has accepted are
//! polled together, so a local program that connects and stalls, or trickles a byte now and
//! then, cannot hold back the browser's redirect, and the wait ends at its deadline whatever the
//! connections do.
//!
//! ```text
//!  accept ──> reading (total deadline 10 s, at most 16 KiB of line and headers)
//!               ├─ deadline passed, closed, oversized, not a GET ──> closed (431 / 404)
//!               └─ GET target ─┬─ /callback, wanted ──> 200 page, returned
//!                              ├─ /callback, not wanted (state) ──> 400 page, closed
//!                              └─ other path ──> 404, closed
//! ```

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use super::{AuthError, AuthErrorKind};

/// The path the loopback listener answers on.
const CALLBACK_PATH: &str = "/callback";

/// A one-shot HTTP listener on `127.0.0.1` that waits for the browser's redirect.
///
/// It reads every connection at once without a thread each (up to 16; a 17th replaces the
/// oldest), so a local program that connects and stalls, or sends a byte now and then, cannot
/// keep the browser's redirect from being read. A connection has 10 s in all to send its request
/// line and headers, at most 16 KiB of them, or it is closed. The wait ends at its deadline
/// whatever the connections do.
///
/// ```no_run
/// use std::time::Duration;
/// use mcp_blocking::auth::LoopbackListener;
/// let listener = LoopbackListener::bind(0)?;
/// println!("redirect_uri = {}", listener.redirect_uri());
/// let redirect = listener.wait(Duration::from_secs(120))?;
/// # Ok::<(), String>(())
/// ```
#[derive(Debug)]
pub struct LoopbackListener {
    listener: TcpListener,
    port: u16,
}

/// How long one connection may take to send its request line and headers, in all.
const CONNECTION_DEADLINE: Duration = Duration::from_secs(10);

/// The most a request's line and headers may hold.
const MAX_REQUEST_BYTES: usize = 16 * 1024;

/// How many connections are read at once; a new one beyond this replaces the oldest.
const MAX_CONNECTIONS: usize = 16;

impl LoopbackListener {
    /// Binds `127.0.0.1:port` (0: a random free port).
    ///
    /// # Errors
    /// An [`AuthError`] of kind [`AuthErrorKind::Listen`] when the port cannot be bound.
    pub fn bind(port: u16) -> Result<LoopbackListener, AuthError> {
        let listen = |detail: String| AuthError::new(AuthErrorKind::Listen, detail);
        let listener = TcpListener::bind(("127.0.0.1", port))
            .map_err(|e| listen(format!("cannot listen on 127.0.0.1:{port}: {e}")))?;
        let port = listener
            .local_addr()
            .map_err(|e| listen(format!("cannot read the listener's address: {e}")))?
            .port();
        Ok(LoopbackListener { listener, port })
    }

    /// `http://127.0.0.1:<port>/callback`.
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    /// Waits up to `timeout` for a request to `/callback`, answers it with a short page, and
    /// returns its full URL (`http://127.0.0.1:<port>/callback?…`). Other paths get a 404 and
    /// the wait goes on.
    ///
    /// # Errors
    /// An [`AuthError`] of kind [`AuthErrorKind::TimedOut`] when nothing came within `timeout`,
    /// of kind [`AuthErrorKind::Listen`] when the listener failed.
    pub fn wait(&self, timeout: Duration) -> Result<String, AuthError> {
        self.wait_until(timeout, |_| true)
    }

    /// [`wait`](Self::wait) for the redirect of one authorization request: a request to
    /// `/callback` whose `state` is not `state` (or that has none) is answered with an error
    /// page, logged and otherwise ignored, and the wait goes on until its deadline. So an
    /// `error` or a `code` sent by anyone but the authorization server, who alone knows the
    /// `state`, is never acted on.
    ///
    /// # Errors
    /// As [`wait`](Self::wait): [`AuthErrorKind::TimedOut`] when no redirect with this `state`
    /// came within `timeout`.
    pub fn wait_for_state(&self, state: &str, timeout: Duration) -> Result<String, AuthError> {
        self.wait_until(timeout, |target| {
            let params = super::util::query_params(target);
            if super::util::param(&params, "state") == Some(state) {
                return true;
            }
            log::warn!(
                "OAuth: ignoring a request to the loopback listener whose `state` is not the \
                 authorization request's; still waiting for the browser"
            );
            false
        })
    }

    /// Serves connections until one asks for `/callback` with a target `wanted` accepts.
    fn wait_until(
        &self,
        timeout: Duration,
        mut wanted: impl FnMut(&str) -> bool,
    ) -> Result<String, AuthError> {
        let listen = |detail: String| AuthError::new(AuthErrorKind::Listen, detail);
        let deadline = crate::deadline::after(timeout);
        self.listener
            .set_nonblocking(true)
            .map_err(|e| listen(format!("the loopback listener failed: {e}")))?;
        let mut conns: Vec<Conn> = Vec::new();
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(AuthError::new(
                    AuthErrorKind::TimedOut,
                    format!(
                        "no browser came back to {} within {:.0} s",
                        self.redirect_uri(),
                        timeout.as_secs_f64()
                    ),
                ));
            }
            conns.retain(|c| {
                let alive = c.deadline > now;
                if !alive {
                    log::debug!(
                        "OAuth: closing a loopback connection that sent no request in time"
                    );
                }
                alive
            });
            let wake = conns
                .iter()
                .map(|c| c.deadline)
                .fold(deadline, Instant::min);
            let (listener_ready, ready) =
                readable(&self.listener, &conns, wake.saturating_duration_since(now))
                    .map_err(listen)?;
            for i in ready.into_iter().rev() {
                match conns[i].read() {
                    Progress::Waiting => continue,
                    Progress::Done => {}
                    Progress::Request(target) => {
                        let accepted =
                            target.split('?').next() == Some(CALLBACK_PATH) && wanted(&target);
                        conns[i].answer(accepted, &target);
                        if accepted {
                            return Ok(format!("http://127.0.0.1:{}{target}", self.port));
                        }
                    }
                }
                conns.remove(i);
            }
            if listener_ready {
                self.accept(&mut conns).map_err(listen)?;
            }
        }
    }

    /// Accepts every pending connection, dropping the oldest beyond [`MAX_CONNECTIONS`].
    fn accept(&self, conns: &mut Vec<Conn>) -> Result<(), String> {
        loop {
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // Reset before it was accepted: nothing to serve.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::ConnectionReset
                    ) =>
                {
                    continue
                }
                // Out of descriptors: the oldest connection makes room for the new one.
                Err(e) if out_of_descriptors(&e) && !conns.is_empty() => {
                    conns.remove(0);
                    continue;
                }
                Err(e) => return Err(format!("the loopback listener failed: {e}")),
            };
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            if conns.len() >= MAX_CONNECTIONS {
                log::debug!("OAuth: too many loopback connections; closing the oldest");
                conns.remove(0);
            }
            conns.push(Conn {
                stream,
                buf: Vec::new(),
                deadline: Instant::now() + CONNECTION_DEADLINE,
            });
        }
    }
}

/// Whether `e` says the process (or the system) has no descriptor left.
#[cfg(unix)]
fn out_of_descriptors(e: &std::io::Error) -> bool {
    let errno = e.raw_os_error();
    errno == Some(rustix::io::Errno::MFILE.raw_os_error())
        || errno == Some(rustix::io::Errno::NFILE.raw_os_error())
}

/// Whether `e` says the process has no socket left (`WSAEMFILE`) or the system no buffer space
/// for one (`WSAENOBUFS`).
#[cfg(windows)]
fn out_of_descriptors(e: &std::io::Error) -> bool {
    use windows_sys::Win32::Networking::WinSock::{WSAEMFILE, WSAENOBUFS};
    matches!(e.raw_os_error(), Some(WSAEMFILE | WSAENOBUFS))
}

/// One connection being read.
struct Conn {
    stream: TcpStream,
    /// What it sent so far (at most [`MAX_REQUEST_BYTES`]).
    buf: Vec<u8>,
    /// When it is closed if its request is not complete.
    deadline: Instant,
}

/// What a read of a connection gave.
enum Progress {
    /// The request is not complete yet.
    Waiting,
    /// The connection ended, broke the rules, or was answered: close it.
    Done,
    /// The request target of a complete `GET` request.
    Request(String),
}

impl Conn {
    fn read(&mut self) -> Progress {
        let mut chunk = [0u8; 4096];
        loop {
            let room = MAX_REQUEST_BYTES - self.buf.len();
            let n = match self.stream.read(&mut chunk[..room.min(4096)]) {
                Ok(0) => return Progress::Done,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Progress::Waiting,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return Progress::Done,
            };
            self.buf.extend_from_slice(&chunk[..n]);
            if let Some(end) = header_end(&self.buf) {
                return self.request(end);
            }
            if self.buf.len() >= MAX_REQUEST_BYTES {
                self.reply("431 Request Header Fields Too Large", "");
                return Progress::Done;
            }
        }
    }

    /// The request whose line and headers end at `end`.
    fn request(&mut self, end: usize) -> Progress {
        let head = String::from_utf8_lossy(&self.buf[..end]);
        let line = head.lines().next().unwrap_or("");
        let mut parts = line.split_whitespace();
        match (parts.next(), parts.next()) {
            (Some("GET"), Some(target)) if target.starts_with('/') => {
                Progress::Request(target.to_owned())
            }
            _ => {
                self.reply("404 Not Found", "");
                Progress::Done
            }
        }
    }

    /// Answers the request for `target`: the page for the redirect waited for, a refusal for a
    /// callback that is not it, a 404 for any other path.
    fn answer(&mut self, accepted: bool, target: &str) {
        if accepted {
            self.reply(
                "200 OK",
                "<!doctype html><title>Signed in</title><p>You can close this window and \
                 return to the application.</p>",
            );
        } else if target.split('?').next() == Some(CALLBACK_PATH) {
            self.reply(
                "400 Bad Request",
                "<!doctype html><title>Not this sign-in</title><p>This is not the sign-in the \
                 application is waiting for.</p>",
            );
        } else {
            self.reply("404 Not Found", "");
        }
    }

    /// Writes a short answer. The connection is new and the answer small, so it fits in the
    /// socket's buffer; whatever does not is dropped rather than waited for.
    fn reply(&mut self, status: &str, body: &str) {
        let kind = if body.is_empty() {
            ""
        } else {
            "Content-Type: text/html; charset=utf-8\r\n"
        };
        let text = format!(
            "HTTP/1.1 {status}\r\n{kind}Content-Length: {}\r\nConnection: close\r\n\
             Cache-Control: no-store\r\n\r\n{body}",
            body.len()
        );
        let _ = self.stream.write_all(text.as_bytes());
        let _ = self.stream.flush();
    }
}

/// Where a request's line and headers end (after the empty line), if they have.
fn header_end(buf: &[u8]) -> Option<usize> {
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Waits up to `left` until the listener has a connection to accept or connections have data;
/// returns whether the listener is ready and the indexes of the ready connections, ascending.
#[cfg(unix)]
fn readable(
    listener: &TcpListener,
    conns: &[Conn],
    left: Duration,
) -> Result<(bool, Vec<usize>), String> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = Vec::with_capacity(conns.len() + 1);
    fds.push(PollFd::new(listener, PollFlags::IN));
    fds.extend(conns.iter().map(|c| PollFd::new(&c.stream, PollFlags::IN)));
    // At most an hour at a time (the caller polls again until its deadline): where there is no
    // `ppoll`, `poll(2)` takes its timeout as milliseconds in a C `int`, about 24 days at most,
    // and a longer one fails.
    let left = left.min(Duration::from_secs(3600));
    let ts = Timespec {
        tv_sec: left.as_secs() as _,
        tv_nsec: left.subsec_nanos() as _,
    };
    match poll(&mut fds, Some(&ts)) {
        Ok(_) => {}
        Err(rustix::io::Errno::INTR) => return Ok((false, Vec::new())),
        Err(e) => return Err(format!("the loopback listener failed: {e}")),
    }
    let ready = |fd: &PollFd<'_>| !fd.revents().is_empty();
    let conns_ready = fds[1..]
        .iter()
        .enumerate()
        .filter(|(_, fd)| ready(fd))
        .map(|(i, _)| i)
        .collect();
    Ok((ready(&fds[0]), conns_ready))
}

/// Waits up to `left` until the listener has a connection to accept or connections have data;
/// returns whether the listener is ready and the indexes of the ready connections, ascending.
#[cfg(windows)]
fn readable(
    listener: &TcpListener,
    conns: &[Conn],
    left: Duration,
) -> Result<(bool, Vec<usize>), String> {
    use crate::wsapoll::{poll, Interest};
    let mut sockets = Vec::with_capacity(conns.len() + 1);
    sockets.push(Interest::read(listener));
    sockets.extend(conns.iter().map(|c| Interest::read(&c.stream)));
    // `poll` waits at most an hour at a time; the caller polls again until its deadline.
    let ready =
        poll(&sockets, Some(left)).map_err(|e| format!("the loopback listener failed: {e}"))?;
    let conns_ready = ready[1..]
        .iter()
        .enumerate()
        .filter(|(_, r)| **r)
        .map(|(i, _)| i)
        .collect();
    Ok((ready[0], conns_ready))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn emfile_and_enfile_say_out_of_descriptors() {
        for errno in [rustix::io::Errno::MFILE, rustix::io::Errno::NFILE] {
            let e = std::io::Error::from_raw_os_error(errno.raw_os_error());
            assert!(out_of_descriptors(&e), "{e}");
        }
        let refused =
            std::io::Error::from_raw_os_error(rustix::io::Errno::CONNREFUSED.raw_os_error());
        assert!(!out_of_descriptors(&refused));
    }

    #[cfg(windows)]
    #[test]
    fn wsaemfile_and_wsaenobufs_say_out_of_descriptors() {
        for code in [10024, 10055] {
            let e = std::io::Error::from_raw_os_error(code);
            assert!(out_of_descriptors(&e), "{e}");
        }
        assert!(!out_of_descriptors(&std::io::Error::from_raw_os_error(
            10061
        )));
    }

    #[test]
    fn a_wait_with_nothing_to_read_ends_at_its_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let started = Instant::now();
        let (ready, conns) = readable(&listener, &[], Duration::from_millis(50)).unwrap();
        assert!(!ready && conns.is_empty());
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(40) && took < Duration::from_secs(5),
            "{took:?}"
        );
    }

    #[test]
    fn a_connection_to_accept_and_a_connection_with_data_are_reported() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (listener_ready, _) = readable(&listener, &[], Duration::from_secs(30)).unwrap();
        assert!(listener_ready);
        let (stream, _) = listener.accept().unwrap();
        let conns = [Conn {
            stream,
            buf: Vec::new(),
            deadline: Instant::now() + CONNECTION_DEADLINE,
        }];
        client.write_all(b"GET / HTTP/1.1\r\n").unwrap();
        let (listener_ready, ready) = readable(&listener, &conns, Duration::from_secs(30)).unwrap();
        assert!(!listener_ready);
        assert_eq!(ready, [0]);
    }
}
