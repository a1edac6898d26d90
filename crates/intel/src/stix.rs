//! STIX 2.1 bundles: every `indicator` whose STIX pattern compares an address, domain,
//! URL, email address or file hash with `=`, each comparison of an OR yielding one
//! indicator. Revoked, benign and (given `now`) expired indicators are skipped. Objects
//! are read one at a time as the bundle is parsed, and only the fields used.

use std::collections::HashMap;
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use sleuth_domain::Timestamp;

use crate::categorize::categorize_first;
use crate::indicator::{Expected, normalize_as, shorten};
use crate::loose::{ForEach, List, Object, Scalar, json_fields, skip_unwanted_types};
use crate::stix_pattern::{Comparison, disjuncts};
use crate::{Collector, DEFAULT_CONFIDENCE, Details, FeedError};

pub(crate) fn read(
    text: &str,
    now: Option<Timestamp>,
    collector: &mut Collector,
) -> Result<(), FeedError> {
    let invalid = |error: serde_json::Error| FeedError::InvalidJson(error.to_string());
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let mut links = Links::default();
    let shape = BundleReader {
        collector: &mut *collector,
        links: &mut links,
        now,
    }
    .deserialize(&mut deserializer)
    .map_err(invalid)?;
    deserializer.end().map_err(invalid)?;
    links.categorize(collector);
    match shape {
        Some(Shape {
            is_bundle: true,
            objects_is_list: None | Some(true),
        }) => Ok(()),
        Some(Shape {
            is_bundle: true,
            objects_is_list: Some(false),
        }) => Err(FeedError::NotStixBundle("\"objects\" is not a list")),
        _ => Err(FeedError::NotStixBundle(
            "the document is not an object with \"type\": \"bundle\"",
        )),
    }
}

/// What the top of the document turned out to be.
struct Shape {
    is_bundle: bool,
    /// `None` when the bundle has no `objects`.
    objects_is_list: Option<bool>,
}

/// Reads the bundle object, handing each entry of `objects` to [`read_object`] as it is
/// parsed. `"type": "bundle"` may come after `objects`; the caller then throws away what
/// was collected from a document that turns out not to be a bundle.
struct BundleReader<'c> {
    collector: &'c mut Collector,
    links: &'c mut Links,
    now: Option<Timestamp>,
}

/// What an indicator's own words do not say may be said by what it `indicates`: a malware
/// (`malware_types`, its name), an attack pattern ("Password Spraying"), an infrastructure
/// (`hosting-malware`). Objects come in any order, so the links are kept as the bundle is
/// read and resolved at its end, for the indicators whose own words named no specific
/// category. Bounded like the indicators themselves.
#[derive(Default)]
struct Links {
    /// The category each described object's words name, by its id.
    described: HashMap<String, &'static str>,
    /// `indicates` relationships: (indicator id, target id).
    indicates: Vec<(String, String)>,
    /// Indicators still without a specific category: their id and where their values
    /// sit among the collected indicators.
    pending: Vec<(String, std::ops::Range<usize>)>,
}

/// The most links kept of each sort.
const MAX_LINKS: usize = 100_000;

impl Links {
    fn describe(&mut self, object: &StixObject<'_>) {
        let Some(id) = object.id.text() else {
            return;
        };
        if self.described.len() >= MAX_LINKS {
            return;
        }
        // The vocabulary first (a malware's name is a family, "Kinsing"), then the words.
        let words = object
            .malware_types
            .items
            .iter()
            .chain(&object.infrastructure_types.items)
            .chain(&object.labels.items)
            .filter_map(Scalar::text)
            .chain(object.name.text())
            .chain(object.description.text());
        if let Some(category) = categorize_first(words).filter(|category| *category != "other") {
            self.described.insert(id.to_string(), category);
        }
    }

    fn relate(&mut self, object: &StixObject<'_>) {
        if object.relationship_type.text() != Some("indicates") || self.indicates.len() >= MAX_LINKS
        {
            return;
        }
        if let (Some(source), Some(target)) = (object.source_ref.text(), object.target_ref.text()) {
            self.indicates
                .push((source.to_string(), target.to_string()));
        }
    }

