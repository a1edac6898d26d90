//! Notification destinations and deliveries (`sleuth_store::NotificationStore`): settings,
//! the lease a deliverer holds, the cursor into the system events moved with the
//! deliveries it queued, and every attempt recorded on its delivery.

use async_trait::async_trait;
use sleuth_domain::{Entity, Outcome, Priority, Timestamp};
use sleuth_store::{
    AttemptResult, DeliveryAttempt, DeliveryBatch, DeliveryQuery, DeliveryRecord, DeliveryState,
    InvestigationToTell, NewDelivery, NewNotificationDestination, NotificationDestinationChanges,
    NotificationDestinationRecord, NotificationStore, StoreError, StoreResult,
};
use std::collections::{BTreeMap, HashMap};

use sqlx::any::AnyRow;

use crate::builder::SqlBuilder;
use crate::rows::{self, micros};
use crate::{DbResultExt, Dialect, SqlStore};

macro_rules! destination_columns {
    () => {
        "id, name, kind, settings, rule, template, enabled, rate_limit_per_minute, cursor, \
         paused_until, lease_expires_at, last_error, last_error_at, last_delivered_at, \
         (SELECT COUNT(*) FROM notification_deliveries d \
          WHERE d.destination_id = notification_destinations.id AND d.state = 'pending') \
          AS pending, \
         (SELECT COUNT(*) FROM notification_deliveries d \
          WHERE d.destination_id = notification_destinations.id AND d.state = 'delivered') \
          AS delivered, \
         (SELECT COUNT(*) FROM notification_deliveries d \
          WHERE d.destination_id = notification_destinations.id AND d.state = 'dead') \
          AS dead, \
         created_at, updated_at"
    };
}

/// The destination's columns without the counts of its deliveries (read as 0).
macro_rules! uncounted_destination_columns {
    () => {
        "id, name, kind, settings, rule, template, enabled, rate_limit_per_minute, cursor, \
         paused_until, lease_expires_at, last_error, last_error_at, last_delivered_at, \
         0 AS pending, 0 AS delivered, 0 AS dead, created_at, updated_at"
    };
}

macro_rules! delivery_columns {
    () => {
        "id, destination_id, system_event_id, event_id, event, state, attempts, \
         next_attempt_at, last_error, delivered_detail, delivered_at, created_at, updated_at"
    };
}

fn read_destination(row: &AnyRow) -> StoreResult<NotificationDestinationRecord> {
    Ok(NotificationDestinationRecord {
        id: rows::int(row, "id")?,
        name: rows::text(row, "name")?,
        kind: rows::text(row, "kind")?,
        settings: rows::json(row, "settings")?,
        rule: rows::json(row, "rule")?,
        template: rows::opt_text(row, "template")?,
        enabled: rows::flag(row, "enabled")?,
        rate_limit_per_minute: rows::opt_int(row, "rate_limit_per_minute")?,
        cursor: rows::int(row, "cursor")?,
        paused_until: rows::opt_time(row, "paused_until")?,
        lease_expires_at: rows::opt_time(row, "lease_expires_at")?,
        last_error: rows::opt_text(row, "last_error")?,
        last_error_at: rows::opt_time(row, "last_error_at")?,
        last_delivered_at: rows::opt_time(row, "last_delivered_at")?,
        pending: rows::int(row, "pending")?,
        delivered: rows::int(row, "delivered")?,
        dead: rows::int(row, "dead")?,
        created_at: rows::time(row, "created_at")?,
        updated_at: rows::time(row, "updated_at")?,
    })
}

fn read_delivery(row: &AnyRow) -> StoreResult<DeliveryRecord> {
    let state = rows::text(row, "state")?;
    Ok(DeliveryRecord {
        id: rows::int(row, "id")?,
        destination_id: rows::int(row, "destination_id")?,
        system_event_id: rows::opt_int(row, "system_event_id")?,
        event_id: rows::text(row, "event_id")?,
        event: rows::json(row, "event")?,
        state: DeliveryState::parse(&state).ok_or_else(|| {
            StoreError::internal(format!("a delivery's state '{state}' is not known"))
        })?,
        attempts: rows::int(row, "attempts")?,
        next_attempt_at: rows::time(row, "next_attempt_at")?,
        last_error: rows::opt_text(row, "last_error")?,
        delivered_detail: rows::opt_text(row, "delivered_detail")?,
        delivered_at: rows::opt_time(row, "delivered_at")?,
        created_at: rows::time(row, "created_at")?,
        updated_at: rows::time(row, "updated_at")?,
    })
}

