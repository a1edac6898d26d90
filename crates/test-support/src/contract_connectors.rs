//! The store contract for pull connectors (`ConnectorStore`): connectors made, listed, read,
//! changed and deleted; a page's alerts and the cursor past them stored in one transaction
//! (a page refused leaves the cursor and stores nothing); one lease at a time; and the
//! tenant union a connector binds its alerts to. A backend's contract binary runs it with
//! `connector_contract_tests!(an async expression opening a fresh store)`.

use std::sync::Arc;

use chrono::Duration;
use serde_json::{Value, json};
use sleuth_domain::{InvestigationStatus, Outcome, Priority, Timestamp};
use sleuth_store::*;

use crate::fixtures::{new_alert, parsed_alert, time};

/// Generates one test per case, like `store_contract_tests!`.
#[macro_export]
macro_rules! connector_contract_tests {
    ($open:expr) => {
        $crate::connector_contract_tests!(@cases $open;
            connectors_are_made_listed_read_changed_and_deleted,
            a_page_moves_the_cursor_with_its_alerts_and_a_refused_page_moves_nothing,
            one_poller_holds_a_connector_at_a_time,
            a_connector_binds_its_alerts_to_an_existing_tenant_union,
            an_owed_verdict_is_claimed_once_its_investigation_concluded,
        );
    };
    (@cases $open:expr; $($case:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some((store, _guard)) = $open.await else {
                    return;
                };
                $crate::contract_connectors::$case(store).await;
            }
        )+
    };
}

fn connector(name: &str, tenant_union_id: Option<i64>) -> NewConnector {
    NewConnector {
        name: name.into(),
        kind: "crowdstrike".into(),
        settings: json!({"base_url": "https://api.crowdstrike.com", "client_id": "c", "secret": "FALCON"}),
        tenant_union_id,
        enabled: true,
        interval_seconds: 120,
        created_by: None,
        at: time(0),
    }
}

/// A vendor alert as a connector's page carries it: unique by `id`, in `union`.
fn vendor_alert(id: &str, minute: i64, union: Option<i64>) -> NewAlert {
    new_alert(
        parsed_alert(
            &format!("falcon detection {id}"),
            "CrowdStrike",
            minute,
            &[],
        ),
        json!({"composite_id": id, "minute": minute}),
        union,
    )
}

fn page(
    connector_id: i64,
    lease_token: &str,
    alerts: Vec<NewAlert>,
    cursor: Value,
    at: Timestamp,
) -> ConnectorPage {
    ConnectorPage {
        connector_id,
        lease_token: lease_token.into(),
        alerts,
        refused: 0,
        refused_reason: None,
        cursor,
        caught_up: false,
        write_back_ids: Vec::new(),
        lease_until: at + Duration::minutes(2),
        at,
    }
}

/// A new Falcon connector, leased to `token` from time(0) to time(1).
async fn leased_falcon(store: &Arc<dyn Store>, token: &str) -> i64 {
    let id = store
        .create_connector(&connector("falcon", None))
        .await
        .unwrap()
        .id;
    assert!(
        store
            .lease_connector(id, token, time(0), time(1))
            .await
            .unwrap()
    );
    id
}

fn is_new(created: &[Created]) -> Vec<bool> {
    created
        .iter()
        .map(|created| matches!(created, Created::New(_)))
        .collect()
}

async fn titles_in(store: &Arc<dyn Store>, scope: TenantScope) -> Vec<String> {
    let mut titles: Vec<String> = store
        .list_investigations(&InvestigationQuery {
            // Queued or concluded: every state.
            states: vec![
                InvestigationStatus::NotAsked,
                InvestigationStatus::Loading,
                InvestigationStatus::Success,
                InvestigationStatus::Error,
            ],
            limit: 100,
            scope,
            ..InvestigationQuery::default()
        })
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|item| item.alert.parsed.title)
        .collect();
    titles.sort();
    titles
}

