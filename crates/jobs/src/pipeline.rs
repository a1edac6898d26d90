//! One investigation, top to bottom: the guards (attempts, burst threshold, coalescing),
//! then history and the custom strategies in force, then the engine, then the stored
//! result (which counts what the strategies did). Everything a worker does with a
//! claimed job is here; the worker pool only decides when.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use sleuth_domain::{
    Canceled, Evidence, Facts, Finding, FindingOutcome, History, InvestigationResult, Outcome,
    Priority, Strategy, StrategyEffects, Timestamp,
};
use sleuth_engine::EngineInput;
use sleuth_store::{
    AlertRecord, ClaimedJob, Finish, Finished, GuardWindows, HistoryQuery, InvestigationRecord,
    JobEnd, JobInput, NextClaim, Store, StoreResult,
};

use crate::runtime::Runtime;

/// How many related alerts and prior verdicts the engine is shown at most.
const HISTORY_LIMIT: usize = 50;

/// Runs one claimed job to its end with these strategies in force (the worker pool reads
/// them once per claim: `strategies_in_force`). The result, the system events of the
/// triggers it fires and, when asked, the claim of the `next` job are one transaction;
/// the scripts tied to those triggers start afterwards, in the background. `stored` is
/// false when the lease was lost meanwhile (canceled, or taken over after a stall).
pub async fn run_job(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    job: &ClaimedJob,
    strategies: &[Strategy],
    next: Option<NextClaim>,
) -> StoreResult<Finished> {
    let (finish, alert) = decide(runtime, store, job, strategies).await?;
    let (alert, tenant_union) = match alert {
        Some(record) => (Some(record.parsed), Some(record.tenant_union.display_name)),
        None => (None, None),
    };
    let alert_entities = alert.as_ref().map_or(&[][..], |alert| &alert.entities[..]);
    let system_events =
        crate::firing::investigation_events(job.investigation_id, &finish, alert_entities);
    // Read before the end is handed over whole: cloning the result for them afterwards
    // was 2% of a worker's CPU.
    let triggers = crate::firing::investigation_triggers(&finish);
    let counter = match &finish {
        Finish::Completed { .. } => &runtime.metrics().investigations_completed,
        Finish::Stopped { .. } => &runtime.metrics().investigations_failed,
    };
    let at = chrono::Utc::now();
    let alert = alert.map(Arc::new);
    // What destinations are told of the conclusion, from what is in hand, for this
    // process's deliverer: kept once the conclusion is stored (`notify_conclusions`).
    let to_tell = match (&finish, &alert, &tenant_union) {
        (Finish::Completed { result, .. }, Some(alert), Some(tenant_union))
            if runtime.recent_conclusions().wanted() =>
        {
            Some(crate::notify_conclusions::to_tell(
                job.investigation_id,
                alert,
                tenant_union,
                result,
            ))
        }
        _ => None,
    };
    let end = JobEnd {
        system_events,
        finish,
        at,
        next,
        alert,
    };
    let finished = store.finish_job_and_claim(job, end).await?;
    if finished.stored {
        if let Some(to_tell) = to_tell {
            runtime.recent_conclusions().remember(at, to_tell);
        }
        crate::firing::investigation_finished(runtime, store, job.investigation_id, triggers);
        counter.inc();
    }
    Ok(finished)
}

