//! The audit log over the shared SQL. Appends are serial: within a process, one writer task
//! appends whatever entries are waiting in one transaction (group commit, as creates do,
//! so that auditing every write does not make writers queue for SQLite's lock one by one);
//! across processes, that transaction holds the database's write lock (SQLite's
//! `BEGIN IMMEDIATE`) or the chain-head row (`SELECT … FOR UPDATE` on PostgreSQL) from
//! reading the head to moving it, so two appends can never take the same sequence number
//! or link to the same entry. The sequence number is also the primary key: were the
//! locking ever wrong, a forked append would fail rather than be stored.

use async_trait::async_trait;
use serde_json::Value;
use sleuth_store::*;
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, AnyPool};

use crate::builder::{SqlBuilder, Statements};
use crate::group_commit::{BATCH_MAX, BatchWrite, all_or_nothing};
use crate::rows::{self, micros};
use crate::writer_connection::WriterConnections;
use crate::{DbResultExt, Dialect, SqlStore};

/// Entries read per query while verifying or exporting.
const PAGE: i64 = 1000;

const SELECT_ENTRIES: &str = "SELECT seq, at, actor_user_id, actor_email, action, resource_type, \
    resource_id, request_id, detail, prev_hash, hash FROM audit_log";

/// The group-commit writer of audit entries.
pub(crate) struct AuditWriter {
    pub(crate) connections: WriterConnections,
    pub(crate) dialect: Dialect,
}

#[async_trait]
impl BatchWrite for AuditWriter {
    type Request = NewAuditEntry;
    type Output = AuditEntry;

    async fn write(&self, batch: &[NewAuditEntry]) -> Vec<StoreResult<AuditEntry>> {
        let appended = self
            .connections
            .write(async |connection| append_batch(connection, self.dialect, batch).await)
            .await;
        all_or_nothing("audit entries", batch.len(), appended)
    }
}

async fn append_batch(
    connection: &mut AnyConnection,
    dialect: Dialect,
    batch: &[NewAuditEntry],
) -> StoreResult<Vec<AuditEntry>> {
    let (_write_turn, mut transaction) = crate::begin_write(connection, dialect).await?;
    let appended = append_in(&mut transaction, dialect, batch).await?;
    transaction.commit().await.db()?;
    Ok(appended)
}

/// Appends the entries to the chain on an open write transaction (the audit writer's own,
/// or that of a create batch replayed one create at a time, so that an alert and the
/// record of who submitted it commit together). The chain head is read and moved inside
/// that transaction: see the module. The fast path of creates reads and moves it with its
/// own statements instead (`ChainHead`).
pub(crate) async fn append_in(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    batch: &[NewAuditEntry],
) -> StoreResult<Vec<AuditEntry>> {
    if batch.is_empty() {
        return Ok(Vec::new());
    }
    let mut reads = Statements::new(dialect);
    ChainHead::read(&mut reads, dialect);
    let head = ChainHead::find(&reads.run(&mut *transaction).await?)?;
    let mut writes = Statements::new(dialect);
    let appended = head.append(&mut writes, dialect, batch)?;
    writes.run(&mut *transaction).await?;
    Ok(appended)
}

/// The end of the chain, as an append inside a write transaction reads it. A create batch
/// reads it with its other reads and appends with its other writes (`create_batch`), so
/// that auditing adds no round trip to the write turn every other writer waits for.
pub(crate) struct ChainHead {
    seq: i64,
    hash: String,
}

impl ChainHead {
    /// Adds the read of the head to `reads`; on PostgreSQL it also locks the head row
    /// until the transaction ends. Its row is found among the run's rows by `find`.
    pub(crate) fn read(reads: &mut Statements, dialect: Dialect) {
        let sql = reads
            .next("SELECT seq AS chain_seq, hash AS chain_hash FROM audit_chain_head WHERE id = 1");
        if dialect == Dialect::Postgres {
            sql.push(" FOR UPDATE");
        }
        sql.fixed_text();
    }

    /// The head among the rows of a run of `read` with other statements: the one row that
    /// has its columns.
    pub(crate) fn find(rows: &[AnyRow]) -> StoreResult<ChainHead> {
        let row = rows
            .iter()
            .find(|row| rows::has_column(row, "chain_hash"))
            .ok_or_else(|| StoreError::internal("the audit chain has no head row"))?;
        Ok(ChainHead {
            seq: rows::int(row, "chain_seq")?,
            hash: rows::text(row, "chain_hash")?,
        })
    }

