//! Gathering the past that bears on a new alert: recent alerts that share its entities,
//! earlier verdicts (Sleuth's and analysts') on the same things, and the operator's
//! context memory about them (within the alert's tenant scope). Earlier investigations
//! count only within the alert's own tenant union.

use std::collections::{BTreeMap, BTreeSet, HashMap};

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
/// newest first (`place_shared_alerts`): reading a thousand to keep fifty cost far more
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
    // The earlier alerts that share an entity, each with the alert's entities it shares.
    let entities: Vec<&Entity> = query.entities.iter().take(ENTITIES_LOOKED_UP).collect();
    let mut shared_by_alert: BTreeMap<i64, Vec<Entity>> = BTreeMap::new();
    if !entities.is_empty() {
        let lists = alerts_naming_each(dialect, &entities, query)?
            .fetch_all(&mut *connection)
            .await
            .db()?
            .iter()
            .map(read_alert_list)
            .collect::<StoreResult<Vec<_>>>()?;
        for alert in place_shared_alerts(lists, query.limit) {
            // Sorted and without repeats, as the engine has always been shown them.
            let entities: BTreeSet<Entity> = entities
                .iter()
                .enumerate()
                .filter(|(index, _)| alert.entity_bits & (1_u32 << index) != 0)
                .map(|(_, entity)| (*entity).clone())
                .collect();
            shared_by_alert.insert(alert.alert_id, entities.into_iter().collect());
        }
    }
    let shared_alert_ids: Vec<i64> = shared_by_alert.keys().copied().collect();
    let row = earlier_investigations(dialect, &shared_alert_ids, query)?
        .fetch_one(&mut *connection)
        .await
        .db()?;
    // The latest investigation of each earlier alert sharing an entity, newest first; then
    // the latest verdicts on the same detection from the same source, newest alert first.
    let mut candidates = read_packed(&row, "shared")?;
    candidates.sort_unstable_by_key(|past| std::cmp::Reverse(past.id));
    let mut same_detection = read_packed(&row, "same_detection")?;
    same_detection
        .sort_unstable_by_key(|past| std::cmp::Reverse((past.alert_create_time, past.id)));
    candidates.extend(same_detection);

    let mut history = History::default();
    let mut seen = BTreeSet::new();
    for packed in candidates {
        let past = PastInvestigation::try_from(packed)?;
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

/// One statement (one round trip, not one per entity) for the alerts of the tenant union
/// that name each entity: of each, the newest `ALERTS_PER_ENTITY` other alerts, as one
/// row per entity (`entity`: its index; `alert_ids`: the ids as comma-separated text, NULL
/// when none). One row per entity rather than one per alert: every row is a hand-over
/// between threads and allocations. Its text depends only on how many entities there are,
/// so it stays prepared. At least one entity. The entity index is keyed by union, so
/// another customer's alerts never come.
fn alerts_naming_each(
    dialect: Dialect,
    entities: &[&Entity],
    query: &HistoryQuery,
) -> StoreResult<sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments>> {
    let ids_as_text = match dialect {
        Dialect::Sqlite => "group_concat(alert_id)",
        Dialect::Postgres => "string_agg(CAST(alert_id AS TEXT), ',')",
    };
    let mut sql = SqlBuilder::many(dialect, "");
    for (index, entity) in entities.iter().enumerate() {
        if index > 0 {
            sql.push(" UNION ALL ");
        }
        sql.push(&format!(
            "SELECT {index} AS entity, (SELECT {ids_as_text} FROM ("
        ));
        crate::entity_index::push_alerts_naming(
            &mut sql,
            dialect,
            index,
            entity,
            query.alert_id,
            query.tenant_union_id,
            ALERTS_PER_ENTITY,
        )?;
        sql.push(&format!(") AS naming_{index}) AS alert_ids"));
    }
    Ok(sql.build().persistent(true))
}

/// One row of `alerts_naming_each`: the entity's index and its alerts' ids.
fn read_alert_list(row: &AnyRow) -> StoreResult<(usize, Vec<i64>)> {
    let index = usize::try_from(rows::int(row, "entity")?)
        .map_err(|_| sleuth_store::StoreError::internal("a negative entity index"))?;
    let ids = rows::opt_text(row, "alert_ids")?.unwrap_or_default();
    let ids = ids
        .split(',')
        .filter(|id| !id.is_empty())
        .map(|id| {
            id.trim().parse::<i64>().map_err(|_| {
                sleuth_store::StoreError::internal(format!("'{id}' in an entity's alert ids"))
            })
        })
        .collect::<StoreResult<Vec<i64>>>()?;
    Ok((index, ids))
}

/// An earlier alert history reads, with the entities (as a bitmask of their indexes in
/// the history query, at most `ENTITIES_LOOKED_UP` bits) whose lists it is in.
#[derive(Debug, PartialEq, Eq)]
struct SharedAlert {
    alert_id: i64,
    entity_bits: u32,
}

/// Of the alerts naming each entity (`(entity index, alert ids)`), the `limit` that
/// history reads: taken by each alert's best place in an entity's list, newest first
/// (every entity's newest alert, then every entity's second newest, ...), ties by the
/// newer alert. An entity everywhere (a proxy, a resolver, a jump host) fills its own
/// list, never the others': the one earlier alert on the same user still comes with the
/// fifty newest on the proxy. Placed here rather than by a window and two sorts in SQL,
/// which cost more than the index lookups themselves.
fn place_shared_alerts(lists: Vec<(usize, Vec<i64>)>, limit: usize) -> Vec<SharedAlert> {
    // alert id -> (best place, entity bits)
    let mut placed: HashMap<i64, (usize, u32)> = HashMap::new();
    for (entity, mut newest_first) in lists {
        let Some(bit) = u32::try_from(entity)
            .ok()
            .and_then(|entity| 1_u32.checked_shl(entity))
        else {
            continue;
        };
        newest_first.sort_unstable_by(|a, b| b.cmp(a));
        newest_first.dedup();
        for (place, alert_id) in newest_first.into_iter().enumerate() {
            let entry = placed.entry(alert_id).or_insert((place, 0));
            entry.0 = entry.0.min(place);
            entry.1 |= bit;
        }
    }
    let mut shared: Vec<(usize, SharedAlert)> = placed
        .into_iter()
        .map(|(alert_id, (place, entity_bits))| {
            (
                place,
                SharedAlert {
                    alert_id,
                    entity_bits,
                },
            )
        })
        .collect();
    shared.sort_unstable_by(|(place_a, a), (place_b, b)| {
        place_a.cmp(place_b).then(b.alert_id.cmp(&a.alert_id))
    });
    shared.truncate(limit);
    shared.into_iter().map(|(_, alert)| alert).collect()
}

/// One statement (one round trip) for both reads of earlier investigations, each as one
/// JSON text (`shared`, `same_detection`) holding an array per investigation of the
/// `PAST_FIELDS`:
/// - `shared`: the latest investigation of each of these alerts that belongs to the
///   tenant union (NULL when there are none). The list is padded to a power of two so
///   that the statement stays prepared.
/// - `same_detection`: the latest verdicts on the same detection from the same source.
///   Latest by the alerts' time, which the (type, status) index is ordered by: ordering
///   by id would sort every success of the detection ever stored, once per investigation.
///
/// As JSON rather than rows: each row's columns are values handed over and decoded one
/// by one, and a new alert's history reads dozens of investigations.
fn earlier_investigations(
    dialect: Dialect,
    shared_alert_ids: &[i64],
    query: &HistoryQuery,
) -> StoreResult<sqlx::query::Query<'static, sqlx::Any, sqlx::any::AnyArguments>> {
    let mut sql = SqlBuilder::many(dialect, "");
    push_earlier_investigations(&mut sql, dialect, shared_alert_ids, query)?;
    Ok(sql.build().persistent(true))
}

