//! The crate's one redirect follower: what a redirect may do is decided here, for the MCP
//! transports ([`Requester`]), the requests to an OAuth authorization server and the model
//! client alike, on top of the URL rules of `crate::url`:
//!
//! ```text
//!  307 308          ──> same method, same body ──> next hop (at most 5)
//!  301 302          ──> a GET follows; other methods only where the policy keeps them (the
//!                       MCP transports: same method, same body), else the answer is the 301/302
//!  303              ──> followed by a GET only (it asks for a GET, which cannot carry a
//!                       JSON-RPC message or a form): another method gets the 303 as its answer
//!  another origin   ──> refused (the caller's error naming the shown target), nothing sent;
//!                       where the policy allows it (`follow_cross_origin_redirects`), followed,
//!                       and the caller sends nothing of its own there
//! ```
//!
//! For the transports: the configured headers and the auth provider's `Authorization` go only
//! to the configured URL's origin (scheme, host and port), on every hop and every later
//! request; the protocol headers (`Accept`, `Content-Type`, `Mcp-Session-Id`,
//! `MCP-Protocol-Version`, `Last-Event-ID`) go everywhere. Each hop is bounded by what is left
//! of the caller's deadline.

use std::time::{Duration, Instant};

use ureq::http::Response;
use ureq::Body;

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
        on_home(url, self.home_url.as_str(), self.home.as_ref())
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
        // Built only for messages (every request passes here).
        let what = |url: &str| format!("{} {}", verb.name(), redact_url(url));
        let policy = Policy {
            home_url: &self.home_url,
            home: self.home.as_ref(),
            cross_origin: self.follow_cross_origin,
            others_follow_301_302: true,
            elsewhere: "a server's redirects to another origin are followed only with \
                        `follow_cross_origin_redirects`, and then without its configured headers",
            shown: redact_url,
        };
        follow(
            &policy,
            matches!(verb, Verb::Get),
            url,
            what,
            |url| {
                self.once(verb, url, extra, limit).map_err(|e| match e {
                    Once::Ureq(e) => fail(&what(url), e),
                    Once::Headers(e) => e,
                })
            },
            |what, status, detail| Error::Transport {
                server: self.server.clone(),
                status: Some(status),
                detail: format!("{what}: HTTP {status}: {detail}"),
                source: None,
            },
        )
    }

    /// One request, no redirect followed. A request with a DPoP proof refused with
    /// `use_dpop_nonce` and a usable `DPoP-Nonce` is sent once more, its new proof carrying
    /// that nonce (RFC 9449 §9); any nonce an answer carries is kept for later proofs.
    fn once(
        &self,
        verb: Verb<'_>,
        url: &str,
        extra: &[(&str, &str)],
        limit: Limit,
    ) -> Result<ureq::http::Response<ureq::Body>, Once> {
        let home = self.is_home(url);
        let mut retried = false;
        loop {
            let (resp, proof) = match verb {
                Verb::Get => {
                    let (req, proof) =
                        self.prepare(self.agent.get(url), verb, url, extra, limit, home)?;
                    (req.call().map_err(Once::Ureq)?, proof)
                }
                Verb::Delete => {
                    let (req, proof) =
                        self.prepare(self.agent.delete(url), verb, url, extra, limit, home)?;
                    (req.call().map_err(Once::Ureq)?, proof)
                }
                Verb::Post(body) => {
                    let (req, proof) =
                        self.prepare(self.agent.post(url), verb, url, extra, limit, home)?;
                    (req.send(body).map_err(Once::Ureq)?, proof)
                }
            };
            let Some(auth) = self.headers.request_auth().filter(|_| proof) else {
                return Ok(resp);
            };
            let kept = resp
                .headers()
                .get("dpop-nonce")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|n| auth.nonce(n));
            let asked = resp.status() == 401
                && resp
                    .headers()
                    .get_all("www-authenticate")
                    .iter()
                    .any(|v| v.to_str().is_ok_and(crate::auth::asks_for_dpop_nonce));
            if retried || !kept || !asked {
                return Ok(resp);
            }
            retried = true;
            log::debug!(
                "{} {}: the server asks for a DPoP nonce; sending once more with it",
                verb.name(),
                redact_url(url)
            );
            drain(resp);
        }
    }

    /// Sets the time limits and headers of one request; whether it carries a DPoP proof.
    fn prepare<B>(
        &self,
        req: ureq::RequestBuilder<B>,
        verb: Verb<'_>,
        url: &str,
        extra: &[(&str, &str)],
        limit: Limit,
        home: bool,
    ) -> Result<(ureq::RequestBuilder<B>, bool), Once> {
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
        if !home {
            return Ok((req, false));
        }
        self.headers
            .apply(&self.server, verb.name(), url, req)
            .map_err(Once::Headers)
    }
}

