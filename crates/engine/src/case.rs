//! The working state of one investigation: the alert, what the context knows about each of
//! its entities, its history, and one lower-cased text to search for behaviours in. Built
//! once, read by every playbook.

use sleuth_domain::{
    ActionTaken, AlertCategory, Entity, EntityKind, History, ParsedAlert, Signals,
};

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use crate::context::{Context, Knowledge};

/// Every word the playbooks look for (`playbooks::VOCABULARY`), as one Aho-Corasick
/// automaton: building a case finds them all in one pass over the alert's text, so asking
/// whether it mentions a word is a lookup rather than another scan.
struct Vocabulary {
    automaton: AhoCorasick,
    index: foldhash::HashMap<&'static str, u32>,
}

static VOCABULARY: LazyLock<Vocabulary> = LazyLock::new(|| {
    let mut words: Vec<&'static str> = crate::playbooks::VOCABULARY
        .iter()
        .flat_map(|list| list.iter().copied())
        .collect();
    words.sort_unstable();
    words.dedup();
    let index = words
        .iter()
        .enumerate()
        .map(|(position, word)| (*word, u32::try_from(position).unwrap_or(u32::MAX)))
        .collect();
    // Overlapping matches: "lsass" inside "lsass.exe" and "lsass.exe" both count.
    let automaton = AhoCorasick::builder()
        .match_kind(MatchKind::Standard)
        .kind(Some(AhoCorasickKind::DFA))
        .build(&words)
        .expect("the vocabulary is a fixed list of short literal words");
    Vocabulary { automaton, index }
});

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
        let mut hits: Vec<(u32, u32)> = VOCABULARY
            .automaton
            .find_overlapping_iter(&text)
            .map(|found| {
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

    /// Where `word` occurs in the text (byte offsets), or `None` when it is not in the
    /// vocabulary (then the caller scans).
    fn occurrences<'s>(&'s self, word: &str) -> Option<impl Iterator<Item = usize> + 's> {
        let Some(index) = VOCABULARY.index.get(word).copied() else {
            debug_assert!(
                false,
                "'{word}' is not in playbooks::VOCABULARY: register its list there"
            );
            return None;
        };
        let first = self.hits.partition_point(|(found, _)| *found < index);
        Some(
            self.hits[first..]
                .iter()
                .take_while(move |(found, _)| *found == index)
                .map(|(_, start)| *start as usize),
        )
    }

    fn contains(&self, word: &str) -> bool {
        match self.occurrences(word) {
            Some(mut starts) => starts.next().is_some(),
            None => self.text.contains(word),
        }
    }

    /// Whether any of `words` appears in the alert's text.
    pub fn mentions(&self, words: &[&str]) -> bool {
        words.iter().any(|word| self.contains(word))
    }

    /// The first of `words` that appears in the alert's text.
    pub fn first_mention<'w>(&self, words: &[&'w str]) -> Option<&'w str> {
        words.iter().copied().find(|word| self.contains(word))
    }

    /// The first of `words` that appears in the alert's text as a whole word (not inside
    /// another: "atera" must not match "lateral", "c2" must not match "ec2").
    pub fn first_word<'w>(&self, words: &[&'w str]) -> Option<&'w str> {
        words
            .iter()
            .copied()
            .find(|word| match self.occurrences(word) {
                Some(mut starts) => starts.any(|start| bounded(&self.text, start, word.len())),
                None => contains_word(&self.text, word),
            })
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
        let normalised = sleuth_parsers::entities::normalize(kind, value)?;
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
        text.push_str(&part.to_lowercase());
        text.push('\n');
    }
    text.truncate(text.floor_char_boundary(LIMIT));
    text
}

/// Whether `word` occurs in `text` with no letter or digit right before or after it.
fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word)
        .any(|(start, _)| bounded(text, start, word.len()))
}

/// Whether the match at `start..start + length` has no letter or digit on either side.
fn bounded(text: &str, start: usize, length: usize) -> bool {
    let before = text.get(..start).and_then(|head| head.chars().next_back());
    let after = text
        .get(start + length..)
        .and_then(|tail| tail.chars().next());
    !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
}
