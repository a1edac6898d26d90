//! The store contract for notifications (`NotificationStore`): destinations made, listed,
//! read and changed; a destination's cursor starting at the newest system event and moving
//! with the deliveries queued before it (a lost lease writes nothing, an event is queued
//! once); attempts that retry, deliver or dead-letter a delivery, one by one or in a
//! batch, or before the delivery is written; a dead delivery sent again; one deliverer at a time. A backend's contract binary runs it with
//! `notification_contract_tests!(an async expression opening a fresh store)`.

use std::sync::Arc;

use serde_json::{Map, json};
use sleuth_store::*;

use crate::fixtures::time;

/// Generates one test per case, like `store_contract_tests!`.
#[macro_export]
macro_rules! notification_contract_tests {
    ($open:expr) => {
        $crate::notification_contract_tests!(@cases $open;
            destinations_are_made_listed_read_and_changed,
            queued_deliveries_move_the_cursor_once_and_a_lost_lease_writes_nothing,
            attempts_retry_deliver_or_dead_letter_and_a_dead_delivery_is_sent_again,
            a_batch_of_attempts_is_recorded_as_if_one_by_one,
            deliveries_sent_before_their_write_are_written_as_their_attempt_left_them,
            many_deliveries_are_queued_at_once_in_event_order,
            concluded_investigations_are_read_as_destinations_are_told_of_them,
            one_deliverer_holds_a_destination_at_a_time,
            delivered_deliveries_are_purged_by_age_and_the_others_stay,
        );
    };
    (@cases $open:expr; $($case:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some((store, _guard)) = $open.await else {
                    return;
                };
                $crate::contract_notifications::$case(store).await;
            }
        )+
    };
}

fn destination(name: &str) -> NewNotificationDestination {
    NewNotificationDestination {
        name: name.into(),
        kind: "webhook".into(),
        settings: json!({"url_secret": "HOOK_URL", "signing_secret": "HOOK_KEY"}),
        rule: json!({"events": ["investigation.concluded"]}),
        template: None,
        enabled: true,
        rate_limit_per_minute: None,
        created_by: None,
        at: time(0),
    }
}

async fn record_events(store: &Arc<dyn Store>, count: usize) {
    let events: Vec<NewSystemEvent> = (0..count)
        .map(|_| NewSystemEvent {
            trigger_name: "investigation_completed".into(),
            trigger_args: Map::new(),
            investigation_id: None,
            entity: None,
        })
        .collect();
    store.record_system_events(&events, time(0)).await.unwrap();
}

fn delivery(system_event_id: i64) -> NewDelivery {
    NewDelivery {
        system_event_id,
        event_id: format!("event-{system_event_id}"),
        event: json!({"id": format!("event-{system_event_id}")}).to_string(),
        first_attempt: None,
    }
}

/// A new destination leased to `token` from time(0) to time(10).
async fn leased(store: &Arc<dyn Store>, name: &str, token: &str) -> i64 {
    let id = store
        .create_notification_destination(&destination(name))
        .await
        .unwrap()
        .id;
    assert!(
        store
            .lease_notification_destination(id, token, time(0), time(10))
            .await
            .unwrap()
    );
    id
}