    /// Gives each pending indicator the category of the first object it indicates that
    /// names one.
    fn categorize(self, collector: &mut Collector) {
        if self.pending.is_empty() || self.described.is_empty() {
            return;
        }
        let mut named: HashMap<&str, &'static str> = HashMap::new();
        for (source, target) in &self.indicates {
            if let Some(category) = self.described.get(target) {
                named.entry(source.as_str()).or_insert(category);
            }
        }
        for (id, values) in self.pending {
            let found = named.get(id.as_str()).copied();
            if let Some(category) = found {
                collector.recategorize(values, category);
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for BundleReader<'_> {
    type Value = Option<Shape>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for BundleReader<'_> {
    type Value = Option<Shape>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a STIX bundle")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kind = Scalar::Other;
        let mut objects_is_list = None;
        let now = self.now;
        let links = self.links;
        while let Some(key) = map.next_key::<Scalar<'de>>()? {
            match key.text() {
                Some("type") => kind = map.next_value()?,
                Some("objects") => {
                    let each_object = ForEach::new(
                        (&mut *self.collector, &mut *links, 0_usize),
                        |(collector, links, index): &mut (&mut Collector, &mut Links, usize),
                         object: Object<StixObject<'de>>| {
                            read_object(object, *index, now, collector, links);
                            *index += 1;
                        },
                    );
                    let (_, is_list) = map.next_value_seed(each_object)?;
                    objects_is_list = Some(is_list);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Some(Shape {
            is_bundle: kind.text() == Some("bundle"),
            objects_is_list,
        }))
    }

    skip_unwanted_types!(None; scalars, lists);
}

/// The fields of a STIX object that an indicator is read from.
#[derive(Debug, Default)]
struct StixObject<'a> {
    kind: Scalar<'a>,
    id: Scalar<'a>,
    revoked: Scalar<'a>,
    valid_until: Scalar<'a>,
    pattern_type: Scalar<'a>,
    pattern: Scalar<'a>,
    name: Scalar<'a>,
    description: Scalar<'a>,
    confidence: Scalar<'a>,
    indicator_types: List<Scalar<'a>>,
    /// STIX 2.0's name for `indicator_types`, still written by some producers.
    labels: List<Scalar<'a>>,
    malware_types: List<Scalar<'a>>,
    infrastructure_types: List<Scalar<'a>>,
    relationship_type: Scalar<'a>,
    source_ref: Scalar<'a>,
    target_ref: Scalar<'a>,
}

json_fields!(StixObject {
    "type" => kind,
    "id" => id,
    "revoked" => revoked,
    "valid_until" => valid_until,
    "pattern_type" => pattern_type,
    "pattern" => pattern,
    "name" => name,
    "description" => description,
    "confidence" => confidence,
    "indicator_types" => indicator_types,
    "labels" => labels,
    "malware_types" => malware_types,
    "infrastructure_types" => infrastructure_types,
    "relationship_type" => relationship_type,
    "source_ref" => source_ref,
    "target_ref" => target_ref,
});

fn read_object(
    object: Object<StixObject<'_>>,
    index: usize,
    now: Option<Timestamp>,
    collector: &mut Collector,
    links: &mut Links,
) {
    let Object(Some(object)) = object else {
        collector.skip(|| format!("objects[{index}]: not a JSON object"));
        return;
    };
    match object.kind.text() {
        Some("indicator") => read_indicator(&object, index, now, collector, links),
        Some("malware" | "attack-pattern" | "infrastructure" | "tool") => links.describe(&object),
        Some("relationship") => links.relate(&object),
        _ => {}
    }
}

fn read_indicator(
    indicator: &StixObject<'_>,
    index: usize,
    now: Option<Timestamp>,
    collector: &mut Collector,
    links: &mut Links,
) {
    let id = indicator
        .id
        .text()
        .map(shorten)
        .unwrap_or_else(|| format!("objects[{index}]"));
    if indicator.revoked.flag() == Some(true) {
        collector.skip(|| format!("{id}: revoked"));
        return;
    }
    let valid_until = indicator
        .valid_until
        .text()
        .and_then(sleuth_normalize::time::parse_text);
    if let (Some(now), Some(valid_until)) = (now, valid_until)
        && valid_until < now
    {
        collector.skip(|| format!("{id}: expired at {}", valid_until.to_rfc3339()));
        return;
    }
    match indicator.pattern_type.text() {
        None => {}
        Some(pattern_type) if pattern_type.eq_ignore_ascii_case("stix") => {}
        Some(pattern_type) => {
            let pattern_type = shorten(pattern_type);
            collector.skip(|| format!("{id}: pattern_type {pattern_type:?} is not stix"));
            return;
        }
    }
    let types: Vec<&str> = indicator
        .indicator_types
        .items
        .iter()
        .chain(&indicator.labels.items)
        .filter_map(Scalar::text)
        .collect();
    if types
        .iter()
        .any(|indicator_type| indicator_type.eq_ignore_ascii_case("benign"))
    {
        collector.skip(|| format!("{id}: indicator_types says benign"));
        return;
    }
    let Some(pattern) = indicator.pattern.text() else {
        collector.skip(|| format!("{id}: no pattern"));
        return;
    };
    let found = match disjuncts(pattern) {
        Ok(found) => found,
        Err(error) => {
            collector.skip(|| format!("{id}: unreadable pattern: {error}"));
            return;
        }
    };
    for rejected in found.rejected {
        collector.skip(|| format!("{id}: {rejected}"));
    }
    if found.comparisons.is_empty() {
        return;
    }
    let name = indicator.name.text();
    let description = indicator.description.text();
    let combined_description = match (name, description) {
        (Some(name), Some(description)) if name != description => {
            Some(format!("{name}: {description}"))
        }
        (Some(text), _) | (None, Some(text)) => Some(text.to_string()),
        (None, None) => None,
    };
    // The author's own words first: `indicator_types` is a coarse vocabulary (an
    // "anonymization" indicator named "TOR exit node" is a TOR exit).
    let category = categorize_first(
        name.into_iter()
            .chain(types.iter().copied())
            .chain(description),
    );
    let confidence = match &indicator.confidence {
        Scalar::Other => DEFAULT_CONFIDENCE,
        Scalar::Integer(number) if (0..=100).contains(number) => {
            u8::try_from(*number).unwrap_or(DEFAULT_CONFIDENCE)
        }
        other => {
            let shown = other.shown();
            collector.problem(|| {
                format!("{id}: confidence {shown} is not 0..100; {DEFAULT_CONFIDENCE} used")
            });
            DEFAULT_CONFIDENCE
        }
    };
    let details = Details {
        category,
        description: combined_description.as_deref(),
        confidence,
        valid_until,
    };
    let first = collector.kept();
    for comparison in found.comparisons {
        match comparison_value(&comparison) {
            Ok((kind, value)) => collector.keep(kind, value, &details),
            Err(reason) => collector.skip(|| format!("{id}: {reason}")),
        }
    }
    if category.is_none_or(|category| category == "other")
        && links.pending.len() < MAX_LINKS
        && let Some(stix_id) = indicator.id.text()
    {
        links
            .pending
            .push((stix_id.to_string(), first..collector.kept()));
    }
}

/// The indicator one `path = 'value'` comparison names.
fn comparison_value(comparison: &Comparison) -> Result<(crate::IndicatorKind, String), String> {
    let expected = expected_for_path(comparison.path)?;
    let Some(text) = &comparison.text else {
        return Err(format!("{} is not compared with a string", comparison.path));
    };
    normalize_as(expected, text).map_err(|rejected| format!("{}: {rejected}", comparison.path))
}

/// The kind an object path holds, for the paths Sleuth matches on.
fn expected_for_path(path: &str) -> Result<Expected, String> {
    let unsupported = || {
        format!(
            "{} is not one of ipv4-addr:value, ipv6-addr:value, domain-name:value, url:value, email-addr:value, file:hashes.*",
            shorten(path)
        )
    };
    let (object, property) = path.split_once(':').ok_or_else(unsupported)?;
    let object = object.trim().to_ascii_lowercase();
    let property = property.trim();
    match (object.as_str(), property) {
        ("ipv4-addr" | "ipv6-addr", "value") => Ok(Expected::Ip),
        ("domain-name", "value") => Ok(Expected::Domain),
        ("url", "value") => Ok(Expected::Url),
        ("email-addr", "value") => Ok(Expected::Email),
        ("file", _) => {
            let algorithm = property
                .strip_prefix("hashes.")
                .ok_or_else(unsupported)?
                .trim_matches(|character| character == '\'' || character == '"')
                .to_ascii_uppercase()
                .replace(['-', '_'], "");
            match algorithm.as_str() {
                "MD5" => Ok(Expected::Md5),
                "SHA1" => Ok(Expected::Sha1),
                "SHA256" => Ok(Expected::Sha256),
                _ => Err(format!(
                    "{}: only MD5, SHA-1 and SHA-256 hashes are matched",
                    shorten(path)
                )),
            }
        }
        _ => Err(unsupported()),
    }
}

#[cfg(test)]
mod tests {
    use crate::{FeedError, FeedFormat, FeedReport, IndicatorKind, read_feed, read_feed_at};
    use sleuth_domain::Timestamp;

