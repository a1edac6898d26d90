//! Checks every alert gets, whatever its kind: threat intelligence, honeytokens, the
//! source's own verdict, authorised scanners and SOC tests, the operator's policies,
//! known-good files, the crown jewels involved, and what the source did about it.

use serde_json::json;
use sleuth_domain::{EntityKind, SourceVerdict};

use crate::behaviour::Behaviour;
use crate::case::Case;
use crate::context::{Honeytoken, Intel, Scanner, Window};
use crate::judgement::{Covers, Judgement, Weight};
use crate::vocabulary::SCAN_WORDS;

pub(crate) fn run(case: &Case<'_>, out: &mut Vec<Judgement>) {
    generated_sample(case, out);
    threat_intel(case, out);
    honeytokens(case, out);
    source_verdict(case, out);
    authorised_scanner(case, out);
    soc_test(case, out);
    policies(case, out);
    known_good_files(case, out);
    crown_jewels(case, out);
    source_action(case, out);
}

/// A vendor's generated sample says what the alert is (an example the vendor produced to
/// test the integration), not that the activity it describes is benign: it is judged on
/// what it describes, and the finding says so.
fn generated_sample(case: &Case<'_>, out: &mut Vec<Judgement>) {
    if !case.signals.generated_sample {
        return;
    }
    let source = &case.alert.direct_source_label;
    out.push(
        Judgement::new(
            Weight::Neutral,
            format!("{source} marks this as a generated sample"),
            format!(
                "{source} marks this alert as a generated sample finding. That says the alert is an \
                 example produced by the vendor, not that the activity it describes is benign: it is \
                 judged on what it describes. If nobody generated samples, ask who did."
            ),
        )
        .evidence("vendor_sample", json!({"source": source, "sample": true}))
        .tag("vendor_sample", source.clone()),
    );
}

fn threat_intel(case: &Case<'_>, out: &mut Vec<Judgement>) {
    for (entity, knowledge) in &case.known {
        for intel in &knowledge.intel {
            out.push(intel_judgement(&entity.value, entity.kind, intel));
        }
    }
}

