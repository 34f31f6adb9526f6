//! The HTTP requests of the flow (metadata, registration, token, the headless authorization
//! GET): one ureq agent that never follows redirects and returns every status as a value.
//! Bodies are read up to a cap; nothing read here is put in a message except the `error` and
//! `error_description` fields of an OAuth error answer.

use std::io::Read;
use std::time::Duration;

use serde_json::Value;

/// The largest metadata, registration or token answer read.
const MAX_BODY: u64 = 256 * 1024;

/// An answer: status and body.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) body: String,
}

impl Reply {
    /// The body as a JSON object, when it is one.
    pub(crate) fn json(&self) -> Option<serde_json::Map<String, Value>> {
        match serde_json::from_str(&self.body) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        }
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

/// The flow's HTTP client.
#[derive(Clone)]
pub(crate) struct Net {
    agent: ureq::Agent,
}

impl std::fmt::Debug for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Net")
    }
}

impl Net {
    /// A client trusting the webpki roots plus `extra_roots` (DER), with `timeout` per request.
    pub(crate) fn new(extra_roots: &[Vec<u8>], timeout: Duration) -> Net {
        let webpki = webpki_root_certs::TLS_SERVER_ROOT_CERTS
            .iter()
            .map(|c| ureq::tls::Certificate::from_der(c));
        let extra = extra_roots
            .iter()
            .map(|der| ureq::tls::Certificate::from_der(der).to_owned());
        let tls = ureq::tls::TlsConfig::builder()
            .root_certs(ureq::tls::RootCerts::from(webpki.chain(extra)))
            .unversioned_rustls_crypto_provider(std::sync::Arc::new(
                rustls::crypto::ring::default_provider(),
            ));
        let config = ureq::Agent::config_builder()
            .tls_config(tls.build())
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(timeout))
            .user_agent(concat!("mcp-blocking/", env!("CARGO_PKG_VERSION")))
            .build();
        Net {
            agent: ureq::Agent::new_with_config(config),
        }
    }

    /// `GET url` with `Accept: application/json`.
    pub(crate) fn get(&self, url: &str) -> Result<Reply, String> {
        let resp = self
            .agent
            .get(url)
            .header("Accept", "application/json")
            .header("MCP-Protocol-Version", "2025-11-25")
            .call()
            .map_err(|e| describe(url, e))?;
        read(resp)
    }

    /// `POST url` with a form body and extra headers.
    pub(crate) fn post_form(
        &self,
        url: &str,
        body: String,
        headers: &[(&str, String)],
    ) -> Result<Reply, String> {
        let mut req = self
            .agent
            .post(url)
            .header("Accept", "application/json")
            .content_type("application/x-www-form-urlencoded");
        for (k, v) in headers {
            req = req.header(*k, v.as_str());
        }
        let resp = req.send(body).map_err(|e| describe(url, e))?;
        read(resp)
    }

    /// `POST url` with a JSON body.
    pub(crate) fn post_json(&self, url: &str, body: &Value) -> Result<Reply, String> {
        let resp = self
            .agent
            .post(url)
            .header("Accept", "application/json")
            .content_type("application/json")
            .send(body.to_string())
            .map_err(|e| describe(url, e))?;
        read(resp)
    }
}

fn read(resp: ureq::http::Response<ureq::Body>) -> Result<Reply, String> {
    let status = resp.status().as_u16();
    let mut buf = Vec::new();
    let _ = resp
        .into_body()
        .into_reader()
        .take(MAX_BODY)
        .read_to_end(&mut buf);
    Ok(Reply {
        status,
        body: String::from_utf8_lossy(&buf).into_owned(),
    })
}

/// A failed request, naming the URL without its query.
fn describe(url: &str, e: ureq::Error) -> String {
    let shown = url.split(['?', '#']).next().unwrap_or("");
    match e {
        ureq::Error::BadUri(_) => format!("{shown}: the URL is not usable"),
        ureq::Error::Timeout(_) => format!("{shown}: timed out"),
        ureq::Error::Io(io) => format!("{shown}: {io}"),
        ureq::Error::HostNotFound => format!("{shown}: host not found (DNS)"),
        e => format!("{shown}: {e}"),
    }
}
