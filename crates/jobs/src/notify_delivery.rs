//! The notification deliverer: tells each enabled destination the events its rule asks
//! for, at least once (docs/notifications.md).
//!
//! The outbox is the system events table: a conclusion's events commit with the
//! conclusion (`finish_batch`). Every process that runs the deliverer leases each enabled
//! destination (one deliverer per destination across processes), then, in rounds:
//!
//! 1. sends the deliveries queued earlier that are due (retries, and events queued
//!    untried), one at a time, and records the attempts together (`Unrecorded`):
//!    delivered; tried again per the retry schedule (doubling, with jitter); or
//!    dead-lettered with the reason once the schedule runs out or the destination
//!    refuses for good. A 429 with `Retry-After` pauses the destination for that long;
//! 2. reads the system events past the destination's cursor, up to the first gap in their
//!    ids (`event_horizon`: a smaller id may still commit), turns each into a
//!    `sleuth_notify::Event` with a stable idempotency id (read and made once per process
//!    for all its destinations, of the kinds ever told only, `notify_events`), keeps
//!    those its rule matches, sends each at once, and writes their deliveries, each as
//!    its first attempt left it, together with the cursor past them, in one transaction
//!    (`Unwritten`): an event is queued once and never skipped. What a pause or a
//!    shutdown leaves unsent is written pending, for step 1.
//!
//! Every send is rendered in the destination's shape with its secrets opened from the
//! secret store for the round, and spaced by the destination's rate limit.
//!
//! Why rounds and batches: the pipeline's writes and the deliverer's share the database
//! (on SQLite, one writer at a time), so a delivery that cost a write transaction of its
//! own, and a read of its whole investigation per destination, slowed the investigations
//! it reported on. A round costs a handful of statements, whatever its size.
//!
//! A process killed between a send and its record leaves the cursor before the event, or
//! the delivery pending: the next holder of the lease sends it again, with the same
//! idempotency id, which receivers use to drop the repeat. Reasons recorded never hold a
//! secret: URLs are left out of HTTP errors and secret values are masked.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use serde::Deserialize;
use sleuth_domain::Timestamp;
use sleuth_notify::destination::{Kind, Settings as DestinationSettings, SyslogProtocol};
use sleuth_notify::render::{email, pagerduty, slack, syslog, teams, webhook};
use sleuth_notify::retry::{Next, Schedule};
use sleuth_notify::{Event, EventKind, Rule, SystemNotice, Template};
use sleuth_store::{
    AttemptResult, DeliveryAttempt, DeliveryBatch, FirstAttempt, NewDelivery,
    NotificationDestinationRecord, Store, StoreResult,
};
use tokio::sync::watch;
use uuid::Uuid;

use crate::event_horizon::{GAP_PATIENCE, Horizon};
pub use crate::notify_events::event_id;
use crate::notify_events::{Told, ToldEvents};
use crate::notify_transport::{self, Attempt, Transport};
use crate::runtime::Runtime;
use crate::script_secrets::{self, RunSecrets};
use crate::settings::NotificationSettings;

/// What the deliverer keeps per destination between rounds, in this process.
struct Local {
    horizon: Horizon,
    /// Not before then: the destination's own rate limit.
    next_send: Instant,
    /// The lease this process holds on the destination, if it does.
    held: Option<Held>,
}

/// A lease this process holds: its token, and until when the store keeps it ours.
#[derive(Debug, Clone, PartialEq)]
struct Held {
    token: String,
    until: Timestamp,
}

/// What to do about a destination's lease on a tick.
#[derive(Debug, Clone, PartialEq)]
enum LeaseStep {
    /// Ours for long enough: work under it, writing nothing to keep it.
    Keep,
    /// Ours, but past the middle of its time: extend it before working.
    Renew,
    /// Nobody's (or expired): take it with a new token.
    Take,
    /// Another process's, unexpired: leave the destination to it, reading nothing more.
    Leave,
}

/// The lease step: an idle destination costs no write per tick. A held lease is renewed
/// only in the second half of its time, so a holder writes about twice per lease period;
/// another process's lease is never touched before it expires.
fn lease_step(
    held: Option<&Held>,
    stored_expiry: Option<Timestamp>,
    now: Timestamp,
    lease: chrono::Duration,
) -> LeaseStep {
    match held {
        Some(held) if held.until - now > lease / 2 => LeaseStep::Keep,
        Some(_) => LeaseStep::Renew,
        None if stored_expiry.is_some_and(|expiry| expiry > now) => LeaseStep::Leave,
        None => LeaseStep::Take,
    }
}