fn intel_judgement(value: &str, kind: EntityKind, intel: &Intel) -> Judgement {
    let description = intel
        .description
        .as_deref()
        .map(|description| format!(": {description}"))
        .unwrap_or_default();
    let source = intel
        .source
        .as_deref()
        .map(|source| format!(" (source: {source}, confidence {})", intel.confidence))
        .unwrap_or_else(|| format!(" (confidence {})", intel.confidence));
    let weight = if intel.proves_malice() {
        Weight::Proof
    } else {
        Weight::Suspicious
    };
    let matched = if intel.value == value {
        String::new()
    } else {
        format!(" (listed as {})", intel.value)
    };
    let (headline, tag) = match intel.category.as_str() {
        "tor_exit" => (format!("{value} is a Tor exit node"), "tor"),
        "proxy" => (format!("{value} is an anonymising proxy"), "anonymizer"),
        "c2" => (
            format!("{value} is known command-and-control infrastructure"),
            "threat_intel_match",
        ),
        "phishing" => (
            format!("{value} is known phishing infrastructure"),
            "threat_intel_match",
        ),
        "brute_force" | "password_spray" => (
            format!(
                "{value} is a known source of {}",
                if intel.category == "password_spray" {
                    "password spraying"
                } else {
                    "password guessing"
                }
            ),
            "threat_intel_match",
        ),
        "cryptomining" => (
            format!("{value} is known cryptomining infrastructure"),
            "threat_intel_match",
        ),
        "malware_delivery" => (
            format!("{value} is known to deliver malware"),
            "threat_intel_match",
        ),
        category => (
            format!(
                "{value} is a known {} indicator",
                category.replace('_', " ")
            ),
            "threat_intel_match",
        ),
    };
    let mut judgement = Judgement::new(
        weight,
        headline,
        format!(
            "The {kind} {value}{matched} is in the operator's threat intelligence as {}{description}{source}.",
            intel.category.replace('_', " ")
        ),
    )
    .artifact(value)
    .evidence(
        "threat_intel_match",
        json!({
            "indicator": intel.value,
            "entity_type": kind.as_str(),
            "category": intel.category,
            "description": intel.description,
            "source": intel.source,
            "confidence": intel.confidence,
        }),
    )
    .tag(tag, format!("{value}: {}", intel.category));
    if let Some(tactic) = match intel.category.as_str() {
        "c2" | "botnet" => Some("Command and Control"),
        "phishing" => Some("Initial Access"),
        "ransomware" => Some("Impact"),
        "malware" => Some("Execution"),
        "brute_force" | "password_spray" => Some("Credential Access"),
        // ATT&CK's Resource Hijacking (T1496).
        "cryptomining" => Some("Impact"),
        // ATT&CK's Ingress Tool Transfer (T1105): a payload fetched from outside.
        "malware_delivery" => Some("Command and Control"),
        _ => None,
    } {
        judgement = judgement.tactic(tactic);
    }
    if intel.proves_malice() {
        judgement = judgement.remediation(match kind {
            EntityKind::Ip | EntityKind::Domain | EntityKind::Url => {
                format!("Block {value} at the perimeter (firewall, proxy and DNS) and search all logs for other hosts that contacted it")
            }
            EntityKind::HashMd5 | EntityKind::HashSha1 | EntityKind::HashSha256 => {
                format!("Ban the file {value} in the EDR and sweep every endpoint for it")
            }
            EntityKind::Email => format!("Block the sender {value} and purge its messages from every mailbox"),
            _ => format!("Block {value} wherever it can be blocked"),
        });
    }
    judgement
}

fn honeytokens(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let mut named: Vec<(&str, &Honeytoken)> = Vec::new();
    for (entity, knowledge) in &case.known {
        if let Some(token) = knowledge.honeytoken
            && !named.iter().any(|(_, seen)| std::ptr::eq(*seen, token))
        {
            named.push((&entity.value, token));
        }
    }
    if let Some(token) = case.context.honeytoken_in(&case.text)
        && !named.iter().any(|(_, seen)| std::ptr::eq(*seen, token))
    {
        named.push((&token.value, token));
    }
    // A secret scanner's finding claims only that the secret lies somewhere: for a token
    // planted there that is the bait being seen. Anything else that names a token is its use.
    let Some(secret) = &case.signals.secret else {
        for (value, token) in named {
            out.push(honeytoken_judgement(value, token));
        }
        return;
    };
    let places: Vec<&str> = secret
        .location
        .as_deref()
        .into_iter()
        .chain(case.alert.entities_of(EntityKind::CloudResource))
        .collect();
    let planted_here = |token: &Honeytoken| {
        places.iter().any(|place| token.planted_at(place))
            && token.secret_type.as_deref().is_none_or(|expected| {
                secret
                    .secret_type
                    .as_deref()
                    .is_some_and(|found| found.eq_ignore_ascii_case(expected))
            })
    };
    let place = places.first().copied().unwrap_or("an unnamed place");
    if named.is_empty() {
        // GitHub never sends the secret itself: a finding of the token's type where only
        // the token lies is the token.
        if let Some(token) = case
            .context
            .document()
            .honeytokens
            .iter()
            .find(|token| planted_here(token))
        {
            out.push(honeytoken_seen_where_planted(token, place));
        }
        return;
    }
    for (value, token) in named {
        if planted_here(token) {
            out.push(honeytoken_seen_where_planted(token, place));
        } else if token.planted_in.is_empty() {
            out.push(honeytoken_judgement(value, token));
        } else {
            out.push(
                Judgement::new(
                    Weight::Malicious,
                    format!("Honeytoken {} turned up away from where it was planted", token.value),
                    format!(
                        "The honeytoken {} was planted in {} and found in {place}: someone copied it out of                          its place, which only a person exploring what they should not does.",
                        token.value,
                        token.planted_in.join(", ")
                    ),
                )
                .artifact(value)
                .evidence("honeytoken", json!({"token": token.value, "planted_in": token.planted_in, "found_in": place}))
                .tactic("Collection")
                .tag("honeytoken", format!("{} found in {place}", token.value))
                .urgent("a honeytoken left its place")
                .remediation(format!("Find who copied honeytoken {} to {place}, and how they reached where it was planted", token.value)),
            );
        }
    }
}