async fn decide(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    job: &ClaimedJob,
    strategies: &[Strategy],
) -> StoreResult<(Finish, Option<AlertRecord>)> {
    let settings = runtime.settings();
    let max_attempts = i64::from(settings.workers.max_attempts.max(1));
    if job.attempt > max_attempts {
        // The alert is not read: reading or investigating it may be what stopped every
        // worker.
        return Ok((
            Finish::Stopped {
                canceled: None,
                error_msg: format!(
                    "gave up after {} attempts: each worker that took this investigation \
                     stopped before finishing it (crash or restart); see the worker logs",
                    job.attempt - 1
                ),
            },
            None,
        ));
    }
    let guards = &settings.guards;
    let windows = GuardWindows {
        burst_window: chrono::Duration::seconds(
            i64::try_from(guards.burst_window_seconds).unwrap_or(i64::MAX / 1_000_000),
        ),
        // One past the threshold is enough to know it was crossed.
        burst_count_limit: if guards.burst_threshold > 0 {
            guards.burst_threshold.saturating_add(1)
        } else {
            0
        },
        coalesce_window: chrono::Duration::seconds(
            i64::try_from(guards.coalesce_window_seconds).unwrap_or(i64::MAX / 1_000_000),
        ),
    };
    let input = store.load_job(job, windows).await?;
    if guards.burst_threshold > 0 && input.burst_count > guards.burst_threshold {
        let finish = burst_stop(&input, guards.burst_threshold, guards.burst_window_seconds);
        return Ok((finish, Some(input.investigation.alert)));
    }
    if guards.coalesce_window_seconds > 0
        && let Some(first_investigation_id) = input.coalesce_first
    {
        let finish = Finish::Completed {
            result: Box::new(ignored_result(&input, first_investigation_id)),
            ignored_for: Some(first_investigation_id),
        };
        return Ok((finish, Some(input.investigation.alert)));
    }
    let finish = investigate(runtime, store, &input, strategies).await?;
    Ok((finish, Some(input.investigation.alert)))
}

async fn investigate(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    input: &JobInput,
    strategies: &[Strategy],
) -> StoreResult<Finish> {
    let record = &input.investigation;
    let gathered = gather(runtime, store, record).await?;
    Ok(
        match run_engine(runtime, record, &gathered, strategies, chrono::Utc::now()) {
            Some(result) => Finish::Completed {
                result: Box::new(result),
                ignored_for: None,
            },
            None => Finish::Stopped {
                canceled: None,
                error_msg: "the investigation engine failed on this alert; the failure is logged \
                            for the operator"
                    .into(),
            },
        },
    )
}

/// The enabled, unarchived latest versions of the custom strategies. The store's strategy
/// generation is read for every claim of jobs, so a change made through any process
/// applies to the next jobs claimed everywhere; the strategies themselves are read again
/// only when it moved (reading them costs a few milliseconds with twenty strategies, the
/// generation a fraction of one; docs/strategies.md).
pub async fn strategies_in_force(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
) -> StoreResult<Arc<Vec<Strategy>>> {
    crate::builtin_strategies::ensure(runtime, store).await?;
    let generation = store.strategy_generation().await?;
    if let Some(kept) = runtime.strategies_at(generation) {
        return Ok(kept);
    }
    let active = store.active_strategies().await?;
    let strategies = Arc::new(active.strategies);
    runtime.keep_strategies(active.generation, strategies.clone());
    Ok(strategies)
}

/// What the engine reads about a stored investigation's alert besides the alert itself:
/// its history, what the data sources said, and the raw content. Gathered once, it can be
/// run with several sets of strategies (a backtest runs it twice).
pub struct Gathered {
    history: History,
    facts: Facts,
    raw: Map<String, Value>,
}

/// The history, the data sources' answers and the raw content of the investigation's
/// alert, as a worker reads them. The sources are asked while history is read.
pub async fn gather(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    record: &InvestigationRecord,
) -> StoreResult<Gathered> {
    let alert = &record.alert;
    let window_hours =
        i64::try_from(runtime.settings().engine.correlation_window_hours).unwrap_or(72);
    let facts = async {
        match runtime.data_sources() {
            Some(sources) => {
                sources
                    .gather(
                        &runtime.settings().data_sources,
                        runtime.metrics(),
                        store,
                        &alert.parsed,
                        alert.tenant_union.id,
                    )
                    .await
            }
            None => Facts::default(),
        }
    };
    let query = HistoryQuery {
        alert_id: alert.id,
        investigation_id: record.id,
        entities: alert.parsed.entities.clone(),
        alert_type: alert.parsed.alert_type.clone(),
        direct_source_label: alert.parsed.direct_source_label.clone(),
        since: alert.parsed.create_time - chrono::Duration::hours(window_hours),
        limit: HISTORY_LIMIT,
        tenant_union_id: alert.tenant_union.id,
        tenant_id: alert.parsed.tenant_id.clone(),
    };
    let (history, facts) = tokio::join!(store.history(&query), facts);
    let history = history?;
    let raw: Map<String, Value> =
        serde_json::from_str(&alert.raw_alert_content).unwrap_or_default();
    Ok(Gathered {
        history,
        facts,
        raw,
    })
}

