//! Reading typed values out of `AnyRow`s. Both backends store only integers, text and
//! nulls (times as microseconds since the Unix epoch, UTC; JSON as text), so one set of
//! readers serves both.

use serde::de::DeserializeOwned;
use sleuth_domain::{Priority, Timestamp};
use sleuth_store::{StoreError, StoreResult};
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::DbResultExt;

pub fn micros(time: Timestamp) -> i64 {
    time.timestamp_micros()
}

pub fn from_micros(value: i64) -> StoreResult<Timestamp> {
    chrono::DateTime::from_timestamp_micros(value)
        .ok_or_else(|| StoreError::internal(format!("stored time {value} is out of range")))
}

/// Whether the row has this column: which statement of a multi-statement run
/// (`builder::Statements`) a row came from.
pub fn has_column(row: &AnyRow, column: &str) -> bool {
    row.try_column(column).is_ok()
}

pub fn int(row: &AnyRow, column: &str) -> StoreResult<i64> {
    row.try_get::<i64, _>(column).db()
}

pub fn opt_int(row: &AnyRow, column: &str) -> StoreResult<Option<i64>> {
    row.try_get::<Option<i64>, _>(column).db()
}

pub fn flag(row: &AnyRow, column: &str) -> StoreResult<bool> {
    Ok(int(row, column)? != 0)
}

pub fn text(row: &AnyRow, column: &str) -> StoreResult<String> {
    row.try_get::<String, _>(column).db()
}

pub fn opt_text(row: &AnyRow, column: &str) -> StoreResult<Option<String>> {
    row.try_get::<Option<String>, _>(column).db()
}

pub fn time(row: &AnyRow, column: &str) -> StoreResult<Timestamp> {
    from_micros(int(row, column)?)
}

pub fn opt_time(row: &AnyRow, column: &str) -> StoreResult<Option<Timestamp>> {
    opt_int(row, column)?.map(from_micros).transpose()
}

pub fn json<T: DeserializeOwned>(row: &AnyRow, column: &str) -> StoreResult<T> {
    parse_json(column, &text(row, column)?)
}

pub fn opt_json<T: DeserializeOwned>(row: &AnyRow, column: &str) -> StoreResult<Option<T>> {
    opt_text(row, column)?
        .map(|raw| parse_json(column, &raw))
        .transpose()
}

/// A stored enum spelled as its wire value.
pub fn parsed<T, E: std::fmt::Display>(
    row: &AnyRow,
    column: &str,
    parse: impl Fn(&str) -> Result<T, E>,
) -> StoreResult<T> {
    let raw = text(row, column)?;
    parse(&raw).map_err(|error| StoreError::internal(format!("column {column}: {error}")))
}

pub fn opt_parsed<T, E: std::fmt::Display>(
    row: &AnyRow,
    column: &str,
    parse: impl Fn(&str) -> Result<T, E>,
) -> StoreResult<Option<T>> {
    opt_text(row, column)?
        .map(|raw| {
            parse(&raw).map_err(|error| StoreError::internal(format!("column {column}: {error}")))
        })
        .transpose()
}

fn parse_json<T: DeserializeOwned>(column: &str, raw: &str) -> StoreResult<T> {
    serde_json::from_str(raw)
        .map_err(|error| StoreError::internal(format!("column {column} holds bad JSON: {error}")))
}

pub fn to_json<T: serde::Serialize>(value: &T) -> StoreResult<String> {
    serde_json::to_string(value)
        .map_err(|error| StoreError::internal(format!("cannot serialise for storage: {error}")))
}

/// Sort rank of a priority: none < informational < notable < urgent.
pub fn priority_rank(priority: Option<Priority>) -> i64 {
    match priority {
        None => 0,
        Some(Priority::Informational) => 1,
        Some(Priority::Notable) => 2,
        Some(Priority::Urgent) => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_ranks_order_urgent_highest() {
        assert!(priority_rank(Some(Priority::Urgent)) > priority_rank(Some(Priority::Notable)));
        assert!(priority_rank(Some(Priority::Informational)) > priority_rank(None));
    }
}
