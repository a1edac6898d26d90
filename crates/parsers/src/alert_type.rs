//! The alert type of an alert whose source names no rule: its title with the values of
//! entities taken out ("Mimikatz on WKS-0231" -> "Mimikatz on {host}"), so that the same
//! detection on another host, user or address is the same type. A value is recognised as
//! one of the alert's own entities, or by its shape (addresses, host-like names, email
//! addresses, hashes, long numbers); words of the detection's name stay as written.

use sleuth_domain::{Entity, EntityKind};

use crate::entities::{hash_kind, normalize_email, normalize_ip, user_base_name};

/// Identifier schemes whose values name a detection, not the thing it fired on:
/// "CVE-2021-44228" and "T1059.001" are host-shaped but part of the rule.
const IDENTIFIER_SCHEMES: &[&str] = &[
    "cve", "cwe", "ghsa", "capec", "kb", "ms", "rhsa", "dsa", "usn", "alas", "zdi", "t", "ta", "s",
    "g", "sha", "aes", "rsa", "tls", "ssl", "utf",
];

/// Fewer digits than this in a number are part of a rule's name (event 4625, port 445).
const MIN_VARYING_DIGITS: usize = 5;

/// `title` with every entity value replaced by a `{kind}` placeholder.
pub(crate) fn template(title: &str, entities: &[Entity]) -> String {
    let known = KnownValues::new(entities);
    let mut out = String::with_capacity(title.len());
    for (index, word) in title.split(' ').enumerate() {
        if index > 0 {
            out.push(' ');
        }
        let (lead, core, trail) = split_punctuation(word);
        out.push_str(lead);
        match placeholder(core, &known) {
            Some(name) => {
                out.push('{');
                out.push_str(name);
                out.push('}');
            }
            None => out.push_str(core),
        }
        out.push_str(trail);
    }
    out
}

/// The lower-cased values of an alert's entities, with the short forms titles use: a
/// host's first label, an account without its domain.
struct KnownValues {
    values: Vec<(String, &'static str)>,
}

impl KnownValues {
    fn new(entities: &[Entity]) -> KnownValues {
        let mut values = Vec::new();
        for entity in entities {
            let Some(name) = entity_placeholder(entity.kind) else {
                continue;
            };
            let value = entity.value.to_lowercase();
            match entity.kind {
                EntityKind::Host => {
                    if let Some((label, _)) = value.split_once('.') {
                        values.push((label.to_string(), name));
                    }
                }
                EntityKind::User => {
                    let base = user_base_name(&value);
                    // A one- or two-letter account would take ordinary words with it.
                    if base != value && base.chars().count() >= 3 {
                        values.push((base.to_string(), name));
                    }
                }
                _ => {}
            }
            values.push((value, name));
        }
        KnownValues { values }
    }

    fn find(&self, lowered: &str) -> Option<&'static str> {
        self.values
            .iter()
            .find(|(value, _)| value == lowered)
            .map(|(_, name)| *name)
    }
}

/// The placeholder an entity kind's values become; process names and bare file names are
/// what a detection is about ("mimikatz.exe"), so they stay.
fn entity_placeholder(kind: EntityKind) -> Option<&'static str> {
    match kind {
        EntityKind::Ip => Some("ip"),
        EntityKind::Domain => Some("domain"),
        EntityKind::Url => Some("url"),
        EntityKind::Email => Some("email"),
        EntityKind::User => Some("user"),
        EntityKind::Host => Some("host"),
        EntityKind::HashMd5 | EntityKind::HashSha1 | EntityKind::HashSha256 => Some("hash"),
        EntityKind::CloudAccount => Some("account"),
        EntityKind::CloudResource => Some("resource"),
        EntityKind::Process | EntityKind::FilePath => None,
    }
}

/// The word without the quotes, brackets and sentence punctuation around it.
fn split_punctuation(word: &str) -> (&str, &str, &str) {
    let is_edge = |character: char| "\"'`()[]{}<>,;!?".contains(character);
    let trimmed_start = word.trim_start_matches(is_edge);
    let lead = &word[..word.len() - trimmed_start.len()];
    let core = trimmed_start
        .trim_end_matches(is_edge)
        .trim_end_matches(['.', ':'])
        .trim_end_matches(is_edge);
    let trail = &trimmed_start[core.len()..];
    (lead, core, trail)
}

/// Which placeholder `word` becomes, if it is a value rather than a word of the rule.
fn placeholder(word: &str, known: &KnownValues) -> Option<&'static str> {
    if word.is_empty() {
        return None;
    }
    let lowered = word.to_lowercase();
    if let Some(name) = known.find(&lowered) {
        return Some(name);
    }
    if word.contains("://") {
        return Some("url");
    }
    if normalize_ip(word).is_some() {
        return Some("ip");
    }
    if word.contains('@') && (normalize_email(word).is_some() || is_email_shaped(word)) {
        return Some("email");
    }
    if hash_kind(word).is_some() && word.bytes().any(|byte| byte.is_ascii_digit()) {
        return Some("hash");
    }
    if is_qualified_account(word) {
        return Some("user");
    }
    if is_long_number(word) {
        return Some("n");
    }
    if is_host_shaped(&lowered) {
        return Some("host");
    }
    None
}

/// `name@domain.tld` with a domain that need not be on the public suffix list.
fn is_email_shaped(word: &str) -> bool {
    let plain = |text: &str| {
        !text.is_empty()
            && text
                .chars()
                .all(|character| character.is_alphanumeric() || "-_.+".contains(character))
    };
    word.split_once('@')
        .is_some_and(|(local, domain)| plain(local) && plain(domain) && domain.contains('.'))
}

