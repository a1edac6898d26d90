//! People's state and tier (docs/context.md `[[identities]]`): a leaver's account in use
//! is a breach, someone on notice moving data is a doubt with urgency, tier 0 is a crown
//! jewel, and the checker refuses states and tiers outside the lists.

mod support;

use serde_json::json;
use sleuth_domain::{Outcome, Priority};
use sleuth_engine::{Context, ContextDocument};
use support::investigate;

const CONTEXT: &str = r#"
[[identities]]
user = "gone@example.com"
aliases = ["gone"]
state = "leaver"

[[identities]]
user = "leaving@example.com"
aliases = ["leaving"]
state = "on_notice"

[[identities]]
user = "root.admin@example.com"
aliases = ["root.admin"]
tier = 0
"#;

#[test]
fn where_a_person_stands_moves_the_verdict() {
    let sign_in = |user: &str, outcome: &str| {
        json!({"title": "User signed in", "alert_id": format!("P-{user}-{outcome}"), "user": user,
               "src_ip": "198.51.100.40", "outcome": outcome, "category": "authentication"})
    };
    let used = investigate(&sign_in("gone", "success"), CONTEXT);
    assert_eq!(
        used.outcome,
        Outcome::BreachedConfirmed,
        "{}",
        used.conclusion
    );
    assert_eq!(used.priority, Priority::Urgent, "{}", used.conclusion);

    // An employee in good standing, the same sign-in: nothing to say it is a breach.
    let ordinary = investigate(&sign_in("someone", "success"), CONTEXT);
    assert_ne!(
        ordinary.outcome,
        Outcome::BreachedConfirmed,
        "{}",
        ordinary.conclusion
    );

    let upload = |user: &str| {
        json!({"title": "Large upload of company files to personal cloud storage (data exfiltration)",
               "alert_id": format!("X-{user}"), "user": user, "host": "wks-0101",
               "dest_domain": "drive.example.net"})
    };
    let leaving = investigate(&upload("leaving"), CONTEXT);
    assert!(
        leaving
            .findings
            .iter()
            .any(|finding| finding.headline.contains("on notice")),
        "{}",
        leaving.conclusion
    );
    assert_ne!(leaving.outcome, Outcome::FalseAlert);
    assert_eq!(leaving.priority, Priority::Urgent, "{}", leaving.conclusion);

    let tier0 = investigate(&sign_in("root.admin", "success"), CONTEXT);
    assert!(
        tier0
            .findings
            .iter()
            .any(|finding| finding.finding.contains("tier-0")),
        "{}",
        tier0.conclusion
    );
}

#[test]
fn states_and_tiers_outside_the_lists_are_refused() {
    for (entry, expected) in [
        (
            "state = \"retired\"",
            "state must be one of leaver, on_notice, contractor",
        ),
        ("tier = 3", "tier must be 0, 1 or 2"),
    ] {
        let text = format!("[[identities]]\nuser = \"x@example.com\"\n{entry}\n");
        let refused = Context::build(ContextDocument::from_toml(&text).expect("reads"))
            .expect_err("refused")
            .to_string();
        assert!(refused.contains(expected), "{refused}");
    }
}
