//! Webhook signatures: `X-Sleuth-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`, the
//! MAC taken with the destination's secret over `<t>.<body>` (the scheme the large webhook
//! senders use).
//!
//! A receiver recomputes the MAC over the timestamp and the raw body it received,
//! compares it in constant time with any `v1` in the header, and refuses a timestamp more
//! than a few minutes from its own clock, so that a captured request cannot be replayed
//! later. The event id (`X-Sleuth-Event-Id`, also in the body) lets it drop a redelivery
//! it has already processed. [`verify`] is that receiver, written as one would write it.

use ring::hmac;

/// The header that carries the signature.
pub const HEADER: &str = "X-Sleuth-Signature";

/// How far a receiver should let a timestamp be from its clock.
pub const DEFAULT_TOLERANCE_SECONDS: i64 = 300;

/// The header value for `body` sent at `timestamp` (unix seconds).
pub fn sign(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let tag = hmac::sign(&key, &signed_payload(timestamp, body));
    format!("t={timestamp},v1={}", hex::encode(tag.as_ref()))
}

/// Why a receiver refuses a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The header is missing a `t=` or a `v1=`, or they are not numbers and hex.
    Malformed,
    /// The timestamp is further than the tolerance from the receiver's clock.
    Stale,
    /// No `v1` matches the body.
    Mismatch,
}

/// A receiver's check of a request: the header value, the raw body, its own clock.
pub fn verify(
    secret: &[u8],
    header: &str,
    body: &[u8],
    now: i64,
    tolerance_seconds: i64,
) -> Result<(), Refusal> {
    let mut timestamp = None;
    let mut tags = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<i64>().ok(),
            Some(("v1", value)) => tags.extend(hex::decode(value).ok()),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(Refusal::Malformed)?;
    if tags.is_empty() {
        return Err(Refusal::Malformed);
    }
    if (now - timestamp).abs() > tolerance_seconds {
        return Err(Refusal::Stale);
    }
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let payload = signed_payload(timestamp, body);
    tags.iter()
        .any(|tag| hmac::verify(&key, &payload, tag).is_ok())
        .then_some(())
        .ok_or(Refusal::Mismatch)
}

fn signed_payload(timestamp: i64, body: &[u8]) -> Vec<u8> {
    let mut payload = format!("{timestamp}.").into_bytes();
    payload.extend_from_slice(body);
    payload
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"whsec_test_only";
    const NOW: i64 = 1_772_366_400;

    #[test]
    fn a_signed_body_verifies_and_any_change_does_not() {
        let body = br#"{"id":"e1","type":"investigation.concluded"}"#;
        let header = sign(SECRET, NOW, body);
        assert!(header.starts_with(&format!("t={NOW},v1=")));
        assert_eq!(verify(SECRET, &header, body, NOW + 10, 300), Ok(()));
        let altered = br#"{"id":"e1","type":"investigation.concluded" }"#;
        assert_eq!(
            verify(SECRET, &header, altered, NOW, 300),
            Err(Refusal::Mismatch)
        );
        assert_eq!(
            verify(b"another", &header, body, NOW, 300),
            Err(Refusal::Mismatch)
        );
    }

    #[test]
    fn the_timestamp_is_signed_and_old_requests_are_refused() {
        let body = b"{}";
        let header = sign(SECRET, NOW, body);
        // Moving the timestamp forward to pass the window breaks the MAC.
        let moved = header.replace(&NOW.to_string(), &(NOW + 3600).to_string());
        assert_eq!(
            verify(SECRET, &moved, body, NOW + 3600, 300),
            Err(Refusal::Mismatch)
        );
        assert_eq!(
            verify(SECRET, &header, body, NOW + 301, 300),
            Err(Refusal::Stale)
        );
    }

    #[test]
    fn a_rotated_secret_verifies_with_either_tag_and_garbage_is_malformed() {
        let body = b"{}";
        let old = sign(b"old", NOW, body);
        let new = sign(SECRET, NOW, body);
        let both = format!("{old},{}", new.split_once(',').unwrap().1);
        assert_eq!(verify(SECRET, &both, body, NOW, 300), Ok(()));
        assert_eq!(verify(b"old", &both, body, NOW, 300), Ok(()));
        for header in [
            "",
            "t=abc,v1=00",
            "v1=00",
            &format!("t={NOW}"),
            &format!("t={NOW},v1=zz"),
        ] {
            assert_eq!(
                verify(SECRET, header, body, NOW, 300),
                Err(Refusal::Malformed),
                "{header}"
            );
        }
    }
}
