//! `sleuth context check [PATH]`: loads a context file or directory exactly as `serve`
//! would (feeds included) and says what it holds, or why it does not load.

use std::path::PathBuf;

use clap::Subcommand;
use sleuth_jobs::Settings;

#[derive(Debug, Subcommand)]
pub(crate) enum ContextCommand {
    /// Validate a context file or directory and summarise it (exit status 1 if invalid).
    Check {
        /// The file or directory (default: the configured engine.context_file).
        path: Option<PathBuf>,
    },
}

pub(crate) fn run(settings: &Settings, command: ContextCommand) -> anyhow::Result<()> {
    let ContextCommand::Check { path } = command;
    let path = path
        .or_else(|| settings.engine.context_file.clone())
        .ok_or_else(|| anyhow::anyhow!("give a context path, or set engine.context_file"))?;
    let loaded = sleuth_jobs::context_source::load(Some(&path), None, chrono::Utc::now())
        .map_err(|error| anyhow::anyhow!("{} does not load: {error}", path.display()))?;
    let document = &loaded.document;
    println!("{} loads. It holds:", path.display());
    for (count, what) in [
        (loaded.files.len(), "files read (feeds included)"),
        (loaded.intel_count, "threat-intel indicators"),
        (document.identities.len(), "identities"),
        (document.assets.len(), "assets"),
        (document.cloud_resources.len(), "cloud resources"),
        (document.scanners.len(), "authorised scanners"),
        (document.service_accounts.len(), "service accounts"),
        (
            document.known_good.admin_tools.len(),
            "sanctioned admin tools",
        ),
        (document.honeytokens.len(), "honeytokens"),
        (document.policies.len(), "policies"),
        (document.network.internal.len(), "internal ranges"),
    ] {
        println!("  {count:>7}  {what}");
    }
    for warning in &loaded.warnings {
        println!("warning: {warning}");
    }
    Ok(())
}
