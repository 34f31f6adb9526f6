//! `private_key_jwt` client authentication (RFC 7523 §2.2): a short-lived assertion signed with
//! the configured [`SigningKey`] (ES256 or RS256).

use ring::rand::SystemRandom;
use serde_json::json;

use super::util::{b64url, now_secs, random_token};
use crate::config::oauth::{Key, SigningKey};

impl SigningKey {
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

#[cfg(test)]
mod tests {
    //! Assertions verify with the key's public half and carry the claims RFC 7523 asks for.

    use super::*;
    use crate::config::oauth::{AuthErrorKind, JwtAlgorithm};
    use base64::Engine as _;
    use ring::signature::{KeyPair, UnparsedPublicKey};

    /// A throw-away RSA key made for this test only.
    const RSA_PEM: &str = "-----BEGIN PRIVATE KEY-----
MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQC9j5bsXkR+NROl
XW/3v0DhoTNnNqgOWltmGe2gFGRUaR44c/mCvTzLEMuo+TvQhThyQWOBlKQ91/yR
I4EXih1tQnt4UVUpG/hGDO0JoM8JjdvWT3QmQxfukrZUrX1omKSO1FYFZFPEsvIw
txeTtQV/3WylIHhEGLxzatHZoHg0wLbKAW9hdpGqfRfxfun+28jKcOnRoVfxu5Yx
2cZGm46l6VRVT6wDMUAOoe/A8idBhiNmoZK06B7pnDFhNsQUWxMmkCeB/nyczKdw
PelSyJUxwk+tXBXcTFZbc1/JPYPDpOCA7bkzPz7ZyJPuBaiZMb2MIwyZGMT79UcX
QaToeQA7AgMBAAECggEAAz3CsxUqW9oYFU2TgSUrb9afMWM1QzsqSus9YLpYiNT1
tLnO72LBXyhQ9l+xaFX1N1O4Gg23mgZPORAZWfsWy7jfF//HOMyHCNoAITHQ66hN
G2bNmDkXd93ZJK0ev6Lnu9JHpXbBgLodyAipbFe92btCHoSynPKrVKUXJEuviOXA
tn7hO6HV6JH1OnmzqToeP4lt1jb2udb9vN4nPBZaL6ZbUM6C2uJ9yup2cgMwpV9P
hmOaitHBPmKnY0YzN27F+A8gIZuB+eoMzRvHEv1F/3bqUo+Ka/hgsYrDoRerdPvS
ZrD0awc0mCdEvQVYANJIQ/Vz6tWhi6/IDKiBUq/J6QKBgQDxcfnct7UBSdEt+k3u
Irj0UJXzBz/FkNTA9aDRGrxJLPG1bLBLjbPeUx38yjOG/B9OgpDp2Tq39o932UZi
S6tMJLrPYWheDycJ7KPVr3fx/2nmqsa2tVIB6WLfEmiFKPe7gxonO3wuSnOSSlru
wj4/1r/9UQ4Nr9eyNAuuvUq5bwKBgQDI/Oz/bMpN5cvlqcNXwiSvoy/cmaz5ObgB
inflFEyXHqbNqGBm8qV60IUlV7C5FtqKqvgYG4eOfBjLAD43d7oC8d21KsQtq+7r
yknw1HGJfMs7TYvH5MYAHtmiyS07reTMU9MiTksITKgA+q/t17VVQ4A884cK4f6q
CGmkHJSH9QKBgCGDqaQ6l9Ry86dHLFQW28eF/Bp88hwxa2bRcZ408NfTdkWxrZL/
O21r6iixxI9DJfFW7FiZf64TenyvWza/vCpYmtm4cq1Duy6Ee4Vo0uRziLatE+I+
rwB27fN68akyM5kCrLmvZyBh00MGMTMdIVjpLUMzYhkCRJWG5ew+eEXfAoGBAJ4Z
VtQVX42nFZyyzVZbAUCnvR5qRAZHwNZ1dZpdPWIiWlOr/yj79e+F1zZopDr0HzS1
CDLudNNACsCkkExRgaCPYTcBTRAgDvCrTz6B3k2oPLWJakrzSk0N92R1m382aqPP
zGVP8PW2VvFuQLV22M0ZK+bGKZQF8a0OsQrG8I+BAoGBAO5GIj1levO4femwMET+
XygT2V1iBqp/DgV5PDoQVUckQzykU59WxKvH1DJNKhrm/aGxoOsYdPXP4uYKI+CD
o73d4Uqu0rVMz6eGbwjmFFxz5YeHNjsNF2llEMhZfXHjpwNk9Gr5bseJggGJ+G/A
JrqqdNW40mnCm8b9W5uTdYX5
-----END PRIVATE KEY-----";

