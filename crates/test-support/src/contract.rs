//! The store contract: what every backend must do, written once. A backend's test binary
//! runs it with `store_contract_tests!(an async expression opening a fresh store)`, which
//! makes one `#[tokio::test]` per case, each on its own empty database.

use std::sync::Arc;

use chrono::Duration;
use serde_json::json;
use sleuth_domain::{
    Canceled, EntityKind, InvestigationStatus, Likeness, Outcome, ParsedAlert, Priority, Role,
};
use sleuth_store::*;

use crate::fixtures::{self, new_alert, parsed_alert, simple_alert, time};

/// Generates one test per contract case. `$open` is an async expression evaluating to
/// `Option<(Arc<dyn Store>, guard)>`; the guard (a temp dir, a database) lives for the test.
/// `None` skips the case (a backend that is not available here said why, and is never
/// `None` where it is required).
#[macro_export]
macro_rules! store_contract_tests {
    ($open:expr) => {
        $crate::store_contract_tests!(@cases $open;
            users_are_created_found_and_unique,
            api_keys_authenticate_until_revoked,
            the_first_admin_is_bootstrapped_once,
            tenant_unions_are_named_uniquely,
            an_alert_is_stored_once_and_forcing_makes_a_new_investigation,
            concurrent_identical_creates_make_one_investigation,
            a_batch_of_creates_answers_each_on_its_own,
            tenants_do_not_share_alert_identities,
            a_claimed_job_runs_to_success,
            a_job_whose_worker_died_is_retried,
            finishing_can_claim_the_next_job_in_the_same_write,
            a_stale_worker_cannot_overwrite,
            released_jobs_go_back_to_the_queue,
            canceling_stops_queued_work_and_refuses_finished_work,
            stopped_jobs_record_why,
            concurrent_finishes_each_store_their_own_outcome,
            listing_defaults_to_success_newest_first,
            listing_filters_by_every_parameter,
            listing_sorts_totally_and_pages_without_gaps,
            list_counts_stay_exact_through_every_change,
            list_counts_of_each_filter_agree_with_the_rows,
            insight_tag_counts_stay_exact,
            hour_counts_answer_alert_creation_ranges,
            alert_creation_ranges_list_by_day_in_every_time_order,
            search_finds_words_and_treats_operators_as_data,
            a_search_counts_its_matches_in_the_listed_states_only,
            a_search_from_a_source_finds_its_matches_only,
            a_searched_page_far_down_the_sort_order_is_exact,
            a_search_in_a_state_smaller_than_the_others_is_exact,
            a_tag_is_paged_from_its_own_rows_in_the_alert_creation_order,
            history_finds_shared_entities_and_prior_verdicts,
            history_of_a_union_is_not_crowded_out_by_another,
            history_reads_a_bounded_window_of_an_entity_everywhere,
            guards_count_bursts_and_find_the_first_of_a_story,
            a_story_is_never_ignored_in_favour_of_a_later_alert,
            the_burst_count_is_exact_at_the_window_edges,
            the_context_document_is_replaced_whole,
            data_sources_are_stored_changed_scoped_and_deleted,
            tenant_scopes_bind_users_and_keys,
            a_tenant_scope_filters_every_list_and_count,
            retention_deletes_what_ended_before_the_cutoff_and_nothing_else,
        );
    };
    (@cases $open:expr; $($case:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some((store, _guard)) = $open.await else {
                    return;
                };
                $crate::contract::$case(store).await;
            }
        )+
    };
}

/// Generates the cases that also change the database by SQL behind the store's back, as
/// another process or an operator would, like `memory_audit_contract_tests!` does
/// (`$url_of` gives the database's URL from the guard).
#[macro_export]
macro_rules! sql_change_contract_tests {
    ($open:expr, $url_of:expr) => {
        $crate::sql_change_contract_tests!(@cases $open, $url_of;
            tag_counts_follow_every_change_made_by_sql,
            a_key_revoked_elsewhere_stops_working_within_the_cache_ttl,
        );
    };
    (@cases $open:expr, $url_of:expr; $($case:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some((store, guard)) = $open.await else {
                    return;
                };
                let raw = $crate::contract_memory_audit::RawDatabase::new(($url_of)(&guard));
                $crate::contract::$case(store, raw).await;
            }
        )+
    };
}

