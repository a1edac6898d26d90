//! A judgement is one line of reasoning: what was checked, what it showed, and how much
//! it weighs for or against compromise. Playbooks produce judgements; the verdict reads
//! only their weights; the narrative reads their words.

use serde_json::Value;
use sleuth_domain::{Evidence, Finding, FindingOutcome};

/// How a judgement bears on the verdict. The order of the variants is not their rank;
/// verdict.rs spells out how they combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Weight {
    /// Independent proof of malice that no benign story explains away: a threat-intel
    /// match, a honeytoken touched, the operator naming the entity malicious.
    Proof,
    /// The activity itself is malicious (malware, credential dumping, push fatigue that
    /// ended in an approval) unless something explains it.
    Malicious,
    /// Raises doubt a human must resolve.
    Suspicious,
    /// Dismisses the whole alert as authorised, a test, or already judged benign by a
    /// human: the authorised scanner, the SOC's test host, the phishing simulation.
    Dismisses,
    /// Explains the activity as expected (a sanctioned admin tool used as allowed, a
    /// service account doing what it is listed for, a known-good file). It does not
    /// outweigh malicious activity it does not cover: the two together need a human.
    Explains,
    /// Makes a benign story more likely without proving it (the corporate VPN, a partner).
    Reassures,
    /// Bears on priority or the narrative only (a VIP involved, the source blocked it).
    Neutral,
    /// Something an investigation needs is missing from the alert.
    Missing,
}

impl Weight {
    /// Evidence for a benign story: what can make an alert a false alert.
    pub fn is_benign(self) -> bool {
        matches!(
            self,
            Weight::Dismisses | Weight::Explains | Weight::Reassures
        )
    }

    pub fn finding_outcome(self) -> FindingOutcome {
        match self {
            Weight::Proof | Weight::Malicious => FindingOutcome::BreachedConfirmed,
            Weight::Suspicious => FindingOutcome::BreachedSuspicious,
            Weight::Dismisses | Weight::Explains | Weight::Reassures => FindingOutcome::FalseAlert,
            Weight::Neutral => FindingOutcome::ActionInfo,
            Weight::Missing => FindingOutcome::Incomplete,
        }
    }

    /// How prominently a finding of this weight is ranked (higher first).
    pub fn rank(self) -> u8 {
        match self {
            Weight::Proof => 9,
            Weight::Dismisses => 8,
            Weight::Malicious => 7,
            Weight::Explains => 6,
            Weight::Suspicious => 5,
            Weight::Missing => 4,
            Weight::Reassures => 3,
            Weight::Neutral => 1,
        }
    }

    /// `for` or `against` compromise, as the evidence tag says.
    fn evidence_tag(self) -> Option<&'static str> {
        match self {
            Weight::Proof | Weight::Malicious | Weight::Suspicious => Some("for"),
            Weight::Dismisses | Weight::Explains | Weight::Reassures => Some("against"),
            Weight::Neutral | Weight::Missing => None,
        }
    }
}

/// What a benign judgement can answer (claim.rs): the alert's claim itself, or only a side
/// attribute of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Covers {
    /// Whatever the alert claims: a planned test, the phishing simulation, the source's own
    /// benign closing, an authorised scanner for a scan.
    Claim,
    /// Where the actor connected from (the VPN, an office): answers only claims about that.
    Location,
    /// Only these behaviours (a known-good file answers claims about that file).
    Behaviours(&'static [crate::behaviour::Behaviour]),
    /// An allowance: answers any claim that is not high-harm, and the high-harm ones it names.
    Allowance(Vec<crate::behaviour::Behaviour>),
}

/// One line of reasoning.
#[derive(Debug, Clone)]
pub struct Judgement {
    pub weight: Weight,
    pub headline: String,
    /// The finding in full sentences, citing what was checked.
    pub detail: String,
    /// The entity values this judgement is about.
    pub artifacts: Vec<String>,
    pub evidences: Vec<Evidence>,
    /// The ATT&CK tactic this line of reasoning points to.
    pub tactic: Option<&'static str>,
    /// Insight tags (name, why) for filtering and strategies.
    pub tags: Vec<(&'static str, String)>,
    /// Remediations this judgement calls for, naming the entity.
    pub remediations: Vec<String>,
    /// Questions for a person involved: (who, question).
    pub questions: Vec<(String, String)>,
    /// Why this judgement alone warrants urgent attention, when it does (a crown jewel is
    /// involved, a honeytoken was touched, a confirmed breach continues).
    pub urgent: Option<String>,
    /// Set when the malicious activity is an attempt that did not succeed (guessing that
    /// never got in): confirmed, but not an active compromise.
    pub attempt: bool,
    /// For benign judgements: what they can answer.
    pub covers: Covers,
    /// Set when the judgement only restates what the detection claims (the source says
    /// "malware", "a scan", "an unusual sign-in"): benign evidence that explains the claim
    /// answers it, where independent doubt would remain.
    pub restates_claim: bool,
}

impl Judgement {
    pub fn new(
        weight: Weight,
        headline: impl Into<String>,
        detail: impl Into<String>,
    ) -> Judgement {
        Judgement {
            weight,
            headline: headline.into(),
            detail: detail.into(),
            artifacts: Vec::new(),
            evidences: Vec::new(),
            tactic: None,
            tags: Vec::new(),
            remediations: Vec::new(),
            questions: Vec::new(),
            urgent: None,
            attempt: false,
            covers: Covers::Claim,
            restates_claim: false,
        }
    }

