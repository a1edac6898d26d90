//! What an indicator is: its kind, and its value normalised exactly as an alert entity of
//! the same thing would be, so that a lookup is a string comparison. Also how the type
//! words feeds use (`ip-dst`, `sha256_hash`, `hostname`) and bare values become one.

use std::borrow::Cow;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};
use sleuth_domain::{EntityKind, Timestamp};
use sleuth_normalize::entities;

/// What an indicator names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndicatorKind {
    Ip,
    /// A CIDR range, stored as `network/prefix` with the host bits cleared. It matches
    /// every address inside it; it is never a single address (those are `Ip`).
    IpNetwork,
    Domain,
    Url,
    Email,
    HashMd5,
    HashSha1,
    HashSha256,
}

impl IndicatorKind {
    /// The name used in reports and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            IndicatorKind::Ip => "ip",
            IndicatorKind::IpNetwork => "ip_network",
            IndicatorKind::Domain => "domain",
            IndicatorKind::Url => "url",
            IndicatorKind::Email => "email",
            IndicatorKind::HashMd5 => "hash_md5",
            IndicatorKind::HashSha1 => "hash_sha1",
            IndicatorKind::HashSha256 => "hash_sha256",
        }
    }

    /// The kind of alert entity whose value equals this indicator's when they name the
    /// same thing. `None` for networks: they match addresses by containment
    /// ([`network_contains`]), not by equality.
    pub fn entity_kind(self) -> Option<EntityKind> {
        Some(match self {
            IndicatorKind::Ip => EntityKind::Ip,
            IndicatorKind::IpNetwork => return None,
            IndicatorKind::Domain => EntityKind::Domain,
            IndicatorKind::Url => EntityKind::Url,
            IndicatorKind::Email => EntityKind::Email,
            IndicatorKind::HashMd5 => EntityKind::HashMd5,
            IndicatorKind::HashSha1 => EntityKind::HashSha1,
            IndicatorKind::HashSha256 => EntityKind::HashSha256,
        })
    }
}

impl std::fmt::Display for IndicatorKind {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// One piece of threat intelligence, ready to match alert entities against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Indicator {
    pub kind: IndicatorKind,
    /// Normalised like the alert entity of the same thing (see [`normalize_indicator`]).
    pub value: String,
    /// One of [`crate::CATEGORIES`], when the feed said what the indicator is.
    pub category: Option<String>,
    pub description: Option<String>,
    /// Who published it: the name the operator gave the feed.
    pub source: Option<String>,
    /// 0..=100.
    pub confidence: u8,
    /// When the feed says the indicator stops being valid (STIX `valid_until`). A reader
    /// given `now` drops indicators already past it; one that expires later is kept, so
    /// whoever matches should not match it after this time.
    pub valid_until: Option<Timestamp>,
}

/// Why a value was not taken as an indicator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    #[error("no value")]
    Empty,
    #[error("unknown indicator type {0:?}")]
    UnknownType(String),
    #[error("{value:?} is not {expected}")]
    Invalid {
        expected: &'static str,
        value: String,
    },
    #[error(
        "{0:?} is not an IP address, CIDR range, domain, URL, email address or MD5/SHA-1/SHA-256 hash"
    )]
    Unrecognised(String),
}

/// The kind a type word or an object path asks for, before the value is seen: an IP may
/// turn out to be a range, a bare "hash" is typed by its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expected {
    Ip,
    Domain,
    Url,
    Email,
    AnyHash,
    Md5,
    Sha1,
    Sha256,
}

impl Expected {
    /// The kind a feed's type word names: MISP attribute types, STIX object types,
    /// abuse.ch `ioc_type`s and the context file's `kind`s. Case, `_` and `-` are not
    /// told apart ("SHA256_hash" is "sha256-hash").
    pub(crate) fn from_type_word(word: &str) -> Option<Expected> {
        let word = word.trim();
        // Most feeds already write lower-case words: no copy for them, row after row.
        let word: Cow<'_, str> = if word
            .bytes()
            .any(|byte| byte.is_ascii_uppercase() || byte == b'_')
        {
            Cow::Owned(word.to_ascii_lowercase().replace('_', "-"))
        } else {
            Cow::Borrowed(word)
        };
        Some(match word.as_ref() {
            "ip" | "ipv4" | "ipv6" | "ip-dst" | "ip-src" | "ip-addr" | "ipv4-addr"
            | "ipv6-addr" | "ip-address" | "ip:port" | "ip-dst|port" | "ip-src|port" | "dst-ip"
            | "src-ip" | "cidr" | "ip-network" | "netblock" => Expected::Ip,
            "domain" | "domain-name" | "hostname" | "host" | "fqdn" => Expected::Domain,
            "url" => Expected::Url,
            "email" | "email-addr" | "email-address" | "email-src" => Expected::Email,
            "hash" | "filehash" | "file-hash" => Expected::AnyHash,
            "md5" | "md5-hash" | "hash-md5" | "filehash-md5" => Expected::Md5,
            "sha1" | "sha-1" | "sha1-hash" | "hash-sha1" | "filehash-sha1" => Expected::Sha1,
            "sha256" | "sha-256" | "sha256-hash" | "hash-sha256" | "filehash-sha256" => {
                Expected::Sha256
            }
            _ => return None,
        })
    }

