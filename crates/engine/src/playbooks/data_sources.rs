//! What the team's own systems said about the alert's entities: the directory, threat
//! intelligence, registration data, the EDR's inventory. The pipeline asked them before
//! the engine ran (`sleuth-sources`); here their answers become judgements, and every
//! answer is cited with its source and the time it was given.
//!
//! A fact decides only the claim it speaks to:
//! - a file that many engines call malicious is malicious activity; an address or domain
//!   with a bad name is one independent sign (it combines with others, combination.rs);
//! - a reputation service calling an address benign (an internet-wide research scanner)
//!   explains a scan from it, and nothing else;
//! - a disabled account that still signs in is a doubt, and urgent; a sign-in it failed is
//!   the directory working;
//! - a privileged account or a domain controller raises priority, never the verdict; a
//!   server (rather than a laptop) changes how it is contained, and is said;
//! - a source that could not answer is said in the findings; only a reputation or
//!   registration source, whose answer could have proved malice, leaves the verdict
//!   incomplete, and only when nothing else decides it (verdict.rs).

use serde_json::{Value, json};
use sleuth_domain::{
    Entity, EntityKind, FactKind, FactValue, Facts, SourceAnswer, SourceKind, Timestamp,
};

use crate::behaviour::Behaviour;
use crate::case::Case;
use crate::claim::Claim;
use crate::judgement::{Covers, Judgement, Weight};

/// Engines or reporters that must call an entity malicious before their word counts as a
/// bad name. One or two are noise on every multi-engine service (a single heuristic
/// engine flags many clean installers).
const MALICIOUS_VOTES: f64 = 5.0;
/// An abuse score (0..=100) from which an address counts as abusive.
const ABUSIVE_SCORE: f64 = 75.0;
/// A domain registered this recently is a sign: phishing and command-and-control domains
/// are mostly used within days of registration.
const NEW_DOMAIN_DAYS: i64 = 30;
/// The host roles whose involvement is urgent whatever the alert.
const CRITICAL_HOST_ROLES: &[&str] = &["domain_controller"];

/// The judgements on every answer the sources gave for this alert.
pub(crate) fn run(case: &Case<'_>, claim: &Claim, facts: &Facts, out: &mut Vec<Judgement>) {
    if facts.is_empty() {
        return;
    }
    out.push(citation(facts));
    for answer in &facts.answers {
        if answer.facts().is_empty() {
            if let sleuth_domain::AnswerResult::Failed { reason } = &answer.result {
                out.push(unanswered(answer, reason));
            }
            continue;
        }
        match answer.source_kind {
            SourceKind::ThreatIntel => reputation(claim, answer, out),
            SourceKind::Registration => registration(case, answer, out),
            SourceKind::Directory | SourceKind::SignIns | SourceKind::Endpoint => {
                account(case, answer, out);
                host(answer, out);
            }
            SourceKind::Other => {
                reputation(claim, answer, out);
                registration(case, answer, out);
                account(case, answer, out);
                host(answer, out);
            }
        }
    }
}

/// One finding that lists every answer: which source, about what, when, and what it said.
fn citation(facts: &Facts) -> Judgement {
    let mut judgement = Judgement::new(
        Weight::Neutral,
        "What the team's systems said",
        format!(
            "{} asked about the alert's entities: {}.",
            plural(
                facts.answers.len(),
                "data source answer was",
                "data source answers were"
            ),
            facts
                .answers
                .iter()
                .map(summary)
                .collect::<Vec<_>>()
                .join("; ")
        ),
    );
    for answer in &facts.answers {
        judgement = judgement
            .artifact(answer.entity.value.clone())
            .evidence("data_source_answer", answer_evidence(answer));
    }
    judgement
}

fn plural(count: usize, one: &str, many: &str) -> String {
    if count == 1 {
        format!("1 {one}")
    } else {
        format!("{count} {many}")
    }
}

