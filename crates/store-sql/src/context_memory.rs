//! Context memory over the shared SQL: items with their scope, and one row per entity
//! they name under its match key, so that history finds an alert's items with one
//! indexed lookup. The scope rule lives here, once: an item applies to an alert when its
//! tenant union (if any) is the alert's and its tenant id (if any) is the alert's.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sleuth_domain::{Entity, MemoryItem, MemoryVerdict, Timestamp};
use sleuth_store::*;
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, AnyPool};

use crate::builder::SqlBuilder;
use crate::rows::{self, micros};
use crate::users::{read_user, user_columns};
use crate::{DbResultExt, Dialect, SqlStore};

/// At most this many items are shown to the engine for one alert, newest first.
const MEMORY_ITEMS_PER_ALERT: usize = 20;
/// At most this many free-text words filter a list.
const SEARCH_WORDS: usize = 16;

const SELECT_ITEMS: &str = "SELECT id, text, tenant_union_id, tenant_id, tenant_label, hints, \
    entities, created_by, updated_by, created_at, updated_at FROM context_memory_items";

/// A hint as stored in the item's `hints` column.
#[derive(Debug, Serialize, Deserialize)]
struct StoredHint {
    entity: Entity,
    verdict: Option<MemoryVerdict>,
    note: Option<String>,
}

fn verdict_text(verdict: MemoryVerdict) -> &'static str {
    match verdict {
        MemoryVerdict::Benign => "benign",
        MemoryVerdict::Malicious => "malicious",
    }
}

fn search_text(item: &NewMemoryItem) -> String {
    let mut text = item.text.to_lowercase();
    for entity in item
        .entities
        .iter()
        .chain(item.hints.iter().map(|hint| &hint.entity))
    {
        text.push('\n');
        text.push_str(&entity.value.to_lowercase());
    }
    for note in item.hints.iter().filter_map(|hint| hint.note.as_deref()) {
        text.push('\n');
        text.push_str(&note.to_lowercase());
    }
    text
}

async fn check_tenant_union(
    connection: &mut AnyConnection,
    tenant_union_id: Option<i64>,
) -> StoreResult<()> {
    let Some(tenant_union_id) = tenant_union_id else {
        return Ok(());
    };
    let found: Option<i64> = sqlx::query_scalar("SELECT id FROM tenant_unions WHERE id = $1")
        .bind(tenant_union_id)
        .fetch_optional(&mut *connection)
        .await
        .db()?;
    match found {
        Some(_) => Ok(()),
        None => Err(StoreError::Rejected {
            detail: format!(
                "tenant_union_id: there is no tenant union {tenant_union_id}; list them with GET /app/api/v1/tenant-unions"
            ),
        }),
    }
}

async fn write_entities(
    connection: &mut AnyConnection,
    item_id: i64,
    item: &NewMemoryItem,
) -> StoreResult<()> {
    sqlx::query("DELETE FROM context_memory_entities WHERE item_id = $1")
        .bind(item_id)
        .execute(&mut *connection)
        .await
        .db()?;
    let hinted = item.hints.iter().map(|hint| {
        (
            &hint.entity,
            hint.verdict.map(verdict_text),
            hint.note.as_deref(),
        )
    });
    let found = item.entities.iter().map(|entity| (entity, None, None));
    for (entity, verdict, note) in hinted.chain(found) {
        sqlx::query(
            "INSERT INTO context_memory_entities (item_id, match_key, kind, value, verdict, note) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(item_id)
        .bind(memory_key(entity))
        .bind(entity.kind.as_str())
        .bind(&entity.value)
        .bind(verdict)
        .bind(note)
        .execute(&mut *connection)
        .await
        .db()?;
    }
    Ok(())
}

fn stored_hints(item: &NewMemoryItem) -> StoreResult<String> {
    let hints: Vec<StoredHint> = item
        .hints
        .iter()
        .map(|hint| StoredHint {
            entity: hint.entity.clone(),
            verdict: hint.verdict,
            note: hint.note.clone(),
        })
        .collect();
    rows::to_json(&hints)
}

pub(crate) async fn create_memory_item(
    pool: &AnyPool,
    dialect: Dialect,
    item: &NewMemoryItem,
    at: Timestamp,
) -> StoreResult<MemoryItemRecord> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    check_tenant_union(&mut transaction, item.scope.tenant_union_id).await?;
    let item_id: i64 = sqlx::query_scalar(
        "INSERT INTO context_memory_items (text, tenant_union_id, tenant_id, tenant_label, hints, \
         entities, search_text, created_by, updated_by, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, $9) RETURNING id",
    )
    .bind(&item.text)
    .bind(item.scope.tenant_union_id)
    .bind(item.scope.tenant_id.as_deref())
    .bind(item.scope.tenant_label.as_deref())
    .bind(stored_hints(item)?)
    .bind(rows::to_json(&item.entities)?)
    .bind(search_text(item))
    .bind(item.author_id)
    .bind(micros(at))
    .fetch_one(&mut *transaction)
    .await
    .db()?;
    write_entities(&mut transaction, item_id, item).await?;
    transaction.commit().await.db()?;
    get_memory_item(pool, item_id).await
}

