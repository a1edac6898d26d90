//! Where a script that is allowed the network may connect: the outside world, and nothing of
//! the host's or the organisation's own. This module only decides; the launcher's egress
//! guard (`egress_guard`) asks it about every connection a script attempts, in the kernel's
//! terms (the exact address the script passed to `connect`), and performs the allowed ones.
//!
//! The rules, in order:
//! 1. A destination the operator named (`allowed_destinations`) is allowed: an address or
//!    network, with or without a port, or a host name resolved when the run starts.
//! 2. The system's DNS resolvers are allowed on port 53, so that names resolve (over TCP:
//!    a script may not make UDP sockets at all).
//! 3. Everything that is not the public internet is denied: loopback, private, shared
//!    (carrier NAT), link-local (where clouds serve instance metadata), unique-local IPv6,
//!    multicast, reserved, documentation and benchmarking ranges, and the translation
//!    forms that would smuggle one of those through IPv6 (IPv4-mapped and the NAT64 prefix
//!    are judged by the IPv4 address inside them; IPv4-compatible, 6to4 and Teredo are
//!    denied whole).
//! 4. The host's own addresses are denied, whatever range they are in: a service listening
//!    on every interface is reachable through any of them.
//! 5. Networks the operator denies (`denied_networks`) are denied: an organisation whose
//!    internal ranges are public addresses names them there.
//! 6. Anything else is the outside world, and allowed.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use serde::{Deserialize, Serialize};

/// A destination the operator allows: a network (a single address is a /32 or /128) and
/// optionally one port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowedNetwork {
    pub network: IpNet,
    /// `None`: every port.
    pub port: Option<u16>,
}

impl AllowedNetwork {
    fn admits(&self, address: IpAddr, port: u16) -> bool {
        self.network.contains(&address) && self.port.is_none_or(|allowed| allowed == port)
    }
}

/// A destination as the operator writes it in the settings: `10.0.5.20:443`,
/// `[fd00::7]:8089`, `10.20.0.0/16`, `siem.corp.example:8089` or `siem.corp.example`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    Network(AllowedNetwork),
    /// Resolved when a run starts; every address the name resolves to is allowed.
    Host {
        name: String,
        port: Option<u16>,
    },
}

impl Destination {
    /// Parses one entry of `allowed_destinations`; the error says what form was expected.
    pub fn parse(text: &str) -> Result<Destination, String> {
        let text = text.trim();
        let expected = || {
            format!(
                "'{}' is not a destination: write an address, a network in CIDR form or a \
                 host name, each optionally followed by :PORT (IPv6 addresses in brackets)",
                text.chars().take(100).collect::<String>()
            )
        };
        if text.is_empty() {
            return Err(expected());
        }
        if let Ok(network) = text.parse::<IpNet>() {
            return Ok(Destination::Network(AllowedNetwork {
                network,
                port: None,
            }));
        }
        if let Ok(address) = text.parse::<IpAddr>() {
            return Ok(Destination::Network(AllowedNetwork {
                network: IpNet::from(address),
                port: None,
            }));
        }
        if let Ok(socket) = text.parse::<SocketAddr>() {
            return Ok(Destination::Network(AllowedNetwork {
                network: IpNet::from(socket.ip()),
                port: Some(socket.port()),
            }));
        }
        let (name, port) = match text.rsplit_once(':') {
            Some((name, port)) => (name, Some(port.parse::<u16>().map_err(|_| expected())?)),
            None => (text, None),
        };
        if let Some((network, _)) = name.split_once('/') {
            // A network with a port is not a form we take; say so rather than guess.
            if network.parse::<IpAddr>().is_ok() {
                return Err(expected());
            }
        }
        let is_host_name = !name.is_empty()
            && name.len() <= 253
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
            });
        if !is_host_name {
            return Err(expected());
        }
        Ok(Destination::Host {
            name: name.to_ascii_lowercase(),
            port,
        })
    }
}

/// Why a connection was refused, in words a script's author understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DenyReason {
    Special(&'static str),
    HostAddress,
    DeniedByOperator,
}

