//! The investigation engine: from a parsed alert, what Sleuth already knows (history and the
//! operator's context) and the custom strategies in force, to the conclusion a seasoned
//! analyst would reach, with the evidence behind it. Deterministic and pure: it never
//! touches the network, the disk, the database or the clock (`now` is passed in).
//!
//! One investigation, top to bottom ([`investigate`]): build the `Case` (every
//! entity looked up in the context) → run the playbooks (judgements with weights), and
//! judge what the data sources answered (`playbooks::data_sources`) → the
//! verdict (outcome, priority) → custom strategies → the narrative.
#![forbid(unsafe_code)]

pub mod behaviour;
mod case;
pub mod claim;
mod combination;
pub mod context;
mod judgement;
mod narrative;
mod playbooks;
pub mod scoring;
pub mod strategies;
mod verdict;
mod vocabulary;

use serde_json::{Map, Value, json};
use sleuth_domain::{
    Facts, History, InvestigationResult, Outcome, ParsedAlert, Strategy, Timestamp, mitre,
};

pub use context::{Context, ContextDocument, ContextErrors, Intel, IntelKind};

use case::Case;
use judgement::Judgement;
use verdict::Verdict;

/// Everything one investigation reads.
#[derive(Debug, Clone, Copy)]
pub struct EngineInput<'a> {
    pub alert: &'a ParsedAlert,
    /// The alert exactly as the source sent it. Playbooks do not read it (they read the
    /// parser's signals); it is here for the narrative model, when one is configured.
    pub raw: &'a Map<String, Value>,
    pub history: &'a History,
    /// What the team's own systems (data sources) answered about the alert's entities,
    /// gathered by the caller before the engine runs.
    pub facts: &'a Facts,
    /// The latest enabled version of every custom strategy.
    pub strategies: &'a [Strategy],
    pub now: Timestamp,
}

/// Investigates one alert.
pub fn investigate(input: &EngineInput<'_>, context: &Context) -> InvestigationResult {
    let case = Case::new(input.alert, input.history, context);
    let claim = claim::of(&case);
    let mut judgements = playbooks::run_all(&case);
    playbooks::data_sources::run(&case, &claim, input.facts, &mut judgements);
    playbooks::common::never_rules(&case, &claim, &mut judgements);
    playbooks::common::people_state(&case, &claim, &mut judgements);
    playbooks::history::feedback_yields_to_fresh_harm(&mut judgements);
    claim::weigh(&case, &claim, &mut judgements);
    combination::weigh(&case, &claim, &mut judgements);
    let verdict = verdict::decide(&case, &judgements);
    let order = ranked(&judgements);
    let mitre_tactic = mitre_tactic(&case, &claim, &judgements, &verdict);
    let mut narrative = narrative::write(&case, &claim, &judgements, &verdict, &order);

    let alert = input.alert;
    let applied = strategies::apply(
        input.strategies,
        &strategies::Scope {
            source_labels: [
                alert.direct_source_label.as_str(),
                alert.origin_integration.as_deref().unwrap_or_default(),
                alert.schema_key.as_str(),
            ],
            attack_surface: narrative.attack_surface.as_deref(),
            mitre_tactic,
        },
        || {
            facts(
                &case,
                &judgements,
                &verdict,
                mitre_tactic,
                narrative.attack_surface.as_deref(),
                &narrative.insight_tags,
            )
        },
        verdict.outcome,
    );
    let outcome = applied.outcome.unwrap_or(verdict.outcome);
    let priority = applied
        .priority
        .unwrap_or(match (applied.outcome, verdict.outcome) {
            // A rule that turned a verdict into a false alert also takes its urgency away.
            (Some(Outcome::FalseAlert), _) => sleuth_domain::Priority::Informational,
            _ => verdict.priority,
        });
    if let Some(custom) = &applied.custom_outcome {
        narrative.conclusion = format!(
            "{} Custom strategy '{}' set the outcome to {outcome} (the engine concluded {}).",
            narrative.conclusion,
            custom
                .get("title")
                .and_then(Value::as_str)
                .unwrap_or("(untitled)"),
            verdict.outcome
        );
    }
    if !applied.instructions.is_empty() {
        narrative
            .key_findings
            .insert("custom_instructions".into(), json!(applied.instructions));
    }
    if !applied.errors.is_empty() {
        narrative.key_findings.insert(
            "strategy_rule_errors".into(),
            json!(
                applied
                    .errors
                    .iter()
                    .map(|(strategy, rule, error)| format!(
                        "strategy {strategy} rule {rule}: {error}"
                    ))
                    .collect::<Vec<_>>()
            ),
        );
    }

    InvestigationResult {
        outcome,
        priority,
        conclusion: narrative.conclusion,
        conclusion_summary: Some(narrative.conclusion_summary),
        alert_summary: Some(narrative.alert_summary),
        exec_summary: Some(narrative.exec_summary),
        attack_surface: narrative.attack_surface,
        mitre_tactic: mitre_tactic.map(str::to_string),
        findings: findings_in_order(judgements, &order),
        findings_ranking: narrative.findings_ranking,
        key_findings: narrative.key_findings,
        insight_tags: narrative.insight_tags,
        interview_proposals: narrative.interview_proposals,
        recommended_remediations: narrative.recommended_remediations,
        related_alert_hypothesis: narrative.related_alert_hypothesis,
        enrich_result: Some(enrichment(&case)),
        custom_outcome: applied.custom_outcome,
        strategy_effects: applied.effects,
    }
}

