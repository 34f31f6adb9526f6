//! The HTTP client every HTTP transport shares: statuses come back as values, redirects are
//! returned rather than followed, idle connections are kept per host, and resolved addresses
//! are remembered for a while.

use crate::sync::lock;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a resolved address is reused.
const DNS_TTL: Duration = Duration::from_secs(30);

/// Builds the ureq client all HTTP transports use: statuses (redirects included) come back as
/// values, not errors.
/// `extra_roots` (DER) are trusted for `https://` on top of the webpki (Mozilla) roots.
///
/// `proxy` is the one proxy this client uses (`None`: none), chosen by
/// [`proxy::for_ureq`](crate::transport::proxy::for_ureq) for the server's URL. ureq never reads
/// the proxy environment variables itself: its own reading takes the first variable set for
/// every scheme and has no loopback bypass.
pub(crate) fn agent(extra_roots: &[Vec<u8>], proxy: Option<ureq::Proxy>) -> ureq::Agent {
    // The roots are always given explicitly (the webpki list borrows static data, so this copies
    // no certificate), and so is the crypto provider: ureq is built without either default.
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
        // Redirects are followed by `redirect.rs`, which decides what may follow them.
        .max_redirects(0)
        .user_agent(concat!("mcp-blocking/", env!("CARGO_PKG_VERSION")))
        .max_idle_connections_per_host(16)
        .proxy(proxy)
        .build();
    ureq::Agent::with_parts(
        config,
        super::buffered::BufferedConnector::new(
            ureq::unversioned::transport::DefaultConnector::new(),
        ),
        CachingResolver::default(),
    )
}

/// ureq resolves the host before every request, and with a timeout set (we always set one) it
/// does so on a fresh thread. Remembering the answer for a while keeps a kept-alive connection
/// as cheap as it should be.
#[derive(Debug, Default)]
struct CachingResolver {
    inner: ureq::unversioned::resolver::DefaultResolver,
    cache: Mutex<
        Vec<(
            String,
            Instant,
            ureq::unversioned::resolver::ResolvedSocketAddrs,
        )>,
    >,
}

impl ureq::unversioned::resolver::Resolver for CachingResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        // ureq asks before every request, kept-alive or not: the lookup builds nothing.
        let scheme = uri.scheme_str().unwrap_or("");
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or("");
        let is_key = |k: &str| {
            k.len() == scheme.len() + 3 + authority.len()
                && k.starts_with(scheme)
                && k[scheme.len()..].starts_with("://")
                && k.ends_with(authority)
        };
        let now = Instant::now();
        {
            let mut cache = lock(&self.cache);
            cache.retain(|(_, at, _)| now.duration_since(*at) < DNS_TTL);
            if let Some((_, _, addrs)) = cache.iter().find(|(k, _, _)| is_key(k)) {
                return Ok(addrs.clone());
            }
        }
        let key = format!("{scheme}://{authority}");
        let addrs = self.inner.resolve(uri, config, timeout)?;
        let mut cache = lock(&self.cache);
        if cache.len() >= 32 {
            cache.remove(0);
        }
        cache.push((key, now, addrs.clone()));
        Ok(addrs)
    }
}
