//! Words for people: the conclusion, the summaries, the ranked findings, what to do and
//! whom to ask what. Templated from the judgements and the verdict, so that every sentence
//! can be traced to something checked.

use serde_json::{Map, Value, json};
use sleuth_domain::{AlertCategory, EntityKind, Outcome, Priority};

use crate::case::Case;
use crate::claim::Claim;
use crate::judgement::{Judgement, Weight};
use crate::verdict::Verdict;

/// Everything written about one investigation.
pub(crate) struct Narrative {
    pub conclusion: String,
    pub conclusion_summary: String,
    pub alert_summary: String,
    pub exec_summary: String,
    pub key_findings: Map<String, Value>,
    pub findings_ranking: Map<String, Value>,
    pub insight_tags: Map<String, Value>,
    pub interview_proposals: Map<String, Value>,
    pub recommended_remediations: Vec<String>,
    pub related_alert_hypothesis: Option<Map<String, Value>>,
    pub attack_surface: Option<String>,
}

pub(crate) fn write(
    case: &Case<'_>,
    claim: &Claim,
    judgements: &[Judgement],
    verdict: &Verdict,
    order: &[usize],
) -> Narrative {
    let decisive: Vec<&Judgement> = verdict
        .decisive
        .iter()
        .map(|index| &judgements[*index])
        .collect();
    Narrative {
        conclusion: conclusion(case, &decisive, verdict),
        conclusion_summary: conclusion_summary(case, &decisive, verdict),
        alert_summary: alert_summary(case),
        exec_summary: exec_summary(case, &decisive, verdict),
        key_findings: key_findings(case, claim, &decisive, verdict),
        findings_ranking: findings_ranking(judgements, order),
        insight_tags: insight_tags(judgements, verdict),
        interview_proposals: interview_proposals(case, judgements, verdict),
        recommended_remediations: remediations(case, judgements, verdict),
        related_alert_hypothesis: related_alert_hypothesis(case),
        attack_surface: case.category().map(attack_surface_name),
    }
}

fn attack_surface_name(category: AlertCategory) -> String {
    match category {
        AlertCategory::Endpoint => "Endpoint",
        AlertCategory::Identity => "Identity",
        AlertCategory::Cloud => "Cloud",
        AlertCategory::Email => "Email",
        AlertCategory::Network => "Network",
        AlertCategory::Application => "Application",
    }
    .to_string()
}

fn outcome_words(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::BreachedConfirmed => "Confirmed malicious activity",
        Outcome::BreachedSuspicious => "Suspicious and unresolved",
        Outcome::FalseAlert => "False alert",
        Outcome::Incomplete => "Incomplete",
        Outcome::Ignored => "Ignored",
    }
}

