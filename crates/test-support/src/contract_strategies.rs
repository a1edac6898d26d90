//! The store contract for custom strategies (`StrategyStore`): versions that share their
//! unchanged rules, standing (enabled, disabled, archived), protected strategies, the
//! active set the engine reads, and counters that count in the transaction storing a
//! result. A backend's contract binary runs it with
//! `strategy_contract_tests!(an async expression opening a fresh store)`.

use std::sync::Arc;

use serde_json::json;
use sleuth_domain::{CustomOutcomeValue, Outcome, Priority, StrategyEffects};
use sleuth_store::*;
use uuid::Uuid;

use crate::fixtures::{self, simple_alert, time};

/// Generates one test per case, like `store_contract_tests!`.
#[macro_export]
macro_rules! strategy_contract_tests {
    ($open:expr) => {
        $crate::strategy_contract_tests!(@cases $open;
            strategies_are_created_read_and_listed_by_standing_and_page,
            each_change_is_a_new_version_that_keeps_unchanged_rules,
            standing_decides_what_the_engine_sees_and_archiving_is_final,
            protected_strategies_refuse_every_change_and_builtins_sync_once,
            a_stored_result_counts_its_strategy_effects_and_a_dropped_one_does_not,
        );
    };
    (@cases $open:expr; $($case:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some((store, _guard)) = $open.await else {
                    return;
                };
                $crate::contract_strategies::$case(store).await;
            }
        )+
    };
}

fn draft(title: &str) -> StrategyDraft {
    StrategyDraft {
        title: title.into(),
        scenario: Some("VPN sign-ins from the Frankfurt office".into()),
        alert_sources: vec!["okta_system_log_event".into()],
        attack_surfaces: vec!["Identity".into()],
        mitre_tactics: vec!["Initial Access".into()],
        instructions: vec![DraftInstruction {
            id: None,
            content: "Check the travel calendar".into(),
            internal_origin_uuid: None,
        }],
        outcomes: vec![DraftOutcome {
            id: None,
            condition: json!({"in": ["vpn", {"var": "insight_tags"}]}),
            outcome: CustomOutcomeValue::FalseAlert,
            internal_origin_uuid: None,
        }],
        priorities: vec![DraftPriority {
            id: None,
            priority: Priority::Urgent,
            ranking: 5,
            outcomes: vec![Outcome::BreachedSuspicious],
            insight_tag_rule: None,
            internal_origin_uuid: None,
        }],
    }
}

fn new_strategy(title: &str) -> NewStrategy {
    NewStrategy {
        draft: draft(title),
        internal_origin_uuid: Uuid::new_v4(),
        is_enabled: true,
        is_protected: false,
        author_id: None,
    }
}

async fn create(store: &Arc<dyn Store>, title: &str) -> StrategyRecord {
    store
        .create_strategy(&new_strategy(title), time(0))
        .await
        .unwrap()
}

fn query(is_archived: bool, is_enabled: Option<bool>) -> StrategyQuery {
    StrategyQuery {
        is_archived,
        is_enabled,
        limit: 100,
        offset: 0,
    }
}

async fn listed(store: &Arc<dyn Store>, query: &StrategyQuery) -> Vec<i64> {
    store
        .list_strategies(query)
        .await
        .unwrap()
        .items
        .iter()
        .map(|strategy| strategy.id)
        .collect()
}

