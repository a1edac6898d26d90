//! The fast path of group commit: a whole batch of creates in a handful of set-based
//! statements (look up the identities, insert the new alerts, their entities, the
//! investigations, the jobs and the search rows, each as one multi-row statement), instead
//! of a dozen statements per create.
//!
//! Why: every statement is a round trip to the database (for SQLite, to sqlx's worker
//! thread: two thread wake-ups). Measured with 64 clients on 2 cores, the per-create path
//! spent its time in those wake-ups and stored about 1,000 alerts a second; the statement
//! count, not SQLite, was the limit.
//!
//! The decisions are the per-create path's (`create::create_one`), made in memory for the
//! batch in order: an alert already stored, or earlier in the same batch, answers with its
//! latest investigation unless forced. If any statement fails (another process stored the
//! same alert a moment ago, say), the caller rolls back and replays the batch through the
//! per-create path, whose savepoints give each create its own answer.

use std::collections::HashMap;

use sleuth_domain::{EntityKind, InvestigationStatus};
use sleuth_store::{Created, StoreResult};
use sqlx::AnyConnection;

use crate::builder::SqlBuilder;
use crate::create::CreateRequest;
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

/// Writes the batch with set-based statements on an open transaction. Returns one result
/// per request, in order. Any error leaves the transaction to be rolled back.
pub async fn write(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    batch: &[CreateRequest],
) -> StoreResult<Vec<Created>> {
    let stored_alerts = stored_alerts(transaction, dialect, batch).await?;
    let latest_stored = latest_investigations(
        transaction,
        dialect,
        stored_alerts.values().copied().collect(),
    )
    .await?;
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
    let alert_ids = insert_alerts(transaction, dialect, batch, &new_alerts).await?;
    insert_entities(transaction, dialect, batch, &new_alerts, &alert_ids).await?;

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
    let investigation_ids =
        insert_investigations(transaction, dialect, batch, &investigate).await?;
    insert_jobs_and_search(
        transaction,
        dialect,
        batch,
        &investigate,
        &investigation_ids,
    )
    .await?;

    plans
        .iter()
        .enumerate()
        .map(|(index, plan)| {
            Ok(match plan {
                Plan::Existing(investigation_id) => Created::Existing(*investigation_id),
                Plan::SameAs(earlier) => Created::Existing(id_of(&investigation_ids, *earlier)?),
                Plan::Investigate(_) => Created::New(id_of(&investigation_ids, index)?),
            })
        })
        .collect()
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

/// The ids of the batch's alerts that are already stored, by identity.
async fn stored_alerts(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    batch: &[CreateRequest],
) -> StoreResult<HashMap<String, i64>> {
    let mut identities: Vec<String> = batch
        .iter()
        .map(|request| request.alert.identity.clone())
        .collect();
    identities.sort_unstable();
    identities.dedup();
    let mut found = HashMap::new();
    for chunk in identities.chunks(ROWS_PER_STATEMENT) {
        let mut sql = SqlBuilder::many(
            dialect,
            "SELECT identity, id FROM alerts WHERE identity IN ",
        );
        sql.bind_padded_list(chunk)?;
        for row in sql.build().fetch_all(&mut *transaction).await.db()? {
            found.insert(rows::text(&row, "identity")?, rows::int(&row, "id")?);
        }
    }
    Ok(found)
}

/// The latest investigation of each stored alert that has one.
async fn latest_investigations(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    alert_ids: Vec<i64>,
) -> StoreResult<HashMap<i64, i64>> {
    let mut found = HashMap::new();
    for chunk in alert_ids.chunks(ROWS_PER_STATEMENT) {
        let mut sql = SqlBuilder::many(
            dialect,
            "SELECT alert_id, MAX(id) AS latest FROM investigations WHERE alert_id IN ",
        );
        sql.bind_padded_list(chunk)?;
        sql.push(" GROUP BY alert_id");
        for row in sql.build().fetch_all(&mut *transaction).await.db()? {
            found.insert(rows::int(&row, "alert_id")?, rows::int(&row, "latest")?);
        }
    }
    Ok(found)
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
             raw_alert_content, direct_source_label, coalesce_key, created_at, updated_at)",
        );
        let mut request_of_identity = HashMap::with_capacity(chunk.len());
        sql.value_rows(dialect, 9, chunk.len(), |sql, position| {
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
            sql.bind(now)?;
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

/// Each new alert's distinct entities, for correlation.
async fn insert_entities(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    batch: &[CreateRequest],
    new_alerts: &[usize],
    alert_ids: &HashMap<usize, i64>,
) -> StoreResult<()> {
    let mut rows: Vec<(EntityKind, &str, i64)> = Vec::new();
    for &index in new_alerts {
        let alert_id = id_of(alert_ids, index)?;
        let mut seen = std::collections::HashSet::new();
        for entity in &batch[index].alert.parsed.entities {
            if seen.insert((entity.kind, entity.value.as_str())) {
                rows.push((entity.kind, entity.value.as_str(), alert_id));
            }
        }
    }
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let mut sql = SqlBuilder::many(
            dialect,
            "INSERT INTO alert_entities (kind, value, alert_id)",
        );
        sql.value_rows(dialect, 3, chunk.len(), |sql, position| {
            let (kind, value, alert_id) = chunk[position];
            sql.bind(kind.as_str().to_string())?.push(", ");
            sql.bind(value.to_string())?.push(", ");
            sql.bind(alert_id)?;
            Ok(())
        })?;
        sql.build().execute(&mut *transaction).await.db()?;
    }
    Ok(())
}

/// Inserts the new investigations (`not_asked`); their ids by request index.
async fn insert_investigations(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    batch: &[CreateRequest],
    investigate: &[(usize, i64)],
) -> StoreResult<HashMap<usize, i64>> {
    let mut ids = HashMap::with_capacity(investigate.len());
    for chunk in investigate.chunks(ROWS_PER_STATEMENT) {
        let mut sql = SqlBuilder::many(
            dialect,
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
        sql.push(" RETURNING id, alert_id");
        // Several new investigations of one alert (forced) are interchangeable: hand out
        // that alert's returned ids in ascending order to its requests in batch order.
        let mut returned: HashMap<i64, Vec<i64>> = HashMap::new();
        for row in sql.build().fetch_all(&mut *transaction).await.db()? {
            returned
                .entry(rows::int(&row, "alert_id")?)
                .or_default()
                .push(rows::int(&row, "id")?);
        }
        for investigation_ids in returned.values_mut() {
            investigation_ids.sort_unstable_by(|left, right| right.cmp(left));
        }
        for &(index, alert_id) in chunk {
            let investigation_id =
                returned
                    .get_mut(&alert_id)
                    .and_then(Vec::pop)
                    .ok_or_else(|| {
                        sleuth_store::StoreError::internal(
                            "fewer investigations came back than were inserted",
                        )
                    })?;
            ids.insert(index, investigation_id);
        }
    }
    Ok(ids)
}

/// One job per new investigation, and (SQLite) its row in the full-text index.
async fn insert_jobs_and_search(
    transaction: &mut AnyConnection,
    dialect: Dialect,
    batch: &[CreateRequest],
    investigate: &[(usize, i64)],
    investigation_ids: &HashMap<usize, i64>,
) -> StoreResult<()> {
    for chunk in investigate.chunks(ROWS_PER_STATEMENT) {
        let mut sql = SqlBuilder::many(
            dialect,
            "INSERT INTO jobs (investigation_id, ready_at, attempts)",
        );
        sql.value_rows(dialect, 3, chunk.len(), |sql, position| {
            let index = chunk[position].0;
            sql.bind(id_of(investigation_ids, index)?)?.push(", ");
            sql.bind(micros(batch[index].alert.received_at))?.push(", ");
            sql.bind(0_i64)?;
            Ok(())
        })?;
        sql.build().execute(&mut *transaction).await.db()?;
        if dialect == Dialect::Sqlite {
            // New ids, so no stale row to replace (unlike `search::index`).
            let mut sql =
                SqlBuilder::many(dialect, "INSERT INTO investigation_search (rowid, body)");
            sql.value_rows(dialect, 2, chunk.len(), |sql, position| {
                let index = chunk[position].0;
                sql.bind(id_of(investigation_ids, index)?)?.push(", ");
                sql.bind(batch[index].search_document.clone())?;
                Ok(())
            })?;
            sql.build().execute(&mut *transaction).await.db()?;
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