/// The parts of a stored parsed alert that destinations are told of; serde skips the rest
/// without building it.
#[derive(serde::Deserialize)]
struct AlertToTell {
    title: String,
    direct_source_label: String,
    #[serde(default)]
    entities: Vec<Entity>,
    #[serde(default)]
    tenant_id: Option<String>,
}

/// The parts of a stored result that destinations are told of.
#[derive(serde::Deserialize)]
struct ResultToTell {
    conclusion: String,
    #[serde(default)]
    mitre_tactic: Option<String>,
    #[serde(default)]
    insight_tags: BTreeMap<String, serde::de::IgnoredAny>,
}

fn read_investigation_to_tell(row: &AnyRow) -> StoreResult<InvestigationToTell> {
    let alert: AlertToTell = rows::json(row, "parsed")?;
    let result: ResultToTell = rows::json(row, "result")?;
    Ok(InvestigationToTell {
        investigation_id: rows::int(row, "id")?,
        outcome: rows::parsed(row, "outcome", Outcome::parse)?,
        priority: rows::parsed(row, "priority", Priority::parse)?,
        title: alert.title,
        tenant_id: alert.tenant_id,
        tenant_union: rows::text(row, "tenant_union")?,
        source: alert.direct_source_label,
        entities: alert.entities,
        conclusion: result.conclusion,
        mitre_tactic: result.mitre_tactic,
        insight_tags: result.insight_tags.into_keys().collect(),
    })
}

/// The destination `select` reads, its id bound as `$1`.
async fn one_destination(
    pool: &sqlx::AnyPool,
    select: &'static str,
    destination_id: i64,
) -> StoreResult<NotificationDestinationRecord> {
    let row = sqlx::query(select)
        .bind(destination_id)
        .fetch_optional(pool)
        .await
        .db()?
        .ok_or_else(|| StoreError::not_found("notification destination", destination_id))?;
    read_destination(&row)
}

fn refusal(error: sqlx::Error, name: &str) -> StoreError {
    crate::named_record_error(error, "notification destination", name)
}

#[async_trait]
impl NotificationStore for SqlStore {
    async fn create_notification_destination(
        &self,
        destination: &NewNotificationDestination,
    ) -> StoreResult<NotificationDestinationRecord> {
        // The cursor starts at the newest event: a new destination is told of what
        // happens from now on, not of the whole history.
        let row = sqlx::query(concat!(
            "INSERT INTO notification_destinations (name, kind, settings, rule, template, \
             enabled, rate_limit_per_minute, cursor, created_by, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, \
             COALESCE((SELECT MAX(id) FROM system_events), 0), $8, $9, $9) RETURNING ",
            destination_columns!()
        ))
        .bind(&destination.name)
        .bind(&destination.kind)
        .bind(destination.settings.to_string())
        .bind(destination.rule.to_string())
        .bind(destination.template.as_deref())
        .bind(i64::from(destination.enabled))
        .bind(destination.rate_limit_per_minute)
        .bind(destination.created_by)
        .bind(micros(destination.at))
        .fetch_one(&self.pool)
        .await
        .map_err(|error| refusal(error, &destination.name))?;
        read_destination(&row)
    }

    async fn list_notification_destinations(
        &self,
    ) -> StoreResult<Vec<NotificationDestinationRecord>> {
        sqlx::query(concat!(
            "SELECT ",
            destination_columns!(),
            " FROM notification_destinations ORDER BY id"
        ))
        .fetch_all(&self.pool)
        .await
        .db()?
        .iter()
        .map(read_destination)
        .collect()
    }

