//! Helpers both test binaries use.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use sleuth_domain::{AnswerResult, Entity, EntityKind, FactKind, FactValue};
use sleuth_sources::{SourceConfig, Sources};

/// What `test` (past cache, breaker and rate limit) gets from the source.
pub(crate) async fn ask(
    sources: &Sources,
    config: &SourceConfig,
    kind: EntityKind,
    value: &str,
) -> AnswerResult {
    sources
        .test(config.clone(), &Entity::new(kind, value))
        .await
        .unwrap()
        .result
}

/// A fact of a found answer; `None` when the answer lacks it or was not found.
pub(crate) fn fact(result: &AnswerResult, kind: FactKind) -> Option<FactValue> {
    match result {
        AnswerResult::Found(facts) => facts
            .iter()
            .find(|fact| fact.kind == kind)
            .map(|fact| fact.value.clone()),
        _ => None,
    }
}
