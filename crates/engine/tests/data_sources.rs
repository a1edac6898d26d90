//! What the team's own systems answered (data sources) decides only the claim it speaks
//! to, and every answer is cited with its source and time.

use serde_json::{Map, Value, json};
use sleuth_domain::{
    AnswerResult, Entity, EntityKind, Fact, FactKind, FactValue, Facts, History,
    InvestigationResult, Outcome, Priority, SourceAnswer, SourceKind,
};
use sleuth_engine::{Context, EngineInput};

fn investigate(alert: &Value, facts: &Facts) -> InvestigationResult {
    let parsed = sleuth_parsers::parse_alert(None, alert, chrono::Utc::now()).expect("parses");
    let raw: Map<String, Value> = alert.as_object().cloned().unwrap_or_default();
    sleuth_engine::investigate(
        &EngineInput {
            alert: &parsed,
            raw: &raw,
            history: &History::default(),
            facts,
            strategies: &[],
            now: chrono::Utc::now(),
        },
        &Context::empty(),
    )
}

fn answer(source: &str, kind: SourceKind, entity: Entity, result: AnswerResult) -> SourceAnswer {
    SourceAnswer {
        source: source.into(),
        source_kind: kind,
        entity,
        at: "2026-11-20T10:00:00Z".parse().expect("a time"),
        result,
    }
}

fn found(facts: &[(FactKind, FactValue)]) -> AnswerResult {
    AnswerResult::Found(
        facts
            .iter()
            .map(|(kind, value)| Fact {
                kind: *kind,
                value: value.clone(),
            })
            .collect(),
    )
}

fn facts(answers: Vec<SourceAnswer>) -> Facts {
    Facts { answers }
}

fn headlines(result: &InvestigationResult) -> Vec<&str> {
    result
        .findings
        .iter()
        .map(|finding| finding.headline.as_str())
        .collect()
}

/// An Okta sign-in (System Log `user.session.start`) of `user`, succeeded or not.
fn okta_sign_in(user: &str, succeeded: bool) -> Value {
    json!({
        "uuid": "6f1d1c1e-0d7a-4c55-9a52-0b7f3f0e9a11",
        "published": "2026-11-20T09:58:00.000Z",
        "eventType": "user.session.start",
        "displayMessage": "User login to Okta",
        "severity": "INFO",
        "actor": {"id": "00u9x", "type": "User", "alternateId": user, "displayName": "Dana Field"},
        "client": {
            "ipAddress": "198.51.100.23",
            "geographicalContext": {"city": "Lyon", "country": "France"},
            "userAgent": {"rawUserAgent": "Mozilla/5.0", "os": "Windows", "browser": "CHROME"}
        },
        "outcome": {"result": if succeeded { "SUCCESS" } else { "FAILURE" }, "reason": null},
        "target": []
    })
}

fn disabled(user: &str) -> Facts {
    facts(vec![answer(
        "corp-directory",
        SourceKind::Directory,
        Entity::new(EntityKind::User, user),
        found(&[
            (FactKind::AccountEnabled, FactValue::Flag(false)),
            (FactKind::Department, FactValue::Text("Finance".into())),
        ]),
    )])
}

#[test]
fn a_disabled_account_that_still_signs_in_is_an_urgent_doubt() {
    let user = "d.field@example.org";
    let plain = investigate(&okta_sign_in(user, true), &Facts::default());
    assert!(!headlines(&plain).contains(&"A disabled account signed in"));

    let result = investigate(&okta_sign_in(user, true), &disabled(user));
    assert!(
        headlines(&result).contains(&"A disabled account signed in"),
        "{:?}",
        headlines(&result)
    );
    assert_eq!(
        result.outcome,
        Outcome::BreachedSuspicious,
        "{}",
        result.conclusion
    );
    assert_eq!(result.priority, Priority::Urgent, "{}", result.conclusion);

    // A sign-in the disabled account failed is the directory doing its job.
    let failed = investigate(&okta_sign_in(user, false), &disabled(user));
    assert!(!headlines(&failed).contains(&"A disabled account signed in"));
    assert!(headlines(&failed).contains(&"The account is disabled"));
}

#[test]
fn every_answer_is_cited_with_its_source_and_time() {
    let user = "d.field@example.org";
    let result = investigate(&okta_sign_in(user, true), &disabled(user));
    let citation = result
        .findings
        .iter()
        .find(|finding| finding.headline == "What the team's systems said")
        .expect("a finding lists the answers");
    assert!(
        citation.finding.contains("corp-directory"),
        "{}",
        citation.finding
    );
    let evidence = &citation.evidences[0].data;
    assert_eq!(evidence["source"], "corp-directory");
    assert_eq!(evidence["source_kind"], "directory");
    assert_eq!(evidence["at"], "2026-11-20T10:00:00+00:00");
    assert_eq!(evidence["result"]["found"]["department"], "Finance");
    assert_eq!(evidence["entity"]["value"], user);
}