pub async fn strategies_are_created_read_and_listed_by_standing_and_page(store: Arc<dyn Store>) {
    let first = create(&store, "Frankfurt VPN").await;
    assert!(first.is_latest && first.is_enabled && !first.is_archived && !first.is_protected);
    assert_eq!(first.title, "Frankfurt VPN");
    assert_eq!(first.alert_sources, ["okta_system_log_event"]);
    assert_eq!(first.instructions.len(), 1);
    assert_eq!(first.instructions[0].strategy_versions, [first.version_id]);
    assert_eq!(first.outcomes[0].outcome, CustomOutcomeValue::FalseAlert);
    assert_eq!(
        first.outcomes[0].condition,
        json!({"in": ["vpn", {"var": "insight_tags"}]})
    );
    assert_eq!(first.priorities[0].ranking, 5);
    assert_eq!(first.priorities[0].outcomes, [Outcome::BreachedSuspicious]);
    assert_eq!(first.total_conclusions_affected, 0);
    assert_eq!(store.get_strategy(first.id).await.unwrap(), first);
    assert!(matches!(
        store.get_strategy(first.id + 1000).await,
        Err(StoreError::NotFound { .. })
    ));

    let second = create(&store, "Second").await;
    let third = create(&store, "Third").await;
    store
        .set_strategy_standing(second.id, StrategyStanding::Disabled, time(1))
        .await
        .unwrap();
    store
        .set_strategy_standing(third.id, StrategyStanding::Archived, time(1))
        .await
        .unwrap();
    assert_eq!(
        listed(&store, &query(false, None)).await,
        [first.id, second.id]
    );
    assert_eq!(listed(&store, &query(false, Some(true))).await, [first.id]);
    assert_eq!(
        listed(&store, &query(false, Some(false))).await,
        [second.id]
    );
    assert_eq!(listed(&store, &query(true, None)).await, [third.id]);
    let page = store
        .list_strategies(&StrategyQuery {
            limit: 1,
            offset: 1,
            ..query(false, None)
        })
        .await
        .unwrap();
    assert_eq!(page.total, 2);
    assert_eq!(
        page.items.iter().map(|item| item.id).collect::<Vec<_>>(),
        [second.id]
    );
}

pub async fn each_change_is_a_new_version_that_keeps_unchanged_rules(store: Arc<dyn Store>) {
    let first = create(&store, "Frankfurt VPN").await;

    // The same content again makes no version.
    let unchanged = store
        .update_strategy(first.id, &first.to_draft(), None, time(1))
        .await
        .unwrap();
    assert_eq!(unchanged, StrategyUpdate::Unchanged(first.clone()));
    let mut same_without_ids = draft("Frankfurt VPN");
    same_without_ids.instructions[0].id = None;
    assert!(matches!(
        store
            .update_strategy(first.id, &same_without_ids, None, time(1))
            .await
            .unwrap(),
        StrategyUpdate::Unchanged(_)
    ));

    // A new title and an edited outcome rule: a new version, the instruction and the
    // priority rule shared, the outcome rule new.
    let mut changed = first.to_draft();
    changed.title = "Frankfurt and Lisbon VPN".into();
    changed.outcomes[0].condition = json!({"in": ["lisbon", {"var": "insight_tags"}]});
    let StrategyUpdate::NewVersion(second) = store
        .update_strategy(first.id, &changed, None, time(2))
        .await
        .unwrap()
    else {
        panic!("a change makes a version");
    };
    assert_eq!(second.id, first.id);
    assert_ne!(second.version_id, first.version_id);
    assert!(second.is_latest);
    assert_eq!(second.title, "Frankfurt and Lisbon VPN");
    assert_eq!(second.instructions[0].id, first.instructions[0].id);
    assert_eq!(
        second.instructions[0].strategy_versions,
        [first.version_id, second.version_id]
    );
    assert_ne!(second.outcomes[0].id, first.outcomes[0].id);
    assert_eq!(second.outcomes[0].strategy_versions, [second.version_id]);
    assert_eq!(second.updated_at, time(2));
    assert_eq!(store.get_strategy(first.id).await.unwrap(), second);

    let versions = store.list_strategy_versions(first.id).await.unwrap();
    assert_eq!(
        versions
            .iter()
            .map(|version| (version.version_id, version.is_latest))
            .collect::<Vec<_>>(),
        [(second.version_id, true), (first.version_id, false)]
    );
    let old = &versions[1];
    assert_eq!(old.title, "Frankfurt VPN");
    assert_eq!(old.outcomes[0].id, first.outcomes[0].id);
    assert_eq!(old.updated_at, time(0));

    // Dropping a rule and naming a rule of another strategy.
    let mut fewer = second.to_draft();
    fewer.priorities.clear();
    let StrategyUpdate::NewVersion(third) = store
        .update_strategy(first.id, &fewer, None, time(3))
        .await
        .unwrap()
    else {
        panic!("dropping a rule makes a version");
    };
    assert!(third.priorities.is_empty());
    let other = create(&store, "Other").await;
    let mut foreign = third.to_draft();
    foreign.outcomes[0].id = Some(other.outcomes[0].id);
    let refused = store
        .update_strategy(first.id, &foreign, None, time(4))
        .await;
    assert!(
        matches!(&refused, Err(StoreError::Rejected { detail }) if detail.contains("outcomes[0].id")),
        "{refused:?}"
    );
    assert_eq!(
        store.list_strategy_versions(first.id).await.unwrap().len(),
        3
    );
    assert!(matches!(
        store.list_strategy_versions(other.id + 1000).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store
            .update_strategy(other.id + 1000, &fewer, None, time(4))
            .await,
        Err(StoreError::NotFound { .. })
    ));
}

