//! Network alerts: IDS signatures of attacks and command-and-control, scans, and large
//! transfers out. Direction is judged with the operator's own ranges, not just RFC 1918.

use serde_json::json;
use sleuth_domain::{AlertCategory, Direction, EntityKind, NetworkSignal};

use crate::case::Case;
use crate::judgement::{Judgement, Weight};
use crate::vocabulary::{ATTACK_WORDS, C2_WORDS, EXFILTRATION_WORDS, SCAN_NOTICE_WORDS};

/// Bytes sent out above which a transfer to an unknown destination needs a look.
const LARGE_TRANSFER_BYTES: u64 = 500 * 1024 * 1024;

pub(crate) fn applies(case: &Case<'_>) -> bool {
    case.category() == Some(AlertCategory::Network) || case.signals.network.is_some()
}

pub(crate) fn run(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let empty = NetworkSignal::default();
    let network = case.signals.network.as_ref().unwrap_or(&empty);
    let direction = direction(case, network);
    attack_signature(case, network, direction, out);
    command_and_control(case, network, direction, out);
    scanning(case, network, out);
    exfiltration(case, network, direction, out);
    if !case.known.iter().any(|(entity, _)| {
        matches!(
            entity.kind,
            EntityKind::Ip | EntityKind::Domain | EntityKind::Host
        )
    }) {
        out.push(Judgement::new(
            Weight::Missing,
            "No address",
            "The network alert names no source or destination address or host, so neither end can be \
             checked. Send the flow's addresses with the alert.",
        ));
    }
}

/// Which way the traffic crossed the organisation's edge, by the operator's ranges.
fn direction(case: &Case<'_>, network: &NetworkSignal) -> Option<Direction> {
    let own = |ip: &Option<String>| {
        ip.as_deref()
            .and_then(|ip| case.lookup(EntityKind::Ip, ip))
            .and_then(|knowledge| knowledge.place)
            .map(|place| place.is_own())
    };
    match (own(&network.source_ip), own(&network.destination_ip)) {
        (Some(true), Some(true)) => Some(Direction::Internal),
        (Some(true), Some(false)) => Some(Direction::Outbound),
        (Some(false), Some(true)) => Some(Direction::Inbound),
        _ => network.direction,
    }
}

fn attack_signature(
    case: &Case<'_>,
    network: &NetworkSignal,
    direction: Option<Direction>,
    out: &mut Vec<Judgement>,
) {
    let Some(word) = case.first_mention(ATTACK_WORDS) else {
        return;
    };
    let from = network
        .source_ip
        .clone()
        .unwrap_or_else(|| "an unknown source".to_string());
    let to = network
        .destination_ip
        .clone()
        .unwrap_or_else(|| case.host_phrase());
    let inbound = direction == Some(Direction::Inbound);
    let blocked = case.blocked();
    let signature = network
        .signature
        .clone()
        .unwrap_or_else(|| case.alert.title.clone());
    let (weight, detail) = if inbound || blocked {
        (
            Weight::Malicious,
            format!(
                "{from} sent an exploit attempt ('{word}': {signature}) to {to}{}. The attempt is malicious; {}",
                if inbound { " from the internet" } else { "" },
                if blocked {
                    "the sensor blocked it."
                } else {
                    "nothing says it was blocked, so check whether the target was vulnerable and what it answered."
                }
            ),
        )
    } else {
        (
            Weight::Suspicious,
            format!(
                "{from} sent traffic matching an exploit signature ('{word}': {signature}) to {to}; between internal \
                 hosts this is either a misfiring rule or lateral movement."
            ),
        )
    };
    out.push(
        Judgement::new(weight, format!("Exploit attempt from {from} against {to}"), detail)
            .artifact(from.clone())
            .artifact(to.clone())
            .evidence(
                "ids_signature",
                json!({"signature": network.signature, "signature_id": network.signature_id, "category": network.signature_category, "source": from, "destination": to, "blocked": blocked}),
            )
            .tactic(if inbound { "Initial Access" } else { "Lateral Movement" })
            .tag("exploit_attempt", signature.clone())
            .restates_claim()
            .remediation(format!("Block {from} and confirm {to} is patched against the targeted vulnerability")),
    );
}

