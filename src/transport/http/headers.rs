//! What every request carries besides the body: configured headers and the `Authorization`
//! provider. Values never show in `Debug`.

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
        for (name, value) in &self.headers {
            req = req.header(name.as_str(), value.as_str());
        }
        if let Some(auth) = &self.auth {
            let value = (auth.0)().map_err(|e| Error::Transport {
                server: server.to_owned(),
                status: None,
                detail: format!("the auth provider failed: {e}"),
                source: None,
            })?;
            req = req.header("Authorization", value.as_str());
        }
        Ok(req)
    }
}

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
}
