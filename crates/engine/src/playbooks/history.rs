//! What the past says: analysts' verdicts on earlier investigations of the same
//! detection and entities (feedback teaches), the operator's memory about the entities,
//! and recent alerts that share entities (correlation).

use serde_json::json;
use sleuth_domain::{Likeness, MemoryVerdict, Outcome, PriorVerdict};

use crate::case::Case;
use crate::judgement::{Judgement, Weight};

pub fn run(case: &Case<'_>, out: &mut Vec<Judgement>) {
    analyst_feedback(case, out);
    operator_memory(case, out);
    related_alerts(case, out);
}

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
        });
        match outcome {
            Outcome::FalseAlert if !cited_false => {
                cited_false = true;
                let (weight, how_alike) = match prior.likeness {
                    Likeness::SameDetectionSameEntities => (
                        Weight::Dismisses,
                        format!(
                            "the same detection on the same entities ({})",
                            shared.join(", ")
                        ),
                    ),
                    Likeness::SameDetection => (
                        Weight::Reassures,
                        "the same detection on other entities".to_string(),
                    ),
                    Likeness::SharedEntities => (
                        Weight::Reassures,
                        format!(
                            "another detection on the same entities ({})",
                            shared.join(", ")
                        ),
                    ),
                };
                let mut judgement = Judgement::new(
                    weight,
                    format!("An analyst judged a similar alert a false alert (investigation {})", prior.investigation_id),
                    format!(
                        "On {when} an analyst concluded investigation {} ('{}'), {how_alike}, was a false alert.{note}",
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

fn related_alerts(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let related = &case.history.related_alerts;
    if related.is_empty() {
        return;
    }
    let confirmed: Vec<_> = related
        .iter()
        .filter(|alert| alert.outcome == Some(Outcome::BreachedConfirmed))
        .collect();
    let sources: std::collections::BTreeSet<&str> = related
        .iter()
        .map(|alert| alert.direct_source_label.as_str())
        .collect();
    let mut judgement = Judgement::new(
        if confirmed.is_empty() { Weight::Neutral } else { Weight::Suspicious },
        format!("{} related alert(s) share entities", related.len()),
        format!(
            "{} recent alert(s) from {} share entities with this one{}.",
            related.len(),
            sources.into_iter().collect::<Vec<_>>().join(", "),
            if confirmed.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} of them concluded as confirmed breaches (investigation {})",
                    confirmed.len(),
                    confirmed
                        .iter()
                        .map(|alert| alert.investigation_id.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
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
            }))
            .collect::<Vec<_>>()),
    )
    .tag("related_alerts", format!("{} related", related.len()));
    if !confirmed.is_empty() {
        judgement = judgement.urgent("related alerts were confirmed breaches");
    }
    out.push(judgement);
}
