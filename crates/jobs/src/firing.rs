//! Firing triggers: when an event happens (an investigation finished, a person runs a
//! script, a key or user is created), the firing is recorded as a system event for each
//! trigger, and every enabled, unarchived script tied to a matching trigger runs once in
//! the sandbox. Each firing is recorded first (a trigger run, and a
//! script run in `running`), then the runs are spawned, so that they never delay or fail
//! what fired them; the sandbox's slots bound how many run at once. A run that a restart
//! interrupts is found by `fail_interrupted_runs` and ends as `error`.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::{Map, Value, json};
use sleuth_domain::{Canceled, Entity, Outcome, Priority, ScriptRunStatus};
use sleuth_sandbox::{ScriptJob, ScriptOutcome};
use sleuth_store::{
    ApiKey, Finish, InvestigationRecord, NewScriptRun, NewSystemEvent, NewTriggerRun,
    RunnableScript, ScriptRunEnd, Store, StoreResult, User,
};
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::dto::investigation::{AlertDto, EntityDto, InvestigationListItemDto};
use crate::dto::user::UserDto;
use crate::runtime::Runtime;
use crate::trigger_catalog::{self, trigger_uuid};

/// What a firing gives each script it runs.
#[derive(Debug, Clone, Default)]
pub struct Firing {
    /// Bound as the global `trigger_args`, and recorded on the trigger run.
    pub trigger_args: Map<String, Value>,
    /// The trigger's other globals (`investigation`, `alert`, `entity`, ...).
    pub variables: Map<String, Value>,
    /// The investigation the runs concern: they show on its list item.
    pub investigation_id: Option<i64>,
    /// What the runs act on, as `type:value`.
    pub entity: Option<String>,
}

/// A script run that was recorded and spawned.
#[derive(Debug)]
pub struct StartedRun {
    pub script_run_id: i64,
    /// Ends when the run is recorded as ended. Dropping it does not stop the run.
    pub finished: JoinHandle<()>,
}

/// Why the sandbox would not take a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxRefusal {
    /// This process has no sandbox (it was not probed, e.g. a test without one).
    Absent,
    /// The start-up probe found the host cannot isolate scripts in the configured mode.
    NotReady(String),
    /// Every slot stayed busy for the whole queue timeout.
    QueueTimeout(Duration),
}

impl std::fmt::Display for SandboxRefusal {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SandboxRefusal::Absent => {
                formatter.write_str("this Sleuth process runs no scripts (no sandbox was set up)")
            }
            SandboxRefusal::NotReady(reason) => {
                write!(formatter, "the script sandbox is not ready: {reason}")
            }
            SandboxRefusal::QueueTimeout(waited) => write!(
                formatter,
                "no sandbox slot became free within {} s; raise sandbox.slots or sandbox.queue_timeout_seconds",
                waited.as_secs()
            ),
        }
    }
}

/// This process, as the runner of the script runs it starts: `host:pid:start:random`.
pub fn runner_id() -> &'static str {
    static RUNNER: OnceLock<String> = OnceLock::new();
    RUNNER.get_or_init(crate::process_name::worker_name)
}

/// Copies the built-in trigger catalog into the store, once per process (and store).
pub async fn ensure_trigger_catalog(runtime: &Runtime, store: &Arc<dyn Store>) -> StoreResult<()> {
    runtime
        .trigger_catalog_synced()
        .get_or_try_init(|| async {
            store
                .sync_trigger_catalog(&trigger_catalog::catalog(), chrono::Utc::now())
                .await
        })
        .await
        .map(|_| ())
}

