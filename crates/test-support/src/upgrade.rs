//! Upgrading a database that already holds data, for both backends' upgrade tests: rows
//! written the way an earlier schema held them read the same after the later migrations.

use std::sync::Arc;

use sleuth_domain::{Entity, EntityKind, Outcome, Priority};
use sleuth_store::Store;
use sqlx::AnyPool;

use crate::fixtures;

/// The conclusion stored by [`store_investigations_before_migration_10`].
const CONCLUSION: &str = "Benign: a scheduled backup job, stored before migration 10.";

/// On a database migrated up to version 9 (the result inside the investigations row),
/// stores one alert naming three entities, with a concluded, tagged investigation and a
/// queued one. Returns their ids.
pub async fn store_investigations_before_migration_10(pool: &AnyPool) -> (i64, i64) {
    let alert = fixtures::simple_alert("Backup job on FS-1", 5);
    let parsed = serde_json::to_string(&alert.parsed).expect("parsed alert as JSON");
    let result = fixtures::result(Outcome::FalseAlert, Priority::Informational, CONCLUSION);
    let result = serde_json::to_string(&result).expect("result as JSON");
    let at = CREATED_AT_MICROS;
    sqlx::query(
        "INSERT INTO alerts (id, identity, tenant_union_id, parsed, raw_alert_content, \
         direct_source_label, created_at, updated_at) VALUES (1, 'upgrade-1', 1, $1, '{}', $2, $3, $3)",
    )
    .bind(parsed)
    .bind(alert.parsed.direct_source_label.clone())
    .bind(at)
    .execute(pool)
    .await
    .expect("alert at version 9");
    for (id, status, result) in [(1_i64, "success", Some(result)), (2, "not_asked", None)] {
        let concluded = result.is_some();
        sqlx::query(
            "INSERT INTO investigations (id, alert_id, status, outcome, priority, result, \
             generated_time, created_at, updated_at, alert_create_time, alert_type, \
             direct_source_label, tenant_union_id, feedback_created_at, feedback_updated_at, \
             alert_title) VALUES ($1, 1, $2, $3, $4, $5, $6, $7, $7, $7, $8, $9, 1, $7, $7, $10)",
        )
        .bind(id)
        .bind(status)
        .bind(concluded.then_some(Outcome::FalseAlert.as_str()))
        .bind(concluded.then_some(Priority::Informational.as_str()))
        .bind(result)
        .bind(concluded.then_some(at + 1_000_000))
        .bind(at)
        .bind(alert.parsed.alert_type.clone())
        .bind(alert.parsed.direct_source_label.clone())
        .bind(alert.parsed.title.clone())
        .execute(pool)
        .await
        .expect("investigation at version 9");
    }
    // Correlation rows as 0001 keeps them (SQLite's migration 17 moves them to an index).
    sqlx::query(
        "INSERT INTO alert_entities (kind, value, alert_id) \
         VALUES ('ip', '10.1.2.3', 1), ('user', 'Svc_Backup', 1), ('user', 'józef', 1)",
    )
    .execute(pool)
    .await
    .expect("entities at version 9");
    sqlx::query("INSERT INTO investigation_tags (name, investigation_id) VALUES ($1, 1)")
        .bind(TAG)
        .execute(pool)
        .await
        .expect("insight tag at version 9");
    (1, 2)
}

/// The insight tag of the concluded investigation, stored before migration 11 gave tag
/// rows their copies of the state and alert time.
const TAG: &str = "scheduled_task";
/// When the alerts stored before the upgrade were created, in microseconds.
const CREATED_AT_MICROS: i64 = 1_780_000_000_000_000;

