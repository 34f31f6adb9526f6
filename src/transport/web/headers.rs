//! What every request carries besides the body: configured headers and the `Authorization`
//! provider. Values never show in `Debug`. Shared by every remote transport (the WebSocket
//! handshake takes them through [`RequestHeaders::resolve`]).

use std::borrow::Cow;
use std::fmt;

use crate::config::{AuthProvider, RequestAuth};
use crate::error::Error;

/// Configured headers and the auth callback, applied to every request. `Debug` shows names only.
#[derive(Clone, Default)]
pub(crate) struct RequestHeaders {
    headers: Vec<(String, String)>,
    auth: Option<AuthProvider>,
}

impl fmt::Debug for RequestHeaders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_map();
        for (name, _) in &self.headers {
            list.entry(name, &"<redacted>");
        }
        if self.auth.is_some() {
            list.entry(&"authorization", &"<provider, redacted>");
        }
        list.finish()
    }
}

impl RequestHeaders {
    /// Static headers plus an optional per-request `Authorization` provider.
    pub(crate) fn new(headers: Vec<(String, String)>, auth: Option<AuthProvider>) -> Self {
        RequestHeaders { headers, auth }
    }

    /// Adds the headers of a `method` request to `url`; the auth provider is called now.
    /// Returns the request and whether it carries a DPoP proof.
    pub(crate) fn apply<B>(
        &self,
        server: &str,
        method: &str,
        url: &str,
        mut req: ureq::RequestBuilder<B>,
    ) -> Result<(ureq::RequestBuilder<B>, bool), Error> {
        let mut proof = false;
        for (name, value) in self.resolve(server, method, url)? {
            proof |= name == DPOP;
            req = req.header(name, value.as_ref());
        }
        Ok((req, proof))
    }

    /// The per-request credentials of the auth provider, when it has them (OAuth with a
    /// DPoP-bound token), for keeping the nonces the server sends.
    pub(crate) fn request_auth(&self) -> Option<&std::sync::Arc<dyn RequestAuth>> {
        self.auth.as_ref().and_then(|a| a.1.as_ref())
    }

    /// The headers a `method` request to `url` carries, in order: the configured ones, then
    /// the auth provider's `Authorization` (called now), which replaces a configured one, and
    /// its `DPoP` proof when it signs one.
    ///
    /// # Errors
    /// [`Error::Transport`] naming the server when the provider fails or returns a value that
    /// cannot be a header (the value is never shown).
    pub(crate) fn resolve(
        &self,
        server: &str,
        method: &str,
        url: &str,
    ) -> Result<Vec<(&str, Cow<'_, str>)>, Error> {
        let fail = |detail: String| Error::Transport {
            server: server.to_owned(),
            status: None,
            source: Some(Box::new(AuthProviderFailed(detail.clone()))),
            detail,
        };
        let Some(auth) = &self.auth else {
            return Ok(self
                .headers
                .iter()
                .map(|(k, v)| (k.as_str(), Cow::Borrowed(v.as_str())))
                .collect());
        };
        let (value, proof) = match &auth.1 {
            Some(per_request) => per_request.headers(method, url),
            None => (auth.0)().map(|v| (v, None)),
        }
        .map_err(|e| fail(format!("the auth provider failed: {e}")))?;
        let valid = |v: &str| ureq::http::HeaderValue::from_str(v).is_ok();
        if !valid(&value) || proof.as_deref().is_some_and(|p| !valid(p)) {
            return Err(fail(
                "the auth provider returned a value that is not a valid HTTP header value".into(),
            ));
        }
        let mut out: Vec<(&str, Cow<'_, str>)> = self
            .headers
            .iter()
            .filter(|(k, _)| {
                let replaced = k.eq_ignore_ascii_case("authorization")
                    || (proof.is_some() && k.eq_ignore_ascii_case(DPOP));
                !replaced
            })
            .map(|(k, v)| (k.as_str(), Cow::Borrowed(v.as_str())))
            .collect();
        // An empty value: no `Authorization` at all (an OAuth client before it has a token).
        if !value.is_empty() {
            out.push(("Authorization", Cow::Owned(value)));
        }
        if let Some(p) = proof {
            out.push((DPOP, Cow::Owned(p)));
        }
        Ok(out)
    }
}

/// The header of a DPoP proof.
const DPOP: &str = "DPoP";

/// The cause of a transport error raised because the auth provider could not give a usable
/// `Authorization` value (so a failed connect is reported as an authentication failure).
#[derive(Debug)]
pub(crate) struct AuthProviderFailed(String);

impl std::fmt::Display for AuthProviderFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AuthProviderFailed {}

#[cfg(test)]
mod tests {
    //! Redaction of header values.

