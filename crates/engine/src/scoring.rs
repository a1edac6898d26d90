//! Measures investigations against labels: what a team (or the held-out corpus) says each
//! alert should conclude, compared with what Sleuth concluded. The figures are the ones the
//! product is judged by: outcome agreement with its confusion matrix, the dangerous
//! disagreements (a breach or a suspicion called false), priority at or above the labelled
//! floor, the ATT&CK tactic, entity recall, and every disagreement with the evidence that
//! decided it. Pure: the caller reads the files and runs the investigations.
//!
//! Used by `sleuth eval`, the engine's corpus tests and the engine bench.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sleuth_domain::{Entity, EntityKind, InvestigationResult, Outcome, ParsedAlert, Priority};

/// What a human says an alert should conclude. Only `outcome` is required.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Label {
    pub outcome: Outcome,
    pub priority_at_least: Option<Priority>,
    /// `None`: the tactic is not labelled; `Some(None)`: labelled as naming no tactic.
    pub mitre_tactic: Option<Option<String>>,
    /// The behaviour the alert asserts, in the labeller's words.
    pub claim: Option<String>,
    pub entities: Vec<Entity>,
    pub title: Option<String>,
    /// RFC 3339, compared as an instant.
    pub create_time: Option<String>,
}

impl Label {
    /// Reads the `expect` object of a corpus case (corpus/README.md).
    pub fn from_expect(expect: &Value) -> Result<Label, String> {
        let outcome = expect
            .get("outcome")
            .and_then(Value::as_str)
            .ok_or("expect.outcome is missing")?;
        let mut label = Label::new(parse_outcome(outcome)?);
        if let Some(floor) = expect.get("priority_at_least").and_then(Value::as_str) {
            label.priority_at_least = Some(parse_priority(floor)?);
        }
        if let Some(tactic) = expect.get("mitre_tactic") {
            label.mitre_tactic = Some(tactic.as_str().map(str::to_string));
        }
        label.claim = expect
            .get("claim")
            .and_then(Value::as_str)
            .map(str::to_string);
        label.title = expect
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_string);
        label.create_time = expect
            .get("create_time")
            .and_then(Value::as_str)
            .map(str::to_string);
        for entity in expect
            .get("entities")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let kind = entity
                .get("type")
                .and_then(Value::as_str)
                .and_then(EntityKind::parse)
                .ok_or_else(|| format!("expect.entities: {entity} has no known type"))?;
            let value = entity
                .get("value")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("expect.entities: {entity} has no value"))?;
            label.entities.push(Entity::new(kind, value));
        }
        Ok(label)
    }

    pub fn new(outcome: Outcome) -> Label {
        Label {
            outcome,
            priority_at_least: None,
            mitre_tactic: None,
            claim: None,
            entities: Vec::new(),
            title: None,
            create_time: None,
        }
    }
}

/// A team's label file (`labels.toml`, docs/eval.md): one `[[alert]]` table per alert.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelFile {
    #[serde(default)]
    alert: Vec<LabelEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelEntry {
    /// The alert's file, relative to the label file.
    file: String,
    outcome: String,
    priority_at_least: Option<String>,
    mitre_tactic: Option<String>,
    /// What the alert claims, or why the team concluded what it did.
    note: Option<String>,
}

/// Reads a label file into (file, label) pairs; every bad entry is named at once.
pub fn read_label_file(text: &str) -> Result<Vec<(String, Label)>, String> {
    let file: LabelFile = toml::from_str(text).map_err(|error| error.to_string())?;
    let mut labels = Vec::new();
    let mut problems = Vec::new();
    for (index, entry) in file.alert.into_iter().enumerate() {
        let outcome = parse_outcome(&entry.outcome);
        let floor = entry
            .priority_at_least
            .as_deref()
            .map(parse_priority)
            .transpose();
        match (outcome, floor) {
            (Ok(outcome), Ok(floor)) => {
                let mut label = Label::new(outcome);
                label.priority_at_least = floor;
                label.mitre_tactic = entry.mitre_tactic.map(|tactic| {
                    let tactic = tactic.trim().to_string();
                    (!tactic.is_empty() && !tactic.eq_ignore_ascii_case("none")).then_some(tactic)
                });
                label.claim = entry.note;
                labels.push((entry.file, label));
            }
            (Err(problem), _) | (_, Err(problem)) => {
                problems.push(format!("alert {} ({}): {problem}", index + 1, entry.file))
            }
        }
    }
    if problems.is_empty() {
        Ok(labels)
    } else {
        Err(problems.join("; "))
    }
}

