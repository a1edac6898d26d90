//! The fast path of group commit: a whole batch of creates in a handful of set-based
//! statements (look up the identities, insert the new alerts, their entities, the
//! investigations, the jobs, the search rows and the audit entries, each as one multi-row
//! statement), instead of a dozen statements per create; on SQLite, in four round trips
//! (`write`).
//!
//! Why: every statement is a round trip to the database (for SQLite, to sqlx's worker
//! thread: two thread wake-ups). Under many concurrent clients the per-create path spent
//! its time in those wake-ups: the statement count, not SQLite, was the limit. With the
//! workers on, batches are small and each round trip is waited for inside the write turn
//! that the workers' results queue for, so fewer round trips shorten every wait.
//!
//! The decisions are the per-create path's (`create::create_one`), made in memory for the
//! batch in order: an alert already stored, or earlier in the same batch, answers with its
//! latest investigation unless forced. If any statement fails (another process stored the
//! same alert a moment ago, say), the caller rolls back and replays the batch through the
//! per-create path, whose savepoints give each create its own answer.

use std::collections::HashMap;

use sleuth_domain::InvestigationStatus;
use sleuth_store::{Created, StoreResult};
use sqlx::AnyConnection;
use sqlx::any::AnyRow;

use crate::audit::ChainHead;
use crate::builder::{SqlBuilder, Statements};
use crate::create_request::CreateRequest;
use crate::entity_index::IndexedAlert;
use crate::rows::{self, micros};
use crate::{DbResultExt, Dialect};

/// Rows per multi-row statement: far below both dialects' parameter limits (SQLite 32,766,
/// PostgreSQL 65,535) at 16 parameters a row, and a power of two, which padded statements
/// (`SqlBuilder::value_rows`) are anyway.
const ROWS_PER_STATEMENT: usize = 256;

/// Which alert a new investigation is of.
#[derive(Clone, Copy)]
enum AlertOf {
    /// Already stored, with this id.
    Stored(i64),
    /// Stored by this batch: the index of the request that brings it.
    New(usize),
}

/// What one request of the batch gets.
#[derive(Clone, Copy)]
enum Plan {
    /// An investigation stored before this batch.
    Existing(i64),
    /// The investigation that an earlier request of this batch creates.
    SameAs(usize),
    /// A new investigation.
    Investigate(AlertOf),
}

/// The latest investigation of an identity, as the batch goes.
#[derive(Clone, Copy)]
enum Latest {
    Stored(i64),
    Planned(usize),
}

/// The id stored for a request of the batch. Every lookup is of an index this batch
/// inserted, so a miss is a bug here; it fails the batch (which the caller replays one
/// create at a time) rather than panicking the writer task that every create waits on.
fn id_of(ids: &HashMap<usize, i64>, index: usize) -> StoreResult<i64> {
    ids.get(&index)
        .copied()
        .ok_or_else(|| sleuth_store::StoreError::internal("a create of the batch has no stored id"))
}

