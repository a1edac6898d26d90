//! Reading whole investigations: the investigation, its alert, the alert's tenant union,
//! its feedback and the script runs fired for it.

use std::collections::HashMap;

use serde_json::{Map, Value};
use sleuth_domain::{Canceled, FeedbackStatus, InvestigationStatus, Outcome, Priority};
use sleuth_store::{AlertRecord, FeedbackRecord, InvestigationRecord, StoreError, StoreResult};
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, AnyPool};

use crate::DbResultExt;
use crate::rows;
use crate::tenants::read_tenant_union;

/// Every column a whole investigation needs, for `WHERE i.id IN (...)` to follow.
const SELECT_INVESTIGATIONS: &str = concat!(
    "SELECT i.id, i.status, i.canceled, i.error_msg, r.result, i.ignored_for, i.is_retried, \
     i.start_time, i.generated_time, i.created_at, i.updated_at, i.outcome, i.priority, \
     i.feedback_status, i.feedback_outcome, i.feedback_priority, i.feedback_outcome_note, \
     i.feedback_remediations_done, i.feedback_updated_by, i.feedback_created_at, \
     i.feedback_updated_at, \
     a.id AS alert_id, a.parsed AS alert_parsed, a.raw_alert_content AS alert_raw, \
     a.enrich_result AS alert_enrich_result, a.tenant_integration_key AS alert_tenant_integration_key, \
     a.created_at AS alert_created_at, a.updated_at AS alert_updated_at, \
     t.id AS tenant_union_id, t.display_name AS tenant_union_display_name, \
     t.lookup_dict AS tenant_union_lookup_dict, t.created_at AS tenant_union_created_at, \
     t.updated_at AS tenant_union_updated_at, ",
    crate::users::user_columns!(),
    " FROM investigations i JOIN alerts a ON a.id = i.alert_id \
     JOIN tenant_unions t ON t.id = a.tenant_union_id \
     LEFT JOIN users u ON u.id = t.last_modified_by \
     LEFT JOIN investigation_results r ON r.investigation_id = i.id \
     WHERE i.id IN "
);

pub(crate) async fn get_investigation(
    pool: &AnyPool,
    investigation_id: i64,
) -> StoreResult<InvestigationRecord> {
    let mut connection = pool.acquire().await.db()?;
    fetch_by_ids(&mut connection, &[investigation_id])
        .await?
        .pop()
        .ok_or_else(|| StoreError::not_found("investigation", investigation_id))
}

/// Reads the investigations with these ids, in the order of `ids`; missing ids are skipped.
pub(crate) async fn fetch_by_ids(
    connection: &mut AnyConnection,
    ids: &[i64],
) -> StoreResult<Vec<InvestigationRecord>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut records = fetch_without_runs(connection, ids).await?;
    let mut runs = crate::response_actions::remediation_runs(connection, ids).await?;
    for record in &mut records {
        record.remediation_action_runs = runs.remove(&record.id).unwrap_or_default();
    }
    Ok(records)
}

/// As `fetch_by_ids`, with `remediation_action_runs` left empty: for a worker loading its
/// job, whose runs (started by the triggers of a stored result) cannot exist yet, and
/// whose every statement is a round trip to the database thread.
pub(crate) async fn fetch_without_runs(
    connection: &mut AnyConnection,
    ids: &[i64],
) -> StoreResult<Vec<InvestigationRecord>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let found = crate::builder::by_id_list(SELECT_INVESTIGATIONS, ids, "")?
        .fetch_all(&mut *connection)
        .await
        .db()?;
    let mut by_id: HashMap<i64, InvestigationRecord> = HashMap::with_capacity(found.len());
    for row in &found {
        let record = read_investigation(row)?;
        by_id.insert(record.id, record);
    }
    Ok(ids.iter().filter_map(|id| by_id.remove(id)).collect())
}

fn read_investigation(row: &AnyRow) -> StoreResult<InvestigationRecord> {
    let id = rows::int(row, "id")?;
    let tenant_union = read_tenant_union(row)?;
    let alert = AlertRecord {
        id: rows::int(row, "alert_id")?,
        parsed: rows::json(row, "alert_parsed")?,
        raw_alert_content: rows::text(row, "alert_raw")?,
        tenant_union,
        tenant_integration_key: rows::opt_text(row, "alert_tenant_integration_key")?,
        enrich_result: rows::opt_json(row, "alert_enrich_result")?,
        created_at: rows::time(row, "alert_created_at")?,
        updated_at: rows::time(row, "alert_updated_at")?,
    };
    let result: Option<sleuth_domain::InvestigationResult> = rows::opt_json(row, "result")?;
    let engine_outcome: Option<Outcome> = rows::opt_parsed(row, "outcome", Outcome::parse)?;
    let engine_priority: Option<Priority> = rows::opt_parsed(row, "priority", Priority::parse)?;
    let feedback = FeedbackRecord {
        id,
        status: rows::parsed(row, "feedback_status", FeedbackStatus::parse)?,
        outcome: rows::opt_parsed(row, "feedback_outcome", Outcome::parse)?.or(engine_outcome),
        priority: rows::opt_parsed(row, "feedback_priority", Priority::parse)?.or(engine_priority),
        outcome_note: rows::opt_text(row, "feedback_outcome_note")?,
        remediations_done: rows::json::<Map<String, Value>>(row, "feedback_remediations_done")?,
        updated_by: rows::opt_int(row, "feedback_updated_by")?,
        created_at: rows::time(row, "feedback_created_at")?,
        updated_at: rows::time(row, "feedback_updated_at")?,
    };
    Ok(InvestigationRecord {
        id,
        status: rows::parsed(row, "status", InvestigationStatus::parse)?,
        canceled: rows::opt_parsed(row, "canceled", Canceled::parse)?,
        error_msg: rows::opt_text(row, "error_msg")?,
        outcome: engine_outcome,
        priority: engine_priority,
        result,
        ignored_for: rows::opt_int(row, "ignored_for")?,
        is_retried: rows::flag(row, "is_retried")?,
        start_time: rows::opt_time(row, "start_time")?,
        generated_time: rows::opt_time(row, "generated_time")?,
        created_at: rows::time(row, "created_at")?,
        updated_at: rows::time(row, "updated_at")?,
        alert,
        feedback,
        remediation_action_runs: Vec::new(),
    })
}
