//! DPoP (RFC 9449): sender-constrained tokens. The client holds a P-256 key and signs a short
//! proof for each request; a token bound to the key is useless to whoever steals it without the
//! key.
//!
//! ```text
//!  DpopKey::generate ──> P-256 key (ring), its PKCS#8 kept as a Secret, stored with the token
//!  proof(htm, htu, token, nonce) ──> header {typ: dpop+jwt, alg: ES256, jwk: public key}
//!                                    claims {jti, htm, htu (no query, no fragment), iat,
//!                                            ath = base64url(SHA-256(token)), nonce}
//!  token request ──DPoP: proof──> 400 use_dpop_nonce (or 401) with DPoP-Nonce
//!                ──DPoP: proof with that nonce──> once, no more
//!  MCP request   ──Authorization: DPoP <token>, DPoP: proof (htm, htu, ath, last nonce)──>
//!                401 WWW-Authenticate: DPoP error="use_dpop_nonce" with DPoP-Nonce
//!                ──the same request, a new proof with that nonce──> once, no more
//!                (the transport's `Requester::once`; the nonce is kept per server)
//! ```
//!
//! The key, its PKCS#8 and every proof are credentials: none of them appears in `Debug`, an
//! error or a log line.

use std::fmt;

use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Map, Value};

use super::util::{b64url, now_secs, random_token};
use crate::config::oauth::Secret;

/// The signing algorithm of every proof: ES256, the one the MCP DPoP extension asks clients to
/// support.
pub(crate) const ALG: &str = "ES256";

/// The longest server-provided nonce used: 1024 bytes. A longer one is ignored (the request is
/// not retried), so a server cannot make every later proof carry an unbounded value.
pub(crate) const MAX_NONCE_BYTES: usize = 1024;

/// A client's DPoP key: a P-256 pair, and its PKCS#8 document (base64url) to keep with the
/// token it binds.
pub(crate) struct DpopKey {
    pair: EcdsaKeyPair,
    pkcs8: Secret,
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DpopKey(<redacted>)")
    }
}

impl DpopKey {
    /// A new key from the system's secure generator.
    pub(crate) fn generate() -> Result<DpopKey, String> {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| "generating the DPoP key failed".to_owned())?;
        Self::from_pkcs8(doc.as_ref())
    }

    /// The key kept with a token ([`stored`](Self::stored)'s value).
    pub(crate) fn from_stored(stored: &Secret) -> Result<DpopKey, String> {
        use base64::Engine as _;
        let der = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(stored.expose().trim())
            .map_err(|_| "the stored DPoP key is not base64url".to_owned())?;
        Self::from_pkcs8(&der)
    }

    fn from_pkcs8(der: &[u8]) -> Result<DpopKey, String> {
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &SystemRandom::new())
                .map_err(|_| "the DPoP key is not a P-256 PKCS#8 key".to_owned())?;
        Ok(DpopKey {
            pair,
            pkcs8: Secret::new(b64url(der)),
        })
    }

    /// The PKCS#8 document, base64url: what the token store keeps.
    pub(crate) fn stored(&self) -> &Secret {
        &self.pkcs8
    }

    /// The public key's `x` and `y` coordinates, base64url.
    fn coordinates(&self) -> (String, String) {
        // ring gives the uncompressed point: 0x04, then 32 bytes of x and 32 of y.
        let point = self.pair.public_key().as_ref();
        (b64url(&point[1..33]), b64url(&point[33..65]))
    }

    /// The public key as a JWK (RFC 7517): `kty`, `crv`, `x`, `y`; never `d`.
    pub(crate) fn jwk(&self) -> Value {
        let (x, y) = self.coordinates();
        json!({"kty": "EC", "crv": "P-256", "x": x, "y": y})
    }

    /// The RFC 7638 thumbprint of the public key (SHA-256, base64url): the `jkt` a bound token's
    /// `cnf` names.
    pub(crate) fn thumbprint(&self) -> String {
        let (x, y) = self.coordinates();
        thumbprint_of(&x, &y)
    }

    /// A proof for one request: `htm` the method, `htu` the URL (its query and fragment are left
    /// out, as RFC 9449 §4.2 says), `access_token` the token the request carries (its hash goes
    /// in `ath`), `nonce` the last one the server provided.
    pub(crate) fn proof(
        &self,
        htm: &str,
        htu: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, String> {
        let header = json!({"typ": "dpop+jwt", "alg": ALG, "jwk": self.jwk()});
        let mut claims = Map::new();
        claims.insert("jti".into(), json!(random_token(16)?));
        claims.insert("htm".into(), json!(htm));
        claims.insert("htu".into(), json!(target_uri(htu)));
        claims.insert("iat".into(), json!(now_secs()));
        if let Some(t) = access_token {
            claims.insert("ath".into(), json!(ath(t)));
        }
        if let Some(n) = nonce {
            claims.insert("nonce".into(), json!(n));
        }
        let input = format!(
            "{}.{}",
            b64url(header.to_string().as_bytes()),
            b64url(Value::Object(claims).to_string().as_bytes())
        );
        let sig = self
            .pair
            .sign(&SystemRandom::new(), input.as_bytes())
            .map_err(|_| "signing the DPoP proof failed".to_owned())?;
        Ok(format!("{input}.{}", b64url(sig.as_ref())))
    }
}

