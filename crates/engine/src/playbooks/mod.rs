//! Playbooks: one module per kind of alert, each turning what it checks into judgements.
//! The common and history checks run on every alert; the others when the alert is of
//! their kind (an alert can be several kinds: an EDR alert with a network connection).

pub(crate) mod behaviour;
pub(crate) mod cloud;
pub(crate) mod common;
pub(crate) mod data_sources;
mod email;
pub(crate) mod endpoint;
pub(crate) mod history;
pub(crate) mod identity;
pub(crate) mod network;

use sleuth_domain::EntityKind;

use crate::case::Case;
use crate::judgement::{Judgement, Weight};

/// Every judgement the playbooks make about one case.
pub(crate) fn run_all(case: &Case<'_>) -> Vec<Judgement> {
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