/// `DOMAIN\name`: an account as Windows writes it.
fn is_qualified_account(word: &str) -> bool {
    word.split_once('\\').is_some_and(|(domain, name)| {
        let part = |text: &str| {
            !text.is_empty()
                && text
                    .chars()
                    .all(|character| character.is_alphanumeric() || "-_.$".contains(character))
        };
        part(domain) && part(name)
    })
}

/// Digits with separators (a count, a date, a time, a process id) and enough digits to
/// vary between alerts of one rule.
fn is_long_number(word: &str) -> bool {
    let digits = word.bytes().filter(u8::is_ascii_digit).count();
    digits >= MIN_VARYING_DIGITS
        && word
            .bytes()
            .all(|byte| byte.is_ascii_digit() || b"-:./,+TZ".contains(&byte))
        && word
            .bytes()
            .next()
            .is_some_and(|byte| byte.is_ascii_digit())
}

/// A machine name as inventories write them: letters first, then a hyphen, underscore
/// or dot joining parts with digits ("wks-0231", "srv-db-01", "web01.corp.local"),
/// unless the part before the first separator names an identifier scheme.
fn is_host_shaped(lowered: &str) -> bool {
    let charset_ok = lowered
        .chars()
        .all(|character| character.is_ascii_alphanumeric() || matches!(character, '-' | '_' | '.'));
    let starts_with_letter = lowered
        .chars()
        .next()
        .is_some_and(|character| character.is_ascii_alphabetic());
    let has_digit = lowered.bytes().any(|byte| byte.is_ascii_digit());
    let separated = lowered.contains(['-', '_', '.']);
    if !(charset_ok && starts_with_letter && has_digit && separated && lowered.len() >= 4) {
        return false;
    }
    let scheme = lowered
        .split(['-', '_', '.'])
        .next()
        .unwrap_or_default()
        .trim_end_matches(|character: char| character.is_ascii_digit());
    !IDENTIFIER_SCHEMES.contains(&scheme)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entity(kind: EntityKind, value: &str) -> Entity {
        Entity::new(kind, value)
    }

    #[test]
    fn entity_values_and_shapes_become_placeholders() {
        let host = entity(EntityKind::Host, "wks-0231");
        let fqdn = entity(EntityKind::Host, "fileserver.corp.example");
        let user = entity(EntityKind::User, "corp\\r.patel");
        let plain_user = entity(EntityKind::User, "jdoe");
        let ip = entity(EntityKind::Ip, "203.0.113.7");
        let process = entity(EntityKind::Process, "mimikatz.exe");
        let cases: Vec<(&str, Vec<Entity>, &str)> = vec![
            ("Mimikatz on WKS-0231", vec![], "Mimikatz on {host}"),
            (
                "Mimikatz on WKS-0231",
                vec![host.clone()],
                "Mimikatz on {host}",
            ),
            (
                "Mimikatz on WKS-0232",
                vec![host.clone()],
                "Mimikatz on {host}",
            ),
            (
                "Login failure for jdoe",
                vec![plain_user.clone()],
                "Login failure for {user}",
            ),
            ("Login failure for jdoe", vec![], "Login failure for jdoe"),
            (
                "Logon by CORP\\R.Patel on FILESERVER",
                vec![user.clone(), fqdn.clone()],
                "Logon by {user} on {host}",
            ),
            (
                "r.patel signed in from 198.51.100.4",
                vec![user.clone()],
                "{user} signed in from {ip}",
            ),
            (
                "Beacon to 203.0.113.7:443 (C2)",
                vec![ip.clone()],
                "Beacon to {ip} (C2)",
            ),
            (
                "Phish from bad@evil.example reported",
                vec![],
                "Phish from {email} reported",
            ),
            (
                "Download of http://evil.example/x.ps1",
                vec![],
                "Download of {url}",
            ),
            (
                "Known bad file 44d88612fea8a8f36de82e1278abb02f",
                vec![],
                "Known bad file {hash}",
            ),
            (
                "Login at 2026-11-25T10:00:00Z failed",
                vec![],
                "Login at {n} failed",
            ),
            ("123456 failed logins", vec![], "{n} failed logins"),
            (
                "Event 4625 on \"srv-db-01\".",
                vec![],
                "Event 4625 on \"{host}\".",
            ),
            ("mimikatz.exe ran", vec![process], "mimikatz.exe ran"),
            (
                "Log4Shell CVE-2021-44228 exploit",
                vec![],
                "Log4Shell CVE-2021-44228 exploit",
            ),
            ("T1059.001 PowerShell", vec![], "T1059.001 PowerShell"),
            ("MS17-010 EternalBlue", vec![], "MS17-010 EternalBlue"),
            ("Win32 trojan", vec![], "Win32 trojan"),
            ("Generic alert", vec![], "Generic alert"),
            ("", vec![], ""),
        ];
        for (title, entities, expected) in cases {
            assert_eq!(template(title, &entities), expected, "{title:?}");
        }
    }

    #[test]
    fn short_account_names_do_not_take_words() {
        let user = entity(EntityKind::User, "corp\\on");
        assert_eq!(
            template("Mimikatz on WKS-0231", &[user]),
            "Mimikatz on {host}"
        );
    }

    #[test]
    fn the_same_rule_on_different_values_is_one_type() {
        let titles = [
            ("Mimikatz on WKS-0231", "wks-0231"),
            ("Mimikatz on LAPTOP-77", "laptop-77"),
            ("Mimikatz on dc01", "dc01"),
        ];
        let types: std::collections::BTreeSet<String> = titles
            .iter()
            .map(|(title, host)| template(title, &[entity(EntityKind::Host, host)]))
            .collect();
        assert_eq!(types.len(), 1, "{types:?}");
    }
}