/// Writes the statement of `earlier_investigations`. The verdicts on the same detection
/// are read from the partial index of concluded, not coalesced investigations by
/// detection (migration same_detection_index): a storm's thousands of coalesced
/// investigations of one rule lie in the type's own index among the few that concluded on
/// their own, and the walk for the newest twenty read every one of them.
fn push_earlier_investigations(
    sql: &mut SqlBuilder,
    dialect: Dialect,
    shared_alert_ids: &[i64],
    query: &HistoryQuery,
) -> StoreResult<()> {
    let columns = PAST_FIELDS.map(|field| format!("i.{field}")).join(", ");
    let packed = packed_rows(dialect);
    sql.push("SELECT ");
    if shared_alert_ids.is_empty() {
        sql.push("NULL");
    } else {
        sql.push(&format!(
            "(SELECT {packed} FROM (SELECT {columns} FROM investigations i WHERE i.alert_id IN "
        ));
        sql.bind_padded_list(shared_alert_ids)?;
        sql.push(
            " AND i.id = (SELECT MAX(latest.id) FROM investigations latest \
             WHERE latest.alert_id = i.alert_id) AND i.tenant_union_id = ",
        );
        sql.bind(query.tenant_union_id)?;
        sql.push(") AS past)");
    }
    sql.push(&format!(
        " AS shared, (SELECT {packed} FROM (SELECT {columns} FROM investigations i \
         WHERE i.alert_type = "
    ));
    sql.bind(query.alert_type.clone())?;
    sql.push(" AND i.direct_source_label = ");
    sql.bind(query.direct_source_label.clone())?;
    sql.push(" AND i.status = 'success' AND i.alert_id <> ");
    sql.bind(query.alert_id)?;
    sql.push(" AND i.ignored_for IS NULL AND i.tenant_union_id = ");
    sql.bind(query.tenant_union_id)?;
    sql.push(&format!(
        " ORDER BY i.alert_create_time DESC, i.id DESC LIMIT {SAME_DETECTION_VERDICTS}) AS past) \
         AS same_detection"
    ));
    Ok(())
}

