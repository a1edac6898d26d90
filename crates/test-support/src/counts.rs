//! What the backends' tests of the kept list counts share.

use sleuth_domain::{InvestigationStatus, Outcome, Priority};
use sleuth_store::{Finish, InvestigationQuery, Store, TimeRange};

use crate::fixtures::{self, simple_alert, time};

/// Counts per state as the list reports them, three ways: from the combinations and
/// facets (`investigation_counts`, `investigation_facet_counts`), for the investigations
/// tagged `tagged` (the tag counts), and over a range of whole hours (the hour counts).
pub async fn state_totals(store: &dyn Store) -> Vec<u64> {
    let whole_hours = TimeRange {
        from: Some(time(-10_000)),
        until: Some(time(10_000)),
    };
    let mut totals = Vec::new();
    for (tags, alert_create) in [
        (vec![], TimeRange::default()),
        (vec!["tagged".to_string()], TimeRange::default()),
        (vec![], whole_hours),
    ] {
        for state in InvestigationStatus::ALL {
            let query = InvestigationQuery {
                states: vec![*state],
                insight_tag_names: tags.clone(),
                alert_create,
                ..Default::default()
            };
            let page = store.list_investigations(&query).await.expect("list");
            totals.push(page.total);
        }
    }
    totals
}

/// Stores a mix that moves investigations through every counted change: eight alerts of
/// three titles, two canceled, six concluded with two outcomes and priorities and the tag
/// `tagged`, and a ninth claimed and left running. Returns `state_totals`, checked
/// against what the mix must count.
pub async fn store_a_counted_mix(store: &dyn Store) -> Vec<u64> {
    let mut created = Vec::new();
    for index in 0..8 {
        let alert = simple_alert(&format!("alert {}", index % 3), index);
        let created_one = store.create_investigation(alert, index >= 2).await;
        created.push(created_one.expect("create").investigation_id());
    }
    for id in &created[..2] {
        store
            .cancel_investigation(*id, time(10))
            .await
            .expect("cancel");
    }
    let lease = chrono::Duration::minutes(1);
    let jobs = store
        .claim_jobs("w", 10, lease, time(11))
        .await
        .expect("claim");
    assert_eq!(jobs.len(), 6);
    for (index, job) in jobs.iter().enumerate() {
        let (outcome, priority) = match index % 2 {
            0 => (Outcome::FalseAlert, Priority::Notable),
            _ => (Outcome::BreachedSuspicious, Priority::Urgent),
        };
        let mut result = fixtures::result(outcome, priority, "tagged");
        result.insight_tags.insert("tagged".into(), true.into());
        let finish = Finish::Completed {
            result: Box::new(result),
            ignored_for: None,
        };
        assert!(
            store
                .finish_job(job, &finish, time(12))
                .await
                .expect("finish")
        );
    }
    store
        .create_investigation(simple_alert("running", 9), true)
        .await
        .expect("create");
    let running = store
        .claim_jobs("w", 1, lease, time(13))
        .await
        .expect("claim");
    assert_eq!(running.len(), 1);
    let totals = state_totals(store).await;
    // Per state (not asked, loading, success, error): all, tagged, in the whole hours.
    assert_eq!(totals, [0, 1, 6, 2, 0, 0, 6, 0, 0, 1, 6, 2], "{totals:?}");
    totals
}
