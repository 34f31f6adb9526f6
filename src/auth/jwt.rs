//! `private_key_jwt` client authentication (RFC 7523 §2.2): a short-lived assertion signed with
//! ES256 (P-256) or RS256, from a PKCS#8 PEM key.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, RsaKeyPair};
use serde_json::json;

use super::util::{b64url, now_secs, random_token};

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

#[derive(Clone)]
enum Key {
    Ec(Arc<EcdsaKeyPair>),
    Rsa(Arc<RsaKeyPair>),
}

/// A private key that signs client assertions. `Debug` shows only the algorithm.
#[derive(Clone)]
pub struct SigningKey {
    key: Key,
    alg: JwtAlgorithm,
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
    /// The text is not PKCS#8 PEM, or not a key of that algorithm (the key is never quoted).
    pub fn from_pem(pem: &str, alg: JwtAlgorithm) -> Result<SigningKey, String> {
        let body: String = pem
            .lines()
            .map(str::trim)
            .filter(|l| !l.starts_with("-----") && !l.is_empty())
            .collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body.as_bytes())
            .map_err(|_| {
                "the private key is not PEM (base64 between BEGIN/END lines)".to_owned()
            })?;
        let key = match alg {
            JwtAlgorithm::Es256 => Key::Ec(Arc::new(
                EcdsaKeyPair::from_pkcs8(
                    &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                    &der,
                    &SystemRandom::new(),
                )
                .map_err(|_| "the private key is not a PKCS#8 P-256 key (ES256)".to_owned())?,
            )),
            JwtAlgorithm::Rs256 => {
                Key::Rsa(Arc::new(RsaKeyPair::from_pkcs8(&der).map_err(|_| {
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

    /// A signed assertion: `iss` = `sub` = `client_id`, `aud` = `audience`, valid 5 minutes.
    pub(crate) fn assertion(&self, client_id: &str, audience: &str) -> Result<String, String> {
        let now = now_secs();
        let header = json!({"alg": self.alg.as_str(), "typ": "JWT"});
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + 300,
            "jti": random_token(16)?,
        });
        let input = format!(
            "{}.{}",
            b64url(header.to_string().as_bytes()),
            b64url(claims.to_string().as_bytes())
        );
        let rng = SystemRandom::new();
        let sig = match &self.key {
            Key::Ec(k) => k
                .sign(&rng, input.as_bytes())
                .map_err(|_| "signing the client assertion failed".to_owned())?
                .as_ref()
                .to_vec(),
            Key::Rsa(k) => {
                let mut sig = vec![0; k.public().modulus_len()];
                k.sign(
                    &ring::signature::RSA_PKCS1_SHA256,
                    &rng,
                    input.as_bytes(),
                    &mut sig,
                )
                .map_err(|_| "signing the client assertion failed".to_owned())?;
                sig
            }
        };
        Ok(format!("{input}.{}", b64url(&sig)))
    }
}