fn sentences(judgements: &[&Judgement], limit: usize) -> String {
    judgements
        .iter()
        .take(limit)
        .map(|judgement| judgement.detail.trim().to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

fn conclusion(case: &Case<'_>, decisive: &[&Judgement], verdict: &Verdict) -> String {
    let title = &case.alert.title;
    let reasons = sentences(decisive, 3);
    let tail = match verdict.outcome {
        Outcome::BreachedConfirmed if verdict.contained => {
            format!(
                " {} stopped the activity; make sure nothing ran before it did.",
                case.alert.direct_source_label
            )
        }
        Outcome::BreachedConfirmed => " Nothing reports it was stopped: respond now.".to_string(),
        Outcome::BreachedSuspicious
            if decisive
                .iter()
                .any(|judgement| judgement.weight == Weight::Explains) =>
        {
            " Part of it is explained, part is not: a human must decide which story is true."
                .to_string()
        }
        Outcome::BreachedSuspicious => " Nothing known explains it; a human must look.".to_string(),
        Outcome::FalseAlert => " No response is needed.".to_string(),
        Outcome::Incomplete => {
            " Investigate by hand or resend the alert with the missing details.".to_string()
        }
        Outcome::Ignored => String::new(),
    };
    let reasons = if reasons.is_empty() {
        format!(
            "{} raised '{title}' and nothing in the alert or the context settles it.",
            case.alert.direct_source_label
        )
    } else {
        reasons
    };
    format!(
        "{}: '{title}'. {reasons}{tail}",
        outcome_words(verdict.outcome)
    )
}

fn conclusion_summary(case: &Case<'_>, decisive: &[&Judgement], verdict: &Verdict) -> String {
    let headline = decisive.first().map_or_else(
        || case.alert.title.clone(),
        |judgement| judgement.headline.clone(),
    );
    format!(
        "{} ({}): {headline}.",
        outcome_words(verdict.outcome),
        verdict.priority
    )
}

fn alert_summary(case: &Case<'_>) -> String {
    let alert = case.alert;
    let mut summary = format!(
        "{} raised '{}'{} at {}",
        alert.direct_source_label,
        alert.title,
        alert
            .severity
            .as_deref()
            .map(|severity| format!(" ({severity} severity)"))
            .unwrap_or_default(),
        alert.create_time.format("%Y-%m-%d %H:%M UTC"),
    );
    let hosts = case.hosts();
    if !hosts.is_empty() {
        summary.push_str(&format!(" on {}", hosts.join(", ")));
    }
    let people = case.people();
    if !people.is_empty() {
        summary.push_str(&format!(" involving {}", people.join(", ")));
    }
    summary.push('.');
    if let Some(description) = &case.signals.description {
        let description = crate::truncate(description.trim(), 400);
        if !description.is_empty() && description != alert.title {
            summary.push_str(&format!(" The source says: {description}"));
            if !summary.ends_with('.') {
                summary.push('.');
            }
        }
    }
    summary
}

fn exec_summary(case: &Case<'_>, decisive: &[&Judgement], verdict: &Verdict) -> String {
    let what = decisive.first().map_or_else(
        || case.alert.title.clone(),
        |judgement| judgement.headline.clone(),
    );
    let impact = match verdict.outcome {
        Outcome::BreachedConfirmed if verdict.contained => {
            "An attack was confirmed and stopped by our defences."
        }
        Outcome::BreachedConfirmed => "An attack was confirmed and is not known to be contained.",
        Outcome::BreachedSuspicious => "This may be an attack; it is not yet confirmed either way.",
        Outcome::FalseAlert => "This was expected or authorised activity, not an attack.",
        Outcome::Incomplete => "The alert lacks the details needed to judge it.",
        Outcome::Ignored => "This alert repeats one already investigated.",
    };
    let action = match verdict.priority {
        Priority::Urgent => "Respond now",
        Priority::Notable => "Review today",
        Priority::Informational => "No action needed",
    };
    format!("{what}. {impact} {action}: {}.", verdict.priority_reason)
}

fn key_findings(
    case: &Case<'_>,
    claim: &Claim,
    decisive: &[&Judgement],
    verdict: &Verdict,
) -> Map<String, Value> {
    let mut entities: Map<String, Value> = Map::new();
    for kind in [
        EntityKind::User,
        EntityKind::Host,
        EntityKind::Ip,
        EntityKind::Domain,
        EntityKind::Email,
    ] {
        let values: Vec<&str> = case.alert.entities_of(kind).take(10).collect();
        if !values.is_empty() {
            entities.insert(kind.as_str().to_string(), json!(values));
        }
    }
    let mut map = Map::new();
    map.insert("verdict".into(), json!(verdict.outcome));
    // Every verdict names the claim it addressed and the evidence that decided it.
    map.insert(
        "claim".into(),
        json!({"behaviour": claim.behaviour.name(), "statement": claim.statement}),
    );
    map.insert("priority".into(), json!(verdict.priority));
    map.insert("why_this_priority".into(), json!(verdict.priority_reason));
    map.insert(
        "decisive_findings".into(),
        json!(
            decisive
                .iter()
                .take(5)
                .map(|judgement| &judgement.headline)
                .collect::<Vec<_>>()
        ),
    );
    map.insert(
        "decided_by".into(),
        json!(
            decisive
                .iter()
                .take(5)
                .map(|judgement| json!({
                    "headline": judgement.headline,
                    "evidence": judgement.evidences.iter().map(|evidence| &evidence.evidence_type).collect::<Vec<_>>(),
                }))
                .collect::<Vec<_>>()
        ),
    );
    map.insert("contained".into(), json!(verdict.contained));
    map.insert("entities".into(), Value::Object(entities));
    map
}

fn findings_ranking(judgements: &[Judgement], order: &[usize]) -> Map<String, Value> {
    let mut map = Map::new();
    for (rank, index) in order.iter().enumerate() {
        let judgement = &judgements[*index];
        map.insert(
            format!("{}", rank + 1),
            json!({"headline": judgement.headline, "weight": weight_name(judgement.weight), "outcome": judgement.weight.finding_outcome()}),
        );
    }
    map
}

fn weight_name(weight: Weight) -> &'static str {
    match weight {
        Weight::Proof => "proof",
        Weight::Malicious => "malicious",
        Weight::Suspicious => "suspicious",
        Weight::Dismisses => "dismisses",
        Weight::Explains => "explains",
        Weight::Reassures => "reassures",
        Weight::Neutral => "context",
        Weight::Missing => "missing",
    }
}

fn insight_tags(judgements: &[Judgement], verdict: &Verdict) -> Map<String, Value> {
    let mut tags = Map::new();
    for (name, why) in judgements.iter().flat_map(|judgement| &judgement.tags) {
        if !tags.contains_key(*name) {
            tags.insert((*name).to_string(), Value::String(why.clone()));
        }
    }
    if verdict.contained && !tags.contains_key("blocked_by_source") {
        tags.insert(
            "blocked_by_source".into(),
            Value::String("the source stopped it".into()),
        );
    }
    tags
}

fn interview_proposals(
    case: &Case<'_>,
    judgements: &[Judgement],
    verdict: &Verdict,
) -> Map<String, Value> {
    let mut proposals: Map<String, Value> = Map::new();
    if verdict.outcome == Outcome::FalseAlert {
        return proposals;
    }
    let asked: Vec<(String, String)> = judgements
        .iter()
        .flat_map(|judgement| judgement.questions.iter().cloned())
        .collect();
    let defaults = if asked.is_empty() {
        default_questions(case)
    } else {
        Vec::new()
    };
    for (who, question) in asked.iter().chain(&defaults) {
        let entry = proposals
            .entry(who.clone())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(questions) = entry
            && !questions
                .iter()
                .any(|known| known.as_str() == Some(question))
            && questions.len() < 5
        {
            questions.push(Value::String(question.clone()));
        }
    }
    proposals
}

/// What to ask the people an alert names when no finding asked anything specific.
fn default_questions(case: &Case<'_>) -> Vec<(String, String)> {
    let when = case.alert.create_time.format("%Y-%m-%d %H:%M UTC");
    let host = case.host_phrase();
    let question = match case.category() {
        Some(AlertCategory::Endpoint) => format!(
            "Were you using {host} around {when}, and did you run, install or open anything unusual?"
        ),
        Some(AlertCategory::Identity) => {
            format!("Was the sign-in or account change around {when} yours?")
        }
        Some(AlertCategory::Email) => {
            "Did you open this message, click a link or open an attachment in it?".to_string()
        }
        Some(AlertCategory::Cloud | AlertCategory::Application) => {
            format!("Did you make this change around {when}, and was it planned?")
        }
        Some(AlertCategory::Network) | None => {
            format!("Do you recognise the activity on {host} around {when}?")
        }
    };
    // One question per person, however many ways the alert writes their name
    // (`corp\r.patel`, `r.patel`).
    let mut asked: Vec<String> = Vec::new();
    case.people()
        .iter()
        .filter(|person| {
            let lowered = person.to_lowercase();
            let base = lowered.rsplit('\\').next().unwrap_or_default();
            let base = base.split('@').next().unwrap_or_default().to_string();
            let new = !asked.contains(&base);
            asked.push(base);
            new
        })
        .take(3)
        .map(|person| (person.to_string(), question.clone()))
        .collect()
}

/// The kind of identity that acted: what fits a person (reset the password, ask them) does
/// not fit a service (rotate its credential, ask its owner) or a workload (revoke its role's
/// sessions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdentityKind {
    Human,
    Service,
    Workload,
}