/// Takes or renews the lease per `lease_step`; false when the destination is not ours to
/// work on now.
async fn hold(
    store: &dyn Store,
    destination: &NotificationDestinationRecord,
    local: &mut Local,
    settings: &NotificationSettings,
) -> StoreResult<bool> {
    let now = Utc::now();
    let token = match lease_step(
        local.held.as_ref(),
        destination.lease_expires_at,
        now,
        lease(settings),
    ) {
        LeaseStep::Keep => return Ok(true),
        LeaseStep::Leave => return Ok(false),
        LeaseStep::Renew => local.held.take().map(|held| held.token).unwrap_or_default(),
        LeaseStep::Take => Uuid::new_v4().to_string(),
    };
    local.held = None;
    let until = now + lease(settings);
    if store
        .lease_notification_destination(destination.id, &token, now, until)
        .await?
    {
        local.held = Some(Held { token, until });
        Ok(true)
    } else {
        Ok(false)
    }
}

/// Delivers notifications until `shutdown` turns true; a round under way stops after the
/// send in flight. Leases are kept between rounds and given back on shutdown (a process
/// that dies loses them when they expire).
pub async fn run(runtime: Runtime, store: Arc<dyn Store>, mut shutdown: watch::Receiver<bool>) {
    let settings = runtime.settings().notifications.clone();
    let transport = match Transport::new() {
        Ok(transport) => transport,
        Err(error) => {
            tracing::error!(%error, "notifications are not delivered by this process");
            return;
        }
    };
    let tick = Duration::from_millis(settings.tick_ms.max(10));
    let delivering: Arc<Mutex<BTreeSet<i64>>> = Arc::default();
    let locals: Arc<Mutex<BTreeMap<i64, Local>>> = Arc::default();
    let told = ToldEvents::default();
    let mut tasks = tokio::task::JoinSet::new();
    let mut next_purge = Instant::now();
    tracing::info!("notification deliverer started");
    while !*shutdown.borrow() {
        if Instant::now() >= next_purge {
            purge_delivered(store.as_ref(), &settings).await;
            next_purge = Instant::now() + PURGE_EVERY;
        }
        match store.notification_destinations_to_deliver().await {
            Ok(destinations) => {
                runtime
                    .recent_conclusions()
                    .set_wanted(destinations.iter().any(|destination| destination.enabled));
                for destination in destinations {
                    let now = Utc::now();
                    if locked(&delivering).contains(&destination.id) {
                        continue;
                    }
                    if !destination.enabled {
                        // Disabled meanwhile: give its lease back, once.
                        let held = locked(&locals)
                            .get_mut(&destination.id)
                            .and_then(|local| local.held.take());
                        if let Some(held) = held {
                            let _ = store
                                .release_notification_destination(destination.id, &held.token)
                                .await;
                        }
                        continue;
                    }
                    if destination.paused_until.is_some_and(|until| until > now) {
                        continue;
                    }
                    locked(&delivering).insert(destination.id);
                    let deliverer = Deliverer {
                        runtime: runtime.clone(),
                        store: store.clone(),
                        transport: transport.clone(),
                        settings: settings.clone(),
                        shutdown: shutdown.clone(),
                        told: told.clone(),
                    };
                    let (delivering, locals) = (delivering.clone(), locals.clone());
                    tasks.spawn(async move {
                        let id = destination.id;
                        let name = destination.name.clone();
                        let mut local = locked(&locals).remove(&id).unwrap_or_else(|| Local {
                            horizon: Horizon::new(destination.cursor, GAP_PATIENCE),
                            next_send: Instant::now(),
                            held: None,
                        });
                        match hold(
                            deliverer.store.as_ref(),
                            &destination,
                            &mut local,
                            &deliverer.settings,
                        )
                        .await
                        {
                            Ok(true) => {
                                if let Err(error) = deliverer.rounds(destination, &mut local).await
                                {
                                    tracing::warn!(%error, destination = %name, "a notification round failed; it is tried again");
                                }
                            }
                            Ok(false) => {}
                            Err(error) => {
                                tracing::warn!(%error, destination = %name, "could not lease a notification destination");
                            }
                        }
                        locked(&locals).insert(id, local);
                        locked(&delivering).remove(&id);
                    });
                }
            }
            Err(error) => tracing::warn!(%error, "could not list the notification destinations"),
        }
        while tasks.try_join_next().is_some() {}
        tokio::select! {
            _ = tokio::time::sleep(tick) => {}
            _ = shutdown.changed() => {}
        }
    }
    while tasks.join_next().await.is_some() {}
    let held: Vec<(i64, Held)> = locked(&locals)
        .iter_mut()
        .filter_map(|(id, local)| local.held.take().map(|held| (*id, held)))
        .collect();
    for (id, held) in held {
        let _ = store
            .release_notification_destination(id, &held.token)
            .await;
    }
    tracing::info!("notification deliverer stopped");
}