fn honeytoken_seen_where_planted(token: &Honeytoken, place: &str) -> Judgement {
    // The whole alert is the bait being seen, as a SOC test is the test being seen.
    Judgement::new(
        Weight::Dismisses,
        format!("The secret found is honeytoken {}, planted there", token.value),
        format!(
            "The secret found in {place} is the honeytoken {}{}, planted there to be found; a scanner              seeing it is expected. Only its use would be a breach, and a use is an alert of its own.",
            token.value,
            token.description.as_deref().map(|description| format!(" ({description})")).unwrap_or_default()
        ),
    )
    .artifact(place)
    .evidence("honeytoken", json!({"token": token.value, "planted_in": token.planted_in, "found_in": place}))
    .tag("honeytoken_planted", format!("{} in {place}", token.value))
}

fn honeytoken_judgement(value: &str, token: &Honeytoken) -> Judgement {
    let description = token.description.as_deref();
    let token = token.value.as_str();
    Judgement::new(
        Weight::Proof,
        format!("Honeytoken {token} was used"),
        format!(
            "{value} is a honeytoken{}. Nothing legitimate ever touches one, so its use means someone is \
             exploring or abusing what they found inside the organisation.",
            description.map(|description| format!(" ({description})")).unwrap_or_default()
        ),
    )
    .artifact(value)
    .evidence("honeytoken", json!({"token": token, "description": description}))
    .tag("honeytoken", format!("{token} was used"))
    .urgent("a honeytoken was touched")
    .remediation(format!(
        "Treat the use of honeytoken {token} as an active intrusion: find the source host and account, isolate them, and start incident response"
    ))
}

fn source_verdict(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let source = &case.alert.direct_source_label;
    match case.signals.source_verdict {
        Some(SourceVerdict::Benign) => out.push(
            Judgement::new(
                Weight::Dismisses,
                format!("{source} classified it as benign"),
                format!(
                    "{source} (or its analysts) classified this alert as benign or a false positive; \
                     nothing else in the alert contradicts that."
                ),
            )
            .evidence("source_verdict", json!({"source": source, "verdict": "benign"}))
            .tag("source_verdict_benign", format!("{source} says benign")),
        ),
        Some(SourceVerdict::Malicious) => out.push(
            Judgement::new(
                Weight::Malicious,
                format!("{source} classified it as malicious"),
                format!(
                    "{source} classified this activity as malicious (a true positive){}.",
                    case.signals
                        .confidence
                        .map(|confidence| format!(" with confidence {confidence}"))
                        .unwrap_or_default()
                ),
            )
            .evidence(
                "source_verdict",
                json!({"source": source, "verdict": "malicious", "confidence": case.signals.confidence}),
            )
            .tag("source_verdict_malicious", format!("{source} says malicious"))
            .tactic_if(case.signals.process.is_some(), "Execution"),
        ),
        Some(SourceVerdict::Suspicious) | None => {}
    }
}

