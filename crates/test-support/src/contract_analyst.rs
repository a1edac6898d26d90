//! The store contract for the analyst's side (`AnalystStore`): notes, their place in the
//! free-text search, feedback on concluded investigations and what history makes of it;
//! and the user rule that goes with administering people over the API (there is always
//! an active admin). A backend's contract binary runs it with
//! `analyst_contract_tests!(an async expression opening a fresh store)`.

use std::sync::Arc;

use serde_json::json;
use sleuth_domain::{
    EntityKind, FeedbackStatus, InvestigationStatus, Outcome, Priority, Role, Timestamp,
};
use sleuth_store::*;

use crate::fixtures::{self, new_alert, parsed_alert, simple_alert, time};

/// Generates one test per case, like `store_contract_tests!`.
#[macro_export]
macro_rules! analyst_contract_tests {
    ($open:expr) => {
        $crate::analyst_contract_tests!(@cases $open;
            notes_are_written_listed_changed_and_deleted,
            notes_are_found_by_search_before_and_after_the_conclusion,
            feedback_waits_for_a_conclusion_and_records_who_and_when,
            feedback_is_the_human_verdict_history_hands_on,
            the_last_active_admin_cannot_be_demoted_or_deactivated,
            the_dashboard_samples_its_scope_and_window_within_its_bounds,
        );
    };
    (@cases $open:expr; $($case:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some((store, _guard)) = $open.await else {
                    return;
                };
                $crate::contract_analyst::$case(store).await;
            }
        )+
    };
}

async fn user(store: &Arc<dyn Store>, email: &str, role: Role) -> User {
    store
        .create_user(&fixtures::new_user(email, role))
        .await
        .unwrap()
}

async fn queued(store: &Arc<dyn Store>, alert: NewAlert) -> i64 {
    store
        .create_investigation(alert, false)
        .await
        .unwrap()
        .investigation_id()
}

/// Runs every queued job to the given conclusion at `at`.
async fn conclude_all(store: &Arc<dyn Store>, outcome: Outcome, priority: Priority, at: Timestamp) {
    let jobs = store
        .claim_jobs("w", 1000, chrono::Duration::seconds(60), at)
        .await
        .unwrap();
    for job in jobs {
        let result = fixtures::result(outcome, priority, "concluded by the contract");
        let finish = Finish::Completed {
            result: Box::new(result),
            ignored_for: None,
        };
        assert!(store.finish_job(&job, &finish, at).await.unwrap());
    }
}

fn searching(words: &str) -> InvestigationQuery {
    InvestigationQuery {
        states: InvestigationStatus::ALL.to_vec(),
        search: Some(words.into()),
        limit: 100,
        ..InvestigationQuery::default()
    }
}

async fn found(store: &Arc<dyn Store>, query: &InvestigationQuery) -> Vec<i64> {
    store
        .list_investigations(query)
        .await
        .unwrap()
        .items
        .iter()
        .map(|item| item.id)
        .collect()
}

fn is_not_found<T: std::fmt::Debug>(result: StoreResult<T>) -> bool {
    matches!(result, Err(StoreError::NotFound { .. }))
}

/// Every note of the investigation (far fewer than a page's limit here).
async fn notes(store: &Arc<dyn Store>, investigation_id: i64) -> Vec<NoteRecord> {
    let page = store.list_notes(investigation_id, 1000, 0).await.unwrap();
    assert_eq!(page.total, page.items.len() as u64);
    page.items
}

