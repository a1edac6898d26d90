//! Console passwords: what a password must be, and its argon2id hash. The parameters are
//! OWASP's first recommendation for argon2id (19 MiB of memory, 2 passes, 1 lane), which
//! costs a few tens of milliseconds a hash on a server core: slow enough that a stolen
//! database does not give its passwords up cheaply, fast enough for a sign-in. The hash
//! is a PHC string (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`), so the parameters of
//! each stored hash travel with it and can be raised later without breaking old ones.
//!
//! Hashing is CPU work: async callers run it on the blocking pool (`hash_blocking`,
//! `verify_blocking`), never on a request's task.

use std::sync::OnceLock;

use argon2::password_hash::{PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use base64::Engine;
use rand::RngCore;
use sleuth_store::PasswordHash;

/// The shortest password Sleuth accepts, in characters (NIST SP 800-63B asks for at least
/// 8; a console that decides about breaches asks for more).
pub const MIN_CHARS: usize = 12;
/// The longest: hashing has a cost per byte, and nobody types more.
pub const MAX_CHARS: usize = 256;

fn hasher() -> Argon2<'static> {
    let params = Params::new(19 * 1024, 2, 1, None).expect("OWASP's argon2id parameters are valid");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// Why `password` cannot be a new password, if it cannot.
pub fn check_new(password: &str, email: &str) -> Result<(), String> {
    let length = password.chars().count();
    if length < MIN_CHARS {
        return Err(format!(
            "a password has at least {MIN_CHARS} characters (this one has {length}); a few \
             unrelated words make a good one"
        ));
    }
    if length > MAX_CHARS {
        return Err(format!("a password has at most {MAX_CHARS} characters"));
    }
    if password.chars().any(char::is_control) {
        return Err("a password holds no control characters".into());
    }
    if password.trim().eq_ignore_ascii_case(email.trim()) {
        return Err("a password is not the email address".into());
    }
    Ok(())
}

/// The argon2id hash of `password`, with a fresh random salt.
pub fn hash(password: &str) -> PasswordHash {
    let mut salt = [0_u8; 16];
    rand::rng().fill_bytes(&mut salt);
    let salt = SaltString::encode_b64(&salt).expect("16 bytes make a valid salt");
    let hashed = hasher()
        .hash_password(password.as_bytes(), &salt)
        .expect("argon2id hashes any password of at most MAX_CHARS characters");
    PasswordHash(hashed.to_string())
}

/// Whether `password` is the one `hash` was made from. A hash that is not a valid PHC
/// string matches nothing.
pub fn verify(password: &str, hash: &PasswordHash) -> bool {
    match argon2::password_hash::PasswordHash::new(&hash.0) {
        Ok(parsed) => hasher()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

/// A hash to verify against when the email names no user (or one without a password),
/// so that the answer takes as long as for a real user and does not tell which emails
/// exist.
fn stand_in_hash() -> &'static PasswordHash {
    static STAND_IN: OnceLock<PasswordHash> = OnceLock::new();
    STAND_IN.get_or_init(|| hash("a stand-in that no user has"))
}

/// `hash` on the blocking pool.
pub async fn hash_blocking(password: String) -> PasswordHash {
    tokio::task::spawn_blocking(move || hash(&password))
        .await
        .expect("hashing a password does not panic")
}

/// `verify` on the blocking pool; `None` checks against a stand-in and answers false.
pub async fn verify_blocking(password: String, hash: Option<PasswordHash>) -> bool {
    tokio::task::spawn_blocking(move || match hash {
        Some(hash) => verify(&password, &hash),
        None => {
            let _ = verify(&password, stand_in_hash());
            false
        }
    })
    .await
    .expect("verifying a password does not panic")
}

/// A password for a user who has none yet (the first admin): 24 URL-safe characters
/// (144 random bits), shown once and to be changed at first sign-in.
pub fn generate() -> String {
    let mut bytes = [0_u8; 18];
    rand::rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_is_argon2id_with_owasp_parameters_and_verifies_only_its_password() {
        let hashed = hash("correct horse battery staple");
        assert!(
            hashed.0.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{}",
            hashed.0
        );
        assert!(verify("correct horse battery staple", &hashed));
        assert!(!verify("correct horse battery stapler", &hashed));
        assert_ne!(hash("correct horse battery staple"), hashed, "salted");
        assert!(!verify("anything", &PasswordHash("not a hash".into())));
    }

    #[test]
    fn new_passwords_are_long_enough_and_not_the_email() {
        assert!(check_new("short", "a@example.com").is_err());
        assert!(check_new(&"x".repeat(MAX_CHARS + 1), "a@example.com").is_err());
        assert!(check_new("twelve chars\u{7}", "a@example.com").is_err());
        assert!(check_new("Ana@Example.com", "ana@example.com").is_err());
        assert!(check_new("four unrelated words here", "ana@example.com").is_ok());
        let generated = generate();
        assert_eq!(generated.len(), 24);
        assert!(check_new(&generated, "admin@sleuth.local").is_ok());
    }
}
