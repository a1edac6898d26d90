//! Independent signals add up. Each playbook judges one sign on its own (a Tor exit, an
//! action a policy forbids, a sensitive change, the vendor's own risk rating), and each on
//! its own is only a doubt. Several independent signs against what succeeded, one of them
//! strong, are an intruder rather than a coincidence: this module names the signs, counts
//! each family once, and when they add up says so in one judgement that lists every sign
//! and the finding it came from.
//!
//! What never counts: the alert's own severity (it restates the detection, it is not a
//! second witness), a sign that a benign fact already answered (claim.rs set it aside),
//! and the same sign told twice (Tor and "anonymous IP" are one family).

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
use serde_json::json;
use sleuth_domain::SourceVerdict;

use crate::behaviour::Behaviour;
use crate::case::Case;
use crate::claim::Claim;
use crate::judgement::{Judgement, Weight};

/// The kinds of independent sign. Two signs of one family are one sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// Tor, an anonymising proxy or VPN service hiding the actor.
    Anonymiser,
    /// An action the operator's policy forbids.
    Forbidden,
    ImpossibleTravel,
    LeakedCredentials,
    /// An indicator of the operator's intelligence too weak to prove malice by itself.
    WeakIntel,
    /// The change itself is sensitive: a privilege grant, a new key or factor, an MFA reset.
    SensitiveChange,
    /// A country the person or organisation does not work from.
    NewCountry,
    /// The vendor's own risk rating of the activity (not the alert's severity).
    VendorRisk,
    /// The vendor says the behaviour is new for this actor (first seen, new device, ...).
    NewBehaviour,
    /// The vendor's own confident verdict that the activity is suspicious.
    VendorConfidence,
    /// Access or data went to an account that is not the organisation's.
    ForeignAccount,
}

impl Family {
    fn strong(self) -> bool {
        matches!(
            self,
            Family::Anonymiser
                | Family::Forbidden
                | Family::ImpossibleTravel
                | Family::LeakedCredentials
                | Family::WeakIntel
        )
    }

    fn name(self) -> &'static str {
        match self {
            Family::Anonymiser => "anonymising infrastructure",
            Family::Forbidden => "an action the operator's policy forbids",
            Family::ImpossibleTravel => "impossible travel",
            Family::LeakedCredentials => "leaked credentials",
            Family::WeakIntel => "an indicator of the operator's intelligence",
            Family::SensitiveChange => "a sensitive change",
            Family::NewCountry => "an unusual country",
            Family::VendorRisk => "the vendor rates the risk high",
            Family::NewBehaviour => "the vendor says the behaviour is new",
            Family::VendorConfidence => "the vendor is confident it is suspicious",
            Family::ForeignAccount => "an account outside the organisation",
        }
    }

    /// The family a playbook's insight tag belongs to.
    fn of_tag(tag: &str) -> Option<Family> {
        Some(match tag {
            "tor" | "anonymizer" => Family::Anonymiser,
            "policy_violation" => Family::Forbidden,
            "impossible_travel" => Family::ImpossibleTravel,
            "leaked_credentials" => Family::LeakedCredentials,
            "threat_intel_match" => Family::WeakIntel,
            "mfa_change" | "cloud_iam_change" => Family::SensitiveChange,
            "new_country" => Family::NewCountry,
            "foreign_cloud_account" => Family::ForeignAccount,
            _ => return None,
        })
    }
}

/// Words vendors use for "this actor never did this before" in their risk reasons and tags.
const NEW_BEHAVIOUR_WORDS: &[&str] = &[
    "new device",
    "newdevice",
    "new geo",
    "newgeo",
    "new ip",
    "newip",
    "new asn",
    "newasn",
    "new city",
    "new state",
    "new country",
    "newcountry",
    "first seen",
    "firstseen",
    "first time",
    "firsttime",
    "first_seen",
    "first_time",
    "unfamiliar",
    "never seen",
    "new_behavior",
    "new behavior",
    "new behaviour",
];

/// One sign found, with the finding that shows it.
struct Sign {
    family: Family,
    /// What shows it: a finding's headline, or the vendor field read.
    shown_by: String,
}