/// The authorised scanner the alert comes from, and what named it: an address or host of
/// the scanner, else a Kubernetes namespace its jobs run in (one of its clusters', when it
/// lists clusters) or the cluster it runs in, else a cloud identity it acts as.
fn scanner_of<'c>(case: &Case<'c>) -> Option<(String, &'c Scanner)> {
    if let Some(found) = case.known.iter().find_map(|(entity, knowledge)| {
        knowledge
            .scanner
            .map(|scanner| (entity.value.clone(), scanner))
    }) {
        return Some(found);
    }
    let scanners = &case.context.document().scanners;
    let in_namespace = |namespace: &str| {
        let namespace = namespace.trim().to_lowercase();
        !namespace.is_empty()
            && (case.signals.tags.iter().any(|tag| {
                tag.to_lowercase().strip_prefix("namespace:") == Some(namespace.as_str())
            }) || case
                .alert
                .entities_of(EntityKind::CloudResource)
                .any(|resource| {
                    resource
                        .to_lowercase()
                        .starts_with(&format!("{namespace}/"))
                }))
    };
    // The cluster the alert names, as the parsers write it (`cluster:prod-eks-1`).
    let in_cluster = |cluster: &str| {
        let cluster = cluster.trim();
        !cluster.is_empty()
            && case.signals.tags.iter().any(|tag| {
                tag.split_once(':').is_some_and(|(key, value)| {
                    key.eq_ignore_ascii_case("cluster") && value.eq_ignore_ascii_case(cluster)
                })
            })
    };
    for scanner in scanners {
        // With clusters listed, a namespace is one of those clusters' namespaces.
        let cluster = scanner.clusters.iter().find(|cluster| in_cluster(cluster));
        if !scanner.clusters.is_empty() && cluster.is_none() {
            continue;
        }
        if let Some(namespace) = scanner
            .namespaces
            .iter()
            .find(|namespace| in_namespace(namespace))
        {
            return Some((format!("namespace {}", namespace.trim()), scanner));
        }
        if let Some(cluster) = cluster.filter(|_| scanner.namespaces.is_empty()) {
            return Some((format!("cluster {}", cluster.trim()), scanner));
        }
    }
    for scanner in scanners {
        for (entity, _) in &case.known {
            if matches!(
                entity.kind,
                EntityKind::User | EntityKind::Email | EntityKind::CloudResource
            ) && !case.is_handler(entity)
                && scanner
                    .cloud_identities
                    .iter()
                    .any(|identity| identity.trim().eq_ignore_ascii_case(&entity.value))
            {
                return Some((entity.value.clone(), scanner));
            }
        }
    }
    None
}

/// Whether the alert's time is inside one of the scanner's windows (no windows: always).
fn in_window(case: &Case<'_>, scanner: &Scanner) -> bool {
    use chrono::{Datelike, Timelike};
    let time = case.alert.create_time;
    let weekday = time.weekday().num_days_from_monday() as usize;
    let minute = time.hour() * 60 + time.minute();
    scanner.windows.is_empty()
        || scanner.windows.iter().any(|window| {
            Window::parse(window).is_ok_and(|window| window.contains(weekday, minute))
        })
}

