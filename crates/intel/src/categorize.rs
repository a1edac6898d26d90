//! Vendor words for what an indicator is ("Cobalt Strike C2", "malware_download",
//! "botnet_cc", "TOR exit", `misp-galaxy:ransomware="..."`) -> one of Sleuth's categories.

/// Every category an indicator may carry, as the context file spells them.
pub const CATEGORIES: &[&str] = &[
    "c2",
    "malware",
    "phishing",
    "ransomware",
    "botnet",
    "tor_exit",
    "proxy",
    "scanner",
    "exploit",
    "spam",
    "brute_force",
    "password_spray",
    "cryptomining",
    "malware_delivery",
    "other",
];

/// How words are looked for in the text, once it is lower-cased and every run of
/// punctuation is a single space, with a space at both ends.
enum Pattern {
    /// Whole words: " tor exit " in " known tor exit node ".
    Words(&'static str),
    /// A word beginning: " phish" finds "phishing", "phish-kit", "spearphish" not.
    Stem(&'static str),
}

use Pattern::{Stem, Words};

/// The rules, most specific first: "Emotet botnet C2" is a C2 server, "phishing page
/// dropping malware" a phishing site, "ransomware payload" ransomware. The generic STIX
/// and MISP words ("malicious-activity", "compromised") come last, as `other`.
const RULES: &[(&str, &[Pattern])] = &[
    (
        "tor_exit",
        &[Words(" tor "), Words(" torexit "), Words(" onion router ")],
    ),
    ("ransomware", &[Stem(" ransom")]),
    (
        "c2",
        &[
            Words(" c2 "),
            Stem(" c2server"),
            Words(" c&c "),
            Words(" cnc "),
            Words(" botnet cc "),
            Words(" command and control "),
            Words(" command control "),
            Words(" cobalt strike "),
            Words(" cobaltstrike "),
            Words(" brute ratel "),
            Words(" sliver "),
        ],
    ),
    (
        "phishing",
        &[Stem(" phish"), Words(" credential harvesting ")],
    ),
    // Before brute force: a spray is guessing spread over many accounts (ATT&CK T1110.003,
    // "Password Spraying"), and it reads differently in a sign-in alert.
    (
        "password_spray",
        &[
            Words(" password spray "),
            Words(" password spraying "),
            Stem(" passwordspray"),
            Words(" t1110 003 "),
        ],
    ),
    (
        "brute_force",
        &[
            Stem(" brute"),
            Words(" password guessing "),
            Words(" password cracking "),
            Words(" credential stuffing "),
            Words(" t1110 "),
            Words(" ssh attack "),
        ],
    ),
    // Before malware: a miner is malware whose harm is the stolen computing (ATT&CK T1496,
    // "Resource Hijacking"; STIX's malware type `resource-exploitation`).
    (
        "cryptomining",
        &[
            Stem(" coinmin"),
            Stem(" cryptomin"),
            Stem(" cryptojack"),
            Words(" crypto mining "),
            Words(" mining pool "),
            Words(" xmrig "),
            Words(" resource hijacking "),
            Words(" resource exploitation "),
            Words(" t1496 "),
        ],
    ),
    // Before malware: where payloads are fetched from (URLhaus `malware_download`, ThreatFox
    // `payload_delivery`, RSIT `malware-distribution`, STIX's infrastructure type
    // `hosting-malware`), not the payload itself.
    (
        "malware_delivery",
        &[
            Words(" malware download "),
            Words(" malware distribution "),
            Words(" malware delivery "),
            Words(" payload delivery "),
            Words(" payload hosting "),
            Words(" hosting malware "),
            Words(" drive by download "),
            Words(" drive by compromise "),
        ],
    ),
    ("exploit", &[Stem(" exploit"), Words(" cve ")]),
    (
        "botnet",
        &[Stem(" botnet"), Words(" bot "), Words(" bots ")],
    ),
    ("scanner", &[Stem(" scan"), Stem(" recon")]),
    ("spam", &[Stem(" spam")]),
    (
        "proxy",
        &[
            Stem(" prox"),
            Stem(" anonymi"),
            Words(" vpn "),
            Words(" open relay "),
        ],
    ),
    (
        "malware",
        &[
            Stem(" malware"),
            Stem(" payload"),
            Stem(" trojan"),
            Words(" rat "),
            Stem(" stealer"),
            Stem(" infostealer"),
            Stem(" loader"),
            Stem(" dropper"),
            Stem(" backdoor"),
            Stem(" worm"),
            Stem(" virus"),
            Stem(" banker"),
            Stem(" keylogger"),
            Words(" miner "),
            Stem(" spyware"),
            Stem(" rootkit"),
            Stem(" skimm"),
            Stem(" webshell"),
            Words(" web shell "),
        ],
    ),
    (
        "other",
        &[
            Words(" other "),
            Words(" malicious activity "),
            Words(" malicious "),
            Words(" anomalous activity "),
            Words(" compromised "),
            Words(" suspicious "),
            Words(" attribution "),
        ],
    ),
];

/// The longest text looked at: a category is said in its first words, and a hostile
/// feed cannot make every row cost a megabyte of scanning.
const MAX_TEXT_CHARS: usize = 1024;

/// The category a vendor's words name ("Cobalt Strike C2" -> `c2`, "malware_download"
/// -> `malware`, "TOR exit" -> `tor_exit`), or `None` when they name none.
pub fn categorize(text: &str) -> Option<&'static str> {
    let mut spaced = String::with_capacity(text.len().min(MAX_TEXT_CHARS) + 2);
    spaced.push(' ');
    for character in text.chars().take(MAX_TEXT_CHARS) {
        let character = character.to_ascii_lowercase();
        if character.is_alphanumeric() || character == '&' {
            spaced.push(character);
        } else if !spaced.ends_with(' ') {
            spaced.push(' ');
        }
    }
    if !spaced.ends_with(' ') {
        spaced.push(' ');
    }
    RULES
        .iter()
        .find(|(_, patterns)| {
            patterns.iter().any(|pattern| match pattern {
                Words(words) | Stem(words) => spaced.contains(words),
            })
        })
        .map(|(category, _)| *category)
}

/// The most telling category among several texts, in order: the first specific one,
/// else `other` when any text said only that the thing is bad.
pub(crate) fn categorize_first<'a>(
    texts: impl IntoIterator<Item = &'a str>,
) -> Option<&'static str> {
    let mut generic = None;
    for text in texts {
        match categorize(text) {
            Some("other") => generic = Some("other"),
            Some(category) => return Some(category),
            None => {}
        }
    }
    generic
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendor_words_map_to_one_category() {
        for (text, expected) in [
            ("Cobalt Strike C2", Some("c2")),
            ("cobaltstrike beacon", Some("c2")),
            ("botnet_cc", Some("c2")),
            ("Emotet botnet C&C server", Some("c2")),
            ("command-and-control", Some("c2")),
            ("malware_download", Some("malware_delivery")),
            ("payload_delivery", Some("malware_delivery")),
            (
                "rsit:malicious-code=\"malware-distribution\"",
                Some("malware_delivery"),
            ),
            ("hosting-malware", Some("malware_delivery")),
            ("Emotet loader", Some("malware")),
            ("SSH brute force", Some("brute_force")),
            ("bruteforcelogin", Some("brute_force")),
            (
                "ecsirt:intrusion-attempts=\"brute-force\"",
                Some("brute_force"),
            ),
            (
                "misp-galaxy:mitre-attack-pattern=\"Brute Force - T1110\"",
                Some("brute_force"),
            ),
            ("Password Spraying", Some("password_spray")),
            (
                "misp-galaxy:mitre-attack-pattern=\"Password Spraying - T1110.003\"",
                Some("password_spray"),
            ),
            ("XMRig miner", Some("cryptomining")),
            ("cryptojacking", Some("cryptomining")),
            ("Monero mining pool", Some("cryptomining")),
            ("resource-exploitation", Some("cryptomining")),
            ("Resource Hijacking", Some("cryptomining")),
            ("win.agent_tesla stealer", Some("malware")),
            ("RAT", Some("malware")),
            ("phishing", Some("phishing")),
            ("Credential phish kit", Some("phishing")),
            ("TOR exit", Some("tor_exit")),
            ("tor_exit", Some("tor_exit")),
            ("misp-galaxy:ransomware=\"LockBit\"", Some("ransomware")),
            ("Ransomware payload", Some("ransomware")),
            ("Mirai botnet", Some("botnet")),
            ("SSH scanner", Some("scanner")),
            ("mass-scanning", Some("scanner")),
            ("exploit-kit landing", Some("exploit")),
            ("CVE-2024-0001 exploitation", Some("exploit")),
            ("spam source", Some("spam")),
            ("anonymization", Some("proxy")),
            ("open proxy", Some("proxy")),
            ("malicious-activity", Some("other")),
            ("compromised", Some("other")),
            ("spammer", Some("spam")),
            ("c2", Some("c2")),
            ("botnet", Some("botnet")),
            ("scanner", Some("scanner")),
            ("exploit", Some("exploit")),
            ("other", Some("other")),
        ] {
            assert_eq!(categorize(text), expected, "{text:?}");
        }
    }

    #[test]
    fn words_inside_other_words_do_not_count() {
        for text in [
            "tlp:white",
            "type:OSINT",
            "monitor actor",
            "history",
            "Dridex",
            "benign",
            "",
            "ßüñ☃ 🙂",
        ] {
            assert_eq!(categorize(text), None, "{text:?}");
        }
    }

    #[test]
    fn every_category_the_rules_return_is_a_known_one() {
        for (category, _) in RULES {
            assert!(CATEGORIES.contains(category), "{category}");
        }
        for category in CATEGORIES {
            assert_eq!(categorize(category), Some(*category), "{category}");
        }
    }

    #[test]
    fn a_specific_category_beats_a_generic_one_across_texts() {
        assert_eq!(
            categorize_first(["malicious-activity", "Cobalt Strike team server"]),
            Some("c2")
        );
        assert_eq!(categorize_first(["compromised", "Dridex"]), Some("other"));
        assert_eq!(categorize_first(["tlp:green"]), None);
    }

    #[test]
    fn huge_texts_are_read_only_at_their_start() {
        let text = format!("{} phishing", "x ".repeat(10_000));
        assert_eq!(categorize(&text), None);
    }
}