impl std::fmt::Display for DenyReason {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DenyReason::Special(what) => formatter.write_str(what),
            DenyReason::HostAddress => formatter.write_str("an address of this host"),
            DenyReason::DeniedByOperator => {
                formatter.write_str("a network the operator denies (sandbox.denied_networks)")
            }
        }
    }
}

/// What the guard does with one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    Allow,
    Deny(DenyReason),
}

/// Everything the guard needs to decide, fixed when the run starts. It travels in the launch
/// plan; the launcher adds the host's own addresses just before the script starts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct EgressPolicy {
    /// The operator's named destinations, host names already resolved.
    pub allowed: Vec<AllowedNetwork>,
    /// The resolvers of the system's resolv.conf, reachable on port 53 only.
    pub resolvers: Vec<IpAddr>,
    /// The operator's own denied networks (public ranges that are internal to them).
    pub denied: Vec<IpNet>,
    /// The addresses of this host's interfaces.
    pub host_addresses: Vec<IpAddr>,
}

const DNS_PORT: u16 = 53;

impl EgressPolicy {
    pub(crate) fn decide(&self, destination: SocketAddr) -> Decision {
        let address = canonical(destination.ip());
        let port = destination.port();
        if self
            .allowed
            .iter()
            .any(|allowed| allowed.admits(address, port))
        {
            return Decision::Allow;
        }
        if port == DNS_PORT
            && self
                .resolvers
                .iter()
                .any(|resolver| canonical(*resolver) == address)
        {
            return Decision::Allow;
        }
        if let Some(reason) = special_purpose(address) {
            return Decision::Deny(DenyReason::Special(reason));
        }
        if self
            .host_addresses
            .iter()
            .any(|own| canonical(*own) == address)
        {
            return Decision::Deny(DenyReason::HostAddress);
        }
        if self.denied.iter().any(|network| network.contains(&address)) {
            return Decision::Deny(DenyReason::DeniedByOperator);
        }
        Decision::Allow
    }
}

/// The nameservers of a resolv.conf text. glibc reads at most three; so do we.
pub(crate) fn resolvers_of(resolv_conf: &str) -> Vec<IpAddr> {
    resolv_conf
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("nameserver")).then(|| words.next())?
        })
        // A link-local resolver may carry a zone (`fe80::1%eth0`); the zone is not ours to judge.
        .filter_map(|word| word.split('%').next()?.parse::<IpAddr>().ok())
        .take(3)
        .collect()
}

/// The address the kernel will really connect to: an IPv4-mapped IPv6 address reaches the
/// IPv4 address inside it, and an address of the well-known NAT64 prefix the IPv4 address a
/// translator on the path will reach.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return IpAddr::V4(v4);
            }
            if NAT64_WELL_KNOWN.contains(&v6) {
                let octets = v6.octets();
                return IpAddr::V4(Ipv4Addr::new(
                    octets[12], octets[13], octets[14], octets[15],
                ));
            }
            IpAddr::V6(v6)
        }
        v4 => v4,
    }
}

const NAT64_WELL_KNOWN: Ipv6Net = v6_net(Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96);

const fn v4_net(address: Ipv4Addr, prefix: u8) -> Ipv4Net {
    Ipv4Net::new_assert(address, prefix)
}

const fn v6_net(address: Ipv6Addr, prefix: u8) -> Ipv6Net {
    Ipv6Net::new_assert(address, prefix)
}