/// An outcome as a label file writes it: the API's spelling, or the short words
/// `confirmed`, `suspicious`, `false_alert`, `incomplete`.
pub fn parse_outcome(text: &str) -> Result<Outcome, String> {
    let short = match text.trim().to_ascii_lowercase().as_str() {
        "confirmed" | "breached_confirmed" => Some(Outcome::BreachedConfirmed),
        "suspicious" | "breached_suspicious" => Some(Outcome::BreachedSuspicious),
        "false_alert" | "false" | "benign" => Some(Outcome::FalseAlert),
        "incomplete" => Some(Outcome::Incomplete),
        _ => None,
    };
    short.map_or_else(
        || {
            Outcome::parse(text.trim()).map_err(|_| {
                format!(
                    "outcome '{text}' is not one of confirmed, suspicious, false_alert, incomplete \
                     (or COMPLETED_BREACHED_CONFIRMED, COMPLETED_BREACHED_SUSPICIOUS, COMPLETED_FALSE_ALERT, INCOMPLETE)"
                )
            })
        },
        Ok,
    )
}

fn parse_priority(text: &str) -> Result<Priority, String> {
    Priority::parse(text.trim()).map_err(|error| error.to_string())
}

/// One alert's label and what Sleuth made of it.
#[derive(Debug, Clone, Serialize)]
pub struct Scored {
    /// The file (or case) name, relative to what was evaluated.
    pub name: String,
    /// The source group (the case's directory, or the detected format).
    pub source: String,
    pub label: Label,
    pub outcome: Outcome,
    pub priority: Priority,
    pub mitre_tactic: Option<String>,
    /// The claim the investigation addressed, as it states it.
    pub claim: Option<String>,
    /// The findings that decided the verdict, most decisive first, with their evidence.
    pub decided_by: Vec<Value>,
    pub title: String,
    pub create_time: String,
    /// The labelled entities the parser did not find.
    pub missing_entities: Vec<Entity>,
}

impl Scored {
    /// Compares one investigation with its label.
    pub fn new(
        name: impl Into<String>,
        source: impl Into<String>,
        label: Label,
        alert: &ParsedAlert,
        result: &InvestigationResult,
    ) -> Scored {
        let missing_entities = label
            .entities
            .iter()
            .filter(|wanted| !alert.entities.contains(wanted))
            .cloned()
            .collect();
        Scored {
            name: name.into(),
            source: source.into(),
            label,
            outcome: result.outcome,
            priority: result.priority,
            mitre_tactic: result.mitre_tactic.clone(),
            claim: result
                .key_findings
                .get("claim")
                .and_then(|claim| claim.get("statement"))
                .and_then(Value::as_str)
                .map(str::to_string),
            decided_by: decided_by(result),
            title: alert.title.clone(),
            create_time: alert
                .create_time
                .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
            missing_entities,
        }
    }

    pub fn outcome_right(&self) -> bool {
        self.outcome == self.label.outcome
    }

    /// A breach or a suspicion the investigation closed as a false alert: the worst error.
    pub fn wrongly_false(&self) -> bool {
        self.outcome == Outcome::FalseAlert
            && matches!(
                self.label.outcome,
                Outcome::BreachedConfirmed | Outcome::BreachedSuspicious
            )
    }

