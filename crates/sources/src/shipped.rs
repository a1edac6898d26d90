//! The definitions Sleuth ships for the systems teams use most (`definitions/*.json`): an
//! admin creates a source from one by name, giving the secret it names and, where the
//! vendor has one per customer, the base URL.

use serde::Deserialize;

use crate::definition::{Definition, Limits};

/// A shipped definition.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shipped {
    pub name: String,
    pub description: String,
    /// The vendor's documentation of the API the definition calls.
    pub documentation: String,
    pub definition: Definition,
    #[serde(default)]
    pub limits: Limits,
}

const FILES: &[&str] = &[
    include_str!("../definitions/virustotal.json"),
    include_str!("../definitions/abuseipdb.json"),
    include_str!("../definitions/greynoise.json"),
    include_str!("../definitions/urlhaus.json"),
    include_str!("../definitions/threatfox.json"),
    include_str!("../definitions/rdap.json"),
    include_str!("../definitions/okta_users.json"),
    include_str!("../definitions/graph_users.json"),
    include_str!("../definitions/graph_sign_ins.json"),
    include_str!("../definitions/crowdstrike_hosts.json"),
];

/// Every shipped definition, in the order above.
pub fn all() -> Vec<Shipped> {
    FILES
        .iter()
        .map(|text| {
            // The files are part of the build and checked by the test below.
            serde_json::from_str(text).expect("a shipped definition is valid JSON of its shape")
        })
        .collect()
}

/// The shipped definition called `name`.
pub fn find(name: &str) -> Option<Shipped> {
    all().into_iter().find(|shipped| shipped.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_definition_compiles_with_sane_limits() {
        let shipped = all();
        assert_eq!(shipped.len(), FILES.len());
        for definition in shipped {
            definition
                .definition
                .compile()
                .unwrap_or_else(|error| panic!("{}: {error}", definition.name));
            definition
                .limits
                .check()
                .unwrap_or_else(|error| panic!("{}: {error}", definition.name));
        }
    }
}