    fn parts(jwt: &str) -> (serde_json::Value, serde_json::Value, Vec<u8>, String) {
        let d = |s: &str| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(s)
                .expect("base64url")
        };
        let p: Vec<&str> = jwt.split('.').collect();
        assert_eq!(p.len(), 3);
        (
            serde_json::from_slice(&d(p[0])).unwrap(),
            serde_json::from_slice(&d(p[1])).unwrap(),
            d(p[2]),
            format!("{}.{}", p[0], p[1]),
        )
    }

    #[test]
    fn es256_assertions_verify() {
        let key = rcgen::KeyPair::generate().expect("P-256 key");
        let signer = SigningKey::from_pem(&key.serialize_pem(), JwtAlgorithm::Es256).unwrap();
        let jwt = signer.assertion("cid", "https://as.example").unwrap();
        let (header, claims, sig, input) = parts(&jwt);
        assert_eq!(header["alg"], "ES256");
        assert_eq!(claims["iss"], "cid");
        assert_eq!(claims["sub"], "cid");
        assert_eq!(claims["aud"], "https://as.example");
        assert!(claims["exp"].as_u64() > claims["iat"].as_u64());
        let Key::Ec(pair) = &signer.key else {
            panic!("EC key")
        };
        UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_FIXED,
            pair.public_key().as_ref(),
        )
        .verify(input.as_bytes(), &sig)
        .expect("valid ES256 signature");
        assert!(!format!("{signer:?}").contains("BEGIN"));
    }

    #[test]
    fn rs256_assertions_verify() {
        let signer = SigningKey::from_pem(RSA_PEM, JwtAlgorithm::Rs256).unwrap();
        let jwt = signer.assertion("cid", "https://as.example").unwrap();
        let (header, _, sig, input) = parts(&jwt);
        assert_eq!(header["alg"], "RS256");
        let Key::Rsa(pair) = &signer.key else {
            panic!("RSA key")
        };
        UnparsedPublicKey::new(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            pair.public().as_ref(),
        )
        .verify(input.as_bytes(), &sig)
        .expect("valid RS256 signature");
    }

    #[test]
    fn a_key_of_the_wrong_kind_is_refused_unquoted() {
        let err = SigningKey::from_pem(RSA_PEM, JwtAlgorithm::Es256).unwrap_err();
        assert_eq!(err.kind, AuthErrorKind::InvalidKey);
        assert!(
            err.detail.contains("P-256") && !err.detail.contains("MII"),
            "{err}"
        );
        assert!(SigningKey::from_pem("not a key", JwtAlgorithm::Rs256).is_err());
    }

    #[test]
    fn the_key_of_a_file_holding_its_certificate_too_is_found() {
        let rcgen::CertifiedKey { cert, signing_key } =
            rcgen::generate_simple_self_signed(vec!["client.example".into()]).unwrap();
        let pem = format!("{}{}", cert.pem(), signing_key.serialize_pem());
        let signer = SigningKey::from_pem(&pem, JwtAlgorithm::Es256).expect("the key is read");
        assert!(signer.assertion("cid", "https://as.example").is_ok());
    }
}