/// How often a deliverer deletes delivered deliveries past `keep_delivered_days`.
const PURGE_EVERY: Duration = Duration::from_secs(600);
/// Rows one purge statement deletes at most: a short write, however large the backlog.
const PURGE_BATCH: u32 = 1000;

/// Deletes the delivered deliveries older than the settings keep, a batch at a time.
async fn purge_delivered(store: &dyn Store, settings: &NotificationSettings) {
    if settings.keep_delivered_days == 0 {
        return;
    }
    let cutoff = Utc::now() - chrono::Duration::days(i64::from(settings.keep_delivered_days));
    let mut purged = 0;
    loop {
        match store
            .purge_delivered_notifications(cutoff, PURGE_BATCH)
            .await
        {
            Ok(count) => {
                purged += count;
                if count < u64::from(PURGE_BATCH) {
                    break;
                }
            }
            Err(error) => {
                tracing::warn!(%error, "could not delete old notification deliveries; tried again later");
                break;
            }
        }
    }
    if purged > 0 {
        tracing::info!(
            purged,
            older_than_days = settings.keep_delivered_days,
            "deleted delivered notification deliveries"
        );
    }
}

fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn lease(settings: &NotificationSettings) -> chrono::Duration {
    chrono::Duration::seconds(i64::try_from(settings.lease_seconds.max(1)).unwrap_or(60))
}

/// The retry schedule the settings give.
pub fn schedule(settings: &NotificationSettings) -> Schedule {
    Schedule {
        first_delay: Duration::from_millis(settings.retry_first_delay_ms.max(1)),
        max_delay: Duration::from_millis(
            settings
                .retry_max_delay_ms
                .max(settings.retry_first_delay_ms.max(1)),
        ),
        max_attempts: settings.retry_max_attempts.max(1),
    }
}

/// One leased destination's work in this process.
struct Deliverer {
    runtime: Runtime,
    store: Arc<dyn Store>,
    transport: Transport,
    settings: NotificationSettings,
    shutdown: watch::Receiver<bool>,
    /// The events made for the process's destinations, shared by them.
    told: ToldEvents,
}

/// What one round did.
struct Round {
    queued_all: bool,
    sent_all: bool,
}

impl Deliverer {
    /// Rounds while there is work and the lease holds: a busy destination is drained
    /// rather than served one batch per tick.
    async fn rounds(
        &self,
        destination: NotificationDestinationRecord,
        local: &mut Local,
    ) -> StoreResult<()> {
        let mut destination = destination;
        // Another process moved the cursor since this one last held the destination.
        if local.horizon.position() != destination.cursor {
            local.horizon = Horizon::new(destination.cursor, GAP_PATIENCE);
        }
        loop {
            let round = self.round(&destination, local).await?;
            if *self.shutdown.borrow() || (round.queued_all && round.sent_all) {
                return Ok(());
            }
            destination = self
                .store
                .notification_destination_to_deliver(destination.id)
                .await?;
            if !hold(self.store.as_ref(), &destination, local, &self.settings).await? {
                return Ok(());
            }
            if destination
                .paused_until
                .is_some_and(|until| until > Utc::now())
            {
                return Ok(());
            }
        }
    }

