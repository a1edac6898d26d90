//! Checking a notification destination before it is stored, the same for the API and the
//! command line: its kind, its settings (and that the secrets they name are stored), its
//! rule, its template and its rate limit. Each problem names its field.

use std::sync::Arc;

use serde_json::Value;
use sleuth_notify::destination::{Kind, Settings};
use sleuth_notify::{Rule, Template};
use sleuth_store::{Store, StoreError};

/// The most sends a minute a rate limit may allow (and at least 1).
pub const MAX_RATE_PER_MINUTE: i64 = 60_000;

/// What is wrong with a destination, for a 400 naming the field.
#[derive(Debug)]
pub enum Problem {
    Field { field: String, message: String },
    Store(StoreError),
}

impl std::fmt::Display for Problem {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Field { field, message } => write!(formatter, "{field}: {message}"),
            Problem::Store(error) => write!(formatter, "{error}"),
        }
    }
}

fn field(field: &str, message: impl Into<String>) -> Problem {
    Problem::Field {
        field: field.into(),
        message: message.into(),
    }
}

pub fn kind(kind: Option<&str>) -> Result<Kind, Problem> {
    let kind =
        kind.ok_or_else(|| field("kind", format!("is required: one of {}", Kind::known())))?;
    Kind::parse(kind).ok_or_else(|| {
        field(
            "kind",
            format!(
                "'{}' is not a destination kind: one of {}",
                kind.chars().take(50).collect::<String>(),
                Kind::known()
            ),
        )
    })
}

/// Checks the settings for `kind`, and that every secret they name is stored.
pub async fn settings(
    store: &Arc<dyn Store>,
    kind: Kind,
    settings: &Value,
) -> Result<Settings, Problem> {
    let checked = Settings::check(kind, settings).map_err(|error| Problem::Field {
        field: error.field,
        message: error.message,
    })?;
    let stored = store.list_script_secrets().await.map_err(Problem::Store)?;
    for name in checked.secret_names() {
        if !stored.iter().any(|secret| secret.name == name) {
            return Err(field(
                "settings",
                format!(
                    "names the secret '{name}', which is not stored: store it first with \
                     `sleuth secret set {name}` or PUT /app/api/v1/response-actions/secrets/{name}"
                ),
            ));
        }
    }
    Ok(checked)
}

pub fn rule(rule: &Value) -> Result<Rule, Problem> {
    let parsed: Rule =
        serde_json::from_value(rule.clone()).map_err(|error| field("rule", error.to_string()))?;
    let problems = parsed.problems();
    if !problems.is_empty() {
        return Err(field("rule", problems.join("; ")));
    }
    Ok(parsed)
}

pub fn template(template: &str) -> Result<Template, Problem> {
    Template::parse(template).map_err(|message| field("template", message))
}

pub fn rate_limit(per_minute: i64) -> Result<i64, Problem> {
    if (1..=MAX_RATE_PER_MINUTE).contains(&per_minute) {
        Ok(per_minute)
    } else {
        Err(field(
            "rate_limit_per_minute",
            format!("must be between 1 and {MAX_RATE_PER_MINUTE}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn rules_templates_and_limits_name_their_problems() {
        assert!(rule(&json!({"events": ["investigation.concluded"]})).is_ok());
        let empty = rule(&json!({"events": []})).unwrap_err().to_string();
        assert!(empty.starts_with("rule: events:"), "{empty}");
        let unknown = rule(&json!({"events": ["investigation.exploded"]}))
            .unwrap_err()
            .to_string();
        assert!(unknown.starts_with("rule: unknown variant"), "{unknown}");
        assert!(template("{priority}: {title}").is_ok());
        assert!(
            template("{colour}")
                .unwrap_err()
                .to_string()
                .starts_with("template:")
        );
        assert!(rate_limit(0).is_err());
        assert_eq!(rate_limit(30).unwrap(), 30);
        assert!(
            kind(Some("carrier-pigeon"))
                .unwrap_err()
                .to_string()
                .contains("webhook, slack")
        );
    }
}
