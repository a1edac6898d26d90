//! The store contract for context memory (`ContextMemoryStore` and its part of `history`),
//! system events (`SystemEventStore`) and the audit log (`AuditStore`). A backend's
//! contract binary runs it with `memory_audit_contract_tests!(open(), url_of)`, where
//! `url_of` turns the guard `open()` returns into the database's URL: the tamper tests
//! change rows behind the store's back, as someone with the database would.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use sleuth_domain::{Entity, EntityKind, MemoryVerdict};
use sleuth_store::*;
use sqlx::Connection;

use crate::fixtures::{self, time};

/// Generates one test per case, like `store_contract_tests!`.
#[macro_export]
macro_rules! memory_audit_contract_tests {
    ($open:expr, $url_of:expr) => {
        $crate::memory_audit_contract_tests!(@cases $open, $url_of;
            memory_items_are_created_read_updated_listed_and_deleted,
            memory_refuses_unknown_tenant_unions_and_unknown_ids,
            history_cites_memory_in_the_alerts_scope_only,
            history_matches_names_across_hosts_accounts_and_domains,
            system_events_are_recorded_and_filtered,
            system_events_are_read_after_a_position_oldest_first,
            audit_appends_chain_and_list_with_filters,
            concurrent_audit_appends_never_fork_the_chain,
            concurrent_audited_creates_chain_one_entry_per_answer,
            the_audit_log_refuses_updates_and_deletes,
            an_edited_audit_entry_is_detected,
            a_deleted_audit_entry_is_detected,
            an_inserted_audit_entry_is_detected,
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
                $crate::contract_memory_audit::$case(store, raw).await;
            }
        )+
    };
}

/// Direct SQL on the database behind a store, for tampering.
#[derive(Debug, Clone)]
pub struct RawDatabase {
    url: String,
}

impl RawDatabase {
    pub fn new(url: String) -> RawDatabase {
        RawDatabase { url }
    }

    fn is_postgres(&self) -> bool {
        self.url.starts_with("postgres")
    }

    /// Runs `sql` (one or more statements) on its own connection.
    pub async fn execute(&self, sql: &str) -> Result<(), sqlx::Error> {
        sqlx::any::install_default_drivers();
        let mut connection = sqlx::AnyConnection::connect(&self.url).await?;
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
            .execute(&mut connection)
            .await?;
        connection.close().await
    }

    /// Removes the append-only triggers, as an attacker with the database's owner rights
    /// would before editing the log.
    pub async fn drop_append_only_guards(&self) {
        let sql = if self.is_postgres() {
            "DROP TRIGGER audit_log_no_change ON audit_log; \
             DROP TRIGGER audit_log_no_truncate ON audit_log;"
        } else {
            "DROP TRIGGER audit_log_no_update; DROP TRIGGER audit_log_no_delete;"
        };
        self.execute(sql)
            .await
            .expect("drop the append-only triggers");
    }
}

async fn admin(store: &Arc<dyn Store>) -> User {
    store
        .create_user(&fixtures::new_user(
            "memory@example.com",
            sleuth_domain::Role::Admin,
        ))
        .await
        .unwrap()
}

async fn union(store: &Arc<dyn Store>, name: &str) -> i64 {
    store
        .create_tenant_union(&TenantUnionInput {
            display_name: name.into(),
            lookup_dict: Map::new(),
            modified_by: None,
        })
        .await
        .unwrap()
        .id
}

fn entity(kind: EntityKind, value: &str) -> Entity {
    Entity::new(kind, value)
}

fn item(
    text: &str,
    scope: MemoryScope,
    hints: Vec<MemoryHint>,
    entities: Vec<Entity>,
) -> NewMemoryItem {
    NewMemoryItem {
        text: text.into(),
        scope,
        hints,
        entities,
        author_id: None,
    }
}

fn benign(kind: EntityKind, value: &str) -> MemoryHint {
    MemoryHint {
        entity: entity(kind, value),
        verdict: Some(MemoryVerdict::Benign),
        note: Some("expected".into()),
    }
}

fn history_query(
    entities: Vec<Entity>,
    tenant_union_id: i64,
    tenant_id: Option<&str>,
) -> HistoryQuery {
    HistoryQuery {
        alert_id: 0,
        investigation_id: 0,
        entities,
        alert_type: "none".into(),
        direct_source_label: "none".into(),
        since: time(0),
        limit: 50,
        tenant_union_id,
        tenant_id: tenant_id.map(str::to_string),
    }
}

async fn cited(store: &Arc<dyn Store>, query: &HistoryQuery) -> Vec<i64> {
    store
        .history(query)
        .await
        .unwrap()
        .memory
        .iter()
        .map(|memory| memory.item_id)
        .collect()
}

fn page(limit: u32, offset: u64) -> MemoryQuery {
    MemoryQuery {
        limit,
        offset,
        ..MemoryQuery::default()
    }
}