/// IPv4 ranges that are not the public internet (IANA's special-purpose registry), each
/// with the words a denial shows.
const SPECIAL_V4: &[(Ipv4Net, &str)] = &[
    // Connecting to 0.0.0.0 reaches the host itself on Linux.
    (
        v4_net(Ipv4Addr::new(0, 0, 0, 0), 8),
        "'this network' (reaches the host itself)",
    ),
    (v4_net(Ipv4Addr::new(10, 0, 0, 0), 8), "a private network"),
    (
        v4_net(Ipv4Addr::new(100, 64, 0, 0), 10),
        "shared address space (carrier NAT, some cloud metadata)",
    ),
    (v4_net(Ipv4Addr::new(127, 0, 0, 0), 8), "a loopback address"),
    (
        v4_net(Ipv4Addr::new(169, 254, 0, 0), 16),
        "a link-local address (cloud instance metadata lives here)",
    ),
    (
        v4_net(Ipv4Addr::new(172, 16, 0, 0), 12),
        "a private network",
    ),
    (
        v4_net(Ipv4Addr::new(192, 0, 0, 0), 24),
        "an IETF protocol assignment",
    ),
    (
        v4_net(Ipv4Addr::new(192, 0, 2, 0), 24),
        "a documentation range",
    ),
    (
        v4_net(Ipv4Addr::new(192, 88, 99, 0), 24),
        "the deprecated 6to4 relay range",
    ),
    (
        v4_net(Ipv4Addr::new(192, 168, 0, 0), 16),
        "a private network",
    ),
    (
        v4_net(Ipv4Addr::new(198, 18, 0, 0), 15),
        "a benchmarking range",
    ),
    (
        v4_net(Ipv4Addr::new(198, 51, 100, 0), 24),
        "a documentation range",
    ),
    (
        v4_net(Ipv4Addr::new(203, 0, 113, 0), 24),
        "a documentation range",
    ),
    (
        v4_net(Ipv4Addr::new(224, 0, 0, 0), 4),
        "a multicast address",
    ),
    (
        v4_net(Ipv4Addr::new(240, 0, 0, 0), 4),
        "a reserved address (or broadcast)",
    ),
];

/// IPv6 ranges that are not the public internet, or that carry an IPv4 address in a form we
/// do not follow. (IPv4-mapped addresses and NAT64's well-known prefix never get here:
/// `canonical` judges them by the IPv4 address inside.)
const SPECIAL_V6: &[(Ipv6Net, &str)] = &[
    (
        v6_net(Ipv6Addr::UNSPECIFIED, 128),
        "the unspecified address (reaches the host itself)",
    ),
    (v6_net(Ipv6Addr::LOCALHOST, 128), "a loopback address"),
    (
        v6_net(Ipv6Addr::UNSPECIFIED, 96),
        "an IPv4-compatible address (deprecated)",
    ),
    (
        v6_net(Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48),
        "a local-use NAT64 prefix",
    ),
    (
        v6_net(Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0), 64),
        "a discard-only range",
    ),
    (
        v6_net(Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 23),
        "an IETF protocol assignment (Teredo among them)",
    ),
    (
        v6_net(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32),
        "a documentation range",
    ),
    (
        v6_net(Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16),
        "a 6to4 address (carries an IPv4 address)",
    ),
    (
        v6_net(Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20),
        "a documentation range",
    ),
    (
        v6_net(Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0), 16),
        "a segment-routing range",
    ),
    (
        v6_net(Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7),
        "a unique-local address (private IPv6; cloud metadata lives here too)",
    ),
    (
        v6_net(Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10),
        "a link-local address",
    ),
    (
        v6_net(Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10),
        "a site-local address (deprecated)",
    ),
    (
        v6_net(Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0), 8),
        "a multicast address",
    ),
];

