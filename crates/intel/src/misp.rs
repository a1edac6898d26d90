//! MISP events (`{"Event": {...}}`, a list of them, or a REST search's `{"response":
//! [...]}`): the network and file attributes of each event and of its objects. The
//! event's `info` describes them, its tags and galaxies say what they are, and
//! `to_ids: false` (context, not detection material) lowers their confidence.

use std::fmt;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{MapAccess, SeqAccess, Visitor};

use crate::categorize::categorize_first;
use crate::indicator::{Expected, normalize_as, shorten};
use crate::loose::{List, Object, Scalar, json_fields, skip_unwanted_types};
use crate::{Collector, DEFAULT_CONFIDENCE, Details, FeedError, clean_text};

/// The confidence of an attribute marked `to_ids: false`: MISP's own flag for "useful
/// context, too weak to alert on".
const CONTEXT_ONLY_CONFIDENCE: u8 = 50;

/// How an attribute type's value holds indicators.
enum Shape {
    /// The whole value.
    Single(Expected),
    /// `left|right`, the indicator on the left (`ip-dst|port`).
    Left(Expected),
    /// `left|right`, the indicator on the right (`filename|sha256`).
    Right(Expected),
    /// `left|right`, both indicators (`domain|ip`).
    Both(Expected, Expected),
}

/// The attribute types read. `link` is a reference to a report, not an indicator, and
/// `email-dst` is the recipient (usually your own staff); neither is taken.
fn shape(attribute_type: &str) -> Option<Shape> {
    Some(match attribute_type {
        "ip-src" | "ip-dst" => Shape::Single(Expected::Ip),
        "ip-src|port" | "ip-dst|port" => Shape::Left(Expected::Ip),
        "domain" | "hostname" => Shape::Single(Expected::Domain),
        "domain|ip" => Shape::Both(Expected::Domain, Expected::Ip),
        "url" => Shape::Single(Expected::Url),
        "email-src" | "email" => Shape::Single(Expected::Email),
        "md5" => Shape::Single(Expected::Md5),
        "sha1" => Shape::Single(Expected::Sha1),
        "sha256" => Shape::Single(Expected::Sha256),
        "filename|md5" => Shape::Right(Expected::Md5),
        "filename|sha1" => Shape::Right(Expected::Sha1),
        "filename|sha256" => Shape::Right(Expected::Sha256),
        _ => return None,
    })
}

/// The top of a MISP document.
enum Document<'a> {
    Map(TopLevel<'a>),
    List(Vec<Object<Wrapper<'a>>>),
    Other,
}

#[derive(Default)]
struct TopLevel<'a> {
    event: Option<Object<Event<'a>>>,
    response: Option<List<Object<Wrapper<'a>>>>,
}

json_fields!(TopLevel { "Event" => event, "response" => response });

/// `{"Event": {...}}` as an item of a list.
#[derive(Default)]
struct Wrapper<'a> {
    event: Object<Event<'a>>,
}

json_fields!(Wrapper { "Event" => event });

#[derive(Default)]
struct Event<'a> {
    info: Scalar<'a>,
    threat_level_id: Scalar<'a>,
    tags: List<Object<Tag<'a>>>,
    galaxies: List<Object<Galaxy<'a>>>,
    attributes: List<Object<Attribute<'a>>>,
    objects: List<Object<MispObject<'a>>>,
}

json_fields!(Event {
    "info" => info,
    "threat_level_id" => threat_level_id,
    "Tag" => tags,
    "Galaxy" => galaxies,
    "Attribute" => attributes,
    "Object" => objects,
});

#[derive(Default)]
struct Tag<'a> {
    name: Scalar<'a>,
}

json_fields!(Tag { "name" => name });

#[derive(Default)]
struct Galaxy<'a> {
    kind: Scalar<'a>,
    name: Scalar<'a>,
    clusters: List<Object<Cluster<'a>>>,
}

json_fields!(Galaxy { "type" => kind, "name" => name, "GalaxyCluster" => clusters });

#[derive(Default)]
struct Cluster<'a> {
    value: Scalar<'a>,
}