    /// Links the entries after this head and adds their insert and the head's move to
    /// `writes`, which read nothing back. Returns the entries as they will be stored.
    pub(crate) fn append(
        self,
        writes: &mut Statements,
        dialect: Dialect,
        batch: &[NewAuditEntry],
    ) -> StoreResult<Vec<AuditEntry>> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let ChainHead {
            mut seq,
            hash: mut prev_hash,
        } = self;
        let at = chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 6);
        let mut appended = Vec::with_capacity(batch.len());
        for new in batch {
            seq += 1;
            let mut entry = AuditEntry {
                seq,
                at,
                actor_user_id: new.actor_user_id,
                actor_email: new.actor_email.clone(),
                action: new.action.clone(),
                resource_type: new.resource_type.clone(),
                resource_id: new.resource_id.clone(),
                request_id: new.request_id.clone(),
                detail: Value::Object(new.detail.clone()),
                prev_hash: prev_hash.clone(),
                hash: String::new(),
            };
            entry.hash = entry.expected_hash();
            prev_hash = entry.hash.clone();
            appended.push(entry);
        }
        // One multi-row INSERT per chunk, not one statement per entry: the batch is
        // written while every other writer of the process waits for its turn.
        for chunk in appended.chunks(BATCH_MAX) {
            writes
                .next(
                    "INSERT INTO audit_log (seq, at, actor_user_id, actor_email, action, \
                     resource_type, resource_id, request_id, detail, prev_hash, hash)",
                )
                .value_rows(dialect, 11, chunk.len(), |sql, position| {
                    let entry = &chunk[position];
                    sql.bind(entry.seq)?.push(", ");
                    sql.bind(micros(entry.at))?.push(", ");
                    sql.bind(entry.actor_user_id)?.push(", ");
                    sql.bind(entry.actor_email.clone())?.push(", ");
                    sql.bind(entry.action.clone())?.push(", ");
                    sql.bind(entry.resource_type.clone())?.push(", ");
                    sql.bind(entry.resource_id.clone())?.push(", ");
                    sql.bind(entry.request_id.clone())?.push(", ");
                    sql.bind(canonical_json(&entry.detail))?.push(", ");
                    sql.bind(entry.prev_hash.clone())?.push(", ");
                    sql.bind(entry.hash.clone())?;
                    Ok(())
                })?;
        }
        // Which union each entry concerns, beside the chain (see `NewAuditEntry`).
        let unions: Vec<(i64, i64)> = batch
            .iter()
            .zip(&appended)
            .filter_map(|(new, entry)| Some((entry.seq, new.tenant_union_id?)))
            .collect();
        for chunk in unions.chunks(BATCH_MAX) {
            writes
                .next("INSERT INTO audit_entry_unions (seq, tenant_union_id)")
                .value_rows(dialect, 2, chunk.len(), |sql, position| {
                    let (seq, tenant_union_id) = chunk[position];
                    sql.bind(seq)?.push(", ");
                    sql.bind(tenant_union_id)?;
                    Ok(())
                })?;
        }
        let sql = writes.next("UPDATE audit_chain_head SET seq = ");
        sql.bind(seq)?.push(", hash = ");
        sql.bind(prev_hash)?.push(" WHERE id = 1").fixed_text();
        Ok(appended)
    }
}

fn read_entry(row: &AnyRow) -> StoreResult<AuditEntry> {
    Ok(AuditEntry {
        seq: rows::int(row, "seq")?,
        at: rows::time(row, "at")?,
        actor_user_id: rows::opt_int(row, "actor_user_id")?,
        actor_email: rows::opt_text(row, "actor_email")?,
        action: rows::text(row, "action")?,
        resource_type: rows::text(row, "resource_type")?,
        resource_id: rows::opt_text(row, "resource_id")?,
        request_id: rows::opt_text(row, "request_id")?,
        detail: rows::json(row, "detail")?,
        prev_hash: rows::text(row, "prev_hash")?,
        hash: rows::text(row, "hash")?,
    })
}

pub(crate) async fn list_audit_entries(
    pool: &AnyPool,
    query: &AuditQuery,
) -> StoreResult<AuditPage> {
    let mut count = SqlBuilder::new("SELECT COUNT(*) FROM audit_log WHERE 1 = 1");
    push_filters(&mut count, query)?;
    let mut page = SqlBuilder::new(&format!("{SELECT_ENTRIES} WHERE 1 = 1"));
    push_filters(&mut page, query)?;
    page.push(" ORDER BY seq DESC");
    page.limit_offset(query.limit, query.offset);
    let mut connection = pool.acquire().await.db()?;
    let total: i64 = count
        .build_scalar()
        .fetch_one(&mut *connection)
        .await
        .db()?;
    let found = page.build().fetch_all(&mut *connection).await.db()?;
    Ok(AuditPage {
        total: u64::try_from(total).unwrap_or(0),
        items: found.iter().map(read_entry).collect::<StoreResult<_>>()?,
    })
}