    /// What this (benign) judgement can answer.
    pub fn covers(mut self, covers: Covers) -> Judgement {
        self.covers = covers;
        self
    }

    /// Marks a judgement that only restates the alert's own claim.
    pub fn restates_claim(mut self) -> Judgement {
        self.restates_claim = true;
        self
    }

    pub fn artifact(mut self, value: impl Into<String>) -> Judgement {
        let value = value.into();
        if !self.artifacts.contains(&value) {
            self.artifacts.push(value);
        }
        self
    }

    /// Evidence of what was checked (`evidence_type`) and what it showed (`data`).
    pub fn evidence(mut self, evidence_type: &str, data: Value) -> Judgement {
        let tag = self.weight.evidence_tag().map(str::to_string);
        self.evidences.push(Evidence {
            data,
            evidence_type: evidence_type.to_string(),
            tag,
        });
        self
    }

    pub fn tactic(mut self, tactic: &'static str) -> Judgement {
        self.tactic = Some(tactic);
        self
    }

    pub fn attempt(mut self) -> Judgement {
        self.attempt = true;
        self
    }

    /// The tactic, when `condition` holds.
    pub fn tactic_if(self, condition: bool, tactic: &'static str) -> Judgement {
        if condition { self.tactic(tactic) } else { self }
    }

    pub fn tag(mut self, name: &'static str, why: impl Into<String>) -> Judgement {
        self.tags.push((name, why.into()));
        self
    }

    pub fn remediation(mut self, text: impl Into<String>) -> Judgement {
        self.remediations.push(text.into());
        self
    }

    pub fn question(mut self, who: impl Into<String>, text: impl Into<String>) -> Judgement {
        self.questions.push((who.into(), text.into()));
        self
    }

    pub fn urgent(mut self, reason: impl Into<String>) -> Judgement {
        self.urgent = Some(reason.into());
        self
    }

    /// The finding as SPEC shows it (the judgement is done with once this is taken).
    pub fn into_finding(self) -> Finding {
        Finding {
            outcome: self.weight.finding_outcome(),
            headline: self.headline,
            finding: self.detail,
            artifacts: self.artifacts,
            evidences: self.evidences,
        }
    }
}

/// Folds repeated judgements into one. A judgement's identity is its weight and its words:
/// the same fact reached through two entities of one alert (an account written `svc-monitor`
/// and `CORP\svc-monitor`, a host and its address) is one finding about both, never two
/// findings that read twice as strong. The first keeps its place and gains the others'
/// artifacts, evidence, tags, steps and questions it lacks.
pub(crate) fn merge_repeats(judgements: &mut Vec<Judgement>) {
    let mut index = 0;
    while index < judgements.len() {
        let (kept, rest) = judgements.split_at_mut(index + 1);
        let first = &mut kept[index];
        let mut repeats = Vec::new();
        for (offset, other) in rest.iter().enumerate() {
            if other.weight == first.weight
                && other.headline == first.headline
                && other.detail == first.detail
            {
                repeats.push(index + 1 + offset);
            }
        }
        for position in repeats.into_iter().rev() {
            let repeat = judgements.remove(position);
            let first = &mut judgements[index];
            fold(&mut first.artifacts, repeat.artifacts);
            fold(&mut first.evidences, repeat.evidences);
            fold(&mut first.tags, repeat.tags);
            fold(&mut first.remediations, repeat.remediations);
            fold(&mut first.questions, repeat.questions);
            first.urgent = first.urgent.take().or(repeat.urgent);
        }
        index += 1;
    }
}

/// Appends what `more` holds that `into` lacks, in order.
fn fold<T: PartialEq>(into: &mut Vec<T>, more: Vec<T>) {
    for item in more {
        if !into.contains(&item) {
            into.push(item);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_repeated_judgement_is_one_finding_about_every_entity_it_reached() {
        let about = |account: &str| {
            Judgement::new(
                Weight::Malicious,
                "Service account svc-monitor acting outside its profile",
                "The service account svc-monitor ran procdump64.exe on mon-01.",
            )
            .artifact(account)
            .evidence("service_account_profile", json!({"account": "svc-monitor"}))
            .tag("service_account_misuse", "svc-monitor")
        };
        let other = Judgement::new(
            Weight::Malicious,
            "LSASS memory was read",
            "procdump -ma lsass",
        );
        let mut judgements = vec![
            about("svc-monitor"),
            other.clone(),
            about("corp\\svc-monitor"),
            // Same words, another weight: another judgement.
            Judgement::new(
                Weight::Suspicious,
                "Service account svc-monitor acting outside its profile",
                "The service account svc-monitor ran procdump64.exe on mon-01.",
            ),
        ];
        merge_repeats(&mut judgements);
        assert_eq!(judgements.len(), 3);
        assert_eq!(
            judgements[0].artifacts,
            ["svc-monitor", "corp\\svc-monitor"]
        );
        assert_eq!(judgements[0].evidences.len(), 1);
        assert_eq!(judgements[0].tags.len(), 1);
        assert_eq!(judgements[1].headline, other.headline);
        assert_eq!(judgements[2].weight, Weight::Suspicious);
    }
}
