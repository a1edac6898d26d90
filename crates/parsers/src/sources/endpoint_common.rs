//! Small readers shared by the endpoint and XDR formats (CrowdStrike, SentinelOne, Cortex
//! XDR, Elastic, Wazuh): file names out of Windows and Unix paths, digests that are not
//! placeholders, ports, traffic direction, and what a vendor's action words mean.

use serde_json::Value;
use sleuth_domain::{ActionTaken, Direction, NetworkSignal, ProcessSignal};

use crate::builder::truncate;
use crate::entities::{IpScope, hash_kind, ip_scope, normalize_ip};
use crate::json::{is_placeholder, u64_at};

/// The last component of a Windows or Unix path ("C:\\x\\a.exe" and "/usr/bin/a" give
/// "a.exe" and "a"); the text itself when it has no separator.
pub(super) fn file_name(path: &str) -> Option<&str> {
    if is_placeholder(path) {
        return None;
    }
    let name = path
        .trim()
        .trim_end_matches(['\\', '/'])
        .rsplit(['\\', '/'])
        .next()?
        .trim()
        .trim_matches('"');
    (!is_placeholder(name)).then_some(name)
}

/// A hex digest in lower case, or `None` for placeholders: empty, the wrong length, or
/// all zeros (CrowdStrike writes 40 and 64 zeros where it has no digest).
pub(super) fn real_hash(text: Option<&str>) -> Option<String> {
    let text = text?.trim();
    hash_kind(text)?;
    text.bytes()
        .any(|byte| byte != b'0')
        .then(|| text.to_ascii_lowercase())
}

/// A TCP or UDP port at `path`, as a number or a string.
pub(super) fn port_at(raw: &Value, path: &str) -> Option<u16> {
    u64_at(raw, path)
        .and_then(|port| u16::try_from(port).ok())
        .filter(|port| *port != 0)
}

/// An address, normalised, from a field that may hold a list ("10.0.0.1,192.0.2.7"), an
/// address with a port, or garbage. The first private address wins, since endpoint
/// tools list the host's own interfaces there.
pub(super) fn first_ip(text: Option<&str>) -> Option<String> {
    let addresses: Vec<String> = text?
        .split([',', ';', ' '])
        .filter_map(normalize_ip)
        .collect();
    addresses
        .iter()
        .find(|address| ip_scope(address) == Some(IpScope::Private))
        .or_else(|| addresses.first())
        .cloned()
}

/// Every address in a field that may hold a list.
pub(super) fn all_ips(text: &str) -> Vec<String> {
    text.split([',', ';', ' '])
        .filter_map(normalize_ip)
        .collect()
}

/// Which way traffic crossed the organisation's edge, by address scope alone (the engine
/// refines it with the operator's own ranges).
pub(super) fn direction(source: Option<&str>, destination: Option<&str>) -> Option<Direction> {
    let inside = |address: Option<&str>| {
        address
            .and_then(ip_scope)
            .map(|scope| scope != IpScope::Public)
    };
    match (inside(source)?, inside(destination)?) {
        (true, true) => Some(Direction::Internal),
        (true, false) => Some(Direction::Outbound),
        (false, true) => Some(Direction::Inbound),
        (false, false) => None,
    }
}

/// What a vendor's free-text action or disposition says was done: prevention words mean
/// blocked, "allowed" means allowed, anything else observed. "Would have been blocked"
/// (a policy in detect-only mode) is observed: nothing was stopped.
pub(super) fn action_from_words(text: &str) -> ActionTaken {
    let lowered = text.to_lowercase();
    if lowered.contains("would have") {
        return ActionTaken::Observed;
    }
    let stopped = [
        "block",
        "prevent",
        "kill",
        "quarantin",
        "terminat",
        "denied",
        "deny",
        "drop",
        "reject",
        "suspend",
        "remediat",
        "mitigated",
    ];
    if stopped.iter().any(|word| lowered.contains(word)) && !lowered.contains("not_mitigated") {
        ActionTaken::Blocked
    } else if lowered.contains("allow") || lowered.contains("permit") {
        ActionTaken::Allowed
    } else {
        ActionTaken::Observed
    }
}

