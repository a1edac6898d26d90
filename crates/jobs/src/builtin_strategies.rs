//! The custom strategies Sleuth ships. Each is protected (it cannot be changed, enabled,
//! disabled or archived) and known by a stable v5 uuid derived from its key, as the
//! trigger catalog is: every process creates the missing ones once (`ensure`), and the
//! database keeps one copy however many processes start. A later release that changes a
//! shipped strategy gives it a new key; the old one stays, with its counters.

use std::sync::Arc;

use sleuth_domain::{Outcome, Priority};
use sleuth_store::{DraftPriority, NewStrategy, Store, StoreResult, StrategyDraft};
use uuid::Uuid;

use crate::runtime::Runtime;

/// The namespace of the uuids of shipped strategies and their rules. Never change it.
const STRATEGY_NAMESPACE: Uuid = Uuid::from_u128(0x5f0c_2b7e_93a4_4d61_b8e2_7c1a_d40f_36e9);

/// The stable uuid of a shipped strategy or rule, from its key.
pub fn builtin_uuid(key: &str) -> Uuid {
    Uuid::new_v5(&STRATEGY_NAMESPACE, key.as_bytes())
}

/// Every strategy Sleuth ships.
pub fn catalog() -> Vec<NewStrategy> {
    vec![NewStrategy {
        internal_origin_uuid: builtin_uuid("false_alerts_stay_informational"),
        is_enabled: true,
        is_protected: true,
        author_id: None,
        draft: StrategyDraft {
            title: "False alerts stay informational".into(),
            scenario: Some(
                "A false alert needs no response. Whatever other priority rules say, an \
                 investigation concluded COMPLETED_FALSE_ALERT (by Sleuth or by an outcome \
                 rule) stays informational: this rule has ranking 1 and was made before any \
                 other, so it wins every tie."
                    .into(),
            ),
            priorities: vec![DraftPriority {
                id: None,
                priority: Priority::Informational,
                ranking: 1,
                outcomes: vec![Outcome::FalseAlert],
                insight_tag_rule: None,
                internal_origin_uuid: Some(builtin_uuid("false_alerts_stay_informational/1")),
            }],
            ..StrategyDraft::default()
        },
    }]
}

/// Creates the shipped strategies the store does not have yet, once per process.
pub async fn ensure(runtime: &Runtime, store: &Arc<dyn Store>) -> StoreResult<()> {
    runtime
        .builtin_strategies_synced()
        .get_or_try_init(|| async {
            store
                .sync_builtin_strategies(&catalog(), chrono::Utc::now())
                .await
        })
        .await
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_strategies_keep_their_uuids_between_releases() {
        assert_eq!(
            builtin_uuid("false_alerts_stay_informational").to_string(),
            Uuid::new_v5(&STRATEGY_NAMESPACE, b"false_alerts_stay_informational").to_string()
        );
        let catalog = catalog();
        assert!(catalog.iter().all(|strategy| strategy.is_protected));
        let mut uuids: Vec<Uuid> = catalog
            .iter()
            .map(|strategy| strategy.internal_origin_uuid)
            .collect();
        uuids.dedup();
        assert_eq!(uuids.len(), catalog.len());
    }
}