/// The RFC 7638 thumbprint of a P-256 public key: SHA-256 of its required members, in
/// lexicographic order, without white space.
fn thumbprint_of(x: &str, y: &str) -> String {
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    b64url(ring::digest::digest(&ring::digest::SHA256, canonical.as_bytes()).as_ref())
}

/// `ath`: base64url(SHA-256(the access token)).
pub(crate) fn ath(access_token: &str) -> String {
    b64url(ring::digest::digest(&ring::digest::SHA256, access_token.as_bytes()).as_ref())
}

/// The `htu` of a URL: without its query and fragment.
pub(crate) fn target_uri(url: &str) -> &str {
    url.split(['?', '#']).next().unwrap_or(url)
}

/// A server-provided nonce, when usable: at most [`MAX_NONCE_BYTES`], made of the characters
/// RFC 9449 §8 allows (`NQCHAR`: printable ASCII but `"` and `\`), and not empty.
pub(crate) fn usable_nonce(value: &str) -> Option<&str> {
    let ok = !value.is_empty()
        && value.len() <= MAX_NONCE_BYTES
        && value
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\');
    if !ok {
        log::debug!("ignoring a DPoP-Nonce that is empty, too long or malformed");
    }
    ok.then_some(value)
}

/// Whether the authorization server's metadata says it accepts ES256 proofs
/// (`dpop_signing_alg_values_supported`).
pub(crate) fn supported_by(meta: &Map<String, Value>) -> bool {
    meta.get("dpop_signing_alg_values_supported")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(ALG)))
}

/// Whether a token answer that failed asks for a proof with a nonce: a 400 `use_dpop_nonce`,
/// or a 401 with a `DPoP-Nonce` (RFC 9449 §8); the nonce to use, when so.
pub(crate) fn nonce_asked<'a>(
    status: u16,
    error: Option<&str>,
    header: Option<&'a str>,
) -> Option<&'a str> {
    let asked = match status {
        400 => error == Some("use_dpop_nonce"),
        401 => true,
        _ => false,
    };
    header.filter(|_| asked).and_then(usable_nonce)
}

#[cfg(test)]
mod tests {
    //! Proofs verify with the key's public half, carry the claims RFC 9449 asks for, and leave
    //! the key and the token out of `Debug`.

    use super::*;
    use base64::Engine as _;
    use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

    fn decode(s: &str) -> Vec<u8> {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(s)
            .expect("base64url")
    }

    /// Header, claims, and whether the signature verifies with the public key of the header's
    /// own `jwk` (as a server checks it).
    fn check(jwt: &str) -> (Value, Value, bool) {
        let p: Vec<&str> = jwt.split('.').collect();
        assert_eq!(p.len(), 3, "a compact JWS");
        let header: Value = serde_json::from_slice(&decode(p[0])).unwrap();
        let claims: Value = serde_json::from_slice(&decode(p[1])).unwrap();
        let x = decode(header["jwk"]["x"].as_str().unwrap());
        let y = decode(header["jwk"]["y"].as_str().unwrap());
        let point: Vec<u8> = [&[4u8][..], &x, &y].concat();
        let ok = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
            .verify(format!("{}.{}", p[0], p[1]).as_bytes(), &decode(p[2]))
            .is_ok();
        (header, claims, ok)
    }

    #[test]
    fn a_proof_verifies_and_carries_the_claims() {
        let key = DpopKey::generate().unwrap();
        let url = "https://as.example/token?x=1#frag";
        let proof = key.proof("POST", url, None, None).unwrap();
        let (header, claims, ok) = check(&proof);
        assert!(ok, "the signature verifies with the header's jwk");
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"], key.jwk());
        assert!(header["jwk"].get("d").is_none(), "no private part");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://as.example/token");
        let iat = claims["iat"].as_u64().unwrap();
        assert!(iat.abs_diff(now_secs()) < 60, "iat is now: {iat}");
        assert!(claims["jti"].as_str().is_some_and(|j| j.len() >= 16));
        assert!(claims.get("ath").is_none() && claims.get("nonce").is_none());
        let again = key.proof("POST", url, None, None).unwrap();
        let (_, claims2, _) = check(&again);
        assert_ne!(claims["jti"], claims2["jti"], "each proof has its own jti");
    }

