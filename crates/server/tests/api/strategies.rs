//! Custom strategies over HTTP: every endpoint and its errors, versioning, the protected
//! strategy Sleuth ships, strategies firing for real on investigations (outcome, priority,
//! counters), and backtesting that changes nothing.

use serde_json::{Value, json};

use crate::harness::{Answer, TestApp, assert_error};
use crate::on_both_backends;
use crate::shapes::assert_strategy;

on_both_backends!(
    every_endpoint_is_for_admins_only,
    strategies_are_created_read_listed_and_paged,
    every_bound_and_enum_is_checked,
    unknown_strategies_are_404,
    each_change_is_a_new_version_and_old_versions_stay_readable,
    enabling_disabling_and_archiving,
    the_shipped_strategy_is_protected,
    a_matching_outcome_rule_decides_the_outcome_and_counts,
    the_lowest_ranking_priority_rule_wins_and_disabled_or_archived_strategies_do_nothing,
    backtesting_reports_what_a_draft_would_change_and_writes_nothing,
    a_change_through_one_process_applies_to_the_next_investigation_of_another,
);

const BASE: &str = "/app/api/v1/custom-strategies";
const BACKTEST: &str = "/app/api/v1/custom-strategies/backtest";
const CROWDSTRIKE: &str = "crowdstrike/lsass_dump_via_comsvcs_on_cfo_laptop.json";
const OKTA: &str = "okta/new_device_sign_in_via_corporate_vpn.json";

fn path(strategy_id: impl std::fmt::Display, rest: &str) -> String {
    format!("{BASE}/{strategy_id}{rest}")
}