/// How one request failed.
enum Once {
    Ureq(ureq::Error),
    Headers(Error),
}

/// Whether `url` is on `home`'s origin; `home_url` (on it) is compared as written first, as
/// most requests go there.
fn on_home(url: &str, home_url: &str, home: Option<&Origin>) -> bool {
    home.is_some() && (url == home_url || origin(url).as_ref() == home)
}

/// What redirects one kind of request may follow.
pub(crate) struct Policy<'a> {
    /// A URL on the origin the request's credentials belong to.
    pub(crate) home_url: &'a str,
    /// That origin (`None`: a URL without one, and every redirect goes elsewhere).
    pub(crate) home: Option<&'a Origin>,
    /// Follow redirects to other origins (the caller sends nothing of its own there).
    pub(crate) cross_origin: bool,
    /// A request other than a GET follows 301 and 302 too, with its method and body (the MCP
    /// transports' messages); else only 307 and 308, which keep them by definition.
    pub(crate) others_follow_301_302: bool,
    /// Why a redirect to another origin is refused, as the error says it.
    pub(crate) elsewhere: &'a str,
    /// A URL as messages show it.
    pub(crate) shown: fn(&str) -> String,
}

impl Policy<'_> {
    /// Whether a response of `status` to a GET (`get`) or another request is followed.
    fn follows(&self, get: bool, status: u16) -> bool {
        match status {
            307 | 308 => true,
            301 | 302 => get || self.others_follow_301_302,
            303 => get,
            _ => false,
        }
    }

    /// Where a redirect from `url` with `location` goes, or why it is refused; `hop` is the
    /// number of redirects followed before it.
    fn next(&self, url: &str, location: Option<&str>, hop: usize) -> Result<String, String> {
        let Some(next) = location.and_then(|l| resolve_reference(url, l)) else {
            return Err("the redirect's `Location` is not an http:// or https:// URL".into());
        };
        let shown = (self.shown)(&next);
        if hop == MAX_REDIRECTS {
            return Err(format!(
                "more than {MAX_REDIRECTS} redirects (the last to {shown})"
            ));
        }
        if !self.cross_origin && !on_home(&next, self.home_url, self.home) {
            return Err(format!(
                "refused a redirect to another origin, {shown} ({})",
                self.elsewhere
            ));
        }
        Ok(next)
    }
}

/// Sends a request to `url` with `once` (one request, no redirect followed) and follows the
/// redirects `policy` allows, each with `once` again. `get` says whether the request is a GET;
/// `what` names the request to a URL in messages; `refuse` makes the caller's error of a
/// refused redirect from what, the status and why.
///
/// # Errors
/// What `once` fails with; what `refuse` makes of a redirect that is refused: to another
/// origin where the policy keeps to one, one too many, or with a `Location` that is not an
/// `http(s)://` URL.
pub(crate) fn follow<E>(
    policy: &Policy<'_>,
    get: bool,
    url: &str,
    what: impl Fn(&str) -> String,
    mut once: impl FnMut(&str) -> Result<Response<Body>, E>,
    refuse: impl Fn(&str, u16, String) -> E,
) -> Result<Sent, E> {
    let mut url = url.to_owned();
    let mut moved = true;
    for hop in 0..=MAX_REDIRECTS {
        let resp = once(&url)?;
        let status = resp.status().as_u16();
        let location = policy
            .follows(get, status)
            .then(|| resp.headers().get("location"))
            .flatten();
        let Some(location) = location else {
            return Ok(Sent {
                resp,
                url,
                moved: moved && hop > 0,
            });
        };
        let next = policy
            .next(&url, location.to_str().ok(), hop)
            .map_err(|why| refuse(&what(&url), status, why))?;
        log::debug!(
            "{}: HTTP {status}, following to {}",
            what(&url),
            (policy.shown)(&next)
        );
        moved &= matches!(status, 301 | 308);
        drain(resp);
        url = next;
    }
    unreachable!("the last hop returns")
}