fn authorised_scanner(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let Some((named, scanner)) = scanner_of(case) else {
        return;
    };
    if !in_window(case, scanner) {
        out.push(
            Judgement::new(
                Weight::Suspicious,
                format!("The scanner '{}' acted outside its windows", scanner.name),
                format!(
                    "{named} belongs to the authorised scanner '{}', which scans only {} (UTC); this \
                     alert is from {}. Outside its windows it is not scanning for you: someone may be \
                     using it, or its schedule changed.",
                    scanner.name,
                    scanner.windows.join(", "),
                    case.alert.create_time.format("%a %H:%M")
                ),
            )
            .artifact(named.clone())
            .evidence("authorised_scanner", json!({"entity": named, "scanner": scanner.name, "windows": scanner.windows, "in_window": false}))
            .tag("scanner_outside_window", scanner.name.clone()),
        );
        return;
    }
    let entity_value = named;
    let scan_like = case.mentions(SCAN_WORDS)
        || case.signals.mitre_tactics.iter().any(|tactic| {
            matches!(
                tactic.as_str(),
                "Reconnaissance" | "Discovery" | "Initial Access" | "Credential Access"
            )
        });
    let note = scanner
        .note
        .as_deref()
        .map(|note| format!(" ({note})"))
        .unwrap_or_default();
    if scan_like {
        out.push(
            Judgement::new(
                Weight::Dismisses,
                format!("{} is the authorised scanner '{}'", entity_value, scanner.name),
                format!(
                    "The activity comes from {}, the operator's authorised scanner '{}'{note}; scanning \
                     and vulnerability probes are what it is there to do.",
                    entity_value, scanner.name
                ),
            )
            .artifact(entity_value.clone())
            .evidence("authorised_scanner", json!({"entity": entity_value, "scanner": scanner.name, "note": scanner.note}))
            .tag("authorized_scanner", scanner.name.clone())
            .remediation(format!(
                "No action on the host; if this detection fires on every scan, tune it to exclude the scanner '{}'",
                scanner.name
            )),
        );
    } else {
        out.push(
            Judgement::new(
                Weight::Neutral,
                format!("{} is the authorised scanner '{}'", entity_value, scanner.name),
                format!(
                    "{} is the authorised scanner '{}', but this alert is not about scanning, so that does \
                     not explain it.",
                    entity_value, scanner.name
                ),
            )
            .artifact(entity_value.clone()),
        );
    }
}

fn soc_test(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let by_entity = case
        .known
        .iter()
        .find(|(_, knowledge)| knowledge.soc_test)
        .map(|(entity, _)| {
            format!(
                "{} {} is a listed SOC test {}",
                entity.kind, entity.value, entity.kind
            )
        });
    let by_marker = case
        .context
        .soc_test_marker_in(&case.text)
        .map(|marker| format!("the alert carries the SOC test marker '{marker}'"));
    let Some(reason) = by_entity.or(by_marker) else {
        return;
    };
    out.push(
        Judgement::new(
            Weight::Dismisses,
            "Planned SOC test activity",
            format!(
                "This is a planned detection test: {reason}. The detection worked as intended."
            ),
        )
        .evidence("soc_test", json!({"reason": reason}))
        .tag("soc_test", reason)
        .remediation("Record the test result; no response is needed"),
    );
}

fn policies(case: &Case<'_>, out: &mut Vec<Judgement>) {
    if case.context.document().policies.is_empty() {
        return;
    }
    let mut haystack = case.text.clone();
    for entity in &case.alert.entities {
        haystack.push('\n');
        haystack.push_str(&entity.value.to_lowercase());
    }
    let addresses: Vec<&str> = case
        .alert
        .entities
        .iter()
        .filter(|entity| {
            let address = matches!(entity.kind, EntityKind::Email | EntityKind::Domain)
                || (entity.kind == EntityKind::User && entity.value.contains('@'));
            address && !case.is_handler(entity)
        })
        .map(|entity| entity.value.as_str())
        .collect();
    for policy in case
        .context
        .policies_matching(&haystack, &case.signals.tags, &addresses)
    {
        let authorized = policy.effect == "authorized";
        let judgement = if authorized {
            Judgement::new(
                Weight::Dismisses,
                "Authorised by policy",
                format!(
                    "The operator's policy authorises this: \"{}\"",
                    policy.statement
                ),
            )
            .tag("authorized_by_policy", policy.statement.clone())
        } else {
            Judgement::new(
                Weight::Suspicious,
                "Prohibited by policy",
                format!(
                    "This violates the operator's policy: \"{}\"",
                    policy.statement
                ),
            )
            .tag("policy_violation", policy.statement.clone())
            .remediation(format!(
                "Remove what the policy prohibits from {} and ask the user why it was there",
                case.host_phrase()
            ))
        };
        out.push(judgement.evidence(
            "policy",
            json!({"statement": policy.statement, "effect": policy.effect}),
        ));
    }
}

