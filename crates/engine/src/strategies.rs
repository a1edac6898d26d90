//! Custom strategies on top of the engine's own verdict: scope (alert sources, attack
//! surfaces, MITRE tactics), outcome rules whose `condition` is JSON Logic over the
//! investigation's facts, priority rules (the lowest `ranking` among those that match
//! wins), and free-text instructions (recorded as used and listed for the analyst; no model
//! reads them). Deterministic: strategies and rules are tried in id order.

use std::sync::LazyLock;

use serde_json::{Map, Value, json};
use sleuth_domain::{Outcome, Priority, Strategy, StrategyEffects};

/// One JSON Logic engine for the process; compiled rules are small and cheap.
static LOGIC: LazyLock<datalogic_rs::Engine> = LazyLock::new(datalogic_rs::Engine::new);

/// Checks that a condition is valid JSON Logic, for the strategy endpoints to refuse bad
/// rules at write time rather than skip them at run time. Unknown operators and wrong
/// argument counts only show when evaluated, so the rule is also run once against an
/// investigation with no facts (branches not taken there are not checked).
pub fn check_condition(condition: &Value) -> Result<(), String> {
    LOGIC
        .compile(condition)
        .map_err(|error| format!("not valid JSON Logic: {error}"))?;
    LOGIC
        .eval_into::<Value, _, _>(condition, &json!({}))
        .map(|_| ())
        .map_err(|error| format!("not valid JSON Logic: {error}"))
}

/// Whether a condition holds for these facts. An error evaluating it (a hostile or broken
/// rule) counts as "does not hold", and is reported so it can be logged.
pub fn condition_holds(condition: &Value, facts: &Value) -> Result<bool, String> {
    LOGIC
        .eval_into::<Value, _, _>(condition, facts)
        .map(|result| truthy(&result))
        .map_err(|error| error.to_string())
}

/// JSON Logic truthiness, as JavaScript: null, false, 0, "" and [] are false.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64().is_some_and(|number| number != 0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(_) => true,
    }
}

/// What the strategies changed.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    pub outcome: Option<Outcome>,
    pub priority: Option<Priority>,
    /// SPEC's `custom_outcome`: which rule overrode the engine, and what the engine said.
    pub custom_outcome: Option<Map<String, Value>>,
    pub effects: StrategyEffects,
    /// The instructions in force, listed in the investigation for the analyst.
    pub instructions: Vec<String>,
    /// Rules that failed to evaluate: (strategy id, rule id, error).
    pub errors: Vec<(i64, i64, String)>,
}

/// The scope of an alert, as strategies filter on it.
pub struct Scope<'a> {
    pub source_labels: [&'a str; 3],
    pub attack_surface: Option<&'a str>,
    pub mitre_tactic: Option<&'a str>,
}

fn in_scope(strategy: &Strategy, scope: &Scope<'_>) -> bool {
    let listed = |list: &[String], value: Option<&str>| {
        list.is_empty()
            || value.is_some_and(|value| list.iter().any(|item| item.eq_ignore_ascii_case(value)))
    };
    let source_listed = strategy.alert_sources.is_empty()
        || scope.source_labels.iter().any(|label| {
            !label.is_empty()
                && strategy
                    .alert_sources
                    .iter()
                    .any(|source| source.eq_ignore_ascii_case(label))
        });
    source_listed
        && listed(&strategy.attack_surfaces, scope.attack_surface)
        && listed(&strategy.mitre_tactics, scope.mitre_tactic)
}

/// Applies every strategy in scope. `facts` builds the investigation's facts (carrying
/// `outcome`, the engine's, and `insight_tags`); it is called only when a strategy is in
/// scope, since building them costs more than the rest of the verdict. The outcome rules
/// see the engine's outcome, the priority rules the final one.
pub fn apply(
    strategies: &[Strategy],
    scope: &Scope<'_>,
    facts: impl FnOnce() -> Value,
    engine_outcome: Outcome,
) -> Applied {
    let mut applied = Applied::default();
    let mut ordered: Vec<&Strategy> = strategies
        .iter()
        .filter(|strategy| in_scope(strategy, scope))
        .collect();
    if ordered.is_empty() {
        return applied;
    }
    let mut facts = facts();
    ordered.sort_by_key(|strategy| strategy.strategy_id);
    for strategy in &ordered {
        applied
            .effects
            .strategy_version_ids
            .push(strategy.version_id);
        for instruction in &strategy.instructions {
            applied.effects.instruction_ids.push(instruction.id);
            applied.instructions.push(instruction.content.clone());
        }
    }
    'outcomes: for strategy in &ordered {
        let mut rules: Vec<_> = strategy.outcomes.iter().collect();
        rules.sort_by_key(|rule| rule.id);
        for rule in rules {
            match condition_holds(&rule.condition, &facts) {
                Ok(true) => {
                    let outcome = Outcome::from(rule.outcome);
                    applied.outcome = Some(outcome);
                    applied.effects.custom_outcome_id = Some(rule.id);
                    let mut custom = Map::new();
                    custom.insert("strategy_id".into(), json!(strategy.strategy_id));
                    custom.insert("version_id".into(), json!(strategy.version_id));
                    custom.insert("title".into(), json!(strategy.title));
                    custom.insert("rule_id".into(), json!(rule.id));
                    custom.insert("outcome".into(), json!(outcome));
                    custom.insert("engine_outcome".into(), json!(engine_outcome));
                    custom.insert("condition".into(), rule.condition.clone());
                    applied.custom_outcome = Some(custom);
                    break 'outcomes;
                }
                Ok(false) => {}
                Err(error) => applied.errors.push((strategy.strategy_id, rule.id, error)),
            }
        }
    }
    let final_outcome = applied.outcome.unwrap_or(engine_outcome);
    if let Value::Object(map) = &mut facts {
        map.insert("outcome".into(), json!(final_outcome));
    }
    let final_facts = facts;
    let mut best: Option<(i64, i64, Priority)> = None;
    for strategy in &ordered {
        for rule in &strategy.priorities {
            if !rule.outcomes.contains(&final_outcome) {
                continue;
            }
            let matches = match &rule.insight_tag_rule {
                None => true,
                Some(condition) => {
                    match condition_holds(&Value::Object(condition.clone()), &final_facts) {
                        Ok(holds) => holds,
                        Err(error) => {
                            applied.errors.push((strategy.strategy_id, rule.id, error));
                            false
                        }
                    }
                }
            };
            if matches
                && best.is_none_or(|(ranking, id, _)| (rule.ranking, rule.id) < (ranking, id))
            {
                best = Some((rule.ranking, rule.id, rule.priority));
            }
        }
    }
    if let Some((_, rule_id, priority)) = best {
        applied.priority = Some(priority);
        applied.effects.custom_priority_id = Some(rule_id);
    }
    applied
}

