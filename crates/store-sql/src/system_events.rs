//! System events over the shared SQL: one row per trigger that fired, listed newest first
//! with filters by trigger name, time and free text over the arguments.

use async_trait::async_trait;
use serde_json::{Map, Value};
use sleuth_domain::Timestamp;
use sleuth_store::*;
use sqlx::AnyPool;

use crate::builder::SqlBuilder;
use crate::context_memory::push_words;
use crate::rows::{self, micros};
use crate::{DbResultExt, Dialect, SqlStore};

pub async fn record_system_events(
    pool: &AnyPool,
    dialect: Dialect,
    events: &[NewSystemEvent],
    at: Timestamp,
) -> StoreResult<()> {
    if events.is_empty() {
        return Ok(());
    }
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    for event in events {
        let arguments = rows::to_json(&event.trigger_args)?;
        sqlx::query(
            "INSERT INTO system_events (trigger_name, trigger_args, search_text, investigation_id, \
             entity, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&event.trigger_name)
        .bind(&arguments)
        .bind(searchable(&Value::Object(event.trigger_args.clone())))
        .bind(event.investigation_id)
        .bind(event.entity.as_deref())
        .bind(micros(at))
        .execute(&mut *transaction)
        .await
        .db()?;
    }
    transaction.commit().await.db()
}

/// The arguments as the free-text filter sees them: every key and value, unescaped (a
/// search for `corp\j.smith` finds the account however JSON escapes it), in lower case.
fn searchable(value: &Value) -> String {
    fn walk(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    out.push_str(key);
                    out.push('\n');
                    walk(child, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, out)),
            Value::String(text) => {
                out.push_str(text);
                out.push('\n');
            }
            scalar => {
                out.push_str(&scalar.to_string());
                out.push('\n');
            }
        }
    }
    let mut out = String::new();
    walk(value, &mut out);
    out.to_lowercase()
}

pub async fn list_system_events(
    pool: &AnyPool,
    query: &SystemEventQuery,
) -> StoreResult<SystemEventPage> {
    let mut count = SqlBuilder::new("SELECT COUNT(*) FROM system_events WHERE 1 = 1");
    push_filters(&mut count, query)?;
    let mut page = SqlBuilder::new(
        "SELECT id, trigger_name, trigger_args, investigation_id, entity, created_at \
         FROM system_events WHERE 1 = 1",
    );
    push_filters(&mut page, query)?;
    page.push(" ORDER BY created_at DESC, id DESC");
    page.limit_offset(query.limit, query.offset)?;
    let mut connection = pool.acquire().await.db()?;
    let total: i64 = count
        .build_scalar()
        .fetch_one(&mut *connection)
        .await
        .db()?;
    let found = page.build().fetch_all(&mut *connection).await.db()?;
    let items = found
        .iter()
        .map(|row| {
            Ok(SystemEventRecord {
                id: rows::int(row, "id")?,
                trigger_name: rows::text(row, "trigger_name")?,
                trigger_args: rows::json::<Map<String, Value>>(row, "trigger_args")?,
                investigation_id: rows::opt_int(row, "investigation_id")?,
                entity: rows::opt_text(row, "entity")?,
                created_at: rows::time(row, "created_at")?,
            })
        })
        .collect::<StoreResult<Vec<_>>>()?;
    Ok(SystemEventPage {
        total: u64::try_from(total).unwrap_or(0),
        items,
    })
}

fn push_filters(builder: &mut SqlBuilder, query: &SystemEventQuery) -> StoreResult<()> {
    if !query.trigger_names.is_empty() {
        builder.push(" AND trigger_name IN ");
        builder.bind_list(query.trigger_names.iter().cloned())?;
    }
    if let Some(from) = query.time.from {
        builder.push(" AND created_at >= ");
        builder.bind(micros(from))?;
    }
    if let Some(until) = query.time.until {
        builder.push(" AND created_at <= ");
        builder.bind(micros(until))?;
    }
    if let Some(search) = &query.search {
        push_words(builder, "search_text", search)?;
    }
    Ok(())
}

#[async_trait]
impl SystemEventStore for SqlStore {
    async fn record_system_events(
        &self,
        events: &[NewSystemEvent],
        at: Timestamp,
    ) -> StoreResult<()> {
        record_system_events(&self.pool, self.dialect, events, at).await
    }

    async fn list_system_events(&self, query: &SystemEventQuery) -> StoreResult<SystemEventPage> {
        list_system_events(&self.pool, query).await
    }
}