/// Start-up work of a process that serves or runs scripts: syncs the trigger catalog, ends
/// the runs a restart interrupted, and from then on sweeps every minute for runs whose
/// process died elsewhere (their deadline passed).
pub async fn prepare(runtime: &Runtime, store: &Arc<dyn Store>) {
    if let Err(error) = ensure_trigger_catalog(runtime, store).await {
        tracing::error!(%error, "could not sync the trigger catalog; response actions will retry");
    }
    sweep_interrupted_runs(store).await;
    let store = store.clone();
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(Duration::from_secs(60));
        interval.tick().await;
        loop {
            interval.tick().await;
            sweep_interrupted_runs(&store).await;
        }
    });
}

async fn sweep_interrupted_runs(store: &Arc<dyn Store>) {
    match fail_interrupted_runs(store).await {
        Ok(0) => {}
        Ok(count) => tracing::warn!(
            count,
            "script runs interrupted by a restart or crash were marked error"
        ),
        Err(error) => tracing::warn!(%error, "could not look for interrupted script runs"),
    }
}

/// Ends as `error` every `running` run whose process is gone: on this host, a process that
/// no longer exists (or an earlier life of this one, same pid); anywhere, a run past its
/// deadline, which a live process never lets happen. Returns how many.
pub async fn fail_interrupted_runs(store: &Arc<dyn Store>) -> StoreResult<u64> {
    let runners = store.running_script_runners().await?;
    let my_host = runner_host(runner_id());
    let dead: Vec<String> = runners
        .into_iter()
        .filter(|runner| runner_is_gone(runner, my_host))
        .collect();
    store
        .fail_interrupted_script_runs(
            &dead,
            "interrupted: the Sleuth process running this script stopped (restart or crash) \
             before it finished",
            chrono::Utc::now(),
        )
        .await
}

fn runner_host(runner: &str) -> &str {
    runner.split(':').next().unwrap_or("")
}

/// Whether the process that ran a script is gone, by what its runner id names: on this
/// host, a process that no longer runs (a zombie, killed but not yet reaped, counts as
/// gone), or whose pid now belongs to a later process (the start time differs; ids of
/// older versions, without a start time, compare by pid alone). A runner on another host
/// is never judged here: its runs end by their deadline.
fn runner_is_gone(runner: &str, my_host: &str) -> bool {
    if runner == runner_id() {
        return false;
    }
    let parts: Vec<&str> = runner.split(':').collect();
    let (Some(host), Some(pid)) = (parts.first(), parts.get(1)) else {
        return false;
    };
    if *host != my_host {
        return false;
    }
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    let started_at = match parts.as_slice() {
        [_, _, start, _] => start.parse::<u64>().ok(),
        _ => None,
    };
    pid == std::process::id() || !sleuth_sandbox::process::is_alive(pid, started_at)
}

/// How long one run may take, waiting for a slot included; its deadline adds a margin.
fn run_budget(runtime: &Runtime) -> (Duration, Duration) {
    let sandbox = &runtime.settings().sandbox;
    let queue = Duration::from_secs(sandbox.queue_timeout_seconds);
    let budget = queue + sandbox.wall_clock() + Duration::from_secs(10);
    (queue, budget)
}

/// Runs one script in this process's sandbox, waiting for a free slot at most the queue
/// timeout.
pub async fn run_in_sandbox(
    runtime: &Runtime,
    job: ScriptJob,
) -> Result<ScriptOutcome, SandboxRefusal> {
    let sandbox = runtime.sandbox_if_set().ok_or(SandboxRefusal::Absent)?;
    sandbox
        .ready()
        .map_err(|not_ready| SandboxRefusal::NotReady(not_ready.0))?;
    let (queue, budget) = run_budget(runtime);
    // The sandbox enforces the wall clock once a slot is free; this bounds the wait for
    // one. If it fires, the run (if it started) still ends within its own limits.
    tokio::time::timeout(budget, sandbox.run(job))
        .await
        .map_err(|_| SandboxRefusal::QueueTimeout(queue))
}