pub async fn notes_are_written_listed_changed_and_deleted(store: Arc<dyn Store>) {
    let analyst = user(&store, "analyst@example.com", Role::Member).await;
    let investigation_id = queued(&store, simple_alert("noted", 0)).await;
    let other_id = queued(&store, simple_alert("quiet", 1)).await;
    assert!(notes(&store, other_id).await.is_empty());

    let first = store
        .create_note(investigation_id, analyst.id, "Called the user.", time(1))
        .await
        .unwrap();
    assert_eq!(first.investigation_id, investigation_id);
    assert_eq!(first.text, "Called the user.");
    assert_eq!(first.author, analyst);
    assert_eq!((first.created_at, first.updated_at), (time(1), time(1)));
    let second = store
        .create_note(investigation_id, analyst.id, "Ünïcödé ✓ 東京", time(2))
        .await
        .unwrap();
    assert_eq!(store.get_note(second.id).await.unwrap(), second);
    let listed = notes(&store, investigation_id).await;
    assert_eq!(listed, vec![first.clone(), second.clone()], "oldest first");
    let page = store.list_notes(investigation_id, 1, 1).await.unwrap();
    assert_eq!(
        (page.total, page.items),
        (2, vec![second.clone()]),
        "paged, with the total"
    );
    assert!(notes(&store, other_id).await.is_empty());

    let changed = store
        .update_note(first.id, "Called the user: it was them.", time(5))
        .await
        .unwrap();
    assert_eq!(changed.text, "Called the user: it was them.");
    assert_eq!(
        (changed.created_at, changed.updated_at),
        (time(1), time(5)),
        "a change keeps the creation time"
    );
    store.delete_note(second.id).await.unwrap();
    assert_eq!(notes(&store, investigation_id).await, vec![changed]);

    assert!(is_not_found(store.get_note(second.id).await));
    assert!(is_not_found(
        store.update_note(second.id, "x", time(6)).await
    ));
    assert!(is_not_found(store.delete_note(second.id).await));
    assert!(is_not_found(store.list_notes(999_999, 10, 0).await));
    assert!(is_not_found(
        store.create_note(999_999, analyst.id, "x", time(6)).await
    ));
}

pub async fn notes_are_found_by_search_before_and_after_the_conclusion(store: Arc<dyn Store>) {
    let analyst = user(&store, "analyst@example.com", Role::Member).await;
    let investigation_id = queued(&store, simple_alert("Beacon to rare domain", 0)).await;
    let note = store
        .create_note(
            investigation_id,
            analyst.id,
            "Spoke to Zanzibar team about it",
            time(1),
        )
        .await
        .unwrap();
    assert_eq!(
        found(&store, &searching("zanzibar")).await,
        [investigation_id]
    );

    // The conclusion replaces the search document; the note's words stay in it.
    conclude_all(
        &store,
        Outcome::FalseAlert,
        Priority::Informational,
        time(2),
    )
    .await;
    assert_eq!(
        found(&store, &searching("zanzibar team")).await,
        [investigation_id]
    );
    assert_eq!(
        found(&store, &searching("concluded zanzibar")).await,
        [investigation_id],
        "the conclusion's words and the note's, together"
    );

    store
        .update_note(note.id, "Spoke to the Timbuktu team", time(3))
        .await
        .unwrap();
    assert!(found(&store, &searching("zanzibar")).await.is_empty());
    assert_eq!(
        found(&store, &searching("timbuktu")).await,
        [investigation_id]
    );
    assert_eq!(
        found(&store, &searching("beacon")).await,
        [investigation_id],
        "the alert's own words stay"
    );
    // A note rewrote the concluded one's document: it is still counted among the successes.
    let among_successes = store
        .list_investigations(&InvestigationQuery {
            search: Some("timbuktu".into()),
            limit: 100,
            ..InvestigationQuery::default()
        })
        .await
        .unwrap();
    assert_eq!((among_successes.total, among_successes.items.len()), (1, 1));

    store.delete_note(note.id).await.unwrap();
    assert!(found(&store, &searching("timbuktu")).await.is_empty());
    assert_eq!(
        found(&store, &searching("beacon")).await,
        [investigation_id]
    );
}