fn process_alert(title: &str, sha256: &str) -> Value {
    json!({
        "title": title,
        "alert_id": "GEN-7781",
        "created_at": "2026-11-20T09:55:00Z",
        "host": "wks-0412",
        "user": "p.oakes",
        "process_name": "updater.exe",
        "sha256": sha256,
    })
}

#[test]
fn a_file_many_engines_call_malicious_is_malware_and_a_few_are_not() {
    let sha256 = "5b2f1e0c9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f";
    let alert = process_alert("New process observed", sha256);
    let reputation = |votes: f64| {
        facts(vec![answer(
            "virustotal",
            SourceKind::ThreatIntel,
            Entity::new(EntityKind::HashSha256, sha256),
            found(&[
                (FactKind::MaliciousVotes, FactValue::Number(votes)),
                (FactKind::TotalVotes, FactValue::Number(72.0)),
            ]),
        )])
    };
    let plain = investigate(&alert, &Facts::default());
    assert_ne!(
        plain.outcome,
        Outcome::BreachedConfirmed,
        "{}",
        plain.conclusion
    );

    let many = investigate(&alert, &reputation(41.0));
    assert_eq!(
        many.outcome,
        Outcome::BreachedConfirmed,
        "{}",
        many.conclusion
    );
    assert!(headlines(&many).contains(&"Many engines call the file malicious"));

    // One or two engines are the noise of every multi-engine service.
    let few = investigate(&alert, &reputation(2.0));
    assert_eq!(few.outcome, plain.outcome, "{}", few.conclusion);
    assert!(!headlines(&few).contains(&"Many engines call the file malicious"));
}

fn network_alert(title: &str, source_ip: &str) -> Value {
    json!({
        "title": title,
        "alert_id": "GEN-7790",
        "created_at": "2026-11-20T09:55:00Z",
        "src_ip": source_ip,
        "dest_ip": "192.0.2.80",
    })
}

fn greynoise_benign(ip: &str) -> Facts {
    facts(vec![answer(
        "greynoise",
        SourceKind::ThreatIntel,
        Entity::new(EntityKind::Ip, ip),
        found(&[
            (FactKind::Verdict, FactValue::Text("benign".into())),
            (FactKind::Labels, FactValue::List(vec!["Shodan.io".into()])),
        ]),
    )])
}

#[test]
fn a_benign_scanner_explains_a_scan_and_nothing_else() {
    let ip = "198.51.100.77";
    let scan = network_alert("Port scan detected from external address", ip);
    let result = investigate(&scan, &greynoise_benign(ip));
    assert_eq!(result.outcome, Outcome::FalseAlert, "{}", result.conclusion);
    assert!(headlines(&result).contains(&"A known benign scanner"));

    // The same address's good name says nothing about a beacon to it.
    let beacon = network_alert("Command and control beacon to external address", ip);
    let plain = investigate(&beacon, &Facts::default());
    let with_name = investigate(&beacon, &greynoise_benign(ip));
    assert_ne!(
        with_name.outcome,
        Outcome::FalseAlert,
        "{}",
        with_name.conclusion
    );
    assert_eq!(with_name.outcome, plain.outcome, "{}", with_name.conclusion);
}

#[test]
fn a_bad_address_and_a_new_domain_are_signs_that_add_up() {
    let ip = "203.0.113.140";
    let alert = json!({
        "title": "Outbound connection to rare domain",
        "alert_id": "GEN-7801",
        "created_at": "2026-11-20T09:55:00Z",
        "host": "wks-0412",
        "dest_ip": ip,
        "domain": "invoice-portal-login.net",
    });
    let plain = investigate(&alert, &Facts::default());
    let registered = answer(
        "rdap",
        SourceKind::Registration,
        Entity::new(EntityKind::Domain, "invoice-portal-login.net"),
        found(&[(
            FactKind::RegisteredAt,
            FactValue::Date("2026-11-14T00:00:00Z".parse().expect("a time")),
        )]),
    );
    let abusive = answer(
        "abuseipdb",
        SourceKind::ThreatIntel,
        Entity::new(EntityKind::Ip, ip),
        found(&[(FactKind::AbuseScore, FactValue::Number(96.0))]),
    );
    let new_domain = investigate(&alert, &facts(vec![registered.clone()]));
    assert!(
        headlines(&new_domain).contains(&"A newly registered domain"),
        "{:?}",
        headlines(&new_domain)
    );
    assert_ne!(new_domain.outcome, Outcome::FalseAlert);

    let both = investigate(&alert, &facts(vec![registered, abusive]));
    assert!(headlines(&both).contains(&"A bad name in threat intelligence"));
    assert_ne!(plain.outcome, Outcome::FalseAlert);
    assert_ne!(both.outcome, Outcome::FalseAlert, "{}", both.conclusion);
}

