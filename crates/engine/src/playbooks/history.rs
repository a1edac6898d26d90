//! What the past says: analysts' verdicts on earlier investigations of the same
//! detection and entities (feedback teaches), the operator's memory about the entities,
//! and recent alerts that share entities (correlation). A human verdict decides only its
//! scope (the same rule on the same entities, while fresh) and yields to fresh evidence of
//! harm; related alerts weigh by their own verdicts, and entities everybody touches carry
//! little.

use serde_json::json;
use sleuth_domain::{Likeness, MemoryVerdict, Outcome, PriorVerdict};

use crate::case::Case;
use crate::context::NetworkPlace;
use crate::judgement::{Judgement, Weight};

pub(crate) fn run(case: &Case<'_>, out: &mut Vec<Judgement>) {
    analyst_feedback(case, out);
    operator_memory(case, out);
    related_alerts(case, out);
}

/// How long an analyst's verdict keeps deciding: after this the same detection is judged
/// afresh (hosts change hands, tools change, attackers learn what was once waved through).
pub(crate) const FEEDBACK_LIFETIME_DAYS: i64 = 90;

fn analyst_feedback(case: &Case<'_>, out: &mut Vec<Judgement>) {
    // Only the most telling verdict of each kind is cited: the newest first (the store
    // orders them), the closest likeness first among those.
    let mut cited_false = false;
    let mut cited_breach = false;
    let mut verdicts: Vec<&PriorVerdict> = case
        .history
        .prior_verdicts
        .iter()
        .filter(|prior| prior.analyst_outcome.is_some())
        .collect();
    verdicts.sort_by_key(|prior| likeness_rank(prior.likeness));
    for prior in verdicts {
        let Some(outcome) = prior.analyst_outcome else {
            continue;
        };
        let note = prior
            .analyst_note
            .as_deref()
            .map(|note| format!(" Their note: \"{note}\"."))
            .unwrap_or_default();
        let when = prior.decided_at.format("%Y-%m-%d");
        let shared = prior
            .shared_entities
            .iter()
            .map(|entity| entity.value.clone())
            .collect::<Vec<_>>();
        // Measured from the alert's own time, so that replaying old alerts reads the same.
        let age_days = (case.alert.create_time - prior.decided_at)
            .num_days()
            .max(0);
        let expired = age_days > FEEDBACK_LIFETIME_DAYS;
        let same_rule = prior.alert_type == case.alert.alert_type;
        let in_scope = prior.likeness == Likeness::SameDetectionSameEntities && same_rule;
        let evidence = json!({
            "investigation_id": prior.investigation_id,
            "title": prior.title,
            "likeness": prior.likeness,
            "analyst_outcome": outcome,
            "engine_outcome": prior.engine_outcome,
            "note": prior.analyst_note,
            "reviewed": prior.reviewed,
            "shared_entities": shared,
            "decided_at": prior.decided_at,
            "scope": {
                "same_rule": same_rule,
                "same_entities": prior.likeness == Likeness::SameDetectionSameEntities,
                "age_days": age_days,
                "expires_after_days": FEEDBACK_LIFETIME_DAYS,
                "expired": expired,
            },
        });
        match outcome {
            Outcome::FalseAlert if !cited_false => {
                cited_false = true;
                // A human verdict decides only its own scope: the same rule on the same
                // entities, while it is fresh. Anything wider is cited and decides nothing.
                let (weight, how_alike, reach) = match prior.likeness {
                    Likeness::SameDetectionSameEntities if expired => (
                        Weight::Neutral,
                        format!(
                            "the same detection on the same entities ({})",
                            shared.join(", ")
                        ),
                        format!(
                            " That verdict is {age_days} days old, past the {FEEDBACK_LIFETIME_DAYS} days a \
                             verdict decides for: this alert is judged afresh."
                        ),
                    ),
                    Likeness::SameDetectionSameEntities if in_scope => (
                        Weight::Dismisses,
                        format!(
                            "the same detection on the same entities ({})",
                            shared.join(", ")
                        ),
                        format!(
                            " It is {age_days} days old and decides this alert unless fresh evidence of harm outweighs it."
                        ),
                    ),
                    Likeness::SameDetectionSameEntities | Likeness::SameDetection => (
                        Weight::Neutral,
                        "the same detection on other entities".to_string(),
                        " It was about other entities, so it does not decide this alert."
                            .to_string(),
                    ),
                    Likeness::SharedEntities => (
                        Weight::Neutral,
                        format!(
                            "another detection on the same entities ({})",
                            shared.join(", ")
                        ),
                        " It was about another detection, so it does not decide this alert."
                            .to_string(),
                    ),
                };
                let mut judgement = Judgement::new(
                    weight,
                    format!("An analyst judged a similar alert a false alert (investigation {})", prior.investigation_id),
                    format!(
                        "On {when} an analyst concluded investigation {} ('{}'), {how_alike}, was a false alert.{note}{reach}",
                        prior.investigation_id, prior.title
                    ),
                )
                .evidence("analyst_feedback", evidence)
                .tag("analyst_feedback", format!("investigation {} judged a false alert", prior.investigation_id));
                for value in shared {
                    judgement = judgement.artifact(value);
                }
                out.push(judgement);
            }
            Outcome::BreachedConfirmed | Outcome::BreachedSuspicious if !cited_breach => {
                cited_breach = true;
                let confirmed = outcome == Outcome::BreachedConfirmed;
                let mut judgement = Judgement::new(
                    Weight::Suspicious,
                    format!(
                        "Shares entities with a {} investigation ({})",
                        if confirmed { "confirmed breach" } else { "suspicious" },
                        prior.investigation_id
                    ),
                    format!(
                        "On {when} an analyst concluded investigation {} ('{}') was {}; it shares {} with this alert, \
                         which may be the same intrusion continuing.{note}",
                        prior.investigation_id,
                        prior.title,
                        if confirmed { "a confirmed breach" } else { "suspicious" },
                        if shared.is_empty() { "its detection".to_string() } else { shared.join(", ") }
                    ),
                )
                .evidence("analyst_feedback", evidence)
                .tag("related_to_breach", format!("investigation {}", prior.investigation_id));
                if confirmed {
                    judgement = judgement.urgent("it continues a confirmed breach");
                }
                for value in shared {
                    judgement = judgement.artifact(value);
                }
                out.push(judgement);
            }
            _ => {}
        }
    }
}

