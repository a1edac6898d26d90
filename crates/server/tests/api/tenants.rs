//! Users and keys bound to tenant unions, over HTTP on both backends: a bound key lists,
//! searches, counts, reads and writes only its unions' investigations, notes, feedback,
//! context memory, system events and audit entries; another union's object answers 404,
//! a create into another union 403; a key is never wider than its user; and what every
//! tenant shares needs an unbound admin.

use serde_json::{Value, json};

use crate::context_memory::tenant_union;
use crate::harness::{Answer, TestApp, assert_error};
use crate::on_both_backends;

on_both_backends!(
    a_bound_key_lists_searches_and_counts_only_its_unions,
    a_bound_key_reads_and_changes_no_other_unions_investigation,
    a_bound_key_creates_only_in_its_unions,
    a_bound_key_sees_only_its_unions_context_memory,
    a_bound_admin_sees_only_its_unions_events_and_audit_and_no_shared_configuration,
    a_bound_admin_sees_the_audit_of_notes_and_memory_of_its_unions_only,
    a_key_is_never_wider_than_its_user,
);

const USERS: &str = "/app/api/v1/users";
const KEYS: &str = "/app/api/v1/api-keys";
const INVESTIGATIONS: &str = "/app/api/v1/investigation";
const MEMORY: &str = "/app/api/v1/context-memory";

/// Two customers, Acme and Globex, with one concluded investigation each.
struct Customers {
    acme: i64,
    globex: i64,
    /// Acme's investigation.
    ours: i64,
    /// Globex's investigation.
    theirs: i64,
}

fn alert(word: &str, id: &str) -> Value {
    json!({
        "title": format!("Suspicious sign-in {word}"),
        "id": id,
        "source_ip": "198.51.100.9",
    })
}