pub(crate) async fn update_memory_item(
    pool: &AnyPool,
    dialect: Dialect,
    item_id: i64,
    item: &NewMemoryItem,
    at: Timestamp,
) -> StoreResult<MemoryItemRecord> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    check_tenant_union(&mut transaction, item.scope.tenant_union_id).await?;
    let updated = sqlx::query(
        "UPDATE context_memory_items SET text = $2, tenant_union_id = $3, tenant_id = $4, \
         tenant_label = $5, hints = $6, entities = $7, search_text = $8, updated_by = $9, \
         updated_at = $10 WHERE id = $1",
    )
    .bind(item_id)
    .bind(&item.text)
    .bind(item.scope.tenant_union_id)
    .bind(item.scope.tenant_id.as_deref())
    .bind(item.scope.tenant_label.as_deref())
    .bind(stored_hints(item)?)
    .bind(rows::to_json(&item.entities)?)
    .bind(search_text(item))
    .bind(item.author_id)
    .bind(micros(at))
    .execute(&mut *transaction)
    .await
    .db()?;
    if updated.rows_affected() == 0 {
        return Err(StoreError::not_found("context memory item", item_id));
    }
    write_entities(&mut transaction, item_id, item).await?;
    transaction.commit().await.db()?;
    get_memory_item(pool, item_id).await
}

pub(crate) async fn delete_memory_item(
    pool: &AnyPool,
    dialect: Dialect,
    item_id: i64,
) -> StoreResult<()> {
    let mut connection = pool.acquire().await.db()?;
    let (_write_turn, mut transaction) = crate::begin_write(&mut connection, dialect).await?;
    sqlx::query("DELETE FROM context_memory_entities WHERE item_id = $1")
        .bind(item_id)
        .execute(&mut *transaction)
        .await
        .db()?;
    let deleted = sqlx::query("DELETE FROM context_memory_items WHERE id = $1")
        .bind(item_id)
        .execute(&mut *transaction)
        .await
        .db()?;
    if deleted.rows_affected() == 0 {
        return Err(StoreError::not_found("context memory item", item_id));
    }
    transaction.commit().await.db()
}

pub(crate) async fn get_memory_item(pool: &AnyPool, item_id: i64) -> StoreResult<MemoryItemRecord> {
    let mut connection = pool.acquire().await.db()?;
    let row = sqlx::query(sqlx::AssertSqlSafe(format!("{SELECT_ITEMS} WHERE id = $1")))
        .bind(item_id)
        .fetch_optional(&mut *connection)
        .await
        .db()?
        .ok_or_else(|| StoreError::not_found("context memory item", item_id))?;
    let mut items = read_items(&mut connection, &[row]).await?;
    items
        .pop()
        .ok_or_else(|| StoreError::not_found("context memory item", item_id))
}

pub(crate) async fn list_memory_items(
    pool: &AnyPool,
    query: &MemoryQuery,
) -> StoreResult<MemoryPage> {
    let mut count = SqlBuilder::new("SELECT COUNT(*) FROM context_memory_items WHERE 1 = 1");
    push_filters(&mut count, query)?;
    let mut page = SqlBuilder::new(&format!("{SELECT_ITEMS} WHERE 1 = 1"));
    push_filters(&mut page, query)?;
    page.push(" ORDER BY id DESC");
    page.limit_offset(query.limit, query.offset);
    let mut connection = pool.acquire().await.db()?;
    let total: i64 = count
        .build_scalar()
        .fetch_one(&mut *connection)
        .await
        .db()?;
    let found = page.build().fetch_all(&mut *connection).await.db()?;
    Ok(MemoryPage {
        total: u64::try_from(total).unwrap_or(0),
        items: read_items(&mut connection, &found).await?,
    })
}