/// SQLite's plan for the read of earlier investigations (`earlier_investigations`), one
/// line per step of `EXPLAIN QUERY PLAN`: the backend's tests check which indexes it
/// walks, whatever is stored.
pub async fn sqlite_earlier_investigations_plan(pool: &AnyPool) -> StoreResult<Vec<String>> {
    let query = HistoryQuery {
        alert_id: 1,
        investigation_id: 1,
        entities: Vec::new(),
        alert_type: "edr:Credential dumping".into(),
        direct_source_label: "EDR".into(),
        since: chrono::Utc::now(),
        limit: 50,
        tenant_union_id: 1,
        tenant_id: None,
    };
    crate::builder::sqlite_plan(pool, |sql| {
        push_earlier_investigations(sql, Dialect::Sqlite, &[2, 3], &query)
    })
    .await
}

/// The aggregate that turns the rows of a subquery `past` into one JSON text of arrays.
fn packed_rows(dialect: Dialect) -> String {
    let fields = PAST_FIELDS.map(|field| format!("past.{field}")).join(", ");
    match dialect {
        Dialect::Sqlite => format!("json_group_array(json_array({fields}))"),
        Dialect::Postgres => format!("CAST(json_agg(json_build_array({fields})) AS TEXT)"),
    }
}

/// The investigations packed in one column of `earlier_investigations` (none for NULL).
fn read_packed(row: &AnyRow, column: &str) -> StoreResult<Vec<PackedPast>> {
    match rows::opt_text(row, column)? {
        Some(text) => serde_json::from_str(&text).map_err(|error| {
            sleuth_store::StoreError::internal(format!(
                "earlier investigations ({column}): {error}"
            ))
        }),
        None => Ok(Vec::new()),
    }
}

/// What an earlier investigation contributes: its verdicts, and of its alert only what a
/// related alert shows, all of it copied onto the investigation when it was created
/// (migration 0009 for the title). Reading and parsing each earlier alert's stored JSON (a
/// few KB each, up to hundreds per new alert) was the largest single cost of an
/// investigation. In the order of `PackedPast`'s fields.
const PAST_FIELDS: [&str; 14] = [
    "id",
    "alert_id",
    "outcome",
    "priority",
    "generated_time",
    "feedback_status",
    "feedback_outcome",
    "feedback_priority",
    "feedback_outcome_note",
    "feedback_updated_by",
    "alert_type",
    "alert_title",
    "direct_source_label",
    "alert_create_time",
];