/// Creates an alert in `union` with an unbound member key; answers the investigation id.
async fn create_in(app: &TestApp, union: i64, alert: &Value) -> i64 {
    let answer = app
        .post(
            &format!("{INVESTIGATIONS}/create"),
            &app.member_key,
            &json!({"raw_alert_content": alert, "tenant_union_id": union}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.json["investigation_id"].as_i64().unwrap()
}

async fn customers(app: &TestApp) -> Customers {
    let acme = tenant_union(app, "Acme").await;
    let globex = tenant_union(app, "Globex").await;
    let ours = create_in(app, acme, &alert("acmeword", "acme-1")).await;
    let theirs = create_in(app, globex, &alert("globexword", "globex-1")).await;
    assert_eq!(app.drain().await, 2);
    Customers {
        acme,
        globex,
        ours,
        theirs,
    }
}

/// A new user of `role` bound to `unions`, and a key of theirs made without naming unions.
pub(crate) async fn bound_key(app: &TestApp, email: &str, role: &str, unions: &[i64]) -> String {
    let user = app
        .post(
            USERS,
            &app.admin_key,
            &json!({"email": email, "role": role, "tenant_union_ids": unions}),
        )
        .await;
    assert_eq!(user.status, 201, "{}", user.text);
    assert_eq!(user.json["tenant_union_ids"], json!(unions));
    let key = app
        .post(
            KEYS,
            &app.admin_key,
            &json!({"user_id": user.json["id"], "name": "customer portal"}),
        )
        .await;
    assert_eq!(key.status, 201, "{}", key.text);
    assert_eq!(
        key.json["tenant_union_ids"],
        json!(unions),
        "a key made without unions takes its user's"
    );
    key.json["key"].as_str().unwrap().to_string()
}

fn listed_ids(page: &Value) -> Vec<i64> {
    page["results"]
        .as_array()
        .unwrap_or_else(|| panic!("a page: {page}"))
        .iter()
        .map(|item| item["id"].as_i64().unwrap())
        .collect()
}

fn ok(answer: Answer) -> Value {
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.json
}

async fn a_bound_key_lists_searches_and_counts_only_its_unions(app: TestApp) {
    let Customers {
        acme,
        globex,
        ours,
        theirs,
    } = customers(&app).await;
    // More of Globex, so that a count leaking it would be visibly wrong.
    create_in(&app, globex, &alert("globexword", "globex-2")).await;
    create_in(&app, globex, &alert("globexword", "globex-3")).await;
    assert_eq!(app.drain().await, 2);
    let reader = bound_key(
        &app,
        "acme-reader@example.com",
        "restricted-read-only",
        &[acme],
    )
    .await;

    let everything = ok(app.get(INVESTIGATIONS, &app.reader_key).await);
    assert_eq!(everything["count"], 4, "an unbound key sees every union");

    // Every way the list counts (kept combinations, rows under a time range, tag counts,
    // search, several states) keeps to Acme.
    for query in [
        "",
        "?limit=1",
        "?alert_create_from=2000-01-01T00:00:00Z",
        "?alert_create_from=2000-01-01T00:00:00Z&alert_create_until=2999-01-01T00:00:00Z&sort_type=inv_create",
        "?investigation_state=success&investigation_state=not_asked&investigation_state=error",
        "?sort_type=priority",
        "?search=sign",
        "?alert_tenants=Acme&alert_tenants=Globex",
    ] {
        let page = ok(app.get(&format!("{INVESTIGATIONS}{query}"), &reader).await);
        assert_eq!(page["count"], 1, "{query}: {page}");
        assert_eq!(listed_ids(&page), [ours], "{query}");
    }
    for query in ["?search=globexword", "?alert_tenants=Globex", "?offset=1"] {
        let page = ok(app.get(&format!("{INVESTIGATIONS}{query}"), &reader).await);
        assert!(listed_ids(&page).is_empty(), "{query}: {page}");
        if !query.starts_with("?offset") {
            assert_eq!(page["count"], 0, "{query}: {page}");
        }
    }
    let theirs_read = app
        .get(&format!("{INVESTIGATIONS}/{theirs}"), &reader)
        .await;
    assert_error(&theirs_read, 404, "not_found");
    // The list of tenant unions shows only the key's.
    let unions = ok(app.get("/app/api/v1/tenant-unions", &reader).await);
    let names: Vec<&str> = unions
        .as_array()
        .unwrap()
        .iter()
        .map(|union| union["display_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Acme"]);
    assert_error(
        &app.get(&format!("/app/api/v1/tenant-unions/{globex}"), &reader)
            .await,
        404,
        "not_found",
    );
}

async fn a_bound_key_reads_and_changes_no_other_unions_investigation(app: TestApp) {
    let Customers {
        acme,
        globex,
        ours,
        theirs,
    } = customers(&app).await;
    let reader = bound_key(
        &app,
        "acme-reader@example.com",
        "restricted-read-only",
        &[acme],
    )
    .await;
    let member = bound_key(&app, "acme-analyst@example.com", "member", &[acme]).await;
    let their_note = ok(app
        .post(
            &format!("/app/api/v1/investigation-user-notes/{theirs}/create"),
            &app.admin_key,
            &json!({"text": "Globex's own note"}),
        )
        .await)["id"]
        .as_i64()
        .unwrap();
    let queued = create_in(&app, globex, &alert("globexword", "globex-queued")).await;
    // Globex's investigation ran after Acme's on the same IP and detection, and knows
    // nothing of it: history keeps to a tenant union.
    let their_result = ok(app
        .get(&format!("{INVESTIGATIONS}/{theirs}"), &app.reader_key)
        .await);
    assert!(
        !their_result.to_string().contains("acmeword"),
        "{their_result}"
    );

    for (key, path) in [
        (&reader, format!("{INVESTIGATIONS}/{theirs}")),
        (&reader, format!("{INVESTIGATIONS}/{theirs}/revisions")),
        (&reader, format!("{INVESTIGATIONS}/{theirs}/feedback")),
        (
            &reader,
            format!("/app/api/v1/investigation-user-notes/{theirs}/list"),
        ),
        (&member, format!("{INVESTIGATIONS}/{theirs}")),
    ] {
        let answer = app.get(&path, key).await;
        assert_error(&answer, 404, "not_found");
        assert!(
            !answer.text.contains("globexword"),
            "{path}: {}",
            answer.text
        );
    }
    // The same reads of Acme's investigation work.
    for path in [
        format!("{INVESTIGATIONS}/{ours}"),
        format!("{INVESTIGATIONS}/{ours}/revisions"),
        format!("{INVESTIGATIONS}/{ours}/feedback"),
        format!("/app/api/v1/investigation-user-notes/{ours}/list"),
    ] {
        ok(app.get(&path, &reader).await);
    }
    // Writes to Globex's investigation answer as if it did not exist, and change nothing.
    let notes_path = "/app/api/v1/investigation-user-notes";
    for (method, path, body) in [
        (
            "POST",
            format!("{notes_path}/{theirs}/create"),
            json!({"text": "peeking"}),
        ),
        (
            "PATCH",
            format!("{INVESTIGATIONS}/{theirs}/feedback"),
            json!({"outcome": "COMPLETED_FALSE_ALERT"}),
        ),
        (
            "POST",
            format!("{INVESTIGATIONS}/{queued}/cancel"),
            json!({}),
        ),
        (
            "PATCH",
            format!("{notes_path}/{their_note}/update"),
            json!({"text": "overwritten"}),
        ),
        (
            "DELETE",
            format!("{notes_path}/{their_note}/delete"),
            json!({}),
        ),
    ] {
        let answer = app
            .raw(
                method,
                &path,
                Some(&member),
                Some("application/json"),
                Some(body.to_string().into_bytes()),
            )
            .await;
        assert_error(&answer, 404, "not_found");
    }
    let notes = ok(app
        .get(
            &format!("/app/api/v1/investigation-user-notes/{theirs}/list"),
            &app.reader_key,
        )
        .await);
    assert_eq!(notes.as_array().unwrap().len(), 1, "{notes}");
    assert_eq!(notes[0]["text"], "Globex's own note");
    let feedback = ok(app
        .get(
            &format!("{INVESTIGATIONS}/{theirs}/feedback"),
            &app.reader_key,
        )
        .await);
    assert_ne!(feedback["outcome"], "COMPLETED_FALSE_ALERT", "{feedback}");
    let still_queued = ok(app
        .get(&format!("{INVESTIGATIONS}/{queued}"), &app.reader_key)
        .await);
    assert_eq!(still_queued["status"], "not_asked");
    // Acme's member works on Acme's investigation as before.
    ok(app
        .post(
            &format!("/app/api/v1/investigation-user-notes/{ours}/create"),
            &member,
            &json!({"text": "checked with Acme"}),
        )
        .await);
}

async fn a_bound_key_creates_only_in_its_unions(app: TestApp) {
    let acme = tenant_union(&app, "Acme").await;
    let globex = tenant_union(&app, "Globex").await;
    let member = bound_key(&app, "acme-analyst@example.com", "member", &[acme]).await;
    let create = format!("{INVESTIGATIONS}/create");
    let custom = format!("{INVESTIGATIONS}/create/custom");
    let refused = [
        app.post(
            &create,
            &member,
            &json!({"raw_alert_content": alert("x", "a"), "tenant_union_id": globex}),
        )
        .await,
        // No union named: the default union, which Acme's key does not reach.
        app.post(
            &create,
            &member,
            &json!({"raw_alert_content": alert("x", "b")}),
        )
        .await,
        app.post(
            &format!("{custom}?tenant_union_id={globex}"),
            &member,
            &alert("x", "c"),
        )
        .await,
        app.post(&custom, &member, &alert("x", "d")).await,
        // A union that does not exist is refused alike: the answer tells nothing of it.
        app.post(
            &create,
            &member,
            &json!({"raw_alert_content": alert("x", "e"), "tenant_union_id": 999_999}),
        )
        .await,
    ];
    for answer in &refused {
        assert_error(answer, 403, "access_denied");
    }
    assert_eq!(
        app.store.pending_jobs().await.unwrap(),
        0,
        "nothing was stored"
    );
    let everything = ok(app
        .get(
            &format!("{INVESTIGATIONS}?investigation_state=not_asked"),
            &app.reader_key,
        )
        .await);
    assert_eq!(everything["count"], 0);

    let created = ok(app
        .post(
            &create,
            &member,
            &json!({"raw_alert_content": alert("x", "f"), "tenant_union_id": acme}),
        )
        .await);
    let id = created["investigation_id"].as_i64().unwrap();
    let custom_created = ok(app
        .post(
            &format!("{custom}?tenant_union_id={acme}"),
            &member,
            &alert("x", "g"),
        )
        .await);
    assert_ne!(custom_created["investigation_id"].as_i64().unwrap(), id);
    let read = ok(app.get(&format!("{INVESTIGATIONS}/{id}"), &member).await);
    assert_eq!(read["alert"]["tenant_union"]["id"], acme, "{read}");
}

async fn a_bound_key_sees_only_its_unions_context_memory(app: TestApp) {
    let acme = tenant_union(&app, "Acme").await;
    let globex = tenant_union(&app, "Globex").await;
    let reader = bound_key(
        &app,
        "acme-reader@example.com",
        "restricted-read-only",
        &[acme],
    )
    .await;
    let member = bound_key(&app, "acme-analyst@example.com", "member", &[acme]).await;
    let create = |body: Value| {
        let app = &app;
        async move {
            let answer = app
                .post(&format!("{MEMORY}/create"), &app.admin_key, &body)
                .await;
            assert_eq!(answer.status, 201, "{}", answer.text);
            answer.json["item_id"].as_i64().unwrap()
        }
    };
    let global = create(json!({"text": "203.0.113.7 is everyone's resolver"})).await;
    let ours = create(json!({"text": "wks-1 is Acme's jump host", "tenant_union_id": acme})).await;
    let theirs =
        create(json!({"text": "wks-2 is Globex's jump host", "tenant_union_id": globex})).await;
    let by_tenant_id = create(json!({"text": "wks-3 is a tenant's", "tenant_id": "eu"})).await;

    let all = ok(app.get(&format!("{MEMORY}/list"), &app.reader_key).await);
    assert_eq!(all["count"], 4);
    let ours_only = format!("?tenant_union_id={acme}");
    for query in ["", "?search=jump", "?limit=1", ours_only.as_str()] {
        let page = ok(app.get(&format!("{MEMORY}/list{query}"), &reader).await);
        assert_eq!(page["count"], 1, "{query}: {page}");
        assert_eq!(page["results"][0]["item_id"], ours, "{query}");
    }
    let theirs_only = format!("?tenant_union_id={globex}");
    for query in ["?global=true", "?tenant_id=eu", theirs_only.as_str()] {
        let page = ok(app.get(&format!("{MEMORY}/list{query}"), &reader).await);
        assert_eq!(page["count"], 0, "{query}: {page}");
    }
    for item in [global, theirs, by_tenant_id] {
        assert_error(
            &app.raw(
                "PUT",
                &format!("{MEMORY}/update/{item}"),
                Some(&member),
                Some("application/json"),
                Some(br#"{"text": "rewritten"}"#.to_vec()),
            )
            .await,
            404,
            "not_found",
        );
        assert_error(
            &app.raw(
                "DELETE",
                &format!("{MEMORY}/delete/{item}"),
                Some(&member),
                None,
                None,
            )
            .await,
            404,
            "not_found",
        );
    }
    for body in [
        json!({"text": "global from Acme"}),
        json!({"text": "into Globex", "tenant_union_id": globex}),
        json!({"text": "by tenant id", "tenant_id": "eu"}),
    ] {
        assert_error(
            &app.post(&format!("{MEMORY}/create"), &member, &body).await,
            403,
            "access_denied",
        );
    }
    let own = app
        .post(
            &format!("{MEMORY}/create"),
            &member,
            &json!({"text": "wks-9 is Acme's build box", "tenant_union_id": acme}),
        )
        .await;
    assert_eq!(own.status, 201, "{}", own.text);
    let own = own.json["item_id"].as_i64().unwrap();
    // Moving one's own item out of reach is refused too.
    assert_error(
        &app.raw(
            "PUT",
            &format!("{MEMORY}/update/{own}"),
            Some(&member),
            Some("application/json"),
            Some(format!(r#"{{"tenant_union_id": {globex}}}"#).into_bytes()),
        )
        .await,
        403,
        "access_denied",
    );
    let all = ok(app.get(&format!("{MEMORY}/list"), &app.reader_key).await);
    assert_eq!(all["count"], 5, "nothing was deleted or moved: {all}");
    let texts = all.to_string();
    assert!(!texts.contains("rewritten"));
}

async fn a_bound_admin_sees_only_its_unions_events_and_audit_and_no_shared_configuration(
    app: TestApp,
) {
    let Customers {
        acme, ours, theirs, ..
    } = customers(&app).await;
    let admin = bound_key(&app, "acme-admin@example.com", "admin", &[acme]).await;

    // System events: an unbound admin sees both investigations' events; Acme's admin only
    // Acme's, and none about users or keys.
    let everything = ok(app
        .get("/app/api/v1/system-events/list?limit=1000", &app.admin_key)
        .await);
    let about = |page: &Value| -> Vec<Option<i64>> {
        page["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|event| event["investigation_id"].as_i64())
            .collect()
    };
    assert!(about(&everything).contains(&Some(theirs)), "{everything}");
    let scoped = ok(app
        .get("/app/api/v1/system-events/list?limit=1000", &admin)
        .await);
    let scoped_about = about(&scoped);
    assert!(!scoped_about.is_empty(), "Acme's events are listed");
    assert!(scoped_about.iter().all(|id| *id == Some(ours)), "{scoped}");
    assert_eq!(
        scoped["count"].as_u64().unwrap(),
        scoped_about.len() as u64,
        "the count keeps to Acme too"
    );

    // The audit log: entries about Acme's investigation only.
    let entries = ok(app.get("/app/api/v1/audit-log?limit=1000", &admin).await);
    let results = entries["results"].as_array().unwrap();
    assert!(!results.is_empty(), "{entries}");
    assert_eq!(entries["count"].as_u64().unwrap(), results.len() as u64);
    for entry in results {
        assert_eq!(entry["resource_type"], "investigation", "{entry}");
        assert_eq!(entry["resource_id"], ours.to_string(), "{entry}");
    }
    let unbound = ok(app
        .get("/app/api/v1/audit-log?limit=1000", &app.admin_key)
        .await);
    assert!(
        unbound["count"].as_u64().unwrap() > entries["count"].as_u64().unwrap(),
        "{unbound}"
    );
    assert_error(
        &app.get("/app/api/v1/audit-log/export", &admin).await,
        403,
        "access_denied",
    );

    // What every tenant shares needs an unbound admin.
    for path in [
        USERS,
        KEYS,
        "/app/api/v1/response-actions",
        "/app/api/v1/custom-strategies",
        "/app/api/v1/context",
    ] {
        assert_error(&app.get(path, &admin).await, 403, "access_denied");
    }
    assert_error(
        &app.post(
            USERS,
            &admin,
            &json!({"email": "escalate@example.com", "role": "admin"}),
        )
        .await,
        403,
        "access_denied",
    );
    assert_error(
        &app.post(
            "/app/api/v1/tenant-unions",
            &admin,
            &json!({"display_name": "Initech"}),
        )
        .await,
        403,
        "access_denied",
    );
}

/// Notes and context memory items lie in a tenant union too: an admin bound to Acme sees
/// the audit of every change to Acme's (a note named by its own id, a deleted one too), and
/// nothing of Globex's.
async fn a_bound_admin_sees_the_audit_of_notes_and_memory_of_its_unions_only(app: TestApp) {
    let Customers {
        acme,
        globex,
        ours,
        theirs,
    } = customers(&app).await;
    let admin = bound_key(&app, "acme-admin@example.com", "admin", &[acme]).await;
    let mut note_ids = Vec::new();
    for investigation in [ours, theirs] {
        let note = ok(app
            .post(
                &format!("/app/api/v1/investigation-user-notes/{investigation}/create"),
                &app.member_key,
                &json!({"text": "Called the user"}),
            )
            .await);
        let note_id = note["id"].as_i64().unwrap();
        let changed = app
            .patch(
                &format!("/app/api/v1/investigation-user-notes/{note_id}/update"),
                &app.member_key,
                &json!({"text": "Called the user twice"}),
            )
            .await;
        assert_eq!(changed.status, 200, "{}", changed.text);
        let deleted = app
            .raw(
                "DELETE",
                &format!("/app/api/v1/investigation-user-notes/{note_id}/delete"),
                Some(&app.member_key),
                None,
                None,
            )
            .await;
        assert_eq!(deleted.status, 200, "{}", deleted.text);
        note_ids.push(note_id);
    }
    let mut item_ids = Vec::new();
    for union in [acme, globex] {
        let item = app
            .post(
                &format!("{MEMORY}/create"),
                &app.member_key,
                &json!({"text": "wks-9 is the lab's scanner", "tenant_union_id": union}),
            )
            .await;
        assert_eq!(item.status, 201, "{}", item.text);
        item_ids.push(item.json["item_id"].as_i64().unwrap());
    }

    let listed = |page: &Value| -> Vec<(String, String)> {
        page["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| {
                (
                    entry["action"].as_str().unwrap().to_string(),
                    entry["resource_id"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    let notes = ok(app
        .get(
            "/app/api/v1/audit-log?limit=1000&resource_type=investigation-user-notes",
            &admin,
        )
        .await);
    let note = note_ids[0].to_string();
    assert_eq!(
        listed(&notes),
        [
            (
                "DELETE /app/api/v1/investigation-user-notes/{note_id}/delete".to_string(),
                note.clone()
            ),
            (
                "PATCH /app/api/v1/investigation-user-notes/{note_id}/update".to_string(),
                note
            ),
            (
                "POST /app/api/v1/investigation-user-notes/{investigation_id}/create".to_string(),
                ours.to_string()
            ),
        ],
        "{notes}"
    );
    assert_eq!(notes["count"], 3);
    let memory = ok(app
        .get(
            "/app/api/v1/audit-log?limit=1000&resource_type=context-memory",
            &admin,
        )
        .await);
    assert_eq!(
        listed(&memory),
        [(
            "POST /app/api/v1/context-memory/create".to_string(),
            item_ids[0].to_string()
        )],
        "{memory}"
    );
    // An admin bound to no union sees all of it.
    let unbound = ok(app
        .get(
            "/app/api/v1/audit-log?limit=1000&resource_type=investigation-user-notes",
            &app.admin_key,
        )
        .await);
    assert_eq!(unbound["count"], 6, "{unbound}");
}

async fn a_key_is_never_wider_than_its_user(app: TestApp) {
    let acme = tenant_union(&app, "Acme").await;
    let globex = tenant_union(&app, "Globex").await;
    let user = app
        .post(
            USERS,
            &app.admin_key,
            &json!({"email": "analyst@example.com", "role": "member", "tenant_union_ids": [acme]}),
        )
        .await;
    assert_eq!(user.status, 201, "{}", user.text);
    let user_id = user.json["id"].as_i64().unwrap();
    for ids in [json!([acme, globex]), json!([globex])] {
        let answer = app
            .post(
                KEYS,
                &app.admin_key,
                &json!({"user_id": user_id, "name": "wide", "tenant_union_ids": ids}),
            )
            .await;
        assert_error(&answer, 400, "bad_request");
    }
    for (body, field) in [
        (
            json!({"email": "a@example.com", "role": "member", "tenant_union_ids": []}),
            "tenant_union_ids",
        ),
        (
            json!({"email": "b@example.com", "role": "member", "tenant_union_ids": [0]}),
            "tenant_union_ids",
        ),
        (
            json!({"email": "c@example.com", "role": "member", "tenant_union_ids": ["one"]}),
            "",
        ),
    ] {
        let answer = app.post(USERS, &app.admin_key, &body).await;
        assert_error(&answer, 400, "bad_request");
        if !field.is_empty() {
            assert!(answer.json["errors"][field].is_array(), "{}", answer.text);
        }
    }
    let unknown = app
        .post(
            USERS,
            &app.admin_key,
            &json!({"email": "d@example.com", "role": "member", "tenant_union_ids": [999_999]}),
        )
        .await;
    assert_error(&unknown, 400, "bad_request");
    let listed = ok(app.get(USERS, &app.admin_key).await);
    assert!(
        !listed.to_string().contains("d@example.com"),
        "a refused user is not created"
    );

    // An unbound user's unbound key; binding the user narrows the key at once.
    let (other_id, key) = {
        let user = app
            .post(
                USERS,
                &app.admin_key,
                &json!({"email": "ops@example.com", "role": "restricted-read-only"}),
            )
            .await;
        assert_eq!(user.json["tenant_union_ids"], Value::Null);
        let id = user.json["id"].as_i64().unwrap();
        let key = app
            .post(KEYS, &app.admin_key, &json!({"user_id": id, "name": "ops"}))
            .await;
        assert_eq!(key.json["tenant_union_ids"], Value::Null);
        (id, key.json["key"].as_str().unwrap().to_string())
    };
    create_in(&app, acme, &alert("acmeword", "acme-1")).await;
    create_in(&app, globex, &alert("globexword", "globex-1")).await;
    assert_eq!(app.drain().await, 2);
    let count = |key: String| {
        let app = &app;
        async move {
            ok(app.get(INVESTIGATIONS, &key).await)["count"]
                .as_u64()
                .unwrap()
        }
    };
    assert_eq!(count(key.clone()).await, 2);
    let bound = ok(app
        .patch(
            &format!("{USERS}/{other_id}"),
            &app.admin_key,
            &json!({"tenant_union_ids": [globex]}),
        )
        .await);
    assert_eq!(bound["tenant_union_ids"], json!([globex]));
    assert_eq!(
        count(key.clone()).await,
        1,
        "the key is narrowed with its user"
    );
    let unbound = ok(app
        .patch(
            &format!("{USERS}/{other_id}"),
            &app.admin_key,
            &json!({"tenant_union_ids": null}),
        )
        .await);
    assert_eq!(unbound["tenant_union_ids"], Value::Null);
    assert_eq!(count(key).await, 2);
    // Keys list their binding.
    let keys = ok(app.get(KEYS, &app.admin_key).await);
    assert!(
        keys.as_array()
            .unwrap()
            .iter()
            .all(|key| key.get("tenant_union_ids").is_some()),
        "{keys}"
    );
}
