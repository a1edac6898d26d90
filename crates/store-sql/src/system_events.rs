//! System events over the shared SQL: one row per trigger that fired, listed newest first
//! with filters by trigger name, time and free text over the arguments.

use async_trait::async_trait;
use serde_json::{Map, Value};
use sleuth_domain::Timestamp;
use sleuth_store::*;
use sqlx::AnyPool;

use crate::builder::{SqlBuilder, Statements};
use crate::context_memory::push_words;
use crate::group_commit::{BatchWrite, GroupCommit, all_or_nothing};
use crate::rows::{self, micros};
use crate::writer_connection::WriterConnections;
use crate::{DbResultExt, Dialect, SqlStore};

/// One firing's events, on their way to the store.
pub(crate) struct Recording {
    events: Vec<NewSystemEvent>,
    at: Timestamp,
}

/// The group-commit writer of system events: every investigation that concludes fires
/// two or three triggers, so at a thousand investigations a second one transaction per
/// firing would be most of the database's write turns.
pub(crate) struct SystemEventWriter {
    pub(crate) connections: WriterConnections,
    pub(crate) dialect: Dialect,
}

#[async_trait]
impl BatchWrite for SystemEventWriter {
    type Request = Recording;
    type Output = ();

    async fn write(&self, batch: &[Recording]) -> Vec<StoreResult<()>> {
        let inserted = insert_all(&self.connections, self.dialect, batch)
            .await
            .map(|()| vec![(); batch.len()]);
        all_or_nothing("system events", batch.len(), inserted)
    }
}

/// Rows per INSERT: 6 parameters each, far below both databases' parameter limits.
const ROWS_PER_STATEMENT: usize = 500;

async fn insert_all(
    connections: &WriterConnections,
    dialect: Dialect,
    batch: &[Recording],
) -> StoreResult<()> {
    let rows: Vec<(&NewSystemEvent, Timestamp)> = batch
        .iter()
        .flat_map(|recording| recording.events.iter().map(|event| (event, recording.at)))
        .collect();
    if rows.is_empty() {
        return Ok(());
    }
    let mut statements = Statements::new(dialect);
    insert_in(&mut statements, dialect, &rows)?;
    connections
        .write(async |connection| {
            let (_write_turn, mut transaction) = crate::begin_write(connection, dialect).await?;
            statements.run(&mut transaction).await?;
            transaction.commit().await.db()
        })
        .await
}

/// Writes the inserts of the events, each with its time, for a write transaction (this
/// writer's own, or a finish batch's: an investigation's events are stored with its
/// result).
pub(crate) fn insert_in(
    statements: &mut Statements,
    dialect: Dialect,
    rows: &[(&NewSystemEvent, Timestamp)],
) -> StoreResult<()> {
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let sql = statements.next(
            "INSERT INTO system_events (trigger_name, trigger_args, search_text, \
             investigation_id, entity, created_at)",
        );
        sql.value_rows(dialect, 6, chunk.len(), |sql, index| {
            let (event, at) = chunk[index];
            sql.bind(event.trigger_name.clone())?.push(", ");
            sql.bind(rows::to_json(&event.trigger_args)?)?.push(", ");
            sql.bind(searchable(&Value::Object(event.trigger_args.clone())))?
                .push(", ");
            sql.bind(event.investigation_id)?.push(", ");
            sql.bind(event.entity.clone())?.push(", ");
            sql.bind(micros(at))?;
            Ok(())
        })?;
    }
    Ok(())
}