    use super::*;

    #[test]
    fn header_values_are_redacted_in_debug() {
        let headers = RequestHeaders::new(
            vec![("Authorization".into(), "Bearer s3cret".into())],
            Some(AuthProvider::new(|| Ok("Bearer other".into()))),
        );
        let shown = format!("{headers:?}");
        assert!(shown.contains("Authorization"), "{shown}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("other"),
            "{shown}"
        );
    }

    #[test]
    fn the_provider_replaces_a_configured_authorization() {
        let headers = RequestHeaders::new(
            vec![
                ("authorization".into(), "Bearer old".into()),
                ("X-Key".into(), "k".into()),
            ],
            Some(AuthProvider::new(|| Ok("Bearer fresh".into()))),
        );
        let got: Vec<(String, String)> = headers
            .resolve("s", "POST", "http://h/mcp")
            .expect("resolved")
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.into_owned()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("X-Key".to_owned(), "k".to_owned()),
                ("Authorization".to_owned(), "Bearer fresh".to_owned())
            ]
        );
    }

    /// Signs a made-up proof naming the request it was asked for.
    struct Signer;

    impl RequestAuth for Signer {
        fn headers(&self, method: &str, url: &str) -> Result<(String, Option<String>), String> {
            if url.contains("bad") {
                return Ok(("DPoP t".into(), Some("proof\r\nX-Evil: 1".into())));
            }
            Ok(("DPoP t".into(), Some(format!("proof-of {method} {url}"))))
        }

        fn nonce(&self, _: &str) -> bool {
            false
        }
    }

    #[test]
    fn a_per_request_provider_signs_for_the_request_and_replaces_a_configured_proof() {
        let headers = RequestHeaders::new(
            vec![
                ("dpop".into(), "stale".into()),
                ("X-Key".into(), "k".into()),
            ],
            Some(AuthProvider::per_request(
                || Err("not used when a request is at hand".into()),
                std::sync::Arc::new(Signer),
            )),
        );
        assert!(headers.request_auth().is_some());
        let got: Vec<(String, String)> = headers
            .resolve("s", "DELETE", "http://h/mcp")
            .expect("resolved")
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.into_owned()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("X-Key".to_owned(), "k".to_owned()),
                ("Authorization".to_owned(), "DPoP t".to_owned()),
                ("DPoP".to_owned(), "proof-of DELETE http://h/mcp".to_owned()),
            ]
        );
        let err = headers
            .resolve("s", "POST", "http://h/bad")
            .expect_err("a proof that cannot be a header");
        assert!(!err.to_string().contains("X-Evil"), "{err}");
        let plain = RequestHeaders::new(Vec::new(), Some(AuthProvider::new(|| Ok("x".into()))));
        assert!(plain.request_auth().is_none());
    }

    #[test]
    fn a_provider_value_that_cannot_be_a_header_is_refused_unshown() {
        let headers = RequestHeaders::new(
            Vec::new(),
            Some(AuthProvider::new(
                || Ok("Bearer s3cret\r\nX-Evil: 1".into()),
            )),
        );
        let err = headers
            .resolve("api", "POST", "http://h/mcp")
            .expect_err("refused");
        let text = err.to_string();
        assert!(matches!(err, Error::Transport { .. }), "{err:?}");
        assert!(
            text.contains("server `api`") && !text.contains("s3cret"),
            "{text}"
        );
    }
}