    /// `None` when no floor is labelled.
    pub fn priority_right(&self) -> Option<bool> {
        self.label
            .priority_at_least
            .map(|floor| self.priority >= floor)
    }

    /// `None` when no tactic is labelled.
    pub fn tactic_right(&self) -> Option<bool> {
        self.label
            .mitre_tactic
            .as_ref()
            .map(|wanted| wanted.as_deref() == self.mitre_tactic.as_deref())
    }

    pub fn title_right(&self) -> Option<bool> {
        self.label
            .title
            .as_ref()
            .map(|wanted| *wanted == self.title)
    }

    pub fn create_time_right(&self) -> Option<bool> {
        self.label.create_time.as_ref().map(|wanted| {
            chrono::DateTime::parse_from_rfc3339(wanted)
                .ok()
                .zip(chrono::DateTime::parse_from_rfc3339(&self.create_time).ok())
                .is_some_and(|(wanted, found)| wanted == found)
        })
    }

    /// What differs from the label, in words; empty when nothing does.
    pub fn disagreements(&self) -> Vec<String> {
        let mut found = Vec::new();
        if !self.outcome_right() {
            found.push(format!(
                "outcome {} (labelled {})",
                self.outcome, self.label.outcome
            ));
        }
        if self.priority_right() == Some(false) {
            found.push(format!(
                "priority {} (labelled at least {})",
                self.priority,
                self.label
                    .priority_at_least
                    .map_or("-", |floor| floor.as_str())
            ));
        }
        if self.tactic_right() == Some(false) {
            found.push(format!(
                "tactic {} (labelled {})",
                self.mitre_tactic.as_deref().unwrap_or("none"),
                self.label
                    .mitre_tactic
                    .as_ref()
                    .and_then(Option::as_deref)
                    .unwrap_or("none")
            ));
        }
        if !self.missing_entities.is_empty() {
            found.push(format!(
                "entities not found: {}",
                self.missing_entities
                    .iter()
                    .map(|entity| format!("{} {}", entity.kind, entity.value))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if self.title_right() == Some(false) {
            found.push(format!(
                "title '{}' (labelled '{}')",
                self.title,
                self.label.title.as_deref().unwrap_or_default()
            ));
        }
        if self.create_time_right() == Some(false) {
            found.push(format!(
                "create_time {} (labelled {})",
                self.create_time,
                self.label.create_time.as_deref().unwrap_or_default()
            ));
        }
        found
    }
}

/// The decisive findings of a result: those whose outcome matches the verdict's, in rank
/// order (the engine ranks findings most telling first), at most three, with their evidence.
fn decided_by(result: &InvestigationResult) -> Vec<Value> {
    let decisive: Vec<&str> = result
        .key_findings
        .get("decisive_findings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    result
        .findings
        .iter()
        .filter(|finding| decisive.contains(&finding.headline.as_str()))
        .take(3)
        .map(|finding| {
            serde_json::json!({
                "headline": finding.headline,
                "finding": finding.finding,
                "evidence": finding.evidences.iter().map(|evidence| serde_json::json!({
                    "type": evidence.evidence_type,
                    "data": evidence.data,
                })).collect::<Vec<_>>(),
            })
        })
        .collect()
}

/// A count out of a total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    pub right: usize,
    pub of: usize,
}

impl Tally {
    fn add(&mut self, right: Option<bool>) {
        if let Some(right) = right {
            self.of += 1;
            if right {
                self.right += 1;
            }
        }
    }

    /// The share in percent, or `None` when nothing was counted.
    pub fn percent(self) -> Option<f64> {
        #[allow(clippy::cast_precision_loss)] // Counts of alerts, far below 2^52.
        (self.of > 0).then(|| 100.0 * self.right as f64 / self.of as f64)
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.percent() {
            Some(percent) => write!(formatter, "{}/{} ({percent:.0} %)", self.right, self.of),
            None => formatter.write_str("-"),
        }
    }
}

/// The figures of one group of alerts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Figures {
    pub outcome: Tally,
    /// Breaches and suspicions closed as false alerts (the count, of those labelled so).
    pub breach_or_suspicion_called_false: Tally,
    pub priority_floor: Tally,
    pub tactic: Tally,
    pub entity_recall: Tally,
    pub title: Tally,
    pub create_time: Tally,
}

impl Figures {
    fn add(&mut self, scored: &Scored) {
        self.outcome.add(Some(scored.outcome_right()));
        if matches!(
            scored.label.outcome,
            Outcome::BreachedConfirmed | Outcome::BreachedSuspicious
        ) {
            self.breach_or_suspicion_called_false
                .add(Some(scored.wrongly_false()));
        }
        self.priority_floor.add(scored.priority_right());
        self.tactic.add(scored.tactic_right());
        self.entity_recall.of += scored.label.entities.len();
        self.entity_recall.right += scored.label.entities.len() - scored.missing_entities.len();
        self.title.add(scored.title_right());
        self.create_time.add(scored.create_time_right());
    }
}

/// Everything one evaluation measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub figures: Figures,
    pub per_source: BTreeMap<String, Figures>,
    /// Labelled outcome → concluded outcome → count.
    pub confusion: BTreeMap<String, BTreeMap<String, usize>>,
    pub cases: Vec<Scored>,
}

impl Report {
    pub fn new(mut cases: Vec<Scored>) -> Report {
        cases.sort_by(|left, right| left.name.cmp(&right.name));
        let mut figures = Figures::default();
        let mut per_source: BTreeMap<String, Figures> = BTreeMap::new();
        let mut confusion: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
        for scored in &cases {
            figures.add(scored);
            per_source
                .entry(scored.source.clone())
                .or_default()
                .add(scored);
            *confusion
                .entry(scored.label.outcome.to_string())
                .or_default()
                .entry(scored.outcome.to_string())
                .or_default() += 1;
        }
        Report {
            figures,
            per_source,
            confusion,
            cases,
        }
    }