/// Name parts of workload identities: cloud roles, instance profiles, cluster service
/// accounts, managed identities.
const WORKLOAD_MARKS: &[&str] = &[
    "assumed-role",
    ":role/",
    "instance-profile",
    "system:serviceaccount",
    "gserviceaccount.com",
    "managed identity",
    "managedidentity",
];
/// Name parts of service accounts that the context does not list.
const SERVICE_MARKS: &[&str] = &[
    "svc-",
    "svc_",
    "svc.",
    "service",
    "-bot",
    "[bot]",
    "ci-",
    "deploy",
    "automation",
    "pipeline",
    "robot",
    "daemon",
];

pub(crate) fn identity_kind(case: &Case<'_>, name: &str) -> IdentityKind {
    if let Some(knowledge) = case.lookup(EntityKind::User, name) {
        if knowledge.service_account.is_some() || knowledge.honeytoken.is_some() {
            return IdentityKind::Service;
        }
        if knowledge.identity.is_some() {
            return IdentityKind::Human;
        }
    }
    let lowered = name.to_lowercase();
    if WORKLOAD_MARKS.iter().any(|mark| lowered.contains(mark)) {
        IdentityKind::Workload
    } else if SERVICE_MARKS.iter().any(|mark| lowered.contains(mark)) {
        IdentityKind::Service
    } else {
        IdentityKind::Human
    }
}