pub async fn connectors_are_made_listed_read_changed_and_deleted(store: Arc<dyn Store>) {
    let falcon = store
        .create_connector(&connector("falcon", None))
        .await
        .unwrap();
    assert_eq!(
        (falcon.name.as_str(), falcon.kind.as_str()),
        ("falcon", "crowdstrike")
    );
    assert_eq!(falcon.settings["client_id"], "c");
    assert_eq!(falcon.interval_seconds, 120);
    assert!(falcon.enabled);
    assert_eq!(
        falcon.cursor, None,
        "a new connector reads its backfill window"
    );
    assert_eq!(falcon.next_poll_at, time(0), "due at once");
    assert_eq!(falcon.lease_expires_at, None);
    assert_eq!(
        (
            falcon.polls,
            falcon.pages,
            falcon.alerts_taken,
            falcon.failures
        ),
        (0, 0, 0, 0)
    );
    let duplicate = store.create_connector(&connector("falcon", None)).await;
    assert!(
        matches!(&duplicate, Err(StoreError::Conflict { detail }) if detail.contains("falcon")),
        "{duplicate:?}"
    );
    let okta = store
        .create_connector(&NewConnector {
            kind: "okta".into(),
            enabled: false,
            ..connector("okta", None)
        })
        .await
        .unwrap();
    let listed: Vec<(i64, String)> = store
        .list_connectors()
        .await
        .unwrap()
        .into_iter()
        .map(|record| (record.id, record.name))
        .collect();
    assert_eq!(
        listed,
        vec![(falcon.id, "falcon".into()), (okta.id, "okta".into())],
        "by id"
    );
    assert_eq!(store.get_connector(okta.id).await.unwrap(), okta);
    assert!(matches!(
        store.get_connector(okta.id + 100).await,
        Err(StoreError::NotFound { .. })
    ));

    // Settings are replaced whole; nothing else changes unless named.
    let settings = json!({"base_url": "https://api.eu-1.crowdstrike.com", "client_id": "d", "secret": "FALCON_EU"});
    let changed = store
        .update_connector(
            falcon.id,
            &ConnectorChanges {
                settings: Some(settings.clone()),
                ..ConnectorChanges::default()
            },
            time(5),
        )
        .await
        .unwrap();
    assert_eq!(changed.settings, settings);
    assert_eq!(changed.interval_seconds, 120);
    assert_eq!(
        changed.next_poll_at,
        time(0),
        "a settings change keeps the schedule"
    );
    assert_eq!(changed.updated_at, time(5));
    // Resumed: due at once.
    let resumed = store
        .update_connector(
            okta.id,
            &ConnectorChanges {
                enabled: Some(true),
                interval_seconds: Some(30),
                ..ConnectorChanges::default()
            },
            time(7),
        )
        .await
        .unwrap();
    assert!(resumed.enabled);
    assert_eq!(
        (resumed.interval_seconds, resumed.next_poll_at),
        (30, time(7))
    );
    assert!(matches!(
        store
            .update_connector(okta.id + 100, &ConnectorChanges::default(), time(8))
            .await,
        Err(StoreError::NotFound { .. })
    ));

    store.delete_connector(okta.id).await.unwrap();
    assert!(matches!(
        store.get_connector(okta.id).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.delete_connector(okta.id).await,
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(store.list_connectors().await.unwrap().len(), 1);
    // Its name is free again.
    store
        .create_connector(&connector("okta", None))
        .await
        .unwrap();
}

pub async fn a_page_moves_the_cursor_with_its_alerts_and_a_refused_page_moves_nothing(
    store: Arc<dyn Store>,
) {
    let id = leased_falcon(&store, "first").await;
    let one = vec![vendor_alert("a", 0, None), vendor_alert("b", 0, None)];
    let created = store
        .commit_connector_page(page(id, "first", one, json!({"next": "p2"}), time(0)))
        .await
        .unwrap();
    assert_eq!(is_new(&created), vec![true, true]);
    let record = store.get_connector(id).await.unwrap();
    assert_eq!(record.cursor, Some(json!({"next": "p2"})));
    assert_eq!((record.pages, record.alerts_taken), (1, 2));
    assert_eq!(
        record.lease_expires_at,
        Some(time(2)),
        "a stored page renews the lease"
    );
    assert_eq!(record.caught_up_at, None);
    assert_eq!(store.pending_jobs().await.unwrap(), 2);

    // The first poller stalls past its lease; a second takes the connector. The first's
    // next page is refused whole: no alert stored, the cursor where the second found it.
    assert!(
        store
            .lease_connector(id, "second", time(3), time(5))
            .await
            .unwrap()
    );
    let stale = page(
        id,
        "first",
        vec![vendor_alert("c", 1, None)],
        json!({"next": "p3"}),
        time(3),
    );
    let refused = store.commit_connector_page(stale).await;
    assert!(
        matches!(refused, Err(StoreError::Rejected { .. })),
        "{refused:?}"
    );
    let record = store.get_connector(id).await.unwrap();
    assert_eq!(record.cursor, Some(json!({"next": "p2"})));
    assert_eq!((record.pages, record.alerts_taken), (1, 2));
    assert_eq!(record.lease_expires_at, Some(time(5)), "the second's lease");
    assert_eq!(store.pending_jobs().await.unwrap(), 2);
    assert!(
        !titles_in(&store, TenantScope::All)
            .await
            .iter()
            .any(|title| title.ends_with(" c")),
        "the refused page's alert was not stored"
    );

    // The second reads page two again: what was stored is known, the rest is new; the
    // vendor's last page marks the connector caught up. An alert no parser read is
    // counted with its reason.
    let mut last = page(
        id,
        "second",
        vec![vendor_alert("b", 0, None), vendor_alert("c", 1, None)],
        json!({"since": "2026-03-01T12:01:00Z"}),
        time(4),
    );
    last.caught_up = true;
    last.refused = 1;
    last.refused_reason = Some("an alert of the page was refused: not JSON".into());
    let created = store.commit_connector_page(last).await.unwrap();
    assert_eq!(is_new(&created), vec![false, true]);
    let record = store.get_connector(id).await.unwrap();
    assert_eq!(
        record.cursor,
        Some(json!({"since": "2026-03-01T12:01:00Z"}))
    );
    assert_eq!(
        (
            record.pages,
            record.alerts_taken,
            record.alerts_known,
            record.alerts_refused
        ),
        (2, 3, 1, 1)
    );
    assert_eq!(record.caught_up_at, Some(time(4)));
    assert!(
        record
            .last_error
            .as_deref()
            .is_some_and(|error| error.contains("not JSON"))
    );
    assert_eq!(store.pending_jobs().await.unwrap(), 3);

    // Only the lease holder ends the poll; ending it frees the connector until its next
    // poll, and a failed poll is counted.
    let end = |token: &str, error: Option<&str>, next: i64| ConnectorPollEnd {
        connector_id: id,
        lease_token: token.into(),
        next_poll_at: time(next),
        error: error.map(str::to_owned),
        at: time(4),
    };
    assert!(
        !store
            .end_connector_poll(&end("first", None, 6))
            .await
            .unwrap()
    );
    assert!(
        store
            .end_connector_poll(&end("second", Some("503"), 6))
            .await
            .unwrap()
    );
    let record = store.get_connector(id).await.unwrap();
    assert_eq!(
        (record.lease_expires_at, record.next_poll_at),
        (None, time(6))
    );
    assert_eq!((record.polls, record.failures), (1, 1));
    assert_eq!(record.last_error.as_deref(), Some("503"));
    assert_eq!(record.last_poll_at, Some(time(4)));
    assert!(
        !store
            .lease_connector(id, "third", time(5), time(7))
            .await
            .unwrap(),
        "not due before its next poll"
    );
    assert!(
        store
            .lease_connector(id, "third", time(6), time(7))
            .await
            .unwrap()
    );
    assert!(
        store
            .end_connector_poll(&end("third", None, 9))
            .await
            .unwrap()
    );
    let record = store.get_connector(id).await.unwrap();
    assert_eq!(
        (record.polls, record.failures),
        (2, 0),
        "a good poll ends the run of failures"
    );

    // Starting again from the backfill window forgets the cursor only.
    let reset = store
        .update_connector(
            id,
            &ConnectorChanges {
                reset_cursor: true,
                ..ConnectorChanges::default()
            },
            time(8),
        )
        .await
        .unwrap();
    assert_eq!(reset.cursor, None);
    assert_eq!((reset.next_poll_at, reset.alerts_taken), (time(8), 3));
}

pub async fn one_poller_holds_a_connector_at_a_time(store: Arc<dyn Store>) {
    let id = store
        .create_connector(&connector("s1", None))
        .await
        .unwrap()
        .id;
    let attempts: Vec<_> = (0..8)
        .map(|attempt| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .lease_connector(id, &format!("poller-{attempt}"), time(0), time(1))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut won = 0;
    for attempt in attempts {
        won += usize::from(attempt.await.unwrap());
    }
    assert_eq!(won, 1, "eight pollers asking at once: one lease");
    assert!(
        !store
            .lease_connector(id, "late", time(0) + Duration::seconds(59), time(2))
            .await
            .unwrap(),
        "held until it runs out"
    );
    assert!(
        store
            .lease_connector(id, "late", time(1), time(2))
            .await
            .unwrap(),
        "a lease that ran out is free"
    );
    // A paused connector is never leased, due or not.
    let paused = store
        .create_connector(&NewConnector {
            enabled: false,
            ..connector("paused", None)
        })
        .await
        .unwrap();
    assert!(
        !store
            .lease_connector(paused.id, "any", time(10), time(11))
            .await
            .unwrap()
    );
    assert!(
        !store
            .lease_connector(paused.id + 100, "any", time(10), time(11))
            .await
            .unwrap(),
        "an unknown connector is not leased"
    );
}

pub async fn a_connector_binds_its_alerts_to_an_existing_tenant_union(store: Arc<dyn Store>) {
    let mut unions = Vec::new();
    for name in ["Acme", "Globex"] {
        let input = TenantUnionInput {
            display_name: name.into(),
            lookup_dict: serde_json::Map::new(),
            modified_by: None,
        };
        unions.push(store.create_tenant_union(&input).await.unwrap().id);
    }
    let (acme, globex) = (unions[0], unions[1]);
    let unknown = store
        .create_connector(&connector("nowhere", Some(999_999)))
        .await;
    assert!(
        matches!(unknown, Err(StoreError::Rejected { .. })),
        "{unknown:?}"
    );
    assert!(store.list_connectors().await.unwrap().is_empty());

    let for_acme = store
        .create_connector(&connector("acme falcon", Some(acme)))
        .await
        .unwrap();
    assert_eq!(for_acme.tenant_union_id, Some(acme));
    let moved = store
        .update_connector(
            for_acme.id,
            &ConnectorChanges {
                tenant_union_id: Some(Some(999_999)),
                ..ConnectorChanges::default()
            },
            time(1),
        )
        .await;
    assert!(
        matches!(moved, Err(StoreError::Rejected { .. })),
        "{moved:?}"
    );
    assert_eq!(
        store
            .get_connector(for_acme.id)
            .await
            .unwrap()
            .tenant_union_id,
        Some(acme)
    );
    let for_globex = store
        .create_connector(&connector("globex falcon", Some(globex)))
        .await
        .unwrap();

    // The same vendor alert through each tenant's connector: one investigation each, seen
    // only within its own union.
    for (record, union, token) in [(&for_acme, acme, "a"), (&for_globex, globex, "g")] {
        assert!(
            store
                .lease_connector(record.id, token, time(0), time(1))
                .await
                .unwrap()
        );
        let alerts = vec![vendor_alert("shared", 0, Some(union))];
        let created = store
            .commit_connector_page(page(record.id, token, alerts, json!({}), time(0)))
            .await
            .unwrap();
        assert_eq!(is_new(&created), vec![true], "not deduped across tenants");
    }
    for union in [acme, globex] {
        let titles = titles_in(&store, TenantScope::unions([union])).await;
        assert_eq!(titles, vec!["falcon detection shared".to_string()]);
    }
    assert_eq!(titles_in(&store, TenantScope::All).await.len(), 2);
    let elsewhere = store
        .create_tenant_union(&TenantUnionInput {
            display_name: "Initech".into(),
            lookup_dict: serde_json::Map::new(),
            modified_by: None,
        })
        .await
        .unwrap();
    assert!(
        titles_in(&store, TenantScope::unions([elsewhere.id]))
            .await
            .is_empty()
    );

    // Unbound, each alert decides again, as creates do.
    let unbound = store
        .update_connector(
            for_acme.id,
            &ConnectorChanges {
                tenant_union_id: Some(None),
                ..ConnectorChanges::default()
            },
            time(2),
        )
        .await
        .unwrap();
    assert_eq!(unbound.tenant_union_id, None);
}

pub async fn an_owed_verdict_is_claimed_once_its_investigation_concluded(store: Arc<dyn Store>) {
    let id = leased_falcon(&store, "poller").await;
    let mut first = page(
        id,
        "poller",
        vec![vendor_alert("a", 0, None), vendor_alert("b", 0, None)],
        json!({}),
        time(0),
    );
    // Only the first alert has a vendor id to write back to.
    first.write_back_ids = vec![Some("cid:ind:a".into()), None];
    let created = store.commit_connector_page(first).await.unwrap();
    let owed_investigation = created[0].investigation_id();
    assert_eq!(store.get_connector(id).await.unwrap().writebacks_pending, 1);
    assert!(
        store
            .claim_writebacks(time(1), time(11), 10)
            .await
            .unwrap()
            .is_empty(),
        "nothing to send before the investigation concludes"
    );

    let jobs = store
        .claim_jobs("w", 10, Duration::seconds(60), time(1))
        .await
        .unwrap();
    for job in &jobs {
        let finish = Finish::Completed {
            result: Box::new(crate::fixtures::result(
                Outcome::FalseAlert,
                Priority::Informational,
                "benign",
            )),
            ignored_for: None,
        };
        assert!(store.finish_job(job, &finish, time(1)).await.unwrap());
    }

    // Two processes asking at once: one takes it.
    let claims: Vec<_> = (0..4)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(
                async move { store.claim_writebacks(time(2), time(12), 10).await.unwrap() },
            )
        })
        .collect();
    let mut claimed = Vec::new();
    for claim in claims {
        claimed.extend(claim.await.unwrap());
    }
    assert_eq!(claimed.len(), 1, "{claimed:?}");
    let owed = claimed.remove(0);
    assert_eq!(
        (
            owed.connector_id,
            owed.investigation_id,
            owed.vendor_alert_id.as_str(),
            owed.attempts
        ),
        (id, owed_investigation, "cid:ind:a", 0)
    );
    assert!(
        store
            .claim_writebacks(time(5), time(15), 10)
            .await
            .unwrap()
            .is_empty(),
        "claimed until time(12)"
    );

    // A failed send waits until its retry time; a sent one is never claimed again.
    let failed = WritebackResult::Failed {
        error: "CrowdStrike Falcon answered 503".into(),
        retry_at: time(20),
    };
    store
        .record_writeback(owed.id, &failed, time(3))
        .await
        .unwrap();
    let record = store.get_connector(id).await.unwrap();
    assert_eq!((record.writebacks_sent, record.writebacks_pending), (0, 1));
    assert_eq!(
        record.last_writeback_error.as_deref(),
        Some("CrowdStrike Falcon answered 503")
    );
    assert_eq!(record.last_writeback_error_at, Some(time(3)));
    assert!(
        store
            .claim_writebacks(time(19), time(29), 10)
            .await
            .unwrap()
            .is_empty()
    );
    let again = store
        .claim_writebacks(time(20), time(30), 10)
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempts, 1);
    store
        .record_writeback(again[0].id, &WritebackResult::Sent, time(21))
        .await
        .unwrap();
    let record = store.get_connector(id).await.unwrap();
    assert_eq!((record.writebacks_sent, record.writebacks_pending), (1, 0));
    assert!(
        store
            .claim_writebacks(time(99), time(109), 10)
            .await
            .unwrap()
            .is_empty()
    );

    // Deleting the connector forgets what it owed.
    store.delete_connector(id).await.unwrap();
}