pub(crate) async fn record_system_events(
    writer: &GroupCommit<SystemEventWriter>,
    events: &[NewSystemEvent],
    at: Timestamp,
) -> StoreResult<()> {
    if events.is_empty() {
        return Ok(());
    }
    writer
        .submit(Recording {
            events: events.to_vec(),
            at,
        })
        .await
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

pub(crate) async fn list_system_events(
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
    page.limit_offset(query.limit, query.offset);
    let mut connection = pool.acquire().await.db()?;
    let total: i64 = count
        .build_scalar()
        .fetch_one(&mut *connection)
        .await
        .db()?;
    let found = page.build().fetch_all(&mut *connection).await.db()?;
    let items = found.iter().map(record).collect::<StoreResult<Vec<_>>>()?;
    Ok(SystemEventPage {
        total: u64::try_from(total).unwrap_or(0),
        items,
    })
}

fn record(row: &sqlx::any::AnyRow) -> StoreResult<SystemEventRecord> {
    Ok(SystemEventRecord {
        id: rows::int(row, "id")?,
        trigger_name: rows::text(row, "trigger_name")?,
        trigger_args: rows::json::<Map<String, Value>>(row, "trigger_args")?,
        investigation_id: rows::opt_int(row, "investigation_id")?,
        entity: rows::opt_text(row, "entity")?,
        created_at: rows::time(row, "created_at")?,
    })
}

pub(crate) async fn newest_system_event_id(pool: &AnyPool) -> StoreResult<i64> {
    let newest: Option<i64> = SqlBuilder::new("SELECT MAX(id) FROM system_events")
        .build_scalar()
        .fetch_one(pool)
        .await
        .db()?;
    Ok(newest.unwrap_or(0))
}

pub(crate) async fn system_event_ids_after(
    pool: &AnyPool,
    after_id: i64,
    limit: u32,
) -> StoreResult<Vec<i64>> {
    let mut ids = SqlBuilder::new("SELECT id FROM system_events WHERE id > ");
    ids.bind(after_id)?;
    ids.push(" ORDER BY id");
    ids.limit_offset(limit, 0);
    ids.build_scalar().fetch_all(pool).await.db()
}

pub(crate) async fn system_events_after(
    pool: &AnyPool,
    query: &SystemEventsAfter,
) -> StoreResult<Vec<SystemEventRecord>> {
    let mut page = SqlBuilder::new("");
    push_events_after(&mut page, query)?;
    let found = page.build().fetch_all(pool).await.db()?;
    found.iter().map(record).collect()
}

/// SQLite's plan for `system_events_after` with `query`, one line per step of `EXPLAIN
/// QUERY PLAN`: the backend's tests check that a read of a few new events never walks
/// every event of the names it filters on.
pub async fn sqlite_system_events_after_plan(
    pool: &AnyPool,
    query: &SystemEventsAfter,
) -> StoreResult<Vec<String>> {
    crate::builder::sqlite_plan(pool, |sql| push_events_after(sql, query)).await
}

/// The read of `system_events_after`.
fn push_events_after(page: &mut SqlBuilder, query: &SystemEventsAfter) -> StoreResult<()> {
    page.push(
        "SELECT id, trigger_name, trigger_args, investigation_id, entity, created_at \
         FROM system_events WHERE id > ",
    );
    page.bind(query.after_id)?.push(" AND id <= ");
    page.bind(query.through_id)?;
    if !query.trigger_names.is_empty() {
        // Filtered within the span of ids, never by the trigger index: given a name, the
        // planner (SQLite's, without statistics) would walk every event of that name ever
        // recorded, on each read of a few new ones. `|| ''` keeps the column off the index.
        page.push(" AND (trigger_name || '') IN ");
        page.bind_list(query.trigger_names.iter().cloned())?;
    }
    push_filters(
        page,
        &SystemEventQuery {
            scope: query.scope.clone(),
            ..SystemEventQuery::default()
        },
    )?;
    page.push(" ORDER BY id");
    page.limit_offset(query.limit, 0);
    Ok(())
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
    if !query.scope.is_all() {
        builder.push(
            " AND investigation_id IN (SELECT scoped.id FROM investigations scoped WHERE 1 = 1",
        );
        crate::scope::push_union_filter(builder, "scoped.tenant_union_id", &query.scope)?;
        builder.push(")");
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
        record_system_events(&self.system_events, events, at).await
    }

    async fn list_system_events(&self, query: &SystemEventQuery) -> StoreResult<SystemEventPage> {
        list_system_events(&self.pool, query).await
    }

    async fn newest_system_event_id(&self) -> StoreResult<i64> {
        newest_system_event_id(&self.pool).await
    }

    async fn system_event_ids_after(&self, after_id: i64, limit: u32) -> StoreResult<Vec<i64>> {
        system_event_ids_after(&self.pool, after_id, limit).await
    }

    async fn system_events_after(
        &self,
        query: &SystemEventsAfter,
    ) -> StoreResult<Vec<SystemEventRecord>> {
        system_events_after(&self.pool, query).await
    }
}
