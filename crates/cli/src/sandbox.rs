//! The script sandbox of a `sleuth` process: probed with this very binary as its launcher
//! (`sleuth sandbox-exec`), logged, and handed to the runtime; and firing triggers from
//! short-lived commands, which wait for their runs before the process exits.

use std::ffi::OsString;
use std::sync::Arc;

use anyhow::Context as _;
use sleuth_jobs::firing::{self, Firing};
use sleuth_jobs::trigger_catalog::trigger_uuid;
use sleuth_jobs::{Runtime, Settings};
use sleuth_sandbox::Sandbox;
use sleuth_store::Store;

/// The subcommand `main` dispatches to the launcher before anything else runs.
pub(crate) const LAUNCHER_SUBCOMMAND: &str = "sandbox-exec";

/// Probes the host once (tens of milliseconds) and logs what it found.
pub(crate) async fn probe(settings: &Settings) -> anyhow::Result<Sandbox> {
    let launcher = std::env::current_exe()
        .context("cannot find this program's own path to re-execute it as the sandbox launcher")?;
    let config = settings
        .sandbox
        .sandbox_config(launcher, vec![OsString::from(LAUNCHER_SUBCOMMAND)]);
    let sandbox = tokio::task::spawn_blocking(move || Sandbox::probe(config))
        .await
        .context("the sandbox probe stopped unexpectedly")?;
    let report = sandbox.report();
    if report.not_ready.is_some() {
        tracing::warn!(%report, "response scripts cannot run on this host in this sandbox mode; script endpoints answer 503");
    } else {
        tracing::info!(%report, "script sandbox ready");
    }
    Ok(sandbox)
}

/// Fires `triggers` from a command that exits when done, and waits for the runs to end so
/// that they are not cut short. Probes a sandbox only when some script would run.
pub(crate) async fn fire_and_wait(
    settings: &Settings,
    store: &Arc<dyn Store>,
    triggers: &[&str],
    firing: &Firing,
) -> anyhow::Result<()> {
    let state = Runtime::new(settings.clone(), sleuth_engine::Context::empty());
    state.set_store(store.clone());
    firing::ensure_trigger_catalog(&state, store).await?;
    let uuids: Vec<_> = triggers
        .iter()
        .map(|fn_name| trigger_uuid(fn_name))
        .collect();
    if store.scripts_to_run(&uuids).await?.is_empty() {
        return Ok(());
    }
    state.set_sandbox(probe(settings).await?);
    let started = firing::fire(&state, store, triggers, firing).await?;
    let count = started.len();
    for run in started {
        let _ = run.finished.await;
    }
    eprintln!(
        "ran {count} response action(s) on {}; see GET /app/api/v1/response-actions/{{id}}/runs",
        triggers.join(", ")
    );
    Ok(())
}
