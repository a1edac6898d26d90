//! Threat-intelligence feeds -> normalised [`Indicator`]s: CSV (abuse.ch exports and
//! hand-made lists), STIX 2.1 bundles and MISP events. Values are normalised by the same
//! rules as alert entities, so a lookup is a string comparison. Pure: no I/O (the caller
//! reads the file and passes its text), no clock (`now` is passed in), and no input
//! makes it panic: a bad row is skipped and counted, only an unusable document is an error.
#![forbid(unsafe_code)]

mod categorize;
mod csv_feed;
mod indicator;
mod loose;
mod misp;
mod stix;
mod stix_pattern;

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::{BuildHasher, RandomState};

use sleuth_domain::Timestamp;

pub use categorize::{CATEGORIES, categorize};
pub use indicator::{Indicator, IndicatorKind, Rejected, network_contains, normalize_indicator};

/// The confidence of an indicator whose feed says none (the context file's default).
pub const DEFAULT_CONFIDENCE: u8 = 80;

/// How many problems a report keeps: enough to see what is wrong with a feed, few enough
/// that a broken million-row file does not fill the log.
pub const MAX_PROBLEMS: usize = 20;

/// The most indicators one feed yields; the rest are counted as skipped. A hostile or
/// mistaken file cannot make the context take unbounded memory.
pub const MAX_INDICATORS: usize = 1_000_000;

/// The longest description kept, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 500;

/// The formats a feed may be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FeedFormat {
    Csv,
    Stix,
    Misp,
}

impl FeedFormat {
    /// The format the context file names (`csv`, `stix`, `misp`; any case).
    pub fn parse(text: &str) -> Result<FeedFormat, FeedError> {
        match text.trim().to_ascii_lowercase().as_str() {
            "csv" => Ok(FeedFormat::Csv),
            "stix" => Ok(FeedFormat::Stix),
            "misp" => Ok(FeedFormat::Misp),
            _ => Err(FeedError::UnknownFormat(indicator::shorten(text))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FeedFormat::Csv => "csv",
            FeedFormat::Stix => "stix",
            FeedFormat::Misp => "misp",
        }
    }
}

/// Why a whole feed could not be read. Single bad entries are not errors: they are
/// counted in [`FeedReport::skipped`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeedError {
    #[error("unknown feed format {0:?}; the formats are csv, stix and misp")]
    UnknownFormat(String),
    #[error(
        "the CSV has no header row naming an indicator column (value, indicator, ioc, url, ioc_value or dst_ip)"
    )]
    NoIndicatorColumn,
    #[error("not valid JSON: {0}")]
    InvalidJson(String),
    #[error("not a STIX 2.1 bundle: {0}")]
    NotStixBundle(&'static str),
    #[error("not a MISP event: {0}")]
    NotMispEvent(&'static str),
}

/// What a feed yielded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeedReport {
    /// Each (kind, value) once, the first occurrence kept, in feed order.
    pub indicators: Vec<Indicator>,
    /// Entries that looked like indicators but were not kept: a bad value, an unknown
    /// type, an unsupported STIX pattern, a revoked or expired indicator, a deleted
    /// MISP attribute.
    pub skipped: usize,
    /// Entries of kinds Sleuth does not match on and never meant to load (MISP
    /// attributes such as `filename`, `regkey` or `link`). Not a sign of a broken feed.
    pub ignored: usize,
    /// Entries that repeated an indicator already kept.
    pub duplicates: usize,
    /// The first [`MAX_PROBLEMS`] reasons an entry was skipped or one of its fields was
    /// not usable, each naming where it was ("line 12: ...", "indicator--...: ...").
    pub problems: Vec<String>,
}

/// Reads a feed with no notion of the current time: STIX indicators are kept whatever
/// their `valid_until`.
pub fn read_feed(
    format: FeedFormat,
    text: &str,
    source: Option<&str>,
) -> Result<FeedReport, FeedError> {
    read_feed_at(format, text, source, None)
}