json_fields!(Cluster { "value" => value });

#[derive(Default)]
struct MispObject<'a> {
    attributes: List<Object<Attribute<'a>>>,
}

json_fields!(MispObject { "Attribute" => attributes });

#[derive(Default)]
struct Attribute<'a> {
    kind: Scalar<'a>,
    value: Scalar<'a>,
    to_ids: Scalar<'a>,
    deleted: Scalar<'a>,
    comment: Scalar<'a>,
    tags: List<Object<Tag<'a>>>,
}

json_fields!(Attribute {
    "type" => kind,
    "value" => value,
    "to_ids" => to_ids,
    "deleted" => deleted,
    "comment" => comment,
    "Tag" => tags,
});

impl<'de> Deserialize<'de> for Document<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DocumentVisitor)
    }
}

struct DocumentVisitor;

impl<'de> Visitor<'de> for DocumentVisitor {
    type Value = Document<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a MISP event or a list of them")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let Object(top) = Object::deserialize(MapAccessDeserializer::new(map))?;
        Ok(top.map_or(Document::Other, Document::Map))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        let list: List<Object<Wrapper<'de>>> = List::deserialize(SeqAccessDeserializer::new(seq))?;
        Ok(Document::List(list.items))
    }

    skip_unwanted_types!(Document::Other; scalars);
}

const NOT_AN_EVENT: &str = "expected {\"Event\": {...}}, a list of those, or {\"response\": [...]}";

pub(crate) fn read(text: &str, collector: &mut Collector) -> Result<(), FeedError> {
    let document: Document<'_> = crate::loose::from_str(text)?;
    let entries = match document {
        Document::Map(TopLevel {
            event: Some(Object(Some(event))),
            ..
        }) => {
            read_event(&event, collector);
            return Ok(());
        }
        Document::Map(TopLevel {
            response:
                Some(List {
                    items,
                    is_list: true,
                }),
            ..
        })
        | Document::List(items) => items,
        Document::Map(_) | Document::Other => return Err(FeedError::NotMispEvent(NOT_AN_EVENT)),
    };
    let mut events_read = 0;
    for (index, entry) in entries.iter().enumerate() {
        match entry {
            Object(Some(Wrapper {
                event: Object(Some(event)),
            })) => {
                read_event(event, collector);
                events_read += 1;
            }
            _ => collector.skip(|| format!("entry {index}: not an {{\"Event\": {{...}}}}")),
        }
    }
    if events_read == 0 && !entries.is_empty() {
        return Err(FeedError::NotMispEvent(
            "no entry holds an \"Event\" object",
        ));
    }
    Ok(())
}

/// What every attribute of an event shares.
struct EventContext<'a> {
    info: Option<&'a str>,
    /// The category the event's tags, galaxies or info name, if any.
    category: Option<&'static str>,
    /// The confidence of an attribute meant for detection (`to_ids: true`).
    detection_confidence: u8,
}

fn read_event(event: &Event<'_>, collector: &mut Collector) {
    let info = event.info.text();
    let galaxy_words = objects(&event.galaxies).flat_map(|galaxy| {
        galaxy
            .kind
            .text()
            .into_iter()
            .chain(galaxy.name.text())
            .chain(objects(&galaxy.clusters).filter_map(|cluster| cluster.value.text()))
    });
    let category = categorize_first(tag_names(&event.tags).chain(galaxy_words).chain(info));
    // MISP's threat levels: 1 high, 2 medium, 3 low, 4 undefined.
    let detection_confidence = match event.threat_level_id.whole_number() {
        Some(1) => 90,
        Some(3) => 70,
        _ => DEFAULT_CONFIDENCE,
    };
    let context = EventContext {
        info,
        category,
        detection_confidence,
    };
    let label = info.map_or_else(
        || "event".to_string(),
        |info| format!("event {:?}", shorten(info)),
    );
    let object_attributes = objects(&event.objects).flat_map(|object| &object.attributes.items);
    for attribute in event.attributes.items.iter().chain(object_attributes) {
        read_attribute(attribute, &context, &label, collector);
    }
}

