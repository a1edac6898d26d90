//! Honeytokens (docs/context.md): a scanner finding a token where it was planted is the
//! bait being seen; the same finding of another secret, or elsewhere, is not explained;
//! any use of a token is a breach.

mod support;

use serde_json::{Value, json};
use sleuth_domain::Outcome;
use support::investigate;

const CONTEXT: &str = r#"
[[honeytokens]]
value = "AKIAEXAMPLECANARY777"
description = "Canary key in the archived modules"
planted_in = ["example-corp/tf-archive"]
secret_type = "aws_access_key_id"
"#;

/// A GitHub secret scanning webhook: a working secret of `secret_type` in a public `repo`.
fn found(repo: &str, secret_type: &str) -> Value {
    json!({
        "action": "created",
        "alert": {
            "number": 3,
            "created_at": "2026-04-02T10:00:00Z",
            "html_url": format!("https://github.com/{repo}/security/secret-scanning/3"),
            "secret_type": secret_type,
            "secret_type_display_name": secret_type,
            "validity": "active",
            "publicly_leaked": true,
            "resolution": null
        },
        "repository": {"name": "x", "full_name": repo, "private": false, "visibility": "public",
            "html_url": format!("https://github.com/{repo}")},
        "organization": {"login": "example-corp"}
    })
}

#[test]
fn a_planted_token_seen_where_it_lies_is_expected_and_nothing_else_is() {
    let planted = investigate(
        &found("example-corp/tf-archive", "aws_access_key_id"),
        CONTEXT,
    );
    assert_eq!(
        planted.outcome,
        Outcome::FalseAlert,
        "{}",
        planted.conclusion
    );

    // Another kind of secret where the token lies is some other, real secret.
    let other_type = investigate(
        &found("example-corp/tf-archive", "github_personal_access_token"),
        CONTEXT,
    );
    assert_ne!(
        other_type.outcome,
        Outcome::FalseAlert,
        "{}",
        other_type.conclusion
    );

    // The same kind of secret in another repository (a name that only begins alike too).
    for repo in ["example-corp/deploy", "example-corp/tf-archive-2"] {
        let elsewhere = investigate(&found(repo, "aws_access_key_id"), CONTEXT);
        assert_ne!(
            elsewhere.outcome,
            Outcome::FalseAlert,
            "{repo}: {}",
            elsewhere.conclusion
        );
    }

    // Using the token is a breach, wherever it was planted.
    let used = investigate(
        &json!({
            "title": "API call with access key AKIAEXAMPLECANARY777",
            "alert_id": "H-1",
            "user": "AKIAEXAMPLECANARY777",
            "src_ip": "198.51.100.9",
        }),
        CONTEXT,
    );
    assert_eq!(
        used.outcome,
        Outcome::BreachedConfirmed,
        "{}",
        used.conclusion
    );
}
