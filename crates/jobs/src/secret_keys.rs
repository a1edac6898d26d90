//! The keys that seal script secrets at rest, kept outside the database (a key file or the
//! environment), and sealing and opening with them. XChaCha20-Poly1305 (RustCrypto): a
//! random 192-bit nonce per value, so nonces never need counting, and the secret's name as
//! associated data, so a sealed value moved to another name no longer opens.
//!
//! A key is 32 random bytes written as base64 (`sleuth secret generate-key`). Its id is a
//! fingerprint (the first 8 bytes of a SHA-256 of the key, as hex), stored beside each
//! sealed value so that Sleuth knows which key opens it. The keyring holds the current
//! key, which seals, and at most one previous key, which only opens: that is how a key is
//! rotated (docs/secrets.md).

use std::path::Path;

use base64::Engine;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::RngCore;
use sha2::Digest;
use sleuth_store::{SealedSecret, SecretValue, StoredSecret};

use crate::settings::SecretSettings;

/// A key's length in bytes.
pub const KEY_BYTES: usize = 32;
const NONCE_BYTES: usize = 24;
/// Bound into every sealed value with the secret's name, so that nothing else Sleuth might
/// ever seal with the same key opens as a secret.
const ASSOCIATED_DATA_PREFIX: &str = "sleuth script secret v1:";

fn base64_engine() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

/// One key. `Debug` shows its id, never the key.
pub struct SecretKey {
    id: String,
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SecretKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Why a key could not be read. Never quotes the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error(
        "{origin} is not a Sleuth secrets key: expected {KEY_BYTES} bytes as base64 (44 \
         characters); make one with `sleuth secret generate-key`"
    )]
    Malformed { origin: String },
    #[error("cannot read {origin}: {reason}")]
    Unreadable { origin: String, reason: String },
    #[error("secrets.previous_key is the same key as secrets.key; remove it")]
    PreviousIsCurrent,
    #[error("secrets.previous_key is set without secrets.key; set the current key too")]
    PreviousWithoutCurrent,
}

impl SecretKey {
    /// Reads a key written as base64; whitespace around it is ignored. `origin` names where
    /// it came from for the error.
    pub fn parse(text: &str, origin: &str) -> Result<SecretKey, KeyError> {
        let malformed = || KeyError::Malformed {
            origin: origin.to_string(),
        };
        let bytes = base64_engine()
            .decode(text.trim())
            .map_err(|_| malformed())?;
        let bytes: [u8; KEY_BYTES] = bytes.try_into().map_err(|_| malformed())?;
        let digest = sha2::Sha256::digest([b"sleuth secrets key id:".as_slice(), &bytes].concat());
        let cipher = XChaCha20Poly1305::new_from_slice(&bytes).map_err(|_| malformed())?;
        Ok(SecretKey {
            id: hex::encode(&digest[..8]),
            cipher,
        })
    }

    /// A new random key, as the text a key file holds (base64 and a newline).
    pub fn generate() -> String {
        let mut bytes = [0_u8; KEY_BYTES];
        rand::rng().fill_bytes(&mut bytes);
        format!("{}\n", base64_engine().encode(bytes))
    }

    pub fn id(&self) -> &str {
        &self.id
    }
}

/// Why a stored secret could not be opened. Names the secret and the key id, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error(
        "secret {name} is encrypted, and this Sleuth process has no key to open it: set \
         secrets.key_file (or SLEUTH_SECRETS__KEY) to the key it was sealed with (key id \
         {key_id})"
    )]
    NoKey { name: String, key_id: String },
    #[error(
        "secret {name} was sealed with key {key_id}, which is neither secrets.key nor \
         secrets.previous_key of this process: configure that key (see docs/secrets.md)"
    )]
    UnknownKey { name: String, key_id: String },
    #[error(
        "secret {name} does not open with key {key_id}: its stored value was altered or \
         belongs to another name; set it again"
    )]
    Tampered { name: String, key_id: String },
}

/// The current key and, during a rotation, the previous one.
#[derive(Debug)]
pub struct Keyring {
    current: SecretKey,
    previous: Option<SecretKey>,
}

impl Keyring {
    pub fn new(current: SecretKey, previous: Option<SecretKey>) -> Result<Keyring, KeyError> {
        if previous
            .as_ref()
            .is_some_and(|previous| previous.id == current.id)
        {
            return Err(KeyError::PreviousIsCurrent);
        }
        Ok(Keyring { current, previous })
    }