    fn read(text: &str) -> FeedReport {
        read_feed(FeedFormat::Stix, text, Some("Partner CTI")).expect("a readable bundle")
    }

    fn summary(report: &FeedReport) -> Vec<(IndicatorKind, &str, Option<&str>, u8)> {
        report
            .indicators
            .iter()
            .map(|indicator| {
                (
                    indicator.kind,
                    indicator.value.as_str(),
                    indicator.category.as_deref(),
                    indicator.confidence,
                )
            })
            .collect()
    }

    fn at(text: &str) -> Timestamp {
        sleuth_normalize::time::parse_text(text).expect("a test time")
    }

    /// A bundle of the given indicator objects, each with the fields every STIX 2.1
    /// indicator carries, plus an identity and a relationship that are not indicators.
    fn bundle(indicators: &[&str]) -> String {
        let mut objects = vec![
            r#"{"type": "identity", "spec_version": "2.1", "id": "identity--0f3c1b2a-0000-4000-8000-000000000001", "created": "2026-01-01T00:00:00.000Z", "modified": "2026-01-01T00:00:00.000Z", "name": "Example CTI team", "identity_class": "organization"}"#.to_string(),
        ];
        for (index, fields) in indicators.iter().enumerate() {
            objects.push(format!(
                r#"{{"type": "indicator", "spec_version": "2.1", "id": "indicator--0f3c1b2a-0000-4000-8000-{index:012}", "created": "2026-01-10T09:00:00.000Z", "modified": "2026-01-10T09:00:00.000Z", "valid_from": "2026-01-10T09:00:00Z", {fields}}}"#
            ));
        }
        objects.push(r#"{"type": "relationship", "spec_version": "2.1", "id": "relationship--0f3c1b2a-0000-4000-8000-000000000002", "created": "2026-01-01T00:00:00.000Z", "modified": "2026-01-01T00:00:00.000Z", "relationship_type": "indicates", "source_ref": "indicator--0f3c1b2a-0000-4000-8000-000000000000", "target_ref": "malware--0f3c1b2a-0000-4000-8000-000000000003"}"#.to_string());
        format!(
            r#"{{"type": "bundle", "id": "bundle--0f3c1b2a-0000-4000-8000-00000000ffff", "objects": [{}]}}"#,
            objects.join(",\n")
        )
    }

    #[test]
    fn what_an_indicator_indicates_names_its_category_when_its_own_words_do_not() {
        let object = |fields: &str| {
            format!(
                r#"{{"spec_version": "2.1", "created": "2026-01-10T09:00:00.000Z", "modified": "2026-01-10T09:00:00.000Z", {fields}}}"#
            )
        };
        let indicator = |id: &str, name: &str, value: &str| {
            object(&format!(
                r#""type": "indicator", "id": "indicator--{id}", "name": "{name}", "indicator_types": ["malicious-activity"], "pattern": "[ipv4-addr:value = '{value}']", "pattern_type": "stix", "valid_from": "2026-01-10T09:00:00Z""#
            ))
        };
        let indicates = |id: &str, from: &str, to: &str| {
            object(&format!(
                r#""type": "relationship", "id": "relationship--{id}", "relationship_type": "indicates", "source_ref": "indicator--{from}", "target_ref": "{to}""#
            ))
        };
        let objects = [
            // The relationship and the attack pattern come after the indicator...
            indicator("a1", "Sign-in source", "203.0.113.81"),
            indicates("r1", "a1", "attack-pattern--p1"),
            object(
                r#""type": "attack-pattern", "id": "attack-pattern--p1", "name": "Password Spraying", "external_references": [{"source_name": "mitre-attack", "external_id": "T1110.003"}]"#,
            ),
            // ...or before it.
            object(
                r#""type": "malware", "id": "malware--m1", "name": "Kinsing", "malware_types": ["resource-exploitation"], "is_family": true"#,
            ),
            indicates("r2", "a2", "malware--m1"),
            indicator("a2", "Pool endpoint", "203.0.113.82"),
            object(
                r#""type": "infrastructure", "id": "infrastructure--i1", "name": "Payload server", "infrastructure_types": ["hosting-malware"]"#,
            ),
            indicates("r3", "a3", "infrastructure--i1"),
            indicator("a3", "Stage two", "203.0.113.83"),
            // An indicator's own specific words win over what it indicates.
            indicates("r4", "a4", "malware--m1"),
            indicator("a4", "Cobalt Strike team server", "203.0.113.84"),
            // A relationship other than `indicates` says nothing of the kind.
            object(
                r#""type": "relationship", "id": "relationship--r5", "relationship_type": "related-to", "source_ref": "indicator--a5", "target_ref": "malware--m1""#,
            ),
            indicator("a5", "Seen in the campaign", "203.0.113.85"),
        ];
        let text = format!(
            r#"{{"type": "bundle", "id": "bundle--b1", "objects": [{}]}}"#,
            objects.join(",")
        );
        let report = read(&text);
        let categories: Vec<(&str, Option<&str>)> = report
            .indicators
            .iter()
            .map(|indicator| (indicator.value.as_str(), indicator.category.as_deref()))
            .collect();
        assert_eq!(
            categories,
            vec![
                ("203.0.113.81", Some("password_spray")),
                ("203.0.113.82", Some("cryptomining")),
                ("203.0.113.83", Some("malware_delivery")),
                ("203.0.113.84", Some("c2")),
                ("203.0.113.85", Some("other")),
            ]
        );
    }

    #[test]
    fn each_supported_equality_becomes_an_indicator_with_its_context() {
        let text = bundle(&[
            r#""name": "Cobalt Strike team server", "description": "Seen beaconing from finance laptops", "indicator_types": ["malicious-activity"], "pattern": "[ipv4-addr:value = '203.0.113.50']", "pattern_type": "stix", "confidence": 90"#,
            r#""indicator_types": ["anonymization"], "name": "TOR exit node", "pattern": "[ipv6-addr:value = '2001:DB8::0:66']", "pattern_type": "stix""#,
            r#""indicator_types": ["malicious-activity"], "name": "Phishing domains", "pattern": "[domain-name:value = 'Login-Portal.example.com' OR domain-name:value = 'sso-reset.example.net']", "pattern_type": "stix", "confidence": 70"#,
            r#""name": "Dropper URL", "pattern": "[url:value = 'http://files.example.org/stage2.bin']""#,
            r#""name": "Sender", "indicator_types": ["compromised"], "pattern": "[email-addr:value = 'Billing@Invoices.example.com']", "pattern_type": "stix""#,
            r#""name": "Ransomware payload", "pattern": "[file:hashes.'SHA-256' = 'ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789'] OR [file:hashes.MD5 = '0123456789abcdef0123456789abcdef'] OR [file:hashes.'SHA-1' = 'ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12']", "pattern_type": "stix""#,
            r#""name": "Scanning range", "labels": ["malicious-activity"], "pattern": "[ipv4-addr:value = '198.51.100.77/24']""#,
        ]);
        let report = read(&text);
        assert_eq!(
            summary(&report),
            vec![
                (IndicatorKind::Ip, "203.0.113.50", Some("c2"), 90),
                (IndicatorKind::Ip, "2001:db8::66", Some("tor_exit"), 80),
                (
                    IndicatorKind::Domain,
                    "login-portal.example.com",
                    Some("phishing"),
                    70
                ),
                (
                    IndicatorKind::Domain,
                    "sso-reset.example.net",
                    Some("phishing"),
                    70
                ),
                (
                    IndicatorKind::Url,
                    "http://files.example.org/stage2.bin",
                    Some("malware"),
                    80
                ),
                (
                    IndicatorKind::Email,
                    "billing@invoices.example.com",
                    Some("other"),
                    80
                ),
                (
                    IndicatorKind::HashSha256,
                    "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
                    Some("ransomware"),
                    80
                ),
                (
                    IndicatorKind::HashMd5,
                    "0123456789abcdef0123456789abcdef",
                    Some("ransomware"),
                    80
                ),
                (
                    IndicatorKind::HashSha1,
                    "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12",
                    Some("ransomware"),
                    80
                ),
                (
                    IndicatorKind::IpNetwork,
                    "198.51.100.0/24",
                    Some("scanner"),
                    80
                ),
            ]
        );
        assert_eq!(
            report.indicators[0].description.as_deref(),
            Some("Cobalt Strike team server: Seen beaconing from finance laptops")
        );
        assert_eq!(report.indicators[0].source.as_deref(), Some("Partner CTI"));
        assert_eq!(report.skipped, 0, "{:?}", report.problems);
    }

    #[test]
    fn indicators_that_are_not_single_value_matches_are_skipped_and_counted() {
        let text = bundle(&[
            r#""name": "hash and name", "pattern": "[file:hashes.MD5 = '0123456789abcdef0123456789abcdef' AND file:name = 'invoice.exe']", "pattern_type": "stix""#,
            r#""name": "sequence", "pattern": "[ipv4-addr:value = '203.0.113.1'] FOLLOWEDBY [domain-name:value = 'c2.example.net']", "pattern_type": "stix""#,
            r#""name": "repeated", "pattern": "[ipv4-addr:value = '203.0.113.2'] REPEATS 3 TIMES""#,
            r#""name": "like", "pattern": "[url:value LIKE 'http://%.example.net/%']""#,
            r#""name": "set", "pattern": "[ipv4-addr:value IN ('203.0.113.3', '203.0.113.4')]""#,
            r#""name": "yara", "pattern": "rule x { condition: true }", "pattern_type": "yara""#,
            r#""name": "sigma", "pattern": "title: x", "pattern_type": "sigma""#,
            r#""name": "other object", "pattern": "[process:name = 'mimikatz.exe']""#,
            r#""name": "sha-512", "pattern": "[file:hashes.'SHA-512' = 'abcd']""#,
            r#""name": "wrong hash length", "pattern": "[file:hashes.MD5 = 'abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789']""#,
            r#""name": "not a domain", "pattern": "[domain-name:value = 'svchost.exe']""#,
            r#""name": "broken", "pattern": "[ipv4-addr:value = '203.0.113.9'""#,
            r#""name": "no pattern""#,
            r#""name": "revoked", "revoked": true, "pattern": "[ipv4-addr:value = '203.0.113.10']""#,
            r#""name": "benign", "indicator_types": ["benign"], "pattern": "[domain-name:value = 'updates.example.com']""#,
            r#""name": "half good", "pattern": "[ipv4-addr:value = '203.0.113.11' OR url:value MATCHES '^x']""#,
        ]);
        let report = read(&text);
        assert_eq!(
            summary(&report),
            vec![(IndicatorKind::Ip, "203.0.113.11", None, 80)]
        );
        assert_eq!(report.skipped, 16, "{:#?}", report.problems);
        assert_eq!(report.problems.len(), 16);
        assert!(
            report.problems[0].starts_with(
                "indicator--0f3c1b2a-0000-4000-8000-000000000000: comparisons joined by AND"
            ),
            "{:?}",
            report.problems
        );
        assert!(
            report
                .problems
                .iter()
                .any(|problem| problem.contains("\"yara\" is not stix"))
        );
        assert!(
            report
                .problems
                .iter()
                .any(|problem| problem.contains("revoked"))
        );
        assert!(
            report
                .problems
                .iter()
                .any(|problem| problem.contains("benign"))
        );
    }

    #[test]
    fn expiry_is_only_checked_when_the_time_is_given() {
        let text = bundle(&[
            r#""name": "expired", "valid_until": "2026-01-20T00:00:00Z", "pattern": "[ipv4-addr:value = '203.0.113.20']""#,
            r#""name": "still valid", "valid_until": "2026-12-31T00:00:00Z", "pattern": "[ipv4-addr:value = '203.0.113.21']""#,
            r#""name": "no end", "pattern": "[ipv4-addr:value = '203.0.113.22']""#,
            r#""name": "unreadable end", "valid_until": "soon", "pattern": "[ipv4-addr:value = '203.0.113.23']""#,
        ]);
        let values = |report: &FeedReport| -> Vec<String> {
            report
                .indicators
                .iter()
                .map(|indicator| indicator.value.clone())
                .collect()
        };
        let timeless = read(&text);
        assert_eq!(values(&timeless).len(), 4);
        // Kept with their end, so a context that is not re-read can still stop matching.
        assert_eq!(
            timeless.indicators[0].valid_until,
            Some(at("2026-01-20T00:00:00Z"))
        );
        assert_eq!(timeless.indicators[2].valid_until, None);
        assert_eq!(timeless.indicators[3].valid_until, None);
        let dated = read_feed_at(
            FeedFormat::Stix,
            &text,
            None,
            Some(at("2026-02-01T00:00:00Z")),
        )
        .expect("readable");
        assert_eq!(
            values(&dated),
            ["203.0.113.21", "203.0.113.22", "203.0.113.23"]
        );
        assert_eq!(dated.skipped, 1);
        assert!(
            dated.problems[0].contains("expired at 2026-01-20"),
            "{:?}",
            dated.problems
        );
    }

    #[test]
    fn wrong_field_types_fall_back_instead_of_failing() {
        let text = bundle(&[
            r#""name": 42, "description": ["x"], "indicator_types": "malicious-activity", "confidence": "high", "pattern": "[ipv4-addr:value = '203.0.113.30']""#,
            r#""confidence": 250, "pattern": "[ipv4-addr:value = '203.0.113.31']""#,
            r#""pattern": 7"#,
            r#""pattern_type": 3, "revoked": "no", "pattern": "[ipv4-addr:value = '203.0.113.32']""#,
        ]);
        let report = read(&text);
        assert_eq!(
            summary(&report),
            vec![
                (IndicatorKind::Ip, "203.0.113.30", None, 80),
                (IndicatorKind::Ip, "203.0.113.31", None, 80),
                (IndicatorKind::Ip, "203.0.113.32", None, 80),
            ]
        );
        assert_eq!(report.indicators[0].description, None);
        assert_eq!(report.skipped, 1);
        assert_eq!(report.problems.len(), 3, "{:?}", report.problems);
    }

    #[test]
    fn documents_that_are_not_bundles_are_refused() {
        for (text, expected_json_error) in [
            ("", true),
            ("not json", true),
            ("{\"type\": \"bundle\"", true),
            ("[]", false),
            (
                "{\"type\": \"indicator\", \"pattern\": \"[ipv4-addr:value = '203.0.113.1']\"}",
                false,
            ),
            ("{\"type\": \"bundle\", \"objects\": {}}", false),
            ("{\"Event\": {}}", false),
        ] {
            let error = read_feed(FeedFormat::Stix, text, None).expect_err(text);
            assert_eq!(
                matches!(error, FeedError::InvalidJson(_)),
                expected_json_error,
                "{text}: {error}"
            );
        }
        let empty = read(r#"{"type": "bundle", "id": "bundle--1"}"#);
        assert!(empty.indicators.is_empty());
    }

    #[test]
    fn hostile_bundles_do_not_panic() {
        let deep_json = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(read_feed(FeedFormat::Stix, &deep_json, None).is_err());
        let deep_pattern = format!(
            "{}[ipv4-addr:value = '203.0.113.1']{}",
            "(".repeat(5_000),
            ")".repeat(5_000)
        );
        let text = format!(
            r#"{{"type": "bundle", "objects": [1, "two", null, {{"type": "indicator", "pattern": "{deep_pattern}"}}, {{"type": "indicator", "pattern": "[url:value = 'http://☃.example.com/\u0000']"}}, {{"type": "indicator", "name": "{long}", "pattern": "[domain-name:value = 'ünicode.example.com']"}}]}}"#,
            long = "n".repeat(100_000),
        );
        let report = read(&text);
        assert!(report.indicators.is_empty(), "{report:#?}");
        assert_eq!(report.skipped, 6);
        assert!(
            report
                .problems
                .iter()
                .all(|problem| problem.chars().count() <= 300)
        );
    }

    #[test]
    fn many_indicators_read_quickly_and_dedupe() {
        let mut objects = Vec::new();
        for index in 0..20_000u32 {
            let [_, _, high, low] = index.to_be_bytes();
            objects.push(format!(
                r#"{{"type": "indicator", "id": "indicator--{index}", "pattern": "[ipv4-addr:value = '10.{high}.{low}.1'] OR [ipv4-addr:value = '10.{high}.{low}.1']"}}"#
            ));
        }
        let text = format!(
            r#"{{"type": "bundle", "objects": [{}]}}"#,
            objects.join(",")
        );
        let report = read(&text);
        assert_eq!(report.indicators.len(), 20_000);
        assert_eq!(report.duplicates, 20_000);
    }
}
