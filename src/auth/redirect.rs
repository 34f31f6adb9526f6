//! Getting the authorization code back from the person signing in: a loopback listener
//! (RFC 8252), a pasted redirect URL, or any function that turns the authorization URL into the
//! redirect URL. The library never opens a browser: it hands the URL to your callback.

use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the loopback listener waits for the browser by default: 5 minutes.
pub const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// The path the loopback listener answers on.
const CALLBACK_PATH: &str = "/callback";

type UrlCallback = Arc<dyn Fn(&str) + Send + Sync>;
type Exchange = Arc<dyn Fn(&str) -> Result<String, String> + Send + Sync>;

/// How the authorization code comes back after the person signs in.
///
/// - [`loopback`](Self::loopback): a listener on `127.0.0.1` (a random port unless
///   [`port`](Self::port) sets one) receives the browser's redirect; your callback gets the
///   authorization URL to show or open;
/// - [`paste`](Self::paste): your function shows the URL and returns the address the browser
///   was sent to (for machines without a browser; the page may fail to load, its address is
///   what counts);
/// - [`custom`](Self::custom): any function from the authorization URL to the redirect URL
///   (a test driver, an embedded browser...).
///
/// ```no_run
/// use mcp_blocking::auth::RedirectHandler;
/// let h = RedirectHandler::loopback(|url| eprintln!("Open this page to sign in: {url}"));
/// ```
#[derive(Clone)]
pub struct RedirectHandler {
    pub(crate) kind: Kind,
}

#[derive(Clone)]
pub(crate) enum Kind {
    Loopback {
        port: u16,
        timeout: Duration,
        on_url: UrlCallback,
    },
    Exchange {
        redirect_uri: String,
        exchange: Exchange,
    },
}

impl fmt::Debug for RedirectHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Loopback { port, timeout, .. } => f
                .debug_struct("Loopback")
                .field("port", port)
                .field("timeout", timeout)
                .finish(),
            Kind::Exchange { redirect_uri, .. } => f
                .debug_struct("Exchange")
                .field("redirect_uri", redirect_uri)
                .finish(),
        }
    }
}

impl RedirectHandler {
    /// A loopback listener on `127.0.0.1` and a random port, waiting
    /// [`DEFAULT_LOGIN_TIMEOUT`] for the browser; `on_url` receives the authorization URL.
    pub fn loopback(on_url: impl Fn(&str) + Send + Sync + 'static) -> RedirectHandler {
        RedirectHandler {
            kind: Kind::Loopback {
                port: 0,
                timeout: DEFAULT_LOGIN_TIMEOUT,
                on_url: Arc::new(on_url),
            },
        }
    }

    /// The loopback listener's port (0: a random one; a fixed one suits an authorization
    /// server that registered an exact redirect URI). No effect on other handlers.
    pub fn port(mut self, port: u16) -> RedirectHandler {
        if let Kind::Loopback { port: p, .. } = &mut self.kind {
            *p = port;
        }
        self
    }

    /// How long the loopback listener waits for the browser. No effect on other handlers.
    pub fn timeout(mut self, timeout: Duration) -> RedirectHandler {
        if let Kind::Loopback { timeout: t, .. } = &mut self.kind {
            *t = timeout;
        }
        self
    }

    /// The paste flow: `redirect_uri` is registered as the redirect target; `read` receives
    /// the authorization URL, shows it, and returns the full address the browser ended on
    /// (`…?code=…&state=…`), as pasted by the person.
    pub fn paste(
        redirect_uri: impl Into<String>,
        read: impl Fn(&str) -> Result<String, String> + Send + Sync + 'static,
    ) -> RedirectHandler {
        RedirectHandler::custom(redirect_uri, read)
    }

    /// Any function from the authorization URL to the redirect URL carrying `code` and `state`.
    pub fn custom(
        redirect_uri: impl Into<String>,
        exchange: impl Fn(&str) -> Result<String, String> + Send + Sync + 'static,
    ) -> RedirectHandler {
        RedirectHandler {
            kind: Kind::Exchange {
                redirect_uri: redirect_uri.into(),
                exchange: Arc::new(exchange),
            },
        }
    }
}

/// A one-shot HTTP listener on `127.0.0.1` that waits for the browser's redirect.
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

impl LoopbackListener {
    /// Binds `127.0.0.1:port` (0: a random free port).
    ///
    /// # Errors
    /// The port cannot be bound.
    pub fn bind(port: u16) -> Result<LoopbackListener, String> {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("cannot read the listener's address: {e}"))?
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
    /// Nothing came within `timeout`, or the listener failed.
    pub fn wait(&self, timeout: Duration) -> Result<String, String> {
        let deadline = Instant::now() + timeout;
        self.listener
            .set_nonblocking(true)
            .map_err(|e| e.to_string())?;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "no browser came back to {} within {:.0} s",
                    self.redirect_uri(),
                    timeout.as_secs_f64()
                ));
            }
            if !readable(&self.listener, left)? {
                continue;
            }
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(format!("the loopback listener failed: {e}")),
            };
            if let Some(target) = serve(stream, deadline) {
                return Ok(format!("http://127.0.0.1:{}{target}", self.port));
            }
        }
    }
}

/// Waits until the listener has a connection to accept (or `left` passes).
fn readable(listener: &TcpListener, left: Duration) -> Result<bool, String> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(listener, PollFlags::IN)];
    let wait = left.min(Duration::from_secs(1));
    let ts = Timespec {
        tv_sec: wait.as_secs() as _,
        tv_nsec: wait.subsec_nanos() as _,
    };
    match poll(&mut fds, Some(&ts)) {
        Ok(n) => Ok(n > 0),
        Err(rustix::io::Errno::INTR) => Ok(false),
        Err(e) => Err(format!("the loopback listener failed: {e}")),
    }
}

/// Reads one request; answers it. `Some(target)` when it was the callback.
fn serve(stream: TcpStream, deadline: Instant) -> Option<String> {
    let _ = stream.set_nonblocking(false);
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(100))
        .min(Duration::from_secs(10));
    let _ = stream.set_read_timeout(Some(left));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(stream.try_clone().ok()?.take(16 * 1024));
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    // Drain the headers (bounded by the reader's limit).
    let mut header = String::new();
    while reader.read_line(&mut header).ok()? > 2 {
        header.clear();
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?, parts.next()?);
    let path = target.split('?').next().unwrap_or("");
    let mut out = stream;
    if method != "GET" || path != CALLBACK_PATH {
        let _ = out
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return None;
    }
    let body = "<!doctype html><title>Signed in</title><p>You can close this window and \
                return to the application.</p>";
    let _ = write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    );
    let _ = out.flush();
    Some(target.to_owned())
}
