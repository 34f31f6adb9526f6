//! A proxy URL taken apart (`[http://][user[:password]@]host[:port][/]`): plain data, read
//! where a [`ProxyConfig::Url`](super::ProxyConfig::Url) is validated and where a connection
//! chooses its route (`transport/proxy.rs`, which also says how the proxy is used).

use std::fmt;

use super::redact_url;

/// An HTTP proxy: where it is, its credentials (percent-decoded), and where it was named.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ProxyUrl {
    /// Host name or IP address (no brackets).
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) username: Option<String>,
    pub(crate) password: Option<String>,
    /// Where the proxy was named, for messages: an environment variable, or
    /// `the server's proxy setting`.
    pub(crate) source: String,
}

impl fmt::Debug for ProxyUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyUrl")
            .field("url", &self.shown())
            .field("source", &self.source)
            .finish()
    }
}

impl ProxyUrl {
    /// `http://host:port`, as messages show the proxy (never the credentials).
    pub(crate) fn shown(&self) -> String {
        format!("http://{}", self.authority())
    }

    /// `host:port`, with brackets around an IPv6 address.
    pub(crate) fn authority(&self) -> String {
        format!("{}:{}", bracketed(&self.host), self.port)
    }
}

/// Reads a proxy URL: `[http://][user[:password]@]host[:port][/]`; the port defaults to 80.
pub(crate) fn parse_proxy_url(raw: &str, source: &str) -> Result<ProxyUrl, String> {
    let value = raw.trim();
    let shown = redact_url(value);
    let bad = |why: &str| format!("the proxy `{shown}` (from {source}) is not usable: {why}");
    let rest = match value.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
        Some((scheme, _)) => {
            return Err(bad(&format!(
                "`{scheme}://` proxies are not supported (only `http://`)"
            )))
        }
        None => value,
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.contains(['/', '?', '#']) {
        return Err(bad("a proxy URL has no path"));
    }
    let (userinfo, hostport) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let (host, port) = split_host_port(hostport).ok_or_else(|| bad("no host"))?;
    let port = match port {
        Some(p) => p
            .parse::<u16>()
            .map_err(|_| bad("the port is not a number"))?,
        None => 80,
    };
    if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c == '@') {
        return Err(bad("no host"));
    }
    let (username, password) = match userinfo {
        None => (None, None),
        Some(u) => {
            let (name, pass) = match u.split_once(':') {
                Some((n, p)) => (n, Some(p)),
                None => (u, None),
            };
            let decode = |s: &str| percent_decode(s).ok_or_else(|| bad("bad percent-encoding"));
            (Some(decode(name)?), pass.map(decode).transpose()?)
        }
    };
    Ok(ProxyUrl {
        host: normalise_host(host),
        port,
        username,
        password,
        source: source.to_owned(),
    })
}

/// Splits `host[:port]` or `[v6][:port]`; `None` when the brackets do not close.
pub(crate) fn split_host_port(s: &str) -> Option<(&str, Option<&str>)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return match after {
            "" => Some((host, None)),
            _ => Some((host, Some(after.strip_prefix(':')?))),
        };
    }
    match s.split_once(':') {
        Some((h, p)) if !p.contains(':') => Some((h, Some(p))),
        // A bare IPv6 address.
        Some(_) => Some((s, None)),
        None => Some((s, None)),
    }
}

/// Lower case, no brackets, no trailing dot.
pub(crate) fn normalise_host(host: &str) -> String {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.strip_suffix('.').unwrap_or(h).to_ascii_lowercase()
}

/// `host` with brackets when it is an IPv6 address.
pub(crate) fn bracketed(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    }
}

/// Decodes `%XX` escapes; `None` for a broken escape or a result that is not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    // The crate keeps a broken escape as written; a proxy's credentials with one are refused.
    let b = s.as_bytes();
    let broken = b.iter().enumerate().any(|(i, &c)| {
        c == b'%'
            && !b
                .get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    });
    if broken {
        return None;
    }
    percent_encoding::percent_decode_str(s)
        .decode_utf8()
        .ok()
        .map(|d| d.into_owned())
}