#[cfg(test)]
mod tests {
    //! The redirect rule without a socket: which statuses are followed, where to, and why not.

    use super::*;

    fn policy<'a>(home: Option<&'a Origin>, others_follow_301_302: bool) -> Policy<'a> {
        Policy {
            home_url: "https://h/mcp",
            home,
            cross_origin: false,
            others_follow_301_302,
            elsewhere: "not there",
            shown: redact_url,
        }
    }

    #[test]
    fn a_get_follows_every_redirect_and_other_methods_what_the_policy_keeps() {
        let home = origin("https://h/mcp");
        let (transport, auth) = (policy(home.as_ref(), true), policy(home.as_ref(), false));
        for status in [301, 302, 303, 307, 308] {
            assert!(transport.follows(true, status) && auth.follows(true, status));
        }
        assert!(transport.follows(false, 301) && transport.follows(false, 302));
        assert!(!auth.follows(false, 301) && !auth.follows(false, 302));
        for p in [&transport, &auth] {
            assert!(!p.follows(false, 303), "a 303 asks for a GET");
            assert!(p.follows(false, 307) && p.follows(false, 308));
            assert!(!p.follows(true, 304) && !p.follows(true, 200));
        }
    }

    #[test]
    fn the_next_hop_stays_on_the_origin_and_within_the_count() {
        let home = origin("https://h/mcp");
        let p = policy(home.as_ref(), true);
        assert_eq!(
            p.next("https://h/mcp", Some("/v2?x=1"), 0).unwrap(),
            "https://h/v2?x=1"
        );
        assert_eq!(
            p.next("https://h/a/b", Some("c"), 0).unwrap(),
            "https://h/a/c"
        );
        assert_eq!(
            p.next("https://h/mcp", Some("HTTPS://H:443/m"), 0).unwrap(),
            "HTTPS://H:443/m"
        );
        let elsewhere = p
            .next("https://h/mcp", Some("https://evil/x?token=1"), 0)
            .unwrap_err();
        assert!(
            elsewhere.contains("another origin, https://evil/x")
                && elsewhere.contains("(not there)"),
            "{elsewhere}"
        );
        assert!(!elsewhere.contains("token=1"), "{elsewhere}");
        let downgraded = p
            .next("https://h/mcp", Some("http://h/mcp"), 0)
            .unwrap_err();
        assert!(downgraded.contains("another origin"), "{downgraded}");
        let too_many = p
            .next("https://h/mcp", Some("/x"), MAX_REDIRECTS)
            .unwrap_err();
        assert!(too_many.starts_with("more than 5 redirects"), "{too_many}");
        for bad in [None, Some("ftp://h/x"), Some("mailto:a@h")] {
            let why = p.next("https://h/mcp", bad, 0).unwrap_err();
            assert!(why.contains("not an http:// or https:// URL"), "{why}");
        }
        let open = Policy {
            cross_origin: true,
            ..policy(home.as_ref(), true)
        };
        assert_eq!(
            open.next("https://h/mcp", Some("https://other/x"), 0)
                .unwrap(),
            "https://other/x"
        );
        let homeless = policy(None, true);
        assert!(
            homeless.next("https://h/mcp", Some("/x"), 0).is_err(),
            "no origin, no redirect"
        );
    }
}
