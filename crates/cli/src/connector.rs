//! `sleuth connector add|list|update|pause|resume|test|remove`: pull connectors from the
//! shell, the same as `/app/api/v1/connectors`. Settings are JSON (docs/sources.md); the
//! secret they name is set with `sleuth secret set NAME` and never printed.

use clap::Subcommand;
use sleuth_jobs::Settings;
use sleuth_store::{ConnectorChanges, ConnectorRecord, NewConnector, Store};

use crate::open::open_store;

#[derive(Debug, Subcommand)]
pub(crate) enum ConnectorCommand {
    /// Make a connector; it polls from the next start of a `serve` or `worker` process.
    Add {
        #[arg(long)]
        name: String,
        /// crowdstrike, graph_security, okta, sentinelone, elastic or google_workspace.
        #[arg(long)]
        kind: String,
        /// The settings as JSON, or @FILE to read them from a file.
        #[arg(long)]
        settings: String,
        /// Seconds between polls.
        #[arg(long, default_value_t = 300)]
        interval: i64,
        /// The tenant union every alert of this connector joins.
        #[arg(long)]
        tenant_union: Option<i64>,
        /// Make it paused.
        #[arg(long)]
        paused: bool,
    },
    /// List connectors with the state of their polls.
    List,
    /// Change a connector's settings or interval, or make it read its backfill window again.
    Update {
        id: i64,
        /// The new settings as JSON, or @FILE.
        #[arg(long)]
        settings: Option<String>,
        #[arg(long)]
        interval: Option<i64>,
        /// Forget the cursor: the next poll reads the backfill window again (nothing is
        /// stored twice).
        #[arg(long)]
        reset_cursor: bool,
    },
    /// Pause a connector.
    Pause { id: i64 },
    /// Resume a connector: it polls at once.
    Resume { id: i64 },
    /// Read one page from the vendor and parse it, storing nothing.
    Test { id: i64 },
    /// Delete a connector; the investigations it made stay.
    Remove { id: i64 },
}

async fn check(
    store: &std::sync::Arc<dyn Store>,
    kind: sleuth_connectors::Kind,
    settings: &serde_json::Value,
) -> anyhow::Result<()> {
    let checked = sleuth_connectors::Settings::check(kind, settings)
        .map_err(|error| anyhow::anyhow!("settings.{error}"))?;
    if !store
        .list_script_secrets()
        .await?
        .iter()
        .any(|stored| stored.name == checked.secret)
    {
        anyhow::bail!(
            "settings.secret: no secret named '{}' is stored; set it first with `sleuth secret \
             set {}`",
            checked.secret,
            checked.secret
        );
    }
    Ok(())
}

fn kind_of(text: &str) -> anyhow::Result<sleuth_connectors::Kind> {
    sleuth_connectors::Kind::parse(text).ok_or_else(|| {
        let known: Vec<&str> = sleuth_connectors::Kind::ALL
            .iter()
            .map(|kind| kind.as_str())
            .collect();
        anyhow::anyhow!(
            "'{text}' is not a connector kind: one of {}",
            known.join(", ")
        )
    })
}

fn line(connector: &ConnectorRecord, now: chrono::DateTime<chrono::Utc>) -> String {
    let lag = connector.caught_up_at.map_or_else(
        || "never caught up".to_string(),
        |at| format!("lag {}s", (now - at).num_seconds().max(0)),
    );
    format!(
        "{:>5}  {:<24}  {:<14}  {:<7}  last poll {}, {lag}, {} taken, {} known, {} refused{}",
        connector.id,
        connector.name,
        connector.kind,
        if connector.enabled {
            "enabled"
        } else {
            "paused"
        },
        connector
            .last_poll_at
            .map_or_else(|| "never".to_string(), |at| at.to_rfc3339()),
        connector.alerts_taken,
        connector.alerts_known,
        connector.alerts_refused,
        match (&connector.last_error, connector.failures) {
            (Some(error), failures) if failures > 0 => format!("; failing ({failures}): {error}"),
            _ => String::new(),
        }
    )
}