    async fn notification_destinations_to_deliver(
        &self,
    ) -> StoreResult<Vec<NotificationDestinationRecord>> {
        sqlx::query(concat!(
            "SELECT ",
            uncounted_destination_columns!(),
            " FROM notification_destinations ORDER BY id"
        ))
        .fetch_all(&self.pool)
        .await
        .db()?
        .iter()
        .map(read_destination)
        .collect()
    }

    async fn get_notification_destination(
        &self,
        destination_id: i64,
    ) -> StoreResult<NotificationDestinationRecord> {
        one_destination(
            &self.pool,
            concat!(
                "SELECT ",
                destination_columns!(),
                " FROM notification_destinations WHERE id = $1"
            ),
            destination_id,
        )
        .await
    }

    async fn notification_destination_to_deliver(
        &self,
        destination_id: i64,
    ) -> StoreResult<NotificationDestinationRecord> {
        one_destination(
            &self.pool,
            concat!(
                "SELECT ",
                uncounted_destination_columns!(),
                " FROM notification_destinations WHERE id = $1"
            ),
            destination_id,
        )
        .await
    }

    async fn investigations_to_tell(
        &self,
        investigation_ids: &[i64],
    ) -> StoreResult<Vec<InvestigationToTell>> {
        let mut told = Vec::with_capacity(investigation_ids.len());
        for chunk in investigation_ids.chunks(ROWS_PER_STATEMENT) {
            let mut sql = SqlBuilder::new(
                "SELECT i.id, i.outcome, i.priority, a.parsed, r.result, \
                 t.display_name AS tenant_union FROM investigations i \
                 JOIN alerts a ON a.id = i.alert_id \
                 JOIN tenant_unions t ON t.id = a.tenant_union_id \
                 JOIN investigation_results r ON r.investigation_id = i.id \
                 WHERE i.outcome IS NOT NULL AND i.priority IS NOT NULL AND i.id IN ",
            );
            sql.bind_padded_list(chunk)?;
            for row in sql.build().fetch_all(&self.pool).await.db()? {
                told.push(read_investigation_to_tell(&row)?);
            }
        }
        Ok(told)
    }