pub async fn users_are_created_found_and_unique(store: Arc<dyn Store>) {
    let user = store
        .create_user(&fixtures::new_user("Ana@Example.com", Role::Member))
        .await
        .unwrap();
    assert_eq!(user.email, "ana@example.com");
    assert_eq!(user.role, Role::Member);
    assert!(user.is_active);
    let duplicate = store
        .create_user(&fixtures::new_user("ana@example.com", Role::Admin))
        .await;
    assert!(
        matches!(duplicate, Err(StoreError::Conflict { .. })),
        "{duplicate:?}"
    );
    let found = store
        .find_user_by_email("ANA@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.id, user.id);
    assert!(
        store
            .find_user_by_email("nobody@example.com")
            .await
            .unwrap()
            .is_none()
    );
    assert!(matches!(
        store.get_user(user.id + 100).await,
        Err(StoreError::NotFound { .. })
    ));
    let changed = store
        .update_user(
            user.id,
            &UserChanges {
                role: Some(Role::Admin),
                ..UserChanges::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(changed.role, Role::Admin);
    assert_eq!(changed.first_name, "Test", "fields without a change stay");
    assert_eq!(store.list_users().await.unwrap().len(), 1);
    assert_eq!(store.count_users().await.unwrap(), 1);
}

pub async fn api_keys_authenticate_until_revoked(store: Arc<dyn Store>) {
    // A member: the last active admin cannot be deactivated (contract_analyst).
    let user = store
        .create_user(&fixtures::new_user("kim@example.com", Role::Member))
        .await
        .unwrap();
    let key = store
        .create_api_key(&fixtures::new_key(user.id, "secret-one"))
        .await
        .unwrap();
    assert_eq!(key.user_email, "kim@example.com");
    let principal = store
        .authenticate(&KeyHash::of("secret-one"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(principal.user.id, user.id);
    assert_eq!(principal.api_key_id, key.id);
    assert!(
        store
            .authenticate(&KeyHash::of("secret-two"))
            .await
            .unwrap()
            .is_none()
    );

    store.record_key_use(key.id, time(5)).await.unwrap();
    let listed = store.list_api_keys().await.unwrap();
    assert_eq!(listed[0].last_used_at, Some(time(5)));

    let revoked = store.revoke_api_key(key.id, time(10)).await.unwrap();
    assert_eq!(revoked.revoked_at, Some(time(10)));
    assert!(
        store
            .authenticate(&KeyHash::of("secret-one"))
            .await
            .unwrap()
            .is_none()
    );
    let again = store.revoke_api_key(key.id, time(20)).await.unwrap();
    assert_eq!(
        again.revoked_at,
        Some(time(10)),
        "the first revocation time stays"
    );

    // A deactivated user's other keys stop working too.
    store
        .create_api_key(&fixtures::new_key(user.id, "secret-three"))
        .await
        .unwrap();
    assert!(
        store
            .authenticate(&KeyHash::of("secret-three"))
            .await
            .unwrap()
            .is_some()
    );
    store
        .update_user(
            user.id,
            &UserChanges {
                is_active: Some(false),
                ..UserChanges::default()
            },
        )
        .await
        .unwrap();
    assert!(
        store
            .authenticate(&KeyHash::of("secret-three"))
            .await
            .unwrap()
            .is_none()
    );
    assert!(matches!(
        store.revoke_api_key(9999, time(0)).await,
        Err(StoreError::NotFound { .. })
    ));
}

/// A key revoked, or a user deactivated, by another process (here: SQL on the database)
/// may still authenticate from this store's cache, but for no longer than
/// [`KEY_CACHE_TTL`].
pub async fn a_key_revoked_elsewhere_stops_working_within_the_cache_ttl(
    store: Arc<dyn Store>,
    raw: crate::contract_memory_audit::RawDatabase,
) {
    let user = store
        .create_user(&fixtures::new_user("kim@example.com", Role::Member))
        .await
        .unwrap();
    let revoked = store
        .create_api_key(&fixtures::new_key(user.id, "revoked-elsewhere"))
        .await
        .unwrap();
    store
        .create_api_key(&fixtures::new_key(user.id, "user-deactivated-elsewhere"))
        .await
        .unwrap();
    for secret in ["revoked-elsewhere", "user-deactivated-elsewhere"] {
        let found = store.authenticate(&KeyHash::of(secret)).await.unwrap();
        assert!(found.is_some(), "{secret} works before the change");
    }
    raw.execute(&format!(
        "UPDATE api_keys SET revoked_at = 1 WHERE id = {}",
        revoked.id
    ))
    .await
    .expect("revoke by SQL");
    stops_authenticating_within_the_ttl(&store, "revoked-elsewhere").await;
    raw.execute(&format!(
        "UPDATE users SET is_active = 0 WHERE id = {}",
        user.id
    ))
    .await
    .expect("deactivate by SQL");
    stops_authenticating_within_the_ttl(&store, "user-deactivated-elsewhere").await;
}

/// Waits for `secret` to stop authenticating; fails if that takes longer than the cache's
/// time to live (with half a second for a slow machine).
async fn stops_authenticating_within_the_ttl(store: &Arc<dyn Store>, secret: &str) {
    let changed = std::time::Instant::now();
    let deadline = KEY_CACHE_TTL + std::time::Duration::from_millis(500);
    while store
        .authenticate(&KeyHash::of(secret))
        .await
        .unwrap()
        .is_some()
    {
        assert!(
            changed.elapsed() < deadline,
            "{secret} still authenticates {:?} after the change",
            changed.elapsed()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

pub async fn the_first_admin_is_bootstrapped_once(store: Arc<dyn Store>) {
    let admin = fixtures::new_user("admin@example.com", Role::Admin);
    let first = store
        .bootstrap_admin(&admin, &fixtures::new_key(0, "boot-key"))
        .await
        .unwrap();
    let first = first.expect("an empty database gets its admin");
    assert_eq!(first.role, Role::Admin);
    let principal = store
        .authenticate(&KeyHash::of("boot-key"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(principal.user.id, first.id);
    let other = fixtures::new_user("second@example.com", Role::Admin);
    let second = store
        .bootstrap_admin(&other, &fixtures::new_key(0, "other-key"))
        .await
        .unwrap();
    assert!(second.is_none(), "users exist: nothing is created");
    assert_eq!(store.count_users().await.unwrap(), 1);
    assert!(
        store
            .authenticate(&KeyHash::of("other-key"))
            .await
            .unwrap()
            .is_none()
    );
}

fn tenant_input(name: &str, modified_by: Option<i64>) -> TenantUnionInput {
    let lookup_dict = json!({"tenant_ids": ["t-1"]})
        .as_object()
        .cloned()
        .unwrap_or_default();
    TenantUnionInput {
        display_name: name.into(),
        lookup_dict,
        modified_by,
    }
}

pub async fn tenant_unions_are_named_uniquely(store: Arc<dyn Store>) {
    let user = store
        .create_user(&fixtures::new_user("ops@example.com", Role::Admin))
        .await
        .unwrap();
    let union = store
        .create_tenant_union(&tenant_input("Acme", Some(user.id)))
        .await
        .unwrap();
    assert_eq!(union.display_name, "Acme");
    assert_eq!(union.lookup_dict["tenant_ids"], json!(["t-1"]));
    assert_eq!(
        union.last_modified_by.as_ref().map(|user| user.id),
        Some(user.id)
    );
    let duplicate = store.create_tenant_union(&tenant_input("Acme", None)).await;
    assert!(
        matches!(duplicate, Err(StoreError::Conflict { .. })),
        "{duplicate:?}"
    );
    let renamed = store
        .update_tenant_union(union.id, &tenant_input("Acme EU", None))
        .await
        .unwrap();
    assert_eq!(renamed.display_name, "Acme EU");
    assert!(renamed.last_modified_by.is_none());
    assert_eq!(
        store.get_tenant_union(union.id).await.unwrap().display_name,
        "Acme EU"
    );
    let names: Vec<String> = store
        .list_tenant_unions()
        .await
        .unwrap()
        .into_iter()
        .map(|union| union.display_name)
        .collect();
    assert_eq!(
        names,
        vec!["Default".to_string(), "Acme EU".to_string()],
        "the default union always exists"
    );
    let missing = store
        .update_tenant_union(union.id + 1, &tenant_input("X", None))
        .await;
    assert!(matches!(missing, Err(StoreError::NotFound { .. })));
}

pub async fn an_alert_is_stored_once_and_forcing_makes_a_new_investigation(store: Arc<dyn Store>) {
    let raw = json!({"title": "Mimikatz on WKS-1", "z": 1, "a": [1, 2]});
    let parsed = parsed_alert(
        "Mimikatz on WKS-1",
        "EDR",
        0,
        &[(EntityKind::Host, "wks-1")],
    );
    let alert = new_alert(parsed, raw.clone(), None);
    let first = store
        .create_investigation(alert.clone(), false)
        .await
        .unwrap();
    let Created::New(first_id) = first else {
        panic!("first create must be new: {first:?}")
    };

    let record = store.get_investigation(first_id).await.unwrap();
    assert_eq!(record.status, InvestigationStatus::NotAsked);
    assert_eq!(
        record.alert.raw_alert_content,
        raw.to_string(),
        "raw content kept exactly"
    );
    assert_eq!(record.alert.parsed.title, "Mimikatz on WKS-1");
    assert_eq!(record.alert.parsed.entities.len(), 1);
    assert!(record.result.is_none() && record.outcome.is_none() && !record.is_retried);
    assert_eq!(record.feedback.id, first_id);
    assert_eq!(
        record.feedback.status,
        sleuth_domain::FeedbackStatus::InReview
    );

    let again = store
        .create_investigation(alert.clone(), false)
        .await
        .unwrap();
    assert_eq!(again, Created::Existing(first_id));
    let forced = store
        .create_investigation(alert.clone(), true)
        .await
        .unwrap();
    let Created::New(forced_id) = forced else {
        panic!("forced create must be new")
    };
    assert_ne!(forced_id, first_id);
    let forced_record = store.get_investigation(forced_id).await.unwrap();
    assert_eq!(
        forced_record.alert.id, record.alert.id,
        "the same alert, investigated again"
    );
    // After a forced reinvestigation, the same alert answers the newest investigation.
    assert_eq!(
        store.create_investigation(alert, false).await.unwrap(),
        Created::Existing(forced_id)
    );
    assert!(matches!(
        store.get_investigation(forced_id + 50).await,
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(store.pending_jobs().await.unwrap(), 2);
}

pub async fn concurrent_identical_creates_make_one_investigation(store: Arc<dyn Store>) {
    let alert = simple_alert("same alert fifty times", 0);
    let creates = (0..50).map(|_| {
        let store = store.clone();
        let alert = alert.clone();
        tokio::spawn(async move { store.create_investigation(alert, false).await })
    });
    let results = futures_util::future::join_all(creates).await;
    let ids: std::collections::BTreeSet<i64> = results
        .into_iter()
        .map(|joined| joined.unwrap().unwrap().investigation_id())
        .collect();
    assert_eq!(
        ids.len(),
        1,
        "fifty identical creates answer one id: {ids:?}"
    );
    assert_eq!(store.pending_jobs().await.unwrap(), 1);
}

/// Concurrent creates share transactions (group commit): distinct alerts, repeats, forced
/// repeats and one create the database refuses (an unknown tenant union) land together, and
/// each still gets the answer it would get alone; the refused one stores nothing.
pub async fn a_batch_of_creates_answers_each_on_its_own(store: Arc<dyn Store>) {
    use sleuth_store::Created;
    let repeated = simple_alert("repeated in the batch", 0);
    let mut refused = simple_alert("of a tenant union that does not exist", 0);
    refused.tenant_union_id = 999_999;
    let mut requests: Vec<(NewAlert, bool)> = (0..20)
        .map(|index| (simple_alert(&format!("distinct {index}"), index), false))
        .collect();
    requests.extend((0..10).map(|_| (repeated.clone(), false)));
    requests.extend((0..3).map(|_| (repeated.clone(), true)));
    requests.push((refused, false));
    let creates = requests.into_iter().map(|(alert, force)| {
        let store = store.clone();
        tokio::spawn(async move { (force, store.create_investigation(alert, force).await) })
    });
    let results = futures_util::future::join_all(creates).await;
    let (mut distinct, mut repeats, mut forced, mut refusals) =
        (Vec::new(), Vec::new(), Vec::new(), 0);
    for (index, joined) in results.into_iter().enumerate() {
        match joined.unwrap() {
            (_, Err(_)) => refusals += 1,
            (false, Ok(created)) if index < 20 => distinct.push(created),
            (false, Ok(created)) => repeats.push(created.investigation_id()),
            (true, Ok(created)) => forced.push(created),
        }
    }
    assert_eq!(refusals, 1, "only the unknown tenant union is refused");
    assert!(
        distinct
            .iter()
            .all(|created| matches!(created, Created::New(_)))
    );
    let distinct_ids: std::collections::BTreeSet<i64> = distinct
        .iter()
        .map(|created| created.investigation_id())
        .collect();
    assert_eq!(
        distinct_ids.len(),
        20,
        "twenty alerts, twenty investigations"
    );
    assert!(
        forced
            .iter()
            .all(|created| matches!(created, Created::New(_))),
        "forcing always makes a new investigation: {forced:?}"
    );
    let forced_ids: std::collections::BTreeSet<i64> = forced
        .iter()
        .map(|created| created.investigation_id())
        .collect();
    assert_eq!(forced_ids.len(), 3);
    // The unforced repeats all point at investigations of the one alert: the first one's,
    // or a forced one's if it came first.
    let repeat_ids: std::collections::BTreeSet<i64> = repeats.iter().copied().collect();
    let first_of_repeated = repeat_ids.difference(&forced_ids).count();
    assert!(
        first_of_repeated <= 1,
        "repeats share investigations: {repeat_ids:?}"
    );
    let investigations_of_repeated = 3 + first_of_repeated as u64;
    assert_eq!(
        store.pending_jobs().await.unwrap(),
        20 + investigations_of_repeated,
        "one job per investigation, none for the refused alert"
    );
    for id in distinct_ids.iter().chain(&forced_ids).chain(&repeat_ids) {
        store.get_investigation(*id).await.unwrap();
    }
}

pub async fn tenants_do_not_share_alert_identities(store: Arc<dyn Store>) {
    let acme = store
        .create_tenant_union(&tenant_input("Acme", None))
        .await
        .unwrap();
    let globex = store
        .create_tenant_union(&tenant_input("Globex", None))
        .await
        .unwrap();
    let parsed = parsed_alert("same content", "EDR", 0, &[]);
    let raw = json!({"title": "same content"});
    let for_acme =
        store.create_investigation(new_alert(parsed.clone(), raw.clone(), Some(acme.id)), false);
    let for_acme = for_acme.await.unwrap();
    let for_globex = store.create_investigation(new_alert(parsed, raw, Some(globex.id)), false);
    let for_globex = for_globex.await.unwrap();
    assert!(matches!(for_acme, Created::New(_)) && matches!(for_globex, Created::New(_)));
    let record = store
        .get_investigation(for_globex.investigation_id())
        .await
        .unwrap();
    assert_eq!(record.alert.tenant_union.display_name, "Globex");
    let acme_record = store
        .get_investigation(for_acme.investigation_id())
        .await
        .unwrap();
    assert_eq!(acme_record.alert.tenant_union.display_name, "Acme");
}

fn lease() -> Duration {
    Duration::seconds(60)
}

pub async fn a_claimed_job_runs_to_success(store: Arc<dyn Store>) {
    let id = store
        .create_investigation(simple_alert("to conclude", 0), false)
        .await
        .unwrap();
    let id = id.investigation_id();
    let jobs = store
        .claim_jobs("worker-a", 10, lease(), time(1))
        .await
        .unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!((jobs[0].investigation_id, jobs[0].attempt), (id, 1));
    assert!(
        store
            .claim_jobs("worker-b", 10, lease(), time(1))
            .await
            .unwrap()
            .is_empty()
    );
    let running = store.get_investigation(id).await.unwrap();
    assert_eq!(running.status, InvestigationStatus::Loading);
    assert_eq!(running.start_time, Some(time(1)));

    let mut result = fixtures::result(
        Outcome::BreachedConfirmed,
        Priority::Urgent,
        "Mimikatz ran.",
    );
    result
        .insight_tags
        .insert("credential_theft".into(), json!(true));
    let finish = Finish::Completed {
        result: Box::new(result.clone()),
        ignored_for: None,
    };
    assert!(store.finish_job(&jobs[0], &finish, time(2)).await.unwrap());
    let done = store.get_investigation(id).await.unwrap();
    assert_eq!(done.status, InvestigationStatus::Success);
    assert_eq!(done.generated_time, Some(time(2)));
    assert_eq!(done.outcome, Some(Outcome::BreachedConfirmed));
    assert_eq!(done.priority, Some(Priority::Urgent));
    assert_eq!(done.result.as_ref(), Some(&result));
    assert_eq!(
        done.feedback.outcome,
        Some(Outcome::BreachedConfirmed),
        "feedback mirrors Sleuth until an analyst speaks"
    );
    assert_eq!(store.pending_jobs().await.unwrap(), 0);
    // Finishing twice is refused: the job is gone.
    assert!(!store.finish_job(&jobs[0], &finish, time(3)).await.unwrap());
}

/// A busy worker finishes one job and claims the next in one transaction, with the end's
/// system events: the next is leased and `loading`, the queue order holds, a lost lease
/// drops the result and its events but still frees the worker for the next job, and an
/// empty queue answers none.
pub async fn finishing_can_claim_the_next_job_in_the_same_write(store: Arc<dyn Store>) {
    let (mut queued, mut parsed) = (Vec::new(), Vec::new());
    for index in 0..3 {
        let alert = simple_alert(&format!("chained{index} queue"), 0);
        parsed.push(Arc::new(alert.parsed.clone()));
        let created = store.create_investigation(alert, false).await.unwrap();
        queued.push(created.investigation_id());
    }
    let first = store
        .claim_jobs("worker-a", 1, lease(), time(1))
        .await
        .unwrap()
        .remove(0);
    assert_eq!(first.investigation_id, queued[0]);
    let finish = Finish::Completed {
        result: Box::new(fixtures::result(
            Outcome::FalseAlert,
            Priority::Informational,
            "benign",
        )),
        ignored_for: None,
    };
    // Each end carries a system event naming its investigation. The parsed alert is
    // passed along (as workers do) or not (then it is read back for the search document).
    let end = |job: &ClaimedJob, minute: i64, alert: Option<&Arc<ParsedAlert>>| JobEnd {
        finish: finish.clone(),
        at: time(minute),
        system_events: vec![NewSystemEvent {
            trigger_name: "investigation_completed".into(),
            trigger_args: serde_json::Map::new(),
            investigation_id: Some(job.investigation_id),
            entity: None,
        }],
        next: Some(NextClaim {
            worker: "worker-a".into(),
            lease: lease(),
        }),
        alert: alert.cloned(),
    };
    let finished = store
        .finish_job_and_claim(&first, end(&first, 2, None))
        .await
        .unwrap();
    assert!(finished.stored);
    let second = finished.next.expect("the next job in queue order");
    assert_eq!((second.investigation_id, second.attempt), (queued[1], 1));
    let record = store.get_investigation(queued[0]).await.unwrap();
    assert_eq!(record.status, InvestigationStatus::Success);
    let record = store.get_investigation(queued[1]).await.unwrap();
    assert_eq!(record.status, InvestigationStatus::Loading);
    assert_eq!(
        record.start_time,
        Some(time(2)),
        "claimed as the first finished"
    );
    let taken_by_b: Vec<i64> = store
        .claim_jobs("worker-b", 10, lease(), time(2))
        .await
        .unwrap()
        .iter()
        .map(|job| job.investigation_id)
        .collect();
    assert_eq!(
        taken_by_b,
        [queued[2]],
        "the chained job is leased: another worker gets only the third"
    );

    // The second is canceled while worker-a runs it.
    store
        .cancel_investigation(queued[1], time(3))
        .await
        .unwrap();
    let finished = store
        .finish_job_and_claim(&second, end(&second, 4, Some(&parsed[1])))
        .await
        .unwrap();
    assert!(!finished.stored, "a canceled job's result is dropped");
    let record = store.get_investigation(queued[1]).await.unwrap();
    assert_eq!(record.status, InvestigationStatus::Error);
    // worker-b's lease (one minute from minute 2) has run out: its job is retried here.
    let third = finished.next.expect("the stalled job, ready again");
    assert_eq!((third.investigation_id, third.attempt), (queued[2], 2));
    assert!(store.get_investigation(queued[2]).await.unwrap().is_retried);
    let finished = store
        .finish_job_and_claim(&third, end(&third, 5, Some(&parsed[2])))
        .await
        .unwrap();
    assert!(finished.stored);
    assert_eq!(finished.next, None, "nothing else is ready");
    assert_eq!(store.pending_jobs().await.unwrap(), 0);

    // The events of the stored results, at their ends' times; not the dropped one's.
    let events = store
        .list_system_events(&SystemEventQuery {
            trigger_names: vec!["investigation_completed".into()],
            time: TimeRange::default(),
            search: None,
            scope: TenantScope::All,
            limit: 10,
            offset: 0,
        })
        .await
        .unwrap();
    let mut recorded: Vec<(Option<i64>, sleuth_domain::Timestamp)> = events
        .items
        .iter()
        .map(|event| (event.investigation_id, event.created_at))
        .collect();
    recorded.sort();
    assert_eq!(
        recorded,
        [(Some(queued[0]), time(2)), (Some(queued[2]), time(5))]
    );
    // Both concluded ones are found by their alert's words, read back or passed along.
    let search = |text: &str| InvestigationQuery {
        search: Some(text.into()),
        ..query()
    };
    assert_eq!(ids(&store, &search("chained0")).await, [queued[0]]);
    assert_eq!(ids(&store, &search("chained2")).await, [queued[2]]);
}

pub async fn a_job_whose_worker_died_is_retried(store: Arc<dyn Store>) {
    let id = store
        .create_investigation(simple_alert("crashy", 0), false)
        .await
        .unwrap();
    let first = store
        .claim_jobs("dead-worker", 1, lease(), time(1))
        .await
        .unwrap();
    assert_eq!(first.len(), 1);
    // Before the lease ends nobody else gets it; after, another worker does.
    assert!(
        store
            .claim_jobs("live-worker", 1, lease(), time(1) + Duration::seconds(30))
            .await
            .unwrap()
            .is_empty()
    );
    let second = store
        .claim_jobs("live-worker", 1, lease(), time(3))
        .await
        .unwrap();
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].attempt, 2);
    let record = store
        .get_investigation(id.investigation_id())
        .await
        .unwrap();
    assert!(record.is_retried);
    assert_eq!(record.status, InvestigationStatus::Loading);
    assert_eq!(
        record.start_time,
        Some(time(1)),
        "start_time is the first start"
    );
}

pub async fn a_stale_worker_cannot_overwrite(store: Arc<dyn Store>) {
    store
        .create_investigation(simple_alert("contested", 0), false)
        .await
        .unwrap();
    let stale = store
        .claim_jobs("slow", 1, lease(), time(1))
        .await
        .unwrap()
        .remove(0);
    let fresh = store
        .claim_jobs("fast", 1, lease(), time(3))
        .await
        .unwrap()
        .remove(0);
    let fresh_result = fixtures::result(Outcome::FalseAlert, Priority::Informational, "fresh");
    let stale_result = fixtures::result(Outcome::BreachedConfirmed, Priority::Urgent, "stale");
    let fresh_finish = Finish::Completed {
        result: Box::new(fresh_result),
        ignored_for: None,
    };
    let stale_finish = Finish::Completed {
        result: Box::new(stale_result),
        ignored_for: None,
    };
    assert!(
        store
            .finish_job(&fresh, &fresh_finish, time(4))
            .await
            .unwrap()
    );
    assert!(
        !store
            .finish_job(&stale, &stale_finish, time(5))
            .await
            .unwrap()
    );
    let record = store
        .get_investigation(fresh.investigation_id)
        .await
        .unwrap();
    assert_eq!(
        record.result.map(|result| result.conclusion).as_deref(),
        Some("fresh")
    );
}

pub async fn released_jobs_go_back_to_the_queue(store: Arc<dyn Store>) {
    let id = store
        .create_investigation(simple_alert("released", 0), false)
        .await
        .unwrap();
    let jobs = store
        .claim_jobs("stopping", 5, lease(), time(1))
        .await
        .unwrap();
    store.release_jobs(&jobs).await.unwrap();
    let record = store
        .get_investigation(id.investigation_id())
        .await
        .unwrap();
    assert_eq!(record.status, InvestigationStatus::NotAsked);
    let again = store.claim_jobs("next", 5, lease(), time(1)).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempt, 1, "a release is not a failed attempt");
}

pub async fn canceling_stops_queued_work_and_refuses_finished_work(store: Arc<dyn Store>) {
    let queued = store
        .create_investigation(simple_alert("queued", 0), false)
        .await
        .unwrap();
    let running = store
        .create_investigation(simple_alert("running", 1), false)
        .await
        .unwrap();
    let jobs = store.claim_jobs("w", 1, lease(), time(2)).await.unwrap();
    assert_eq!(jobs[0].investigation_id, queued.investigation_id());
    store
        .cancel_investigation(queued.investigation_id(), time(3))
        .await
        .unwrap();
    store
        .cancel_investigation(running.investigation_id(), time(3))
        .await
        .unwrap();
    let record = store
        .get_investigation(queued.investigation_id())
        .await
        .unwrap();
    assert_eq!(record.status, InvestigationStatus::Error);
    assert_eq!(record.canceled, Some(Canceled::Manual));
    assert!(record.error_msg.is_some());
    let finish = Finish::Completed {
        result: Box::new(fixtures::result(
            Outcome::FalseAlert,
            Priority::Informational,
            "late",
        )),
        ignored_for: None,
    };
    assert!(
        !store.finish_job(&jobs[0], &finish, time(4)).await.unwrap(),
        "a canceled job's result is dropped"
    );
    assert_eq!(store.pending_jobs().await.unwrap(), 0);
    let again = store
        .cancel_investigation(queued.investigation_id(), time(5))
        .await;
    assert!(
        matches!(again, Err(StoreError::Rejected { .. })),
        "{again:?}"
    );
    let missing = store.cancel_investigation(99_999, time(5)).await;
    assert!(matches!(missing, Err(StoreError::NotFound { .. })));
}

pub async fn stopped_jobs_record_why(store: Arc<dyn Store>) {
    store
        .create_investigation(simple_alert("burst", 0), false)
        .await
        .unwrap();
    let job = store
        .claim_jobs("w", 1, lease(), time(1))
        .await
        .unwrap()
        .remove(0);
    let finish = Finish::Stopped {
        canceled: Some(Canceled::Threshold),
        error_msg: "too many alerts from EDR".into(),
    };
    assert!(store.finish_job(&job, &finish, time(2)).await.unwrap());
    let record = store.get_investigation(job.investigation_id).await.unwrap();
    assert_eq!(record.status, InvestigationStatus::Error);
    assert_eq!(record.canceled, Some(Canceled::Threshold));
    assert_eq!(
        record.error_msg.as_deref(),
        Some("too many alerts from EDR")
    );
}

/// Jobs finished at the same time share one write (group commit) and there one UPDATE
/// per kind of end: each investigation must still get its own outcome, priority, time,
/// result and stop reason, whatever the batch holds.
pub async fn concurrent_finishes_each_store_their_own_outcome(store: Arc<dyn Store>) {
    let mut created = Vec::new();
    for index in 0..7 {
        let alert = simple_alert(&format!("batched finish {index}"), index);
        created.push(
            store
                .create_investigation(alert, false)
                .await
                .unwrap()
                .investigation_id(),
        );
    }
    let jobs = store.claim_jobs("w", 7, lease(), time(8)).await.unwrap();
    assert_eq!(jobs.len(), 7);
    let outcomes = [
        (Outcome::BreachedConfirmed, Priority::Urgent),
        (Outcome::FalseAlert, Priority::Informational),
        (Outcome::BreachedSuspicious, Priority::Notable),
        (Outcome::Incomplete, Priority::Urgent),
        (Outcome::Ignored, Priority::Notable),
    ];
    let finishes: Vec<Finish> = jobs
        .iter()
        .enumerate()
        .map(|(index, job)| match outcomes.get(index) {
            Some(&(outcome, priority)) => Finish::Completed {
                result: Box::new(fixtures::result(
                    outcome,
                    priority,
                    &format!("conclusion verdict{index}"),
                )),
                // The last concluded one names the first as the one it repeats.
                ignored_for: (index == 4).then_some(jobs[0].investigation_id),
            },
            None => Finish::Stopped {
                canceled: (index == 5).then_some(Canceled::Threshold),
                error_msg: format!("stopped {}", job.investigation_id),
            },
        })
        .collect();
    let finished = futures_util::future::join_all(
        jobs.iter()
            .zip(&finishes)
            .enumerate()
            .map(|(index, (job, finish))| store.finish_job(job, finish, time(20 + index as i64))),
    )
    .await;
    assert!(finished.into_iter().all(|stored| stored.unwrap()));
    for (index, (job, finish)) in jobs.iter().zip(&finishes).enumerate() {
        let record = store.get_investigation(job.investigation_id).await.unwrap();
        let at = time(20 + index as i64);
        assert_eq!(record.updated_at, at, "investigation {index}");
        match finish {
            Finish::Completed {
                result,
                ignored_for,
            } => {
                assert_eq!(record.status, InvestigationStatus::Success);
                assert_eq!(record.outcome, Some(result.outcome));
                assert_eq!(record.priority, Some(result.priority));
                assert_eq!(record.result.as_ref(), Some(&**result));
                assert_eq!(record.generated_time, Some(at));
                assert_eq!(record.ignored_for, *ignored_for);
                assert_eq!(record.error_msg, None);
            }
            Finish::Stopped {
                canceled,
                error_msg,
            } => {
                assert_eq!(record.status, InvestigationStatus::Error);
                assert_eq!(record.canceled, *canceled);
                assert_eq!(record.error_msg.as_ref(), Some(error_msg));
                assert_eq!(record.outcome, None);
            }
        }
    }
    // Search finds each concluded one by the words of its own conclusion.
    for (index, job) in jobs.iter().take(outcomes.len()).enumerate() {
        let search = InvestigationQuery {
            search: Some(format!("verdict{index}")),
            ..query()
        };
        assert_eq!(ids(&store, &search).await, [job.investigation_id]);
    }
    let mut claimed: Vec<i64> = jobs.iter().map(|job| job.investigation_id).collect();
    claimed.sort_unstable();
    assert_eq!(claimed, created);
}

/// Creates and concludes an investigation tagged `tag_<outcome>`; returns its id.
pub(crate) async fn concluded(
    store: &Arc<dyn Store>,
    alert: NewAlert,
    outcome: Outcome,
    priority: Priority,
    at_minute: i64,
) -> i64 {
    let tag = format!("tag_{}", outcome.as_str().to_lowercase());
    concluded_with_tags(store, alert, outcome, priority, &[tag.as_str()], at_minute).await
}

/// Creates and concludes an investigation carrying the insight tags `tags`; returns its id.
pub(crate) async fn concluded_with_tags(
    store: &Arc<dyn Store>,
    alert: NewAlert,
    outcome: Outcome,
    priority: Priority,
    tags: &[&str],
    at_minute: i64,
) -> i64 {
    let id = store
        .create_investigation(alert, false)
        .await
        .unwrap()
        .investigation_id();
    let jobs = store
        .claim_jobs("w", 1000, lease(), time(at_minute))
        .await
        .unwrap();
    let job = jobs
        .into_iter()
        .find(|job| job.investigation_id == id)
        .expect("the new job");
    assert!(finish_with_tags(store, &job, outcome, priority, tags, at_minute).await);
    id
}

/// Concludes a claimed job with the insight tags `tags`; returns whether it was stored.
async fn finish_with_tags(
    store: &Arc<dyn Store>,
    job: &ClaimedJob,
    outcome: Outcome,
    priority: Priority,
    tags: &[&str],
    at_minute: i64,
) -> bool {
    let conclusion = format!("conclusion of {}", job.investigation_id);
    let mut result = fixtures::result(outcome, priority, &conclusion);
    for tag in tags {
        result.insight_tags.insert((*tag).to_string(), json!(1));
    }
    let finish = Finish::Completed {
        result: Box::new(result),
        ignored_for: None,
    };
    store
        .finish_job(job, &finish, time(at_minute))
        .await
        .unwrap()
}

fn query() -> InvestigationQuery {
    InvestigationQuery {
        limit: 100,
        ..InvestigationQuery::default()
    }
}

async fn ids(store: &Arc<dyn Store>, query: &InvestigationQuery) -> Vec<i64> {
    store
        .list_investigations(query)
        .await
        .unwrap()
        .items
        .iter()
        .map(|item| item.id)
        .collect()
}

pub async fn listing_defaults_to_success_newest_first(store: Arc<dyn Store>) {
    let older = concluded(
        &store,
        simple_alert("older", 0),
        Outcome::FalseAlert,
        Priority::Informational,
        10,
    )
    .await;
    let newer = concluded(
        &store,
        simple_alert("newer", 5),
        Outcome::FalseAlert,
        Priority::Informational,
        10,
    )
    .await;
    let queued = store
        .create_investigation(simple_alert("queued", 9), false)
        .await
        .unwrap();
    let default = store
        .get_investigation(queued.investigation_id())
        .await
        .unwrap();
    assert_eq!(
        default.alert.tenant_union.id, DEFAULT_TENANT_UNION_ID,
        "alerts naming no union join the default one"
    );
    let page = store.list_investigations(&query()).await.unwrap();
    assert_eq!(page.total, 2);
    assert_eq!(
        page.items.iter().map(|item| item.id).collect::<Vec<_>>(),
        vec![newer, older]
    );
    let queued_only = InvestigationQuery {
        states: vec![InvestigationStatus::NotAsked],
        ..query()
    };
    assert_eq!(
        ids(&store, &queued_only).await,
        vec![queued.investigation_id()]
    );
    let all = InvestigationQuery {
        states: InvestigationStatus::ALL.to_vec(),
        ..query()
    };
    assert_eq!(store.list_investigations(&all).await.unwrap().total, 3);
}

pub async fn listing_filters_by_every_parameter(store: Arc<dyn Store>) {
    let acme = store
        .create_tenant_union(&tenant_input("Acme", None))
        .await
        .unwrap();
    let mut edr_parsed = parsed_alert("Mimikatz", "EDR", 0, &[(EntityKind::Host, "wks-1")]);
    edr_parsed.tenant_id = Some("tenant-7".into());
    edr_parsed.tenant_label = Some("Seven".into());
    let edr = concluded(
        &store,
        new_alert(edr_parsed, json!({"n": 1}), Some(acme.id)),
        Outcome::BreachedConfirmed,
        Priority::Urgent,
        30,
    )
    .await;
    let idp = concluded(
        &store,
        new_alert(
            parsed_alert("Impossible travel", "IdP", 10, &[]),
            json!({"n": 2}),
            None,
        ),
        Outcome::FalseAlert,
        Priority::Informational,
        40,
    )
    .await;
    let queued = store
        .create_investigation(simple_alert("still queued", 20), false)
        .await
        .unwrap()
        .investigation_id();
    store
        .create_investigation(simple_alert("to cancel", 21), false)
        .await
        .unwrap();
    let canceled = ids(
        &store,
        &InvestigationQuery {
            states: vec![InvestigationStatus::NotAsked],
            ..query()
        },
    )
    .await;
    let canceled = *canceled.iter().find(|id| **id != queued).unwrap();
    store
        .cancel_investigation(canceled, time(50))
        .await
        .unwrap();

    let check = |expected: Vec<i64>, query: InvestigationQuery| {
        let store = store.clone();
        async move { assert_eq!(ids(&store, &query).await, expected, "{query:?}") }
    };
    let range = |from: i64, until: i64| TimeRange {
        from: Some(time(from)),
        until: Some(time(until)),
    };
    check(
        vec![edr],
        InvestigationQuery {
            alert_create: range(-1, 5),
            ..query()
        },
    )
    .await;
    check(
        vec![idp],
        InvestigationQuery {
            alert_start: range(5, 15),
            ..query()
        },
    )
    .await;
    check(
        vec![idp],
        InvestigationQuery {
            investigation_complete: range(35, 45),
            ..query()
        },
    )
    .await;
    check(
        vec![idp, edr],
        InvestigationQuery {
            feedback_updated: range(0, 100),
            ..query()
        },
    )
    .await;
    check(
        vec![],
        InvestigationQuery {
            feedback_updated: range(100, 200),
            ..query()
        },
    )
    .await;
    check(
        vec![edr],
        InvestigationQuery {
            alert_tenants: vec!["Acme".into()],
            ..query()
        },
    )
    .await;
    check(
        vec![edr],
        InvestigationQuery {
            alert_tenants: vec!["Seven".into()],
            ..query()
        },
    )
    .await;
    check(
        vec![],
        InvestigationQuery {
            alert_tenants: vec!["Nobody".into()],
            ..query()
        },
    )
    .await;
    check(
        vec![idp],
        InvestigationQuery {
            alert_types: vec!["IdP:Impossible travel".into()],
            ..query()
        },
    )
    .await;
    check(
        vec![idp, edr],
        InvestigationQuery {
            direct_source_labels: vec!["EDR".into(), "IdP".into()],
            ..query()
        },
    )
    .await;
    check(
        vec![edr],
        InvestigationQuery {
            insight_tag_names: vec!["tag_completed_breached_confirmed".into()],
            ..query()
        },
    )
    .await;
    check(
        vec![edr],
        InvestigationQuery {
            priorities: vec![Some(Priority::Urgent)],
            ..query()
        },
    )
    .await;
    check(
        vec![idp, edr],
        InvestigationQuery {
            priorities: vec![Some(Priority::Urgent), Some(Priority::Informational)],
            ..query()
        },
    )
    .await;
    check(
        vec![queued],
        InvestigationQuery {
            priorities: vec![None],
            states: vec![InvestigationStatus::NotAsked],
            ..query()
        },
    )
    .await;
    check(
        vec![canceled],
        InvestigationQuery {
            stopped_reasons: vec![StopReason::Canceled(Canceled::Manual)],
            ..query()
        },
    )
    .await;
    check(
        vec![],
        InvestigationQuery {
            stopped_reasons: vec![StopReason::Canceled(Canceled::Threshold), StopReason::Error],
            ..query()
        },
    )
    .await;
    check(
        vec![edr],
        InvestigationQuery {
            tenant_id: Some("tenant-7".into()),
            ..query()
        },
    )
    .await;
    check(
        vec![],
        InvestigationQuery {
            tenant_integration_key: Some("splunk-1".into()),
            ..query()
        },
    )
    .await;
    check(
        vec![canceled, queued],
        InvestigationQuery {
            states: vec![InvestigationStatus::NotAsked, InvestigationStatus::Error],
            ..query()
        },
    )
    .await;
}

pub async fn listing_sorts_totally_and_pages_without_gaps(store: Arc<dyn Store>) {
    // Twenty-five investigations, many sharing a create time, so ties must break by id.
    let mut created = Vec::new();
    for index in 0..25 {
        let priority = [Priority::Informational, Priority::Notable, Priority::Urgent][index % 3];
        let alert = simple_alert(&format!("alert {index}"), (index / 4) as i64);
        created.push(
            concluded(
                &store,
                alert,
                Outcome::BreachedSuspicious,
                priority,
                100 - index as i64,
            )
            .await,
        );
    }
    // Minutes 1 to 4 hold the alerts 4 to 19. A priority-sorted page inside an
    // alert-creation range is read one priority rank at a time.
    let in_range: Vec<i64> = created[4..20].to_vec();
    let range = TimeRange {
        from: Some(time(1)),
        until: Some(time(4)),
    };
    for alert_create in [TimeRange::default(), range] {
        for sort in [
            SortKey::AlertCreate,
            SortKey::AlertStart,
            SortKey::InvestigationCreate,
            SortKey::InvestigationComplete,
            SortKey::InvestigationUpdate,
            SortKey::Priority,
        ] {
            for direction in [SortDirection::Ascending, SortDirection::Descending] {
                let everything = ids(
                    &store,
                    &InvestigationQuery {
                        sort,
                        direction,
                        limit: 1000,
                        ..query()
                    },
                )
                .await;
                assert_eq!(everything.len(), 25);
                let full = ids(
                    &store,
                    &InvestigationQuery {
                        sort,
                        direction,
                        limit: 1000,
                        alert_create,
                        ..query()
                    },
                )
                .await;
                let expected: Vec<i64> = everything
                    .iter()
                    .copied()
                    .filter(|id| alert_create.is_open() || in_range.contains(id))
                    .collect();
                assert_eq!(full, expected, "{sort:?} {direction:?} in {alert_create:?}");
                let mut walked = Vec::new();
                let mut offset = 0;
                loop {
                    let page_query = InvestigationQuery {
                        sort,
                        direction,
                        limit: 4,
                        offset,
                        alert_create,
                        ..query()
                    };
                    let page = store.list_investigations(&page_query).await.unwrap();
                    assert_eq!(page.total, expected.len() as u64);
                    if page.items.is_empty() {
                        break;
                    }
                    walked.extend(page.items.iter().map(|item| item.id));
                    offset += 4;
                }
                assert_eq!(
                    walked, full,
                    "paging {sort:?} {direction:?} sees each item once, in order"
                );
                let mut reversed = ids(
                    &store,
                    &InvestigationQuery {
                        sort,
                        direction: match direction {
                            SortDirection::Ascending => SortDirection::Descending,
                            SortDirection::Descending => SortDirection::Ascending,
                        },
                        limit: 1000,
                        alert_create,
                        ..query()
                    },
                )
                .await;
                reversed.reverse();
                assert_eq!(
                    reversed, full,
                    "{sort:?}: the opposite direction is the exact reverse"
                );
            }
        }
    }
    let by_priority = store
        .list_investigations(&InvestigationQuery {
            sort: SortKey::Priority,
            limit: 1000,
            ..query()
        })
        .await
        .unwrap();
    let ranks: Vec<Option<Priority>> = by_priority.items.iter().map(|item| item.priority).collect();
    assert!(
        ranks.windows(2).all(|pair| pair[0] >= pair[1]),
        "urgent first: {ranks:?}"
    );
}

async fn total(store: &Arc<dyn Store>, query: &InvestigationQuery) -> u64 {
    store.list_investigations(query).await.unwrap().total
}

/// Asserts how many investigations each state holds, counted both ways the list counts:
/// from the per-combination counts the database keeps by triggers (filters on counted
/// columns only), and from the rows themselves (a time range covering every alert forces
/// that).
async fn assert_state_counts(store: &Arc<dyn Store>, expected: [(InvestigationStatus, u64); 4]) {
    for (state, want) in expected {
        let by_counts = total(
            store,
            &InvestigationQuery {
                states: vec![state],
                ..query()
            },
        )
        .await;
        let by_rows = total(
            store,
            &InvestigationQuery {
                states: vec![state],
                alert_create: TimeRange {
                    from: Some(time(-100_000)),
                    until: Some(time(100_000)),
                },
                ..query()
            },
        )
        .await;
        assert_eq!((by_counts, by_rows), (want, want), "{state:?}");
    }
}

pub async fn list_counts_stay_exact_through_every_change(store: Arc<dyn Store>) {
    use InvestigationStatus::{Error, Loading, NotAsked, Success};
    let mut edr = parsed_alert("Mimikatz", "EDR", 0, &[]);
    edr.tenant_id = Some("tenant-7".into());
    let edr = new_alert(edr, json!({"n": 1}), None);
    let first = store
        .create_investigation(edr.clone(), false)
        .await
        .unwrap()
        .investigation_id();
    for index in 1..4 {
        store
            .create_investigation(simple_alert(&format!("alert {index}"), index), false)
            .await
            .unwrap();
    }
    assert_state_counts(
        &store,
        [(NotAsked, 4), (Loading, 0), (Success, 0), (Error, 0)],
    )
    .await;
    let forced = store
        .create_investigation(edr, true)
        .await
        .unwrap()
        .investigation_id();
    assert_ne!(forced, first);
    assert_state_counts(
        &store,
        [(NotAsked, 5), (Loading, 0), (Success, 0), (Error, 0)],
    )
    .await;
    let edr_only = InvestigationQuery {
        states: InvestigationStatus::ALL.to_vec(),
        direct_source_labels: vec!["EDR".into()],
        tenant_id: Some("tenant-7".into()),
        ..query()
    };
    assert_eq!(
        total(&store, &edr_only).await,
        2,
        "both runs of the EDR alert"
    );

    let mut jobs = store.claim_jobs("w", 3, lease(), time(1)).await.unwrap();
    assert_eq!(jobs.len(), 3);
    assert_state_counts(
        &store,
        [(NotAsked, 2), (Loading, 3), (Success, 0), (Error, 0)],
    )
    .await;
    let released = jobs.pop().unwrap();
    let failed = jobs.pop().unwrap();
    let succeeded = jobs.pop().unwrap();
    let finish = Finish::Completed {
        result: Box::new(fixtures::result(
            Outcome::BreachedConfirmed,
            Priority::Urgent,
            "counted",
        )),
        ignored_for: None,
    };
    assert!(
        store
            .finish_job(&succeeded, &finish, time(2))
            .await
            .unwrap()
    );
    let stopped = Finish::Stopped {
        canceled: None,
        error_msg: "the engine failed".into(),
    };
    assert!(store.finish_job(&failed, &stopped, time(2)).await.unwrap());
    store.release_jobs(&[released]).await.unwrap();
    assert_state_counts(
        &store,
        [(NotAsked, 3), (Loading, 0), (Success, 1), (Error, 1)],
    )
    .await;

    let queued = ids(
        &store,
        &InvestigationQuery {
            states: vec![NotAsked],
            ..query()
        },
    )
    .await;
    store
        .cancel_investigation(queued[0], time(3))
        .await
        .unwrap();
    assert_state_counts(
        &store,
        [(NotAsked, 2), (Loading, 0), (Success, 1), (Error, 2)],
    )
    .await;
    let urgent = InvestigationQuery {
        priorities: vec![Some(Priority::Urgent)],
        ..query()
    };
    assert_eq!(total(&store, &urgent).await, 1);
    let by_reason = |reasons: Vec<StopReason>| InvestigationQuery {
        stopped_reasons: reasons,
        ..query()
    };
    assert_eq!(total(&store, &by_reason(vec![StopReason::Error])).await, 1);
    assert_eq!(
        total(
            &store,
            &by_reason(vec![StopReason::Canceled(Canceled::Manual)])
        )
        .await,
        1
    );
    assert_eq!(
        total(&store, &edr_only).await,
        2,
        "a change of state moves no one out"
    );
    // A state asked twice is listed once.
    let twice = InvestigationQuery {
        states: vec![Error, Error, Success],
        ..query()
    };
    let listed = store.list_investigations(&twice).await.unwrap();
    assert_eq!(listed.total, 3);
    assert_eq!(listed.items.len(), 3);
}

/// Lists filtered by type, source or tenant, alone or together (type and source have a
/// facet of their own), with priorities and stop reasons, count what their rows count (an alert-creation range with such a filter counts
/// the rows), through creates, claims, finishes and cancels.
pub async fn list_counts_of_each_filter_agree_with_the_rows(store: Arc<dyn Store>) {
    for index in 0..12_i64 {
        let source = ["EDR", "IdP"][usize::try_from(index % 2).unwrap()];
        let title = ["Mimikatz", "Spray", "Beacon"][usize::try_from(index % 3).unwrap()];
        let mut parsed = parsed_alert(title, source, index, &[]);
        parsed.tenant_id = (index % 4 != 0).then(|| format!("tenant-{}", index % 2));
        let raw = json!({"index": index});
        store
            .create_investigation(new_alert(parsed, raw, None), false)
            .await
            .unwrap();
    }
    let jobs = store.claim_jobs("w", 7, lease(), time(20)).await.unwrap();
    for (index, job) in jobs.iter().enumerate() {
        let finish = if index % 3 == 0 {
            Finish::Stopped {
                canceled: None,
                error_msg: "failed".into(),
            }
        } else {
            let priority = [Priority::Urgent, Priority::Notable][index % 2];
            Finish::Completed {
                result: Box::new(fixtures::result(Outcome::BreachedSuspicious, priority, "x")),
                ignored_for: None,
            }
        };
        if index < 6 {
            assert!(store.finish_job(job, &finish, time(21)).await.unwrap());
        }
    }
    let queued = ids(
        &store,
        &InvestigationQuery {
            states: vec![InvestigationStatus::NotAsked],
            ..query()
        },
    )
    .await;
    store
        .cancel_investigation(queued[0], time(22))
        .await
        .unwrap();
    let strings = |values: &[&str]| values.iter().map(|value| value.to_string()).collect();
    let filters = [
        InvestigationQuery {
            alert_types: strings(&["EDR:Mimikatz", "IdP:Spray"]),
            ..query()
        },
        InvestigationQuery {
            direct_source_labels: strings(&["IdP"]),
            priorities: vec![Some(Priority::Notable), None],
            ..query()
        },
        InvestigationQuery {
            tenant_id: Some("tenant-1".into()),
            ..query()
        },
        InvestigationQuery {
            alert_tenants: strings(&["tenant-0", "Default"]),
            stopped_reasons: vec![StopReason::Error, StopReason::Canceled(Canceled::Manual)],
            ..query()
        },
        InvestigationQuery {
            alert_types: strings(&["EDR:Mimikatz", "EDR:Beacon"]),
            direct_source_labels: strings(&["EDR"]),
            tenant_id: Some("tenant-0".into()),
            ..query()
        },
        InvestigationQuery {
            alert_types: strings(&["EDR:Mimikatz", "IdP:Spray", "EDR:Beacon"]),
            direct_source_labels: strings(&["EDR"]),
            priorities: vec![Some(Priority::Urgent), None],
            ..query()
        },
    ];
    let mut seen_some = 0;
    for filter in filters {
        for states in [
            InvestigationStatus::ALL.to_vec(),
            vec![InvestigationStatus::Success],
            vec![InvestigationStatus::Error, InvestigationStatus::NotAsked],
        ] {
            let counted = InvestigationQuery {
                states: states.clone(),
                ..filter.clone()
            };
            let by_rows = InvestigationQuery {
                alert_create: TimeRange {
                    from: Some(time(-100_000)),
                    until: Some(time(100_000)),
                },
                ..counted.clone()
            };
            let listed = store.list_investigations(&by_rows).await.unwrap();
            assert_eq!(listed.items.len() as u64, listed.total, "{by_rows:?}");
            assert_eq!(total(&store, &counted).await, listed.total, "{counted:?}");
            seen_some += u64::from(listed.total > 0);
        }
    }
    assert!(seen_some >= 10, "the filters match something: {seen_some}");
}

/// The total of the list filtered by `tags` on top of `filters`, counted both ways the list
/// counts: from the counts the database keeps by triggers (one tag name, every other filter
/// on a counted column) and from the rows (a time range covering every alert forces that).
/// The page must hold every match too.
async fn tag_totals(
    store: &Arc<dyn Store>,
    tags: &[&str],
    filters: InvestigationQuery,
) -> (u64, u64, u64) {
    let listed = InvestigationQuery {
        insight_tag_names: tags.iter().map(|tag| (*tag).to_string()).collect(),
        ..filters
    };
    let every_time = TimeRange {
        from: Some(time(-100_000)),
        until: Some(time(100_000)),
    };
    // The tag rows' copies of state and alert time (migration 0011) count these.
    let by_tag_rows = InvestigationQuery {
        alert_create: if listed.alert_create.is_open() {
            every_time
        } else {
            listed.alert_create
        },
        ..listed.clone()
    };
    // Without an alert-creation range, another range makes the list count the rows.
    let by_rows = InvestigationQuery {
        alert_start: every_time,
        ..listed.clone()
    };
    let mut totals = Vec::new();
    for query in [&listed, &by_tag_rows, &by_rows] {
        let page = store.list_investigations(query).await.unwrap();
        assert_eq!(
            u64::try_from(page.items.len()).unwrap(),
            page.total,
            "the page holds every match of {query:?}"
        );
        totals.push(page.total);
    }
    (totals[0], totals[1], totals[2])
}

/// One alert of `source`, titled `title`, at `minute`.
fn alert_from(source: &str, title: &str, minute: i64) -> NewAlert {
    new_alert(
        parsed_alert(title, source, minute, &[]),
        json!({"title": title}),
        None,
    )
}

/// Concludes three tagged investigations: EDR urgent with `credential_theft` and
/// `lateral_movement`, EDR notable with `credential_theft`, IdP urgent with
/// `lateral_movement`. Each is claimed (not_asked to loading) and concluded (loading to
/// success) before its tags are written: none of those moves may count a tag. Returns
/// their ids in that order.
async fn conclude_tagged(store: &Arc<dyn Store>) -> [i64; 3] {
    let tagged = [
        (
            "EDR",
            Priority::Urgent,
            &["credential_theft", "lateral_movement"][..],
        ),
        ("EDR", Priority::Notable, &["credential_theft"][..]),
        ("IdP", Priority::Urgent, &["lateral_movement"][..]),
    ];
    let mut ids = [0; 3];
    for (index, (source, priority, tags)) in tagged.into_iter().enumerate() {
        let minute = i64::try_from(index).unwrap() + 1;
        let alert = alert_from(source, &format!("alert {minute}"), minute);
        ids[index] = concluded_with_tags(
            store,
            alert,
            Outcome::BreachedSuspicious,
            priority,
            tags,
            minute,
        )
        .await;
    }
    ids
}

pub async fn insight_tag_counts_stay_exact(store: Arc<dyn Store>) {
    use InvestigationStatus::{Error, Success};
    let [both, theft, lateral] = conclude_tagged(&store).await;
    let untagged = alert_from("IdP", "untagged", 4);
    concluded_with_tags(
        &store,
        untagged,
        Outcome::FalseAlert,
        Priority::Informational,
        &[],
        4,
    )
    .await;
    // Tags concluded with a lost lease are dropped with the rest of the result.
    let canceled = store
        .create_investigation(alert_from("EDR", "canceled", 5), false)
        .await
        .unwrap()
        .investigation_id();
    let jobs = store.claim_jobs("w", 10, lease(), time(5)).await.unwrap();
    assert_eq!(jobs.len(), 1);
    store.cancel_investigation(canceled, time(6)).await.unwrap();
    assert!(
        !finish_with_tags(
            &store,
            &jobs[0],
            Outcome::BreachedSuspicious,
            Priority::Notable,
            &["credential_theft"],
            6
        )
        .await,
        "its lease was lost"
    );
    store
        .create_investigation(alert_from("EDR", "queued", 7), false)
        .await
        .unwrap();
    // Two tags that only this one carries: a union must count it once.
    concluded_with_tags(
        &store,
        alert_from("IdP", "exfiltration", 8),
        Outcome::BreachedSuspicious,
        Priority::Informational,
        &["exfiltration", "persistence"],
        8,
    )
    .await;

    let checks: Vec<(&[&str], InvestigationQuery, u64)> = vec![
        (&["exfiltration", "persistence"], query(), 1),
        (
            &["persistence", "credential_theft", "exfiltration"],
            query(),
            3,
        ),
        (
            &["lateral_movement", "persistence", "credential_theft"],
            InvestigationQuery {
                priorities: vec![Some(Priority::Urgent)],
                ..query()
            },
            2,
        ),
        (
            &["persistence", "nobody_has_it"],
            InvestigationQuery {
                direct_source_labels: vec!["IdP".into()],
                ..query()
            },
            1,
        ),
        (&["credential_theft"], query(), 2),
        (&["lateral_movement"], query(), 2),
        (&["credential_theft", "lateral_movement"], query(), 3),
        (&["credential_theft", "credential_theft"], query(), 2),
        (&["nobody_has_it"], query(), 0),
        (
            &["credential_theft"],
            InvestigationQuery {
                states: InvestigationStatus::ALL.to_vec(),
                ..query()
            },
            2,
        ),
        (
            &["credential_theft"],
            InvestigationQuery {
                states: vec![Error],
                ..query()
            },
            0,
        ),
        (
            &["credential_theft"],
            InvestigationQuery {
                states: vec![Error, Success],
                stopped_reasons: vec![StopReason::Canceled(Canceled::Manual)],
                ..query()
            },
            0,
        ),
        (
            &["credential_theft"],
            InvestigationQuery {
                direct_source_labels: vec!["EDR".into()],
                ..query()
            },
            2,
        ),
        (
            &["lateral_movement"],
            InvestigationQuery {
                direct_source_labels: vec!["EDR".into()],
                ..query()
            },
            1,
        ),
        (
            &["lateral_movement"],
            InvestigationQuery {
                priorities: vec![Some(Priority::Urgent)],
                ..query()
            },
            2,
        ),
        (
            &["credential_theft"],
            InvestigationQuery {
                priorities: vec![Some(Priority::Notable), None],
                ..query()
            },
            1,
        ),
        (
            &["credential_theft", "lateral_movement"],
            InvestigationQuery {
                alert_types: vec!["IdP:alert 3".into(), "EDR:alert 1".into()],
                ..query()
            },
            2,
        ),
        (
            &["credential_theft"],
            InvestigationQuery {
                alert_tenants: vec!["Default".into()],
                ..query()
            },
            2,
        ),
        (
            &["credential_theft"],
            InvestigationQuery {
                alert_types: vec!["EDR:alert 2".into()],
                ..query()
            },
            1,
        ),
        // Two of type, source and tenant: the kept combinations (migration 0008).
        (
            &["lateral_movement"],
            InvestigationQuery {
                alert_types: vec!["IdP:alert 3".into()],
                direct_source_labels: vec!["IdP".into()],
                ..query()
            },
            1,
        ),
        (
            &["credential_theft"],
            InvestigationQuery {
                direct_source_labels: vec!["EDR".into()],
                alert_tenants: vec!["Default".into()],
                ..query()
            },
            2,
        ),
        // Inside an alert-creation range, counted from the tag rows (migration 0011).
        (&["credential_theft"], created_in(2, 8, query()), 1),
        (&["lateral_movement"], created_in(2, 8, query()), 1),
        (
            &["credential_theft", "lateral_movement"],
            created_in(2, 8, query()),
            2,
        ),
        (
            &["exfiltration", "persistence"],
            created_in(2, 8, query()),
            1,
        ),
        (&["credential_theft"], created_in(1, 1, query()), 1),
        (&["persistence"], created_in(1, 7, query()), 0),
        (
            &["lateral_movement"],
            InvestigationQuery {
                alert_create: TimeRange {
                    from: None,
                    until: Some(time(2)),
                },
                ..query()
            },
            1,
        ),
        (
            &["lateral_movement"],
            created_in(
                2,
                8,
                InvestigationQuery {
                    priorities: vec![Some(Priority::Urgent)],
                    ..query()
                },
            ),
            1,
        ),
        (
            &["credential_theft"],
            created_in(
                2,
                8,
                InvestigationQuery {
                    priorities: vec![Some(Priority::Urgent)],
                    ..query()
                },
            ),
            0,
        ),
        (
            &["credential_theft", "lateral_movement", "persistence"],
            created_in(
                1,
                8,
                InvestigationQuery {
                    direct_source_labels: vec!["IdP".into()],
                    ..query()
                },
            ),
            2,
        ),
        (
            &["credential_theft"],
            created_in(
                1,
                8,
                InvestigationQuery {
                    states: InvestigationStatus::ALL.to_vec(),
                    ..query()
                },
            ),
            2,
        ),
    ];
    for (tags, filters, want) in checks {
        let label = format!("{tags:?} with {filters:?}");
        assert_eq!(
            tag_totals(&store, tags, filters).await,
            (want, want, want),
            "{label}"
        );
    }

    // One by one, a tagged page inside a range walks the alert-creation order from the
    // range's end; any other order reads the matches first. Both see each match once.
    for (sort, direction, want) in [
        (
            SortKey::AlertCreate,
            SortDirection::Descending,
            [lateral, theft, both],
        ),
        (
            SortKey::InvestigationCreate,
            SortDirection::Ascending,
            [both, theft, lateral],
        ),
        (
            SortKey::Priority,
            SortDirection::Descending,
            [lateral, both, theft],
        ),
    ] {
        let mut seen = Vec::new();
        for offset in 0..4 {
            let page = InvestigationQuery {
                insight_tag_names: vec!["credential_theft".into(), "lateral_movement".into()],
                sort,
                direction,
                limit: 1,
                offset,
                ..created_in(1, 8, query())
            };
            seen.extend(ids(&store, &page).await);
        }
        assert_eq!(seen, want, "{sort:?} {direction:?}");
    }
}

/// `filters` narrowed to the alerts created from minute `first` to minute `last`.
fn created_in(first: i64, last: i64, filters: InvestigationQuery) -> InvestigationQuery {
    InvestigationQuery {
        alert_create: TimeRange {
            from: Some(time(first)),
            until: Some(time(last)),
        },
        ..filters
    }
}

/// A list filtered by states and an alert-creation range only sums the kept counts of the
/// whole UTC hours inside the range and counts the rows of the partial hours at its ends
/// (migration 0016), or of the rest of an hour for a partial hour of more than half of it:
/// every combination of whole hours and days, partial hours, open ends, times before 1970
/// and states must match both a count of the rows and the truth.
pub async fn hour_counts_answer_alert_creation_ranges(store: Arc<dyn Store>) {
    use InvestigationStatus::{Error, Loading, NotAsked, Success};
    // Minutes after 2026-03-01 12:00; UTC days start at minutes -720 (1 March), 720 and 2160,
    // hours at each multiple of 60.
    let mut expected: Vec<(i64, InvestigationStatus)> = Vec::new();
    for (index, minute) in [-800, -10, 0, 1, 118, 700, 720, 2000, 3000]
        .into_iter()
        .enumerate()
    {
        let alert = simple_alert(&format!("day {index}"), minute);
        concluded(
            &store,
            alert,
            Outcome::FalseAlert,
            Priority::Informational,
            minute,
        )
        .await;
        expected.push((minute, Success));
    }
    let canceled = store
        .create_investigation(simple_alert("canceled", 719), false)
        .await
        .unwrap()
        .investigation_id();
    store
        .cancel_investigation(canceled, time(719))
        .await
        .unwrap();
    expected.push((719, Error));
    store
        .create_investigation(simple_alert("claimed", 710), false)
        .await
        .unwrap();
    store.claim_jobs("w", 10, lease(), time(711)).await.unwrap();
    expected.push((710, Loading));
    // 1969: before the epoch, days are counted by floor division.
    let ancient = -29_700_000;
    for (title, minute) in [
        ("queued", 730),
        ("queued early", -790),
        ("ancient", ancient),
    ] {
        store
            .create_investigation(simple_alert(title, minute), false)
            .await
            .unwrap();
        expected.push((minute, NotAsked));
    }

    let end_of = |minute: i64| time(minute) - Duration::microseconds(1);
    let ancient_day = time(ancient)
        .date_naive()
        .and_time(chrono::NaiveTime::MIN)
        .and_utc();
    assert!(ancient_day.timestamp_micros() < 0);
    let ranges = [
        (
            Some(ancient_day),
            Some(ancient_day + Duration::days(1) - Duration::microseconds(1)),
        ),
        (Some(ancient_day + Duration::days(1)), Some(time(0))),
        (Some(time(ancient)), Some(time(ancient))),
        (Some(time(-720)), Some(end_of(720))),
        (Some(time(-720)), Some(end_of(2160))),
        (Some(time(-721)), Some(time(2160))),
        (Some(time(-10)), Some(time(720))),
        // Partial hours of more than half an hour at both ends, whose rests hold alerts (0
        // and 1; 719): each counted as its hour less its rest.
        (Some(time(5)), Some(time(718))),
        // The same across one hour's end, with no whole hour between (rests: 0 and 1; 118).
        (Some(time(5)), Some(time(115))),
        // Inside one hour: counted by its rows.
        (Some(time(702)), Some(time(715))),
        // A partial hour whose rest holds 2000, and an open end.
        (Some(time(2005)), None),
        (Some(time(-5)), Some(time(2940))),
        (Some(time(-5)), Some(time(1500))),
        (Some(time(0)), None),
        (None, Some(time(700))),
        (None, Some(end_of(-720))),
        (Some(time(-5000)), Some(time(5000))),
        (Some(time(100)), Some(time(200))),
        (Some(time(-30_000_000)), Some(time(0))),
        (Some(time(-30_000_000)), Some(time(-29_000_000))),
    ];
    for states in [
        vec![],
        vec![Success],
        vec![NotAsked, Loading],
        InvestigationStatus::ALL.to_vec(),
    ] {
        for (from, until) in ranges {
            let listed = InvestigationQuery {
                states: states.clone(),
                alert_create: TimeRange { from, until },
                ..query()
            };
            let listed_states = listed.effective_states();
            let want = expected
                .iter()
                .filter(|(minute, state)| {
                    listed_states.contains(state)
                        && from.is_none_or(|from| from <= time(*minute))
                        && until.is_none_or(|until| time(*minute) <= until)
                })
                .count() as u64;
            // Another range makes the list count the rows.
            let by_rows = InvestigationQuery {
                alert_start: TimeRange {
                    from: Some(time(-40_000_000)),
                    until: Some(time(100_000)),
                },
                ..listed.clone()
            };
            assert_eq!(
                (total(&store, &listed).await, total(&store, &by_rows).await),
                (want, want),
                "{states:?} from {from:?} until {until:?}"
            );
        }
    }
}

/// Nothing in the store changes a tagged investigation's counted columns, renames or
/// deletes a tag today; a later feature or an operator's SQL may, and the kept tag counts
/// must follow (the triggers of migration 0008).
pub async fn tag_counts_follow_every_change_made_by_sql(
    store: Arc<dyn Store>,
    raw: crate::contract_memory_audit::RawDatabase,
) {
    use InvestigationStatus::Error;
    let [both, theft, lateral] = conclude_tagged(&store).await;
    let run = |sql: String| {
        let raw = raw.clone();
        async move { raw.execute(&sql).await.expect("change by SQL") }
    };
    let check = |tags: &'static [&'static str], filters: InvestigationQuery, want: u64| {
        let store = store.clone();
        async move {
            let label = format!("{tags:?} with {filters:?}");
            assert_eq!(
                tag_totals(&store, tags, filters).await,
                (want, want, want),
                "{label}"
            );
        }
    };

    run(format!(
        "UPDATE investigations SET priority = 'informational', tenant_id = 'moved' \
         WHERE id = {both}"
    ))
    .await;
    let informational = InvestigationQuery {
        priorities: vec![Some(Priority::Informational)],
        ..query()
    };
    check(&["credential_theft"], informational, 1).await;
    let moved = InvestigationQuery {
        tenant_id: Some("moved".into()),
        ..query()
    };
    check(&["lateral_movement"], moved.clone(), 1).await;
    let moved_from_edr = InvestigationQuery {
        direct_source_labels: vec!["EDR".into()],
        ..moved
    };
    check(&["lateral_movement"], moved_from_edr, 1).await;
    let urgent = InvestigationQuery {
        priorities: vec![Some(Priority::Urgent)],
        ..query()
    };
    check(&["lateral_movement"], urgent, 1).await;
    check(&["credential_theft"], query(), 2).await;

    run(format!(
        "UPDATE investigations SET status = 'error', canceled = 'CANCEL_MANUAL' \
         WHERE id = {theft}"
    ))
    .await;
    check(&["credential_theft"], query(), 1).await;
    let errors = InvestigationQuery {
        states: vec![Error],
        ..query()
    };
    check(&["credential_theft"], errors, 1).await;
    let manual = InvestigationQuery {
        stopped_reasons: vec![StopReason::Canceled(Canceled::Manual)],
        ..query()
    };
    check(&["credential_theft"], manual, 1).await;
    let from_edr = InvestigationQuery {
        direct_source_labels: vec!["EDR".into()],
        ..query()
    };
    check(&["credential_theft"], from_edr, 1).await;

    run(format!(
        "UPDATE investigation_tags SET name = 'renamed' WHERE investigation_id = {lateral}"
    ))
    .await;
    check(&["lateral_movement"], query(), 1).await;
    check(&["renamed"], query(), 1).await;
    let of_type = InvestigationQuery {
        alert_types: vec!["IdP:alert 3".into()],
        ..query()
    };
    check(&["renamed"], of_type, 1).await;
    run(format!(
        "DELETE FROM investigation_tags WHERE investigation_id = {both} \
         AND name = 'lateral_movement'"
    ))
    .await;
    check(&["lateral_movement"], query(), 0).await;
    run(format!(
        "INSERT INTO investigation_tags (name, investigation_id) VALUES ('added', {lateral})"
    ))
    .await;
    check(&["added"], query(), 1).await;
    check(&["added", "renamed"], query(), 1).await;
    check(&["added", "renamed"], created_in(3, 3, query()), 1).await;

    // The tag rows' copies of the alert time follow the investigation (migration 0011).
    run(format!(
        "UPDATE investigations SET alert_create_time = {} WHERE id = {lateral}",
        time(60).timestamp_micros()
    ))
    .await;
    check(&["added", "renamed"], created_in(1, 8, query()), 0).await;
    check(&["added", "renamed"], created_in(50, 70, query()), 1).await;
    check(&["credential_theft"], created_in(50, 70, errors_too()), 0).await;
    check(&["credential_theft"], created_in(1, 8, errors_too()), 2).await;
}

/// Every state.
fn errors_too() -> InvestigationQuery {
    InvestigationQuery {
        states: InvestigationStatus::ALL.to_vec(),
        ..query()
    }
}

/// A list under an alert-creation range, sorted by another time, is read one UTC day at a
/// time when that reads fewer rows (store-sql's `list_days`): the whole days walked in the
/// sort order, the partial days at the ends walked or read. Every page of every such order,
/// over ranges with whole days, partial ends, open ends and two states, must list exactly
/// what filtering the unranged list by the range gives, in its order.
pub async fn alert_creation_ranges_list_by_day_in_every_time_order(store: Arc<dyn Store>) {
    use InvestigationStatus::{NotAsked, Success};
    // Forty alerts in each of four UTC days (which start at minutes -720, 720, 2160 and
    // 3600), 35 minutes apart: enough that a page splits by day over several pages, and
    // that a walk of a partial day is probed before it is chosen.
    let alerts = (0..4_i64).flat_map(|day| (0..40).map(move |slot| (day, 5 + 35 * slot)));
    // (id, alert minute) of each.
    let mut stored: Vec<(i64, i64)> = Vec::new();
    let mut queued = Vec::new();
    for (index, (day, offset)) in alerts.enumerate() {
        let index = index as i64;
        let minute = -720 + day * 1440 + offset;
        let mut alert = simple_alert(&format!("day {day} minute {minute}"), minute);
        // Start times and completion times in other orders than creation, with ties.
        alert.parsed.start_time = Some(time(minute - (index * 37 % 11) * 200));
        if index % 10 == 3 {
            queued.push((alert, minute));
            continue;
        }
        let concluded_at = 10_000 + index * 7919 % 23;
        let id = concluded(
            &store,
            alert,
            Outcome::FalseAlert,
            Priority::Informational,
            concluded_at,
        )
        .await;
        stored.push((id, minute));
    }
    // Created last, so that no claim above takes their jobs: they stay not_asked, with no
    // completion time.
    for (alert, minute) in queued {
        let id = store
            .create_investigation(alert, false)
            .await
            .unwrap()
            .investigation_id();
        stored.push((id, minute));
    }
    let minute_of = |id: i64| {
        stored
            .iter()
            .find(|(stored, _)| *stored == id)
            .map(|(_, minute)| *minute)
    };
    let end_of = |minute: i64| time(minute) - Duration::microseconds(1);
    let ranges = [
        // Three whole days.
        (Some(time(-720)), Some(end_of(3600))),
        // A partial day at each end.
        (Some(time(-700)), Some(time(3000))),
        // Open ends.
        (Some(time(100)), None),
        (None, Some(time(1500))),
        // Inside one day.
        (Some(time(800)), Some(time(900))),
        // The last alert of the first day and the first of the last.
        (Some(time(-720 + 1370)), Some(time(3600 + 5))),
        // All of the first day but its first alert.
        (Some(time(-710)), Some(end_of(2160))),
        // The last three alerts of the first day, and the next two days.
        (Some(time(-720 + 1300)), Some(end_of(3600))),
        // The next two days, and the first three alerts of the last.
        (Some(time(720)), Some(time(3600 + 75))),
    ];
    for states in [vec![], vec![Success, NotAsked]] {
        for sort in [
            SortKey::AlertStart,
            SortKey::InvestigationCreate,
            SortKey::InvestigationComplete,
            SortKey::InvestigationUpdate,
        ] {
            for direction in [SortDirection::Ascending, SortDirection::Descending] {
                let unranged = InvestigationQuery {
                    states: states.clone(),
                    sort,
                    direction,
                    limit: 1000,
                    ..query()
                };
                let everything = ids(&store, &unranged).await;
                for (from, until) in ranges {
                    let in_range = |id: &i64| {
                        minute_of(*id).is_some_and(|minute| {
                            from.is_none_or(|from| from <= time(minute))
                                && until.is_none_or(|until| time(minute) <= until)
                        })
                    };
                    let expected: Vec<i64> = everything.iter().copied().filter(in_range).collect();
                    assert!(!expected.is_empty());
                    let ranged = InvestigationQuery {
                        alert_create: TimeRange { from, until },
                        ..unranged.clone()
                    };
                    let case =
                        format!("{states:?} {sort:?} {direction:?} from {from:?} until {until:?}");
                    assert_eq!(ids(&store, &ranged).await, expected, "{case}");
                    // The first sixteen pages of one, split by day (a partial day is
                    // probed: up to the eighth page, fewer rows than a day's forty), then
                    // the last page of three, read.
                    let page = |offset: u64, limit: u32| {
                        let store = store.clone();
                        let ranged = ranged.clone();
                        async move {
                            store
                                .list_investigations(&InvestigationQuery {
                                    limit,
                                    offset,
                                    ..ranged
                                })
                                .await
                                .unwrap()
                        }
                    };
                    let mut walked = Vec::new();
                    for offset in 0..16 {
                        let listed = page(offset, 1).await;
                        assert_eq!(listed.total, expected.len() as u64, "{case}");
                        walked.extend(listed.items.iter().map(|item| item.id));
                    }
                    let last = expected.len().saturating_sub(3);
                    let tail: Vec<i64> = page(last as u64, 3)
                        .await
                        .items
                        .iter()
                        .map(|item| item.id)
                        .collect();
                    assert_eq!(tail, expected[last..], "last page {case}");
                    let expected = &expected[..expected.len().min(16)];
                    assert_eq!(walked, expected, "paging {case}");
                }
            }
        }
    }
}

/// A search in one state is counted on SQLite as its matches in every state less those in
/// the others when the others hold few investigations, and by its rows otherwise: both
/// must agree with the rows, and a page walked in the sort order (probing the search index
/// per investigation) with the page read from the matches.
/// A search filtered by source labels finds the matches from those sources: not an alert
/// of another source whose text names the label (SQLite narrows the search to documents
/// holding the label, `match_expression_from_sources`), nor one that lacks the word.
pub async fn a_search_from_a_source_finds_its_matches_only(store: Arc<dyn Store>) {
    let alerts = [
        ("Falcon Sensor", "beacon seen", true),
        ("Falcon Sensor", "beacon again", true),
        ("Falcon Sensor", "quiet host", false),
        ("Okta", "beacon reported by Falcon Sensor", false),
        ("Okta", "beacon", false),
    ];
    let mut expected = Vec::new();
    for (minute, (source, title, matches)) in alerts.into_iter().enumerate() {
        let minute = i64::try_from(minute).unwrap();
        let id = store
            .create_investigation(alert_from(source, title, minute), false)
            .await
            .unwrap()
            .investigation_id();
        if matches {
            expected.push(id);
        }
    }
    expected.reverse();
    let strings = |values: &[&str]| values.iter().map(|value| value.to_string()).collect();
    let from = |labels: &[&str]| InvestigationQuery {
        search: Some("beacon".into()),
        states: vec![InvestigationStatus::NotAsked],
        direct_source_labels: strings(labels),
        ..query()
    };
    let page = store
        .list_investigations(&from(&["Falcon Sensor"]))
        .await
        .unwrap();
    assert_eq!(page.total, 2);
    assert_eq!(ids(&store, &from(&["Falcon Sensor"])).await, expected);
    let both = store
        .list_investigations(&from(&["Falcon Sensor", "Okta"]))
        .await
        .unwrap();
    assert_eq!(both.total, 4);
    // A label of no words narrows nothing, and matches no source.
    let wordless = store.list_investigations(&from(&["--"])).await.unwrap();
    assert_eq!(wordless.total, 0);
}

pub async fn a_search_counts_its_matches_in_the_listed_states_only(store: Arc<dyn Store>) {
    let mut concluded_ids = Vec::new();
    for minute in 0..25 {
        concluded_ids.push(
            concluded(
                &store,
                simple_alert(&format!("beacon seen {minute}"), minute),
                Outcome::FalseAlert,
                Priority::Informational,
                minute,
            )
            .await,
        );
    }
    concluded(
        &store,
        simple_alert("quiet host", 30),
        Outcome::FalseAlert,
        Priority::Informational,
        30,
    )
    .await;
    let queued = store
        .create_investigation(simple_alert("beacon queued", 31), false)
        .await
        .unwrap()
        .investigation_id();
    store
        .create_investigation(simple_alert("quiet queued", 32), false)
        .await
        .unwrap();
    let search = |states: &[InvestigationStatus], limit: u32| InvestigationQuery {
        search: Some("beacon".into()),
        states: states.to_vec(),
        limit,
        ..query()
    };
    let total = |query: InvestigationQuery| {
        let store = store.clone();
        async move { store.list_investigations(&query).await.unwrap().total }
    };
    use InvestigationStatus::{NotAsked, Success};
    assert_eq!(total(search(&[Success], 100)).await, 25);
    assert_eq!(total(search(&[], 100)).await, 25);
    assert_eq!(total(search(&[NotAsked], 100)).await, 1);
    assert_eq!(total(search(&[NotAsked, Success], 100)).await, 26);
    assert_eq!(
        total(InvestigationQuery {
            search: Some("beacon queued".into()),
            ..search(&[Success], 100)
        })
        .await,
        0
    );
    assert_eq!(ids(&store, &search(&[NotAsked], 100)).await, [queued]);
    let newest: Vec<i64> = concluded_ids.iter().rev().take(5).copied().collect();
    assert_eq!(ids(&store, &search(&[Success], 5)).await, newest);
    let mut all = concluded_ids.clone();
    all.reverse();
    assert_eq!(ids(&store, &search(&[Success], 100)).await, all);
}

/// A search whose matches lie far down the sort order, under newer investigations that do
/// not match: SQLite reads such a page in windows of the sort order that grow until one
/// holds the page (`list_search::page_in_windows`); its items and count must be those of
/// the rows, and the queued investigations, in a span of ids of their own, subtracted.
pub async fn a_searched_page_far_down_the_sort_order_is_exact(store: Arc<dyn Store>) {
    let mut beacons = Vec::new();
    for minute in 0..20 {
        beacons.push(
            concluded(
                &store,
                simple_alert(&format!("beacon far {minute}"), minute),
                Outcome::FalseAlert,
                Priority::Informational,
                minute,
            )
            .await,
        );
    }
    for minute in 20..50 {
        concluded(
            &store,
            simple_alert(&format!("quiet near {minute}"), minute),
            Outcome::FalseAlert,
            Priority::Informational,
            minute,
        )
        .await;
    }
    for minute in 50..52 {
        store
            .create_investigation(
                simple_alert(&format!("beacon queued {minute}"), minute),
                false,
            )
            .await
            .unwrap();
    }
    beacons.reverse();
    let page = |limit: u32, offset: u64| InvestigationQuery {
        search: Some("beacon".into()),
        states: vec![InvestigationStatus::Success],
        limit,
        offset,
        ..query()
    };
    let listed = store.list_investigations(&page(3, 2)).await.unwrap();
    assert_eq!(listed.total, 20);
    assert_eq!(ids(&store, &page(3, 2)).await, beacons[2..5]);
    assert_eq!(ids(&store, &page(1, 0)).await, beacons[..1]);
    assert_eq!(ids(&store, &page(100, 0)).await, beacons);
    assert_eq!(ids(&store, &page(5, 18)).await, beacons[18..]);
}

/// A search in a state holding fewer investigations than the others (what concluded below
/// a backlog, or the queue): SQLite counts it within the state's own span of ids
/// (`list_search::count_in_own_span`), where an investigation of another state may lie,
/// and reads a page's matches between the lowest and highest id of its window. Counts and
/// pages, in both directions, must be those of the rows.
pub async fn a_search_in_a_state_smaller_than_the_others_is_exact(store: Arc<dyn Store>) {
    let first = concluded(
        &store,
        simple_alert("beacon first", 0),
        Outcome::FalseAlert,
        Priority::Informational,
        0,
    )
    .await;
    // Queued now, then leased by the next conclusion's claim: inside the successes' span.
    let between = store
        .create_investigation(simple_alert("beacon between", 1), false)
        .await
        .unwrap()
        .investigation_id();
    let second = concluded(
        &store,
        simple_alert("beacon second", 2),
        Outcome::FalseAlert,
        Priority::Informational,
        2,
    )
    .await;
    for minute in 3..12 {
        store
            .create_investigation(
                simple_alert(&format!("beacon backlog {minute}"), minute),
                false,
            )
            .await
            .unwrap();
    }
    store
        .create_investigation(simple_alert("quiet backlog", 12), false)
        .await
        .unwrap();
    let search = |state: InvestigationStatus, direction: SortDirection| InvestigationQuery {
        search: Some("beacon".into()),
        states: vec![state],
        direction,
        limit: 100,
        ..query()
    };
    use InvestigationStatus::{Loading, NotAsked, Success};
    use SortDirection::{Ascending, Descending};
    let listed = store
        .list_investigations(&search(Success, Descending))
        .await
        .unwrap();
    assert_eq!(listed.total, 2);
    assert_eq!(
        ids(&store, &search(Success, Descending)).await,
        [second, first]
    );
    assert_eq!(
        ids(&store, &search(Success, Ascending)).await,
        [first, second]
    );
    let listed = store
        .list_investigations(&search(Loading, Descending))
        .await
        .unwrap();
    assert_eq!(listed.total, 1);
    assert_eq!(ids(&store, &search(Loading, Ascending)).await, [between]);
    let listed = store
        .list_investigations(&search(NotAsked, Descending))
        .await
        .unwrap();
    assert_eq!(listed.total, 9);
    let quiet = InvestigationQuery {
        search: Some("quiet".into()),
        ..search(Success, Descending)
    };
    assert_eq!(store.list_investigations(&quiet).await.unwrap().total, 0);
}

/// A list of one insight tag in the alert-creation order may be read from the tag's own
/// rows (`Access::TagOrder`): the tag clustered in time, behind newer investigations
/// without it, with alert times tied, another tag beside it, a source filter and a range.
/// Every page, in both directions, must be the rows' order (alert time, then id), with no
/// gap or repeat across pages.
pub async fn a_tag_is_paged_from_its_own_rows_in_the_alert_creation_order(store: Arc<dyn Store>) {
    // (id, minute, source) of every investigation tagged `campaign`.
    let mut campaign: Vec<(i64, i64, &str)> = Vec::new();
    for index in 0..24_i64 {
        // Pairs of alerts share a minute; sources alternate within a pair.
        let minute = index / 2;
        let source = if index % 2 == 0 { "EDR" } else { "IdP" };
        let tags: &[&str] = if index % 3 == 0 {
            &["campaign", "other"]
        } else {
            &["campaign"]
        };
        let alert = alert_from(source, &format!("tagged {index}"), minute);
        let id = concluded_with_tags(
            &store,
            alert,
            Outcome::FalseAlert,
            Priority::Notable,
            tags,
            minute,
        )
        .await;
        campaign.push((id, minute, source));
    }
    // Newer than every tagged one, and untagged or tagged otherwise.
    for minute in 20..30 {
        let alert = alert_from("EDR", &format!("later {minute}"), minute);
        concluded_with_tags(
            &store,
            alert,
            Outcome::FalseAlert,
            Priority::Notable,
            &["other"],
            minute,
        )
        .await;
    }
    let newest_first = |source: Option<&str>, from: i64, until: i64| -> Vec<i64> {
        let mut kept: Vec<(i64, i64)> = campaign
            .iter()
            .filter(|(_, minute, from_source)| {
                source.is_none_or(|source| source == *from_source)
                    && (from..=until).contains(minute)
            })
            .map(|(id, minute, _)| (*minute, *id))
            .collect();
        kept.sort_unstable_by(|a, b| b.cmp(a));
        kept.into_iter().map(|(_, id)| id).collect()
    };
    // A source filter (or none), and an alert-creation range in minutes (or none).
    type Case = (Option<&'static str>, Option<(i64, i64)>);
    let cases: [Case; 4] = [
        (None, None),
        (Some("IdP"), None),
        (None, Some((3, 8))),
        (Some("EDR"), Some((3, 8))),
    ];
    for (source, range) in cases {
        let (from, until) = range.unwrap_or((-1, 100));
        let want_descending = newest_first(source, from, until);
        let mut want_ascending = want_descending.clone();
        want_ascending.reverse();
        for (direction, want) in [
            (SortDirection::Descending, &want_descending),
            (SortDirection::Ascending, &want_ascending),
        ] {
            let listed = |limit: u32, offset: u64| InvestigationQuery {
                insight_tag_names: vec!["campaign".into()],
                direct_source_labels: source.iter().map(|source| (*source).to_string()).collect(),
                alert_create: range.map_or(TimeRange::default(), |(from, until)| {
                    created_in(from, until, query()).alert_create
                }),
                direction,
                limit,
                offset,
                ..query()
            };
            let whole = store.list_investigations(&listed(100, 0)).await.unwrap();
            assert_eq!(whole.total, want.len() as u64, "{source:?} {range:?}");
            let mut paged = Vec::new();
            for offset in (0..want.len() + 2).step_by(2) {
                let offset = u64::try_from(offset).unwrap();
                paged.extend(ids(&store, &listed(2, offset)).await);
            }
            assert_eq!(&paged, want, "{source:?} {range:?} {direction:?}");
        }
    }
}

pub async fn search_finds_words_and_treats_operators_as_data(store: Arc<dyn Store>) {
    let mimikatz = concluded(
        &store,
        new_alert(
            parsed_alert(
                "Mimikatz dumped LSASS on WKS-0231",
                "EDR",
                0,
                &[
                    (EntityKind::Ip, "203.0.113.5"),
                    (EntityKind::Email, "r.patel@example.com"),
                ],
            ),
            json!({"a": 1}),
            None,
        ),
        Outcome::BreachedConfirmed,
        Priority::Urgent,
        1,
    )
    .await;
    let zurich = concluded(
        &store,
        new_alert(
            parsed_alert("Sign-in from Zürich by Ünïcödé user 東京", "IdP", 1, &[]),
            json!({"a": 2}),
            None,
        ),
        Outcome::FalseAlert,
        Priority::Informational,
        2,
    )
    .await;
    let search = |text: &str| InvestigationQuery {
        search: Some(text.into()),
        ..query()
    };
    assert_eq!(ids(&store, &search("mimikatz")).await, vec![mimikatz]);
    assert_eq!(ids(&store, &search("MIMIKATZ lsass")).await, vec![mimikatz]);
    assert_eq!(
        ids(&store, &search("mimikatz zürich")).await,
        Vec::<i64>::new(),
        "every word must match"
    );
    assert_eq!(ids(&store, &search("203.0.113.5")).await, vec![mimikatz]);
    assert_eq!(ids(&store, &search("r.patel")).await, vec![mimikatz]);
    assert_eq!(ids(&store, &search("wks-0231")).await, vec![mimikatz]);
    assert_eq!(ids(&store, &search("zürich")).await, vec![zurich]);
    assert_eq!(ids(&store, &search("東京")).await, vec![zurich]);
    assert_eq!(
        ids(&store, &search(&format!("conclusion of {zurich}"))).await,
        vec![zurich],
        "conclusions are searchable"
    );
    for hostile in [
        "' OR 1=1 --",
        "\" OR \"\"=\"",
        "mimikatz\" OR \"x",
        "*",
        "NEAR(a b)",
        "a AND OR NOT",
        "'; DROP TABLE investigations; --",
        "\\",
        "%_",
        "(((",
        "col:value",
        "^start",
    ] {
        let page = store.list_investigations(&search(hostile)).await;
        assert!(page.is_ok(), "search {hostile:?} must not fail: {page:?}");
    }
    assert_eq!(
        ids(&store, &search("mimikatz\" OR \"x")).await,
        Vec::<i64>::new(),
        "quotes are data, not syntax"
    );
    assert_eq!(
        store.list_investigations(&query()).await.unwrap().total,
        2,
        "nothing was dropped"
    );
    assert_eq!(
        ids(&store, &search("***")).await.len(),
        2,
        "a query with no words filters nothing"
    );
}

pub async fn history_finds_shared_entities_and_prior_verdicts(store: Arc<dyn Store>) {
    let host = (EntityKind::Host, "wks-9");
    let first = concluded(
        &store,
        new_alert(
            parsed_alert(
                "Suspicious PowerShell",
                "EDR",
                0,
                &[host, (EntityKind::User, "bob")],
            ),
            json!({"n": 1}),
            None,
        ),
        Outcome::FalseAlert,
        Priority::Informational,
        1,
    )
    .await;
    let other_detection = concluded(
        &store,
        new_alert(
            parsed_alert("Beacon", "NDR", 2, &[host]),
            json!({"n": 2}),
            None,
        ),
        Outcome::BreachedSuspicious,
        Priority::Notable,
        3,
    )
    .await;
    let same_detection_elsewhere = concluded(
        &store,
        new_alert(
            parsed_alert(
                "Suspicious PowerShell",
                "EDR",
                4,
                &[(EntityKind::Host, "wks-77")],
            ),
            json!({"n": 3}),
            None,
        ),
        Outcome::FalseAlert,
        Priority::Informational,
        5,
    )
    .await;
    let unrelated = concluded(
        &store,
        new_alert(parsed_alert("Other", "Mail", 5, &[]), json!({"n": 4}), None),
        Outcome::FalseAlert,
        Priority::Informational,
        6,
    )
    .await;
    let new_id = store
        .create_investigation(
            new_alert(
                // An entity no earlier alert names comes first, so that the shared ones
                // are not simply the first of the list.
                parsed_alert(
                    "Suspicious PowerShell",
                    "EDR",
                    10,
                    &[
                        (EntityKind::Ip, "198.51.100.7"),
                        host,
                        (EntityKind::User, "bob"),
                    ],
                ),
                json!({"n": 5}),
                None,
            ),
            false,
        )
        .await
        .unwrap()
        .investigation_id();
    let history = store
        .history(&history_query(&store, new_id).await)
        .await
        .unwrap();
    let related: Vec<i64> = history
        .related_alerts
        .iter()
        .map(|alert| alert.investigation_id)
        .collect();
    assert!(
        related.contains(&first) && related.contains(&other_detection),
        "{related:?}"
    );
    assert!(!related.contains(&unrelated) && !related.contains(&same_detection_elsewhere));
    let likeness = |id: i64| {
        history
            .prior_verdicts
            .iter()
            .find(|verdict| verdict.investigation_id == id)
            .map(|verdict| verdict.likeness)
    };
    assert_eq!(likeness(first), Some(Likeness::SameDetectionSameEntities));
    assert_eq!(likeness(other_detection), Some(Likeness::SharedEntities));
    assert_eq!(
        likeness(same_detection_elsewhere),
        Some(Likeness::SameDetection)
    );
    assert_eq!(likeness(unrelated), None);
    assert!(
        history
            .prior_verdicts
            .iter()
            .all(|verdict| verdict.analyst_outcome.is_none()),
        "no analyst has spoken"
    );
    let shared_values = |id: i64| -> Vec<String> {
        let mut values: Vec<String> = history
            .related_alerts
            .iter()
            .find(|alert| alert.investigation_id == id)
            .unwrap()
            .shared_entities
            .iter()
            .map(|entity| entity.value.clone())
            .collect();
        values.sort();
        values
    };
    assert_eq!(shared_values(first), ["bob", "wks-9"]);
    assert_eq!(shared_values(other_detection), ["wks-9"]);
    let verdict_shares = history
        .prior_verdicts
        .iter()
        .find(|verdict| verdict.investigation_id == first)
        .map(|verdict| verdict.shared_entities.len());
    assert_eq!(verdict_shares, Some(2));
    // What a related alert shows is its own alert's, read from the store.
    for related in &history.related_alerts {
        let alert = store
            .get_investigation(related.investigation_id)
            .await
            .unwrap()
            .alert
            .parsed;
        assert_eq!(related.title, alert.title);
        assert_eq!(related.alert_type, alert.alert_type);
        assert_eq!(related.direct_source_label, alert.direct_source_label);
        assert_eq!(related.create_time, alert.create_time);
    }
    assert_eq!(
        history
            .related_alerts
            .iter()
            .find(|alert| alert.investigation_id == other_detection)
            .map(|alert| (alert.title.as_str(), alert.direct_source_label.as_str())),
        Some(("Beacon", "NDR"))
    );
}

/// History reads a bounded window of earlier alerts per entity; the window is of the
/// alert's own tenant union. A busy other union naming the same host many more times than
/// the window holds must not push this union's one related investigation out of it.
pub async fn history_of_a_union_is_not_crowded_out_by_another(store: Arc<dyn Store>) {
    let (acme, globex) = acme_and_globex(&store).await;
    let create = |title: String, minute: i64, union: i64| {
        let store = store.clone();
        async move {
            let alert = new_alert(
                parsed_alert(&title, "EDR", minute, &[(EntityKind::Host, "dc-01")]),
                json!({"title": title}),
                Some(union),
            );
            let created = store.create_investigation(alert, false).await.unwrap();
            created.investigation_id()
        }
    };
    let ours = create("Acme sign-in".into(), 0, acme).await;
    // Far more than any window history reads per entity, all newer than ours.
    for n in 1..=120 {
        create(format!("Globex sign-in {n}"), 1, globex).await;
    }
    let new_id = create("Acme logon".into(), 2, acme).await;
    let query = history_query(&store, new_id).await;
    let related = store.history(&query).await.unwrap().related_alerts;
    assert_eq!(
        related
            .iter()
            .map(|alert| alert.investigation_id)
            .collect::<Vec<_>>(),
        [ours],
        "only, and surely, the same union's"
    );
}

/// History reads a bounded list of each entity's newest alerts of the union (50), and
/// takes every entity's newest before any entity's older ones: an entity everywhere (here
/// a resolver, named by 60 alerts of the union and 200 of another) neither makes history
/// unbounded nor crowds out the one earlier alert on the same user, and the other union's
/// alerts never take places.
pub async fn history_reads_a_bounded_window_of_an_entity_everywhere(store: Arc<dyn Store>) {
    let (acme, globex) = acme_and_globex(&store).await;
    let alert = |title: &str, minute: i64, union: i64, entities: &[(EntityKind, &str)]| {
        new_alert(
            parsed_alert(title, "EDR", minute, entities),
            json!({"title": title}),
            Some(union),
        )
    };
    let resolver = (EntityKind::Host, "resolver-1");
    let alice = (EntityKind::User, "alice");
    let ours = store
        .create_investigation(alert("Acme alice", 0, acme, &[resolver, alice]), false)
        .await
        .unwrap()
        .investigation_id();
    let mut acme_resolver = Vec::new();
    for n in 0..60 {
        let created = store
            .create_investigation(
                alert(&format!("Acme lookup {n}"), 1, acme, &[resolver]),
                false,
            )
            .await
            .unwrap();
        acme_resolver.push(created.investigation_id());
    }
    let creates = (0..200).map(|n| {
        let store = store.clone();
        let alert = alert(&format!("Globex lookup {n}"), 1, globex, &[resolver]);
        tokio::spawn(async move { store.create_investigation(alert, false).await })
    });
    for created in futures_util::future::join_all(creates).await {
        created.unwrap().unwrap();
    }
    let new_id = store
        .create_investigation(
            alert("Acme alice again", 2, acme, &[resolver, alice]),
            false,
        )
        .await
        .unwrap()
        .investigation_id();
    let query = history_query(&store, new_id).await;
    assert_eq!(query.limit, 50);
    let related = store.history(&query).await.unwrap().related_alerts;
    let found: Vec<(i64, Vec<String>)> = related
        .iter()
        .map(|alert| {
            let shared = alert
                .shared_entities
                .iter()
                .map(|entity| entity.value.clone())
                .collect();
            (alert.investigation_id, shared)
        })
        .collect();
    // The 49 newest on the resolver, newest first, then the one on alice, which shares the
    // resolver too but is not among the resolver's 50 newest.
    let mut expected: Vec<(i64, Vec<String>)> = acme_resolver
        .iter()
        .rev()
        .take(49)
        .map(|id| (*id, vec!["resolver-1".to_string()]))
        .collect();
    expected.push((ours, vec!["alice".to_string()]));
    assert_eq!(found, expected);
}

/// What history is asked for an investigation of an EDR alert: of its own tenant union and
/// tenant, from an hour before the test's time origin.
pub(crate) async fn history_query(store: &Arc<dyn Store>, investigation_id: i64) -> HistoryQuery {
    let record = store.get_investigation(investigation_id).await.unwrap();
    HistoryQuery {
        alert_id: record.alert.id,
        investigation_id,
        entities: record.alert.parsed.entities.clone(),
        alert_type: record.alert.parsed.alert_type.clone(),
        direct_source_label: "EDR".into(),
        since: time(-60),
        limit: 50,
        tenant_union_id: record.alert.tenant_union.id,
        tenant_id: record.alert.parsed.tenant_id.clone(),
    }
}

pub async fn guards_count_bursts_and_find_the_first_of_a_story(store: Arc<dyn Store>) {
    let windows = GuardWindows {
        burst_window: Duration::minutes(10),
        burst_count_limit: 100,
        coalesce_window: Duration::minutes(30),
    };
    let mut story_ids = Vec::new();
    for minute in 0..4 {
        let mut parsed = parsed_alert(&format!("scan {minute}"), "IDS", minute, &[]);
        parsed.coalesce_key = Some("ids:scan:203.0.113.9".into());
        let id = store
            .create_investigation(new_alert(parsed, json!({"m": minute}), None), false)
            .await
            .unwrap();
        story_ids.push(id.investigation_id());
    }
    // Another source's alert inside the window counts for neither.
    let other = parsed_alert("scan", "EDR", 2, &[]);
    store
        .create_investigation(new_alert(other, json!({"edr": 2}), None), false)
        .await
        .unwrap();
    let jobs = store.claim_jobs("w", 10, lease(), time(5)).await.unwrap();
    assert_eq!(jobs.len(), 5);
    assert_eq!(
        store.load_job(&jobs[4], windows).await.unwrap().burst_count,
        1
    );
    let first = store.load_job(&jobs[0], windows).await.unwrap();
    assert_eq!(
        first.coalesce_first, None,
        "the first of the story has no earlier one"
    );
    assert_eq!(first.burst_count, 1);
    let fourth = store.load_job(&jobs[3], windows).await.unwrap();
    assert_eq!(fourth.coalesce_first, Some(story_ids[0]));
    assert_eq!(fourth.burst_count, 4);
    // The count stops at its limit; with the guards off nothing is counted or looked up.
    let capped = GuardWindows {
        burst_count_limit: 2,
        ..windows
    };
    assert_eq!(
        store.load_job(&jobs[3], capped).await.unwrap().burst_count,
        2
    );
    // Only the window before the alert counts: minutes 2 and 3 within 90 seconds of 3.
    let short = GuardWindows {
        burst_window: Duration::seconds(90),
        ..windows
    };
    assert_eq!(
        store.load_job(&jobs[3], short).await.unwrap().burst_count,
        2
    );
    assert_eq!(
        store.load_job(&jobs[2], short).await.unwrap().burst_count,
        2
    );
    let none = GuardWindows {
        burst_window: Duration::zero(),
        ..windows
    };
    assert_eq!(store.load_job(&jobs[3], none).await.unwrap().burst_count, 0);
    let off = GuardWindows {
        burst_count_limit: 0,
        coalesce_window: Duration::zero(),
        ..windows
    };
    let unguarded = store.load_job(&jobs[3], off).await.unwrap();
    assert_eq!(unguarded.burst_count, 0);
    assert_eq!(unguarded.coalesce_first, None);
    // An IGNORED conclusion points at the first.
    let mut result = fixtures::result(
        Outcome::Ignored,
        Priority::Informational,
        "part of an earlier story",
    );
    result.outcome = Outcome::Ignored;
    let finish = Finish::Completed {
        result: Box::new(result),
        ignored_for: Some(story_ids[0]),
    };
    assert!(store.finish_job(&jobs[3], &finish, time(6)).await.unwrap());
    let ignored = store.get_investigation(story_ids[3]).await.unwrap();
    assert_eq!(ignored.ignored_for, Some(story_ids[0]));
    assert_eq!(ignored.outcome, Some(Outcome::Ignored));
}

/// A story's alerts are ignored in favour of its first alert by the time received, never
/// of one received later: an alert of minute 0 that reaches the queue after the story's
/// alert of minute 20 (a late delivery: its investigation is the newer) starts the story
/// itself, and the alert of minute 25 is ignored in favour of it, the story's first.
pub async fn a_story_is_never_ignored_in_favour_of_a_later_alert(store: Arc<dyn Store>) {
    let windows = GuardWindows {
        burst_window: Duration::minutes(10),
        burst_count_limit: 0,
        coalesce_window: Duration::minutes(30),
    };
    let mut story = Vec::new();
    for minute in [20, 0, 25] {
        let mut parsed = parsed_alert(&format!("beacon {minute}"), "NDR", minute, &[]);
        parsed.coalesce_key = Some("ndr:beacon:198.51.100.7".into());
        let created = store
            .create_investigation(new_alert(parsed, json!({"minute": minute}), None), false)
            .await
            .unwrap();
        story.push(created.investigation_id());
    }
    let [minute_20, minute_0, minute_25] = story[..] else {
        panic!("three investigations")
    };
    let jobs = store.claim_jobs("w", 10, lease(), time(30)).await.unwrap();
    let job_of = |id: i64| jobs.iter().find(|job| job.investigation_id == id).unwrap();
    assert_eq!(
        store
            .load_job(job_of(minute_20), windows)
            .await
            .unwrap()
            .coalesce_first,
        None,
        "nothing of the story was queued before it"
    );
    assert_eq!(
        store
            .load_job(job_of(minute_0), windows)
            .await
            .unwrap()
            .coalesce_first,
        None,
        "the alert received first is not ignored in favour of the one of minute 20"
    );
    assert_eq!(
        store
            .load_job(job_of(minute_25), windows)
            .await
            .unwrap()
            .coalesce_first,
        Some(minute_0),
        "the last alert joins the story at its first alert"
    );
}

/// The burst guard's count at the edges of its window: an alert exactly one window
/// before does not count, one a microsecond later does; an alert of the same moment stored
/// later does not count for the earlier one; another tenant union's alerts never count; and
/// the alerts of one group-committed batch, with a refused create among them (the batch is
/// rolled back and replayed), count one each in the order they were stored.
pub async fn the_burst_count_is_exact_at_the_window_edges(store: Arc<dyn Store>) {
    let other_union = store
        .create_tenant_union(&tenant_input("Elsewhere", None))
        .await
        .unwrap();
    let mut ids = Vec::new();
    for (minute, union) in [(0, None), (1, None), (2, None), (3, None), (3, None)] {
        let parsed = parsed_alert(&format!("deny {}", ids.len()), "FW", minute, &[]);
        let created = store
            .create_investigation(new_alert(parsed, json!({"n": ids.len()}), union), false)
            .await
            .unwrap();
        ids.push(created.investigation_id());
    }
    let elsewhere = parsed_alert("deny elsewhere", "FW", 3, &[]);
    store
        .create_investigation(
            new_alert(elsewhere, json!({"elsewhere": 3}), Some(other_union.id)),
            false,
        )
        .await
        .unwrap();
    let mut concurrent: Vec<NewAlert> = (0..30)
        .map(|n| {
            let parsed = parsed_alert(&format!("storm {n}"), "FW", 10, &[]);
            new_alert(parsed, json!({"storm": n}), None)
        })
        .collect();
    let mut refused = new_alert(
        parsed_alert("storm of no union", "FW", 10, &[]),
        json!({"refused": true}),
        None,
    );
    refused.tenant_union_id = 999_999;
    concurrent.insert(15, refused);
    let creates = concurrent.into_iter().map(|alert| {
        let store = store.clone();
        tokio::spawn(async move { store.create_investigation(alert, false).await })
    });
    let refusals = futures_util::future::join_all(creates)
        .await
        .into_iter()
        .filter(|joined| joined.as_ref().unwrap().is_err())
        .count();
    assert_eq!(refusals, 1);
    let jobs = store.claim_jobs("w", 100, lease(), time(11)).await.unwrap();
    assert_eq!(jobs.len(), 36);
    let job_of = |id: i64| jobs.iter().find(|job| job.investigation_id == id).unwrap();
    let count = |job: &ClaimedJob, window: Duration, limit: u64| {
        let store = store.clone();
        let job = job.clone();
        async move {
            store
                .load_job(
                    &job,
                    GuardWindows {
                        burst_window: window,
                        burst_count_limit: limit,
                        coalesce_window: Duration::zero(),
                    },
                )
                .await
                .unwrap()
                .burst_count
        }
    };
    let minute = Duration::minutes(1);
    let just_over = minute + Duration::microseconds(1);
    // The fourth alert (minute 3): the third (minute 2) is exactly one window before.
    assert_eq!(count(job_of(ids[3]), minute, 100).await, 1);
    assert_eq!(count(job_of(ids[3]), just_over, 100).await, 2);
    // The fifth, of the same minute, was stored after the fourth.
    assert_eq!(count(job_of(ids[4]), minute, 100).await, 2);
    assert_eq!(count(job_of(ids[4]), just_over, 100).await, 3);
    assert_eq!(count(job_of(ids[4]), Duration::minutes(4), 100).await, 5);
    assert_eq!(count(job_of(ids[4]), Duration::minutes(4), 4).await, 4);
    // The storm: the alerts of minute 10, each counting those stored before it.
    let mut storm: Vec<(i64, ClaimedJob)> = Vec::new();
    for job in &jobs {
        if ids.contains(&job.investigation_id) {
            continue;
        }
        let input = store
            .load_job(
                job,
                GuardWindows {
                    burst_window: minute,
                    burst_count_limit: 0,
                    coalesce_window: Duration::zero(),
                },
            )
            .await
            .unwrap();
        if input.investigation.alert.tenant_union.id == other_union.id {
            continue;
        }
        storm.push((input.investigation.alert.id, job.clone()));
    }
    storm.sort_by_key(|(alert_id, _)| *alert_id);
    assert_eq!(storm.len(), 30);
    for (stored_before, (_, job)) in storm.iter().enumerate() {
        let expected = u64::try_from(stored_before).unwrap() + 1;
        assert_eq!(count(job, minute, 1_000).await, expected);
        // Ten minutes back from minute 10 leaves minute 0 out: minutes 1, 2, 3 and 3 count.
        assert_eq!(count(job, Duration::minutes(10), 1_000).await, expected + 4);
    }
}

pub async fn the_context_document_is_replaced_whole(store: Arc<dyn Store>) {
    assert_eq!(store.get_context_document().await.unwrap(), None);
    let admin = store
        .create_user(&fixtures::new_user(
            "context-admin@example.com",
            Role::Admin,
        ))
        .await
        .unwrap();
    let first = store
        .put_context_document(
            "[organization]\nname = \"First\"\n",
            Some(admin.id),
            fixtures::time(1),
        )
        .await
        .unwrap();
    assert_eq!(store.get_context_document().await.unwrap(), Some(first));
    let second = store
        .put_context_document(
            "[organization]\nname = \"Second\"\n",
            None,
            fixtures::time(2),
        )
        .await
        .unwrap();
    let stored = store.get_context_document().await.unwrap().unwrap();
    assert_eq!(stored, second);
    assert!(stored.document.contains("Second"));
    assert_eq!(stored.updated_by, None);
}

pub async fn data_sources_are_stored_changed_scoped_and_deleted(store: Arc<dyn Store>) {
    let union = store
        .create_tenant_union(&tenant_input("Acme", None))
        .await
        .unwrap();
    let definition = json!({"type": "http_json", "base_url": "https://intel.example"});
    let new = NewDataSource {
        name: "intel".into(),
        definition: definition.clone(),
        limits: json!({"timeout_seconds": 3}),
        tenant_union_id: Some(union.id),
        enabled: true,
        created_by: None,
        at: time(0),
    };
    let created = store.create_data_source(&new).await.unwrap();
    assert_eq!(created.definition, definition);
    assert_eq!(created.tenant_union_id, Some(union.id));
    assert_eq!(created.revision, 1);
    let duplicate = store.create_data_source(&new).await;
    assert!(
        matches!(duplicate, Err(StoreError::Conflict { .. })),
        "{duplicate:?}"
    );
    let nowhere = store
        .create_data_source(&NewDataSource {
            name: "elsewhere".into(),
            tenant_union_id: Some(union.id + 1000),
            ..new.clone()
        })
        .await;
    assert!(
        matches!(nowhere, Err(StoreError::Rejected { .. })),
        "{nowhere:?}"
    );
    let disabled = store
        .update_data_source(
            created.id,
            &DataSourceChanges {
                enabled: Some(false),
                tenant_union_id: Some(None),
                ..DataSourceChanges::default()
            },
            time(60),
        )
        .await
        .unwrap();
    assert!(!disabled.enabled);
    assert_eq!(disabled.tenant_union_id, None);
    assert_eq!(
        disabled.definition, definition,
        "fields without a change stay"
    );
    assert_eq!(disabled.revision, 2, "every change moves the revision");
    assert_eq!(disabled.updated_at, time(60));
    assert_eq!(store.list_data_sources().await.unwrap(), vec![disabled]);
    store.delete_data_source(created.id).await.unwrap();
    assert!(matches!(
        store.get_data_source(created.id).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.delete_data_source(created.id).await,
        Err(StoreError::NotFound { .. })
    ));
}

/// Two tenant unions; their ids.
async fn acme_and_globex(store: &Arc<dyn Store>) -> (i64, i64) {
    let mut ids = Vec::new();
    for name in ["Acme", "Globex"] {
        let input = tenant_input(name, None);
        ids.push(store.create_tenant_union(&input).await.unwrap().id);
    }
    (ids[0], ids[1])
}

pub async fn tenant_scopes_bind_users_and_keys(store: Arc<dyn Store>) {
    let (acme, globex) = acme_and_globex(&store).await;
    let rejected = |result: &StoreResult<User>| matches!(result, Err(StoreError::Rejected { .. }));
    let mut unknown = fixtures::new_user("nobody@example.com", Role::Member);
    unknown.tenant_scope = TenantScope::unions([acme, 999_999]);
    assert!(rejected(&store.create_user(&unknown).await));
    assert!(
        store
            .find_user_by_email("nobody@example.com")
            .await
            .unwrap()
            .is_none()
    );

    let mut bound = fixtures::new_user("acme@example.com", Role::Member);
    bound.tenant_scope = TenantScope::unions([acme]);
    let user = store.create_user(&bound).await.unwrap();
    assert_eq!(user.tenant_scope, TenantScope::Unions(vec![acme]));
    assert_eq!(store.get_user(user.id).await.unwrap(), user);

    // A key is never wider than its user.
    for wider in [TenantScope::All, TenantScope::unions([acme, globex])] {
        let key = NewApiKey {
            tenant_scope: wider,
            ..fixtures::new_key(user.id, "wide-secret")
        };
        assert!(
            matches!(
                store.create_api_key(&key).await,
                Err(StoreError::Rejected { .. })
            ),
            "{key:?}"
        );
    }
    let key = NewApiKey {
        tenant_scope: TenantScope::unions([acme]),
        ..fixtures::new_key(user.id, "acme-secret")
    };
    let key = store.create_api_key(&key).await.unwrap();
    assert_eq!(key.tenant_scope, TenantScope::Unions(vec![acme]));
    let principal = store
        .authenticate(&KeyHash::of("acme-secret"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(principal.scope(), TenantScope::Unions(vec![acme]));

    // Moving the user to Globex leaves the Acme key reaching nothing, at once.
    let moved = store
        .update_user(
            user.id,
            &UserChanges {
                tenant_scope: Some(TenantScope::unions([globex])),
                ..UserChanges::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(moved.tenant_scope, TenantScope::Unions(vec![globex]));
    let principal = store
        .authenticate(&KeyHash::of("acme-secret"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(principal.scope(), TenantScope::Unions(vec![]));
    assert!(!principal.scope().allows(acme) && !principal.scope().allows(globex));
    // Unbinding the user leaves the key its own binding; other fields stay.
    let unbound = store
        .update_user(
            user.id,
            &UserChanges {
                tenant_scope: Some(TenantScope::All),
                ..UserChanges::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(unbound.tenant_scope, TenantScope::All);
    assert_eq!(unbound.role, Role::Member);
    let principal = store
        .authenticate(&KeyHash::of("acme-secret"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(principal.scope(), TenantScope::Unions(vec![acme]));
    assert!(matches!(
        store
            .update_user(
                user.id,
                &UserChanges {
                    tenant_scope: Some(TenantScope::unions([999_999])),
                    ..UserChanges::default()
                },
            )
            .await,
        Err(StoreError::Rejected { .. })
    ));
    assert_eq!(
        store.get_user(user.id).await.unwrap().tenant_scope,
        TenantScope::All
    );
    let listed = store.list_api_keys().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].tenant_scope, TenantScope::Unions(vec![acme]));
}

pub async fn a_tenant_scope_filters_every_list_and_count(store: Arc<dyn Store>) {
    let (acme, globex) = acme_and_globex(&store).await;
    let alert_in = |title: &str, minute: i64, union: i64| {
        new_alert(
            parsed_alert(title, "EDR", minute, &[]),
            json!({"title": title}),
            Some(union),
        )
    };
    let ours = concluded_with_tags(
        &store,
        alert_in("acmeword sign-in", 1, acme),
        Outcome::BreachedConfirmed,
        Priority::Urgent,
        &["shared"],
        1,
    )
    .await;
    let mut theirs = Vec::new();
    for minute in 2..5 {
        theirs.push(
            concluded_with_tags(
                &store,
                alert_in(&format!("globexword sign-in {minute}"), minute, globex),
                Outcome::BreachedConfirmed,
                Priority::Urgent,
                &["shared"],
                minute,
            )
            .await,
        );
    }
    let acme_only = TenantScope::unions([acme]);
    let scoped = |filters: InvestigationQuery| InvestigationQuery {
        scope: acme_only.clone(),
        ..filters
    };
    let cases = [
        query(),
        InvestigationQuery {
            insight_tag_names: vec!["shared".into()],
            ..query()
        },
        created_in(0, 10, query()),
        InvestigationQuery {
            search: Some("sign".into()),
            ..query()
        },
        InvestigationQuery {
            states: vec![InvestigationStatus::Success, InvestigationStatus::NotAsked],
            sort: SortKey::Priority,
            ..query()
        },
        InvestigationQuery {
            alert_tenants: vec!["Acme".into(), "Globex".into()],
            ..query()
        },
    ];
    for case in cases {
        assert_eq!(total(&store, &case).await, 4, "{case:?}");
        let page = store
            .list_investigations(&scoped(case.clone()))
            .await
            .unwrap();
        assert_eq!(page.total, 1, "{case:?}");
        assert_eq!(
            page.items.iter().map(|item| item.id).collect::<Vec<_>>(),
            [ours],
            "{case:?}"
        );
    }
    let nothing = InvestigationQuery {
        scope: TenantScope::Unions(vec![]),
        ..query()
    };
    assert_eq!(total(&store, &nothing).await, 0);
    assert!(ids(&store, &nothing).await.is_empty());

    store
        .check_investigation_scope(ours, &acme_only)
        .await
        .unwrap();
    store
        .check_investigation_scope(theirs[0], &TenantScope::All)
        .await
        .unwrap();
    for (id, scope) in [
        (theirs[0], acme_only.clone()),
        (ours, TenantScope::Unions(vec![])),
        (999_999, TenantScope::All),
    ] {
        assert!(
            matches!(
                store.check_investigation_scope(id, &scope).await,
                Err(StoreError::NotFound { .. })
            ),
            "{id} {scope}"
        );
    }

    // Context memory: a bound scope sees its unions' items only.
    for (text, union) in [
        ("global", None),
        ("acme's", Some(acme)),
        ("globex's", Some(globex)),
    ] {
        store
            .create_memory_item(
                &NewMemoryItem {
                    text: text.into(),
                    scope: MemoryScope {
                        tenant_union_id: union,
                        tenant_id: None,
                        tenant_label: None,
                    },
                    hints: Vec::new(),
                    entities: Vec::new(),
                    author_id: None,
                },
                time(5),
            )
            .await
            .unwrap();
    }
    let memory = |scope: TenantScope| MemoryQuery {
        scope,
        limit: 100,
        ..MemoryQuery::default()
    };
    assert_eq!(
        store
            .list_memory_items(&memory(TenantScope::All))
            .await
            .unwrap()
            .total,
        3
    );
    let page = store
        .list_memory_items(&memory(acme_only.clone()))
        .await
        .unwrap();
    assert_eq!(page.total, 1);
    assert_eq!(page.items[0].text, "acme's");

    // System events and audit entries: only those about Acme's investigations.
    let event = |investigation_id: Option<i64>| NewSystemEvent {
        trigger_name: "INVESTIGATION_COMPLETED".into(),
        trigger_args: serde_json::Map::new(),
        investigation_id,
        entity: None,
    };
    store
        .record_system_events(
            &[event(Some(ours)), event(Some(theirs[0])), event(None)],
            time(6),
        )
        .await
        .unwrap();
    let events = |scope: TenantScope| SystemEventQuery {
        scope,
        limit: 100,
        ..SystemEventQuery::default()
    };
    assert_eq!(
        store
            .list_system_events(&events(TenantScope::All))
            .await
            .unwrap()
            .total,
        3
    );
    let page = store
        .list_system_events(&events(acme_only.clone()))
        .await
        .unwrap();
    assert_eq!(page.total, 1);
    assert_eq!(page.items[0].investigation_id, Some(ours));

    // An entry lists for the unions it says it concerns, whatever kind of object that is
    // (a note names itself, not its investigation); what every tenant shares, for none.
    for (resource_type, id, union) in [
        ("investigation", ours.to_string(), Some(acme)),
        ("investigation", theirs[0].to_string(), Some(globex)),
        ("investigation-user-notes", "77".to_string(), Some(acme)),
        ("investigation-user-notes", "78".to_string(), Some(globex)),
        ("tenant-unions", acme.to_string(), None),
        ("investigation", "not-a-number".to_string(), None),
    ] {
        store
            .append_audit_entry(&NewAuditEntry {
                actor_user_id: None,
                actor_email: None,
                action: "test".into(),
                resource_type: resource_type.into(),
                resource_id: Some(id),
                request_id: None,
                detail: serde_json::Map::new(),
                tenant_union_id: union,
            })
            .await
            .unwrap();
    }
    let audit = |scope: TenantScope| AuditQuery {
        scope,
        limit: 100,
        ..AuditQuery::default()
    };
    assert_eq!(
        store
            .list_audit_entries(&audit(TenantScope::All))
            .await
            .unwrap()
            .total,
        6
    );
    let page = store.list_audit_entries(&audit(acme_only)).await.unwrap();
    assert_eq!(page.total, 2);
    let listed: Vec<(&str, Option<&str>)> = page
        .items
        .iter()
        .map(|entry| (entry.resource_type.as_str(), entry.resource_id.as_deref()))
        .collect();
    assert_eq!(
        listed,
        [
            ("investigation-user-notes", Some("77")),
            ("investigation", Some(ours.to_string().as_str())),
        ]
    );
    let nothing = store
        .list_audit_entries(&audit(TenantScope::Unions(vec![])))
        .await
        .unwrap();
    assert_eq!(nothing.total, 0);
}

pub async fn retention_deletes_what_ended_before_the_cutoff_and_nothing_else(
    store: Arc<dyn Store>,
) {
    use InvestigationStatus::{Error, Loading, NotAsked, Success};
    let analyst = store
        .create_user(&fixtures::new_user("keeper@example.com", Role::Member))
        .await
        .unwrap();
    let host = (EntityKind::Host, "wks-retained");
    let old_alert = || {
        new_alert(
            parsed_alert("Credential theft", "EDR", 0, &[host]),
            json!({"n": "old"}),
            None,
        )
    };
    let old = store
        .create_investigation(old_alert(), false)
        .await
        .unwrap()
        .investigation_id();
    store
        .create_note(old, analyst.id, "looked at it", time(1))
        .await
        .unwrap();
    let old_failed = store
        .create_investigation(simple_alert("old and failed", 0), false)
        .await
        .unwrap()
        .investigation_id();
    let still_running = store
        .create_investigation(simple_alert("old but still running", 0), false)
        .await
        .unwrap()
        .investigation_id();
    let jobs = store.claim_jobs("w", 10, lease(), time(1)).await.unwrap();
    let job_of = |id: i64| jobs.iter().find(|job| job.investigation_id == id).unwrap();
    assert!(
        finish_with_tags(
            &store,
            job_of(old),
            Outcome::BreachedConfirmed,
            Priority::Urgent,
            &["old_tag"],
            2,
        )
        .await
    );
    let stopped = Finish::Stopped {
        canceled: None,
        error_msg: "the engine failed".into(),
    };
    assert!(
        store
            .finish_job(job_of(old_failed), &stopped, time(2))
            .await
            .unwrap()
    );
    // Kept: it ended after the cut-off, although it was coalesced into the old one.
    let recent = store
        .create_investigation(simple_alert("recent", 50), false)
        .await
        .unwrap()
        .investigation_id();
    let recent_job = store
        .claim_jobs("w2", 10, lease(), time(59))
        .await
        .unwrap()
        .into_iter()
        .find(|job| job.investigation_id == recent)
        .unwrap();
    let coalesced = Finish::Completed {
        result: Box::new(fixtures::result(
            Outcome::FalseAlert,
            Priority::Informational,
            "coalesced",
        )),
        ignored_for: Some(old),
    };
    assert!(
        store
            .finish_job(&recent_job, &coalesced, time(60))
            .await
            .unwrap()
    );

    let report = store.purge_before(time(30), 1_000).await.unwrap();
    assert_eq!((report.investigations, report.alerts), (2, 2), "{report:?}");

    for gone in [old, old_failed] {
        assert!(
            matches!(
                store.get_investigation(gone).await,
                Err(StoreError::NotFound { .. })
            ),
            "investigation {gone} was deleted"
        );
    }
    assert_eq!(
        store.get_investigation(still_running).await.unwrap().id,
        still_running
    );
    let kept = store.get_investigation(recent).await.unwrap();
    assert_eq!(
        kept.ignored_for, None,
        "the link to a deleted investigation is cleared"
    );
    assert_state_counts(
        &store,
        [(NotAsked, 0), (Loading, 1), (Success, 1), (Error, 0)],
    )
    .await;
    let tagged = InvestigationQuery {
        insight_tag_names: vec!["old_tag".into()],
        ..query()
    };
    assert_eq!(total(&store, &tagged).await, 0, "tag counts follow");
    let searched = InvestigationQuery {
        search: Some("Credential".into()),
        states: InvestigationStatus::ALL.to_vec(),
        ..query()
    };
    assert!(ids(&store, &searched).await.is_empty(), "search forgets it");

    // History no longer correlates with the deleted alert, and the same alert sent again
    // is a new alert with a new investigation.
    let again = store
        .create_investigation(old_alert(), false)
        .await
        .unwrap();
    assert!(matches!(again, Created::New(_)), "{again:?}");
    let again = again.investigation_id();
    let record = store.get_investigation(again).await.unwrap();
    let history = store
        .history(&HistoryQuery {
            alert_id: record.alert.id,
            investigation_id: again,
            entities: record.alert.parsed.entities.clone(),
            alert_type: record.alert.parsed.alert_type.clone(),
            direct_source_label: "EDR".into(),
            since: time(-600),
            limit: 50,
            tenant_union_id: record.alert.tenant_union.id,
            tenant_id: None,
        })
        .await
        .unwrap();
    assert!(
        history.related_alerts.is_empty(),
        "{:?}",
        history.related_alerts
    );
    assert!(history.prior_verdicts.is_empty());

    assert!(matches!(
        store.verify_audit_chain().await.unwrap(),
        AuditVerdict::Intact { .. }
    ));
    assert_eq!(
        store.purge_before(time(30), 1_000).await.unwrap(),
        PurgeReport::default(),
        "a second pass finds nothing more"
    );
}