/// After the upgrade, the concluded investigation reads with its result and the queued
/// one without.
pub async fn results_read_the_same_after_the_upgrade(
    store: &dyn Store,
    concluded: i64,
    queued: i64,
) {
    let record = store.get_investigation(concluded).await.expect("concluded");
    let result = record.result.expect("the result stored before the upgrade");
    assert_eq!(result.conclusion, CONCLUSION);
    assert_eq!(result.outcome, Outcome::FalseAlert);
    assert_eq!(record.outcome, Some(Outcome::FalseAlert));
    let record = store.get_investigation(queued).await.expect("queued");
    assert!(
        record.result.is_none(),
        "a queued investigation has no result"
    );
    // Its tag is found inside an alert-creation range (migration 11 copied the time).
    let created = chrono::DateTime::from_timestamp_micros(CREATED_AT_MICROS).expect("time");
    for (from, want) in [(created, 1), (created + chrono::Duration::seconds(1), 0)] {
        let query = sleuth_store::InvestigationQuery {
            insight_tag_names: vec![TAG.into()],
            alert_create: sleuth_store::TimeRange {
                from: Some(from),
                until: Some(created + chrono::Duration::days(1)),
            },
            limit: 10,
            ..Default::default()
        };
        let page = store.list_investigations(&query).await.expect("list");
        assert_eq!(page.total, want, "tagged from {from}");
        assert_eq!(page.items.len(), usize::try_from(want).unwrap());
    }
    // Both are counted over whole hours (migrations 12 and 16 counted the stored ones).
    let query = sleuth_store::InvestigationQuery {
        states: sleuth_domain::InvestigationStatus::ALL.to_vec(),
        alert_create: sleuth_store::TimeRange {
            from: Some(created - chrono::Duration::days(3)),
            until: Some(created + chrono::Duration::days(3)),
        },
        limit: 10,
        ..Default::default()
    };
    let page = store.list_investigations(&query).await.expect("list");
    assert_eq!((page.total, page.items.len()), (2, 2), "by hour");
    // A new alert naming two of the stored alert's entities (one not ASCII), and another
    // user whose name differs only in case, is related to it by those two (the latest
    // investigation of it).
    let ip = Entity {
        kind: EntityKind::Ip,
        value: "10.1.2.3".into(),
    };
    let jozef = Entity {
        kind: EntityKind::User,
        value: "józef".into(),
    };
    let history = store
        .history(&sleuth_store::HistoryQuery {
            alert_id: 1_000,
            investigation_id: 1_000,
            entities: vec![
                Entity {
                    kind: EntityKind::User,
                    value: "svc_backup".into(),
                },
                ip.clone(),
                jozef.clone(),
            ],
            alert_type: "another detection".into(),
            direct_source_label: "Another source".into(),
            since: created - chrono::Duration::days(1),
            limit: 10,
            tenant_union_id: 1,
            tenant_id: None,
        })
        .await
        .expect("history");
    let related: Vec<(i64, Vec<Entity>)> = history
        .related_alerts
        .iter()
        .map(|related| (related.investigation_id, related.shared_entities.clone()))
        .collect();
    assert_eq!(related, [(queued, vec![ip, jozef])]);
}

/// Successes to search, as a SQLite database from before the search mark held them (see
/// store-sql's `search_marks`): `beacons` concluded investigations whose alerts say
/// "beacon", one that does not, and a queued "beacon". Returns the ids of the successes.
pub async fn successes_to_search(store: &Arc<dyn Store>, beacons: i64) -> Vec<i64> {
    let mut successes = Vec::new();
    for minute in 0..beacons {
        successes.push(
            crate::contract::concluded(
                store,
                fixtures::simple_alert(&format!("beacon seen {minute}"), minute),
                Outcome::FalseAlert,
                Priority::Informational,
                minute,
            )
            .await,
        );
    }
    successes.push(
        crate::contract::concluded(
            store,
            fixtures::simple_alert("quiet host", beacons),
            Outcome::FalseAlert,
            Priority::Informational,
            beacons,
        )
        .await,
    );
    store
        .create_investigation(fixtures::simple_alert("beacon queued", beacons + 1), false)
        .await
        .expect("a queued beacon");
    successes
}

/// How many successes a search for "beacon" counts (the list's default state).
pub async fn beacons_counted(store: &Arc<dyn Store>) -> u64 {
    store
        .list_investigations(&sleuth_store::InvestigationQuery {
            search: Some("beacon".into()),
            limit: 5,
            ..Default::default()
        })
        .await
        .expect("a search")
        .total
}