/// Writes the batch with set-based statements on an open transaction, with the audit
/// entries of its creates (`create_request::audited`). Returns one result per request, in order,
/// or `None`, having written nothing, when a create brings a new revision of a known alert
/// (`only_new_alerts_and_repeats`): the caller replays the batch create by create. Any
/// error leaves the transaction to be rolled back.
///
/// Four round trips on SQLite whatever the batch's size, each waited for inside the write
/// turn that every other writer of the process waits for: what is stored already and the
/// audit chain's head; the new alerts, for their ids; their entities and the new
/// investigations, for theirs; then the jobs, the search rows and the audit entries, which
/// read nothing back. (PostgreSQL runs the statements of each step one by one: see
/// `Statements`.)
pub(crate) async fn write(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    batch: &[CreateRequest],
) -> StoreResult<Option<Vec<Created>>> {
    let audited = batch.iter().any(|request| request.audit.is_some());
    let mut reads = Statements::new(dialect);
    read_stored_alerts(&mut reads, batch)?;
    if audited {
        ChainHead::read(&mut reads, dialect);
    }
    let read = reads.run(&mut *transaction).await?;
    let (stored_alerts, latest_stored, contents) = stored_alerts(&read)?;
    if !only_new_alerts_and_repeats(batch, &contents) {
        return Ok(None);
    }
    let chain_head = audited.then(|| ChainHead::find(&read)).transpose()?;
    let requests: Vec<(&str, bool)> = batch
        .iter()
        .map(|request| (request.alert.identity.as_str(), request.force))
        .collect();
    let plans = plan(&requests, &stored_alerts, &latest_stored);

    let new_alerts: Vec<usize> = plans
        .iter()
        .enumerate()
        .filter_map(|(index, plan)| match plan {
            Plan::Investigate(AlertOf::New(first)) if *first == index => Some(index),
            _ => None,
        })
        .collect();
    if new_alerts.len() > ROWS_PER_STATEMENT {
        let storing = new_alerts.iter().map(|&index| &batch[index].alert);
        crate::source_counters::take_in_key_order(transaction, dialect, storing).await?;
    }
    let alert_ids = insert_alerts(transaction, dialect, batch, &new_alerts).await?;

    let mut investigate: Vec<(usize, i64)> = Vec::new();
    for (index, plan) in plans.iter().enumerate() {
        match plan {
            Plan::Investigate(AlertOf::Stored(alert_id)) => investigate.push((index, *alert_id)),
            Plan::Investigate(AlertOf::New(first)) => {
                investigate.push((index, id_of(&alert_ids, *first)?));
            }
            Plan::Existing(_) | Plan::SameAs(_) => {}
        }
    }
    let mut writes = Statements::new(dialect);
    let new_alert_entities: Vec<IndexedAlert<'_>> = new_alerts
        .iter()
        .map(|&index| {
            let alert = &batch[index].alert;
            Ok(IndexedAlert {
                alert_id: id_of(&alert_ids, index)?,
                tenant_union_id: alert.tenant_union_id,
                entities: &alert.parsed.entities,
            })
        })
        .collect::<StoreResult<_>>()?;
    crate::entity_index::write(&mut writes, dialect, &new_alert_entities)?;
    write_investigations(&mut writes, dialect, batch, &investigate)?;
    let investigation_ids =
        new_investigation_ids(&writes.run(&mut *transaction).await?, &investigate)?;

    let created: Vec<Created> = plans
        .iter()
        .enumerate()
        .map(|(index, plan)| {
            Ok(match plan {
                Plan::Existing(investigation_id) => Created::Existing(*investigation_id),
                Plan::SameAs(earlier) => Created::Existing(id_of(&investigation_ids, *earlier)?),
                Plan::Investigate(_) => Created::New(id_of(&investigation_ids, index)?),
            })
        })
        .collect::<StoreResult<_>>()?;
    let mut writes = Statements::new(dialect);
    write_jobs_and_search(
        &mut writes,
        dialect,
        batch,
        &investigate,
        &investigation_ids,
    )?;
    write_sightings(&mut writes, dialect, batch, &contents)?;
    if let Some(chain_head) = chain_head {
        let entries = crate::create_request::audited(batch, created.iter().map(Some));
        chain_head.append(&mut writes, dialect, &entries)?;
    }
    writes.run(&mut *transaction).await?;
    Ok(Some(created))
}

