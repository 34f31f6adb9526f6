//! Getting the authorization code back from the person signing in: a loopback listener
//! (RFC 8252), a pasted redirect URL, or any function that turns the authorization URL into the
//! redirect URL. The library never opens a browser: it hands the URL to your callback.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// How long the loopback listener waits for the browser by default: 5 minutes.
pub const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

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
///   (a test driver, an embedded browser...);
/// - [`none`](Self::none): nobody to sign in; a server that needs a new sign-in fails the
///   request at once with [`Error::SignInRequired`](crate::Error::SignInRequired).
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
    /// Nobody to sign in.
    None,
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
            Kind::None => f.write_str("None"),
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

    /// No one to sign in: for programs that run unattended, and commands that cannot wait for
    /// a person. Stored tokens are used and refreshed as with any handler; when the server
    /// needs a new sign-in, the request fails at once with [`Error::SignInRequired`] and the
    /// authorization server is not contacted.
    ///
    /// ```
    /// use mcp_blocking::auth::{FileTokenStore, OAuthConfig, RedirectHandler};
    /// // Uses what `myapp login` stored; never waits for a browser.
    /// let oauth = OAuthConfig::authorization_code(RedirectHandler::none())
    ///     .token_store(FileTokenStore::new("/home/me/.config/myapp/tokens.json"));
    /// # let _ = oauth;
    /// ```
    ///
    /// [`Error::SignInRequired`]: crate::Error::SignInRequired
    pub fn none() -> RedirectHandler {
        RedirectHandler { kind: Kind::None }
    }

    /// Whether this handler reaches a person (every handler but [`none`](Self::none)).
    pub(crate) fn reaches_a_person(&self) -> bool {
        !matches!(self.kind, Kind::None)
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