/// One earlier investigation as packed: a JSON array of the `PAST_FIELDS`, in order
/// (serde reads a struct from an array field by field).
#[derive(serde::Deserialize)]
struct PackedPast {
    id: i64,
    alert_id: i64,
    outcome: Option<String>,
    priority: Option<String>,
    generated_time: Option<i64>,
    feedback_status: String,
    feedback_outcome: Option<String>,
    feedback_priority: Option<String>,
    feedback_outcome_note: Option<String>,
    feedback_updated_by: Option<i64>,
    alert_type: String,
    alert_title: Option<String>,
    direct_source_label: String,
    alert_create_time: i64,
}

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

impl TryFrom<PackedPast> for PastInvestigation {
    type Error = sleuth_store::StoreError;

    fn try_from(packed: PackedPast) -> StoreResult<PastInvestigation> {
        fn parse<T, E: std::fmt::Display>(
            raw: Option<String>,
            parse: impl Fn(&str) -> Result<T, E>,
        ) -> StoreResult<Option<T>> {
            raw.map(|raw| parse(&raw))
                .transpose()
                .map_err(|error| sleuth_store::StoreError::internal(error.to_string()))
        }
        // Feedback columns only carry the analyst's word once an analyst changed them.
        let by_analyst = packed.feedback_updated_by.is_some();
        let analyst = |value: Option<String>| if by_analyst { value } else { None };
        Ok(PastInvestigation {
            investigation_id: packed.id,
            alert_id: packed.alert_id,
            title: packed.alert_title.unwrap_or_default(),
            alert_type: packed.alert_type,
            direct_source_label: packed.direct_source_label,
            create_time: rows::from_micros(packed.alert_create_time)?,
            outcome: parse(packed.outcome, Outcome::parse)?,
            priority: parse(packed.priority, Priority::parse)?,
            decided_at: packed.generated_time.map(rows::from_micros).transpose()?,
            analyst_outcome: parse(analyst(packed.feedback_outcome), Outcome::parse)?,
            analyst_priority: parse(analyst(packed.feedback_priority), Priority::parse)?,
            analyst_note: analyst(packed.feedback_outcome_note),
            reviewed: FeedbackStatus::parse(&packed.feedback_status)
                .map_err(|error| sleuth_store::StoreError::internal(error.to_string()))?
                == FeedbackStatus::Reviewed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(lists: &[(usize, Vec<i64>)], limit: usize) -> Vec<(i64, u32)> {
        place_shared_alerts(lists.to_vec(), limit)
            .into_iter()
            .map(|alert| (alert.alert_id, alert.entity_bits))
            .collect()
    }

    #[test]
    fn an_entity_everywhere_does_not_crowd_out_the_others() {
        // Entity 0 is a proxy named by every alert; entity 1 a user named by one old alert.
        let proxy: Vec<i64> = (51..=100).collect();
        let lists = [(0, proxy), (1, vec![7])];
        assert_eq!(
            placed(&lists, 5),
            [(100, 0b01), (7, 0b10), (99, 0b01), (98, 0b01), (97, 0b01)]
        );
    }

    #[test]
    fn an_alert_in_several_lists_comes_once_with_every_entity_and_its_best_place() {
        // Alert 40 is entity 0's third newest and entity 2's newest.
        let lists = [(0, vec![50, 45, 40, 30]), (2, vec![40, 20])];
        assert_eq!(
            placed(&lists, 10),
            [
                (50, 0b001),
                (40, 0b101),
                (45, 0b001),
                (20, 0b100),
                (30, 0b001)
            ]
        );
    }

    #[test]
    fn lists_in_any_order_and_with_repeats_are_placed_newest_first() {
        let lists = [(1, vec![3, 9, 3, 5]), (0, vec![])];
        assert_eq!(placed(&lists, 2), [(9, 0b10), (5, 0b10)]);
        assert!(placed(&lists, 0).is_empty());
    }
}
