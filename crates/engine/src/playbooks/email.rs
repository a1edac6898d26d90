//! Email alerts: phishing, malicious attachments and links, impersonation. The deciding
//! questions: is it the operator's own phishing simulation or a known partner; did the
//! gateway classify it; was it delivered; did anyone click and was the click let through.

use serde_json::json;
use sleuth_domain::{AlertCategory, EmailSignal, EntityKind};

use crate::case::Case;
use crate::judgement::{Judgement, Weight};
use crate::vocabulary::{BEC_WORDS, EMAIL_THREAT_WORDS, LOOKALIKE_WORDS};

pub(super) fn applies(case: &Case<'_>) -> bool {
    case.category() == Some(AlertCategory::Email) || case.signals.email.is_some()
}

pub(super) fn run(case: &Case<'_>, out: &mut Vec<Judgement>) {
    let empty = EmailSignal::default();
    let email = case.signals.email.as_ref().unwrap_or(&empty);
    let sender = email
        .sender
        .clone()
        .or_else(|| email.envelope_sender.clone())
        .unwrap_or_else(|| "an unknown sender".to_string());
    let recipients = recipients(case, email);
    if phishing_simulation(case, email, &sender, out) {
        return;
    }
    partner(case, &sender, out);
    classification(case, email, &sender, &recipients, out);
    delivery(email, &sender, &recipients, out);
    if email.sender.is_none() && email.envelope_sender.is_none() && recipients.is_empty() {
        out.push(Judgement::new(
            Weight::Missing,
            "No sender and no recipient",
            "The email alert names neither who sent the message nor who received it; without them the \
             message cannot be traced or purged. Send the sender and recipient addresses with the alert.",
        ));
    }
}

fn recipients(case: &Case<'_>, email: &EmailSignal) -> Vec<String> {
    let mut recipients: Vec<String> = email
        .recipients
        .iter()
        .filter_map(|recipient| sleuth_normalize::entities::normalize(EntityKind::Email, recipient))
        .collect();
    if recipients.is_empty() {
        recipients = case
            .known_of(EntityKind::Email)
            .filter(|(_, knowledge)| knowledge.own_domain)
            .map(|(entity, _)| entity.value.clone())
            .collect();
    }
    recipients
}

/// True when the message is the operator's own phishing simulation (nothing else to do).
fn phishing_simulation(
    case: &Case<'_>,
    email: &EmailSignal,
    sender: &str,
    out: &mut Vec<Judgement>,
) -> bool {
    let by_sender = [&email.sender, &email.envelope_sender]
        .into_iter()
        .flatten()
        .filter_map(|address| case.lookup(EntityKind::Email, address))
        .any(|knowledge| knowledge.phishing_simulation);
    let by_ip = email
        .sender_ip
        .as_deref()
        .and_then(|ip| case.lookup(EntityKind::Ip, ip))
        .is_some_and(|knowledge| knowledge.phishing_simulation);
    let by_link = case.known.iter().any(|(entity, knowledge)| {
        matches!(entity.kind, EntityKind::Domain) && knowledge.phishing_simulation
    });
    if !(by_sender || by_ip || by_link) {
        return false;
    }
    let how = if by_sender {
        format!("the sender {sender} is the phishing-simulation platform")
    } else if by_ip {
        format!(
            "it was sent from {}, the phishing-simulation platform",
            email.sender_ip.as_deref().unwrap_or_default()
        )
    } else {
        "its links point to the phishing-simulation domain".to_string()
    };
    out.push(
        Judgement::new(
            Weight::Dismisses,
            "The organisation's own phishing simulation",
            format!("This message is part of the operator's phishing simulation: {how}."),
        )
        .artifact(sender)
        .evidence(
            "phishing_simulation",
            json!({"sender": sender, "sender_ip": email.sender_ip}),
        )
        .tag("phishing_simulation", how)
        .remediation(
            "No response needed; the click or report counts toward the awareness campaign",
        ),
    );
    true
}

fn partner(case: &Case<'_>, sender: &str, out: &mut Vec<Judgement>) {
    let Some(knowledge) = case.lookup(EntityKind::Email, sender) else {
        return;
    };
    if knowledge.partner_domain || knowledge.known_good_domain {
        let domain = sender.rsplit_once('@').map_or(sender, |(_, domain)| domain);
        out.push(
            Judgement::new(
                Weight::Reassures,
                format!("{domain} is a known partner"),
                format!("The sender {sender} belongs to {domain}, which the operator lists as a known partner."),
            )
            .artifact(sender)
            .evidence("known_partner", json!({"sender": sender, "domain": domain}))
            .tag("known_partner", domain.to_string()),
        );
    }
}

