//! How a push source's requests prove where they come from: the source's token (as each
//! vendor can send it: a header, basic auth, or the URL) and, for GitHub, the signature of
//! the body with the webhook's secret. Tokens are random, shown once, stored as SHA-256.

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use base64::Engine;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use sleuth_store::KeyHash;

use crate::extract::QueryPairs;

/// Push tokens look like `sleuth_push_` and 43 URL-safe base64 characters (32 random
/// bytes): safe in a URL, and recognisable to secret scanners and people.
pub const PUSH_TOKEN_PREFIX: &str = "sleuth_push_";

/// A new random push token and the hash that is stored.
pub fn generate_push_token() -> (String, KeyHash) {
    let mut bytes = [0_u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let token = format!(
        "{PUSH_TOKEN_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    );
    let hash = KeyHash::of(&token);
    (token, hash)
}

/// The token a request presents, from wherever its vendor can put it: `Authorization`
/// (bare, `Bearer `, `Token `, or basic auth's password — Elastic's and EventBridge's
/// connections send basic auth, Okta a bare header value), or `?token=` (Splunk's
/// webhook action and Graph subscriptions can only set a URL).
pub fn presented_token(headers: &HeaderMap, query: &QueryPairs) -> Option<String> {
    let from_header = headers
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .and_then(|value| {
            let (scheme, rest) = value.split_once(' ').unwrap_or(("", value));
            match scheme.to_ascii_lowercase().as_str() {
                "basic" => basic_password(rest.trim()),
                "bearer" | "token" => Some(rest.trim().to_string()),
                _ => Some(value.to_string()),
            }
        })
        .filter(|token| !token.is_empty());
    from_header.or_else(|| query.one("token").map(str::to_string))
}

/// Basic auth's password (or its user name when the password is empty: some tools take
/// only a user name).
fn basic_password(encoded: &str) -> Option<String> {
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (user, password) = text.split_once(':').unwrap_or((text.as_str(), ""));
    Some(if password.is_empty() { user } else { password }.to_string())
}

/// Whether `token` is the one stored as `hash`. The comparison is of SHA-256 digests of a
/// 256-bit random token, so its timing tells an attacker nothing useful.
pub fn token_matches(token: &str, hash: &KeyHash) -> bool {
    KeyHash::of(token).0 == hash.0
}

/// Whether GitHub's `X-Hub-Signature-256` (`sha256=<hex>`) is the HMAC-SHA256 of `body`
/// under `secret`, compared in constant time.
pub fn github_signature_is_valid(headers: &HeaderMap, body: &[u8], secret: &str) -> bool {
    let Some(signature) = headers
        .get("x-hub-signature-256")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("sha256="))
        .and_then(|hex_digest| hex::decode(hex_digest).ok())
    else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return false;
    };
    mac.update(body);
    mac.verify_slice(&signature).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(name: &'static str, value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn a_token_is_read_from_every_place_a_vendor_can_put_it() {
        let none = QueryPairs(Vec::new());
        let cases = [
            ("authorization", "sleuth_push_abc"),
            ("authorization", "Bearer sleuth_push_abc"),
            ("authorization", "Token sleuth_push_abc"),
            // user "sleuth", password the token; then a user name alone.
            ("authorization", "Basic c2xldXRoOnNsZXV0aF9wdXNoX2FiYw=="),
            ("authorization", "Basic c2xldXRoX3B1c2hfYWJjOg=="),
        ];
        for (name, value) in cases {
            assert_eq!(
                presented_token(&headers(name, value), &none).as_deref(),
                Some("sleuth_push_abc"),
                "{value}"
            );
        }
        let query = QueryPairs(vec![("token".into(), "sleuth_push_abc".into())]);
        assert_eq!(
            presented_token(&HeaderMap::new(), &query).as_deref(),
            Some("sleuth_push_abc")
        );
        assert_eq!(presented_token(&HeaderMap::new(), &none), None);
    }

    #[test]
    fn tokens_are_random_and_match_only_their_hash() {
        let (first, first_hash) = generate_push_token();
        let (second, _) = generate_push_token();
        assert_ne!(first, second);
        assert!(
            first.starts_with(PUSH_TOKEN_PREFIX) && first.len() == PUSH_TOKEN_PREFIX.len() + 43
        );
        assert!(token_matches(&first, &first_hash));
        assert!(!token_matches(&second, &first_hash));
    }

    #[test]
    fn github_signatures_are_checked_against_the_body() {
        // The example of GitHub's "Validating webhook deliveries" documentation.
        let secret = "It's a Secret to Everybody";
        let body = b"Hello, World!";
        let valid = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert!(github_signature_is_valid(
            &headers("x-hub-signature-256", valid),
            body,
            secret
        ));
        assert!(!github_signature_is_valid(
            &headers("x-hub-signature-256", valid),
            b"Hello, World?",
            secret
        ));
        assert!(!github_signature_is_valid(&HeaderMap::new(), body, secret));
        assert!(!github_signature_is_valid(
            &headers("x-hub-signature-256", "sha1=abc"),
            body,
            secret
        ));
    }
}