/// The alert of a corpus case.
fn corpus_alert(case: &str) -> Value {
    let text = std::fs::read_to_string(format!(
        "{}/../../corpus/alerts/{case}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("corpus case");
    let case: Value = serde_json::from_str(&text).expect("corpus case is JSON");
    case["alert"].clone()
}

/// The CrowdStrike case as a new detection (its own id and story, so it is neither a
/// duplicate nor coalesced into the first one).
fn fresh_crowdstrike(tag: &str) -> Value {
    let mut alert = corpus_alert(CROWDSTRIKE);
    alert["composite_id"] = json!(format!("composite-{tag}"));
    alert["aggregate_id"] = json!(format!("aggregate-{tag}"));
    alert
}

/// A strategy body whose one outcome rule turns alerts of `schema_key` into `outcome`.
fn outcome_strategy(title: &str, schema_key: &str, outcome: &str) -> Value {
    json!({
        "title": title,
        "scenario": "Tested by the HTTP suite",
        "instructions": [{"content": "Call the asset owner first"}],
        "outcomes": [{
            "condition": {"==": [{"var": "alert.schema_key"}, schema_key]},
            "outcome": outcome
        }],
    })
}

fn priority_rule(priority: &str, ranking: i64) -> Value {
    json!({
        "priority": priority,
        "ranking": ranking,
        "outcomes": ["COMPLETED_BREACHED_CONFIRMED", "COMPLETED_BREACHED_SUSPICIOUS", "INCOMPLETE"]
    })
}

async fn create(app: &TestApp, body: &Value) -> Value {
    let answer = app.post(BASE, &app.admin_key, body).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    assert_strategy(&answer.json);
    answer.json
}

async fn read(app: &TestApp, strategy_id: i64) -> Value {
    let answer = app.get(&path(strategy_id, ""), &app.admin_key).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_strategy(&answer.json);
    answer.json
}

async fn post_empty(app: &TestApp, path: &str, key: Option<&str>) -> Answer {
    app.raw("POST", path, key, None, None).await
}

/// PATCH, enable, disable and archive of this strategy all answer this error.
async fn every_change_is_refused(
    app: &TestApp,
    strategy_id: impl std::fmt::Display,
    status: u16,
    code: &str,
) {
    let strategy_id = strategy_id.to_string();
    let answer = app
        .patch(
            &path(&strategy_id, ""),
            &app.admin_key,
            &json!({"title": "x"}),
        )
        .await;
    assert_error(&answer, status, code);
    for action in ["/enable", "/disable", "/archive"] {
        let answer = post_empty(app, &path(&strategy_id, action), Some(&app.admin_key)).await;
        assert_error(&answer, status, code);
    }
}

/// Investigates a corpus alert through the API and answers the concluded investigation.
async fn investigate(app: &TestApp, case: &str) -> Value {
    investigate_alert(app, &corpus_alert(case)).await
}

/// Investigates an alert through the API and answers the concluded investigation.
async fn investigate_alert(app: &TestApp, alert: &Value) -> Value {
    let investigation_id = app.create(alert).await;
    app.drain().await;
    let answer = app
        .get(
            &format!("/app/api/v1/investigation/{investigation_id}"),
            &app.reader_key,
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json["status"], "success", "{}", answer.text);
    answer.json
}

/// Enables, disables or archives a strategy, which must answer 204 with no body.
async fn act(app: &TestApp, strategy_id: impl std::fmt::Display, action: &str) {
    let answer = post_empty(app, &path(strategy_id, action), Some(&app.admin_key)).await;
    assert_eq!(answer.status, 204, "{action}: {}", answer.text);
    assert!(answer.text.is_empty());
}

/// The list item of an investigation (it carries `custom_outcome`).
async fn list_item(app: &TestApp, investigation_id: i64) -> Value {
    let answer = app
        .get("/app/api/v1/investigation?limit=1000", &app.reader_key)
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.json["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["id"] == investigation_id)
        .cloned()
        .expect("the investigation is listed")
}

async fn list(app: &TestApp, query: &str) -> Value {
    let answer = app.get(&format!("{BASE}{query}"), &app.admin_key).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    answer.json
}

fn ids(page: &Value) -> Vec<i64> {
    page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_i64().unwrap())
        .collect()
}

/// The shipped strategy's id (it is created before any other).
async fn shipped(app: &TestApp) -> Value {
    let page = list(app, "").await;
    page["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["is_protected"] == true)
        .cloned()
        .expect("the shipped strategy is listed")
}

async fn every_endpoint_is_for_admins_only(app: TestApp) {
    let created = create(
        &app,
        &outcome_strategy("Mine", "okta_system_log_event", "COMPLETED_FALSE_ALERT"),
    )
    .await;
    let strategy_id = created["id"].as_i64().unwrap();
    let body = outcome_strategy("Other", "okta_system_log_event", "COMPLETED_FALSE_ALERT");
    let backtest = json!({"strategy": body, "from": "2026-01-01", "until": "2026-12-31"});
    let requests: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", BASE.to_string(), None),
        ("POST", BASE.to_string(), Some(body.clone())),
        ("GET", path(strategy_id, ""), None),
        ("PATCH", path(strategy_id, ""), Some(json!({"title": "x"}))),
        ("GET", path(strategy_id, "/versions"), None),
        ("POST", path(strategy_id, "/enable"), None),
        ("POST", path(strategy_id, "/disable"), None),
        ("POST", path(strategy_id, "/archive"), None),
        ("POST", BACKTEST.to_string(), Some(backtest)),
    ];
    for (method, target, body) in &requests {
        let bytes = body.as_ref().map(|body| body.to_string().into_bytes());
        let content_type = body.as_ref().map(|_| "application/json");
        for key in [&app.member_key, &app.reader_key] {
            let answer = app
                .raw(method, target, Some(key), content_type, bytes.clone())
                .await;
            assert_error(&answer, 403, "access_denied");
        }
        let answer = app
            .raw(method, target, None, content_type, bytes.clone())
            .await;
        assert_error(&answer, 401, "unauthorized");
        let answer = app
            .raw(
                method,
                target,
                Some("sleuth_not_a_key"),
                content_type,
                bytes.clone(),
            )
            .await;
        assert_error(&answer, 401, "unauthorized");
    }
    // Nothing the refused calls sent took effect.
    let after = read(&app, strategy_id).await;
    assert_eq!(after, created);
    assert_eq!(list(&app, "").await["count"], 2, "the shipped one and mine");
}

async fn strategies_are_created_read_listed_and_paged(app: TestApp) {
    let body = json!({
        "title": "  Frankfurt VPN  ",
        "scenario": "Sign-ins through the Frankfurt VPN egress are staff",
        "alert_sources": ["okta_system_log_event", "Okta"],
        "attack_surfaces": ["identity"],
        "mitre_tactics": ["TA0001"],
        "instructions": [{"content": "Check the travel calendar"}],
        "outcomes": [{"condition": {"in": ["vpn", {"var": "insight_tags"}]}, "outcome": "COMPLETED_FALSE_ALERT"}],
        "priorities": [{"priority": "notable", "ranking": 7, "outcomes": ["COMPLETED_BREACHED_SUSPICIOUS"], "insight_tag_rule": {"in": ["vip", {"var": "insight_tags"}]}}]
    });
    let created = create(&app, &body).await;
    assert_eq!(created["title"], "Frankfurt VPN");
    assert_eq!(
        created["alert_sources"],
        json!(["okta_system_log_event", "Okta"])
    );
    assert_eq!(created["attack_surfaces"], json!(["Identity"]));
    assert_eq!(created["mitre_tactics"], json!(["Initial Access"]));
    assert_eq!(created["is_enabled"], true);
    assert_eq!(created["is_latest"], true);
    assert_eq!(created["is_archived"], false);
    assert_eq!(created["is_protected"], false);
    let version_id = created["version_id"].as_i64().unwrap();
    for kind in ["instructions", "outcomes", "priorities"] {
        assert_eq!(
            created[kind][0]["strategy_versions"],
            json!([version_id]),
            "{kind}"
        );
        assert!(created[kind][0]["internal_origin_uuid"].is_null(), "{kind}");
    }
    assert_eq!(created["priorities"][0]["ranking"], 7);
    assert_eq!(created["outcomes"][0]["conclusions_affected"], 0);
    assert_eq!(created["instructions"][0]["usage_count"], 0);
    let strategy_id = created["id"].as_i64().unwrap();
    assert_eq!(read(&app, strategy_id).await, created);

    // A disabled one at creation, and the list's filters and pages.
    let mut disabled_body =
        outcome_strategy("Off", "okta_system_log_event", "COMPLETED_FALSE_ALERT");
    disabled_body["is_enabled"] = json!(false);
    let disabled = create(&app, &disabled_body).await;
    assert_eq!(disabled["is_enabled"], false);
    let builtin = shipped(&app).await;
    assert_strategy(&builtin);
    let builtin_id = builtin["id"].as_i64().unwrap();
    let disabled_id = disabled["id"].as_i64().unwrap();

    let everything = list(&app, "").await;
    assert_eq!(everything["count"], 3);
    assert_eq!(ids(&everything), [builtin_id, strategy_id, disabled_id]);
    for item in everything["results"].as_array().unwrap() {
        assert_strategy(item);
    }
    assert_eq!(ids(&list(&app, "?is_enabled=false").await), [disabled_id]);
    assert_eq!(
        ids(&list(&app, "?is_enabled=true").await),
        [builtin_id, strategy_id]
    );
    assert_eq!(
        ids(&list(&app, "?is_archived=true").await),
        Vec::<i64>::new()
    );

    let first = list(&app, "?limit=2&is_enabled=").await;
    assert_eq!(ids(&first), [builtin_id, strategy_id]);
    assert!(first["previous"].is_null());
    let next = first["next"].as_str().unwrap();
    assert!(next.ends_with("limit=2&offset=2"), "{next}");
    let second_path = next.split_once(&app.address).unwrap().1;
    let second = app.get(second_path, &app.admin_key).await;
    assert_eq!(ids(&second.json), [disabled_id]);
    assert!(second.json["next"].is_null());
    assert!(
        second.json["previous"]
            .as_str()
            .unwrap()
            .ends_with("limit=2&offset=0")
    );
    assert_error(
        &app.get(&format!("{BASE}?limit=0"), &app.admin_key).await,
        400,
        "bad_request",
    );
    assert_error(
        &app.get(&format!("{BASE}?is_archived=maybe"), &app.admin_key)
            .await,
        400,
        "bad_request",
    );
}

async fn every_bound_and_enum_is_checked(app: TestApp) {
    let base = json!({"title": "Bounds"});
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"priorities": [priority_rule("urgent", 0)]}),
            "priorities[0].ranking",
        ),
        (
            json!({"priorities": [priority_rule("urgent", 2_147_483_648)]}),
            "priorities[0].ranking",
        ),
        (
            json!({"priorities": [priority_rule("urgent", -5)]}),
            "priorities[0].ranking",
        ),
        (
            json!({"priorities": [{"priority": "urgent", "ranking": 1, "outcomes": []}]}),
            "priorities[0].outcomes",
        ),
        (
            json!({"priorities": [{"priority": "urgent", "ranking": 1}]}),
            "priorities[0].outcomes",
        ),
        (
            json!({"priorities": [{"priority": "urgent", "ranking": 1, "outcomes": ["NOT_AN_OUTCOME"]}]}),
            "priorities[0].outcomes[0]",
        ),
        (
            json!({"priorities": [priority_rule("critical", 1)]}),
            "priorities[0].priority",
        ),
        (
            json!({"priorities": [{"priority": "urgent", "ranking": 1, "outcomes": ["INCOMPLETE"], "insight_tag_rule": {"bogus_operator": []}}]}),
            "priorities[0].insight_tag_rule",
        ),
        (
            json!({"outcomes": [{"condition": {"no_such_operator": [1]}, "outcome": "COMPLETED_FALSE_ALERT"}]}),
            "outcomes[0].condition",
        ),
        (
            json!({"outcomes": [{"condition": "true", "outcome": "COMPLETED_FALSE_ALERT"}]}),
            "outcomes[0].condition",
        ),
        (
            json!({"outcomes": [{"condition": {}, "outcome": "COMPLETED_FALSE_ALERT"}]}),
            "outcomes[0].condition",
        ),
        (
            json!({"outcomes": [{"condition": {"==": [1, 1]}, "outcome": "IGNORED"}]}),
            "outcomes[0].outcome",
        ),
        (
            json!({"outcomes": [{"condition": {"==": [1, 1]}}]}),
            "outcomes[0].outcome",
        ),
        (
            json!({"instructions": [{"content": ""}]}),
            "instructions[0].content",
        ),
        (
            json!({"alert_sources": ["Not A Product"]}),
            "alert_sources[0]",
        ),
        (
            json!({"attack_surfaces": ["Mainframe"]}),
            "attack_surfaces[0]",
        ),
        (
            json!({"mitre_tactics": ["Teleportation"]}),
            "mitre_tactics[0]",
        ),
        (json!({"title": ""}), "title"),
        (json!({"title": "x".repeat(256)}), "title"),
        (json!({"title": null}), "title"),
    ];
    for (extra, field) in cases {
        let mut body = base.clone();
        for (key, value) in extra.as_object().unwrap() {
            body[key] = value.clone();
        }
        if body["title"].is_null() {
            body.as_object_mut().unwrap().remove("title");
        }
        let answer = app.post(BASE, &app.admin_key, &body).await;
        assert_error(&answer, 400, "bad_request");
        assert!(
            answer.json["errors"].get(field).is_some(),
            "{body}: expected an error on {field}: {}",
            answer.text
        );
    }
    // The bounds themselves are accepted.
    let edges = create(
        &app,
        &json!({"title": "Edges", "priorities": [priority_rule("urgent", 1), priority_rule("notable", 2_147_483_647)]}),
    )
    .await;
    assert_eq!(edges["priorities"][1]["ranking"], 2_147_483_647);

    // Shapes that are not a strategy at all.
    for (content_type, body) in [
        ("application/json", b"{\"title\": ".to_vec()),
        ("application/json", b"[]".to_vec()),
        ("application/json", b"{\"title\": \"x\", \"unknown\": 1}".to_vec()),
        ("application/json", b"{\"title\": 5}".to_vec()),
        ("application/json", b"{\"title\": \"x\", \"priorities\": [{\"priority\": \"urgent\", \"ranking\": 1.5, \"outcomes\": [\"INCOMPLETE\"]}]}".to_vec()),
        ("text/plain", b"{\"title\": \"x\"}".to_vec()),
    ] {
        let answer = app
            .raw("POST", BASE, Some(&app.admin_key), Some(content_type), Some(body))
            .await;
        assert_error(&answer, 400, "bad_request");
    }
    // An empty PATCH, and one that tries to enable through PATCH.
    let strategy_id = edges["id"].as_i64().unwrap();
    assert_error(
        &app.patch(&path(strategy_id, ""), &app.admin_key, &json!({}))
            .await,
        400,
        "bad_request",
    );
    assert_error(
        &app.patch(
            &path(strategy_id, ""),
            &app.admin_key,
            &json!({"is_enabled": false}),
        )
        .await,
        400,
        "bad_request",
    );
    assert_error(
        &app.patch(
            &path(strategy_id, ""),
            &app.admin_key,
            &json!({"priorities": [priority_rule("urgent", 0)]}),
        )
        .await,
        400,
        "bad_request",
    );
    assert_eq!(
        list(&app, "").await["count"],
        2,
        "only the shipped one and Edges exist"
    );
    assert_eq!(
        read(&app, strategy_id).await,
        edges,
        "refused changes change nothing"
    );
}

