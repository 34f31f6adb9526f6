//! Sending a request and following its redirects here rather than in ureq (whose agent follows
//! none), so that what a redirect may do is decided in one place:
//!
//! ```text
//!  301 302 307 308 ──> same method, same body, same headers ──> next hop (at most 5)
//!  303              ──> followed by a GET only (it asks for a GET, which cannot carry a
//!                       JSON-RPC message): a POST or DELETE gets the 303 as its answer
//!  another origin   ──> refused (Error::Transport naming the redacted target), nothing sent;
//!                       with `follow_cross_origin_redirects`, followed without the configured
//!                       headers and auth provider
//! ```
//!
//! The configured headers and the auth provider's `Authorization` go only to the configured
//! URL's origin (scheme, host and port), on every hop and every later request; the protocol
//! headers (`Accept`, `Content-Type`, `Mcp-Session-Id`, `MCP-Protocol-Version`,
//! `Last-Event-ID`) go everywhere. Each hop is bounded by what is left of the caller's deadline.

use std::time::{Duration, Instant};

use super::frames::drain;
use super::headers::RequestHeaders;
use crate::config::redact_url;
use crate::error::Error;
use crate::url::{origin, resolve_reference, Origin};

/// The most redirects one request follows.
pub(crate) const MAX_REDIRECTS: usize = 5;

/// A request's method and body.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Verb<'a> {
    Get,
    Delete,
    Post(&'a [u8]),
}

impl Verb<'_> {
    /// The method name, for messages.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::Delete => "DELETE",
            Verb::Post(_) => "POST",
        }
    }
}

/// How long a request may take.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Limit {
    /// The whole exchange, reading the body included, ends by this instant.
    Until(Instant),
    /// Connecting and receiving the response head each take at most this long; the body (a
    /// long-lived stream) has no bound.
    Open(Duration),
}

/// A response and where it came from.
pub(crate) struct Sent {
    /// The final response (not a followed redirect).
    pub(crate) resp: ureq::http::Response<ureq::Body>,
    /// The URL that answered.
    pub(crate) url: String,
    /// Whether at least one redirect was followed and every one was permanent (301, 308).
    pub(crate) moved: bool,
}

/// What every HTTP request of one server shares: the client, the configured headers, and which
/// origin they belong to. Cheap to clone (the agent and headers are shared).
#[derive(Clone, Debug)]
pub(crate) struct Requester {
    /// The server's configured name, for errors.
    pub(crate) server: String,
    /// The HTTP client (follows no redirect itself).
    pub(crate) agent: ureq::Agent,
    /// The configured headers and auth provider.
    pub(crate) headers: RequestHeaders,
    /// The configured URL's origin: the only one that gets `headers`.
    home: Option<Origin>,
    /// The configured URL itself (on `home` when `home` is known): most requests go there,
    /// and comparing it spares parsing the URL for every request.
    home_url: String,
    /// Follow redirects to other origins (without `headers`).
    follow_cross_origin: bool,
}

impl Requester {
    /// Requests for `server`, whose configured URL is `url`.
    pub(crate) fn new(
        server: &str,
        url: &str,
        agent: ureq::Agent,
        headers: RequestHeaders,
        follow_cross_origin: bool,
    ) -> Self {
        Requester {
            server: server.to_owned(),
            agent,
            headers,
            home: origin(url),
            home_url: url.to_owned(),
            follow_cross_origin,
        }
    }

    /// Whether `url` is on the configured URL's origin.
    pub(crate) fn is_home(&self, url: &str) -> bool {
        self.home.is_some() && (url == self.home_url || origin(url) == self.home)
    }