    /// The report for people: the figures, the confusion matrix, the table per source and
    /// every disagreement with the evidence that decided it.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        let figures = &self.figures;
        text.push_str(&format!("{} alerts evaluated\n\n", self.cases.len()));
        for (name, tally) in [
            ("outcome right", figures.outcome),
            (
                "breach or suspicion called false",
                figures.breach_or_suspicion_called_false,
            ),
            ("priority at or above the floor", figures.priority_floor),
            ("MITRE tactic", figures.tactic),
            ("entity recall", figures.entity_recall),
            ("title", figures.title),
            ("creation time", figures.create_time),
        ] {
            text.push_str(&format!("  {name:<34} {tally}\n"));
        }
        text.push_str("\nconfusion matrix (rows: labelled, columns: concluded)\n");
        let columns = [
            Outcome::BreachedConfirmed,
            Outcome::BreachedSuspicious,
            Outcome::FalseAlert,
            Outcome::Incomplete,
        ];
        text.push_str(&format!("  {:<14}", ""));
        for column in columns {
            text.push_str(&format!("{:>12}", short_outcome(column)));
        }
        text.push('\n');
        for row in columns {
            let counts = self.confusion.get(row.as_str());
            text.push_str(&format!("  {:<14}", short_outcome(row)));
            for column in columns {
                let count = counts
                    .and_then(|counts| counts.get(column.as_str()))
                    .copied()
                    .unwrap_or(0);
                text.push_str(&format!("{count:>12}"));
            }
            text.push('\n');
        }
        text.push_str(&format!(
            "\n  {:<30} {:>9} {:>9} {:>9} {:>9}\n",
            "source", "outcome", "priority", "tactic", "entities"
        ));
        for (source, figures) in &self.per_source {
            text.push_str(&format!(
                "  {source:<30} {:>9} {:>9} {:>9} {:>9}\n",
                short(figures.outcome),
                short(figures.priority_floor),
                short(figures.tactic),
                short(figures.entity_recall)
            ));
        }
        let disagreeing: Vec<&Scored> = self
            .cases
            .iter()
            .filter(|scored| !scored.disagreements().is_empty())
            .collect();
        text.push_str(&format!("\n{} disagreement(s)\n", disagreeing.len()));
        for scored in disagreeing {
            text.push_str(&format!(
                "\n- {}: {}\n",
                scored.name,
                scored.disagreements().join("; ")
            ));
            if let Some(claim) = &scored.label.claim {
                text.push_str(&format!("    labelled claim: {claim}\n"));
            }
            if let Some(claim) = &scored.claim {
                text.push_str(&format!("    claim addressed: {claim}\n"));
            }
            for finding in &scored.decided_by {
                text.push_str(&format!(
                    "    decided by: {}\n",
                    finding["headline"].as_str().unwrap_or_default()
                ));
                for evidence in finding["evidence"].as_array().into_iter().flatten() {
                    text.push_str(&format!(
                        "      evidence {}: {}\n",
                        evidence["type"].as_str().unwrap_or_default(),
                        crate::truncate(&evidence["data"].to_string(), 300)
                    ));
                }
            }
        }
        text
    }
}

