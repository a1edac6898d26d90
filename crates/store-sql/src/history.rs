//! Gathering the past that bears on a new alert: recent alerts that share its entities,
//! earlier verdicts (Sleuth's and analysts') on the same things, and the operator's
//! context memory about them (within the alert's tenant scope). Earlier investigations
//! count only within the alert's own tenant union.

use std::collections::{BTreeMap, BTreeSet};

use sleuth_domain::{
    Entity, FeedbackStatus, History, Likeness, Outcome, PriorVerdict, Priority, RelatedAlert,
};
use sleuth_store::{HistoryQuery, StoreResult};
use sqlx::AnyPool;
use sqlx::any::AnyRow;

use crate::builder::SqlBuilder;
use crate::rows::{self, micros};
use crate::{DbResultExt, Dialect};

/// At most this many entities of the new alert are looked up; of each, the newest 50
/// other alerts of the alert's own tenant union naming it (`ALERTS_PER_ENTITY`): a domain
/// controller named in every alert must not make history unbounded. Of all those alerts,
/// as many as the history's limit are read with their investigations, each entity's
/// newest first (`sharing_investigations`): reading a thousand to keep fifty cost far more
/// than it told (every candidate was a lookup of its investigation and a row handed over).
/// The limits are written into the SQL, not bound: SQLite plans a LIMIT as a constant and
/// prepares a statement again each time a bound LIMIT is bound.
const ENTITIES_LOOKED_UP: usize = 24;
const ALERTS_PER_ENTITY: i64 = 50;
const SAME_DETECTION_VERDICTS: i64 = 20;

pub(crate) async fn history(
    pool: &AnyPool,
    dialect: Dialect,
    query: &HistoryQuery,
) -> StoreResult<History> {
    let mut connection = pool.acquire().await.db()?;
    // The latest investigation of each earlier alert sharing an entity, with which of the
    // alert's entities it shares, newest first.
    let entities: Vec<&Entity> = query.entities.iter().take(ENTITIES_LOOKED_UP).collect();
    let mut shared_by_alert: BTreeMap<i64, Vec<Entity>> = BTreeMap::new();
    let mut candidates: Vec<AnyRow> = Vec::new();
    if !entities.is_empty() {
        for row in sharing_investigations(dialect, &entities, query)?
            .fetch_all(&mut *connection)
            .await
            .db()?
        {
            let bits = rows::int(&row, "entity_bits")?;
            // Sorted and without repeats, as the engine has always been shown them.
            let shared: BTreeSet<Entity> = entities
                .iter()
                .enumerate()
                .filter(|(index, _)| bits & (1_i64 << index) != 0)
                .map(|(_, entity)| (*entity).clone())
                .collect();
            shared_by_alert.insert(rows::int(&row, "alert_id")?, shared.into_iter().collect());
            candidates.push(row);
        }
    }
    // The latest verdicts on the same detection from the same source. Latest by the
    // alerts' time, which the (type, status) index is ordered by: ordering by id would sort
    // every success of the detection ever stored, once per investigation.
    let same_detection = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {PAST_COLUMNS} FROM investigations i WHERE i.alert_type = $1 AND i.direct_source_label = $2 \
         AND i.status = 'success' AND i.alert_id <> $3 AND i.ignored_for IS NULL \
         AND i.tenant_union_id = $4 \
         ORDER BY i.alert_create_time DESC, i.id DESC LIMIT {SAME_DETECTION_VERDICTS}"
    )))
    .bind(&query.alert_type)
    .bind(&query.direct_source_label)
    .bind(query.alert_id)
    .bind(query.tenant_union_id)
    .fetch_all(&mut *connection)
    .await
    .db()?;
    candidates.extend(same_detection);

    let mut history = History::default();
    let mut seen = BTreeSet::new();
    for row in &candidates {
        let past = read_past(row)?;
        if !seen.insert(past.investigation_id) || past.investigation_id == query.investigation_id {
            continue;
        }
        let shared_entities: Vec<Entity> = shared_by_alert
            .get(&past.alert_id)
            .cloned()
            .unwrap_or_default();
        let same_detection = past.alert_type == query.alert_type
            && past.direct_source_label == query.direct_source_label;
        if !shared_entities.is_empty() && micros(past.create_time) >= micros(query.since) {
            history.related_alerts.push(RelatedAlert {
                investigation_id: past.investigation_id,
                title: past.title.clone(),
                alert_type: past.alert_type.clone(),
                direct_source_label: past.direct_source_label.clone(),
                create_time: past.create_time,
                outcome: past.outcome,
                priority: past.priority,
                shared_entities: shared_entities.clone(),
            });
        }
        let Some(decided_at) = past.decided_at else {
            continue;
        };
        let likeness = match (same_detection, shared_entities.is_empty()) {
            (true, false) => Likeness::SameDetectionSameEntities,
            (true, true) => Likeness::SameDetection,
            (false, _) => Likeness::SharedEntities,
        };
        history.prior_verdicts.push(PriorVerdict {
            investigation_id: past.investigation_id,
            title: past.title,
            alert_type: past.alert_type,
            direct_source_label: past.direct_source_label,
            likeness,
            shared_entities,
            engine_outcome: past.outcome,
            analyst_outcome: past.analyst_outcome,
            analyst_priority: past.analyst_priority,
            analyst_note: past.analyst_note,
            reviewed: past.reviewed,
            decided_at,
        });
    }
    history.related_alerts.truncate(query.limit);
    history.prior_verdicts.truncate(query.limit);
    history.memory = crate::context_memory::memory_for_alert(&mut connection, query).await?;
    Ok(history)
}