pub async fn memory_items_are_created_read_updated_listed_and_deleted(
    store: Arc<dyn Store>,
    _raw: RawDatabase,
) {
    let author = admin(&store).await;
    let other_union = union(&store, "Acme").await;
    let mut new = item(
        "198.51.100.9 is the Frankfurt VPN egress; svc-backup runs there",
        MemoryScope::default(),
        vec![benign(EntityKind::Ip, "198.51.100.9")],
        vec![entity(EntityKind::User, "svc-backup")],
    );
    new.author_id = Some(author.id);
    let created = store.create_memory_item(&new, time(1)).await.unwrap();
    assert_eq!(created.text, new.text);
    assert!(created.scope.is_global());
    assert_eq!(created.hints, new.hints);
    assert_eq!(created.entities, new.entities);
    assert_eq!(
        created.created_by.as_ref().map(|user| user.id),
        Some(author.id)
    );
    assert_eq!(created.created_at, time(1));
    assert_eq!(store.get_memory_item(created.id).await.unwrap(), created);

    let scoped = store
        .create_memory_item(
            &item(
                "wks-0231 is Acme's jump host",
                MemoryScope {
                    tenant_union_id: Some(other_union),
                    tenant_id: Some("acme-eu".into()),
                    tenant_label: Some("Acme EU".into()),
                },
                Vec::new(),
                vec![entity(EntityKind::Host, "wks-0231")],
            ),
            time(2),
        )
        .await
        .unwrap();
    assert_eq!(scoped.scope.tenant_label.as_deref(), Some("Acme EU"));
    assert!(scoped.created_by.is_none());

    // Newest first, with the total; filters by scope and words.
    let all = store.list_memory_items(&page(20, 0)).await.unwrap();
    assert_eq!(all.total, 2);
    assert_eq!(
        all.items.iter().map(|item| item.id).collect::<Vec<_>>(),
        [scoped.id, created.id]
    );
    let second = store.list_memory_items(&page(1, 1)).await.unwrap();
    assert_eq!(second.total, 2);
    assert_eq!(second.items.len(), 1);
    assert_eq!(second.items[0].id, created.id);
    let global = store
        .list_memory_items(&MemoryQuery {
            global_only: true,
            ..page(20, 0)
        })
        .await
        .unwrap();
    assert_eq!(global.items.len(), 1);
    assert_eq!(global.items[0].id, created.id);
    for (query, expected) in [
        (
            MemoryQuery {
                tenant_union_id: Some(other_union),
                ..page(20, 0)
            },
            vec![scoped.id],
        ),
        (
            MemoryQuery {
                tenant_id: Some("acme-eu".into()),
                ..page(20, 0)
            },
            vec![scoped.id],
        ),
        (
            MemoryQuery {
                search: Some("FRANKFURT egress".into()),
                ..page(20, 0)
            },
            vec![created.id],
        ),
        (
            MemoryQuery {
                search: Some("wks-0231".into()),
                ..page(20, 0)
            },
            vec![scoped.id],
        ),
        (
            MemoryQuery {
                search: Some("expected".into()),
                ..page(20, 0)
            },
            vec![created.id],
        ),
        (
            MemoryQuery {
                search: Some("%".into()),
                ..page(20, 0)
            },
            vec![],
        ),
        (
            MemoryQuery {
                search: Some("'; DROP TABLE context_memory_items; --".into()),
                ..page(20, 0)
            },
            vec![],
        ),
    ] {
        let found = store.list_memory_items(&query).await.unwrap();
        assert_eq!(
            found.items.iter().map(|item| item.id).collect::<Vec<_>>(),
            expected,
            "{query:?}"
        );
        assert_eq!(found.total, expected.len() as u64);
    }

    // An update replaces the item whole and keeps its creation.
    let mut changed = item(
        "198.51.100.10 is the new egress",
        MemoryScope {
            tenant_union_id: Some(other_union),
            ..MemoryScope::default()
        },
        Vec::new(),
        vec![entity(EntityKind::Ip, "198.51.100.10")],
    );
    changed.author_id = Some(author.id);
    let updated = store
        .update_memory_item(created.id, &changed, time(3))
        .await
        .unwrap();
    assert_eq!(updated.text, changed.text);
    assert_eq!(updated.scope.tenant_union_id, Some(other_union));
    assert!(updated.hints.is_empty());
    assert_eq!(updated.created_at, time(1));
    assert_eq!(updated.updated_at, time(3));
    assert_eq!(
        updated.last_modified_by.map(|user| user.id),
        Some(author.id)
    );
    // The old entities are gone from history, the new ones are there.
    let old = history_query(
        vec![entity(EntityKind::Ip, "198.51.100.9")],
        other_union,
        None,
    );
    assert!(cited(&store, &old).await.is_empty());
    let new_ip = history_query(
        vec![entity(EntityKind::Ip, "198.51.100.10")],
        other_union,
        None,
    );
    assert_eq!(cited(&store, &new_ip).await, [created.id]);

    store.delete_memory_item(created.id).await.unwrap();
    assert!(matches!(
        store.get_memory_item(created.id).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(cited(&store, &new_ip).await.is_empty());
    assert_eq!(
        store.list_memory_items(&page(20, 0)).await.unwrap().total,
        1
    );
}

pub async fn memory_refuses_unknown_tenant_unions_and_unknown_ids(
    store: Arc<dyn Store>,
    _raw: RawDatabase,
) {
    let scoped = item(
        "x",
        MemoryScope {
            tenant_union_id: Some(999),
            ..MemoryScope::default()
        },
        Vec::new(),
        Vec::new(),
    );
    assert!(matches!(
        store.create_memory_item(&scoped, time(0)).await,
        Err(StoreError::Rejected { .. })
    ));
    assert_eq!(
        store.list_memory_items(&page(20, 0)).await.unwrap().total,
        0
    );
    let plain = item("x", MemoryScope::default(), Vec::new(), Vec::new());
    assert!(matches!(
        store.update_memory_item(42, &plain, time(0)).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.delete_memory_item(42).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.get_memory_item(42).await,
        Err(StoreError::NotFound { .. })
    ));
    let created = store.create_memory_item(&plain, time(0)).await.unwrap();
    assert!(matches!(
        store.update_memory_item(created.id, &scoped, time(1)).await,
        Err(StoreError::Rejected { .. })
    ));
    assert_eq!(store.get_memory_item(created.id).await.unwrap(), created);
}

pub async fn history_cites_memory_in_the_alerts_scope_only(
    store: Arc<dyn Store>,
    _raw: RawDatabase,
) {
    let acme = union(&store, "Acme").await;
    let globex = union(&store, "Globex").await;
    let ip = "198.51.100.9";
    let hint = || vec![benign(EntityKind::Ip, ip)];
    let scope = |tenant_union_id: Option<i64>, tenant_id: Option<&str>| MemoryScope {
        tenant_union_id,
        tenant_id: tenant_id.map(str::to_string),
        tenant_label: None,
    };
    let mut ids = Vec::new();
    for (text, item_scope) in [
        ("global", scope(None, None)),
        ("acme union", scope(Some(acme), None)),
        ("globex union", scope(Some(globex), None)),
        ("tenant eu anywhere", scope(None, Some("eu"))),
        ("tenant us anywhere", scope(None, Some("us"))),
        ("acme's tenant eu", scope(Some(acme), Some("eu"))),
        ("globex's tenant eu", scope(Some(globex), Some("eu"))),
    ] {
        let created = store
            .create_memory_item(&item(text, item_scope, hint(), Vec::new()), time(0))
            .await
            .unwrap();
        ids.push(created.id);
    }
    let [global, acme_union, globex_union, eu, us, acme_eu, globex_eu] = ids[..] else {
        panic!("seven items");
    };
    let entities = || vec![entity(EntityKind::Ip, ip)];
    let mut for_acme = cited(&store, &history_query(entities(), acme, None)).await;
    for_acme.sort_unstable();
    assert_eq!(for_acme, [global, acme_union]);
    let mut for_acme_eu = cited(&store, &history_query(entities(), acme, Some("eu"))).await;
    for_acme_eu.sort_unstable();
    assert_eq!(for_acme_eu, [global, acme_union, eu, acme_eu]);
    let mut for_globex_us = cited(&store, &history_query(entities(), globex, Some("us"))).await;
    for_globex_us.sort_unstable();
    assert_eq!(for_globex_us, [global, globex_union, us]);
    let mut for_default = cited(
        &store,
        &history_query(entities(), DEFAULT_TENANT_UNION_ID, Some("eu")),
    )
    .await;
    for_default.sort_unstable();
    assert_eq!(for_default, [global, eu]);
    assert!(!for_acme_eu.contains(&globex_eu) && !for_acme_eu.contains(&us));

    // What is cited: the item's words, the alert's entity, the hint's verdict and note.
    let history = store
        .history(&history_query(entities(), acme, None))
        .await
        .unwrap();
    let cited_global = history
        .memory
        .iter()
        .find(|memory| memory.item_id == global)
        .unwrap();
    assert_eq!(cited_global.text, "global (note: expected)");
    assert_eq!(cited_global.entities, entities());
    assert_eq!(cited_global.verdict, Some(MemoryVerdict::Benign));
    // Newest first.
    assert_eq!(history.memory[0].item_id, acme_union);

    // An alert naming nothing the memory names cites nothing.
    assert!(
        cited(
            &store,
            &history_query(vec![entity(EntityKind::Ip, "203.0.113.1")], acme, None)
        )
        .await
        .is_empty()
    );
    assert!(
        cited(&store, &history_query(Vec::new(), acme, None))
            .await
            .is_empty()
    );
}

pub async fn history_matches_names_across_hosts_accounts_and_domains(
    store: Arc<dyn Store>,
    _raw: RawDatabase,
) {
    let service = store
        .create_memory_item(
            &item(
                "svc-backup never logs on interactively",
                MemoryScope::default(),
                Vec::new(),
                vec![entity(EntityKind::User, "svc-backup")],
            ),
            time(0),
        )
        .await
        .unwrap();
    let jump_host = store
        .create_memory_item(
            &item(
                "wks-0231 is the SOC's jump host",
                MemoryScope::default(),
                Vec::new(),
                vec![entity(EntityKind::Host, "wks-0231")],
            ),
            time(0),
        )
        .await
        .unwrap();
    let evil = store
        .create_memory_item(
            &item(
                "evil.example.com is the red team's C2",
                MemoryScope::default(),
                vec![MemoryHint {
                    entity: entity(EntityKind::Domain, "evil.example.com"),
                    verdict: Some(MemoryVerdict::Malicious),
                    note: None,
                }],
                Vec::new(),
            ),
            time(0),
        )
        .await
        .unwrap();
    let check = |kind: EntityKind, value: &'static str, expected: i64| {
        let store = store.clone();
        async move {
            let query = history_query(vec![entity(kind, value)], DEFAULT_TENANT_UNION_ID, None);
            let history = store.history(&query).await.unwrap();
            assert_eq!(
                history
                    .memory
                    .iter()
                    .map(|memory| memory.item_id)
                    .collect::<Vec<_>>(),
                [expected],
                "{kind}:{value}"
            );
            // The alert's own spelling is what is cited.
            assert_eq!(history.memory[0].entities, [entity(kind, value)]);
            history.memory[0].verdict
        }
    };
    assert_eq!(
        check(EntityKind::User, "corp\\svc-backup", service.id).await,
        None
    );
    assert_eq!(
        check(EntityKind::User, "svc-backup@corp.example.com", service.id).await,
        None
    );
    assert_eq!(
        check(EntityKind::Host, "wks-0231.corp.example.com", jump_host.id).await,
        None
    );
    assert_eq!(
        check(EntityKind::Host, "wks-0231", jump_host.id).await,
        None
    );
    assert_eq!(
        check(EntityKind::Host, "evil.example.com", evil.id).await,
        Some(MemoryVerdict::Malicious)
    );
    assert!(
        cited(
            &store,
            &history_query(
                vec![
                    entity(EntityKind::Host, "wks-0232"),
                    entity(EntityKind::User, "svc-backups")
                ],
                DEFAULT_TENANT_UNION_ID,
                None
            )
        )
        .await
        .is_empty()
    );
}

fn arguments(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn event(trigger_name: &str, args: Value, investigation_id: Option<i64>) -> NewSystemEvent {
    NewSystemEvent {
        trigger_name: trigger_name.into(),
        trigger_args: arguments(args),
        investigation_id,
        entity: investigation_id.map(|id| format!("investigation:{id}")),
    }
}

fn events_query() -> SystemEventQuery {
    SystemEventQuery {
        limit: 20,
        ..SystemEventQuery::default()
    }
}

async fn event_ids(store: &Arc<dyn Store>, query: &SystemEventQuery) -> Vec<i64> {
    store
        .list_system_events(query)
        .await
        .unwrap()
        .items
        .iter()
        .map(|event| event.id)
        .collect()
}

pub async fn system_events_are_recorded_and_filtered(store: Arc<dyn Store>, _raw: RawDatabase) {
    store.record_system_events(&[], time(0)).await.unwrap();
    store
        .record_system_events(
            &[
                event(
                    "investigation_completed",
                    json!({"investigation_id": 1, "outcome": "COMPLETED_FALSE_ALERT"}),
                    Some(1),
                ),
                event(
                    "investigation_completed_false_alert",
                    json!({"investigation_id": 1, "outcome": "COMPLETED_FALSE_ALERT"}),
                    Some(1),
                ),
            ],
            time(10),
        )
        .await
        .unwrap();
    store
        .record_system_events(
            &[event(
                "api_key_created",
                json!({"api_key_id": 7, "user_email": "R.Patel@Example.com", "name": "corp\\svc 100%"}),
                None,
            )],
            time(20),
        )
        .await
        .unwrap();
    let all = store.list_system_events(&events_query()).await.unwrap();
    assert_eq!(all.total, 3);
    let newest = &all.items[0];
    assert_eq!(newest.trigger_name, "api_key_created");
    assert_eq!(newest.trigger_args["api_key_id"], 7);
    assert_eq!(newest.investigation_id, None);
    assert_eq!(newest.created_at, time(20));
    assert_eq!(all.items[1].investigation_id, Some(1));
    assert_eq!(all.items[1].entity.as_deref(), Some("investigation:1"));
    let ids: Vec<i64> = all.items.iter().map(|event| event.id).collect();

    let named = |names: &[&str]| SystemEventQuery {
        trigger_names: names.iter().map(|name| name.to_string()).collect(),
        ..events_query()
    };
    assert_eq!(
        event_ids(&store, &named(&["api_key_created"])).await,
        [ids[0]]
    );
    assert_eq!(
        event_ids(
            &store,
            &named(&["api_key_created", "investigation_completed"])
        )
        .await,
        [ids[0], ids[2]]
    );
    let window = |from: i64, until: i64| SystemEventQuery {
        time: TimeRange {
            from: Some(time(from)),
            until: Some(time(until)),
        },
        ..events_query()
    };
    assert_eq!(event_ids(&store, &window(10, 10)).await.len(), 2);
    assert_eq!(event_ids(&store, &window(11, 30)).await, [ids[0]]);
    let search = |text: &str| SystemEventQuery {
        search: Some(text.into()),
        ..events_query()
    };
    assert_eq!(
        event_ids(&store, &search("r.patel@example.COM")).await,
        [ids[0]]
    );
    assert_eq!(event_ids(&store, &search("corp\\svc")).await, [ids[0]]);
    assert_eq!(event_ids(&store, &search("100%")).await, [ids[0]]);
    assert_eq!(event_ids(&store, &search("false_alert")).await.len(), 2);
    assert!(
        event_ids(&store, &search("false_alert patel"))
            .await
            .is_empty()
    );
    // LIKE's wildcards are letters here: unescaped, "a_i" would match "api_key_id" and
    // "%" every event.
    assert!(event_ids(&store, &search("a_i")).await.is_empty());
    assert_eq!(event_ids(&store, &search("%")).await, [ids[0]]);
    let paged = store
        .list_system_events(&SystemEventQuery {
            limit: 1,
            offset: 1,
            ..events_query()
        })
        .await
        .unwrap();
    assert_eq!(paged.total, 3);
    assert_eq!(
        paged.items.iter().map(|event| event.id).collect::<Vec<_>>(),
        [ids[1]]
    );
}

pub async fn system_events_are_read_after_a_position_oldest_first(
    store: Arc<dyn Store>,
    _raw: RawDatabase,
) {
    assert_eq!(store.newest_system_event_id().await.unwrap(), 0);
    for (index, name) in [
        "investigation_completed",
        "user_created",
        "investigation_completed",
    ]
    .into_iter()
    .enumerate()
    {
        let investigation_id = i64::try_from(index).unwrap() + 1;
        store
            .record_system_events(
                &[event(name, json!({"n": index}), Some(investigation_id))],
                time(10),
            )
            .await
            .unwrap();
    }
    let newest = store.newest_system_event_id().await.unwrap();
    let ids = store.system_event_ids_after(0, 10).await.unwrap();
    assert_eq!(ids.len(), 3);
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");
    assert_eq!(ids[2], newest);
    assert_eq!(
        store.system_event_ids_after(ids[0], 1).await.unwrap(),
        [ids[1]]
    );
    assert!(
        store
            .system_event_ids_after(newest, 10)
            .await
            .unwrap()
            .is_empty()
    );

    let after = |after_id: i64, through_id: i64, names: &[&str]| SystemEventsAfter {
        after_id,
        through_id,
        trigger_names: names.iter().map(|name| name.to_string()).collect(),
        scope: TenantScope::All,
        limit: 10,
    };
    let read = |query: SystemEventsAfter| {
        let store = store.clone();
        async move {
            store
                .system_events_after(&query)
                .await
                .unwrap()
                .iter()
                .map(|event| (event.id, event.trigger_args["n"].as_i64().unwrap()))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        read(after(0, newest, &[])).await,
        [(ids[0], 0), (ids[1], 1), (ids[2], 2)]
    );
    // Nothing past `through_id`, nothing at or before `after_id`.
    assert_eq!(read(after(ids[0], ids[1], &[])).await, [(ids[1], 1)]);
    assert_eq!(
        read(after(0, newest, &["investigation_completed"])).await,
        [(ids[0], 0), (ids[2], 2)]
    );
    let limited = SystemEventsAfter {
        limit: 1,
        ..after(0, newest, &[])
    };
    assert_eq!(read(limited).await, [(ids[0], 0)]);
}

fn audit_entry(
    actor: Option<(i64, &str)>,
    action: &str,
    resource_type: &str,
    id: Option<&str>,
) -> NewAuditEntry {
    NewAuditEntry {
        actor_user_id: actor.map(|(user_id, _)| user_id),
        actor_email: actor.map(|(_, email)| email.to_string()),
        action: action.into(),
        resource_type: resource_type.into(),
        resource_id: id.map(str::to_string),
        request_id: Some("req-1".into()),
        detail: arguments(json!({"status": 200, "nested": {"b": 1, "a": [1, "x"]}})),
        tenant_union_id: None,
    }
}

async fn append_five(store: &Arc<dyn Store>) -> Vec<AuditEntry> {
    let mut appended = Vec::new();
    for (index, (actor, action, resource_type)) in [
        (
            Some((1, "admin@example.com")),
            "POST /app/api/v1/context-memory/create",
            "context-memory",
        ),
        (
            Some((2, "Member@Example.com")),
            "PUT /app/api/v1/context-memory/update/{item_id}",
            "context-memory",
        ),
        (None, "cli apikey create", "api-key"),
        (
            Some((1, "admin@example.com")),
            "DELETE /app/api/v1/context-memory/delete/{item_id}",
            "context-memory",
        ),
        (None, "cli secret set", "secret"),
    ]
    .into_iter()
    .enumerate()
    {
        let id = (index + 1).to_string();
        appended.push(
            store
                .append_audit_entry(&audit_entry(actor, action, resource_type, Some(&id)))
                .await
                .unwrap(),
        );
    }
    appended
}

fn intact(verdict: &AuditVerdict) -> u64 {
    match verdict {
        AuditVerdict::Intact { count, .. } => *count,
        broken => panic!("expected an intact chain, got {broken:?}"),
    }
}

fn broken_at(verdict: &AuditVerdict) -> i64 {
    match verdict {
        AuditVerdict::Broken { seq, .. } => *seq,
        intact => panic!("expected a broken chain, got {intact:?}"),
    }
}

fn audit_query() -> AuditQuery {
    AuditQuery {
        limit: 20,
        ..AuditQuery::default()
    }
}

async fn audit_seqs(store: &Arc<dyn Store>, query: &AuditQuery) -> Vec<i64> {
    store
        .list_audit_entries(query)
        .await
        .unwrap()
        .items
        .iter()
        .map(|entry| entry.seq)
        .collect()
}

pub async fn audit_appends_chain_and_list_with_filters(store: Arc<dyn Store>, _raw: RawDatabase) {
    assert_eq!(
        store.verify_audit_chain().await.unwrap(),
        AuditVerdict::Intact {
            count: 0,
            head_hash: GENESIS_HASH.into()
        }
    );
    let appended = append_five(&store).await;
    assert_eq!(
        appended.iter().map(|entry| entry.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    assert_eq!(appended[0].prev_hash, GENESIS_HASH);
    for pair in appended.windows(2) {
        assert_eq!(pair[1].prev_hash, pair[0].hash);
    }
    for entry in &appended {
        assert_eq!(entry.hash, entry.expected_hash());
        assert_eq!(entry.hash.len(), 64);
    }
    assert_eq!(
        store.verify_audit_chain().await.unwrap(),
        AuditVerdict::Intact {
            count: 5,
            head_hash: appended[4].hash.clone()
        }
    );
    // What is stored reads back exactly, hashes included.
    let listed = store.list_audit_entries(&audit_query()).await.unwrap();
    assert_eq!(listed.total, 5);
    let mut oldest_first = listed.items.clone();
    oldest_first.reverse();
    assert_eq!(oldest_first, appended);
    assert_eq!(store.audit_entries_after(0, 1000).await.unwrap(), appended);
    assert_eq!(
        store.audit_entries_after(3, 1).await.unwrap(),
        appended[3..4]
    );

    let actor = |actor: &str| AuditQuery {
        actor: Some(actor.into()),
        ..audit_query()
    };
    assert_eq!(audit_seqs(&store, &actor("1")).await, [4, 1]);
    assert_eq!(audit_seqs(&store, &actor("member@example.com")).await, [2]);
    assert_eq!(
        audit_seqs(
            &store,
            &AuditQuery {
                actions: vec!["cli apikey create".into(), "cli secret set".into()],
                ..audit_query()
            }
        )
        .await,
        [5, 3]
    );
    assert_eq!(
        audit_seqs(
            &store,
            &AuditQuery {
                resource_types: vec!["context-memory".into()],
                ..audit_query()
            }
        )
        .await,
        [4, 2, 1]
    );
    let at = appended[0].at;
    let window = |from: chrono::Duration, until: chrono::Duration| AuditQuery {
        time: TimeRange {
            from: Some(at + from),
            until: Some(at + until),
        },
        ..audit_query()
    };
    assert!(
        audit_seqs(
            &store,
            &window(chrono::Duration::hours(1), chrono::Duration::hours(2))
        )
        .await
        .is_empty()
    );
    assert_eq!(
        audit_seqs(
            &store,
            &window(chrono::Duration::hours(-1), chrono::Duration::hours(1))
        )
        .await
        .len(),
        5
    );
    let paged = store
        .list_audit_entries(&AuditQuery {
            limit: 2,
            offset: 1,
            ..audit_query()
        })
        .await
        .unwrap();
    assert_eq!(paged.total, 5);
    assert_eq!(
        paged
            .items
            .iter()
            .map(|entry| entry.seq)
            .collect::<Vec<_>>(),
        [4, 3]
    );
}

pub async fn concurrent_audit_appends_never_fork_the_chain(
    store: Arc<dyn Store>,
    _raw: RawDatabase,
) {
    let tasks: Vec<_> = (0..60)
        .map(|index| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .append_audit_entry(&audit_entry(
                        Some((index, "admin@example.com")),
                        "POST /things",
                        "things",
                        None,
                    ))
                    .await
                    .unwrap()
                    .seq
            })
        })
        .collect();
    let mut seqs = Vec::new();
    for task in tasks {
        seqs.push(task.await.unwrap());
    }
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=60).collect::<Vec<_>>());
    assert_eq!(intact(&store.verify_audit_chain().await.unwrap()), 60);
}

