//! The working state of one investigation: the alert, what the context knows about each of
//! its entities, its history, and one lower-cased text to search for behaviours in. Built
//! once, read by every playbook.

use sleuth_domain::{
    ActionTaken, AlertCategory, Entity, EntityKind, History, ParsedAlert, Signals,
};

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use crate::context::{Context, Knowledge};
use crate::vocabulary::{self, Words};

/// Every registered word (vocabulary.rs), as one Aho-Corasick automaton: building a case
/// finds them all in one pass over the alert's text, so asking whether it mentions a word
/// is a bit test rather than another scan. Pattern `i` of the automaton is vocabulary word
/// `i` (a word in two lists is two patterns, each reported).
static AUTOMATON: LazyLock<AhoCorasick> = LazyLock::new(|| {
    let words = vocabulary::ALL.iter().flat_map(|list| list.iter().copied());
    // Overlapping matches: "lsass" inside "lsass.exe" and "lsass.exe" both count.
    AhoCorasick::builder()
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .build(words)
        .expect("the vocabulary is a fixed list of short literal words")
});

/// One bit per vocabulary word: set when the word occurs in the case's text.
type Mentioned = [u64; vocabulary::COUNT.div_ceil(64)];

pub struct Case<'a> {
    pub alert: &'a ParsedAlert,
    pub signals: &'a Signals,
    pub history: &'a History,
    pub context: &'a Context,
    /// Each entity of the alert with what the context knows about it, in alert order.
    pub known: Vec<(&'a Entity, Knowledge<'a>)>,
    /// Title, alert type, description, tags, process names and command lines, email
    /// subject and signature, lower-cased: where playbooks look for behaviours.
    pub text: String,
    /// The people (user entities, and emails of known identities) and hosts the alert
    /// names, in alert order, each once: asked for by most playbooks.
    people: Vec<&'a str>,
    hosts: Vec<&'a str>,
    /// Which vocabulary words occur in `text`.
    mentioned: Mentioned,
    /// Where each vocabulary word occurs in `text`: (word index, start), sorted.
    hits: Vec<(u32, u32)>,
}

impl<'a> Case<'a> {
    pub fn new(alert: &'a ParsedAlert, history: &'a History, context: &'a Context) -> Case<'a> {
        let known: Vec<(&Entity, Knowledge<'a>)> = alert
            .entities
            .iter()
            .map(|entity| (entity, context.about(entity)))
            .collect();
        let mut people: Vec<&str> = Vec::new();
        for (entity, knowledge) in &known {
            let is_person = entity.kind == EntityKind::User
                || (entity.kind == EntityKind::Email && knowledge.identity.is_some());
            if is_person
                && !people.contains(&entity.value.as_str())
                && !alert.signals.handlers.contains(&entity.value)
            {
                people.push(&entity.value);
            }
        }
        let text = searchable_text(alert);
        let mut mentioned: Mentioned = [0; vocabulary::COUNT.div_ceil(64)];
        let mut hits: Vec<(u32, u32)> = AUTOMATON
            .find_overlapping_iter(&text)
            .map(|found| {
                let index = found.pattern().as_usize();
                mentioned[index / 64] |= 1 << (index % 64);
                (
                    found.pattern().as_u32(),
                    u32::try_from(found.start()).unwrap_or(u32::MAX),
                )
            })
            .collect();
        hits.sort_unstable();
        Case {
            alert,
            signals: &alert.signals,
            history,
            context,
            known,
            text,
            mentioned,
            hits,
            people,
            hosts: alert.entities_of(EntityKind::Host).collect(),
        }
    }

    /// The category the alert is about: the parser's, else guessed from its signals.
    pub fn category(&self) -> Option<AlertCategory> {
        let signals = self.signals;
        signals.category.or(if signals.process.is_some() {
            Some(AlertCategory::Endpoint)
        } else if signals.email.is_some() {
            Some(AlertCategory::Email)
        } else if signals.sign_in.is_some() {
            Some(AlertCategory::Identity)
        } else if signals.cloud.is_some() {
            Some(AlertCategory::Cloud)
        } else if signals.secret.is_some() {
            Some(AlertCategory::Application)
        } else if signals.network.is_some() {
            Some(AlertCategory::Network)
        } else {
            None
        })
    }

    /// Whether vocabulary word `index` occurs in the text.
    fn has(&self, index: usize) -> bool {
        self.mentioned[index / 64] & (1 << (index % 64)) != 0
    }

    /// Where vocabulary word `index` occurs in the text (byte offsets).
    fn occurrences(&self, index: usize) -> impl Iterator<Item = usize> + '_ {
        let index = u32::try_from(index).unwrap_or(u32::MAX);
        let first = self.hits.partition_point(|(found, _)| *found < index);
        self.hits[first..]
            .iter()
            .take_while(move |(found, _)| *found == index)
            .map(|(_, start)| *start as usize)
    }

    /// Whether any of `words` appears in the alert's text.
    pub(crate) fn mentions(&self, words: Words) -> bool {
        words.indexed().any(|(index, _)| self.has(index))
    }

    /// The first of `words` that appears in the alert's text.
    pub(crate) fn first_mention(&self, words: Words) -> Option<&'static str> {
        words
            .indexed()
            .find(|(index, _)| self.has(*index))
            .map(|(_, word)| word)
    }

