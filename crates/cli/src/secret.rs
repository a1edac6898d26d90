//! `sleuth secret set|list|delete`: the secrets response scripts read as `secrets["NAME"]`.
//! A value is read from stdin, so it never appears in the shell history or the process
//! list, and it is never printed.

use std::io::Read;

use clap::Subcommand;
use sleuth_server::Settings;
use sleuth_server::routes::response_actions::{secret_name_is_valid, secret_value_problem};
use sleuth_store::SecretValue;

use crate::open::open_store;

#[derive(Debug, Subcommand)]
pub enum SecretCommand {
    /// Create or replace a secret; its value is read from stdin (one trailing newline is
    /// dropped), e.g. `printf %s "$TOKEN" | sleuth secret set EDR_TOKEN`.
    Set { name: String },
    /// List secrets by name (never their values).
    List,
    /// Delete a secret.
    Delete { name: String },
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

pub async fn run(settings: &Settings, command: SecretCommand) -> anyhow::Result<()> {
    match command {
        SecretCommand::Set { name } => {
            check_name(&name)?;
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
            let store = open_store(settings).await?;
            store
                .set_script_secret(&name, &SecretValue(value), chrono::Utc::now())
                .await?;
            // The name only: a secret's value never reaches the audit log.
            crate::audit::record(
                &store,
                "secret set",
                "secret",
                Some(name.clone()),
                serde_json::json!({}),
            )
            .await?;
            eprintln!("stored secret {name}");
        }
        SecretCommand::List => {
            let store = open_store(settings).await?;
            println!("{:<40}  {:<25}  updated", "name", "created");
            for secret in store.list_script_secrets().await? {
                println!(
                    "{:<40}  {:<25}  {}",
                    secret.name,
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
    }
    Ok(())
}
