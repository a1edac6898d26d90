//! The store contract for response actions (`ResponseActionStore`): the trigger catalog,
//! scripts and versions, runs, interrupted runs and secrets. A backend's contract binary
//! runs it with `response_action_contract_tests!(an async expression opening a fresh store)`,
//! next to `store_contract_tests!`.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use sleuth_domain::{ScriptRunStatus, Timestamp};
use sleuth_store::*;
use uuid::Uuid;

use crate::fixtures::{self, simple_alert, time};

/// Generates one test per case, like `store_contract_tests!`.
#[macro_export]
macro_rules! response_action_contract_tests {
    ($open:expr) => {
        $crate::response_action_contract_tests!(@cases $open;
            the_trigger_catalog_syncs_and_archives_what_left_it,
            scripts_start_at_version_one_and_version_each_code_change,
            scripts_refuse_unknown_and_unscriptable_triggers,
            archiving_keeps_only_versions_that_runs_refer_to,
            runs_are_recorded_started_finished_and_listed_newest_first,
            a_bound_scope_lists_the_runs_of_its_unions_investigations_only,
            an_investigation_lists_its_own_runs_newest_first_up_to_the_limit,
            only_enabled_unarchived_scripts_run_with_their_latest_version,
            interrupted_runs_are_failed_by_runner_or_deadline,
            a_failed_run_leaves_its_system_event_with_its_end,
            secrets_are_set_replaced_listed_without_values_and_deleted,
            secrets_are_resealed_only_when_unchanged,
            scripts_keep_the_secret_names_they_declare,
        );
    };
    (@cases $open:expr; $($case:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some((store, _guard)) = $open.await else {
                    return;
                };
                $crate::contract_response_actions::$case(store).await;
            }
        )+
    };
}

fn trigger(
    fn_name: &str,
    parent: Option<Uuid>,
    index: i32,
    scriptable: bool,
) -> TriggerCatalogEntry {
    TriggerCatalogEntry {
        uuid: Uuid::new_v5(&Uuid::NAMESPACE_OID, fn_name.as_bytes()),
        fn_name: fn_name.into(),
        display_name: format!("When {fn_name}"),
        parent,
        tree_labels: vec!["Tests".into(), fn_name.into()],
        display_index: index,
        is_runnable: !scriptable,
        is_scriptable: scriptable,
        trigger_arg_names: vec!["investigation_id".into()],
        script_var_names: vec!["investigation".into(), "alert".into()],
    }
}

/// A group (not scriptable) with two scriptable children, synced at time 0.
async fn catalog(store: &Arc<dyn Store>) -> Vec<TriggerCatalogEntry> {
    let group = trigger("group", None, 0, false);
    let catalog = vec![
        trigger("completed", Some(group.uuid), 1, true),
        group.clone(),
        trigger("stopped", Some(group.uuid), 2, true),
    ];
    store.sync_trigger_catalog(&catalog, time(0)).await.unwrap();
    catalog
}

async fn author(store: &Arc<dyn Store>) -> User {
    store
        .create_user(&fixtures::new_user(
            "scripts@example.com",
            sleuth_domain::Role::Admin,
        ))
        .await
        .unwrap()
}

