//! The HTTP requests of the flow (metadata, registration, token, refresh) to the protected
//! resource's metadata and to the authorization server.
//!
//! They go the way the MCP server's own connection goes: through the server's proxy setting
//! ([`ProxyConfig`], chosen per authorization-server URL as for the server's URL, loopback and
//! `NO_PROXY` hosts directly), trusting the server's extra root certificates plus
//! [`OAuthConfig::root_certificates`](super::OAuthConfig::root_certificates), on the agent the
//! HTTP transports use. Each request (all its redirects included) ends within the
//! [`OAuthConfig::timeout`](super::OAuthConfig::timeout); each answer is read up to
//! [`Limits::max_auth_response_bytes`](crate::config::Limits::max_auth_response_bytes), and a
//! longer one fails the authorization.
//!
//! Redirects (the crate's one follower, `transport/web/redirect.rs`): at most 5 per request,
//! and only within the origin (scheme, host and port) of the URL asked for, so the client's credentials (a form body with a code,
//! verifier, refresh token or secret; a `Basic` header) never reach another origin, and an
//! `https://` request never continues over `http://`. A GET follows 301, 302, 303, 307 and 308;
//! a POST follows only 307 and 308 (the same body to the same origin). A redirect elsewhere
//! fails the request, naming the target without its query. Nothing read here is put in a
//! message except the `error` and `error_description` fields of an OAuth error answer.

use std::io::Read;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::config::{redact_url, ProxyConfig};
use crate::transport::proxy::{route_for, Route};
use crate::transport::web::{follow, Policy};
use crate::url::origin;

/// An answer: status, body and the `DPoP-Nonce` it carried (RFC 9449 §8).
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: String,
    /// The `DPoP-Nonce` header, when present, valid text and at most
    /// [`MAX_NONCE_BYTES`](super::dpop::MAX_NONCE_BYTES) long (a longer one is dropped).
    pub(crate) dpop_nonce: Option<String>,
}

impl Reply {
    /// The body as a JSON object, when it is one.
    pub(crate) fn json(&self) -> Option<serde_json::Map<String, Value>> {
        match serde_json::from_str(&self.body) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        }
    }

    /// The OAuth `error` code of an error answer.
    pub(crate) fn error_code(&self) -> Option<String> {
        self.json()?
            .get("error")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// `HTTP <status>` plus the OAuth `error` and `error_description`, when the body has them.
    pub(crate) fn describe(&self) -> String {
        let mut s = format!("HTTP {}", self.status);
        if let Some(m) = self.json() {
            if let Some(e) = m.get("error").and_then(Value::as_str) {
                s.push_str(&format!(" {}", crate::config::echo(e, 100)));
            }
            if let Some(e) = m.get("error_description").and_then(Value::as_str) {
                s.push_str(&format!(": {}", crate::config::echo(e, 200)));
            }
        }
        s
    }
}

/// How a request failed.
#[derive(Debug)]
pub(crate) enum NetError {
    /// It could not be made or answered (DNS, refused, TLS, timeout): discovery may try the
    /// next candidate.
    Failed(String),
    /// The answer broke a rule of ours (too large, a redirect to another origin): the
    /// authorization stops.
    Refused(String),
}

impl From<NetError> for String {
    fn from(e: NetError) -> String {
        match e {
            NetError::Failed(s) | NetError::Refused(s) => s,
        }
    }
}

/// The network settings of the MCP server whose authorization runs: the same proxy setting and
/// extra root certificates as its own connection, and the cap on answers.
#[derive(Clone, Debug)]
pub(crate) struct NetSettings {
    pub(crate) proxy: ProxyConfig,
    pub(crate) roots: Vec<Vec<u8>>,
    pub(crate) max_body: usize,
}

impl Default for NetSettings {
    fn default() -> Self {
        NetSettings {
            proxy: ProxyConfig::FromEnv,
            roots: Vec::new(),
            max_body: crate::config::Limits::default().max_auth_response_bytes,
        }
    }
}

/// The flow's HTTP client.
#[derive(Clone)]
pub(crate) struct Net {
    settings: NetSettings,
    timeout: Duration,
}

impl std::fmt::Debug for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Net")
    }
}

/// A request's method and body.
#[derive(Clone, Copy)]
enum Verb<'a> {
    Get,
    Post(&'a str, &'a str),
}

impl Net {
    /// A client with the server's `settings`, trusting `extra_roots` (DER) too, with `timeout`
    /// per request.
    pub(crate) fn new(settings: NetSettings, extra_roots: &[Vec<u8>], timeout: Duration) -> Net {
        let mut settings = settings;
        settings.roots.extend(extra_roots.iter().cloned());
        Net { settings, timeout }
    }

    /// `GET url` with `Accept: application/json`, answered by `deadline` when that comes before
    /// the request's own timeout (the steps of one discovery share a deadline).
    pub(crate) fn get_by(&self, url: &str, deadline: Instant) -> Result<Reply, NetError> {
        self.send(
            Verb::Get,
            url,
            &[("MCP-Protocol-Version", "2025-11-25".to_owned())],
            Some(deadline),
        )
    }