pub async fn feedback_waits_for_a_conclusion_and_records_who_and_when(store: Arc<dyn Store>) {
    let analyst = user(&store, "analyst@example.com", Role::Member).await;
    let investigation_id = queued(&store, simple_alert("to review", 0)).await;
    let change = FeedbackChanges {
        outcome: Some(Outcome::FalseAlert),
        ..FeedbackChanges::default()
    };
    let refused = store
        .apply_feedback(investigation_id, &change, analyst.id, time(1))
        .await;
    assert!(
        matches!(&refused, Err(StoreError::Rejected { detail }) if detail.contains("not concluded")),
        "{refused:?}"
    );
    assert!(is_not_found(
        store
            .apply_feedback(999_999, &change, analyst.id, time(1))
            .await
    ));

    conclude_all(
        &store,
        Outcome::BreachedSuspicious,
        Priority::Notable,
        time(2),
    )
    .await;
    let before = store.get_investigation(investigation_id).await.unwrap();
    assert_eq!(before.feedback.status, FeedbackStatus::InReview);
    assert_eq!(before.feedback.outcome, Some(Outcome::BreachedSuspicious));
    assert_eq!(before.feedback.updated_by, None);
    assert_eq!(before.feedback.updated_at, time(2));

    let all = FeedbackChanges {
        outcome: Some(Outcome::FalseAlert),
        priority: Some(Priority::Informational),
        outcome_note: Some(Some("The admin's own scheduled task.".into())),
        remediations_done: Some(
            json!({"ticket": "SOC-1", "steps": ["closed"]})
                .as_object()
                .cloned()
                .unwrap(),
        ),
        status: Some(FeedbackStatus::Reviewed),
    };
    let applied = store
        .apply_feedback(investigation_id, &all, analyst.id, time(10))
        .await
        .unwrap();
    assert_eq!(applied.previous_status, FeedbackStatus::InReview);
    let feedback = &applied.investigation.feedback;
    assert_eq!(feedback.outcome, Some(Outcome::FalseAlert));
    assert_eq!(feedback.priority, Some(Priority::Informational));
    assert_eq!(
        feedback.outcome_note.as_deref(),
        Some("The admin's own scheduled task.")
    );
    assert_eq!(feedback.remediations_done["ticket"], "SOC-1");
    assert_eq!(feedback.status, FeedbackStatus::Reviewed);
    assert_eq!(feedback.updated_by, Some(analyst.id));
    assert_eq!(
        (feedback.created_at, feedback.updated_at),
        (time(2), time(10))
    );
    assert_eq!(
        applied.investigation.outcome,
        Some(Outcome::BreachedSuspicious),
        "Sleuth's own verdict stays as it was"
    );
    assert_eq!(
        store.get_investigation(investigation_id).await.unwrap(),
        applied.investigation
    );

    // A subset changes only itself; the note can be cleared; the review reopened.
    let reopen = FeedbackChanges {
        outcome_note: Some(None),
        status: Some(FeedbackStatus::InReview),
        ..FeedbackChanges::default()
    };
    let reopened = store
        .apply_feedback(investigation_id, &reopen, analyst.id, time(20))
        .await
        .unwrap();
    assert_eq!(reopened.previous_status, FeedbackStatus::Reviewed);
    let feedback = &reopened.investigation.feedback;
    assert_eq!(feedback.status, FeedbackStatus::InReview);
    assert_eq!(feedback.outcome_note, None);
    assert_eq!(feedback.outcome, Some(Outcome::FalseAlert));
    assert_eq!(feedback.priority, Some(Priority::Informational));
    assert_eq!(feedback.remediations_done["ticket"], "SOC-1");

    // The list's feedback_updated filter sees the latest change.
    let updated_between = |from: i64, until: i64| InvestigationQuery {
        feedback_updated: TimeRange {
            from: Some(time(from)),
            until: Some(time(until)),
        },
        limit: 100,
        ..InvestigationQuery::default()
    };
    assert_eq!(
        found(&store, &updated_between(19, 21)).await,
        [investigation_id]
    );
    assert!(found(&store, &updated_between(9, 11)).await.is_empty());
}

