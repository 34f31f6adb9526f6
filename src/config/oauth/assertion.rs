//! Where the JWTs of the assertion grants come from: a workload's platform-issued token
//! ([`OAuthConfig::workload_identity`](super::OAuthConfig::workload_identity)) and an enterprise
//! identity provider's ID token ([`EnterpriseIdp`]).

use std::fmt;
use std::io::Read;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::redirect::RedirectHandler;
use super::store::Secret;

/// The largest assertion read from a file, a variable or a callback: 64 KiB. Platform tokens
/// are a few kilobytes; anything larger is refused rather than sent.
pub const MAX_ASSERTION_BYTES: usize = 64 * 1024;

type Callback = Arc<dyn Fn() -> Result<String, String> + Send + Sync>;

#[derive(Clone)]
pub(crate) enum SourceKind {
    File(PathBuf),
    Env(String),
    Callback(Callback),
    Value(Secret),
}

/// Where a JWT comes from. It is read again each time a token is needed (never cached by the
/// crate), so a file a platform rotates (a Kubernetes projected token, a CI job's token file)
/// or a variable refreshed between runs is always read fresh. `Debug` shows the file's path or
/// the variable's name, never the token.
///
/// ```
/// use mcp_blocking::auth::AssertionSource;
/// let k8s = AssertionSource::file("/var/run/secrets/tokens/mcp-token");
/// let ci = AssertionSource::env("MCP_ID_TOKEN");
/// let cloud = AssertionSource::callback(|| Ok("eyJ...".to_owned()));
/// assert!(format!("{k8s:?}").contains("mcp-token"));
/// assert!(!format!("{:?}", AssertionSource::value("eyJh.eyJi.c2ln")).contains("eyJ"));
/// # let _ = (ci, cloud);
/// ```
#[derive(Clone)]
pub struct AssertionSource {
    pub(crate) kind: SourceKind,
}

impl AssertionSource {
    /// A file holding the JWT (surrounding whitespace ignored).
    pub fn file(path: impl Into<PathBuf>) -> AssertionSource {
        AssertionSource {
            kind: SourceKind::File(path.into()),
        }
    }

    /// An environment variable holding the JWT.
    pub fn env(variable: impl Into<String>) -> AssertionSource {
        AssertionSource {
            kind: SourceKind::Env(variable.into()),
        }
    }

    /// A function that returns the JWT (from a cloud metadata service, say), called each time
    /// one is needed; its error is shown as the reason the authorization failed, so it must
    /// not hold the token.
    pub fn callback(
        f: impl Fn() -> Result<String, String> + Send + Sync + 'static,
    ) -> AssertionSource {
        AssertionSource {
            kind: SourceKind::Callback(Arc::new(f)),
        }
    }

    /// A JWT given as it is.
    pub fn value(jwt: impl Into<String>) -> AssertionSource {
        AssertionSource {
            kind: SourceKind::Value(Secret::new(jwt)),
        }
    }
}

impl AssertionSource {
    /// Reads the JWT now: the file (at most [`MAX_ASSERTION_BYTES`], with a bounded read),
    /// the variable, the callback or the value, with surrounding whitespace removed. An empty
    /// value, one over the cap, or one that is not three non-empty base64url parts (a signed
    /// compact JWT) is refused before anything is sent. Errors name the source (the file's
    /// path, the variable's name), never its content.
    pub(crate) fn read(&self) -> Result<Secret, String> {
        let what = self.describe();
        let raw = match &self.kind {
            SourceKind::File(p) => read_capped(p).map_err(|e| format!("{what}: {e}"))?,
            SourceKind::Env(v) => match std::env::var(v) {
                Ok(s) => s,
                Err(std::env::VarError::NotPresent) => return Err(format!("{what} is not set")),
                Err(std::env::VarError::NotUnicode(_)) => {
                    return Err(format!("{what} does not hold text"))
                }
            },
            // The callback's error is the program's own words (documented to hold no token).
            SourceKind::Callback(f) => {
                f().map_err(|e| format!("{what} failed: {}", crate::config::echo(&e, 300)))?
            }
            SourceKind::Value(s) => s.expose().to_owned(),
        };
        if raw.len() > MAX_ASSERTION_BYTES {
            return Err(format!(
                "{what} holds more than {MAX_ASSERTION_BYTES} bytes; refusing to send it"
            ));
        }
        let jwt = raw.trim();
        if jwt.is_empty() {
            return Err(format!("{what} is empty"));
        }
        if !is_compact_jws(jwt) {
            return Err(format!(
                "{what} does not hold a signed JWT (three base64url parts separated by dots)"
            ));
        }
        Ok(Secret::new(jwt))
    }

    /// The JWT given as a value, if that is the source (hidden in errors like other secrets).
    pub(crate) fn given_value(&self) -> Option<&Secret> {
        match &self.kind {
            SourceKind::Value(s) => Some(s),
            _ => None,
        }
    }

    /// The source as errors name it.
    fn describe(&self) -> String {
        match &self.kind {
            SourceKind::File(p) => format!("the assertion file `{}`", p.display()),
            SourceKind::Env(v) => format!("the environment variable `{v}`"),
            SourceKind::Callback(_) => "the assertion callback".to_owned(),
            SourceKind::Value(_) => "the assertion given as a value".to_owned(),
        }
    }
}