/// "corp-directory on alice: account_enabled false, ..." in one line.
fn summary(answer: &SourceAnswer) -> String {
    let said = match &answer.result {
        sleuth_domain::AnswerResult::Found(facts) if facts.is_empty() => {
            "known, nothing more".to_string()
        }
        sleuth_domain::AnswerResult::Found(facts) => facts
            .iter()
            .map(|fact| format!("{} {}", fact.kind, bounded(&fact.value.to_string())))
            .collect::<Vec<_>>()
            .join(", "),
        sleuth_domain::AnswerResult::NotFound => "not known to it".to_string(),
        sleuth_domain::AnswerResult::Failed { reason } => {
            format!("no answer ({})", bounded(reason))
        }
    };
    format!(
        "{} on {} {} at {}: {said}",
        answer.source,
        answer.entity.kind,
        answer.entity.value,
        answer.at.to_rfc3339()
    )
}

/// A source's text can be long (a label list, a vendor's error): a finding quotes a prefix.
fn bounded(text: &str) -> String {
    const MAX_CHARS: usize = 200;
    if text.chars().count() <= MAX_CHARS {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(MAX_CHARS).collect::<String>())
    }
}

/// What a finding's evidence holds of one answer.
fn answer_evidence(answer: &SourceAnswer) -> Value {
    let result = match &answer.result {
        sleuth_domain::AnswerResult::Found(facts) => json!({
            "found": facts
                .iter()
                .map(|fact| (fact.kind.as_str().to_string(), fact_json(&fact.value)))
                .collect::<serde_json::Map<_, _>>()
        }),
        sleuth_domain::AnswerResult::NotFound => json!({"found": null}),
        sleuth_domain::AnswerResult::Failed { reason } => json!({"failed": bounded(reason)}),
    };
    json!({
        "source": answer.source,
        "source_kind": answer.source_kind.as_str(),
        "entity": {"type": answer.entity.kind.as_str(), "value": answer.entity.value},
        "at": answer.at.to_rfc3339(),
        "result": result,
    })
}

fn fact_json(value: &FactValue) -> Value {
    match value {
        FactValue::Flag(flag) => json!(flag),
        FactValue::Number(number) => json!(number),
        FactValue::Date(date) => json!(date.to_rfc3339()),
        FactValue::Text(text) => json!(bounded(text)),
        FactValue::List(items) => {
            const MAX_ITEMS: usize = 50;
            let mut shown: Vec<String> = items
                .iter()
                .take(MAX_ITEMS)
                .map(|item| bounded(item))
                .collect();
            // A long list is cut, and says so: nothing is dropped silently.
            if items.len() > MAX_ITEMS {
                shown.push(format!("… and {} more", items.len() - MAX_ITEMS));
            }
            json!(shown)
        }
    }
}

/// A judgement citing one answer as its evidence.
fn citing(weight: Weight, headline: &str, detail: String, answer: &SourceAnswer) -> Judgement {
    Judgement::new(weight, headline, detail)
        .artifact(answer.entity.value.clone())
        .evidence("data_source_answer", answer_evidence(answer))
}

/// A source that could not answer. Only a source whose answer could have proved malice
/// (reputation, registration) is missing evidence; the others are said and weigh nothing.
fn unanswered(answer: &SourceAnswer, reason: &str) -> Judgement {
    let could_decide = matches!(
        answer.source_kind,
        SourceKind::ThreatIntel | SourceKind::Registration
    );
    let weight = if could_decide {
        Weight::Missing
    } else {
        Weight::Neutral
    };
    citing(
        weight,
        &format!("{} unavailable", answer.source),
        format!(
            "The data source {} could not answer about {} {}: {}. The investigation went on \
             without it.",
            answer.source,
            answer.entity.kind,
            answer.entity.value,
            bounded(reason)
        ),
        answer,
    )
}

fn is_file(kind: EntityKind) -> bool {
    matches!(
        kind,
        EntityKind::HashMd5 | EntityKind::HashSha1 | EntityKind::HashSha256
    )
}