/// One statement (one round trip, not one per entity) for the latest investigation of
/// the alerts of the tenant union that share entities with this one, newest first.
///
/// Which alerts: of each entity, the newest `ALERTS_PER_ENTITY` other alerts of the union
/// naming it; of those, `query.limit` in all, taken by each alert's best place in an
/// entity's list (every entity's newest alert, then every entity's second newest, ...).
/// An entity everywhere (a proxy, a resolver, a jump host) fills its own list, never the
/// others': the one earlier alert on the same user still comes with the fifty newest on
/// the proxy. An alert is reported with the entities whose lists it is in.
///
/// Each row also says which entities its alert shares, as a bitmask of their indexes
/// (`entity_bits`; at most `ENTITIES_LOOKED_UP` bits): one row per alert rather than one
/// per alert and entity, since every row is a hand-over between threads and allocations.
/// Its text depends only on how many entities there are and the limit, so it stays
/// prepared. At least one entity. Only investigations of the alert's own tenant union:
/// another customer's alerts, verdicts and analysts' notes never reach this one's
/// investigation, nor take places of the window (the index is keyed by union).
fn sharing_investigations(
    dialect: Dialect,
    entities: &[&Entity],
    query: &HistoryQuery,
) -> StoreResult<sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments>> {
    let mut sql = SqlBuilder::many(dialect, "WITH sharing (entity, alert_id) AS (");
    for (index, entity) in entities.iter().enumerate() {
        if index > 0 {
            sql.push(" UNION ALL ");
        }
        crate::entity_index::push_alerts_naming(
            &mut sql,
            dialect,
            index,
            entity,
            query.alert_id,
            query.tenant_union_id,
            ALERTS_PER_ENTITY,
        )?;
    }
    // Each (alert, entity index) pair comes once (an alert's entities are written once
    // each: `entity_index::write`), so the sum of the powers of two is the set of indexes.
    let limit = query.limit;
    sql.push(&format!(
        "), placed AS (SELECT entity, alert_id, \
         ROW_NUMBER() OVER (PARTITION BY entity ORDER BY alert_id DESC) AS place FROM sharing), \
         shared AS (SELECT alert_id, SUM(1 << entity) AS entity_bits, MIN(place) AS best_place \
         FROM placed GROUP BY alert_id ORDER BY best_place, alert_id DESC LIMIT {limit}) \
         SELECT {PAST_COLUMNS}, shared.entity_bits FROM shared JOIN investigations i \
         ON i.id = (SELECT MAX(id) FROM investigations WHERE alert_id = shared.alert_id) \
         WHERE i.tenant_union_id = "
    ));
    sql.bind(query.tenant_union_id)?;
    sql.push(" ORDER BY i.id DESC");
    Ok(sql.build().persistent(true))
}

/// What an earlier investigation contributes: its verdicts, and of its alert only what a
/// related alert shows, all of it copied onto the investigation when it was created
/// (migration 0009 for the title). Reading and parsing each earlier alert's stored JSON (a
/// few KB each, up to hundreds per new alert) was the largest single cost of an
/// investigation.
const PAST_COLUMNS: &str = "i.id, i.alert_id, i.outcome, i.priority, i.generated_time, \
    i.feedback_status, i.feedback_outcome, i.feedback_priority, i.feedback_outcome_note, \
    i.feedback_updated_by, i.alert_type, i.alert_title, i.direct_source_label, \
    i.alert_create_time";

struct PastInvestigation {
    investigation_id: i64,
    alert_id: i64,
    title: String,
    alert_type: String,
    direct_source_label: String,
    create_time: sleuth_domain::Timestamp,
    outcome: Option<Outcome>,
    priority: Option<Priority>,
    decided_at: Option<sleuth_domain::Timestamp>,
    analyst_outcome: Option<Outcome>,
    analyst_priority: Option<Priority>,
    analyst_note: Option<String>,
    reviewed: bool,
}

fn read_past(row: &AnyRow) -> StoreResult<PastInvestigation> {
    // Feedback columns only carry the analyst's word once an analyst changed them.
    let by_analyst = rows::opt_int(row, "feedback_updated_by")?.is_some();
    let analyst = |value: Option<String>| if by_analyst { value } else { None };
    Ok(PastInvestigation {
        investigation_id: rows::int(row, "id")?,
        alert_id: rows::int(row, "alert_id")?,
        title: rows::opt_text(row, "alert_title")?.unwrap_or_default(),
        alert_type: rows::text(row, "alert_type")?,
        direct_source_label: rows::text(row, "direct_source_label")?,
        create_time: rows::time(row, "alert_create_time")?,
        outcome: rows::opt_parsed(row, "outcome", Outcome::parse)?,
        priority: rows::opt_parsed(row, "priority", Priority::parse)?,
        decided_at: rows::opt_time(row, "generated_time")?,
        analyst_outcome: analyst(rows::opt_text(row, "feedback_outcome")?)
            .map(|raw| Outcome::parse(&raw))
            .transpose()
            .map_err(|error| sleuth_store::StoreError::internal(error.to_string()))?,
        analyst_priority: analyst(rows::opt_text(row, "feedback_priority")?)
            .map(|raw| Priority::parse(&raw))
            .transpose()
            .map_err(|error| sleuth_store::StoreError::internal(error.to_string()))?,
        analyst_note: analyst(rows::opt_text(row, "feedback_outcome_note")?),
        reviewed: rows::parsed(row, "feedback_status", FeedbackStatus::parse)?
            == FeedbackStatus::Reviewed,
    })
}