/// Whether `s` has the shape of a compact JWS: three non-empty base64url parts.
pub(crate) fn is_compact_jws(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// The file's text, read up to one byte over the cap (so a larger file is told apart without
/// reading all of it).
fn read_capped(path: &std::path::Path) -> Result<String, String> {
    // Only a regular file: opening a named pipe would wait for a writer with no deadline.
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot be opened ({e})"))?;
    if !meta.is_file() {
        return Err("is not a regular file".to_owned());
    }
    let file = std::fs::File::open(path).map_err(|e| format!("cannot be opened ({e})"))?;
    let mut buf = Vec::new();
    file.take(MAX_ASSERTION_BYTES as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot be read ({e})"))?;
    if buf.len() > MAX_ASSERTION_BYTES {
        return Err(format!(
            "holds more than {MAX_ASSERTION_BYTES} bytes; refusing to send it"
        ));
    }
    String::from_utf8(buf).map_err(|_| "does not hold text".to_owned())
}

impl fmt::Debug for AssertionSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            SourceKind::File(p) => write!(f, "AssertionSource::file({})", p.display()),
            SourceKind::Env(v) => write!(f, "AssertionSource::env({v})"),
            SourceKind::Callback(_) => f.write_str("AssertionSource::callback(..)"),
            SourceKind::Value(_) => {
                write!(f, "AssertionSource::value({})", crate::config::REDACTED)
            }
        }
    }
}

/// The enterprise identity provider of enterprise-managed authorization (SEP-990): the client
/// exchanges the person's ID token from this provider for an identity assertion grant (ID-JAG,
/// RFC 8693 token exchange at [`token_endpoint`](Self::token_endpoint)), then presents the
/// ID-JAG to the MCP server's authorization server as a JWT bearer grant (RFC 7523). One
/// sign-in at the provider thus authorizes every MCP server the enterprise has approved.
///
/// ```
/// use mcp_blocking::auth::{AssertionSource, EnterpriseIdp, OAuthConfig};
/// let idp = EnterpriseIdp::new("https://idp.example.com", "mcp-client-at-idp")
///     .id_token(AssertionSource::env("IDP_ID_TOKEN"));
/// let oauth = OAuthConfig::enterprise(idp)
///     .client_id("mcp-client")
///     .client_secret("s3cret");
/// assert!(!format!("{oauth:?}").contains("s3cret"));
/// ```
///
/// A person signed in through [`sign_in`](Self::sign_in) is signed in for every clone of this
/// value: settings made from clones (for several MCP servers, each with its own client id at
/// its own authorization server) share the ID token until it expires, and a second
/// authorization waits for a sign-in under way rather than starting its own. The servers of
/// one config file whose `idp` blocks name the same provider the same way share it too.
#[derive(Clone)]
pub struct EnterpriseIdp {
    pub(crate) issuer: String,
    pub(crate) token_endpoint: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<Secret>,
    pub(crate) id_token: Option<AssertionSource>,
    pub(crate) redirect: Option<RedirectHandler>,
    pub(crate) signed_in: Arc<SignedIn>,
}

/// The sign-in at a provider that the clones of an [`EnterpriseIdp`] share.
#[derive(Default)]
pub(crate) struct SignedIn {
    /// Held while a person signs in, so that a second authorization waits for the first.
    pub(crate) signing_in: Mutex<()>,
    /// The ID token of the latest sign-in, with its `exp`.
    pub(crate) id_token: Mutex<Option<(Secret, u64)>>,
}

impl fmt::Debug for EnterpriseIdp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnterpriseIdp")
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("id_token", &self.id_token)
            .field("redirect", &self.redirect)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for SignedIn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SignedIn { .. }")
    }
}

impl EnterpriseIdp {
    /// The provider by its issuer URL, and this client's id at it. Its token endpoint is found
    /// in its OpenID metadata (`/.well-known/openid-configuration`) unless
    /// [`token_endpoint`](Self::token_endpoint) names it.
    pub fn new(issuer: impl Into<String>, client_id: impl Into<String>) -> EnterpriseIdp {
        EnterpriseIdp {
            issuer: issuer.into(),
            token_endpoint: None,
            client_id: client_id.into(),
            client_secret: None,
            id_token: None,
            redirect: None,
            signed_in: Arc::default(),
        }
    }

    /// Whether `other` names the same provider the same way (issuer, token endpoint, client
    /// id and secret, and an ID token from the same file or variable, or none): two such
    /// blocks of a config file share one sign-in.
    pub(crate) fn same_provider(&self, other: &EnterpriseIdp) -> bool {
        let same_source = match (&self.id_token, &other.id_token) {
            (None, None) => true,
            (Some(a), Some(b)) => match (&a.kind, &b.kind) {
                (SourceKind::File(x), SourceKind::File(y)) => x == y,
                (SourceKind::Env(x), SourceKind::Env(y)) => x == y,
                _ => false,
            },
            _ => false,
        };
        self.issuer == other.issuer
            && self.token_endpoint == other.token_endpoint
            && self.client_id == other.client_id
            && self.client_secret == other.client_secret
            && same_source
    }

