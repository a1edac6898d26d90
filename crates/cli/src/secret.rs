//! `sleuth secret set|list|delete|generate-key|rotate-key`: the secrets response scripts
//! read as `secrets["NAME"]`, sealed with the key of `secrets.key_file` (docs/secrets.md).
//! A value is read from stdin, so it never appears in the shell history or the process
//! list, and it is never printed.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use clap::Subcommand;
use sleuth_jobs::Settings;
use sleuth_jobs::script_secrets::{secret_name_is_valid, secret_value_problem};
use sleuth_jobs::secret_keys::{Keyring, SecretKey};
use sleuth_store::{SecretValue, Store};

use crate::open::open_store;

#[derive(Debug, Subcommand)]
pub(crate) enum SecretCommand {
    /// Create or replace a secret; its value is read from stdin (one trailing newline is
    /// dropped), e.g. `printf %s "$TOKEN" | sleuth secret set EDR_TOKEN`. Needs the key
    /// (secrets.key_file or SLEUTH_SECRETS__KEY).
    Set { name: String },
    /// List secrets by name with the id of the key that sealed each (never their values).
    List,
    /// Delete a secret.
    Delete { name: String },
    /// Make a new random key and write it to a new file readable by its owner only (`-`
    /// prints it instead, e.g. for SLEUTH_SECRETS__KEY).
    GenerateKey {
        #[arg(long)]
        out: PathBuf,
    },
    /// Seal every secret with the current key (secrets.key_file), opening those of the
    /// previous key (secrets.previous_key_file) and those an older Sleuth stored in
    /// plaintext. Every start does the same; this does it without a restart.
    RotateKey,
}

fn check_name(name: &str) -> anyhow::Result<()> {
    if !secret_name_is_valid(name) {
        anyhow::bail!(
            "'{name}' is not a secret name: use 1 to 128 letters, digits and underscores, not \
             starting with a digit"
        );
    }
    Ok(())
}

/// The keyring the settings name, if any; a key that does not load is an error.
pub(crate) fn keyring(settings: &Settings) -> anyhow::Result<Option<Keyring>> {
    Ok(Keyring::from_settings(&settings.secrets)?)
}

fn required_keyring(settings: &Settings) -> anyhow::Result<Keyring> {
    keyring(settings)?.ok_or_else(|| {
        anyhow::anyhow!(
            "no secrets key is configured: make one with `sleuth secret generate-key --out \
             FILE` and set secrets.key_file (or SLEUTH_SECRETS__KEY); see docs/secrets.md"
        )
    })
}

/// Seals what needs sealing and says what it did; fails when some secret cannot be opened.
pub(crate) async fn reseal(store: &Arc<dyn Store>, keyring: &Keyring) -> anyhow::Result<()> {
    let report = sleuth_jobs::script_secrets::reseal(store, keyring).await?;
    eprintln!(
        "secrets sealed with key {}: {} from plaintext, {} from the previous key",
        keyring.current_id(),
        report.sealed_plaintext,
        report.resealed
    );
    if !report.unreadable.is_empty() {
        anyhow::bail!(
            "{} secret(s) could not be sealed again:\n{}",
            report.unreadable.len(),
            report.unreadable.join("\n")
        );
    }
    Ok(())
}

fn write_new_key(out: &PathBuf) -> anyhow::Result<()> {
    let key = SecretKey::generate();
    if out.as_os_str() == "-" {
        print!("{key}");
        return Ok(());
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(out)
        .map_err(|error| anyhow::anyhow!("cannot create {}: {error}", out.display()))?;
    file.write_all(key.as_bytes())?;
    file.sync_all()?;
    let id = SecretKey::parse(&key, "the new key")?.id().to_string();
    eprintln!(
        "wrote a new key (id {id}) to {}; point secrets.key_file at it",
        out.display()
    );
    Ok(())
}

pub(crate) async fn run(settings: &Settings, command: SecretCommand) -> anyhow::Result<()> {
    match command {
        SecretCommand::Set { name } => {
            check_name(&name)?;
            let keyring = required_keyring(settings)?;
            let mut value = String::new();
            std::io::stdin().read_to_string(&mut value)?;
            if value.ends_with('\n') {
                value.pop();
                if value.ends_with('\r') {
                    value.pop();
                }
            }
            if let Some(problem) = secret_value_problem(&value) {
                anyhow::bail!("the value of {name}: {problem}");
            }
            let sealed = keyring.seal(&name, &SecretValue(value));
            let store = open_store(settings).await?;
            store
                .set_script_secret(&name, &sealed, chrono::Utc::now())
                .await?;
            // The name only: a secret's value never reaches the audit log.
            crate::audit::record(
                &store,
                "secret set",
                "secret",
                Some(name.clone()),
                serde_json::json!({"key_id": sealed.key_id}),
            )
            .await?;
            eprintln!("stored secret {name} (sealed with key {})", sealed.key_id);
        }
        SecretCommand::List => {
            let store = open_store(settings).await?;
            println!(
                "{:<40}  {:<16}  {:<25}  updated",
                "name", "key id", "created"
            );
            for secret in store.list_script_secrets().await? {
                println!(
                    "{:<40}  {:<16}  {:<25}  {}",
                    secret.name,
                    secret.key_id.as_deref().unwrap_or("(plaintext)"),
                    secret.created_at.to_rfc3339(),
                    secret.updated_at.to_rfc3339()
                );
            }
        }
        SecretCommand::Delete { name } => {
            check_name(&name)?;
            let store = open_store(settings).await?;
            store.delete_script_secret(&name).await?;
            crate::audit::record(
                &store,
                "secret delete",
                "secret",
                Some(name.clone()),
                serde_json::json!({}),
            )
            .await?;
            eprintln!("deleted secret {name}");
        }
        SecretCommand::GenerateKey { out } => write_new_key(&out)?,
        SecretCommand::RotateKey => {
            let keyring = required_keyring(settings)?;
            let store = open_store(settings).await?;
            reseal(&store, &keyring).await?;
            crate::audit::record(
                &store,
                "secret rotate-key",
                "secret",
                None,
                serde_json::json!({"key_id": keyring.current_id()}),
            )
            .await?;
        }
    }
    Ok(())
}
