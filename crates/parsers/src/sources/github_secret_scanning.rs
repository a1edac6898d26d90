//! GitHub secret scanning alerts: the `secret_scanning_alert` webhook (repository,
//! organization or GitHub App delivery; `X-GitHub-Event: secret_scanning_alert`), with
//! actions `created`, `resolved`, `reopened`, `validated`, `publicly_leaked`,
//! `assigned`/`unassigned` (and the retired `revoked`).
//!
//! The secret itself is never read into the alert. GitHub gives no severity for these
//! alerts; the secret block (type, exposure, validity, resolution) carries what decides
//! one. A resolution of `false_positive` or `used_in_tests` is the repository owners'
//! benign verdict; `revoked` and `wont_fix` say the secret was real and are kept as tags.

use serde_json::Value;
use sleuth_domain::{
    ActionTaken, AlertCategory, CloudSignal, EntityKind, ParsedAlert, SecretSignal, SourceVerdict,
};

use crate::ParseError;
use crate::builder::AlertBuilder;
use crate::json::{bool_at, str_at, text_at};
use crate::registry::Schema;
use crate::time::time_at;

pub(crate) static ALERT: Schema = Schema {
    key: "github_secret_scanning",
    display_name: "GitHub secret scanning alert (webhook)",
    source_label: "GitHub Secret Scanning",
    integration: "github_secret_scanning",
    sample: include_str!("../../samples/github_secret_scanning.json"),
    detect,
    parse,
};

fn detect(raw: &Value) -> bool {
    str_at(raw, "action").is_some()
        && raw.get("repository").is_some_and(Value::is_object)
        && raw.get("alert").is_some_and(|alert| {
            str_at(alert, "secret_type").is_some()
                || str_at(alert, "html_url")
                    .is_some_and(|url| url.contains("/security/secret-scanning/"))
        })
}

