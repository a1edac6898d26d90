//! Secrets a source needs (an API key, a bind password, an OAuth client secret): named in
//! its definition, kept in Sleuth's secret store, handed over only for the call. A value
//! never reaches a log, an error, an answer or a `Debug` print: a failure's reason is
//! scrubbed of every value the call used (`Scrub`).

use async_trait::async_trait;

/// A secret's value. `Debug` prints `***`.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("***")
    }
}

/// Where sources read their secrets: the server's secret store.
#[async_trait]
pub trait Secrets: Send + Sync {
    /// The secret `name`, or why it cannot be had (never the value).
    async fn secret(&self, name: &str) -> Result<Secret, String>;
}

/// No secrets at all: every lookup says so.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSecrets;

#[async_trait]
impl Secrets for NoSecrets {
    async fn secret(&self, name: &str) -> Result<Secret, String> {
        Err(format!(
            "the secret '{name}' is not stored; store it with `sleuth secret set {name}`"
        ))
    }
}

/// Secrets given as a fixed list (tests, `sleuth source test` run offline).
#[derive(Default, Clone)]
pub struct StaticSecrets(pub Vec<(String, Secret)>);

#[async_trait]
impl Secrets for StaticSecrets {
    async fn secret(&self, name: &str) -> Result<Secret, String> {
        self.0
            .iter()
            .find(|(stored, _)| stored == name)
            .map(|(_, secret)| secret.clone())
            .ok_or_else(|| {
                format!(
                    "the secret '{name}' is not stored; store it with `sleuth secret set {name}`"
                )
            })
    }
}

/// The secret values one call used, to be cut out of anything it reports.
#[derive(Default)]
pub struct Scrub(Vec<String>);

impl Scrub {
    pub fn add(&mut self, secret: &Secret) {
        // A value this short would garble every message and could not be told apart from
        // ordinary words anyway.
        if secret.0.len() >= 4 {
            self.0.push(secret.0.clone());
        }
    }

    /// `text` with every secret value (also percent-encoded, as it would sit in a URL)
    /// replaced by `***`.
    pub fn clean(&self, text: &str) -> String {
        let mut text = text.to_string();
        for value in &self.0 {
            text = text.replace(value.as_str(), "***");
            let encoded: String = url::form_urlencoded::byte_serialize(value.as_bytes()).collect();
            if encoded != *value {
                text = text.replace(&encoded, "***");
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_never_prints_in_debug() {
        assert_eq!(format!("{:?}", Secret::new("hunter2-key")), "***");
    }

    #[test]
    fn scrub_cuts_plain_and_url_encoded_values() {
        let mut scrub = Scrub::default();
        scrub.add(&Secret::new("a b/c+d"));
        assert_eq!(
            scrub.clean("url ?key=a+b%2Fc%2Bd and a b/c+d"),
            "url ?key=*** and ***"
        );
    }
}