async fn unknown_strategies_are_404(app: TestApp) {
    for strategy_id in ["999999", "abc", "0", "-1"] {
        assert_error(
            &app.get(&path(strategy_id, ""), &app.admin_key).await,
            404,
            "not_found",
        );
        assert_error(
            &app.get(&path(strategy_id, "/versions"), &app.admin_key)
                .await,
            404,
            "not_found",
        );
        every_change_is_refused(&app, strategy_id, 404, "not_found").await;
    }
    let answer = app
        .post(
            BACKTEST,
            &app.admin_key,
            &json!({"strategy_id": 999_999, "from": "2026-01-01", "until": "2026-12-31"}),
        )
        .await;
    assert_error(&answer, 404, "not_found");
}

async fn each_change_is_a_new_version_and_old_versions_stay_readable(app: TestApp) {
    let first = create(
        &app,
        &outcome_strategy(
            "Versioned",
            "okta_system_log_event",
            "COMPLETED_FALSE_ALERT",
        ),
    )
    .await;
    let strategy_id = first["id"].as_i64().unwrap();
    let first_version = first["version_id"].as_i64().unwrap();

    // A change of title and priorities: a new version; rules left alone are shared.
    let answer = app
        .patch(
            &path(strategy_id, ""),
            &app.admin_key,
            &json!({"title": "Versioned, edited", "priorities": [priority_rule("urgent", 3)]}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let second = answer.json;
    assert_strategy(&second);
    let second_version = second["version_id"].as_i64().unwrap();
    assert_ne!(second_version, first_version);
    assert_eq!(second["id"], strategy_id);
    assert_eq!(second["is_latest"], true);
    assert_eq!(second["title"], "Versioned, edited");
    assert_eq!(second["scenario"], first["scenario"], "left out: kept");
    assert_eq!(second["outcomes"][0]["id"], first["outcomes"][0]["id"]);
    assert_eq!(
        second["outcomes"][0]["strategy_versions"],
        json!([first_version, second_version])
    );
    assert_eq!(
        second["priorities"][0]["strategy_versions"],
        json!([second_version])
    );
    assert_eq!(read(&app, strategy_id).await, second);

    // An edited rule is a new rule; one kept by id stays; null clears the scenario.
    let instruction_id = second["instructions"][0]["id"].as_i64().unwrap();
    let answer = app
        .patch(
            &path(strategy_id, ""),
            &app.admin_key,
            &json!({
                "scenario": null,
                "instructions": [{"id": instruction_id, "content": "Call the asset owner first"}, {"content": "Then the manager"}],
                "outcomes": [{"condition": {"==": [{"var": "alert.source"}, "Okta"]}, "outcome": "COMPLETED_BREACHED_SUSPICIOUS"}]
            }),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let third = answer.json;
    assert!(third["scenario"].is_null());
    assert_eq!(third["instructions"][0]["id"], instruction_id);
    assert_eq!(third["instructions"].as_array().unwrap().len(), 2);
    assert_ne!(third["outcomes"][0]["id"], first["outcomes"][0]["id"]);
    let third_version = third["version_id"].as_i64().unwrap();

    // A PATCH that says what the latest says makes no version.
    let answer = app
        .patch(
            &path(strategy_id, ""),
            &app.admin_key,
            &json!({"title": "Versioned, edited"}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json["version_id"], third_version);

    // Every version stays readable, newest first, only the newest latest.
    let answer = app
        .get(&path(strategy_id, "/versions"), &app.admin_key)
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let versions = answer.json.as_array().unwrap().clone();
    assert_eq!(
        versions
            .iter()
            .map(|version| (
                version["version_id"].as_i64().unwrap(),
                version["is_latest"].as_bool().unwrap()
            ))
            .collect::<Vec<_>>(),
        [
            (third_version, true),
            (second_version, false),
            (first_version, false)
        ]
    );
    for version in &versions {
        assert_strategy(version);
    }
    assert_eq!(versions[2]["title"], "Versioned");
    assert_eq!(
        versions[2]["outcomes"][0]["outcome"],
        "COMPLETED_FALSE_ALERT"
    );
    assert!(versions[2]["priorities"].as_array().unwrap().is_empty());

    // A rule id of another strategy is refused.
    let other = create(
        &app,
        &outcome_strategy("Other", "okta_system_log_event", "COMPLETED_FALSE_ALERT"),
    )
    .await;
    let answer = app
        .patch(
            &path(strategy_id, ""),
            &app.admin_key,
            &json!({"outcomes": [{"id": other["outcomes"][0]["id"], "condition": {"==": [1, 1]}, "outcome": "COMPLETED_FALSE_ALERT"}]}),
        )
        .await;
    assert_error(&answer, 400, "bad_request");
    assert_eq!(read(&app, strategy_id).await["version_id"], third_version);
}

async fn enabling_disabling_and_archiving(app: TestApp) {
    let created = create(
        &app,
        &outcome_strategy("Standing", "okta_system_log_event", "COMPLETED_FALSE_ALERT"),
    )
    .await;
    let strategy_id = created["id"].as_i64().unwrap();
    let version_id = created["version_id"].clone();

    for (action, enabled) in [
        ("/disable", false),
        ("/disable", false),
        ("/enable", true),
        ("/enable", true),
    ] {
        act(&app, strategy_id, action).await;
        let now = read(&app, strategy_id).await;
        assert_eq!(now["is_enabled"], enabled, "{action}");
        assert_eq!(now["version_id"], version_id, "standing is not a version");
    }

    act(&app, strategy_id, "/archive").await;
    let archived = read(&app, strategy_id).await;
    assert_eq!(archived["is_archived"], true);
    assert!(!ids(&list(&app, "").await).contains(&strategy_id));
    assert_eq!(ids(&list(&app, "?is_archived=true").await), [strategy_id]);
    // Archived is final.
    assert_error(
        &post_empty(&app, &path(strategy_id, "/enable"), Some(&app.admin_key)).await,
        400,
        "bad_request",
    );
    assert_error(
        &app.patch(
            &path(strategy_id, ""),
            &app.admin_key,
            &json!({"title": "again"}),
        )
        .await,
        400,
        "bad_request",
    );
    // Archiving twice is harmless.
    act(&app, strategy_id, "/archive").await;
    assert_eq!(read(&app, strategy_id).await, archived);
}

async fn the_shipped_strategy_is_protected(app: TestApp) {
    let builtin = shipped(&app).await;
    let strategy_id = builtin["id"].as_i64().unwrap();
    assert_eq!(builtin["title"], "False alerts stay informational");
    assert_eq!(builtin["is_enabled"], true);
    assert_eq!(builtin["priorities"][0]["ranking"], 1);
    assert_eq!(builtin["priorities"][0]["priority"], "informational");
    assert_eq!(
        builtin["priorities"][0]["outcomes"],
        json!(["COMPLETED_FALSE_ALERT"])
    );
    // Its uuid is the same in every installation.
    assert_eq!(
        builtin["internal_origin_uuid"],
        sleuth_jobs::builtin_strategies::builtin_uuid("false_alerts_stay_informational")
            .to_string()
    );
    assert!(builtin["priorities"][0]["internal_origin_uuid"].is_string());

    every_change_is_refused(&app, strategy_id, 409, "protected").await;
    let answer = app
        .post(
            BACKTEST,
            &app.admin_key,
            &json!({"strategy_id": strategy_id, "changes": {"title": "x"}, "from": "2026-01-01", "until": "2026-12-31"}),
        )
        .await;
    assert_error(&answer, 409, "protected");
    assert_eq!(read(&app, strategy_id).await, builtin);
    let versions = app
        .get(&path(strategy_id, "/versions"), &app.admin_key)
        .await;
    assert_eq!(versions.json.as_array().unwrap().len(), 1);
}

async fn a_matching_outcome_rule_decides_the_outcome_and_counts(app: TestApp) {
    // Without strategies, the engine concludes a breach on this alert.
    let before = investigate(&app, CROWDSTRIKE).await;
    let engine_outcome = before["outcome"].as_str().unwrap().to_string();
    assert_ne!(engine_outcome, "COMPLETED_FALSE_ALERT");
    assert!(list_item(&app, before["id"].as_i64().unwrap()).await["custom_outcome"].is_null());

    let strategy = create(
        &app,
        &outcome_strategy(
            "LSASS tests are ours",
            "crowdstrike_falcon_alert",
            "COMPLETED_FALSE_ALERT",
        ),
    )
    .await;
    let strategy_id = strategy["id"].as_i64().unwrap();
    // An alert of another source is not touched, and counts nothing for the outcome rule.
    let okta = investigate(&app, OKTA).await;
    assert!(list_item(&app, okta["id"].as_i64().unwrap()).await["custom_outcome"].is_null());

    let after = investigate_alert(&app, &fresh_crowdstrike("second")).await;
    let investigation_id = after["id"].as_i64().unwrap();
    assert_eq!(after["outcome"], "COMPLETED_FALSE_ALERT");
    assert_eq!(after["priority"], "informational");
    assert!(
        after["conclusion"]
            .as_str()
            .unwrap()
            .contains("LSASS tests are ours"),
        "{}",
        after["conclusion"]
    );
    assert_eq!(
        after["key_findings"]["custom_instructions"],
        json!(["Call the asset owner first"])
    );
    let custom = list_item(&app, investigation_id).await["custom_outcome"].clone();
    assert_eq!(custom["strategy_id"], strategy_id);
    assert_eq!(custom["version_id"], strategy["version_id"]);
    assert_eq!(custom["rule_id"], strategy["outcomes"][0]["id"]);
    assert_eq!(custom["outcome"], "COMPLETED_FALSE_ALERT");
    assert_eq!(custom["engine_outcome"], engine_outcome);

    let counted = read(&app, strategy_id).await;
    assert_eq!(counted["outcomes"][0]["conclusions_affected"], 1);
    assert_eq!(counted["total_conclusions_affected"], 1);
    // The instruction was in force for both alerts investigated since.
    assert_eq!(counted["instructions"][0]["usage_count"], 2);
    assert_eq!(counted["total_instructions_used"], 2);
    assert_eq!(counted["total_priorities_affected"], 0);
    // The shipped rule kept the false alert informational, and counted it.
    let builtin = shipped(&app).await;
    assert!(
        builtin["priorities"][0]["priorities_affected"]
            .as_i64()
            .unwrap()
            >= 1
    );
}

async fn the_lowest_ranking_priority_rule_wins_and_disabled_or_archived_strategies_do_nothing(
    app: TestApp,
) {
    let baseline = investigate(&app, CROWDSTRIKE).await;
    let baseline_priority = baseline["priority"].as_str().unwrap().to_string();
    // The winner says something the engine does not, so the answer cannot be a coincidence.
    let winner_priority = if baseline_priority == "informational" {
        "urgent"
    } else {
        "informational"
    };
    let loser_priority = if winner_priority == "urgent" {
        "notable"
    } else {
        "urgent"
    };

    let loser = create(
        &app,
        &json!({"title": "Loser", "priorities": [priority_rule(loser_priority, 20)]}),
    )
    .await;
    let winner = create(
        &app,
        &json!({"title": "Winner", "priorities": [priority_rule(winner_priority, 4)]}),
    )
    .await;
    // Lower rankings, but disabled and archived: no effect.
    let disabled = create(
        &app,
        &json!({"title": "Disabled", "priorities": [priority_rule(loser_priority, 2)], "outcomes": [{"condition": {"==": [1, 1]}, "outcome": "COMPLETED_BREACHED_SUSPICIOUS"}]}),
    )
    .await;
    let archived = create(
        &app,
        &json!({"title": "Archived", "priorities": [priority_rule(loser_priority, 3)], "outcomes": [{"condition": {"==": [1, 1]}, "outcome": "COMPLETED_BREACHED_SUSPICIOUS"}]}),
    )
    .await;
    let disabled_id = disabled["id"].as_i64().unwrap();
    let archived_id = archived["id"].as_i64().unwrap();
    act(&app, disabled_id, "/disable").await;
    act(&app, archived_id, "/archive").await;

    let ranked = investigate_alert(&app, &fresh_crowdstrike("ranked")).await;
    let investigation_id = ranked["id"].as_i64().unwrap();
    assert_eq!(
        ranked["priority"], winner_priority,
        "{}",
        ranked["conclusion"]
    );
    assert_eq!(
        ranked["outcome"], baseline["outcome"],
        "the disabled and archived outcome rules did nothing"
    );
    assert!(list_item(&app, investigation_id).await["custom_outcome"].is_null());

    let winner = read(&app, winner["id"].as_i64().unwrap()).await;
    assert_eq!(winner["priorities"][0]["priorities_affected"], 1);
    assert_eq!(winner["total_priorities_affected"], 1);
    let loser = read(&app, loser["id"].as_i64().unwrap()).await;
    assert_eq!(loser["priorities"][0]["priorities_affected"], 0);
    for strategy_id in [disabled_id, archived_id] {
        let untouched = read(&app, strategy_id).await;
        assert_eq!(untouched["total_priorities_affected"], 0);
        assert_eq!(untouched["total_conclusions_affected"], 0);
    }

    // Enabled again, the disabled one's lower ranking and outcome rule take over.
    act(&app, disabled_id, "/enable").await;
    let again = investigate_alert(&app, &fresh_crowdstrike("ranked-again")).await;
    assert_eq!(again["outcome"], "COMPLETED_BREACHED_SUSPICIOUS");
    assert_eq!(again["priority"], loser_priority);
    assert_eq!(
        read(&app, disabled_id).await["total_priorities_affected"],
        1
    );
}

/// A second Sleuth process on the same database: its own state (and its own kept
/// strategies), workers only.
fn other_process(app: &TestApp) -> sleuth_server::AppState {
    let mut settings = sleuth_jobs::Settings::default();
    settings.workers.enabled = false;
    let state = sleuth_server::AppState::new(settings, sleuth_engine::Context::empty());
    state.set_store(app.store.clone());
    state
}

/// Creates an investigation through the API and lets the other process run it.
async fn investigate_elsewhere(app: &TestApp, other: &sleuth_server::AppState, tag: &str) -> Value {
    let investigation_id = app.create(&fresh_crowdstrike(tag)).await;
    let ran = sleuth_jobs::workers::drain(other, &app.store)
        .await
        .unwrap();
    assert_eq!(ran, 1);
    app.get(
        &format!("/app/api/v1/investigation/{investigation_id}"),
        &app.reader_key,
    )
    .await
    .json
}

async fn a_change_through_one_process_applies_to_the_next_investigation_of_another(app: TestApp) {
    let other = other_process(&app);
    let before = investigate_elsewhere(&app, &other, "before").await;
    assert_ne!(before["outcome"], "COMPLETED_FALSE_ALERT");

    let strategy = create(
        &app,
        &outcome_strategy("Now", "crowdstrike_falcon_alert", "COMPLETED_FALSE_ALERT"),
    )
    .await;
    let after = investigate_elsewhere(&app, &other, "after").await;
    assert_eq!(
        after["outcome"], "COMPLETED_FALSE_ALERT",
        "the other process saw the new strategy"
    );

    act(&app, strategy["id"].as_i64().unwrap(), "/disable").await;
    let disabled = investigate_elsewhere(&app, &other, "disabled").await;
    assert_eq!(
        disabled["outcome"], before["outcome"],
        "and that it was disabled"
    );
}

/// What a backtest must leave as it was: every strategy (with its counters and versions)
/// and every investigation.
async fn snapshot(app: &TestApp, investigation_ids: &[i64]) -> Value {
    let mut strategies = Vec::new();
    for archived in ["false", "true"] {
        let page = list(app, &format!("?is_archived={archived}")).await;
        for strategy in page["results"].as_array().unwrap() {
            let versions = app
                .get(
                    &path(strategy["id"].as_i64().unwrap(), "/versions"),
                    &app.admin_key,
                )
                .await
                .json;
            strategies.push(json!({"strategy": strategy, "versions": versions}));
        }
    }
    let mut investigations = Vec::new();
    for investigation_id in investigation_ids {
        investigations.push(
            app.get(
                &format!("/app/api/v1/investigation/{investigation_id}"),
                &app.reader_key,
            )
            .await
            .json,
        );
    }
    json!({"strategies": strategies, "investigations": investigations})
}

async fn backtesting_reports_what_a_draft_would_change_and_writes_nothing(app: TestApp) {
    let crowdstrike = investigate(&app, CROWDSTRIKE).await;
    let okta = investigate(&app, OKTA).await;
    let crowdstrike_id = crowdstrike["id"].as_i64().unwrap();
    let okta_id = okta["id"].as_i64().unwrap();
    let existing = create(
        &app,
        &json!({"title": "Existing, no rules yet", "is_enabled": false}),
    )
    .await;
    let existing_id = existing["id"].as_i64().unwrap();
    let before = snapshot(&app, &[crowdstrike_id, okta_id]).await;

    // A new strategy that dismisses the CrowdStrike alert.
    let draft = outcome_strategy("Draft", "crowdstrike_falcon_alert", "COMPLETED_FALSE_ALERT");
    let answer = app
        .post(
            BACKTEST,
            &app.admin_key,
            &json!({"strategy": draft, "from": "2000-01-01", "until": "2100-12-31"}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let result = answer.json;
    assert_eq!(result["investigations_considered"], 2);
    assert_eq!(result["truncated"], false);
    assert_eq!(
        result["outcome_changes"],
        json!([{"from": crowdstrike["outcome"], "to": "COMPLETED_FALSE_ALERT", "count": 1}])
    );
    assert_ne!(crowdstrike["priority"], "informational");
    assert_eq!(
        result["priority_changes"],
        json!([{"from": crowdstrike["priority"], "to": "informational", "count": 1}])
    );
    assert_eq!(
        result["affected_investigation_ids"],
        json!([crowdstrike_id])
    );
    assert_eq!(
        result["affected"][0]["baseline_outcome"],
        crowdstrike["outcome"]
    );
    assert_eq!(
        result["affected"][0]["draft_outcome"],
        "COMPLETED_FALSE_ALERT"
    );
    assert_eq!(result["failed_investigation_ids"], json!([]));

    // An edit of an existing (disabled) strategy, tested as if enabled: make Okta urgent.
    let answer = app
        .post(
            BACKTEST,
            &app.admin_key,
            &json!({
                "strategy_id": existing_id,
                "changes": {"outcomes": [{"condition": {"==": [{"var": "alert.schema_key"}, "okta_system_log_event"]}, "outcome": "COMPLETED_BREACHED_CONFIRMED"}]},
                "from": "2000-01-01", "until": "2100-12-31"
            }),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let edit = answer.json;
    assert_ne!(okta["outcome"], "COMPLETED_BREACHED_CONFIRMED");
    assert_eq!(edit["affected_investigation_ids"], json!([okta_id]));
    assert_eq!(
        edit["outcome_changes"],
        json!([{"from": okta["outcome"], "to": "COMPLETED_BREACHED_CONFIRMED", "count": 1}])
    );

    // A bound on the work, and a period that holds nothing.
    let answer = app
        .post(
            BACKTEST,
            &app.admin_key,
            &json!({"strategy": draft, "from": "2000-01-01", "until": "2100-12-31", "max_investigations": 1}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(answer.json["investigations_considered"], 1);
    assert_eq!(answer.json["truncated"], true);
    let answer = app
        .post(
            BACKTEST,
            &app.admin_key,
            &json!({"strategy": draft, "from": "2001-01-01", "until": "2001-01-02"}),
        )
        .await;
    assert_eq!(
        answer.json["investigations_considered"], 0,
        "{}",
        answer.text
    );
    assert_eq!(answer.json["affected_investigation_ids"], json!([]));

    // Refusals.
    for body in [
        json!({"strategy": draft, "until": "2100-12-31"}),
        json!({"strategy": draft, "from": "yesterday", "until": "2100-12-31"}),
        json!({"strategy": draft, "from": "2026-02-01", "until": "2026-01-01"}),
        json!({"strategy": draft, "strategy_id": existing_id, "from": "2000-01-01", "until": "2100-12-31"}),
        json!({"from": "2000-01-01", "until": "2100-12-31"}),
        json!({"strategy": draft, "changes": {"title": "x"}, "from": "2000-01-01", "until": "2100-12-31"}),
        json!({"strategy": {"title": "Bad", "priorities": [priority_rule("urgent", 0)]}, "from": "2000-01-01", "until": "2100-12-31"}),
        json!({"strategy": draft, "from": "2000-01-01", "until": "2100-12-31", "max_investigations": 0}),
        json!({"strategy": draft, "from": "2000-01-01", "until": "2100-12-31", "max_investigations": 5001}),
    ] {
        let answer = app.post(BACKTEST, &app.admin_key, &body).await;
        assert_error(&answer, 400, "bad_request");
    }

    // Nothing was written: strategies, versions, counters and investigations as before.
    assert_eq!(snapshot(&app, &[crowdstrike_id, okta_id]).await, before);
}