pub async fn feedback_is_the_human_verdict_history_hands_on(store: Arc<dyn Store>) {
    let analyst = user(&store, "analyst@example.com", Role::Member).await;
    let host = (EntityKind::Host, "wks-9");
    // Text that must be escaped on its way through the store (history reads it packed as
    // JSON): it comes back as written.
    let title = "Suspicious \"PowerShell\" \\ C:\\Temp\n\t\u{1} <b>é</b> \u{1F6A8}";
    let note = "Backup agent, \"expected\" \\ \r\n\u{7} \u{1F6A8}";
    let first = queued(
        &store,
        new_alert(
            parsed_alert(title, "EDR", 0, &[host]),
            json!({"n": 1}),
            None,
        ),
    )
    .await;
    conclude_all(
        &store,
        Outcome::BreachedSuspicious,
        Priority::Notable,
        time(1),
    )
    .await;
    let second = queued(
        &store,
        new_alert(
            parsed_alert(title, "EDR", 10, &[host]),
            json!({"n": 2}),
            None,
        ),
    )
    .await;
    let history_query = crate::contract::history_query(&store, second).await;
    let prior = |history: &sleuth_domain::History| {
        history
            .prior_verdicts
            .iter()
            .find(|verdict| verdict.investigation_id == first)
            .cloned()
            .expect("the first investigation is a prior verdict")
    };
    let before = prior(&store.history(&history_query).await.unwrap());
    assert_eq!(before.engine_outcome, Some(Outcome::BreachedSuspicious));
    assert_eq!(before.analyst_outcome, None, "no analyst has spoken");

    // Feedback without an outcome is not a verdict.
    let remediations_only = FeedbackChanges {
        remediations_done: Some(json!({"ticket": "SOC-9"}).as_object().cloned().unwrap()),
        ..FeedbackChanges::default()
    };
    store
        .apply_feedback(first, &remediations_only, analyst.id, time(5))
        .await
        .unwrap();
    assert_eq!(
        prior(&store.history(&history_query).await.unwrap()).analyst_outcome,
        None
    );

    let verdict = FeedbackChanges {
        outcome: Some(Outcome::FalseAlert),
        priority: Some(Priority::Informational),
        outcome_note: Some(Some(note.into())),
        status: Some(FeedbackStatus::Reviewed),
        ..FeedbackChanges::default()
    };
    store
        .apply_feedback(first, &verdict, analyst.id, time(6))
        .await
        .unwrap();
    let after = prior(&store.history(&history_query).await.unwrap());
    assert_eq!(after.engine_outcome, Some(Outcome::BreachedSuspicious));
    assert_eq!(after.analyst_outcome, Some(Outcome::FalseAlert));
    assert_eq!(after.analyst_priority, Some(Priority::Informational));
    assert_eq!(after.analyst_note.as_deref(), Some(note));
    assert_eq!(after.title, title);
    assert!(after.reviewed);
    assert_eq!(
        after.likeness,
        sleuth_domain::Likeness::SameDetectionSameEntities
    );
}

pub async fn the_last_active_admin_cannot_be_demoted_or_deactivated(store: Arc<dyn Store>) {
    let first = user(&store, "first@example.com", Role::Admin).await;
    let member = user(&store, "member@example.com", Role::Member).await;
    let is_rejected =
        |result: &StoreResult<User>| matches!(result, Err(StoreError::Rejected { .. }));

    let demote = UserChanges {
        role: Some(Role::Member),
        ..UserChanges::default()
    };
    let deactivate = UserChanges {
        is_active: Some(false),
        ..UserChanges::default()
    };
    assert!(is_rejected(&store.update_user(first.id, &demote).await));
    assert!(is_rejected(&store.update_user(first.id, &deactivate).await));
    assert_eq!(
        store.get_user(first.id).await.unwrap(),
        first,
        "a refused change changes nothing"
    );

    // With a second admin, either may step down; then the other is the last again.
    let promote = UserChanges {
        role: Some(Role::Admin),
        first_name: Some("Second".into()),
        ..UserChanges::default()
    };
    let second = store.update_user(member.id, &promote).await.unwrap();
    assert_eq!(
        (second.role, second.first_name.as_str()),
        (Role::Admin, "Second")
    );
    let stepped_down = store.update_user(first.id, &deactivate).await.unwrap();
    assert!(!stepped_down.is_active);
    assert!(is_rejected(&store.update_user(second.id, &demote).await));
    // A deactivated admin does not count; reactivating them makes two again.
    let reactivate = UserChanges {
        is_active: Some(true),
        ..UserChanges::default()
    };
    assert!(
        store
            .update_user(first.id, &reactivate)
            .await
            .unwrap()
            .is_active
    );
    assert_eq!(
        store.update_user(second.id, &demote).await.unwrap().role,
        Role::Member
    );
    assert!(is_not_found(store.update_user(999_999, &demote).await));
}