#[cfg(test)]
mod tests {
    use sleuth_domain::{
        CustomOutcomeValue, StrategyInstruction, StrategyOutcome, StrategyPriority,
    };

    use super::*;

    fn strategy(id: i64) -> Strategy {
        Strategy {
            strategy_id: id,
            version_id: id * 10,
            title: format!("strategy {id}"),
            scenario: None,
            alert_sources: Vec::new(),
            attack_surfaces: Vec::new(),
            mitre_tactics: Vec::new(),
            instructions: Vec::new(),
            outcomes: Vec::new(),
            priorities: Vec::new(),
        }
    }

    fn scope() -> Scope<'static> {
        Scope {
            source_labels: ["Okta", "okta", "okta_system_log_event"],
            attack_surface: Some("Identity"),
            mitre_tactic: Some("Initial Access"),
        }
    }

    fn facts() -> Value {
        json!({"outcome": "COMPLETED_BREACHED_SUSPICIOUS", "insight_tags": ["vip", "new_country"], "alert": {"source": "Okta"}})
    }

    #[test]
    fn an_outcome_rule_that_matches_overrides_and_says_what_the_engine_thought() {
        let mut rule_owner = strategy(1);
        rule_owner.outcomes.push(StrategyOutcome {
            id: 5,
            condition: json!({"in": ["new_country", {"var": "insight_tags"}]}),
            outcome: CustomOutcomeValue::FalseAlert,
        });
        let applied = apply(&[rule_owner], &scope(), facts, Outcome::BreachedSuspicious);
        assert_eq!(applied.outcome, Some(Outcome::FalseAlert));
        let custom = applied.custom_outcome.unwrap();
        assert_eq!(custom["engine_outcome"], "COMPLETED_BREACHED_SUSPICIOUS");
        assert_eq!(custom["rule_id"], 5);
        assert_eq!(applied.effects.custom_outcome_id, Some(5));
    }

    #[test]
    fn out_of_scope_strategies_do_nothing() {
        let mut other = strategy(1);
        other.alert_sources = vec!["CrowdStrike Falcon".into()];
        other.outcomes.push(StrategyOutcome {
            id: 1,
            condition: json!(true),
            outcome: CustomOutcomeValue::FalseAlert,
        });
        let applied = apply(&[other], &scope(), facts, Outcome::BreachedSuspicious);
        assert_eq!(applied.outcome, None);
        assert!(applied.effects.strategy_version_ids.is_empty());
    }

    #[test]
    fn the_lowest_ranking_matching_priority_rule_wins() {
        let mut owner = strategy(1);
        owner.priorities = vec![
            StrategyPriority {
                id: 1,
                priority: Priority::Notable,
                ranking: 10,
                outcomes: vec![Outcome::BreachedSuspicious],
                insight_tag_rule: None,
            },
            StrategyPriority {
                id: 2,
                priority: Priority::Urgent,
                ranking: 1,
                outcomes: vec![Outcome::BreachedSuspicious],
                insight_tag_rule: json!({"in": ["vip", {"var": "insight_tags"}]})
                    .as_object()
                    .cloned(),
            },
            StrategyPriority {
                id: 3,
                priority: Priority::Informational,
                ranking: 0,
                outcomes: vec![Outcome::FalseAlert],
                insight_tag_rule: None,
            },
        ];
        owner.instructions.push(StrategyInstruction {
            id: 7,
            content: "Check travel".into(),
        });
        let applied = apply(&[owner], &scope(), facts, Outcome::BreachedSuspicious);
        assert_eq!(applied.priority, Some(Priority::Urgent));
        assert_eq!(applied.effects.custom_priority_id, Some(2));
        assert_eq!(applied.effects.instruction_ids, vec![7]);
    }

    #[test]
    fn a_broken_rule_is_reported_not_applied() {
        assert!(check_condition(&json!({"no_such_operator": [1]})).is_err());
        assert!(check_condition(&json!({"==": [1, 1]})).is_ok());
    }

    #[test]
    fn truthiness_follows_json_logic() {
        for (value, expected) in [
            (json!(null), false),
            (json!(0), false),
            (json!(""), false),
            (json!([]), false),
            (json!("x"), true),
            (json!([0]), true),
            (json!({}), true),
        ] {
            assert_eq!(truthy(&value), expected, "{value}");
        }
    }
}
