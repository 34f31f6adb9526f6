//! [`AuthError`]: how an OAuth function that needs no server fails (reading a key, the
//! loopback listener, the token store), with a kind a program can match.

use std::fmt;

/// Why an [`AuthError`] happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthErrorKind {
    /// A private key is not PKCS#8 PEM, or not a key of the algorithm asked for
    /// ([`SigningKey::from_pem`](super::SigningKey::from_pem)).
    InvalidKey,
    /// The loopback listener could not listen, or failed while listening
    /// ([`LoopbackListener`](crate::auth::LoopbackListener)).
    Listen,
    /// Nothing the listener waited for came in time.
    TimedOut,
    /// The [`TokenStore`](super::TokenStore) failed.
    Store,
}

/// A failure of one of the OAuth functions that run without a server: what
/// happened ([`kind`](Self::kind)) and a message for a person ([`detail`](Self::detail),
/// which never holds a key, token or secret).
///
/// ```
/// use mcp_blocking::auth::{AuthErrorKind, JwtAlgorithm, SigningKey};
/// let err = SigningKey::from_pem("not a key", JwtAlgorithm::Rs256).unwrap_err();
/// assert_eq!(err.kind, AuthErrorKind::InvalidKey);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthError {
    /// What happened.
    pub kind: AuthErrorKind,
    /// What happened, in words.
    pub detail: String,
}

impl AuthError {
    pub(crate) fn new(kind: AuthErrorKind, detail: impl Into<String>) -> Self {
        AuthError {
            kind,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

impl std::error::Error for AuthError {}

impl From<AuthError> for String {
    fn from(e: AuthError) -> String {
        e.detail
    }
}