    async fn update_notification_destination(
        &self,
        destination_id: i64,
        changes: &NotificationDestinationChanges,
        at: Timestamp,
    ) -> StoreResult<NotificationDestinationRecord> {
        let current = self.get_notification_destination(destination_id).await?;
        let template = changes.template.clone().unwrap_or(current.template);
        let rate_limit = changes
            .rate_limit_per_minute
            .unwrap_or(current.rate_limit_per_minute);
        let name = changes.name.clone().unwrap_or(current.name);
        let row = sqlx::query(concat!(
            "UPDATE notification_destinations SET name = $1, settings = COALESCE($2, settings), \
             rule = COALESCE($3, rule), template = $4, enabled = COALESCE($5, enabled), \
             rate_limit_per_minute = $6, updated_at = $7 WHERE id = $8 RETURNING ",
            destination_columns!()
        ))
        .bind(&name)
        .bind(changes.settings.as_ref().map(ToString::to_string))
        .bind(changes.rule.as_ref().map(ToString::to_string))
        .bind(template)
        .bind(changes.enabled.map(i64::from))
        .bind(rate_limit)
        .bind(micros(at))
        .bind(destination_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(|error| refusal(error, &name))?
        .ok_or_else(|| StoreError::not_found("notification destination", destination_id))?;
        read_destination(&row)
    }

    async fn lease_notification_destination(
        &self,
        destination_id: i64,
        token: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        // One statement: the database lets one of two racing updates see the row as free.
        let leased = sqlx::query(
            "UPDATE notification_destinations SET lease_token = $1, lease_expires_at = $2 \
             WHERE id = $3 AND enabled = 1 AND (lease_token = $1 \
             OR lease_expires_at IS NULL OR lease_expires_at <= $4)",
        )
        .bind(token)
        .bind(micros(until))
        .bind(destination_id)
        .bind(micros(now))
        .execute(&self.pool)
        .await
        .db()?;
        Ok(leased.rows_affected() == 1)
    }

    async fn release_notification_destination(
        &self,
        destination_id: i64,
        token: &str,
    ) -> StoreResult<()> {
        sqlx::query(
            "UPDATE notification_destinations SET lease_token = NULL, lease_expires_at = NULL \
             WHERE id = $1 AND lease_token = $2",
        )
        .bind(destination_id)
        .bind(token)
        .execute(&self.pool)
        .await
        .db()?;
        Ok(())
    }

    async fn queue_notification_deliveries(&self, batch: &DeliveryBatch) -> StoreResult<()> {
        let at = micros(batch.at);
        self.writers
            .write(async |connection| {
                let (_write_turn, mut transaction) =
                    crate::begin_write(connection, self.dialect).await?;
                // The cursor first: a lost lease writes nothing at all.
                let moved = sqlx::query(
                    "UPDATE notification_destinations SET cursor = $1 \
                     WHERE id = $2 AND lease_token = $3",
                )
                .bind(batch.cursor)
                .bind(batch.destination_id)
                .bind(&batch.lease_token)
                .execute(&mut *transaction)
                .await
                .db()?;
                if moved.rows_affected() != 1 {
                    return Err(StoreError::Rejected {
                        detail: format!(
                            "the lease on notification destination {} is held by another \
                             deliverer",
                            batch.destination_id
                        ),
                    });
                }
                // One multi-row INSERT per chunk, not one statement per delivery: the
                // write holds the turn every other writer of the process waits for.
                for chunk in batch.deliveries.chunks(ROWS_PER_STATEMENT) {
                    let mut sql = SqlBuilder::many(
                        self.dialect,
                        "INSERT INTO notification_deliveries (destination_id, system_event_id, \
                         event_id, event, state, attempts, next_attempt_at, last_error, \
                         delivered_detail, delivered_at, created_at, updated_at)",
                    );
                    sql.value_rows(self.dialect, 12, chunk.len(), |sql, index| {
                        let delivery = &chunk[index];
                        let row = NewRow::of(delivery, batch.at);
                        sql.bind(batch.destination_id)?.push(", ");
                        sql.bind(delivery.system_event_id)?.push(", ");
                        sql.bind(delivery.event_id.clone())?.push(", ");
                        sql.bind(delivery.event.clone())?.push(", ");
                        sql.bind(row.state.as_str().to_string())?.push(", ");
                        sql.bind(row.attempts)?.push(", ");
                        sql.bind(micros(row.next_attempt_at))?.push(", ");
                        sql.bind(row.last_error)?.push(", ");
                        sql.bind(row.delivered_detail)?.push(", ");
                        sql.bind(row.delivered_at.map(micros))?.push(", ");
                        sql.bind(at)?.push(", ");
                        sql.bind(micros(row.updated_at))?;
                        Ok(())
                    })?;
                    sql.push(" ON CONFLICT (destination_id, system_event_id) DO NOTHING");
                    sql.build().execute(&mut *transaction).await.db()?;
                }
                let first_attempts = batch.deliveries.iter().filter_map(|delivery| {
                    let first = delivery.first_attempt.as_ref()?;
                    Some(Attempted {
                        destination_id: batch.destination_id,
                        result: &first.result,
                        pause_destination_until: first.pause_destination_until,
                        at: first.at,
                    })
                });
                write_destination_changes(&mut transaction, first_attempts).await?;
                transaction.commit().await.db()?;
                Ok(())
            })
            .await
    }

    async fn due_notification_deliveries(
        &self,
        destination_id: i64,
        now: Timestamp,
        limit: u32,
    ) -> StoreResult<Vec<DeliveryRecord>> {
        sqlx::query(concat!(
            "SELECT ",
            delivery_columns!(),
            " FROM notification_deliveries WHERE destination_id = $1 AND state = 'pending' \
             AND next_attempt_at <= $2 ORDER BY next_attempt_at, id LIMIT $3"
        ))
        .bind(destination_id)
        .bind(micros(now))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .db()?
        .iter()
        .map(read_delivery)
        .collect()
    }

    async fn record_notification_attempts(&self, attempts: &[DeliveryAttempt]) -> StoreResult<()> {
        if attempts.is_empty() {
            return Ok(());
        }
        self.writers
            .write(async |connection| {
                let (_write_turn, mut transaction) =
                    crate::begin_write(connection, self.dialect).await?;
                let mut applied = HashMap::new();
                for chunk in attempts.chunks(ROWS_PER_STATEMENT) {
                    for row in record_deliveries(self.dialect, chunk)?
                        .fetch_all(&mut *transaction)
                        .await
                        .db()?
                    {
                        applied.insert(rows::int(&row, "id")?, rows::int(&row, "destination_id")?);
                    }
                }
                // Attempts recorded late, on deliveries no longer pending (delivered or
                // dead by whoever held the lease after us), change nothing.
                let recorded = attempts.iter().filter_map(|attempt| {
                    Some(Attempted {
                        destination_id: *applied.get(&attempt.delivery_id)?,
                        result: &attempt.result,
                        pause_destination_until: attempt.pause_destination_until,
                        at: attempt.at,
                    })
                });
                write_destination_changes(&mut transaction, recorded).await?;
                transaction.commit().await.db()?;
                Ok(())
            })
            .await
    }

    async fn list_notification_deliveries(
        &self,
        query: &DeliveryQuery,
    ) -> StoreResult<Vec<DeliveryRecord>> {
        sqlx::query(concat!(
            "SELECT ",
            delivery_columns!(),
            " FROM notification_deliveries WHERE destination_id = $1 \
             AND ($2 IS NULL OR state = $2) AND ($3 IS NULL OR id < $3) \
             ORDER BY id DESC LIMIT $4"
        ))
        .bind(query.destination_id)
        .bind(query.state.map(DeliveryState::as_str))
        .bind(query.before_id)
        .bind(i64::from(query.limit))
        .fetch_all(&self.pool)
        .await
        .db()?
        .iter()
        .map(read_delivery)
        .collect()
    }

    async fn purge_delivered_notifications(
        &self,
        before: Timestamp,
        limit: u32,
    ) -> StoreResult<u64> {
        // By the partial index of delivered rows by time: a purge reads only what it deletes.
        let purged = sqlx::query(
            "DELETE FROM notification_deliveries WHERE id IN (SELECT id FROM \
             notification_deliveries WHERE state = 'delivered' AND delivered_at < $1 \
             ORDER BY delivered_at LIMIT $2)",
        )
        .bind(micros(before))
        .bind(i64::from(limit))
        .execute(&self.pool)
        .await
        .db()?;
        Ok(purged.rows_affected())
    }

    async fn redeliver_notification(
        &self,
        destination_id: i64,
        delivery_id: i64,
        at: Timestamp,
    ) -> StoreResult<DeliveryRecord> {
        let row = sqlx::query(concat!(
            "UPDATE notification_deliveries SET state = 'pending', attempts = 0, \
             next_attempt_at = $1, updated_at = $1 \
             WHERE id = $2 AND destination_id = $3 AND state = 'dead' RETURNING ",
            delivery_columns!()
        ))
        .bind(micros(at))
        .bind(delivery_id)
        .bind(destination_id)
        .fetch_optional(&self.pool)
        .await
        .db()?;
        if let Some(row) = row {
            return read_delivery(&row);
        }
        let state = sqlx::query(
            "SELECT state FROM notification_deliveries WHERE id = $1 AND destination_id = $2",
        )
        .bind(delivery_id)
        .bind(destination_id)
        .fetch_optional(&self.pool)
        .await
        .db()?;
        match state {
            None => Err(StoreError::not_found("notification delivery", delivery_id)),
            Some(row) => Err(StoreError::Conflict {
                detail: format!(
                    "delivery {delivery_id} is {}: only a dead delivery is sent again",
                    rows::text(&row, "state")?
                ),
            }),
        }
    }
}

/// Rows one multi-row statement writes at most (a batch of more takes several).
const ROWS_PER_STATEMENT: usize = 256;

/// One UPDATE from a table of values: each attempt on its delivery, if still pending.
/// Answers the deliveries it changed, with their destinations.
fn record_deliveries(
    dialect: Dialect,
    attempts: &[DeliveryAttempt],
) -> StoreResult<sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments>> {
    let mut sql = SqlBuilder::many(
        dialect,
        "WITH attempted (id, state, error, detail, at, retry_at) AS (",
    );
    sql.value_rows(dialect, 6, attempts.len(), |sql, index| {
        let attempt = &attempts[index];
        let (state, error, detail, retry_at) = match &attempt.result {
            AttemptResult::Delivered { detail } => {
                (DeliveryState::Delivered, None, Some(detail.clone()), None)
            }
            AttemptResult::Retry { error, retry_at } => (
                DeliveryState::Pending,
                Some(error.clone()),
                None,
                Some(micros(*retry_at)),
            ),
            AttemptResult::Dead { error } => (DeliveryState::Dead, Some(error.clone()), None, None),
        };
        sql.bind(attempt.delivery_id)?.push(", ");
        sql.bind(state.as_str().to_string())?.push(", ");
        sql.bind(error)?.push(", ");
        sql.bind(detail)?.push(", ");
        sql.bind(micros(attempt.at))?.push(", ");
        sql.bind(retry_at)?;
        Ok(())
    })?;
    sql.push(
        ") UPDATE notification_deliveries SET attempts = attempts + 1, \
         state = attempted.state, last_error = COALESCE(attempted.error, last_error), \
         delivered_detail = attempted.detail, \
         delivered_at = CASE WHEN attempted.state = 'delivered' THEN attempted.at ELSE NULL END, \
         next_attempt_at = COALESCE(attempted.retry_at, next_attempt_at), \
         updated_at = attempted.at \
         FROM attempted WHERE notification_deliveries.id = attempted.id \
         AND notification_deliveries.state = 'pending' \
         RETURNING notification_deliveries.id, notification_deliveries.destination_id",
    );
    Ok(sql.build())
}

/// One attempt as the destination's record sees it: whose, how it ended, when.
struct Attempted<'a> {
    destination_id: i64,
    result: &'a AttemptResult,
    pause_destination_until: Option<Timestamp>,
    at: Timestamp,
}