fn new_script(name: &str, trigger_uuid: Uuid, code: &str, author_id: i64) -> NewScript {
    NewScript {
        display_name: name.into(),
        trigger_uuid,
        code: code.into(),
        is_enabled: true,
        allow_network: false,
        secret_names: Vec::new(),
        author_id,
    }
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// Records one trigger run and one running script run of the script's latest version.
async fn start_run(
    store: &Arc<dyn Store>,
    script: &ScriptRecord,
    investigation_id: Option<i64>,
    runner: &str,
    deadline: Timestamp,
) -> i64 {
    let version = store
        .list_script_versions(script.id)
        .await
        .unwrap()
        .remove(0);
    let trigger_runs = store
        .record_trigger_runs(
            &[NewTriggerRun {
                trigger_uuid: script.trigger_def.entry.uuid,
                trigger_args: args(json!({"investigation_id": investigation_id})),
                investigation_id,
                entity: investigation_id.map(|id| format!("investigation:{id}")),
            }],
            time(1),
        )
        .await
        .unwrap();
    store
        .start_script_run(
            &NewScriptRun {
                script_id: script.id,
                script_version_id: version.id,
                trigger_run_id: trigger_runs[0].id,
                runner: runner.into(),
                deadline_at: deadline,
            },
            time(1),
        )
        .await
        .unwrap()
}

fn ended(status: ScriptRunStatus, stdout: &str) -> ScriptRunEnd {
    ScriptRunEnd {
        status,
        stdout: stdout.into(),
        stderr: String::new(),
        syserr: None,
        isolation: "strict: rlimits".into(),
        duration_ms: 12,
    }
}

pub async fn the_trigger_catalog_syncs_and_archives_what_left_it(store: Arc<dyn Store>) {
    let mut catalog = catalog(&store).await;
    let listed = store.list_trigger_definitions().await.unwrap();
    let names: Vec<&str> = listed
        .iter()
        .map(|trigger| trigger.entry.fn_name.as_str())
        .collect();
    assert_eq!(
        names,
        ["group", "completed", "stopped"],
        "tree order: display index"
    );
    let completed = &listed[1];
    assert_eq!(completed.entry, catalog[0], "the entry round-trips");
    assert!(!completed.is_archived);
    assert_eq!(completed.created_at, time(0));

    // A second start with the same catalog changes nothing, not even updated_at.
    store.sync_trigger_catalog(&catalog, time(5)).await.unwrap();
    assert_eq!(store.list_trigger_definitions().await.unwrap(), listed);

    // A changed entry moves its updated_at; one that left the catalog is archived.
    catalog[0].display_name = "When an investigation completes".into();
    let stopped = catalog.pop().unwrap();
    store
        .sync_trigger_catalog(&catalog, time(10))
        .await
        .unwrap();
    let changed = store.get_trigger_definition(catalog[0].uuid).await.unwrap();
    assert_eq!(
        changed.entry.display_name,
        "When an investigation completes"
    );
    assert_eq!(
        (changed.created_at, changed.updated_at),
        (time(0), time(10))
    );
    let gone = store.get_trigger_definition(stopped.uuid).await.unwrap();
    assert!(gone.is_archived);
    assert_eq!(store.list_trigger_definitions().await.unwrap().len(), 3);

    // It comes back when the catalog has it again.
    catalog.push(stopped.clone());
    store
        .sync_trigger_catalog(&catalog, time(20))
        .await
        .unwrap();
    assert!(
        !store
            .get_trigger_definition(stopped.uuid)
            .await
            .unwrap()
            .is_archived
    );
    let missing = store.get_trigger_definition(Uuid::nil()).await;
    assert!(
        matches!(missing, Err(StoreError::NotFound { .. })),
        "{missing:?}"
    );
}

pub async fn scripts_start_at_version_one_and_version_each_code_change(store: Arc<dyn Store>) {
    let catalog = catalog(&store).await;
    let author = author(&store).await;
    let script = store
        .create_script(
            &new_script("Isolate host", catalog[0].uuid, "print(1)", author.id),
            time(1),
        )
        .await
        .unwrap();
    assert_eq!(script.display_name, "Isolate host");
    assert_eq!(script.trigger_def.entry.fn_name, "completed");
    assert!(script.is_enabled && !script.is_archived && !script.allow_network);
    assert_eq!((script.created_at, script.updated_at), (time(1), time(1)));
    let versions = store.list_script_versions(script.id).await.unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(
        (versions[0].v_num, versions[0].code.as_str()),
        (1, "print(1)")
    );
    assert_eq!(versions[0].author.id, author.id);

    // Properties alone make no version.
    let renamed = store
        .update_script(
            script.id,
            &ScriptChanges {
                display_name: Some("Isolate the host".into()),
                is_enabled: Some(false),
                trigger_uuid: Some(catalog[2].uuid),
                author_id: author.id,
                ..ScriptChanges::default()
            },
            time(2),
        )
        .await
        .unwrap();
    assert_eq!(renamed.display_name, "Isolate the host");
    assert!(!renamed.is_enabled);
    assert_eq!(renamed.trigger_def.entry.uuid, catalog[2].uuid);
    assert_eq!(renamed.updated_at, time(2));
    assert_eq!(
        store.list_script_versions(script.id).await.unwrap().len(),
        1
    );

    // A code change makes version 2; the same code again makes nothing.
    let code_change = ScriptChanges {
        code: Some("print(2)".into()),
        author_id: author.id,
        ..ScriptChanges::default()
    };
    store
        .update_script(script.id, &code_change, time(3))
        .await
        .unwrap();
    store
        .update_script(script.id, &code_change, time(4))
        .await
        .unwrap();
    let versions = store.list_script_versions(script.id).await.unwrap();
    let numbers: Vec<i32> = versions.iter().map(|version| version.v_num).collect();
    assert_eq!(numbers, [2, 1], "newest first");
    assert_eq!(versions[0].code, "print(2)");
    let unchanged = store.get_script(script.id).await.unwrap();
    assert_eq!(
        unchanged.display_name, "Isolate the host",
        "fields without a change stay"
    );

    let summary = store.script_summary(script.id).await.unwrap();
    assert_eq!((summary.run_count, summary.version_count), (0, 2));
    assert_eq!(summary.latest_version.map(|version| version.v_num), Some(2));
    assert!(summary.latest_run.is_none());

    for missing in [
        store.get_script(script.id + 100).await.err(),
        store
            .update_script(script.id + 100, &code_change, time(5))
            .await
            .err(),
        store.archive_script(script.id + 100, time(5)).await.err(),
        store.list_script_versions(script.id + 100).await.err(),
        store.script_summary(script.id + 100).await.err(),
    ] {
        assert!(
            matches!(missing, Some(StoreError::NotFound { .. })),
            "{missing:?}"
        );
    }
    assert_eq!(store.list_scripts(false).await.unwrap(), vec![unchanged]);
}

pub async fn scripts_refuse_unknown_and_unscriptable_triggers(store: Arc<dyn Store>) {
    let catalog = catalog(&store).await;
    let author = author(&store).await;
    for trigger_uuid in [Uuid::nil(), catalog[1].uuid] {
        let refused = store
            .create_script(&new_script("x", trigger_uuid, "", author.id), time(1))
            .await;
        assert!(
            matches!(refused, Err(StoreError::Rejected { .. })),
            "{refused:?}"
        );
    }
    assert!(
        store.list_scripts(false).await.unwrap().is_empty(),
        "nothing was created"
    );
    let script = store
        .create_script(&new_script("x", catalog[0].uuid, "", author.id), time(1))
        .await
        .unwrap();
    let refused = store
        .update_script(
            script.id,
            &ScriptChanges {
                trigger_uuid: Some(catalog[1].uuid),
                display_name: Some("renamed".into()),
                author_id: author.id,
                ..ScriptChanges::default()
            },
            time(2),
        )
        .await;
    assert!(
        matches!(refused, Err(StoreError::Rejected { .. })),
        "{refused:?}"
    );
    assert_eq!(
        store.get_script(script.id).await.unwrap(),
        script,
        "a refused update changes nothing"
    );
}

pub async fn archiving_keeps_only_versions_that_runs_refer_to(store: Arc<dyn Store>) {
    let catalog = catalog(&store).await;
    let author = author(&store).await;
    let script = store
        .create_script(
            &new_script("Disable user", catalog[0].uuid, "print(1)", author.id),
            time(1),
        )
        .await
        .unwrap();
    let run_id = start_run(&store, &script, None, "runner-a", time(60)).await;
    for code in ["print(2)", "print(3)"] {
        let change = ScriptChanges {
            code: Some(code.into()),
            author_id: author.id,
            ..ScriptChanges::default()
        };
        store
            .update_script(script.id, &change, time(2))
            .await
            .unwrap();
    }
    store.archive_script(script.id, time(3)).await.unwrap();
    let archived = store.get_script(script.id).await.unwrap();
    assert!(archived.is_archived);
    assert_eq!(archived.updated_at, time(3));
    let versions = store.list_script_versions(script.id).await.unwrap();
    let numbers: Vec<i32> = versions.iter().map(|version| version.v_num).collect();
    assert_eq!(numbers, [1], "only the version a run refers to stays");
    assert_eq!(
        store
            .get_script_run(run_id)
            .await
            .unwrap()
            .script_version
            .v_num,
        1
    );

    store.archive_script(script.id, time(4)).await.unwrap();
    assert_eq!(
        store.get_script(script.id).await.unwrap().updated_at,
        time(3),
        "archiving twice is harmless"
    );
    assert!(store.list_scripts(false).await.unwrap().is_empty());
    assert_eq!(store.list_scripts(true).await.unwrap(), vec![archived]);
    let refused = store
        .update_script(
            script.id,
            &ScriptChanges {
                is_enabled: Some(false),
                author_id: author.id,
                ..ScriptChanges::default()
            },
            time(5),
        )
        .await;
    assert!(
        matches!(refused, Err(StoreError::Rejected { .. })),
        "{refused:?}"
    );
    assert!(
        store
            .scripts_to_run(&[catalog[0].uuid])
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn runs_are_recorded_started_finished_and_listed_newest_first(store: Arc<dyn Store>) {
    let catalog = catalog(&store).await;
    let author = author(&store).await;
    let investigation_id = store
        .create_investigation(simple_alert("fired for", 0), false)
        .await
        .unwrap()
        .investigation_id();
    let script = store
        .create_script(
            &new_script("Ticket", catalog[0].uuid, "print('hi')", author.id),
            time(1),
        )
        .await
        .unwrap();

    // One event, two triggers: one batch.
    let batch = store
        .record_trigger_runs(
            &[
                NewTriggerRun {
                    trigger_uuid: catalog[0].uuid,
                    trigger_args: args(
                        json!({"investigation_id": investigation_id, "outcome": null}),
                    ),
                    investigation_id: Some(investigation_id),
                    entity: Some(format!("investigation:{investigation_id}")),
                },
                NewTriggerRun {
                    trigger_uuid: catalog[2].uuid,
                    trigger_args: Map::new(),
                    investigation_id: None,
                    entity: None,
                },
            ],
            time(2),
        )
        .await
        .unwrap();
    assert_eq!(batch.len(), 2);
    assert_eq!(batch[0].batch, Some(batch[0].id));
    assert_eq!(batch[1].batch, Some(batch[0].id));
    assert_eq!(
        batch[0].trigger_args["investigation_id"],
        json!(investigation_id)
    );
    assert_eq!(batch[0].trigger_def.entry.fn_name, "completed");
    assert_eq!(batch[0].created_at, time(2));

    let version = store
        .list_script_versions(script.id)
        .await
        .unwrap()
        .remove(0);
    let mut run_ids = Vec::new();
    for minute in [3, 4] {
        let run_id = store
            .start_script_run(
                &NewScriptRun {
                    script_id: script.id,
                    script_version_id: version.id,
                    trigger_run_id: batch[0].id,
                    runner: "runner-a".into(),
                    deadline_at: time(60),
                },
                time(minute),
            )
            .await
            .unwrap();
        run_ids.push(run_id);
    }
    let running = store.get_script_run(run_ids[0]).await.unwrap();
    assert_eq!(running.status, ScriptRunStatus::Running);
    assert_eq!(
        (running.stdout.as_deref(), running.syserr.as_deref()),
        (None, None)
    );
    assert_eq!(running.script.id, script.id);
    assert_eq!(running.script_version.v_num, 1);
    assert_eq!(running.trigger_run.id, batch[0].id);

    let end = ended(ScriptRunStatus::Success, "hi\n");
    assert!(
        store
            .finish_script_run(run_ids[0], &end, time(5))
            .await
            .unwrap()
    );
    let failed = ended(ScriptRunStatus::Failed, "");
    assert!(
        !store
            .finish_script_run(run_ids[0], &failed, time(6))
            .await
            .unwrap(),
        "an ended run stays as it ended"
    );
    let finished = store.get_script_run(run_ids[0]).await.unwrap();
    assert_eq!(finished.status, ScriptRunStatus::Success);
    assert_eq!(finished.stdout.as_deref(), Some("hi\n"));
    assert_eq!(finished.duration_ms, Some(12));
    assert_eq!(
        (finished.created_at, finished.updated_at),
        (time(3), time(5))
    );

    let all = RunPage {
        limit: 10,
        offset: 0,
    };
    let listed = store
        .list_script_runs(script.id, all, &TenantScope::All)
        .await
        .unwrap();
    let ids: Vec<i64> = listed.iter().map(|run| run.id).collect();
    assert_eq!(ids, [run_ids[1], run_ids[0]], "newest first");
    let second_page = store
        .list_script_runs(
            script.id,
            RunPage {
                limit: 1,
                offset: 1,
            },
            &TenantScope::All,
        )
        .await
        .unwrap();
    assert_eq!(second_page.len(), 1);
    assert_eq!(second_page[0].id, run_ids[0]);
    let missing = store
        .list_script_runs(script.id + 100, all, &TenantScope::All)
        .await;
    assert!(
        matches!(missing, Err(StoreError::NotFound { .. })),
        "{missing:?}"
    );
    let missing = store.get_script_run(run_ids[1] + 100).await;
    assert!(
        matches!(missing, Err(StoreError::NotFound { .. })),
        "{missing:?}"
    );

    let summary = store.script_summary(script.id).await.unwrap();
    assert_eq!((summary.run_count, summary.version_count), (2, 1));
    assert_eq!(summary.latest_run.map(|run| run.id), Some(run_ids[1]));

    // The investigation's list item names the action and what it acted on, once per run.
    let record = store.get_investigation(investigation_id).await.unwrap();
    let expected = RemediationRun {
        entity: format!("investigation:{investigation_id}"),
        action_name: "Ticket".into(),
    };
    assert_eq!(
        record.remediation_action_runs,
        vec![expected.clone(), expected]
    );
}

/// The investigation page's runs: those fired about this investigation, of any script,
/// newest first, bounded; never another investigation's or a manual run.
pub async fn an_investigation_lists_its_own_runs_newest_first_up_to_the_limit(
    store: Arc<dyn Store>,
) {
    let catalog = catalog(&store).await;
    let author = author(&store).await;
    let mut investigations = Vec::new();
    for title in ["ours", "theirs", "untouched"] {
        let created = store
            .create_investigation(simple_alert(title, 0), false)
            .await
            .unwrap();
        investigations.push(created.investigation_id());
    }
    let (ours, theirs, untouched) = (investigations[0], investigations[1], investigations[2]);
    let ticket = store
        .create_script(
            &new_script("Ticket", catalog[0].uuid, "print('t')", author.id),
            time(1),
        )
        .await
        .unwrap();
    let isolate = store
        .create_script(
            &new_script("Isolate", catalog[0].uuid, "print('i')", author.id),
            time(1),
        )
        .await
        .unwrap();
    let first = start_run(&store, &ticket, Some(ours), "r", time(60)).await;
    let other = start_run(&store, &ticket, Some(theirs), "r", time(60)).await;
    let second = start_run(&store, &isolate, Some(ours), "r", time(60)).await;
    let manual = start_run(&store, &ticket, None, "r", time(60)).await;
    store
        .finish_script_run(
            second,
            &ended(ScriptRunStatus::Success, "isolated\n"),
            time(7),
        )
        .await
        .unwrap();

    let listed = store
        .list_investigation_script_runs(ours, 10)
        .await
        .unwrap();
    let ids: Vec<i64> = listed.iter().map(|run| run.id).collect();
    assert_eq!(ids, [second, first], "its own runs, newest first");
    assert_eq!(listed[0].script.display_name, "Isolate");
    assert_eq!(listed[0].status, ScriptRunStatus::Success);
    assert_eq!(listed[0].stdout.as_deref(), Some("isolated\n"));
    assert_eq!(listed[0].script_version.v_num, 1);
    assert_eq!(listed[0].trigger_run.investigation_id, Some(ours));
    assert_eq!(listed[1].status, ScriptRunStatus::Running);
    let limited = store.list_investigation_script_runs(ours, 1).await.unwrap();
    assert_eq!(
        limited.iter().map(|run| run.id).collect::<Vec<_>>(),
        [second]
    );
    let theirs_listed = store
        .list_investigation_script_runs(theirs, 10)
        .await
        .unwrap();
    assert_eq!(
        theirs_listed.iter().map(|run| run.id).collect::<Vec<_>>(),
        [other]
    );
    assert!(!ids.contains(&manual));
    assert!(
        store
            .list_investigation_script_runs(untouched, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .list_investigation_script_runs(untouched + 1000, 10)
            .await
            .unwrap()
            .is_empty(),
        "an investigation that does not exist has no runs"
    );
}

/// A run belongs to the tenant union of the investigation that fired it; one that no
/// investigation fired (a manual run, an admin's) belongs to none, so a bound scope never
/// lists it.
pub async fn a_bound_scope_lists_the_runs_of_its_unions_investigations_only(store: Arc<dyn Store>) {
    let catalog = catalog(&store).await;
    let author = author(&store).await;
    let mut unions = Vec::new();
    for name in ["Acme", "Globex"] {
        let input = TenantUnionInput {
            display_name: name.into(),
            lookup_dict: Map::new(),
            modified_by: None,
        };
        unions.push(store.create_tenant_union(&input).await.unwrap().id);
    }
    let (acme, globex) = (unions[0], unions[1]);
    let mut investigations = Vec::new();
    for (title, union) in [("acme alert", acme), ("globex alert", globex)] {
        let alert = fixtures::new_alert(
            fixtures::parsed_alert(title, "EDR", 0, &[]),
            json!({"title": title}),
            Some(union),
        );
        let created = store.create_investigation(alert, false).await.unwrap();
        investigations.push(created.investigation_id());
    }
    let script = store
        .create_script(
            &new_script("Ticket", catalog[0].uuid, "print('hi')", author.id),
            time(1),
        )
        .await
        .unwrap();
    let ours = start_run(&store, &script, Some(investigations[0]), "r", time(60)).await;
    let theirs = start_run(&store, &script, Some(investigations[1]), "r", time(60)).await;
    let manual = start_run(&store, &script, None, "r", time(60)).await;
    let page = RunPage {
        limit: 10,
        offset: 0,
    };
    let listed = |scope: TenantScope| {
        let store = store.clone();
        async move {
            store
                .list_script_runs(script.id, page, &scope)
                .await
                .unwrap()
                .iter()
                .map(|run| run.id)
                .collect::<Vec<i64>>()
        }
    };
    assert_eq!(listed(TenantScope::All).await, [manual, theirs, ours]);
    assert_eq!(listed(TenantScope::unions([acme])).await, [ours]);
    assert_eq!(listed(TenantScope::unions([globex])).await, [theirs]);
    assert_eq!(
        listed(TenantScope::unions([acme, globex])).await,
        [theirs, ours]
    );
    assert!(listed(TenantScope::Unions(vec![])).await.is_empty());
    let empty_page = store
        .list_script_runs(
            script.id,
            RunPage {
                limit: 10,
                offset: 1,
            },
            &TenantScope::unions([acme]),
        )
        .await
        .unwrap();
    assert!(empty_page.is_empty(), "paged within the scope");
}

pub async fn only_enabled_unarchived_scripts_run_with_their_latest_version(store: Arc<dyn Store>) {
    let catalog = catalog(&store).await;
    let author = author(&store).await;
    let mut created = Vec::new();
    for (name, trigger) in [
        ("a", &catalog[0]),
        ("b", &catalog[0]),
        ("c", &catalog[2]),
        ("d", &catalog[0]),
    ] {
        let script = store
            .create_script(
                &new_script(name, trigger.uuid, "print('v1')", author.id),
                time(1),
            )
            .await
            .unwrap();
        created.push(script);
    }
    let change = ScriptChanges {
        code: Some("print('v2')".into()),
        author_id: author.id,
        ..ScriptChanges::default()
    };
    store
        .update_script(created[0].id, &change, time(2))
        .await
        .unwrap();
    let disable = ScriptChanges {
        is_enabled: Some(false),
        author_id: author.id,
        ..ScriptChanges::default()
    };
    store
        .update_script(created[1].id, &disable, time(2))
        .await
        .unwrap();
    store.archive_script(created[3].id, time(2)).await.unwrap();

    let to_run = store.scripts_to_run(&[catalog[0].uuid]).await.unwrap();
    let picked: Vec<(&str, i32, &str)> = to_run
        .iter()
        .map(|runnable| {
            (
                runnable.script.display_name.as_str(),
                runnable.version.v_num,
                runnable.version.code.as_str(),
            )
        })
        .collect();
    assert_eq!(picked, [("a", 2, "print('v2')")]);
    let both = store
        .scripts_to_run(&[catalog[0].uuid, catalog[2].uuid])
        .await
        .unwrap();
    assert_eq!(both.len(), 2);
    assert!(store.scripts_to_run(&[]).await.unwrap().is_empty());
}

pub async fn interrupted_runs_are_failed_by_runner_or_deadline(store: Arc<dyn Store>) {
    let catalog = catalog(&store).await;
    let author = author(&store).await;
    let script = store
        .create_script(&new_script("x", catalog[0].uuid, "", author.id), time(1))
        .await
        .unwrap();
    let gone_runner = start_run(&store, &script, None, "host:1:gone", time(60)).await;
    let past_deadline = start_run(&store, &script, None, "other-host:2:alive", time(5)).await;
    let alive = start_run(&store, &script, None, "other-host:2:alive", time(60)).await;
    let done = start_run(&store, &script, None, "host:1:gone", time(60)).await;
    store
        .finish_script_run(done, &ended(ScriptRunStatus::Success, ""), time(2))
        .await
        .unwrap();

    let mut runners = store.running_script_runners().await.unwrap();
    runners.sort();
    assert_eq!(runners, ["host:1:gone", "other-host:2:alive"]);
    let failed = store
        .fail_interrupted_script_runs(
            &["host:1:gone".to_string()],
            "interrupted by a restart",
            time(10),
        )
        .await
        .unwrap();
    assert_eq!(failed, 2);
    for (run_id, status) in [
        (gone_runner, ScriptRunStatus::Error),
        (past_deadline, ScriptRunStatus::Error),
        (alive, ScriptRunStatus::Running),
        (done, ScriptRunStatus::Success),
    ] {
        let run = store.get_script_run(run_id).await.unwrap();
        assert_eq!(run.status, status, "run {run_id}");
        if status == ScriptRunStatus::Error {
            assert_eq!(run.syserr.as_deref(), Some("interrupted by a restart"));
            assert_eq!(run.updated_at, time(10));
        }
    }
}

/// The `RESPONSE_ACTION_RUN_FAILED` events stored, oldest first.
async fn run_failures(store: &Arc<dyn Store>) -> Vec<SystemEventRecord> {
    let mut page = store
        .list_system_events(&SystemEventQuery {
            trigger_names: vec![RESPONSE_ACTION_RUN_FAILED.into()],
            limit: 100,
            ..SystemEventQuery::default()
        })
        .await
        .unwrap()
        .items;
    page.reverse();
    page
}

pub async fn a_failed_run_leaves_its_system_event_with_its_end(store: Arc<dyn Store>) {
    let catalog = catalog(&store).await;
    let author = author(&store).await;
    let script = store
        .create_script(
            &new_script("isolate-host", catalog[0].uuid, "", author.id),
            time(1),
        )
        .await
        .unwrap();
    let succeeded = start_run(&store, &script, None, "host:1:a", time(60)).await;
    let failed = start_run(&store, &script, None, "host:1:a", time(60)).await;
    let timed_out = start_run(&store, &script, None, "host:1:a", time(60)).await;
    let interrupted = start_run(&store, &script, None, "host:2:gone", time(60)).await;
    store
        .finish_script_run(succeeded, &ended(ScriptRunStatus::Success, "ok"), time(2))
        .await
        .unwrap();
    assert!(
        run_failures(&store).await.is_empty(),
        "a success is no failure"
    );
    let mut failure = ended(ScriptRunStatus::Failed, "");
    failure.stderr = format!("{}\nEDR answered 403", "x".repeat(2000));
    store
        .finish_script_run(failed, &failure, time(3))
        .await
        .unwrap();
    // A second end of the same run changes nothing and tells nothing again.
    store
        .finish_script_run(failed, &failure, time(4))
        .await
        .unwrap();
    let mut slow = ended(ScriptRunStatus::TimedOut, "");
    slow.syserr = Some("killed after 30 s".into());
    store
        .finish_script_run(timed_out, &slow, time(5))
        .await
        .unwrap();
    store
        .fail_interrupted_script_runs(&["host:2:gone".into()], "its runner died", time(6))
        .await
        .unwrap();

    let events = run_failures(&store).await;
    let told: Vec<(i64, &str, &str)> = events
        .iter()
        .map(|event| {
            (
                event.trigger_args["script_run_id"].as_i64().unwrap(),
                event.trigger_args["status"].as_str().unwrap(),
                event.trigger_args["script_name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        told,
        [
            (failed, "failed", "isolate-host"),
            (timed_out, "timed_out", "isolate-host"),
            (interrupted, "error", "isolate-host"),
        ]
    );
    let detail = events[0].trigger_args["detail"].as_str().unwrap();
    assert!(detail.ends_with("EDR answered 403"), "{detail}");
    assert!(
        detail.chars().count() <= 501,
        "the detail is the output's end"
    );
    assert_eq!(
        events[1].trigger_args["detail"], "killed after 30 s",
        "the runner's own word first"
    );
    assert_eq!(events[2].trigger_args["detail"], "its runner died");
    assert_eq!(
        events
            .iter()
            .map(|event| event.created_at)
            .collect::<Vec<_>>(),
        [time(3), time(5), time(6)],
        "each event is the run's end"
    );
}

fn sealed(key_id: &str, ciphertext: &str) -> SealedSecret {
    SealedSecret {
        key_id: key_id.into(),
        ciphertext: ciphertext.into(),
    }
}

pub async fn secrets_are_set_replaced_listed_without_values_and_deleted(store: Arc<dyn Store>) {
    let all = ["EDR_TOKEN".to_string(), "SLACK_HOOK".to_string()];
    assert!(store.script_secrets(&all).await.unwrap().is_empty());
    store
        .set_script_secret("EDR_TOKEN", &sealed("k1", "first"), time(1))
        .await
        .unwrap();
    store
        .set_script_secret("SLACK_HOOK", &sealed("k1", "hook"), time(1))
        .await
        .unwrap();
    store
        .set_script_secret("EDR_TOKEN", &sealed("k2", "second"), time(2))
        .await
        .unwrap();
    let listed = store.list_script_secrets().await.unwrap();
    let shown: Vec<(&str, Option<&str>, Timestamp, Timestamp)> = listed
        .iter()
        .map(|secret| {
            (
                secret.name.as_str(),
                secret.key_id.as_deref(),
                secret.created_at,
                secret.updated_at,
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("EDR_TOKEN", Some("k2"), time(1), time(2)),
            ("SLACK_HOOK", Some("k1"), time(1), time(1))
        ]
    );
    // Only the names asked for, and only those stored.
    let values = store
        .script_secrets(&["EDR_TOKEN".into(), "NOT_STORED".into()])
        .await
        .unwrap();
    assert_eq!(
        values.into_iter().collect::<Vec<_>>(),
        [(
            "EDR_TOKEN".to_string(),
            StoredSecret::Sealed(sealed("k2", "second"))
        )]
    );
    assert_eq!(
        format!("{:?}", SecretValue("never-shown".into())),
        "SecretValue(..)",
        "Debug never shows a value"
    );

    store.delete_script_secret("SLACK_HOOK").await.unwrap();
    let missing = store.delete_script_secret("SLACK_HOOK").await;
    assert!(
        matches!(missing, Err(StoreError::NotFound { .. })),
        "{missing:?}"
    );
    assert_eq!(store.list_script_secrets().await.unwrap().len(), 1);
}

pub async fn secrets_are_resealed_only_when_unchanged(store: Arc<dyn Store>) {
    store
        .set_script_secret("TOKEN", &sealed("old", "sealed-by-old"), time(1))
        .await
        .unwrap();
    let names = ["TOKEN".to_string()];
    let stored = store.script_secrets(&names).await.unwrap()["TOKEN"].clone();
    // A reseal that read a value overwritten since then changes nothing.
    let stale = StoredSecret::Sealed(sealed("old", "an-older-value"));
    assert!(
        !store
            .reseal_script_secret("TOKEN", &stale, &sealed("new", "x"))
            .await
            .unwrap()
    );
    assert!(
        store
            .reseal_script_secret("TOKEN", &stored, &sealed("new", "sealed-by-new"))
            .await
            .unwrap()
    );
    let listed = store.list_script_secrets().await.unwrap();
    assert_eq!(listed[0].key_id.as_deref(), Some("new"));
    assert_eq!(listed[0].updated_at, time(1), "the value did not change");
    assert_eq!(
        store.script_secrets(&names).await.unwrap()["TOKEN"],
        StoredSecret::Sealed(sealed("new", "sealed-by-new"))
    );
    assert!(
        !store
            .reseal_script_secret("GONE", &stored, &sealed("new", "x"))
            .await
            .unwrap()
    );
}

pub async fn scripts_keep_the_secret_names_they_declare(store: Arc<dyn Store>) {
    let catalog = catalog(&store).await;
    let author = author(&store).await;
    let script = store
        .create_script(
            &NewScript {
                secret_names: vec!["SLACK".into(), "EDR".into(), "SLACK".into()],
                ..new_script("Notify", catalog[0].uuid, "", author.id)
            },
            time(1),
        )
        .await
        .unwrap();
    assert_eq!(script.secret_names, ["EDR", "SLACK"], "sorted, each once");
    let changed = store
        .update_script(
            script.id,
            &ScriptChanges {
                secret_names: Some(vec!["VT_KEY".into()]),
                author_id: author.id,
                ..ScriptChanges::default()
            },
            time(2),
        )
        .await
        .unwrap();
    assert_eq!(changed.secret_names, ["VT_KEY"]);
    let renamed = store
        .update_script(
            script.id,
            &ScriptChanges {
                display_name: Some("Notify the SOC".into()),
                author_id: author.id,
                ..ScriptChanges::default()
            },
            time(3),
        )
        .await
        .unwrap();
    assert_eq!(renamed.secret_names, ["VT_KEY"], "kept when not changed");
    let runnable = store.scripts_to_run(&[catalog[0].uuid]).await.unwrap();
    assert_eq!(runnable[0].script.secret_names, ["VT_KEY"]);
}
