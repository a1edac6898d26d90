//! Script secrets between the store and the scripts: sealing what an admin sets, sealing
//! again what an older Sleuth stored in plaintext or a previous key sealed, handing a run
//! the secrets its action names (and no others), and masking their values in what the run
//! printed. The store only ever holds sealed values (`secret_keys`).

use std::collections::BTreeMap;
use std::sync::Arc;

use sleuth_store::{SecretValue, Store, StoreError, StoreResult, StoredSecret};

use crate::secret_keys::{self, Keyring, OpenError};

/// The largest secret value, in bytes.
pub const MAX_SECRET_BYTES: usize = 64 * 1024;

/// A secret's name is 1 to 128 ASCII letters, digits and underscores, not starting with a
/// digit, so that it reads well as `secrets["NAME"]` and as a shell argument.
pub fn secret_name_is_valid(name: &str) -> bool {
    let mut characters = name.chars();
    let starts_well = characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_');
    starts_well
        && name.len() <= 128
        && characters.all(|character| character.is_ascii_alphanumeric() || character == '_')
}

/// Why a secret's value cannot be stored, if it cannot.
pub fn secret_value_problem(value: &str) -> Option<String> {
    if value.len() > MAX_SECRET_BYTES {
        return Some(format!("at most {MAX_SECRET_BYTES} bytes are accepted"));
    }
    value
        .contains('\0')
        .then(|| "must not contain NUL characters".to_string())
}

/// A value shorter than this is not masked in a run's output: masking every `a` or `42`
/// would garble the output and hide nothing worth hiding.
pub const MASK_MIN_BYTES: usize = 4;
/// What a masked value reads as.
pub const MASK: &str = "***";

/// What sealing again did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResealReport {
    /// Plaintext rows (from before secrets were encrypted) now sealed.
    pub sealed_plaintext: u64,
    /// Rows sealed by the previous key, now sealed by the current one.
    pub resealed: u64,
    /// Why some could not be sealed again, one line per secret (never a value).
    pub unreadable: Vec<String>,
}

/// Seals under the current key every secret that is not: plaintext rows, and rows sealed
/// by the previous key. A row changed meanwhile (by the API or another process doing the
/// same) is left as that change wrote it.
pub async fn reseal(store: &Arc<dyn Store>, keyring: &Keyring) -> StoreResult<ResealReport> {
    let names: Vec<String> = store
        .list_script_secrets()
        .await?
        .into_iter()
        .filter(|info| info.key_id.as_deref() != Some(keyring.current_id()))
        .map(|info| info.name)
        .collect();
    let mut report = ResealReport::default();
    for (name, stored) in store.script_secrets(&names).await? {
        if !keyring.needs_reseal(&stored) {
            continue;
        }
        let value = match keyring.open(&name, &stored) {
            Ok(value) => value,
            Err(error) => {
                report.unreadable.push(error.to_string());
                continue;
            }
        };
        let sealed = keyring.seal(&name, &value);
        if store.reseal_script_secret(&name, &stored, &sealed).await? {
            match stored {
                StoredSecret::Plaintext(_) => report.sealed_plaintext += 1,
                StoredSecret::Sealed(_) => report.resealed += 1,
            }
        }
    }
    Ok(report)
}

/// Why secrets stored now cannot all be opened by this process, if they cannot: sealed
/// rows whose key it lacks, and plaintext rows it should seal. Reads no values.
pub async fn problem(
    store: &Arc<dyn Store>,
    keyring: Option<&Keyring>,
) -> StoreResult<Option<String>> {
    let secrets = store.list_script_secrets().await?;
    let sealed_elsewhere: Vec<&str> = secrets
        .iter()
        .filter(|info| {
            info.key_id
                .as_deref()
                .is_some_and(|key_id| !keyring.is_some_and(|keyring| keyring.opens(key_id)))
        })
        .map(|info| info.name.as_str())
        .collect();
    if !sealed_elsewhere.is_empty() {
        return Ok(Some(format!(
            "{} secret(s) are sealed with a key this process does not have ({}): scripts \
             that name them end in error until secrets.key_file (or SLEUTH_SECRETS__KEY) \
             is set to that key",
            sealed_elsewhere.len(),
            sealed_elsewhere.join(", ")
        )));
    }
    let plaintext = secrets.iter().filter(|info| info.key_id.is_none()).count();
    if plaintext > 0 {
        return Ok(Some(format!(
            "{plaintext} secret(s) are stored in plaintext by an older Sleuth: set \
             secrets.key_file (make a key with `sleuth secret generate-key`) and restart, \
             and they are encrypted"
        )));
    }
    Ok(None)
}

/// At start-up: seals what needs sealing (when this process has a key), then logs and
/// answers whatever still keeps secrets from scripts, for `/readyz`.
pub async fn prepare(
    keyring: Option<&Keyring>,
    store: &Arc<dyn Store>,
) -> StoreResult<Option<String>> {
    if let Some(keyring) = keyring {
        match reseal(store, keyring).await {
            Ok(report) => {
                if report.sealed_plaintext > 0 {
                    tracing::info!(
                        count = report.sealed_plaintext,
                        key_id = keyring.current_id(),
                        "script secrets stored in plaintext by an older Sleuth are now encrypted"
                    );
                }
                if report.resealed > 0 {
                    tracing::info!(
                        count = report.resealed,
                        key_id = keyring.current_id(),
                        "script secrets sealed by the previous key are now sealed by the current one"
                    );
                }
                for line in &report.unreadable {
                    tracing::error!("{line}");
                }
            }
            Err(error) => tracing::error!(%error, "could not seal the stored script secrets"),
        }
    }
    let found = problem(store, keyring).await?;
    if let Some(problem) = &found {
        tracing::warn!("{problem}");
    }
    Ok(found)
}