    /// The keyring the settings name (reading key files), or None when no key is set.
    pub fn from_settings(settings: &SecretSettings) -> Result<Option<Keyring>, KeyError> {
        let current = read_key(
            settings.key.as_ref().map(|key| key.expose()),
            settings.key_file.as_deref(),
            "secrets.key",
        )?;
        let previous = read_key(
            settings.previous_key.as_ref().map(|key| key.expose()),
            settings.previous_key_file.as_deref(),
            "secrets.previous_key",
        )?;
        match (current, previous) {
            (None, None) => Ok(None),
            (None, Some(_)) => Err(KeyError::PreviousWithoutCurrent),
            (Some(current), previous) => Keyring::new(current, previous).map(Some),
        }
    }

    /// The id of the key that seals.
    pub fn current_id(&self) -> &str {
        &self.current.id
    }

    /// Seals `value` under the current key, bound to `name`.
    pub fn seal(&self, name: &str, value: &SecretValue) -> SealedSecret {
        let mut nonce = [0_u8; NONCE_BYTES];
        rand::rng().fill_bytes(&mut nonce);
        let associated_data = associated_data(name);
        // Encryption with a valid key cannot fail; the crate's signature allows it for
        // buffers it cannot grow, which a Vec always can.
        let ciphertext = self
            .current
            .cipher
            .encrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: value.0.as_bytes(),
                    aad: associated_data.as_bytes(),
                },
            )
            .unwrap_or_default();
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&ciphertext);
        SealedSecret {
            key_id: self.current.id.clone(),
            ciphertext: base64_engine().encode(sealed),
        }
    }

    /// The value of a stored secret: plaintext rows as they are, sealed ones opened with
    /// the key that sealed them.
    pub fn open(&self, name: &str, stored: &StoredSecret) -> Result<SecretValue, OpenError> {
        match stored {
            StoredSecret::Plaintext(value) => Ok(value.clone()),
            StoredSecret::Sealed(sealed) => {
                let key = [Some(&self.current), self.previous.as_ref()]
                    .into_iter()
                    .flatten()
                    .find(|key| key.id == sealed.key_id)
                    .ok_or_else(|| OpenError::UnknownKey {
                        name: name.to_string(),
                        key_id: sealed.key_id.clone(),
                    })?;
                open_with(key, name, sealed)
            }
        }
    }

    /// Whether a value sealed by `key_id` opens with this keyring.
    pub fn opens(&self, key_id: &str) -> bool {
        self.current.id == key_id
            || self
                .previous
                .as_ref()
                .is_some_and(|previous| previous.id == key_id)
    }

    /// Whether `stored` should be sealed again: it is plaintext, or sealed by a key other
    /// than the current one.
    pub fn needs_reseal(&self, stored: &StoredSecret) -> bool {
        stored.key_id() != Some(self.current.id.as_str())
    }
}

/// Opens a secret when there may be no keyring at all.
pub fn open(
    keyring: Option<&Keyring>,
    name: &str,
    stored: &StoredSecret,
) -> Result<SecretValue, OpenError> {
    match (keyring, stored) {
        (Some(keyring), stored) => keyring.open(name, stored),
        (None, StoredSecret::Plaintext(value)) => Ok(value.clone()),
        (None, StoredSecret::Sealed(sealed)) => Err(OpenError::NoKey {
            name: name.to_string(),
            key_id: sealed.key_id.clone(),
        }),
    }
}

fn associated_data(name: &str) -> String {
    format!("{ASSOCIATED_DATA_PREFIX}{name}")
}

fn open_with(key: &SecretKey, name: &str, sealed: &SealedSecret) -> Result<SecretValue, OpenError> {
    let tampered = || OpenError::Tampered {
        name: name.to_string(),
        key_id: sealed.key_id.clone(),
    };
    let bytes = base64_engine()
        .decode(&sealed.ciphertext)
        .map_err(|_| tampered())?;
    if bytes.len() < NONCE_BYTES {
        return Err(tampered());
    }
    let (nonce, ciphertext) = bytes.split_at(NONCE_BYTES);
    let nonce = XNonce::try_from(nonce).map_err(|_| tampered())?;
    let associated_data = associated_data(name);
    let plaintext = key
        .cipher
        .decrypt(
            &nonce,
            Payload {
                msg: ciphertext,
                aad: associated_data.as_bytes(),
            },
        )
        .map_err(|_| tampered())?;
    String::from_utf8(plaintext)
        .map(SecretValue)
        .map_err(|_| tampered())
}

/// A key given inline or in a file (not both); None when neither is set.
fn read_key(
    inline: Option<&str>,
    file: Option<&Path>,
    setting: &str,
) -> Result<Option<SecretKey>, KeyError> {
    match (inline, file) {
        (None, None) => Ok(None),
        (Some(text), None) => SecretKey::parse(text, setting).map(Some),
        (None, Some(path)) => {
            let origin = format!("{setting}_file {}", path.display());
            let text = std::fs::read_to_string(path).map_err(|error| KeyError::Unreadable {
                origin: origin.clone(),
                reason: error.to_string(),
            })?;
            warn_if_readable_by_others(path, &origin);
            SecretKey::parse(&text, &origin).map(Some)
        }
        // Settings::validate refuses both; this keeps the rule in one reading.
        (Some(_), Some(_)) => Err(KeyError::Unreadable {
            origin: setting.to_string(),
            reason: format!("set either {setting} or {setting}_file, not both"),
        }),
    }
}

