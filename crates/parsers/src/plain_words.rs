//! The entities an operator names in plain words ("198.51.100.9 is the Frankfurt VPN
//! egress", "svc-backup never logs on interactively"): what [`Entities::sweep`] finds in
//! free text (URLs, email addresses, IP addresses, hashes), plus the words that look like
//! host or account names — a `DOMAIN\account`, a user principal name, a domain under a
//! known suffix, and single tokens that carry a hyphen, dot, underscore or digit
//! (`svc-backup`, `wks-0231`, `j.smith`). Ordinary words ("never", "VPN") and everyday
//! hyphenated English ("well-known", "log-on") are not names.
//!
//! Whether "svc-backup" is a host or an account cannot be told from the words; the guess
//! made here (digits or an internal DNS suffix: a host; otherwise an account) is only how
//! the entity is shown, because context memory matches hosts, accounts and domains by
//! name whichever they are.

use sleuth_domain::{Entity, EntityKind};

use crate::entities::{
    Entities, hash_kind, normalize_domain, normalize_email, normalize_ip, refang,
};

/// The shortest and longest token taken as a name.
const NAME_CHARS: std::ops::RangeInclusive<usize> = 3..=64;

/// DNS suffixes of internal networks: a dotted name ending in one is a host.
const INTERNAL_SUFFIXES: &[&str] = &[
    "local",
    "localdomain",
    "lan",
    "corp",
    "internal",
    "intranet",
    "intra",
    "ad",
    "home",
];

/// First parts of everyday hyphenated English ("non-interactive", "sign-in"): a
/// hyphenated word of letters only that starts with one of these is not a name.
const ENGLISH_PREFIXES: &[&str] = &[
    "all", "anti", "built", "check", "co", "cross", "day", "e", "end", "follow", "full", "half",
    "high", "in", "log", "long", "low", "multi", "near", "non", "off", "on", "one", "opt", "out",
    "post", "pre", "re", "read", "real", "self", "semi", "short", "sign", "so", "sub", "third",
    "two", "up", "well", "write", "x",
];

/// The entities named in `text`, each once, in the order found.
pub fn entities_in_plain_words(text: &str) -> Vec<Entity> {
    let mut entities = Entities::default();
    entities.sweep(text);
    let refanged = refang(text);
    for token in tokens(&refanged) {
        add_name(&mut entities, token);
    }
    entities.into_vec()
}

fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|character: char| {
        character.is_whitespace()
            || matches!(
                character,
                '"' | '\''
                    | '`'
                    | '<'
                    | '>'
                    | '('
                    | ')'
                    | '['
                    | ']'
                    | '{'
                    | '}'
                    | ','
                    | ';'
                    | '!'
                    | '?'
                    | '='
                    | '|'
                    | '“'
                    | '”'
                    | '‘'
                    | '’'
            )
    })
    .map(|token| token.trim_matches(|character: char| matches!(character, '.' | ':' | '*')))
    .filter(|token| !token.is_empty())
}

fn add_name(entities: &mut Entities, token: &str) {
    // What the sweep reads (and rejects) is not a name either.
    if token.contains("://")
        || normalize_ip(token).is_some()
        || hash_kind(token).is_some()
        || token.contains(['/', '[', ']'])
    {
        return;
    }
    if let Some((domain, account)) = token.split_once('\\') {
        if is_name(domain) && is_name(account) {
            entities.add(EntityKind::User, token);
        }
        return;
    }
    if let Some((account, domain)) = token.split_once('@') {
        // A user principal name under an internal suffix, which is no email address.
        if normalize_email(token).is_none() && is_name(account) && is_name(domain) {
            entities.add(EntityKind::User, token);
        }
        return;
    }
    // A machine account names its host.
    let token = token.strip_suffix('$').unwrap_or(token);
    if !NAME_CHARS.contains(&token.chars().count()) || !is_name(token) {
        return;
    }
    if normalize_domain(token).is_some() && !is_internal(token) {
        entities.add(EntityKind::Domain, token);
        return;
    }
    if !looks_like_a_name(token) {
        return;
    }
    let host = token.chars().any(|character| character.is_ascii_digit()) || is_internal(token);
    entities.add(
        if host {
            EntityKind::Host
        } else {
            EntityKind::User
        },
        token,
    );
}

/// Letters, digits, `-`, `_` and `.` only, not starting or ending with `-` or `.`.
fn is_name(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|character| character.is_alphanumeric() || matches!(character, '-' | '_' | '.'))
        && !text.starts_with(['-', '.'])
        && !text.ends_with(['-', '.'])
}

fn is_internal(token: &str) -> bool {
    token
        .rsplit_once('.')
        .is_some_and(|(_, suffix)| INTERNAL_SUFFIXES.contains(&suffix.to_lowercase().as_str()))
}