pub async fn standing_decides_what_the_engine_sees_and_archiving_is_final(store: Arc<dyn Store>) {
    let empty = store.active_strategies().await.unwrap();
    assert!(empty.strategies.is_empty());
    assert_eq!(empty.generation, store.strategy_generation().await.unwrap());
    let first = create(&store, "First").await;
    let second = create(&store, "Second").await;
    let active = store.active_strategies().await.unwrap();
    assert_eq!(
        active.generation,
        empty.generation + 2,
        "each create moves it"
    );
    let active = active.strategies;
    assert_eq!(
        active
            .iter()
            .map(|strategy| (strategy.strategy_id, strategy.version_id))
            .collect::<Vec<_>>(),
        [(first.id, first.version_id), (second.id, second.version_id)]
    );
    assert_eq!(active[0], first.to_engine());

    store
        .set_strategy_standing(first.id, StrategyStanding::Disabled, time(1))
        .await
        .unwrap();
    let disabled = store.get_strategy(first.id).await.unwrap();
    assert!(!disabled.is_enabled);
    assert_eq!(disabled.updated_at, time(1));
    // Disabling again is harmless and moves nothing; nor does an update that changes
    // nothing. A real change moves the generation.
    let generation = store.strategy_generation().await.unwrap();
    store
        .set_strategy_standing(first.id, StrategyStanding::Disabled, time(2))
        .await
        .unwrap();
    assert_eq!(
        store.get_strategy(first.id).await.unwrap().updated_at,
        time(1)
    );
    store
        .update_strategy(second.id, &second.to_draft(), None, time(2))
        .await
        .unwrap();
    assert_eq!(store.strategy_generation().await.unwrap(), generation);
    let mut renamed = second.to_draft();
    renamed.title = "Second, renamed".into();
    store
        .update_strategy(second.id, &renamed, None, time(2))
        .await
        .unwrap();
    assert_eq!(store.strategy_generation().await.unwrap(), generation + 1);
    let ids = |active: ActiveStrategies| {
        active
            .strategies
            .iter()
            .map(|strategy| strategy.strategy_id)
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(store.active_strategies().await.unwrap()), [second.id]);
    store
        .set_strategy_standing(first.id, StrategyStanding::Enabled, time(3))
        .await
        .unwrap();
    assert_eq!(
        ids(store.active_strategies().await.unwrap()),
        [first.id, second.id]
    );

    let generation = store.strategy_generation().await.unwrap();
    store
        .set_strategy_standing(second.id, StrategyStanding::Archived, time(4))
        .await
        .unwrap();
    assert_eq!(store.strategy_generation().await.unwrap(), generation + 1);
    assert_eq!(ids(store.active_strategies().await.unwrap()), [first.id]);
    for refused in [
        store
            .set_strategy_standing(second.id, StrategyStanding::Enabled, time(5))
            .await,
        store
            .update_strategy(second.id, &draft("Changed"), None, time(5))
            .await
            .map(|_| ()),
    ] {
        assert!(
            matches!(&refused, Err(StoreError::Rejected { detail }) if detail.contains("archived")),
            "{refused:?}"
        );
    }
    store
        .set_strategy_standing(second.id, StrategyStanding::Archived, time(6))
        .await
        .unwrap();
    assert!(matches!(
        store
            .set_strategy_standing(second.id + 1000, StrategyStanding::Disabled, time(6))
            .await,
        Err(StoreError::NotFound { .. })
    ));
}