    fn description(self) -> &'static str {
        match self {
            Expected::Ip => "an IP address or CIDR range",
            Expected::Domain => "a domain under a known public suffix",
            Expected::Url => "an http(s), ftp(s) or ws(s) URL",
            Expected::Email => "an email address",
            Expected::AnyHash => "an MD5, SHA-1 or SHA-256 hex digest",
            Expected::Md5 => "an MD5 hex digest",
            Expected::Sha1 => "a SHA-1 hex digest",
            Expected::Sha256 => "a SHA-256 hex digest",
        }
    }
}

/// The indicator a feed names: `type_word` as the feed or the operator writes it (`ip`,
/// `ip-dst`, `domain`, `hostname`, `url`, `email-src`, `hash`, `md5`, `sha256_hash`, ...),
/// or `None` to recognise the kind from the value. Values are refanged and normalised by
/// sleuth-parsers' entity rules; CIDR ranges become [`IndicatorKind::IpNetwork`].
pub fn normalize_indicator(
    type_word: Option<&str>,
    value: &str,
) -> Result<(IndicatorKind, String), Rejected> {
    if says_nothing(value) {
        return Err(Rejected::Empty);
    }
    match type_word.map(str::trim).filter(|word| !word.is_empty()) {
        Some(word) => match Expected::from_type_word(word) {
            Some(expected) => normalize_as(expected, value),
            None => Err(Rejected::UnknownType(shorten(word))),
        },
        None => recognise(value),
    }
}

/// `value` as the kind `expected` asks for.
pub(crate) fn normalize_as(
    expected: Expected,
    value: &str,
) -> Result<(IndicatorKind, String), Rejected> {
    if says_nothing(value) {
        return Err(Rejected::Empty);
    }
    let invalid = || Rejected::Invalid {
        expected: expected.description(),
        value: shorten(value),
    };
    let entity = |entity_kind: EntityKind, kind: IndicatorKind| {
        entities::normalize(entity_kind, value)
            .map(|normalised| (kind, normalised))
            .ok_or_else(invalid)
    };
    match expected {
        Expected::Ip if value.contains('/') => normalize_network(value).ok_or_else(invalid),
        Expected::Ip => entity(EntityKind::Ip, IndicatorKind::Ip),
        Expected::Domain => entity(EntityKind::Domain, IndicatorKind::Domain),
        Expected::Url => entity(EntityKind::Url, IndicatorKind::Url),
        Expected::Email => entity(EntityKind::Email, IndicatorKind::Email),
        Expected::AnyHash => match entities::hash_kind(value) {
            Some(EntityKind::HashMd5) => entity(EntityKind::HashMd5, IndicatorKind::HashMd5),
            Some(EntityKind::HashSha1) => entity(EntityKind::HashSha1, IndicatorKind::HashSha1),
            Some(EntityKind::HashSha256) => {
                entity(EntityKind::HashSha256, IndicatorKind::HashSha256)
            }
            _ => Err(invalid()),
        },
        Expected::Md5 => entity(EntityKind::HashMd5, IndicatorKind::HashMd5),
        Expected::Sha1 => entity(EntityKind::HashSha1, IndicatorKind::HashSha1),
        Expected::Sha256 => entity(EntityKind::HashSha256, IndicatorKind::HashSha256),
    }
}