fn command_and_control(
    case: &Case<'_>,
    network: &NetworkSignal,
    direction: Option<Direction>,
    out: &mut Vec<Judgement>,
) {
    if direction == Some(Direction::Inbound) {
        return;
    }
    let Some(word) = case.first_word(C2_WORDS) else {
        return;
    };
    // A match in intel is handled (as proof) by the common checks; this is the signature alone.
    let destination = network
        .hostname
        .clone()
        .or_else(|| network.destination_ip.clone())
        .unwrap_or_else(|| "an external server".to_string());
    let source = network
        .source_ip
        .clone()
        .unwrap_or_else(|| case.host_phrase());
    out.push(
        Judgement::new(
            Weight::Suspicious,
            format!("Possible command-and-control from {source} to {destination}"),
            format!(
                "{source} talked to {destination} in a way the sensor's signature ties to malware ('{word}'). A \
                 signature alone can misfire; confirm by looking at the process that made the connection on {source}."
            ),
        )
        .artifact(source.clone())
        .artifact(destination.clone())
        .evidence("ids_signature", json!({"signature": network.signature, "category": network.signature_category, "destination": destination}))
        .tactic("Command and Control")
        .tag("c2_signature", destination.clone())
        .restates_claim()
        .remediation(format!("Find the process on {source} that connected to {destination}")),
    );
}

fn scanning(case: &Case<'_>, network: &NetworkSignal, out: &mut Vec<Judgement>) {
    if !case.mentions(SCAN_NOTICE_WORDS) {
        return;
    }
    let source = network
        .source_ip
        .clone()
        .or_else(|| {
            case.alert
                .entities_of(EntityKind::Ip)
                .next()
                .map(str::to_string)
        })
        .unwrap_or_else(|| "an unknown source".to_string());
    let internal = case
        .lookup(EntityKind::Ip, &source)
        .and_then(|knowledge| knowledge.place)
        .is_some_and(|place| place.is_own());
    let scanner = case
        .known
        .iter()
        .any(|(_, knowledge)| knowledge.scanner.is_some());
    if scanner {
        return;
    }
    out.push(
        Judgement::new(
            Weight::Suspicious,
            format!("Scan from {source}"),
            if internal {
                format!(
                    "{source}, inside the network and not a listed scanner, scanned other hosts: attackers map the \
                     network this way before moving laterally."
                )
            } else {
                format!("{source} scanned the organisation from the internet; this is common background noise unless it is followed by more.")
            },
        )
        .artifact(source.clone())
        .evidence("scan", json!({"source": source, "internal": internal}))
        .tactic("Discovery")
        .tag("scan", source.clone())
        .restates_claim(),
    );
}

fn exfiltration(
    case: &Case<'_>,
    network: &NetworkSignal,
    direction: Option<Direction>,
    out: &mut Vec<Judgement>,
) {
    let bytes = network.bytes_out.unwrap_or(0);
    let large = bytes >= LARGE_TRANSFER_BYTES && direction != Some(Direction::Inbound);
    let words = case.mentions(EXFILTRATION_WORDS);
    if !large && !words {
        return;
    }
    let destination = network
        .hostname
        .clone()
        .or_else(|| network.destination_ip.clone())
        .unwrap_or_else(|| "an external destination".to_string());
    let known_good = network
        .destination_ip
        .as_deref()
        .and_then(|ip| case.lookup(EntityKind::Ip, ip))
        .is_some_and(|knowledge| {
            knowledge.known_good_ip || knowledge.place.is_some_and(|place| place.is_own())
        })
        || network
            .hostname
            .as_deref()
            .and_then(|host| case.lookup(EntityKind::Domain, host))
            .is_some_and(|knowledge| knowledge.known_good_domain || knowledge.partner_domain);
    if known_good {
        out.push(
            Judgement::new(
                Weight::Explains,
                format!("Large transfer to known destination {destination}"),
                format!(
                    "{} went to {destination}, a destination the operator lists as known.",
                    megabytes(bytes)
                ),
            )
            .artifact(destination.clone())
            .evidence(
                "transfer",
                json!({"bytes_out": bytes, "destination": destination, "known": true}),
            )
            .tag("known_destination", destination),
        );
        return;
    }
    let source = network
        .source_ip
        .clone()
        .unwrap_or_else(|| case.host_phrase());
    out.push(
        Judgement::new(
            Weight::Suspicious,
            format!("{} sent from {source} to {destination}", megabytes(bytes)),
            format!(
                "{source} sent {} to {destination}, a destination the organisation does not know. Large uploads to \
                 unknown places are how stolen data leaves.",
                megabytes(bytes)
            ),
        )
        .artifact(source.clone())
        .artifact(destination.clone())
        .evidence("transfer", json!({"bytes_out": bytes, "destination": destination, "known": false}))
        .tactic("Exfiltration")
        .tag("data_exfiltration", destination.clone())
        .restates_claim()
        .remediation(format!("Identify what {source} uploaded to {destination} and who started it")),
    );
}

fn megabytes(bytes: u64) -> String {
    if bytes == 0 {
        return "data".to_string();
    }
    #[allow(clippy::cast_precision_loss)] // A rounded figure for a sentence.
    let megabytes = bytes as f64 / (1024.0 * 1024.0);
    format!("{megabytes:.0} MB")
}