    async fn round(
        &self,
        destination: &NotificationDestinationRecord,
        local: &mut Local,
    ) -> StoreResult<Round> {
        // Retries that are due go first, in the order they fell due; then the new events.
        let retries = self.send_due(destination, local).await?;
        let new = self
            .tell_new_events(destination, local, retries != Sending::Stopped)
            .await?;
        Ok(Round {
            queued_all: new.read_all,
            sent_all: retries == Sending::Done && new.sending == Sending::Done,
        })
    }

    /// Reads the events past the cursor that the rule matches, sends each at once (unless
    /// `may_send` is false), and writes them with what came of each and the cursor past
    /// them, in one transaction: an event is queued once and never skipped, and a delivery
    /// taken at the first attempt costs one row written, not a row and its update. Sent
    /// events wait at most `RECORD_WITHIN` for their write (a prefix is written with the
    /// cursor at its last event); those not sent (the destination asked for a pause or
    /// cannot be sent to, the process is stopping) are written pending, untried.
    async fn tell_new_events(
        &self,
        destination: &NotificationDestinationRecord,
        local: &mut Local,
        may_send: bool,
    ) -> StoreResult<NewEvents> {
        let batch = self.settings.batch.max(1);
        let cursor = local.horizon.position();
        let ids = self.store.system_event_ids_after(cursor, batch).await?;
        let through = local.horizon.through(&ids, Instant::now());
        if through <= cursor {
            return Ok(NewEvents {
                read_all: true,
                sending: Sending::Done,
            });
        }
        let rule = rule_of(destination);
        let base_url = crate::firing::base_url(&self.runtime);
        let told = self
            .told
            .of(
                self.store.as_ref(),
                cursor,
                through,
                &ids,
                &base_url,
                self.runtime.recent_conclusions(),
            )
            .await?;
        let wanted: Vec<(i64, Arc<Told>)> = told
            .into_iter()
            .filter(|(_, told)| rule.as_ref().is_some_and(|rule| told.wanted_by(rule)))
            .collect();
        let sender = if may_send && !wanted.is_empty() {
            Some(Sender::prepare(self, destination).await)
        } else {
            None
        };
        let mut sending = if may_send {
            Sending::Done
        } else {
            Sending::Stopped
        };
        let mut unwritten = Unwritten::default();
        for (system_event_id, told) in wanted {
            let mut first_attempt = None;
            if let Some(sender) = sender.as_ref().filter(|_| sending == Sending::Done) {
                let wait = sender.wait_before_send(local);
                if !wait.is_zero() {
                    // Nothing sent waits unwritten while the rate limit is waited out.
                    self.write_new(destination, local, &mut unwritten).await?;
                }
                if *self.shutdown.borrow() || !self.wait(wait).await {
                    sending = Sending::Stopped;
                } else {
                    let (result, pause, stop) = sender
                        .attempt(&self.transport, local, Ok(&told.event), 0)
                        .await;
                    first_attempt = Some(FirstAttempt {
                        result,
                        pause_destination_until: pause,
                        at: Utc::now(),
                    });
                    if stop {
                        sending = Sending::Stopped;
                    }
                }
            }
            let attempted = first_attempt.is_some();
            unwritten.add(
                system_event_id,
                NewDelivery {
                    system_event_id,
                    event_id: told.event.id.to_string(),
                    event: told.json().to_string(),
                    first_attempt,
                },
                attempted,
            );
            if unwritten.is_due() {
                self.write_new(destination, local, &mut unwritten).await?;
            }
        }
        unwritten.through = through;
        self.write_new(destination, local, &mut unwritten).await?;
        Ok(NewEvents {
            read_all: ids.len() < usize::try_from(batch).unwrap_or(usize::MAX),
            sending,
        })
    }

    /// Writes the new deliveries not yet written, with the cursor at the last event they
    /// cover, and moves this process's position there.
    async fn write_new(
        &self,
        destination: &NotificationDestinationRecord,
        local: &mut Local,
        unwritten: &mut Unwritten,
    ) -> StoreResult<()> {
        let cursor = unwritten.through;
        if cursor <= local.horizon.position() {
            return Ok(());
        }
        let lease_token = local
            .held
            .as_ref()
            .map(|held| held.token.clone())
            .unwrap_or_default();
        self.store
            .queue_notification_deliveries(&DeliveryBatch {
                destination_id: destination.id,
                lease_token,
                cursor,
                deliveries: unwritten.take(),
                at: Utc::now(),
            })
            .await?;
        local.horizon.advance(cursor);
        Ok(())
    }

