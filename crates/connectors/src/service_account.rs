//! A Google service account signing in for itself (RFC 7523, "JWT bearer"): its JSON key
//! (`client_email`, `private_key` in PKCS#8 PEM) signs a short-lived JWT with RS256, and the
//! token endpoint trades the JWT for an access token. With domain-wide delegation the JWT
//! names a Workspace admin in `sub`, whom the token then acts for.
//!
//! The PEM is decoded by `rustls-pki-types` and the key read and used by `ring`, the
//! libraries the TLS stack already trusts; nothing here parses ASN.1 by hand.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use rustls_pki_types::PrivatePkcs8KeyDer;
use rustls_pki_types::pem::PemObject;
use serde::Deserialize;
use serde_json::json;

/// The grant type of a JWT assertion (RFC 7523 §2.1).
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// Google's token endpoint, when neither the settings nor the key name one.
pub(crate) const GOOGLE_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
/// Google takes an assertion valid for at most an hour.
const LIFETIME_SECONDS: i64 = 3600;

/// The fields of a service account key file that signing needs. Its other fields
/// (`project_id`, `client_id`, certificate URLs) are not read.
#[derive(Deserialize)]
struct KeyFile {
    #[serde(rename = "type")]
    kind: Option<String>,
    client_email: String,
    private_key: String,
    #[serde(default)]
    private_key_id: Option<String>,
    #[serde(default)]
    token_uri: Option<String>,
}

/// A service account ready to sign. `Debug` shows the account, never the key.
pub(crate) struct ServiceAccount {
    client_email: String,
    private_key_id: Option<String>,
    token_uri: Option<String>,
    key: RsaKeyPair,
}

impl std::fmt::Debug for ServiceAccount {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ServiceAccount")
            .field("client_email", &self.client_email)
            .finish_non_exhaustive()
    }
}

impl ServiceAccount {
    /// Reads a key file as Google gives it. The error never quotes the file.
    pub(crate) fn from_json(text: &str) -> Result<ServiceAccount, String> {
        let file: KeyFile = serde_json::from_str(text).map_err(|error| {
            // serde's message can quote a value; only its position and kind are kept.
            let what = match error.classify() {
                serde_json::error::Category::Data => {
                    "it lacks client_email or private_key, or one is not a string"
                }
                _ => "it is not JSON",
            };
            format!("the secret is not a Google service account key: {what}")
        })?;
        if file
            .kind
            .as_deref()
            .is_some_and(|kind| kind != "service_account")
        {
            return Err(
                "the secret is a Google credential, but not a service account key".to_owned(),
            );
        }
        if file.client_email.trim().is_empty() {
            return Err("the service account key's client_email is empty".to_owned());
        }
        let der =
            PrivatePkcs8KeyDer::from_pem_slice(file.private_key.as_bytes()).map_err(|_| {
                "the service account key's private_key is not a PKCS#8 PEM key \
             (-----BEGIN PRIVATE KEY-----)"
                    .to_owned()
            })?;
        let key = RsaKeyPair::from_pkcs8(der.secret_pkcs8_der()).map_err(|error| {
            format!("the service account key's private_key is not a usable RSA key: {error}")
        })?;
        Ok(ServiceAccount {
            client_email: file.client_email,
            private_key_id: file.private_key_id.filter(|id| !id.is_empty()),
            token_uri: file.token_uri.filter(|uri| uri.starts_with("https://")),
            key,
        })
    }

    /// Where the key says its tokens are issued (an https URL), if it says.
    pub(crate) fn token_uri(&self) -> Option<&str> {
        self.token_uri.as_deref()
    }