/// What a reputation service said: a bad name, an abuse score, or a benign scanner.
fn reputation(claim: &Claim, answer: &SourceAnswer, out: &mut Vec<Judgement>) {
    let entity = &answer.entity;
    let verdict = answer
        .fact(FactKind::Verdict)
        .and_then(FactValue::as_text)
        .map(str::to_ascii_lowercase);
    let votes = answer
        .fact(FactKind::MaliciousVotes)
        .and_then(FactValue::as_number);
    let total = answer
        .fact(FactKind::TotalVotes)
        .and_then(FactValue::as_number);
    let many_votes = votes.is_some_and(|votes| votes >= MALICIOUS_VOTES);
    if verdict.as_deref() == Some("malicious") || many_votes {
        let said = match (votes, total) {
            (Some(votes), Some(total)) => format!("{votes} of {total} engines call it malicious"),
            (Some(votes), None) => format!("{votes} engines call it malicious"),
            _ => "its verdict is malicious".to_string(),
        };
        out.push(bad_name(entity, &answer.source, &said, answer));
        return;
    }
    if let Some(score) = answer
        .fact(FactKind::AbuseScore)
        .and_then(FactValue::as_number)
        && score >= ABUSIVE_SCORE
        && entity.kind == EntityKind::Ip
    {
        let said = format!("its abuse score is {score} of 100");
        out.push(bad_name(entity, &answer.source, &said, answer));
        return;
    }
    if verdict.as_deref() == Some("benign")
        && entity.kind == EntityKind::Ip
        && claim.behaviour == Behaviour::Scanning
    {
        out.push(
            citing(
                Weight::Explains,
                "A known benign scanner",
                format!(
                    "{} knows {} as a benign scanner of the internet (research or search \
                     engine); the scan this alert reports is what it does. This answers the \
                     scan only.",
                    answer.source, entity.value
                ),
                answer,
            )
            .covers(Covers::Behaviours(&[Behaviour::Scanning])),
        );
    }
}

/// An entity with a bad name: a file is malicious activity; an address, domain or URL is
/// one sign among others.
fn bad_name(entity: &Entity, source: &str, said: &str, answer: &SourceAnswer) -> Judgement {
    if is_file(entity.kind) {
        citing(
            Weight::Malicious,
            "Many engines call the file malicious",
            format!(
                "{source} on the file {}: {said}. Treat the file as malware unless the team \
                 knows it.",
                entity.value
            ),
            answer,
        )
        .tactic("Execution")
        .tag("threat_intel_match", format!("{source}: {said}"))
        .remediation(format!(
            "Quarantine the file {} everywhere it is present and block its hash.",
            entity.value
        ))
    } else {
        citing(
            Weight::Suspicious,
            "A bad name in threat intelligence",
            format!(
                "{source} on {} {}: {said}. A bad name alone does not prove this alert; \
                 with another independent sign it does.",
                entity.kind, entity.value
            ),
            answer,
        )
        .tag("threat_intel_match", format!("{source}: {said}"))
    }
}

/// A domain registered days before the alert.
fn registration(case: &Case<'_>, answer: &SourceAnswer, out: &mut Vec<Judgement>) {
    if !matches!(answer.entity.kind, EntityKind::Domain | EntityKind::Url) {
        return;
    }
    let Some(registered) = answer
        .fact(FactKind::RegisteredAt)
        .and_then(FactValue::as_date)
    else {
        return;
    };
    let age_days = (case.alert.create_time - registered).num_days();
    if !(0..=NEW_DOMAIN_DAYS).contains(&age_days) {
        return;
    }
    out.push(
        citing(
            Weight::Suspicious,
            "A newly registered domain",
            format!(
                "{} says {} was registered on {}, {age_days} days before the alert. Domains \
                 this new are mostly phishing or command-and-control infrastructure.",
                answer.source,
                answer.entity.value,
                date(registered)
            ),
            answer,
        )
        .tag(
            "new_domain",
            format!("registered {age_days} days before the alert"),
        ),
    );
}

