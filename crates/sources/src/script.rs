//! Enrichment scripts, the escape hatch for a system no declaration fits: Python in the
//! response-action sandbox (`Sandbox::run`), given the global `entity` (`{"type", "value"}`)
//! and the secrets it names, printing one JSON object:
//! `{"found": true, "facts": {"abuse_score": 87, "labels": ["proxy"]}}` or
//! `{"found": false}`. Network only when the definition allows it, and then only where the
//! sandbox's egress guard allows.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use sleuth_domain::{AnswerResult, Entity, Fact, FactKind, ScriptRunStatus};
use sleuth_sandbox::{Sandbox, ScriptJob};

use crate::definition::CompiledScript;
use crate::secrets::{Scrub, Secrets};
use crate::{Failure, Lookup};

#[derive(Debug)]
pub(crate) struct ScriptSource {
    pub definition: CompiledScript,
}

impl ScriptSource {
    pub(crate) async fn lookup(
        &self,
        sandbox: Option<&Arc<Sandbox>>,
        entity: &Entity,
        secrets: &dyn Secrets,
    ) -> Result<Lookup, Failure> {
        let Some(sandbox) = sandbox else {
            return Err(Failure::new(
                "enrichment scripts need the script sandbox, which this process has not set up",
            ));
        };
        let mut scrub = Scrub::default();
        let mut handed = BTreeMap::new();
        for name in &self.definition.definition.secret_names {
            let secret = secrets.secret(name).await.map_err(Failure::new)?;
            scrub.add(&secret);
            handed.insert(name.clone(), secret.expose().to_string());
        }
        let mut variables = serde_json::Map::new();
        variables.insert(
            "entity".into(),
            json!({"type": entity.kind, "value": entity.value}),
        );
        let outcome = sandbox
            .run(ScriptJob {
                code: self.definition.definition.code.clone(),
                trigger_args: json!({}),
                variables,
                secrets: handed,
                allow_network: self.definition.definition.allow_network,
            })
            .await;
        if outcome.status != ScriptRunStatus::Success {
            let detail = outcome
                .syserr
                .clone()
                .or_else(|| {
                    outcome
                        .stderr
                        .lines()
                        .rev()
                        .find(|line| !line.trim().is_empty())
                        .map(str::to_string)
                })
                .unwrap_or_default();
            return Err(Failure::new(scrub.clean(&format!(
                "the enrichment script ended {}: {}",
                outcome.status,
                detail.chars().take(300).collect::<String>()
            ))));
        }
        let printed: Value = serde_json::from_str(outcome.stdout.trim()).map_err(|_| {
            Failure::new(
                "the enrichment script did not print one JSON object, such as \
                 {\"found\": true, \"facts\": {\"abuse_score\": 87}}",
            )
        })?;
        read_printed(&printed, entity).map_err(|error| Failure::new(scrub.clean(&error)))
    }
}

fn read_printed(printed: &Value, entity: &Entity) -> Result<Lookup, String> {
    let found = printed
        .get("found")
        .and_then(Value::as_bool)
        .ok_or("the enrichment script's JSON needs \"found\": true or false")?;
    if !found {
        return Ok(Lookup {
            result: AnswerResult::NotFound,
            raw: Some(printed.clone()),
        });
    }
    let mut facts = Vec::new();
    if let Some(declared) = printed.get("facts").and_then(Value::as_object) {
        for (name, value) in declared {
            let kind = FactKind::parse(name)
                .ok_or_else(|| format!("the enrichment script printed an unknown fact '{name}'"))?;
            let converted = crate::extract::facts(
                &[crate::extract::FactRule {
                    kind,
                    path: serde_json_path::JsonPath::parse("$")
                        .map_err(|error| error.to_string())?,
                    combine: crate::extract::Combine::First,
                    map: BTreeMap::new(),
                    otherwise: None,
                    for_kinds: Vec::new(),
                }],
                value,
                entity.kind,
            );
            if converted.is_empty() {
                return Err(format!(
                    "the enrichment script's fact '{name}' is not a {} value",
                    crate::definition::type_name(kind.value_type())
                ));
            }
            facts.extend(converted.into_iter().map(|fact| Fact { kind, ..fact }));
        }
    }
    Ok(Lookup {
        result: AnswerResult::Found(facts),
        raw: Some(printed.clone()),
    })
}

#[cfg(test)]
mod tests {
    use sleuth_domain::{EntityKind, FactValue};

    use super::*;

    #[test]
    fn printed_facts_are_checked_against_their_kinds() {
        let entity = Entity::new(EntityKind::Ip, "203.0.113.9");
        let lookup = read_printed(
            &json!({"found": true, "facts": {"abuse_score": 87, "labels": ["proxy"]}}),
            &entity,
        )
        .unwrap();
        let AnswerResult::Found(facts) = lookup.result else {
            panic!("found");
        };
        assert_eq!(facts[0].value, FactValue::Number(87.0));
        assert!(
            read_printed(
                &json!({"found": true, "facts": {"abuse_score": "high"}}),
                &entity
            )
            .is_err()
        );
        assert!(read_printed(&json!({"found": true, "facts": {"karma": 1}}), &entity).is_err());
        assert_eq!(
            read_printed(&json!({"found": false}), &entity)
                .unwrap()
                .result,
            AnswerResult::NotFound
        );
    }
}