/// The root clients reach Sleuth at, for links inside script globals (`inv_url`).
pub(crate) fn base_url(runtime: &Runtime) -> String {
    let server = &runtime.settings().server;
    match &server.public_url {
        Some(public_url) => public_url.trim_end_matches('/').to_string(),
        None => format!("http://{}", server.listen),
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The `investigation` (list-item shape) and `alert` (full shape) globals.
pub fn investigation_variables(
    runtime: &Runtime,
    record: &InvestigationRecord,
) -> Map<String, Value> {
    let mut variables = Map::new();
    variables.insert(
        "investigation".into(),
        to_value(&InvestigationListItemDto::new(record, &base_url(runtime))),
    );
    variables.insert("alert".into(), to_value(&AlertDto::from(&record.alert)));
    variables
}

fn entities(entities: &[Entity]) -> Value {
    let entities: Vec<EntityDto> = entities.iter().map(EntityDto::from).collect();
    to_value(&entities)
}

/// The triggers a finished investigation matches.
pub fn investigation_triggers(finish: &Finish) -> Vec<&'static str> {
    use trigger_catalog::*;
    match finish {
        Finish::Completed { result, .. } => {
            let mut triggers = vec![INVESTIGATION_COMPLETED];
            match result.outcome {
                Outcome::BreachedConfirmed => triggers.push(INVESTIGATION_COMPLETED_CONFIRMED),
                Outcome::BreachedSuspicious => triggers.push(INVESTIGATION_COMPLETED_SUSPICIOUS),
                Outcome::FalseAlert => triggers.push(INVESTIGATION_COMPLETED_FALSE_ALERT),
                Outcome::Incomplete => triggers.push(INVESTIGATION_COMPLETED_INCOMPLETE),
                Outcome::Ignored => {}
            }
            if result.priority == Priority::Urgent {
                triggers.push(INVESTIGATION_PRIORITY_URGENT);
            }
            triggers
        }
        Finish::Stopped { canceled, .. } => vec![
            INVESTIGATION_STOPPED,
            match canceled {
                None => INVESTIGATION_STOPPED_ERROR,
                Some(Canceled::Threshold) => INVESTIGATION_STOPPED_THRESHOLD,
                Some(Canceled::Manual) => INVESTIGATION_STOPPED_MANUAL_CANCEL,
            },
        ],
    }
}

/// How an investigation ended, as its trigger arguments tell it.
enum Ending<'a> {
    Success {
        outcome: Option<Outcome>,
        priority: Option<Priority>,
    },
    Stopped {
        canceled: Option<Canceled>,
        error_msg: Option<&'a str>,
    },
}

/// The firing of an ended investigation, before any script is chosen: `trigger_args`
/// (its id, how it ended, its alert's entities) and what the runs act on.
fn investigation_firing(
    investigation_id: i64,
    ending: Ending<'_>,
    alert_entities: &[Entity],
) -> Firing {
    let mut trigger_args = Map::new();
    trigger_args.insert("investigation_id".into(), json!(investigation_id));
    match ending {
        Ending::Success { outcome, priority } => {
            trigger_args.insert("outcome".into(), to_value(&outcome));
            trigger_args.insert("priority".into(), to_value(&priority));
        }
        Ending::Stopped {
            canceled,
            error_msg,
        } => {
            trigger_args.insert("canceled".into(), to_value(&canceled));
            trigger_args.insert("error_msg".into(), to_value(&error_msg));
        }
    }
    trigger_args.insert("entities".into(), entities(alert_entities));
    Firing {
        trigger_args,
        variables: Map::new(),
        investigation_id: Some(investigation_id),
        entity: Some(format!("investigation:{investigation_id}")),
    }
}