/// The dashboard's sample: only the scope's investigations received in the window, newest
/// first per state and at most the limit of each (saying when the window held more), the
/// analyst's outcome beside the engine's, the distinct entities of the newest concluded
/// alerts, and the queue counted in the scope whatever the window.
pub async fn the_dashboard_samples_its_scope_and_window_within_its_bounds(store: Arc<dyn Store>) {
    let analyst = user(&store, "analyst@example.com", Role::Member).await;
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
    let alert = |title: &str, minute: i64, union: i64, entities: &[(EntityKind, &str)]| {
        new_alert(
            parsed_alert(title, "EDR", minute, entities),
            json!({"title": title}),
            Some(union),
        )
    };
    let host = (EntityKind::Host, "WKS-1");
    let address = (EntityKind::Ip, "203.0.113.5");
    let first = queued(&store, alert("first", 0, acme, &[host, address, host])).await;
    queued(&store, alert("second", 10, acme, &[host])).await;
    queued(&store, alert("third", 20, acme, &[])).await;
    queued(&store, alert("long ago", -1000, acme, &[host])).await;
    queued(&store, alert("theirs", 15, globex, &[host])).await;
    conclude_all(
        &store,
        Outcome::BreachedSuspicious,
        Priority::Notable,
        time(30),
    )
    .await;
    let change = FeedbackChanges {
        outcome: Some(Outcome::FalseAlert),
        status: Some(FeedbackStatus::Reviewed),
        ..FeedbackChanges::default()
    };
    store
        .apply_feedback(first, &change, analyst.id, time(31))
        .await
        .unwrap();
    queued(&store, alert("running", 25, acme, &[])).await;
    let claimed = store
        .claim_jobs("w", 1, chrono::Duration::seconds(60), time(32))
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    queued(&store, alert("waiting", 26, acme, &[])).await;
    queued(&store, alert("waiting elsewhere", 27, globex, &[])).await;

    let query = |per_state_limit: u32, entity_alert_limit: u32| DashboardQuery {
        scope: TenantScope::unions([acme]),
        since: time(-60),
        per_state_limit,
        entity_alert_limit,
        queue_count_limit: 100,
    };
    let sample = store.dashboard_sample(&query(10, 10)).await.unwrap();
    assert!(!sample.truncated);
    let concluded: Vec<&DashboardItem> = sample
        .items
        .iter()
        .filter(|item| item.status == InvestigationStatus::Success)
        .collect();
    let received: Vec<Timestamp> = concluded.iter().map(|item| item.received_at).collect();
    assert_eq!(
        received,
        [time(20), time(10), time(0)],
        "newest first, in the window, ours"
    );
    assert_eq!(concluded[2].outcome, Some(Outcome::BreachedSuspicious));
    assert_eq!(concluded[2].priority, Some(Priority::Notable));
    assert_eq!(concluded[2].feedback, Some(Some(Outcome::FalseAlert)));
    assert_eq!(concluded[1].feedback, None, "no feedback given");
    assert_eq!(concluded[2].concluded_at, Some(time(30)));
    assert_eq!(concluded[2].alert_time, time(0));
    assert_eq!(concluded[2].direct_source_label, "EDR");
    let states: Vec<InvestigationStatus> = sample.items.iter().map(|item| item.status).collect();
    assert_eq!(
        states
            .iter()
            .filter(|state| **state == InvestigationStatus::Loading)
            .count(),
        1
    );
    assert_eq!(
        states
            .iter()
            .filter(|state| **state == InvestigationStatus::NotAsked)
            .count(),
        1
    );
    assert_eq!(sample.items.len(), 5);
    assert_eq!((sample.queued, sample.running), (1, 1));
    assert_eq!(sample.entity_alerts, 3);
    let mut entities: Vec<String> = sample
        .entities
        .iter()
        .map(|entity| format!("{}:{}", entity.kind.as_str(), entity.value))
        .collect();
    entities.sort();
    assert_eq!(
        entities,
        ["host:WKS-1", "host:WKS-1", "ip:203.0.113.5"],
        "each alert's distinct entities"
    );

    let bounded = store.dashboard_sample(&query(2, 1)).await.unwrap();
    assert!(bounded.truncated, "three concluded in the window, two read");
    let received: Vec<Timestamp> = bounded
        .items
        .iter()
        .filter(|item| item.status == InvestigationStatus::Success)
        .map(|item| item.received_at)
        .collect();
    assert_eq!(received, [time(20), time(10)]);
    assert_eq!(bounded.entity_alerts, 1);
    assert!(bounded.entities.is_empty(), "the newest names none");

    let nothing = store
        .dashboard_sample(&DashboardQuery {
            scope: TenantScope::Unions(vec![]),
            ..query(10, 10)
        })
        .await
        .unwrap();
    assert_eq!(nothing, DashboardSample::default());
    let everyone = store
        .dashboard_sample(&DashboardQuery {
            scope: TenantScope::All,
            queue_count_limit: 1,
            ..query(10, 10)
        })
        .await
        .unwrap();
    assert_eq!(everyone.items.len(), 7);
    assert_eq!(everyone.queued, 1, "counted up to the limit");
}
