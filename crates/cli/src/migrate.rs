//! `sleuth migrate`: the schema, then the secrets that need sealing again.

use sleuth_jobs::Settings;

use crate::open::open_store;
use crate::secret;

/// Migrates the schema, then, with a secrets key, seals the secrets that need it (as every
/// start does): those an older Sleuth stored in plaintext, and those of a previous key.
pub(crate) async fn migrate(settings: &Settings) -> anyhow::Result<()> {
    let keyring = secret::keyring(settings)?;
    let store = open_store(settings).await?;
    store.check_ready().await?;
    println!("database is migrated ({})", store.backend().as_str());
    if let Some(keyring) = keyring {
        secret::reseal(&store, &keyring).await?;
    }
    Ok(())
}