    /// Sends `verb` to `url` with the protocol headers `extra` (and, on the configured origin,
    /// the configured ones), following redirects. A ureq failure goes through `fail` with the
    /// request as messages name it (`POST http://host/path`, redacted).
    ///
    /// # Errors
    /// What `fail` makes of a ureq failure; an auth provider failure; [`Error::Transport`] with
    /// the redirect's status for a refused, unusable or one-too-many redirect.
    pub(crate) fn send(
        &self,
        verb: Verb<'_>,
        url: &str,
        extra: &[(&str, &str)],
        limit: Limit,
        fail: impl Fn(&str, ureq::Error) -> Error,
    ) -> Result<Sent, Error> {
        let mut url = url.to_owned();
        let mut moved = true;
        for hop in 0..=MAX_REDIRECTS {
            // Built only for messages (every request passes here).
            let what = || format!("{} {}", verb.name(), redact_url(&url));
            let resp = self.once(verb, &url, extra, limit).map_err(|e| match e {
                Once::Ureq(e) => fail(&what(), e),
                Once::Headers(e) => e,
            })?;
            let status = resp.status().as_u16();
            let follows = match status {
                301 | 302 | 307 | 308 => true,
                303 => matches!(verb, Verb::Get),
                _ => false,
            };
            let location = follows
                .then(|| resp.headers().get("location"))
                .flatten()
                .map(|v| v.to_str().unwrap_or_default().to_owned());
            let Some(location) = location else {
                return Ok(Sent {
                    resp,
                    url,
                    moved: moved && hop > 0,
                });
            };
            let what = what();
            let refuse = |detail: String| Error::Transport {
                server: self.server.clone(),
                status: Some(status),
                detail: format!("{what}: HTTP {status}: {detail}"),
                source: None,
            };
            let Some(next) = resolve_reference(&url, &location) else {
                return Err(refuse(
                    "the redirect's `Location` is not an http:// or https:// URL".into(),
                ));
            };
            let shown = redact_url(&next);
            if hop == MAX_REDIRECTS {
                return Err(refuse(format!(
                    "more than {MAX_REDIRECTS} redirects (the last to {shown})"
                )));
            }
            if !self.is_home(&next) && !self.follow_cross_origin {
                return Err(refuse(format!(
                    "refused a redirect to another origin, {shown} (a server's redirects to \
                     another origin are followed only with `follow_cross_origin_redirects`, \
                     and then without its configured headers)"
                )));
            }
            log::debug!(
                "server `{}`: {what}: HTTP {status}, following to {shown}",
                self.server
            );
            moved &= matches!(status, 301 | 308);
            drain(resp);
            url = next;
        }
        unreachable!("the last hop returns")
    }

    /// One request, no redirect followed.
    fn once(
        &self,
        verb: Verb<'_>,
        url: &str,
        extra: &[(&str, &str)],
        limit: Limit,
    ) -> Result<ureq::http::Response<ureq::Body>, Once> {
        let home = self.is_home(url);
        match verb {
            Verb::Get => self
                .prepare(self.agent.get(url), extra, limit, home)?
                .call()
                .map_err(Once::Ureq),
            Verb::Delete => self
                .prepare(self.agent.delete(url), extra, limit, home)?
                .call()
                .map_err(Once::Ureq),
            Verb::Post(body) => self
                .prepare(self.agent.post(url), extra, limit, home)?
                .send(body)
                .map_err(Once::Ureq),
        }
    }

    /// Sets the time limits and headers of one request.
    fn prepare<B>(
        &self,
        req: ureq::RequestBuilder<B>,
        extra: &[(&str, &str)],
        limit: Limit,
        home: bool,
    ) -> Result<ureq::RequestBuilder<B>, Once> {
        let mut req = match limit {
            Limit::Until(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(Once::Ureq(ureq::Error::Timeout(ureq::Timeout::Global)));
                }
                // A caller's own deadline (see `buffered::within`) bounds connecting too.
                let connect = super::buffered::current_deadline()
                    .map(|d| d.saturating_duration_since(Instant::now()).min(left));
                req.config()
                    .timeout_global(Some(left))
                    .timeout_connect(connect)
                    .build()
            }
            Limit::Open(t) => req
                .config()
                .timeout_connect(Some(t))
                .timeout_recv_response(Some(t))
                .build(),
        };
        for (name, value) in extra {
            req = req.header(*name, *value);
        }
        if home {
            req = self
                .headers
                .apply(&self.server, req)
                .map_err(Once::Headers)?;
        }
        Ok(req)
    }
}

/// How one request failed.
enum Once {
    Ureq(ureq::Error),
    Headers(Error),
}