/// The judgements as findings, in ranked order (consumes them: they are done with).
fn findings_in_order(judgements: Vec<Judgement>, order: &[usize]) -> Vec<sleuth_domain::Finding> {
    let mut slots: Vec<Option<Judgement>> = judgements.into_iter().map(Some).collect();
    order
        .iter()
        .filter_map(|index| slots.get_mut(*index).and_then(Option::take))
        .map(Judgement::into_finding)
        .collect()
}

/// Judgement indices, most telling first (by weight, then in the order found).
fn ranked(judgements: &[Judgement]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..judgements.len()).collect();
    order.sort_by_key(|index| std::cmp::Reverse(judgements[*index].weight.rank()));
    order
}

/// The ATT&CK tactic to headline: the source's own when it names one, else the tactic
/// of the most decisive judgement that implies one, else that of the claimed behaviour
/// (a false alert's too: the tactic says what the detection claims, not that it
/// happened). An alert that names nothing to investigate names no tactic of its own.
fn mitre_tactic(
    case: &Case<'_>,
    claim: &claim::Claim,
    judgements: &[Judgement],
    verdict: &Verdict,
) -> Option<&'static str> {
    let source = case
        .signals
        .mitre_tactics
        .iter()
        .find_map(|tactic| mitre::canonical_tactic(tactic));
    if verdict.outcome == Outcome::Incomplete {
        return source;
    }
    source
        .or_else(|| {
            verdict
                .decisive
                .iter()
                .find_map(|index| judgements[*index].tactic)
        })
        .or_else(|| {
            // A false alert answered its claim: the tactic is the claimed behaviour's (a
            // scan explained by the authorised scanner is still a scan), never that of a
            // finding the benign evidence outweighed.
            if matches!(verdict.outcome, Outcome::FalseAlert | Outcome::Ignored) {
                return claim.behaviour.tactic();
            }
            let mut by_rank: Vec<&Judgement> = judgements
                .iter()
                .filter(|judgement| judgement.tactic.is_some())
                .collect();
            by_rank.sort_by_key(|judgement| std::cmp::Reverse(judgement.weight.rank()));
            by_rank
                .first()
                .and_then(|judgement| judgement.tactic)
                .or_else(|| claim.behaviour.tactic())
        })
}