/// What a batch of attempts changes on a destination: what the last of them to set each
/// field would have left, had they been recorded one by one.
#[derive(Debug, Default, PartialEq)]
struct DestinationChange {
    last_error: Option<String>,
    last_error_at: Option<Timestamp>,
    last_delivered_at: Option<Timestamp>,
    paused_until: Option<Timestamp>,
}

impl DestinationChange {
    /// The statement that writes the change on the destination, leaving the fields it does
    /// not set as they are.
    fn apply(
        self,
        destination_id: i64,
    ) -> sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments> {
        sqlx::query(
            "UPDATE notification_destinations SET \
             last_error = COALESCE($1, last_error), \
             last_error_at = COALESCE($2, last_error_at), \
             last_delivered_at = COALESCE($3, last_delivered_at), \
             paused_until = COALESCE($4, paused_until) WHERE id = $5",
        )
        .bind(self.last_error)
        .bind(self.last_error_at.map(micros))
        .bind(self.last_delivered_at.map(micros))
        .bind(self.paused_until.map(micros))
        .bind(destination_id)
    }
}

/// Records `attempts` on their destinations (`destination_changes`), in `transaction`.
async fn write_destination_changes<'a>(
    transaction: &mut sqlx::Transaction<'_, sqlx::Any>,
    attempts: impl IntoIterator<Item = Attempted<'a>>,
) -> StoreResult<()> {
    for (destination_id, change) in destination_changes(attempts) {
        change
            .apply(destination_id)
            .execute(&mut **transaction)
            .await
            .db()?;
    }
    Ok(())
}