/// Reads a feed. `source` names the feed on every indicator; with `now`, STIX
/// indicators whose `valid_until` has passed are skipped.
pub fn read_feed_at(
    format: FeedFormat,
    text: &str,
    source: Option<&str>,
    now: Option<Timestamp>,
) -> Result<FeedReport, FeedError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut collector = Collector::new(source);
    match format {
        FeedFormat::Csv => csv_feed::read(text, &mut collector)?,
        FeedFormat::Stix => stix::read(text, now, &mut collector)?,
        FeedFormat::Misp => misp::read(text, &mut collector)?,
    }
    Ok(collector.report)
}

/// What every reader hands its findings to: it de-duplicates, caps, and keeps the
/// first problems.
pub(crate) struct Collector {
    report: FeedReport,
    /// Where the first indicator of each (kind, hash of value) is in `report`: duplicates
    /// are found without a second copy of every value. The hasher is keyed per feed, so a
    /// feed cannot be written to make values collide.
    seen: HashMap<(IndicatorKind, u64), usize>,
    hasher: RandomState,
    source: Option<String>,
}

/// The fields of an indicator other than its kind and value, shared by every value one
/// entry yields.
pub(crate) struct Details<'a> {
    pub category: Option<&'static str>,
    pub description: Option<&'a str>,
    pub confidence: u8,
    pub valid_until: Option<Timestamp>,
}

impl Collector {
    fn new(source: Option<&str>) -> Collector {
        Collector {
            report: FeedReport::default(),
            seen: HashMap::new(),
            hasher: RandomState::new(),
            source: source.and_then(clean_text),
        }
    }

    /// How many indicators are kept so far.
    pub(crate) fn kept(&self) -> usize {
        self.report.indicators.len()
    }

    /// Gives the indicators kept at `positions` a category learnt after they were read.
    pub(crate) fn recategorize(&mut self, positions: std::ops::Range<usize>, category: &str) {
        for indicator in self
            .report
            .indicators
            .get_mut(positions)
            .into_iter()
            .flatten()
        {
            indicator.category = Some(category.to_string());
        }
    }

    pub(crate) fn keep(&mut self, kind: IndicatorKind, value: String, details: &Details<'_>) {
        if self.report.indicators.len() >= MAX_INDICATORS {
            self.skip(|| format!("more than {MAX_INDICATORS} indicators; the rest are skipped"));
            return;
        }
        let indicators = &self.report.indicators;
        match self
            .seen
            .entry((kind, self.hasher.hash_one(value.as_str())))
        {
            Entry::Vacant(entry) => {
                entry.insert(indicators.len());
            }
            Entry::Occupied(entry) => {
                let same =
                    |indicator: &Indicator| indicator.kind == kind && indicator.value == value;
                // Two different values with one 64-bit hash are possible, if unlikely: then
                // the later one is found by a scan instead.
                let repeated =
                    indicators.get(*entry.get()).is_some_and(same) || indicators.iter().any(same);
                if repeated {
                    self.report.duplicates += 1;
                    return;
                }
            }
        }
        self.report.indicators.push(Indicator {
            kind,
            value,
            category: details.category.map(str::to_string),
            description: details.description.and_then(clean_text),
            source: self.source.clone(),
            confidence: details.confidence.min(100),
            valid_until: details.valid_until,
        });
    }

    /// Counts an entry as skipped; `reason` is only formatted while problems are kept.
    pub(crate) fn skip(&mut self, reason: impl FnOnce() -> String) {
        self.report.skipped += 1;
        self.problem(reason);
    }

    /// Counts an entry of a kind Sleuth does not match on.
    pub(crate) fn ignore(&mut self) {
        self.report.ignored += 1;
    }

    /// Notes a problem with an entry that was still kept (a confidence out of range).
    pub(crate) fn problem(&mut self, reason: impl FnOnce() -> String) {
        if self.report.problems.len() < MAX_PROBLEMS {
            let reason = reason();
            // Problems go to logs: one line each, bounded.
            let reason: String = reason.chars().take(300).collect();
            self.report
                .problems
                .push(sleuth_normalize::text::one_line(&reason));
        }
    }
}