pub async fn destinations_are_made_listed_read_and_changed(store: Arc<dyn Store>) {
    record_events(&store, 3).await;
    let newest = store.newest_system_event_id().await.unwrap();
    let made = store
        .create_notification_destination(&destination("soc-webhook"))
        .await
        .unwrap();
    assert_eq!(
        made.cursor, newest,
        "a new destination starts at the newest event"
    );
    assert_eq!(made.kind, "webhook");
    assert!(made.enabled);
    assert_eq!((made.pending, made.delivered, made.dead), (0, 0, 0));
    let duplicate = store
        .create_notification_destination(&destination("soc-webhook"))
        .await;
    assert!(
        matches!(duplicate, Err(StoreError::Conflict { .. })),
        "{duplicate:?}"
    );
    let other = store
        .create_notification_destination(&NewNotificationDestination {
            template: Some("{title}".into()),
            rate_limit_per_minute: Some(30),
            ..destination("pager")
        })
        .await
        .unwrap();
    let listed = store.list_notification_destinations().await.unwrap();
    assert_eq!(
        listed.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
        ["soc-webhook", "pager"]
    );
    let changed = store
        .update_notification_destination(
            other.id,
            &NotificationDestinationChanges {
                template: Some(None),
                rate_limit_per_minute: Some(None),
                enabled: Some(false),
                rule: Some(json!({"events": ["system.event"]})),
                ..NotificationDestinationChanges::default()
            },
            time(5),
        )
        .await
        .unwrap();
    assert_eq!(changed.template, None);
    assert_eq!(changed.rate_limit_per_minute, None);
    assert!(!changed.enabled);
    assert_eq!(changed.rule, json!({"events": ["system.event"]}));
    assert_eq!(changed.name, "pager", "what was not named stays");
    assert_eq!(changed.updated_at, time(5));
    assert_eq!(
        store.get_notification_destination(other.id).await.unwrap(),
        changed
    );
    let renamed = store
        .update_notification_destination(
            other.id,
            &NotificationDestinationChanges {
                name: Some("soc-webhook".into()),
                ..NotificationDestinationChanges::default()
            },
            time(6),
        )
        .await;
    assert!(
        matches!(renamed, Err(StoreError::Conflict { .. })),
        "{renamed:?}"
    );
    assert!(matches!(
        store.get_notification_destination(999_999).await,
        Err(StoreError::NotFound { .. })
    ));
}

pub async fn queued_deliveries_move_the_cursor_once_and_a_lost_lease_writes_nothing(
    store: Arc<dyn Store>,
) {
    let id = leased(&store, "soc-webhook", "mine").await;
    let batch = DeliveryBatch {
        destination_id: id,
        lease_token: "mine".into(),
        cursor: 7,
        deliveries: vec![delivery(3), delivery(5)],
        at: time(1),
    };
    store.queue_notification_deliveries(&batch).await.unwrap();
    // Queued again (a deliverer that stopped before it knew the first commit held): once.
    store.queue_notification_deliveries(&batch).await.unwrap();
    let destination = store.get_notification_destination(id).await.unwrap();
    assert_eq!(destination.cursor, 7);
    assert_eq!(destination.pending, 2);
    let due = store
        .due_notification_deliveries(id, time(1), 10)
        .await
        .unwrap();
    assert_eq!(
        due.iter().map(|d| d.system_event_id).collect::<Vec<_>>(),
        [Some(3), Some(5)]
    );
    assert_eq!(due[0].event_id, "event-3");
    assert_eq!(due[0].event, json!({"id": "event-3"}));
    assert_eq!(due[0].state, DeliveryState::Pending);
    assert_eq!(due[0].attempts, 0);

    let lost = store
        .queue_notification_deliveries(&DeliveryBatch {
            lease_token: "someone-else".into(),
            cursor: 9,
            deliveries: vec![delivery(8)],
            ..batch
        })
        .await;
    assert!(matches!(lost, Err(StoreError::Rejected { .. })), "{lost:?}");
    let destination = store.get_notification_destination(id).await.unwrap();
    assert_eq!(destination.cursor, 7, "a lost lease moves nothing");
    assert_eq!(destination.pending, 2, "and queues nothing");
}