    /// Waits `wait` out; false when the process is told to stop meanwhile.
    async fn wait(&self, wait: Duration) -> bool {
        if wait.is_zero() {
            return true;
        }
        let mut shutdown = self.shutdown.clone();
        tokio::select! {
            _ = tokio::time::sleep(wait) => true,
            _ = shutdown.changed() => false,
        }
    }

    /// Sends the deliveries queued earlier that are due (retries, and events queued
    /// untried), in order, and records the attempts; stops at the first that must wait
    /// (the receiver asked for a pause, or the destination cannot be sent to: the rest
    /// would fail the same way).
    async fn send_due(
        &self,
        destination: &NotificationDestinationRecord,
        local: &mut Local,
    ) -> StoreResult<Sending> {
        let batch = self.settings.batch.max(1);
        let due = self
            .store
            .due_notification_deliveries(destination.id, Utc::now(), batch)
            .await?;
        if due.is_empty() {
            return Ok(Sending::Done);
        }
        let sender = Sender::prepare(self, destination).await;
        let mut unrecorded = Unrecorded::default();
        for delivery in &due {
            let wait = sender.wait_before_send(local);
            if !wait.is_zero() {
                // Nothing sent waits unrecorded while the rate limit is waited out.
                unrecorded.record(self.store.as_ref()).await?;
            }
            if *self.shutdown.borrow() || !self.wait(wait).await {
                unrecorded.record(self.store.as_ref()).await?;
                return Ok(Sending::Stopped);
            }
            let event = Event::deserialize(&delivery.event)
                .map_err(|error| format!("the stored event cannot be read: {error}"));
            let (result, pause, stop) = sender
                .attempt(&self.transport, local, event.as_ref(), delivery.attempts)
                .await;
            unrecorded.add(DeliveryAttempt {
                delivery_id: delivery.id,
                result,
                pause_destination_until: pause,
                at: Utc::now(),
            });
            if stop {
                unrecorded.record(self.store.as_ref()).await?;
                return Ok(Sending::Stopped);
            }
            if unrecorded.is_due() {
                unrecorded.record(self.store.as_ref()).await?;
            }
        }
        unrecorded.record(self.store.as_ref()).await?;
        Ok(
            if due.len() < usize::try_from(batch).unwrap_or(usize::MAX) {
                Sending::Done
            } else {
                Sending::More
            },
        )
    }
}

/// How a round's sending ended.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Sending {
    /// Everything there was to send was sent (or recorded for a retry).
    Done,
    /// A full batch was sent: more may be due.
    More,
    /// Stopped: the destination asked for a pause or cannot be sent to, or the process is
    /// stopping. What was not sent waits, queued.
    Stopped,
}

/// What a round's new events came to.
struct NewEvents {
    /// No further event waited past the batch.
    read_all: bool,
    sending: Sending,
}

/// A round's sending to one destination: its settings and secrets, its retry schedule,
/// its rate limit.
struct Sender {
    prepared: Result<Prepared, String>,
    schedule: Schedule,
    /// The time between two sends the destination's rate limit asks for.
    spacing: Option<Duration>,
}

impl Sender {
    async fn prepare(deliverer: &Deliverer, destination: &NotificationDestinationRecord) -> Sender {
        Sender {
            prepared: prepare(&deliverer.runtime, &deliverer.store, destination).await,
            schedule: schedule(&deliverer.settings),
            spacing: destination
                .rate_limit_per_minute
                .filter(|limit| *limit > 0)
                .map(|limit| Duration::from_secs(60) / u32::try_from(limit).unwrap_or(u32::MAX)),
        }
    }

    /// How long the rate limit wants before the next send (zero: now).
    fn wait_before_send(&self, local: &Local) -> Duration {
        match self.spacing {
            Some(_) => local.next_send.saturating_duration_since(Instant::now()),
            None => Duration::ZERO,
        }
    }