fn push_filters(builder: &mut SqlBuilder, query: &AuditQuery) -> StoreResult<()> {
    if let Some(actor) = &query.actor {
        match actor.parse::<i64>() {
            Ok(user_id) => {
                builder.push(" AND actor_user_id = ");
                builder.bind(user_id)?;
            }
            Err(_) => {
                builder.push(" AND LOWER(actor_email) = ");
                builder.bind(actor.to_lowercase())?;
            }
        }
    }
    if !query.actions.is_empty() {
        builder.push(" AND action IN ");
        builder.bind_list(query.actions.iter().cloned())?;
    }
    if !query.resource_types.is_empty() {
        builder.push(" AND resource_type IN ");
        builder.bind_list(query.resource_types.iter().cloned())?;
    }
    if let Some(from) = query.time.from {
        builder.push(" AND at >= ");
        builder.bind(micros(from))?;
    }
    if let Some(until) = query.time.until {
        builder.push(" AND at <= ");
        builder.bind(micros(until))?;
    }
    if !query.scope.is_all() {
        builder.push(" AND seq IN (SELECT scoped.seq FROM audit_entry_unions scoped WHERE 1 = 1");
        crate::scope::push_union_filter(builder, "scoped.tenant_union_id", &query.scope)?;
        builder.push(")");
    }
    Ok(())
}

pub(crate) async fn audit_entries_after(
    pool: &AnyPool,
    after_seq: i64,
    limit: u32,
) -> StoreResult<Vec<AuditEntry>> {
    let found = sqlx::query(sqlx::AssertSqlSafe(format!(
        "{SELECT_ENTRIES} WHERE seq > $1 ORDER BY seq LIMIT $2"
    )))
    .bind(after_seq)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await
    .db()?;
    found.iter().map(read_entry).collect()
}

/// Walks the chain page by page. The head is read first: entries appended meanwhile are
/// past it and are left for the next verification rather than reported as inserted.
pub(crate) async fn verify_audit_chain(pool: &AnyPool) -> StoreResult<AuditVerdict> {
    let head = sqlx::query("SELECT seq, hash FROM audit_chain_head WHERE id = 1")
        .fetch_one(pool)
        .await
        .db()?;
    let head_seq = rows::int(&head, "seq")?;
    let head_hash = rows::text(&head, "hash")?;
    let mut walk = ChainWalk::default();
    let mut after_seq = 0_i64;
    let mut beyond_head = None;
    loop {
        let found = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{SELECT_ENTRIES} WHERE seq > $1 ORDER BY seq LIMIT {PAGE}"
        )))
        .bind(after_seq)
        .fetch_all(pool)
        .await
        .db()?;
        let Some(last) = found.last() else {
            break;
        };
        after_seq = rows::int(last, "seq")?;
        for row in &found {
            let seq = rows::int(row, "seq")?;
            if seq > head_seq {
                beyond_head = Some(seq);
                break;
            }
            let entry = match read_entry(row) {
                Ok(entry) => entry,
                Err(error) => {
                    return Ok(AuditVerdict::Broken {
                        seq,
                        reason: format!("entry {seq} cannot be read ({error}): it was edited"),
                    });
                }
            };
            if let Err(verdict) = walk.check(&entry) {
                return Ok(verdict);
            }
        }
        if beyond_head.is_some() {
            break;
        }
    }
    let verdict = walk.finish(head_seq, &head_hash);
    // An entry past the head that no append wrote: every honest append moves the head in
    // the transaction that writes the entry. Re-read the head in case one committed
    // after it was first read.
    if let (AuditVerdict::Intact { .. }, Some(seq)) = (&verdict, beyond_head) {
        let current: i64 = sqlx::query_scalar("SELECT seq FROM audit_chain_head WHERE id = 1")
            .fetch_one(pool)
            .await
            .db()?;
        if seq > current {
            return Ok(AuditVerdict::Broken {
                seq,
                reason: format!(
                    "entry {seq} is beyond the chain head ({current} entries): it was inserted \
                     outside Sleuth"
                ),
            });
        }
    }
    Ok(verdict)
}

#[async_trait]
impl AuditStore for SqlStore {
    async fn append_audit_entry(&self, entry: &NewAuditEntry) -> StoreResult<AuditEntry> {
        self.audit.submit(entry.clone()).await
    }

    async fn list_audit_entries(&self, query: &AuditQuery) -> StoreResult<AuditPage> {
        list_audit_entries(&self.pool, query).await
    }

    async fn audit_entries_after(
        &self,
        after_seq: i64,
        limit: u32,
    ) -> StoreResult<Vec<AuditEntry>> {
        audit_entries_after(&self.pool, after_seq, limit).await
    }

    async fn verify_audit_chain(&self) -> StoreResult<AuditVerdict> {
        verify_audit_chain(&self.pool).await
    }
}
