//! The readiness check's own connection. `/readyz` asks whether the database answers and is
//! migrated; under a flood every pooled connection is held by API requests, and a check that
//! queued behind them would call a busy database a missing one. So the check keeps one
//! connection of its own, made from the pool's options, outside the pool, and makes it
//! again after any failure.

use sleuth_store::{StoreError, StoreResult};
use sqlx::{AnyConnection, AnyPool, ConnectOptions};
use tokio::sync::Mutex;

use crate::Migration;
use crate::migrate;

pub(crate) struct ReadinessConnection {
    pool: AnyPool,
    connection: Mutex<Option<AnyConnection>>,
}

impl ReadinessConnection {
    pub(crate) fn new(pool: AnyPool) -> ReadinessConnection {
        ReadinessConnection {
            pool,
            connection: Mutex::new(None),
        }
    }

    /// Succeeds when the database answers on the check's connection and every migration
    /// this build knows is applied.
    pub(crate) async fn check(&self, migrations: &[Migration]) -> StoreResult<()> {
        let mut slot = self.connection.lock().await;
        let connection = match slot.as_mut() {
            Some(connection) => connection,
            None => {
                let connection = self
                    .pool
                    .connect_options()
                    .connect()
                    .await
                    .map_err(|error| StoreError::Unavailable(Box::new(error)))?;
                slot.insert(connection)
            }
        };
        let result = migrate::check(&mut *connection, migrations).await;
        if result.is_err() {
            // A broken connection is not kept: the next check connects again.
            *slot = None;
        }
        result
    }
}