pub async fn protected_strategies_refuse_every_change_and_builtins_sync_once(
    store: Arc<dyn Store>,
) {
    let builtin = NewStrategy {
        is_protected: true,
        internal_origin_uuid: Uuid::from_u128(0x1234),
        draft: StrategyDraft {
            priorities: vec![DraftPriority {
                internal_origin_uuid: Some(Uuid::from_u128(0x5678)),
                ..draft("x").priorities[0].clone()
            }],
            ..draft("Built in")
        },
        ..new_strategy("Built in")
    };
    store
        .sync_builtin_strategies(std::slice::from_ref(&builtin), time(0))
        .await
        .unwrap();
    store
        .sync_builtin_strategies(std::slice::from_ref(&builtin), time(1))
        .await
        .unwrap();
    let page = store.list_strategies(&query(false, None)).await.unwrap();
    assert_eq!(page.total, 1, "synced once");
    let shipped = &page.items[0];
    assert!(shipped.is_protected && shipped.is_enabled);
    assert_eq!(shipped.internal_origin_uuid, Uuid::from_u128(0x1234));
    assert_eq!(
        shipped.priorities[0].internal_origin_uuid,
        Some(Uuid::from_u128(0x5678))
    );
    assert_eq!(shipped.created_at, time(0));

    for standing in [
        StrategyStanding::Enabled,
        StrategyStanding::Disabled,
        StrategyStanding::Archived,
    ] {
        let refused = store
            .set_strategy_standing(shipped.id, standing, time(2))
            .await;
        assert!(
            matches!(&refused, Err(StoreError::Rejected { detail }) if detail.contains("protected")),
            "{refused:?}"
        );
    }
    let refused = store
        .update_strategy(shipped.id, &draft("Changed"), None, time(2))
        .await;
    assert!(matches!(refused, Err(StoreError::Rejected { .. })));
    assert_eq!(&store.get_strategy(shipped.id).await.unwrap(), shipped);
    assert_eq!(
        store
            .list_strategy_versions(shipped.id)
            .await
            .unwrap()
            .len(),
        1
    );
}

pub async fn a_stored_result_counts_its_strategy_effects_and_a_dropped_one_does_not(
    store: Arc<dyn Store>,
) {
    let strategy = create(&store, "Counted").await;
    let other = create(&store, "Other").await;
    for title in ["one", "two"] {
        store
            .create_investigation(simple_alert(title, 1), false)
            .await
            .unwrap();
    }
    let jobs = store
        .claim_jobs("w", 10, chrono::Duration::seconds(60), time(2))
        .await
        .unwrap();
    assert_eq!(jobs.len(), 2);
    let mut result = fixtures::result(Outcome::FalseAlert, Priority::Urgent, "by a strategy");
    result.strategy_effects = StrategyEffects {
        strategy_version_ids: vec![strategy.version_id, other.version_id],
        custom_outcome_id: Some(strategy.outcomes[0].id),
        custom_priority_id: Some(strategy.priorities[0].id),
        instruction_ids: vec![strategy.instructions[0].id, other.instructions[0].id],
    };
    let finish = Finish::Completed {
        result: Box::new(result),
        ignored_for: None,
    };
    let generation = store.strategy_generation().await.unwrap();
    assert!(store.finish_job(&jobs[0], &finish, time(3)).await.unwrap());
    assert_eq!(
        store.strategy_generation().await.unwrap(),
        generation,
        "counting is not a change the engine sees"
    );
    // A stale worker's result is dropped, and with it what it would have counted.
    let stale = ClaimedJob {
        lease_token: "not the lease".into(),
        ..jobs[1].clone()
    };
    assert!(!store.finish_job(&stale, &finish, time(3)).await.unwrap());

    let counted = store.get_strategy(strategy.id).await.unwrap();
    assert_eq!(counted.outcomes[0].conclusions_affected, 1);
    assert_eq!(counted.priorities[0].priorities_affected, 1);
    assert_eq!(counted.instructions[0].usage_count, 1);
    assert_eq!(counted.total_conclusions_affected, 1);
    assert_eq!(counted.total_priorities_affected, 1);
    assert_eq!(counted.total_instructions_used, 1);
    let other = store.get_strategy(other.id).await.unwrap();
    assert_eq!(other.instructions[0].usage_count, 1);
    assert_eq!(other.total_instructions_used, 1);
    assert_eq!(other.total_conclusions_affected, 0);
    assert_eq!(other.outcomes[0].conclusions_affected, 0);
}
