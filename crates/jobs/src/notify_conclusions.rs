//! The conclusions this process's workers stored, as destinations are told of them
//! (`RecentConclusions`), so that the deliverer makes their events without reading each
//! investigation back from the store.
//!
//! Reading an investigation to tell of it reads its whole parsed alert and result (tens of
//! kilobytes) for a dozen short fields the worker had in memory a moment before. A worker
//! therefore hands them over when it stores a conclusion, while some destination is
//! enabled; the deliverer takes them when it makes the conclusion's event. What it does
//! not find (a conclusion of another process, one made before a destination was enabled,
//! one the memory already let go) it reads as before: the memory saves reads, it never
//! decides what is told.
//!
//! A conclusion is taken only by the event of that very conclusion: its investigation and
//! the time of its system event (the conclusion's time, written in the same transaction)
//! must both match, so an investigation concluded again is never told with what an earlier
//! conclusion said. Its tenant union is named as it was at the conclusion.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use sleuth_domain::{InvestigationResult, ParsedAlert, Timestamp};
use sleuth_store::InvestigationToTell;

/// How many conclusions are kept untaken: a few seconds of a busy drain. A deliverer
/// further behind reads the rest, which costs reads, not correctness.
const KEPT: usize = 4096;

/// Shared by a process's workers and its deliverer (through the `Runtime`).
#[derive(Default)]
pub struct RecentConclusions {
    /// Set by the deliverer while an enabled destination exists; until then workers hand
    /// nothing over and the memory stays empty.
    wanted: AtomicBool,
    /// By investigation id: the conclusion's time (microseconds) and what destinations
    /// are told of it.
    kept: Mutex<BTreeMap<i64, (i64, InvestigationToTell)>>,
}

impl RecentConclusions {
    /// Whether workers should hand their conclusions over; when it turns false the kept
    /// ones are let go.
    pub fn set_wanted(&self, wanted: bool) {
        if !self.wanted.swap(wanted, Ordering::Relaxed) || wanted {
            return;
        }
        self.locked().clear();
    }

    pub fn wanted(&self) -> bool {
        self.wanted.load(Ordering::Relaxed)
    }

    /// Keeps what destinations are told of a conclusion just stored at `at` (built by
    /// `to_tell` while `wanted`).
    pub fn remember(&self, at: Timestamp, told: InvestigationToTell) {
        if !self.wanted() {
            return;
        }
        let mut kept = self.locked();
        kept.insert(told.investigation_id, (at.timestamp_micros(), told));
        while kept.len() > KEPT {
            kept.pop_first();
        }
    }

    /// The conclusion of `investigation_id` stored at `at`, if this process kept it; it is
    /// no longer kept afterwards.
    pub fn take(&self, investigation_id: i64, at: Timestamp) -> Option<InvestigationToTell> {
        let mut kept = self.locked();
        match kept.get(&investigation_id) {
            // The store keeps times to the microsecond.
            Some((kept_at, _)) if *kept_at == at.timestamp_micros() => {
                kept.remove(&investigation_id).map(|(_, told)| told)
            }
            _ => None,
        }
    }

    fn locked(&self) -> std::sync::MutexGuard<'_, BTreeMap<i64, (i64, InvestigationToTell)>> {
        // A panic while holding the lock left a map that is still whole.
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What destinations are told of a conclusion, from the alert and result it was made of:
/// the fields `Store::investigations_to_tell` reads back.
pub fn to_tell(
    investigation_id: i64,
    alert: &ParsedAlert,
    tenant_union: &str,
    result: &InvestigationResult,
) -> InvestigationToTell {
    InvestigationToTell {
        investigation_id,
        outcome: result.outcome,
        priority: result.priority,
        title: alert.title.clone(),
        tenant_id: alert.tenant_id.clone(),
        tenant_union: tenant_union.to_string(),
        source: alert.direct_source_label.clone(),
        entities: alert.entities.clone(),
        conclusion: result.conclusion.clone(),
        mitre_tactic: result.mitre_tactic.clone(),
        // In name order, as the store reads them.
        insight_tags: result
            .insight_tags
            .keys()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sleuth_domain::{Outcome, Priority};

    fn told(investigation_id: i64) -> InvestigationToTell {
        InvestigationToTell {
            investigation_id,
            outcome: Outcome::BreachedSuspicious,
            priority: Priority::Urgent,
            title: "Encoded PowerShell on WKS-0231".into(),
            tenant_id: None,
            tenant_union: "default".into(),
            source: "crowdstrike".into(),
            entities: Vec::new(),
            conclusion: "Suspicious.".into(),
            mitre_tactic: None,
            insight_tags: Vec::new(),
        }
    }

    #[test]
    fn the_oldest_conclusions_are_let_go_past_the_bound() {
        let recent = RecentConclusions::default();
        let at = chrono::Utc::now();
        recent.set_wanted(true);
        for id in 1..=i64::try_from(KEPT).unwrap() + 1 {
            recent.remember(at, told(id));
        }
        assert_eq!(recent.take(1, at), None);
        assert_eq!(recent.take(2, at), Some(told(2)));
        recent.set_wanted(false);
        assert_eq!(recent.take(3, at), None, "let go when no longer wanted");
        recent.remember(at, told(4));
        assert_eq!(recent.take(4, at), None, "kept only while wanted");
    }
}