    /// Sends `event` (or records why it cannot be read) as the delivery's attempt after
    /// `attempts_before`, and judges it: its result, the pause the destination asked for,
    /// and whether sending to the destination must stop for now.
    async fn attempt(
        &self,
        transport: &Transport,
        local: &mut Local,
        event: Result<&Event, &String>,
        attempts_before: i64,
    ) -> (AttemptResult, Option<Timestamp>, bool) {
        if let Some(spacing) = self.spacing {
            local.next_send = Instant::now() + spacing;
        }
        let attempt = match (&self.prepared, event) {
            (Ok(prepared), Ok(event)) => prepared.send(transport, event).await,
            (Ok(_), Err(reason)) => Attempt::Refused {
                reason: reason.clone(),
            },
            (Err(problem), _) => Attempt::TryAgain {
                reason: problem.clone(),
                retry_after: None,
            },
        };
        let mask = |text: String| match &self.prepared {
            Ok(prepared) => prepared.secrets.mask(text),
            Err(_) => text,
        };
        let (result, pause) = judge(attempt, attempts_before, &self.schedule, Utc::now(), mask);
        let must_wait = !matches!(result, AttemptResult::Delivered { .. });
        let stop = must_wait && (pause.is_some() || self.prepared.is_err());
        (result, pause, stop)
    }
}

/// New deliveries not yet written, and the last event they cover.
#[derive(Default)]
struct Unwritten {
    deliveries: Vec<NewDelivery>,
    /// The cursor their write moves to.
    through: i64,
    /// When the first of them that was sent was sent.
    since: Option<Instant>,
}

impl Unwritten {
    fn add(&mut self, system_event_id: i64, delivery: NewDelivery, sent: bool) {
        if sent {
            self.since.get_or_insert_with(Instant::now);
        }
        self.deliveries.push(delivery);
        self.through = system_event_id;
    }

    /// A sent delivery has waited `RECORD_WITHIN` for its write.
    fn is_due(&self) -> bool {
        self.since
            .is_some_and(|since| since.elapsed() >= RECORD_WITHIN)
    }

    fn take(&mut self) -> Vec<NewDelivery> {
        self.since = None;
        std::mem::take(&mut self.deliveries)
    }
}

/// How long a made attempt may wait for its record: the attempts of a destination are
/// recorded together (one write transaction, `record_notification_attempts`) at the end
/// of a round, or once the first of them has waited this long. A process killed meanwhile
/// sends them again (at least once), so this bounds the repeats a crash causes, and how
/// long the delivery log lags behind the sends.
const RECORD_WITHIN: Duration = Duration::from_millis(250);

/// Attempts made and not yet recorded, oldest first.
#[derive(Default)]
struct Unrecorded {
    attempts: Vec<DeliveryAttempt>,
    since: Option<Instant>,
}

impl Unrecorded {
    fn add(&mut self, attempt: DeliveryAttempt) {
        self.since.get_or_insert_with(Instant::now);
        self.attempts.push(attempt);
    }

    fn is_due(&self) -> bool {
        self.since
            .is_some_and(|since| since.elapsed() >= RECORD_WITHIN)
    }

    async fn record(&mut self, store: &dyn Store) -> StoreResult<()> {
        self.since = None;
        if self.attempts.is_empty() {
            return Ok(());
        }
        store
            .record_notification_attempts(&std::mem::take(&mut self.attempts))
            .await
    }
}

/// What an attempt comes to in the delivery log: its result, and a pause the destination
/// asked for. Reasons go through `mask` (secret values out).
fn judge(
    attempt: Attempt,
    attempts_before: i64,
    schedule: &Schedule,
    now: Timestamp,
    mask: impl Fn(String) -> String,
) -> (AttemptResult, Option<Timestamp>) {
    let attempts = u32::try_from(attempts_before + 1).unwrap_or(u32::MAX);
    match attempt {
        Attempt::Delivered { detail } => (AttemptResult::Delivered { detail }, None),
        Attempt::Refused { reason } => (
            AttemptResult::Dead {
                error: format!("refused: {}", mask(reason)),
            },
            None,
        ),
        Attempt::TryAgain {
            reason,
            retry_after,
        } => {
            let reason = mask(reason);
            let pause = retry_after.map(|asked| {
                now + chrono::Duration::from_std(asked.min(schedule.max_delay))
                    .unwrap_or_else(|_| chrono::Duration::hours(1))
            });
            let result = match schedule.after_failure(attempts, retry_after, rand::random::<f64>())
            {
                Next::RetryAfter(wait) => AttemptResult::Retry {
                    error: reason,
                    retry_at: now
                        + chrono::Duration::from_std(wait)
                            .unwrap_or_else(|_| chrono::Duration::hours(1)),
                },
                Next::DeadLetter => AttemptResult::Dead {
                    error: format!("gave up after {attempts} attempts; the last: {reason}"),
                },
            };
            (result, pause)
        }
    }
}