/// The kind of a bare value. Only unambiguous shapes are taken: a scheme makes a URL, an
/// `@` an email address, a hex digest of a known length a hash; a bare domain must be
/// under a known public suffix ("report.docx" is a file name, not a host).
fn recognise(value: &str) -> Result<(IndicatorKind, String), Rejected> {
    let trimmed = value.trim();
    let plain: Cow<'_, str> = if looks_defanged(trimmed) {
        Cow::Owned(entities::refang(trimmed))
    } else {
        Cow::Borrowed(trimmed)
    };
    let expected = if plain.contains("://") {
        Expected::Url
    } else if plain.contains('@') {
        Expected::Email
    } else if entities::hash_kind(&plain).is_some() {
        Expected::AnyHash
    } else if plain.contains('/') {
        Expected::Ip
    } else if plain.starts_with(|character: char| character.is_ascii_digit()) || plain.contains(':')
    {
        // An address, or a domain that starts with a digit ("1st-bank.example.com").
        match entities::normalize(EntityKind::Ip, &plain) {
            Some(address) => return Ok((IndicatorKind::Ip, address)),
            None => Expected::Domain,
        }
    } else {
        Expected::Domain
    };
    normalize_as(expected, value).map_err(|_| Rejected::Unrecognised(shorten(value)))
}

/// Whether `text` may hold defanging (`[.]`, `(dot)`, `hxxp`) for
/// [`entities::refang`] to undo: most values do not, and are not copied to find out.
fn looks_defanged(text: &str) -> bool {
    text.bytes().any(|byte| matches!(byte, b'[' | b'(' | b'{'))
        || text.contains(" dot ")
        || text
            .get(..4)
            .is_some_and(|start| start.eq_ignore_ascii_case("hxxp"))
}

/// A CIDR range in canonical form: the network address (host bits cleared, IPv6
/// compressed) and the prefix. A full-length prefix is a single address and comes back
/// as [`IndicatorKind::Ip`]; `/0` would match every address, so it is refused.
fn normalize_network(text: &str) -> Option<(IndicatorKind, String)> {
    let refanged = entities::refang(text);
    let (address, prefix) = refanged.split_once('/')?;
    let prefix = prefix.trim();
    if prefix.is_empty() || prefix.len() > 3 || !prefix.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let prefix: u32 = prefix.parse().ok()?;
    let network = match address.trim().parse::<IpAddr>().ok()? {
        IpAddr::V4(v4) if (1..=32).contains(&prefix) => {
            let mask = u32::MAX << (32 - prefix);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
        }
        IpAddr::V6(v6) if (1..=128).contains(&prefix) => {
            let mask = u128::MAX << (128 - prefix);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
        }
        _ => return None,
    };
    let full_length = if network.is_ipv4() { 32 } else { 128 };
    if prefix == full_length {
        let single = entities::normalize_ip(&network.to_string())?;
        return Some((IndicatorKind::Ip, single));
    }
    Some((IndicatorKind::IpNetwork, format!("{network}/{prefix}")))
}

/// Whether a normalised `network` (`203.0.113.0/24`) contains a normalised IP address.
/// False for anything that does not parse, and across address families.
pub fn network_contains(network: &str, address: &str) -> bool {
    let Some((base, prefix)) = network.split_once('/') else {
        return false;
    };
    let (Ok(base), Ok(prefix), Ok(address)) = (
        base.parse::<IpAddr>(),
        prefix.parse::<u32>(),
        address.parse::<IpAddr>(),
    ) else {
        return false;
    };
    match (base, address) {
        (IpAddr::V4(base), IpAddr::V4(address)) if (1..=32).contains(&prefix) => {
            let mask = u32::MAX << (32 - prefix);
            u32::from(base) & mask == u32::from(address) & mask
        }
        (IpAddr::V6(base), IpAddr::V6(address)) if (1..=128).contains(&prefix) => {
            let mask = u128::MAX << (128 - prefix);
            u128::from(base) & mask == u128::from(address) & mask
        }
        _ => false,
    }
}

/// Whether a value is empty or a placeholder ("N/A", "-", "null"). Placeholders are
/// short: longer values are not copied to lower case to find out.
fn says_nothing(value: &str) -> bool {
    let value = value.trim();
    value.len() <= 12 && sleuth_normalize::text::is_placeholder(value)
}