/// Runs the engine on the investigation's alert with the operator's context in force and
/// these strategies. `None` when the engine panicked (logged): the engine is pure and
/// should never panic; if a hostile alert finds a way, that one investigation ends in
/// error and the worker lives on.
pub fn run_engine(
    runtime: &Runtime,
    record: &InvestigationRecord,
    gathered: &Gathered,
    strategies: &[Strategy],
    now: Timestamp,
) -> Option<InvestigationResult> {
    let context = runtime.context();
    let engine_input = EngineInput {
        alert: &record.alert.parsed,
        raw: &gathered.raw,
        history: &gathered.history,
        facts: &gathered.facts,
        strategies,
        now,
    };
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
        sleuth_engine::investigate(&engine_input, &context)
    }));
    match outcome {
        Ok(result) => Some(result),
        Err(_) => {
            tracing::error!(
                investigation_id = record.id,
                "the engine panicked on this alert"
            );
            None
        }
    }
}

fn burst_stop(input: &JobInput, threshold: u64, window_seconds: u64) -> Finish {
    let alert = &input.investigation.alert;
    Finish::Stopped {
        canceled: Some(Canceled::Threshold),
        error_msg: format!(
            "burst threshold: more than {threshold} alerts from {} for tenant union '{}' within \
             {} minutes; this one was stored but not investigated. Raise \
             guards.burst_threshold if this volume is expected.",
            alert.parsed.direct_source_label,
            alert.tenant_union.display_name,
            window_seconds / 60
        ),
    }
}

/// The conclusion of an alert coalesced into an earlier investigation of the same story.
fn ignored_result(input: &JobInput, first_investigation_id: i64) -> InvestigationResult {
    let parsed = &input.investigation.alert.parsed;
    let coalesce_key = parsed.coalesce_key.clone().unwrap_or_default();
    let conclusion = format!(
        "Part of the story investigated in investigation {first_investigation_id} (same coalesce \
         key '{coalesce_key}'); not investigated again. Read that investigation for the verdict."
    );
    let finding = Finding {
        headline: "Coalesced into an earlier investigation".into(),
        finding: conclusion.clone(),
        artifacts: vec![coalesce_key.clone()],
        evidences: vec![Evidence {
            data: json!({"first_investigation_id": first_investigation_id, "coalesce_key": coalesce_key}),
            evidence_type: "coalesced".into(),
            tag: None,
        }],
        outcome: FindingOutcome::ActionInfo,
    };
    InvestigationResult {
        outcome: Outcome::Ignored,
        priority: Priority::Informational,
        conclusion,
        conclusion_summary: Some(format!(
            "Duplicate of investigation {first_investigation_id}."
        )),
        alert_summary: Some(parsed.title.clone()),
        exec_summary: None,
        attack_surface: None,
        mitre_tactic: None,
        findings: vec![finding],
        findings_ranking: Map::new(),
        key_findings: Map::new(),
        insight_tags: Map::new(),
        interview_proposals: Map::new(),
        recommended_remediations: Vec::new(),
        related_alert_hypothesis: None,
        enrich_result: None,
        custom_outcome: None,
        strategy_effects: StrategyEffects::default(),
    }
}