    /// The timeout of each request.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// `POST url` with a form body and extra headers.
    pub(crate) fn post_form(
        &self,
        url: &str,
        body: String,
        headers: &[(&str, String)],
    ) -> Result<Reply, NetError> {
        self.send(
            Verb::Post(&body, "application/x-www-form-urlencoded"),
            url,
            headers,
            None,
        )
    }

    /// `POST url` with a JSON body.
    pub(crate) fn post_json(&self, url: &str, body: &Value) -> Result<Reply, NetError> {
        let body = body.to_string();
        self.send(Verb::Post(&body, "application/json"), url, &[], None)
    }

    /// The agent for `url`: the server's proxy setting applied to this URL.
    fn agent(&self, url: &str) -> Result<ureq::Agent, NetError> {
        let shown = shown(url);
        let proxy = route_for(&self.settings.proxy, url)
            .and_then(|route| match route {
                Route::Direct => Ok(None),
                Route::Proxy(p) => p.to_ureq().map(Some),
            })
            .map_err(|e| NetError::Failed(format!("{shown}: {e}")))?;
        Ok(crate::transport::web::agent(&self.settings.roots, proxy))
    }

    /// Sends the request, following redirects within its origin, answered by `deadline` or
    /// within the request's own timeout, whichever comes first.
    fn send(
        &self,
        verb: Verb<'_>,
        url: &str,
        headers: &[(&str, String)],
        deadline: Option<Instant>,
    ) -> Result<Reply, NetError> {
        let own = crate::deadline::after(self.timeout);
        let deadline = deadline.map_or(own, |d| d.min(own));
        let home = origin(url);
        let policy = Policy {
            home_url: url,
            home: home.as_ref(),
            cross_origin: false,
            // A form carries a code, verifier, refresh token or secret: it is sent again only
            // where 307 and 308 say to.
            others_follow_301_302: false,
            elsewhere: "requests to the authorization server are redirected within their \
                        origin only",
            shown,
        };
        let once = |url: &str| {
            let agent = self.agent(url)?;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(NetError::Failed(format!("{}: timed out", shown(url))));
            }
            match verb {
                Verb::Get => {
                    let mut req = agent
                        .get(url)
                        .config()
                        .timeout_global(Some(left))
                        .build()
                        .header("Accept", "application/json");
                    for (k, v) in headers {
                        req = req.header(*k, v.as_str());
                    }
                    req.call()
                }
                Verb::Post(body, content_type) => {
                    let mut req = agent
                        .post(url)
                        .config()
                        .timeout_global(Some(left))
                        .build()
                        .header("Accept", "application/json")
                        .content_type(content_type);
                    for (k, v) in headers {
                        req = req.header(*k, v.as_str());
                    }
                    req.send(body)
                }
            }
            .map_err(|e| NetError::Failed(describe(url, e)))
        };
        let refuse =
            |what: &str, status, why| NetError::Refused(format!("{what}: HTTP {status}: {why}"));
        let sent = follow(&policy, matches!(verb, Verb::Get), url, shown, once, refuse)?;
        self.read(&sent.url, sent.resp)
    }

    fn read(&self, url: &str, resp: ureq::http::Response<ureq::Body>) -> Result<Reply, NetError> {
        let status = resp.status().as_u16();
        let dpop_nonce = resp
            .headers()
            .get("DPoP-Nonce")
            .and_then(|v| v.to_str().ok())
            .and_then(super::dpop::usable_nonce)
            .map(str::to_owned);
        let cap = self.settings.max_body;
        let mut buf = Vec::new();
        resp.into_body()
            .into_reader()
            .take(cap as u64 + 1)
            .read_to_end(&mut buf)
            .map_err(|e| NetError::Failed(format!("{}: {e}", shown(url))))?;
        if buf.len() > cap {
            return Err(NetError::Refused(format!(
                "{}: the answer is larger than {cap} bytes (Limits::max_auth_response_bytes); \
                 refusing it",
                shown(url)
            )));
        }
        Ok(Reply {
            status,
            body: String::from_utf8_lossy(&buf).into_owned(),
            dpop_nonce,
        })
    }
}

/// A URL as messages show it: without query and fragment, credentials redacted.
pub(crate) fn shown(url: &str) -> String {
    // A peer's URL: its control characters are shown escaped, never acted on.
    let bare = url.split(['?', '#']).next().unwrap_or("");
    redact_url(&super::display::escaped(bare))
}

/// A failed request, naming the URL without its query.
fn describe(url: &str, e: ureq::Error) -> String {
    let shown = shown(url);
    match e {
        ureq::Error::BadUri(_) => format!("{shown}: the URL is not usable"),
        ureq::Error::Timeout(_) => format!("{shown}: timed out"),
        ureq::Error::Io(io) => format!("{shown}: {io}"),
        ureq::Error::HostNotFound => format!("{shown}: host not found (DNS)"),
        e => format!("{shown}: {e}"),
    }
}