fn parse(raw: &Value, mut alert: AlertBuilder) -> Result<ParsedAlert, ParseError> {
    let number = text_at(raw, "alert.number");
    let secret_type = str_at(raw, "alert.secret_type");
    if number.is_none() && secret_type.is_none() {
        return Err(ParseError::DoesNotFit {
            schema_key: ALERT.key,
            reason: "a secret scanning alert has alert.number or alert.secret_type".into(),
        });
    }
    let action = str_at(raw, "action").unwrap_or("created");
    let repository = str_at(raw, "repository.full_name");
    let display = str_at(raw, "alert.secret_type_display_name").or(secret_type);
    let title = match (display, repository) {
        (Some(display), Some(repository)) => {
            format!("Secret scanning alert: {display} in {repository}")
        }
        (Some(display), None) => format!("Secret scanning alert: {display}"),
        (None, _) => "Secret scanning alert".to_string(),
    };
    let created = time_at(raw, "alert.created_at");
    let raised = match action {
        "created" => created,
        "resolved" => time_at(raw, "alert.resolved_at"),
        _ => time_at(raw, "alert.updated_at"),
    };
    alert
        .title(Some(&title))
        .alert_type(
            secret_type
                .map(|kind| format!("github_secret_scanning:{kind}"))
                .as_deref(),
        )
        .create_time(raised)
        .create_time(time_at(raw, "alert.updated_at"))
        .create_time(created)
        // A bypassed push is when the secret went in; the alert follows it.
        .start_time(time_at(raw, "alert.push_protection_bypassed_at"))
        .start_time(created)
        .ticket(
            match (repository, number.as_deref()) {
                (Some(repository), Some(number)) => Some(format!("{repository}#{number}")),
                (None, number) => number.map(str::to_string),
                (Some(_), None) => None,
            },
            "Secret scanning alert",
            str_at(raw, "alert.html_url").map(str::to_string),
        )
        .coalesce_key(match (repository, number.as_deref()) {
            (Some(repository), Some(number)) => Some(format!("{repository}:{number}")),
            _ => None,
        })
        .tenant(
            str_at(raw, "organization.login")
                .or_else(|| str_at(raw, "repository.owner.login"))
                .map(str::to_string),
            None,
        );
    let comment = str_at(raw, "alert.resolution_comment")
        .or_else(|| str_at(raw, "alert.push_protection_bypass_request_comment"));
    alert.description(comment);

    let resolution = str_at(raw, "alert.resolution");
    let bypassed = bool_at(raw, "alert.push_protection_bypassed") == Some(true);
    let publicly_leaked = bool_at(raw, "alert.publicly_leaked") == Some(true);
    let public_repository = str_at(raw, "repository.visibility")
        .map(|visibility| visibility.eq_ignore_ascii_case("public"))
        .or_else(|| bool_at(raw, "repository.private").map(|private| !private));
    let validity = str_at(raw, "alert.validity");

    alert.signals.category = Some(AlertCategory::Application);
    // An exposed credential is unsecured credentials in files (T1552.001).
    alert.technique(Some("T1552.001"));
    alert.signals.action = Some(if bypassed {
        // Push protection would have stopped the push; someone chose to let it through.
        ActionTaken::Allowed
    } else {
        ActionTaken::Observed
    });
    alert.signals.source_verdict = match resolution {
        Some("false_positive" | "used_in_tests") => Some(SourceVerdict::Benign),
        _ => None,
    };
    alert
        .tag(secret_type)
        .tag(Some(&format!("action:{action}")))
        .tag(
            validity
                .map(|validity| format!("validity:{validity}"))
                .as_deref(),
        )
        .tag(
            resolution
                .map(|resolution| format!("resolution:{resolution}"))
                .as_deref(),
        )
        .tag(str_at(raw, "repository.visibility"));
    for (flag, tag) in [
        (bypassed, "push_protection_bypassed"),
        (publicly_leaked, "publicly_leaked"),
        (bool_at(raw, "alert.multi_repo") == Some(true), "multi_repo"),
    ] {
        if flag {
            alert.tag(Some(tag));
        }
    }

    let location = str_at(raw, "alert.first_location_detected.blob_url")
        .or_else(|| str_at(raw, "alert.first_location_detected.html_url"))
        .or_else(|| str_at(raw, "repository.html_url"));
    alert.signals.secret = Some(SecretSignal {
        secret_type: secret_type.map(str::to_string),
        location: location.map(str::to_string),
        publicly_exposed: match (public_repository, publicly_leaked) {
            (_, true) => Some(true),
            (exposed, false) => exposed,
        },
        still_valid: match validity {
            Some("active") => Some(true),
            Some("inactive") => Some(false),
            _ => None,
        },
        resolved: Some(match action {
            "resolved" => true,
            "reopened" => false,
            _ => resolution.is_some(),
        }),
    });

    // The people involved: who let the secret through, who closed the alert.
    let bypasser = str_at(raw, "alert.push_protection_bypassed_by.login");
    let resolver = str_at(raw, "alert.resolved_by.login");
    alert
        .entity(EntityKind::User, bypasser)
        .entity(EntityKind::User, resolver)
        .entity(
            EntityKind::FilePath,
            str_at(raw, "alert.first_location_detected.path"),
        )
        .entity(EntityKind::CloudResource, repository);
    alert.signals.cloud = Some(CloudSignal {
        provider: Some("github".into()),
        account: str_at(raw, "organization.login")
            .or_else(|| str_at(raw, "repository.owner.login"))
            .map(str::to_string),
        service: Some("secret_scanning".into()),
        operation: Some(action.to_string()),
        principal: bypasser
            .or_else(|| (action == "resolved").then_some(resolver).flatten())
            .map(str::to_string),
        resource: repository.map(str::to_string),
        resource_type: Some("repository".into()),
        publicly_exposed: public_repository,
        ..CloudSignal::default()
    });
    Ok(alert.finish())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::parse_alert;

    fn read(raw: &Value) -> ParsedAlert {
        parse_alert(None, raw, chrono::Utc::now()).expect("parses")
    }

    fn webhook(action: &str, alert: Value, visibility: &str) -> Value {
        json!({
            "action": action,
            "alert": alert,
            "repository": {"id": 1, "name": "infra-tools", "full_name": "example-corp/infra-tools",
                "private": visibility != "public", "visibility": visibility,
                "html_url": "https://github.com/example-corp/infra-tools", "owner": {"login": "example-corp"}},
            "organization": {"login": "example-corp", "id": 9},
            "sender": {"login": "github-advanced-security[bot]"}
        })
    }

    #[test]
    fn the_sample_reads_completely() {
        let raw: Value = serde_json::from_str(ALERT.sample).unwrap();
        let parsed = read(&raw);
        assert_eq!(parsed.schema_key, "github_secret_scanning");
        assert_eq!(
            parsed.alert_type,
            "github_secret_scanning:aws_access_key_id"
        );
        assert_eq!(parsed.tenant_id.as_deref(), Some("example-corp"));
        assert_eq!(parsed.signals.category, Some(AlertCategory::Application));
        assert_eq!(parsed.signals.mitre_tactics, vec!["Credential Access"]);
        let secret = parsed.signals.secret.as_ref().unwrap();
        assert_eq!(secret.still_valid, Some(true));
        assert_eq!(secret.publicly_exposed, Some(true));
        assert_eq!(secret.resolved, Some(false));
        assert!(parsed.origin_ticket_url.is_some());
    }

    #[test]
    fn resolutions_and_validity_read_as_the_owners_said() {
        let cases = [
            (
                "resolved",
                json!({"resolution": "false_positive"}),
                Some(SourceVerdict::Benign),
                Some(true),
            ),
            (
                "resolved",
                json!({"resolution": "used_in_tests"}),
                Some(SourceVerdict::Benign),
                Some(true),
            ),
            (
                "resolved",
                json!({"resolution": "revoked"}),
                None,
                Some(true),
            ),
            ("reopened", json!({"resolution": null}), None, Some(false)),
            ("created", json!({}), None, Some(false)),
        ];
        for (action, extra, verdict, resolved) in cases {
            let mut body = json!({"number": 4, "secret_type": "slack_incoming_webhook_url",
                "created_at": "2026-03-01T10:00:00Z", "updated_at": "2026-03-02T10:00:00Z",
                "resolved_at": "2026-03-03T10:00:00Z", "validity": "unknown"});
            if let (Some(target), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
                target.extend(extra.clone());
            }
            let parsed = read(&webhook(action, body, "private"));
            assert_eq!(parsed.signals.source_verdict, verdict, "{action}");
            let secret = parsed.signals.secret.unwrap();
            assert_eq!(secret.resolved, resolved, "{action}");
            assert_eq!(secret.still_valid, None);
            assert_eq!(secret.publicly_exposed, Some(false));
        }
    }

    #[test]
    fn each_action_is_dated_by_its_own_event() {
        let body = json!({"number": 4, "secret_type": "x", "created_at": "2026-03-01T10:00:00Z",
            "updated_at": "2026-03-02T10:00:00Z", "resolved_at": "2026-03-03T10:00:00Z"});
        for (action, day) in [("created", "01"), ("validated", "02"), ("resolved", "03")] {
            let parsed = read(&webhook(action, body.clone(), "internal"));
            assert_eq!(
                parsed.create_time.to_rfc3339(),
                format!("2026-03-{day}T10:00:00+00:00")
            );
        }
    }

    #[test]
    fn a_push_protection_bypass_was_allowed_by_someone() {
        let parsed = read(&webhook(
            "created",
            json!({"number": 7, "secret_type": "github_personal_access_token",
            "push_protection_bypassed": true, "push_protection_bypassed_by": {"login": "mgarcia"}}),
            "internal",
        ));
        assert_eq!(parsed.signals.action, Some(ActionTaken::Allowed));
        assert_eq!(
            parsed.signals.cloud.unwrap().principal.as_deref(),
            Some("mgarcia")
        );
        assert!(
            parsed
                .entities
                .iter()
                .any(|entity| entity.kind == EntityKind::User && entity.value == "mgarcia")
        );
    }

    #[test]
    fn other_github_webhooks_are_not_secret_scanning_alerts() {
        assert!(!detect(
            &json!({"action": "created", "alert": {"number": 1, "rule": {"id": "js/xss"},
            "html_url": "https://github.com/o/r/security/code-scanning/1"}, "repository": {}})
        ));
        assert!(!detect(
            &json!({"action": "opened", "pull_request": {}, "repository": {}})
        ));
    }

    #[test]
    fn hostile_input_never_panics() {
        let huge = "s".repeat(100_000);
        for raw in [
            json!({"action": 5, "alert": {"secret_type": huge, "number": [1], "validity": {"x": 1}}, "repository": {"full_name": 3}}),
            json!({"action": "resolved", "alert": {"secret_type": "🦀", "resolved_at": "never"}, "repository": {"visibility": null}}),
            json!({"action": "created", "alert": {"html_url": "https://github.com/a/b/security/secret-scanning/1"}, "repository": {}}),
        ] {
            let _ = parse_alert(Some(ALERT.key), &raw, chrono::Utc::now());
            let _ = crate::detect(&raw);
        }
    }
}