/// The identity that acted: the one that signed in, called the cloud API or ran the process.
fn acting_identity(case: &Case<'_>) -> Option<String> {
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
        .or_else(|| case.people().first().map(|person| (*person).to_string()))
}

/// Where the activity came from, when the alert says: the host that owns the source
/// address, else a named host that is not the critical target it reached (the laptop, not
/// the domain controller it authenticated to).
fn source_host(case: &Case<'_>) -> Option<String> {
    let signals = case.signals;
    let source_ip = signals
        .network
        .as_ref()
        .and_then(|network| network.source_ip.as_deref())
        .or_else(|| {
            signals
                .sign_in
                .as_ref()
                .and_then(|sign_in| sign_in.source_ip.as_deref())
        });
    if let Some(host) = source_ip
        .and_then(|ip| case.lookup(EntityKind::Ip, ip))
        .and_then(|knowledge| knowledge.asset.map(|asset| asset.host.clone()))
    {
        return Some(host);
    }
    let hosts = case.hosts();
    if hosts.len() < 2 {
        return None;
    }
    let critical = |host: &str| {
        case.lookup(EntityKind::Host, host)
            .and_then(|knowledge| knowledge.asset)
            .is_some_and(|asset| asset.critical)
    };
    if !hosts.iter().any(|host| critical(host)) {
        return None;
    }
    hosts
        .iter()
        .find(|host| !critical(host))
        .map(|host| (*host).to_string())
}

/// AWS access key ids the alert names (AKIA… long-term, ASIA… temporary).
fn access_keys(case: &Case<'_>) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for entity in &case.alert.entities {
        let value = entity.value.as_str();
        let is_key = value.len() == 20
            && (value.starts_with("AKIA") || value.starts_with("ASIA"))
            && value
                .chars()
                .all(|character| character.is_ascii_alphanumeric());
        if is_key && !keys.iter().any(|known| known == value) {
            keys.push(value.to_string());
        }
    }
    keys
}

/// What to do about the acting identity's credential, fitted to its kind.
fn credential_step(kind: IdentityKind, who: &str) -> String {
    match kind {
        IdentityKind::Human => format!("Reset the password of {who} and revoke their sessions"),
        IdentityKind::Service => format!(
            "Disable {who} or rotate its credential (keys, tokens, password) now, and find where it was taken from"
        ),
        IdentityKind::Workload => format!(
            "Revoke the active sessions of {who}, rotate its credentials and investigate the workload it belongs to"
        ),
    }
}