fn push_filters(builder: &mut SqlBuilder, query: &MemoryQuery) -> StoreResult<()> {
    if query.global_only {
        builder.push(" AND tenant_union_id IS NULL AND tenant_id IS NULL");
    }
    if let Some(tenant_union_id) = query.tenant_union_id {
        builder.push(" AND tenant_union_id = ");
        builder.bind(tenant_union_id)?;
    }
    if let Some(tenant_id) = &query.tenant_id {
        builder.push(" AND tenant_id = ");
        builder.bind(tenant_id.clone())?;
    }
    if let Some(search) = &query.search {
        push_words(builder, "search_text", search)?;
    }
    crate::scope::push_union_filter(builder, "tenant_union_id", &query.scope)
}

/// `AND column LIKE '%word%'` for each word of `text`, in lower case, with LIKE's own
/// wildcards escaped: every word must appear, and `%` or `_` typed by a user are letters.
pub(crate) fn push_words(builder: &mut SqlBuilder, column: &str, text: &str) -> StoreResult<()> {
    for word in text.split_whitespace().take(SEARCH_WORDS) {
        let escaped = word
            .to_lowercase()
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        builder.push(&format!(" AND {column} LIKE "));
        builder.bind(format!("%{escaped}%"))?;
        builder.push(" ESCAPE '\\'");
    }
    Ok(())
}

/// Items from `SELECT_ITEMS` rows, with their authors read in one query.
async fn read_items(
    connection: &mut AnyConnection,
    found: &[AnyRow],
) -> StoreResult<Vec<MemoryItemRecord>> {
    let mut user_ids: Vec<i64> = Vec::new();
    for row in found {
        for column in ["created_by", "updated_by"] {
            if let Some(user_id) = rows::opt_int(row, column)?
                && !user_ids.contains(&user_id)
            {
                user_ids.push(user_id);
            }
        }
    }
    let mut users = BTreeMap::new();
    if !user_ids.is_empty() {
        let mut builder = SqlBuilder::new(concat!(
            "SELECT ",
            user_columns!(),
            " FROM users u WHERE u.id IN "
        ));
        builder.bind_list(user_ids)?;
        for row in builder.build().fetch_all(&mut *connection).await.db()? {
            let user = read_user(&row)?;
            users.insert(user.id, user);
        }
    }
    found
        .iter()
        .map(|row| {
            let hints: Vec<StoredHint> = rows::json(row, "hints")?;
            let user = |column: &str| -> StoreResult<Option<User>> {
                Ok(rows::opt_int(row, column)?.and_then(|user_id| users.get(&user_id).cloned()))
            };
            Ok(MemoryItemRecord {
                id: rows::int(row, "id")?,
                text: rows::text(row, "text")?,
                scope: MemoryScope {
                    tenant_union_id: rows::opt_int(row, "tenant_union_id")?,
                    tenant_id: rows::opt_text(row, "tenant_id")?,
                    tenant_label: rows::opt_text(row, "tenant_label")?,
                },
                hints: hints
                    .into_iter()
                    .map(|hint| MemoryHint {
                        entity: hint.entity,
                        verdict: hint.verdict,
                        note: hint.note,
                    })
                    .collect(),
                entities: rows::json(row, "entities")?,
                created_by: user("created_by")?,
                last_modified_by: user("updated_by")?,
                created_at: rows::time(row, "created_at")?,
                updated_at: rows::time(row, "updated_at")?,
            })
        })
        .collect()
}

/// One item as it bears on an alert, while rows are gathered.
#[derive(Default)]
struct Matched {
    text: String,
    entities: Vec<Entity>,
    verdicts: Vec<MemoryVerdict>,
    notes: Vec<String>,
}

