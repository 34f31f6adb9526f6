//! Small pieces the flow needs: the endpoint security check, percent-encoding, query strings,
//! base64url, randomness and the `WWW-Authenticate` challenge. URLs are taken apart by
//! [`crate::url`].

use base64::Engine as _;
use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use ring::rand::{SecureRandom, SystemRandom};

/// Whether `url` may be used for an authorization-server endpoint: `https://`, or `http://` on
/// a loopback host (`localhost` and its subdomains, 127.0.0.0/8, `::1`). `what` names the endpoint in the error.
pub(crate) fn require_secure(url: &str, what: &str) -> Result<(), String> {
    let shown = super::net::shown(url);
    let (scheme, host) = crate::url::scheme_and_host(url)
        .ok_or_else(|| format!("the authorization server's {what} `{shown}` is not a URL"))?;
    // `localhost` and its subdomains (RFC 6761), 127.0.0.0/8, ::1.
    let loopback_host = crate::url::is_loopback(&host);
    match scheme.as_str() {
        "https" if !host.is_empty() => Ok(()),
        "http" if loopback_host => Ok(()),
        "http" => Err(format!(
            "insecure authorization server endpoint: its {what} `{shown}` is not https:// \
             (http:// is allowed only for localhost, 127.0.0.0/8 and ::1); refusing to use it"
        )),
        _ => Err(format!(
            "the authorization server's {what} `{shown}` is not an https:// URL"
        )),
    }
}

/// Every byte but the RFC 3986 unreserved characters (letters, digits, `-`, `.`, `_`, `~`).
const RESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes everything but the RFC 3986 unreserved characters.
pub(crate) fn encode(s: &str) -> String {
    utf8_percent_encode(s, RESERVED).to_string()
}

/// Decodes `%XX` escapes and `+` (as a space, form style); a broken escape is kept as written.
pub(crate) fn decode(s: &str) -> String {
    // `+` first: a `%2B` stands for a plus sign, not a space.
    percent_decode_str(&s.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

/// `k=v&k=v`, each part percent-encoded.
pub(crate) fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The query parameters of a URL (or of a bare query string), decoded.
pub(crate) fn query_params(url: &str) -> Vec<(String, String)> {
    let query = match url.find('?') {
        Some(i) => &url[i + 1..],
        None if url.contains("://") => "",
        None => url,
    };
    let query = query.split('#').next().unwrap_or("");
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}

/// The first value of query parameter `name`.
pub(crate) fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Unpadded base64url.
pub(crate) fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Standard padded base64.
pub(crate) fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `n` random bytes from the system's secure generator, base64url-encoded.
pub(crate) fn random_token(n: usize) -> Result<String, String> {
    let mut buf = vec![0u8; n];
    SystemRandom::new()
        .fill(&mut buf)
        .map_err(|_| "the system random generator failed".to_owned())?;
    Ok(b64url(&buf))
}

/// The PKCE S256 challenge of `verifier`.
pub(crate) fn s256(verifier: &str) -> String {
    b64url(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()).as_ref())
}

/// What a `Bearer` or `DPoP` challenge says (the first value of each parameter).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Challenge {
    pub(crate) resource_metadata: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) error: Option<String>,
    /// A `DPoP` challenge says `error="use_dpop_nonce"`: the request wants a proof with the
    /// server's nonce, not another token (RFC 9449 §9).
    pub(crate) use_dpop_nonce: bool,
    /// The challenge names the `DPoP` scheme and not `Bearer`: the server takes only
    /// DPoP-bound tokens (RFC 9449 §7.1).
    pub(crate) dpop_only: bool,
}

impl Challenge {
    /// Parses the `Bearer` and `DPoP` challenges among those of a `WWW-Authenticate` value
    /// (other schemes are skipped; an unparsable one gives what could be read).
    pub(crate) fn parse(header: Option<&str>) -> Challenge {
        let mut out = Challenge::default();
        let Some(h) = header else { return out };
        let mut in_bearer = false;
        let mut in_dpop = false;
        let (mut saw_bearer, mut saw_dpop) = (false, false);
        let mut rest = h.trim();
        while !rest.is_empty() {
            // A token: either a scheme name (followed by space) or a parameter name (followed
            // by `=`).
            let end = rest
                .find(|c: char| c == '=' || c == ',' || c.is_whitespace())
                .unwrap_or(rest.len());
            let word = &rest[..end];
            rest = rest[end..].trim_start();
            if let Some(r) = rest.strip_prefix('=') {
                let r = r.trim_start();
                let (value, after) = if let Some(q) = r.strip_prefix('"') {
                    let mut v = String::new();
                    let mut chars = q.char_indices();
                    let mut stop = q.len();
                    while let Some((i, c)) = chars.next() {
                        match c {
                            '\\' => {
                                if let Some((_, n)) = chars.next() {
                                    v.push(n);
                                }
                            }
                            '"' => {
                                stop = i + 1;
                                break;
                            }
                            c => v.push(c),
                        }
                    }
                    (v, &q[stop.min(q.len())..])
                } else {
                    let e = r.find([',', ' ']).unwrap_or(r.len());
                    (r[..e].to_owned(), &r[e..])
                };
                if in_dpop && word.eq_ignore_ascii_case("error") && value == "use_dpop_nonce" {
                    out.use_dpop_nonce = true;
                }
                if in_bearer || in_dpop {
                    let slot = match word.to_ascii_lowercase().as_str() {
                        "resource_metadata" => Some(&mut out.resource_metadata),
                        "scope" => Some(&mut out.scope),
                        "error" => Some(&mut out.error),
                        _ => None,
                    };
                    if let Some(slot) = slot {
                        if slot.is_none() {
                            *slot = Some(value);
                        }
                    }
                }
                rest = after.trim_start().trim_start_matches(',').trim_start();
            } else if !word.is_empty() {
                in_bearer = word.eq_ignore_ascii_case("bearer");
                in_dpop = word.eq_ignore_ascii_case("dpop");
                saw_bearer |= in_bearer;
                saw_dpop |= in_dpop;
                rest = rest.trim_start_matches(',').trim_start();
            } else {
                rest = rest.get(1..).unwrap_or("").trim_start();
            }
        }
        out.dpop_only = saw_dpop && !saw_bearer;
        out
    }