/// An analyst's "false alert" weighs less than fresh evidence of harm: when this alert's
/// own checks found malicious activity, the verdict no longer dismisses it but explains
/// part of it, and the two stories go to a human. Runs after every playbook.
pub(crate) fn feedback_yields_to_fresh_harm(judgements: &mut [Judgement]) {
    let harm: Vec<String> = judgements
        .iter()
        .filter(|judgement| matches!(judgement.weight, Weight::Malicious | Weight::Proof))
        .map(|judgement| judgement.headline.clone())
        .collect();
    if harm.is_empty() {
        return;
    }
    for judgement in judgements.iter_mut() {
        let from_feedback = judgement
            .tags
            .iter()
            .any(|(name, _)| *name == "analyst_feedback");
        if from_feedback && judgement.weight == Weight::Dismisses {
            judgement.weight = Weight::Explains;
            judgement.detail = format!(
                "{} This alert's own checks found harm ({}): fresh evidence outweighs an earlier human \
                 verdict, so it does not close this alert by itself.",
                judgement.detail,
                harm.join("; ")
            );
        }
    }
}

fn likeness_rank(likeness: Likeness) -> u8 {
    match likeness {
        Likeness::SameDetectionSameEntities => 0,
        Likeness::SharedEntities => 1,
        Likeness::SameDetection => 2,
    }
}

fn operator_memory(case: &Case<'_>, out: &mut Vec<Judgement>) {
    for item in &case.history.memory {
        let about: Vec<String> = item
            .entities
            .iter()
            .map(|entity| entity.value.clone())
            .collect();
        let (weight, headline) = match item.verdict {
            Some(MemoryVerdict::Benign) => {
                (Weight::Explains, "The operator's notes say this is benign")
            }
            Some(MemoryVerdict::Malicious) => {
                (Weight::Proof, "The operator's notes name this as malicious")
            }
            None => (Weight::Neutral, "The operator's notes mention this"),
        };
        let mut judgement = Judgement::new(
            weight,
            headline,
            format!("Context memory item {} about {}: \"{}\"", item.item_id, about.join(", "), item.text),
        )
        .evidence(
            "context_memory",
            json!({"item_id": item.item_id, "text": item.text, "verdict": item.verdict, "entities": about}),
        )
        .tag("context_memory", item.text.clone());
        for value in about {
            judgement = judgement.artifact(value);
        }
        out.push(judgement);
    }
}