    /// The same provider, sharing `other`'s sign-in.
    pub(crate) fn share_sign_in_with(mut self, other: &EnterpriseIdp) -> EnterpriseIdp {
        self.signed_in = other.signed_in.clone();
        self
    }

    /// The provider's token endpoint, where the ID token is exchanged.
    pub fn token_endpoint(mut self, url: impl Into<String>) -> EnterpriseIdp {
        self.token_endpoint = Some(url.into());
        self
    }

    /// This client's secret at the provider (sent with `client_secret_basic`).
    pub fn client_secret(mut self, secret: impl Into<String>) -> EnterpriseIdp {
        self.client_secret = Some(Secret::new(secret));
        self
    }

    /// Where the person's ID token comes from, when the program already has one (from the
    /// desktop's single sign-on, say).
    pub fn id_token(mut self, source: AssertionSource) -> EnterpriseIdp {
        self.id_token = Some(source);
        self
    }

    /// Sign the person in at the provider (authorization code with PKCE, scope `openid`)
    /// through `redirect` when no [`id_token`](Self::id_token) source is set.
    pub fn sign_in(mut self, redirect: RedirectHandler) -> EnterpriseIdp {
        self.redirect = Some(redirect);
        self
    }
}

#[cfg(test)]
mod tests {
    //! Reading a source: what is refused, and that errors name the source but not the token.

    use super::*;

    const JWT: &str = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ3In0.c2lnbmF0dXJl";

    #[test]
    fn a_value_and_a_callback_are_read_trimmed() {
        let got = AssertionSource::value(format!(" {JWT}\n")).read().unwrap();
        assert_eq!(got.expose(), JWT);
        let got = AssertionSource::callback(|| Ok(JWT.to_owned()))
            .read()
            .unwrap();
        assert_eq!(got.expose(), JWT);
    }

    #[test]
    fn only_three_non_empty_base64url_parts_pass() {
        assert!(is_compact_jws(JWT));
        for bad in [
            "", "a", "a.b", "a.b.c.d", ".b.c", "a..c", "a.b.", "a.b=.c", "a.b/.c", "a b.c.d",
        ] {
            assert!(!is_compact_jws(bad), "{bad:?}");
        }
    }

    #[test]
    fn refusals_name_the_source_never_the_content() {
        let secret = "s3cret-not-a-jwt";
        let e = AssertionSource::value(secret).read().unwrap_err();
        assert!(e.contains("value") && !e.contains(secret), "{e}");
        let e = AssertionSource::value("   ").read().unwrap_err();
        assert!(e.contains("empty"), "{e}");
        let big = format!("{}.b.c", "a".repeat(MAX_ASSERTION_BYTES));
        let e = AssertionSource::value(big.clone()).read().unwrap_err();
        assert!(e.contains("more than") && !e.contains("aaaa"), "{e}");
        let e = AssertionSource::callback(move || Ok(big.clone()))
            .read()
            .unwrap_err();
        assert!(e.contains("callback") && e.contains("more than"), "{e}");
        let e = AssertionSource::env("MCP_BLOCKING_SURELY_UNSET_VARIABLE_9f2")
            .read()
            .unwrap_err();
        assert!(e.contains("MCP_BLOCKING_SURELY_UNSET_VARIABLE_9f2"), "{e}");
    }

    #[test]
    fn a_file_is_read_up_to_the_cap() {
        let dir = std::env::temp_dir().join(format!("mcp-assertion-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = dir.join("ok");
        std::fs::write(&ok, format!("{JWT}\n")).unwrap();
        assert_eq!(AssertionSource::file(&ok).read().unwrap().expose(), JWT);
        // Exactly at the cap passes the size check (and fails the shape check only).
        let at_cap = dir.join("at-cap");
        std::fs::write(&at_cap, "a".repeat(MAX_ASSERTION_BYTES)).unwrap();
        let e = AssertionSource::file(&at_cap).read().unwrap_err();
        assert!(e.contains("signed JWT"), "{e}");
        let over = dir.join("over");
        std::fs::write(&over, "a".repeat(MAX_ASSERTION_BYTES + 1)).unwrap();
        let e = AssertionSource::file(&over).read().unwrap_err();
        assert!(e.contains("over") && e.contains("more than"), "{e}");
        let binary = dir.join("binary");
        std::fs::write(&binary, [0xff, 0xfe, 0x00]).unwrap();
        let e = AssertionSource::file(&binary).read().unwrap_err();
        assert!(e.contains("text"), "{e}");
        // A folder, and (on Linux) a named pipe no one writes to: refused, not waited on.
        let e = AssertionSource::file(&dir).read().unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        #[cfg(target_os = "linux")]
        {
            let fifo = dir.join("fifo");
            let made = std::process::Command::new("mkfifo").arg(&fifo).status();
            assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", fifo.display());
            let e = AssertionSource::file(&fifo).read().unwrap_err();
            assert!(e.contains("not a regular file"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