/// The items in the alert's scope that name the alert's entities, newest first. Each
/// carries the alert's entities it names (as the alert writes them), and the verdict of
/// its matching hints: malicious when any says so, else benign when any says so.
pub(crate) async fn memory_for_alert(
    connection: &mut AnyConnection,
    query: &HistoryQuery,
) -> StoreResult<Vec<MemoryItem>> {
    let mut entities_by_key: BTreeMap<String, Vec<&Entity>> = BTreeMap::new();
    for entity in &query.entities {
        for key in alert_lookup_keys(entity) {
            let entities = entities_by_key.entry(key).or_default();
            if !entities.contains(&entity) {
                entities.push(entity);
            }
        }
    }
    if entities_by_key.is_empty() {
        return Ok(Vec::new());
    }
    let mut builder = SqlBuilder::new(
        "SELECT e.item_id, e.match_key, e.verdict, e.note, m.text \
         FROM context_memory_entities e JOIN context_memory_items m ON m.id = e.item_id \
         WHERE e.match_key IN ",
    );
    // Padded, so that the statement stays prepared (its text then depends only on the
    // padded count of keys): it runs once per investigation.
    let keys: Vec<String> = entities_by_key.keys().cloned().collect();
    builder.bind_padded_list(&keys)?;
    builder.push(" AND (m.tenant_union_id IS NULL OR m.tenant_union_id = ");
    builder.bind(query.tenant_union_id)?;
    builder.push(") AND (m.tenant_id IS NULL");
    if let Some(tenant_id) = &query.tenant_id {
        builder.push(" OR m.tenant_id = ");
        builder.bind(tenant_id.clone())?;
    }
    builder.push(") ORDER BY e.item_id DESC");
    let found = builder.build().fetch_all(&mut *connection).await.db()?;

    let mut order: Vec<i64> = Vec::new();
    let mut matched: BTreeMap<i64, Matched> = BTreeMap::new();
    for row in &found {
        let item_id = rows::int(row, "item_id")?;
        if !matched.contains_key(&item_id) {
            if order.len() >= MEMORY_ITEMS_PER_ALERT {
                continue;
            }
            order.push(item_id);
        }
        let item = matched.entry(item_id).or_default();
        item.text = rows::text(row, "text")?;
        let key = rows::text(row, "match_key")?;
        for entity in entities_by_key.get(&key).into_iter().flatten().copied() {
            if !item.entities.contains(entity) {
                item.entities.push(entity.clone());
            }
        }
        match rows::opt_text(row, "verdict")?.as_deref() {
            Some("benign") => item.verdicts.push(MemoryVerdict::Benign),
            Some("malicious") => item.verdicts.push(MemoryVerdict::Malicious),
            _ => {}
        }
        if let Some(note) = rows::opt_text(row, "note")?
            && !item.notes.contains(&note)
        {
            item.notes.push(note);
        }
    }
    Ok(order
        .into_iter()
        .filter_map(|item_id| {
            let item = matched.remove(&item_id)?;
            let verdict = if item.verdicts.contains(&MemoryVerdict::Malicious) {
                Some(MemoryVerdict::Malicious)
            } else if item.verdicts.contains(&MemoryVerdict::Benign) {
                Some(MemoryVerdict::Benign)
            } else {
                None
            };
            let mut text = item.text;
            for note in item.notes {
                text.push_str(&format!(" (note: {note})"));
            }
            Some(MemoryItem {
                item_id,
                text,
                entities: item.entities,
                verdict,
            })
        })
        .collect())
}

#[async_trait]
impl ContextMemoryStore for SqlStore {
    async fn create_memory_item(
        &self,
        item: &NewMemoryItem,
        at: Timestamp,
    ) -> StoreResult<MemoryItemRecord> {
        create_memory_item(&self.pool, self.dialect, item, at).await
    }

    async fn update_memory_item(
        &self,
        item_id: i64,
        item: &NewMemoryItem,
        at: Timestamp,
    ) -> StoreResult<MemoryItemRecord> {
        update_memory_item(&self.pool, self.dialect, item_id, item, at).await
    }

    async fn delete_memory_item(&self, item_id: i64) -> StoreResult<()> {
        delete_memory_item(&self.pool, self.dialect, item_id).await
    }

    async fn get_memory_item(&self, item_id: i64) -> StoreResult<MemoryItemRecord> {
        get_memory_item(&self.pool, item_id).await
    }

    async fn list_memory_items(&self, query: &MemoryQuery) -> StoreResult<MemoryPage> {
        list_memory_items(&self.pool, query).await
    }
}