/// A value fit to quote in a problem report: at most 80 characters, control
/// characters escaped by the `{:?}` that prints it.
pub(crate) fn shorten(text: &str) -> String {
    const MAX_QUOTED_CHARS: usize = 80;
    let text = text.trim();
    if text.chars().count() <= MAX_QUOTED_CHARS {
        return text.to_string();
    }
    let mut short: String = text.chars().take(MAX_QUOTED_CHARS).collect();
    short.push('…');
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(type_word: Option<&str>, value: &str, expected: Option<(IndicatorKind, &str)>) {
        let got = normalize_indicator(type_word, value).ok();
        let got = got
            .as_ref()
            .map(|(kind, normalised)| (*kind, normalised.as_str()));
        assert_eq!(got, expected, "{type_word:?} {value:?}");
    }

    #[test]
    fn values_are_recognised_by_their_shape_when_no_type_is_given() {
        use IndicatorKind::*;
        check(None, "203.0.113.50", Some((Ip, "203.0.113.50")));
        check(None, "203.0.113[.]50:443", Some((Ip, "203.0.113.50")));
        check(None, "2001:DB8::0:7", Some((Ip, "2001:db8::7")));
        check(
            None,
            "198.51.100.77/24",
            Some((IpNetwork, "198.51.100.0/24")),
        );
        check(
            None,
            "2001:db8:abcd::1/48",
            Some((IpNetwork, "2001:db8:abcd::/48")),
        );
        check(None, "198.51.100.9/32", Some((Ip, "198.51.100.9")));
        check(None, "C2.Example.NET.", Some((Domain, "c2.example.net")));
        check(
            None,
            "1st-bank.example.com",
            Some((Domain, "1st-bank.example.com")),
        );
        check(
            None,
            "login-portal[.]example[.]com",
            Some((Domain, "login-portal.example.com")),
        );
        check(
            None,
            "hxxp://Dropper.Example.org/Stage2.bin",
            Some((Url, "http://dropper.example.org/Stage2.bin")),
        );
        check(
            None,
            "Billing[at]Invoices.Example.com",
            Some((Email, "billing@invoices.example.com")),
        );
        check(
            None,
            "0123456789ABCDEF0123456789ABCDEF",
            Some((HashMd5, "0123456789abcdef0123456789abcdef")),
        );
        check(
            None,
            &"ab12".repeat(10),
            Some((HashSha1, "ab12".repeat(10).as_str())),
        );
        check(
            None,
            &"cd34".repeat(16),
            Some((HashSha256, "cd34".repeat(16).as_str())),
        );
        check(None, "report.docx", None);
        check(None, "198.51.100.0/0", None);
        check(None, "198.51.100.0/33", None);
        check(None, "www.example.com/path", None);
        check(None, "N/A", None);
        check(None, "", None);
    }

    #[test]
    fn a_type_word_decides_the_kind_and_a_value_of_another_kind_is_refused() {
        use IndicatorKind::*;
        check(Some("ip-dst"), "203.0.113.7", Some((Ip, "203.0.113.7")));
        check(
            Some("IP:PORT"),
            "203.0.113.7:8443",
            Some((Ip, "203.0.113.7")),
        );
        check(
            Some("ip"),
            "203.0.113.0/25",
            Some((IpNetwork, "203.0.113.0/25")),
        );
        check(
            Some("hostname"),
            "cdn.example.net",
            Some((Domain, "cdn.example.net")),
        );
        check(
            Some("sha256_hash"),
            &"ef56".repeat(16),
            Some((HashSha256, "ef56".repeat(16).as_str())),
        );
        check(
            Some("hash"),
            &"ab12".repeat(10),
            Some((HashSha1, "ab12".repeat(10).as_str())),
        );
        check(Some("md5"), &"ef56".repeat(16), None);
        check(Some("domain"), "203.0.113.7", None);
        check(Some("ip"), "c2.example.net", None);
        check(Some("email-src"), "not-an-address", None);
        assert_eq!(
            normalize_indicator(Some("regkey"), "HKLM\\Software"),
            Err(Rejected::UnknownType("regkey".into()))
        );
    }

    #[test]
    fn networks_contain_their_addresses_and_nothing_else() {
        assert!(network_contains("203.0.113.0/24", "203.0.113.250"));
        assert!(!network_contains("203.0.113.0/24", "203.0.114.1"));
        assert!(network_contains("2001:db8::/32", "2001:db8:1::9"));
        assert!(!network_contains("2001:db8::/32", "203.0.113.1"));
        assert!(!network_contains("garbage", "203.0.113.1"));
        assert!(!network_contains("203.0.113.0/0", "203.0.113.1"));
    }

    #[test]
    fn long_values_are_shortened_for_reports() {
        assert_eq!(shorten(&"x".repeat(200)).chars().count(), 81);
        assert_eq!(shorten(" short "), "short");
    }
}
