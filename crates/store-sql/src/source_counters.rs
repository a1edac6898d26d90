//! The order in which a transaction takes the burst guard's source counters on PostgreSQL
//! (`alert_source_counters`, migration 0025): the trigger that numbers new alerts takes
//! the counters of one statement's alerts in key order, but a transaction that stores its
//! alerts in several statements (a create batch of more alerts than one statement holds,
//! a batch replayed one create at a time, a connector page stored one alert at a time)
//! would take them statement by statement, in the order its alerts came. Two such
//! transactions with the same sources in different orders each hold a counter the other
//! waits for: a deadlock, which PostgreSQL breaks by failing one of them.
//!
//! So such a transaction first takes every counter its alerts may need, in key order, in
//! one statement; the statements after it only take counters it already holds. SQLite
//! needs none of this: its writers take turns (`BEGIN IMMEDIATE`).

use std::collections::BTreeSet;

use sleuth_store::{NewAlert, StoreResult};
use sqlx::AnyConnection;

use crate::builder::SqlBuilder;
use crate::{DbResultExt, Dialect};

/// Takes, on an open transaction, the counters of the sources and tenant unions of
/// `alerts`, in key order, creating those that do not exist yet (at position 0: the first
/// alert stored takes position 1, as it would have without them). Call it before storing
/// alerts with more than one statement; an alert that turns out not to be stored (a
/// repeat) only held its counter a little longer.
pub(crate) async fn take_in_key_order<'a>(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    alerts: impl Iterator<Item = &'a NewAlert>,
) -> StoreResult<()> {
    if dialect != Dialect::Postgres {
        return Ok(());
    }
    let keys: BTreeSet<(&str, i64)> = alerts
        .map(|alert| {
            (
                alert.parsed.direct_source_label.as_str(),
                alert.tenant_union_id,
            )
        })
        .collect();
    let Some(statement) = statement(&keys)? else {
        return Ok(());
    };
    statement.build().execute(&mut *transaction).await.db()?;
    Ok(())
}

/// The statement that takes the counters of `keys`, or `None` when there are none. The
/// order is the database's, the one the trigger takes them in (`ORDER BY` the same
/// columns): a collation may sort labels otherwise than Rust does.
fn statement(keys: &BTreeSet<(&str, i64)>) -> StoreResult<Option<SqlBuilder>> {
    if keys.is_empty() {
        return Ok(None);
    }
    let mut sql = SqlBuilder::new(
        "INSERT INTO alert_source_counters AS counter (direct_source_label, tenant_union_id, \
         last_position) SELECT direct_source_label, tenant_union_id, 0 FROM (VALUES ",
    );
    for (index, (label, tenant_union_id)) in keys.iter().enumerate() {
        sql.push(if index == 0 { "(" } else { ", (" });
        sql.bind(label.to_string())?.push(", ");
        sql.bind(*tenant_union_id)?.push(")");
    }
    // The update changes nothing; it is there for the row lock it takes.
    sql.push(
        ") AS taken (direct_source_label, tenant_union_id) \
         ORDER BY direct_source_label, tenant_union_id \
         ON CONFLICT (direct_source_label, tenant_union_id) \
         DO UPDATE SET last_position = counter.last_position",
    );
    Ok(Some(sql))
}
