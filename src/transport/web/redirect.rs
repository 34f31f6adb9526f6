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

/// Scheme, lower-cased host and port (defaulted) of an absolute URL.
pub(crate) type Origin = (String, String, u16);

/// The origin of an absolute `http(s)://` URL.
pub(crate) fn origin(url: &str) -> Option<Origin> {
    let uri: ureq::http::Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let host = uri.host()?.to_ascii_lowercase();
    let port = uri.port_u16().unwrap_or(match scheme.as_str() {
        "https" => 443,
        _ => 80,
    });
    Some((scheme, host, port))
}

/// Resolves a reference (a `Location` or an SSE `endpoint`) against an absolute URL, the
/// RFC 3986 way: absolute, scheme-relative (`//host/p`), absolute path, query only, or a path
/// relative to the base's directory; dot segments are removed and the fragment dropped. `None`
/// when the result is not an `http(s)://` URL.
pub(crate) fn resolve_reference(base: &str, reference: &str) -> Option<String> {
    let reference = reference.split('#').next().unwrap_or("").trim();
    let uri: ureq::http::Uri = base.parse().ok()?;
    let scheme = uri.scheme_str()?;
    let authority = uri.authority()?.as_str();
    let base_path = uri.path();
    let has_scheme = reference.split_once(':').is_some_and(|(s, _)| {
        !s.is_empty()
            && s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    let resolved = if has_scheme {
        reference.to_owned()
    } else if let Some(rest) = reference.strip_prefix("//") {
        format!("{scheme}://{rest}")
    } else if reference.starts_with('/') {
        let (path, query) = split_query(reference);
        format!("{scheme}://{authority}{}{query}", remove_dots(path))
    } else if reference.is_empty() || reference.starts_with('?') {
        let query = if reference.is_empty() {
            uri.query().map(|q| format!("?{q}")).unwrap_or_default()
        } else {
            reference.to_owned()
        };
        format!("{scheme}://{authority}{base_path}{query}")
    } else {
        let dir = match base_path.rfind('/') {
            Some(i) => &base_path[..=i],
            None => "/",
        };
        let (path, query) = split_query(reference);
        format!(
            "{scheme}://{authority}{}{query}",
            remove_dots(&format!("{dir}{path}"))
        )
    };
    let lower = resolved.to_ascii_lowercase();
    let usable = (lower.starts_with("http://") || lower.starts_with("https://"))
        && resolved.parse::<ureq::http::Uri>().is_ok()
        && origin(&resolved).is_some();
    usable.then_some(resolved)
}

/// A path and its query (with the `?`).
fn split_query(s: &str) -> (&str, &str) {
    match s.find('?') {
        Some(i) => s.split_at(i),
        None => (s, ""),
    }
}

/// RFC 3986 `remove_dot_segments` on an absolute path.
fn remove_dots(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    for (i, seg) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *seg {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                out.pop();
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    format!("/{}", out.join("/"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_like_rfc_3986() {
        let base = "http://h:1/a/b/mcp?x=1";
        let r = |s: &str| resolve_reference(base, s);
        assert_eq!(r("/mcp/").as_deref(), Some("http://h:1/mcp/"));
        assert_eq!(r("mcp/").as_deref(), Some("http://h:1/a/b/mcp/"));
        assert_eq!(r("../c?y=2#f").as_deref(), Some("http://h:1/a/c?y=2"));
        assert_eq!(r("./").as_deref(), Some("http://h:1/a/b/"));
        assert_eq!(r("?y=2").as_deref(), Some("http://h:1/a/b/mcp?y=2"));
        assert_eq!(r("").as_deref(), Some("http://h:1/a/b/mcp?x=1"));
        assert_eq!(r("//other:2/p").as_deref(), Some("http://other:2/p"));
        assert_eq!(r("HTTPS://x/p").as_deref(), Some("HTTPS://x/p"));
        assert_eq!(r("/../../x").as_deref(), Some("http://h:1/x"));
        assert_eq!(r("ftp://x/p"), None);
        assert_eq!(r("javascript:alert(1)"), None);
        assert_eq!(r("http://"), None);
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        assert_eq!(origin("http://H/x"), origin("http://h:80/y"));
        assert_ne!(origin("http://h/x"), origin("https://h/x"));
        assert_ne!(
            origin("http://127.0.0.1:5/x"),
            origin("http://localhost:5/x")
        );
        assert_ne!(origin("http://h:5/x"), origin("http://h:6/x"));
    }
}
