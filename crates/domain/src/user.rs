//! Users and their validated fields (SPEC.md "User": email ≤ 254, names ≤ 150).

use serde::{Deserialize, Serialize};

/// Why a user field was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UserFieldError {
    #[error("email must be at most 254 characters")]
    EmailTooLong,
    #[error("'{0}' is not an email address (expected local@domain)")]
    EmailInvalid(String),
    #[error("{field} must be at most 150 characters")]
    NameTooLong { field: &'static str },
    #[error("{field} must not contain control characters")]
    NameHasControlCharacters { field: &'static str },
}

/// An email address as SPEC allows it: at most 254 characters, one `@`, a dotted domain.
/// Stored lower-cased, so that lookups by email are exact.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EmailAddress(String);

impl EmailAddress {
    pub fn parse(raw: &str) -> Result<EmailAddress, UserFieldError> {
        let trimmed = raw.trim();
        if trimmed.chars().count() > 254 {
            return Err(UserFieldError::EmailTooLong);
        }
        let invalid = || UserFieldError::EmailInvalid(trimmed.chars().take(100).collect());
        let (local, domain) = trimmed.split_once('@').ok_or_else(invalid)?;
        let domain_ok = domain.contains('.')
            && !domain.starts_with('.')
            && !domain.ends_with('.')
            && domain.split('.').all(|label| {
                !label.is_empty() && label.chars().all(|c| c.is_alphanumeric() || c == '-')
            });
        let local_ok = !local.is_empty()
            && local.len() <= 64
            && !local
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == '@');
        if !domain_ok || !local_ok {
            return Err(invalid());
        }
        Ok(EmailAddress(trimmed.to_lowercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for EmailAddress {
    type Error = UserFieldError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        EmailAddress::parse(&value)
    }
}

impl From<EmailAddress> for String {
    fn from(value: EmailAddress) -> String {
        value.0
    }
}

impl std::fmt::Display for EmailAddress {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// A first or last name: at most 150 characters, no control characters.
pub fn parse_person_name(field: &'static str, raw: &str) -> Result<String, UserFieldError> {
    let trimmed = raw.trim();
    if trimmed.chars().count() > 150 {
        return Err(UserFieldError::NameTooLong { field });
    }
    if trimmed.chars().any(char::is_control) {
        return Err(UserFieldError::NameHasControlCharacters { field });
    }
    Ok(trimmed.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_lower_cased_and_bounded() {
        assert_eq!(
            EmailAddress::parse(" R.Patel@Example.COM ")
                .unwrap()
                .as_str(),
            "r.patel@example.com"
        );
        let long = format!("{}@example.com", "a".repeat(250));
        assert_eq!(
            EmailAddress::parse(&long),
            Err(UserFieldError::EmailTooLong)
        );
        for bad in [
            "",
            "no-at-sign",
            "a@b",
            "a@.com",
            "a@b.",
            "a b@example.com",
            "@example.com",
        ] {
            assert!(EmailAddress::parse(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn names_are_bounded_at_150_characters() {
        assert!(parse_person_name("first_name", &"é".repeat(150)).is_ok());
        assert_eq!(
            parse_person_name("first_name", &"é".repeat(151)),
            Err(UserFieldError::NameTooLong {
                field: "first_name"
            })
        );
        assert!(parse_person_name("last_name", "a\u{0}b").is_err());
    }
}