    /// The signed JWT (`header.claims.signature`, each base64url) asking `audience` (the
    /// token endpoint) for `scope`, acting for `subject` when given, issued at `now`
    /// (seconds since the epoch).
    pub(crate) fn assertion(
        &self,
        scope: &str,
        audience: &str,
        subject: Option<&str>,
        now: i64,
    ) -> Result<String, String> {
        let mut header = json!({"alg": "RS256", "typ": "JWT"});
        if let Some(id) = &self.private_key_id {
            header["kid"] = json!(id);
        }
        let mut claims = json!({
            "iss": self.client_email,
            "scope": scope,
            "aud": audience,
            "iat": now,
            "exp": now + LIFETIME_SECONDS,
        });
        if let Some(subject) = subject {
            claims["sub"] = json!(subject);
        }
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let mut signature = vec![0; self.key.public().modulus_len()];
        self.key
            .sign(
                &RSA_PKCS1_SHA256,
                &SystemRandom::new(),
                signed.as_bytes(),
                &mut signature,
            )
            .map_err(|_| "the service account key could not sign".to_owned())?;
        Ok(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};
    use serde_json::Value;

    const TEST_KEY: &str = include_str!("../testdata/service-account-test-key.pem");

    fn key_file() -> String {
        json!({
            "type": "service_account",
            "project_id": "sleuth-test",
            "private_key_id": "0f1e2d3c4b5a",
            "private_key": TEST_KEY,
            "client_email": "sleuth@sleuth-test.iam.gserviceaccount.com",
            "client_id": "104857600000000000001",
            "token_uri": "https://oauth2.googleapis.com/token",
        })
        .to_string()
    }

    fn part(jwt: &str, index: usize) -> Value {
        let text = jwt.split('.').nth(index).expect("a part");
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(text).expect("base64url")).expect("JSON")
    }

    #[test]
    fn the_assertion_is_an_rs256_jwt_the_public_key_verifies() {
        let account = ServiceAccount::from_json(&key_file()).expect("a key");
        let jwt = account
            .assertion(
                "https://www.googleapis.com/auth/apps.alerts",
                GOOGLE_TOKEN_URL,
                Some("admin@example.com"),
                1_780_000_000,
            )
            .expect("signed");
        assert_eq!(
            part(&jwt, 0),
            json!({"alg": "RS256", "typ": "JWT", "kid": "0f1e2d3c4b5a"})
        );
        let claims = part(&jwt, 1);
        assert_eq!(claims["iss"], "sleuth@sleuth-test.iam.gserviceaccount.com");
        assert_eq!(claims["sub"], "admin@example.com");
        assert_eq!(claims["aud"], GOOGLE_TOKEN_URL);
        assert_eq!(
            claims["scope"],
            "https://www.googleapis.com/auth/apps.alerts"
        );
        assert_eq!(claims["iat"], 1_780_000_000);
        assert_eq!(claims["exp"], 1_780_003_600);

        let (signed, signature) = jwt.rsplit_once('.').expect("three parts");
        let signature = URL_SAFE_NO_PAD.decode(signature).expect("base64url");
        let public = UnparsedPublicKey::new(
            &RSA_PKCS1_2048_8192_SHA256,
            account.key.public().as_ref().to_vec(),
        );
        public
            .verify(signed.as_bytes(), &signature)
            .expect("the signature verifies");
        let mut forged = signed.to_owned();
        forged.push('x');
        assert!(public.verify(forged.as_bytes(), &signature).is_err());
    }

    #[test]
    fn a_bad_key_file_is_named_without_being_quoted() {
        let bad = |text: &str| ServiceAccount::from_json(text).expect_err("refused");
        assert!(bad("not json").contains("not JSON"));
        assert!(bad(r#"{"client_email": "a@b"}"#).contains("lacks"));
        let error = bad(
            &json!({"client_email": "a@b", "private_key": "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LXZhbHVl\n-----END PRIVATE KEY-----\n"})
                .to_string(),
        );
        assert!(error.contains("not a usable RSA key"), "{error}");
        assert!(!error.contains("c2VjcmV0"), "{error}");
        let error = bad(&json!({"client_email": "a@b", "private_key": "secret-value"}).to_string());
        assert!(error.contains("PKCS#8"), "{error}");
        assert!(!error.contains("secret-value"), "{error}");
        let error = bad(
            &json!({"type": "authorized_user", "client_email": "a@b", "private_key": TEST_KEY})
                .to_string(),
        );
        assert!(error.contains("not a service account key"), "{error}");
    }
}
