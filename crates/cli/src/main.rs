//! The `sleuth` binary. `main` is the only place that reads the environment and the
//! command line; everything below receives typed settings.
#![forbid(unsafe_code)]
// The command line prints keys, reports and JSON for people and scripts to read.
#![allow(clippy::print_stdout)]

mod apikey;
mod args;
mod audit;
mod backup;
mod connector;
mod context;
mod data_source;
mod eval;
mod investigate;
mod migrate;
mod notification;
mod open;
mod push_source;
mod sandbox;
mod secret;
mod serve;
mod tenant;
mod user;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use sleuth_jobs::Settings;

/// mimalloc, not glibc malloc: see the workspace Cargo.toml for the measurement.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "sleuth",
    version,
    about = "Self-hosted security alert investigation"
)]
struct Cli {
    /// A TOML config file (see the README for every key).
    #[arg(long, global = true, env = "SLEUTH_CONFIG")]
    config: Option<PathBuf>,
    /// The database: sqlite://sleuth.db (default) or postgres://user@host/db.
    #[arg(long, global = true)]
    database: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the HTTP API (and, unless workers.enabled = false, the investigation workers).
    Serve {
        /// Address to listen on (default 127.0.0.1:8080).
        #[arg(long)]
        listen: Option<String>,
    },
    /// Run investigation workers only, without HTTP (scale-out on PostgreSQL).
    Worker,
    /// Apply database migrations and exit.
    Migrate,
    /// Print the effective configuration (secrets redacted).
    Config,
    /// Manage API keys.
    Apikey {
        #[command(subcommand)]
        command: apikey::ApikeyCommand,
    },
    /// Manage users' console passwords.
    User {
        #[command(subcommand)]
        command: user::UserCommand,
    },
    /// Manage tenant unions.
    Tenant {
        #[command(subcommand)]
        command: tenant::TenantCommand,
    },
    /// Manage push sources: one URL per tool that sends alerts (docs/sources.md).
    PushSource {
        #[command(subcommand)]
        command: push_source::PushSourceCommand,
    },
    /// Manage pull connectors: vendor alert APIs polled on an interval (docs/sources.md).
    Connector {
        #[command(subcommand)]
        command: connector::ConnectorCommand,
    },
    /// Manage notification destinations: webhooks, Slack, Teams, PagerDuty, syslog
    /// (docs/notifications.md).
    Notification {
        #[command(subcommand)]
        command: notification::NotificationCommand,
    },
    /// Manage data sources: the team's systems investigations ask (docs/data-sources.md).
    DataSource {
        #[command(subcommand)]
        command: data_source::DataSourceCommand,
    },
    /// Manage the secrets response scripts read (values from stdin, never shown).
    Secret {
        #[command(subcommand)]
        command: secret::SecretCommand,
    },
    /// Investigate one alert file offline and print the investigation as the API would.
    /// A corpus case file (corpus/README.md) is investigated on its `alert`.
    Investigate {
        /// The alert, as JSON.
        file: PathBuf,
        /// Which parser reads it (detected when absent).
        #[arg(long)]
        schema_key: Option<String>,
        /// The operator's context: a TOML file or a directory of them (default: the
        /// configured engine.context_file).
        #[arg(long)]
        context: Option<PathBuf>,
    },
    /// Measure verdicts against your own labels: investigate every alert under DIR and
    /// report agreement (docs/eval.md).
    Eval {
        /// A directory of alerts with a labels.toml, or of corpus case files.
        dir: PathBuf,
        /// The operator's context (default: DIR/context when it exists, else the
        /// configured engine.context_file).
        #[arg(long)]
        context: Option<PathBuf>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Work with the operator's context file (docs/context.md).
    Context {
        #[command(subcommand)]
        command: context::ContextCommand,
    },
    /// The audit log of every write: check its hash chain.
    Audit {
        #[command(subcommand)]
        command: audit::AuditCommand,
    },
    /// Write a consistent copy of the database while Sleuth keeps running
    /// (docs/operations.md).
    Backup {
        /// The file to write; it must not exist.
        #[arg(long)]
        to: PathBuf,
    },
    /// Make a backup the configured database, which must not exist yet (SQLite) or hold
    /// no table (PostgreSQL); then apply this build's migrations and verify the audit log.
    Restore {
        /// The backup file written by `sleuth backup`.
        #[arg(long)]
        from: PathBuf,
    },
}

fn load_settings(cli: &Cli) -> anyhow::Result<Settings> {
    let file_text = match &cli.config {
        Some(path) => Some((
            path.display().to_string(),
            std::fs::read_to_string(path).map_err(|error| {
                anyhow::anyhow!("cannot read config file {}: {error}", path.display())
            })?,
        )),
        None => None,
    };
    let mut settings = Settings::load(
        file_text
            .as_ref()
            .map(|(path, text)| (path.as_str(), text.as_str())),
        std::env::vars(),
    )?;
    if let Some(database) = &cli.database {
        settings.database.url = database.clone();
    }
    if let Command::Serve {
        listen: Some(listen),
    } = &cli.command
    {
        settings.server.listen = listen.clone();
    }
    settings.validate()?;
    Ok(settings)
}

fn init_logging(settings: &Settings) {
    let filter = tracing_subscriber::EnvFilter::try_new(&settings.log.level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if settings.log.format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
}

fn main() -> ExitCode {
    // `sleuth sandbox-exec` is the script sandbox's launcher, re-executed by this binary for
    // every script run. It refuses to run once a thread exists, so it is dispatched before
    // anything else: no argument parsing, logging or async runtime.
    let mut arguments = std::env::args_os();
    if arguments
        .nth(1)
        .is_some_and(|first| first == sandbox::LAUNCHER_SUBCOMMAND)
    {
        sleuth_sandbox::launcher_main(arguments.collect());
    }
    let cli = Cli::parse();
    let settings = match load_settings(&cli) {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("sleuth: {error:#}");
            return ExitCode::from(2);
        }
    };
    if let Command::Config = cli.command {
        print!("{}", settings.redacted_toml());
        return ExitCode::SUCCESS;
    }
    init_logging(&settings);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("sleuth: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async move {
        match cli.command {
            Command::Serve { .. } => serve::serve(settings).await,
            Command::Worker => serve::worker(settings).await,
            Command::Migrate => migrate::migrate(&settings).await,
            Command::Config => Ok(()),
            Command::Apikey { command } => apikey::run(&settings, command).await,
            Command::Tenant { command } => tenant::run(&settings, command).await,
            Command::User { command } => user::run(&settings, command).await,
            Command::Secret { command } => secret::run(&settings, command).await,
            Command::PushSource { command } => push_source::run(&settings, command).await,
            Command::Connector { command } => connector::run(&settings, command).await,
            Command::DataSource { command } => data_source::run(&settings, command).await,
            Command::Notification { command } => notification::run(&settings, command).await,
            Command::Investigate {
                file,
                schema_key,
                context,
            } => investigate::run(
                &file,
                schema_key.as_deref(),
                context
                    .as_deref()
                    .or(settings.engine.context_file.as_deref()),
            ),
            Command::Eval { dir, context, json } => eval::run(
                &dir,
                context.as_deref(),
                settings.engine.context_file.as_deref(),
                json,
            ),
            Command::Context { command } => context::run(&settings, command),
            Command::Audit { command } => audit::run(&settings, command).await,
            Command::Backup { to } => backup::backup(&settings, &to).await,
            Command::Restore { from } => backup::restore(&settings, &from).await,
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sleuth: {error:#}");
            ExitCode::FAILURE
        }
    }
}