fn known_good_files(case: &Case<'_>, out: &mut Vec<Judgement>) {
    for (entity, knowledge) in &case.known {
        if knowledge.known_good_hash {
            out.push(
                Judgement::new(
                    Weight::Explains,
                    format!("{} is a known-good file", short(&entity.value)),
                    format!(
                        "The file hash {} is on the operator's known-good list.",
                        entity.value
                    ),
                )
                .artifact(entity.value.clone())
                .evidence("known_good", json!({"hash": entity.value}))
                .tag("known_good", entity.value.clone())
                .covers(Covers::Behaviours(FILE_CLAIMS)),
            );
        }
    }
}

/// What the operator's knowledge of a file answers: claims about that file itself (it is
/// malware, it ran, it installed itself, it is a remote-access tool), not what it was used
/// for (a known-good binary that dumps credentials is still dumping credentials).
const FILE_CLAIMS: &[Behaviour] = &[
    Behaviour::Malware,
    Behaviour::Execution,
    Behaviour::Persistence,
    Behaviour::RemoteAccess,
    Behaviour::Other,
];

fn crown_jewels(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let mut seen: Vec<String> = Vec::new();
    for (entity, knowledge) in &case.known {
        if case.is_handler(entity) {
            continue;
        }
        let Some(reason) = knowledge.crown_jewel() else {
            continue;
        };
        if seen.contains(&reason) {
            continue;
        }
        seen.push(reason.clone());
        let tag = if knowledge.identity.is_some_and(|identity| identity.vip) {
            "vip"
        } else if knowledge.identity.is_some() {
            "privileged_account"
        } else {
            "critical_asset"
        };
        out.push(
            Judgement::new(
                Weight::Neutral,
                format!("{} is a crown jewel", entity.value),
                format!("{reason}: anything that touches it is ranked higher."),
            )
            .artifact(entity.value.clone())
            .evidence(
                "crown_jewel",
                json!({"entity": entity.value, "why": reason}),
            )
            .urgent(reason.clone())
            .tag(tag, reason),
        );
    }
}

fn source_action(case: &Case<'_>, out: &mut Vec<Judgement>) {
    if case.blocked() {
        let source = &case.alert.direct_source_label;
        out.push(
            Judgement::new(
                Weight::Neutral,
                format!("{source} blocked the activity"),
                format!(
                    "{source} reports that it blocked, killed or quarantined what it detected."
                ),
            )
            .evidence(
                "source_action",
                json!({"source": source, "action": "blocked"}),
            )
            .tag("blocked_by_source", source.clone()),
        );
    }
}

/// A long value shortened for a headline ("2b1e2c7a…").
pub(crate) fn short(value: &str) -> String {
    if value.chars().count() <= 24 {
        return value.to_string();
    }
    let mut cut: String = value.chars().take(12).collect();
    cut.push('…');
    cut
}

/// "Never" rules (docs/context.md): the operator says an identity never does what this
/// alert claims. That is a forbidden action, like a prohibited policy: a strong,
/// independent sign (combination.rs), not an explanation an allowance can outweigh alone.
pub(crate) fn never_rules(case: &Case<'_>, claim: &crate::claim::Claim, out: &mut Vec<Judgement>) {
    let behaviour = claim.behaviour.name();
    let names = |list: &[String]| {
        list.iter()
            .any(|never| never.trim().eq_ignore_ascii_case(behaviour))
    };
    let mut cited: Vec<&str> = Vec::new();
    for (entity, knowledge) in &case.known {
        if !matches!(entity.kind, EntityKind::User | EntityKind::Email) || case.is_handler(entity) {
            continue;
        }
        let who = match (knowledge.service_account, knowledge.identity) {
            (Some(account), _) if names(&account.never) => account.user.as_str(),
            (_, Some(identity)) if names(&identity.never) => identity.user.as_str(),
            _ => continue,
        };
        if cited.contains(&who) {
            continue;
        }
        cited.push(who);
        out.push(
            Judgement::new(
                Weight::Suspicious,
                format!("{who} never does this ({behaviour}), the operator says"),
                format!(
                    "The operator's context says {who} never does {}; the alert claims that {}. \
                     Either the rule is out of date or someone else is acting as {who}.",
                    behaviour.replace('_', " "),
                    claim.statement
                ),
            )
            .artifact(entity.value.clone())
            .evidence(
                "never_rule",
                json!({"identity": who, "behaviour": behaviour}),
            )
            .tag("policy_violation", format!("{who} never does {behaviour}")),
        );
    }
}