    /// The first of `words` that appears in the alert's text as a whole word (not inside
    /// another: "atera" must not match "lateral", "c2" must not match "ec2").
    pub(crate) fn first_word(&self, words: Words) -> Option<&'static str> {
        words
            .indexed()
            .find(|(index, word)| {
                self.has(*index)
                    && self
                        .occurrences(*index)
                        .any(|start| bounded(&self.text, start, word.len()))
            })
            .map(|(_, word)| word)
    }

    /// Whether an entity is one of the people who handle the alert at its source (an
    /// incident's owner): named, but not a party to what the alert reports.
    pub fn is_handler(&self, entity: &Entity) -> bool {
        self.signals.handlers.contains(&entity.value)
    }

    /// The entities of one kind with their knowledge.
    pub fn known_of(&self, kind: EntityKind) -> impl Iterator<Item = &(&'a Entity, Knowledge<'a>)> {
        self.known
            .iter()
            .filter(move |(entity, _)| entity.kind == kind)
    }

    /// What the context knows about a value that may not be among the entities (a
    /// signal's field): looked up directly.
    pub fn lookup(&self, kind: EntityKind, value: &str) -> Option<Knowledge<'a>> {
        let normalised = sleuth_normalize::entities::normalize(kind, value)?;
        Some(self.context.about(&Entity::new(kind, normalised)))
    }

    /// Whether the source says it stopped the activity.
    pub fn blocked(&self) -> bool {
        self.signals.action == Some(ActionTaken::Blocked)
    }

    /// The users the alert names (user and email entities), for questions and remediation.
    pub fn people(&self) -> &[&'a str] {
        &self.people
    }

    /// The hosts the alert names.
    pub fn hosts(&self) -> &[&'a str] {
        &self.hosts
    }

    /// "wks-0231" or "the affected host", for sentences.
    pub fn host_phrase(&self) -> String {
        self.hosts.first().map_or_else(
            || "the affected host".to_string(),
            |host| (*host).to_string(),
        )
    }

    /// The best name of the person an alert is about: the identity's primary user name
    /// when the context knows them.
    pub fn person_phrase(&self) -> Option<String> {
        self.known
            .iter()
            .find_map(|(_, knowledge)| knowledge.identity.map(|identity| identity.user.clone()))
            .or_else(|| self.people().first().map(|person| person.to_string()))
    }
}

/// The alert's words, lower-cased, for behaviour matching. Bounded: a hostile alert's
/// megabyte description is not scanned a hundred times.
fn searchable_text(alert: &ParsedAlert) -> String {
    const LIMIT: usize = 16 * 1024;
    let signals = &alert.signals;
    let mut parts: Vec<&str> = vec![&alert.title, &alert.alert_type];
    parts.extend(signals.description.as_deref());
    parts.extend(signals.tags.iter().map(String::as_str));
    if let Some(process) = &signals.process {
        parts.extend(
            [
                &process.name,
                &process.path,
                &process.command_line,
                &process.decoded_command,
                &process.parent_name,
                &process.parent_command_line,
            ]
            .into_iter()
            .flatten()
            .map(String::as_str),
        );
    }
    if let Some(network) = &signals.network {
        parts.extend(network.signature.as_deref());
        parts.extend(network.signature_category.as_deref());
    }
    if let Some(email) = &signals.email {
        parts.extend(email.subject.as_deref());
        parts.extend(email.threat_kind.as_deref());
    }
    if let Some(cloud) = &signals.cloud {
        parts.extend(cloud.operation.as_deref());
        parts.extend(cloud.resource.as_deref());
    }
    if let Some(sign_in) = &signals.sign_in {
        parts.extend(sign_in.risk_reasons.iter().map(String::as_str));
    }
    for entity in &alert.entities {
        if matches!(
            entity.kind,
            EntityKind::Process | EntityKind::FilePath | EntityKind::Url
        ) {
            parts.push(&entity.value);
        }
    }
    let mut text = String::with_capacity(1024);
    for part in parts {
        if text.len() >= LIMIT {
            break;
        }
        if part.is_ascii() {
            // The common case, lower-cased in place rather than through a copy.
            let start = text.len();
            text.push_str(part);
            text[start..].make_ascii_lowercase();
        } else {
            text.push_str(&part.to_lowercase());
        }
        text.push('\n');
    }
    text.truncate(text.floor_char_boundary(LIMIT));
    text
}

/// Whether the match at `start..start + length` has no letter or digit on either side.
fn bounded(text: &str, start: usize, length: usize) -> bool {
    let before = text.get(..start).and_then(|head| head.chars().next_back());
    let after = text
        .get(start + length..)
        .and_then(|tail| tail.chars().next());
    !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_word_is_found_under_its_own_index() {
        // A word in two lists is two patterns: each must be reported, or one list would
        // miss it.
        for list in vocabulary::ALL {
            for (index, word) in list.indexed() {
                assert!(
                    AUTOMATON.find_overlapping_iter(word).any(|found| {
                        found.pattern().as_usize() == index && found.range() == (0..word.len())
                    }),
                    "'{word}' (word {index}) is not found in its own text"
                );
            }
        }
    }
}