/// The investigation's facts, as custom strategies' JSON Logic sees them. The shape is
/// documented in docs/strategies.md; change both together.
fn facts(
    case: &Case<'_>,
    judgements: &[Judgement],
    verdict: &Verdict,
    mitre_tactic: Option<&str>,
    attack_surface: Option<&str>,
    insight_tags: &Map<String, Value>,
) -> Value {
    let alert = case.alert;
    let mut entities = Map::new();
    for entity in &alert.entities {
        let list = entities
            .entry(entity.kind.as_str().to_string())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(values) = list {
            values.push(Value::String(entity.value.clone()));
        }
    }
    let count = |weight: judgement::Weight| {
        judgements
            .iter()
            .filter(|judgement| judgement.weight == weight)
            .count()
    };
    json!({
        "alert": {
            "title": alert.title,
            "alert_type": alert.alert_type,
            "source": alert.direct_source_label,
            "schema_key": alert.schema_key,
            "severity": alert.severity,
            "severity_level": alert.signals.severity_level,
            "category": case.category().map(|category| category.as_str()),
            "tenant_id": alert.tenant_id,
            "entities": entities,
            "tags": alert.signals.tags,
            "mitre_tactics": alert.signals.mitre_tactics,
            "mitre_techniques": alert.signals.mitre_techniques,
            "action": alert.signals.action,
            "source_verdict": alert.signals.source_verdict,
        },
        "outcome": verdict.outcome,
        "priority": verdict.priority,
        "contained": verdict.contained,
        "mitre_tactic": mitre_tactic,
        "attack_surface": attack_surface,
        "insight_tags": insight_tags.keys().collect::<Vec<_>>(),
        "findings": {
            "proof": count(judgement::Weight::Proof),
            "malicious": count(judgement::Weight::Malicious),
            "suspicious": count(judgement::Weight::Suspicious),
            "dismisses": count(judgement::Weight::Dismisses),
            "explains": count(judgement::Weight::Explains),
            "reassures": count(judgement::Weight::Reassures),
            "missing": count(judgement::Weight::Missing),
        },
    })
}

/// What enrichment found per entity, for the alert's `enrich_result`.
fn enrichment(case: &Case<'_>) -> Map<String, Value> {
    let mut result = Map::new();
    for (entity, knowledge) in &case.known {
        let mut facts = Map::new();
        if !knowledge.intel.is_empty() {
            facts.insert(
                "threat_intel".into(),
                json!(knowledge
                    .intel
                    .iter()
                    .map(|intel| json!({"category": intel.category, "description": intel.description, "source": intel.source, "confidence": intel.confidence}))
                    .collect::<Vec<_>>()),
            );
        }
        if let Some(place) = knowledge.place {
            facts.insert("network".into(), json!(format!("{place:?}").to_lowercase()));
        }
        if let Some(identity) = knowledge.identity {
            facts.insert(
                "identity".into(),
                json!({"user": identity.user, "name": identity.name, "department": identity.department, "title": identity.title, "location": identity.location, "vip": identity.vip, "privileged": identity.privileged || identity.it_admin}),
            );
        }
        if let Some(asset) = knowledge.asset {
            facts.insert("asset".into(), json!({"host": asset.host, "role": asset.role, "critical": asset.critical, "owner": asset.owner}));
        }
        if let Some(segment) = knowledge.segment {
            facts.insert(
                "segment".into(),
                json!({"name": segment.name, "critical": segment.critical}),
            );
        }
        if let Some(account) = knowledge.service_account {
            facts.insert(
                "service_account".into(),
                json!({"user": account.user, "description": account.description}),
            );
        }
        for (flag, name) in [
            (knowledge.scanner.is_some(), "authorised_scanner"),
            (knowledge.soc_test, "soc_test"),
            (knowledge.phishing_simulation, "phishing_simulation"),
            (
                knowledge.known_good_hash || knowledge.known_good_domain || knowledge.known_good_ip,
                "known_good",
            ),
            (knowledge.partner_domain, "partner"),
            (knowledge.own_domain, "own_domain"),
            (knowledge.own_cloud_account, "own_cloud_account"),
            (knowledge.honeytoken.is_some(), "honeytoken"),
        ] {
            if flag {
                facts.insert(name.into(), Value::Bool(true));
            }
        }
        if !facts.is_empty() {
            facts.insert("type".into(), json!(entity.kind));
            result.insert(entity.value.clone(), Value::Object(facts));
        }
    }
    result
}

/// At most `limit` characters, with an ellipsis when cut.
pub(crate) use sleuth_normalize::text::truncate;
