//! `sleuth push-source add|list|pause|resume|rotate|remove`: push sources from the shell,
//! the same as `/app/api/v1/push-sources`. A token is printed once, when it is made.

use clap::Subcommand;
use sleuth_jobs::Settings;
use sleuth_server::push_auth::generate_push_token;
use sleuth_store::{NewPushSource, PushKind, PushSourceChanges};

use crate::open::open_store;

#[derive(Debug, Subcommand)]
pub(crate) enum PushSourceCommand {
    /// Make a push source and print its URL and token (shown only this once).
    Add {
        #[arg(long)]
        name: String,
        /// okta, github, graph, eventbridge, splunk, elastic or generic.
        #[arg(long)]
        kind: String,
        /// The stored secret (`sleuth secret set NAME`) that signs the requests (github).
        #[arg(long)]
        signing_secret: Option<String>,
        /// The tenant union every alert of this source joins.
        #[arg(long)]
        tenant_union: Option<i64>,
    },
    /// List push sources with their counts (never their tokens).
    List,
    /// Pause a push source: its requests answer 403.
    Pause { id: i64 },
    /// Resume a paused push source.
    Resume { id: i64 },
    /// Replace a push source's token and print the new one.
    Rotate { id: i64 },
    /// Delete a push source; its URL stops answering.
    Remove { id: i64 },
}

fn push_url(settings: &Settings, id: i64) -> String {
    let base = settings
        .server
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{}", settings.server.listen));
    format!("{}/app/api/v1/push/{id}", base.trim_end_matches('/'))
}

pub(crate) async fn run(settings: &Settings, command: PushSourceCommand) -> anyhow::Result<()> {
    let store = open_store(settings).await?;
    let now = chrono::Utc::now();
    match command {
        PushSourceCommand::Add {
            name,
            kind,
            signing_secret,
            tenant_union,
        } => {
            let kind = PushKind::parse(&kind).ok_or_else(|| {
                let known: Vec<&str> = PushKind::ALL.iter().map(|kind| kind.as_str()).collect();
                anyhow::anyhow!("'{kind}' is not a push kind: one of {}", known.join(", "))
            })?;
            if kind == PushKind::Github && signing_secret.is_none() {
                anyhow::bail!(
                    "a github source needs --signing-secret NAME: the webhook's secret, stored \
                     with `sleuth secret set NAME`"
                );
            }
            let (token, token_hash) = generate_push_token();
            let source = store
                .create_push_source(&NewPushSource {
                    name,
                    kind,
                    token_hash,
                    signing_secret,
                    tenant_union_id: tenant_union,
                    created_by: None,
                    at: now,
                })
                .await?;
            crate::audit::record(
                &store,
                "push-source add",
                "push-sources",
                Some(source.id.to_string()),
                serde_json::json!({"name": source.name, "kind": kind.as_str()}),
            )
            .await?;
            println!(
                "push source {} ({}, {})",
                source.id,
                source.name,
                kind.as_str()
            );
            println!("URL:   {}", push_url(settings, source.id));
            println!("token: {token}   (shown only this once; docs/sources.md says where it goes)");
        }
        PushSourceCommand::List => {
            for source in store.list_push_sources().await? {
                println!(
                    "{:>5}  {:<30}  {:<12}  {:<8}  {} deliveries, {} alerts, last {}",
                    source.id,
                    source.name,
                    source.kind.as_str(),
                    if source.enabled { "enabled" } else { "paused" },
                    source.deliveries,
                    source.alerts_received,
                    source
                        .last_delivery_at
                        .map_or_else(|| "never".to_string(), |at| at.to_rfc3339()),
                );
            }
        }
        PushSourceCommand::Pause { id } | PushSourceCommand::Resume { id } => {
            let enabled = matches!(command, PushSourceCommand::Resume { .. });
            let changes = PushSourceChanges {
                enabled: Some(enabled),
                token_hash: None,
            };
            store.update_push_source(id, &changes, now).await?;
            crate::audit::record(
                &store,
                if enabled {
                    "push-source resume"
                } else {
                    "push-source pause"
                },
                "push-sources",
                Some(id.to_string()),
                serde_json::json!({}),
            )
            .await?;
            println!(
                "push source {id} {}",
                if enabled { "resumed" } else { "paused" }
            );
        }
        PushSourceCommand::Rotate { id } => {
            let (token, token_hash) = generate_push_token();
            let changes = PushSourceChanges {
                enabled: None,
                token_hash: Some(token_hash),
            };
            store.update_push_source(id, &changes, now).await?;
            crate::audit::record(
                &store,
                "push-source rotate",
                "push-sources",
                Some(id.to_string()),
                serde_json::json!({}),
            )
            .await?;
            println!("new token: {token}   (shown only this once; the old one no longer works)");
        }
        PushSourceCommand::Remove { id } => {
            store.delete_push_source(id).await?;
            crate::audit::record(
                &store,
                "push-source remove",
                "push-sources",
                Some(id.to_string()),
                serde_json::json!({}),
            )
            .await?;
            println!("push source {id} removed");
        }
    }
    Ok(())
}
