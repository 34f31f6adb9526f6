//! A `private_key_jwt` signing key (RFC 7523 §2.2) as a setting: ES256 (P-256) or RS256, from a
//! PKCS#8 PEM key read by the TLS stack's PEM reader (the one that reads the TLS root
//! certificates too). Signing the assertions is the authorization flow's (`auth/jwt.rs`).

use std::fmt;
use std::sync::Arc;

use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, RsaKeyPair};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::PrivatePkcs8KeyDer;

use super::error::{AuthError, AuthErrorKind};

/// The signature algorithm of a `private_key_jwt` assertion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwtAlgorithm {
    /// ECDSA P-256 with SHA-256.
    Es256,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
}

impl JwtAlgorithm {
    /// `"ES256"` or `"RS256"`.
    pub fn as_str(self) -> &'static str {
        match self {
            JwtAlgorithm::Es256 => "ES256",
            JwtAlgorithm::Rs256 => "RS256",
        }
    }

    /// Parses `ES256` / `RS256` (any case).
    pub fn parse(s: &str) -> Option<JwtAlgorithm> {
        match s.to_ascii_uppercase().as_str() {
            "ES256" => Some(JwtAlgorithm::Es256),
            "RS256" => Some(JwtAlgorithm::Rs256),
            _ => None,
        }
    }
}

/// The parsed key pair.
#[derive(Clone)]
pub(crate) enum Key {
    Ec(Arc<EcdsaKeyPair>),
    Rsa(Arc<RsaKeyPair>),
}

/// A private key that signs client assertions. `Debug` shows only the algorithm.
#[derive(Clone)]
pub struct SigningKey {
    pub(crate) key: Key,
    pub(crate) alg: JwtAlgorithm,
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SigningKey({}, <redacted>)", self.alg.as_str())
    }
}

impl SigningKey {
    /// Reads a PKCS#8 PEM private key (`-----BEGIN PRIVATE KEY-----`) for `alg`.
    ///
    /// # Errors
    /// An [`AuthError`] of kind [`AuthErrorKind::InvalidKey`] when the text is not PKCS#8 PEM,
    /// or not a key of that algorithm (the key is never quoted).
    pub fn from_pem(pem: &str, alg: JwtAlgorithm) -> Result<SigningKey, AuthError> {
        Self::parse_pem(pem, alg).map_err(|e| AuthError::new(AuthErrorKind::InvalidKey, e))
    }

    /// [`from_pem`](Self::from_pem), failing with what was wrong in words.
    fn parse_pem(pem: &str, alg: JwtAlgorithm) -> Result<SigningKey, String> {
        // The PEM reader of the TLS stack (rustls-pki-types), which also reads the TLS root
        // certificates: the first `PRIVATE KEY` block of the text, whatever else it holds.
        let der = PrivatePkcs8KeyDer::from_pem_slice(pem.as_bytes()).map_err(|_| {
            "the private key is not PKCS#8 PEM (no `BEGIN PRIVATE KEY` block)".to_owned()
        })?;
        let der = der.secret_pkcs8_der();
        let key = match alg {
            JwtAlgorithm::Es256 => Key::Ec(Arc::new(
                EcdsaKeyPair::from_pkcs8(
                    &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                    der,
                    &SystemRandom::new(),
                )
                .map_err(|_| "the private key is not a PKCS#8 P-256 key (ES256)".to_owned())?,
            )),
            JwtAlgorithm::Rs256 => {
                Key::Rsa(Arc::new(RsaKeyPair::from_pkcs8(der).map_err(|_| {
                    "the private key is not a PKCS#8 RSA key (RS256)".to_owned()
                })?))
            }
        };
        Ok(SigningKey { key, alg })
    }

    /// The algorithm.
    pub fn algorithm(&self) -> JwtAlgorithm {
        self.alg
    }
}