fn short(tally: Tally) -> String {
    if tally.of == 0 {
        "-".to_string()
    } else {
        format!("{}/{}", tally.right, tally.of)
    }
}

fn short_outcome(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::BreachedConfirmed => "confirmed",
        Outcome::BreachedSuspicious => "suspicious",
        Outcome::FalseAlert => "false_alert",
        Outcome::Incomplete => "incomplete",
        Outcome::Ignored => "ignored",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_read_the_corpus_expect_object_and_short_outcome_words() {
        let label = Label::from_expect(&json!({
            "outcome": "COMPLETED_FALSE_ALERT",
            "priority_at_least": "informational",
            "mitre_tactic": null,
            "entities": [{"type": "ip", "value": "10.0.0.1"}],
        }))
        .unwrap();
        assert_eq!(label.outcome, Outcome::FalseAlert);
        assert_eq!(label.mitre_tactic, Some(None));
        assert_eq!(
            label.entities,
            vec![Entity::new(EntityKind::Ip, "10.0.0.1")]
        );
        assert_eq!(parse_outcome("suspicious"), Ok(Outcome::BreachedSuspicious));
        assert!(
            parse_outcome("maybe")
                .unwrap_err()
                .contains("confirmed, suspicious")
        );
        assert!(Label::from_expect(&json!({"outcome": "x"})).is_err());
        assert!(Label::from_expect(&json!({})).is_err());
    }

    #[test]
    fn a_label_file_names_every_bad_entry() {
        let labels = read_label_file(
            "[[alert]]\nfile = \"a.json\"\noutcome = \"false_alert\"\nmitre_tactic = \"none\"\n\
             [[alert]]\nfile = \"b.json\"\noutcome = \"confirmed\"\npriority_at_least = \"urgent\"\n",
        )
        .unwrap();
        assert_eq!(labels.len(), 2);
        assert_eq!(labels[0].1.mitre_tactic, Some(None));
        assert_eq!(labels[1].1.priority_at_least, Some(Priority::Urgent));
        let error = read_label_file(
            "[[alert]]\nfile = \"a.json\"\noutcome = \"nope\"\n[[alert]]\nfile = \"b.json\"\noutcome = \"confirmed\"\npriority_at_least = \"soon\"\n",
        )
        .unwrap_err();
        assert!(
            error.contains("a.json") && error.contains("b.json"),
            "{error}"
        );
        assert!(
            read_label_file(
                "[[alert]]\nfile = \"a.json\"\noutcome = \"confirmed\"\nseverity = 1\n"
            )
            .is_err()
        );
    }

    #[test]
    fn tallies_print_their_share_and_nothing_when_empty() {
        assert_eq!(Tally { right: 1, of: 4 }.to_string(), "1/4 (25 %)");
        assert_eq!(Tally::default().to_string(), "-");
    }
}