fn date(at: Timestamp) -> String {
    at.format("%Y-%m-%d").to_string()
}

/// What the directory said of an account: disabled yet signing in, or privileged.
fn account(case: &Case<'_>, answer: &SourceAnswer, out: &mut Vec<Judgement>) {
    if !matches!(answer.entity.kind, EntityKind::User | EntityKind::Email) {
        return;
    }
    let account = answer.entity.value.as_str();
    if answer
        .fact(FactKind::AccountEnabled)
        .and_then(FactValue::as_flag)
        == Some(false)
    {
        let sign_in = case.signals.sign_in.as_ref().filter(|sign_in| {
            sign_in
                .user
                .as_deref()
                .is_some_and(|user| user.eq_ignore_ascii_case(account))
        });
        match sign_in.and_then(|sign_in| sign_in.succeeded) {
            Some(true) => out.push(
                citing(
                    Weight::Suspicious,
                    "A disabled account signed in",
                    format!(
                        "{} says the account {account} is disabled, yet the alert reports it \
                         signing in successfully. Either the account was re-enabled without \
                         the directory knowing, or a session or token outlived the disabling.",
                        answer.source
                    ),
                    answer,
                )
                .tactic("Initial Access")
                .urgent("a disabled account is still in use")
                .remediation(format!(
                    "Revoke every session and token of {account} and find how it signed in."
                )),
            ),
            Some(false) => out.push(citing(
                Weight::Neutral,
                "The account is disabled",
                format!(
                    "{} says the account {account} is disabled; the sign-in failed, as it \
                     should.",
                    answer.source
                ),
                answer,
            )),
            None => {}
        }
    }
    let privileged = answer
        .fact(FactKind::Privileged)
        .and_then(FactValue::as_flag)
        == Some(true);
    let groups = answer
        .fact(FactKind::PrivilegedGroups)
        .map(FactValue::as_list)
        .unwrap_or_default();
    if privileged || !groups.is_empty() {
        let which = if groups.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                bounded(
                    &groups
                        .iter()
                        .take(5)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            )
        };
        out.push(
            citing(
                Weight::Neutral,
                "A privileged account",
                format!(
                    "{} says {account} belongs to privileged groups{which}: whatever this alert \
                     is, it concerns an account that can change the organisation.",
                    answer.source
                ),
                answer,
            )
            .urgent(format!("it concerns the privileged account {account}")),
        );
    }
}

/// What the directory or the EDR said of a host: a domain controller is urgent.
fn host(answer: &SourceAnswer, out: &mut Vec<Judgement>) {
    if answer.entity.kind != EntityKind::Host {
        return;
    }
    let Some(role) = answer.fact(FactKind::HostRole).and_then(FactValue::as_text) else {
        return;
    };
    let role = role.to_ascii_lowercase();
    if role == "server" {
        let owner = answer
            .fact(FactKind::Owner)
            .and_then(FactValue::as_text)
            .map(|owner| format!(" (its owner: {})", bounded(owner)))
            .unwrap_or_default();
        out.push(citing(
            Weight::Neutral,
            "A server, not a laptop",
            format!(
                "{} says {} is a server{owner}: containing it stops what it serves, so agree \
                 the step with its owner; what runs on it is reachable by more people than a \
                 laptop's.",
                answer.source, answer.entity.value
            ),
            answer,
        ));
    }
    if CRITICAL_HOST_ROLES.contains(&role.as_str()) {
        out.push(
            citing(
                Weight::Neutral,
                "A domain controller",
                format!(
                    "{} says {} is a domain controller: whoever controls it controls the \
                     domain.",
                    answer.source, answer.entity.value
                ),
                answer,
            )
            .urgent(format!(
                "it involves the domain controller {}",
                answer.entity.value
            )),
        );
    }
}