/// The process block only when it says something.
pub(super) fn some_process(process: ProcessSignal) -> Option<ProcessSignal> {
    (process != ProcessSignal::default()).then_some(process)
}

/// The network block only when it names an address or a host.
pub(super) fn some_network(network: NetworkSignal) -> Option<NetworkSignal> {
    (network.source_ip.is_some() || network.destination_ip.is_some() || network.hostname.is_some())
        .then_some(network)
}

/// An owned, trimmed, length-capped copy of a field, for the signal blocks.
pub(super) fn owned(text: Option<&str>) -> Option<String> {
    text.map(str::trim)
        .filter(|text| !is_placeholder(text))
        .map(|text| truncate(text, 8000))
}

/// A Windows account as "DOMAIN\\user" when the domain is given separately and the name
/// is not qualified yet.
pub(super) fn qualified_user(domain: Option<&str>, user: Option<&str>) -> Option<String> {
    let user = user?.trim();
    if is_placeholder(user) {
        return None;
    }
    match domain
        .map(str::trim)
        .filter(|domain| !is_placeholder(domain))
    {
        Some(domain) if !user.contains(['\\', '@']) => Some(format!("{domain}\\{user}")),
        _ => Some(user.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_come_out_of_windows_and_unix_paths() {
        let cases = [
            ("C:\\Windows\\System32\\rundll32.exe", Some("rundll32.exe")),
            (
                "\\Device\\HarddiskVolume3\\Windows\\explorer.exe",
                Some("explorer.exe"),
            ),
            ("/usr/bin/git", Some("git")),
            ("powershell.exe", Some("powershell.exe")),
            ("C:\\Temp\\", Some("Temp")),
            ("", None),
            ("N/A", None),
        ];
        for (path, expected) in cases {
            assert_eq!(file_name(path), expected, "{path}");
        }
    }

    #[test]
    fn placeholder_digests_are_not_hashes() {
        assert_eq!(real_hash(Some(&"0".repeat(64))), None);
        assert_eq!(real_hash(Some(&"0".repeat(40))), None);
        assert_eq!(real_hash(Some("xyz")), None);
        assert_eq!(real_hash(Some(&"AB".repeat(16))), Some("ab".repeat(16)));
    }

    #[test]
    fn address_lists_give_the_private_address_first() {
        assert_eq!(
            first_ip(Some("192.0.2.7,10.0.0.1")).as_deref(),
            Some("10.0.0.1")
        );
        assert_eq!(first_ip(Some("192.0.2.7")).as_deref(), Some("192.0.2.7"));
        assert_eq!(first_ip(Some("nonsense")), None);
    }

    #[test]
    fn action_words_are_read_as_an_analyst_would() {
        let cases = [
            ("Prevention, process killed.", ActionTaken::Blocked),
            ("Prevented (Blocked)", ActionTaken::Blocked),
            (
                "Detection, process would have been blocked if related prevention policy setting was enabled.",
                ActionTaken::Observed,
            ),
            ("not_mitigated", ActionTaken::Observed),
            ("mitigated", ActionTaken::Blocked),
            ("Detected (Reported)", ActionTaken::Observed),
            ("allowed", ActionTaken::Allowed),
        ];
        for (text, expected) in cases {
            assert_eq!(action_from_words(text), expected, "{text}");
        }
    }

    #[test]
    fn users_are_qualified_with_their_domain_once() {
        assert_eq!(
            qualified_user(Some("CORP"), Some("r.patel")).as_deref(),
            Some("CORP\\r.patel")
        );
        assert_eq!(
            qualified_user(Some("CORP"), Some("CORP\\r.patel")).as_deref(),
            Some("CORP\\r.patel")
        );
        assert_eq!(
            qualified_user(None, Some("r.patel")).as_deref(),
            Some("r.patel")
        );
        assert_eq!(qualified_user(Some("CORP"), Some("-")), None);
    }
}
