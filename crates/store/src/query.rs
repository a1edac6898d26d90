//! The investigation list query: filters, sort and page, already parsed and validated.

use sleuth_domain::{Canceled, InvestigationStatus, Priority, Timestamp};

use crate::TenantScope;

/// An inclusive time range; either end may be open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeRange {
    pub from: Option<Timestamp>,
    pub until: Option<Timestamp>,
}

impl TimeRange {
    pub fn is_open(&self) -> bool {
        self.from.is_none() && self.until.is_none()
    }
}

/// Why an investigation stopped, as `stopped_reasons` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopReason {
    Canceled(Canceled),
    /// Stopped by a failure rather than a guard or a person.
    Error,
}

impl StopReason {
    pub const SPELLINGS: &'static [&'static str] = &["CANCEL_MANUAL", "CANCEL_THRESHOLD", "ERROR"];

    pub fn parse(value: &str) -> Option<StopReason> {
        match value {
            "ERROR" => Some(StopReason::Error),
            other => Canceled::parse(other).ok().map(StopReason::Canceled),
        }
    }
}

/// What to order the list by. Every order ends with the investigation id, so it is total.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    /// The alert's create_time.
    #[default]
    AlertCreate,
    AlertStart,
    InvestigationCreate,
    /// The investigation's generated_time.
    InvestigationComplete,
    InvestigationUpdate,
    /// urgent > notable > informational > none.
    Priority,
}

impl SortKey {
    pub const SPELLINGS: &'static [&'static str] = &[
        "alert_create",
        "alert_start",
        "inv_create",
        "inv_complete",
        "inv_update",
        "priority",
    ];

    pub fn parse(value: &str) -> Option<SortKey> {
        Some(match value {
            "alert_create" => SortKey::AlertCreate,
            "alert_start" => SortKey::AlertStart,
            "inv_create" => SortKey::InvestigationCreate,
            "inv_complete" => SortKey::InvestigationComplete,
            "inv_update" => SortKey::InvestigationUpdate,
            "priority" => SortKey::Priority,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortDirection {
    Ascending,
    #[default]
    Descending,
}

/// A priority filter value: one of the priorities, or `none` (no priority yet).
pub type PriorityFilter = Option<Priority>;

#[derive(Debug, Clone, Default)]
pub struct InvestigationQuery {
    /// Empty means the default: success only.
    pub states: Vec<InvestigationStatus>,
    pub alert_create: TimeRange,
    pub alert_start: TimeRange,
    pub investigation_complete: TimeRange,
    pub feedback_updated: TimeRange,
    /// Matches the tenant union's display name or the alert's own tenant label or id.
    pub alert_tenants: Vec<String>,
    pub alert_types: Vec<String>,
    pub direct_source_labels: Vec<String>,
    pub insight_tag_names: Vec<String>,
    pub priorities: Vec<PriorityFilter>,
    pub stopped_reasons: Vec<StopReason>,
    /// Free text; every word must appear (in any of the searched fields).
    pub search: Option<String>,
    pub tenant_id: Option<String>,
    pub tenant_integration_key: Option<String>,
    /// The caller's tenant unions: nothing outside them is listed or counted.
    pub scope: TenantScope,
    pub sort: SortKey,
    pub direction: SortDirection,
    pub limit: u32,
    pub offset: u64,
}

impl InvestigationQuery {
    pub fn effective_states(&self) -> Vec<InvestigationStatus> {
        if self.states.is_empty() {
            vec![InvestigationStatus::Success]
        } else {
            self.states.clone()
        }
    }
}

/// The words of free text as a search index sees them: runs of letters, digits and `_`,
/// lower-cased. Both backends index documents and queries through this one function, so
/// they agree on what a word is, and hostile input (quotes, operators, SQL) is only data.
pub fn search_tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty())
        .map(|word| word.chars().take(64).collect::<String>().to_lowercase())
}

/// A search request as phrases: each whitespace-separated word of the query becomes the
/// sequence of tokens it contains ("203.0.113.5" -> 203 0 113 5, adjacent), and every
/// phrase must match. At most 16 phrases are kept.
pub fn search_phrases(query: &str) -> Vec<Vec<String>> {
    query
        .split_whitespace()
        .map(|word| search_tokens(word).collect::<Vec<_>>())
        .filter(|phrase| !phrase.is_empty())
        .take(16)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_phrases_keep_words_and_drop_operators() {
        let phrases = search_phrases("\"mimikatz\" OR 1=1; DROP TABLE--");
        assert_eq!(
            phrases,
            vec![
                vec!["mimikatz"],
                vec!["or"],
                vec!["1", "1"],
                vec!["drop"],
                vec!["table"]
            ]
        );
        assert_eq!(
            search_phrases("203.0.113.5"),
            vec![vec!["203", "0", "113", "5"]]
        );
        assert_eq!(
            search_phrases("Zürich Ünïcödé"),
            vec![vec!["zürich"], vec!["ünïcödé"]]
        );
        assert!(search_phrases("  ***  ").is_empty());
    }
}