/// Concurrent creates are written in shared transactions (group commit), each batch
/// appending its creates' audit entries with its own writes, while the audit writer appends
/// other entries: the chain stays whole, and each create that was answered has exactly one
/// entry, its own (by request id), naming the investigation it answered with, new or
/// existing. One round also holds a create the database refuses, so that its batch is
/// replayed one create at a time.
pub async fn concurrent_audited_creates_chain_one_entry_per_answer(
    store: Arc<dyn Store>,
    _raw: RawDatabase,
) {
    let repeated = fixtures::simple_alert("repeated in the batch", 0);
    let mut refused = fixtures::simple_alert("of a tenant union that does not exist", 0);
    refused.tenant_union_id = 999_999;
    let mut answered: Vec<(String, i64, &str)> = Vec::new();
    let mut appended_alone = 0;
    for round in 0..2 {
        let mut requests: Vec<(NewAlert, bool)> = (0..20)
            .map(|index| {
                let title = format!("round {round}, alert {index}");
                (fixtures::simple_alert(&title, index), false)
            })
            .collect();
        requests.extend((0..10).map(|_| (repeated.clone(), false)));
        requests.extend((0..3).map(|_| (repeated.clone(), true)));
        if round == 1 {
            requests.push((refused.clone(), false));
        }
        let creates = requests
            .into_iter()
            .enumerate()
            .map(|(index, (alert, force))| {
                let store = store.clone();
                let request_id = format!("request {round}.{index}");
                let mut entry = audit_entry(
                    Some((1, "admin@example.com")),
                    "POST /app/api/v1/investigation/create",
                    "investigation",
                    None,
                );
                entry.request_id = Some(request_id.clone());
                tokio::spawn(async move {
                    let created = store
                        .create_investigation_audited(alert, force, Some(entry))
                        .await;
                    (request_id, created)
                })
            });
        let others: Vec<_> = (0..5)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move {
                    let entry = audit_entry(None, "cli apikey create", "api-key", None);
                    store.append_audit_entry(&entry).await
                })
            })
            .collect();
        for joined in futures_util::future::join_all(creates).await {
            match joined.unwrap() {
                (request_id, Ok(Created::New(id))) => answered.push((request_id, id, "new")),
                (request_id, Ok(Created::Existing(id))) => {
                    answered.push((request_id, id, "existing"));
                }
                (_, Err(_)) => {}
            }
        }
        for appended in futures_util::future::join_all(others).await {
            appended.unwrap().unwrap();
            appended_alone += 1;
        }
    }
    assert_eq!(
        answered.len(),
        66,
        "every create but the refused one answered"
    );
    assert_eq!(
        intact(&store.verify_audit_chain().await.unwrap()),
        66 + appended_alone
    );
    let listed = store
        .list_audit_entries(&AuditQuery {
            resource_types: vec!["investigation".into()],
            limit: 100,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    let mut audited: Vec<(String, i64, String)> = listed
        .items
        .iter()
        .map(|entry| {
            (
                entry.request_id.clone().unwrap(),
                entry.resource_id.as_deref().unwrap().parse().unwrap(),
                entry.detail["investigation"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut answered: Vec<(String, i64, String)> = answered
        .into_iter()
        .map(|(request_id, id, how)| (request_id, id, how.to_string()))
        .collect();
    audited.sort();
    answered.sort();
    assert_eq!(audited, answered);
}

pub async fn the_audit_log_refuses_updates_and_deletes(store: Arc<dyn Store>, raw: RawDatabase) {
    append_five(&store).await;
    assert!(
        raw.execute("UPDATE audit_log SET action = 'nothing' WHERE seq = 2")
            .await
            .is_err()
    );
    assert!(
        raw.execute("DELETE FROM audit_log WHERE seq = 2")
            .await
            .is_err()
    );
    assert_eq!(intact(&store.verify_audit_chain().await.unwrap()), 5);
}

pub async fn an_edited_audit_entry_is_detected(store: Arc<dyn Store>, raw: RawDatabase) {
    let appended = append_five(&store).await;
    raw.drop_append_only_guards().await;
    raw.execute("UPDATE audit_log SET actor_email = 'someone-else@example.com' WHERE seq = 2")
        .await
        .unwrap();
    assert_eq!(broken_at(&store.verify_audit_chain().await.unwrap()), 2);

    // Put it back: intact again. Then edit the detail, and rehash it to hide the edit:
    // the next entry's link gives it away.
    let original_email = appended[1].actor_email.clone().unwrap();
    raw.execute(&format!(
        "UPDATE audit_log SET actor_email = '{original_email}' WHERE seq = 2"
    ))
    .await
    .unwrap();
    assert_eq!(intact(&store.verify_audit_chain().await.unwrap()), 5);
    let mut forged = appended[2].clone();
    forged.detail = json!({"via": "nobody"});
    forged.hash = forged.expected_hash();
    raw.execute(&format!(
        "UPDATE audit_log SET detail = '{}', hash = '{}' WHERE seq = 3",
        canonical_json(&forged.detail),
        forged.hash
    ))
    .await
    .unwrap();
    assert_eq!(broken_at(&store.verify_audit_chain().await.unwrap()), 4);

    // A detail that is no longer JSON at all is named too.
    raw.execute("UPDATE audit_log SET detail = 'not json' WHERE seq = 1")
        .await
        .unwrap();
    assert_eq!(broken_at(&store.verify_audit_chain().await.unwrap()), 1);
}

pub async fn a_deleted_audit_entry_is_detected(store: Arc<dyn Store>, raw: RawDatabase) {
    append_five(&store).await;
    raw.drop_append_only_guards().await;
    raw.execute("DELETE FROM audit_log WHERE seq = 3")
        .await
        .unwrap();
    let verdict = store.verify_audit_chain().await.unwrap();
    assert_eq!(broken_at(&verdict), 4);
    let AuditVerdict::Broken { reason, .. } = verdict else {
        unreachable!()
    };
    assert!(reason.contains("entry 3 is missing"), "{reason}");

    // Cutting off the tail is detected by the chain head.
    raw.execute("DELETE FROM audit_log WHERE seq >= 3")
        .await
        .unwrap();
    assert_eq!(broken_at(&store.verify_audit_chain().await.unwrap()), 3);
}

pub async fn an_inserted_audit_entry_is_detected(store: Arc<dyn Store>, raw: RawDatabase) {
    let appended = append_five(&store).await;
    // Appended after the last entry, with a correct hash, but outside Sleuth: the chain
    // head does not know it.
    let mut forged = appended[4].clone();
    forged.seq = 6;
    forged.prev_hash = appended[4].hash.clone();
    forged.action = "POST /app/api/v1/forged".into();
    forged.hash = forged.expected_hash();
    let text = |value: Option<&str>| value.map_or("NULL".to_string(), |value| format!("'{value}'"));
    let insert = |entry: &AuditEntry| {
        format!(
            "INSERT INTO audit_log (seq, at, actor_user_id, actor_email, action, resource_type, \
             resource_id, request_id, detail, prev_hash, hash) VALUES ({}, {}, {}, {}, '{}', \
             '{}', {}, {}, '{}', '{}', '{}')",
            entry.seq,
            entry.at.timestamp_micros(),
            entry
                .actor_user_id
                .map_or("NULL".to_string(), |id| id.to_string()),
            text(entry.actor_email.as_deref()),
            entry.action,
            entry.resource_type,
            text(entry.resource_id.as_deref()),
            text(entry.request_id.as_deref()),
            canonical_json(&entry.detail),
            entry.prev_hash,
            entry.hash
        )
    };
    raw.execute(&insert(&forged)).await.unwrap();
    let verdict = store.verify_audit_chain().await.unwrap();
    assert_eq!(broken_at(&verdict), 6);
    let AuditVerdict::Broken { reason, .. } = verdict else {
        unreachable!()
    };
    assert!(reason.contains("beyond the chain head"), "{reason}");

    // Inserted in the middle: the numbers must move, so the hashes no longer match.
    raw.drop_append_only_guards().await;
    raw.execute("DELETE FROM audit_log WHERE seq = 6")
        .await
        .unwrap();
    assert_eq!(intact(&store.verify_audit_chain().await.unwrap()), 5);
    raw.execute("UPDATE audit_log SET seq = seq + 10 WHERE seq >= 3")
        .await
        .unwrap();
    raw.execute("UPDATE audit_log SET seq = seq - 9 WHERE seq >= 13")
        .await
        .unwrap();
    let mut wedged = appended[1].clone();
    wedged.seq = 3;
    wedged.prev_hash = appended[1].hash.clone();
    wedged.action = "POST /app/api/v1/wedged".into();
    wedged.hash = wedged.expected_hash();
    raw.execute(&insert(&wedged)).await.unwrap();
    let verdict = store.verify_audit_chain().await.unwrap();
    assert_eq!(broken_at(&verdict), 4);
    let AuditVerdict::Broken { reason, .. } = verdict else {
        unreachable!()
    };
    assert!(reason.contains("does not link"), "{reason}");
}