fn remediations(case: &Case<'_>, judgements: &[Judgement], verdict: &Verdict) -> Vec<String> {
    let mut list: Vec<String> = Vec::new();
    let relevant = |judgement: &&Judgement| match verdict.outcome {
        Outcome::FalseAlert => matches!(
            judgement.weight,
            Weight::Dismisses | Weight::Explains | Weight::Reassures
        ),
        _ => !matches!(
            judgement.weight,
            Weight::Dismisses | Weight::Explains | Weight::Reassures
        ),
    };
    let mut ordered: Vec<&Judgement> = judgements.iter().filter(relevant).collect();
    ordered.sort_by_key(|judgement| std::cmp::Reverse(judgement.weight.rank()));
    for judgement in ordered {
        for remediation in &judgement.remediations {
            add(&mut list, remediation.clone());
        }
    }
    let actor = acting_identity(case);
    let actor_kind = actor.as_deref().map(|who| identity_kind(case, who));
    match verdict.outcome {
        Outcome::BreachedConfirmed => {
            // The acting identity's credential first, fitted to its kind, and any key it used.
            for key in access_keys(case) {
                if !already_asked(&list, &key, "disable") {
                    add(
                        &mut list,
                        format!(
                            "Disable the access key {key} now and create a new one only after the investigation"
                        ),
                    );
                }
            }
            if let (Some(who), Some(kind)) = (actor.as_deref(), actor_kind)
                && !["password", "rotate", "revoke", "disable"]
                    .iter()
                    .any(|verb| already_asked(&list, who, verb))
            {
                add(&mut list, credential_step(kind, who));
            }
            // Then the asset the activity came from; the target it reached is reviewed, not
            // cut off (isolating a domain controller stops the business, not the intruder).
            match source_host(case) {
                Some(source) => {
                    if !already_asked(&list, &source, "isolate") {
                        add(
                            &mut list,
                            format!(
                                "Isolate {source}, where the activity came from, until it is cleaned or rebuilt"
                            ),
                        );
                    }
                    for host in case.hosts().iter().filter(|host| **host != source).take(3) {
                        add(
                            &mut list,
                            format!("Review what was done on {host} from {source} and undo it"),
                        );
                    }
                }
                None => {
                    for host in case.hosts().iter().take(3) {
                        if !already_asked(&list, host, "isolate") {
                            add(
                                &mut list,
                                format!("Isolate {host} until it is cleaned or rebuilt"),
                            );
                        }
                    }
                }
            }
            add(
                &mut list,
                "Open an incident and preserve the evidence (logs, memory, disk) before cleaning"
                    .to_string(),
            );
        }
        Outcome::BreachedSuspicious => {
            match (actor.as_deref(), actor_kind) {
                (Some(who), Some(IdentityKind::Human)) => add(
                    &mut list,
                    format!("Ask {who} whether they recognise this activity"),
                ),
                (Some(who), Some(_)) => add(
                    &mut list,
                    format!("Ask the owner of {who} whether this activity is part of its job"),
                ),
                _ => {}
            }
            add(
                &mut list,
                format!(
                    "Review the activity around {} in the hour before and after the alert",
                    case.hosts()
                        .first()
                        .copied()
                        .or(case.people().first().copied())
                        .unwrap_or("the entities named")
                ),
            );
        }
        Outcome::FalseAlert => {
            add(&mut list, "Close the alert; if this detection keeps firing on the same expected activity, tune it".to_string());
        }
        Outcome::Incomplete => {
            add(
                &mut list,
                format!(
                    "Ask the owner of the {} integration to include the host, user and addresses in its alerts",
                    case.alert.direct_source_label
                ),
            );
        }
        Outcome::Ignored => {}
    }
    list
}

/// Adds a step once, up to a dozen.
fn add(list: &mut Vec<String>, text: String) {
    if !list.contains(&text) && list.len() < 12 {
        list.push(text);
    }
}

/// Whether a step about `subject` containing `verb` is already listed, however a tool
/// cased the name (`CORP\r.patel` is `corp\r.patel`).
fn already_asked(list: &[String], subject: &str, verb: &str) -> bool {
    let subject = subject.to_lowercase();
    list.iter().any(|step| {
        let step = step.to_lowercase();
        step.contains(&subject) && step.contains(verb)
    })
}

fn related_alert_hypothesis(case: &Case<'_>) -> Option<Map<String, Value>> {
    let related = &case.history.related_alerts;
    if related.is_empty() {
        return None;
    }
    let mut shared: Vec<&str> = related
        .iter()
        .flat_map(|alert| {
            alert
                .shared_entities
                .iter()
                .map(|entity| entity.value.as_str())
        })
        .collect();
    shared.sort_unstable();
    shared.dedup();
    let sources: std::collections::BTreeSet<&str> = related
        .iter()
        .map(|alert| alert.direct_source_label.as_str())
        .collect();
    let confirmed = related
        .iter()
        .filter(|alert| alert.outcome == Some(Outcome::BreachedConfirmed))
        .count();
    let hypothesis = if confirmed > 0 {
        format!(
            "This alert is likely part of the same intrusion as {confirmed} confirmed investigation(s): they share {}.",
            shared.join(", ")
        )
    } else if sources.len() > 1 {
        format!(
            "Several tools ({}) saw the same entities ({}) within the correlation window: look at them as one story.",
            sources.iter().copied().collect::<Vec<_>>().join(", "),
            shared.join(", ")
        )
    } else {
        format!(
            "Earlier alerts named the same entities ({}): this may be a repeat or a continuation.",
            shared.join(", ")
        )
    };
    let mut map = Map::new();
    map.insert("hypothesis".into(), json!(hypothesis));
    map.insert("shared_entities".into(), json!(shared));
    // An array of the values themselves: `json!` of a `Vec<Value>` serializes each one
    // again into a copy (the copy was a third of this function's time).
    let related = related
        .iter()
        .take(20)
        .map(|alert| {
            json!({
                "investigation_id": alert.investigation_id,
                "title": alert.title,
                "alert_type": alert.alert_type,
                "source": alert.direct_source_label,
                "create_time": alert.create_time,
                "outcome": alert.outcome,
                "priority": alert.priority,
                "shared_entities": alert.shared_entities,
            })
        })
        .collect();
    map.insert("related".into(), Value::Array(related));
    Some(map)
}