pub async fn attempts_retry_deliver_or_dead_letter_and_a_dead_delivery_is_sent_again(
    store: Arc<dyn Store>,
) {
    let id = leased(&store, "soc-webhook", "mine").await;
    store
        .queue_notification_deliveries(&DeliveryBatch {
            destination_id: id,
            lease_token: "mine".into(),
            cursor: 3,
            deliveries: vec![delivery(1), delivery(2), delivery(3)],
            at: time(1),
        })
        .await
        .unwrap();
    let due = store
        .due_notification_deliveries(id, time(1), 10)
        .await
        .unwrap();
    let (first, second, third) = (due[0].id, due[1].id, due[2].id);
    store
        .record_notification_attempt(&DeliveryAttempt {
            delivery_id: first,
            result: AttemptResult::Retry {
                error: "HTTP 429: slow down".into(),
                retry_at: time(4),
            },
            pause_destination_until: Some(time(4)),
            at: time(2),
        })
        .await
        .unwrap();
    store
        .record_notification_attempt(&DeliveryAttempt {
            delivery_id: second,
            result: AttemptResult::Delivered {
                detail: "HTTP 204".into(),
            },
            pause_destination_until: None,
            at: time(2),
        })
        .await
        .unwrap();
    store
        .record_notification_attempt(&DeliveryAttempt {
            delivery_id: third,
            result: AttemptResult::Dead {
                error: "HTTP 404: no such hook".into(),
            },
            pause_destination_until: None,
            at: time(3),
        })
        .await
        .unwrap();
    // An attempt recorded late, on a delivery no longer pending, changes nothing.
    store
        .record_notification_attempt(&DeliveryAttempt {
            delivery_id: second,
            result: AttemptResult::Dead {
                error: "late".into(),
            },
            pause_destination_until: None,
            at: time(3),
        })
        .await
        .unwrap();

    let destination = store.get_notification_destination(id).await.unwrap();
    assert_eq!(
        (destination.pending, destination.delivered, destination.dead),
        (1, 1, 1)
    );
    assert_eq!(destination.paused_until, Some(time(4)));
    assert_eq!(
        destination.last_error.as_deref(),
        Some("HTTP 404: no such hook")
    );
    assert_eq!(destination.last_delivered_at, Some(time(2)));
    assert!(
        store
            .due_notification_deliveries(id, time(3), 10)
            .await
            .unwrap()
            .is_empty(),
        "the retry is not due before its time"
    );
    let retried = store
        .due_notification_deliveries(id, time(4), 10)
        .await
        .unwrap();
    assert_eq!(retried.len(), 1);
    assert_eq!(retried[0].attempts, 1);
    assert_eq!(
        retried[0].last_error.as_deref(),
        Some("HTTP 429: slow down")
    );

    let dead = store
        .list_notification_deliveries(&DeliveryQuery {
            destination_id: id,
            state: Some(DeliveryState::Dead),
            before_id: None,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].id, third);
    let all = store
        .list_notification_deliveries(&DeliveryQuery {
            destination_id: id,
            state: None,
            before_id: None,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(
        all.iter().map(|d| d.id).collect::<Vec<_>>(),
        [third, second, first],
        "newest first"
    );
    let delivered = all.iter().find(|d| d.id == second).unwrap();
    assert_eq!(delivered.delivered_at, Some(time(2)));
    assert_eq!(delivered.delivered_detail.as_deref(), Some("HTTP 204"));
    let page = store
        .list_notification_deliveries(&DeliveryQuery {
            destination_id: id,
            state: None,
            before_id: Some(second),
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(page.iter().map(|d| d.id).collect::<Vec<_>>(), [first]);

    let again = store
        .redeliver_notification(id, third, time(5))
        .await
        .unwrap();
    assert_eq!(again.state, DeliveryState::Pending);
    assert_eq!(again.attempts, 0);
    assert_eq!(again.next_attempt_at, time(5));
    assert!(matches!(
        store.redeliver_notification(id, second, time(5)).await,
        Err(StoreError::Conflict { .. })
    ));
    assert!(matches!(
        store.redeliver_notification(id + 1, third, time(5)).await,
        Err(StoreError::NotFound { .. })
    ));
}

pub async fn a_batch_of_attempts_is_recorded_as_if_one_by_one(store: Arc<dyn Store>) {
    let id = leased(&store, "soc-webhook", "mine").await;
    let other = leased(&store, "pager", "mine").await;
    for (destination_id, deliveries) in [
        (id, vec![delivery(1), delivery(2), delivery(3), delivery(4)]),
        (other, vec![delivery(1)]),
    ] {
        store
            .queue_notification_deliveries(&DeliveryBatch {
                destination_id,
                lease_token: "mine".into(),
                cursor: 4,
                deliveries,
                at: time(1),
            })
            .await
            .unwrap();
    }
    let due = store
        .due_notification_deliveries(id, time(1), 10)
        .await
        .unwrap();
    let other_due = store
        .due_notification_deliveries(other, time(1), 10)
        .await
        .unwrap();
    let attempt =
        |delivery_id: i64, result: AttemptResult, pause: Option<sleuth_domain::Timestamp>, at| {
            DeliveryAttempt {
                delivery_id,
                result,
                pause_destination_until: pause,
                at,
            }
        };
    let delivered = |detail: &str| AttemptResult::Delivered {
        detail: detail.into(),
    };
    store
        .record_notification_attempts(&[
            attempt(
                due[0].id,
                AttemptResult::Retry {
                    error: "HTTP 429: slow down".into(),
                    retry_at: time(6),
                },
                Some(time(6)),
                time(2),
            ),
            attempt(due[1].id, delivered("HTTP 204"), None, time(2)),
            attempt(
                due[2].id,
                AttemptResult::Dead {
                    error: "HTTP 404: no such hook".into(),
                },
                None,
                time(3),
            ),
            attempt(due[3].id, delivered("HTTP 200"), None, time(4)),
            attempt(other_due[0].id, delivered("HTTP 202"), None, time(5)),
        ])
        .await
        .unwrap();
    // Late attempts on deliveries no longer pending change nothing, not even the
    // destination's last error, while the pending one in the same batch is recorded.
    store
        .record_notification_attempts(&[
            attempt(
                due[1].id,
                AttemptResult::Dead {
                    error: "late".into(),
                },
                Some(time(9)),
                time(7),
            ),
            attempt(
                due[0].id,
                AttemptResult::Retry {
                    error: "HTTP 503: down".into(),
                    retry_at: time(8),
                },
                None,
                time(7),
            ),
        ])
        .await
        .unwrap();
    store.record_notification_attempts(&[]).await.unwrap();

    let destination = store.get_notification_destination(id).await.unwrap();
    assert_eq!(
        (destination.pending, destination.delivered, destination.dead),
        (1, 2, 1)
    );
    assert_eq!(destination.paused_until, Some(time(6)));
    assert_eq!(destination.last_error.as_deref(), Some("HTTP 503: down"));
    assert_eq!(destination.last_error_at, Some(time(7)));
    assert_eq!(destination.last_delivered_at, Some(time(4)));
    let other = store.get_notification_destination(other).await.unwrap();
    assert_eq!(
        (
            other.pending,
            other.delivered,
            other.dead,
            other.last_delivered_at
        ),
        (0, 1, 0, Some(time(5)))
    );
    assert_eq!(other.last_error, None);
    assert_eq!(other.paused_until, None);

    let all = store
        .list_notification_deliveries(&DeliveryQuery {
            destination_id: id,
            state: None,
            before_id: None,
            limit: 10,
        })
        .await
        .unwrap();
    let by_id = |delivery_id: i64| all.iter().find(|d| d.id == delivery_id).unwrap();
    let retried = by_id(due[0].id);
    assert_eq!(
        (retried.state, retried.attempts, retried.next_attempt_at),
        (DeliveryState::Pending, 2, time(8))
    );
    assert_eq!(retried.last_error.as_deref(), Some("HTTP 503: down"));
    let first_delivered = by_id(due[1].id);
    assert_eq!(
        (first_delivered.state, first_delivered.attempts),
        (DeliveryState::Delivered, 1)
    );
    assert_eq!(first_delivered.delivered_at, Some(time(2)));
    assert_eq!(
        first_delivered.delivered_detail.as_deref(),
        Some("HTTP 204")
    );
    assert_eq!(first_delivered.last_error, None);
    let dead = by_id(due[2].id);
    assert_eq!((dead.state, dead.delivered_at), (DeliveryState::Dead, None));
    assert_eq!(dead.last_error.as_deref(), Some("HTTP 404: no such hook"));
    assert_eq!(by_id(due[3].id).delivered_at, Some(time(4)));
}

/// The deliverer's usual way: a new event is sent first, and its delivery written once,
/// with the cursor, as the attempt left it; the destination records the attempts as if
/// they had been recorded one by one.
pub async fn deliveries_sent_before_their_write_are_written_as_their_attempt_left_them(
    store: Arc<dyn Store>,
) {
    let id = leased(&store, "soc-webhook", "mine").await;
    let tried = |mut delivery: NewDelivery, result: AttemptResult, pause, at| {
        delivery.first_attempt = Some(FirstAttempt {
            result,
            pause_destination_until: pause,
            at,
        });
        delivery
    };
    let delivered = |detail: &str| AttemptResult::Delivered {
        detail: detail.into(),
    };
    store
        .queue_notification_deliveries(&DeliveryBatch {
            destination_id: id,
            lease_token: "mine".into(),
            cursor: 5,
            deliveries: vec![
                tried(delivery(1), delivered("HTTP 204"), None, time(2)),
                tried(
                    delivery(2),
                    AttemptResult::Dead {
                        error: "refused: HTTP 404: no such hook".into(),
                    },
                    None,
                    time(3),
                ),
                tried(delivery(3), delivered("HTTP 200"), None, time(4)),
                tried(
                    delivery(4),
                    AttemptResult::Retry {
                        error: "HTTP 429: slow down".into(),
                        retry_at: time(9),
                    },
                    Some(time(9)),
                    time(5),
                ),
                // Not sent: the destination asked for a pause.
                delivery(5),
            ],
            at: time(1),
        })
        .await
        .unwrap();

    let destination = store.get_notification_destination(id).await.unwrap();
    assert_eq!(destination.cursor, 5);
    assert_eq!(
        (destination.pending, destination.delivered, destination.dead),
        (2, 2, 1)
    );
    assert_eq!(destination.last_delivered_at, Some(time(4)));
    assert_eq!(
        destination.last_error.as_deref(),
        Some("HTTP 429: slow down")
    );
    assert_eq!(destination.last_error_at, Some(time(5)));
    assert_eq!(destination.paused_until, Some(time(9)));

    // Due now: the untried one only; the retry when its time comes.
    let due_now = store
        .due_notification_deliveries(id, time(6), 10)
        .await
        .unwrap();
    assert_eq!(
        due_now
            .iter()
            .map(|d| (d.system_event_id, d.attempts))
            .collect::<Vec<_>>(),
        vec![(Some(5), 0)]
    );
    let due_later = store
        .due_notification_deliveries(id, time(9), 10)
        .await
        .unwrap();
    assert_eq!(
        due_later
            .iter()
            .map(|d| (d.system_event_id, d.attempts))
            .collect::<Vec<_>>(),
        vec![(Some(5), 0), (Some(4), 1)]
    );
    assert_eq!(due_later[1].event, json!({"id": "event-4"}));

    let all = store
        .list_notification_deliveries(&DeliveryQuery {
            destination_id: id,
            state: None,
            before_id: None,
            limit: 10,
        })
        .await
        .unwrap();
    let of = |system_event_id: i64| {
        all.iter()
            .find(|d| d.system_event_id == Some(system_event_id))
            .unwrap()
    };
    let first = of(1);
    assert_eq!(
        (first.state, first.attempts, first.delivered_at),
        (DeliveryState::Delivered, 1, Some(time(2)))
    );
    assert_eq!(first.delivered_detail.as_deref(), Some("HTTP 204"));
    assert_eq!(first.last_error, None);
    let dead = of(2);
    assert_eq!(
        (dead.state, dead.attempts, dead.delivered_at),
        (DeliveryState::Dead, 1, None)
    );
    assert_eq!(
        dead.last_error.as_deref(),
        Some("refused: HTTP 404: no such hook")
    );
    let retried = of(4);
    assert_eq!(
        (retried.state, retried.next_attempt_at),
        (DeliveryState::Pending, time(9))
    );
    assert_eq!(retried.last_error.as_deref(), Some("HTTP 429: slow down"));
    let untried = of(5);
    assert_eq!(
        (untried.state, untried.attempts, untried.next_attempt_at),
        (DeliveryState::Pending, 0, time(1))
    );
}

pub async fn many_deliveries_are_queued_at_once_in_event_order(store: Arc<dyn Store>) {
    let id = leased(&store, "soc-webhook", "mine").await;
    // More than one statement's worth of rows, and one already queued.
    store
        .queue_notification_deliveries(&DeliveryBatch {
            destination_id: id,
            lease_token: "mine".into(),
            cursor: 2,
            deliveries: vec![delivery(2)],
            at: time(1),
        })
        .await
        .unwrap();
    store
        .queue_notification_deliveries(&DeliveryBatch {
            destination_id: id,
            lease_token: "mine".into(),
            cursor: 700,
            deliveries: (1..=600).map(delivery).collect(),
            at: time(2),
        })
        .await
        .unwrap();
    let destination = store.notification_destination_to_deliver(id).await.unwrap();
    assert_eq!(destination.cursor, 700);
    let due = store
        .due_notification_deliveries(id, time(2), 1000)
        .await
        .unwrap();
    assert_eq!(due.len(), 600);
    assert_eq!(due[0].system_event_id, Some(2), "queued first, due first");
    assert_eq!(due[0].created_at, time(1));
    assert_eq!(
        due[1..]
            .iter()
            .map(|d| d.system_event_id.unwrap())
            .collect::<Vec<_>>(),
        (1..=600).filter(|id| *id != 2).collect::<Vec<_>>()
    );
    assert_eq!(due[599].event, json!({"id": "event-600"}));
    assert!(matches!(
        store.notification_destination_to_deliver(999_999).await,
        Err(StoreError::NotFound { .. })
    ));
}

pub async fn concluded_investigations_are_read_as_destinations_are_told_of_them(
    store: Arc<dyn Store>,
) {
    use sleuth_domain::{EntityKind, Outcome, Priority};
    let mut parsed = crate::fixtures::parsed_alert(
        "Mimikatz on WKS-0231",
        "CrowdStrike Falcon",
        1,
        &[(EntityKind::Host, "wks-0231"), (EntityKind::User, "alice")],
    );
    parsed.tenant_id = Some("acme".into());
    let alert = crate::fixtures::new_alert(parsed, json!({"mimikatz": 1}), None);
    let breach = crate::contract::concluded_with_tags(
        &store,
        alert,
        Outcome::BreachedConfirmed,
        Priority::Urgent,
        &["credential_dumping", "lateral_movement"],
        2,
    )
    .await;
    let quiet = crate::contract::concluded_with_tags(
        &store,
        crate::fixtures::simple_alert("quiet", 3),
        Outcome::FalseAlert,
        Priority::Informational,
        &[],
        4,
    )
    .await;
    let waiting = store
        .create_investigation(crate::fixtures::simple_alert("waiting", 5), false)
        .await
        .unwrap()
        .investigation_id();
    let mut told = store
        .investigations_to_tell(&[waiting, quiet, breach, 999_999])
        .await
        .unwrap();
    told.sort_by_key(|investigation| investigation.investigation_id);
    assert_eq!(
        told.iter().map(|i| i.investigation_id).collect::<Vec<_>>(),
        [breach, quiet],
        "one without a conclusion, or gone, is left out"
    );
    let mut tags = told[0].insight_tags.clone();
    tags.sort();
    assert_eq!(
        (told[0].clone(), tags),
        (
            InvestigationToTell {
                investigation_id: breach,
                outcome: Outcome::BreachedConfirmed,
                priority: Priority::Urgent,
                title: "Mimikatz on WKS-0231".into(),
                tenant_id: Some("acme".into()),
                tenant_union: store
                    .get_investigation(breach)
                    .await
                    .unwrap()
                    .alert
                    .tenant_union
                    .display_name,
                source: "CrowdStrike Falcon".into(),
                entities: vec![
                    sleuth_domain::Entity::new(EntityKind::Host, "wks-0231"),
                    sleuth_domain::Entity::new(EntityKind::User, "alice"),
                ],
                conclusion: format!("conclusion of {breach}"),
                mitre_tactic: Some("Execution".into()),
                insight_tags: told[0].insight_tags.clone(),
            },
            vec![
                "credential_dumping".to_string(),
                "lateral_movement".to_string()
            ]
        )
    );
    assert_eq!(
        (
            told[1].outcome,
            told[1].priority,
            told[1].tenant_id.clone(),
            told[1].entities.len()
        ),
        (Outcome::FalseAlert, Priority::Informational, None, 0)
    );
    assert!(store.investigations_to_tell(&[]).await.unwrap().is_empty());
}

pub async fn one_deliverer_holds_a_destination_at_a_time(store: Arc<dyn Store>) {
    let id = leased(&store, "soc-webhook", "first").await;
    assert!(
        !store
            .lease_notification_destination(id, "second", time(1), time(11))
            .await
            .unwrap(),
        "held until time(10)"
    );
    assert!(
        store
            .lease_notification_destination(id, "first", time(1), time(11))
            .await
            .unwrap(),
        "the holder extends its own lease"
    );
    assert!(
        store
            .lease_notification_destination(id, "second", time(12), time(20))
            .await
            .unwrap(),
        "an expired lease is taken"
    );
    store
        .release_notification_destination(id, "first")
        .await
        .unwrap();
    assert!(
        !store
            .lease_notification_destination(id, "third", time(13), time(20))
            .await
            .unwrap(),
        "a stale holder's release lets go of nothing"
    );
    store
        .release_notification_destination(id, "second")
        .await
        .unwrap();
    store
        .update_notification_destination(
            id,
            &NotificationDestinationChanges {
                enabled: Some(false),
                ..NotificationDestinationChanges::default()
            },
            time(14),
        )
        .await
        .unwrap();
    assert!(
        !store
            .lease_notification_destination(id, "third", time(14), time(20))
            .await
            .unwrap(),
        "a disabled destination is not delivered to"
    );
}

pub async fn delivered_deliveries_are_purged_by_age_and_the_others_stay(store: Arc<dyn Store>) {
    let id = leased(&store, "soc-webhook", "mine").await;
    store
        .queue_notification_deliveries(&DeliveryBatch {
            destination_id: id,
            lease_token: "mine".into(),
            cursor: 4,
            deliveries: (1..=4).map(delivery).collect(),
            at: time(1),
        })
        .await
        .unwrap();
    let due = store
        .due_notification_deliveries(id, time(1), 10)
        .await
        .unwrap();
    let results = [
        (
            AttemptResult::Delivered {
                detail: "HTTP 204".into(),
            },
            time(2),
        ),
        (
            AttemptResult::Delivered {
                detail: "HTTP 204".into(),
            },
            time(5),
        ),
        (
            AttemptResult::Dead {
                error: "HTTP 404".into(),
            },
            time(2),
        ),
    ];
    for (delivery, (result, at)) in due.iter().zip(results) {
        store
            .record_notification_attempt(&DeliveryAttempt {
                delivery_id: delivery.id,
                result,
                pause_destination_until: None,
                at,
            })
            .await
            .unwrap();
    }
    assert_eq!(
        store
            .purge_delivered_notifications(time(2), 100)
            .await
            .unwrap(),
        0,
        "delivered at the cut-off is kept"
    );
    assert_eq!(
        store
            .purge_delivered_notifications(time(60), 100)
            .await
            .unwrap(),
        2
    );
    let destination = store.get_notification_destination(id).await.unwrap();
    assert_eq!(
        (destination.pending, destination.delivered, destination.dead),
        (1, 0, 1),
        "pending and dead deliveries stay whatever their age"
    );
    let listed = store.notification_destinations_to_deliver().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].id, listed[0].cursor, listed[0].pending),
        (id, 4, 0),
        "the deliverer's listing leaves out the counts"
    );
}