pub(crate) async fn run(settings: &Settings, command: ConnectorCommand) -> anyhow::Result<()> {
    let store = open_store(settings).await?;
    let now = chrono::Utc::now();
    match command {
        ConnectorCommand::Add {
            name,
            kind,
            settings: text,
            interval,
            tenant_union,
            paused,
        } => {
            let kind = kind_of(&kind)?;
            let connector_settings = crate::args::json_argument(&text, "settings")?;
            check(&store, kind, &connector_settings).await?;
            if !(1..=86_400).contains(&interval) {
                anyhow::bail!("--interval must be between 1 and 86400 seconds");
            }
            let connector = store
                .create_connector(&NewConnector {
                    name,
                    kind: kind.as_str().to_string(),
                    settings: connector_settings,
                    tenant_union_id: tenant_union,
                    enabled: !paused,
                    interval_seconds: interval,
                    created_by: None,
                    at: now,
                })
                .await?;
            crate::audit::record(
                &store,
                "connector add",
                "connectors",
                Some(connector.id.to_string()),
                serde_json::json!({"name": connector.name, "kind": connector.kind}),
            )
            .await?;
            println!("{}", line(&connector, now));
        }
        ConnectorCommand::List => {
            for connector in store.list_connectors().await? {
                println!("{}", line(&connector, now));
            }
        }
        ConnectorCommand::Update {
            id,
            settings: text,
            interval,
            reset_cursor,
        } => {
            let current = store.get_connector(id).await?;
            let new_settings = match text {
                Some(text) => {
                    let value = crate::args::json_argument(&text, "settings")?;
                    check(&store, kind_of(&current.kind)?, &value).await?;
                    Some(value)
                }
                None => None,
            };
            if let Some(interval) = interval
                && !(1..=86_400).contains(&interval)
            {
                anyhow::bail!("--interval must be between 1 and 86400 seconds");
            }
            let changes = ConnectorChanges {
                settings: new_settings,
                interval_seconds: interval,
                reset_cursor,
                ..ConnectorChanges::default()
            };
            let connector = store.update_connector(id, &changes, now).await?;
            crate::audit::record(
                &store,
                "connector update",
                "connectors",
                Some(id.to_string()),
                serde_json::json!({"reset_cursor": reset_cursor}),
            )
            .await?;
            println!("{}", line(&connector, now));
        }
        ConnectorCommand::Pause { id } | ConnectorCommand::Resume { id } => {
            let enabled = matches!(command, ConnectorCommand::Resume { .. });
            let changes = ConnectorChanges {
                enabled: Some(enabled),
                ..ConnectorChanges::default()
            };
            let connector = store.update_connector(id, &changes, now).await?;
            crate::audit::record(
                &store,
                if enabled {
                    "connector resume"
                } else {
                    "connector pause"
                },
                "connectors",
                Some(id.to_string()),
                serde_json::json!({}),
            )
            .await?;
            println!("{}", line(&connector, now));
        }
        ConnectorCommand::Test { id } => {
            let connector = store.get_connector(id).await?;
            let state =
                sleuth_jobs::Runtime::new(settings.clone(), sleuth_engine::Context::empty());
            if let Some(keyring) = crate::secret::keyring(settings)? {
                state.set_keyring(keyring);
            }
            state.set_store(store.clone());
            let summary = sleuth_jobs::connector_runtime::test_poll(&state, &store, &connector)
                .await
                .map_err(|error| anyhow::anyhow!("the test poll failed: {error}"))?;
            println!(
                "one page: {} alerts ({} readable, {} filtered out){}",
                summary.alerts,
                summary.readable,
                summary.filtered,
                if summary.more_pages {
                    "; more pages follow"
                } else {
                    ""
                }
            );
            if let Some(refusal) = summary.refusal {
                println!("refused: {refusal}");
            }
            for title in summary.titles {
                println!("  {title}");
            }
        }
        ConnectorCommand::Remove { id } => {
            store.delete_connector(id).await?;
            crate::audit::record(
                &store,
                "connector remove",
                "connectors",
                Some(id.to_string()),
                serde_json::json!({}),
            )
            .await?;
            println!("connector {id} removed");
        }
    }
    Ok(())
}