/// Per destination, the change of the `attempts`, in their order.
fn destination_changes<'a>(
    attempts: impl IntoIterator<Item = Attempted<'a>>,
) -> BTreeMap<i64, DestinationChange> {
    let mut changes: BTreeMap<i64, DestinationChange> = BTreeMap::new();
    for attempt in attempts {
        let change = changes.entry(attempt.destination_id).or_default();
        match attempt.result {
            AttemptResult::Delivered { .. } => change.last_delivered_at = Some(attempt.at),
            AttemptResult::Retry { error, .. } | AttemptResult::Dead { error } => {
                change.last_error = Some(error.clone());
                change.last_error_at = Some(attempt.at);
            }
        }
        if let Some(pause) = attempt.pause_destination_until {
            change.paused_until = Some(pause);
        }
    }
    changes
}

/// The columns a new delivery is written with: pending and untried, or as its first
/// attempt left it (the same columns `record_deliveries` sets after an attempt).
#[derive(Debug, PartialEq)]
struct NewRow {
    state: DeliveryState,
    attempts: i64,
    next_attempt_at: Timestamp,
    last_error: Option<String>,
    delivered_detail: Option<String>,
    delivered_at: Option<Timestamp>,
    updated_at: Timestamp,
}

impl NewRow {
    fn of(delivery: &NewDelivery, queued_at: Timestamp) -> NewRow {
        let untried = NewRow {
            state: DeliveryState::Pending,
            attempts: 0,
            next_attempt_at: queued_at,
            last_error: None,
            delivered_detail: None,
            delivered_at: None,
            updated_at: queued_at,
        };
        let Some(first) = &delivery.first_attempt else {
            return untried;
        };
        let tried = NewRow {
            attempts: 1,
            next_attempt_at: first.at,
            updated_at: first.at,
            ..untried
        };
        match &first.result {
            AttemptResult::Delivered { detail } => NewRow {
                state: DeliveryState::Delivered,
                delivered_detail: Some(detail.clone()),
                delivered_at: Some(first.at),
                ..tried
            },
            AttemptResult::Retry { error, retry_at } => NewRow {
                last_error: Some(error.clone()),
                next_attempt_at: *retry_at,
                ..tried
            },
            AttemptResult::Dead { error } => NewRow {
                state: DeliveryState::Dead,
                last_error: Some(error.clone()),
                ..tried
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use sleuth_store::FirstAttempt;

    fn new_delivery(first_attempt: Option<FirstAttempt>) -> NewDelivery {
        NewDelivery {
            system_event_id: 7,
            event_id: "e".into(),
            event: "{}".into(),
            first_attempt,
        }
    }

    #[test]
    fn a_new_delivery_is_written_as_its_first_attempt_left_it() {
        let queued = Utc::now();
        let tried = queued + chrono::Duration::milliseconds(40);
        let retry_at = tried + chrono::Duration::seconds(5);
        let first = |result| {
            Some(FirstAttempt {
                result,
                pause_destination_until: None,
                at: tried,
            })
        };
        let untried = NewRow::of(&new_delivery(None), queued);
        assert_eq!(
            (untried.state, untried.attempts, untried.next_attempt_at),
            (DeliveryState::Pending, 0, queued)
        );
        let delivered = NewRow::of(
            &new_delivery(first(AttemptResult::Delivered {
                detail: "HTTP 200".into(),
            })),
            queued,
        );
        assert_eq!(
            delivered,
            NewRow {
                state: DeliveryState::Delivered,
                attempts: 1,
                next_attempt_at: tried,
                last_error: None,
                delivered_detail: Some("HTTP 200".into()),
                delivered_at: Some(tried),
                updated_at: tried,
            }
        );
        let retried = NewRow::of(
            &new_delivery(first(AttemptResult::Retry {
                error: "HTTP 503".into(),
                retry_at,
            })),
            queued,
        );
        assert_eq!(
            (retried.state, retried.attempts, retried.next_attempt_at),
            (DeliveryState::Pending, 1, retry_at)
        );
        assert_eq!(retried.last_error.as_deref(), Some("HTTP 503"));
        let dead = NewRow::of(
            &new_delivery(first(AttemptResult::Dead {
                error: "refused: HTTP 404".into(),
            })),
            queued,
        );
        assert_eq!((dead.state, dead.attempts), (DeliveryState::Dead, 1));
        assert_eq!(dead.delivered_at, None);
    }
}