fn rule_of(destination: &NotificationDestinationRecord) -> Option<Rule> {
    match serde_json::from_value::<Rule>(destination.rule.clone()) {
        Ok(rule) => Some(rule),
        Err(error) => {
            tracing::error!(%error, destination = %destination.name, "a destination's stored rule cannot be read; it is told nothing");
            None
        }
    }
}

/// A destination ready to send to: its settings read, its secrets opened.
struct Prepared {
    settings: DestinationSettings,
    template: Option<Template>,
    secrets: RunSecrets,
}

/// Reads the destination's settings and opens its secrets, or says why it cannot (never
/// with a secret's value).
async fn prepare(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    destination: &NotificationDestinationRecord,
) -> Result<Prepared, String> {
    let kind = Kind::parse(&destination.kind).ok_or_else(|| {
        format!(
            "the destination's kind '{}' is not one this Sleuth knows",
            destination.kind
        )
    })?;
    let settings = DestinationSettings::check(kind, &destination.settings)
        .map_err(|error| format!("the destination's settings are unusable: {error}"))?;
    let template = destination
        .template
        .as_deref()
        .map(Template::parse)
        .transpose()
        .map_err(|error| format!("the destination's template is unusable: {error}"))?;
    let names: Vec<String> = settings
        .secret_names()
        .into_iter()
        .map(str::to_string)
        .collect();
    let stored = script_secrets::stored(store, &names)
        .await
        .map_err(|error| format!("could not read the secret store: {error}"))?;
    let secrets = script_secrets::open_named(runtime.keyring(), &stored, &names)
        .map_err(|error| error.to_string())?;
    Ok(Prepared {
        settings,
        template,
        secrets,
    })
}

impl Prepared {
    fn secret(&self, name: &str) -> String {
        self.secrets.values().remove(name).unwrap_or_default()
    }

    /// Renders `event` for the destination and sends it.
    async fn send(&self, transport: &Transport, event: &Event) -> Attempt {
        let template = self.template.as_ref();
        match &self.settings {
            DestinationSettings::Webhook {
                url_secret,
                signing_secret,
            } => {
                let key = self.secret(signing_secret);
                let message = webhook::render(event, key.as_bytes(), Utc::now().timestamp());
                transport.post(&self.secret(url_secret), &message).await
            }
            DestinationSettings::Slack { url_secret } => {
                let message = slack::render(event, template);
                transport.post(&self.secret(url_secret), &message).await
            }
            DestinationSettings::Teams { url_secret } => {
                let message = teams::render(event, template);
                transport.post(&self.secret(url_secret), &message).await
            }
            DestinationSettings::PagerDuty {
                routing_key_secret,
                events_url,
            } => {
                let message = pagerduty::render(event, &self.secret(routing_key_secret), template);
                transport.post(events_url, &message).await
            }
            DestinationSettings::Syslog {
                address,
                protocol,
                facility,
                hostname,
            } => {
                let facility = syslog::Facility::new(*facility).unwrap_or(syslog::Facility::LOCAL4);
                let line = syslog::render(event, facility, hostname);
                let protocol = match protocol {
                    SyslogProtocol::Tcp => notify_transport::SyslogProtocol::Tcp,
                    SyslogProtocol::Udp => notify_transport::SyslogProtocol::Udp,
                };
                transport.syslog(address, protocol, &line).await
            }
            DestinationSettings::Email(settings) => {
                let message = email::render(event, template);
                let password = settings
                    .password_secret
                    .as_deref()
                    .and_then(|name| self.secrets.values().remove(name));
                transport
                    .email(notify_transport::Mail {
                        settings,
                        password,
                        message: &message,
                        event_id: event.id,
                    })
                    .await
            }
        }
    }
}