    /// Whether this is a 403 asking for more scope.
    pub(crate) fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_challenge_is_dpop_only_when_it_names_dpop_and_not_bearer() {
        let only = Challenge::parse(Some(
            r#"DPoP resource_metadata="https://a/x", algs="ES256""#,
        ));
        assert!(only.dpop_only);
        assert_eq!(only.resource_metadata.as_deref(), Some("https://a/x"));
        let both = Challenge::parse(Some(r#"Bearer realm="a", DPoP algs="ES256""#));
        assert!(!both.dpop_only);
        assert!(!Challenge::parse(Some(r#"Bearer error="invalid_token""#)).dpop_only);
        assert!(!Challenge::parse(None).dpop_only);
        // A parameter named like the scheme is not a scheme.
        assert!(!Challenge::parse(Some(r#"Bearer scheme="DPoP""#)).dpop_only);
    }

    #[test]
    fn only_https_or_loopback_endpoints_pass() {
        for ok in [
            "https://as.example.com/token",
            "http://localhost:3000/token",
            "http://127.0.0.1/t",
            "http://127.8.9.1:5/t",
            "http://[::1]:8/t",
            "HTTP://LOCALHOST/t",
            "http://as.localhost:8/t",
        ] {
            assert!(require_secure(ok, "token_endpoint").is_ok(), "{ok}");
        }
        for bad in [
            "http://as.example.com/token",
            "http://localhost.evil.com/t",
            "http://evil-localhost/t",
            "http://10.0.0.1/t",
            "ftp://as/t",
            "javascript:alert(1)",
            "/token",
        ] {
            let e = require_secure(bad, "token_endpoint").unwrap_err();
            assert!(e.contains("token_endpoint"), "{e}");
        }
    }

    #[test]
    fn parses_challenges() {
        let c = Challenge::parse(Some(
            r#"Basic realm="x", Bearer error="insufficient_scope", scope="a b", resource_metadata="https://h/.well-known/x""#,
        ));
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://h/.well-known/x")
        );
        assert!(c.insufficient_scope());
        let c = Challenge::parse(Some(r#"Basic scope="nope""#));
        assert_eq!(c.scope, None);
        let c = Challenge::parse(Some("Bearer error=invalid_token,scope=x"));
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.scope.as_deref(), Some("x"));
        assert!(!c.use_dpop_nonce);
    }

    #[test]
    fn parses_dpop_challenges() {
        let c = Challenge::parse(Some(
            r#"DPoP resource_metadata="https://h/rm", algs="ES256""#,
        ));
        assert_eq!(c.resource_metadata.as_deref(), Some("https://h/rm"));
        assert!(!c.use_dpop_nonce);
        let c = Challenge::parse(Some(
            r#"Bearer realm="x", DPoP error="use_dpop_nonce", error_description="nonce""#,
        ));
        assert!(c.use_dpop_nonce);
        // Only a DPoP challenge asks for a nonce.
        let c = Challenge::parse(Some(r#"Bearer error="use_dpop_nonce""#));
        assert!(!c.use_dpop_nonce);
        let c = Challenge::parse(Some(r#"Basic error="use_dpop_nonce""#));
        assert!(!c.use_dpop_nonce);
    }

    #[test]
    fn odd_challenges_end_without_panicking() {
        for h in [
            "",
            "\"",
            "=",
            ",,,",
            "Bearer =",
            "Bearer scope=\"unterminated",
            "Bearer é=ü, scope=ö",
            "Bearer scope",
            "Bearer ,scope=\"a\\\"b\"",
            "=\"x\" Bearer scope=y",
        ] {
            let _ = Challenge::parse(Some(h));
        }
        let c = Challenge::parse(Some(r#"Bearer scope="a\"b""#));
        assert_eq!(c.scope.as_deref(), Some("a\"b"));
    }

    #[test]
    fn query_round_trip() {
        let q = form(&[("a b", "c&d=é")]);
        let p = query_params(&format!("http://x/cb?{q}"));
        assert_eq!(param(&p, "a b"), Some("c&d=é"));
        assert_eq!(decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn pkce_matches_the_rfc_example() {
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
