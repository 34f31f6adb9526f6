//! What every request carries besides the body: configured headers and the `Authorization`
//! provider. Values never show in `Debug`. Shared by every remote transport (the WebSocket
//! handshake takes them through [`RequestHeaders::resolve`]).

use std::borrow::Cow;
use std::fmt;

use crate::config::AuthProvider;
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

    /// Adds the headers to a request; the auth provider is called now.
    pub(crate) fn apply<B>(
        &self,
        server: &str,
        mut req: ureq::RequestBuilder<B>,
    ) -> Result<ureq::RequestBuilder<B>, Error> {
        for (name, value) in self.resolve(server)? {
            req = req.header(name, value.as_ref());
        }
        Ok(req)
    }

    /// The headers one request carries, in order: the configured ones, then the auth provider's
    /// `Authorization` (called now), which replaces a configured one.
    ///
    /// # Errors
    /// [`Error::Transport`] naming the server when the provider fails or returns a value that
    /// cannot be a header (the value is never shown).
    pub(crate) fn resolve(&self, server: &str) -> Result<Vec<(&str, Cow<'_, str>)>, Error> {
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
        let value = (auth.0)().map_err(|e| fail(format!("the auth provider failed: {e}")))?;
        if ureq::http::HeaderValue::from_str(&value).is_err() {
            return Err(fail(
                "the auth provider returned a value that is not a valid HTTP header value".into(),
            ));
        }
        let mut out: Vec<(&str, Cow<'_, str>)> = self
            .headers
            .iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case("authorization"))
            .map(|(k, v)| (k.as_str(), Cow::Borrowed(v.as_str())))
            .collect();
        // An empty value: no `Authorization` at all (an OAuth client before it has a token).
        if !value.is_empty() {
            out.push(("Authorization", Cow::Owned(value)));
        }
        Ok(out)
    }
}

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
            .resolve("s")
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

    #[test]
    fn a_provider_value_that_cannot_be_a_header_is_refused_unshown() {
        let headers = RequestHeaders::new(
            Vec::new(),
            Some(AuthProvider::new(
                || Ok("Bearer s3cret\r\nX-Evil: 1".into()),
            )),
        );
        let err = headers.resolve("api").expect_err("refused");
        let text = err.to_string();
        assert!(matches!(err, Error::Transport { .. }), "{err:?}");
        assert!(
            text.contains("server `api`") && !text.contains("s3cret"),
            "{text}"
        );
    }
}
