//! Playbooks: one module per kind of alert, each turning what it checks into judgements.
//! The common and history checks run on every alert; the others when the alert is of
//! their kind (an alert can be several kinds: an EDR alert with a network connection).

pub(crate) mod behaviour;
pub(crate) mod cloud;
pub mod common;
pub(crate) mod data_sources;
mod email;
pub(crate) mod endpoint;
pub(crate) mod history;
pub(crate) mod identity;
pub(crate) mod network;

use sleuth_domain::EntityKind;

use crate::case::Case;
use crate::judgement::{Judgement, Weight};

/// Every word list the playbooks look for in an alert's text. Registering a list here makes
/// its words part of the one pass over the text that builds a case (case.rs): an
/// unregistered list still works, but is scanned separately (and trips a debug assertion).
pub(crate) const VOCABULARY: &[&[&str]] = &[
    common::SCAN_WORDS,
    behaviour::LSASS,
    behaviour::LSASS_DUMPERS,
    behaviour::LSASS_TOOLS,
    behaviour::DCSYNC_WORDS,
    behaviour::NTDS_WORDS,
    behaviour::CREDENTIAL_STORE_WORDS,
    behaviour::KERBEROS_WORDS,
    behaviour::RANSOMWARE_WORDS,
    endpoint::MALWARE_WORDS,
    endpoint::REMOTE_ACCESS_TOOLS,
    identity::IMPOSSIBLE_TRAVEL_WORDS,
    identity::MFA_FATIGUE_WORDS,
    identity::MFA_RESET_WORDS,
    identity::LEAKED_CREDENTIAL_WORDS,
    identity::INTERACTIVE_LOGON_WORDS,
    identity::PASSWORD_SPRAY_WORDS,
    identity::BRUTE_FORCE_WORDS,
    email::EMAIL_THREAT_WORDS,
    email::BEC_WORDS,
    email::LOOKALIKE_WORDS,
    cloud::ROOT_WORDS,
    cloud::CONTAINER_EXEC_WORDS,
    cloud::CRYPTOMINING_WORDS,
    cloud::INSTANCE_CREDENTIAL_WORDS,
    cloud::PUBLIC_EXPOSURE_WORDS,
    network::ATTACK_WORDS,
    network::C2_WORDS,
    network::SCAN_NOTICE_WORDS,
    network::EXFILTRATION_WORDS,
    crate::claim::TAMPERING_WORDS,
    crate::claim::BACKUP_DELETION_WORDS,
    crate::claim::PRIVILEGE_WORDS,
    crate::claim::PERSISTENCE_WORDS,
    crate::claim::REVERSE_SHELL_WORDS,
    crate::claim::EXFILTRATION_CLAIM_WORDS,
    crate::claim::C2_CLAIM_WORDS,
    crate::claim::SIGN_IN_WORDS,
    crate::claim::POSTURE_WORDS,
    crate::claim::LATERAL_WORDS,
    crate::claim::SCAN_CLAIM_WORDS,
    crate::claim::VULNERABILITY_WORDS,
];

/// Every judgement the playbooks make about one case.
pub fn run_all(case: &Case<'_>) -> Vec<Judgement> {
    let mut judgements = Vec::new();
    common::run(case, &mut judgements);
    history::run(case, &mut judgements);
    behaviour::run(case, &mut judgements);
    if endpoint::applies(case) {
        endpoint::run(case, &mut judgements);
    }
    if identity::applies(case) {
        identity::run(case, &mut judgements);
    } else {
        identity::guessing_elsewhere(case, &mut judgements);
    }
    if email::applies(case) {
        email::run(case, &mut judgements);
    }
    if cloud::applies(case) {
        cloud::run(case, &mut judgements);
    }
    if cloud::applies_to_secret(case) {
        cloud::exposed_secret(case, &mut judgements);
    }
    if network::applies(case) {
        network::run(case, &mut judgements);
    }
    let names_something = case
        .known
        .iter()
        .any(|(entity, _)| !matches!(entity.kind, EntityKind::Process | EntityKind::FilePath));
    if !names_something {
        judgements.push(Judgement::new(
            Weight::Missing,
            "The alert names nothing to investigate",
            "The alert names no host, account, address, domain, file hash or cloud resource, so there is \
             nothing to look up, correlate or act on.",
        ));
    }
    crate::judgement::merge_repeats(&mut judgements);
    judgements
}