/// Why a run cannot have the secrets its action names. Names secrets, never values.
#[derive(Debug, thiserror::Error)]
pub enum RunSecretsError {
    #[error(
        "the response action names secret(s) that are not stored: {}; set them with PUT \
         /app/api/v1/response-actions/secrets/NAME or `sleuth secret set`, or remove them \
         from its secret_names",
        .0.join(", ")
    )]
    Missing(Vec<String>),
    #[error("{0}")]
    Unopenable(#[from] OpenError),
    #[error("{0}")]
    Store(#[from] StoreError),
}

/// The secret values one run is handed. `Debug` shows names only.
#[derive(Clone, Default)]
pub struct RunSecrets(BTreeMap<String, String>);

impl std::fmt::Debug for RunSecrets {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_set().entries(self.0.keys()).finish()
    }
}

impl RunSecrets {
    /// The values as the sandbox's job takes them.
    pub fn values(&self) -> BTreeMap<String, String> {
        self.0.clone()
    }

    /// `text` with every value of at least `MASK_MIN_BYTES` replaced by `***`: a script
    /// that prints a secret by mistake does not put it in its stored run or in a test-run's
    /// answer. It is no barrier against a script that means to reveal one (encoded, or a
    /// character at a time): the secrets an action names are the ones its author can read.
    pub fn mask(&self, text: String) -> String {
        let mut values: Vec<&str> = self
            .0
            .values()
            .map(String::as_str)
            .filter(|value| value.len() >= MASK_MIN_BYTES)
            .collect();
        // Longest first, so a value that contains another is masked whole.
        values.sort_by_key(|value| std::cmp::Reverse(value.len()));
        values
            .into_iter()
            .fold(text, |text, value| text.replace(value, MASK))
    }
}

/// The stored rows of `names` (each once), for runs that will pick theirs.
pub async fn stored<'a>(
    store: &Arc<dyn Store>,
    names: impl IntoIterator<Item = &'a String>,
) -> StoreResult<BTreeMap<String, StoredSecret>> {
    let mut wanted: Vec<String> = names.into_iter().cloned().collect();
    wanted.sort();
    wanted.dedup();
    store.script_secrets(&wanted).await
}

/// The values of exactly `names`, opened from `stored` (which may hold more).
pub fn open_named(
    keyring: Option<&Keyring>,
    stored: &BTreeMap<String, StoredSecret>,
    names: &[String],
) -> Result<RunSecrets, RunSecretsError> {
    let missing: Vec<String> = names
        .iter()
        .filter(|name| !stored.contains_key(*name))
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(RunSecretsError::Missing(missing));
    }
    let mut values = BTreeMap::new();
    for name in names {
        if let Some(row) = stored.get(name) {
            let SecretValue(value) = secret_keys::open(keyring, name, row)?;
            values.insert(name.clone(), value);
        }
    }
    Ok(RunSecrets(values))
}

/// The values of exactly `names`, read and opened for one run.
pub async fn for_run(
    store: &Arc<dyn Store>,
    keyring: Option<&Keyring>,
    names: &[String],
) -> Result<RunSecrets, RunSecretsError> {
    if names.is_empty() {
        return Ok(RunSecrets::default());
    }
    let rows = stored(store, names).await?;
    open_named(keyring, &rows, names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(pairs: &[(&str, &str)]) -> RunSecrets {
        RunSecrets(
            pairs
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
        )
    }

    #[test]
    fn masking_hides_every_value_long_enough_and_the_longest_first() {
        let run = secrets(&[("A", "token-123"), ("B", "token-123-extended"), ("C", "ab")]);
        let masked = run.mask("a token-123-extended and token-123 and ab\n".into());
        assert_eq!(masked, "a *** and *** and ab\n");
    }

    #[test]
    fn debug_shows_names_only() {
        let run = secrets(&[("EDR_TOKEN", "never-shown")]);
        let shown = format!("{run:?}");
        assert!(
            shown.contains("EDR_TOKEN") && !shown.contains("never-shown"),
            "{shown}"
        );
    }

    #[test]
    fn a_run_gets_exactly_the_names_of_its_action() {
        let stored: BTreeMap<String, StoredSecret> = [("A", "a-value"), ("B", "b-value")]
            .into_iter()
            .map(|(name, value)| {
                (
                    name.to_string(),
                    StoredSecret::Plaintext(SecretValue(value.into())),
                )
            })
            .collect();
        let run = open_named(None, &stored, &["B".to_string()]).unwrap();
        assert_eq!(run.values().keys().collect::<Vec<_>>(), vec!["B"]);
        let missing = open_named(None, &stored, &["B".into(), "C".into()]).unwrap_err();
        assert!(matches!(&missing, RunSecretsError::Missing(names) if names == &["C".to_string()]));
    }
}