#[cfg(unix)]
fn warn_if_readable_by_others(path: &Path, origin: &str) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(metadata) = std::fs::metadata(path)
        && metadata.permissions().mode() & 0o077 != 0
    {
        tracing::warn!(
            "{origin} can be read by other users of this host; `chmod 600` it so that only \
             Sleuth's user reads the key"
        );
    }
}

#[cfg(not(unix))]
fn warn_if_readable_by_others(_path: &Path, _origin: &str) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> SecretKey {
        SecretKey::parse(&SecretKey::generate(), "test").expect("a generated key parses")
    }

    fn keyring() -> Keyring {
        Keyring::new(key(), None).unwrap()
    }

    #[test]
    fn a_sealed_value_opens_with_its_key_and_name_only() {
        let keyring = keyring();
        let value = SecretValue("s3cr3t-value ✓".into());
        let sealed = keyring.seal("EDR_TOKEN", &value);
        assert_eq!(sealed.key_id, keyring.current_id());
        assert!(!sealed.ciphertext.contains("s3cr3t"));
        let stored = StoredSecret::Sealed(sealed.clone());
        assert_eq!(keyring.open("EDR_TOKEN", &stored).unwrap(), value);
        // Another name, another key, or one altered character: it does not open.
        assert!(matches!(
            keyring.open("SLACK_HOOK", &stored),
            Err(OpenError::Tampered { .. })
        ));
        let other = Keyring::new(key(), None).unwrap();
        assert!(matches!(
            other.open("EDR_TOKEN", &stored),
            Err(OpenError::UnknownKey { .. })
        ));
        let mut altered = sealed.clone();
        let last = altered.ciphertext.pop().unwrap();
        altered.ciphertext.push(if last == 'A' { 'B' } else { 'A' });
        assert!(matches!(
            keyring.open("EDR_TOKEN", &StoredSecret::Sealed(altered)),
            Err(OpenError::Tampered { .. })
        ));
    }

    #[test]
    fn sealing_twice_never_repeats_a_nonce() {
        let keyring = keyring();
        let value = SecretValue("same".into());
        assert_ne!(
            keyring.seal("A", &value).ciphertext,
            keyring.seal("A", &value).ciphertext
        );
    }

    #[test]
    fn the_previous_key_opens_and_the_current_one_seals() {
        let old = Keyring::new(
            SecretKey::parse(&base64_engine().encode([7_u8; 32]), "old").unwrap(),
            None,
        )
        .unwrap();
        let sealed = StoredSecret::Sealed(old.seal("A", &SecretValue("v".into())));
        let rotated = Keyring::new(
            key(),
            Some(SecretKey::parse(&base64_engine().encode([7_u8; 32]), "old").unwrap()),
        )
        .unwrap();
        assert_eq!(rotated.open("A", &sealed).unwrap().0, "v");
        assert!(rotated.needs_reseal(&sealed));
        let resealed = StoredSecret::Sealed(rotated.seal("A", &SecretValue("v".into())));
        assert!(!rotated.needs_reseal(&resealed));
        assert!(rotated.needs_reseal(&StoredSecret::Plaintext(SecretValue("v".into()))));
    }

    #[test]
    fn without_a_keyring_plaintext_opens_and_sealed_values_say_why_not() {
        let sealed = StoredSecret::Sealed(keyring().seal("A", &SecretValue("v".into())));
        let error = open(None, "A", &sealed).unwrap_err();
        assert!(matches!(error, OpenError::NoKey { .. }));
        assert!(error.to_string().contains("secrets.key_file"), "{error}");
        let plain = StoredSecret::Plaintext(SecretValue("v".into()));
        assert_eq!(open(None, "A", &plain).unwrap().0, "v");
    }

    #[test]
    fn malformed_keys_are_refused_without_quoting_them() {
        for text in [
            "",
            "not base64!",
            "c2hvcnQ=",
            &base64_engine().encode([1_u8; 33]),
        ] {
            let error = SecretKey::parse(text, "secrets.key").unwrap_err();
            assert!(matches!(error, KeyError::Malformed { .. }));
            assert!(text.is_empty() || !error.to_string().contains(text));
        }
        let key = SecretKey::generate();
        assert!(!format!("{:?}", SecretKey::parse(&key, "k").unwrap()).contains(key.trim()));
    }
}