fn read_attribute(
    attribute: &Object<Attribute<'_>>,
    event: &EventContext<'_>,
    label: &str,
    collector: &mut Collector,
) {
    let Object(Some(attribute)) = attribute else {
        collector.skip(|| format!("{label}: an attribute that is not a JSON object"));
        return;
    };
    let Some(attribute_type) = attribute.kind.text() else {
        collector.skip(|| format!("{label}: an attribute without a type"));
        return;
    };
    let Some(shape) = shape(attribute_type) else {
        collector.ignore();
        return;
    };
    let Some(value) = attribute.value.text() else {
        collector.skip(|| format!("{label}: a {attribute_type} attribute without a value"));
        return;
    };
    let place = || format!("{label}: {attribute_type} {:?}", shorten(value));
    if attribute.deleted.flag() == Some(true) {
        collector.skip(|| format!("{}: deleted", place()));
        return;
    }
    let pair = value.split_once('|');
    let wanted: Vec<(Expected, &str)> = match (shape, pair) {
        (Shape::Single(expected), _) => vec![(expected, value)],
        (Shape::Left(expected), Some((left, _))) => vec![(expected, left)],
        (Shape::Right(expected), Some((_, right))) => vec![(expected, right)],
        (Shape::Both(left_kind, right_kind), Some((left, right))) => {
            vec![(left_kind, left), (right_kind, right)]
        }
        (_, None) => {
            collector.skip(|| format!("{}: expected two values joined by '|'", place()));
            return;
        }
    };
    let category = categorize_first(tag_names(&attribute.tags)).or(event.category);
    let comment = attribute.comment.text().and_then(clean_text);
    let description = match (event.info, comment.as_deref()) {
        (Some(info), Some(comment)) => Some(format!("{info}: {comment}")),
        (Some(text), None) | (None, Some(text)) => Some(text.to_string()),
        (None, None) => None,
    };
    let confidence = if attribute.to_ids.flag() == Some(false) {
        CONTEXT_ONLY_CONFIDENCE
    } else {
        event.detection_confidence
    };
    let details = Details {
        category,
        description: description.as_deref(),
        confidence,
        valid_until: None,
    };
    for (expected, text) in wanted {
        match normalize_as(expected, text) {
            Ok((kind, normalised)) => collector.keep(kind, normalised, &details),
            Err(rejected) => collector.skip(|| format!("{}: {rejected}", place())),
        }
    }
}

/// The items of a list that are objects.
fn objects<T>(list: &List<Object<T>>) -> impl Iterator<Item = &T> {
    list.items.iter().filter_map(|Object(item)| item.as_ref())
}

/// The names of tags (`tlp:white`, `misp-galaxy:ransomware="..."`).
fn tag_names<'l>(tags: &'l List<Object<Tag<'_>>>) -> impl Iterator<Item = &'l str> {
    objects(tags).filter_map(|tag| tag.name.text())
}

#[cfg(test)]
mod tests {
    use crate::{FeedError, FeedFormat, FeedReport, IndicatorKind, read_feed};

