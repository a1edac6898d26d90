//! From judgements to a verdict. The rules, in order, and why:
//!
//! 1. **Proof** of malice (intel, honeytoken, the operator's word) → CONFIRMED. Nothing
//!    benign explains away a known C2 server.
//! 2. **Dismisses** (authorised scanner, SOC test, phishing simulation, an analyst's or
//!    the source's benign verdict) → FALSE_ALERT: the whole alert is accounted for.
//! 3. **Malicious** activity → CONFIRMED, unless something **Explains** part of it: then
//!    the two stories conflict and a human decides (SUSPICIOUS). Blocked or not: a
//!    blocked attack is still an attack. Independent doubts that add up (several signs
//!    against what succeeded, one of them strong: combination.rs) are malicious activity.
//! 4. **Explains** or **Reassures** with nothing **Suspicious** left → FALSE_ALERT: there
//!    is positive evidence of benignity and no doubt remains. A doubt that only restates
//!    the alert's own claim ("the source says malware") is answered by an **Explains** of
//!    that claim (the operator knows the file); independent doubts are not.
//!    Benign evidence counts here only when it answers the claim itself (claim.rs): a side
//!    fact (the VPN, an internal address) was set aside before the verdict.
//! 5. **Missing** essentials → INCOMPLETE.
//! 6. Otherwise → SUSPICIOUS. "Nothing bad found" is never a false alert: a missed breach
//!    is the worst error.
//!
//! Priority: urgent for active compromise or anything touching a crown jewel; notable
//! for blocked attacks and open suspicions; informational for false alerts.

use sleuth_domain::{Outcome, Priority, SeverityLevel};

use crate::case::Case;
use crate::judgement::{Judgement, Weight};

#[derive(Debug, Clone)]
pub(crate) struct Verdict {
    pub outcome: Outcome,
    pub priority: Priority,
    /// The judgements that decided the outcome, most decisive first (indices).
    pub decisive: Vec<usize>,
    /// Whether the source contained the activity (blocked, not delivered, sign-in failed).
    pub contained: bool,
    /// Why the priority is what it is, for the narrative.
    pub priority_reason: String,
}

pub(crate) fn decide(case: &Case<'_>, judgements: &[Judgement]) -> Verdict {
    let with = |weight: Weight| -> Vec<usize> {
        judgements
            .iter()
            .enumerate()
            .filter(|(_, judgement)| judgement.weight == weight)
            .map(|(index, _)| index)
            .collect()
    };
    let proof = with(Weight::Proof);
    let dismisses = with(Weight::Dismisses);
    let malicious = with(Weight::Malicious);
    let explains = with(Weight::Explains);
    let reassures = with(Weight::Reassures);
    // A doubt that only restates the claim is answered when something explains the claim.
    let suspicious: Vec<usize> = with(Weight::Suspicious)
        .into_iter()
        .filter(|index| explains.is_empty() || !judgements[*index].restates_claim)
        .collect();
    let missing = with(Weight::Missing);

    let (outcome, decisive) = if !proof.is_empty() {
        (Outcome::BreachedConfirmed, [proof, malicious].concat())
    } else if !dismisses.is_empty() {
        (Outcome::FalseAlert, dismisses)
    } else if !malicious.is_empty() && explains.is_empty() {
        (Outcome::BreachedConfirmed, malicious)
    } else if !malicious.is_empty() {
        (Outcome::BreachedSuspicious, [malicious, explains].concat())
    } else if suspicious.is_empty() && !(explains.is_empty() && reassures.is_empty()) {
        (Outcome::FalseAlert, [explains, reassures].concat())
    } else if !missing.is_empty() && suspicious.is_empty() {
        (Outcome::Incomplete, missing)
    } else {
        (Outcome::BreachedSuspicious, suspicious)
    };
    // Contained: the source stopped it, or every malicious finding is a failed attempt.
    let attempts_only = outcome == Outcome::BreachedConfirmed
        && decisive.iter().all(|index| judgements[*index].attempt);
    let contained = contained(case) || attempts_only;
    let (priority, priority_reason) = priority(case, judgements, outcome, contained);
    Verdict {
        outcome,
        priority,
        decisive,
        contained,
        priority_reason,
    }
}

/// Whether what the alert reports was stopped before it achieved anything.
pub(crate) fn contained(case: &Case<'_>) -> bool {
    let signals = case.signals;
    if case.blocked() {
        return true;
    }
    if let Some(email) = &signals.email {
        let clicked_through = email.clicked == Some(true) && email.click_permitted != Some(false);
        if !clicked_through
            && (email.delivered == Some(false) || email.click_permitted == Some(false))
        {
            return true;
        }
    }
    if let Some(sign_in) = &signals.sign_in
        && sign_in.succeeded == Some(false)
    {
        return true;
    }
    signals
        .secret
        .as_ref()
        .is_some_and(|secret| secret.resolved == Some(true))
}

fn priority(
    case: &Case<'_>,
    judgements: &[Judgement],
    outcome: Outcome,
    contained: bool,
) -> (Priority, String) {
    let urgent_reason = judgements
        .iter()
        .find_map(|judgement| judgement.urgent.clone());
    let severe = case
        .signals
        .severity_level
        .is_some_and(|level| level >= SeverityLevel::High);
    match outcome {
        Outcome::FalseAlert => (Priority::Informational, "it is a false alert".to_string()),
        Outcome::Ignored => (
            Priority::Informational,
            "it repeats an alert already investigated".to_string(),
        ),
        Outcome::BreachedConfirmed => match (&urgent_reason, contained) {
            (Some(reason), _) => (Priority::Urgent, format!("confirmed, and {reason}")),
            (None, false) => (
                Priority::Urgent,
                "the compromise is confirmed and nothing stopped it".to_string(),
            ),
            (None, true) => (
                Priority::Notable,
                format!(
                    "the attack is confirmed but {} stopped it",
                    case.alert.direct_source_label
                ),
            ),
        },
        Outcome::BreachedSuspicious => match &urgent_reason {
            Some(reason) => (Priority::Urgent, format!("it is unresolved, and {reason}")),
            None => (
                Priority::Notable,
                "it is unresolved: a human must look".to_string(),
            ),
        },
        Outcome::Incomplete => {
            if urgent_reason.is_some() || severe {
                (
                    Priority::Notable,
                    "the alert is incomplete but severe or touches a crown jewel".to_string(),
                )
            } else {
                (
                    Priority::Informational,
                    "the alert is incomplete and of low severity".to_string(),
                )
            }
        }
    }
}