#[test]
fn a_privileged_account_raises_priority_but_never_the_verdict() {
    let user = "d.field@example.org";
    let alert = okta_sign_in(user, true);
    let plain = investigate(&alert, &Facts::default());
    let privileged = facts(vec![answer(
        "corp-directory",
        SourceKind::Directory,
        Entity::new(EntityKind::User, user),
        found(&[
            (FactKind::AccountEnabled, FactValue::Flag(true)),
            (FactKind::Privileged, FactValue::Flag(true)),
            (
                FactKind::PrivilegedGroups,
                FactValue::List(vec!["Domain Admins".into()]),
            ),
        ]),
    )]);
    let result = investigate(&alert, &privileged);
    // An unexplained sign-in is a doubt of ordinary urgency; on a privileged account the
    // same doubt is urgent.
    assert_eq!(
        plain.outcome,
        Outcome::BreachedSuspicious,
        "{}",
        plain.conclusion
    );
    assert_eq!(plain.priority, Priority::Notable);
    assert_eq!(result.outcome, plain.outcome, "{}", result.conclusion);
    assert!(headlines(&result).contains(&"A privileged account"));
    assert_eq!(result.priority, Priority::Urgent, "{}", result.conclusion);
}

#[test]
fn a_source_that_could_not_answer_is_said_and_weighs_only_where_it_could_decide() {
    let user = "d.field@example.org";
    let alert = okta_sign_in(user, true);
    let plain = investigate(&alert, &Facts::default());
    let directory_down = facts(vec![answer(
        "corp-directory",
        SourceKind::Directory,
        Entity::new(EntityKind::User, user),
        AnswerResult::Failed {
            reason: "no answer within 5 s".into(),
        },
    )]);
    let result = investigate(&alert, &directory_down);
    assert_eq!(result.outcome, plain.outcome, "{}", result.conclusion);
    let unavailable = result
        .findings
        .iter()
        .find(|finding| finding.headline == "corp-directory unavailable")
        .expect("the failure is a finding");
    assert!(unavailable.finding.contains("no answer within 5 s"));
    assert_eq!(
        unavailable.outcome,
        sleuth_domain::FindingOutcome::ActionInfo
    );

    // A reputation source's answer could have proved malice: its failure is missing
    // evidence (it decides the verdict only when nothing else does).
    let sha256 = "5b2f1e0c9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f";
    let intel_down = facts(vec![answer(
        "virustotal",
        SourceKind::ThreatIntel,
        Entity::new(EntityKind::HashSha256, sha256),
        AnswerResult::Failed {
            reason: "not asked: the vendor asked for a pause (429), 30 s left".into(),
        },
    )]);
    let result = investigate(&process_alert("New process observed", sha256), &intel_down);
    let unavailable = result
        .findings
        .iter()
        .find(|finding| finding.headline == "virustotal unavailable")
        .expect("the failure is a finding");
    assert_eq!(
        unavailable.outcome,
        sleuth_domain::FindingOutcome::Incomplete
    );
}

#[test]
fn a_server_is_said_and_a_domain_controller_is_urgent() {
    let sha256 = "5b2f1e0c9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f";
    let alert = process_alert("New process observed", sha256);
    let role = |role: &str| {
        facts(vec![answer(
            "falcon-hosts",
            SourceKind::Endpoint,
            Entity::new(EntityKind::Host, "wks-0412"),
            found(&[
                (FactKind::HostRole, FactValue::Text(role.into())),
                (FactKind::Owner, FactValue::Text("payments team".into())),
            ]),
        )])
    };
    let plain = investigate(&alert, &Facts::default());
    let laptop = investigate(&alert, &role("workstation"));
    let server = investigate(&alert, &role("server"));
    let controller = investigate(&alert, &role("domain_controller"));
    assert!(!headlines(&laptop).contains(&"A server, not a laptop"));
    assert!(headlines(&server).contains(&"A server, not a laptop"));
    for result in [&laptop, &server, &controller] {
        assert_eq!(result.outcome, plain.outcome, "{}", result.conclusion);
    }
    assert_eq!(plain.priority, Priority::Notable);
    assert_eq!(server.priority, Priority::Notable);
    assert_eq!(
        controller.priority,
        Priority::Urgent,
        "{}",
        controller.conclusion
    );
}