    #[test]
    fn a_tampered_proof_does_not_verify() {
        let key = DpopKey::generate().unwrap();
        let proof = key.proof("GET", "https://rs/mcp", None, None).unwrap();
        let mut parts: Vec<String> = proof.split('.').map(str::to_owned).collect();
        let other = DpopKey::generate().unwrap();
        let (_, _, ok) = check(&proof);
        assert!(ok);
        // Another key's header with this key's signature.
        let foreign = other.proof("GET", "https://rs/mcp", None, None).unwrap();
        parts[0] = foreign.split('.').next().unwrap().to_owned();
        let (_, _, ok) = check(&parts.join("."));
        assert!(!ok, "a proof signed by another key must not verify");
    }

    #[test]
    fn ath_and_nonce_are_carried() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof("POST", "https://rs/mcp", Some("tok"), Some("n-1"))
            .unwrap();
        let (_, claims, ok) = check(&proof);
        assert!(ok);
        // SHA-256("tok"), base64url: computed independently of `ath`.
        let digest = ring::digest::digest(&ring::digest::SHA256, b"tok");
        assert_eq!(claims["ath"], b64url(digest.as_ref()));
        assert_eq!(claims["nonce"], "n-1");
        assert!(
            !proof.contains("tok\""),
            "the token itself is not in the proof"
        );
    }

    #[test]
    fn ath_matches_rfc_9449s_example() {
        // RFC 9449 §7.1: the access token "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU" has
        // ath "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo".
        assert_eq!(
            ath("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"),
            "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
        );
    }

    #[test]
    fn the_thumbprint_hashes_the_required_members_in_order() {
        // RFC 7638 §3: the required members (crv, kty, x, y for EC), sorted, no white space;
        // built here through a sorted map rather than the format string `thumbprint` uses.
        let key = DpopKey::generate().unwrap();
        let jwk = key.jwk();
        let sorted: std::collections::BTreeMap<&str, &str> = ["crv", "kty", "x", "y"]
            .into_iter()
            .map(|k| (k, jwk[k].as_str().unwrap()))
            .collect();
        let canonical = serde_json::to_string(&sorted).unwrap();
        assert!(canonical.starts_with(r#"{"crv":"P-256","kty":"EC","x":""#));
        let digest = ring::digest::digest(&ring::digest::SHA256, canonical.as_bytes());
        assert_eq!(key.thumbprint(), b64url(digest.as_ref()));
        assert_eq!(key.thumbprint().len(), 43, "32 bytes, base64url");
    }

    #[test]
    fn htu_has_no_query_or_fragment() {
        assert_eq!(target_uri("https://h/p?q=1"), "https://h/p");
        assert_eq!(target_uri("https://h/p#f"), "https://h/p");
        assert_eq!(target_uri("https://h/p"), "https://h/p");
    }

    #[test]
    fn the_key_survives_the_store_and_stays_out_of_debug() {
        let key = DpopKey::generate().unwrap();
        let back = DpopKey::from_stored(key.stored()).unwrap();
        assert_eq!(back.jwk(), key.jwk());
        let proof = back.proof("POST", "https://as/token", None, None).unwrap();
        assert!(check(&proof).2);
        assert_eq!(format!("{key:?}"), "DpopKey(<redacted>)");
        assert!(!format!("{:?}", key.stored()).contains(key.stored().expose()));
        assert!(DpopKey::from_stored(&Secret::new("not a key")).is_err());
        assert!(DpopKey::from_stored(&Secret::new(b64url(b"\x30\x03\x02\x01\x00"))).is_err());
    }

    #[test]
    fn nonces_are_used_only_when_asked_for_and_well_formed() {
        assert_eq!(
            nonce_asked(400, Some("use_dpop_nonce"), Some("abc")),
            Some("abc")
        );
        assert_eq!(nonce_asked(401, None, Some("abc")), Some("abc"));
        assert_eq!(nonce_asked(400, Some("invalid_grant"), Some("abc")), None);
        assert_eq!(nonce_asked(400, Some("use_dpop_nonce"), None), None);
        assert_eq!(nonce_asked(500, Some("use_dpop_nonce"), Some("abc")), None);
        let long = "n".repeat(MAX_NONCE_BYTES + 1);
        assert_eq!(nonce_asked(401, None, Some(&long)), None, "the cap holds");
        let at_cap = "n".repeat(MAX_NONCE_BYTES);
        assert!(nonce_asked(401, None, Some(&at_cap)).is_some());
        for bad in ["", "a b", "a\"b", "a\\b", "é", "a\nb"] {
            assert_eq!(usable_nonce(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn metadata_listing_es256_supports_dpop() {
        let meta = |v: Value| v.as_object().unwrap().clone();
        assert!(supported_by(&meta(
            json!({"dpop_signing_alg_values_supported": ["RS256", "ES256"]})
        )));
        assert!(!supported_by(&meta(
            json!({"dpop_signing_alg_values_supported": ["RS256"]})
        )));
        assert!(!supported_by(&meta(
            json!({"dpop_signing_alg_values_supported": []})
        )));
        assert!(!supported_by(&meta(json!({}))));
    }
}
