//! Notification destinations and deliveries (`sleuth_store::NotificationStore`): settings,
//! the lease a deliverer holds, the cursor into the system events moved with the
//! deliveries it queued, and every attempt recorded on its delivery.

use async_trait::async_trait;
use sleuth_domain::Timestamp;
use sleuth_store::{
    AttemptResult, DeliveryAttempt, DeliveryBatch, DeliveryQuery, DeliveryRecord, DeliveryState,
    NewNotificationDestination, NotificationDestinationChanges, NotificationDestinationRecord,
    NotificationStore, StoreError, StoreResult,
};
use sqlx::any::AnyRow;

use crate::rows::{self, micros};
use crate::{DbResultExt, SqlStore};

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
        let row = sqlx::query(concat!(
            "SELECT ",
            destination_columns!(),
            " FROM notification_destinations WHERE id = $1"
        ))
        .bind(destination_id)
        .fetch_optional(&self.pool)
        .await
        .db()?
        .ok_or_else(|| StoreError::not_found("notification destination", destination_id))?;
        read_destination(&row)
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
                for delivery in &batch.deliveries {
                    sqlx::query(
                        "INSERT INTO notification_deliveries (destination_id, system_event_id, \
                         event_id, event, state, next_attempt_at, created_at, updated_at) \
                         VALUES ($1, $2, $3, $4, 'pending', $5, $5, $5) \
                         ON CONFLICT (destination_id, system_event_id) DO NOTHING",
                    )
                    .bind(batch.destination_id)
                    .bind(delivery.system_event_id)
                    .bind(&delivery.event_id)
                    .bind(delivery.event.to_string())
                    .bind(at)
                    .execute(&mut *transaction)
                    .await
                    .db()?;
                }
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

    async fn record_notification_attempt(&self, attempt: &DeliveryAttempt) -> StoreResult<()> {
        let at = micros(attempt.at);
        let (state, error, detail, retry_at) = match &attempt.result {
            AttemptResult::Delivered { detail } => {
                (DeliveryState::Delivered, None, Some(detail.as_str()), None)
            }
            AttemptResult::Retry { error, retry_at } => (
                DeliveryState::Pending,
                Some(error.as_str()),
                None,
                Some(micros(*retry_at)),
            ),
            AttemptResult::Dead { error } => {
                (DeliveryState::Dead, Some(error.as_str()), None, None)
            }
        };
        let pause = attempt.pause_destination_until.map(micros);
        self.writers
            .write(async |connection| {
                let (_write_turn, mut transaction) =
                    crate::begin_write(connection, self.dialect).await?;
                let row = sqlx::query(
                    "UPDATE notification_deliveries SET attempts = attempts + 1, state = $1, \
                     last_error = COALESCE($2, last_error), delivered_detail = $3, \
                     delivered_at = CASE WHEN $1 = 'delivered' THEN $4 ELSE NULL END, \
                     next_attempt_at = COALESCE($5, next_attempt_at), updated_at = $4 \
                     WHERE id = $6 AND state = 'pending' RETURNING destination_id",
                )
                .bind(state.as_str())
                .bind(error)
                .bind(detail)
                .bind(at)
                .bind(retry_at)
                .bind(attempt.delivery_id)
                .fetch_optional(&mut *transaction)
                .await
                .db()?;
                // Already recorded (delivered, dead) by whoever held the lease after us.
                let Some(row) = row else {
                    return Ok(());
                };
                let destination_id = rows::int(&row, "destination_id")?;
                sqlx::query(
                    "UPDATE notification_destinations SET \
                     last_error = COALESCE($1, last_error), \
                     last_error_at = CASE WHEN $1 IS NULL THEN last_error_at ELSE $2 END, \
                     last_delivered_at = CASE WHEN $1 IS NULL THEN $2 ELSE last_delivered_at END, \
                     paused_until = COALESCE($3, paused_until) WHERE id = $4",
                )
                .bind(error)
                .bind(at)
                .bind(pause)
                .bind(destination_id)
                .execute(&mut *transaction)
                .await
                .db()?;
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
