//! `sleuth audit verify`: walks the audit log's hash chain and says whether it is intact;
//! and the audit entries of the command line's own writes (keys, tenant unions, secrets),
//! which have no API request to be recorded by.

use clap::Subcommand;
use serde_json::{Map, Value};
use sleuth_jobs::Settings;
use sleuth_store::{AuditVerdict, NewAuditEntry, Store};

use crate::open::open_store;

#[derive(Debug, Subcommand)]
pub(crate) enum AuditCommand {
    /// Check that no entry was edited, deleted or inserted: exits 0 with the number of
    /// entries and the head hash (keep it elsewhere to detect even a rewritten log), or
    /// non-zero naming the first entry that does not match.
    Verify,
}

pub(crate) async fn run(settings: &Settings, command: AuditCommand) -> anyhow::Result<()> {
    match command {
        AuditCommand::Verify => {
            let store = open_store(settings).await?;
            match store.verify_audit_chain().await? {
                AuditVerdict::Intact { count, head_hash } => {
                    println!("audit log intact: {count} entries; head hash {head_hash}");
                    Ok(())
                }
                AuditVerdict::Broken { seq, reason } => {
                    anyhow::bail!("audit log broken at entry {seq}: {reason}")
                }
            }
        }
    }
}

/// Appends the entry of a write the command line made. The write is done by then; if it
/// cannot be recorded, the command fails saying so, so an unaudited change never passes
/// silently.
pub(crate) async fn record(
    store: &std::sync::Arc<dyn Store>,
    action: &str,
    resource_type: &str,
    resource_id: Option<String>,
    detail: Value,
) -> anyhow::Result<()> {
    let mut detail = match detail {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    detail.insert("via".into(), Value::from("cli"));
    let entry = NewAuditEntry {
        actor_user_id: None,
        actor_email: None,
        action: format!("cli {action}"),
        resource_type: resource_type.to_string(),
        resource_id,
        request_id: None,
        detail,
        // The command line changes what every tenant shares (keys, users, unions, secrets).
        tenant_union_id: None,
    };
    store.append_audit_entry(&entry).await.map_err(|error| {
        anyhow::anyhow!(
            "the change was made but could not be recorded in the audit log ({error}); \
             check the database and record it by hand"
        )
    })?;
    Ok(())
}