/// Sends a test event to `destination` now, outside the delivery log, and answers what
/// came of it (the reason never holds a secret).
pub async fn send_test(
    runtime: &Runtime,
    store: &Arc<dyn Store>,
    destination: &NotificationDestinationRecord,
) -> Attempt {
    let prepared = match prepare(runtime, store, destination).await {
        Ok(prepared) => prepared,
        Err(reason) => return Attempt::Refused { reason },
    };
    let transport = match Transport::new() {
        Ok(transport) => transport,
        Err(reason) => return Attempt::Refused { reason },
    };
    let event = Event {
        id: Uuid::new_v4(),
        occurred_at: Utc::now(),
        tenant: None,
        tenant_unions: Vec::new(),
        kind: EventKind::SystemEvent(SystemNotice {
            name: "notification_test".into(),
            message: format!(
                "A test from Sleuth to the destination '{}': it works.",
                destination.name
            ),
        }),
    };
    match prepared.send(&transport, &event).await {
        Attempt::Delivered { detail } => Attempt::Delivered { detail },
        Attempt::TryAgain {
            reason,
            retry_after,
        } => Attempt::TryAgain {
            reason: prepared.secrets.mask(reason),
            retry_after,
        },
        Attempt::Refused { reason } => Attempt::Refused {
            reason: prepared.secrets.mask(reason),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule() -> Schedule {
        Schedule {
            first_delay: Duration::from_secs(5),
            max_delay: Duration::from_secs(3600),
            max_attempts: 3,
        }
    }

    #[test]
    fn a_failure_is_retried_until_the_schedule_ends_then_dead_lettered_with_its_reason() {
        let now = Utc::now();
        let failed = || Attempt::TryAgain {
            reason: "HTTP 503: down".into(),
            retry_after: None,
        };
        let (first, pause) = judge(failed(), 0, &schedule(), now, |text| text);
        assert!(pause.is_none());
        let AttemptResult::Retry { retry_at, error } = first else {
            panic!("{first:?}");
        };
        assert_eq!(error, "HTTP 503: down");
        assert!(retry_at >= now + chrono::Duration::milliseconds(2500));
        let (last, _) = judge(failed(), 2, &schedule(), now, |text| text);
        assert_eq!(
            last,
            AttemptResult::Dead {
                error: "gave up after 3 attempts; the last: HTTP 503: down".into()
            }
        );
    }

    #[test]
    fn retry_after_pauses_the_destination_and_a_refusal_is_final() {
        let now = Utc::now();
        let (result, pause) = judge(
            Attempt::TryAgain {
                reason: "HTTP 429: slow down".into(),
                retry_after: Some(Duration::from_secs(30)),
            },
            0,
            &schedule(),
            now,
            |text| text,
        );
        assert_eq!(pause, Some(now + chrono::Duration::seconds(30)));
        assert!(
            matches!(result, AttemptResult::Retry { retry_at, .. } if retry_at >= now + chrono::Duration::seconds(30))
        );
        let (refused, _) = judge(
            Attempt::Refused {
                reason: "HTTP 404: token sk-secret-value unknown".into(),
            },
            0,
            &schedule(),
            now,
            |text| text.replace("sk-secret-value", "***"),
        );
        assert_eq!(
            refused,
            AttemptResult::Dead {
                error: "refused: HTTP 404: token *** unknown".into()
            }
        );
    }

    #[test]
    fn an_idle_holder_writes_nothing_until_the_second_half_of_its_lease() {
        let now = Utc::now();
        let lease = chrono::Duration::seconds(60);
        let held = |left: i64| Held {
            token: "mine".into(),
            until: now + chrono::Duration::seconds(left),
        };
        let check = |held: Option<Held>, stored: Option<i64>, expected: LeaseStep| {
            let stored = stored.map(|left| now + chrono::Duration::seconds(left));
            assert_eq!(
                lease_step(held.as_ref(), stored, now, lease),
                expected,
                "held {held:?}, stored expiry {stored:?}"
            );
        };
        check(Some(held(59)), Some(59), LeaseStep::Keep);
        check(Some(held(31)), Some(31), LeaseStep::Keep);
        check(Some(held(30)), Some(30), LeaseStep::Renew);
        check(Some(held(-5)), Some(-5), LeaseStep::Renew);
        check(None, Some(20), LeaseStep::Leave);
        check(None, Some(0), LeaseStep::Take);
        check(None, None, LeaseStep::Take);
    }
}