/// A free-text field as kept: trimmed, control characters as spaces, at most
/// [`MAX_DESCRIPTION_CHARS`], and `None` when it says nothing.
pub(crate) fn clean_text(text: &str) -> Option<String> {
    let text = text.trim();
    if sleuth_normalize::text::is_placeholder(text) {
        return None;
    }
    let kept: String = text.chars().take(MAX_DESCRIPTION_CHARS).collect();
    let mut cleaned = sleuth_normalize::text::one_line(&kept);
    if text.chars().nth(MAX_DESCRIPTION_CHARS).is_some() {
        cleaned.push('…');
    }
    Some(cleaned)
}

/// A confidence as feeds write it: 0..100, or a fraction 0..1 when it has a decimal
/// point ("0.9" is 90; "1" is 1). `None` when it is not one.
pub(crate) fn parse_confidence(text: &str) -> Option<u8> {
    let text = text.trim().trim_end_matches('%');
    let number: f64 = text.parse().ok()?;
    if !number.is_finite() || !(0.0..=100.0).contains(&number) {
        return None;
    }
    let percent = if text.contains('.') && number <= 1.0 {
        number * 100.0
    } else {
        number
    };
    // In range by the check above, so the cast neither truncates nor wraps.
    Some(percent.round() as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_named_as_the_context_file_names_them() {
        assert_eq!(FeedFormat::parse("csv"), Ok(FeedFormat::Csv));
        assert!(matches!(
            FeedFormat::parse("openioc"),
            Err(FeedError::UnknownFormat(_))
        ));
        assert_eq!(
            FeedFormat::parse(FeedFormat::Csv.as_str()),
            Ok(FeedFormat::Csv)
        );
    }

    #[test]
    fn confidences_are_read_as_percentages_or_fractions() {
        for (text, expected) in [
            ("90", Some(90)),
            ("0", Some(0)),
            ("100", Some(100)),
            ("0.9", Some(90)),
            ("1.0", Some(100)),
            ("1", Some(1)),
            ("75.4", Some(75)),
            ("85%", Some(85)),
            ("101", None),
            ("-5", None),
            ("NaN", None),
            ("inf", None),
            ("high", None),
            ("", None),
        ] {
            assert_eq!(parse_confidence(text), expected, "{text:?}");
        }
    }

    #[test]
    fn free_text_is_trimmed_cleaned_and_bounded() {
        assert_eq!(clean_text("  Emotet C2\n"), Some("Emotet C2".into()));
        assert_eq!(clean_text("a\u{0}b"), Some("a b".into()));
        assert_eq!(clean_text("N/A"), None);
        let long = clean_text(&"é".repeat(2000)).unwrap();
        assert_eq!(long.chars().count(), MAX_DESCRIPTION_CHARS + 1);
    }

    #[test]
    fn the_collector_keeps_each_indicator_once_and_caps_problems() {
        let mut collector = Collector::new(Some("Unit test feed"));
        let details = Details {
            category: Some("c2"),
            description: Some("first"),
            confidence: 150,
            valid_until: None,
        };
        collector.keep(IndicatorKind::Ip, "203.0.113.5".into(), &details);
        collector.keep(IndicatorKind::Ip, "203.0.113.5".into(), &details);
        collector.keep(IndicatorKind::Domain, "203.0.113.5".into(), &details);
        for index in 0..100 {
            collector.skip(|| format!("bad row {index}"));
        }
        let report = collector.report;
        assert_eq!(report.indicators.len(), 2);
        assert_eq!(report.duplicates, 1);
        assert_eq!(report.skipped, 100);
        assert_eq!(report.problems.len(), MAX_PROBLEMS);
        assert_eq!(report.indicators[0].confidence, 100);
        assert_eq!(
            report.indicators[0].source.as_deref(),
            Some("Unit test feed")
        );
    }
}