    fn read(text: &str) -> FeedReport {
        read_feed(FeedFormat::Misp, text, Some("Sector ISAC")).expect("a readable MISP document")
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

    /// An event as MISP exports it, with the given attributes and objects.
    fn event(
        info: &str,
        threat_level: &str,
        tags: &str,
        attributes: &str,
        objects: &str,
    ) -> String {
        format!(
            r#"{{"Event": {{
                "id": "1201", "orgc_id": "2", "org_id": "2", "date": "2026-01-15",
                "threat_level_id": "{threat_level}", "info": "{info}", "published": true,
                "uuid": "5e1f0c2a-0000-4000-8000-000000000001", "analysis": "2",
                "distribution": "1", "timestamp": "1768470000",
                "Orgc": {{"id": "2", "name": "Example ISAC", "uuid": "5e1f0c2a-0000-4000-8000-0000000000aa"}},
                "Tag": [{tags}],
                "Attribute": [{attributes}],
                "Object": [{objects}]
            }}}}"#
        )
    }

    fn attribute(attribute_type: &str, value: &str, to_ids: bool, extra: &str) -> String {
        format!(
            r#"{{"id": "1", "type": "{attribute_type}", "category": "Network activity", "to_ids": {to_ids}, "uuid": "5e1f0c2a-0000-4000-8000-00000000000b", "event_id": "1201", "distribution": "5", "timestamp": "1768470000", "comment": "", "value": "{value}", "deleted": false{extra}}}"#
        )
    }

    #[test]
    fn the_network_and_file_attributes_of_an_event_and_its_objects_are_read() {
        let attributes = [
            attribute(
                "ip-dst",
                "203.0.113.50",
                true,
                r#", "comment": "team server""#,
            ),
            attribute("ip-src", "198.51.100.0/24", true, ""),
            attribute("ip-dst|port", "203.0.113.51|8443", true, ""),
            attribute("ip-src|port", "2001:db8::5|443", false, ""),
            attribute("domain", "C2.Example.NET", true, ""),
            attribute("hostname", "beacon.cdn.example.org", true, ""),
            attribute(
                "domain|ip",
                "update-check.example.com|203.0.113.52",
                true,
                "",
            ),
            attribute("url", "hxxp://files.example.org/stage2.bin", true, ""),
            attribute("email-src", "Billing@Invoices.example.com", true, ""),
            attribute("email", "ops@invoices.example.com", false, ""),
            attribute("md5", "0123456789ABCDEF0123456789ABCDEF", true, ""),
            attribute("sha1", "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12", true, ""),
            attribute("sha256", &"cd34".repeat(16), true, ""),
            attribute(
                "filename|sha256",
                &format!("invoice.exe|{}", "ef56".repeat(16)),
                true,
                "",
            ),
            attribute(
                "filename|md5",
                "invoice.exe|11112222333344445555666677778888",
                true,
                "",
            ),
            attribute(
                "filename|sha1",
                "invoice.exe|9999aaaa9999aaaa9999aaaa9999aaaa9999aaaa",
                true,
                "",
            ),
            attribute("link", "https://blog.example.com/report", false, ""),
            attribute("email-dst", "victim@example.com", true, ""),
            attribute("text", "free text", false, ""),
        ]
        .join(",");
        let objects = format!(
            r#"{{"name": "file", "meta-category": "file", "Attribute": [{}, {}]}}"#,
            attribute("filename", "loader.dll", false, ""),
            attribute("sha256", &"0a1b".repeat(16), true, ""),
        );
        let text = event(
            "Cobalt Strike intrusion set",
            "1",
            r#"{"name": "tlp:amber"}, {"name": "type:OSINT"}"#,
            &attributes,
            &objects,
        );
        let report = read(&text);
        let cd34 = "cd34".repeat(16);
        let ef56 = "ef56".repeat(16);
        let a1b = "0a1b".repeat(16);
        assert_eq!(
            summary(&report),
            vec![
                (IndicatorKind::Ip, "203.0.113.50", Some("c2"), 90),
                (IndicatorKind::IpNetwork, "198.51.100.0/24", Some("c2"), 90),
                (IndicatorKind::Ip, "203.0.113.51", Some("c2"), 90),
                (IndicatorKind::Ip, "2001:db8::5", Some("c2"), 50),
                (IndicatorKind::Domain, "c2.example.net", Some("c2"), 90),
                (
                    IndicatorKind::Domain,
                    "beacon.cdn.example.org",
                    Some("c2"),
                    90
                ),
                (
                    IndicatorKind::Domain,
                    "update-check.example.com",
                    Some("c2"),
                    90
                ),
                (IndicatorKind::Ip, "203.0.113.52", Some("c2"), 90),
                (
                    IndicatorKind::Url,
                    "http://files.example.org/stage2.bin",
                    Some("c2"),
                    90
                ),
                (
                    IndicatorKind::Email,
                    "billing@invoices.example.com",
                    Some("c2"),
                    90
                ),
                (
                    IndicatorKind::Email,
                    "ops@invoices.example.com",
                    Some("c2"),
                    50
                ),
                (
                    IndicatorKind::HashMd5,
                    "0123456789abcdef0123456789abcdef",
                    Some("c2"),
                    90
                ),
                (
                    IndicatorKind::HashSha1,
                    "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12",
                    Some("c2"),
                    90
                ),
                (IndicatorKind::HashSha256, cd34.as_str(), Some("c2"), 90),
                (IndicatorKind::HashSha256, ef56.as_str(), Some("c2"), 90),
                (
                    IndicatorKind::HashMd5,
                    "11112222333344445555666677778888",
                    Some("c2"),
                    90
                ),
                (
                    IndicatorKind::HashSha1,
                    "9999aaaa9999aaaa9999aaaa9999aaaa9999aaaa",
                    Some("c2"),
                    90
                ),
                (IndicatorKind::HashSha256, a1b.as_str(), Some("c2"), 90),
            ]
        );
        assert_eq!(
            report.indicators[0].description.as_deref(),
            Some("Cobalt Strike intrusion set: team server")
        );
        assert_eq!(
            report.indicators[1].description.as_deref(),
            Some("Cobalt Strike intrusion set")
        );
        assert_eq!(report.indicators[0].source.as_deref(), Some("Sector ISAC"));
        assert_eq!(report.ignored, 4, "link, email-dst, text, filename");
        assert_eq!(report.skipped, 0, "{:?}", report.problems);
    }

    #[test]
    fn categories_come_from_attribute_tags_then_event_tags_galaxies_and_info() {
        let tagged = attribute(
            "domain",
            "pay.example.com",
            true,
            r#", "Tag": [{"name": "misp-galaxy:ransomware=\"ExampleLocker\""}]"#,
        );
        let plain = attribute("domain", "mail.example.com", true, "");
        let from_tags = event(
            "Weekly roll-up",
            "2",
            r#"{"name": "tlp:white"}, {"name": "circl:incident-classification=\"phishing\""}"#,
            &format!("{tagged},{plain}"),
            "",
        );
        let report = read(&from_tags);
        assert_eq!(
            summary(&report),
            vec![
                (
                    IndicatorKind::Domain,
                    "pay.example.com",
                    Some("ransomware"),
                    80
                ),
                (
                    IndicatorKind::Domain,
                    "mail.example.com",
                    Some("phishing"),
                    80
                ),
            ]
        );

        let with_galaxy = r#"{"Event": {"info": "Weekly roll-up", "threat_level_id": 3,
            "Galaxy": [{"name": "Botnet", "type": "botnet", "GalaxyCluster": [{"value": "ExampleBot", "type": "botnet"}]}],
            "Attribute": [{"type": "ip-dst", "value": "203.0.113.60", "to_ids": true}]}}"#;
        assert_eq!(
            summary(&read(with_galaxy)),
            vec![(IndicatorKind::Ip, "203.0.113.60", Some("botnet"), 70)]
        );

        let from_info = r#"{"Event": {"info": "OSINT - phishing kit hosts", "threat_level_id": "4",
            "Attribute": [{"type": "domain", "value": "kit.example.net", "to_ids": "1"}]}}"#;
        assert_eq!(
            summary(&read(from_info)),
            vec![(
                IndicatorKind::Domain,
                "kit.example.net",
                Some("phishing"),
                80
            )]
        );

        let none = r#"{"Event": {"info": "Roll-up", "Attribute": [{"type": "domain", "value": "x.example.net"}]}}"#;
        assert_eq!(
            summary(&read(none)),
            vec![(IndicatorKind::Domain, "x.example.net", None, 80)]
        );
    }

    #[test]
    fn lists_of_events_and_search_responses_are_read() {
        let first = event(
            "First",
            "2",
            "",
            &attribute("ip-dst", "203.0.113.70", true, ""),
            "",
        );
        let second = event(
            "Second",
            "2",
            "",
            &attribute("ip-dst", "203.0.113.71", true, ""),
            "",
        );
        for text in [
            format!("[{first}, {second}]"),
            format!(r#"{{"response": [{first}, {second}]}}"#),
        ] {
            let report = read(&text);
            let values: Vec<&str> = report
                .indicators
                .iter()
                .map(|indicator| indicator.value.as_str())
                .collect();
            assert_eq!(values, ["203.0.113.70", "203.0.113.71"], "{text:.60}");
        }
        assert!(read(r#"{"response": []}"#).indicators.is_empty());
        assert!(read("[]").indicators.is_empty());
        let mixed = read(&format!(r#"[{first}, {{"Feed": {{}}}}, 3]"#));
        assert_eq!(mixed.indicators.len(), 1);
        assert_eq!(mixed.skipped, 2);
    }

    #[test]
    fn bad_attributes_are_skipped_and_counted() {
        let attributes = [
            attribute("ip-dst", "203.0.113.80", true, ""),
            attribute("ip-dst", "not-an-ip", true, ""),
            attribute("domain", "svchost.exe", true, ""),
            attribute("md5", &"ef56".repeat(16), true, ""),
            attribute("ip-dst|port", "203.0.113.81", true, ""),
            attribute("domain|ip", "bad|203.0.113.82", true, ""),
            attribute("ip-dst", "203.0.113.83", true, r#", "deleted": true"#),
            r#"{"type": "url"}"#.to_string(),
            r#"{"value": "203.0.113.84"}"#.to_string(),
            r#""just a string""#.to_string(),
            r#"{"type": 5, "value": ["x"]}"#.to_string(),
        ]
        .join(",");
        let report = read(&event("Bad values", "2", "", &attributes, ""));
        assert_eq!(
            summary(&report),
            vec![
                (IndicatorKind::Ip, "203.0.113.80", None, 80),
                (IndicatorKind::Ip, "203.0.113.82", None, 80),
            ]
        );
        assert_eq!(report.skipped, 10, "{:#?}", report.problems);
        assert!(
            report
                .problems
                .iter()
                .any(|problem| problem.contains("deleted"))
        );
        assert!(
            report
                .problems
                .iter()
                .all(|problem| problem.starts_with("event \"Bad values\""))
        );
    }

    #[test]
    fn documents_that_are_not_events_are_refused() {
        for text in [
            "",
            "{",
            "{}",
            "42",
            "[1, 2]",
            r#"{"response": {"Attribute": []}}"#,
            r#"{"type": "bundle", "objects": []}"#,
        ] {
            assert!(
                matches!(
                    read_feed(FeedFormat::Misp, text, None),
                    Err(FeedError::InvalidJson(_) | FeedError::NotMispEvent(_))
                ),
                "{text}"
            );
        }
    }

    #[test]
    fn hostile_events_do_not_panic() {
        let deep = format!("{}{}", "{\"Event\":".repeat(50_000), "}".repeat(50_000));
        assert!(read_feed(FeedFormat::Misp, &deep, None).is_err());
        let wrong_types = r#"{"Event": {"info": ["x"], "threat_level_id": {"a": 1}, "Tag": "tlp:red",
            "Galaxy": [1, {"GalaxyCluster": "x"}], "Attribute": {"type": "ip-dst"},
            "Object": [null, {"Attribute": [null, {"type": "ip-dst", "value": "203.0.113.90", "to_ids": "maybe", "comment": 7}]}]}}"#;
        let report = read(wrong_types);
        assert_eq!(
            summary(&report),
            vec![(IndicatorKind::Ip, "203.0.113.90", None, 80)]
        );
        assert_eq!(report.skipped, 1);
        assert_eq!(report.indicators[0].description, None);

        let mut many = Vec::new();
        for index in 0..30_000u32 {
            let [_, _, high, low] = index.to_be_bytes();
            many.push(attribute("ip-dst", &format!("10.{high}.{low}.9"), true, ""));
            many.push(attribute("ip-dst", "☃\u{202e}", true, ""));
        }
        let report = read(&event("Large", "2", "", &many.join(","), ""));
        assert_eq!(report.indicators.len(), 30_000);
        assert_eq!(report.skipped, 30_000);
        assert_eq!(report.problems.len(), crate::MAX_PROBLEMS);
    }
}
