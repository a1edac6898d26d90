//! `sleuth tenant create|list`: tenant unions from the shell.

use clap::Subcommand;
use serde_json::{Map, Value};
use sleuth_jobs::Settings;
use sleuth_store::TenantUnionInput;

use crate::open::open_store;

#[derive(Debug, Subcommand)]
pub(crate) enum TenantCommand {
    /// Create a tenant union; alerts naming one of its tenant ids join it.
    Create {
        #[arg(long)]
        name: String,
        /// A tenant id (as the source names it) that belongs to the union; repeatable.
        #[arg(long = "tenant-id")]
        tenant_ids: Vec<String>,
        /// An integration key whose alerts belong to the union; repeatable.
        #[arg(long = "integration-key")]
        integration_keys: Vec<String>,
    },
    /// List tenant unions.
    List,
}

pub(crate) async fn run(settings: &Settings, command: TenantCommand) -> anyhow::Result<()> {
    let store = open_store(settings).await?;
    match command {
        TenantCommand::Create {
            name,
            tenant_ids,
            integration_keys,
        } => {
            let mut lookup_dict = Map::new();
            lookup_dict.insert("tenant_ids".into(), Value::from(tenant_ids));
            lookup_dict.insert(
                "tenant_integration_keys".into(),
                Value::from(integration_keys),
            );
            let input = TenantUnionInput {
                display_name: name,
                lookup_dict,
                modified_by: None,
            };
            let union = store.create_tenant_union(&input).await?;
            crate::audit::record(
                &store,
                "tenant create",
                "tenant-unions",
                Some(union.id.to_string()),
                serde_json::json!({"display_name": union.display_name}),
            )
            .await?;
            println!("created tenant union {} ({})", union.id, union.display_name);
        }
        TenantCommand::List => {
            for union in store.list_tenant_unions().await? {
                println!(
                    "{:>5}  {:<30}  {}",
                    union.id,
                    union.display_name,
                    Value::Object(union.lookup_dict)
                );
            }
        }
    }
    Ok(())
}