/// Adds one judgement when independent signs add up to a compromise (see the module doc).
pub(crate) fn weigh(case: &Case<'_>, claim: &Claim, judgements: &mut Vec<Judgement>) {
    // Proof decides on its own; nothing to add up.
    if judgements
        .iter()
        .any(|judgement| judgement.weight == Weight::Proof)
    {
        return;
    }
    if !succeeded(case, claim) {
        return;
    }
    let signs = signs(case, claim, judgements);
    let strong = signs.iter().filter(|sign| sign.family.strong()).count();
    if strong == 0 || signs.len() < 2 {
        return;
    }
    let listed: Vec<String> = signs
        .iter()
        .map(|sign| format!("{} ({})", sign.family.name(), sign.shown_by))
        .collect();
    let sign_in = is_sign_in(claim);
    let actor = actor(case);
    let headline = if sign_in {
        format!("The successful sign-in of {actor} was not the user")
    } else {
        format!("Independent signs add up: {actor} is not acting as themselves")
    };
    let detail = format!(
        "{} {} independent signs against it, {strong} of them strong: {}. Each alone could have an \
         innocent reason; together they mean someone else holds the account or the change was not \
         the organisation's. The alert's own severity is not counted as a sign.",
        if sign_in {
            format!("The sign-in of {actor} succeeded with")
        } else {
            format!(
                "What the alert reports ({}) went through with",
                claim.statement
            )
        },
        signs.len(),
        listed.join("; ")
    );
    let mut judgement = Judgement::new(Weight::Malicious, headline, detail)
        .evidence(
            "combined_signs",
            json!({
                "claim": claim.behaviour.name(),
                "succeeded": true,
                "strong": strong,
                "signs": signs.iter().map(|sign| json!({
                    "sign": sign.family.name(),
                    "strong": sign.family.strong(),
                    "shown_by": sign.shown_by,
                })).collect::<Vec<_>>(),
            }),
        )
        .tag("account_takeover", actor.clone());
    if actor != "the actor" {
        judgement = judgement.artifact(actor.clone());
    }
    judgement = match claim.behaviour.tactic().filter(|_| !sign_in) {
        Some(tactic) => judgement.tactic(tactic),
        None => judgement.tactic("Initial Access"),
    };
    judgements.push(if sign_in {
        judgement
            .remediation(format!(
                "Revoke every session of {actor}, reset the password and re-register MFA"
            ))
            .question(actor, "Was this sign-in you?")
    } else {
        judgement.question(
            actor,
            "Did you make this change, from where the alert says?",
        )
    });
}

fn is_sign_in(claim: &Claim) -> bool {
    matches!(
        claim.behaviour,
        Behaviour::SignInAnomaly | Behaviour::CredentialGuessing
    )
}

/// Whether what the alert reports went through: a sign-in that succeeded (the provider
/// says so), or any other activity the source neither stopped nor saw fail.
fn succeeded(case: &Case<'_>, claim: &Claim) -> bool {
    if crate::verdict::contained(case) {
        return false;
    }
    let sign_in_succeeded = case
        .signals
        .sign_in
        .as_ref()
        .and_then(|sign_in| sign_in.succeeded);
    if is_sign_in(claim) {
        sign_in_succeeded == Some(true)
    } else {
        sign_in_succeeded != Some(false)
    }
}

/// The acting identity, for sentences.
fn actor(case: &Case<'_>) -> String {
    let signals = case.signals;
    signals
        .sign_in
        .as_ref()
        .and_then(|sign_in| sign_in.user.clone())
        .or_else(|| {
            signals
                .cloud
                .as_ref()
                .and_then(|cloud| cloud.principal.clone())
        })
        .or_else(|| {
            signals
                .process
                .as_ref()
                .and_then(|process| process.user.clone())
        })
        .or_else(|| case.person_phrase())
        .unwrap_or_else(|| "the actor".to_string())
}

/// Every independent sign, each family once (the first finding that shows it is cited).
fn signs(case: &Case<'_>, claim: &Claim, judgements: &[Judgement]) -> Vec<Sign> {
    let mut signs: Vec<Sign> = Vec::new();
    let mut add = |family: Family, shown_by: String| {
        if !signs.iter().any(|sign| sign.family == family) {
            signs.push(Sign { family, shown_by });
        }
    };
    // Doubts the playbooks raised (a benign fact that answered one made it no doubt).
    for judgement in judgements {
        if judgement.weight != Weight::Suspicious {
            continue;
        }
        for (tag, _) in &judgement.tags {
            if let Some(family) = Family::of_tag(tag) {
                add(family, judgement.headline.clone());
            }
        }
    }
    // The claim itself is a sensitive change.
    if matches!(
        claim.behaviour,
        Behaviour::PrivilegeGrant | Behaviour::Persistence
    ) {
        add(Family::SensitiveChange, claim.statement.clone());
    }
    let signals = case.signals;
    // What the vendor already says: its risk rating, its "new behaviour" flags, its own
    // confident verdict. Never its severity.
    if let Some(sign_in) = &signals.sign_in {
        if let Some(level) = sign_in.risk_level.as_deref()
            && matches!(level.to_ascii_lowercase().as_str(), "high" | "critical")
        {
            add(Family::VendorRisk, format!("risk level '{level}'"));
        }
        if let Some(reason) = sign_in
            .risk_reasons
            .iter()
            .find(|reason| new_behaviour(reason))
        {
            add(Family::NewBehaviour, format!("risk reason '{reason}'"));
        }
    }
    if let Some(tag) = signals.tags.iter().find(|tag| new_behaviour(tag)) {
        add(Family::NewBehaviour, format!("vendor label '{tag}'"));
    }
    if signals.source_verdict == Some(SourceVerdict::Suspicious)
        && let Some(confidence) = signals.confidence.filter(|confidence| *confidence >= 80)
    {
        add(
            Family::VendorConfidence,
            format!(
                "{} rates it suspicious with confidence {confidence}",
                case.alert.direct_source_label
            ),
        );
    }
    // Through an anonymiser the country is the exit node's, not the actor's: not a second,
    // independent sign.
    if signs.iter().any(|sign| sign.family == Family::Anonymiser) {
        signs.retain(|sign| sign.family != Family::NewCountry);
    }
    signs
}

fn new_behaviour(text: &str) -> bool {
    // ASCII case-insensitive, as the words are: one pass, no lower-cased copy.
    static WORDS: LazyLock<AhoCorasick> = LazyLock::new(|| {
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(NEW_BEHAVIOUR_WORDS)
            .expect("a fixed list of short literal words")
    });
    WORDS.is_match(text)
}
