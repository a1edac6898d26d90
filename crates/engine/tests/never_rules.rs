//! "Never" rules (docs/context.md): an identity the operator says never does what the alert
//! claims is a declared violation, a strong sign that adds up with any other.

mod support;

use serde_json::json;
use sleuth_domain::{InvestigationResult, Outcome};
use support::investigate;

const CONTEXT: &str = r#"
[[identities]]
user = "ops.lead@example.com"
aliases = ["ops.lead"]
location = "GB"
never = ["privilege_grant"]

[[intel]]
value = "203.0.113.66"
category = "tor_exit"
confidence = 99
"#;

fn cites_the_rule(result: &InvestigationResult) -> bool {
    result.findings.iter().any(|finding| {
        finding
            .evidences
            .iter()
            .any(|evidence| evidence.evidence_type == "never_rule")
    })
}

#[test]
fn an_identity_doing_what_it_never_does_is_a_declared_violation() {
    let grant = json!({
        "title": "User added to Domain Admins",
        "alert_id": "N-1",
        "user": "ops.lead",
        "host": "dc-02",
        "src_ip": "203.0.113.66",
    });
    let result = investigate(&grant, CONTEXT);
    assert!(cites_the_rule(&result), "{}", result.conclusion);
    assert_eq!(
        result.outcome,
        Outcome::BreachedConfirmed,
        "{}",
        result.conclusion
    );

    // From an ordinary address the grant alone is a sensitive change: a doubt for a human.
    // The declared rule is a strong sign beside it, and the two add up.
    let without_rule = CONTEXT.replace("never = [\"privilege_grant\"]", "");
    let mut from_home = grant.clone();
    from_home["src_ip"] = json!("198.51.100.7");
    let plain = investigate(&from_home, &without_rule);
    assert!(!cites_the_rule(&plain));
    assert_eq!(
        plain.outcome,
        Outcome::BreachedSuspicious,
        "{}",
        plain.conclusion
    );
    let ruled = investigate(&from_home, CONTEXT);
    assert!(cites_the_rule(&ruled), "{}", ruled.conclusion);
    assert_eq!(
        ruled.outcome,
        Outcome::BreachedConfirmed,
        "{}",
        ruled.conclusion
    );

    // A behaviour the rule does not name is not a violation.
    let other = json!({"title": "Port scan from 10.1.1.1", "alert_id": "N-2", "user": "ops.lead", "host": "dc-02"});
    assert!(!cites_the_rule(&investigate(&other, CONTEXT)));
}