fn classification(
    case: &Case<'_>,
    email: &EmailSignal,
    sender: &str,
    recipients: &[String],
    out: &mut Vec<Judgement>,
) {
    let kind = email
        .threat_kind
        .as_deref()
        .map(str::to_lowercase)
        .or_else(|| {
            case.first_mention(EMAIL_THREAT_WORDS)
                .or_else(|| case.first_word(BEC_WORDS))
                .map(str::to_string)
        });
    let Some(kind) = kind else {
        return;
    };
    let who = if recipients.is_empty() {
        "the recipients".to_string()
    } else {
        recipients.join(", ")
    };
    let impersonation = kind.contains("impersonat")
        || kind.contains("bec")
        || kind.contains("business email")
        || kind.contains("impostor")
        || case.mentions(LOOKALIKE_WORDS);
    // A look-alike flag on a message that really comes from the partner's (or our own)
    // domain is the detector being wrong, not an impersonation.
    if impersonation
        && let Some(knowledge) = case.lookup(EntityKind::Email, sender)
        && (knowledge.partner_domain || knowledge.known_good_domain || knowledge.own_domain)
    {
        let domain = sender.rsplit_once('@').map_or(sender, |(_, domain)| domain);
        out.push(
            Judgement::new(
                Weight::Explains,
                format!("The sender really is {domain}"),
                format!(
                    "The message was flagged as impersonation, but it comes from {sender} on {domain} itself, \
                     a domain the operator lists as a partner or its own: nothing is being imitated."
                ),
            )
            .artifact(sender)
            .evidence("sender_domain", json!({"sender": sender, "domain": domain, "flag": kind}))
            .tag("known_partner", domain.to_string()),
        );
        return;
    }
    // The source stands behind its classification when it says so outright, acted on it
    // (blocked, quarantined, removed) or is confident; a warning banner alone is a doubt.
    let stands_behind = case.signals.source_verdict
        == Some(sleuth_domain::SourceVerdict::Malicious)
        || case.blocked()
        || email.delivered == Some(false)
        || case
            .signals
            .confidence
            .is_some_and(|confidence| confidence >= 80);
    let attack_weight = if stands_behind {
        Weight::Malicious
    } else {
        Weight::Suspicious
    };
    let (weight, headline, what, tactic, tag) = if kind.contains("spam")
        || kind.contains("bulk")
        || kind.contains("graymail")
    {
        (
            Weight::Neutral,
            format!("Spam from {sender}"),
            format!(
                "The gateway classified the message from {sender} to {who} as spam, not as an attack."
            ),
            None,
            "spam",
        )
    } else if kind.contains("malware") {
        (
            attack_weight,
            format!("Malware sent by {sender}"),
            format!(
                "The message from {sender} to {who} carried malware, as {} classified it.",
                case.alert.direct_source_label
            ),
            Some("Initial Access"),
            "malicious_attachment",
        )
    } else if impersonation {
        (
            attack_weight,
            format!("Impersonation attempt by {sender}"),
            format!(
                "{} classified the message from {sender} to {who} as impersonation (business email compromise): \
                 a request for money or data in someone else's name.",
                case.alert.direct_source_label
            ),
            Some("Initial Access"),
            "impersonation",
        )
    } else {
        (
            attack_weight,
            format!("Phishing sent by {sender}"),
            format!(
                "{} classified the message from {sender} to {who} as phishing{}.",
                case.alert.direct_source_label,
                email
                    .subject
                    .as_deref()
                    .map(|subject| format!(" (subject: \"{subject}\")"))
                    .unwrap_or_default()
            ),
            Some("Initial Access"),
            "phishing",
        )
    };
    let mut judgement = Judgement::new(weight, headline, what)
        .artifact(sender)
        .evidence(
            "gateway_classification",
            json!({"threat": kind, "sender": sender, "subject": email.subject}),
        )
        .tag(tag, sender.to_string())
        .restates_claim();
    if let Some(tactic) = tactic {
        judgement = judgement.tactic(tactic).remediation(format!(
            "Purge every copy of the message from {sender} from all mailboxes and block the sender"
        ));
    }
    out.push(judgement);
}

fn delivery(email: &EmailSignal, sender: &str, recipients: &[String], out: &mut Vec<Judgement>) {
    let who = if recipients.is_empty() {
        "a recipient".to_string()
    } else {
        recipients.join(", ")
    };
    if email.clicked == Some(true) && email.click_permitted != Some(false) {
        let mut judgement = Judgement::new(
            Weight::Suspicious,
            format!("{who} clicked a link in the message"),
            format!(
                "{who} clicked a link in the message from {sender} and the click was let through: if the page \
                 asked for a password, assume it was entered."
            ),
        )
        .evidence("user_click", json!({"recipients": recipients, "permitted": email.click_permitted}))
        .tactic("Initial Access")
        .tag("user_clicked", who.clone());
        for recipient in recipients {
            judgement = judgement
                .artifact(recipient.clone())
                .remediation(format!(
                    "Reset the password of {recipient} and revoke their sessions"
                ))
                .question(
                    recipient.clone(),
                    "Did you enter your password or open a file after clicking the link?",
                );
        }
        out.push(judgement);
    } else if email.clicked == Some(true) {
        out.push(
            Judgement::new(
                Weight::Neutral,
                "The click was blocked",
                format!("{who} clicked a link in the message, but the click was blocked before the page loaded."),
            )
            .evidence("user_click", json!({"permitted": false}))
            .tag("blocked_by_source", "click blocked"),
        );
    }
    match email.delivered {
        Some(false) => out.push(
            Judgement::new(
                Weight::Neutral,
                "The message was not delivered",
                format!(
                    "The message from {sender} was blocked or quarantined before it reached {who}."
                ),
            )
            .evidence("delivery", json!({"delivered": false}))
            .tag("blocked_by_source", "not delivered"),
        ),
        Some(true) if email.clicked != Some(true) => out.push(
            Judgement::new(
                Weight::Neutral,
                "The message was delivered",
                format!("The message from {sender} reached the inbox of {who}."),
            )
            .evidence("delivery", json!({"delivered": true}))
            .remediation(format!("Pull the message from the inbox of {who}"))
            .question(
                who.clone(),
                "Did you open the message, click a link or open an attachment?",
            ),
        ),
        _ => {}
    }
}
