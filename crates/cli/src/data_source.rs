//! `sleuth data-source shipped|add|list|enable|disable|test|remove`: the team's systems
//! that investigations ask (docs/data-sources.md), from the shell, the same as
//! `/app/api/v1/data-sources`. Definitions are JSON; the secrets they name are set with
//! `sleuth secret set NAME` and never printed.

use clap::Subcommand;
use sleuth_domain::{AnswerResult, Entity, EntityKind};
use sleuth_jobs::Settings;
use sleuth_store::{DataSourceChanges, DataSourceRecord, NewDataSource};

use crate::open::open_store;

#[derive(Debug, Subcommand)]
pub(crate) enum DataSourceCommand {
    /// List the definitions Sleuth ships.
    Shipped,
    /// Add a source; every `serve` and `worker` process asks it within
    /// `data_sources.refresh_seconds`.
    Add {
        #[arg(long)]
        name: String,
        /// A shipped definition (`sleuth data-source shipped`).
        #[arg(
            long,
            conflicts_with = "definition",
            required_unless_present = "definition"
        )]
        shipped: Option<String>,
        /// With --shipped: the vendor's URL for this customer.
        #[arg(long, requires = "shipped")]
        base_url: Option<String>,
        /// The definition as JSON, or @FILE to read it from a file.
        #[arg(long)]
        definition: Option<String>,
        /// The limits as JSON, or @FILE (the shipped or default ones when not given).
        #[arg(long)]
        limits: Option<String>,
        /// The tenant union whose alerts it answers for (every union's when not given).
        #[arg(long)]
        tenant_union: Option<i64>,
        /// Add it disabled.
        #[arg(long)]
        disabled: bool,
    },
    /// List sources.
    List,
    /// Ask a source again.
    Enable { id: i64 },
    /// Stop asking a source.
    Disable { id: i64 },
    /// Ask a source about one entity now, past its cache, and print the answer and facts.
    Test {
        id: i64,
        /// The entity kind: ip, domain, url, email, user, host, hash_sha256, ...
        kind: String,
        value: String,
    },
    /// Delete a source; the findings that cite it stay.
    Remove { id: i64 },
}

fn line(record: &DataSourceRecord) -> String {
    let kind = record
        .definition
        .get("type")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("?");
    format!(
        "{:>5}  {:<24}  {:<10}  {:<8}  {}",
        record.id,
        record.name,
        kind,
        if record.enabled {
            "enabled"
        } else {
            "disabled"
        },
        record.tenant_union_id.map_or_else(
            || "every tenant union".to_string(),
            |id| format!("tenant union {id}")
        )
    )
}

pub(crate) async fn run(settings: &Settings, command: DataSourceCommand) -> anyhow::Result<()> {
    if let DataSourceCommand::Shipped = command {
        for shipped in sleuth_sources::shipped::all() {
            println!("{:<18}  {}", shipped.name, shipped.description);
        }
        return Ok(());
    }
    let store = open_store(settings).await?;
    let now = chrono::Utc::now();
    match command {
        DataSourceCommand::Shipped => {}
        DataSourceCommand::Add {
            name,
            shipped,
            base_url,
            definition,
            limits,
            tenant_union,
            disabled,
        } => {
            let (definition, shipped_limits) = match (shipped, definition) {
                (Some(shipped), _) => {
                    sleuth_jobs::data_sources::shipped(&shipped, base_url.as_deref())
                        .map_err(|refusal| anyhow::anyhow!("{refusal}"))?
                }
                (None, Some(text)) => (
                    crate::args::json_argument(&text, "definition")?,
                    serde_json::json!({}),
                ),
                (None, None) => anyhow::bail!("give --shipped NAME or --definition JSON"),
            };
            let limits = match limits {
                Some(text) => crate::args::json_argument(&text, "limits")?,
                None => shipped_limits,
            };
            let (definition, limits) =
                sleuth_jobs::data_sources::check(store.as_ref(), definition, limits)
                    .await?
                    .map_err(|refusal| anyhow::anyhow!("{refusal}"))?;
            let record = store
                .create_data_source(&NewDataSource {
                    name,
                    definition: serde_json::to_value(&definition)?,
                    limits: serde_json::to_value(&limits)?,
                    tenant_union_id: tenant_union,
                    enabled: !disabled,
                    created_by: None,
                    at: now,
                })
                .await?;
            crate::audit::record(
                &store,
                "data-source add",
                "data-sources",
                Some(record.id.to_string()),
                serde_json::json!({"name": record.name}),
            )
            .await?;
            println!("{}", line(&record));
        }
        DataSourceCommand::List => {
            for record in store.list_data_sources().await? {
                println!("{}", line(&record));
            }
        }
        DataSourceCommand::Enable { id } | DataSourceCommand::Disable { id } => {
            let enabled = matches!(command, DataSourceCommand::Enable { .. });
            let changes = DataSourceChanges {
                enabled: Some(enabled),
                ..DataSourceChanges::default()
            };
            let record = store.update_data_source(id, &changes, now).await?;
            crate::audit::record(
                &store,
                if enabled {
                    "data-source enable"
                } else {
                    "data-source disable"
                },
                "data-sources",
                Some(id.to_string()),
                serde_json::json!({}),
            )
            .await?;
            println!("{}", line(&record));
        }
        DataSourceCommand::Test { id, kind, value } => {
            let kind = EntityKind::parse(&kind)
                .ok_or_else(|| anyhow::anyhow!("'{kind}' is not an entity kind"))?;
            let record = store.get_data_source(id).await?;
            let config = sleuth_jobs::data_sources::config_of(&record).ok_or_else(|| {
                anyhow::anyhow!("this source's stored definition no longer reads; replace it")
            })?;
            let state =
                sleuth_jobs::Runtime::new(settings.clone(), sleuth_engine::Context::empty());
            if let Some(keyring) = crate::secret::keyring(settings)? {
                state.set_keyring(keyring);
            }
            state.set_store(store.clone());
            let sources = state
                .data_sources()
                .ok_or_else(|| anyhow::anyhow!("data sources cannot run here (see the log)"))?;
            let tested = sources
                .sources()
                .test(config, &Entity::new(kind, value))
                .await
                .map_err(|error| anyhow::anyhow!("{error}"))?;
            match &tested.result {
                AnswerResult::Found(facts) => {
                    println!("found ({} ms)", tested.elapsed.as_millis());
                    for fact in facts {
                        println!("  {:<20} {}", fact.kind, fact.value);
                    }
                }
                AnswerResult::NotFound => println!("not found ({} ms)", tested.elapsed.as_millis()),
                AnswerResult::Failed { reason } => {
                    anyhow::bail!("the source did not answer: {reason}")
                }
            }
            if let Some(raw) = &tested.raw {
                println!("raw answer:\n{}", serde_json::to_string_pretty(raw)?);
            }
        }
        DataSourceCommand::Remove { id } => {
            store.delete_data_source(id).await?;
            crate::audit::record(
                &store,
                "data-source remove",
                "data-sources",
                Some(id.to_string()),
                serde_json::json!({}),
            )
            .await?;
            println!("removed data source {id}");
        }
    }
    Ok(())
}