/// Why an entity is everywhere (a jump host, a scanner, a shared egress), when it is:
/// sharing it with another alert says little about a common story.
fn everywhere(case: &Case<'_>, entity: &sleuth_domain::Entity) -> Option<String> {
    const SHARED_ROLES: &[&str] = &[
        "jump",
        "bastion",
        "proxy",
        "gateway",
        "scanner",
        "nat",
        "load balancer",
        "relay",
        "domain controller",
        "vpn",
    ];
    let knowledge = case.context.about(entity);
    if let Some(scanner) = knowledge.scanner {
        return Some(format!(
            "{} is the scanner '{}'",
            entity.value, scanner.name
        ));
    }
    if matches!(
        knowledge.place,
        Some(NetworkPlace::VpnEgress | NetworkPlace::OfficeNat | NetworkPlace::OwnPublic)
    ) {
        return Some(format!("{} is a shared egress address", entity.value));
    }
    let role = knowledge.asset.and_then(|asset| asset.role.as_deref())?;
    let lowered = role.to_lowercase();
    SHARED_ROLES
        .iter()
        .any(|shared| lowered.contains(shared))
        .then(|| format!("{} is a {role}", entity.value))
}

/// Related alerts weigh by their own verdicts: a confirmed breach on a telling entity raises
/// doubt (and urgency); unresolved ones and false alerts (the same benign pattern again) add
/// nothing; alerts that share only entities everybody touches carry nothing.
fn related_alerts(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let related = &case.history.related_alerts;
    if related.is_empty() {
        return;
    }
    let mut background: Vec<String> = Vec::new();
    let mut telling = Vec::new();
    for alert in related {
        let mut reasons = Vec::new();
        let shares_telling =
            alert
                .shared_entities
                .iter()
                .any(|entity| match everywhere(case, entity) {
                    Some(reason) => {
                        reasons.push(reason);
                        false
                    }
                    None => true,
                });
        if shares_telling || alert.shared_entities.is_empty() {
            telling.push(alert);
        } else {
            for reason in reasons {
                if !background.contains(&reason) {
                    background.push(reason);
                }
            }
        }
    }
    let confirmed: Vec<_> = telling
        .iter()
        .filter(|alert| alert.outcome == Some(Outcome::BreachedConfirmed))
        .collect();
    let benign = telling
        .iter()
        .filter(|alert| matches!(alert.outcome, Some(Outcome::FalseAlert | Outcome::Ignored)))
        .count();
    let unresolved = telling.len() - confirmed.len() - benign;
    let sources: std::collections::BTreeSet<&str> = related
        .iter()
        .map(|alert| alert.direct_source_label.as_str())
        .collect();
    let confirmed_ids = confirmed
        .iter()
        .map(|alert| alert.investigation_id.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let mut parts = Vec::new();
    if !confirmed.is_empty() {
        parts.push(format!(
            "{} concluded as confirmed breaches (investigation {}), which makes this one more likely part of \
             an intrusion",
            confirmed.len(),
            confirmed_ids
        ));
    }
    if unresolved > 0 {
        parts.push(format!(
            "{unresolved} unresolved, which adds nothing either way"
        ));
    }
    if benign > 0 {
        parts.push(format!(
            "{benign} concluded as false alerts, the same benign pattern again, which adds no doubt"
        ));
    }
    if !background.is_empty() {
        parts.push(format!(
            "{} share only entities that are everywhere ({}), which carry little",
            related.len() - telling.len(),
            background.join("; ")
        ));
    }
    let mut judgement = Judgement::new(
        if confirmed.is_empty() { Weight::Neutral } else { Weight::Suspicious },
        if confirmed.is_empty() {
            format!("{} related alert(s) share entities", related.len())
        } else {
            format!(
                "{} related alert(s) share entities, {} of them confirmed breaches (investigation {})",
                related.len(),
                confirmed.len(),
                confirmed_ids
            )
        },
        format!(
            "{} recent alert(s) from {} share entities with this one. By their own verdicts: {}.",
            related.len(),
            sources.into_iter().collect::<Vec<_>>().join(", "),
            parts.join("; ")
        ),
    )
    .evidence(
        "correlation",
        json!(related
            .iter()
            .take(10)
            .map(|alert| json!({
                "investigation_id": alert.investigation_id,
                "title": alert.title,
                "source": alert.direct_source_label,
                "outcome": alert.outcome,
                "shared_entities": alert.shared_entities.iter().map(|entity| &entity.value).collect::<Vec<_>>(),
                "telling": telling.iter().any(|kept| std::ptr::eq(*kept, alert)),
            }))
            .collect::<Vec<_>>()),
    )
    .tag("related_alerts", format!("{} related", related.len()));
    if !confirmed.is_empty() {
        judgement = judgement.urgent("related alerts were confirmed breaches");
    }
    out.push(judgement);
}