fn special_purpose(address: IpAddr) -> Option<&'static str> {
    match address {
        IpAddr::V4(v4) => SPECIAL_V4
            .iter()
            .find(|(network, _)| network.contains(&v4))
            .map(|(_, what)| *what),
        IpAddr::V6(v6) => SPECIAL_V6
            .iter()
            .find(|(network, _)| network.contains(&v6))
            .map(|(_, what)| *what),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> EgressPolicy {
        EgressPolicy {
            allowed: vec![
                AllowedNetwork {
                    network: "10.0.5.20/32".parse().expect("network"),
                    port: Some(443),
                },
                AllowedNetwork {
                    network: "fd00:7::/64".parse().expect("network"),
                    port: None,
                },
            ],
            resolvers: vec!["10.255.255.53".parse().expect("address")],
            denied: vec!["198.199.0.0/16".parse().expect("network")],
            host_addresses: vec!["93.184.0.10".parse().expect("address")],
        }
    }

    /// One row: a destination as the script would write it, and whether it is allowed.
    fn check(destination: &str, allowed: bool) {
        let destination: SocketAddr = destination.parse().expect("a socket address");
        let decision = policy().decide(destination);
        assert_eq!(
            decision == Decision::Allow,
            allowed,
            "{destination}: {decision:?}"
        );
    }

    #[test]
    fn the_hosts_own_services_are_out_of_reach_in_every_spelling() {
        for destination in [
            "127.0.0.1:5432",
            "127.1.2.3:6379",
            "0.0.0.0:8080",
            "[::1]:5432",
            "[::]:5432",
            "[::ffff:127.0.0.1]:5432",
            "[::ffff:7f00:1]:6379",
            "[::127.0.0.1]:5432",
            "[64:ff9b::127.0.0.1]:5432",
            "[2002:7f00:1::]:5432",
            "93.184.0.10:22",
            "[::ffff:93.184.0.10]:22",
        ] {
            check(destination, false);
        }
    }

    #[test]
    fn private_link_local_and_metadata_addresses_are_denied() {
        for destination in [
            "10.1.2.3:443",
            "172.16.0.1:443",
            "172.31.255.255:443",
            "192.168.1.1:80",
            "100.64.0.1:80",
            "100.100.100.200:80",
            "169.254.169.254:80",
            "[::ffff:169.254.169.254]:80",
            "[::ffff:10.0.0.1]:80",
            "[64:ff9b::a00:1]:80",
            "[fd00:ec2::254]:80",
            "[fe80::1]:80",
            "[fec0::1]:80",
            "[ff02::1]:80",
            "224.0.0.251:5353",
            "255.255.255.255:9",
            "192.0.2.10:443",
            "[2001:db8::1]:443",
            "[2001:0:4136:e378::1]:443",
        ] {
            check(destination, false);
        }
    }

    #[test]
    fn the_outside_world_is_allowed_also_through_translation_forms() {
        for destination in [
            "93.184.216.34:443",
            "8.8.8.8:443",
            "172.32.0.1:443",
            "[2606:4700::1111]:443",
            "[::ffff:93.184.216.34]:443",
            "[64:ff9b::5db8:d822]:443",
        ] {
            check(destination, true);
        }
    }

    #[test]
    fn named_destinations_and_resolvers_open_exactly_what_they_name() {
        check("10.0.5.20:443", true);
        check("[::ffff:10.0.5.20]:443", true);
        check("10.0.5.20:22", false);
        check("10.0.5.21:443", false);
        check("[fd00:7::9]:8443", true);
        check("[fd00:8::9]:8443", false);
        check("10.255.255.53:53", true);
        check("10.255.255.53:80", false);
        check("198.199.1.1:443", false);
    }

    #[test]
    fn destinations_parse_in_every_documented_form() {
        let network = |text: &str, port| {
            Destination::Network(AllowedNetwork {
                network: text.parse().expect("network"),
                port,
            })
        };
        assert_eq!(
            Destination::parse("10.0.5.20:443"),
            Ok(network("10.0.5.20/32", Some(443)))
        );
        assert_eq!(
            Destination::parse("[fd00::7]:8089"),
            Ok(network("fd00::7/128", Some(8089)))
        );
        assert_eq!(
            Destination::parse("10.20.0.0/16"),
            Ok(network("10.20.0.0/16", None))
        );
        assert_eq!(
            Destination::parse(" fd00::7 "),
            Ok(network("fd00::7/128", None))
        );
        assert_eq!(
            Destination::parse("SIEM.corp.example:8089"),
            Ok(Destination::Host {
                name: "siem.corp.example".to_owned(),
                port: Some(8089)
            })
        );
        assert_eq!(
            Destination::parse("siem"),
            Ok(Destination::Host {
                name: "siem".to_owned(),
                port: None
            })
        );
        for bad in [
            "",
            "10.0.0.0/16:443",
            "siem:99999",
            "siem:",
            "bad_name:80",
            "http://siem",
        ] {
            let error = Destination::parse(bad).expect_err(bad);
            assert!(error.contains("not a destination"), "{error}");
        }
    }

    #[test]
    fn resolvers_are_read_as_glibc_reads_them() {
        let text = "# generated\nsearch corp.example\nnameserver 10.255.255.53\n\
                    nameserver fe80::1%eth0\nnameserver not-an-address\n\
                    nameserver 1.1.1.1\nnameserver 9.9.9.9\n";
        let expected: Vec<IpAddr> = ["10.255.255.53", "fe80::1", "1.1.1.1"]
            .iter()
            .map(|text| text.parse().expect("address"))
            .collect();
        assert_eq!(resolvers_of(text), expected);
    }
}