/// The system events of a job's end, built from what its worker holds (no read), to be
/// stored with the result in its transaction (`JobEnd::system_events`): one write turn
/// per finished investigation, not two. `alert_entities` is empty when the alert was not
/// read (a job given up after too many attempts).
pub fn investigation_events(
    investigation_id: i64,
    finish: &Finish,
    alert_entities: &[Entity],
) -> Vec<NewSystemEvent> {
    let ending = match finish {
        Finish::Completed { result, .. } => Ending::Success {
            outcome: Some(result.outcome),
            priority: Some(result.priority),
        },
        Finish::Stopped {
            canceled,
            error_msg,
        } => Ending::Stopped {
            canceled: *canceled,
            error_msg: Some(error_msg),
        },
    };
    let firing = investigation_firing(investigation_id, ending, alert_entities);
    system_events(&investigation_triggers(finish), &firing)
}

/// Runs the scripts tied to the triggers of an investigation that just finished and whose
/// system events were stored with its result, in the background: never delays or fails
/// the investigation. Most investigations have no script: then this is one read.
pub fn investigation_finished(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    investigation_id: i64,
    triggers: Vec<&'static str>,
) {
    let (runtime, store) = (runtime.clone(), store.clone());
    tokio::spawn(async move {
        if let Err(error) =
            run_investigation_scripts(&runtime, &store, investigation_id, &triggers, None).await
        {
            tracing::error!(investigation_id, %error, "could not fire the response actions of an investigation");
        }
    });
}

/// Fires `triggers` for a stored investigation: records their system events, then runs
/// the scripts tied to them; returns the runs it started.
pub async fn fire_for_investigation(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    investigation_id: i64,
    triggers: Vec<&'static str>,
) -> StoreResult<Vec<StartedRun>> {
    let record = store.get_investigation(investigation_id).await?;
    let firing = stored_investigation_firing(&record);
    record_system_events(store, &triggers, &firing).await;
    run_investigation_scripts(runtime, store, investigation_id, &triggers, Some(record)).await
}

/// The firing of a stored investigation, as its record tells how it ended.
fn stored_investigation_firing(record: &InvestigationRecord) -> Firing {
    let ending = if record.status == sleuth_domain::InvestigationStatus::Success {
        Ending::Success {
            outcome: record.outcome,
            priority: record.priority,
        }
    } else {
        Ending::Stopped {
            canceled: record.canceled,
            error_msg: record.error_msg.as_deref(),
        }
    };
    investigation_firing(record.id, ending, &record.alert.parsed.entities)
}

/// Starts the scripts tied to `triggers` for the investigation (`record` when the caller
/// already read it).
async fn run_investigation_scripts(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    investigation_id: i64,
    triggers: &[&str],
    record: Option<InvestigationRecord>,
) -> StoreResult<Vec<StartedRun>> {
    ensure_trigger_catalog(runtime, store).await?;
    let uuids: Vec<Uuid> = triggers
        .iter()
        .map(|fn_name| trigger_uuid(fn_name))
        .collect();
    let scripts = store.scripts_to_run(&uuids).await?;
    if scripts.is_empty() {
        return Ok(Vec::new());
    }
    // Most investigations have no script to run: their record is read, and their globals
    // built, only for those that do.
    let record = match record {
        Some(record) => record,
        None => store.get_investigation(investigation_id).await?,
    };
    let mut firing = stored_investigation_firing(&record);
    firing.variables = investigation_variables(runtime, &record);
    start_runs(runtime, store, scripts, &firing).await
}

/// Fires `triggers` (catalog names) for every script tied to them.
pub async fn fire(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    triggers: &[&str],
    firing: &Firing,
) -> StoreResult<Vec<StartedRun>> {
    record_system_events(store, triggers, firing).await;
    ensure_trigger_catalog(runtime, store).await?;
    let uuids: Vec<Uuid> = triggers
        .iter()
        .map(|fn_name| trigger_uuid(fn_name))
        .collect();
    let scripts = store.scripts_to_run(&uuids).await?;
    start_runs(runtime, store, scripts, firing).await
}