/// The decisions of `create::create_one`, for the whole batch (identity and force of
/// each request) in order.
fn plan<'a>(
    requests: &[(&'a str, bool)],
    stored_alerts: &'a HashMap<String, i64>,
    latest_stored: &HashMap<i64, i64>,
) -> Vec<Plan> {
    let mut latest: HashMap<&'a str, Latest> = HashMap::new();
    let mut alert_of: HashMap<&'a str, AlertOf> = HashMap::new();
    for (identity, alert_id) in stored_alerts {
        alert_of.insert(identity.as_str(), AlertOf::Stored(*alert_id));
        if let Some(investigation_id) = latest_stored.get(alert_id) {
            latest.insert(identity.as_str(), Latest::Stored(*investigation_id));
        }
    }
    let mut plans = Vec::with_capacity(requests.len());
    for (index, &(identity, force)) in requests.iter().enumerate() {
        if !force {
            match latest.get(identity) {
                Some(Latest::Stored(investigation_id)) => {
                    plans.push(Plan::Existing(*investigation_id));
                    continue;
                }
                Some(Latest::Planned(earlier)) => {
                    plans.push(Plan::SameAs(*earlier));
                    continue;
                }
                None => {}
            }
        }
        let alert = *alert_of.entry(identity).or_insert(AlertOf::New(index));
        latest.insert(identity, Latest::Planned(index));
        plans.push(Plan::Investigate(alert));
    }
    plans
}

/// Adds the read of the batch's alerts that are already stored, each with its latest
/// investigation (`stored_alerts` finds the rows).
fn read_stored_alerts(reads: &mut Statements, batch: &[CreateRequest]) -> StoreResult<()> {
    let mut identities: Vec<String> = batch
        .iter()
        .map(|request| request.alert.identity.clone())
        .collect();
    identities.sort_unstable();
    identities.dedup();
    for chunk in identities.chunks(ROWS_PER_STATEMENT) {
        reads
            .next(
                "SELECT a.identity, a.id AS stored_alert_id, \
                 (SELECT MAX(i.id) FROM investigations i WHERE i.alert_id = a.id) AS latest, \
                 a.content_hash AS stored_content_hash, a.revision AS stored_revision, \
                 s.latest_content_hash AS sighted_content_hash \
                 FROM alerts a LEFT JOIN alert_sightings s ON s.identity = a.identity \
                 WHERE a.identity IN ",
            )
            .bind_padded_list(chunk)?;
    }
    Ok(())
}

/// What the batch needs to know of a stored alert's content.
struct StoredContent {
    /// The content a resend must have to be a plain repeat: that of the stored row, when
    /// it is also the latest content received. `None` when a resend must be decided one by
    /// one (`revisions::meet`): a later revision was recorded, or the row predates hashes.
    current_hash: Option<String>,
    revision: i64,
}

/// The stored alerts among the rows of a run of `read_stored_alerts` with other reads:
/// their ids by identity, the latest investigation of each that has one, and their content.
#[allow(clippy::type_complexity)] // Three maps by the keys the plan looks them up by.
fn stored_alerts(
    rows: &[AnyRow],
) -> StoreResult<(
    HashMap<String, i64>,
    HashMap<i64, i64>,
    HashMap<String, StoredContent>,
)> {
    let mut alerts = HashMap::new();
    let mut latest = HashMap::new();
    let mut contents = HashMap::new();
    for row in rows
        .iter()
        .filter(|row| rows::has_column(row, "stored_alert_id"))
    {
        let alert_id = rows::int(row, "stored_alert_id")?;
        let identity = rows::text(row, "identity")?;
        let stored_hash = rows::opt_text(row, "stored_content_hash")?;
        let sighted_hash = rows::opt_text(row, "sighted_content_hash")?;
        let current_hash = match (stored_hash, sighted_hash) {
            (Some(stored), None) => Some(stored),
            (Some(stored), Some(sighted)) if stored == sighted => Some(stored),
            _ => None,
        };
        contents.insert(
            identity.clone(),
            StoredContent {
                current_hash,
                revision: rows::int(row, "stored_revision")?,
            },
        );
        alerts.insert(identity, alert_id);
        if let Some(investigation_id) = rows::opt_int(row, "latest")? {
            latest.insert(alert_id, investigation_id);
        }
    }
    Ok((alerts, latest, contents))
}

/// Whether every create of the batch is a new alert or a plain repeat of a known one:
/// no create brings other content under a known identity (a revision, stored or earlier
/// in the batch). Revisions are rare and need reads of their own, so a batch with one is
/// replayed create by create, where `revisions::meet` records it.
fn only_new_alerts_and_repeats(
    batch: &[CreateRequest],
    contents: &HashMap<String, StoredContent>,
) -> bool {
    let mut hashes: HashMap<&str, Option<&str>> = contents
        .iter()
        .map(|(identity, content)| (identity.as_str(), content.current_hash.as_deref()))
        .collect();
    batch.iter().all(|request| {
        let alert = &request.alert;
        let known = hashes
            .entry(alert.identity.as_str())
            .or_insert(Some(alert.content_hash.as_str()));
        *known == Some(alert.content_hash.as_str())
    })
}

/// Adds the count of the batch's repeat deliveries (of alerts stored before, or earlier in
/// the batch) to `alert_sightings`: one row per identity, made at its second delivery.
fn write_sightings(
    writes: &mut Statements,
    dialect: Dialect,
    batch: &[CreateRequest],
    contents: &HashMap<String, StoredContent>,
) -> StoreResult<()> {
    // identity -> (repeats, last received, revision, content hash), in first-seen order.
    let mut order: Vec<&str> = Vec::new();
    let mut repeats: HashMap<&str, (i64, i64, i64, &str)> = HashMap::new();
    let mut seen: std::collections::HashSet<&str> = contents.keys().map(String::as_str).collect();
    for request in batch {
        let alert = &request.alert;
        let identity = alert.identity.as_str();
        if seen.insert(identity) {
            continue;
        }
        let revision = contents.get(identity).map_or(1, |content| content.revision);
        let entry = repeats.entry(identity).or_insert_with(|| {
            order.push(identity);
            (0, 0, revision, alert.content_hash.as_str())
        });
        entry.0 += 1;
        entry.1 = entry.1.max(micros(alert.received_at));
    }
    for chunk in order.chunks(ROWS_PER_STATEMENT) {
        let sql = writes.next(
            "INSERT INTO alert_sightings (identity, seen_count, last_seen_at, latest_revision, \
             latest_content_hash)",
        );
        sql.value_rows(dialect, 5, chunk.len(), |sql, position| {
            let identity = chunk[position];
            let (count, last_seen, revision, hash) = repeats[identity];
            // A new row counts the first delivery too; an existing one adds the repeats.
            sql.bind(identity.to_string())?.push(", ");
            sql.bind(count + 1)?.push(", ");
            sql.bind(last_seen)?.push(", ");
            sql.bind(revision)?.push(", ");
            sql.bind(hash.to_string())?;
            Ok(())
        })?;
        sql.push(
            " ON CONFLICT (identity) DO UPDATE SET \
             seen_count = alert_sightings.seen_count + excluded.seen_count - 1, \
             last_seen_at = excluded.last_seen_at",
        );
    }
    Ok(())
}

/// Inserts the alerts first seen in this batch; their ids by request index.
async fn insert_alerts(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    batch: &[CreateRequest],
    new_alerts: &[usize],
) -> StoreResult<HashMap<usize, i64>> {
    let mut ids = HashMap::with_capacity(new_alerts.len());
    for chunk in new_alerts.chunks(ROWS_PER_STATEMENT) {
        let mut sql = SqlBuilder::many(
            dialect,
            "INSERT INTO alerts (identity, tenant_union_id, tenant_integration_key, parsed, \
             raw_alert_content, direct_source_label, coalesce_key, created_at, updated_at, \
             content_hash)",
        );
        let mut request_of_identity = HashMap::with_capacity(chunk.len());
        sql.value_rows(dialect, 10, chunk.len(), |sql, position| {
            let index = chunk[position];
            let request = &batch[index];
            let alert = &request.alert;
            let now = micros(alert.received_at);
            request_of_identity.insert(alert.identity.as_str(), index);
            sql.bind(alert.identity.clone())?.push(", ");
            sql.bind(alert.tenant_union_id)?.push(", ");
            sql.bind(alert.tenant_integration_key.clone())?.push(", ");
            sql.bind(request.parsed_json.clone())?.push(", ");
            sql.bind(alert.raw_alert_content.clone())?.push(", ");
            sql.bind(alert.parsed.direct_source_label.clone())?
                .push(", ");
            sql.bind(alert.parsed.coalesce_key.clone())?.push(", ");
            sql.bind(now)?.push(", ");
            sql.bind(now)?.push(", ");
            sql.bind(alert.content_hash.clone())?;
            Ok(())
        })?;
        // RETURNING rows come in no promised order: match them by identity (unique).
        sql.push(" RETURNING id, identity");
        for row in sql.build().fetch_all(&mut *transaction).await.db()? {
            let identity = rows::text(&row, "identity")?;
            let index = request_of_identity
                .get(identity.as_str())
                .copied()
                .ok_or_else(|| {
                    sleuth_store::StoreError::internal(
                        "an inserted alert came back with an unknown identity",
                    )
                })?;
            ids.insert(index, rows::int(&row, "id")?);
        }
    }
    if ids.len() != new_alerts.len() {
        return Err(sleuth_store::StoreError::internal(
            "fewer alerts came back than were inserted",
        ));
    }
    Ok(ids)
}

/// Adds the insert of the new investigations (`not_asked`), which return their ids
/// (`new_investigation_ids` reads them).
fn write_investigations(
    writes: &mut Statements,
    dialect: Dialect,
    batch: &[CreateRequest],
    investigate: &[(usize, i64)],
) -> StoreResult<()> {
    for chunk in investigate.chunks(ROWS_PER_STATEMENT) {
        let sql = writes.next(
            "INSERT INTO investigations (alert_id, status, created_at, updated_at, \
             alert_create_time, alert_start_time, alert_type, alert_title, direct_source_label, \
             tenant_union_id, tenant_id, tenant_label, tenant_integration_key, feedback_created_at, \
             feedback_updated_at",
        );
        // PostgreSQL keeps the search document in the row itself.
        let width = match dialect {
            Dialect::Sqlite => {
                sql.push(")");
                15
            }
            Dialect::Postgres => {
                sql.push(", search_vector)");
                16
            }
        };
        sql.value_rows(dialect, width, chunk.len(), |sql, position| {
            let (index, alert_id) = chunk[position];
            let request = &batch[index];
            let alert = &request.alert;
            let parsed = &alert.parsed;
            let now = micros(alert.received_at);
            sql.bind(alert_id)?.push(", ");
            sql.bind(InvestigationStatus::NotAsked.as_str().to_string())?
                .push(", ");
            sql.bind(now)?.push(", ");
            sql.bind(now)?.push(", ");
            sql.bind(micros(parsed.create_time))?.push(", ");
            sql.bind(parsed.start_time.map(micros))?.push(", ");
            sql.bind(parsed.alert_type.clone())?.push(", ");
            sql.bind(parsed.title.clone())?.push(", ");
            sql.bind(parsed.direct_source_label.clone())?.push(", ");
            sql.bind(alert.tenant_union_id)?.push(", ");
            sql.bind(parsed.tenant_id.clone())?.push(", ");
            sql.bind(parsed.tenant_label.clone())?.push(", ");
            sql.bind(alert.tenant_integration_key.clone())?.push(", ");
            sql.bind(now)?.push(", ");
            sql.bind(now)?;
            if dialect == Dialect::Postgres {
                sql.push(", to_tsvector('simple', ");
                sql.bind(request.search_document.clone())?;
                sql.push(")");
            }
            Ok(())
        })?;
        sql.push(" RETURNING id AS new_investigation_id, alert_id");
    }
    Ok(())
}

/// The new investigations' ids by request index, from the rows of a run of
/// `write_investigations` with other statements. Several new investigations of one alert
/// (forced) are interchangeable: that alert's ids go in ascending order, the order they
/// were inserted in, to its requests in batch order.
fn new_investigation_ids(
    rows: &[AnyRow],
    investigate: &[(usize, i64)],
) -> StoreResult<HashMap<usize, i64>> {
    let mut returned: HashMap<i64, Vec<i64>> = HashMap::new();
    for row in rows
        .iter()
        .filter(|row| rows::has_column(row, "new_investigation_id"))
    {
        returned
            .entry(rows::int(row, "alert_id")?)
            .or_default()
            .push(rows::int(row, "new_investigation_id")?);
    }
    for investigation_ids in returned.values_mut() {
        investigation_ids.sort_unstable_by(|left, right| right.cmp(left));
    }
    let mut ids = HashMap::with_capacity(investigate.len());
    for &(index, alert_id) in investigate {
        let investigation_id = returned
            .get_mut(&alert_id)
            .and_then(Vec::pop)
            .ok_or_else(|| {
                sleuth_store::StoreError::internal(
                    "fewer investigations came back than were inserted",
                )
            })?;
        ids.insert(index, investigation_id);
    }
    Ok(ids)
}

/// Adds the insert of one job per new investigation, and (SQLite) of its row in the
/// full-text index.
fn write_jobs_and_search(
    writes: &mut Statements,
    dialect: Dialect,
    batch: &[CreateRequest],
    investigate: &[(usize, i64)],
    investigation_ids: &HashMap<usize, i64>,
) -> StoreResult<()> {
    for chunk in investigate.chunks(ROWS_PER_STATEMENT) {
        writes
            .next("INSERT INTO jobs (investigation_id, ready_at, attempts)")
            .value_rows(dialect, 3, chunk.len(), |sql, position| {
                let index = chunk[position].0;
                sql.bind(id_of(investigation_ids, index)?)?.push(", ");
                sql.bind(micros(batch[index].alert.received_at))?.push(", ");
                sql.bind(0_i64)?;
                Ok(())
            })?;
        if dialect == Dialect::Sqlite {
            // New ids, so no stale row to replace (unlike `search::index`).
            writes
                .next("INSERT INTO investigation_search (rowid, body)")
                .value_rows(dialect, 2, chunk.len(), |sql, position| {
                    let index = chunk[position].0;
                    sql.bind(id_of(investigation_ids, index)?)?.push(", ");
                    sql.bind(batch[index].search_document.clone())?;
                    Ok(())
                })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn describe(plans: &[Plan]) -> Vec<String> {
        plans
            .iter()
            .map(|plan| match plan {
                Plan::Existing(id) => format!("existing {id}"),
                Plan::SameAs(index) => format!("same as #{index}"),
                Plan::Investigate(AlertOf::Stored(id)) => format!("investigate stored alert {id}"),
                Plan::Investigate(AlertOf::New(index)) => format!("investigate new alert #{index}"),
            })
            .collect()
    }

    #[test]
    fn repeats_in_a_batch_share_the_first_investigation_unless_forced() {
        let batch = [
            ("a", false),
            ("a", false),
            ("b", false),
            ("a", true),
            ("a", false),
        ];
        let plans = plan(&batch, &HashMap::new(), &HashMap::new());
        assert_eq!(
            describe(&plans),
            [
                "investigate new alert #0",
                "same as #0",
                "investigate new alert #2",
                "investigate new alert #0",
                // The forced one is now the latest, as MAX(id) would say on the slow path.
                "same as #3",
            ]
        );
    }

    #[test]
    fn stored_alerts_answer_with_their_latest_investigation() {
        let batch = [("old", false), ("old", true), ("bare", false)];
        let stored = HashMap::from([("old".to_string(), 7), ("bare".to_string(), 8)]);
        // "bare" is stored but has no investigation (a past one failed to be created).
        let latest = HashMap::from([(7, 70)]);
        let plans = plan(&batch, &stored, &latest);
        assert_eq!(
            describe(&plans),
            [
                "existing 70",
                "investigate stored alert 7",
                "investigate stored alert 8"
            ]
        );
    }
}