/// A token that names something rather than being a word, a number or an abbreviation.
fn looks_like_a_name(token: &str) -> bool {
    let has_letter = token.chars().any(char::is_alphabetic);
    let has_digit = token.chars().any(|character| character.is_ascii_digit());
    let has_separator = token.contains(['-', '_', '.']);
    if !has_letter || !(has_digit || has_separator) {
        return false;
    }
    // "e.g", "i.e", "a.m": abbreviations, not names.
    if token.contains('.') && token.split('.').all(|part| part.chars().count() <= 1) {
        return false;
    }
    // Versions ("v1.2", "v10") and sizes ("64-bit", "24h", "10GB") are not names.
    let lowered = token.to_lowercase();
    let digits_after_v = lowered
        .strip_prefix('v')
        .is_some_and(|rest| rest.starts_with(|character: char| character.is_ascii_digit()));
    let starts_with_digit = lowered.starts_with(|character: char| character.is_ascii_digit());
    if digits_after_v || (starts_with_digit && !has_separator) {
        return false;
    }
    if starts_with_digit
        && lowered
            .split(['-', '_', '.'])
            .skip(1)
            .all(|part| part.chars().all(char::is_alphabetic))
        && lowered
            .split(['-', '_', '.'])
            .next()
            .is_some_and(|first| first.chars().all(|character| character.is_ascii_digit()))
    {
        return false;
    }
    // Everyday hyphenated English: letters only, a common first part.
    if !has_digit && token.contains('-') && !token.contains(['.', '_']) {
        let first = lowered.split('-').next().unwrap_or("");
        if lowered
            .split('-')
            .all(|part| part.chars().all(char::is_alphabetic))
            && ENGLISH_PREFIXES.contains(&first)
        {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<String> {
        entities_in_plain_words(text)
            .into_iter()
            .map(|entity| format!("{}:{}", entity.kind, entity.value))
            .collect()
    }

    fn check(text: &str, expected: &[&str]) {
        assert_eq!(found(text), expected, "{text:?}");
    }

    #[test]
    fn addresses_and_indicators_come_from_the_sweep() {
        check(
            "198.51.100.9 is the Frankfurt VPN egress",
            &["ip:198.51.100.9"],
        );
        check(
            "Mail from alerts@vendor.example.com about hxxps://portal.example[.]com/login is expected.",
            &[
                "email:alerts@vendor.example.com",
                "url:https://portal.example.com/login",
                "domain:portal.example.com",
            ],
        );
        check(
            "The installer 44d88612fea8a8f36de82e1278abb02f is our agent",
            &["hash_md5:44d88612fea8a8f36de82e1278abb02f"],
        );
        check(
            "Traffic to 2001:db8::7 is the backup link.",
            &["ip:2001:db8::7"],
        );
    }

    #[test]
    fn host_and_account_names_are_found() {
        check(
            "svc-backup never logs on interactively",
            &["user:svc-backup"],
        );
        check("WKS-0231 is the SOC's test workstation", &["host:wks-0231"]);
        check(
            r"CORP\J.Smith runs the scanner from scan01.corp.local (WKS-0231$).",
            &[
                r"user:corp\j.smith",
                "host:scan01.corp.local",
                "host:wks-0231",
            ],
        );
        check(
            "j.smith@corp.local is the UPN; admin_ops is the break-glass account",
            &[
                "email:j.smith@corp.local",
                "user:admin_ops",
                "user:break-glass",
            ],
        );
        check(
            "Backups go to backup.example.com nightly.",
            &["domain:backup.example.com"],
        );
        check("svc-backup's jobs run at night", &["user:svc-backup"]);
    }

    #[test]
    fn words_numbers_and_everyday_english_are_not_names() {
        for text in [
            "This is a well-known, non-interactive sign-in; e.g. a log-on by the on-call team.",
            "Upgrade to v1.2 or v10 on 64-bit hosts; 24h retention, 10GB disk, 3.5 days.",
            "Never page anyone at night!",
            "See /var/log/secure and C:/Temp/x.txt",
            "",
            "   ",
        ] {
            check(text, &[]);
        }
    }

    #[test]
    fn hostile_text_yields_nothing_odd() {
        // Injection is only data: the one name-like word is taken as a name.
        check(
            "'; DROP TABLE context_memory_items; --",
            &["user:context_memory_items"],
        );
        check(
            "Defanged evil-host[.]example[.]com",
            &["domain:evil-host.example.com"],
        );
        check(
            "ünïcödé-wörds and ünïcödé-01 ",
            &["user:ünïcödé-wörds", "host:ünïcödé-01"],
        );
        let long = "a-".repeat(5000);
        assert!(found(&long).is_empty());
        let many = (0..1000)
            .map(|index| format!("host-{index}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(found(&many).len(), crate::entities::MAX_ENTITIES);
    }
}