/// Records one system event per trigger of a firing, whether or not any script is tied to
/// them. Every firing goes through here: `fire`, `fire_for_investigation`, and the manual
/// run of a response action. A failure to record is logged and does not stop the scripts:
/// the event log must never be why a response did not run.
pub async fn record_system_events(store: &Arc<dyn Store>, triggers: &[&str], firing: &Firing) {
    let events = system_events(triggers, firing);
    if let Err(error) = store
        .record_system_events(&events, chrono::Utc::now())
        .await
    {
        tracing::error!(%error, ?triggers, "could not record the system events of a firing");
    }
}

/// One system event per trigger of a firing.
fn system_events(triggers: &[&str], firing: &Firing) -> Vec<NewSystemEvent> {
    triggers
        .iter()
        .map(|trigger_name| NewSystemEvent {
            trigger_name: (*trigger_name).to_string(),
            trigger_args: firing.trigger_args.clone(),
            investigation_id: firing.investigation_id,
            entity: firing.entity.clone(),
        })
        .collect()
}

/// The firing of `API_KEY_CREATED` or `API_KEY_REVOKED`, for the CLI and the key
/// endpoints: `fire(runtime, store, &[trigger_catalog::API_KEY_CREATED], &api_key_firing(..))`.
pub fn api_key_firing(key: &ApiKey, user: &User) -> Firing {
    let trigger_args = json!({
        "api_key_id": key.id,
        "name": key.name,
        "prefix": key.prefix,
        "user_id": user.id,
        "user_email": user.email,
        "role": user.role.as_str(),
    });
    let variables = json!({
        "api_key": {
            "id": key.id,
            "name": key.name,
            "prefix": key.prefix,
            "created_at": key.created_at,
            "revoked_at": key.revoked_at,
        },
        "user": to_value(&UserDto::from(user)),
    });
    Firing {
        trigger_args: object(trigger_args),
        variables: object(variables),
        investigation_id: None,
        entity: Some(format!("api_key:{}", key.id)),
    }
}

/// The firing of `USER_CREATED`.
pub fn user_firing(user: &User) -> Firing {
    let trigger_args = json!({"user_id": user.id, "email": user.email, "role": user.role.as_str()});
    Firing {
        trigger_args: object(trigger_args),
        variables: object(json!({"user": to_value(&UserDto::from(user))})),
        investigation_id: None,
        entity: Some(format!("user:{}", user.email)),
    }
}

/// The firing of an event on an investigation (a note added, feedback applied): the
/// event's arguments, and the `investigation` and `alert` globals of the investigation as
/// it is now. The runs show on the investigation's list item.
pub fn investigation_event_firing(
    runtime: &Runtime,
    record: &InvestigationRecord,
    trigger_args: Value,
) -> Firing {
    Firing {
        trigger_args: object(trigger_args),
        variables: investigation_variables(runtime, record),
        investigation_id: Some(record.id),
        entity: Some(format!("investigation:{}", record.id)),
    }
}