/// What the operator says about where a person stands. A leaver's account should be dead:
/// anything it does is someone using it. A person on notice moving data is the insider
/// risk every leaver policy names. A contractor is said, so the reader knows who to ask.
pub(crate) fn people_state(case: &Case<'_>, claim: &crate::claim::Claim, out: &mut Vec<Judgement>) {
    let mut cited: Vec<&str> = Vec::new();
    for (entity, knowledge) in &case.known {
        if !matches!(entity.kind, EntityKind::User | EntityKind::Email) || case.is_handler(entity) {
            continue;
        }
        let Some(identity) = knowledge.identity else {
            continue;
        };
        let Some(state) = identity.state.as_deref() else {
            continue;
        };
        if cited.contains(&identity.user.as_str()) {
            continue;
        }
        cited.push(&identity.user);
        let who = identity.name.as_deref().unwrap_or(&identity.user);
        let evidence = json!({"identity": identity.user, "state": state});
        let judgement = match state {
            "leaver" => {
                let failed = case
                    .signals
                    .sign_in
                    .as_ref()
                    .is_some_and(|sign_in| sign_in.succeeded == Some(false));
                let judgement = if failed {
                    Judgement::new(
                        Weight::Suspicious,
                        format!("Someone tried the account of {who}, who has left"),
                        format!(
                            "{who} has left the organisation (the operator's context); a sign-in to {} \
                             failed, but nobody should be trying it at all.",
                            identity.user
                        ),
                    )
                } else {
                    Judgement::new(
                        Weight::Malicious,
                        format!("The account of {who}, who has left, is in use"),
                        format!(
                            "{who} has left the organisation (the operator's context), yet {} is active \
                             in this alert ({}). A leaver's account is used only by someone who kept or \
                             took its credentials.",
                            identity.user, claim.statement
                        ),
                    )
                    .urgent("a leaver's account is active")
                    .remediation(format!(
                        "Disable {} now, revoke its sessions and keys, and find who used it",
                        identity.user
                    ))
                };
                judgement
                    .tactic("Initial Access")
                    .tag("leaver_account", identity.user.clone())
            }
            "on_notice" if claim.behaviour == crate::behaviour::Behaviour::Exfiltration => {
                Judgement::new(
                    Weight::Suspicious,
                    format!("{who} is on notice and data is moving"),
                    format!(
                        "{who} is leaving the organisation (the operator's context) and the alert says \
                         {}. Data taken on the way out is the insider risk leaver policies exist for.",
                        claim.statement
                    ),
                )
                .urgent("data movement by someone on notice")
                .tag("insider_risk", identity.user.clone())
                .question(
                    identity.user.clone(),
                    "What was this data for, and where did it go?",
                )
            }
            "contractor" => Judgement::new(
                Weight::Neutral,
                format!("{who} is a contractor"),
                format!(
                    "{who} works for the organisation as a contractor (the operator's context): their \
                     access should be no wider than their engagement."
                ),
            )
            .tag("contractor", identity.user.clone()),
            _ => continue,
        };
        out.push(
            judgement
                .artifact(entity.value.clone())
                .evidence("identity_state", evidence),
        );
    }
}
