//! `sleuth notification add|list|show|update|enable|disable|test|deliveries|redeliver`:
//! notification destinations from the shell, the same as `/app/api/v1/notifications`.
//! Settings and rules are JSON (docs/notifications.md); the secrets settings name are set
//! with `sleuth secret set NAME` and never printed.

use std::sync::Arc;

use clap::Subcommand;
use sleuth_jobs::Settings;
use sleuth_jobs::notify_destination as check;
use sleuth_jobs::notify_transport::Attempt;
use sleuth_store::{
    DeliveryQuery, DeliveryState, NewNotificationDestination, NotificationDestinationChanges,
    NotificationDestinationRecord, Store,
};

use crate::open::open_store;

#[derive(Debug, Subcommand)]
pub(crate) enum NotificationCommand {
    /// Make a destination; it is told of the events from now on.
    Add {
        #[arg(long)]
        name: String,
        /// webhook, slack, teams, pagerduty, syslog or email.
        #[arg(long)]
        kind: String,
        /// The settings as JSON, or @FILE (secrets only named: `url_secret`, ...).
        #[arg(long)]
        settings: String,
        /// The rule as JSON, or @FILE: `{"events": ["investigation.concluded"], ...}`.
        #[arg(long)]
        rule: String,
        /// The headline, with placeholders such as {priority} and {title}.
        #[arg(long)]
        template: Option<String>,
        /// At most this many sends a minute.
        #[arg(long)]
        rate_limit: Option<i64>,
        /// Make it disabled.
        #[arg(long)]
        disabled: bool,
    },
    /// List destinations with the state of their deliveries.
    List,
    /// Show one destination whole.
    Show { id: i64 },
    /// Change a destination's settings, rule, template or rate limit.
    Update {
        id: i64,
        #[arg(long)]
        settings: Option<String>,
        #[arg(long)]
        rule: Option<String>,
        #[arg(long)]
        template: Option<String>,
        /// Back to the default headline.
        #[arg(long, conflicts_with = "template")]
        no_template: bool,
        #[arg(long)]
        rate_limit: Option<i64>,
        /// No rate limit of ours.
        #[arg(long, conflicts_with = "rate_limit")]
        no_rate_limit: bool,
    },
    /// Enable a destination: it is told of the events from its cursor on.
    Enable { id: i64 },
    /// Disable a destination: it is told nothing until enabled.
    Disable { id: i64 },
    /// Send a test event now and print what the receiver said.
    Test { id: i64 },
    /// List a destination's deliveries, newest first.
    Deliveries {
        id: i64,
        /// pending, delivered or dead.
        #[arg(long)]
        state: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Send a dead delivery again.
    Redeliver { id: i64, delivery: i64 },
}

fn line(destination: &NotificationDestinationRecord) -> String {
    format!(
        "{:>5}  {:<24}  {:<9}  {:<8}  {} pending, {} delivered, {} dead{}",
        destination.id,
        destination.name,
        destination.kind,
        if destination.enabled {
            "enabled"
        } else {
            "disabled"
        },
        destination.pending,
        destination.delivered,
        destination.dead,
        destination
            .last_error
            .as_ref()
            .map_or_else(String::new, |error| format!("; last error: {error}"))
    )
}

fn problem(problem: check::Problem) -> anyhow::Error {
    anyhow::anyhow!("{problem}")
}

async fn audit(
    store: &Arc<dyn Store>,
    action: &str,
    id: i64,
    details: serde_json::Value,
) -> anyhow::Result<()> {
    crate::audit::record(
        store,
        action,
        "notification-destination",
        Some(id.to_string()),
        details,
    )
    .await
}

pub(crate) async fn run(settings: &Settings, command: NotificationCommand) -> anyhow::Result<()> {
    let store = open_store(settings).await?;
    let now = chrono::Utc::now();
    match command {
        NotificationCommand::Add {
            name,
            kind,
            settings: settings_text,
            rule,
            template,
            rate_limit,
            disabled,
        } => {
            let kind = check::kind(Some(&kind)).map_err(problem)?;
            let destination_settings = crate::args::json_argument(&settings_text, "settings")?;
            check::settings(&store, kind, &destination_settings)
                .await
                .map_err(problem)?;
            let rule = crate::args::json_argument(&rule, "rule")?;
            check::rule(&rule).map_err(problem)?;
            if let Some(template) = &template {
                check::template(template).map_err(problem)?;
            }
            let rate_limit = rate_limit
                .map(check::rate_limit)
                .transpose()
                .map_err(problem)?;
            let destination = store
                .create_notification_destination(&NewNotificationDestination {
                    name,
                    kind: kind.as_str().to_string(),
                    settings: destination_settings,
                    rule,
                    template,
                    enabled: !disabled,
                    rate_limit_per_minute: rate_limit,
                    created_by: None,
                    at: now,
                })
                .await?;
            audit(
                &store,
                "notification add",
                destination.id,
                serde_json::json!({"name": destination.name, "kind": destination.kind}),
            )
            .await?;
            println!("{}", line(&destination));
        }
        NotificationCommand::List => {
            for destination in store.list_notification_destinations().await? {
                println!("{}", line(&destination));
            }
        }
        NotificationCommand::Show { id } => {
            let destination = store.get_notification_destination(id).await?;
            println!("{}", line(&destination));
            println!("settings: {}", destination.settings);
            println!("rule: {}", destination.rule);
            if let Some(template) = &destination.template {
                println!("template: {template}");
            }
            if let Some(limit) = destination.rate_limit_per_minute {
                println!("rate limit: {limit} a minute");
            }
        }
        NotificationCommand::Update {
            id,
            settings: settings_text,
            rule,
            template,
            no_template,
            rate_limit,
            no_rate_limit,
        } => {
            let current = store.get_notification_destination(id).await?;
            let new_settings = match settings_text {
                Some(text) => {
                    let value = crate::args::json_argument(&text, "settings")?;
                    let kind = check::kind(Some(&current.kind)).map_err(problem)?;
                    check::settings(&store, kind, &value)
                        .await
                        .map_err(problem)?;
                    Some(value)
                }
                None => None,
            };
            let rule = rule
                .map(|text| crate::args::json_argument(&text, "rule"))
                .transpose()?;
            if let Some(rule) = &rule {
                check::rule(rule).map_err(problem)?;
            }
            if let Some(template) = &template {
                check::template(template).map_err(problem)?;
            }
            let rate_limit = rate_limit
                .map(check::rate_limit)
                .transpose()
                .map_err(problem)?;
            let changes = NotificationDestinationChanges {
                settings: new_settings,
                rule,
                template: if no_template {
                    Some(None)
                } else {
                    template.map(Some)
                },
                rate_limit_per_minute: if no_rate_limit {
                    Some(None)
                } else {
                    rate_limit.map(Some)
                },
                ..NotificationDestinationChanges::default()
            };
            let destination = store
                .update_notification_destination(id, &changes, now)
                .await?;
            audit(&store, "notification update", id, serde_json::json!({})).await?;
            println!("{}", line(&destination));
        }
        NotificationCommand::Enable { id } | NotificationCommand::Disable { id } => {
            let enabled = matches!(command, NotificationCommand::Enable { .. });
            let changes = NotificationDestinationChanges {
                enabled: Some(enabled),
                ..NotificationDestinationChanges::default()
            };
            let destination = store
                .update_notification_destination(id, &changes, now)
                .await?;
            audit(
                &store,
                if enabled {
                    "notification enable"
                } else {
                    "notification disable"
                },
                id,
                serde_json::json!({}),
            )
            .await?;
            println!("{}", line(&destination));
        }
        NotificationCommand::Test { id } => {
            let destination = store.get_notification_destination(id).await?;
            let runtime =
                sleuth_jobs::Runtime::new(settings.clone(), sleuth_engine::Context::empty());
            if let Some(keyring) = crate::secret::keyring(settings)? {
                runtime.set_keyring(keyring);
            }
            runtime.set_store(store.clone());
            match sleuth_jobs::notify_delivery::send_test(&runtime, &store, &destination).await {
                Attempt::Delivered { detail } => println!("delivered: {detail}"),
                Attempt::TryAgain { reason, .. } => {
                    anyhow::bail!("not delivered (worth trying again): {reason}")
                }
                Attempt::Refused { reason } => anyhow::bail!("refused: {reason}"),
            }
        }
        NotificationCommand::Deliveries { id, state, limit } => {
            let state = state
                .map(|text| {
                    DeliveryState::parse(&text).ok_or_else(|| {
                        anyhow::anyhow!("--state must be pending, delivered or dead")
                    })
                })
                .transpose()?;
            store.get_notification_destination(id).await?;
            let deliveries = store
                .list_notification_deliveries(&DeliveryQuery {
                    destination_id: id,
                    state,
                    before_id: None,
                    limit: limit.clamp(1, 1000),
                })
                .await?;
            for delivery in deliveries {
                println!(
                    "{:>7}  event {:<6}  {:<9}  {} attempt(s)  {}",
                    delivery.id,
                    delivery
                        .system_event_id
                        .map_or_else(|| "-".to_string(), |id| id.to_string()),
                    delivery.state.as_str(),
                    delivery.attempts,
                    match (&delivery.delivered_at, &delivery.last_error) {
                        (Some(at), _) => format!("delivered {}", at.to_rfc3339()),
                        (None, Some(error)) => format!("last error: {error}"),
                        (None, None) => format!("due {}", delivery.next_attempt_at.to_rfc3339()),
                    }
                );
            }
        }
        NotificationCommand::Redeliver { id, delivery } => {
            let delivery = store.redeliver_notification(id, delivery, now).await?;
            audit(
                &store,
                "notification redeliver",
                id,
                serde_json::json!({"delivery_id": delivery.id}),
            )
            .await?;
            println!("delivery {} is pending again", delivery.id);
        }
    }
    Ok(())
}
