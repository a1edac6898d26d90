//! The dashboard's sample: a bounded read of one tenant scope's recent investigations.
//!
//! Each part is bounded on its own, so a view costs the same whatever the database holds:
//! - per state, the investigations received since the window's start, newest first, at
//!   most `per_state_limit` (one more is read to tell that the window held more). Each
//!   walks `investigations_by_created (status, created_at, id)` backwards from now and
//!   stops at the limit or the window's start; a bound scope's filter is tested on the
//!   rows walked, so a small tenant in a large database walks at most the window;
//! - the entities of the newest `entity_alert_limit` concluded investigations' alerts, by
//!   the same walk, joined to their alerts by primary key;
//! - queued and running investigations, counted up to `queue_count_limit` each on the
//!   same index's `status` prefix.

use std::collections::BTreeSet;

use serde::Deserialize;
use sleuth_domain::{Entity, InvestigationStatus, Outcome, Priority};
use sleuth_store::{DashboardItem, DashboardQuery, DashboardSample, StoreResult};
use sqlx::AnyPool;

use crate::builder::SqlBuilder;
use crate::{DbResultExt, rows};

/// The states sampled, in the order their rows are appended.
const SAMPLED: [InvestigationStatus; 4] = [
    InvestigationStatus::Success,
    InvestigationStatus::Error,
    InvestigationStatus::Loading,
    InvestigationStatus::NotAsked,
];

/// Of a stored parsed alert, only its entities.
#[derive(Deserialize)]
struct EntitiesOnly {
    #[serde(default)]
    entities: Vec<Entity>,
}

pub(crate) async fn sample(pool: &AnyPool, query: &DashboardQuery) -> StoreResult<DashboardSample> {
    let mut connection = pool.acquire().await.db()?;
    let mut sample = DashboardSample::default();
    for status in SAMPLED {
        let mut select = SqlBuilder::new(
            "SELECT i.status, i.outcome, i.priority, i.created_at, i.alert_create_time, \
             i.generated_time, i.feedback_outcome, i.feedback_updated_by, \
             i.direct_source_label FROM investigations i WHERE i.status = ",
        );
        select.bind(status.as_str().to_string())?;
        select.push(" AND i.created_at >= ");
        select.bind(rows::micros(query.since))?;
        crate::scope::push_union_filter(&mut select, "i.tenant_union_id", &query.scope)?;
        select.push(" ORDER BY i.created_at DESC, i.id DESC");
        select.limit_offset(query.per_state_limit.saturating_add(1), 0);
        let found = select.build().fetch_all(&mut *connection).await.db()?;
        if found.len() > query.per_state_limit as usize {
            sample.truncated = true;
        }
        for row in found.iter().take(query.per_state_limit as usize) {
            let feedback_outcome = rows::opt_parsed(row, "feedback_outcome", Outcome::parse)?;
            let reviewed = rows::opt_int(row, "feedback_updated_by")?.is_some();
            sample.items.push(DashboardItem {
                status: rows::parsed(row, "status", InvestigationStatus::parse)?,
                outcome: rows::opt_parsed(row, "outcome", Outcome::parse)?,
                priority: rows::opt_parsed(row, "priority", Priority::parse)?,
                received_at: rows::time(row, "created_at")?,
                alert_time: rows::time(row, "alert_create_time")?,
                concluded_at: rows::opt_time(row, "generated_time")?,
                feedback: reviewed.then_some(feedback_outcome),
                direct_source_label: rows::text(row, "direct_source_label")?,
            });
        }
    }

    let mut select = SqlBuilder::new(
        "SELECT a.parsed FROM investigations i JOIN alerts a ON a.id = i.alert_id \
         WHERE i.status = 'success' AND i.created_at >= ",
    );
    select.bind(rows::micros(query.since))?;
    crate::scope::push_union_filter(&mut select, "i.tenant_union_id", &query.scope)?;
    select.push(" ORDER BY i.created_at DESC, i.id DESC");
    select.limit_offset(query.entity_alert_limit, 0);
    let found = select.build().fetch_all(&mut *connection).await.db()?;
    for row in &found {
        let parsed: EntitiesOnly = rows::json(row, "parsed")?;
        let distinct: BTreeSet<Entity> = parsed.entities.into_iter().collect();
        sample.entities.extend(distinct);
    }
    sample.entity_alerts = found.len() as u64;

    for status in [InvestigationStatus::NotAsked, InvestigationStatus::Loading] {
        let mut count = SqlBuilder::new(
            "SELECT COUNT(*) FROM (SELECT 1 AS one FROM investigations i WHERE i.status = ",
        );
        count.bind(status.as_str().to_string())?;
        crate::scope::push_union_filter(&mut count, "i.tenant_union_id", &query.scope)?;
        count.limit_offset(query.queue_count_limit, 0);
        count.push(") capped");
        let counted: i64 = count
            .build_scalar()
            .fetch_one(&mut *connection)
            .await
            .db()?;
        let counted = u64::try_from(counted).unwrap_or(0);
        match status {
            InvestigationStatus::NotAsked => sample.queued = counted,
            _ => sample.running = counted,
        }
    }
    Ok(sample)
}