/// Fires `triggers` in the background, so that the request whose event it is is never
/// delayed or failed by its scripts; a failure to fire is logged.
pub fn fire_detached(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    triggers: Vec<&'static str>,
    firing: Firing,
) {
    let (runtime, store) = (runtime.clone(), store.clone());
    tokio::spawn(async move {
        if let Err(error) = fire(&runtime, &store, &triggers, &firing).await {
            tracing::error!(?triggers, %error, "could not fire response actions");
        }
    });
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// How a run ends that the runner never started.
fn failed_run(syserr: String) -> ScriptRunEnd {
    ScriptRunEnd {
        status: ScriptRunStatus::Error,
        stdout: String::new(),
        stderr: String::new(),
        syserr: Some(syserr),
        isolation: String::new(),
        duration_ms: 0,
    }
}

/// Runs a job in the sandbox; what the script printed is stored with its secrets' values
/// masked.
async fn run_with_secrets(
    runtime: &Runtime,
    job: ScriptJob,
    secrets: &crate::script_secrets::RunSecrets,
    script_id: i64,
    script_run_id: i64,
) -> ScriptRunEnd {
    match run_in_sandbox(runtime, job).await {
        Ok(outcome) => {
            if !outcome.denied_connections.is_empty() {
                // The run's syserr keeps them too; the log is where an operator watching
                // for escape attempts looks.
                tracing::warn!(
                    script_id,
                    script_run_id,
                    denied = ?outcome.denied_connections,
                    "the sandbox refused connections of a script run"
                );
            }
            ScriptRunEnd {
                status: outcome.status,
                stdout: secrets.mask(outcome.stdout),
                stderr: secrets.mask(outcome.stderr),
                syserr: outcome.syserr.map(|syserr| secrets.mask(syserr)),
                isolation: outcome.isolation,
                duration_ms: i64::try_from(outcome.duration.as_millis()).unwrap_or(i64::MAX),
            }
        }
        Err(refusal) => failed_run(refusal.to_string()),
    }
}

/// Records one trigger run per trigger that has scripts (one batch), then one script run
/// per script, each spawned. Each run gets the secrets its script names and no others; a
/// run whose secrets cannot be had (not stored, or no key to open them) ends in error
/// saying which, without running.
pub async fn start_runs(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    scripts: Vec<RunnableScript>,
    firing: &Firing,
) -> StoreResult<Vec<StartedRun>> {
    if scripts.is_empty() {
        return Ok(Vec::new());
    }
    let mut fired: Vec<Uuid> = Vec::new();
    for runnable in &scripts {
        let uuid = runnable.script.trigger_def.entry.uuid;
        if !fired.contains(&uuid) {
            fired.push(uuid);
        }
    }
    let new_trigger_runs: Vec<NewTriggerRun> = fired
        .iter()
        .map(|uuid| NewTriggerRun {
            trigger_uuid: *uuid,
            trigger_args: firing.trigger_args.clone(),
            investigation_id: firing.investigation_id,
            entity: firing.entity.clone(),
        })
        .collect();
    let now = chrono::Utc::now();
    let trigger_runs = store.record_trigger_runs(&new_trigger_runs, now).await?;
    // One read for every secret any of these scripts names; each run gets only its own.
    let stored_secrets = crate::script_secrets::stored(
        store,
        scripts
            .iter()
            .flat_map(|runnable| &runnable.script.secret_names),
    )
    .await?;
    let (_, budget) = run_budget(runtime);
    let deadline = now
        + chrono::Duration::from_std(budget + Duration::from_secs(30))
            .unwrap_or(chrono::Duration::hours(1));
    let mut started = Vec::with_capacity(scripts.len());
    for runnable in scripts {
        let uuid = runnable.script.trigger_def.entry.uuid;
        let Some(trigger_run) = trigger_runs
            .iter()
            .find(|run| run.trigger_def.entry.uuid == uuid)
        else {
            continue;
        };
        let script_run_id = store
            .start_script_run(
                &NewScriptRun {
                    script_id: runnable.script.id,
                    script_version_id: runnable.version.id,
                    trigger_run_id: trigger_run.id,
                    runner: runner_id().to_string(),
                    deadline_at: deadline,
                },
                chrono::Utc::now(),
            )
            .await?;
        let secrets = crate::script_secrets::open_named(
            runtime.keyring(),
            &stored_secrets,
            &runnable.script.secret_names,
        );
        let job = ScriptJob {
            code: runnable.version.code,
            trigger_args: Value::Object(firing.trigger_args.clone()),
            variables: firing.variables.clone(),
            secrets: secrets
                .as_ref()
                .map(crate::script_secrets::RunSecrets::values)
                .unwrap_or_default(),
            allow_network: runnable.script.allow_network,
        };
        let (runtime, store) = (runtime.clone(), store.clone());
        let script_id = runnable.script.id;
        let finished = tokio::spawn(async move {
            let end = match secrets {
                Ok(secrets) => {
                    run_with_secrets(&runtime, job, &secrets, script_id, script_run_id).await
                }
                Err(error) => failed_run(format!("the script did not run: {error}")),
            };
            let status = end.status;
            match store
                .finish_script_run(script_run_id, &end, chrono::Utc::now())
                .await
            {
                Ok(true) => tracing::info!(
                    script_id,
                    script_run_id,
                    status = status.as_str(),
                    "script run ended"
                ),
                Ok(false) => tracing::warn!(
                    script_id,
                    script_run_id,
                    "a script run ended after it was marked interrupted; its result is dropped"
                ),
                Err(error) => {
                    tracing::error!(script_id, script_run_id, %error, "could not record how a script run ended")
                }
            }
        });
        started.push(StartedRun {
            script_run_id,
            finished,
        });
    }
    Ok(started)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trigger_catalog::*;

    fn completed(outcome: Outcome, priority: Priority) -> Finish {
        Finish::Completed {
            result: Box::new(sleuth_test_support::fixtures::result(outcome, priority, "")),
            ignored_for: None,
        }
    }

    #[test]
    fn a_finished_investigation_matches_its_outcome_priority_and_stop_reason() {
        assert_eq!(
            investigation_triggers(&completed(Outcome::BreachedConfirmed, Priority::Urgent)),
            [
                INVESTIGATION_COMPLETED,
                INVESTIGATION_COMPLETED_CONFIRMED,
                INVESTIGATION_PRIORITY_URGENT
            ]
        );
        assert_eq!(
            investigation_triggers(&completed(Outcome::Ignored, Priority::Informational)),
            [INVESTIGATION_COMPLETED]
        );
        let stopped = |canceled| Finish::Stopped {
            canceled,
            error_msg: String::new(),
        };
        assert_eq!(
            investigation_triggers(&stopped(None)),
            [INVESTIGATION_STOPPED, INVESTIGATION_STOPPED_ERROR]
        );
        assert_eq!(
            investigation_triggers(&stopped(Some(Canceled::Threshold))),
            [INVESTIGATION_STOPPED, INVESTIGATION_STOPPED_THRESHOLD]
        );
    }

    #[test]
    fn runners_on_this_host_are_gone_when_their_process_is() {
        let host = runner_host(runner_id());
        assert!(!runner_is_gone(runner_id(), host), "this process is alive");
        let earlier_life = format!("{host}:{}:00000000", std::process::id());
        assert!(
            runner_is_gone(&earlier_life, host),
            "same pid, another life: restarted"
        );
        let no_such_process = format!("{host}:{}:00000000", u32::MAX - 1);
        assert!(runner_is_gone(&no_such_process, host));
        let parent = format!("{host}:1:00000000");
        assert!(!runner_is_gone(&parent, host), "pid 1 is alive");
        // Another process that reuses a live pid: its start time gives it away.
        let start = sleuth_sandbox::process::own_start_time().expect("a start time");
        let mine = |start: u64| format!("{host}:{}:{start}:00000000", std::process::id());
        let sibling_runner = |start: u64| {
            // This process's pid is its own runner's, always "alive"; use the parent's pid.
            format!(
                "{host}:{}:{start}:00000000",
                std::os::unix::process::parent_id()
            )
        };
        assert!(
            runner_is_gone(&mine(start), host),
            "same pid is an earlier life"
        );
        let parent_start =
            sleuth_sandbox::process::start_time_of(std::os::unix::process::parent_id())
                .expect("the parent's start time");
        assert!(!runner_is_gone(&sibling_runner(parent_start), host));
        assert!(
            runner_is_gone(&sibling_runner(parent_start + 1), host),
            "a later process with the same pid"
        );
        assert!(
            !runner_is_gone("elsewhere:1234:x", host),
            "other hosts are judged by deadline"
        );
        assert!(!runner_is_gone("garbage", host));
    }
}
